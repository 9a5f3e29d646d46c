"""The page a person reads after an evaluation: Markdown + HTML + PNG charts for one or more runs.

`write_report` reads evaluation run directories written by ``tinytool eval bfcl`` or
``tinytool eval demo``::

    RUN_DIR/run.json        what was run: the manifest of `tinytool.io.open_run_dir` (its ``settings``:
                            model, format, BFCL version, sampling; then label, dates); a flat
                            object with the same keys is read too
    RUN_DIR/summary.json    per-category and per-group scores, optional metrics and throughput
    RUN_DIR/results.jsonl   one line per item (validity, error type, reason, question, raw output, ...)

A BFCL summary's headline ``accuracy`` decodes strictly (a call block counts only as valid JSON); its
``accuracy_lenient`` (and ``groups_lenient``) says what the parser's repairs would give, and shows in a
table of its own, never in the headline; its ``accuracy_strict`` (irrelevance: any attempted call
fails) shows beside BFCL's irrelevance figure. Summaries written before these keys render without them.

``summary.json`` is required; ``run.json`` and ``results.jsonl`` are optional (the report just says
less without them). Every optional key inside them may be missing. A file that is present but broken
raises `ReportError` naming the file (and the line, for JSONL).

Output in ``out_dir``: ``report.md`` (GitHub-flavoured Markdown), ``report.html`` (self-contained
apart from the PNG charts beside it) and the charts themselves. Both pages are rendered from one
view of the report by the Jinja templates ``templates/report.md.j2`` (the Markdown, its notes and
escaping) and ``templates/report.html.j2`` (the page's markup and CSS). The directory is written as a
whole (built aside, then put in place), so a rerun leaves no chart of an older report behind and an
interrupted one leaves the old report as it was. An existing non-empty ``out_dir`` is replaced only
with ``overwrite``, and only when it holds a previous report. Charts are drawn with matplotlib's
object API on the Agg canvas, so no display and no global pyplot state are involved.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2

from tinytool.errors import OutputExistsError, TinytoolError
from tinytool.io import atomic_dir, iter_jsonl_rows
from tinytool.io.files import FileFormatError

__all__ = ["ReportError", "RunData", "load_run", "select_failures", "write_report"]

GROUP_ORDER = ("non_live", "live", "irrelevance", "irrelevance_strict", "multi_turn")
TOP_ERROR_TYPES = 8
QUESTION_CHARS = 300
OUTPUT_CHARS = 500
EXPECTED_CHARS = 400
REASON_CHARS = 400


class ReportError(TinytoolError):
    """A run directory could not be read as an evaluation run."""


# ----------------------------------------------------------------------------------------------
# Loading
# ----------------------------------------------------------------------------------------------


@dataclass
class RunData:
    """One evaluation run as read from its directory."""

    path: Path
    run: dict[str, Any]
    summary: dict[str, Any]
    results: list[dict[str, Any]] | None
    label: str = ""
    categories: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def groups(self) -> dict[str, Any]:
        groups = self.summary.get("groups")
        return groups if isinstance(groups, dict) else {}

    @property
    def metrics(self) -> dict[str, Any]:
        metrics = self.summary.get("metrics")
        return metrics if isinstance(metrics, dict) else {}

    @property
    def groups_lenient(self) -> dict[str, Any]:
        groups = self.summary.get("groups_lenient")
        return groups if isinstance(groups, dict) else {}

    def accuracy(self, category: str, key: str = "accuracy") -> float | None:
        """Accuracy of a category as a fraction, from ``key`` (``accuracy``, the headline;
        ``accuracy_lenient``; ``accuracy_strict``) or ``correct / n`` (``correct_lenient``, ...)."""
        stats = self.categories.get(category)
        if not isinstance(stats, dict):
            return None
        acc = _num(stats.get(key))
        if acc is None:
            n, correct = _num(stats.get("n")), _num(stats.get(key.replace("accuracy", "correct")))
            if n and correct is not None:
                acc = correct / n
        return acc

    def n_items(self) -> int | None:
        total, seen = 0, False
        for stats in self.categories.values():
            n = _num(stats.get("n")) if isinstance(stats, dict) else None
            if n is not None:
                total += int(n)
                seen = True
        if seen:
            return total
        return len(self.results) if self.results is not None else None


def _read_json(path: Path, run_dir: Path, *, required: bool) -> dict[str, Any] | None:
    if not path.is_file():
        if required:
            raise ReportError(f"{run_dir} is not an evaluation run: {path.name} is missing ({path})")
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ReportError(f"{path}: not UTF-8 text ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise ReportError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _read_results(path: Path) -> list[dict[str, Any]] | None:
    """The rows of ``results.jsonl`` (None when there is none); a broken line raises `ReportError`
    naming ``file:line``."""
    if not path.is_file():
        return None
    rows: list[dict[str, Any]] = []
    try:
        for lineno, row in iter_jsonl_rows(path):
            if not isinstance(row, dict):
                raise ReportError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
            rows.append(row)
    except FileFormatError as e:
        raise ReportError(str(e), fix=e.fix) from None
    return rows


def load_run(run_dir: Path | str) -> RunData:
    """Read one run directory; raise `ReportError` if it is not a readable evaluation run."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ReportError(f"{run_dir} is not a directory (expected an evaluation run directory)")
    summary = _read_json(run_dir / "summary.json", run_dir, required=True)
    assert summary is not None
    run = _read_json(run_dir / "run.json", run_dir, required=False) or {}
    if isinstance(run.get("settings"), dict):  # a run manifest: the settings that define the run, then the rest
        run = {**run["settings"], **{k: v for k, v in run.items() if k != "settings"}}
    categories = summary.get("categories", {})
    if categories is None:
        categories = {}
    if not isinstance(categories, dict):
        raise ReportError(f"{run_dir / 'summary.json'}: 'categories' must be an object")
    groups = summary.get("groups")
    if groups is not None and not isinstance(groups, dict):
        raise ReportError(f"{run_dir / 'summary.json'}: 'groups' must be an object")
    results = _read_results(run_dir / "results.jsonl")
    label = str(run.get("label") or run_dir.resolve().name or run_dir)
    if run.get("constrained") or summary.get("constrained"):  # never mistaken for a free-decoding headline
        label += " (constrained)"
    if run.get("value_guard") or summary.get("value_guard"):
        label += " (value guard)"
    cats = {str(k): (v if isinstance(v, dict) else {}) for k, v in categories.items()}
    return RunData(path=run_dir, run=run, summary=summary, results=results, label=label, categories=cats)


