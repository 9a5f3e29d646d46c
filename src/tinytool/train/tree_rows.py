"""Where each token of a tree row sits and what it may attend to: what the packing (`tinytool.train.tree_pack`)
writes and per-branch attention (`tinytool.train.branch_attention`) reads back.

A tree row is ``[ prefix | branch 1 | branch 2 | ... ]``. Its tokens carry a segment (0 the prefix, 1.. the
branches) and a position id (each branch continuing from the prefix's end); the segments give the mask.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def tree_layout(prefix_length: int, branch_lengths: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
    """Per token of a tree row: its segment (0 the prefix, 1.. the branches), its position id (each branch
    continues from the prefix's end) and the indices where branches start."""
    seg, pos, starts = [0] * prefix_length, list(range(prefix_length)), []
    at = prefix_length
    for b, n in enumerate(branch_lengths, start=1):
        seg += [b] * n
        pos += range(prefix_length, prefix_length + n)
        starts.append(at)
        at += n
    return seg, pos, starts


def tree_mask(segments: Any) -> Any:
    """The boolean attention mask ``[B, 1, T, T]`` (True: may attend) of rows given their per-token segments
    ``[B, T]`` (-1 on padding): a token attends to earlier tokens of the prefix and of its own branch. A padding
    token attends to the row's first token only, so that no row of the mask is empty (an empty one gives NaN)."""
    import torch

    t = segments.shape[1]
    causal = torch.ones(t, t, dtype=torch.bool, device=segments.device).tril()
    q, k = segments[:, :, None], segments[:, None, :]
    mask = causal & ((k == 0) | (k == q)) & (q >= 0)
    mask[:, :, 0] |= q[..., 0] < 0
    return mask[:, None]


__all__ = ["tree_layout", "tree_mask"]
