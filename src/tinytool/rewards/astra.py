"""ASTRA's F1 trajectory reward (ASTRA §3.2.2, Eq. 29-31).

A job is n sub-tasks ``(q_i, a_i)``; a trajectory that makes c tool calls and solves n̂ of them gets
recall ``r = n̂ / n``, precision ``p = n̂ / (c + ε)`` and reward ``2pr / (p + r)``.

Two choices the paper leaves open, made here so the value stays in [0, 1]: precision is capped at 1
(a single call may answer two sub-tasks, and answering without any call would otherwise send
``n̂ / ε`` to infinity and F1 towards 2r). A job with no sub-tasks has no F1 (Eq. 29 divides by n): it
scores the floor, 0, whatever the trajectory does — never the maximum, which would hand every rollout
full marks and leave GRPO a constant. Training data is checked for such jobs before a run starts.
"""

from __future__ import annotations

import math
import re
from typing import Any

from tinytool.rewards.base import RewardResult

_NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _norm(text: str) -> str:
    return " ".join(str(text).lower().split())


def answer_found(answer: Any, text: str, rel_tol: float = 1e-6) -> bool:
    """Does ``text`` contain the sub-answer? Numbers match numerically (``3.50`` finds ``3.5``,
    ``1,200`` finds ``1200``); other values by case- and whitespace-insensitive containment."""
    if isinstance(answer, bool) or answer is None:
        return _norm(str(answer)) in _norm(text)
    if isinstance(answer, (int, float)):
        try:
            target = float(answer)
        except OverflowError:  # an integer beyond float range: only its digits can match
            return str(answer) in text
        if not math.isfinite(target):
            return _norm(str(answer)) in _norm(text)
        for m in _NUMBER.finditer(text):
            try:
                v = float(m.group().replace(",", ""))
            except ValueError:
                continue
            if math.isclose(v, target, rel_tol=rel_tol, abs_tol=1e-9):
                return True
        return False
    needle = _norm(answer if isinstance(answer, str) else str(answer))
    return bool(needle) and needle in _norm(text)


def astra_f1(n_solved: int, n_subtasks: int, n_calls: int, eps: float = 1e-8) -> RewardResult:
    """Eq. 30-31 from the counts."""
    n_solved = max(0, min(int(n_solved), int(n_subtasks)))
    n_calls = max(0, int(n_calls))
    if n_subtasks <= 0:  # nothing to recall: no F1, the floor
        return RewardResult(0.0, {"recall": 0.0, "precision": 0.0, "solved": 0.0, "calls": float(n_calls)})
    r = n_solved / n_subtasks
    p = min(1.0, n_solved / (n_calls + eps))
    f1 = 0.0 if p + r == 0 else 2 * p * r / (p + r)
    return RewardResult(f1, {"recall": r, "precision": p, "solved": float(n_solved), "calls": float(n_calls)})


def astra_f1_from_text(sub_answers: list[Any], evidence: str, n_calls: int, eps: float = 1e-8) -> RewardResult:
    """Count a sub-task solved when its answer appears in ``evidence`` (the trajectory's tool
    observations and final reply), then score with `astra_f1`."""
    solved = sum(1 for a in sub_answers if answer_found(a, evidence))
    return astra_f1(solved, len(sub_answers), n_calls, eps)
