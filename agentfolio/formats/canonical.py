"""agentfolio's own JSON: the canonical model as it is, every kind it can hold.

``{"agentfolio": "1", "session": {...}}``, the session spelled with the model's wire
names (durable state's, ``$type`` tags), including the kinds durable state has no type
for (memory, tool catalogs, documents...).  Nothing is lost in either direction, so it
is the format to hand between agentfolio tools.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from agentfolio.formats.base import FunctionFormat, ReadResult
from agentfolio.formats.errors import FormatError, Problem, UnsupportedVersionError, json_pointer
from agentfolio.formats.losses import ConvertOptions, Lowered, Origin
from agentfolio.model import Session

NAME = "canonical"
VERSION = "1"


def looks_like(document: Any) -> bool:
    return isinstance(document, dict) and "agentfolio" in document and "session" in document


def read(document: Any, *, strict: bool = True, source: str | None = None,
         options: ConvertOptions | None = None) -> ReadResult:
    if not looks_like(document):
        raise FormatError('expected {"agentfolio": "1", "session": {...}}', source=source, pointer="")
    if document["agentfolio"] != VERSION:
        raise UnsupportedVersionError(f"agentfolio JSON version {document['agentfolio']!r} is not supported; "
                                      f"supported: {VERSION!r}", source=source, pointer="/agentfolio")
    try:
        session = Session.model_validate(document["session"])
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        path = ["session", *(step for step in first["loc"] if isinstance(step, int) or "[" not in str(step))]
        raise FormatError(f"cannot read: {first['msg']}", source=source, pointer=json_pointer(path)) from None
    return ReadResult(session=session, format=NAME, version=VERSION)


def write(session: Session) -> dict[str, Any]:
    return {"agentfolio": VERSION, "session": session.to_json_value()}


def validate(document: Any) -> list[Problem]:
    """agentfolio's own JSON has no schema beyond the model: what cannot be read is a FormatError."""
    read(document)
    return []


def lower(session: Session, *, origin: Origin | None = None, options: ConvertOptions | None = None) -> Lowered:
    """agentfolio's own JSON holds every canonical kind: nothing to lower, nothing lost."""
    return Lowered(session, [])


FORMAT = FunctionFormat(NAME, "agentfolio canonical JSON", looks_like, validate, read, write, lower)
