"""The strict-decoding benchmark (`benchmarks/strict_bench.py`) builds its requests and times both sides on a tiny
model: a run of its overhead part, so a change of the request's decoding rules cannot leave it behind."""

from __future__ import annotations

import pytest
from conftest import benchmark_module

pytest.importorskip("torch")


def test_the_overhead_part_times_free_and_grammar_decoding(tmp_path):
    from tinytool.models.students import save_tiny_model

    bench = benchmark_module("strict_bench")
    path = save_tiny_model("smollm2-135m-instruct", tmp_path / "m", layers=1)
    convs = [bench.item_conversation(it) for it in bench._items(2)]
    held = bench._requests(convs, bench.get_format("hermes"), "auto")
    assert all(r.rules["constraint"] is not None for r in held)
    assert bench._requests(convs, bench.get_format("hermes"), None)[0].rules == {}
    out = bench.overhead(bench.load_model(str(path)).eval(), bench.load_tokenizer(str(path)), convs, 4, "hermes", 1)
    assert out["tool_sets"] == 2 and set(out["best"]) == {"free", "auto"}
