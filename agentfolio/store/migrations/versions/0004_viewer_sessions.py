"""Viewer sign-ins kept server-side: the cookie holds a random secret, not the API token,
so signing out and revoking the token end it.

Revision ID: 0004_viewer_sessions
Revises: 0003_blobs
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_viewer_sessions"
down_revision = "0003_blobs"
branch_labels = None
depends_on = None

BigKey = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "viewer_sessions",
        sa.Column("pk", BigKey, nullable=False, autoincrement=True),
        sa.Column("account_pk", sa.BigInteger, nullable=False),
        sa.Column("token_pk", sa.BigInteger, nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("pk", name="pk_viewer_sessions"),
        sa.ForeignKeyConstraint(["account_pk"], ["accounts.pk"], ondelete="CASCADE",
                                name="fk_viewer_sessions_account_pk_accounts"),
        sa.ForeignKeyConstraint(["token_pk"], ["tokens.pk"], ondelete="CASCADE",
                                name="fk_viewer_sessions_token_pk_tokens"),
        sa.UniqueConstraint("secret_hash", name="uq_viewer_sessions_secret_hash"),
    )
    op.create_index("ix_viewer_sessions_expires_at", "viewer_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_viewer_sessions_expires_at", table_name="viewer_sessions")
    op.drop_table("viewer_sessions")
