"""Where a demo task's tools come from: the executable catalog or the generated pool.

The task builders of `tinytool.data.demo.tasks` are written once over `ToolSource`; the two sources
differ in what a tool is and in a few choices of their own:

- `CatalogTools`: the catalog's tools (`tinytool.data.demo.catalog`) over the seed's `World`. Arguments
  are sampled against the world, and every ground-truth call is executed on a fresh copy of it, so a
  call that fails is drawn again. Near misses are the tools' declared siblings, then same-domain tools.
- `GeneratedTools`: the pool of `tinytool.data.demo.proctools`. Calls are checked against the schema, not
  executed (two parameters that must differ never repeat a value); near misses are tools of the same
  domain, then tools with a similar name, never another variant of a chosen tool's action.

Both pick a target the same way: in dev, ``focus_p`` of the time among the held-out tools. A source carries
the generator's settings (`DemoConfig`) that its builders read.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from functools import cache
from random import Random
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from tinytool.data.demo import proctools
from tinytool.data.demo.catalog import CATALOG, HELD_OUT, TRAIN_TOOLS, Template, ToolSpec, World, execute
from tinytool.data.demo.config import DemoConfig
from tinytool.data.demo.proctools import GenTool, Pool, family
from tinytool.schema import Tool

FRESH_TRIES = 12  # draws for a value a request has not used yet


@cache
def followups(name: str) -> tuple[str, ...]:
    """The catalog tools that a multi-step chain calls together with ``name`` (its follow-up actions and the
    actions it follows): offered beside it, they make a request for exactly one action harder."""
    from tinytool.data.demo.chains import CHAINS

    return tuple(sorted({t for c in CHAINS if name in c.tools for t in c.tools if t != name}))

#: one call: the tool's name and its arguments
Call = tuple[str, dict[str, Any]]
#: a call and the request that asks for it: ``(arguments, text, phrasing, slot texts)``
Request = tuple[dict[str, Any], str, Template, dict[str, str]]


class Retry(Exception):
    """This sample did not work out (an invalid call, no usable phrasing); draw another."""


class _Sayer(Protocol):
    def say(self, value: Any, r: Random) -> str: ...


class SourceTool(Protocol):
    """What the task builders read of a tool: a catalog `ToolSpec` or a generated `GenTool`."""

    @property
    def name(self) -> str: ...
    @property
    def tool(self) -> Tool: ...
    @property
    def gist(self) -> str: ...
    @property
    def params(self) -> Collection[Any]: ...
    @property
    def param_map(self) -> Mapping[str, _Sayer]: ...
    @property
    def parallel_axes(self) -> tuple[str, ...]: ...


T = TypeVar("T", bound=SourceTool)


class ToolSource(Generic[T]):
    """The tools one split's tasks are built over, and how a source draws from them: ``tools`` by name,
    ``general`` those the split may use, ``focus`` those to favour as targets (held-out ones in dev); ``cfg`` the
    generator's settings."""

    #: the shapes a request for several calls of one tool takes, in the order they are tried, each when the
    #: group's uniform draw falls below its bound: ``listed`` (values listed in one slot, or "then repeat
    #: for ..."), ``respectively`` (two slots listed in step)
    shapes: ClassVar[tuple[tuple[str, float], ...]]
    list_p: ClassVar[float]  # chance ``listed`` lists its values in the slot (else "then repeat for ...")
    pairs_in_text_order: ClassVar[bool]  # ``respectively`` pairs slots in the order of the text (else of names)
    plan_first: ClassVar[bool]  # parallel_multiple draws its call plan before its first tool

    def __init__(self, split: str, tools: Mapping[str, T], general: Sequence[str], focus: Sequence[str],
                 cfg: DemoConfig | None = None) -> None:
        self.split = split
        self.cfg = cfg or DemoConfig()
        self.tools = tools  # name -> tool
        self.general = tuple(general)
        self.focus = tuple(focus)
        self._twins: dict[str, list[str]] = {}

    # ---- what a source is made of ----------------------------------------------------------------

    def key(self, t: T) -> str:
        """What two tools of one task must not share (their name, or their action)."""
        return t.name

    def near(self, chosen: Sequence[T]) -> list[tuple[Sequence[str], float]]:
        """Tiers of distractor candidates for ``chosen``, nearest first, each with its chance of being drawn
        from; the last tier is drawn from surely."""
        raise NotImplementedError

    def substitutes(self, t: T) -> frozenset[str]:
        """Keys of tools that could serve ``t``'s request: never offered in its place."""
        return frozenset()

    def n_others(self, r: Random) -> int:
        """How many distractors a ``multiple`` task offers beside its target."""
        raise NotImplementedError

    def kin(self, t: T) -> list[str]:
        """The usable tools of ``t``'s domain (``t`` among them)."""
        raise NotImplementedError

    def slots(self, t: T) -> tuple[frozenset[str], frozenset[str]]:
        """``t``'s required parameters and all its parameters, named alike wherever two tools of the source take
        the same value."""
        raise NotImplementedError

    def twins(self, t: T) -> list[str]:
        """The usable tools of ``t``'s domain that compute something else from the same values: each one's required
        parameters are among the other's, and neither could serve the other's request (the mean beside the median,
        compound interest beside a loan payment). Offered alone beside a request for ``t``, a twin is the hardest
        near miss: every value the request states fits it, and it is still the wrong tool."""
        if t.name not in self._twins:
            need, take = self.slots(t)
            out = []
            for n in self.kin(t):
                o = self.tools[n]
                if self.key(o) == self.key(t) or self.key(o) in self.substitutes(t) \
                        or self.key(t) in self.substitutes(o):
                    continue
                o_need, o_take = self.slots(o)
                if o_need <= take and need <= o_take:
                    out.append(n)
            self._twins[t.name] = out
        return self._twins[t.name]

    def other(self, r: Random) -> T:
        """A further tool for a parallel_multiple request when it does not stay in the first one's domain."""
        return self.target(r)

    def some(self, r: Random, k: int) -> list[T]:
        """Up to ``k`` tools to offer beside a question no tool answers."""
        return list({self.key(t): t for t in (self.target(r) for _ in range(k))}.values())

    def request(self, r: Random, t: T, imply: bool = False, full: bool = False) -> Request:
        """A call of ``t`` and the request that states exactly its values (``imply``: the request is the whole
        message, for one call, so a value may be implied by a sentence after it instead; ``full``: it states a
        value for every optional parameter its phrasing can carry)."""
        raise NotImplementedError

    def sample_value(self, r: Random, t: T, tpl: Template, p: str) -> Any:
        """A value of parameter ``p`` (None when the draw leaves it out)."""
        raise NotImplementedError

    def value_pairs(self, r: Random, t: T, tpl: Template, args: Mapping[str, Any], a: str, b: str,
                    k: int) -> list[tuple[Any, Any]]:
        """``k`` distinct ``(a, b)`` value pairs for a request listing both slots in step, ``args``'s first."""
        raise NotImplementedError

    def check(self, calls: Sequence[Call]) -> None:
        """Raise `Retry` unless the ground-truth calls are valid together."""

    # ---- shared by both sources --------------------------------------------------------------------

    def target(self, r: Random, ok: Callable[[T], bool] | None = None) -> T:
        names = self.focus if self.focus and r.random() < self.cfg.focus_p else self.general
        if ok is not None:
            names = [n for n in names if ok(self.tools[n])] or [n for n in self.general if ok(self.tools[n])]
            if not names:
                raise Retry("no tool of the split fits")
        return self.tools[r.choice(names)]

    def distractors(self, r: Random, chosen: Sequence[T], k: int, exclude: Collection[str] = ()) -> list[T]:
        """``k`` more tools, drawn tier by tier from `near`; none shares a key with another offered tool
        or is in ``exclude``."""
        taken = {self.key(t) for t in chosen} | set(exclude)
        tiers = self.near(chosen)
        out: list[T] = []
        for _ in range(k):
            for names, p in tiers:
                free = [n for n in names if self.key(self.tools[n]) not in taken]
                if free and r.random() < p:
                    t = self.tools[r.choice(free)]
                    taken.add(self.key(t))
                    out.append(t)
                    break
        return out

    def fresh(self, r: Random, t: T, tpl: Template, p: str, taken: Sequence[Any]) -> Any:
        """A value of ``p`` not in ``taken``."""
        for _ in range(FRESH_TRIES):
            v = self.sample_value(r, t, tpl, p)
            if v is not None and v not in taken:
                return v
        raise Retry(f"could not find another value for {t.name}.{p}")


