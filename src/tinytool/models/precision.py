"""The one decision about bf16 mixed precision."""

from __future__ import annotations

from typing import Any


def use_bf16(requested: bool | None = None, device: Any = None) -> bool:
    """bf16 autocast: as ``requested``, else on where it is fast (CUDA with bf16, CPUs with native bf16)."""
    import torch

    from tinytool.models.loading import cpu_supports_bf16

    if requested is not None:
        return bool(requested)
    kind = getattr(device, "type", None) or (str(device).split(":")[0] if device is not None else None)
    if kind is None:
        kind = "cuda" if torch.cuda.is_available() else "cpu"
    if kind == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return kind == "cpu" and cpu_supports_bf16()
