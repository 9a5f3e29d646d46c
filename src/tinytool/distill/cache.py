"""The top-k teacher cache: the teacher's k most likely next tokens, with their log-probabilities,
at every completion position of the distillation data, computed once and read by the trainer.

STAR distils with top-k losses (§3.1: top-k FKL and CKD are computed over the teacher's top-k set
``V_k(x)``; App. A.2 fixes k = m = 100), so the teacher's full distribution is never needed at
training time: for each completion token the cache keeps k token ids and their log-probabilities
*of the full softmax* (normalised over the whole vocabulary, at the cache temperature), so the
top-k mass ``sum(exp(logprobs))`` is the teacher's real coverage, not 1.

Layout of a cache directory::

    run.json                 the run directory's manifest: settings (teacher, tokenizer fingerprint, k,
                             temperature, format, data sha256, ...) and the build's record (dtypes,
                             data files, per-shard sizes and sha256, ``complete``)
    shard-00000.safetensors  flat tensors for up to ``examples_per_shard`` consecutive examples:
                               tokens         int32   [sum L]        all token ids, example after example
                               offsets        int64   [n + 1]        example i is tokens[offsets[i]:offsets[i+1]]
                               n_prompt       int32   [n]
                               topk_ids       uint16  [sum L - n_prompt, k]  (int32 when the vocabulary > 65536)
                               topk_logprobs  float16 [sum L - n_prompt, k]  sorted descending per row

At k = 100 a completion token costs 100 × (2 + 2) = 400 bytes plus 4 bytes for every token of its
example (prompt included), so bytes per completion token stay well under 600 unless prompts are
~50× longer than completions.

Examples are `tinytool.distill.examples.token_examples` of the data, so the trainer, SFT and the
cache agree on every token. A shard is written aside, fsynced and renamed, and only then appended to
the manifest (also written aside and renamed): a killed build loses at most the shard in flight, and
rerunning the build skips every finished shard without a forward pass. Every shard load checks the file's
size and sha256 against the manifest, so a corrupt or missing shard is named rather than trained on.

Backends: Hugging Face (one batched forward pass, no generation; the LM head is applied only at the
completion positions, in chunks, so ``[B, T, V]`` logits never exist) and vLLM (``prompt_logprobs``
over the full token sequence with ``max_tokens=1``).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from tinytool.distill.lm_parts import decoder_and_head, head_logits, head_topk
from tinytool.errors import TinytoolError
from tinytool.formats import PromptFormat, default_format
from tinytool.io import (
    RunDir,
    RunDirError,
    atomic_file,
    check_data_files,
    check_not_input,
    open_run_dir,
    run_settings,
    sha256_file,
)
from tinytool.io.rundir import MANIFEST, read_manifest
from tinytool.progress import ProgressBar

FORMAT_VERSION = 2  #: 2: the manifest is the run directory's run.json
KIND = "teacher-cache"
SHARD_PATTERN = "shard-{:05d}.safetensors"
TOKENS_DTYPE = "int32"
LOGPROBS_DTYPE = "float16"
_TENSORS = ("tokens", "offsets", "n_prompt", "topk_ids", "topk_logprobs")


class CacheError(TinytoolError, ValueError):
    """A teacher cache that cannot be built, resumed or read; the message names the file and the problem."""


@dataclass
class CacheSettings:
    """What defines a teacher cache (its run directory's settings): a build with the same ones resumes."""

    teacher: str
    tokenizer_fingerprint: str
    k: int
    temperature: float
    format: str
    data_sha256: list[str]
    max_length: int
    examples_per_shard: int
    format_version: int = FORMAT_VERSION


def _flat(settings: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
    """The cache's manifest as one mapping: its settings and what the build recorded."""
    return {**settings, **info}


# ---- tokenizer identity --------------------------------------------------------------------


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """sha256 (hex) over what decides token ids: the vocabulary (token → id, sorted by token), the added
    tokens (id, content and their matching flags) and the special tokens (BOS/EOS/UNK/...).

    The pad token is left out: `tinytool.models.loading.load_tokenizer` sets it to EOS when a model
    has none, which changes no token id, and a student loaded either way must still match.
    """
    vocab = sorted(tokenizer.get_vocab().items())
    added = []
    for idx, tok in sorted(getattr(tokenizer, "added_tokens_decoder", {}).items()):
        added.append([int(idx), str(tok), bool(getattr(tok, "special", False)),
                      bool(getattr(tok, "lstrip", False)), bool(getattr(tok, "rstrip", False)),
                      bool(getattr(tok, "single_word", False))])
    special = {key: (sorted(map(str, val)) if isinstance(val, (list, tuple)) else str(val))
               for key, val in getattr(tokenizer, "special_tokens_map", {}).items() if key != "pad_token"}
    blob = json.dumps({"vocab": vocab, "added": added, "special": special}, sort_keys=True,
                      ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


# ---- reading -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CachedExample:
    """One cached example. ``topk_ids[j]`` / ``topk_logprobs[j]`` are the teacher's top-k for the
    target token ``input_ids[n_prompt + j]`` (predicted at position ``n_prompt + j - 1``)."""

    input_ids: torch.Tensor      # [L] int64
    n_prompt: int
    topk_ids: torch.Tensor       # [L - n_prompt, k] int64
    topk_logprobs: torch.Tensor  # [L - n_prompt, k] float32, full-softmax log-probs, sorted descending

    @property
    def n_completion(self) -> int:
        return int(self.input_ids.numel()) - self.n_prompt


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_manifest(root: Path) -> dict[str, Any]:
    """The manifest of the cache at ``root`` (settings and build record as one mapping)."""
    if not root.is_dir():
        raise CacheError(f"{root}: no such teacher cache directory")
    try:
        manifest = read_manifest(root)
    except RunDirError as e:
        raise CacheError(f"{root / MANIFEST}: unreadable manifest ({e})", fix=_rebuild_fix(root)) from None
    if manifest is None or manifest.get("kind") != KIND:
        raise CacheError(f"{root}: not a teacher cache (no {MANIFEST} of a {KIND!r} run)")
    flat = _flat(manifest["settings"], {k: v for k, v in manifest.items() if k not in ("kind", "settings")})
    if flat.get("format_version") != FORMAT_VERSION:
        raise CacheError(f"{root / MANIFEST}: unsupported teacher cache format_version {flat.get('format_version')!r} "
                         f"(this tinytool reads {FORMAT_VERSION})")
    return flat


def _rebuild_fix(root: Path) -> str:
    return f"delete {root} and build the cache again (tinytool teacher cache ... --out {root})"


class TeacherTopKCache:
    """Read access to a finished top-k teacher cache: streaming (`__iter__`, one shard in memory) or
    random access (`__getitem__`, at most ``max_loaded_shards`` shards kept). Every shard load checks the
    file's size and sha256 against the manifest."""

    def __init__(self, path: str | os.PathLike, manifest: dict[str, Any], max_loaded_shards: int = 2):
        self.path = Path(path)
        self.manifest = manifest
        self.k = int(manifest["k"])
        self.temperature = float(manifest["temperature"])
        self.vocab_size = int(manifest["vocab_size"])
        self._starts: list[int] = []
        n = 0
        for shard in manifest["shards"]:
            self._starts.append(n)
            n += int(shard["n_examples"])
        self._n = n
        self._max_loaded = max(1, max_loaded_shards)
        self._loaded: OrderedDict[int, dict[str, torch.Tensor]] = OrderedDict()

    @classmethod
    def open(cls, path: str | os.PathLike, verify: bool = True) -> TeacherTopKCache:
        """Open a finished cache. ``verify`` checks every shard's sha256 now (size and presence are
        always checked); an unfinished build is refused with a hint to resume it."""
        root = Path(path)
        manifest = _read_manifest(root)
        if not manifest.get("complete"):
            raise CacheError(
                f"{root}: incomplete teacher cache ({len(manifest.get('shards', []))} of "
                f"{manifest.get('n_shards', '?')} shards written); finish it by re-running the same build "
                "(`tinytool teacher cache ...` with the same settings)")
        shards = manifest.get("shards", [])
        if len(shards) != manifest.get("n_shards") or sum(s["n_examples"] for s in shards) != manifest.get("n_examples"):
            raise CacheError(f"{root / MANIFEST}: shard list does not add up to n_shards/n_examples")
        cache = cls(root, manifest)
        cache.verify(checksums=verify)
        return cache

    # -- integrity

    def _shard_path(self, index: int) -> Path:
        return self.path / self.manifest["shards"][index]["file"]

    def _check_file(self, index: int, data: bytes | None = None, checksum: bool = True) -> None:
        entry = self.manifest["shards"][index]
        path = self._shard_path(index)
        if data is None:
            if not path.is_file():
                raise CacheError(f"{path}: shard {index} of teacher cache {self.path} is missing",
                                 fix=_rebuild_fix(self.path))
            size = path.stat().st_size
        else:
            size = len(data)
        if size != entry["bytes"]:
            raise CacheError(f"{path}: corrupt shard {index} of teacher cache {self.path}: "
                             f"{size} bytes, the manifest says {entry['bytes']}", fix=_rebuild_fix(self.path))
        if checksum:
            digest = _sha256_bytes(data) if data is not None else sha256_file(path)
            if digest != entry["sha256"]:
                raise CacheError(f"{path}: corrupt shard {index} of teacher cache {self.path}: sha256 "
                                 f"{digest} does not match the manifest's {entry['sha256']}",
                                 fix=_rebuild_fix(self.path))

    def verify(self, checksums: bool = True) -> None:
        """Check that every shard exists with the manifest's size (and sha256 when ``checksums``)."""
        for i in range(len(self.manifest["shards"])):
            self._check_file(i, checksum=checksums)

    def _load_shard(self, index: int) -> dict[str, torch.Tensor]:
        from safetensors.torch import load

        path = self._shard_path(index)
        if not path.is_file():
            raise CacheError(f"{path}: shard {index} of teacher cache {self.path} is missing",
                             fix=_rebuild_fix(self.path))
        data = path.read_bytes()
        self._check_file(index, data)
        try:
            tensors = load(data)
        except Exception as e:
            raise CacheError(f"{path}: unreadable shard {index} of teacher cache {self.path} ({e})",
                             fix=_rebuild_fix(self.path)) from None
        entry = self.manifest["shards"][index]
        n, k = entry["n_examples"], self.k
        missing = [t for t in _TENSORS if t not in tensors]
        ok = (not missing and tensors["offsets"].shape == (n + 1,) and tensors["n_prompt"].shape == (n,)
              and tensors["tokens"].shape == (entry["n_tokens"],)
              and tensors["topk_ids"].shape == (entry["n_completion_tokens"], k)
              and tensors["topk_logprobs"].shape == (entry["n_completion_tokens"], k))
        if not ok:
            raise CacheError(f"{path}: shard {index} of teacher cache {self.path} does not have the "
                             f"tensors and shapes its manifest entry describes (missing: {missing or 'none'})",
                             fix=_rebuild_fix(self.path))
        lengths = tensors["offsets"][1:] - tensors["offsets"][:-1]
        n_completion = lengths - tensors["n_prompt"].to(torch.int64)
        tensors["completion_offsets"] = torch.cat([torch.zeros(1, dtype=torch.int64), n_completion.cumsum(0)])
        return tensors

    # -- access

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        m = self.manifest
        return (f"TeacherTopKCache({str(self.path)!r}, teacher={m.get('teacher')!r}, examples={self._n}, "
                f"k={self.k}, shards={len(m['shards'])})")

    @staticmethod
    def _example(t: dict[str, torch.Tensor], j: int) -> CachedExample:
        a, b = int(t["offsets"][j]), int(t["offsets"][j + 1])
        c, d = int(t["completion_offsets"][j]), int(t["completion_offsets"][j + 1])
        return CachedExample(
            input_ids=t["tokens"][a:b].to(torch.int64),
            n_prompt=int(t["n_prompt"][j]),
            topk_ids=t["topk_ids"][c:d].to(torch.int64),
            topk_logprobs=t["topk_logprobs"][c:d].to(torch.float32),
        )

    def __iter__(self) -> Iterator[CachedExample]:
        for s in range(len(self.manifest["shards"])):
            tensors = self._loaded.get(s) or self._load_shard(s)
            for j in range(int(self.manifest["shards"][s]["n_examples"])):
                yield self._example(tensors, j)
            del tensors

    def __getitem__(self, i: int) -> CachedExample:
        if not isinstance(i, int):
            raise TypeError(f"cache indices are integers, not {type(i).__name__}")
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(f"example {i} out of range for a cache of {self._n}")
        s = bisect.bisect_right(self._starts, i) - 1
        tensors = self._loaded.get(s)
        if tensors is None:
            tensors = self._load_shard(s)
            self._loaded[s] = tensors
            while len(self._loaded) > self._max_loaded:
                self._loaded.popitem(last=False)
        else:
            self._loaded.move_to_end(s)
        return self._example(tensors, i - self._starts[s])

    # -- checks and stats

    def check_tokenizer(self, tokenizer: Any, who: str = "student") -> None:
        """Refuse a tokenizer whose ids differ from the teacher's: top-k ids index the teacher's vocabulary,
        so a student with another tokenizer would be trained towards the wrong tokens."""
        theirs = tokenizer_fingerprint(tokenizer)
        ours = self.manifest["tokenizer_fingerprint"]
        if theirs != ours:
            raise CacheError(
                f"{self.path}: tokenizer mismatch: the teacher cache was built with tokenizer {ours} "
                f"({self.manifest.get('tokenizer_size', '?')} tokens), the {who} tokenizer is {theirs} "
                f"({len(tokenizer)} tokens); distillation from cached top-k ids needs the same tokenizer — "
                f"use a {who} that shares the teacher's tokenizer, or rebuild the cache")

    def bytes_per_completion_token(self) -> float:
        """Shard bytes on disk per completion token (the storage cost of the cache)."""
        total = sum(int(s["bytes"]) for s in self.manifest["shards"])
        return total / max(1, int(self.manifest["n_completion_tokens"]))


# ---- teacher top-k: Hugging Face --------------------------------------------------------------


class _HFTeacher:
    """Batched teacher forward passes: right-padded batch → decoder hidden states → LM head at the
    completion positions only (position t predicts token t + 1, so ``n_prompt - 1 .. L - 2``)."""

    def __init__(self, model: Any, temperature: float, k: int, bf16: bool | None):
        from tinytool.models.precision import use_bf16

        self.model = model
        self.decoder, self.head = decoder_and_head(model)
        self.device = next(model.parameters()).device
        self.bf16 = use_bf16(bf16, self.device)
        self.temperature, self.k = temperature, k
        self.checked = False

    def _autocast(self):
        from tinytool.models.loading import autocast

        return autocast(self.device.type, enabled=self.bf16)

    @torch.no_grad()
    def topk(self, batch: Sequence[Any]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        lengths = [len(ex.input_ids) for ex in batch]
        width = max(lengths)
        ids = torch.zeros(len(batch), width, dtype=torch.long)
        mask = torch.zeros(len(batch), width, dtype=torch.long)
        keep = torch.zeros(len(batch), width, dtype=torch.bool)
        for b, ex in enumerate(batch):
            ids[b, : lengths[b]] = torch.tensor(ex.input_ids, dtype=torch.long)
            mask[b, : lengths[b]] = 1
            keep[b, ex.n_prompt - 1: lengths[b] - 1] = True
        ids, mask, keep = ids.to(self.device), mask.to(self.device), keep.to(self.device)
        with self._autocast():
            hidden = self.decoder(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
        selected = hidden[keep]  # [N, H], example by example, position by position
        top_ids, top_lps = head_topk(self.head, selected, self.model.config, self.temperature, self.k)
        if not self.checked:
            self._self_check(ids[0, : lengths[0]])
            self.checked = True
        out, start = [], 0
        for ex in batch:
            n = len(ex.input_ids) - ex.n_prompt
            out.append((top_ids[start:start + n].cpu(), top_lps[start:start + n].cpu()))
            start += n
        return out

    def _self_check(self, ids: torch.Tensor) -> None:
        """The decoder + LM head split must reproduce the model's own logits: an architecture that
        rescales its logits after the head (a logit scale, a soft-cap this module does not know) would
        otherwise fill the cache with wrong log-probs. One forward of one sequence, once per build, without
        autocast, so both paths see the same hidden state in the same precision."""
        captured: list[torch.Tensor] = []

        def grab(module, args, output):
            captured.append(output[0] if isinstance(output, tuple) else output.last_hidden_state)

        handle = self.decoder.register_forward_hook(grab)
        try:
            try:
                ref = self.model(input_ids=ids[None], use_cache=False, logits_to_keep=1).logits[0, -1]
            except TypeError:  # a model without logits_to_keep: all positions, for one sequence
                ref = self.model(input_ids=ids[None], use_cache=False).logits[0, -1]
        finally:
            handle.remove()
        ref = ref.float()
        mine = head_logits(self.head, captured[-1][0, -1][None], self.model.config)[0]
        top = ref.topk(min(self.k, ref.numel())).indices
        weight = getattr(self.head, "weight", None)
        rel = 1e-3 if weight is None or weight.dtype == torch.float32 else 2.0**-6  # a few bf16 ulps
        err = ((mine[top] - ref[top]).abs() / (1 + ref[top].abs())).max().item()
        if err > rel:
            raise CacheError(f"{type(self.model).__name__}: the LM head applied to the decoder's hidden states "
                             f"does not reproduce the model's logits (relative error {err:.3g} over the top-k); "
                             "this architecture post-processes its logits in a way the cache does not support")


# ---- teacher top-k: vLLM ------------------------------------------------------------------------


def _logprob_value(v: Any) -> float:
    return float(getattr(v, "logprob", v))


def topk_from_prompt_logprobs(prompt_logprobs: Sequence[dict[int, Any] | None], input_ids: Sequence[int],
                              n_prompt: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """vLLM ``RequestOutput.prompt_logprobs`` (one dict per prompt position, ``None`` at position 0,
    mapping token id → ``Logprob`` or float; it holds the top-k plus the actual token) → the k best
    per completion position, sorted by log-prob descending (ties by token id): ``(ids [C, k] int64,
    logprobs [C, k] float32)`` for ``C = len(input_ids) - n_prompt``."""
    if len(prompt_logprobs) != len(input_ids):
        raise CacheError(f"vLLM returned prompt logprobs for {len(prompt_logprobs)} positions, "
                         f"the sequence has {len(input_ids)}")
    rows_ids, rows_lp = [], []
    for pos in range(n_prompt, len(input_ids)):
        d = prompt_logprobs[pos]
        if not d or len(d) < k:
            raise CacheError(f"vLLM returned {len(d) if d else 0} log-probs at position {pos}, need k={k} "
                             "(is the engine's max_logprobs below k?)")
        best = sorted(((_logprob_value(v), int(t)) for t, v in d.items()), key=lambda x: (-x[0], x[1]))[:k]
        rows_ids.append([t for _, t in best])
        rows_lp.append([lp for lp, _ in best])
    return (torch.tensor(rows_ids, dtype=torch.int64).reshape(-1, k),
            torch.tensor(rows_lp, dtype=torch.float32).reshape(-1, k))


def _check_vllm(temperature: float) -> Any:
    """The vllm module, or a clear error (before any model is loaded)."""
    if temperature != 1.0:
        raise CacheError(f"temperature {temperature}: the vLLM backend returns temperature-1 log-probs "
                         "(a full softmax at another temperature needs every logit); use --backend hf")
    try:
        import vllm
    except ImportError as exc:
        raise ImportError("the vLLM backend needs vLLM, which is not installed: `pip install vllm` "
                          "(needs a CUDA GPU); use --backend hf instead") from exc
    return vllm


class _VLLMTeacher:
    """Teacher top-k from vLLM: ``SamplingParams(max_tokens=1, prompt_logprobs=k)`` on the full token
    sequence (prompt + completion), so nothing is generated that the cache uses. vLLM reports raw
    log-probabilities (temperature 1); prefix caching is turned off because cached prefix positions
    would come back without log-probs."""

    def __init__(self, spec: str, k: int, max_length: int, temperature: float, engine_kwargs: dict[str, Any]):
        from tinytool.models.loading import resolve

        self._vllm = _check_vllm(temperature)
        kwargs = {"max_logprobs": k, "enable_prefix_caching": False, "max_model_len": max_length + 1}
        kwargs.update(engine_kwargs)
        self.llm = self._vllm.LLM(model=resolve(spec), **kwargs)
        self.k = k

    def topk(self, batch: Sequence[Any]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        params = self._vllm.SamplingParams(max_tokens=1, temperature=1.0, prompt_logprobs=self.k, detokenize=False)
        outputs = self.llm.generate([{"prompt_token_ids": list(ex.input_ids)} for ex in batch], params,
                                    use_tqdm=False)
        return [topk_from_prompt_logprobs(out.prompt_logprobs, ex.input_ids, ex.n_prompt, self.k)
                for out, ex in zip(outputs, batch, strict=True)]


# ---- building -----------------------------------------------------------------------------------


def _atomic_write(path: Path, data: bytes) -> None:
    with atomic_file(path, "wb") as fh:
        fh.write(data)


def _shard_bytes(examples: Sequence[Any], results: Sequence[tuple[torch.Tensor, torch.Tensor]],
                 ids_dtype: torch.dtype, index: int, k: int) -> bytes:
    from safetensors.torch import save

    tokens = torch.tensor([t for ex in examples for t in ex.input_ids], dtype=torch.int32)
    lengths = torch.tensor([len(ex.input_ids) for ex in examples], dtype=torch.int64)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    tensors = {
        "tokens": tokens,
        "offsets": offsets,
        "n_prompt": torch.tensor([ex.n_prompt for ex in examples], dtype=torch.int32),
        "topk_ids": torch.cat([r[0] for r in results]).to(torch.int32).to(ids_dtype).contiguous(),
        "topk_logprobs": torch.cat([r[1] for r in results]).to(torch.float16).contiguous(),
    }
    # one metadata key: safetensors writes its metadata map in no fixed order, so several keys would
    # give two builds of the same tensors different bytes (and sha256)
    info = json.dumps({"format_version": FORMAT_VERSION, "k": k, "shard": index}, sort_keys=True)
    return save(tensors, metadata={"tinytool_teacher_cache": info})


def _teacher_tokenizer(teacher: Any, teacher_id: str | None, backend: str) -> tuple[Any, str]:
    """``(tokenizer, teacher id)``: the model itself is loaded later, once the resume checks passed."""
    from tinytool.models.loading import load_tokenizer

    if isinstance(teacher, (tuple, list)):
        if backend != "hf":
            raise CacheError("a loaded (model, tokenizer) teacher works with the hf backend only; "
                             "give a model spec for vLLM")
        model, tok = teacher
        name = teacher_id or getattr(getattr(model, "config", None), "_name_or_path", "") or type(model).__name__
        return tok, str(name)
    return load_tokenizer(str(teacher), padding_side="right"), teacher_id or str(teacher)


def _teacher_model(teacher: Any, device: str | None, bf16: bool | None) -> Any:
    """The HF teacher: the given model, or the spec loaded on ``device`` (default CUDA when available;
    bf16 weights on CUDA unless ``bf16`` is False, fp32 on CPU where bf16 runs under autocast)."""
    from tinytool.models.loading import load_model
    from tinytool.models.precision import use_bf16

    if isinstance(teacher, (tuple, list)):
        return teacher[0]
    dev = device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if dev.startswith("cuda") and bf16 is not False and use_bf16(None, dev) else None
    return load_model(str(teacher), dtype=dtype).to(dev)


def _vocab_size(model: Any, teacher: Any, tokenizer: Any) -> int:
    if model is not None:
        head = model.get_output_embeddings()
        if head is not None and getattr(head, "weight", None) is not None:
            return int(head.weight.shape[0])
        return int(model.config.vocab_size)
    from transformers import AutoConfig

    from tinytool.models.loading import resolve

    try:
        config = AutoConfig.from_pretrained(resolve(str(teacher)))
        return int(getattr(config, "vocab_size", None) or config.get_text_config().vocab_size)
    except Exception:
        return len(tokenizer)


def build_cache(
    teacher: Any,
    data: list[str],
    out: str | os.PathLike,
    *,
    fmt: PromptFormat | None = None,
    k: int = 100,
    temperature: float = 1.0,
    batch_size: int = 4,
    max_length: int = 2048,
    examples_per_shard: int = 256,
    overwrite: bool = False,
    backend: str = "hf",
    progress: bool = True,
    on_shard: Callable[[int], Any] | None = None,
    teacher_id: str | None = None,
    bf16: bool | None = None,
    device: str | None = None,
    engine_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Build (or finish) the top-k teacher cache of ``data`` at ``out``; returns the manifest.

    ``teacher`` is a model spec (hub id, checkpoint dir, .gguf, alias) or a loaded ``(model, tokenizer)``
    pair (named ``teacher_id`` in the manifest). Examples are `token_examples` of the conversations in
    ``data`` rendered in ``fmt`` (default: `default_format`); examples over ``max_length`` tokens are dropped and counted. Every
    completion position keeps the teacher's top-``k`` token ids and full-softmax log-probabilities at
    ``temperature`` (STAR §3.1 top-k distillation; App. A.2: k = 100).

    ``backend="hf"`` runs batched forward passes of ``batch_size`` examples (bf16 autocast per ``bf16``:
    None → where the hardware computes bf16 natively, `tinytool.models.use_bf16`). ``backend="vllm"`` sends ``batch_size``
    examples per ``generate`` call (vLLM batches internally; use tens of examples, bounded by the host
    memory its per-position log-prob dicts take) and needs ``temperature=1``; ``engine_kwargs`` go to
    ``vllm.LLM``. ``on_shard(index)`` is called after each shard is committed (and may raise: the
    build then stops with that shard kept).

    ``out`` is a run directory (`tinytool.io.open_run_dir`, settings `CacheSettings`): an unfinished build of
    the same settings continues after its last committed shard, a finished one is returned as is, other
    settings are refused naming what differs, and ``overwrite`` deletes the cache and builds it again. A
    non-empty directory that is not a tinytool run is refused.
    """
    from tinytool.distill.examples import token_examples
    from tinytool.train.examples import read_conversations

    _check_build(backend, k, examples_per_shard, batch_size, temperature)
    files = [Path(p) for p in data]
    check_data_files(files)
    check_not_input(out, *files)
    fmt = fmt or default_format()
    convs = read_conversations([str(p) for p in files])  # a malformed row is named before any model loads
    tok, name = _teacher_tokenizer(teacher, teacher_id, backend)
    examples, dropped = token_examples(convs, fmt, tok, max_length)
    if not examples:
        raise CacheError(f"{', '.join(map(str, files))}: no examples to cache in format {fmt.name!r} "
                         f"({dropped} dropped as longer than {max_length} tokens or empty)")
    data_info = [{"path": str(p), "sha256": sha256_file(p), "bytes": p.stat().st_size} for p in files]
    settings = CacheSettings(name, tokenizer_fingerprint(tok), int(k), float(temperature), fmt.name,
                             [d["sha256"] for d in data_info], int(max_length), int(examples_per_shard))
    run = open_run_dir(out, KIND, run_settings(settings), overwrite=overwrite)
    root = run.path
    if run.resumed:
        if run.info.get("complete"):
            return _flat(run.settings, run.info)
        if run.info.get("n_examples") != len(examples):
            raise CacheError(f"{root}: cannot resume, the data now gives {len(examples)} examples, the cache "
                             f"was planned for {run.info.get('n_examples')}", fix=_rebuild_fix(root))
        # shards committed before the crash must be intact; anything else is rewritten
        TeacherTopKCache(root, _flat(run.settings, run.info)).verify(checksums=True)

    model = _teacher_model(teacher, device, bf16) if backend == "hf" else None
    vocab_size = _vocab_size(model, teacher, tok)
    if k > vocab_size:
        raise CacheError(f"k={k} is larger than the teacher's vocabulary ({vocab_size})")
    if run.resumed and run.info.get("vocab_size") != vocab_size:
        raise CacheError(f"{root}: cannot resume, the teacher's vocabulary is {vocab_size}, the cache's "
                         f"{run.info.get('vocab_size')}", fix=_rebuild_fix(root))
    ids_dtype = torch.uint16 if vocab_size <= 65536 else torch.int32
    if not run.resumed:
        run.update(
            data=data_info, vocab_size=vocab_size, tokenizer_size=len(tok), tokens_dtype=TOKENS_DTYPE,
            ids_dtype=str(ids_dtype).removeprefix("torch."), logprobs_dtype=LOGPROBS_DTYPE,
            n_conversations=len(convs), n_examples=len(examples), n_dropped=dropped,
            n_tokens=sum(len(ex.input_ids) for ex in examples),
            n_completion_tokens=sum(ex.n_completion for ex in examples),
            n_shards=(len(examples) + examples_per_shard - 1) // examples_per_shard, backend=backend,
            complete=False, shards=[])
    if backend == "hf":
        runner: Any = _HFTeacher(model, temperature, k, bf16)
        run.update(bf16=runner.bf16)
    else:
        runner = _VLLMTeacher(str(teacher), k, max_length, temperature, engine_kwargs or {})
    _write_shards(run, examples, runner, ids_dtype, batch_size, backend, progress, on_shard)
    total = sum(sh["bytes"] for sh in run.info["shards"])
    run.update(complete=True, finished=datetime.now(UTC).isoformat(timespec="seconds"), bytes=total,
               bytes_per_completion_token=total / max(1, run.info["n_completion_tokens"]))
    return _flat(run.settings, run.info)


def _check_build(backend: str, k: int, examples_per_shard: int, batch_size: int, temperature: float) -> None:
    """The build's arguments, checked before anything is read."""
    if backend not in ("hf", "vllm"):
        raise CacheError(f"unknown backend {backend!r}; use 'hf' or 'vllm'")
    if k < 1 or examples_per_shard < 1 or batch_size < 1:
        raise CacheError(f"k ({k}), examples_per_shard ({examples_per_shard}) and batch_size ({batch_size}) "
                         "must be positive")
    if not temperature > 0:
        raise CacheError(f"temperature must be positive, got {temperature}")
    if backend == "vllm":
        _check_vllm(temperature)


def _write_shards(run: RunDir, examples: Sequence[Any], runner: Any, ids_dtype: torch.dtype, batch_size: int,
                  backend: str, progress: bool, on_shard: Callable[[int], Any] | None) -> None:
    """Compute and commit every shard the run has not committed yet: each shard is written aside, fsynced and
    renamed, then appended to the manifest (``on_shard(index)`` after each)."""
    per_shard, k = run.settings["examples_per_shard"], run.settings["k"]
    shards = run.info["shards"]
    with ProgressBar("teacher top-k", len(examples), unit="example",
                     done=min(len(shards) * per_shard, len(examples)), enabled=progress) as bar:
        for s in range(len(shards), run.info["n_shards"]):
            shard = examples[s * per_shard: (s + 1) * per_shard]
            results: list[Any] = [None] * len(shard)
            order = list(range(len(shard)))
            if backend == "hf":
                # longest first: padding stays small and peak memory shows up in the first batch
                order.sort(key=lambda i: -len(shard[i].input_ids))
            for b in range(0, len(order), batch_size):
                idx = order[b: b + batch_size]
                for i, r in zip(idx, runner.topk([shard[i] for i in idx]), strict=True):
                    results[i] = r
                bar.advance(len(idx))
            blob = _shard_bytes(shard, results, ids_dtype, s, k)
            fname = SHARD_PATTERN.format(s)
            _atomic_write(run / fname, blob)
            shards.append({
                "file": fname, "n_examples": len(shard), "n_tokens": sum(len(ex.input_ids) for ex in shard),
                "n_completion_tokens": sum(ex.n_completion for ex in shard), "bytes": len(blob),
                "sha256": _sha256_bytes(blob),
            })
            run.update(shards=shards)
            if on_shard is not None:
                on_shard(s)
