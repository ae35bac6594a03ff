"""What every format module offers, so the CLI, the service and conversions treat them alike.

A format module has ``NAME``, ``looks_like(document) -> bool``,
``read(document, *, strict, source) -> ReadResult`` and ``write(session) -> dict``; the
formats conversions target also have ``lower(session, *, origin, options) -> Lowered``
(see ``agentfolio.formats.convert``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentfolio.formats.errors import Problem
from agentfolio.model import Session


@dataclass(slots=True)
class ReadResult:
    """A session read from some format, with what was wrong or unusual about the source."""

    session: Session
    format: str
    version: str | None = None
    # Schema violations a tolerant read carried on past (a strict read raises instead).
    problems: list[Problem] = field(default_factory=list)
    # Things kept without being understood: unknown kinds in a newer minor, and such.
    notes: list[Problem] = field(default_factory=list)
    # Where each record stood in the source (agentfolio.formats.losses.Origin), for
    # readers whose layout is not the model's own; loss reports point through it.
    origin: Any = None
