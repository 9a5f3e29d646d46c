"""The distillation protocol's benchmark (`benchmarks/distill_gain.py`): which arms a run trains, and its rows."""

from __future__ import annotations

import pytest
from conftest import benchmark_module


@pytest.fixture(scope="module")
def distill_gain():
    return benchmark_module("distill_gain")


def test_the_claim_trains_its_three_arms_or_the_two_it_is_given(distill_gain):
    assert distill_gain.arm_rows("", final=True) == ["sft", "ckd", "fkl"]
    assert distill_gain.arm_rows(" sft, ckd ", final=True) == ["sft", "ckd"]
    assert distill_gain.arm_rows("sft-10m,ckd-10m", final=False) == ["sft-10m", "ckd-10m"]


@pytest.mark.parametrize("rows, final, says", [
    ("sft,fkl", True, "sft and ckd"),           # the claim compares CKD with SFT: both must be there
    ("sft,ckd,sft-10m", True, "sft and ckd"),   # a sweep row is not an arm of the claim
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
