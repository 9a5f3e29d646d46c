"""Call or answer in words, decided by the probability of calling: greedy decoding over the decision, not the token.

Greedy decoding takes the likeliest next token. Where an answer decides between a call and text, the call's opener is
one token (``<`` of ``<tool_call>``) while a text answer may begin with any of many words, so the opener can be the
likeliest token with well under half of the probability: the model, asked whether it calls, leans towards text, and
greedy decoding calls anyway. Sampled answers show it: five answers drawn at temperature 0.7 and put to a vote
(self-consistency, Wang et al. 2023, "Self-Consistency Improves Chain of Thought Reasoning in Language Models", §2;
an answer without a call is one answer, calls with other values are other answers) declined where greedy decoding
called, at no cost in calls. The rule is that vote's decision taken from one forward pass, without sampling.

The rule reads the model's distribution at the point where the answer decides (its first token, after the lead a
text and a call answer share, e.g. an empty reasoning block the model writes first) under the masks of the rules
before it (the tools' grammar: only what it allows counts): the mass of the tokens that begin the format's call
opener is the probability of calling. At or above ``threshold`` the answer is a call (the tokens that do not begin
one are masked, and the row is held to the opener until it is written whole: a grammar that allows text reads a lone
``<`` as text too), below it the answer is text (those that do are masked); then the row is free of the rule. A
threshold of 0.5 calls where the model puts more probability on calling than on not calling; greedy decoding never
makes a call the rule declines at 0.5 in the other direction, so at 0.5 the rule only turns calls into text. A row
whose text leaves the lead (a reasoning block that is not empty) is let go undecided. Single-turn requests only: a
multi-turn step's answer after a tool result decides something else (whether the task is done).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tinytool.errors import UserInputError
from tinytool.llm.rules import RowRule, register
from tinytool.schema import Message

DECIDE_HELP = ("Local models: an answer makes a call only where the model puts at least this probability on starting "
               "one at the point it decides (its first token, after an empty reasoning block), else it answers in "
               "text (eval: single-turn items). 0.5: call where calling is likelier than not; greedy decoding can "
               "call with less, since a text answer spreads its probability over many first words. 0: off.")


def decision_point(fmt: Any) -> tuple[str, str]:
    """``(lead, opener)``: what a text answer and a call answer in ``fmt`` both begin with (the model writes it before
    it decides), and how a call goes on from there up to the function's name."""
    text = fmt.render_assistant(Message(role="assistant", content="tinytooltext"))
    call = fmt.call_prefix()
    at = 0
    while at < min(len(text), len(call)) and text[at] == call[at]:
        at += 1
    return call[:at], call[at:]


@dataclass(frozen=True, eq=False)
class DecideSpec:
    """One request's decision: the lead still to be written before it (what the prompt does not hold yet), the call
    opener, and the threshold."""

    lead: str
    opener: str
    threshold: float = 0.5


class _Row:
    """A row before its decision (what it wrote of the lead so far), or after a decision to call (what it has still to
    write of the opener)."""

    def __init__(self, spec: DecideSpec):
        self.spec = spec
        self.written = ""
        self.opening: str | None = None

    @property
    def deciding(self) -> bool:
        return self.opening is None and self.written == self.spec.lead


def call_tokens(texts: list[str], opener: str) -> list[int]:
    """The tokens (``texts[i]`` token ``i``'s text) that begin a call: their text starts the opener, or holds it whole
    and goes on."""
    return [i for i, t in enumerate(texts) if t and (opener.startswith(t) or t.startswith(opener))]


def decide_rows(rows: list[_Row | None], logits: Any, calls: Any) -> Any:
    """``logits`` with each deciding row's decision masked in: the call's tokens kept where their probability (over
    what the earlier rules left) reaches the row's threshold, the others where it does not; a row whose decision
    would mask every token it may take is left as it is."""
    import torch

    for r, row in enumerate(rows):
        if row is None or not row.deciding:
            continue
        p = torch.softmax(logits[r], -1)
        p_call = float(p[calls].sum())
        keep_call = p_call >= row.spec.threshold
        if (p_call if keep_call else 1.0 - p_call) <= 0.0:
            continue
        not_call = torch_mask_except(logits.shape[-1], calls, logits.device)
        logits[r].masked_fill_(not_call if keep_call else ~not_call, float("-inf"))
    return logits


