"""Distinct calls: a turn whose calls repeat one another is decoded again from its least certain repeated value.

Asked for several calls of one function (the weather in two cities, the area of two rooms), a small model often
writes the first call's values again in the second: on BFCL's parallel categories most wrong values are a value
given to the wrong call. Once a row is decoded, `doubted` looks for

- a call that repeats an earlier call of the turn (the same name and arguments): a turn never needs the same call
  twice; or
- where the request states a value that no call of the turn holds (`Leftover`: a number in digits, a quoted string,
  a capitalised name such as a city or a company), a call that gives one of its parameters the value an earlier
  call of the same function gave it: the stated value left over is the one that call was meant to hold ("money
  laundering in San Francisco in 2019 and in Texas in 2018" answered with San Francisco twice).

and names the first token of each repeated value there. One forward pass over prompt and answer gives the model's
certainty at each of those tokens (the log-probability of the token taken less that of the best other token);
`redecode` bans the least certain one's token at that position and decodes the row on from there, under the row's
own rules (its grammar, its guard): the model writes its next choice for that value and whatever follows from it.
A repeated value is taken as fixed only where the value written instead is one the request stated and no call held
(the leftover count falls); otherwise the answer is put back, its token there still banned, and the next round
tries the next choice (a date or an interval two calls rightly share is never traded for a made-up one). A row is
redecoded at most ``rounds`` times; a token banned at a position stays banned there while the prefix before it is
kept.

Off by default (``more``), measured and kept for what it showed: next to wrong values, a parallel request's
commonest failure is a call too few: the answer ends while the request states a value no call holds ("the weather
in Boston, Paris and Rome" answered for two cities). An answer that ends right after its last call while a stated
value is left over is decoded on once from its end, the end of turn banned there (``more``; a number left over does
not count while a call leaves out a numeric parameter: it is that parameter's); the call that comes is kept only
where it is a sibling that takes a value left over (a call of a function the turn called already, whose value for a
parameter an earlier call of it gave is a stated value no call held: the weather in Rome, not a second t-test for a
significance level the first call left out), and the answer is put back as it was otherwise. On BFCL most such calls went to one-call requests, where a second call can only
break the answer: a capitalised name the request states is as often another parameter's value or context ("John
Doe in California", "Zelda on the Switch") as a further call's. Answers with nothing to do are left exactly as they
were, and only the others cost anything (a forward pass and a short decode each).

Measured on BFCL's five non-live categories with the two-hour model, it changed nothing: a repeated call decoded
again became another wrong call (41 answers, none fixed), and a repeated value traded for a value left over fixed
one parallel answer and broke two. The model that repeats a value does not know the next one: its second choice
at the doubted token is not it either. It stays an option, off by default.

This is a decoding rule of the local engine applied after the first pass, not a mask during it: whether a call
repeats is known only once it is written. It reads calls through the format's call syntax (JSON objects in their own
call blocks: `tinytool.formats.CallSyntax.guard`), never through a format's name.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from tinytool.errors import UserInputError
from tinytool.formats import CallSyntax, PromptFormat, formats_with
from tinytool.llm.base import Completion, GenerationConfig, Request
from tinytool.llm.guard import ValueGuard, conversation_guard, request_text
from tinytool.llm.rules import RowRule, register
from tinytool.schema import Conversation

#: the most times one row is decoded again
ROUNDS = 3
#: the help of ``--distinct-calls`` (``eval bfcl``, ``eval demo``)
DISTINCT_HELP = ("Local models, hermes formats: an answer whose calls repeat (the same call twice, or a value given "
                 "twice while the request states one no call holds) is decoded again from its least certain repeated "
                 f"value, that token banned, at most {ROUNDS} rounds (the first answer kept beside it). An "
                 "experiment, off by default: on BFCL's non-live categories it changed nothing (AST -0.2, p 0.43).")


@register
class Ban(RowRule):
    """Tokens a row may not take at its first step (``Request.rules["ban"]``: a collection of token ids), then free.
    Masks after every other rule; where the others allow only banned tokens, the ban gives way (a row is never left
    with nothing to take)."""

    name = "ban"
    order = 50

    def begin(self, spec: Any) -> Any:
        return sorted({int(t) for t in spec}) or None

    def mask(self, logits: Any) -> Any:
        import torch

        for row, banned in enumerate(self.states):
            if not banned:
                continue
            kept = logits[row, banned].clone()
            logits[row, banned] = float("-inf")
            if not torch.isfinite(logits[row]).any():
                logits[row, banned] = kept
        return logits

    def advance(self, tokens: list[int]) -> None:
        self.states = [None] * len(self.states)


@dataclass(frozen=True)
class Value:
    """One argument of one call: its parameter, its value, and where its first character stands in the answer."""

    param: str
    value: Any
    at: int


@dataclass(frozen=True)
class Call:
    """One complete call of an answer: its function, its arguments, and each argument as a `Value`."""

    name: str
    arguments: Any
    values: tuple[Value, ...]


def _value_starts(inner: str) -> dict[str, int]:
    """Where, in ``inner`` (a call's JSON object), the value of each argument one level in starts: its first character
    inside a string's quotes and past a list's or an object's opening brackets (an empty one's closing character)."""
    out: dict[str, int] = {}
    depth, in_str, esc, buf, last, want = 0, False, False, [], None, None
    for i, ch in enumerate(inner):
        if want is not None and depth >= 2 and (ch not in ' \n\t\r"[{' or (in_str and ch == '"')):
            out[want] = i  # a value's first character; an empty string's or list's closing one
            want = None
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
                last = "".join(buf) if depth == 2 and want is None else None
            else:
                buf.append(ch)
            continue
        if ch == '"':
            in_str, buf = True, []
        elif ch == ":" and depth == 2 and last is not None:
            want, last = last, None
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return out


def calls_of(syntax: CallSyntax, text: str) -> list[Call]:
    """The complete calls of ``text`` in ``syntax`` (blocks of JSON calls), each argument with where it starts in
    ``text``; a block that is not a JSON call is left out."""
    out = []
    for start, inner in syntax.blocks(text):
        try:
            obj = json.loads(inner)
        except ValueError:
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get(syntax.name_key), str):
            continue
        args = obj.get(syntax.args_key)
        if not isinstance(args, dict):
            continue
        base = start + len(syntax.call.open)
        starts = _value_starts(inner)
        values = tuple(Value(k, v, base + starts[k]) for k, v in args.items() if k in starts)
        out.append(Call(obj[syntax.name_key], args, values))
    return out


#: a run of capitalised words (a name: "San Francisco", "New York", "Apple")
_NAME = re.compile(r"(?<![\w'])[A-Z][\w'&-]*(?:[ \t]+[A-Z][\w'&-]*)*")
#: where a sentence starts: its first word is capitalised whatever it is
_STARTS = re.compile(r"(?:^|[.!?:;\n])[\s\"'(]*$")


def stated_names(text: str) -> list[str]:
    """The names ``text`` (a user's request) writes capitalised, a run of capitalised words as one; a sentence's
    first word is left out (every sentence starts capitalised), and so is "I"."""
    out = []
    for m in _NAME.finditer(text):
        name = m.group()
        if _STARTS.search(text[:m.start()]):
            name = name.split(None, 1)[1] if " " in name else ""
        if name and name != "I":
            out.append(name)
    return out


@dataclass(frozen=True)
class Leftover:
    """What a request states that a text does not hold yet: the value guard's numbers and quoted strings
    (`tinytool.llm.guard.ValueGuard.left`) and the request's capitalised names (`stated_names`)."""

    guard: ValueGuard | None
    names: tuple[str, ...] = ()

    def __call__(self, text: str) -> tuple[list[Any], list[str]]:
        numbers, strings = self.guard.left(text) if self.guard is not None else ([], [])
        low = text.lower()
        return numbers, strings + [n for n in self.names if n.lower() not in low]


def leftover(conv: Conversation, fmt: PromptFormat) -> Leftover:
    """The `Leftover` of a conversation's next answer: its last user message, its tools."""
    return Leftover(conversation_guard(conv, fmt), tuple(stated_names(request_text(conv))))


def doubted(syntax: CallSyntax, text: str, left: Any = None) -> tuple[str, list[int]]:
    """Where the repeated values of ``text`` start: ``("call", offsets)`` for the first call that repeats an earlier
    call of the turn (every argument of it), else, when ``left(text)`` (the stated values no call holds: a pair of
    lists, as `Leftover` gives them) is not empty, ``("value", offsets)`` for the first call that gives
    a parameter the value an earlier call of its function gave it; ``("", [])`` when nothing repeats."""
    calls = calls_of(syntax, text)
    for k, call in enumerate(calls):
        if call.values and any(c.name == call.name and c.arguments == call.arguments for c in calls[:k]):
            return "call", [v.at for v in call.values]
    if left is None or not any(left(text)):
        return "", []
    for k, call in enumerate(calls):
        earlier = [c for c in calls[:k] if c.name == call.name]
        same = [v.at for v in call.values
                if any(v.param in c.arguments and c.arguments[v.param] == v.value for c in earlier)]
        if same:
            return "value", same
    return "", []


def check_format(fmt: PromptFormat) -> None:
    """Raise `UserInputError` when distinct calls cannot read ``fmt``'s calls (where a run starts, before a model
    loads)."""
    if not fmt.syntax.guard:
        raise UserInputError(f"distinct calls: format {fmt.name!r} does not write each call as a JSON object in its own "
                             f"call block (those that do: {', '.join(formats_with('guard'))})",
                             fix="choose one of those formats, or leave --distinct-calls off")


@dataclass
class _Row:
    """One completion being made distinct: its prompt's tokens, the rules its request asks, its generated tokens,
    and the tokens banned so far at each position of them."""

    prompt: list[int]
    rules: dict[str, Any]
    tokens: list[int]
    left: Any
    banned: dict[int, set[int]] = dataclasses.field(default_factory=dict)
    rounds: int = 0
    kinds: list[str] = dataclasses.field(default_factory=list)
    #: whether the one ``more`` attempt was made
    more: bool = False
    #: the tokens before this round, and what a round's new text must pass to be kept (None: kept whatever it is)
    before: list[int] = dataclasses.field(default_factory=list)
    keep: Any = None


def _margins(client: Any, prompt: list[int], tokens: list[int], positions: list[int]) -> list[float]:
    """For each of ``positions`` (indices into ``tokens``), the log-probability of the token taken there less that
    of the most likely other token, from one forward pass over ``prompt + tokens``."""
    import torch

    ids = torch.tensor([prompt + tokens], device=client.device)
    keep = torch.tensor([len(prompt) - 1 + j for j in positions], device=client.device)
    with torch.inference_mode(), client.decode_autocast():
        logits = client.model(input_ids=ids, logits_to_keep=keep).logits[0].float()
    logp = torch.log_softmax(logits, dim=-1)
    out = []
    for row, j in zip(logp, positions, strict=True):
        taken = float(row[tokens[j]])
        row = row.clone()
        row[tokens[j]] = float("-inf")
        out.append(taken - float(row.max()))
    return out


def _token_at(client: Any, tokens: list[int], offsets: list[int]) -> list[int]:
    """The index of the token of ``tokens`` that holds each character offset of their decoded text: the first
    token whose decoded prefix reaches past the offset, found by bisection (the prefixes' lengths grow with them),
    so a few decodes per offset rather than one per token."""
    def length(j: int) -> int:
        return len(client.tokenizer.decode(tokens[:j + 1], skip_special_tokens=True))

    return sorted({min(bisect.bisect_right(range(len(tokens)), c, key=length), len(tokens) - 1) for c in offsets})


def _holds(value: Any, left: tuple[list[Any], list[str]]) -> bool:
    """Whether ``value`` (an argument's) is one of the stated values ``left`` lists (numbers as their forms,
    strings), or a list holding one."""
    if isinstance(value, list):
        return any(_holds(v, left) for v in value)
    numbers, strings = left
    if isinstance(value, int | float) and not isinstance(value, bool):
        return any(math.isclose(float(value), f, rel_tol=1e-9, abs_tol=1e-12) for forms in numbers for f in forms)
    if isinstance(value, str):
        low = value.strip().lower()
        return bool(low) and any(s.lower() == low or s.lower() in low for s in strings)
    return False


def _for_more(left: Any, calls: list[Call], values: tuple[list[Any], list[str]]) -> tuple[list[Any], list[str]]:
    """The stated values left over (``values``, what ``left`` gave) that may call for one more call: numbers only
    where no call leaves out a numeric parameter of its tool (a number left over then belongs to that parameter: a
    radius of 500 m, not a second search)."""
    numbers, strings = values
    params = getattr(getattr(left, "guard", None), "params", None) or {}
    open_numeric = any(isinstance(schema, dict) and schema.get("type") in ("integer", "number") and key not in c.arguments
                       for c in calls for key, schema in params.get(c.name, {}).items())
    return ([] if open_numeric else numbers), strings


def _count(left: tuple[list[Any], list[str]]) -> int:
    """How many stated values ``left`` lists."""
    return sum(len(part) for part in left)


def _sibling(before: list[Call], after: list[Call], left: tuple[list[Any], list[str]]) -> bool:
    """Whether a call ``after`` adds to ``before`` is a sibling that takes a value left over: a call of a function
    the turn called already, whose value for a parameter an earlier call of that function gave is one of ``left``
    (the weather of a third city, not a second t-test for a significance level the first one left out)."""
    for call in after[len(before):]:
        given = {p for c in before if c.name == call.name for p in c.arguments}
        if any(p in given and _holds(v, left) for p, v in call.arguments.items()):
            return True
    return False


def _plan(client: Any, syntax: CallSyntax, row: _Row, more: bool = False) -> int | None:
    """The position of ``row.tokens`` to decode again from (its banned tokens updated), None when nothing is left
    to do. A repeat (`doubted`) is decoded again from its least certain repeated value, that token banned (a
    repeated value's round kept only where a value left over is then held: ``row.keep``); with ``more``, an answer
    that ended right after its last call while the request states a value no call holds (`Leftover`) is decoded on
    from its end with the end of turn banned, once (kept only where `_sibling` says so)."""
    text = client.tokenizer.decode(row.tokens, skip_special_tokens=True)
    kind, offsets = doubted(syntax, text, row.left)
    if offsets:
        positions = _token_at(client, row.tokens, sorted(offsets))
        margins = _margins(client, row.prompt, row.tokens, positions)
        j = min(zip(margins, positions, strict=True))[1]
        row.kinds.append(kind)
        row.banned = {p: b for p, b in row.banned.items() if p <= j}
        row.banned.setdefault(j, set()).add(row.tokens[j])
        row.before, row.keep = list(row.tokens), None
        if kind == "value":  # kept only where the value now written is one the turn left over
            held = _count(row.left(text))
            row.keep = lambda new: _count(row.left(new)) < held
        return j
    if not more or row.more or row.left is None or not text.rstrip().endswith(syntax.call.close):
        return None
    eos = set(client.eos_ids)
    j = next((k for k, t in enumerate(row.tokens) if t in eos), None)
    calls = calls_of(syntax, text)
    left = _for_more(row.left, calls, row.left(text))
    if j is None or not calls or not any(left):
        return None
    row.more = True
    row.kinds.append("more")
    row.banned = {j: eos}
    row.before = list(row.tokens)
    row.keep = lambda new: _sibling(calls, calls_of(syntax, new), left)
    return j


def _continued(spec: Any, head: str) -> Any:
    """A rule's ``spec`` for a row that goes on after ``head``: a spec that reads the answer from a ``prefix`` (a
    grammar, the value guard) gets ``head`` added to it; any other is kept."""
    if dataclasses.is_dataclass(spec) and any(f.name == "prefix" for f in dataclasses.fields(spec)):
        return dataclasses.replace(spec, prefix=spec.prefix + head)
    return spec


def redecode(client: Any, syntax: CallSyntax, prompts: list[list[int]], rules: list[dict[str, Any]],
             completions: list[Completion], config: GenerationConfig, lefts: list[Any] | None = None,
             rounds: int = ROUNDS, more: bool = False) -> list[tuple[Completion, dict[str, Any]]]:
    """``completions`` (one per prompt: its tokens in ``meta["token_ids"]``) with every one whose calls repeat decoded
    again (see the module's docstring), each with what was done: ``{}`` for a row left as it was, else ``rounds``,
    the ``kinds`` of repeat found each round (``call``, ``value``) and the ``first`` text. ``rules``: what each
    prompt's request asks of the decoding rules (a grammar is continued from the kept prefix); ``lefts``: per prompt,
    the stated values a text leaves over (a `Leftover`), None where unknown; ``more``: also give an answer that
    stops while a stated value is left over one more call (off: measured, it adds calls to one-call requests)."""
    rows = [_Row(list(p), dict(r), list(c.meta.get("token_ids") or []), left)
            for p, r, c, left in zip(prompts, rules, completions, lefts or [None] * len(prompts), strict=True)]
    for _ in range(rounds):
        todo = []
        for i, row in enumerate(rows):
            if row.tokens and row.rounds < rounds:
                j = _plan(client, syntax, row, more)
                if j is not None:
                    todo.append((i, j))
        if not todo:
            break
        ids, asks = [], []
        for i, j in todo:
            row = rows[i]
            head = client.tokenizer.decode(row.tokens[:j], skip_special_tokens=False)
            ask = {k: _continued(v, head) for k, v in row.rules.items()}
            ask["ban"] = row.banned[j]
            ids.append(row.prompt + row.tokens[:j])
            asks.append(ask)
        longest = max(config.max_new_tokens - j for _, j in todo)
        gen = dataclasses.replace(config, max_new_tokens=max(longest, 1), n=1)
        for (i, j), new in zip(todo, client.generate_ids(ids, gen, asks=asks), strict=True):
            row = rows[i]
            row.tokens = row.tokens[:j] + list(new[0].meta.get("token_ids") or [])[:config.max_new_tokens - j]
            row.rounds += 1
            if row.keep is not None and not row.keep(client.tokenizer.decode(row.tokens, skip_special_tokens=True)):
                if j < len(row.tokens):  # what this round took there is not taken again
                    row.banned[j].add(row.tokens[j])
                row.tokens, row.kinds[-1] = row.before, row.kinds[-1] + " (undone)"
    done = []
    for i, row in enumerate(rows):
        if not row.rounds or row.tokens == list(completions[i].meta.get("token_ids") or []):
            done.append((completions[i], {}))
            continue
        comp = client.completion(row.tokens, config, len(row.prompt), Request(messages=[], rules=row.rules))
        done.append((comp, {"rounds": row.rounds, "kinds": row.kinds, "first": completions[i].text}))
    return done


def distinct_completions(client: Any, fmt: PromptFormat, requests: list[Request], convs: list[Conversation],
                         completions: list[list[Completion]], config: GenerationConfig,
                         more: bool = False) -> list[list[Completion]]:
    """``completions`` (per request, as the client made them) with those whose calls repeat decoded again
    (`redecode`; what each request states read from its conversation in ``convs``: `leftover`), what was done in each
    one's ``meta["distinct"]`` (``more``: as `redecode`'s). A client that is not a local model is a
    `UserInputError`."""
    if not hasattr(client, "generate_ids") or not hasattr(client, "model"):
        raise UserInputError(f"distinct calls decode again with a local model; {client.name!r} is not one",
                             fix="use a local model (a directory, hub id or the bundled alias), or leave them off")
    keys = [(i, k) for i, comps in enumerate(completions) for k in range(len(comps))]
    prompts = client.tokenizer([client.render_prompt(requests[i]) for i, _ in keys],
                               add_special_tokens=False)["input_ids"] if keys else []
    lefts = [leftover(conv, fmt) for conv in convs]
    done = redecode(client, fmt.syntax, prompts, [requests[i].rules for i, _ in keys],
                    [completions[i][k] for i, k in keys], config, [lefts[i] for i, _ in keys], more=more)
    out: list[list[Completion]] = [[] for _ in completions]
    for (i, _), (comp, what) in zip(keys, done, strict=True):
        comp.meta["distinct"] = what
        out[i].append(comp)
    return out


__all__ = ["DISTINCT_HELP", "ROUNDS", "Ban", "Call", "Leftover", "Value", "calls_of", "check_format",
           "distinct_completions", "doubted", "leftover", "redecode", "stated_names"]
