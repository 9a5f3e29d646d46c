"""`tinytool reward NAME --input --output`, errors, --version."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TOOLS, gt, hermes
from typer.testing import CliRunner

from tinytool import __version__
from tinytool.cli import app
from tinytool.formats import get_format
from tinytool.rewards import REWARDS, RewardOptions, score_row

runner = CliRunner()

TEACHER = [
    {"role": "assistant", "content": None, "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "content": "18C"},
    {"role": "assistant", "content": "It is 18C."},
]
STUDENT = [
    {"role": "assistant", "content": hermes(("get_weather", {"city": "Paris"}))},
    {"role": "tool", "content": "18C"},
    {"role": "assistant", "content": "<think>done</think>It is 18C."},
]
TOOLRL_TEXT = '<think> x </think>\n<tool_call>\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n</tool_call>'

# per reward: rows that score, and the field a row with only a completion lacks
GOOD_ROWS = {
    "simrl": [
        {"completion": hermes(("get_weather", {"city": "Paris"})), "ground_truth": gt(("get_weather", {"city": "Paris"})),
         "tools": TOOLS},
        {"completion": "<think>x</think>It is sunny", "ground_truth": {"role": "assistant", "content": "It is sunny"}},
    ],
    "toolrl": [
        {"completion": TOOLRL_TEXT, "ground_truth": gt(("get_weather", {"city": "Paris"}))},
        {"completion": "<think> x </think><response> Hi </response>", "ground_truth": {"content": "Hello"}},
    ],
    "mentor": [
        {"completion": STUDENT, "teacher": TEACHER, "tools": TOOLS},
        {"completion": "<think>x</think>41", "teacher": "\\boxed{42}"},
    ],
    "astra-f1": [
        {"completion": STUDENT, "sub_answers": ["18C"]},
        {"n_solved": 2, "n_subtasks": 3, "n_calls": 4},
    ],
    "exact": [
        {"completion": hermes(("get_weather", {"city": "Paris"})), "ground_truth": gt(("get_weather", {"city": "Paris"}))},
        {"completion": hermes(("get_weather", {"city": "Rome"})), "ground_truth": gt(("get_weather", {"city": "Paris"}))},
    ],
}
MISSING = {"simrl": "ground_truth", "toolrl": "ground_truth", "exact": "ground_truth", "mentor": "teacher",
           "astra-f1": "sub_answers"}


def invoke(*args: str):
    return runner.invoke(app, list(args))


def read_out(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_version():
    r = invoke("--version")
    assert r.exit_code == 0 and r.stdout.strip() == __version__


def test_no_args_shows_help():
    r = invoke()
    assert r.exit_code == 0 and "reward" in r.output


@pytest.mark.parametrize("name", sorted(REWARDS))
def test_reward_scores_every_row_in_order(tmp_path, name):
    rows = GOOD_ROWS[name]
    lines = [json.dumps(rows[0]), "", "this is not json", json.dumps({"completion": "x"}), "   ", json.dumps(rows[1]),
             json.dumps([1, 2])]
    inp = tmp_path / "in.jsonl"
    inp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out" / "scores.jsonl"
    r = invoke("reward", name, "--input", str(inp), "--output", str(out))
    assert r.exit_code == 0, r.output
    got = read_out(out)
    assert len(got) == 5  # one per non-blank input line, in order
    floor = REWARDS[name].bounds(RewardOptions())[0]
    assert [g["score"] for g in got[0:1] + got[3:4]] == [score_row(name, rows[0]).score, score_row(name, rows[1]).score]
    assert "error" not in got[0] and "error" not in got[3]
    assert got[0] == score_row(name, rows[0]).to_dict()
    bad_json, missing, not_object = got[1], got[2], got[4]
    assert bad_json["score"] == floor and bad_json["error"].startswith(f"{inp}:3: not valid JSON")
    assert missing["score"] == floor and missing["error"].startswith(f"{inp}:4: {MISSING[name]}")
    assert not_object["score"] == floor and not_object["error"].startswith(f"{inp}:7: row is a list")
    assert "5 rows" in r.stderr and "3 unreadable" in r.stderr
    assert [p.name for p in out.parent.iterdir()] == ["scores.jsonl"]  # no temporary left


def test_reward_options_are_passed_on(tmp_path):
    row = {"completion": '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
           "ground_truth": gt(("get_weather", {"city": "Paris"}))}
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps(row) + "\n")
    out = tmp_path / "out.jsonl"
    assert invoke("reward", "simrl", "-i", str(inp), "-o", str(out)).exit_code == 0
    assert read_out(out)[0]["score"] == -1.0  # no <think>
    # the output exists from here on: replacing it takes --overwrite
    assert invoke("reward", "simrl", "-i", str(inp), "-o", str(out), "--no-think", "--overwrite").exit_code == 0
    assert read_out(out)[0]["score"] == 1.0
    trow = {"completion": TOOLRL_TEXT, "ground_truth": gt(("get_weather", {"city": "Paris"})), "step": 0,
            "total_steps": 10}
    inp.write_text(json.dumps(trow) + "\n")
    assert invoke("reward", "toolrl", "-i", str(inp), "-o", str(out), "--scale", "dynamic", "--overwrite").exit_code == 0
    assert read_out(out)[0]["score"] == pytest.approx(4.0)  # format 2 + correctness 2 at step 0
    assert invoke("reward", "toolrl", "-i", str(inp), "-o", str(out), "--format", "python",
                  "--overwrite").exit_code == 0
    assert read_out(out)[0]["score"] < 4.0  # read as Python calls, the ToolRL text has none


def test_reward_takes_the_toolrl_departures(tmp_path):
    """--extra-calls, --no-call and --lenient reach the reward: each scores as `score_row` with that option; the
    three extra-call modes order a two-call answer to a one-call question free > charged > penalized, and only the
    lenient reading takes a call with a trailing comma."""
    twice = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
    trailing_comma = '{"name": "get_weather", "parameters": {"city": "Paris"},}'  # read only when lenient
    rows = [{"completion": f"<think> x </think>\n<tool_call>\n{twice}\n{twice}\n</tool_call>",
             "ground_truth": gt(("get_weather", {"city": "Paris"}))},
            {"completion": TOOLRL_TEXT, "ground_truth": {"role": "assistant", "content": "I cannot help with that."}},
            {"completion": f"<think> x </think>\n<tool_call>\n{trailing_comma}\n</tool_call>",
             "ground_truth": gt(("get_weather", {"city": "Paris"}))}]
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    seen = {}
    for flags, opts in (([], RewardOptions()),
                        (["--extra-calls", "charged"], RewardOptions(extra_calls="charged")),
                        (["--extra-calls", "penalized", "--no-call", "symmetric", "--lenient"],
                         RewardOptions(extra_calls="penalized", no_call="symmetric", lenient=True))):
        out = tmp_path / f"out{len(seen)}.jsonl"
        r = invoke("reward", "toolrl", "-i", str(inp), "-o", str(out), *flags)
        assert r.exit_code == 0, r.output
        got = [row["score"] for row in read_out(out)]
        assert got == [pytest.approx(score_row("toolrl", row, get_format("toolrl"), opts).score) for row in rows]
        seen[tuple(flags[:2])] = got
    free, charged, penalized = seen.values()
    assert free[0] > charged[0] > penalized[0]
    assert penalized[1] < free[1]  # symmetric: calling on a label without a call scores the minimum
    assert penalized[2] > free[2]  # lenient: the repaired call is read and matches


@pytest.mark.parametrize("args, message", [
    (["reward", "nope"], "unknown reward 'nope'"),
    (["reward", "simrl", "--granularity", "huge"], "unknown ToolRL granularity 'huge'"),
    (["reward", "toolrl", "--scale", "weird"], "unknown ToolRL scale 'weird'"),
    (["reward", "toolrl", "--no-call", "never"], "unknown ToolRL no-call 'never'"),
    (["reward", "toolrl", "--extra-calls", "lots"], "--extra-calls with one of free, charged, penalized"),
    (["reward", "simrl", "--format", "xml"], "unknown format 'xml'"),
])
def test_bad_arguments_exit_2_with_a_message(tmp_path, args, message):
    inp = tmp_path / "in.jsonl"
    inp.write_text("{}\n")
    out = tmp_path / "out.jsonl"
    r = invoke(*args, "--input", str(inp), "--output", str(out))
    assert r.exit_code == 2
    assert message in r.stderr and "error" in r.stderr
    assert not out.exists()


def test_missing_input_file_exits_2(tmp_path):
    r = invoke("reward", "simrl", "-i", str(tmp_path / "none.jsonl"), "-o", str(tmp_path / "o.jsonl"))
    assert r.exit_code == 2


def test_reward_survives_an_over_long_integer(tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"completion": "x", "n": ' + "1" * 5000 + "}\n" + json.dumps({"completion": "x"}) + "\n"
                   + json.dumps(GOOD_ROWS["simrl"][0]) + "\n")  # one good row: a file of only bad rows is refused
    out = tmp_path / "out.jsonl"
    r = invoke("reward", "simrl", "-i", str(inp), "-o", str(out))
    assert r.exit_code == 0
    first, second, _ = read_out(out)
    assert first["score"] == -1.0 and first["error"].startswith(f"{inp}:1: not valid JSON")
    assert second["error"].startswith(f"{inp}:2: ground_truth")


def _console_script() -> Path:
    exe = Path(sys.executable).with_name("tinytool")
    if not exe.exists():
        pytest.skip("console script not installed")
    return exe


def test_console_script_version():
    p = subprocess.run([str(_console_script()), "--version"], check=False, capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == __version__


def test_console_script(tmp_path):
    exe = _console_script()
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps(GOOD_ROWS["exact"][0]) + "\n")
    out = tmp_path / "out.jsonl"
    p = subprocess.run([str(exe), "reward", "exact", "--input", str(inp), "--output", str(out)],
                       check=False, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert read_out(out) == [{"score": 1.0, "format": 1.0}]
    p = subprocess.run([str(exe), "reward", "bogus", "-i", str(inp), "-o", str(out)], check=False,
                       capture_output=True, text=True)
    assert p.returncode == 2 and "unknown reward 'bogus'" in p.stderr


# ---- the one error path (tinytool.clikit) --------------------------------------------------

def _demo_app():
    from tinytool.clikit import make_app, on_interrupt
    from tinytool.errors import OutputExistsError

    demo = make_app()

    @demo.command()
    def user_error() -> None:
        raise OutputExistsError("out.jsonl: already exists and is not empty")

    @demo.command()
    def bug() -> None:
        raise RuntimeError("a bug")

    @demo.command()
    def ctrl_c(note: bool = False) -> None:
        if note:
            with on_interrupt("out.jsonl unchanged"):
                raise KeyboardInterrupt
        raise KeyboardInterrupt

    return demo


def test_user_error_prints_message_and_fix_exit_2():
    r = runner.invoke(_demo_app(), ["user-error"])
    assert r.exit_code == 2
    assert r.stderr.splitlines() == ["error: out.jsonl: already exists and is not empty",
                                     "fix: rerun with --overwrite to start again, or choose another output"]
    assert "Traceback" not in r.output and r.stdout == ""


def test_a_single_command_app_and_mounted_sub_apps_share_the_error_path():
    from tinytool.clikit import make_app
    from tinytool.errors import UserInputError

    one = make_app()

    @one.command()
    def only() -> None:
        raise UserInputError("bad flag")

    r = runner.invoke(one, [])  # an error without a fix of its own points at the command's usage
    assert r.exit_code == 2 and r.stderr == "error: bad flag\nfix: see only --help\n"
    top = make_app()
    top.add_typer(_demo_app(), name="sub")
    r = runner.invoke(top, ["sub", "user-error"])
    assert r.exit_code == 2 and len(r.stderr.splitlines()) == 2


def test_a_bug_keeps_its_traceback():
    r = runner.invoke(_demo_app(), ["bug"])
    assert r.exit_code == 1 and isinstance(r.exception, RuntimeError)
    assert "error:" not in r.stderr


def test_ctrl_c_prints_one_line_and_exits_130():
    r = runner.invoke(_demo_app(), ["ctrl-c"])
    assert r.exit_code == 130 and r.stderr == "interrupted\n"
    r = runner.invoke(_demo_app(), ["ctrl-c", "--note"])
    assert r.exit_code == 130 and r.stderr == "interrupted; out.jsonl unchanged\n"


@pytest.mark.parametrize("args, message, where", [
    (["teacher", "rollout", "--top-k", "1"], "No such option: --top-k", "tinytool teacher rollout"),
    (["student", "--from", "m", "--keep-layers", "1", "--out", "FILE"],
     "Invalid value for '--out' / '-o'", "tinytool student"),
    (["reward", "simrl", "-i", "NOFILE", "-o", "o.jsonl"], "Invalid value for '--input' / '-i'", "tinytool reward"),
    (["reward"], "Missing argument", "tinytool reward"),
    (["nosuch"], "No such command 'nosuch'", "tinytool"),
])
def test_usage_errors_print_one_line_and_where_to_read_the_usage(tmp_path, args, message, where):
    afile = tmp_path / "afile"
    afile.write_text("notes\n")
    args = [str(afile) if a == "FILE" else str(tmp_path / "none") if a == "NOFILE" else a for a in args]
    r = runner.invoke(app, args, prog_name="tinytool")
    assert r.exit_code == 2
    first, fix = r.stderr.splitlines()
    assert first.startswith("error: ") and message in first
    assert fix == f"fix: see {where} --help"
    assert "╭" not in r.output and "Usage:" not in r.output


def test_a_bare_group_and_help_still_show_the_help():
    r = runner.invoke(app, ["teacher"], prog_name="tinytool")
    assert "Usage:" in r.output and "rollout" in r.output and "error:" not in r.output
    r = runner.invoke(app, ["student", "--help"], prog_name="tinytool")
    assert r.exit_code == 0 and "--keep-layers" in r.output


def test_console_script_user_error_has_no_traceback(tmp_path):
    exe = _console_script()
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps(GOOD_ROWS["exact"][0]) + "\n")
    p = subprocess.run([str(exe), "reward", "exact", "-i", str(inp), "-o", str(inp)], check=False,
                       capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.splitlines() == [
        f"error: {inp}: the output is also an input; writing it would destroy the input",
        "fix: choose another output path"]


# ---- reward: inputs and outputs ------------------------------------------------------------

def test_reward_refuses_to_write_over_its_input(tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps(GOOD_ROWS["exact"][0]) + "\n")
    before = inp.read_bytes()
    r = invoke("reward", "exact", "-i", str(inp), "-o", str(inp), "--overwrite")
    assert r.exit_code == 2 and "also an input" in r.stderr
    assert inp.read_bytes() == before


def test_reward_refuses_a_non_empty_output_without_overwrite(tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps(GOOD_ROWS["exact"][0]) + "\n")
    out = tmp_path / "out.jsonl"
    out.write_text("precious\n")
    r = invoke("reward", "exact", "-i", str(inp), "-o", str(out))
    assert r.exit_code == 2 and "already exists" in r.stderr and "--overwrite" in r.stderr
    assert out.read_text() == "precious\n"
    assert invoke("reward", "exact", "-i", str(inp), "-o", str(out), "--overwrite").exit_code == 0
    assert read_out(out) == [{"score": 1.0, "format": 1.0}]


def test_reward_on_an_empty_input_says_so(tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text("\n  \n")
    out = tmp_path / "out.jsonl"
    r = invoke("reward", "exact", "-i", str(inp), "-o", str(out))
    assert r.exit_code == 2 and "empty" in r.stderr and "nan" not in r.stderr
    assert not out.exists()


def test_reward_scores_a_non_utf8_line_at_the_floor(tmp_path):
    inp = tmp_path / "in.jsonl"
    good = json.dumps(GOOD_ROWS["exact"][0]).encode()
    inp.write_bytes(good + b"\n" + b'{"completion": "caf\xe9"}\n' + good + b"\n")
    out = tmp_path / "out.jsonl"
    r = invoke("reward", "exact", "-i", str(inp), "-o", str(out))
    assert r.exit_code == 0, r.output
    first, bad, last = read_out(out)
    assert first["score"] == last["score"] == 1.0
    assert bad["score"] == 0.0 and bad["error"].startswith(f"{inp}:2: not UTF-8 text")
    assert "1 unreadable" in r.stderr
    assert "exact: 3/3 rows" in r.stderr  # the progress bar reports off a terminal too


@pytest.mark.parametrize("content", [b'{"completion": "caf\xe9"}\n' * 3, b"not json\n[1]\n", b'{"completion": "x"}\n'])
def test_reward_with_no_readable_row_writes_nothing_and_exits_2(tmp_path, content):
    inp = tmp_path / "in.jsonl"
    inp.write_bytes(content)
    out = tmp_path / "out.jsonl"
    r = invoke("reward", "simrl", "-i", str(inp), "-o", str(out))
    assert r.exit_code == 2, r.output
    first, fix = r.stderr.splitlines()[-2:]
    assert first.startswith(f"error: {inp}: no row could be read") and f"first: {inp}:1: " in first
    assert fix.startswith("fix: ") and "UTF-8 JSONL" in fix
    assert not out.exists() and list(tmp_path.iterdir()) == [inp]
    out.write_text("old\n")
    assert invoke("reward", "simrl", "-i", str(inp), "-o", str(out), "--overwrite").exit_code == 2
    assert out.read_text() == "old\n"


def test_simrl_requires_think_only_for_formats_that_write_it(tmp_path):
    truth = gt(("get_weather", {"city": "Paris"}))
    completions = {
        "hermes": hermes(("get_weather", {"city": "Paris"})),
        "hermes-nothink": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        "python": '[get_weather(city="Paris")]',
    }
    inp = tmp_path / "in.jsonl"
    out = tmp_path / "out.jsonl"
    for fmt, completion in completions.items():
        inp.write_text(json.dumps({"completion": completion, "ground_truth": truth, "tools": TOOLS}) + "\n")
        r = invoke("reward", "simrl", "-i", str(inp), "-o", str(out), "-f", fmt, "--overwrite")
        assert r.exit_code == 0, r.output
        assert read_out(out) == [{"score": 1.0, "format": 1.0, "fc": 1.0, "response": 0.0}], fmt
    # an explicit --think still requires the pair, and the floor says why
    assert invoke("reward", "simrl", "-i", str(inp), "-o", str(out), "-f", "python", "--think",
                  "--overwrite").exit_code == 0
    (row,) = read_out(out)
    assert row["score"] == -1.0 and row["reason"] == "0 <think> pairs (expected exactly one)" and "error" not in row
    inp.write_text(json.dumps({"completion": completions["hermes-nothink"], "ground_truth": truth}) + "\n")
    assert invoke("reward", "simrl", "-i", str(inp), "-o", str(out), "--overwrite").exit_code == 0  # hermes
    assert read_out(out)[0]["reason"] == "0 <think> pairs (expected exactly one)"
    assert invoke("reward", "simrl", "-i", str(inp), "-o", str(out), "--no-think", "--overwrite").exit_code == 0
    assert read_out(out)[0]["score"] == 1.0


def test_reward_interrupted_leaves_the_old_output_and_no_temporary(tmp_path, monkeypatch):
    from tinytool import rewards

    inp = tmp_path / "in.jsonl"
    inp.write_text((json.dumps(GOOD_ROWS["exact"][0]) + "\n") * 3)
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return score_row(*args, **kwargs)

    monkeypatch.setattr(rewards, "score_row", interrupted)
    r = invoke("reward", "exact", "-i", str(inp), "-o", str(out), "--overwrite")
    assert r.exit_code == 130
    assert r.stderr.splitlines()[-1] == f"interrupted; {out} unchanged"
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]


# ---- student: the output directory -------------------------------------------------------------

@pytest.fixture
def fake_build(monkeypatch):
    """`build_student` without a model: writes a checkpoint's files (or fails part-way when asked)."""
    import tinytool.models

    calls = []

    def build(teacher, keep_layers, out, method="even", samples=None):
        calls.append(out)
        (out / "config.json").write_text(json.dumps({"num_hidden_layers": keep_layers}))
        (out / "model.safetensors").write_text("weights")
        if teacher == "crash":
            raise KeyboardInterrupt
        return {"teacher": teacher, "teacher_layers": 4, "kept": list(range(keep_layers)), "method": method,
                "parameters": 1000}

    monkeypatch.setattr(tinytool.models, "build_student", build)
    return calls


