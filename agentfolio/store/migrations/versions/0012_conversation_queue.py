"""OTLP conversations after the answer: a durable queue of the sessions whose spans are
stored but not yet taken into their conversation, claimed by a worker in any server
process and finished in the session write's own transaction.

Revision ID: 0012_conversation_queue
Revises: 0011_shared_servers
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_conversation_queue"
down_revision = "0011_shared_servers"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "otel_work",
        sa.Column("account_pk", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("session_id", sa.String(200), nullable=False),
        sa.Column("enqueued_at", sa.BigInteger, nullable=False),
        sa.Column("generation", sa.BigInteger, nullable=False),
        sa.Column("lease_until", sa.BigInteger, nullable=False),
        sa.Column("claim", sa.String(32), nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("account_pk", "session_id", name="pk_otel_work"),
        sa.ForeignKeyConstraint(["account_pk"], ["accounts.pk"], ondelete="CASCADE",
                                name="fk_otel_work_account_pk_accounts"),
    )
    op.create_index("ix_otel_work_enqueued", "otel_work", ["enqueued_at"])
    op.create_table(
        "otel_work_spans",
        sa.Column("account_pk", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("session_id", sa.String(200), nullable=False),
        sa.Column("span_id", sa.String(32), nullable=False),
        sa.Column("llm", sa.Boolean, nullable=False),
        sa.PrimaryKeyConstraint("account_pk", "session_id", "span_id", name="pk_otel_work_spans"),
        sa.ForeignKeyConstraint(["account_pk"], ["accounts.pk"], ondelete="CASCADE",
                                name="fk_otel_work_spans_account_pk_accounts"),
    )


def downgrade() -> None:
    op.drop_table("otel_work_spans")
    op.drop_index("ix_otel_work_enqueued", table_name="otel_work")
    op.drop_table("otel_work")
