"""Run directories: every verb that writes a directory of results opens it here, and all behave alike.

A run directory holds a manifest (``run.json``) with the verb (``kind``), the settings that define
the run (``settings``: what changes the results), and free-form information the verb adds (inputs,
figures, status). Opening a directory:

- missing or empty → a new run; the manifest is written first;
- holding a manifest of the same kind and the same settings → the run resumes;
- holding one with other settings → `RunDirError` naming each setting that differs;
- holding files but no manifest → refused, since it is not a tinytool run (nothing is deleted);
- holding a manifest but no results yet (a start that failed) → a new run, whatever its settings;
- ``overwrite=True`` → a tinytool run's contents are removed and a new run starts.

What defines a run is declared once, on its config dataclass: every field does, except those the class lists in
``FREE`` (where to write, how often to log, how far to go: a resumed run may change them); a config that extends a
library's dataclass (TRL's, transformers') counts the fields it inherits without declaring them only where it
lists them in ``LIBRARY_SETTINGS``. `run_settings` reads that declaration, for every verb.

Work inside a run that is done in units (an iteration's steps, a recipe's stages) marks each finished unit with
a `Step`: its folder's ``step.json`` records the outcome, and a rerun reads it instead of redoing the unit.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any

from tinytool.errors import OutputExistsError, TinytoolError
from tinytool.io.files import FileFormatError, ensure_dir, read_json, write_json

MANIFEST = "run.json"


class RunDirError(TinytoolError, RuntimeError):
    """A run directory that cannot be resumed with these settings, or whose manifest is unreadable."""

    fix = "rerun with the settings it was made with to resume it, --overwrite to start again, or choose another --out"


def _normal(value: Any) -> Any:
    """The value as it reads back from JSON, so settings compare the same before and after a save."""
    return json.loads(json.dumps(value, default=str))


@dataclass
class RunDir:
    """An opened run directory: ``resumed`` tells whether an earlier run with the same settings is continued."""

    path: Path
    kind: str
    settings: dict[str, Any]
    resumed: bool
    info: dict[str, Any] = field(default_factory=dict)

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    @classmethod
    def read(cls, path: str | Path) -> RunDir:
        """A read-only view of a run directory another process opened (the other ranks of a distributed run)."""
        manifest = read_manifest(path)
        if manifest is None:
            raise RunDirError(f"{path}: no {MANIFEST}")
        info = {k: v for k, v in manifest.items() if k not in ("kind", "settings", "updated")}
        return cls(Path(path), manifest.get("kind", ""), manifest.get("settings", {}), True, info)

    def update(self, **info: Any) -> None:
        """Record more about the run in its manifest (inputs, figures, status); settings stay as they are."""
        self.info.update(_normal(info))
        self._write()

    def _write(self) -> None:
        write_json(self.path / MANIFEST, {
            "kind": self.kind, "settings": self.settings, **self.info,
            "updated": datetime.now(UTC).isoformat(timespec="seconds"),
        })


def declared_fields(cls: type) -> list[str]:
    """The fields tinytool's own classes declare in ``cls``'s hierarchy (their own, and library fields they
    re-declare with tinytool's defaults), in declaration order."""
    import inspect

    names_all = {f.name for f in dataclasses.fields(cls)}
    names: list[str] = []
    for klass in cls.__mro__:
        if klass.__module__.startswith("tinytool.") and dataclasses.is_dataclass(klass):
            names += [n for n in inspect.get_annotations(klass) if n not in names and n in names_all]
    return names


def absolute(value: Any, always: bool = False) -> Any:
    """A path (or each of a list of paths) made absolute where it exists (``always``: also where it does not
    yet); anything else, such as a hub id or a model alias, as it is."""
    if isinstance(value, (list, tuple)):
        return [absolute(v, always) for v in value]
    if isinstance(value, (str, Path)) and str(value) and (always or Path(value).exists()):
        return str(Path(value).expanduser().absolute())
    return value


def path_value(cfg: Any, name: str, value: Any) -> Any:
    """``value`` of field ``name`` with its paths absolute: the fields a config lists in ``PATHS`` and those
    named ``*_dir`` or ``*_path`` (the same run started from another directory is the same run)."""
    if name in getattr(cfg, "PATHS", ()) or name.endswith(("_dir", "_path")):
        return absolute(value, always=name == "output_dir")
    return value


def run_settings(cfg: Any, **derived: Any) -> dict[str, Any]:
    """The settings that define a run of the config dataclass ``cfg`` (see the module docstring): what its
    manifest records and a resumed run must match, enums as their values, paths absolute. ``derived`` adds
    settings computed from the inputs (a data file's sha256, a tokenizer's fingerprint)."""
    cls = type(cfg)
    free = getattr(cls, "FREE", frozenset())
    library = getattr(cls, "LIBRARY_SETTINGS", None)
    declared = set(declared_fields(cls)) if library is not None else None
    out: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        if f.name in free or (declared is not None and f.name not in declared and f.name not in library):
            continue
        value = getattr(cfg, f.name)
        out[f.name] = path_value(cfg, f.name, value.value if isinstance(value, Enum) else value)
        default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        if default is not dataclasses.MISSING:
            defaults[f.name] = path_value(cfg, f.name, default.value if isinstance(default, Enum) else default)
    return Settings({**out, **derived}, defaults=defaults)


class Settings(dict):
    """The settings of a run (a dict), with each declared field's default (``defaults``): a setting that an
    older run's manifest does not record (the option is newer than the run) counts as the same when the value now
    is the default, since that is how the older run behaved."""

    def __init__(self, values: dict[str, Any], defaults: dict[str, Any] | None = None):
        super().__init__(values)
        self.defaults = _normal(defaults or {})


class Step:
    """A unit of work inside a run directory (an iteration's step, a recipe's stage) in its own folder: when it
    finishes, ``step.json`` records its outcome, and a rerun reads that instead of redoing the unit. With a
    ``fingerprint`` (of what the unit depends on) a record counts only while the fingerprint is the same."""

    FILE = "step.json"

    def __init__(self, folder: str | Path, fingerprint: str | None = None):
        self.folder = Path(folder)
        self.marker = self.folder / self.FILE
        self.fingerprint = fingerprint

    @property
    def record(self) -> dict[str, Any]:
        """What the folder's ``step.json`` holds ({} when missing or unreadable: the unit runs again)."""
        try:
            record = read_json(self.marker) if self.marker.is_file() else {}
        except FileFormatError:
            return {}
        return record if isinstance(record, dict) else {}

    @property
    def done(self) -> dict[str, Any] | None:
        """The finished unit's record (its outcome and what it ran), or None when it must run (again)."""
        record = self.record
        if record.get("status") != "done" or record.get("fingerprint") != self.fingerprint:
            return None
        return {k: v for k, v in record.items() if k not in ("status", "fingerprint")}

    def start(self, **info: Any) -> None:
        """Record that the unit runs now (``info``: what it runs); an unfinished record never counts as done."""
        self.finish(info, status="running")

    def finish(self, outcome: dict[str, Any], status: str = "done") -> dict[str, Any]:
        """Record the unit's outcome (``status`` other than "done": it did not finish and runs again); returns
        ``outcome``."""
        ensure_dir(self.folder)
        write_json(self.marker, {"status": status, "fingerprint": self.fingerprint, **_normal(outcome)})
        return outcome


def read_manifest(path: str | Path) -> dict[str, Any] | None:
    """The manifest of a run directory, None when it has none; a corrupt one raises `RunDirError`."""
    mpath = Path(path) / MANIFEST
    if not mpath.exists():
        return None
    try:
        manifest = read_json(mpath)
    except FileFormatError as e:
        raise RunDirError(f"{e} (the run directory's manifest is damaged)",
                          fix="rerun with --overwrite to start the run again") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("settings", {}), dict):
        raise RunDirError(f"{mpath}: not a tinytool run manifest", fix="rerun with --overwrite to start again")
    return manifest


