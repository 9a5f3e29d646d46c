"""What every dataset converter shares: reading records, the converter registry, the report.

A converter turns one source record into one `Conversation` or raises `SchemaError` naming the
field that is wrong. `convert` reads the input (JSONL, a JSON array or Parquet), locates every
error at ``file:line``, and either stops at the first bad record or, with ``skip_bad``, drops it
and counts why — a record is never dropped silently.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tinytool.errors import MissingInputError, UserInputError
from tinytool.io import atomic_file, iter_jsonl_rows
from tinytool.io.files import UTF8_BOM, FileFormatError
from tinytool.schema import Conversation, SchemaError

# Text an assistant turn gets when the source marks "no call" with an empty answer list (xLAM/Hammer
# irrelevance data): an empty target would teach the model to say nothing at all.
NO_CALL_REPLY = "None of the available functions can handle this request."


# ---- reading ----------------------------------------------------------------------------------

@dataclass(slots=True)
class SourceRecord:
    """One raw record and where it came from: ``line`` is the line it starts on (JSONL, JSON array)
    or its row (Parquet); ``index`` is its 0-based position in the file. Messages count records,
    rows and lines from 1."""

    record: Any
    line: int
    index: int
    where: str = ""  # "" for JSONL; "JSON array record 3" / "Parquet row 3" otherwise


_NOT_UTF8 = re.compile("[\udc80-\udcff]")  # bytes that were not UTF-8, kept by surrogateescape


def _array_records(text: str, name: str) -> Iterator[SourceRecord | SchemaError]:
    """Records of a JSON array, each with the line it starts on (decoded one element at a time).

    ``text`` is decoded with ``surrogateescape``: a record holding bytes that are not UTF-8 is
    yielded as a located `SchemaError` (its neighbours are still read).
    """
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    index, n = 0, len(text)
    line, counted = 1, 0

    def line_at(p: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, p)
        counted = p
        return line

    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos < n and text[pos] == "]":
            return
        if pos >= n:
            raise SchemaError("JSON array is not closed with ']'", file=name, line=line_at(n))
        start = pos
        where = f"JSON array record {index + 1}"
        try:
            record, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            problem = "not UTF-8 text" if _NOT_UTF8.search(text, start, e.pos + 1) else f"not valid JSON: {e.msg}"
            raise SchemaError(f"{problem} (in {where})", file=name, line=line_at(e.pos)) from None
        except RecursionError:
            raise SchemaError(f"not valid JSON: nested too deeply (in {where})", file=name,
                              line=line_at(start)) from None
        bad = _NOT_UTF8.search(text, start, pos)
        if bad:
            yield SchemaError(f"not UTF-8 text ({where})", file=name, line=line_at(bad.start()))
        else:
            yield SourceRecord(record, line_at(start), index, where)
        index += 1
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos < n and text[pos] == ",":
            pos += 1
        elif pos < n and text[pos] != "]":
            raise SchemaError("expected ',' or ']' between JSON array records", file=name, line=line_at(pos))


def _first_char(path: str | os.PathLike) -> bytes:
    """The first byte of a file that is not whitespace nor a UTF-8 byte order mark (b"" for an empty file)."""
    with open(path, "rb") as fh:
        chunk = fh.read(65536).removeprefix(UTF8_BOM)
        while chunk:
            stripped = chunk.lstrip()
            if stripped:
                return stripped[:1]
            chunk = fh.read(65536)
    return b""


def iter_source_records(path: str | os.PathLike) -> Iterator[SourceRecord | SchemaError]:
    """Records of a JSONL file, a JSON array file or a Parquet file, in order.

    A JSONL line that is not UTF-8 or not JSON, and a JSON array record that is not UTF-8, are
    yielded as located `SchemaError`s (the rest of the file can still be read); a broken JSON array
    raises, since nothing after the break can be trusted.
    """
    name = str(path)
    if not Path(path).is_file():
        raise MissingInputError(f"{name}: no such file")
    if name.endswith(".parquet"):
        import pyarrow as pa  # a dependency of `datasets`; imported only for Parquet input
        import pyarrow.parquet as pq

        try:
            rows = pq.read_table(path).to_pylist()
        except (pa.ArrowException, OSError) as e:
            raise FileFormatError(f"{name}: not a readable Parquet file ({e})") from None
        for i, rec in enumerate(rows):
            yield SourceRecord(rec, i + 1, i, f"Parquet row {i + 1}")
        return
    if _first_char(path) == b"[":
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            text = fh.read()
        yield from _array_records(text, name)
        return
    bad: list[SchemaError] = []

    def bad_line(lineno: int, reason: str) -> None:  # called before the next good line is yielded
        bad.append(SchemaError(reason, file=name, line=lineno))

    index = 0
    for lineno, record in iter_jsonl_rows(path, on_bad=bad_line):
        for e in bad:
            yield e
            index += 1
        bad.clear()
        yield SourceRecord(record, lineno, index)
        index += 1
    yield from bad


# ---- helpers converters share -----------------------------------------------------------------

def need(record: Any, key: str, kind: type | tuple[type, ...], path: str = "") -> Any:
    """``record[key]`` if it is of ``kind`` (and not empty), else a `SchemaError` naming the field."""
    if not isinstance(record, dict):
        raise SchemaError(f"expected an object, got {type(record).__name__}", path.rstrip("."))
    value = record.get(key)
    if not isinstance(value, kind) or (isinstance(value, (str, list)) and not value):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        want = " or ".join(k.__name__ for k in kinds)
        got = "missing" if key not in record else f"got {type(value).__name__} {value!r:.40}"
        raise SchemaError(f"expected a non-empty {want} ({got})", f"{path}{key}")
    return value


def json_field(value: Any, path: str) -> Any:
    """A field that may hold JSON text (xLAM stores lists as strings): decoded, errors located."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as e:
            raise SchemaError(f"not valid JSON: {e.msg} (char {e.pos})", path) from None
    return value


