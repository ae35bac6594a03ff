"""Import files of any readable format as stored sessions.

Each file is stored whole or not at all, under an id made from its name and content hash;
a file already imported (same bytes) is skipped, so an interrupted import resumes by
running it again. A file in another format than durable state is converted; what the
conversion could not keep is returned with the outcome, for the caller to show.  An
OTLP/JSON span export stores each conversation in it as its own session (built as the OTLP
receiver builds them), each under a hash of the file and the conversation.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentfolio.app.span_files import FORMAT_NAME as SPAN_FILE
from agentfolio.app.span_files import looks_like_span_file, read_span_file
from agentfolio.errors import AgentfolioError
from agentfolio.formats import durable_state, registry
from agentfolio.formats.convert import convert
from agentfolio.formats.errors import FormatError
from agentfolio.formats.jsonio import DEFAULT_MAX_BYTES, parse_json, read_bytes

if TYPE_CHECKING:
    from agentfolio.app import Agentfolio
    from agentfolio.formats.losses import Loss
    from agentfolio.store import Account

__all__ = ["ImportOutcome", "import_file", "import_files", "importable_files"]

# Session ids: letters, digits, '.', '_' and '-', at most 200 (the store's rule).
_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


@dataclass
class ImportOutcome:
    path: Path
    status: Literal["stored", "skipped", "failed"]
    session_id: str | None = None
    format: str | None = None
    losses: list[Loss] = field(default_factory=list)
    error: str | None = None
    #: Every session the file became (a span export holds several conversations).
    session_ids: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        value: dict[str, Any] = {"path": str(self.path), "status": self.status}
        if self.session_id is not None:
            value["id"] = self.session_id
        if len(self.session_ids) > 1:
            value["ids"] = self.session_ids
        if self.format is not None:
            value["format"] = self.format
        if self.losses:
            value["losses"] = [loss.to_json() for loss in self.losses]
        if self.error is not None:
            value["error"] = self.error
        return value


def importable_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """The files named, with folders searched for ``*.json`` and ``*.jsonl`` (sorted, so
    runs agree)."""
    for item in paths:
        path = Path(item)
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.suffix in (".json", ".jsonl") and p.is_file())
        else:
            yield path


def guess_agent(document: Any) -> str | None:
    """The first message author in a durable state, as the session's agent."""
    data = document.get("data") if isinstance(document, dict) else None
    history = data.get("conversationHistory") if isinstance(data, dict) else None
    for entry in history if isinstance(history, list) else []:
        for message in (entry.get("messages") or []) if isinstance(entry, dict) else []:
            if isinstance(message, dict) and isinstance(message.get("authorName"), str) and message["authorName"]:
                return str(message["authorName"])[:200]
    return None


def _session_id_for(path: Path, digest: str) -> str:
    stem = "".join(ch if ch in _ID_CHARS else "-" for ch in path.stem).strip(".-_")[:60]
    return f"{stem}-{digest[:12]}" if stem else digest[:32]


def import_file(folio: Agentfolio, account: Account, path: Path, *, agent: str | None = None,
                max_bytes: int = DEFAULT_MAX_BYTES) -> ImportOutcome:
    """Store one file; never raises for a file agentfolio refuses (the outcome says why)."""
    from agentfolio.store import AlreadyExists

    try:
        data = read_bytes(path, max_bytes=max_bytes)
        digest = hashlib.sha256(data).hexdigest()
        if looks_like_span_file(data):
            return _import_span_file(folio, account, path, data, digest, agent)
        existing = folio.sessions.find_imported(account, digest)
        if existing:
            return ImportOutcome(path, "skipped", existing)
        document = parse_json(data, source=str(path))
        source_format = registry.detect(document, source=str(path)).name
        losses: list[Loss] = []
        if source_format != durable_state.FORMAT.name:
            conversion = convert(document, to=durable_state.FORMAT.name, from_=source_format, strict_read=False,
                                 source=str(path))
            document, losses = conversion.result, conversion.losses
        try:
            created = folio.sessions.create(account, document, session_id=_session_id_for(path, digest),
                                            agent=agent or guess_agent(document), source_hash=digest,
                                            strict=False)
        except AlreadyExists:
            existing = folio.sessions.find_imported(account, digest)
            if existing:
                return ImportOutcome(path, "skipped", existing, source_format)
            raise
        return ImportOutcome(path, "stored", created.session.id, source_format, losses)
    except AgentfolioError as error:
        message = error.one_line() if hasattr(error, "one_line") else error.message
        pointer = getattr(error, "pointer", None)
        if pointer and pointer not in message:
            message = f"{pointer}: {message}"
        if not message.startswith(str(path)):
            message = f"{path}: {message}"
        return ImportOutcome(path, "failed", error=message)


def _import_span_file(folio: Agentfolio, account: Account, path: Path, data: bytes, digest: str,
                      agent: str | None) -> ImportOutcome:
    from agentfolio.store import AlreadyExists

    spans = read_span_file(data, source=str(path))
    if not spans.found:
        raise FormatError(f"{spans.nothing_found}: nothing to store", source=str(path))
    stored, kept = [], []
    losses: list[Loss] = []
    for conversation in spans.found:
        # One source hash per conversation: the file's hash joined with the conversation's id.
        source_hash = hashlib.sha256(f"{digest}:{conversation.session_id}".encode()).hexdigest()
        existing = folio.sessions.find_imported(account, source_hash)
        if existing:
            kept.append(existing)
            continue
        session_id = f"{_session_id_for(path, digest)}-{source_hash[:8]}"
        built = conversation.built
        try:
            created = folio.sessions.create(account, built.document, session_id=session_id,
                                            agent=agent or built.agent, source_hash=source_hash, strict=False)
        except AlreadyExists:
            kept.append(folio.sessions.find_imported(account, source_hash) or session_id)
            continue
        stored.append(created.session.id)
        losses.extend(built.losses)
    ids = stored + kept
    return ImportOutcome(path, "stored" if stored else "skipped", ids[0], SPAN_FILE, losses, session_ids=ids)


def import_files(folio: Agentfolio, account: Account, paths: Iterable[str | os.PathLike[str]], *,
                 agent: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                 on_start: Callable[[int], None] | None = None,
                 on_file: Callable[[ImportOutcome], None] | None = None) -> list[ImportOutcome]:
    """Import every file named (folders searched for ``*.json``). ``on_start`` gets the file
    count, ``on_file`` each outcome as it is committed (progress, streaming output)."""
    files = list(importable_files(paths))
    if on_start is not None:
        on_start(len(files))
    outcomes = []
    for path in files:
        outcome = import_file(folio, account, path, agent=agent, max_bytes=max_bytes)
        outcomes.append(outcome)
        if on_file is not None:
            on_file(outcome)
    return outcomes
