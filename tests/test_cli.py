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
    assert not out.with_name("scores.jsonl.tmp").exists()


def test_reward_options_are_passed_on(tmp_path):
    row = {"completion": '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
           "ground_truth": gt(("get_weather", {"city": "Paris"}))}
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps(row) + "\n")
    out = tmp_path / "out.jsonl"
    assert invoke("reward", "simrl", "-i", str(inp), "-o", str(out)).exit_code == 0
    assert read_out(out)[0]["score"] == -1.0  # no <think>
    assert invoke("reward", "simrl", "-i", str(inp), "-o", str(out), "--no-think").exit_code == 0
    assert read_out(out)[0]["score"] == 1.0
    trow = {"completion": TOOLRL_TEXT, "ground_truth": gt(("get_weather", {"city": "Paris"})), "step": 0,
            "total_steps": 10}
    inp.write_text(json.dumps(trow) + "\n")
    assert invoke("reward", "toolrl", "-i", str(inp), "-o", str(out), "--scale", "dynamic").exit_code == 0
    assert read_out(out)[0]["score"] == pytest.approx(4.0)  # format 2 + correctness 2 at step 0
    assert invoke("reward", "toolrl", "-i", str(inp), "-o", str(out), "--format", "python").exit_code == 0
    assert read_out(out)[0]["score"] < 4.0  # read as Python calls, the ToolRL text has none


@pytest.mark.parametrize("args, message", [
    (["reward", "nope"], "unknown reward 'nope'"),
    (["reward", "simrl", "--granularity", "huge"], "unknown granularity 'huge'"),
    (["reward", "toolrl", "--scale", "weird"], "unknown scale 'weird'"),
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
    inp.write_text('{"completion": "x", "n": ' + "1" * 5000 + "}\n" + json.dumps({"completion": "x"}) + "\n")
    out = tmp_path / "out.jsonl"
    r = invoke("reward", "simrl", "-i", str(inp), "-o", str(out))
    assert r.exit_code == 0
    first, second = read_out(out)
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
