"""Sessions: durable agent state stored so that appending a turn costs the same at any length.

Every write names the version it was based on; a stale one is refused with
:class:`VersionConflict`, never merged.  Idle sessions (not written for the configured
time-to-live) are invisible at once and removed by :meth:`Sessions.expire`.
"""

from __future__ import annotations

import math
import re
import secrets
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement

from agentfolio import _json
from agentfolio.formats import durable_state
from agentfolio.formats.errors import FormatError, Problem
from agentfolio.formats.jsonio import parse_json
from agentfolio.present.activity import (
    ActivityPoint,
    EntryFacts,
    SessionFacts,
    entry_facts,
    history_facts,
    response_latencies,
)
from agentfolio.present.search import entry_text, search_text
from agentfolio.settings import Settings
from agentfolio.store.accounts import Account
from agentfolio.store.blob_refs import keep_blobs, point_at_blobs
from agentfolio.store.blobs import BlobMissing, BlobStore, content_key, legacy_key
from agentfolio.store.documents import (
    PackedEntry,
    assemble,
    column_text,
    head_with_history,
    pack_entry,
    split_document,
    unpack_body,
)
from agentfolio.store.engine import read_transaction, write_transaction
from agentfolio.store.errors import AlreadyExists, InvalidInput, NotFound, VersionConflict
from agentfolio.store.multirow import insert_rows
from agentfolio.store.scope import AccountScope
from agentfolio.store.search import (
    FALLBACK_SESSIONS,
    WALK_SESSIONS,
    SessionSearch,
    entry_words,
    index_entries,
    lexemes_binary,
    unindex_sessions,
)
from agentfolio.store.tables import entries, sessions

if TYPE_CHECKING:
    from agentfolio.formats.base import ReadResult
    from agentfolio.model import Entry, Session

SESSION_ID = re.compile(r"[A-Za-z0-9@][A-Za-z0-9._:@-]{0,199}")
SESSION_ID_RULE = "1-200 letters, digits, '.', '_', ':', '@' or '-', starting with a letter, digit or '@'"
_INSERT_BATCH = 1000
#: From this many entry rows on, PostgreSQL gets them by COPY.
_COPY_FROM = 64
#: How the facts a session row carries were counted (present.activity); a row counted
#: otherwise, or not at all (written before they were kept), is counted again when listed.
FACTS_VERSION = 1


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    agent: str | None
    schema_version: str | None
    version: int
    entry_count: int
    created_at: float
    updated_at: float
    first_activity_at: float | None
    last_activity_at: float | None
    expires_at: float | None
    #: What the sessions list shows of it (first user message, tokens, failures), counted
    #: when it was written; None when read without them.
    facts: SessionFacts | None = None

    @property
    def duration(self) -> float | None:
        """Seconds from the history's first time to its last, when it has two."""
        if self.first_activity_at is None or self.last_activity_at is None:
            return None
        return self.last_activity_at - self.first_activity_at

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "agent": self.agent, "schemaVersion": self.schema_version,
                "version": self.version, "entryCount": self.entry_count,
                "createdAt": iso(self.created_at), "updatedAt": iso(self.updated_at),
                "firstActivityAt": iso(self.first_activity_at), "lastActivityAt": iso(self.last_activity_at),
                "expiresAt": iso(self.expires_at)}


@dataclass(frozen=True, slots=True)
class SessionCursor:
    """Where a page of the sessions list ended: the last session's write time and id,
    written as the opaque token ``<updated_at>~<id>`` (the float's ``repr``: exact)."""

    updated_at: float
    id: str

    @classmethod
    def after(cls, info: SessionInfo) -> SessionCursor:
        return cls(info.updated_at, info.id)

    def token(self) -> str:
        return f"{self.updated_at!r}~{self.id}"

    @classmethod
    def parse(cls, token: str) -> SessionCursor:
        moment, _, session_id = token.partition("~")
        try:
            updated_at = float(moment) if len(moment) <= 40 else math.nan
        except ValueError:
            updated_at = math.nan
        if not math.isfinite(updated_at) or not SESSION_ID.fullmatch(session_id):
            raise InvalidInput("the cursor is not one a sessions list gave", pointer="")
        return cls(updated_at, session_id)


@dataclass(frozen=True, slots=True)
class Created:
    session: SessionInfo
    problems: list[Problem]


@dataclass(frozen=True, slots=True)
class WrittenSession:
    """A durable state written by agentfolio's own writer from ``session`` (the canonical
    session the document was written from, entry for entry): stored without being read
    again, and counted from the document (which counts as ``session`` does)."""

    session_id: str
    document: dict[str, Any]
    session: Session
    agent: str | None = None


@dataclass(frozen=True, slots=True)
class NewSession:
    """A checked durable state cut into the rows it is stored as, not yet written
    (:meth:`Sessions.prepare`)."""

    row: dict[str, Any]
    packed: list[PackedEntry]
    #: Each entry row's values after its key (see :func:`_entry_values`).
    values: list[tuple[Any, ...]]
    problems: list[Problem]

    @property
    def session_id(self) -> str:
        return str(self.row["id"])


@dataclass(frozen=True, slots=True)
class Appended:
    session: SessionInfo
    position: int
    problems: list[Problem]


def iso(moment: float | None) -> str | None:
    if moment is None:
        return None
    from datetime import datetime

    return datetime.fromtimestamp(moment, tz=UTC).isoformat().replace("+00:00", "Z")


_INFO_COLUMNS = (sessions.c.pk, sessions.c.id, sessions.c.agent, sessions.c.schema_version, sessions.c.version,
                 sessions.c.entry_count, sessions.c.created_at, sessions.c.updated_at,
                 sessions.c.first_activity_at, sessions.c.last_activity_at)
