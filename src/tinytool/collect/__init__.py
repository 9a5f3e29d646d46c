"""EfficientTool's bootstrapped collection and training loop (§3.1–3.2): queries, interactions by the teacher
then the student, rule / teacher / manual filtering, 15-gram deduplication into a replay store, LoRA SFT → gate
→ KTO, and the cost of it per 10k samples.

Names are imported on first use, so that ``import tinytool.collect`` stays light.
"""

from __future__ import annotations

from tinytool.lazy import lazy_exports

_EXPORTS = {
    "CollectConfig": "tinytool.collect.loop",
    "Loop": "tinytool.collect.loop",
    "layer_counts": "tinytool.collect.loop",
    "run_loop": "tinytool.collect.loop",
    "QueryDeduper": "tinytool.collect.dedup",
    "ReplayStore": "tinytool.collect.replay",
    "rule_problems": "tinytool.collect.filters",
    "judge_trajectories": "tinytool.collect.filters",
    "Prices": "tinytool.collect.cost",
    "Usage": "tinytool.collect.cost",
    "cost_per_10k": "tinytool.collect.cost",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["CollectConfig", "Loop", "Prices", "QueryDeduper", "ReplayStore", "Usage", "cost_per_10k",
           "judge_trajectories", "layer_counts", "rule_problems", "run_loop"]
