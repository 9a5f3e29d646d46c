"""A tinytool model written as one GGUF file with the ``gguf`` package's writer.

What goes in, after the GGUF specification (ggml's "GGUF" document) and the key names of the ``gguf`` package:

- the Llama hyper-parameters under ``llama.*`` (layers, widths, heads, RoPE base, RMS-norm epsilon, context);
- the tokenizer: every token spelled as the tokenizer spells it (byte-level BPE), its type (normal, control for
  special added tokens, user-defined for other added tokens, unused for padding ids past the tokenizer), the
  merges, the special token ids and whether BOS is added, and the pre-tokenizer's name (``gpt-2`` for plain
  byte-level splitting, ``smollm`` for SmolLM2's single digits);
- ``tokenizer.chat_template``: the tool-calling template of the format the model was trained in;
- the weights, named as llama.cpp names them, with the query and key projections' rows reordered from the
  rotate-half layout of Hugging Face checkpoints to the interleaved pairs llama.cpp rotates; norms stay
  float32, matrices become f16, bf16 or q8_0 (a matrix whose rows are not a whole number of q8_0 blocks stays
  f16). A tied output head is not written (readers reuse the embedding).

The file is written beside its place and renamed there only when whole (`tinytool.io.atomic_file`): a failure
or Ctrl-C leaves nothing (and an older file as it was).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tinytool.errors import TinytoolError

#: ``--type``: how the matrices are stored
TYPES = ("f16", "bf16", "q8_0")
#: the first bytes of every GGUF file
MAGIC = b"GGUF"


class ArchitectureUnsupported(TinytoolError):
    """A model whose architecture tinytool cannot write as a GGUF."""

    fix = ("export a Llama-architecture model (what tinytool trains: SmolLM2 and its students, full or merged "
           "LoRA); for another architecture use llama.cpp's own converter")


class TokenizerUnsupported(TinytoolError):
    """A model without a tokenizer, or with one tinytool cannot write into a GGUF."""

    fix = "give the tokenizer with --tokenizer (a directory or hub id holding tokenizer.json)"


@dataclass(frozen=True)
class LlamaShape:
    """The hyper-parameters a Llama GGUF states."""

    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    context: int
    rope_theta: float
    rms_eps: float
    vocab: int
    tied: bool


def llama_shape(config: Any) -> LlamaShape:
    """The shape of a model config, or `ArchitectureUnsupported` saying what cannot be written."""
    kind = getattr(config, "model_type", None)
    archs = getattr(config, "architectures", None) or ["LlamaForCausalLM"]
    if kind != "llama" or "LlamaForCausalLM" not in archs:
        raise ArchitectureUnsupported(f"architecture {kind!r} ({', '.join(archs)}) cannot be written: tinytool "
                                      "exports LlamaForCausalLM models only")
    for flag in ("attention_bias", "mlp_bias"):
        if getattr(config, flag, False):
            raise ArchitectureUnsupported(f"a Llama with {flag}=true cannot be written: GGUF readers of llama "
                                          "models expect no biases")
    if getattr(config, "hidden_act", "silu") != "silu":
        raise ArchitectureUnsupported(f"a Llama with hidden_act={config.hidden_act!r} cannot be written (llama "
                                      "GGUFs use silu)")
    rope = dict(getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {})
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type not in (None, "default"):
        raise ArchitectureUnsupported(f"RoPE scaling {rope_type!r} cannot be written: tinytool exports plain RoPE")
    theta = rope.get("rope_theta", getattr(config, "rope_theta", 10000.0))
    heads = config.num_attention_heads
    return LlamaShape(
        layers=config.num_hidden_layers, hidden=config.hidden_size, intermediate=config.intermediate_size,
        heads=heads, kv_heads=getattr(config, "num_key_value_heads", None) or heads,
        head_dim=getattr(config, "head_dim", None) or config.hidden_size // heads,
        context=config.max_position_embeddings, rope_theta=float(theta), rms_eps=float(config.rms_norm_eps),
        vocab=config.vocab_size, tied=bool(getattr(config, "tie_word_embeddings", False)),
    )


# ---- the tokenizer -----------------------------------------------------------------------------------------
@dataclass
class Vocab:
    """A tokenizer as a GGUF states it."""

    tokens: list[str]
    types: list[int]
    merges: list[str]
    pre: str
    special: dict[str, int]
    add_bos: bool
    add_eos: bool
    add_space_prefix: bool


def _pre_name(pre: Any) -> tuple[str, bool]:
    """llama.cpp's name of a byte-level pre-tokenizer, and whether it adds a leading space."""
    steps = pre.get("pretokenizers", []) if isinstance(pre, dict) and pre.get("type") == "Sequence" else [pre]
    kinds = [s.get("type") if isinstance(s, dict) else None for s in steps]
    last = steps[-1] if steps and isinstance(steps[-1], dict) else {}
    if kinds[-1:] != ["ByteLevel"] or not last.get("use_regex", True):
        raise TokenizerUnsupported(f"pre-tokenizer {' + '.join(map(str, kinds))} cannot be named for GGUF readers: "
                                   "tinytool writes byte-level BPE tokenizers with GPT-2's splitting (optionally "
                                   "single digits first, as SmolLM2)")
    if kinds == ["ByteLevel"]:
        return "gpt-2", bool(last.get("add_prefix_space", False))
    if kinds == ["Digits", "ByteLevel"] and steps[0].get("individual_digits"):
        return "smollm", bool(last.get("add_prefix_space", False))
    raise TokenizerUnsupported(f"pre-tokenizer {' + '.join(map(str, kinds))} cannot be named for GGUF readers")