def test_student_refuses_a_non_empty_out_that_is_not_a_model(tmp_path, fake_build):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("precious\n")
    r = invoke("student", "--from", "teacher", "--keep-layers", "2", "--out", str(out))
    assert r.exit_code == 2 and "already exists and is not empty" in r.stderr and "--overwrite" in r.stderr
    r = invoke("student", "--from", "teacher", "--keep-layers", "2", "--out", str(out), "--overwrite")
    assert r.exit_code == 2 and "not a model checkpoint" in r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"] and not fake_build


def test_student_replaces_a_student_only_with_overwrite_and_as_a_whole(tmp_path, fake_build):
    out = tmp_path / "students" / "s2"
    assert invoke("student", "--from", "teacher", "--keep-layers", "2", "--out", str(out)).exit_code == 0
    assert json.loads((out / "tinytool_student.json").read_text())["kept"] == [0, 1]
    (out / "stale.bin").write_text("from the old student")
    r = invoke("student", "--from", "teacher", "--keep-layers", "3", "--out", str(out))
    assert r.exit_code == 2 and "already exists" in r.stderr
    assert json.loads((out / "config.json").read_text()) == {"num_hidden_layers": 2}
    assert invoke("student", "--from", "teacher", "--keep-layers", "3", "--out", str(out), "--overwrite").exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors", "tinytool_student.json"]
    assert json.loads((out / "config.json").read_text()) == {"num_hidden_layers": 3}
    assert sorted(p.name for p in out.parent.iterdir()) == ["s2"]  # no temporaries


