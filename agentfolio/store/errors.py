"""What the store refuses, each with a machine code the API turns into its error envelope."""

from __future__ import annotations

from collections.abc import Sequence

from agentfolio.errors import AgentfolioError
from agentfolio.formats.errors import Problem


class StoreError(AgentfolioError):
    code = "bad_request"

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class StoreUnavailable(StoreError):
    """The database cannot take the work now (locked, restarting, unreachable): retry later."""

    code = "unavailable"


class NotFound(StoreError):
    code = "not_found"


class AlreadyExists(StoreError):
    code = "already_exists"


class InvalidInput(StoreError):
    code = "invalid_value"

    def __init__(self, message: str, *, pointer: str | None = None, problems: Sequence[Problem] = ()) -> None:
        super().__init__(message)
        self.pointer = pointer
        self.problems = tuple(problems)


class VersionConflict(StoreError):
    """A write that named a version the session is no longer at: refused, nothing merged."""

    code = "version_conflict"

    def __init__(self, session_id: str, expected: int, current: int) -> None:
        super().__init__(f"session {session_id!r} is at version {current}, not {expected}: "
                         "read it again and retry with the current version")
        self.session_id = session_id
        self.expected = expected
        self.current = current
