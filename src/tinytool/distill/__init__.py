"""Distillation: teacher rollouts (D_T), the top-k teacher cache, KD losses and the distillation trainer
(STAR §3.1, §3.3; App. A.2–A.5).

Names are imported on first use, so that ``import tinytool.distill`` does not import transformers.
"""

from __future__ import annotations

from tinytool.lazy import lazy_exports

_EXPORTS = {
    "DistillConfig": "tinytool.distill.trainer",
    "DistillTrainer": "tinytool.distill.trainer",
    "train_distill": "tinytool.distill.trainer",
    "KDLoss": "tinytool.distill.losses",
    "TeacherTopK": "tinytool.distill.losses",
    "fused_kd_loss": "tinytool.distill.losses",
    "TeacherTopKCache": "tinytool.distill.cache",
    "build_cache": "tinytool.distill.cache",
    "rollout": "tinytool.distill.rollouts",
}


__getattr__ = lazy_exports(__name__, _EXPORTS)


__all__ = ["DistillConfig", "DistillTrainer", "KDLoss", "TeacherTopK", "TeacherTopKCache", "build_cache",
           "fused_kd_loss", "rollout", "train_distill"]