def test_student_interrupted_leaves_no_half_model(tmp_path, fake_build):
    out = tmp_path / "s"
    r = invoke("student", "--from", "crash", "--keep-layers", "2", "--out", str(out))
    assert r.exit_code == 130 and f"nothing written to {out}" in r.stderr
    assert list(tmp_path.iterdir()) == []
    assert invoke("student", "--from", "teacher", "--keep-layers", "2", "--out", str(out)).exit_code == 0
    r = invoke("student", "--from", "crash", "--keep-layers", "3", "--out", str(out), "--overwrite")
    assert r.exit_code == 130 and f"{out} unchanged" in r.stderr
    assert json.loads((out / "config.json").read_text()) == {"num_hidden_layers": 2}
    assert list(tmp_path.iterdir()) == [out]


def test_student_samples_from_conversation_jsonl_are_the_first_conversations_text(tmp_path, monkeypatch):
    import tinytool.models

    seen = []

    def build(teacher, keep_layers, out, method="even", samples=None):
        seen.append(samples)
        (out / "config.json").write_text("{}")
        return {"teacher": teacher, "teacher_layers": 4, "kept": [0], "method": method, "parameters": 1}

    monkeypatch.setattr(tinytool.models, "build_student", build)
    convs = [{"messages": [{"role": "user", "content": f"turn  {i}\n please"},
                           {"role": "assistant", "content": None, "tool_calls": [{"name": "f", "arguments": {}}]}]}
             for i in range(60)] + [{"messages": []}]
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(c) + "\n" for c in [{"messages": []}, *convs]))
    r = invoke("student", "--from", "t", "--keep-layers", "1", "--method", "importance", "--samples", str(data),
               "--out", str(tmp_path / "s"))
    assert r.exit_code == 0, r.output
    assert len(seen[0]) == 47  # the first 48 conversations, the empty one left out
    assert seen[0][0] == 'turn 0 please [{"name": "f", "arguments": {}}]'  # contents and calls, spaces collapsed


