"""Continual mode on the tiny model: a running stack follows ``production``, so a promotion and
then a rollback happen under a load of concurrent chats; every request completes and the
experience log names exactly one pair for each turn. The learning worker starts a generation
once enough new turns are logged."""

import sys
import threading
import time

import httpx
from sqlalchemy import select
from sqlalchemy.orm import sessionmaker

from molt.engine.server import create_app as create_engine_app
from molt.evolve.continual import LearningWorker, ProductionWatcher, learning_state
from molt.hcp.v1 import Learning
from molt.http_server import ServerThread
from molt.lora.format import read_adapter
from molt.mint import ServiceClient
from molt.mint.checkpoints import resolve
from molt.models import load_model
from molt.proxy.server import create_app as create_proxy_app
from molt.registry import Registry
from molt.registry.database import open_database
from molt.registry.pairs import PRODUCTION, by_revision, pair_hcp, register_sft, with_adapter
from molt.registry.schema import ExperienceTurn
from molt.stack import engine_config, with_engine
from molt.train.sft import SFTConfig, run_sft


def another_agent(registry: Registry, pair: str, tmp_path) -> str:
    """A pair like ``pair`` with a new agent revision (two SFT steps on the tiny model)."""
    hcp = pair_hcp(registry, pair)
    start = "molt://" + hcp.specialist("agent").revision
    data = tmp_path / "agent-more.jsonl"
    data.write_text("".join('{"messages": [{"role": "user", "content": "ping %d"}, {"role": "assistant", "content": "pong"}]}\n' % i for i in range(8)))
    config = SFTConfig(adapter="agent-next", data=data, base_model="tiny", rank=read_adapter(resolve(start)).r, max_steps=2, batch_tokens=64, eval_fraction=0, train_unembed=False, init_from=start)
    adapter = register_sft(registry, config, run_sft(config, ServiceClient()), source="test")
    return with_adapter(registry, pair, adapter.id, label="agent").id


def wait_for(condition, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_promotion_and_a_rollback_under_load_drop_nothing_and_each_turn_has_one_pair(tiny_world, tmp_path):
    url, done = tiny_world
    registry = Registry(url)
    first = registry.resolve_alias(PRODUCTION)[0]
    second = another_agent(registry, first, tmp_path)
    served = by_revision(pair_hcp(registry, first))
    engine = ServerThread(create_engine_app(engine_config(served), load_model("tiny")))
    results: list[tuple[int, str]] = []
    stop = threading.Event()

    def chat_until_stopped(proxy: str, worker: int) -> None:
        with httpx.Client(base_url=proxy, timeout=120) as client:
            i = 0
            while not stop.is_set():
                label = ("agent", "chat", "molt")[i % 3]
                response = client.post("/v1/chat/completions", json={"model": label, "messages": [{"role": "user", "content": f"hello {worker}-{i}"}], "max_tokens": 4})
                results.append((response.status_code, response.headers.get("x-molt-turn-id", "")))
                i += 1

    with engine as engine_url:
        app = create_proxy_app(with_engine(served, f"{engine_url}/v1"), db=url, pair=first)
        service = app.state.service
        with ServerThread(app) as proxy:
            watcher = ProductionWatcher(service, url, poll_s=0.1, log=print).start()
            load = [threading.Thread(target=chat_until_stopped, args=(proxy, w)) for w in range(4)]
            for thread in load:
                thread.start()
            wait_for(lambda: len(results) >= 8)
            registry.move(PRODUCTION, second, "test", "promote under load")
            wait_for(lambda: service.loop.pair == second)
            promoted_at = len(results)
            wait_for(lambda: len(results) >= promoted_at + 8)
            registry.rollback(PRODUCTION, "test")
            wait_for(lambda: service.loop.pair == first)
            rolled_at = len(results)
            wait_for(lambda: len(results) >= rolled_at + 8)
            stop.set()
            for thread in load:
                thread.join()
            watcher.close()
            models = httpx.get(f"{engine_url}/v1/models").json()["data"]
    assert [code for code, _ in results] == [200] * len(results)
    second_agent = by_revision(pair_hcp(registry, second)).specialist("agent").adapter
    assert second_agent in {m["id"] for m in models} and second_agent != served.specialist("agent").adapter
    with sessionmaker(open_database(url))() as session:
        logged = {row.id: row.pair for row in session.scalars(select(ExperienceTurn))}
    turns = [turn for _, turn in results]
    assert len(set(turns)) == len(turns) and set(turns) <= set(logged)
    pairs = [logged[turn] for turn in turns]
    assert set(pairs) == {first, second}, "both pairs answered turns, and no turn names another"
    assert pairs[-1] == first  # after the rollback


def test_the_learning_worker_starts_a_generation_once_enough_new_turns_are_logged(tiny_world, tmp_path):
    url, done = tiny_world
    marker = tmp_path / "generation-ran"
    worker = LearningWorker(Learning(min_new_turns=2, poll_s=0.1), url, log=print, command=[sys.executable, "-c", f"open({str(marker)!r}, 'w').write('ran')"])
    assert worker.since() <= worker.mark()
    worker.start()
    time.sleep(0.3)
    assert not marker.exists()  # nothing new logged yet
    served = by_revision(pair_hcp(Registry(url), done.pair.id))
    with ServerThread(create_engine_app(engine_config(served), load_model("tiny"))) as engine_url:
        app = create_proxy_app(with_engine(served, f"{engine_url}/v1"), db=url, pair=done.pair.id)
        with ServerThread(app) as proxy:
            for i in range(2):
                httpx.post(f"{proxy}/v1/chat/completions", json={"model": "chat", "messages": [{"role": "user", "content": f"hi {i}"}], "max_tokens": 2}, timeout=60).raise_for_status()
            wait_for(marker.exists)
    worker.close()
    assert marker.read_text() == "ran" and learning_state("agent").is_file()
