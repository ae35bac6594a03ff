"""OTel span ids in time order: the epoch of each OTel trace (when it was first seen),
the time part of its spans' registry ids from now on (``otel_trace_epochs``, see
``agentfolio.store.otel_epochs``).

The traces already stored keep their spans' ids: each gets a row marked ``legacy_ids``
(its later spans are derived the old way, so they find their stored parents and a
re-sent span is still recognised), dated by its first instance's insertion.  A trace is
an instance made by the OTel receiver (agent version ``opentelemetry``) whose external
identifier is a trace id (32 characters); a row for anything else that matches only
means such a trace, should it ever arrive, keeps the old derivation.

The downgrade drops the table.  Spans stored since keep their (valid) ids, but the older
code derives the ids of a trace's later spans the old way: spans of a trace that straddles
the downgrade would not find their parents, and one re-sent would be stored again.

Revision ID: 0014_otel_trace_epochs
Revises: 0013_trace_stats_by_writers
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_otel_trace_epochs"
down_revision = "0013_trace_stats_by_writers"
branch_labels = None
depends_on = None

_LEGACY = """INSERT INTO otel_trace_epochs (account_pk, trace_id, epoch_ms, legacy_ids)
SELECT i.account_pk, i.external_identifier, min(i.inserted_at) / 1000, {true}
FROM registry_instances i JOIN registry_agent_versions v ON v.id = i.agent_version_id
WHERE v.name = 'opentelemetry' AND length(i.external_identifier) = 32
GROUP BY i.account_pk, i.external_identifier"""


def upgrade() -> None:
    op.create_table(
        "otel_trace_epochs",
        sa.Column("account_pk", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("trace_id", sa.String(32), nullable=False),
        sa.Column("epoch_ms", sa.BigInteger, nullable=False),
        sa.Column("legacy_ids", sa.Boolean, nullable=False),
        sa.PrimaryKeyConstraint("account_pk", "trace_id", name="pk_otel_trace_epochs"),
        sa.ForeignKeyConstraint(["account_pk"], ["accounts.pk"], ondelete="CASCADE",
                                name="fk_otel_trace_epochs_account_pk_accounts"),
    )
    true = "true" if op.get_bind().dialect.name == "postgresql" else "1"
    op.execute(_LEGACY.format(true=true))


def downgrade() -> None:
    op.drop_table("otel_trace_epochs")
