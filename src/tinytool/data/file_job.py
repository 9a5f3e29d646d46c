"""The options every verb that reads one conversation JSONL and writes another shares: `FileJob`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from tinytool.clikit import check_settings, setting


@dataclass(frozen=True, kw_only=True)
class FileJob:
    """A config whose verb reads ``data`` (and the other files of `inputs`) and writes ``out``, checked when built:
    its settings within their bounds, the inputs exist and none is the output, which is new, empty or
    ``overwrite``. A subclass adds its own settings."""

    data: Path = setting(..., "Conversation JSONL.", argument=True, exists=True, dir_okay=False)
    out: Path = setting(..., "Conversation JSONL to write.", "-o", dir_okay=False)
    overwrite: bool = setting(False, "Replace an existing non-empty output file.")

    #: the flag of the files `inputs` names, for its errors
    INPUTS_FLAG: ClassVar[str] = "--data"

    def inputs(self) -> list[Path]:
        """The files the verb reads besides ``data``."""
        return []

    def __post_init__(self) -> None:
        from tinytool.io import check_data_files, check_not_input, check_output_file

        object.__setattr__(self, "data", Path(self.data))
        object.__setattr__(self, "out", Path(self.out))
        check_settings(self)
        check_data_files([self.data], "DATA")
        check_data_files(self.inputs(), self.INPUTS_FLAG)
        check_not_input(self.out, self.data, *self.inputs())
        check_output_file(self.out, self.overwrite)


__all__ = ["FileJob"]
