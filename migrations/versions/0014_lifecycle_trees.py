"""The quota and placement lifecycle plugins count and place whole trees of nested stacks:
each of their rows names the root of its stack's tree, and a placement keeps the spread
group its resource belongs to.

Rows written before this revision get their root from the stacks' owners (a stack whose
owner row is gone, or a top-level one, is its own root); their spread group is unknown
until the resource is placed again.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 09:00:00

Must match ``plugins.lifecycle.quota.store.USAGE`` and
``plugins.lifecycle.placement.store.RESERVATIONS`` exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0014'
down_revision: str | None = '0013'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

QUOTA, PLACEMENT = 'lifecycle_quota_usage', 'lifecycle_placement_reservations'


def upgrade() -> None:
    for table in (QUOTA, PLACEMENT):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column('root_stack_id', sa.String(length=36),
                                          nullable=True))
    _fill_roots()
    with op.batch_alter_table(QUOTA, schema=None) as batch_op:
        batch_op.alter_column('root_stack_id', existing_type=sa.String(length=36),
                              nullable=False)
        batch_op.create_index('ix_lifecycle_quota_usage_root_stack_id', ['root_stack_id'],
                              unique=False)
    with op.batch_alter_table(PLACEMENT, schema=None) as batch_op:
        batch_op.alter_column('root_stack_id', existing_type=sa.String(length=36),
                              nullable=False)
        batch_op.add_column(sa.Column('spread_group', sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column('spread_racks', sa.Integer(), nullable=True))
        batch_op.create_index('ix_lifecycle_placement_reservations_root_stack_id',
                              ['root_stack_id'], unique=False)


def _fill_roots() -> None:
    """Each row's root, walking the stacks' owners (nesting is at most five deep)."""
    connection = op.get_bind()
    owners = {stack_id: owner_id for stack_id, owner_id in connection.execute(
        sa.text('SELECT id, owner_id FROM stacks WHERE owner_id IS NOT NULL'))}

    def root(stack_id: str) -> str:
        seen = {stack_id}
        while stack_id in owners and owners[stack_id] not in seen:
            stack_id = owners[stack_id]
            seen.add(stack_id)
        return stack_id

    for table in (QUOTA, PLACEMENT):
        connection.execute(sa.text(f'UPDATE {table} SET root_stack_id = stack_id'))
        nested = [stack_id for (stack_id,) in connection.execute(
            sa.text(f'SELECT DISTINCT stack_id FROM {table}')) if stack_id in owners]
        for stack_id in nested:
            connection.execute(
                sa.text(f'UPDATE {table} SET root_stack_id = :root WHERE stack_id = :stack'),
                {'root': root(stack_id), 'stack': stack_id})


def downgrade() -> None:
    with op.batch_alter_table(PLACEMENT, schema=None) as batch_op:
        batch_op.drop_index('ix_lifecycle_placement_reservations_root_stack_id')
        batch_op.drop_column('spread_racks')
        batch_op.drop_column('spread_group')
        batch_op.drop_column('root_stack_id')
    with op.batch_alter_table(QUOTA, schema=None) as batch_op:
        batch_op.drop_index('ix_lifecycle_quota_usage_root_stack_id')
        batch_op.drop_column('root_stack_id')
