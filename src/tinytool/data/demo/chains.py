"""Multi-step demo tasks: tool chains where a later call needs an earlier call's output.

Each chain is a small script over the seeded `World`: it phrases the user's main question ``q0``,
executes every ground-truth call for real (so the ``tool`` messages hold true observations), and
records ASTRA's decomposition of the task into sub-questions and sub-answers ``{(q_i, a_i)}`` with
their dependency sets ``d_i`` (ASTRA §2.2.1 Eq. 11-13). The sub-answers are values read
from the observations, so a trajectory that solves sub-task ``i`` surfaces ``a_i`` in its evidence,
which is what the ASTRA F1 reward counts (§3.2.2 Eq. 29-31). A sub-question with no tool behind it
(comparing two results) appears only as a leaf, as §2.2.2 allows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from random import Random
from typing import Any

from tinytool.data.demo.catalog import HELD_OUT, World, execute, observation
from tinytool.data.demo.catalog.banking import COMMON_CURRENCIES, say_currency
from tinytool.data.demo.catalog.base import fmt_number, say_date, say_quoted, say_time, say_usd
from tinytool.data.demo.catalog.calendar import NEW_TITLES
from tinytool.data.demo.catalog.common import sample_future_date, sample_time
from tinytool.data.demo.catalog.finance import say_symbol
from tinytool.data.demo.catalog.maps import CATEGORY_WORDS
from tinytool.data.demo.catalog.music import PLAYLIST_NAMES
from tinytool.data.demo.catalog.world import (
    ARTISTS,
    EMAIL_BODIES,
    EMAIL_SUBJECTS,
    FILE_KEYWORDS,
    INGREDIENT_QUERIES,
    LANDMARKS,
    PAYEES,
    SEARCH_TERMS,
    SMS_TEXTS,
)
from tinytool.data.demo.text import whole_as_int
from tinytool.schema import Message, ToolCall


class ChainError(Exception):
    """The sampled situation does not support this chain (e.g. a search came back empty); resample."""


@dataclass(slots=True)
class ChainRun:
    messages: list[Message]
    sub_questions: list[str]
    sub_answers: list[Any]
    dependencies: list[list[int]]


@dataclass(slots=True)
class ChainBuilder:
    """Records one trajectory while executing it: user turn, call turns with observations, answer."""

    r: Random
    w: World
    split: str
    messages: list[Message] = field(default_factory=list)
    sub_questions: list[str] = field(default_factory=list)
    sub_answers: list[Any] = field(default_factory=list)
    dependencies: list[list[int]] = field(default_factory=list)
    _ncalls: int = 0

    def ask(self, phrasings: Sequence[str], dev: Sequence[str] = ()) -> None:
        pool = list(phrasings) + (list(dev) if self.split == "dev" else [])
        self.messages.append(Message(role="user", content=self.r.choice(pool)))

    def peek(self, name: str, args: dict[str, Any]) -> Any:
        """Run a read-only call without recording it (to choose a situation before asking)."""
        out = execute(self.w.copy(), name, args)
        if isinstance(out, dict) and "error" in out:
            raise ChainError(out["error"])
        return out

    def calls(self, calls: Sequence[tuple[str, dict[str, Any]]]) -> list[Any]:
        """One assistant turn with these calls, then one tool message per call with its real result."""
        tcs = []
        for name, args in calls:
            self._ncalls += 1
            tcs.append(ToolCall(name=name, arguments=whole_as_int(dict(args)), id=f"call_{self._ncalls}"))
        self.messages.append(Message(role="assistant", content=None, tool_calls=tcs))
        results = []
        for tc in tcs:
            out = execute(self.w, tc.name, tc.arguments)
            if isinstance(out, dict) and "error" in out:
                raise ChainError(f"{tc.name}: {out['error']}")
            self.messages.append(Message(role="tool", content=observation(out), name=tc.name, tool_call_id=tc.id))
            results.append(out)
        return results

    def call(self, name: str, args: dict[str, Any]) -> Any:
        return self.calls([(name, args)])[0]

    def sub(self, question: str, answer: Any, deps: Sequence[int] = ()) -> int:
        self.sub_questions.append(question)
        self.sub_answers.append(answer)
        self.dependencies.append(list(deps))
        return len(self.sub_questions) - 1

    def final(self, text: str) -> None:
        self.messages.append(Message(role="assistant", content=text))


@dataclass(frozen=True, slots=True)
class Chain:
    name: str
    tools: tuple[str, ...]
    build: Callable[[ChainBuilder], None]

    @property
    def dev_only(self) -> bool:
        return bool(set(self.tools) & HELD_OUT)


def run_chain(chain: Chain, r: Random, world: World, split: str) -> ChainRun:
    """Build one task of ``chain`` on ``world`` (which it mutates: pass a fresh copy)."""
    b = ChainBuilder(r, world, split)
    chain.build(b)
    return ChainRun(b.messages, b.sub_questions, b.sub_answers, b.dependencies)


def _first_name(full: str) -> str:
    return full.split()[0]


def _contact(b: ChainBuilder) -> tuple[str, str]:
    """A contact's full name and how the user refers to them."""
    full = b.r.choice(b.w.contacts)["name"]
    return full, (_first_name(full) if b.r.random() < 0.6 else full)


