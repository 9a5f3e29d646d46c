"""Make students: depth-pruned copies of a teacher, and tiny random models for tests.

Depth pruning keeps N of the teacher's decoder layers, either evenly spaced (first and last always
kept) or ranked by importance: a layer that barely changes the hidden state it receives
(high cosine similarity between its input and output, measured on sample text) is the cheapest to
drop — the block-importance criterion used for Minitron-style depth pruning.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tinytool.errors import UserInputError

DEFAULT_SAMPLES = (
    "What's the weather going to be like in Lisbon tomorrow? Use celsius please.",
    'Book a table for 4 at 7pm. <tool_call>\n{"name": "book_table", "arguments": {"people": 4}}\n</tool_call>',
    "Convert 250 US dollars to euros and then send the result to my accountant by email.",
    "<think>The user wants the distance between two points; maps.distance fits.</think>",
    "Sorry, none of the available tools can order a pizza; I can only manage your calendar.",
)


def _keep_error(n_layers: int, keep: int) -> UserInputError:
    return UserInputError(f"--keep-layers must be between 1 and {n_layers} (the teacher's decoder layers), got {keep}",
                          fix=f"choose a number of layers from 1 to {n_layers}, e.g. --keep-layers {max(1, n_layers * 2 // 3)}")


def even_layers(n_layers: int, keep: int) -> list[int]:
    """``keep`` layer indices spread evenly over ``n_layers``, always including the first and last."""
    if not 1 <= keep <= n_layers:
        raise _keep_error(n_layers, keep)
    if keep == 1:
        return [n_layers - 1]
    return sorted({round(i * (n_layers - 1) / (keep - 1)) for i in range(keep)})


def layer_importance(model: Any, tokenizer: Any, texts: Sequence[str] = DEFAULT_SAMPLES) -> list[float]:
    """Per-layer importance ``1 - cos(input, output)`` of each decoder layer's hidden states,
    averaged over the tokens of ``texts``. Low values mark layers that change little."""
    import torch

    layers = model.model.layers
    sums = [0.0] * len(layers)
    counts = [0] * len(layers)
    captured: dict[int, Any] = {}

    def hook(idx: int):
        def fn(module, args, kwargs, output):
            x_in = args[0] if args else kwargs["hidden_states"]
            x_out = output[0] if isinstance(output, tuple) else output
            captured[idx] = torch.nn.functional.cosine_similarity(x_in.float(), x_out.float(), dim=-1)
        return fn

    handles = [layer.register_forward_hook(hook(i), with_kwargs=True) for i, layer in enumerate(layers)]
    try:
        with torch.no_grad():
            for text in texts:
                ids = tokenizer(text, return_tensors="pt")
                captured.clear()
                model(**ids)
                for i, cos in captured.items():
                    sums[i] += float((1 - cos).sum())
                    counts[i] += cos.numel()
    finally:
        for h in handles:
            h.remove()
    return [s / max(c, 1) for s, c in zip(sums, counts)]


def prune_layers(model: Any, keep: Sequence[int]) -> Any:
    """A copy of ``model`` holding only the decoder layers ``keep`` (in order), with the config,
    per-layer types and attention layer indices (used by the KV cache) renumbered."""
    import torch

    keep = sorted(keep)
    student = copy.deepcopy(model)
    layers = student.model.layers
    student.model.layers = torch.nn.ModuleList([layers[i] for i in keep])
    for new_idx, layer in enumerate(student.model.layers):
        attn = getattr(layer, "self_attn", None)
        if attn is not None and hasattr(attn, "layer_idx"):
            attn.layer_idx = new_idx
    cfg = student.config
    if isinstance(getattr(cfg, "layer_types", None), list):
        cfg.layer_types = [cfg.layer_types[i] for i in keep]
    cfg.num_hidden_layers = len(keep)
    return student


def build_student(
    teacher: str | os.PathLike,
    keep_layers: int,
    out: str | os.PathLike,
    method: str = "even",
    samples: Sequence[str] | None = None,
    cache: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Depth-prune ``teacher`` to ``keep_layers`` layers and save an HF checkpoint (model +
    the teacher's tokenizer) to ``out``. Returns what was kept and why."""
    from tinytool.models.loading import load_model, load_tokenizer

    model = load_model(teacher, cache)
    tok = load_tokenizer(teacher, cache)
    n = model.config.num_hidden_layers
    scores = None
    if method == "even":
        keep = even_layers(n, keep_layers)
    elif method == "importance":
        if not 1 <= keep_layers <= n:
            raise _keep_error(n, keep_layers)
        scores = layer_importance(model, tok, samples or DEFAULT_SAMPLES)
        keep = sorted(sorted(range(n), key=lambda i: -scores[i])[:keep_layers])
    else:
        raise ValueError(f"unknown method {method!r}; use 'even' or 'importance'")
    student = prune_layers(model, keep)
    out = Path(out)
    student.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    info = {"teacher": str(teacher), "teacher_layers": n, "kept": keep, "method": method,
            "parameters": sum(p.numel() for p in student.parameters())}
    if scores is not None:
        info["importance"] = scores
    return info


def tiny_model(tokenizer: Any, layers: int = 2, hidden: int = 64, heads: int = 4, kv_heads: int = 2,
               intermediate: int = 128, seed: int = 0) -> Any:
    """A randomly initialised Llama of the teacher's architecture family and vocabulary, small enough
    to train a step in well under a second on a CPU: the model unit tests use."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=intermediate,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
        max_position_embeddings=2048, tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(config).eval()


def save_tiny_model(tokenizer_spec: str | os.PathLike, out: str | os.PathLike, **kwargs: Any) -> Path:
    """Build `tiny_model` with the tokenizer of ``tokenizer_spec`` and save both to ``out``."""
    from tinytool.models.loading import load_tokenizer

    tok = load_tokenizer(tokenizer_spec)
    model = tiny_model(tok, **kwargs)
    out = Path(out)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    return out
