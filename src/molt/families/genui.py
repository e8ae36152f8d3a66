"""The ``genui`` family: UI requests answered with valid A2UI v0.9 messages from molt's catalog.

Nine kinds, each built from the request's own words (the labels, options, rows and values the
user lists appear in the surface): forms, pickers, checklists, info cards and confirmations;
tables and charts (dashboards of the user's figures); multi-step wizards (one tab per step);
and edits of a surface shown earlier in the conversation (a field or an item added, a button
renamed), answered with ``updateComponents`` for that surface, not a new one.

- ``train`` and ``wording``: the train things (``wording`` asks for them with held-out templates).
- ``heldout``: other purposes, fields, options, items, rows, figures, steps and edits, none of
  them in train.

An answer is A2UI messages, one per line (``molt.ui.a2ui``). The scorer checks validity (the
official ``a2ui-core`` validator and molt's rules, after the surfaces the conversation already
holds) and then that the surface is the one asked for: a form has an input labelled with each
requested field and a submit button; a picker's options are the requested ones; a checklist has a
CheckBox per item; a card holds a text per requested line; a confirmation names the action and
offers two buttons with different events; a table has the requested columns and every row; a
chart is of the requested kind with the labels and values given; a wizard has a tab per step,
in order, holding that step's inputs, and a button; an edit leaves the earlier surface with the
change made and everything else it showed.
"""

import json
import re
from typing import Any

from molt.families.base import Case, Family, Message, Recipe, Split, fill, rng_for
from molt.ui.a2ui import Surface, button, check_answer, surface_id_of, surface_messages

