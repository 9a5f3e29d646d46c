"""Continuous batching for `tinytool.llm.hf.HFClient`: a fixed number of decoding slots, each refilled with the
next waiting sequence the step its row ends.

A padded batch decodes until its longest row ends, so a batch whose rows stop after 40, 80 and 256 tokens spends
most of its steps on one row. Here every slot owns a row of a preallocated key/value buffer
(``[slots, heads, capacity, head_dim]`` per layer): a new sequence's prompt cache (prefilled alone, see
``HFClient._prefill_row``) is copied into a free row, and each step writes one key/value column per slot at that
slot's own position. Rows are left-aligned, so slots of different lengths share a step through a 4-D attention
mask (slot ``r`` sees columns ``0..pos[r]``) and explicit position ids; nothing is concatenated or shifted while
decoding. When no sequence is waiting and a quarter of the slots are idle, the buffers shrink to the busy slots.

Greedy decoding gives the tokens that one-at-a-time decoding gives (the masked columns weigh exactly zero);
sampling draws temperature / top-p samples as transformers' warpers define them, from the global RNG.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

#: attention implementations that take a 4-D mask as given
MASKED_ATTENTION = ("sdpa", "eager")


@dataclass
class _Step:
    """What every layer of the cache needs to know about the current step."""

    rows: Any = None  #: LongTensor [slots]: 0..slots-1
    pos: Any = None  #: LongTensor [slots]: the column each slot writes this step
    width: int = 1  #: columns the attention reads (the largest position + 1)


def _slot_cache(keys: list[Any], values: list[Any], step: _Step) -> Any:
    """A transformers `Cache` over the slot buffers: ``update`` writes the step's key/value at each slot's own
    column and returns the first ``step.width`` columns."""
    from transformers.cache_utils import Cache, CacheLayerMixin

    class SlotLayer(CacheLayerMixin):
        is_sliding = False
        is_compileable = False

        def __init__(self, k: Any, v: Any) -> None:
            super().__init__()
            self.keys, self.values, self.is_initialized = k, v, True

        def lazy_initialization(self, key_states: Any, value_states: Any) -> None:  # allocated up front
            return None

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            self.keys[step.rows, :, step.pos] = key_states[:, :, -1].to(self.keys.dtype)
            self.values[step.rows, :, step.pos] = value_states[:, :, -1].to(self.values.dtype)
            return self.keys[:, :, :step.width], self.values[:, :, :step.width]

        def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
            return step.width, 0

        def get_seq_length(self) -> int:
            return step.width - 1

        def get_max_length(self) -> int:
            return int(self.keys.shape[2])

    return Cache(layers=[SlotLayer(k, v) for k, v in zip(keys, values, strict=True)])


@dataclass
class _Row:
    """One sequence being decoded: its prompt (index into the call's prompts) and what it generated."""

    prompt: int
    tokens: list[int] = field(default_factory=list)
    entropy: list[float] = field(default_factory=list)


def sample_next(logits: Any, temperature: float, top_p: float, greedy: bool) -> Any:
    """The next token of each row of ``logits`` [rows, vocab] (float32): argmax, or a draw from softmax(logits / T)
    restricted to the top-p nucleus (the smallest set of most likely tokens whose mass reaches ``top_p``, at least
    one token), as transformers' temperature and top-p warpers define it."""
    import torch

    if greedy:
        return logits.argmax(dim=-1)
    z = logits / temperature
    if top_p < 1.0:
        sorted_z, order = torch.sort(z, descending=False)
        cum = sorted_z.softmax(dim=-1).cumsum(dim=-1)
        drop = cum <= (1 - top_p)
        drop[:, -1] = False
        z = z.masked_fill(drop.scatter(1, order, drop), float("-inf"))
    return torch.multinomial(z.softmax(dim=-1), num_samples=1).squeeze(1)


def entropy_of(logits: Any, temperature: float) -> Any:
    """Entropy (nats) of softmax(logits / T) per row, in logsumexp form (a masked token adds 0, not nan)."""
    import torch

    z = logits / temperature
    logp = z - torch.logsumexp(z, dim=-1, keepdim=True)
    p = logp.exp()
    return -torch.where(p > 0, p * logp, torch.zeros_like(p)).sum(dim=-1)


Decoded = list[list[tuple[list[int], list[float] | None]]]


def decode_continuous(client: Any, seqs: list[list[int]], config: Any,
                      decode_autocast: Callable[[], AbstractContextManager] = nullcontext,
                      constraints: list[Any] | None = None, guards: list[Any] | None = None) -> Decoded | None:
    """Decode ``config.n`` sequences from each prompt of ``seqs`` through ``client.batch_size × config.n`` slots.
    ``constraints``: per prompt, a `tinytool.llm.constrain.Constraint` every row of it keeps to (None: free); the
    masks of all constrained slots of a step are computed together (`tinytool.llm.constrain.RowMasks`).
    ``guards``: per prompt, a `tinytool.llm.guard.ValueGuard` its rows keep to (None: unguarded); a guarded row
    ends once it has written a call that repeats an earlier one.

    Returns, per prompt, ``config.n`` pairs ``(generated token ids, per-step entropies or None)`` in the order they
    finished — the ids end at the first EOS (kept), at the first stop string or at ``max_new_tokens`` — or None
    when the model cannot decode this way (no plain per-layer cache, an attention implementation that takes no
    4-D mask, a one-token prompt): the caller then decodes padded batches."""
    import torch

    model, n = client.model, config.n
    if getattr(model.config, "_attn_implementation", None) not in MASKED_ATTENTION:
        return None
    if not seqs or min(len(s) for s in seqs) < 2:
        return None
    eos = set(client.eos_ids)
    stops = tuple(config.stop or ())
    window = max((len(s) for s in stops), default=0) + 8  # tokens enough to hold any stop string and spare
    temperature = 1.0 if config.greedy else config.temperature
    capacity = max(len(s) for s in seqs) - 1 + config.max_new_tokens
    slots = min(client.batch_size * n, len(seqs) * n)
    queue = [(p, j) for p in range(len(seqs)) for j in range(n)]
    queue.reverse()  # pop() takes the next in order
    done: Decoded = [[] for _ in seqs]
    step = _Step()
    keys: list[Any] = []
    values: list[Any] = []
    busy: list[_Row | None] = []
    last_prefill: tuple[int, list[tuple[Any, Any]]] | None = None  # a prompt's n rows share one prefill
    pos: list[int] = []
    nxt: list[int] = []
    device = client.device
    masks = None
    if constraints is not None and any(c is not None for c in constraints):
        from tinytool.llm.constrain import RowMasks

        masks = RowMasks(client.grammars(), slots)
    guarded = guards is not None and any(g is not None for g in guards)
    if guarded:
        from tinytool.llm.guard import apply_guards
    # see `RowMasks.pick`; a guard reads the grammar's masks, so guarded steps mask every row first
    lazy = masks is not None and not guarded and not config.entropy and config.top_p >= 1.0

    def admit(slot: int) -> bool:
        nonlocal last_prefill
        p, _ = queue.pop()
        if last_prefill is not None and last_prefill[0] == p:
            layers = last_prefill[1]
        else:
            layers = client._prefill_row(seqs[p][:-1])
            if layers is None:
                return False
            last_prefill = (p, layers)
        if not keys:  # the buffers take their shape from the first prefill
            dtype = None if client._decodes_bf16() else next(model.parameters()).dtype
            for k, v in layers:
                _, heads, _, kd = k.shape
                keys.append(torch.zeros((slots, heads, capacity, kd), dtype=dtype or k.dtype, device=k.device))
                values.append(torch.zeros((slots, heads, capacity, v.shape[-1]), dtype=dtype or v.dtype,
                                          device=v.device))
        length = len(seqs[p]) - 1
        for i, (k, v) in enumerate(layers):
            keys[i][slot, :, :length] = k[0]
            values[i][slot, :, :length] = v[0]
        busy[slot] = _Row(p)
        pos[slot], nxt[slot] = length, seqs[p][-1]
        if masks is not None:
            masks.start(slot, constraints[p])
        if guarded:
            guard_rows[slot] = None if guards[p] is None else client.guard_row(guards[p])
        return True

    def finish(slot: int) -> None:
        row = busy[slot]
        done[row.prompt].append((row.tokens, row.entropy if config.entropy else None))
        busy[slot] = None
        if masks is not None:
            masks.stop(slot)

    busy = [None] * slots
    guard_rows: list[Any] = [None] * slots  # per slot, the guard's row state (None: unguarded)
    pos, nxt = [0] * slots, [0] * slots
    for s in range(slots):
        if not admit(s):
            return None
    cache = _slot_cache(keys, values, step)
    while queue or any(r is not None for r in busy):
        idle = [s for s, r in enumerate(busy) if r is None]
        if idle and queue:
            for s in idle:
                if queue and not admit(s):
                    return None
        elif idle and len(idle) * 4 >= len(busy):  # nothing waits: drop idle rows from the buffers
            keep = [s for s, r in enumerate(busy) if r is not None]
            index = torch.tensor(keep, device=device)
            keys[:] = [k.index_select(0, index) for k in keys]
            values[:] = [v.index_select(0, index) for v in values]
            busy, pos, nxt = [busy[s] for s in keep], [pos[s] for s in keep], [nxt[s] for s in keep]
            guard_rows = [guard_rows[s] for s in keep]
            if masks is not None:
                masks.keep(keep)
            cache = _slot_cache(keys, values, step)
        live = [r is not None for r in busy]
        width = max(p for p, a in zip(pos, live, strict=True) if a) + 1
        step.rows = torch.arange(len(busy), device=device)
        # an idle slot writes column 0 and reads only it (its output is ignored)
        step.pos = torch.tensor([p if a else 0 for p, a in zip(pos, live, strict=True)], device=device)
        step.width = width
        cols = torch.arange(width, device=device)
        see = cols[None, :] <= step.pos[:, None]
        mask = see[:, None, None, :]
        if model.config._attn_implementation == "eager":
            mask = torch.zeros(see.shape, dtype=torch.float32, device=device).masked_fill(
                ~see, torch.finfo(torch.float32).min)[:, None, None, :]
        with decode_autocast():
            out = model(input_ids=torch.tensor(nxt, device=device)[:, None], attention_mask=mask,
                        position_ids=step.pos[:, None], past_key_values=cache, use_cache=True)
        logits = out.logits[:, -1, :].float()
        if lazy:  # masks only for the rows whose choice the grammar refuses (the same tokens, less work)
            picked = masks.pick(logits, lambda z: sample_next(z, temperature, config.top_p, config.greedy))
            ent = None
        else:
            if masks is not None:
                masks.apply(logits)
            if guarded:  # after the grammar: where it allows only what a guard refuses, the grammar wins
                live_guards = [g if b is not None else None for g, b in zip(guard_rows, busy, strict=True)]
                logits = apply_guards(live_guards, logits, *client.guard_tokens())
            ent = entropy_of(logits, temperature).tolist() if config.entropy else None
            picked = sample_next(logits, temperature, config.top_p, config.greedy).tolist()
            if masks is not None:
                masks.advance(picked)
        for s, row in enumerate(busy):
            if row is None:
                continue
            tok = int(picked[s])
            row.tokens.append(tok)
            if ent is not None:
                row.entropy.append(float(ent[s]))
            pos[s] += 1
            nxt[s] = tok
            looped = False
            if guard_rows[s] is not None:
                guard_rows[s].advance(tok)
                looped = guard_rows[s].repeated()
            if (tok in eos or looped or len(row.tokens) >= config.max_new_tokens
                    or (stops and client._contains_stop(row.tokens[-window:], stops))):
                finish(s)
    return done


__all__ = ["MASKED_ATTENTION", "decode_continuous", "entropy_of", "sample_next"]
