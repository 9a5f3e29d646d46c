"""A recipe: a list of stages, each one tinytool verb with its arguments, read from YAML.

.. code-block:: yaml

    name: star
    vars: {model: smollm2-135m-instruct, format: hermes-nothink}
    stages:
      - name: data
        run: data demo
        args: {n: 400, out: "{out}"}
      - name: sft
        run: sft
        args: {model: "{model}", data: ["{data}/train.jsonl"], format: "{format}", output_dir: "{out}"}

In argument values, ``{out}`` is the stage's own output folder, ``{NAME}`` a variable of ``vars`` (overridable
with ``--set NAME=VALUE``) or the output folder of an earlier stage named NAME, and ``{run}`` the run directory.
A value that is exactly one reference keeps the referenced value's type (a number stays a number).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tinytool.errors import UserInputError

#: verbs a stage may run: whether their options are the fields of a config dataclass (a YAML file is written for
#: them, the verb reads it with ``--config``) or typer flags, and where those options are declared (the config class
#: or the command function).
#: Verbs that are not stages: serve, mcp serve and sandbox run (servers and a single program, not steps of a
#: method), run and demo (recipes themselves), collect (a loop of its own).
VERB_SOURCES = {
    "data demo": ("config", "tinytool.data.cli_demo:DemoJob"),
    "data convert": ("config", "tinytool.data.cli_convert:ConvertConfig"),
    "data mix-irrelevant": ("config", "tinytool.data.cli_mix:MixConfig"),
    "data select": ("config", "tinytool.data.cli_select:SelectConfig"),
    "student": ("config", "tinytool.distill.cli_student:StudentConfig"),
    "sft": ("config", "tinytool.train.sft:SFTRunConfig"),
    "kto": ("config", "tinytool.train.kto:KTORunConfig"),
    "rl": ("config", "tinytool.rl.config:RLRunConfig"),
    "distill": ("config", "tinytool.distill.trainer:DistillConfig"),
    "teacher rollout": ("config", "tinytool.distill.cli_rollout:RolloutConfig"),
    "teacher cache": ("config", "tinytool.distill.cli_cache:CacheConfig"),
    "eval bfcl": ("flags", "tinytool.eval.cli_eval:bfcl"),
    "eval demo": ("flags", "tinytool.eval.cli_eval:demo"),
    "report": ("flags", "tinytool.eval.cli_eval:report"),
    "retrieve": ("config", "tinytool.retrieval.cli_retrieve:RetrieveConfig"),
    "synth tools": ("flags", "tinytool.synth.cli_synth:tools_cmd"),
    "synth chains": ("flags", "tinytool.synth.cli_synth:chains_cmd"),
    "synth tasks": ("flags", "tinytool.synth.cli_synth:tasks_cmd"),
    "synth trajectories": ("flags", "tinytool.synth.cli_synth:trajectories_cmd"),
    "synth envs": ("flags", "tinytool.synth.cli_synth:envs_cmd"),
}
VERBS = {verb: kind for verb, (kind, _) in VERB_SOURCES.items()}


def verb_target(verb: str) -> Any:
    """Where ``verb``'s options are declared: its config class or its command function (`VERB_SOURCES`)."""
    import importlib

    module, _, name = VERB_SOURCES[verb][1].partition(":")
    return getattr(importlib.import_module(module), name)


def _typer_params(verb: str) -> list[tuple[str, Any, Any]]:
    """``(name, flag names, default)`` of each option and argument of a verb whose options are typer flags,
    declared by a ``typer.Option``/``typer.Argument`` given as the parameter's default or in ``Annotated``."""
    import inspect
    import typing

    out = []
    for param in inspect.signature(verb_target(verb), eval_str=True).parameters.values():
        infos = [param.default]
        if typing.get_origin(param.annotation) is typing.Annotated:
            infos += typing.get_args(param.annotation)[1:]
        info = next((i for i in infos if hasattr(i, "param_decls")), None)
        if info is None:
            continue
        decls = tuple(info.param_decls or ())
        if info is param.default:
            default = info.default
        else:  # in Annotated, typer reads the declaration's first argument as a flag name, not a default
            default = param.default
            decls = (info.default, *decls) if isinstance(info.default, str) else decls
        out.append((param.name, decls, default))
    return out


def verb_options(verb: str) -> set[str]:
    """The argument names a stage running ``verb`` may give: a training config's fields, or the long flags of a
    command (``--max-new-tokens`` → ``max_new_tokens``; a boolean's ``--no-`` form is derived from its name)."""
    import dataclasses

    from tinytool.clikit import option_key

    target = verb_target(verb)
    if dataclasses.is_dataclass(target):
        return {option_key(f) for f in dataclasses.fields(target)}
    names: set[str] = set()
    for name, decls, _ in _typer_params(verb):
        longs = [part.strip()[2:] for d in decls for part in d.split("/") if part.strip().startswith("--")]
        names.update(n.replace("-", "_") for n in longs or [name])
    return names


