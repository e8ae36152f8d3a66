"""Admission at the proxy: bearer-token auth from the HCP's environment reference, the body size
cap, and bounded in-flight, queued and per-client turns (401/413/429 as OpenAI errors).
Run: pytest tests/proxy/test_limits.py"""

import asyncio

import openai
import pytest
from starlette.requests import Request

from molt.hcp import parse_hcp
from molt.http_server import ServerThread
from molt.proxy.limits import Admission, Limits, Overloaded
from molt.proxy.routes import client_of
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
            with pytest.raises(openai.AuthenticationError, match="wrong API key"):
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


def test_one_client_cannot_take_every_slot():
    async def main():
        admission = Admission(Limits(max_in_flight=1, max_queued=4, max_per_client=2))
        release = asyncio.Event()

        async def turn(client: str):
            async with admission.turn(client):
                await release.wait()

        held = [asyncio.create_task(turn("a")) for _ in range(2)]  # one running, one queued
        await asyncio.sleep(0)
        with pytest.raises(Overloaded, match="this client has 2 turns running or queued"):
            async with admission.turn("a"):
                pass
        other = asyncio.create_task(turn("b"))  # the queue still has room for everyone else
        await asyncio.sleep(0)
        assert admission.waiting == 2 and admission.by_client == {"a": 2, "b": 1}
        release.set()
        await asyncio.gather(*held, other)
        assert admission.by_client == {} and admission.waiting == admission.in_flight == 0  # a client leaves with its last turn

    asyncio.run(main())


def test_a_client_is_its_token_else_its_address():
    def request(headers: dict, host: str) -> Request:
        return Request({"type": "http", "headers": [(k.encode(), v.encode()) for k, v in headers.items()], "client": (host, 5000)})

    alice, bob = client_of(request({"authorization": "Bearer alice-s3cret"}, "10.0.0.1")), client_of(request({"authorization": "Bearer bob-s3cret"}, "10.0.0.1"))
    assert alice != bob and "s3cret" not in alice + bob
    assert alice == client_of(request({"authorization": "Bearer alice-s3cret"}, "10.0.0.2"))  # one token, wherever it comes from
    assert client_of(request({}, "10.0.0.1")) == "address:10.0.0.1" != client_of(request({}, "10.0.0.2"))
