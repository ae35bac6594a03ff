"""Microsoft Agent Framework durable agent state: ``{schemaVersion, data:{conversationHistory}}``.

Versions, following the format's semver rules:

* Every version is validated against Microsoft's own schema, the durable extension's
  ``durable-agent-entity-state.json``, which describes 1.0, 1.1 and 1.2 with one legacy
  shape (an entry's ``$type`` unchecked; ``terminalResults``, ``completionReceipts`` and
  ``historyBinding`` forbidden) and 2.0 with its own; Microsoft's JSON-Schema-Test-Suite
  cases for it run in ``tests/formats/test_microsoft_schema_cases.py``.
* 1.0, 1.1 and 1.2 are read and written fully; a newer 1.x minor is read as the newest
  1.x, and what it adds that we do not know (properties, entry or content ``$type``
  values) is kept as read.
* 2.0 (the draft in ``agent-framework-durable-extension``) is its own major: the
  ``developer`` role, string function arguments, ``uri`` without ``mediaType``,
  ``terminalResults``, ``completionReceipts``, ``historyBinding``.  Microsoft's Python
  prototype spells the two maps ``responseMailbox`` and ``completedCorrelations``: such
  a state breaks the shared schema (its maps are missing) but is read and kept whole,
  with a note naming the shared spelling, and its outcomes are shown as the shared ones.
* Any other major, and a missing or malformed version, is refused: reading it would
  risk the history, and writing it back would lose it.

A read followed by a write gives back the same JSON value, ``schemaVersion`` first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from agentfolio import _json
from agentfolio._json import json_type
from agentfolio.formats.base import FunctionFormat, ReadResult, read_lazily
from agentfolio.formats.errors import FormatError, Problem, UnsupportedVersionError, json_pointer, refuse_if_invalid
from agentfolio.formats.jsonio import gc_paused, parse_json
from agentfolio.formats.schema_check import check

if TYPE_CHECKING:
    from pydantic import ValidationError

    from agentfolio.formats.losses import ConvertOptions, Lowered, Origin
    from agentfolio.model import Session

NAME = "durable-state"
# The entry $type values durable state defines (agentfolio.model.ENTRY_KINDS, spelled here
# so that checking a file never loads the model; a test keeps the two the same).
ENTRY_TYPES = frozenset({"request", "response", "errorResponse", "compaction"})

# Microsoft's schema for every known version (see the module docstring).
SCHEMA_FILE = "durable-agent-entity-state.json"
# major → the minors we know; the newest minor of a major also reads later minors.
KNOWN_MINORS: dict[int, tuple[int, ...]] = {1: (0, 1, 2), 2: (0,)}
# What a session built in Python (not read from a file) is written as: the newest 1.x,
# which Microsoft's own 1.1 readers accept because its additions are optional.
DEFAULT_VERSION = "1.2.0"
SUPPORTED_DESCRIPTION = "1.x.y (1.0, 1.1, 1.2 known) and 2.0.x"

_VERSION = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")


@dataclass(frozen=True, slots=True)
class SchemaVersion:
    major: int
    minor: int
    patch: int
    text: str

    @property
    def schema_file(self) -> str:
        return SCHEMA_FILE

    @property
    def newer_than_known(self) -> bool:
        """A minor newer than any we know: its additions are expected, and kept."""
        return self.minor > max(KNOWN_MINORS[self.major])


def parse_version(document: Any) -> SchemaVersion:
    """The document's ``schemaVersion``, or UnsupportedVersionError saying what was found."""
    if not isinstance(document, dict):
        raise FormatError(f"expected a JSON object with schemaVersion and data, found {json_type(document)}",
                          pointer="")
    if "schemaVersion" not in document:
        raise UnsupportedVersionError(
            f"no schemaVersion: durable agent state must say its version; supported: {SUPPORTED_DESCRIPTION}",
            pointer="/schemaVersion")
    text = document["schemaVersion"]
    match = _VERSION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise UnsupportedVersionError(
            f"schemaVersion {_json.dumps(text).decode()} is not a semantic version (major.minor.patch); "
            f"supported: {SUPPORTED_DESCRIPTION}", pointer="/schemaVersion")
    major, minor, patch = (int(part) for part in match.groups())
    if major not in KNOWN_MINORS:
        raise UnsupportedVersionError(
            f"schemaVersion {text} has major version {major}, which this release cannot read without "
            f"risking its history; supported: {SUPPORTED_DESCRIPTION}", pointer="/schemaVersion")
    return SchemaVersion(major, minor, patch, text)


