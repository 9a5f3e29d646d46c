"""What collecting data costs per 10,000 samples (EfficientTool §4.3, Table 4; App. A.4, Table 7).

EfficientTool's own figure is ``teacher share × API cost of one interaction + reviewed share × human price``:
the teacher runs the first part of the interactions (20% there) and a person reviews the negatives and a
proportional sample of the positives; judging with the teacher adds its own API cost. The baselines of Table 7
price every sample by hand (human + human), by an LLM then a person (LLM + human), or by two LLM passes
(LLM + LLM). Here every count comes from the run (interactions by the teacher, items reviewed, tokens in and
out) and the prices from the user; the defaults are App. A.4's: $4.3 per human annotation, and 0.0032 and 0.0128
Yuan per 1,000 input and output tokens, converted at 7 Yuan to the dollar as Table 7 does.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

PER = 10_000


@dataclass
class Prices:
    human_per_item: float = 4.3
    input_per_1k: float = 0.0032 / 7
    output_per_1k: float = 0.0128 / 7
    currency: str = "USD"


@dataclass
class Usage:
    """What a collection run did: samples collected, and the teacher's share of the work."""

    samples: int
    teacher_interactions: int
    teacher_in_tokens: int  # over the teacher's interactions
    teacher_out_tokens: int
    judge_in_tokens: int = 0
    judge_out_tokens: int = 0
    reviewed: int = 0  # items queued for a person's review: what the method asks of people


def cost_per_10k(usage: Usage, prices: Prices | None = None) -> dict[str, float | str]:
    """EfficientTool's cost per 10k samples and Table 7's three baselines at the run's token counts."""
    p = prices or Prices()
    n = max(usage.samples, 1)

    def api(tokens_in: float, tokens_out: float) -> float:
        return tokens_in / 1000 * p.input_per_1k + tokens_out / 1000 * p.output_per_1k

    # the baselines price an interaction as the teacher's did; without any, they cannot be priced
    interaction = (api(usage.teacher_in_tokens, usage.teacher_out_tokens) / usage.teacher_interactions
                   if usage.teacher_interactions else None)
    judging = api(usage.judge_in_tokens, usage.judge_out_tokens) / n
    ours = (usage.teacher_interactions / n) * (interaction or 0.0) + judging + (usage.reviewed / n) * p.human_per_item

    def per(x: float | None) -> float | None:
        return None if x is None else PER * x

    return {
        "currency": p.currency,
        "api_cost_per_interaction": interaction,
        "ours": PER * ours,
        "human_human": per(None if interaction is None else interaction + 2 * p.human_per_item),
        "llm_human": per(None if interaction is None else interaction + p.human_per_item),
        "llm_llm": per(None if interaction is None else 2 * interaction),
        "teacher_share": usage.teacher_interactions / n,
        "reviewed_share": usage.reviewed / n,
        "prices": asdict(p),
    }


__all__ = ["Prices", "Usage", "cost_per_10k"]
