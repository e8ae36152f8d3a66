"""The ``train`` split: seven task kinds, one per domain, and entity pools of its own.

It shares nothing with ``heldout_tasks.py`` but the tools and the shapes of noise: its dates are
in March, its times on the half hour, and its names, items, payees and amounts are its own.
"""

from dataclasses import replace

from molt.bench.living.phrases import date_forms, shift, spoken_amount, spoken_date, spoken_time, time_forms
from molt.bench.living.task import Call, Change, Draw, Lookup, Task, amount_slot, cancelled, count_slot, date_slot, event, message, order, payment, text_slot

SETTING = {
    "today": "2025-03-03",
    "balance": 1850.0,
    "budgets": {"dining": 240.0, "eating out": 180.0, "entertainment": 150.0, "presents": 200.0, "maintenance": 300.0, "household": 220.0},
    "hello": "Did you see the match last night?",
}
PRODUCTS = {
    "dish soap": ("Lemon Dish Soap", "Eco Dish Soap", "Ultra Dish Soap"),
    "paper towels": ("Value Paper Towels", "Soft Paper Towels", "Bamboo Paper Towels"),
    "coffee beans": ("House Coffee Beans", "Single Origin Coffee Beans", "Dark Roast Coffee Beans"),
    "laundry pods": ("Fresh Laundry Pods", "Sensitive Laundry Pods", "Sport Laundry Pods"),
    "olive oil": ("Everyday Olive Oil", "Cretan Olive Oil", "Organic Olive Oil"),
    "trash bags": ("Basic Trash Bags", "Heavy Duty Trash Bags", "Compostable Trash Bags"),
}
POOLS = {
    "people": ["Ines Carvalho", "Bogdan Petrov", "Aiyana Redcloud", "Henrik Madsen", "Lotte Vermeulen", "Matteo Bianchi", "Olusegun Adeyemi", "Saoirse Kelly", "Wen Zhao", "Zofia Nowak", "Arjun Iyer", "Camille Roux"],
    "relations": ["aunt", "teammate", "roommate", "classmate", "uncle", "flatmate"],
    "therapists": ["Jana Král", "Tobias Brandt", "Eleni Pappas", "Ruairi Walsh", "Noor Haddad"],
    "drivers": ["Milan Horvat", "Ayodele Bakare", "Sven Ekholm", "Paolo Ricci", "Hana Mori"],
    "companies": ["Ridgeway Gutters", "Clearpane Windows", "Summit Garage Doors", "Oakhurst Locksmiths", "Tidewell Drainage"],
    "jobs": ["gutter cleaning", "window repair", "garage door service", "lock change", "drain unblocking"],
    "activities": ["Board game night", "Salsa class", "Climbing session", "Pub quiz", "Film club", "Community garden day", "Running club", "Wine tasting", "Karaoke night", "Sketching group"],
    "dishes": ["lemon cake", "hummus", "spring rolls", "potato salad", "brownies", "guacamole"],
    "products": list(PRODUCTS),
    "limits": [4.5, 6.5, 8.5, 12.5],
    "quantities": [2, 3, 4, 5, 6],
    "totals": [98.4, 122.4, 87.6, 146.4],
    "heads": [3, 4],
    "dining_categories": ["dining", "eating out", "entertainment"],
    "restaurants": ["Trattoria Lupa", "Casa Ximena", "The Copper Pot", "Noodle Bar Hachi", "Le Petit Zinc"],
    "gift_amounts": [20.0, 30.0, 50.0, 70.0, 80.0],
    "occasions": ["graduation", "new job", "housewarming", "engagement", "retirement"],
    "reasons": ["a work trip", "a family visit", "a sprained ankle", "a school play", "a job interview"],
    "access": [("use the side gate", "side gate"), ("ring the top bell", "top bell"), ("park in the back lane", "back lane"), ("call me on arrival", "call me")],
    "cities": ["Oslo", "Dublin", "Vienna", "Seville", "Tallinn", "Zagreb"],
    "flight_times": ["11:30", "12:30", "13:30", "14:30", "15:30", "16:30", "17:30"],
    "lead_hours": [2, 3],
    "mornings": ["08:30", "09:30", "10:30", "11:30"],
    "afternoons": ["13:30", "14:30", "15:30", "16:30"],
    "days": [f"2025-03-{d:02d}" for d in range(4, 29)],
    "times": [f"{h:02d}:30" for h in range(8, 18)],
    "chores": ["Water the balcony plants", "Defrost the freezer", "Take the bike in for a service", "Buy stamps", "Sort the recycling", "Descale the kettle"],
}


