"""Near-duplicate user queries (EfficientTool §3.1.2, "Experience Deduplication and Replay"): the user query is
the key, compared by its 15-grams.

A query is normalized (Unicode NFKC, case folded, runs of anything but letters and digits → one space: any
script, accents kept) and cut into overlapping 15-character shingles (a query shorter than that is one
shingle); two queries whose shingle sets overlap with an estimated Jaccard similarity at or above ``threshold``
are duplicates. The estimate is a MinHash signature; candidates come from a MinHash LSH index (``datasketch``)
tuned below the threshold, and each is confirmed by its estimated Jaccard, so a check costs the same however
many queries are stored.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

NGRAM = 15  # EfficientTool §3.1.2
THRESHOLD = 0.7
NUM_PERM = 128


def normalize(query: str) -> str:
    return re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", str(query)).casefold()).strip()


def shingles(query: str, n: int = NGRAM) -> set[str]:
    """The set of ``n``-character shingles of the normalized query (the query itself when shorter)."""
    text = normalize(query)
    if len(text) <= n:
        return {text}
    return {text[i:i + n] for i in range(len(text) - n + 1)}


class QueryDeduper:
    """Keeps the queries seen so far; `add` admits a query unless a near-duplicate is already in."""

    def __init__(self, threshold: float = THRESHOLD, ngram: int = NGRAM, num_perm: int = NUM_PERM):
        from datasketch import MinHashLSH

        if not 0 < threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        self.threshold, self.ngram, self.num_perm = threshold, ngram, num_perm
        # the index finds candidates generously (below the threshold); each is then checked by its Jaccard
        self.lsh = MinHashLSH(threshold=max(0.05, threshold - 0.25), num_perm=num_perm)
        self.signatures: dict[str, object] = {}
        self.size = 0

    def _minhash(self, query: str):
        from datasketch import MinHash

        m = MinHash(num_perm=self.num_perm, seed=1)
        m.update_batch([s.encode("utf-8") for s in shingles(query, self.ngram)])
        return m

    def _duplicate(self, m) -> str | None:
        for key in self.lsh.query(m):
            if m.jaccard(self.signatures[key]) >= self.threshold:
                return str(key)
        return None

    def duplicate_of(self, query: str) -> str | None:
        """The key of a stored near-duplicate of ``query`` (None when there is none)."""
        return self._duplicate(self._minhash(query))

    def add(self, query: str, key: str | None = None) -> bool:
        """Store ``query`` under ``key`` (default: the next number; a key already used gets a suffix); False,
        storing nothing, when a near-duplicate is already in."""
        m = self._minhash(query)
        if self._duplicate(m) is not None:
            return False
        key = str(key if key is not None else self.size)
        base, n = key, 1
        while key in self.signatures:
            key, n = f"{base}~{n}", n + 1
        self.lsh.insert(key, m)
        self.signatures[key] = m
        self.size += 1
        return True

    def filter(self, queries: Iterable[str]) -> list[bool]:
        """`add` each query in turn; which were new."""
        return [self.add(q) for q in queries]


__all__ = ["NGRAM", "QueryDeduper", "normalize", "shingles"]
