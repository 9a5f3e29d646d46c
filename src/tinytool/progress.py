"""Progress bars, one way everywhere: rich on standard error.

On a terminal the bar redraws in place; elsewhere (a log file, CI) a line is printed at most every
``log_every`` seconds, so long steps still show that they move.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import Self, TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

T = TypeVar("T")

console = Console(stderr=True, soft_wrap=True)


class ProgressBar:
    """A progress bar for ``total`` units (a spinner when the total is unknown).

    >>> with ProgressBar("rollout", total=100, unit="prompt", done=40) as bar:  # doctest: +SKIP
    ...     bar.advance(8)
    """

    def __init__(self, description: str, total: int | None = None, *, unit: str = "item", done: int = 0,
                 enabled: bool = True, log_every: float = 10.0):
        self.description, self.total, self.unit = description, total, unit
        self.completed = done
        self.enabled = enabled
        self.interactive = enabled and console.is_terminal
        self.log_every = log_every
        self._last_log = time.monotonic()
        self._progress: Progress | None = None
        self._task = None

    def __enter__(self) -> Self:
        if self.interactive:
            counts = MofNCompleteColumn() if self.total is not None else TextColumn("{task.completed}")
            self._progress = Progress(
                SpinnerColumn() if self.total is None else TextColumn(""),
                TextColumn("{task.description}"), BarColumn(), counts, TextColumn(self.unit + "s"),
                TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=False)
            self._progress.__enter__()
            self._task = self._progress.add_task(self.description, total=self.total, completed=self.completed)
        elif self.enabled:
            self._log(force=True)  # off a terminal, say at once that the step started
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)  # type: ignore[arg-type]
        elif self.enabled and exc[0] is None:
            self._log(force=True)

    def _log(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_log >= self.log_every:
            self._last_log = now
            of = f"/{self.total}" if self.total is not None else ""
            print(f"{self.description}: {self.completed}{of} {self.unit}s", file=sys.stderr, flush=True)

    def advance(self, n: int = 1) -> None:
        self.completed += n
        if self._progress is not None:
            self._progress.update(self._task, completed=self.completed)
        elif self.enabled:
            self._log()

    def update(self, *, description: str | None = None, total: int | None = None,
               completed: int | None = None) -> None:
        """Change the label (e.g. the step of a multi-turn batch), the total or the count."""
        if description is not None:
            self.description = description
        if total is not None:
            self.total = total
        if completed is not None:
            self.completed = completed
        if self._progress is not None:
            self._progress.update(self._task, description=self.description, total=self.total,
                                  completed=self.completed)
        elif self.enabled:
            self._log()


def track(items: Iterable[T], description: str, total: int | None = None, *, unit: str = "item",
          enabled: bool = True) -> Iterator[T]:
    """Iterate ``items`` with a progress bar."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with ProgressBar(description, total, unit=unit, enabled=enabled) as bar:
        for item in items:
            yield item
            bar.advance()


__all__ = ["ProgressBar", "console", "track"]
