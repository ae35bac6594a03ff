"""The canonical model every format reads into and writes from."""

from agentfolio.model.base import Record
from agentfolio.model.contents import (
    CONTENT_KINDS,
    Citation,
    DURABLE_CONTENT_KINDS,
    Content,
    DataContent,
    DocumentContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    HostedVectorStoreContent,
    MemoryContent,
    MemoryItem,
    OpaqueContent,
    PartContent,
    Presentation,
    ReasoningContent,
    SkillItem,
    SkillsContent,
    TemplateVariableContent,
    TextContent,
    ToolCatalogContent,
    ToolDescription,
    UnknownContent,
    UriContent,
    Usage,
    UsageContent,
)
from agentfolio.model.conversation import (
    ENTRY_KINDS,
    CompactionEntry,
    Entry,
    ErrorResponseEntry,
    Message,
    OpaqueEntry,
    RequestEntry,
    ResponseEntry,
    Session,
    SessionData,
)

__all__ = [name for name in dir() if not name.startswith("_")]
