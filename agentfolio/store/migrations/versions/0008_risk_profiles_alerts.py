"""Risk profiles an account keeps (assigned to agents), and alerts counted until acknowledged.

Revision ID: 0008_risk_profiles_alerts
Revises: 0007_ingest
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_risk_profiles_alerts"
down_revision = "0007_ingest"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "registry_risk_profiles",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("account_pk", sa.BigInteger(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("profile", sa.LargeBinary(), nullable=False),
        sa.Column("inserted_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["account_pk"], ["accounts.pk"], ondelete="CASCADE",
                                name="fk_registry_risk_profiles_account_pk_accounts"),
        sa.PrimaryKeyConstraint("id", name="pk_registry_risk_profiles"),
        sa.UniqueConstraint("account_pk", "name", name="uq_registry_risk_profiles_account_pk_name"),
    )
    op.create_table(
        "registry_alerts",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("account_pk", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("severity", sa.String(length=16), nullable=False),
        sa.Column("subject_id", sa.String(length=32), nullable=False),
        sa.Column("agent_id", sa.String(length=32), nullable=False),
        sa.Column("instance_id", sa.String(length=32), nullable=True),
        sa.Column("span_id", sa.String(length=32), nullable=True),
        sa.Column("schema_version_id", sa.String(length=32), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("inserted_at", sa.BigInteger(), nullable=False),
        sa.Column("acknowledged_at", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(["account_pk"], ["accounts.pk"], ondelete="CASCADE",
                                name="fk_registry_alerts_account_pk_accounts"),
        sa.ForeignKeyConstraint(["agent_id"], ["registry_agents.id"], ondelete="CASCADE",
                                name="fk_registry_alerts_agent_id_registry_agents"),
        sa.PrimaryKeyConstraint("id", name="pk_registry_alerts"),
        sa.UniqueConstraint("account_pk", "kind", "subject_id", name="uq_registry_alerts_account_pk_kind_subject_id"),
    )
    op.create_index("ix_registry_alerts_account_pk_acknowledged_at", "registry_alerts",
                    ["account_pk", "acknowledged_at"])


def downgrade() -> None:
    op.drop_index("ix_registry_alerts_account_pk_acknowledged_at", table_name="registry_alerts")
    op.drop_table("registry_alerts")
    op.drop_table("registry_risk_profiles")