def settings_diff(old: dict[str, Any], new: dict[str, Any], defaults: dict[str, Any] | None = None) -> list[str]:
    """One line per setting whose value differs: ``name: OLD there, NEW now``. A setting ``old`` does not record
    is the same when its value now is its default in ``defaults`` (an option added after the old run)."""
    defaults = defaults or {}
    out = []
    for k in sorted(set(old) | set(new)):
        if k not in old and k in new and k in defaults and new[k] == defaults[k]:
            continue
        if old.get(k) != new.get(k):
            there = repr(old[k]) if k in old else "not recorded"
            out.append(f"{k}: {there} there, {new.get(k)!r} now")
    return out


#: files a run writes before any work: a directory holding only these (or empty files) has no results to keep
SETUP_FILES = frozenset({MANIFEST, "config.yaml"})


def holds_work(path: Path) -> bool:
    """Does a run directory hold any result (a non-empty file besides the manifest and the resolved config)?
    A run that failed while starting (a mistyped model, an unreachable endpoint) leaves none, and a corrected
    rerun then starts afresh instead of being refused for its other settings."""
    return any(f.is_file() and f.name not in SETUP_FILES and f.stat().st_size > 0 for f in path.rglob("*"))


def discard_start(path: str | Path) -> bool:
    """A start that failed before its first unit of work leaves nothing: the files opening the run wrote (the
    manifest, the resolved config) are removed, and the directory too when that leaves it empty. A directory that
    holds work is kept as it is. Returns whether anything was removed."""
    p = Path(path)
    if not p.is_dir() or holds_work(p):
        return False
    for f in sorted(p.rglob("*"), key=lambda f: len(f.parts), reverse=True):
        if f.is_file() and (f.name in SETUP_FILES or f.stat().st_size == 0):
            f.unlink()
        elif f.is_dir() and not any(f.iterdir()):
            f.rmdir()
    if not any(p.iterdir()):
        p.rmdir()
    return True


