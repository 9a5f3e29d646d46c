"""``tinytool data demo``: write the bundled demo task set.

The generator's settings are the fields of `tinytool.data.demo.config.DemoConfig`, declared there once; the verb's
config is `DemoJob`, those settings and where the set goes (``--out``, ``--overwrite``), and `run` does the work.
Each field is a flag here (``twin_p`` is ``--twin-p``, with the field's help, bounds and short aliases;
`tinytool.clikit.config_options` derives them) and a key of the ``--config`` YAML file underneath the flags; the
resolved settings go into the data set's manifest.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from tinytool.clikit import (
    config_options,
    config_values,
    left_note,
    make_app,
    on_interrupt,
    option_of,
    setting,
)
from tinytool.data.demo.config import DemoConfig

if TYPE_CHECKING:
    from tinytool.schema import Conversation

demo_app = make_app(help="Generate the bundled demo tool-calling tasks.")


@dataclass(frozen=True, kw_only=True)
class DemoJob(DemoConfig):
    """What ``tinytool data demo`` writes: a demo set made as its `DemoConfig` settings say (`settings`, what the
    manifest records), into ``out``; checked when made: the settings (`DemoConfig`), the split files and the
    manifest new or ``overwrite``, and ``out`` writable (before the work, not after it)."""

    out: Path = setting(..., "Directory for train.jsonl and dev.jsonl.", "-o", file_okay=False)
    overwrite: bool = setting(False, "Replace an existing train/dev split in --out.")

    def __post_init__(self) -> None:
        from tinytool.data.demo import MANIFEST, SPLIT_FILES
        from tinytool.io import check_output_file, check_writable

        super().__post_init__()
        object.__setattr__(self, "out", Path(self.out))
        for name in (*SPLIT_FILES, MANIFEST):
            check_output_file(self.out / name, self.overwrite)
        check_writable(self.out)

    def settings(self) -> DemoConfig:
        """The generator's settings alone."""
        return DemoConfig(**{f.name: getattr(self, f.name) for f in dataclasses.fields(DemoConfig)})


def run(cfg: DemoJob) -> dict[str, Any]:
    """Generate the set ``cfg`` describes and write its train and dev splits and manifest to ``cfg.out``, replaced
    together (an interrupted run leaves it as it was). The summary: the split sizes, their categories, how long
    the generation took, and what the tasks offer (`_offers`)."""
    from tinytool.data.demo import MANIFEST, SPLIT_FILES, generate_demo, write_split
    from tinytool.progress import ProgressBar

    out, settings = cfg.out, cfg.settings()
    left = left_note(out, any((out / name).exists() for name in SPLIT_FILES))
    with on_interrupt(left):
        t0 = time.perf_counter()
        with ProgressBar("generating demo tasks", total=settings.n, unit="task") as bar:
            train, dev = generate_demo(config=settings, progress=bar.advance)
        seconds = time.perf_counter() - t0
        write_split(out, train, dev, settings)
    return {"out": str(out), "manifest": str(out / MANIFEST), "train": len(train), "dev": len(dev),
            "seconds": seconds, **_offers(train, dev, settings.full_params)}


def _offers(train: Sequence[Conversation], dev: Sequence[Conversation], full_params: int) -> dict[str, Any]:
    """What a demo set holds: each split's categories, the distinct tools offered, the tasks over generated tools,
    the lists of one-call tasks (`_lists`) and the irrelevance near misses (and how many offer a twin)."""
    tasks = (*train, *dev)
    near = [c for c in tasks if c.meta["category"] == "irrelevance" and c.meta.get("requested_tool")]
    return {"categories": {name: dict(sorted(Counter(c.meta["category"] for c in split).items()))
                           for name, split in (("train", train), ("dev", dev))},
            "tools": len({t.name for c in tasks for t in c.tools}),
            "generated": sum(c.meta.get("tools") == "generated" for c in tasks),
            "lists": _lists(tasks, full_params),
            "near_misses": len(near), "twins": sum(bool(c.meta.get("offers_twin")) for c in near)}


def _file_flags(ctx: typer.Context, config: Path | None) -> Path | None:
    """``--config``'s callback, run before the other options are read (eager): the verb's own flags the file gives
    (``out: data/demo``) become those flags' defaults, so they are read as on the command line and a flag beside
    the file overrides them, as it does a setting."""
    from tinytool.data.demo.config import file_flags

    if config is not None and config.is_file():  # a recipe's check parses flags before an earlier stage writes it
        ctx.default_map = {**(ctx.default_map or {}), **file_flags(config)}
    return config


@demo_app.command("demo")
@config_options(DemoJob, skip=("out", "overwrite"))
def demo(
    ctx: typer.Context,
    out: Path = option_of(DemoJob, "out"),
    overwrite: bool = option_of(DemoJob, "overwrite"),
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
    from tinytool.data.demo.config import file_settings

    given = {**(file_settings(config) if config is not None else {}), **config_values(DemoConfig, values, ctx)}
    s = run(DemoJob(**given, out=out, overwrite=overwrite))
    dt = s["seconds"]
    rate = (s["train"] + s["dev"]) / max(dt, 1e-9)
    typer.echo(f"wrote {s['train']} train + {s['dev']} dev tasks to {out} (generated in {dt:.2f}s, {rate:.0f} "
               "tasks/s)")
    for name, counts in s["categories"].items():
        typer.echo(f"{name}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    typer.echo(f"{s['tools']} distinct tools offered; {s['generated']} tasks over generated tools")
    lists = s["lists"]
    typer.echo(f"one-call tasks: {lists['one_call']}, {lists['listed']} of them with two or more items in one list, "
               f"{lists['full']} with {lists['full_params']} or more arguments; {lists['per_item']} tasks ask "
               "several calls of one tool")
    if s["near_misses"]:
        typer.echo(f"irrelevance near misses: {s['near_misses']}, {s['twins']} of them offering a twin (a "
                   "same-domain tool the request's values fit)")
    typer.echo(f"settings in {s['manifest']} (--config {s['manifest']} makes the set again)")


def _lists(tasks: Sequence[Conversation], full_params: int) -> dict[str, int]:
    """How often two or more items go in one call's list, against one call per item of a tool (single-turn
    tasks): the balance that teaches a model whether items joined by "and" ask for one call or several; and how
    many one-call tasks hold ``full_params`` or more values (a long tool's every value)."""
    turns = [list(m.tool_calls) for c in tasks if sum(bool(m.tool_calls) for m in c.messages) == 1
             for m in c.messages if m.tool_calls]
    one = [t[0] for t in turns if len(t) == 1]
    return {"one_call": len(one),
            "listed": sum(any(isinstance(v, list) and len(v) >= 2 for v in tc.arguments.values()) for tc in one),
            "per_item": sum(len(t) >= 2 and len({tc.name for tc in t}) == 1 for t in turns),
            "full": sum(len(tc.arguments) >= full_params for tc in one), "full_params": full_params}


if __name__ == "__main__":  # pragma: no cover
    demo_app()
