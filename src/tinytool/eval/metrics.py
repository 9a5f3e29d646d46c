"""Evaluation metrics: pure functions that return plain Python floats.

- **4T metrics** (EfficientTool App. C.1-C.2): `four_t` over
  `TaskRecord`s → TCR / TFR / TIR / TPS;
- **pass@k** (unbiased estimator of Chen et al. 2021): `pass_at_k`, `pass_at_k_mean`;
- **policy entropy**: `mean_entropy` over per-completion entropies, `token_entropy` /
  `masked_mean_entropy` from a logits tensor;
- **tool-call counts** per sample: `tool_call_stats`;
- **alignment score** (MENTOR §4.1 and App. A.4, Eq. 8):
  `alignment_score` = 1 − Jensen-Shannon distance between tool-usage distributions.

Functions that take tool calls take tool *names* (strings); extracting them from completions is the
parser's job (`tinytool.formats`).
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = [
    "NO_CALL",
    "EntropySummary",
    "FourT",
    "TaskOutcome",
    "TaskRecord",
    "ToolCallStats",
    "alignment_score",
    "classify_task",
    "four_t",
    "jensen_shannon_distance",
    "masked_mean_entropy",
    "mean_entropy",
    "pass_at_k",
    "pass_at_k_mean",
    "task_performance_score",
    "token_entropy",
    "tool_call_stats",
    "tool_distribution",
]

# ------------------------------------------------------------------------------------- 4T metrics

TaskOutcome = Literal["completed", "failed", "incomplete"]


@dataclass
class TaskRecord:
    """What happened on one test task, as the 4T metrics need it.

    - ``expected_tools``: names of the tools the task expects (a set: order and repeats ignored);
      empty when the task should be answered without tools.
    - ``called_tools``: names of the tools the model actually called, in order, repeats allowed.
    - ``interrupted``: the interaction broke off because of the model — an exception, an error, an
      unparseable / invalid call that stopped the episode (the paper's execution state E_i).
    - ``result_valid``: the final result is appropriate (V_a). Whoever builds the record decides how
      (answer check, judge, tool-output check); it defaults to True for evaluations that only check
      the tool set.
    """

    expected_tools: Sequence[str]
    called_tools: Sequence[str]
    interrupted: bool = False
    result_valid: bool = True


@dataclass
class FourT:
    """The 4T metrics over ``n`` tasks (all 0.0 when ``n == 0``). ``tcr + tfr + tir == 1`` when
    ``n > 0``."""

    tcr: float  #: task completion rate
    tfr: float  #: task failure rate
    tir: float  #: task incomplete rate
    tps: float  #: task performance score, averaged over tasks (Eq. 3)
    n: int

    def as_dict(self) -> dict[str, float | int]:
        """Keyed by the paper's names: ``TCR``, ``TFR``, ``TIR``, ``TPS``, plus ``n``."""
        return {"TCR": self.tcr, "TFR": self.tfr, "TIR": self.tir, "TPS": self.tps, "n": self.n}


def classify_task(record: TaskRecord) -> TaskOutcome:
    """Which 4T bucket a task falls into — EfficientTool App. C.1, made exclusive by
    App. C.2 Eq. 4-6: ``TCR = E_c ∩ M_p ∩ V_a``, ``TFR = E_i``, ``TIR = (E_c ∩ M_m) ∪ (E_c ∩ M_p ∩
    V_n)``.

    - ``"failed"`` (TFR, E_i): the interaction was interrupted (``record.interrupted``), or the task
      needs tools and the model called none (App. C.1: "LLM did not call any tools and this task
      requires LLM to call tools" — the paper's "failed to initiate").
    - ``"completed"`` (TCR): otherwise, the called tool *set* equals the expected set (repeated calls
      are allowed, App. C.1) and the result is valid.
    - ``"incomplete"`` (TIR): otherwise — a tool outside the expected set, a strict subset of it, or
      a perfect match with an inappropriate result.

    A task that expects no tool and gets none is a perfect (empty) match, so it is "completed" when
    the result is valid.
    """
    expected = set(record.expected_tools)
    called = set(record.called_tools)
    if record.interrupted or (expected and not called):
        return "failed"
    if called == expected and record.result_valid:
        return "completed"
    return "incomplete"


def task_performance_score(
    expected_tools: Iterable[str],
    called_tools: Iterable[str],
    *,
    lambda_w: float = 1.0,
    lambda_m: float = 1.0,
) -> float:
    """TPS of one task — EfficientTool App. C.1, Eq. 2:
    ``TPS(i) = C_c / (C_c + λ_w·W_c + λ_m·M_c)`` with ``C_c = |expected ∩ actual|``, ``W_c`` the
    tools called but not expected, ``M_c`` the tools expected but not called (tool *sets*; the paper
    sets λ_w = λ_m = 1).

    Choices the paper leaves open: when both sets are empty (a no-tool task answered without tools)
    the score is 1.0; when ``C_c = 0`` it is 0.0 (also if the denominator would vanish because both
    λ are 0). Negative or non-finite λ are treated as 0 so the score stays in [0, 1].
    """
    expected = set(expected_tools)
    called = set(called_tools)
    if not expected and not called:
        return 1.0
    c_c = len(expected & called)
    if c_c == 0:
        return 0.0
    lw = lambda_w if math.isfinite(lambda_w) and lambda_w > 0 else 0.0
    lm = lambda_m if math.isfinite(lambda_m) and lambda_m > 0 else 0.0
    denom = c_c + lw * len(called - expected) + lm * len(expected - called)
    return float(min(1.0, max(0.0, c_c / denom)))


def four_t(records: Iterable[TaskRecord], *, lambda_w: float = 1.0, lambda_m: float = 1.0) -> FourT:
    """The 4T metrics — EfficientTool §3.3.1 and App. C.1-C.2: TCR, TFR, TIR are the
    fractions of tasks in each `classify_task` bucket (so TCR + TFR + TIR = 1, App. C.2 Eq. 7) and
    TPS is the mean of `task_performance_score` (App. C.1 Eq. 3, ``TPS_avg = (1/N)·Σ TPS(i)``).

    TPS is computed from the tool sets of every task, interrupted ones included (the tools called
    before the interruption count). An empty input gives all zeros with ``n = 0``.
    """
    counts = Counter[str]()
    tps_sum = 0.0
    n = 0
    for r in records:
        counts[classify_task(r)] += 1
        tps_sum += task_performance_score(r.expected_tools, r.called_tools, lambda_w=lambda_w,
                                          lambda_m=lambda_m)
        n += 1
    if n == 0:
        return FourT(0.0, 0.0, 0.0, 0.0, 0)
    return FourT(
        tcr=counts["completed"] / n,
        tfr=counts["failed"] / n,
        tir=counts["incomplete"] / n,
        tps=tps_sum / n,
        n=n,
    )


# ------------------------------------------------------------------------------------------ pass@k


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimator (Chen et al. 2021, "Evaluating Large Language Models Trained on
    Code", §2.1; used by the seed papers for sampled evaluation): with ``n`` samples of which ``c``
    are correct, ``pass@k = 1 − C(n−c, k) / C(n, k)``.

    Computed in the numerically stable product form
    ``C(n−c, k)/C(n, k) = ∏_{i=n−c+1}^{n} (1 − k/i)``, summed in log space (``log1p``/``expm1``).

    ``n − c < k`` gives 1.0 (every k-subset holds a correct sample); ``c = 0`` gives 0.0. When
    ``k > n`` (fewer samples than asked for) all ``n`` samples are drawn: 1.0 if ``c > 0`` else
    0.0. Raises ``ValueError`` for impossible counts (``n < 0``, ``c < 0``, ``c > n``, ``k < 1``).
    """
    if n < 0 or c < 0 or c > n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if c == 0:
        return 0.0
    if n - c < k:
        return 1.0
    log_ratio = math.fsum(math.log1p(-k / i) for i in range(n - c + 1, n + 1))
    return float(min(1.0, max(0.0, -math.expm1(log_ratio))))


def pass_at_k_mean(counts: Iterable[tuple[int, int]], k: int) -> float:
    """Mean of `pass_at_k` over problems, each given as ``(n, c)`` (Chen et al. 2021 §2.1: the
    estimator is averaged over problems). An empty input gives 0.0."""
    values = [pass_at_k(n, c, k) for n, c in counts]
    return float(math.fsum(values) / len(values)) if values else 0.0


# ----------------------------------------------------------------------------------------- entropy


@dataclass
class EntropySummary:
    """Mean policy entropy over the completions that measured it.

    ``mean`` (nats) is None when no completion has a finite entropy; ``count`` completions were
    averaged and ``missing`` had None or a non-finite value."""

    mean: float | None
    count: int
    missing: int


def mean_entropy(entropies: Iterable[float | None]) -> EntropySummary:
    """Mean of per-completion mean token entropies (``Completion.entropy``), skipping None and
    non-finite values (HTTP backends do not measure entropy)."""
    present: list[float] = []
    missing = 0
    for e in entropies:
        try:
            v = float(e) if e is not None else math.nan
        except (TypeError, ValueError):
            v = math.nan
        if math.isfinite(v):
            present.append(v)
        else:
            missing += 1
    # each term divided first: the mean of finite values stays finite even near the float limit
    mean = None
    if present:
        # scaled by the largest magnitude first, so sums of values near the float limit stay finite
        scale = max(abs(v) for v in present) or 1.0
        mean = scale * (math.fsum(v / scale for v in present) / len(present))
        mean = max(-sys.float_info.max, min(sys.float_info.max, mean))
    return EntropySummary(mean=mean, count=len(present), missing=missing)


def token_entropy(
    logits: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    temperature: float = 1.0,
    chunk_size: int = 256,
) -> torch.Tensor:
    """Per-token entropy (nats) of ``softmax(logits / temperature)``.

    ``logits``: ``[T, V]`` (any float dtype; computed in float32). ``mask``: ``[T]`` (bool or 0/1),
    positions to measure; the others get 0 and cost nothing. Returns a float32 ``[T]`` tensor.

    ``H = −Σ_v p_v log p_v`` with ``log p = z − logsumexp(z)`` (log-softmax). Memory stays at
    ``chunk_size × V`` float32 values beyond the input, since rows are processed in chunks. Entries
    of ``−inf`` (masked vocabulary) contribute 0 and no NaN, in the value or the gradient. Gradients
    flow (wrap in ``torch.no_grad()`` when only measuring). ``temperature`` must be > 0.
    """
    import torch

    if logits.dim() != 2:
        raise ValueError(f"logits must be [T, V], got shape {tuple(logits.shape)}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    t = logits.shape[0]
    out = torch.zeros(t, dtype=torch.float32, device=logits.device)
    keep = None
    if mask is not None:
        keep = mask.to(device=logits.device).reshape(-1).bool()
        if keep.shape[0] != t:
            raise ValueError(f"mask has {keep.shape[0]} positions, logits {t}")
    step = max(1, int(chunk_size))
    pieces = []
    for start in range(0, t, step):
        rows = torch.arange(start, min(start + step, t), device=logits.device)
        if keep is not None:
            rows = rows[keep[rows]]
        if rows.numel() == 0:
            continue
        z = logits.index_select(0, rows).float()
        if temperature != 1.0:
            z = z / temperature
        logp = torch.log_softmax(z, dim=-1)
        p = logp.exp()
        safe_logp = torch.where(p > 0, logp, torch.zeros_like(logp))
        pieces.append((rows, -(p * safe_logp).sum(dim=-1)))
    if not pieces:
        return out
    idx = torch.cat([r for r, _ in pieces])
    vals = torch.cat([h for _, h in pieces])
    return out.index_put((idx,), vals)


def masked_mean_entropy(
    logits: torch.Tensor, mask: torch.Tensor | None = None, *, temperature: float = 1.0
) -> float | None:
    """Mean of `token_entropy` over the masked positions (all positions without a mask), as a float;
    None when no position is selected. This is what ``Completion.entropy`` reports for one
    completion (generated tokens only)."""
    import torch

    with torch.no_grad():
        h = token_entropy(logits, mask, temperature=temperature)
        n = int(mask.bool().sum()) if mask is not None else h.shape[0]
        if n == 0:
            return None
        return float(h.sum().item() / n)


# -------------------------------------------------------------------------------------- tool calls

_BUCKETS = ("0", "1", "2", "3", "4+")


@dataclass
class ToolCallStats:
    """Tool calls per sample.

    ``n`` samples; ``mean`` calls per sample; ``histogram`` sample counts by number of calls
    (``"0"``, ``"1"``, ``"2"``, ``"3"``, ``"4+"``); ``zero_fraction`` the fraction of samples with
    no call; ``per_tool`` how often each tool name was called in total."""

    n: int
    mean: float
    histogram: dict[str, int]
    zero_fraction: float
    per_tool: dict[str, int] = field(default_factory=dict)

    def distribution(self) -> dict[str, float]:
        """The histogram as fractions of samples (all 0.0 when there are none)."""
        return {b: (c / self.n if self.n else 0.0) for b, c in self.histogram.items()}


def tool_call_stats(calls_per_sample: Iterable[Sequence[str]]) -> ToolCallStats:
    """Tool-call-count statistics (as MENTOR §1 Fig. 1 and §4, reports tool usage):
    from the list of called tool names of each sample. Empty input gives zeros."""
    hist = dict.fromkeys(_BUCKETS, 0)
    per_tool: Counter[str] = Counter()
    total = 0
    n = 0
    for calls in calls_per_sample:
        names = list(calls)
        k = len(names)
        hist[_BUCKETS[min(k, 4)]] += 1
        per_tool.update(str(x) for x in names)
        total += k
        n += 1
    return ToolCallStats(
        n=n,
        mean=total / n if n else 0.0,
        histogram=hist,
        zero_fraction=hist["0"] / n if n else 0.0,
        per_tool=dict(per_tool),
    )


# --------------------------------------------------------------------------------------- alignment

#: the pseudo-tool that stands for "no call in this sample" when ``include_no_call`` is set
NO_CALL = "<no_call>"

ToolUsage = Mapping[str, float] | Iterable[Sequence[str]]


def _tool_counts(usage: ToolUsage, include_no_call: bool) -> dict[str, float]:
    if isinstance(usage, Mapping):
        out: dict[str, float] = {}
        for name, v in usage.items():
            try:
                x = float(v)
            except (TypeError, ValueError):
                continue
            if math.isfinite(x) and x > 0:
                out[str(name)] = out.get(str(name), 0.0) + x
        return out
    counts: Counter[str] = Counter()
    for calls in usage:
        names = [str(x) for x in calls]
        counts.update(names)
        if include_no_call and not names:
            counts[NO_CALL] += 1
    return {k: float(v) for k, v in counts.items()}


def tool_distribution(
    usage: ToolUsage, *, vocabulary: Iterable[str] | None = None, include_no_call: bool = False
) -> dict[str, float]:
    """The tool-usage distribution MENTOR compares (App. A.4: "the distributions of tool
    calls across the … available tools"): each call counts once, normalised over all calls.

    ``usage``: one list of called tool names per sample, or a mapping name → count (e.g. a
    ``Counter``). ``vocabulary``: tool names to include with probability 0 when never called.
    ``include_no_call`` (lists only): a sample without any call adds one count to the pseudo-tool
    `NO_CALL`, so not calling a tool becomes part of the policy. Returns {} when there is no count.
    """
    counts = _tool_counts(usage, include_no_call)
    total = math.fsum(counts.values())
    dist = {k: v / total for k, v in counts.items()} if total > 0 else {}
    if vocabulary is not None and dist:
        for name in vocabulary:
            dist.setdefault(str(name), 0.0)
    return dist


def jensen_shannon_distance(p: Mapping[str, float], q: Mapping[str, float]) -> float:
    """MENTOR (App. A.4, Eq. 8): ``JSD(P, Q) = sqrt(½·KL(P‖M) + ½·KL(Q‖M))`` with
    ``M = ½(P + Q)``, in base 2 so that it lies in [0, 1] as the paper states ("bounded between 0
    and 1"); this is the Jensen-Shannon *distance* (square root of the divergence), computed by
    `scipy.spatial.distance.jensenshannon` with ``base=2``.

    ``p`` and ``q`` map names to probabilities (missing names are 0); each is renormalised. Two empty
    distributions are at distance 0, an empty and a non-empty one at distance 1.
    """
    keys = sorted(set(p) | set(q))
    pv = np.array([max(0.0, float(p.get(k, 0.0))) for k in keys], dtype=np.float64)
    qv = np.array([max(0.0, float(q.get(k, 0.0))) for k in keys], dtype=np.float64)
    pv[~np.isfinite(pv)] = 0.0
    qv[~np.isfinite(qv)] = 0.0
    ps, qs = pv.sum(), qv.sum()
    if ps <= 0 and qs <= 0:
        return 0.0
    if ps <= 0 or qs <= 0:
        return 1.0
    from scipy.spatial.distance import jensenshannon

    d = float(jensenshannon(pv, qv, base=2))  # renormalises both sides; the distance, not the divergence
    return min(1.0, max(0.0, d)) if math.isfinite(d) else 0.0  # nan: a rounding-negative divergence of equal sides


def alignment_score(
    teacher: ToolUsage,
    student: ToolUsage,
    *,
    vocabulary: Iterable[str] | None = None,
    include_no_call: bool = False,
) -> float:
    """MENTOR's alignment score (AS) — §4.1 ("Evaluation Metrics") and App. A.4, Eq. 8:
    ``Alignment(P, Q) = 1 − JSD(P, Q)``, P the teacher's and Q the student's tool-usage distribution
    (`tool_distribution`), JSD the base-2 Jensen-Shannon distance (`jensen_shannon_distance`).
    In [0, 1]; 1 is a perfect match; symmetric.

    Choices (the paper leaves them open): every call counts (a tool called twice in a sample counts
    twice); the distribution is over the union of tools either side called (a ``vocabulary`` adds
    zero-probability tools, which does not change the value); log base 2. Empty inputs: both sides
    without any call → 1.0 (the same policy: never call); one side only → 0.0. With
    ``include_no_call`` a sample without calls counts as a call of `NO_CALL`, so the score also sees
    how often each side abstains (MENTOR Fig. 1 reports tool-usage rates next to the distribution).
    """
    p = tool_distribution(teacher, vocabulary=vocabulary, include_no_call=include_no_call)
    q = tool_distribution(student, vocabulary=vocabulary, include_no_call=include_no_call)
    return float(min(1.0, max(0.0, 1.0 - jensen_shannon_distance(p, q))))
