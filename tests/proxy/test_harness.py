"""The harness between the client and the specialists: tool calls to functions the client did
not offer, or outside the HCP's allowlist, never reach the client (they go back to the
specialist, then it answers with tools off); engine failures keep their meaning (the engine's
4xx stays the client's, an error mid-stream is an SSE error and no stored turn); bodies are
capped on the bytes received.
Run: pytest tests/proxy/test_harness.py"""

import json

import httpx
import openai
import pytest

from molt.hcp import parse_hcp
from molt.http_server import ServerThread
from molt.proxy.server import create_app
from scripted_engine import ScriptedEngine, call
from scripted_stack import WEATHER, hcp

TIMER = {"type": "function", "function": {"name": "set_timer", "parameters": {"type": "object", "properties": {"minutes": {"type": "integer"}}}}}
ASK = {"role": "user", "content": "What is the weather in Oslo?"}


def contract(engine_url: str, **tools):
    data = hcp(engine_url).model_dump(exclude_none=True)
    data["tools"].update(tools)
    return parse_hcp(data)


def proxy(engine_url: str, **tools):
    app = create_app(contract(engine_url, **tools))
    return app, ServerThread(app)


def client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)


def test_a_call_to_a_function_not_offered_goes_back_to_the_specialist():
    engine = ScriptedEngine([call("delete_account", {"user": "me"}), call("get_weather", {"city": "Oslo"})])
    with engine as engine_url:
        app, server = proxy(engine_url)
        with server as url:
            reply = client(url).chat.completions.create(model="agent", messages=[ASK], tools=[WEATHER])
    (made,) = reply.choices[0].message.tool_calls
    assert made.function.name == "get_weather" and reply.choices[0].finish_reason == "tool_calls"
    first, repair = engine.requests
    *_, refused, error = repair["messages"]
    assert refused["tool_calls"][0]["function"]["name"] == "delete_account"
    assert error["role"] == "tool" and "not offered" in json.loads(error["content"])["error"] and "get_weather" in error["content"]
    assert app.state.service.loop.metrics.refused == {"not offered": 1}


def test_outside_the_allowlist_nothing_is_offered_or_called_and_repairs_are_bounded():
    said = {"role": "assistant", "content": "I can't set timers here."}
    script = [call("set_timer", {"minutes": 5}), call("set_timer", {"minutes": 5}), said, {"role": "assistant", "content": "Said no timer."}]  # last: the summary
    engine = ScriptedEngine(script)
    with engine as engine_url:
        app, server = proxy(engine_url, allowlist=["get_weather"], max_repairs=1)
        with server as url:
            reply = client(url).chat.completions.create(model="agent", messages=[{"role": "user", "content": "Set a timer for 5 minutes"}], tools=[WEATHER, TIMER])
    message = reply.choices[0].message
    assert not message.tool_calls and message.content == "I can't set timers here." and reply.choices[0].finish_reason == "stop"
    assert [t["function"]["name"] for t in engine.requests[0]["tools"]] == ["get_weather"]  # set_timer is never offered
    assert engine.requests[2]["tool_choice"] == "none" and "tool_choice" not in engine.requests[1]
    assert all(r["messages"][-1]["content"] == app.state.service.hcp.prompts.summary for r in engine.requests[3:])  # then only the summary
    assert "not allowed" in engine.requests[1]["messages"][-1]["content"]


def test_the_hcps_own_description_of_a_function_replaces_the_clients():
    engine = ScriptedEngine([call("get_weather", {"city": "Oslo"})])
    with engine as engine_url:
        app, server = proxy(engine_url, descriptions={"get_weather": "Current weather of one named city."})
        with server as url:
            client(url).chat.completions.create(model="agent", messages=[ASK], tools=[WEATHER, TIMER])
    offered = {t["function"]["name"]: t["function"] for t in engine.requests[0]["tools"]}
    assert offered["get_weather"]["description"] == "Current weather of one named city."
    assert offered["get_weather"]["parameters"] == WEATHER["function"]["parameters"] and offered["set_timer"] == TIMER["function"]


def test_a_streamed_refused_call_never_reaches_the_client():
    engine = ScriptedEngine([call("delete_account", {}), call("get_weather", {"city": "Oslo"})])
    with engine as engine_url:
        app, server = proxy(engine_url)
        with server as url:
            chunks = list(client(url).chat.completions.create(model="agent", messages=[ASK], tools=[WEATHER], stream=True))
    names = [c.function.name for chunk in chunks for choice in chunk.choices for c in choice.delta.tool_calls or [] if c.function and c.function.name]
    assert names == ["get_weather"]
    assert [choice.finish_reason for chunk in chunks for choice in chunk.choices if choice.finish_reason] == ["tool_calls"]


def test_an_engine_error_mid_stream_is_an_sse_error_and_stores_nothing():
    broken = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}, "finish_reason": None}]}, {"error": {"message": "out of KV blocks", "type": "InternalServerError", "code": 500}}]
    engine = ScriptedEngine([broken])
    with engine as engine_url:
        app, server = proxy(engine_url)
        with server as url:
            stream = client(url).chat.completions.create(model="chat", messages=[{"role": "user", "content": "Hello"}], stream=True)
            with pytest.raises(openai.APIError, match="out of KV blocks"):
                for _ in stream:
                    pass
    assert len(app.state.service.store) == 0


def test_the_engines_own_4xx_stays_the_clients_and_a_failing_router_is_not_a_500():
    engine = ScriptedEngine([(400, "tools[0].function.parameters: not a JSON schema")], completions_status=500)
    with engine as engine_url:
        app, server = proxy(engine_url)
        with server as url:
            with pytest.raises(openai.BadRequestError, match="not a JSON schema"):
                client(url).chat.completions.create(model="agent", messages=[ASK], tools=[WEATHER])
            with pytest.raises(openai.APIStatusError, match="router") as error:  # label scoring asks the engine, which fails
                client(url).chat.completions.create(model="molt", messages=[{"role": "user", "content": "Hello there"}])
            assert error.value.status_code == 502
    assert len(app.state.service.store) == 0


def test_a_chunked_body_is_capped_on_the_bytes_received():
    from molt.proxy.limits import Limits

    with ScriptedEngine([]) as engine_url:
        app = create_app(contract(engine_url), Limits(max_request_bytes=2000))
        with ServerThread(app) as url:
            body = json.dumps({"model": "chat", "messages": [{"role": "user", "content": "x" * 5000}]}).encode()
            pieces = iter([body[i : i + 1000] for i in range(0, len(body), 1000)])  # no Content-Length: chunked transfer
            response = httpx.post(f"{url}/v1/chat/completions", content=pieces, headers={"content-type": "application/json"})
    assert response.status_code == 413 and "over the 2000-byte limit" in response.json()["error"]["message"]
