"""``tinytool data demo``: write the bundled demo task set (the lead wires `demo_app` into the CLI)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import typer

demo_app = typer.Typer(add_completion=False, help="Generate the bundled demo tool-calling tasks.")


@demo_app.command("demo")
def demo(
    n: int = typer.Option(1000, "--n", "-n", min=0, help="Number of tasks (train + dev)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the world and the tasks; same seed, same files."),
    out: Path = typer.Option(..., "--out", "-o", file_okay=False, help="Directory for train.jsonl and dev.jsonl."),
    dev_fraction: float = typer.Option(0.1, "--dev-fraction", min=0.0, max=1.0, help="Share of tasks in dev."),
) -> None:
    """Write train/dev JSONL of demo tasks: simple, multiple, parallel, parallel_multiple, irrelevance,
    missing_parameter and multi_step (with sub-questions/sub-answers). Held-out tools appear only in dev."""
    from tinytool.data.demo import generate_demo
    from tinytool.schema import write_jsonl

    t0 = time.perf_counter()
    train, dev = generate_demo(n, seed, dev_fraction=dev_fraction)
    dt = time.perf_counter() - t0
    write_jsonl(out / "train.jsonl", train)
    write_jsonl(out / "dev.jsonl", dev)
    rate = (len(train) + len(dev)) / max(dt, 1e-9)
    typer.echo(f"wrote {len(train)} train + {len(dev)} dev tasks to {out} (generated in {dt:.2f}s, {rate:.0f} tasks/s)")
    for name, split in (("train", train), ("dev", dev)):
        mix = Counter(c.meta["category"] for c in split)
        typer.echo(f"{name}: " + ", ".join(f"{k} {v}" for k, v in sorted(mix.items())))

if __name__ == "__main__":  # pragma: no cover
    demo_app()
