"""BFCL multi-turn: the executable environments, our checker, and the model's turn loop."""

from __future__ import annotations

import builtins
import inspect
import json
import os
import sys

import pytest

from tinytool.bfcl import MULTI_TURN, bfcl_data
from tinytool.envs.bfcl import (
    API_CLASSES,
    BFCLEnv,
    CallSyntaxError,
    load_api_classes,
    parse_call,
)
from tinytool.eval.multi_turn import (
    ADDED_FUNCTIONS_MESSAGE,
    EMPTY_TURN,
    FORCE_TERMINATED,
    IRRELEVANCE_ERROR,
    RESPONSE_MISMATCH,
    STATE_MISMATCH,
    call_to_string,
    calls_to_strings,
    check_multi_turn,
    check_record,
    run_multi_turn,
)
from tinytool.formats import get_format
from tinytool.llm.base import GenerationConfig, ScriptedClient
from tinytool.schema import ToolCall

ERR = "Error during execution: "


@pytest.fixture(scope="module")
def data():
    return bfcl_data()


def _items(data, category, n):
    return data.items(category)[:n]  # file order: the first n


def _item(data, item_id):
    category = item_id.rsplit("_", 1)[0]
    return data.items(category, ids=[item_id])[0]


def _steps(gt):
    """The ground truth as a model result: one step per turn holding all its calls."""
    return [[list(turn)] for turn in gt]


# --------------------------------------------------------------------------- environments


def test_api_classes_load_from_the_wheel(data):
    classes = load_api_classes()
    assert set(classes) == set(API_CLASSES)
    wheel = str(data.wheel.resolve())
    for cls in classes.values():
        module = sys.modules[cls.__module__]
        assert module.__file__.startswith(wheel)  # imported from inside the zip
    # no package __init__ was executed: the packages are the bare modules we registered
    assert getattr(sys.modules["bfcl_eval"], "__file__", None) is None


def test_every_class_loads_a_real_scenario(data):
    seen: dict[str, BFCLEnv] = {}
    for item in data.items("multi_turn_base"):
        for c in item.involved_classes:
            if c not in seen:
                seen[c] = BFCLEnv.for_item(item)
    assert set(seen) == set(API_CLASSES)
    for class_name, env in seen.items():
        state = env.state()[class_name]
        assert all(not k.startswith("_") for k in state)
        if class_name != "MathAPI":
            assert state  # the scenario put something there
    assert "cd" in seen["GorillaFileSystem"].function_names


def test_execute_results_are_bfcl_strings(data):
    env = BFCLEnv.for_item(_item(data, "multi_turn_base_0"))
    assert env.execute("cd(folder='document')") == '{"current_working_directory": "document"}'
    assert env.execute("mkdir(dir_name='temp')") == "None"  # None → str()
    # a (name, arguments) pair and a ToolCall run the same way
    assert "temp" in env.execute(("ls", {}))
    assert "temp" in env.execute(ToolCall("ls", {"a": True}))
    assert "temp" in env.execute({"name": "ls", "arguments": {}})
    # positional arguments
    assert "sorted_content" in env.execute("sort('final_report.pdf')")
    # a wrong argument is the method's own TypeError, as BFCL reports it
    assert env.execute("cd(nope='x')").startswith(ERR) and "unexpected keyword" in env.execute("cd(nope='x')")
    assert env.execute("not_a_function()") == ERR + "name 'not_a_function' is not defined"
    assert env.execute("exit()") == ERR + "Function call exit is not allowed."
    assert env.execute(("kill", {})) == ERR + "Function call kill is not allowed."
    assert env.execute("_load_scenario({})").startswith(ERR)  # private methods are not callable
    assert env.execute(("cd", ["document"])).startswith(ERR)  # arguments must be an object


