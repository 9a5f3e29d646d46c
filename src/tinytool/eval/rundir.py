"""Files of an evaluation run directory, written so that a crash loses at most one batch.

``generations.jsonl`` is appended and fsynced batch by batch; a torn last line (a crash mid-write)
is dropped on reading and cut before appending. JSON summaries are written aside and renamed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tinytool.errors import TinytoolError


class RunDirError(TinytoolError, RuntimeError):
    """A run directory that cannot be resumed with these settings, or is unreadable."""


def append_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows)
        fh.flush()
        os.fsync(fh.fileno())


def read_generations(path: Path) -> dict[str, dict]:
    """``id → generation row``. A torn last line is dropped; a broken line elsewhere is an error
    naming file and line."""
    out: dict[str, dict] = {}
    if not path.exists():
        return out
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            if i == len(lines):
                break
            raise RunDirError(f"{path}:{i}: not valid JSON ({e})") from None
        if not isinstance(row, dict) or "id" not in row:
            raise RunDirError(f"{path}:{i}: id: missing")
        out[row["id"]] = row
    return out


def drop_torn_tail(path: Path) -> None:
    """Cut a last line that a crash left without its newline, so appending starts clean."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as fh:
            fh.truncate(data.rfind(b"\n") + 1)


def write_json(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows)
    os.replace(tmp, path)
