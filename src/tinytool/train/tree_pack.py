"""Tree-packed sequences: several sequences that begin with the same tokens trained as one.

In tool-calling data most of a sequence is its prompt, and most of the prompt is the system prompt with the tool
listing. Conversations that offer the same tools begin with the same tokens, so they train as one sequence: the
shared prefix once, then each branch (the rest of one conversation) after it::

    [ prefix | branch 1 | branch 2 | ... ]

Each branch attends to the prefix and to its own earlier tokens only (a 4-D attention mask), and its position ids
continue from the prefix's end as if it were alone, so every token sees exactly what it would see in its own
sequence and the loss and gradients are those of the separate sequences. The prefix is the longest common token
prefix of the group's sequences, cut before the first loss token of any of them, so that the prefix holds no loss
token and no branch begins with one (a branch's first token would otherwise be predicted from the previous
branch's last token). The labels of every branch's first token are -100 for the same reason.

The dense mask is ``[T, T]`` per sequence: attention implementations that take a custom 4-D mask (SDPA, eager)
train these sequences. A model on SDPA on a CPU attends per branch (`prepare_model`: each branch's queries against the
prefix and itself, `tinytool.train.branch_attention`), which skips the scores the mask would throw away; PyTorch's
flex attention (on a GPU) takes the mask as a block mask (`use_block_masks`), skipping the blocks where branches do
not see each other; flash-attention kernels, which build their own causal mask, cannot. A row's segments, position
ids and mask are `tinytool.train.tree_rows`'s (per-branch attention reads them back from there too).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from tinytool.clikit import setting
from tinytool.errors import UserInputError
from tinytool.train.branch_attention import NAME as BRANCH_ATTENTION
from tinytool.train.branch_attention import use_branch_attention
from tinytool.train.tree_rows import tree_layout, tree_mask

#: attention implementations that take a dense 4-D mask as it is given, or (flex attention) as a block mask, or
#: (``tree_sdpa``, `tinytool.train.branch_attention`) per branch
MASKED_ATTENTION = ("sdpa", "eager", "flex_attention", BRANCH_ATTENTION)


@dataclass(kw_only=True)
class SharedPrefixOptions:
    """The options of a trainer that tree-packs: on or off, and how many branches a row may carry."""

    shared_prefix: bool = setting(False, "Tree-pack sequences that share a prompt prefix (system prompt and tool "
                                  "listing): the prefix once, then each sequence after it, attending to the prefix "
                                  "and itself only (same loss and gradients as separate sequences; needs SDPA or "
                                  "eager attention).")
    branches: int = setting(4, "With --shared-prefix, how many sequences one row may carry after its prefix "
                            "(memory: the attention mask is [T, T], T ≤ --max-length).")


@dataclass
class TreeRow:
    """One training sequence: the prefix's tokens, then each branch's. ``completion_mask`` is 1 on loss tokens."""

    input_ids: list[int]
    completion_mask: list[int]
    prefix_length: int
    branch_lengths: list[int]


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def _first_loss(mask: Sequence[int]) -> int:
    """Index of the first loss token (the length when there is none)."""
    return next((i for i, m in enumerate(mask) if m), len(mask))


def _row(seqs: list[tuple[list[int], list[int]]], prefix: int) -> TreeRow:
    """The row of ``seqs`` sharing their first ``prefix`` tokens (one sequence alone: no prefix)."""
    ids, mask = list(seqs[0][0][:prefix]), list(seqs[0][1][:prefix])
    for s_ids, s_mask in seqs:
        ids += s_ids[prefix:]
        mask += s_mask[prefix:]
    return TreeRow(ids, mask, prefix, [len(s) - prefix for s, _ in seqs])


def tree_plan(seqs: Sequence[tuple[Sequence[int], Sequence[int]]], keys: Sequence[Hashable], branches: int,
              max_length: int | None) -> list[tuple[list[int], int]]:
    """Which sequences share a row, and how many tokens they share: ``(indices, prefix length)`` per row (see
    `tree_pack`). A row of one sequence has no prefix."""
    if branches < 1:
        raise UserInputError(f"branches must be ≥ 1, got {branches}", fix="give --branches 1 or more")
    groups: dict[Hashable, list[int]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    plan: list[tuple[list[int], int]] = []

    def close(chunk: list[int], prefix: int) -> None:
        plan.append((chunk, prefix if len(chunk) > 1 else 0))

    for members in groups.values():
        chunk: list[int] = []
        prefix = 0
        for i in members:
            ids, mask = seqs[i]
            if chunk:
                p = max(min(prefix, common_prefix(seqs[chunk[0]][0], ids), _first_loss(mask) - 1), 0)
                total = p + sum(len(seqs[c][0]) - p for c in chunk) + len(ids) - p
                if len(chunk) < branches and (max_length is None or total <= max_length):
                    chunk.append(i)
                    prefix = p
                    continue
                close(chunk, prefix)
            chunk, prefix = [i], max(_first_loss(mask) - 1, 0)
        if chunk:
            close(chunk, prefix)
    return plan


def tree_pack(seqs: Sequence[tuple[list[int], list[int]]], keys: Sequence[Hashable], branches: int,
              max_length: int | None) -> list[TreeRow]:
    """Pack ``(input_ids, completion_mask)`` sequences into tree rows: sequences of one key (same system prompt and
    tools), in their order, are taken greedily into a row while it holds at most ``branches`` of them and at most
    ``max_length`` tokens; a row's prefix is its sequences' longest common prefix, cut before the first loss token.
    Groups come in the order their key first appears. Every sequence is in exactly one row."""
    return [_row([seqs[i] for i in members], prefix) for members, prefix in tree_plan(seqs, keys, branches, max_length)]


def prefix_keys(seqs: Sequence[Sequence[int]], prompt_lengths: Sequence[int]) -> tuple[list[int], list[int]]:
    """Groups of sequences that share most of their prompts, for data that does not say which tools it offers:
    ``(order, keys)``, the sequences sorted by their tokens (so those with a long common prefix are adjacent) and a
    group id per sorted position. Adjacent sequences are in one group while they share at least half of the
    shorter one's prompt (a tool listing is most of a prompt; a template's fixed system header alone is not)."""
    order = sorted(range(len(seqs)), key=lambda i: list(seqs[i]))
    keys, group = [], 0
    for a, b in zip([None, *order], order):
        if a is not None and 2 * common_prefix(seqs[a], seqs[b]) < min(prompt_lengths[a], prompt_lengths[b]):
            group += 1
        keys.append(group)
    return order, keys


@dataclass
class TreeCollator:
    """Collates tree rows (``input_ids``, ``labels``, ``prefix_length``, ``branch_lengths``) into a batch the
    model takes: right-padded ``input_ids`` and ``labels`` (-100 on padding and on every branch's first token),
    per-branch ``position_ids`` and the boolean 4-D ``attention_mask`` of `tree_mask`."""

    pad_token_id: int

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        """The batch of ``examples``."""
        import torch

        t = max(len(e["input_ids"]) for e in examples)
        n = len(examples)
        ids = torch.full((n, t), self.pad_token_id, dtype=torch.long)
        labels = torch.full((n, t), -100, dtype=torch.long)
        pos = torch.zeros((n, t), dtype=torch.long)
        seg = torch.full((n, t), -1, dtype=torch.long)
        for i, e in enumerate(examples):
            m = len(e["input_ids"])
            s, p, starts = tree_layout(e["prefix_length"], e["branch_lengths"])
            if len(s) != m:
                raise ValueError(f"tree row {i}: {m} tokens, but prefix and branches give {len(s)}")
            ids[i, :m] = torch.as_tensor(e["input_ids"])
            labels[i, :m] = torch.as_tensor(e["labels"])
            labels[i, starts] = -100
            pos[i, :m] = torch.as_tensor(p)
            seg[i, :m] = torch.as_tensor(s)
        return {"input_ids": ids, "labels": labels, "position_ids": pos, "attention_mask": tree_mask(seg)}


def tokens_in(mask: Any) -> Any:
    """The real (non-padding) tokens of a batch whose ``attention_mask`` is 2-D (its sum) or a `tree_mask`
    (its diagonal: a padding token does not attend to itself), boolean or additive."""
    import torch

    if mask.dim() != 4:
        return mask.sum()
    diag = mask.diagonal(dim1=-2, dim2=-1)
    return diag.sum() if diag.dtype == torch.bool else (diag == 0).sum()


def check_attention(model: Any) -> str:
    """The attention implementation of ``model`` (PEFT or not), refused unless it takes a 4-D mask: SDPA, eager,
    or flex attention where it can train (PyTorch has no flex-attention backward on the CPU)."""
    impl = getattr(getattr(model, "config", None), "_attn_implementation", None) or "eager"
    if impl not in MASKED_ATTENTION:
        raise UserInputError(
            f"--shared-prefix needs an attention implementation that takes a 4-D mask (sdpa, eager, or "
            f"flex_attention on a GPU); the model uses {impl!r}",
            fix="turn --shared-prefix off, or use the model with transformers' default attention (sdpa)")
    if impl == "flex_attention" and _device_type(model) == "cpu" and not _cuda():  # the trainer moves it to CUDA
        raise UserInputError("flex attention cannot train on the CPU (PyTorch has no CPU backward for it)",
                             fix="use sdpa attention on the CPU (transformers' default)")
    return impl


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _device_type(model: Any) -> str:
    try:
        return next(model.parameters()).device.type
    except (AttributeError, StopIteration):
        return "cpu"


def block_mask(mask: Any) -> Any:
    """A boolean `tree_mask` ``[B, 1, T, T]`` as flex attention's block mask: the same pattern, with the blocks
    where no query sees any key (one branch against another) marked empty so the kernel skips them."""
    from torch.nn.attention.flex_attention import create_block_mask

    dense = mask[:, 0]

    def keep(b: Any, h: Any, q: Any, kv: Any) -> Any:
        return dense[b, q, kv]

    b, t = mask.shape[0], mask.shape[-1]
    return create_block_mask(keep, b, None, t, t, device=mask.device)


def for_model(mask: Any, model: Any, dtype: Any = None) -> Any:
    """A boolean `tree_mask` as ``model``'s attention implementation takes it: as it is for SDPA (and for flex
    attention, whose model `use_block_masks` turns it into a block mask at its forward), additive (0 or the
    dtype's minimum) for eager; refused for implementations that build their own causal mask."""
    import torch

    impl = check_attention(model)
    if impl != "eager" or mask.dtype != torch.bool:
        return mask
    dtype = dtype or next(model.parameters()).dtype
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, torch.finfo(dtype).min)


