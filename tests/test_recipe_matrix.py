"""A recipe as an experiment: a matrix of settings runs the stages once per cell in its own folder, and declared
comparisons of two evaluation stages are made per cell, across the cells and over the cells' items pooled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tinytool.errors import UserInputError
from tinytool.recipes.matrix import Matrix, cell_name, commit, compare_cells, narrow, read_matrix

STAGES = ["data", "base-bfcl", "rl-bfcl"]
EVALS = ["base-bfcl", "rl-bfcl"]


def _matrix(data: dict) -> Matrix:
    return read_matrix(data, Path("r.yaml"), {"seed": 0, "lr": 1e-5}, STAGES, EVALS)


def test_cells_are_every_combination_in_order_and_a_set_narrows_an_axis():
    m = _matrix({"matrix": {"seed": [10, 11], "lr": [1e-5, 2e-5]}, "compare": [{"before": "base-bfcl",
                                                                               "after": "rl-bfcl"}]})
    assert m.compare == [("base-bfcl", "rl-bfcl")]
    assert m.cells() == [{"seed": 10, "lr": 1e-5}, {"seed": 10, "lr": 2e-5}, {"seed": 11, "lr": 1e-5},
                         {"seed": 11, "lr": 2e-5}]
    assert cell_name({"seed": 10, "lr": 2e-5}) == "lr-2e-05_seed-10" and cell_name({}) == "run"
    assert cell_name({"model": "runs/a b/out"}) == "model-runs_a_b_out"
    one = narrow(m, {"seed": "10"})
    assert one.axes == {"lr": [1e-5, 2e-5]} and one.compare == m.compare
    assert _matrix({}).cells() == [{}]  # no matrix: the recipe once


@pytest.mark.parametrize(("data", "words"), [
    ({"matrix": {"sed": [1]}}, "matrix.sed: not a variable"),
    ({"matrix": {"seed": []}}, "matrix.seed: expected a non-empty list"),
    ({"matrix": [1, 2]}, "matrix: expected a mapping"),
    ({"compare": [{"before": "base-bfcl"}]}, r"compare\[0\]: expected \{before"),
    ({"compare": [{"before": "base-bfcl", "after": "rl"}]}, r"compare\[0\].after: no stage named 'rl'"),
    ({"compare": [{"before": "data", "after": "rl-bfcl"}]}, r"compare\[0\].before: stage 'data' is no evaluation"),
])
def test_a_malformed_matrix_or_comparison_names_the_file_and_the_key(data, words):
    with pytest.raises(UserInputError, match=f"r.yaml: {words}"):
        _matrix(data)


def _eval_run(folder: Path, right: dict[str, int], n: int = 10) -> Path:
    """A scored ``eval bfcl`` run directory: ``n`` items per category, the first ``right[c]`` right."""
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"kind": "bfcl", "settings": {"model": "m",
                                                                                "format": "hermes-nothink"}}))
    rows = [{"id": f"{c}_{k}", "category": c, "valid": k < right[c], **({"valid_strict": k < right[c]}
                                                                         if c == "irrelevance" else {})}
            for c in right for k in range(n)]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_comparisons_per_cell_across_cells_and_pooled(tmp_path):
    ast = {"simple_python": 5, "multiple": 5, "parallel": 5, "parallel_multiple": 5}
    outs = {}
    for cell, fixed in (("seed-10", 2), ("seed-11", 4)):
        outs[cell] = {"base-bfcl": _eval_run(tmp_path / cell / "base", {**ast, "irrelevance": 4}),
                      "rl-bfcl": _eval_run(tmp_path / cell / "rl", {**ast, "irrelevance": 4 + fixed})}
    outs["seed-12"] = {"base-bfcl": tmp_path / "none", "rl-bfcl": tmp_path / "none"}  # not scored yet
    result = compare_cells(outs, [("base-bfcl", "rl-bfcl")])["rl-bfcl_vs_base-bfcl"]
    assert result["missing"] == ["seed-12"] and list(result["cells"]) == ["seed-10", "seed-11"]
    cell = result["cells"]["seed-10"]
    assert cell["categories"]["irrelevance"]["fixed"] == 2 and cell["headline"]["irrelevance_strict"]["change"] == 0.2
    across = result["across"]["irrelevance_strict"]
    assert (across["mean"], across["values"]) == (pytest.approx(0.3), [0.2, 0.4])
    assert result["across"]["non_live_ast_avg"]["values"] == [0.0, 0.0]
    pooled = result["pooled"]  # six fixed of 20 pairs: McNemar's p = 2 / 2**6
    assert pooled["items"] == 100 and pooled["categories"]["irrelevance"]["fixed"] == 6
    assert pooled["headline"]["irrelevance_strict"]["p"] == pytest.approx(2 / 2 ** 6)


def test_the_commit_a_run_ran_is_read_from_the_checkout():
    rec = commit()
    assert rec["version"] and (rec["commit"] is None or len(rec["commit"]) == 40)


MATRIX_RECIPE = """
name: tiny-matrix
vars: {model: MODEL, seed: 0}
matrix: {seed: [0, 1]}
compare:
  - {before: first, after: second}
