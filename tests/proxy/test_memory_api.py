"""``/v1/memory``: a user lists, corrects and deletes their facts over HTTP; a correction keeps
the old value as history, bad input is a 400 that writes nothing, and one user's facts never
appear in another's listing. What a user says about themselves in a turn is remembered after it.
Run: pytest tests/proxy/test_memory_api.py"""

import json
from datetime import datetime, timezone

import httpx

from molt.harness.memory import Fact, facts_note, relevant
from molt.http_server import ServerThread
from molt.proxy.server import create_app
from molt.registry.database import scratch_database
from scripted_engine import ScriptedEngine
from scripted_stack import hcp


def test_a_user_lists_corrects_and_forgets_their_facts():
    with ScriptedEngine([]) as engine_url, scratch_database() as db, ServerThread(create_app(hcp(engine_url), db=db)) as url:
        api = httpx.Client(base_url=f"{url}/v1")
        told = api.post("/memory", json={"user": "ana", "key": "Home City", "value": "Porto", "valid_from": "2026-01-01T00:00:00+00:00"})
        assert told.status_code == 200 and told.json()["fact"]["key"] == "home city" and told.json()["fact"]["source"] == "user"
        api.post("/memory", json={"user": "ana", "key": "home city", "value": "Lisbon"})  # a correction
        api.post("/memory", json={"user": "ben", "key": "home city", "value": "Oslo"})

        assert [(f["key"], f["value"]) for f in api.get("/memory", params={"user": "ana"}).json()["facts"]] == [("home city", "Lisbon")]
        assert [f["value"] for f in api.get("/memory", params={"user": "ana", "key": "home city"}).json()["history"]] == ["Lisbon", "Porto"]
        assert [f["value"] for f in api.get("/memory", params={"user": "ben"}).json()["facts"]] == ["Oslo"]

        bad = api.post("/memory", json={"user": "ana", "key": "home city", "value": "Faro", "valid_from": "2026-01-01T00:00:00"})
        assert bad.status_code == 400 and "carries its zone" in bad.json()["error"]["message"]
        assert api.get("/memory", params={"user": "ana bob"}).status_code == 400
        assert api.post("/memory", json={"user": "ana", "key": "k"}).status_code == 400  # no value
        assert len(api.get("/memory", params={"user": "ana", "key": "home city"}).json()["history"]) == 2  # nothing written

        assert api.delete("/memory", params={"user": "ana", "key": "home city"}).json()["deleted"] == 2
        assert api.get("/memory", params={"user": "ana"}).json()["facts"] == []
        assert [f["value"] for f in api.get("/memory", params={"user": "ben"}).json()["facts"]] == ["Oslo"]


T = datetime(2026, 5, 1, tzinfo=timezone.utc)


def said(text: str) -> dict:
    return {"role": "assistant", "content": text}


def test_a_users_facts_reach_their_own_turns_and_no_one_elses():
    script = [said("Lisbon it is."), said("s"), said("none"), said("Hello."), said("s"), said("none"), said("Hi."), said("s")]
    engine = ScriptedEngine(script)
    with engine as engine_url, scratch_database() as db, ServerThread(create_app(hcp(engine_url), db=db)) as url:
        api = httpx.Client(base_url=f"{url}/v1", timeout=30)
        api.post("/memory", json={"user": "ana", "key": "home city", "value": "Lisbon"})
        api.post("/memory", json={"user": "ana", "key": "dentist", "value": "Dr. Reis"})

        def ask(**who) -> dict:
            before = len(engine.requests)
            api.post("/chat/completions", json={"model": "chat", "messages": [{"role": "user", "content": "Which city is home for me?"}], **who}).raise_for_status()
            return next(r for r in engine.requests[before:] if r["messages"][-1]["content"] == "Which city is home for me?")

        ana, ben, nobody = ask(user="ana"), ask(user="ben"), ask()
        notes = [m["content"] for m in ana["messages"] if m["role"] == "system"][1:]
        assert len(notes) == 1 and "- home city: Lisbon" in notes[0] and "Dr. Reis" in notes[0]
        assert notes[0].index("home city") < notes[0].index("dentist")  # the fact sharing words with the turn first
        assert [m["role"] for m in ben["messages"]] == ["system", "user"], json.dumps(engine.requests, indent=0) and [m["role"] for m in nobody["messages"]] == ["system", "user"]
        assert "Lisbon" not in json.dumps(ben) and "Lisbon" not in json.dumps(nobody)
        assert api.post("/chat/completions", json={"model": "chat", "messages": [{"role": "user", "content": "hi"}], "user": "ana bob"}).status_code == 400


def test_only_what_fits_the_budget_goes_in_relevant_facts_first():
    facts = [Fact("ana", f"pet {i}", f"dog number {i}", T, T, "user", None, i) for i in range(40)] + [Fact("ana", "home city", "Lisbon", T, T, "user", None, 99)]
    chosen = relevant(facts, "Is it sunny in my home city?", budget_tokens=40, count_tokens=lambda note: len(note.split()))
    assert chosen[0].key == "home city" and len(facts_note(chosen).split()) <= 40 < len(facts_note(facts).split())


def test_what_a_user_says_about_themselves_is_remembered_after_the_turn():
    extraction = "dentist: Dr. Okafor\nfavourite colour: green\nnone"  # green was never said: dropped
    engine = ScriptedEngine([said("Noted."), said("s"), said(extraction), said("Fine."), said("s"), said("none")])
    with engine as engine_url, scratch_database() as db, ServerThread(create_app(hcp(engine_url), db=db)) as url:
        api = httpx.Client(base_url=f"{url}/v1", timeout=30)
        first = api.post("/chat/completions", json={"model": "chat", "user": "ana", "messages": [{"role": "user", "content": "My gift budget is 50. I see Dr. Okafor for my teeth."}]})
        facts = api.get("/memory", params={"user": "ana"}).json()["facts"]  # the listing waits for the turn's facts
        assert {(f["key"], f["value"]) for f in facts} == {("gift budget", "50"), ("dentist", "Dr. Okafor")}
        assert {f["source"] for f in facts} == {"conversation"} and {f["source_turn"] for f in facts} == {first.headers["x-molt-turn-id"]}
        hop = engine.requests[2]
        assert hop["temperature"] == 0 and hop["messages"][1] == {"role": "user", "content": "My gift budget is 50. I see Dr. Okafor for my teeth."}
        assert hop["messages"][0]["content"].startswith("List the facts the user states about themselves")

        api.post("/chat/completions", json={"model": "chat", "user": "ana", "messages": [{"role": "user", "content": "Actually my gift budget is now 80"}]})
        assert [f["value"] for f in api.get("/memory", params={"user": "ana", "key": "gift budget"}).json()["history"]] == ["80", "50"]
        assert api.get("/memory", params={"user": "ben"}).json()["facts"] == []
