"""The ``agent`` family: requests over many function schemas, answered with the right tool calls.

Every case offers the OpenAI ``tools`` the way a client does: the function the request needs
among one to three others, in random order. Four shapes:

- **call:** one request → one call with exactly the arguments the request states (strings
  verbatim, numbers as numbers, enums, lists, nested objects, optional parameters only when asked);
- **parallel:** one request → two calls of the same function;
- **no call:** the needed function is not offered → a plain answer saying so;
- **result:** the call was made and its result came back → a plain answer that uses the result.

Argument values are copied from the request text, so an exact match is the right score.
"""

import json
from dataclasses import dataclass
from typing import Any

from molt.datagen.common import Case, Split, fill, rng_for, slots

VOCAB: dict[str, list] = {
    "city": ["Oslo", "Lisbon", "Nairobi", "Denver", "Osaka", "Lima", "Cairo", "Dublin", "Toronto", "Hanoi", "Zurich", "Austin", "Perth", "Seoul", "Bogota", "Krakow"],
    "person": ["Sam", "Priya", "Luca", "Mei", "Omar", "Anna", "Kofi", "Elena", "Jonas", "Aiko", "Diego", "Nora"],
    "time": ["7pm", "8:30pm", "noon", "9am", "6:15pm", "10am", "5pm", "7:45am"],
    "day": ["tomorrow", "Friday", "Monday", "next Tuesday", "June 3", "Saturday"],
    "restaurant": ["Luigi's", "Blue Lotus", "The Copper Pot", "Sakura House", "Casa Verde", "Fig & Olive"],
    "currency": ["USD", "EUR", "GBP", "JPY", "CHF", "CAD"],
    "task": ["call the dentist", "buy milk", "pay the rent", "water the plants", "send the report", "pick up the kids"],
    "subject": ["Lunch", "Project update", "Weekend plans", "Invoice", "Meeting notes"],
    "body": ["I'll be late today", "the draft is ready", "see you at 6", "thanks for your help"],
    "event": ["Team sync", "Dinner", "Book club", "Yoga", "Budget review"],
    "artist": ["Miles Davis", "Adele", "Daft Punk", "Nina Simone", "Coldplay", "Bach"],
    "room": ["living room", "bedroom", "kitchen", "office"],
    "priority": ["low", "normal", "high"],
    "item": ["renew passport", "book dentist", "clean the garage", "plan the trip", "fix the bike"],
    "symbol": ["AAPL", "MSFT", "NVDA", "TSLA", "AMZN"],
    "food": ["margherita pizza", "pad thai", "caesar salad", "ramen", "falafel wraps"],
    "address": ["12 Elm Street", "4 Harbor Road", "88 King Avenue", "7 Mill Lane"],
    "language": ["French", "German", "Spanish", "Japanese", "Italian"],
    "phrase": ["good morning", "where is the station", "thank you very much", "see you soon"],
    "label": ["pasta", "tea", "laundry", "oven"],
    "place": ["the airport", "Central Station", "the city museum", "Riverside Park"],
    "mode": ["driving", "walking", "transit"],
    "condition": ["sunny", "cloudy", "rainy", "windy", "snowy"],
    "airline": ["Nordwind", "SkyLark", "Atlas Air", "BlueJet"],
}
NUMBERS = {"price": (20, 990), "n": (2, 9), "m": (1, 3), "amount": (5, 900), "temp": (16, 26), "minutes": (3, 45), "q": (1, 4)}
TWINS = {"city2": "city", "person2": "person", "currency2": "currency", "symbol2": "symbol"}  # a second, different value


def string(description: str) -> dict:
    return {"type": "string", "description": description}


def integer(description: str) -> dict:
    return {"type": "integer", "description": description}


def enum(values: list[str], description: str) -> dict:
    return {"type": "string", "enum": values, "description": description}


