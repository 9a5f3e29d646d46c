"""Procedural demo tasks over the bundled catalog: the default training data when nothing can be fetched.

`generate_demo(n, seed)` returns ``(train, dev)`` lists of `Conversation`s in the BFCL single-turn
categories and as multi-step trajectories:

- ``simple``: one tool offered, one call.
- ``multiple``: 2-5 tools offered, near-miss siblings among them; one call.
- ``parallel``: one tool, 2-4 calls, phrased compactly ("in Paris, Rome and Oslo", "... respectively",
  "then repeat for ...") or as joined requests.
- ``parallel_multiple``: two to four calls to two to four different tools in one turn, often of one domain.
- ``irrelevance``: the request's tool is *not* offered (similar-looking ones are), or no tool is
  needed (small talk, or an open question over wide value pools: knowledge, advice, writing); the answer
  is text and no call.
- ``missing_parameter``: a required value is absent from the request; the answer asks for it.
- ``multi_step``: a trajectory where a later call needs an earlier call's output
  (see `tinytool.data.demo.chains`), with ASTRA's sub-questions and sub-answers in ``meta``.

A share ``proc_fraction`` of the simple, multiple, parallel, parallel_multiple and irrelevance
tasks is built over procedurally generated tools instead (`tinytool.data.demo.proctools`: hundreds of
schemas, 2-8 offered in ``multiple``), so a model has to read the schema rather than recall one of
the catalog's tools; their calls are checked against the schema, not executed. The catalog's
executable tools keep the missing-parameter and multi-step tasks.

Requests are drawn from several phrasings per tool and argument values are sampled by type from the
seeded `World`, so the same tool appears in many surface forms. Every ground-truth call is executed
on a fresh copy of the world while generating and resampled if it fails, so calls are valid by
construction. Held-out tools (`HELD_OUT`, ≥ 10 % of the catalog) and some phrasings appear only in
dev, and so do held-out generated domains and tools. Equal ``(n, seed)`` give byte-identical files.
``meta`` of every record: ``id``, ``category``, ``split``, ``seed``, ``world_seed``, ``source``,
``tools`` (``"catalog"`` or ``"generated"``), ``tools_used``, ``sub_questions`` and ``sub_answers``
(empty outside ``multi_step``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from random import Random
from typing import Any

from tinytool.data.demo import proctools
from tinytool.data.demo.catalog import CATALOG, HELD_OUT, TRAIN_TOOLS, Template, ToolSpec, World, execute
from tinytool.data.demo.catalog.world import pristine_world
from tinytool.data.demo.chains import CHAINS, ChainError, run_chain
from tinytool.data.demo.text import (
    CHITCHAT,
    CHITCHAT_P,
    OPEN_P,
    SAME_DOMAIN_P,
    answer_turn,
    ask_for,
    call_plan,
    calls_turn,
    ensure_end,
    join_requests,
    join_values,
    offer,
    open_question,
    plain_join,
    refusal,
    repeat_tail,
    user_turn,
)
from tinytool.errors import UserInputError
from tinytool.io import atomic_dir, write_jsonl
from tinytool.schema import Conversation, Message, Tool

CATEGORIES = ("simple", "multiple", "parallel", "parallel_multiple", "irrelevance", "missing_parameter", "multi_step")
#: the quality benchmark's mix: parallel and parallel_multiple requests make up over a third
DEFAULT_MIX: dict[str, float] = {
    "simple": 0.15, "multiple": 0.18, "parallel": 0.20, "parallel_multiple": 0.17,
    "irrelevance": 0.16, "missing_parameter": 0.06, "multi_step": 0.08,
}
#: default share of the single-turn tasks built over generated tools (a 2,000-task set then offers
#: well over 500 distinct tools)
PROC_FRACTION = 0.5
SOURCE = "tinytool-demo"
OPTIONAL_P = 0.45  # chance an optional parameter the phrasing can express is given
FOCUS_P = 0.5  # in dev, chance a task is built around a held-out tool
MAX_TRIES = 40


class _Retry(Exception):
    """This sample did not work out (an invalid call, no usable phrasing); draw another."""


@dataclass(slots=True)
class _Ctx:
    rng: Random
    world: World  # the pristine world of the seed: read it, never mutate it
    split: str
    tools: tuple[str, ...]  # tools this split may use
    focus: tuple[str, ...]  # tools to favour as targets (held-out ones in dev)


# ---------------------------------------------------------------------------------------------
# Sampling calls and their phrasings
# ---------------------------------------------------------------------------------------------


def _sample_args(spec: ToolSpec, tpl: Template, ctx: _Ctx) -> dict[str, Any]:
    """Required arguments plus optional ones the phrasing can express (each with `OPTIONAL_P`)."""
    r, w = ctx.rng, ctx.world
    args = {p.name: p.sample(r, w) for p in spec.params
            if p.required or (p.name in tpl.slots and r.random() < OPTIONAL_P)}
    if spec.fix is not None:
        spec.fix(args, r, w)
    return args


def _say_all(spec: ToolSpec, args: Mapping[str, Any], r: Random, skip: str | None = None) -> dict[str, str]:
    return {k: spec.param_map[k].say(v, r) for k, v in args.items() if k != skip}


def _phrase(spec: ToolSpec, ctx: _Ctx) -> Template:
    return ctx.rng.choice(spec.phrasings(ctx.split))


def _request(spec: ToolSpec, ctx: _Ctx, tpl: Template | None = None) -> tuple[dict[str, Any], str, Template, dict[str, str]]:
    """One call and the request that asks for it: ``(arguments, text, phrasing, slot texts)``.
    The arguments are exactly what the text says: optional ones a phrasing drops are dropped."""
    tpl = tpl or _phrase(spec, ctx)
    args = _sample_args(spec, tpl, ctx)
    texts = _say_all(spec, {k: v for k, v in args.items() if k in tpl.slots}, ctx.rng)
    said = tpl.mentioned(texts.keys())
    args = {k: v for k, v in args.items() if k in said}
    texts = {k: v for k, v in texts.items() if k in said}
    if any(p not in args for p in spec.required):
        raise _Retry(f"{spec.name}: phrasing {tpl.text!r} left out a required argument")
    return args, tpl.render(texts), tpl, texts


def _valid(ctx: _Ctx, calls: list[tuple[str, dict[str, Any]]]) -> bool:
    """Do the calls all succeed, in order, on a fresh copy of the world?"""
    w = ctx.world.copy()
    for name, args in calls:
        out = execute(w, name, args)
        if isinstance(out, dict) and "error" in out:
            return False
    return True


def _need_valid(ctx: _Ctx, calls: list[tuple[str, dict[str, Any]]]) -> None:
    if not _valid(ctx, calls):
        raise _Retry("a ground-truth call fails on the world")


def _pick_target(ctx: _Ctx, ok: Callable[[ToolSpec], bool] | None = None) -> ToolSpec:
    r = ctx.rng
    pool = ctx.focus if ctx.focus and r.random() < FOCUS_P else ctx.tools
    if ok is not None:
        pool = [n for n in pool if ok(CATALOG[n])] or [n for n in ctx.tools if ok(CATALOG[n])]
    return CATALOG[r.choice(pool)]


def _distractors(ctx: _Ctx, chosen: list[ToolSpec], k: int, exclude: frozenset[str] = frozenset()) -> list[ToolSpec]:
    """``k`` more tools: near-miss siblings first, then same-domain tools, then any tool."""
    r = ctx.rng
    taken = {s.name for s in chosen} | set(exclude)
    allowed = set(ctx.tools)
    siblings = [n for s in chosen for n in s.siblings if n in allowed]
    domains = {s.domain for s in chosen}
    same_domain = [n for n in ctx.tools if CATALOG[n].domain in domains]
    out: list[ToolSpec] = []
    for _ in range(k):
        for pool, p in ((siblings, 0.6), (same_domain, 0.6), (list(ctx.tools), 1.0)):
            free = [n for n in pool if n not in taken]
            if free and r.random() < p:
                name = r.choice(free)
                taken.add(name)
                out.append(CATALOG[name])
                break
    return out


_Task = tuple[list[Message], list[Tool], dict[str, Any]]


# ---------------------------------------------------------------------------------------------
# Single-turn categories
# ---------------------------------------------------------------------------------------------


def _simple(ctx: _Ctx) -> _Task:
    spec = _pick_target(ctx)
    args, text, _, _ = _request(spec, ctx)
    _need_valid(ctx, [(spec.name, args)])
    return [user_turn(text), calls_turn([(spec.name, args)])], [spec.tool], {}


def _multiple(ctx: _Ctx) -> _Task:
    spec = _pick_target(ctx)
    args, text, _, _ = _request(spec, ctx)
    _need_valid(ctx, [(spec.name, args)])
    others = _distractors(ctx, [spec], ctx.rng.randint(1, 4))
    if not others:
        raise _Retry("no distractors")
    return [user_turn(text), calls_turn([(spec.name, args)])], offer(ctx.rng, [spec, *others]), {}


def _fresh_value(spec: ToolSpec, tpl: Template, ctx: _Ctx, name: str, taken: list[Any]) -> Any:
    for _ in range(12):
        v = _sample_args(spec, tpl, ctx).get(name)
        if v is not None and v not in taken:
            return v
    raise _Retry(f"could not find another value for {spec.name}.{name}")


def _words_between(tpl: Template, a: str, b: str) -> bool:
    """Are slots ``a`` and ``b`` separated by real words (so "A and B ... C and D respectively" reads)?"""
    flat = tpl.text.replace("[", "").replace("]", "")
    i, j = flat.find("{" + a + "}"), flat.find("{" + b + "}")
    if i < 0 or j < 0:
        return False
    lo, hi = (i, j) if i < j else (j, i)
    between = flat[lo:hi].split("}", 1)[1]
    return any(ch.isalpha() for ch in between) and between.strip().lower() not in ("and", "or", "x")


def _after_article(tpl: Template, slot: str) -> bool:
    """Does the slot follow "the"/"a" (where "both X and Y" would not read)?"""
    flat = tpl.text.replace("[", "").replace("]", "")
    before = flat[: flat.find("{" + slot + "}")].rstrip().lower()
    return before.endswith((" the", " a", " an", " my"))


def _same_tool_group(spec: ToolSpec, k: int, ctx: _Ctx) -> tuple[list[dict[str, Any]], list[str]]:
    """``k`` calls of one tool and the request for them: one compact request when the phrasing
    allows it (a list in one slot, "... respectively", "then repeat for ..."), else ``k`` requests."""
    r = ctx.rng
    args, text, tpl, texts = _request(spec, ctx)
    axes = [a for a in spec.parallel_axes if a in texts and not tpl.crowded(a)]
    mode = r.random()
    if axes and mode < 0.62:
        axis = r.choice(axes)
        values = [args[axis]]
        while len(values) < k:
            values.append(_fresh_value(spec, tpl, ctx, axis, values))
        calls = [dict(args, **{axis: v}) for v in values]
        _need_valid(ctx, [(spec.name, c) for c in calls])
        said = [spec.param_map[axis].say(v, r) for v in values]
        if r.random() < 0.65:
            listed = plain_join(said, r) if _after_article(tpl, axis) else join_values(said, r)
            return calls, [tpl.render(dict(texts, **{axis: listed}))]
        return calls, [f"{ensure_end(text)} {repeat_tail(said[1:], r, ctx.split)}"]
    pairs = [(a, b) for a in axes for b in axes if a < b and _words_between(tpl, a, b)]
    if pairs and mode < 0.8 and k <= 3:
        a, b = r.choice(pairs)
        combos = [(args[a], args[b])]
        for _ in range(20 * k):
            if len(combos) == k:
                break
            extra = _sample_args(spec, tpl, ctx)
            pair = (extra.get(a), extra.get(b))
            if None not in pair and pair[0] not in [c[0] for c in combos] and pair[1] not in [c[1] for c in combos]:
                combos.append(pair)
        if len(combos) < k:
            raise _Retry("not enough distinct value pairs")
        calls = [dict(args, **{a: x, b: y}) for x, y in combos]
        _need_valid(ctx, [(spec.name, c) for c in calls])
        ta = plain_join([spec.param_map[a].say(x, r) for x, _ in combos], r)
        tb = plain_join([spec.param_map[b].say(y, r) for _, y in combos], r)
        flat = tpl.text.replace("[", "").replace("]", "")
        if flat.find("{" + a + "}") > flat.find("{" + b + "}"):
            ta += r.choice((" respectively", ", respectively"))
        else:
            tb += r.choice((" respectively", ", respectively"))
        return calls, [tpl.render(dict(texts, **{a: ta, b: tb}))]
    calls, parts = [args], [text]
    for _ in range(10 * k):
        if len(calls) == k:
            break
        more, more_text, _, _ = _request(spec, ctx)
        if more not in calls:
            calls.append(more)
            parts.append(more_text)
    if len(calls) < k:
        raise _Retry("not enough distinct calls")
    _need_valid(ctx, [(spec.name, c) for c in calls])
    return calls, parts


def _parallel(ctx: _Ctx) -> _Task:
    spec = _pick_target(ctx, lambda s: bool(s.params))
    k = ctx.rng.choices((2, 3, 4), (0.55, 0.3, 0.15))[0]
    calls, parts = _same_tool_group(spec, k, ctx)
    text = parts[0] if len(parts) == 1 else join_requests(parts, ctx.rng, ctx.split)
    return [user_turn(text), calls_turn([(spec.name, c) for c in calls])], [spec.tool], {}


def _parallel_multiple(ctx: _Ctx) -> _Task:
    r = ctx.rng
    first = _pick_target(ctx)
    counts = call_plan(r)
    specs = [first]
    same_domain = [n for n in ctx.tools if CATALOG[n].domain == first.domain]
    for _ in range(40):
        if len(specs) == len(counts):
            break
        s = CATALOG[r.choice(same_domain if r.random() < SAME_DOMAIN_P else ctx.tools)]
        if s.name not in {x.name for x in specs}:
            specs.append(s)
    if len(specs) < len(counts):
        raise _Retry("not enough different tools")
    all_calls: list[tuple[str, dict[str, Any]]] = []
    parts: list[str] = []
    for s, c in zip(specs, counts):
        if c == 1 or not s.params:
            args, text, _, _ = _request(s, ctx)
            all_calls.append((s.name, args))
            parts.append(text)
        else:
            group, texts = _same_tool_group(s, c, ctx)
            all_calls.extend((s.name, a) for a in group)
            parts.extend(texts)
    _need_valid(ctx, all_calls)
    offered = specs + _distractors(ctx, specs, r.choice((0, 1, 1, 2, 3)))
    return [user_turn(join_requests(parts, r, ctx.split)), calls_turn(all_calls)], offer(ctx.rng, offered), {}


def _irrelevance(ctx: _Ctx) -> _Task:
    r = ctx.rng
    u = r.random()
    if u < OPEN_P:  # small talk, or an open question no tool answers
        offered = [CATALOG[n] for n in r.sample(ctx.tools, r.randint(1, 3))]
        question, reply = r.choice(CHITCHAT) if u < CHITCHAT_P else open_question(r, [s.gist for s in offered])
        return [user_turn(question), answer_turn(reply)], offer(ctx.rng, offered), {"requested_tool": None}
    spec = _pick_target(ctx)
    _, text, _, _ = _request(spec, ctx)
    banned = frozenset({spec.name, *spec.substitutes})
    # half the negatives offer a single tool, as simple tasks do: one offered tool is no sign that a call is due
    offered = _distractors(ctx, [spec], r.choices((1, 2, 3, 4), (4, 2, 1, 1))[0], exclude=banned)
    offered = [s for s in offered if s.name not in banned]
    if not offered:
        raise _Retry("nothing to offer")
    reply = refusal(spec.gist, [s.gist for s in offered[:2]], r)
    return [user_turn(text), answer_turn(reply)], offer(ctx.rng, offered), {"requested_tool": spec.name}


@cache
def _droppable(name: str, split: str) -> tuple[tuple[Template, str], ...]:
    """(phrasing, required parameter) pairs where the phrasing reads naturally without the value."""
    spec = CATALOG[name]
    return tuple((t, p) for t in spec.phrasings(split) for p in spec.required if p in t.slots and p not in t.bare)


def _missing_parameter(ctx: _Ctx) -> _Task:
    r = ctx.rng
    spec = _pick_target(ctx, lambda s: bool(_droppable(s.name, ctx.split)))
    tpl, missing = r.choice(_droppable(spec.name, ctx.split))
    args = _sample_args(spec, tpl, ctx)
    texts = _say_all(spec, {k: v for k, v in args.items() if k in tpl.slots}, r, skip=missing)
    if any(p not in tpl.mentioned(texts.keys()) for p in spec.required if p != missing):
        raise _Retry("phrasing dropped another required argument")
    reply = ask_for(spec.param_map[missing].label, spec.gist, r)
    offered = [spec, *_distractors(ctx, [spec], r.choice((0, 0, 1, 2)))]
    return [user_turn(tpl.render(texts)), answer_turn(reply)], offer(ctx.rng, offered), {"missing_parameter": missing}


def _multi_step(ctx: _Ctx) -> _Task:
    r = ctx.rng
    allowed = set(ctx.tools)
    chains = [c for c in CHAINS if set(c.tools) <= allowed]
    focus = [c for c in chains if set(c.tools) & set(ctx.focus)]
    chain = r.choice(focus if focus and r.random() < FOCUS_P else chains)
    try:
        run = run_chain(chain, r, ctx.world.copy(), ctx.split)
    except ChainError as e:
        raise _Retry(str(e)) from None
    specs = [CATALOG[n] for n in chain.tools]
    offered = specs + _distractors(ctx, specs, r.randint(1, 3))
    meta = {"chain": chain.name, "sub_questions": run.sub_questions, "sub_answers": run.sub_answers,
            "dependencies": run.dependencies}
    return run.messages, offer(ctx.rng, offered), meta


BUILDERS: dict[str, Callable[[_Ctx], _Task]] = {
    "simple": _simple, "multiple": _multiple, "parallel": _parallel, "parallel_multiple": _parallel_multiple,
    "irrelevance": _irrelevance, "missing_parameter": _missing_parameter, "multi_step": _multi_step,
}


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


def _generate_split(split: str, n: int, seed: int, world: World, mix: Mapping[str, float], proc_fraction: float,
                    progress: Callable[[int], None] | None = None) -> list[Conversation]:
    labels = _quota(n, mix)
    Random(f"tinytool-demo:{seed}:{split}:order").shuffle(labels)
    tools = tuple(TRAIN_TOOLS) if split == "train" else tuple(CATALOG)
    focus = tuple(sorted(HELD_OUT)) if split == "dev" else ()
    pool = proctools.tool_pool(seed) if proc_fraction > 0 else None
    out = []
    for i, category in enumerate(labels):
        rng = Random(f"tinytool-demo:{seed}:{split}:{i}")
        generated = (pool is not None and category in proctools.BUILDERS
                     and Random(f"tinytool-demo:{seed}:{split}:{i}:proc").random() < proc_fraction)
        build: Callable[[], _Task]
        if generated:
            build = partial(proctools.BUILDERS[category], proctools.Ctx(rng, pool, split))
        else:
            build = partial(BUILDERS[category], _Ctx(rng, world, split, tools, focus))
        for _ in range(MAX_TRIES):
            try:
                messages, offered, extra = build()
                break
            except (_Retry, proctools.Retry):
                continue
        else:  # pragma: no cover - every builder succeeds well within MAX_TRIES
            raise RuntimeError(f"could not build a {category} task ({split} #{i}, seed {seed})")
        meta = {"id": f"demo-s{seed}-{split}-{i:06d}", "source": SOURCE, "category": category, "split": split,
                "seed": seed, "world_seed": seed, "tools": "generated" if generated else "catalog",
                "tools_used": _tools_used(messages),
                "sub_questions": [], "sub_answers": [], **extra}
        out.append(Conversation(messages=messages, tools=offered, meta=meta))
        if progress is not None:
            progress(1)
    return out


def parse_mix(text: str) -> dict[str, float]:
    """``"simple=0.2,parallel=0.2,irrelevance=0.25"`` -> the weights, normalised to sum to 1.
    Categories left out get no tasks. A malformed part, an unknown category, a repeated one, a
    negative weight or an all-zero mix is refused, naming the part."""
    fix = f"write CATEGORY=WEIGHT pairs separated by commas, e.g. simple=0.2,parallel=0.3; categories: {', '.join(CATEGORIES)}"
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, eq, value = (x.strip() for x in part.partition("="))
        if not eq or not name or not value:
            raise UserInputError(f"--mix: {part!r} is not CATEGORY=WEIGHT", fix=fix)
        if name not in CATEGORIES:
            raise UserInputError(f"--mix: unknown category {name!r} in {part!r}", fix=fix)
        if name in out:
            raise UserInputError(f"--mix: {name!r} is given twice", fix=fix)
        try:
            weight = float(value)
        except ValueError:
            raise UserInputError(f"--mix: weight {value!r} of {name!r} is not a number", fix=fix) from None
        if not weight >= 0 or weight == float("inf"):
            raise UserInputError(f"--mix: weight {value!r} of {name!r} must be a finite number >= 0", fix=fix)
        out[name] = weight
    total = sum(out.values())
    if total <= 0:
        raise UserInputError(f"--mix: {text!r} gives no category a positive weight", fix=fix)
    return {k: v / total for k, v in out.items() if v > 0}


def generate_demo(n: int, seed: int = 0, *, dev_fraction: float = 0.1, mix: Mapping[str, float] | None = None,
                  proc_fraction: float = PROC_FRACTION,
                  progress: Callable[[int], None] | None = None) -> tuple[list[Conversation], list[Conversation]]:
    """``n`` demo tasks split into ``(train, dev)``; dev gets ``round(n * dev_fraction)`` of them.

    Train never uses a held-out tool, not even as a distractor; dev favours them. ``mix`` maps
    category -> weight (default `DEFAULT_MIX`). ``proc_fraction`` of the single-turn tasks other
    than missing_parameter use generated tools (`tinytool.data.demo.proctools`); 0 keeps to the catalog.
    Deterministic in ``(n, seed, dev_fraction, mix, proc_fraction)``. ``progress(k)`` is called as
    every ``k`` tasks are built.
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    if not 0.0 <= dev_fraction <= 1.0:
        raise ValueError("dev_fraction must be in [0, 1]")
    if not 0.0 <= proc_fraction <= 1.0:
        raise ValueError("proc_fraction must be in [0, 1]")
    mix = dict(mix or DEFAULT_MIX)
    unknown = set(mix) - set(CATEGORIES)
    if unknown:
        raise ValueError(f"unknown categories {sorted(unknown)}; known: {', '.join(CATEGORIES)}")
    world = pristine_world(seed)
    n_dev = round(n * dev_fraction)
    return (_generate_split("train", n - n_dev, seed, world, mix, proc_fraction, progress),
            _generate_split("dev", n_dev, seed, world, mix, proc_fraction, progress))