def vocab_of(tokenizer: Any, vocab_size: int) -> Vocab:
    """The GGUF view of a fast byte-level BPE tokenizer; ids past the tokenizer up to ``vocab_size`` (padding
    rows of the embedding) become unused ``[PADn]`` tokens."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise TokenizerUnsupported("the tokenizer is not a fast (tokenizer.json) tokenizer, so its vocabulary "
                                   "cannot be read")
    spec = json.loads(backend.to_str())
    model = spec.get("model") or {}
    if model.get("type") != "BPE":
        raise TokenizerUnsupported(f"tokenizer model {model.get('type')!r} cannot be written: tinytool writes "
                                   "byte-level BPE tokenizers (SmolLM2's kind)")
    pre, space = _pre_name(spec.get("pre_tokenizer"))
    by_id: dict[int, tuple[str, int]] = {i: (t, 1) for t, i in model["vocab"].items()}
    for added in spec.get("added_tokens") or []:
        by_id[added["id"]] = (added["content"], 3 if added.get("special") else 4)
    size = max(vocab_size, max(by_id) + 1)
    tokens, types = [], []
    for i in range(size):
        text, kind = by_id.get(i, (f"[PAD{i}]", 5))
        tokens.append(text)
        types.append(kind)
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges") or []]
    special = {name: getattr(tokenizer, f"{name}_token_id", None) for name in ("bos", "eos", "unk", "pad")}
    probe = tokenizer("a").input_ids
    return Vocab(tokens, types, merges, pre, {k: v for k, v in special.items() if v is not None},
                 add_bos=bool(probe) and probe[0] == special["bos"] and special["bos"] is not None,
                 add_eos=bool(probe) and probe[-1] == special["eos"] and special["eos"] is not None,
                 add_space_prefix=space)


# ---- the weights -------------------------------------------------------------------------------------------
def to_interleaved(weight: np.ndarray, heads: int) -> np.ndarray:
    """A query or key projection's rows reordered from rotate-half (each head's first half of dimensions
    pairs with its second half) to interleaved pairs (dimension 2i with 2i+1), the layout llama.cpp rotates."""
    rows = weight.shape[0]
    half = rows // heads // 2
    return weight.reshape(heads, 2, half, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def stored(weight: np.ndarray, kind: str) -> tuple[np.ndarray, Any]:
    """``weight`` (float32) as it is stored for ``--type kind``: the array to write and its GGML type (None: the
    array's own dtype says it)."""
    from gguf import GGMLQuantizationType as Q
    from gguf.quants import quantize

    if weight.ndim < 2:
        return weight.astype(np.float32), None
    if kind == "bf16":
        return quantize(weight, Q.BF16), Q.BF16
    if kind == "q8_0" and weight.shape[-1] % 32 == 0:
        return quantize(weight, Q.Q8_0), Q.Q8_0
    return weight.astype(np.float16), None


def gguf_tensors(model: Any, shape: LlamaShape) -> list[tuple[str, np.ndarray]]:
    """The model's weights as float32 arrays under their GGUF names (query and key rows interleaved, a tied
    output head left out); `ArchitectureUnsupported` for a weight a Llama GGUF has no name for."""
    import gguf

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, shape.layers)
    out = []
    for hf_name, tensor in model.state_dict().items():
        if hf_name == "lm_head.weight" and shape.tied:
            continue
        name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if name is None:
            raise ArchitectureUnsupported(f"weight {hf_name} has no place in a Llama GGUF")
        array = tensor.detach().float().cpu().numpy()
        if ".attn_q." in name:
            array = to_interleaved(array, shape.heads)
        elif ".attn_k." in name:
            array = to_interleaved(array, shape.kv_heads)
        out.append((name, np.ascontiguousarray(array)))
    return out


