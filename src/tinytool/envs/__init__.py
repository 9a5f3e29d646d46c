"""Executable tool environments.

`ToolEnv` is the protocol multi-turn rollouts use (reset with a task → tools; step with a turn's calls →
observations; done; trajectory reward); `DemoEnv` runs the demo catalog's tools on a seeded world.

`BFCLEnv` runs BFCL's multi-turn API classes (file system, trading bot, travel booking, ...) straight
from the ``bfcl-eval`` wheel: calls go in as Python call strings or (name, arguments) pairs, results
come back as the strings BFCL shows the model, and `BFCLEnv.state` is what BFCL's checker compares.
"""

from tinytool.envs.base import ToolEnv, run_tool
from tinytool.envs.bfcl import (
    API_CLASSES,
    BFCLEnv,
    BFCLEnvError,
    CallSyntaxError,
    load_api_classes,
    parse_call,
)
from tinytool.envs.demo import ENVS, EVAL_ENVS, BFCLToolEnv, DemoEnv
from tinytool.envs.mcp import MCPClient, MCPEnv, MCPError, mcp_app
from tinytool.envs.synth import SynthEnv

__all__ = [
    "API_CLASSES",
    "ENVS",
    "EVAL_ENVS",
    "BFCLEnv",
    "BFCLEnvError",
    "BFCLToolEnv",
    "CallSyntaxError",
    "DemoEnv",
    "MCPClient",
    "MCPEnv",
    "MCPError",
    "SynthEnv",
    "ToolEnv",
    "load_api_classes",
    "mcp_app",
    "parse_call",
    "run_tool",
]