FORMS = {
    "train": [
        ("sign up for the newsletter", "Newsletter signup", ["Name", "Email"]),
        ("book a haircut", "Haircut booking", ["Name", "Phone", "Date"]),
        ("report a bug", "Bug report", ["Title", "Steps", "Email"]),
        ("request a refund", "Refund request", ["Order number", "Reason"]),
        ("RSVP to the party", "Party RSVP", ["Name", "Guests", "Date"]),
        ("give feedback on the app", "App feedback", ["Rating", "Comment"]),
        ("apply for the job", "Job application", ["Name", "Email", "Start date"]),
    ],
    "heldout": [
        ("register a new pet", "Pet registration", ["Pet name", "Species", "Birth date"]),
        ("rent a kayak", "Kayak rental", ["Renter", "Hours", "Pickup date"]),
        ("adopt a library card", "Library card", ["Full name", "Address", "Postcode"]),
        ("submit a warranty claim", "Warranty claim", ["Serial number", "Fault", "Purchase date"]),
        ("enrol in the pottery class", "Pottery enrolment", ["Student", "Level", "Course date"]),
    ],
}
PICKERS = {
    "train": [
        ("a delivery time", ["Morning", "Afternoon", "Evening"]),
        ("a pizza size", ["Small", "Medium", "Large"]),
        ("a seat class", ["Economy", "Business", "First"]),
        ("a theme", ["Light", "Dark", "System"]),
        ("a payment method", ["Card", "PayPal", "Cash"]),
        ("a workout", ["Run", "Swim", "Yoga", "Cycling"]),
    ],
    "heldout": [
        ("a coffee roast", ["Blonde", "Medium roast", "Espresso"]),
        ("a shipping speed", ["Standard", "Express", "Overnight"]),
        ("a hotel room", ["Single", "Double", "Suite"]),
        ("a paint colour", ["Teal", "Coral", "Ivory", "Slate"]),
        ("a language level", ["Beginner", "Intermediate", "Fluent"]),
    ],
}
CHECKLISTS = {
    "train": [
        ("packing for the beach", ["Towel", "Sunscreen", "Hat"]),
        ("moving day", ["Boxes", "Tape", "Van keys"]),
        ("the morning routine", ["Stretch", "Coffee", "Emails"]),
        ("a dinner party", ["Wine", "Candles", "Dessert"]),
        ("a camping trip", ["Tent", "Lamp", "Water", "Map"]),
    ],
    "heldout": [
        ("the bike repair", ["Pump", "Spanner", "Inner tube"]),
        ("a baby shower", ["Balloons", "Gift bags", "Cupcakes"]),
        ("the tax return", ["Receipts", "Payslips", "Bank statements"]),
        ("a ski weekend", ["Goggles", "Gloves", "Lift pass", "Thermals"]),
    ],
}
CARDS = {
    "train": [
        ("today's agenda", ["9:00 Standup", "12:30 Lunch with Mia", "16:00 Review"]),
        ("the weather in Oslo", ["12 degrees", "Light rain"]),
        ("my order status", ["Order 4411", "Shipped", "Arrives Friday"]),
        ("the team contacts", ["Ana: ana@example.com", "Ben: ben@example.com"]),
        ("this week's goals", ["Finish the report", "Run 10 km"]),
    ],
    "heldout": [
        ("the flight details", ["Gate B12", "Boarding 14:05", "Seat 22A"]),
        ("my gym membership", ["Plan: Premium", "Renews in March"]),
        ("the recipe summary", ["Serves 4", "Prep 25 min", "Oven 180 C"]),
        ("the parcel tracking", ["Parcel 7781", "Out for delivery"]),
    ],
}
CONFIRMS = {
    "train": ["deleting the photo album", "cancelling the subscription", "sending the invoice", "resetting the password", "leaving the group"],
    "heldout": ["archiving the project", "removing the device", "closing the account", "publishing the post"],
}
TABLES = {
    "train": [
        ("my monthly expenses", ["Item", "Amount"], [["Rent", "900"], ["Food", "320"], ["Travel", "150"]]),
        ("the team's tasks", ["Task", "Owner"], [["Design", "Ana"], ["Backend", "Ben"], ["Testing", "Cleo"]]),
        ("the league standings", ["Team", "Points"], [["Lions", "21"], ["Hawks", "18"], ["Bears", "12"]]),
        ("my reading list", ["Book", "Author"], [["Dune", "Herbert"], ["Emma", "Austen"]]),
        ("the shift rota", ["Day", "Person"], [["Monday", "Dev"], ["Tuesday", "Ola"], ["Wednesday", "Kim"]]),
    ],
    "heldout": [
        ("the garden plants", ["Plant", "Water every"], [["Basil", "2 days"], ["Cactus", "3 weeks"], ["Fern", "4 days"]]),
        ("the quarterly sales", ["Region", "Revenue"], [["North", "4200"], ["South", "3900"], ["West", "5100"]]),
        ("my vaccination record", ["Vaccine", "Year given"], [["Tetanus", "2019"], ["Hepatitis B", "2021"]]),
        ("the choir members", ["Singer", "Voice"], [["Iris", "Soprano"], ["Tomas", "Bass"], ["Yuki", "Alto"]]),
    ],
}
CHARTS = {
    "train": [
        ("my steps this week", "bar", "Steps", ["Mon", "Tue", "Wed", "Thu"], [4000, 6500, 8000, 5200]),
        ("the website visits", "line", "Visits", ["Jan", "Feb", "Mar"], [120, 180, 240]),
        ("my sleep", "bar", "Sleep time", ["Fri", "Sat", "Sun"], [6, 9, 8]),
        ("the shop income", "line", "Income", ["Q1", "Q2", "Q3", "Q4"], [30, 45, 40, 60]),
        ("the rainfall", "bar", "Rain", ["April", "May", "June"], [55, 40, 20]),
    ],
    "heldout": [
        ("the solar panel output", "line", "kWh", ["Week 1", "Week 2", "Week 3"], [310, 290, 350]),
        ("the cafe orders", "bar", "Orders", ["Espresso", "Latte", "Mocha"], [48, 75, 22]),
        ("my running pace", "line", "Minutes per km", ["Run 1", "Run 2", "Run 3", "Run 4"], [6.1, 5.8, 5.6, 5.5]),
        ("the library loans", "bar", "Loans", ["Novels", "Comics", "Atlases"], [140, 95, 12]),
    ],
}
WIZARDS = {
    "train": [
        ("open a bank account", "Bank account", [("Personal", ["Name", "Date of birth"]), ("Contact", ["Email", "Phone"])]),
        ("book a flight", "Flight booking", [("Trip", ["From", "To"]), ("Passenger", ["Name", "Passport"])]),
        ("set up the printer", "Printer setup", [("Network", ["Wifi name", "Password"]), ("Device", ["Printer name"])]),
        ("plan a wedding", "Wedding plan", [("Venue", ["Place", "Date"]), ("Guests", ["Count", "Diet notes"])]),
    ],
    "heldout": [
        ("lodge an insurance claim", "Insurance claim", [("Incident", ["Incident date", "Location"]), ("Damage", ["Description", "Estimate"])]),
        ("onboard a volunteer", "Volunteer onboarding", [("About you", ["Volunteer name", "Skills"]), ("Availability", ["Weekdays", "First shift date"])]),
        ("order custom furniture", "Furniture order", [("Piece", ["Wood type", "Width"]), ("Shipping", ["Street", "Arrival date"])]),
    ],
}
EDITS = {
    "train": {"add_field": ["Notes", "Company", "Country"], "add_item": ["Snacks", "Charger", "Umbrella"], "rename": ["Send", "Save", "Done"]},
    "heldout": {"add_field": ["Emergency contact", "Allergies", "Licence number"], "add_item": ["First aid kit", "Spare batteries"], "rename": ["Register now", "Complete", "Lodge it"]},
}
REQUESTS = {
    "train": {
        "form": ["Show me a form to {what} with fields {items}.", "Make a form so I can {what}: {items}."],
        "picker": ["Give me a picker for {what}: {items}.", "Let me choose {what} from {items}."],
        "checklist": ["Make a checklist for {what}: {items}.", "Show a checklist for {what} with {items}."],
        "card": ["Make a card with {what}: {items}.", "Show a card for {what} listing {items}."],
        "confirm": ["Ask me to confirm {what}.", "Show a confirmation dialog for {what}."],
        "table": ["Show {what} as a table with columns {columns}: {rows}.", "Make a table of {what} ({columns}): {rows}."],
        "chart": ["Show {what} as a {chart} chart of {series}: {points}.", "Make a {chart} chart of {what} ({series}): {points}."],
        "wizard": ["Make a wizard to {what} in steps: {steps}.", "Show a step-by-step form to {what}: {steps}."],
        "add_field": ["Add a {new} field to the form.", "Put a {new} field on that form too."],
        "add_item": ["Add {new} to the checklist.", "Also put {new} on that checklist."],
        "rename": ["Rename the button to {new}.", "Change the button text to {new}."],
    },
    "heldout": {
        "form": ["I need a UI form to {what}, asking for {items}.", "Build an input form to {what} (fields: {items})."],
        "picker": ["Render a selector so I can pick {what} among {items}.", "Build a choice widget for {what} with options {items}."],
        "checklist": ["Render a to-tick list for {what} containing {items}.", "Build me checkboxes for {what}: {items}."],
        "card": ["Render {what} as a card with {items}.", "Build an info card about {what} showing {items}."],
        "confirm": ["Render a yes/no prompt before {what}.", "Build a dialog that double-checks {what}."],
        "table": ["Render a grid of {what}, headed {columns}, rows {rows}.", "Lay out {what} in rows under {columns}: {rows}."],
        "chart": ["Plot {what} in a {chart} graph of {series}: {points}.", "Visualise {what} with a {chart} graph, {series}: {points}."],
        "wizard": ["Build a multi-step flow to {what}, with {steps}.", "Split the form to {what} into stages: {steps}."],
        "add_field": ["The form also needs a {new} input.", "Extend that form with {new}."],
        "add_item": ["That list is missing {new}; add it.", "Extend the to-tick list with {new}."],
        "rename": ["Label the button {new} instead.", "The button should say {new}."],
    },
}
KINDS = ("form", "picker", "checklist", "card", "confirm", "table", "chart", "wizard", "edit")
EDIT_KINDS = ("add_field", "add_item", "rename")
INPUTS = {"TextField", "DateTimeInput", "ChoicePicker", "CheckBox"}


