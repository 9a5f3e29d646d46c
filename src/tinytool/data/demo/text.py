"""Surface text for demo tasks: how requests are combined, how the assistant declines or asks back.

Parallel requests are phrased in the compact forms real users (and BFCL) use, not only as two
sentences glued with "Also": values listed inside one slot ("in Paris, Rome and Oslo"), "both A and
B", "... respectively", "then repeat for ...", numbered and bulleted lists.
"""

from __future__ import annotations

from collections.abc import Sequence
from random import Random
from typing import Any

from tinytool.data.demo import values as pv
from tinytool.schema import Message, Tool, ToolCall

# ---- listing several values inside one slot -----------------------------------------------------


def join_values(texts: Sequence[str], r: Random) -> str:
    """``A and B`` / ``both A and B`` / ``A, B and C`` / ``each of A, B, and C``."""
    if len(texts) == 2:
        return r.choice((f"{texts[0]} and {texts[1]}", f"{texts[0]} and {texts[1]}", f"both {texts[0]} and {texts[1]}",
                         f"{texts[0]} as well as {texts[1]}"))
    head = ", ".join(texts[:-1])
    comma = "," if r.random() < 0.4 else ""
    return r.choice((f"{head}{comma} and {texts[-1]}", f"{head}{comma} and {texts[-1]}", f"each of {head}{comma} and {texts[-1]}"))


def plain_join(texts: Sequence[str], r: Random) -> str:
    if len(texts) == 2:
        return f"{texts[0]} and {texts[1]}"
    return f"{', '.join(texts[:-1])} and {texts[-1]}"


REPEAT_TAILS = (
    "Then repeat for {rest}.", "Then do the same for {rest}.", "Repeat that for {rest} too.", "Same for {rest}, please.",
    "And again for {rest}.", "Then repeat it with {rest}.", "Do it once more for {rest}.",
)
REPEAT_TAILS_DEV = ("After that, run it again for {rest}.",)


def repeat_tail(rest: Sequence[str], r: Random, split: str) -> str:
    pool = REPEAT_TAILS + (REPEAT_TAILS_DEV if split == "dev" else ())
    return r.choice(pool).format(rest=plain_join(rest, r) if len(rest) > 1 else rest[0])


# ---- joining whole requests -----------------------------------------------------------------------


def ensure_end(text: str) -> str:
    return text if text and text[-1] in ".?!:" else text + "."


def decap(text: str) -> str:
    """Lower-case the first letter of a sentence that continues another ("Also, what's ...")."""
    if len(text) > 1 and text[0].isupper() and text[1].islower() and not text.startswith(("I ", "I'")):
        return text[0].lower() + text[1:]
    return text


def strip_end(text: str) -> str:
    return text[:-1] if text and text[-1] in ".?!" else text


def join_requests(parts: Sequence[str], r: Random, split: str) -> str:
    """Combine independent requests into one user turn, in one of many shapes."""
    n = len(parts)
    k = r.random()
    if k < 0.14:
        intro = r.choice(("", "Please do the following:\n", "A few things:\n", "Can you:\n", "I need these done:\n"))
        return intro + "\n".join(f"{i + 1}. {p}" for i, p in enumerate(parts))
    if k < 0.22:
        intro = r.choice(("", "Quick list:\n", "Todo:\n"))
        return intro + "\n".join(f"- {p}" for p in parts)
    if k < 0.30 and n == 2:
        return f"{r.choice(('Two things: ', 'Two requests: ', 'I need two things. '))}(1) {strip_end(parts[0])}; (2) {decap(strip_end(parts[1]))}."
    if k < 0.40 and n <= 3:
        words = ("First, ", "Then, ", "Finally, ") if n == 3 else ("First, ", "Then, ")
        words = ("First, ", "Second, ", "Third, ") if r.random() < 0.4 else words
        return " ".join(w + decap(ensure_end(p)) for w, p in zip(words, parts))
    if k < 0.50 and n == 2:
        return f"{strip_end(parts[0])}; {r.choice(('', 'and ', 'also '))}{decap(ensure_end(parts[1]))}"
    if k < 0.58 and n == 2:
        return f"{strip_end(parts[0])}, and {decap(ensure_end(parts[1]))}"
    if split == "dev" and k < 0.66:
        return f"{ensure_end(parts[0])} " + " ".join(f"On top of that, {decap(ensure_end(p))}" for p in parts[1:])
    connectors = ("Also, ", "Also ", "And ", "Plus, ", "While you're at it, ", "Oh, and ", "In addition, ", "And also ")
    out = ensure_end(parts[0])
    for i, p in enumerate(parts[1:], start=1):
        c = "And finally, " if i == n - 1 and n > 2 and r.random() < 0.5 else r.choice(connectors)
        out += f" {c}{decap(ensure_end(p))}"
    return out


