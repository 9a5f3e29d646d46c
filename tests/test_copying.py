"""The copy bias (`tinytool.llm.copying`): where a call's JSON stands, which tokens keep a value a copy of the
request, the bias applied to those only, and the engine writing copies under it where a random model writes
anything."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytool.formats import get_format
from tinytool.llm.copying import CopyRow, CopySpec, CopyTokens, apply_bias, copy_spec, where
from tinytool.schema import Conversation, Message, Tool

HERMES = get_format("hermes-nothink")
DISH = Tool("recipe", "", {"type": "object", "properties": {"dish": {"type": "string"}, "serves": {"type": "integer"}},
                           "required": ["dish"]})
#: a toy vocabulary: token i writes VOCAB[i]
VOCAB = ["C", "Ca", "esar", "es", "ar", " Salad", " Sal", "ad", '"', '",', '"}', ' "', '"Ca', '"Xy', "5", "0", "000", " 5", " ",
         ",", "}", "}}", "x", "Ces", "\\", "]"]
TOKENS = CopyTokens.read(VOCAB)


def _spec(request: str, bias: float = 2.0, tools=(DISH,)) -> CopySpec:
    spec, why = copy_spec(Conversation([Message("user", request)], list(tools)), HERMES, bias=bias)
    assert why is None
    return spec


def _texts(ids: set[int]) -> set[str]:
    return {VOCAB[i] for i in ids}


def test_where_reads_the_value_being_written_and_nothing_else():
    head = '\n{"name": "recipe", "arguments": {'
    assert where(head + '"dish": "Ca') == ("string", "Ca")
    assert where(head + '"serves": 50') == ("number", "50")
    assert where(head + '"serves": -') == ("number", "-")
    assert where(head + '"dish": ') == ("value", "")
    assert where(head + '"dish": ["a", ') == ("value", "")
    assert where(head + '"dish": {"k": "q') == ("string", "q")  # a nested object's value
    assert where(head + '"dish": {"k') is None  # a nested key
    assert where(head + '"di') is None  # a key
    assert where('\n{"name": "reci') is None  # the function's name
    assert where(head + '"dish": "x", ') is None  # between values: a key comes next
    assert where(head + '"dish": "x"') is None
    assert where(head + '"dish": "a \\"q') == ("string", 'a "q')  # an escaped quote stays inside
    assert where(head + '"dish": 1}}') is None  # the call closed
    assert where(head + '"dish": true') is None


def test_the_vocabulary_is_read_into_pieces_closers_openers_and_enders():
    assert _texts(set(TOKENS.pieces["ca"])) == {"Ca"} and "\\" not in TOKENS.pieces
    assert _texts(set(TOKENS.closers[""])) == {'"', '",', '"}'}
    assert _texts(set(TOKENS.openers[""])) == {'"', ' "'} and _texts(set(TOKENS.openers["ca"])) == {'"Ca'}
    assert _texts(set(TOKENS.enders)) == {",", "}", "}}", "]"}


def test_a_string_is_kept_a_span_of_the_request_and_closed_only_at_a_word_end():
    spec = _spec("A recipe for Caesar Salad, please")
    assert _texts(spec.string_tokens("Ca", TOKENS)) == {"es", "esar"}  # inside a word: no closing
    assert "es" not in _texts(spec.string_tokens("C", TOKENS))  # "Ces" is no span
    assert _texts(spec.string_tokens("Caesar", TOKENS)) == {" Salad", " Sal", " ", '"', '",', '"}'}  # a word's end
    assert _texts(spec.string_tokens("Caesar Sal", TOKENS)) == {"ad"}
    assert _texts(spec.string_tokens("caesar salad", TOKENS)) == {'"', '",', '"}', ","}  # case ignored
    assert spec.string_tokens("Cesar", TOKENS) == set()  # a miscopy: nothing to keep copying
    opening = _texts(spec.string_tokens("", TOKENS, opening=True))
    assert {'"', ' "', '"Ca'} <= opening and '"Xy' not in opening


def test_a_string_copy_starts_at_a_word_start():
    spec = _spec("A recipe for Caesar Salad at tempo 5000")
    first = _texts(spec.string_tokens("", TOKENS))
    assert {"C", "Ca", "5"} <= first
    assert not first & {"Ces", "es", "esar", "ar", "ad", "0", "000", " Salad"}  # inside a word ("000" of 5000): no copy
    assert spec.string_tokens("es", TOKENS) == set() and spec.string_tokens("00", TOKENS) == set()
    assert _texts(spec.string_tokens("50", TOKENS)) == {"0"}  # a copy begun at the word's start goes on


def test_a_number_is_kept_the_start_of_a_stated_number_in_any_of_its_forms():
    spec = _spec("Net income of $5,000,000 at 5% for 2 million users")
    assert set(spec.numbers) >= {"5000000", "5", "0.05", "2", "2000000"}
    assert _texts(spec.number_tokens("5000", TOKENS)) == {"0", "000"}  # 5000 is no stated number: go on
    assert _texts(spec.number_tokens("5000000", TOKENS)) == {",", "}", "}}", "]"}  # whole: it may end
    assert "5" in _texts(spec.number_tokens("", TOKENS)) and " 5" not in _texts(spec.number_tokens("", TOKENS))
    assert " 5" in _texts(spec.number_tokens("", TOKENS, lead=" "))  # a first token carrying the separator's space
    assert spec.number_tokens("7", TOKENS) == set()


def test_a_row_favours_only_inside_a_value_of_an_open_call():
    spec = _spec("A recipe for Caesar Salad for 5")
    row = CopyRow(spec)
    row.text = 'Sure: Ca'
    assert row.favoured(TOKENS) == set()  # text, no call open
    row.text = '<tool_call>\n{"name": "recipe", "arguments": {"dish": "Caesar'
    assert " Salad" in _texts(row.favoured(TOKENS))
    row.text += ' Salad", "serves":'
    assert {" 5", " "} <= _texts(row.favoured(TOKENS))  # the separator's space may come first
    row.text += " "
    assert {"5", " 5", " "} & _texts(row.favoured(TOKENS)) == {"5"}
    row.text += '5}}\n</tool_call>'
    assert row.favoured(TOKENS) == set()


def test_apply_bias_raises_only_the_favoured_tokens_of_biased_rows():
    torch = pytest.importorskip("torch")
    spec = _spec("A recipe for Caesar Salad", bias=3.0)
    row = CopyRow(spec)
    row.text = '<tool_call>\n{"name": "recipe", "arguments": {"dish": "Caesar Sal'
    logits = torch.zeros((3, len(VOCAB)))
    logits[0, VOCAB.index("x")] = float("-inf")  # a token the grammar refused stays refused
    off = CopyRow(_spec("A recipe for Caesar Salad", bias=0.0))
    off.text = row.text
    out = apply_bias([row, None, off], logits, TOKENS)
    assert out[0, VOCAB.index("ad")] == 3.0 and out[0].eq(3.0).sum() == 1
    assert torch.isinf(out[0, VOCAB.index("x")])
    assert out[1].eq(0).all() and out[2].eq(0).all()


def test_formats_without_json_calls_and_requests_without_tools_get_no_bias():
    spec, why = copy_spec(Conversation([Message("user", "x")], [DISH]), get_format("python"))
    assert spec is None and "hermes" in why
    spec, why = copy_spec(Conversation([Message("user", "x")], []), HERMES)
    assert spec is None and "no tools" in why


_json_text = st.lists(st.sampled_from(list('{}[]":, abc0123.\\-\n') + ["<tool_call>", "</tool_call>",
                                                                       '{"name": "recipe", "arguments": {']),
                      max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(request=st.text(max_size=80), text=_json_text, vocab=st.lists(st.text(max_size=6), max_size=30))
def test_the_copy_bias_never_raises(request, text, vocab):
    tokens = CopyTokens.read(vocab)
    row = CopyRow(_spec(request))
    row.text = text
    assert row.favoured(tokens) <= set(range(len(vocab)))
    assert where(text) is None or where(text)[0] in ("string", "number", "value")


@pytest.mark.parametrize("continuous", [True, False])
def test_the_engine_writes_copies_of_the_request_under_a_strong_bias(continuous):
    """A random tiny model under the ``required`` grammar writes one call of ``recipe``; under a large copy bias each
    finished answer's dish is a span of the request that ends at a word's end, where free it writes other text."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("llguidance")
    from tinytool.llm.base import GenerationConfig, Request, chat_request
    from tinytool.llm.constrain import tool_constraint
    from tinytool.llm.hf import HFClient
    from tinytool.models.loading import load_tokenizer
    from tinytool.models.students import tiny_model

    torch.set_num_threads(1)
    tok = load_tokenizer("smollm2-135m-instruct")
    client = HFClient(tiny_model(tok, layers=2, seed=5), tok, batch_size=4, prefix_cache_mb=0, continuous=continuous)
    request = "A recipe for Caesar Salad to serve 12 people."
    conv = Conversation([Message("user", request)], [DISH])
    prompt = chat_request(HERMES, conv, tok).prompt
    constraint = tool_constraint([DISH], HERMES, "required", parallel=False)
    config = GenerationConfig(max_new_tokens=60, temperature=1.0)

    def answers(rules: dict) -> list[dict]:
        out = []
        for (o,) in client.generate([Request([], prompt=prompt, rules=rules, seed=s) for s in range(6)], config):
            if o.finish_reason == "stop":
                out.append(json.loads(o.text.split("<tool_call>")[1].split("</tool_call>")[0])["arguments"])
        return out

    low = request.lower()
    copied = answers({"constraint": constraint, "copy": _spec(request, bias=60.0)})
    assert copied
    for args in copied:
        dish = args["dish"].lower()
        assert dish in low, args
        end = low.find(dish) + len(dish)
        assert dish and (end == len(low) or not low[end].isalnum()), args
        assert "serves" not in args or args["serves"] == 12, args
    free = answers({"constraint": constraint})
    assert any(args["dish"].lower() not in low for args in free), "the test needs a model that writes other text"