def key(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def listed(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else items[0]


def number(value: float) -> str:
    return f"{value:g}"


def field_of(label: str) -> dict:
    """A form input: a date picker for a date, else a text field, bound to /<key>."""
    if "date" in label.lower():
        return {"id": key(label), "component": "DateTimeInput", "label": label, "value": {"path": f"/{key(label)}"}, "enableDate": True}
    return {"id": key(label), "component": "TextField", "label": label, "value": {"path": f"/{key(label)}"}}


def surface_of(spec: dict) -> tuple[str, list[dict], dict]:
    """(surface id, components, data model) of the surface ``spec`` asks for; the root is added by ``build``."""
    kind, what = spec["kind"], spec["what"]
    if kind == "form":
        parts = [{"id": "heading", "component": "Text", "text": spec["title"], "variant": "h1"}, *map(field_of, spec["shows"]), *button("submit", spec.get("button", "Submit"), "submit")]
        return f"{key(spec['title'])}_form", parts, {key(f): "" for f in spec["shows"]}
    if kind == "picker":
        options = [{"label": item, "value": key(item)} for item in spec["shows"]]
        parts = [{"id": "choice", "component": "ChoicePicker", "label": f"Choose {what}", "options": options, "value": {"path": "/choice"}}, *button("confirm", "Confirm", "confirm")]
        return f"{key(what)}_picker", parts, {"choice": [key(spec["shows"][0])]}
    if kind == "checklist":
        parts = [{"id": "heading", "component": "Text", "text": what.capitalize(), "variant": "h2"}]
        parts += [{"id": key(i), "component": "CheckBox", "label": i, "value": {"path": f"/{key(i)}"}} for i in spec["shows"]]
        return f"{key(what)}_checklist", parts, {key(i): False for i in spec["shows"]}
    if kind == "card":
        texts = [{"id": f"line{n}", "component": "Text", "text": line} for n, line in enumerate(spec["shows"], 1)]
        parts = [{"id": "card", "component": "Card", "child": "card_body"}, {"id": "card_body", "component": "Column", "children": ["heading", *[t["id"] for t in texts]]},
                 {"id": "heading", "component": "Text", "text": what.capitalize(), "variant": "h2"}, *texts]
        return f"{key(what)}_card", parts, {}
    if kind == "confirm":
        parts = [{"id": "question", "component": "Text", "text": f"Are you sure about {what}?"},
                 {"id": "buttons", "component": "Row", "children": ["yes", "no"]}, *button("yes", "Yes", "confirm"), *button("no", "No", "cancel")]
        return f"confirm_{key(what)}", parts, {}
    if kind == "table":
        parts = [{"id": "heading", "component": "Text", "text": what.capitalize(), "variant": "h2"}, {"id": "table", "component": "Table", "columns": spec["columns"], "rows": spec["rows"]}]
        return f"{key(what)}_table", parts, {}
    if kind == "chart":
        series = [{"name": spec["series"], "values": spec["values"]}]
        parts = [{"id": "chart", "component": "Chart", "kind": spec["chart"], "title": what.capitalize(), "labels": spec["labels"], "series": series}]
        return f"{key(what)}_chart", parts, {}
    if kind == "wizard":
        tabs, steps = [], []
        for n, (title, fields) in enumerate(spec["steps"], 1):
            tabs.append({"title": f"{n}. {title}", "child": f"step{n}"})
            steps += [{"id": f"step{n}", "component": "Column", "children": [key(f) for f in fields]}, *map(field_of, fields)]
        parts = [{"id": "heading", "component": "Text", "text": spec["title"], "variant": "h1"}, {"id": "steps", "component": "Tabs", "tabs": tabs}, *steps, *button("submit", "Submit", "submit")]
        return f"{key(spec['title'])}_wizard", parts, {key(f): "" for _, fields in spec["steps"] for f in fields}
    raise ValueError(f"no surface for kind {kind!r}")


def with_root(parts: list[dict]) -> list[dict]:
    """A Column root holding every component no other one holds."""
    held = {child for p in parts for child in [*p.get("children", []), p.get("child"), *(t["child"] for t in p.get("tabs", []))]}
    return [{"id": "root", "component": "Column", "children": [p["id"] for p in parts if p["id"] not in held]}, *parts]


def build(spec: dict) -> str:
    """The reference answer (A2UI messages, one per line) for ``spec``: a new surface, or for an
    edit, the updates of the earlier one (its root re-sent when a component joins it)."""
    if spec["kind"] != "edit":
        surface_id, parts, data = surface_of(spec)
        return surface_messages(surface_id, with_root(parts), data)
    base, new = spec["base"], spec["new"]
    surface_id, before, _ = surface_of(base)
    if spec["edit"] == "rename":
        changed = [{"id": "submit_label", "component": "Text", "text": new}]
        return updates(surface_id, changed, {})
    added = {"add_field": field_of(new), "add_item": {"id": key(new), "component": "CheckBox", "label": new, "value": {"path": f"/{key(new)}"}}}[spec["edit"]]
    parts = [*before[:-2], added, *before[-2:]] if spec["edit"] == "add_field" else [*before, added]
    return updates(surface_id, [with_root(parts)[0], added], {key(new): "" if spec["edit"] == "add_field" else False})


def updates(surface_id: str, components: list[dict], data: dict) -> str:
    """An edit as lines: updateComponents for the changed components, one updateDataModel per new path."""
    lines = [{"version": "v0.9", "updateComponents": {"surfaceId": surface_id, "components": components}}]
    lines += [{"version": "v0.9", "updateDataModel": {"surfaceId": surface_id, "path": f"/{path}", "value": value}} for path, value in data.items()]
    return "\n".join(json.dumps(line, ensure_ascii=False) for line in lines)


def same(a: str, b: str) -> bool:
    return " ".join(str(a).lower().split()) == " ".join(str(b).lower().split())


def labelled(surface: Surface, names: set[str], label: str, within: list | None = None) -> bool:
    return any(same(surface.text_of(c.id), label) for c in (within if within is not None else surface.components.values()) if c.name in names)


def meets(spec: dict, surface: Surface) -> bool:
    """The surface is the one requested: right component kinds carrying the requested labels and values."""
    kind, what, items = spec["kind"], spec["what"], spec.get("shows", [])
    if kind == "form":
        return all(labelled(surface, INPUTS, field) for field in items) and bool(surface.of("Button"))
    if kind == "picker":
        wanted = sorted(map(str.lower, items))
        return any(sorted(str(o.get("label", "")).lower() for o in c.properties["options"]) == wanted for c in surface.of("ChoicePicker"))
    if kind == "checklist":
        return all(labelled(surface, {"CheckBox"}, item) for item in items)
    if kind == "card":
        inside = [c for card in surface.of("Card") for c in surface.under(card.id)]
        return all(labelled(surface, {"Text"}, item, inside) for item in items)
    if kind == "confirm":
        words = [w for w in re.findall(r"\w+", what.lower()) if w != "the"]
        named = any(all(w in surface.text_of(c.id).lower() for w in words) for c in surface.of("Text"))
        events = {c.properties["action"].get("event", {}).get("name") for c in surface.of("Button")} - {None}
        return named and len(events) >= 2
    if kind == "table":
        for table in surface.of("Table"):
            rows = table.properties["rows"]
            if [c.lower() for c in table.properties["columns"]] == [c.lower() for c in spec["columns"]] and isinstance(rows, list):
                cells = [[str(v).lower() for v in row] for row in rows]
                if all([v.lower() for v in row] in cells for row in spec["rows"]):
                    return True
        return False
    if kind == "chart":
        return any(c.properties["kind"] == spec["chart"] and [l.lower() for l in c.properties["labels"]] == [l.lower() for l in spec["labels"]]
                   and any([float(v) for v in s["values"]] == [float(v) for v in spec["values"]] for s in c.properties["series"]) for c in surface.of("Chart"))
    if kind == "wizard":
        for tabs in surface.of("Tabs"):
            pages = tabs.properties["tabs"]
            if len(pages) == len(spec["steps"]) and all(
                step.lower() in str(page["title"]).lower() and all(labelled(surface, INPUTS, f, surface.under(page["child"])) for f in fields)
                for page, (step, fields) in zip(pages, spec["steps"])
            ):
                return bool(surface.of("Button"))
        return False
    if kind == "edit":
        base = spec["base"]
        if spec["edit"] == "rename":
            return meets(base, surface) and any(same(surface.text_of(c.id), spec["new"]) for c in surface.of("Button"))
        return meets({**base, "shows": [*base["shows"], spec["new"]]}, surface)
    raise ValueError(f"no check for kind {kind!r}")


def earlier_messages(case: Case) -> list[dict]:
    """The A2UI messages of the conversation's earlier answers: what a client already holds."""
    held = []
    for message in case.messages:
        if message["role"] == "assistant":
            checked = check_answer(message.get("content") or "", held)
            held += checked.messages if checked.valid else []
    return held


def spec_for(kind: str, things: str, rng) -> dict:
    """A random request of ``kind`` from the ``things`` of a split (train or heldout)."""
    if kind == "form":
        what, title, items = rng.choice(FORMS[things])
        return {"kind": kind, "what": what, "title": title, "shows": list(items)}
    if kind == "confirm":
        return {"kind": kind, "what": rng.choice(CONFIRMS[things]), "shows": []}
    if kind in ("picker", "checklist", "card"):
        what, items = rng.choice({"picker": PICKERS, "checklist": CHECKLISTS, "card": CARDS}[kind][things])
        items = list(items)
        if kind != "card" and len(items) > 3 and rng.random() < 0.5:
            items = items[:3]
        return {"kind": kind, "what": what, "shows": items}
    if kind == "table":
        what, columns, rows = rng.choice(TABLES[things])
        return {"kind": kind, "what": what, "columns": list(columns), "rows": [list(r) for r in rows], "shows": [r[0] for r in rows]}
    if kind == "chart":
        what, chart, series, labels, values = rng.choice(CHARTS[things])
        return {"kind": kind, "what": what, "chart": chart, "series": series, "labels": list(labels), "values": list(values), "shows": list(labels)}
    if kind == "wizard":
        what, title, steps = rng.choice(WIZARDS[things])
        return {"kind": kind, "what": what, "title": title, "steps": [[s, list(f)] for s, f in steps], "shows": [f for _, fields in steps for f in fields]}
    edit = rng.choice(EDIT_KINDS)
    base = spec_for("checklist" if edit == "add_item" else "form", things, rng)
    new = rng.choice([n for n in EDITS[things][edit] if n not in base["shows"]])
    return {"kind": kind, "what": base["what"], "edit": edit, "base": base, "new": new, "shows": [*base["shows"], new]}


def request_for(spec: dict, templates: dict[str, list[str]], rng) -> str:
    kind = spec["kind"]
    values: dict[str, Any] = {"what": spec["what"], "items": listed(spec["shows"]) if spec["shows"] else ""}
    if kind == "table":
        values |= {"columns": listed(spec["columns"]), "rows": "; ".join(": ".join(row) for row in spec["rows"])}
    elif kind == "chart":
        values |= {"chart": spec["chart"], "series": spec["series"], "points": ", ".join(f"{l} {number(v)}" for l, v in zip(spec["labels"], spec["values"]))}
    elif kind == "wizard":
        values["steps"] = "; ".join(f"{n}. {title} ({listed(fields)})" for n, (title, fields) in enumerate(spec["steps"], 1))
    elif kind == "edit":
        values["new"] = spec["new"]
        return fill(rng.choice(templates[spec["edit"]]), values)
    return fill(rng.choice(templates[kind]), values)


class GenuiFamily(Family):
    name = "genui"
    recipe = Recipe(examples=180, epochs=2, learning_rate=3e-3)
    max_tokens = 512
    withheld = "form purposes, fields, options, items, rows, figures, wizard steps and edits never trained on"

    def generate(self, split: Split, n: int, seed: int = 0, **options: Any) -> list[Case]:
        """``n`` cases, the kinds in turn (every kind equally often), the rest drawn at random."""
        rng = rng_for(split, seed, self.name)
        things = "heldout" if split == "heldout" else "train"
        templates = REQUESTS["train" if split == "train" else "heldout"]
        cases = []
        for i in range(n):
            spec = spec_for(KINDS[i % len(KINDS)], things, rng)
            messages: list[Message] = []
            if spec["kind"] == "edit":  # the surface to edit, asked for and shown in an earlier turn
                messages = [{"role": "user", "content": request_for(spec["base"], templates, rng)}, {"role": "assistant", "content": build(spec["base"])}]
            messages.append({"role": "user", "content": request_for(spec, templates, rng)})
            cases.append(Case(self.name, messages, {"role": "assistant", "content": build(spec)}, check=spec))
        return cases

    def checked(self, case: Case, message: Message):
        """The answer checked after the conversation's earlier surfaces, and the surface it makes
        or edits (None when it is not valid or touches any other surface)."""
        checked = check_answer(message.get("content") or "", earlier_messages(case))
        touched = {surface_id_of(m) for m in checked.messages}
        if not checked.valid or len(touched) != 1:
            return checked, None
        [surface_id] = touched
        if case.check["kind"] == "edit":
            expected = surface_of(case.check["base"])[0]
            if surface_id != expected or any("createSurface" in m for m in checked.messages):
                return checked, None  # an edit changes the surface shown, it does not make another
        return checked, checked.surfaces[surface_id]

    def failure(self, case: Case, message: Message) -> str:
        return "invalid surface" if self.checked(case, message)[1] is None else "surface misses the request"

    def score(self, case: Case, message: Message) -> dict[str, float]:
        _, surface = self.checked(case, message)
        if surface is None:
            return {"score": 0.0, "valid": 0.0}
        return {"score": float(meets(case.check, surface)), "valid": 1.0}

    def summarise(self, scores: list[dict[str, float]]) -> dict[str, float]:
        summary = super().summarise(scores)
        summary["valid"] = sum(s["valid"] for s in scores) / len(scores) if scores else 0.0
        return summary

    def summary_of(self, case: Case) -> str:
        if case.check["kind"] == "edit":
            return f"I changed the UI surface: {case.check['edit'].replace('_', ' ')} {case.check['new']}."
        shown = f" with {', '.join(case.check['shows'])}" if case.check["shows"] else ""
        return f"I showed the user a UI surface{shown}."

    def contents(self, case: Case) -> list[str]:
        _, surface = self.checked(case, case.answer)
        texts = [surface.text_of(c.id) for c in surface.components.values()] + [o["label"] for c in surface.of("ChoicePicker") for o in c.properties["options"]]
        texts += [" ".join(map(str, [*c.properties["columns"], *sum(c.properties["rows"], [])])) for c in surface.of("Table")]
        texts += [" ".join([*c.properties["labels"], *(s["name"] for s in c.properties["series"])]) for c in surface.of("Chart")]
        texts += [str(t["title"]) for c in surface.of("Tabs") for t in c.properties["tabs"]]
        return [m["content"] for m in case.messages if m["role"] == "user"] + [" ".join(texts)]

    def entities(self, case: Case) -> set[str]:
        spec = case.check
        found = {spec["what"], *spec["shows"]}
        if spec["kind"] == "table":
            found |= {*spec["columns"], *(cell for row in spec["rows"] for cell in row)}
        if spec["kind"] == "chart":
            found.add(spec["series"])
        if spec["kind"] == "wizard":
            found |= {spec["title"], *(step for step, _ in spec["steps"])}
        return found


FAMILY = GenuiFamily()
