"""``tinytool teacher cache``: build the top-k teacher cache (`cache_command`, registered on the
``teacher`` command group)."""

from __future__ import annotations

from pathlib import Path

import typer

from tinytool.clikit import err, fail
from tinytool.formats import DEFAULT_FORMAT, PromptFormat
from tinytool.formats.option import format_option


def cache_command(
    teacher: str = typer.Option(..., "--teacher", "-t", help="Teacher model: hub id, checkpoint dir, .gguf, "
                                "or smollm2-135m-instruct."),
    data: list[Path] = typer.Option(..., "--data", "-d", help="JSONL of conversations, e.g. teacher rollouts "
                                    "D_T (repeatable)."),
    out: Path = typer.Option(..., "--out", "-o", file_okay=False, help="Cache directory (shards + run.json)."),
    k: int = typer.Option(100, "--k", "-k", help="Teacher tokens kept per position (STAR App. A.2: 100)."),
    format: PromptFormat = format_option(DEFAULT_FORMAT),
    temperature: float = typer.Option(1.0, "--temperature", help="Softmax temperature of the cached log-probs."),
    backend: str = typer.Option("hf", "--backend", help="hf (one forward pass per batch) or vllm "
                                "(prompt_logprobs; needs a GPU)."),
    batch_size: int = typer.Option(4, "--batch-size", help="Examples per forward pass (hf) or per generate "
                                    "call (vllm: use tens)."),
    max_length: int = typer.Option(2048, "--max-length", help="Longest example in tokens; longer ones are dropped."),
    examples_per_shard: int = typer.Option(256, "--examples-per-shard", help="Examples per shard file."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Delete the cache in OUT and build it again."),
    bf16: bool | None = typer.Option(None, "--bf16/--no-bf16", help="bf16 teacher compute [default: on with "
                                     "CUDA or a CPU with native bf16]."),
) -> None:
    """Cache the teacher's top-k token ids and log-probabilities at every completion position of DATA.

    One forward pass per example, no generation (STAR §3.1 top-k distillation). Shards are written
    atomically; rerunning a killed build with the same settings continues it. Prints a summary, including bytes per
    completion token.
    """
    from tinytool.distill.cache import build_cache
    from tinytool.errors import TinytoolError
    from tinytool.io import check_data_files, check_not_input

    check_data_files(data)
    check_not_input(out, teacher, *data)
    try:
        manifest = build_cache(
            teacher, [str(p) for p in data], out, fmt=format, k=k, temperature=temperature,
            batch_size=batch_size, max_length=max_length, examples_per_shard=examples_per_shard,
            overwrite=overwrite, backend=backend, bf16=bf16, progress=True,
        )
    except TinytoolError:
        raise  # a malformed data row, a corrupt cache, a missing model: one line and a fix, printed by the CLI
    except (FileNotFoundError, ImportError) as e:
        fail(e)
    total = sum(s["bytes"] for s in manifest["shards"])
    per_token = total / max(1, manifest["n_completion_tokens"])
    err.print(
        f"cached {manifest['n_examples']} examples ({manifest['n_dropped']} dropped), "
        f"{manifest['n_completion_tokens']} completion tokens, k={manifest['k']}, "
        f"{len(manifest['shards'])} shards, {total / 1e6:.1f} MB ({per_token:.0f} bytes per completion token) "
        f"-> {out}", highlight=False)
