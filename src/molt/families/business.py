"""The ``business`` family: multi-step questions over business data, each with one exact answer,
solved in either action mode of the harness.

A task ("What do Alice Moreau's shipped orders come to in EUR?") needs several API calls and
some arithmetic. The same task has two reference episodes:

- **function calling:** rounds of calls to the world's functions (independent ones in one
  round), each round's results read back, then the answer — the arithmetic done by the model;
- **REPL:** one ``python`` call whose code calls ``tools.<function>(...)`` and prints the result
  (the arithmetic done by Python), then the answer.

Training cases are the steps of those episodes (the conversation so far → the next assistant
message), so the agent specialist learns both modes; ``molt bench substrate`` runs whole
episodes through the proxy. Splits: ``train`` asks about the shop world (customers, orders,
refunds, rates) in four task kinds; ``heldout`` about the support-desk world (tickets, SLAs,
stock, quotes: other functions, names and task kinds); ``wording`` asks the shop's kinds in the
held-out wording.
"""

import json
import re
from dataclasses import dataclass
from typing import Any

from molt.families.agent import call, calls_of, canonical
from molt.families.base import Case, Family, Message, Recipe, Split, fill, rng_for
from molt.families.business_world import HELDOUT_AGENTS, HELDOUT_WAREHOUSES, PRIORITIES, REASONS, TRAIN_NAMES, World, desk, rate, shop
from molt.harness.actions import PYTHON, python_tool

MODES = ("function_calling", "repl")
ID = re.compile(r"\b(?:O|R|C|T|SKU)-[A-Z]?\d+\b")
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")


@dataclass(frozen=True)
class Task:
    kind: str
    question: str
    expected: Any
    """A number, an id, or a sorted list of ids."""
    rounds: list[list[tuple[str, dict]]]
    """Function calling: the calls of each round (a round's calls are independent)."""
    code: str
    """REPL: the code that computes and prints the answer."""
    output: str
    """What that code prints."""
    answer: str
    """The final reply, in words."""


def amount(value: float) -> float:
    return round(value, 2)


# -- train kinds: the shop ------------------------------------------------------------------------
SHOP_QUESTIONS = {
    "train": {
        "order_total": ["What do {name}'s {status} orders add up to in EUR?", "Give me the total of {name}'s {status} orders, in euros."],
        "order_count": ["How many {status} orders does {name} have?", "Count {name}'s {status} orders."],
        "biggest_order": ["Which of {name}'s {status} orders is the biggest in EUR?", "Find {name}'s largest {status} order by value in euros."],
        "refund_total": ["How much have we refunded in EUR for refunds with reason '{reason}' that were approved?", "Total of approved '{reason}' refunds, in euros?"],
    },
    "heldout": {
        "order_total": ["Sum up every {status} order placed by {name}; express it in euros."],
        "order_count": ["For {name}, what number of orders sit in status {status}?"],
        "biggest_order": ["Among orders of {name} with status {status}, name the one worth most once converted to euros."],
        "refund_total": ["Approved refunds whose reason is '{reason}': what is their combined value in euros?"],
    },
}
SHOP_ANSWERS = {
    "order_total": "{name}'s {status} orders come to {value} EUR.",
    "order_count": "{name} has {value} {status} orders.",
    "biggest_order": "The biggest is {value}.",
    "refund_total": "Approved '{reason}' refunds total {value} EUR.",
}


def shop_task(rng, kind: str, templates: str) -> Task:
    world = shop()
    if kind == "refund_total":
        reason = rng.choice(REASONS)
        refunds = world.call("list_refunds", {"reason": reason, "status": "approved"})
        rounds = [[("list_refunds", {"reason": reason, "status": "approved"})], rate_calls("get_rate", refunds, "base", "quote", "EUR")]
        value = amount(sum(r["amount"] * rate(r["currency"], "EUR") for r in refunds))
        code = (
            f'refunds = tools.list_refunds(reason="{reason}", status="approved")\ntotal = 0\nfor r in refunds:\n'
            '    rate = 1 if r["currency"] == "EUR" else tools.get_rate(base=r["currency"], quote="EUR")["rate"]\n'
            '    total += r["amount"] * rate\nprint(round(total, 2))'
        )
        slots = {"reason": reason, "value": value}
        return finished(kind, rng.choice(SHOP_QUESTIONS[templates][kind]), slots, value, [r for r in rounds if r], code, SHOP_ANSWERS[kind])
    while True:
        name, status = rng.choice(TRAIN_NAMES), rng.choice(["open", "shipped"])
        customer = world.call("find_customer", {"name": name})
        orders = world.call("list_orders", {"customer_id": customer["customer_id"], "status": status})
        if len(orders) >= 2 or kind == "order_count":
            break
    head = (
        f'c = tools.find_customer(name="{name}")\norders = tools.list_orders(customer_id=c["customer_id"], status="{status}")\n'
    )
    rounds = [[("find_customer", {"name": name})], [("list_orders", {"customer_id": customer["customer_id"], "status": status})]]
    if kind == "order_count":
        value, code = len(orders), head + "print(len(orders))"
    else:
        rounds.append(rate_calls("get_rate", orders, "base", "quote", "EUR"))
        in_eur = [(o["order_id"], o["amount"] * rate(o["currency"], "EUR")) for o in orders]
        convert = 'def eur(o):\n    return o["amount"] * (1 if o["currency"] == "EUR" else tools.get_rate(base=o["currency"], quote="EUR")["rate"])\n'
        if kind == "order_total":
            value, code = amount(sum(v for _, v in in_eur)), head + convert + "print(round(sum(eur(o) for o in orders), 2))"
        else:
            value, code = max(in_eur, key=lambda p: p[1])[0], head + convert + 'print(max(orders, key=eur)["order_id"])'
    slots = {"name": name, "status": status, "value": value}
    return finished(kind, rng.choice(SHOP_QUESTIONS[templates][kind]), slots, value, [r for r in rounds if r], code, SHOP_ANSWERS[kind])


