"""The distillation protocol's benchmark (`benchmarks/distill_gain.py`): which arms a run trains, and its rows."""

from __future__ import annotations

import pytest
from conftest import benchmark_module

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")


def scores(share: float) -> dict:
    """Scores over 40 items per category, the first ``share`` of each correct."""
    items = {f"{c}-{i}": (c, i < share * 40) for c in CATEGORIES for i in range(40)}
    return {"items": items, "table": {"irrelevance_strict": share, "overall": share, "n": 40}}


@pytest.fixture(scope="module")
def distill_gain():
    return benchmark_module("distill_gain")


def test_the_claim_trains_its_three_arms_or_the_two_it_is_given(distill_gain):
    assert distill_gain.arm_rows("", final=True) == ["sft", "ckd", "fkl"]
    assert distill_gain.arm_rows(" sft, ckd ", final=True) == ["sft", "ckd"]
    assert distill_gain.arm_rows("sft-10m,ckd-10m", final=False) == ["sft-10m", "ckd-10m"]


def test_sweep_rows_ride_along_with_the_claim_after_its_arms(distill_gain):
    # sft and ckd read back, fkl and the sweep row train as the pair: the claim's arms always come first
    assert distill_gain.arm_rows("ckd-10m-t2, fkl, sft, ckd", final=True) == ["sft", "ckd", "fkl", "ckd-10m-t2"]
    assert distill_gain.arm_rows("sft,ckd,sft,ckd-10m-k20", final=True) == ["sft", "ckd", "ckd-10m-k20"]


@pytest.mark.parametrize("rows, final, says", [
    ("sft,fkl", True, "sft and ckd"),           # the claim compares CKD with SFT: both must be there
    ("ckd,sft-10m", True, "sft and ckd"),       # a sweep row is not an arm of the claim
    ("sft,nope", False, "unknown rows nope"),
    ("", False, "--rows"),
])
def test_a_wrong_choice_of_rows_is_refused_and_says_why(distill_gain, rows, final, says):
    with pytest.raises(ValueError, match=says):
        distill_gain.arm_rows(rows, final)


def test_every_row_is_an_sft_or_a_distillation_arm_with_a_budget(distill_gain):
    for name, spec in distill_gain.ROWS.items():
        assert spec["kind"] in ("sft", "distill") and spec["seconds"] > 0 and spec["lr"] > 0, name
        if spec["kind"] == "distill":
            assert spec["loss"] in ("ckd", "fkl") and spec["k"] >= 1, name
            assert (spec["tail"] is None) == (spec["loss"] == "fkl"), name
    assert set(distill_gain.FINAL.values()) <= set(distill_gain.ROWS)


