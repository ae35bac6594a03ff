"""The span list filtered by validation and sorted by start time reads one page from an
index, instead of sorting every span of that validation status (400 ms at 1,000,000
spans on SQLite without it).

Revision ID: 0010_invalid_spans_by_start
Revises: 0009_flat_reads
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

revision = "0010_invalid_spans_by_start"
down_revision = "0009_flat_reads"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_registry_spans_validation_started", "registry_spans",
                    ["account_pk", "validation_status", "started_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_registry_spans_validation_started", table_name="registry_spans")
