"""Distillation: teacher rollouts (D_T), the top-k teacher cache, KD losses and the distillation trainer
(STAR §3.1, §3.3; App. A.2–A.5)."""
