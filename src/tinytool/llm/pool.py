"""Several endpoints as one client: a batch of requests is split across them and sent at once.

A GPU box running several vLLM (or any OpenAI-compatible) servers, or a cluster of them, is used at its
combined speed without changes to the code that asks: `PooledClient` is an `LLMClient` whose ``generate`` deals
the requests round-robin to its members, runs each member's share on its own thread, and returns the
completions in request order. ``thread_safe`` says whether several callers may use a client at once (HTTP
backends may; a local model generating in this process may not), which is what a stage checks before running
its work on several threads.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tinytool.llm.base import Completion, GenerationConfig, LLMClient, Request

#: backends whose ``generate`` may run on several threads at once
_THREAD_SAFE = {"OpenAIClient", "ScriptedClient", "PooledClient"}


def thread_safe(client: LLMClient) -> bool:
    if isinstance(client, PooledClient):
        return all(thread_safe(c) for c in client.members)
    return type(client).__name__ in _THREAD_SAFE


class PooledClient(LLMClient):
    name = "pool"

    def __init__(self, members: list[LLMClient]):
        if not members:
            raise ValueError("a pool needs at least one client")
        self.members = list(members)
        self.name = "+".join(m.name for m in self.members)
        self.tokenizer = getattr(self.members[0], "tokenizer", None)

    def generate(self, requests: list[Request], config: GenerationConfig) -> list[list[Completion]]:
        if len(self.members) == 1 or len(requests) <= 1:
            return self.members[0].generate(requests, config) if requests else []
        shares: list[list[int]] = [[] for _ in self.members]
        for i in range(len(requests)):
            shares[i % len(self.members)].append(i)
        out: list[list[Completion] | None] = [None] * len(requests)

        def run(member: LLMClient, idx: list[int]) -> None:
            for i, comps in zip(idx, member.generate([requests[i] for i in idx], config), strict=True):
                out[i] = comps

        with ThreadPoolExecutor(len(self.members)) as pool:
            for f in [pool.submit(run, m, idx) for m, idx in zip(self.members, shares) if idx]:
                f.result()
        return [o if o is not None else [] for o in out]

    def describe(self) -> dict[str, Any]:
        return {"backend": "PooledClient", "name": self.name, "members": [m.describe() for m in self.members]}

    def close(self) -> None:
        for m in self.members:
            m.close()


def pooled(specs: list[str], **kw: Any) -> LLMClient:
    """One client for several specs (`tinytool.llm.get_client` each); a single spec gives its own client."""
    from tinytool.llm import get_client

    clients = [get_client(s, **kw) for s in dict.fromkeys(specs)]
    return clients[0] if len(clients) == 1 else PooledClient(clients)


__all__ = ["PooledClient", "pooled", "thread_safe"]
