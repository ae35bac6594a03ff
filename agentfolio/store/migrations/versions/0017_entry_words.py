"""Entry words for PostgreSQL's search, cut by the client: ``entries.words``, a
``tsvector`` of the text's runs of letters and digits, and a GIN index on it, in place of
0009's index on ``to_tsvector('simple', …)`` of the text, which cost the server more than
the rest of storing an entry (see ``agentfolio.store.search``).  A column of the type
itself, not text cast in the index: the planner costs a cast at one operation a row, and
chose to scan every entry over an index of the cast.

PostgreSQL: the column is filled for every stored entry, a thousand rows at a time in key
order, by the same cut the writers make; a trigger fills it for rows written without it
(by an agentfolio older than this, during a rolling upgrade), by PostgreSQL's regular
expressions; then the new index is built and the old one dropped.  SQLite gets a TEXT
column only (always NULL: its FTS5 table cuts words itself).  The downgrade drops the
trigger, the index and the column and builds 0009's index again.

Revision ID: 0017_entry_words
Revises: 0016_span_counts
Create Date: 2026-11-29
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0017_entry_words"
down_revision = "0016_span_counts"
branch_labels = None
depends_on = None

# Frozen copies of agentfolio.store.search's cut and expressions (history does not move).
_WORD_CHARS = 500
_WORD = re.compile(rf"[^\W_]{{1,{_WORD_CHARS}}}")
_INDEX_CHARS = 128 * 1024
_OLD_WORDS = r"""to_tsvector('simple', regexp_replace(text, '[!-/:-@\[-`{-~]+', ' ', 'g'))"""
_BATCH = 1000
_TRIGGER_FUNCTION = rf"""
CREATE OR REPLACE FUNCTION agentfolio_entry_words() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.words := left(array_to_string(ARRAY(SELECT left(m[1], {_WORD_CHARS})
        FROM regexp_matches(NEW.text, '([[:alnum:]]+)', 'g') AS m), ' '), {_INDEX_CHARS})::tsvector;
    RETURN NEW;
END
$$"""


def upgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name != "postgresql":
        op.add_column("entries", sa.Column("words", sa.Text, nullable=True))
        return
    op.add_column("entries", sa.Column("words", postgresql.TSVECTOR, nullable=True))
    connection.exec_driver_sql(_TRIGGER_FUNCTION)
    connection.exec_driver_sql("CREATE TRIGGER entries_words BEFORE INSERT ON entries FOR EACH ROW "
                               "WHEN (NEW.words IS NULL) EXECUTE FUNCTION agentfolio_entry_words()")
    after = (-1, -1)
    while True:
        rows = connection.exec_driver_sql(
            "SELECT session_pk, position, text FROM entries WHERE (session_pk, position) > (%s, %s) "
            "ORDER BY session_pk, position LIMIT %s", (*after, _BATCH)).all()
        if not rows:
            break
        connection.exec_driver_sql(
            "UPDATE entries SET words = cut.words::tsvector FROM (SELECT unnest(%s::bigint[]) AS session_pk, "
            "unnest(%s::integer[]) AS position, unnest(%s::text[]) AS words) AS cut "
            "WHERE entries.session_pk = cut.session_pk AND entries.position = cut.position",
            ([row[0] for row in rows], [row[1] for row in rows], [_words(row[2]) for row in rows]))
        after = (rows[-1][0], rows[-1][1])
    connection.exec_driver_sql("CREATE INDEX IF NOT EXISTS ix_entries_lexemes ON entries USING gin (words)")
    connection.exec_driver_sql("DROP INDEX IF EXISTS ix_entries_words")


def _words(text: str) -> str:
    words = " ".join(_WORD.findall(text))
    return words if len(words) <= _INDEX_CHARS else words[:words.rfind(" ", 0, _INDEX_CHARS + 1)]


def downgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql("DROP TRIGGER IF EXISTS entries_words ON entries")
        connection.exec_driver_sql("DROP FUNCTION IF EXISTS agentfolio_entry_words()")
        connection.exec_driver_sql("DROP INDEX IF EXISTS ix_entries_lexemes")
        connection.exec_driver_sql(f"CREATE INDEX IF NOT EXISTS ix_entries_words ON entries USING gin ({_OLD_WORDS})")
    with op.batch_alter_table("entries") as batch:  # SQLite: the table is copied without it
        batch.drop_column("words")
