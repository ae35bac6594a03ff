"""Span validation and lifecycle: nothing an agent sends is dropped.

A span's ``payload`` is checked against its span type's ``params_schema`` and its
``result_payload`` against ``result_schema``, with validators compiled once per schema
version (:class:`CompiledSchemaVersion`, cached by :class:`SchemaVersionCache`).  A span
that does not match is still stored: :meth:`CompiledSchemaVersion.validate` returns a
:class:`SpanValidation` to attach to the row (``status`` ``valid`` / ``invalid`` /
``unchecked``, and problems at JSON pointers), and never raises for a bad payload.

``unchecked`` means there was nothing to check against: the span type's schema is not a
valid JSON Schema (the schema version reported that when it was created), or no schema
version is known.  A span whose ``schema_name`` the version does not declare is
``invalid`` (problem at ``schema_name``) - the hosted API records such spans too.

The lifecycle rules (:func:`check_create`, :func:`check_finish`) follow the API: a span
is created ``pending`` or ``active`` (or already finished, with both timestamps), and
finishing moves it to ``complete``/``failed``/``cancelled``.  The hosted docs say only a
pending span may be cancelled, yet the Python SDK cancels active spans too, so we accept
every move out of ``pending``/``active`` (a server that accepts more cannot break a
client).  Finishing an already-finished span is ``invalid_action`` (HTTP 409), which
both SDKs tolerate; a replay with the same idempotency key is answered from the
idempotency record before these rules run.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentfolio.registry.errors import FieldProblem, RegistryError, invalid
from agentfolio.registry.jsonschemas import SchemaCheck, SchemaCompileError, compile_schema
from agentfolio.registry.schema_versions import SchemaVersionDraft, SpanTypeSchema, load_span_types
from agentfolio.registry.templates import render_summary

SpanStatus = Literal["pending", "active", "complete", "failed", "cancelled"]
SPAN_STATUSES: tuple[str, ...] = ("pending", "active", "complete", "failed", "cancelled")
FINISH_STATUSES: tuple[str, ...] = ("complete", "failed", "cancelled")
TERMINAL_STATUSES = frozenset(FINISH_STATUSES)
#: Instance statuses add ``terminated`` (stopped by an operator; the SDK polls for it).
INSTANCE_STATUSES: tuple[str, ...] = ("pending", "active", "complete", "failed", "cancelled", "terminated")

MAX_PROBLEMS_PER_PART = 20
MAX_PROBLEM_CHARS = 300

Part = Literal["payload", "result_payload", "schema_name", "parent_span_id"]


@dataclass(frozen=True, slots=True)
class SpanProblem:
    """One mismatch: which part of the span, where in it, what rule."""

    part: Part
    pointer: str
    message: str
    schema_pointer: str = ""

    def to_json(self) -> dict[str, str]:
        return {"part": self.part, "pointer": self.pointer, "schema_pointer": self.schema_pointer,
                "message": self.message}


@dataclass(frozen=True, slots=True)
class SpanValidation:
    status: Literal["valid", "invalid", "unchecked"]
    problems: tuple[SpanProblem, ...] = ()
    #: Why nothing (or only part) was checked, when that is the case.
    note: str | None = None

    @property
    def flagged(self) -> bool:
        return self.status != "valid"

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "problems": [p.to_json() for p in self.problems], "note": self.note}


VALID = SpanValidation("valid")

PARENT_MISSING = "parent_span_id names no span of this instance"
SENSITIVE_CHECKED = "payload is sensitive-encoded: the schema saw the {$sensitive} wrappers, values masked"


def within_run(validation: SpanValidation, *, parent_found: bool | None, sensitive: bool) -> SpanValidation:
    """``validation`` with what only the span's run tells: a parent it names that is not
    among the run's spans (invalid), and a note when the schema saw sensitive values masked."""
    if parent_found is not False and not sensitive:
        return validation
    problems = list(validation.problems)
    notes = [validation.note] if validation.note else []
    status = validation.status
    if parent_found is False:
        problems.append(SpanProblem("parent_span_id", "", PARENT_MISSING))
        notes.append(PARENT_MISSING)
        status = "invalid"
    if sensitive:
        notes.append(SENSITIVE_CHECKED)
    return SpanValidation(status, tuple(problems), "; ".join(notes) or None)