def validate(document: Any) -> tuple[SchemaVersion, list[Problem], list[Problem]]:
    """Check a parsed document: its version, then its version's schema.

    Returns ``(version, problems, notes)``.  In a newer minor than we know, an unknown
    ``$type`` is what semver allows the minor to add, so it is a note, not a problem;
    an entry whose ``$type`` we do not know is a note in every 1.x (Microsoft's legacy
    shape leaves it unchecked) and is kept whole.
    """
    version = parse_version(document)
    newest = max(KNOWN_MINORS[version.major])
    checked = document
    if version.newer_than_known or version.text not in _SCHEMA_ENUM_VERSIONS:
        # The schema pins the versions it describes; check a newer minor or patch
        # against its newest known sibling, without touching the caller's dict.
        checked = {**document, "schemaVersion": f"{version.major}.{min(version.minor, newest)}.0"}
    problems = check(SCHEMA_FILE, checked)
    notes: list[Problem] = []
    if version.newer_than_known:
        notes.append(Problem("/schemaVersion", f"version {version.text} is newer than the newest known "
                             f"{version.major}.{newest}; what it adds is kept as read"))
        notes.extend(p for p in problems if _is_unknown_tag(p))
        problems = [p for p in problems if not _is_unknown_tag(p)]
    if version.major == 1:
        notes.extend(_unknown_entries(document))
        notes.sort(key=lambda note: (note.pointer != "/schemaVersion", _document_order(note.pointer)))
    if version.major == 2:
        notes.extend(_prototype_spellings(document))
    return version, problems, notes


def _unknown_entries(document: dict[str, Any]) -> list[Problem]:
    data = document.get("data")
    history = data.get("conversationHistory") if isinstance(data, dict) else None
    notes = []
    for index, entry in enumerate(history if isinstance(history, list) else ()):
        kind = entry.get("$type", None) if isinstance(entry, dict) else None
        if kind not in ENTRY_TYPES and isinstance(entry, dict):
            what = f"entry $type {_json.dumps(kind).decode()}" if "$type" in entry else "an entry without $type"
            notes.append(Problem(f"/data/conversationHistory/{index}" + ("/$type" if "$type" in entry else ""),
                                 f"{what} is not one this release knows; kept whole, as read"))
    return notes


def _document_order(pointer: str) -> list[tuple[int, int | str]]:
    return [(0, int(step)) if step.isdigit() else (1, step) for step in pointer.split("/")]


# Microsoft's Python prototype of 2.0 names the shared maps its own way.
PROTOTYPE_SPELLINGS = {"responseMailbox": "terminalResults", "completedCorrelations": "completionReceipts"}


def _prototype_spellings(document: dict[str, Any]) -> list[Problem]:
    data = document.get("data")
    if not isinstance(data, dict):
        return []
    return [Problem(f"/data/{own}", f"{own!r} is the Python prototype's name for the shared schema's {shared!r}; "
                    "kept as read, but other 2.0 readers look for the shared name")
            for own, shared in PROTOTYPE_SPELLINGS.items() if own in data and shared not in data]


_SCHEMA_ENUM_VERSIONS = frozenset({"1.0.0", "1.1.0", "1.2.0", "2.0.0"})


def _is_unknown_tag(problem: Problem) -> bool:
    return problem.message.startswith("unknown $type")


def read(document: Any, *, strict: bool = True, source: str | None = None,
         options: ConvertOptions | None = None) -> ReadResult:
    """Read a parsed durable state into the canonical model.

    ``strict`` refuses a document that breaks its schema (InvalidDocumentError lists
    every violation).  A tolerant read (``strict=False``) still refuses an unsupported
    version, but reads messy real-world states (nulls for optional fields, roles
    outside the enum, ``{}`` tool calls) and returns the violations as ``problems``.
    """
    with gc_paused():
        return _read(document, strict=strict, source=source)


def _read(document: Any, *, strict: bool, source: str | None) -> ReadResult:
    try:
        version, problems, notes = validate(document)
    except FormatError as error:
        raise (error.with_source(source) if source else error) from None
    refuse_if_invalid(problems, strict=strict, source=source)

    def build() -> Session:
        from pydantic import ValidationError

        from agentfolio.model import Session

        try:
            session = Session.model_validate(document)
        except ValidationError as error:
            raise _model_error(error, source) from None
        history = document["data"].get("conversationHistory") if isinstance(document.get("data"), dict) else None
        if isinstance(history, list):
            for entry, entry_source in zip(session.entries, history, strict=False):
                entry.remember_source(entry_source)
        return session

    return read_lazily(build, document, NAME, version=version.text, problems=problems, notes=notes)