def call_plan(r: Random) -> list[int]:
    """How many calls each tool of a parallel_multiple request gets: two to four different tools, some asked
    twice, two to four calls in all (BFCL's parallel_multiple asks for two to four calls; a model that only
    ever sees two or three learns to pad the answer with calls nobody asked for)."""
    n_tools = r.choices((2, 3, 4), (0.6, 0.3, 0.1))[0]
    total = r.choices(range(n_tools, 5), (0.5, 0.25, 0.25)[: 5 - n_tools])[0]
    counts = [1] * n_tools
    for i in r.sample(range(n_tools), total - n_tools):
        counts[i] = 2
    return counts


# ---- what the assistant says when it does not call a tool ---------------------------------------------

REFUSALS = (
    "Sorry, I can't {need} here — none of the available tools does that. I can {have} if that helps.",
    "I don't have a tool to {need}. The tools available to me can only {have}.",
    "Unfortunately I can't help with that: the available functions let me {have}, but none of them can {need}.",
    "None of the provided functions can {need}, so I'm not able to do that request.",
    "I'm unable to {need} with the tools I have access to.",
    "That's outside what I can do here: I have no way to {need}. I could {have}, though.",
)
ASKS = (
    "Sure — which {label} should I use?",
    "I can {gist}, but I need the {label} first. What is it?",
    "Could you tell me the {label}?",
    "What's the {label}? I need it to {gist}.",
    "Happy to help. Which {label} do you mean?",
    "To {gist} I'll need the {label} — could you share it?",
)

