"""Rewards an RL run can trust: a needless call never earns Sim-RL's maximum (STAR §3.2.1, App. A.11
Table 12), ToolRL's reward reads completions as its released reward code does by default (ToolRL §3.3),
malformed rows score the floor with an ``error`` in every reward, and training data without a column
its reward reads is refused before a run starts."""

from __future__ import annotations

import itertools
import json
from collections import Counter

import pytest
from conftest import TOOLS, gt, hermes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinytool.errors import UserInputError
from tinytool.formats import get_format
from tinytool.rewards import (
    REWARDS,
    RewardOptions,
    check_columns,
    read_ground_truth,
    score_row,
    toolrl,
    trl_reward,
)

TOOLRL = get_format("toolrl")


# ---- Sim-RL: a needless call never earns the maximum ---------------------------------------------
def _text(content: str) -> dict:
    return {"role": "assistant", "content": content}


@pytest.mark.parametrize("completion, truth, expected, why", [
    # the truth has no call and no text: a call used to score 1.0 ("" against "")
    (hermes(("get_weather", {"city": "Paris"})), _text(""), 0.0, "needless call, empty truth text"),
    (hermes(("get_weather", {"city": "Paris"}), text="Let me check."), _text(""), 0.0, "needless call with a reply"),
    # the completion repeats the truth's text beside a call: still a needless call
    (hermes(("get_weather", {"city": "Paris"}), text="Checking."), _text("Checking."), 0.0, "call beside the text"),
    # an empty reply scores 0 (STAR's released reward), even against an empty truth text
    ("<think>ok</think>", _text(""), 0.0, "empty reply"),
    ("<think>ok</think>\nChecking.", _text("Checking."), 1.0, "the same text, no call"),
    ("<think>ok</think>\nChecking.", _text(""), 0.0, "a reply where the truth has none"),
])
def test_simrl_no_call_truth(completion, truth, expected, why):
    r = score_row("simrl", {"completion": completion, "ground_truth": truth, "tools": TOOLS})
    assert r.error is None and r.parts["format"] == 1.0, why
    assert r.score == pytest.approx(expected), why


TEXTS = ["", "Checking.", "It is sunny in Paris.", "Let me look that up."]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(truth=st.sampled_from(TEXTS) | st.text(max_size=20), reply=st.sampled_from(TEXTS) | st.text(max_size=20),
       city=st.sampled_from(["Paris", "", "Rome"]), n=st.integers(1, 3))
def test_simrl_needless_call_never_earns_the_maximum(truth, reply, city, n):
    completion = hermes(*[("get_weather", {"city": city})] * n, text=reply)
    r = score_row("simrl", {"completion": completion, "ground_truth": _text(truth), "tools": TOOLS})
    assert r.score in (0.0, -1.0), (r, completion)


# ---- ToolRL: the released reading by default -------------------------------------------------------
CALL = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
GOOD = f"<think> x </think>\n<tool_call>\n{CALL}\n</tool_call>"
PARIS = gt(("get_weather", {"city": "Paris"}))
HELLO = _text("Hello!")
LENIENT = RewardOptions(lenient=True)
SYMMETRIC = RewardOptions(no_call="symmetric")


# completion, truth, (format, correctness) released, (format, correctness) lenient + symmetric
TOOLRL_CASES = {
    "well formed": (GOOD, PARIS, (1, 3), (1, 3)),
    "text after the last block": (GOOD + "\nDone.", PARIS, (0, 3), (1, 3)),
    "no opening <think>": (GOOD.replace("<think>", ""), PARIS, (0, 3), (1, 3)),
    "trailing comma in the block": (GOOD.replace(CALL, CALL + ","), PARIS, (1, -3), (1, 3)),
    "no newline after <tool_call>": (GOOD.replace("<tool_call>\n", "<tool_call>"), PARIS, (0, 3), (1, 3)),
    "'arguments' key": (GOOD.replace("parameters", "arguments"), PARIS, (1, -3), (1, 3)),
    "no-call truth, no call": ("<think> x </think>\n<response> Hi </response>", HELLO, (1, 0), (1, 3)),
    "no-call truth, a call": (GOOD, HELLO, (0, 0), (0, -3)),
    "no-call truth, a call and the reply": (GOOD + "\n<response> Hi </response>", HELLO, (0, 0), (0, -3)),
    # a blank line between two calls is a line that is not JSON
    "blank line in the block": (GOOD.replace(CALL, f"{CALL}\n\n{CALL}"), PARIS, (1, -3), (1, 3)),
    "object over several lines": (GOOD.replace(CALL, json.dumps(json.loads(CALL), indent=1)), PARIS, (1, -3),
                                  (1, 3)),
    "space between the parts": (GOOD.replace("</think>\n", "</think> "), PARIS, (0, 3), (1, 3)),
    "no <tool_call> block": ("<think> x </think>\n<response> Paris </response>", PARIS, (0, -3), (0, -3)),
}