def read_bytes(data: bytes | str, *, strict: bool = True, source: str | None = None) -> ReadResult:
    with gc_paused():
        return read(parse_json(data, source=source), strict=strict, source=source)


def write(session: Session) -> dict[str, Any]:
    """The session as durable state JSON: ``schemaVersion`` first, nothing dropped.

    Raises FormatError for a content or entry kind that durable state has no type for
    (a memory, a tool catalog...): those are converted, with a loss report, by
    ``agentfolio.formats.convert``, not written under a ``$type`` no reader knows.
    """
    document = session.document_read_as(NAME)
    if document is not None:
        return document if next(iter(document)) == "schemaVersion" else {
            "schemaVersion": document["schemaVersion"], **document}
    foreign = _non_durable_kinds(session)
    if foreign:
        pointer, kind = foreign[0]
        raise FormatError(f"{kind!r} has no durable-state type; convert the session instead of writing it "
                          f"directly ({len(foreign)} such item(s))", pointer=pointer)
    value = session.model_dump(by_alias=True, exclude_unset=True, mode="json",
                               exclude={"data": {"conversation_history"}})
    data = session.data
    if data is not None and "conversation_history" in data.model_fields_set:
        history = None if data.conversation_history is None else [
            entry.source if entry.source is not None else entry.to_json_value() for entry in data.conversation_history]
        value["data"] = {"conversationHistory": history, **value["data"]}
    if "schemaVersion" not in value:
        return {"schemaVersion": DEFAULT_VERSION, **value}
    return value


def dumps(session: Session, *, indent: bool = True) -> bytes:
    return _json.dumps(write(session), option=orjson.OPT_INDENT_2 if indent else 0)


def looks_like(document: Any) -> bool:
    return isinstance(document, dict) and "schemaVersion" in document and "data" in document


def history_and_data(document: Any) -> tuple[list[Any], dict[str, Any]]:
    """A durable state's history (its entries' JSON, as they are) and its data object,
    read from the JSON without checking it: empty where either is missing or not of its
    type."""
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, dict):
        return [], {}
    history = data.get("conversationHistory")
    return (history if isinstance(history, list) else []), data


def _non_durable_kinds(session: Session) -> list[tuple[str, str]]:
    from agentfolio.model import DURABLE_CONTENT_KINDS, ENTRY_KINDS, OpaqueEntry

    found = []
    for entry_index, entry in enumerate(session.entries):
        if entry.source is not None:
            continue  # read from durable state: written back as read
        base: list[str | int] = ["data", "conversationHistory", entry_index]
        # An entry of a kind we do not know (or with no $type, which 1.x allows) is kept
        # whole and written back as read.
        if not isinstance(entry, OpaqueEntry) and entry.kind not in ENTRY_KINDS:
            found.append((json_pointer(base), str(entry.kind)))
        for message_index, message in enumerate(entry.items):
            for content_index, content in enumerate(message.items):
                if content.__class__.__name__ != "OpaqueContent" and content.kind not in DURABLE_CONTENT_KINDS:
                    found.append((json_pointer([*base, "messages", message_index, "contents", content_index]),
                                  content.kind))
    return found


def _model_error(error: ValidationError, source: str | None) -> FormatError:
    first = error.errors(include_url=False)[0]
    # Drop pydantic's union bookkeeping from the location; keep keys and indexes.
    path = [step for step in first["loc"] if isinstance(step, int) or not _is_union_step(step)]
    return FormatError(f"cannot read: {first['msg']}", source=source, pointer=json_pointer(path))


def _is_union_step(step: Any) -> bool:
    text = str(step)
    return "[" in text or text.endswith(("Content", "Entry")) or text.startswith("function-")


def lower(session: Session, *, origin: Origin | None = None, options: ConvertOptions | None = None) -> Lowered:
    """The session reduced to what durable state holds (see durable_lowering)."""
    from agentfolio.formats import durable_lowering

    return durable_lowering.lower(session, origin=origin, options=options)


def problems(document: Any) -> list[Problem]:
    """Every schema violation (a version we cannot read is a FormatError)."""
    return validate(document)[1]


FORMAT = FunctionFormat(NAME, "Microsoft Agent Framework durable agent state", looks_like, problems, read, write,
                        lower, reuse_documents=False)
