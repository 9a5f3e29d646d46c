"""Choosing a setting on the tuning subset (`benchmarks/tuning.py`): each value's run against the knob's reference, the
chosen value, and what a WiSE-FT merge is decoded from; on fabricated run folders."""

from __future__ import annotations

import json

import pytest
from conftest import benchmark_module

CATS = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")


@pytest.fixture(scope="module")
def tuning():
    return benchmark_module("tuning")


def fake_run(folder, right: dict[str, int], n: int = 10) -> None:
    """A finished `eval bfcl` folder: ``n`` items per category, the first ``right[c]`` of them right."""
    folder.mkdir(parents=True)
    rows = [{"id": f"{c}_{k}", "category": c, "valid": k < right[c]} for c in CATS for k in range(n)]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cats = {c: {"accuracy": right[c] / n, "n": n} for c in CATS}
    (folder / "summary.json").write_text(json.dumps({"categories": cats}))


def scores(ast: int, irrelevance: int = 8) -> dict[str, int]:
    return {**dict.fromkeys(CATS[:4], ast), "irrelevance": irrelevance}


def test_the_best_value_is_chosen_and_a_tie_goes_to_the_value_nearest_the_reference(tuning, tmp_path):
    knob = tuning.KNOBS["wise"]
    for value, ast in [(1.0, 5), (0.9, 7), (0.7, 7), (0.5, 3)]:
        fake_run(knob.folder(tmp_path, value), scores(ast))
    rec = tuning.record(knob, tmp_path / "model", "smollm2-135m-instruct", tmp_path, [0.5, 0.7, 0.9, 1.0])
    assert rec["chosen"] == "0.9" and rec["start"] == "smollm2-135m-instruct"
    assert rec["rows"]["1"]["vs_weight_1"] is None
    vs = rec["rows"]["0.9"]["vs_weight_1"]
    assert vs["ast_avg_change"] == pytest.approx(0.2) and vs["items"] == 50
    copy = tuning.KNOBS["copy-bias"]
    for value, ast in [(0.0, 5), (2.0, 6), (4.0, 6)]:
        fake_run(copy.folder(tmp_path, value), scores(ast))
    rec = tuning.record(copy, tmp_path / "model", "", tmp_path, [0.0, 2.0, 4.0])
    assert rec["chosen"] == "2" and rec["biases"] == ["0", "2", "4"] and rec["rows"]["0"]["vs_bias_0"] is None


def test_a_wise_value_decodes_a_merge_of_the_model_and_its_start_and_the_reference_the_model_itself(
        tuning, tmp_path, monkeypatch):
    calls: list[list[str]] = []
    monkeypatch.setattr(tuning, "run_cli", lambda argv: calls.append([str(a) for a in argv]))
    knob = tuning.KNOBS["wise"]
    tuning.evaluate(knob, tmp_path / "tuned", "base", tmp_path, 0.8, 4)
    merge, ev = calls
    assert merge[1:] == ["merge", "-m", str(tmp_path / "tuned"), "-m", "base", "-w", "0.8", "-w", "0.2", "-o",
                         str(tmp_path / "wise-0.8-model"), "--overwrite"]
    assert ev[ev.index("-m") + 1] == str(tmp_path / "wise-0.8-model") and "--constrained" in ev
    calls.clear()
    tuning.evaluate(knob, tmp_path / "tuned", "base", tmp_path, 1.0, 4)
    (ev,) = calls
    assert ev[ev.index("-m") + 1] == str(tmp_path / "tuned") and ev[ev.index("--limit") + 1] == "100"


def test_a_smaller_reading_draws_inside_the_tuning_subset_into_folders_of_its_own(tuning, tmp_path, monkeypatch):
    calls: list[list[str]] = []
    monkeypatch.setattr(tuning, "run_cli", lambda argv: calls.append([str(a) for a in argv]))
    knob = tuning.KNOBS["wise"]
    out = tuning.evaluate(knob, tmp_path / "tuned", "base", tmp_path, 0.8, 4, limit=40)
    merge, ev = calls
    assert out == tmp_path / "wise-0.8-n40" and merge[merge.index("-o") + 1] == str(tmp_path / "wise-0.8-model")
    assert ev[ev.index("--within") + 1] == "100" and ev[ev.index("--limit") + 1] == "40" and ev[-1] == str(out)
    for value, ast in [(1.0, 5), (0.8, 6)]:
        fake_run(knob.folder(tmp_path, value, 40), scores(ast))
    rec = tuning.record(knob, tmp_path / "tuned", "base", tmp_path, [0.8, 1.0], limit=40)
    assert rec["chosen"] == "0.8" and rec["subset"] == "--within 100 --limit 40"