def test_bad_call_strings_execute_nothing(monkeypatch, data):
    env = BFCLEnv.for_item(_item(data, "multi_turn_base_0"))
    touched = []
    monkeypatch.setattr(os, "system", lambda *a: touched.append(("system", a)))
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda *a, **k: touched.append(("open", a)) or real_open(*a, **k))
    before = repr(env.state())
    bad = [
        "__import__('os').system('x')",
        "cd(folder=open('x'))",
        "cd(folder=__import__('os').system('x'))",
        "cd(**__import__('os').environ)",
        "cd(*['document'])",
        "garbage (((",
        "",
        "cd",
        "cd(folder='a'",
        "x = cd(folder='document')",
        "cd(folder='document'); rm(file_name='x')",
        "lambda: cd(folder='document')",
        "cd(folder=[1, 2, y])",
        "cd(folder='a', folder='b')",
        "\x00",
        "cd(folder=" + "[" * 10_000 + "]" * 10_000 + ")",
        "power(base=2, exponent=10**9)",
        None,
        42,
    ]
    for call in bad:
        result = env.execute(call)
        assert isinstance(result, str) and result.startswith(ERR), (call, result)
        assert "0x" not in result  # no object addresses: results are the same on every run
    assert touched == []
    assert repr(env.state()) == before


def test_parse_call():
    assert parse_call("f()") == ("f", [], {})
    assert parse_call("  f(1, 'a', x=[1, {'k': None}], y=-2.5, z=(1, 2)) ") == (
        "f", [1, "a"], {"x": [1, {"k": None}], "y": -2.5, "z": (1, 2)})
    assert parse_call("f(**{'from': 1}, b=True)") == ("f", [], {"from": 1, "b": True})
    for text in ["f(g())", "f(x=y)", "a.f()", "f()()", "f(*x)", "f(**{1: 2})", "1 + 2", "f(x=1, **{'x': 2})"]:
        with pytest.raises(CallSyntaxError):
            parse_call(text)


def test_call_strings_round_trip():
    calls = [
        ToolCall("mv", {"source": "a b.txt", "destination": "it's/here"}),
        ToolCall("f", {"n": 1, "x": 2.5, "flag": False, "none": None, "items": [1, {"k": "v"}]}),
        ToolCall("g", {"from": 1, "my-key": "x", "ok": "y"}),
        ToolCall("h", {}),
    ]
    strings = calls_to_strings(calls)
    assert strings[0] == "mv(source='a b.txt', destination=\"it's/here\")"
    assert strings[3] == "h()"
    for call, text in zip(calls, strings, strict=True):
        name, args, kwargs = parse_call(text)
        assert (name, args, kwargs) == (call.name, [], call.arguments)
    assert call_to_string(ToolCall("g", {"from": 1})) == "g(**{'from': 1})"


def test_math_api_guards_and_restores_precision():
    import decimal

    import mpmath

    env = BFCLEnv(["MathAPI"])
    dps, prec = mpmath.mp.dps, decimal.getcontext().prec
    assert json.loads(env.execute("add(a=2, b=3)")) == {"result": 5}
    assert "3.32192809" in env.execute("logarithm(value=10, base=2, precision=20)")
    assert "1.41421356237309504880" in env.execute("square_root(number=2, precision=30)")
    assert (mpmath.mp.dps, decimal.getcontext().prec) == (dps, prec)
    # would run for hours in BFCL; here an immediate error
    assert env.execute("power(base=2, exponent=1000000000)").startswith(ERR)
    assert env.execute("logarithm(value=10, base=2, precision=1000000000)").startswith(ERR)
    assert env.execute("square_root(number=2, precision=1000000000)").startswith(ERR)


# --------------------------------------------------------------------------- the checker


def test_ground_truth_checks_against_itself(data):
    items = _items(data, "multi_turn_base", 30)
    items += [it for c in MULTI_TURN[1:] for it in _items(data, c, 4)]
    for item in items:
        verdict = check_multi_turn(_steps(item.answer), item.answer, item)
        assert verdict.valid, (item.id, verdict.error_type, verdict.reason)
        # one step per call, and empty steps in between, change nothing
        split = [[[c] for c in turn] + [[]] for turn in item.answer]
        assert check_multi_turn(split, item.answer, item).valid, item.id


