"""``molt bench genui``: does the genui specialist make surfaces that validate, render in a real
browser, work when used, and show what was asked, better than the base, and does routing keep it?

The cases are the genui family's ``heldout`` split (``molt.families.genui``): forms, pickers,
checklists, cards, confirmations, tables, charts, wizards and edits of a surface shown earlier,
the kinds in turn, with purposes, fields, rows, figures and steps never trained on. Three systems
answer each case through the proxy, so each gets the same harness (the surface gate with its
``[ui] repairs``) and the same settings (temperature 0, the family's ``max_tokens``):

- ``base``: the genui specialist's turn answered by the base model (its adapter taken away),
  under the same system prompt;
- ``specialist``: the genui specialist named (``model=genui``);
- ``routed``: ``model=molt``; the router picks the specialist.

Columns, per system (share of cases):

- **valid on first try**: the model's first answer validates (``a2ui-core`` strict and molt's
  rules, after the surfaces already shown) and makes or edits exactly the one surface it should,
  with no repair and no slip fixed;
- **valid after repair**: the answer that reached the client does, after up to ``[ui] repairs``
  rounds with the problems sent back;
- **renders**: drawn by the web app's own ``@a2ui/lit`` renderer in Chromium, with no console
  error or page error;
- **interactions work**: every input takes a value that lands at its bound data path, and every
  button dispatches its declared event (counted on the kinds meant to be used: not cards,
  tables or charts);
- **constraints met**: the family's scorer (the surface asked for: fields, options, rows, values,
  steps, the edit made).
"""

import shutil
from collections import Counter
from dataclasses import dataclass

from rich.console import Console
from rich.progress import Progress

from molt.bench.answers import replies
from molt.bench.report import print_rows
from molt.families import FAMILIES, Case
from molt.families.genui import earlier_messages, meets
from molt.hcp import HCP
from molt.http_server import ServerThread
from molt.proxy.limits import Limits
from molt.proxy.server import create_app as create_proxy_app
from molt.registry.database import scratch_database
from molt.stack import engine_thread, proxy_with_page
from molt.ui.a2ui import Surface

SYSTEMS = ("base", "specialist", "routed")
COLUMNS = ("valid_first_try", "valid_after_repair", "renders", "interactions", "constraints")
HEADERS = ("valid on first try", "valid after repair", "renders, no console error", "interactions work", "constraints met")
STILL = ("card", "table", "chart")
"""Kinds that show and are not used: left out of the interactions column."""
GENUI = FAMILIES["genui"]
WAIT_MS = 2_000


@dataclass(frozen=True)
class GenuiBenchConfig:
    cases: int = 63
    """Held-out requests, the nine kinds in turn (7 of each by default)."""
    seed: int = 0
    concurrency: int = 8
    browser: bool = True
    """Draw and use each surface in Chromium (the renders and interactions columns)."""


@dataclass
class Outcome:
    """One system's answer to one case, as checked."""

    kind: str
    specialist: str
    content: str
    valid_first_try: bool = False
    valid_after_repair: bool = False
    renders: bool = False
    interactions: bool | None = None
    constraints: bool = False
    note: str = ""

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "content"}


def without_adapter(hcp: HCP, label: str) -> HCP:
    """The HCP with ``label`` answered by the base model (same prompt, same harness)."""
    specialists = [s.model_copy(update={"adapter": None, "revision": None}) if s.label == label else s for s in hcp.specialists]
    return hcp.model_copy(update={"specialists": specialists})


def checked_outcome(case: Case, reply: dict) -> Outcome:
    """What the answer is worth before a browser sees it: validity (first try, after repairs), constraints."""
    message = reply["choices"][0]["message"]
    surface_check = reply.get("molt", {}).get("checks", {}).get("surface", {})
    checked, surface = GENUI.checked(case, message)
    outcome = Outcome(case.check["kind"], reply.get("molt", {}).get("specialist", ""), message.get("content") or "")
    outcome.valid_after_repair = surface is not None
    outcome.valid_first_try = outcome.valid_after_repair and surface_check.get("repairs") == 0 and not surface_check.get("slip_fixed")
    outcome.constraints = surface is not None and meets(case.check, surface)
    if surface is None:
        if not surface_check:
            outcome.note = "not a surface"  # the proxy saw no A2UI messages: an answer in words
        else:
            problem = surface_check.get("problem")  # why the proxy fell back to text, else why the family refuses it
            outcome.note = f"{problem['code']} at {problem['path']}: {problem['message']}" if problem else str(checked.problems[0]) if checked.problems else "another surface than the one to make or edit"
    return outcome


