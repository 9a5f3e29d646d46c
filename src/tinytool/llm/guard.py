"""Value guard: decoding that keeps a call open while the request states a value that no call holds yet.

A small model's commonest extra call on a one-call request is a leftover value: the first call closes after two or
three arguments and a second call carries the rest (a t-test's significance level, a decay rate, a lightness). A
`ValueGuard` holds what the request states and what the offered tools take; while a call is open, each row's
`GuardRow` refuses every token that would close the call's arguments object as long as

- the request states a value that no call of the turn holds yet (a number in digits, with its percent and
  "million" forms, or a quoted string), and
- the tool being called has a parameter not yet written whose type takes that value (an integer for a whole
  number, a number, a string for a quoted string; an enum only when it lists the value), and
- there are no more such values than such parameters: more values than the call could take belong to another
  call (a parallel request: "the floor area of a room 4 by 5 metres and of one 6 by 3"). A value stated twice
  counts as written once the first is ("7 to the power of 2, then 4 to the power of 7": with 7 and 2 written, the
  4 alone looks like a leftover).

The model then writes another argument instead of closing; where an argument's value has just ended, only a comma
may follow, so the call stays valid JSON. When no stated value is left or no unwritten parameter could take one,
nothing is refused. A call that repeats one the turn already holds ends the turn there (`GuardRow.repeated`,
`ValueGuard.tidy`): a model that writes the same call twice is looping. Under a grammar (`tinytool.llm.constrain`)
the guard applies after the grammar's mask, and where the grammar allows only what the guard refuses, the grammar
wins (`apply_guards`).

Only formats whose call syntax writes each call as a JSON object with its arguments one level in, closed by its own
tag (`tinytool.formats.CallSyntax.guard`: ``hermes``, ``hermes-nothink``), are guarded; the guard reads the calls
through that syntax (its tags, its name key), never through a format's name, and `value_guard` says why it returns
None for others.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from tinytool.errors import UserInputError
from tinytool.formats import CallSyntax, PromptFormat, formats_with
from tinytool.llm.rules import ReadingRule, register
from tinytool.schema import Conversation, Tool

# a number as people write it: a sign only where nothing word-like precedes it, thousands separators, decimals
_NUMBER = re.compile(r"(?<![\w.^])(-?(?:\d{1,3}(?:,\d{3})+(?![\d])|\d+)(?:\.\d+)?)(\s*(?:%|percent\b))?"
                     r"(\s+(?:thousand|million|billion)\b)?", re.IGNORECASE)
_QUOTED = re.compile(r"""(?<![\w])(?:'([^'\n]{1,60})'|"([^"\n]{1,60})")""")
_SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9}
_NUMERIC = {"integer": True, "number": False, "float": False}


def _numbers(text: str) -> list[float]:
    """Every number written in ``text`` (digits only), as floats."""
    out = []
    for m in _NUMBER.finditer(text):
        try:
            out.append(float(m.group(1).replace(",", "")))
        except ValueError:
            continue
    return out


def stated_values(text: str) -> tuple[list[tuple[float, ...]], list[str]]:
    """What ``text`` (a user's request) states: numbers written in digits, each as the values it may be written as
    (``5%`` → 5 and 0.05; ``2 million`` → 2 and 2,000,000), and quoted strings. Numbers in words are left out:
    they count things the request talks about more often than they give a value ("the two sides", "two
    charges")."""
    numbers: list[tuple[float, ...]] = []
    for m in _NUMBER.finditer(text):
        try:
            v = float(m.group(1).replace(",", ""))
        except ValueError:
            continue
        forms = [v]
        if m.group(2):
            forms.append(v / 100)
        if m.group(3):
            forms.append(v * _SCALE[m.group(3).strip().lower()])
        numbers.append(tuple(forms))
    strings = [a or b for a, b in _QUOTED.findall(text)]
    return numbers, [s for s in strings if s.strip()]


