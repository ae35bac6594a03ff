"""What every format offers, so the CLI, the service, the viewer and conversions treat
them alike: the :class:`Format` protocol, and :class:`ReadResult`, what a reader returns.

A format is a reader and a writer around the canonical model (pandoc's design): it
recognises its documents (``looks_like``), checks them against its own rules
(``validate``), reads them into a :class:`~agentfolio.model.Session` (``read``), writes a
session back (``write``) and, for sessions read from elsewhere, *lowers* them onto what
its writer can hold, reporting each loss (``lower``).  Formats are listed once, in
:mod:`agentfolio.formats.registry`; everything that names formats takes them from there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agentfolio.formats.errors import Problem
from agentfolio.model import Session

if TYPE_CHECKING:
    from agentfolio.formats.losses import ConvertOptions, Lowered, Origin

__all__ = ["Format", "FunctionFormat", "ReadResult"]


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
    origin: Origin | None = None


@runtime_checkable
class Format(Protocol):
    """A document format agentfolio reads and writes."""

    @property
    def name(self) -> str:
        """The name users type (``durable-state``, ``envelope``...)."""

    @property
    def title(self) -> str:
        """What people call it (``Microsoft Agent Framework durable agent state``)."""

    def looks_like(self, document: Any) -> bool:
        """Whether a parsed document is in this format (cheap: its marker keys)."""

    def validate(self, document: Any) -> list[Problem]:
        """Every way a parsed document breaks this format's rules (empty: valid)."""

    def read(self, document: Any, *, strict: bool = True, source: str | None = None,
             options: ConvertOptions | None = None) -> ReadResult:
        """The document as a session; ``strict`` refuses one that breaks the rules."""

    def write(self, session: Session) -> Any:
        """The session as a document of this format (a JSON value)."""

    def lower(self, session: Session, *, origin: Origin | None = None,
              options: ConvertOptions | None = None) -> Lowered:
        """The session reduced to what :meth:`write` can hold, with every loss reported."""


@dataclass(frozen=True, slots=True)
class FunctionFormat:
    """A :class:`Format` made of a format module's functions."""

    name: str
    title: str
    looks_like: Callable[[Any], bool]
    validate: Callable[[Any], list[Problem]]
    read: Callable[..., ReadResult]
    write: Callable[[Session], Any]
    lower: Callable[..., Lowered]