def use_in_browser(page, case: Case, outcome: Outcome, errors: list[str]) -> bool:
    """Draw the surface (after the ones already shown) and use every input and button on it.
    Returns whether what was drawn validates under ``a2ui-core`` (and molt's rules)."""
    checked, surface = GENUI.checked(case, {"content": outcome.content})
    drawn = [*earlier_messages(case), *checked.messages]
    errors.clear()
    host = page.locator(f'#molt-check a2ui-surface[data-surface-id="{surface.id}"]')
    try:
        hosts = page.evaluate("messages => window.moltCheck.draw(messages)", drawn)
        host.wait_for(state="visible", timeout=WAIT_MS)
        page.wait_for_timeout(50)
        shown = host.evaluate("h => h.getBoundingClientRect().height > 0 && (h.shadowRoot ?? h).childElementCount > 0")
    except Exception as e:  # noqa: BLE001 - whatever stops the draw is the finding
        hosts, shown, errors = 0, False, [*errors, f"not drawn: {str(e).splitlines()[0]}"]
    outcome.renders = hosts >= 1 and shown and not errors
    if not outcome.renders:
        outcome.note = outcome.note or (errors[0][:200] if errors else "nothing drawn")
        outcome.interactions = None if outcome.kind in STILL else False
        return checked.valid
    if outcome.kind in STILL:
        return checked.valid
    problems = interact(page, host, surface)
    outcome.interactions = not problems and not errors and bool(inputs_and_buttons(surface))
    if not outcome.interactions:
        outcome.note = outcome.note or (problems or errors or ["nothing to use on a surface meant for use"])[0][:200]
    return checked.valid


def inputs_and_buttons(surface: Surface) -> list:
    return surface.of("TextField", "DateTimeInput", "CheckBox", "ChoicePicker", "Slider", "Button")


def tab_holding(surface: Surface, component_id: str) -> str | None:
    """The title of the tab a component sits in (it must be opened first), if any."""
    for tabs in surface.of("Tabs"):
        for page in tabs.properties.get("tabs", []):
            if page.get("child") == component_id or any(c.id == component_id for c in surface.under(page.get("child", ""))):
                return page.get("title") if isinstance(page.get("title"), str) else None
    return None


def interact(page, host, surface: Surface) -> list[str]:
    """Problems found using each input and button of ``surface`` (empty: everything worked)."""
    problems = []
    for c in inputs_and_buttons(surface):
        label = surface.text_of(c.id)
        tab = tab_holding(surface, c.id)
        try:
            if tab:
                host.get_by_role("button", name=tab, exact=True).first.click(timeout=WAIT_MS)
            if c.name == "Button":
                problems += pressed(page, host, c, label)
            else:
                problems += entered(page, host, surface, c, label)
        except Exception as e:  # noqa: BLE001 - a control that cannot be found or used is the finding
            problems.append(f"{c.name} {label!r}: {str(e).splitlines()[0]}")
    return problems


def pressed(page, host, button, label: str) -> list[str]:
    if not label:
        return [f"Button {button.id!r} has no text to be found by"]
    event = ((button.properties.get("action") or {}).get("event") or {}).get("name")
    before = page.evaluate("() => window.moltCheck.actions.length")
    host.get_by_role("button", name=label, exact=True).first.click(timeout=WAIT_MS)
    if event is None:  # a local function call: it ran without an error (console errors are counted)
        return []
    page.wait_for_function(f"() => window.moltCheck.actions.length > {before}", timeout=WAIT_MS)
    sent = page.evaluate("() => window.moltCheck.actions.at(-1).name")
    return [] if sent == event else [f"Button {label!r} sent {sent!r}, not {event!r}"]


def entered(page, host, surface: Surface, c, label: str) -> list[str]:
    bound = c.properties.get("value")
    path = bound.get("path") if isinstance(bound, dict) else None
    if not label or not path:
        return [f"{c.name} {c.id!r} has no label to be found by or no bound path"]
    if c.name == "ChoicePicker":
        options = c.properties.get("options") or []
        last = options[-1]
        host.get_by_text(str(last.get("label")), exact=True).first.click(timeout=WAIT_MS)
        want = last.get("value")
        check = "v => Array.isArray(v) ? v.includes(want) : v === want"
    else:
        field = host.get_by_label(label, exact=True).first
        if c.name == "CheckBox":
            was = bool(page.evaluate("([s, p]) => window.moltCheck.value(s, p)", [surface.id, path]))
            field.click(timeout=WAIT_MS)
            want, check = not was, "v => Boolean(v) === want"
        else:
            want = typed(c)
            field.fill(str(want), timeout=WAIT_MS)
            check = "v => String(v).includes(String(want))"
    got = page.evaluate(f"([s, p, want]) => ({check})(window.moltCheck.value(s, p))", [surface.id, path, want])
    return [] if got else [f"{c.name} {label!r}: the value did not reach {path}"]


def typed(c) -> str | float:
    """A value a user could type into input ``c`` (as its HTML input type takes it)."""
    if c.name == "Slider":
        return c.properties.get("max", 100)
    if c.name == "DateTimeInput":
        date, time = c.properties.get("enableDate", False), c.properties.get("enableTime", False)
        return "2027-03-14T13:45" if date and time else "13:45" if time else "2027-03-14"
    return "typed in a check"