#: the summary a training verb writes, and what kind of run it names
TRAINING_SUMMARIES = (("sft_summary.json", "sft"), ("distill_summary.json", "distill"), ("kto_summary.json", "kto"),
                      ("rl_summary.json", "rl"))


@dataclass
class TrainingRun:
    """One training run (``tinytool sft``, ``distill``, ``kto`` or ``rl`` output) as the report draws it."""

    path: Path
    kind: str
    label: str
    summary: dict[str, Any]
    loss: list[tuple[float, float]]
    reward: list[tuple[float, float]]


def _points(value: Any) -> list[tuple[float, float]]:
    """``[[step, value], ...]`` as numeric pairs; anything else in the list is left out."""
    out = []
    for pair in value if isinstance(value, list) else []:
        if isinstance(pair, list | tuple) and len(pair) == 2:
            x, y = _num(pair[0]), _num(pair[1])
            if x is not None and y is not None and math.isfinite(y):
                out.append((x, y))
    return out


def load_training(run_dir: Path | str) -> TrainingRun:
    """Read a training run's summary (the first of `TRAINING_SUMMARIES` in ``run_dir``): its loss curve and, for
    RL, its reward curve. The label is the folder's name (a recipe stage's ``NN-name/out`` reads as ``name``)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ReportError(f"{run_dir} is not a directory (expected a training run: the output of sft, distill, "
                          "kto or rl)")
    for name, kind in TRAINING_SUMMARIES:
        summary = _read_json(run_dir / name, run_dir, required=False)
        if summary is not None:
            break
    else:
        raise ReportError(f"{run_dir} is not a training run: none of "
                          f"{', '.join(n for n, _ in TRAINING_SUMMARIES)} is there")
    curves = summary.get("curves") if isinstance(summary.get("curves"), dict) else {}
    loss = _points(summary.get("losses")) or _points(curves.get("loss"))
    folder = run_dir.resolve()
    label = folder.parent.name if folder.name == "out" else folder.name
    label = re.sub(r"^\d+-", "", label) or kind
    return TrainingRun(path=run_dir, kind=kind, label=label, summary=summary, loss=loss,
                       reward=_points(curves.get("reward")))


# ----------------------------------------------------------------------------------------------
# Small helpers
# ----------------------------------------------------------------------------------------------


def _num(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


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
    num = _num(value)
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


def _unique_labels(runs: list[RunData]) -> None:
    counts: Counter[str] = Counter()
    for run in runs:
        counts[run.label] += 1
        if counts[run.label] > 1:
            run.label = f"{run.label} ({counts[run.label]})"


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
        ips = _num(thr.get("items_per_s"))
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


def _group_names(runs: list[RunData]) -> list[str]:
    present: list[str] = []
    for run in runs:
        for name in run.groups:
            if name not in present:
                present.append(name)
    ordered = [g for g in GROUP_ORDER if g in present]
    ordered += [g for g in present if g not in ordered and g != "overall"]
    if "overall" in present:
        ordered.append("overall")
    return ordered


def _overall_table(runs: list[RunData], groups: list[str]) -> _Table:
    rows = [[run.label] + [_pct(_num(run.groups.get(g))) for g in groups] for run in runs]
    if len(runs) >= 2:
        first, last = runs[0], runs[-1]
        rows.append(["Δ (last − first)"]
                    + [_delta(_num(first.groups.get(g)), _num(last.groups.get(g))) for g in groups])
    return _Table(["Run", *groups], rows)


def _category_names(runs: list[RunData]) -> list[str]:
    names: list[str] = []
    for run in runs:
        for name in run.categories:
            if name not in names:
                names.append(name)
    return names


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
                n = _num(run.categories.get(cat, {}).get("n"))
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
            strict, lenient = _num(run.groups.get(g)), _num(run.groups_lenient.get(g))
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
            calls, none = _num(stats.get("mean_calls")), _num(stats.get("no_call_rate"))
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
        ks.sort(key=lambda k: (_num(_try_float(k)) or 0, k))
        columns += [(run, k) for k in ks]
    if not columns:
        return None
    rows = []
    for cat in categories:
        row = [cat]
        for run, k in columns:
            pak = run.categories.get(cat, {}).get("pass_at_k")
            row.append(_pct(_num(pak.get(k))) if isinstance(pak, dict) else "—")
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


# ----------------------------------------------------------------------------------------------
# Charts
# ----------------------------------------------------------------------------------------------


def _bar_chart(
    path: Path,
    labels: list[str],
    series: list[tuple[str, list[float | None]]],
    *,
    title: str,
    ylabel: str,
    percent: bool = True,
    stacked: bool = False,
    colors: list[Any] | None = None,
) -> Path:
    """Draw a grouped (or stacked) bar chart to ``path``; the one figure helper every chart uses.

    ``labels`` are the x positions, ``series`` are (name, values) pairs with one value per label
    (None = no bar). Percent charts take fractions and show 0-100 %.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n_series = max(1, len(series))
    n_bars = len(labels) * (1 if stacked else n_series)
    per_bar = 0.55 if stacked else 0.3
    width_in = min(18.0, max(6.5, 1.5 + per_bar * n_bars))
    fig = Figure(figsize=(width_in, 5.2 if len(labels) > 8 else 4.6), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    if colors is None:
        import matplotlib

        cmap = matplotlib.colormaps["tab10"]
        colors = [cmap(i % 10) for i in range(n_series)]

    xs = list(range(len(labels)))
    bar_w = 0.7 if stacked else 0.8 / n_series
    bottoms = [0.0] * len(labels)
    scale = 100.0 if percent else 1.0
    rotate_values = n_series > 1 and n_bars > 16
    for i, (name, values) in enumerate(series):
        vals = [float("nan") if v is None else v * scale for v in values]
        if stacked:
            pos = xs
            heights = [0.0 if math.isnan(v) else v for v in vals]
            bars = ax.bar(pos, heights, bar_w, bottom=bottoms, label=name, color=colors[i % len(colors)],
                          edgecolor="white", linewidth=0.5)
            bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
        else:
            pos = [x - 0.4 + bar_w * (i + 0.5) for x in xs]
            bars = ax.bar(pos, vals, bar_w, label=name, color=colors[i % len(colors)])
            if n_bars <= 72:  # beyond that the grid has to do
                fmt = "{:.1f}" if percent else "{:g}"
                texts = ["" if math.isnan(v) else fmt.format(v) for v in vals]
                ax.bar_label(bars, labels=texts, padding=2, fontsize=7 if n_bars > 16 else 8,
                             rotation=90 if rotate_values else 0)
    if stacked:
        totals = bottoms
        ax.bar_label(ax.containers[-1], labels=[f"{t:g}" if t else "" for t in totals], padding=2, fontsize=8)

    ax.set_title(title, fontsize=12)
    ax.set_ylabel(ylabel)
    ax.set_xticks(xs)
    long_labels = max((len(lb) for lb in labels), default=0) > 10 or len(labels) > 6
    ax.set_xticklabels(labels, rotation=35 if long_labels else 0, ha="right" if long_labels else "center",
                       fontsize=9)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    if percent:
        ax.set_ylim(0, 120 if rotate_values else 110)
        ax.set_yticks(range(0, 101, 20))
    else:
        top = max([*bottoms, *(v * scale for _, vals in series for v in vals if v is not None), 1.0])
        ax.set_ylim(0, top * 1.15)
    ax.yaxis.grid(True, linestyle=":", alpha=0.7)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if stacked:
        handles, names = ax.get_legend_handles_labels()  # listed top-down, as the stack reads
        ax.legend(handles[::-1], names[::-1], fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  frameon=False, title="error type")
        from matplotlib.ticker import MaxNLocator

        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    elif len(series) > 1:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, title="run")
    fig.tight_layout()
    fig.savefig(path, format="png", bbox_inches="tight")
    return path


