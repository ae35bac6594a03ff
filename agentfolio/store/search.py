"""Full-text search of message text: which sessions have an entry holding every word asked.

An entry's search text (``entries.text``: its messages' text, lower-cased) is indexed
by words — runs of letters and digits, as SQLite's ``unicode61`` tokenizer and
:data:`_WORD` read them:

* PostgreSQL: a GIN index on ``entries.words``, a ``tsvector`` of the entry's words as
  this process cuts them (:func:`entry_words`); a query is the ``tsquery``
  ``'w1':* & 'w2':*``, cast, never parsed.  Neither side goes through
  PostgreSQL's text-search parser: ``to_tsvector`` of each entry's text cost the server
  more than the rest of storing it, and its parser splits words by its own rules (by
  the database's locale) where SQLite's tokenizer and the query read runs of letters and
  digits.  Rows written without words (by an agentfolio older than migration
  0017_entry_words, during a rolling upgrade) get them from a trigger, cut by
  PostgreSQL's regular expressions instead.
* SQLite: a contentless FTS5 index ``entries_fts`` (the text is in ``entries`` already)
  whose rowid is :func:`fts_rowid` of the entry, so a session's entries are one rowid
  range.  Entries are added to it when they are written and taken out (FTS5's ``delete``
  command, with the text they were added with) before they are deleted.  Where SQLite
  was built without FTS5, search falls back to ``LIKE`` over the newest
  :data:`FALLBACK_SESSIONS` sessions the account wrote: bounded, and documented.

Every word matches as a prefix (``gold`` finds ``goldbrew``) and all of them must be in
one entry; a query without a letter or digit matches nothing.  A search costs what its
matches cost, bounded both ways: matching entries are read up to :data:`CANDIDATES`; a
query matching more (a common word) walks the account's sessions newest first instead,
checking each one's entries through the index — which finds a page quickly exactly
because matches are common — over at most the :data:`WALK_SESSIONS` newest sessions.

On SQLite a word is looked up as the terms it is a prefix of (read from the index's
vocabulary, ``entries_fts_terms``), up to :data:`MAX_EXPANSION` of them, and matched as
those whole terms: FTS5 reads a prefix query by first copying out every entry of every
term it covers, whatever the ``LIMIT`` or ``rowid`` range, so ``museum*`` cost as much as
all the entries holding "museum" on every call — once per session checked, in a walk —
while whole terms are read lazily, seeking.  A word that is a prefix of more terms than
that is left a prefix (its terms are many, so each is usually rare).  The candidates are
then looked up by key, one session each (:meth:`SessionSearch.among`), never by walking
the account's sessions in write order to pick them out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from agentfolio import _json
from agentfolio.store.multirow import insert_rows
from agentfolio.store.tables import entries

__all__ = ["CANDIDATES", "FALLBACK_SESSIONS", "MAX_EXPANSION", "WALK_SESSIONS", "SessionSearch",
           "entry_words", "fts_rowid", "lexemes_binary"]

_WORD = re.compile(r"[^\W_]+")
#: Words of a query that count (more are ignored), and the longest word kept.
MAX_WORDS, MAX_WORD = 16, 100
#: Matching entries read before a search switches to walking sessions in order.
CANDIDATES = 5_000
#: Sessions a walk examines at most (the newest written).
WALK_SESSIONS = 20_000
#: SQLite: matching entries a walk reads newest first, to check the newest sessions without a probe each.
NEWEST_MATCHES = 2_000
#: Sessions the LIKE fallback (SQLite without FTS5) examines at most (the newest written).
FALLBACK_SESSIONS = 10_000
#: Bits of an FTS rowid that hold the entry's position (the rest: the session's pk).
POSITION_BITS = 32
FTS_TABLE = "entries_fts"
#: SQLite: the FTS index's vocabulary (an ``fts5vocab`` table in each connection's ``temp``).
TERMS_TABLE = "entries_fts_terms"
#: Whole terms a query word is spelled out as before it is searched as a prefix instead.
MAX_EXPANSION = 16
#: The greatest code point: every term starting with a word sorts below word + this.
_LAST_CHARACTER = "\U0010ffff"
#: An indexed word: a run of letters and digits, cut at this many characters (at most
#: 2,000 bytes: PostgreSQL refuses a lexeme of 2,047).  A query word is cut at MAX_WORD and
#: matches as a prefix, so a longer word is found by its start either way.
INDEX_WORD_CHARS = 500
_INDEX_WORD = re.compile(rf"[^\W_]{{1,{INDEX_WORD_CHARS}}}")
#: ASCII text's bytes with every byte that is not a letter or digit made a space: the
#: words of ASCII text in one C call, where the regular expression took ten times longer.
_ASCII_WORD_BYTES = bytes(byte if chr(byte).isascii() and chr(byte).isalnum() else 0x20 for byte in range(256))
_LONG_ASCII_WORD = re.compile(rb"[^ ]{%d}" % (INDEX_WORD_CHARS + 1))
#: An entry's words are cut at this many characters (at a space): PostgreSQL refuses a
#: ``tsvector`` of a megabyte, and 128 Ki characters make at most 512 KiB of words and
#: 256 KiB of their entries.  (The search text is 32 Ki characters unless set longer.)
INDEX_CHARS = 128 * 1024


def fts_rowid(session_pk: int, position: int) -> int:
    return (session_pk << POSITION_BITS) | position


def entry_words(text: str) -> str:
    """An entry's search text (lower-cased already) as PostgreSQL's index reads it: its
    words, space-separated, in ``tsvector`` input syntax (letters and digits need no quotes;
    the server sorts them and drops repeats), at most :data:`INDEX_CHARS` of them."""
    words = None
    if text.isascii():
        cut = text.encode().translate(_ASCII_WORD_BYTES)
        if len(cut) <= INDEX_WORD_CHARS or not _LONG_ASCII_WORD.search(cut):
            words = cut.decode()
    if words is None:
        words = " ".join(_INDEX_WORD.findall(text))
    if len(words) > INDEX_CHARS:
        words = words[:words.rfind(" ", 0, INDEX_CHARS + 1)]
    return words


def lexemes_binary(words: str) -> bytes:
    """Words (as :func:`entry_words` gives them) as a ``tsvector`` in PostgreSQL's binary
    form, which a binary COPY hands to the column as it is: the count of distinct words,
    then each one in UTF-8 ended by a NUL, with no positions.  In the order the server
    keeps them (bytes compared, a prefix first), so it need not sort them."""
    lexemes = sorted(set(words.encode().split()))
    return len(lexemes).to_bytes(4, "big") + b"\x00\x00\x00".join(lexemes) + (b"\x00\x00\x00" if lexemes else b"")


def query_words(text: str) -> list[str]:
    return [word[:MAX_WORD] for word in _WORD.findall(text.lower())][:MAX_WORDS]


def has_fts(connection: Connection) -> bool:
    """Whether this database has a full-text index (PostgreSQL always; SQLite with FTS5)."""
    if connection.dialect.name == "postgresql":
        return True
    known = connection.info.get(FTS_TABLE)  # per database connection: migrations run before any use
    if known is None:
        known = connection.info[FTS_TABLE] = connection.exec_driver_sql(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (FTS_TABLE,)).first() is not None
    return bool(known)


def index_entries(connection: Connection, keyed_texts: Sequence[tuple[int, int, str]]) -> None:
    """Add written entries (``session_pk``, ``position``, ``text``) to SQLite's index."""
    if connection.dialect.name == "sqlite" and keyed_texts and has_fts(connection):
        insert_rows(connection, FTS_TABLE, ("rowid", "text"),
                    [((session_pk << POSITION_BITS) | position, text) for session_pk, position, text in keyed_texts])


