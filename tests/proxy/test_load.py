"""The proxy under load: 200 concurrent streaming chats across the four specialists on a live
tiny engine, a fifth of the clients leaving after their first chunk, and a burst past the queue
bound. The server stays up, every completed stream is well-formed, every refused chat is a 429
with Retry-After, and afterwards every queue and in-flight structure is back at its baseline
(admission, summaries, engine sequences); resident memory after a second burst stays where the
first left it. Run: pytest tests/proxy/test_load.py -s (prints the figures)"""

import asyncio
import json
import random
import resource

import httpx
import pytest

from molt.engine.config import EngineConfig
from molt.engine.server import create_app as create_engine_app
from molt.hcp import parse_hcp
from molt.http_server import ServerThread
from molt.lora.synthetic import write_random_adapter
from molt.models import load_model
from molt.proxy.limits import Limits
from molt.proxy.server import create_app
from scripted_stack import hcp, write_scripted_adapters

CHATS = 200
LABELS = ("chat", "agent", "coding", "genui")
LIMITS = Limits(max_in_flight=16, max_queued=150, max_per_client=CHATS)  # all clients share one address here


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    root = tmp_path_factory.mktemp("load-adapters")
    write_scripted_adapters(root)
    tiny = load_model("tiny")
    for i, name in enumerate(("talker", "painter")):
        write_random_adapter(root / name, tiny.model, "tiny", seed=i)
    adapters = {"coder": "coder", "agent": "agent", "talker": "talker", "painter": "painter"}
    config = EngineConfig(model="tiny", dtype="float32", adapters_root=root, lora_modules=adapters, max_num_seqs=16)
    engine_app = create_engine_app(config, tiny)
    with ServerThread(engine_app) as engine_url:
        data = hcp(f"{engine_url}/v1").model_dump(exclude_none=True)
        for specialist in data["specialists"]:
            specialist["adapter"] = {"coding": "coder", "agent": "agent", "chat": "talker", "genui": "painter"}[specialist["label"]]
        data["generation"]["max_tokens"] = 12
        app = create_app(parse_hcp(data), LIMITS)
        with ServerThread(app) as url:
            yield url, app.state.service, engine_app.state.service.engine


async def one_chat(http: httpx.AsyncClient, burst: int, i: int, leave: bool) -> str:
    body = {"model": LABELS[i % 4], "messages": [{"role": "user", "content": f"Burst {burst}, chat {i}: tell me something."}], "stream": True}
    async with http.stream("POST", "/v1/chat/completions", json=body) as response:
        if response.status_code == 429:
            assert int(response.headers["retry-after"]) >= 1 and "retry later" in (await response.aread()).decode()
            return "refused"
        assert response.status_code == 200, await response.aread()
        lines = [line async for line in yielded(response, leave)]
    if leave:
        return "left"
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["molt"]["specialist"] == LABELS[i % 4] for c in chunks)
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0].get("finish_reason")] in (["stop"], ["length"])
    return "completed"


async def yielded(response: httpx.Response, leave: bool):
    async for line in response.aiter_lines():
        if line:
            yield line
            if leave:
                return  # the client goes away after its first chunk


def burst(url: str, seed: int) -> dict[str, int]:
    async def main():
        rng = random.Random(seed)
        limits = httpx.Limits(max_connections=CHATS + 10, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as http:
            outcomes = await asyncio.gather(*(one_chat(http, seed, i, rng.random() < 0.2) for i in range(CHATS)))
        return {kind: outcomes.count(kind) for kind in ("completed", "left", "refused")}

    return asyncio.run(main())


def settled(service, engine) -> dict:
    async def wait():
        for _ in range(600):
            stats = engine.stats()
            if not service.loop.summaries and service.admission.in_flight == 0 and stats.running == 0 and stats.waiting == 0:
                return
            await asyncio.sleep(0.05)

    asyncio.run(wait())
    stats = engine.stats()
    return {"in_flight": service.admission.in_flight, "queued": service.admission.waiting, "summaries": len(service.loop.summaries), "engine_running": stats.running, "engine_waiting": stats.waiting}


def test_two_hundred_streams_with_disconnects_and_a_burst_past_the_queue(stack):
    url, service, engine = stack
    baseline = settled(service, engine)
    first = burst(url, seed=0)
    after_first = settled(service, engine)
    rss_first = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    second = burst(url, seed=1)
    after_second = settled(service, engine)
    rss_second = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"\nfirst burst {first}, second {second}; peak RSS {rss_first / 1024:.0f} → {rss_second / 1024:.0f} MiB; stored conversations {len(service.store)}")
    for outcome in (first, second):
        assert sum(outcome.values()) == CHATS and outcome["refused"] >= CHATS - LIMITS.max_in_flight - LIMITS.max_queued
        assert outcome["completed"] > 0 and outcome["left"] > 0
    assert after_first == after_second == baseline == {"in_flight": 0, "queued": 0, "summaries": 0, "engine_running": 0, "engine_waiting": 0}
    assert httpx.get(f"{url}/health").json() == {"status": "ok"}
    assert rss_second - rss_first < 100 * 1024  # KiB: the second burst reuses what the first one grew
    assert len(service.store) == first["completed"] + second["completed"]  # left and refused chats stored nothing
