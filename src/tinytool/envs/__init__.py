"""Executable tool environments.

`BFCLEnv` runs BFCL's multi-turn API classes (file system, trading bot, travel booking, ...) straight
from the ``bfcl-eval`` wheel: calls go in as Python call strings or (name, arguments) pairs, results
come back as the strings BFCL shows the model, and `BFCLEnv.state` is what BFCL's checker compares.
"""

from tinytool.envs.bfcl import (
    API_CLASSES,
    BFCLEnv,
    BFCLEnvError,
    CallSyntaxError,
    load_api_classes,
    parse_call,
)

__all__ = [
    "API_CLASSES",
    "BFCLEnv",
    "BFCLEnvError",
    "CallSyntaxError",
    "load_api_classes",
    "parse_call",
]
