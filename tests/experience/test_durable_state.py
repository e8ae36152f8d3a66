"""The proxy's durable state on SQLite and on a real PostgreSQL server: conversations survive a new
process (summaries written after their snapshot included), memory holds only the newest, the
writer never loses what it accepted, retention holds the tables within the HCP's bounds.
Run: pytest tests/experience"""

import asyncio
import json
import time
from datetime import datetime, timedelta, timezone

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from molt.experience.conversations import DurableConversations
from molt.experience.log import ProxyState, prune
from molt.experience.writer import BackgroundWriter
from molt.hcp.v1 import Experience
from molt.proxy.loop import Conversation
from molt.proxy.views import Turn
from molt.registry.database import open_database
from molt.registry.schema import ExperienceTurn, Feedback, StoredConversation, TurnSummary
from molt.router import RouteDecision

USER = {"role": "user", "content": "What is the capital of France?"}
ANSWER = {"role": "assistant", "content": "Paris is the capital of France."}


def count(engine, table) -> int:
    with Session(engine) as session:
        return session.scalar(select(func.count()).select_from(table))


def test_a_conversation_continues_in_a_new_process_with_its_late_summary(db_url):
    async def first_process() -> Conversation:
        state = ProxyState(Experience(), db_url)
        summary_done = asyncio.Event()

        async def summarise() -> str:
            await summary_done.wait()
            return "The user asked for France's capital; it is Paris."

        turn = Turn("chat", USER, (ANSWER,), writing=asyncio.create_task(summarise()))
        conversation = Conversation(({"role": "system", "content": "Be brief."},), (turn,))
        await state.snapshots.put("resp_1", conversation)  # stored while its summary is still being written
        summary_done.set()
        await asyncio.sleep(0.05)
        unsummarised = Turn("coding", {"role": "user", "content": "Sort a list?"}, ({"role": "assistant", "content": "Use sorted(items). It returns a new list."},))
        await state.snapshots.put("resp_2", Conversation((), (unsummarised,)))  # a process killed before this summary
        state.close()
        return conversation

    before = asyncio.run(first_process())

    async def second_process() -> tuple[Conversation | None, Conversation | None, Conversation | None]:
        state = ProxyState(Experience(), db_url)
        found = await state.snapshots.get("resp_1"), await state.snapshots.get("resp_2"), await state.conversations.get("resp_1")
        state.close()
        return found

    again, stand_in, other_kind = asyncio.run(second_process())
    assert other_kind is None  # a response id is not a chat history
    assert again.system == before.system and again.turns[0].id == before.turns[0].id and again.turns[0].replies == (ANSWER,)
    assert again.turns[0].summary == "The user asked for France's capital; it is Paris."
    assert stand_in.turns[0].summary == "Use sorted(items). It returns a new list."  # the start of its answer, as for an adopted history


def test_memory_keeps_the_newest_and_the_database_the_rest(db_url):
    async def run() -> tuple[int, Conversation | None]:
        engine = open_database(db_url)
        writer = BackgroundWriter(engine)
        store = DurableConversations(engine, writer, "chat", cached=3)
        for i in range(10):
            await store.put(f"k{i}", Conversation((), (Turn("chat", {"role": "user", "content": f"q{i}"}, (ANSWER,), "s"),)))
        held = len(store)
        writer.flush()
        old = await store.get("k0")  # evicted from memory, read back
        writer.close()
        return held, old

    held, old = asyncio.run(run())
    assert held == 3 and old.turns[0].user["content"] == "q0" and old.turns[0].summary == "s"


def test_a_conversation_evicted_before_its_write_commits_is_still_found(db_url):
    async def run() -> tuple[Conversation | None, Conversation | None]:
        engine = open_database(db_url)
        writer = BackgroundWriter(engine)
        gate = asyncio.Event()
        loop = asyncio.get_running_loop()
        await writer.submit(lambda session: asyncio.run_coroutine_threadsafe(gate.wait(), loop).result())  # holds the writer
        store = DurableConversations(engine, writer, "chat", cached=1)
        first = Conversation((), (Turn("chat", USER, (ANSWER,), "s"),))
        await store.put("k0", first)
        await store.put("k1", Conversation())  # evicts k0 from memory; neither is written yet
        found = await store.get("k0")
        gate.set()
        await writer.aflush()
        store._memory.clear()
        again = await store.get("k0")  # now from the database
        writer.close()
        return found, again, first

    found, again, first = asyncio.run(run())
    assert found is first and again == first


