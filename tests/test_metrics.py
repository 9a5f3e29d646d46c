"""Tests for `tinytool.eval.metrics`: golden values from the papers' definitions, hand examples, and
hypothesis property tests (never raise on odd input, stay in range)."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytool.eval.metrics import (
    EntropySummary,
    FourT,
    TaskRecord,
    ToolCallStats,
    alignment_score,
    classify_task,
    four_t,
    jensen_shannon_distance,
    masked_mean_entropy,
    mean_entropy,
    pass_at_k,
    pass_at_k_mean,
    task_performance_score,
    token_entropy,
    tool_call_stats,
    tool_distribution,
)

NAMES = st.sampled_from(["a", "b", "c", "d", "search", "calc"])
CALL_LISTS = st.lists(NAMES, max_size=6)
RECORDS = st.builds(
    TaskRecord,
    expected_tools=st.lists(NAMES, max_size=4),
    called_tools=CALL_LISTS,
    interrupted=st.booleans(),
    result_valid=st.booleans(),
)


# ------------------------------------------------------------------------------------------- 4T


class TestFourT:
    def test_classify_cases(self):
        # TCR: perfect set match (repeats allowed) and valid result
        assert classify_task(TaskRecord(["a", "b"], ["b", "a", "a"])) == "completed"
        # TFR: interrupted by an exception / error
        assert classify_task(TaskRecord(["a"], ["a"], interrupted=True)) == "failed"
        # TFR: no tool called although the task needs one
        assert classify_task(TaskRecord(["a"], [])) == "failed"
        # TIR: a tool outside the expected set
        assert classify_task(TaskRecord(["a"], ["a", "z"])) == "incomplete"
        # TIR: a strict subset of the expected set
        assert classify_task(TaskRecord(["a", "b"], ["a"])) == "incomplete"
        # TIR: perfect match but the result is not appropriate
        assert classify_task(TaskRecord(["a"], ["a"], result_valid=False)) == "incomplete"
        # a task that needs no tool, answered without one
        assert classify_task(TaskRecord([], [])) == "completed"
        assert classify_task(TaskRecord([], ["a"])) == "incomplete"

    def test_tps_golden(self):
        # EfficientTool App. C.1 Eq. 2 with λ_w = λ_m = 1: C_c=1 (a), W_c=1 (z), M_c=1 (b) → 1/3
        assert task_performance_score(["a", "b"], ["a", "z"]) == pytest.approx(1 / 3)
        assert task_performance_score(["a", "b"], ["a", "a", "b"]) == 1.0
        assert task_performance_score(["a"], []) == 0.0
        assert task_performance_score([], []) == 1.0
        assert task_performance_score([], ["a"]) == 0.0
        # λ weights: C_c=1, W_c=1, M_c=1 → 1 / (1 + 0.5 + 2)
        assert task_performance_score(["a", "b"], ["a", "z"], lambda_w=0.5, lambda_m=2.0) == pytest.approx(
            1 / 3.5)

    def test_hand_example(self):
        records = [
            TaskRecord(["a"], ["a"]),  # completed, TPS 1
            TaskRecord(["a", "b"], ["a", "b"]),  # completed, TPS 1
            TaskRecord(["a"], [], interrupted=True),  # failed, TPS 0
            TaskRecord(["a", "b"], ["a"]),  # incomplete, TPS 1/2
            TaskRecord(["a"], ["a"], result_valid=False),  # incomplete, TPS 1
        ]
        m = four_t(records)
        assert isinstance(m, FourT)
        assert m.n == 5
        assert m.tcr == pytest.approx(2 / 5)
        assert m.tfr == pytest.approx(1 / 5)
        assert m.tir == pytest.approx(2 / 5)
        assert m.tps == pytest.approx((1 + 1 + 0 + 0.5 + 1) / 5)
        assert set(m.as_dict()) == {"TCR", "TFR", "TIR", "TPS", "n"}
        assert all(type(v) is float for k, v in m.as_dict().items() if k != "n")

    def test_empty(self):
        m = four_t([])
        assert (m.tcr, m.tfr, m.tir, m.tps, m.n) == (0.0, 0.0, 0.0, 0.0, 0)

    @given(st.lists(RECORDS, min_size=1, max_size=30))
    def test_rates_sum_to_one(self, records):
        # EfficientTool App. C.2, Eq. 7: TCR + TIR + TFR = 1
        m = four_t(records)
        assert m.tcr + m.tfr + m.tir == pytest.approx(1.0)
        for v in (m.tcr, m.tfr, m.tir, m.tps):
            assert 0.0 <= v <= 1.0

    @given(st.lists(NAMES, max_size=5), CALL_LISTS,
           st.floats(0, 10, allow_nan=False), st.floats(0, 10, allow_nan=False))
    def test_tps_range(self, expected, called, lw, lm):
        v = task_performance_score(expected, called, lambda_w=lw, lambda_m=lm)
        assert 0.0 <= v <= 1.0
        assert type(v) is float


# ------------------------------------------------------------------------------------------ pass@k


def brute_force_pass_at_k(n: int, c: int, k: int) -> float:
    """Fraction of k-subsets of n samples (c correct) that contain at least one correct sample."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


