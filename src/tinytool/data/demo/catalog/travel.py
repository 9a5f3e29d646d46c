"""Travel: flights (search, book, status), hotels (search, book), cancellations and visa rules."""

from __future__ import annotations

import re
from datetime import date, timedelta
from random import Random

from tinytool.data.demo.catalog.base import (
    ToolError,
    ToolSpec,
    p_array,
    p_enum,
    p_int,
    p_num,
    p_str,
    phrases,
    say_date,
    say_list,
    say_usd,
)
from tinytool.data.demo.catalog.common import need_city, need_date, sample_city
from tinytool.data.demo.catalog.world import (
    AIRLINES,
    AMENITIES,
    NATIONALITIES,
    TODAY,
    VISA_FREE_PASSPORTS,
    VISA_FREE_ZONES,
    City,
    World,
    haversine_km,
)

CABIN_FACTOR = {"economy": 1.0, "premium_economy": 1.6, "business": 3.2, "first": 5.5}
_FLIGHT_ID = re.compile(r"^FL-([A-Z]{3})-([A-Z]{3})-(\d{2})(\d{2})-(\d)$")
_FLIGHT_NO = re.compile(r"^[A-Z]{2}\d{2,4}$")
AMENITY_WORDS = {"wifi": ("wifi", "free wifi"), "pool": ("a pool", "a swimming pool"), "gym": ("a gym", "a fitness center"),
                 "parking": ("parking", "free parking"), "breakfast": ("breakfast", "breakfast included"), "spa": ("a spa",)}


def flights_on(w: World, o: City, d: City, day: date) -> list[dict]:
    """The (deterministic) economy flights of a route on a day."""
    r = w.rng("flights", o.airport, d.airport, day.isoformat())
    km = haversine_km(o.lat, o.lon, d.lat, d.lon)
    out = []
    for k in range(1, r.randint(3, 5) + 1):
        code, airline = r.choice(AIRLINES)
        stops = 0 if km < 1500 else r.choice((0, 1, 1, 2))
        minutes = int(km / 800 * 60 + 40 + stops * 95)
        dep = r.randrange(6 * 60, 22 * 60, 5)
        out.append({
            "flight_id": f"FL-{o.airport}-{d.airport}-{day:%m%d}-{k}", "flight_number": f"{code}{r.randint(100, 2999)}",
            "airline": airline, "origin": o.airport, "destination": d.airport, "date": day.isoformat(),
            "departure": f"{dep // 60:02d}:{dep % 60:02d}", "duration_minutes": minutes, "stops": stops,
            "price": round((70 + km * 0.085) * (1 - 0.12 * stops) * r.uniform(0.8, 1.3), 2),
        })
    return out


def _flight_from_id(w: World, flight_id: str) -> dict:
    m = _FLIGHT_ID.match(flight_id)
    o, d = (w.city(m.group(1)), w.city(m.group(2))) if m else (None, None)
    if not m or o is None or d is None:
        raise ToolError(f"no flight with id '{flight_id}'")
    try:
        day = date(TODAY.year, int(m.group(3)), int(m.group(4)))
    except ValueError:
        raise ToolError(f"no flight with id '{flight_id}'") from None
    for f in flights_on(w, o, d, day):
        if f["flight_id"] == flight_id:
            return f
    raise ToolError(f"no flight with id '{flight_id}'")


def search_flights(w: World, origin: str, destination: str, date: str, cabin: str = "economy",
                   max_stops: int | None = None, passengers: int = 1) -> dict:
    o, d, day = need_city(w, origin), need_city(w, destination), need_date(date)
    if o == d:
        raise ToolError("origin and destination are the same")
    if day < TODAY:
        raise ToolError("cannot search flights in the past")
    if passengers < 1:
        raise ToolError("'passengers' must be at least 1")
    found = []
    for f in flights_on(w, o, d, day):
        if max_stops is not None and f["stops"] > max_stops:
            continue
        f = dict(f, cabin=cabin, price=round(f["price"] * CABIN_FACTOR[cabin] * passengers, 2))
        found.append(f)
    found.sort(key=lambda f: f["price"])
    return {"origin": o.airport, "destination": d.airport, "date": date, "passengers": passengers, "flights": found}


