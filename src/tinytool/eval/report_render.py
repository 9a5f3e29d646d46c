"""The report's pages: tables, failures and charts of the runs as one view, rendered to Markdown and HTML.

Both pages are rendered from one view of the report (`build_report`) by the Jinja templates
``templates/report.md.j2`` (the Markdown, its notes and escaping) and ``templates/report.html.j2`` (the page's
markup and CSS): ``report.md`` is GitHub-flavoured Markdown, ``report.html`` is self-contained apart from the PNG
charts beside it (`tinytool.eval.report_charts`). The headline figures decode strictly; lenient decoding (the
parser's repairs) has a table of its own, never the headline, and an irrelevance category's strict figure shows
beside BFCL's.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2

from tinytool.eval.report_charts import bar_chart, error_chart, line_chart
from tinytool.eval.report_load import RunData, TrainingRun, number

__all__ = ["build_report", "render_page", "select_failures"]

GROUP_ORDER = ("non_live", "live", "irrelevance", "irrelevance_strict", "multi_turn")
QUESTION_CHARS = 300
OUTPUT_CHARS = 500
EXPECTED_CHARS = 400
REASON_CHARS = 400


# ----------------------------------------------------------------------------------------------
# Small helpers
# ----------------------------------------------------------------------------------------------


def _pct(frac: float | None) -> str:
    return "—" if frac is None else f"{100 * frac:.1f}%"


def _delta(first: float | None, last: float | None) -> str:
    if first is None or last is None:
        return "—"
    d = 100 * (last - first)
    if abs(d) < 0.05:
        return "±0.0 pp"
    return f"{d:+.1f} pp"


def _fmt_number(value: Any) -> str:
    num = number(value)
    if num is None:
        return "—" if value is None else str(value)
    if num == int(num) and abs(num) < 1e12:
        return str(int(num))
    return f"{num:.4g}"


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [+{len(text) - limit} chars]"


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _date(run: dict[str, Any]) -> str:
    raw = run.get("finished") or run.get("started") or run.get("created")
    if not raw:
        return "—"
    try:
        return datetime.fromisoformat(str(raw)).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return str(raw)


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return slug[:40] or "run"


def _md_escape(text: Any) -> str:
    """Escape text for a Markdown paragraph or table cell (one line)."""
    text = str(text).replace("\r", " ").replace("\n", " ")
    text = re.sub(r"([\\`*\[\]<>|#])", r"\\\1", text)
    # underscores only matter at word edges on GitHub (intraword `_` never emphasises)
    return re.sub(r"(?<!\w)_|_(?!\w)", r"\\_", text)


def _md_fence(text: str) -> str:
    """A Markdown code fence longer than any run of backticks in ``text``."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


# ----------------------------------------------------------------------------------------------
# Table model (rendered to both Markdown and HTML)
# ----------------------------------------------------------------------------------------------


@dataclass
class _Table:
    header: list[str]
    rows: list[list[str]]
    align_right_from: int = 1  # columns from this index on are numeric

    def html_view(self) -> dict[str, list[Any]]:
        """Header and rows as ``(text, css class)`` pairs for the HTML template: numeric columns
        right-aligned, a ``+x pp`` / ``-x pp`` difference coloured up or down."""
        def cls(i: int, value: str, head: bool = False) -> str:
            if not head and i >= self.align_right_from and value.endswith(" pp") and value[0] in "+-":
                return f"num {'up' if value[0] == '+' else 'down'}"
            return "num" if i >= self.align_right_from else ""

        return {"header": [(h, cls(i, h, head=True)) for i, h in enumerate(self.header)],
                "rows": [[(c, cls(i, c)) for i, c in enumerate(row)] for row in self.rows]}


def _runs_table(runs: list[RunData]) -> _Table:
    rows = []
    for run in runs:
        r = run.run
        thr = run.summary.get("throughput") if isinstance(run.summary.get("throughput"), dict) else {}
        ips = number(thr.get("items_per_s"))
        n = run.n_items()
        rows.append([
            run.label, str(r.get("model") or "—"), str(r.get("format") or "—"), str(r.get("kind") or "—"),
            str(r.get("bfcl_version") or "—"), "—" if n is None else str(n),
            _fmt_number(r.get("samples")) if r.get("samples") is not None else "—",
            _fmt_number(r.get("temperature")) if r.get("temperature") is not None else "—",
            "—" if ips is None else f"{ips:.2f}", _date(r), str(run.path),
        ])
    header = ["Run", "Model", "Format", "Kind", "BFCL version", "Items", "Samples", "Temp.", "Items/s",
              "Date", "Directory"]
    return _Table(header, rows, align_right_from=len(header))


def _first_seen(keys: Any) -> list[str]:
    """The keys of several mappings, each once, in the order they first appear."""
    return list(dict.fromkeys(k for mapping in keys for k in mapping))


