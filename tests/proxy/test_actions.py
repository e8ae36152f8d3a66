"""The harness acts inside the proxy: a specialist's calls of the HCP's tool proxies, or its code in
the conversation's sandboxed session, run server-side until it answers the user; the client sees
the answer and ``molt.checks.actions``. Run: pytest tests/proxy/test_actions.py"""

import json
import sys
from pathlib import Path

import openai
import pytest

from molt.hcp import parse_hcp
from molt.http_server import ServerThread
from molt.proxy.server import create_app
from scripted_engine import ScriptedEngine, call
from scripted_stack import hcp

sys.path.insert(0, str(Path(__file__).parents[1] / "harness"))
from shop_proxies import Shop, proxies  # noqa: E402

ASK = {"role": "user", "content": "Refund order A-1 for 12.5 and tell me the total refunded so far."}
SUMMARY = {"role": "assistant", "content": "Refunded."}


def said(text: str) -> dict:
    return {"role": "assistant", "content": text}


@pytest.fixture
def shop(monkeypatch):
    monkeypatch.setenv("SHOP_TOKEN", "secret-token")
    shop = Shop()
    yield shop
    shop.server.shutdown()


def proxied(engine_url: str, shop_url: str, mode: str):
    data = hcp(engine_url).model_dump(exclude_none=True)
    data["tools"]["proxies"] = [p.model_dump() for p in proxies(shop_url)]
    data["actions"] = {"mode": mode, "specialists": ["agent"]}
    data["name"] = f"actions-{mode}"
    return create_app(parse_hcp(data), summaries=False)


def chat(url: str, messages: list[dict], stream: bool = False):
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    return client.chat.completions.create(model="agent", messages=messages, stream=stream)


def test_function_calls_of_a_tool_proxy_run_in_the_harness(shop):
    engine = ScriptedEngine([call("refund", {"order": "A-1", "amount": 12.5}), said("Refunded: r1.")])
    with engine as engine_url, ServerThread(proxied(engine_url, shop.url, "function_calling")) as url:
        reply = chat(url, [ASK])
    assert reply.choices[0].message.content == "Refunded: r1." and reply.choices[0].message.tool_calls is None
    assert reply.model_extra["molt"]["checks"]["actions"] == {"mode": "function_calling", "model_calls": 2, "executed": 1}
    assert shop.refunds == [{"order": "A-1", "amount": 12.5}]
    offered = [t["function"]["name"] for t in engine.requests[0]["tools"]]
    assert offered == ["refund", "cancel_refund"] and "token" not in json.dumps(engine.requests[0]["tools"])
    result = engine.requests[1]["messages"][-1]
    assert result["role"] == "tool" and json.loads(result["content"]) == {"refund_id": "r1", "order": "A-1"}  # the card number stayed out


def test_code_in_the_session_calls_the_proxy_and_its_variables_live_on_to_the_next_turn(shop):
    code = "r = tools.refund(order='A-1', amount=12.5)\nrefunded = [r['refund_id']]\nprint(refunded)"
    script = [call("python", {"code": code}), said("Done: r1."), call("python", {"code": "print(len(refunded))"}, "call_2"), said("One refund.")]
    engine = ScriptedEngine(script)
    with engine as engine_url, ServerThread(proxied(engine_url, shop.url, "repl")) as url:
        first = chat(url, [ASK])
        history = [ASK, {"role": "assistant", "content": first.choices[0].message.content}]
        second = chat(url, [*history, {"role": "user", "content": "How many refunds so far?"}], stream=True)
        streamed = "".join(choice.delta.content or "" for chunk in second for choice in chunk.choices)
    assert first.choices[0].message.content == "Done: r1." and streamed == "One refund."
    assert [t["function"]["name"] for t in engine.requests[0]["tools"]] == ["python"]
    assert engine.requests[1]["messages"][-1]["content"] == "['r1']"
    assert engine.requests[3]["messages"][-1]["content"] == "1"  # the same session, one turn later
    assert any(m.get("tool_calls") for m in engine.requests[2]["messages"])  # the first turn's steps are in its own view


def test_a_branched_conversation_acts_in_its_own_copy_of_the_session(shop):
    set_x = call("python", {"code": "x = 1"})
    script = [set_x, said("x is 1."),
              call("python", {"code": "x += 10\nprint(x)"}, "c2"), said("11"),
              call("python", {"code": "x += 100\nprint(x)"}, "c3"), said("101")]
    engine = ScriptedEngine(script)
    with engine as engine_url, ServerThread(proxied(engine_url, shop.url, "repl")) as url:
        chat(url, [ASK])
        history = [ASK, {"role": "assistant", "content": "x is 1."}]
        chat(url, [*history, {"role": "user", "content": "Add ten to the total."}])
        chat(url, [*history, {"role": "user", "content": "Add a hundred to the total instead."}])
    assert engine.requests[3]["messages"][-1]["content"] == "11"
    assert engine.requests[5]["messages"][-1]["content"] == "101"  # from x = 1, not from the other branch's 11


def test_auto_mode_picks_the_repl_for_data_work_and_calls_for_one_action(shop):
    engine = ScriptedEngine([said("Sure."), said("Sure.")])
    with engine as engine_url, ServerThread(proxied(engine_url, shop.url, "auto")) as url:
        chat(url, [{"role": "user", "content": "What is the total of my refunds this month?"}])
        chat(url, [{"role": "user", "content": "Refund order B-7 for 3."}])
    assert [t["function"]["name"] for t in engine.requests[0]["tools"]] == ["python"]
    assert [t["function"]["name"] for t in engine.requests[1]["tools"]] == ["refund", "cancel_refund"]


def test_a_turn_that_keeps_calling_is_cut_at_max_steps(shop):
    loop = [call("python", {"code": "print(1)"}, f"c{i}") for i in range(3)]
    engine = ScriptedEngine([*loop, said("Giving up: here is what I have.")])
    with engine as engine_url:
        data = proxied(engine_url, shop.url, "repl")
        data.state.service.loop.harness.policy = data.state.service.loop.harness.policy.model_copy(update={"max_steps": 3})
        with ServerThread(data) as url:
            reply = chat(url, [ASK])
    assert reply.choices[0].message.content.startswith("Giving up") and "tools" not in engine.requests[3]
    assert reply.model_extra["molt"]["checks"]["actions"]["model_calls"] == 4


def test_a_helper_saved_in_one_conversation_is_callable_in_the_next_once_promoted(shop):
    helper = "def eur(amount, rate):\n    return round(amount * rate, 2)\nsave_tool('eur', [{'args': [10, 0.5], 'expected': 5.0}])\npromote_tool('eur')"
    engine = ScriptedEngine([call("python", {"code": helper}), said("Saved."), call("python", {"code": "print(eur(3, 2))"}, "c2"), said("6")])
    with engine as engine_url, ServerThread(proxied(engine_url, shop.url, "repl")) as url:
        chat(url, [ASK])
        chat(url, [{"role": "user", "content": "Start over: what is 3 EUR at rate 2, in total?"}])
    assert "'promoted': True" in engine.requests[1]["messages"][-1]["content"]
    assert engine.requests[3]["messages"][-1]["content"] == "6"  # a new conversation's session starts with it
