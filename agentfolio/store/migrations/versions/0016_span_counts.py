"""Span counts per account: ``registry_span_counts`` (see
``agentfolio.store.registry.span_counts``), kept by the code that writes spans, so the
span list answers ``item_count`` for its common filters (none, agent, status,
validation status, and any mix of them) from a few rows instead of counting spans.

The upgrade computes them from the spans stored: the finest key (agent, status,
validation status) counted in one pass over the spans, then every coarser key summed
from those rows, all in shard 0.  The downgrade drops the table (nothing else reads it).

Revision ID: 0016_span_counts
Revises: 0014b_spans_by_time
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016_span_counts"
down_revision = "0014b_spans_by_time"
branch_labels = None
depends_on = None

_COLUMNS = ("agent_id", "status", "validation_status")
_INSERT = "INSERT INTO registry_span_counts (account_pk, agent_id, status, validation_status, shard, spans) "


def _rolled_up(kept: tuple[bool, bool, bool]) -> str:
    """The counts of one coarser key (a column not ``kept`` reads ``''``: any value),
    summed from the finest ones."""
    chosen = [column if keep else "''" for column, keep in zip(_COLUMNS, kept, strict=True)]
    grouped = ", ".join(["account_pk", *(column for column, keep in zip(_COLUMNS, kept, strict=True) if keep)])
    return (_INSERT + f"SELECT account_pk, {', '.join(chosen)}, 0, sum(spans) FROM registry_span_counts "
            "WHERE agent_id <> '' AND status <> '' AND validation_status <> '' "
            f"GROUP BY {grouped}")


#: Every count computed again from the spans stored (into an empty table); bench/scale.py
#: runs them after copying rows in SQL.
RECOUNT = (
    _INSERT + "SELECT account_pk, agent_id, status, validation_status, 0, count(*) FROM registry_spans "
              "GROUP BY account_pk, agent_id, status, validation_status",
    *(_rolled_up((agent, status, validation))
      for agent in (True, False) for status in (True, False) for validation in (True, False)
      if not (agent and status and validation)),
)


def upgrade() -> None:
    op.create_table(
        "registry_span_counts",
        sa.Column("account_pk", sa.BigInteger, nullable=False),
        sa.Column("agent_id", sa.String(32), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("validation_status", sa.String(16), nullable=False),
        sa.Column("shard", sa.SmallInteger, nullable=False),
        sa.Column("spans", sa.BigInteger, nullable=False),
        sa.ForeignKeyConstraint(["account_pk"], ["accounts.pk"], ondelete="CASCADE",
                                name="fk_registry_span_counts_account_pk_accounts"),
        sa.PrimaryKeyConstraint("account_pk", "agent_id", "status", "validation_status", "shard",
                                name="pk_registry_span_counts"),
    )
    for statement in RECOUNT:
        op.execute(statement)


def downgrade() -> None:
    op.drop_table("registry_span_counts")
