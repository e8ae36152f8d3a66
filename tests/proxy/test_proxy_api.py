"""The proxy's chat API driven by the official openai client, over a live tiny engine with
scripted specialists: routing with the specialist named in every answer, stateless history
resends, bypassing the router by model name, tool-call round trips, and errors.
Run: pytest tests/proxy/test_proxy_api.py"""

import asyncio
import json
import httpx
import openai
import pytest

from molt.http_server import ServerThread
from molt.proxy.server import create_app
from molt.proxy.store import fingerprint
from scripted_stack import CODE_A, CODE_Q, IDENTITY, WEATHER, WEATHER_Q, hcp


@pytest.fixture(scope="module")
def app(engine_url):
    return create_app(hcp(engine_url))


@pytest.fixture(scope="module")
def proxy(app):
    with ServerThread(app) as url:
        yield url


@pytest.fixture
def client(proxy):
    return openai.OpenAI(base_url=f"{proxy}/v1", api_key="unused")


def test_routes_answers_and_says_which_specialist(client):
    raw = client.chat.completions.with_raw_response.create(model="molt", messages=[CODE_Q])
    reply = raw.parse()
    assert reply.choices[0].message.content == CODE_A and reply.model == "molt"
    assert raw.headers["x-molt-specialist"] == "coding" and raw.headers["x-molt-route-reason"] == "guardrail: 'python'"
    assert reply.model_extra["molt"] == {"specialist": "coding", "reason": "guardrail: 'python'"}
    history = [CODE_Q, reply.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "Thanks!"}]
    follow = client.chat.completions.create(model="molt", messages=history)
    assert follow.model_extra["molt"]["specialist"] == "chat" and follow.model_extra["molt"]["reason"].startswith("abstained")


def test_a_specialist_name_bypasses_routing(client):
    reply = client.chat.completions.create(model="coding", messages=[CODE_Q])
    assert reply.choices[0].message.content == CODE_A
    assert reply.model_extra["molt"] == {"specialist": "coding", "reason": "specialist named by the client"}


def test_tool_call_round_trip_stays_on_the_calling_specialist(client):
    called = client.chat.completions.create(model="molt", messages=[WEATHER_Q], tools=[WEATHER])
    message = called.choices[0].message
    assert called.choices[0].finish_reason == "tool_calls" and message.tool_calls[0].function.name == "get_weather"
    assert called.model_extra["molt"]["specialist"] == "agent"
    follow = [WEATHER_Q, message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "4C"}]
    answered = client.chat.completions.create(model="molt", messages=follow, tools=[WEATHER])
    assert answered.model_extra["molt"] == {"specialist": "agent", "reason": "tool results go back to the adapter that called the tools"}


def test_unknown_history_is_adopted(client):
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"}, CODE_Q]
    reply = client.chat.completions.create(model="molt", messages=history)
    assert reply.model_extra["molt"]["specialist"] == "coding"


def test_models_health_and_errors(client, proxy):
    assert [m.id for m in client.models.list().data] == ["molt", "chat", "agent", "coding", "genui"]
    assert httpx.get(f"{proxy}/health").json() == {"status": "ok"}
    client.chat.completions.create(model="coding", messages=[CODE_Q])
    metrics = httpx.get(f"{proxy}/metrics").text
    assert 'molt_proxy_turns_total{specialist="coding",route="named"}' in metrics
    assert 'molt_proxy_hop_seconds_count{hop="answer"}' in metrics and "molt_proxy_turns_in_flight 0" in metrics
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.chat.completions.create(model="sales", messages=[CODE_Q])
    with pytest.raises(openai.BadRequestError, match="starts with a user message"):
        client.chat.completions.create(model="molt", messages=[CODE_Q, {"role": "assistant", "content": "x"}])