def test_an_arm_s_command_carries_its_row_s_settings(distill_gain, monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(distill_gain, "run_cli", lambda cmd, threads: seen.append(cmd))
    with pytest.raises(FileNotFoundError):  # no summary was written: the arm's command is what is checked
        distill_gain.train_arm(tmp_path, "ckd-10m-t2", "student", "teacher", tmp_path, 1, 600.0, 1)
    cmd = seen[0]
    flag = {cmd[i]: cmd[i + 1] for i in range(len(cmd) - 1) if cmd[i].startswith("--")}
    assert (flag["--loss"], flag["--k"], flag["--lambda-tail"], flag["--temperature"]) == ("ckd", "100", "10.0", "2.0")
    assert (flag["--max-seconds"], flag["--seed"], flag["--teacher"]) == ("600.0", "1", "teacher")
    assert cmd[-1].endswith("ckd-10m-t2-s600-seed1")
    seen.clear()
    with pytest.raises(FileNotFoundError):
        distill_gain.train_arm(tmp_path, "ckd", "student", "teacher", tmp_path, 0, 600.0, 1)
    assert "--temperature" not in seen[0] and seen[0][-1].endswith("ckd-s600")


def test_agreement_is_measured_once_per_student_teacher_and_split(distill_gain, monkeypatch, tmp_path):
    """A student folder keeps its agreement figure: a rerun that reads arms back measures only the new ones, and a
    figure for another teacher, split or number of turns is measured again; a student without a folder (a hub
    id) is measured every time."""
    asked = []

    def measure(students, teacher, dev, turns):
        asked.append(sorted(students))
        return {row: 0.5 + 0.1 * len(asked) for row in students}

    monkeypatch.setattr(distill_gain, "_agreement", measure)
    arms = {row: tmp_path / row for row in ("sft", "ckd", "fkl")}
    for folder in arms.values():
        folder.mkdir()
    dev = tmp_path / "dev.jsonl"
    first = distill_gain.agreement({"sft": str(arms["sft"]), "ckd": str(arms["ckd"])}, "T", dev)
    assert asked == [["ckd", "sft"]] and first == {"sft": 0.6, "ckd": 0.6}
    again = distill_gain.agreement({row: str(f) for row, f in arms.items()} | {"hub": "some/model"}, "T", dev)
    assert asked[1] == ["fkl", "hub"] and again == {"sft": 0.6, "ckd": 0.6, "fkl": 0.7, "hub": 0.7}
    distill_gain.agreement({"sft": str(arms["sft"])}, "T", dev, turns=30)
    distill_gain.agreement({"sft": str(arms["sft"])}, "other", dev, turns=30)
    assert asked[2:] == [["sft"], ["sft"]]


@pytest.mark.slow(15)
def test_star_ordering_pairs_each_step_on_the_same_items(distill_gain):
    """CKD + RL > SFT + RL > SFT: each step a paired comparison; the ordering holds only when both steps are up
    with p < 0.05, and a reversed step is reported, not hidden."""
    def arms(sft: float, ckd: float) -> dict:
        return {"sft": scores(sft), "ckd": scores(ckd)}

    runs = {"sft": ("m/sft-rl", {"seconds": 500.0, "data": {"selection": {"seconds": 90.0}}}),
            "ckd": ("m/ckd-rl", {"seconds": 580.0})}
    order = distill_gain.star_ordering(1, "g-xp-g4-seln", {"sft": "m/sft", "ckd": "m/ckd"},
                                       arms(0.3, 0.4), runs, arms(0.6, 0.9))
    assert order["holds"] and order["sft_rl_vs_sft"]["delta_overall"] > 0.25
    assert order["ckd_rl_vs_sft_rl"]["p_overall"] < 0.05 and order["seconds"] == {"sft_rl": 590.0, "ckd_rl": 580.0}
    assert order["sft_rl"]["overall"] == 0.6 and order["rl_from"]["ckd"] == "m/ckd"
    reversed_ = distill_gain.star_ordering(1, "g-xp-g4-seln", {"sft": "m/sft", "ckd": "m/ckd"},
                                           arms(0.3, 0.4), runs, arms(0.9, 0.6))
    assert not reversed_["holds"] and reversed_["ckd_rl_vs_sft_rl"]["delta_overall"] < 0
    # RL that lowers the CKD student is reported, and is not a step of STAR's ordering
    past = distill_gain.star_ordering(1, "g-xp-g4-seln", {"sft": "m/sft", "ckd": "m/ckd"},
                                      arms(0.3, 1.0), runs, arms(0.6, 0.9))
    assert past["holds"] and past["ckd_rl_vs_ckd"]["delta_overall"] < 0


def test_a_sweep_pairs_its_rows_with_its_first_sft_row_or_else_its_first_row(distill_gain):
    assert distill_gain.reference_row(["ckd-10m", "sft-10m", "sft-10m-lr1e4"]) == "sft-10m"
    assert distill_gain.reference_row(["ckd-10m-k20", "ckd-10m", "ckd-10m-t2"]) == "ckd-10m-k20"


def test_a_sweep_row_records_its_settings_and_its_paired_change_from_the_reference(distill_gain):
    summary = {"seconds": 598.04, "global_step": 9, "losses": [[1, 0.9]]}
    ref, better = scores(0.3), scores(0.8)
    rec = distill_gain.record("ckd-10m-t2", summary, better, ref, 0.91, "ckd-10m")
    assert (rec["temperature"], rec["k"], rec["steps"], rec["seconds"]) == (2.0, 100, 9, 598.0)
    assert rec["reference"] == "ckd-10m" and rec["delta_overall_vs_ref"] > 0.4 and rec["p_overall_vs_ref"] < 0.05
    assert "delta_overall_vs_sft" not in rec and rec["delta_irrelevance_strict_vs_ref"] == 0.5
    # against an SFT row the keys say so; the reference itself carries no change from itself
    assert rec["reference"] and "p_ast_vs_sft" in distill_gain.record("ckd-10m", summary, better, ref, None, "sft-10m")
    assert "reference" not in distill_gain.record("ckd-10m", summary, ref, ref, None, "ckd-10m")
