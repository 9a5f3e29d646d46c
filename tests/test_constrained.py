"""Schema-constrained decoding (`tinytool.llm.constrain`) in the local engine: a random-weight tiny model under the
``required`` grammar always writes calls that parse and validate, under ``auto`` any call it opens does too, and
free decoding of the same model mostly does not; a grammar that allows everything changes nothing."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("llguidance")
torch = pytest.importorskip("torch")
jsonschema = pytest.importorskip("jsonschema")
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from tinytool.errors import TinytoolError
from tinytool.formats import get_format
from tinytool.llm.base import GenerationConfig, Request, chat_request
from tinytool.llm.constrain import (
    ConstraintError,
    LarkConstraint,
    ToolConstraint,
    check,
    grammar_bank,
    tool_constraint,
)
from tinytool.llm.hf import HFClient
from tinytool.models.loading import load_tokenizer
from tinytool.models.students import tiny_model
from tinytool.schema import Conversation, Message, Tool

FORMATS = ("hermes-nothink", "hermes", "toolrl")
NAMES = ("city", "unit", "count", "tags", "when", "options", "flag")


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer("smollm2-135m-instruct")


@pytest.fixture(scope="module")
def client(tok):
    """A tiny random model that ends its turn as soon as it may: its head favours the end-of-turn token (a
    random model would otherwise go on writing parallel calls until the token limit cuts one)."""
    model = tiny_model(tok, layers=2, seed=0)
    head = torch.nn.Linear(model.config.hidden_size, model.config.vocab_size, bias=True)
    with torch.no_grad():
        head.weight.copy_(model.lm_head.weight)
        head.bias.zero_()
        head.bias[tok.eos_token_id] = 12.0
    model.lm_head = head
    return HFClient(model, tok, batch_size=4, prefix_cache_mb=0)


# schemas whose every value is bounded, so a random model under the grammar always finishes a call
_leaf = st.one_of(
    st.just({"type": "string", "maxLength": 5}),
    st.lists(st.sampled_from(["red", "green", "blue", "dark grey"]), min_size=1, max_size=3, unique=True).map(
        lambda vals: {"type": "string", "enum": vals}),
    st.just({"type": "integer", "minimum": 0, "maximum": 99}),
    st.just({"type": "boolean"}),
)


def _objects(children):
    props = st.dictionaries(st.sampled_from(NAMES), children, min_size=1, max_size=3)
    return props.flatmap(lambda p: st.lists(st.sampled_from(sorted(p)), unique=True).map(
        lambda req: {"type": "object", "properties": p, "required": req}))


_node = st.recursive(_leaf, lambda ch: st.one_of(ch.map(lambda it: {"type": "array", "items": it, "maxItems": 2}),
                                                 _objects(ch)), max_leaves=5)
_tools = st.lists(_objects(_node), min_size=1, max_size=2).map(
    lambda params: [Tool(f"tool_{i}", f"Tool number {i}.", p) for i, p in enumerate(params)])


def _conv(tools):
    return Conversation([Message("user", "Please help.")], tools)


def _think(pf):
    """The empty reasoning block a format starts a call with (a random model never closes reasoning of its own)."""
    prefix = pf.call_prefix()
    return prefix[:prefix.index("<tool_call>")]


PROPERTY = settings(max_examples=20, deadline=None, derandomize=True,
                    phases=[Phase.explicit, Phase.reuse, Phase.generate],
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _valid_calls(fmt, text, tools):
    """The calls of ``text`` read strictly, each checked against its tool's schema; None when the text does not
    parse or a call does not validate."""
    parsed = get_format(fmt, strict=True).parse(text)
    if parsed.errors:
        return None
    by_name = {t.name: t for t in tools}
    for c in parsed.calls:
        if c.name not in by_name:
            return None
        try:
            jsonschema.validate(c.arguments, by_name[c.name].parameters)
        except jsonschema.ValidationError:
            return None
    return parsed.calls


@PROPERTY
@given(tools=_tools, fmt=st.sampled_from(FORMATS), seed=st.integers(0, 2**16))
@pytest.mark.slow(9)
def test_required_output_always_parses_and_validates(client, tools, fmt, seed):
    """Thinking formats start from an empty reasoning block, as the server starts a required call."""
    pf = get_format(fmt)
    think = _think(pf)
    prompt = chat_request(pf, _conv(tools), client.tokenizer).prompt + think
    requests = [Request([], prompt=prompt, seed=seed + k,
                        rules={"constraint": tool_constraint(tools, pf, "required", prefix=think)}) for k in range(2)]
    outs = client.generate(requests, GenerationConfig(max_new_tokens=300, temperature=1.0, seed=seed))
    finished = [c for (c,) in outs if c.finish_reason == "stop"]
    # a row the token budget cuts (a random model may go on adding parallel calls) cannot be checked: a grammar
    # constrains what the model writes, not how long it goes on
    assume(finished)
    for c in finished:
        calls = _valid_calls(fmt, think + c.text, tools)
        assert calls, c.text


@PROPERTY
@given(tools=_tools, fmt=st.sampled_from(FORMATS), seed=st.integers(0, 2**16))
@pytest.mark.slow(35)
def test_auto_a_call_once_opened_validates(client, tools, fmt, seed):
    """Under ``auto`` the answer starts with an opened call (as a server forces one): the model must finish it
    validly; with no prefix it may write text, and any call it writes validates."""
    pf = get_format(fmt)
    conv = _conv(tools)
    opened = pf.call_prefix()  # the start of a call (after an empty reasoning block where the format has one)
    base = chat_request(pf, conv, client.tokenizer).prompt
    forced = Request([], prompt=base + opened, rules={"constraint": tool_constraint(tools, pf, "auto", prefix=opened)})
    free = Request([], prompt=base, rules={"constraint": tool_constraint(tools, pf, "auto")})
    gen = GenerationConfig(max_new_tokens=800, temperature=1.0, seed=seed)
    (forced_out,), (free_out,) = client.generate([forced, free], gen)
    assume(forced_out.finish_reason == "stop")  # a call the token budget cuts cannot be checked
    assert _valid_calls(fmt, opened + forced_out.text, tools), opened + forced_out.text
    parsed = get_format(fmt, strict=True).parse(free_out.text)
    if free_out.finish_reason == "stop":  # a text answer, or calls that validate
        assert not parsed.errors or not parsed.calls
        assert parsed.calls == [] or _valid_calls(fmt, free_out.text, tools)


def test_free_decoding_of_the_same_model_mostly_fails(client):
    """The control: without the grammar the random model's answers almost never hold a valid call."""
    tools = [Tool("get_weather", "Weather.", {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 5}, "unit": {"type": "string", "enum": ["c", "f"]}},
        "required": ["city"]})]
    pf = get_format("hermes-nothink")
    prompt = chat_request(pf, _conv(tools), client.tokenizer).prompt + pf.call_prefix()
    gen = GenerationConfig(max_new_tokens=60, temperature=1.0, seed=0)
    free = client.generate([Request([], prompt=prompt, seed=s) for s in range(8)], gen)
    valid = [bool(_valid_calls("hermes-nothink", pf.call_prefix() + c.text, tools)) for (c,) in free]
    assert sum(valid) <= 2
    held = client.generate([Request([], prompt=prompt, seed=s, rules={"constraint": tool_constraint(
        tools, pf, "required", prefix=pf.call_prefix())}) for s in range(8)], GenerationConfig(
        max_new_tokens=300, temperature=1.0, seed=0))
    for (c,) in held:
        assert _valid_calls("hermes-nothink", pf.call_prefix() + c.text, tools), c.text


