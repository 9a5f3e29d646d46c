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

`LiveSlots` is the same decoding for a server (`tinytool.serve.engine`): sequences are not known up front but
admitted between two steps as requests arrive, each under its own settings (token limit, stop strings, temperature
and top-p, a seed of its own), so a short request joins the rows decoding a long one instead of waiting for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from tinytool.llm import rules as row_rules
from tinytool.llm.rules import Asked, Rules

#: attention implementations that take a 4-D mask as given
MASKED_ATTENTION = ("sdpa", "eager")


@dataclass
class _Step:
    """What every layer of the cache needs to know about the current step."""

    rows: Any = None  #: LongTensor [slots]: 0..slots-1
    pos: Any = None  #: LongTensor [slots]: the column each slot writes this step
    width: int = 1  #: columns the attention reads (the largest position + 1)
    count: int = 0  #: the buffer rows the step decodes (rows 0..count-1)


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
            return self.keys[:step.count, :, :step.width], self.values[:step.count, :, :step.width]

        def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
            return step.width, 0

        def get_seq_length(self) -> int:
            return step.width - 1

        def get_max_length(self) -> int:
            return int(self.keys.shape[2])

    return Cache(layers=[SlotLayer(k, v) for k, v in zip(keys, values, strict=True)])


@dataclass
class _Row:
    """One sequence being decoded: its prompt (index into the call's prompts, or whoever admitted it) and what it
    generated."""

    prompt: Any
    tokens: list[int] = field(default_factory=list)
    entropy: list[float] = field(default_factory=list)
    gen: Any = None  #: the `tinytool.llm.base.GenerationConfig` it decodes under (None: the call's)
    generator: Any = None  #: the torch.Generator it samples from (None: the global RNG, or greedy)


def sample_next(logits: Any, temperature: float, top_p: float, greedy: bool, generator: Any = None) -> Any:
    """The next token of each row of ``logits`` [rows, vocab] (float32): argmax, or a draw from softmax(logits / T)
    restricted to the top-p nucleus (the smallest set of most likely tokens whose mass reaches ``top_p``, at least
    one token), as transformers' temperature and top-p warpers define it; drawn from ``generator`` where given, else
    from the global RNG."""
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
    return torch.multinomial(z.softmax(dim=-1), num_samples=1, generator=generator).squeeze(1)


def entropy_of(logits: Any, temperature: float) -> Any:
    """Entropy (nats) of softmax(logits / T) per row, in logsumexp form (a masked token adds 0, not nan)."""
    import torch

    z = logits / temperature
    logp = z - torch.logsumexp(z, dim=-1, keepdim=True)
    p = logp.exp()
    return -torch.where(p > 0, p * logp, torch.zeros_like(p)).sum(dim=-1)


Decoded = list[list[tuple[list[int], list[float] | None]]]


def _stops_tuple(gen: Any) -> Any:
    """``gen`` (a `tinytool.llm.base.GenerationConfig`) with its stop strings as a tuple."""
    return gen if isinstance(gen.stop, tuple) else replace(gen, stop=tuple(gen.stop or ()))


def _masked(client: Any) -> bool:
    """Whether ``client``'s model takes the 4-D masks slot decoding needs."""
    return getattr(client.model.config, "_attn_implementation", None) in MASKED_ATTENTION


def decode_continuous(client: Any, seqs: list[list[int]], config: Any, asks: list[Asked] | None = None,
                      seeds: list[int | None] | None = None) -> Decoded | None:
    """Decode ``config.n`` sequences from each prompt of ``seqs`` through ``client.batch_size × config.n`` slots.
    ``asks``: per prompt, what it asks of the decoding rules (`tinytool.llm.rules`; every row of the prompt keeps
    to it): a grammar's masks for all constrained slots of a step are computed together, and a value guard ends a
    row once it has written a call that repeats an earlier one. ``seeds``: per prompt, a seed of its own or None;
    when sampling, the ``j``-th row of a prompt with a seed draws from a generator of its own (`row_seed`), so its
    tokens do not depend on the other prompts of the call; rows without one draw from the global RNG.

    Returns, per prompt, ``config.n`` pairs ``(generated token ids, per-step entropies or None)`` in the order they
    finished — the ids end at the first EOS (kept), at the first stop string, where a rule ends the row, or at
    ``max_new_tokens`` — or None when the model cannot decode this way (no plain per-layer cache, an attention
    implementation that takes no 4-D mask, a one-token prompt): the caller then decodes padded batches."""
    if not _masked(client):
        return None
    if not seqs or min(len(s) for s in seqs) < 2:
        return None
    return _Slots(client, seqs, config, asks or [{} for _ in seqs], seeds).decode()


