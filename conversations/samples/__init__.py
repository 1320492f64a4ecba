"""Converters from real, third-party conversation datasets to ingest documents (SPEC §3).

Pure: a file path in, plain ingest documents (dicts, the shape
``documents.validate_document`` accepts) out; no database. They let the
product be tested on conversations nobody here wrote. The datasets are read
where they lie (``../shared/data``) and never copied into the repository.

- CrossWOZ (thu-coai/CrossWOZ, Apache-2.0): Chinese task-oriented dialogues,
  each ``usr`` turn answered by one ``sys`` turn. A dialogue has about 8
  exchanges, so several dialogues are concatenated per conversation to pass
  the 30-pair threshold (SPEC §5). Each user turn and the system turn that
  answers it make one completed run.
- τ-bench airline (sierra-research/tau-bench, MIT): trajectories in Chat
  Completions shape. Each user turn, up to the next user turn, is one run:
  assistant messages keep their ``tool_calls``, ``tool`` messages keep their
  ``tool_call_id``. The system prompt belongs to no run.
- SGD (Schema-Guided Dialogue, CC BY-SA 4.0): English task dialogues; a
  system turn's service call becomes a tool call and its result.

``crosswoz_samples`` and ``sgd_samples`` join dialogues into long
conversations (at least ``min_pairs`` pairs) and give, beside each document,
the facts its dialogues' annotations state — the user's current constraints,
the values they superseded, what the assistant told the user, and (SGD) the
service results — so benchmarks can ask which of them reach the next run
(``bench/fidelity.py``) or survive a rolling note (SPEC §8).

Ids and timestamps are generated deterministically (monotonic
``created_at``), so converting the same file twice gives the same documents
and re-ingesting them is a no-op.
"""

from .crosswoz import CROSSWOZ_SCOPE, crosswoz_documents, crosswoz_samples
from .facts import ASSISTANT, CONSTRAINT, MIN_VALUE_CHARS, SERVICE, SUPERSEDED, Fact, Sample, mentions
from .sgd import SGD_SCOPE, sgd_documents, sgd_samples
from .tau_bench import TAU_BENCH_SCOPE, tau_bench_documents

__all__ = [
    "ASSISTANT", "CONSTRAINT", "CROSSWOZ_SCOPE", "MIN_VALUE_CHARS", "SERVICE", "SGD_SCOPE", "SUPERSEDED",
    "TAU_BENCH_SCOPE", "Fact", "Sample", "crosswoz_documents", "crosswoz_samples", "mentions", "sgd_documents",
    "sgd_samples", "tau_bench_documents",
]