def test_the_environment_replays_ground_truth_the_same_way(data):
    """Executing the ground truth twice on fresh environments gives the same results and states."""
    for item in _items(data, "multi_turn_long_context", 3) + _items(data, "multi_turn_base", 5):
        a, b = BFCLEnv.for_item(item), BFCLEnv.for_item(item)
        ra = [a.execute_many(turn) for turn in item.answer]
        rb = [b.execute_many(turn) for turn in item.answer]
        assert ra == rb
        assert a.state() == b.state()
        assert a.long_context == ("long_context" in item.category)


def test_mutations_get_the_right_error(data):
    item = _item(data, "multi_turn_base_0")
    gt = item.answer
    assert gt[0] == ["cd(folder='document')", "mkdir(dir_name='temp')",
                     "mv(source='final_report.pdf', destination='temp')"]
    assert gt[1][1].startswith("grep(")

    def check(turns):
        return check_multi_turn([[list(t)] if t else [] for t in turns], gt, item)

    # a state-changing call dropped
    v = check([gt[0][:1] + gt[0][2:]] + gt[1:])
    assert v.error_type == STATE_MISMATCH and v.details["turn"] == 0
    assert "GorillaFileSystem" in v.details["differences"]
    json.dumps(v.to_dict())  # details are JSON-safe even when they hold directories
    # a wrong argument
    v = check([gt[0][:2] + ["mv(source='final_report.pdf', destination='tmp')"]] + gt[1:])
    assert v.error_type == STATE_MISMATCH
    # a read-only call dropped: the state matches, its result is missing
    v = check([gt[0], gt[1][:1]] + gt[2:])
    assert v.error_type == RESPONSE_MISMATCH and v.details["turn"] == 1
    assert len(v.details["missing"]) == 1 and "matching_lines" in v.details["missing"][0]
    # a turn without any call
    v = check([gt[0], []] + gt[2:])
    assert v.error_type == EMPTY_TURN and v.details["turn"] == 1
    # one turn too many, one too few
    assert check(gt + [["ls()"]]).error_type == FORCE_TERMINATED
    assert check(gt[:-1]).error_type == FORCE_TERMINATED
    # the model result of a turn may come earlier: results are matched across all turns so far
    v = check([gt[0] + gt[1], ["pwd()"]] + gt[2:])
    assert v.valid, v.reason
    # extra calls that fail do no harm when the state and results are right
    v = check([gt[0] + ["garbage(((", "no_such()"], *gt[1:]])
    assert v.valid, v.reason


def test_irrelevance_rule_is_optional(data):
    item = next(it for it in data.items("multi_turn_miss_param")
                if any(not t for t in it.answer) and "GorillaFileSystem" in it.involved_classes)
    empty = next(i for i, t in enumerate(item.answer) if not t)
    turns = _steps(item.answer)
    assert check_multi_turn(turns, item.answer, item, check_irrelevance=True).valid
    turns[empty] = [["ls()"]]  # changes no state
    # BFCL's evaluation does not apply the rule: a call in the empty turn is not held against the model
    assert check_multi_turn(turns, item.answer, item).valid
    v = check_multi_turn(turns, item.answer, item, check_irrelevance=True)
    assert v.error_type == IRRELEVANCE_ERROR and v.details["turn"] == empty


@pytest.mark.parametrize("decoded", [
    None, "cd()", 3, [None], [[None, 3]], [["cd(folder='document')"]], [[[1, None, b"x"]]],
    [[["__import__('os').system('x')"]], [["(((("]], [[{"name": "cd"}]], [[]], [[]], [[]]],
])
def test_checker_never_raises_on_model_output(decoded, data):
    item = _item(data, "multi_turn_base_0")
    v = check_multi_turn(decoded, item.answer, item)
    assert not v.valid and v.error_type
    json.dumps(v.to_dict())


# --------------------------------------------------------------------------- the turn loop