def nested(fn: Callable[[], Any], prefix: str) -> Any:
    """Run ``fn`` and re-raise its `SchemaError` with ``prefix`` prepended to the field path."""
    try:
        return fn()
    except SchemaError as e:
        raise e.nested(prefix) from None


def call_category(conv: Conversation) -> str:
    """A BFCL-style category read off the conversation's shape, for sources that have none.

    ``no_call`` (no assistant call), ``multi_turn`` (calls in more than one assistant turn, or more
    than one user turn), else by the calls of the one calling turn and the tools offered:
    ``simple`` (1 call, 1 tool), ``multiple`` (1 call, several tools), ``parallel`` (several calls,
    1 tool), ``parallel_multiple`` (several calls, several tools).
    """
    calling = [m for m in conv.messages if m.role == "assistant" and m.tool_calls]
    if not calling:
        return "no_call"
    users = sum(m.role == "user" for m in conv.messages)
    if len(calling) > 1 or users > 1:
        return "multi_turn"
    many_calls = len(calling[0].tool_calls) > 1
    many_tools = len(conv.tools) > 1
    return {(False, False): "simple", (False, True): "multiple",
            (True, False): "parallel", (True, True): "parallel_multiple"}[(many_calls, many_tools)]


def check_tool_names(conv: Conversation) -> None:
    """Raise `SchemaError` when two offered tools share a name (calls could not be resolved)."""
    seen: set[str] = set()
    for i, t in enumerate(conv.tools):
        if t.name in seen:
            raise SchemaError(f"tool {t.name!r} is defined twice", f"tools[{i}].name")
        seen.add(t.name)


def check_calls(conv: Conversation) -> None:
    """Raise `SchemaError` for the first call that does not fit the offered tools."""
    problems = conv.call_problems()
    if problems:
        where, _, reason = problems[0].partition(": ")
        raise SchemaError(reason, where)


# ---- registry ---------------------------------------------------------------------------------

class Converter:
    """Base class: ``__call__(record, index)`` returns a `Conversation` or raises `SchemaError`.

    Subclasses set ``name``, a one-line ``summary`` and ``options`` (the keyword options they take
    beyond `SHARED_OPTIONS`); `get_converter` rejects options a converter does not take.
    """

    name: str = ""
    summary: str = ""
    options: tuple[str, ...] = ()
    #: whether calls are checked against the offered tools by default (off for evaluation data)
    checks_calls: bool = True

    def __init__(self, **opts: Any) -> None:
        self.opts = opts

    def __call__(self, record: Any, index: int) -> Conversation:  # pragma: no cover - abstract
        raise NotImplementedError


CONVERTERS: dict[str, type[Converter]] = {}
#: options every converter takes: call checking and Hammer-style masking (see `masking`)
SHARED_OPTIONS = ("check_calls", "mask_prob", "seed")


def register(cls: type[Converter]) -> type[Converter]:
    """Class decorator adding a converter to `CONVERTERS` under its ``name``."""
    CONVERTERS[cls.name] = cls
    return cls


def get_converter(name: str, **opts: Any) -> Converter:
    """The converter registered as ``name``, built with ``opts`` (unknown options are an error)."""
    try:
        cls = CONVERTERS[name]
    except KeyError:
        raise UserInputError(f"unknown format {name!r}", fix=f"choose one of {', '.join(sorted(CONVERTERS))}") from None
    allowed = SHARED_OPTIONS + cls.options
    unknown = sorted(k for k, v in opts.items() if v is not None and k not in allowed)
    if unknown:
        takes = ", ".join(allowed)
        raise UserInputError(f"format {name!r} does not take {', '.join(unknown)}", fix=f"it takes {takes}")
    return cls(**{k: v for k, v in opts.items() if v is not None})


# ---- conversion -------------------------------------------------------------------------------

_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_INDEX = re.compile(r"\[\d+\]")


def reason_key(err: SchemaError) -> str:
    """A grouping key for a dropped record: the field with indices as ``[*]`` and quoted values
    elided, so one kind of fault counts once however many records show it."""
    fld = _INDEX.sub("[*]", err.field)
    reason = _QUOTED.sub("'…'", err.reason)
    reason = re.sub(r"\d+", "N", reason)  # char offsets, counts
    text = f"{fld}: {reason}" if fld else reason
    return text if len(text) <= 100 else text[:99] + "…"