def browse(url: str, cases: list[Case], outcomes: dict[str, list[Outcome]], console: Console) -> dict[str, int]:
    """Each valid answer drawn and used in Chromium; returns how many surfaces reached the page,
    and how many of those validate under ``a2ui-core`` (all of them: only checked ones are drawn)."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise ValueError("no Chromium on this machine: `make services` installs Debian's chromium (or run with --no-browser)")
    reached = Counter()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1000, "height": 900})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url)
        page.wait_for_function("window.moltCheck !== undefined")
        valid = [(system, case, o) for system in outcomes for case, o in zip(cases, outcomes[system]) if o.valid_after_repair]
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("drawing and using surfaces in Chromium", total=len(valid))
            for system, case, outcome in valid:
                reached[system] += 1
                reached[f"{system}_validates"] += use_in_browser(page, case, outcome, errors)
                progress.advance(task)
        browser.close()
    return dict(reached)


def run(hcp: HCP, config: GenuiBenchConfig, console: Console) -> dict:
    genui = next((s for s in hcp.specialists if s.label == GENUI.name and s.adapter), None)
    if genui is None:
        raise ValueError("this HCP has no trained genui specialist; run `molt specialists bootstrap` first")
    cases = GENUI.generate("heldout", config.cases, config.seed)
    answered: dict[str, list[dict]] = {}
    limits = Limits(max_per_client=config.concurrency)
    with engine_thread(hcp) as served, scratch_database() as base_db, scratch_database() as db:
        # single-turn answers: no later turn reads a summary, so the proxies skip writing them
        base_app = create_proxy_app(without_adapter(served, GENUI.name), limits, summaries=False, db=base_db)
        with ServerThread(base_app) as base_url, ServerThread(proxy_with_page(served, db=db, limits=limits, summaries=False)) as url:
            plan = {"base": (base_url, GENUI.name), "specialist": (url, GENUI.name), "routed": (url, "molt")}
            with Progress(console=console, transient=True) as progress:
                for system, (where, model) in plan.items():
                    task = progress.add_task(f"{system}: {len(cases)} held-out requests", total=len(cases))
                    answered[system] = replies(f"{where}/v1", model, cases, concurrency=config.concurrency, on_reply=lambda: progress.advance(task))
            outcomes = {system: [checked_outcome(case, reply) for case, reply in zip(cases, answered[system])] for system in SYSTEMS}
            reached = browse(url, cases, outcomes, console) if config.browser else {}
    table = summary(outcomes)
    print_table(table, len(cases), config.browser, console)
    print_kinds(cases, outcomes, console)
    if config.browser:
        for system in SYSTEMS:
            console.print(f"{system}: {reached.get(system, 0)} surfaces reached the page, {reached.get(f'{system}_validates', 0)} of them valid under a2ui-core")
    return {
        "cases": len(cases), "seed": config.seed, "split": "heldout", "withheld": GENUI.withheld, "kinds": dict(Counter(c.check["kind"] for c in cases)),
        "settings": {"temperature": 0, "max_tokens": GENUI.max_tokens, "repairs": hcp.ui.repairs}, "browser": config.browser,
        "systems": table, "reached_page": reached, "per_case": {s: [o.as_dict() for o in outcomes[s]] for s in SYSTEMS},
    }


def summary(outcomes: dict[str, list[Outcome]]) -> dict[str, dict[str, float]]:
    table = {}
    for system, found in outcomes.items():
        used = [o.interactions for o in found if o.kind not in STILL]
        table[system] = {column: sum(bool(getattr(o, column)) for o in found) / len(found) for column in COLUMNS if column != "interactions"}
        table[system]["interactions"] = sum(bool(u) for u in used) / len(used) if used else 0.0
        table[system]["routed_to_genui"] = sum(o.specialist == GENUI.name for o in found) / len(found)
    return table


def print_table(table: dict, n: int, browser: bool, console: Console) -> None:
    rows = []
    for column, header in zip(COLUMNS, HEADERS):
        if column in ("renders", "interactions") and not browser:
            continue
        base, special, routed = (table[s][column] for s in SYSTEMS)
        rows.append([header, base, special, routed, special - base])
    rows.append(["answered by genui", *(table[s]["routed_to_genui"] for s in SYSTEMS), 0.0])
    title = f"genui on {n} held-out requests (share of cases; temperature 0, max_tokens {GENUI.max_tokens}, the proxy's surface gate for every system)"
    print_rows(title, ["column", "base", "specialist", "routed (molt)", "specialist − base"], rows, console)


def print_kinds(cases: list[Case], outcomes: dict[str, list[Outcome]], console: Console) -> None:
    kinds = list(dict.fromkeys(c.check["kind"] for c in cases))
    rows = []
    for kind in kinds:
        picked = [i for i, c in enumerate(cases) if c.check["kind"] == kind]
        rows.append([kind, len(picked), *(f"{sum(outcomes[s][i].valid_after_repair for i in picked)} / {sum(outcomes[s][i].constraints for i in picked)}" for s in SYSTEMS)])
    print_rows("per kind: valid after repair / constraints met", ["kind", "n", *SYSTEMS], rows, console)