def book_flight(w: World, flight_id: str, passenger_name: str, seat_preference: str | None = None) -> dict:
    f = _flight_from_id(w, flight_id)
    code = w.next_id("BK", 6, (flight_id, passenger_name))
    w.state["bookings"][code] = {"type": "flight", "flight_id": flight_id, "status": "confirmed", "passenger": passenger_name}
    return {"status": "confirmed", "confirmation_code": code, "flight_id": flight_id, "flight_number": f["flight_number"],
            "passenger_name": passenger_name, "departure": f"{f['date']} {f['departure']}",
            "seat": seat_preference or "assigned at check-in"}


def get_flight_status(w: World, flight_number: str) -> dict:
    if not _FLIGHT_NO.match(flight_number):
        raise ToolError(f"'{flight_number}' is not a flight number like 'LH2041'")
    r = w.rng("status", flight_number, TODAY.isoformat())
    status = r.choices(("on time", "delayed", "boarding", "landed", "cancelled"), (45, 25, 10, 15, 5))[0]
    out = {"flight_number": flight_number, "status": status, "gate": f"{r.choice('ABCDE')}{r.randint(1, 40)}",
           "terminal": str(r.randint(1, 3))}
    if status == "delayed":
        out["delay_minutes"] = r.choice((15, 25, 40, 55, 90, 120))
    return out


def search_hotels(w: World, city: str, check_in: str, nights: int, max_price: float | None = None,
                  amenities: list | None = None) -> dict:
    c = need_city(w, city)
    need_date(check_in, "check_in")
    if nights < 1:
        raise ToolError("'nights' must be at least 1")
    want = set(amenities or ())
    unknown = want - set(AMENITIES)
    if unknown:
        raise ToolError(f"unknown amenities {sorted(unknown)}; choose from {list(AMENITIES)}")
    found = [dict(h, total_price=round(h["price_per_night"] * nights, 2)) for h in w.hotels[c.name]
             if (max_price is None or h["price_per_night"] <= max_price) and want <= set(h["amenities"])]
    found.sort(key=lambda h: h["price_per_night"])
    return {"city": c.name, "check_in": check_in, "nights": nights, "hotels": found}


def book_hotel(w: World, hotel_id: str, check_in: str, nights: int, guests: int = 1) -> dict:
    h = w.hotel_index.get(hotel_id)
    if h is None:
        raise ToolError(f"no hotel with id '{hotel_id}'")
    need_date(check_in, "check_in")
    if nights < 1 or guests < 1:
        raise ToolError("'nights' and 'guests' must be at least 1")
    code = w.next_id("BK", 6, (hotel_id, check_in, nights))
    w.state["bookings"][code] = {"type": "hotel", "hotel_id": hotel_id, "status": "confirmed"}
    return {"status": "confirmed", "confirmation_code": code, "hotel": h["name"], "check_in": check_in,
            "nights": nights, "guests": guests, "total_price": round(h["price_per_night"] * nights, 2)}


def cancel_booking(w: World, confirmation_code: str) -> dict:
    b = w.state["bookings"].get(confirmation_code)
    if b is None:
        raise ToolError(f"no booking with confirmation code '{confirmation_code}'")
    if b["status"] == "cancelled":
        raise ToolError(f"booking {confirmation_code} is already cancelled")
    b["status"] = "cancelled"
    return {"status": "cancelled", "confirmation_code": confirmation_code, "type": b["type"]}


def visa_requirements(w: World, nationality: str, destination_country: str) -> dict:
    countries = {c.country for c in w.cities}
    for v in (nationality, destination_country):
        if v not in countries and v not in NATIONALITIES:
            raise ToolError(f"unknown country '{v}'")
    if nationality == destination_country:
        return {"nationality": nationality, "destination": destination_country, "requirement": "no visa (own country)"}
    zone = VISA_FREE_ZONES[0]
    if (nationality in zone and destination_country in zone) or nationality in VISA_FREE_PASSPORTS:
        req, stay = "visa not required", 90
    else:
        r = w.rng("visa", nationality, destination_country)
        req, stay = r.choice((("e-visa required", 30), ("visa on arrival", 30), ("visa required", 0)))
    return {"nationality": nationality, "destination": destination_country, "requirement": req,
            "max_stay_days": stay}