CHITCHAT = (
    ("Who wrote Pride and Prejudice?", "Pride and Prejudice was written by Jane Austen."),
    ("What's the capital of Australia?", "The capital of Australia is Canberra."),
    ("Tell me a joke about computers.", "Why did the computer go to the doctor? It had a virus!"),
    ("How many legs does a spider have?", "A spider has eight legs."),
    ("What does 'bonjour' mean?", "'Bonjour' is French for 'hello' or 'good day'."),
    ("Can you give me a synonym for 'happy'?", "Sure — 'joyful', 'cheerful' or 'content' all work."),
    ("At what temperature does water boil at sea level?", "Water boils at 100 °C (212 °F) at sea level."),
    ("Who painted the Mona Lisa?", "The Mona Lisa was painted by Leonardo da Vinci."),
    ("Write a haiku about autumn.", "Crisp leaves drift and fall,\namber light on quiet paths —\nthe year exhales slow."),
    ("What's the largest planet in our solar system?", "Jupiter is the largest planet in our solar system."),
    ("How do you say 'thank you' in Japanese?", "'Thank you' in Japanese is 'arigatou' (ありがとう)."),
    ("Thanks, that's all for now!", "You're welcome! Let me know if you need anything else."),
    ("Explain photosynthesis in one sentence.",
     "Photosynthesis is how plants use light to turn water and carbon dioxide into sugar and oxygen."),
    ("Hi there! How are you?", "Hi! I'm doing well, thanks. How can I help you today?"),
    ("Give me a tip for staying focused while studying.",
     "Try working in 25-minute blocks with short breaks in between (the Pomodoro technique)."),
    ("In what year did people first walk on the Moon?", "People first walked on the Moon in 1969, during Apollo 11."),
    ("What's the difference between weather and climate?",
     "Weather is the short-term state of the atmosphere; climate is its average pattern over decades."),
    ("Recommend a classic novel to read this summer.", "Try 'Moby-Dick' by Herman Melville — a sweeping sea adventure."),
    ("What is the chemical symbol for gold?", "The chemical symbol for gold is Au."),
    ("How many continents are there?", "There are seven continents."),
    ("Who developed the theory of general relativity?", "Albert Einstein developed the theory of general relativity."),
    ("What's a good name for a golden retriever puppy?", "How about Sunny, Maple or Biscuit?"),
    ("Translate 'good morning' into Spanish.", "'Good morning' in Spanish is 'buenos días'."),
    ("What's the tallest mountain in the world?", "Mount Everest, at about 8,849 m above sea level."),
    ("Can you explain what an API is in simple terms?",
     "An API is a set of rules that lets one program ask another program for data or actions."),
    ("What is the square root of 144?", "The square root of 144 is 12."),
    ("Which ocean is the largest?", "The Pacific Ocean is the largest."),
    ("Summarize the plot of Romeo and Juliet in one line.",
     "Two young lovers from feuding families in Verona marry in secret, and a chain of misunderstandings ends in both their deaths."),
    ("Good night!", "Good night — sleep well!"),
    ("What does HTTP stand for?", "HTTP stands for Hypertext Transfer Protocol."),
    ("Is a tomato a fruit or a vegetable?", "Botanically a tomato is a fruit, though it is cooked and eaten like a vegetable."),
    ("How many minutes are in a day?", "There are 1,440 minutes in a day."),
)


#: open questions no tool answers: knowledge, explanations, advice and writing, over wide value pools so that a
#: place, a person or a number in a request is no sign by itself that a call is due
_OPEN = (
    "What is the capital of {country}?", "Which languages do people speak in {country}?",
    "Tell me something interesting about the history of {city}.", "What is {city} best known for?",
    "Who founded {company}, and why?", "Who is {person}?", "What do you know about {person}?",
    "Explain {concept} as if I were ten.", "What's the difference between {concept} and {concept2}?",
    "Why does {concept} matter?", "Write a short poem about {topic}.", "Give me three fun facts about {topic}.",
    "What are the basic rules of {sport}?", "How can I get better at {skill}?",
    "Any tips for learning {language} as an adult?", "Is {city} older than {city2}?",
    "Write a two-line toast for {person}'s retirement.", "What's a catchy slogan for {company}?",
    "Why is {number} an interesting number?", "What happened to {company} after {year}?",
    "Summarize the debate around {topic} in two sentences.", "Suggest a team name for a {sport} club in {city}.",
)
_CONCEPTS = ("recursion", "plate tectonics", "supply and demand", "the greenhouse effect", "natural selection",
             "opportunity cost", "the water cycle", "herd immunity", "entropy", "the placebo effect", "jet lag",
             "game theory", "public-key encryption", "photosynthesis", "the scientific method", "continental drift",
             "a central bank", "the immune system", "a black hole", "the Doppler effect", "compound words",
             "impressionism", "a sonnet", "the separation of powers", "machine translation", "cognitive bias")
_OPEN_REPLIES = (
    "None of the available tools can help with that — they {have}.",
    "None of the functions I have covers that; they {have}, so I won't call any of them.",
    "I can't look that up with the tools here: they {have}. I'd rather not guess.",
    "That isn't something my tools do. They {have}; ask me about that and I'll call one.",
)


