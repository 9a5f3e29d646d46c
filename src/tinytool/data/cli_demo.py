"""``tinytool data demo``: write the bundled demo task set."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tinytool.clikit import make_app, on_interrupt

if TYPE_CHECKING:
    from tinytool.schema import Conversation

demo_app = make_app(help="Generate the bundled demo tool-calling tasks.")


@demo_app.command("demo")
def demo(
    n: int = typer.Option(1000, "--n", "-n", min=1, help="Number of tasks (train + dev)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the world and the tasks; same seed, same files."),
    out: Path = typer.Option(..., "--out", "-o", file_okay=False, help="Directory for train.jsonl and dev.jsonl."),
    dev_fraction: float = typer.Option(0.1, "--dev-fraction", min=0.0, max=1.0, help="Share of tasks in dev."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing train/dev split in --out."),
    mix: str | None = typer.Option(
        None, "--mix", metavar="CATEGORY=WEIGHT,...",
        help="Category weights, normalised, e.g. simple=0.2,parallel=0.2,irrelevance=0.25 (left-out categories get "
             "no tasks). Categories: simple, multiple, parallel, parallel_multiple, irrelevance, missing_parameter, "
             "multi_step. Default: the built-in mix."),
    proc_fraction: float = typer.Option(
        0.5, "--proc-fraction", min=0.0, max=1.0,
        help="Share of the simple, multiple, parallel, parallel_multiple and irrelevance tasks built over "
             "generated tool schemas instead of the executable catalog (0: catalog only)."),
    real_fraction: float = typer.Option(
        0.3, "--real-fraction", min=0.0, max=1.0,
        help="Share of the tasks whose request is written the way people write (an opening, context that does "
             "not matter, a sign-off, lower case, short forms, a typo; every value kept). With the built-in mix, "
             "dev also holds the realistic categories real_simple and real_multiple."),
    per_toolset: int = typer.Option(
        1, "--per-toolset", min=1,
        help="Tasks per offered tool set: each task is followed by K-1 more over the same tools (a call of another "
             "of them, several calls of one, a near miss or open question none answers), so K conversations share "
             "one system prompt and tool listing (see tinytool sft --shared-prefix)."),
) -> None:
    """Write train/dev JSONL of demo tasks: simple, multiple, parallel, parallel_multiple, irrelevance,
    missing_parameter and multi_step (with sub-questions/sub-answers); dev also real_simple and real_multiple
    (requests written the way people write, one call expected). Held-out tools appear only in dev.
    Both files are replaced together: an interrupted run leaves --out as it was.

    Example: tinytool data demo --n 2000 --seed 0 --out data/demo
    """
    from tinytool.data.demo import SPLIT_FILES, generate_demo, parse_mix, write_split
    from tinytool.io import check_output_file, check_writable
    from tinytool.progress import ProgressBar

    weights = parse_mix(mix) if mix is not None else None
    for name in SPLIT_FILES:
        check_output_file(out / name, overwrite)
    check_writable(out)  # before the work, not after it
    left = f"{out} unchanged" if any((out / name).exists() for name in SPLIT_FILES) else f"nothing written to {out}"
    with on_interrupt(left):
        t0 = time.perf_counter()
        with ProgressBar("generating demo tasks", total=n, unit="task") as bar:
            train, dev = generate_demo(n, seed, dev_fraction=dev_fraction, mix=weights, proc_fraction=proc_fraction,
                                       per_toolset=per_toolset, real_fraction=real_fraction, progress=bar.advance)
        dt = time.perf_counter() - t0
        write_split(out, train, dev)
    rate = (len(train) + len(dev)) / max(dt, 1e-9)
    typer.echo(f"wrote {len(train)} train + {len(dev)} dev tasks to {out} (generated in {dt:.2f}s, {rate:.0f} tasks/s)")
    for name, split in (("train", train), ("dev", dev)):
        counts = Counter(c.meta["category"] for c in split)
        typer.echo(f"{name}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    offered = {t.name for c in (*train, *dev) for t in c.tools}
    generated = sum(c.meta.get("tools") == "generated" for c in (*train, *dev))
    typer.echo(f"{len(offered)} distinct tools offered; {generated} tasks over generated tools")
    _say_lists((*train, *dev))
    near = [c for c in (*train, *dev) if c.meta["category"] == "irrelevance" and c.meta.get("requested_tool")]
    if near:
        typer.echo(f"irrelevance near misses: {len(near)}, {sum(bool(c.meta.get('offers_twin')) for c in near)} of "
                   "them offering a twin (a same-domain tool the request's values fit)")


def _say_lists(tasks: Sequence[Conversation]) -> None:
    """How often two or more items go in one call's list, against one call per item of a tool (single-turn
    tasks): the balance that teaches a model whether items joined by "and" ask for one call or several; and how
    many one-call tasks hold a long tool's every value."""
    from tinytool.data.demo.tasks import FULL_PARAMS

    turns = [list(m.tool_calls) for c in tasks if sum(bool(m.tool_calls) for m in c.messages) == 1
             for m in c.messages if m.tool_calls]
    one = [t[0] for t in turns if len(t) == 1]
    listed = sum(any(isinstance(v, list) and len(v) >= 2 for v in tc.arguments.values()) for tc in one)
    per_item = sum(len(t) >= 2 and len({tc.name for tc in t}) == 1 for t in turns)
    full = sum(len(tc.arguments) >= FULL_PARAMS for tc in one)
    typer.echo(f"one-call tasks: {len(one)}, {listed} of them with two or more items in one list, {full} with "
               f"{FULL_PARAMS} or more arguments; {per_item} tasks ask several calls of one tool")


if __name__ == "__main__":  # pragma: no cover
    demo_app()
