"""The refusals of context assembly (SPEC §9 "Fail closed", seed 004 §1 修复策略, §3).

Assembly never guesses. Each way it can refuse is its own exception with a
stable ``code`` and a body (``as_dict()``) that the REST endpoint returns
as it is with status 422 (``invalid_request`` and ``invalid_config``
are the caller's shape errors, for a 400):

- ``context_assembly_pairing_error``: the input breaks the tool-pairing
  invariant; ``violations`` lists every one (index, id, problem).
- ``context_over_budget``: after every step the request still does not fit,
  or the protected prefix alone does not (it is refused, never cut);
  ``sizes`` says by how much.
- ``invalid_request``: a message or the request is not in the shape its
  format defines; ``errors`` names each field.
- ``invalid_config``: a config key is unknown or its value is wrong;
  ``errors`` names each field.

The messages say what happened in plain words and carry no internal detail.
"""

from __future__ import annotations

from typing import Any


class AssemblyError(Exception):
    """Base of every refusal. ``code`` is stable; ``message`` is for people."""

    code = "context_assembly_error"

    def __init__(self, message: str, *, report: Any = None):
        super().__init__(message)
        self.message = message
        # The report as far as assembly got (the steps and the ledger), so
        # the inspector can show why a request was refused.
        self.report = report

    def as_dict(self) -> dict:
        return {"code": self.code, "message": self.message}


class PairingError(AssemblyError):
    code = "context_assembly_pairing_error"

    def __init__(self, violations: list, *, report: Any = None):
        count = len(violations)
        super().__init__(
            f"The messages break tool-call pairing ({count} violation{'s' if count != 1 else ''}); "
            "nothing was sent.",
            report=report,
        )
        self.violations = list(violations)

    def as_dict(self) -> dict:
        body = super().as_dict()
        body["violations"] = [v.as_dict() for v in self.violations]
        return body


class OverBudgetError(AssemblyError):
    code = "context_over_budget"

    def __init__(self, message: str, *, sizes: dict, report: Any = None):
        super().__init__(message, report=report)
        self.sizes = dict(sizes)

    def as_dict(self) -> dict:
        body = super().as_dict()
        body["sizes"] = dict(self.sizes)
        return body


class RequestFormatError(AssemblyError):
    """The request or a message is not in its format's shape."""

    code = "invalid_request"

    def __init__(self, errors: list[dict]):
        super().__init__("The request is not in the shape its format defines: "
                         + "; ".join(f"{e['field']}: {e['message']}" for e in errors[:5])
                         + (f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""))
        self.errors = list(errors)

    def as_dict(self) -> dict:
        body = super().as_dict()
        body["errors"] = list(self.errors)
        return body


class ConfigError(AssemblyError, ValueError):
    """A config key is unknown or its value is wrong; every bad field is named."""

    code = "invalid_config"

    def __init__(self, errors: dict[str, str]):
        super().__init__("Invalid config: " + "; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = dict(errors)

    @property
    def fields(self) -> list[str]:
        return list(self.errors)

    def as_dict(self) -> dict:
        body = super().as_dict()
        body["errors"] = dict(self.errors)
        return body


class InvariantBroken(AssertionError):
    """Assembly produced something its own validator rejects: a bug here,
    never a property of the input. Raised instead of sending it."""
