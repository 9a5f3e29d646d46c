"""Sim-RL reward throughput: tinytool against a straightforward reference on `rouge_score`.

The claim (DESIGN.md "Benchmarks"): tinytool's Sim-RL (STAR, seeds/000_2375d1a78c8826ae.txt §3.2.1,
Eq. 6-10; App. A.7, Algorithms 1-3) gives the same values as a plain implementation written from the
paper's pseudo-code on top of ``rouge_score`` (STAR's configuration), at >= 30x its throughput.

Both sides score the same rows ``{"completion", "ground_truth", "tools"}`` in one process,
alternating repetitions (ref, tiny, ref, tiny, ...). Rows come from a seeded generator over a
20-tool catalog: ground truths of 1-3 calls (some parallel) or a text answer (~15%), and completions
that perturb them the way a small model does (missing/extra arguments, case changes, paraphrases,
number changes, reordered/dropped/duplicated calls, wrong names, broken JSON, think-tag mistakes).

    .venv/bin/python benchmarks/reward_throughput.py              # writes benchmarks/results/reward_throughput.json
    .venv/bin/python benchmarks/reward_throughput.py --profile    # + cProfile of one tinytool pass
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import io
import json
import pstats
import random
import re
import statistics
import time
from pathlib import Path

import _common
from rouge_score import rouge_scorer

from tinytool.formats import get_format
from tinytool.rewards import read_ground_truth, read_tools, score_row, sim_rl
from tinytool.rewards import rouge as tt_rouge

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "reward_throughput.json"


# =============================================================================================
# The reference: Algorithms 1-3 of STAR App. A.7, written plainly on rouge_score.
# =============================================================================================

# STAR's reference configuration; built once. Only rougeL's F-measure is used.
SCORER = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
THINK_RE = re.compile(r"<think>(.*?)</think>", re.DOTALL)
TOOL_CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
END_MARKERS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "</s>", "<|end|>")


def ref_rouge_l(pred: str, truth: str) -> float:
    return SCORER.score(truth, pred)["rougeL"].fmeasure


def ref_string_similarity(pred: str, truth: str) -> float:
    # identical strings are a perfect match, even when ROUGE has no tokens to compare
    return 1.0 if pred == truth else ref_rouge_l(pred, truth)


def ref_parse_generation(generation: str, tool_params: dict[str, set[str]]):
    """PARSE + CALCULATEFORMATREWARD of Alg. 1 in one pass: (calls, response), or None when a
    format rule (§3.2.1, rules 1-5) is broken."""
    text = generation.rstrip()
    stripped = True
    while stripped:  # end-of-turn markers a decoded completion may carry
        stripped = False
        for m in END_MARKERS:
            if text.endswith(m):
                text, stripped = text[: -len(m)].rstrip(), True
    # rule 1: exactly one <think>...</think> (the opening tag may sit in the prompt)
    n_open, n_close = text.count("<think>"), text.count("</think>")
    if n_open == 1 and n_close == 1 and text.find("<think>") < text.find("</think>"):
        m = THINK_RE.search(text)
        text = text[: m.start()] + text[m.end():]
    elif n_open == 0 and n_close == 1:
        text = text[text.find("</think>") + len("</think>"):]
    else:
        return None
    # rule 2: every call inside its own <tool_call>...</tool_call>
    blocks = TOOL_CALL_RE.findall(text)
    outside = TOOL_CALL_RE.sub("", text)
    if "<tool_call>" in outside or "</tool_call>" in outside or any("<tool_call>" in b for b in blocks):
        return None
    calls = []
    for block in blocks:
        # rule 3: one JSON object with exactly "name" and "arguments"
        try:
            obj = json.loads(block)
        except ValueError:
            return None
        if not isinstance(obj, dict) or set(obj) != {"name", "arguments"}:
            return None
        name, args = obj["name"], obj["arguments"]
        if isinstance(args, str):  # arguments written as a JSON string
            try:
                args = json.loads(args)
            except ValueError:
                return None
        if not isinstance(args, dict):
            return None
        # rules 4-5: an offered function, and only its parameters
        if name not in tool_params or not set(args) <= tool_params[name]:
            return None
        calls.append((name, args))
    return calls, outside.strip()


def ref_argument_similarity(p_args: dict, g_args: dict) -> float:
    """Algorithm 3."""
    union_keys = set(p_args) | set(g_args)
    if not union_keys:
        return 1.0
    weighted_sum = 0.0
    for k in set(p_args) & set(g_args):
        p, g = p_args[k], g_args[k]
        if isinstance(p, str) and isinstance(g, str):
            score = ref_string_similarity(p, g)
        elif isinstance(p, (int, float)) and isinstance(g, (int, float)):  # bool is an int
            score = 1.0 if p == g else 0.0
        else:
            score = 1.0 if str(p) == str(g) else 0.0
        weighted_sum += score
    return weighted_sum / len(union_keys)


def ref_tool_reward(p_calls: list, g_calls: list) -> float:
    """Algorithm 2, with Eq. 7's denominator |P| + |G| - |P ∩ G|."""
    total_similarity, matched = 0.0, 0
    remaining = list(g_calls)
    for p_name, p_args in p_calls:
        best_score, best_g = -1.0, None
        for g in remaining:
            if g[0] == p_name:
                s = ref_argument_similarity(p_args, g[1])
                if s > best_score:
                    best_score, best_g = s, g
        if best_g is not None:
            total_similarity += best_score
            matched += 1
            remaining.remove(best_g)
    union_size = len(p_calls) + len(g_calls) - matched
    return 1.0 if union_size == 0 else total_similarity / union_size


def ref_read_ground_truth(msg: dict):
    calls = []
    for c in msg.get("tool_calls") or []:
        f = c["function"]
        args = f["arguments"]
        if isinstance(args, str):
            args = json.loads(args) if args.strip() else {}
        calls.append((f["name"], args))
    return calls, (msg.get("content") or "").strip()


def ref_total_reward(row: dict) -> float:
    """Algorithm 1."""
    tool_params = {t["function"]["name"]: set(t["function"]["parameters"]["properties"]) for t in row["tools"]}
    parsed = ref_parse_generation(row["completion"], tool_params)
    if parsed is None:
        return -1.0
    p_calls, p_response = parsed
    g_calls, g_response = ref_read_ground_truth(row["ground_truth"])
    r_tool = r_response = 0.0
    if g_calls:
        r_tool = ref_tool_reward(p_calls, g_calls)
    else:
        r_response = ref_string_similarity(p_response, g_response)
    return r_tool + r_response