@pytest.mark.parametrize("case", sorted(TOOLRL_CASES))
def test_toolrl_released_reading_and_its_departures(case):
    completion, truth, released, lenient = TOOLRL_CASES[case]
    row = {"completion": completion, "ground_truth": truth}
    r = score_row("toolrl", row)
    assert r.error is None
    assert (r.parts["format"], r.parts["correct"]) == pytest.approx(released), case
    assert r.score == pytest.approx(sum(released))
    both = score_row("toolrl", row, options=RewardOptions(lenient=True, no_call="symmetric"))
    assert (both.parts["format"], both.parts["correct"]) == pytest.approx(lenient), case


def test_toolrl_released_floor_says_why():
    r = score_row("toolrl", {"completion": GOOD.replace("parameters", "arguments"), "ground_truth": PARIS})
    assert r.parts["correct"] == -3.0 and "'arguments' key" in r.reason
    r = score_row("toolrl", {"completion": GOOD.replace(CALL, CALL + ","), "ground_truth": PARIS})
    assert "line 1" in r.reason and "not JSON" in r.reason
    assert score_row("toolrl", {"completion": GOOD, "ground_truth": PARIS}).reason is None


def test_toolrl_arguments_key_on_a_tool_the_truth_does_not_call_is_not_read():
    # the released reward only reads the parameters of calls it compares: a call to another tool
    # needs none. r_name 1/2; get_weather: keys 1 + value 1; S_max = 1 + 1 + 1 -> 6 * 2.5/3 - 3 = 2
    other = '{"name": "check_wordpress", "arguments": {"url": "a.com"}}'
    r = score_row("toolrl", {"completion": GOOD.replace(CALL, f"{CALL}\n{other}"), "ground_truth": PARIS})
    assert (r.parts["format"], r.parts["correct"]) == pytest.approx((1.0, 2.0))


def test_toolrl_only_the_first_block_is_read():
    second = '\n<tool_call>\n{"name": "check_wordpress", "parameters": {"url": "a.com"}}\n</tool_call>'
    truth = gt(("get_weather", {"city": "Paris"}), ("check_wordpress", {"url": "a.com"}))
    r = score_row("toolrl", {"completion": GOOD + second, "ground_truth": truth})
    # format 0 (two blocks); the first block: r_name 1/2, get_weather 2 of S_max 1 + 2 + 2 = 5
    assert (r.parts["format"], r.parts["correct"]) == pytest.approx((0.0, 6 * 2.5 / 5 - 3))
    lenient = score_row("toolrl", {"completion": GOOD + second, "ground_truth": truth}, options=LENIENT)
    assert lenient.parts["correct"] == pytest.approx(3.0)


def test_toolrl_no_call_truth_is_the_middle_of_every_scale():
    for scale, step in (("original", 0), ("equal_max", 0), ("two_stage", 40), ("dynamic", 7)):
        opts = RewardOptions(scale=scale)
        for completion in ("<think> x </think>\n<response> Hi </response>", GOOD):
            r = score_row("toolrl", {"completion": completion, "ground_truth": HELLO, "step": step,
                                     "total_steps": 10}, options=opts)
            assert r.parts["correct"] == 0.0, (scale, completion)


def test_toolrl_other_prompt_formats_are_read_by_their_parser():
    # a Hermes completion (with "arguments", as Hermes writes it) is read by the Hermes parser
    r = score_row("toolrl", {"completion": hermes(("get_weather", {"city": "Paris"})), "ground_truth": PARIS},
                  fmt=get_format("hermes"))
    assert r.parts["correct"] == 3.0