def _group_names(runs: list[RunData]) -> list[str]:
    present = _first_seen(run.groups for run in runs)
    ordered = [g for g in GROUP_ORDER if g in present]
    ordered += [g for g in present if g not in ordered and g != "overall"]
    if "overall" in present:
        ordered.append("overall")
    return ordered


def _overall_table(runs: list[RunData], groups: list[str]) -> _Table:
    rows = [[run.label] + [_pct(number(run.groups.get(g))) for g in groups] for run in runs]
    if len(runs) >= 2:
        first, last = runs[0], runs[-1]
        rows.append(["Δ (last − first)"]
                    + [_delta(number(first.groups.get(g)), number(last.groups.get(g))) for g in groups])
    return _Table(["Run", *groups], rows)


def _category_names(runs: list[RunData]) -> list[str]:
    return _first_seen(run.categories for run in runs)


def _category_table(runs: list[RunData], categories: list[str]) -> _Table:
    """The headline accuracy per category; an irrelevance category's strict figure (any attempted call
    fails) gets a row of its own right under BFCL's."""
    rows = []
    for cat in categories:
        keys = ["accuracy"]
        if any(run.accuracy(cat, "accuracy_strict") is not None for run in runs):
            keys.append("accuracy_strict")
        for key in keys:
            row = [cat if key == "accuracy" else f"{cat} (strict)"]
            for run in runs:
                acc = run.accuracy(cat, key)
                n = number(run.categories.get(cat, {}).get("n"))
                row.append(_pct(acc) + ("" if acc is None or n is None else f" (n={int(n)})"))
            if len(runs) >= 2:
                row.append(_delta(runs[0].accuracy(cat, key), runs[-1].accuracy(cat, key)))
            rows.append(row)
    header = ["Category", *(r.label for r in runs)]
    if len(runs) >= 2:
        header.append("Δ (last − first)")
    return _Table(header, rows)


def _decoding_table(runs: list[RunData], categories: list[str], groups: list[str]) -> _Table | None:
    """Strict (the headline) beside lenient decoding per category and group, for the runs that report
    both: what the parser's repairs (Python tuples, single quotes, trailing commas) would change."""
    shown = [r for r in runs if any(r.accuracy(c, "accuracy_lenient") is not None for c in r.categories)]
    if not shown:
        return None
    rows = []
    for cat in categories:
        row = [cat]
        for run in shown:
            strict, lenient = run.accuracy(cat), run.accuracy(cat, "accuracy_lenient")
            row += [_pct(strict), _pct(lenient), _delta(strict, lenient)]
        rows.append(row)
    for g in groups:
        if not any(g in run.groups_lenient for run in shown):
            continue
        row = [f"group: {g}"]
        for run in shown:
            strict, lenient = number(run.groups.get(g)), number(run.groups_lenient.get(g))
            row += [_pct(strict), _pct(lenient), _delta(strict, lenient)]
        rows.append(row)
    header = ["Category"]
    for run in shown:
        header += [f"{run.label}: strict", f"{run.label}: lenient", f"{run.label}: repairs add"]
    return _Table(header, rows)


def _calls_table(runs: list[RunData], categories: list[str]) -> _Table | None:
    """Mean calls per item and no-call rate, when any run reports them."""
    if not any(("mean_calls" in s or "no_call_rate" in s) for r in runs for s in r.categories.values()):
        return None
    rows = []
    for cat in categories:
        row = [cat]
        for run in runs:
            stats = run.categories.get(cat, {})
            calls, none = number(stats.get("mean_calls")), number(stats.get("no_call_rate"))
            row.append("—" if calls is None and none is None else
                       f"{'—' if calls is None else f'{calls:.2f}'} / {_pct(none)}")
        rows.append(row)
    return _Table(["Category", *(f"{r.label}: calls / no-call" for r in runs)], rows)


def _pass_at_k_table(runs: list[RunData], categories: list[str]) -> _Table | None:
    columns: list[tuple[RunData, str]] = []
    for run in runs:
        ks: list[str] = []
        for stats in run.categories.values():
            pak = stats.get("pass_at_k")
            if isinstance(pak, dict):
                ks += [str(k) for k in pak if str(k) not in ks]
        ks.sort(key=lambda k: (number(_try_float(k)) or 0, k))
        columns += [(run, k) for k in ks]
    if not columns:
        return None
    rows = []
    for cat in categories:
        row = [cat]
        for run, k in columns:
            pak = run.categories.get(cat, {}).get("pass_at_k")
            row.append(_pct(number(pak.get(k))) if isinstance(pak, dict) else "—")
        rows.append(row)
    return _Table(["Category", *(f"{run.label}: pass@{k}" for run, k in columns)], rows)


