"""The business data the multi-step tasks ask about: deterministic, one world per split.

The train world is a shop (customers, orders, refunds, exchange rates) behind four functions;
the held-out world is a support desk with a warehouse (tickets, SLAs, stock, exchange quotes)
behind four other functions, with names of its own. Each world is built from a fixed seed, so a
task's exact answer is computed here, from the same data its functions return.
"""

import random
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Callable

CURRENCIES = ("EUR", "USD", "GBP")
TO_EUR = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17}
"""Exchange rates into EUR; a pair's rate is derived from these (4 decimals), the same both ways of asking."""

TRAIN_NAMES = ["Alice Moreau", "Bruno Keller", "Chiara Russo", "Dmitri Volkov", "Elena Suarez", "Farid Haddad", "Greta Lindqvist", "Hugo Laurent", "Ines Duarte", "Jonas Weber"]
HELDOUT_AGENTS = ["Kwame Mensah", "Leilani Kahale", "Mateo Quispe", "Nia Okafor", "Oskar Nyberg", "Priya Raman"]
HELDOUT_WAREHOUSES = ["Tidewater", "Granite Ridge", "Copperfield", "Saltmarsh"]
STATUSES = ("open", "shipped", "cancelled")
REASONS = ("damaged", "late", "wrong size", "not as described")
PRIORITIES = ("P1", "P2", "P3")
SLA_HOURS = {"P1": 4, "P2": 12, "P3": 48}


def rate(base: str, quote: str) -> float:
    return round(TO_EUR[base] / TO_EUR[quote], 4)


def string(description: str) -> dict:
    return {"type": "string", "description": description}


def enum(values, description: str) -> dict:
    return {"type": "string", "enum": list(values), "description": description}


def function(name: str, description: str, properties: dict, required: list[str] | None = None) -> dict:
    parameters = {"type": "object", "properties": properties, "required": list(properties) if required is None else required}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


@dataclass
class World:
    name: str
    tables: dict[str, list[dict]]
    functions: dict[str, Callable[..., Any]] = field(default_factory=dict)
    schemas: list[dict] = field(default_factory=list)

    def call(self, name: str, arguments: dict) -> Any:
        """One API call: the JSON the function returns, or ``{"error": …}`` for a bad call."""
        if name not in self.functions:
            return {"error": f"unknown function {name!r}"}
        try:
            return self.functions[name](**arguments)
        except Exception as e:  # a wrong type or value from the model: an error it can read, never a crash
            return {"error": f"bad arguments for {name}: {type(e).__name__}: {e}"}


@cache
def shop() -> World:
    """The train world."""
    rng = random.Random("business:shop")
    customers = [{"customer_id": f"C-{101 + i}", "name": n, "tier": rng.choice(["gold", "silver", "bronze"])} for i, n in enumerate(TRAIN_NAMES)]
    orders = []
    for c in customers:
        for _ in range(rng.randint(4, 8)):
            orders.append({"order_id": f"O-{5001 + len(orders)}", "customer_id": c["customer_id"], "status": rng.choice(STATUSES), "amount": round(rng.uniform(12, 480), 2), "currency": rng.choice(CURRENCIES)})
    refunds = []
    for o in rng.sample(orders, 24):
        refunds.append({"refund_id": f"R-{301 + len(refunds)}", "order_id": o["order_id"], "reason": rng.choice(REASONS), "status": rng.choice(["approved", "approved", "pending", "rejected"]), "amount": round(o["amount"] * rng.choice([0.25, 0.5, 1.0]), 2), "currency": o["currency"]})
    world = World("shop", {"customers": customers, "orders": orders, "refunds": refunds})

    def find_customer(name: str) -> dict:
        match = [c for c in customers if c["name"].lower() == name.lower()]
        return dict(match[0]) if match else {"error": f"no customer named {name!r}"}

    def list_orders(customer_id: str, status: str) -> list[dict]:
        return [{k: o[k] for k in ("order_id", "amount", "currency")} for o in orders if o["customer_id"] == customer_id and o["status"] == status]

    def list_refunds(reason: str, status: str) -> list[dict]:
        return [{k: r[k] for k in ("refund_id", "order_id", "amount", "currency")} for r in refunds if r["reason"] == reason and r["status"] == status]

    def get_rate(base: str, quote: str) -> dict:
        return {"base": base, "quote": quote, "rate": rate(base, quote)}

    world.functions = {"find_customer": find_customer, "list_orders": list_orders, "list_refunds": list_refunds, "get_rate": get_rate}
    world.schemas = [
        function("find_customer", "Look up a customer of the shop by full name.", {"name": string("Full name, e.g. 'Ada Byron'")}),
        function("list_orders", "List a customer's orders in one status.", {"customer_id": string("From find_customer"), "status": enum(STATUSES, "Order status")}),
        function("list_refunds", "List refunds by reason and status.", {"reason": enum(REASONS, "Refund reason"), "status": enum(["approved", "pending", "rejected"], "Refund status")}),
        function("get_rate", "Exchange rate: 1 unit of base is worth `rate` units of quote.", {"base": enum(CURRENCIES, "From currency"), "quote": enum(CURRENCIES, "To currency")}),
    ]
    return world