class TestPassAtK:
    def test_edges(self):
        assert pass_at_k(10, 0, 3) == 0.0
        assert pass_at_k(10, 8, 3) == 1.0  # n - c = 2 < k
        assert pass_at_k(5, 5, 1) == 1.0
        assert pass_at_k(10, 3, 1) == pytest.approx(0.3)

    def test_golden(self):
        # 1 - C(2,2)/C(4,2) = 1 - 1/6
        assert pass_at_k(4, 2, 2) == pytest.approx(5 / 6)
        # 1 - C(7,3)/C(10,3) = 1 - 35/120
        assert pass_at_k(10, 3, 3) == pytest.approx(1 - 35 / 120)

    def test_k_larger_than_n(self):
        assert pass_at_k(3, 1, 5) == 1.0
        assert pass_at_k(3, 0, 5) == 0.0

    @pytest.mark.parametrize("args", [(-1, 0, 1), (3, 4, 1), (3, -1, 1), (3, 1, 0)])
    def test_invalid(self, args):
        with pytest.raises(ValueError):
            pass_at_k(*args)

    def test_large_n_stable(self):
        v = pass_at_k(10_000, 7, 100)
        assert v == pytest.approx(1 - math.comb(9993, 100) / math.comb(10_000, 100), rel=1e-9)

    @given(st.integers(1, 9).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
    def test_brute_force(self, nck):
        n, c, k = nck
        assert pass_at_k(n, c, k) == pytest.approx(brute_force_pass_at_k(n, c, k), abs=1e-12)

    @given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
    def test_properties(self, nck):
        n, c, k = nck
        v = pass_at_k(n, c, k)
        assert type(v) is float
        assert 0.0 <= v <= 1.0
        if k == 1:
            assert v == pytest.approx(c / n)
        if k < n:
            assert pass_at_k(n, c, k + 1) >= v - 1e-12
        if c < n:
            assert pass_at_k(n, c + 1, k) >= v - 1e-12

    def test_mean(self):
        assert pass_at_k_mean([(10, 3), (10, 0), (5, 5)], 1) == pytest.approx((0.3 + 0 + 1) / 3)
        assert pass_at_k_mean([], 1) == 0.0


# ----------------------------------------------------------------------------------------- entropy


class TestEntropy:
    def test_mean_entropy(self):
        s = mean_entropy([1.0, None, 2.0, float("nan"), 3.0])
        assert isinstance(s, EntropySummary)
        assert s.mean == pytest.approx(2.0)
        assert (s.count, s.missing) == (3, 2)
        empty = mean_entropy([None, None])
        assert empty.mean is None and empty.count == 0 and empty.missing == 2
        assert mean_entropy([]).mean is None

    @given(st.lists(st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)), max_size=20))
    def test_mean_entropy_never_raises(self, values):
        s = mean_entropy(values)
        assert s.count + s.missing == len(values)
        assert s.mean is None or math.isfinite(s.mean)

    def test_matches_categorical(self):
        torch.manual_seed(0)
        logits = torch.randn(7, 50) * 3
        ref = torch.distributions.Categorical(logits=logits).entropy()
        got = token_entropy(logits, chunk_size=3)
        assert torch.allclose(got, ref, atol=1e-5)

    def test_temperature_and_mask(self):
        torch.manual_seed(1)
        logits = torch.randn(5, 11)
        mask = torch.tensor([1, 1, 0, 1, 0])
        ref = torch.distributions.Categorical(logits=logits / 0.7).entropy()
        got = token_entropy(logits, mask, temperature=0.7)
        assert torch.allclose(got[mask.bool()], ref[mask.bool()], atol=1e-5)
        assert torch.all(got[~mask.bool()] == 0)

    def test_masked_vocab_and_extremes(self):
        logits = torch.tensor([[0.0, float("-inf"), 0.0], [100.0, -100.0, 0.0], [5.0, 5.0, 5.0]])
        got = token_entropy(logits)
        assert torch.isfinite(got).all()
        assert got[0].item() == pytest.approx(math.log(2), abs=1e-6)
        assert got[1].item() == pytest.approx(0.0, abs=1e-6)
        assert got[2].item() == pytest.approx(math.log(3), abs=1e-6)
        z = logits.clone().requires_grad_(True)
        token_entropy(z).sum().backward()
        assert torch.isfinite(z.grad).all()

    def test_masked_mean(self):
        logits = torch.zeros(3, 4)
        assert masked_mean_entropy(logits, torch.tensor([1, 0, 1])) == pytest.approx(math.log(4))
        assert masked_mean_entropy(logits, torch.zeros(3)) is None

    def test_half_precision_and_empty(self):
        logits = torch.randn(4, 9).to(torch.bfloat16)
        got = token_entropy(logits)
        assert got.dtype == torch.float32 and got.shape == (4,)
        assert token_entropy(torch.zeros(0, 9)).shape == (0,)