SIDE_TEXTS = ("Could you add '{title}' to my calendar for {date} at {time}? {fact}", "Please put '{title}' in my calendar on {date} at {time}. {fact}")
"""The memory variants' earlier sessions: a calendar chore, then the fact said in passing."""


def cancel_and_notify(d: Draw, changed: bool) -> Task:
    """Cancel a physio session and tell the physio why; changed: the clinic moves it first."""
    therapist, old = d.take("therapists", 2)
    day, other_day, moved_day = d.take("days", 3)
    at, other_at = d.take("times", 2)
    reason, old_reason = d.take("reasons", 2)
    session = d.event("Physio session", day, at, therapist)
    events, final, change = [session, d.event("Physio session", other_day, other_at, therapist)], day, None
    if changed:
        events, final = [session], moved_day
        change = Change((("move_event", session["id"], moved_day, at),), "Oh, and the clinic just texted that they moved that session.", {"session_date": day})
    slots = (
        replace(date_slot(day), words=("which session", "which date", "what date", "which day", "when")),
        text_slot("reason", reason, "reason", ("what reason", "reason", "why"), " — it's because of {}", alt=old_reason),
        text_slot("therapist", therapist, "physio", ("physio's name", "which physio", "who"), vague=" my physio", alt=old, fact="My physio is {} now.", recall=" my physio"),
    )
    return Task(
        "health", ("Please cancel my physio session{date} and let{therapist} know{reason}.", "I can't make my physio session{date}: cancel it and tell{therapist}{reason}."),
        slots, d.world(contacts=[d.contact(therapist, "clinic"), d.contact(old, "clinic")], events=events),
        (Call("list_events", {}), Call("cancel_event", {"event_id": "{event_id}"}), Call("send_message", {"to": "{therapist}", "text": "Sorry, I have to cancel my physio session on {session_date} because of {reason}."})),
        (cancelled(session["id"]), message(therapist, (reason.split(" ", 1)[1],), date_forms(final))),
        ask="date", changing="reason", memory="therapist", change=change,
        derived={"event_id": Lookup(("date",), {(day,): session["id"]}), "session_date": Lookup(("date",), {(day,): final})},
    )


def restock_item(d: Draw, changed: bool) -> Task:
    """Order the cheapest item of a product under a price limit; changed: its price goes up."""
    product, alt_product = d.take("products", 2)
    quantity, old_quantity = d.take("quantities", 2)
    limit = d.take("limits")
    prices = (limit - 2, limit - 1, limit + 1.5)
    catalog = [{"name": n, "price": p, "category": "household", "tags": [k]} for k in (product, alt_product) for n, p in zip(PRODUCTS[k], prices)]
    cheapest, change = PRODUCTS[product][0], None
    if changed:
        cheapest = PRODUCTS[product][1]
        change = Change((("set_price", PRODUCTS[product][0], limit + 0.5),), "Oh, I think the shop just changed some prices.", {"item": PRODUCTS[product][0]})
    slots = (
        text_slot("product", product, "product", ("which product", "what should i order", "what do you need", "which item"), " the {}", vague=" something", alt=alt_product),
        count_slot("quantity", quantity, "quantity", ("how many", "quantity"), " — {} of them", alt=old_quantity, fact="My usual order size is {}.", recall=" — the usual amount"),
        amount_slot("limit", limit, "price limit", ("price limit", "how much", "maximum", "max price", "spend"), ", nothing over {} each"),
    )
    return Task(
        "household", ("Please restock{product}{quantity}{limit}. The cheapest one is fine.", "We're out: reorder{product}{quantity}{limit}, whichever is cheapest."),
        slots, d.world(catalog=catalog),
        (Call("search_items", {"query": "{product}"}), Call("place_order", {"item": "{item}", "quantity": "{quantity}"})),
        (order(cheapest, quantity),),
        ask="limit", changing="product", memory="quantity", change=change, limits={"order": limit},
        derived={"item": Lookup(("product", "limit"), {(product, limit): cheapest, (alt_product, limit): PRODUCTS[alt_product][0]})},
    )


