"""The experience-replay store (EfficientTool §3.1.2): every labelled trajectory the loop kept, deduplicated by
its user query across all iterations, in one append-only JSONL file.

A row is ``{"id", "query", "label", "labelled_by", "reasons", "iteration", "conversation"}``. The store feeds
both trainers: the desirable rows are SFT data, and all rows, with their labels, are KTO data.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tinytool.collect.dedup import QueryDeduper
from tinytool.io import append_jsonl, read_jsonl_rows, repair_log, write_jsonl


class ReplayStore:
    def __init__(self, path: str | os.PathLike, threshold: float = 0.7):
        self.path = Path(path)
        self.dedup = QueryDeduper(threshold)
        self.rows: list[dict[str, Any]] = []
        if self.path.is_file():
            repair_log(self.path)
            self.rows = list(read_jsonl_rows(self.path))
            for r in self.rows:
                self.dedup.add(r["query"], r["id"])

    def __len__(self) -> int:
        return len(self.rows)

    def queries(self) -> list[str]:
        return [r["query"] for r in self.rows]

    def is_duplicate(self, query: str) -> bool:
        return self.dedup.duplicate_of(query) is not None

    def add(self, rows: Iterable[dict[str, Any]]) -> tuple[int, int]:
        """Append the rows whose query is new (not a near-duplicate of a stored one or of an earlier row of
        the same batch); returns ``(kept, duplicates)``."""
        new, dup = [], 0
        for r in rows:
            if self.dedup.add(r["query"], r["id"]):
                new.append(r)
            else:
                dup += 1
        if new:
            append_jsonl(self.path, new)
            self.rows += new
        return len(new), dup

    def export(self, path: str | os.PathLike, *, desirable_only: bool) -> int:
        """Write the stored conversations (each with ``meta.label``) as training JSONL; returns how many."""
        out = []
        for r in self.rows:
            if desirable_only and not r["label"]:
                continue
            conv = dict(r["conversation"])
            conv["meta"] = {**conv.get("meta", {}), "label": bool(r["label"]), "id": r["id"]}
            out.append(conv)
        write_jsonl(path, out)
        return len(out)


__all__ = ["ReplayStore"]
