"""``tinytool data select``: the conversations of some categories of a file, as they are, or a seeded random subset
of them. The verb's options are the fields of `SelectConfig` (flags and ``--config`` YAML alike); `run` does the
work."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from tinytool.clikit import config_file, config_options, config_values, err, make_app, on_interrupt, setting
from tinytool.data.file_job import FileJob

select_app = make_app(help="Select conversations by category.")


@dataclass(frozen=True, kw_only=True)
class SelectConfig(FileJob):
    """What ``tinytool data select`` writes (`FileJob`: ``data`` → ``out``): the categories kept, and a subset."""

    category: list[str] = setting(None, "Keep the conversations whose meta.category matches this (shell-style: "
                                  "real_*; repeatable) [default: every category].", factory=lambda: ["*"])
    limit: int | None = setting(None, "At most N of them: a seeded random subset (the --seed), in the file's order.",
                                min=1)
    seed: int = setting(0, "Seed of the --limit subset.")

    def __post_init__(self) -> None:
        object.__setattr__(self, "category", [self.category] if isinstance(self.category, str) else
                           list(self.category))
        super().__post_init__()


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


def run(cfg: SelectConfig) -> dict[str, Any]:
    """Write the selected conversations to ``cfg.out`` (replaced whole, or left as it was when interrupted); the
    summary: how many were kept of how many, and where."""
    from tinytool.errors import UserInputError
    from tinytool.io import atomic_file

    kept, total = select_lines(cfg.data, cfg.category, cfg.limit, cfg.seed)
    if not kept:
        raise UserInputError(f"{cfg.data}: none of its {total} conversations has a category matching "
                             f"{', '.join(cfg.category)}", fix="see the categories with tinytool data stats")
    out = cfg.out
    with on_interrupt(f"{out} unchanged" if out.exists() else f"nothing written to {out}"), atomic_file(out) as fh:
        fh.write("\n".join(kept) + "\n")
    return {"kept": len(kept), "total": total, "out": str(out)}


@select_app.command("select")
@config_options(SelectConfig)
def select_cmd(config: Path | None = config_file(SelectConfig), **values: Any) -> None:
    """Write the conversations of the given categories, unchanged and in order: a part of a data set to score or
    train on by itself; with --limit, a seeded random subset of them.

    Example: tinytool data select data/demo/dev.jsonl --category 'real_*' -o data/demo/real-dev.jsonl
    """
    cfg = SelectConfig(**config_values(SelectConfig, values))
    s = run(cfg)
    err.print(f"{s['kept']} of {s['total']} conversations ({', '.join(cfg.category)}) -> {s['out']}", highlight=False)