def _clear(path: Path) -> None:
    for child in path.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def open_run_dir(path: str | Path, kind: str, settings: dict[str, Any], *, overwrite: bool = False,
                 info: dict[str, Any] | None = None) -> RunDir:
    """Open ``path`` as a run of ``kind`` defined by ``settings`` (see the module docstring)."""
    p = Path(path)
    defaults = getattr(settings, "defaults", {})
    settings = _normal(settings)
    if p.exists() and not p.is_dir():
        raise OutputExistsError(f"{path}: exists and is not a directory", fix="choose another --out")
    busy = p.is_dir() and any(p.iterdir())
    if busy and (p / MANIFEST).exists() and not holds_work(p):
        overwrite = True  # an earlier start that failed before any work: nothing to keep or resume
    manifest = read_manifest(p) if busy and not overwrite else None
    if busy and overwrite:
        if not (p / MANIFEST).exists():
            raise OutputExistsError(f"{path}: holds files but no {MANIFEST}, so it is not a tinytool run directory; "
                                    "--overwrite deletes only tinytool runs",
                                    fix="remove it yourself or choose another --out")
        _clear(p)
    elif busy and manifest is None:
        raise OutputExistsError(f"{path}: holds files but no {MANIFEST}; not a tinytool run directory",
                                fix="choose another --out (or an empty directory)")
    resumed = False
    extra: dict[str, Any] = {}
    if manifest is not None:
        if manifest.get("kind") != kind:
            raise RunDirError(f"{path}: holds a {manifest.get('kind')!r} run, not a {kind!r} run",
                              fix="choose another --out, or --overwrite to replace it")
        diff = settings_diff(manifest.get("settings", {}), settings, defaults)
        if diff:
            raise RunDirError(f"{path}: holds a run with other settings ({'; '.join(diff)})")
        resumed = True
        extra = {k: v for k, v in manifest.items() if k not in ("kind", "settings", "updated")}
    else:
        extra = {"created": datetime.now(UTC).isoformat(timespec="seconds")}
    ensure_dir(p)
    run = RunDir(p, kind, settings, resumed, extra)
    run.update(**(info or {}))
    return run


__all__ = ["MANIFEST", "SETUP_FILES", "RunDir", "RunDirError", "Settings", "Step", "absolute", "declared_fields",
           "discard_start", "holds_work", "open_run_dir", "path_value", "read_manifest", "run_settings",
           "settings_diff"]