def torch_mask_except(vocab: int, keep: Any, device: Any) -> Any:
    """A boolean mask over ``vocab`` tokens, True but at ``keep``."""
    import torch

    out = torch.ones(vocab, dtype=torch.bool, device=device)
    out[keep.to(device)] = False
    return out


@register
class DecideRows(RowRule):
    """The decision by probability as a row rule (`tinytool.llm.rules`): a request asks it with its
    ``rules["decide"]``, a `DecideSpec`; it masks after the tools' grammar, before the value guard and the copy
    bias."""

    name = "decide"
    order = 5
    switch = "call_threshold"
    single_turn = True

    @classmethod
    def check_run(cls, fmt: Any) -> None:
        if not decision_point(fmt)[1]:
            raise UserInputError(f"--call-threshold: a call and a text answer in {fmt.name} begin alike, so no token "
                                 "decides between them", fix="use -f hermes-nothink, or leave --call-threshold out")

    @classmethod
    def for_conversation(cls, conv: Any, fmt: Any, prefix: str = "") -> tuple[Any, str | None]:
        if not getattr(conv, "tools", None):
            return None, "no tools offered"
        lead, opener = decision_point(fmt)
        if not opener or not lead.startswith(prefix):
            return None, "the answer's start is already written past the decision"
        return DecideSpec(lead[len(prefix):], opener), None

    @classmethod
    def configure(cls, spec: DecideSpec, value: Any) -> DecideSpec:
        """The spec with the switch's value as its threshold."""
        return DecideSpec(spec.lead, spec.opener, float(value))

    def begin(self, spec: DecideSpec) -> _Row:
        return _Row(spec)

    def calls(self, opener: str) -> Any:
        """The ids of the tokens that begin a call written with ``opener`` (read once per client)."""
        import torch

        def make() -> Any:
            texts = self.client.memo("token_texts", lambda: [self.client.token_text(t)
                                                             for t in range(len(self.client.tokenizer))])
            return torch.tensor(call_tokens(texts, opener), dtype=torch.long)

        return self.client.memo(f"decide_calls:{opener}", make)

    def mask(self, logits: Any) -> Any:
        openers = {row.spec.opener for row in self.states if row is not None and row.deciding}
        for opener in openers:
            rows = [row if row is not None and row.deciding and row.spec.opener == opener else None
                    for row in self.states]
            logits = decide_rows(rows, logits, self.calls(opener).to(logits.device))
        for r, row in enumerate(self.states):
            if row is not None and row.opening:  # a call decided: only the rest of its opener
                held = torch_mask_except(logits.shape[-1], self.calls(row.opening), logits.device)
                if (logits[r].isfinite() & ~held).any():  # never every token (an earlier rule refused the rest)
                    logits[r].masked_fill_(held, float("-inf"))
        return logits

    def advance(self, tokens: list[int]) -> None:
        for r, row in enumerate(self.states):
            if row is None:
                continue
            text = self.client.token_text(tokens[r])
            rest = row.opening if row.opening is not None else row.spec.opener if row.deciding else None
            if rest is not None:  # deciding, or writing the opener of a call decided
                row.opening = rest[len(text):] if text and rest.startswith(text) else ""
                if not row.opening:  # text decided, or the opener written whole: free from here on
                    self.states[r] = None
                continue
            row.written += text
            if not row.spec.lead.startswith(row.written):
                self.states[r] = None  # the row left the lead (a reasoning block that is not empty): undecided


__all__ = ["DECIDE_HELP", "DecideRows", "DecideSpec", "call_tokens", "decide_rows", "decision_point"]
