"""Per-row decoding rules: one protocol for whatever keeps each decoded row to what its request asks.

A request carries its decoding rules as one bag, ``Request.rules``: a rule's name → what the request asks of that
rule (its options: the tools' grammar, `tinytool.llm.constrain`, takes a ``Constraint``; the value guard,
`tinytool.llm.guard`, a ``ValueGuard``). Each rule is a `RowRule` that its own module registers here under its name
(`register`); this module imports none of them. A rule keeps a state per row of one decoding run. A row starts
under what its request asks (`RowRule.start`); at every step the rule masks the tokens the row may not take next
(`RowRule.mask`), then advances with the token the row took (`RowRule.advance`) and may end the row there
(`RowRule.ends`); once the row's text is decoded the rule may finish it (`RowRule.finish`). `Rules` is the
registered rules a run's requests ask for, over its rows, in their `RowRule.order` (a later rule masks after an
earlier one: the grammar masks before the guard, so where the grammar allows only what the guard refuses, the
grammar wins), and it is what the engine calls: continuous batching (`tinytool.llm.continuous`), the padded fallback
and the server's stream (both through `logits_processor`).

Adding a rule touches its own module and its registration (`register`), not the engine: the decoders apply
whatever rules a request names.
"""

from __future__ import annotations

from typing import Any, ClassVar

#: what a request asks of the registered rules: a rule's name → what the request asks of it (rules it asks nothing
#: of are left out); a request's ``rules`` is one
Asked = dict[str, Any]


class RowRule:
    """One rule over the rows of one decoding run (a padded batch's rows, or continuous batching's slots): a state
    per row (None: the row is free of this rule), made by `begin` from what the row's request asks."""

    #: the key of ``Request.rules`` (and of `Asked`) under which a request says what it asks of this rule
    name: ClassVar[str] = ""
    #: where this rule masks among the rules a run applies: lower first, equal ones in registration order (the
    #: grammar, 0, masks before the value guard, 10: where they disagree the grammar wins)
    order: ClassVar[int] = 100
    #: the field of `tinytool.llm.switches.RuleSwitches` (a flag of ``eval`` and ``serve``) that asks this rule of
    #: every request of a run ("": none, requests name the rule themselves)
    switch: ClassVar[str] = ""
    #: whether the switch asks this rule of single-turn requests only (not of a multi-turn dialogue's steps)
    single_turn: ClassVar[bool] = False
    #: the key under which a switched run records why a request went without this rule (`for_conversation`)
    note: ClassVar[str] = ""
    #: whether `pick` may stand for `mask` then choosing (the rule can check a chosen token after the fact); the
    #: engine uses it where this rule is the only one and nothing needs the masked distribution itself
    lazy: ClassVar[bool] = False

    @classmethod
    def check_run(cls, fmt: Any) -> None:
        """Called where a run or a server that switches this rule on starts, before a model loads: raise a
        `tinytool.errors.UserInputError` when the rule cannot serve prompt format ``fmt``."""

    @classmethod
    def for_conversation(cls, conv: Any, fmt: Any, prefix: str = "") -> tuple[Any, str | None]:
        """What a run that switches this rule on asks of it for ``conv``'s next answer in ``fmt`` (starting with
        ``prefix``, already in the prompt): ``(spec, None)``, or ``(None, why)`` when the request goes without it
        (``why`` None: nothing worth recording)."""
        return None, None

    @classmethod
    def configure(cls, spec: Any, value: Any) -> Any:
        """What a run asks of this rule for one request, given the value of its switch (a switch that is not a plain
        on/off carries a setting, the copy bias its strength); ``spec`` as `for_conversation` made it."""
        return spec

    @classmethod
    def prepare(cls, client: Any, spec: Any) -> None:
        """Called for what every request of a call asks before anything decodes (a grammar is compiled, so a schema
        that does not compile fails the call at once)."""

    @classmethod
    def finish(cls, spec: Any, text: str) -> str:
        """The text of a row decoded under ``spec``, finished (the guard cuts it before a repeated call)."""
        return text

    def __init__(self, client: Any, rows: int):
        self.client = client
        self.states: list[Any] = [None] * rows

    def begin(self, spec: Any) -> Any:
        """The state of a row that starts under ``spec``."""
        return spec

    def start(self, row: int, spec: Any) -> None:
        """Row ``row`` begins a sequence under ``spec`` (None: free of this rule)."""
        self.states[row] = None if spec is None else self.begin(spec)

    def stop(self, row: int) -> None:
        """Row ``row`` ended."""
        self.states[row] = None

    def keep(self, rows: list[int]) -> None:
        """Only ``rows`` stay, in that order (the engine dropped idle rows)."""
        self.states = [self.states[r] for r in rows]

    def mask(self, logits: Any) -> Any:
        """``logits`` ([rows, vocab], float32) with -inf on every token a row may not take next; in place or a
        new tensor."""
        return logits

    def advance(self, tokens: list[int]) -> None:
        """Every row took ``tokens[row]`` (a free row's token is ignored)."""

    def ends(self, row: int) -> bool:
        """Whether row ``row`` must end after the token it just took."""
        return False

    def pick(self, logits: Any, choose: Any) -> list[int]:
        """The step's tokens as ``choose`` (logits → token ids) gives them after `mask`, each advanced, computing
        masks only where needed (`lazy` rules only)."""
        raise NotImplementedError


