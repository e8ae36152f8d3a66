"""``molt up``'s pieces: the HCP pointed at the local engine, the adapters it loads, the chat page.
Run: pytest tests/test_stack.py"""

from fastapi.testclient import TestClient

from molt.hcp import load_hcp, parse_hcp
from molt.stack import engine_config, proxy_with_page, stack_hcp


def test_the_stack_points_the_proxy_at_its_own_engine_and_loads_the_specialists():
    hcp = stack_hcp(load_hcp(), 9123)
    assert hcp.model.engine_url == "http://127.0.0.1:9123/v1" and load_hcp().model.engine_url != hcp.model.engine_url
    assert engine_config(hcp).lora_modules == {}  # the shipped HCP has no trained specialists yet
    data = hcp.model_dump(exclude_none=True)
    data["specialists"][2].update(adapter="coding", revision="molt://run-1/coding")
    assert engine_config(parse_hcp(data)).lora_modules == {"coding": "molt://run-1/coding"}


def test_the_web_app_is_served_at_the_root_with_its_bundle():
    with TestClient(proxy_with_page(load_hcp())) as client:
        page, bundle, registry = client.get("/"), client.get("/static/app.js"), client.get("/api/registry")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/static/app.js">' in page.text and 'for="ask"' in page.text
    assert bundle.status_code == 200 and bundle.headers["content-type"].startswith("text/javascript")
    assert "/v1/chat/completions" in bundle.text and "urn:molt:a2ui:catalog:1" in bundle.text and "a2ui-surface" in bundle.text
    assert registry.json() == {"serving": None, "pairs": [], "lineage": ""}  # served from an HCP file


def test_the_registry_view_lists_pairs_with_their_aliases_and_the_served_lineage(tmp_path):
    from molt.registry import Registry
    from molt.stack import registry_view

    db = f"sqlite:///{tmp_path / 'registry.db'}"
    registry = Registry(db)
    base = registry.add_base("tiny")
    old, new = (registry.add_pair(name, base.id, registry.add_hcp(name, "h").id, None, {}) for name in ("first", "second"))
    registry.move("production", new.id, "test", "promote")
    registry.close()
    view = registry_view(db, new.id)
    assert [p["id"] for p in view["pairs"]] == [new.id, old.id] and view["pairs"][0]["aliases"] == ["production"]
    assert view["serving"] == new.id and f"pair {new.id}" in view["lineage"] and "base" in view["lineage"]
