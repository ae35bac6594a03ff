"""Exceptions raised by agentfolio.body.

Everything derives from :class:`BodyError` (a ``ValueError``) so callers can catch
one type, and the CLI can turn any of them into a message instead of a traceback.
"""

from __future__ import annotations

from agentfolio.errors import AgentfolioError


class BodyError(AgentfolioError, ValueError):
    """A message body, part, schema or glob broke a rule."""

    code = "invalid_value"


class PartError(BodyError):
    """One part of a body broke a rule; ``index`` says which one."""

    def __init__(self, index: int | None, message: str) -> None:
        self.index = index
        self.reason = message
        where = f"part {index}" if index is not None else "part"
        super().__init__(f"{where}: {message}")


class TooComplexError(BodyError):
    """Schemas or globs whose checking would cost more than the limits allow."""

    code = "too_complex"


class GlobError(BodyError):
    """A name or content-type glob cannot be compiled."""


class ContentError(BodyError):
    """A part's content cannot be decoded or fetched."""


class SchemaValidationError(BodyError):
    """A body does not satisfy a schema; ``report`` lists every problem."""

    def __init__(self, report: object) -> None:
        self.report = report
        super().__init__(str(report))


class PartRejected(BodyError):
    """A streamed part was refused the moment it arrived."""

    def __init__(self, issue: object) -> None:
        self.issue = issue
        super().__init__(str(issue))
