"""Distinct calls (`tinytool.llm.distinct`): where a call's values start, which repeats are found, the first-step ban,
and a tiny model's repeated call decoded again from a repeated value, under its grammar, in ``eval bfcl``."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytool.formats import get_format
from tinytool.llm.distinct import Leftover, _value_starts, calls_of, doubted, leftover, stated_names
from tinytool.llm.guard import value_guard
from tinytool.schema import Tool

HERMES = get_format("hermes-nothink")
SYNTAX = HERMES.syntax
AREA = Tool("area", "", {"type": "object", "properties": {
    "width": {"type": "integer"}, "length": {"type": "integer"}, "unit": {"type": "string"}}, "required": ["width"]})


def _call(name: str, args: dict) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"


def _turn(*calls: tuple[str, dict]) -> str:
    return "\n\n".join(_call(n, a) for n, a in calls)


def test_value_starts_point_at_each_arguments_first_character():
    inner = '{"name": "f", "arguments": {"a": 12, "b": "Boston", "c": [3, 4], "d": {"k": 1}, "e": [], "f": ""}}'
    starts = _value_starts(inner)
    assert inner[starts["a"]:].startswith("12,")
    assert inner[starts["b"]:].startswith('Boston"')
    assert inner[starts["c"]:].startswith("3, 4]")
    assert inner[starts["d"]:].startswith('k"')  # inside the object: its first key's text
    assert inner[starts["e"]:].startswith("], ") and inner[starts["f"]:].startswith('"}}') and set(starts) == set("abcdef")
    assert _value_starts('{"name": "f", "arguments": {"a": "x\\"y", "b": 2}}')["b"] > 0


def test_calls_of_reads_each_complete_block_with_offsets_in_the_whole_text():
    text = "Sure.\n" + _turn(("area", {"width": 4, "length": 5}), ("area", {"width": 6, "length": 3}))
    text += '\n\n<tool_call>\n{"name": "area", "arguments": {"width": 9'  # cut: not a call
    calls = calls_of(SYNTAX, text)
    assert [c.arguments for c in calls] == [{"width": 4, "length": 5}, {"width": 6, "length": 3}]
    for call in calls:
        for v in call.values:
            assert text[v.at:].startswith(str(v.value))
    assert calls_of(SYNTAX, "<tool_call>\nnot json\n</tool_call>") == []
    assert calls_of(SYNTAX, _call("f", {}).replace('"arguments": {}', '"arguments": 3')) == []


def test_a_repeated_call_is_doubted_at_every_argument_of_the_repeat():
    text = _turn(("area", {"width": 4, "length": 5}), ("area", {"width": 4, "length": 5}))
    kind, offsets = doubted(SYNTAX, text)
    second = text.index("</tool_call>")
    assert kind == "call" and len(offsets) == 2 and all(o > second for o in offsets)
    assert [text[o] for o in offsets] == ["4", "5"]
    assert doubted(SYNTAX, _turn(("area", {"width": 4}), ("area", {"width": 6}))) == ("", [])
    assert doubted(SYNTAX, _turn(("area", {}), ("area", {}))) == ("", [])  # nothing to decode again


def test_a_repeated_value_is_doubted_only_while_the_request_states_a_value_no_call_holds():
    guard, _ = value_guard([AREA], "Rooms of 4 by 5 and 6 by 3 metres.", HERMES)
    text = _turn(("area", {"width": 4, "length": 5, "unit": "m"}), ("area", {"width": 4, "length": 3, "unit": "m"}))
    kind, offsets = doubted(SYNTAX, text, guard.left)
    assert kind == "value" and [text[o] for o in offsets] == ["4", "m"]  # 6 is left over
    done = _turn(("area", {"width": 4, "length": 5, "unit": "m"}), ("area", {"width": 6, "length": 3, "unit": "m"}))
    assert doubted(SYNTAX, done, guard.left) == ("", [])  # every stated value is held: "m" twice is meant
    assert doubted(SYNTAX, text) == ("", [])  # nothing known of the request: only whole calls count


def test_stated_names_are_capitalised_runs_less_each_sentences_first_word():
    assert stated_names("Money laundering in San Francisco in 2019 and in Texas in 2018?") == ["San Francisco", "Texas"]
    assert stated_names("What is the weather in New York and Paris? I want to know.") == ["New York", "Paris"]
    assert stated_names('"Hello" said Bob. Then Alice left.\nBoston Celtics scores') == ["Bob", "Alice", "Celtics"]
    assert stated_names("") == [] and stated_names("all lower case") == []


def test_a_name_no_call_holds_arms_the_repeated_value_check():
    """"in San Francisco in 2019 and in Texas in 2018" answered with San Francisco twice: the names left over come
    from the request itself, not from a quote, and the repeated city is what is doubted (not the years)."""
    from tinytool.schema import Conversation, Message

    crime = Tool("cases", "", {"type": "object", "properties": {
        "city": {"type": "string"}, "year": {"type": "integer"}}, "required": ["city", "year"]})
    conv = Conversation([Message("user", "Money laundering cases in San Francisco in 2019 and in Texas in 2018?")],
                        [crime])
    left = leftover(conv, HERMES)
    assert isinstance(left, Leftover) and left.names == ("San Francisco", "Texas")
    text = _turn(("cases", {"city": "San Francisco", "year": 2019}), ("cases", {"city": "San Francisco", "year": 2018}))
    assert left(text) == ([], ["Texas"])
    kind, offsets = doubted(SYNTAX, text, left)
    assert kind == "value" and [text[o:o + 3] for o in offsets] == ["San"] and offsets[0] > text.index("2019")
    right = _turn(("cases", {"city": "San Francisco", "year": 2019}), ("cases", {"city": "Texas", "year": 2018}))
    assert doubted(SYNTAX, right, left) == ("", [])


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet='<>/_toolcaname{}[]":, 0123abc\n\\', max_size=160))
def test_doubted_never_raises(text):
    guard, _ = value_guard([AREA], "4 by 5 and 6", HERMES)
    kind, offsets = doubted(SYNTAX, text, Leftover(guard, tuple(stated_names(text))))
    assert kind in ("", "call", "value") and all(0 <= o < len(text) for o in offsets)


def _client():
    torch = pytest.importorskip("torch")
    from tinytool.llm.hf import HFClient
    from tinytool.models.loading import load_tokenizer
    from tinytool.models.students import tiny_model

    torch.set_num_threads(1)
    tok = load_tokenizer("smollm2-135m-instruct")
    return HFClient(tiny_model(tok, layers=2, seed=3), tok, batch_size=4, prefix_cache_mb=0)


def test_token_at_finds_the_token_holding_each_offset_as_a_decode_per_token_would():
    """The bisection gives, for every character offset (multi-byte characters and a special token included), the
    token a scan of every decoded prefix gives: the first whose prefix reaches past the offset."""
    from types import SimpleNamespace

    from tinytool.llm.distinct import _token_at
    from tinytool.models.loading import load_tokenizer

    tok = load_tokenizer("smollm2-135m-instruct")
    text = _turn(("area", {"width": 4, "unit": "m²"}), ("area", {"width": 6, "length": 3, "unit": "Straße ✓"}))
    tokens = tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    ends = [len(tok.decode(tokens[:j + 1], skip_special_tokens=True)) for j in range(len(tokens))]
    offsets = list(range(len(tok.decode(tokens, skip_special_tokens=True))))
    scan = [next((j for j, e in enumerate(ends) if e > c), len(tokens) - 1) for c in offsets]
    assert _token_at(SimpleNamespace(tokenizer=tok), tokens, offsets) == sorted(set(scan))
    for c, j in zip(offsets, scan, strict=True):
        assert _token_at(SimpleNamespace(tokenizer=tok), tokens, [c]) == [j]


def test_the_ban_holds_at_the_first_step_only_and_never_leaves_a_row_nothing():
    torch = pytest.importorskip("torch")
    from tinytool.llm.distinct import Ban

    rule = Ban(None, 2)
    rule.start(0, {1, 2})
    rule.start(1, None)
    logits = torch.zeros(2, 4)
    rule.mask(logits)
    assert logits[0].tolist() == [0, float("-inf"), float("-inf"), 0] and logits[1].tolist() == [0, 0, 0, 0]
    rule.advance([0, 0])
    again = torch.zeros(2, 4)
    assert rule.mask(again).eq(0).all()
    rule.start(0, [0, 1])
    only = torch.tensor([[0.0, 1.0, float("-inf"), float("-inf")]])
    rule.states = rule.states[:1]
    assert rule.mask(only).tolist() == [[0.0, 1.0, float("-inf"), float("-inf")]]  # the ban gives way


def test_a_tiny_models_repeated_call_is_decoded_again_from_a_repeated_value_under_its_grammar():
    """A turn written with the same call twice is decoded again from one of the repeat's values: the kept prefix is
    the tokens before it, the token there differs from the one taken, the grammar holds, and a turn whose calls
    differ is left exactly as it was."""
    pytest.importorskip("llguidance")
    from tinytool.llm.base import Completion, GenerationConfig, chat_request
    from tinytool.llm.constrain import tool_constraint
    from tinytool.llm.distinct import redecode
    from tinytool.schema import Conversation, Message

    client = _client()
    tok = client.tokenizer
    conv = Conversation([Message("user", "Rooms 4 by 5 and 6 by 3.")], [AREA])
    prompt = tok(chat_request(HERMES, conv, tok).prompt, add_special_tokens=False)["input_ids"]
    rules = {"constraint": tool_constraint([AREA], HERMES, "auto")}
    repeated = _turn(("area", {"width": 4, "length": 5}), ("area", {"width": 4, "length": 5}))
    distinct = _turn(("area", {"width": 4, "length": 5}), ("area", {"width": 6, "length": 3}))
    comps = []
    for text in (repeated, distinct):
        ids = tok(text, add_special_tokens=False)["input_ids"] + [client.eos_ids[0]]
        comps.append(Completion(text=text, n_tokens=len(ids), meta={"token_ids": ids}))
    config = GenerationConfig(max_new_tokens=120)
    (fixed, what), (kept, untouched) = redecode(client, SYNTAX, [prompt, prompt], [rules, rules], comps, config)
    assert untouched == {} and kept is comps[1]
    assert 1 <= what["rounds"] <= 3 and what["kinds"][0] == "call" and what["first"] == repeated
    old = comps[0].meta["token_ids"]
    new = fixed.meta["token_ids"]
    j = next(k for k, (a, b) in enumerate(zip(old, new, strict=False)) if a != b)
    assert j > len(tok(_call("area", {"width": 4, "length": 5}), add_special_tokens=False)["input_ids"])
    assert fixed.text.startswith(repeated[:repeated.rindex('"width"')])
    assert fixed.text != repeated and fixed.n_tokens <= config.max_new_tokens


def test_eval_bfcl_with_distinct_calls_records_what_it_did(tmp_path, monkeypatch):
    """``eval bfcl --distinct-calls`` keeps each item's first answer where it decoded again, and refuses a format
    whose calls it cannot read before a model loads."""
    from typer.testing import CliRunner

    from tinytool.cli import app
    from tinytool.eval.bfcl_runner import BFCLRunConfig, read_generations, run_bfcl
    from tinytool.llm import distinct
    from tinytool.llm.base import Completion

    client = _client()
    twice = _turn(("calculate_triangle_area", {"base": 10, "height": 5}),) * 1
    twice = twice + "\n\n" + twice
    real = client.generate_finished

    def scripted(requests, config):
        for step in real(requests, config):
            yield {i: [Completion(text=twice, n_tokens=40, meta={"token_ids": client.tokenizer(
                twice, add_special_tokens=False)["input_ids"]})] for i in step}

    monkeypatch.setattr(client, "generate_finished", scripted)
    seen = []
    real_redecode = distinct.redecode
    monkeypatch.setattr(distinct, "redecode", lambda *a, **k: seen.append(a) or real_redecode(*a, **k))
    cfg = BFCLRunConfig(model="tiny", format="hermes-nothink", categories=["simple_python"], limit=2,
                        max_new_tokens=48, batch_size=4, distinct_calls=True)
    s = run_bfcl(cfg, tmp_path / "bfcl", client, progress=False)
    assert s["distinct_calls"] is True and s["distinct"]["simple_python"]["redecoded"] == 2
    assert s["distinct"]["simple_python"]["by_kind"]["call"]["redecoded"] == 2
    rows = read_generations(tmp_path / "bfcl" / "generations.jsonl")
    assert len(seen) == 1 and len(rows) == 2
    for row in rows.values():
        (what,) = row["distinct"]
        assert what["first"] == twice and what["rounds"] >= 1 and row["raw"][0] != twice
    results = [json.loads(line) for line in (tmp_path / "bfcl" / "results.jsonl").read_text().splitlines()]
    assert all(r["distinct"]["first"] == twice and r["distinct"]["valid_first"] is False for r in results)
    result = CliRunner().invoke(app, ["eval", "bfcl", "-m", "smollm2-135m-instruct", "-f", "python",
                                      "--categories", "simple_python", "--limit", "1", "--distinct-calls",
                                      "-o", str(tmp_path / "run")])
    assert result.exit_code == 2 and "distinct calls" in result.output and "hermes" in result.output, result.output
    assert not (tmp_path / "run").exists()


def test_eval_demo_with_distinct_calls_scores_the_first_answer_beside_the_last(tmp_path, monkeypatch):
    from tinytool.data.demo import write_demo
    from tinytool.eval.demo_eval import run_demo_eval
    from tinytool.llm.base import Completion

    client = _client()
    write_demo(12, 3, tmp_path / "demo", dev_fraction=0.5)
    twice = _turn(("area", {"width": 4, "length": 5}), ("area", {"width": 4, "length": 5}))
    ids = client.tokenizer(twice, add_special_tokens=False)["input_ids"]
    # the first pass writes the same call twice; decoding again goes through generate_ids, the real engine
    monkeypatch.setattr(client, "generate", lambda requests, config: [
        [Completion(text=twice, n_tokens=len(ids), meta={"token_ids": ids})] for _ in requests])
    s = run_demo_eval("tiny", tmp_path / "demo" / "dev.jsonl", tmp_path / "run", client, fmt=HERMES, limit=3,
                      max_new_tokens=64, progress=False, distinct_calls=True)
    assert s["distinct_calls"] is True
    assert sum(t["redecoded"] for t in s["distinct"].values()) == 3
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert all(r["distinct"]["first"] == twice and r["distinct"]["valid_first"] is False for r in results)
    assert all(r["raw"] != twice for r in results)


def test_a_stated_value_left_over_gets_one_more_call_kept_only_where_it_is_a_sibling_taking_it(monkeypatch):
    """An answer that ends after its last call while the request states a value no call holds is decoded on from
    its end with the end of turn banned; a sibling call taking the value is kept, anything else is put back."""
    from tinytool.llm.base import Completion, GenerationConfig
    from tinytool.llm.distinct import _for_more, _holds, _sibling, redecode

    assert _holds(6, ([(6.0,)], [])) and _holds("Rome", ([], ["rome"])) and _holds(["x", 3], ([(3.0,)], []))
    assert not _holds(True, ([(1.0,)], [])) and not _holds("", ([], ["a"])) and not _holds(None, ([], []))
    one = calls_of(SYNTAX, _turn(("area", {"width": 4, "length": 5})))
    sib = calls_of(SYNTAX, _turn(("area", {"width": 4, "length": 5}), ("area", {"width": 6, "length": 3})))
    other = calls_of(SYNTAX, _turn(("area", {"width": 4, "length": 5}), ("area", {"unit": "6"})))
    assert _sibling(one, sib, ([(6.0,), (3.0,)], [])) and not _sibling(one, other, ([(6.0,)], ["6"]))
    # a number left over while a call leaves out a numeric parameter is that parameter's, not another call's
    guard, _ = value_guard([AREA], "Rooms 4 by 5 and 6 by 3.", HERMES)
    narrow = calls_of(SYNTAX, _turn(("area", {"width": 4})))
    assert _for_more(Leftover(guard), narrow, ([(5.0,)], ["Rome"])) == ([], ["Rome"])
    assert _for_more(Leftover(guard), one, ([(6.0,)], [])) == ([(6.0,)], [])

    client = _client()
    tok = client.tokenizer
    left = Leftover(guard)
    first = _turn(("area", {"width": 4, "length": 5}))
    ids = tok(first, add_special_tokens=False)["input_ids"] + [client.eos_ids[0]]
    comp = Completion(text=first, n_tokens=len(ids), meta={"token_ids": ids})
    prompt = tok("Rooms 4 by 5 and 6 by 3.", add_special_tokens=False)["input_ids"]
    config = GenerationConfig(max_new_tokens=120)
    asked = []

    def scripted(more_text):
        def generate_ids(token_ids, gen, seeds=None, asks=None):
            asked.append((token_ids, asks))
            new = tok(more_text, add_special_tokens=False)["input_ids"] + [client.eos_ids[0]]
            return [[Completion(text=more_text, n_tokens=len(new), meta={"token_ids": new})] for _ in token_ids]
        return generate_ids

    monkeypatch.setattr(client, "generate_ids", scripted("\n\n" + _call("area", {"width": 6, "length": 3})))
    ((got, what),) = redecode(client, SYNTAX, [prompt], [{}], [comp], config, [left])
    assert not asked and got is comp and what == {}  # off by default
    ((got, what),) = redecode(client, SYNTAX, [prompt], [{}], [comp], config, [left], more=True)
    (token_ids, asks), = asked
    assert token_ids == [prompt + ids[:-1]] and asks[0]["ban"] == set(client.eos_ids)
    assert what["kinds"] == ["more"] and got.text.count("<tool_call>") == 2 and '"width": 6' in got.text

    asked.clear()
    monkeypatch.setattr(client, "generate_ids", scripted("\n\n" + _call("area", {"unit": "m"})))
    ((got, what),) = redecode(client, SYNTAX, [prompt], [{}], [comp], config, [left], more=True)
    assert len(asked) == 1 and what == {} and got is comp  # not a sibling taking 6 or 3: put back, tried once


def test_a_repeated_value_is_traded_only_for_a_value_left_over(monkeypatch):
    """The second call repeats a city while Texas is left over: a round that writes Texas is kept; rounds that write
    anything else are put back (the banned tokens stay banned, so each round tries another choice), and after the
    last round the answer is the first one, untouched."""
    from tinytool.llm.base import Completion, GenerationConfig
    from tinytool.llm.distinct import redecode
    from tinytool.schema import Conversation, Message

    crime = Tool("cases", "", {"type": "object", "properties": {
        "city": {"type": "string"}, "year": {"type": "integer"}}, "required": ["city", "year"]})
    conv = Conversation([Message("user", "Cases in San Francisco in 2019 and in Texas in 2018?")], [crime])
    left = leftover(conv, HERMES)
    client = _client()
    tok = client.tokenizer
    first = _turn(("cases", {"city": "San Francisco", "year": 2019}), ("cases", {"city": "San Francisco", "year": 2018}))
    ids = tok(first, add_special_tokens=False)["input_ids"] + [client.eos_ids[0]]
    comp = Completion(text=first, n_tokens=len(ids), meta={"token_ids": ids})
    prompt = tok("Cases?", add_special_tokens=False)["input_ids"]
    bans = []

    def scripted(city):
        def generate_ids(token_ids, gen, seeds=None, asks=None):
            bans.append(set(asks[0]["ban"]))
            head = tok.decode(token_ids[0][len(prompt):])
            rest = first[len(head):].replace("San Francisco", city, 1)
            new = tok(rest, add_special_tokens=False)["input_ids"] + [client.eos_ids[0]]
            return [[Completion(text=rest, n_tokens=len(new), meta={"token_ids": new})]]
        return generate_ids

    monkeypatch.setattr(client, "generate_ids", scripted("Oakland"))
    ((got, what),) = redecode(client, SYNTAX, [prompt], [{}], [comp], GenerationConfig(max_new_tokens=120), [left])
    assert got is comp and what == {} and len(bans) == 3
    # a round put back bans what it took there too (this scripted model takes "Oakland" whatever is banned)
    assert bans[0] < bans[1] == bans[2] and len(bans[1] - bans[0]) == 1
    bans.clear()
    monkeypatch.setattr(client, "generate_ids", scripted("Texas"))
    ((got, what),) = redecode(client, SYNTAX, [prompt], [{}], [comp], GenerationConfig(max_new_tokens=120), [left])
    assert what["kinds"] == ["value"] and got.text.count("Texas") == 1 and got.text.count("San Francisco") == 1
