"""Golden values from the papers' worked examples and hand-computed cases."""

from __future__ import annotations

import math

import pytest
from conftest import TOOLS, gt, hermes

from tinytool.formats import get_format
from tinytool.rewards import (
    RewardOptions,
    ToolRLScale,
    astra_f1,
    astra_f1_from_text,
    mentor,
    read_ground_truth,
    score_row,
    toolrl,
)
from tinytool.rewards.registry import REWARDS
from tinytool.schema import ToolCall

HERMES = get_format("hermes")


# ---- STAR Table 11 / Table 12 -------------------------------------------------------------
def test_star_table11_missing_default_argument_scores_half():
    row = {
        "completion": hermes(("check_wordpress", {"url": "https://example.com"})),
        "ground_truth": gt(("check_wordpress", {"url": "https://example.com", "user_agent": "Mozilla/5.0"})),
        "tools": TOOLS,
    }
    assert score_row("simrl", row).score == pytest.approx(0.5)
    assert score_row("exact", row).score == 0.0  # the binary reward's 0 (Table 11, "Binary RL Score")


def test_star_table11_case_difference_scores_one():
    row = {
        "completion": hermes(("label_template_brands", {"format": "a4"})),
        "ground_truth": gt(("label_template_brands", {"format": "A4"})),
        "tools": TOOLS,
    }
    assert score_row("simrl", row).score == pytest.approx(1.0)
    assert score_row("exact", row).score == 0.0


def test_star_table12_redundant_call_scores_zero():
    row = {
        "completion": hermes(("airportstatistics", {"iata": "SFO"})),
        "ground_truth": {"role": "assistant", "content": "The ICAO code for SFO is KSFO, and it has 4 runways."},
    }
    r = score_row("simrl", row)
    assert r.score == 0.0 and r.parts["format"] == 1.0


# ---- Sim-RL rules --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "completion, why",
    [
        ('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>', "no think"),
        ("<think>a</think><think>b</think>" + hermes(("get_weather", {"city": "Paris"}), think=None), "two thinks"),
        ('<think>x</think><tool_call>{"name": "get_weather", "args": {"city": "Paris"}}</tool_call>', "keys"),
        ('<think>x</think><tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}', "unclosed"),
        (hermes(("get_wether", {"city": "Paris"})), "unknown function"),
        (hermes(("get_weather", {"town": "Paris"})), "unknown argument"),
        ('<think>x</think><tool_call>[{"name": "get_weather", "arguments": {}}]</tool_call>', "list"),
    ],
)
def test_simrl_format_violations_score_minus_one(completion, why):
    row = {"completion": completion, "ground_truth": gt(("get_weather", {"city": "Paris"})), "tools": TOOLS}
    assert score_row("simrl", row).score == -1.0, why


def test_simrl_think_rule_can_be_relaxed():
    row = {"completion": '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
           "ground_truth": gt(("get_weather", {"city": "Paris"})), "tools": TOOLS}
    assert score_row("simrl", row, options=RewardOptions(require_think=False)).score == 1.0