def test_streaming_passes_chunks_through_and_stores_the_turn_at_the_end(client, app):
    chunks = list(client.chat.completions.create(model="molt", messages=[CODE_Q], stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == CODE_A and all(c.model_extra["molt"]["specialist"] == "coding" for c in chunks)
    stored = asyncio.run(app.state.service.store.get(fingerprint([CODE_Q, {"role": "assistant", "content": CODE_A}])))
    assert stored is not None and [t.label for t in stored.turns] == ["coding"]
    calls = list(client.chat.completions.create(model="molt", messages=[WEATHER_Q], tools=[WEATHER], stream=True))
    deltas = [c.choices[0].delta for c in calls if c.choices and c.choices[0].delta.tool_calls]
    assert deltas and deltas[-1].tool_calls[0].function.name == "get_weather"
    assert [c.choices[0].finish_reason for c in calls if c.choices and c.choices[0].finish_reason] == ["tool_calls"]


FLAT_WEATHER = {"type": "function", "name": "get_weather", "parameters": WEATHER["function"]["parameters"]}


def test_responses_branch_from_one_response_without_seeing_each_other(client, app):
    first = client.responses.create(model="molt", input=CODE_Q["content"])
    assert first.output_text == CODE_A and first.model_extra["molt"]["specialist"] == "coding"
    left = client.responses.create(model="molt", input="Thanks, that helps.", previous_response_id=first.id)
    right = client.responses.create(model="molt", input="Tell me a joke.", previous_response_id=first.id)
    after_left = client.responses.create(model="chat", input="One more thing.", previous_response_id=left.id)
    users = lambda response: [t.user["content"] for t in asyncio.run(app.state.service.snapshots.get(response.id)).turns]
    assert users(left) == [CODE_Q["content"], "Thanks, that helps."]
    assert users(right) == [CODE_Q["content"], "Tell me a joke."]
    assert users(after_left) == [CODE_Q["content"], "Thanks, that helps.", "One more thing."]
    assert users(first) == [CODE_Q["content"]]  # snapshots are never changed by later turns
    with pytest.raises(openai.NotFoundError, match="no response"):
        client.responses.create(model="molt", input="hi", previous_response_id="resp_missing")


def test_responses_function_call_round_trip(client):
    called = client.responses.create(model="molt", input=WEATHER_Q["content"], tools=[FLAT_WEATHER])
    (call,) = [item for item in called.output if item.type == "function_call"]
    assert call.name == "get_weather" and called.model_extra["molt"]["specialist"] == "agent"
    answered = client.responses.create(
        model="molt", previous_response_id=called.id, tools=[FLAT_WEATHER],
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "4C"}],
    )
    assert answered.model_extra["molt"] == {"specialist": "agent", "reason": "tool results go back to the adapter that called the tools"}


def test_coming_back_to_a_specialist_prefills_only_the_new_tokens(client, renderer):
    """coding → chat → coding: on re-entry the coding adapter's view starts with the exact tokens
    it saw before, so the engine serves them from its prefix cache (blocks of 16 tokens)."""
    first = client.chat.completions.create(model="molt", messages=[CODE_Q])
    history = [CODE_Q, first.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "Thanks!"}]
    second = client.chat.completions.create(model="molt", messages=history)
    assert second.model_extra["molt"]["specialist"] == "chat"
    history += [second.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "How do I sort it in reverse?"}]
    third = client.chat.completions.create(model="coding", messages=history)
    seen = len(renderer.render([*IDENTITY, CODE_Q, {"role": "assistant", "content": CODE_A}]))
    cached = third.usage.prompt_tokens_details.cached_tokens
    assert cached >= seen // 16 * 16 > 0 and third.usage.prompt_tokens > seen  # everything seen before, from the cache


def test_responses_stream_with_the_official_client(client, app):
    """``responses.stream``: created → text deltas → completed, and function-call argument deltas;
    the streamed response is stored, so the next turn continues from it."""
    with client.responses.stream(model="molt", input=CODE_Q["content"]) as stream:
        events = [event.type for event in stream]
        text = stream.get_final_response()
    assert events[0] == "response.created" and events[-1] == "response.completed" and "response.output_text.delta" in events
    assert text.output_text == CODE_A and text.status == "completed"
    assert [t.label for t in asyncio.run(app.state.service.snapshots.get(text.id)).turns] == ["coding"]

    with client.responses.stream(model="molt", input=WEATHER_Q["content"], tools=[FLAT_WEATHER]) as stream:
        deltas = [event.delta for event in stream if event.type == "response.function_call_arguments.delta"]
        called = stream.get_final_response()
    (call,) = [item for item in called.output if item.type == "function_call"]
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Oslo"} and "".join(deltas) == call.arguments
    answered = client.responses.create(model="molt", previous_response_id=called.id, tools=[FLAT_WEATHER], input=[{"type": "function_call_output", "call_id": call.call_id, "output": "4C"}])
    assert answered.model_extra["molt"]["specialist"] == "agent"
