"""What the proxy keeps: conversations, turn summaries, the experience log and feedback.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "conversations",
        sa.Column("key", sa.String(80), primary_key=True),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("data", sa.JSON, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, index=True),
    )
    op.create_table(
        "turn_summaries",
        sa.Column("turn_id", sa.String(40), primary_key=True),
        sa.Column("summary", sa.Text, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False, index=True),
    )
    op.create_table(
        "experience",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False, index=True),
        sa.Column("pair", sa.String(80)),
        sa.Column("specialist", sa.String(40), nullable=False, index=True),
        sa.Column("route", sa.JSON, nullable=False),
        sa.Column("view", sa.JSON),
        sa.Column("answer", sa.JSON),
        sa.Column("tool_results", sa.JSON),
        sa.Column("latency", sa.JSON, nullable=False),
    )
    op.create_table(
        "feedback",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("turn_id", sa.String(40), sa.ForeignKey("experience.id"), nullable=False, index=True),
        sa.Column("rating", sa.String(4), nullable=False),
        sa.Column("comment", sa.Text),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    for table in ("feedback", "experience", "turn_summaries", "conversations"):
        op.drop_table(table)
