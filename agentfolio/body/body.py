"""MessageBody: an ordered list of parts with filesystem-like access.

A body is one flat list (the order is what a UI shows or an LLM reads); the names
give it a tree on the side. A name may be a prefix of another: ``/sources/1`` and
``/sources/1/urls/5`` can both be parts, so a path can be a part and a directory
at once (unlike a POSIX filesystem).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import orjson
from pydantic import BaseModel, ConfigDict, PrivateAttr, model_validator

from agentfolio import _json
from .content import Fetcher
from .errors import BodyError, PartError
from .globs import name_glob
from .parts import MessagePart


# The fields an ACP ``Message`` has beside its parts: a whole message, as the SDK writes
# it, is accepted where a body is; they describe the message, not its body, so a body
# read from one is its parts (agentfolio.formats.message_body keeps them in the session).
ACP_MESSAGE_FIELDS = frozenset({"role", "created_at", "completed_at"})


class PartsDocument:
    """JSON in and out for the two ``{"parts": [...]}`` documents: bodies and schemas."""

    #: How a parse error names the document ("body", "schema").
    document_label: ClassVar[str] = "body"

    @classmethod
    def from_json(cls, data: bytes | str) -> Any:
        try:
            obj = _json.loads(data)
        except orjson.JSONDecodeError as exc:
            raise BodyError(f"{cls.document_label} is not JSON: {exc}") from None
        return cls.parse(obj)  # type: ignore[attr-defined]

    @classmethod
    def load(cls, path: str | Path) -> Any:
        return cls.from_json(Path(path).read_bytes())

    def to_dict(self) -> dict[str, Any]:
        return {"parts": [p.to_dict() for p in self.parts]}  # type: ignore[attr-defined]

    def to_json(self, *, indent: bool = False) -> bytes:
        return _json.dumps(self.to_dict(), option=orjson.OPT_INDENT_2 if indent else 0)


class MessageBody(PartsDocument, BaseModel):
    """``{"parts": [...]}``; names are unique; unnamed parts are the main content."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    parts: tuple[MessagePart, ...] = ()

    _index: dict[str, int] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _unique_names(self) -> MessageBody:
        self._index = _name_index(self.parts)
        return self

    # -- construction ---------------------------------------------------------

    @classmethod
    def of(cls, parts: Iterable[MessagePart | Mapping[str, Any]]) -> MessageBody:
        """Build from parts or part dicts; errors are :class:`BodyError` naming the index."""
        built = tuple(MessagePart.parse(p, i) for i, p in enumerate(parts))
        _name_index(built)  # raises PartError itself, before pydantic would wrap it
        return cls(parts=built)

    @classmethod
    def parse(cls, obj: object) -> MessageBody:
        """From the JSON form ``{"parts": [...]}`` (a bare list of parts is accepted too)."""
        if isinstance(obj, MessageBody):
            return obj
        if isinstance(obj, list):
            return cls.of(obj)
        if not isinstance(obj, Mapping):
            raise BodyError(f"a body must be an object {{'parts': [...]}}, not {type(obj).__name__}")
        extra = set(obj) - {"parts"} - ACP_MESSAGE_FIELDS
        if extra:
            raise BodyError(f"a body has only 'parts' (and, as a whole ACP Message, "
                            f"{', '.join(sorted(ACP_MESSAGE_FIELDS))}); unknown field(s): {', '.join(sorted(extra))}")
        parts = obj.get("parts", [])
        if not isinstance(parts, list):
            raise BodyError(f"'parts' must be a list, not {type(parts).__name__}")
        return cls.of(parts)

    # -- sequence and mapping access ------------------------------------------

    def __len__(self) -> int:
        return len(self.parts)

    def __iter__(self) -> Iterator[MessagePart]:  # type: ignore[override]
        return iter(self.parts)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __getitem__(self, name: str) -> MessagePart:
        try:
            return self.parts[self._index[name]]
        except KeyError:
            raise KeyError(f"no part named {name!r}") from None

    def get(self, name: str, default: MessagePart | None = None) -> MessagePart | None:
        """The part called ``name`` (an exact path, not a glob), or ``default``."""
        i = self._index.get(name)
        return default if i is None else self.parts[i]

    def names(self) -> list[str]:
        return [p.name for p in self.parts if p.name is not None]

    @property
    def main(self) -> tuple[MessagePart, ...]:
        """The unnamed parts, in order: the content meant for the user or the LLM."""
        return tuple(p for p in self.parts if p.name is None)

    @property
    def attachments(self) -> tuple[MessagePart, ...]:
        """The named parts, in order."""
        return tuple(p for p in self.parts if p.name is not None)

    def main_text(
        self, sep: str = "", *, allow: Iterable[str] | None = None, fetch: Fetcher | None = None
    ) -> str:
        """The unnamed ``text/*`` parts' text, joined (like ACP's ``str(message)``).

        Parts behind remote URLs are skipped unless ``allow`` (or ``fetch``) is given:
        showing a message must not make us fetch whatever its author pointed at."""
        remote_ok = bool(allow) or fetch is not None
        return sep.join(
            p.text(allow=allow, fetch=fetch)
            for p in self.main
            if p.essence.startswith("text/")
            and (p.content_url is None or remote_ok or p.content_url[:5].lower() == "data:")
        )

    # -- filesystem-like ------------------------------------------------------

    def list(self, pattern: str = "/**") -> list[MessagePart]:
        """Named parts whose name matches the glob ``pattern``, in body order."""
        glob = name_glob(pattern)
        return [p for p in self.parts if p.name is not None and glob.matches(p.name)]

    def walk(self, top: str = "/") -> Iterator[tuple[str, list[str], list[MessagePart]]]:
        """Like ``os.walk``: ``(dirpath, subdir names, parts directly in dirpath)``,
        top-down, directories sorted, parts in body order."""
        children: dict[str, set[str]] = {}
        files: dict[str, list[MessagePart]] = {}
        for part in self.parts:
            if part.name is None:
                continue
            segments = part.name.split("/")[1:]
            for depth in range(len(segments)):
                parent = "/" + "/".join(segments[:depth])
                if depth < len(segments) - 1:
                    children.setdefault(parent, set()).add(segments[depth])
                else:
                    files.setdefault(parent, []).append(part)
        top = "/" + top.strip("/") if top != "/" else "/"
        stack = [top]
        while stack:
            path = stack.pop()
            subdirs = sorted(children.get(path, ()))
            here = files.get(path, [])
            if path == top and not subdirs and not here and top != "/":
                return
            yield path, subdirs, here
            base = path.rstrip("/")
            stack.extend(f"{base}/{d}" for d in reversed(subdirs))


def _name_index(parts: Iterable[MessagePart]) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, part in enumerate(parts):
        name = part.name
        if name is None:
            continue
        if name in index:
            raise PartError(i, f"name {name!r} is already used by part {index[name]}")
        index[name] = i
    return index
