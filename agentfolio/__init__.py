"""agentfolio: validate, store, convert, govern and show the records AI agents leave behind.

The public API, importable from here (each loaded on first use, so ``import agentfolio``
stays cheap for a command line):

- :class:`Agentfolio` — a store and the use cases over it (``Agentfolio.open(settings)``).
- :func:`read_document`, :func:`read_file`, :func:`validate_file`, :func:`convert_report`
  — documents that are not stored; :func:`convert` — one document or session to a format.
- :data:`FORMATS`, :class:`Format`, :class:`ReadResult` — the formats and what a read gives.
- :class:`Session` — the canonical model a read produces.
- :class:`AgentfolioError` — the base of every error agentfolio raises on purpose.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentfolio.app import Agentfolio
    from agentfolio.app.documents import convert_report, read_document, read_file, validate_file
    from agentfolio.errors import AgentfolioError
    from agentfolio.formats.base import Format, ReadResult
    from agentfolio.formats.convert import convert
    from agentfolio.formats.registry import FORMATS
    from agentfolio.model import Session

__all__ = [
    "FORMATS",
    "Agentfolio",
    "AgentfolioError",
    "Format",
    "ReadResult",
    "Session",
    "convert",
    "convert_report",
    "read_document",
    "read_file",
    "validate_file",
]

_WHERE = {
    "Agentfolio": "agentfolio.app",
    "AgentfolioError": "agentfolio.errors",
    "FORMATS": "agentfolio.formats.registry",
    "Format": "agentfolio.formats.base",
    "ReadResult": "agentfolio.formats.base",
    "Session": "agentfolio.model",
    "convert": "agentfolio.formats.convert",
    "convert_report": "agentfolio.app.documents",
    "read_document": "agentfolio.app.documents",
    "read_file": "agentfolio.app.documents",
    "validate_file": "agentfolio.app.documents",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'agentfolio' has no attribute {name!r}")