@pytest.mark.parametrize("continuous", [True, False])
def test_a_grammar_that_allows_everything_changes_nothing(tok, continuous):
    """Greedy decoding under a grammar that allows every token gives the unconstrained tokens, in continuous
    batching and in the padded fallback."""
    client = HFClient(tiny_model(tok, layers=2, seed=1), tok, batch_size=3, prefix_cache_mb=0, continuous=continuous)
    anything = LarkConstraint(text=f"start: <[0-{len(tok) - 1}]>*\n")
    prompts = ["<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n",
               "<|im_start|>user\nthe weather in Oslo, please<|im_end|>\n<|im_start|>assistant\n",
               "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "a b c d"]
    gen = GenerationConfig(max_new_tokens=24)
    free = client.generate([Request([], prompt=p) for p in prompts], gen)
    held = client.generate([Request([], prompt=p, rules={"constraint": anything if i % 2 == 0 else None})
                            for i, p in enumerate(prompts)], gen)
    assert [c[0].meta["token_ids"] for c in held] == [c[0].meta["token_ids"] for c in free]


@pytest.mark.parametrize("mode", ["required", "auto"])
def test_masking_only_refused_rows_gives_the_tokens_of_masking_every_row(tok, mode):
    """Continuous batching masks a row only when the grammar refuses its unmasked choice (`RowMasks.pick`); asking
    for entropies masks every row first (`RowMasks.apply`). Greedy, the two give the same tokens: a random model
    whose choices the grammar refuses at most steps (so the re-choice is exercised) and free rows beside."""
    client = HFClient(tiny_model(tok, layers=2, seed=4), tok, batch_size=4, prefix_cache_mb=0)
    tools = [Tool("lookup", "", {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 6}, "days": {"type": "integer", "minimum": 1, "maximum": 7},
        "units": {"type": "string", "enum": ["metric", "imperial"]}}, "required": ["city", "units"]})]
    pf = get_format("hermes-nothink")
    prefix = pf.call_prefix() if mode == "required" else ""
    base = chat_request(pf, _conv(tools), tok).prompt + prefix
    requests = [Request([], prompt=base + " " * k, rules={"constraint": tool_constraint(tools, pf, mode, prefix=prefix)})
                for k in range(3)] + [Request([], prompt="free text here")]
    lazy = client.generate(requests, GenerationConfig(max_new_tokens=60))
    eager = client.generate(requests, GenerationConfig(max_new_tokens=60, entropy=True))
    assert [c.meta["token_ids"] for (c,) in lazy] == [c.meta["token_ids"] for (c,) in eager]
    if mode == "required":  # the grammar held: every answer it finished is a valid call
        done = [c for (c,) in lazy[:3] if c.finish_reason == "stop"]
        assert all(_valid_calls("hermes-nothink", prefix + c.text, tools) for c in done), done