def row_seed(seed: int, j: int) -> int:
    """The seed of the ``j``-th sampled row of a prompt seeded with ``seed`` (distinct rows, distinct draws)."""
    return (seed * 1_000_003 + j) % 2**63


class _Rows:
    """What both slot decoders share: a step's forward pass over the slots and where a row ends. Subclasses hold
    ``client``, ``model``, ``device``, ``torch``, ``eos``, ``rules``, ``step`` (a `_Step`) and per slot ``busy``
    (a `_Row` or None), ``pos`` and ``nxt``."""

    config: Any = None  #: the settings of the rows that have none of their own (a `decode_continuous` call's)

    def forward(self, cache: Any) -> Any:
        """The next-token logits (float32) of every slot: one column per slot at its own position, each slot seeing
        its columns only (an idle slot writes column 0 and reads only it; its output is ignored)."""
        torch, device, step = self.torch, self.device, self.step
        live = [r is not None for r in self.busy]
        width = max(p for p, a in zip(self.pos, live, strict=True) if a) + 1
        step.rows = torch.arange(len(self.busy), device=device)
        step.pos = torch.tensor([p if a else 0 for p, a in zip(self.pos, live, strict=True)], device=device)
        step.width, step.count = width, len(self.busy)
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

    def ends(self, slot: int, row: _Row, tok: int) -> bool:
        """Whether ``row`` (in ``slot``) ends with ``tok``, the token it just took: an EOS, a rule, its token limit,
        one of its stop strings."""
        gen = row.gen or self.config
        stops = gen.stop
        if tok in self.eos or self.rules.ends(slot) or len(row.tokens) >= gen.max_new_tokens:
            return True
        window = max((len(s) for s in stops), default=0) + 8  # enough to hold any stop string and spare
        return bool(stops) and self.client.contains_stop(row.tokens[-window:], stops)

    def generator(self, seed: int) -> Any:
        """A random generator of ``seed`` on the model's device, for a row that samples on its own."""
        return self.torch.Generator(device=self.device).manual_seed(seed)

    def draw_own(self, logits: Any, picked: list[int], slots: list[int]) -> None:
        """Set ``picked`` of each of ``slots`` to a draw from its row's own generator, under its row's settings (the
        call's where it has none)."""
        for s in slots:
            row = self.busy[s]
            gen = row.gen or self.config
            picked[s] = int(sample_next(logits[s:s + 1], gen.temperature, gen.top_p, False, row.generator)[0])


class _Slots(_Rows):
    """One `decode_continuous` call: the waiting sequences, the slots' key/value buffers, positions and rows, the
    rules they keep to, and what finished."""

    def __init__(self, client: Any, seqs: list[list[int]], config: Any, asks: list[Asked],
                 seeds: list[int | None] | None = None):
        import torch

        self.client, self.model, self.seqs, self.config, self.asks = client, client.model, seqs, config, asks
        self.seeds = None if config.greedy or not seeds or all(s is None for s in seeds) else seeds
        n = config.n
        self.eos = set(client.eos_ids)
        self.config = _stops_tuple(config)
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
        self.lazy = self.rules.lazy and not config.entropy and config.top_p >= 1.0 and self.seeds is None
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
        p, j = self.queue.pop()
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
        own = self.seeds is not None and self.seeds[p] is not None
        self.busy[slot] = _Row(p, generator=self.generator(row_seed(self.seeds[p], j)) if own else None)
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

    def choose(self, logits: Any) -> tuple[list[int], list[float] | None]:
        """Every slot's next token under its rules, and the entropies of what was sampled from (when asked)."""
        config, temperature = self.config, self.temperature

        def sample(z: Any) -> Any:
            return sample_next(z, temperature, config.top_p, config.greedy)

        if self.lazy:  # masks only for the rows whose choice the rule refuses (the same tokens, less work)
            return self.rules.pick(logits, sample), None
        logits = self.rules.mask(logits)
        ent = entropy_of(logits, temperature).tolist() if config.entropy else None
        own = [s for s, row in enumerate(self.busy) if row is not None and row.generator is not None]
        # rows with a seed of their own draw from their generator; the global RNG draws only for the others
        picked = (logits.argmax(dim=-1) if len(own) == len(self.busy) else sample(logits)).tolist()
        self.draw_own(logits, picked, own)
        self.rules.advance(picked)
        return picked, ent

    def record(self, picked: list[int], ent: list[float] | None) -> None:
        """Append each busy slot's token; end the rows that end here (`ends`)."""
        for s, row in enumerate(self.busy):
            if row is None:
                continue
            tok = int(picked[s])
            row.tokens.append(tok)
            if ent is not None:
                row.entropy.append(float(ent[s]))
            self.pos[s] += 1
            self.nxt[s] = tok
            if self.ends(s, row, tok):
                self.finish(s)


