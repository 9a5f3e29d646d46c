"""Hermes / Qwen format: tools in ``<tools>`` in the system prompt, ``<think>`` reasoning,
``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` calls, ``<tool_response>`` results.

STAR App. A.1, Fig. 5 is the prompt this follows; the format
rules of STAR §3.2.1 (one ``<think>`` pair, each call its own ``<tool_call>`` holding one JSON
object with ``name`` and ``arguments``) are what `parse` reports as errors.
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

_INSTRUCTIONS = """\
Before you answer, reason inside <think></think>: decide whether the request needs one of the \
tools, needs more information from the user, or can be answered without any tool.
- If a tool is needed and the user has given every required value, call it (several calls are fine).
- If a tool is needed but a required value is missing, ask the user for it instead of guessing.
- If none of the tools fits the request, answer directly and call nothing."""

_TOOL_BLOCK = """\
# Tools

The functions you can call are listed below inside <tools></tools>, one JSON signature per line:
<tools>
{tools}
</tools>

To call a function, write a JSON object with its name and arguments inside {open}{close} \
tags, one pair of tags per call:
{open}{pad}{{"name": <function-name>, "arguments": <args-json-object>}}{pad}{close}"""

#: Hermes' reasoning, written in every turn of the thinking variant (STAR's rule 1)
THINK = Tags("<think>", "</think>", "\n")


class HermesFormat(PromptFormat):
    """Hermes/Qwen tool calling. ``think=True`` asks for and writes a ``<think>`` block in every
    assistant turn (STAR's rule 1); ``think=False`` leaves reasoning out. Rendering, parsing and the
    system prompt's instructions follow `call_tags`, so a subclass with tags of its own is a format of
    its own."""

    uses_native_tool_block = True
    #: the tags around each call, each call its own block
    call_tags = Tags("<tool_call>", "</tool_call>", "\n")

    def __init__(self, think: bool = True):
        self.think = think
        self.name = "hermes" if think else "hermes-nothink"
        self.syntax = CallSyntax("blocks", self.call_tags, think=THINK if think else None, always_think=think)

    def system_prompt(self, tools: list[Tool], system: str | None = None) -> str:
        parts = [system.strip()] if system and system.strip() else ["You are a helpful assistant."]
        if tools:
            if self.think:
                parts.append(_INSTRUCTIONS)
            listing = tool_lines(tools)
            c = self.call_tags
            parts.append(_TOOL_BLOCK.format(tools=listing, open=c.open, close=c.close, pad=c.pad))
        return "\n\n".join(parts)

    def native_system_prompt(self, system: str | None) -> str | None:
        """The template writes the tools; the ``<think>`` instructions are still the format's."""
        parts = [system.strip()] if system and system.strip() else []
        if self.think:
            parts.append(_INSTRUCTIONS)
        return "\n\n".join(parts) or None

    def render_assistant(self, message: Message) -> str:
        parts = []
        if self.think:
            parts.append(f"{THINK.open}{THINK.pad}{(message.reasoning or '').strip()}{THINK.pad}{THINK.close}")
        if message.content and message.content.strip():
            parts.append(message.content.strip())
        c = self.call_tags
        for call in message.tool_calls:
            parts.append(f"{c.open}{c.pad}{dump_call(call)}{c.pad}{c.close}")
        return "\n\n".join(parts) if parts else ""

    def render_tool_result(self, message: Message) -> str:
        return f"<tool_response>\n{message.content or ''}\n</tool_response>"

    def parse_body(self, text: str, spans: list[tuple[int, int]], parsed: Parsed) -> None:
        rest = cut_spans(text, spans)
        c = self.call_tags
        blocks, errs = find_blocks(rest, c.open, c.close)
        parsed.errors.extend(errs)
        for k, (_, _, inner) in enumerate(blocks):
            if self.strict and k == len(blocks) - 1 and f"unclosed {c.open}" in errs:
                parsed.errors.append(f"strict: unclosed {c.open} block dropped")
                continue
            read_call_block(inner, parsed, strict=self.strict)
        if blocks:
            parsed.sections.append("tool_call")
        parsed.response = cut_spans(rest, [(s, e) for s, e, _ in blocks]).strip()
        if parsed.response:
            # the response may sit before or after the calls; record where it starts
            first_block = blocks[0][0] if blocks else len(rest)
            lead = rest[:first_block].strip()
            if lead and blocks:
                parsed.sections.insert(parsed.sections.index("tool_call"), "response")
            else:
                parsed.sections.append("response")
        if parsed.think_pairs > 1:
            parsed.errors.append(f"{parsed.think_pairs} <think> blocks (expected one)")
