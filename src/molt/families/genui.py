"""The ``genui`` family: UI requests answered with one valid A2UI v0.9 surface from molt's catalog.

Five kinds of surface (form, picker, checklist, info card, confirmation), each built from the
request's own words: the labels, options and items the user lists appear in the surface.

- ``train`` and ``wording``: the train forms, pickers, checklists, cards and confirmations
  (``wording`` asks for them with held-out templates).
- ``heldout``: other purposes, fields, options, items and actions, none of them in train.

An answer is A2UI messages, one per line (``molt.ui.a2ui``). The scorer checks validity (the
official ``a2ui-core`` validator and molt's rules) and then that the surface is the one asked for:
a form has an input component labelled with each requested field (bound to the data model) and
a submit button; a picker's options are the requested ones; a checklist has a CheckBox per item;
a card holds a text per requested line; a confirmation names the action and offers two buttons
with different events.
"""

import re
from typing import Any

from molt.families.base import Case, Family, Message, Recipe, Split, fill, rng_for
from molt.ui.a2ui import Surface, button, check_answer, surface_messages

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
KINDS = ("form", "picker", "checklist", "card", "confirm")
INPUTS = {"TextField", "DateTimeInput", "ChoicePicker", "CheckBox"}


def key(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def listed(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1]


def build(kind: str, what: str, items: list[str], title: str) -> str:
    """The reference answer (A2UI messages, one per line); its surface shows every one of ``items``."""
    if kind == "form":
        fields = [{"id": key(f), "component": "DateTimeInput", "label": f, "value": {"path": f"/{key(f)}"}, "enableDate": True} if "date" in f.lower()
                  else {"id": key(f), "component": "TextField", "label": f, "value": {"path": f"/{key(f)}"}} for f in items]
        parts = [{"id": "heading", "component": "Text", "text": title, "variant": "h1"}, *fields, *button("submit", "Submit", "submit")]
        data, sid = {key(f): "" for f in items}, f"{key(title)}_form"
    elif kind == "picker":
        options = [{"label": item, "value": key(item)} for item in items]
        parts = [{"id": "choice", "component": "ChoicePicker", "label": f"Choose {what}", "options": options, "value": {"path": "/choice"}},
                 *button("confirm", "Confirm", "confirm")]
        data, sid = {"choice": [key(items[0])]}, f"{key(what)}_picker"
    elif kind == "checklist":
        parts = [{"id": "heading", "component": "Text", "text": what.capitalize(), "variant": "h2"}]
        parts += [{"id": key(i), "component": "CheckBox", "label": i, "value": {"path": f"/{key(i)}"}} for i in items]
        data, sid = {key(i): False for i in items}, f"{key(what)}_checklist"
    elif kind == "card":
        texts = [{"id": f"line{n}", "component": "Text", "text": line} for n, line in enumerate(items, 1)]
        parts = [{"id": "card", "component": "Card", "child": "card_body"}, {"id": "card_body", "component": "Column", "children": ["heading", *[t["id"] for t in texts]]},
                 {"id": "heading", "component": "Text", "text": what.capitalize(), "variant": "h2"}, *texts]
        data, sid = {}, f"{key(what)}_card"
    else:
        parts = [{"id": "question", "component": "Text", "text": f"Are you sure about {what}?"},
                 {"id": "buttons", "component": "Row", "children": ["yes", "no"]}, *button("yes", "Yes", "confirm"), *button("no", "No", "cancel")]
        data, sid = {}, f"confirm_{key(what)}"
    referenced = {child for p in parts for child in [*p.get("children", []), p.get("child")]}
    root = {"id": "root", "component": "Column", "children": [p["id"] for p in parts if p["id"] not in referenced]}
    return surface_messages(sid, [root, *parts], data)


def same(a: str, b: str) -> bool:
    return " ".join(a.lower().split()) == " ".join(b.lower().split())


def shows_what_was_asked(kind: str, what: str, items: list[str], surface: Surface) -> bool:
    """The surface is the one requested: right component kinds carrying the requested labels."""
    if kind == "form":
        labelled = all(any(same(surface.text_of(c.id), field) for c in surface.of(*INPUTS)) for field in items)
        return labelled and bool(surface.of("Button"))
    if kind == "picker":
        wanted = sorted(map(str.lower, items))
        return any(sorted(str(o.get("label", "")).lower() for o in c.properties["options"]) == wanted for c in surface.of("ChoicePicker"))
    if kind == "checklist":
        return all(any(same(surface.text_of(c.id), item) for c in surface.of("CheckBox")) for item in items)
    if kind == "card":
        inside = [surface.text_of(c.id) for card in surface.of("Card") for c in surface.under(card.id) if c.name == "Text"]
        return all(any(same(t, item) for t in inside) for item in items)
    words = [w for w in re.findall(r"\w+", what.lower()) if w != "the"]
    named = any(all(w in surface.text_of(c.id).lower() for w in words) for c in surface.of("Text"))
    events = {c.properties["action"].get("event", {}).get("name") for c in surface.of("Button")} - {None}
    return named and len(events) >= 2


class GenuiFamily(Family):
    name = "genui"
    recipe = Recipe(examples=120, epochs=2, learning_rate=3e-3)
    max_tokens = 384
    withheld = "form purposes, fields, options, items and actions never trained on"

    def generate(self, split: Split, n: int, seed: int = 0, **options: Any) -> list[Case]:
        rng = rng_for(split, seed, self.name)
        things = "heldout" if split == "heldout" else "train"
        templates = REQUESTS["train" if split == "train" else "heldout"]
        cases = []
        for _ in range(n):
            kind = rng.choice(KINDS)
            if kind == "form":
                what, title, items = rng.choice(FORMS[things])
            elif kind == "confirm":
                what, title, items = rng.choice(CONFIRMS[things]), "", []
            else:
                what, items = rng.choice({"picker": PICKERS, "checklist": CHECKLISTS, "card": CARDS}[kind][things])
                title = what
            items = list(items)
            if kind in ("picker", "checklist") and len(items) > 3 and rng.random() < 0.5:
                items = items[:3]
            request = fill(rng.choice(templates[kind]), {"what": what, "items": listed(items) if items else ""})
            answer = {"role": "assistant", "content": build(kind, what, items, title)}
            cases.append(Case(self.name, [{"role": "user", "content": request}], answer, check={"kind": kind, "what": what, "shows": items}))
        return cases

    def score(self, case: Case, message: Message) -> dict[str, float]:
        checked = check_answer(message.get("content") or "")
        if not checked.valid or len(checked.surfaces) != 1:
            return {"score": 0.0, "valid": 0.0}
        [surface] = checked.surfaces.values()
        right = shows_what_was_asked(case.check["kind"], case.check["what"], case.check["shows"], surface)
        return {"score": float(right), "valid": 1.0}

    def summarise(self, scores: list[dict[str, float]]) -> dict[str, float]:
        summary = super().summarise(scores)
        summary["valid"] = sum(s["valid"] for s in scores) / len(scores) if scores else 0.0
        return summary

    def summary_of(self, case: Case) -> str:
        shown = f" with {', '.join(case.check['shows'])}" if case.check["shows"] else ""
        return f"I showed the user a UI surface{shown}."

    def contents(self, case: Case) -> list[str]:
        [surface] = check_answer(case.answer["content"]).surfaces.values()
        texts = [surface.text_of(c.id) for c in surface.components.values()] + [o["label"] for c in surface.of("ChoicePicker") for o in c.properties["options"]]
        return [case.request, " ".join(texts)]

    def entities(self, case: Case) -> set[str]:
        return {case.check["what"], *case.check["shows"]}


FAMILY = GenuiFamily()