def _hermes(calls):
    blocks = []
    for text in calls:
        name, args, kwargs = parse_call(text)
        env_args = kwargs
        if args:
            env_args = _bind(name, args, kwargs)
        blocks.append(f"<tool_call>\n{json.dumps({'name': name, 'arguments': env_args})}\n</tool_call>")
    return "<think>ok</think>\n" + "\n".join(blocks)


_SIGNATURES: dict[str, inspect.Signature] = {}


def _bind(name, args, kwargs):
    if not _SIGNATURES:
        for cls in load_api_classes().values():
            for n, f in inspect.getmembers(cls, predicate=inspect.isfunction):
                _SIGNATURES[n] = inspect.signature(f)
    bound = dict(_SIGNATURES[name].bind(None, *args, **kwargs).arguments)  # None: self
    bound.pop("self")
    return bound


def _replay_client(items):
    """A scripted model that answers each turn with that turn's ground truth, then stops."""
    by_first = {it.turns[0][0]["content"]: it for it in items}
    assert len(by_first) == len(items)

    def respond(request, _):
        users = [m for m in request.messages if m["role"] == "user"]
        real = [i for i, m in enumerate(request.messages)
                if m["role"] == "user" and not m["content"].startswith("<tool_response>")]
        item = by_first[users[0]["content"]]
        turn = len(real) - 1
        step = sum(1 for m in request.messages[real[-1]:] if m["role"] == "assistant")
        gt = item.answer[turn]
        if step == 0 and gt:
            return _hermes(gt)
        return "<think>done</think>\nAll done."

    return ScriptedClient(respond)


def test_run_multi_turn_replaying_ground_truth_is_valid(data):
    # different ids per category: the categories share their questions id by id
    items = data.items("multi_turn_base")[:6] + data.items("multi_turn_miss_func")[10:13] \
        + data.items("multi_turn_miss_param")[20:22] + data.items("multi_turn_long_context")[30:31]
    client = _replay_client(items)
    seen = []
    records = run_multi_turn(items, client, get_format("hermes"), GenerationConfig(max_new_tokens=64),
                             progress=lambda done, total: seen.append((done, total)))
    assert [r["id"] for r in records] == [it.id for it in items]
    assert len(client.calls[0]) == len(items)  # lockstep: the first step batches every item
    assert len(client.calls) == max(r["n_steps"] for r in records)
    assert seen[-1] == (len(items), len(items))
    for item, record in zip(items, records, strict=True):
        json.dumps(record)
        assert not record["force_quit"]
        assert len(record["raw"]) == len(record["decoded"]) == len(item.turns)
        assert record["n_steps"] == sum(len(t) for t in record["raw"])
        assert record["n_tokens"] > 0
        verdict = check_record(record, item)
        assert verdict.valid, (item.id, verdict.error_type, verdict.reason)
    # a held-back function is offered only from the turn that adds it
    miss = items[6]
    turn, docs = next(iter(miss.missed_function.items()))
    name = docs[0]["name"]
    for batch in client.calls:
        for req in batch:
            if req.messages[1]["content"] != miss.turns[0][0]["content"]:
                continue
            users = [m for m in req.messages if m["role"] == "user" and not m["content"].startswith("<tool_response>")]
            offered = f'"name":"{name}"' in req.messages[0]["content"]
            assert offered == (len(users) > int(turn))
            if len(users) > int(turn):
                assert users[int(turn)]["content"] == ADDED_FUNCTIONS_MESSAGE


def test_a_model_that_never_calls_fails_on_the_first_turn(data):
    items = _items(data, "multi_turn_base", 3)
    client = ScriptedClient(lambda req, i: "<think>hmm</think>\nI cannot help with that.")
    records = run_multi_turn(items, client, get_format("hermes"))
    for item, record in zip(items, records, strict=True):
        assert record["decoded"] == [[[]] for _ in item.turns]
        assert record["n_steps"] == len(item.turns)
        v = check_record(record, item)
        assert v.error_type == EMPTY_TURN and v.details["turn"] == 0
    assert len(client.calls) == max(len(it.turns) for it in items)


