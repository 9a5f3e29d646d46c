"""Shared CLI plumbing: one error path for every verb.

Build every Typer app with `make_app` (or pass ``cls=TinytoolGroup`` to ``typer.Typer`` and
``cls=TinytoolCommand`` to ``@app.command``). A command that raises `tinytool.errors.TinytoolError`
then ends with

    error: <message>
    fix: <what to do>          (only when the error has a fix)

on standard error and exit code 2, without a traceback; so does a usage error click finds (an
unknown option, a bad value: ``error: No such option: --limit`` / ``fix: see tinytool teacher
rollout --help``), while a bare group still shows its help; Ctrl-C ends with one line (``interrupted``,
or what the verb left, see `on_interrupt`) and exit code 130. Any other exception is a bug and keeps
its traceback.

A verb whose settings are a config dataclass declares each option once, on the field (`setting`: help, default,
short aliases, bounds), and takes the fields as options beside its own (`config_options`, `config_values`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import typing
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import click
import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand, TyperGroup

from tinytool.errors import TinytoolError, UserInputError

try:  # typer >= 0.26 parses with its own copy of click, whose exceptions are other classes
    from typer._click import exceptions as _typer_click
    from typer._click.globals import get_current_context as _typer_context
except ImportError:  # pragma: no cover - an older typer parses with click itself
    _typer_click = click.exceptions
    _typer_context = click.get_current_context

#: click's usage errors (unknown option, bad value, missing argument, unknown command) ...
_USAGE_ERRORS: tuple[type[Exception], ...] = (click.UsageError, _typer_click.UsageError)
#: ... except the one a bare group raises to show its help
_SHOW_HELP: tuple[type[Exception], ...] = tuple(  # click < 8.2 has no such class: its bare groups print help
    cls for mod in (click.exceptions, _typer_click) if (cls := getattr(mod, "NoArgsIsHelpError", None)) is not None)

err = Console(stderr=True, soft_wrap=True)  # never wrap: paths in messages stay on one line

#: exit code of a user error (bad flag, input or output) and of an interrupted verb
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C that knows what the verb left behind (``str(e)``, e.g. ``"OUT unchanged"``)."""


def _help_fix() -> str | None:
    """``see tinytool VERB --help`` for the command running now (None outside a command)."""
    ctx = _typer_context(silent=True) or click.get_current_context(silent=True)
    return f"see {ctx.command_path} --help" if ctx is not None else None


def print_error(e: TinytoolError | str, fix: str | None = None) -> None:
    """Print ``error: MESSAGE`` and ``fix: FIX`` to stderr, each on one line. The fix is ``fix``, else the error's
    own, else where to read the running command's usage: every error says what to do."""
    message = str(e)
    fix = fix or getattr(e, "fix", None) or _help_fix()
    err.print(f"[red]error:[/red] {escape(message)}", highlight=False)
    if fix:
        err.print(f"fix: {escape(fix)}", highlight=False)


def _interrupted(e: KeyboardInterrupt) -> NoReturn:
    note = str(e) if isinstance(e, Interrupted) else ""
    err.print(f"interrupted; {escape(note)}" if note else "interrupted", highlight=False)
    raise typer.Exit(EXIT_INTERRUPTED) from None


def _usage_error(e: Any, name: str | None) -> NoReturn:
    """A flag click could not use (unknown option, bad value, missing argument, unknown command):
    one line and where to read the usage, like every other user error."""
    path = e.ctx.command_path if e.ctx is not None else (name or "tinytool")
    print_error(e.format_message(), fix=f"see {path} --help")
    raise typer.Exit(EXIT_USER_ERROR) from None


