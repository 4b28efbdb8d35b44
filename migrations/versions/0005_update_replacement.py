"""Stack update: the resource an update replaced, its generation, each update step's
decision, and two steps (UPDATE and CLEANUP) per resource and operation.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 13:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0005'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')


def upgrade() -> None:
    with op.batch_alter_table('resources', schema=None) as batch_op:
        batch_op.add_column(sa.Column('replaced', JSON, nullable=True))
        batch_op.add_column(sa.Column('generation', sa.Integer(), nullable=False,
                                      server_default='0'))
    with op.batch_alter_table('steps', schema=None) as batch_op:
        batch_op.add_column(sa.Column('resource_action', sa.String(length=16), nullable=True))
        batch_op.drop_constraint('uq_steps_operation_id_resource_name', type_='unique')
        batch_op.create_unique_constraint(
            'uq_steps_operation_id_resource_name_action',
            ['operation_id', 'resource_name', 'action'])


def downgrade() -> None:
    with op.batch_alter_table('steps', schema=None) as batch_op:
        batch_op.drop_constraint('uq_steps_operation_id_resource_name_action',
                                 type_='unique')
        batch_op.create_unique_constraint('uq_steps_operation_id_resource_name',
                                          ['operation_id', 'resource_name'])
        batch_op.drop_column('resource_action')
    with op.batch_alter_table('resources', schema=None) as batch_op:
        batch_op.drop_column('generation')
        batch_op.drop_column('replaced')
