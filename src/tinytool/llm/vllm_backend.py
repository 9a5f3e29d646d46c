"""Optional vLLM backend (GPU): fast batched sampling for teacher rollouts and large evaluations.

vLLM is imported only when a `VLLMClient` is made, so tinytool works without it. Prompts are
rendered with the engine's own tokenizer chat template (or taken from ``Request.prompt``), the same
way the Hugging Face backend renders them. Entropy is not measured here (vLLM exposes only top-k
log-probabilities), so ``Completion.entropy`` stays None.
"""

from __future__ import annotations

import os
from typing import Any

from tinytool.llm.base import Completion, GenerationConfig, LLMClient, Request
from tinytool.llm.hf import render_prompt


class VLLMClient(LLMClient):
    """A ``vllm.LLM`` engine over a model spec (hub id, local directory, ``.gguf`` or the bundled
    alias, resolved by `tinytool.models.loading.resolve`). ``engine_kwargs`` go to ``vllm.LLM``
    (``gpu_memory_utilization``, ``max_model_len``, ``dtype``, ...)."""

    def __init__(self, spec: str | os.PathLike, **engine_kwargs: Any):
        try:
            import vllm
        except ImportError as exc:
            raise ImportError(
                "VLLMClient needs vLLM, which is not installed: `pip install vllm` (needs a CUDA GPU); "
                "on CPU use the Hugging Face backend instead"
            ) from exc
        from tinytool.models.loading import resolve

        self._vllm = vllm
        self.spec = str(spec)
        self.name = self.spec
        self.engine_kwargs = dict(engine_kwargs)
        self.llm = vllm.LLM(model=resolve(spec), **engine_kwargs)
        self.tokenizer = self.llm.get_tokenizer()

    def describe(self) -> dict[str, Any]:
        return {"backend": type(self).__name__, "name": self.name,
                "engine_kwargs": {k: str(v) for k, v in self.engine_kwargs.items()}}

    def render_prompt(self, request: Request) -> str:
        return render_prompt(self.tokenizer, request)

    def generate(self, requests: list[Request], config: GenerationConfig) -> list[list[Completion]]:
        from tinytool.llm.constrain import refuse

        if not requests:
            return []
        refuse(requests, "vLLM")
        def params(seed: int | None):
            return self._vllm.SamplingParams(
                n=config.n, temperature=config.temperature, top_p=config.top_p,
                max_tokens=config.max_new_tokens, seed=seed, stop=list(config.stop) or None,
            )

        if any(r.seed is not None for r in requests):  # one sampling seed per request
            params = [params(config.seed if r.seed is None else r.seed) for r in requests]  # type: ignore[assignment]
        else:
            params = params(config.seed)  # type: ignore[assignment]
        prompts = [self.render_prompt(r) for r in requests]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        return [
            [Completion(text=o.text, n_tokens=len(o.token_ids),
                        finish_reason="length" if o.finish_reason == "length" else "stop",
                        meta={"finish_reason": o.finish_reason, "prompt_tokens": len(out.prompt_token_ids or [])})
             for o in out.outputs]
            for out in outputs
        ]

    def close(self) -> None:
        """Drop the engine so its GPU memory can be reclaimed."""
        self.llm = None
