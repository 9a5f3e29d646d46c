"""Local Hugging Face backend: batched `generate` on CPU or GPU.

Prompts are sorted by length inside a call so each batch carries little padding, then left-padded
(decoder-only models continue from the right edge). Sampling is seeded once per call, so the same
call gives the same completions. Mean token entropy is measured on the fly by a logits processor
that sees the raw float32 logits of each step (the same tensor ``output_logits=True`` would keep),
so no per-step vocabulary-sized tensor is stored for the whole generation.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from typing import Any

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

    class EntropyRecorder(LogitsProcessor):
        def __init__(self) -> None:
            self.steps: list[torch.Tensor] = []

        def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
            z = scores.float() / temperature
            logp = z - torch.logsumexp(z, dim=-1, keepdim=True)
            p = logp.exp()
            # p * logp is 0 * -inf = nan for masked tokens; their contribution is 0
            self.steps.append(-torch.where(p > 0, p * logp, torch.zeros_like(p)).sum(dim=-1))
            return scores

    return EntropyRecorder()


class HFClient(LLMClient):
    """Batched generation with a local ``transformers`` causal LM.

    ``batch_size`` prompts go through each ``generate`` call (each expanded to ``config.n``
    sequences). ``device``: move the model there (None leaves it where it is). ``bf16``: autocast to
    bfloat16 — None decides by hardware (CUDA, or a CPU with native bf16), True/False force it.
    """

    def __init__(self, model: Any, tokenizer: Any, batch_size: int = 8, device: str | None = None,
                 bf16: bool | None = None, name: str | None = None):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if tokenizer.pad_token_id is None:
            raise ValueError("the tokenizer has no pad token; load it with tinytool.models.loading.load_tokenizer")
        if device is not None:
            model.to(device)
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.bf16 = bf16
        self.device = next(model.parameters()).device
        self.eos_ids = _eos_ids(model, tokenizer)
        self.name = name or str(getattr(model.config, "_name_or_path", "") or type(model).__name__)
        self._stop_criteria: dict[tuple[str, ...], Any] = {}

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
        from tinytool.models.loading import autocast

        kind = self.device.type
        if kind not in ("cpu", "cuda") or self.bf16 is False:
            return nullcontext()
        return autocast(kind, enabled=self.bf16)

    def _uses_bf16(self) -> bool:
        from tinytool.models.loading import cpu_supports_bf16

        if self.bf16 is not None:
            return self.bf16 and self.device.type in ("cpu", "cuda")
        return self.device.type == "cuda" or (self.device.type == "cpu" and cpu_supports_bf16())

    def describe(self) -> dict[str, Any]:
        dtype = next(self.model.parameters()).dtype
        return {
            "backend": type(self).__name__,
            "name": self.name,
            "path": str(getattr(self.model.config, "_name_or_path", "")),
            "dtype": str(dtype).removeprefix("torch."),
            "autocast_bf16": self._uses_bf16(),
            "batch_size": self.batch_size,
            "device": str(self.device),
        }

    def render_prompt(self, request: Request) -> str:
        """The exact prompt text this client feeds the model for ``request``."""
        return render_prompt(self.tokenizer, request)

    # -- generation ----------------------------------------------------------------------------

    def generate(self, requests: list[Request], config: GenerationConfig) -> list[list[Completion]]:
        import torch

        if not requests:
            return []
        prompts = [self.render_prompt(r) for r in requests]
        # the rendered prompt already holds BOS/special tokens where the template wants them
        token_ids = self.tokenizer(prompts, add_special_tokens=False)["input_ids"]
        for i, ids in enumerate(token_ids):
            if not ids:
                raise ValueError(f"request {i} renders to an empty prompt")
        # longest first: similar lengths share a batch, and an out-of-memory shows up at once
        order = sorted(range(len(prompts)), key=lambda i: -len(token_ids[i]))
        results: list[list[Completion]] = [[] for _ in requests]
        if config.seed is not None:
            torch.manual_seed(config.seed)
        with torch.inference_mode(), self._autocast():
            for start in range(0, len(order), self.batch_size):
                chunk = order[start:start + self.batch_size]
                batch = self._generate_batch([token_ids[i] for i in chunk], config)
                for i, completions in zip(chunk, batch):
                    results[i] = completions
        return results

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

    def _stop_criterion(self, stop: tuple[str, ...]):
        """Stop-string criterion for early stopping (built once per stop set: it scans the vocabulary)."""
        if stop not in self._stop_criteria:
            from transformers import StopStringCriteria

            self._stop_criteria[stop] = StopStringCriteria(self.tokenizer, list(stop))
        return self._stop_criteria[stop]

    def _generate_batch(self, seqs: list[list[int]], config: GenerationConfig) -> list[list[Completion]]:
        import torch
        from transformers import LogitsProcessorList, StoppingCriteriaList

        width = max(len(s) for s in seqs)
        input_ids = torch.full((len(seqs), width), self.tokenizer.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, s in enumerate(seqs):  # left padding
            input_ids[row, width - len(s):] = torch.tensor(s, dtype=torch.long)
            attention_mask[row, width - len(s):] = 1
        kwargs: dict[str, Any] = {}
        recorder = None
        if config.entropy:
            recorder = _entropy_recorder(config.temperature if not config.greedy else 1.0)
            kwargs["logits_processor"] = LogitsProcessorList([recorder])
        if config.stop:
            kwargs["stopping_criteria"] = StoppingCriteriaList([self._stop_criterion(tuple(config.stop))])
        out = self.model.generate(
            input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device),
            generation_config=self._gen_config(config), **kwargs,
        )
        generated = out[:, width:].tolist()
        entropies = torch.stack(recorder.steps, dim=1).float().cpu() if recorder and recorder.steps else None
        completions: list[list[Completion]] = []
        for row, tokens in enumerate(generated):
            prompt_row = row // config.n  # generate repeats each prompt n times, adjacently
            if row % config.n == 0:
                completions.append([])
            text, n_tokens, finish = self._finish(tokens, config)
            entropy = None
            if entropies is not None:
                steps = entropies[row, :max(n_tokens, 1)]
                entropy = float(steps.mean())
            completions[-1].append(Completion(
                text=text, n_tokens=n_tokens, entropy=entropy, finish_reason=finish,
                meta={"prompt_tokens": len(seqs[prompt_row])},
            ))
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
        if config.stop and self._contains_stop(body, config.stop):
            lo, hi = 1, len(body)  # smallest prefix that holds a stop string
            while lo < hi:
                mid = (lo + hi) // 2
                if self._contains_stop(body[:mid], config.stop):
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

    def _contains_stop(self, tokens: list[int], stop: tuple[str, ...]) -> bool:
        raw = self.tokenizer.decode(tokens, skip_special_tokens=False)
        return any(s in raw for s in stop)

    def close(self) -> None:
        """Drop the model; frees GPU memory once no one else holds it."""
        import torch

        self.model = None
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

