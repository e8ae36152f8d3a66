"""The domains of the outside-style routing corpus: what people ask about, with invented
functions of their own.

A domain is one area of life or work (rides, parcels, insurance…) and everything the corpus
needs to phrase requests in it for every label: the functions a client in that domain would
offer (OpenAI tool schemas with requests that ask for them, in English and in the split's other
languages, short forms, a result), knowledge questions that offer no action, a conversation to
recall a detail from, the things and fields a dashboard or a function would be about, and a
programming task. Each domain belongs to one split: no held-out domain, function name or
vocabulary value occurs in a train domain. None of the functions is one of the agent family's,
and the areas of that family's held-out functions (rides, parcels, banking, smart home,
fitness, library loans, parking, air quality) are held-out domains here, so training the router
on this corpus's train split does not teach it what the family holds out.
"""

from dataclasses import dataclass, field
from typing import Literal

from molt.families.agent_functions import enum, string

CorpusSplit = Literal["train", "heldout"]


def number(description: str) -> dict:
    return {"type": "number", "description": description}


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    params: dict[str, dict]
    """JSON Schema properties; a request template's ``{slot}`` named like a parameter fills it."""
    asks: tuple[str, ...]
    """English requests for this function."""
    native: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Requests in other languages (the domain's split's languages)."""
    short: tuple[str, ...] = ()
    """One to three words that still ask for it."""
    result: str = '{"status": "ok"}'
    """The tool result's JSON, with slots."""

    @property
    def schema(self) -> dict:
        parameters = {"type": "object", "properties": self.params, "required": list(self.params)[:1]}
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": parameters}}


@dataclass(frozen=True)
class Domain:
    name: str
    split: CorpusSplit
    thing: str
    """What a record is, singular ("ride")."""
    things: str
    fields: tuple[str, ...]
    """A record's attributes: dashboard columns, form fields, dict keys in a coding task."""
    values: dict[str, tuple[str, ...]]
    """Slot vocabulary."""
    tools: tuple[Tool, ...]
    questions: tuple[str, ...]
    """Knowledge questions about the domain that ask for no action (chat)."""
    recall: tuple[tuple[str, str, str], ...]
    """(user asks, assistant answers with details, user asks about one of them later)."""
    task: str
    """A programming task about the domain's records (for the coding kinds)."""


