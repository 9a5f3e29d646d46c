"""A sandbox for generated code (ASTRA §2.2 verifies every synthesized tool by running it): each program runs
in a separate Python process with

- limits on CPU time, address space (memory), file size and (where the kernel enforces it) process count;
- no network: a network namespace of its own where the kernel allows one (as root, or through a user
  namespace), otherwise every socket refused by an audit hook; `isolation()` says which is in force;
- a private temporary directory as its working directory and home, removed afterwards;
- a clean environment (no inherited variables, so no secrets);
- an audit hook, installed before the program runs, that allows reading only its directory and the standard
  library, writing only in its directory (a bounded number of files, no native libraries), and refuses native
  code (``ctypes``), sockets, subprocesses, forks and signals;
- started as root, it drops to ``nobody`` where the standard library is readable by others (``Result.user``
  says who it ran as);
- a wall-clock limit that kills its whole process group (children included).

`SandboxPool` keeps processes started ahead of time, limits applied, each waiting for one program: a program
runs in a fresh process without paying the interpreter's start-up.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Self

#: what the sandboxed interpreter runs first: it applies the limits, cuts the network, then reads the program
#: from stdin (after a length line) and runs it as ``__main__``
_BOOT = r'''
import ctypes, json, os, resource, sys
cfg = json.loads(sys.argv[1])
net = "none"
if not cfg["network"]:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(0x40000000) == 0:  # CLONE_NEWNET
            net = "namespace"
        elif libc.unshare(0x10000000 | 0x40000000) == 0:  # CLONE_NEWUSER | CLONE_NEWNET
            net = "namespace"
    except Exception:
        pass
    if net != "namespace":
        net = "blocked-sockets"
def _limit(kind, value, hard=None):
    if value:
        try:
            resource.setrlimit(kind, (value, hard or value))
        except (ValueError, OSError):
            pass
_limit(resource.RLIMIT_AS, cfg["memory_bytes"])
_limit(resource.RLIMIT_CPU, cfg["cpu_s"], cfg["cpu_s"] + 1)  # SIGXCPU first, SIGKILL a second later
_limit(resource.RLIMIT_FSIZE, cfg["file_bytes"])
_limit(resource.RLIMIT_NPROC, cfg["max_procs"])
def _others_can_read(path):
    # every directory on the way is searchable by others, and the path itself readable
    import stat
    path = os.path.realpath(path)
    while True:
        if not os.stat(path).st_mode & stat.S_IXOTH:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent
user = "same"
if os.getuid() == 0 and _others_can_read(os.path.dirname(os.__file__)):
    # as root, with a standard library others may read: become nobody, so other users' files and processes are
    # out of reach and the process-count limit holds (with the library under a private home, stay and rely on
    # the audit hook below)
    try:
        os.chown(".", 65534, 65534)
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
        user = "nobody"
    except OSError:
        user = "root"
elif os.getuid() == 0:
    user = "root"
def _guard():
    # one audit hook, installed before the program runs and impossible to remove: reads only from the program's
    # directory and the standard library, writes only in its directory (a bounded number of files), no native
    # code, no sockets (unless allowed), no processes or signals (unless allowed)
    home = os.path.realpath(os.getcwd())
    stdlib = os.path.realpath(os.path.dirname(os.__file__))
    readable = (home, stdlib, os.path.realpath(sys.base_exec_prefix), "/dev/null", "/dev/urandom", "/dev/zero",
                "/proc/self")
    writes = [0]
    max_files = cfg["max_files"]
    processes = cfg["processes"]
    network = cfg["network"]
    join, realpath, sep = os.path.join, os.path.realpath, os.sep
    def inside(path, roots):
        return any(path == r or path.startswith(r.rstrip(sep) + sep) for r in roots)
    def where(path):
        if isinstance(path, bytes):
            path = path.decode("utf-8", "replace")
        return realpath(join(os.getcwd(), path)) if isinstance(path, str) else None
    def deny(what):
        raise PermissionError(what + " is blocked in the tinytool sandbox")
    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            p = where(path)
            if p is None:
                return
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool(flags & 0o3 or flags & 0o100)
            if writing:
                if not inside(p, (home,)):
                    deny("writing " + p)
                if p.endswith((".so", ".pyd", ".dylib")) or ".so." in os.path.basename(p):
                    deny("writing native code " + p)
                writes[0] += 1
                if writes[0] > max_files:
                    deny("opening more than %d files for writing" % max_files)
            elif not inside(p, readable):
                deny("reading " + p)
        elif event in ("os.remove", "os.rmdir", "os.mkdir", "os.rename", "os.replace", "os.chmod", "os.chown",
                       "os.link", "os.symlink", "os.truncate", "os.utime", "shutil.rmtree", "shutil.move",
                       "shutil.copyfile", "os.chdir", "os.listdir", "os.scandir"):
            for a in args[:2]:
                p = where(a) if isinstance(a, (str, bytes)) else None
                if p is not None and not inside(p, (home,) if event not in ("os.listdir", "os.scandir")
                                                else readable):
                    deny(event + " on " + p)
        elif event.startswith("ctypes."):
            deny("native code")
        elif event.startswith("socket.") and not network:
            deny("network access")
        elif not processes and (event in ("os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn",
                                          "os.spawn", "subprocess.Popen", "pty.spawn", "os.kill", "os.killpg")):
            deny(event)
    sys.addaudithook(hook)
_guard()
sys.stderr.write("\x00tinytool-sandbox " + json.dumps({"network": net, "user": user}) + "\n")
sys.stderr.flush()
size = int(sys.stdin.buffer.readline() or b"0")
source = sys.stdin.buffer.read(size).decode("utf-8", "replace")
sys.argv = [cfg["name"]]
sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) != os.path.realpath(os.getcwd())]  # nothing imports
code = compile(source, cfg["name"], "exec")                                                     # from its own dir
for _name in ("libc", "ctypes", "resource", "cfg", "size", "_limit", "net", "user", "source", "_guard",
              "_others_can_read"):
    globals().pop(_name, None)
exec(code, {"__name__": "__main__", "__file__": sys.argv[0], "__builtins__": __builtins__})
'''

MARK = "\x00tinytool-sandbox "


@dataclass
class Limits:
    """What a program may use. ``timeout_s`` is wall-clock time; ``cpu_s`` defaults to it."""

    timeout_s: float = 10.0
    cpu_s: int | None = None
    memory_mb: int = 512
    file_mb: int = 16
    max_procs: int = 64
    max_files: int = 64  # files opened for writing, at most
    output_bytes: int = 64 * 1024
    network: bool = False
    processes: bool = False  # allow subprocesses, forks and signals

    def config(self, name: str) -> str:
        return json.dumps({"network": self.network, "memory_bytes": self.memory_mb * 2**20,
                           "cpu_s": int(self.cpu_s or max(1, round(self.timeout_s))),
                           "file_bytes": self.file_mb * 2**20, "max_procs": self.max_procs, "name": name,
                           "max_files": self.max_files, "processes": self.processes})


@dataclass
class Result:
    """How a program ended: ``status`` is ok, error, timeout, cpu-time, memory, file-size or killed."""

    status: str
    exit_code: int | None
    stdout: str
    stderr: str
    seconds: float
    network: str  # how the network was cut: namespace, blocked-sockets, or none (allowed)
    truncated: bool = False
    user: str = "same"  # who the program ran as: nobody (dropped from root), same, or root (could not drop)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _clean_env(home: str) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "PYTHONIOENCODING": "utf-8"}


class _Process:
    """One sandboxed interpreter, started and limited, waiting for its program."""

    def __init__(self, limits: Limits, name: str = "program.py"):
        self.limits = limits
        self.home = tempfile.mkdtemp(prefix="tinytool-sandbox-")
        self.out_path, self.err_path = Path(self.home) / ".stdout", Path(self.home) / ".stderr"
        self.out, self.err = self.out_path.open("wb"), self.err_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _BOOT, limits.config(name)], stdin=subprocess.PIPE, stdout=self.out,
            stderr=self.err, cwd=self.home, env=_clean_env(self.home), start_new_session=True)

    def run(self, source: str) -> Result:
        data = source.encode("utf-8")
        t0 = time.perf_counter()
        timed_out = False
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(str(len(data)).encode() + b"\n" + data)
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # it ended before reading: its status says why
        try:
            self.proc.wait(timeout=self.limits.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        self._kill_group()
        seconds = time.perf_counter() - t0
        return self._result(timed_out, seconds)

    def _kill_group(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the program's children too
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()

    def _result(self, timed_out: bool, seconds: float) -> Result:
        self.out.close()
        self.err.close()
        cap = self.limits.output_bytes
        stdout, out_more = _read(self.out_path, cap)
        stderr, err_more = _read(self.err_path, cap + 256)
        network, user = "none", "same"
        if stderr.startswith(MARK):
            head, _, stderr = stderr.partition("\n")
            info = json.loads(head[len(MARK):])
            network, user = info.get("network", "none"), info.get("user", "same")
        code = self.proc.returncode
        if timed_out:
            status = "timeout"
        elif code == 0:
            status = "ok"
        elif code == -signal.SIGXCPU:
            status = "cpu-time"
        elif code == -signal.SIGXFSZ or "File too large" in stderr[-400:]:
            status = "file-size"
        elif "MemoryError" in stderr[-2000:] or code == -signal.SIGSEGV and "memory" in stderr.lower():
            status = "memory"
        elif code is not None and code < 0:
            status = f"killed (signal {-code})"
        else:
            status = "error"
        shutil.rmtree(self.home, ignore_errors=True)
        return Result(status, None if timed_out else code, stdout, stderr, round(seconds, 3), network,
                      out_more or err_more, user)

    def discard(self) -> None:
        self._kill_group()
        self.out.close()
        self.err.close()
        shutil.rmtree(self.home, ignore_errors=True)


def _read(path: Path, cap: int) -> tuple[str, bool]:
    try:
        with path.open("rb") as fh:
            data = fh.read(cap + 1)
    except OSError:
        return "", False
    return data[:cap].decode("utf-8", "replace"), len(data) > cap


def run_program(source: str, limits: Limits | None = None, name: str = "program.py") -> Result:
    """Run Python ``source`` in a fresh sandboxed process (see the module docstring)."""
    return _Process(limits or Limits(), name).run(source)


class SandboxPool:
    """``size`` sandboxed processes started ahead, each running one program: `run` takes a waiting process and
    starts its replacement. Thread-safe; `close` ends the waiting ones."""

    def __init__(self, size: int = 2, limits: Limits | None = None):
        self.limits = limits or Limits()
        self.size = size
        self._lock = threading.Lock()
        self._idle = [_Process(self.limits) for _ in range(size)]

    def run(self, source: str) -> Result:
        with self._lock:
            proc = self._idle.pop(0) if self._idle else _Process(self.limits)
            self._idle.append(_Process(self.limits))
        return proc.run(source)

    def close(self) -> None:
        with self._lock:
            for p in self._idle:
                p.discard()
            self._idle = []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def isolation() -> str:
    """How the network is cut on this machine: ``namespace`` or ``blocked-sockets``."""
    return run_program("pass", Limits(timeout_s=10)).network


__all__ = ["Limits", "Result", "SandboxPool", "isolation", "run_program"]