@dataclass(frozen=True)
class Function:
    name: str
    description: str
    properties: dict[str, dict]
    required: list[str]
    phrase: str
    """What the function does, as a verb phrase ("check the weather"), for the no-call answer."""
    train: list[tuple[str, dict]]
    heldout: list[tuple[str, dict]]
    """Request templates with the arguments they state: {param: "{slot}" | literal | list | dict}."""
    result: tuple[dict, str] | None = None
    """A tool result template and the answer that uses it, for the result shape."""

    @property
    def schema(self) -> dict:
        parameters = {"type": "object", "properties": self.properties, "required": self.required}
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": parameters}}


FUNCTIONS = [
    Function(
        "get_weather", "Get the current weather for a city.",
        {"city": string("City name"), "unit": enum(["celsius", "fahrenheit"], "Temperature unit")}, ["city"], "check the weather",
        train=[("What's the weather in {city}?", {"city": "{city}"}), ("How warm is it in {city} in fahrenheit?", {"city": "{city}", "unit": "fahrenheit"}),
               ("Is it raining in {city} right now?", {"city": "{city}"})],
        heldout=[("Give me the current conditions for {city}.", {"city": "{city}"}), ("Tell me the temperature in {city}, in celsius please.", {"city": "{city}", "unit": "celsius"})],
        result=({"temperature": "{temp}", "condition": "{condition}"}, "It is {temp} degrees and {condition} in {city}."),
    ),
    Function(
        "set_reminder", "Schedule a reminder.",
        {"text": string("What to remind about"), "time": string("When, as the user said it")}, ["text", "time"], "set reminders",
        train=[("Remind me to {task} at {time}.", {"text": "{task}", "time": "{time}"}), ("Set a reminder at {time} to {task}.", {"text": "{task}", "time": "{time}"})],
        heldout=[("Don't let me forget to {task}, ping me at {time}.", {"text": "{task}", "time": "{time}"}), ("At {time}, remind me that I need to {task}.", {"text": "{task}", "time": "{time}"})],
        result=({"status": "scheduled"}, "Done: your reminder to {task} at {time} is scheduled."),
    ),
    Function(
        "send_email", "Send an email.",
        {"to": string("Recipient address"), "subject": string("Subject line"), "body": string("Message text")}, ["to", "subject", "body"], "send emails",
        train=[('Email {person_email} with the subject "{subject}" saying {body}.', {"to": "{person_email}", "subject": "{subject}", "body": "{body}"}),
               ('Mail to {person_email}, subject "{subject}": {body}.', {"to": "{person_email}", "subject": "{subject}", "body": "{body}"})],
        heldout=[('Send a message to {person_email}: subject "{subject}", text: {body}.', {"to": "{person_email}", "subject": "{subject}", "body": "{body}"})],
    ),
    Function(
        "book_table", "Reserve a restaurant table.",
        {"restaurant": string("Restaurant name"), "people": integer("Party size"), "time": string("Time of the booking")}, ["restaurant", "people", "time"], "book restaurants",
        train=[("Book a table for {n} at {restaurant} at {time}.", {"restaurant": "{restaurant}", "people": "{n}", "time": "{time}"}),
               ("Reserve {restaurant} for {n} people at {time}.", {"restaurant": "{restaurant}", "people": "{n}", "time": "{time}"})],
        heldout=[("Can you get us a table at {restaurant}? We are {n}, around {time}.", {"restaurant": "{restaurant}", "people": "{n}", "time": "{time}"}),
                 ("I need a reservation: {n} guests, {restaurant}, {time}.", {"restaurant": "{restaurant}", "people": "{n}", "time": "{time}"})],
        result=({"confirmed": True, "table": "{q}"}, "Booked: table {q} at {restaurant} for {n} people at {time}."),
    ),
    Function(
        "convert_currency", "Convert an amount between currencies.",
        {"amount": {"type": "number", "description": "Amount to convert"}, "from_currency": string("ISO code"), "to_currency": string("ISO code")}, ["amount", "from_currency", "to_currency"], "convert currencies",
        train=[("Convert {amount} {currency} to {currency2}.", {"amount": "{amount}", "from_currency": "{currency}", "to_currency": "{currency2}"}),
               ("How much is {amount} {currency} in {currency2}?", {"amount": "{amount}", "from_currency": "{currency}", "to_currency": "{currency2}"})],
        heldout=[("What do {amount} {currency} come to in {currency2}?", {"amount": "{amount}", "from_currency": "{currency}", "to_currency": "{currency2}"})],
        result=({"converted": "{price}"}, "{amount} {currency} is {price} {currency2}."),
    ),
    Function(
        "create_event", "Add an event to the calendar.",
        {"title": string("Event title"), "date": string("Day of the event"), "attendees": {"type": "array", "items": {"type": "string"}, "description": "People to invite"}},
        ["title", "date"], "edit the calendar",
        train=[('Schedule "{event}" on {day} with {person} and {person2}.', {"title": "{event}", "date": "{day}", "attendees": ["{person}", "{person2}"]}),
               ('Add "{event}" to my calendar for {day}.', {"title": "{event}", "date": "{day}"})],
        heldout=[('Put "{event}" in my calendar for {day} and invite {person} and {person2}.', {"title": "{event}", "date": "{day}", "attendees": ["{person}", "{person2}"]})],
    ),
    Function(
        "search_flights", "Search for flights.",
        {"origin": string("Departure city"), "destination": string("Arrival city"), "date": string("Travel day"),
         "passengers": {"type": "object", "properties": {"adults": integer("Adults"), "children": integer("Children")}, "description": "Who travels"}},
        ["origin", "destination", "date"], "search for flights",
        train=[("Find flights from {city} to {city2} on {day}.", {"origin": "{city}", "destination": "{city2}", "date": "{day}"}),
               ("Flights on {day}: {city} to {city2}, {n} adults and {m} children, please.", {"origin": "{city}", "destination": "{city2}", "date": "{day}", "passengers": {"adults": "{n}", "children": "{m}"}}),
               ("Search flights {city} to {city2} on {day} for {n} adults and {m} children.", {"origin": "{city}", "destination": "{city2}", "date": "{day}", "passengers": {"adults": "{n}", "children": "{m}"}})],
        heldout=[("I want to fly from {city} to {city2} on {day}. What is available?", {"origin": "{city}", "destination": "{city2}", "date": "{day}"}),
                 ("Any flights {day} from {city} to {city2}? We are {n} adults and {m} kids.", {"origin": "{city}", "destination": "{city2}", "date": "{day}", "passengers": {"adults": "{n}", "children": "{m}"}})],
        result=({"cheapest": "{amount}", "airline": "{airline}"}, "The cheapest flight is with {airline} for {amount} dollars."),
    ),
    Function(
        "play_music", "Play music.",
        {"query": string("Artist, album or genre"), "shuffle": {"type": "boolean", "description": "Shuffle play"}}, ["query"], "play music",
        train=[("Play some {artist}.", {"query": "{artist}"}), ("Put on {artist} on shuffle.", {"query": "{artist}", "shuffle": True})],
        heldout=[("I'd like to listen to {artist}.", {"query": "{artist}"}), ("Shuffle songs by {artist}.", {"query": "{artist}", "shuffle": True})],
    ),
    Function(
        "set_thermostat", "Set a room's target temperature.",
        {"room": enum(VOCAB["room"], "Which room"), "temperature": integer("Degrees celsius")}, ["room", "temperature"], "control the heating",
        train=[("Set the {room} to {temp} degrees.", {"room": "{room}", "temperature": "{temp}"})],
        heldout=[("Make the {room} {temp} degrees, please.", {"room": "{room}", "temperature": "{temp}"})],
    ),
    Function(
        "add_todo", "Add an item to the to-do list.",
        {"item": string("The task"), "priority": enum(VOCAB["priority"], "Priority")}, ["item"], "manage your to-do list",
        train=[("Add {item} to my to-do list.", {"item": "{item}"}), ("Add {item} to my to-do list as {priority} priority.", {"item": "{item}", "priority": "{priority}"}),
               ("To-do, {priority} priority: {item}.", {"item": "{item}", "priority": "{priority}"})],
        heldout=[("Put {item} on my list of things to do.", {"item": "{item}"}), ("New task with {priority} priority: {item}.", {"item": "{item}", "priority": "{priority}"})],
    ),
    Function(
        "get_stock_price", "Get the latest share price.",
        {"symbol": string("Ticker symbol")}, ["symbol"], "look up share prices",
        train=[("What's {symbol} trading at?", {"symbol": "{symbol}"}), ("Stock price of {symbol}?", {"symbol": "{symbol}"})],
        heldout=[("Give me the share price of {symbol}.", {"symbol": "{symbol}"})],
        result=({"price": "{amount}"}, "{symbol} is trading at {amount} dollars."),
    ),
    Function(
        "order_food", "Order food for delivery.",
        {"items": {"type": "array", "items": {"type": "object", "properties": {"name": string("Dish"), "quantity": integer("How many")}}, "description": "Dishes"},
         "address": string("Delivery address")}, ["items", "address"], "order food",
        train=[("Order {q} {food} to {address}.", {"items": [{"name": "{food}", "quantity": "{q}"}], "address": "{address}"})],
        heldout=[("Get {q} {food} delivered to {address}.", {"items": [{"name": "{food}", "quantity": "{q}"}], "address": "{address}"})],
    ),
    Function(
        "translate_text", "Translate text into another language.",
        {"text": string("Text to translate"), "target_language": string("Language name")}, ["text", "target_language"], "translate text",
        train=[('Translate "{phrase}" into {language}.', {"text": "{phrase}", "target_language": "{language}"})],
        heldout=[('How do you say "{phrase}" in {language}?', {"text": "{phrase}", "target_language": "{language}"})],
    ),
    Function(
        "set_timer", "Start a countdown timer.",
        {"minutes": integer("Length in minutes"), "label": string("Name of the timer")}, ["minutes"], "set timers",
        train=[("Set a timer for {minutes} minutes.", {"minutes": "{minutes}"}), ("Start a {minutes} minute timer for the {label}.", {"minutes": "{minutes}", "label": "{label}"})],
        heldout=[("Count down {minutes} minutes for me.", {"minutes": "{minutes}"}), ("Timer of {minutes} minutes, call it {label}.", {"minutes": "{minutes}", "label": "{label}"})],
    ),
    Function(
        "call_contact", "Phone a contact.",
        {"name": string("Contact name")}, ["name"], "make phone calls",
        train=[("Call {person}.", {"name": "{person}"}), ("Phone {person} now.", {"name": "{person}"})],
        heldout=[("Ring {person} for me.", {"name": "{person}"})],
    ),
    Function(
        "get_directions", "Get a route to a place.",
        {"destination": string("Where to"), "mode": enum(VOCAB["mode"], "How to travel")}, ["destination", "mode"], "give directions",
        train=[("Give me {mode} directions to {place}.", {"destination": "{place}", "mode": "{mode}"})],
        heldout=[("What's the {mode} route to {place}?", {"destination": "{place}", "mode": "{mode}"})],
        result=({"minutes": "{minutes}"}, "It takes about {minutes} minutes to {place}."),
    ),
]
BY_NAME = {f.name: f for f in FUNCTIONS}
PARALLEL = {
    "get_weather": (["What's the weather in {city} and in {city2}?"], ["Compare the weather in {city} with {city2}."], "city"),
    "get_stock_price": (["What are {symbol} and {symbol2} trading at?", "Quotes for {symbol} and {symbol2}, please."], ["Share prices of {symbol} and {symbol2}, please."], "symbol"),
}
NO_CALL = "Sorry, I can't {phrase} with the tools I have here."
SHAPES = (("call", 0.6), ("parallel", 0.1), ("no_call", 0.15), ("result", 0.15))