def test_named_and_required_in_the_padded_fallback(tok):
    client = HFClient(tiny_model(tok, layers=2, seed=2), tok, batch_size=2, prefix_cache_mb=0, continuous=False)
    tools = [Tool("a", "", {"type": "object", "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 9}},
                            "required": ["x"]}),
             Tool("b", "", {"type": "object", "properties": {}})]
    pf = get_format("hermes-nothink")
    named = Request([], prompt=chat_request(pf, _conv(tools), tok).prompt,
                    rules={"constraint": tool_constraint(tools, pf, "named", "a")})
    required = chat_request(pf, _conv(tools), tok, constrain="required")
    outs = client.generate([named, required, Request([], prompt="free")],
                           GenerationConfig(max_new_tokens=200, temperature=1.0, seed=3))
    calls = _valid_calls("hermes-nothink", outs[0][0].text, tools)
    assert [c.name for c in calls] == ["a"]
    assert _valid_calls("hermes-nothink", outs[1][0].text, tools)


def test_python_format_constrains_names_and_keywords(client):
    tools = [Tool("math.hypot", "", {"type": "object", "properties": {"x": {"type": "integer"},
                                                                     "y": {"type": "integer"}}}),
             Tool("noop", "", {"type": "object", "properties": {}})]
    pf = get_format("python")
    c = tool_constraint(tools, pf, "required", prefix="[")  # the list opened: no reasoning first
    outs = client.generate([Request([], prompt=chat_request(pf, _conv(tools), client.tokenizer).prompt + "[",
                                    rules={"constraint": c}, seed=s) for s in range(4)],
                           GenerationConfig(max_new_tokens=300, temperature=1.0))
    for (o,) in outs:
        assert o.text.startswith(("math.hypot(", "noop()")), o.text
        if o.finish_reason != "stop":  # a literal of a random model may run long
            continue
        parsed = get_format("python", strict=True).parse("[" + o.text)
        assert parsed.calls and not parsed.errors, o.text
        for call in parsed.calls:
            assert call.name in ("math.hypot", "noop") and set(call.arguments) <= {"x", "y"}


