"""Token-level training examples shared by the teacher cache and the distillation trainer.

An example is one assistant turn of a conversation (`tinytool.train.examples.sft_examples`): the prompt is
the conversation up to that turn in the chosen format, the completion is the turn with its end-of-turn token.
These are the tokens `tinytool sft` trains on for a single-turn conversation; a multi-turn one it trains as one
sequence with a loss span per turn, where each turn follows the same text as its prompt here when the turns chain. The completion is a contiguous suffix
of the token sequence, so an example is its token ids and the length of its prompt; positions
``n_prompt .. len-1`` are the completion targets (predicted from the logits one position earlier).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tinytool.formats.base import PromptFormat


@dataclass(frozen=True)
class TokenExample:
    """``input_ids[n_prompt:]`` are the completion tokens the loss is computed on."""

    input_ids: list[int]
    n_prompt: int

    @property
    def n_completion(self) -> int:
        return len(self.input_ids) - self.n_prompt


def token_examples(conversations: list[Any], fmt: PromptFormat, tokenizer: Any,
                   max_length: int | None = None) -> tuple[list[TokenExample], int]:
    """Tokenize every assistant turn of ``conversations``; returns ``(examples, dropped)`` where
    ``dropped`` counts examples longer than ``max_length`` (dropped, never truncated: a truncated tool
    call teaches the model to stop mid-JSON) or with no completion token.

    Prompt and completion are tokenized separately and concatenated (as TRL's prompt–completion path
    does), and the end-of-turn token is appended when the completion lacks it, so the teacher cache,
    the distillation loss and SFT see the same tokens.
    """
    from tinytool.train.examples import sft_examples

    pairs, end = sft_examples(conversations, fmt, tokenizer)
    eos = end or tokenizer.eos_token
    if not pairs:
        return [], 0
    prompts = tokenizer([p["prompt"] for p in pairs])["input_ids"]
    completions = tokenizer([p["completion"] for p in pairs], add_special_tokens=False)["input_ids"]
    eos_id = tokenizer.convert_tokens_to_ids(eos) if eos else None
    out: list[TokenExample] = []
    dropped = 0
    for p_ids, c_ids in zip(prompts, completions, strict=True):
        c_ids = list(c_ids)
        if eos_id is not None and (not c_ids or c_ids[-1] != eos_id):
            c_ids.append(eos_id)
        ids = list(p_ids) + c_ids
        if not c_ids or not p_ids or (max_length is not None and len(ids) > max_length):
            dropped += 1
            continue
        out.append(TokenExample(ids, len(p_ids)))
    return out, dropped
