"""Merge checkpoints of one architecture in weight space: a weighted sum of their parameters.

Two uses, one rule (θ = Σ wᵢ θᵢ with Σ wᵢ = 1):

- **WiSE-FT** (Wortsman et al., "Robust fine-tuning of zero-shot models", CVPR 2022, §2, Eq. 1): a fine-tuned model
  and the model it started from, θ_α = (1 − α)·θ₀ + α·θ₁. Fine-tuning on a narrow distribution (here: generated tools)
  moves the weights far from the pretrained ones; the interpolation keeps part of what the start knew about inputs
  the fine-tuning data does not hold (BFCL's functions are not the generator's), at no training cost.
- **Checkpoint averaging**: several checkpoints of one run, equal weights.

A weight above 1 with a negative one beside it extrapolates past the fine-tuned model (task arithmetic's scaling);
the sum must still be 1, so a merge of a model with itself is that model.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tinytool.errors import UserInputError


def merge_weights(n: int, weights: Sequence[float] | None) -> list[float]:
    """The weights of a merge of ``n`` models: equal ones when none are given; otherwise one finite weight per model,
    summing to 1 (within 1e-6). Anything else raises `UserInputError` naming what is wrong."""
    if n < 1:
        raise UserInputError("merge: give at least one model")
    if not weights:
        return [1.0 / n] * n
    ws = [float(w) for w in weights]
    if len(ws) != n:
        raise UserInputError(f"merge: {len(ws)} weights for {n} models", fix="give one --weight per --model, in order")
    if not all(math.isfinite(w) for w in ws):
        raise UserInputError(f"merge: weights must be finite numbers, got {ws}")
    if abs(sum(ws) - 1.0) > 1e-6:
        raise UserInputError(f"merge: the weights sum to {sum(ws):g}, not 1 ({ws})",
                             fix="scale them so they sum to 1, e.g. --weight 0.7 --weight 0.3")
    return ws


def _check_same_shapes(first: dict[str, Any], other: dict[str, Any], name0: str, name: str) -> None:
    missing, extra = sorted(set(first) - set(other)), sorted(set(other) - set(first))
    if missing or extra:
        key = (missing or extra)[0]
        raise UserInputError(f"merge: {name} and {name0} are not one architecture: parameter {key!r} is in only one "
                             f"of them ({len(missing) + len(extra)} such)",
                             fix="merge checkpoints of the same model (a fine-tuned model and the model it started from)")
    for key, t in first.items():
        if tuple(t.shape) != tuple(other[key].shape):
            raise UserInputError(f"merge: {name} and {name0} differ in the shape of {key!r} "
                                 f"({tuple(other[key].shape)} against {tuple(t.shape)})",
                                 fix="merge checkpoints of the same model (a fine-tuned model and the model it started from)")


def merge_models(models: Sequence[str | os.PathLike], out: str | os.PathLike, weights: Sequence[float] | None = None,
                 cache: str | os.PathLike | None = None) -> dict[str, Any]:
    """Save θ = Σ wᵢ θᵢ of ``models`` (one architecture; `merge_weights`) to ``out`` as an HF checkpoint with the first
    model's tokenizer and, when a tinytool run trained it, a ``config.yaml`` naming its prompt format (so the merge is
    read in the format it was trained in). Every floating-point tensor is merged in float32; others (integer buffers) are the first
    model's. Models are loaded one at a time beside the sum, so memory holds two of them. Returns the models and
    weights."""
    import torch
    import yaml

    from tinytool.models.loading import adapter_base, load_model, load_tokenizer, resolve, trained_format

    names = [str(m) for m in models]
    ws = merge_weights(len(names), weights)
    for name in names:  # a missing model is found before any is loaded
        if adapter_base(name) is None:
            resolve(name, cache)
    merged = load_model(names[0], cache, dtype=torch.float32)
    acc = merged.state_dict()
    # tied weights (embeddings and LM head) are one tensor under two keys: each tensor is scaled and added to once
    own: dict[int, str] = {}
    for key, t in acc.items():
        if t.is_floating_point():
            own.setdefault(t.data_ptr(), key)
    with torch.no_grad():
        for key in own.values():
            acc[key].mul_(ws[0])
        for name, w in zip(names[1:], ws[1:], strict=True):
            other = load_model(name, cache, dtype=torch.float32).state_dict()
            _check_same_shapes(acc, other, names[0], name)
            for key in own.values():
                acc[key].add_(other[key].to(torch.float32), alpha=w)
            del other
    out = Path(out)
    merged.save_pretrained(out, safe_serialization=True)
    load_tokenizer(names[0], cache).save_pretrained(out)
    fmt = trained_format(names[0])
    if fmt is not None:
        (out / "config.yaml").write_text(yaml.safe_dump({"format": fmt, "merged": names, "weights": ws}),
                                         encoding="utf-8")
    return {"models": names, "weights": ws, "parameters": sum(p.numel() for p in merged.parameters())}