# =============================================================================================
# The data: a tool catalog and seeded (completion, ground truth) pairs with realistic mistakes.
# =============================================================================================

CITIES = [
    "Paris", "Berlin", "Tokyo", "New York", "San Francisco", "Lisbon", "Buenos Aires", "Cape Town",
    "Mumbai", "Seoul", "Toronto", "Mexico City", "Sydney", "Istanbul", "Nairobi", "Reykjavik",
    "Los Angeles", "Rio de Janeiro", "Kuala Lumpur", "Hong Kong", "Amsterdam", "Barcelona", "Chicago",
    "Vancouver", "Singapore", "Dubai", "Stockholm", "Prague", "Vienna", "Lagos", "Lima", "Bogota",
    "Santiago", "Auckland", "Helsinki", "Warsaw", "Athens", "Cairo", "Bangkok", "Hanoi", "Osaka",
    "Zurich", "Munich", "Dublin", "Edinburgh", "Copenhagen", "Oslo", "Montreal", "Seattle", "Boston",
]
COUNTRIES = ["France", "Germany", "Japan", "USA", "Portugal", "Argentina", "South Africa", "India", "Canada"]
AIRPORTS = ["SFO", "JFK", "LHR", "CDG", "HND", "FRA", "AMS", "SIN", "DXB", "LAX", "ORD", "YYZ", "GRU", "SYD"]
FIRST = ["alice", "bob", "carol", "dan", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory",
         "nina", "oscar", "peggy", "rupert", "sybil", "trent", "victor", "wendy", "yusuf", "zoe", "li", "ana"]
LAST = ["smith", "garcia", "kim", "nguyen", "müller", "rossi", "okafor", "silva", "tanaka", "kowalski",
        "dubois", "haddad", "larsen", "patel", "ivanova", "obrien", "santos", "chen", "meyer", "novak"]
DOMAINS = ["example.com", "acme.io", "mail.org", "corp.example.net", "uni.edu", "startup.dev"]
SUBJECTS = ["the quarterly report", "our team meeting", "the client presentation", "the onboarding flow",
            "the budget proposal", "the release notes", "the vendor contract", "the design review",
            "the hiring plan", "the migration to the new database", "the customer survey", "the offsite agenda",
            "the security audit", "the marketing launch", "the invoice for March", "the travel itinerary",
            "the product roadmap", "the incident postmortem", "the API documentation", "the board deck"]
VERBS = ["needs to be reviewed", "was moved", "has been approved", "is still blocked", "was updated",
         "should be shared with finance", "is ready for sign-off", "needs two more reviewers",
         "was postponed", "has a few open questions", "must be finalized", "was sent to legal",
         "looks good overall", "needs a second pass", "is due"]
WHENS = ["before Friday", "by end of day", "next Tuesday", "after the board meeting", "this afternoon",
         "tomorrow morning", "on Monday", "before the holidays", "by the 15th", "later this week",
         "as soon as possible", "before noon", "in two weeks", "after lunch"]
TAILS = ["", "", "Please confirm.", "Let me know if anything is missing.", "Thanks!", "Call me if needed.",
         "I attached the latest draft.", "Ping me with questions."]
SYNONYMS = {"reviewed": "checked", "moved": "rescheduled", "approved": "accepted", "blocked": "stuck",
            "updated": "revised", "shared": "sent", "ready": "prepared", "meeting": "sync", "report": "summary",
            "presentation": "deck", "proposal": "plan", "finalized": "completed", "postponed": "delayed",
            "morning": "AM", "afternoon": "PM", "cheap": "affordable", "best": "top", "near": "close to",
            "restaurants": "places", "flights": "flight", "hotel": "hotels", "news": "articles"}
TOPICS = ["electric vehicles", "interest rates", "climate policy", "the world cup", "quantum computing",
          "housing prices", "the film festival", "remote work", "space exploration", "AI regulation",
          "renewable energy", "the stock market", "public transport", "vaccines", "the election"]
CUISINES = ["italian", "thai", "mexican", "japanese", "indian", "vegan", "ethiopian", "french", "korean"]
DISHES = ["margherita pizza", "pad thai", "chicken tikka masala", "veggie burrito", "salmon nigiri",
          "caesar salad", "ramen", "falafel wrap", "green curry", "lasagna", "mango lassi", "garlic naan"]
ADJ = ["Silent", "Crimson", "Last", "Hidden", "Golden", "Broken", "Endless", "Midnight", "Wild", "Lost"]
NOUN = ["River", "Kingdom", "Horizon", "Signal", "Garden", "Empire", "Voyage", "Echo", "Harbor", "Planet"]
ARTISTS = ["Taylor Swift", "Maroon 5", "Miles Davis", "Radiohead", "Beyonce", "Daft Punk", "Adele", "Queen"]
GENRES = ["jazz", "lo-fi beats", "classical piano", "90s hip hop", "indie rock", "workout mix", "ambient"]
STREETS = ["Main St", "Oak Avenue", "Elm Road", "Baker Street", "Sunset Blvd", "Rue de Rivoli", "King St"]
PRODUCTS = ["wireless headphones", "standing desk", "running shoes", "espresso machine", "4k monitor",
            "mechanical keyboard", "hiking backpack", "air purifier", "robot vacuum", "yoga mat"]
CURRENCIES = ["USD", "EUR", "JPY", "GBP", "CHF", "CAD", "AUD", "BRL", "INR"]
LANGS = ["en", "fr", "de", "es", "ja", "pt", "it", "zh"]
SYMBOLS = ["AAPL", "MSFT", "GOOGL", "TSLA", "AMZN", "NVDA", "META", "SAP", "TM", "BABA"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]