def _takes(schema: dict, value: tuple[str, tuple]) -> bool:
    """Whether a parameter of JSON schema ``schema`` takes a stated value (``("n", forms)``: a number and the
    values it may be written as; ``("s", (text,))``: a quoted string)."""
    kind, forms = value
    enum = schema.get("enum")
    if kind == "n" and schema.get("type") in _NUMERIC:
        whole = _NUMERIC[schema["type"]]
        return any((not whole or f == int(f)) and (enum is None or f in enum) for f in forms)
    return kind == "s" and schema.get("type") == "string" and (enum is None or forms[0] in enum)


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


@dataclass
class _Scan:
    """Where a call's JSON text stands: nesting depth, inside a string or not, the keys written one level in (the
    arguments), whether an argument's value has just ended (a string, list or object: only a comma or the close
    may follow) and whether the arguments object has closed."""

    depth: int = 0
    in_str: bool = False
    esc: bool = False
    buf: list[str] = field(default_factory=list)
    last: str | None = None  # the string that just closed at the arguments' level
    keys: set[str] = field(default_factory=set)
    closed: bool = False
    value: bool = False  # the string being read, or the last token, is an argument's value
    ended: bool = False  # an argument's value has just ended

    def copy(self) -> _Scan:
        return _Scan(self.depth, self.in_str, self.esc, list(self.buf), self.last, set(self.keys), self.closed,
                     self.value, self.ended)

    def feed(self, text: str) -> _Scan:
        for ch in text:
            if self.in_str:
                if self.esc:
                    self.esc = False
                elif ch == "\\":
                    self.esc = True
                elif ch == '"':
                    self.in_str = False
                    at_args = self.depth == 2
                    self.last = "".join(self.buf) if at_args and not self.value else None
                    self.ended, self.value = at_args and self.value, False
                else:
                    self.buf.append(ch)
                continue
            if ch in " \n\t\r":
                continue
            if ch == '"':
                self.in_str, self.buf, self.last, self.ended = True, [], None, False
                continue
            self.ended = False
            if ch == ":" and self.depth == 2 and self.last is not None:
                self.keys.add(self.last)
            self.value = ch == ":" and self.depth == 2
            self.last = None
            if ch in "{[":
                self.depth += 1
            elif ch in "}]":
                self.depth -= 1
                self.ended = self.depth == 2
                if self.depth == 1 and ch == "}":
                    self.closed = True
        return self


@dataclass(frozen=True, eq=False)
class ValueGuard:
    """What one request states and what its tools take (see the module's docstring). ``params``: per tool name,
    its parameters' JSON schemas by name; ``syntax``: how the format writes calls; ``prefix``: text the answer starts
    with that is already in the prompt (a call a server forced open)."""

    numbers: tuple[tuple[float, ...], ...]
    strings: tuple[str, ...]
    params: dict[str, dict[str, dict]]
    syntax: CallSyntax
    prefix: str = ""

    def row(self, token_text: Any) -> GuardRow:
        """The state of one decoded row; ``token_text(id)`` is a token's text."""
        return GuardRow(self, token_text)

    def left(self, text: str) -> tuple[list[tuple[float, ...]], list[str]]:
        """The stated values that ``text`` (the turn so far) does not hold."""
        written = _numbers(text)
        low = text.lower()
        numbers = [forms for forms in self.numbers if not any(_same(f, w) for f in forms for w in written)]
        return numbers, [s for s in self.strings if s.lower() not in low]

    def armed(self, text: str, call: str, keys: set[str]) -> bool:
        """Whether the call being written (``call``: its JSON so far; ``keys``: its arguments written) may not
        close yet: stated values no call holds fit its unwritten parameters, and there are no more such values
        than such parameters (more values than the call could take are another call's: a parallel request)."""
        name = self.syntax.call_name(call)
        params = self.params.get(name) if name is not None else None
        if not params:
            return False
        open_params = [s for k, s in params.items() if k not in keys and isinstance(s, dict)]
        if not open_params:
            return False
        numbers, strings = self.left(text)
        values = [("n", forms) for forms in numbers] + [("s", (text_,)) for text_ in strings]
        fits = [[v for v in values if _takes(schema, v)] for schema in open_params]
        taken = {id(v) for fit in fits for v in fit}
        takers = sum(1 for fit in fits if fit)
        return 0 < len(taken) <= takers

    def tidy(self, text: str) -> str:
        """``text`` (the answer after ``prefix``) cut before its first call that repeats an earlier call of the
        turn (the same name and arguments); unchanged when no call repeats."""
        cut = _first_repeat(self.syntax, self.prefix + text)
        return text if cut is None else (self.prefix + text)[:cut].rstrip()[len(self.prefix):]


