"""The switches that ask decoding rules of every request of a run: one option group, `RuleSwitches`, that ``eval
bfcl``, ``eval demo`` and ``serve`` take alike (its fields are their flags: `tinytool.clikit.setting`), and what a run
so switched asks of each request (`RuleSwitches.request_rules`), read off the rules registered in
`tinytool.llm.rules`: each rule names its switch (`RowRule.switch`) and says what it asks of one conversation
(`RowRule.for_conversation`). Importing this module registers the built-in rules, the tools' grammar
(`tinytool.llm.constrain`), the decision by probability (`tinytool.llm.decide`), the value guard
(`tinytool.llm.guard`) and the copy bias (`tinytool.llm.copying`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from tinytool.clikit import setting

# importing them registers the grammar, the decision by probability, the copy bias and the value guard
from tinytool.llm import constrain, copying, decide, guard  # noqa: F401
from tinytool.llm.decide import DECIDE_HELP
from tinytool.llm.rules import Asked, RowRule, registered

CONSTRAINED_HELP = ("Decode every request under its tools' grammar (local models): text, or calls that name an offered "
                    "function and fit its schema. eval: the run is marked constrained in its summary and report; "
                    "serve: every request as if its functions were strict (tool_choice required or named always is).")
GUARD_HELP = ("Local models, hermes formats: a call stays open while the user's last message states a value no call "
              "holds that an unwritten parameter takes, and a repeated call ends the answer (eval: single-turn items, "
              "the run marked guarded in its summary and report). An experiment, off by default: two of its rules "
              "were set while reading BFCL answers, and on the held-out demo dev split it changed nothing.")

COPY_HELP = ("Local models, hermes formats: while a call's argument value is written, add this much to the logit of "
             "every token that keeps the value a copy of what the user's last message states (a span of its text, a "
             "number it states; eval: single-turn items). 0: off.")


@dataclass(frozen=True, kw_only=True)
class RuleSwitches:
    """Which decoding rules every request of a run (or every request a server answers) decodes under; the base of
    the configs of ``eval bfcl``, ``eval demo`` and ``serve``. A field is a rule's `RowRule.switch`."""

    #: the tools' ``auto`` grammar (`tinytool.llm.constrain`)
    constrained: bool = setting(False, CONSTRAINED_HELP, "--strict")
    #: the value guard (`tinytool.llm.guard`)
    value_guard: bool = setting(False, GUARD_HELP)
    #: the copy bias (`tinytool.llm.copying`): what a copying token's logit gains (0: off)
    copy_bias: float = setting(0.0, COPY_HELP, min=0.0)
    #: the decision by probability (`tinytool.llm.decide`): the probability of calling a call needs (0: off)
    call_threshold: float = setting(0.0, DECIDE_HELP, min=0.0, max=1.0)

    def switches(self) -> RuleSwitches:
        """These switches alone (a config that extends them, cut down to them)."""
        return RuleSwitches(**self.marks())

    def marks(self) -> dict[str, Any]:
        """Each switch and whether it is on, or its setting where it carries one (what a summary records)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(RuleSwitches)}

    def switched(self) -> list[type[RowRule]]:
        """The registered rules these switches turn on, in their order."""
        return [rule for rule in registered() if rule.switch and getattr(self, rule.switch, False)]

    def flags(self) -> list[str]:
        """The command-line flags of the switches that are on (``--constrained (--strict)``), for messages."""
        out = []
        for f in dataclasses.fields(RuleSwitches):
            if getattr(self, f.name):
                aliases = f.metadata.get("aliases") or []
                flag = "--" + f.name.replace("_", "-")
                out.append(f"{flag} ({', '.join(aliases)})" if aliases else flag)
        return out

    def check(self, fmt: Any) -> None:
        """Where a run or a server starts, before a model loads: each rule switched on checks it can serve ``fmt``
        (`RowRule.check_run`: a `tinytool.errors.UserInputError` when not)."""
        for rule in self.switched():
            rule.check_run(fmt)

    def request_rules(self, conv: Any, fmt: Any, prefix: str = "", *, single_turn: bool = True,
                      skip: tuple[str, ...] = ()) -> tuple[Asked, dict[str, str]]:
        """What a request for ``conv``'s next answer in ``fmt`` (starting with ``prefix``) asks of the rules switched
        on, but those named in ``skip`` (and, for a multi-turn dialogue's step, ``single_turn`` False, those that
        serve single-turn requests only): ``(rules, notes)``, ``rules`` for ``Request.rules`` and ``notes`` why a
        rule was left off (by its `RowRule.note`)."""
        rules: Asked = {}
        notes: dict[str, str] = {}
        for rule in self.switched():
            if rule.name in skip or (rule.single_turn and not single_turn):
                continue
            spec, why = rule.for_conversation(conv, fmt, prefix)
            if spec is not None:
                rules[rule.name] = rule.configure(spec, getattr(self, rule.switch))
            elif why:
                notes[rule.note or f"without_{rule.name}"] = why
        return rules, notes


#: the switches' names, in order (the keys of `RuleSwitches.marks`)
SWITCHES = tuple(f.name for f in dataclasses.fields(RuleSwitches))

__all__ = ["CONSTRAINED_HELP", "COPY_HELP", "DECIDE_HELP", "GUARD_HELP", "SWITCHES", "RuleSwitches"]
