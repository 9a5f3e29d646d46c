"""The checks every verb that runs a teacher over conversation files shares: `TeacherJob`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, kw_only=True)
class TeacherJob:
    """A config whose verb runs ``teacher`` over the conversation files ``data`` in the prompt ``format`` and
    writes ``out`` (a subclass declares those fields with their help), checked when built: its settings within
    their bounds, ``data`` a list of files that exist, ``format`` a known name, and the output none of the inputs."""

    def __post_init__(self) -> None:
        from tinytool.clikit import check_settings
        from tinytool.formats import resolve_format
        from tinytool.io import check_data_files, check_not_input

        data = self.data if isinstance(self.data, (list, tuple)) else [self.data]  # type: ignore[attr-defined]
        object.__setattr__(self, "data", [Path(p) for p in data])
        object.__setattr__(self, "out", Path(self.out))  # type: ignore[attr-defined]
        object.__setattr__(self, "format", resolve_format(self.format).name)  # type: ignore[attr-defined]
        check_settings(self)
        check_data_files(self.data)
        check_not_input(self.out, self.teacher, *self.data)  # type: ignore[attr-defined]


__all__ = ["TeacherJob"]