@dataclass
class _CompiledSpanType:
    schema: SpanTypeSchema
    params_validator: Any | None
    result_validator: Any | None
    params_error: str | None
    result_error: str | None


class _AcceptsEverything:
    """The validator of a schema with no keyword (``{}``): every value is
    valid, so no value is walked (OTel span types are declared so; handing a span's
    attributes to the schema library only to hear "valid" cost more than the check)."""

    def is_valid(self, value: Any) -> bool:
        return True

    def iter_errors(self, value: Any) -> Iterable[Any]:
        return ()


_ACCEPTS_EVERYTHING = _AcceptsEverything()


def _compile(schema: dict[str, Any], check: SchemaCheck) -> tuple[Any | None, str | None]:
    if not check.ok:
        return None, check.message
    if schema == {}:
        return _ACCEPTS_EVERYTHING, None
    try:
        return compile_schema(schema), None
    except SchemaCompileError as error:
        return None, str(error)


@dataclass
class CompiledSchemaVersion:
    """A schema version's validators and templates, built once and reused for every span."""

    id: str | None
    span_types: dict[str, SpanTypeSchema]
    _compiled: dict[str, _CompiledSpanType] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for name, span_type in self.span_types.items():
            params_validator, params_error = _compile(span_type.params_schema, span_type.params_schema_validation)
            result_validator, result_error = _compile(span_type.result_schema, span_type.result_schema_validation)
            self._compiled[name] = _CompiledSpanType(span_type, params_validator, result_validator,
                                                     params_error, result_error)

    @classmethod
    def from_draft(cls, draft: SchemaVersionDraft, id: str | None = None) -> CompiledSchemaVersion:
        return cls(id if id is not None else draft.id, dict(draft.span_types))

    @classmethod
    def from_details(cls, details: Mapping[str, Any]) -> CompiledSchemaVersion:
        """From a stored schema version response (``{"id", "span_type_schemas": {…}}``)."""
        return cls(details.get("id"), load_span_types(details.get("span_type_schemas") or {}))

    def title(self, schema_name: str) -> str:
        span_type = self.span_types.get(schema_name)
        return span_type.title if span_type else schema_name

    def validate(self, schema_name: str, payload: Any, result_payload: Any = None,
                 *, status: str | None = None) -> SpanValidation:
        """Check a span's payloads; never raises for bad data.

        ``result_payload`` ``None`` (not finished yet) is not checked.  The payload of a
        span that never started (``pending``, or ``cancelled`` with an empty payload, as
        the SDK sends when a step is skipped) is not checked either: it carries no params.
        """
        compiled = self._compiled.get(schema_name)
        if compiled is None:
            declared = ", ".join(sorted(self.span_types)[:20]) or "none"
            return SpanValidation("invalid", (SpanProblem(
                "schema_name", "", _clip(f"span type {schema_name!r} is not declared by this schema version "
                                         f"(declared: {declared})")),))
        problems: list[SpanProblem] = []
        notes: list[str] = []
        never_started = status == "pending" or (status == "cancelled" and payload in (None, {}))
        if not never_started:
            _check_part("payload", payload, compiled.params_validator, compiled.params_error, problems, notes)
        if result_payload is not None:
            _check_part("result_payload", result_payload, compiled.result_validator, compiled.result_error,
                        problems, notes)
        note = "; ".join(notes) or None
        if problems:
            return SpanValidation("invalid", tuple(problems), note)
        if notes:
            return SpanValidation("unchecked", (), note)
        return VALID

    def summary(self, schema_name: str, payload: Any, result_payload: Any = None) -> str | None:
        """The span's rendered template (``summary``), or ``None``."""
        span_type = self.span_types.get(schema_name)
        if span_type is None or span_type.template is None or not span_type.template_validation.ok:
            return None
        return render_summary(span_type.template, payload if isinstance(payload, Mapping) else None,
                              result_payload if isinstance(result_payload, Mapping) else None)


UNKNOWN_VERSION_NOTE = "no schema version is known for this span's instance"


def validate_without_version() -> SpanValidation:
    return SpanValidation("unchecked", (), UNKNOWN_VERSION_NOTE)


