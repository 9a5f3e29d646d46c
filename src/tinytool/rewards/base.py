"""The result type every reward returns."""

from __future__ import annotations

from dataclasses import dataclass, field

from tinytool.schema import ToolCall


@dataclass(slots=True)
class RewardResult:
    """A reward value and the parts it was made of (for logging); ``error`` is set when the input
    could not be read and ``score`` is then the reward's floor; ``reason`` says why a readable
    completion still scored a floor, or a part's floor (e.g. Sim-RL's format rules it breaks, the
    ToolRL call block its released reading cannot read)."""

    score: float
    parts: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    reason: str | None = None

    def to_dict(self) -> dict:
        out: dict = {"score": self.score, **self.parts}
        if self.error is not None:
            out["error"] = self.error
        if self.reason is not None:
            out["reason"] = self.reason
        return out


def is_number(x: object) -> bool:
    """Numbers and booleans (``True == 1``), the types Sim-RL and ToolRL compare exactly."""
    return isinstance(x, (int, float))


def same_calls(pred: list[ToolCall], truth: list[ToolCall]) -> bool:
    """Are two call lists equal as multisets? Order does not matter; values compare as Python
    values (``1 == 1.0``, ``True == 1``)."""
    if len(pred) != len(truth):
        return False
    remaining = list(truth)
    for p in pred:
        idx = next((i for i, g in enumerate(remaining) if g.name == p.name and g.arguments == p.arguments), -1)
        if idx < 0:
            return False
        del remaining[idx]
    return True
