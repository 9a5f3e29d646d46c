"""JSON and JSONL files: read with errors that name file and line, append fsynced, replace atomically.

Three ways a file is written, and what a crash or Ctrl-C leaves of each:

- `append_jsonl`: rows appended and fsynced; a crash loses at most the rows of the call in flight, and
  `repair_log` makes the log whole again before the next append.
- `atomic_file` / `write_json` / `write_jsonl`: written to a temporary beside the target and renamed
  over it when complete; on any exit before that the temporary is removed and the target is untouched.
- `atomic_dir`: several files that belong together (a train/dev split) written into a temporary
  directory that replaces the target as a whole.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from tinytool.errors import MissingInputError, OutputExistsError, TinytoolError, UserInputError

PathLike = str | os.PathLike

#: the byte order mark some Windows tools write at the start of a UTF-8 file: read past, never part of the data
UTF8_BOM = b"\xef\xbb\xbf"


class FileFormatError(TinytoolError, ValueError):
    """A file that cannot be read as the JSON or JSONL it should be; the message names file and line."""

    fix = ("correct the file at the line named (JSONL holds one JSON object per line; JSON and YAML files must "
           "parse as a whole), or remove that line")


class OutputNotWritable(TinytoolError, OSError):
    """An output path that cannot be created or written (permissions, a file where a directory should be)."""

    fix = "choose an output location you can write to"


def _where(path: PathLike, line: int | None = None) -> str:
    return f"{path}:{line}" if line is not None else str(path)


def _json_problem(e: Exception) -> str:
    if isinstance(e, json.JSONDecodeError):
        return f"not valid JSON: {e.msg} (column {e.colno})"
    if isinstance(e, RecursionError):
        return "not valid JSON: nested too deeply"
    return f"not valid JSON: {e}"  # an over-long integer literal


def _check_readable(path: PathLike) -> None:
    p = Path(path)
    if not p.exists():
        raise MissingInputError(f"{path}: no such file")
    if p.is_dir():
        raise UserInputError(f"{path}: is a directory, expected a file")


def check_data_files(paths: Iterable[PathLike], flag: str = "--data") -> None:
    """Each of ``paths`` is a data file that exists: a missing one, or a folder given where a JSONL file was asked
    (the folder ``data demo`` wrote, say), is named with what to give instead."""
    for path in paths:
        p = Path(path)
        if p.is_file():
            continue
        if p.is_dir():
            inside = sorted((q.name for q in p.glob("*.jsonl")), key=lambda n: (n != "train.jsonl", n))[:4]
            raise UserInputError(f"{path}: is a folder; {flag} takes a JSONL file",
                                 fix="give one of its files: " + ", ".join(str(p / n) for n in inside) if inside else
                                 "give the JSONL file itself (this folder holds none)")
        raise MissingInputError(f"{path}: no such data file", fix=f"check the {flag} path")


def _decode(raw: bytes, path: PathLike, lineno: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FileFormatError(f"{_where(path, lineno)}: not UTF-8 text (byte 0x{raw[e.start]:02x} at column "
                              f"{e.start + 1})", fix="convert the file to UTF-8") from None


def iter_jsonl_rows(
    path: PathLike, *, on_bad: Callable[[int, str], None] | None = None
) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line of a JSONL file (lines count from 1); a UTF-8 byte
    order mark at its start is read past.

    A line that is not UTF-8 or not JSON raises `FileFormatError` naming ``file:line``, unless
    ``on_bad`` is given: then ``on_bad(line_number, reason)`` is called and the line is skipped.
    """
    _check_readable(path)
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed by the with below; open errors reported first
    except OSError as e:
        raise MissingInputError(f"{path}: cannot read ({e.strerror})") from None
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            if lineno == 1:
                raw = raw.removeprefix(UTF8_BOM)
            if not raw.strip():
                continue
            try:
                text = _decode(raw, path, lineno)
                try:
                    value = json.loads(text.rstrip("\r\n"))  # columns count within the line
                except (ValueError, RecursionError) as e:
                    raise FileFormatError(f"{_where(path, lineno)}: {_json_problem(e)}") from None
            except FileFormatError as e:
                if on_bad is None:
                    raise
                on_bad(lineno, str(e).split(": ", 1)[-1])
                continue
            yield lineno, value


def read_jsonl_rows(path: PathLike, *, on_bad: Callable[[int, str], None] | None = None) -> list[Any]:
    """Every row of a JSONL file (see `iter_jsonl_rows`)."""
    return [row for _, row in iter_jsonl_rows(path, on_bad=on_bad)]


