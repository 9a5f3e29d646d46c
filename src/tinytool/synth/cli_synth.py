"""``tinytool synth …``: ASTRA's synthesis steps."""

from __future__ import annotations

from pathlib import Path

import typer

from tinytool.clikit import err, make_app

synth_app = make_app(help="Synthesize data and environments from tool documents (ASTRA).", no_args_is_help=True)


@synth_app.command("tools")
def tools_cmd(
    files: list[Path] = typer.Argument(..., help="Tool documents: JSON or JSONL of OpenAI, MCP, xLAM or BFCL tools, "
                                       "or servers {server, tools: [...]}."),
    out: Path = typer.Option(..., "--out", "-o", dir_okay=False, help="JSONL of servers with their tools."),
    min_tools: int = typer.Option(3, "--min-tools", min=1, help="Drop servers with fewer tools (ASTRA §2.1.1: 3)."),
    min_words: int = typer.Option(3, "--min-words", min=0, help="Drop tools whose description has fewer words."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing non-empty output file."),
) -> None:
    """Normalise tool documents to the OpenAI tool shape, group them by server and keep the servers that can
    support multi-step work (ASTRA §2.1.1); prints what each filter dropped.

    Example: tinytool synth tools mcp_servers.json xlam_tools.jsonl -o catalog.jsonl
    """
    from tinytool.io import check_not_input, check_output_file, write_jsonl
    from tinytool.synth.tools import build_catalog, read_tool_documents

    check_not_input(out, *files)
    check_output_file(out, overwrite)
    entries, bad = read_tool_documents(files)
    catalog = build_catalog(entries, min_tools=min_tools, min_words=min_words)
    write_jsonl(out, catalog.to_rows())
    r = catalog.report()
    dropped = ", ".join(f"{k} {v}" for k, v in r["dropped"].items()) or "none"
    err.print(f"read {r['tools_read']} tools ({bad} lines not JSON); kept {r['tools']} tools in {r['servers']} "
              f"servers; dropped: {dropped} -> {out}")
