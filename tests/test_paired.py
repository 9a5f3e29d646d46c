"""Paired comparisons of BFCL runs (`benchmarks/_paired.py`): verdicts packed as a quality row keeps them come back
unchanged, and two runs compare over the items both scored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import benchmark_module
from hypothesis import given
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def paired():
    return benchmark_module("_paired")


def _run(paired_items: dict, where: Path) -> Path:
    where.mkdir()
    rows = [{"id": i, "category": c, "valid": ok, "valid_strict": ok} for i, (c, ok) in paired_items.items()]
    (where / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return where


def test_packed_verdicts_come_back_with_gaps_and_live_ids_left_out(paired):
    items = {"irrelevance_0": ("irrelevance", True), "irrelevance_3": ("irrelevance", False),
             "simple_python_1": ("simple_python", True), "live_simple_0-0-0": ("live_simple", True)}
    packed = paired.pack_verdicts(items)
    assert packed == {"irrelevance": "1..0", "simple_python": ".1"}
    assert paired.unpack_verdicts(packed) == {k: v for k, v in items.items() if not k.startswith("live")}


ids = st.tuples(st.sampled_from(["irrelevance", "multiple", "simple_python"]), st.integers(0, 60), st.booleans())


@given(st.lists(ids, max_size=80), st.dictionaries(st.text(max_size=12), st.tuples(st.text(max_size=8), st.booleans()),
                                                    max_size=5))
def test_packing_round_trips_and_never_raises(paired, rows, odd):
    items = {f"{c}_{k}": (c, ok) for c, k, ok in rows}
    assert paired.unpack_verdicts(paired.pack_verdicts(items)) == items
    paired.pack_verdicts({**items, **odd})  # any ids at all: packed or left out, never an error


def test_two_runs_compare_over_the_items_both_scored(paired, tmp_path):
    before = {f"{c}_{k}": (c, k % 2 == 0) for c in paired.AST for k in range(20)}
    before |= {f"irrelevance_{k}": ("irrelevance", k < 10) for k in range(20)}
    after = dict(before) | {f"irrelevance_{k}": ("irrelevance", k < 14) for k in range(20)}  # 4 fixed, none broken
    after |= {f"simple_python_{k}": ("simple_python", True) for k in range(20)}  # 10 fixed
    out = paired.compare(before, after)
    assert out["items"] == 100 and out["irrelevance_fixed"] == 4 and out["irrelevance_broken"] == 0
    assert out["ast_avg_change"] == pytest.approx(0.5 / 4)
    assert out["p_per_category"]["simple_python"] < 0.01 and out["p_per_category"]["multiple"] == 1.0

    # a run directory and a quality row that kept its verdicts read the same
    quality = tmp_path / "quality.json"
    quality.write_text(json.dumps({"table": {"row-a": {"verdicts": paired.pack_verdicts(after)}, "old": {}}}))
    assert paired.load_items("row-a", quality) == paired.load_items(str(_run(after, tmp_path / "run")), quality)
    with pytest.raises(SystemExit, match="keeps no per-item verdicts"):
        paired.load_items("old", quality)
    with pytest.raises(SystemExit, match="neither a BFCL run directory"):
        paired.load_items(str(tmp_path / "nowhere"), quality)


def test_overall_is_the_mean_of_ast_average_and_strict_irrelevance_and_its_bootstrap_is_paired(paired):
    before = {f"{c}_{k}": (c, k < 5) for c in (*paired.AST, "irrelevance") for k in range(20)}
    after = dict(before) | {f"irrelevance_{k}": ("irrelevance", k < 15) for k in range(20)}  # 10 fixed
    ids = {c: [f"{c}_{k}" for k in range(20)] for c in (*paired.AST, "irrelevance")}
    assert paired.overall(before, ids) == pytest.approx((0.25 + 0.25) / 2)
    change, p = paired.overall_p(before, after)
    assert change == pytest.approx(0.5 / 2) and p < 0.01
    # the same runs: no change, p = 1; the AST average's bootstrap is the same resampling over its four categories
    assert paired.overall_p(before, before) == (0.0, 1.0)
    assert paired.bootstrap_p(before, after) == (0.0, 1.0)
    out = paired.compare(before, after)
    assert out["overall_change"] == pytest.approx(0.25) and out["p_overall"] == p
    with pytest.raises(ValueError, match="irrelevance"):
        paired.overall_p({k: v for k, v in before.items() if v[0] != "irrelevance"}, after)


def test_bfcl_items_reads_whole_records_and_leaves_out_a_cut_last_line(paired, tmp_path):
    rows = [{"id": "simple_python_0", "category": "simple_python", "valid": True, "valid_strict": False},
            {"id": "irrelevance_1", "category": "irrelevance", "valid": True},
            {"id": "multiple_2", "valid": True},  # no category: not a whole record
            [1, 2]]
    text = "".join(json.dumps(r) + "\n" for r in rows) + '{"id": "parallel_3", "categ'
    (tmp_path / "results.jsonl").write_text(text)
    assert paired.bfcl_items(tmp_path) == {"simple_python_0": ("simple_python", False),
                                           "irrelevance_1": ("irrelevance", True)}