class ReadingRule(RowRule):
    """A rule whose row states read every token their row takes (each state's ``advance(token)``)."""

    def advance(self, tokens: list[int]) -> None:
        for state, t in zip(self.states, tokens, strict=True):
            if state is not None:
                state.advance(t)


_RULES: list[type[RowRule]] = []


def registered() -> tuple[type[RowRule], ...]:
    """The registered rules, in the order their masks apply (`RowRule.order`, then registration)."""
    return tuple(sorted(_RULES, key=lambda rule: rule.order))


def register(rule: type[RowRule]) -> type[RowRule]:
    """Add ``rule`` to the rules the decoders apply (a class decorator, in the rule's own module); its
    `RowRule.name` must be new."""
    if not rule.name:
        raise ValueError(f"{rule.__name__}: a decoding rule needs a name (the key of Request.rules it reads)")
    if any(r.name == rule.name for r in _RULES):
        raise ValueError(f"a decoding rule named {rule.name!r} is registered already")
    _RULES.append(rule)
    return rule


def unregister(rule: type[RowRule]) -> None:
    """Take ``rule`` out again."""
    _RULES.remove(rule)


def asked(request: Any) -> Asked:
    """What ``request`` asks of the registered rules: its ``rules`` less those set to None; a name no rule is
    registered under is a `ValueError` (the rule's module was never imported, or the name is misspelt)."""
    out = {name: spec for name, spec in (getattr(request, "rules", None) or {}).items() if spec is not None}
    unknown = set(out) - {rule.name for rule in _RULES}
    if unknown:
        raise ValueError(f"Request.rules names {', '.join(sorted(map(repr, unknown)))}, which no decoding rule is "
                         f"registered under (registered: {', '.join(r.name for r in registered()) or 'none'})")
    return out


def prepare(client: Any, asks: list[Asked]) -> None:
    """`RowRule.prepare` of everything ``asks`` (per request) asks."""
    for ask in asks:
        for rule in registered():
            if ask.get(rule.name) is not None:
                rule.prepare(client, ask[rule.name])


def finish(ask: Asked, text: str) -> str:
    """``text``, a row decoded under ``ask``, finished by every rule it asks."""
    for rule in registered():
        if ask.get(rule.name) is not None:
            text = rule.finish(ask[rule.name], text)
    return text


class Rules:
    """The registered rules that any of a decoding run's requests asks for (``asks``), over its ``rows``: the one
    place continuous batching, the padded fallback and the stream call."""

    def __init__(self, client: Any, rows: int, asks: list[Asked]):
        wanted = {name for ask in asks for name in ask}
        self.rules = [rule(client, rows) for rule in registered() if rule.name in wanted]

    def __bool__(self) -> bool:
        return bool(self.rules)

    @property
    def lazy(self) -> bool:
        """Whether `pick` may stand for `mask` then choosing (one rule, a lazy one)."""
        return len(self.rules) == 1 and self.rules[0].lazy

    def start(self, row: int, ask: Asked) -> None:
        for rule in self.rules:
            rule.start(row, ask.get(rule.name))

    def stop(self, row: int) -> None:
        for rule in self.rules:
            rule.stop(row)

    def keep(self, rows: list[int]) -> None:
        for rule in self.rules:
            rule.keep(rows)

    def mask(self, logits: Any) -> Any:
        for rule in self.rules:
            logits = rule.mask(logits)
        return logits

    def pick(self, logits: Any, choose: Any) -> list[int]:
        return self.rules[0].pick(logits, choose)

    def advance(self, tokens: list[int]) -> None:
        for rule in self.rules:
            rule.advance(tokens)

    def ends(self, row: int) -> bool:
        return any(rule.ends(row) for rule in self.rules)


def logits_processor(client: Any, asks: list[Asked]) -> Any:
    """A logits processor for ``model.generate`` that keeps row ``i`` to what ``asks[i]`` asks (None when no row
    asks anything): each step it advances every row with the token the previous step chose (a row that ended, on an
    end-of-turn token, is stopped: ``generate`` pads it from there), then masks. Rules that end a row
    (`RowRule.ends`) are left to `finish`: ``generate`` decodes a batch on until its last row ends."""
    rules = Rules(client, len(asks), asks)
    if not rules:
        return None
    from transformers import LogitsProcessor

    eos = set(client.eos_ids)

    class RulesProcessor(LogitsProcessor):
        def __init__(self) -> None:
            for i, ask in enumerate(asks):
                rules.start(i, ask)
            self.started = False

        def __call__(self, input_ids: Any, scores: Any) -> Any:
            if self.started:
                last = input_ids[:, -1].tolist()
                rules.advance(last)
                for i, t in enumerate(last):
                    if t in eos:
                        rules.stop(i)
            self.started = True
            return rules.mask(scores.clone())

    return RulesProcessor()


__all__ = ["Asked", "ReadingRule", "RowRule", "Rules", "asked", "finish", "logits_processor", "prepare", "register", "registered",
           "unregister"]