# An independent reading of ToolRL's released reward (default settings), written from its behaviour:
# string tests for the layout, greedy matching, multiset name and key scores.
def _released_format(s: str, calls: bool, reply: bool) -> bool:
    if not s.startswith("<think>"):
        return False
    if not calls and not reply:
        return s.endswith("</think>") and len(s) >= len("<think></think>")
    for tag in (["<tool_call>", "</tool_call>"] if calls else []) + (["<response>", "</response>"] if reply else []):
        if s.count(tag) != 1:
            return False
    first = "<tool_call>" if calls else "<response>"
    i = s.index(first)
    if not s[:i].endswith("</think>\n") or i - len("</think>\n") < len("<think>"):
        return False
    rest = s[i:]
    if calls:
        j = rest.index("</tool_call>")
        if not rest.startswith("<tool_call>\n") or rest[j - 1] != "\n" or j - 1 <= len("<tool_call>"):
            return False
        rest = rest[j + len("</tool_call>"):]
        if not reply:
            return rest == ""
        if not rest.startswith("\n<response>"):
            return False
        rest = rest[1:]
    return rest.startswith("<response>") and rest.endswith("</response>")


def _multiset_iou(a: list, b: list) -> float:
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    inter = sum((Counter(a) & Counter(b)).values())
    return inter / (len(a) + len(b) - inter)


def _released_correct(s: str, truth: list[dict]) -> float:
    if not truth:
        return 0.0
    if "<tool_call>" not in s or "</tool_call>" not in s:
        return -3.0
    block = s.split("<tool_call>")[1].split("</tool_call>")[0].strip()
    try:
        pred = [json.loads(line) for line in block.split("\n")]
        if pred == truth:
            return 3.0
        score = _multiset_iou([c["name"] for c in truth], [c["name"] for c in pred])
        s_max, used = 1.0, set()
        for g in truth:
            s_max += 1 + len(g["parameters"])
            best, best_i = 0.0, None
            for i, p in enumerate(pred):
                if i in used or p["name"] != g["name"]:
                    continue
                keys = _multiset_iou(list(g["parameters"].keys()), list(p["parameters"].keys()))
                values = sum(1.0 for k, v in g["parameters"].items() if k in p["parameters"] and p["parameters"][k] == v)
                if keys + values > best:
                    best, best_i = keys + values, i
            if best_i is not None:
                used.add(best_i)
                score += best
    except (ValueError, KeyError, TypeError, AttributeError):
        return -3.0
    return 6 * score / s_max - 3


def _released(completion: str, calls: list[tuple[str, dict]], reply: str) -> float:
    s = completion.strip()
    truth = [{"name": n, "parameters": a} for n, a in calls]
    return float(_released_format(s, bool(calls), bool(reply))) + _released_correct(s, truth)


def _render(calls: list[dict], reply: str | None, think: str = "<think> plan </think>", sep: str = "\n",
            line=json.dumps) -> str:
    parts = [think]
    if calls:
        parts.append("<tool_call>\n" + "\n".join(line(c) for c in calls) + "\n</tool_call>")
    if reply is not None:
        parts.append(f"<response> {reply} </response>")
    return sep.join(parts)


TRUTHS = [
    ([("get_weather", {"city": "Paris"})], ""),
    ([("get_weather", {"city": "Paris", "unit": "celsius"}), ("check_wordpress", {"url": "a.com"})], ""),
    ([("get_weather", {"city": "Rome", "days": 2})], "Checking the weather."),
    ([("label_template_brands", {})], ""),
    ([], "Hello! How can I help?"),
    ([], ""),
]