# -- held-out kinds: the support desk -------------------------------------------------------------
DESK_QUESTIONS = {
    "sla_breaches": ["Of the {priority} tickets {agent} resolved, how many went past their SLA?"],
    "stock_value": ["What is everything on hand at {warehouse} worth in US dollars?"],
    "reorder_list": ["At {warehouse}, which SKUs have fallen to or under their reorder level?"],
    "mean_resolution": ["Across {agent}'s resolved {priority} tickets, what was the mean time to resolve, in hours to one decimal?"],
}
DESK_ANSWERS = {
    "sla_breaches": "{value} of them missed the SLA.",
    "stock_value": "Stock on hand at {warehouse} is worth {value} USD.",
    "reorder_list": "Reorder these: {value}.",
    "mean_resolution": "Mean resolution time: {value} hours.",
}


def desk_task(rng, kind: str) -> Task:
    world = desk()
    if kind in ("stock_value", "reorder_list"):
        warehouse = rng.choice(HELDOUT_WAREHOUSES)
        lines = world.call("warehouse_stock", {"warehouse": warehouse})
        first = f'lines = tools.warehouse_stock(warehouse="{warehouse}")\n'
        rounds = [[("warehouse_stock", {"warehouse": warehouse})]]
        if kind == "stock_value":
            rounds.append(rate_calls("fx_quote", lines, "source", "target", "USD"))
            value = amount(sum(s["units"] * s["unit_cost"] * rate(s["currency"], "USD") for s in lines))
            code = first + (
                'worth = 0\nfor s in lines:\n    q = 1 if s["currency"] == "USD" else tools.fx_quote(source=s["currency"], target="USD")["quote"]\n'
                '    worth += s["units"] * s["unit_cost"] * q\nprint(round(worth, 2))'
            )
        else:
            value = sorted(s["sku"] for s in lines if s["units"] <= s["reorder_level"])
            code = first + 'print(", ".join(sorted(s["sku"] for s in lines if s["units"] <= s["reorder_level"])))'
        return finished(kind, DESK_QUESTIONS[kind][0], {"warehouse": warehouse, "value": value}, value, [r for r in rounds if r], code, DESK_ANSWERS[kind])
    while True:
        agent, priority = rng.choice(HELDOUT_AGENTS), rng.choice(PRIORITIES)
        tickets = world.call("agent_tickets", {"agent": agent, "priority": priority})
        resolved = [t for t in tickets if t["resolved_hour"] is not None]
        if resolved:
            break
    first = f'tickets = tools.agent_tickets(agent="{agent}", priority="{priority}")\n'
    took = [t["resolved_hour"] - t["opened_hour"] for t in resolved]
    if kind == "sla_breaches":
        hours = world.call("sla_hours", {"priority": priority})["hours"]
        rounds = [[("agent_tickets", {"agent": agent, "priority": priority}), ("sla_hours", {"priority": priority})]]
        value = sum(h > hours for h in took)
        code = first + (
            f'limit = tools.sla_hours(priority="{priority}")["hours"]\n'
            'print(sum(1 for t in tickets if t["resolved_hour"] is not None and t["resolved_hour"] - t["opened_hour"] > limit))'
        )
    else:
        rounds = [[("agent_tickets", {"agent": agent, "priority": priority})]]
        value = round(sum(took) / len(took), 1)
        code = first + 'took = [t["resolved_hour"] - t["opened_hour"] for t in tickets if t["resolved_hour"] is not None]\nprint(round(sum(took) / len(took), 1))'
    return finished(kind, DESK_QUESTIONS[kind][0], {"agent": agent, "priority": priority, "value": value}, value, rounds, code, DESK_ANSWERS[kind])


def rate_calls(name: str, rows: list[dict], base: str, quote: str, target: str) -> list[tuple[str, dict]]:
    return [(name, {base: c, quote: target}) for c in sorted({r["currency"] for r in rows} - {target})]


def finished(kind: str, question: str, slots: dict, value: Any, rounds, code: str, answer: str) -> Task:
    shown = ", ".join(value) if isinstance(value, list) else str(value)  # what the code prints, too
    return Task(kind, fill(question, slots), value, rounds, code, shown, fill(answer, {**slots, "value": shown}))


