"""The held-out ``test`` split: seven task kinds, one per domain, and entity pools of its own.

Nothing here is shared with ``train_tasks.py``: not a task kind, a name, an item, a payee, a
place, a date (June here, March there), a time (whole hours here, half hours there) or an amount
(``tests/bench/test_living_scenarios.py`` checks every answer and entity).
"""

from dataclasses import replace

from molt.bench.living.phrases import date_forms, next_day, shift, spoken_amount, spoken_date, spoken_time, time_forms
from molt.bench.living.task import Call, Change, Draw, Lookup, Task, amount_slot, date_slot, event, message, order, payment, text_slot, time_slot

SETTING = {
    "today": "2025-06-02",
    "balance": 2400.0,
    "budgets": {"utilities": 320.0, "home": 260.0, "household bills": 280.0, "repairs": 400.0, "gifts": 150.0},
    "hello": "Are we still on for coffee next week?",
}
GIFTS = {
    "astronomy": ("Star Map Poster", "Pocket Telescope", "Planetarium Projector"),
    "knitting": ("Merino Yarn Bundle", "Bamboo Needle Set", "Cable Knit Kit"),
    "chess": ("Travel Chess Set", "Walnut Chess Board", "Tournament Chess Clock"),
    "gardening": ("Herb Seed Tin", "Copper Watering Can", "Cedar Raised Bed"),
    "baking": ("Sourdough Starter Kit", "Enamel Loaf Tin", "Marble Pastry Board"),
    "birdwatching": ("Bird Call Guide", "Feeder Station", "Compact Binoculars"),
}
POOLS = {
    "people": ["Tomasz Wielgus", "Amara Okonkwo", "Lucía Ferreyra", "Kenji Arakawa", "Sigrid Halvorsen", "Rafael Domingues", "Yusuf Demir", "Priyanka Menon", "Mirela Popescu", "Declan Byrne", "Ingrid Solberg", "Thabo Nkosi"],
    "relations": ["sister", "neighbour", "coworker", "cousin", "old friend", "brother"],
    "doctors": ["Dr. Okafor", "Dr. Lindqvist", "Dr. Marchetti", "Dr. Havel", "Dr. Sato", "Dr. Abernethy"],
    "companies": ["Brightwater Plumbing", "Voltline Electric", "Ironclad Appliance Care", "Northgate Home Services", "Keystone Heating"],
    "appliances": ["dishwasher", "boiler", "washing machine", "fridge", "oven"],
    "utilities": [("water", "Clearspring Water"), ("electricity", "Meridian Power"), ("internet", "Fibrelink Broadband"), ("gas", "Calder Gas")],
    "bills": [84.2, 61.4, 127.8, 93.6, 58.2, 110.4, 72.6],
    "bill_categories": ["utilities", "home", "household bills"],
    "deposits": [40.0, 60.0, 75.0, 90.0, 55.0, 85.0],
    "gift_budgets": [35.0, 45.0, 55.0, 65.0],
    "interests": list(GIFTS),
    "activities": ["School concert", "Book club", "Pottery class", "Choir rehearsal", "Tennis lesson", "Parents' evening", "Yoga session", "Chess club", "Language exchange", "Quiz night"],
    "cities": ["Lisbon", "Ghent", "Bologna", "Kraków", "Valencia", "Porto"],
    "days": [f"2025-06-{d:02d}" for d in range(3, 28)],
    "times": [f"{h:02d}:00" for h in range(9, 18)],
    "chores": ["Pick up dry cleaning", "Renew library books", "Return the borrowed drill", "Collect the parcel", "Drop off the recycling", "Get the car washed"],
}


SIDE_TEXTS = ("I need '{title}' on my calendar, {date} at {time}. {fact}", "Can you schedule '{title}' for {date} at {time}? {fact}")
"""The memory variants' earlier sessions: a calendar chore, then the fact said in passing."""


