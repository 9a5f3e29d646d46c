"""ToolRL format: ``<think>``, then ``<tool_call>`` holding one JSON object per line with
``"name"`` and ``"parameters"``, and/or ``<response>``; tool results come back as ``<obs>``.

ToolRL §3.2, Fig. 4 (system prompt) and Fig. 11 (dialogue
history). History is kept as chat turns (assistant turns in this format, observations as user turns
wrapped in ``<obs>``) rather than folded into one user message, so the same chat template serves
every format.
"""

from __future__ import annotations

from tinytool.formats.base import (
    CallSyntax,
    Parsed,
    PromptFormat,
    Tags,
    cut_spans,
    find_blocks,
    tool_lines,
)
from tinytool.formats.calls import dump_call, read_call_block
from tinytool.schema import Message, Tool

_SYSTEM = """\
You are a dialogue assistant that can call tools to solve the user's task and reply to the user.

## Tools you can use
{tools}

## Each turn
1. Think: recall what matters from the conversation so far and work out what the user wants now.
2. Decide whether a tool is needed; if so, choose it and its parameters.
3. Reply to the user when a reply is needed, consistent with everything said before.

## How to write your output
<think> your reasoning </think>
<tool_call>
{{"name": "tool name", "parameters": {{"parameter name": "value"}}}}
{{"name": "another tool", "parameters": {{}}}}
</tool_call>
<response> your reply to the user </response>

## Rules
1. Always write the <think> part. Then write <tool_call>, <response>, or both.
2. Inside <tool_call>, put one JSON object per line, each with a "name" and a "parameters" object
   (an empty object when the tool takes no parameters). Several calls may go in the same turn.
3. Earlier turns show your past <tool_call> and <response> parts, and tool results as <obs>."""


class ToolRLFormat(PromptFormat):
    """ToolRL's ``<think>/<tool_call>/<response>`` format with ``<obs>`` observations."""

    name = "toolrl"
    #: one block of calls, a call a line; reasoning first in every turn; a reply in its own tags (the spaces written
    #: inside the reasoning and reply tags are not required when reading)
    syntax = CallSyntax("lines", Tags("<tool_call>", "</tool_call>", "\n"), args_key="parameters", sep="\n",
                        think=Tags("<think>", "</think>"), always_think=True, think_sep="\n",
                        reply=Tags("<response>", "</response>"))

    def system_prompt(self, tools: list[Tool], system: str | None = None) -> str:
        listing = tool_lines(tools) or "(none)"
        body = _SYSTEM.format(tools=listing)
        return f"{system.strip()}\n\n{body}" if system and system.strip() else body

    def render_assistant(self, message: Message) -> str:
        parts = [f"<think> {(message.reasoning or '').strip()} </think>"]
        if message.tool_calls:
            lines = "\n".join(dump_call(c, args_key="parameters") for c in message.tool_calls)
            parts.append(f"<tool_call>\n{lines}\n</tool_call>")
        if message.content and message.content.strip():
            parts.append(f"<response> {message.content.strip()} </response>")
        return "\n".join(parts)

    def render_tool_result(self, message: Message) -> str:
        return f"<obs> {message.content or ''} </obs>"

    def parse_body(self, text: str, think_spans: list[tuple[int, int]], parsed: Parsed) -> None:
        calls, call_errs = find_blocks(text, "<tool_call>", "</tool_call>")
        resp, resp_errs = find_blocks(text, "<response>", "</response>")
        parsed.errors.extend(call_errs + resp_errs)
        for k, (_, _, inner) in enumerate(calls):
            if self.strict and k == len(calls) - 1 and "unclosed <tool_call>" in call_errs:
                parsed.errors.append("strict: unclosed <tool_call> block dropped")
                continue
            read_call_block(inner, parsed, args_key="parameters", allow_many=True, strict=self.strict)
        if resp:
            parsed.response = "\n".join(inner.strip() for _, _, inner in resp).strip()
        # order of the parts as they first appear, for ToolRL's ordered-format check
        firsts = []
        if think_spans:
            firsts.append((think_spans[0][0], "think"))
        if calls:
            firsts.append((calls[0][0], "tool_call"))
        if resp:
            firsts.append((resp[0][0], "response"))
        parsed.sections = [name for _, name in sorted(firsts)]
        outside = cut_spans(text, think_spans + [(s, e) for s, e, _ in calls + resp]).strip()
        if outside:
            parsed.warnings.append("text outside <think>/<tool_call>/<response>")
            if not resp:
                parsed.response = outside
        if parsed.think_pairs > 1:
            parsed.errors.append(f"{parsed.think_pairs} <think> blocks (expected one)")
