"""Errors and problems every reader reports the same way: where (file, JSON pointer) and what."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agentfolio.errors import AgentfolioError


def json_pointer(path: Iterable[str | int]) -> str:
    """RFC 6901 pointer for a path of keys and indexes ("" is the whole document)."""
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in path)


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a document, at a JSON pointer."""

    pointer: str
    message: str

    def __str__(self) -> str:
        return f"{self.pointer or '/'}: {self.message}"

    def to_json(self) -> dict[str, str]:
        return {"pointer": self.pointer, "message": self.message}


class FormatError(AgentfolioError, ValueError):
    """A document that cannot be read: says which source, where, and why, in one line."""

    code = "invalid_value"

    def __init__(self, message: str, *, source: str | None = None, pointer: str | None = None,
                 problems: Sequence[Problem] = ()) -> None:
        self.message = message
        self.source = source
        self.pointer = pointer
        self.problems = tuple(problems)
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = ": ".join(part for part in (self.source, self.pointer) if part)
        return f"{where}: {self.message}" if where else self.message

    def with_source(self, source: str) -> FormatError:
        if self.source:
            return self
        return type(self)(self.message, source=source, pointer=self.pointer, problems=self.problems)


class UnsupportedVersionError(FormatError):
    """A document in a version this release cannot read without risking its contents."""


class InvalidDocumentError(FormatError):
    """A document that breaks its format's schema; ``problems`` lists every violation."""


def refuse_if_invalid(problems: Sequence[Problem], *, strict: bool, source: str | None) -> None:
    """A strict read refuses a document with problems: InvalidDocumentError names the
    first (and how many more) and carries them all; a tolerant read goes on."""
    if problems and strict:
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InvalidDocumentError(f"{first.message}{more}", source=source, pointer=first.pointer,
                                   problems=list(problems))


def validated(check: Callable[[Any], list[Problem]], document: Any, *, strict: bool,
              source: str | None) -> list[Problem]:
    """``check(document)``'s problems, after refusing what a strict read refuses; errors
    name ``source``."""
    try:
        problems = check(document)
    except FormatError as error:
        raise (error.with_source(source) if source else error) from None
    refuse_if_invalid(problems, strict=strict, source=source)
    return problems
