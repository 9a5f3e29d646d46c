"""Expert-level evaluation (EfficientTool §3.3.1, "Expert Level"): people give each trajectory a binary
accept/reject, and the final judgment is their majority vote.

Input is JSONL, one row per verdict (``{"id", "expert", "verdict"}``; a later row of the same expert and item
replaces the earlier one) or per trajectory with all its verdicts (``{"id", "verdicts": [...]}``); a verdict is
``accept``/``reject`` (or true/false). A tie is a rejection: an item is accepted only when most experts accept
it. A row that does not read is an error naming file and line.
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any

from tinytool.schema import SchemaError

_VERDICTS = {"accept": True, "reject": False, "true": True, "false": False, True: True, False: False}


def _verdict(value: Any, field: str) -> bool:
    key = value.strip().lower() if isinstance(value, str) else value
    try:
        return _VERDICTS[key]
    except (KeyError, TypeError):
        raise SchemaError(f"{value!r} is not accept or reject", field) from None


def read_expert_verdicts(path: str | os.PathLike) -> dict[str, list[bool]]:
    """Each trajectory id with its experts' verdicts (True = accept)."""
    from tinytool.io import iter_jsonl_rows

    votes: dict[str, list[bool]] = defaultdict(list)
    by_expert: dict[str, dict[str, bool]] = defaultdict(dict)  # id → expert → the expert's latest verdict
    for line, row in iter_jsonl_rows(path):
        try:
            if not isinstance(row, dict) or "id" not in row:
                raise SchemaError("expected an object with an id", "id")
            if "verdicts" in row:
                if not isinstance(row["verdicts"], list) or not row["verdicts"]:
                    raise SchemaError("expected a non-empty list of verdicts", "verdicts")
                votes[str(row["id"])] += [_verdict(v, f"verdicts[{i}]") for i, v in enumerate(row["verdicts"])]
            elif row.get("expert") is not None:
                by_expert[str(row["id"])][str(row["expert"])] = _verdict(row.get("verdict"), "verdict")
            else:
                votes[str(row["id"])].append(_verdict(row.get("verdict"), "verdict"))
        except SchemaError as e:
            raise e.located(str(path), line) from None
    for item, experts in by_expert.items():
        votes[item] += list(experts.values())
    return dict(votes)


def expert_summary(votes: dict[str, list[bool]]) -> dict[str, Any]:
    """The accept ratio by majority vote (ties reject), and how unanimous the experts were."""
    accepted = {i: sum(v) * 2 > len(v) for i, v in votes.items()}
    n = len(votes)
    return {"items": n, "accepted": sum(accepted.values()),
            "accept_ratio": sum(accepted.values()) / n if n else None,
            "unanimous": sum(len(set(v)) == 1 for v in votes.values()) / n if n else None,
            "experts_per_item": sum(map(len, votes.values())) / n if n else None,
            "decisions": accepted}


__all__ = ["expert_summary", "read_expert_verdicts"]
