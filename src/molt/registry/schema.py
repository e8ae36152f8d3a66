"""The registry's tables (SQLAlchemy 2 ORM). Alembic migrations in ``migrations/`` create them.

Every artefact is one immutable ``Record`` of a ``kind``; what it was made from are its parents
(``Edge`` rows with a role, e.g. an adapter revision's ``trained_by`` job). Aliases are the only
thing that changes: an ``Alias`` row names its record *and* the ``AliasMove`` that put it there,
both written in one transaction, so a reader never sees a target without the move that explains it.
"""

from datetime import datetime

from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

KINDS = ("base", "dataset", "job", "adapter", "router", "hcp", "pair", "evaluation")


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
