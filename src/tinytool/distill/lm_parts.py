"""The two halves of a causal LM that distillation needs apart: the decoder (hidden states) and the LM head.

The teacher cache and the distillation trainer run the decoder over whole sequences but the head only at completion
positions, so ``[B, T, V]`` logits never exist (STAR §3.1 distils completion tokens only).
"""

from __future__ import annotations

from typing import Any

import torch

HEAD_CHUNK = 1024  # completion positions per LM-head matmul: bounds the [N, V] logits in memory


def causal_lm(model: Any) -> Any:
    """The `PreTrainedModel` that owns the LM head, inside a PEFT or DDP wrapper."""
    inner = model.module if hasattr(model, "module") and not hasattr(model, "get_output_embeddings") else model
    if hasattr(inner, "get_base_model"):
        inner = inner.get_base_model()
    return inner


def decoder_and_head(model: Any) -> tuple[Any, Any]:
    """(decoder, head) of a causal LM (unwrapping PEFT/DDP); a model that cannot be split is refused."""
    model = causal_lm(model)
    head = model.get_output_embeddings()
    decoder = None
    get_decoder = getattr(model, "get_decoder", None)
    if callable(get_decoder):
        decoder = get_decoder()
    if decoder is None or decoder is model:
        decoder = getattr(model, getattr(model, "base_model_prefix", "model"), None)
    if head is None or decoder is None or decoder is model:
        raise ValueError(f"{type(model).__name__}: cannot split the model into its decoder and LM head")
    return decoder, head


def head_logits(head: Any, hidden: torch.Tensor, config: Any) -> torch.Tensor:
    """The LM head on ``hidden`` [N, H] in the head's dtype, as float32 [N, V] (Gemma-style final logit
    soft-capping applied)."""
    weight = getattr(head, "weight", None)
    logits = head(hidden.to(weight.dtype if weight is not None else hidden.dtype)).float()
    softcap = getattr(config, "final_logit_softcapping", None)
    return torch.tanh(logits / softcap) * softcap if softcap else logits


def head_topk(head: Any, hidden: torch.Tensor, config: Any, temperature: float, k: int
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k of ``log_softmax(head(hidden) / temperature)`` over the full vocabulary, chunked over rows."""
    ids, lps = [], []
    for start in range(0, hidden.shape[0], HEAD_CHUNK):
        logp = torch.log_softmax(head_logits(head, hidden[start:start + HEAD_CHUNK], config) / temperature, dim=-1)
        val, idx = logp.topk(k, dim=-1, sorted=True)
        ids.append(idx)
        lps.append(val)
    return torch.cat(ids), torch.cat(lps)


def hidden_at(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, positions: torch.Tensor,
              position_ids: torch.Tensor | None = None) -> torch.Tensor:
    """Last hidden states (after the final norm) at the boolean ``positions`` ``[B, T]`` → ``[N, H]``; a 4-D
    ``attention_mask`` and ``position_ids`` (tree-packed rows) are passed on as they are.

    A model wrapped for data parallelism (`DistributedDataParallel`) is run through its wrapper, whose forward
    arms the gradient all-reduce: calling the decoder inside it directly would train each rank on its own. The
    decoder's output is taken from a hook, and the head runs at one position per row only."""
    decoder, _ = decoder_and_head(model)
    if not isinstance(model, torch.nn.parallel.DistributedDataParallel):
        out = decoder(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False)
        return out.last_hidden_state[positions]
    seen: list[Any] = []
    handle = decoder.register_forward_hook(lambda _m, _i, out: seen.append(out))
    try:
        model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False,
              logits_to_keep=1)
    finally:
        handle.remove()
    out = seen[-1]
    hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
    return hidden[positions]
