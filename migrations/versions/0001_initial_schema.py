"""Initial schema: tenants, tokens, stacks, resources, events, operations, steps, workers.

Revision ID: 0001
Revises:
Create Date: 2026-11-22 11:15:06.311297
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import engine.db.base

revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('tenants',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('created_at', engine.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_tenants')),
    sa.UniqueConstraint('name', name=op.f('uq_tenants_name'))
    )
    op.create_table('workers',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('host', sa.String(length=255), nullable=False),
    sa.Column('pid', sa.Integer(), nullable=False),
    sa.Column('started_at', engine.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('heartbeat_at', engine.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('stopped_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_workers'))
    )
    op.create_table('stacks',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('tenant_id', sa.String(length=36), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('status_reason', sa.Text(), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('template', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('parameters', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('environment', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('files', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('outputs', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('tags', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('disable_rollback', sa.Boolean(), nullable=False),
    sa.Column('timeout_mins', sa.Integer(), nullable=True),
    sa.Column('owner', sa.String(length=255), nullable=False),
    sa.Column('created_at', engine.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('deleted_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_stacks_tenant_id_tenants')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_stacks'))
    )
    with op.batch_alter_table('stacks', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_stacks_deleted_at'), ['deleted_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_stacks_tenant_id'), ['tenant_id'], unique=False)
        batch_op.create_index('uq_stacks_tenant_id_name_live', ['tenant_id', 'name'], unique=True, sqlite_where=sa.text('deleted_at IS NULL'), postgresql_where=sa.text('deleted_at IS NULL'))

    op.create_table('tokens',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('tenant_id', sa.String(length=36), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', engine.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('last_used_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('revoked_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_tokens_tenant_id_tenants'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_tokens')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_tokens_token_hash'))
    )
    with op.batch_alter_table('tokens', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_tokens_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('events',
    sa.Column('seq', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('stack_id', sa.String(length=36), nullable=False),
    sa.Column('resource_name', sa.String(length=255), nullable=False),
    sa.Column('physical_resource_id', sa.String(length=255), nullable=False),
    sa.Column('resource_type', sa.String(length=255), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('reason', sa.String(length=255), nullable=False),
    sa.Column('properties', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('created_at', engine.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['stack_id'], ['stacks.id'], name=op.f('fk_events_stack_id_stacks'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('seq', name=op.f('pk_events')),
    sa.UniqueConstraint('id', name=op.f('uq_events_id'))
    )
    with op.batch_alter_table('events', schema=None) as batch_op:
        batch_op.create_index('ix_events_stack_id_seq', ['stack_id', 'seq'], unique=False)

    op.create_table('operations',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('stack_id', sa.String(length=36), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('failure_reason', sa.Text(), nullable=True),
    sa.Column('lease_owner', sa.String(length=36), nullable=True),
    sa.Column('lease_expires_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('open_steps', sa.Integer(), nullable=False),
    sa.Column('deadline_at', engine.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('created_at', engine.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('finished_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['stack_id'], ['stacks.id'], name=op.f('fk_operations_stack_id_stacks'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_operations'))
    )
    with op.batch_alter_table('operations', schema=None) as batch_op:
        batch_op.create_index('ix_operations_state_lease_expires_at', ['state', 'lease_expires_at'], unique=False)
        batch_op.create_index('uq_operations_stack_id_unfinished', ['stack_id'], unique=True, sqlite_where=sa.text('finished_at IS NULL'), postgresql_where=sa.text('finished_at IS NULL'))

    op.create_table('resources',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('stack_id', sa.String(length=36), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('type', sa.String(length=255), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('status_reason', sa.Text(), nullable=False),
    sa.Column('physical_id', sa.String(length=255), nullable=True),
    sa.Column('properties', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('data', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('requires', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', engine.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['stack_id'], ['stacks.id'], name=op.f('fk_resources_stack_id_stacks'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_resources')),
    sa.UniqueConstraint('stack_id', 'name', name=op.f('uq_resources_stack_id_name'))
    )
    with op.batch_alter_table('resources', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_resources_physical_id'), ['physical_id'], unique=False)

    op.create_table('steps',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('operation_id', sa.String(length=36), nullable=False),
    sa.Column('stack_id', sa.String(length=36), nullable=False),
    sa.Column('resource_name', sa.String(length=255), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('prerequisites_left', sa.Integer(), nullable=False),
    sa.Column('started', sa.Boolean(), nullable=False),
    sa.Column('token', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('lease_owner', sa.String(length=36), nullable=True),
    sa.Column('lease_expires_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('next_poll_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('failure_reason', sa.Text(), nullable=True),
    sa.Column('started_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('finished_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['operation_id'], ['operations.id'], name=op.f('fk_steps_operation_id_operations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_steps')),
    sa.UniqueConstraint('operation_id', 'resource_name', name=op.f('uq_steps_operation_id_resource_name'))
    )
    with op.batch_alter_table('steps', schema=None) as batch_op:
        batch_op.create_index('ix_steps_state_next_poll_at', ['state', 'next_poll_at'], unique=False)

    op.create_table('step_dependencies',
    sa.Column('step_id', sa.Integer(), nullable=False),
    sa.Column('prerequisite_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['prerequisite_id'], ['steps.id'], name=op.f('fk_step_dependencies_prerequisite_id_steps'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['step_id'], ['steps.id'], name=op.f('fk_step_dependencies_step_id_steps'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('step_id', 'prerequisite_id', name=op.f('pk_step_dependencies'))
    )
    with op.batch_alter_table('step_dependencies', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_step_dependencies_prerequisite_id'), ['prerequisite_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('step_dependencies', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_step_dependencies_prerequisite_id'))

    op.drop_table('step_dependencies')
    with op.batch_alter_table('steps', schema=None) as batch_op:
        batch_op.drop_index('ix_steps_state_next_poll_at')

    op.drop_table('steps')
    with op.batch_alter_table('resources', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_resources_physical_id'))

    op.drop_table('resources')
    with op.batch_alter_table('operations', schema=None) as batch_op:
        batch_op.drop_index('uq_operations_stack_id_unfinished', sqlite_where=sa.text('finished_at IS NULL'), postgresql_where=sa.text('finished_at IS NULL'))
        batch_op.drop_index('ix_operations_state_lease_expires_at')

    op.drop_table('operations')
    with op.batch_alter_table('events', schema=None) as batch_op:
        batch_op.drop_index('ix_events_stack_id_seq')

    op.drop_table('events')
    with op.batch_alter_table('tokens', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_tokens_tenant_id'))

    op.drop_table('tokens')
    with op.batch_alter_table('stacks', schema=None) as batch_op:
        batch_op.drop_index('uq_stacks_tenant_id_name_live', sqlite_where=sa.text('deleted_at IS NULL'), postgresql_where=sa.text('deleted_at IS NULL'))
        batch_op.drop_index(batch_op.f('ix_stacks_tenant_id'))
        batch_op.drop_index(batch_op.f('ix_stacks_deleted_at'))

    op.drop_table('stacks')
    op.drop_table('workers')
    op.drop_table('tenants')
