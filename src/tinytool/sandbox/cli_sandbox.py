"""``tinytool sandbox run PROGRAM.py``: run one program in the sandbox and say how it ended."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from tinytool.clikit import err, fail, make_app

sandbox_app = make_app(help="Run generated code in the sandbox.", no_args_is_help=True)


@sandbox_app.command("run")
def run(
    program: Path = typer.Argument(..., help="Python file to run."),
    timeout: float = typer.Option(10.0, "--timeout", min=0.1, help="Wall-clock seconds before the process group "
                                  "is killed."),
    memory_mb: int = typer.Option(512, "--memory-mb", min=16, help="Address-space limit."),
    cpu_s: int = typer.Option(None, "--cpu-s", min=1, help="CPU-time limit [default: the timeout]."),
    file_mb: int = typer.Option(16, "--file-mb", min=1, help="Largest file the program may write."),
    network: bool = typer.Option(False, "--network", help="Allow the network (off by default)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Run PROGRAM.py in a separate process with CPU, memory, file-size and process limits, no network, a private
    temporary directory and a clean environment; print its stdout, stderr (truncated) and how it ended. The exit
    code is the program's (124 on a timeout).

    Example: tinytool sandbox run tool.py --timeout 5 --memory-mb 256
    """
    from tinytool.sandbox import Limits, run_program

    if not program.is_file():
        fail(f"{program}: no such file")
    try:
        source = program.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        fail(f"{program}: not UTF-8 text")
    r = run_program(source, Limits(timeout_s=timeout, cpu_s=cpu_s, memory_mb=memory_mb, file_mb=file_mb,
                                   network=network), name=program.name)
    if as_json:
        typer.echo(json.dumps(r.to_dict(), ensure_ascii=False))
    else:
        typer.echo(r.stdout, nl=False)
        if r.stderr:
            err.print(r.stderr.rstrip(), markup=False, highlight=False)
        how = r.status if r.exit_code is None else f"{r.status} (exit code {r.exit_code})"
        err.print(f"ended: {how} after {r.seconds:.2f}s; network: {r.network}"
                  + ("; output truncated" if r.truncated else ""), markup=False)
    raise typer.Exit(124 if r.status == "timeout" else (r.exit_code if r.exit_code and r.exit_code > 0 else
                                                        (0 if r.ok else 1)))
