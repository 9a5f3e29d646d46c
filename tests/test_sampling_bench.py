"""The sampling headroom reading (`benchmarks/sampling.py`): which answer a vote picks, and the vote scored as a run of
its own by the package's checker; on runs a scripted client answers."""

from __future__ import annotations

import json

import pytest
from conftest import benchmark_module
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytool.bfcl import bfcl_data
from tinytool.data.convert.bfcl import calls_from_ground_truth
from tinytool.eval.bfcl_runner import BFCLRunConfig, run_bfcl
from tinytool.formats import get_format
from tinytool.llm import ScriptedClient

FMT = get_format("hermes-nothink")


@pytest.fixture(scope="module")
def sampling():
    return benchmark_module("sampling")


def _call(name: str, args: dict) -> str:
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": args})}\n</tool_call>'


def test_the_same_calls_in_another_order_or_spacing_are_one_answer(sampling):
    a = _call("f", {"x": 1, "y": "b"}) + "\n" + _call("g", {})
    b = _call("g", {}) + "\n\n" + _call("f", {"y": "b", "x": 1})
    assert sampling.answer_key(FMT, a) == sampling.answer_key(FMT, b)
    assert sampling.answer_key(FMT, a) != sampling.answer_key(FMT, _call("f", {"x": 2, "y": "b"}))
    assert sampling.answer_key(FMT, "No tool fits.") == sampling.answer_key(FMT, "I can't do that.") == "no call"
    broken = '<tool_call>\n{"name": "f", "arguments": {"x": </tool_call>'
    assert sampling.answer_key(FMT, broken) not in ("no call", sampling.answer_key(FMT, _call("f", {"x": 1})))


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_an_answer_key_never_raises(sampling, text):
    assert isinstance(sampling.answer_key(FMT, text), str)


def test_the_most_common_answer_wins_and_a_tie_goes_to_the_earliest(sampling):
    assert sampling.majority(["a", "b", "b", "c"]) == 1
    assert sampling.majority(["a", "b", "a", "b"]) == 0
    assert sampling.majority(["x"]) == 0


def test_a_vote_is_scored_as_a_run_of_its_own_and_paired_with_the_greedy_run(sampling, tmp_path):
    items = {it.turns[0][-1]["content"]: it for it in bfcl_data().items("simple_python", limit=4, seed=0)}
    order = list(items)

    def right(request) -> str:
        (call,) = calls_from_ground_truth(items[request.messages[-1]["content"]].answer)
        return _call(call.name, call.arguments)

    def greedy(request, i):  # right on the first two items only
        return right(request) if order.index(request.messages[-1]["content"]) < 2 else "No tool fits."

    def sampled(request, i):  # item 0: wrong twice, right once; items 1-3: right twice of three
        k = order.index(request.messages[-1]["content"])
        ok = i == 2 if k == 0 else i != 1
        return right(request) if ok else _call("wrong", {"n": i})

    cfg = {"model": "m", "format": "hermes-nothink", "categories": ["simple_python"], "limit": 4, "seed": 0}
    run_bfcl(BFCLRunConfig(**cfg), tmp_path / "g", ScriptedClient(greedy), progress=False)
    run_bfcl(BFCLRunConfig(**cfg, samples=3, temperature=0.7), tmp_path / "s", ScriptedClient(sampled),
             progress=False)
    vote = sampling.write_vote(tmp_path / "s", tmp_path / "g", "vote")
    summary = json.loads((vote / "summary.json").read_text())["categories"]["simple_python"]
    # item 0's three answers differ (two wrong calls with other values): a tie, the earliest (wrong) wins
    assert summary["accuracy"] == pytest.approx(0.75) and summary["n"] == 4
    rows = {r["id"]: r for r in map(json.loads, (vote / "generations.jsonl").read_text().splitlines())}
    assert sorted(r["vote"]["agree"] for r in rows.values()) == [1, 2, 2, 2]
    with_greedy = sampling.write_vote(tmp_path / "s", tmp_path / "g", "vote+greedy")
    assert json.loads((with_greedy / "run.json").read_text())["settings"]["vote"] == "vote+greedy"
    pair = sampling.compare(sampling.bfcl_items(tmp_path / "g"), sampling.bfcl_items(vote))
    assert pair["items"] == 4 and pair["p_per_category"]["simple_python"] is not None


def test_a_greedy_run_missing_items_is_refused_naming_it(sampling, tmp_path):
    cfg = {"model": "m", "format": "hermes-nothink", "categories": ["simple_python"], "seed": 0}
    run_bfcl(BFCLRunConfig(**cfg, limit=2), tmp_path / "g", ScriptedClient(lambda r, i: "no"), progress=False)
    run_bfcl(BFCLRunConfig(**cfg, limit=3, samples=2, temperature=0.7), tmp_path / "s",
             ScriptedClient(lambda r, i: "no"), progress=False)
    with pytest.raises(SystemExit, match="no greedy answer for"):
        sampling.write_vote(tmp_path / "s", tmp_path / "g", "vote")
