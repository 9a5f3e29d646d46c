"""Training examples from conversations: per assistant turn, or a whole conversation as one sequence.

Every assistant turn of a conversation is one prompt–completion example (STAR §3.1 trains and distils on
assistant turns only): the prompt is the conversation up to that turn rendered in the chosen format, the
completion is the turn itself with its end-of-turn markup. When a conversation's turns chain (each turn's
prompt is the text before it), it trains as one sequence with a loss span per assistant turn. BOS and the
end-of-turn token are handled here, once, for every trainer.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from tinytool.formats.base import END_MARKERS, PromptFormat
from tinytool.io import check_data_files


def adds_bos(tokenizer: Any) -> bool:
    """Does calling the tokenizer on text prepend a BOS token (Llama 3, Gemma do; SmolLM2, Qwen don't)?"""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return False
    ids = tokenizer("a")["input_ids"]
    return bool(ids) and ids[0] == bos


def end_of_turn_token(tokenizer: Any, target: str) -> str | None:
    """The special token a rendered assistant turn ends with (``<|im_end|>`` for ChatML), if any."""
    text = target.rstrip()
    for cand in (tokenizer.eos_token, *END_MARKERS, *getattr(tokenizer, "all_special_tokens", [])):
        if cand and text.endswith(cand) and _in_vocab(tokenizer, cand):
            return cand
    return None


def _in_vocab(tokenizer: Any, token: str) -> bool:
    """Is ``token`` one token of the vocabulary? (A lookup: building ``get_vocab()`` takes ~20 ms.)"""
    tid = tokenizer.convert_tokens_to_ids(token)
    return tid is not None and (tid != tokenizer.unk_token_id or token == tokenizer.unk_token)


def _turn_pairs(conv: Any, fmt: PromptFormat, tokenizer: Any, strip_bos: str | None) -> list[tuple[dict[str, str], str | None]]:
    """The prompt–completion pairs of one conversation, one per assistant turn (see `sft_examples`), each with
    the end-of-turn token its completion ends with (None if it has none)."""
    pairs = []
    for r in fmt.render_turns(conv, tokenizer):
        if r.target is None:
            continue
        prompt, completion = r.prompt, r.target
        if strip_bos and prompt.startswith(strip_bos):
            prompt = prompt[len(strip_bos):]
        end = end_of_turn_token(tokenizer, completion)
        if end is not None:
            completion = completion.rstrip()
        pairs.append(({"prompt": prompt, "completion": completion}, end))
    return pairs


def turn_pairs(conv: Any, fmt: PromptFormat, tokenizer: Any) -> list[tuple[dict[str, str], str | None]]:
    """The ``{"prompt", "completion"}`` pairs of one conversation, one per assistant turn, shaped as
    `sft_examples` shapes them, each with the end-of-turn token its completion ends with (None if it has none)."""
    return _turn_pairs(conv, fmt, tokenizer, tokenizer.bos_token if adds_bos(tokenizer) else None)


def sft_examples(conversations: list[Any], fmt: PromptFormat, tokenizer: Any) -> tuple[list[dict[str, str]], str | None]:
    """One ``{"prompt", "completion"}`` pair of strings per assistant turn, shaped so that TRL's tokenization
    adds no special token a second time. Returns the pairs and the end-of-turn token.

    TRL appends ``eos_token`` to a completion that does not end with it; a chat template ends a turn with
    ``<|im_end|>\\n``, so the whitespace after the end-of-turn token is cut (it belongs to the next turn's
    prompt) and that token is told to TRL as the EOS. A tokenizer that prepends BOS would double the one the
    chat template already wrote, so the template's one is cut.
    """
    strip_bos = tokenizer.bos_token if adds_bos(tokenizer) else None
    pairs = [p for conv in conversations for p in _turn_pairs(conv, fmt, tokenizer, strip_bos)]
    return [p for p, _ in pairs], next((e for _, e in pairs if e), None)


@dataclass
class TrainText:
    """One training sequence: its text and the character spans of the assistant turns the loss falls on."""

    text: str
    spans: list[tuple[int, int]]


@dataclass
class ConversationTexts:
    """The ways to train one conversation: ``whole``, one sequence with a loss span per assistant turn (None
    when its turns do not chain), and ``turns``, one sequence per assistant turn."""

    whole: TrainText | None
    turns: list[TrainText]


def whole_conversations(conversations: list[Any], fmt: PromptFormat,
                        tokenizer: Any) -> tuple[list[ConversationTexts], str | None]:
    """For each conversation, the sequences that train every assistant turn of it, and the end-of-turn token.

    When each turn's prompt is the previous prompt plus the previous turn (true of the formats here for a
    conversation that keeps its history), the conversation is one sequence with a loss span per assistant turn:
    one forward pass trains all its turns, instead of one example per turn that re-reads the same tool listing
    and history each time (in multi-step data that repetition is most of the tokens). The loss is the same:
    each turn is predicted from exactly the prompt it would have had alone. A conversation whose history is
    rewritten between turns (reasoning dropped from earlier turns, say) has no whole sequence. The per-turn
    sequences are always given too: a length limit that the whole conversation exceeds can still keep its
    shorter turns.
    """
    strip_bos = tokenizer.bos_token if adds_bos(tokenizer) else None
    out: list[ConversationTexts] = []
    end: str | None = None
    for conv in conversations:
        pairs = _turn_pairs(conv, fmt, tokenizer, strip_bos)
        end = end or next((e for _, e in pairs if e), None)
        eos = end or tokenizer.eos_token or ""
        turns = []
        for p, e in pairs:
            c = p["completion"] if e else p["completion"] + eos  # what TRL would have appended
            turns.append(TrainText(p["prompt"] + c, [(len(p["prompt"]), len(p["prompt"]) + len(c))]))
        chained = len(pairs) > 1 and all(e is not None for _, e in pairs) and all(
            nxt["prompt"].startswith(cur["prompt"] + cur["completion"])
            for (cur, _), (nxt, _) in itertools.pairwise(pairs))
        whole = None
        if chained:
            last = pairs[-1][0]
            spans = [(len(p["prompt"]), len(p["prompt"]) + len(p["completion"])) for p, _ in pairs]
            whole = TrainText(last["prompt"] + last["completion"], spans)
        out.append(ConversationTexts(whole, turns))
    return out, end


def located_conversations(paths: list[str]) -> tuple[list[Any], list[str]]:
    """Every `Conversation` of the given JSONL files (errors name file, line and field), and where each one is
    (``file:line``)."""
    from tinytool.schema import iter_jsonl

    convs: list[Any] = []
    where: list[str] = []
    for p in paths:
        check_data_files([p])
        for line, conv in iter_jsonl(p):
            convs.append(conv)
            where.append(f"{p}:{line}")
    return convs, where


def read_conversations(paths: list[str]) -> list[Any]:
    """Every `Conversation` of the given JSONL files (errors name file, line and field)."""
    return located_conversations(paths)[0]


__all__ = ["ConversationTexts", "TrainText", "adds_bos", "end_of_turn_token", "located_conversations",
           "read_conversations", "sft_examples", "turn_pairs", "whole_conversations"]
