"""Two replicas' conversation stores on one database: a put returns once committed, so the other
replica finds the conversation at once; a summary the first replica is still writing is awaited
from the database (and never written again by the replica that only read it); a summary whose
writer is gone gives way to the answer's start after the wait.
Run: pytest tests/experience/test_replica_summaries.py"""

import asyncio

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from molt.experience import conversations
from molt.experience.conversations import DurableConversations
from molt.experience.writer import BackgroundWriter
from molt.proxy.loop import Conversation, stand_in_summary
from molt.proxy.views import Turn
from molt.registry.database import open_database
from molt.registry.schema import TurnSummary

ANSWER = {"role": "assistant", "content": "The river town has a bridge."}


def replicas(url: str):
    engine = open_database(url)
    writers = [BackgroundWriter(engine), BackgroundWriter(engine)]
    return engine, writers, [DurableConversations(engine, w, "chat", 10, replicated=True) for w in writers]


def test_a_replica_awaits_the_summary_the_other_is_writing(db_url):
    engine, writers, (a, b) = replicas(db_url)

    async def main():
        release = asyncio.Event()

        async def summary() -> str:
            await release.wait()
            return "a bridge town"

        turn = Turn("chat", {"role": "user", "content": "Tell me about the river town."}, (ANSWER,), writing=asyncio.create_task(summary()))
        await a.put("history-1", Conversation(turns=(turn,)))
        found = await b.get("history-1")  # at once: the put returned after its commit
        assert found is not None and found.turns[0].summary is None
        reading = found.turns[0].writing
        await asyncio.sleep(0.3)
        assert not reading.done()  # still being written on the other replica
        release.set()
        assert await asyncio.wait_for(reading, 10) == "a bridge town"
        await b.put("history-2", found)  # b continues the conversation: it stores it, not the summary

    asyncio.run(main())
    for writer in writers:
        writer.close()
    with Session(engine) as session:
        assert session.execute(select(func.count()).select_from(TurnSummary)).scalar_one() == 1
    engine.dispose()


def test_a_summary_whose_writer_is_gone_gives_way_to_the_answer(db_url, monkeypatch):
    monkeypatch.setattr(conversations, "SUMMARY_WAIT_S", 0.5)
    engine, writers, (a, b) = replicas(db_url)

    async def main():
        never = asyncio.get_running_loop().create_future()  # the replica died mid-summary
        turn = Turn("chat", {"role": "user", "content": "Hi"}, (ANSWER,), writing=asyncio.ensure_future(never))
        await a.put("history-1", Conversation(turns=(turn,)))
        found = await b.get("history-1")
        assert await asyncio.wait_for(found.turns[0].writing, 10) == stand_in_summary(ANSWER)
        never.cancel()

    asyncio.run(main())
    for writer in writers:
        writer.close()
    engine.dispose()