def _to_block_mask(module: Any, args: Any, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    import torch

    mask = kwargs.get("attention_mask")
    if isinstance(mask, torch.Tensor) and mask.dim() == 4 and mask.dtype == torch.bool:
        kwargs["attention_mask"] = block_mask(mask)
    return args, kwargs


def use_block_masks(model: Any) -> bool:
    """Where ``model`` (PEFT or not) attends with flex attention, turn a boolean `tree_mask` into a `block_mask`
    as its forward is called (a forward pre-hook), so that the batch itself keeps the dense mask the trainers
    count tokens on. Returns whether a hook was added."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    if getattr(getattr(base, "config", None), "_attn_implementation", None) != "flex_attention":
        return False
    # the language model's forward and its decoder's (distillation calls the decoder alone)
    decoder = base.get_decoder() if hasattr(base, "get_decoder") else None
    for module in (base, decoder):
        if module is not None and not getattr(module, "_tinytool_block_masks", False):
            module.register_forward_pre_hook(_to_block_mask, with_kwargs=True)
            module._tinytool_block_masks = True
    return True


def prepare_model(model: Any) -> str:
    """Make ``model`` ready for tree rows: its attention implementation checked (`check_attention`), flex attention
    given block masks (`use_block_masks`), SDPA switched to per-branch attention where no GPU is at hand (on a CPU
    the dense mask's discarded scores cost about 6 % per token; on a GPU SDPA with the dense mask is the measured
    path). Returns the implementation it trains with."""
    impl = check_attention(model)
    if use_block_masks(model) or _cuda():
        return impl
    return BRANCH_ATTENTION if use_branch_attention(model) else impl


__all__ = ["MASKED_ATTENTION", "SharedPrefixOptions", "TreeCollator", "TreeRow", "block_mask", "check_attention",
           "common_prefix", "for_model", "prefix_keys", "prepare_model", "tokens_in",
           "tree_layout", "tree_mask", "tree_pack", "tree_plan", "use_block_masks"]