def test_eval_bfcl_records_the_copy_bias_and_refuses_it_where_it_cannot_apply(tmp_path, spied_tiny_client):
    """``eval bfcl --copy-bias B`` gives every request its copy spec with bias B and records B in its summary; a
    format whose calls it cannot read is refused before anything loads."""
    pytest.importorskip("torch")
    from typer.testing import CliRunner

    from tinytool.cli import app
    from tinytool.eval.bfcl_runner import BFCLRunConfig, run_bfcl

    client, seen = spied_tiny_client
    cfg = BFCLRunConfig(model="tiny", format="hermes-nothink", categories=["simple_python"], limit=2,
                        max_new_tokens=8, batch_size=4, copy_bias=1.5)
    s = run_bfcl(cfg, tmp_path / "bfcl", client, progress=False)
    assert s["copy_bias"] == 1.5 and s["value_guard"] is False and len(seen) == 2
    assert all(isinstance(r.rules["copy"], CopySpec) and r.rules["copy"].bias == 1.5 for r in seen)
    result = CliRunner().invoke(app, ["eval", "bfcl", "-m", "smollm2-135m-instruct", "-f", "python",
                                      "--categories", "simple_python", "--limit", "1", "--copy-bias", "2",
                                      "-o", str(tmp_path / "run")])
    assert result.exit_code == 2 and "copy bias" in result.output and "python" in result.output, result.output
    assert not (tmp_path / "run").exists()
    result = CliRunner().invoke(app, ["eval", "bfcl", "-m", "smollm2-135m-instruct", "--copy-bias", "-1",
                                      "-o", str(tmp_path / "run2")])
    assert result.exit_code == 2 and "copy" in result.output, result.output
