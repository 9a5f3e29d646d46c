"""A sandbox for generated code: separate processes with CPU, memory, file-size and process limits, no network,
a private directory, a clean environment and a wall-clock kill of the whole process group (see `core`)."""

from tinytool.sandbox.core import Limits, Result, SandboxPool, isolation, run_program

__all__ = ["Limits", "Result", "SandboxPool", "isolation", "run_program"]
