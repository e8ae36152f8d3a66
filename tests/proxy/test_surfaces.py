"""UI surfaces are checked before they reach a client: an invalid one goes back to the specialist
with its A2UI problems, a trivial slip is fixed and counted, one that never validates becomes plain
text with a notice, and a streamed surface is held back until checked. JSON that is not A2UI
passes as it is. Run: pytest tests/proxy/test_surfaces.py"""

import json

import httpx
import openai
import pytest

from molt.hcp import parse_hcp
from molt.http_server import ServerThread
from molt.proxy.server import create_app
from molt.ui.a2ui import button, check_answer, surface_messages
from scripted_engine import ScriptedEngine, usage
from scripted_stack import hcp

ASK = {"role": "user", "content": "Show me a form to rent a kayak."}
VALID = surface_messages("kayak", [{"id": "root", "component": "Column", "children": ["hours", "go"]},
                                   {"id": "hours", "component": "TextField", "label": "Hours", "value": {"path": "/hours"}}, *button("go", "Rent", "submit")], {"hours": ""})
DANGLING = VALID.replace('"children": ["hours", "go"]', '"children": ["hours", "go", "gone"]')
SUMMARY = {"role": "assistant", "content": "Showed a form."}


def said(text: str) -> dict:
    return {"role": "assistant", "content": text}


def proxy(engine_url: str, repairs: int = 2):
    data = hcp(engine_url).model_dump(exclude_none=True)
    data["ui"]["repairs"] = repairs
    app = create_app(parse_hcp(data))
    return app, ServerThread(app)


def ask(engine: ScriptedEngine, repairs: int = 2, stream: bool = False):
    with engine as engine_url:
        app, server = proxy(engine_url, repairs)
        with server as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
            reply = client.chat.completions.create(model="genui", messages=[ASK], stream=stream)
            if stream:
                reply = "".join(choice.delta.content or "" for chunk in reply for choice in chunk.choices)
            else:
                reply = reply.choices[0].message.content
    return reply, app.state.service.loop.metrics.surfaces


def test_an_invalid_surface_goes_back_with_its_problems():
    engine = ScriptedEngine([said(DANGLING), said(VALID), SUMMARY])
    reply, outcomes = ask(engine)
    assert reply == VALID and outcomes == {"sent_back": 1, "valid": 1}
    *_, rejected, repair = engine.requests[1]["messages"]
    assert rejected["content"] == DANGLING and repair["role"] == "user"
    problem = json.loads(repair["content"].splitlines()[1])
    assert problem["code"] == "integrity" and problem["surfaceId"] == "kayak" and "gone" in problem["message"]


def test_a_surface_that_never_validates_becomes_text_with_a_notice():
    engine = ScriptedEngine([said(DANGLING), said(DANGLING), SUMMARY])
    reply, outcomes = ask(engine, repairs=1)
    assert outcomes == {"sent_back": 1, "fell_back": 1}
    assert reply.startswith("(This answer was meant to show an interactive view") and "- Hours" in reply and "- Rent" in reply
    assert "updateComponents" not in reply and not check_answer(reply).messages


def test_a_fenced_surface_is_fixed_and_counted():
    engine = ScriptedEngine([said(f"```json\n{VALID}\n```"), SUMMARY])
    reply, outcomes = ask(engine)
    assert reply == VALID and outcomes == {"slip_repaired": 1, "valid": 1}


def test_the_answer_says_how_its_surface_was_checked():
    """``molt.checks.surface``: what a client (and ``molt bench genui``) learns of the repairs."""
    engine = ScriptedEngine([said(DANGLING), said(VALID), SUMMARY])
    with engine as engine_url, proxy(engine_url)[1] as url:
        body = httpx.post(f"{url}/v1/chat/completions", json={"model": "genui", "messages": [ASK]}, timeout=60).json()
    assert body["molt"]["checks"]["surface"] == {"outcome": "valid", "repairs": 1, "slip_fixed": False}


def test_a_surface_in_a_history_the_proxy_never_saw_stays_in_the_surface_specialists_view():
    """An adopted history's surface turn is the ``[ui] specialist``'s: it sees its surface verbatim
    (to edit it), not another specialist's summary of it."""
    engine = ScriptedEngine([said(VALID), SUMMARY])
    history = [ASK, said(VALID), {"role": "user", "content": "Add a Notes field to the form."}]
    with engine as engine_url, proxy(engine_url)[1] as url:
        httpx.post(f"{url}/v1/chat/completions", json={"model": "genui", "messages": history}, timeout=60).raise_for_status()
    seen = engine.requests[0]["messages"]
    assert any(m["role"] == "assistant" and m["content"] == VALID for m in seen)
    assert not any(str(m.get("content", "")).startswith("[chat]") for m in seen)


def streamed(text: str, pieces: int = 5) -> list[dict]:
    size = len(text) // pieces + 1
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": text[i : i + size]}, "finish_reason": None}]} for i in range(0, len(text), size)]
    return [*chunks, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, {"choices": [], "usage": usage()}]


def test_a_streamed_invalid_surface_never_reaches_the_client():
    engine = ScriptedEngine([streamed(DANGLING), said(VALID), SUMMARY])
    reply, outcomes = ask(engine, stream=True)
    assert reply == VALID and outcomes == {"sent_back": 1, "valid": 1}


