"""Ingest that stays flat as spans accumulate: idempotency records keep the digest and
the id of what a request made (no longer its whole answer) and expire by time; spans
waiting for their parent are found through a partial index; the conversations built
from OTel spans keep where they stand, so later spans extend them.

Revision ID: 0007_ingest
Revises: 0006_session_facts
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_ingest"
down_revision = "0006_session_facts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("registry_idempotency") as batch:
        batch.alter_column("response", existing_type=sa.LargeBinary(), nullable=True)
        batch.add_column(sa.Column("resource_id", sa.String(32), nullable=True))
    op.create_index("ix_registry_idempotency_inserted_at", "registry_idempotency", ["inserted_at"])
    op.create_table(
        "otel_conversations",
        sa.Column("account_pk", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("session_id", sa.String(200), nullable=False),
        sa.Column("state", sa.LargeBinary, nullable=False),
        sa.Column("session_version", sa.BigInteger, nullable=False),
        sa.Column("spans", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("account_pk", "session_id", name="pk_otel_conversations"),
        sa.ForeignKeyConstraint(["account_pk"], ["accounts.pk"], ondelete="CASCADE",
                                name="fk_otel_conversations_account_pk_accounts"),
    )
    op.create_index("ix_registry_spans_parent_missing", "registry_spans", ["account_pk", "parent_span_id"],
                    sqlite_where=sa.text("parent_found = 0"), postgresql_where=sa.text("parent_found = false"))


def downgrade() -> None:
    op.drop_table("otel_conversations")
    op.drop_index("ix_registry_spans_parent_missing", table_name="registry_spans")
    op.drop_index("ix_registry_idempotency_inserted_at", table_name="registry_idempotency")
    op.execute("DELETE FROM registry_idempotency WHERE response IS NULL")
    with op.batch_alter_table("registry_idempotency") as batch:
        batch.drop_column("resource_id")
        batch.alter_column("response", existing_type=sa.LargeBinary(), nullable=False)
