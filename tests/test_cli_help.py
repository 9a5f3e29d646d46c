"""The training verbs (sft, kto, rl, distill) parse their flags from a config dataclass; their ``--help`` looks like
every other verb's (Typer's panels), shows each option once, and their parser still takes every spelling it took."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from tinytool.cli import app

VERBS = ["sft", "kto", "rl", "distill"]


@pytest.fixture(scope="module")
def helps() -> dict[str, str]:
    runner = CliRunner()
    out = {}
    for verb in VERBS:
        res = runner.invoke(app, [verb, "--help"], env={"COLUMNS": "100"})
        assert res.exit_code == 0, res.output
        out[verb] = res.output
    return out


def _rows(text: str) -> list[tuple[str, str]]:
    """The options panels' rows as (flags, rest of the first line); a boolean wrapped after its ``/`` is one."""
    rows: list[tuple[str, str]] = []
    for line in text.splitlines():
        cells = re.match(r"│ (?:\*  |   )?(--\S+|\s)\s*(.*?)\s*│$", line)
        if not cells or not cells.group(1).startswith("--"):
            continue
        flag, rest = cells.groups()
        if rows and rows[-1][0].endswith("/"):
            rows[-1] = (rows[-1][0] + flag, rows[-1][1])
        else:
            rows.append((flag, rest))
    return rows


@pytest.mark.parametrize("verb", VERBS)
def test_the_help_is_drawn_as_every_other_verbs(helps, verb):
    text = helps[verb]
    typer_verb = CliRunner().invoke(app, ["eval", "bfcl", "--help"], env={"COLUMNS": "100"}).output
    for same in ("Usage: tinytool ", "╭─ Options ─", "╰─"):
        assert same in text and same in typer_verb
    assert f"Usage: tinytool {verb} [OPTIONS]" in text and "Example: tinytool " + verb in text
    own, theirs = text.index("╭─ Options ─"), text.index("╭─ Options of ")
    assert own < theirs  # tinytool's options first, the TRL (transformers) config's after them
    assert ("Options of TRL's" if verb != "distill" else "Options of transformers' TrainingArguments") in text
    assert "--config" in text[own:theirs] and "--out" in text[own:theirs] and "--push-to-hub" in text[theirs:]
    assert "usage:" not in text and "options:" not in text  # no argparse text


@pytest.mark.parametrize("verb", VERBS)
def test_each_option_is_shown_once(helps, verb):
    rows = _rows(helps[verb])
    flags = [flags.split("/")[0] for flags, _ in rows]
    assert len(flags) > 60 and len(flags) == len(set(flags)), [f for f in flags if flags.count(f) > 1]
    assert not [f for f in flags if "_" in f or "--no-" + f[2:] in flags]  # dashed, no negation of its own


def test_sft_help_names_the_output_directory_once(helps):
    text = helps["sft"]
    assert "--output_dir" not in text and "--output-dir" not in text and "OUTPUT_DIR" not in text
    out = [(flags, rest) for flags, rest in _rows(text) if flags == "--out"]
    assert len(out) == 1 and out[0][1].startswith("-o ")
    assert len(re.findall(r"(?<![\w-])-o(?![\w-])", text.split("╭─ Options ─")[1])) == 1


def test_a_boolean_shows_its_negation_beside_its_positive_help(helps):
    text = helps["sft"]
    assert text.count("Log the first step too.") == 1
    row = [rest for flags, rest in _rows(text) if flags.startswith("--logging-first-step")]
    assert len(row) == 1 and "Log the first step too." in row[0]
    assert ("--logging-first-step/--no-logging-first-step", row[0]) in _rows(text)
    assert ("--merge/--no-merge", next(r for f, r in _rows(text) if f.startswith("--merge"))) in _rows(text)