def _line_chart(path: Path, series: list[tuple[str, list[tuple[float, float]]]], *, title: str, xlabel: str,
                ylabel: str) -> Path:
    """Draw one line per (name, points) series to ``path`` (training curves: step on x)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.0, 4.2), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for name, points in series:
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        ax.plot(xs, ys, marker="o" if len(points) <= 30 else None, markersize=3, linewidth=1.5, label=name)
    ax.set_title(title, fontsize=12)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, linestyle=":", alpha=0.7)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, title="run")
    fig.tight_layout()
    fig.savefig(path, format="png", bbox_inches="tight")
    return path


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


def _error_counts(run: RunData, categories: list[str]) -> dict[str, Counter[str]]:
    """Error-type counts per category, from summary.json or else from the failed results."""
    counts: dict[str, Counter[str]] = {}
    for cat in categories:
        errors = run.categories.get(cat, {}).get("errors")
        if isinstance(errors, dict):
            counts[cat] = Counter({str(k): int(v) for k, v in errors.items() if _num(v)})
    if not counts and run.results:
        for row in run.results:
            if row.get("valid") is False:
                cat = str(row.get("category") or "unknown")
                counts.setdefault(cat, Counter())[str(row.get("error_type") or "unknown")] += 1
    return counts


def _error_chart(path: Path, run: RunData, categories: list[str]) -> Path | None:
    counts = _error_counts(run, categories)
    cats = [c for c in categories if sum(counts.get(c, Counter()).values())]
    cats += [c for c in counts if c not in cats and sum(counts[c].values())]
    if not cats:
        return None
    total: Counter[str] = Counter()
    for cat in cats:
        total.update(counts[cat])
    top = [name for name, _ in total.most_common(TOP_ERROR_TYPES)]
    if len(total) == TOP_ERROR_TYPES + 1:  # an "other" of one type would just hide its name
        top = list(total)
    series: list[tuple[str, list[float | None]]] = [
        (name, [float(counts[c].get(name, 0)) for c in cats]) for name in top]
    rest = [float(sum(v for k, v in counts[c].items() if k not in top)) for c in cats]
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    palette = [cmap(i) for i in range(10) if i != 7]  # tab10's grey is kept for "other"
    colors = [palette[i % len(palette)] for i in range(len(series))]
    if any(rest):
        series.append(("other", rest))
        colors.append("#9e9e9e")
    return _bar_chart(path, cats, series, title=f"Error types per category — {run.label}",
                      ylabel="failed items", percent=False, stacked=True, colors=colors)


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
            by_err[err].sort(key=lambda r: (_num(r.get("samples_correct")) or 0) > 0)
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
    sc, ns = _num(row.get("samples_correct")), _num(row.get("samples"))
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
# Report
# ----------------------------------------------------------------------------------------------

def check_report_dir(out_dir: Path, run_dirs: list[Path], overwrite: bool) -> None:
    """Refuse an ``out_dir`` that holds anything but a previous report (and that only without
    ``overwrite``), or that holds one of the runs the report reads."""
    out_dir = Path(out_dir)
    if not out_dir.is_dir() or not any(out_dir.iterdir()):
        return
    resolved = out_dir.resolve()
    for run in run_dirs:
        r = Path(run).resolve()
        if r == resolved or resolved in r.parents:
            raise OutputExistsError(f"{out_dir}: holds the run directory {run}; writing the report there would "
                                    "replace it", fix="choose another --out for the report")
    if not overwrite:
        raise OutputExistsError(f"{out_dir}: already exists and is not empty",
                                fix="rerun with --overwrite to replace the report there, or choose another --out")
    if not any((out_dir / name).is_file() for name in ("report.md", "report.html")):
        raise OutputExistsError(f"{out_dir}: holds no report (no report.md or report.html), so --overwrite will "
                                "not replace it", fix="choose another --out directory, or empty this one")


def write_report(run_dirs: list[Path], out_dir: Path, worst: int = 15, title: str | None = None,
                 overwrite: bool = False, training: list[Path] = ()) -> dict:
    """Write ``report.md``, ``report.html`` and PNG charts for the given runs into ``out_dir``, as a
    whole (a failure or Ctrl-C leaves ``out_dir`` as it was).

    Returns ``{"markdown": Path, "html": Path, "charts": [Path, ...]}``. Raises `ReportError` when
    a run directory is missing, has no ``summary.json``, or holds a broken JSON/JSONL file, and
    `OutputExistsError` for a non-empty ``out_dir`` without ``overwrite`` (or, with it, one that
    holds no previous report). ``training`` names training runs (`load_training`) whose loss and reward
    curves and figures the report adds.
    """
    if not run_dirs:
        raise ReportError("no run directories given")
    runs = [load_run(d) for d in run_dirs]
    _unique_labels(runs)
    trained = [load_training(d) for d in training]
    out_dir = Path(out_dir)
    check_report_dir(out_dir, [*run_dirs, *training], overwrite)
    with atomic_dir(out_dir) as tmp:
        paths = _write_report_files(runs, tmp, worst, title, trained)
    return {key: ([out_dir / p.relative_to(tmp) for p in value] if isinstance(value, list)
                  else out_dir / value.relative_to(tmp)) for key, value in paths.items()}


def _write_report_files(runs: list[RunData], out_dir: Path, worst: int, title: str | None,
                        training: list[TrainingRun] = ()) -> dict:
    if title is None:
        title = "Evaluation report" + (f": {runs[0].label}" if len(runs) == 1 else f" ({len(runs)} runs)")

    groups = _group_names(runs)
    categories = _category_names(runs)

    # charts
    charts: dict[str, Path] = {}
    if categories:
        charts["categories"] = _bar_chart(
            out_dir / "accuracy_by_category.png", categories,
            [(r.label, [r.accuracy(c) for c in categories]) for r in runs],
            title="Accuracy by category", ylabel="accuracy (%)")
    if groups:
        charts["groups"] = _bar_chart(
            out_dir / "group_scores.png", groups,
            [(r.label, [_num(r.groups.get(g)) for g in groups]) for r in runs],
            title="Group scores", ylabel="score (%)")
    with_loss = [t for t in training if t.loss]
    if with_loss:
        charts["training_loss"] = _line_chart(out_dir / "training_loss.png", [(t.label, t.loss) for t in with_loss],
                                              title="Training loss", xlabel="step", ylabel="loss")
    with_reward = [t for t in training if t.reward]
    if with_reward:
        charts["training_reward"] = _line_chart(out_dir / "training_reward.png",
                                                [(t.label, t.reward) for t in with_reward],
                                                title="RL reward (mean per step)", xlabel="step", ylabel="reward")
    error_charts: list[tuple[RunData, Path]] = []
    for i, run in enumerate(runs, start=1):
        path = _error_chart(out_dir / f"errors_{i}_{_slug(run.label)}.png", run, categories)
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
    md_path, html_path = out_dir / "report.md", out_dir / "report.html"
    md_path.write_text(_render("report.md.j2", view), encoding="utf-8")
    html_path.write_text(_render("report.html.j2", view), encoding="utf-8")
    return {"markdown": md_path, "html": html_path,
            "charts": [*charts.values(), *(p for _, p in error_charts)]}


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


def _render(template: str, view: dict[str, Any]) -> str:
    return _templates().get_template(template).render(view)
