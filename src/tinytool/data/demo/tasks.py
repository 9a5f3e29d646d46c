"""The demo task builders, one per category, over either tool source (`tinytool.data.demo.sources`).

A builder takes the task's random generator and a `ToolSource` and returns ``(messages, offered tools,
extra meta)``, or raises `Retry` to be drawn again. The shares that shape a task are the generator's settings,
which the source carries (``src.cfg``, a `DemoConfig`). simple, multiple, parallel, parallel_multiple and
irrelevance work over both sources; missing_parameter and multi_step need the catalog's executable
tools (`CatalogTools`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from functools import cache
from random import Random
from typing import Any

from tinytool.data.demo.catalog import CATALOG, Template
from tinytool.data.demo.chains import CHAINS, ChainError, run_chain
from tinytool.data.demo.proctools import IMPLIED, render
from tinytool.data.demo.sources import CatalogTools, Request, Retry, SourceTool, ToolSource
from tinytool.data.demo.text import (
    CHITCHAT,
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
    topic_question,
    user_turn,
)
from tinytool.schema import Message, Tool

Task = tuple[list[Message], list[Tool], dict[str, Any]]
#: ``k`` calls of one tool (their arguments) and the request texts that ask for them
Group = tuple[list[dict[str, Any]], list[str]]


# ---------------------------------------------------------------------------------------------
# Several calls of one tool in one request
# ---------------------------------------------------------------------------------------------


def _plain(tpl: Template) -> str:
    return tpl.text.replace("[", "").replace("]", "")


def _at(tpl: Template, slot: str) -> int:
    return _plain(tpl).find("{" + slot + "}")


def _apart(tpl: Template, a: str, b: str) -> bool:
    """Are slots ``a`` and ``b`` separated by real words (so "A and B ... C and D respectively" reads)?"""
    i, j = _at(tpl, a), _at(tpl, b)
    if i < 0 or j < 0:
        return False
    lo, hi = (i, j) if i < j else (j, i)
    between = _plain(tpl)[lo:hi].split("}", 1)[1]
    return any(ch.isalpha() for ch in between) and between.strip().lower() not in ("and", "or", "x")


def _after_article(tpl: Template, slot: str) -> bool:
    """Does the slot follow "the"/"a" (where "both X and Y" would not read)?"""
    before = _plain(tpl)[: _at(tpl, slot)].rstrip().lower()
    return before.endswith((" the", " a", " an", " my"))


def _one_varies(r: Random, src: ToolSource[Any], t: SourceTool, tpl: Template, args: Mapping[str, Any], axis: str,
                k: int) -> list[dict[str, Any]]:
    """``k`` calls of ``t``: ``args`` with slot ``axis`` taking ``k`` different values (``args``'s first), checked
    together."""
    values = [args[axis]]
    while len(values) < k:
        values.append(src.fresh(r, t, tpl, axis, values))
    calls = [dict(args, **{axis: v}) for v in values]
    src.check([(t.name, c) for c in calls])
    return calls


def _two_vary(r: Random, src: ToolSource[Any], t: SourceTool, tpl: Template, args: Mapping[str, Any], a: str, b: str,
              k: int) -> list[dict[str, Any]]:
    """``k`` calls of ``t``: ``args`` with slots ``a`` and ``b`` taking ``k`` distinct value pairs in step
    (``args``'s first), checked together."""
    calls = [dict(args, **{a: x, b: y}) for x, y in src.value_pairs(r, t, tpl, args, a, b, k)]
    src.check([(t.name, c) for c in calls])
    return calls


def _listed(r: Random, src: ToolSource[Any], t: SourceTool, k: int, first: Request, axes: list[str]) -> Group | None:
    """One slot takes ``k`` values ("in Paris, Rome and Oslo"), or the request ends "then repeat for ..."."""
    if not axes:
        return None
    args, text, tpl, texts = first
    axis = r.choice(axes)
    calls = _one_varies(r, src, t, tpl, args, axis, k)
    said = [t.param_map[axis].say(c[axis], r) for c in calls]
    if r.random() < src.list_p:
        listed = plain_join(said, r) if _after_article(tpl, axis) else join_values(said, r)
        return calls, [render(tpl, dict(texts, **{axis: listed}))]
    return calls, [f"{ensure_end(text)} {repeat_tail(said[1:], r, src.split)}"]


def _respectively(r: Random, src: ToolSource[Any], t: SourceTool, k: int, first: Request,
                  axes: list[str]) -> Group | None:
    """Two slots take ``k`` values each, in step: "... from A and B to C and D respectively"."""
    args, _, tpl, texts = first

    def paired(a: str, b: str) -> bool:
        return (_at(tpl, a) < _at(tpl, b) if src.pairs_in_text_order else a < b) and _apart(tpl, a, b)

    pairs = [(a, b) for a in axes for b in axes if paired(a, b)]
    if not pairs or k > 3:
        return None
    a, b = r.choice(pairs)
    calls = _two_vary(r, src, t, tpl, args, a, b, k)
    ta = plain_join([t.param_map[a].say(c[a], r) for c in calls], r)
    tb = plain_join([t.param_map[b].say(c[b], r) for c in calls], r)
    tail = r.choice((" respectively", ", respectively"))
    if _at(tpl, a) > _at(tpl, b):
        ta += tail
    else:
        tb += tail
    return calls, [render(tpl, dict(texts, **{a: ta, b: tb}))]


#: the words a slot's value follows where one clause per call can carry it ("in Paris for 2019")
_CLAUSE_WORDS = ("in", "for", "from", "to", "on", "at", "of", "with", "by", "about", "near", "during", "under",
                 "over", "into", "between", "after", "before", "since", "until", "via", "within")
_CLAUSE_JOINS = (", and {}", " and {}", ", and also {}", "; and {}", ", then {}")


def _clause_word(tpl: Template, slot: str) -> str | None:
    """The preposition right before ``slot`` in the phrasing ("in" of "in {city}"; lower-cased where the phrasing
    opens with it, since a later clause carries it mid-sentence), or None."""
    m = re.search(r"(?:^|\s)(" + "|".join(_CLAUSE_WORDS) + r")\s+\{" + re.escape(slot) + r"\}", _plain(tpl),
                  re.IGNORECASE)
    return m.group(1).lower() if m else None


def _clauses(r: Random, src: ToolSource[Any], t: SourceTool, k: int, first: Request,
             axes: list[str]) -> Group | None:
    """One clause per call that carries that call's own values: "cases in San Francisco in 2019, and in Texas in
    2018" (BFCL's parallel requests distribute their values this way; a model that saw only listed values gives the
    second call the first one's). Two prepositional slots vary in step where the phrasing has them apart, else one;
    None where no varying slot follows a preposition."""
    args, _, tpl, texts = first
    words = {a: w for a in axes if (w := _clause_word(tpl, a))}
    if not words:
        return None
    pairs = [(a, b) for a in words for b in words if _at(tpl, a) < _at(tpl, b) and _apart(tpl, a, b)]
    if pairs and k <= 3 and r.random() < 0.7:
        slots = r.choice(pairs)
        calls = _two_vary(r, src, t, tpl, args, *slots, k)
    else:
        slots = (r.choice(sorted(words)),)
        calls = _one_varies(r, src, t, tpl, args, slots[0], k)
    said = [{s: t.param_map[s].say(c[s], r) for s in slots} for c in calls]
    head = tpl.render(dict(texts, **said[0])).rstrip()
    end = head[-1] if head[-1:] in ".?!" else "."
    head = head.rstrip(".?!")
    clauses = [" ".join(f"{words[s]} {one[s]}" for s in slots) for one in said[1:]]
    join = r.choice(_CLAUSE_JOINS if len(clauses) == 1 else _CLAUSE_JOINS[:2])
    text = head + "".join(f", {c}" for c in clauses[:-1]) + join.format(clauses[-1]) + end
    return calls, [f"{text} {texts[IMPLIED]}" if IMPLIED in texts else text]


_SHAPES = {"listed": _listed, "respectively": _respectively, "clauses": _clauses}


def _group(r: Random, src: ToolSource[Any], t: SourceTool, k: int) -> Group:
    """``k`` calls of one tool and the request for them: one compact request when the phrasing allows
    it (in one of the source's `ToolSource.shapes`), else ``k`` requests."""
    first = src.request(r, t)
    args, text, tpl, texts = first
    axes = [a for a in t.parallel_axes if a in texts and not tpl.crowded(a)]
    if src.cfg.clauses_p and r.random() < src.cfg.clauses_p:  # drawn only when on: the default data unchanged
        made = _clauses(r, src, t, k, first, axes)
        if made is not None:
            return made
    mode = r.random()
    for shape, below in src.shapes:
        made = _SHAPES[shape](r, src, t, k, first, axes) if mode < below else None
        if made is not None:
            return made
    calls, parts = [args], [text]  # separate requests, joined: "..., and also ...", numbered lists
    for _ in range(10 * k):
        if len(calls) == k:
            break
        more, more_text, _, _ = src.request(r, t)
        if more not in calls:
            calls.append(more)
            parts.append(more_text)
    if len(calls) < k:
        raise Retry("not enough distinct calls")
    src.check([(t.name, c) for c in calls])
    return calls, parts


# ---------------------------------------------------------------------------------------------
# Single-turn categories
# ---------------------------------------------------------------------------------------------


def n_values(args: Mapping[str, Any]) -> int:
    """How many values a call's arguments state: a list counts each item."""
    return sum(len(v) if isinstance(v, list) else 1 for v in args.values())


def takes_list(t: SourceTool) -> bool:
    """Does one call of ``t`` take several items in one parameter (a required array)?"""
    schema = t.tool.parameters
    props = schema.get("properties", {})
    return any(props.get(p, {}).get("type") == "array" for p in schema.get("required", ()))


def _one_request(r: Random, src: ToolSource[Any], t: SourceTool, least: int, full: bool = False) -> Request:
    """A request for one call of ``t`` that states ``least`` or more values, where ``t``'s phrasings and optional
    parameters give one within ``many_tries`` draws (else the last drawn); ``full``: every optional value."""
    req = src.request(r, t, imply=True, full=full)
    for _ in range(src.cfg.many_tries - 1 if least > 1 else 0):
        if n_values(req[0]) >= least:
            break
        req = src.request(r, t, imply=True, full=full)
    return req


def _one_call(r: Random, src: ToolSource[Any]) -> tuple[SourceTool, list[Message]]:
    """A target tool, and a request for one call of it with that call (``many_values_p`` of them with several
    values, from a tool of two or more parameters; ``list_p`` of them from a tool that takes a list; ``full_p`` of
    the others from a tool of ``full_params`` or more parameters, stating every value its phrasing can carry)."""
    cfg = src.cfg
    many = r.random() < cfg.many_values_p
    listed = r.random() < cfg.list_p
    full = not listed and r.random() < cfg.full_p
    if listed:
        t = src.target(r, takes_list)
    elif full:
        t = src.target(r, lambda s: len(s.params) >= cfg.full_params)
    else:
        t = src.target(r, (lambda s: len(s.params) >= 2) if many else None)
    args, text, _, _ = _one_request(r, src, t, cfg.full_params if full else 3 if many else 1, full)
    src.check([(t.name, args)])
    return t, [user_turn(text), calls_turn([(t.name, args)])]


def simple(r: Random, src: ToolSource[Any]) -> Task:
    t, messages = _one_call(r, src)
    return messages, [t.tool], {}


def multiple(r: Random, src: ToolSource[Any]) -> Task:
    t, messages = _one_call(r, src)
    others = src.distractors(r, [t], src.n_others(r))
    if not others:
        raise Retry("no distractors")
    return messages, offer(r, [t, *others]), {}


def parallel(r: Random, src: ToolSource[Any]) -> Task:
    t = src.target(r, lambda s: bool(s.params))
    k = r.choices((2, 3, 4), (0.55, 0.3, 0.15))[0]
    calls, parts = _group(r, src, t, k)
    text = parts[0] if len(parts) == 1 else join_requests(parts, r, src.split)
    return [user_turn(text), calls_turn([(t.name, c) for c in calls])], [t.tool], {}


def parallel_multiple(r: Random, src: ToolSource[Any]) -> Task:
    if src.plan_first:
        counts = call_plan(r)
        chosen = [src.target(r)]
    else:
        chosen = [src.target(r)]
        counts = call_plan(r)
    kin = src.kin(chosen[0])
    for _ in range(40):
        if len(chosen) == len(counts):
            break
        t = src.tools[r.choice(kin)] if kin and r.random() < src.cfg.same_domain_p else src.other(r)
        if src.key(t) not in {src.key(c) for c in chosen}:
            chosen.append(t)
    if len(chosen) < len(counts):
        raise Retry("not enough different tools")
    calls: list[tuple[str, dict[str, Any]]] = []
    parts: list[str] = []
    for t, n in zip(chosen, counts):
        if n == 1 or not t.params:
            args, text, _, _ = src.request(r, t)
            calls.append((t.name, args))
            parts.append(text)
        else:
            group, texts = _group(r, src, t, n)
            calls.extend((t.name, a) for a in group)
            parts.extend(texts)
    src.check(calls)
    offered = chosen + src.distractors(r, chosen, r.choice((0, 1, 1, 2, 3)))
    return [user_turn(join_requests(parts, r, src.split)), calls_turn(calls)], offer(r, offered), {}


def irrelevance(r: Random, src: ToolSource[Any]) -> Task:
    """A request no offered tool serves: below ``chitchat_p`` of one draw small talk, below ``open_p`` an open
    question, below ``topic_p`` a general question about what an offered tool does, the rest a request for a tool
    that is not offered beside near ones (``twin_p`` of them a tool with a twin, the twin offered: ``meta.twin``;
    ``meta.offers_twin`` marks every near miss whose offered tools hold a twin)."""
    cfg = src.cfg
    u = r.random()
    if u < cfg.open_p:  # small talk, or an open question no tool answers
        offered = src.some(r, r.randint(1, 3))
        question, reply = r.choice(CHITCHAT) if u < cfg.chitchat_p else open_question(r, [t.gist for t in offered])
        return [user_turn(question), answer_turn(reply)], offer(r, offered), {"requested_tool": None}
    t = src.target(r)
    if u < cfg.topic_p:  # a general question about what an offered tool does: the tool itself is on offer
        question, reply = topic_question(r, t.gist)
        offered = [t, *src.distractors(r, [t], r.choices((0, 1, 2, 3), (4, 2, 1, 1))[0])]
        return [user_turn(question), answer_turn(reply)], offer(r, offered), {"requested_tool": None,
                                                                             "asks_about": t.name}
    # half the negatives offer a single tool, as simple tasks do: one offered tool is no sign that a call is due
    k = r.choices((1, 2, 3, 4), (4, 2, 1, 1))[0]
    want_twin = r.random() < cfg.twin_p
    if want_twin and not src.twins(t):
        t = src.target(r, lambda x: bool(src.twins(x)))
    _, text, _, _ = src.request(r, t)
    extra: dict[str, Any] = {"requested_tool": t.name}
    if want_twin:  # t has twins: drawn so
        twin = src.tools[r.choice(src.twins(t))]
        offered = [twin, *src.distractors(r, [t, twin], k - 1, exclude=src.substitutes(t))]
        extra["twin"] = twin.name
    else:  # the nearest distractors, which may happen to hold a twin too
        offered = src.distractors(r, [t], k, exclude=src.substitutes(t))
    if not offered:
        raise Retry("nothing to offer")
    extra["offers_twin"] = any(o.name in src.twins(t) for o in offered)
    reply = refusal(t.gist, [o.gist for o in offered[:2]], r)
    return [user_turn(text), answer_turn(reply)], offer(r, offered), extra


# ---------------------------------------------------------------------------------------------
# Categories over the catalog's executable tools
# ---------------------------------------------------------------------------------------------


@cache
def _droppable(name: str, split: str) -> tuple[tuple[Template, str], ...]:
    """(phrasing, required parameter) pairs where the phrasing reads naturally without the value."""
    spec = CATALOG[name]
    return tuple((t, p) for t in spec.phrasings(split) for p in spec.required if p in t.slots and p not in t.bare)


def _catalog(src: ToolSource[Any]) -> CatalogTools:
    if not isinstance(src, CatalogTools):
        raise TypeError(f"this category needs the catalog's executable tools, not {type(src).__name__}")
    return src


def missing_parameter(r: Random, src: ToolSource[Any]) -> Task:
    cat = _catalog(src)
    spec = cat.target(r, lambda s: bool(_droppable(s.name, cat.split)))
    tpl, missing = r.choice(_droppable(spec.name, cat.split))
    args = cat.sample_args(r, spec, tpl)
    texts = cat.say_all(spec, {k: v for k, v in args.items() if k in tpl.slots}, r, skip=missing)
    if any(p not in tpl.mentioned(texts.keys()) for p in spec.required if p != missing):
        raise Retry("phrasing dropped another required argument")
    reply = ask_for(spec.param_map[missing].label, spec.gist, r)
    offered = [spec, *cat.distractors(r, [spec], r.choice((0, 0, 1, 2)))]
    return [user_turn(tpl.render(texts)), answer_turn(reply)], offer(r, offered), {"missing_parameter": missing}


def multi_step(r: Random, src: ToolSource[Any]) -> Task:
    cat = _catalog(src)
    allowed = set(cat.general)
    chains = [c for c in CHAINS if set(c.tools) <= allowed]
    focus = [c for c in chains if set(c.tools) & set(cat.focus)]
    chain = r.choice(focus if focus and r.random() < cat.cfg.focus_p else chains)
    try:
        run = run_chain(chain, r, cat.world.copy(), cat.split)
    except ChainError as e:
        raise Retry(str(e)) from None
    specs = [CATALOG[n] for n in chain.tools]
    offered = specs + cat.distractors(r, specs, r.randint(1, 3))
    meta = {"chain": chain.name, "sub_questions": run.sub_questions, "sub_answers": run.sub_answers,
            "dependencies": run.dependencies}
    return run.messages, offer(r, offered), meta


# ---------------------------------------------------------------------------------------------
# More tasks over a tool set already offered
# ---------------------------------------------------------------------------------------------

#: what a further task over an offered tool set asks: a call of one of its tools, several calls of one of them,
#: one call each of two or three of them, or something none of them does (a near miss, or an open question)
SIBLING_KINDS = ("other_tool", "parallel", "several_tools", "no_tool")


def _offered(src: ToolSource[Any], offered: list[Tool]) -> list[Any]:
    """The source's tools behind the offered schemas (all of them, or `Retry`)."""
    try:
        return [src.tools[t.name] for t in offered]
    except KeyError:
        raise Retry("an offered tool is not the source's") from None


def _no_tool(r: Random, src: ToolSource[Any], have: list[Any]) -> Task:
    """A request none of ``have`` serves: a near miss (a tool near them that is not offered and none of them
    substitutes), a general question about what one of them does, or an open question; the answer says what the
    tools do instead, or why no call is due."""
    u = r.random()
    if 0.4 <= u < 0.7:
        t = r.choice(have)
        question, reply = topic_question(r, t.gist)
        return [user_turn(question), answer_turn(reply)], [], {"requested_tool": None, "asks_about": t.name}
    if u < 0.4:
        taken = {src.key(t) for t in have}
        twins = [(src.tools[n], h) for h in have for n in src.twins(h)
                 if src.key(src.tools[n]) not in taken and not taken & src.substitutes(src.tools[n])]
        if twins and r.random() < src.cfg.twin_p:  # the offered twin is the tool the reply names first
            t, h = r.choice(twins)
            near, first, extra = [t], [h, *(o for o in have if o is not h)], {"twin": h.name}
        else:
            near, first, extra = src.distractors(r, have, 1), have, {}
        for t in near:
            if taken & src.substitutes(t):
                raise Retry("an offered tool could serve the near miss")
            _, text, _, _ = src.request(r, t)
            reply = refusal(t.gist, [o.gist for o in first[:2]], r)
            extra["offers_twin"] = any(h.name in src.twins(t) for h in have)
            return [user_turn(text), answer_turn(reply)], [], {"requested_tool": t.name, **extra}
    question, reply = open_question(r, [t.gist for t in have])
    return [user_turn(question), answer_turn(reply)], [], {"requested_tool": None}


def _fresh_first(have: list[Any], used: Collection[str]) -> list[Any]:
    """The tools of ``have`` no earlier task of the set called, or all of them when every one was."""
    return [h for h in have if h.name not in used] or have


def sibling(r: Random, src: ToolSource[Any], offered: list[Tool], kind: str,
            used: Collection[str] = ()) -> tuple[str, Task]:
    """A further task over the tool set ``offered`` (its schemas in the same order, so the system prompt is the
    same): ``kind`` is one of `SIBLING_KINDS`; a tool the set's earlier tasks did not call (``used``) is chosen
    first. Returns the task's category and the task."""
    have = _offered(src, offered)
    if kind == "parallel":
        t = r.choice(_fresh_first([h for h in have if h.params], used) or [None])
        if t is None:
            raise Retry("no offered tool takes arguments")
        calls, parts = _group(r, src, t, r.choices((2, 3), (0.7, 0.3))[0])
        text = parts[0] if len(parts) == 1 else join_requests(parts, r, src.split)
        category = "parallel" if len(have) == 1 else "parallel_multiple"  # BFCL's names: by the tools offered
        return category, ([user_turn(text), calls_turn([(t.name, c) for c in calls])], offered, {})
    if kind == "several_tools":
        if len(have) < 2:
            raise Retry("one tool offered")
        fresh = _fresh_first(have, used)
        n = min(len(have), r.choices((2, 3), (0.7, 0.3))[0])
        chosen = r.sample(fresh, min(n, len(fresh)))
        chosen += r.sample([h for h in have if h not in chosen], n - len(chosen))
        calls, parts = [], []
        for t in chosen:
            args, text, _, _ = src.request(r, t)
            calls.append((t.name, args))
            parts.append(text)
        src.check(calls)
        return "parallel_multiple", ([user_turn(join_requests(parts, r, src.split)), calls_turn(calls)], offered, {})
    if kind == "other_tool":
        t = r.choice(_fresh_first(have, used))
        args, text, _, _ = _one_request(r, src, t, 3 if r.random() < src.cfg.many_values_p else 1)
        src.check([(t.name, args)])
        return ("multiple" if len(have) > 1 else "simple"), ([user_turn(text), calls_turn([(t.name, args)])],
                                                             offered, {})
    messages, _, extra = _no_tool(r, src, have)
    return "irrelevance", (messages, offered, extra)


#: category -> builder; a source builds the categories it lists in `ToolSource.categories`
BUILDERS: dict[str, Callable[[Random, ToolSource[Any]], Task]] = {
    "simple": simple, "multiple": multiple, "parallel": parallel, "parallel_multiple": parallel_multiple,
    "irrelevance": irrelevance, "missing_parameter": missing_parameter, "multi_step": multi_step,
}

__all__ = ["BUILDERS", "SIBLING_KINDS", "Task", "irrelevance", "missing_parameter", "multi_step", "multiple",
           "n_values", "parallel", "parallel_multiple", "sibling", "simple", "takes_list"]
