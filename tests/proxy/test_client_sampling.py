"""The client's ``max_tokens`` / ``max_completion_tokens`` / ``max_output_tokens``,
``temperature`` and ``top_p`` reach the engine, the length capped by the HCP's ``[generation]
max_tokens``; a field left out takes the HCP's value. Driven by the official openai client over a
live proxy and tiny engine. Run: pytest tests/proxy/test_client_sampling.py

It pins a bug where the proxy sent the HCP's generation settings whatever the client asked, so a
``model=molt`` answer at temperature 0 could not be compared with a direct engine call. It cannot
pass by chance: the HCP here has max_tokens=12, temperature=0.7 and top_p=0.9, every test asks for
something else, and the engine's requests are recorded as sent. The "chat" label has no adapter,
so the seeded random base answers; it does not emit its stop token within 12 tokens at
temperature 0 (deterministic), so the completion length is exactly the limit the engine got.
"""

import json

import httpx
import openai
import pytest

from molt.http_server import ServerThread
from molt.proxy.server import create_app
from scripted_stack import hcp

HELLO = {"role": "user", "content": "Say something about the sea."}


@pytest.fixture(scope="module")
def contract(engine_url):
    base = hcp(engine_url)
    generation = base.generation.model_copy(update={"max_tokens": 12, "temperature": 0.7, "top_p": 0.9})
    return base.model_copy(update={"generation": generation})


@pytest.fixture(scope="module")
def proxy(contract):
    """(proxy URL, the answer requests the proxy sent to the engine: a list, appended as they go)."""
    sent: list[dict] = []

    async def record(request: httpx.Request) -> None:
        if request.url.path.endswith("/chat/completions"):
            sent.append(json.loads(request.content))

    app = create_app(contract, summaries=False)  # no summary requests: every chat request is an answer
    with ServerThread(app) as url:
        app.state.service.loop.engine.event_hooks["request"].append(record)
        yield url, sent


@pytest.fixture
def client(proxy):
    return openai.OpenAI(base_url=f"{proxy[0]}/v1", api_key="unused")


@pytest.fixture
def sent(proxy):
    proxy[1].clear()
    return proxy[1]


def sampling(body: dict) -> tuple:
    return body["max_tokens"], body["temperature"], body["top_p"]


def test_chat_uses_the_clients_settings_and_matches_a_direct_engine_call(client, sent, contract, engine_url):
    reply = client.chat.completions.create(model="chat", messages=[HELLO], max_tokens=5, temperature=0, top_p=0.5)
    assert [sampling(b) for b in sent] == [(5, 0, 0.5)]
    assert reply.usage.completion_tokens == 5
    engine = openai.OpenAI(base_url=engine_url, api_key="unused")
    direct = engine.chat.completions.create(model="tiny", messages=[{"role": "system", "content": contract.system_prompt("chat")}, HELLO], max_tokens=5, temperature=0)
    assert reply.choices[0].message.content == direct.choices[0].message.content


def test_the_hcp_caps_the_length_and_fills_what_the_client_left_out(client, sent):
    reply = client.chat.completions.create(model="chat", messages=[HELLO], max_completion_tokens=1000)
    assert [sampling(b) for b in sent] == [(12, 0.7, 0.9)]
    assert reply.usage.completion_tokens == 12
    sent.clear()
    client.chat.completions.create(model="chat", messages=[HELLO], max_tokens=9, max_completion_tokens=3, temperature=0)
    assert [sampling(b) for b in sent] == [(3, 0, 0.9)]  # max_completion_tokens wins, as in OpenAI's API


def test_streaming_and_routed_turns_use_the_clients_settings(client, sent):
    chunks = list(client.chat.completions.create(model="molt", messages=[HELLO], max_tokens=4, temperature=0, stream=True, stream_options={"include_usage": True}))
    assert [sampling(b) for b in sent] == [(4, 0, 0.9)] and sent[0]["stream"] is True
    assert [c.usage.completion_tokens for c in chunks if c.usage] == [4]


def test_responses_use_max_output_tokens_temperature_and_top_p(client, sent):
    response = client.responses.create(model="chat", input=HELLO["content"], max_output_tokens=4, temperature=0, top_p=0.5)
    assert [sampling(b) for b in sent] == [(4, 0, 0.5)]
    assert response.usage.output_tokens == 4
    sent.clear()
    client.responses.create(model="chat", input=HELLO["content"], max_output_tokens=500)
    assert [sampling(b) for b in sent] == [(12, 0.7, 0.9)]


def test_out_of_range_settings_are_refused(client):
    with pytest.raises(openai.BadRequestError, match="max_tokens"):  # 400 naming the field, as OpenAI and the engine answer
        client.chat.completions.create(model="chat", messages=[HELLO], max_tokens=0)