class _Guarded:
    """Mixin for click commands: user errors (usage errors included) and Ctrl-C end the command
    with one message. Option help is shown as written: a ``[default: …]`` in it is text, not Rich markup
    (which would swallow it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
        for param in getattr(self, "params", []):
            if getattr(param, "help", None) and "[" in param.help and "\\[" not in param.help:
                param.help = param.help.replace("[", "\\[")

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)  # type: ignore[misc]
        except _SHOW_HELP:  # a bare group: click shows its help
            raise
        except _USAGE_ERRORS as e:
            _usage_error(e, getattr(self, "name", None))
        except TinytoolError as e:  # raised by a parameter callback
            print_error(e)
            raise typer.Exit(EXIT_USER_ERROR) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)  # type: ignore[misc]
        except _SHOW_HELP:
            raise
        except _USAGE_ERRORS as e:  # e.g. an unknown sub-command, resolved while the group runs
            _usage_error(e, ctx.command_path)
        except TinytoolError as e:
            print_error(e)
            raise typer.Exit(EXIT_USER_ERROR) from None
        except KeyboardInterrupt as e:
            _interrupted(e)


class TinytoolGroup(_Guarded, TyperGroup):
    """A Typer group whose commands (sub-apps included) share the one error path."""


class TinytoolCommand(_Guarded, TyperCommand):
    """A Typer command with the one error path (used when an app has a single command)."""


class TinytoolTyper(typer.Typer):
    """``typer.Typer`` whose group and commands use `TinytoolGroup` / `TinytoolCommand`."""

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", TinytoolCommand)
        return super().command(*args, **kwargs)


def make_app(**typer_kwargs: Any) -> typer.Typer:
    """A Typer app with the one error path; takes ``typer.Typer``'s keyword arguments
    (``add_completion`` defaults to False)."""
    typer_kwargs.setdefault("cls", TinytoolGroup)
    typer_kwargs.setdefault("add_completion", False)
    return TinytoolTyper(**typer_kwargs)


def left_note(out: str | os.PathLike, existed: bool | None = None) -> str:
    """What an interrupted verb left at ``out`` when it writes it as a whole: ``OUT unchanged``, or ``nothing written
    to OUT`` where nothing was there (``existed``; None: whether ``out`` exists now)."""
    if existed is None:
        existed = Path(out).exists()
    return f"{out} unchanged" if existed else f"nothing written to {out}"


@contextlib.contextmanager
def on_interrupt(note: str | Callable[[], str]) -> Iterator[None]:
    """Turn a Ctrl-C inside the block into `Interrupted(note)`, so the verb's last line says what it
    left (``interrupted; OUT unchanged``). A callable ``note`` is asked at the interrupt, for a verb whose
    output grows while it runs."""
    try:
        yield
    except Interrupted:
        raise
    except KeyboardInterrupt:
        raise Interrupted(note() if callable(note) else note) from None


#: settings of a command whose flags are parsed from a config dataclass (`tinytool.train.config.parse_config`):
#: typer hands every argument, ``--help`` included, through as ``ctx.args``
passthrough = {
    "context_settings": {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
    "add_help_option": False,
}


def _parse_unchecked(params: list[inspect.Parameter], args: list[str], prog: str,
                     defaults: dict[str, Any] | None = None) -> None:
    """Parse ``args`` (over ``defaults``, as a config file's values) as a Typer command of ``params`` would, without
    running it: an unknown option, a missing one or a value its option refuses (``--limit abc``, ``--limit 0``
    where the least is 1) is a `UserInputError` with click's message. A path need not exist yet (an earlier step
    may write it); whether it is a file or a folder is checked where it exists."""
    import copy

    def unchecked(info: Any) -> Any:  # a copy of a parameter's declaration that lets a missing path pass
        if not getattr(info, "exists", False):
            return info
        info = copy.copy(info)
        info.exists = False
        return info

    loose = []
    for p in params:
        annotation = p.annotation
        if typing.get_origin(annotation) is typing.Annotated:
            base, *meta = typing.get_args(annotation)
            annotation = typing.Annotated[(base, *map(unchecked, meta))]
        loose.append(p.replace(default=unchecked(p.default), annotation=annotation))

    def stand_in(*args, **kwargs):  # typer reads its parameters from the signature below, never these names
        """The command's parameters, without its work."""

    stand_in.__signature__ = inspect.Signature(loose)  # type: ignore[attr-defined]
    app = typer.Typer(add_completion=False)
    app.command()(stand_in)
    try:
        typer.main.get_command(app).make_context(prog, list(args), default_map=defaults)
    except _USAGE_ERRORS as e:
        raise UserInputError(f"{prog}: {e.format_message()}", fix=f"see {prog} --help") from None


