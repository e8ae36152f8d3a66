"""A deterministic world of personal-assistant tools: calendar, contacts, shop, bank and messages.

The world knows nothing of scenarios, users or scores: it validates arguments against the
OpenAI function schemas in ``TOOLS``, applies the call and records it. Design choices:

- every failure is a result ``{"error": ...}`` that says what to do, never an exception, so an
  assistant can read it and recover;
- a ``Fault`` replaces the result of the Nth call of one read tool with an outage or a
  truncated body (the record is marked ``corrupted`` for scoring);
- changes made by "someone else" mid-run go through ``apply``, never through the tools, so they
  are not mistaken for the assistant's calls.
"""

import copy
import json
from dataclasses import dataclass
from datetime import date
from typing import Any, NamedTuple

from jsonschema import Draft202012Validator

READ_TOOLS = frozenset({"list_events", "find_contact", "read_messages", "search_items", "get_balance"})
ACTION_TOOLS = frozenset({"add_event", "move_event", "cancel_event", "send_message", "place_order", "pay"})
APPS = {
    "calendar": ("list_events", "add_event", "move_event", "cancel_event"),
    "contacts": ("find_contact",),
    "messages": ("read_messages", "send_message"),
    "shop": ("search_items", "place_order"),
    "bank": ("get_balance", "pay"),
}
"""The tools come in apps; a session offers the apps its task touches, as an assistant app
scopes its tools, so a small model is not asked to pick among all eleven."""


def app_tools(names: set[str]) -> list[dict]:
    """The schemas of every app that has one of ``names``, in ``TOOLS`` order."""
    offered = {tool for app in APPS.values() if names & set(app) for tool in app}
    return [t for t in TOOLS if t["function"]["name"] in offered]
STOPWORDS = {"the", "and", "for", "with", "gift", "gifts", "some", "any", "set"}

DATE = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$", "description": "date as YYYY-MM-DD"}
TIME = {"type": "string", "pattern": r"^([01]\d|2[0-3]):[0-5]\d$", "description": "time as HH:MM, 24-hour"}
TEXT = {"type": "string", "minLength": 1}
EVENT_ID = {"type": "string", "description": "the event's id, from list_events"}


