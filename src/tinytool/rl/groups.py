"""Groups of rollouts that carry a learning signal, and a batch made only of them.

GRPO's advantage is a reward's distance from its group's mean: a group whose rewards are all equal gives every
rollout an advantage of zero and teaches nothing. Two remedies from the papers:

- **filtering** (STAR §3.2.2, the homogeneous-group filter; DAPO's dynamic sampling): groups whose rewards do
  not vary are dropped from the step;
- **adaptive batch filling** (ASTRA §3.1, the condition ``Std(R(q, {o_i})) > δ`` of Eq. 32): sampling goes on
  until a full batch of informative groups exists; the informative groups beyond it are kept for the next step.

The functions here work on the generation batch GRPO builds: a mapping of per-rollout tensors (first dimension
= rollouts, a group's rollouts consecutive) plus scalars.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: per-rollout tensors padded on the left (prompts); every other 2-d tensor is padded on the right
LEFT_PADDED = ("prompt_ids", "prompt_mask")
#: keys padded with the tokenizer's pad id (masks and log-probabilities take 0)
ID_KEYS = ("prompt_ids", "completion_ids")


def group_std(rewards: Sequence[float], group_size: int) -> list[float]:
    """The population standard deviation of each consecutive group of ``group_size`` rewards."""
    if group_size < 1 or len(rewards) % group_size:
        raise ValueError(f"{len(rewards)} rewards do not split into groups of {group_size}")
    out = []
    for g in range(0, len(rewards), group_size):
        xs = rewards[g:g + group_size]
        mean = sum(xs) / group_size
        out.append((sum((x - mean) ** 2 for x in xs) / group_size) ** 0.5)
    return out


def informative(rewards: Sequence[float], group_size: int, delta: float = 0.0) -> list[bool]:
    """Per group: does its reward vary by more than ``delta`` (ASTRA Eq. 32's condition; ``delta = 0`` is STAR's
    homogeneous-group filter, up to float noise)?"""
    return [s > max(delta, 1e-9) for s in group_std(rewards, group_size)]


def rollouts(batch: Mapping[str, Any]) -> int:
    """How many rollouts a generation batch holds."""
    return len(batch["completion_ids"])


def take(batch: Mapping[str, Any], index: Sequence[int]) -> dict[str, Any]:
    """The rollouts ``index`` of a batch (per-rollout tensors indexed, everything else kept)."""
    import torch

    n = rollouts(batch)
    idx = torch.as_tensor(list(index), dtype=torch.long)
    out = {}
    for k, v in batch.items():
        if isinstance(v, torch.Tensor) and v.dim() >= 1 and v.shape[0] == n:
            out[k] = v.index_select(0, idx.to(v.device))
        else:
            out[k] = v
    return out


def _pad(t: Any, width: int, value: float, left: bool) -> Any:
    import torch

    if t.shape[1] == width:
        return t
    pad = torch.full((t.shape[0], width - t.shape[1], *t.shape[2:]), value, dtype=t.dtype, device=t.device)
    return torch.cat([pad, t] if left else [t, pad], dim=1)


def concat(batches: Sequence[Mapping[str, Any]], pad_id: int) -> dict[str, Any]:
    """Batches joined along rollouts. Sequences are padded to the widest (prompts on the left, completions on
    the right); ``num_items_in_batch`` becomes the completion tokens the joined batch trains on."""
    import torch

    if not batches:
        raise ValueError("nothing to join")
    if len(batches) == 1:
        return dict(batches[0])
    n = [rollouts(b) for b in batches]
    out: dict[str, Any] = {}
    for k, first in batches[0].items():
        values = [b.get(k) for b in batches]
        if isinstance(first, torch.Tensor) and first.dim() >= 1 and first.shape[0] == n[0]:
            if any(v is None for v in values):
                raise ValueError(f"{k!r} is missing from some of the batches to join")
            if first.dim() >= 2:
                width = max(v.shape[1] for v in values)
                fill = pad_id if k in ID_KEYS else 0
                values = [_pad(v, width, fill, k in LEFT_PADDED) for v in values]
            out[k] = torch.cat(values, dim=0)
        else:
            out[k] = first
    if "completion_mask" in out:
        mask = out["completion_mask"] * out["tool_mask"] if out.get("tool_mask") is not None else out["completion_mask"]
        out["num_items_in_batch"] = mask.sum()
    return out


@dataclass
class GroupPool:
    """ASTRA's adaptive batch filling (§3.1): informative groups accumulate until a batch is full; what is left
    over waits for the next step (at most ``max_surplus`` groups, oldest dropped first: they grow stale as the
    policy moves)."""

    group_size: int
    max_surplus: int = 64
    groups: list[dict[str, Any]] = field(default_factory=list)
    seen: int = 0  # groups offered
    dropped: int = 0  # groups without signal

    def count(self, rewards: Sequence[float], delta: float) -> list[bool]:
        """Count a scored generation batch's groups, and those without signal; return which are informative."""
        keep = informative(rewards, self.group_size, delta)
        self.seen += len(keep)
        self.dropped += keep.count(False)
        return keep

    def offer(self, batch: Mapping[str, Any], rewards: Sequence[float], delta: float) -> None:
        """Split a scored generation batch into its groups and keep the informative ones."""
        keep = self.count(rewards, delta)
        for g, ok in enumerate(keep):
            if ok:
                self.groups.append(take(batch, range(g * self.group_size, (g + 1) * self.group_size)))

    def full(self, n_groups: int) -> bool:
        return len(self.groups) >= n_groups

    def take(self, n_groups: int) -> list[dict[str, Any]]:
        """Up to ``n_groups`` groups, oldest first; the rest stays (trimmed to ``max_surplus``)."""
        out, self.groups = self.groups[:n_groups], self.groups[n_groups:]
        if len(self.groups) > self.max_surplus:
            self.groups = self.groups[len(self.groups) - self.max_surplus:]
        return out


__all__ = ["GroupPool", "concat", "group_std", "informative", "rollouts", "take"]