def _try_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _metrics_table(runs: list[RunData]) -> _Table | None:
    keys: list[str] = []
    for run in runs:
        keys += [str(k) for k in run.metrics if str(k) not in keys]
    if not keys:
        return None
    rows = [[key] + [_fmt_number(run.metrics.get(key)) if key in run.metrics else "—" for run in runs]
            for key in keys]
    return _Table(["Metric", *(r.label for r in runs)], rows)


def _training_table(training: list[TrainingRun]) -> _Table:
    """One row per training run: kind, steps, wall time, throughput, first and last loss (and reward)."""
    header = ["run", "kind", "steps", "seconds", "tokens/s", "loss first → last", "reward first → last"]
    rows = []
    for t in training:
        s = t.summary
        loss = f"{t.loss[0][1]:.3f} → {t.loss[-1][1]:.3f}" if t.loss else "—"
        reward = f"{t.reward[0][1]:.3f} → {t.reward[-1][1]:.3f}" if t.reward else "—"
        rows.append([t.label, t.kind, _fmt_number(s.get("global_step")), _fmt_number(s.get("seconds")),
                     _fmt_number(s.get("tokens_per_second")), loss, reward])
    return _Table(header, rows, align_right_from=2)


# ----------------------------------------------------------------------------------------------
# Failures
# ----------------------------------------------------------------------------------------------


def select_failures(results: list[dict[str, Any]] | None, limit: int,
                    categories: list[str] | None = None) -> list[dict[str, Any]]:
    """Pick up to ``limit`` failed items covering categories and error types.

    Round-robin over categories (in ``categories`` order, then any others); inside a category,
    round-robin over its error types, most frequent first. Within one error type, items where no
    sample was correct come first, otherwise file order is kept.
    """
    if not results or limit <= 0:
        return []
    failed = [row for row in results if row.get("valid") is False]
    by_cat: dict[str, list[dict[str, Any]]] = {}
    for row in failed:
        by_cat.setdefault(str(row.get("category") or "unknown"), []).append(row)
    order = [c for c in (categories or []) if c in by_cat] + [c for c in by_cat if c not in (categories or [])]

    queues: list[list[dict[str, Any]]] = []
    for cat in order:
        by_err: dict[str, list[dict[str, Any]]] = {}
        for row in by_cat[cat]:
            by_err.setdefault(str(row.get("error_type") or "unknown"), []).append(row)
        err_order = sorted(by_err, key=lambda e: -len(by_err[e]))  # stable: ties keep first-seen order
        for err in err_order:
            by_err[err].sort(key=lambda r: (number(r.get("samples_correct")) or 0) > 0)
        queues.append(_round_robin([by_err[e] for e in err_order]))
    return _round_robin(queues)[:limit]


def _round_robin(lists: list[list[Any]]) -> list[Any]:
    out: list[Any] = []
    longest = max((len(lst) for lst in lists), default=0)
    for i in range(longest):
        out += [lst[i] for lst in lists if i < len(lst)]
    return out


@dataclass
class _Failure:
    id: str
    category: str
    error_type: str
    reason: str
    question: str
    output: str
    decoded: str
    expected: str
    samples: str


def _failure_view(row: dict[str, Any]) -> _Failure:
    sc, ns = number(row.get("samples_correct")), number(row.get("samples"))
    return _Failure(
        id=str(row.get("id") or "?"),
        category=str(row.get("category") or "unknown"),
        error_type=str(row.get("error_type") or "unknown"),
        reason=_truncate(_as_text(row.get("reason")).strip(), REASON_CHARS),
        question=_truncate(_as_text(row.get("question")).strip(), QUESTION_CHARS),
        output=_truncate(_as_text(row.get("raw")), OUTPUT_CHARS),
        decoded=_truncate(_as_text(row.get("decoded")), EXPECTED_CHARS) if row.get("decoded") is not None else "",
        expected=_truncate(_as_text(row.get("expected")), EXPECTED_CHARS) if row.get("expected") is not None else "",
        samples=f"{int(sc)}/{int(ns)} samples correct" if sc is not None and ns and ns > 1 else "",
    )


