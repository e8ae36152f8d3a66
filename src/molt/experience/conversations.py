"""Durable conversations: the proxy's chat histories and Responses snapshots, in the database.

The newest ``cached`` conversations stay in memory as the objects themselves (with any summary
still being written); every put is also written to the database through the background writer,
so a restarted proxy continues any conversation it kept. A turn's summary is written when the
summary hop finishes, which may be after its snapshot was stored; reading a snapshot back fills
it in from ``turn_summaries`` (or, when the process died before the summary was done, with the
start of the turn's answer, as for a history the proxy never saw).

Replicas (``molt proxy serve --replicated``: several proxies on one database, a conversation
free to hop between them turn by turn) keep nothing another replica lacks: a put returns only
once committed, so the client's next turn finds it wherever it lands, and a turn whose summary
another replica is still writing is awaited from the database (as a single proxy awaits its own
summary task) until ``SUMMARY_WAIT_S`` after the conversation was stored.
"""

import asyncio
import logging
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone

from sqlalchemy import Engine, event, select
from sqlalchemy.orm import Session, sessionmaker

from molt.experience.writer import BackgroundWriter
from molt.proxy.loop import Conversation, stand_in_summary
from molt.proxy.views import Turn
from molt.registry.registry import as_utc
from molt.registry.schema import StoredConversation, TurnSummary

log = logging.getLogger("molt.proxy")

SUMMARY_WAIT_S = 120.0
"""How long after a conversation was stored a replica waits for a summary another one is writing."""
SUMMARY_POLL_S = 0.05


def encode(conversation: Conversation) -> dict:
    turns = [_turn(t) for t in conversation.turns]
    return {"system": list(conversation.system), "turns": turns, "pending": _turn(conversation.pending) if conversation.pending else None, "session": conversation.session}


def decode(data: dict, summaries: dict[str, str], awaited: frozenset[str] = frozenset()) -> Conversation:
    """``awaited``: turns whose missing summary is still being written (left None, not stood in for)."""
    def turn(d: dict, pending: bool = False) -> Turn:
        summary = d["summary"] or summaries.get(d["id"])
        if summary is None and not pending and d["id"] not in awaited:
            summary = stand_in_summary(d["replies"][-1]) if d["replies"] else ""
        return Turn(d["label"], d["user"], tuple(d["replies"]), summary, d["id"])

    pending = turn(data["pending"], pending=True) if data["pending"] else None
    session = {"session": data["session"]} if data.get("session") else {}  # rows stored before sessions get a new one
    return Conversation(tuple(data["system"]), tuple(turn(t) for t in data["turns"]), pending, **session)


def _turn(turn: Turn) -> dict:
    return {"id": turn.id, "label": turn.label, "user": turn.user, "replies": list(turn.replies), "summary": turn.summary or written(turn)}


def written(turn: Turn) -> str | None:
    """The summary a finished writing task produced, if any."""
    task = turn.writing
    if task is None or not task.done() or task.cancelled() or task.exception() is not None:
        return None
    return task.result()


@dataclass
class Unwritten:
    conversation: Conversation