def read_json(path: PathLike) -> Any:
    """A JSON file's value (a UTF-8 byte order mark at its start read past); a missing, non-UTF-8 or malformed file
    raises an error naming it."""
    _check_readable(path)
    data = Path(path).read_bytes().removeprefix(UTF8_BOM)
    text = _decode(data, path, 1) if data else ""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        line = e.lineno if isinstance(e, json.JSONDecodeError) else None
        raise FileFormatError(f"{_where(path, line)}: {_json_problem(e)}") from None


#: what to do about a YAML file that does not parse (`FileFormatError`'s own fix speaks of JSON and JSONL)
_YAML_FIX = ("correct the YAML at the line named: indent with spaces, not tabs; close every bracket and quote; quote a "
             "value that holds ': ' or starts with {, [ or *")


def read_yaml(path: PathLike, what: str = "file") -> Any:
    """A YAML file's value (None when empty); a missing, non-UTF-8 or malformed file raises an error naming it
    (``what`` says what the file is meant to be) and, for a syntax error, the line and the problem."""
    import yaml

    p = Path(path)
    if not p.is_file():
        raise MissingInputError(f"{path}: no such {what}")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise FileFormatError(f"{path}: not UTF-8 text", fix="save the file as UTF-8 text") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise FileFormatError(_yaml_problem(path, e, text), fix=_YAML_FIX) from None


def _yaml_problem(path: PathLike, e: Exception, text: str) -> str:
    """``PATH:LINE: not valid YAML (problem)`` for a YAML syntax error in ``text``. A bracket or quote never closed
    is named at the line it opens on, not past the file's last line, where the parser finds it."""
    mark, context, opened = (getattr(e, k, None) for k in ("problem_mark", "context", "context_mark"))
    problem = str(getattr(e, "problem", None) or e)
    problem = problem.replace("'<stream end>'", "the end of the file").replace("end of stream", "end of the file")
    if mark is not None and opened is not None and mark.line >= len(text.splitlines()):
        mark = opened
    line = mark.line + 1 if mark is not None else None
    if context and opened is not None:
        problem += f"; {context}" + (f" from line {opened.line + 1}" if opened.line + 1 != line else "")
    return f"{_where(path, line)}: not valid YAML ({problem})"


def _dump(row: Any) -> str:
    d = row.to_dict() if hasattr(row, "to_dict") else row
    return json.dumps(d, ensure_ascii=False, default=str)