def test_the_writer_applies_back_pressure_and_loses_nothing_it_accepted(db_url):
    engine = open_database(db_url)
    writer = BackgroundWriter(engine, capacity=4, batch=2)
    slow = lambda session: time.sleep(0.2)

    async def submit_many() -> float:
        for _ in range(3):
            await writer.submit(slow)
        start = time.perf_counter()
        for i in range(200):
            await writer.submit(lambda session, i=i: session.add(TurnSummary(turn_id=f"t{i}", summary=f"s{i}", at=datetime.now(timezone.utc))))
        return time.perf_counter() - start

    waited = asyncio.run(submit_many())
    writer.close()  # a clean stop writes everything accepted
    assert waited > 0.1  # the queue was full: submitting waited for room
    assert count(engine, TurnSummary) == 200 and writer.failed == 0


def test_retention_holds_every_table_within_the_hcp_bounds(db_url):
    engine = open_database(db_url)
    settings = Experience(max_conversations=5, max_turns=4, max_age_days=1)
    now = datetime.now(timezone.utc)
    with Session(engine) as session, session.begin():
        for i in range(12):
            at = now - timedelta(hours=i) - (timedelta(days=2) if i == 11 else timedelta())
            session.add(StoredConversation(key=f"c{i}", kind="chat", data={"system": [], "turns": [], "pending": None}, updated_at=at))
            session.add(ExperienceTurn(id=f"t{i}", at=at, pair=None, specialist="chat", route={}, view=None, answer=None, tool_results=None, latency={}))
            session.add(TurnSummary(turn_id=f"t{i}", summary="s", at=at))
        session.flush()
        session.add(Feedback(turn_id="t9", rating="up", comment=None, at=now))
        session.add(Feedback(turn_id="t1", rating="down", comment="no", at=now))
    with Session(engine) as session, session.begin():
        prune(session, settings, now)
    with Session(engine) as session:
        assert sorted(session.scalars(select(StoredConversation.key))) == ["c0", "c1", "c2", "c3", "c4"]
        assert sorted(session.scalars(select(ExperienceTurn.id))) == ["t0", "t1", "t2", "t3"]
        assert list(session.scalars(select(Feedback.turn_id))) == ["t1"]  # t9's went with its turn
        assert sorted(session.scalars(select(TurnSummary.turn_id))) == ["t0", "t1", "t2", "t3", "t4"]


def test_a_logged_turn_keeps_what_the_hcp_allows(db_url):
    earlier = [USER, {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "France"}'}}]}]
    result = {"role": "tool", "tool_call_id": "c1", "content": "capital: Paris"}

    async def run(private: list[str]) -> None:
        state = ProxyState(Experience(private=private), db_url, pair="pair-abc")
        decision = RouteDecision("chat", "scored: chat -0.1 vs coding -2.0", "scored", {"chat": -0.1, "coding": -2.0})
        view = {"messages": [*earlier, result], "tools": None}
        await state.log.record(f"turn-{len(private)}", decision, view, ANSWER, [result], {"route": 0.01, "answer": 0.5})
        await state.log.feedback(f"turn-{len(private)}", "up", "spot on")
        state.close()

    asyncio.run(run([]))
    asyncio.run(run(["view", "answer", "comment"]))
    asyncio.run(run(["answer", "tool_results"]))
    engine = open_database(db_url)
    with Session(engine) as session:
        full, private, blanked = (session.get(ExperienceTurn, f"turn-{n}") for n in (0, 3, 2))
        assert full.pair == "pair-abc" and full.route["scores"] == {"chat": -0.1, "coding": -2.0} and full.latency == {"route": 0.01, "answer": 0.5}
        assert full.view == {"messages": [*earlier, result], "tools": None} and full.answer == ANSWER and full.tool_results == [result]
        assert private.view is None and private.answer is None and private.specialist == "chat"
        # a private field is blanked inside the view too: the view holds earlier answers and results
        assert blanked.answer is None and blanked.tool_results is None and "Paris" not in json.dumps(blanked.view) and "France" not in json.dumps(blanked.view["messages"][1])
        assert blanked.view["messages"][0] == USER and blanked.view["messages"][2]["content"] == "[private]"
        comments = dict(session.execute(select(Feedback.turn_id, Feedback.comment)).all())
        assert comments == {"turn-0": "spot on", "turn-3": None, "turn-2": "spot on"}
