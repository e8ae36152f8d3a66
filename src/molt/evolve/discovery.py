"""Discovery: harder variants of the problem bank, kept only where they teach something.

Each operator turns a bank case into a variant with the same verifier (the family's scorer and
the case's check): the reference answer must still pass it, or the variant is not well defined and
is dropped. A well-defined variant is kept when the current pair does not reliably solve it: fewer
than all of ``k`` sampled answers pass.

Operators (each keeps the case's verifier exact; one that does not apply to a case makes nothing):

- ``distractor_tools``: more functions on offer, taken from other bank cases;
- ``earlier_goal``: a finished earlier request and its answer before the case's own (a chained
  conversation where only the last goal is open);
- ``restated``: the request said twice, the second time with a correction that repeats it
  (the user contradicts their own hedge: "no wait — exactly that");
- ``lifted_constraint``: an earlier turn forbids the very kind of answer the case needs ("no
  function calls until I say so"), and the request lifts it: the pair must see the restriction
  is gone, not obey a stale one;
- ``hidden_preference``: one argument value of the reference call is said earlier as a standing
  preference ("my usual address is 7 Mill Lane") and the request only refers to it ("to my usual
  address"): the call is right only if the preference is carried over;
- ``renamed_schema``: the offered functions and their parameters under other names (the same
  request, answered with the names the schema gives): a specialist that calls what it memorised
  instead of reading the schema fails it, as it fails any API it never saw.
"""

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from molt.evolve.answering import Specialist, sampled, score
from molt.families import Case

OPERATORS = ("distractor_tools", "earlier_goal", "restated", "lifted_constraint", "hidden_preference", "renamed_schema")


@dataclass(frozen=True)
class Variant:
    operator: str
    source: int
    """Index of the bank case it was made from."""
    case: Case


def distractor_tools(case: Case, bank: list[Case], rng: random.Random) -> Case | None:
    if not case.tools:
        return None
    names = {t["function"]["name"] for t in case.tools}
    extra = {t["function"]["name"]: t for other in bank for t in other.tools or [] if t["function"]["name"] not in names}
    if not extra:
        return None
    chosen = rng.sample(sorted(extra), min(3, len(extra)))
    tools = [*case.tools, *(extra[name] for name in chosen)]
    rng.shuffle(tools)
    return replace(case, tools=tools)


def earlier_goal(case: Case, bank: list[Case], rng: random.Random) -> Case | None:
    finished = [c for c in bank if c is not case and len(c.messages) == 1 and c.answer.get("content") and not c.answer.get("tool_calls") and c.family == case.family]
    if not finished:
        return None
    earlier = rng.choice(finished)
    return replace(case, messages=[*earlier.messages, earlier.answer, *case.messages])


def restated(case: Case, bank: list[Case], rng: random.Random) -> Case | None:
    first = case.messages[0]
    if first["role"] != "user" or not isinstance(first["content"], str):
        return None
    hedge = rng.choice(["Hmm, or maybe not. No wait, do exactly this: ", "Scratch my doubts, I mean it: ", "Let me say it again, this is what I want: "])
    return replace(case, messages=[{**first, "content": f"{first['content']}\n\n{hedge}{first['content']}"}, *case.messages[1:]])


RESTRICTIONS = {  # per family: a rule against the case's kind of answer, and its acknowledgement
    "agent": ("Please don't call any functions until I say so.", "Understood: no function calls until you say so."),
    "coding": ("Don't write any code until I say so, please.", "Understood: no code until you say so."),
    "genui": ("Don't build any interface until I say so, please.", "Understood: no interface until you say so."),
}
DEFAULT_RESTRICTION = ("Don't answer anything until I say so, please.", "Understood: I'll wait until you say so.")


def lifted_constraint(case: Case, bank: list[Case], rng: random.Random) -> Case | None:
    first = case.messages[0]
    if first["role"] != "user" or not isinstance(first["content"], str):
        return None
    rule, ack = RESTRICTIONS.get(case.family, DEFAULT_RESTRICTION)
    go = rng.choice(["You may go ahead now. ", "That restriction is lifted. ", "Okay, forget that rule: "])
    return replace(case, messages=[{"role": "user", "content": rule}, {"role": "assistant", "content": ack},
                                   {**first, "content": f"{go}{first['content']}"}, *case.messages[1:]])


FREE_TEXT = {"text", "title", "message", "query", "body", "content", "note", "subject", "item", "label", "name", "to"}
"""Arguments that are what the user says this time (or a person named), not a standing preference."""


def hidden_preference(case: Case, bank: list[Case], rng: random.Random) -> Case | None:
    calls = case.check.get("calls") or []
    first = case.messages[0]
    if len(calls) != 1 or len(case.messages) != 1 or not isinstance(first["content"], str):
        return None
    said = sorted(name for name, value in calls[0]["arguments"].items()
                  if name not in FREE_TEXT and isinstance(value, str) and len(value) >= 3 and first["content"].count(value) == 1
                  and f'"{value}"' not in first["content"])  # a quoted value is the user's words, not a preference
    if not said:
        return None
    name = rng.choice(said)
    value, words = calls[0]["arguments"][name], name.replace("_", " ")
    request = re.sub(rf"(?<!\w)(?:the |a |an )?{re.escape(value)}", f"my usual {words}", first["content"], count=1)
    if value in request:
        return None
    return replace(case, messages=[
        {"role": "user", "content": f"For future requests: my usual {words} is {value}."},
        {"role": "assistant", "content": f"Noted: your usual {words} is {value}."},
        {**first, "content": request},
    ])


