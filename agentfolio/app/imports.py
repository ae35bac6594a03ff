"""Import files of any readable format as stored sessions.

Each file is stored whole or not at all, under an id made from its name and content hash;
a file already imported (same bytes) is skipped, so an interrupted import resumes by
running it again.  Files go a batch at a time: what is stored of a batch is found in one
query, each new file is parsed and checked once, and the batch is written in one
transaction (a file refused is reported and the others are stored), by a thread of its
own while the next batch is read and prepared.  A file in another
format than durable state is converted; what the conversion could not keep is returned
with the outcome, for the caller to show.  An OTLP/JSON span export stores each
conversation in it as its own session (built as the OTLP receiver builds them), each
under a hash of the file and the conversation.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentfolio.app.span_files import FORMAT_NAME as SPAN_FILE
from agentfolio.app.span_files import looks_like_span_file, read_span_file
from agentfolio.errors import AgentfolioError
from agentfolio.formats import durable_state, registry
from agentfolio.formats.errors import FormatError
from agentfolio.formats.jsonio import DEFAULT_MAX_BYTES, gc_paused, parse_json, read_bytes

if TYPE_CHECKING:
    from agentfolio.app import Agentfolio
    from agentfolio.formats.losses import Loss
    from agentfolio.store import Account, NewSession

__all__ = ["ImportOutcome", "import_file", "import_files", "importable_files"]

#: Files stored per transaction: the first batch is small, so the first files are committed
#: (and shown) at once, and each next one twice as large up to the most; a commit per file
#: costs more than the file's rows, and a batch too large holds its documents in memory
#: and loses more work when an import is stopped.  A batch also ends at about this many bytes.
FIRST_BATCH_FILES = 8
BATCH_FILES = 128
BATCH_BYTES = 16 * 1024 * 1024

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
    history, _ = durable_state.history_and_data(document)
    for entry in history:
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
    return _import_batch(folio, account, [_read(path, max_bytes)], agent)[0]


@dataclass
class _Read:
    """A file's bytes and their SHA-256, or why it could not be read."""

    path: Path
    data: bytes = b""
    digest: str = ""
    error: AgentfolioError | None = None


def _read(path: Path, max_bytes: int) -> _Read:
    try:
        data = read_bytes(path, max_bytes=max_bytes)
    except AgentfolioError as error:
        return _Read(path, error=error)
    return _Read(path, data, hashlib.sha256(data).hexdigest())


def _read_batches(files: Iterable[Path], max_bytes: int) -> Iterator[list[_Read]]:
    """The files read, in batches of FIRST_BATCH_FILES files, then twice as many each time
    up to BATCH_FILES, each ending early at about BATCH_BYTES bytes."""
    batch: list[_Read] = []
    size, most = 0, FIRST_BATCH_FILES
    for path in files:
        batch.append(_read(path, max_bytes))
        size += len(batch[-1].data)
        if len(batch) >= most or size >= BATCH_BYTES:
            yield batch
            batch, size, most = [], 0, min(most * 2, BATCH_FILES)
    if batch:
        yield batch


def _failure(path: Path, error: AgentfolioError) -> ImportOutcome:
    message = error.one_line() if hasattr(error, "one_line") else error.message
    pointer = getattr(error, "pointer", None)
    if pointer and pointer not in message:
        message = f"{pointer}: {message}"
    if not message.startswith(str(path)):
        message = f"{path}: {message}"
    return ImportOutcome(path, "failed", error=message)


@dataclass
class _Batch:
    """A batch of files prepared for its transaction: every file's outcome (in the batch's
    order), the sessions to store, and the files whose bytes are those of another file
    stored with this batch or the one before (their session is that file's)."""

    outcomes: list[ImportOutcome]
    new: list[tuple[ImportOutcome, NewSession]]
    copies: list[tuple[ImportOutcome, ImportOutcome]]
    #: digest → the outcome of the batch's first file with those bytes.
    first_of: dict[str, ImportOutcome]


def _import_batch(folio: Agentfolio, account: Account, batch: list[_Read], agent: str | None) -> list[ImportOutcome]:
    """Store a batch of files read (see :func:`_prepare_batch` and :func:`_write_batch`);
    the outcomes, in the batch's order."""
    return _write_batch(folio, account, _prepare_batch(folio, account, batch, agent, {}))


def _prepare_batch(folio: Agentfolio, account: Account, batch: list[_Read], agent: str | None,
                   in_flight: dict[str, ImportOutcome]) -> _Batch:
    """What is already stored of a batch is found in one query, and each new file is
    parsed and checked once.  ``in_flight``: the files of the batch being written
    meanwhile (digest → outcome), which that query cannot see yet: a file with the same
    bytes as one of them is its copy."""
    durable = [item.digest for item in batch if item.error is None and not looks_like_span_file(item.data)]
    stored = folio.sessions.find_imported_many(account, durable) if durable else {}
    prepared = _Batch([], [], [], {})
    outcomes, first_of = prepared.outcomes, prepared.first_of
    with gc_paused():  # a batch's documents make a heap that each collection would walk again
        for item in batch:
            try:
                if item.error is not None:
                    raise item.error
                if looks_like_span_file(item.data):
                    outcomes.append(_import_span_file(folio, account, item.path, item.data, item.digest, agent))
                elif item.digest in stored:
                    outcomes.append(ImportOutcome(item.path, "skipped", stored[item.digest]))
                elif item.digest in first_of or item.digest in in_flight:
                    outcomes.append(ImportOutcome(item.path, "skipped"))
                    prepared.copies.append((outcomes[-1], first_of.get(item.digest) or in_flight[item.digest]))
                else:
                    outcome, new = _prepare(folio, account, item, agent)
                    outcomes.append(outcome)
                    first_of[item.digest] = outcome
                    prepared.new.append((outcome, new))
            except AgentfolioError as error:
                outcomes.append(_failure(item.path, error))
    return prepared


