"""Trace pages at any size: a span's children in start order from an index (the viewer
walks the tree a page at a time), the roots of a trace from a small partial index, the
trace list in start order, and per-trace counts kept by the database itself so the
list never counts spans.

``registry_trace_stats`` holds, per instance, how many spans it has, how many failed and
how many fail validation, and the bounds of its timeline (first start, last end: they
only widen, so a span moved out of a trace may leave it a little wider than its spans).  Triggers on ``registry_spans`` keep it exact whatever writes
the spans (the Prefactor API, bulk, OTLP ingest, spans moved between traces, cascading
deletes): row triggers on SQLite, statement triggers over transition tables on
PostgreSQL (one upsert per statement, instances locked in id order).

Revision ID: 0005_trace_pages
Revises: 0004_viewer_sessions
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_trace_pages"
down_revision = "0004_viewer_sessions"
branch_labels = None
depends_on = None

_SQLITE_ADD = """INSERT INTO registry_trace_stats
    (instance_id, account_pk, span_count, failed_count, invalid_count, first_start, last_end)
  VALUES (NEW.instance_id, NEW.account_pk, 1, NEW.status = 'failed', NEW.validation_status = 'invalid',
          NEW.started_at, coalesce(NEW.finished_at, NEW.started_at))
  ON CONFLICT (instance_id) DO UPDATE SET span_count = span_count + 1,
    failed_count = failed_count + excluded.failed_count, invalid_count = invalid_count + excluded.invalid_count,
    first_start = coalesce(min(first_start, excluded.first_start), first_start, excluded.first_start),
    last_end = coalesce(max(last_end, excluded.last_end), last_end, excluded.last_end);"""

_SQLITE_TRIGGERS = (
    f"""CREATE TRIGGER registry_trace_stats_insert AFTER INSERT ON registry_spans BEGIN
  {_SQLITE_ADD}
END""",
    """CREATE TRIGGER registry_trace_stats_delete AFTER DELETE ON registry_spans BEGIN
  UPDATE registry_trace_stats SET span_count = span_count - 1,
    failed_count = failed_count - (OLD.status = 'failed'),
    invalid_count = invalid_count - (OLD.validation_status = 'invalid')
  WHERE instance_id = OLD.instance_id;
END""",
    f"""CREATE TRIGGER registry_trace_stats_update
AFTER UPDATE OF instance_id, status, validation_status, started_at, finished_at ON registry_spans BEGIN
  UPDATE registry_trace_stats SET span_count = span_count - 1,
    failed_count = failed_count - (OLD.status = 'failed'),
    invalid_count = invalid_count - (OLD.validation_status = 'invalid')
  WHERE instance_id = OLD.instance_id;
  {_SQLITE_ADD}
END""",
)

_POSTGRES_FUNCTION = """CREATE FUNCTION registry_trace_stats_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO registry_trace_stats AS s
      (instance_id, account_pk, span_count, failed_count, invalid_count, first_start, last_end)
    SELECT instance_id, min(account_pk), count(*), count(*) FILTER (WHERE status = 'failed'),
           count(*) FILTER (WHERE validation_status = 'invalid'), min(started_at),
           max(coalesce(finished_at, started_at))
    FROM new_rows GROUP BY instance_id ORDER BY instance_id
    ON CONFLICT (instance_id) DO UPDATE SET span_count = s.span_count + excluded.span_count,
      failed_count = s.failed_count + excluded.failed_count, invalid_count = s.invalid_count + excluded.invalid_count,
      first_start = LEAST(s.first_start, excluded.first_start), last_end = GREATEST(s.last_end, excluded.last_end);
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE registry_trace_stats AS s SET span_count = s.span_count - d.n, failed_count = s.failed_count - d.f,
      invalid_count = s.invalid_count - d.i
    FROM (SELECT instance_id, count(*) AS n, count(*) FILTER (WHERE status = 'failed') AS f,
                 count(*) FILTER (WHERE validation_status = 'invalid') AS i
          FROM old_rows GROUP BY instance_id) AS d
    WHERE s.instance_id = d.instance_id;
  ELSE
    INSERT INTO registry_trace_stats AS s
      (instance_id, account_pk, span_count, failed_count, invalid_count, first_start, last_end)
    SELECT instance_id, min(account_pk), sum(n), sum(f), sum(i), min(st), max(en) FROM (
      SELECT instance_id, account_pk, -1 AS n, -(status = 'failed')::int AS f,
             -(validation_status = 'invalid')::int AS i, NULL::bigint AS st, NULL::bigint AS en FROM old_rows
      UNION ALL
      SELECT instance_id, account_pk, 1, (status = 'failed')::int, (validation_status = 'invalid')::int,
             started_at, coalesce(finished_at, started_at) FROM new_rows
    ) AS changes
    GROUP BY instance_id ORDER BY instance_id
    ON CONFLICT (instance_id) DO UPDATE SET span_count = s.span_count + excluded.span_count,
      failed_count = s.failed_count + excluded.failed_count, invalid_count = s.invalid_count + excluded.invalid_count,
      first_start = LEAST(s.first_start, excluded.first_start), last_end = GREATEST(s.last_end, excluded.last_end);
  END IF;
  RETURN NULL;
