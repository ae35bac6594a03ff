"""Accounts, bearer tokens, sessions and their entries.

Revision ID: 0001_sessions
Revises:
Create Date: 2025-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_sessions"
down_revision = None
branch_labels = None
depends_on = None

BigKey = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("pk", BigKey, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("pk", name="pk_accounts"),
        sa.UniqueConstraint("name", name="uq_accounts_name"),
    )
    op.create_table(
        "tokens",
        sa.Column("pk", BigKey, autoincrement=True),
        sa.Column("account_pk", sa.BigInteger, nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("label", sa.String(200), nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("revoked_at", sa.Float, nullable=True),
        sa.PrimaryKeyConstraint("pk", name="pk_tokens"),
        sa.ForeignKeyConstraint(["account_pk"], ["accounts.pk"], ondelete="CASCADE",
                                name="fk_tokens_account_pk_accounts"),
        sa.UniqueConstraint("token_hash", name="uq_tokens_token_hash"),
    )
    op.create_table(
        "sessions",
        sa.Column("pk", BigKey, autoincrement=True),
        sa.Column("account_pk", sa.BigInteger, nullable=False),
        sa.Column("id", sa.String(200), nullable=False),
        sa.Column("agent", sa.String(200), nullable=True),
        sa.Column("schema_version", sa.String(50), nullable=True),
        sa.Column("head", sa.LargeBinary, nullable=False),
        sa.Column("history_at", sa.Integer, nullable=True),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("entry_count", sa.Integer, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.Column("first_activity_at", sa.Float, nullable=True),
        sa.Column("last_activity_at", sa.Float, nullable=True),
        sa.Column("source_hash", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("pk", name="pk_sessions"),
        sa.ForeignKeyConstraint(["account_pk"], ["accounts.pk"], ondelete="CASCADE",
                                name="fk_sessions_account_pk_accounts"),
        sa.UniqueConstraint("account_pk", "id", name="uq_sessions_account_pk_id"),
        sa.UniqueConstraint("account_pk", "source_hash", name="uq_sessions_account_pk_source_hash"),
    )
    op.create_index("ix_sessions_account_pk_updated_at", "sessions", ["account_pk", "updated_at"])
    op.create_index("ix_sessions_updated_at", "sessions", ["updated_at"])
    op.create_table(
        "entries",
        sa.Column("session_pk", sa.BigInteger, nullable=False),
        sa.Column("position", sa.Integer, nullable=False, autoincrement=False),
        sa.Column("kind", sa.String(100), nullable=True),
        sa.Column("created_at", sa.Float, nullable=True),
        sa.Column("body", sa.LargeBinary, nullable=False),
        sa.Column("blobs", sa.Text, nullable=True),
        sa.Column("text", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("session_pk", "position", name="pk_entries"),
        sa.ForeignKeyConstraint(["session_pk"], ["sessions.pk"], ondelete="CASCADE",
                                name="fk_entries_session_pk_sessions"),
    )


def downgrade() -> None:
    op.drop_table("entries")
    op.drop_index("ix_sessions_updated_at", table_name="sessions")
    op.drop_index("ix_sessions_account_pk_updated_at", table_name="sessions")
    op.drop_table("sessions")
    op.drop_table("tokens")
    op.drop_table("accounts")
