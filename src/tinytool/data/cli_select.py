"""``tinytool data select``: the conversations of some categories of a file, as they are, or a seeded random subset
of them. The verb's options are the fields of `SelectConfig` (flags and ``--config`` YAML alike); `run` does the
work."""

from __future__ import annotations

import random
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from tinytool.clikit import (
    config_file,
    config_options,
    config_values,
    err,
    left_note,
    make_app,
    on_interrupt,
    setting,
)
from tinytool.data.file_job import FileJob

select_app = make_app(help="Select conversations by category.")


@dataclass(frozen=True, kw_only=True)
class SelectConfig(FileJob):
    """What ``tinytool data select`` writes (`FileJob`: ``data`` → ``out``): the categories kept, and a subset."""

    category: list[str] = setting(None, "Keep the conversations whose meta.category matches this (shell-style: "
                                  "real_*; repeatable) [default: every category].", factory=lambda: ["*"])
    limit: int | None = setting(None, "At most N of them: a seeded random subset (the --seed), in the file's order.",
                                min=1)
    seed: int = setting(0, "Seed of the --limit and --count subsets.")
    count: list[str] = setting(None, "CATEGORY=N: at most N conversations of that category (shell-style), a seeded "
                               "subset of each (repeatable: a draw by category, as an RL prompt mix; only the "
                               "categories named are kept, --category is not taken with it).", factory=list)

    def __post_init__(self) -> None:
        from tinytool.errors import UserInputError

        object.__setattr__(self, "category", [self.category] if isinstance(self.category, str) else
                           list(self.category))
        object.__setattr__(self, "count", [self.count] if isinstance(self.count, str) else list(self.count or []))
        self.counts()  # a malformed entry is refused before anything is read
        if self.count and self.category != ["*"]:
            raise UserInputError("--count names the categories it keeps: give --category or --count, not both")
        super().__post_init__()

    def counts(self) -> dict[str, int]:
        """``count`` as category pattern → N; an entry that is not ``CATEGORY=N`` (N ≥ 1) raises, naming it."""
        from tinytool.errors import UserInputError

        out: dict[str, int] = {}
        for entry in self.count:
            pattern, _, n = str(entry).rpartition("=")
            if not pattern or not n.strip().isdigit() or int(n) < 1:
                raise UserInputError(f"--count {entry!r}: expected CATEGORY=N with N a whole number ≥ 1 "
                                     "(simple=160)")
            if pattern.strip() in out:
                raise UserInputError(f"--count {entry!r}: category {pattern.strip()!r} is named twice")
            out[pattern.strip()] = int(n)
        return out


def _categories(data: Path) -> tuple[list[str], list[str]]:
    """Each conversation line of ``data`` (conversation JSONL) unchanged, and its ``meta.category``."""
    from tinytool.io import iter_jsonl_rows

    rows = list(iter_jsonl_rows(data))  # a line that is not UTF-8 or not JSON is named here, by file:line
    lines = data.read_text(encoding="utf-8-sig").split("\n")  # numbered as iter_jsonl_rows numbers them
    return ([lines[lineno - 1] for lineno, _ in rows],
            [str(((row.get("meta") if isinstance(row, dict) else None) or {}).get("category", "")) for _, row in rows])


def _subset(indices: list[int], limit: int | None, seed: int) -> list[int]:
    """A seeded random subset of ``limit`` of ``indices`` (all of them when fewer), in their order."""
    if limit is None or limit >= len(indices):
        return indices
    return [indices[i] for i in sorted(random.Random(seed).sample(range(len(indices)), limit))]


def select_lines(data: Path, patterns: list[str], limit: int | None = None, seed: int = 0) -> tuple[list[str], int]:
    """The lines of ``data`` (conversation JSONL) whose ``meta.category`` matches one of ``patterns`` (shell-style:
    ``real_*``), unchanged and in order, and how many conversations the file holds. ``limit`` keeps a seeded random
    subset of that many of them, still in order (the rule of ``teacher rollout --limit`` and ``eval bfcl
    --limit``)."""
    lines, cats = _categories(data)
    kept = [i for i, c in enumerate(cats) if any(fnmatchcase(c, p) for p in patterns)]
    return [lines[i] for i in _subset(kept, limit, seed)], len(lines)


def count_lines(data: Path, counts: dict[str, int], seed: int = 0) -> tuple[list[str], dict[str, int], int]:
    """A draw by category: for each pattern of ``counts`` a seeded subset of at most its N lines of ``data`` whose
    category matches it (each pattern drawn by itself, `select_lines`' rule), all in the file's order; with how many
    each pattern kept, and how many conversations the file holds. A conversation two patterns match counts for the
    first."""
    lines, cats = _categories(data)
    taken: set[int] = set()
    per: dict[str, int] = {}
    for pattern, n in counts.items():
        drawn = _subset([i for i, c in enumerate(cats) if i not in taken and fnmatchcase(c, pattern)], n, seed)
        taken.update(drawn)
        per[pattern] = len(drawn)
    return [lines[i] for i in sorted(taken)], per, len(lines)


def run(cfg: SelectConfig) -> dict[str, Any]:
    """Write the selected conversations to ``cfg.out`` (replaced whole, or left as it was when interrupted); the
    summary: how many were kept of how many (with ``count``, of each category), and where."""
    from tinytool.errors import UserInputError
    from tinytool.io import atomic_file

    per: dict[str, int] = {}
    if cfg.count:
        kept, per, total = count_lines(cfg.data, cfg.counts(), cfg.seed)
        kept = [kept[i] for i in _subset(list(range(len(kept))), cfg.limit, cfg.seed)]  # --limit: of the draw
    else:
        kept, total = select_lines(cfg.data, cfg.category, cfg.limit, cfg.seed)
    if not kept:
        named = ", ".join(cfg.counts() or cfg.category)
        raise UserInputError(f"{cfg.data}: none of its {total} conversations has a category matching {named}",
                             fix="see the categories with tinytool data stats")
    out = cfg.out
    with on_interrupt(left_note(out)), atomic_file(out) as fh:
        fh.write("\n".join(kept) + "\n")
    return {"kept": len(kept), "total": total, **({"per_category": per} if per else {}), "out": str(out)}


@select_app.command("select")
@config_options(SelectConfig)
def select_cmd(config: Path | None = config_file(SelectConfig), **values: Any) -> None:
    """Write the conversations of the given categories, unchanged and in order: a part of a data set to score or
    train on by itself; with --limit, a seeded random subset of them.

    Example: tinytool data select data/demo/dev.jsonl --category 'real_*' -o data/demo/real-dev.jsonl
    """
    cfg = SelectConfig(**config_values(SelectConfig, values))
    s = run(cfg)
    what = ", ".join(f"{c} {n}" for c, n in s["per_category"].items()) if "per_category" in s else ", ".join(cfg.category)
    err.print(f"{s['kept']} of {s['total']} conversations ({what}) -> {s['out']}", highlight=False)