# (name, description, [(param, kind, required, enum values or None)])
CATALOG = [
    ("get_weather", "Current weather and forecast for a city.",
     [("city", "city", True, None), ("date", "date", False, None),
      ("unit", "enum", False, ["celsius", "fahrenheit"]), ("include_hourly", "bool", False, None)]),
    ("search_flights", "Search flights between two cities.",
     [("origin", "city", True, None), ("destination", "city", True, None), ("departure_date", "date", True, None),
      ("return_date", "date", False, None), ("passengers", "int", False, (1, 6)),
      ("cabin_class", "enum", False, ["economy", "premium_economy", "business", "first"]),
      ("nonstop_only", "bool", False, None)]),
    ("book_hotel", "Book a hotel room.",
     [("city", "city", True, None), ("check_in", "date", True, None), ("check_out", "date", True, None),
      ("guests", "int", False, (1, 4)), ("room_type", "enum", False, ["single", "double", "suite"]),
      ("max_price", "float", False, (60, 600))]),
    ("send_email", "Send an email.",
     [("to", "email", True, None), ("subject", "title", True, None), ("body", "sentence", True, None),
      ("cc", "emails", False, None), ("high_priority", "bool", False, None)]),
    ("create_calendar_event", "Create a calendar event.",
     [("title", "title", True, None), ("date", "date", True, None), ("start_time", "time", True, None),
      ("duration_minutes", "int", False, (15, 180)), ("attendees", "emails", False, None),
      ("location", "address", False, None)]),
    ("convert_currency", "Convert an amount between currencies.",
     [("amount", "float", True, (1, 5000)), ("from_currency", "enum", True, CURRENCIES),
      ("to_currency", "enum", True, CURRENCIES)]),
    ("get_stock_price", "Latest or historical stock price.",
     [("symbol", "enum", True, SYMBOLS), ("exchange", "enum", False, ["NASDAQ", "NYSE", "XETRA", "TSE"]),
      ("date", "date", False, None)]),
    ("translate_text", "Translate text into another language.",
     [("text", "sentence", True, None), ("target_language", "enum", True, LANGS),
      ("source_language", "enum", False, LANGS), ("formal", "bool", False, None)]),
    ("search_restaurants", "Find restaurants near a place.",
     [("location", "city", True, None), ("cuisine", "enum", False, CUISINES), ("price_level", "int", False, (1, 4)),
      ("open_now", "bool", False, None), ("min_rating", "float", False, (3, 5))]),
    ("get_directions", "Route between two places.",
     [("origin", "address", True, None), ("destination", "address", True, None),
      ("mode", "enum", False, ["driving", "walking", "transit", "bicycling"]), ("avoid_tolls", "bool", False, None)]),
    ("set_reminder", "Set a reminder.",
     [("message", "sentence", True, None), ("datetime", "datetime", True, None),
      ("repeat", "enum", False, ["none", "daily", "weekly", "monthly"])]),
    ("search_news", "Search news articles.",
     [("query", "query", True, None), ("from_date", "date", False, None), ("language", "enum", False, LANGS),
      ("max_results", "int", False, (5, 50))]),
    ("calculate_mortgage", "Monthly mortgage payment.",
     [("principal", "float", True, (80000, 900000)), ("annual_rate", "float", True, (2, 8)),
      ("years", "int", True, (10, 30)), ("down_payment", "float", False, (0, 200000))]),
    ("get_movie_showtimes", "Showtimes for a movie.",
     [("movie_title", "movie", True, None), ("city", "city", True, None), ("date", "date", False, None),
      ("format", "enum", False, ["2D", "3D", "IMAX"])]),
    ("order_food", "Order food for delivery.",
     [("restaurant", "restaurant", True, None), ("items", "dishes", True, None),
      ("delivery_address", "address", True, None), ("tip_percent", "float", False, (5, 25)),
      ("contactless", "bool", False, None)]),
    ("create_support_ticket", "Open a customer support ticket.",
     [("customer_email", "email", True, None), ("subject", "title", True, None),
      ("description", "sentence", True, None), ("priority", "enum", False, ["low", "medium", "high", "urgent"]),
      ("tags", "tags", False, None)]),
    ("track_package", "Track a parcel.",
     [("tracking_number", "tracking", True, None), ("carrier", "enum", False, ["UPS", "FedEx", "DHL", "USPS"])]),
    ("search_products", "Search an online store.",
     [("query", "product", True, None),
      ("category", "enum", False, ["electronics", "home", "sports", "office", "kitchen"]),
      ("max_price", "float", False, (10, 2000)), ("in_stock_only", "bool", False, None),
      ("sort_by", "enum", False, ["relevance", "price_asc", "price_desc", "rating"])]),
    ("play_music", "Play music.",
     [("query", "music", True, None), ("artist", "enum", False, ARTISTS), ("shuffle", "bool", False, None),
      ("volume", "int", False, (10, 100))]),
    ("check_wordpress", "Check whether a site runs WordPress.",
     [("url", "url", True, None), ("user_agent", "user_agent", False, None)]),
    ("airport_statistics", "Statistics for an airport.", [("iata", "enum", True, AIRPORTS)]),
]
BY_NAME = {name: (desc, params) for name, desc, params in CATALOG}
# names a model gets wrong: not offered (format failure) or confused with a sibling tool
NEAR_MISS = {"get_weather": ["get_weather_forecast", "weather"], "search_flights": ["searchFlights", "find_flights"],
             "book_hotel": ["hotel_booking", "book_hotels"], "send_email": ["email.send", "sendEmail"],
             "create_calendar_event": ["create_event", "calendar.create_event"]}
SIBLINGS = [("search_restaurants", "order_food"), ("get_weather", "get_directions"),
            ("search_news", "search_products"), ("send_email", "create_support_ticket"),
            ("search_flights", "book_hotel"), ("get_stock_price", "convert_currency")]
JSON_TYPE = {"int": "integer", "float": "number", "bool": "boolean", "emails": "array", "dishes": "array",
             "tags": "array"}


def tool_entry(name: str) -> dict:
    desc, params = BY_NAME[name]
    props = {}
    for p, kind, _, extra in params:
        schema: dict = {"type": JSON_TYPE.get(kind, "string"), "description": f"{p.replace('_', ' ')}"}
        if kind == "enum":
            schema["enum"] = list(extra)
        if schema["type"] == "array":
            schema["items"] = {"type": "string"}
        props[p] = schema
    return {"type": "function", "function": {
        "name": name, "description": desc,
        "parameters": {"type": "object", "properties": props, "required": [p for p, _, r, _ in params if r]}}}


def sentence(rng: random.Random) -> str:
    s = f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(WHENS)}."
    tail = rng.choice(TAILS)
    return f"{s} {tail}".strip()


def date(rng: random.Random) -> str:
    return f"{rng.randint(2024, 2026)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def email(rng: random.Random) -> str:
    sep = rng.choice([".", "_", ""])
    return f"{rng.choice(FIRST)}{sep}{rng.choice(LAST)}{rng.randint(1, 99) if rng.random() < 0.3 else ''}@" \
           f"{rng.choice(DOMAINS)}"


def address(rng: random.Random) -> str:
    return f"{rng.randint(1, 999)} {rng.choice(STREETS)}, {rng.choice(CITIES)}"