class CatalogTools(ToolSource[ToolSpec]):
    """The catalog's executable tools; train never sees a held-out one, dev favours them."""

    shapes = (("listed", 0.62), ("respectively", 0.8))
    list_p = 0.65
    pairs_in_text_order = False
    plan_first = False

    def __init__(self, world: World, split: str, cfg: DemoConfig | None = None) -> None:
        super().__init__(split, CATALOG, TRAIN_TOOLS if split == "train" else tuple(CATALOG),
                         sorted(HELD_OUT) if split == "dev" else (), cfg)
        self.world = world  # the pristine world of the seed: read it, never mutate it

    def near(self, chosen: Sequence[ToolSpec]) -> list[tuple[Sequence[str], float]]:
        allowed = set(self.general)
        siblings = [n for s in chosen for n in s.siblings if n in allowed]
        domains = {s.domain for s in chosen}
        same_domain = [n for n in self.general if CATALOG[n].domain in domains]
        follow = [n for s in chosen for n in followups(s.name) if n in allowed]
        return [(follow, self.cfg.followup_p), (siblings, 0.6), (same_domain, 0.6), (self.general, 1.0)]

    def substitutes(self, t: ToolSpec) -> frozenset[str]:
        return frozenset(t.substitutes)

    def n_others(self, r: Random) -> int:
        return r.randint(1, 4)

    def kin(self, t: ToolSpec) -> list[str]:
        return [n for n in self.general if CATALOG[n].domain == t.domain]

    def slots(self, t: ToolSpec) -> tuple[frozenset[str], frozenset[str]]:
        return frozenset(t.required), frozenset(p.name for p in t.params)

    def other(self, r: Random) -> ToolSpec:
        return CATALOG[r.choice(self.general)]

    def some(self, r: Random, k: int) -> list[ToolSpec]:
        return [CATALOG[n] for n in r.sample(self.general, k)]

    def sample_args(self, r: Random, spec: ToolSpec, tpl: Template, full: bool = False) -> dict[str, Any]:
        """Required arguments plus optional ones the phrasing can express (each with ``optional_p``; ``full``:
        all)."""
        args = {p.name: p.sample(r, self.world) for p in spec.params
                if p.required or (p.name in tpl.slots and (full or r.random() < self.cfg.optional_p))}
        if spec.fix is not None:
            spec.fix(args, r, self.world)
        return args

    @staticmethod
    def say_all(spec: ToolSpec, args: Mapping[str, Any], r: Random, skip: str | None = None) -> dict[str, str]:
        return {k: spec.param_map[k].say(v, r) for k, v in args.items() if k != skip}

    def request(self, r: Random, spec: ToolSpec, imply: bool = False, full: bool = False) -> Request:
        """The arguments are exactly what the text says: optional ones a phrasing drops are dropped (the catalog's
        phrasings imply no values: ``imply`` changes nothing; ``full`` takes the phrasing that can say the most)."""
        phrasings = spec.phrasings(self.split)
        most = max(len(t.slots) for t in phrasings)
        tpl = r.choice([t for t in phrasings if len(t.slots) == most] if full else phrasings)
        args = self.sample_args(r, spec, tpl, full)
        texts = self.say_all(spec, {k: v for k, v in args.items() if k in tpl.slots}, r)
        said = tpl.mentioned(texts.keys())
        args = {k: v for k, v in args.items() if k in said}
        texts = {k: v for k, v in texts.items() if k in said}
        if any(p not in args for p in spec.required):
            raise Retry(f"{spec.name}: phrasing {tpl.text!r} left out a required argument")
        return args, tpl.render(texts), tpl, texts

    def sample_value(self, r: Random, spec: ToolSpec, tpl: Template, p: str) -> Any:
        return self.sample_args(r, spec, tpl).get(p)  # drawn with the others: `fix` may tie them together

    def value_pairs(self, r: Random, spec: ToolSpec, tpl: Template, args: Mapping[str, Any], a: str, b: str,
                    k: int) -> list[tuple[Any, Any]]:
        combos = [(args[a], args[b])]
        for _ in range(20 * k):
            if len(combos) == k:
                break
            extra = self.sample_args(r, spec, tpl)
            pair = (extra.get(a), extra.get(b))
            if None not in pair and pair[0] not in [c[0] for c in combos] and pair[1] not in [c[1] for c in combos]:
                combos.append(pair)
        if len(combos) < k:
            raise Retry("not enough distinct value pairs")
        return combos

    def check(self, calls: Sequence[Call]) -> None:
        """The calls must all succeed, in order, on a fresh copy of the world."""
        w = self.world.copy()
        for name, args in calls:
            out = execute(w, name, args)
            if isinstance(out, dict) and "error" in out:
                raise Retry("a ground-truth call fails on the world")