def book_checkup(d: Draw, changed: bool) -> Task:
    """A dentist checkup; changed: it is due the day after an event that someone else moves."""
    doctor, old = d.take("doctors", 2)
    day, old_day, anchor_day, moved_day = d.take("days", 4)
    at, anchor_at = d.take("times", 2)
    anchor = d.event(d.take("activities"), anchor_day, anchor_at)
    date, change = date_slot(day, alt=old_day), None
    if changed:
        what = anchor["title"].lower()
        date = replace(date_slot(next_day(moved_day)), spoken=f"the day after my {what}")
        change = Change((("move_event", anchor["id"], moved_day, anchor_at),), f"Oh, and I just saw that my {what} was moved.", {"date": next_day(anchor_day)})
    who = text_slot("doctor", doctor, "dentist", ("dentist's name", "which dentist", "which doctor", "who"), " with {}", alt=old, fact="My dentist is {} these days, by the way.", recall=" with my usual dentist")
    return Task(
        "health",
        ("Please book a dentist checkup{doctor}{date}{time}.", "Could you put a dentist checkup in my calendar{doctor}{date}{time}?"),
        (who, date, time_slot(at)),
        d.world(contacts=[d.contact(doctor, "doctor"), d.contact(old, "doctor")], events=[anchor]),
        (Call("find_contact", {"query": "{doctor}"}), Call("list_events", {"date": "{date}"}), Call("add_event", {"title": "Dentist checkup", "date": "{date}", "time": "{time}", "with": "{doctor}"})),
        (event(title="dentist", date=date.value, time=at, with_=doctor),),
        ask="time", changing="date", memory="doctor", change=change,
    )


def reschedule_event(d: Draw, changed: bool) -> Task:
    """Move one event; changed: someone books the new slot, and the user said "then an hour later"."""
    title = d.take("activities")
    was_day, day, alt_day = d.take("days", 3)
    was, at, alt_at = d.take("times", 3)
    target = d.event(title, was_day, was)
    texts = ("Can you move{event}{date}{time}?", "Please reschedule{event}{date}{time}.")
    final, change, new_time = at, None, "{time}"
    if changed:
        texts = tuple(f"{t} If I'm already busy then, make it an hour later." for t in texts)
        final, new_time = shift(at, 60), "{new_time}"
        change = Change((("add_event", d.take("activities"), day, at),), "Oh, someone may have booked something in my calendar meanwhile.", {"new_time": at})
    slots = (
        text_slot("event", title, "event", ("which event", "what event", "which one", "which appointment"), " my {}", spoken=title.lower(), vague=" something in my calendar"),
        date_slot(day, alt=alt_day, clause=" to {}"),
        time_slot(at, alt=alt_at, fact="My usual appointment time is {}, by the way.", recall=" at my usual time"),
    )
    return Task(
        "household", texts, slots, d.world(events=[target]),
        (Call("list_events", {}), Call("move_event", {"event_id": "{event_id}", "date": "{date}", "time": new_time})),
        (event(id=target["id"], date=day, time=final),),
        ask="event", changing="date", memory="time", change=change,
        derived={"event_id": Lookup(("event",), {(title,): target["id"]}), "new_time": Lookup(("time",), {(at,): final})},
    )


def pay_bill(d: Draw, changed: bool) -> Task:
    """Pay one of two bills from the inbox; changed: a corrected bill arrives."""
    (kind, payee), (other_kind, other_payee) = d.take("utilities", 2)
    amount, other_amount, corrected = d.take("bills", 3)
    category, old_category = d.take("bill_categories", 2)
    number, old_number = (f"CN-{n}" for n in d.rng.sample(range(10000, 99999), 2))
    bills = [{"from": p, "text": f"Your {k} bill for May is {spoken_amount(a)}. Please quote your customer number with the payment."} for k, p, a in ((kind, payee, amount), (other_kind, other_payee, other_amount))]
    final, change = amount, None
    if changed:
        final = corrected
        change = Change((("receive", payee, f"Correction: your {kind} bill for May is {spoken_amount(corrected)}, not {spoken_amount(amount)}. Sorry!"),), f"I think {payee} just sent me something too.", {"amount": amount})
    slots = (
        text_slot("bill", kind, "bill", ("which bill", "what bill", "which utility", "which one")),
        text_slot("category", category, "budget", ("which budget", "budget category", "budget", "category"), " from my {} budget", alt=old_category),
        text_slot("account", number, "customer number", ("customer number", "account number", "reference"), ", customer number {}", alt=old_number, fact=f"My {kind} customer number is {{}}.", recall=", with my customer number"),
    )
    return Task(
        "budgets", ("Please pay my{bill} bill{category}{account}.", "Can you settle my{bill} bill{category}{account}?"), slots,
        d.world(inbox=bills),
        (Call("read_messages", {}), Call("get_balance", {}), Call("pay", {"payee": "{payee}", "amount": "{amount}", "memo": "{account}", "category": "{category}"})),
        (payment(payee=payee, amount=final, memo=number, category=category),),
        ask="bill", changing="category", memory="account", change=change, limits={"pay": final},
        derived={"payee": Lookup(("bill",), {(kind,): payee}), "amount": Lookup(("bill",), {(kind,): final})},
    )