def _only_match(found: dict) -> dict:
    if len(found["matches"]) != 1:
        raise ChainError("the contact lookup is ambiguous")
    return found["matches"][0]


# ---- the chains -----------------------------------------------------------------------------------


def contact_sms(b: ChainBuilder) -> None:
    full, ref = _contact(b)
    msg = b.r.choice(SMS_TEXTS)
    q = say_quoted(msg, b.r)
    b.ask((f"Text {ref} {q}.", f"Send {ref} an SMS saying {q}.", f"Can you text {ref} for me? Tell them {q}."),
          dev=(f"Let {ref} know by text message: {q}",))
    phone = _only_match(b.call("lookup_contact", {"name": ref}))["phone"]
    i = b.sub(f"What is {full}'s phone number?", phone)
    sent = b.call("send_sms", {"phone_number": phone, "message": msg})
    b.sub(f"What is the id of the text sent to {full}?", sent["message_id"], [i])
    b.final(f"Done — I texted {full} at {phone}: \"{msg}\" (message id {sent['message_id']}).")


def contact_email(b: ChainBuilder) -> None:
    full, ref = _contact(b)
    subject, body = b.r.choice(EMAIL_SUBJECTS), b.r.choice(EMAIL_BODIES)
    b.ask((f"Email {ref} with the subject {say_quoted(subject, b.r)} and the message {say_quoted(body, b.r)}",
           f"Send {ref} an email — subject: {subject}; body: {body}",
           f"Look up {ref}'s email address and send them {say_quoted(body, b.r)} with the subject {say_quoted(subject, b.r)}."))
    email = _only_match(b.call("lookup_contact", {"name": ref}))["email"]
    i = b.sub(f"What is {full}'s email address?", email)
    sent = b.call("send_email", {"to": [email], "subject": subject, "body": body})
    b.sub(f"What is the id of the email sent to {full}?", sent["message_id"], [i])
    b.final(f"I emailed {full} at {email} with the subject \"{subject}\" (message id {sent['message_id']}).")


def _two_cities(b: ChainBuilder, same_continent: bool = False):
    a = b.r.choice(b.w.cities)
    pool = [c for c in b.w.cities if c != a and (not same_continent or c.continent == a.continent)]
    if not pool:
        raise ChainError("no second city")
    return a, b.r.choice(pool)


def flight_booking(b: ChainBuilder) -> None:
    r = b.r
    o, d = _two_cities(b)
    origin, dest = (o.name, d.name) if r.random() < 0.6 else (o.airport, d.airport)
    date = sample_future_date(r, b.w, 40)
    passenger = r.choice(b.w.contacts)["name"]
    kind = r.choice(("cheapest", "cheapest nonstop", "earliest"))
    when = say_date(date, r)
    b.ask((f"Book the {kind} flight from {origin} to {dest} on {when} for {passenger}.",
           f"I need to fly from {origin} to {dest} on {when}. Find the {kind} option and book it for {passenger}.",
           f"Get {passenger} on the {kind} {origin}–{dest} flight on {when}."),
          dev=(f"Sort out a flight for {passenger}: {origin} to {dest}, {when}, whichever is the {kind}.",))
    args = {"origin": origin, "destination": dest, "date": date}
    if kind == "cheapest nonstop":
        args["max_stops"] = 0
    flights = b.call("search_flights", args)["flights"]
    if not flights:
        raise ChainError("no flights")
    pick = min(flights, key=lambda f: f["departure"]) if kind == "earliest" else flights[0]
    i = b.sub(f"Which is the {kind} flight from {origin} to {dest} on {date}?", pick["flight_number"])
    booked = b.call("book_flight", {"flight_id": pick["flight_id"], "passenger_name": passenger})
    b.sub(f"What is the confirmation code of {passenger}'s booking?", booked["confirmation_code"], [i])
    b.final(f"Booked {pick['airline']} flight {pick['flight_number']} ({origin} → {dest}, departing {pick['date']} at "
            f"{pick['departure']}) for {passenger}. Confirmation code: {booked['confirmation_code']}.")


