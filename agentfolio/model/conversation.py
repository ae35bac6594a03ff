"""Session → entries (requests and responses) → messages → contents.

Shaped on durable agent state, the richest of the formats we read: a session is an
ordered history of entries; each entry is a request sent to the agent or what came back,
and holds messages; each message holds typed contents.  Times stay the strings they were
read as (``2025-11-04T19:33:10.47008+00:00`` is not rewritten to ``.470080``); parse
them with :func:`agentfolio.model.times.parse_time` where a datetime is needed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal, Self, Union, get_args

from pydantic import Field

from agentfolio.model.base import JsonValue, Record, Seq
from agentfolio.model.contents import Content, Usage


class Message(Record):
    # Any string: real states carry roles beyond the schema's enum ("agent" in .NET
    # tests, "developer" in 2.0); validation reports them, reading keeps them.
    role: str | None = None
    author_name: str | None = Field(default=None, alias="authorName")
    created_at: str | None = Field(default=None, alias="createdAt")
    contents: Seq[Content] | None = None
    message_id: str | None = Field(default=None, alias="messageId")
    extension_data: JsonValue = Field(default=None, alias="extensionData")

    @property
    def items(self) -> tuple[Content, ...]:
        return self.contents or ()

    # How the source spelled what the model does not distinguish (OpenAI's content as a
    # string, an array of one text part, null or absent): a writer with several spellings
    # of the same contents keeps the one read.  Private, like an entry's source: not part
    # of the message's value, not written by any other format, kept by model_copy.
    @property
    def spelling(self) -> str | None:
        private = self.__pydantic_private__
        return private.get("spelling") if private else None

    def remember_spelling(self, spelling: str) -> None:
        object.__setattr__(self, "__pydantic_private__", {"spelling": spelling})


class _SourceKept(Record):
    """An entry read from a document remembers the JSON it was read from.

    Records are immutable and their JSON values are the document's own objects, so that
    JSON stays exactly what the entry would write: writers reuse it instead of
    serializing the entry again (a long history writes back at orjson speed).  A copy
    with changes forgets it.
    """

    @property
    def source(self) -> dict[str, Any] | None:
        private = self.__pydantic_private__
        return private.get("source") if private else None

    def remember_source(self, source: dict[str, Any]) -> None:
        object.__setattr__(self, "__pydantic_private__", {"source": source})

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Any:
        copied = super().model_copy(update=update, deep=deep)
        if update or deep:
            object.__setattr__(copied, "__pydantic_private__", None)
        return copied


class _Entry(_SourceKept):
    # Declared first so ``$type`` is written first (see contents._Content).
    kind: str = Field(alias="$type")
    correlation_id: str | None = Field(default=None, alias="correlationId")
    created_at: str | None = Field(default=None, alias="createdAt")
    messages: Seq[Message] | None = None


    @property
    def items(self) -> tuple[Message, ...]:
        return self.messages or ()


class RequestEntry(_Entry):
    """What was sent to the agent."""

    kind: Literal["request"] = Field(default="request", alias="$type")
    orchestration_id: str | None = Field(default=None, alias="orchestrationId")
    response_type: str | None = Field(default=None, alias="responseType")
    response_schema: JsonValue = Field(default=None, alias="responseSchema")


class ResponseEntry(_Entry):
    """What the agent answered, with the tokens it cost."""

    kind: Literal["response"] = Field(default="response", alias="$type")
    usage: Usage | None = None


class ErrorResponseEntry(_Entry):
    """A turn that failed (durable state 1.2): its messages carry the error contents."""

    kind: Literal["errorResponse"] = Field(default="errorResponse", alias="$type")
    usage: Usage | None = None


class CompactionEntry(_Entry):
    """Earlier history replaced by a summary (durable state 1.2)."""

    kind: Literal["compaction"] = Field(default="compaction", alias="$type")


class OpaqueEntry(_SourceKept):
    """An entry of a kind this version does not know: every property kept in ``extra``."""

    @property
    def kind(self) -> str:
        tag = self.extra.get("$type")
        return tag if isinstance(tag, str) else "?"

    @property
    def items(self) -> tuple[Message, ...]:
        return ()


KnownEntry = Union[RequestEntry, ResponseEntry, ErrorResponseEntry, CompactionEntry]
KNOWN_ENTRIES: tuple[type[_Entry], ...] = get_args(KnownEntry)
ENTRY_KINDS = frozenset(cls.model_fields["kind"].default for cls in KNOWN_ENTRIES)
# Same scheme as contents.Content: tagged by ``$type``, unknown or ill-fitting entries
# kept whole as OpaqueEntry.
Entry = Annotated[
    Union[Annotated[KnownEntry, Field(discriminator="kind")], OpaqueEntry],
    Field(union_mode="left_to_right"),
]


class SessionData(Record):
    conversation_history: Seq[Entry] | None = Field(default=None, alias="conversationHistory")


class Session(Record):
    """One agent session: the history and whatever else its state carried.

    ``schema_version`` is the version of the format it was read from (or is to be
    written as); properties beyond the history (``session``, ``truncation``,
    ``terminalResults``...) stay in ``data.extra`` untouched.
    """

    schema_version: str | None = Field(default=None, alias="schemaVersion")
    data: SessionData | None = None

    # As Message.spelling: how the source laid out what the model does not distinguish
    # (OpenAI messages as a bare array or as a request body).
    @property
    def spelling(self) -> str | None:
        private = self.__pydantic_private__
        return private.get("spelling") if private else None

    def remember_spelling(self, spelling: str) -> None:
        self._remember("spelling", spelling)

    # A session read from a document remembers it, with its format: records are immutable
    # and their JSON values are the document's own objects, so the document is exactly
    # what that format's writer would give for this session, and the writer gives it back
    # instead of writing every record again.  A copy with changes forgets it, as does
    # adding unknown properties (formats.losses.with_extras).
    def remember_document(self, fmt: str, document: Any) -> None:
        self._remember("document", (fmt, document))

    def document_read_as(self, fmt: str) -> Any:
        """The document this session was read from in format ``fmt`` (None: not read so)."""
        private = self.__pydantic_private__
        read = private.get("document") if private else None
        return read[1] if read is not None and read[0] == fmt else None

    def forget_document(self) -> None:
        private = self.__pydantic_private__
        if private and "document" in private:
            object.__setattr__(self, "__pydantic_private__", {k: v for k, v in private.items() if k != "document"})

    def _remember(self, key: str, value: Any) -> None:
        object.__setattr__(self, "__pydantic_private__", {**(self.__pydantic_private__ or {}), key: value})

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        copied = super().model_copy(update=update, deep=deep)
        if update or deep:
            copied.forget_document()
        return copied

    @property
    def entries(self) -> tuple[Entry, ...]:
        if self.data is None or self.data.conversation_history is None:
            return ()
        return self.data.conversation_history

    def messages(self) -> Iterator[tuple[Entry, Message]]:
        """Every message in order, with the entry it belongs to."""
        for entry in self.entries:
            for message in entry.items:
                yield entry, message
