"""Many conversations leave the proxy's memory and database within bounds: the newest
``cached_conversations`` in memory, the rest in the database, which retention holds within
``max_conversations`` / ``max_turns``. Resident memory levels off once the caches are warm
(measured here: +80 MiB over the first 2,000 conversations, then +0 over the next 500), so the
last two fifths of the run may add at most 30 MiB.
``MOLT_CONVERSATIONS=10000 pytest tests/proxy/test_memory_bound.py -s`` for a longer run. The engine's prefix cache is kept small: it is bounded by its own setting
and would otherwise dominate the figure. The conversations run in a fresh process, so that what
other tests left behind in pytest's process (threads, caches) does not enter the figure."""

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from molt.engine.config import EngineConfig
from molt.engine.server import create_app as create_engine_app
from molt.experience.log import PRUNE_EVERY
from molt.hcp import parse_hcp
from molt.http_server import ServerThread
from molt.models import load_model
from molt.proxy.limits import Limits
from molt.proxy.server import create_app
from molt.registry.database import open_database
from molt.registry.schema import ExperienceTurn, StoredConversation

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script too: the shared helpers live in tests/
from scripted_stack import hcp  # noqa: E402

CONVERSATIONS = int(os.environ.get("MOLT_CONVERSATIONS", 2500))
STEP = CONVERSATIONS // 5
RETENTION = {"max_conversations": 500, "cached_conversations": 150, "max_turns": 500}


def resident_mib() -> float:
    with open("/proc/self/status") as status:
        return int(status.read().split("VmRSS:")[1].split()[0]) / 1024


def rows(engine, table) -> int:
    with Session(engine) as session:
        return session.scalar(select(func.count()).select_from(table))


def converse_and_measure(folder: Path) -> list[tuple[int, float, int]]:
    """Holds CONVERSATIONS conversations with a proxy over a tiny engine; checks retention and
    returns (conversations, resident MiB, stored conversations) after each thousand."""
    db = f"sqlite:///{folder / 'molt.db'}"
    engine_config = EngineConfig(model="tiny", dtype="float32", adapters_root=folder, max_num_seqs=16, prefix_cache_mb=4)
    with ServerThread(create_engine_app(engine_config, load_model("tiny"))) as engine_url:
        data = hcp(f"{engine_url}/v1").model_dump(exclude_none=True)
        for specialist in data["specialists"]:
            specialist.pop("adapter", None)
        data["generation"]["max_tokens"] = 2
        data["experience"] = RETENTION
        app = create_app(parse_hcp(data), Limits(max_in_flight=16, max_queued=1000, max_per_client=1000), summaries=False, db=db)
        database = open_database(db)
        figures = []
        with ServerThread(app) as url:

            async def converse() -> None:
                gate = asyncio.Semaphore(16)
                async with httpx.AsyncClient(base_url=url, timeout=60) as http:

                    async def one(i: int) -> None:
                        async with gate:
                            body = {"model": "chat", "messages": [{"role": "user", "content": f"Conversation {i}: hello there."}]}
                            response = await http.post("/v1/chat/completions", json=body)
                            assert response.status_code == 200, response.text

                    for start in range(0, CONVERSATIONS, STEP):
                        await asyncio.gather(*(one(i) for i in range(start, min(CONVERSATIONS, start + STEP))))
                        figures.append((start + STEP, resident_mib(), rows(database, StoredConversation)))
                        print(f"{start + STEP} conversations: resident {figures[-1][1]:.0f} MiB, stored {figures[-1][2]}", file=sys.stderr)

            asyncio.run(converse())
            assert len(app.state.service.store) == RETENTION["cached_conversations"]  # memory holds the newest only
            for _, _, stored in figures:  # retention runs as the log is written
                assert stored <= RETENTION["max_conversations"] + PRUNE_EVERY + 16
        assert rows(database, StoredConversation) == RETENTION["max_conversations"]  # a clean stop prunes to the bound
        assert rows(database, ExperienceTurn) == RETENTION["max_turns"]
    return figures


def test_many_conversations_stay_within_memory_and_retention(tmp_path):
    # Two malloc arenas: under 16 concurrent requests glibc otherwise opens new arenas whenever
    # threads contend, at no fixed point of the run, and each adds resident pages that are no leak.
    env = {**os.environ, "MALLOC_ARENA_MAX": "2"}
    run = subprocess.run([sys.executable, __file__, str(tmp_path)], capture_output=True, text=True, timeout=1200, env=env)
    print(run.stderr[-4000:])
    assert run.returncode == 0, run.stderr[-4000:]
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(figures) == -(-CONVERSATIONS // STEP)
    warm = figures[max(0, len(figures) - 3)][1]  # after the first three fifths
    print(f"resident memory: {figures[0][1]:.0f} MiB after {STEP:,} conversations, {warm:.0f} after {figures[max(0, len(figures) - 3)][0]:,}, {figures[-1][1]:.0f} after {CONVERSATIONS:,}")
    assert figures[-1][1] - warm < 30


if __name__ == "__main__":
    print(json.dumps(converse_and_measure(Path(sys.argv[1]))))
