"""A synthesis stage at scale: its input cut into shards, the shards worked on several threads, each finished
shard logged at once, and a rerun that picks up after the last finished shard.

Every stage's per-item work is a call to its LLM endpoints (a GPU box's vLLM servers, a hosted API), so it is
I/O-bound: threads are what keeps several endpoints busy, and the LLM client (`tinytool.llm.pool.PooledClient`
over several endpoints) spreads each shard's requests over them. A local model generating in this process
cannot be called from two threads, so with one the stage runs its shards one after the other.

The log sits beside the output (``OUT.parts.jsonl``): a first row with the stage's settings, then one row per
finished shard with the keys of its items, its output rows and its counts. A rerun with the same settings skips
the shards whose keys are logged; one with other settings is refused, naming them (``overwrite`` starts again);
once every shard is done, the output is written whole and the log removed. An error or Ctrl-C cancels the
shards not yet started and loses only those in flight.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tinytool.io import append_jsonl, read_jsonl_rows, repair_log

log = logging.getLogger(__name__)

Work = Callable[[list[Any], int], tuple[list[Any], dict[str, Any]]]


def merge_counts(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Counts added key by key (numbers summed, nested dicts merged, anything else: the last one)."""
    out = dict(a)
    for k, v in b.items():
        if isinstance(v, bool) or not isinstance(v, (int, float, dict)):
            out[k] = v
        elif isinstance(v, dict):
            out[k] = merge_counts(out.get(k) or {}, v)
        else:
            out[k] = out.get(k, 0) + v
    return out


def parts_path(out: str | os.PathLike) -> Path:
    out = Path(out)
    return out.with_name(out.name + ".parts.jsonl")


def _open_log(log_path: Path, settings: dict[str, Any], overwrite: bool) -> dict[tuple[str, ...], dict[str, Any]]:
    """The shards already logged under these settings; a log of other settings is refused (or, with
    ``overwrite``, removed)."""
    import json

    from tinytool.errors import UserInputError

    settings = json.loads(json.dumps(settings, default=str))
    if overwrite:
        log_path.unlink(missing_ok=True)
    repair_log(log_path)
    rows = list(read_jsonl_rows(log_path)) if log_path.is_file() else []
    if rows and rows[0].get("settings") is not None:
        old = rows[0]["settings"]
        changed = sorted(k for k in set(old) | set(settings) if old.get(k) != settings.get(k))
        if changed:
            raise UserInputError(f"{log_path}: holds shards made with other settings ({', '.join(changed)})",
                                 fix="rerun with the same settings to resume, or --overwrite to start again")
    elif rows:  # a log without its settings row cannot be trusted
        log_path.unlink()
        rows = []
    if not rows:
        append_jsonl(log_path, [{"settings": settings}])
    return {tuple(r["keys"]): r for r in rows[1:]}


def run_sharded(items: Sequence[Any], key: Callable[[Any], str], work: Work, out: str | os.PathLike, *,
                shard_size: int = 8, workers: int = 1, progress: Callable[[int], None] | None = None,
                settings: dict[str, Any] | None = None, overwrite: bool = False,
                ) -> tuple[list[Any], dict[str, Any], dict[str, int]]:
    """Run ``work(shard_items, shard_index) -> (rows, counts)`` over ``items`` cut into shards of ``shard_size``;
    returns every shard's rows in input order, the summed counts, and ``{"shards", "resumed"}``.

    Shards whose item keys are in ``out``'s log (made with the same ``settings``, shard size included) are not
    run again; each new one is appended to the log as it finishes (on ``workers`` threads). ``progress(n)`` is
    told the items of each finished shard.
    """
    if shard_size < 1 or workers < 1:
        raise ValueError("shard_size and workers must be ≥ 1")
    shards = [list(items[i:i + shard_size]) for i in range(0, len(items), shard_size)]
    log_path = parts_path(out)
    done = _open_log(log_path, {**(settings or {}), "shard_size": shard_size}, overwrite)
    results: list[dict[str, Any] | None] = [None] * len(shards)
    todo = []
    for i, shard in enumerate(shards):
        keys = tuple(key(x) for x in shard)
        if keys in done:
            results[i] = done[keys]
        else:
            todo.append((i, shard, keys))
    resumed = len(shards) - len(todo)
    lock = threading.Lock()

    def run(i: int, shard: list[Any], keys: tuple[str, ...]) -> None:
        rows, counts = work(shard, i)
        row = {"shard": i, "keys": list(keys), "rows": rows, "counts": counts}
        with lock:
            append_jsonl(log_path, [row])
            results[i] = row
        if progress:
            progress(len(shard))

    if workers == 1:
        for job in todo:
            run(*job)
    else:
        pool = ThreadPoolExecutor(workers)
        try:
            for f in [pool.submit(run, *job) for job in todo]:
                f.result()
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)  # the shards not started yet are not run
            raise
        pool.shutdown()
    rows: list[Any] = []
    counts: dict[str, Any] = {}
    for r in results:
        assert r is not None
        rows += r["rows"]
        counts = merge_counts(counts, r["counts"])
    return rows, counts, {"shards": len(shards), "resumed": resumed}


def finish(out: str | os.PathLike) -> None:
    """The output is written: its log goes."""
    parts_path(out).unlink(missing_ok=True)


__all__ = ["finish", "merge_counts", "parts_path", "run_sharded"]