def hotel_booking(b: ChainBuilder) -> None:
    r = b.r
    city = r.choice(b.w.cities).name
    check_in, nights = sample_future_date(r, b.w, 40), r.randint(2, 5)
    best = r.choice(("cheapest", "highest-rated"))
    guests = r.choice((1, 2, 2, 3))
    who = "" if guests == 1 else f" for {guests} guests"
    when = say_date(check_in, r)
    b.ask((f"Find the {best} hotel in {city} for {nights} nights from {when} and book it{who}.",
           f"Book me the {best} place to stay in {city}: check-in {when}, {nights} nights{who}."))
    hotels = b.call("search_hotels", {"city": city, "check_in": check_in, "nights": nights})["hotels"]
    if not hotels:
        raise ChainError("no hotels")
    pick = hotels[0] if best == "cheapest" else max(hotels, key=lambda h: (h["rating"], -h["price_per_night"]))
    i = b.sub(f"Which is the {best} hotel in {city}?", pick["name"])
    args = {"hotel_id": pick["hotel_id"], "check_in": check_in, "nights": nights}
    if guests != 1:
        args["guests"] = guests
    booked = b.call("book_hotel", args)
    b.sub("What is the booking's confirmation code?", booked["confirmation_code"], [i])
    b.final(f"Booked {pick['name']} in {city} from {check_in} for {nights} nights{who} — total "
            f"${fmt_number(booked['total_price'])}, confirmation code {booked['confirmation_code']}.")


def balance_convert(b: ChainBuilder) -> None:
    r = b.r
    acc = r.choice([a for a, x in sorted(b.w.state["accounts"].items()) if x["type"] != "credit"])
    cur = r.choice([c for c in COMMON_CURRENCIES if c != "USD"])
    cs = say_currency(cur, r)
    b.ask((f"How much is the balance of {acc} in {cs}?", f"Check what's in account {acc} and tell me what that is in {cs}.",
           f"What's my {acc} balance worth in {cs}?"))
    bal = b.call("get_account_balance", {"account_id": acc})["balance"]
    i = b.sub(f"What is the balance of {acc}?", bal)
    conv = b.call("convert_currency", {"amount": bal, "from_currency": "USD", "to_currency": cur})
    b.sub(f"What is that balance in {cur}?", conv["converted_amount"], [i])
    b.final(f"{acc} holds ${fmt_number(bal)}, which is {fmt_number(conv['converted_amount'])} {cur} at today's rate "
            f"({fmt_number(conv['rate'])}).")


def product_cart(b: ChainBuilder) -> None:
    r = b.r
    term = r.choice(SEARCH_TERMS)
    best, sort = r.choice((("cheapest", "price_asc"), ("best-rated", "rating")))
    qty = r.choice((1, 1, 2, 3))
    many = "one" if qty == 1 else str(qty)
    b.ask((f"Find the {best} {term} and add {many} to my cart.", f"Search for {term}, pick the {best} one and put {many} in my cart."))
    results = b.call("search_products", {"query": term, "sort_by": sort})["results"]
    if not results:
        raise ChainError("nothing found")
    pick = results[0]
    i = b.sub(f"Which is the {best} {term}?", pick["name"])
    args = {"product_id": pick["product_id"]} | ({"quantity": qty} if qty != 1 else {})
    added = b.call("add_to_cart", args)
    b.sub("What is the cart total now?", added["cart_total"], [i])
    b.final(f"Added {qty} × {pick['name']} ({pick['product_id']}, ${fmt_number(pick['price'])}) to your cart; "
            f"the cart total is now ${fmt_number(added['cart_total'])}.")


def free_slot_event(b: ChainBuilder) -> None:
    r = b.r
    date, dur, title = sample_future_date(r, b.w), r.choice((30, 45, 60, 90)), r.choice(NEW_TITLES)
    when = say_date(date, r)
    b.ask((f"Find the first free {dur}-minute slot on {when} and put {title} there.",
           f"Schedule {say_quoted(title, r)} on {when} in my first free {dur}-minute window."))
    slots = b.call("find_free_slots", {"date": date, "duration_minutes": dur})["free_slots"]
    if not slots:
        raise ChainError("no free slot")
    start = slots[0]["start"]
    i = b.sub(f"When does the first free {dur}-minute slot on {date} start?", start)
    made = b.call("create_event", {"title": title, "date": date, "start_time": start, "duration_minutes": dur})
    b.sub("What is the new event's id?", made["event_id"], [i])
    b.final(f"Your first free {dur}-minute slot on {date} starts at {start}; I booked \"{title}\" there "
            f"(event {made['event_id']}).")