END
$$"""

_POSTGRES_TRIGGERS = (
    "CREATE TRIGGER registry_trace_stats_insert AFTER INSERT ON registry_spans REFERENCING NEW TABLE AS new_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION registry_trace_stats_apply()",
    "CREATE TRIGGER registry_trace_stats_update AFTER UPDATE ON registry_spans "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION registry_trace_stats_apply()",
    "CREATE TRIGGER registry_trace_stats_delete AFTER DELETE ON registry_spans REFERENCING OLD TABLE AS old_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION registry_trace_stats_apply()",
)


def upgrade() -> None:
    op.create_table(
        "registry_trace_stats",
        sa.Column("instance_id", sa.String(32), nullable=False),
        sa.Column("account_pk", sa.BigInteger(), nullable=False),
        sa.Column("span_count", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("failed_count", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("invalid_count", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("first_start", sa.BigInteger(), nullable=True),
        sa.Column("last_end", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(["instance_id"], ["registry_instances.id"], ondelete="CASCADE",
                                name="fk_registry_trace_stats_instance_id_registry_instances"),
        sa.ForeignKeyConstraint(["account_pk"], ["accounts.pk"], ondelete="CASCADE",
                                name="fk_registry_trace_stats_account_pk_accounts"),
        sa.PrimaryKeyConstraint("instance_id", name="pk_registry_trace_stats"),
    )
    # A span's children in start order (NULL starts grouped, by id).
    op.create_index("ix_registry_spans_tree", "registry_spans",
                    ["instance_id", "parent_span_id", "started_at", "id"])
    # A trace's roots: no parent, or a parent not (yet) among its spans.
    op.create_index("ix_registry_spans_roots", "registry_spans", ["instance_id", "started_at", "id"],
                    sqlite_where=sa.text("parent_found IS NOT 1"),
                    postgresql_where=sa.text("parent_found IS NOT true"))
    op.create_index("ix_registry_instances_started", "registry_instances", ["account_pk", "started_at", "id"])
    op.execute("""INSERT INTO registry_trace_stats
  (instance_id, account_pk, span_count, failed_count, invalid_count, first_start, last_end)
SELECT instance_id, min(account_pk), count(*), sum(CASE WHEN status = 'failed' THEN 1 ELSE 0 END),
       sum(CASE WHEN validation_status = 'invalid' THEN 1 ELSE 0 END), min(started_at),
       max(coalesce(finished_at, started_at))
FROM registry_spans GROUP BY instance_id""")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_POSTGRES_FUNCTION)
        for statement in _POSTGRES_TRIGGERS:
            op.execute(statement)
    else:
        for statement in _SQLITE_TRIGGERS:
            op.execute(statement)


def downgrade() -> None:
    for name in ("registry_trace_stats_insert", "registry_trace_stats_update", "registry_trace_stats_delete"):
        if op.get_bind().dialect.name == "postgresql":
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON registry_spans")
        else:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS registry_trace_stats_apply()")
    op.drop_index("ix_registry_instances_started", table_name="registry_instances")
    op.drop_index("ix_registry_spans_roots", table_name="registry_spans")
    op.drop_index("ix_registry_spans_tree", table_name="registry_spans")
    op.drop_table("registry_trace_stats")
