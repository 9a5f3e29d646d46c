"""What the training verbs' command lines share: flags and ``--config`` into a config, ``--help`` in the look of
every other verb's, the resolved config shown once training starts, and a finished run reported as such."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from tinytool.clikit import err


def run_training_verb(config_cls: type, train: Callable[..., dict[str, Any]], args: list[str], prog: str,
                      doc: str | None) -> tuple[Any, dict[str, Any] | None]:
    """Parse ``args`` into ``config_cls``, run ``train(cfg, callbacks=...)``; returns ``(cfg, summary)``, the
    summary None when the run had already finished (and that was said). ``-h``/``--help`` among ``args`` prints
    the help (`print_config_help`) and ends the verb."""
    from tinytool.train.callbacks import ShowConfig
    from tinytool.train.config import describe_config, parse_config

    if "-h" in args or "--help" in args:
        print_config_help(config_cls, prog, doc)
        raise typer.Exit(0)
    cfg = parse_config(config_cls, args, prog=prog)
    show = ShowConfig(lambda text: err.print(text, highlight=False, markup=False), describe_config(cfg))
    summary = train(cfg, callbacks=[show])
    if summary.get("already_finished"):
        more = "--max-seconds" if summary.get("stopped_by_time") is not None else "--max-steps"
        err.print(f"{cfg.output_dir} already holds this finished run (step {summary['global_step']}): nothing to do; "
                  f"--overwrite trains it again, a larger {more} continues it", highlight=False, markup=False)
        return cfg, None
    return cfg, summary


def say_time_stop(cfg: Any, summary: dict[str, Any]) -> None:
    """The verb's last line when ``--max-seconds`` ended training before its step target: where it stopped, that a
    checkpoint of that step was saved, and how to go on from it."""
    step = summary.get("stopped_by_time")
    if step is not None:
        err.print(f"stopped by --max-seconds {cfg.max_seconds:g} at step {step} (checkpoint-{step} saved): the model "
                  f"saved is step {step}'s; a larger --max-seconds continues from it", highlight=False,
                  markup=False)


def print_config_help(config_cls: type, prog: str, doc: str | None) -> None:
    """The ``--help`` of a verb whose flags are ``config_cls``'s fields, in the look of every other verb's (Typer's
    panels and styles): the verb's docstring, then tinytool's options, then the fields of the TRL (or transformers)
    config it extends in a panel of their own. Each option is one row, as a user types it: its long alias where it
    has one (``--out``, not ``--output_dir`` or ``--output-dir``, which the parser accepts too) beside its short
    one, a boolean as ``--x/--no-x``; the epilog names the ``--config`` keys of the options shown by another name."""
    import argparse
    import dataclasses
    import inspect

    from rich.padding import Padding
    from rich.text import Text
    from typer import rich_utils as ty

    from tinytool.train.config import config_parser

    parser = config_parser(config_cls, prog)
    positive = {a.dest: a for a in reversed(parser._actions) if a.const is not False}  # a field's first action
    fields = {f.name: f for f in dataclasses.fields(config_cls) if f.init and f.name in positive
              and positive[f.name].help != argparse.SUPPRESS}
    own = [n for n in config_cls.own_fields() if n in fields]
    base = next(k for k in config_cls.__mro__ if dataclasses.is_dataclass(k) and not k.__module__.startswith("tinytool."))
    package = base.__module__.split(".")[0]
    rows = [_help_row(fields[n], positive[n]) for n in own]
    config_help = "YAML file of option: value (OUT/config.yaml is one); the flags given beside it override it."
    rows.append(("--config", "", "<path>", config_help, None, False))
    rows.append(("--help", "-h", "", "Show this message and exit.", None, False))
    theirs = [_help_row(fields[n], positive[n]) for n in fields if n not in own]
    renamed = [f"{row[0].split('/')[0]} is {n}" for n, row in zip(own, rows)
               if row[0].split("/")[0] != "--" + n.replace("_", "-")]
    console = _help_console()
    console.print(Padding(ty.highlighter(f"Usage: {prog} [OPTIONS]"), 1), style=ty.STYLE_USAGE_COMMAND)
    paragraphs = [" ".join(p.split()) for p in inspect.cleandoc(doc or "").split("\n\n") if p.strip()]
    if paragraphs:
        text = Text(paragraphs[0], style=ty.STYLE_HELPTEXT_FIRST_LINE)
        for p in paragraphs[1:]:
            text.append("\n\n" + p, style=ty.STYLE_HELPTEXT)
        console.print(Padding(ty.highlighter(text), (0, 1, 1, 1)))
    console.print(_help_panel(ty.OPTIONS_PANEL_TITLE, rows))
    owner = {"trl": "TRL's", "transformers": "transformers'"}.get(package, f"{package}'s")
    console.print(_help_panel(f"Options of {owner} {base.__name__}", theirs))
    console.print(Padding(ty.highlighter(
        "In a --config file an option's key is its field's name, the flag without -- and with _ for -; other "
        f"names: {', '.join(renamed)}."), 1))


#: a row of `print_config_help`: long flag(s), short flag, type, help, default to show (None: none), required
_Row = tuple[str, str, str, str, Any, bool]


def _help_row(f: Any, action: Any) -> _Row:
    """How a config field shows in ``--help``; its long flag is its first long alias, else its name with - for _."""
    import dataclasses
    from enum import Enum

    from tinytool.train.config import field_default

    aliases = [s for s in action.option_strings if s not in (f"--{f.name}", "--" + f.name.replace("_", "-"))]
    flag = next((s for s in aliases if s.startswith("--")), "--" + f.name.replace("_", "-"))
    short = next((s for s in aliases if not s.startswith("--")), "")
    default = field_default(f)
    required = default is dataclasses.MISSING
    default = default.value if isinstance(default, Enum) else default
    text = (action.help or "").replace("%%", "%")
    if action.const is True and action.nargs == "?":  # a boolean
        kind, no = "bool", f"--no-{flag[2:]}"
        flags = f"{flag}/{no}" if len(flag + no) < 32 else f"{flag}/\n{no}"  # a long pair: wrapped after the /
        default = (flag if default else f"--no-{flag[2:]}")[2:] if isinstance(default, bool) else default
    else:
        name = getattr(action.type, "__name__", "")
        kind = name if name in ("int", "float") else "str"
        listed = [str(c) for c in f.metadata.get("choices") or action.choices or ()]
        choices = "|".join(listed)
        if choices and len(choices) <= 16:
            kind = choices
        elif choices and not all(c in text for c in listed):  # a help that names them all says enough
            text += f" One of: {choices.replace('|', ', ')}."
        flags, kind = flag, kind + ("..." if action.nargs in ("+", "*") else "")
    shown = None if required or default in (None, [], {}, "") or "default" in text else default
    return flags, short, f"<{kind}>", text, shown, required


def _help_panel(title: str, rows: list[_Row]) -> Any:
    """Rows in a panel as Typer draws one, with room for long flags: the flags are never cut, the help wraps."""
    from rich.columns import Columns
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text
    from typer import rich_utils as ty

    table = Table(highlight=True, show_header=False, expand=True, box=None, pad_edge=False, padding=(0, 1))
    required = any(r[5] for r in rows)
    if required:
        table.add_column(no_wrap=True)
    for _ in range(3):
        table.add_column(no_wrap=True)
    table.add_column(ratio=1, overflow="fold")
    for flags, short, kind, text, default, req in rows:
        help_parts = [ty.highlighter(Text(text, style=ty.STYLE_OPTION_HELP, overflow="fold"))]
        if default is not None:
            help_parts.append(Text(ty.DEFAULT_STRING.format(default), style=ty.STYLE_OPTION_DEFAULT, overflow="fold"))
        if req:
            help_parts.append(Text(ty.REQUIRED_LONG_STRING, style=ty.STYLE_REQUIRED_LONG))
        positive, _, negative = flags.partition("/")
        flags_cell = ty.highlighter(positive + "/" * bool(negative)) + ty.negative_highlighter(negative)
        cells = [flags_cell, ty.highlighter(short), ty.types_highlighter(Text(kind, style=ty.STYLE_TYPES)),
                 Columns(help_parts)]
        table.add_row(*([Text(ty.REQUIRED_SHORT_STRING if req else "", style=ty.STYLE_REQUIRED_SHORT)] * required),
                      *cells)
    return Panel(table, border_style=ty.STYLE_OPTIONS_PANEL_BORDER, title=title, title_align=ty.ALIGN_OPTIONS_PANEL)


def _help_console() -> Any:
    """A console with Typer's help styles."""
    from rich.console import Console
    from rich.theme import Theme
    from typer import rich_utils as ty

    theme = Theme({"option": ty.STYLE_OPTION, "switch": ty.STYLE_SWITCH, "negative_option": ty.STYLE_NEGATIVE_OPTION,
                   "negative_switch": ty.STYLE_NEGATIVE_SWITCH, "types": ty.STYLE_TYPES,
                   "types_sep": ty.STYLE_TYPES_SEPARATOR, "usage": ty.STYLE_USAGE})
    return Console(theme=theme, highlighter=ty.highlighter, color_system=ty.COLOR_SYSTEM,
                   force_terminal=ty.FORCE_TERMINAL, width=ty.MAX_WIDTH)
