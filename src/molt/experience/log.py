"""The experience log: every turn the proxy serves, with the user's feedback, kept within the
HCP's retention; the raw material of the next training round (``molt experience export``).

A logged turn names the pair served, the specialist chosen with the router's reason and scores,
the specialist's own-view messages, its answer (tool calls included), the tool results it was
given, and seconds per hop. Fields the HCP marks private are never stored.
"""

import asyncio
import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

from sqlalchemy import Engine, delete, func, select
from sqlalchemy.orm import Session, sessionmaker

from molt.experience.conversations import DurableConversations
from molt.experience.surfaces import SurfaceStates
from molt.harness.memory import Memory
from molt.experience.writer import BackgroundWriter
from molt.hcp.v1 import Experience
from molt.registry.database import for_writing, open_database
from molt.registry.registry import as_utc
from molt.registry.schema import ExperienceTurn, Feedback, StoredConversation, SurfaceState, TurnSummary
from molt.router import RouteDecision

RATINGS = ("up", "down")
PRIVATE = "[private]"
PRUNE_EVERY = 200
"""Writes between two retention passes: the database exceeds its bounds by at most this many rows."""


class UnknownTurn(KeyError):
    """Feedback for a turn id the log does not hold (never served, or past retention)."""


class ExperienceLog:
    def __init__(self, engine: Engine, writer: BackgroundWriter, settings: Experience, pair: str | None = None):
        self.settings, self.writer, self.pair = settings, writer, pair
        self.session = sessionmaker(for_writing(engine))

    async def record(self, turn_id: str, decision: RouteDecision, view: dict, answer: dict, tool_results: list, latency: dict, pair: str | None = None) -> None:
        """``pair``: the pair that answered the turn (default: the one this log was opened for)."""
        private = set(self.settings.private)
        view = {**view, "messages": [hidden(m, private) for m in view["messages"]]}
        row = dict(
            id=turn_id, at=datetime.now(timezone.utc), pair=pair or self.pair, specialist=decision.label,
            route={"kind": decision.kind, "reason": decision.reason, "scores": decision.scores},
            view=None if "view" in private else view, answer=None if "answer" in private else answer,
            tool_results=None if "tool_results" in private else tool_results, latency={k: round(v, 4) for k, v in latency.items()},
        )
        row = json.loads(json.dumps(row, default=str)) | {"at": row["at"]}
        await self.writer.submit(lambda session: session.merge(ExperienceTurn(**row)))

    async def feedback(self, turn_id: str, rating: str, comment: str | None) -> None:
        """Attach feedback to a logged turn. A turn just served may still be on the writer's
        queue: when it is not found, wait for what was queued before, then look again."""
        if rating not in RATINGS:
            raise ValueError(f"rating must be one of {', '.join(RATINGS)}, not {rating!r}")
        comment = None if "comment" in self.settings.private else comment
        if not await asyncio.to_thread(self._add_feedback, turn_id, rating, comment):
            await self.writer.aflush()
            if not await asyncio.to_thread(self._add_feedback, turn_id, rating, comment):
                raise UnknownTurn(turn_id)

    def _add_feedback(self, turn_id: str, rating: str, comment: str | None) -> bool:
        with self.session.begin() as session:
            if session.get(ExperienceTurn, turn_id) is None:
                return False
            session.add(Feedback(turn_id=turn_id, rating=rating, comment=comment, at=datetime.now(timezone.utc)))
            return True


def hidden(message: dict, private: set[str]) -> dict:
    """A view message with what the HCP marks private blanked: tool results, and the
    specialist's own earlier answers (text and call arguments)."""
    if message.get("role") == "tool" and "tool_results" in private:
        return {**message, "content": PRIVATE}
    if message.get("role") == "assistant" and "answer" in private:
        calls = [{**c, "function": {**c.get("function", {}), "arguments": PRIVATE}} for c in message.get("tool_calls") or []]
        return {**message, "content": PRIVATE, **({"tool_calls": calls} if calls else {})}
    return message


