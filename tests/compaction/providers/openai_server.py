"""A local OpenAI-compatible Chat Completions server on a real socket,
scripted per request. Ports come from the engine's range 18100-18199."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORTS = range(18100, 18200)


def completion(text, *, finish_reason="stop", tool_calls=None, model="test-model"):
    message = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366},
    }


def odd_completion(*, status=200, **changes):
    """A scripted reply: a normal completion with each ``path=value`` set,
    the path's steps joined by ``__`` (``choices__0__message__content``)."""
    body = completion("[a-0] The fee was 0.00 EUR.")
    for path, value in changes.items():
        target = body
        *head, last = path.split("__")
        for key in head:
            target = target[int(key)] if key.isdigit() else target[key]
        target[last] = value
    return (status, body, 0)


TOOL_CALL = [{"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": "{}"}}]

# name -> (status, body bytes or dict, delay seconds)
SCRIPTS = {
    "ok": (200, completion("[a-0] The fee was 0.00 EUR. [a-1] The fee was 1.01 EUR."), 0),
    "text_and_tools": (200, completion("A fine summary.", finish_reason="tool_calls", tool_calls=TOOL_CALL), 0),
    "length": (200, completion("A summary that was cut", finish_reason="length"), 0),
    "empty": (200, completion(""), 0),
    "too_long": (200, completion("x" * 6001), 0),
    "http500": (500, {"error": {"message": "upstream exploded"}}, 0),
    "malformed": (200, b'{"choices": [ {"message": ', 0),
    "slow": (200, completion("too late"), 3.0),
    "hang": (200, completion("never"), 3600.0),
    # Answers "ok" once the test opens ``server.gate``: the model call is
    # out for as long as a fault test needs (``server.arrived`` says it is).
    "gated": (200, completion("[a-0] The fee was 0.00 EUR. [a-1] The fee was 1.01 EUR."), "gate"),
}


class ScriptedServer:
    def __init__(self):
        self.script: deque[str] = deque()
        self.requests: list[dict] = []
        self.default = "ok"
        self.arrived = threading.Event()
        self.gate = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append({"path": self.path, "body": body,
                                        "authorization": self.headers.get("Authorization")})
                name = server.script.popleft() if server.script else server.default
                status, payload, delay = SCRIPTS[name]
                server.arrived.set()
                if delay == "gate":
                    server.gate.wait(timeout=300)
                elif delay:
                    time.sleep(delay)
                raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        last = None
        for port in PORTS:
            try:
                self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
                break
            except OSError as exc:
                last = exc
        else:
            raise RuntimeError(f"no free port in {PORTS}: {last}")
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def queue(self, *names):
        self.script.extend(names)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