@pytest.fixture()
def data(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text("{}\n")
    return str(path)


@pytest.mark.parametrize("spelling", [["--output_dir", "X"], ["--output-dir", "X"], ["--out", "X"], ["-o", "X"]])
def test_every_spelling_of_a_flag_still_parses(data, spelling):
    from tinytool.train.config import parse_config
    from tinytool.train.sft import SFTRunConfig

    cfg = parse_config(SFTRunConfig, ["-m", "m", "-d", data, *spelling], prog="tinytool sft")
    assert cfg.output_dir == "X"


@pytest.mark.parametrize("flags, field, value", [
    (["--lr", "1e-3"], "learning_rate", 1e-3), (["--learning_rate", "1e-3"], "learning_rate", 1e-3),
    (["--learning-rate", "1e-3"], "learning_rate", 1e-3), (["--batch-size", "2"], "per_device_train_batch_size", 2),
    (["--per_device_train_batch_size", "2"], "per_device_train_batch_size", 2),
    (["--weight_decay", "0.1"], "weight_decay", 0.1), (["--weight-decay", "0.1"], "weight_decay", 0.1),
    (["--no-bf16"], "bf16", False), (["--no_bf16"], "bf16", False), (["--bf16", "false"], "bf16", False),
    (["--no-logging-first-step"], "logging_first_step", False),
    (["--no_logging_first_step"], "logging_first_step", False),
    (["--logging_first_step", "false"], "logging_first_step", False),
    (["--no-activation-checkpointing"], "activation_checkpointing", False),
    (["--no-activation_checkpointing"], "activation_checkpointing", False),
    (["--lora", "r=4", "--merge"], "merge_lora", True), (["--lora", "r=4", "--merge_lora"], "merge_lora", True),
    (["--lora", "r=4", "--merge-lora", "true"], "merge_lora", True), (["--no-merge"], "merge_lora", False),
    (["--no-compact-loss"], "compact_loss", False), (["--save_total_limit", "none"], "save_total_limit", None),
])
def test_old_and_shown_spellings_parse(data, flags, field, value):
    from tinytool.train.config import parse_config
    from tinytool.train.sft import SFTRunConfig

    cfg = parse_config(SFTRunConfig, ["-m", "m", "-d", data, "-o", "X", *flags], prog="tinytool sft")
    assert getattr(cfg, field) == value


def test_every_flag_the_help_shows_parses(helps, data):
    """The help's spelling of each option (and of each boolean's negation) is one the parser takes."""
    from tinytool.train.config import config_parser
    from tinytool.train.sft import SFTRunConfig

    taken = config_parser(SFTRunConfig, "tinytool sft")._option_string_actions
    shown = [f for flags, _ in _rows(helps["sft"]) for f in flags.split("/")]
    assert not [f for f in shown if f not in taken and f not in ("--config", "--help")]


def test_a_config_file_under_flags_records_only_what_was_given(data, tmp_path):
    """The file's values are defaults that flags override; fields neither sets keep the dataclass's defaults (the
    parser's differ for some: ``include_num_input_tokens_seen`` is False there, "no" here), so the saved config
    holds only what the user chose."""
    from tinytool.train.config import parse_config, saved_config
    from tinytool.train.sft import SFTRunConfig

    path = tmp_path / "run.yaml"
    path.write_text(f"model: m\ndata: [{data}]\nlearning_rate: 1.0e-3\nweight_decay: 0.1\n")
    cfg = parse_config(SFTRunConfig, ["--config", str(path), "--lr", "5e-4", "-o", "X"], prog="tinytool sft")
    saved = saved_config(cfg)
    assert cfg.learning_rate == 5e-4 and saved["weight_decay"] == 0.1 and saved["data"] == [data]
    assert "include_num_input_tokens_seen" not in saved and "debug" not in saved


@pytest.mark.parametrize("verb, module, config, skip", [
    (["eval", "bfcl"], "tinytool.eval.cli_eval", "BFCLEvalConfig", set()),
    (["eval", "demo"], "tinytool.eval.cli_eval", "DemoEvalConfig", {"temperature", "samples"}),
    (["serve"], "tinytool.serve.config", "ServeConfig", set()),
])
def test_eval_and_serve_take_their_configs_fields_as_options(verb, module, config, skip):
    """``eval bfcl``, ``eval demo`` and ``serve`` derive an option from each field of their config dataclass: its
    flag (the name with - for _ and the field's short aliases), help and default are the field's."""
    import dataclasses
    import importlib

    import typer

    cls = getattr(importlib.import_module(module), config)
    command = typer.main.get_command(app)
    for name in verb:
        command = command.commands[name]
    params = {p.name: p for p in command.params}
    fields = [f for f in dataclasses.fields(cls) if f.name not in skip]
    for f in fields:
        p = params[f.name]
        assert p.opts[0] == "--" + f.name.replace("_", "-") and p.opts[1:] == f.metadata["aliases"], f.name
        assert p.help.replace("\\[", "[") == f.metadata["help"], f.name
        default = f.metadata.get("flag_default", f.default if f.default is not dataclasses.MISSING else None)
        assert p.required == (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
        assert p.required or p.default == default, f.name
    assert not set(params) & skip  # a field left out is no option (eval demo decodes greedily, one answer a task)