def test_simrl_greedy_matching_and_iou_denominator():
    # two predicted, three true: matched 2 -> denominator 2 + 3 - 2 = 3
    pred = hermes(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome", "days": 3}))
    truth = gt(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome", "days": 2}),
               ("check_wordpress", {"url": "a.com"}))
    r = score_row("simrl", {"completion": pred, "ground_truth": truth, "tools": TOOLS})
    # Paris: 1.0; Rome: (1 + 0) / 2 = 0.5 -> (1.5) / 3
    assert r.score == pytest.approx(1.5 / 3)


def test_simrl_value_types():
    truth = gt(("get_weather", {"city": "", "days": 1, "unit": "celsius"}))
    # identical empty strings score 1; True == 1 numerically; str() match for other types
    pred = hermes(("get_weather", {"city": "", "days": True, "unit": "celsius"}))
    assert score_row("simrl", {"completion": pred, "ground_truth": truth, "tools": TOOLS}).score == 1.0
    blank = hermes(("get_weather", {"city": " ", "days": 1, "unit": "celsius"}))
    assert score_row("simrl", {"completion": blank, "ground_truth": truth, "tools": TOOLS}).score == pytest.approx(2 / 3)
    as_str = hermes(("get_weather", {"city": "", "days": "1", "unit": "celsius"}))
    assert score_row("simrl", {"completion": as_str, "ground_truth": truth, "tools": TOOLS}).score == 1.0


def test_simrl_response_reward_when_no_calls():
    truth = {"role": "assistant", "content": "It is sunny in Paris today"}
    pred = "<think>x</think>It is sunny in Paris"
    r = score_row("simrl", {"completion": pred, "ground_truth": truth})
    # LCS 5 of 5 and 6 tokens -> 2*5/(5+6)
    assert r.score == pytest.approx(10 / 11)


# ---- ToolRL §3.3 -------------------------------------------------------------------------
def _tr(completion: str, truth: dict, **kw):
    return toolrl(completion, read_ground_truth(truth, get_format("toolrl")), **kw)


TR_PRED = '<think> x </think>\n<tool_call>\n{"name": "get_weather", "parameters": {"city": "Paris", "days": 2}}\n</tool_call>'
TR_TRUTH = gt(("get_weather", {"city": "Paris", "days": 3}), ("check_wordpress", {"url": "a.com"}))


def test_toolrl_original_hand_computed():
    # r_name = |{gw}| / |{gw, cw}| = 1/2; pair (gw, gw): key IoU 1 + values 1 (city) = 2
    # S_max = 1 + 2 + 3 = 6 -> R_correct = 6 * 2.5/6 - 3 = -0.5; format 1 (think + tool_call)
    r = _tr(TR_PRED, TR_TRUTH)
    assert r.parts["format"] == 1.0
    assert r.parts["correct"] == pytest.approx(-0.5)
    assert r.score == pytest.approx(0.5)


def test_toolrl_granularities():
    # finegrained: r_name 0 (sets differ); keys equal 1 + values 1 -> 2 / 6
    assert _tr(TR_PRED, TR_TRUTH, granularity="finegrained").parts["correct"] == pytest.approx(6 * 2 / 6 - 3)
    # intermediate: r_name 0; dict equal? no -> 0 / (1 + 2)
    assert _tr(TR_PRED, TR_TRUTH, granularity="intermediate").parts["correct"] == pytest.approx(-3.0)
    # coarse: exact set -> 0
    assert _tr(TR_PRED, TR_TRUTH, granularity="coarse").parts["correct"] == pytest.approx(-3.0)
    exact = '<think> x </think>\n<tool_call>\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n</tool_call>'
    one = gt(("get_weather", {"city": "Paris"}))
    for g in ("original", "finegrained", "intermediate", "coarse"):
        assert _tr(exact, one, granularity=g).score == pytest.approx(4.0)


def test_toolrl_optimal_matching_beats_greedy_order():
    # the first prediction fits the second truth better; Hungarian pairs them correctly
    pred = ('<think> x </think>\n<tool_call>\n{"name": "get_weather", "parameters": {"city": "Rome", "days": 2}}\n'
            '{"name": "get_weather", "parameters": {"city": "Paris"}}\n</tool_call>')
    truth = gt(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome", "days": 2}))
    assert _tr(pred, truth).score == pytest.approx(4.0)


def test_toolrl_format_needs_sections_the_truth_has():
    truth = gt(("get_weather", {"city": "Paris"}), content="Checking.")
    only_call = '<think> x </think>\n<tool_call>\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n</tool_call>'
    assert _tr(only_call, truth).parts["format"] == 0.0
    both = only_call + "\n<response> Checking. </response>"
    assert _tr(both, truth).parts["format"] == 1.0
    wrong_order = "<response> Checking. </response>\n" + only_call
    assert _tr(wrong_order, truth).parts["format"] == 0.0


def test_toolrl_no_call_truth():
    # released: correctness 0 whether or not the completion calls; the format reward still tells them apart
    truth = {"role": "assistant", "content": "Hello!"}
    reply = "<think> x </think>\n<response> Hi </response>"
    called = '<think> x </think>\n<tool_call>\n{"name": "get_weather", "parameters": {}}\n</tool_call>'
    assert _tr(reply, truth).parts == {"format": 1.0, "correct": 0.0}
    assert _tr(called, truth).parts == {"format": 0.0, "correct": 0.0}
    # symmetric (a departure): the maximum without a call, the minimum with one
    assert _tr(reply, truth, no_call="symmetric").score == pytest.approx(4.0)
    assert _tr(called, truth, no_call="symmetric").parts["correct"] == pytest.approx(-3.0)
    # penalized (a departure): symmetric on a label without calls ...
    assert _tr(reply, truth, no_call="penalized").score == pytest.approx(4.0)
    assert _tr(called, truth, no_call="penalized").parts["correct"] == pytest.approx(-3.0)


def test_toolrl_penalized_declining_scores_below_any_attempted_call():
    truth = gt(("get_weather", {"city": "Paris"}))
    declined = "<think> x </think>\n<response> I cannot. </response>"
    wrong_tool = '<think> x </think>\n<tool_call>\n{"name": "get_time", "parameters": {}}\n</tool_call>'
    right = '<think> x </think>\n<tool_call>\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n</tool_call>'
    # ... and declining an asked call one point below the correctness minimum (-3), where a wrong tool scores it
    assert _tr(declined, truth, no_call="penalized").parts["correct"] == pytest.approx(-4.0)
    assert _tr(declined, truth, no_call="symmetric").parts["correct"] == pytest.approx(-3.0)
    assert _tr(wrong_tool, truth, no_call="penalized").parts["correct"] == pytest.approx(-3.0)
    assert _tr(right, truth, no_call="penalized").parts["correct"] == pytest.approx(3.0)
    # the penalty is a share of the range: a sixth of [-1, 1] under equal_max
    eq = _tr(declined, truth, no_call="penalized", scale=ToolRLScale("equal_max"))
    assert eq.parts["correct"] == pytest.approx(-1 - 2 / 6)
    # the reward's floor moves with it (what an unreadable row scores)
    assert REWARDS["toolrl"].bounds(RewardOptions(no_call="penalized")) == pytest.approx((-4.0, 4.0))
    assert REWARDS["toolrl"].bounds(RewardOptions()) == pytest.approx((-3.0, 4.0))


def test_toolrl_extra_calls_cost_only_when_charged():
    call = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
    truth = gt(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Paris"}))
    two = f"<think> x </think>\n<tool_call>\n{call}\n{call}\n</tool_call>"
    four = f"<think> x </think>\n<tool_call>\n{call}\n{call}\n{call}\n{call}\n</tool_call>"
    # as released: the names are one set and the best matching pairs two of the four calls: full marks
    assert _tr(four, truth).score == pytest.approx(4.0) == _tr(two, truth).score
    # charged: names as multisets, 2 of 4 -> 1/2; the matched 2 + 2 (key IoU, value per call) scaled by 2/4 -> 2;
    # S_max = 1 + 2 + 2 = 5 -> ratio 2.5 / 5, R_correct = 6 * 0.5 - 3 = 0
    assert _tr(four, truth, extra_calls="charged").parts["correct"] == pytest.approx(0.0)
    assert _tr(two, truth, extra_calls="charged").score == pytest.approx(4.0)
    # a call fewer than asked costs what it did before (the matching) and the multiset IoU 1/2 in place of 1
    one = f"<think> x </think>\n<tool_call>\n{call}\n</tool_call>"
    assert _tr(one, truth).parts["correct"] == pytest.approx(6 * (1 + 2) / 5 - 3)
    assert _tr(one, truth, extra_calls="charged").parts["correct"] == pytest.approx(6 * (0.5 + 2) / 5 - 3)
    # calls of different tools: sets and multisets agree, and no call is extra
    assert _tr(TR_PRED, TR_TRUTH, extra_calls="charged").parts == _tr(TR_PRED, TR_TRUTH).parts
    with pytest.raises(ValueError, match="extra-call"):
        _tr(two, truth, extra_calls="sometimes")


def test_toolrl_penalized_extra_calls_cost_a_sixth_of_the_range_each_up_to_three():
    call = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
    truth = gt(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Paris"}))

    def calls(n):
        return "<think> x </think>\n<tool_call>\n" + "\n".join([call] * n) + "\n</tool_call>"

    # the asked number of calls, or fewer: exactly the charged score
    for n in (1, 2):
        assert _tr(calls(n), truth, extra_calls="penalized").parts == _tr(calls(n), truth, extra_calls="charged").parts
    # four calls of two asked: charged gives R_correct 0 (the test above); two extra calls cost 2 x 6/6 = 2 more
    assert _tr(calls(4), truth, extra_calls="penalized").parts["correct"] == pytest.approx(-2.0)
    # the charge stops at three extra calls, and the reward stays inside its bounds
    eight, nine = _tr(calls(8), truth, extra_calls="penalized"), _tr(calls(9), truth, extra_calls="penalized")
    charged8 = _tr(calls(8), truth, extra_calls="charged").parts["correct"]
    assert eight.parts["correct"] == pytest.approx(charged8 - 3.0)
    lo, hi = REWARDS["toolrl"].bounds(RewardOptions(extra_calls="penalized"))
    assert (lo, hi) == pytest.approx((-6.0, 4.0)) and lo <= nine.score <= hi  # -3 - 3 x 1, format 0
    # calls of different tools are not extra
    assert _tr(TR_PRED, TR_TRUTH, extra_calls="penalized").parts == _tr(TR_PRED, TR_TRUTH).parts


def test_toolrl_scales():
    s = ToolRLScale("equal_max")
    assert s.ranges() == ((0.0, 1.0), (-1.0, 1.0))
    two = ToolRLScale("two_stage", switch_step=30)
    assert two.ranges(29) == ((0.0, 1.0), (-1.0, 1.0)) and two.ranges(30) == ((0.0, 0.5), (-3.0, 3.0))
    dyn = ToolRLScale("dynamic")
    assert dyn.ranges(0, 100) == ((-2.0, 2.0), (-2.0, 2.0))
    assert dyn.ranges(100, 100) == ((-1.0, 1.0), (-3.0, 3.0))
    assert dyn.ranges(50, 100) == ((-1.5, 1.5), (-2.5, 2.5))
    r = _tr(TR_PRED, TR_TRUTH, scale=dyn, step=0, total_steps=100)
    assert r.parts["format"] == 2.0 and r.parts["correct"] == pytest.approx(-2 + 4 * 2.5 / 6)


# ---- MENTOR §3.3 -------------------------------------------------------------------------
def test_mentor_weights_and_parts():
    from tinytool.rewards.inputs import read_tools

    tools = read_tools(TOOLS)
    t_calls = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("check_wordpress", {"url": "a"})]
    same_set = [ToolCall("check_wordpress", {"url": "b"}), ToolCall("get_weather", {"city": "Rome"})]
    r = mentor(same_set, "The answer is \\boxed{42}", t_calls, "\\boxed{42}", tools)
    assert r.parts == {"correct": 1.0, "align": 1.0, "valid": 1.0} and r.score == pytest.approx(1.1)
    strict = mentor(same_set, "\\boxed{42}", t_calls, "\\boxed{42}", tools, strict=True)
    assert strict.parts["align"] == 0.0 and strict.score == pytest.approx(0.8)
    invalid = [ToolCall("get_weather", {"city": 5})]
    r = mentor(invalid, "41", t_calls, "42", tools)
    assert r.parts == {"correct": 0.0, "align": 0.0, "valid": 0.0} and r.score == 0.0
    failed_obs = mentor(t_calls, "42", t_calls, "42", tools, observations=['{"error": "timeout"}'])
    assert failed_obs.parts["valid"] == 0.0 and failed_obs.score == pytest.approx(1.0)
    unparsed = mentor(t_calls, "42", t_calls, "42", tools, parse_errors=1)
    assert unparsed.parts == {"correct": 1.0, "align": 1.0, "valid": 0.0} and unparsed.score == pytest.approx(1.0)


def test_mentor_row_with_teacher_trajectory():
    teacher = [
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "18C"},
        {"role": "assistant", "content": "It is 18C."},
    ]
    student = [
        {"role": "assistant", "content": hermes(("get_weather", {"city": "Paris"}))},
        {"role": "tool", "content": "18C"},
        {"role": "assistant", "content": "<think>done</think>It is 18C."},
    ]
    r = score_row("mentor", {"completion": student, "teacher": teacher, "tools": TOOLS})
    assert r.error is None and r.score == pytest.approx(1.1)


# ---- ASTRA Eq. 29-31 ---------------------------------------------------------------------
def test_astra_f1_counts():
    # 2 of 3 sub-tasks with 4 calls: r = 2/3, p = 1/2 -> F1 = 2 * (1/3) / (7/6) = 4/7
    assert astra_f1(2, 3, 4).score == pytest.approx(4 / 7, rel=1e-6)
    assert astra_f1(3, 3, 3).score == pytest.approx(1.0, rel=1e-6)
    assert astra_f1(0, 3, 5).score == 0.0
    assert astra_f1(2, 2, 0).score == pytest.approx(1.0)  # precision capped at 1
    # no sub-tasks: no F1; the floor, never full marks (a garbage completion must not score 1.0)
    assert astra_f1(0, 0, 0).score == 0.0 and astra_f1(0, 0, 2).score == 0.0


def test_astra_f1_from_text_matches_numbers_and_strings():
    r = astra_f1_from_text([1200, "Paris", 3.5], "total 1,200 EUR; capital: paris; rate 3.50", n_calls=3)
    assert r.parts["solved"] == 3 and r.score == pytest.approx(1.0, rel=1e-6)
    r = astra_f1_from_text([7, "Rome"], "nothing here 77", n_calls=1)
    assert r.score == 0.0 and not math.isnan(r.score)


def test_astra_row_from_trajectory():
    traj = [
        {"role": "assistant", "content": hermes(("get_weather", {"city": "Paris"}))},
        {"role": "tool", "content": '{"temp": 18}'},
        {"role": "assistant", "content": hermes(("get_weather", {"city": "Rome"}))},
        {"role": "tool", "content": '{"temp": 21}'},
        {"role": "assistant", "content": "<think>x</think>Paris 18, Rome 21"},
    ]
    r = score_row("astra-f1", {"completion": traj, "sub_answers": [18, 21]})
    assert r.error is None and r.parts["calls"] == 2 and r.score == pytest.approx(1.0, rel=1e-6)


# ---- exact match -------------------------------------------------------------------------
def test_exact_match_is_order_insensitive_multiset():
    truth = gt(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome", "days": 2}))
    swapped = hermes(("get_weather", {"city": "Rome", "days": 2.0}), ("get_weather", {"city": "Paris"}))
    assert score_row("exact", {"completion": swapped, "ground_truth": truth}).score == 1.0
    dup = hermes(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Paris"}))
    assert score_row("exact", {"completion": dup, "ground_truth": truth}).score == 0.0
    assert score_row("exact", {"completion": "<think>x</think>Hi", "ground_truth": {"content": "Hello"}}).score == 1.0