def _first_repeat(syntax: CallSyntax, text: str) -> int | None:
    """Where in ``text`` the first call block that repeats an earlier one starts (None: no call repeats)."""
    seen: list[Any] = []
    for start, inner in syntax.blocks(text):
        try:
            call = json.loads(inner)
        except ValueError:
            continue
        if call in seen:
            return start
        seen.append(call)
    return None


class GuardRow:
    """One row under a `ValueGuard`: the text so far, and the tokens it may not take next."""

    def __init__(self, guard: ValueGuard, token_text: Any):
        self.guard = guard
        self.token_text = token_text
        self.text = guard.prefix

    def advance(self, token: int) -> None:
        """The row took ``token``."""
        self.text += self.token_text(token)

    def _call(self) -> str | None:
        return self.guard.syntax.open_call(self.text)

    def refused(self, closers: list[tuple[int, str]]) -> tuple[bool, list[int]]:
        """What the row may not take now, given ``closers`` (ids and texts of the tokens that hold a ``}``):
        ``(False, ids)`` refuses those ids; ``(True, [])`` refuses everything but a comma (an argument's value has
        just ended and the call may not close, so only a comma keeps it valid JSON)."""
        call = self._call()
        if call is None:
            return False, []
        scan = _Scan().feed(call)
        if scan.closed or scan.depth < 2 or not self.guard.armed(self.text, call, scan.keys):
            return False, []
        if scan.ended:
            return True, []
        out = []
        for tok, piece in closers:
            after = scan.copy().feed(piece)
            if after.closed and self.guard.armed(self.text + piece, call + piece, after.keys):
                out.append(tok)
        return False, out

    def repeated(self) -> bool:
        """Whether the row's last call, just closed, repeats an earlier call of the turn."""
        syntax = self.guard.syntax
        return self.text.rstrip().endswith(syntax.call.close) and _first_repeat(syntax, self.text) is not None


def apply_guards(rows: list[Any], scores: Any, closers: list[tuple[int, str]], commas: list[int]) -> Any:
    """``scores`` ([rows, vocab]) with -inf where a `GuardRow` of ``rows`` (None: unguarded) refuses a token
    (``closers``: the tokens that hold a ``}``; ``commas``: the tokens that start with a comma); a copy when
    anything is refused, ``scores`` itself otherwise. Applied after a grammar's mask: a row the guard would leave
    nothing to take (a schema that lists its properties in an order, whose last one is written) keeps the
    grammar's choice."""
    import torch

    out = scores
    for j, row in enumerate(rows):
        if row is None:
            continue
        only_comma, toks = row.refused(closers)
        if not only_comma and not toks:
            continue
        guarded = scores[j].clone()
        if only_comma:
            guarded.fill_(float("-inf"))
            guarded[commas] = scores[j, commas]
        else:
            guarded[toks] = float("-inf")
        if not torch.isfinite(guarded).any():
            continue
        if out is scores:
            out = scores.clone()
        out[j] = guarded
    return out


