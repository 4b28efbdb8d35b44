"""Software configs and deployments: Heat's ``software_config`` and
``software_deployment`` tables, each row a tenant's own (``specs/software-config.rst``).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28 09:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import engine.db.base

revision: str = '0016'
down_revision: str | None = '0015'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    op.create_table('software_configs',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('tenant_id', sa.String(length=36), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=True),
    sa.Column('group', sa.String(length=255), nullable=True),
    sa.Column('config', JSON, nullable=False),
    sa.Column('created_at', engine.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'],
                            name=op.f('fk_software_configs_tenant_id_tenants'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_software_configs'))
    )
    op.create_index('ix_software_configs_tenant_id_created_at', 'software_configs',
                    ['tenant_id', 'created_at', 'id'], unique=False)
    op.create_table('software_deployments',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('tenant_id', sa.String(length=36), nullable=False),
    sa.Column('config_id', sa.String(length=36), nullable=False),
    sa.Column('server_id', sa.String(length=255), nullable=False),
    sa.Column('input_values', JSON, nullable=True),
    sa.Column('output_values', JSON, nullable=True),
    sa.Column('action', sa.String(length=255), nullable=True),
    sa.Column('status', sa.String(length=255), nullable=True),
    sa.Column('status_reason', sa.Text(), nullable=True),
    sa.Column('created_at', engine.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['config_id'], ['software_configs.id'],
                            name=op.f('fk_software_deployments_config_id_software_configs')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'],
                            name=op.f('fk_software_deployments_tenant_id_tenants'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_software_deployments'))
    )
    op.create_index(op.f('ix_software_deployments_config_id'), 'software_deployments',
                    ['config_id'], unique=False)
    op.create_index('ix_software_deployments_tenant_id_server_id', 'software_deployments',
                    ['tenant_id', 'server_id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_software_deployments_tenant_id_server_id',
                  table_name='software_deployments')
    op.drop_index(op.f('ix_software_deployments_config_id'), table_name='software_deployments')
    op.drop_table('software_deployments')
    op.drop_index('ix_software_configs_tenant_id_created_at', table_name='software_configs')
    op.drop_table('software_configs')
