"""``/v1/memory``: a user lists, corrects and deletes their facts over HTTP; a correction keeps
the old value as history, bad input is a 400 that writes nothing, and one user's facts never
appear in another's listing. Run: pytest tests/proxy/test_memory_api.py"""

import httpx

from molt.http_server import ServerThread
from molt.proxy.server import create_app
from scripted_engine import ScriptedEngine
from scripted_stack import hcp


def test_a_user_lists_corrects_and_forgets_their_facts():
    with ScriptedEngine([]) as engine_url, ServerThread(create_app(hcp(engine_url))) as url:
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