def split_expense(d: Draw, changed: bool) -> Task:
    """Pay a friend back a share of a dinner; changed: the friend corrects the total."""
    friend, place = d.take("people"), d.take("restaurants")
    total, new_total = d.take("totals", 2)
    heads, old_heads = d.take("heads", 2)
    category, old_category = d.take("dining_categories", 2)
    share = round(total / heads, 2)
    reads, change = (), None
    if changed:
        share, reads = round(new_total / heads, 2), (Call("read_messages", {}),)
        change = Change((("receive", friend, f"Oops, the dinner total was actually {spoken_amount(new_total)}. Sorry!"),), f"{friend} just texted me something about the bill.", {"share": round(total / heads, 2)})
    slots = (
        text_slot("friend", friend, "friend", ("which friend", "who paid", "who"), "{}", vague="A friend"),
        amount_slot("total", total, "total", ("total", "how much", "what did it cost"), ", {} in total"),
        count_slot("heads", heads, "number of people", ("how many people", "how many of you", "split between"), ", split {} ways", alt=old_heads),
        text_slot("category", category, "budget", ("which budget", "budget", "category"), " from my {} budget", alt=old_category, fact="My budget for dinners is the {} budget.", recall=" from the usual budget"),
    )
    table = {(total, heads): share, (total, old_heads): round(total / old_heads, 2)}
    return Task(
        "budgets", (f"{{friend}} paid for dinner at {place}{{total}}{{heads}}. Please pay them back my share{{category}}.", f"{{friend}} covered our dinner at {place}{{total}}{{heads}}. Send them my share{{category}}."),
        slots, d.world(contacts=[d.contact(friend, d.take("relations"))]),
        (Call("get_balance", {}), *reads, Call("pay", {"payee": "{friend}", "amount": "{share}", "memo": f"dinner at {place}", "category": "{category}"})),
        (payment(payee=friend, amount=share, category=category),),
        ask="total", changing="heads", memory="category", change=change, limits={"pay": share},
        derived={"share": Lookup(("total", "heads"), table)},
    )