def test_step_limit_forces_quit(data):
    items = _items(data, "multi_turn_base", 2)
    assert all("GorillaFileSystem" in it.involved_classes for it in items)
    client = ScriptedClient(lambda req, i: '<tool_call>\n{"name": "ls", "arguments": {}}\n</tool_call>')
    records = run_multi_turn(items, client, get_format("hermes-nothink"), step_limit=3)
    for item, record in zip(items, records, strict=True):
        assert record["force_quit"]
        assert record["n_steps"] == 4  # BFCL quits after the step that goes over the limit
        assert len(record["decoded"]) == 1 and record["decoded"][0] == [["ls()"]] * 4
        assert check_record(record, item).error_type == FORCE_TERMINATED
    assert len(client.calls) == 4


def test_tool_results_reach_the_model(data):
    item = _item(data, "multi_turn_base_0")
    texts = iter([
        _hermes(["cd(folder='document')", "no_such_tool(x=1)"]),
        "<think>ok</think>\nDone.",
    ])
    prompts = []

    def respond(req, _):
        prompts.append(req.messages)
        return next(texts, "<think>ok</think>\nDone.")

    records = run_multi_turn([item], ScriptedClient(respond), get_format("hermes"))
    second = prompts[1]
    assert second[-1]["role"] == "user"
    assert '{"current_working_directory": "document"}' in second[-1]["content"]
    assert "Error during execution: name 'no_such_tool' is not defined" in second[-1]["content"]
    assert records[0]["decoded"][0] == [["cd(folder='document')", "no_such_tool(x=1)"], []]


def test_run_multi_turn_rejects_several_completions(data):
    with pytest.raises(ValueError):
        run_multi_turn(_items(data, "multi_turn_base", 1), ScriptedClient(lambda r, i: ""), get_format("hermes"),
                       GenerationConfig(n=2, temperature=1.0))


def test_verdicts_agree_with_bfcl_checker(data):
    """BFCL's own multi-turn checker, imported from the wheel, as an oracle on benign mutations of
    the ground truth (it runs ``eval`` on call strings, so only strings made here are fed to it)."""
    import random

    load_api_classes()
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    rng = random.Random(0)
    runs = iter(range(10**9))

    def official(decoded, item):
        if len(decoded) != len(item.answer):  # BFCL's runner checks this before the checker
            return FORCE_TERMINATED
        entry = {"initial_config": item.initial_config, "involved_classes": item.involved_classes, "id": item.id}
        steps = [[s for s in turn if s] for turn in decoded]  # the runner drops steps without calls
        result = multi_turn_checker(steps, item.answer, entry, item.category, f"tinytool_oracle_{next(runs)}")
        return None if result["valid"] else result["error_type"]

    def mutations(gt):
        full = [i for i, t in enumerate(gt) if t]
        yield _steps(gt)
        i = rng.choice(full)
        j = rng.randrange(len(gt[i]))
        yield [[t[:j] + t[j + 1:]] if k == i else [t] for k, t in enumerate(gt)]  # one call dropped
        yield [[] if k == i else [t] for k, t in enumerate(gt)]
        yield [[[c] for c in rng.sample(t, len(t))] for t in gt]
        yield [[t + [t[0]]] if t else [] for t in gt]
        yield [[t + ["no_such_function(a=1)", "garbage((("]] for t in gt]

    try:
        checked = 0
        for category in MULTI_TURN:
            for item in data.items(category)[:5]:
                for decoded in mutations(item.answer):
                    ours = check_multi_turn(decoded, item.answer, item).error_type
                    assert ours == official(decoded, item), (item.id, decoded)
                    checked += 1
        assert checked == 4 * 5 * 6
    finally:  # BFCL keeps every instance it made in its module globals
        for key in [k for k in vars(multi_turn_utils) if k.startswith("tinytool_oracle_")]:
            delattr(multi_turn_utils, key)
