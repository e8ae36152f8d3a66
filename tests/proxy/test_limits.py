"""Admission at the proxy: bearer-token auth from the HCP's environment reference, the body size
cap, and bounded in-flight/queued turns (401/413/429 as OpenAI errors).
Run: pytest tests/proxy/test_limits.py"""

import asyncio

import openai
import pytest

from molt.hcp import parse_hcp
from molt.http_server import ServerThread
from molt.proxy.limits import Admission, Limits, Overloaded
from molt.proxy.server import create_app
from scripted_stack import CODE_A, CODE_Q, hcp


def with_auth(engine_url: str):
    data = hcp(engine_url).model_dump(exclude_none=True)
    data["environment"]["api_key_env"] = "MOLT_TEST_PROXY_TOKEN"
    return parse_hcp(data)


def test_bearer_token_from_the_environment(engine_url, monkeypatch):
    monkeypatch.delenv("MOLT_TEST_PROXY_TOKEN", raising=False)
    with pytest.raises(ValueError, match=r"\$MOLT_TEST_PROXY_TOKEN, which is not set"):
        create_app(with_auth(engine_url))
    monkeypatch.setenv("MOLT_TEST_PROXY_TOKEN", "s3cret-token")
    with ServerThread(create_app(with_auth(engine_url))) as url:
        for key in ("wrong", "unused"):
            with pytest.raises(openai.AuthenticationError, match="bearer token"):
                openai.OpenAI(base_url=f"{url}/v1", api_key=key).chat.completions.create(model="molt", messages=[CODE_Q])
        reply = openai.OpenAI(base_url=f"{url}/v1", api_key="s3cret-token").chat.completions.create(model="molt", messages=[CODE_Q])
        assert reply.choices[0].message.content == CODE_A


def test_oversized_bodies_and_full_queues_are_refused(engine_url):
    app = create_app(hcp(engine_url), Limits(max_request_bytes=2000, max_in_flight=1, max_queued=0))
    with ServerThread(app) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        with pytest.raises(openai.APIStatusError, match="over the 2000-byte limit") as error:
            client.chat.completions.create(model="molt", messages=[{"role": "user", "content": "x" * 3000}])
        assert error.value.status_code == 413
        assert client.chat.completions.create(model="molt", messages=[CODE_Q]).choices[0].message.content == CODE_A

        asyncio.run(app.state.service.admission.slots.acquire())  # a free semaphore is taken without waiting on any loop
        with pytest.raises(openai.RateLimitError, match="retry later"):
            client.chat.completions.create(model="molt", messages=[CODE_Q])


def test_admission_queues_up_to_the_bound():
    async def main():
        admission = Admission(Limits(max_in_flight=1, max_queued=1))
        release = asyncio.Event()

        async def turn():
            async with admission.turn():
                await release.wait()

        first = asyncio.create_task(turn())
        await asyncio.sleep(0)
        second = asyncio.create_task(turn())  # queued
        await asyncio.sleep(0)
        assert admission.waiting == 1
        with pytest.raises(Overloaded):
            async with admission.turn():
                pass
        release.set()
        await asyncio.gather(first, second)
        assert admission.waiting == 0 and not admission.slots.locked()

    asyncio.run(main())