def value(rng: random.Random, kind: str, extra) -> object:
    if kind == "city":
        c = rng.choice(CITIES)
        return f"{c}, {rng.choice(COUNTRIES)}" if rng.random() < 0.15 else c
    if kind == "date":
        return date(rng)
    if kind == "datetime":
        return f"{date(rng)}T{rng.randint(6, 21):02d}:{rng.choice(['00', '15', '30', '45'])}"
    if kind == "time":
        return f"{rng.randint(7, 19):02d}:{rng.choice(['00', '30'])}"
    if kind == "email":
        return email(rng)
    if kind == "emails":
        return [email(rng) for _ in range(rng.randint(1, 3))]
    if kind == "sentence":
        return sentence(rng)
    if kind == "title":
        return f"{rng.choice(['Re: ', 'Update on ', 'Question about ', ''])}{rng.choice(SUBJECTS)}" \
               f"{rng.choice(['', ' ' + rng.choice(WHENS), ' (draft)'])}"
    if kind == "query":
        return f"{rng.choice(['latest', 'news on', 'analysis of', ''])} {rng.choice(TOPICS)} " \
               f"{rng.choice(['in ' + rng.choice(CITIES), 'this week', str(rng.randint(2023, 2026)), ''])}".strip()
    if kind == "address":
        return address(rng)
    if kind == "movie":
        return f"The {rng.choice(ADJ)} {rng.choice(NOUN)}{rng.choice(['', ' 2', ': Part II', ' Returns'])}"
    if kind == "restaurant":
        return f"{rng.choice(FIRST).capitalize()}'s {rng.choice(CUISINES).capitalize()} " \
               f"{rng.choice(['Kitchen', 'Bistro', 'House', 'Grill', 'Cafe'])}"
    if kind == "dishes":
        return rng.sample(DISHES, rng.randint(1, 3))
    if kind == "tags":
        return rng.sample(["billing", "login", "bug", "refund", "shipping", "account", "mobile"], rng.randint(1, 3))
    if kind == "tracking":
        return f"{rng.choice(['1Z', 'JD', 'TBA', ''])}{rng.randint(10**9, 10**12 - 1)}"
    if kind == "product":
        return f"{rng.choice(['cheap', 'best', 'quiet', 'compact', ''])} {rng.choice(PRODUCTS)} " \
               f"{rng.choice(['under 100', 'for travel', 'for small apartments', ''])}".strip()
    if kind == "music":
        return f"{rng.choice(GENRES)} {rng.choice(['playlist', 'for focus', 'radio', 'from the 80s', ''])}".strip()
    if kind == "url":
        return f"https://{rng.choice(['www.', 'blog.', 'shop.', ''])}{rng.choice(LAST)}" \
               f"{rng.choice(['-studio', '-design', 'press', ''])}.{rng.choice(['com', 'org', 'io', 'de'])}"
    if kind == "user_agent":
        return f"Mozilla/5.0 ({rng.choice(['Windows NT 10.0', 'Macintosh', 'X11; Linux x86_64'])})"
    if kind == "enum":
        return rng.choice(extra)
    if kind == "int":
        return rng.randint(*extra)
    if kind == "float":
        lo, hi = extra
        return round(rng.uniform(lo, hi), rng.choice([0, 1, 2])) if hi < 100 else float(rng.randint(lo, hi))
    if kind == "bool":
        return rng.random() < 0.5
    raise ValueError(kind)


def make_call(rng: random.Random, name: str) -> dict:
    _, params = BY_NAME[name]
    args = {}
    for p, kind, required, extra in params:
        if required or rng.random() < 0.45:
            args[p] = value(rng, kind, extra)
    return {"name": name, "arguments": args}


def answer_text(rng: random.Random) -> str:
    """A no-call ground truth: the model should answer (or ask) in text."""
    templates = [
        lambda: f"The ICAO code for {rng.choice(AIRPORTS)} is K{rng.choice(AIRPORTS)}, and it has "
                f"{rng.randint(2, 8)} runways.",
        lambda: f"I can't book a table in {rng.choice(CITIES)} with the tools I have, but "
                f"{rng.choice(CUISINES)} places there usually take reservations by phone.",
        lambda: f"Which city should I check the weather for, and do you want it in "
                f"{rng.choice(['celsius', 'fahrenheit'])}?",
        lambda: f"You already asked about {rng.choice(SUBJECTS)}: it {rng.choice(VERBS)} {rng.choice(WHENS)}.",
        lambda: f"To search flights from {rng.choice(CITIES)} I need your departure date and destination.",
        lambda: f"{rng.randint(2, 40)} {rng.choice(CURRENCIES)} is roughly {rng.randint(2, 60)} "
                f"{rng.choice(CURRENCIES)} at today's rate, as I mentioned earlier.",
        lambda: f"Sure! {sentence(rng)} {rng.choice(['Anything else?', 'Happy to help.', ''])}".strip(),
    ]
    return rng.choice(templates)()


# ---- perturbations ---------------------------------------------------------------------------

