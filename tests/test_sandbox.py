"""The sandbox probed from outside: each limit ends a program the way it says, the network is cut, the
environment is clean, the directory private, children die with their parent, and the pool runs programs in
fresh processes."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tinytool.cli import app
from tinytool.sandbox import Limits, SandboxPool, isolation, run_program


def test_a_program_runs_in_a_private_directory_with_a_clean_environment(monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    r = run_program("import os, sys\nprint(os.getcwd())\nprint(os.environ.get('SECRET_TOKEN'))\n"
                    "open('note.txt', 'w').write('x')\nprint(sorted(os.environ))")
    assert r.ok and r.exit_code == 0
    cwd, secret, env = r.stdout.splitlines()
    assert secret == "None" and "SECRET_TOKEN" not in env
    assert "tinytool-sandbox-" in cwd and not os.path.exists(cwd)  # removed afterwards


@pytest.mark.parametrize("source, limits, status", [
    ("raise ValueError('boom')", Limits(), "error"),
    ("while True:\n    pass", Limits(timeout_s=10, cpu_s=1), "cpu-time"),
    ("import time\ntime.sleep(30)", Limits(timeout_s=0.5), "timeout"),
    ("x = bytearray(2 * 1024**3)", Limits(memory_mb=256), "memory"),
    ("open('big', 'wb').write(b'x' * (8 * 1024**2))", Limits(file_mb=1), "file-size"),
])
def test_each_limit_ends_a_program_as_it_says(source, limits, status):
    r = run_program(source, limits)
    assert r.status == status, (r.status, r.stderr[-300:])
    if status == "timeout":
        assert r.exit_code is None and r.seconds < 5


def test_the_network_is_cut_and_the_check_says_how():
    how = isolation()
    assert how in ("namespace", "blocked-sockets")
    r = run_program("import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)")
    assert r.status == "error" and ("unreachable" in r.stderr or "blocked" in r.stderr), r.stderr[-300:]
    assert r.network == how


def test_a_timeout_kills_the_whole_process_group():
    marker = f"tinytool-sandbox-child-{os.getpid()}-{time.time_ns()}"
    r = run_program(f"import subprocess, time\nsubprocess.Popen(['sh', '-c', 'exec -a {marker} sleep 30'])\n"
                    "time.sleep(30)", Limits(timeout_s=1, processes=True))  # processes allowed for this test
    assert r.status == "timeout"
    time.sleep(0.2)
    left = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker.encode() in cmdline.read_bytes():
                left.append(cmdline.parent.name)
        except OSError:
            continue
    assert left == []


def test_output_is_truncated_and_says_so():
    r = run_program("print('y' * 200000)", Limits(output_bytes=1000))
    assert r.ok and len(r.stdout) == 1000 and r.truncated


def test_the_pool_runs_each_program_in_a_fresh_process():
    with SandboxPool(2) as pool:
        pids = {pool.run("import os\nprint(os.getpid())").stdout.strip() for _ in range(4)}
        leaked = pool.run("import builtins\nprint(hasattr(builtins, 'LEAK'))")
        pool.run("import builtins\nbuiltins.LEAK = 1")
        after = pool.run("import builtins\nprint(hasattr(builtins, 'LEAK'))")
    assert len(pids) == 4 and leaked.stdout.strip() == after.stdout.strip() == "False"


def test_sandbox_run_verb_prints_the_output_and_how_it_ended(tmp_path):
    prog = tmp_path / "tool.py"
    prog.write_text("print('answer: 42')\nimport sys\nsys.exit(3)")
    res = CliRunner().invoke(app, ["sandbox", "run", str(prog), "--timeout", "5"])
    assert res.exit_code == 3 and "answer: 42" in res.output and "ended: error (exit code 3)" in res.output
    prog.write_text("import time\ntime.sleep(10)")
    res = CliRunner().invoke(app, ["sandbox", "run", str(prog), "--timeout", "0.5", "--json"])
    assert res.exit_code == 124 and json.loads(res.output.splitlines()[0])["status"] == "timeout"
    res = CliRunner().invoke(app, ["sandbox", "run", str(tmp_path / "missing.py")])
    assert res.exit_code == 2 and "no such file" in res.output


HOSTILE = {
    "fork bomb": "import os\nwhile True:\n    os.fork()",
    "fork bomb via subprocess": "import subprocess\nwhile True:\n    subprocess.Popen(['sleep', '100'])",
    "os.system": "import os\nos.system('touch /tmp/tinytool-escaped')",
    "exec a shell": "import os\nos.execv('/bin/sh', ['sh', '-c', 'touch /tmp/tinytool-escaped'])",
    "posix_spawn": "import os\nos.posix_spawn('/bin/sh', ['sh'], {})",
    "memory bomb": "x = []\nwhile True:\n    x.append(' ' * 10**7)",
    "one huge allocation": "x = bytearray(10**11)",
    "infinite loop": "while True:\n    pass",
    "sleep forever": "import time\ntime.sleep(10**6)",
    "busy thread": "import threading\nthreading.Thread(target=exec, args=('while True: pass',)).start()",
    "thread bomb": "import threading, time\nwhile True:\n    threading.Thread(target=time.sleep, args=(100,)).start()",
    "ignore SIGXCPU": "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass",
    "network connect": "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)",
    "dns lookup": "import socket\nsocket.getaddrinfo('example.com', 80)",
    "unix socket": "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('/var/run/docker.sock')",
    "urllib": "import urllib.request\nurllib.request.urlopen('http://example.com', timeout=2)",
    "read /etc/passwd": "print(open('/etc/passwd').read())",
    "read /etc/shadow": "print(open('/etc/shadow').read())",
    "read the parent's environment": "import os\nprint(open(f'/proc/{os.getppid()}/environ').read())",
    "read pid 1's memory map": "print(open('/proc/1/maps').read())",
    "list the root": "import os\nprint(os.listdir('/'))",
    "write outside its dir": "open('/tmp/tinytool-escaped', 'w').write('x')",
    "write via os.open": "import os\nos.write(os.open('/tmp/tinytool-escaped', os.O_CREAT | os.O_WRONLY), b'x')",
    "write through a symlink": "import os\nos.symlink('/tmp/tinytool-escaped', 'l')\nopen('l', 'w').write('x')",
    "chdir out then write": "import os\nos.chdir('/tmp')\nopen('tinytool-escaped', 'w').write('x')",
    "delete outside": "import os\nos.remove('/tmp/tinytool-keep')",
    "ctypes libc": "import ctypes\nctypes.CDLL(None).system(b'touch /tmp/tinytool-escaped')",
    "write a native module": "open('evil.so', 'wb').write(b'\\x7fELF')",
    "many files": "for i in range(1000):\n    open(f'f{i}', 'w').write('x')",
    "huge file": "open('big', 'wb').write(b'x' * 10**9)",
    "signal the parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
    "signal everyone": "import os, signal\nos.kill(-1, signal.SIGKILL)",
    "huge output": "import sys\nwhile True:\n    sys.stdout.write('y' * 65536)",
    "deep recursion": "def f(n):\n    return f(n + 1)\nf(0)",
    "reach the boot's libc": "import __main__\n__main__.libc.system(b'touch /tmp/tinytool-escaped')",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_programs_are_stopped_and_nothing_leaks(name, tmp_path):
    keep = Path("/tmp/tinytool-keep")
    keep.write_text("x")
    escaped = Path("/tmp/tinytool-escaped")
    escaped.unlink(missing_ok=True)
    parent = os.getpid()
    limits = Limits(timeout_s=2, cpu_s=1, memory_mb=256, file_mb=8)
    t0 = time.perf_counter()
    r = run_program(HOSTILE[name], limits)
    took = time.perf_counter() - t0
    assert not r.ok or name in ("huge output",), (r.status, r.stdout[:200], r.stderr[-300:])
    assert took < limits.timeout_s + 1.5
    assert os.getpid() == parent and keep.exists() and not escaped.exists()
    assert "root:" not in r.stdout  # /etc/passwd was not read
