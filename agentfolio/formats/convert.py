"""Conversion between any two formats agentfolio reads, with a report of what was lost.

One path for every pair: read the source into the canonical model (its reader records
where each record stood, :class:`~agentfolio.formats.losses.Origin`), *lower* the
session to what the target can hold (the target's ``lower`` step, which reports each
field it drops or approximates at a JSON pointer into the source), then write it with
the target's writer.  Converting a document to its own format is its reader and writer,
which lose nothing.  A new format plugs in by implementing
:class:`agentfolio.formats.base.Format` and being listed in :mod:`agentfolio.formats.registry`.

The mapping table and what each direction loses: ``docs/conversions.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentfolio.formats import registry
from agentfolio.formats.errors import FormatError, Problem
from agentfolio.formats.losses import ConvertOptions, Loss, Lowered, Origin
from agentfolio.model import Session

__all__ = ["Conversion", "ConvertOptions", "Loss", "LossError", "convert", "summarize"]


@dataclass(slots=True)
class Conversion:
    """A converted document and the losses it cost (pointers into the source)."""

    result: Any
    losses: list[Loss]
    source_format: str | None
    target_format: str
    session: Session | None = None  # the lowered session the result was written from
    problems: list[Problem] = field(default_factory=list)  # the source's, from a tolerant read

    @property
    def lossless(self) -> bool:
        return not self.losses

    @property
    def document(self) -> Any:
        """The converted document (another name for ``result``)."""
        return self.result


class LossError(FormatError):
    """A strict conversion that would lose something: ``losses`` says what."""

    def __init__(self, message: str, *, losses: list[Loss], source: str | None = None) -> None:
        super().__init__(message, source=source, pointer=losses[0].pointer if losses else None,
                         problems=[Problem(loss.pointer, f"{'approximated' if loss.approximated else 'dropped'} "
                                                         f"{loss.what}: {loss.why}") for loss in losses])
        self.losses = losses


# Where the session sits in documents whose layout is otherwise the model's own.
_SESSION_POINTERS = {"canonical": "/session"}


def convert(document_or_session: Any, *, to: str, from_: str | None = None,
            options: ConvertOptions | None = None, strict_read: bool = True,
            source: str | None = None, origin: Origin | None = None) -> Conversion:
    """Convert a parsed document (or a canonical Session) to the format ``to``.

    ``from_`` skips detection (for a Session: the format it was read from, with
    ``origin`` from its ReadResult so losses point into that document).
    ``options.strict`` raises LossError instead of returning a lossy conversion;
    ``strict_read`` refuses a source that breaks its schema.
    """
    options = options or ConvertOptions()
    target = registry.get(to)
    problems: list[Problem] = []
    if isinstance(document_or_session, Session):
        session, source_format = document_or_session, from_
        if origin is None and from_ in _SESSION_POINTERS:
            origin = Origin(prefix=_SESSION_POINTERS[from_], presentation=True)
    else:
        source_fmt = registry.get(from_) if from_ else registry.detect(document_or_session, source=source)
        read = source_fmt.read(document_or_session, strict=strict_read, source=source, options=options)
        session, origin, source_format, problems = read.session, read.origin, source_fmt.name, read.problems
        if origin is None and source_fmt.name in _SESSION_POINTERS:
            origin = Origin(prefix=_SESSION_POINTERS[source_fmt.name], presentation=True)
    if source_format == target.name:
        lowered = Lowered(session, [])
    else:
        lowered = target.lower(session, origin=origin, options=options)
    if options.strict and lowered.losses:
        first = lowered.losses[0]
        raise LossError(f"converting {source_format or 'the session'} to {target.name} would lose "
                        f"{len(lowered.losses)} field(s); first: {first}", losses=lowered.losses, source=source)
    try:
        written = target.write(lowered.session)
    except FormatError as error:
        raise (error.with_source(source) if source else error) from None
    return Conversion(written, lowered.losses, source_format, target.name, lowered.session, problems)


def summarize(losses: list[Loss], *, limit: int = 3) -> list[str]:
    """Losses grouped by what and why, for people: one line per group, with a count and
    the first few pointers."""
    groups: dict[tuple[str, str, bool], list[str]] = {}
    for loss in losses:
        groups.setdefault((loss.what, loss.why, loss.approximated), []).append(loss.pointer or "/")
    lines = []
    for (what, why, approximated), pointers in groups.items():
        shown = ", ".join(pointers[:limit]) + (f", … (+{len(pointers) - limit})" if len(pointers) > limit else "")
        verb = "approximated" if approximated else "dropped"
        lines.append(f"{verb} {what} ×{len(pointers)}: {why} [{shown}]")
    return lines