def search_read_file(b: ChainBuilder) -> None:
    r = b.r
    kw = r.choice(FILE_KEYWORDS)
    if len(b.peek("search_files", {"query": kw})["matches"]) != 1:
        raise ChainError("keyword not unique")
    q = say_quoted(kw, r)
    b.ask((f"Find the file that mentions {q} and show me what it says.", f"Which of my files contains {q}? Read it to me."),
          dev=(f"Somewhere I wrote down {q} — dig up that file and open it.",))
    path = b.call("search_files", {"query": kw})["matches"][0]
    i = b.sub(f"Which file contains {kw!r}?", path)
    content = b.call("read_file", {"path": path})["content"]
    first = content.split("\n")[0]
    b.sub("What does the file's first line say?", first, [i])
    b.final(f"It's {path}. It says:\n{content}")


def inbox_reply(b: ChainBuilder) -> None:
    r = b.r
    emails = b.peek("read_inbox", {"unread_only": True})["emails"]
    senders = [e["from_name"] for e in emails]
    unique = [s for s in senders if senders.count(s) == 1]
    if not unique:
        raise ChainError("no unique sender")
    sender = r.choice(unique)
    body = r.choice(EMAIL_BODIES)
    ref = _first_name(sender)
    b.ask((f"Check my unread emails and reply to the one from {ref} with {say_quoted(body, r)}",
           f"Go through my unread mail; answer {ref}'s message saying {say_quoted(body, r)}"))
    emails = b.call("read_inbox", {"unread_only": True})["emails"]
    mail = next(e for e in emails if e["from_name"] == sender)
    i = b.sub(f"Which unread email is from {sender}?", mail["email_id"])
    sent = b.call("reply_to_email", {"email_id": mail["email_id"], "body": body})
    b.sub(f"What is the id of the reply to {sender}?", sent["message_id"], [i])
    b.final(f"Replied to {sender}'s email \"{mail['subject']}\" ({mail['email_id']}); message id {sent['message_id']}.")


_NO_ARTICLE = frozenset({"Big Ben", "Central Park", "Millennium Park", "Tokyo Tower", "Sagrada Família"})


def _the(place: str) -> str:
    return place if place in _NO_ARTICLE else f"the {place}"


def geocode_nearby(b: ChainBuilder) -> None:
    r = b.r
    place = r.choice(sorted(LANDMARKS))
    the = _the(place)
    cat = r.choice(sorted(CATEGORY_WORDS))
    words = r.choice(CATEGORY_WORDS[cat])
    radius = r.choice((None, 500, 1000, 2000, 5000))
    within = "near" if radius is None else f"within {radius} m of"
    b.ask((f"Find {words} {within} {the}.", f"I'm at {the}. Are there any {words} {within} me?"))
    loc = b.call("maps.geocode", {"address": place})
    i = b.sub(f"What is the latitude of {the}?", loc["latitude"])
    args = {"latitude": loc["latitude"], "longitude": loc["longitude"], "category": cat}
    if radius is not None:
        args["radius_m"] = radius
    places = b.call("maps.nearby_places", args)["places"]
    if not places:
        raise ChainError("nothing nearby")
    b.sub(f"Which of the {words} is closest to {the}?", places[0]["name"], [i])
    b.final(f"{the[0].upper() + the[1:]} is at {loc['latitude']}, {loc['longitude']}. Closest {words}: "
            + "; ".join(f"{p['name']} ({p['distance_m']} m, rated {p['rating']})" for p in places) + ".")


def _spending(b: ChainBuilder) -> tuple[str, str, list[float]]:
    r = b.r
    acc = r.choice([a for a, x in sorted(b.w.state["accounts"].items()) if x["type"] != "savings"])
    cat = r.choice(("groceries", "dining", "transport", "utilities", "entertainment", "shopping", "health"))
    txs = b.peek("list_transactions", {"account_id": acc, "category": cat})["transactions"]
    if len(txs) < 2:
        raise ChainError("too few transactions")
    return acc, cat, [abs(t["amount"]) for t in txs]