def sha256_file(path: PathLike) -> str:
    """The sha256 of a file's bytes (hex), read in blocks: what a run records of an input to know it again."""
    import hashlib

    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def ensure_dir(path: PathLike) -> Path:
    """Create a directory (and its parents); a path that cannot be created raises `OutputNotWritable`."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputNotWritable(f"{path}: exists and is not a directory") from None
    except OSError as e:
        raise OutputNotWritable(f"{path}: cannot create directory ({e.strerror})") from None
    if not os.access(p, os.W_OK):
        raise OutputNotWritable(f"{path}: directory is not writable")
    return p


def append_jsonl(path: PathLike, rows: Iterable[Any]) -> int:
    """Append rows (dicts, or objects with ``to_dict``) to a JSONL log and fsync; returns how many."""
    lines = [_dump(r) + "\n" for r in rows]
    ensure_dir(Path(path).parent)
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.writelines(lines)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as e:
        raise OutputNotWritable(f"{path}: cannot write ({e.strerror})") from None
    return len(lines)


def repair_log(path: PathLike, is_row: Callable[[Any], bool] = lambda r: True) -> int:
    """Make an append-only JSONL log whole again after a crash; returns how many lines were dropped.

    A last line that a crash left without its newline keeps its row when it is complete JSON (the
    newline is added) and is cut otherwise. Any line that is not JSON, or whose value fails ``is_row``,
    is dropped wherever it is, so the rows it would have held are produced again instead of the run
    refusing its own file. Nothing is rewritten when the log is already whole.
    """
    p = Path(path)
    if not p.exists():
        return 0
    data = p.read_bytes()
    if not data:
        return 0
    lines = data.split(b"\n")
    tail_open = not data.endswith(b"\n")
    if not tail_open:
        lines.pop()  # the empty string after the final newline
    kept: list[bytes] = []
    for raw in lines:
        if not raw.strip():
            continue
        try:
            ok = is_row(json.loads(raw.decode("utf-8")))
        except (ValueError, RecursionError):
            ok = False
        if ok:
            kept.append(raw)
    dropped = sum(1 for raw in lines if raw.strip()) - len(kept)
    if dropped == 0 and not tail_open:
        return 0
    if dropped == 0:  # only the newline is missing: add it in place
        with open(p, "ab") as fh:
            fh.write(b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        return 0
    with atomic_file(p, "wb") as fh:
        fh.write(b"".join(raw + b"\n" for raw in kept))
    return dropped



def _tmp_name(path: Path, what: str = "tmp") -> Path:
    return path.with_name(f".{path.name}.{what}-{os.getpid()}")


@contextlib.contextmanager
def atomic_file(path: PathLike, mode: str = "w") -> Iterator[IO[Any]]:
    """Write a file as a whole: a temporary beside it, fsynced and renamed over ``path`` on success,
    removed on any exception (Ctrl-C too), so ``path`` holds either the old or the new content."""
    p = Path(path)
    ensure_dir(p.parent)
    tmp = _tmp_name(p)
    try:
        fh = open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8"}))  # noqa: SIM115
    except OSError as e:
        raise OutputNotWritable(f"{path}: cannot write ({e.strerror})") from None
    try:
        with fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def check_writable(path: PathLike) -> None:
    """Fail at once, not after the work, when ``path`` (a file or directory still to be written) cannot be:
    its parent is created and a probe file is written and removed beside it."""
    p = Path(path)
    if p.is_dir() and not os.access(p, os.W_OK):
        raise OutputNotWritable(f"{path}: directory is not writable")
    ensure_dir(p.parent)
    probe = _tmp_name(p, "probe")
    try:
        probe.write_bytes(b"")
    except OSError as e:
        raise OutputNotWritable(f"{path}: cannot write there ({e.strerror})") from None
    finally:
        try:
            probe.unlink(missing_ok=True)
        except OSError:
            pass


def write_json(path: PathLike, obj: Any) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    with atomic_file(path) as fh:
        fh.write(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def write_jsonl(path: PathLike, rows: Iterable[Any]) -> int:
    """Write rows (dicts, or objects with ``to_dict``) as JSONL, atomically; returns how many."""
    n = 0
    with atomic_file(path) as fh:
        for r in rows:
            fh.write(_dump(r) + "\n")
            n += 1
    return n


@contextlib.contextmanager
def atomic_dir(path: PathLike) -> Iterator[Path]:
    """Build a directory of files that belong together and put it in place as a whole.

    Yields an empty temporary directory beside ``path``; on success it replaces ``path`` (an old
    directory there is removed only after the new one is in place), on any exception it is removed
    and ``path`` is left as it was.
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputNotWritable(f"{path}: exists and is not a directory")
    ensure_dir(p.parent)
    tmp = _tmp_name(p)
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
    except OSError as e:
        raise OutputNotWritable(f"{path}: cannot create directory ({e.strerror})") from None
    try:
        yield tmp
        old = _tmp_name(p, "old")
        if p.exists():
            os.replace(p, old)
        os.replace(tmp, p)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def check_not_input(output: PathLike | None, *inputs: PathLike | None) -> None:
    """Refuse an output that is one of the inputs, or a folder that holds one (writing it, or starting it again
    with ``--overwrite``, would destroy what is being read). Only inputs that exist on disk count (a hub id or a
    URL is never inside an output); ``None`` entries are skipped."""
    if output is None:
        return
    out = Path(output).resolve()
    for i in inputs:
        if i is None or not str(i) or "://" in str(i) or not Path(i).exists():
            continue
        src = Path(i).resolve()
        if src == out:
            raise UserInputError(f"{output}: the output is also an input; writing it would destroy the input",
                                 fix="choose another output path")
        if out in src.parents:
            raise UserInputError(f"{output}: the output folder holds the input {i}; starting it again would "
                                 "destroy the input", fix="choose an output folder that holds none of the inputs")


def check_model_out(out: PathLike, overwrite: bool) -> None:
    """Refuse a non-empty model output folder unless ``overwrite``, and even then anything but a model checkpoint (a
    folder with config.json): ``--overwrite`` replaces a model, never a folder of other files."""
    p = Path(out)
    if not p.is_dir() or not any(p.iterdir()):
        return
    if not overwrite:
        raise OutputExistsError(f"{out}: already exists and is not empty",
                                fix="rerun with --overwrite to replace the model there, or choose another --out")
    if not (p / "config.json").is_file():
        raise OutputExistsError(f"{out}: is not a model checkpoint (no config.json), so --overwrite will not "
                                "replace it", fix="choose another --out directory, or empty this one")


def check_output_file(path: PathLike, overwrite: bool) -> None:
    """Refuse to replace a non-empty output file unless ``overwrite``."""
    p = Path(path)
    if p.is_dir():
        raise OutputNotWritable(f"{path}: is a directory, expected a file path")
    if p.exists() and p.stat().st_size > 0 and not overwrite:
        raise OutputExistsError(f"{path}: already exists and is not empty")


__all__ = [
    "FileFormatError",
    "OutputNotWritable",
    "append_jsonl",
    "atomic_dir",
    "atomic_file",
    "check_not_input",
    "check_output_file",
    "check_writable",
    "ensure_dir",
    "iter_jsonl_rows",
    "read_json",
    "read_jsonl_rows",
    "repair_log",
    "sha256_file",
    "write_json",
    "write_jsonl",
]
