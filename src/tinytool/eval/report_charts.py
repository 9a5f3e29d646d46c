"""The report's charts: PNG files drawn with matplotlib's object API on the Agg canvas, so no display and no
global pyplot state are involved."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

from tinytool.eval.report_load import RunData, number

__all__ = ["TOP_ERROR_TYPES", "bar_chart", "error_chart", "line_chart"]

#: error types an error chart names; the rest are one "other"
TOP_ERROR_TYPES = 8


def bar_chart(
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


def line_chart(path: Path, series: list[tuple[str, list[tuple[float, float]]]], *, title: str, xlabel: str,
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


def _error_counts(run: RunData, categories: list[str]) -> dict[str, Counter[str]]:
    """Error-type counts per category, from summary.json or else from the failed results."""
    counts: dict[str, Counter[str]] = {}
    for cat in categories:
        errors = run.categories.get(cat, {}).get("errors")
        if isinstance(errors, dict):
            counts[cat] = Counter({str(k): int(v) for k, v in errors.items() if number(v)})
    if not counts and run.results:
        for row in run.results:
            if row.get("valid") is False:
                cat = str(row.get("category") or "unknown")
                counts.setdefault(cat, Counter())[str(row.get("error_type") or "unknown")] += 1
    return counts


def error_chart(path: Path, run: RunData, categories: list[str]) -> Path | None:
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
    return bar_chart(path, cats, series, title=f"Error types per category — {run.label}",
                     ylabel="failed items", percent=False, stacked=True, colors=colors)