# ---- options derived from a config dataclass ------------------------------------------------------------------------

#: what a field's metadata may say of its option, and the ``typer.Option`` keyword each is passed as
_OPTION_KEYS = {"help": "help", "min": "min", "max": "max", "metavar": "metavar", "panel": "rich_help_panel",
                "exists": "exists", "file_okay": "file_okay", "dir_okay": "dir_okay", "parser": "parser",
                "show_default": "show_default"}
_PATH_KEYS = ("exists", "file_okay", "dir_okay")


def setting(default: Any, help: str, *aliases: str, **meta: Any) -> Any:
    """A field of a config dataclass that is also a command-line option: the one way a verb's option is declared,
    for a Typer command (`config_options`) and for a training config's parser (`tinytool.train.config.parse_config`)
    alike, and a key of the verb's ``--config`` YAML. Its ``default`` (``...``: required; ``factory=`` in ``meta``
    for a default made by a function), its ``help`` for ``--help``, short ``aliases`` of its flag
    (``--name-with-dashes``). ``meta`` may also hold the option's bounds (``min``, ``max``) and ``choices`` (checked
    when the config is built), the ``panel`` of ``--help`` it is listed in, ``exists``/``file_okay``/``dir_okay`` for
    a path, for a value given as text its ``parse`` (text → value; a ``metavar`` to show, a ``flag_default`` text
    where the flag's default is not the field's), ``argument=True`` for a positional argument of the command,
    ``key`` for an option named otherwise than its field (``key="from"``: ``--from``, and ``from:`` in a file; see
    `option_key`), ``negatable=True`` for a boolean that also takes ``--no-NAME`` (or the flag given:
    ``"--keep-duplicates"``), for a Typer command a click ``parser`` (text → value, a file's values too; an error of
    it names the flag) and ``show_default``, and for a training config's flag an argparse ``action``."""
    factory = meta.pop("factory", None)
    metadata = {"help": help, "aliases": list(aliases), **meta}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    if default is ...:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def _option_type(hint: Any, meta: typing.Mapping[str, Any], default: Any) -> Any:
    """The type typer parses a field's option as: text for a field with a ``parse``, a path for a path field."""
    if "parse" in meta:
        return str if isinstance(default, str) else str | None
    if any(key in meta for key in _PATH_KEYS):
        listed = list in (typing.get_origin(hint), *map(typing.get_origin, typing.get_args(hint)))
        path = list[Path] if listed else Path
        return path if default is ... else path | None
    return hint


def _option(cls: type, f: dataclasses.Field) -> inspect.Parameter:
    """The keyword parameter of a Typer command that is the option of field ``f`` of ``cls``."""
    meta = f.metadata
    if "help" not in meta:
        raise TypeError(f"{cls.__name__}.{f.name} has no help: declare it with tinytool.clikit.setting, or leave it "
                        "out of the command's options (skip)")
    if "flag_default" in meta:
        default = meta["flag_default"]
    elif "parse" in meta:
        default = None  # the flag left out: the field's own default
    elif f.default is not dataclasses.MISSING:
        default = f.default
    elif f.default_factory is not dataclasses.MISSING:
        default = f.default_factory()
    else:
        default = ...
    options = {key: meta[name] for name, key in _OPTION_KEYS.items() if name in meta}
    if meta.get("argument"):
        info = typer.Argument(default, **options)
    else:
        flag = "--" + option_key(f).replace("_", "-")
        negation = meta.get("negatable")
        if negation:
            flag += "/" + (negation if isinstance(negation, str) else "--no-" + f.name.replace("_", "-"))
        info = typer.Option(default, flag, *meta.get("aliases", ()), **options)
    hint = typing.get_type_hints(cls)[f.name]
    return inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=info,
                             annotation=_option_type(hint, meta, default))


