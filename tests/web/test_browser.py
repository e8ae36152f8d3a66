"""The web app in a real browser (Debian's Chromium driven by Playwright): a message yields a
surface drawn by @a2ui/lit, a field is filled and a button pressed, the specialist's update shows,
a private value never reaches a model, and after a reload the surface shows what was entered;
an answer whose envelopes never validate reaches the page only as text; the memory panel tells,
corrects and forgets a user's facts, one user's facts never show for another, and chat requests
name the user.

The specialist is a scripted engine behind the real proxy: what is under test is the app, the
proxy and the renderer, not what a model would answer. Screenshots are saved to
build/test-artifacts/ (web_app.png, web_app_memory.png). Run: pytest tests/web/test_browser.py"""

import json
import re
import shutil
import uuid
from pathlib import Path

import pytest
from fastapi import Request
from fastapi.responses import JSONResponse

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


class Engine(ScriptedEngine):
    """The scripted engine, with the memory extraction hop (run in the background after a turn
    that names its user, as every turn of the web app does) answered "none" off the script: the
    script stays the turns' answers and summaries, whenever that hop comes."""

    EXTRACT = getattr(hcp().memory, "extract", "")

    def __init__(self, script: list):
        super().__init__(script)
        self.extractions = []

    async def chat(self, request: Request):
        body = await request.json()
        if self.EXTRACT and body["messages"][0].get("content") == self.EXTRACT:
            self.extractions.append(body)
            return JSONResponse({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "none"}, "finish_reason": "stop"}]})
        return await super().chat(request)


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
    engine = Engine([{"role": "assistant", "content": dangling}, {"role": "assistant", "content": unknown}, {"role": "assistant", "content": dangling}, SUMMARY])
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
    engine = Engine([{"role": "assistant", "content": rent}, SUMMARY, {"role": "assistant", "content": RENTED}, SUMMARY])
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


def test_memory_is_listed_told_corrected_and_forgotten_in_the_browser():
    from playwright.sync_api import expect, sync_playwright

    ana, ben = f"ana-{uuid.uuid4().hex[:8]}", f"ben-{uuid.uuid4().hex[:8]}"
    engine = Engine([{"role": "assistant", "content": "print('Lisbon')"}, {"role": "assistant", "content": "Printed the user's city."}])
    with engine as engine_url, served(engine_url) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1000, "height": 900})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))

        def facts(user: str) -> list[dict]:  # what the proxy holds, asked past the page
            return page.request.get(f"{url}/v1/memory?user={user}").json()["facts"]

        page.goto(url)
        page.get_by_text("Memory", exact=True).click()
        user_id = page.get_by_label("Your name / user id")
        expect(user_id).to_have_value(re.compile(r"^web-[0-9a-f]{8}$"))  # a generated id until one is given
        alert = page.get_by_role("alert")
        listed = page.get_by_role("list", name="Remembered facts")

        user_id.fill("ana smith")  # a space: refused here, before any request
        user_id.press("Enter")
        expect(alert).to_contain_text("letters, digits or _ . : @ -")
        expect(user_id).to_have_value("ana smith")
        expect(user_id).to_have_attribute("aria-invalid", "true")
        user_id.fill(ana)
        page.get_by_role("button", name="Use", exact=True).click()
        expect(alert).to_be_empty()
        expect(page.get_by_text(f"Nothing remembered about {ana} yet.")).to_be_visible()

        page.get_by_label("Key", exact=True).fill("Home city")
        page.get_by_label("Value", exact=True).fill("Porto")
        page.get_by_role("button", name="Remember", exact=True).click()
        fact = listed.get_by_role("listitem").filter(has_text="home city")
        expect(fact).to_contain_text("Porto")
        expect(fact).to_contain_text("from you")
        expect(page.get_by_label("Key", exact=True)).to_have_value("")

        fact.get_by_role("button", name="Edit home city").click()
        page.get_by_label("New value for home city").fill("Lisbon")
        fact.get_by_role("button", name="Save").click()
        expect(fact.locator(".fact-value").first).to_have_text("Lisbon")
        history = fact.get_by_role("button", name="History of home city")
        expect(history).to_have_attribute("aria-expanded", "false")
        history.click()
        expect(history).to_have_attribute("aria-expanded", "true")
        expect(page.get_by_role("list", name="Earlier values of home city")).to_contain_text("Porto")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=ARTIFACTS / "web_app_memory.png")
        assert [(f["key"], f["value"], f["source"]) for f in facts(ana)] == [("home city", "Lisbon", "user")]

        page.get_by_label("Key", exact=True).fill("k" * 201)  # the proxy refuses it: its message shows, the form keeps what was typed
        page.get_by_label("Value", exact=True).fill("v")
        page.get_by_role("button", name="Remember", exact=True).click()
        expect(alert).to_contain_text("key is 1 to 200 characters")
        expect(page.get_by_label("Key", exact=True)).to_have_value("k" * 201)
        expect(listed.get_by_role("listitem").filter(has_text="home city")).to_have_count(1)

        page.get_by_label("Message molt").fill("Write python that prints the city I live in")  # the chat names the user: the fact reaches the specialist
        page.get_by_label("Message molt").press("Enter")
        expect(page.get_by_text("print('Lisbon')")).to_be_visible(timeout=20_000)
        assert any("home city: Lisbon" in m["content"] for m in engine.requests[0]["messages"] if m["role"] == "system")

        user_id.fill(ben)  # another user sees none of ana's facts
        user_id.press("Enter")
        expect(page.get_by_text(f"Nothing remembered about {ben} yet.")).to_be_visible()
        expect(listed).not_to_contain_text("Lisbon")
        page.get_by_label("Key", exact=True).fill("pet")
        page.get_by_label("Value", exact=True).fill("a cat")
        page.get_by_role("button", name="Remember", exact=True).click()
        expect(listed).to_contain_text("a cat")
        assert [f["key"] for f in facts(ben)] == ["pet"] and [f["key"] for f in facts(ana)] == ["home city"]

        page.reload()  # the id is kept in this browser
        expect(user_id).to_have_value(ben)
        page.get_by_text("Memory", exact=True).click()
        expect(listed).to_contain_text("a cat")
        page.once("dialog", lambda dialog: dialog.dismiss())
        page.get_by_role("button", name="Forget everything").click()
        expect(listed).to_contain_text("a cat")
        assert len(facts(ben)) == 1
        page.once("dialog", lambda dialog: dialog.accept())
        page.get_by_role("button", name="Forget everything").click()
        expect(page.get_by_text(f"Nothing remembered about {ben} yet.")).to_be_visible()
        assert facts(ben) == []

        user_id.fill(ana)
        user_id.press("Enter")
        fact = listed.get_by_role("listitem").filter(has_text="home city")
        expect(fact).to_contain_text("Lisbon")
        expect(listed).not_to_contain_text("a cat")
        fact.get_by_role("button", name="Forget home city").click()
        expect(page.get_by_text(f"Nothing remembered about {ana} yet.")).to_be_visible()
        expect(listed.get_by_role("listitem")).to_have_count(0)
        assert facts(ana) == []
        assert page.request.get(f"{url}/v1/memory?user={ana}&key=home%20city").json()["history"] == []
        browser.close()
    assert errors == []