def test_a_streamed_valid_surface_and_other_json_pass_as_they_are():
    reply, outcomes = ask(ScriptedEngine([streamed(VALID), SUMMARY]), stream=True)
    assert reply == VALID and outcomes == {"valid": 1}
    other = json.dumps({"name": "Ada", "languages": ["en", "fr"]})
    reply, outcomes = ask(ScriptedEngine([streamed(other), SUMMARY]), stream=True)
    assert reply == other and outcomes == {}
    code = "```python\nprint('hi')\n```"
    reply, outcomes = ask(ScriptedEngine([streamed(code), SUMMARY]), stream=True)
    assert reply == code and outcomes == {}


# -- actions -------------------------------------------------------------------------------------

CARD = "4111 1111 1111 1111"
BOOKING = surface_messages("booking", [
    {"id": "root", "component": "Column", "children": ["hours", "vault", "go"]},
    {"id": "hours", "component": "TextField", "label": "Hours", "value": {"path": "/hours"}},
    {"id": "vault", "component": "Private", "child": "card"},
    {"id": "card", "component": "TextField", "label": "Card number", "value": {"path": "/payment/card"}},
    {"id": "go", "component": "Button", "child": "go_label", "action": {"event": {"name": "book", "context": {"hours": {"path": "/hours"}, "card": {"path": "/payment/card"}}}}},
    {"id": "go_label", "component": "Text", "text": "Book"},
], {"hours": "", "payment": {"card": ""}})
BOOKED = json.dumps({"version": "v0.9", "updateDataModel": {"surfaceId": "booking", "path": "/status", "value": "booked"}})


def action(surface_id: str = "booking", **context) -> dict:
    event = {"name": "book", "surfaceId": surface_id, "sourceComponentId": "go", "timestamp": "2026-12-06T04:00:00Z", "context": context}
    return {"role": "user", "content": json.dumps({"version": "v0.9", "action": event})}


def test_an_action_goes_to_the_surfaces_specialist_and_private_values_never_reach_a_model():
    engine = ScriptedEngine([said(BOOKING), SUMMARY, said(BOOKED), SUMMARY, said("You're booked."), SUMMARY])
    with engine as engine_url:
        app, server = proxy(engine_url)
        with server as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
            history = [ASK]
            first = client.chat.completions.create(model="genui", messages=history)
            history += [{"role": "assistant", "content": first.choices[0].message.content}, action(hours="3", card=CARD, sneaky="extra")]
            raw = client.chat.completions.with_raw_response.create(model="molt", messages=history)
            acted = raw.parse()
            history += [{"role": "assistant", "content": acted.choices[0].message.content}, {"role": "user", "content": "Thanks!"}]
            client.chat.completions.create(model="chat", messages=history)  # a later turn's view holds the action as models see it
    assert raw.headers["x-molt-specialist"] == "genui" and "surface it came from" in acted.model_extra["molt"]["reason"]
    assert acted.choices[0].message.content == BOOKED  # an update of the surface made earlier validates
    assert all(CARD not in json.dumps(request) and "sneaky" not in json.dumps(request) for request in engine.requests)
    seen = json.loads(engine.requests[2]["messages"][-1]["content"])["action"]
    assert seen["context"] == {"hours": "3", "card": "[withheld: private to the user]"} and seen["surfaceId"] == "booking"


def test_an_action_on_a_surface_the_conversation_never_showed_is_refused():
    engine = ScriptedEngine([])
    with engine as engine_url:
        app, server = proxy(engine_url)
        with server as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
            try:
                client.chat.completions.create(model="molt", messages=[action("nowhere", hours="1")])
                raise AssertionError("the action was answered")
            except openai.BadRequestError as e:
                assert "surface 'nowhere'" in str(e)
    assert engine.requests == []


def test_a_retried_action_is_acted_on_once():
    engine = ScriptedEngine([said(BOOKING), SUMMARY, said(BOOKED), SUMMARY])
    with engine as engine_url:
        app, server = proxy(engine_url)
        with server as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
            first = client.chat.completions.create(model="genui", messages=[ASK])
            history = [ASK, {"role": "assistant", "content": first.choices[0].message.content}, action(hours="2")]
            replies = [client.chat.completions.create(model="molt", messages=history, extra_headers={"Idempotency-Key": "tap-1"}) for _ in range(2)]
            with pytest.raises(openai.BadRequestError, match="stream=false"):
                client.chat.completions.create(model="molt", messages=history, stream=True, extra_headers={"Idempotency-Key": "tap-2"})
    assert replies[0].id == replies[1].id and replies[0].choices[0].message.content == BOOKED
    assert sum("action" in r["messages"][-1]["content"] for r in engine.requests) == 1


def test_surface_state_is_kept_per_conversation_and_surface():
    engine = ScriptedEngine([])
    with engine as engine_url:
        app, server = proxy(engine_url)
        with server as url:
            put = httpx.put(f"{url}/v1/ui/state/conv-1/booking", json={"data": {"hours": "3"}})
            assert put.status_code == 200
            httpx.put(f"{url}/v1/ui/state/conv-1/booking", json={"data": {"hours": "4"}})
            httpx.put(f"{url}/v1/ui/state/conv-2/other", json={"data": {"x": 1}})
            assert httpx.get(f"{url}/v1/ui/state/conv-1").json()["surfaces"] == {"booking": {"hours": "4"}}
            assert httpx.put(f"{url}/v1/ui/state/conv-1/bad%20id", json={"data": {}}).status_code == 400
            assert httpx.put(f"{url}/v1/ui/state/conv-1/s", json={"data": {"blob": "x" * 70_000}}).status_code == 413
            assert httpx.put(f"{url}/v1/ui/state/conv-1/s", json={"data": [1]}).status_code == 400
            assert httpx.get(f"{url}/v1/ui/catalog").json()["catalogId"] == "urn:molt:a2ui:catalog:1"