def option_of(cls: type, name: str) -> Any:
    """The ``typer.Option`` of field ``name`` of ``cls``, for a command that takes that one option as its own."""
    return _option(cls, next(f for f in dataclasses.fields(cls) if f.name == name)).default


def config_options(cls: type, *, skip: Iterable[str] = (), after: str | None = None
                   ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A Typer command that takes the fields of the config dataclass ``cls`` as options beside its own, gathered
    in its ``**values`` (see `config_values`); ``skip`` names fields it does not take (it declares them itself or
    fixes them). In ``--help`` the required fields come first, then the command's own options up to ``after``
    (none: no own option), the other fields in their order, and the rest of its own options."""
    def wrap(command: Callable[..., Any]) -> Callable[..., Any]:
        own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
               for p in inspect.signature(command, eval_str=True).parameters.values()
               if p.kind is not inspect.Parameter.VAR_KEYWORD]
        left_out = set(skip)
        if left_out - {f.name for f in dataclasses.fields(cls)}:
            raise TypeError(f"{command.__name__}: skip names no field of {cls.__name__}: {sorted(left_out)}")
        if after is not None and after not in [p.name for p in own]:
            raise TypeError(f"{command.__name__}: after={after!r} names none of its parameters")
        fields = [_option(cls, f) for f in dataclasses.fields(cls) if f.name not in left_out and f.init]
        required = [p for p in fields if p.default.default is ...]
        cut = next((i + 1 for i, p in enumerate(own) if p.name == after), 0)
        command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [*required, *own[:cut], *(p for p in fields if p not in required), *own[cut:]])
        return command
    return wrap


def config_file(cls: type) -> Any:
    """The ``--config FILE`` option of a `config_options` command whose every option is a field of ``cls``: the
    file's values (a YAML mapping of field: value, `file_values`) are read before the flags (eager) and are the
    options' defaults, so each is converted and checked as its flag is, and a flag given beside the file overrides
    it."""
    def read(ctx: typer.Context, path: Path | None) -> Path | None:
        if path is not None:
            ctx.default_map = {**(ctx.default_map or {}), **file_values(cls, _read_yaml(path), str(path))}
        return path

    return typer.Option(None, "--config", exists=True, dir_okay=False, is_eager=True, callback=read,
                        help="YAML file of option: value (a key is a flag without -- and with _ for -); the flags "
                             "given beside it override it.")


def _read_yaml(path: Path) -> Any:
    import yaml

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise UserInputError(f"{path}: not a YAML file: {' '.join(str(e).split())}",
                             fix="write a mapping of option: value, one a line") from None


def file_values(cls: type, data: Any, source: str) -> dict[str, Any]:
    """A config file's content ``data`` as the values of ``cls``'s options: a mapping whose every key is a field
    (an unknown one is a `UserInputError` naming the closest field), a single value of a list field as a list of
    one, a list for a field read from text (``parse``) as its items joined by commas. ``source`` names the file in
    errors."""
    import difflib

    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UserInputError(f"{source}: a config file holds a mapping of option: value")
    fields = {option_key(f): f for f in dataclasses.fields(cls) if f.init}
    hints = typing.get_type_hints(cls)
    out = {}
    for key, value in data.items():
        if key not in fields:
            close = difflib.get_close_matches(str(key), fields, 1)
            raise UserInputError(f"{source}: unknown option {key!r}" + (f" (did you mean {close[0]!r}?)" if close
                                                                        else ""), fix=f"the options: {', '.join(fields)}")
        name = fields[key].name
        if "parse" in fields[key].metadata:  # read from text, as its flag is: a list is its items joined by commas
            out[name] = ",".join(map(str, value)) if isinstance(value, list) else value
            continue
        listed = list in (typing.get_origin(hints[name]), *map(typing.get_origin, typing.get_args(hints[name])))
        out[name] = [value] if listed and value is not None and not isinstance(value, list) else value
    return out


def option_key(f: dataclasses.Field) -> str:
    """The name of config field ``f``'s option, in a ``--config`` file and (with - for _) as its flag: the field's
    name, or the ``key`` its `setting` gives where the name cannot be a Python name (``from``)."""
    return f.metadata.get("key", f.name)


def check_file_values(cls: type, values: dict[str, Any], prog: str) -> None:
    """Would a ``--config`` file holding ``values`` parse as the options of ``cls`` (`config_file`)? Every key a
    field, every value one its option takes, the required ones given; a `UserInputError` names the option
    otherwise. The config is not built and paths need not exist yet (an earlier step may write them)."""
    params = [_option(cls, f) for f in dataclasses.fields(cls) if f.init]
    _parse_unchecked(params, [], prog, file_values(cls, values, prog))


def config_values(cls: type, values: dict[str, Any], ctx: typer.Context | None = None) -> dict[str, Any]:
    """The values of ``cls``'s fields among a `config_options` command's ``values``, each text of a field with a
    ``parse`` parsed. With the command's ``ctx``, only those given on the command line (a flag left at its default
    leaves what lies underneath: a config file's value, else the field's default)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    out = {}
    for name, value in values.items():
        if ctx is not None:
            source = ctx.get_parameter_source(name)
            if source is None or source.name in ("DEFAULT", "DEFAULT_MAP"):
                continue
        parse = fields[name].metadata.get("parse")
        out[name] = parse(value) if parse is not None and isinstance(value, str) else value
    return out