class DurableConversations:
    def __init__(self, engine: Engine, writer: BackgroundWriter, kind: str, cached: int, replicated: bool = False):
        self.kind, self.cached, self.writer, self.replicated = kind, cached, writer, replicated
        self.session = sessionmaker(engine)
        self._memory: OrderedDict[str, Conversation] = OrderedDict()
        self._unwritten: dict[str, Unwritten] = {}
        """Puts not yet committed: found here after the memory cache evicted them. The writer
        thread removes an entry once its write commits, hence the lock."""
        self._lock = threading.Lock()
        self._watched: set[str] = set()
        self._reading: weakref.WeakSet[asyncio.Future] = weakref.WeakSet()
        """Tasks reading a summary another replica writes (that replica stores it, not this one)."""

    def __len__(self) -> int:
        """Conversations held in memory (the database holds more)."""
        return len(self._memory)

    async def get(self, key: str) -> Conversation | None:
        if key in self._memory:
            self._memory.move_to_end(key)
            return self._memory[key]
        with self._lock:
            entry = self._unwritten.get(key)
        if entry is not None:
            return entry.conversation
        loaded = await asyncio.to_thread(self._load, key)
        if loaded is None:
            return None
        conversation, deadline = loaded
        if deadline is not None:
            conversation = self._awaiting_summaries(conversation, deadline)
        self._remember(key, conversation)
        return conversation

    async def put(self, key: str, conversation: Conversation) -> None:
        self._remember(key, conversation)
        entry = Unwritten(conversation)
        with self._lock:
            self._unwritten[key] = entry
        data, now = encode(conversation), datetime.now(timezone.utc)

        def write(session: Session) -> None:
            session.merge(StoredConversation(key=key, kind=self.kind, data=data, updated_at=now))
            event.listen(session, "after_commit", lambda _: self._forget(key, entry), once=True)

        await self.writer.submit(write)
        if self.replicated:  # the client's next turn may reach another replica at once
            await self.writer.aflush()
        for turn in conversation.turns:
            if turn.summary is None and turn.writing is not None and turn.id not in self._watched and turn.writing not in self._reading:
                self._watched.add(turn.id)
                turn.writing.add_done_callback(lambda task, turn_id=turn.id: self._summary_done(turn_id, task))

    def _forget(self, key: str, entry: Unwritten) -> None:
        """The write of ``entry`` committed: the database has it (unless a newer put replaced it)."""
        with self._lock:
            if self._unwritten.get(key) is entry:
                del self._unwritten[key]

    def _summary_done(self, turn_id: str, task: asyncio.Task) -> None:
        self._watched.discard(turn_id)
        if task.cancelled() or task.exception() is not None or self.writer.closed:
            return
        summary, now = task.result(), datetime.now(timezone.utc)
        write = lambda session: session.merge(TurnSummary(turn_id=turn_id, summary=summary, at=now))
        if not self.writer.submit_nowait(write):
            asyncio.get_running_loop().run_in_executor(None, self.writer.queue.put, write)

    def _remember(self, key: str, conversation: Conversation) -> None:
        self._memory[key] = conversation
        self._memory.move_to_end(key)
        while len(self._memory) > self.cached:
            self._memory.popitem(last=False)

    def _load(self, key: str) -> tuple[Conversation, datetime | None] | None:
        """The stored conversation and, when a replica may still be writing some of its summaries,
        until when to wait for them."""
        with self.session() as session:
            row = session.get(StoredConversation, key)
            if row is None or row.kind != self.kind:
                return None
            turns = [*row.data["turns"], *([row.data["pending"]] if row.data["pending"] else [])]
            summaries = self._summaries(session, [t["id"] for t in turns if not t["summary"]])
            deadline = as_utc(row.updated_at) + timedelta(seconds=SUMMARY_WAIT_S)
            awaited = frozenset(t["id"] for t in row.data["turns"] if not t["summary"] and t["id"] not in summaries)
            if not (self.replicated and awaited and datetime.now(timezone.utc) < deadline):
                return decode(row.data, summaries), None
            return decode(row.data, summaries, awaited), deadline

    @staticmethod
    def _summaries(session: Session, turn_ids: list[str]) -> dict[str, str]:
        if not turn_ids:
            return {}
        return {s.turn_id: s.summary for s in session.scalars(select(TurnSummary).where(TurnSummary.turn_id.in_(turn_ids)))}

    def _awaiting_summaries(self, conversation: Conversation, deadline: datetime) -> Conversation:
        """Each turn without a summary gets a task that reads it once its replica has written it
        (the turn's answer stands in after ``deadline``), like the task of a turn answered here."""
        def reading(turn: Turn) -> Turn:
            task = asyncio.ensure_future(self._summary_of(turn, deadline))
            self._reading.add(task)
            return replace(turn, writing=task)

        return replace(conversation, turns=tuple(t if t.summary is not None else reading(t) for t in conversation.turns))

    async def _summary_of(self, turn: Turn, deadline: datetime) -> str:
        """The summary once it is in the database (polled, backing off to 1 s); the answer's start
        stands in after ``deadline`` or if the database fails, as when a summary hop fails."""
        pause = SUMMARY_POLL_S
        try:
            while datetime.now(timezone.utc) < deadline:
                found = await asyncio.to_thread(self._read_summary, turn.id)
                if found is not None:
                    return found
                await asyncio.sleep(pause)
                pause = min(pause * 1.5, 1.0)
        except Exception as e:  # noqa: BLE001 — a missing summary must never fail the turn
            log.warning("reading the summary of turn %s failed: %s", turn.id, e)
        return stand_in_summary(turn.replies[-1]) if turn.replies else ""

    def _read_summary(self, turn_id: str) -> str | None:
        with self.session() as session:
            return self._summaries(session, [turn_id]).get(turn_id)
