"""The registry's tables (SQLAlchemy 2 ORM). Alembic migrations in ``migrations/`` create them.

Every artefact is one immutable ``Record`` of a ``kind``; what it was made from are its parents
(``Edge`` rows with a role, e.g. an adapter revision's ``trained_by`` job). Aliases are the only
thing that changes: an ``Alias`` row names its record *and* the ``AliasMove`` that put it there,
both written in one transaction, so a reader never sees a target without the move that explains it.
"""

from datetime import datetime

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

KINDS = ("base", "dataset", "job", "adapter", "router", "hcp", "pair", "evaluation", "tool")


class Base(DeclarativeBase):
    pass


class Record(Base):
    __tablename__ = "records"

    id: Mapped[str] = mapped_column(String(80), primary_key=True)
    """``<kind>-<16 hex>``: from the content for artefacts, so registering the same content twice
    yields the same record; random for events (jobs, evaluations)."""
    kind: Mapped[str] = mapped_column(String(20), index=True)
    name: Mapped[str] = mapped_column(String(200))
    content_hash: Mapped[str | None] = mapped_column(String(64))
    """sha256 of the files (adapters, routers, datasets) or text (HCP) the record stands for."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    attributes: Mapped[dict] = mapped_column(JSON)
    parents: Mapped[list["Edge"]] = relationship(foreign_keys="Edge.child_id", lazy="selectin", order_by="Edge.role")


class Edge(Base):
    __tablename__ = "edges"

    child_id: Mapped[str] = mapped_column(ForeignKey("records.id"), primary_key=True)
    parent_id: Mapped[str] = mapped_column(ForeignKey("records.id"), primary_key=True, index=True)
    role: Mapped[str] = mapped_column(String(80), primary_key=True)


class AliasMove(Base):
    __tablename__ = "alias_moves"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    alias: Mapped[str] = mapped_column(String(80), index=True)
    from_id: Mapped[str | None] = mapped_column(ForeignKey("records.id"))
    to_id: Mapped[str] = mapped_column(ForeignKey("records.id"))
    actor: Mapped[str] = mapped_column(String(200))
    """Who or what moved it: a user name, ``molt specialists bootstrap``, ``molt evolve``…"""
    reason: Mapped[str] = mapped_column(Text)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Alias(Base):
    __tablename__ = "aliases"

    name: Mapped[str] = mapped_column(String(80), primary_key=True)
    record_id: Mapped[str] = mapped_column(ForeignKey("records.id"))
    move_id: Mapped[int] = mapped_column(ForeignKey("alias_moves.id"))


# -- what the proxy keeps: conversations, summaries, the experience log (migration 0002) ---------


class StoredConversation(Base):
    """A conversation snapshot the proxy can continue: a chat history's fingerprint or a
    Responses-API response id → its turns (JSON)."""

    __tablename__ = "conversations"

    key: Mapped[str] = mapped_column(String(80), primary_key=True)
    kind: Mapped[str] = mapped_column(String(10))
    """``chat`` (keyed by the history's fingerprint) or ``response`` (by response id)."""
    data: Mapped[dict] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


class TurnSummary(Base):
    """A turn's summary, written when the summary hop finishes (after the snapshot was stored)."""

    __tablename__ = "turn_summaries"

    turn_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    summary: Mapped[str] = mapped_column(Text)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


class ExperienceTurn(Base):
    """One turn the proxy served: who answered and why, what it saw, what it said, how long each hop took."""

    __tablename__ = "experience"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    """The turn id, sent to the client in the ``x-molt-turn-id`` header (for feedback)."""
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    pair: Mapped[str | None] = mapped_column(String(80))
    """The registry pair served, when the stack serves one."""
    specialist: Mapped[str] = mapped_column(String(40), index=True)
    route: Mapped[dict] = mapped_column(JSON)
    """kind, reason, scores."""
    view: Mapped[dict | None] = mapped_column(JSON)
    """The specialist's own view, ``{"messages": [...], "tools": [...] or None}`` (None when the HCP marks ``view`` private)."""
    answer: Mapped[dict | None] = mapped_column(JSON)
    """The assistant message, tool calls included (None when private)."""
    tool_results: Mapped[list | None] = mapped_column(JSON)
    """Tool results this turn carried back to the specialist (None when private)."""
    latency: Mapped[dict] = mapped_column(JSON)
    """Seconds per hop: route, summary_wait, answer, turn."""


class SurfaceState(Base):
    """What the user entered in a UI surface (its data model), per conversation and surface, so a
    reloaded page shows it again (migration 0003). Values of private (NoAI) inputs are not sent here."""

    __tablename__ = "surface_state"

    conversation: Mapped[str] = mapped_column(String(80), primary_key=True)
    surface: Mapped[str] = mapped_column(String(200), primary_key=True)
    data: Mapped[dict] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


class MemoryFact(Base):
    """One fact about one user (migration 0004), bi-temporal: when it became true (``valid_from``)
    and when molt learned it (``recorded_at``). Rows are never updated: a change is a new row, the
    newest valid one is the fact, the others are its history (``molt.harness.memory``)."""

    __tablename__ = "memory_facts"
    __table_args__ = (Index("ix_memory_facts_user_key", "user_id", "key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    user_id: Mapped[str] = mapped_column(String(80))
    key: Mapped[str] = mapped_column(String(200))
    """What the fact is about, normalised ("home city")."""
    value: Mapped[str] = mapped_column(Text)
    valid_from: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    recorded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    source: Mapped[str] = mapped_column(String(20))
    """``conversation`` (extracted from a turn) or ``user`` (said or corrected through ``/v1/memory``)."""
    source_turn: Mapped[str | None] = mapped_column(String(80))
    """The experience turn it was extracted from."""


class Feedback(Base):
    __tablename__ = "feedback"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    turn_id: Mapped[str] = mapped_column(ForeignKey("experience.id"), index=True)
    rating: Mapped[str] = mapped_column(String(4))
    """``up`` or ``down``."""
    comment: Mapped[str | None] = mapped_column(Text)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
