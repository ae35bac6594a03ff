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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agentfolio.formats.errors import Problem
from agentfolio.formats.jsonio import gc_paused

if TYPE_CHECKING:
    from agentfolio.formats.losses import ConvertOptions, Lowered, Origin
    from agentfolio.model import Session

__all__ = ["Format", "FunctionFormat", "ReadResult", "read_lazily"]


class ReadResult:
    """A session read from some format, with what was wrong or unusual about the source.

    A reader checks the whole document before it returns (``problems``, ``notes`` and
    every error are known at once), but may leave building the session's records until
    :attr:`session` is first used: checking a file, or writing back a document read in
    the same format, never pays for them.  A built session remembers the document it was
    read from, so writing it back in that format gives that document (see
    :func:`read_lazily`).
    """

    __slots__ = ("_build", "_origin", "_session", "format", "notes", "problems", "version")

    def __init__(self, session: Session | None = None, format: str = "", version: str | None = None,
                 problems: list[Problem] | None = None, notes: list[Problem] | None = None,
                 origin: Origin | None = None, *, build: Callable[[], Session] | None = None) -> None:
        if (session is None) == (build is None):
            raise TypeError("a ReadResult takes a session or a way to build it, not both")
        self._session = session
        self._build = build
        self.format = format
        self.version = version
        # Schema violations a tolerant read carried on past (a strict read raises instead).
        self.problems = problems if problems is not None else []
        # Things kept without being understood: unknown kinds in a newer minor, and such.
        self.notes = notes if notes is not None else []
        # Where each record stood in the source (agentfolio.formats.losses.Origin), for
        # readers whose layout is not the model's own; filled as the session is built.
        self._origin = origin

    @property
    def session(self) -> Session:
        """The document as a session, built on first use."""
        if self._session is None:
            assert self._build is not None
            with gc_paused():
                self._session = self._build()
            self._build = None
        return self._session

    @property
    def origin(self) -> Origin | None:
        """Where each record of :attr:`session` stood in the source (builds the session)."""
        if self._session is None:
            self.session  # noqa: B018 - the origin is filled as the records are built
        return self._origin

    @property
    def built(self) -> bool:
        """Whether the session's records exist yet."""
        return self._session is not None

    def __repr__(self) -> str:
        return (f"ReadResult(format={self.format!r}, version={self.version!r}, problems={len(self.problems)}, "
                f"notes={len(self.notes)}, built={self.built})")


def read_lazily(build: Callable[[], Session], document: Any, fmt: str, *, version: str | None = None,
                problems: list[Problem] | None = None, notes: list[Problem] | None = None,
                origin: Origin | None = None) -> ReadResult:
    """A reader's result whose session is built on first use and remembers ``document``.

    A document that broke its rules (``problems``) is built at once, so whatever cannot
    be read at all is refused by the read itself, never later.  The built session
    remembers the document: the format's writer gives it back for that session (records
    are immutable, so it is still exactly what they would write), and a changed copy
    forgets it.
    """

    def remembered() -> Session:
        session = build()
        session.remember_document(fmt, document)
        return session

    result = ReadResult(build=remembered, format=fmt, version=version, problems=problems, notes=notes,
                        origin=origin)
    if problems:
        result.session  # noqa: B018 - built now: see above
    return result


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
    """A :class:`Format` made of a format module's functions.

    Its ``write`` gives back the document a session was read from in this format (see
    :func:`read_lazily`) and calls the module's writer for any other session; the
    module's own function always writes from the records.
    """

    name: str
    title: str
    looks_like: Callable[[Any], bool]
    validate: Callable[[Any], list[Problem]]
    read: Callable[..., ReadResult]
    write: Callable[[Session], Any]
    lower: Callable[..., Lowered]
    # False for a module whose writer gives back what it read itself (durable state's, which
    # also reuses each entry read and puts schemaVersion first).
    reuse_documents: bool = True

    def __post_init__(self) -> None:
        if self.reuse_documents:
            object.__setattr__(self, "write", _reusing_documents(self.name, self.write))


def _reusing_documents(name: str, write: Callable[[Session], Any]) -> Callable[[Session], Any]:
    def written(session: Session) -> Any:
        as_read = session.document_read_as(name)
        return as_read if as_read is not None else write(session)

    written.__doc__ = write.__doc__
    return written
