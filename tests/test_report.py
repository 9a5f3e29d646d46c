"""tinytool.eval.report: Markdown/HTML/PNG report from fake evaluation run directories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tinytool.eval.report import ReportError, load_run, select_failures, write_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _item(i: int, category: str, valid: bool, error_type: str | None = None, raw: str | None = None) -> dict:
    return {
        "id": f"{category}_{i}", "category": category, "valid": valid,
        "error_type": None if valid else error_type,
        "reason": None if valid else f"Invalid value for parameter 'city': got 'Pari|s' (item {i})",
        "question": f"What is the weather in Paris? ({i}) " + "x" * 400,
        "raw": raw if raw is not None else
        f'<tool_call>\n{{"name": "get_weather", "arguments": {{"city": "Pari|s{i}"}}}}\n</tool_call>',
        "decoded": [{"get_weather": {"city": f"Pari|s{i}"}}],
        "expected": [{"get_weather": {"city": ["Paris"]}}], "n_calls": 1,
    }


def _write_run(path: Path, run: dict | None, summary: dict | None, results: list[dict] | None) -> Path:
    path.mkdir(parents=True)
    if run is not None:
        (path / "run.json").write_text(json.dumps(run))
    if summary is not None:
        (path / "summary.json").write_text(json.dumps(summary))
    if results is not None:
        (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    return path


def _results(spec: dict[str, tuple[int, int, list[str]]]) -> list[dict]:
    """category -> (n, correct, error types cycled over the failures)."""
    rows = []
    for cat, (n, correct, errors) in spec.items():
        for i in range(n):
            ok = i < correct
            rows.append(_item(i, cat, ok, None if ok else errors[i % len(errors)]))
    return rows


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    base_spec = {"simple_python": (10, 4, ["value_error:string", "simple_function_checker:wrong_func_name"]),
                 "multiple": (8, 2, ["type_error:simple"]),
                 "irrelevance": (5, 5, ["irrelevance_error:decoder_success"])}
    base = _write_run(
        tmp_path / "base",
        {"kind": "bfcl", "model": "smollm2-135m-instruct", "format": "hermes", "bfcl_version": "2026.3.23",
         "categories": list(base_spec), "limit": 10, "samples": 1, "temperature": 0.0, "max_new_tokens": 256,
         "started": "2026-03-30T10:00:00", "finished": "2026-03-30T10:20:00", "tinytool_version": "0.1.0",
         "label": "base"},
        {"categories": {
            "simple_python": {"n": 10, "correct": 4, "accuracy": 0.4, "full_size": 400, "mean_calls": 1.0,
                              "no_call_rate": 0.1,
                              "errors": {"value_error:string": 3, "simple_function_checker:wrong_func_name": 3}},
            "multiple": {"n": 8, "correct": 2, "accuracy": 0.25, "errors": {"type_error:simple": 6}},
            "irrelevance": {"n": 5, "correct": 5, "accuracy": 1.0, "errors": {}}},
         "groups": {"non_live": 0.325, "irrelevance": 1.0, "overall": 0.4},
         "metrics": {"tcr": 0.81234, "entropy": 1.5},
         "throughput": {"items_per_s": 1.25, "seconds": 18.4}},
        _results(base_spec))
    # second run: no run.json label/metrics/throughput/errors/mean_calls, an extra category, a category missing
    tuned_spec = {"simple_python": (10, 7, ["value_error:string"]),
                  "live_simple": (4, 1, ["wrong_count"])}
    tuned = _write_run(
        tmp_path / "tuned-run",
        {"kind": "demo", "model": "smollm2-135m-instruct+lora"},
        {"categories": {"simple_python": {"n": 10, "correct": 7},
                        "live_simple": {"n": 4, "correct": 1, "accuracy": 0.25}},
         "groups": {"non_live": 0.7, "live": 0.25, "overall": 0.55}},
        _results(tuned_spec))
    return base, tuned


def test_write_report_files_and_numbers(runs: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "report"
    paths = write_report(list(runs), out, worst=6)
    assert paths["markdown"] == out / "report.md" and paths["markdown"].is_file()
    assert paths["html"] == out / "report.html" and paths["html"].is_file()
    assert len(paths["charts"]) == 4  # categories, groups, one error chart per run
    for png in paths["charts"]:
        data = Path(png).read_bytes()
        assert png.parent == out and len(data) > 1000 and data.startswith(PNG_MAGIC)

    md = paths["markdown"].read_text()
    # runs: label, then dir name when there is no label
    assert "base" in md and "tuned-run" in md and "2026.3.23" in md and "2026-03-30 10:20" in md
    # per-category cells and Δ (last − first, in points)
    assert "40.0% (n=10)" in md and "70.0% (n=10)" in md
    assert "+30.0 pp" in md
    assert "25.0% (n=8)" in md and "25.0% (n=4)" in md
    # union of categories in first-seen order
    per_cat = md.split("## Per category", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip() for line in per_cat.splitlines() if line.startswith("| ")]
    assert rows[2:] == ["simple_python", "multiple", "irrelevance", "live_simple"]
    # overall table with group columns present in any run, overall last
    header = next(line for line in md.splitlines() if line.startswith("| Run | non_live"))
    assert header.split("|")[2:-1] == [" non_live ", " live ", " irrelevance ", " overall "]
    assert "32.5%" in md and "+15.0 pp" in md
    # metrics from the run that has them, a dash for the one that has not
    assert "| tcr | 0.8123 | — |" in md
    # pipes escaped in table cells and prose; raw outputs fenced; images by relative path
    assert "Pari\\|s" in md
    assert "```text\n<tool_call>" in md
    assert "](accuracy_by_category.png)" in md and "](group_scores.png)" in md
    # paragraphs one blank line apart, one newline at the end
    assert md.startswith("# Evaluation report (2 runs)\n\n## Runs\n\n| Run |")
    assert "\n\n\n" not in md and md.endswith("```\n") and not md.endswith("\n\n")


def test_html_escapes_model_output(runs: tuple[Path, Path], tmp_path: Path) -> None:
    paths = write_report(list(runs), tmp_path / "r", title="My <eval>")
    page = paths["html"].read_text()
    assert "&lt;tool_call&gt;" in page
    assert "<tool_call>" not in page
    assert "<title>My &lt;eval&gt;</title>" in page
    assert "<details>" in page and '<img src="accuracy_by_category.png"' in page


def test_failures_cover_categories_and_error_types(runs: tuple[Path, Path], tmp_path: Path) -> None:
    base = load_run(runs[0])
    picked = select_failures(base.results, 4, list(base.categories))
    assert len(picked) == 4
    assert all(row["valid"] is False for row in picked)
    assert {row["category"] for row in picked} == {"simple_python", "multiple"}
    # both error types of simple_python show up within the first picks
    simple_errors = {row["error_type"] for row in picked if row["category"] == "simple_python"}
    assert simple_errors == {"value_error:string", "simple_function_checker:wrong_func_name"}

    md = write_report([runs[0]], tmp_path / "one", worst=3)["markdown"].read_text()
    section = md.split("## Worst failures", 1)[1]
    assert "simple\\_python" not in section  # intraword underscores stay readable
    assert section.count("#### ") == 3
    assert "simple_python_" in section and "multiple_" in section
    assert "Evaluation report: base" in md
    # question truncated
    assert "x" * 400 not in section and "chars]" in section


def test_single_run_without_optional_files(tmp_path: Path) -> None:
    run = _write_run(tmp_path / "bare", None, {"categories": {"simple_python": {"n": 3, "correct": 1}}}, None)
    paths = write_report([run], tmp_path / "out")
    md = paths["markdown"].read_text()
    assert "33.3% (n=3)" in md and "Δ" not in md
    assert "No results.jsonl" in md
    assert [p.name for p in paths["charts"]] == ["accuracy_by_category.png"]


def test_error_missing_summary(tmp_path: Path) -> None:
    run = _write_run(tmp_path / "nosummary", {"kind": "bfcl"}, None, [])
    with pytest.raises(ReportError, match=r"nosummary.*summary\.json"):
        write_report([run], tmp_path / "out")
    with pytest.raises(ReportError, match="not a directory"):
        write_report([tmp_path / "does-not-exist"], tmp_path / "out")
    with pytest.raises(ReportError):
        write_report([], tmp_path / "out")


def test_error_bad_summary_json(tmp_path: Path) -> None:
    run = _write_run(tmp_path / "badjson", None, None, None)
    (run / "summary.json").write_text('{"categories": {\n  "a": }\n')
    with pytest.raises(ReportError, match=r"summary\.json: invalid JSON at line 2"):
        load_run(run)


def test_error_broken_jsonl_line(tmp_path: Path) -> None:
    run = _write_run(tmp_path / "brokenl", None, {"categories": {}}, None)
    lines = [json.dumps(_item(0, "simple_python", True)), json.dumps(_item(1, "simple_python", False, "x")),
             '{"id": "simple_python_2", "valid": fals']
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ReportError) as exc:
        write_report([run], tmp_path / "out")
    msg = str(exc.value)
    assert "results.jsonl:3: not valid JSON" in msg and str(run) in msg


# ---- the output directory ------------------------------------------------------------------------

def test_report_refuses_an_existing_out_and_replaces_a_report_as_a_whole(runs: tuple[Path, Path],
                                                                         tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tinytool.cli import app

    out = tmp_path / "report"
    two = write_report(list(runs), out)
    assert len(two["charts"]) == 4
    before = (out / "report.md").read_text()
    r = CliRunner().invoke(app, ["report", str(runs[0]), "--out", str(out)])
    assert r.exit_code == 2 and "already exists and is not empty" in r.stderr and "--overwrite" in r.stderr
    assert (out / "report.md").read_text() == before
    r = CliRunner().invoke(app, ["report", str(runs[0]), "--out", str(out), "--overwrite"])
    assert r.exit_code == 0, r.output
    # the second run's error chart, from the old report, is gone; nothing else left beside out
    assert sorted(p.name for p in out.iterdir()) == ["accuracy_by_category.png", "errors_1_base.png",
                                                     "group_scores.png", "report.html", "report.md"]
    assert "tuned-run" not in (out / "report.md").read_text()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_report_overwrite_replaces_only_a_report(runs: tuple[Path, Path], tmp_path: Path) -> None:
    from tinytool.errors import OutputExistsError

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("precious\n")
    with pytest.raises(OutputExistsError, match="already exists"):
        write_report([runs[0]], mine)
    with pytest.raises(OutputExistsError, match="holds no report"):
        write_report([runs[0]], mine, overwrite=True)
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    with pytest.raises(OutputExistsError, match="holds the run directory"):
        write_report([runs[0]], tmp_path, overwrite=True)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert write_report([runs[0]], empty)["markdown"] == empty / "report.md"


def test_report_interrupted_leaves_the_old_report(runs: tuple[Path, Path], tmp_path: Path, monkeypatch) -> None:
    from tinytool.eval import report

    out = tmp_path / "report"
    write_report(list(runs), out)
    before = sorted(p.name for p in out.iterdir())

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "_render", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_report([runs[0]], out, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base", "report", "tuned-run"]


def test_report_shows_strict_and_lenient_figures_apart(runs: tuple[Path, Path], tmp_path: Path) -> None:
    strict_run = _write_run(
        tmp_path / "strict-run", {"kind": "bfcl", "model": "m", "label": "strict"},
        {"decoding": "strict",
         "categories": {
             "multiple": {"n": 40, "correct": 10, "accuracy": 0.25, "correct_lenient": 11, "accuracy_lenient": 0.275},
             "irrelevance": {"n": 40, "correct": 38, "accuracy": 0.95, "correct_lenient": 37,
                             "accuracy_lenient": 0.925, "correct_strict": 4, "accuracy_strict": 0.1}},
         "groups": {"non_live": 0.25, "irrelevance": 0.95, "irrelevance_strict": 0.1, "overall": 0.6},
         "groups_lenient": {"non_live": 0.275, "irrelevance": 0.925, "overall": 0.6}},
        None)
    # an old summary (no lenient or strict keys) beside the new one still renders
    md = write_report([runs[0], strict_run], tmp_path / "r")["markdown"].read_text()
    per_cat = md.split("## Per category", 1)[1].split("\n## ", 1)[0]
    assert "| irrelevance | 100.0% (n=5) | 95.0% (n=40) |" in per_cat
    assert "| irrelevance (strict) | — | 10.0% (n=40) |" in per_cat  # beside BFCL's figure
    header = next(line for line in md.splitlines() if line.startswith("| Run | non_live"))
    assert header.split("|")[2:-1] == [" non_live ", " irrelevance ", " irrelevance_strict ", " overall "]
    decoding = md.split("## Strict and lenient decoding", 1)[1].split("\n## ", 1)[0]
    assert "strict: strict | strict: lenient | strict: repairs add" in decoding  # only the run that has both
    assert "| multiple | 25.0% | 27.5% | +2.5 pp |" in decoding
    assert "| group: non_live | 25.0% | 27.5% | +2.5 pp |" in decoding
    assert "Strict and lenient decoding" in (tmp_path / "r" / "report.html").read_text()
    # the headline never takes the lenient figure
    assert "27.5% (n=40)" not in md


def test_report_of_old_summaries_has_no_decoding_table(runs: tuple[Path, Path], tmp_path: Path) -> None:
    md = write_report(list(runs), tmp_path / "r")["markdown"].read_text()
    assert "Strict and lenient decoding" not in md and "| irrelevance (strict)" not in md


def _training_dirs(tmp_path: Path) -> list[Path]:
    sft = tmp_path / "run" / "02-teacher-sft" / "out"
    rl = tmp_path / "run" / "04-student-rl" / "out"
    for d in (sft, rl):
        d.mkdir(parents=True)
    (sft / "sft_summary.json").write_text(json.dumps(
        {"global_step": 20, "seconds": 300.5, "tokens_per_second": 168.2,
         "losses": [[1, 1.17], [10, 0.43], [20, "nan"], [20, 0.48], "junk"]}))
    (rl / "rl_summary.json").write_text(json.dumps(
        {"global_step": 3, "seconds": 60, "curves": {"reward": [[1, 0.2], [2, 0.35], [3, 0.4]],
                                                     "loss": [[1, 0.01], [3, 0.02]]}}))
    return [sft, rl]


def test_report_draws_the_training_curves(runs: tuple[Path, Path], tmp_path: Path) -> None:
    sft, rl = _training_dirs(tmp_path)
    paths = write_report(list(runs), tmp_path / "report", training=[sft, rl])
    names = {p.name for p in paths["charts"]}
    assert {"training_loss.png", "training_reward.png"} <= names
    md = paths["markdown"].read_text()
    assert "## Training" in md and "| teacher-sft | sft | 20 | 300.5 | 168.2 | 1.170 → 0.480 | — |" in md
    assert "| student-rl | rl | 3 | 60 | — | 0.010 → 0.020 | 0.200 → 0.400 |" in md
    html = paths["html"].read_text()
    assert 'src="training_loss.png"' in html and 'src="training_reward.png"' in html


def test_report_refuses_a_folder_that_is_no_training_run(runs: tuple[Path, Path], tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ReportError, match="is not a training run: none of sft_summary.json"):
        write_report(list(runs), tmp_path / "report", training=[empty])
    (empty / "rl_summary.json").write_text("{broken")
    with pytest.raises(ReportError, match=r"rl_summary.json: invalid JSON at line 1"):
        write_report(list(runs), tmp_path / "report", training=[empty])
    assert not (tmp_path / "report").exists()
