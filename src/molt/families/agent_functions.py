"""The agent family's function schemas and vocabularies: the trained ones and the held-out ones.

The 16 train functions cover everyday assistant APIs (weather, reminders, email, bookings,
money, calendar, music, home, shopping, travel). The 12 held-out functions are APIs of other
kinds that no train case offers or calls (rides, parcels, bank transfers, door locks, fitness,
recipes, air quality, parking, trains, library loans, a dictionary, meeting rooms), with schema
shapes of their own (a required boolean, a list of strings with optional flags, a list of
objects), filled from a vocabulary that shares no value with the train one.
"""

from dataclasses import dataclass, field
from typing import Any

def string(description: str) -> dict:
    return {"type": "string", "description": description}


def integer(description: str) -> dict:
    return {"type": "integer", "description": description}


def enum(values: list[str], description: str) -> dict:
    return {"type": "string", "enum": values, "description": description}




@dataclass(frozen=True)
class Result:
    """A tool result template, the answer that uses it, and the words each numeric value must
    stand near in that answer (``{slot}`` allowed): "18" alone is not "18 degrees"."""

    output: dict[str, Any]
    answer: str
    near: dict[str, list[str]] = field(default_factory=dict)


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
    """Request templates with the arguments they state: {param: "{slot}" | literal | list | dict}.
    A held-out function has only ``heldout`` templates."""
    result: Result | None = None
    """For the result shape: the call was made, its result came back, the answer uses it."""

    @property
    def schema(self) -> dict:
        parameters = {"type": "object", "properties": self.properties, "required": self.required}
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": parameters}}


VOCAB: dict[str, dict[str, list]] = {
    "train": {
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
    },
    "heldout": {
        "city": ["Reykjavik", "Montevideo", "Tbilisi", "Accra", "Kyoto", "Porto", "Quito", "Tallinn", "Windhoek", "Ljubljana"],
        "person": ["Ravi", "Ingrid", "Tomas", "Yara", "Lena", "Bruno", "Hana", "Farid"],
        "venue": ["the Grand Hotel", "Pier 39", "the north campus", "Union Square", "the ferry terminal", "Maple Mall"],
        "ride": ["standard", "xl", "shared"],
        "tracking": ["ZX4471", "QP9023", "LM5518", "TR6604", "BK3390", "HN2287"],
        "status": ["in transit", "at the depot", "out for delivery"],
        "date": ["March 14", "April 2", "May 27", "October 9"],
        "account": ["checking", "savings"],
        "payee": ["Ravi Kumar", "Ingrid Holm", "Tomas Novak", "Yara Haddad", "Lena Fischer"],
        "reference": ["rent March", "bike repair", "concert tickets", "shared dinner"],
        "tid": ["TX-5521", "TX-8034", "TX-1190", "TX-6657"],
        "door": ["front door", "back door", "garage door"],
        "activity": ["rowing", "pilates", "hiking", "boxing", "climbing"],
        "intensity": ["easy", "moderate", "hard"],
        "ingredient": ["chickpeas", "spinach", "mushrooms", "tofu", "lentils", "zucchini", "feta"],
        "dish": ["lentil curry", "spinach pie", "mushroom risotto", "tofu stir fry"],
        "level": ["good", "fair", "poor"],
        "garage": ["Central Garage", "Harbor Parking", "Station Lot B"],
        "plate": ["KX-204", "B 7731", "LT 559", "NR 4410"],
        "clock": ["4:20pm", "11am", "7:05am", "9:40pm", "2:15pm"],
        "platform": ["2", "5", "7", "11"],
        "book": ["The Silent Orchard", "Paper Lanterns", "A Map of Salt", "Northern Tides"],
        "word": ["serendipity", "ephemeral", "quixotic", "laconic", "ubiquitous"],
        "tongue": ["Dutch", "Swedish", "Portuguese", "Korean"],
        "meeting_room": ["Aurora room", "Cedar room", "Summit room"],
        "driver": ["Marta", "Kenji", "Abdul", "Sofia"],
    },
}
NUMBERS: dict[str, tuple[int, int]] = {"mins": (5, 90), "euros": (10, 2500), "hours": (1, 12), "weeks": (1, 4), "aqi": (12, 180), "price": (20, 990), "n": (2, 9), "m": (1, 3), "amount": (5, 900), "temp": (16, 26), "minutes": (3, 45), "q": (1, 4)}
TWINS = {"city2": "city", "person2": "person", "currency2": "currency", "symbol2": "symbol", "venue2": "venue", "tracking2": "tracking", "ingredient2": "ingredient"}
"""A second slot of the same kind, always a different value."""
TRAIN = VOCAB["train"]
HELD = VOCAB["heldout"]