def unindex_sessions(connection: Connection, session_pks: Sequence[int]) -> None:
    """Take every entry of these sessions out of SQLite's index (before they are deleted)."""
    if connection.dialect.name != "sqlite" or not session_pks or not has_fts(connection):
        return
    marks = ",".join("?" * len(session_pks))
    connection.exec_driver_sql(
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, text) "
        f"SELECT 'delete', (session_pk << {POSITION_BITS}) | position, text FROM entries "
        f"WHERE session_pk IN ({marks})", tuple(session_pks))


def _terms_table(connection: Connection) -> str:
    """The vocabulary of SQLite's index, made in this connection's ``temp`` on first use
    (nothing stored: it reads the index's own structure)."""
    if not connection.info.get(TERMS_TABLE):
        connection.exec_driver_sql(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{TERMS_TABLE} "
                                   f"USING fts5vocab(main, {FTS_TABLE}, row)")
        connection.info[TERMS_TABLE] = True
    return f"temp.{TERMS_TABLE}"


def _quoted(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


class SessionSearch:
    """The condition on ``sessions.pk`` a text search adds to a sessions query."""

    def __init__(self, connection: Connection, text: str) -> None:
        self.connection = connection
        self.words = query_words(text)
        self.postgresql = connection.dialect.name == "postgresql"
        self.indexed = bool(self.words) and has_fts(connection)
        self._match: str | None = None

    def _entry_matches(self) -> ColumnElement[bool]:
        """PostgreSQL: the entry's words hold every word (as a prefix)."""
        from sqlalchemy.dialects.postgresql import TSQUERY

        # Quoted lexemes, cast: a query word holds only letters and digits (no quote).
        query = " & ".join(f"'{word}':*" for word in self.words)
        return entries.c.words.op("@@")(sa.cast(sa.literal(query, sa.Text), TSQUERY))

    def _fts_match(self) -> str:
        """SQLite's MATCH: every word, as the whole terms it starts (see the module's notes)."""
        if self._match is None:
            self._match = " AND ".join(self._word_match(word) for word in self.words)
        return self._match

    def _word_match(self, word: str) -> str:
        terms = [term for (term,) in self.connection.exec_driver_sql(
            f"SELECT term FROM {_terms_table(self.connection)} WHERE term >= ? AND term < ? LIMIT ?",
            (word, word + _LAST_CHARACTER, MAX_EXPANSION + 1))]
        if len(terms) > MAX_EXPANSION:
            return f"{_quoted(word)}*"
        if not terms:  # no entry holds a word starting so: a term no entry holds either
            return _quoted(word)
        return "(" + " OR ".join(_quoted(term) for term in terms) + ")"

    def candidates(self) -> list[int] | None:
        """The pks of the sessions with a matching entry, or None when more than
        :data:`CANDIDATES` entries match (then :meth:`per_session` is the way)."""
        # Counted in the database first: a common word stops there, without carrying
        # thousands of rows into Python only to learn that they are too many.
        if self.postgresql:
            matching = (sa.select(entries.c.session_pk).where(self._entry_matches())
                        .limit(CANDIDATES + 1).subquery())
            with self._through_the_index():
                if self.connection.execute(sa.select(sa.func.count()).select_from(matching)).scalar_one() > CANDIDATES:
                    return None
                return sorted(self.connection.execute(sa.select(matching.c.session_pk).distinct()).scalars())
        rowids = f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? LIMIT ?"
        bound = (self._fts_match(), CANDIDATES + 1)
        if self.connection.exec_driver_sql(f"SELECT count(*) FROM ({rowids})", bound).scalar_one() > CANDIDATES:
            return None
        return sorted(pk for (pk,) in self.connection.exec_driver_sql(
            f"SELECT DISTINCT rowid >> {POSITION_BITS} FROM ({rowids})", bound))

    @contextmanager
    def _through_the_index(self) -> Iterator[None]:
        """PostgreSQL: the statements inside plan without a sequential scan, put back after
        (for this transaction only).  Its estimate for a prefix (``word:*``) is a flat 2%
        of the entries unless the column's statistics hold a hundred common words, and at
        that the planner reads every entry, where the index finds a rare word's few: a
        scan is never the better plan for the at most :data:`CANDIDATES` rows read."""
        before = self.connection.exec_driver_sql(
            "SELECT current_setting('enable_seqscan'), set_config('enable_seqscan', 'off', true)").scalar_one()
        yield
        # Not on an error: the transaction is aborted then (a statement on it would fail in
        # place of the error), and its rollback puts the setting back.
        self.connection.exec_driver_sql("SELECT set_config('enable_seqscan', %s, true)", (before,))

    def among(self, session_pk: Any, candidates: list[int]) -> ColumnElement[bool]:
        """Keeps the sessions whose pk is one of ``candidates``.  On SQLite, as a join with
        the list (``json_each``), which its planner reads first, looking each session up by
        key: ``pk IN (…)`` let it walk every session of the account in write order instead
        (it has no statistics to tell it the account is large), a cost growing with them."""
        if self.postgresql:
            return cast("ColumnElement[bool]", session_pk.in_(candidates))
        listed = sa.func.json_each(_json.dumps(candidates).decode()).table_valued("value", name="search_candidates")
        return cast("ColumnElement[bool]", session_pk == listed.c.value)

    def per_session(self, session_pk: Any) -> ColumnElement[bool]:
        """A correlated check that the session ``session_pk`` has a matching entry."""
        if self.postgresql:
            return sa.exists().where(entries.c.session_pk == session_pk, self._entry_matches())
        low = session_pk.op("<<")(POSITION_BITS)
        fts = sa.table(FTS_TABLE, sa.column("rowid"))
        probe = sa.exists().select_from(fts).where(
            sa.literal_column(FTS_TABLE).op("MATCH")(self._fts_match()),
            fts.c.rowid >= low, fts.c.rowid <= low + ((1 << POSITION_BITS) - 1))
        # Each probe costs FTS5 a query of its own (a fraction of a millisecond), so the
        # newest sessions by key are answered from one read of the newest matches instead:
        # every matching session from ``oldest`` on is among them, and only an older
        # session (one written to again since) is probed.
        rowids = [rowid for (rowid,) in self.connection.exec_driver_sql(
            f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? ORDER BY rowid DESC LIMIT ?",
            (self._fts_match(), NEWEST_MATCHES))]
        newest = sorted({rowid >> POSITION_BITS for rowid in rowids})
        if len(rowids) < NEWEST_MATCHES:  # every match: no probe at all
            return self.among(session_pk, newest) if newest else sa.false()
        return sa.or_(session_pk.in_(newest), sa.and_(session_pk < newest[0], probe))