stages:
  - name: first
    run: eval bfcl
    args: {model: "{model}", format: hermes-nothink, categories: "simple_python,irrelevance", limit: 2, seed: "{seed}",
           max_new_tokens: 4, label: first, out: "{out}"}
  - name: second
    run: eval bfcl
    args: {model: "{model}", format: hermes-nothink, categories: "simple_python,irrelevance", limit: 2, seed: "{seed}",
           max_new_tokens: 6, label: second, out: "{out}"}
"""


@pytest.mark.slow(60)
def test_run_runs_each_cell_in_its_folder_then_the_comparisons(tmp_path):
    pytest.importorskip("torch")
    from typer.testing import CliRunner

    from tinytool.cli import app
    from tinytool.models.students import save_tiny_model

    model = save_tiny_model("smollm2-135m-instruct", tmp_path / "m", layers=1)
    recipe = tmp_path / "r.yaml"
    recipe.write_text(MATRIX_RECIPE.replace("MODEL", str(model)))
    run = tmp_path / "run"
    r = CliRunner().invoke(app, ["run", str(recipe), "-o", str(run)])
    assert r.exit_code == 0, r.output
    assert (run / "seed-0" / "summary.json").is_file() and (run / "seed-1" / "01-first" / "out").is_dir()
    record = json.loads((run / "matrix.json").read_text())
    assert record["axes"] == {"seed": [0, 1]} and record["cells"]["seed-1"]["stages"] == {"first": "done",
                                                                                          "second": "done"}
    assert "commit" in record
    comparison = json.loads((run / "compare.json").read_text())["comparisons"]["second_vs_first"]
    assert list(comparison["cells"]) == ["seed-0", "seed-1"] and comparison["missing"] == []
    assert comparison["pooled"]["items"] == sum(c["items"] for c in comparison["cells"].values())
    # each cell keeps the failure classes that moved (eval compare's), the spread across cells its deviation
    assert all(isinstance(c["failures_moved"], dict) for c in comparison["cells"].values())
    assert all("std" in spread for spread in comparison["across"].values())
    # a --set of the matrix variable runs that one cell in the run directory itself
    one = tmp_path / "one"
    r = CliRunner().invoke(app, ["run", str(recipe), "-o", str(one), "--set", "seed=1"])
    assert r.exit_code == 0, r.output
    assert (one / "01-first" / "out").is_dir() and not (one / "seed-1").exists()
    assert list(json.loads((one / "compare.json").read_text())["comparisons"]["second_vs_first"]["cells"]) == ["run"]


CHEAP = """
name: cheap
vars: {seed: 0}
matrix: {seed: [1, abc]}
stages:
  - name: data
    run: data demo
    args: {n: 20, seed: "{seed}", out: "{out}"}
"""


def test_every_cell_is_checked_before_the_first_runs(tmp_path):
    from tinytool.recipes.matrix import run_matrix
    from tinytool.recipes.recipe import load_recipe
    from tinytool.recipes.runner import check_recipe

    path = tmp_path / "r.yaml"
    path.write_text(CHEAP)
    ran = []
    with pytest.raises(UserInputError, match="seed"):
        run_matrix(path, load_recipe(path).matrix, tmp_path / "run", {}, lambda r, f: ran.append(f) or {}, load_recipe,
                   check_recipe)
    assert ran == [] and not (tmp_path / "run").exists()  # the bad second cell stopped it before the first ran
    path.write_text(CHEAP.replace("[1, abc]", "[a/b, a_b]"))
    with pytest.raises(UserInputError, match="cells seed-a_b would share a folder"):
        run_matrix(path, load_recipe(path).matrix, tmp_path / "run", {}, lambda r, f: {}, load_recipe, check_recipe)


SHARED = """
name: shared
vars: {seed: 0}
matrix: {seed: [1, 2]}
stages:
  - name: data
    run: data demo
    args: {n: 12, seed: 0, out: "{out}"}
  - name: pool
    run: data select
    positional: ["{data}/train.jsonl"]
    args: {limit: 3, seed: "{seed}", out: "{out}.jsonl"}
