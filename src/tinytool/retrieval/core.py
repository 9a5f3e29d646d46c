"""Tool retrieval (EfficientTool §3.3.2, App. A.6–A.8, C.4): from a large catalog, the few tools a request needs.

Methods (``method=``):

- ``cosine``: dense similarity of the request and each tool's documentation (offline MiniLM embeddings);
- ``bm25``: lexical BM25 (``bm25s``) over the same documents;
- ``weighted``: W-BC, α·cosine + (1 − α)·BM25 after per-query min-max scaling (α = 0.8 on the cosine);
- ``cascade``: C-BC, the dense top ``cascade_n`` re-ranked by BM25;
- ``cosine-max``: the larger of the request's and the refined intent's cosine (Cosine-Max);
- ``rrf``: Reciprocal Rank Fusion (k = 60) of the request's and the refined intent's rankings (RRF-CCLI).

Intent refinement rewrites a long request (over ``refine_words`` words; EfficientTool invokes it above a length
threshold) into the intent that needs a tool, with an LLM; below the threshold, or without an LLM, the intent is
the request itself. A catalog often holds near-duplicates (one service's tool under several names, or several
servers offering the same action); with ``diversity`` > 0 the first ``k`` are picked by Maximal Marginal Relevance
(Carbonell & Goldstein, 1998): each next tool maximizes (1 − diversity)·relevance − diversity·(its largest cosine
with a tool already picked), relevance being the method's score min-max scaled, so the ``k`` slots cover
different tools instead of ``k`` copies of one. It is off by default: in a small catalog of distinct but
related tools (a current-weather and a forecast tool) it can push a weak ranking's right answer out of the ``k``.
`knee_cutoff` returns the head of a ranking up to its knee (Kneedle, ``kneed``), the dynamic
cut-off EfficientTool pairs with Cosine-Max.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from tinytool.schema import Tool

METHODS = ("cosine", "bm25", "weighted", "cascade", "cosine-max", "rrf")
RRF_K = 60
ALPHA = 0.8  # W-BC's weight on the cosine (EfficientTool Table 12)
DIVERSITY = 0.0  # MMR's weight on redundancy: 0 ranks by relevance alone; ~0.2 suits catalogs of near-duplicates
MMR_POOL = 50  # the best this many by relevance are the candidates MMR picks from
_WORD = re.compile(r"\w+")

_REFINE = """A user wrote to an assistant that can call tools:
{query}

