"""Tool chains (ASTRA §2.1.2): sequences of one server's tools that a task could need in that order.

1. **Proposals.** For each server an LLM proposes (task, chain) pairs, conditioned on the tools' schemas and
   documentation; chains naming tools the server lacks are dropped.
2. **Transition graph.** The proposals are pooled into a directed graph over the server's tools (networkx); an
   edge ``f_i → f_j`` exists when the pair appears consecutively in a proposal, weighted by how often.
3. **Walks.** Length-bounded random walks on the graph, each step biased by the edge weights (optionally never
   revisiting a tool), give the candidate chains.
4. **Verification.** The LLM checks each candidate: can every required argument of each tool come from the task
   or from what earlier tools return, and does a coherent task fit the chain? Chains failing either are dropped.

Every LLM step goes through `tinytool.llm` (an OpenAI-compatible endpoint, vLLM or a local model); answers are
read as JSON objects and a reply that does not read is counted, never fatal.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from tinytool.llm.ask import ask_json
from tinytool.llm.base import GenerationConfig, LLMClient
from tinytool.schema import Tool

_PROPOSE = """You design realistic multi-step tasks for a tool-using assistant.
The tools of the service "{server}" are listed below, one JSON object per line:
{tools}

Write one task a user could ask that needs {length} of these tools used one after another, where later calls \
use what earlier calls return, and the sequence of tool names that solves it.
Answer with one JSON object only: {{"task": "...", "chain": ["tool_name", ...]}}"""

_VERIFY = """You check a plan for a tool-using assistant.
Tools of the service "{server}", one JSON object per line:
{tools}

Planned sequence of calls: {chain}

Answer two questions:
1. dependencies_ok: can every required argument of every call be filled from a user's request or from what \
the earlier calls in the sequence return?
2. coherent: is there a sensible, realistic user task that this exact sequence solves?
If both hold, write that task.
Answer with one JSON object only: {{"dependencies_ok": true or false, "coherent": true or false, "task": "..."}}"""

def _listing(tools: Sequence[Tool]) -> str:
    return "\n".join(json.dumps(t.function_dict(), ensure_ascii=False) for t in tools)


@dataclass
class ChainStats:
    proposals: int = 0
    dropped: Counter = field(default_factory=Counter)
    walks: int = 0
    kept: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"proposals": self.proposals, "walks": self.walks, "kept": self.kept, "dropped": dict(self.dropped)}


def propose_chains(client: LLMClient, server: str, tools: Sequence[Tool], n: int, gen: GenerationConfig,
                   stats: ChainStats, seed: int = 0) -> list[tuple[str, list[str]]]:
    """``n`` (task, chain) proposals for one server (chain lengths 2–4, spread over the requests)."""
    r = random.Random(f"tinytool-chains:{seed}:{server}")
    listing = _listing(tools)
    names = {t.name for t in tools}
    prompts = [_PROPOSE.format(server=server, tools=listing, length=r.choice((2, 3, 3, 4))) for _ in range(n)]
    pairs = []
    for obj in ask_json(client, prompts, gen, [seed + i for i in range(len(prompts))]):
        stats.proposals += 1
        chain = obj.get("chain") if obj else None
        if not obj or not isinstance(obj.get("task"), str) or not isinstance(chain, list) or len(chain) < 2:
            stats.dropped["proposal not read"] += 1
            continue
        if not all(isinstance(f, str) and f in names for f in chain):
            stats.dropped["proposal names an unknown tool"] += 1
            continue
        pairs.append((obj["task"], list(chain)))
    return pairs


def transition_graph(chains: Sequence[Sequence[str]], tools: Sequence[Tool]) -> Any:
    """The directed graph over the tools with an edge per consecutive pair, ``weight`` = how often it occurs."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(t.name for t in tools)
    for chain in chains:
        for a, b in pairwise(chain):
            if g.has_edge(a, b):
                g[a][b]["weight"] += 1
            else:
                g.add_edge(a, b, weight=1)
    return g


def random_walks(graph: Any, n: int, *, min_len: int = 2, max_len: int = 4, acyclic: bool = True,
                 seed: int = 0, tries: int = 20) -> list[list[str]]:
    """Up to ``n`` distinct walks of ``min_len``–``max_len`` tools; a walk starts at a tool with outgoing edges
    (chosen by its outgoing weight) and each step follows an edge with probability proportional to its weight."""
    r = random.Random(seed)
    starts = [v for v in graph.nodes if graph.out_degree(v)]
    if not starts:
        return []
    start_w = [sum(d["weight"] for _, _, d in graph.out_edges(v, data=True)) for v in starts]
    seen: set[tuple[str, ...]] = set()
    walks = []
    for _ in range(n * tries):
        if len(walks) == n:
            break
        walk = [r.choices(starts, start_w)[0]]
        target = r.randint(min_len, max_len)
        while len(walk) < target:
            nxt = [(b, d["weight"]) for _, b, d in graph.out_edges(walk[-1], data=True)
                   if not (acyclic and b in walk)]
            if not nxt:
                break
            walk.append(r.choices([b for b, _ in nxt], [w for _, w in nxt])[0])
        key = tuple(walk)
        if len(walk) >= min_len and key not in seen:
            seen.add(key)
            walks.append(walk)
    return walks


def verify_chains(client: LLMClient, server: str, tools: Sequence[Tool], chains: Sequence[Sequence[str]],
                  gen: GenerationConfig, stats: ChainStats) -> list[dict[str, Any]]:
    """The chains the LLM judges well-formed (dependencies) and coherent, each with the task it wrote."""
    listing = _listing(tools)
    prompts = [_VERIFY.format(server=server, tools=listing, chain=" -> ".join(c)) for c in chains]
    kept = []
    for chain, obj in zip(chains, ask_json(client, prompts, gen)):
        if obj is None:
            stats.dropped["verdict not read"] += 1
        elif obj.get("dependencies_ok") is not True:
            stats.dropped["dependencies not met"] += 1
        elif obj.get("coherent") is not True or not isinstance(obj.get("task"), str) or not obj["task"].strip():
            stats.dropped["no coherent task"] += 1
        else:
            kept.append({"server": server, "chain": list(chain), "task": obj["task"].strip()})
    return kept


def build_chains(client: LLMClient, servers: dict[str, list[Tool]], *, proposals: int = 8, walks: int = 10,
                 max_len: int = 4, acyclic: bool = True, gen: GenerationConfig | None = None,
                 seed: int = 0) -> tuple[list[dict[str, Any]], ChainStats]:
    """The whole of §2.1.2 for every server: proposals → graph → walks → verification."""
    gen = gen or GenerationConfig(max_new_tokens=256, temperature=0.8, seed=seed)
    verify_gen = GenerationConfig(max_new_tokens=192, temperature=0.0)
    stats = ChainStats()
    out = []
    for server, tools in servers.items():
        pairs = propose_chains(client, server, tools, proposals, gen, stats, seed)
        graph = transition_graph([c for _, c in pairs], tools)
        candidates = random_walks(graph, walks, max_len=max_len, acyclic=acyclic, seed=seed)
        stats.walks += len(candidates)
        kept = verify_chains(client, server, tools, candidates, verify_gen, stats)
        stats.kept += len(kept)
        out += kept
    return out, stats


__all__ = ["ChainStats", "build_chains", "propose_chains", "random_walks", "transition_graph",
           "verify_chains"]
