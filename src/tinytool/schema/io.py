"""JSONL reading and writing with errors that name file, line and field."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn, TypeVar

from tinytool import io as tio
from tinytool.schema.errors import SchemaError
from tinytool.schema.types import Conversation

T = TypeVar("T")


def iter_jsonl(
    path: str | os.PathLike, parse: Callable[[Any], T] = Conversation.from_dict
) -> Iterator[tuple[int, T]]:
    """Yield ``(line_number, parse(record))`` for each non-blank line of a JSONL file.

    A line that is not UTF-8 or not JSON, or a record ``parse`` rejects, raises `SchemaError`
    located at ``file:line`` with the field path the parser reported.
    """
    name = str(path)

    def bad_line(lineno: int, reason: str) -> NoReturn:
        if lineno == 1 and _json_array(path):
            raise _array_error(name)
        e = SchemaError(reason, file=name, line=lineno)
        e.fix = ("convert the file to UTF-8" if reason.startswith("not UTF-8") else
                 "correct or remove that line: each line of a JSONL file is one JSON object")
        raise e

    for lineno, record in tio.iter_jsonl_rows(path, on_bad=bad_line):
        try:
            parsed = parse(record)
        except SchemaError as e:
            if lineno == 1 and isinstance(record, list):  # a one-line JSON array of the records
                raise _array_error(name) from None
            raise e.located(name, lineno) from None
        yield lineno, parsed


def _json_array(path: str | os.PathLike) -> bool:
    """Whether the file starts (after a byte order mark and blanks) with ``[``: a JSON array, not JSONL."""
    with open(path, "rb") as fh:
        head = fh.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    return head.startswith(b"[")


def _array_error(name: str) -> SchemaError:
    e = SchemaError("the file is a JSON array, not JSONL (one JSON object per line)", file=name, line=1)
    e.fix = (f"write one record per line, e.g. python -c \"import json,sys; [print(json.dumps(r)) for r in "
             f"json.load(open(sys.argv[1]))]\" {name} > records.jsonl")
    return e


def read_jsonl(path: str | os.PathLike, parse: Callable[[Any], T] = Conversation.from_dict) -> list[T]:
    """All records of a JSONL file (see `iter_jsonl`)."""
    return [rec for _, rec in iter_jsonl(path, parse)]


def write_jsonl(path: str | os.PathLike, records: Iterable[Any]) -> int:
    """Write records (dicts or objects with ``to_dict``) atomically: a crash or Ctrl-C never leaves
    half a file nor a temporary; returns how many."""
    return tio.write_jsonl(path, records)