_COUNTS = ("input_tokens", "output_tokens", "total_tokens", "usage_responses", "tool_calls", "failed_tools", "errors")
_FACT_COLUMNS = (sessions.c.first_user_text, *(sessions.c[name] for name in _COUNTS), sessions.c.facts_version)
#: How the sessions list may be ordered: a name for each column people sort by.
SORTS: dict[str, Any] = {
    "updated": sessions.c.updated_at,
    "created": sessions.c.created_at,
    "first_activity": sa.func.coalesce(sessions.c.first_activity_at, sessions.c.created_at),
    "last_activity": sa.func.coalesce(sessions.c.last_activity_at, sessions.c.updated_at),
    "duration": sessions.c.last_activity_at - sessions.c.first_activity_at,
    "entries": sessions.c.entry_count,
    "tokens": sessions.c.total_tokens,
    "errors": sessions.c.errors,
    "failed_tools": sessions.c.failed_tools,
    "agent": sessions.c.agent,
    "id": sessions.c.id,
}
#: The sorts whose value may be NULL, placed last either way.  The others are ordered
#: plainly: PostgreSQL reads an ascending index backwards as ``DESC NULLS FIRST``, so
#: asking ``NULLS LAST`` of a column that is never NULL made it sort every session of the
#: account for each page instead of reading the write-time index.
NULLABLE_SORTS = frozenset({"duration", "agent"})


#: Most tokens one entry counts for in the stored sums: any record's usage sums without
#: overflowing a 64-bit column (2**31 entries of this many), however large it claims to be.
TOKEN_CAP = 2**32


def _capped(count: int | None) -> int | None:
    return None if count is None else max(0, min(count, TOKEN_CAP))


#: An entry row's counted columns, in the order :func:`_counted_values` gives them.
_COUNTED_COLUMNS = ("latency", "input_tokens", "output_tokens", "total_tokens", "tool_calls", "failed_tools",
                    "errors", "roles")
#: Every column of an entry row, in the order its values are built and inserted.
_ENTRY_COLUMNS = ("session_pk", "position", "kind", "created_at", "body", "blobs", "text", *_COUNTED_COLUMNS)
#: PostgreSQL's entry rows also carry the text's words (store.search.entry_words), cut
#: as they are written (SQLite's full-text index cuts them itself).
_PG_ENTRY_COLUMNS = (*_ENTRY_COLUMNS, "words")
assert set(_PG_ENTRY_COLUMNS) == set(entries.c.keys()), "an entry column is not written"
_TEXT = _ENTRY_COLUMNS.index("text")
#: Each column's type as a binary COPY sends it; the words go as a ``tsvector`` encoded
#: here (store.search.lexemes_binary), which the server takes as bytes are taken.
_COPY_TYPES = {"session_pk": "int8", "position": "int4", "kind": "text", "created_at": "float8", "body": "bytea",
               "blobs": "text", "text": "text", "latency": "float8", "roles": "text", "words": "bytea",
               **dict.fromkeys(("input_tokens", "output_tokens", "total_tokens", "tool_calls", "failed_tools",
                                "errors"), "int8")}
assert set(_COPY_TYPES) == set(_PG_ENTRY_COLUMNS), "an entry column has no COPY type"


def _counted_values(facts: EntryFacts, latency: float | None) -> tuple[Any, ...]:
    """An entry row's counted columns (NULL rather than 0, so rows stay small)."""
    return (latency, _capped(facts.input_tokens), _capped(facts.output_tokens), _capped(facts.total_tokens),
            facts.tool_calls or None, facts.failed_tools or None, facts.errors or None,
            column_text(facts.roles_text) or None)


def _entry_values(entry: PackedEntry, facts: EntryFacts, latency: float | None) -> tuple[Any, ...]:
    """An entry row's values after its key (``session_pk``, ``position``), in
    :data:`_ENTRY_COLUMNS` order: built once per entry as a tuple, which the driver takes
    as it is (a dict per row, and SQLAlchemy's handling of each value, cost more than the
    insert)."""
    return (entry.kind, entry.created_at, entry.body, entry.blob_refs, entry.text, *_counted_values(facts, latency))


def _session_counts(total: SessionFacts) -> dict[str, Any]:
    # Sums capped well inside 64 bits, so appends (each entry capped at TOKEN_CAP) never overflow.
    return {"first_user_text": total.first_user_text,
            **{name: max(0, min(getattr(total, name), 2**62)) for name in _COUNTS}, "facts_version": FACTS_VERSION}


def _latest_request(facts: Sequence[EntryFacts]) -> float | None:
    return next((item.at for item in reversed(facts) if item.kind == "request" and item.at is not None), None)


def _appended_values(packed: Sequence[PackedEntry]) -> dict[str, Any]:
    """The guarded UPDATE's values for appending these entries: version, count, times."""
    times = [entry.created_at for entry in packed if entry.created_at is not None]
    values: dict[str, Any] = {"version": sessions.c.version + 1, "entry_count": sessions.c.entry_count + len(packed),
                              "updated_at": time.time()}
    if times:
        earliest, latest = min(times), max(times)
        # The history's earliest and latest times, as a whole history's row has them
        # (entries need not come in time order).
        values["first_activity_at"] = sa.case(
            (sessions.c.first_activity_at.is_(None), earliest),
            (sessions.c.first_activity_at > earliest, earliest),
            else_=sessions.c.first_activity_at)
        values["last_activity_at"] = sa.case(
            (sessions.c.last_activity_at.is_(None), latest),
            (sessions.c.last_activity_at < latest, latest),
            else_=sessions.c.last_activity_at)
    return values


def _session_row(session_id: str, agent: str | None, document: dict[str, Any], head: bytes,
                 history_at: int | None, packed: Sequence[PackedEntry], total: SessionFacts,
                 per_entry: Sequence[EntryFacts], *, source_hash: str | None = None) -> dict[str, Any]:
    """The values of a new session's row at version 1 (without its account)."""
    times = [entry.created_at for entry in packed if entry.created_at is not None]
    schema_version = document.get("schemaVersion")
    now = time.time()
    return {"id": session_id, "agent": agent,
            "schema_version": schema_version if isinstance(schema_version, str) else None,
            "head": head, "history_at": history_at, "version": 1, "entry_count": len(packed), "created_at": now,
            "updated_at": now, "first_activity_at": min(times, default=None),
            "last_activity_at": max(times, default=None), "source_hash": source_hash,
            "last_request_at": _latest_request(per_entry), **_session_counts(total)}


