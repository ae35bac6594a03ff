"""MessagePart: one file/blob of a message body.

Field names are ACP's ``MessagePart`` (``name``, ``content_type``, ``content``,
``content_encoding``, ``content_url``, ``metadata``) so the parts of an ACP message
are valid parts as they stand. Differences, each deliberate:

* ``name`` is checked against the MessageBody naming rules (docs/body.md);
* ``content_type`` must be a media type (ACP defaults it to ``text/plain`` and so do
  we; an explicit ``null`` is refused because nothing could match it in a schema);
* ``content_encoding: null`` means ``plain``, ACP's default;
* ``base64`` content must decode, so errors surface when the body is read, not when
  someone finally opens the attachment;
* unknown fields are refused, so a camelCase ``contentType`` is an error instead of a
  silently defaulted ``text/plain``.

A part may have neither ``content`` nor ``content_url`` (ACP allows it: a citation
marker carried only by its metadata); its content is empty.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from agentfolio import _json

from .content import Fetcher, decode_base64, load_url
from .errors import ContentError, PartError
from .names import check_name, content_type_essence, content_type_param

_URL_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:\S+")
FIELDS = ("name", "content_type", "content", "content_encoding", "content_url", "metadata")


def _pydantic_messages(exc: ValidationError) -> str:
    out = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown field (allowed: {', '.join(FIELDS)})"
        out.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(out)


class MessagePart(BaseModel):
    """A part: optional name, a content type, inline content or a URL, metadata."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str | None = None
    content_type: str = "text/plain"
    content: str | None = None
    content_encoding: Literal["plain", "base64"] = "plain"
    content_url: str | None = None
    metadata: dict[str, Any] | None = None

    @field_validator("name")
    @classmethod
    def _check_name(cls, v: str | None) -> str | None:
        return None if v is None else check_name(v)

    @field_validator("content_type", mode="before")
    @classmethod
    def _check_content_type(cls, v: object) -> object:
        if v is None:
            raise ValueError("must be a media type like 'text/plain', not null")
        if isinstance(v, str):
            content_type_essence(v)
        return v

    @field_validator("content_encoding", mode="before")
    @classmethod
    def _default_encoding(cls, v: object) -> object:
        return "plain" if v is None else v

    @field_validator("content_url", mode="before")
    @classmethod
    def _check_url(cls, v: object) -> object:
        if v is not None and not isinstance(v, str):
            v = str(v)  # ACP hands us pydantic AnyUrl objects
        if isinstance(v, str) and not _URL_RE.fullmatch(v):
            raise ValueError(f"{v[:60]!r} is not an absolute URL (scheme:..., no spaces)")
        return v

    @model_validator(mode="after")
    def _check_content(self) -> MessagePart:
        if self.content is not None and self.content_url is not None:
            raise ValueError("give either content or content_url, not both")
        if self.content is not None and self.content_encoding == "base64":
            try:
                decode_base64(self.content)
            except ContentError as exc:
                raise ValueError(str(exc)) from None
        return self

    # -- construction ---------------------------------------------------------

    @classmethod
    def parse(cls, obj: object, index: int | None = None) -> MessagePart:
        """Build from a mapping (or return a part unchanged); errors name ``index``."""
        if isinstance(obj, MessagePart):
            return obj
        if not isinstance(obj, Mapping):
            raise PartError(index, f"must be an object with fields {', '.join(FIELDS)}, "
                                   f"not {type(obj).__name__}")
        try:
            return cls.model_validate(obj)
        except ValidationError as exc:
            raise PartError(index, _pydantic_messages(exc)) from None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; omits nulls and the default ``plain`` encoding."""
        out: dict[str, Any] = {}
        if self.name is not None:
            out["name"] = self.name
        out["content_type"] = self.content_type
        if self.content is not None:
            out["content"] = self.content
            if self.content_encoding != "plain":
                out["content_encoding"] = self.content_encoding
        if self.content_url is not None:
            out["content_url"] = self.content_url
        if self.metadata is not None:
            out["metadata"] = self.metadata
        return out

    # -- content --------------------------------------------------------------

    @property
    def essence(self) -> str:
        """Lower-cased ``type/subtype`` without parameters."""
        return content_type_essence(self.content_type)

    @property
    def is_inline(self) -> bool:
        return self.content_url is None

    @property
    def charset(self) -> str:
        return content_type_param(self.content_type, "charset") or "utf-8"

    def data(self, *, allow: Iterable[str] | None = None, fetch: Fetcher | None = None) -> bytes:
        """The content as bytes: inline (plain or base64) or from ``content_url``.

        ``data:`` URLs are decoded; other URLs are fetched only if under ``allow``.
        """
        if self.content_url is not None:
            return load_url(self.content_url, allow=allow, fetch=fetch)
        if self.content is None:
            return b""
        if self.content_encoding == "base64":
            return decode_base64(self.content)
        return self.content.encode(self.charset)

    def text(self, *, allow: Iterable[str] | None = None, fetch: Fetcher | None = None) -> str:
        """The content decoded as text (charset parameter, else UTF-8)."""
        if self.content is not None and self.content_encoding == "plain":
            return self.content
        raw = self.data(allow=allow, fetch=fetch)
        try:
            return raw.decode(self.charset)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ContentError(f"content is not {self.charset} text: {exc}") from None

    # Deliberately replaces pydantic's deprecated v1 ``BaseModel.json``: for a part, "json" means its content.
    def json(  # type: ignore[override]
        self, *, allow: Iterable[str] | None = None, fetch: Fetcher | None = None
    ) -> Any:
        """The content parsed as JSON."""
        raw = self.data(allow=allow, fetch=fetch)
        try:
            return _json.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ContentError(f"content is not JSON: {exc}") from None

    def describe(self) -> str:
        """Short human label used in error messages."""
        who = repr(self.name) if self.name is not None else "unnamed"
        return f"{who}, {self.content_type}"