def _place(r: Random, w: World) -> str:
    c = r.choice(w.cities)
    return c.name if r.random() < 0.6 else c.airport


def _fix_route(args: dict, r: Random, w: World) -> None:
    if "origin" in args and "destination" in args:
        while w.city(args["origin"]) == w.city(args["destination"]):
            args["destination"] = _place(r, w)


def _flight_id(r: Random, w: World) -> str:
    o, d = r.sample(w.cities, 2)
    day = TODAY + timedelta(days=r.randint(1, 40))
    return f"FL-{o.airport}-{d.airport}-{day:%m%d}-{r.randint(1, 3)}"


def _flight_number(r: Random, w: World) -> str:
    return f"{r.choice(AIRLINES)[0]}{r.randint(100, 2999)}"


def _trip_date(r: Random, w: World) -> str:
    return (TODAY + timedelta(days=r.randint(3, 60))).isoformat()


MAX_STOPS = {0: ("nonstop only", "direct flights only", "no layovers"), 1: ("at most one stop", "max 1 stop"),
             2: ("up to two stops", "no more than 2 stops")}

TOOLS = [
    ToolSpec(
        "search_flights", "travel", "Search flights between two cities or airports on a date, cheapest first.",
        (p_str("origin", "Departure city or IATA airport code.", _place, label="departure city"),
         p_str("destination", "Arrival city or IATA airport code.", _place, label="destination"),
         p_str("date", "Departure date, YYYY-MM-DD.", _trip_date, say=say_date, label="travel date"),
         p_enum("cabin", "Cabin class.", ("economy", "premium_economy", "business", "first"), default="economy",
                say=phrases({"economy": ("economy", "economy class"), "premium_economy": "premium economy",
                             "business": ("business class", "business"), "first": "first class"})),
         p_int("max_stops", "Maximum number of stops.", lambda r, w: r.randint(0, 2), required=False,
               say=phrases(MAX_STOPS)),
         p_int("passengers", "Number of passengers.", lambda r, w: r.randint(2, 5), default=1)),
        search_flights,
        templates=(
            "Find flights from {origin} to {destination} on {date}[ in {cabin}][, {max_stops}][ for {passengers} passengers].",
            "Are there any[ {cabin}] flights from {origin} to {destination} on {date}[ for {passengers} people]?",
            "I need to fly {origin} to {destination} on {date}[, {cabin}][, {max_stops}].",
            "Search flights[ from {origin}] to {destination}[ on {date}].",
            "Show me {origin}-{destination} flights for {date}[, {passengers} travelers][, {max_stops}].",
        ),
        dev_templates=("What's the cheapest way to get from {origin} to {destination} by air on {date}[ for {passengers} of us]?",),
        gist="search for flights", siblings=("book_flight", "get_flight_status", "search_hotels"), fix=_fix_route,
    ),
    ToolSpec(
        "book_flight", "travel", "Book a seat on a flight found by search_flights.",
        (p_str("flight_id", "Flight id from search_flights, e.g. 'FL-CDG-HND-0614-2'.", _flight_id, label="flight id"),
         p_str("passenger_name", "Full name of the passenger.", lambda r, w: r.choice(w.contacts)["name"],
               label="passenger's full name"),
         p_enum("seat_preference", "Preferred seat.", ("aisle", "window", "middle"), required=False,
                say=phrases({"aisle": ("an aisle seat", "aisle seat please"), "window": ("a window seat", "window seat please"),
                             "middle": "a middle seat"}))),
        book_flight,
        templates=(
            "Book flight {flight_id} for {passenger_name}[ with {seat_preference}].",
            "Reserve a seat on {flight_id} for {passenger_name}[, {seat_preference}].",
            "Please book {flight_id}[ under the name {passenger_name}].",
            "Get {passenger_name} on flight {flight_id}[ — {seat_preference}].",
        ),
        gist="book a flight", siblings=("search_flights", "book_hotel", "cancel_booking"),
    ),
    ToolSpec(
        "get_flight_status", "travel", "Get the live status (on time, delayed, gate) of a flight by its number.",
        (p_str("flight_number", "Airline flight number, e.g. 'LH2041'.", _flight_number, label="flight number"),),
        get_flight_status,
        templates=("What's the status of flight {flight_number}?", "Is {flight_number} on time?",
                   "Has flight {flight_number} landed yet?", "Check the status of my flight[, {flight_number}].",
                   "Which gate does {flight_number} leave from?"),
        gist="check a flight's status", siblings=("search_flights", "book_flight"),
    ),
    ToolSpec(
        "search_hotels", "travel", "Search hotels in a city for given dates, cheapest first.",
        (p_str("city", "City name.", sample_city, label="city"),
         p_str("check_in", "Check-in date, YYYY-MM-DD.", _trip_date, say=say_date, label="check-in date"),
         p_int("nights", "Number of nights.", lambda r, w: r.randint(2, 7), label="number of nights"),
         p_num("max_price", "Maximum price per night in USD.", lambda r, w: float(r.choice((100, 150, 200, 250, 300))),
               say=say_usd, required=False),
         p_array("amenities", "Amenities the hotel must have.", {"type": "string", "enum": list(AMENITIES)},
                 lambda r, w: sorted(r.sample(AMENITIES, r.randint(1, 2))), required=False,
                 say=lambda v, r: say_list(v, r, phrases(AMENITY_WORDS)))),
        search_hotels,
        templates=(
            "Find hotels in {city} from {check_in} for {nights} nights[ under {max_price} a night][ with {amenities}].",
            "I need a place to stay in {city}: checking in {check_in}, {nights} nights[, max {max_price} per night].",
            "Search for hotels in {city}[ with {amenities}] for {nights} nights starting {check_in}.",
            "Any hotels available[ in {city}] from {check_in} for {nights} nights?",
        ),
        gist="search for hotels", siblings=("book_hotel", "search_flights"),
    ),
    ToolSpec(
        "book_hotel", "travel", "Book a room at a hotel found by search_hotels.",
        (p_str("hotel_id", "Hotel id from search_hotels, e.g. 'HTL-CDG-2'.",
               lambda r, w: r.choice(sorted(w.hotel_index)), label="hotel id"),
         p_str("check_in", "Check-in date, YYYY-MM-DD.", _trip_date, say=say_date, label="check-in date"),
         p_int("nights", "Number of nights.", lambda r, w: r.randint(2, 7), label="number of nights"),
         p_int("guests", "Number of guests.", lambda r, w: r.randint(2, 4), default=1)),
        book_hotel,
        templates=(
            "Book hotel {hotel_id} from {check_in} for {nights} nights[ for {guests} guests].",
            "Reserve {hotel_id}, check-in {check_in}, {nights} nights[, {guests} people].",
            "Please book {hotel_id} for {nights} nights[ starting {check_in}].",
        ),
        gist="book a hotel room", siblings=("search_hotels", "book_flight", "cancel_booking"),
    ),
    ToolSpec(
        "cancel_booking", "travel", "Cancel a flight or hotel booking by its confirmation code.",
        (p_str("confirmation_code", "Booking confirmation code, e.g. 'BK123456'.",
               lambda r, w: r.choice(sorted(w.state["bookings"])), label="confirmation code"),),
        cancel_booking,
        templates=("Cancel my booking {confirmation_code}.", "Please cancel reservation {confirmation_code}.",
                   "I need to cancel a booking[ — the code is {confirmation_code}].",
                   "Call off reservation {confirmation_code}, plans changed."),
        gist="cancel a travel booking", siblings=("book_flight", "book_hotel", "delete_event"),
    ),
    ToolSpec(
        "travel.visa_requirements", "travel", "Look up whether a passport holder needs a visa to visit a country.",
        (p_str("nationality", "Passport country, e.g. 'Germany'.", lambda r, w: r.choice(NATIONALITIES), label="nationality"),
         p_str("destination_country", "Country to visit.", lambda r, w: r.choice(w.cities).country,
               label="destination country")),
        visa_requirements,
        templates=(
            "Do {nationality} citizens need a visa for {destination_country}?",
            "What are the visa requirements for a {nationality} passport holder visiting {destination_country}?",
            "Visa rules for {destination_country}[ if I hold a {nationality} passport]?",
        ),
        gist="check visa requirements", siblings=("search_flights",), held_out=True,
    ),
]