def _entry_rows(session_pk: int, first: int, values: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Entry rows (:data:`_ENTRY_COLUMNS`) of a session from ``first`` on."""
    return [(session_pk, position, *rest) for position, rest in enumerate(values, first)]


def _insert_entry_rows(connection: Connection, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert entry rows (:data:`_ENTRY_COLUMNS`) through the driver, many a statement
    (:func:`~agentfolio.store.multirow.insert_rows`): SQLAlchemy's handling of each row's
    parameters cost more than the insert itself for the many small entries of an import.
    (Every value is one the driver takes as it is: int, float, str, bytes.)  PostgreSQL's
    rows get their words here, in the thread writing them (:data:`_PG_ENTRY_COLUMNS`)."""
    if connection.dialect.name != "postgresql":
        insert_rows(connection, entries.name, _ENTRY_COLUMNS, rows)
        return
    if connection.dialect.driver != "psycopg" or len(rows) < _COPY_FROM:
        # An append's few rows: COPY's set-up would cost more than it saves.
        insert_rows(connection, entries.name, _PG_ENTRY_COLUMNS, [(*row, entry_words(row[_TEXT])) for row in rows])
        return
    # COPY: the rows stream to the server in one command, neither a statement per row nor
    # a statement of thousands of parameters for the driver to parse.  Binary: as text,
    # each body went out as hexadecimal with its escapes, which cost the driver (holding
    # the GIL) and the server parsing it back more than the rest of the rows.
    quote = connection.dialect.identifier_preparer.quote
    raw = connection.connection.driver_connection
    assert raw is not None
    with raw.cursor() as cursor, cursor.copy(f"COPY {quote(entries.name)} "
                                             f"({', '.join(quote(name) for name in _PG_ENTRY_COLUMNS)}) "
                                             "FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types([_COPY_TYPES[name] for name in _PG_ENTRY_COLUMNS])
        for row in rows:
            copy.write_row((*row, lexemes_binary(entry_words(row[_TEXT]))))


class SessionStore:
    """Every account's sessions: :meth:`of` opens one account's repository; :meth:`expire`
    removes idle sessions of every account (by time alone, it names no account's rows)."""

    def __init__(self, engine: Engine, blobs: BlobStore, settings: Settings) -> None:
        self.engine = engine
        self.blobs = blobs
        self.settings = settings

    def of(self, account: Account) -> Sessions:
        """The sessions of ``account``, and only those."""
        return Sessions(self, account)

    def expire(self, now: float | None = None) -> int:
        """Remove every session idle past the time-to-live; how many were removed."""
        cutoff = _cutoff(self.settings, now)
        if cutoff is None:
            return 0
        return _delete_sessions(self.engine, sa.select(sessions.c.pk).where(sessions.c.updated_at < cutoff))


def _cutoff(settings: Settings, now: float | None = None) -> float | None:
    """Sessions last written before this moment have expired (None: they never do)."""
    ttl = settings.session_ttl
    return None if ttl <= 0 else (now if now is not None else time.time()) - ttl


def _delete_sessions(engine: Engine, chosen: sa.Select[Any]) -> int:
    """Delete the sessions whose pks ``chosen`` selects, a hundred per transaction."""
    removed = 0
    while True:
        with write_transaction(engine) as connection:
            pks = list(connection.execute(chosen.limit(100)).scalars())
            if not pks:
                return removed
            unindex_sessions(connection, pks)
            connection.execute(sa.delete(entries).where(entries.c.session_pk.in_(pks)))
            connection.execute(sa.delete(sessions).where(sessions.c.pk.in_(pks)))
        removed += len(pks)


class Sessions:
    """One account's sessions.  Opened by :meth:`SessionStore.of`; every statement on
    ``sessions`` is built by the account's :class:`AccountScope`, and entries are reached
    only through a session row found that way."""

    def __init__(self, shared: SessionStore, account: Account) -> None:
        self.engine = shared.engine
        self.blobs = shared.blobs
        self.settings = shared.settings
        self.account = account
        self.scope = AccountScope(account.pk)

    # -- helpers --------------------------------------------------------------------------

    def _visible(self, session_id: str) -> ColumnElement[bool]:
        """This account's session ``session_id``, unless it has expired."""
        condition = sa.and_(self.scope.owns(sessions), sessions.c.id == session_id)
        cutoff = _cutoff(self.settings)
        return condition if cutoff is None else sa.and_(condition, sessions.c.updated_at >= cutoff)

    def _info(self, row: Any) -> SessionInfo:
        ttl = self.settings.session_ttl
        mapping = row._mapping
        facts = None
        if mapping.get("facts_version") == FACTS_VERSION:
            facts = SessionFacts(first_user_text=row.first_user_text, **{name: mapping[name] for name in _COUNTS})
        return SessionInfo(id=row.id, agent=row.agent, schema_version=row.schema_version, version=row.version,
                           entry_count=row.entry_count, created_at=row.created_at, updated_at=row.updated_at,
                           first_activity_at=row.first_activity_at, last_activity_at=row.last_activity_at,
                           expires_at=row.updated_at + ttl if ttl > 0 else None, facts=facts)

    def _insert_entries(self, connection: Connection, session_pk: int, first: int, packed: list[PackedEntry],
                        values: Sequence[tuple[Any, ...]]) -> None:
        """The entries and the blobs they point at: the blobs' bytes are stored first."""
        references = keep_blobs(connection, self.blobs, session_pk, first, packed)
        self._write_entry_rows(connection, _entry_rows(session_pk, first, values), references)

    @staticmethod
    def _write_entry_rows(connection: Connection, rows: list[tuple[Any, ...]],
                          references: list[dict[str, Any]]) -> None:
        _insert_entry_rows(connection, rows)
        index_entries(connection, [(row[0], row[1], row[_TEXT]) for row in rows])
        point_at_blobs(connection, references)

    def _pack(self, entry: Any, facts: EntryFacts) -> PackedEntry:
        return pack_entry(entry, blob_threshold=self.settings.blob_threshold,
                          text_limit=self.settings.search_text_limit, created_at=facts.at)

    # -- reading --------------------------------------------------------------------------

    def info(self, session_id: str) -> SessionInfo:
        with read_transaction(self.engine) as connection:
            row = connection.execute(sa.select(*_INFO_COLUMNS, *_FACT_COLUMNS)
                                     .where(self._visible(session_id))).first()
        if row is None:
            raise NotFound(f"no session {session_id!r}")
        return self._info(row)

    def get_bytes(self, session_id: str) -> tuple[SessionInfo, bytes]:
        """The session's durable state as JSON bytes, exactly as written, and its info."""
        return self._read(session_id, None)

    def get_window(self, session_id: str, start: int, stop: int) -> tuple[SessionInfo, bytes]:
        """The durable state with only the entries at positions ``start`` to ``stop`` in its
        history, and its info: one screen of a session, read through the entries' primary
        key, so it costs the same at any length."""
        return self._read(session_id, (max(0, start), max(0, stop)))

    def _read(self, session_id: str, window: tuple[int, int] | None) -> tuple[SessionInfo, bytes]:
        for _ in range(2):
            try:
                return self._get_bytes(session_id, window)
            except BlobMissing:
                # A reset or delete committed after our snapshot and the sweep took the
                # blobs it no longer needed: read the session as it is now.
                continue
        return self._get_bytes(session_id, window)

    def _get_bytes(self, session_id: str, window: tuple[int, int] | None = None) -> tuple[SessionInfo, bytes]:
        with self.engine.connect() as connection:
            if connection.dialect.name == "postgresql":
                # The session row and its entries from one snapshot.
                connection.execution_options(isolation_level="REPEATABLE READ")
            with connection.begin():
                row = connection.execute(sa.select(*_INFO_COLUMNS, sessions.c.head, sessions.c.history_at)
                                         .where(self._visible(session_id))).first()
                if row is None:
                    raise NotFound(f"no session {session_id!r}")
                chosen = sa.select(entries.c.body, entries.c.blobs).where(entries.c.session_pk == row.pk)
                if window is not None:
                    chosen = chosen.where(entries.c.position >= window[0], entries.c.position < window[1])
                bodies = connection.execute(chosen.order_by(entries.c.position)).all()
        account_pk = self.account.pk

        def fetch(digest: str) -> bytes:
            try:
                return self.blobs.get(content_key(digest))
            except BlobMissing:
                pass
            try:  # stored before blobs were content-addressed, and not moved yet by the sweep
                return self.blobs.get(legacy_key(account_pk, row.pk, digest))
            except BlobMissing:
                return self.blobs.get(content_key(digest))  # moved meanwhile

        parts = (body if refs is None else unpack_body(body, refs, fetch) for body, refs in bodies)
        return self._info(row), assemble(row.head, row.history_at, parts)

    def get_document(self, session_id: str) -> tuple[SessionInfo, dict[str, Any]]:
        info, data = self.get_bytes(session_id)
        return info, _json.loads(data)

    def exists_source(self, source_hash: str) -> str | None:
        """The id of the session imported from a file with this SHA-256, if any."""
        with read_transaction(self.engine) as connection:
            return connection.execute(self.scope.select(sessions, sessions.c.id)
                                      .where(sessions.c.source_hash == source_hash)).scalar_one_or_none()

    def list(self, *, agent: str | None = None, since: float | None = None, until: float | None = None,
             text: str | None = None, agent_contains: str | None = None, sort: str = "updated",
             descending: bool = True, limit: int = 50, offset: int = 0,
             after: SessionCursor | None = None) -> list[SessionInfo]:
        """Sessions newest-written first (or by ``sort``, one of :data:`SORTS`), each with
        its counted facts; ``since``/``until`` match the history's own times, ``text`` the
        words of any one entry (see ``store.search``) and ``agent_contains`` part of the
        agent's name (case-insensitive).

        ``after`` (sorted by ``updated`` only) continues after the last session of the
        previous page: keyset paging, each page costing the same however far in.
        """
        sort = sort if sort in SORTS else "updated"
        column = SORTS[sort]
        order = column.desc() if descending else column.asc()
        if sort in NULLABLE_SORTS:
            order = order.nulls_last()
        with read_transaction(self.engine) as connection:
            query = (self.scope.select(sessions, *_INFO_COLUMNS, *_FACT_COLUMNS)
                     .where(*self._filters(connection, agent=agent, since=since, until=until, text=text,
                                           agent_contains=agent_contains))
                     .order_by(order, sessions.c.id).limit(limit).offset(offset))
            if after is not None:
                if column is not SORTS["updated"]:
                    raise InvalidInput("a cursor continues a list sorted by 'updated' only", pointer="")
                moment = sessions.c.updated_at
                beyond, reach = (moment < after.updated_at, moment <= after.updated_at) if descending else \
                    (moment > after.updated_at, moment >= after.updated_at)
                # ``reach`` repeats what the OR implies, as a range the write-time index can seek to.
                query = query.where(reach, sa.or_(beyond, sa.and_(moment == after.updated_at,
                                                                  sessions.c.id > after.id)))
            rows = connection.execute(query).all()
        if any(row.facts_version != FACTS_VERSION for row in rows):
            for row in rows:
                if row.facts_version != FACTS_VERSION:
                    self._count_facts(row.pk, row.id)
            with read_transaction(self.engine) as connection:
                rows = connection.execute(query).all()
        return [self._info(row) for row in rows]

    def _count_facts(self, session_pk: int, session_id: str) -> None:
        """Count a session written before its facts were kept (or counted by older rules):
        read it whole once, then write its entries' facts and its own."""
        try:
            info, data = self._read(session_id, None)
            document = parse_json(data, source=session_id)
            durable_state.read(document, strict=False, source=session_id)
        except (NotFound, FormatError):
            return
        total, per_entry, latencies = history_facts(*durable_state.history_and_data(document))
        if len(per_entry) != info.entry_count:
            return
        with write_transaction(self.engine) as connection:
            counted = connection.execute(sa.update(sessions).where(sessions.c.pk == session_pk,
                                                                   sessions.c.version == info.version)
                                         .values(last_request_at=_latest_request(per_entry), **_session_counts(total)))
            if counted.rowcount != 1:
                return  # written meanwhile: the next list counts it again
            # Bound names other than the columns' own (SQLAlchemy keeps those for itself).
            rows = [{"at": position, **{"new_" + name: value for name, value in
                                        zip(_COUNTED_COLUMNS, _counted_values(facts, latency), strict=True)}}
                    for position, (facts, latency) in enumerate(zip(per_entry, latencies, strict=True))]
            statement = (sa.update(entries).where(entries.c.session_pk == session_pk,
                                                  entries.c.position == sa.bindparam("at"))
                         .values({name: sa.bindparam("new_" + name) for name in _COUNTED_COLUMNS}))
            for start in range(0, len(rows), _INSERT_BATCH):
                connection.execute(statement, rows[start:start + _INSERT_BATCH])

    def count(self, *, agent: str | None = None, since: float | None = None, until: float | None = None,
              text: str | None = None, agent_contains: str | None = None) -> int:
        """How many sessions :meth:`list` would page through with the same filters."""
        with read_transaction(self.engine) as connection:
            query = self.scope.count(sessions).where(*self._filters(
                connection, agent=agent, since=since, until=until, text=text, agent_contains=agent_contains))
            return int(connection.execute(query).scalar_one())

    def _filters(self, connection: Connection | None = None, *, agent: str | None, since: float | None,
                 until: float | None, text: str | None, agent_contains: str | None) -> tuple[Any, ...]:
        """Conditions on this account's sessions (the caller's statement is scoped)."""
        conditions = []
        cutoff = _cutoff(self.settings)
        if cutoff is not None:
            conditions.append(sessions.c.updated_at >= cutoff)
        if agent is not None:
            # No stored agent holds a NUL (create refuses it; PostgreSQL could not store it).
            conditions.append(sa.false() if "\x00" in agent else sessions.c.agent == agent)
        if agent_contains:
            conditions.append(sa.false() if "\x00" in agent_contains else
                              sa.func.lower(sessions.c.agent).like(_contains(agent_contains.lower()), escape="\\"))
        activity_end = sa.func.coalesce(sessions.c.last_activity_at, sessions.c.updated_at)
        activity_start = sa.func.coalesce(sessions.c.first_activity_at, sessions.c.created_at)
        if since is not None:
            conditions.append(activity_end >= since)
        if until is not None:
            conditions.append(activity_start <= until)
        if text:
            assert connection is not None, "a text search reads its index: give the connection"
            conditions.extend(self._matching(connection, text))
        return tuple(conditions)

    def _matching(self, connection: Connection, text: str) -> tuple[Any, ...]:
        """Conditions keeping the sessions with an entry holding the words of ``text``,
        bounded as ``store.search`` says."""
        search = SessionSearch(connection, text)
        if not search.words:
            return (sa.false(),)
        if not search.indexed:  # SQLite without FTS5: a substring, over the newest sessions only
            return (self._newest(connection, FALLBACK_SESSIONS), sa.exists().where(
                entries.c.session_pk == sessions.c.pk,
                entries.c.text.like(_contains(search_text(text)), escape="\\")))
        candidates = search.candidates()
        if candidates is not None:
            return (search.among(sessions.c.pk, candidates),)
        return (self._newest(connection, WALK_SESSIONS), search.per_session(sessions.c.pk))

    def _newest(self, connection: Connection, count: int) -> ColumnElement[bool]:
        """Keeps the ``count`` sessions this account wrote last."""
        bound = connection.execute(self.scope.select(sessions, sessions.c.updated_at)
                                   .order_by(sessions.c.updated_at.desc()).offset(count - 1).limit(1)).scalar()
        return sa.true() if bound is None else sessions.c.updated_at >= bound

    def find_positions(self, session_id: str, *, text: str | None = None, show: str | None = None,
                       start: int = 0, limit: int = 10_000) -> Sequence[int]:
        """Positions of the entries from ``start`` on whose text holds ``text``
        (case-insensitive) and that have something to show when the page shows only
        ``show`` (``present.activity.entry_shows``), at most ``limit`` of them: found in the
        stored search text and counts, whatever the history's length."""
        with read_transaction(self.engine) as connection:
            row = connection.execute(sa.select(sessions.c.pk, sessions.c.facts_version)
                                     .where(self._visible(session_id))).first()
        if row is None:
            raise NotFound(f"no session {session_id!r}")
        if show and row.facts_version != FACTS_VERSION:
            self._count_facts(row.pk, session_id)
        query = sa.select(entries.c.position).where(entries.c.session_pk == row.pk, entries.c.position >= start)
        if text:
            query = query.where(entries.c.text.like(_contains(search_text(text)), escape="\\"))
        if show:
            query = query.where(_shows(show))
        with read_transaction(self.engine) as connection:
            return list(connection.execute(query.order_by(entries.c.position).limit(limit)).scalars())

    def agents(self, limit: int = 200) -> Sequence[tuple[str | None, int]]:
        """The account's agents (None: sessions with none), each with its number of sessions,
        most sessions first."""
        query = (self.scope.select(sessions, sessions.c.agent, sa.func.count().label("count"))
                 .where(*self._filters(agent=None, since=None, until=None, text=None, agent_contains=None))
                 .group_by(sessions.c.agent).order_by(sa.desc("count"), sessions.c.agent).limit(limit))
        with read_transaction(self.engine) as connection:
            return [(row.agent, int(row[1])) for row in connection.execute(query)]

    def activity(self, *, agent: str | None = None, since: float | None = None, until: float | None = None,
                 limit: int = 200_000) -> Sequence[ActivityPoint]:
        """What each timed entry of an agent's sessions (every agent's, for None) counted:
        its time, latency, tokens, tool calls and failures, oldest first, at most ``limit``
        of the newest.  Read from the counts kept beside the entries, never the histories."""
        scope = self._filters(agent=agent, since=None, until=None, text=None, agent_contains=None)
        with read_transaction(self.engine) as connection:
            stale = connection.execute(self.scope.select(sessions, sessions.c.pk, sessions.c.id).where(
                *scope, sa.or_(sessions.c.facts_version.is_(None), sessions.c.facts_version != FACTS_VERSION))
                .limit(50)).all()
        for row in stale:  # written before the counts were kept: counted once, now
            self._count_facts(row.pk, row.id)
        counted = sa.or_(*(entries.c[name].is_not(None) for name in (
            "latency", "total_tokens", "tool_calls", "failed_tools", "errors")))
        query = (self.scope.select(sessions, entries.c.created_at, entries.c.kind, entries.c.latency,
                                   entries.c.input_tokens, entries.c.output_tokens, entries.c.total_tokens,
                                   entries.c.tool_calls, entries.c.failed_tools, entries.c.errors)
                 .join(entries, sessions.c.pk == entries.c.session_pk)
                 .where(*scope, counted, entries.c.created_at.is_not(None)))
        if since is not None:
            query = query.where(entries.c.created_at >= since)
        if until is not None:
            query = query.where(entries.c.created_at <= until)
        with read_transaction(self.engine) as connection:
            rows = connection.execute(query.order_by(entries.c.created_at.desc()).limit(limit)).all()
        return [ActivityPoint(at=row.created_at, kind=row.kind or "?", latency=row.latency,
                              input_tokens=row.input_tokens or 0, output_tokens=row.output_tokens or 0,
                              total_tokens=row.total_tokens or 0, tool_calls=row.tool_calls or 0,
                              failed_tools=row.failed_tools or 0, errors=row.errors or 0)
                for row in reversed(rows)]

    def match_snippets(self, session_ids: Sequence[str], text: str,
                       width: int = 160) -> dict[str, str]:
        """For each session, the text around the first place ``text`` occurs in its messages."""
        needle = search_text(text)
        if not needle or not session_ids:
            return {}
        found: dict[str, str] = {}
        with read_transaction(self.engine) as connection:
            chosen = self.scope.select(sessions, sessions.c.id, sessions.c.pk).where(
                sessions.c.id.in_(list(session_ids)))
            keys: dict[str, int] = {row.id: row.pk for row in connection.execute(chosen)}
            for session_id, session_pk in keys.items():
                row = connection.execute(
                    sa.select(entries.c.body, entries.c.blobs, entries.c.text)
                    .where(entries.c.session_pk == session_pk, entries.c.text.like(_contains(needle), escape="\\"))
                    .order_by(entries.c.position).limit(1)).first()
                if row is not None:
                    found[session_id] = _snippet(row, needle, width, self.settings.search_text_limit)
        return found

    def iter_all(self) -> Iterator[SessionInfo]:
        offset = 0
        while True:
            page = self.list(limit=500, offset=offset)
            yield from page
            if len(page) < 500:
                return
            offset += len(page)

    # -- writing --------------------------------------------------------------------------

    def create(self, document: Any, *, session_id: str | None = None, agent: str | None = None,
               source_hash: str | None = None, strict: bool = True) -> Created:
        """Store a durable state as a new session at version 1."""
        new = self.prepare(document, session_id=session_id, agent=agent, source_hash=source_hash, strict=strict)
        self.create_prepared([new])
        return Created(self.info(new.session_id), new.problems)

    def prepare(self, document: Any, *, session_id: str | None = None, agent: str | None = None,
                source_hash: str | None = None, strict: bool = True) -> NewSession:
        """Check a durable state and cut it into the rows a new session is stored as
        (nothing is written: :meth:`create_prepared` stores it); InvalidInput when it
        cannot be stored."""
        if session_id is not None and not SESSION_ID.fullmatch(session_id):
            raise InvalidInput(f"session id {session_id!r} must be {SESSION_ID_RULE}")
        if agent is not None and not (0 < len(agent) <= 200):
            raise InvalidInput("agent must be 1-200 characters")
        if agent is not None and "\x00" in agent:
            raise InvalidInput("agent must not contain NUL characters")
        # Checked, but its records are not built (the read builds them only for a document
        # that breaks its schema, and refuses what they cannot hold): the facts are
        # counted from the JSON, as every write counts them.
        read = check_document(document, strict=strict)
        return self._cut(document, session_id or secrets.token_hex(16), agent, source_hash, read.problems)

    def _cut(self, document: dict[str, Any], session_id: str, agent: str | None, source_hash: str | None,
             problems: Sequence[Problem]) -> NewSession:
        """A checked durable state cut into its rows, counted."""
        head, history_at, history = split_document(document)
        total, per_entry, latencies = history_facts(*durable_state.history_and_data(document))
        packed = [self._pack(entry, facts) for entry, facts in zip(history, per_entry, strict=True)]
        row = _session_row(session_id, agent, document, head, history_at, packed, total, per_entry,
                           source_hash=source_hash)
        return NewSession(row, packed, [_entry_values(*counted) for counted in zip(packed, per_entry, latencies,
                                                                                    strict=True)], [*problems])

    def create_prepared(self, new: Sequence[NewSession]) -> None:
        """Store prepared sessions at version 1, all in one transaction (a few statements
        whatever their number), or none: AlreadyExists when an id, or a source hash, is
        taken (by one of them alone, with the message a single create gives)."""
        if not new:
            return
        try:
            with write_transaction(self.engine) as connection:
                self._insert_new(connection, new)
        except IntegrityError:
            if len(new) > 1:
                raise AlreadyExists("a session of this batch already exists") from None
            session_id, source_hash = new[0].session_id, new[0].row["source_hash"]
            self._purge_expired_id(session_id)
            if source_hash is not None and self.exists_source(source_hash):
                raise AlreadyExists("this document was already imported") from None
            raise AlreadyExists(f"a session {session_id!r} already exists") from None

    def _insert_new(self, connection: Connection, new: Sequence[NewSession]) -> None:
        """Every session row, then every entry, in as few statements as the parameter limit
        allows (store.multirow): many small sessions cost a few statements, not a few per session."""
        # Every row in a few statements (SQLAlchemy's insert of many rows with their pks in
        # order ran one statement per row on SQLite); the pks are matched by id.
        scoped = self.scope.rows(item.row for item in new)
        columns = list(scoped[0])
        values = [[row[name] for name in columns] for row in scoped]
        pk_of = dict(insert_rows(connection, sessions.name, columns, values, returning=("id", "pk")))
        created = [pk_of[item.session_id] for item in new]
        rows: list[tuple[Any, ...]] = []
        references: list[dict[str, Any]] = []
        for item, session_pk in zip(new, created, strict=True):
            references += keep_blobs(connection, self.blobs, session_pk, 0, item.packed)
            rows += _entry_rows(session_pk, 0, item.values)
        self._write_entry_rows(connection, rows, references)

    def sources_stored(self, source_hashes: Sequence[str]) -> dict[str, str]:
        """Of these SHA-256s, those a session was imported from: hash → session id."""
        found: dict[str, str] = {}
        with read_transaction(self.engine) as connection:
            for start in range(0, len(source_hashes), _INSERT_BATCH):
                chosen = list(source_hashes[start:start + _INSERT_BATCH])
                found.update(connection.execute(self.scope.select(sessions, sessions.c.source_hash, sessions.c.id)
                                                .where(sessions.c.source_hash.in_(chosen))).all())
        return found

    # -- writing in the caller's transaction: documents from agentfolio's own writer -----

    def versions(self, connection: Connection, session_ids: Sequence[str]) -> dict[str, int]:
        """The current version of each of these sessions that exists (expired ones included:
        a replace takes their place)."""
        found: dict[str, int] = {}
        for start in range(0, len(session_ids), _INSERT_BATCH):
            chosen = list(session_ids[start:start + _INSERT_BATCH])
            found.update(connection.execute(self.scope.select(sessions, sessions.c.id, sessions.c.version)
                                            .where(sessions.c.id.in_(chosen))).all())
        return found

    def replace_written(self, connection: Connection, written: Sequence[WrittenSession]) -> dict[str, int]:
        """Store each document as the session of its id, at version 1, replacing any
        session of that id, in the caller's transaction; the version of each."""
        if not written:
            return {}
        for item in written:
            if not SESSION_ID.fullmatch(item.session_id):
                raise InvalidInput(f"session id {item.session_id!r} must be {SESSION_ID_RULE}")
        ids = [item.session_id for item in written]
        for start in range(0, len(ids), _INSERT_BATCH):
            old = self.scope.select(sessions, sessions.c.pk).where(sessions.c.id.in_(ids[start:start + _INSERT_BATCH]))
            pks = list(connection.execute(old).scalars())
            if pks:
                unindex_sessions(connection, pks)
                connection.execute(sa.delete(entries).where(entries.c.session_pk.in_(pks)))
                connection.execute(sa.delete(sessions).where(sessions.c.pk.in_(pks)))
        prepared = []
        for item in written:
            new = self._cut(item.document, item.session_id, item.agent, None, [])
            if len(new.packed) != len(item.session.entries):
                raise InvalidInput(f"session {item.session_id!r}: {len(new.packed)} entries written from "
                                   f"{len(item.session.entries)}")
            prepared.append(new)
        self._insert_new(connection, prepared)
        return dict.fromkeys(ids, 1)

    def append_written(self, connection: Connection, session_id: str, new_entries: Sequence[dict[str, Any]],
                       models: Sequence[Entry], *, expected_version: int) -> int | None:
        """Add entries written by agentfolio's own writer from ``models`` (one each) at the
        end of the history, in the caller's transaction, if the session is still at
        ``expected_version``; its new version (``None``: it is not, or is gone)."""
        if len(models) != len(new_entries):
            raise InvalidInput(f"{len(new_entries)} entries written from {len(models)}")
        facts = [entry_facts(entry) for entry in new_entries]
        packed = [self._pack(entry, counted) for entry, counted in zip(new_entries, facts, strict=True)]
        row = connection.execute(sa.update(sessions).where(self._visible(session_id),
                                                           sessions.c.version == expected_version)
                                 .values(**_appended_values(packed))
                                 .returning(sessions.c.pk, sessions.c.version, sessions.c.entry_count,
                                            sessions.c.history_at, sessions.c.last_request_at)).first()
        if row is None:
            return None
        self._add_entries(connection, row, packed, facts)
        return int(row.version)

    def _purge_expired_id(self, session_id: str) -> None:
        """An id taken only by an expired session is freed (then the caller may retry)."""
        cutoff = _cutoff(self.settings)
        if cutoff is not None:
            _delete_sessions(self.engine, self.scope.select(sessions, sessions.c.pk).where(
                sessions.c.id == session_id, sessions.c.updated_at < cutoff))

    def append(self, session_id: str, entry: Any, *, expected_version: int | None, strict: bool = True) -> Appended:
        """Add one entry at the end of the history: one INSERT and one guarded UPDATE.

        ``expected_version`` is the version the caller read (``None``: whatever it is now).
        """
        if not isinstance(entry, dict):
            raise InvalidInput("an entry must be a JSON object", pointer="")
        return self.append_many(session_id, [entry], expected_version=expected_version, strict=strict)

    def append_many(self, session_id: str, new_entries: Sequence[Any], *, expected_version: int | None,
                    strict: bool = True) -> Appended:
        """Add entries at the end of the history together (a request and its response), as one write:
        the version goes up by one, and no other writer's entry can land between them.

        The cost is that of the entries added, whatever the history's length.  ``position``
        in the result is where the first one went; problems point into the list (``/1/...``)
        when there is more than one entry.
        """
        if not new_entries:
            raise InvalidInput("nothing to append: give at least one entry", pointer="")
        for index, entry in enumerate(new_entries):
            if not isinstance(entry, dict):
                raise InvalidInput("an entry must be a JSON object",
                                   pointer="" if len(new_entries) == 1 else f"/{index}")
        facts = [entry_facts(entry) for entry in new_entries]
        packed = [self._pack(entry, counted) for entry, counted in zip(new_entries, facts, strict=True)]
        values = _appended_values(packed)
        condition = self._visible(session_id)
        if expected_version is not None:
            condition = sa.and_(condition, sessions.c.version == expected_version)
        with write_transaction(self.engine) as connection:
            # The guarded UPDATE takes the row lock and says where the entries go, in one
            # round trip; anything refused below rolls it back with the transaction.
            row = connection.execute(sa.update(sessions).where(condition).values(**values)
                                     .returning(*_INFO_COLUMNS, sessions.c.history_at, sessions.c.last_request_at)
                                   ).first()
            if row is None:
                current = connection.execute(sa.select(sessions.c.version).where(self._visible(session_id))
                                             ).scalar_one_or_none()
                if current is None:
                    raise NotFound(f"no session {session_id!r}")
                raise VersionConflict(session_id, expected_version if expected_version is not None else -1, current)
            problems: list[Problem] = []
            for index, entry in enumerate(new_entries):
                prefix = "" if len(new_entries) == 1 else f"/{index}"
                found = check_entry(entry, row.schema_version, strict=strict, prefix=prefix)
                problems.extend(Problem(prefix + p.pointer, p.message) for p in found)
            position = self._add_entries(connection, row, packed, facts)
        return Appended(self._info(row), position, problems)

    def _add_entries(self, connection: Connection, row: Any, packed: Sequence[PackedEntry],
                     facts: Sequence[EntryFacts]) -> int:
        """After the guarded UPDATE (``row``: the session as it returned it) of an append:
        its counts, a history array if it had none, the entries; where they went."""
        latencies = response_latencies(facts, row.last_request_at)
        connection.execute(sa.update(sessions).where(sessions.c.pk == row.pk).values(**self._added_counts(facts)))
        if row.history_at is None:
            head = connection.execute(sa.select(sessions.c.head).where(sessions.c.pk == row.pk)).scalar_one()
            new_head, history_at = head_with_history(head, None)
            connection.execute(sa.update(sessions).where(sessions.c.pk == row.pk)
                               .values(head=new_head, history_at=history_at))
        position = int(row.entry_count) - len(packed)
        self._insert_entries(connection, row.pk, position, list(packed),
                             [_entry_values(*counted) for counted in zip(packed, facts, latencies, strict=True)])
        return position

    @staticmethod
    def _added_counts(facts: Sequence[EntryFacts]) -> dict[str, Any]:
        """The session row's counts after appending entries with these facts."""
        added = SessionFacts()
        for item in facts:
            added.count(replace(item, input_tokens=_capped(item.input_tokens),
                                output_tokens=_capped(item.output_tokens), total_tokens=_capped(item.total_tokens)))
        values: dict[str, Any] = {name: sessions.c[name] + getattr(added, name) for name in _COUNTS}
        if added.first_user_text is not None:
            values["first_user_text"] = sa.func.coalesce(sessions.c.first_user_text, added.first_user_text)
        latest = _latest_request(facts)
        if latest is not None:
            values["last_request_at"] = latest
        return values

    def reset(self, session_id: str, *, expected_version: int | None = None) -> SessionInfo:
        """Empty the session: ``{"schemaVersion": ..., "data": {"conversationHistory": []}}``."""
        with write_transaction(self.engine) as connection:
            row = self._locked(connection, session_id, expected_version)
            version = row.schema_version or durable_state.DEFAULT_VERSION
            head, history_at, _ = split_document({"schemaVersion": version, "data": {"conversationHistory": []}})
            unindex_sessions(connection, [row.pk])
            connection.execute(sa.delete(entries).where(entries.c.session_pk == row.pk))
            # The blobs the entries pointed at are the sweep's to collect, never removed here:
            # a write racing with this one may point at the same bytes.
            done = connection.execute(sa.update(sessions).where(sessions.c.pk == row.pk).values(
                version=sessions.c.version + 1, entry_count=0, head=head, history_at=history_at,
                schema_version=version, updated_at=time.time(), first_activity_at=None, last_activity_at=None,
                last_request_at=None, **_session_counts(SessionFacts()))
                .returning(*_INFO_COLUMNS)).one()
        return self._info(done)

    def delete(self, session_id: str, *, expected_version: int | None = None) -> None:
        with write_transaction(self.engine) as connection:
            row = self._locked(connection, session_id, expected_version)
            unindex_sessions(connection, [row.pk])
            connection.execute(sa.delete(entries).where(entries.c.session_pk == row.pk))
            connection.execute(sa.delete(sessions).where(sessions.c.pk == row.pk))

    def _locked(self, connection: Connection, session_id: str, expected_version: int | None) -> Any:
        row = connection.execute(sa.select(sessions.c.pk, sessions.c.version, sessions.c.schema_version)
                                 .where(self._visible(session_id)).with_for_update()).first()
        if row is None:
            raise NotFound(f"no session {session_id!r}")
        if expected_version is not None and row.version != expected_version:
            raise VersionConflict(session_id, expected_version, row.version)
        return row


def _shows(show: str) -> Any:
    """``present.activity.entry_shows`` over the stored counts (a test holds the two together)."""
    if show == "tools":
        return sa.or_(entries.c.tool_calls > 0, entries.c.failed_tools > 0, _has_role("tool"))
    if show == "errors":
        return sa.or_(entries.c.errors > 0, entries.c.failed_tools > 0)
    if show.startswith("role:"):
        return _has_role(show[5:])
    return sa.false()


def _has_role(role: str) -> Any:
    return ("," + sa.func.coalesce(entries.c.roles, "") + ",").like(_contains("," + role + ","), escape="\\")


def _contains(text: str) -> str:
    """A LIKE pattern matching ``text`` anywhere (its own wildcards escaped)."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _snippet(row: Any, needle: str, width: int, text_limit: int) -> str:
    """The text around ``needle`` in an entry: as written when its body holds all of it,
    else from the lower-cased search text."""
    text = row.text
    if row.blobs is None:
        written = entry_text(_json.loads(row.body), text_limit, lower=False)
        if len(search_text(written)) == len(text):  # same places, so the match is at the same offset
            text = written
    at = max(0, search_text(text).find(needle))
    begin = max(0, at - width // 3)
    end = min(len(text), max(at + len(needle), begin + width))
    shown = " ".join(text[begin:end].split())
    return ("…" if begin else "") + shown + ("…" if end < len(text) else "")


def check_document(document: Any, *, strict: bool) -> ReadResult:
    """Refuse what is not a readable durable state; what was read, with the schema
    problems a tolerant read kept."""
    try:
        return durable_state.read(document, strict=strict)
    except FormatError as error:
        raise InvalidInput(error.message, pointer=error.pointer, problems=error.problems) from None


def check_entry(entry: dict[str, Any], schema_version: str | None, *, strict: bool,
                prefix: str = "") -> list[Problem]:
    """Check one entry against its session's schema version, as if it were the whole
    history; its problems.  (Any JSON object is an entry the records can hold: one they
    do not know is kept whole.)

    ``prefix`` is where the entry sits in what was posted, for the pointer of a refusal."""
    version = schema_version or durable_state.DEFAULT_VERSION
    try:
        _, problems, _ = durable_state.validate({"schemaVersion": version, "data": {"conversationHistory": [entry]}})
    except FormatError as error:
        raise InvalidInput(error.message, pointer=error.pointer) from None
    inside = "/data/conversationHistory/0"
    problems = [Problem(p.pointer[len(inside):] if p.pointer.startswith(inside) else p.pointer, p.message)
                for p in problems]
    if problems and strict:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InvalidInput(f"{problems[0].message}{more}", pointer=prefix + problems[0].pointer,
                           problems=[Problem(prefix + p.pointer, p.message) for p in problems])
    return problems
