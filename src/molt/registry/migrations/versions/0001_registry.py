"""The registry: records, their parents, aliases and every alias move.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "records",
        sa.Column("id", sa.String(80), primary_key=True),
        sa.Column("kind", sa.String(20), nullable=False, index=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("content_hash", sa.String(64)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attributes", sa.JSON, nullable=False),
    )
    op.create_table(
        "edges",
        sa.Column("child_id", sa.String(80), sa.ForeignKey("records.id"), primary_key=True),
        sa.Column("parent_id", sa.String(80), sa.ForeignKey("records.id"), primary_key=True, index=True),
        sa.Column("role", sa.String(80), primary_key=True),
    )
    op.create_table(
        "alias_moves",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("alias", sa.String(80), nullable=False, index=True),
        sa.Column("from_id", sa.String(80), sa.ForeignKey("records.id")),
        sa.Column("to_id", sa.String(80), sa.ForeignKey("records.id"), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "aliases",
        sa.Column("name", sa.String(80), primary_key=True),
        sa.Column("record_id", sa.String(80), sa.ForeignKey("records.id"), nullable=False),
        sa.Column("move_id", sa.Integer, sa.ForeignKey("alias_moves.id"), nullable=False),
    )


def downgrade() -> None:
    for table in ("aliases", "alias_moves", "edges", "records"):
        op.drop_table(table)