def _variants(calls: list[tuple[str, dict]], reply: str) -> dict[str, str]:
    objs = [{"name": n, "parameters": a} for n, a in calls]
    r = reply or None
    first = objs[0] if objs else {"name": "get_weather", "parameters": {"city": "Paris"}}
    out = {
        "exact": _render(objs, r),
        "reversed": _render(objs[::-1], r),
        "wrong value": _render([{**first, "parameters": {k: "x" for k in first["parameters"]}}] + objs[1:], r),
        "missing key": _render([{**first, "parameters": dict(list(first["parameters"].items())[1:])}] + objs[1:], r),
        "extra key": _render([{**first, "parameters": {**first["parameters"], "extra": 1}}] + objs[1:], r),
        "wrong name": _render([{**first, "name": "get_wether"}] + objs[1:], r),
        "missing call": _render(objs[:1] if len(objs) > 1 else [], r),
        "extra call": _render(objs + [{"name": "search", "parameters": {"q": "x"}}], r),
        "needless call": _render([first], r),
        "reply only": _render([], "Sure."),
        "no reply": _render(objs, None),
        "extra reply": _render(objs, "Done."),
        "text after": _render(objs, r) + "\nDone.",
        "no opening think": _render(objs, r, think="plan </think>"),
        "trailing comma": _render(objs or [first], r, line=lambda c: json.dumps(c) + ","),
        "no newline after <tool_call>": _render(objs or [first], r).replace("<tool_call>\n", "<tool_call>"),
        "arguments key": _render(objs or [first], r, line=lambda c: json.dumps(
            {"name": c["name"], "arguments": c["parameters"]})),
        "space separators": _render(objs, r, sep=" "),
        "two think blocks": _render(objs, r, think="<think> a </think>\n<think> b </think>"),
        "pretty JSON": _render(objs or [first], r, line=lambda c: json.dumps(c, indent=2)),
        "empty": "",
        "python literal": _render(objs or [first], r, line=repr),
    }
    return out


@pytest.mark.parametrize("t", range(len(TRUTHS)))
def test_toolrl_default_equals_an_independent_released_reading(t):
    """No tool name repeats in these cases: there the optimal matching equals the released greedy one,
    and the set-based name score (§3.3) equals the released list-based one."""
    calls, reply = TRUTHS[t]
    truth_msg = {"role": "assistant", "content": reply,
                 "tool_calls": [{"type": "function", "function": {"name": n, "arguments": a}} for n, a in calls]}
    truth = read_ground_truth(truth_msg, TOOLRL)
    for name, completion in _variants(calls, reply).items():
        expected = _released(completion, calls, reply)
        got = toolrl(completion, truth)
        assert got.score == pytest.approx(expected, abs=1e-9), (name, completion, got)
        for gran in ("finegrained", "intermediate", "coarse"):  # the other granularities read the same way
            assert toolrl(completion, truth, granularity=gran).parts["format"] == got.parts["format"]


def test_toolrl_options_are_checked():
    with pytest.raises(UserInputError, match="no-call 'both'") as e:
        RewardOptions(no_call="both")
    assert "--no-call" in e.value.fix and "symmetric" in e.value.fix
    with pytest.raises(UserInputError, match="granularity"):
        RewardOptions(granularity="huge")
    with pytest.raises(UserInputError, match="lenient"):
        RewardOptions(lenient="yes")  # type: ignore[arg-type]
    with pytest.raises(UserInputError, match="switch step"):
        RewardOptions(switch_step=-1)
    with pytest.raises(ValueError, match="no-call"):
        toolrl(GOOD, read_ground_truth(PARIS, TOOLRL), no_call="never")  # type: ignore[arg-type]
    with pytest.raises(UserInputError, match="no-call"):
        trl_reward("toolrl", no_call="never")


# ---- malformed rows: the floor and an error, in every reward -------------------------------------------
def _floor(name: str) -> float:
    return REWARDS[name].bounds(RewardOptions())[0]


GOOD_ROWS = {
    "simrl": {"completion": hermes(("get_weather", {"city": "Paris"})), "ground_truth": PARIS, "tools": TOOLS},
    "toolrl": {"completion": GOOD, "ground_truth": PARIS, "tools": TOOLS},
    "exact": {"completion": hermes(("get_weather", {"city": "Paris"})), "ground_truth": PARIS, "tools": TOOLS},
    "mentor": {"completion": hermes(("get_weather", {"city": "Paris"})),
               "teacher": [{"role": "assistant", "content": hermes(("get_weather", {"city": "Paris"}))}],
               "tools": TOOLS},
    "astra-f1": {"completion": "<think>x</think>Paris is 18C", "sub_answers": ["18C"], "tools": TOOLS},
}
TRUTH_REWARDS = ("simrl", "toolrl", "exact")

