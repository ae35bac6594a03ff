"""MessageBodySchema: which parts a body may and must contain.

A body is valid under a schema when (two rules, nothing more):

1. every part matches at least one schema part, and
2. every ``required`` schema part is matched by at least one part.

A part matches a schema part when both its name and its content type do:

* a schema part **without** ``name`` matches only **unnamed** parts; one with a name
  glob matches only named parts whose name the glob fully matches;
* a schema part without ``content_type`` matches any content type; otherwise the
  glob is matched against the part's essence: lower-cased, parameters stripped
  (``Text/HTML; charset=UTF-8`` is matched as ``text/html``).

The empty body is valid under a schema with no required parts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, field_validator

from .body import MessageBody, PartsDocument
from .errors import BodyError, SchemaValidationError
from .globs import Glob, content_type_glob, name_glob
from .matcher import Engine
from .parts import MessagePart, _pydantic_messages

#: Parts in one schema: far more than any real agent declares, and it bounds the
#: combined matchers and the automata compatibility checking builds.
MAX_SCHEMA_PARTS = 256


def _too_many_parts(count: int) -> str:
    return f"schema is too complex: it has {count:,} parts; the limit is {MAX_SCHEMA_PARTS:,}"


class SchemaPart(BaseModel):
    """``{"name": GLOB?, "content_type": GLOB?, "required": bool}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str | None = None
    content_type: str | None = None
    required: bool = False

    @field_validator("name")
    @classmethod
    def _compile_name(cls, v: str | None) -> str | None:
        if v is not None:
            name_glob(v)
        return v

    @field_validator("content_type")
    @classmethod
    def _compile_content_type(cls, v: str | None) -> str | None:
        if v is not None:
            content_type_glob(v)
        return v

    @property
    def name_glob(self) -> Glob | None:
        return None if self.name is None else name_glob(self.name)

    @property
    def content_type_glob(self) -> Glob | None:
        return None if self.content_type is None else content_type_glob(self.content_type)

    def describe(self) -> str:
        name = f"name {self.name!r}" if self.name is not None else "unnamed"
        ct = f"content type {self.content_type!r}" if self.content_type is not None else "any content type"
        return f"{name}, {ct}" + (", required" if self.required else "")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.name is not None:
            out["name"] = self.name
        if self.content_type is not None:
            out["content_type"] = self.content_type
        out["required"] = self.required
        return out


class PartIssue:
    """A part that was refused (matches no schema part, or malformed/duplicate when streamed).

    ``reason`` is worked out on first access: finding the near misses costs a regex
    per schema part, which we only pay for issues someone actually reads.
    """

    __slots__ = ("_explain", "_reason", "content_type", "index", "name")

    def __init__(self, index: int, name: str | None, content_type: str, reason: str | None = None,
                 explain: Callable[[str | None, str], str] | None = None) -> None:
        self.index = index
        self.name = name
        self.content_type = content_type
        self._reason = reason
        self._explain = explain

    @property
    def reason(self) -> str:
        if self._reason is None:
            self._reason = self._explain(self.name, self.content_type) if self._explain else "refused"
        return self._reason

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartIssue) and (self.index, self.name, self.content_type, self.reason) == (
            other.index, other.name, other.content_type, other.reason)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PartIssue({self.index}, {self.name!r}, {self.content_type!r})"

    def __str__(self) -> str:
        who = repr(self.name) if self.name is not None else "unnamed"
        return f"part {self.index} ({who}, {self.content_type}): {self.reason}"


@dataclass(frozen=True)
class MissingRequired:
    """A required schema part that no part matched."""

    schema_index: int
    schema_part: SchemaPart

    def __str__(self) -> str:
        return (
            f"required schema part #{self.schema_index} ({self.schema_part.describe()}) "
            "is matched by no part"
        )


