"""The shared file layer: JSONL errors name file and line, logs repair after a crash, atomic writes leave no
debris, run directories resume only with the same settings."""

from __future__ import annotations

import json
import os
from typing import ClassVar

import pytest

from tinytool.errors import MissingInputError, OutputExistsError, TinytoolError, UserInputError
from tinytool.io import (
    append_jsonl,
    atomic_dir,
    atomic_file,
    check_not_input,
    check_output_file,
    iter_jsonl_rows,
    open_run_dir,
    read_json,
    read_jsonl_rows,
    repair_log,
    write_jsonl,
)
from tinytool.io.files import FileFormatError
from tinytool.io.rundir import RunDirError


def test_jsonl_errors_name_file_and_line(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"a": 1}\n\n{"a": \n')
    with pytest.raises(FileFormatError, match=r"x\.jsonl:3: not valid JSON"):
        read_jsonl_rows(p)
    p.write_bytes(b'{"a": 1}\n{"a": "\xff"}\n')
    with pytest.raises(FileFormatError, match=r"x\.jsonl:2: not UTF-8 text \(byte 0xff"):
        read_jsonl_rows(p)
    bad = []
    assert read_jsonl_rows(p, on_bad=lambda n, why: bad.append(n)) == [{"a": 1}]
    assert bad == [2]
    with pytest.raises(MissingInputError, match="no such file"):
        read_jsonl_rows(tmp_path / "nope.jsonl")
    with pytest.raises(UserInputError, match="is a directory"):
        read_jsonl_rows(tmp_path)


def test_a_utf8_byte_order_mark_is_read_past(tmp_path):
    """Windows tools often start a UTF-8 file with a byte order mark: a JSONL or JSON file reads as without it."""
    p = tmp_path / "bom.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"a": 1}\n{"a": 2}\n')
    assert list(iter_jsonl_rows(p)) == [(1, {"a": 1}), (2, {"a": 2})]
    j = tmp_path / "bom.json"
    j.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert read_json(j) == {"a": 1}


def test_read_json_corrupt(tmp_path):
    p = tmp_path / "run.json"
    p.write_text('{"a": ')
    with pytest.raises(FileFormatError, match=r"run\.json:1: not valid JSON"):
        read_json(p)


def test_repair_keeps_a_complete_last_row_and_drops_broken_ones(tmp_path):
    p = tmp_path / "g.jsonl"
    p.write_bytes(b'{"id": 1}\n{"id": 2}')  # complete JSON, newline lost
    assert repair_log(p) == 0
    assert read_jsonl_rows(p) == [{"id": 1}, {"id": 2}]
    p.write_bytes(b'{"id": 1}\n{"id": 2, "te')  # torn
    assert repair_log(p) == 1
    assert read_jsonl_rows(p) == [{"id": 1}]
    p.write_bytes(b'{"id": 1}\n{"id": 2, "te\n{"id": 3}\n')  # broken line that ends in a newline
    assert repair_log(p) == 1
    append_jsonl(p, [{"id": 4}])
    assert [r["id"] for r in read_jsonl_rows(p)] == [1, 3, 4]


def test_atomic_file_leaves_nothing_on_interrupt(tmp_path):
    p = tmp_path / "out.jsonl"
    p.write_text("old\n")
    with pytest.raises(KeyboardInterrupt), atomic_file(p) as fh:
        fh.write("half")
        raise KeyboardInterrupt
    assert p.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["out.jsonl"]
    assert write_jsonl(p, [{"a": 1}]) == 1
    assert json.loads(p.read_text()) == {"a": 1}


def test_atomic_dir_replaces_as_a_whole(tmp_path):
    d = tmp_path / "split"
    d.mkdir()
    (d / "train.jsonl").write_text("old")
    (d / "dev.jsonl").write_text("old")
    with pytest.raises(KeyboardInterrupt), atomic_dir(d) as tmp:
        (tmp / "train.jsonl").write_text("new")
        raise KeyboardInterrupt
    assert (d / "train.jsonl").read_text() == "old" and (d / "dev.jsonl").read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["split"]
    with atomic_dir(d) as tmp:
        (tmp / "train.jsonl").write_text("new")
    assert sorted(os.listdir(d)) == ["train.jsonl"]


def test_output_checks(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text("1\n")
    with pytest.raises(UserInputError, match="also an input"):
        check_not_input(tmp_path / "." / "x.jsonl", p)
    with pytest.raises(OutputExistsError) as e:
        check_output_file(p, overwrite=False)
    assert "--overwrite" in e.value.fix
    check_output_file(p, overwrite=True)


def test_run_dir_resumes_only_with_same_settings(tmp_path):
    out = tmp_path / "run"
    r = open_run_dir(out, "demo", {"model": "a", "n": 1})
    assert not r.resumed
    # a start that failed before any result (a mistyped model): a corrected rerun is a new run
    (out / "generations.jsonl").write_text("")
    r = open_run_dir(out, "demo", {"model": "a2", "n": 1})
    assert not r.resumed and r.settings["model"] == "a2"
    r = open_run_dir(out, "demo", {"model": "a", "n": 1}, overwrite=True)
    (out / "generations.jsonl").write_text("{}\n")
    r = open_run_dir(out, "demo", {"model": "a", "n": 1})
    assert r.resumed
    with pytest.raises(RunDirError, match=r"model: 'a' there, 'b' now") as e:
        open_run_dir(out, "demo", {"model": "b", "n": 1})
    assert isinstance(e.value, TinytoolError) and "--overwrite" in e.value.fix
    with pytest.raises(RunDirError, match="holds a 'demo' run"):
        open_run_dir(out, "bfcl", {"model": "a", "n": 1})
    r = open_run_dir(out, "demo", {"model": "b", "n": 1}, overwrite=True)
    assert not r.resumed and not (out / "generations.jsonl").exists()


def test_run_dir_refuses_foreign_and_corrupt(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "precious.txt").write_text("x")
    with pytest.raises(OutputExistsError, match="not a tinytool run"):
        open_run_dir(out, "demo", {})
    with pytest.raises(OutputExistsError, match="not a tinytool run"):
        open_run_dir(out, "demo", {}, overwrite=True)
    assert (out / "precious.txt").exists()
    (out / "run.json").write_text("{broken")
    with pytest.raises(RunDirError, match="damaged"):
        open_run_dir(out, "demo", {})


def test_run_settings_read_the_one_declaration(tmp_path, monkeypatch):
    """Every field of a config defines its run except the ones its ``FREE`` lists; a config that extends a
    library's dataclass counts inherited fields only where ``LIBRARY_SETTINGS`` names them; enums read as their
    values and ``PATHS`` as absolute paths; derived settings are added."""
    import dataclasses
    import enum

    from tinytool.io import run_settings
    from tinytool.train.sft import SFTRunConfig

    class Mode(enum.Enum):
        FAST = "fast"

    @dataclasses.dataclass
    class Plain:
        FREE: ClassVar[frozenset[str]] = frozenset({"label"})
        PATHS: ClassVar[tuple[str, ...]] = ("data",)
        model: str
        data: str
        mode: Mode = Mode.FAST
        label: str = "x"

    (tmp_path / "d.jsonl").write_text("{}\n")
    monkeypatch.chdir(tmp_path)  # restored after: a later test's subprocess must not start in a removed folder
    got = run_settings(Plain("m", "d.jsonl"), data_sha256="abc")
    assert got == {"model": "m", "data": str(tmp_path / "d.jsonl"), "mode": "fast", "data_sha256": "abc"}

    cfg = SFTRunConfig(model="m", data=["d.jsonl"], output_dir=str(tmp_path / "out"), report_to="none")
    settings = run_settings(cfg)
    assert {"model", "lora", "learning_rate", "seed", "weight_decay", "lr_scheduler_type"} <= set(settings)
    assert not {"output_dir", "max_steps", "logging_steps", "overwrite"} & set(settings)  # FREE
    assert "dataloader_num_workers" not in settings and "hub_model_id" not in settings  # inherited, not named
    assert settings["lr_scheduler_type"] == cfg.lr_scheduler_type.value


def test_an_option_newer_than_the_run_resumes_at_its_default(tmp_path):
    """A run recorded before an option existed resumes while the option keeps its default (that is how the run
    behaved); another value is a difference that says the old run did not record it."""
    import dataclasses

    from tinytool.io import run_settings

    @dataclasses.dataclass
    class Old:
        model: str

    @dataclasses.dataclass
    class New:
        model: str
        beams: int = 1
        tags: list = dataclasses.field(default_factory=list)

    out = tmp_path / "run"
    open_run_dir(out, "demo", run_settings(Old("m"))).update(done=1)
    (out / "result.txt").write_text("work")
    assert open_run_dir(out, "demo", run_settings(New("m"))).resumed
    (out / "run.json").write_text(json.dumps({**json.loads((out / "run.json").read_text()),
                                              "settings": {"model": "m"}}))
    with pytest.raises(RunDirError, match="beams: not recorded there, 4 now"):
        open_run_dir(out, "demo", run_settings(New("m", beams=4)))
    with pytest.raises(RunDirError, match="model: 'm' there, 'n' now"):
        open_run_dir(out, "demo", run_settings(New("n")))


def test_step_marks_a_finished_unit(tmp_path):
    """A unit's ``step.json`` counts as done only when it finished, with the same fingerprint; a torn or
    unfinished record means the unit runs again."""
    from tinytool.io import Step

    step = Step(tmp_path / "u", fingerprint="a")
    assert step.done is None
    step.start(command=["x"])
    assert step.done is None and step.record["command"] == ["x"]
    assert step.finish({"kept": 3}) == {"kept": 3}
    assert Step(tmp_path / "u", "a").done == {"kept": 3}
    assert Step(tmp_path / "u", "b").done is None  # what it depends on changed
    step.finish({"kept": 0}, status="failed (exit 2)")
    assert step.done is None
    (tmp_path / "u" / "step.json").write_text('{"status": "do')
    assert step.done is None and step.record == {}
