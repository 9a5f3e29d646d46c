"""``tinytool data demo``: write the bundled demo task set.

The generator's settings are the fields of `tinytool.data.demo.config.DemoConfig`, declared there once: each is a
flag here (``twin_p`` is ``--twin-p``, with the field's help, bounds and short aliases; `tinytool.clikit.config_options`
derives them) and a key of the ``--config`` YAML file underneath the flags; the resolved config goes into the data
set's manifest. The verb's own flags (``--out``, ``--overwrite``) are keys of the file too.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from tinytool.clikit import config_options, config_values, make_app, on_interrupt
from tinytool.data.demo.config import DemoConfig

if TYPE_CHECKING:
    from tinytool.schema import Conversation

demo_app = make_app(help="Generate the bundled demo tool-calling tasks.")


def _file_flags(ctx: typer.Context, config: Path | None) -> Path | None:
    """``--config``'s callback, run before the other options are read (eager): the verb's own flags the file gives
    (``out: data/demo``) become those flags' defaults, so they are read as on the command line and a flag beside
    the file overrides them, as it does a setting."""
    from tinytool.data.demo.config import file_flags

    if config is not None and config.is_file():  # a recipe's check parses flags before an earlier stage writes it
        ctx.default_map = {**(ctx.default_map or {}), **file_flags(config)}
    return config


@demo_app.command("demo")
@config_options(DemoConfig)
def demo(
    ctx: typer.Context,
    out: Path = typer.Option(..., "--out", "-o", file_okay=False, help="Directory for train.jsonl and dev.jsonl."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing train/dev split in --out."),
    config: Path | None = typer.Option(
        None, "--config", exists=True, dir_okay=False, is_eager=True, callback=_file_flags,
        help="YAML file of setting: value (a key is a flag without -- and with _ for -), or a data set's "
             "manifest.json to make it again; the flags given beside it override it."),
    **values: Any,
) -> None:
    """Write train/dev JSONL of demo tasks: simple, multiple, parallel, parallel_multiple, irrelevance,
    missing_parameter and multi_step (with sub-questions/sub-answers); dev also real_simple and real_multiple
    (requests written the way people write, one call expected). Held-out tools appear only in dev.
    Both files are replaced together: an interrupted run leaves --out as it was. OUT/manifest.json records the
    settings the set was made with.

    Example: tinytool data demo --n 2000 --seed 0 --out data/demo
    """
    from tinytool.data.demo import MANIFEST, SPLIT_FILES, generate_demo, write_split
    from tinytool.data.demo.config import load_config
    from tinytool.io import check_output_file, check_writable
    from tinytool.progress import ProgressBar

    cfg = load_config(config, **config_values(DemoConfig, values, ctx))
    for name in (*SPLIT_FILES, MANIFEST):
        check_output_file(out / name, overwrite)
    check_writable(out)  # before the work, not after it
    left = f"{out} unchanged" if any((out / name).exists() for name in SPLIT_FILES) else f"nothing written to {out}"
    with on_interrupt(left):
        t0 = time.perf_counter()
        with ProgressBar("generating demo tasks", total=cfg.n, unit="task") as bar:
            train, dev = generate_demo(config=cfg, progress=bar.advance)
        dt = time.perf_counter() - t0
        write_split(out, train, dev, cfg)
    rate = (len(train) + len(dev)) / max(dt, 1e-9)
    typer.echo(f"wrote {len(train)} train + {len(dev)} dev tasks to {out} (generated in {dt:.2f}s, {rate:.0f} tasks/s)")
    for name, split in (("train", train), ("dev", dev)):
        counts = Counter(c.meta["category"] for c in split)
        typer.echo(f"{name}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    offered = {t.name for c in (*train, *dev) for t in c.tools}
    generated = sum(c.meta.get("tools") == "generated" for c in (*train, *dev))
    typer.echo(f"{len(offered)} distinct tools offered; {generated} tasks over generated tools")
    _say_lists((*train, *dev), cfg.full_params)
    near = [c for c in (*train, *dev) if c.meta["category"] == "irrelevance" and c.meta.get("requested_tool")]
    if near:
        typer.echo(f"irrelevance near misses: {len(near)}, {sum(bool(c.meta.get('offers_twin')) for c in near)} of "
                   "them offering a twin (a same-domain tool the request's values fit)")
    typer.echo(f"settings in {out / MANIFEST} (--config {out / MANIFEST} makes the set again)")


def _say_lists(tasks: Sequence[Conversation], full_params: int) -> None:
    """How often two or more items go in one call's list, against one call per item of a tool (single-turn
    tasks): the balance that teaches a model whether items joined by "and" ask for one call or several; and how
    many one-call tasks hold ``full_params`` or more values (a long tool's every value)."""
    turns = [list(m.tool_calls) for c in tasks if sum(bool(m.tool_calls) for m in c.messages) == 1
             for m in c.messages if m.tool_calls]
    one = [t[0] for t in turns if len(t) == 1]
    listed = sum(any(isinstance(v, list) and len(v) >= 2 for v in tc.arguments.values()) for tc in one)
    per_item = sum(len(t) >= 2 and len({tc.name for tc in t}) == 1 for t in turns)
    full = sum(len(tc.arguments) >= full_params for tc in one)
    typer.echo(f"one-call tasks: {len(one)}, {listed} of them with two or more items in one list, {full} with "
               f"{full_params} or more arguments; {per_item} tasks ask several calls of one tool")


if __name__ == "__main__":  # pragma: no cover
    demo_app()
