"""Tree-packed distillation examples: examples that share a prompt prefix (one tool listing) as one sequence.

The same packing as SFT's (`tinytool.train.tree_pack`): the shared prefix once, then each example's remaining
tokens as a branch that attends to the prefix and to itself only, with position ids that continue from the
prefix's end. An example's completion positions map to its branch (the prefix ends before every completion), and
the teacher's top-k rows of the row's examples are concatenated in branch order, which is the row-major order of
those positions, so cached and online teachers line up with the student position for position.

Examples carry no tool listing here (a teacher cache holds tokens only), so the groups are found from the tokens:
sorted, adjacent examples that share most of their prompts (`tinytool.train.tree_pack.prefix_keys`).
"""

from __future__ import annotations

from typing import Any

import torch

from tinytool.train.tree_pack import prefix_keys, tree_mask, tree_plan


class TreeDataset(torch.utils.data.Dataset):
    """Rows of up to ``branches`` examples of ``base`` (a dataset of dicts with ``input_ids``, ``n_prompt`` and
    optionally the teacher's ``topk_ids`` / ``topk_logprobs``) that share a prompt prefix, at most ``max_length``
    tokens each. ``examples`` counts the examples, ``len`` the rows."""

    def __init__(self, base: Any, branches: int, max_length: int | None) -> None:
        self.base = base
        ids, n_prompt = [], []
        for i in range(len(base)):  # one example at a time: a cache's teacher rows are not all held
            item = base[i]
            ids.append(torch.as_tensor(item["input_ids"]).tolist())
            n_prompt.append(int(item["n_prompt"]))
        order, keys = prefix_keys(ids, n_prompt)
        seqs = [(ids[i], [0] * n_prompt[i] + [1] * (len(ids[i]) - n_prompt[i])) for i in order]
        self.plan = [([order[j] for j in members], prefix)
                     for members, prefix in tree_plan(seqs, keys, branches, max_length)]
        self.examples = len(ids)
        self.shared_tokens = sum(prefix * (len(members) - 1) for members, prefix in self.plan)

    def __len__(self) -> int:
        return len(self.plan)

    def __getitem__(self, i: int) -> dict[str, Any]:
        members, prefix = self.plan[i]
        items = [self.base[j] for j in members]
        ids = [torch.as_tensor(items[0]["input_ids"][:prefix]).long()]
        ids += [torch.as_tensor(it["input_ids"][prefix:]).long() for it in items]
        row = {"input_ids": torch.cat(ids), "prefix_length": prefix,
               "branches": [(len(it["input_ids"]), int(it["n_prompt"])) for it in items]}
        if "topk_ids" in items[0]:
            row["topk_ids"] = torch.cat([torch.as_tensor(it["topk_ids"]) for it in items])
            row["topk_logprobs"] = torch.cat([torch.as_tensor(it["topk_logprobs"]) for it in items])
        return row


def tree_collate(rows: list[dict[str, Any]], pad_id: int) -> dict[str, torch.Tensor]:
    """`tinytool.distill.trainer.collate` for `TreeDataset` rows: right-padded ``input_ids``; ``labels`` on each
    branch's completion tokens; ``positions`` where a hidden state predicts one (inside its own branch, in the
    order of the concatenated teacher rows); per-branch ``position_ids``; the boolean 4-D ``attention_mask``."""
    width = max(len(r["input_ids"]) for r in rows)
    b = len(rows)
    input_ids = torch.full((b, width), pad_id, dtype=torch.long)
    labels = torch.full((b, width), -100, dtype=torch.long)
    positions = torch.zeros((b, width), dtype=torch.bool)
    position_ids = torch.zeros((b, width), dtype=torch.long)
    segments = torch.full((b, width), -1, dtype=torch.long)
    for i, r in enumerate(rows):
        ids, p = r["input_ids"], int(r["prefix_length"])
        input_ids[i, :len(ids)] = ids
        segments[i, :p] = 0
        position_ids[i, :p] = torch.arange(p)
        at = p
        for s, (n, n_prompt) in enumerate(r["branches"], start=1):
            length = n - p
            segments[i, at:at + length] = s
            position_ids[i, at:at + length] = torch.arange(p, n)
            labels[i, at + n_prompt - p:at + length] = ids[at + n_prompt - p:at + length]
            positions[i, at + n_prompt - p - 1:at + length - 1] = True
            at += length
    batch = {"input_ids": input_ids, "attention_mask": tree_mask(segments), "labels": labels,
             "positions": positions, "position_ids": position_ids}
    if "topk_ids" in rows[0]:
        batch["topk_ids"] = torch.cat([r["topk_ids"].long() for r in rows])
        batch["topk_logprobs"] = torch.cat([r["topk_logprobs"].float() for r in rows])
    return batch


__all__ = ["TreeDataset", "tree_collate"]
