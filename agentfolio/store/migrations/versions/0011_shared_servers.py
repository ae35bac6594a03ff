"""Several servers on one database: files opened in the viewer are kept in the store (per
account, bounded, expiring), and background jobs are taken by one server per period.

Revision ID: 0011_shared_servers
Revises: 0010_invalid_spans_by_start
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_shared_servers"
down_revision = "0010_invalid_spans_by_start"
branch_labels = None
depends_on = None

BigKey = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "viewer_files",
        sa.Column("pk", BigKey, nullable=False, autoincrement=True),
        sa.Column("account_pk", sa.BigInteger, nullable=False),
        sa.Column("token", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(50), nullable=False),
        sa.Column("detected", sa.String(200), nullable=True),
        sa.Column("part", sa.Integer, nullable=False, server_default="0"),
        sa.Column("problem_count", sa.Integer, nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("opened_at", sa.Float, nullable=False),
        sa.Column("used_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("pk", name="pk_viewer_files"),
        sa.ForeignKeyConstraint(["account_pk"], ["accounts.pk"], ondelete="CASCADE",
                                name="fk_viewer_files_account_pk_accounts"),
        sa.ForeignKeyConstraint(["digest"], ["blobs.digest"], name="fk_viewer_files_digest_blobs"),
        sa.UniqueConstraint("token", name="uq_viewer_files_token"),
    )
    op.create_index("ix_viewer_files_account_pk_used_at", "viewer_files", ["account_pk", "used_at"])
    op.create_index("ix_viewer_files_expires_at", "viewer_files", ["expires_at"])
    op.create_index("ix_viewer_files_digest", "viewer_files", ["digest"])
    op.create_table(
        "background_jobs",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("lease_until", sa.Float, nullable=False),
        sa.Column("runner", sa.String(200), nullable=True),
        sa.Column("started_at", sa.Float, nullable=True),
        sa.Column("finished_at", sa.Float, nullable=True),
        sa.Column("runs", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_background_jobs"),
    )


def downgrade() -> None:
    op.drop_table("background_jobs")
    op.drop_index("ix_viewer_files_digest", table_name="viewer_files")
    op.drop_index("ix_viewer_files_expires_at", table_name="viewer_files")
    op.drop_index("ix_viewer_files_account_pk_used_at", table_name="viewer_files")
    op.drop_table("viewer_files")
