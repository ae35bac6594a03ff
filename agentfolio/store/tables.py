"""The store's tables, in one SQLAlchemy ``MetaData`` every area adds its own tables to.

Each area keeps its tables in its own module, defined on :data:`metadata`, and adds one
Alembic revision for them to ``agentfolio/store/migrations/versions`` (the chain is
linear: a new revision's ``down_revision`` is the current head).  A test compares the
migrated database with this metadata, so a table added here without a migration, or the
other way round, fails the suite.

Sessions are split for constant-time appends: a ``sessions`` row keeps everything in the
durable state but the history (``head``: the document's JSON with the history cut out at
``history_at``) and a version counter; each history entry is its own ``entries`` row,
holding the entry's exact JSON.  Appending is one INSERT and one guarded UPDATE, whatever
the length of the history; reading splices the stored bytes back together.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

# Constraint names the same on SQLite and PostgreSQL, so migrations can name them.
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = sa.MetaData(naming_convention=NAMING)

# An auto-incrementing 64-bit key that is SQLite's rowid there.
BigKey = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


class Lexemes(sa.types.TypeDecorator[str]):
    """PostgreSQL's ``tsvector`` (written as its input text, words separated by spaces, or
    by binary COPY in its binary form: see store.sessions); TEXT elsewhere.  A type of its
    own rather than ``with_variant(TSVECTOR)``, which would load PostgreSQL's dialect in
    every process that imports the tables."""

    impl = sa.Text
    cache_ok = True

    def load_dialect_impl(self, dialect: sa.Dialect) -> sa.types.TypeEngine[Any]:
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import TSVECTOR

            return dialect.type_descriptor(TSVECTOR())
        return dialect.type_descriptor(sa.Text())


accounts = sa.Table(
    "accounts", metadata,
    sa.Column("pk", BigKey, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(200), nullable=False, unique=True),
    sa.Column("created_at", sa.Float, nullable=False),
)

# Bearer tokens, stored as SHA-256 of the token: the token itself is shown once.
tokens = sa.Table(
    "tokens", metadata,
    sa.Column("pk", BigKey, primary_key=True, autoincrement=True),
    sa.Column("account_pk", sa.BigInteger, sa.ForeignKey("accounts.pk", ondelete="CASCADE"), nullable=False),
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    # The first characters, to tell tokens apart in listings.
    sa.Column("prefix", sa.String(16), nullable=False),
    sa.Column("label", sa.String(200), nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("revoked_at", sa.Float, nullable=True),
)

# A viewer's signed-in browser: the cookie holds a random secret (only its SHA-256 is
# kept), never the API token itself.  Signing out ends the row; revoking the token it
# signed in with ends every browser session it opened.
viewer_sessions = sa.Table(
    "viewer_sessions", metadata,
    sa.Column("pk", BigKey, primary_key=True, autoincrement=True),
    sa.Column("account_pk", sa.BigInteger, sa.ForeignKey("accounts.pk", ondelete="CASCADE"), nullable=False),
    sa.Column("token_pk", sa.BigInteger, sa.ForeignKey("tokens.pk", ondelete="CASCADE"), nullable=False),
    sa.Column("secret_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Index(None, "expires_at"),
)

sessions = sa.Table(
    "sessions", metadata,
    sa.Column("pk", BigKey, primary_key=True, autoincrement=True),
    sa.Column("account_pk", sa.BigInteger, sa.ForeignKey("accounts.pk", ondelete="CASCADE"), nullable=False),
    sa.Column("id", sa.String(200), nullable=False),
    sa.Column("agent", sa.String(200), nullable=True),
    sa.Column("schema_version", sa.String(50), nullable=True),
    # The document without its history, and where the history goes back in (byte
    # offset), or NULL when the document has no history array.
    sa.Column("head", sa.LargeBinary, nullable=False),
    sa.Column("history_at", sa.Integer, nullable=True),
    sa.Column("version", sa.BigInteger, nullable=False),
    sa.Column("entry_count", sa.Integer, nullable=False),
    # Store times (epoch seconds): created, last written (idle time counts from here).
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    # The history's own times (entries' createdAt), for searching by time range.
    sa.Column("first_activity_at", sa.Float, nullable=True),
    sa.Column("last_activity_at", sa.Float, nullable=True),
    # SHA-256 of the imported file, so a re-run import skips what it already stored.
    sa.Column("source_hash", sa.String(64), nullable=True),
    # What the sessions list shows, counted as entries are written (present.activity):
    # never a history read per row.  ``facts_version`` NULL: written before they were
    # counted; the store counts such a session the first time a list shows it.
    sa.Column("first_user_text", sa.String(200), nullable=True),
    *(sa.Column(name, sa.BigInteger, nullable=False, server_default="0")
      for name in ("input_tokens", "output_tokens", "total_tokens", "usage_responses", "tool_calls",
                   "failed_tools", "errors")),
    # The latest request's time, where the next answer's latency runs from.
    sa.Column("last_request_at", sa.Float, nullable=True),
    sa.Column("facts_version", sa.Integer, nullable=True),
    sa.UniqueConstraint("account_pk", "id"),
    sa.UniqueConstraint("account_pk", "source_hash"),
    sa.Index(None, "account_pk", "updated_at"),
    sa.Index(None, "updated_at"),
    # One agent's sessions newest-written first (the sessions list filtered by agent).
    sa.Index("ix_sessions_agent", "account_pk", "agent", "updated_at"),
)

entries = sa.Table(
    "entries", metadata,
    sa.Column("session_pk", sa.BigInteger, sa.ForeignKey("sessions.pk", ondelete="CASCADE"), primary_key=True),
    sa.Column("position", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("kind", sa.String(100), nullable=True),
    sa.Column("created_at", sa.Float, nullable=True),
    # The entry's JSON as written; contents moved to the blob store appear in it as
    # {"$agentfolio:blob": "<sha256>#<nonce>"} and are listed in ``blobs``.
    sa.Column("body", sa.LargeBinary, nullable=False),
    sa.Column("blobs", sa.Text, nullable=True),
    # Lower-cased text of the entry's messages, for search.
    sa.Column("text", sa.Text, nullable=False),
    # The entry counted (present.activity): seconds since the latest request for an
    # answer, tokens, tool calls, failed tools, errors (NULL: none), the roles speaking.
    sa.Column("latency", sa.Float, nullable=True),
    *(sa.Column(name, sa.BigInteger, nullable=True)
      for name in ("input_tokens", "output_tokens", "total_tokens", "tool_calls", "failed_tools", "errors")),
    sa.Column("roles", sa.String(100), nullable=True),
    # PostgreSQL: the text's words, as store.search.entry_words cuts them, as a
    # ``tsvector`` for its index (NULL on SQLite, whose FTS5 table cuts them itself).
    sa.Column("words", Lexemes(), nullable=True),
)

# Full-text search of the entries' words (store.search) lives outside this metadata:
# PostgreSQL's GIN index ``ix_entries_lexemes`` on ``words`` (migration 0017_entry_words),
# SQLite's FTS5 table ``entries_fts`` (0009_flat_reads).

# The blob store is content-addressed: a blob's key is the SHA-256 of its bytes, so a key
# names the same bytes for ever and is never reused for other ones.  ``blobs`` has a row
# for every blob a write put in the store, ``entry_blobs`` says which entries point at it.
# Writers lock the blob's row while they make sure its bytes are stored and point at it;
# only the sweep (store.blob_sweep) removes a blob, under the same row lock, when no entry
# points at it.  Nothing is removed inline after a reset or a delete.
blobs = sa.Table(
    "blobs", metadata,
    sa.Column("digest", sa.String(64), primary_key=True),
    sa.Column("created_at", sa.Float, nullable=False),
)

entry_blobs = sa.Table(
    "entry_blobs", metadata,
    sa.Column("session_pk", sa.BigInteger, primary_key=True),
    sa.Column("position", sa.Integer, primary_key=True, autoincrement=False),
    # No cascade: a blob row an entry points at cannot be deleted.
    sa.Column("digest", sa.String(64), sa.ForeignKey("blobs.digest"), primary_key=True),
    sa.ForeignKeyConstraint(["session_pk", "position"], ["entries.session_pk", "entries.position"],
                            ondelete="CASCADE"),
    sa.Index(None, "digest"),
)

# Files opened in the viewer without being stored as sessions: kept per account, a few and
# for a day (``store.viewer_files``), so that every server behind a load balancer can show
# a file another one received.  The bytes are a blob like any other (collected by the same
# sweep once no row points at them).
viewer_files = sa.Table(
    "viewer_files", metadata,
    sa.Column("pk", BigKey, primary_key=True, autoincrement=True),
    sa.Column("account_pk", sa.BigInteger, sa.ForeignKey("accounts.pk", ondelete="CASCADE"), nullable=False),
    sa.Column("token", sa.String(64), nullable=False, unique=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("kind", sa.String(50), nullable=False),
    sa.Column("detected", sa.String(200), nullable=True),
    # Which of the items the file opens as (a span export opens as one per conversation).
    sa.Column("part", sa.Integer, nullable=False, server_default="0"),
    sa.Column("problem_count", sa.Integer, nullable=False),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("digest", sa.String(64), sa.ForeignKey("blobs.digest"), nullable=False),
    sa.Column("opened_at", sa.Float, nullable=False),
    sa.Column("used_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Index(None, "account_pk", "used_at"),
    sa.Index(None, "expires_at"),
    sa.Index(None, "digest"),
)

# Background work a server does now and then (expiry, the blob sweep): one row per job, so
# that however many servers run, each period one of them takes the job (``store.jobs``).
background_jobs = sa.Table(
    "background_jobs", metadata,
    sa.Column("name", sa.String(100), primary_key=True),
    # No server may take the job again before this time (epoch seconds).
    sa.Column("lease_until", sa.Float, nullable=False),
    sa.Column("runner", sa.String(200), nullable=True),
    sa.Column("started_at", sa.Float, nullable=True),
    sa.Column("finished_at", sa.Float, nullable=True),
    sa.Column("runs", sa.BigInteger, nullable=False),
)


def every_table() -> sa.MetaData:
    """:data:`metadata` with every area's tables.  The agent registry defines its tables
    on it (migration 0002_registry) when its module is first imported, which a command
    that stores sessions never does: defining them (and loading the dialects their
    indexes name) was a tenth of its start-up."""
    from agentfolio.store import registry_tables  # noqa: F401

    return metadata
