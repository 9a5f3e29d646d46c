"""`tinytool rl --no-call-share`: prompts subsampled (never repeated) to a share of labels without a call."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("datasets")
from datasets import Dataset
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytool.rl.data import makes_no_call, with_no_call_share


def _rows(n_no_call: int, n_call: int) -> Dataset:
    call = {"role": "assistant", "content": "", "tool_calls": [{"name": "f", "arguments": {}}]}
    decline = {"role": "assistant", "content": "I cannot do that with these tools."}
    labels = [decline] * n_no_call + [call] * n_call
    return Dataset.from_dict({"ground_truth": [json.dumps(x) for x in labels],
                              "task_id": [str(i) for i in range(len(labels))]})


@pytest.mark.parametrize(("text", "want"), [
    ('{"role": "assistant", "content": "no"}', True),
    ('{"role": "assistant", "content": "", "tool_calls": []}', True),
    ('{"role": "assistant", "tool_calls": [{"name": "f", "arguments": {}}]}', False),
    ("not json", False), ("[1]", False), ("null", False), (None, False)])
def test_a_label_without_a_call_is_recognised_and_nothing_raises(text, want):
    assert makes_no_call(text) is want


def test_the_larger_side_is_cut_to_the_share():
    ds, counts = with_no_call_share(_rows(50, 100), 0.2, seed=0)
    assert counts == {"no_call": 25, "call": 100, "dropped": 25} and len(ds) == 125
    ds, counts = with_no_call_share(_rows(10, 100), 0.2, seed=0)
    assert counts == {"no_call": 10, "call": 40, "dropped": 60}
    assert with_no_call_share(_rows(10, 100), 0.2, seed=1)[0]["task_id"] != ds["task_id"]  # the seed draws


def test_a_share_the_data_cannot_give_names_the_missing_side():
    with pytest.raises(ValueError, match="none of the 30 prompts has a label without a call"):
        with_no_call_share(_rows(0, 30), 0.2)
    with pytest.raises(ValueError, match="has a call in its label"):
        with_no_call_share(_rows(30, 0), 0.5)
    assert with_no_call_share(_rows(0, 30), 0.0)[1] == {"no_call": 0, "call": 30, "dropped": 0}


@settings(max_examples=200, deadline=None)
@given(n_no_call=st.integers(0, 60), n_call=st.integers(0, 60), share=st.floats(0, 1), seed=st.integers(0, 9))
def test_the_share_is_met_from_a_subset_without_repeats(n_no_call, n_call, share, seed):
    try:
        ds, counts = with_no_call_share(_rows(n_no_call, n_call), share, seed)
    except ValueError:
        assert (share > 0 and n_no_call == 0) or (share < 1 and n_call == 0)
        return
    ids = ds["task_id"]
    assert len(set(ids)) == len(ids) == counts["no_call"] + counts["call"]
    assert counts["no_call"] <= n_no_call and counts["call"] <= n_call
    assert sum(makes_no_call(g) for g in ds["ground_truth"]) == counts["no_call"]
    # one side is kept whole, and the share is the nearest a whole number of rows gives
    assert counts["no_call"] == n_no_call or counts["call"] == n_call
    if 0 < share < 1 and len(ids):
        assert abs(counts["no_call"] / len(ids) - share) <= 1 / len(ids) + 1e-9