def test_data_select_keeps_the_lines_of_the_categories_as_they_are(tmp_path):
    rows = ['{"meta": {"category": "simple"}, "messages": []}', '{"messages":[],"meta":{"category":"real_simple"}}',
            '{"meta": {"category": "real_multiple"}}', '{"meta": {}}']
    data = tmp_path / "dev.jsonl"
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "real.jsonl"
    r = invoke("data", "select", str(data), "--category", "real_*", "-o", str(out))
    assert r.exit_code == 0 and "2 of 4 conversations" in r.stderr
    assert out.read_text() == rows[1] + "\n" + rows[2] + "\n"
    assert invoke("data", "select", str(data), "--category", "simple", "-o", str(out)).exit_code == 2  # not over it
    r = invoke("data", "select", str(data), "--category", "multi_*", "-o", str(tmp_path / "none.jsonl"))
    assert r.exit_code == 2 and "none of its 4 conversations" in r.stderr and not (tmp_path / "none.jsonl").exists()


def test_data_select_limit_keeps_a_seeded_subset_in_file_order(tmp_path):
    import random

    rows = [json.dumps({"meta": {"category": "simple" if i % 3 else "irrelevance", "id": i}, "messages": []})
            for i in range(12)]
    data = tmp_path / "train.jsonl"
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "pool.jsonl"
    r = invoke("data", "select", str(data), "--limit", "5", "--seed", "3", "-o", str(out))
    assert r.exit_code == 0, r.output
    # every category when none is named; the rule of `teacher rollout --limit` and `eval bfcl --limit`
    assert out.read_text().splitlines() == [rows[i] for i in sorted(random.Random(3).sample(range(12), 5))]
    simple = [x for x in rows if '"simple"' in x]
    r = invoke("data", "select", str(data), "--category", "simple", "--limit", "3", "-o", str(tmp_path / "s.jsonl"))
    assert r.exit_code == 0 and "3 of 12 conversations" in r.stderr
    assert (tmp_path / "s.jsonl").read_text().splitlines() == [simple[i] for i in
                                                                sorted(random.Random(0).sample(range(8), 3))]
    r = invoke("data", "select", str(data), "--limit", "50", "-o", str(tmp_path / "all.jsonl"))
    assert r.exit_code == 0 and (tmp_path / "all.jsonl").read_text().splitlines() == rows
    r = invoke("data", "select", str(data), "--limit", "0", "-o", str(tmp_path / "zero.jsonl"))
    assert r.exit_code == 2 and "--limit" in r.output


