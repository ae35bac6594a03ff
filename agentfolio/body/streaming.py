"""Validating a body part by part, as an agent streams it.

The first rule (every part matches some schema part) and name uniqueness can be
decided the moment a part arrives, so :meth:`StreamValidator.feed` raises on the
first offending part. The second rule (required parts) can only be decided when
the stream ends: :meth:`StreamValidator.close`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .errors import PartError, PartRejected, SchemaValidationError
from .parts import MessagePart
from .schema import MessageBodySchema, MissingRequired, PartIssue, ValidationReport


class StreamValidator:
    """``feed`` parts one at a time, then ``close``.

    >>> v = StreamValidator(schema)          # doctest: +SKIP
    >>> for part in stream: v.feed(part)     # raises PartRejected on a bad part
    >>> v.close()                            # raises SchemaValidationError if a required part never came
    """

    def __init__(self, schema: MessageBodySchema | Mapping[str, Any]) -> None:
        self.schema = MessageBodySchema.parse(schema)
        self._engine = self.schema.engine
        self._pending = self._engine.required_mask
        self._names: dict[str, int] = {}
        self._count = 0
        self._issues: list[PartIssue] = []
        self._closed = False

    @property
    def count(self) -> int:
        return self._count

    @property
    def pending_required(self) -> list[int]:
        """Schema-part indexes of required parts not yet matched."""
        return list(self._engine.bits(self._pending))

    def feed(self, part: MessagePart | Mapping[str, Any]) -> MessagePart:
        """Accept one part or raise :class:`PartRejected` (malformed, duplicate name,
        or matching no schema part). Returns the parsed part."""
        if self._closed:
            raise RuntimeError("stream already closed")
        index = self._count
        self._count += 1
        try:
            p = MessagePart.parse(part, index)
        except PartError as exc:
            self._reject(PartIssue(index, None, "?", exc.reason))
        name, ct = p.name, p.content_type
        if name is not None:
            first = self._names.get(name)
            if first is not None:
                self._reject(PartIssue(index, name, ct, f"name {name!r} is already used by part {first}"))
            self._names[name] = index
        engine = self._engine
        if not engine.accepts(name, ct):
            self._reject(PartIssue(index, name, ct, engine.explain(name, ct)))
        if self._pending:
            self._pending = engine.satisfy(name, ct, self._pending)
        return p

    def feed_all(self, parts: Iterable[MessagePart | Mapping[str, Any]]) -> None:
        for part in parts:
            self.feed(part)

    def _reject(self, issue: PartIssue) -> None:
        self._issues.append(issue)
        raise PartRejected(issue)

    def report(self) -> ValidationReport:
        """What is known so far (required parts are reported as missing while pending)."""
        missing = tuple(MissingRequired(i, self.schema.parts[i]) for i in self._engine.bits(self._pending))
        return ValidationReport(self._count, tuple(self._issues), missing)

    def close(self) -> ValidationReport:
        """End the stream; raise :class:`SchemaValidationError` listing every problem
        seen (rejected parts and required parts that never arrived)."""
        self._closed = True
        report = self.report()
        if not report.ok:
            raise SchemaValidationError(report)
        return report