def spending_average(b: ChainBuilder) -> None:
    acc, cat, _ = _spending(b)
    b.ask((f"What's my average {cat} purchase on account {acc}?", f"On {acc}, how much do I spend per {cat} transaction on average?"))
    txs = b.call("list_transactions", {"account_id": acc, "category": cat})["transactions"]
    amounts = [abs(t["amount"]) for t in txs]
    i = b.sub(f"How many cleared {cat} transactions are on {acc}?", len(txs))
    mean = b.call("math.mean", {"numbers": amounts})["result"]
    b.sub(f"What is the average {cat} transaction amount?", mean, [i])
    b.final(f"You have {len(txs)} cleared {cat} transactions on {acc}; the average is ${fmt_number(mean)}.")


def recipe_shopping(b: ChainBuilder) -> None:
    r = b.r
    ing = r.choice(INGREDIENT_QUERIES)
    if not b.peek("search_recipes", {"ingredients": [ing]})["results"]:
        raise ChainError("no recipe")
    b.ask((f"Find a recipe that uses {ing} and add everything it needs to my shopping list.",
           f"I want to cook something with {ing}. Pick a recipe and put its ingredients on my groceries list."))
    hit = b.call("search_recipes", {"ingredients": [ing]})["results"][0]
    i = b.sub(f"Which recipe uses {ing}?", hit["name"])
    names = [x["name"] for x in b.call("get_recipe", {"recipe_id": hit["recipe_id"]})["ingredients"]]
    j = b.sub(f"What is the first ingredient of {hit['name']}?", names[0], [i])
    added = b.call("add_to_shopping_list", {"items": names})
    b.sub("Which list were the ingredients added to?", added["list_name"], [j])
    b.final(f"I picked {hit['name']} ({hit['recipe_id']}) and added {', '.join(names)} to your {added['list_name']} list.")


def playlist_from_artist(b: ChainBuilder) -> None:
    r = b.r
    artist, name = r.choice(ARTISTS), r.choice(PLAYLIST_NAMES)
    b.ask((f"Make a playlist called {say_quoted(name, r)} with the songs by {artist}.",
           f"Search for {artist} and put their tracks in a new playlist named {name}."))
    tracks = b.call("search_music", {"query": artist})["results"]
    if len(tracks) < 2:
        raise ChainError("too few tracks")
    i = b.sub(f"What is one song by {artist}?", tracks[0]["title"])
    made = b.call("create_playlist", {"name": name, "track_ids": [t["track_id"] for t in tracks]})
    b.sub("What is the new playlist's id?", made["playlist_id"], [i])
    b.final(f"Created playlist \"{name}\" ({made['playlist_id']}) with {len(tracks)} songs by {artist}: "
            + ", ".join(t["title"] for t in tracks) + ".")


def warmer_city(b: ChainBuilder) -> None:
    a, c = _two_cities(b)
    b.ask((f"Which is warmer right now, {a.name} or {c.name}?", f"Is it warmer in {a.name} or in {c.name} at the moment?",
           f"Compare the current temperature in {a.name} and {c.name}."))
    ra, rc = b.calls([("get_current_weather", {"city": a.name}), ("get_current_weather", {"city": c.name})])
    if ra["temperature"] == rc["temperature"]:
        raise ChainError("a tie")
    i = b.sub(f"What is the temperature in {a.name} now?", ra["temperature"])
    j = b.sub(f"What is the temperature in {c.name} now?", rc["temperature"])
    warm, cold = (ra, rc) if ra["temperature"] > rc["temperature"] else (rc, ra)
    b.sub("Which city is warmer?", warm["city"], [i, j])
    b.final(f"{warm['city']} is warmer: {fmt_number(warm['temperature'])} °C and {warm['condition']}, versus "
            f"{fmt_number(cold['temperature'])} °C in {cold['city']}.")


def _event(b: ChainBuilder) -> dict:
    return b.r.choice([e for _, e in sorted(b.w.state["events"].items())])


def delete_by_title(b: ChainBuilder) -> None:
    ev = _event(b)
    when = say_date(ev["date"], b.r)
    b.ask((f"Cancel my {ev['title']} on {when}.", f"Remove the {ev['title']} from my calendar on {when}.",
           f"Delete the {ev['title'].lower()} I have on {when}."))
    listed = b.call("list_events", {"date": ev["date"]})["events"]
    hit = next(e for e in listed if e["title"] == ev["title"])
    i = b.sub(f"What is the id of the {ev['title']} on {ev['date']}?", hit["event_id"])
    b.sub(f"When was the {ev['title']} scheduled to start?", hit["start_time"])
    done = b.call("delete_event", {"event_id": hit["event_id"]})
    b.sub("Was the event deleted?", done["status"], [i])
    b.final(f"Deleted \"{ev['title']}\" ({hit['event_id']}) on {ev['date']} at {hit['start_time']}.")