In one short sentence, state the single action the user needs a tool for (what to look up or do, with its key \
values). Write only that sentence."""


def tool_text(tool: Tool) -> str:
    """The text a tool is found by: its name (split into words), description and parameter names."""
    def split(name: str) -> str:  # getWeather, stats.mean, from_currency → words
        return re.sub(r"[._]", " ", re.sub(r"([a-z])([A-Z])", r"\1 \2", name))

    words = split(tool.name)
    params = " ".join(f"{split(k)} {v.get('description', '')}" for k, v in
                      tool.parameters.get("properties", {}).items() if isinstance(v, dict))
    return f"{words}. {tool.description} {params}".strip()


def read_catalog(paths: Sequence[Any]) -> list[Tool]:
    """The tools of JSONL files of servers (``{server, tools}``), conversations (their ``tools``) or tools, in
    order, once per name: a later tool of a name already read is left out, and a warning says how many of those
    differed from the first. A row that does not read is an error naming its file and line."""
    import logging

    from tinytool.io import iter_jsonl_rows
    from tinytool.schema import SchemaError

    tools: dict[str, Tool] = {}
    differing = 0
    for p in paths:
        for line, row in iter_jsonl_rows(p):
            items = row.get("tools") if isinstance(row, dict) and isinstance(row.get("tools"), list) else [row]
            for t in items:
                try:
                    tool = Tool.from_dict(t)
                except SchemaError as e:
                    raise e.located(str(p), line) from None
                seen = tools.setdefault(tool.name, tool)
                differing += seen is not tool and seen.to_dict() != tool.to_dict()
    if differing:
        logging.getLogger(__name__).warning("%d later definitions of an already-read tool name differed from the "
                                            "first and were left out", differing)
    return list(tools.values())


def llm_refiner(client: Any) -> Callable[[str], str]:
    """An intent refiner backed by a `tinytool.llm` client."""
    from tinytool.llm.base import GenerationConfig, Request

    def refine(query: str) -> str:
        (c, *_), = client.generate([Request([{"role": "user", "content": _REFINE.format(query=query)}])],
                                   GenerationConfig(max_new_tokens=48, temperature=0.0))
        return c.text.strip() or query

    return refine


def _checked_diversity(d: float) -> float:
    if not 0.0 <= d < 1.0:
        raise ValueError(f"diversity must be in [0, 1), got {d}")
    return d


class ToolRetriever:
    """An index over ``tools`` answering `search` with each method of the module docstring."""

    def __init__(self, tools: Sequence[Tool], embed: Callable[[list[str]], Any] | None = None,
                 refine: Callable[[str], str] | None = None, refine_words: int = 40, cascade_n: int = 20,
                 diversity: float = DIVERSITY):
        import bm25s

        if not tools:
            raise ValueError("no tools to index")
        self.diversity = _checked_diversity(diversity)
        self.tools = list(tools)
        self.names = [t.name for t in self.tools]
        self._embed = embed
        self.refine, self.refine_words, self.cascade_n = refine, refine_words, cascade_n
        self._intents: dict[str, str] = {}  # one LLM call per request, however many methods ask
        self._texts = [tool_text(t) for t in self.tools]
        self._vectors: Any = None
        self._words = [frozenset(w.lower() for w in _WORD.findall(t)) for t in self._texts]
        self.bm25 = bm25s.BM25()
        self.bm25.index(bm25s.tokenize(self._texts, show_progress=False), show_progress=False)

    @property
    def embed(self) -> Callable[[list[str]], Any]:
        """The text embedder, loaded on first use: BM25 alone never loads it."""
        if self._embed is None:
            from tinytool.data.mixing import default_embedder

            self._embed = default_embedder()
        return self._embed

    @property
    def vectors(self) -> Any:
        """The tools' unit-length embeddings (computed on first use)."""
        if self._vectors is None:
            import numpy as np

            vectors = np.asarray(self.embed(self._texts), dtype=np.float32)
            self._vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True).clip(min=1e-12)
        return self._vectors

    # -- scores -----------------------------------------------------------------------------------
    def _cosine(self, text: str) -> Any:
        import numpy as np

        v = np.asarray(self.embed([text]), dtype=np.float32)[0]
        return self.vectors @ (v / max(float(np.linalg.norm(v)), 1e-12))

    def _bm25(self, text: str) -> Any:
        import bm25s
        import numpy as np

        scores = self.bm25.get_scores(bm25s.tokenize([text], show_progress=False, return_ids=False)[0])
        return np.asarray(scores, dtype=np.float32)

    def intent(self, query: str) -> str:
        """The refined intent of a long request (the request itself when short or without a refiner)."""
        if self.refine is None or len(query.split()) <= self.refine_words:
            return query
        if query not in self._intents:
            if len(self._intents) >= 4096:
                self._intents.clear()
            self._intents[query] = self.refine(query)
        return self._intents[query]

    def scores(self, query: str, method: str = "rrf") -> Any:
        """One score per tool (higher is better)."""
        import numpy as np

        def scaled(x: Any) -> Any:
            lo, hi = float(x.min()), float(x.max())
            return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)

        if method == "cosine":
            return self._cosine(query)
        if method == "bm25":
            return self._bm25(query)
        if method == "weighted":
            return ALPHA * scaled(self._cosine(query)) + (1 - ALPHA) * scaled(self._bm25(query))
        if method == "cascade":
            dense = self._cosine(query)
            head = np.argsort(-dense)[:self.cascade_n]
            out = np.full(len(self.tools), -np.inf, dtype=np.float32)
            out[head] = self._bm25(query)[head] + 1e-6 * dense[head]  # BM25 orders the dense head
            return out
        intent = self.intent(query)
        if method == "cosine-max":
            return np.maximum(self._cosine(query), self._cosine(intent)) if intent != query else self._cosine(query)
        if method == "rrf":
            paths = [self._cosine(query)] + ([self._cosine(intent)] if intent != query else [])
            fused = np.zeros(len(self.tools), dtype=np.float32)
            for s in paths:
                ranks = np.empty(len(s), dtype=np.int64)
                ranks[np.argsort(-s)] = np.arange(1, len(s) + 1)
                fused += 1.0 / (RRF_K + ranks)
            return fused
        raise ValueError(f"unknown retrieval method {method!r}; choose from {', '.join(METHODS)}")

    def search(self, query: str, k: int = 5, method: str = "rrf",
               diversity: float | None = None) -> list[tuple[Tool, float]]:
        """The ``k`` best tools for ``query`` with their scores, in the order picked (by relevance alone when
        ``diversity`` is 0; the retriever's ``diversity`` when None)."""
        import numpy as np

        s = self.scores(query, method)
        d = self.diversity if diversity is None else _checked_diversity(diversity)
        order = [int(i) for i in np.argsort(-s)[:max(k, MMR_POOL) if d > 0 else k] if np.isfinite(s[int(i)])]
        if d > 0:
            order = self._mmr(s, order, k, d, lexical=method == "bm25")
        return [(self.tools[i], float(s[i])) for i in order]

    def _mmr(self, s: Any, candidates: list[int], k: int, d: float, lexical: bool = False) -> list[int]:
        """Maximal Marginal Relevance over ``candidates`` (best first): ``k`` of them, see the module docstring.
        Redundancy is the cosine of the tools' embeddings, or (``lexical``, for BM25, which loads no embedder) the
        Jaccard overlap of their words."""
        import numpy as np

        if len(candidates) <= 1:
            return candidates[:k]
        finite = s[np.isfinite(s)]
        lo, hi = float(finite.min()), float(finite.max())
        rel = (s[candidates] - lo) / (hi - lo) if hi > lo else np.zeros(len(candidates))
        if lexical:
            words = [self._words[i] for i in candidates]
            sim = np.array([[len(a & b) / max(1, len(a | b)) for b in words] for a in words], dtype=np.float32)
        else:
            sim = self.vectors[candidates] @ self.vectors[candidates].T
        picked = [0]
        redundancy = sim[0].copy()
        left = np.ones(len(candidates), dtype=bool)
        left[0] = False
        while len(picked) < min(k, len(candidates)):
            gain = np.where(left, (1 - d) * rel - d * redundancy, -np.inf)
            j = int(np.argmax(gain))
            picked.append(j)
            left[j] = False
            redundancy = np.maximum(redundancy, sim[j])
        return [candidates[j] for j in picked]