@dataclass(slots=True)
class ConvertReport:
    """What a conversion did: records read, conversations written, records dropped by reason
    (with the first full error message for each reason in ``examples``)."""

    n_in: int = 0
    n_out: int = 0
    dropped: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    @property
    def n_dropped(self) -> int:
        return sum(self.dropped.values())

    def summary(self) -> str:
        lines = [f"read {self.n_in} records, wrote {self.n_out} conversations, dropped {self.n_dropped}"]
        for reason, n in self.dropped.most_common():
            lines.append(f"  {n:>6}  {reason}   (first: {self.examples[reason]})")
        return "\n".join(lines)


def _locate(err: SchemaError, file: str, src: SourceRecord) -> SchemaError:
    located = err.located(file, src.line)
    if src.where:
        located = SchemaError(f"{err.reason} ({src.where})", err.field, file, src.line)
    return located


def iter_converted(
    fmt: str | Converter, in_path: str | os.PathLike, skip_bad: bool = False,
    report: ConvertReport | None = None, progress: Callable[[ConvertReport], None] | None = None,
    **opts: Any,
) -> Iterator[Conversation]:
    """Conversations converted from ``in_path``; the lazy core of `convert`.

    Without ``skip_bad`` the first bad record raises `SchemaError` located at ``file:line`` with
    its field; with it, bad records are counted in ``report`` by reason and skipped. ``progress``
    is called with the report after each record read.
    """
    from tinytool.data.convert.masking import apply_masking  # masking imports this module

    conv_fn = fmt if isinstance(fmt, Converter) else get_converter(fmt, **opts)
    mask_prob = float(conv_fn.opts.get("mask_prob", 0.0) or 0.0)
    seed = int(conv_fn.opts.get("seed", 0) or 0)
    check = conv_fn.opts.get("check_calls", conv_fn.checks_calls)
    report = report if report is not None else ConvertReport()
    name = str(in_path)
    for item in iter_source_records(in_path):
        report.n_in += 1
        if progress is not None:
            progress(report)
        if isinstance(item, SchemaError):  # a JSONL line that is not JSON, already located
            err, located = item, item
        else:
            try:
                conv = conv_fn(item.record, item.index)
                check_tool_names(conv)
                if check:
                    check_calls(conv)
                err = None
            except SchemaError as e:
                err, located = e, _locate(e, name, item)
        if err is not None:
            if not skip_bad:
                raise located
            key = reason_key(err)
            report.dropped[key] += 1
            report.examples.setdefault(key, str(located))
            continue
        if mask_prob > 0:
            conv = apply_masking(conv, mask_prob, seed, item.index)
        report.n_out += 1
        yield conv


class EmptyInputError(UserInputError):
    """An input that holds no records at all (an empty file, ``[]``)."""

    fix = "check the input path; a conversion needs at least one record"


class NothingConvertedError(UserInputError):
    """An input whose records were all dropped (``skip_bad``): an empty output is no conversion."""


def _nothing_converted(fmt: str, in_path: str | os.PathLike, report: ConvertReport) -> NothingConvertedError:
    reasons = "; ".join(f"{n} {reason}" for reason, n in report.dropped.most_common(3))
    more = len(report.dropped) - 3
    if more > 0:
        reasons += f"; {more} other reason{'s' if more > 1 else ''}"
    first = report.examples[report.dropped.most_common(1)[0][0]]
    return NothingConvertedError(
        f"{in_path}: no record could be converted ({report.n_in} read, all dropped: {reasons})",
        fix=f"check that the file is in the {fmt} format (--from) and fix its records; first drop: {first}")


def convert(
    fmt: str, in_path: str | os.PathLike, out_path: str | os.PathLike, skip_bad: bool = False,
    progress: Callable[[ConvertReport], None] | None = None, *, allow_empty: bool = True, **opts: Any,
) -> ConvertReport:
    """Convert ``in_path`` (source format ``fmt``) to unified `Conversation` JSONL at ``out_path``.

    The output is written atomically: on an error or Ctrl-C nothing is left at ``out_path`` (an old
    file there is kept) and no temporary remains. An input without records raises `EmptyInputError`,
    and one whose records were all dropped (``skip_bad``) `NothingConvertedError` naming the drop
    reasons, unless ``allow_empty``. Options: ``answers`` (BFCL possible-answer file), ``mask_prob``/``seed``
    (Hammer-style name masking, any format), ``check_calls`` (reject calls that do not fit the
    offered tools, argument values checked against the tool's JSON Schema).
    """
    conv_fn = get_converter(fmt, **opts)
    report = ConvertReport()
    with atomic_file(out_path) as fh:
        for conv in iter_converted(conv_fn, in_path, skip_bad=skip_bad, report=report, progress=progress):
            fh.write(json.dumps(conv.to_dict(), ensure_ascii=False) + "\n")
        if report.n_in == 0 and not allow_empty:
            raise EmptyInputError(f"{in_path}: no records (the input is empty)")
        if report.n_out == 0 and report.n_dropped and not allow_empty:
            raise _nothing_converted(fmt, in_path, report)
    return report
