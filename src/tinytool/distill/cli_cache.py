"""``tinytool teacher cache``: build the top-k teacher cache (`cache_command`, registered on the
``teacher`` command group). The verb's options are the fields of `CacheConfig` (flags and ``--config`` YAML
alike); `run` does the work."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinytool.clikit import config_file, config_options, config_values, err, setting
from tinytool.distill.teacher_job import TeacherJob
from tinytool.formats.option import format_setting


@dataclass(frozen=True, kw_only=True)
class CacheConfig(TeacherJob):
    """What ``tinytool teacher cache`` builds (checked when made: `TeacherJob`)."""

    teacher: str = setting(..., "Teacher model: hub id, checkpoint dir, .gguf, or smollm2-135m-instruct.", "-t")
    data: list[Path] = setting(..., "JSONL of conversations, e.g. teacher rollouts D_T (repeatable).", "-d")
    out: Path = setting(..., "Cache directory (shards + run.json).", "-o", file_okay=False)
    k: int = setting(100, "Teacher tokens kept per position (STAR App. A.2: 100).", "-k")
    format: str = format_setting()
    temperature: float = setting(1.0, "Softmax temperature of the cached log-probs.")
    backend: str = setting("hf", "hf (one forward pass per batch) or vllm (prompt_logprobs; needs a GPU).")
    batch_size: int = setting(4, "Examples per forward pass (hf) or per generate call (vllm: use tens).")
    max_length: int = setting(2048, "Longest example in tokens; longer ones are dropped.")
    examples_per_shard: int = setting(256, "Examples per shard file.")
    overwrite: bool = setting(False, "Delete the cache in OUT and build it again.")
    bf16: bool | None = setting(None, "bf16 teacher compute [default: on with CUDA or a CPU with native bf16].",
                                negatable=True)


def run(cfg: CacheConfig) -> dict[str, Any]:
    """Build (or finish) the cache of ``cfg``: one forward pass per example (STAR §3.1 top-k distillation). The
    summary: the cache's manifest (`tinytool.distill.cache.build_cache`) with its size in bytes, bytes per completion
    token and where it is."""
    from tinytool.distill.cache import build_cache
    from tinytool.errors import TinytoolError, UserInputError
    from tinytool.formats import resolve_format

    try:
        manifest = build_cache(
            cfg.teacher, [str(p) for p in cfg.data], cfg.out, fmt=resolve_format(cfg.format), k=cfg.k,
            temperature=cfg.temperature, batch_size=cfg.batch_size, max_length=cfg.max_length,
            examples_per_shard=cfg.examples_per_shard, overwrite=cfg.overwrite, backend=cfg.backend, bf16=cfg.bf16,
            progress=True,
        )
    except TinytoolError:
        raise  # a malformed data row, a corrupt cache, a missing model: one line and a fix, printed by the CLI
    except (FileNotFoundError, ImportError) as e:
        raise UserInputError(str(e)) from None
    total = sum(s["bytes"] for s in manifest["shards"])
    return {**manifest, "bytes": total, "bytes_per_token": total / max(1, manifest["n_completion_tokens"]),
            "out": str(cfg.out)}


@config_options(CacheConfig)
def cache_command(config: Path | None = config_file(CacheConfig), **values: Any) -> None:
    """Cache the teacher's top-k token ids and log-probabilities at every completion position of DATA.

    One forward pass per example, no generation (STAR §3.1 top-k distillation). Shards are written
    atomically; rerunning a killed build with the same settings continues it. Prints a summary, including bytes per
    completion token.
    """
    s = run(CacheConfig(**config_values(CacheConfig, values)))
    err.print(
        f"cached {s['n_examples']} examples ({s['n_dropped']} dropped), "
        f"{s['n_completion_tokens']} completion tokens, k={s['k']}, "
        f"{len(s['shards'])} shards, {s['bytes'] / 1e6:.1f} MB ({s['bytes_per_token']:.0f} bytes per completion "
        f"token) -> {s['out']}", highlight=False)