def test_grammars_are_compiled_once_per_tool_set(client):
    tools = [Tool("f", "", {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]})]
    bank = grammar_bank(client)
    before = bank.compiled
    pf = get_format("hermes-nothink")
    for _ in range(3):
        bank.matcher(tool_constraint(tools, pf, "required"))
    bank.matcher(tool_constraint([Tool(t.name, t.description, json.loads(json.dumps(t.parameters)))
                                  for t in tools], pf, "required"))  # an equal tool set, other objects
    assert bank.compiled == before + 1


def test_a_schema_that_cannot_compile_names_the_tool_and_the_feature():
    tools = [Tool("fine", "", {"type": "object", "properties": {}}),
             Tool("odd", "", {"type": "object", "properties": {"p": {"$ref": "#/definitions/missing"}}})]
    with pytest.raises(ConstraintError) as e:
        check(tool_constraint(tools, "hermes", "required"))
    assert isinstance(e.value, TinytoolError) and e.value.fix
    assert "'odd'" in str(e.value) and "missing" in str(e.value)


def test_constraint_arguments_are_checked():
    tools = [Tool("f", "")]
    for kwargs, words in [({"format": "nope"}, "format 'nope'"), ({"mode": "sometimes"}, "mode 'sometimes'"),
                          ({"mode": "named", "name": "g"}, "'g' is not among"), ({"mode": "named"}, "named")]:
        with pytest.raises(ConstraintError, match=words):
            ToolConstraint(tools=tuple(tools), **kwargs)
    with pytest.raises(ConstraintError, match="needs at least one tool"):
        tool_constraint([], "hermes", "required")


def test_http_backends_refuse_a_constraint():
    from tinytool.llm.openai_compat import OpenAIClient

    c = OpenAIClient("http://127.0.0.1:9/v1", "m")
    with pytest.raises(ConstraintError, match="local engine only"):
        c.generate([Request([{"role": "user", "content": "x"}], rules={"constraint": LarkConstraint(text="start: \"a\"")})],
                   GenerationConfig())


def test_eval_bfcl_and_demo_constrained_are_marked_so(tmp_path, client):
    """``eval bfcl --constrained`` and ``eval demo --constrained`` decode every item under its tools' auto grammar
    (the requests carry it) and say so in the summary and the report."""
    from tinytool.data.demo import write_demo
    from tinytool.eval.bfcl_runner import BFCLRunConfig, run_bfcl
    from tinytool.eval.demo_eval import run_demo_eval
    from tinytool.eval.report import load_run

    seen = []
    real = client.generate
    client.generate = lambda requests, config: seen.extend(requests) or real(requests, config)
    try:
        cfg = BFCLRunConfig(model="tiny", format="hermes-nothink", categories=["simple_python", "irrelevance"],
                            limit=2, max_new_tokens=16, batch_size=4, constrained=True)
        s = run_bfcl(cfg, tmp_path / "bfcl", client, progress=False)
        assert s["constrained"] is True and s["unconstrained"] == []
        assert seen and all(isinstance(r.rules["constraint"], ToolConstraint) and r.rules["constraint"].mode == "auto" for r in seen)
        assert load_run(tmp_path / "bfcl").label.endswith("(constrained)")
        write_demo(12, 3, tmp_path / "demo", dev_fraction=0.5)
        seen.clear()
        d = run_demo_eval("tiny", tmp_path / "demo" / "dev.jsonl", tmp_path / "demo-run", client,
                          fmt=get_format("hermes-nothink"), limit=3, max_new_tokens=16, progress=False, constrained=True)
        assert d["constrained"] is True and len(seen) == 3
        assert all(r.rules["constraint"] is not None for r in seen)
    finally:
        del client.generate


def test_an_item_whose_schema_cannot_compile_is_decoded_free_and_named():
    from tinytool.llm.constrain import auto_constraint

    impossible = Tool("tickets", "", {"type": "object", "properties": {"n": {"type": "integer", "enum": ["1", "2"]}},
                                      "required": ["n"]})
    constraint, why = auto_constraint([impossible], "hermes")
    assert constraint is None and "'tickets'" in why
    assert auto_constraint([], "hermes") == (None, None)


