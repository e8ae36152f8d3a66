"""Load and soak on loopback: 200 concurrent streaming chat requests across four adapters and the
base, a quarter of the clients disconnecting mid-stream. Run: pytest tests/engine/test_soak.py"""

import asyncio
import random

import httpx
import openai

from conftest import ADAPTERS
from molt.engine.config import EngineConfig
from molt.engine.server import create_app
from molt.http_server import ServerThread
from molt.models import load_model

REQUESTS, DISCONNECT_SHARE = 200, 0.25


async def one_request(client: openai.AsyncOpenAI, rng: random.Random, i: int) -> str:
    model = rng.choice([*ADAPTERS, "tiny"])
    leave_after = rng.randint(1, 4) if rng.random() < DISCONNECT_SHARE else None
    stream = await client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": f"Request {i}: say something."}],
        max_tokens=rng.randint(4, 24),
        temperature=1.0,
        seed=i,
        stream=True,
    )
    chunks = []
    async for chunk in stream:
        chunks.append(chunk)
        if leave_after is not None and len(chunks) >= leave_after:
            await stream.close()
            return "disconnected"
    # a completed response is well-formed: one id, a role first, one finish reason at the end
    assert len({c.id for c in chunks}) == 1 and chunks[0].choices[0].delta.role == "assistant"
    reasons = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert reasons in (["length"], ["stop"]) and chunks[-1].choices[0].finish_reason == reasons[0]
    assert all(c.model == model for c in chunks)
    return "completed"


def test_200_concurrent_streams_with_disconnects(tiny_root):
    config = EngineConfig(model="tiny", adapters_root=tiny_root, lora_modules={n: n for n in ADAPTERS}, max_num_seqs=16)
    app = create_app(config, load_model("tiny"))
    engine = app.state.service.engine

    async def run(url: str) -> list[str]:
        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=120)
        rng = random.Random(0)
        return await asyncio.gather(*(one_request(client, random.Random(rng.random()), i) for i in range(REQUESTS)))

    with ServerThread(app) as url:
        outcomes = asyncio.run(run(url))
        assert httpx.get(url + "/health").status_code == 200
        # every slot and queue returns to its idle state once the clients are gone
        for _ in range(100):
            if not engine.has_work():
                break
            asyncio.run(asyncio.sleep(0.1))
        assert not engine.has_work() and not engine.decoding and engine.prefilling == []
        assert app.state.service.async_engine._queues == {}
        assert engine.prefix.num_bytes <= engine.prefix.budget_bytes
        after = openai.OpenAI(base_url=url + "/v1", api_key="unused").chat.completions.create(
            model="a0", messages=[{"role": "user", "content": "still there?"}], max_tokens=3
        )
        assert after.usage.completion_tokens == 3
    assert outcomes.count("completed") + outcomes.count("disconnected") == REQUESTS
    assert 20 <= outcomes.count("disconnected") <= 80
