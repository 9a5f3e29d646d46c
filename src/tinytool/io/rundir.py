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
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
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


def settings_diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per setting whose value differs: ``name: OLD there, NEW now``."""
    return [f"{k}: {old.get(k)!r} there, {new.get(k)!r} now"
            for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]


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
        diff = settings_diff(manifest.get("settings", {}), settings)
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


__all__ = ["MANIFEST", "SETUP_FILES", "RunDir", "RunDirError", "discard_start", "holds_work", "open_run_dir",
           "read_manifest", "settings_diff"]