RENAMED_FUNCTIONS = {
    "get_weather": "weather_report", "set_reminder": "remind_me", "send_email": "compose_mail", "book_table": "restaurant_reservation",
    "convert_currency": "exchange_rate_convert", "create_event": "calendar_add", "search_flights": "find_flights", "play_music": "start_playback",
    "set_thermostat": "adjust_heating", "add_todo": "todo_append", "get_stock_price": "stock_quote", "order_food": "food_delivery",
    "translate_text": "translate", "set_timer": "countdown", "call_contact": "phone_call", "get_directions": "route_planner",
}
"""Other names for the train functions (none is a held-out function's, a test checks)."""
RENAMED_PARAMETERS = {
    "city": "place", "unit": "scale", "text": "content", "time": "when", "to": "recipient", "subject": "headline", "body": "message_body",
    "restaurant": "venue", "people": "party_size", "amount": "sum", "from_currency": "source_currency", "to_currency": "target_currency",
    "title": "event_name", "date": "day", "attendees": "guests", "origin": "departure", "destination": "to_place", "passengers": "travellers",
    "query": "search_terms", "shuffle": "random_order", "room": "zone", "temperature": "degrees", "item": "task", "priority": "urgency",
    "symbol": "ticker", "items": "dishes", "address": "deliver_to", "target_language": "into_language", "minutes": "duration",
    "label": "tag", "name": "contact", "mode": "travel_mode",
}


def renamed_schema(case: Case, bank: list[Case], rng: random.Random) -> Case | None:
    if not case.tools or not all(t["function"]["name"] in RENAMED_FUNCTIONS for t in case.tools):
        return None

    def param(name: str) -> str:
        return RENAMED_PARAMETERS.get(name, name)

    def call(made: dict) -> dict:
        return {**made, "name": RENAMED_FUNCTIONS[made["name"]], "arguments": {param(k): v for k, v in made["arguments"].items()}}

    def tool_call(made: dict) -> dict:
        renamed = call({"name": made["function"]["name"], "arguments": json.loads(made["function"]["arguments"])})
        return {**made, "function": {"name": renamed["name"], "arguments": json.dumps(renamed["arguments"], ensure_ascii=False)}}

    def message(m: dict) -> dict:
        return {**m, "tool_calls": [tool_call(c) for c in m["tool_calls"]]} if m.get("tool_calls") else m

    def tool(schema: dict) -> dict:
        function, parameters = schema["function"], schema["function"]["parameters"]
        renamed = {**parameters, "properties": {param(k): v for k, v in parameters["properties"].items()}, "required": [param(k) for k in parameters.get("required", [])]}
        return {**schema, "function": {**function, "name": RENAMED_FUNCTIONS[function["name"]], "parameters": renamed}}

    check = dict(case.check)
    if "calls" in check:
        check["calls"] = [call(c) for c in check["calls"]]
    if check.get("function") in RENAMED_FUNCTIONS:
        check["function"] = RENAMED_FUNCTIONS[check["function"]]
    return replace(case, messages=[message(m) for m in case.messages], answer=message(case.answer), tools=[tool(t) for t in case.tools], check=check)


MAKERS: dict[str, Callable[[Case, list[Case], random.Random], Case | None]] = {
    "distractor_tools": distractor_tools, "earlier_goal": earlier_goal, "restated": restated,
    "lifted_constraint": lifted_constraint, "hidden_preference": hidden_preference, "renamed_schema": renamed_schema,
}


def propose(bank: list[Case], per_case: int, seed: int) -> list[Variant]:
    """Up to ``per_case`` well-defined variants of each bank case (the reference passes)."""
    rng = random.Random(f"discovery:{seed}")
    variants = []
    for i, case in enumerate(bank):
        for operator in rng.sample(OPERATORS, min(per_case, len(OPERATORS))):
            made = MAKERS[operator](case, bank, rng)
            if made is not None and score(made, made.answer) == 1.0:
                variants.append(Variant(operator, i, made))
    return variants


@dataclass(frozen=True)
class Discovered:
    proposed: int
    kept: list[Variant]
    solve_rate: list[float]
    """Per kept variant: the share of the ``k`` samples that passed."""


def discover(who: Specialist, bank: list[Case], per_case: int, k: int, temperature: float, seed: int, on_case: Callable[[], None] = lambda: None) -> Discovered:
    variants = propose(bank, per_case, seed)
    groups = sampled(who, [v.case for v in variants], k, temperature, on_case)
    kept, rates = [], []
    for variant, answers in zip(variants, groups):
        rate = sum(score(variant.case, a) for a in answers) / k
        if rate < 1.0:
            kept.append(variant)
            rates.append(rate)
    return Discovered(len(variants), kept, rates)