@cache
def desk() -> World:
    """The held-out world: nothing in it (functions, names, fields, task kinds) occurs in the shop."""
    rng = random.Random("business:desk")
    tickets = []
    for agent in HELDOUT_AGENTS:
        for _ in range(rng.randint(6, 11)):
            priority = rng.choice(PRIORITIES)
            opened = rng.randint(0, 200)
            took = rng.randint(1, SLA_HOURS[priority] * 2)
            tickets.append({"ticket": f"T-{701 + len(tickets)}", "agent": agent, "priority": priority, "opened_hour": opened, "resolved_hour": opened + took if rng.random() < 0.8 else None})
    stock = []
    for warehouse in HELDOUT_WAREHOUSES:
        for _ in range(rng.randint(5, 8)):
            stock.append({"sku": f"SKU-{rng.choice('KMPQVXZ')}{len(stock) + 11}", "warehouse": warehouse, "units": rng.randint(0, 60), "reorder_level": rng.choice([5, 10, 15, 20]), "unit_cost": round(rng.uniform(1.5, 95), 2), "currency": rng.choice(CURRENCIES)})
    world = World("desk", {"tickets": tickets, "stock": stock})

    def agent_tickets(agent: str, priority: str) -> list[dict]:
        return [{k: t[k] for k in ("ticket", "opened_hour", "resolved_hour")} for t in tickets if t["agent"].lower() == agent.lower() and t["priority"] == priority]

    def sla_hours(priority: str) -> dict:
        return {"priority": priority, "hours": SLA_HOURS[priority]}

    def warehouse_stock(warehouse: str) -> list[dict]:
        return [{k: s[k] for k in ("sku", "units", "reorder_level", "unit_cost", "currency")} for s in stock if s["warehouse"].lower() == warehouse.lower()]

    def fx_quote(source: str, target: str) -> dict:
        return {"source": source, "target": target, "quote": rate(source, target)}

    world.functions = {"agent_tickets": agent_tickets, "sla_hours": sla_hours, "warehouse_stock": warehouse_stock, "fx_quote": fx_quote}
    world.schemas = [
        function("agent_tickets", "Support tickets one agent handled at one priority (hours since the week began; resolved_hour null while open).", {"agent": string("Agent's full name"), "priority": enum(PRIORITIES, "Ticket priority")}),
        function("sla_hours", "Hours within which a ticket of this priority must be resolved.", {"priority": enum(PRIORITIES, "Ticket priority")}),
        function("warehouse_stock", "Stock lines of one warehouse: units on hand, reorder level, unit cost and its currency.", {"warehouse": string("Warehouse name")}),
        function("fx_quote", "Currency quote: 1 unit of source buys `quote` units of target.", {"source": enum(CURRENCIES, "From currency"), "target": enum(CURRENCIES, "To currency")}),
    ]
    return world