@pytest.fixture(scope="module")
def accepts(tok):
    """``accepts(constraint, text)``: whether the compiled grammar takes ``text`` (tokenized as the model would
    write it) whole."""
    from tinytool.llm.constrain import GrammarBank

    bank = GrammarBank(tok, len(tok), [tok.eos_token_id])

    def accepts(constraint, text):
        m = bank.matcher(constraint)
        ids = tok(text, add_special_tokens=False)["input_ids"]
        return m.try_consume_tokens(ids) == len(ids) and m.is_accepting()

    return accepts


def _answers(pf, mode, k):
    """An answer of ``k`` calls of ``f`` in ``pf``, as ``mode`` allows it (no text before a required hermes call)."""
    from tinytool.schema import ToolCall

    text = None if mode == "required" and pf.name.startswith("hermes") else "Calling."
    return pf.render_assistant(Message("assistant", text, tool_calls=[ToolCall("f", {"a": 1})] * k))


_F = [Tool("f", "", {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})]


@pytest.mark.parametrize("fmt", ["hermes-nothink", "hermes", "toolrl", "python"])
def test_parallel_false_allows_one_call(accepts, fmt):
    """``parallel=False`` (OpenAI's ``parallel_tool_calls: false``): one call, and no second one, in auto and
    required."""
    pf = get_format(fmt)
    for mode in ("auto", "required"):
        one, two = (_answers(pf, mode, k) for k in (1, 2))
        assert accepts(tool_constraint(_F, pf, mode), one) and accepts(tool_constraint(_F, pf, mode), two)
        single = tool_constraint(_F, pf, mode, parallel=False)
        assert accepts(single, one) and not accepts(single, two)


@pytest.mark.parametrize("fmt", ["hermes-nothink", "hermes", "toolrl", "python"])
def test_max_calls_bounds_the_number_of_calls(accepts, fmt):
    """``max_calls``: as many calls as that and no more, in auto and required; without it, any number."""
    pf = get_format(fmt)
    for mode in ("auto", "required"):
        answers = [_answers(pf, mode, k) for k in (1, 2, 3, 4)]
        assert [accepts(tool_constraint(_F, pf, mode, max_calls=3), a) for a in answers] == [True] * 3 + [False]
        assert [accepts(tool_constraint(_F, pf, mode, max_calls=1), a) for a in answers] == [True] + [False] * 3
        assert all(accepts(tool_constraint(_F, pf, mode), a) for a in answers)
    with pytest.raises(ConstraintError, match="max_calls 0"):
        tool_constraint(_F, pf, "required", max_calls=0)