def draw_values(rng, names: list[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in dict.fromkeys(names):
        if name in NUMBERS:
            values[name] = rng.randint(*NUMBERS[name])
        elif name in TWINS:
            base = TWINS[name]
            values.setdefault(base, rng.choice(VOCAB[base]))
            values[name] = rng.choice([v for v in VOCAB[base] if v != values[base]])
        elif name == "person_email":
            values[name] = f"{rng.choice(VOCAB['person']).lower()}@example.com"
        elif name not in values:
            values[name] = rng.choice(VOCAB[name])
    return values


def bind(template: Any, values: dict[str, Any]) -> Any:
    """Argument template → value: "{n}" alone keeps the value's type (a number stays a number)."""
    if isinstance(template, str):
        names = slots(template)
        whole = len(names) == 1 and template == f"{{{names[0]}}}"
        return values[names[0]] if whole else fill(template, values)
    if isinstance(template, list):
        return [bind(t, values) for t in template]
    if isinstance(template, dict):
        return {k: bind(t, values) for k, t in template.items()}
    return template


def needed_slots(*templates: Any) -> list[str]:
    names: list[str] = []
    for template in templates:
        if isinstance(template, str):
            names += slots(template)
        elif isinstance(template, (list, tuple)):
            names += needed_slots(*template)
        elif isinstance(template, dict):
            names += needed_slots(*template.values())
    return names


def offered(rng, pool: list[Function], needed: Function | None, exclude: Function | None = None) -> list[dict]:
    others = [f for f in pool if f is not needed and f is not exclude]
    chosen = rng.sample(others, rng.randint(1, 2) if needed is None else rng.randint(0, 2))
    chosen += [needed] if needed is not None else []
    rng.shuffle(chosen)
    return [f.schema for f in chosen]


def call(name: str, arguments: dict, index: int) -> dict:
    return {"id": f"call_{index}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}


def generate(split: Split, n: int, seed: int = 0, functions: list[str] | None = None) -> list[Case]:
    """``functions`` narrows the schemas drawn from (all 16 by default)."""
    rng = rng_for(split, seed, "agent")
    pool = [BY_NAME[name] for name in functions] if functions else FUNCTIONS
    cases = []
    for _ in range(n):
        shape = rng.choices([s for s, _ in SHAPES], [w for _, w in SHAPES])[0]
        if shape == "parallel":
            function = BY_NAME[rng.choice(sorted(p for p in PARALLEL if p in {f.name for f in pool}) or sorted(PARALLEL))]
            train, heldout, param = PARALLEL[function.name]
            text = rng.choice(train if split == "train" else heldout)
            names = slots(text)
            values = draw_values(rng, names)
            calls = [{"name": function.name, "arguments": {param: values[s]}} for s in names]
            answer = {"role": "assistant", "content": None, "tool_calls": [call(c["name"], c["arguments"], i) for i, c in enumerate(calls)]}
            cases.append(Case("agent", [{"role": "user", "content": fill(text, values)}], answer, offered(rng, pool, function), {"kind": "call", "calls": calls}))
            continue
        with_results = [f for f in pool if f.result] or [f for f in FUNCTIONS if f.result]
        function = rng.choice(with_results if shape == "result" else pool)
        text, arguments = rng.choice(function.train if split == "train" else function.heldout)
        result, final = function.result or ({}, "")
        values = draw_values(rng, needed_slots(text, arguments, result, final))
        request = {"role": "user", "content": fill(text, values)}
        arguments = bind(arguments, values)
        if shape == "no_call":
            answer = {"role": "assistant", "content": fill(NO_CALL, {"phrase": function.phrase})}
            cases.append(Case("agent", [request], answer, offered(rng, pool, None, exclude=function), {"kind": "no_call"}))
        elif shape == "call":
            answer = {"role": "assistant", "content": None, "tool_calls": [call(function.name, arguments, 0)]}
            cases.append(Case("agent", [request], answer, offered(rng, pool, function), {"kind": "call", "calls": [{"name": function.name, "arguments": arguments}]}))
        else:
            made = {"role": "assistant", "content": None, "tool_calls": [call(function.name, arguments, 0)]}
            output = bind(result, values)
            reply = {"role": "tool", "tool_call_id": "call_0", "content": json.dumps(output)}
            answer = {"role": "assistant", "content": fill(final, values)}
            mention = [str(v) for v in output.values() if not isinstance(v, bool)]
            cases.append(Case("agent", [request, made, reply], answer, offered(rng, pool, function), {"kind": "result", "mention": mention}))
    return cases
