"""``tinytool doctor``: what this machine offers tinytool, and what is missing.

Versions of the libraries tinytool runs on, the CPU's bf16 support (bf16 autocast is fast only with it), the
GPU, where the bundled model, the BFCL wheel and the caches live, and which optional extras are missing (vLLM,
a headless browser for the report test). Nothing is downloaded: a missing wheel is reported, not fetched.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
from typing import Any

#: optional extras: import name → what it enables
EXTRAS = {
    "vllm": "fast GPU generation (teacher rollouts, RL rollouts, eval)",
    "openai": "the tests that drive tinytool serve with the official client",
    "deepspeed": "multi-GPU training with ZeRO",
}
CORE = ("torch", "transformers", "trl", "peft", "datasets", "accelerate", "fastapi", "uvicorn")


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def report() -> dict[str, Any]:
    """Everything ``tinytool doctor`` prints, as a mapping."""
    from tinytool.models.loading import ModelNotFound, bundled_gguf, cache_dir
    from tinytool.models.precision import cpu_supports_bf16

    out: dict[str, Any] = {"versions": {d: _version(d) for d in ("tinytool", *CORE)}}
    out["cpu"] = {"cores": os.cpu_count(), "bf16": cpu_supports_bf16()}
    try:
        import torch

        out["gpu"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except Exception as e:  # a broken CUDA setup is something to report, not to crash on
        out["gpu"] = f"unavailable ({e})"
    try:
        out["bundled_model"] = str(bundled_gguf())
    except ModelNotFound as e:
        out["bundled_model"] = f"missing: {e}"
    cache = cache_dir()
    out["cache"] = str(cache)
    from tinytool.bfcl.data import WHEEL_FILE

    wheel = os.environ.get("TINYTOOL_BFCL_WHEEL") or str(cache / "wheels" / WHEEL_FILE)
    out["bfcl_wheel"] = wheel if os.path.isfile(wheel) else f"not downloaded yet ({wheel}; fetched on first use)"
    out["missing_extras"] = {name: why for name, why in EXTRAS.items() if importlib.util.find_spec(name) is None}
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        out["missing_extras"]["chromium"] = "a headless browser for the HTML report test (Debian's chromium package)"
    return out


__all__ = ["report"]
