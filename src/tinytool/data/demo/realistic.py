"""Requests the way people write them: a rewrite of a task's request that keeps every value it states.

The generator's phrasings are tidy one-sentence commands. People open with a greeting, give context that does
not matter, ask in one sentence of several, write in lower case, shorten words ("pls", "u") and make typos.
`casual` turns a tidy request into such a message; what the request asks, and every value it states, stays as
it was, so the task's answer (its calls, or its reply) is still right:

- words that carry a value are never touched: a word that occurs in one of the task's string arguments, one
  with a digit, a number in words, or a capitalised word other than the first (a name, a place); a value said
  in other words ("quarterly" for 4, "nonstop only" for true) may get a typo, as it would from a person;
- the added sentences (openings, context, sign-offs) name no value, no tool and no action;
- train and dev draw them from separate pools, so the dev split's realistic requests use wording the training
  data never had.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from random import Random
from typing import Any

from tinytool.data.demo.catalog.base import NUMBER_WORDS

#: greetings and openers; the request follows after a space
OPENINGS = (
    "hey!", "hi there,", "hello,", "ok so", "quick question:", "hey, hope you're doing well.", "morning!", "so,",
    "hi!", "hey there.", "good evening,", "ok,", "alright,", "yo,", "hi, I need a hand.", "hello there!",
)
OPENINGS_DEV = ("hiya,", "greetings!", "sorry to bother you,", "hey hey,", "um, hi.")

#: context that does not matter for the request (no value, no tool, no action)
CONTEXT = (
    "I've been meaning to sort this out all week.", "Long day, sorry if this is messy.",
    "I'm on my phone so excuse the typos.", "This is for a project I'm doing.", "My manager keeps asking about it.",
    "I'm trying to get organised before the weekend.", "I keep forgetting to do this.",
    "My friend said you could help with this kind of thing.", "I'm new to all of this.",
    "It's been a hectic morning.", "Just got back home.", "I'm helping my parents with a few things.",
    "Trying to get ahead of things today.", "I'd do it myself but I'm swamped.",
)
CONTEXT_DEV = ("My cat just knocked over my coffee, anyway.", "I only have a minute before my next meeting.",
               "Been putting this off for ages.", "Bear with me, I'm multitasking.")

#: sign-offs
CLOSINGS = ("thanks!", "thx", "thanks a lot.", "appreciate it!", "cheers.", "that's all for now.", "ty!",
            "thank you so much.", "much appreciated.", "thanks in advance!")
CLOSINGS_DEV = ("you're a lifesaver.", "many thanks.", "ta.")

#: the short forms people type
SHORT = {"please": ("pls", "plz"), "you": ("u",), "thanks": ("thx",), "are": ("r",), "because": ("cuz", "bc"),
         "want to": ("wanna",), "going to": ("gonna",), "tonight": ("tonite",), "okay": ("ok",)}

#: chances of each change; a rewrite makes at least one
OPENING_P, CONTEXT_P, CLOSING_P, LOWER_P, SHORT_P, TYPO_P = 0.5, 0.4, 0.4, 0.5, 0.3, 0.3

_WORD = re.compile(r"[A-Za-z']+")
#: quoted text (a message body, a title, a search phrase) is a value even where no call shows it
_QUOTED = re.compile(r"“[^”]*”|\"[^\"]*\"|(?<!\w)'[^']*'(?!\w)")


def _outside_quotes(text: str) -> Callable[[int, int], bool]:
    """A test of whether ``text[start:end]`` lies outside every quoted span of ``text`` (found once)."""
    spans = [m.span() for m in _QUOTED.finditer(text)]
    return lambda start, end: not any(a < end and start < b for a, b in spans)


def strings(values: Iterable[Any]) -> list[str]:
    """The string values among ``values``, nested lists and mappings included."""
    out: list[str] = []
    stack = list(values)
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return out


def value_words(values: Iterable[Any]) -> frozenset[str]:
    """The lower-cased words of the string values among ``values`` (nested lists and mappings included)."""
    return frozenset(w.lower() for v in strings(values) for w in _WORD.findall(v))


def _free(word: str, index: int, protected: frozenset[str]) -> bool:
    """May a word be changed: no digit, no number in words ("eight portions"), not a value's word, not capitalised
    past the first word."""
    return (word.isalpha() and word.lower() not in protected and word.lower() not in NUMBER_WORDS
            and (index == 0 or word[:1].islower()) and word not in ("I",))


def _short_forms(text: str, protected: frozenset[str], r: Random) -> str:
    """One phrase written the short way ("please" → "pls") where it is not part of a value."""
    free = _outside_quotes(text)
    found = [(m.start(), m.end(), long) for long in SHORT
             for m in re.finditer(rf"\b{long}\b", text, flags=re.IGNORECASE)
             if not set(long.split()) & protected and free(m.start(), m.end())]
    if not found:
        return text
    start, end, long = r.choice(found)
    short = r.choice(SHORT[long])
    return text[:start] + (short.capitalize() if text[start].isupper() and start == 0 else short) + text[end:]


#: a number and the space before a word: that word is the number's unit
_AFTER_NUMBER = re.compile(r"\d\s+$")


def _typo(text: str, protected: frozenset[str], r: Random) -> str:
    """One typo (two neighbouring letters swapped, or one doubled or dropped) in a free word of 5+ letters; never
    in the unit right after a number ("5 percent" is 0.05 where a rate is a decimal: the unit is the value's)."""
    unquoted = _outside_quotes(text)
    words = [(m.start(), m.group()) for i, m in enumerate(_WORD.finditer(text))
             if len(m.group()) >= 5 and _free(m.group(), i, protected) and unquoted(m.start(), m.end())
             and not _AFTER_NUMBER.search(text, 0, m.start())]
    if not words:
        return text
    start, w = r.choice(words)
    j = r.randrange(1, len(w) - 2)
    kind = r.random()
    if kind < 0.5:
        new = w[:j] + w[j + 1] + w[j] + w[j + 2:]
    elif kind < 0.75:
        new = w[:j] + w[j] + w[j:]
    else:
        new = w[:j] + w[j + 1:]
    return text[:start] + new + text[start + len(w):]


def _lower(text: str, protected: frozenset[str], said: Sequence[str]) -> str:
    """Lower-case the first letter (when the first word is free) and drop a closing full stop (unless a value
    in ``said`` ends the text with it)."""
    m = _WORD.search(text)
    if m is not None and m.start() == 0 and _free(m.group(), 0, protected) and m.group()[1:].islower():
        text = text[0].lower() + text[1:]
    if text.endswith(".") and not text.endswith("..") and not any(v and text.endswith(v) for v in said):
        return text[:-1]
    return text


def casual(text: str, values: Iterable[Any], r: Random, split: str) -> str:
    """``text`` (a tidy request) as a person might write it, every word of ``values`` (the task's argument
    values) kept as it is: an opening, a sentence of context, a sign-off, lower case, short forms and a typo,
    each with its chance (at least one). Dev draws the added sentences from its own pools as well."""
    said = strings(values)
    protected = value_words(said)
    dev = split == "dev"
    pick = (lambda train, extra: r.choice(train + extra if dev else train))
    for _ in range(8):
        ask = text
        if r.random() < SHORT_P:
            ask = _short_forms(ask, protected, r)
        if r.random() < TYPO_P:
            ask = _typo(ask, protected, r)
        if r.random() < LOWER_P:
            ask = _lower(ask, protected, said)
        parts: list[str] = [ask]
        if r.random() < CONTEXT_P:
            context = pick(CONTEXT, CONTEXT_DEV)
            parts.insert(0 if r.random() < 0.7 else 1, context)
        if r.random() < OPENING_P:
            parts.insert(0, pick(OPENINGS, OPENINGS_DEV))
        if r.random() < CLOSING_P:
            if parts[-1][-1:].isalnum():  # an ask without its full stop runs on into the sign-off
                parts[-1] += ","
            parts.append(pick(CLOSINGS, CLOSINGS_DEV))
        out = " ".join(parts)
        if out != text:
            return out
    return f"{pick(OPENINGS, OPENINGS_DEV)} {text}"


def call_values(calls: Sequence[Any]) -> list[Any]:
    """The argument values of tool calls (`tinytool.schema.ToolCall`s)."""
    return [v for c in calls for v in c.arguments.values()]


__all__ = ["CLOSINGS", "CONTEXT", "OPENINGS", "SHORT", "call_values", "casual", "strings", "value_words"]
