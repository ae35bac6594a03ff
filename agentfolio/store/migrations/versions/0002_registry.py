"""Agent registry: agents, versions, schema versions, deployments and their tokens,
instances, spans (with validation results) and idempotency records.

Revision ID: 0002_registry
Revises: 0001_sessions
Create Date: 2025-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_registry"
down_revision = "0001_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('registry_accounts',
    sa.Column('account_pk', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('default_environment_id', sa.String(length=32), nullable=False),
    sa.Column('risk_profile', sa.LargeBinary(), nullable=True),
    sa.Column('inserted_at', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['account_pk'], ['accounts.pk'], name=('fk_registry_accounts_account_pk_accounts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('account_pk', name=('pk_registry_accounts')),
    sa.UniqueConstraint('id', name=('uq_registry_accounts_id'))
    )
    op.create_table('registry_agents',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('account_pk', sa.BigInteger(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('external_identifier', sa.String(length=255), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('owner_person_id', sa.String(length=64), nullable=True),
    sa.Column('risk_profile_id', sa.String(length=64), nullable=True),
    sa.Column('team_id', sa.String(length=64), nullable=True),
    sa.Column('current_version_id', sa.String(length=32), nullable=True),
    sa.Column('current_schema_version_id', sa.String(length=32), nullable=True),
    sa.Column('inserted_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['account_pk'], ['accounts.pk'], name=('fk_registry_agents_account_pk_accounts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=('pk_registry_agents')),
    sa.UniqueConstraint('account_pk', 'external_identifier', name=('uq_registry_agents_account_pk_external_identifier'))
    )
    op.create_index(('ix_registry_agents_account_pk_id'), 'registry_agents', ['account_pk', 'id'], unique=False)
    op.create_table('registry_environments',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('account_pk', sa.BigInteger(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('inserted_at', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['account_pk'], ['accounts.pk'], name=('fk_registry_environments_account_pk_accounts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=('pk_registry_environments')),
    sa.UniqueConstraint('account_pk', 'name', name=('uq_registry_environments_account_pk_name'))
    )
    op.create_table('registry_idempotency',
    sa.Column('account_pk', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('operation', sa.String(length=64), nullable=False),
    sa.Column('key', sa.String(length=128), nullable=False),
    sa.Column('body_hash', sa.String(length=64), nullable=False),
    sa.Column('status', sa.Integer(), nullable=False),
    sa.Column('response', sa.LargeBinary(), nullable=False),
    sa.Column('inserted_at', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['account_pk'], ['accounts.pk'], name=('fk_registry_idempotency_account_pk_accounts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('account_pk', 'operation', 'key', name=('pk_registry_idempotency'))
    )
    op.create_table('registry_agent_versions',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('account_pk', sa.BigInteger(), nullable=False),
    sa.Column('agent_id', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=True),
    sa.Column('external_identifier', sa.String(length=255), nullable=True),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('runtime_environment', sa.LargeBinary(), nullable=True),
    sa.Column('fingerprint', sa.String(length=64), nullable=False),
    sa.Column('inserted_at', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['account_pk'], ['accounts.pk'], name=('fk_registry_agent_versions_account_pk_accounts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['agent_id'], ['registry_agents.id'], name=('fk_registry_agent_versions_agent_id_registry_agents'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=('pk_registry_agent_versions')),
    sa.UniqueConstraint('agent_id', 'fingerprint', name=('uq_registry_agent_versions_agent_id_fingerprint'))
    )
    op.create_table('registry_deployments',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('account_pk', sa.BigInteger(), nullable=False),
    sa.Column('agent_id', sa.String(length=32), nullable=False),
    sa.Column('environment_id', sa.String(length=32), nullable=False),
    sa.Column('current_version_id', sa.String(length=32), nullable=True),
    sa.Column('current_schema_version_id', sa.String(length=32), nullable=True),
    sa.Column('inserted_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['account_pk'], ['accounts.pk'], name=('fk_registry_deployments_account_pk_accounts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['agent_id'], ['registry_agents.id'], name=('fk_registry_deployments_agent_id_registry_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['environment_id'], ['registry_environments.id'], name=('fk_registry_deployments_environment_id_registry_environments'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=('pk_registry_deployments')),
    sa.UniqueConstraint('agent_id', 'environment_id', name=('uq_registry_deployments_agent_id_environment_id'))
    )
    op.create_table('registry_instances',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('account_pk', sa.BigInteger(), nullable=False),
    sa.Column('agent_id', sa.String(length=32), nullable=False),
    sa.Column('agent_version_id', sa.String(length=32), nullable=False),
    sa.Column('schema_version_id', sa.String(length=32), nullable=True),
    sa.Column('environment_id', sa.String(length=32), nullable=False),
    sa.Column('deployment_id', sa.String(length=32), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('external_identifier', sa.String(length=255), nullable=True),
    sa.Column('purpose', sa.String(length=32), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=True),
    sa.Column('started_at', sa.BigInteger(), nullable=True),
    sa.Column('finished_at', sa.BigInteger(), nullable=True),
    sa.Column('termination_reason', sa.Text(), nullable=True),
    sa.Column('quality_payloads', sa.LargeBinary(), nullable=True),
    sa.Column('inserted_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['account_pk'], ['accounts.pk'], name=('fk_registry_instances_account_pk_accounts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['agent_id'], ['registry_agents.id'], name=('fk_registry_instances_agent_id_registry_agents'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=('pk_registry_instances')),
    sa.UniqueConstraint('agent_id', 'external_identifier', name=('uq_registry_instances_agent_id_external_identifier'))
    )
    op.create_index(('ix_registry_instances_account_pk_id'), 'registry_instances', ['account_pk', 'id'], unique=False)
    op.create_index(('ix_registry_instances_agent_id_id'), 'registry_instances', ['agent_id', 'id'], unique=False)
    op.create_table('registry_schema_versions',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('account_pk', sa.BigInteger(), nullable=False),
    sa.Column('agent_id', sa.String(length=32), nullable=False),
    sa.Column('external_identifier', sa.String(length=255), nullable=True),
    sa.Column('fingerprint', sa.String(length=64), nullable=False),
    sa.Column('span_type_schemas', sa.LargeBinary(), nullable=False),
    sa.Column('quality_schemas', sa.LargeBinary(), nullable=False),
    sa.Column('inserted_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['account_pk'], ['accounts.pk'], name=('fk_registry_schema_versions_account_pk_accounts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['agent_id'], ['registry_agents.id'], name=('fk_registry_schema_versions_agent_id_registry_agents'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=('pk_registry_schema_versions'))
    )
    op.create_index(('ix_registry_schema_versions_agent_id_external_identifier'), 'registry_schema_versions', ['agent_id', 'external_identifier'], unique=False)
    op.create_index(('ix_registry_schema_versions_agent_id_fingerprint'), 'registry_schema_versions', ['agent_id', 'fingerprint'], unique=False)
    op.create_table('registry_tokens',
    sa.Column('pk', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('account_pk', sa.BigInteger(), nullable=False),
    sa.Column('deployment_id', sa.String(length=32), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('prefix', sa.String(length=16), nullable=False),
    sa.Column('label', sa.String(length=200), nullable=True),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.Column('revoked_at', sa.Float(), nullable=True),
    sa.ForeignKeyConstraint(['account_pk'], ['accounts.pk'], name=('fk_registry_tokens_account_pk_accounts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['deployment_id'], ['registry_deployments.id'], name=('fk_registry_tokens_deployment_id_registry_deployments'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('pk', name=('pk_registry_tokens')),
    sa.UniqueConstraint('token_hash', name=('uq_registry_tokens_token_hash'))
    )
    op.create_table('registry_spans',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('account_pk', sa.BigInteger(), nullable=False),
    sa.Column('agent_id', sa.String(length=32), nullable=False),
    sa.Column('instance_id', sa.String(length=32), nullable=False),
    sa.Column('schema_version_id', sa.String(length=32), nullable=True),
    sa.Column('parent_span_id', sa.String(length=200), nullable=True),
    sa.Column('parent_found', sa.Boolean(), nullable=True),
    sa.Column('schema_name', sa.String(length=255), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('payload', sa.LargeBinary(), nullable=False),
    sa.Column('result_payload', sa.LargeBinary(), nullable=True),
    sa.Column('sensitive_encoding', sa.Boolean(), nullable=False),
    sa.Column('validation_status', sa.String(length=16), nullable=False),
    sa.Column('validation', sa.LargeBinary(), nullable=True),
    sa.Column('session_id', sa.String(length=200), nullable=True),
    sa.Column('started_at', sa.BigInteger(), nullable=True),
    sa.Column('finished_at', sa.BigInteger(), nullable=True),
    sa.Column('inserted_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['account_pk'], ['accounts.pk'], name=('fk_registry_spans_account_pk_accounts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['instance_id'], ['registry_instances.id'], name=('fk_registry_spans_instance_id_registry_instances'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=('pk_registry_spans'))
    )
    op.create_index(('ix_registry_spans_account_pk_id'), 'registry_spans', ['account_pk', 'id'], unique=False)
    op.create_index(('ix_registry_spans_account_pk_session_id'), 'registry_spans', ['account_pk', 'session_id'], unique=False)
    op.create_index(('ix_registry_spans_agent_id_id'), 'registry_spans', ['agent_id', 'id'], unique=False)
    op.create_index(('ix_registry_spans_instance_id_id'), 'registry_spans', ['instance_id', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index(('ix_registry_spans_instance_id_id'), table_name='registry_spans')
    op.drop_index(('ix_registry_spans_agent_id_id'), table_name='registry_spans')
    op.drop_index(('ix_registry_spans_account_pk_session_id'), table_name='registry_spans')
    op.drop_index(('ix_registry_spans_account_pk_id'), table_name='registry_spans')
    op.drop_table('registry_spans')
    op.drop_table('registry_tokens')
    op.drop_index(('ix_registry_schema_versions_agent_id_fingerprint'), table_name='registry_schema_versions')
    op.drop_index(('ix_registry_schema_versions_agent_id_external_identifier'), table_name='registry_schema_versions')
    op.drop_table('registry_schema_versions')
    op.drop_index(('ix_registry_instances_agent_id_id'), table_name='registry_instances')
    op.drop_index(('ix_registry_instances_account_pk_id'), table_name='registry_instances')
    op.drop_table('registry_instances')
    op.drop_table('registry_deployments')
    op.drop_table('registry_agent_versions')
    op.drop_table('registry_idempotency')
    op.drop_table('registry_environments')
    op.drop_index(('ix_registry_agents_account_pk_id'), table_name='registry_agents')
    op.drop_table('registry_agents')
    op.drop_table('registry_accounts')
