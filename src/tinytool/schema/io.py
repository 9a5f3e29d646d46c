"""JSONL reading and writing with errors that name file, line and field."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from tinytool.schema.errors import SchemaError
from tinytool.schema.types import Conversation

T = TypeVar("T")


def iter_jsonl(
    path: str | os.PathLike, parse: Callable[[Any], T] = Conversation.from_dict
) -> Iterator[tuple[int, T]]:
    """Yield ``(line_number, parse(record))`` for each non-blank line of a JSONL file.

    A line that is not JSON, or a record ``parse`` rejects, raises `SchemaError` located at
    ``file:line`` with the field path the parser reported.
    """
    name = str(path)
    with open(path, encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.rstrip("\r\n"))  # columns then count within the line
            except (ValueError, RecursionError) as e:  # ValueError: also an over-long integer
                if isinstance(e, json.JSONDecodeError):
                    detail = e.msg
                else:
                    detail = "nested too deeply" if isinstance(e, RecursionError) else str(e)
                col = f" (column {e.colno})" if isinstance(e, json.JSONDecodeError) else ""
                raise SchemaError(f"not valid JSON: {detail}{col}", file=name, line=lineno) from None
            try:
                yield lineno, parse(record)
            except SchemaError as e:
                raise e.located(name, lineno) from None


def read_jsonl(path: str | os.PathLike, parse: Callable[[Any], T] = Conversation.from_dict) -> list[T]:
    """All records of a JSONL file (see `iter_jsonl`)."""
    return [rec for _, rec in iter_jsonl(path, parse)]


def write_jsonl(path: str | os.PathLike, records: Iterable[Any]) -> int:
    """Write records (dicts or objects with ``to_dict``) atomically: a crash never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    n = 0
    with open(tmp, "w", encoding="utf-8") as fh:
        for r in records:
            d = r.to_dict() if hasattr(r, "to_dict") else r
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")
            n += 1
    os.replace(tmp, path)
    return n
