"""RL prompts from tool-calling conversations: what the policy is asked, and what its answer is scored against.

Each conversation gives one row, at its first assistant turn: ``prompt`` is the conversation before that turn
rendered in the chosen format (tool listing included), ``ground_truth`` is the turn itself as an OpenAI-style
assistant message (its calls, or its text when no tool fits), ``tools`` the offered tools; the rewards of
`tinytool.rewards` read those columns (STAR §3.2.1, ToolRL §3.3 score one turn against its label). Columns that
vary in shape are JSON strings, so any mix of tasks fits one `datasets.Dataset`. ``sub_answers`` (ASTRA-F1),
``teacher`` (MENTOR), ``world_seed`` (the demo environment) and ``environment`` (a synthesized one) are carried when a conversation's ``meta`` has
them.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from tinytool.formats.base import PromptFormat
from tinytool.schema import Conversation
from tinytool.train.examples import adds_bos

#: the columns a row always has
COLUMNS = ("prompt", "ground_truth", "tools", "task_id", "category")


def rl_row(conv: Conversation, fmt: PromptFormat, tokenizer: Any, index: int = 0) -> dict[str, Any] | None:
    """The RL row of a conversation (None when it has no assistant turn after a user turn)."""
    first = next((i for i, m in enumerate(conv.messages) if m.role == "assistant"), None)
    if first is None or not any(m.role == "user" for m in conv.messages[:first]):
        return None
    before = Conversation(conv.messages[:first], conv.tools, conv.meta)
    prompt = fmt.render(before, tokenizer).prompt
    bos = getattr(tokenizer, "bos_token", None)
    if bos and prompt.startswith(bos) and adds_bos(tokenizer):
        prompt = prompt[len(bos):]  # the tokenizer adds it again when TRL encodes the prompt
    target = conv.messages[first].to_dict()
    target.pop("reasoning", None)
    row = {
        "prompt": prompt,
        "ground_truth": json.dumps(target, ensure_ascii=False),
        "tools": json.dumps([t.to_dict() for t in conv.tools], ensure_ascii=False),
        "task_id": str(conv.meta.get("id", index)),
        "category": str(conv.meta.get("category", "")),
    }
    for key in ("sub_answers", "teacher", "world_seed", "environment"):
        if key in conv.meta:
            row[key] = json.dumps(conv.meta[key], ensure_ascii=False)
    return row


def build_rl_dataset(conversations: list[Conversation], fmt: PromptFormat, tokenizer: Any) -> Any:
    """The `datasets.Dataset` of RL rows (see the module docstring); conversations without a first assistant turn
    after a user turn are skipped. Optional columns are present in every row (empty JSON ``null`` where absent)."""
    from datasets import Dataset

    rows = [r for i, c in enumerate(conversations) if (r := rl_row(c, fmt, tokenizer, i)) is not None]
    extra = sorted({k for r in rows for k in r} - set(COLUMNS))
    for r in rows:
        for k in extra:
            r.setdefault(k, "null")
    return Dataset.from_list(rows) if rows else Dataset.from_dict({k: [] for k in COLUMNS})


def makes_no_call(ground_truth: str) -> bool:
    """Whether a row's label (its ``ground_truth`` column) answers without a tool call."""
    try:
        target = json.loads(ground_truth)
    except (TypeError, ValueError):
        return False
    return isinstance(target, dict) and not target.get("tool_calls")


def rows_by_label(dataset: Any) -> tuple[list[int], list[int]]:
    """The indices of the rows whose label makes no call, and of those whose label calls."""
    no_call: list[int] = []
    calls: list[int] = []
    for i, gt in enumerate(dataset["ground_truth"]):
        (no_call if makes_no_call(gt) else calls).append(i)
    return no_call, calls


def with_no_call_share(dataset: Any, share: float, seed: int = 0) -> tuple[Any, dict[str, int]]:
    """The rows subsampled (never repeated) so that ``share`` of them have a label without a call, the lever of
    ToolRL's reward ablations on declining (§3.3): with symmetric no-call scoring, the share decides how much of a
    step teaches abstaining. The larger side is cut; the other is kept whole. Returns the rows and their counts;
    raises `ValueError` when the side the share needs has no rows."""
    import random

    no_call, calls = rows_by_label(dataset)
    if (share > 0 and not no_call) or (share < 1 and not calls):
        side = "a label without a call" if share > 0 and not no_call else "a call in its label"
        raise ValueError(f"none of the {len(dataset)} prompts has {side}")
    rng = random.Random(seed)
    if share >= 1:
        calls = []
    elif share <= 0:
        no_call = []
    elif len(no_call) > share / (1 - share) * len(calls):
        no_call = rng.sample(no_call, round(share / (1 - share) * len(calls)))
    else:
        calls = rng.sample(calls, min(len(calls), round((1 - share) / share * len(no_call))))
    keep = sorted(no_call + calls)
    return dataset.select(keep), {"no_call": len(no_call), "call": len(calls), "dropped": len(dataset) - len(keep)}


def _has_sub_answers(value: Any) -> bool:
    try:
        subs = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return False
    return isinstance(subs, list) and len(subs) > 0


def split_by_sub_answers(dataset: Any) -> tuple[Any, dict[str, int]]:
    """The rows that have sub-answers, and how many rows of each category have none. A task without sub-answers
    has no ASTRA-F1 (Eq. 29 divides by their number): it cannot be scored by that reward, so it is left out of a
    run that uses it rather than scored a constant."""
    if "sub_answers" not in dataset.column_names:
        return dataset, {}
    keep, missing = [], Counter()
    for i, (value, category) in enumerate(zip(dataset["sub_answers"], dataset["category"])):
        if _has_sub_answers(value):
            keep.append(i)
        else:
            missing[category or "(no category)"] += 1
    return (dataset if len(keep) == len(dataset) else dataset.select(keep)), dict(sorted(missing.items()))


__all__ = ["COLUMNS", "build_rl_dataset", "makes_no_call", "rl_row", "split_by_sub_answers", "with_no_call_share"]
