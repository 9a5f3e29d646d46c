"""Validation errors that say where: file, line and field."""

from __future__ import annotations

from tinytool.errors import TinytoolError


class SchemaError(TinytoolError, ValueError):
    """A record does not fit the data model.

    ``field`` is a dotted/indexed path inside the record (``messages[2].tool_calls[0].name``);
    ``file`` and ``line`` are filled in by the JSONL reader, so the message a user sees reads
    ``train.jsonl:17: messages[2].role: expected one of ...``.
    """

    fix = "correct the field named in the record at that line (or leave the record out)"

    def __init__(self, message: str, field: str = "", file: str | None = None, line: int | None = None):
        self.reason = message
        self.field = field
        self.file = file
        self.line = line
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.file is not None:
            where = f"{self.file}:{self.line}: " if self.line is not None else f"{self.file}: "
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.reason}"

    def nested(self, prefix: str) -> SchemaError:
        """The same error seen from one level up: ``prefix`` is prepended to the field path."""
        if not prefix:
            return self
        sep = "" if self.field.startswith("[") or not self.field else "."
        return SchemaError(self.reason, f"{prefix}{sep}{self.field}", self.file, self.line)

    def located(self, file: str, line: int | None) -> SchemaError:
        return SchemaError(self.reason, self.field, file, line)