def paraphrase(rng: random.Random, s: str) -> str:
    words = s.split()
    if not words:
        return s
    op = rng.random()
    if op < 0.3:  # synonyms
        words = [SYNONYMS.get(w.strip(".,!?").lower(), w) if rng.random() < 0.7 else w for w in words]
        if " ".join(words) == s:
            words.insert(rng.randrange(len(words) + 1), rng.choice(["please", "kindly", "the"]))
    elif op < 0.5 and len(words) > 2:  # drop words
        for _ in range(rng.randint(1, max(1, len(words) // 3))):
            if len(words) > 1:
                words.pop(rng.randrange(len(words)))
    elif op < 0.65 and len(words) > 1:  # swap two neighbours
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    elif op < 0.8:  # partial overlap: keep a prefix, invent the rest
        k = rng.randint(1, max(1, len(words) - 1))
        words = words[:k] + sentence(rng).split()[: rng.randint(1, 5)]
    else:  # typo
        i = rng.randrange(len(words))
        w = words[i]
        if len(w) > 3:
            j = rng.randrange(len(w) - 1)
            words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
        else:
            words[i] = w + rng.choice("sxe")
    return " ".join(words)


def case_change(rng: random.Random, s: str) -> str:
    return rng.choice([s.lower(), s.upper(), s.title(), s.swapcase()])


def reformat_date(rng: random.Random, s: str) -> str:
    y, m, d = s.split("-")
    return rng.choice([f"{MONTHS[int(m) - 1]} {int(d)}, {y}", f"{d}/{m}/{y}", f"{m}/{d}/{y}", f"{y}/{m}/{d}"])


def perturb_value(rng: random.Random, kind: str, extra, v: object) -> object:
    if kind == "enum":
        r = rng.random()
        if r < 0.4:
            return case_change(rng, v)
        others = [e for e in extra if e != v]
        return rng.choice(others) if others else v
    if kind == "bool":
        r = rng.random()
        return (not v) if r < 0.6 else (str(v).lower() if r < 0.8 else int(v))
    if kind == "int":
        r = rng.random()
        return v + rng.choice([-1, 1, 2, 10]) if r < 0.6 else (str(v) if r < 0.8 else float(v))
    if kind == "float":
        r = rng.random()
        return round(v * rng.choice([0.9, 1.1, 10, 0.5]), 2) if r < 0.6 else (str(v) if r < 0.8 else int(v))
    if kind in ("emails", "dishes", "tags"):
        r = rng.random()
        if r < 0.4 and len(v) > 1:
            return list(reversed(v))
        if r < 0.7 and len(v) > 1:
            return v[:-1]
        return ", ".join(v) if r < 0.85 else v + [value(rng, kind, extra)[0]]
    if kind in ("date", "datetime") and re.match(r"\d{4}-\d\d-\d\d", str(v)):
        return reformat_date(rng, v[:10]) + v[10:].replace("T", " ") if rng.random() < 0.6 else value(rng, kind, extra)
    # free strings
    r = rng.random()
    if r < 0.3:
        return case_change(rng, v)
    if r < 0.85:
        return paraphrase(rng, v)
    return value(rng, kind, extra)  # a different value altogether


def perturb_arguments(rng: random.Random, name: str, args: dict) -> dict:
    """Argument-level mistakes that keep the format valid."""
    _, params = BY_NAME[name]
    spec = {p: (kind, req, extra) for p, kind, req, extra in params}
    args, touched = dict(args), set()
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        op = rng.random()
        present = [p for p in args if p not in touched]
        if op < 0.15 and present:  # drop an argument (optional or required)
            optional = [p for p in present if not spec[p][1]]
            args.pop(rng.choice(optional if optional and rng.random() < 0.6 else present))
        elif op < 0.3:  # add an optional argument the truth does not set
            missing = [p for p in spec if p not in args]
            if missing:
                p = rng.choice(missing)
                args[p] = value(rng, spec[p][0], spec[p][2])
                touched.add(p)
        elif present:
            p = rng.choice(present)
            touched.add(p)
            kind, _, extra = spec[p]
            args[p] = perturb_value(rng, kind, extra, args[p])
    return args


REASONS = ["The user wants {what}. I have the tool {name} for that.", "I should call {name} to handle {what}.",
           "Let me use {name}; the request is about {what}.", "{what}? {name} fits, with the values given."]


def render_call(rng: random.Random, call: dict, args_as_string: bool) -> str:
    args = json.dumps(call["arguments"], ensure_ascii=False) if args_as_string else call["arguments"]
    obj = {"name": call["name"], "arguments": args}
    if rng.random() < 0.1:
        obj = {"arguments": args, "name": call["name"]}  # key order does not matter
    return json.dumps(obj, ensure_ascii=rng.random() < 0.5, indent=2 if rng.random() < 0.1 else None)


def render_completion(rng: random.Random, calls: list[dict], text: str = "", think: str = "one",
                      block_edit=None) -> str:
    known = calls and calls[0]["name"] in BY_NAME
    what = BY_NAME[calls[0]["name"]][0].lower().rstrip(".") if known else rng.choice(SUBJECTS)
    name = calls[0]["name"] if calls else "no tool"
    reasoning = rng.choice(REASONS).format(what=what, name=name) + " " + sentence(rng)
    parts = []
    if think == "one":
        parts.append(f"<think>\n{reasoning}\n</think>")
    elif think == "no_open":  # the chat template put <think> in the prompt
        parts.append(f"{reasoning}\n</think>")
    elif think == "two":
        parts += [f"<think>\n{reasoning}\n</think>", f"<think>\n{sentence(rng)}\n</think>"]
    elif think == "unclosed":
        parts.append(f"<think>\n{reasoning}")
    if text:
        parts.append(text)
    as_string = rng.random() < 0.1
    blocks = [f"<tool_call>\n{render_call(rng, c, as_string)}\n</tool_call>" for c in calls]
    if block_edit is not None and blocks:
        blocks = block_edit(blocks)
    parts += blocks
    out = "\n\n".join(parts)
    if rng.random() < 0.3:
        out += rng.choice(["<|im_end|>", "<|endoftext|>", "\n<|im_end|>\n"])
    return out


def break_json(rng: random.Random, blocks: list[str]) -> list[str]:
    i = rng.randrange(len(blocks))
    body = blocks[i][len("<tool_call>\n"): -len("\n</tool_call>")]
    op = rng.random()
    if op < 0.3:  # truncated
        body = body[: rng.randint(len(body) // 2, len(body) - 1)]
    elif op < 0.55:  # single quotes (a Python dict)
        body = str(json.loads(body)) if rng.random() < 0.8 else body.replace('"', "'")
    elif op < 0.7:  # trailing comma
        body = body[:-1].rstrip() + ", }"
    elif op < 0.85:  # two calls in one block
        body = body + "\n" + body
    else:  # an extra key
        obj = json.loads(body)
        obj[rng.choice(["reasoning", "thought", "confidence"])] = rng.choice(["high", 0.9, "because"])
        body = json.dumps(obj)
    blocks[i] = f"<tool_call>\n{body}\n</tool_call>"
    return blocks


def make_pair(rng: random.Random) -> tuple[dict, str]:
    """One row and the kind of mistake its completion makes."""
    n_offered = rng.randint(3, 7)
    names = [c[0] for c in CATALOG]
    if rng.random() < 0.15:  # no-call item
        offered = rng.sample(names, n_offered)
        truth_text = answer_text(rng)
        gt = {"role": "assistant", "content": truth_text}
        r = rng.random()
        if r < 0.15:
            kind, completion = "text/exact", render_completion(rng, [], truth_text)
        elif r < 0.55:
            kind, completion = "text/paraphrase", render_completion(rng, [], paraphrase(rng, truth_text))
        elif r < 0.65:
            kind, completion = "text/other_answer", render_completion(rng, [], answer_text(rng))
        elif r < 0.85:  # a needless call (Table 12)
            kind = "text/needless_call"
            completion = render_completion(rng, [make_call(rng, rng.choice(offered))],
                                           rng.choice(["", "Let me look that up."]))
        else:
            kind = "text/think_error"
            completion = render_completion(rng, [], paraphrase(rng, truth_text), think=rng.choice(["none", "two"]))
        return {"completion": completion, "ground_truth": gt, "tools": [tool_entry(n) for n in offered]}, kind

    first = rng.choice(names)
    k = rng.choices([1, 2, 3], weights=[0.6, 0.3, 0.1])[0]
    if k > 1 and rng.random() < 0.5:  # parallel calls of the same tool
        gt_names = [first] * k
    else:
        gt_names = [first] + rng.sample([n for n in names if n != first], k - 1)
    offered = list(dict.fromkeys(gt_names + rng.sample(names, n_offered)))
    rng.shuffle(offered)
    truth = [make_call(rng, n) for n in gt_names]
    gt_calls = []
    for i, c in enumerate(truth):  # OpenAI wire format: arguments mostly a JSON string
        args = json.dumps(c["arguments"], ensure_ascii=False) if rng.random() < 0.5 else c["arguments"]
        gt_calls.append({"id": f"call_{i}", "type": "function", "function": {"name": c["name"], "arguments": args}})
    gt = {"role": "assistant", "content": rng.choice([None, "", None]), "tool_calls": gt_calls}

    pred = copy.deepcopy(truth)
    text = rng.choice([""] * 6 + ["Sure, let me check that.", "I'll call the tool now."])
    think, edit = "one", None
    r = rng.random()
    if r < 0.2:
        kind = "calls/exact"
        think = "no_open" if rng.random() < 0.2 else "one"
    elif r < 0.6:  # argument-level mistakes
        kind = "calls/arguments"
        for c in pred:
            if c is pred[0] or rng.random() < 0.5:
                c["arguments"] = perturb_arguments(rng, c["name"], c["arguments"])
    elif r < 0.75:  # call-level mistakes
        kind = "calls/calls"
        op = rng.random()
        if op < 0.25 and len(pred) > 1:
            rng.shuffle(pred)
            if pred == truth:
                pred.reverse()
        elif op < 0.45 and len(pred) > 1:
            pred.pop(rng.randrange(len(pred)))
        elif op < 0.6:
            pred.append(copy.deepcopy(rng.choice(pred)))
        elif op < 0.8:  # a sibling tool instead (offered: valid format, zero similarity)
            pairs = [p for p in SIBLINGS if pred[0]["name"] in p]
            sib = next(x for x in pairs[0] if x != pred[0]["name"]) if pairs else rng.choice(offered)
            if sib not in offered:
                offered.append(sib)
            pred[0] = make_call(rng, sib)
        else:  # an extra call
            pred.append(make_call(rng, rng.choice(offered)))
        if rng.random() < 0.3:
            pred[0]["arguments"] = perturb_arguments(rng, pred[0]["name"], pred[0]["arguments"])
    elif r < 0.95:  # format failures
        kind = "calls/format"
        op = rng.random()
        if op < 0.2:  # a name that is not offered
            c = rng.choice(pred)
            c["name"] = rng.choice(NEAR_MISS.get(c["name"], [c["name"] + "_v2", c["name"].replace("_", "")]))
        elif op < 0.35:  # an argument the tool does not have
            c = rng.choice(pred)
            c["arguments"][rng.choice(["notes", "api_key", "verbose", "location_name", "lang"])] = \
                rng.choice(["yes", True, 3, "en"])
        elif op < 0.65:
            edit = lambda b: break_json(rng, b)
        elif op < 0.8:
            think = rng.choice(["none", "two", "unclosed"])
        elif op < 0.9:  # an unclosed or stray tag
            edit = lambda b: b[:-1] + [b[-1].replace("</tool_call>", "")] if rng.random() < 0.6 \
                else ["</tool_call>"] + b
        else:  # a call written outside the tags, next to a valid one -> the JSON text is response text
            edit = lambda b: b + [json.dumps(make_call(rng, first))]
            if rng.random() < 0.5:
                edit = lambda b: [b[0].replace("<tool_call>\n", "<tool_call>\n<tool_call>\n")] + b[1:]
    else:  # answers in text instead of calling
        kind = "calls/answers_in_text"
        pred, text = [], rng.choice([f"I need the {p} first." for p in ("date", "city", "email address")]
                                    + [answer_text(rng)])
    completion = render_completion(rng, pred, text, think=think, block_edit=edit)
    return {"completion": completion, "ground_truth": gt, "tools": [tool_entry(n) for n in offered]}, kind


def make_pairs(n: int, seed: int, with_kinds: bool = False):
    """``n`` rows (and, with ``with_kinds``, the kind of each), reproducible from ``seed``."""
    rng = random.Random(seed)
    made = [make_pair(rng) for _ in range(n)]
    rows = [r for r, _ in made]
    return (rows, [k for _, k in made]) if with_kinds else rows


# =============================================================================================
# Timing
# =============================================================================================

def clear_tinytool_caches() -> None:
    tt_rouge.clear_caches()


def run_reference(rows: list[dict]) -> list[float]:
    return [ref_total_reward(r) for r in rows]


def run_tinytool(rows: list[dict]) -> list[float]:
    return [score_row("simrl", r).score for r in rows]


def prepare_low_level(rows: list[dict]):
    fmt = get_format("hermes")
    return fmt, [(r["completion"], read_ground_truth(r["ground_truth"], fmt), read_tools(r["tools"])) for r in rows]


def run_tinytool_low_level(prepared) -> list[float]:
    fmt, items = prepared
    return [sim_rl(fmt.parse(c), truth, tools).score for c, truth, tools in items]


def string_pairs(rows: list[dict]) -> list[tuple[str, str]]:
    """Every (prediction, truth) string pair the reference hands to ROUGE-L in one pass."""
    global ref_rouge_l
    seen: list[tuple[str, str]] = []
    real = ref_rouge_l

    def record(p: str, g: str) -> float:
        seen.append((p, g))
        return 0.0

    ref_rouge_l = record
    try:
        run_reference(rows)
    finally:
        ref_rouge_l = real
    return seen


def run_reference_without_rouge(rows: list[dict]) -> None:
    """The reference with ROUGE-L stubbed out: what its parsing and reading alone cost."""
    global ref_rouge_l
    real, ref_rouge_l = ref_rouge_l, lambda p, g: 0.0
    try:
        run_reference(rows)
    finally:
        ref_rouge_l = real


def run_ref_strings(pairs: list[tuple[str, str]]) -> list[float]:
    return [ref_rouge_l(p, g) for p, g in pairs]


def run_tiny_strings(pairs: list[tuple[str, str]]) -> list[float]:
    return [tt_rouge.rouge_l(p, g) for p, g in pairs]


def _probe(completion: str, truth: dict | None = None) -> dict:
    tools = [tool_entry("get_weather"), tool_entry("send_email")]
    gt = truth or {"role": "assistant", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "celsius"}'}}]}
    return {"completion": completion, "ground_truth": gt, "tools": tools}


_T = "<think>ok</think>\n"
# Inputs where the paper is terse; not part of the timed mix. A disagreement here is a spec
# question for tinytool, listed in the results, not a benchmark failure.
EDGE_PROBES = {
    "exact": _probe(_T + '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}'
                        '</tool_call>'),
    "opening_think_in_prompt": _probe('ok</think><tool_call>{"name": "get_weather", "arguments": '
                                      '{"city": "paris"}}</tool_call>'),
    "bool_vs_int": _probe(_T + '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", '
                              '"include_hourly": 1}}</tool_call>',
                          {"role": "assistant", "tool_calls": [{"function": {
                              "name": "get_weather", "arguments": {"city": "Paris", "include_hourly": True}}}]}),
    "number_as_string": _probe(_T + '<tool_call>{"name": "send_email", "arguments": {"to": "a@b.c", '
                                   '"subject": "5", "body": "x"}}</tool_call>',
                               {"role": "assistant", "tool_calls": [{"function": {
                                   "name": "send_email", "arguments": {"to": "a@b.c", "subject": 5, "body": "x"}}}]}),
    "empty_strings_identical": _probe(_T + '<tool_call>{"name": "get_weather", "arguments": {"city": ""}}</tool_call>',
                                      {"role": "assistant", "tool_calls": [{"function": {
                                          "name": "get_weather", "arguments": {"city": ""}}}]}),
    "response_only_no_call_truth": _probe(_T + "It is sunny in Paris.",
                                          {"role": "assistant", "content": "  It's sunny in Paris today. "}),
    "call_when_truth_is_text": _probe(_T + 'Checking.<tool_call>{"name": "get_weather", "arguments": '
                                          '{"city": "Paris"}}</tool_call>',
                                      {"role": "assistant", "content": "Checking."}),
    "parameters_key_instead_of_arguments": _probe(
        _T + '<tool_call>{"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}</tool_call>'),
    "extra_id_and_type_keys": _probe(
        _T + '<tool_call>{"id": "call_0", "type": "function", "name": "get_weather", "arguments": '
            '{"city": "Paris", "unit": "celsius"}}</tool_call>'),
    "arguments_null": _probe(_T + '<tool_call>{"name": "get_weather", "arguments": null}</tool_call>'),
    "arguments_empty_string": _probe(_T + '<tool_call>{"name": "get_weather", "arguments": ""}</tool_call>'),
    "comma_after_object": _probe(
        _T + '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}},</tool_call>'),
    "arguments_string_not_object": _probe(_T + '<tool_call>{"name": "get_weather", "arguments": "[1]"}</tool_call>'),
    "python_literal": _probe(_T + "<tool_call>{'name': 'get_weather', 'arguments': {'city': 'Paris'}}</tool_call>"),
    "json_list_of_calls": _probe(_T + '<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]'
                                     '</tool_call>'),
}


def run_edge_probes() -> dict:
    out = {}
    for name, row in EDGE_PROBES.items():
        ref = ref_total_reward(row)
        tiny = score_row("simrl", row)
        out[name] = {"reference": ref, "tinytool": tiny.score, "agree": abs(ref - tiny.score) <= 1e-9,
                     **({"tinytool_error": tiny.error} if tiny.error else {}),
                     **({"row": row} if abs(ref - tiny.score) > 1e-9 else {})}
    return out


def timed(fn, arg) -> tuple[float, list[float]]:
    t0 = time.perf_counter()
    out = fn(arg)
    return time.perf_counter() - t0, out


def versions() -> dict:
    return _common.versions("rouge_score", "rapidfuzz", "nltk")


def distribution(scores: list[float]) -> dict:
    n = len(scores)
    fail = sum(1 for s in scores if s == -1.0)
    one = sum(1 for s in scores if s == 1.0)
    zero = sum(1 for s in scores if s == 0.0)
    between = n - fail - one - zero
    return {"format_failure_-1": fail / n, "exactly_1": one / n, "exactly_0": zero / n,
            "strictly_between_0_and_1": between / n, "mean": sum(scores) / n}


def profile_tinytool(rows: list[dict], top: int) -> str:
    clear_tinytool_caches()
    prof = cProfile.Profile()
    prof.enable()
    run_tinytool(rows)
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf).strip_dirs().sort_stats("cumulative")
    stats.print_stats(top)
    buf.write("\n--- by own time ---\n")
    stats.sort_stats("tottime").print_stats(top)
    return buf.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="number of (completion, ground truth) pairs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=5, help="timed repetitions per side (alternating)")
    ap.add_argument("--out", type=Path, default=RESULT)
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one tinytool pass")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()

    t0 = time.perf_counter()
    rows, kinds = make_pairs(args.n, args.seed, with_kinds=True)
    gen_s = time.perf_counter() - t0
    unique_completions = len({r["completion"] for r in rows}) / len(rows)
    n_gt_calls = [len(r["ground_truth"].get("tool_calls") or []) for r in rows]

    # values: one untimed pass each (also warms imports and rouge_score's stemmer)
    ref_vals = run_reference(rows)
    clear_tinytool_caches()
    tiny_vals = run_tinytool(rows)
    prepared = prepare_low_level(rows)
    clear_tinytool_caches()
    low_vals = run_tinytool_low_level(prepared)

    diffs = [abs(a - b) for a, b in zip(ref_vals, tiny_vals)]
    bad = [i for i, d in enumerate(diffs) if d > 1e-9]
    low_bad = sum(1 for a, b in zip(ref_vals, low_vals) if abs(a - b) > 1e-9)
    errors = [i for i, r in enumerate(rows) if score_row("simrl", r).error]

    pairs = string_pairs(rows)
    str_ref_vals, str_tiny_vals = run_ref_strings(pairs), run_tiny_strings(pairs)
    str_max = max((abs(a - b) for a, b in zip(str_ref_vals, str_tiny_vals)), default=0.0)
    probes = run_edge_probes()

    ref_t, tiny_t, low_t, noro_t, sref_t, stiny_t = [], [], [], [], [], []
    for _ in range(args.reps):
        noro_t.append(timed(run_reference_without_rouge, rows)[0])
        sref_t.append(timed(run_ref_strings, pairs)[0])
        clear_tinytool_caches()
        stiny_t.append(timed(run_tiny_strings, pairs)[0])
        ref_t.append(timed(run_reference, rows)[0])
        clear_tinytool_caches()
        tiny_t.append(timed(run_tinytool, rows)[0])
        clear_tinytool_caches()
        low_t.append(timed(run_tinytool_low_level, prepared)[0])

    n = len(rows)
    ref_ps = n / statistics.median(ref_t)
    tiny_ps = n / statistics.median(tiny_t)
    low_ps = n / statistics.median(low_t)
    result = {
        "claim": "tinytool Sim-RL equals a straightforward rouge_score reference (max |Δ| <= 1e-9) at >= 30x "
                 "its throughput",
        "machine": _common.machine(),
        "versions": versions(),
        "inputs": {"n_pairs": n, "seed": args.seed, "reps": args.reps,
                   "ground_truth_calls": {str(k): n_gt_calls.count(k) / n for k in sorted(set(n_gt_calls))},
                   "unique_completions": unique_completions, "generate_s": round(gen_s, 3)},
        "reference": {"what": "Alg. 1-3 from STAR's pseudo-code, rouge_score RougeScorer(['rouge1','rouge2',"
                              "'rougeL'], use_stemmer=True), regex + json.loads parsing",
                      "median_pairs_per_s": round(ref_ps, 1), "rep_seconds": [round(t, 4) for t in ref_t]},
        "tinytool": {"what": "tinytool.rewards.score_row('simrl', row), lru caches cleared before each rep",
                     "median_pairs_per_s": round(tiny_ps, 1), "rep_seconds": [round(t, 4) for t in tiny_t]},
        "tinytool_low_level": {"what": "HermesFormat.parse + sim_rl on pre-read tools and ground truth",
                               "median_pairs_per_s": round(low_ps, 1), "rep_seconds": [round(t, 4) for t in low_t]},
        "diagnostics": {
            "reference_without_rouge_us_per_row": round(statistics.median(noro_t) / n * 1e6, 2),
            "reference_us_per_row": round(statistics.median(ref_t) / n * 1e6, 2),
            "tinytool_us_per_row": round(statistics.median(tiny_t) / n * 1e6, 2),
            "tinytool_low_level_us_per_row": round(statistics.median(low_t) / n * 1e6, 2),
            "rouge_only": {
                "what": "the (prediction, truth) string pairs the reference sends to ROUGE-L in one pass: "
                        "rouge_score vs tinytool.rewards.rouge.rouge_l (caches cleared each rep)",
                "n_string_pairs": len(pairs), "unique_string_pairs": len(set(pairs)),
                "reference_pairs_per_s": round(len(pairs) / statistics.median(sref_t), 1),
                "tinytool_pairs_per_s": round(len(pairs) / statistics.median(stiny_t), 1),
                "ratio": round(statistics.median(sref_t) / statistics.median(stiny_t), 2),
                "max_abs_diff": str_max},
        },
        "ratio": round(tiny_ps / ref_ps, 2),
        "ratio_low_level": round(low_ps / ref_ps, 2),
        "max_abs_diff": max(diffs),
        "n_mismatch": len(bad),
        "n_mismatch_low_level": low_bad,
        "n_rows_with_error": len(errors),
        "score_distribution": distribution(ref_vals),
        "by_kind": {k: {"fraction": kinds.count(k) / n,
                        "mean_score": sum(v for v, kk in zip(ref_vals, kinds) if kk == k) / kinds.count(k)}
                    for k in sorted(set(kinds))},
        "goal_met": max(diffs) <= 1e-9 and tiny_ps / ref_ps >= 30,
        "edge_probes": probes,
        "mismatches": [{"index": i, "reference": ref_vals[i], "tinytool": tiny_vals[i], "row": rows[i]}
                       for i in bad[:5]],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")

    d = result["score_distribution"]
    print(f"{n} pairs (seed {args.seed}), {args.reps} alternating reps, {result['machine']['cpu']}")
    print(f"  reference (rouge_score): {ref_ps:10.0f} pairs/s   reps {[round(t, 3) for t in ref_t]}")
    print(f"  tinytool score_row     : {tiny_ps:10.0f} pairs/s   reps {[round(t, 3) for t in tiny_t]}")
    print(f"  tinytool parse+sim_rl  : {low_ps:10.0f} pairs/s   reps {[round(t, 3) for t in low_t]}")
    print(f"  ratio {tiny_ps / ref_ps:.1f}x (low level {low_ps / ref_ps:.1f}x), goal >= 30x")
    print(f"  max |Δ| {max(diffs):.3g}, {len(bad)} pairs with |Δ| > 1e-9, {len(errors)} rows with errors")
    print(f"  scores: -1 {d['format_failure_-1']:.1%}, 1 {d['exactly_1']:.1%}, 0 {d['exactly_0']:.1%}, "
          f"between {d['strictly_between_0_and_1']:.1%}, mean {d['mean']:.3f}; "
          f"unique completions {unique_completions:.1%}")
    dg = result["diagnostics"]
    ro = dg["rouge_only"]
    print(f"  µs/row: reference {dg['reference_us_per_row']} (without ROUGE {dg['reference_without_rouge_us_per_row']}),"
          f" tinytool {dg['tinytool_us_per_row']}, low level {dg['tinytool_low_level_us_per_row']}")
    print(f"  ROUGE-L alone on {ro['n_string_pairs']} string pairs ({ro['unique_string_pairs']} unique): "
          f"{ro['reference_pairs_per_s']:.0f} vs {ro['tinytool_pairs_per_s']:.0f} pairs/s = {ro['ratio']}x, "
          f"max |Δ| {ro['max_abs_diff']:.3g}")
    disagree = [k for k, v in probes.items() if not v["agree"]]
    print(f"  edge probes: {len(probes) - len(disagree)}/{len(probes)} agree")
    for k in disagree:
        print(f"    differ: {k}: reference {probes[k]['reference']}, tinytool {probes[k]['tinytool']}")
    for m in result["mismatches"]:
        print(f"  MISMATCH #{m['index']}: ref {m['reference']!r} tiny {m['tinytool']!r}\n"
              f"    {json.dumps(m['row'], ensure_ascii=False)[:600]}")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    if args.profile:
        print(profile_tinytool(rows, args.top))


if __name__ == "__main__":
    main()
