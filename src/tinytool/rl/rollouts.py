"""Rollouts for GRPO on a CPU or a single GPU without vLLM: a group's prompt is prefilled once.

TRL's own generation repeats each prompt ``G`` times and prefills every copy. `group_rollouts` hands TRL a
``rollout_func`` that runs tinytool's batched generation instead (`tinytool.llm.hf.HFClient`): each distinct
prompt is prefilled once and its ``G`` completions decode from that cache. The prompt is encoded exactly as TRL
encodes it, and the completions come back as token ids, so TRL's loss, masks and logging are unchanged.

Sampling settings HFClient does not implement (top-k, min-p, a repetition penalty, extra generation kwargs)
make the rollouts fall back to TRL's own generation, with a warning, rather than sample differently.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from itertools import groupby
from typing import Any

log = logging.getLogger(__name__)


def unsupported(args: Any) -> list[str]:
    """The sampling settings of ``args`` (a `GRPOConfig`) that `group_rollouts` cannot honour."""
    out = []
    if getattr(args, "top_k", 0):
        out.append(f"top_k={args.top_k}")
    if getattr(args, "min_p", None):
        out.append(f"min_p={args.min_p}")
    if getattr(args, "repetition_penalty", 1.0) != 1.0:
        out.append(f"repetition_penalty={args.repetition_penalty}")
    if getattr(args, "generation_kwargs", None):
        out.append("generation_kwargs")
    if getattr(args, "use_vllm", False):
        out.append("use_vllm")
    return out


def runs(prompts: list[Any]) -> list[tuple[Any, int]]:
    """Consecutive equal prompts as ``(prompt, count)`` (TRL lays a group's rollouts side by side)."""
    return [(p, len(list(g))) for p, g in groupby(prompts)]


def group_rollouts(batch_size: int = 8) -> Callable[[list[Any], Any], dict[str, Any]]:
    """A TRL ``rollout_func``: ``(prompts, trainer) -> {"prompt_ids", "completion_ids", "logprobs"}`` with one
    completion per prompt entry (TRL passes each prompt once per rollout of its group)."""
    clients: dict[int, Any] = {}

    def rollout(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        from tinytool.llm.base import GenerationConfig
        from tinytool.llm.hf import HFClient

        args = trainer.args
        tok = trainer.processing_class
        model = trainer.accelerator.unwrap_model(trainer.model)
        client = clients.get(id(model))
        if client is None:  # no prefix store: the weights change every step
            client = clients[id(model)] = HFClient(model, tok, batch_size=batch_size, bf16=bool(args.bf16),
                                                   prefix_cache_mb=0)
        groups = runs(list(prompts))
        texts = [p if isinstance(p, str) else tok.apply_chat_template(p, tokenize=False, add_generation_prompt=True)
                 for p, _ in groups]
        ids = tok(texts)["input_ids"]  # as TRL encodes a text prompt
        by_count: dict[int, list[int]] = {}
        for i, (_, count) in enumerate(groups):
            by_count.setdefault(count, []).append(i)
        completions: dict[int, list[Any]] = {}
        was_training = model.training
        model.eval()  # no dropout, and the KV cache stays on under activation checkpointing
        try:
            for count, members in by_count.items():
                cfg = GenerationConfig(max_new_tokens=args.max_completion_length, temperature=args.temperature,
                                       top_p=args.top_p, n=count, seed=None)
                for i, outs in zip(members, client.generate_ids([ids[i] for i in members], cfg)):
                    completions[i] = outs
        finally:
            model.train(was_training)
        prompt_ids, completion_ids = [], []
        for i in range(len(groups)):
            for c in completions[i]:
                prompt_ids.append(ids[i])
                completion_ids.append(c.meta["token_ids"] or [tok.pad_token_id])
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None}

    return rollout


__all__ = ["group_rollouts", "runs", "unsupported"]
