"""The demo generator's settings as one declared config: `DemoConfig` from flags and YAML, recorded in the data
set's manifest, and the generated tools' tables read from the package's data files."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tinytool.data.cli_demo import demo, demo_app
from tinytool.data.demo import MANIFEST, generate_demo, proctools, write_demo
from tinytool.data.demo.config import DEFAULT_MIX, REAL_DEV, DemoConfig, file_settings, load_config
from tinytool.errors import TinytoolError, UserInputError

N = 120


def _rows(split):
    return [c.to_dict() for c in split]


def _yaml(path: Path, values: dict) -> Path:
    path.write_text(yaml.safe_dump(values, sort_keys=False), encoding="utf-8")
    return path


def test_the_config_round_trips_through_yaml(tmp_path):
    """A config written as YAML reads back equal, the built-in mix resolved; so does a data set's manifest."""
    for cfg in (DemoConfig(), DemoConfig(n=50, seed=3, twin_p=0.25, mix={"simple": 2.0, "irrelevance": 1.0},
                                         real_dev={"real_simple": 0.1}, per_toolset=3, variants=4)):
        path = _yaml(tmp_path / "demo.yaml", cfg.to_dict())
        assert load_config(path) == cfg
    default = DemoConfig()
    assert default.mix == DEFAULT_MIX and default.real_dev == REAL_DEV
    assert DemoConfig(mix={"simple": 1.0}).real_dev == {}  # a mix of one's own has no realistic dev categories
    write_demo(N, 2, tmp_path / "set", twin_p=0.4)
    manifest = json.loads((tmp_path / "set" / MANIFEST).read_text())
    assert manifest["kind"] == "data demo" and manifest["counts"] == {"train": 108, "dev": 12}
    assert load_config(tmp_path / "set" / MANIFEST) == DemoConfig(n=N, seed=2, twin_p=0.4)


def test_a_changed_setting_changes_the_data_and_the_default_reproduces_it(tmp_path):
    base = generate_demo(N, 1)
    defaults = _yaml(tmp_path / "defaults.yaml", DemoConfig(n=N, seed=1).to_dict())
    again = generate_demo(config=load_config(defaults))
    assert _rows(again[0] + again[1]) == _rows(base[0] + base[1])
    for setting in ({"twin_p": 0.0}, {"many_values_p": 0.1}, {"optional_p": 0.9}, {"variants": 3}):
        other = generate_demo(config=load_config(_yaml(tmp_path / "other.yaml", {"n": N, "seed": 1, **setting})))
        assert _rows(other[0] + other[1]) != _rows(base[0] + base[1]), setting
    near = lambda tasks: [c for c in tasks if c.meta["category"] == "irrelevance" and c.meta.get("requested_tool")]
    none = near([c for split in generate_demo(400, 0, mix={"irrelevance": 1.0}, twin_p=0.0) for c in split])
    most = near([c for split in generate_demo(400, 0, mix={"irrelevance": 1.0}, twin_p=1.0) for c in split])
    assert not any("twin" in c.meta for c in none) and sum("twin" in c.meta for c in most) > 0.8 * len(most)