def flight_status_sms(b: ChainBuilder) -> None:
    r = b.r
    fn = f"{r.choice(('LH', 'AF', 'BA', 'UA', 'DL', 'KL', 'EK'))}{r.randint(100, 2999)}"
    full, ref = _contact(b)
    b.ask((f"Check the status of flight {fn} and text {ref} the update.",
           f"Is {fn} on time? Send {ref} an SMS with whatever the status is."))
    st = b.call("get_flight_status", {"flight_number": fn})
    status = {"on time": "is on time", "delayed": "is delayed", "boarding": "is boarding", "landed": "has landed",
              "cancelled": "was cancelled"}[st["status"]]
    status += f" by {st['delay_minutes']} minutes" if "delay_minutes" in st else ""
    i = b.sub(f"What is the status of flight {fn}?", st["status"])
    phone = _only_match(b.call("lookup_contact", {"name": ref}))["phone"]
    j = b.sub(f"What is {full}'s phone number?", phone)
    msg = f"Flight {fn} {status} (gate {st['gate']})."
    sent = b.call("send_sms", {"phone_number": phone, "message": msg})
    b.sub(f"What is the id of the text sent to {full}?", sent["message_id"], [i, j])
    b.final(f"Flight {fn} {status}, gate {st['gate']}. I texted {full} at {phone} (message id {sent['message_id']}).")


def stock_value(b: ChainBuilder) -> None:
    r = b.r
    sym = r.choice(sorted(b.w.stocks))
    n = r.choice((5, 10, 12, 20, 25, 40, 50, 100))
    cur = r.choice([c for c in COMMON_CURRENCIES if c != "USD"])
    b.ask((f"What are my {n} shares of {say_symbol(sym, r)} worth in {say_currency(cur, r)}?",
           f"I own {n} {sym} shares. Get the current price and convert their total value to {say_currency(cur, r)}."))
    price = b.call("get_stock_price", {"symbol": sym})["price"]
    i = b.sub(f"What is the current price of {sym}?", price)
    value = round(price * n, 2)
    conv = b.call("convert_currency", {"amount": value, "from_currency": "USD", "to_currency": cur})
    b.sub(f"What are {n} shares worth in {cur}?", conv["converted_amount"], [i])
    b.final(f"{sym} trades at ${fmt_number(price)}, so {n} shares are worth ${fmt_number(value)}, "
            f"or {fmt_number(conv['converted_amount'])} {cur}.")


_MOVE_SOURCES = (("/home/user/documents", "pdf"), ("/home/user/photos", "jpg"), ("/home/user/documents/notes", "txt"),
                 ("/home/user/documents/invoices", "txt"), ("/home/user/downloads", "pdf"), ("/home/user/photos", "png"))


def move_by_extension(b: ChainBuilder) -> None:
    r = b.r
    directory, ext = r.choice(_MOVE_SOURCES)
    dest = "/home/user/archive"
    b.ask((f"Move all the .{ext} files in {directory} to {dest}.", f"Archive every {ext.upper()} file from {directory} into {dest}."))
    entries = b.call("list_files", {"directory": directory, "extension": ext})["entries"]
    if not entries:
        raise ChainError("nothing to move")
    i = b.sub(f"Which .{ext} files are in {directory}?", entries[0])
    moved = b.calls([("move_file", {"source": f"{directory}/{e}", "destination": dest}) for e in entries])
    b.sub(f"Where is {entries[-1]} now?", moved[-1]["destination"], [i])
    b.final(f"Moved {len(entries)} file(s) to {dest}: " + ", ".join(m["destination"] for m in moved) + ".")


OUTDOOR = ("Picnic in the park", "Team barbecue", "Bike ride", "Beach day", "Garden party", "Hiking trip")


def forecast_event(b: ChainBuilder) -> None:
    r = b.r
    city, days = r.choice(b.w.cities).name, r.randint(3, 7)
    title, time = r.choice(OUTDOOR), sample_time(r, b.w)
    at = say_time(time, r)
    b.ask((f"Look at the {days}-day forecast for {city} and schedule {title} at {at} on the day with the lowest chance of rain.",
           f"Plan {say_quoted(title, r)} in {city} at {at} on whichever of the next {days} days is least likely to rain."))
    fc = b.call("get_weather_forecast", {"city": city, "days": days})["forecast"]
    day = min(fc, key=lambda d: (d["precip_chance"], d["date"]))
    i = b.sub(f"Which of the next {days} days in {city} has the lowest chance of rain?", day["date"])
    made = b.call("create_event", {"title": title, "date": day["date"], "start_time": time})
    b.sub("What is the new event's id?", made["event_id"], [i])
    b.final(f"{day['date']} looks driest in {city} ({day['precip_chance']}% chance of rain, {day['condition']}), so I "
            f"scheduled \"{title}\" then at {time} (event {made['event_id']}).")


