"""Copy bias: while a call's argument value is written, tokens that keep it a copy of what the request states are
preferred.

A small model's commonest calling failure is a wrong value, and many wrong values are miscopies of a value the
request states: a name misspelt ("Cesar Salad" for "Caesar Salad"), cut short ("Maha" for "Mauryan Empire"), a number
that stops early (5000 for "$5,000,000"). A `CopySpec` holds the request's text and the numbers it states; while a
row writes an argument's value (any depth inside the arguments object, a key excluded), its `CopyRow` names the tokens
that keep the value a copy, and `CopyRows` adds ``bias`` to their logits:

- in a string value: the string written so far plus the token's text is a span of the request's text (case ignored)
  that starts at a word's start (the character before it is neither a letter nor a digit), so "20" is no copy of
  "120". A token that closes the string counts where the span it completes ends at a word's end in the request (the
  next character is neither a letter nor a digit), so a name is not cut inside a word; where a value is about to start,
  a bare quote counts, and a token that opens a string with more counts for what it writes after the quote.
- in a number: the number written so far plus the token's text starts a number the request states, in any form it
  may be written as (`tinytool.llm.guard.stated_values`: thousands separators dropped, ``5%`` also 0.05, ``2
  million`` also 2000000); where what is written is such a number whole, the tokens that end a number count too.

Nothing is masked: a bias of b multiplies a copying token's odds by e^b, so the rule moves the model's choice only
where it was close, and a value the model writes in another form than the request's (a date, a unit, a value to
infer) stays the model's. It applies after the tools' grammar (a token the grammar refused stays refused), in
formats whose calls are JSON objects in their own call blocks (`tinytool.formats.CallSyntax.guard`), on single-turn
requests: what the user's last message states.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tinytool.errors import UserInputError
from tinytool.formats import CallSyntax, PromptFormat, formats_with
from tinytool.llm.guard import request_text, stated_values
from tinytool.llm.rules import ReadingRule, register

#: the longest token text looked up (longer tokens are never a copy's next piece)
LONGEST = 24
#: the characters that may follow a string's closing quote in a token that closes it
_AFTER_CLOSE = set(",}] \n")
_NUMBER_CHARS = set("0123456789.-")


def _form(value: float) -> str:
    """A number as JSON writes it: a whole number without a fraction."""
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else repr(value)


@dataclass(frozen=True)
class CopyTokens:
    """A tokenizer's vocabulary read for copying: token ids by their text, lower-cased. ``pieces``: tokens holding
    neither a quote nor a backslash; ``closers``: tokens that close a string (their text before the quote; after it
    only ``,``, ``}``, ``]``, spaces or newlines); ``openers``: tokens that open a string (their text after the quote,
    spaces before it allowed; a bare quote under ""); ``enders``: tokens that end a number (they start with ``,``, ``}`` or ``]``)."""

    pieces: dict[str, list[int]]
    closers: dict[str, list[int]]
    openers: dict[str, list[int]]
    enders: list[int]

    @classmethod
    def read(cls, texts: list[str]) -> CopyTokens:
        """The tables of a vocabulary whose token ``i`` writes ``texts[i]``."""
        pieces: dict[str, list[int]] = {}
        closers: dict[str, list[int]] = {}
        openers: dict[str, list[int]] = {}
        enders: list[int] = []
        for tok, text in enumerate(texts):
            if not text or "\\" in text:
                continue
            low = text.lower()
            if text[0] in ",}]":
                enders.append(tok)
            quotes = text.count('"')
            if quotes == 0:
                if len(text) <= LONGEST:
                    pieces.setdefault(low, []).append(tok)
            elif quotes == 1:
                before, after = low.split('"')
                if set(after) <= _AFTER_CLOSE:
                    closers.setdefault(before, []).append(tok)
                if not before.strip() and not (after and set(after) <= _AFTER_CLOSE):
                    openers.setdefault(after, []).append(tok)
        return cls(pieces, closers, openers, enders)


@dataclass(frozen=True, eq=False)
class CopySpec:
    """What one request states, for copying: its text (lower-cased), the numbers it states in every form JSON may
    write them, how the format writes calls, the answer's ``prefix`` already in the prompt, and the ``bias`` added to
    a copying token's logit."""

    text: str
    numbers: tuple[str, ...]
    syntax: CallSyntax
    prefix: str = ""
    bias: float = 0.0

    def row(self, token_text: Any) -> CopyRow:
        """The state of one decoded row; ``token_text(id)`` is a token's text."""
        return CopyRow(self, token_text)

    def string_tokens(self, written: str, tokens: CopyTokens, opening: bool = False) -> set[int]:
        """The tokens that keep a string value that holds ``written`` so far a span of the request (``opening``: the
        string is not open yet, and its opening tokens are judged by what they write after the quote)."""
        text, low = self.text, written.lower()
        out: set[int] = set()
        table = tokens.openers if opening else tokens.pieces
        if opening:
            out.update(tokens.openers.get("", ()))
        starts = range(len(text)) if not low else _finds(text, low)
        for at in (at for at in starts if at == 0 or not text[at - 1].isalnum()):
            rest = at + len(low)
            for k in range(1, min(LONGEST, len(text) - rest) + 1):
                out.update(table.get(text[rest:rest + k], ()))
            if opening:
                continue
            for k in range(0 if low else 1, min(LONGEST, len(text) - rest) + 1):
                end = rest + k
                if end == len(text) or not text[end].isalnum():
                    out.update(tokens.closers.get(text[rest:end], ()))
        return out

    def number_tokens(self, written: str, tokens: CopyTokens, lead: str = "") -> set[int]:
        """The tokens that keep a number that holds ``written`` so far the start of a number the request states
        (``lead``: the separator's space, not written yet, that a first token may carry)."""
        out: set[int] = set()
        for form in self.numbers:
            if not form.startswith(written):
                continue
            rest = form[len(written):]
            if not rest:
                if written:
                    out.update(tokens.enders)
                continue
            for k in range(1, min(LONGEST, len(rest)) + 1):
                out.update(tokens.pieces.get(rest[:k], ()))
                if lead and not written:
                    out.update(tokens.pieces.get(lead + rest[:k], ()))
        return out