# -------------------------------------------------------------------------------------- tool calls


class TestToolCallStats:
    def test_hand(self):
        s = tool_call_stats([[], ["a"], ["a", "b"], ["a", "b", "c"], ["a"] * 4, ["b"] * 7])
        assert isinstance(s, ToolCallStats)
        assert s.n == 6
        assert s.mean == pytest.approx((0 + 1 + 2 + 3 + 4 + 7) / 6)
        assert s.histogram == {"0": 1, "1": 1, "2": 1, "3": 1, "4+": 2}
        assert s.zero_fraction == pytest.approx(1 / 6)
        assert s.per_tool == {"a": 7, "b": 9, "c": 1}
        assert sum(s.distribution().values()) == pytest.approx(1.0)

    def test_empty(self):
        s = tool_call_stats([])
        assert (s.n, s.mean, s.zero_fraction) == (0, 0.0, 0.0)
        assert s.histogram == {"0": 0, "1": 0, "2": 0, "3": 0, "4+": 0}
        assert s.distribution() == {"0": 0.0, "1": 0.0, "2": 0.0, "3": 0.0, "4+": 0.0}

    @given(st.lists(CALL_LISTS, max_size=20))
    def test_properties(self, samples):
        s = tool_call_stats(samples)
        assert sum(s.histogram.values()) == len(samples)
        assert 0.0 <= s.zero_fraction <= 1.0
        assert s.mean >= 0.0


# --------------------------------------------------------------------------------------- alignment


class TestAlignment:
    def test_identical_and_scaled(self):
        a = [["a", "b"], ["a"], []]
        assert alignment_score(a, a) == pytest.approx(1.0)
        # same distribution, different volume → still a perfect match
        assert alignment_score([["a", "b"]], [["a", "b", "a", "b"], []]) == pytest.approx(1.0)

    def test_disjoint(self):
        assert alignment_score([["a"], ["b"]], [["c"], ["d", "c"]]) == pytest.approx(0.0, abs=1e-12)

    def test_hand_example(self):
        # P = (1/2, 1/2, 0), Q = (1/2, 0, 1/2), M = (1/2, 1/4, 1/4) over (a, b, c)
        # KL(P||M) = 1/2·log2(1) + 1/2·log2(2) = 1/2; KL(Q||M) = 1/2  → JSD = sqrt(1/2)
        p = [["a"], ["b"]]
        q = [["a", "c"]]
        assert jensen_shannon_distance(tool_distribution(p), tool_distribution(q)) == pytest.approx(
            math.sqrt(0.5))
        assert alignment_score(p, q) == pytest.approx(1 - math.sqrt(0.5))

    def test_counters_and_vocabulary(self):
        assert alignment_score(Counter(a=2, b=2), [["a", "b"]]) == pytest.approx(1.0)
        d = tool_distribution([["a"]], vocabulary=["a", "b", "c"])
        assert d == {"a": 1.0, "b": 0.0, "c": 0.0}

    def test_empty(self):
        assert alignment_score([], []) == 1.0
        assert alignment_score([[]], [[], []]) == 1.0
        assert alignment_score([["a"]], [[]]) == 0.0
        assert alignment_score([[]], [["a"]]) == 0.0

    def test_include_no_call(self):
        # teacher calls a tool in one sample of two; student in both → differ only on "no call"
        teacher = [["a"], []]
        student = [["a"], ["a"]]
        assert alignment_score(teacher, student) == pytest.approx(1.0)
        v = alignment_score(teacher, student, include_no_call=True)
        assert 0.0 < v < 1.0
        assert alignment_score([[]], [[]], include_no_call=True) == pytest.approx(1.0)

    @settings(max_examples=200)
    @given(st.lists(CALL_LISTS, max_size=8), st.lists(CALL_LISTS, max_size=8), st.booleans())
    def test_properties(self, p, q, no_call):
        v = alignment_score(p, q, include_no_call=no_call)
        assert type(v) is float
        assert 0.0 <= v <= 1.0
        assert v == pytest.approx(alignment_score(q, p, include_no_call=no_call), abs=1e-12)
        assert alignment_score(p, p, include_no_call=no_call) == pytest.approx(1.0)
