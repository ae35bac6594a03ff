"""Typed contents of a message: one small class per kind, joined in one tagged union.

The first eleven kinds are durable agent state's ``$type`` values, spelled as it spells
them.  The kinds after them carry what the Prompt Envelope and MessageBody formats hold
and durable state has no type for (template variables, memory, skills, a tool catalog,
documents, named body parts), so those readers map into the model without side channels.

A content whose ``$type`` is not one of these, or whose properties do not fit its kind,
is kept whole as :class:`OpaqueContent`: never emptied, written back exactly as read.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union, get_args

from pydantic import Field

from agentfolio.model.base import JsonValue, Record, Seq


class Usage(Record):
    """Token counts for one response."""

    input_token_count: int | None = Field(default=None, alias="inputTokenCount")
    output_token_count: int | None = Field(default=None, alias="outputTokenCount")
    total_token_count: int | None = Field(default=None, alias="totalTokenCount")


class Presentation(Record):
    """How a content asked to be shown (Prompt Envelope's ``collapsed``, long text...).

    Kept apart from the content's meaning so formats that have no presentation drop it
    in one place, and the loss report can name it.
    """

    collapsed: bool | None = None
    # "system_prompt" or "long_text": envelope segment kinds that are text with a look.
    style: str | None = None
    char_count: int | float | None = Field(default=None, alias="charCount")


class _Content(Record):
    # Declared here so ``$type`` is written first, as .NET's System.Text.Json requires
    # of a type discriminator; each kind narrows it to its literal.
    kind: str = Field(alias="$type")
    presentation: Presentation | None = None



class Citation(Record):
    """A source a text cites (Microsoft.Extensions.AI's ``CitationAnnotation``): a web
    page by ``url``, a hosted file by ``fileId``, the cited words in ``snippet``.
    Provider details (character ranges, page numbers, encrypted indexes) ride in ``extra``."""

    kind: Literal["citation"] = Field(default="citation", alias="$type")
    title: str | None = None
    url: str | None = None
    file_id: str | None = Field(default=None, alias="fileId")
    snippet: str | None = None


# An annotation of another kind is kept whole (see OpaqueContent below).
Annotation = Annotated[Union["Citation", "OpaqueContent"], Field(union_mode="left_to_right")]


class TextContent(_Content):
    kind: Literal["text"] = Field(default="text", alias="$type")
    text: str | None = None
    annotations: Seq[Annotation] | None = None


class ReasoningContent(_Content):
    """The model's reasoning.  ``protectedData`` is what the provider wants back verbatim
    to continue it (Anthropic's thinking ``signature`` or redacted ``data``, OpenAI's
    ``encrypted_content``, Gemini's ``thought_signature``): opaque, never dropped by a
    round trip.  Reasoning with protected data and no text is redacted reasoning."""

    kind: Literal["reasoning"] = Field(default="reasoning", alias="$type")
    text: str | None = None
    protected_data: str | None = Field(default=None, alias="protectedData")


class DataContent(_Content):
    """Inline bytes as a ``data:`` URI."""

    kind: Literal["data"] = Field(default="data", alias="$type")
    uri: str | None = None
    media_type: str | None = Field(default=None, alias="mediaType")


class UriContent(_Content):
    """A resource by reference (an image URL, a file link...)."""

    kind: Literal["uri"] = Field(default="uri", alias="$type")
    uri: str | None = None
    media_type: str | None = Field(default=None, alias="mediaType")


class ErrorContent(_Content):
    kind: Literal["error"] = Field(default="error", alias="$type")
    message: str | None = None
    error_code: str | None = Field(default=None, alias="errorCode")
    details: JsonValue = None


class FunctionCallContent(_Content):
    kind: Literal["functionCall"] = Field(default="functionCall", alias="$type")
    call_id: str | None = Field(default=None, alias="callId")
    name: str | None = None
    # An object in 1.x; 2.0 also allows the model's raw argument string.
    arguments: JsonValue = None
    # True for a call the provider ran itself (web search, code execution, MCP...): shown
    # and kept, never to be run by the client (Microsoft.Extensions.AI's name for it).
    informational_only: bool | None = Field(default=None, alias="informationalOnly")


class FunctionResultContent(_Content):
    kind: Literal["functionResult"] = Field(default="functionResult", alias="$type")
    call_id: str | None = Field(default=None, alias="callId")
    result: JsonValue = None


class HostedFileContent(_Content):
    """A file the provider holds, by id (with its media type and name when known)."""

    kind: Literal["hostedFile"] = Field(default="hostedFile", alias="$type")
    file_id: str | None = Field(default=None, alias="fileId")
    media_type: str | None = Field(default=None, alias="mediaType")
    name: str | None = None


class HostedVectorStoreContent(_Content):
    kind: Literal["hostedVectorStore"] = Field(default="hostedVectorStore", alias="$type")
    vector_store_id: str | None = Field(default=None, alias="vectorStoreId")


class UsageContent(_Content):
    kind: Literal["usage"] = Field(default="usage", alias="$type")
    usage: Usage | None = None


class UnknownContent(_Content):
    """Durable state's own ``unknown`` type: a framework content it had no type for."""

    kind: Literal["unknown"] = Field(default="unknown", alias="$type")
    content: JsonValue = None


class TemplateVariableContent(_Content):
    """A template variable as expanded into a prompt (envelope ``static_var``)."""

    kind: Literal["templateVariable"] = Field(default="templateVariable", alias="$type")
    name: str
    value: str
    description: str | None = None


class MemoryItem(Record):
    title: str
    content: str


class MemoryContent(_Content):
    """Memories recalled into the prompt (envelope ``memory``)."""

    kind: Literal["memory"] = Field(default="memory", alias="$type")
    description: str | None = None
    items: Seq[MemoryItem]


class SkillItem(Record):
    name: str
    description: str


class SkillsContent(_Content):
    """Skills the agent was told it has (envelope ``skills``)."""

    kind: Literal["skills"] = Field(default="skills", alias="$type")
    description: str | None = None
    items: Seq[SkillItem]


class ToolDescription(Record):
    name: str
    description: str
    parameters: str | None = None
    # JSON Schema of the parameters, when the source had one.
    json_schema: JsonValue = Field(default=None, alias="schema")


class ToolCatalogContent(_Content):
    """The tools the model was offered (envelope ``tool_overview``)."""

    kind: Literal["toolCatalog"] = Field(default="toolCatalog", alias="$type")
    items: Seq[ToolDescription]


class DocumentContent(_Content):
    """A document put in front of the model, shown as a card (envelope ``document``)."""

    kind: Literal["document"] = Field(default="document", alias="$type")
    file_name: str = Field(alias="fileName")
    media_type: str = Field(alias="mediaType")
    snippet: str = ""
    size_bytes: int | float | None = Field(default=None, alias="sizeBytes")
    parsed_content: str | None = Field(default=None, alias="parsedContent")
    uri: str | None = None


class PartContent(_Content):
    """A MessageBody part that no more specific kind carries (a named attachment, state).

    ``name`` is the part's POSIX path; content is inline (``encoding`` plain or base64)
    or by ``url``.
    """

    kind: Literal["part"] = Field(default="part", alias="$type")
    name: str | None = None
    content_type: str | None = Field(default=None, alias="contentType")
    content: str | None = None
    encoding: str | None = None
    url: str | None = None
    metadata: JsonValue = None


class OpaqueContent(Record):
    """A content this version of agentfolio does not know, kept whole.

    Every property, ``$type`` included, lives in ``extra``; the write gives it back as
    read.  ``kind`` reads the ``$type`` for display, without owning it.
    """

    @property
    def kind(self) -> str:
        tag = self.extra.get("$type")
        return tag if isinstance(tag, str) else "?"


TextContent.model_rebuild()

# Spelled as a Union so type checkers see each class; KNOWN_CONTENTS keeps the same order.
KnownContent = Union[
    TextContent,
    ReasoningContent,
    DataContent,
    UriContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    HostedVectorStoreContent,
    UsageContent,
    UnknownContent,
    TemplateVariableContent,
    MemoryContent,
    SkillsContent,
    ToolCatalogContent,
    DocumentContent,
    PartContent,
]
KNOWN_CONTENTS: tuple[type[_Content], ...] = get_args(KnownContent)

# The durable ``$type`` values: kinds any durable-state reader/writer must know.
DURABLE_CONTENT_KINDS: frozenset[str] = frozenset(
    cls.model_fields["kind"].default for cls in KNOWN_CONTENTS[:11]
)
CONTENT_KINDS: frozenset[str] = frozenset(cls.model_fields["kind"].default for cls in KNOWN_CONTENTS)

# Tagged on ``kind`` (wire name ``$type``): pydantic-core picks the class by a dict
# lookup, in Rust, both when reading and when writing.  An unknown ``$type`` fails the
# tagged union and falls to OpaqueContent, as does a content that claims a known
# ``$type`` but does not fit it (a tool call saved as a ``$type``-only object, a number
# where text belongs): kept whole and reported by schema validation, instead of failing
# the whole read.
Content = Annotated[
    Union[Annotated[KnownContent, Field(discriminator="kind")], OpaqueContent],
    Field(union_mode="left_to_right"),
]