def open_question(r: Random, have: Sequence[str]) -> tuple[str, str]:
    """A question no offered tool answers and the assistant's reply naming what the tools do (``have``: their
    gists): irrelevance negatives beyond fixed small talk, as the irrelevance-detection set in STAR's training
    mix (STAR §4.1, xLAM-irrelevance) teaches a model to answer without a call."""
    c1, c2 = r.sample(_CONCEPTS, 2)
    t1, t2 = r.sample(pv.CITIES, 2)
    slots = {"country": r.choice(pv.COUNTRIES), "city": t1, "city2": t2, "company": pv.company(r),
             "person": pv.person(r), "concept": c1, "concept2": c2, "topic": r.choice(pv.TOPICS),
             "sport": r.choice(pv.SPORTS), "skill": r.choice(pv.SKILLS), "language": r.choice(pv.LANGUAGES),
             "number": r.choice((7, 12, 42, 73, 108, 365, 1729, 2048)), "year": r.randint(1950, 2020)}
    question = r.choice(_OPEN).format(**slots)
    return question, r.choice(_OPEN_REPLIES).format(have=_what_tools_do(have, r))


#: general questions about what a tool does, asking for no values of it (``{g}``: the tool's gist)
_TOPIC = (
    "How would I {g} by hand?", "What do I need to know before I {g}?", "Why do people {g}?",
    "Is it hard to {g}?", "What's the usual method to {g}?", "In general terms, how do you {g}?",
    "What can go wrong when you {g}?", "Explain what it means to {g}.", "Any advice on how to {g} well?",
    "what's the point of being able to {g}", "When would someone need to {g}?",
)
_TOPIC_REPLIES = (
    ("That's a general question rather than a request to {g} for particular values, so no tool call is needed. "
    "If you give me the details, I can {g} for you."),
    ("You're asking about it in general, not asking me to {g} now, so I'll answer without calling a tool; "
    "tell me the values if you want me to {g}."),
    "No call needed for that: the tool I have would {g} for specific inputs, and you haven't asked for one.",
)


def topic_question(r: Random, gist: str) -> tuple[str, str]:
    """A general question about what an offered tool does (its ``gist``) that asks for no values of it, and a reply
    without a call: the hardest irrelevance negative, the tool itself on offer (a small model tends to call any
    tool whose subject matches the question, inventing the values it was not given)."""
    return r.choice(_TOPIC).format(g=gist), r.choice(_TOPIC_REPLIES).format(g=gist)


def _what_tools_do(have: Sequence[str], r: Random) -> str:
    """The offered tools' gists as one phrase: "book a flight and send an email"."""
    return plain_join(list(have), r) if len(have) > 1 else have[0]


def refusal(need: str, have: Sequence[str], r: Random) -> str:
    return r.choice(REFUSALS).format(need=need, have=_what_tools_do(have, r))


def ask_for(label: str, gist: str, r: Random) -> str:
    return r.choice(ASKS).format(label=label, gist=gist)


def user_turn(text: str) -> Message:
    return Message(role="user", content=text)


def whole_as_int(value: Any) -> Any:
    """``value`` with every whole float written as an int (``200.0`` → ``200``), inside lists and dicts too: a
    call states a whole amount as users and schemas do, so a model does not learn to write ``45.0`` where an
    integer is asked (a JSON ``number`` takes ``200`` as well)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: whole_as_int(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_as_int(v) for v in value]
    return value


def calls_turn(calls: Sequence[tuple[str, dict[str, Any]]]) -> Message:
    return Message(role="assistant", content=None,
                   tool_calls=[ToolCall(name=n, arguments=whole_as_int(a)) for n, a in calls])


def answer_turn(text: str | None) -> Message:
    return Message(role="assistant", content=text)


def offer(rng: Random, tools: Sequence[Any]) -> list[Tool]:
    """The offered tools (anything with a ``.tool`` schema) in a random order: position says nothing."""
    out = [t.tool for t in tools]
    rng.shuffle(out)
    return out
