"""The ``genui`` family: UI requests answered with one valid surface from the component catalog.

Five kinds of surface (form, picker, checklist, info card, confirmation), each built from the
request's own words: the labels, options and items the user lists appear in the surface, so the
evaluator can check both validity (``molt.ui.catalog``) and that the asked-for parts are there.
"""

import json
import re

from molt.datagen.common import Case, Split, fill, rng_for
from molt.ui.catalog import CATALOG_ID, VERSION

FORMS = [
    ("sign up for the newsletter", "Newsletter signup", ["Name", "Email"]),
    ("book a haircut", "Haircut booking", ["Name", "Phone", "Date"]),
    ("report a bug", "Bug report", ["Title", "Steps", "Email"]),
    ("request a refund", "Refund request", ["Order number", "Reason"]),
    ("RSVP to the party", "Party RSVP", ["Name", "Guests", "Date"]),
    ("give feedback on the app", "App feedback", ["Rating", "Comment"]),
    ("apply for the job", "Job application", ["Name", "Email", "Start date"]),
]
PICKERS = [
    ("a delivery time", ["Morning", "Afternoon", "Evening"]),
    ("a pizza size", ["Small", "Medium", "Large"]),
    ("a seat class", ["Economy", "Business", "First"]),
    ("a theme", ["Light", "Dark", "System"]),
    ("a payment method", ["Card", "PayPal", "Cash"]),
    ("a workout", ["Run", "Swim", "Yoga", "Cycling"]),
]
CHECKLISTS = [
    ("packing for the beach", ["Towel", "Sunscreen", "Hat"]),
    ("moving day", ["Boxes", "Tape", "Van keys"]),
    ("the morning routine", ["Stretch", "Coffee", "Emails"]),
    ("a dinner party", ["Wine", "Candles", "Dessert"]),
    ("a camping trip", ["Tent", "Lamp", "Water", "Map"]),
]
CARDS = [
    ("today's agenda", ["9:00 Standup", "12:30 Lunch with Mia", "16:00 Review"]),
    ("the weather in Oslo", ["12 degrees", "Light rain"]),
    ("my order status", ["Order 4411", "Shipped", "Arrives Friday"]),
    ("the team contacts", ["Ana: ana@example.com", "Ben: ben@example.com"]),
    ("this week's goals", ["Finish the report", "Run 10 km"]),
]
CONFIRMS = ["deleting the photo album", "cancelling the subscription", "sending the invoice", "resetting the password", "leaving the group"]
REQUESTS = {
    "train": {
        "form": ["Show me a form to {what} with fields {items}.", "Make a form so I can {what}: {items}."],
        "picker": ["Give me a picker for {what}: {items}.", "Let me choose {what} from {items}."],
        "checklist": ["Make a checklist for {what}: {items}.", "Show a checklist for {what} with {items}."],
        "card": ["Make a card with {what}: {items}.", "Show a card for {what} listing {items}."],
        "confirm": ["Ask me to confirm {what}.", "Show a confirmation dialog for {what}."],
    },
    "heldout": {
        "form": ["I need a UI form to {what}, asking for {items}.", "Build an input form to {what} (fields: {items})."],
        "picker": ["Render a selector so I can pick {what} among {items}.", "Build a choice widget for {what} with options {items}."],
        "checklist": ["Render a to-tick list for {what} containing {items}.", "Build me checkboxes for {what}: {items}."],
        "card": ["Render {what} as a card with {items}.", "Build an info card about {what} showing {items}."],
        "confirm": ["Render a yes/no prompt before {what}.", "Build a dialog that double-checks {what}."],
    },
}


def key(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def listed(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1]


def surface(surface_id: str, components: list[dict], data: dict) -> str:
    body = {"surfaceId": surface_id, "catalogId": CATALOG_ID, "components": components, "dataModel": data}
    return json.dumps({"version": VERSION, "createSurface": body}, ensure_ascii=False)


def build(kind: str, what: str, items: list[str], title: str) -> str:
    """The surface's JSON; it shows every one of ``items``."""
    if kind == "form":
        fields = [{"id": key(f), "component": "DateTimeInput" if "date" in f.lower() else "TextField", "label": f, "value": {"path": f"/{key(f)}"}} for f in items]
        parts = [{"id": "heading", "component": "Text", "text": title, "variant": "h1"}, *fields, {"id": "submit", "component": "Button", "label": "Submit", "action": {"name": "submit"}}]
        data = {key(f): "" for f in items}
        sid = f"{key(title)}_form"
    elif kind == "picker":
        parts = [{"id": "choice", "component": "ChoicePicker", "label": f"Choose {what}", "options": items, "value": {"path": "/choice"}},
                 {"id": "confirm", "component": "Button", "label": "Confirm", "action": {"name": "confirm"}}]
        data = {"choice": items[0]}
        sid = f"{key(what)}_picker"
    elif kind == "checklist":
        parts = [{"id": "heading", "component": "Text", "text": what.capitalize(), "variant": "h2"}]
        parts += [{"id": key(i), "component": "Checkbox", "label": i, "value": {"path": f"/{key(i)}"}} for i in items]
        data = {key(i): False for i in items}
        sid = f"{key(what)}_checklist"
    elif kind == "card":
        texts = [{"id": f"line{n}", "component": "Text", "text": line} for n, line in enumerate(items, 1)]
        parts = [{"id": "card", "component": "Card", "children": ["heading", *[t["id"] for t in texts]]},
                 {"id": "heading", "component": "Text", "text": what.capitalize(), "variant": "h2"}, *texts]
        data = {}
        sid = f"{key(what)}_card"
    else:
        parts = [{"id": "question", "component": "Text", "text": f"Are you sure about {what}?"},
                 {"id": "buttons", "component": "Row", "children": ["yes", "no"]},
                 {"id": "yes", "component": "Button", "label": "Yes", "action": {"name": "confirm"}},
                 {"id": "no", "component": "Button", "label": "No", "action": {"name": "cancel"}}]
        data = {}
        sid = f"confirm_{key(what)}"
    root = {"id": "root", "component": "Column", "children": [p["id"] for p in parts if not any(p["id"] in q.get("children", []) for q in parts)]}
    return surface(sid, [root, *parts], data)


def generate(split: Split, n: int, seed: int = 0) -> list[Case]:
    rng = rng_for(split, seed, "genui")
    cases = []
    for _ in range(n):
        kind = rng.choice(["form", "picker", "checklist", "card", "confirm"])
        if kind == "form":
            what, title, items = rng.choice(FORMS)
        elif kind == "confirm":
            what, title, items = rng.choice(CONFIRMS), "", []
        else:
            what, items = rng.choice({"picker": PICKERS, "checklist": CHECKLISTS, "card": CARDS}[kind])
            title = what
        items = list(items)
        if kind in ("picker", "checklist") and len(items) > 3 and rng.random() < 0.5:
            items = items[:3]
        request = fill(rng.choice(REQUESTS[split][kind]), {"what": what, "items": listed(items) if items else ""})
        answer = {"role": "assistant", "content": build(kind, what, items, title)}
        cases.append(Case("genui", [{"role": "user", "content": request}], answer, check={"shows": items}))
    return cases