def prune(session: Session, settings: Experience, now: datetime | None = None) -> None:
    """Hold every table within the HCP's retention: by age, then by count (oldest first)."""
    cutoff = (now or datetime.now(timezone.utc)) - timedelta(days=settings.max_age_days)
    oldest_kept = _nth_newest(session, ExperienceTurn.at, settings.max_turns)
    cut = cutoff if oldest_kept is None else max(cutoff, as_utc(oldest_kept))
    old_turns = select(ExperienceTurn.id).where(ExperienceTurn.at < cut)
    session.execute(delete(Feedback).where(Feedback.turn_id.in_(old_turns)))
    session.execute(delete(ExperienceTurn).where(ExperienceTurn.id.in_(old_turns)))
    session.execute(delete(StoredConversation).where(StoredConversation.updated_at < cutoff))
    session.execute(delete(SurfaceState).where(SurfaceState.updated_at < cutoff))
    oldest_kept = _nth_newest(session, StoredConversation.updated_at, settings.max_conversations)
    if oldest_kept is not None:
        session.execute(delete(StoredConversation).where(StoredConversation.updated_at < oldest_kept))
    # a stored summary is needed only by a snapshot written before it: none older than the oldest snapshot
    oldest = session.scalar(select(func.min(StoredConversation.updated_at)))
    session.execute(delete(TurnSummary).where(TurnSummary.at < (oldest or datetime.now(timezone.utc))))


def _nth_newest(session: Session, column, n: int):
    """The value of ``column`` in the n-th newest row, or None when there are fewer rows."""
    return session.scalar(select(column).order_by(column.desc()).offset(n - 1).limit(1))


class ProxyState:
    """The proxy's durable state in one database: conversations, snapshots, the experience log,
    UI surface state and per-user memory (which retention leaves alone: a fact lasts until the
    user changes or forgets it)."""

    def __init__(self, settings: Experience, url: str | None = None, pair: str | None = None, replicated: bool = False):
        """``replicated``: one of several proxies on this database (``DurableConversations``)."""
        self.engine = open_database(url)
        self.writer = BackgroundWriter(self.engine, after_batch=self._retention)
        self.conversations = DurableConversations(self.engine, self.writer, "chat", settings.cached_conversations, replicated)
        self.snapshots = DurableConversations(self.engine, self.writer, "response", settings.cached_conversations, replicated)
        self.log = ExperienceLog(self.engine, self.writer, settings, pair)
        self.surfaces = SurfaceStates(self.engine, self.writer)
        self.memory = Memory(self.engine)
        self.settings = settings
        self._pruned_at = 0

    def _retention(self, session: Session, written: int) -> None:
        if written - self._pruned_at >= PRUNE_EVERY:
            self._pruned_at = written
            prune(session, self.settings)

    def close(self) -> None:
        """Write everything accepted, hold the tables within retention, close the database."""
        self.writer.close()
        with self.writer.session.begin() as session:
            prune(session, self.settings)
        self.engine.dispose()


def answer_fields(message: dict) -> dict:
    """The parts of an assistant message a training row keeps (role, content, tool calls; no ids, no nulls)."""
    return {k: v for k, v in message.items() if k in ("role", "content", "tool_calls") and v is not None}


def export(engine: Engine, since: datetime | None = None, specialist: str | None = None, rating: str | None = None) -> Iterator[dict]:
    """Logged turns as chat JSONL rows (the specialist's view, then its answer) that ``molt train
    sft`` reads; turns whose view or answer was private cannot be exported and are skipped (a
    view with private parts blanked is exported as stored)."""
    query = select(ExperienceTurn).order_by(ExperienceTurn.at)
    if since is not None:
        query = query.where(ExperienceTurn.at >= since)
    if specialist is not None:
        query = query.where(ExperienceTurn.specialist == specialist)
    if rating is not None:
        query = query.where(ExperienceTurn.id.in_(select(Feedback.turn_id).where(Feedback.rating == rating)))
    with sessionmaker(engine)() as session:
        for turn in session.scalars(query):
            if turn.view is None or turn.answer is None:
                continue
            answer = answer_fields(turn.answer)
            # only this turn's answer is a target: earlier answers and collapsed summaries are context
            context = [{**m, "trainable": False} if m.get("role") == "assistant" else m for m in turn.view["messages"]]
            row = {"messages": [*context, {**answer, "trainable": True}], "molt": {"turn": turn.id, "specialist": turn.specialist, "at": as_utc(turn.at).isoformat()}}
            yield row | ({"tools": turn.view["tools"]} if turn.view.get("tools") else {})
