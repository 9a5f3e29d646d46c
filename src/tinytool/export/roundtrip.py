"""Read an exported GGUF back through ``transformers``' GGUF loader and compare its logits with the source model's.

Two differences are measured on each prompt's every position: against the source model as it is (what storing
the matrices in f16, bf16 or q8_0 costs), and against the source model with its matrices rounded the same way
(``gguf``'s own quantize and dequantize): the latter is float32 arithmetic noise when the file holds the right
weights in the right places, and large for any mistake in names, layout or metadata.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np

#: prompts the roundtrip is measured on (chat markup, digits, a call, plain text)
PROMPTS = (
    "<|im_start|>user\nWhat is the weather in Paris tomorrow?<|im_end|>\n<|im_start|>assistant\n",
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}\n</tool_call>',
    "The quick brown fox jumps over the lazy dog 1234567890 times.",
)


def rounded_copy(model: Any, kind: str) -> Any:
    """``model`` with every matrix stored as ``--type kind`` stores it and read back (norms untouched)."""
    import torch
    from gguf.quants import dequantize

    from tinytool.export.gguf_file import stored

    twin = copy.deepcopy(model)
    with torch.no_grad():
        for param in twin.parameters():
            array = param.detach().float().cpu().numpy()
            data, raw = stored(array, kind)
            back = dequantize(data, raw) if raw is not None else data.astype(np.float32)
            param.copy_(torch.from_numpy(np.ascontiguousarray(back).reshape(array.shape)))
    return twin


def logits(model: Any, tokenizer: Any, prompts: tuple[str, ...] | list[str]) -> list[Any]:
    import torch

    out = []
    with torch.no_grad():
        for text in prompts:
            ids = tokenizer(text, return_tensors="pt").input_ids
            out.append(model(input_ids=ids).logits[0].float())
    return out


def max_diff(a: list[Any], b: list[Any]) -> float:
    return max(float((x - y).abs().max()) for x, y in zip(a, b))


def roundtrip(source: Any, tokenizer: Any, gguf_path: Path, kind: str,
              prompts: tuple[str, ...] | list[str] = PROMPTS, check_tokenizer: bool = True) -> dict[str, Any]:
    """Logit differences of the GGUF at ``gguf_path`` (read by ``transformers``) against ``source`` and against
    ``source`` rounded to ``kind``; with ``check_tokenizer`` also whether the GGUF's own tokenizer (built by
    ``transformers`` from the file, the slower half of reading it back) encodes the prompts the same, and its
    chat template."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name,
                                                  dtype=torch.float32).eval()
    ref = logits(source.eval(), tokenizer, prompts)
    got = logits(loaded, tokenizer, prompts)
    rounded = logits(rounded_copy(source, kind).eval(), tokenizer, prompts)
    out: dict[str, Any] = {
        "max_abs_logit_diff": max_diff(got, ref),
        "max_abs_logit_diff_rounded": max_diff(got, rounded),
        "max_abs_logit": max(float(x.abs().max()) for x in ref),
        "same_argmax": all(bool((x.argmax(-1) == y.argmax(-1)).all()) for x, y in zip(got, ref)),
        "prompts": len(prompts),
    }
    if check_tokenizer:
        back = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
        out["same_tokens"] = all(tokenizer(p).input_ids == back(p).input_ids for p in prompts)
        out["chat_template"] = back.chat_template
    return out


__all__ = ["PROMPTS", "logits", "rounded_copy", "roundtrip"]
