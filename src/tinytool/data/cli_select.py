"""``tinytool data select``: the conversations of some categories of a file, as they are, or a seeded random subset
of them."""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path

import typer

from tinytool.clikit import err, make_app, on_interrupt

select_app = make_app(help="Select conversations by category.")


def select_lines(data: Path, patterns: list[str], limit: int | None = None, seed: int = 0) -> tuple[list[str], int]:
    """The lines of ``data`` (conversation JSONL) whose ``meta.category`` matches one of ``patterns`` (shell-style:
    ``real_*``), unchanged and in order, and how many conversations the file holds. ``limit`` keeps a seeded random
    subset of that many of them, still in order (the rule of ``teacher rollout --limit`` and ``eval bfcl
    --limit``)."""
    import random

    from tinytool.io import iter_jsonl_rows

    rows = list(iter_jsonl_rows(data))  # a line that is not UTF-8 or not JSON is named here, by file:line
    lines = data.read_text(encoding="utf-8-sig").split("\n")  # numbered as iter_jsonl_rows numbers them
    kept = []
    for lineno, row in rows:
        category = str(((row.get("meta") if isinstance(row, dict) else None) or {}).get("category", ""))
        if any(fnmatchcase(category, p) for p in patterns):
            kept.append(lines[lineno - 1])
    if limit is not None and limit < len(kept):
        kept = [kept[i] for i in sorted(random.Random(seed).sample(range(len(kept)), limit))]
    return kept, len(rows)


@select_app.command("select")
def select_cmd(
    data: Path = typer.Argument(..., exists=True, dir_okay=False, help="Conversation JSONL."),
    out: Path = typer.Option(..., "--out", "-o", dir_okay=False, help="Conversation JSONL to write."),
    category: list[str] = typer.Option(["*"], "--category", help="Keep the conversations whose meta.category "
                                       "matches this (shell-style: real_*; repeatable) [default: every category]."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="At most N of them: a seeded random subset (the "
                                     "--seed), in the file's order."),
    seed: int = typer.Option(0, "--seed", help="Seed of the --limit subset."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing non-empty output file."),
) -> None:
    """Write the conversations of the given categories, unchanged and in order: a part of a data set to score or
    train on by itself; with --limit, a seeded random subset of them.

    Example: tinytool data select data/demo/dev.jsonl --category 'real_*' -o data/demo/real-dev.jsonl
    """
    from tinytool.errors import UserInputError
    from tinytool.io import atomic_file, check_not_input, check_output_file

    check_not_input(out, data)
    check_output_file(out, overwrite)
    kept, total = select_lines(data, category, limit, seed)
    if not kept:
        raise UserInputError(f"{data}: none of its {total} conversations has a category matching "
                             f"{', '.join(category)}", fix="see the categories with tinytool data stats")
    with on_interrupt(f"{out} unchanged" if out.exists() else f"nothing written to {out}"), atomic_file(out) as fh:
        fh.write("\n".join(kept) + "\n")
    err.print(f"{len(kept)} of {total} conversations ({', '.join(category)}) -> {out}", highlight=False)
