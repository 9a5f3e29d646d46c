"""The one place that decides whether to compute in bfloat16.

bf16 pays where the hardware computes it natively: CUDA devices that support it, and CPUs with
AVX512-BF16 or AMX. Elsewhere it is emulated and slower than float32, so the default is off.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any


@functools.lru_cache(maxsize=1)
def cpu_supports_bf16() -> bool:
    """Does this CPU compute bf16 natively (AVX512-BF16 or AMX)? Emulated bf16 is slower than fp32."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def _device_type(device: Any) -> str:
    if device is None:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    kind = getattr(device, "type", None)  # a torch.device
    return str(kind if kind is not None else device).split(":", 1)[0]


def use_bf16(requested: bool | None = None, device: Any = None) -> bool:
    """Whether to compute in bf16 on ``device`` (a ``torch.device`` or a string such as ``"cuda:0"``;
    None: CUDA when available, else the CPU): ``requested`` when it is not None, else whether the
    device computes bf16 natively (`torch.cuda.is_bf16_supported` on CUDA, `cpu_supports_bf16` on
    the CPU; no on anything else)."""
    if requested is not None:
        return bool(requested)
    kind = _device_type(device)
    if kind == "cuda":
        import torch

        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    if kind == "cpu":
        return cpu_supports_bf16()
    return False


__all__ = ["cpu_supports_bf16", "use_bf16"]