#: buffer columns are allocated in steps of this many (fewer reallocations as longer sequences come in)
_COLUMNS = 256


def live_slots(client: Any, slots: int) -> LiveSlots | None:
    """`LiveSlots` of ``slots`` rows over ``client``'s model (a `tinytool.llm.hf.HFClient` with continuous batching
    on), or None when the model cannot decode that way (an attention implementation that takes no 4-D mask, a cache
    that is not a plain per-layer key/value cache: found by prefilling one token)."""
    if not getattr(client, "continuous", False) or not hasattr(client, "prefill_row") or not _masked(client):
        return None
    import torch

    with torch.inference_mode():
        if client.prefill_row(client.eos_ids[:1]) is None:
            return None
    return LiveSlots(client, slots)


class LiveSlots(_Rows):
    """Continuous batching that takes sequences while it decodes: up to ``slots`` rows decode together, each
    admitted (`admit`) between two steps under its own `tinytool.llm.base.GenerationConfig` (token limit, stop
    strings, temperature and top-p; a sampled row draws from a generator seeded with its own seed, so its tokens do
    not depend on which rows it shared steps with) and its own decoding rules; `decode_step` decodes one token for
    every row and says which ended.

    The busy rows are packed at the front of the buffers (a step decodes rows ``0..len(busy)-1``, nothing idle):
    a row that ends takes the last row's place. The buffers grow as rows and longer sequences come (rows doubling up
    to ``slots``, columns in steps of `_COLUMNS`, up to what the longest sequence's prompt and token limit need),
    and are dropped when the last row ends. The rules run over all ``slots`` rows (a rule keeps a state per row,
    and rows come and go): the step's logits are padded to them."""

    def __init__(self, client: Any, slots: int):
        import torch

        self.client, self.model, self.torch, self.slots = client, client.model, torch, slots
        self.device = client.device
        self.eos = set(client.eos_ids)
        self.step = _Step()
        self.keys: list[Any] = []
        self.values: list[Any] = []
        self.busy: list[_Row] = []
        self.pos: list[int] = []
        self.nxt: list[int] = []
        self.capacity = 0
        self.cache: Any = None
        self.rules = Rules(client, slots, [])

    @property
    def free(self) -> int:
        """Rows that can take a sequence now."""
        return self.slots - len(self.busy)

    def admit(self, ids: list[int], gen: Any, ask: Asked, owner: Any) -> None:
        """Start decoding the prompt ``ids`` (two tokens at least) under ``gen`` and ``ask`` (what it asks of the
        decoding rules) in a free row; ``owner`` is what `decode_step` reports its tokens under."""
        torch = self.torch
        self.cover(ask)
        row_rules.prepare(self.client, [ask])  # a grammar that does not compile fails here, not mid-step
        with torch.inference_mode():
            layers = self.client.prefill_row(ids[:-1])
            if layers is None:  # `live_slots` prefilled one token: the cache is a plain one
                raise RuntimeError("the model's cache cannot be prefilled row by row")
            slot, length = len(self.busy), len(ids) - 1
            rows = len(self.keys[0]) if self.keys else 0
            need = length + gen.max_new_tokens
            if slot >= rows or need > self.capacity:
                self.resize(layers, max(rows, min(self.slots, max(2 * rows, slot + 1))),
                            max(self.capacity, -(-need // _COLUMNS) * _COLUMNS))
            for i, (k, v) in enumerate(layers):
                self.keys[i][slot, :, :length] = k[0]
                self.values[i][slot, :, :length] = v[0]
        self.busy.append(_Row(owner, gen=_stops_tuple(gen), generator=None if gen.greedy else
                              self.generator(gen.seed or 0)))
        self.pos.append(length)
        self.nxt.append(ids[-1])
        self.rules.start(slot, ask)

    def cover(self, ask: Asked) -> None:
        """Make the rules cover what ``ask`` asks (the rows' states kept)."""
        have = {rule.name: rule for rule in self.rules.rules}
        if set(ask) <= set(have):
            return
        wider = Rules(self.client, self.slots, [ask, dict.fromkeys(have)])
        wider.rules = [have.get(rule.name, rule) for rule in wider.rules]
        self.rules = wider

    def resize(self, layers: list[tuple[Any, Any]], rows: int, capacity: int) -> None:
        """Buffers of ``rows`` rows and ``capacity`` columns, in the decode dtype (shaped after ``layers``, a
        prefill's), holding what the busy rows wrote."""
        torch = self.torch
        dtype = None if self.client.decodes_bf16() else next(self.model.parameters()).dtype
        keys, values = [], []
        for i, (k, v) in enumerate(layers):
            _, heads, _, kd = k.shape
            keys.append(torch.zeros((rows, heads, capacity, kd), dtype=dtype or k.dtype, device=k.device))
            values.append(torch.zeros((rows, heads, capacity, v.shape[-1]), dtype=dtype or v.dtype, device=v.device))
            if self.keys:
                n, width = len(self.busy), self.capacity
                keys[i][:n, :, :width] = self.keys[i][:n]
                values[i][:n, :, :width] = self.values[i][:n]
        self.keys, self.values, self.capacity = keys, values, capacity
        self.cache = _slot_cache(self.keys, self.values, self.step)

    def decode_step(self) -> list[tuple[Any, int, list[int] | None]]:
        """Decode one token for every busy row: per row ``(owner, token, tokens)``, ``tokens`` being everything the
        row generated when it ends here (EOS kept, as `decode_continuous` keeps it), else None; ended rows leave."""
        with self.torch.inference_mode():
            picked = self.choose(self.forward(self.cache))
        out = []
        for s, row in enumerate(self.busy):
            tok = int(picked[s])
            row.tokens.append(tok)
            self.pos[s] += 1
            self.nxt[s] = tok
            out.append((row.prompt, tok, row.tokens if self.ends(s, row, tok) else None))
        for s in reversed(range(len(out))):  # from the back: the last row, moved into an ended one's place, is busy
            if out[s][2] is not None:
                self.remove(s)
        return out

    def choose(self, logits: Any) -> list[int]:
        """Every busy row's next token under its rules and settings."""
        n = len(self.busy)
        if self.rules:  # the rules keep a state for each of the `slots` rows
            full = logits.new_zeros((self.slots, logits.shape[1]))
            full[:n] = logits
            logits = full
        if self.rules.lazy and all(row.gen.greedy for row in self.busy):
            return self.rules.pick(logits, lambda z: z.argmax(dim=-1))[:n]
        logits = self.rules.mask(logits)
        picked = logits.argmax(dim=-1).tolist()
        self.draw_own(logits, picked, [s for s, row in enumerate(self.busy) if not row.gen.greedy])
        self.rules.advance(picked)
        return picked[:n]

    def drop(self, owner: Any) -> None:
        """Stop decoding ``owner``'s row (its client went away)."""
        for s, row in enumerate(self.busy):
            if row.prompt is owner:
                self.remove(s)
                return

    def remove(self, slot: int) -> None:
        """The row in ``slot`` leaves: the last busy row takes its place (its written columns copied, its rule
        states moved)."""
        self.rules.stop(slot)
        last = len(self.busy) - 1
        if slot != last:
            written = self.pos[last]
            with self.torch.inference_mode():  # the buffers are inference tensors
                for k, v in zip(self.keys, self.values, strict=True):
                    k[slot, :, :written] = k[last, :, :written]
                    v[slot, :, :written] = v[last, :, :written]
            self.busy[slot], self.pos[slot], self.nxt[slot] = self.busy[last], self.pos[last], self.nxt[last]
            order = list(range(self.slots))
            order[slot], order[last] = last, slot
            self.rules.keep(order)
        del self.busy[last], self.pos[last], self.nxt[last]
        if not self.busy:
            self.clear()

    def clear(self) -> list[Any]:
        """Drop every row and the buffers (memory back when nothing decodes); the owners of the rows dropped."""
        owners = [row.prompt for row in self.busy]
        self.busy, self.pos, self.nxt = [], [], []
        self.keys, self.values, self.capacity, self.cache = [], [], 0, None
        self.rules = Rules(self.client, self.slots, [])
        return owners


__all__ = ["MASKED_ATTENTION", "LiveSlots", "decode_continuous", "entropy_of", "live_slots", "row_seed", "sample_next"]
