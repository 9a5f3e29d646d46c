"""Local Hugging Face backend: batched `generate` on CPU or GPU.

Prompts are sorted by length inside a call so each batch carries little padding, then left-padded
(decoder-only models continue from the right edge). Sampling is seeded once per call, so the same
call gives the same completions; requests that carry their own ``seed`` draw from generators of that seed (in
one continuous batch where the model allows it, else each alone), so their completions do not depend on the
other requests of the call. Mean token entropy is measured on the fly by a logits processor
that sees the raw float32 logits of each step (the same tensor ``output_logits=True`` would keep),
so no per-step vocabulary-sized tensor is stored for the whole generation.

**Prefill and decode run separately.** Each prompt is prefilled alone (no padding, so attention
takes the causal fast path instead of a padded ``[B, heads, T, T]`` mask), with bf16 autocast where
it pays; the per-row key/value caches are then laid side by side, left-padded, and ``generate``
decodes the whole batch from there. Prefill is compute-bound and gains from bf16; decoding one token
per row is bound by memory traffic and per-op overhead, where autocast's weight casts cost more than
they save on CPU. Measured on a 2-core AVX512-BF16 EPYC with SmolLM2-135M (``HFClient`` docs), so
decoding stays in the model's dtype on CPU by default.

**Prefix cache.** Prompt caches are kept in a small LRU store (bounded in bytes); a prompt that
extends one seen before (the next step of a multi-turn dialogue, a rollout of the same prompt) only
prefills its new tokens.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from typing import Any

from tinytool.llm import rules
from tinytool.llm.base import Completion, GenerationConfig, LLMClient, Request


def render_prompt(tokenizer: Any, request: Request) -> str:
    """The prompt text for ``request``: ``request.prompt`` as is, else the tokenizer's chat template
    applied to the messages (with ``tools`` only when the request carries them), ending with the
    assistant generation prompt."""
    if request.prompt is not None:
        return request.prompt
    kwargs: dict[str, Any] = {"add_generation_prompt": True, "tokenize": False}
    if request.tools is not None:
        kwargs["tools"] = request.tools
    try:
        text = tokenizer.apply_chat_template(request.messages, **kwargs)
    except ValueError as exc:
        raise ValueError(
            f"cannot render chat messages with this tokenizer ({exc}); give the tokenizer a chat "
            "template or pass Request.prompt"
        ) from exc
    if not isinstance(text, str):
        raise TypeError(f"apply_chat_template returned {type(text).__name__}, expected str")
    return text


def _eos_ids(model: Any, tokenizer: Any) -> list[int]:
    """Every token id that ends a turn: the model's generation config EOS ids and the tokenizer's."""
    ids: set[int] = set()
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(gen_eos, int):
        ids.add(gen_eos)
    elif gen_eos is not None:
        ids.update(int(i) for i in gen_eos)
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    if not ids:
        raise ValueError("neither the model's generation config nor the tokenizer defines an EOS token")
    return sorted(ids)


def _entropy_recorder(temperature: float):
    """A logits processor that records, per step, the entropy (nats) of softmax(logits / T) for each
    row and passes the scores through unchanged. Logsumexp form, float32, one step at a time."""
    import torch
    from transformers import LogitsProcessor

    from tinytool.llm.continuous import entropy_of

    class EntropyRecorder(LogitsProcessor):
        def __init__(self) -> None:
            self.steps: list[torch.Tensor] = []

        def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
            self.steps.append(entropy_of(scores.float(), temperature))
            return scores

    return EntropyRecorder()


class _PrefixStore:
    """Least-recently-used key/value caches of prompts, keyed by their token ids, bounded in bytes.

    An entry holds, per layer, ``(keys, values)`` of shape ``[1, heads, len(ids), head_dim]``.
    `longest` finds the entry sharing the longest token prefix with a new prompt; its tensors sliced
    to that prefix are exactly the cache of those tokens (a causal model's cache at a position
    depends only on the tokens up to it)."""

    def __init__(self, max_bytes: int):
        from collections import OrderedDict

        self.max_bytes = max_bytes
        self.entries: OrderedDict[tuple[int, ...], list[tuple[Any, Any]]] = OrderedDict()
        self.bytes = 0
        self.hits = 0  #: prompt tokens served from the store
        self.misses = 0  #: prompt tokens prefilled

    @staticmethod
    def _size(layers: list[tuple[Any, Any]]) -> int:
        return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in layers)

    def longest(self, ids: list[int]) -> tuple[int, list[tuple[Any, Any]] | None]:
        best, best_key = 0, None
        for key in self.entries:
            n = min(len(key), len(ids))
            j = 0
            while j < n and key[j] == ids[j]:
                j += 1
            if j > best:
                best, best_key = j, key
        if best_key is None:
            return 0, None
        self.entries.move_to_end(best_key)
        return best, self.entries[best_key]

    def put(self, ids: list[int], layers: list[tuple[Any, Any]]) -> None:
        size = self._size(layers)
        if size > self.max_bytes or not ids:
            return
        key = tuple(ids)
        # an entry that is a prefix of the new one (a dialogue's previous step) is subsumed by it
        for old in [k for k in self.entries if len(k) <= len(key) and key[:len(k)] == k]:
            self.bytes -= self._size(self.entries.pop(old))
        self.entries[key] = layers
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, old = self.entries.popitem(last=False)
            self.bytes -= self._size(old)


class HFClient(LLMClient):
    """Batched generation with a local ``transformers`` causal LM.

    ``batch_size`` prompts decode at once (each expanded to ``config.n`` sequences); a call may hold any
    number of prompts. ``device``: move the model there (None leaves it where it is). ``bf16``: autocast to
    bfloat16 — None decides by hardware (`tinytool.models.use_bf16`), True/False force it.
    ``decode_bf16``: also autocast while decoding — None means on CUDA only: on CPUs a small model's
    decode step is faster in fp32 than under bf16 autocast, while its prefill is faster in bf16 (figures in
    ``benchmarks/results/eval.json``). ``prefix_cache_mb``: memory for cached prompt
    prefixes (0 turns the store off). ``continuous``: refill a finished row's slot with the next waiting
    prompt (`tinytool.llm.continuous`) instead of decoding padded batches until their longest row ends.
    """

    def __init__(self, model: Any, tokenizer: Any, batch_size: int = 8, device: str | None = None,
                 bf16: bool | None = None, name: str | None = None, decode_bf16: bool | None = None,
                 prefix_cache_mb: float = 2048, continuous: bool = True):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if prefix_cache_mb < 0:
            raise ValueError(f"prefix_cache_mb must be >= 0, got {prefix_cache_mb}")
        if tokenizer.pad_token_id is None:
            raise ValueError("the tokenizer has no pad token; load it with tinytool.models.loading.load_tokenizer")
        if device is not None:
            model.to(device)
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.bf16 = bf16
        self.decode_bf16 = decode_bf16
        self.continuous = continuous
        self.prefix_store = _PrefixStore(int(prefix_cache_mb * 2**20))
        self._rowwise_prefill: bool | None = None  # None: not known until the first prefill
        self.device = next(model.parameters()).device
        self.eos_ids = _eos_ids(model, tokenizer)
        self.name = name or str(getattr(model.config, "_name_or_path", "") or type(model).__name__)
        self._stop_criteria: dict[tuple[str, ...], Any] = {}
        self._memo: dict[str, Any] = {}
        self._texts: dict[int, str] = {}

    def memo(self, key: str, make: Any) -> Any:
        """``make()``, made once per client and kept under ``key`` (what a decoding rule reads off this model's
        tokenizer once: a grammar bank, the tokens a guard looks at)."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def token_text(self, token: int) -> str:
        """One token's text, special tokens written out (cached)."""
        text = self._texts.get(token)
        if text is None:
            text = self._texts[token] = self.tokenizer.decode([token], skip_special_tokens=False)
        return text

    @classmethod
    def from_spec(cls, spec: str | os.PathLike, *, cache: str | os.PathLike | None = None, dtype: Any = None,
                  batch_size: int = 8, device: str | None = None, bf16: bool | None = None,
                  **model_kwargs: Any) -> HFClient:
        """Load model and tokenizer from a hub id, local directory, ``.gguf`` file or the bundled alias
        (see `tinytool.models.loading`). ``device`` None picks CUDA when available, else CPU."""
        import torch

        from tinytool.models.loading import load_model, load_tokenizer

        model = load_model(spec, cache, dtype=dtype, **model_kwargs)
        tokenizer = load_tokenizer(spec, cache)
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        return cls(model, tokenizer, batch_size=batch_size, device=device, bf16=bf16, name=str(spec))

    # -- what is run ---------------------------------------------------------------------------

    def _autocast(self):
        """The prefill's autocast context."""
        from tinytool.models.loading import autocast

        if not self._uses_bf16():
            return nullcontext()
        return autocast(self.device.type, enabled=True)

    def decodes_bf16(self) -> bool:
        """Whether decoding runs under bf16 autocast (see the class docstring)."""
        if not self._uses_bf16():
            return False
        return self.device.type == "cuda" if self.decode_bf16 is None else self.decode_bf16

    def decode_autocast(self):
        """The decode steps' autocast context."""
        import torch

        if not self.decodes_bf16():
            return nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)

    def _uses_bf16(self) -> bool:
        from tinytool.models.precision import use_bf16

        return self.device.type in ("cpu", "cuda") and use_bf16(self.bf16, self.device)

    def describe(self) -> dict[str, Any]:
        dtype = next(self.model.parameters()).dtype
        return {
            "backend": type(self).__name__,
            "name": self.name,
            "path": str(getattr(self.model.config, "_name_or_path", "")),
            "dtype": str(dtype).removeprefix("torch."),
            "autocast_bf16": self._uses_bf16(),
            "decode_autocast_bf16": self.decodes_bf16(),
            "prefix_cache_mb": round(self.prefix_store.max_bytes / 2**20, 1),
            "batch_size": self.batch_size,
            "continuous_batching": self.continuous,
            "device": str(self.device),
        }

    def render_prompt(self, request: Request) -> str:
        """The exact prompt text this client feeds the model for ``request``."""
        return render_prompt(self.tokenizer, request)

    # -- generation ----------------------------------------------------------------------------

    def generate(self, requests: list[Request], config: GenerationConfig) -> list[list[Completion]]:
        if not requests:
            return []
        prompts = [self.render_prompt(r) for r in requests]
        # the rendered prompt already holds BOS/special tokens where the template wants them
        token_ids = self.tokenizer(prompts, add_special_tokens=False)["input_ids"]
        return self.generate_ids(token_ids, config, [r.seed for r in requests], [rules.asked(r) for r in requests])

    def generate_ids(self, token_ids: list[list[int]], config: GenerationConfig,
                     seeds: list[int | None] | None = None,
                     asks: list[rules.Asked] | None = None) -> list[list[Completion]]:
        """`generate` from prompts already tokenized; each completion's ``meta["token_ids"]`` holds the tokens it
        generated (its end-of-turn token included when it stopped there). ``seeds``: per prompt, as
        `Request.seed`; ``asks``: per prompt, what it asks of the decoding rules (`tinytool.llm.rules.asked` of its
        request's ``rules``, each prepared before anything decodes: a grammar that does not compile fails the call
        at once)."""
        import torch

        for i, ids in enumerate(token_ids):
            if not ids:
                raise ValueError(f"request {i} renders to an empty prompt")
        seeds = seeds or [None] * len(token_ids)
        asks = asks or [{} for _ in token_ids]
        rules.prepare(self, asks)
        results: list[list[Completion]] = [[] for _ in token_ids]
        if not config.greedy and any(s is not None for s in seeds):
            together = self._seeded_together(token_ids, config, seeds, asks)
            if together is not None:
                return together
        # when sampling without continuous batching, requests with a seed of their own form groups of one (the RNG
        # is shared by a padded batch); greedy decoding draws nothing, so every request shares the batches
        groups: dict[tuple[bool, int | None], list[int]] = {}
        for i, own_seed in enumerate(seeds):
            key = (False, config.seed) if own_seed is None or config.greedy else (True, i)
            groups.setdefault(key, []).append(i)
        with torch.inference_mode():
            for (own, _), members in groups.items():
                seed = seeds[members[0]] if own else config.seed
                if seed is not None:
                    torch.manual_seed(seed)
                # longest first: similar lengths share a batch, and an out-of-memory shows up at once
                order = sorted(members, key=lambda i: -len(token_ids[i]))
                held = [asks[i] for i in order]
                rows = self._generate_rows([token_ids[i] for i in order], config,
                                           **({"asks": held} if any(held) else {}))
                for i, completions in zip(order, rows):
                    results[i] = completions
        return results

    def _seeded_together(self, token_ids: list[list[int]], config: GenerationConfig, seeds: list[int | None],
                         asks: list[rules.Asked]) -> list[list[Completion]] | None:
        """Sampled requests, some with a seed of their own, decoded in one continuous batch: each seeded row draws
        from a generator of its own (`tinytool.llm.continuous.row_seed`), so its completions do not depend on the
        other requests; the others draw from the global RNG seeded with ``config.seed``. None where the model
        cannot decode continuously (the caller then decodes a seeded request alone)."""
        import torch

        from tinytool.llm.continuous import decode_continuous

        if not self.continuous:
            return None
        order = sorted(range(len(token_ids)), key=lambda i: -len(token_ids[i]))  # longest first, as below
        with torch.inference_mode():
            if config.seed is not None:
                torch.manual_seed(config.seed)
            decoded = decode_continuous(self, [token_ids[i] for i in order], config, [asks[i] for i in order],
                                        [seeds[i] for i in order])
        if decoded is None:
            return None
        results: list[list[Completion]] = [[] for _ in token_ids]
        done = self._decoded_completions([token_ids[i] for i in order], decoded, config, [asks[i] for i in order])
        for i, completions in zip(order, done, strict=True):
            results[i] = completions
        return results

    def _generate_rows(self, seqs: list[list[int]], config: GenerationConfig,
                       asks: list[rules.Asked] | None = None) -> list[list[Completion]]:
        """Completions of ``seqs`` (longest first): continuous batching through ``batch_size × n`` slots where
        the model allows it (`tinytool.llm.continuous`), padded batches of ``batch_size`` prompts otherwise;
        ``asks``: per prompt, what it asks of the decoding rules (`tinytool.llm.rules`)."""
        from tinytool.llm.continuous import decode_continuous

        asks = asks or [{} for _ in seqs]
        decoded = decode_continuous(self, seqs, config, asks) if self.continuous else None
        if decoded is None:
            out: list[list[Completion]] = []
            for start in range(0, len(seqs), self.batch_size):
                part = slice(start, start + self.batch_size)
                out.extend(self._generate_batch(seqs[part], config, asks[part]))
            return out
        return self._decoded_completions(seqs, decoded, config, asks)

    def _decoded_completions(self, seqs: list[list[int]], decoded: Any, config: GenerationConfig,
                             asks: list[rules.Asked]) -> list[list[Completion]]:
        """The `Completion`s of what `tinytool.llm.continuous.decode_continuous` decoded from ``seqs``."""
        return [[self._completion(tokens, config, len(prompt), steps, **ask) for tokens, steps in rows]
                for prompt, rows, ask in zip(seqs, decoded, asks, strict=True)]

    def completion(self, tokens: list[int], config: GenerationConfig, prompt_tokens: int,
                   request: Any = None) -> Completion:
        """The generated ``tokens`` of a prompt of ``prompt_tokens`` tokens as a `Completion`, read as every decode
        path reads them (text, token count, finish reason), finished by the decoding rules ``request`` asks for
        (a `Request`, or anything with its ``rules``: `tinytool.llm.rules.asked`)."""
        ask = rules.asked(request) if request is not None else {}
        return self._completion(tokens, config, prompt_tokens, None, **ask)

    def _completion(self, tokens: list[int], config: GenerationConfig, prompt_tokens: int,
                    entropies: Any = None, **ask: Any) -> Completion:
        """One generated row as a `Completion`; ``entropies``: per-step entropies, averaged over the kept tokens;
        ``ask``: what the row's request asks of the decoding rules (`tinytool.llm.rules.Asked`), which finish its
        text (the value guard ends the turn before a repeated call: an answer cut there stopped, whatever the token
        limit did after it)."""
        text, n_tokens, finish = self._finish(tokens, config)
        finished = rules.finish(ask, text)
        if finished != text:
            text, finish = finished, "stop"
        entropy = None
        if entropies is not None and len(entropies):
            entropy = float(sum(entropies[:max(n_tokens, 1)]) / len(entropies[:max(n_tokens, 1)]))
        return Completion(text=text, n_tokens=n_tokens, entropy=entropy, finish_reason=finish,
                          meta={"prompt_tokens": prompt_tokens, "token_ids": tokens[:n_tokens]})

    def _gen_config(self, config: GenerationConfig):
        """A transformers generation config that says everything explicitly, so values from the
        model's own ``generation_config.json`` (top_k, repetition penalty, ...) cannot slip in.
        It also means no built-in logits processor runs before the entropy recorder (custom
        processors come before the temperature/top-p warpers), so the recorder sees raw logits."""
        from transformers import GenerationConfig as HFGenerationConfig

        gen = self.model.generation_config
        kwargs: dict[str, Any] = {
            "max_new_tokens": config.max_new_tokens,
            "num_return_sequences": config.n,
            "eos_token_id": self.eos_ids,
            "pad_token_id": self.tokenizer.pad_token_id,
            "bos_token_id": getattr(gen, "bos_token_id", None),
            "num_beams": 1,
            "repetition_penalty": 1.0,
            "no_repeat_ngram_size": 0,
            "typical_p": 1.0,
            "min_length": 0,
        }
        if config.greedy:
            kwargs.update(do_sample=False, temperature=1.0, top_p=1.0)
        else:
            kwargs.update(do_sample=True, temperature=config.temperature, top_p=config.top_p,
                          top_k=0)  # transformers would otherwise add top_k=50
        return HFGenerationConfig(**kwargs)

    def rules_processor(self, asks: list[rules.Asked]) -> Any:
        """A logits processor for ``model.generate`` that keeps row ``i`` to what ``asks[i]`` asks of the decoding
        rules (`tinytool.llm.rules.logits_processor`; None when no row asks anything): the padded fallback's and
        the server stream's."""
        return rules.logits_processor(self, asks)

    def _stop_criterion(self, stop: tuple[str, ...]):
        """Stop-string criterion for early stopping (built once per stop set: it scans the vocabulary)."""
        if stop not in self._stop_criteria:
            from transformers import StopStringCriteria

            self._stop_criteria[stop] = StopStringCriteria(self.tokenizer, list(stop))
        return self._stop_criteria[stop]

    def prefill_row(self, ids: list[int]) -> list[tuple[Any, Any]] | None:
        """The key/value cache of ``ids`` (per layer, ``[1, heads, len, head_dim]``), from the
        prefix store where it holds a prefix, prefilled under the prefill autocast otherwise. None
        when the model's cache is not a plain per-layer key/value cache (sliding windows, recurrent
        state): the caller then prefills the padded batch the ordinary way. That is found out on the
        first prefill and remembered."""
        import torch
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer

        if self._rowwise_prefill is False:
            return None
        store = self.prefix_store
        n, layers = store.longest(ids) if store.max_bytes else (0, None)
        if layers is not None and n == len(ids):
            store.hits += n
            return [(k[:, :, :n], v[:, :, :n]) for k, v in layers]
        cache = DynamicCache(config=self.model.config)
        for i, (k, v) in enumerate(layers or []):
            cache.update(k[:, :, :n], v[:, :, :n], i)
        new = torch.tensor([ids[n:]], dtype=torch.long, device=self.device)
        with self._autocast():
            self.model(input_ids=new, past_key_values=cache, use_cache=True, logits_to_keep=1)
        self._rowwise_prefill = bool(cache.layers) and all(type(layer) is DynamicLayer for layer in cache.layers)
        if not self._rowwise_prefill:
            return None
        store.hits += n
        store.misses += len(ids) - n
        out = [(layer.keys, layer.values) for layer in cache.layers]
        if store.max_bytes:
            store.put(ids, out)
        return out

    def _batch_cache(self, seqs: list[list[int]], width: int, repeat: int):
        """A left-padded cache of every row's prompt minus its last token, ``repeat`` rows per
        prompt, in the decode dtype; None when a row cannot be prefilled alone."""
        import torch
        from transformers import DynamicCache

        if min(len(s) for s in seqs) < 2:
            return None  # a one-token prompt has nothing to prefill
        rows = []
        for s in seqs:
            row = self.prefill_row(s[:-1])
            if row is None:
                return None
            rows.append(row)
        cast = None if self.decodes_bf16() else next(self.model.parameters()).dtype
        cache = DynamicCache(config=self.model.config)
        for i in range(len(rows[0])):
            parts = []
            for which in (0, 1):
                ref = rows[0][i][which]
                _, heads, _, dim = ref.shape
                out = torch.zeros((len(seqs), heads, width - 1, dim), dtype=cast or ref.dtype, device=ref.device)
                for r, (s, row) in enumerate(zip(seqs, rows, strict=True)):
                    out[r, :, width - len(s):] = row[i][which][0]
                parts.append(out.repeat_interleave(repeat, dim=0) if repeat > 1 else out)
            cache.update(parts[0], parts[1], i)
        return cache

    def _generate_batch(self, seqs: list[list[int]], config: GenerationConfig,
                        asks: list[rules.Asked] | None = None) -> list[list[Completion]]:
        """One left-padded batch decoded by ``model.generate`` (the fallback of continuous batching); each row keeps
        to what its prompt asks of the decoding rules (``asks``) through `rules_processor`."""
        import torch
        from transformers import LogitsProcessorList, StoppingCriteriaList

        width = max(len(s) for s in seqs)
        input_ids = torch.full((len(seqs), width), self.tokenizer.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, s in enumerate(seqs):  # left padding
            input_ids[row, width - len(s):] = torch.tensor(s, dtype=torch.long)
            attention_mask[row, width - len(s):] = 1
        gen_config = self._gen_config(config)
        kwargs: dict[str, Any] = {}
        cache = self._batch_cache(seqs, width, config.n)
        if cache is not None:  # decode from the rows' own prefills; rows already repeated n times
            kwargs["past_key_values"] = cache
            input_ids = input_ids.repeat_interleave(config.n, dim=0)
            attention_mask = attention_mask.repeat_interleave(config.n, dim=0)
            gen_config.num_return_sequences = 1
        recorder = None
        asks = asks or [{} for _ in seqs]
        processors = LogitsProcessorList()
        ruled = self.rules_processor([a for a in asks for _ in range(config.n)])  # generate repeats each prompt
        if ruled is not None:  # n times, adjacently
            processors.append(ruled)
        if config.entropy:  # after the grammar: the entropy of what is sampled from
            recorder = _entropy_recorder(config.temperature if not config.greedy else 1.0)
            processors.append(recorder)
        if processors:
            kwargs["logits_processor"] = processors
        if config.stop:
            kwargs["stopping_criteria"] = StoppingCriteriaList([self._stop_criterion(tuple(config.stop))])
        with self.decode_autocast() if cache is not None else self._autocast():
            out = self.model.generate(
                input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device),
                generation_config=gen_config, **kwargs,
            )
        generated = out[:, width:].tolist()
        entropies = torch.stack(recorder.steps, dim=1).float().cpu() if recorder and recorder.steps else None
        completions: list[list[Completion]] = []
        for row, tokens in enumerate(generated):
            if row % config.n == 0:  # generate repeats each prompt n times, adjacently
                completions.append([])
            steps = entropies[row].tolist() if entropies is not None else None
            completions[-1].append(self._completion(tokens, config, len(seqs[row // config.n]), steps,
                                                    **asks[row // config.n]))
        return completions

    def _finish(self, tokens: list[int], config: GenerationConfig) -> tuple[str, int, str]:
        """Text, token count and finish reason of one generated row.

        The row ends at the first EOS (counted, not decoded) or just after the token that completes a
        stop string (searched in the text with special tokens kept, so a special-token stop string
        works too); the text is then cut before the first stop string.
        """
        eos = set(self.eos_ids)
        end = next((j for j, t in enumerate(tokens) if t in eos), None)
        hit_eos = end is not None
        body = tokens[:end] if hit_eos else list(tokens)
        pad = self.tokenizer.pad_token_id
        if not hit_eos and pad not in eos:  # a row stopped early is padded after its last token
            while body and body[-1] == pad:
                body.pop()
        stopped = False
        if config.stop and self.contains_stop(body, config.stop):
            lo, hi = 1, len(body)  # smallest prefix that holds a stop string
            while lo < hi:
                mid = (lo + hi) // 2
                if self.contains_stop(body[:mid], config.stop):
                    hi = mid
                else:
                    lo = mid + 1
            body = body[:lo]
            stopped = True
        text = self.tokenizer.decode(body, skip_special_tokens=True)
        if config.stop:
            cut = min((k for k in (text.find(s) for s in config.stop) if k >= 0), default=-1)
            if cut >= 0:
                text = text[:cut]
        n_tokens = len(body) + (1 if hit_eos and not stopped else 0)
        if hit_eos or stopped or n_tokens < config.max_new_tokens:
            return text, n_tokens, "stop"
        return text, n_tokens, "length"

    def contains_stop(self, tokens: list[int], stop: tuple[str, ...]) -> bool:
        """Whether ``tokens``, decoded with special tokens written out, hold one of the ``stop`` strings."""
        raw = self.tokenizer.decode(tokens, skip_special_tokens=False)
        return any(s in raw for s in stop)

    def close(self) -> None:
        """Drop the model; frees GPU memory once no one else holds it."""
        import torch

        self.model = None
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