def bare_flags(verb: str) -> set[str]:
    """The boolean flags of ``verb`` that are off unless given and have no ``--no-`` form (``--value-guard``):
    a stage's ``false`` for one of them is the flag left out (`stage_flags`), so that a recipe variable can switch
    it either way."""
    import dataclasses

    if dataclasses.is_dataclass(verb_target(verb)):
        return set()
    out = set()
    for _, decls, default in _typer_params(verb):
        longs = [d for d in decls if d.startswith("--")]
        if default is False and longs and not any("/" in d for d in decls):
            out.add(longs[0][2:].replace("-", "_"))
    return out


def check_stage_args(recipe: Recipe) -> None:
    """Every stage's argument names exist for its verb: a misspelled one (``sed: 0``) is found before the first
    stage starts, not when its stage runs hours later. The error names the file, the stage and the closest name."""
    import difflib

    for i, stage in enumerate(recipe.stages):
        known = verb_options(stage.run)
        for key in stage.args:
            name = str(key)
            if name in known or (name.startswith("no_") and name[3:] in known):
                continue
            close = difflib.get_close_matches(name, sorted(known), 1)
            raise UserInputError(f"{recipe.path}: stages[{i}] ({stage.name}).args: {stage.run} has no option "
                                 f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""),
                                 fix=f"see tinytool {stage.run} --help for its options")


def positional_args(verb: str, positional: list[Any]) -> dict[str, Any]:
    """A config verb's positional arguments as its options: the fields the command takes as arguments
    (``argument`` in their `tinytool.clikit.setting`), in their order; more than it takes is an error."""
    import dataclasses

    if VERBS[verb] != "config" or not positional:
        return {}
    from tinytool.clikit import option_key

    names = [option_key(f) for f in dataclasses.fields(verb_target(verb)) if f.metadata.get("argument")]
    if len(positional) > len(names):
        raise UserInputError(f"{verb} takes {len(names)} positional argument{'s' * (len(names) != 1)}, "
                             f"got {len(positional)}", fix=f"give the options by name in args (tinytool {verb} --help)")
    return dict(zip(names, positional))


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def stage_flags(args: dict[str, Any], positional: list[Any], bare: Collection[str] = ()) -> list[str]:
    """The command line of a stage whose verb takes flags, after the verb: the positional arguments, then each
    argument as a flag (``True`` → ``--name``, ``False`` → ``--no-name``, or left out for a flag of ``bare``
    (`bare_flags`), a list → the flag repeated, None → left out)."""
    out = [str(p) for p in positional]
    for key, value in args.items():
        if value is None or (value is False and key in bare):
            continue
        if value is True:
            out.append(_flag(key))
        elif value is False:
            out.append("--no-" + key.replace("_", "-"))
        elif isinstance(value, list):
            for v in value:
                out += [_flag(key), str(v)]
        else:
            out += [_flag(key), str(value)]
    return out


def check_stage_values(recipe: Recipe, index: int, args: dict[str, Any], positional: list[Any]) -> None:
    """Stage ``index``'s resolved arguments parse as its verb's options (a number where the verb takes one, a value
    in range, the required options given): checked for every stage before the first one starts, so that a bad value
    (``--set steps=abc``) changes nothing. Paths need not exist yet (an earlier stage writes them). The error names
    the file, the stage and the option."""
    from tinytool.errors import TinytoolError

    stage = recipe.stages[index]
    prog, target = f"tinytool {stage.run}", verb_target(stage.run)
    try:
        if stage.kind == "config":
            from tinytool.clikit import check_file_values
            from tinytool.train.config import RunOptions, check_config_values

            check = check_config_values if issubclass(target, RunOptions) else check_file_values
            check(target, {**args, **positional_args(stage.run, positional)}, prog)
        else:
            from tinytool.clikit import check_args

            check_args(target, stage_flags(args, positional, bare_flags(stage.run)), prog)
    except TinytoolError as e:
        raise UserInputError(f"{recipe.path}: stages[{index}] ({stage.name}): {e}",
                             fix="correct the value in the recipe, or the --set that gives it "
                                 f"(tinytool {stage.run} --help lists its options)") from None


_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
#: the recipes that ship with tinytool (``tinytool run star`` reads ``star.yaml`` from here)
SHIPPED = Path(__file__).resolve().parent / "shipped"
_REF = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}")


@dataclass
class Stage:
    name: str
    run: str
    args: dict[str, Any] = field(default_factory=dict)
    positional: list[Any] = field(default_factory=list)
    #: the options of ``args`` the recipe gave as positional arguments of a config verb, in their order (a run's
    #: fingerprint reads them as written: `tinytool.recipes.runner.fingerprint`)
    from_positional: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return VERBS[self.run]


@dataclass
class Recipe:
    name: str
    path: Path
    vars: dict[str, Any]
    stages: list[Stage]

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise UserInputError(f"{self.path}: no stage named {name!r}",
                             fix=f"stages: {', '.join(s.name for s in self.stages)}")


def _fail(path: Path, where: str, msg: str) -> UserInputError:
    return UserInputError(f"{path}: {where}: {msg}")


def shipped_recipes() -> list[str]:
    """The names of the recipes that ship with tinytool."""
    return sorted(p.stem for p in SHIPPED.glob("*.yaml"))


