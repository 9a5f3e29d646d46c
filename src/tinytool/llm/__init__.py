"""LLM backends: local Hugging Face, vLLM, OpenAI-compatible HTTP (see `base`).

`get_client` turns one spec string into a backend. The backend classes are imported on first use,
so ``import tinytool.llm`` stays light (no torch, no vLLM).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tinytool.lazy import lazy_exports
from tinytool.llm.base import Completion, GenerationConfig, LLMClient, Request, ScriptedClient

if TYPE_CHECKING:
    from tinytool.llm.hf import HFClient
    from tinytool.llm.openai_compat import OpenAIClient, OpenAIError
    from tinytool.llm.vllm_backend import VLLMClient

__all__ = [
    "Completion", "GenerationConfig", "HFClient", "LLMClient", "OpenAIClient", "OpenAIError", "Request",
    "ScriptedClient", "VLLMClient", "get_client", "is_remote", "open_client", "parse_http_spec",
]

__getattr__ = lazy_exports(__name__, {
    "HFClient": "tinytool.llm.hf",
    "OpenAIClient": "tinytool.llm.openai_compat",
    "OpenAIError": "tinytool.llm.openai_compat",
    "VLLMClient": "tinytool.llm.vllm_backend",
})


def parse_http_spec(spec: str) -> tuple[str, str]:
    """Split ``URL@model`` (the part after ``openai:``) into base URL and model name. The last ``@``
    separates them, so a URL with user info still works."""
    url, sep, model = spec.rpartition("@")
    if not sep or not model or not url:
        raise ValueError(
            f"malformed endpoint spec {spec!r}: expected <base_url>@<model>, "
            "e.g. http://localhost:8000/v1@Qwen/Qwen2.5-7B-Instruct"
        )
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"malformed endpoint spec {spec!r}: the base URL must start with http:// or https://")
    return url, model


def is_remote(spec: str) -> bool:
    """Whether ``spec`` names a model served elsewhere (an endpoint, vLLM): no local weights, no dtype to choose."""
    return spec.startswith(("http://", "https://", "openai:", "vllm:"))


def open_client(spec: str, batch_size: int, dtype: str = "float32") -> LLMClient:
    """The client of ``spec`` as the verbs that generate open it (`get_client`): a local model decoding
    ``batch_size`` sequences at once in ``dtype`` (``float32`` or ``bfloat16``), an endpoint reached once before
    anything is written (a failed start leaves nothing behind)."""
    if is_remote(spec):
        client = get_client(spec)
        reachable = getattr(client, "check_reachable", None)
        if reachable is not None:
            try:
                reachable()
            except BaseException:
                client.close()
                raise
        return client
    if dtype == "bfloat16":
        import torch

        return get_client(spec, batch_size=batch_size, dtype=torch.bfloat16)
    return get_client(spec, batch_size=batch_size)


def get_client(spec: str, **kw: Any) -> LLMClient:
    """A backend for ``spec``:

    - ``openai:<base_url>@<model>`` or ``http(s)://<base_url>@<model>`` → `OpenAIClient`
    - ``vllm:<model spec>`` → `VLLMClient` (needs vLLM and a GPU)
    - ``llamacpp:<file.gguf>`` → `LlamaCppClient` (llama.cpp on the CPU; ``tinytool export`` writes the file)
    - anything else (hub id, local directory, ``.gguf``, ``smollm2-135m-instruct``) → `HFClient`

    ``kw`` go to the backend's constructor (`HFClient.from_spec` for local models).
    """
    spec = spec.strip()
    if not spec:
        raise ValueError("empty model spec")
    if spec.startswith("openai:"):
        url, model = parse_http_spec(spec.removeprefix("openai:"))
        from tinytool.llm.openai_compat import OpenAIClient

        return OpenAIClient(url, model, **kw)
    if spec.startswith(("http://", "https://")):
        url, model = parse_http_spec(spec)
        from tinytool.llm.openai_compat import OpenAIClient

        return OpenAIClient(url, model, **kw)
    if spec.startswith("vllm:"):
        target = spec.removeprefix("vllm:")
        if not target:
            raise ValueError("malformed spec 'vllm:': expected vllm:<model spec>, e.g. vllm:Qwen/Qwen2.5-0.5B-Instruct")
        from tinytool.llm.vllm_backend import VLLMClient

        return VLLMClient(target, **kw)
    if spec.startswith("llamacpp:"):
        from tinytool.llm.llamacpp import LlamaCppClient

        return LlamaCppClient(spec.removeprefix("llamacpp:"), **kw)
    from tinytool.llm.hf import HFClient

    return HFClient.from_spec(spec, **kw)
