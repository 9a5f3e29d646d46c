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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tinytool.errors import UserInputError
from tinytool.recipes.matrix import Matrix, read_matrix

#: verbs a stage may run and the config class that declares each one's options (`tinytool.clikit.setting`): a stage
#: writes its arguments as that config's YAML and the verb reads it with ``--config``.
#: Verbs that are not stages: serve, mcp serve and sandbox run (servers and a single program, not steps of a
#: method), run and demo (recipes themselves), collect (a loop of its own).
VERB_SOURCES = {
    "data demo": "tinytool.data.cli_demo:DemoJob",
    "data convert": "tinytool.data.cli_convert:ConvertConfig",
    "data mix-irrelevant": "tinytool.data.cli_mix:MixConfig",
    "data select": "tinytool.data.cli_select:SelectConfig",
    "student": "tinytool.distill.cli_student:StudentConfig",
    "merge": "tinytool.models.cli_merge:MergeConfig",
    "sft": "tinytool.train.sft:SFTRunConfig",
    "kto": "tinytool.train.kto:KTORunConfig",
    "rl": "tinytool.rl.config:RLRunConfig",
    "distill": "tinytool.distill.trainer:DistillConfig",
    "teacher rollout": "tinytool.distill.cli_rollout:RolloutConfig",
    "teacher cache": "tinytool.distill.cli_cache:CacheConfig",
    "eval bfcl": "tinytool.eval.cli_eval:BFCLEvalConfig",
    "eval demo": "tinytool.eval.cli_eval:DemoEvalConfig",
    "report": "tinytool.eval.cli_eval:ReportConfig",
    "retrieve": "tinytool.retrieval.cli_retrieve:RetrieveConfig",
    "synth tools": "tinytool.synth.cli_synth:SynthToolsConfig",
    "synth chains": "tinytool.synth.cli_synth:ChainsConfig",
    "synth tasks": "tinytool.synth.cli_synth:TasksConfig",
    "synth trajectories": "tinytool.synth.cli_synth:TrajectoriesConfig",
    "synth envs": "tinytool.synth.cli_synth:EnvsConfig",
}
VERBS = tuple(VERB_SOURCES)


def verb_target(verb: str) -> Any:
    """The config class that declares ``verb``'s options (`VERB_SOURCES`)."""
    import importlib

    module, _, name = VERB_SOURCES[verb].partition(":")
    return getattr(importlib.import_module(module), name)


def verb_options(verb: str) -> set[str]:
    """The argument names a stage running ``verb`` may give: its config's options (`tinytool.clikit.option_key`)."""
    import dataclasses

    from tinytool.clikit import option_key

    return {option_key(f) for f in dataclasses.fields(verb_target(verb)) if f.init}


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
    (``argument`` in their `tinytool.clikit.setting`), in their order, a last one that takes a list taking all that
    are left; more than it takes is an error."""
    import dataclasses
    import typing

    if not positional:
        return {}
    from tinytool.clikit import option_key

    target = verb_target(verb)
    fields = [f for f in dataclasses.fields(target) if f.metadata.get("argument")]
    names = [option_key(f) for f in fields]
    hints = typing.get_type_hints(target)
    last = hints[fields[-1].name] if fields else None
    if last is not None and list in (typing.get_origin(last), *map(typing.get_origin, typing.get_args(last))):
        # the last argument takes a list: it takes what the others leave, as the command line does
        head = dict(zip(names[:-1], positional))
        return {**head, names[-1]: list(positional[len(head):])} if len(positional) >= len(names) else head
    if len(positional) > len(names):
        raise UserInputError(f"{verb} takes {len(names)} positional argument{'s' * (len(names) != 1)}, "
                             f"got {len(positional)}", fix=f"give the options by name in args (tinytool {verb} --help)")
    return dict(zip(names, positional))


def check_stage_values(recipe: Recipe, index: int, args: dict[str, Any]) -> None:
    """Stage ``index``'s resolved arguments parse as its verb's options (a number where the verb takes one, a value
    in range, the required options given): checked for every stage before the first one starts, so that a bad value
    (``--set steps=abc``) changes nothing. Paths need not exist yet (an earlier stage writes them). The error names
    the file, the stage and the option."""
    from tinytool.errors import TinytoolError

    stage = recipe.stages[index]
    prog, target = f"tinytool {stage.run}", verb_target(stage.run)
    try:
        from tinytool.clikit import check_file_values
        from tinytool.train.config import RunOptions, check_config_values

        check = check_config_values if issubclass(target, RunOptions) else check_file_values
        check(target, args, prog)
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
    #: the options of ``args`` the recipe gave as positional arguments of a config verb, in their order (a run's
    #: fingerprint reads them as written: `tinytool.recipes.runner.fingerprint`)
    from_positional: tuple[str, ...] = ()


@dataclass
class Recipe:
    name: str
    path: Path
    vars: dict[str, Any]
    stages: list[Stage]
    #: the cells its stages run in and the comparisons after them (`tinytool.recipes.matrix`; none: one run)
    matrix: Matrix = field(default_factory=lambda: Matrix({}, []))

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
        stage = Stage(name, run, {**dict(args), **folded}, tuple(folded))
        known = set(variables) | {st.name for st in stages} | {"out", "run"}
        for ref in _refs(stage.args):
            if ref not in known:
                raise _fail(path, where, f"{{{ref}}} names no variable or earlier stage")
        stages.append(stage)
    evaluations = [s.name for s in stages if s.run in ("eval bfcl", "eval demo")]
    matrix = read_matrix(data, path, variables, [s.name for s in stages], evaluations)
    return Recipe(str(data.get("name") or path.stem), path, variables, stages, matrix)


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
    return sorted(r for r in _refs(stage.args) if r in names)


__all__ = ["SHIPPED", "VERBS", "VERB_SOURCES", "Recipe", "Stage", "check_stage_args", "check_stage_values",
           "find_recipe", "load_recipe", "positional_args", "resolve", "shipped_recipes", "upstream", "verb_options",
           "verb_target"]
