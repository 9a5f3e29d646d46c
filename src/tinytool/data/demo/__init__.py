"""Procedural demo tasks over the bundled catalog: the default training data when nothing can be fetched.

`generate_demo(n, seed)` returns ``(train, dev)`` lists of `Conversation`s in the BFCL single-turn
categories and as multi-step trajectories:

- ``simple``: one tool offered, one call.
- ``multiple``: 2-5 tools offered, near-miss siblings among them; one call.
- ``parallel``: one tool, 2-4 calls, phrased compactly ("in Paris, Rome and Oslo", "... respectively",
  "then repeat for ...") or as joined requests.
- ``parallel_multiple``: two to four calls to two to four different tools in one turn, often of one domain.
- ``irrelevance``: the request's tool is *not* offered (similar-looking ones are; most often a twin, a tool
  of its domain that takes the same values and computes something else), or no tool is needed (small talk,
  an open question over wide value pools: knowledge, advice, writing, or a general question about what an
  offered tool does); the answer is text and no call.
- ``missing_parameter``: a required value is absent from the request; the answer asks for it.
- ``multi_step``: a trajectory where a later call needs an earlier call's output
  (see `tinytool.data.demo.chains`), with ASTRA's sub-questions and sub-answers in ``meta``.

A share ``proc_fraction`` of the simple, multiple, parallel, parallel_multiple and irrelevance
tasks is built over procedurally generated tools instead (`tinytool.data.demo.proctools`: hundreds of
schemas, 2-8 offered in ``multiple``), so a model has to read the schema rather than recall one of
the catalog's tools; their calls are checked against the schema, not executed. The catalog's
executable tools keep the missing-parameter and multi-step tasks. One set of builders
(`tinytool.data.demo.tasks`) makes the tasks of both, over a tool source (`tinytool.data.demo.sources`).

Requests are drawn from several phrasings per tool and argument values are sampled by type from the
seeded `World`, so the same tool appears in many surface forms. Every ground-truth call is executed
on a fresh copy of the world while generating and resampled if it fails, so calls are valid by
construction. Held-out tools (`HELD_OUT`, ≥ 10 % of the catalog) and some phrasings appear only in
dev, and so do held-out generated domains and tools. Every setting is a field of one `DemoConfig`
(`tinytool.data.demo.config`: the number of tasks, the seed, the mix, the shares that shape single tasks); equal
configs give byte-identical files, and `write_demo` records the config in the data set's `MANIFEST`.
``per_toolset=K`` draws K tasks per offered tool set: each task drawn as above is followed by K-1 more over
the same tools in the same order (a call of another of them, several calls of one, one call each of several, a
near miss or question none of them answers; drawn in the mix's shares of those four), so K conversations
share one system prompt and tool listing and the same listing is seen with different right answers; their
``meta.toolset`` is the first one's id. K=1 (the default) is the set above, byte for byte.
``meta`` of every record: ``id``, ``category``, ``split``, ``seed``, ``world_seed``, ``source``,
``tools`` (``"catalog"`` or ``"generated"``), ``tools_used``, ``sub_questions`` and ``sub_answers``
(empty outside ``multi_step``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from random import Random
from typing import Any

from tinytool.data.demo import proctools
from tinytool.data.demo.catalog import World
from tinytool.data.demo.catalog.world import pristine_world
from tinytool.data.demo.config import (
    CATEGORIES,
    DEFAULT_MIX,
    MANIFEST,
    REAL_DEV,
    DemoConfig,
    manifest,
    parse_mix,
)
from tinytool.data.demo.realistic import call_values, casual
from tinytool.data.demo.sources import CatalogTools, GeneratedTools, Retry, ToolSource
from tinytool.data.demo.tasks import BUILDERS, SIBLING_KINDS, sibling
from tinytool.errors import UserInputError
from tinytool.io import atomic_dir, write_json, write_jsonl
from tinytool.schema import Conversation, Message

SOURCE = "tinytool-demo"
MAX_TRIES = 40


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------


def _quota(n: int, mix: Mapping[str, float]) -> list[str]:
    """Exactly ``n`` category labels in the proportions of ``mix`` (largest remainders)."""
    total = sum(mix.values())
    raw = {c: n * w / total for c, w in mix.items()}
    counts = {c: int(v) for c, v in raw.items()}
    for c in sorted(raw, key=lambda c: (counts[c] - raw[c], c))[: n - sum(counts.values())]:
        counts[c] += 1
    return [c for c in mix for _ in range(counts[c])]


def _tools_used(messages: list[Message]) -> list[str]:
    return sorted({c.name for m in messages for c in m.tool_calls})


def _sibling(rng: Random, source: ToolSource[Any], offered: list[Any], kind: str, used: set[str], split: str,
             i: int, seed: int) -> tuple[str, list[Message], dict[str, Any]]:
    """Task ``i``, a further one over an offered tool set: of ``kind`` if it can be built, else of its
    `_FALLBACK`, else a call of one of its tools, else a request none of them serves
    (`tinytool.data.demo.tasks.sibling`); tools the set has not called yet (``used``: those it has) first."""
    for k in dict.fromkeys((kind, *_FALLBACK.get(kind, ()), "other_tool", "no_tool")):
        for _ in range(MAX_TRIES):
            try:
                category, (messages, _, extra) = sibling(rng, source, offered, k, used)
                return category, messages, extra
            except Retry:
                continue
    raise RuntimeError(f"could not build a task over an offered tool set ({split} #{i}, seed {seed})")  # pragma: no cover


#: which categories of the mix each kind of further task over an offered tool set stands in for: one call; several
#: of one tool (BFCL's parallel); one each of several tools (parallel_multiple, and the chains of multi_step,
#: which call different tools too); none
_EXPECTS = {"other_tool": ("simple", "multiple"), "parallel": ("parallel",),
            "several_tools": ("parallel_multiple", "multi_step"), "no_tool": ("irrelevance", "missing_parameter")}
#: the kind a further task falls back to, before a call of one tool, where its own cannot be built (several calls
#: of one tool, where one call each of several could not be drawn)
_FALLBACK = {"several_tools": ("parallel",)}


def _sibling_weights(mix: Mapping[str, float]) -> list[float]:
    """Weights of `SIBLING_KINDS` that keep the mix's shares of tasks expecting one call, several calls of one tool,
    one each of several tools, and none, so a set drawn with ``per_toolset`` > 1 asks for calls as often, and
    repeats a tool as often, as one drawn without (each kind at least a little, so a listing is still seen with
    different right answers)."""
    total = sum(mix.values()) or 1.0
    return [max(sum(mix.get(c, 0.0) for c in _EXPECTS[k]) / total, 0.05) for k in SIBLING_KINDS]


def _set_weights(weights: list[float], tools: int, multi_share: float) -> list[float]:
    """`_sibling_weights` for a set of ``tools`` offered tools, where ``multi_share`` of the sets offer several: a
    set of one cannot be asked for one call each of several tools, so it draws the other kinds in their proportions,
    and a set of several draws that kind more often in their place (as far as its other kinds allow), so all the
    sets together keep the weights."""
    w = [x / sum(weights) for x in weights]
    s = SIBLING_KINDS.index("several_tools")
    if tools < 2:
        return [0.0 if i == s else x / (1 - w[s]) for i, x in enumerate(w)]
    p = max(multi_share, w[s])  # below w[s] the other kinds' weights would turn negative
    rest = (1 - (1 - p) / (1 - w[s])) / p
    return [x / p if i == s else x * rest for i, x in enumerate(w)]


def _casual(messages: list[Message], r: Random, split: str) -> list[Message]:
    """The task with its first request rewritten the way people write (`tinytool.data.demo.realistic.casual`),
    every value of its calls kept."""
    calls = [c for m in messages for c in m.tool_calls]
    out = list(messages)
    for j, m in enumerate(out):
        if m.role == "user":
            out[j] = Message(role="user", content=casual(m.content or "", call_values(calls), r, split))
            break
    return out


def _split_mix(split: str, mix: Mapping[str, float], real_dev: Mapping[str, float]) -> dict[str, float]:
    """The categories of a split and their weights: dev gives the realistic categories their share."""
    if split != "dev" or not real_dev:
        return dict(mix)
    rest = max(0.0, 1.0 - sum(real_dev.values()))
    total = sum(mix.values())
    return {**{c: rest * w / total for c, w in mix.items()}, **real_dev}


def _generate_split(split: str, n: int, cfg: DemoConfig, world: World,
                    progress: Callable[[int], None] | None = None) -> list[Conversation]:
    seed, mix, proc_fraction, per_toolset, real_fraction = (cfg.seed, cfg.mix, cfg.proc_fraction, cfg.per_toolset,
                                                            cfg.real_fraction)
    labels = _quota(n, _split_mix(split, mix, cfg.real_dev if split == "dev" else {}))
    Random(f"tinytool-demo:{seed}:{split}:order").shuffle(labels)
    catalog = CatalogTools(world, split, cfg)
    generated_tools = GeneratedTools(proctools.tool_pool(seed, cfg.variants, cfg.held_out_share, cfg.alt_p), split,
                                     cfg) if proc_fraction > 0 else None
    out: list[Conversation] = []
    anchor: tuple[int, ToolSource[Any], list[Any]] | None = None
    kinds: list[str] = []
    used: set[str] = set()  # the tools the current tool set's tasks called
    sibling_weights = _sibling_weights(mix)
    sets, multi = 2, 1  # tool sets drawn so far, and those offering several tools (a prior of one in two)
    for i, category in enumerate(labels):
        rng = Random(f"tinytool-demo:{seed}:{split}:{i}")
        real = category.startswith("real_")  # a realistic dev category: the task of its base category, rewritten
        label, category = category, category.removeprefix("real_")
        sibling_task = per_toolset > 1 and i % per_toolset and anchor is not None
        if sibling_task:
            first, source, offered = anchor
            category, messages, extra = _sibling(rng, source, offered, kinds[i % per_toolset - 1], used, split, i,
                                                 seed)
            extra = {"toolset": f"demo-s{seed}-{split}-{first:06d}", **extra}
            used |= set(_tools_used(messages))
        else:
            source = catalog
            if (generated_tools is not None and category in generated_tools.categories
                    and Random(f"tinytool-demo:{seed}:{split}:{i}:proc").random() < proc_fraction):
                source = generated_tools
            for _ in range(MAX_TRIES):
                try:
                    messages, offered, extra = BUILDERS[category](rng, source)
                    break
                except Retry:
                    continue
            else:  # pragma: no cover - every builder succeeds well within MAX_TRIES
                raise RuntimeError(f"could not build a {category} task ({split} #{i}, seed {seed})")
            if per_toolset > 1:
                anchor, used = (i, source, offered), set(_tools_used(messages))
                kinds = Random(f"tinytool-demo:{seed}:{split}:{i}:kinds").choices(
                    SIBLING_KINDS, _set_weights(sibling_weights, len(offered), multi / sets), k=per_toolset - 1)
                sets, multi = sets + 1, multi + (len(offered) > 1)
                extra = {"toolset": f"demo-s{seed}-{split}-{i:06d}", **extra}
        if real or (real_fraction > 0 and Random(f"tinytool-demo:{seed}:{split}:{i}:real").random() < real_fraction):
            messages = _casual(messages, Random(f"tinytool-demo:{seed}:{split}:{i}:casual"), split)
            extra = {**extra, "realistic": True}
            if real and not sibling_task:
                category = label
        meta = {"id": f"demo-s{seed}-{split}-{i:06d}", "source": SOURCE, "category": category, "split": split,
                "seed": seed, "world_seed": seed, "tools": "generated" if source is generated_tools else "catalog",
                "tools_used": _tools_used(messages),
                "sub_questions": [], "sub_answers": [], **extra}
        out.append(Conversation(messages=messages, tools=offered, meta=meta))
        if progress is not None:
            progress(1)
    return out


def generate_demo(n: int | None = None, seed: int | None = None, *, config: DemoConfig | None = None,
                  progress: Callable[[int], None] | None = None,
                  **settings: Any) -> tuple[list[Conversation], list[Conversation]]:
    """``n`` demo tasks split into ``(train, dev)``, made as ``config`` says (default: `DemoConfig`'s defaults)
    with ``n``, ``seed`` and ``settings`` (any other of its fields: ``dev_fraction=0.2``, ``twin_p=0.5``) in place
    of its values; dev gets ``round(n * dev_fraction)`` of the tasks.

    Train never uses a held-out tool, not even as a distractor; dev favours them. ``mix`` maps
    category -> weight (default `DEFAULT_MIX`). ``proc_fraction`` of the single-turn tasks other
    than missing_parameter use generated tools (`tinytool.data.demo.proctools`); 0 keeps to the catalog.
    ``per_toolset`` > 1 draws that many tasks per offered tool set: each task drawn as above is followed by
    ``per_toolset - 1`` more over the same tools in the same order (so the same system prompt; a call of one of
    them, several calls of one, one call each of several, a near miss or open question none answers:
    `tinytool.data.demo.tasks.sibling`), ``meta.toolset`` naming the first; the mix's categories then hold for the
    first tasks of the sets, and its shares of tasks expecting one call, several calls of one tool, one each of
    several tools, and none for all of them (a set of one tool draws the other kinds; sets of several draw one
    call each of several tools more often in their place).
    ``real_fraction`` of the tasks of every kind have their request written the way people write
    (`tinytool.data.demo.realistic`; ``meta.realistic``), and dev holds the realistic categories ``real_dev``
    in their share of it (default: `REAL_DEV` with the default mix, none with a mix of one's own).
    Deterministic in the config: equal configs, equal tasks. ``progress(k)`` is called as every ``k`` tasks are
    built. A setting out of its bounds is a `UserInputError` (a `ValueError`) naming it.
    """
    cfg = demo_config(config, n=n, seed=seed, **settings)
    world = pristine_world(cfg.seed)
    n_dev = round(cfg.n * cfg.dev_fraction)
    return (_generate_split("train", cfg.n - n_dev, cfg, world, progress),
            _generate_split("dev", n_dev, cfg, world, progress))


def demo_config(config: DemoConfig | None = None, **settings: Any) -> DemoConfig:
    """``config`` (default: the defaults) with the ``settings`` that are not None in place of its values."""
    given = {k: v for k, v in settings.items() if v is not None}
    if config is None:
        return DemoConfig(**given)
    import dataclasses

    return dataclasses.replace(config, **given)


#: the files of a demo split directory
SPLIT_FILES = ("train.jsonl", "dev.jsonl")


def write_split(out_dir: str | os.PathLike, train: Iterable[Any], dev: Iterable[Any],
                config: DemoConfig | None = None) -> dict[str, int]:
    """Write ``train.jsonl`` and ``dev.jsonl`` under ``out_dir`` as a whole, and with ``config`` the `MANIFEST`
    that records it (`tinytool.data.demo.config.manifest`): the directory is replaced only once every file is
    complete, so a new train split never sits beside an old dev split, and an error or Ctrl-C leaves ``out_dir``
    as it was. Since the directory is replaced, one that holds other files is refused. Returns the counts."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UserInputError(f"{out}: is a file, expected a directory for {' and '.join(SPLIT_FILES)}",
                             fix="choose a directory path")
    ours = (*SPLIT_FILES, MANIFEST)
    others = sorted(p.name for p in out.iterdir() if p.name not in ours) if out.is_dir() else []
    if others:
        shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        raise UserInputError(f"{out}: holds files other than {', '.join(ours)} ({shown}); "
                             f"the split replaces the whole directory", fix="choose a new or empty directory")
    with atomic_dir(out) as tmp:
        counts = {"train": write_jsonl(tmp / "train.jsonl", train), "dev": write_jsonl(tmp / "dev.jsonl", dev)}
        if config is not None:
            write_json(tmp / MANIFEST, manifest(config, counts))
        return counts


def write_demo(n: int | None, seed: int | None, out_dir: str | os.PathLike, *,
               config: DemoConfig | None = None, **settings: Any) -> dict[str, int]:
    """Generate ``train.jsonl`` and ``dev.jsonl`` as `generate_demo` does and write them under ``out_dir`` as a
    whole, with the `MANIFEST` that records the config (see `write_split`); returns the counts."""
    cfg = demo_config(config, n=n, seed=seed, **settings)
    train, dev = generate_demo(config=cfg)
    return write_split(out_dir, train, dev, cfg)


__all__ = ["CATEGORIES", "DEFAULT_MIX", "MANIFEST", "REAL_DEV", "SPLIT_FILES", "DemoConfig", "demo_config",
           "generate_demo", "parse_mix", "write_demo", "write_split"]