def confirm_repair_slot(d: Draw, changed: bool) -> Task:
    """Accept one of the company's offered slots, with access notes; changed: the slot moves."""
    company, old = d.take("companies", 2)
    job = d.take("jobs")
    day, old_day = d.take("days", 2)
    (morning, old_morning), (afternoon, old_afternoon) = d.take("mornings", 2), d.take("afternoons", 2)
    phrase, keyword = d.take("access")
    offers = [{"from": c, "text": f"We can do your {job} on {spoken_date(x)} at {spoken_time(m)} (morning) or {spoken_time(a)} (afternoon). Reply to confirm."} for c, x, m, a in ((company, day, morning, afternoon), (old, old_day, old_morning, old_afternoon))]
    final, change = morning, None
    if changed:
        final = shift(morning, 60)
        change = Change((("receive", company, f"Update: our morning slot on {spoken_date(day)} is now at {spoken_time(final)}."),), f"Oh, {company} sent another message.", {"slot_time": morning})
    slots = (
        text_slot("company", company, "company", ("which company", "which repair company", "who sent"), "{}", vague="The repair company", alt=old, fact="My repair company is {}.", recall="My usual repair company"),
        text_slot("part", "morning", "slot", ("morning or afternoon", "which slot", "which time slot", "prefer"), " {} slot", vague=" best slot", alt="afternoon"),
        text_slot("access", keyword, "access", ("access", "get in", "entrance", "let them in"), " — tell them to {}", spoken=phrase),
    )
    times = {(company, "morning"): final, (company, "afternoon"): afternoon, (old, "morning"): old_morning}
    return Task(
        "repairs", (f"{{company}} sent me times for the {job}. Please put the{{part}} in my calendar and confirm it with them{{access}}.", f"{{company}} offered slots for the {job}: book the{{part}} in my calendar and confirm with them{{access}}."),
        slots, d.world(contacts=[d.contact(company, "repairs"), d.contact(old, "repairs")], inbox=offers),
        (Call("read_messages", {}), Call("add_event", {"title": job.capitalize(), "date": "{repair_date}", "time": "{slot_time}", "with": "{company}"}), Call("send_message", {"to": "{company}", "text": "Confirming the {part} slot on {repair_date} at {slot_time}. Note: {access}."})),
        (event(title=job, date=day, time=final, with_=company), message(company, (keyword,), time_forms(final))),
        ask="access", changing="part", memory="company", change=change,
        derived={"repair_date": Lookup(("company",), {(company,): day, (old,): old_day}), "slot_time": Lookup(("company", "part"), times)},
    )


def reply_to_invite(d: Draw, changed: bool) -> Task:
    """Accept one of two invites, say what you bring, add it to the calendar; changed: new time."""
    friend, old = d.take("people", 2)
    dish, old_dish = d.take("dishes", 2)
    title, old_title = d.take("activities", 2)
    day, old_day = d.take("days", 2)
    at, old_at = d.take("times", 2)
    invites = [{"from": f, "text": f"{t} at my place on {spoken_date(x)} at {spoken_time(y)}, are you in?"} for f, t, x, y in ((friend, title, day, at), (old, old_title, old_day, old_at))]
    final, change = at, None
    if changed:
        final = shift(at, 60)
        change = Change((("receive", friend, f"Small change: let's start at {spoken_time(final)} instead."),), f"I think {friend} sent another message.", {"invite_time": at})
    slots = (
        text_slot("friend", friend, "friend", ("whose invite", "which invite", "which friend", "who"), " from {}", alt=old, fact="My climbing partner is {}, by the way.", recall=" from my climbing partner"),
        text_slot("dish", dish, "dish", ("what will you bring", "what would you like to bring", "which dish", "bring"), ", tell them I'll bring {}", alt=old_dish),
    )
    relations = d.take("relations", 2)
    return Task(
        "messaging", ("Please accept the invite{friend}{dish}, and add it to my calendar.", "Say yes to the invite{friend}{dish}, and put it in my calendar."),
        slots, d.world(contacts=[d.contact(friend, relations[0]), d.contact(old, relations[1])], inbox=invites),
        (Call("read_messages", {}), Call("send_message", {"to": "{friend}", "text": "Yes, I'm in! I'll bring {dish}."}), Call("add_event", {"title": "{invite_title}", "date": "{invite_date}", "time": "{invite_time}", "with": "{friend}"})),
        (message(friend, (dish,)), event(title=title.lower(), date=day, time=final)),
        ask="friend", changing="dish", memory="friend", change=change,
        derived={"invite_title": Lookup(("friend",), {(friend,): title, (old,): old_title}), "invite_date": Lookup(("friend",), {(friend,): day, (old,): old_day}), "invite_time": Lookup(("friend",), {(friend,): final, (old,): old_at})},
    )


