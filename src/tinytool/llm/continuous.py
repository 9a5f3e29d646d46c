"""Continuous batching for `tinytool.llm.hf.HFClient`: a fixed number of decoding slots, each refilled with the
next waiting sequence the step its row ends.

A padded batch decodes until its longest row ends, so a batch whose rows stop after 40, 80 and 256 tokens spends
most of its steps on one row. Here every slot owns a row of a preallocated key/value buffer
(``[slots, heads, capacity, head_dim]`` per layer): a new sequence's prompt cache (prefilled alone, see
``HFClient.prefill_row``) is copied into a free row, and each step writes one key/value column per slot at that
slot's own position. Rows are left-aligned, so slots of different lengths share a step through a 4-D attention
mask (slot ``r`` sees columns ``0..pos[r]``) and explicit position ids; nothing is concatenated or shifted while
decoding. When no sequence is waiting and a quarter of the slots are idle, the buffers shrink to the busy slots.

Greedy decoding gives the tokens that one-at-a-time decoding gives (the masked columns weigh exactly zero);
sampling draws temperature / top-p samples as transformers' warpers define them, from the global RNG. What a
request asks of the decoding rules (the tools' grammar, the value guard: `tinytool.llm.rules`) is kept per slot by
one `tinytool.llm.rules.Rules`: started when a slot takes a sequence, masking the step's logits, advanced with the
chosen tokens, ending a row where a rule says so, stopped when the row ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tinytool.llm.rules import Asked, Rules

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


def decode_continuous(client: Any, seqs: list[list[int]], config: Any, asks: list[Asked] | None = None) -> Decoded | None:
    """Decode ``config.n`` sequences from each prompt of ``seqs`` through ``client.batch_size × config.n`` slots.
    ``asks``: per prompt, what it asks of the decoding rules (`tinytool.llm.rules`; every row of the prompt keeps
    to it): a grammar's masks for all constrained slots of a step are computed together, and a value guard ends a
    row once it has written a call that repeats an earlier one.

    Returns, per prompt, ``config.n`` pairs ``(generated token ids, per-step entropies or None)`` in the order they
    finished — the ids end at the first EOS (kept), at the first stop string, where a rule ends the row, or at
    ``max_new_tokens`` — or None when the model cannot decode this way (no plain per-layer cache, an attention
    implementation that takes no 4-D mask, a one-token prompt): the caller then decodes padded batches."""
    if getattr(client.model.config, "_attn_implementation", None) not in MASKED_ATTENTION:
        return None
    if not seqs or min(len(s) for s in seqs) < 2:
        return None
    return _Slots(client, seqs, config, asks or [{} for _ in seqs]).decode()


class _Slots:
    """One `decode_continuous` call: the waiting sequences, the slots' key/value buffers, positions and rows, the
    rules they keep to, and what finished."""

    def __init__(self, client: Any, seqs: list[list[int]], config: Any, asks: list[Asked]):
        import torch

        self.client, self.model, self.seqs, self.config, self.asks = client, client.model, seqs, config, asks
        n = config.n
        self.eos = set(client.eos_ids)
        self.stops = tuple(config.stop or ())
        self.window = max((len(s) for s in self.stops), default=0) + 8  # enough to hold any stop string and spare
        self.temperature = 1.0 if config.greedy else config.temperature
        self.capacity = max(len(s) for s in seqs) - 1 + config.max_new_tokens
        slots = min(client.batch_size * n, len(seqs) * n)
        self.queue = [(p, j) for p in range(len(seqs)) for j in range(n)]
        self.queue.reverse()  # pop() takes the next in order
        self.done: Decoded = [[] for _ in seqs]
        self.step = _Step()
        self.keys: list[Any] = []
        self.values: list[Any] = []
        self.busy: list[_Row | None] = [None] * slots
        self.pos, self.nxt = [0] * slots, [0] * slots
        self.last_prefill: tuple[int, list[tuple[Any, Any]]] | None = None  # a prompt's n rows share one prefill
        self.device = client.device
        self.rules = Rules(client, slots, asks)
        # masks only for the rows whose choice the rule refuses, where nothing needs the masked distribution itself
        self.lazy = self.rules.lazy and not config.entropy and config.top_p >= 1.0
        self.torch = torch

    def decode(self) -> Decoded | None:
        """Fill every slot, then step until nothing waits and every row has ended; None when a prompt cannot be
        prefilled alone."""
        for s in range(len(self.busy)):
            if not self.admit(s):
                return None
        cache = _slot_cache(self.keys, self.values, self.step)
        while self.queue or any(r is not None for r in self.busy):
            idle = [s for s, r in enumerate(self.busy) if r is None]
            if idle and self.queue:
                for s in idle:
                    if self.queue and not self.admit(s):
                        return None
            elif idle and len(idle) * 4 >= len(self.busy):  # nothing waits: drop idle rows from the buffers
                self.shrink()
                cache = _slot_cache(self.keys, self.values, self.step)
            picked, ent = self.choose(self.forward(cache))
            self.record(picked, ent)
        return self.done

    def admit(self, slot: int) -> bool:
        """Give ``slot`` the next waiting sequence: its prompt's cache (one prefill for a prompt's n rows) copied
        into the slot's row of the buffers."""
        p, _ = self.queue.pop()
        if self.last_prefill is not None and self.last_prefill[0] == p:
            layers = self.last_prefill[1]
        else:
            layers = self.client.prefill_row(self.seqs[p][:-1])
            if layers is None:
                return False
            self.last_prefill = (p, layers)
        if not self.keys:
            self.allocate(layers)
        length = len(self.seqs[p]) - 1
        for i, (k, v) in enumerate(layers):
            self.keys[i][slot, :, :length] = k[0]
            self.values[i][slot, :, :length] = v[0]
        self.busy[slot] = _Row(p)
        self.pos[slot], self.nxt[slot] = length, self.seqs[p][-1]
        self.rules.start(slot, self.asks[p])
        return True

    def allocate(self, layers: list[tuple[Any, Any]]) -> None:
        """The slot buffers, shaped after the first prefill's layers, in the decode dtype."""
        torch, slots = self.torch, len(self.busy)
        dtype = None if self.client.decodes_bf16() else next(self.model.parameters()).dtype
        for k, v in layers:
            _, heads, _, kd = k.shape
            self.keys.append(torch.zeros((slots, heads, self.capacity, kd), dtype=dtype or k.dtype, device=k.device))
            self.values.append(torch.zeros((slots, heads, self.capacity, v.shape[-1]), dtype=dtype or v.dtype,
                                           device=v.device))

    def finish(self, slot: int) -> None:
        row = self.busy[slot]
        self.done[row.prompt].append((row.tokens, row.entropy if self.config.entropy else None))
        self.busy[slot] = None
        self.rules.stop(slot)

    def shrink(self) -> None:
        """Keep only the busy slots."""
        keep = [s for s, r in enumerate(self.busy) if r is not None]
        index = self.torch.tensor(keep, device=self.device)
        self.keys[:] = [k.index_select(0, index) for k in self.keys]
        self.values[:] = [v.index_select(0, index) for v in self.values]
        self.busy = [self.busy[s] for s in keep]
        self.pos, self.nxt = [self.pos[s] for s in keep], [self.nxt[s] for s in keep]
        self.rules.keep(keep)

    def forward(self, cache: Any) -> Any:
        """The next-token logits (float32) of every slot: one column per slot at its own position, each slot seeing
        its columns only (an idle slot writes column 0 and reads only it; its output is ignored)."""
        torch, device, step = self.torch, self.device, self.step
        live = [r is not None for r in self.busy]
        width = max(p for p, a in zip(self.pos, live, strict=True) if a) + 1
        step.rows = torch.arange(len(self.busy), device=device)
        step.pos = torch.tensor([p if a else 0 for p, a in zip(self.pos, live, strict=True)], device=device)
        step.width = width
        cols = torch.arange(width, device=device)
        see = cols[None, :] <= step.pos[:, None]
        mask = see[:, None, None, :]
        if self.model.config._attn_implementation == "eager":
            mask = torch.zeros(see.shape, dtype=torch.float32, device=device).masked_fill(
                ~see, torch.finfo(torch.float32).min)[:, None, None, :]
        with self.client.decode_autocast():
            out = self.model(input_ids=torch.tensor(self.nxt, device=device)[:, None], attention_mask=mask,
                             position_ids=step.pos[:, None], past_key_values=cache, use_cache=True)
        return out.logits[:, -1, :].float()

    def choose(self, logits: Any) -> tuple[list[int], list[float] | None]:
        """Every slot's next token under its rules, and the entropies of what was sampled from (when asked)."""
        config, temperature = self.config, self.temperature

        def sample(z: Any) -> Any:
            return sample_next(z, temperature, config.top_p, config.greedy)

        if self.lazy:  # masks only for the rows whose choice the rule refuses (the same tokens, less work)
            return self.rules.pick(logits, sample), None
        logits = self.rules.mask(logits)
        ent = entropy_of(logits, temperature).tolist() if config.entropy else None
        picked = sample(logits).tolist()
        self.rules.advance(picked)
        return picked, ent

    def record(self, picked: list[int], ent: list[float] | None) -> None:
        """Append each busy slot's token; end the rows that end here (EOS, a rule, the token limit, a stop
        string)."""
        config, stops = self.config, self.stops
        for s, row in enumerate(self.busy):
            if row is None:
                continue
            tok = int(picked[s])
            row.tokens.append(tok)
            if ent is not None:
                row.entropy.append(float(ent[s]))
            self.pos[s] += 1
            self.nxt[s] = tok
            if (tok in self.eos or self.rules.ends(s) or len(row.tokens) >= config.max_new_tokens
                    or (stops and self.client.contains_stop(row.tokens[-self.window:], stops))):
                self.finish(s)


__all__ = ["MASKED_ATTENTION", "decode_continuous", "entropy_of", "sample_next"]