# parameters schemas with references, as strict mode writes recursive ones, and documents on both sides of each
_NODE = {"type": "object", "properties": {"value": {"type": "integer"},
                                          "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
         "required": ["value"], "additionalProperties": False}
_TREE_DOCS = [{"root": {"value": 1}},
              {"root": {"value": 1, "children": [{"value": 2}, {"value": 3, "children": [{"value": 4}]}]}},
              {"root": {"value": 1, "children": [{"name": "tree", "arguments": {"value": 2}}]}},
              {"root": {"value": 1, "children": [{}]}},
              {"root": {"value": "1"}},
              {"value": 1}]
REFERENCES = {
    "$defs": ({"$defs": {"node": _NODE}, "type": "object", "properties": {"root": {"$ref": "#/$defs/node"}},
               "required": ["root"], "additionalProperties": False}, _TREE_DOCS),
    "definitions": (json.loads(json.dumps(
        {"definitions": {"node": _NODE}, "type": "object", "properties": {"root": {"$ref": "#/$defs/node"}},
         "required": ["root"], "additionalProperties": False}).replace("#/$defs/", "#/definitions/")), _TREE_DOCS),
    "root #": ({"type": "object", "properties": {"value": {"type": "integer"}, "child": {"$ref": "#"}},
                "required": ["value"], "additionalProperties": False},
               [{"value": 1}, {"value": 1, "child": {"value": 2}}, {"value": 1, "child": {"value": 2, "child": {
                   "value": 3}}}, {"value": 1, "child": {"name": "tree", "arguments": {"value": 2}}},
                {"value": 1, "child": {}}, {"child": {"value": 1}}]),
}


@pytest.mark.parametrize("kind", sorted(REFERENCES))
def test_references_keep_their_meaning_inside_the_call(accepts, kind):
    """A parameters schema's references (a recursive ``$defs`` or ``definitions`` entry, the root ``#``) point where
    they pointed once the schema sits inside the call object: the grammar compiles in every mode, and takes exactly
    the arguments that ``jsonschema`` takes under the tool's own schema."""
    from tinytool.schema import ToolCall

    params, docs = REFERENCES[kind]
    tools = [Tool("tree", "A tree.", params), Tool("other", "", {"type": "object", "properties": {}})]
    pf = get_format("hermes-nothink")
    validator = jsonschema.Draft202012Validator(params)
    constraints = [tool_constraint(tools, pf, "auto"), tool_constraint(tools, pf, "required"),
                   tool_constraint(tools, pf, "named", "tree")]
    for c in constraints:
        check(c)
    verdicts = []
    for doc in docs:
        text = pf.render_assistant(Message("assistant", tool_calls=[ToolCall("tree", doc)]))
        verdicts.append(validator.is_valid(doc))
        for c in constraints:
            assert accepts(c, text) == verdicts[-1], (kind, c.mode, doc)
    assert True in verdicts and False in verdicts  # both sides checked


def test_a_reference_that_points_nowhere_names_the_tool():
    params = {"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/gone"}}}},
              "type": "object", "properties": {"root": {"$ref": "#/$defs/node"}}}
    tools = [Tool("fine", "", {"type": "object", "properties": {}}), Tool("tree", "", params)]
    for mode in ("auto", "required"):
        with pytest.raises(ConstraintError) as e:
            check(tool_constraint(tools, "hermes", mode))
        assert "'tree'" in str(e.value) and "gone" in str(e.value)


def _mixed_tools(n: int) -> list[Tool]:
    """``n`` tools of the schemas strict clients send together: an enum, a nested object, an array with
    ``minItems``, a boolean, a dotted name, and one tool without ``strict`` closing."""
    shapes = [
        {"type": "object", "properties": {"unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["unit"],
         "additionalProperties": False},
        {"type": "object", "properties": {"where": {"type": "object", "properties": {
            "city": {"type": "string"}, "zip": {"type": "integer"}}, "required": ["city", "zip"],
            "additionalProperties": False}}, "required": ["where"], "additionalProperties": False},
        {"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "integer"}, "minItems": 2}},
         "required": ["ids"], "additionalProperties": False},
        {"type": "object", "properties": {"on": {"type": "boolean"}}, "required": ["on"],
         "additionalProperties": False},
        {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"],
         "additionalProperties": False},
        {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    ]
    names = ["weather_get", "ship_to", "merge_ids", "switch", "math.gcd", "search"]
    return [Tool(f"{names[i % 6]}{'' if i < 6 else f'_{i}'}", "", shapes[i % 6]) for i in range(n)]


@pytest.mark.parametrize("fmt", ["hermes-nothink", "hermes", "toolrl", "python"])
def test_many_tools_compile_under_a_per_tool_bound_of_calls(accepts, fmt):
    """``required`` and ``auto`` with 1 to 20 tools of mixed schemas and the server's bound of 8 calls per tool (160
    calls for 20 tools) compile, and the bound still holds: an answer of that many calls passes, one more does not."""
    pf = get_format(fmt)
    for n in range(1, 21):
        tools = _mixed_tools(n)
        for mode in ("required", "auto"):
            check(tool_constraint(tools, pf, mode, max_calls=8 * n))
    one = [Tool("f", "", {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})]
    for mode in ("required", "auto"):
        c = tool_constraint([*one, *_mixed_tools(5)], pf, mode, max_calls=48)
        assert accepts(c, _answers(pf, mode, 48)) and not accepts(c, _answers(pf, mode, 49))