def _write_batch(folio: Agentfolio, account: Account, prepared: _Batch) -> list[ImportOutcome]:
    """Write every session of a prepared batch in one transaction (one by one when
    another import stored one of them meanwhile); the batch's outcomes."""
    from agentfolio.store import AlreadyExists

    try:
        folio.sessions.create_many(account, [new for _, new in prepared.new])
    except AlreadyExists:
        for outcome, new in prepared.new:
            _store_alone(folio, account, outcome, new)
    for copy, first in prepared.copies:
        copy.session_id = first.session_id
    return prepared.outcomes


def _prepare(folio: Agentfolio, account: Account, item: _Read, agent: str | None) -> tuple[ImportOutcome, NewSession]:
    """Parse the file once, convert it to durable state if it is in another format, and
    check and cut it into rows (FormatError or InvalidInput when it cannot be stored)."""
    source = str(item.path)
    document = parse_json(item.data, source=source)
    source_format = registry.detect(document, source=source).name
    losses: list[Loss] = []
    if source_format != durable_state.FORMAT.name:
        from agentfolio.formats.convert import convert  # the formats' models: only for files that need them

        conversion = convert(document, to=durable_state.FORMAT.name, from_=source_format, strict_read=False,
                             source=source)
        document, losses = conversion.result, conversion.losses
    prepared = folio.sessions.prepare(account, document, session_id=_session_id_for(item.path, item.digest),
                                      agent=agent or guess_agent(document), source_hash=item.digest, strict=False)
    return ImportOutcome(item.path, "stored", prepared.session_id, source_format, losses), prepared


def _store_alone(folio: Agentfolio, account: Account, outcome: ImportOutcome, prepared: NewSession) -> None:
    from agentfolio.store import AlreadyExists

    try:
        folio.sessions.create_many(account, [prepared])
    except AlreadyExists as error:
        existing = folio.sessions.find_imported(account, prepared.row["source_hash"])
        if existing:
            outcome.status, outcome.session_id, outcome.losses = "skipped", existing, []
        else:
            outcome.status, outcome.session_id, outcome.losses = "failed", None, []
            outcome.error = f"{outcome.path}: {error.message}"


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


#: Python's switch interval while an import runs (its default is 5 ms): see :func:`_quick_handoffs`.
HANDOFF_SECONDS = 0.0002


@contextmanager
def _quick_handoffs() -> Iterator[None]:
    """Python's switch interval shortened for the import's two threads.  The writer gives up
    the GIL for each call into the database and waits for it back while this thread
    prepares in Python, up to a switch interval each time: at 5 ms, those waits (a few
    per statement) left the writer behind and the import as slow as one thread doing both.
    The interval is put back after, whatever it was."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(min(before, HANDOFF_SECONDS))
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def import_files(folio: Agentfolio, account: Account, paths: Iterable[str | os.PathLike[str]], *,
                 agent: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                 on_start: Callable[[int], None] | None = None,
                 on_file: Callable[[ImportOutcome], None] | None = None) -> list[ImportOutcome]:
    """Import every file named (folders searched for ``*.json``). ``on_start`` gets the file
    count, ``on_file`` each outcome once it is committed (progress, streaming output).

    Files are stored a batch at a time, each batch in one transaction: an import stopped
    part-way keeps every batch committed before, and running it again skips those."""
    files = list(importable_files(paths))
    if on_start is not None:
        on_start(len(files))
    outcomes: list[ImportOutcome] = []

    def report(written: list[ImportOutcome]) -> None:
        for outcome in written:
            outcomes.append(outcome)
            if on_file is not None:
                on_file(outcome)

    # One thread writes a batch while this one reads and prepares the next, so the
    # database's own work (SQLite's, which runs without the GIL, or PostgreSQL's, in its
    # server) goes on beside the parsing and counting instead of after it.  Each batch
    # is still one transaction, written in order, and reported once it is committed; a
    # batch prepared but not yet given to the writer when the import stops is not stored.
    with _quick_handoffs(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentfolio-import") as writer:
        writing: Future[list[ImportOutcome]] | None = None
        in_flight: dict[str, ImportOutcome] = {}
        for batch in _read_batches(files, max_bytes):
            prepared = _prepare_batch(folio, account, batch, agent, in_flight)
            if writing is not None:
                report(writing.result())
            in_flight = prepared.first_of
            writing = writer.submit(_write_batch, folio, account, prepared)
        if writing is not None:
            report(writing.result())
    return outcomes
