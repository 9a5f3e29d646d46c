"""Dataset converters (tinytool.data.convert), `data stats`, and their CLI, on the fixtures in
tests/fixtures/ — each fixture holds good records and at least one bad one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tinytool.data.cli_convert import convert_app
from tinytool.data.convert import (
    CONVERTERS,
    ConvertReport,
    bfcl_category,
    convert,
    get_converter,
    iter_converted,
    mask_names,
)
from tinytool.data.stats import dataset_stats
from tinytool.schema import Conversation, SchemaError, read_jsonl

FX = Path(__file__).parent / "fixtures"
BFCL_Q = FX / "bfcl" / "BFCL_v4_sample.json"
BFCL_A = FX / "bfcl" / "possible_answer" / "BFCL_v4_sample.json"

# format, fixture, options, (records read, conversations kept), file:line of the first bad record, its field
CASES = [
    ("xlam", "xlam_fc60k.json", {}, (5, 3), 5, "answers"),
    ("hammer", "hammer_xlam_irrelevance.json", {}, (4, 3), 5, "tools[0].name"),
    ("toolace", "toolace.json", {}, (4, 3), 5, "conversations[1].value"),
    ("glaive", "glaive_fc_v2.json", {}, (4, 3), 5, "chat.turns[1].functioncall"),
    ("sharegpt", "hermes_fc_v1.json", {}, (4, 3), 5, "conversations[2].value"),
    ("openai", "openai_messages.jsonl", {}, (4, 3), 4, "messages[1].role"),
    ("bfcl", "bfcl/BFCL_v4_sample.json", {"answers": BFCL_A}, (6, 5), 6, "question[0][0].role"),
]


def _convert(fmt: str, path: Path, **opts) -> tuple[list[Conversation], ConvertReport]:
    report = ConvertReport()
    convs = list(iter_converted(fmt, path, skip_bad=True, report=report, **opts))
    return convs, report


def _calls(conv: Conversation) -> list[tuple[str, dict]]:
    return [(c.name, c.arguments) for m in conv.messages for c in m.tool_calls]


def test_every_format_has_a_fixture():
    assert {c[0] for c in CASES} == set(CONVERTERS)


@pytest.mark.parametrize("fmt,fixture,opts,counts,bad_line,bad_field", CASES, ids=[c[0] for c in CASES])
def test_fixture_converts_and_round_trips(tmp_path, fmt, fixture, opts, counts, bad_line, bad_field):
    out = tmp_path / "out.jsonl"
    report = convert(fmt, FX / fixture, out, skip_bad=True, **opts)
    assert (report.n_in, report.n_out) == counts
    assert report.n_dropped == counts[0] - counts[1]
    convs = read_jsonl(out)  # the written file is valid Conversation JSONL
    assert len(convs) == counts[1]
    for conv in convs:
        assert conv.meta["source"] == fmt and "id" in conv.meta and conv.meta["category"]
        if fmt != "bfcl":
            assert conv.call_problems() == []


@pytest.mark.parametrize("fmt,fixture,opts,counts,bad_line,bad_field", CASES, ids=[c[0] for c in CASES])
def test_bad_record_names_file_line_field(tmp_path, fmt, fixture, opts, counts, bad_line, bad_field):
    out = tmp_path / "out.jsonl"
    with pytest.raises(SchemaError) as info:
        convert(fmt, FX / fixture, out, **opts)
    err = info.value
    assert err.file == str(FX / fixture) and err.line == bad_line and err.field == bad_field
    assert str(err).startswith(f"{FX / fixture}:{bad_line}: {bad_field}: ")
    assert not out.exists() and not (tmp_path / "out.jsonl.tmp").exists()  # nothing half-written


def test_skip_bad_counts_by_reason():
    _, report = _convert("xlam", FX / "xlam_fc60k.json")
    assert report.n_dropped == 2 and len(report.dropped) == 2
    reasons = " | ".join(report.dropped)
    assert "answers: not valid JSON" in reasons and "not among the offered tools" in reasons
    assert all(re.match(r".*xlam_fc60k\.json:\d+: ", ex) for ex in report.examples.values())
    assert "dropped 2" in report.summary()
    # the reason key groups one kind of fault however the offending values differ
    assert "get_stock_price" not in reasons and "JSON array record" not in reasons


def test_xlam_tools_calls_categories():
    convs, _ = _convert("xlam", FX / "xlam_fc60k.json")
    by_id = {c.meta["id"]: c for c in convs}
    first = by_id[0]
    assert [m.role for m in first.messages] == ["user", "assistant"]
    tool = first.tools[0]
    assert tool.name == "weather_forecast" and tool.required == ("location",)  # "int, optional" → optional
    assert tool.parameters["properties"]["days"]["type"] == "integer"
    assert _calls(first) == [("weather_forecast", {"location": "Lisbon", "days": 7, "units": "metric"})]
    assert [by_id[i].meta["category"] for i in (0, 1, 2)] == ["simple", "parallel_multiple", "multiple"]
    assert [n for n, _ in _calls(by_id[1])] == ["convert_currency", "convert_currency", "stock_quote"]
    assert by_id[2].tools[0].parameters["properties"]["ingredients"] == {
        "description": "Ingredients to use.", "type": "array", "items": {"type": "string"}}


def test_toolace_names_with_spaces_and_multi_turn():
    convs, _ = _convert("toolace", FX / "toolace.json")
    rate, trip, refusal = convs
    assert _calls(rate) == [("Get Exchange Rate", {"base": "USD", "target": "CHF"})]
    assert [m.role for m in rate.messages] == ["user", "assistant", "tool", "assistant"]
    assert rate.messages[2].name == "Get Exchange Rate" and json.loads(rate.messages[2].content)["rate"] == 0.8812
    assert rate.tools[0].parameters["type"] == "object"  # BFCL-style "dict" normalized
    assert trip.meta["category"] == "multi_turn"
    assert _calls(trip) == [
        ("searchFlights", {"origin": "LIS", "destination": "BER", "date": "2024-06-03", "max_stops": 0}),
        ("Hotel Availability", {"city": "Berlin", "check_in": "2024-06-03", "nights": 4})]
    assert [m.name for m in trip.messages if m.role == "tool"] == ["searchFlights", "Hotel Availability"]
    assert refusal.meta["category"] == "no_call" and refusal.messages[-1].content.startswith("I can't")
    assert all(m.role != "system" for c in convs for m in c.messages)  # ToolACE's format prompt is dropped


def test_glaive_single_quoted_arguments():
    convs, _ = _convert("glaive", FX / "glaive_fc_v2.json")
    email, no_tools, bmi = convs
    (name, args), = _calls(email)
    assert name == "send_email" and args["body"].endswith("It's the final version.")  # apostrophe survives
    assert [m.role for m in email.messages] == ["user", "assistant", "tool", "assistant"]
    assert email.messages[2].name == "send_email" and "<|endoftext|>" not in email.messages[-1].content
    assert no_tools.tools == [] and no_tools.meta["category"] == "no_call"
    assert [t.name for t in bmi.tools] == ["calculate_bmi", "calculate_tip"]
    assert _calls(bmi) == [("calculate_bmi", {"weight": 72, "height": 1.78})]
    assert bmi.meta["category"] == "multi_turn" and bmi.messages[-1].content.startswith("Yes")


def test_sharegpt_hermes():
    convs, _ = _convert("sharegpt", FX / "hermes_fc_v1.json")
    camera, evening, think = convs
    # Python-literal tools in <tools> and a Python-dict call, as hermes-function-calling-v1 writes them
    assert [t.name for t in camera.tools] == ["get_camera_feed"]
    assert _calls(camera) == [("get_camera_feed", {"camera_id": "front_door", "quality": "1080p"})]
    assert camera.meta["source_category"] == "IoT and Home Automation"
    assert all(m.role != "system" for m in camera.messages)
    assert evening.meta["category"] == "parallel_multiple"
    tools = [m for m in evening.messages if m.role == "tool"]
    assert [m.name for m in tools] == ["set_thermostat", "switch_lights"]
    assert json.loads(tools[1].content) == {"room": "kitchen", "on": False}
    assert think.tools[0].name == "switch_lights"  # from the record's "tools" field
    assert think.messages[-1].reasoning.startswith("The user wants")
    assert _calls(think) == [("switch_lights", {"room": "office", "on": True})]


def test_openai_including_legacy_functions():
    convs, _ = _convert("openai", FX / "openai_messages.jsonl")
    modern, legacy, chat = convs
    assert _calls(modern) == [("get_weather", {"city": "Madrid", "unit": "celsius"})]
    assert modern.messages[0].role == "system" and modern.messages[3].tool_call_id == "call_1"
    assert [t.name for t in legacy.tools] == ["get_weather"]
    assert _calls(legacy) == [("get_weather", {"city": "Oslo", "unit": "fahrenheit"})]
    assert legacy.messages[2].role == "tool" and legacy.messages[2].name == "get_weather"
    assert chat.meta["category"] == "no_call" and chat.meta["id"] == "oa-3"


def test_bfcl_questions_with_possible_answers():
    convs, _ = _convert("bfcl", BFCL_Q, answers=BFCL_A)
    by_id = {c.meta["id"]: c for c in convs}
    simple = by_id["simple_python_0"]
    assert simple.meta["category"] == "simple_python"
    assert simple.tools[0].name == "finance.compound_interest"
    assert simple.tools[0].parameters["properties"]["rate"]["type"] == "number"  # "float"
    assert _calls(simple) == [("finance.compound_interest", {"principal": 5000, "rate": 0.04, "years": 3, "n": 12})]
    assert simple.meta["possible_answer"][0]["finance.compound_interest"]["rate"] == [0.04]
    pm = by_id["parallel_multiple_0"]
    assert _calls(pm) == [("astronomy.sunrise", {"city": "Oslo"}),  # [""] only: left out
                          ("astronomy.sunrise", {"city": "Reykjavik"}),
                          ("unit_convert_weight", {"value": 12.0, "from_unit": "lb", "to_unit": "kg"})]
    live = by_id["live_multiple_0-0-0"]
    assert live.meta["category"] == "live_multiple" and live.messages[0].role == "system"
    assert _calls(live) == [("find_restaurants", {"city": "Lyon", "filters": {"cuisine": "Thai", "max_price": 20}})]
    irr = by_id["irrelevance_0"]
    assert [m.role for m in irr.messages] == ["user"] and "possible_answer" not in irr.meta
    mt = by_id["multi_turn_base_0"]
    assert mt.meta["n_turns"] == 2 and mt.meta["involved_classes"] == ["GorillaFileSystem"]
    assert mt.meta["possible_answer"] == [["cd(folder='docs')"], ["ls()"]] and _calls(mt) == []


def test_bfcl_without_answers_has_no_assistant_turns():
    convs, _ = _convert("bfcl", BFCL_Q)
    assert all(m.role != "assistant" for c in convs for m in c.messages)
    assert all("possible_answer" not in c.meta for c in convs)


def test_bfcl_category():
    assert bfcl_category("simple_python_12") == "simple_python"
    assert bfcl_category("live_parallel_multiple_3-2-0") == "live_parallel_multiple"
    assert bfcl_category("multi_turn_miss_func_7") == "multi_turn_miss_func"


# ---- Hammer masking ------------------------------------------------------------------------

def _assert_consistent(conv: Conversation) -> None:
    by_name = {t.name: t for t in conv.tools}
    for name, args in _calls(conv):
        assert name in by_name, name
        assert set(args) <= by_name[name].param_names
        assert set(by_name[name].required) <= set(args)
    for t in conv.tools:
        assert set(t.required) <= t.param_names


def test_hammer_masking_is_consistent_and_deterministic():
    convs, _ = _convert("hammer", FX / "hammer_xlam_irrelevance.json", seed=7)
    plain, _ = _convert("xlam", FX / "hammer_xlam_irrelevance.json")
    for masked, orig in zip(convs, plain):
        _assert_consistent(masked)
        fn_map = masked.meta["masked"]["functions"]
        assert set(fn_map) == {t.name for t in orig.tools}
        assert not set(fn_map.values()) & set(fn_map)  # every name changed
        assert [t.description for t in masked.tools] == [t.description for t in orig.tools]  # descriptions kept
        for (mn, margs), (on, oargs) in zip(_calls(masked), _calls(orig)):
            assert fn_map[on] == mn
            assert sorted(margs.values(), key=repr) == sorted(oargs.values(), key=repr)
    again, _ = _convert("hammer", FX / "hammer_xlam_irrelevance.json", seed=7)
    assert [c.to_dict() for c in again] == [c.to_dict() for c in convs]
    other, _ = _convert("hammer", FX / "hammer_xlam_irrelevance.json", seed=8)
    assert [c.to_dict() for c in other] != [c.to_dict() for c in convs]
    assert convs[0].meta["synthetic_reply"] and convs[0].meta["category"] == "no_call"


def test_mask_prob_zero_leaves_names_and_any_format_can_mask():
    unmasked, _ = _convert("hammer", FX / "hammer_xlam_irrelevance.json", mask_prob=0.0, seed=3)
    plain, _ = _convert("xlam", FX / "hammer_xlam_irrelevance.json")
    assert [(c.to_dict()["tools"], c.to_dict()["messages"]) for c in unmasked] == \
           [(c.to_dict()["tools"], c.to_dict()["messages"]) for c in plain]
    toolace, _ = _convert("toolace", FX / "toolace.json", mask_prob=1.0, seed=1)
    for conv in toolace:
        _assert_consistent(conv)
        names = {t.name for t in conv.tools}
        assert all(m.name in names for m in conv.messages if m.role == "tool")


def test_mask_prob_is_a_share_of_samples():
    import random

    conv = Conversation.from_dict({"messages": [{"role": "user", "content": "x"}], "tools": [
        {"name": f"f{i}", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}} for i in range(3)]})
    from tinytool.data.convert import apply_masking

    masked = sum("masked" in apply_masking(conv, 0.3, seed=0, index=i).meta for i in range(400))
    assert 80 < masked < 160
    assert mask_names(conv, random.Random(0)).tools[0].name != "f0"


def test_unknown_format_and_option():
    with pytest.raises(ValueError, match="unknown format"):
        get_converter("nope")
    with pytest.raises(ValueError, match="does not take answers"):
        get_converter("xlam", answers="x.json")


def test_jsonl_line_that_is_not_json(tmp_path):
    src = tmp_path / "in.jsonl"
    good = json.dumps({"messages": [{"role": "user", "content": "hi"}]})
    src.write_text(f"{good}\n\n{{not json\n{good}\n")
    with pytest.raises(SchemaError, match=r"in\.jsonl:3: not valid JSON"):
        convert("openai", src, tmp_path / "out.jsonl")
    report = convert("openai", src, tmp_path / "out.jsonl", skip_bad=True)
    assert (report.n_in, report.n_out, report.n_dropped) == (3, 2, 1)


# ---- stats ---------------------------------------------------------------------------------

def test_stats_counts(tmp_path):
    out = tmp_path / "xlam.jsonl"
    convert("xlam", FX / "xlam_fc60k.json", out, skip_bad=True)
    stats = dataset_stats(out)
    assert stats["n"] == 3
    assert stats["categories"] == {"simple": 1, "parallel_multiple": 1, "multiple": 1}
    assert stats["calls_per_sample"] == {"0": 0, "1": 2, "2": 0, "3+": 1, "mean": round(5 / 3, 2)}
    assert (stats["tools_per_sample"]["min"], stats["tools_per_sample"]["max"]) == (1, 2)
    assert stats["messages_per_sample"]["mean"] == 2
    assert stats["length"]["unit"] == "words" and stats["length"]["min"] > 10
    assert stats["chars"]["max"] >= stats["chars"]["min"] > stats["length"]["max"]


def test_stats_with_a_tokenizer_object():
    convs, _ = _convert("toolace", FX / "toolace.json")

    class CharTokenizer:
        def encode(self, text):
            return list(text)

    stats = dataset_stats(convs, tokenizer=CharTokenizer())
    assert stats["length"]["unit"] == "tokens" and stats["length"]["max"] == stats["chars"]["max"]
    stats = dataset_stats([c.to_dict() for c in convs], tokenizer=lambda t: {"input_ids": t.split()})
    assert stats["length"]["unit"] == "tokens" and stats["categories"]["multi_turn"] == 1
    assert dataset_stats([])["n"] == 0


# ---- CLI -----------------------------------------------------------------------------------

runner = CliRunner()


def test_cli_convert_and_stats(tmp_path):
    out = tmp_path / "bfcl.jsonl"
    args = ["convert", "--from", "bfcl", str(BFCL_Q), "--out", str(out), "--answers", str(BFCL_A)]
    res = runner.invoke(convert_app, args)  # a bad record is a user error: exit 2, its place and the fix
    assert res.exit_code == 2 and "BFCL_v4_sample.json:6: question[0][0].role" in res.stderr
    assert res.stderr.splitlines()[-1].startswith("fix: ") and "--skip-bad" in res.stderr
    assert not out.exists()
    res = runner.invoke(convert_app, args + ["--skip-bad"])
    assert res.exit_code == 0, res.output
    assert "dropped 1" in res.output and "question[*][*].role" in res.output
    assert len(read_jsonl(out)) == 5
    res = runner.invoke(convert_app, ["stats", str(out), "--json"])
    assert res.exit_code == 0, res.output
    stats = json.loads(res.stdout)
    assert stats["n"] == 5 and stats["categories"]["simple_python"] == 1
    res = runner.invoke(convert_app, ["stats", str(out)])
    assert res.exit_code == 0 and "parallel_multiple" in res.output and "words" in res.output


def test_cli_masking_options_and_bad_option(tmp_path):
    out = tmp_path / "m.jsonl"
    res = runner.invoke(convert_app, ["convert", "--from", "hammer", str(FX / "hammer_xlam_irrelevance.json"),
                                      "--out", str(out), "--skip-bad", "--mask-prob", "1", "--seed", "5"])
    assert res.exit_code == 0, res.output
    assert all("masked" in c.meta for c in read_jsonl(out))
    res = runner.invoke(convert_app, ["convert", "--from", "xlam", str(FX / "xlam_fc60k.json"),
                                      "--out", str(out), "--answers", str(BFCL_A)])
    assert res.exit_code == 2 and "does not take answers" in res.output


def test_parquet_and_empty_array_inputs(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    records = json.loads((FX / "xlam_fc60k.json").read_text())
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "xlam.parquet")
    with pytest.raises(SchemaError, match=r"xlam\.parquet:4: answers: .*\(Parquet row 4\)"):
        convert("xlam", tmp_path / "xlam.parquet", tmp_path / "out.jsonl")
    report = convert("xlam", tmp_path / "xlam.parquet", tmp_path / "out.jsonl", skip_bad=True)
    assert (report.n_in, report.n_out) == (5, 3)
    (tmp_path / "empty.json").write_text(" [ ]\n")
    assert convert("xlam", tmp_path / "empty.json", tmp_path / "none.jsonl").n_in == 0


# ---- bad bytes, empty inputs, outputs, Ctrl-C ---------------------------------------------------

GOOD_OPENAI = json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})


def _non_utf8_jsonl(path: Path) -> Path:
    path.write_bytes(GOOD_OPENAI.encode() + b"\n" + b'{"messages": [{"role": "user", "content": "caf\xe9"}]}\n'
                     + GOOD_OPENAI.encode() + b"\n")
    return path


def test_cli_convert_non_utf8_line_names_file_and_line_and_skip_bad_skips_it(tmp_path):
    src = _non_utf8_jsonl(tmp_path / "in.jsonl")
    out = tmp_path / "out.jsonl"
    res = runner.invoke(convert_app, ["convert", "--from", "openai", str(src), "--out", str(out)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {src}:2: not UTF-8 text")
    assert not out.exists()
    res = runner.invoke(convert_app, ["convert", "--from", "openai", str(src), "--out", str(out), "--skip-bad"])
    assert res.exit_code == 0, res.output
    assert "read 3 records, wrote 2 conversations, dropped 1" in res.stderr and "not UTF-8 text" in res.stderr
    assert len(read_jsonl(out)) == 2


def test_non_utf8_json_array_record_is_skipped_and_records_count_from_1(tmp_path):
    src = tmp_path / "in.json"
    src.write_bytes(b"[" + GOOD_OPENAI.encode() + b",\n" + b'{"messages": [{"role": "user", "content": "caf\xe9"}]},\n'
                    + b'{"messages": [{"role": "robot", "content": "x"}]}]')
    report = convert("openai", src, tmp_path / "out.jsonl", skip_bad=True)
    assert (report.n_in, report.n_out, report.n_dropped) == (3, 1, 2)
    examples = " ".join(report.examples.values())
    assert f"{src}:2: not UTF-8 text (JSON array record 2)" in examples
    assert "(JSON array record 3)" in examples and f"{src}:3: " in examples


def test_a_json_array_with_a_byte_order_mark_converts(tmp_path):
    src = tmp_path / "in.json"
    src.write_bytes(b"\xef\xbb\xbf[" + GOOD_OPENAI.encode() + b"]\n")
    assert convert("openai", src, tmp_path / "out.jsonl").n_out == 1


def test_cli_stats_non_utf8_bad_format_and_empty_input_are_one_line(tmp_path):
    src = _non_utf8_jsonl(tmp_path / "in.jsonl")
    res = runner.invoke(convert_app, ["stats", str(src)])
    assert res.exit_code == 2 and res.stderr.splitlines() == [
        f"error: {src}:2: not UTF-8 text (byte 0xe9 at column 47)", "fix: convert the file to UTF-8"]
    good = tmp_path / "good.jsonl"
    good.write_text(GOOD_OPENAI + "\n")
    res = runner.invoke(convert_app, ["stats", str(good), "--format", "nope"])
    lines = res.stderr.splitlines()  # the error, then its fix
    assert res.exit_code == 2 and len(lines) == 2 and "unknown format 'nope'" in lines[0] and lines[1].startswith("fix:")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    for args in (["stats", str(empty)], ["stats", str(empty), "--json"]):
        res = runner.invoke(convert_app, args)
        assert res.exit_code == 2 and "empty" in res.stderr and res.stdout == ""


def test_cli_convert_empty_input_fails_and_writes_nothing(tmp_path):
    for name, text in (("empty.jsonl", ""), ("empty.json", " [ ]\n")):
        out = tmp_path / "out.jsonl"
        res = runner.invoke(convert_app, ["convert", "--from", "openai", str(_write(tmp_path / name, text)),
                                          "--out", str(out)])
        assert res.exit_code == 2 and "no records (the input is empty)" in res.stderr
        assert not out.exists()


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_cli_convert_refuses_its_input_and_an_existing_output(tmp_path):
    src = _write(tmp_path / "in.jsonl", GOOD_OPENAI + "\n")
    res = runner.invoke(convert_app, ["convert", "--from", "openai", str(src), "--out", str(src), "--overwrite"])
    assert res.exit_code == 2 and "also an input" in res.stderr and src.read_text() == GOOD_OPENAI + "\n"
    out = _write(tmp_path / "out.jsonl", "keep me\n")
    res = runner.invoke(convert_app, ["convert", "--from", "openai", str(src), "--out", str(out)])
    assert res.exit_code == 2 and "already exists" in res.stderr and out.read_text() == "keep me\n"
    res = runner.invoke(convert_app, ["convert", "--from", "openai", str(src), "--out", str(out), "--overwrite"])
    assert res.exit_code == 0 and len(read_jsonl(out)) == 1


def test_cli_convert_interrupted_leaves_no_temporary(tmp_path, monkeypatch):
    from tinytool.data.convert import base

    src = _write(tmp_path / "in.jsonl", (GOOD_OPENAI + "\n") * 3)
    out = tmp_path / "train.jsonl"
    seen = []

    def interrupt(conv):
        seen.append(conv)
        if len(seen) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(base, "check_tool_names", interrupt)
    res = runner.invoke(convert_app, ["convert", "--from", "openai", str(src), "--out", str(out)])
    assert res.exit_code == 130 and res.stderr.splitlines()[-1] == f"interrupted; nothing written to {out}"
    assert [p.name for p in tmp_path.iterdir()] == ["in.jsonl"]


def test_check_calls_validates_argument_values(tmp_path):
    tool = {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}

    def record(a):
        return json.dumps({"tools": [tool], "messages": [{"role": "user", "content": "x"}, {
            "role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"a": a}}}]}]})

    src = _write(tmp_path / "in.jsonl", record(1) + "\n" + record("one") + "\n")
    with pytest.raises(SchemaError, match=r"in\.jsonl:2: messages\[1\]\.tool_calls\[0\]\.arguments\.a: "
                                          r"'one' is not of type 'integer'"):
        convert("openai", src, tmp_path / "out.jsonl")
    assert convert("openai", src, tmp_path / "out.jsonl", check_calls=False).n_out == 2


def test_cli_convert_skip_bad_with_every_record_dropped_is_an_error(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("not json\n" + json.dumps({"messages": []}) + "\n" + json.dumps({"messages": []}) + "\n")
    out = tmp_path / "out.jsonl"
    res = runner.invoke(convert_app, ["convert", "--from", "openai", str(src), "--out", str(out), "--skip-bad"])
    assert res.exit_code == 2, res.output
    error, fix = res.stderr.splitlines()[-2:]
    assert error.startswith(f"error: {src}: no record could be converted (3 read, all dropped: 2 ")
    assert "; 1 " in error  # the reasons, counted
    assert fix.startswith("fix: check that the file is in the openai format (--from)") and f"{src}:" in fix
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