ALL = (
    # train
    Domain(
        "pharmacy", "train", "prescription", "prescriptions", ("medicine", "dose", "refills left", "pharmacy", "next pickup"),
        {"medicine": ("amoxicillin", "lisinopril", "cetirizine"), "rx_number": ("RX-55120", "RX-70431"), "time": ("8am", "9pm", "noon"), "pharmacy": ("Greenleaf Pharmacy", "the Main Street pharmacy")},
        (
            Tool("refill_prescription", "Order a refill of a prescription at a pharmacy.", {"rx_number": string("Prescription number"), "pharmacy": string("Pharmacy for pickup")},
                 ("Refill my prescription {rx_number}.", "Please reorder {rx_number} for pickup at {pharmacy}.", "I'm running out of {medicine}, refill {rx_number}."),
                 {"es": ("Renueva mi receta {rx_number}.",), "fr": ("Renouvelle mon ordonnance {rx_number}.",)}, ("refill {rx_number}",), '{"ready": "tomorrow 10am"}'),
            Tool("set_medication_alarm", "Remind the user to take a medicine at a time every day.", {"medicine": string("Medicine"), "time": string("Time of day")},
                 ("Remind me to take {medicine} every day at {time}.", "Set a pill alarm for {medicine} at {time}.", "I keep forgetting my {medicine}, alert me at {time} daily."),
                 {"es": ("Recuérdame tomar {medicine} a las {time}.",), "fr": ("Rappelle-moi de prendre {medicine} à {time}.",)}, ("pill alarm",), '{"alarm_id": "A-12", "daily": true}'),
        ),
        ("Can I take ibuprofen on an empty stomach?", "Does grapefruit really interact with medicines?", "What is the difference between a cold and the flu?", "What's the difference between a generic and a brand-name drug?", "Why do antibiotics need to be finished?", "Is it okay to split pills in half?"),
        (("Do you have allergy medicine?", "We have cetirizine at $9 for 30 tablets and loratadine at $7; cetirizine can make some people drowsy.",
          "which one did you say makes you drowsy?"),
         ("When is the pharmacy open?", "Weekdays 8am to 8pm, Saturdays 9 to 5, and it's closed on Sundays.",
          "what time do they close on saturday?")),
        "given prescriptions with start dates, daily doses and pill counts, return the date each one runs out",
    ),
    Domain(
        "hotels", "train", "booking", "bookings", ("guest", "check-in", "check-out", "room type", "price per night"),
        {"hotel": ("Harbor View Inn", "the Alpine Lodge", "Casa Sol"), "nights": ("2", "3", "5"), "check_in": ("May 12", "next Friday", "the 3rd"), "booking_ref": ("HB-3310", "HB-8765")},
        (
            Tool("reserve_room", "Reserve a hotel room for a number of nights.", {"hotel": string("Hotel name"), "check_in": string("Arrival date"), "nights": number("Number of nights")},
                 ("Book a room at {hotel} from {check_in} for {nights} nights.", "Reserve {nights} nights at {hotel}, arriving {check_in}.", "Get me a double room in {hotel} on {check_in}."),
                 {"es": ("Reserva una habitación en {hotel} para {nights} noches.",), "fr": ("Réserve une chambre à {hotel} pour {nights} nuits.",)}, ("room at {hotel}",), '{"booking_ref": "{booking_ref}", "total": 540}'),
            Tool("request_late_checkout", "Ask the hotel for a late checkout on a booking.", {"booking_ref": string("Booking reference")},
                 ("Ask for a late checkout on {booking_ref}.", "Can I check out late? My booking is {booking_ref}.", "Request a 2pm checkout for {booking_ref}."),
                 {"es": ("Pide salida tardía para la reserva {booking_ref}.",), "fr": ("Demande un départ tardif pour {booking_ref}.",)}, ("late checkout",), '{"approved": true, "until": "14:00"}'),
        ),
        ("What's the difference between a hotel and a hostel?", "Is it normal to tip hotel housekeeping?", "Why do hotels ask for a credit card at check-in?", "Do hotels usually charge a tourist tax?", "Why are hotel rooms cheaper on Sundays?", "What does 'half board' mean?"),
        (("What rooms does the Harbor View Inn have?", "A standard room is $120 a night, a sea-view room $165, and breakfast is $14 extra per person.",
          "how much was breakfast per person?"),
         ("Is parking included?", "Parking is $25 a night at the hotel, but the public garage two streets away charges $12.",
          "how much was the garage nearby?")),
        "given bookings with check-in and check-out dates, find the maximum number of rooms occupied on any night",
    ),
    Domain(
        "shopping", "train", "order", "orders", ("item", "price", "discount", "quantity", "order date"),
        {"item": ("trail running shoes", "a wool scarf", "the blue kettle", "noise-cancelling earbuds"), "order_id": ("ORD-11873", "ORD-56002"), "size": ("M", "42", "L")},
        (
            Tool("add_to_cart", "Put a product in the shopping cart.", {"item": string("Product"), "size": string("Size, if any")},
                 ("Add {item} to my cart.", "Put {item} in size {size} in the basket.", "I'll take {item}, add it please."),
                 {"es": ("Añade {item} a mi carrito.",), "fr": ("Ajoute {item} à mon panier.",)}, ("add {item}",), '{"cart_items": 3, "subtotal": 84.5}'),
            Tool("start_return", "Start a return for an order.", {"order_id": string("Order number"), "reason": enum(["too small", "too big", "damaged", "changed my mind"], "Reason")},
                 ("I want to return order {order_id}, it's too small.", "Start a return for {order_id}.", "Send back {order_id}, it arrived damaged."),
                 {"es": ("Quiero devolver el pedido {order_id}.",), "fr": ("Je veux retourner la commande {order_id}.",)}, ("return {order_id}",), '{"label_url": "https://returns.example/4411"}'),
        ),
        ("Are outlet stores actually cheaper?", "Why do prices end in .99?", "Is it better to buy shoes in the afternoon?", "What does 'final sale' mean?", "How do I know if a shoe size runs small?", "Is it worth buying extended warranties?"),
        (("Any deals on kettles?", "The blue kettle is $39 with 20% off until Sunday, and the steel one is $55 but comes with a free mug.",
          "what was the discount on the blue kettle?"),
         ("Which earbuds do you recommend?", "The Pulse Mini has 8 hours of battery for $59; the Pulse Pro has 12 hours and noise cancelling for $129.",
          "how many hours did the mini last?")),
        "given orders with item prices, quantities and a discount percentage, compute each order's total and the top three customers by spend",
    ),
    Domain(
        "pets", "train", "appointment", "appointments", ("pet name", "species", "vet", "vaccine due", "weight"),
        {"pet": ("Biscuit", "Luna", "Mr. Whiskers"), "vet": ("Dr. Okafor", "Dr. Lindqvist"), "day": ("Thursday morning", "next Monday"), "food": ("salmon kibble", "senior dog food")},
        (
            Tool("book_vet_visit", "Book a veterinary appointment for a pet.", {"pet": string("Pet's name"), "vet": string("Veterinarian"), "day": string("When")},
                 ("Book {pet} in with {vet} on {day}.", "{pet} needs a checkup, get an appointment for {day}.", "Schedule a vet visit for {pet}."),
                 {"es": ("Pide cita en el veterinario para {pet}.",), "fr": ("Prends rendez-vous chez le vétérinaire pour {pet}.",)}, ("vet for {pet}",), '{"appointment": "Thu 09:30", "vet": "{vet}"}'),
            Tool("order_pet_food", "Order pet food for delivery.", {"food": string("Food product"), "bags": number("Number of bags")},
                 ("Order two bags of {food}.", "We're out of {food}, reorder it.", "Get {food} delivered this week."),
                 {"es": ("Pide dos sacos de {food}.",), "fr": ("Commande deux sacs de {food}.",)}, ("more {food}",), '{"order": "PF-221", "arrives": "Friday"}'),
        ),
        ("Why do cats knead blankets?", "How long do hamsters live?", "Do dogs see in colour?", "How often should a dog be walked?", "Can rabbits live alone?", "Is chocolate really poisonous for dogs?"),
        (("How much is the puppy vaccine package?", "The puppy package is $180 for three visits, includes a microchip, and the second pet gets 10% off.",
          "does it include the microchip?"),
         ("What did the vet say about Luna?", "Luna weighs 4.2 kg, her teeth look good, and her rabies booster is due in March.",
          "when was the booster due?")),
        "given vaccination records with dates and intervals in months, list the pets whose next vaccine is overdue today",
    ),
    Domain(
        "insurance", "train", "claim", "claims", ("policy", "claim type", "amount", "status", "adjuster"),
        {"policy": ("POL-88213", "HX-50917"), "incident": ("a cracked windshield", "water damage in the kitchen", "a stolen bike"), "date": ("last Tuesday", "March 3")},
        (
            Tool("file_claim", "File an insurance claim on a policy.", {"policy": string("Policy number"), "incident": string("What happened"), "date": string("When it happened")},
                 ("File a claim on {policy} for {incident}.", "I need to report {incident} from {date}.", "Open a claim: {incident}, policy {policy}."),
                 {"es": ("Abre un parte en la póliza {policy} por {incident}.",), "fr": ("Déclare un sinistre sur le contrat {policy} pour {incident}.",)}, ("new claim",), '{"claim": "CL-7720", "adjuster": "M. Rossi"}'),
            Tool("get_policy_coverage", "Look up what an insurance policy covers.", {"policy": string("Policy number")},
                 ("What does policy {policy} cover?", "Check the coverage on my policy {policy}.", "Am I covered for {incident} under {policy}?"),
                 {"es": ("¿Qué cubre mi póliza {policy}?",), "fr": ("Que couvre mon contrat {policy} ?",)}, ("coverage {policy}",), '{"covers": ["fire", "theft"], "deductible": 500}'),
        ),
        ("What is a deductible?", "How do insurers calculate risk?", "Does a claim always raise my premium?", "Why do insurance premiums go up every year?", "What's the difference between liability and comprehensive cover?", "Is travel insurance worth it?"),
        (("How would my premium change with a higher deductible?", "With a $500 deductible you pay $42 a month; with $1,000 it drops to $33, and bundling home cover saves another 8%.",
          "what was the monthly price with the 1000 deductible?"),
         ("What's the status of my claim?", "It's approved for $1,350, the payout goes out within 5 business days, and the adjuster is M. Rossi.",
          "how much was approved again?")),
        "given claims with amounts and a deductible per policy, compute the total payout per policy and flag claims under the deductible",
    ),
    Domain(
        "energy", "train", "meter reading", "meter readings", ("meter", "reading", "usage kwh", "tariff", "bill amount"),
        {"reading": ("48213", "10977"), "meter": ("electricity", "gas"), "tariff": ("green fixed", "night saver")},
        (
            Tool("submit_meter_reading", "Submit a gas or electricity meter reading.", {"meter": enum(["electricity", "gas"], "Meter type"), "reading": number("Meter value")},
                 ("Submit my {meter} meter reading: {reading}.", "The {meter} meter says {reading}, send it in.", "Enter {reading} as my latest {meter} reading."),
                 {"es": ("Envía mi lectura del contador: {reading}.", "El contador de {meter} marca {reading}, regístralo."), "fr": ("Transmets mon relevé de compteur : {reading}.",)},
                 ("reading {reading}",), '{"accepted": true, "next_bill": "June 2"}'),
            Tool("switch_tariff", "Move the user's energy contract to another tariff.", {"tariff": enum(["green fixed", "night saver"], "Tariff name")},
                 ("Switch me to the {tariff} tariff.", "Move my contract to {tariff}.", "I'd like to change to {tariff} from next month."),
                 {"es": ("Cámbiame a la tarifa {tariff}.",), "fr": ("Passe mon contrat à l'offre {tariff}.",)}, ("switch to {tariff}",), '{"effective": "July 1"}'),
        ),
        ("Why is electricity more expensive in the evening?", "Are LED bulbs really cheaper over time?", "What uses the most energy in a typical home?", "What is a kilowatt-hour?", "Do solar panels work on cloudy days?", "How does a heat pump heat a house?"),
        (("What tariffs are there?", "Green fixed is 31 cents per kWh for 12 months; night saver is 24 cents at night and 38 during the day.",
          "what was the day rate on night saver?"),
         ("Why is my bill higher?", "You used 412 kWh this month versus 290 last month, mostly between 6 and 9 pm, and the standing charge rose to 53 cents a day.",
          "how much did i use last month?")),
        "given hourly meter readings, compute daily usage and the three days with the highest consumption",
    ),
    Domain(
        "tickets", "train", "ticket", "tickets", ("event", "venue", "seat", "price", "date"),
        {"event": ("the Vanta concert", "the Saturday derby", "Hamlet at the Globe"), "seats": ("2", "4"), "section": ("balcony", "floor", "upper tier")},
        (
            Tool("buy_tickets", "Buy tickets for an event.", {"event": string("Event"), "seats": number("Number of seats"), "section": enum(["balcony", "floor", "upper tier"], "Section")},
                 ("Get me {seats} tickets for {event}.", "Buy {seats} {section} seats for {event}.", "I want to go to {event}, grab {seats} tickets."),
                 {"es": ("Cómprame {seats} entradas para {event}.",), "fr": ("Achète-moi {seats} billets pour {event}.",)}, ("tickets {event}",), '{"order": "TK-6610", "total": 148}'),
            Tool("transfer_ticket", "Send a ticket to another person.", {"event": string("Event"), "recipient_email": string("Email of the new holder")},
                 ("Transfer my ticket for {event} to ana@example.org.", "Send one of my {event} tickets to my brother at leo@example.org.", "Give my seat for {event} to jo@example.org."),
                 {"es": ("Pasa mi entrada de {event} a ana@example.org.",), "fr": ("Transfère mon billet pour {event} à ana@example.org.",)}, ("send ticket",), '{"transferred": true}'),
        ),
        ("Why are concert tickets so expensive now?", "What is the biggest stadium in Europe?", "How do ticket queues decide who goes first?", "What does 'general admission' mean?", "Who was Shakespeare's Hamlet based on?", "Is it legal to resell tickets?"),
        (("What seats are left for the Vanta concert?", "Floor standing is $89, balcony seats are $64, and the upper tier is $42 with a restricted view.",
          "which section had the restricted view?"),
         ("When do doors open?", "Doors open at 6:30 pm, the support act starts at 7:15 and Vanta at 8:30.",
          "what time does the support act start?")),
        "given seat requests with preferred sections and a seat map, assign seats greedily and report the requests that could not be seated",
    ),
    Domain(
        "hr", "train", "leave request", "leave requests", ("employee", "leave type", "start date", "end date", "days left"),
        {"start": ("August 4", "the 20th", "next Monday"), "days": ("3", "5", "10"), "leave_type": ("vacation", "sick", "parental")},
        (
            Tool("submit_leave_request", "Request days off work.", {"leave_type": enum(["vacation", "sick", "parental"], "Kind of leave"), "start": string("First day"), "days": number("Working days")},
                 ("Request {days} days of {leave_type} leave from {start}.", "I want to take {start} off, it's {leave_type}.", "Put in a {leave_type} request for {days} days starting {start}."),
                 {"es": ("Pide {days} días de vacaciones desde {start}.",), "fr": ("Pose {days} jours de congé à partir du {start}.",)}, ("leave {start}",), '{"request": "LV-301", "approver": "Dana"}'),
            Tool("get_leave_balance", "Return how many leave days the user has left this year.", {"leave_type": enum(["vacation", "sick", "parental"], "Kind of leave")},
                 ("How many {leave_type} days do I have left?", "What's my remaining vacation balance?", "Check my leave balance."),
                 {"es": ("¿Cuántos días de vacaciones me quedan?",), "fr": ("Combien de jours de congé me reste-t-il ?",)}, ("days left?",), '{"vacation": 11, "sick": 5}'),
        ),
        ("Is it normal to negotiate a job offer?", "What should I wear to an interview?", "How long should a CV be?", "What's the difference between a contractor and an employee?", "How many vacation days are typical in Europe?", "What does a probation period mean?"),
        (("What does the new benefits plan include?", "Dental is now covered at 80%, the gym stipend is $40 a month, and remote days went from 2 to 3 a week.",
          "how big was the gym stipend?"),
         ("How did the review go?", "Your rating was 'exceeds', the raise is 6% from April, and the next review is in October.",
          "when does the raise start?")),
        "given leave requests with start and end dates per employee, find overlapping requests within the same team",
    ),
    Domain(
        "car_rental", "train", "rental", "rentals", ("car", "pickup location", "return date", "daily rate", "mileage"),
        {"city": ("Faro airport", "Munich central", "Reykjavík downtown"), "car_class": ("compact", "suv", "van"), "rental_id": ("CR-2281", "CR-9034")},
        (
            Tool("rent_car", "Reserve a rental car at a location.", {"city": string("Pickup location"), "car_class": enum(["compact", "suv", "van"], "Car class"), "days": number("Rental days")},
                 ("Rent a {car_class} at {city} for a week.", "I need a car at {city} from Friday.", "Reserve a {car_class} rental in {city}."),
                 {"es": ("Alquila un {car_class} en {city} para una semana.",), "fr": ("Loue une {car_class} à {city} pour une semaine.",)}, ("{car_class} {city}",), '{"rental_id": "{rental_id}", "daily_rate": 47}'),
            Tool("add_rental_driver", "Add a second driver to a car rental.", {"rental_id": string("Rental reference"), "driver_name": string("Driver's full name")},
                 ("Add my wife as a driver on {rental_id}.", "Put a second driver on rental {rental_id}.", "Can my friend also drive the car from {rental_id}?"),
                 {"es": ("Añade un segundo conductor a {rental_id}.",), "fr": ("Ajoute un second conducteur à {rental_id}.",)}, ("extra driver",), '{"drivers": 2, "fee_per_day": 9}'),
        ),
        ("Do I need an international driving permit in Iceland?", "Which side of the road do they drive on in Japan?", "Are electric cars cheaper to run?", "Why do rental companies hold a deposit?", "What is a collision damage waiver?", "Is it cheaper to rent at the airport or in town?"),
        (("What cars are available in Faro?", "A compact is $31 a day, an SUV $58, and a full tank policy applies; the deposit is $300.",
          "how much was the deposit?"),
         ("Any extra fees?", "A second driver is $9 a day, a child seat $6 a day, and one-way returns cost $75.",
          "how much for a child seat?")),
        "given rentals with pickup and return times and a fleet size, check whether every reservation can be served",
    ),
    # held out: the domains of the agent family's held-out functions among them, so that split stays unseen
    Domain(
        "rides", "heldout", "ride", "rides", ("pickup", "dropoff", "fare", "driver rating", "wait time"),
        {"pickup": ("Union Square", "the convention center", "Pier 39", "Maple Grove Mall"), "dropoff": ("Terminal 2", "Oakridge Hospital", "Elm Street 40", "the stadium"),
         "vehicle": ("economy", "xl", "comfort"), "ride_id": ("R-2231", "R-8820", "R-4172")},
        (
            Tool("request_ride", "Request a car to take the user from a pickup point to a destination.",
                 {"pickup": string("Where the driver picks the rider up"), "dropoff": string("Destination"), "vehicle": enum(["economy", "xl", "comfort"], "Car size")},
                 ("Get me a ride from {pickup} to {dropoff}.", "I need a car to {dropoff}, pick me up at {pickup}.", "Book an {vehicle} ride to {dropoff}.",
                  "Can you send a driver to {pickup}? Going to {dropoff}."),
                 {"de": ("Bestell mir ein Auto von {pickup} nach {dropoff}.", "Ich brauche ein Taxi zum {dropoff}, Abholung am {pickup}."),
                  "pt": ("Pede-me um carro de {pickup} para {dropoff}.", "Preciso de um motorista para ir a {dropoff}.")},
                 ("ride to {dropoff}", "car please", "taxi now"), '{"ride_id": "{ride_id}", "eta_minutes": 6, "driver": "Ines"}'),
            Tool("cancel_ride", "Cancel a ride that was requested.", {"ride_id": string("Ride identifier")},
                 ("Cancel my ride {ride_id}.", "Call off the car I ordered, it's {ride_id}.", "I don't need the driver anymore, cancel {ride_id}."),
                 {"de": ("Storniere meine Fahrt {ride_id}.",), "pt": ("Cancela a minha viagem {ride_id}.",)}, ("cancel ride",), '{"cancelled": true, "fee": 0}'),
        ),
        ("Is it rude not to tip a ride-share driver?", "Why do ride prices go up when it rains?", "Are taxis cheaper than ride-share apps in general?",
         "What's the difference between a taxi and a ride-share?"),
        (("How much would a ride to the stadium cost?", "An economy ride to the stadium is about $18 right now, and there's a 10% promo code SPRING10 on your account.",
          "what was the promo code you mentioned?"),
         ("Which car types are there?", "You can pick economy (4 seats), comfort (newer cars) or xl (6 seats, about 1.5x the price).",
          "how many seats did you say the xl has?")),
        "given a list of rides with pickup and dropoff times, find the largest number of rides one driver can do without overlaps",
    ),
    Domain(
        "parcels", "heldout", "parcel", "parcels", ("tracking number", "carrier", "weight", "status", "delivery date"),
        {"tracking_number": ("PX-449120", "ZT-771023", "KL-300981"), "address": ("22 Birch Road", "Flat 3, 9 Canal Street", "117 Orchard Lane"),
         "weight_kg": ("2", "0.5", "12"), "carrier": ("swiftpost", "boxline")},
        (
            Tool("parcel_status", "Get the delivery status of a parcel by its tracking number.", {"tracking_number": string("Tracking number"), "carrier": enum(["swiftpost", "boxline"], "Carrier")},
                 ("Where is my parcel {tracking_number}?", "Track package {tracking_number} for me.", "Has {tracking_number} been delivered yet?", "Check the status of shipment {tracking_number} with {carrier}."),
                 {"de": ("Wo ist mein Paket {tracking_number}?",), "pt": ("Onde está a minha encomenda {tracking_number}?", "Segue o pacote {tracking_number}, por favor.")},
                 ("track {tracking_number}", "where's my package"), '{"status": "in transit", "eta": "Thursday"}'),
            Tool("schedule_pickup", "Schedule a courier to collect a parcel from an address.", {"address": string("Pickup address"), "weight_kg": number("Parcel weight in kg")},
                 ("Schedule a courier pickup at {address} for a {weight_kg} kg box.", "Can someone collect a parcel from {address} tomorrow?", "Arrange a pickup of my {weight_kg} kg package from {address}."),
                 {"de": ("Plane eine Paketabholung in {address}.",), "pt": ("Agenda uma recolha na {address}.",)}, ("courier pickup",), '{"pickup_window": "9-12", "reference": "PU-5521"}'),
        ),
        ("How do couriers decide the price of a parcel?", "Why do parcels sometimes get stuck in customs?", "Is it safe to ship a laptop by regular post?", "What does 'out for delivery' usually mean?"),
        (("Can you compare express and standard shipping?", "Express arrives in 1 day and costs $14.50; standard takes 3-5 days for $4.20, and orders over $50 ship standard for free.",
          "what was the threshold for free shipping?"),
         ("What sizes of boxes can I send?", "Small boxes go up to 2 kg, medium up to 10 kg and large up to 25 kg; anything heavier needs freight.",
          "and the limit for medium was what again?")),
        "given parcels with weights and a truck capacity, compute the minimum number of trucks needed if each truck takes parcels in order",
    ),
    Domain(
        "banking", "heldout", "transaction", "transactions", ("date", "amount", "merchant", "category", "balance"),
        {"amount": ("250", "40", "1,200"), "recipient": ("Carla Mendes", "my landlord", "Tom Becker"), "account": ("savings", "checking"), "card_last4": ("4421", "9080")},
        (
            Tool("send_payment", "Move money from the user's account to a recipient.", {"amount": number("Amount"), "recipient": string("Who receives it"), "account": enum(["savings", "checking"], "Source account")},
                 ("Send {amount} dollars to {recipient}.", "Transfer {amount} from my {account} account to {recipient}.", "Pay {recipient} {amount} please.", "Wire {amount} to {recipient} from {account}."),
                 {"de": ("Überweise {amount} Euro an {recipient}.", "Schick {amount} an {recipient} von meinem Konto."), "pt": ("Transfere {amount} euros para {recipient}.",)},
                 ("pay {recipient}",), '{"transfer_id": "TX-90812", "status": "sent"}'),
            Tool("freeze_card", "Temporarily block a payment card.", {"card_last4": string("Last four digits of the card")},
                 ("Freeze my card ending in {card_last4}.", "I lost my card {card_last4}, block it.", "Lock the card that ends with {card_last4} right away."),
                 {"de": ("Sperr meine Karte mit der Endung {card_last4}.",), "pt": ("Bloqueia o meu cartão terminado em {card_last4}.",)}, ("freeze card", "block my card"), '{"frozen": true}'),
            Tool("get_account_balance", "Return the current balance of one of the user's accounts.", {"account": enum(["savings", "checking"], "Which account")},
                 ("What's my {account} balance?", "How much money is in my {account} account?", "Show the balance of {account}."),
                 {"de": ("Wie viel Geld ist auf meinem {account}-Konto?",), "pt": ("Qual é o saldo da minha conta {account}?",)}, ("balance?", "my balance"), '{"balance": 1843.22, "currency": "USD"}'),
        ),
        ("What is the difference between APR and APY?", "How does compound interest work?", "Is it better to pay off debt or save first?", "What does an overdraft fee mean?"),
        (("What savings accounts do you offer?", "The Flex Saver pays 3.1% with no minimum, and the Goal Saver pays 4.0% if you deposit at least $200 a month.",
          "what was the monthly minimum for the goal saver?"),
         ("Any fees on international transfers?", "Transfers in euros are free; other currencies cost 0.5% with a minimum of $2.",
          "wait, what's the minimum fee you said?")),
        "given a list of transactions with dates and amounts, return the running balance after each day and the day with the lowest balance",
    ),
    Domain(
        "smart_home", "heldout", "device", "devices", ("room", "device", "state", "power use", "last seen"),
        {"device": ("porch light", "garage door", "robot vacuum", "hallway lamp"), "room": ("attic", "nursery", "patio"), "level": ("30", "70", "100"), "scene": ("movie night", "wake up", "away")},
        (
            Tool("switch_device", "Turn a smart home device on or off.", {"device": string("Device name"), "state": enum(["on", "off"], "Desired state")},
                 ("Turn off the {device}.", "Switch the {device} on.", "Can you shut the {device} down for me?", "Power on the {device} please."),
                 {"de": ("Schalte das {device} aus.", "Mach die {device} an."), "pt": ("Desliga a {device}.", "Liga o {device}.")},
                 ("{device} off", "lights off"), '{"device": "{device}", "state": "off"}'),
            Tool("set_dimmer", "Set the brightness of the lights in a room, in percent.", {"room": string("Room"), "level": number("Brightness 0-100")},
                 ("Dim the {room} lights to {level} percent.", "Set the {room} to {level}% brightness.", "Make the {room} a bit darker, like {level} percent."),
                 {"de": ("Dimm das Licht im {room} auf {level} Prozent.",), "pt": ("Põe as luzes do {room} a {level} por cento.",)}, ("dim {room}",), '{"room": "{room}", "level": {level}}'),
            Tool("activate_scene", "Run a saved home automation scene.", {"scene": enum(["movie night", "wake up", "away"], "Scene name")},
                 ("Start the {scene} scene.", "Activate {scene} mode.", "Run my {scene} routine."), {"de": ("Starte die Szene {scene}.",)}, ("{scene} mode",), '{"scene": "{scene}", "devices": 7}'),
        ),
        ("Do smart plugs use electricity when they're off?", "What is the difference between Zigbee and Wi-Fi devices?", "Are robot vacuums worth it for pet hair?", "How long do LED bulbs usually last?"),
        (("Which bulbs work with my hub?", "Any Zigbee bulb works; the Lumo A19 is $12 and the Lumo Filament is $18, both dimmable.",
          "how much was the filament one?"),
         ("What did the energy report say?", "Your heating used 62% of last month's power, the fridge 11%, and standby devices about 4%.",
          "how much did standby use again?")),
        "given device events with timestamps and on/off states, compute how many minutes each device was on",
    ),
    Domain(
        "fitness", "heldout", "workout", "workouts", ("date", "activity", "duration", "calories", "heart rate"),
        {"activity": ("rowing", "spin class", "pilates"), "minutes": ("20", "45", "60"), "class_name": ("HIIT Express", "Morning Flow")},
        (
            Tool("record_exercise", "Record a workout in the user's training log.", {"activity": string("What the user did"), "minutes": number("Duration in minutes")},
                 ("Log {minutes} minutes of {activity}.", "Add a {activity} session, {minutes} min, to my log.", "I just did {minutes} minutes of {activity}, record it."),
                 {"de": ("Trag {minutes} Minuten {activity} ein.",), "pt": ("Regista {minutes} minutos de {activity}.",)}, ("log {activity}",), '{"logged": true, "week_total_min": 210}'),
            Tool("book_gym_class", "Book a spot in a gym class.", {"class_name": string("Class name"), "day": enum(["monday", "wednesday", "saturday"], "Day")},
                 ("Book me into {class_name} on wednesday.", "Save a spot for me in {class_name}.", "Sign me up for {class_name} this saturday."),
                 {"de": ("Meld mich für den Kurs {class_name} an.",), "pt": ("Inscreve-me na aula {class_name}.",)}, ("book {class_name}",), '{"spot": 12, "waitlist": false}'),
        ),
        ("Is it better to stretch before or after running?", "How much protein do I need after a workout?", "What's a good resting heart rate?", "Why do muscles get sore a day later?"),
        (("What memberships are there?", "Basic is $29 a month for gym access, Plus is $45 and includes classes, and students get 15% off either.",
          "what was the student discount?"),
         ("How was my week?", "You trained 4 times for 210 minutes in total; your longest session was 60 minutes of rowing on Tuesday.",
          "how long was the longest one?")),
        "given workouts with dates and durations, return the longest streak of consecutive days with at least one workout",
    ),
    Domain(
        "library", "heldout", "loan", "loans", ("title", "author", "due date", "branch", "renewals"),
        {"title": ("The Glass Orchard", "Rivers of Salt", "A Short History of Maps"), "branch": ("Northside branch", "the central library"), "card": ("LC-40021",)},
        (
            Tool("extend_book_loan", "Renew a borrowed library book.", {"title": string("Book title")},
                 ("Renew {title}.", "Can you extend my loan of {title}?", "I need more time with {title}, renew it."),
                 {"de": ("Verlängere die Ausleihe von {title}.",), "pt": ("Renova o empréstimo de {title}.",)}, ("renew {title}",), '{"new_due": "June 14"}'),
            Tool("place_hold", "Reserve a book to pick up at a library branch.", {"title": string("Book title"), "branch": string("Pickup branch")},
                 ("Put a hold on {title} at the {branch}.", "Reserve {title} for me at {branch}.", "I want {title} held at {branch}."),
                 {"de": ("Reservier {title} in der {branch}.",), "pt": ("Reserva {title} na {branch}.",)}, ("hold {title}",), '{"queue_position": 2}'),
        ),
        ("Who decides which books a library buys?", "What's the Dewey decimal system?", "Why do some books have large print editions?", "Is an e-book loan the same as a paper one?"),
        (("What are the late fees?", "Books are 25 cents a day, DVDs $1 a day, and fees stop at $10 per item.",
          "what was the cap per item?"),
         ("Which book club picks are coming up?", "In May it's Rivers of Salt, in June The Glass Orchard, and July is a members' vote.",
          "which one was june?")),
        "given loans with due dates and return dates, compute the late fee per member at 25 cents a day capped at 10 dollars per item",
    ),
    Domain(
        "parking", "heldout", "parking session", "parking sessions", ("zone", "plate", "start", "end", "cost"),
        {"zone": ("Zone 14", "Garage Nord", "Lot C"), "plate": ("KL-482-TZ", "B-MW 2209"), "hours": ("1", "2", "4")},
        (
            Tool("start_parking_session", "Start paying for parking in a zone for a vehicle.", {"zone": string("Parking zone"), "plate": string("License plate"), "hours": number("Hours")},
                 ("Start parking in {zone} for plate {plate}.", "Pay for {hours} hours of parking at {zone}.", "I just parked at {zone}, start the meter for {plate}."),
                 {"de": ("Starte das Parken in {zone} für {hours} Stunden.", "Bezahl den Parkplatz in {zone} für mein Auto {plate}."),
                  "pt": ("Começa o estacionamento na {zone} por {hours} horas.",)},
                 ("park {zone}", "start parking"), '{"session": "P-3381", "ends": "15:40"}'),
            Tool("extend_parking", "Add time to a running parking session.", {"hours": number("Extra hours")},
                 ("Extend my parking by {hours} hours.", "Add another hour to the meter.", "Give me {hours} more hours on the parking."),
                 {"de": ("Verlängere mein Parken um {hours} Stunden.",), "pt": ("Prolonga o estacionamento por mais {hours} horas.",)}, ("extend parking", "+1 hour parking"), '{"ends": "17:40"}'),
        ),
        ("Why is street parking cheaper on Sundays?", "What does a blue parking zone mean in Europe?", "Is it legal to park facing the wrong way?", "Why do cities remove parking spaces?"),
        (("What does parking cost near the museum?", "Zone 14 is $2.50 an hour with a 3-hour limit, and Garage Nord is $18 for the whole day.",
          "what was the limit in zone 14?"),
         ("Can I get a resident permit?", "Yes: $95 a year for the first car, $140 for a second, and you need a utility bill as proof of address.",
          "how much was the permit for the second car?")),
        "given parking sessions with start and end times per zone, compute the busiest hour of the day across all zones",
    ),
    Domain(
        "forecast", "heldout", "forecast", "forecasts", ("location", "temperature", "rain chance", "wind", "uv index"),
        {"location": ("Porto", "Graz", "Valparaíso", "Tromsø"), "days": ("3", "5", "7")},
        (
            Tool("lookup_forecast", "Get the weather forecast for a location for the next days.", {"location": string("Place"), "days": number("Days ahead")},
                 ("What's the forecast for {location} this weekend?", "Will it rain in {location} tomorrow?", "Give me the {days}-day forecast for {location}.", "Do I need an umbrella in {location} today?"),
                 {"de": ("Wie wird das Wetter morgen in {location}?", "Regnet es am Wochenende in {location}?"),
                  "pt": ("Como vai estar o tempo em {location} amanhã?", "Vai chover em {location} no fim de semana?")},
                 ("weather {location}", "rain tomorrow?"), '{"tomorrow": {"high": 19, "rain_chance": 0.6}}'),
            Tool("air_quality_index", "Return the current air quality index for a location.", {"location": string("Place")},
                 ("How's the air quality in {location} right now?", "Is the air in {location} safe for a run today?", "Check the pollution level in {location}."),
                 {"de": ("Wie ist die Luftqualität in {location}?",), "pt": ("Como está a qualidade do ar em {location}?",)}, ("aqi {location}",), '{"aqi": 42, "level": "good"}'),
        ),
        ("Why is the sky blue?", "How do meteorologists predict the weather?", "What causes thunder?", "Why is it colder on mountains?"),
        (("What's the weather looking like for my hike?", "Saturday is sunny and 21 degrees with light wind; Sunday has a 70% chance of storms after 2 pm.",
          "what was the storm chance on sunday?"),
         ("Should I go to the beach this week?", "Wednesday is best: 27 degrees and UV index 8; Thursday cools to 22 with strong wind.",
          "what uv index did you say for wednesday?")),
        "given daily forecasts with temperatures, find the longest run of days above a threshold and its average temperature",
    ),
    Domain(
        "groceries", "heldout", "grocery item", "grocery items", ("product", "aisle", "quantity", "unit price", "expiry"),
        {"product": ("oat milk", "sourdough bread", "free-range eggs", "basmati rice"), "slot": ("Tuesday 6-8pm", "tomorrow morning"), "list_name": ("weekly shop", "party")},
        (
            Tool("add_to_shopping_list", "Add a product to one of the user's shopping lists.", {"product": string("Product"), "list_name": string("Which list")},
                 ("Add {product} to the {list_name} list.", "Put {product} on my shopping list.", "Don't let me forget {product}, add it to {list_name}."),
                 {"de": ("Setz {product} auf meine Einkaufsliste.",), "pt": ("Adiciona {product} à lista de compras.",)}, ("+ {product}",), '{"items": 9}'),
            Tool("book_delivery_slot", "Reserve a grocery delivery time slot.", {"slot": string("Delivery slot")},
                 ("Book the {slot} delivery slot.", "Can I get my groceries delivered {slot}?", "Reserve delivery for {slot}."),
                 {"de": ("Reservier die Lieferung für {slot}.",), "pt": ("Reserva a entrega para {slot}.",)}, ("delivery {slot}",), '{"slot": "{slot}", "fee": 3.99}'),
        ),
        ("Why are organic eggs more expensive?", "How long does sourdough bread stay fresh?", "Is oat milk healthier than cow's milk?", "What's the difference between best-before and use-by?"),
        (("What's on offer this week?", "Oat milk is 2 for $5, basmati rice is 30% off, and eggs are $3.49 a dozen.",
          "how much off was the rice?"),
         ("What's in my basket?", "You have 14 items for $62.40; delivery is free above $60, so you just made it.",
          "what was the free delivery threshold?")),
        "given a shopping list with unit prices and quantities and a coupon list, compute the cheapest total after applying at most one coupon per product",
    ),
)
TRAIN_DOMAINS = tuple(d for d in ALL if d.split == "train")
HELDOUT_DOMAINS = tuple(d for d in ALL if d.split == "heldout")
DOMAINS = {d.name: d for d in ALL}