MALFORMED = [
    *[(name, "ground_truth", value, needle) for name in TRUTH_REWARDS for value, needle in [
        ([], "empty list of calls"),
        ("[]", "empty list of calls"),
        ("", "empty label"),
        ("   ", "empty label"),
        ({}, "neither 'content' nor 'tool_calls'"),
        ({"name": "get_weather", "arguments": {"city": "Paris"}}, "list of calls"),
        ({"role": "user", "content": "Paris?"}, "assistant"),
        ("<tool_call>{not json</tool_call>", "does not parse"),
        ("null", "missing"),
        (7, "expected a message object or text"),
    ]],
    *[(name, "tools", value, "tools") for name in REWARDS for value in ("get_weather", "", "{}", 3, [1])],
    *[(name, "completion", value, "completion") for name in ("simrl", "toolrl", "exact")
      for value in ([], [1], [{"role": "user", "content": "hi"}], {"content": 5}, 5)],
    *[(name, "completion", value, "completion") for name in ("mentor", "astra-f1")
      for value in ([], [{"role": "tool", "content": "18C"}], 5)],
    ("mentor", "teacher", [], "teacher"),
]


@pytest.mark.parametrize("name, key, value, needle", MALFORMED)
def test_malformed_rows_score_the_floor_with_an_error(name, key, value, needle):
    row = {**GOOD_ROWS[name], key: value}
    r = score_row(name, row)
    assert r.score == _floor(name), r
    assert r.error is not None and needle in r.error, r.error
    assert not r.error.startswith("internal error")


@pytest.mark.parametrize("name", sorted(REWARDS))
def test_good_rows_and_json_text_columns_are_read(name):
    row = GOOD_ROWS[name]
    assert score_row(name, row).error is None
    as_text = {**row, "tools": json.dumps(TOOLS)}
    if "ground_truth" in row:
        as_text["ground_truth"] = json.dumps(row["ground_truth"])
    assert score_row(name, as_text).to_dict() == score_row(name, row).to_dict()
    # JSON null, as a dataset column holds it for a row without tools: no tool list
    assert score_row(name, {**row, "tools": "null"}).error is None


def test_empty_truth_message_is_still_a_truth():
    # an assistant message that says nothing and calls nothing is a legitimate (if odd) label
    for name in TRUTH_REWARDS:
        r = score_row(name, {"completion": "<think>x</think>", "ground_truth": {"role": "assistant", "content": ""}})
        assert r.error is None, (name, r)


# ---- training data must carry the columns a reward reads -----------------------------------------------
COMPLETIONS = [hermes(("get_weather", {"city": "Paris"})), hermes(("get_weather", {"city": "Rome"}))]


@pytest.mark.parametrize("given_columns, missing", [
    ({"tools": [TOOLS, TOOLS]}, "'ground_truth'"),
    ({"ground_truth": [PARIS, PARIS]}, "'tools'"),
    ({}, "'ground_truth', 'tools'"),
])
def test_trl_adapter_refuses_a_batch_without_its_columns(given_columns, missing):
    f = trl_reward("simrl")
    with pytest.raises(UserInputError) as e:
        f(COMPLETIONS, prompts=["p", "p"], **given_columns)
    msg = str(e.value)
    assert "reward 'simrl'" in msg and f"column(s) {missing}" in msg and "batch of 2 completions" in msg
    assert e.value.fix.startswith("add ")


def test_trl_adapter_refuses_a_column_not_aligned_with_the_completions():
    f = trl_reward("toolrl")
    with pytest.raises(UserInputError, match="not a list with one value per completion"):
        f(COMPLETIONS, ground_truth=[PARIS])


def test_trl_adapter_scores_when_the_columns_are_there():
    f = trl_reward("simrl")
    scores = f(COMPLETIONS, prompts=["p", "p"], ground_truth=[PARIS, PARIS], tools=[TOOLS, TOOLS])
    assert scores[0] == 1.0 and scores[1] == pytest.approx(0.0)
    assert f.__name__ == "simrl_reward"
    g = trl_reward("mentor")  # either of its column sets will do
    teacher = [{"role": "assistant", "content": hermes(("get_weather", {"city": "Paris"}))}]
    assert g(COMPLETIONS, teacher_trajectory=[teacher, teacher])[0] > 0