@register
class GuardRows(ReadingRule):
    """The value guard as a row rule (`tinytool.llm.rules`): what a request asks is its ``rules["guard"]``, a row's state is
    a `GuardRow` that reads the model's tokens; it masks after the grammar (`apply_guards`), ends a row at a repeated
    call, and cuts a finished text there (`ValueGuard.tidy`)."""

    name = "guard"
    order = 10
    switch = "value_guard"
    single_turn = True

    def __init__(self, client: Any, rows: int):
        super().__init__(client, rows)
        self.closers, self.commas = client.memo("guard_tokens", lambda: guard_tokens(client.tokenizer))

    @classmethod
    def check_run(cls, fmt: Any) -> None:
        check_format(fmt)

    @classmethod
    def for_conversation(cls, conv: Any, fmt: Any, prefix: str = "") -> tuple[Any, str | None]:
        """The guard of the conversation's last user message and tools (`conversation_guard`)."""
        return conversation_guard(conv, fmt, prefix), None

    @classmethod
    def finish(cls, spec: ValueGuard, text: str) -> str:
        return spec.tidy(text)

    def begin(self, spec: ValueGuard) -> GuardRow:
        return spec.row(self.client.token_text)

    def mask(self, logits: Any) -> Any:
        return apply_guards(self.states, logits, self.closers, self.commas)

    def ends(self, row: int) -> bool:
        state = self.states[row]
        return state is not None and state.repeated()


def _unguarded(fmt: PromptFormat) -> UserInputError:
    """The error of asking for a guard in a format whose calls it cannot read."""
    name = fmt.name
    known = formats_with("guard")
    other = f" (or {', '.join(reversed(known[:-1]))})" if len(known) > 1 else ""
    return UserInputError(f"--value-guard: the value guard reads calls written in {' or '.join(known)}, and the "
                          f"format is {name}", fix=f"use -f {known[-1]}{other}, or leave --value-guard out")


def check_format(fmt: PromptFormat) -> None:
    """Raise `UserInputError` when ``fmt`` writes calls a guard cannot read (asked for a guard, nothing would be
    guarded). Checked once where a run or a server starts; `value_guard` only asks the format."""
    if not fmt.syntax.guard:
        raise _unguarded(fmt)


def value_guard(tools: list[Tool], request: str, fmt: PromptFormat,
                prefix: str = "") -> tuple[ValueGuard | None, str | None]:
    """The guard of one request (``request``: the user's text) offered ``tools`` in ``fmt``, whose answer starts
    with ``prefix`` (in the prompt already): ``(guard, None)``, or ``(None, why)`` when the format writes calls
    another way or no tool is offered."""
    syntax = fmt.syntax
    if not syntax.guard:
        return None, str(_unguarded(fmt))
    if not tools:
        return None, "no tools offered"
    numbers, strings = stated_values(request)
    params = {t.name: dict((t.parameters or {}).get("properties") or {}) for t in tools}
    return ValueGuard(tuple(numbers), tuple(strings), params, syntax, prefix), None


def request_text(conv: Conversation) -> str:
    """What a conversation's next answer answers: its last user message's text ("" when there is none)."""
    asked = next((m.content for m in reversed(conv.messages) if m.role == "user"), None)
    return asked if isinstance(asked, str) else ""


def conversation_guard(conv: Conversation, fmt: PromptFormat, prefix: str = "") -> ValueGuard | None:
    """The guard of a conversation's next answer (starting with ``prefix``): its last user message and its tools
    (None where `value_guard` gives none)."""
    return value_guard(conv.tools, request_text(conv), fmt, prefix)[0]


def guard_tokens(tokenizer: Any) -> tuple[list[tuple[int, str]], list[int]]:
    """The tokens a guard looks at in ``tokenizer``'s vocabulary: the ids and texts of those that hold a ``}``
    (the only ones that can close a call), and the ids of those that start with a comma (spaces before it
    allowed)."""
    closers, commas = [], []
    for tok, piece in enumerate(tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))):
        if not piece or ("}" not in piece and "," not in piece):
            continue
        text = tokenizer.decode([tok], skip_special_tokens=False)
        if "}" in text:
            closers.append((tok, text))
        if text.lstrip().startswith(","):
            commas.append(tok)
    return closers, commas


__all__ = ["GuardRow", "GuardRows", "ValueGuard", "apply_guards", "check_format", "conversation_guard", "guard_tokens",
           "request_text", "stated_values", "value_guard"]