def is_gguf(path: Path) -> bool:
    """Whether the file at ``path`` starts as a GGUF does (its magic bytes)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


FILE_TYPES = {"f16": 1, "bf16": 32, "q8_0": 7}  # llama.cpp's LLAMA_FTYPE_MOSTLY_*


def write_gguf(out: Path, model: Any, tokenizer: Any, kind: str, chat_template: str | None, name: str,
               progress: Any = None) -> dict[str, Any]:
    """Write ``model`` and ``tokenizer`` to ``out`` as one GGUF with matrices in ``kind`` (f16, bf16, q8_0);
    returns what was written (bytes, tensors and their types). ``progress`` is called once per tensor."""
    import gguf

    from tinytool.io import atomic_file

    if kind not in TYPES:
        raise ValueError(f"--type {kind!r}: choose one of {', '.join(TYPES)}")
    shape = llama_shape(model.config)
    vocab = vocab_of(tokenizer, shape.vocab)
    if len(vocab.tokens) != shape.vocab:
        raise TokenizerUnsupported(f"the tokenizer has {len(vocab.tokens)} tokens, more than the model's "
                                   f"{shape.vocab} embedding rows", fix="give the tokenizer the model was trained with")
    tensors = gguf_tensors(model, shape)
    counts: dict[str, int] = {}
    with atomic_file(out, "wb") as fh:
        writer = gguf.GGUFWriter(fh.name, "llama")
        try:
            writer.add_name(name)
            writer.add_type("model")
            writer.add_context_length(shape.context)
            writer.add_embedding_length(shape.hidden)
            writer.add_block_count(shape.layers)
            writer.add_feed_forward_length(shape.intermediate)
            writer.add_head_count(shape.heads)
            writer.add_head_count_kv(shape.kv_heads)
            writer.add_rope_freq_base(shape.rope_theta)
            writer.add_layer_norm_rms_eps(shape.rms_eps)
            writer.add_vocab_size(shape.vocab)
            writer.add_rope_dimension_count(shape.head_dim)
            if shape.head_dim * shape.heads != shape.hidden:
                writer.add_key_length(shape.head_dim)
                writer.add_value_length(shape.head_dim)
            writer.add_file_type(FILE_TYPES[kind])
            writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
            writer.add_tokenizer_model("gpt2")
            writer.add_tokenizer_pre(vocab.pre)
            writer.add_token_list(vocab.tokens)
            writer.add_token_types(vocab.types)
            writer.add_token_merges(vocab.merges)
            for key, token_id in vocab.special.items():
                getattr(writer, f"add_{key}_token_id")(token_id)
            writer.add_add_bos_token(vocab.add_bos)
            writer.add_add_eos_token(vocab.add_eos)
            writer.add_add_space_prefix(vocab.add_space_prefix)
            if chat_template:
                writer.add_chat_template(chat_template)
            for tensor_name, array in tensors:
                data, raw = stored(array, kind)
                writer.add_tensor(tensor_name, data, raw_dtype=raw)
                label = raw.name if raw is not None else {np.float16: "F16", np.float32: "F32"}[data.dtype.type]
                counts[label] = counts.get(label, 0) + 1
                if progress is not None:
                    progress()
            writer.write_header_to_file()
            writer.write_kv_data_to_file()
            writer.write_tensors_to_file()
        finally:
            writer.close()
    return {"bytes": out.stat().st_size, "tensors": len(tensors), "tensor_types": counts,
            "pre_tokenizer": vocab.pre, "vocab": len(vocab.tokens)}


__all__ = ["MAGIC", "TYPES", "ArchitectureUnsupported", "LlamaShape", "TokenizerUnsupported", "Vocab", "gguf_tensors",
           "is_gguf", "llama_shape", "stored", "to_interleaved", "vocab_of", "write_gguf"]