def _finds(text: str, part: str) -> list[int]:
    """Every place ``part`` starts in ``text``."""
    out, at = [], text.find(part)
    while at >= 0:
        out.append(at)
        at = text.find(part, at + 1)
    return out


def where(call: str) -> tuple[str, str] | None:
    """Where a call's JSON text (``call``, after its opening tag) stands: ``("string", written)`` inside a string
    value in its arguments, ``("number", written)`` inside a number there, ``("value", "")`` where a value is about to
    start, None anywhere else (the function's name, a key, between values, the call closed)."""
    stack: list[list[Any]] = []  # [bracket, expecting a key (objects), a value may start]
    in_str = esc = is_key = False
    buf: list[str] = []
    num: list[str] | None = None
    for ch in call:
        if in_str:
            if esc:
                esc = False
                buf.append(ch)
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            else:
                buf.append(ch)
            continue
        if num is not None:
            if ch in _NUMBER_CHARS or ch in "eE+":
                num.append(ch)
                continue
            num = None
        if ch in " \n\t\r":
            continue
        top = stack[-1] if stack else None
        if top is not None:
            top[2] = False
        if ch == '"':
            in_str, buf = True, []
            is_key = top is not None and top[0] == "{" and top[1]
        elif ch in "{[":
            stack.append([ch, ch == "{", ch == "["])
        elif ch in "}]":
            if stack:
                stack.pop()
            if not stack:
                return None
        elif ch == ":" and top is not None:
            top[1], top[2] = False, True
        elif ch == "," and top is not None:
            top[1] = top[0] == "{"
            top[2] = top[0] == "["
        elif ch in _NUMBER_CHARS:
            num = [ch]
    if len(stack) < 2:
        return None
    if in_str:
        return None if is_key else ("string", "".join(buf))
    if num is not None:
        return "number", "".join(num)
    return ("value", "") if stack[-1][2] else None


