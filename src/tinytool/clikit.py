"""Shared CLI plumbing: one way to report a user error and exit."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

err = Console(stderr=True, soft_wrap=True)  # never wrap: paths in messages stay on one line


def fail(msg: object, code: int = 2) -> NoReturn:
    """Print ``error: MSG`` to stderr on one logical line (never wrapped, so paths stay greppable) and exit."""
    err.print(f"[red]error:[/red] {escape(str(msg))}", highlight=False)
    raise typer.Exit(code)