def find_recipe(spec: str | Path) -> Path:
    """A recipe file: ``spec`` itself when it is a file, else the shipped recipe of that name."""
    path = Path(spec)
    if path.is_file():
        return path
    shipped = SHIPPED / f"{spec}.yaml"
    if shipped.is_file() and path.suffix not in (".yaml", ".yml"):
        return shipped
    raise UserInputError(f"{spec}: no such recipe file, and no shipped recipe of that name",
                         fix=f"give a recipe YAML, or one of: {', '.join(shipped_recipes())}")


def load_recipe(path: str | Path, overrides: dict[str, Any] | None = None) -> Recipe:
    """Read and check a recipe; ``overrides`` replace ``vars`` (strings are read as YAML scalars)."""
    import yaml

    from tinytool.io import read_yaml

    path = Path(path)
    data = read_yaml(path, "recipe file")
    if not isinstance(data, dict):
        raise UserInputError(f"{path}: a recipe is a mapping with 'stages' (and optionally 'name', 'vars')")
    unknown = set(data) - {"name", "vars", "stages", "description", "matrix", "compare"}  # the last two: recipes.matrix
    if unknown:
        raise _fail(path, "top level", f"unknown key(s) {', '.join(sorted(unknown))}")
    variables = dict(data.get("vars") or {})
    if not isinstance(data.get("vars") or {}, dict):
        raise _fail(path, "vars", "expected a mapping of name: value")
    for key, value in (overrides or {}).items():
        if key not in variables:
            raise UserInputError(f"--set {key}=…: the recipe has no variable {key!r}",
                                 fix=f"variables: {', '.join(variables) or 'none'}")
        variables[key] = yaml.safe_load(value) if isinstance(value, str) else value
    raw = data.get("stages")
    if not isinstance(raw, list) or not raw:
        raise _fail(path, "stages", "expected a non-empty list of stages")
    stages: list[Stage] = []
    for i, s in enumerate(raw):
        where = f"stages[{i}]"
        if not isinstance(s, dict):
            raise _fail(path, where, "expected a mapping with 'name', 'run' and 'args'")
        extra = set(s) - {"name", "run", "args", "positional"}
        if extra:
            raise _fail(path, where, f"unknown key(s) {', '.join(sorted(extra))}")
        name, run = s.get("name"), s.get("run")
        if not isinstance(name, str) or not _NAME.match(name):
            raise _fail(path, f"{where}.name", f"expected a lower-case name (letters, digits, - and _), got {name!r}")
        if name in {st.name for st in stages} or name in variables or name in ("out", "run"):
            raise _fail(path, f"{where}.name", f"{name!r} is already a stage or variable name")
        if run not in VERBS:
            raise _fail(path, f"{where}.run", f"unknown verb {run!r}; one of: {', '.join(VERBS)}")
        args = s.get("args") or {}
        if not isinstance(args, dict):
            raise _fail(path, f"{where}.args", "expected a mapping of option: value")
        positional = s.get("positional") or []
        if not isinstance(positional, list):
            raise _fail(path, f"{where}.positional", "expected a list")
        try:  # a config verb's positional arguments are options of its config file
            folded = positional_args(run, positional)
        except UserInputError as e:
            raise UserInputError(f"{path}: {where}.positional: {e}", fix=e.fix) from None
        stage = Stage(name, run, {**dict(args), **folded}, [] if VERBS[run] == "config" else list(positional),
                      tuple(folded))
        known = set(variables) | {st.name for st in stages} | {"out", "run"}
        for ref in _refs([stage.args, stage.positional]):
            if ref not in known:
                raise _fail(path, where, f"{{{ref}}} names no variable or earlier stage")
        stages.append(stage)
    return Recipe(str(data.get("name") or path.stem), path, variables, stages)


def _refs(value: Any) -> set[str]:
    if isinstance(value, str):
        return set(_REF.findall(value))
    if isinstance(value, dict):
        return set().union(*(_refs(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_refs(v) for v in value)) if value else set()
    return set()


def resolve(value: Any, context: dict[str, Any]) -> Any:
    """``value`` with its ``{name}`` references replaced from ``context``."""
    if isinstance(value, str):
        whole = _REF.fullmatch(value)
        if whole:
            return context[whole.group(1)]
        return _REF.sub(lambda m: str(context[m.group(1)]), value)
    if isinstance(value, dict):
        return {k: resolve(v, context) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, context) for v in value]
    return value


def upstream(stage: Stage, recipe: Recipe) -> list[str]:
    """The earlier stages whose outputs ``stage`` reads."""
    names = {s.name for s in recipe.stages}
    return sorted(r for r in _refs([stage.args, stage.positional]) if r in names)


__all__ = ["SHIPPED", "VERBS", "VERB_SOURCES", "Recipe", "Stage", "bare_flags", "check_stage_args", "check_stage_values",
           "find_recipe", "load_recipe", "positional_args", "resolve", "shipped_recipes", "stage_flags", "upstream", "verb_options",
           "verb_target"]
