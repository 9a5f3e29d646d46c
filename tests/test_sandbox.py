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
                    "time.sleep(30)", Limits(timeout_s=1))
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