def book_repair(d: Draw, changed: bool) -> Task:
    """Book a repair visit and pay the deposit from the company's quote; changed: a new quote."""
    company, old = d.take("companies", 2)
    appliance = d.take("appliances")
    day, alt_day = d.take("days", 2)
    at = d.take("times")
    deposit, old_deposit, new_deposit = d.take("deposits", 3)
    quotes = [{"from": c, "text": f"Thanks for asking about your {appliance}: our call-out deposit is {spoken_amount(a)}, paid in advance."} for c, a in ((company, deposit), (old, old_deposit))]
    final, change = deposit, None
    if changed:
        final = new_deposit
        change = Change((("receive", company, f"Update: our call-out deposit is now {spoken_amount(new_deposit)}."),), f"Oh, {company} just messaged me again.", {"deposit": deposit})
    who = text_slot("company", company, "repair company", ("which company", "which repair company", "who should"), vague=" someone", alt=old, fact="My trusted repair company is {}.", recall=" my usual repair company")
    return Task(
        "repairs", (f"My {appliance} is broken. Please book{{company}} to fix it{{date}}{{time}} and pay their call-out deposit.", f"Could you get{{company}} to repair my {appliance}{{date}}{{time}}? Pay their call-out deposit too."),
        (who, date_slot(day, alt=alt_day), time_slot(at)),
        d.world(contacts=[d.contact(company, "repairs"), d.contact(old, "repairs")], inbox=quotes),
        (Call("find_contact", {"query": "{company}"}), Call("read_messages", {}), Call("add_event", {"title": f"{appliance.capitalize()} repair", "date": "{date}", "time": "{time}", "with": "{company}"}), Call("pay", {"payee": "{company}", "amount": "{deposit}", "memo": "call-out deposit", "category": "repairs"})),
        (event(title=appliance, date=day, time=at, with_=company), payment(payee=company, amount=final)),
        ask="time", changing="date", memory="company", change=change,
        derived={"deposit": Lookup(("company",), {(company,): final, (old,): old_deposit})},
    )


def relay_event_time(d: Draw, changed: bool) -> Task:
    """Tell a contact when an event is; changed: the organiser moves it."""
    person, old_person = d.take("people", 2)
    title, alt_title = d.take("activities", 2)
    day, alt_day, moved_day = d.take("days", 3)
    at, alt_at, moved_at = d.take("times", 3)
    target, other = d.event(title, day, at), d.event(alt_title, alt_day, alt_at)
    final, change = (day, at), None
    if changed:
        final = (moved_day, moved_at)
        change = Change((("move_event", target["id"], moved_day, moved_at),), f"Oh, and I think the {title.lower()} organiser changed something.", {"when_date": day, "when_time": at})
    slots = (
        text_slot("person", person, "person", ("who", "whom", "which person", "which contact"), vague=" someone", alt=old_person, fact="My carpool buddy is {}.", recall=" my carpool buddy"),
        replace(text_slot("event", title, "event", ("which event", "what event", "which appointment"), " my {}", spoken=title.lower(), vague=" one of my events"), alt=(alt_title, alt_title.lower())),
    )
    relations = d.take("relations", 2)
    return Task(
        "messaging", ("Please let{person} know when{event} is.", "Can you message{person} to say when{event} is?"), slots,
        d.world(contacts=[d.contact(person, relations[0]), d.contact(old_person, relations[1])], events=[target, other]),
        (Call("list_events", {}), Call("find_contact", {"query": "{person}"}), Call("send_message", {"to": "{person}", "text": "Hi! My {event} is on {when_date} at {when_time}."})),
        (message(person, time_forms(final[1]), date_forms(final[0])),),
        ask="person", changing="event", memory="person", change=change,
        derived={"when_date": Lookup(("event",), {(title,): final[0], (alt_title,): alt_day}), "when_time": Lookup(("event",), {(title,): final[1], (alt_title,): alt_at})},
    )


