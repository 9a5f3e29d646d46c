"""Binary exact match: the predicted calls equal the ground truth's as a multiset (order does not
matter, values compare as Python values so ``1 == 1.0``); with no ground-truth calls, the
prediction must make none; a completion with format errors scores 0. The baseline the fine-grained
rewards are measured against (STAR Table 11, "Binary RL Score")."""

from __future__ import annotations

from tinytool.formats import Parsed
from tinytool.rewards.base import RewardResult, same_calls
from tinytool.rewards.inputs import Answer


def exact_match(parsed: Parsed, truth: Answer) -> RewardResult:
    well_formed = not parsed.errors
    score = 1.0 if well_formed and same_calls(parsed.calls, truth.calls) else 0.0
    return RewardResult(score, {"format": float(well_formed)})