TRAIN_FUNCTIONS = [
    Function(
        "get_weather", "Get the current weather for a city.",
        {"city": string("City name"), "unit": enum(["celsius", "fahrenheit"], "Temperature unit")}, ["city"], "check the weather",
        train=[("What's the weather in {city}?", {"city": "{city}"}), ("How warm is it in {city} in fahrenheit?", {"city": "{city}", "unit": "fahrenheit"}),
               ("Is it raining in {city} right now?", {"city": "{city}"})],
        heldout=[("Give me the current conditions for {city}.", {"city": "{city}"}), ("Tell me the temperature in {city}, in celsius please.", {"city": "{city}", "unit": "celsius"})],
        result=Result({"temperature": "{temp}", "condition": "{condition}"}, "It is {temp} degrees and {condition} in {city}.", {"temperature": ["degree", "°"]}),
    ),
    Function(
        "set_reminder", "Schedule a reminder.",
        {"text": string("What to remind about"), "time": string("When, as the user said it")}, ["text", "time"], "set reminders",
        train=[("Remind me to {task} at {time}.", {"text": "{task}", "time": "{time}"}), ("Set a reminder at {time} to {task}.", {"text": "{task}", "time": "{time}"})],
        heldout=[("Don't let me forget to {task}, ping me at {time}.", {"text": "{task}", "time": "{time}"}), ("At {time}, remind me that I need to {task}.", {"text": "{task}", "time": "{time}"})],
        result=Result({"status": "scheduled"}, "Done: your reminder to {task} at {time} is scheduled.", {}),
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
        result=Result({"confirmed": True, "table": "{q}"}, "Booked: table {q} at {restaurant} for {n} people at {time}.", {"table": ["table"]}),
    ),
    Function(
        "convert_currency", "Convert an amount between currencies.",
        {"amount": {"type": "number", "description": "Amount to convert"}, "from_currency": string("ISO code"), "to_currency": string("ISO code")}, ["amount", "from_currency", "to_currency"], "convert currencies",
        train=[("Convert {amount} {currency} to {currency2}.", {"amount": "{amount}", "from_currency": "{currency}", "to_currency": "{currency2}"}),
               ("How much is {amount} {currency} in {currency2}?", {"amount": "{amount}", "from_currency": "{currency}", "to_currency": "{currency2}"})],
        heldout=[("What do {amount} {currency} come to in {currency2}?", {"amount": "{amount}", "from_currency": "{currency}", "to_currency": "{currency2}"})],
        result=Result({"converted": "{price}"}, "{amount} {currency} is {price} {currency2}.", {"converted": ["{currency2}"]}),
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
        result=Result({"cheapest": "{amount}", "airline": "{airline}"}, "The cheapest flight is with {airline} for {amount} dollars.", {"cheapest": ["dollar", "$", "usd", "price", "cost"]}),
    ),
    Function(
        "play_music", "Play music.",
        {"query": string("Artist, album or genre"), "shuffle": {"type": "boolean", "description": "Shuffle play"}}, ["query"], "play music",
        train=[("Play some {artist}.", {"query": "{artist}"}), ("Put on {artist} on shuffle.", {"query": "{artist}", "shuffle": True})],
        heldout=[("I'd like to listen to {artist}.", {"query": "{artist}"}), ("Shuffle songs by {artist}.", {"query": "{artist}", "shuffle": True})],
    ),
    Function(
        "set_thermostat", "Set a room's target temperature.",
        {"room": enum(TRAIN["room"], "Which room"), "temperature": integer("Degrees celsius")}, ["room", "temperature"], "control the heating",
        train=[("Set the {room} to {temp} degrees.", {"room": "{room}", "temperature": "{temp}"})],
        heldout=[("Make the {room} {temp} degrees, please.", {"room": "{room}", "temperature": "{temp}"})],
    ),
    Function(
        "add_todo", "Add an item to the to-do list.",
        {"item": string("The task"), "priority": enum(TRAIN["priority"], "Priority")}, ["item"], "manage your to-do list",
        train=[("Add {item} to my to-do list.", {"item": "{item}"}), ("Add {item} to my to-do list as {priority} priority.", {"item": "{item}", "priority": "{priority}"}),
               ("To-do, {priority} priority: {item}.", {"item": "{item}", "priority": "{priority}"})],
        heldout=[("Put {item} on my list of things to do.", {"item": "{item}"}), ("New task with {priority} priority: {item}.", {"item": "{item}", "priority": "{priority}"})],
    ),
    Function(
        "get_stock_price", "Get the latest share price.",
        {"symbol": string("Ticker symbol")}, ["symbol"], "look up share prices",
        train=[("What's {symbol} trading at?", {"symbol": "{symbol}"}), ("Stock price of {symbol}?", {"symbol": "{symbol}"})],
        heldout=[("Give me the share price of {symbol}.", {"symbol": "{symbol}"})],
        result=Result({"price": "{amount}"}, "{symbol} is trading at {amount} dollars.", {"price": ["dollar", "$", "usd", "trading", "price"]}),
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
        {"destination": string("Where to"), "mode": enum(TRAIN["mode"], "How to travel")}, ["destination", "mode"], "give directions",
        train=[("Give me {mode} directions to {place}.", {"destination": "{place}", "mode": "{mode}"})],
        heldout=[("What's the {mode} route to {place}?", {"destination": "{place}", "mode": "{mode}"})],
        result=Result({"minutes": "{minutes}"}, "It takes about {minutes} minutes to {place}.", {"minutes": ["minute", "min"]}),
    ),
]
HELDOUT_FUNCTIONS = [
    Function(
        "book_ride", "Order a car to take the user somewhere.",
        {"pickup": string("Where the car picks the user up"), "dropoff": string("Where the ride ends"), "ride_type": enum(HELD["ride"], "Car size or sharing")},
        ["pickup", "dropoff"], "order rides",
        train=[],
        heldout=[("Get me a ride from {venue} to {venue2}.", {"pickup": "{venue}", "dropoff": "{venue2}"}),
                 ("I need a {ride} car from {venue} to {venue2}.", {"pickup": "{venue}", "dropoff": "{venue2}", "ride_type": "{ride}"})],
        result=Result({"driver": "{driver}", "eta_minutes": "{mins}"}, "Your driver {driver} will be there in {mins} minutes.", {"eta_minutes": ["minute", "min"]}),
    ),
    Function(
        "track_parcel", "Look up where a shipment is.",
        {"tracking_number": string("The carrier's tracking code")}, ["tracking_number"], "track parcels",
        train=[],
        heldout=[("Where is my parcel {tracking}?", {"tracking_number": "{tracking}"}), ("Track shipment {tracking}, please.", {"tracking_number": "{tracking}"})],
        result=Result({"status": "{status}", "eta": "{date}"}, "Parcel {tracking} is {status} and should arrive on {date}."),
    ),
    Function(
        "transfer_money", "Move money from one of the user's accounts to a payee.",
        {"from_account": enum(HELD["account"], "Source account"), "payee": string("Who receives the money"), "amount": {"type": "number", "description": "Euros"},
         "reference": string("Note shown to the payee")},
        ["from_account", "payee", "amount"], "transfer money",
        train=[],
        heldout=[("Send {euros} euros from my {account} account to {payee}.", {"from_account": "{account}", "payee": "{payee}", "amount": "{euros}"}),
                 ("Pay {payee} {euros} euros out of {account}, reference {reference}.", {"from_account": "{account}", "payee": "{payee}", "amount": "{euros}", "reference": "{reference}"})],
        result=Result({"transfer_id": "{tid}"}, "Sent {euros} euros to {payee}; the transfer id is {tid}."),
    ),
    Function(
        "lock_door", "Lock or unlock a smart lock.",
        {"door": enum(HELD["door"], "Which lock"), "locked": {"type": "boolean", "description": "True to lock, false to unlock"}}, ["door", "locked"], "operate the door locks",
        train=[],
        heldout=[("Lock the {door}.", {"door": "{door}", "locked": True}), ("Please unlock the {door}.", {"door": "{door}", "locked": False})],
    ),
    Function(
        "log_workout", "Record an exercise session.",
        {"activity": string("Sport or exercise"), "duration_minutes": integer("How long"), "intensity": enum(HELD["intensity"], "How hard")}, ["activity", "duration_minutes"], "log workouts",
        train=[],
        heldout=[("Log {mins} minutes of {activity}.", {"activity": "{activity}", "duration_minutes": "{mins}"}),
                 ("Record a {intensity} {activity} session lasting {mins} minutes.", {"activity": "{activity}", "duration_minutes": "{mins}", "intensity": "{intensity}"})],
    ),
    Function(
        "find_recipe", "Search recipes by ingredient.",
        {"ingredients": {"type": "array", "items": {"type": "string"}, "description": "Ingredients to use"}, "max_minutes": integer("Longest cooking time"),
         "vegetarian": {"type": "boolean", "description": "Only meat-free recipes"}},
        ["ingredients"], "search recipes",
        train=[],
        heldout=[("Find a recipe with {ingredient} and {ingredient2}.", {"ingredients": ["{ingredient}", "{ingredient2}"]}),
                 ("Any vegetarian dish using {ingredient} and {ingredient2} that is ready within {mins} minutes?", {"ingredients": ["{ingredient}", "{ingredient2}"], "max_minutes": "{mins}", "vegetarian": True})],
        result=Result({"recipe": "{dish}", "minutes": "{mins}"}, "Try the {dish}; it is ready in {mins} minutes.", {"minutes": ["minute", "min"]}),
    ),
    Function(
        "get_air_quality", "Current air pollution index of a city.",
        {"city": string("City name")}, ["city"], "measure air pollution",
        train=[],
        heldout=[("How clean is the air in {city}?", {"city": "{city}"}), ("Air quality index for {city}?", {"city": "{city}"})],
        result=Result({"aqi": "{aqi}", "level": "{level}"}, "The air quality index in {city} is {aqi}, which counts as {level}.", {"aqi": ["index", "aqi", "air"]}),
    ),
    Function(
        "reserve_parking", "Reserve a parking space.",
        {"garage": string("Car park name"), "hours": integer("How many hours"), "plate": string("Licence plate")}, ["garage", "hours", "plate"], "reserve parking",
        train=[],
        heldout=[("Reserve a spot at {garage} for {hours} hours, plate {plate}.", {"garage": "{garage}", "hours": "{hours}", "plate": "{plate}"})],
    ),
    Function(
        "next_train", "Find the next train between two stations.",
        {"origin": string("From"), "destination": string("To"), "after": string("Earliest departure")}, ["origin", "destination"], "look up trains",
        train=[],
        heldout=[("When is the next train from {city} to {city2} after {clock}?", {"origin": "{city}", "destination": "{city2}", "after": "{clock}"}),
                 ("Next rail connection {city} to {city2}?", {"origin": "{city}", "destination": "{city2}"})],
        result=Result({"departure": "{clock}", "platform": "{platform}"}, "It leaves at {clock} from platform {platform}.", {"platform": ["platform", "track"]}),
    ),
    Function(
        "renew_loan", "Extend a library loan.",
        {"title": string("Book title"), "weeks": integer("Extra weeks")}, ["title", "weeks"], "renew library books",
        train=[],
        heldout=[('Renew "{book}" for {weeks} more weeks.', {"title": "{book}", "weeks": "{weeks}"})],
    ),
    Function(
        "define_word", "Dictionary definition of a word.",
        {"word": string("The word"), "language": string("Language of the definition")}, ["word"], "look words up in a dictionary",
        train=[],
        heldout=[("What does {word} mean?", {"word": "{word}"}), ("Define {word} in {tongue}.", {"word": "{word}", "language": "{tongue}"})],
    ),
    Function(
        "book_meeting_room", "Reserve a meeting room and invite people.",
        {"room": enum(HELD["meeting_room"], "Which room"), "start": string("Start time"),
         "attendees": {"type": "array", "items": {"type": "object", "properties": {"name": string("Name"), "email": string("Address")}}, "description": "Who is invited"}},
        ["room", "start"], "book meeting rooms",
        train=[],
        heldout=[("Book the {meeting_room} at {clock} for {person} ({person_email}) and {person2} ({person2_email}).",
                  {"room": "{meeting_room}", "start": "{clock}", "attendees": [{"name": "{person}", "email": "{person_email}"}, {"name": "{person2}", "email": "{person2_email}"}]}),
                 ("Reserve the {meeting_room} from {clock}.", {"room": "{meeting_room}", "start": "{clock}"})],
    ),
]
PARALLEL: dict[str, tuple[str, dict[str, list[str]]]] = {
    "get_weather": ("city", {"train": ["What's the weather in {city} and in {city2}?"], "heldout": ["Compare the weather in {city} with {city2}."]}),
    "get_stock_price": ("symbol", {"train": ["What are {symbol} and {symbol2} trading at?", "Quotes for {symbol} and {symbol2}, please."], "heldout": ["Share prices of {symbol} and {symbol2}, please."]}),
    "get_air_quality": ("city", {"heldout": ["Is the air in {city} or in {city2} cleaner today?"]}),
    "track_parcel": ("tracking_number", {"heldout": ["Check both shipments, {tracking} and {tracking2}."]}),
}
"""Requests for two calls of one function: its parameter and templates per template set."""