class GeneratedTools(ToolSource[GenTool]):
    """The generated tools of one seed's pool: held-out domains and tools only in dev, favoured there."""

    #: the categories built over generated tools (missing_parameter and multi_step need executable ones)
    categories = ("simple", "multiple", "parallel", "parallel_multiple", "irrelevance")
    shapes = (("respectively", 0.25), ("listed", 0.7))
    list_p = 0.75
    pairs_in_text_order = True
    plan_first = True

    def __init__(self, pool: Pool, split: str, cfg: DemoConfig | None = None) -> None:
        super().__init__(split, pool.tools, pool.train, pool.held_out if split == "dev" else (), cfg)
        self.pool = pool
        self._families = {n: family(t) for n, t in pool.tools.items()}

    def key(self, t: GenTool) -> str:
        return self._families[t.name]  # one variant per action, and never a substitute action

    def _usable(self, names: Sequence[str]) -> list[str]:
        return [n for n in names if self.split == "dev" or not self.pool.tools[n].held_out]

    def near(self, chosen: Sequence[GenTool]) -> list[tuple[Sequence[str], float]]:
        pool = self.pool
        domain = [n for t in chosen for n in pool.by_domain[t.domain]]
        similar = [n for t in chosen for tok in sorted(proctools.name_tokens(t.name)) for n in pool.by_token.get(tok, ())]
        return [(self._usable(domain), 0.6), (self._usable(similar), 0.5), (pool.train, 1.0)]

    def n_others(self, r: Random) -> int:
        return r.choices((1, 2, 3, 4, 5, 6, 7), (5, 5, 4, 3, 2, 1, 1))[0]

    def kin(self, t: GenTool) -> list[str]:
        return self._usable(self.pool.by_domain[t.domain])

    def slots(self, t: GenTool) -> tuple[frozenset[str], frozenset[str]]:
        a = t.action  # the bank's slot keys: a variant's parameter names are synonyms of them
        return frozenset(a.required), frozenset(a.required + a.optional)

    def request(self, r: Random, t: GenTool, imply: bool = False, full: bool = False) -> Request:
        return t.request(r, self.split, imply, full, self.cfg.optional_p, self.cfg.implied_p)

    def sample_value(self, r: Random, t: GenTool, tpl: Template, p: str) -> Any:
        return t.param_map[p].sample(r)

    def value_pairs(self, r: Random, t: GenTool, tpl: Template, args: Mapping[str, Any], a: str, b: str,
                    k: int) -> list[tuple[Any, Any]]:
        va, vb = [args[a]], [args[b]]
        while len(va) < k:
            va.append(self.fresh(r, t, tpl, a, va))
            vb.append(self.fresh(r, t, tpl, b, vb))
        if any(x == y for x, y in zip(va, vb)):
            raise Retry("a pair repeats a value")
        return list(zip(va, vb))

    def check(self, calls: Sequence[Call]) -> None:
        if any(self.pool.tools[name].repeats(args) for name, args in calls):
            raise Retry("a call repeats a value that must differ")


__all__ = ["CatalogTools", "GeneratedTools", "Retry", "SourceTool", "ToolSource"]
