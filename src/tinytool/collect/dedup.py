"""Near-duplicate user queries (EfficientTool §3.1.2, "Experience Deduplication and Replay"): the user query is
the key, compared by its 15-grams.

A query is normalized (lower case, runs of non-alphanumerics → one space) and cut into overlapping 15-character
shingles (a query shorter than that is one shingle); two queries whose shingle sets overlap with an estimated
Jaccard similarity at or above ``threshold`` are duplicates. The estimate is a MinHash signature and the lookup
a MinHash LSH index (``datasketch``), so a check costs the same however many queries are stored, and the index
can live in an external store (``datasketch``'s Redis/Cassandra storage) when it outgrows memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

NGRAM = 15  # EfficientTool §3.1.2
THRESHOLD = 0.7
NUM_PERM = 128


def normalize(query: str) -> str:
    return re.sub(r"[^0-9a-z]+", " ", str(query).lower()).strip()


def shingles(query: str, n: int = NGRAM) -> set[str]:
    """The set of ``n``-character shingles of the normalized query (the query itself when shorter)."""
    text = normalize(query)
    if len(text) <= n:
        return {text}
    return {text[i:i + n] for i in range(len(text) - n + 1)}


class QueryDeduper:
    """Keeps the queries seen so far; `add` admits a query unless a near-duplicate is already in."""

    def __init__(self, threshold: float = THRESHOLD, ngram: int = NGRAM, num_perm: int = NUM_PERM,
                 storage_config: dict | None = None):
        from datasketch import MinHashLSH

        if not 0 < threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        self.threshold, self.ngram, self.num_perm = threshold, ngram, num_perm
        self.lsh = MinHashLSH(threshold=threshold, num_perm=num_perm,
                              **({"storage_config": storage_config} if storage_config else {}))
        self.size = 0

    def _minhash(self, query: str):
        from datasketch import MinHash

        m = MinHash(num_perm=self.num_perm, seed=1)
        m.update_batch([s.encode("utf-8") for s in shingles(query, self.ngram)])
        return m

    def duplicate_of(self, query: str) -> str | None:
        """The key of a stored near-duplicate of ``query`` (None when there is none)."""
        hits = self.lsh.query(self._minhash(query))
        return str(hits[0]) if hits else None

    def add(self, query: str, key: str | None = None) -> bool:
        """Store ``query`` under ``key`` (default: the next number); False, storing nothing, when a
        near-duplicate is already in."""
        m = self._minhash(query)
        if self.lsh.query(m):
            return False
        self.lsh.insert(str(key if key is not None else self.size), m)
        self.size += 1
        return True

    def filter(self, queries: Iterable[str]) -> list[bool]:
        """`add` each query in turn; which were new."""
        return [self.add(q) for q in queries]


__all__ = ["NGRAM", "QueryDeduper", "normalize", "shingles"]