def test_the_cli_reads_a_config_file_under_its_flags_and_writes_the_manifest(tmp_path):
    config = _yaml(tmp_path / "demo.yaml", {"n": 80, "seed": 4, "twin_p": 0.3, "mix": "simple=1,irrelevance=1"})
    runner = CliRunner()
    res = runner.invoke(demo_app, ["--config", str(config), "--seed", "5", "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    made = load_config(tmp_path / "a" / MANIFEST)
    assert made == DemoConfig(n=80, seed=5, twin_p=0.3, mix={"simple": 0.5, "irrelevance": 0.5})
    res = runner.invoke(demo_app, ["--config", str(tmp_path / "a" / MANIFEST), "--out", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    for name in ("train.jsonl", "dev.jsonl", MANIFEST):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    res = runner.invoke(demo_app, ["--n", "40", "--twin-p", "0.5", "--variants", "2", "--out", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    assert load_config(tmp_path / "c" / MANIFEST) == DemoConfig(n=40, twin_p=0.5, variants=2)


def test_the_verbs_own_flags_are_keys_of_the_config_file_too(tmp_path, monkeypatch):
    """Every flag is a key: out and overwrite are read from the file as from the command line, a flag beside it
    overriding it; a relative out is relative to the working folder, as the flag's."""
    from tinytool.data.demo.config import VERB_FLAGS

    own = set(inspect.signature(demo).parameters) - {f.name for f in dataclasses.fields(DemoConfig)}
    assert own == {*VERB_FLAGS, "config", "ctx"}  # every flag of the verb but --config is a key of the file
    runner = CliRunner()
    config = _yaml(tmp_path / "demo.yaml", {"n": 40, "seed": 2, "out": str(tmp_path / "a")})
    res = runner.invoke(demo_app, ["--config", str(config)])
    assert res.exit_code == 0, res.output
    assert load_config(tmp_path / "a" / MANIFEST) == DemoConfig(n=40, seed=2)
    res = runner.invoke(demo_app, ["--config", str(config)])
    assert res.exit_code == 2 and "already exists" in res.stderr  # as `--out` would be
    _yaml(config, {"n": 40, "seed": 3, "out": str(tmp_path / "a"), "overwrite": True})
    res = runner.invoke(demo_app, ["--config", str(config)])
    assert res.exit_code == 0 and load_config(tmp_path / "a" / MANIFEST).seed == 3, res.output
    res = runner.invoke(demo_app, ["--config", str(config), "--out", str(tmp_path / "b")])
    assert res.exit_code == 0 and load_config(tmp_path / "b" / MANIFEST).seed == 3, res.output
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(demo_app, ["--config", str(_yaml(tmp_path / "rel.yaml", {"n": 40, "out": "c"}))])
    assert res.exit_code == 0 and (tmp_path / "c" / MANIFEST).is_file(), res.output
    res = runner.invoke(demo_app, ["--config", str(tmp_path / "none.yaml")])
    assert res.exit_code == 2 and "none.yaml' does not exist" in res.stderr  # named before --out is missed
    for values, said in (({"n": 40}, "Missing option '--out'"), ({"out": 3}, "out: expected a path, got 3"),
                         ({"out": "d", "overwrite": "maybe"}, "overwrite: expected true or false, got 'maybe'"),
                         ({"out": "d", "config": "x.yaml"}, "unknown setting 'config'")):
        path = _yaml(tmp_path / "v.yaml", values)
        res = runner.invoke(demo_app, ["--config", str(path)])
        assert res.exit_code == 2 and said in res.stderr and "Traceback" not in res.output, res.output
        assert not (tmp_path / "d").exists()


def test_every_setting_is_a_flag():
    """One flag per field, with its default, bounds and short aliases: recipes and --help see them all."""
    from tinytool.recipes.recipe import verb_options

    params = dict(inspect.signature(demo).parameters)
    for f in dataclasses.fields(DemoConfig):
        option = params[f.name].default
        assert f"--{f.name.replace('_', '-')}" in option.param_decls
        assert option.default == (None if "parse" in f.metadata else f.default)
    assert params["n"].default.param_decls == ("--n", "-n") and params["n"].default.min == 1
    # a stage's options: every setting and the verb's own (its --config file is the one the recipe writes)
    assert {f.name for f in dataclasses.fields(DemoConfig)} | {"out", "overwrite"} <= verb_options("data demo")
    res = CliRunner().invoke(demo_app, ["--help"], terminal_width=200)
    assert "--twin-p" in res.output and "Generator settings" in res.output


def test_an_unknown_or_bad_key_of_a_config_file_is_named_with_its_file(tmp_path):
    bad = _yaml(tmp_path / "bad.yaml", {"n": 30, "twinp": 0.3})
    with pytest.raises(UserInputError, match=r"bad\.yaml: unknown setting 'twinp' \(did you mean 'twin_p'\?\)"):
        file_settings(bad)
    res = CliRunner().invoke(demo_app, ["--config", str(bad), "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and f"error: {bad}: unknown setting 'twinp'" in res.stderr and "fix:" in res.stderr
    assert not (tmp_path / "out").exists()
    for values, said in (({"twin_p": 1.5}, "twin_p: must be in [0.0, 1.0], got 1.5"),
                         ({"n": "many"}, "n: expected an integer, got 'many'"),
                         ({"mix": {"simple": 1, "bogus": 1}}, "mix: unknown category 'bogus'"),
                         ({"mix": "simple=1,bogus=1"}, "mix: unknown category 'bogus'"),
                         (["n", 3], "a config file holds a mapping")):
        path = _yaml(tmp_path / "v.yaml", values)
        with pytest.raises(UserInputError) as e:
            file_settings(path)
        assert str(e.value).startswith(f"{path}: ") and said in str(e.value) and e.value.fix
    with pytest.raises(UserInputError, match="open_p"):
        DemoConfig(open_p=0.1)  # below chitchat_p: the kinds of irrelevance negatives are bounded in turn


def test_the_tables_are_package_data_read_once():
    import tomllib

    tables = proctools.tables()
    assert tables is proctools.tables() and proctools.SLOTS is tables.slots and proctools.ACTIONS is tables.actions
    assert len(tables.slots) > 100 and len(tables.actions) > 100 and tables.held_out_domains
    root = Path(__file__).resolve().parents[1]
    globs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["tinytool"]
    package = root / "src" / "tinytool"
    shipped = {p for g in globs for p in package.glob(g)}
    assert {proctools.TABLES / "slots.yaml", proctools.TABLES / "actions.yaml"} <= shipped


def test_a_broken_table_entry_is_named(tmp_path, monkeypatch):
    for name in ("slots.yaml", "actions.yaml"):
        (tmp_path / name).write_text((proctools.TABLES / name).read_text(encoding="utf-8"), encoding="utf-8")
    slots = tmp_path / "slots.yaml"
    slots.write_text(slots.read_text(encoding="utf-8").replace("sample: {pick: CITIES}", "sample: {pick: TOWNS}", 1),
                     encoding="utf-8")
    monkeypatch.setattr(proctools, "TABLES", tmp_path)
    proctools.tables.cache_clear()
    try:
        with pytest.raises(TinytoolError, match=r"slots\.yaml: slot 'city': unknown pool 'TOWNS'") as e:
            proctools.tables()
        assert e.value.fix
    finally:
        monkeypatch.undo()
        proctools.tables.cache_clear()