TRAIN_KINDS = tuple(SHOP_ANSWERS)
HELDOUT_KINDS = tuple(DESK_ANSWERS)


def world_of(split: Split) -> World:
    return desk() if split == "heldout" else shop()


def tasks(split: Split, n: int, seed: int = 0) -> list[Task]:
    """``n`` tasks of ``split``, the kinds taken in turn."""
    rng = rng_for(split, seed, "business")
    kinds = HELDOUT_KINDS if split == "heldout" else TRAIN_KINDS
    return [desk_task(rng, kinds[i % len(kinds)]) if split == "heldout" else shop_task(rng, kinds[i % len(kinds)], "train" if split == "train" else "heldout") for i in range(n)]


def episode(task: Task, mode: str, world: World) -> list[Message]:
    """The reference assistant and tool messages after the user's question, in ``mode``."""
    messages: list[Message] = []
    if mode == "repl":
        messages += [{"role": "assistant", "content": None, "tool_calls": [call(PYTHON, {"code": task.code}, 0)]}, {"role": "tool", "tool_call_id": "call_0", "content": task.output}]
    else:
        index = 0
        for round_ in task.rounds:
            made = [call(name, arguments, index + i) for i, (name, arguments) in enumerate(round_)]
            messages.append({"role": "assistant", "content": None, "tool_calls": made})
            messages += [{"role": "tool", "tool_call_id": m["id"], "content": json.dumps(world.call(name, arguments))} for m, (name, arguments) in zip(made, round_)]
            index += len(round_)
    return messages + [{"role": "assistant", "content": task.answer}]


def offered(mode: str, world: World) -> list[dict]:
    return [python_tool(world.schemas)] if mode == "repl" else world.schemas


def right_answer(text: str, expected: Any, world: World) -> bool:
    """The reply states the exact answer and nothing that could pass for another one: for a
    number, exactly one number (ids aside), the answer; for ids, exactly the expected ones."""
    ids = set(ID.findall(text))
    if isinstance(expected, list):
        return ids == set(expected)
    if isinstance(expected, str):
        return ids == {expected}
    numbers = [float(n) for n in NUMBER.findall(ID.sub(" ", text))]
    return len(numbers) == 1 and abs(numbers[0] - expected) < 0.005


class BusinessFamily(Family):
    name = "business"
    recipe = Recipe(examples=240, epochs=2, learning_rate=3e-3)
    max_tokens = 256
    withheld = "a support-desk world (tickets, SLAs, stock, quotes) with its own functions, names and four task kinds of its own"

    def generate(self, split: Split, n: int, seed: int = 0, modes: tuple[str, ...] = MODES, **options: Any) -> list[Case]:
        """The steps of reference episodes, modes taken in turn, until ``n`` cases."""
        world, cases = world_of(split), []
        drawn = iter(tasks(split, n, seed))
        turn = 0
        while len(cases) < n:
            task, mode = next(drawn), modes[turn % len(modes)]
            turn += 1
            steps = episode(task, mode, world)
            request = {"role": "user", "content": task.question}
            check = {"kind": task.kind, "mode": mode, "expected": task.expected, "split": split}
            for i, step in enumerate(steps):
                if step["role"] == "assistant" and len(cases) < n:
                    final = i == len(steps) - 1
                    cases.append(Case(self.name, [request, *steps[:i]], step, offered(mode, world), {**check, "final": final, "calls": [] if final else calls_of(step)}))
        return cases

    def score(self, case: Case, message: Message) -> dict[str, float]:
        """A final step: the exact answer (``right_answer``), with no call. Any other step: the
        reference calls exactly (function calling), or a ``python`` call (REPL: its code is
        judged by running the episode, in ``molt bench substrate``)."""
        made = calls_of(message)
        if case.check["final"]:
            right = not made and right_answer(message.get("content") or "", case.check["expected"], world_of(case.check["split"]))
        elif case.check["mode"] == "repl":
            right = len(made) == 1 and made[0]["name"] == PYTHON and bool((made[0]["arguments"] or {}).get("code"))
        else:
            right = canonical(made) == canonical(case.check["calls"])
        return {"score": float(right)}

    def summary_of(self, case: Case) -> str:
        return f"I answered: {case.answer.get('content') or ''}"

    def contents(self, case: Case) -> list[str]:
        texts = [m["content"] for m in case.messages if m["role"] in ("user", "tool")] + [case.answer.get("content") or ""]
        return texts + [json.dumps(c["arguments"]) for c in calls_of(case.answer) if c["name"] != PYTHON]

    def entities(self, case: Case) -> set[str]:
        names = {t["function"]["name"] for t in case.tools or []} - {PYTHON}
        world = world_of(case.check["split"])
        found = {n for n in TRAIN_NAMES + HELDOUT_AGENTS + HELDOUT_WAREHOUSES if n in case.request}
        return names | found | set(ID.findall(json.dumps(case.check["expected"]))) | {world.name}


FAMILY = BusinessFamily()