class CopyRow:
    """One row under a `CopySpec`: the text so far, and the tokens whose logits the bias raises next."""

    def __init__(self, spec: CopySpec, token_text: Any = None):
        self.spec = spec
        self.token_text = token_text
        self.text = spec.prefix

    def advance(self, token: int) -> None:
        """The row took ``token``."""
        self.text += self.token_text(token)

    def favoured(self, tokens: CopyTokens) -> set[int]:
        """The tokens that keep the value being written a copy of the request (none outside a value)."""
        call = self.spec.syntax.open_call(self.text)
        if call is None:
            return set()
        at = where(call)
        if at is None:
            return set()
        kind, written = at
        if kind == "string":
            return self.spec.string_tokens(written, tokens)
        if kind == "number":
            return self.spec.number_tokens(written, tokens)
        # a value is about to start: where the separator's space is not written yet, it comes first (alone, or in
        # the value's first token)
        lead = "" if call[-1:].isspace() else " "
        out = self.spec.string_tokens("", tokens, opening=True) | self.spec.number_tokens("", tokens, lead)
        return out | set(tokens.pieces.get(lead, ())) if lead else out


def apply_bias(rows: list[CopyRow | None], logits: Any, tokens: CopyTokens) -> Any:
    """``logits`` ([rows, vocab]) with each row's bias added to the tokens its `CopyRow` favours (in place)."""
    import torch

    for j, row in enumerate(rows):
        if row is None or not row.spec.bias:
            continue
        ids = row.favoured(tokens)
        if ids:
            idx = torch.tensor(sorted(ids), dtype=torch.long, device=logits.device)
            logits[j, idx] += row.spec.bias
    return logits


def check_format(fmt: PromptFormat) -> None:
    """Raise `UserInputError` when ``fmt`` writes calls the copy bias cannot read (checked where a run starts)."""
    if not fmt.syntax.guard:
        known = formats_with("guard")
        raise UserInputError(f"--copy-bias: the copy bias reads calls written in {' or '.join(known)}, and the format "
                             f"is {fmt.name}", fix=f"use -f {known[-1]}, or leave --copy-bias out")


def copy_spec(conv: Any, fmt: PromptFormat, prefix: str = "", bias: float = 0.0) -> tuple[CopySpec | None, str | None]:
    """The copy spec of ``conv``'s next answer in ``fmt``: its last user message and the numbers it states;
    ``(None, why)`` when the format writes calls another way or the conversation offers no tools."""
    if not fmt.syntax.guard:
        return None, f"the copy bias reads calls written in {' or '.join(formats_with('guard'))}"
    if not getattr(conv, "tools", None):
        return None, "no tools offered"
    text = request_text(conv)
    numbers, _ = stated_values(text)
    forms = tuple(dict.fromkeys(_form(f) for group in numbers for f in group))
    return CopySpec(text.lower(), forms, fmt.syntax, prefix, bias), None


@register
class CopyRows(ReadingRule):
    """The copy bias as a row rule (`tinytool.llm.rules`): a request asks it with its ``rules["copy"]``, a `CopySpec`;
    it raises the logits of copying tokens after the grammar and the value guard have masked."""

    name = "copy"
    order = 20
    switch = "copy_bias"
    single_turn = True

    def __init__(self, client: Any, rows: int):
        super().__init__(client, rows)
        self.tokens = client.memo("copy_tokens", lambda: CopyTokens.read(
            [client.token_text(t) for t in range(len(client.tokenizer))]))

    @classmethod
    def check_run(cls, fmt: Any) -> None:
        check_format(fmt)

    @classmethod
    def for_conversation(cls, conv: Any, fmt: Any, prefix: str = "") -> tuple[Any, str | None]:
        return copy_spec(conv, fmt, prefix)

    @classmethod
    def configure(cls, spec: CopySpec, value: Any) -> CopySpec:
        """The spec with the switch's value as its bias."""
        return CopySpec(spec.text, spec.numbers, spec.syntax, spec.prefix, float(value))

    def begin(self, spec: CopySpec) -> CopyRow:
        return spec.row(self.client.token_text)

    def mask(self, logits: Any) -> Any:
        return apply_bias(self.states, logits, self.tokens)



__all__ = ["CopyRow", "CopyRows", "CopySpec", "CopyTokens", "apply_bias", "check_format", "copy_spec", "where"]
