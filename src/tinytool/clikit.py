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
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
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


def check_args(command: Any, args: list[str], prog: str) -> None:
    """Parse ``args`` as the Typer command function ``command`` parses them, without running it: an unknown option,
    a missing one or a value its option refuses (``--limit abc``, ``--limit 0`` where the least is 1) is a
    `UserInputError` with click's message. A path need not exist yet (an earlier step may write it); whether it is
    a file or a folder is checked where it exists."""
    import copy
    import inspect
    import typing

    def unchecked(info: Any) -> Any:  # a copy of a parameter's declaration that lets a missing path pass
        if not getattr(info, "exists", False):
            return info
        info = copy.copy(info)
        info.exists = False
        return info

    params = []
    for p in inspect.signature(command, eval_str=True).parameters.values():
        annotation = p.annotation
        if typing.get_origin(annotation) is typing.Annotated:
            base, *meta = typing.get_args(annotation)
            annotation = typing.Annotated[(base, *map(unchecked, meta))]
        params.append(p.replace(default=unchecked(p.default), annotation=annotation))

    def stand_in(*args, **kwargs):  # typer reads its parameters from the signature below, never these names
        """The command's parameters, without its work."""

    stand_in.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    app = typer.Typer(add_completion=False)
    app.command()(stand_in)
    try:
        typer.main.get_command(app).make_context(prog, list(args))
    except _USAGE_ERRORS as e:
        raise UserInputError(f"{prog}: {e.format_message()}", fix=f"see {prog} --help") from None


def fail(msg: object, code: int = EXIT_USER_ERROR, fix: str | None = None) -> NoReturn:
    """Print ``error: MSG`` and its fix (see `print_error`) to stderr and exit (prefer raising a `TinytoolError`)."""
    print_error(msg if isinstance(msg, TinytoolError) else str(msg), fix=fix)
    raise typer.Exit(code)


__all__ = ["EXIT_INTERRUPTED", "EXIT_USER_ERROR", "Interrupted", "TinytoolCommand", "TinytoolGroup",
           "TinytoolTyper", "check_args", "err", "fail", "make_app", "on_interrupt", "passthrough",
           "print_error"]