"""


def test_a_stage_no_cell_changes_runs_once_and_the_other_cells_link_to_it(tmp_path):
    from typer.testing import CliRunner

    from tinytool.cli import app

    recipe = tmp_path / "r.yaml"
    recipe.write_text(SHARED)
    run = tmp_path / "run"
    r = CliRunner().invoke(app, ["run", str(recipe), "-o", str(run)])
    assert r.exit_code == 0, r.output
    first, second = run / "seed-1", run / "seed-2"
    # the data (seed 0 in both cells) was made once: the second cell's outputs are links to the first's
    assert not (first / "01-data" / "out").is_symlink() and (second / "01-data" / "out").is_symlink()
    assert (second / "01-data" / "out").resolve() == (first / "01-data" / "out").resolve()
    step = json.loads((second / "01-data" / "step.json").read_text())
    assert step["status"] == "done" and step["shared_from"] == str(Path("..") / "seed-1" / "01-data")
    # the pool's seed differs per cell: made in each, from the one data
    assert not (second / "02-pool" / "out.jsonl").is_symlink()
    pools = [(c / "02-pool" / "out.jsonl").read_text() for c in (first, second)]
    assert all(p.count("\n") == 3 for p in pools) and pools[0] != pools[1]
    # a rerun skips every stage of both cells, the shared one included
    r = CliRunner().invoke(app, ["run", str(recipe), "-o", str(run)])
    assert r.exit_code == 0, r.output
    states = [s["status"] for c in (first, second) for s in json.loads((c / "recipe.json").read_text())["stages"]]
    assert states == ["skipped (unchanged)"] * 4
    # a cell's stage whose inputs differ from every other cell's runs there: a changed data size in one cell only
    alone = tmp_path / "alone"
    r = CliRunner().invoke(app, ["run", str(recipe), "-o", str(alone), "--set", "seed=2"])
    assert r.exit_code == 0, r.output
    assert not (alone / "01-data" / "out").is_symlink()  # one cell: nothing to share with


OTHER = """
name: other
stages:
  - name: small
    run: data demo
    args: {n: 6, seed: 0, out: "{out}"}
  - name: world
    run: data demo
    args: {n: 12, seed: 0, out: "{out}"}
  - name: first
    run: data select
    positional: ["{world}/train.jsonl"]
    args: {limit: 3, seed: 1, out: "{out}.jsonl"}
  - name: second
    run: data select
    positional: ["{world}/train.jsonl"]
    args: {limit: 4, seed: 1, out: "{out}.jsonl"}
