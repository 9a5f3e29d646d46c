"""Differential oracle for Sim-RL (STAR §3.2.1, Eq. 6-10; App. A.7, Algorithms 1-3).

`tinytool.rewards` must give the same value as the independent reference in `simrl_reference`
(the paper's pseudo-code on ``rouge_score``) on seeded rows built from the demo tasks
(`simrl_pairs`), on random call lists (hypothesis), and on the specification probes, whose expected
values are written out. The mutant tests show the rows are discriminating: each plausible misreading
of the paper, put into the reference, disagrees with tinytool on some generated row.
"""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest
import simrl_reference as ref
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer
from simrl_pairs import make_pairs

from tinytool.formats import get_format
from tinytool.rewards import read_ground_truth, read_tools, score_row, sim_rl, tool_call_reward
from tinytool.schema import ToolCall

HERMES = get_format("hermes")
N_ROWS = 800
SEEDS = (0, 1)


@cache
def rows(seed: int) -> tuple[list[dict], list[str]]:
    return make_pairs(N_ROWS, seed, with_kinds=True)


def mismatches(rows_: list[dict]) -> list[tuple[int, float, float]]:
    """``(index, reference, tinytool)`` for every row where the two differ by more than 1e-9."""
    out = []
    for i, row in enumerate(rows_):
        a, b = ref.ref_total_reward(row), score_row("simrl", row).score
        if abs(a - b) > 1e-9:
            out.append((i, a, b))
    return out


# ---- the differential ------------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_score_row_equals_reference_on_demo_rows(seed):
    rows_, _ = rows(seed)
    bad = mismatches(rows_)
    assert not bad, f"{len(bad)} rows differ, first: {bad[0]} row {rows_[bad[0][0]]}"
    assert not [i for i, r in enumerate(rows_) if score_row("simrl", r).error]


@pytest.mark.parametrize("seed", SEEDS)
def test_parse_and_sim_rl_equal_reference_on_demo_rows(seed):
    for row in rows(seed)[0]:
        truth, tools = read_ground_truth(row["ground_truth"], HERMES), read_tools(row["tools"])
        got = sim_rl(HERMES.parse(row["completion"]), truth, tools).score
        assert got == pytest.approx(ref.ref_total_reward(row), abs=1e-9), row


def test_demo_rows_cover_every_mistake_and_outcome():
    """The differential is only as good as its rows: every kind of mistake, and every kind of score."""
    rows_, kinds = rows(0)
    assert set(kinds) == {"calls/exact", "calls/arguments", "calls/calls", "calls/format", "calls/answers_in_text",
                          "text/exact", "text/paraphrase", "text/other_answer", "text/needless_call",
                          "text/think_error"}
    scores = [ref.ref_total_reward(r) for r in rows_]
    outcome = Counter("-1" if s == -1 else "1" if s == 1 else "0" if s == 0 else "between" for s in scores)
    assert all(outcome[k] >= N_ROWS // 20 for k in ("-1", "1", "0", "between")), outcome
    n_truth_calls = Counter(len(r["ground_truth"].get("tool_calls") or []) for r in rows_)
    assert {0, 1, 2, 3} <= set(n_truth_calls), n_truth_calls


def test_demo_rows_are_reproducible():
    assert make_pairs(30, 5) == make_pairs(30, 5)
    assert make_pairs(30, 5) != make_pairs(30, 6)


# ---- random call lists (hypothesis) ------------------------------------------------------------

WORDS = ["Paris", "paris", "running", "runs", "the", "New York", "new york city", "2025-06-01", "June 1, 2025",
         "", " ", "a-b", "café", "x"]
values = (st.sampled_from(WORDS) | st.text(max_size=8) | st.booleans() | st.integers(-3, 3)
          | st.sampled_from([0.0, 1.0, 2.5, -1.0]) | st.none() | st.lists(st.sampled_from(WORDS[:4]), max_size=3)
          | st.dictionaries(st.sampled_from("pq"), st.integers(0, 2), max_size=2))
calls = st.lists(st.tuples(st.sampled_from("abc"), st.dictionaries(st.sampled_from("xyz"), values, max_size=3)),
                 max_size=4)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pred=calls, truth=calls)
def test_tool_call_reward_equals_reference(pred, truth):
    got = tool_call_reward([ToolCall(n, a) for n, a in pred], [ToolCall(n, a) for n, a in truth])
    assert got == pytest.approx(ref.ref_tool_reward(pred, truth), abs=1e-9)


# ---- specification probes ---------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ref.SPEC_PROBES))
def test_spec_probe(name):
    row, expected = ref.SPEC_PROBES[name]
    assert ref.ref_total_reward(row) == pytest.approx(expected, abs=1e-9)
    result = score_row("simrl", row)
    assert result.error is None
    assert result.score == pytest.approx(expected, abs=1e-9)


# ---- the oracle can fail: misreadings of the paper put into the reference ------------------------

_real_tool_reward = ref.ref_tool_reward
_real_value_similarity = ref.ref_value_similarity
_real_parse = ref.ref_parse_generation


def _listing_denominator(p_calls, g_calls):
    """Alg. 2 as listed: divide by |P| + |G| instead of Eq. 7's |P| + |G| - |P ∩ G|."""
    matched = sum((Counter(n for n, _ in p_calls) & Counter(n for n, _ in g_calls)).values())
    union = len(p_calls) + len(g_calls) - matched
    r = _real_tool_reward(p_calls, g_calls)
    return r if union == 0 else r * union / (len(p_calls) + len(g_calls))


def _numbers_as_text(p, g):
    if isinstance(p, str) and isinstance(g, str):
        return _real_value_similarity(p, g)
    return 1.0 if str(p) == str(g) else 0.0


def _exact_strings(p, g):
    return float(p == g) if isinstance(p, str) and isinstance(g, str) else _real_value_similarity(p, g)


class _AnyParams(set):
    """A parameter set every argument set fits (rule 5 not checked)."""

    def __ge__(self, other):
        return True


def _rule5_unchecked(generation, tool_params):
    return _real_parse(generation, {name: _AnyParams() for name in tool_params})


MUTANTS = {
    "alg2_listing_denominator": ("ref_tool_reward", _listing_denominator),
    "numbers_compared_as_text": ("ref_value_similarity", _numbers_as_text),
    "strings_compared_exactly": ("ref_value_similarity", _exact_strings),
    "rouge_without_stemming": ("SCORER", rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)),
    "end_markers_kept": ("END_MARKERS", ()),
    "rule5_unchecked": ("ref_parse_generation", _rule5_unchecked),
}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_a_wrong_reference_is_caught(mutant, monkeypatch):
    attr, wrong = MUTANTS[mutant]
    monkeypatch.setattr(ref, attr, wrong)
    assert mismatches(rows(0)[0] + rows(1)[0]), f"the demo rows do not tell {mutant} from tinytool"