def _failures_view(run: RunData, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One run's failures as the templates show them: each text under its label, in a code block (``lang``,
    fenced by ``fence`` in Markdown); in HTML a short text is shown open, a long one (and the model output
    always) folded under its label."""
    items = []
    for row in rows:
        f = _failure_view(row)
        blocks = [{"label": label, "text": text, "lang": lang, "fence": _md_fence(text),
                   "folded": len(text) > open_below or text.count("\n") >= 4}
                  for label, text, lang, open_below in (("Question", f.question, "text", 200),
                                                        ("Model output", f.output, "text", 0),
                                                        ("Decoded calls", f.decoded, "json", 200),
                                                        ("Expected", f.expected, "json", 200))
                  if text]
        items.append({**dataclasses.asdict(f), "blocks": blocks})
    n_failed = sum(1 for r in run.results or [] if r.get("valid") is False)
    return {"label": run.label, "has_results": run.results is not None, "n_failed": n_failed, "failed": items}


# ----------------------------------------------------------------------------------------------
# The view of both pages
# ----------------------------------------------------------------------------------------------


def build_report(runs: list[RunData], out_dir: Path, worst: int, title: str | None,
                 training: list[TrainingRun] = ()) -> tuple[dict[str, Any], list[Path]]:
    """Draw the report's charts into ``out_dir`` and build the view both pages are rendered from (`render_page`):
    ``(view, charts)``. ``worst`` failures are shown per run; ``title`` defaults to one naming the runs."""
    if title is None:
        title = "Evaluation report" + (f": {runs[0].label}" if len(runs) == 1 else f" ({len(runs)} runs)")

    groups = _group_names(runs)
    categories = _category_names(runs)

    # charts
    charts: dict[str, Path] = {}
    if categories:
        charts["categories"] = bar_chart(
            out_dir / "accuracy_by_category.png", categories,
            [(r.label, [r.accuracy(c) for c in categories]) for r in runs],
            title="Accuracy by category", ylabel="accuracy (%)")
    if groups:
        charts["groups"] = bar_chart(
            out_dir / "group_scores.png", groups,
            [(r.label, [number(r.groups.get(g)) for g in groups]) for r in runs],
            title="Group scores", ylabel="score (%)")
    with_loss = [t for t in training if t.loss]
    if with_loss:
        charts["training_loss"] = line_chart(out_dir / "training_loss.png", [(t.label, t.loss) for t in with_loss],
                                             title="Training loss", xlabel="step", ylabel="loss")
    with_reward = [t for t in training if t.reward]
    if with_reward:
        charts["training_reward"] = line_chart(out_dir / "training_reward.png",
                                               [(t.label, t.reward) for t in with_reward],
                                               title="RL reward (mean per step)", xlabel="step", ylabel="reward")
    error_charts: list[tuple[RunData, Path]] = []
    for i, run in enumerate(runs, start=1):
        path = error_chart(out_dir / f"errors_{i}_{_slug(run.label)}.png", run, categories)
        if path is not None:
            error_charts.append((run, path))

    tables: list[tuple[str, str, _Table | None]] = [
        ("runs", "Runs", _runs_table(runs)),
        ("overall", "Overall", _overall_table(runs, groups) if groups else None),
        ("categories", "Per category", _category_table(runs, categories) if categories else None),
        ("decoding", "Strict and lenient decoding", _decoding_table(runs, categories, groups)),
        ("passk", "pass@k", _pass_at_k_table(runs, categories)),
        ("calls", "Calls per item / no-call rate", _calls_table(runs, categories)),
        ("metrics", "Metrics", _metrics_table(runs)),
        ("training", "Training", _training_table(training) if training else None),
    ]
    failures = [(run, select_failures(run.results, worst, categories)) for run in runs]

    view = _report_view(title, tables, charts, error_charts, failures, out_dir)
    return view, [*charts.values(), *(p for _, p in error_charts)]


#: the charts shown under a table of the report
_CHARTS_UNDER = {"overall": [("groups", "Group scores")], "categories": [("categories", "Accuracy by category")],
                 "training": [("training_loss", "Training loss"), ("training_reward", "RL reward")]}


def _rel(path: Path, out_dir: Path) -> str:
    return path.relative_to(out_dir).as_posix()


@functools.cache
def _templates() -> jinja2.Environment:
    """The report's templates: HTML escaped (``*.html.j2``), Markdown escaped by its own ``md`` filter."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("tinytool.eval", "templates"),
                             autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), default=False),
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["md"] = _md_escape
    return env


def _report_view(title: str, tables: list[tuple[str, str, _Table | None]], charts: dict[str, Path],
                 error_charts: list[tuple[RunData, Path]],
                 failures: list[tuple[RunData, list[dict[str, Any]]]], out_dir: Path) -> dict[str, Any]:
    """What both pages show: the tables there are (each with the charts under it), the error-type
    charts and each run's failures."""
    sections = []
    for key, heading, table in tables:
        if table is None:
            continue
        shown = [{"src": _rel(charts[chart], out_dir), "alt": alt} for chart, alt in _CHARTS_UNDER.get(key, ())
                 if chart in charts]
        sections.append({"key": key, "heading": heading, "table": table, "charts": shown})
    return {"title": title, "sections": sections,
            "error_charts": [{"src": _rel(path, out_dir), "label": run.label} for run, path in error_charts],
            "failures": [_failures_view(run, rows) for run, rows in failures]}


def render_page(template: str, view: dict[str, Any]) -> str:
    """One page of the report (``report.md.j2`` or ``report.html.j2``) from the view of `build_report`."""
    return _templates().get_template(template).render(view)