# ---- chains over held-out tools (dev only) ---------------------------------------------------------


def reschedule_by_title(b: ChainBuilder) -> None:
    ev = _event(b)
    new_date = sample_future_date(b.r, b.w)
    if new_date == ev["date"]:
        raise ChainError("same day")
    b.ask((f"Move my {ev['title']} on {say_date(ev['date'], b.r)} to {say_date(new_date, b.r)}.",
           f"Push the {ev['title']} from {ev['date']} to {new_date}, same time."))
    listed = b.call("list_events", {"date": ev["date"]})["events"]
    hit = next(e for e in listed if e["title"] == ev["title"])
    i = b.sub(f"What is the id of the {ev['title']} on {ev['date']}?", hit["event_id"])
    moved = b.call("reschedule_event", {"event_id": hit["event_id"], "new_date": new_date})
    b.sub("What date is it on now?", moved["date"], [i])
    b.final(f"Moved \"{ev['title']}\" ({hit['event_id']}) to {moved['date']} at {moved['start_time']}.")


def pay_from_checking(b: ChainBuilder) -> None:
    r = b.r
    payee, amount = r.choice(PAYEES), round(r.uniform(30, 250), 2)
    b.ask((f"Pay my {payee} bill of {say_usd(amount, r)} from my Everyday Checking account.",
           f"Use my Everyday Checking to pay {payee} {say_usd(amount, r)}."))
    accounts = b.call("list_accounts", {"account_type": "checking"})["accounts"]
    acc = next(a for a in accounts if a["name"] == "Everyday Checking")
    i = b.sub("What is the id of the Everyday Checking account?", acc["account_id"])
    paid = b.call("pay_bill", {"account_id": acc["account_id"], "payee": payee, "amount": amount})
    b.sub("What is the payment id?", paid["payment_id"], [i])
    b.final(f"Paid ${fmt_number(amount)} to {payee} from {acc['account_id']} (payment {paid['payment_id']}).")


def contact_schedule_email(b: ChainBuilder) -> None:
    r = b.r
    full, ref = _contact(b)
    subject, body = r.choice(EMAIL_SUBJECTS), r.choice(EMAIL_BODIES)
    day, time = sample_future_date(r, b.w), sample_time(r, b.w)
    when = f"{say_date(day, r)} at {say_time(time, r)}"
    b.ask((f"Schedule an email to {ref} for {when}: subject {say_quoted(subject, r)}, message {say_quoted(body, r)}",
           f"Find {ref}'s address and queue an email for {when} — subject: {subject}; text: {body}"))
    email = _only_match(b.call("lookup_contact", {"name": ref}))["email"]
    i = b.sub(f"What is {full}'s email address?", email)
    done = b.call("schedule_email", {"to": [email], "subject": subject, "body": body, "send_at": f"{day} {time}"})
    b.sub("What is the id of the scheduled email?", done["schedule_id"], [i])
    b.final(f"Scheduled \"{subject}\" to {full} ({email}) for {day} {time} (id {done['schedule_id']}).")


def compress_found(b: ChainBuilder) -> None:
    r = b.r
    pattern, name = r.choice(("*.pdf", "invoice_*.txt", "*.jpg", "*notes*", "report*")), r.choice(("backup", "bundle", "archive_june"))
    b.ask((f"Zip up every file matching {say_quoted(pattern, r)} into an archive called {name}.",
           f"Find all files named like {pattern} and compress them into {name}."))
    paths = b.call("find_files_by_name", {"pattern": pattern})["matches"]
    if not paths:
        raise ChainError("no files")
    i = b.sub(f"Which files match {pattern}?", paths[0])
    made = b.call("files.compress", {"paths": paths, "archive_name": name})
    b.sub("Where is the archive?", made["archive"], [i])
    b.final(f"Compressed {len(paths)} file(s) into {made['archive']}.")


