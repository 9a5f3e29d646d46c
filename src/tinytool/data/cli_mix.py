"""``tinytool data mix-irrelevant``: add similarity-banded irrelevant tools to each task (ASTRA §3.2.2)."""

from __future__ import annotations

from pathlib import Path

import typer

from tinytool.clikit import err, make_app, on_interrupt

mix_app = make_app(help="Add irrelevant tools to tasks.")


@mix_app.command("mix-irrelevant")
def mix_irrelevant_cmd(
    data: Path = typer.Argument(..., exists=True, dir_okay=False, help="Conversation JSONL."),
    out: Path = typer.Option(..., "--out", "-o", dir_okay=False, help="Conversation JSONL to write."),
    k: int = typer.Option(2, "--k", min=0, help="Tools drawn from each similarity band (high, medium, low)."),
    pool: list[Path] = typer.Option([], "--pool", exists=True, dir_okay=False,
                                    help="More conversation JSONL whose tools join the pool (repeatable)."),
    seed: int = typer.Option(0, "--seed"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing non-empty output file."),
) -> None:
    """Offer each task up to K extra tools from each band of semantic similarity to its own tools (ASTRA §3.2.2,
    Eq. 24–28; embeddings of the offline MiniLM model), never from the domain of an offered tool. The messages and
    labels are unchanged.

    Example: tinytool data mix-irrelevant data/demo/train.jsonl --k 2 -o data/demo/train-mixed.jsonl
    """
    from tinytool.data.mixing import mix_irrelevant
    from tinytool.io import check_not_input, check_output_file
    from tinytool.schema import read_jsonl, write_jsonl

    check_not_input(out, data, *pool)
    check_output_file(out, overwrite)
    convs = read_jsonl(data)
    extra = [t for p in pool for c in read_jsonl(p) for t in c.tools]
    with on_interrupt(f"{out} unchanged"):
        mixed, stats = mix_irrelevant(convs, k=k, seed=seed, extra_pool=extra)
        write_jsonl(out, [c.to_dict() for c in mixed])
    s = stats.as_dict()
    err.print(f"{s['tasks']} tasks, pool of {s['pool']} tools; added high {s['added']['high']}, medium "
              f"{s['added']['med']}, low {s['added']['low']} ({s['mean_added_per_task']} per task) -> {out}")