def _tool(name: str, description: str, properties: dict, required: tuple[str, ...] = ()) -> dict:
    parameters = {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


TOOLS: list[dict] = [
    _tool("list_events", "List calendar events in date order, optionally only those on one date.", {"date": DATE}),
    _tool("add_event", "Add a calendar event.", {"title": TEXT, "date": DATE, "time": TIME, "with": {"type": "string", "description": "full name of the person or company involved"}}, ("title", "date", "time")),
    _tool("move_event", "Move an event to a new date and/or time.", {"event_id": EVENT_ID, "date": DATE, "time": TIME}, ("event_id",)),
    _tool("cancel_event", "Cancel (delete) a calendar event.", {"event_id": EVENT_ID}, ("event_id",)),
    _tool("find_contact", "Find contacts whose name or relation contains the query.", {"query": TEXT}, ("query",)),
    _tool("send_message", "Send a text message to a contact, named exactly as in the contacts.", {"to": TEXT, "text": TEXT}, ("to", "text")),
    _tool("read_messages", "Read the inbox, oldest first.", {}),
    _tool("search_items", "Search the shop's catalog by keywords; results are sorted by price.", {"query": TEXT, "max_price": {"type": "number"}}, ("query",)),
    _tool("place_order", "Order an item by its exact catalog name; it is paid from the account balance.", {"item": TEXT, "quantity": {"type": "integer", "minimum": 1}}, ("item",)),
    _tool("get_balance", "Get the account balance and what is left in each budget category.", {}),
    _tool("pay", "Pay a payee from the account, optionally against a budget category.", {"payee": TEXT, "amount": {"type": "number", "exclusiveMinimum": 0}, "memo": {"type": "string"}, "category": {"type": "string"}}, ("payee", "amount")),
]
VALIDATORS = {t["function"]["name"]: Draft202012Validator(t["function"]["parameters"]) for t in TOOLS}


class Fault(NamedTuple):
    tool: str
    nth: int
    """1-based: which call of ``tool`` comes back corrupted."""
    kind: str
    """``unavailable`` (an outage error) or ``truncated`` (a cut-off body)."""


@dataclass(frozen=True)
class Record:
    """One tool call as the world saw it."""

    name: str
    arguments: Any
    result: dict
    session: int
    turn: int
    corrupted: bool = False
    valid: bool = True
    """Whether the arguments passed the tool's schema."""

    @property
    def failed(self) -> bool:
        return "error" in self.result


def _problem(name: str, arguments: Any) -> str | None:
    if name not in VALIDATORS:
        return f"unknown tool {name!r}; available tools: {', '.join(VALIDATORS)}"
    if not isinstance(arguments, dict):
        return f"arguments of {name} must be a JSON object"
    error = min(VALIDATORS[name].iter_errors(arguments), key=lambda e: (list(map(str, e.path)), e.message), default=None)
    if error is None:
        return None
    field = ".".join(map(str, error.path))
    if error.validator == "pattern":
        return f"{name}: {field} must be a {error.schema['description']}, got {error.instance!r}"
    return f"{name}: {f'{field}: ' if field else ''}{error.message}"


def _words(text: str) -> list[str]:
    return "".join(c.lower() if c.isalnum() else " " for c in text).split()


class World:
    """The user's data, one instance per run. Example::

        world = World({"today": "2025-06-02", "events": [], "contacts": [], "catalog": [],
                       "inbox": [], "balance": 100.0, "budgets": {}})
        assert world.call("pay", {"payee": "Ann", "amount": 30})["balance"] == 70.0
        assert "error" in world.call("pay", {"payee": "Ann", "amount": 300})
    """

    def __init__(self, spec: dict, fault: Fault | None = None):
        spec = copy.deepcopy(spec)
        self.today: str = spec["today"]
        self.events: list[dict] = spec["events"]
        self.contacts: list[dict] = spec["contacts"]
        self.catalog: list[dict] = spec["catalog"]
        self.inbox: list[dict] = spec["inbox"]
        self.balance: float = spec["balance"]
        self.budgets: dict[str, float] = spec["budgets"]
        self.sent: list[dict] = []
        self.orders: list[dict] = []
        self.payments: list[dict] = []
        self.calls: list[Record] = []
        self.fault = fault
        self.session = 0
        self.turn = 0
        self._serial = 900

    def call(self, name: str, arguments: Any) -> dict:
        """Run one tool call and record it; never raises."""
        problem = _problem(name, arguments)
        result = {"error": problem} if problem else getattr(self, f"_{name}")(arguments)
        # only well-formed calls count towards the fault's N: a malformed one never reached the service
        nth = sum(c.name == name and c.valid for c in self.calls) + 1
        corrupted = bool(self.fault and self.fault.tool == name and self.fault.nth == nth and not problem)
        if corrupted:
            result = _corrupt(name, result, self.fault.kind)
        self.calls.append(Record(name, arguments, result, self.session, self.turn, corrupted, valid=problem is None))
        return result

    def apply(self, ops: tuple[tuple, ...]) -> None:
        """Changes made by someone else: ``("move_event", id, date, time)``, ``("add_event", title,
        date, time)``, ``("set_price", item, price)``, ``("receive", sender, text)``,
        ``("charge", category, amount)``."""
        for op, *args in ops:
            if op == "move_event":
                event = self._event(args[0])
                event["date"], event["time"] = args[1], args[2]
            elif op == "add_event":
                self.events.append({"id": self._next("evt"), "title": args[0], "date": args[1], "time": args[2], "with": ""})
            elif op == "set_price":
                next(i for i in self.catalog if i["name"] == args[0])["price"] = args[1]
            elif op == "receive":
                self.inbox.append({"from": args[0], "text": args[1]})
            elif op == "charge":
                self.budgets[args[0]] = round(self.budgets[args[0]] - args[1], 2)
                self.balance = round(self.balance - args[1], 2)
            else:
                raise ValueError(f"unknown world change {op!r}")

    # -- calendar
    def _list_events(self, a: dict) -> dict:
        if bad := _bad_date(a.get("date")):
            return bad
        events = [e for e in self.events if a.get("date") in (None, e["date"])]
        return {"events": sorted(events, key=lambda e: (e["date"], e["time"]))}

    def _add_event(self, a: dict) -> dict:
        if bad := _bad_date(a["date"]):
            return bad
        event = {"id": self._next("evt"), "title": a["title"], "date": a["date"], "time": a["time"], "with": a.get("with", "")}
        self.events.append(event)
        return {"event": event}

    def _move_event(self, a: dict) -> dict:
        event = self._event(a["event_id"])
        if event is None:
            return {"error": f"no event with id {a['event_id']!r}; use list_events to find its id"}
        if "date" not in a and "time" not in a:
            return {"error": "move_event needs a new date, a new time, or both"}
        if bad := _bad_date(a.get("date")):
            return bad
        event.update({k: a[k] for k in ("date", "time") if k in a})
        return {"event": event}

    def _cancel_event(self, a: dict) -> dict:
        event = self._event(a["event_id"])
        if event is None:
            return {"error": f"no event with id {a['event_id']!r}; use list_events to find its id"}
        self.events.remove(event)
        return {"cancelled": event}

    def _event(self, event_id: str) -> dict | None:
        return next((e for e in self.events if e["id"] == event_id), None)

    # -- contacts and messages
    def _find_contact(self, a: dict) -> dict:
        query = _words(a["query"])
        found = [c for c in self.contacts if all(w in _words(f"{c['name']} {c['relation']}") for w in query)]
        return {"contacts": found} if found else {"contacts": [], "note": f"no contact matches {a['query']!r}"}

    def _send_message(self, a: dict) -> dict:
        contact = next((c for c in self.contacts if c["name"].lower() == a["to"].strip().lower()), None)
        if contact is None:
            return {"error": f"no contact named {a['to']!r}; use find_contact to get the exact name"}
        message = {"id": self._next("msg"), "to": contact["name"], "text": a["text"]}
        self.sent.append(message)
        return {"sent": message}

    def _read_messages(self, a: dict) -> dict:
        return {"messages": self.inbox}

    # -- shop and bank
    def _search_items(self, a: dict) -> dict:
        query = [w for w in _words(a["query"]) if len(w) > 2 and w not in STOPWORDS]
        hits = [i for i in self.catalog if any(w in _words(f"{i['name']} {i['category']} {' '.join(i['tags'])}") for w in query)]
        hits = [i for i in hits if "max_price" not in a or i["price"] <= a["max_price"]]
        items = [{"name": i["name"], "price": i["price"], "category": i["category"]} for i in sorted(hits, key=lambda i: i["price"])]
        return {"items": items} if items else {"items": [], "note": f"nothing in the catalog matches {a['query']!r}"}

    def _place_order(self, a: dict) -> dict:
        item = next((i for i in self.catalog if i["name"].lower() == a["item"].strip().lower()), None)
        if item is None:
            return {"error": f"no item named {a['item']!r}; use search_items to get the exact name"}
        quantity = a.get("quantity", 1)
        total = round(item["price"] * quantity, 2)
        if total > self.balance:
            return {"error": f"insufficient funds: the order costs {total} and the balance is {self.balance}"}
        self.balance = round(self.balance - total, 2)
        order = {"id": self._next("ord"), "item": item["name"], "quantity": quantity, "price": item["price"], "total": total}
        self.orders.append(order)
        return {"order": order, "balance": self.balance}

    def _get_balance(self, a: dict) -> dict:
        return {"balance": self.balance, "budgets": dict(self.budgets)}

    def _pay(self, a: dict) -> dict:
        amount, category = round(a["amount"], 2), a.get("category")
        if category is not None and category not in self.budgets:
            return {"error": f"unknown budget category {category!r}; categories: {', '.join(self.budgets)}"}
        if amount > self.balance:
            return {"error": f"insufficient funds: the balance is {self.balance}"}
        self.balance = round(self.balance - amount, 2)
        payment = {"id": self._next("pay"), "payee": a["payee"], "amount": amount, "memo": a.get("memo", ""), "category": category}
        self.payments.append(payment)
        result = {"payment": payment, "balance": self.balance}
        if category is not None:
            self.budgets[category] = round(self.budgets[category] - amount, 2)
            result["budget_left"] = self.budgets[category]
        return result

    def _next(self, prefix: str) -> str:
        self._serial += 1
        return f"{prefix}-{self._serial}"


def _bad_date(value: str | None) -> dict | None:
    """The pattern admits 2025-02-30; the calendar does not."""
    try:
        value is None or date.fromisoformat(value)
    except ValueError:
        return {"error": f"{value!r} is not a real date"}
    return None


def _corrupt(name: str, result: dict, kind: str) -> dict:
    if kind == "unavailable":
        return {"error": f"{name} is temporarily unavailable (upstream timeout); please retry"}
    text = json.dumps(result)
    return {"partial": text[: max(12, len(text) // 3)] + "…"}
