"""Synthesis at scale: shards logged as they finish and resumed after a crash, several threads, several
endpoints behind one client."""

from __future__ import annotations

import threading

import pytest

from tinytool.llm import GenerationConfig, Request, ScriptedClient
from tinytool.llm.pool import PooledClient, thread_safe
from tinytool.synth.stage import merge_counts, parts_path, run_sharded


def test_a_crashed_stage_resumes_after_its_last_finished_shard(tmp_path):
    out = tmp_path / "out.jsonl"
    runs: list[int] = []

    def work(items, shard):
        runs.append(shard)
        if shard == 2 and runs.count(2) == 1:
            raise RuntimeError("the endpoint went away")
        return [x * 10 for x in items], {"seen": len(items), "by": {"kind": 1}}

    with pytest.raises(RuntimeError):
        run_sharded(list(range(10)), str, work, out, shard_size=3)
    assert runs == [0, 1, 2] and parts_path(out).is_file()
    rows, counts, info = run_sharded(list(range(10)), str, work, out, shard_size=3)
    assert runs == [0, 1, 2, 2, 3]  # shards 0 and 1 were not asked again
    assert rows == [x * 10 for x in range(10)] and info == {"shards": 4, "resumed": 2}
    assert counts == {"seen": 10, "by": {"kind": 4}}


def test_a_rerun_with_other_settings_is_refused_and_overwrite_starts_again(tmp_path):
    from tinytool.errors import TinytoolError

    out, runs, failed = tmp_path / "o.jsonl", [], []

    def work(items, shard):
        runs.append(shard)
        if shard == 1 and not failed:
            failed.append(shard)
            raise RuntimeError("stop")
        return list(items), {}

    with pytest.raises(RuntimeError):
        run_sharded(list(range(4)), str, work, out, shard_size=2, settings={"seed": 0})
    with pytest.raises(TinytoolError, match="other settings .*seed"):
        run_sharded(list(range(4)), str, work, out, shard_size=2, settings={"seed": 1})
    with pytest.raises(TinytoolError, match="shard_size"):
        run_sharded(list(range(4)), str, work, out, shard_size=1, settings={"seed": 0})
    runs.clear()
    rows, _, info = run_sharded(list(range(4)), str, work, out, shard_size=2, settings={"seed": 1}, overwrite=True)
    assert rows == [0, 1, 2, 3] and info["resumed"] == 0 and runs == [0, 1]


def test_an_error_with_several_workers_cancels_the_shards_not_started(tmp_path):
    import time

    started = []

    def work(items, shard):
        started.append(shard)
        time.sleep(0.05)
        if shard == 0:
            raise RuntimeError("the endpoint went away")
        return list(items), {}

    with pytest.raises(RuntimeError):
        run_sharded(list(range(40)), str, work, tmp_path / "o.jsonl", shard_size=1, workers=2)
    time.sleep(0.2)
    assert len(started) < 10, started


def test_shards_on_several_threads_keep_the_input_order(tmp_path):
    threads = set()

    def work(items, shard):
        threads.add(threading.get_ident())
        return [f"{x}!" for x in items], {"n": len(items)}

    rows, counts, _ = run_sharded([str(i) for i in range(40)], str, work, tmp_path / "o.jsonl", shard_size=2,
                                  workers=4)
    assert rows == [f"{i}!" for i in range(40)] and counts == {"n": 40}


def test_merge_counts_adds_numbers_and_nested_counters():
    assert merge_counts({"a": 1, "d": {"x": 2}, "s": "old"}, {"a": 2, "d": {"x": 1, "y": 5}, "s": "new", "b": True}) \
        == {"a": 3, "d": {"x": 3, "y": 5}, "s": "new", "b": True}


def test_a_pool_spreads_one_batch_over_its_endpoints_in_order():
    a, b = ScriptedClient(lambda r, i: "A:" + r.messages[0]["content"]), \
        ScriptedClient(lambda r, i: "B:" + r.messages[0]["content"])
    pool = PooledClient([a, b])
    outs = pool.generate([Request([{"role": "user", "content": str(i)}]) for i in range(5)], GenerationConfig())
    assert [o[0].text.split(":")[1] for o in outs] == [str(i) for i in range(5)]
    assert len(a.calls[0]) == 3 and len(b.calls[0]) == 2 and thread_safe(pool)


def test_the_chains_stage_uses_every_endpoint_and_resumes(tmp_path, monkeypatch):
    import json

    from typer.testing import CliRunner

    from tinytool.cli import app

    catalog = tmp_path / "catalog.jsonl"
    tools = [{"type": "function", "function": {"name": f"t{j}", "description": "does a thing with a value",
                                               "parameters": {"type": "object", "properties": {}}}}
             for j in range(3)]
    catalog.write_text("".join(json.dumps({"server": f"s{i}", "tools": tools}) + "\n" for i in range(4)))
    asked: dict[str, int] = {}

    def client_for(spec, **kw):
        def respond(req, i):
            asked[spec] = asked.get(spec, 0) + 1
            return "{}"  # nothing usable: counted as dropped, never a crash
        return ScriptedClient(respond)

    monkeypatch.setattr("tinytool.llm.get_client", client_for)
    out = tmp_path / "chains.jsonl"
    res = CliRunner().invoke(app, ["synth", "chains", "-c", str(catalog), "--llm", "e1", "--llm", "e2", "--shard-size",
                                   "1", "--workers", "2", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert asked.get("e1") and asked.get("e2") and out.is_file() and not parts_path(out).exists()
    assert "4 servers" in res.output
