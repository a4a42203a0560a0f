"""leases: who owns a delivery, a run or a shard, and until when (crash takeover)

Revision ID: 0004_leases
Revises: 0003
"""
from alembic import op
import sqlalchemy as sa


revision = '0004_leases'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('leases',
    sa.Column('name', sa.String(length=160), nullable=False),
    sa.Column('owner', sa.String(length=128), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('taken_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name')
    )
    op.create_index('ix_leases_expires_at', 'leases', ['expires_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_leases_expires_at', table_name='leases')
    op.drop_table('leases')