#: the files of a demo split directory
SPLIT_FILES = ("train.jsonl", "dev.jsonl")


def write_split(out_dir: str | os.PathLike, train: Iterable[Any], dev: Iterable[Any]) -> dict[str, int]:
    """Write ``train.jsonl`` and ``dev.jsonl`` under ``out_dir`` as a whole: the directory is
    replaced only once both files are complete, so a new train split never sits beside an old dev
    split, and an error or Ctrl-C leaves ``out_dir`` as it was. Since the directory is replaced,
    one that holds other files is refused. Returns the counts."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UserInputError(f"{out}: is a file, expected a directory for {' and '.join(SPLIT_FILES)}",
                             fix="choose a directory path")
    others = sorted(p.name for p in out.iterdir() if p.name not in SPLIT_FILES) if out.is_dir() else []
    if others:
        shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        raise UserInputError(f"{out}: holds files other than {' and '.join(SPLIT_FILES)} ({shown}); "
                             f"the split replaces the whole directory", fix="choose a new or empty directory")
    with atomic_dir(out) as tmp:
        return {"train": write_jsonl(tmp / "train.jsonl", train), "dev": write_jsonl(tmp / "dev.jsonl", dev)}


def write_demo(n: int, seed: int, out_dir: str | os.PathLike, *, dev_fraction: float = 0.1,
               mix: Mapping[str, float] | None = None, proc_fraction: float = PROC_FRACTION) -> dict[str, int]:
    """Generate ``train.jsonl`` and ``dev.jsonl`` and write them under ``out_dir`` as a whole
    (see `write_split`); returns the counts."""
    train, dev = generate_demo(n, seed, dev_fraction=dev_fraction, mix=mix, proc_fraction=proc_fraction)
    return write_split(out_dir, train, dev)


__all__ = ["CATEGORIES", "DEFAULT_MIX", "PROC_FRACTION", "SPLIT_FILES", "generate_demo", "parse_mix", "write_demo",
           "write_split"]