def order_gift(d: Draw, changed: bool) -> Task:
    """Order the nicest gift for an interest within a budget; changed: its price goes up."""
    interest, alt_interest = d.take("interests", 2)
    budget = d.take("gift_budgets")
    old_budget = budget - 10
    prices = (budget - 20, budget - 8, budget + 15)
    catalog = [{"name": n, "price": p, "category": "gifts", "tags": [i]} for i in (interest, alt_interest) for n, p in zip(GIFTS[i], prices)]
    best, change = GIFTS[interest][1], None
    if changed:
        best = GIFTS[interest][0]
        change = Change((("set_price", GIFTS[interest][1], budget + 5),), "Oh, I think the shop just changed some prices.", {"item": GIFTS[interest][1]})
    slots = (
        text_slot("interest", interest, "interest", ("what is she into", "what she likes", "interest", "hobby", "hobbies"), " — she loves {}", alt=alt_interest),
        amount_slot("budget", budget, "budget", ("budget", "how much", "price limit", "spend"), ", up to {}", alt=old_budget, fact="My budget for gifts is {} per present.", recall=", within my usual gift budget"),
    )
    table = {(interest, budget): best, (alt_interest, budget): GIFTS[alt_interest][1], (interest, old_budget): GIFTS[interest][0]}
    return Task(
        "gifts", ("Please order a birthday gift for my niece{interest}{budget}. Pick the nicest one that fits.", "My niece's birthday is coming up: order her a present{interest}{budget}, the nicest that fits."),
        slots, d.world(catalog=catalog),
        (Call("search_items", {"query": "{interest}"}), Call("place_order", {"item": "{item}", "quantity": 1})),
        (order(best),),
        ask="budget", changing="interest", memory="budget", change=change, limits={"order": budget},
        derived={"item": Lookup(("interest", "budget"), table)},
    )


def trip_notice(d: Draw, changed: bool) -> Task:
    """Put a train trip in the calendar and tell the host the arrival; changed: the train is late."""
    city = d.take("cities")
    host, old_host = d.take("people", 2)
    day, alt_day = d.take("days", 2)
    at = d.take("times")
    final, change, reads = at, None, ()
    if changed:
        final, reads = shift(at, 120), (Call("read_messages", {}),)
        delay = f"Your train to {city} on {spoken_date(day)} is delayed: the new arrival time is {spoken_time(final)}."
        change = Change((("receive", "Northline Rail", delay),), "Oh, I just got an email from the rail company.", {"arrival": at})
    slots = (
        replace(date_slot(day, alt=alt_day), words=("which date", "what date", "which day", "what day", "when do you travel", "when are you travelling")),
        time_slot(at, label="arrival time", words=("what time", "arrival time", "when do you arrive", "when will you arrive", "when does the train arrive"), clause=", arriving at {}"),
        text_slot("host", host, "host", ("who is your host", "host", "who", "staying with"), vague=" my host", alt=old_host, fact=f"When I visit {city}, my host is {{}}.", recall=" my host"),
    )
    relations = d.take("relations", 2)
    return Task(
        "travel", (f"I'm taking the train to {city}{{date}}{{time}}. Please put it in my calendar and let{{host}} know when I arrive.", f"Train to {city}{{date}}{{time}}! Add it to my calendar and tell{{host}} when I get in."),
        slots, d.world(contacts=[d.contact(host, relations[0]), d.contact(old_host, relations[1])]),
        (Call("find_contact", {"query": "{host}"}), *reads, Call("add_event", {"title": f"Train to {city}", "date": "{date}", "time": "{arrival}"}), Call("send_message", {"to": "{host}", "text": f"I arrive in {city} on {{date}} at {{arrival}}."})),
        (event(title=city, date=day, time=final), message(host, time_forms(final))),
        ask="host", changing="date", memory="host", change=change,
        derived={"arrival": Lookup(("time",), {(at,): final})},
    )


TEMPLATES = (book_checkup, reschedule_event, pay_bill, book_repair, relay_event_time, order_gift, trip_notice)
