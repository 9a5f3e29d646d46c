"""``tinytool mcp serve``: one of tinytool's environments as an MCP server."""

from __future__ import annotations

import typer

from tinytool.clikit import err, make_app

mcp_app_cli = make_app(help="MCP: serve tinytool's environments to any MCP client.", no_args_is_help=True)


@mcp_app_cli.command("serve")
def serve(
    env: str = typer.Option("demo", "--env", help="Environment to serve: demo (the demo catalog's tools)."),
    world_seed: int = typer.Option(0, "--world-seed", help="Seed of the demo world the tools act on."),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8765, "--port", "-p", min=1, max=65535),
) -> None:
    """Serve an environment's tools over MCP (streamable HTTP at http://HOST:PORT/mcp): every tool of the demo
    catalog, acting on the seeded world.

    Example: tinytool mcp serve --env demo --port 8765, then tinytool synth tools --mcp http://127.0.0.1:8765/mcp -o catalog.jsonl
    """
    import uvicorn

    from tinytool.data.demo.catalog import CATALOG
    from tinytool.envs import DemoEnv
    from tinytool.envs.mcp import mcp_app
    from tinytool.errors import UserInputError

    if env != "demo":
        raise UserInputError(f"--env {env!r}: only the demo environment can be served", fix="--env demo")
    task = {"tools": [s.tool.to_dict() for s in CATALOG.values()], "world_seed": world_seed}
    app = mcp_app(DemoEnv(max_turns=10**9), task, name="tinytool-demo")
    err.print(f"serving {len(CATALOG)} demo tools over MCP at http://{host}:{port}/mcp")
    uvicorn.run(app, host=host, port=port, log_level="warning")