def spending_spread(b: ChainBuilder) -> None:
    acc, cat, _ = _spending(b)
    b.ask((f"How much do my {cat} transactions on {acc} vary? Give me the standard deviation.",))
    txs = b.call("list_transactions", {"account_id": acc, "category": cat})["transactions"]
    i = b.sub(f"How many cleared {cat} transactions are on {acc}?", len(txs))
    sd = b.call("math.std_dev", {"numbers": [abs(t["amount"]) for t in txs]})["result"]
    b.sub("What is their standard deviation?", sd, [i])
    b.final(f"Across {len(txs)} {cat} transactions on {acc}, the standard deviation is ${fmt_number(sd)}.")


def landmark_elevation(b: ChainBuilder) -> None:
    place = b.r.choice(sorted(LANDMARKS))
    the = _the(place)
    b.ask((f"How high above sea level is {the}?", f"What's the elevation at {the}?"))
    loc = b.call("maps.geocode", {"address": place})
    i = b.sub(f"What is the latitude of {the}?", loc["latitude"])
    el = b.call("maps.elevation", {"latitude": loc["latitude"], "longitude": loc["longitude"]})
    b.sub(f"What is the elevation at {the}?", el["elevation_m"], [i])
    b.final(f"{the[0].upper() + the[1:]} ({loc['latitude']}, {loc['longitude']}) is about {el['elevation_m']} m "
            "above sea level.")


def cleaner_air(b: ChainBuilder) -> None:
    a, c = _two_cities(b)
    b.ask((f"Where is the air cleaner today, {a.name} or {c.name}?", f"Compare air quality in {a.name} and {c.name}."))
    ra, rc = b.calls([("get_air_quality", {"city": a.name}), ("get_air_quality", {"city": c.name})])
    if ra["aqi"] == rc["aqi"]:
        raise ChainError("a tie")
    i = b.sub(f"What is the AQI in {a.name}?", ra["aqi"])
    j = b.sub(f"What is the AQI in {c.name}?", rc["aqi"])
    clean, dirty = (ra, rc) if ra["aqi"] < rc["aqi"] else (rc, ra)
    b.sub("Which city has cleaner air?", clean["city"], [i, j])
    b.final(f"{clean['city']} has cleaner air (AQI {clean['aqi']}, {clean['category']}) than {dirty['city']} (AQI {dirty['aqi']}).")


CHAINS: tuple[Chain, ...] = (
    Chain("contact_sms", ("lookup_contact", "send_sms"), contact_sms),
    Chain("contact_email", ("lookup_contact", "send_email"), contact_email),
    Chain("flight_booking", ("search_flights", "book_flight"), flight_booking),
    Chain("hotel_booking", ("search_hotels", "book_hotel"), hotel_booking),
    Chain("balance_convert", ("get_account_balance", "convert_currency"), balance_convert),
    Chain("product_cart", ("search_products", "add_to_cart"), product_cart),
    Chain("free_slot_event", ("find_free_slots", "create_event"), free_slot_event),
    Chain("search_read_file", ("search_files", "read_file"), search_read_file),
    Chain("inbox_reply", ("read_inbox", "reply_to_email"), inbox_reply),
    Chain("geocode_nearby", ("maps.geocode", "maps.nearby_places"), geocode_nearby),
    Chain("spending_average", ("list_transactions", "math.mean"), spending_average),
    Chain("recipe_shopping", ("search_recipes", "get_recipe", "add_to_shopping_list"), recipe_shopping),
    Chain("playlist_from_artist", ("search_music", "create_playlist"), playlist_from_artist),
    Chain("warmer_city", ("get_current_weather",), warmer_city),
    Chain("delete_by_title", ("list_events", "delete_event"), delete_by_title),
    Chain("flight_status_sms", ("get_flight_status", "lookup_contact", "send_sms"), flight_status_sms),
    Chain("stock_value", ("get_stock_price", "convert_currency"), stock_value),
    Chain("move_by_extension", ("list_files", "move_file"), move_by_extension),
    Chain("forecast_event", ("get_weather_forecast", "create_event"), forecast_event),
    Chain("reschedule_by_title", ("list_events", "reschedule_event"), reschedule_by_title),
    Chain("pay_from_checking", ("list_accounts", "pay_bill"), pay_from_checking),
    Chain("contact_schedule_email", ("lookup_contact", "schedule_email"), contact_schedule_email),
    Chain("compress_found", ("find_files_by_name", "files.compress"), compress_found),
    Chain("spending_spread", ("list_transactions", "math.std_dev"), spending_spread),
    Chain("landmark_elevation", ("maps.geocode", "maps.elevation"), landmark_elevation),
    Chain("cleaner_air", ("get_air_quality",), cleaner_air),
)

__all__ = ["CHAINS", "Chain", "ChainBuilder", "ChainError", "ChainRun", "run_chain"]
