"""BFCL v4 data, read straight out of the ``bfcl-eval`` wheel.

``bfcl-eval`` pins numpy 1.26 and pulls in many SDKs, which breaks ``datasets`` — so it is never
installed. The wheel is fetched once with ``pip download --no-deps`` into the tinytool cache and
read as the zip it is: question files, possible answers, the multi-turn function docs, and the
multi-turn API classes (imported from the zip by `tinytool.envs.bfcl`). Every result records
`BFCL_VERSION`.

What an item looks like after loading follows BFCL's own loading (``bfcl_eval/utils.py``,
``load_dataset_entry``): multi-turn items get the function docs of their ``involved_classes``, the
docs named in ``missed_function`` are taken out and held back for the turn that adds them, and every
function description gets BFCL's Python hint appended.
"""

from __future__ import annotations

import functools
import json
import os
import random
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tinytool.errors import TinytoolError
from tinytool.models.loading import cache_dir

BFCL_VERSION = "2026.3.23"
WHEEL_FILE = f"bfcl_eval-{BFCL_VERSION}-py3-none-any.whl"
_DATA = "bfcl_eval/data"
_VERSION_PREFIX = "BFCL_v4"
PYTHON_HINT = " Note that the provided function is in Python 3 syntax."

# Categories a user can ask for, in BFCL's leaderboard order.
NON_LIVE = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
LIVE = (
    "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
    "live_irrelevance", "live_relevance",
)
MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
AST_CATEGORIES = NON_LIVE + LIVE
CATEGORIES = AST_CATEGORIES + MULTI_TURN
GROUPS = {
    "all": CATEGORIES,
    "ast": AST_CATEGORIES,
    "non_live": NON_LIVE,
    "live": LIVE,
    "multi_turn": MULTI_TURN,
}

# multi-turn function-doc files per API class (bfcl_eval/constants/executable_backend_config.py)
FUNC_DOC_FILES = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}


class BFCLDataError(TinytoolError, RuntimeError):
    """The BFCL wheel could not be fetched or read, or a category is unknown."""


def is_multi_turn(category: str) -> bool:
    return category.startswith("multi_turn")


def is_relevance(category: str) -> bool:
    """Irrelevance and relevance categories are scored on whether any call was made, not on values."""
    return "relevance" in category


def expand_categories(spec: str | list[str] | tuple[str, ...]) -> list[str]:
    """``"simple_python,multiple"``, a group name (``all``, ``ast``, ``live``, ``non_live``,
    ``multi_turn``) or a list of either → the categories, in leaderboard order, without repeats.
    An unknown name, or none at all, raises `BFCLDataError`."""
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    wanted: set[str] = set()
    for p in (p.strip() for p in parts):
        if not p:
            continue
        if p in GROUPS:
            wanted.update(GROUPS[p])
        elif p in CATEGORIES:
            wanted.add(p)
        else:
            raise BFCLDataError(
                f"unknown BFCL category {p!r}; choose from {', '.join(CATEGORIES)} or a group ({', '.join(GROUPS)})"
            )
    if not wanted:
        raise BFCLDataError(f"no BFCL category given ({spec!r})",
                            fix=f"name categories or a group: {', '.join(GROUPS)}, or e.g. simple_python,multiple")
    return [c for c in CATEGORIES if c in wanted]


def wheel_path(cache: str | os.PathLike | None = None) -> Path:
    """The ``bfcl-eval`` wheel: ``$TINYTOOL_BFCL_WHEEL`` if set, else the cached copy, downloaded
    with ``pip download --no-deps`` on first use."""
    env = os.environ.get("TINYTOOL_BFCL_WHEEL")
    if env:
        p = Path(env)
        if not p.is_file():
            raise BFCLDataError(f"TINYTOOL_BFCL_WHEEL={env}: no such file")
        return p
    target_dir = cache_dir(cache) / "wheels"
    target = target_dir / WHEEL_FILE
    if target.is_file():
        return target
    target_dir.mkdir(parents=True, exist_ok=True)
    # download aside and rename: parallel test workers may fetch at the same time
    with tempfile.TemporaryDirectory(dir=target_dir) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", f"bfcl-eval=={BFCL_VERSION}",
               "-d", tmp]
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
        fetched = Path(tmp) / WHEEL_FILE
        if proc.returncode == 0 and fetched.is_file():
            os.replace(fetched, target)
    if not target.is_file():
        raise BFCLDataError(
            f"could not download bfcl-eval=={BFCL_VERSION} ({' '.join(cmd)}):\n{proc.stderr.strip()[-2000:]}\n"
            "Download the wheel by hand and point TINYTOOL_BFCL_WHEEL at it."
        )
    return target


@dataclass
class BFCLItem:
    """One BFCL test entry.

    ``turns`` holds the user messages of each turn (one turn for single-turn categories; an empty
    turn in ``multi_turn_miss_func`` is where held-back functions are added). ``functions`` are the
    function docs offered at the start; ``answer`` is the possible answer (single-turn: a list of
    ``{func: {param: [allowed…]}}``; multi-turn: one list of call strings per turn), None for
    (ir)relevance items.
    """

    id: str
    category: str
    turns: list[list[dict[str, Any]]]
    functions: list[dict[str, Any]]
    answer: Any = None
    involved_classes: list[str] = field(default_factory=list)
    initial_config: dict[str, Any] = field(default_factory=dict)
    missed_function: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def multi_turn(self) -> bool:
        return is_multi_turn(self.category)