def knee_cutoff(results: Sequence[tuple[Tool, float]], min_keep: int = 1) -> list[tuple[Tool, float]]:
    """The head of a ranking up to its knee (Kneedle on the decreasing scores); the whole ranking when no knee
    shows."""
    from kneed import KneeLocator

    if len(results) < 3:
        return list(results)
    y = [s for _, s in results]
    knee = KneeLocator(list(range(len(y))), y, curve="convex", direction="decreasing").knee
    return list(results[:max(min_keep, knee if knee is not None else len(results))])


def offer_retrieved(conversations: Sequence[Any], retriever: ToolRetriever, k: int = 5, method: str = "rrf",
                    keep_gold: bool = True) -> tuple[list[Any], dict[str, int]]:
    """Each conversation offered the ``k`` tools retrieved for its first user message (the data transform);
    ``keep_gold`` adds the tools its assistant turns call when retrieval missed them."""
    from tinytool.schema import Conversation

    out, missed = [], 0
    for conv in conversations:
        query = next((m.content for m in conv.messages if m.role == "user" and m.content), "")
        found = [t for t, _ in retriever.search(query, k, method)] if query else []
        names = {t.name for t in found}
        called = {c.name for m in conv.messages if m.role == "assistant" for c in m.tool_calls}
        gold = [t for t in conv.tools if t.name in called and t.name not in names]
        missed += bool(gold)
        tools = found + (gold if keep_gold else [])
        out.append(Conversation(conv.messages, tools, {**conv.meta, "retrieved": [t.name for t in found]}))
    return out, {"conversations": len(out), "gold_missed": missed}


__all__ = ["DIVERSITY", "METHODS", "ToolRetriever", "knee_cutoff", "llm_refiner", "offer_retrieved", "read_catalog", "tool_text"]
