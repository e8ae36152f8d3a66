"""The web app in a real browser (Debian's Chromium driven by Playwright): a message yields a
surface drawn by @a2ui/lit, a field is filled and a button pressed, the specialist's update shows,
a private value never reaches a model, and after a reload the surface shows what was entered;
an answer whose envelopes never validate reaches the page only as text.

The specialist is a scripted engine behind the real proxy: what is under test is the app, the
proxy and the renderer, not what a model would answer. A screenshot is saved to
build/test-artifacts/web_app.png. Run: pytest tests/web/test_browser.py"""

import json
import shutil
from pathlib import Path

import pytest

from molt.hcp import parse_hcp
from molt.http_server import ServerThread
from molt.stack import proxy_with_page
from molt.ui.a2ui import button, surface_messages
from scripted_engine import ScriptedEngine
from scripted_stack import hcp

ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "test-artifacts"
CARD = "4111 1111 1111 1111"
RENTAL = surface_messages("kayak", [
    {"id": "root", "component": "Column", "children": ["title", "hours", "vault", "status", "go"]},
    {"id": "title", "component": "Text", "text": "Kayak rental", "variant": "h2"},
    {"id": "hours", "component": "TextField", "label": "Hours", "value": {"path": "/hours"}},
    {"id": "vault", "component": "Private", "child": "card"},
    {"id": "card", "component": "TextField", "label": "Card number", "value": {"path": "/card"}},
    {"id": "status", "component": "Text", "text": {"path": "/status"}},
    *[c for c in button("go", "Rent", "rent")],
], {"hours": "", "card": "", "status": "Not booked yet"})
RENTED = json.dumps({"version": "v0.9", "updateDataModel": {"surfaceId": "kayak", "path": "/status", "value": "Booked: see you at the lake"}})
SUMMARY = {"role": "assistant", "content": "Showed a rental form."}


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no Chromium on this machine (`make services` installs Debian's chromium)")
    return path


def served(engine_url: str):
    data = hcp(engine_url).model_dump(exclude_none=True)
    data["router"]["guardrails"].append({"label": "genui", "keywords": ["form"]})
    return ServerThread(proxy_with_page(parse_hcp(data)))


def ask(page, url: str, text: str) -> None:
    page.goto(url)
    page.get_by_label("Message molt").fill(text)
    page.get_by_label("Message molt").press("Enter")


def test_invalid_envelopes_never_reach_the_page():
    from playwright.sync_api import expect, sync_playwright

    dangling = RENTAL.replace('"children": ["title", "hours", "vault", "status", "go"]', '"children": ["title", "hours", "vault", "status", "go", "gone"]')
    unknown = RENTAL.replace('"component": "Text", "text": "Kayak rental"', '"component": "Banner", "text": "Kayak rental"')
    engine = ScriptedEngine([{"role": "assistant", "content": dangling}, {"role": "assistant", "content": unknown}, {"role": "assistant", "content": dangling}, SUMMARY])
    with engine as engine_url, served(engine_url) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        page = browser.new_page()
        ask(page, url, "Show me a form to rent a kayak")
        expect(page.get_by_text("meant to show an interactive view")).to_be_visible(timeout=20_000)
        assert page.locator("a2ui-surface").count() == 0 and "updateComponents" not in page.content()
        browser.close()
    assert len(engine.requests) >= 3  # the first try and two repairs, each sent back with its problem


def test_a_surface_is_drawn_used_and_restored_in_the_browser():
    from playwright.sync_api import expect, sync_playwright

    rent = RENTAL.replace('"action": {"event": {"name": "rent"}}', '"action": {"event": {"name": "rent", "context": {"hours": {"path": "/hours"}, "card": {"path": "/card"}}}}')
    engine = ScriptedEngine([{"role": "assistant", "content": rent}, SUMMARY, {"role": "assistant", "content": RENTED}, SUMMARY])
    with engine as engine_url:
        with served(engine_url) as url, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1000, "height": 760})
            errors = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            ask(page, url, "Show me a form to rent a kayak")
            surface = page.locator("a2ui-surface")
            expect(surface.get_by_text("Kayak rental")).to_be_visible(timeout=20_000)
            expect(page.locator("article.assistant header").first).to_have_text("molt · genui")
            surface.get_by_label("Hours").fill("3")
            surface.get_by_label("Card number").fill(CARD)
            surface.get_by_role("button", name="Rent").click()
            expect(surface.get_by_text("Booked: see you at the lake")).to_be_visible(timeout=20_000)
            page.get_by_role("button", name="Good answer").first.click()
            expect(page.get_by_role("button", name="Good answer").first).to_have_attribute("aria-pressed", "true")
            page.wait_for_timeout(600)  # the kept state is written 250 ms after the last edit
            page.reload()
            surface = page.locator("a2ui-surface")
            expect(surface.get_by_label("Hours")).to_have_value("3", timeout=20_000)
            expect(surface.get_by_label("Card number")).to_have_value("")  # private: never kept by the proxy
            expect(surface.get_by_text("Booked: see you at the lake")).to_be_visible()
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=ARTIFACTS / "web_app.png", full_page=True)
            page.set_viewport_size({"width": 390, "height": 800})  # a phone's width: the composer stays usable
            expect(page.get_by_label("Message molt")).to_be_visible()
            page.screenshot(path=ARTIFACTS / "web_app_phone.png")
            browser.close()
    assert errors == []
    assert all(CARD not in json.dumps(request) for request in engine.requests)
    action = json.loads(engine.requests[2]["messages"][-1]["content"])["action"]
    assert action["name"] == "rent" and action["context"] == {"hours": "3", "card": "[withheld: private to the user]"}
