"""API fuzzing: bodies drawn by ``hypothesis`` around the OpenAI request shapes (wrong types,
odd roles, content parts, broken tool calls and schemas, out-of-range numbers, streaming or not)
against the proxy in front of a live tiny engine, and against the engine itself. No body may
get a 5xx: bad input is a 4xx that says what is wrong.
Run: pytest tests/proxy/test_fuzz.py"""

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from molt.http_server import ServerThread
from molt.proxy.server import create_app
from scripted_stack import hcp

scalar = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
anything = st.recursive(scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
role = st.sampled_from(["system", "user", "assistant", "tool", "developer", "function"]) | st.text(max_size=4)
part = st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url", "input_text"])}, optional={"text": st.text(max_size=10) | anything})
content = st.one_of(st.text(max_size=40), st.none(), st.lists(part | anything, max_size=2), anything)
function = st.fixed_dictionaries({}, optional={"name": st.sampled_from(["get_weather", "set_timer"]) | st.text(max_size=6) | anything, "arguments": st.sampled_from(['{"city": "Oslo"}', "{", "[]"]) | anything})
tool_call = st.fixed_dictionaries({}, optional={"id": st.text(max_size=4) | anything, "type": st.just("function") | anything, "function": function | anything})
message = st.fixed_dictionaries(
    {"role": role},
    optional={"content": content, "tool_calls": st.lists(tool_call, max_size=2) | anything, "tool_call_id": st.text(max_size=4) | anything},
)
schema = st.fixed_dictionaries({"type": st.just("object") | anything}, optional={"properties": st.dictionaries(st.text(max_size=5), st.fixed_dictionaries({"type": st.sampled_from(["string", "integer"]) | anything}), max_size=2) | anything})
tool = st.fixed_dictionaries({"type": st.just("function") | anything, "function": st.fixed_dictionaries({"name": st.text(max_size=8) | anything}, optional={"parameters": schema | anything, "description": st.text(max_size=8)}) | anything}) | anything
chat = st.fixed_dictionaries(
    {"messages": st.lists(message, min_size=1, max_size=4) | anything},
    optional={
        "model": st.sampled_from(["molt", "chat", "agent", "coding", "nope"]) | anything,
        "max_tokens": st.integers(-2, 6) | anything,
        "temperature": st.floats(-1, 3) | anything,
        "top_p": st.floats(-1, 2) | anything,
        "tools": st.lists(tool, max_size=2) | anything,
        "stream": st.booleans() | anything,
    },
)
item = st.fixed_dictionaries({"type": st.sampled_from(["message", "function_call_output", "reasoning"]) | anything}, optional={"role": role, "content": content, "call_id": st.text(max_size=4) | anything, "output": anything})
responses = st.fixed_dictionaries(
    {"input": st.text(max_size=30) | st.lists(item, max_size=3) | anything},
    optional={"model": st.sampled_from(["molt", "chat", "nope"]) | anything, "max_output_tokens": st.integers(-1, 6) | anything, "tools": st.lists(tool, max_size=2) | anything, "stream": st.booleans(), "previous_response_id": st.text(max_size=6) | anything},
)
# Derandomised, so CI runs the same bodies every time; no example database is written.
FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def proxy(engine_url):
    with ServerThread(create_app(hcp(engine_url))) as url, httpx.Client(base_url=url, timeout=120) as http:
        yield http


def post(http: httpx.Client, path: str, body) -> httpx.Response:
    with http.stream("POST", path, json=body) as response:
        response.read()  # a stream must end cleanly too
        return response


@FUZZ
@given(body=chat)
def test_chat_completions_never_answer_5xx(proxy, body):
    assert post(proxy, "/v1/chat/completions", body).status_code < 500


@FUZZ
@given(body=responses)
def test_responses_never_answer_5xx(proxy, body):
    assert post(proxy, "/v1/responses", body).status_code < 500


@FUZZ
@given(body=chat)
def test_the_engine_never_answers_5xx(engine_url, body):
    with httpx.Client(base_url=engine_url.removesuffix("/v1"), timeout=120) as http:
        if isinstance(body, dict) and isinstance(body.get("model"), str):
            body = {**body, "model": {"molt": "tiny", "chat": "tiny"}.get(body["model"], body["model"])}
        assert post(http, "/v1/chat/completions", body).status_code < 500


def test_the_first_bad_field_is_named(proxy):
    """A malformed message is a 400 whose text says where it is wrong."""
    bad = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}]}
    reply = proxy.post("/v1/chat/completions", json=bad)
    assert reply.status_code == 400
    assert reply.json()["error"] == {**reply.json()["error"], "param": "messages", "message": "messages[1].tool_calls[0].function.name: Field required"}
    reply = proxy.post("/v1/responses", json={"input": [{"type": "message", "role": "user", "content": [{"type": "input_text"}]}]})
    assert reply.status_code == 400 and reply.json()["error"]["message"] == "input[0].content[0].text: Field required"