"""


def test_reuse_links_the_stages_another_recipes_run_finished_under_any_name(tmp_path):
    from typer.testing import CliRunner

    from tinytool.cli import app

    (tmp_path / "shared.yaml").write_text(SHARED)
    (tmp_path / "other.yaml").write_text(OTHER)
    one = tmp_path / "one"
    r = CliRunner().invoke(app, ["run", str(tmp_path / "shared.yaml"), "-o", str(one), "--set", "seed=1"])
    assert r.exit_code == 0, r.output
    two = tmp_path / "two"
    r = CliRunner().invoke(app, ["run", str(tmp_path / "other.yaml"), "-o", str(two), "--reuse", str(one)])
    assert r.exit_code == 0, r.output
    # the same verb and arguments in another folder, under another name: linked, not run
    assert (two / "02-world" / "out").is_symlink()
    assert (two / "02-world" / "out").resolve() == (one / "01-data" / "out").resolve()
    assert json.loads((two / "02-world" / "step.json").read_text())["shared_from"] == \
        str(Path("..") / "one" / "01-data")
    # the same selection from the linked data (the other run's pool, seed 1): linked; another limit: run here
    assert (two / "03-first" / "out.jsonl").resolve() == (one / "02-pool" / "out.jsonl").resolve()
    assert not (two / "04-second" / "out.jsonl").is_symlink() and not (two / "01-small" / "out").is_symlink()
    assert (two / "04-second" / "out.jsonl").read_text().count("\n") == 4
    # a rerun skips them all; a folder that is not there is refused before anything runs
    r = CliRunner().invoke(app, ["run", str(tmp_path / "other.yaml"), "-o", str(two), "--reuse", str(one)])
    assert r.exit_code == 0 and r.output.count("unchanged: skipped") == 4, r.output
    # a run that reuses one which itself linked stages links to the folders that ran them
    three = tmp_path / "three"
    r = CliRunner().invoke(app, ["run", str(tmp_path / "other.yaml"), "-o", str(three), "--reuse", str(two)])
    assert r.exit_code == 0, r.output
    assert (three / "02-world" / "out").resolve() == (one / "01-data" / "out").resolve()
    assert json.loads((three / "01-small" / "step.json").read_text())["shared_from"] == \
        str(Path("..") / "two" / "01-small")
    r = CliRunner().invoke(app, ["run", str(tmp_path / "other.yaml"), "-o", str(tmp_path / "four"),
                                 "--reuse", str(tmp_path / "nowhere")])
    assert r.exit_code != 0 and "--reuse" in r.output and "nowhere" in r.output
    assert not (tmp_path / "four").exists()


def test_a_named_axis_gives_each_of_its_values_variables():
    m = read_matrix({"matrix": {"seed": [0, 1], "row": {"a": {"lr": 2e-5}, "b": None}}}, Path("r.yaml"),
                    {"seed": 0, "lr": 1e-5, "row": ""}, STAGES, EVALS)
    assert m.axes == {"seed": [0, 1], "row": ["a", "b"]} and m.named == {"row": {"a": {"lr": 2e-5}, "b": {}}}
    assert m.cells()[:2] == [{"seed": 0, "row": "a"}, {"seed": 0, "row": "b"}]
    assert m.settings({"seed": 1, "row": "a"}) == {"lr": 2e-5} and m.settings({"seed": 1, "row": "b"}) == {}
    # a --set of a named axis keeps its value (and what that sets); an unknown value names the ones there are
    assert narrow(m, {"row": "b"}).axes == {"seed": [0, 1], "row": ["b"]}
    with pytest.raises(UserInputError, match="--set row=c: not one of the matrix's row values") as e:
        narrow(m, {"row": "c"})
    assert "a, b" in e.value.fix


@pytest.mark.parametrize(("matrix", "words"), [
    ({"row": {"a": {"lrr": 1}}}, r"matrix.row.a.lrr: not a variable"),
    ({"row": {"a": [1]}}, r"matrix.row.a: expected a mapping"),
    ({"row": {"a": {"seed": 1}}, "seed": [0]}, r"matrix.row.a.seed: a matrix variable"),
])
def test_a_malformed_named_axis_names_the_file_and_the_key(matrix, words):
    with pytest.raises(UserInputError, match=f"r.yaml: {words}"):
        read_matrix({"matrix": matrix}, Path("r.yaml"), {"seed": 0, "lr": 1e-5, "row": ""}, STAGES, EVALS)


NAMED = """
name: named
vars: {row: "", k: 1, n: 12}
matrix:
  row:
    one: {k: 1}
    two: {k: 2}
stages:
  - name: data
    run: data demo
    args: {n: "{n}", seed: 0, out: "{out}"}
  - name: pool
    run: data select
    positional: ["{data}/train.jsonl"]
    args: {limit: "{k}", out: "{out}.jsonl"}
"""


def test_the_cells_of_a_named_axis_run_with_their_variables_and_a_set_runs_one(tmp_path):
    from typer.testing import CliRunner

    from tinytool.cli import app

    recipe = tmp_path / "r.yaml"
    recipe.write_text(NAMED)
    run = tmp_path / "run"
    r = CliRunner().invoke(app, ["run", str(recipe), "-o", str(run), "--set", "row=two"])
    assert r.exit_code == 0, r.output
    assert [p.name for p in run.iterdir() if p.is_dir()] == ["row-two"]
    assert (run / "row-two" / "02-pool" / "out.jsonl").read_text().count("\n") == 2
    # the whole matrix later, in the same folder: row-two is done, row-one runs and links to its data
    r = CliRunner().invoke(app, ["run", str(recipe), "-o", str(run)])
    assert r.exit_code == 0, r.output
    assert (run / "row-one" / "02-pool" / "out.jsonl").read_text().count("\n") == 1
    assert (run / "row-one" / "01-data" / "out").is_symlink()
    record = json.loads((run / "matrix.json").read_text())
    assert record["named"] == {"row": {"one": {"k": 1}, "two": {"k": 2}}}
    r = CliRunner().invoke(app, ["run", str(recipe), "-o", str(run), "--set", "row=three"])
    assert r.exit_code != 0 and "not one of the matrix's row values" in r.output