@pytest.mark.parametrize("name, columns, missing", [
    ("simrl", ["prompt", "ground_truth"], ["tools"]),
    ("simrl", ["prompt"], ["ground_truth", "tools"]),
    ("toolrl", ["prompt", "tools"], ["ground_truth"]),
    ("exact", [], ["ground_truth"]),
    ("mentor", ["prompt", "tools"], ["teacher"]),
    ("astra-f1", ["prompt", "n_solved"], ["sub_answers"]),
])
def test_check_columns_names_the_reward_and_what_to_add(name, columns, missing):
    with pytest.raises(UserInputError) as e:
        check_columns(name, columns)
    msg, fix = str(e.value), e.value.fix
    assert f"reward {name!r}" in msg and ", ".join(map(repr, missing)) in msg
    assert all(f"{c!r}:" in fix for c in missing)


@pytest.mark.parametrize("name, columns", [
    ("simrl", ["prompt", "ground_truth", "tools", "task_id"]),
    ("toolrl", ["prompt", "ground_truth"]),
    ("exact", ["ground_truth"]),
    ("mentor", ["teacher_trajectory"]),
    ("astra-f1", ["n_solved", "n_subtasks", "n_calls"]),
    ("astra-f1", ["meta"]),
])
def test_check_columns_accepts_complete_data(name, columns):
    check_columns(name, columns)
    check_columns(name, tuple(columns))


def test_check_columns_unknown_reward():
    with pytest.raises(UserInputError, match="unknown reward 'nope'"):
        check_columns("nope", ["ground_truth"])


def test_check_columns_fix_offers_the_alternatives():
    with pytest.raises(UserInputError) as e:
        check_columns("mentor", ["prompt"])
    assert "teacher_trajectory" in e.value.fix


def test_every_reward_declares_its_columns():
    from tinytool.rewards.registry import COLUMN_HELP

    for name, spec in REWARDS.items():
        assert spec.columns, name
        assert all(c in COLUMN_HELP for cols in spec.columns for c in cols), name
    assert list(itertools.chain.from_iterable(REWARDS["simrl"].columns)) == ["ground_truth", "tools"]


def test_mentor_reads_whichever_teacher_column_holds_a_value():
    teacher = GOOD_ROWS["mentor"]["teacher"]
    base = {"completion": GOOD_ROWS["mentor"]["completion"], "tools": TOOLS}
    for empty in (None, "null", " null "):
        r = score_row("mentor", {**base, "teacher": empty, "teacher_trajectory": teacher})
        assert r.error is None and r.score == score_row("mentor", {**base, "teacher": teacher}).score
        r = score_row("mentor", {**base, "teacher": empty, "teacher_trajectory": "null"})
        assert r.score == _floor("mentor") and r.error.startswith("teacher")


# ---- a reward mix GRPO can learn from ------------------------------------------------------------------


@pytest.mark.parametrize("mix, word", [
    ("simrl=0,toolrl=0", "all zero"),
    ("simrl=0", "all zero"),
    ("simrl=1,toolrl=-0.5", "negative"),
])
def test_a_reward_mix_that_scores_nothing_or_against_a_reward_is_refused(mix, word):
    """All weights zero would reward every completion 0 (GRPO learns nothing); a negative weight would train
    against a reward's own definition."""
    from tinytool.rl.config import parse_reward_mix

    with pytest.raises(UserInputError, match=word) as e:
        parse_reward_mix(mix)
    assert "--reward" in str(e.value) and mix in str(e.value)
    assert parse_reward_mix("simrl=0,toolrl=1") == {"simrl": 0.0, "toolrl": 1.0}  # one weight may be zero


def test_the_rl_command_refuses_an_all_zero_mix_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from tinytool.cli import app

    data = tmp_path / "train.jsonl"
    data.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": "hello"}]}) + "\n")
    res = CliRunner().invoke(app, ["rl", "-m", "smollm2-135m-instruct", "-d", str(data),
                                   "--reward", "simrl=0,toolrl=0", "-o", str(tmp_path / "out")])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert "--reward: the weights in 'simrl=0,toolrl=0' are all zero" in " ".join(res.output.split())
