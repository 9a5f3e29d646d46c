"""Query generation (EfficientTool §3.1.1): seed queries, and the teacher's equally challenging variants of them,
written from the tool documentation, the seed and the history of queries already collected.

A seed is a task conversation: the user's request, the tools offered and whatever the environment needs to run
it (the demo catalog's ``world_seed``). A variant keeps the seed's tools and world and replaces the request; it
carries no reference answers (``sub_answers``), which belonged to the seed's wording. The teacher is shown the
most recent queries of the history and asked for a request unlike them, so repeated rounds widen the coverage of
domains, styles and tool-use patterns instead of circling one template.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

from tinytool.llm.base import GenerationConfig, LLMClient
from tinytool.schema import Conversation, Message

VARIANT_PROMPT = """You write requests that users send to an assistant that can call these tools:
{tools}

A user once asked:
{seed}

Write one new request of the same difficulty that these tools can serve: a different situation, different \
values and your own wording (keep the language of the original). It must not repeat any of these earlier \
requests:
{history}

Reply with one JSON object and nothing else: {{"query": "the new request"}}"""

HISTORY_SHOWN = 8  # earlier queries quoted in the prompt


def seed_task(conv: Conversation) -> Conversation | None:
    """The seed as a task: its messages up to the first assistant turn (None when it has no user request); that
    turn, when there is one, is kept as ``meta["reference"]`` for the reference judge."""
    first = next((i for i, m in enumerate(conv.messages) if m.role == "assistant"), len(conv.messages))
    prefix = conv.messages[:first]
    if not any(m.role == "user" and (m.content or "").strip() for m in prefix):
        return None
    meta = dict(conv.meta)
    if first < len(conv.messages):
        meta["reference"] = conv.messages[first].to_dict()
    return Conversation(list(prefix), conv.tools, meta)


def with_query(seed: Conversation, query: str, vid: str) -> Conversation:
    """A variant of ``seed``: the same tools and world, the last user message replaced by ``query``."""
    messages = list(seed.messages)
    last = max(i for i, m in enumerate(messages) if m.role == "user")
    messages[last] = Message(role="user", content=query)
    meta = {k: v for k, v in seed.meta.items() if k not in ("sub_answers", "sub_questions", "teacher", "reference")}
    meta.update(id=vid, variant_of=seed.meta.get("id"), source="teacher-variant")
    return Conversation(messages, seed.tools, meta)


def teacher_variants(client: LLMClient, seeds: Sequence[Conversation], history: Sequence[str], *, prefix: str,
                     seed: int = 0, gen: GenerationConfig | None = None) -> tuple[list[Conversation], int]:
    """One variant per seed from the teacher; returns the variants and how many replies held no usable query
    (those seeds get none)."""
    from tinytool.collect.filters import user_query
    from tinytool.llm.ask import ask_json

    gen = gen or GenerationConfig(max_new_tokens=160, temperature=0.8, top_p=0.95)
    rng = random.Random(seed)
    recent = list(history)[-4 * HISTORY_SHOWN:]
    prompts = []
    for s in seeds:
        shown = rng.sample(recent, min(HISTORY_SHOWN, len(recent)))
        tools = json.dumps([{"name": t.name, "description": t.description} for t in s.tools], ensure_ascii=False)
        prompts.append(VARIANT_PROMPT.format(tools=tools[:4000], seed=user_query(s),
                                             history="\n".join(f"- {q}" for q in shown) or "- (none yet)"))
    out, bad = [], 0
    for i, (s, obj) in enumerate(zip(seeds, ask_json(client, prompts, gen, [seed * 100003 + i for i in
                                                                              range(len(seeds))]))):
        query = obj.get("query") if obj else None
        if not isinstance(query, str) or not query.strip() or query.strip() == user_query(s).strip():
            bad += 1
            continue
        out.append(with_query(s, query.strip(), f"{prefix}-{i}"))
    return out, bad


__all__ = ["VARIANT_PROMPT", "seed_task", "teacher_variants", "with_query"]
