"""What the sessions list and the activity charts show, counted when a session is written:
per session its first user message, tokens, tool calls, failures and errors; per entry
its tokens, latency, tool calls, failures, errors and roles.

Sessions written before have ``facts_version`` NULL: the store counts them the first
time a list shows them (``Sessions.list``), so this migration reads no history.

Revision ID: 0006_session_facts
Revises: 0005_trace_pages
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_session_facts"
down_revision = "0005_trace_pages"
branch_labels = None
depends_on = None

SESSION_COUNTS = ("input_tokens", "output_tokens", "total_tokens", "usage_responses", "tool_calls", "failed_tools",
                  "errors")
ENTRY_COUNTS = ("input_tokens", "output_tokens", "total_tokens", "tool_calls", "failed_tools", "errors")


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("first_user_text", sa.String(200), nullable=True))
        for name in SESSION_COUNTS:
            batch.add_column(sa.Column(name, sa.BigInteger, nullable=False, server_default="0"))
        batch.add_column(sa.Column("last_request_at", sa.Float, nullable=True))
        batch.add_column(sa.Column("facts_version", sa.Integer, nullable=True))
    with op.batch_alter_table("entries") as batch:
        batch.add_column(sa.Column("latency", sa.Float, nullable=True))
        for name in ENTRY_COUNTS:
            batch.add_column(sa.Column(name, sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("roles", sa.String(100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("entries") as batch:
        for name in ("roles", *reversed(ENTRY_COUNTS), "latency"):
            batch.drop_column(name)
    with op.batch_alter_table("sessions") as batch:
        for name in ("facts_version", "last_request_at", *reversed(SESSION_COUNTS), "first_user_text"):
            batch.drop_column(name)
