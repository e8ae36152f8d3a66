"""Per-user memory: bi-temporal facts (valid from, recorded at), never updated in place.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "memory_facts",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(80), nullable=False),
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("valid_from", sa.DateTime(timezone=True), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("source", sa.String(20), nullable=False),
        sa.Column("source_turn", sa.String(80), nullable=True),
    )
    op.create_index("ix_memory_facts_user_key", "memory_facts", ["user_id", "key"])


def downgrade() -> None:
    op.drop_index("ix_memory_facts_user_key", "memory_facts")
    op.drop_table("memory_facts")
