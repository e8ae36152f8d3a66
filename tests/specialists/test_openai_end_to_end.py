"""The trained specialists behind the proxy, driven by the official ``openai`` client: requests
with function schemas go to the agent and come back as exact tool calls, the tool result goes
back to the agent, and plain conversation goes to chat and gets a plain answer, with or without
tools offered. Requests are held-out phrasings."""

import json

import pytest
from openai import OpenAI

from molt.families.agent import BY_NAME

WEATHER, TIMER = (BY_NAME[name].schema for name in ("get_weather", "set_timer"))


@pytest.fixture(scope="module")
def client(stack):
    return OpenAI(base_url=f"{stack}/v1", api_key="unused")


def turn(client: OpenAI, messages: list[dict], tools: list[dict] | None = None, max_tokens: int | None = None):
    raw = client.chat.completions.with_raw_response.create(model="molt", messages=messages, tools=tools or [], temperature=0, max_tokens=max_tokens)
    return raw.parse(), raw.headers["x-molt-specialist"]


def test_a_request_with_function_schemas_gets_the_exact_tool_call_and_the_result_goes_back(client):
    messages = [{"role": "user", "content": "Give me the current conditions for Lisbon."}]
    completion, specialist = turn(client, messages, [TIMER, WEATHER])
    assert specialist == "agent"
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Lisbon"}

    messages += [choice.message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temperature": 19, "condition": "windy"})}]
    completion, specialist = turn(client, messages, [TIMER, WEATHER])
    assert specialist == "agent"  # tool results go back to the adapter that called the tools
    assert completion.choices[0].finish_reason == "stop" and not completion.choices[0].message.tool_calls
    # whether the answer uses the result is scored by `molt bench specialists` (agent result cases)


def test_plain_conversation_goes_to_chat_and_gets_a_plain_answer(client):
    completion, specialist = turn(client, [{"role": "user", "content": "What should I call you?"}])
    assert specialist == "chat"
    message = completion.choices[0].message
    assert not message.tool_calls and "molt" in message.content.lower()

    completion, specialist = turn(client, [{"role": "user", "content": "Name the capital city of Italy."}], [WEATHER])
    assert specialist == "chat" and "Rome" in completion.choices[0].message.content


def test_code_and_ui_requests_reach_their_specialists(client):
    """Only the route is checked here: the suite trains chat and agent; coding and genui answers
    are measured by `molt bench specialists`."""
    _, specialist = turn(client, [{"role": "user", "content": "Could you code `is_palindrome(s)` for me? It tells whether the string s is a palindrome."}], max_tokens=16)
    assert specialist == "coding"
    _, specialist = turn(client, [{"role": "user", "content": "Build me checkboxes for a camping trip: Tent, Lamp and Map."}], max_tokens=16)
    assert specialist == "genui"