def test_a_smaller_reading_is_written_beside_the_whole_subset_s(tuning, tmp_path, monkeypatch):
    knob = tuning.KNOBS["wise"]
    for value, ast in [(1.0, 5), (0.8, 6)]:
        fake_run(knob.folder(tmp_path, value, 40), scores(ast))
    (tmp_path / "tuned").mkdir()
    out = tmp_path / "calls.json"
    out.write_text(json.dumps({"wise_tuning": {"chosen": "0.7"}}))
    monkeypatch.setattr("sys.argv", ["tuning.py", "--knob", "wise", "--model", str(tmp_path / "tuned"), "--work",
                                     str(tmp_path), "--values", "0.8", "--limit", "40", "--read", "--out", str(out)])
    tuning.main()
    data = json.loads(out.read_text())
    assert data["wise_tuning"] == {"chosen": "0.7"} and data["wise_tuning_n40"]["chosen"] == "0.8"


def test_a_floor_bars_the_values_that_decline_less_than_the_base_on_the_same_items(tuning, tmp_path):
    knob = tuning.KNOBS["wise"]
    for value, ast, irr in [(1.0, 5, 4), (0.9, 6, 3), (0.8, 7, 2)]:
        fake_run(knob.folder(tmp_path, value, 4), scores(ast, irr), n=4)
    base = tmp_path / "base"
    fake_run(base, scores(4, 3), n=10)  # more items than the reading's; the first three irrelevance items right
    rec = tuning.record(knob, tmp_path / "m", "s", tmp_path, [0.8, 0.9, 1.0], limit=4, floor=base)
    assert rec["floor"]["irrelevance_strict"] == 0.75 and rec["floor"]["barred"] == ["0.8"]
    assert rec["chosen"] == "0.9"  # the best AST (0.8) declines less than BASE on these items
    assert tuning.record(knob, tmp_path / "m", "s", tmp_path, [0.8, 0.9, 1.0], limit=4)["chosen"] == "0.8"
    strict = tmp_path / "strict"
    fake_run(strict, scores(4, 10), n=10)  # BASE declines every one: no value keeps it, the model itself is chosen
    rec = tuning.record(knob, tmp_path / "m", "s", tmp_path, [0.8, 0.9, 1.0], limit=4, floor=strict)
    assert rec["floor"]["barred"] == ["0.8", "0.9"] and rec["chosen"] == "1"
    short = tmp_path / "short"
    fake_run(short, scores(1, 1), n=2)
    with pytest.raises(SystemExit, match="does not hold 2 of the tuning items"):
        tuning.record(knob, tmp_path / "m", "s", tmp_path, [0.8, 0.9, 1.0], limit=4, floor=short)


def test_a_gated_reading_decodes_each_merge_only_where_the_model_itself_called(tuning, tmp_path, monkeypatch):
    calls: list[list[str]] = []
    monkeypatch.setattr(tuning, "run_cli", lambda argv: calls.append([str(a) for a in argv]))
    knob = tuning.KNOBS["wise"]
    out = tuning.evaluate(knob, tmp_path / "tuned", "base", tmp_path, 0.6, 4, limit=40, gate=True)
    merge, ev = calls
    assert out == tmp_path / "wise-0.6-n40-gated" and merge[merge.index("-o") + 1] == str(tmp_path / "wise-0.6-model")
    assert ev[ev.index("--gate") + 1] == str(tmp_path / "wise-1-n40")
    calls.clear()
    assert tuning.evaluate(knob, tmp_path / "tuned", "base", tmp_path, 1.0, 4, limit=40, gate=True) == \
        tmp_path / "wise-1-n40"
    assert "--gate" not in calls[0]  # the reference is the gate itself
    for value, ast in [(1.0, 5), (0.6, 7)]:
        fake_run(knob.folder(tmp_path, value, 40, gate=True), scores(ast))
    rec = tuning.record(knob, tmp_path / "tuned", "base", tmp_path, [0.6, 1.0], limit=40, gate=True)
    assert rec["chosen"] == "0.6" and rec["gate"] is True
