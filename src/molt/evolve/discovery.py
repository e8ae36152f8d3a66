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
- ``renamed_schema``: the offered functions and their parameters under other names, drawn per
  variant (the same request, answered with the names the schema gives): a specialist that calls
  what it memorised instead of reading the schema fails it, as it fails any API it never saw.
- ``unoffered_request``: the case's functions on offer, and a request none of them (nor any
  trained or held-out function) can serve ("Water the tomato plants on the balcony."), answered
  with a refusal that names it: a specialist that refuses with a memorised capability ("I can't
  make phone calls") fails it, as it fails every request it was never trained to refuse.

``renamed_schema`` and ``unoffered_request`` are proposed for every case (every held-out function
is new to the pair, so reading the schema and naming the request are what transfer); the other
operators are drawn at random for the rest of ``per_case``.
"""

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from molt.evolve.answering import Specialist, sampled, score
from molt.families import Case
from molt.families.agent import NO_CALL
from molt.families.base import fill

OPERATORS = ("renamed_schema", "unoffered_request", "distractor_tools", "earlier_goal", "restated", "lifted_constraint", "hidden_preference")
ALWAYS = OPERATORS[:2]
"""Proposed for every case, before the others are drawn."""


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
    "get_weather": ("weather_report", "forecast_lookup", "fetch_conditions"),
    "set_reminder": ("remind_me", "schedule_note", "create_alert"),
    "send_email": ("compose_mail", "mail_message", "dispatch_email"),
    "book_table": ("restaurant_reservation", "reserve_seating", "dinner_booking"),
    "convert_currency": ("exchange_rate_convert", "money_exchange", "fx_calculate"),
    "create_event": ("calendar_add", "schedule_meeting", "new_appointment"),
    "search_flights": ("find_flights", "airfare_lookup", "flight_finder"),
    "play_music": ("start_playback", "music_player", "queue_songs"),
    "set_thermostat": ("adjust_heating", "climate_control", "room_temperature_set"),
    "add_todo": ("todo_append", "task_list_add", "note_task"),
    "get_stock_price": ("stock_quote", "share_price_lookup", "market_price"),
    "order_food": ("food_delivery", "meal_order", "takeaway_request"),
    "translate_text": ("translate", "language_convert", "render_in_language"),
    "set_timer": ("countdown", "start_stopwatch_down", "alarm_in"),
    "call_contact": ("phone_call", "dial_person", "ring_contact"),
    "get_directions": ("route_planner", "navigate_to", "path_finder"),
}
"""Other names for the train functions, one drawn per variant (none is a held-out function's, a test checks)."""
RENAMED_PARAMETERS = {
    "city": ("place", "location_name", "town"), "unit": ("scale", "units_system"), "text": ("content", "words", "passage"),
    "time": ("when", "at_time", "moment"), "to": ("recipient", "send_to", "addressee"), "subject": ("headline", "topic_line"),
    "body": ("message_body", "mail_text"), "restaurant": ("venue", "eatery"), "people": ("party_size", "guests_count", "covers"),
    "amount": ("sum", "value", "quantity_of_money"), "from_currency": ("source_currency", "currency_in"),
    "to_currency": ("target_currency", "currency_out"), "title": ("event_name", "heading"), "date": ("day", "on_date", "calendar_day"),
    "attendees": ("guests", "invitees"), "origin": ("departure", "leaving_from", "start_airport"),
    "destination": ("to_place", "arrival", "going_to"), "passengers": ("travellers", "party"), "query": ("search_terms", "what_to_play"),
    "shuffle": ("random_order", "mix"), "room": ("zone", "area"), "temperature": ("degrees", "target_heat"),
    "item": ("task", "entry", "todo_text"), "priority": ("urgency", "importance"), "symbol": ("ticker", "stock_code"),
    "items": ("dishes", "order_lines"), "address": ("deliver_to", "drop_off"), "target_language": ("into_language", "output_language"),
    "minutes": ("duration", "length_minutes"), "label": ("tag", "timer_name"), "name": ("contact", "person", "who"),
    "mode": ("travel_mode", "transport"),
}
"""Other names for their parameters, one drawn per variant (no two parameters share one, a test checks)."""


def renamed_schema(case: Case, bank: list[Case], rng: random.Random) -> Case | None:
    if not case.tools or not all(t["function"]["name"] in RENAMED_FUNCTIONS for t in case.tools):
        return None

    functions = {t["function"]["name"]: rng.choice(RENAMED_FUNCTIONS[t["function"]["name"]]) for t in case.tools}
    parameters = {name: rng.choice(names) for name, names in RENAMED_PARAMETERS.items()}

    def param(name: str) -> str:
        return parameters.get(name, name)

    def call(made: dict) -> dict:
        return {**made, "name": functions[made["name"]], "arguments": {param(k): v for k, v in made["arguments"].items()}}

    def tool_call(made: dict) -> dict:
        renamed = call({"name": made["function"]["name"], "arguments": json.loads(made["function"]["arguments"])})
        return {**made, "function": {"name": renamed["name"], "arguments": json.dumps(renamed["arguments"], ensure_ascii=False)}}

    def message(m: dict) -> dict:
        return {**m, "tool_calls": [tool_call(c) for c in m["tool_calls"]]} if m.get("tool_calls") else m

    def tool(schema: dict) -> dict:
        function, parameters = schema["function"], schema["function"]["parameters"]
        renamed = {**parameters, "properties": {param(k): v for k, v in parameters["properties"].items()}, "required": [param(k) for k in parameters.get("required", [])]}
        return {**schema, "function": {**function, "name": functions[function["name"]], "parameters": renamed}}

    check = dict(case.check)
    if "calls" in check:
        check["calls"] = [call(c) for c in check["calls"]]
    if check.get("function") in functions:
        check["function"] = functions[check["function"]]
    return replace(case, messages=[message(m) for m in case.messages], answer=message(case.answer), tools=[tool(t) for t in case.tools], check=check)


UNOFFERED = (
    ("Prune the rose bushes by the gate.", "prune roses"), ("Feed the cat at six tonight.", "feed pets"),
    ("Vacuum the hallway carpet.", "vacuum carpets"), ("Print two copies of my essay.", "print documents"),
    ("Switch the washing machine to the wool cycle.", "switch washing machine cycles"), ("Turn on the porch lights.", "switch lights"),
    ("Scan this receipt and file it.", "scan receipts"), ("Post a photo of my garden to my blog.", "publish blog posts"),
    ("Brew a pot of coffee.", "brew coffee"), ("Mow the lawn, please.", "mow the lawn"),
    ("Copy the photos off my camera.", "copy camera photos"), ("Tune the guitar to drop D.", "tune instruments"),
    ("Read my blood pressure.", "read blood pressure"), ("Draw a portrait of my dog.", "draw pictures"),
    ("Polish the windows upstairs.", "polish windows"), ("Charge the electric scooter.", "charge scooters"),
    ("Fill up the bird feeder.", "refill bird feeders"), ("Iron my white shirt.", "iron clothes"),
    ("Sharpen the carving knives.", "sharpen knives"), ("Defrost the freezer.", "defrost freezers"),
    ("Paint the fence green.", "paint fences"), ("Wash the dishes in the sink.", "wash dishes"),
    ("Fold the towels on the bed.", "fold towels"), ("Sweep the chimney before winter.", "sweep chimneys"),
)
"""Requests no trained or held-out function serves, with the phrase a refusal names them by (a
test checks that they share no word with any function's phrase, description, templates or values)."""


def unoffered_request(case: Case, bank: list[Case], rng: random.Random) -> Case | None:
    if case.family != "agent" or not case.tools:
        return None
    request, phrase = rng.choice(UNOFFERED)
    answer = {"role": "assistant", "content": fill(NO_CALL, {"phrase": phrase})}
    return Case(case.family, [{"role": "user", "content": request}], answer, case.tools, {"kind": "no_call", "function": "", "topic": f"{request} {phrase}"})


MAKERS: dict[str, Callable[[Case, list[Case], random.Random], Case | None]] = {
    "distractor_tools": distractor_tools, "earlier_goal": earlier_goal, "restated": restated,
    "lifted_constraint": lifted_constraint, "hidden_preference": hidden_preference, "renamed_schema": renamed_schema,
    "unoffered_request": unoffered_request,
}


def propose(bank: list[Case], per_case: int, seed: int) -> list[Variant]:
    """Up to ``per_case`` well-defined variants of each bank case (the reference passes)."""
    rng = random.Random(f"discovery:{seed}")
    others = OPERATORS[len(ALWAYS):]
    drawn = min(max(per_case - len(ALWAYS), 0), len(others))
    variants = []
    for i, case in enumerate(bank):
        for operator in [*ALWAYS[:per_case], *rng.sample(others, drawn)]:
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