class BFCLData:
    """Read access to the files inside the wheel (cached per process)."""

    def __init__(self, wheel: str | os.PathLike | None = None):
        self.wheel = Path(wheel) if wheel else wheel_path()
        try:
            self._zip = zipfile.ZipFile(self.wheel)
        except (OSError, zipfile.BadZipFile) as e:
            raise BFCLDataError(f"{self.wheel}: not a readable wheel ({e}); delete it to download again") from None
        self.version = BFCL_VERSION

    def _jsonl(self, member: str) -> list[dict[str, Any]]:
        try:
            raw = self._zip.read(member).decode("utf-8")
        except KeyError:
            raise BFCLDataError(f"{self.wheel}: {member} is missing") from None
        rows = []
        for lineno, line in enumerate(raw.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as e:
                    raise BFCLDataError(f"{self.wheel}!{member}:{lineno}: not valid JSON ({e})") from None
        return rows

    @functools.cache  # noqa: B019 - one instance per wheel, kept for the process
    def questions(self, category: str) -> list[dict[str, Any]]:
        return self._jsonl(f"{_DATA}/{_VERSION_PREFIX}_{category}.json")

    @functools.cache  # noqa: B019
    def answers(self, category: str) -> dict[str, Any]:
        if is_relevance(category):
            return {}
        rows = self._jsonl(f"{_DATA}/possible_answer/{_VERSION_PREFIX}_{category}.json")
        return {r["id"]: r["ground_truth"] for r in rows}

    @functools.cache  # noqa: B019
    def func_doc(self, class_name: str) -> list[dict[str, Any]]:
        if class_name not in FUNC_DOC_FILES:
            raise BFCLDataError(f"unknown BFCL API class {class_name!r}")
        return self._jsonl(f"{_DATA}/multi_turn_func_doc/{FUNC_DOC_FILES[class_name]}")

    def items(self, category: str, limit: int | None = None, seed: int = 0,
              ids: list[str] | None = None, held_out: int | None = None,
              within: int | None = None) -> list[BFCLItem]:
        """The items of one category. ``limit`` takes a seeded random subset (kept in file order),
        so a partial run is a fair sample rather than the first topic in the file. ``held_out``: only the items
        outside the subset ``limit=held_out`` takes under ``seed`` (a tuning subset kept apart); ``within``: only
        the items of the subset ``limit=within`` takes (the tuning subset itself); ``limit`` then draws from those,
        so a smaller reading of the tuning subset stays inside it."""
        if category not in CATEGORIES:
            raise BFCLDataError(f"unknown BFCL category {category!r}; choose from {', '.join(CATEGORIES)}")
        if held_out is not None and within is not None:
            raise BFCLDataError("held_out and within are exclusive: the items outside the tuning subset, or inside it")
        rows = self.questions(category)
        if ids is not None:
            wanted = set(ids)
            rows = [r for r in rows if r["id"] in wanted]
        else:
            if held_out is not None or within is not None:
                size = held_out if held_out is not None else within
                tuning = set(random.Random(seed).sample(range(len(rows)), min(size, len(rows))))
                rows = [r for i, r in enumerate(rows) if (i in tuning) == (within is not None)]
            if limit is not None and limit < len(rows):
                keep = sorted(random.Random(seed).sample(range(len(rows)), limit))
                rows = [rows[i] for i in keep]
        answers = self.answers(category)
        return [self._item(r, category, answers.get(r["id"])) for r in rows]

    def _item(self, row: dict[str, Any], category: str, answer: Any) -> BFCLItem:
        row = json.loads(json.dumps(row))  # private copy: docs are edited below
        involved = list(row.get("involved_classes") or [])
        functions = row.get("function")
        if functions is None:  # multi-turn: docs come from the involved classes
            functions = [f for c in involved for f in self.func_doc(c)]
            functions = json.loads(json.dumps(functions))
        if isinstance(functions, dict):
            functions = [functions]
        missed: dict[str, list[dict[str, Any]]] = {}
        for turn, names in (row.get("missed_function") or {}).items():
            missed[turn] = []
            for name in names:
                for i, f in enumerate(functions):
                    if f["name"] == name:
                        missed[turn].append(functions.pop(i))
                        break
        for f in functions + [f for fs in missed.values() for f in fs]:
            f["description"] = f.get("description", "") + PYTHON_HINT
        question = row.get("question") or []
        if question and isinstance(question[0], dict):
            question = [question]
        return BFCLItem(
            id=row["id"],
            category=category,
            turns=question,
            functions=functions,
            answer=answer,
            involved_classes=involved,
            initial_config=row.get("initial_config") or {},
            missed_function=missed,
        )

    def read_text(self, member: str) -> str:
        """Any file in the wheel, as text (the API sources, for `tinytool.envs.bfcl`)."""
        try:
            return self._zip.read(member).decode("utf-8")
        except KeyError:
            raise BFCLDataError(f"{self.wheel}: {member} is missing") from None


@functools.cache
def bfcl_data(wheel: str | None = None) -> BFCLData:
    """The process-wide `BFCLData` for ``wheel`` (default: the cached download)."""
    return BFCLData(wheel)
