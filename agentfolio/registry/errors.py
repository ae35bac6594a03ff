"""Errors the registry domain raises, shaped so the API can answer with the seed's codes.

Every problem names the field it is about, as a dotted path with list indexes in
brackets (``span_type_schemas[2].data_risk.action_profile.read_data``), so a caller
reading ``{"status": "error", "code": "invalid_value", "message": …}`` knows what to fix.
The API layer maps ``code`` to an HTTP status; the domain never does HTTP.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from agentfolio.errors import AgentfolioError

#: Error codes from the Prefactor API error enumeration (Prefactor's agent schema versions) that the domain uses.
ErrorCode = Literal["bad_request", "invalid_value", "required_value", "invalid_action", "not_found"]


@dataclass(frozen=True, slots=True)
class FieldProblem:
    """One thing wrong with a request, at a dotted field path."""

    field: str
    code: ErrorCode
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class RegistryError(AgentfolioError, ValueError):
    """A request the registry refuses.  ``code`` is one of the API's error codes.

    ``errors`` maps each field to its message, the shape the Prefactor SDK reads from
    a 400/422 answer (``PrefactorValidationError.errors``).
    """

    def __init__(self, problems: Sequence[FieldProblem] | FieldProblem) -> None:
        if isinstance(problems, FieldProblem):
            problems = (problems,)
        if not problems:
            raise ValueError("RegistryError needs at least one problem")
        self.problems = tuple(problems)
        first = self.problems[0]
        self.code: ErrorCode = first.code
        super().__init__(self.message)

    # Computed from the problems. The base class stores a plain ``message`` in the instance __dict__,
    # which this property (a data descriptor) takes precedence over.
    @property
    def message(self) -> str:  # type: ignore[override]
        head = str(self.problems[0])
        more = len(self.problems) - 1
        return head if not more else f"{head} (and {more} more problem{'s' if more > 1 else ''})"

    @property
    def errors(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for problem in self.problems:
            out.setdefault(problem.field or "_", problem.message)
        return out

    def to_json(self) -> dict[str, object]:
        """The API error body: ``{"status": "error", "code": …, "message": …, "errors": {…}}``."""
        return {"status": "error", "code": self.code, "message": self.message, "errors": self.errors}


def invalid(field: str, message: str) -> FieldProblem:
    return FieldProblem(field, "invalid_value", message)


def required(field: str, message: str = "is required") -> FieldProblem:
    return FieldProblem(field, "required_value", message)


def raise_if(problems: Iterable[FieldProblem]) -> None:
    collected = list(problems)
    if collected:
        raise RegistryError(collected)


def join_field(prefix: str, key: str | int) -> str:
    """``join_field("a", "b") == "a.b"``, ``join_field("a", 0) == "a[0]"``."""
    if isinstance(key, int):
        return f"{prefix}[{key}]"
    return f"{prefix}.{key}" if prefix else key