def test_doctor_reports_the_machine_and_what_is_missing(monkeypatch):
    from tinytool.doctor import report

    r = report()
    assert r["versions"]["torch"] and r["cpu"]["cores"] >= 1 and isinstance(r["cpu"]["bf16"], bool)
    assert r["bundled_model"].endswith(".gguf")
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    assert "vllm" in report()["missing_extras"]
    res = CliRunner().invoke(app, ["doctor"])
    assert res.exit_code == 0 and "bfcl wheel:" in res.output and "cpu:" in res.output


def _verbs() -> list[str]:
    """Every command of the CLI, read from the app itself (a verb added later is covered without listing it)."""
    import typer.main

    def walk(cmd, prefix: str) -> list[str]:
        if not hasattr(cmd, "list_commands"):  # a command, not a group
            return [prefix]
        ctx = cmd.context_class(cmd)
        return [v for name in cmd.list_commands(ctx) for v in walk(cmd.get_command(ctx, name), f"{prefix} {name}".strip())]

    return sorted(walk(typer.main.get_command(app), ""))


def test_the_verb_list_is_read_from_the_app():
    verbs = _verbs()
    assert {"sft", "kto", "rl", "data demo", "synth envs", "retrieve", "eval bfcl"} <= set(verbs) and len(verbs) > 25


@pytest.mark.parametrize("verb", _verbs())
def test_every_verb_shows_an_example_in_its_help(verb):
    res = CliRunner().invoke(app, [*verb.split(), "--help"])
    assert res.exit_code == 0 and "Example" in res.output and "tinytool " in res.output
