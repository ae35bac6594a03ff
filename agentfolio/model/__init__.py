"""The canonical model every format reads into and writes from.

Its records (pydantic models) are imported when a name is first asked of this package:
the parts of agentfolio that read JSON only (storing a durable state, counting it) never
pay for building them.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentfolio.model.base import Record
    from agentfolio.model.contents import (
        CONTENT_KINDS,
        DURABLE_CONTENT_KINDS,
        Citation,
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

#: Where each name lives (a test holds this to ``__all__``).
_MODULE_OF = {
    "Record": "agentfolio.model.base",
    **dict.fromkeys(("CONTENT_KINDS", "DURABLE_CONTENT_KINDS", "Citation", "Content", "DataContent",
                     "DocumentContent", "ErrorContent", "FunctionCallContent", "FunctionResultContent",
                     "HostedFileContent", "HostedVectorStoreContent", "MemoryContent", "MemoryItem", "OpaqueContent",
                     "PartContent", "Presentation", "ReasoningContent", "SkillItem", "SkillsContent",
                     "TemplateVariableContent", "TextContent", "ToolCatalogContent", "ToolDescription",
                     "UnknownContent", "UriContent", "Usage", "UsageContent"), "agentfolio.model.contents"),
    **dict.fromkeys(("ENTRY_KINDS", "CompactionEntry", "Entry", "ErrorResponseEntry", "Message", "OpaqueEntry",
                     "RequestEntry", "ResponseEntry", "Session", "SessionData"), "agentfolio.model.conversation"),
}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # found at once the next time
    return value


__all__ = [
    "CONTENT_KINDS",
    "DURABLE_CONTENT_KINDS",
    "ENTRY_KINDS",
    "Citation",
    "CompactionEntry",
    "Content",
    "DataContent",
    "DocumentContent",
    "Entry",
    "ErrorContent",
    "ErrorResponseEntry",
    "FunctionCallContent",
    "FunctionResultContent",
    "HostedFileContent",
    "HostedVectorStoreContent",
    "MemoryContent",
    "MemoryItem",
    "Message",
    "OpaqueContent",
    "OpaqueEntry",
    "PartContent",
    "Presentation",
    "ReasoningContent",
    "Record",
    "RequestEntry",
    "ResponseEntry",
    "Session",
    "SessionData",
    "SkillItem",
    "SkillsContent",
    "TemplateVariableContent",
    "TextContent",
    "ToolCatalogContent",
    "ToolDescription",
    "UnknownContent",
    "UriContent",
    "Usage",
    "UsageContent",
]
