"""eval runs: relay-cli eval results, for the dashboard's trends

Revision ID: 0002
Revises: 0001
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('eval_runs',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('upstream', sa.Text(), nullable=True),
    sa.Column('from_ref', sa.String(length=128), nullable=False),
    sa.Column('to_ref', sa.String(length=128), nullable=False),
    sa.Column('agent', sa.String(length=16), nullable=False),
    sa.Column('regressions', sa.Integer(), nullable=False),
    sa.Column('test_recall', sa.Float(), nullable=True),
    sa.Column('cause_recall', sa.Float(), nullable=True),
    sa.Column('fraction_by_count', sa.Float(), nullable=True),
    sa.Column('fraction_by_duration', sa.Float(), nullable=True),
    sa.Column('apfdc', sa.Float(), nullable=True),
    sa.Column('selector_seconds', sa.Float(), nullable=True),
    sa.Column('report', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('eval_runs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_eval_runs_created_at'), ['created_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('eval_runs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_eval_runs_created_at'))
    op.drop_table('eval_runs')
