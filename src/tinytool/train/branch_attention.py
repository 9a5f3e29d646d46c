"""Per-branch attention for tree-packed rows: each branch's queries against the prefix and the branch alone.

A tree row is ``[ prefix | branch 1 | branch 2 | ... ]`` with a dense 4-D mask in which a branch sees the prefix
and its own earlier tokens. SDPA given that mask computes all ``T x T`` scores and masks most of them away (on a
CPU its kernels skip no block of a custom mask). This attention function computes only what the mask allows: the
prefix and the first branch as one causal sequence, then each later branch's queries against the prefix's keys
and its own (a ``[L, P + L]`` lower-right causal mask). At K branches of L tokens after a prefix of P tokens that
is ``(P + L)^2 / 2 + (K - 1) L (P + L)`` scores instead of ``(P + K L)^2``.

The row's layout is read from what the model is given: the position ids (a branch after the first restarts at
the prefix's length) and the mask's diagonal (padding does not attend to itself). The layout is then checked
against the mask itself, once per forward (the layers share the mask); any mask it does not reproduce exactly,
and every call without such a mask (generation, plain batches), goes to transformers' SDPA as it is. It is
registered with transformers' attention interface as ``tree_sdpa``, and its masks are SDPA's.
"""

from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass
from typing import Any

from tinytool.train.tree_rows import tree_mask

NAME = "tree_sdpa"


@dataclass(frozen=True)
class RowLayout:
    """One row: the stem (the prefix and the first branch) ``[0, stem)``, the later branches ``[start, end)``
    with the prefix length they attend to, and the real tokens ``[0, length)`` (padding after)."""

    stem: int
    branches: tuple[tuple[int, int, int], ...]
    length: int


def row_layouts(mask: Any, position_ids: Any) -> list[RowLayout] | None:
    """The layout of every row of a boolean tree mask ``[B, 1, T, T]`` given its position ids ``[B, T]`` (or
    ``[1, T]``), or None where the mask is not one (no row has a second branch, or the mask differs from the
    tree mask the layout implies)."""
    import torch

    if (not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.dim() != 4 or mask.shape[1] != 1
            or position_ids is None or mask.shape[-1] != mask.shape[-2]):
        return None
    b, t = mask.shape[0], mask.shape[-1]
    pos = position_ids.expand(b, t) if position_ids.shape[0] == 1 else position_ids
    if tuple(pos.shape) != (b, t):
        return None
    real = mask[:, 0].diagonal(dim1=-2, dim2=-1)
    layouts, segments = [], torch.full((b, t), -1, dtype=torch.long)
    for r, (row_pos, row_real) in enumerate(zip(pos.tolist(), real.tolist())):
        n = sum(row_real)
        if any(row_real[n:]) or not all(row_real[:n]):
            return None  # real tokens are not one run from the start
        starts = [i for i in range(1, n) if row_pos[i] != row_pos[i - 1] + 1]
        prefixes = {row_pos[s] for s in starts}
        if len(prefixes) > 1 or (starts and not 0 < row_pos[starts[0]] <= starts[0]):
            return None
        prefix = prefixes.pop() if starts else n
        ends = [*starts[1:], n]
        layouts.append(RowLayout(stem=starts[0] if starts else n,
                                 branches=tuple((s, e, prefix) for s, e in zip(starts, ends)), length=n))
        segments[r, :prefix] = 0
        bounds = [prefix, *starts, n]
        for k, (s, e) in enumerate(itertools.pairwise(bounds), start=1):
            segments[r, s:e] = k
    if not any(lay.branches for lay in layouts):
        return None
    return layouts if torch.equal(tree_mask(segments.to(mask.device)), mask) else None


class _Cache:
    """The layouts of the last mask seen (every layer of one forward, and its recomputation under activation
    checkpointing, is given the same mask object)."""

    def __init__(self) -> None:
        self.mask: Any = None
        self.layouts: list[RowLayout] | None = None

    def get(self, mask: Any, position_ids: Any) -> list[RowLayout] | None:
        if self.mask is not None and self.mask() is mask:
            return self.layouts
        self.mask, self.layouts = weakref.ref(mask), row_layouts(mask, position_ids)
        return self.layouts


_CACHE = _Cache()


def _causal_after(prefix: int, length: int, device: Any) -> Any:
    """``[1, 1, L, P + L]``: every query sees the ``P`` prefix keys and its own branch causally."""
    import torch

    return torch.ones(length, prefix + length, dtype=torch.bool, device=device).tril(prefix)[None, None]


def tree_sdpa_attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any,
                        dropout: float = 0.0, scaling: float | None = None, **kwargs: Any) -> tuple[Any, None]:
    """transformers' attention-function signature: ``query [B, H, T, D]``, ``key``/``value`` ``[B, H_kv, T, D]``
    → ``([B, T, H, D], None)``. Per branch on a tree mask (same scores, softmax and output as the dense mask;
    padding gives zeros), SDPA as it is otherwise."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    def sdpa(q: Any, k: Any, v: Any, mask: Any) -> Any:
        return sdpa_attention_forward(module, q, k, v, mask, dropout=dropout, scaling=scaling, **kwargs)[0]

    layouts = None
    if query.shape[2] == key.shape[2] == getattr(attention_mask, "shape", (0,))[-1]:
        layouts = _CACHE.get(attention_mask, kwargs.get("position_ids"))
    if layouts is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    kwargs.pop("is_causal", None)
    rows = []
    for r, lay in enumerate(layouts):
        q, k, v = query[r:r + 1], key[r:r + 1], value[r:r + 1]
        parts = [sdpa(q[:, :, :lay.stem], k[:, :, :lay.stem], v[:, :, :lay.stem], None)]
        for s, e, p in lay.branches:
            keys = torch.cat([k[:, :, :p], k[:, :, s:e]], dim=2)
            values = torch.cat([v[:, :, :p], v[:, :, s:e]], dim=2)
            parts.append(sdpa(q[:, :, s:e], keys, values, _causal_after(p, e - s, q.device)))
        pad = query.shape[2] - lay.length
        if pad:
            parts.append(parts[0].new_zeros(1, pad, *parts[0].shape[2:]))
        rows.append(torch.cat(parts, dim=1))
    return torch.cat(rows, dim=0), None


def register() -> None:
    """Register `tree_sdpa_attention` (and SDPA's mask function) under ``tree_sdpa`` with transformers."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(NAME, tree_sdpa_attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)


def use_branch_attention(model: Any) -> bool:
    """Where ``model`` (PEFT or not) attends with SDPA, attend per branch on tree masks instead (`NAME`; other
    masks still go to SDPA). Not saved with the model: its config records no attention implementation. Returns
    whether it switched."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    if getattr(getattr(base, "config", None), "_attn_implementation", None) != "sdpa":
        return False
    register()
    base.set_attn_implementation(NAME)
    return True


__all__ = ["NAME", "RowLayout", "register", "row_layouts", "tree_sdpa_attention", "use_branch_attention"]