@dataclass(frozen=True)
class ValidationReport:
    parts_checked: int
    issues: tuple[PartIssue, ...]
    missing: tuple[MissingRequired, ...]

    @property
    def ok(self) -> bool:
        return not self.issues and not self.missing

    def __bool__(self) -> bool:
        return self.ok

    @property
    def problems(self) -> list[str]:
        return [str(x) for x in self.issues] + [str(x) for x in self.missing]

    def __str__(self) -> str:
        if self.ok:
            return f"valid ({self.parts_checked} parts)"
        lines = [f"invalid: {len(self.issues)} offending part(s), {len(self.missing)} unmet required"]
        lines += [f"  - {p}" for p in self.problems]
        return "\n".join(lines)

    def raise_for_errors(self) -> None:
        if not self.ok:
            raise SchemaValidationError(self)


class MessageBodySchema(PartsDocument, BaseModel):
    """``{"parts": [SchemaPart, ...]}``."""

    document_label: ClassVar[str] = "schema"

    model_config = ConfigDict(frozen=True, extra="forbid")

    parts: tuple[SchemaPart, ...] = ()

    _engine: Engine | None = PrivateAttr(default=None)

    @field_validator("parts")
    @classmethod
    def _bounded(cls, parts: tuple[SchemaPart, ...]) -> tuple[SchemaPart, ...]:
        if len(parts) > MAX_SCHEMA_PARTS:
            raise ValueError(_too_many_parts(len(parts)))
        return parts

    # -- construction ---------------------------------------------------------

    @classmethod
    def parse(cls, obj: object) -> MessageBodySchema:
        """From ``{"parts": [...]}``; errors are :class:`BodyError` naming the schema part."""
        if isinstance(obj, MessageBodySchema):
            return obj
        if not isinstance(obj, Mapping):
            raise BodyError(f"a schema must be an object {{'parts': [...]}}, not {type(obj).__name__}")
        extra = set(obj) - {"parts"}
        if extra:
            raise BodyError(f"a schema has only 'parts'; unknown field(s): {', '.join(sorted(extra))}")
        raw = obj.get("parts", [])
        if not isinstance(raw, list):
            raise BodyError(f"'parts' must be a list, not {type(raw).__name__}")
        if len(raw) > MAX_SCHEMA_PARTS:
            raise BodyError(_too_many_parts(len(raw)))
        parts = []
        for i, item in enumerate(raw):
            if isinstance(item, SchemaPart):
                parts.append(item)
                continue
            if not isinstance(item, Mapping):
                raise BodyError(f"schema part #{i}: must be an object, not {type(item).__name__}")
            try:
                parts.append(SchemaPart.model_validate(item))
            except ValidationError as exc:
                raise BodyError(f"schema part #{i}: {_pydantic_messages(exc)}") from None
        return cls(parts=tuple(parts))

    @property
    def engine(self) -> Engine:
        """The compiled matcher (built once per schema, on first use)."""
        if self._engine is None:
            self._engine = Engine(self.parts)
        return self._engine

    # -- validation -----------------------------------------------------------

    def matching(self, part: MessagePart | Mapping[str, Any]) -> list[int]:
        """Indexes of the schema parts that ``part`` matches."""
        p = MessagePart.parse(part)
        return self.engine.matching(p.name, p.content_type)

    def validate_body(self, body: MessageBody | Iterable[MessagePart] | Mapping[str, Any]) -> ValidationReport:
        """Check both rules; the report lists every offending part and unmet required part.

        A raw dict is parsed first (raising :class:`BodyError` if it is not a body).
        """
        if isinstance(body, Mapping):
            body = MessageBody.parse(body)
        parts = body.parts if isinstance(body, MessageBody) else tuple(body)
        engine = self.engine
        bad, pending = engine.scan(parts)
        explain = engine.explain
        issues = tuple(PartIssue(i, parts[i].name, parts[i].content_type, explain=explain) for i in bad)
        missing = tuple(MissingRequired(i, self.parts[i]) for i in engine.bits(pending))
        return ValidationReport(len(parts), issues, missing)

    def check(self, body: MessageBody | Iterable[MessagePart] | Mapping[str, Any]) -> None:
        """Raise :class:`SchemaValidationError` unless ``body`` is valid."""
        self.validate_body(body).raise_for_errors()

    def is_valid(self, body: MessageBody | Iterable[MessagePart] | Mapping[str, Any]) -> bool:
        return self.validate_body(body).ok