def _check_part(part: Part, value: Any, validator: Any | None, schema_error: str | None,
                problems: list[SpanProblem], notes: list[str]) -> None:
    if validator is None:
        notes.append(f"{part} not checked: the span type's "
                     f"{'params' if part == 'payload' else 'result'} schema is invalid ({schema_error})")
        return
    if validator.is_valid(value):
        return
    for count, error in enumerate(validator.iter_errors(value)):
        if count == MAX_PROBLEMS_PER_PART:
            problems.append(SpanProblem(part, "", f"more problems in {part} not listed "
                                                  f"(first {MAX_PROBLEMS_PER_PART} shown)"))
            break
        problems.append(SpanProblem(part, _pointer(error.instance_path), _clip(error.message),
                                    _pointer(error.schema_path)))


def _pointer(path: Iterable[Any]) -> str:
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in path)


def _clip(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_PROBLEM_CHARS else text[: MAX_PROBLEM_CHARS - 1] + "…"


class SchemaVersionCache:
    """LRU of :class:`CompiledSchemaVersion` by schema version id; ``loader(id)`` builds
    a missing one (from the store).  Versions are immutable, so entries never go stale."""

    def __init__(self, loader: Callable[[str], CompiledSchemaVersion | None], size: int = 512) -> None:
        self._loader = loader
        self._size = size
        self._items: OrderedDict[str, CompiledSchemaVersion] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, version_id: str) -> CompiledSchemaVersion | None:
        with self._lock:
            found = self._items.get(version_id)
            if found is not None:
                self._items.move_to_end(version_id)
                return found
        built = self._loader(version_id)
        if built is None:
            return None
        with self._lock:
            self._items[version_id] = built
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return built

    def put(self, version: CompiledSchemaVersion) -> None:
        if version.id is None:
            raise ValueError("only schema versions with an id can be cached")
        with self._lock:
            self._items[version.id] = version
            self._items.move_to_end(version.id)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


# --------------------------------------------------------------------------- lifecycle


def check_create(status: object, *, result_payload: object = None, finished_at: object = None,
                 field_path: str = "details") -> str:
    """The status a new span is stored with; :class:`RegistryError` when the request is
    inconsistent.  A ``result_payload`` only belongs to a finished span."""
    problems: list[FieldProblem] = []
    if status not in SPAN_STATUSES:
        shown = repr(status) if isinstance(status, str) else type(status).__name__
        problems.append(invalid(f"{field_path}.status", f"{shown} is not one of {', '.join(SPAN_STATUSES)}"))
    elif result_payload is not None and status not in TERMINAL_STATUSES:
        problems.append(invalid(f"{field_path}.result_payload",
                                f"only a finished span (complete, failed or cancelled) has a result payload; "
                                f"this span is {status}"))
    elif finished_at is not None and status not in TERMINAL_STATUSES:
        problems.append(invalid(f"{field_path}.finished_at", f"a {status} span has not finished"))
    if problems:
        raise RegistryError(problems)
    return status  # type: ignore[return-value]


def check_finish(current: str, requested: object = None, *, field_path: str = "status") -> str:
    """The status after ``finish`` (default ``complete``), or :class:`RegistryError`:
    ``invalid_value`` for an unknown status, ``invalid_action`` (HTTP 409) when the span
    cannot move there from ``current``."""
    target = "complete" if requested is None else requested
    if target not in FINISH_STATUSES:
        shown = repr(target) if isinstance(target, str) else type(target).__name__
        raise RegistryError(invalid(field_path, f"{shown} is not one of {', '.join(FINISH_STATUSES)}"))
    if current in TERMINAL_STATUSES:
        raise RegistryError(FieldProblem(field_path, "invalid_action", f"the span already finished ({current})"))
    return target


def check_instance_finish(current: str, requested: object = None, *, field_path: str = "status") -> str:
    """Same rules for agent instances; ``terminated`` counts as finished."""
    if current == "terminated":
        raise RegistryError(FieldProblem(field_path, "invalid_action", "the instance was terminated"))
    return check_finish(current, requested, field_path=field_path)


def span_counts(statuses: Iterable[str]) -> dict[str, int]:
    """The ``span_counts`` object of an agent instance from its spans' statuses."""
    counts = {"total": 0, "pending": 0, "active": 0, "complete": 0, "failed": 0, "cancelled": 0, "finished": 0}
    for status in statuses:
        counts["total"] += 1
        if status in counts:
            counts[status] += 1
        if status in TERMINAL_STATUSES:
            counts["finished"] += 1
    return counts