def flag_name(f: dataclasses.Field) -> str:
    """The flag a user types for config field ``f``: its first long alias (``--out``), else ``--`` and its name with
    - for _."""
    return next((a for a in f.metadata.get("aliases", ()) if a.startswith("--")), "--" + option_key(f).replace("_", "-"))


def check_settings(cfg: Any) -> None:
    """Every field of the config ``cfg`` that declares ``choices`` or bounds (``min``, ``max``) in its metadata
    (`setting`; a library's own fields too) holds a value they allow (each item of a list), checked when the config
    is built: a config file's values and the Python API's never meet the flag parser, and a bad one would otherwise
    fail only once the work has begun. The error names the flag."""
    for f in dataclasses.fields(cfg):
        meta = f.metadata
        if not f.init or not {"choices", "min", "max"} & set(meta):
            continue
        value = getattr(cfg, f.name)
        for v in value if isinstance(value, (list, tuple)) else [value]:
            v = getattr(v, "value", v)  # an enum as its value
            choices, lo, hi = meta.get("choices"), meta.get("min"), meta.get("max")
            if v is None:
                continue
            if choices is not None and v not in choices:
                raise UserInputError(f"{flag_name(f)} must be one of {', '.join(map(str, choices))}, got {v!r}")
            number = isinstance(v, (int, float)) and not isinstance(v, bool)
            if number and ((lo is not None and v < lo) or (hi is not None and v > hi)):
                bounds = f"in [{lo}, {hi}]" if lo is not None and hi is not None else (
                    f">= {lo}" if lo is not None else f"<= {hi}")
                raise UserInputError(f"{flag_name(f)} must be {bounds}, got {v!r}")


def fail(msg: object, code: int = EXIT_USER_ERROR, fix: str | None = None) -> NoReturn:
    """Print ``error: MSG`` and its fix (see `print_error`) to stderr and exit (prefer raising a `TinytoolError`)."""
    print_error(msg if isinstance(msg, TinytoolError) else str(msg), fix=fix)
    raise typer.Exit(code)


__all__ = ["EXIT_INTERRUPTED", "EXIT_USER_ERROR", "Interrupted", "TinytoolCommand", "TinytoolGroup",
           "TinytoolTyper", "check_file_values", "check_settings", "config_file", "config_options", "config_values", "err", "fail", "file_values", "flag_name", "make_app", "on_interrupt",
           "option_key", "option_of", "passthrough", "print_error", "setting"]
