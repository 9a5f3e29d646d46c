"""The one ``--format`` option every verb of the command line shares: one flag, one help text, one default."""

from __future__ import annotations

from typing import Any

import typer

from tinytool.errors import TinytoolError
from tinytool.formats import DEFAULT_FORMAT, FORMAT_HELP, resolve_format


def format_option(default: str | None = None, default_help: str | None = None, *, trained: bool = False) -> Any:
    """The one ``--format``/``-f`` option of every verb: its value arrives resolved, a `PromptFormat` (an unknown
    name is one line naming the choices). ``default`` is the format name, or None when the verb works it out:
    ``trained`` (the format the model was trained in, else the default) or as ``default_help`` says."""
    if trained:
        default_help = f"default: the format the model was trained in, else {DEFAULT_FORMAT}"
    shown = default_help or f"default: {default or DEFAULT_FORMAT}"
    return typer.Option(default, "--format", "-f", parser=_parse, metavar="<str>", show_default=False,
                        help=f"{FORMAT_HELP} [{shown}].")


def _parse(value: Any) -> Any:
    try:
        return resolve_format(value)
    except TinytoolError as e:
        raise typer.BadParameter(str(e).removeprefix("--format: ")) from None


def _name(value: Any) -> str:
    return _parse(value).name


def format_setting(default: str = DEFAULT_FORMAT, *, trained: bool = False) -> Any:
    """`format_option` as a field of a verb's config (`tinytool.clikit.setting`): the same flag, help and message
    for an unknown name, from the command line or the ``--config`` file alike; the field holds the format's name
    (`resolve_format` gives the format). ``trained``: the field is None unless given, and the verb reads the format
    the model was trained in."""
    from tinytool.clikit import setting

    shown = f"the format the model was trained in, else {DEFAULT_FORMAT}" if trained else default
    return setting(None if trained else default, f"{FORMAT_HELP} [default: {shown}].", "-f", parser=_name,
                   metavar="<str>", show_default=False)


__all__ = ["format_option", "format_setting"]