def gift_transfer(d: Draw, changed: bool) -> Task:
    """Send money as a gift; changed: a charge shrinks the presents budget, "send what's left"."""
    person, old_person = d.take("people", 2)
    amount, old_amount = d.take("gift_amounts", 2)
    occasion = d.take("occasions")
    texts = ("Please send{amount}{person}{occasion}.", "Could you transfer{amount}{person}{occasion}?")
    final, change = amount, None
    if changed:
        final = amount - 7.5
        texts = tuple(f"{t} If my presents budget can't cover it, send whatever is left in it." for t in texts)
        charge = d.setting["budgets"]["presents"] - final
        change = Change((("charge", "presents", charge),), "Oh, I think a pending charge just went through on my account.", {"send": amount})
    slots = (
        text_slot("person", person, "person", ("who", "whom", "which person"), " to {}", alt=old_person),
        amount_slot("amount", amount, "amount", ("how much", "amount"), " {}", vague=" some money", alt=old_amount, fact="For family occasions, my gift amount is {}.", recall=" the usual amount"),
        text_slot("occasion", occasion, "occasion", ("what occasion", "occasion", "what for", "what is it for"), " for their {}"),
    )
    return Task(
        "gifts", texts, slots, d.world(),
        (Call("get_balance", {}), Call("pay", {"payee": "{person}", "amount": "{send}", "memo": "{occasion}", "category": "presents"})),
        (payment(payee=person, amount=final, memo=occasion, category="presents"),),
        ask="occasion", changing="person", memory="amount", change=change, limits={"pay": final},
        derived={"send": Lookup(("amount",), {(amount,): final, (old_amount,): old_amount})},
    )


def airport_ride(d: Draw, changed: bool) -> Task:
    """A taxi pickup some hours before a flight, texted to the driver; changed: the flight moves."""
    city, other_city = d.take("cities", 2)
    driver, old_driver = d.take("drivers", 2)
    day, other_day = d.take("days", 2)
    flight, other_flight, moved = d.take("flight_times", 3)
    hours, old_hours = d.take("lead_hours", 2)
    target = d.event(f"Flight to {city}", day, flight)
    departs, change = flight, None
    if changed:
        departs = moved
        change = Change((("move_event", target["id"], day, moved),), "Oh, I think the airline changed my flight time.", {"pickup": shift(flight, -60 * hours)})
    slots = (
        text_slot("city", city, "destination", ("which flight", "destination", "where are you flying"), " to {}"),
        count_slot("hours", hours, "lead time", ("how early", "hours before", "how many hours", "lead time"), " {} before", vague=" before", alt=old_hours, unit=" hours"),
        text_slot("driver", driver, "driver", ("which driver", "driver's name", "who"), vague=" the driver", alt=old_driver, fact="My usual taxi driver is {}.", recall=" my usual driver"),
    )
    pickups = {(city, hours): shift(departs, -60 * hours), (city, old_hours): shift(departs, -60 * old_hours)}
    return Task(
        "travel", ("Please add a taxi pickup{hours} my flight{city} and text{driver} the pickup time.", "Set up a taxi pickup{hours} my flight{city}: put it in my calendar and text{driver} the time."),
        slots, d.world(contacts=[d.contact(driver, "taxi driver"), d.contact(old_driver, "taxi driver")], events=[target, d.event(f"Flight to {other_city}", other_day, other_flight)]),
        (Call("list_events", {}), Call("find_contact", {"query": "{driver}"}), Call("add_event", {"title": "Taxi pickup", "date": "{flight_date}", "time": "{pickup}"}), Call("send_message", {"to": "{driver}", "text": "Could you pick me up on {flight_date} at {pickup}?"})),
        (event(title="taxi", date=day, time=pickups[(city, hours)]), message(driver, time_forms(pickups[(city, hours)]))),
        ask="city", changing="hours", memory="driver", change=change,
        derived={"flight_date": Lookup(("city",), {(city,): day}), "pickup": Lookup(("city", "hours"), pickups)},
    )


TEMPLATES = (cancel_and_notify, restock_item, split_expense, confirm_repair_slot, reply_to_invite, gift_transfer, airport_ride)
