"""The chat template a GGUF carries: tinytool's prompt format written as a Jinja template.

A model trained by tinytool saw its prompts rendered by a `PromptFormat` (the system prompt that lists the
tools, the text of assistant turns and tool results) inside the tokenizer's ChatML markup. Servers that read a
GGUF (llama.cpp, LM Studio) and ``transformers``' ``apply_chat_template`` render OpenAI-style ``messages`` and
``tools`` through the file's ``tokenizer.chat_template`` instead, so that template has to write exactly what the
format writes: the same system prompt, the same call syntax, tool results joined into one user turn the way
`PromptFormat.to_chat` joins them, and the markup of the model's own template (SmolLM2's default system prompt
when the conversation has none).

The template is built from the format's own texts (its system prompt is probed with a sentinel tool, so a change
to the wording reaches the template) and checked before it is written: `chat_template` renders a set of probe
conversations both ways and refuses the format when one differs (`TemplateUnsupported`, naming the format).

What the template reads (the Jinja chat-template conventions of the ``transformers`` documentation, "Chat
templates"): ``messages`` (``role``, ``content`` as text or text parts, ``tool_calls`` with ``function.name``
and ``function.arguments`` as an object, ``reasoning_content`` or ``reasoning``, and a tool message's
``name``), ``tools`` (OpenAI function tools) and ``add_generation_prompt``. Tool listings are compact JSON
written by a macro of the template: ``tojson`` only ever gets a value and no ``separators`` argument (which
``transformers`` accepts and some other Jinja engines refuse). Arguments given as a JSON string (the OpenAI wire
form) are written as given.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from tinytool.errors import TinytoolError
from tinytool.formats import CallSyntax, PromptFormat, formats_with, template_supports_tools
from tinytool.formats.base import chatml, compact_json, tool_lines
from tinytool.schema import Conversation, Message, Tool, ToolCall


class TemplateUnsupported(TinytoolError):
    """A prompt format, or a tokenizer's chat markup, that tinytool cannot write as a chat template."""

    fix = "export a model trained in one of the --format choices (tinytool export --help) whose tokenizer writes ChatML"


IM_START, IM_END = "<|im_start|>", "<|im_end|>"


def lit(text: str) -> str:
    """``text`` as a Jinja string literal: backslash, double quote and every character that is not printable
    written as the escapes Jinja reads back (so the template holds no raw line or paragraph separators)."""
    out = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(repr(ch)[1:-1] if ch != "'" else ch)
    return '"' + "".join(out) + '"'


def fill(template: str, **values: str) -> str:
    """``template`` with each ``@@NAME@@`` replaced by ``values[NAME]`` in one pass (a value that holds a
    placeholder's spelling stays as it is)."""
    return re.sub(r"@@(\w+)@@", lambda m: values[m.group(1)], template)


# ---- the tokenizer's markup -------------------------------------------------------------------------------
def default_system(tokenizer: Any) -> str | None:
    """The system prompt the tokenizer's template writes when a conversation has none (SmolLM2's names it
    SmolLM); None when it writes none. Raises `TemplateUnsupported` for markup other than ChatML, and for a
    template that writes tools itself (a format would then leave the tool block to it)."""
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        return None
    if template_supports_tools(tokenizer):
        raise TemplateUnsupported("the tokenizer's chat template writes the tools itself; tinytool writes the "
                                  "template only for chat markup that leaves tools to the prompt format")
    probes = [
        ([{"role": "user", "content": "U"}], True),
        ([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": "A"}],
         False),
        ([{"role": "user", "content": "U"}, {"role": "assistant", "content": "A"}, {"role": "user", "content": "V"}],
         True),
    ]
    found: str | None = None
    for chat, gen in probes:
        text = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=gen)
        plain = chatml(chat, gen)
        if text == plain:
            continue
        prefix = text[: len(text) - len(plain)] if text.endswith(plain) else None
        head = f"{IM_START}system\n"
        if chat[0]["role"] == "system" or prefix is None or not (prefix.startswith(head) and
                                                                 prefix.endswith(f"{IM_END}\n")):
            raise TemplateUnsupported("the tokenizer's chat template does not write ChatML (<|im_start|>role ... "
                                      "<|im_end|>); tinytool writes the template for ChatML models only")
        found = prefix[len(head):-len(IM_END) - 1]
    return found


# ---- pieces every format shares -----------------------------------------------------------------------------
_COMMON = r"""
{%- macro text(c) -%}
{%- if c is string -%}{{ c }}
{%- elif c is iterable and c is not mapping -%}{%- for p in c -%}{{ p.text if p is mapping else p }}{%- endfor -%}
{%- endif -%}
{%- endmacro -%}
{%- macro cjson(v) -%}
{%- if v is mapping -%}{{- '{' -}}{%- for k, x in v.items() -%}{{- ',' if not loop.first -}}{{- k|tojson ~ ':' ~ cjson(x) -}}{%- endfor -%}{{- '}' -}}
{%- elif v is iterable and v is not string -%}{{- '[' -}}{%- for x in v -%}{{- ',' if not loop.first -}}{{- cjson(x) -}}{%- endfor -%}{{- ']' -}}
{%- else -%}{{- v|tojson -}}
{%- endif -%}
{%- endmacro -%}
{%- macro fn(t) -%}
{%- set f = t.function if t.function is defined else t -%}
{{- '{"name":' ~ f.name|tojson ~ ',"description":' ~ (f.description or '')|tojson ~ ',"parameters":' -}}
{{- cjson(f.parameters if f.parameters is mapping else {"type": "object", "properties": {}}) ~ '}' -}}
{%- endmacro -%}
{%- macro args(a) -%}
{{- a if a is string else (a if a is mapping else {})|tojson -}}
{%- endmacro -%}
{%- macro reasoning(m) -%}
{{- (m.reasoning_content or m.reasoning or m.thinking or '')|trim -}}
{%- endmacro -%}
"""

_MAIN = r"""
{%- set ns = namespace(system=none) -%}
{%- set rest = messages -%}
{%- if messages and messages[0].role == 'system' -%}
{%- set ns.system = text(messages[0].content) -%}
{%- set rest = messages[1:] -%}
{%- endif -%}
{%- set offered = tools if tools else [] -%}
{%- if offered or ns.system -%}
{{- '<|im_start|>system\n' ~ system_prompt(offered, ns.system) ~ '<|im_end|>\n' -}}
{%- elif rest and rest[0].role != 'system' and @@DEFAULT_SYSTEM@@ -%}
{{- '<|im_start|>system\n' ~ @@DEFAULT_SYSTEM@@ ~ '<|im_end|>\n' -}}
{%- endif -%}
{%- for m in rest -%}
{%- if m.role == 'assistant' -%}
{{- '<|im_start|>assistant\n' ~ assistant(m) ~ '<|im_end|>\n' -}}
{%- elif m.role == 'tool' -%}
{%- if loop.index0 > 0 and rest[loop.index0 - 1].role == 'tool' -%}{{- '\n' -}}{%- else -%}{{- '<|im_start|>user\n' -}}{%- endif -%}
{{- tool_result(m) -}}
{%- if loop.last or rest[loop.index0 + 1].role != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}
{%- else -%}
{{- '<|im_start|>' ~ m.role ~ '\n' ~ text(m.content) ~ '<|im_end|>\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}
"""

# a tool that stands for the listing, so the texts around it can be read off the format's system prompt
PROBE_TOOL = Tool(name="tinytool_listing_probe", description="d", parameters={"type": "object", "properties": {}})


def _split_on(text: str, listing: str, fmt: PromptFormat) -> tuple[str, str]:
    if text.count(listing) != 1:
        raise TemplateUnsupported(f"format {fmt.name}: its system prompt does not list the tools once, so it cannot "
                                  "be written as a chat template")
    before, after = text.split(listing)
    return before, after


def hermes_texts(fmt: PromptFormat) -> tuple[str, str, str]:
    """(default system text, text before the tool listing, text after it) of a Hermes format's system prompt,
    read off the format itself."""
    default = fmt.system_prompt([], None)
    listing = tool_lines([PROBE_TOOL])
    before, after = _split_on(fmt.system_prompt([PROBE_TOOL], "S"), listing, fmt)
    if not before.startswith("S") or fmt.system_prompt([], "S") != "S":
        raise TemplateUnsupported(f"format {fmt.name}: its system prompt has a shape the template does not know")
    return default, before[1:], after


def result_texts(fmt: PromptFormat) -> tuple[str, str]:
    """(text before, text after) a tool result's content as the format writes it, read off the format itself;
    `TemplateUnsupported` for a format whose tool results hold more than their content (the tool's name)."""
    sentinel = "tinytool_result_probe"
    text = fmt.render_tool_result(Message(role="tool", name=PROBE_TOOL.name, content=sentinel))
    if text.count(sentinel) != 1 or PROBE_TOOL.name in text:
        raise TemplateUnsupported(f"format {fmt.name}: its tool results have a shape the template does not know")
    before, after = text.split(sentinel)
    return before, after


def _tool_result(fmt: PromptFormat) -> str:
    before, after = result_texts(fmt)
    return fill(r"""
{%- macro tool_result(m) -%}
{{- @@BEFORE@@ ~ text(m.content) ~ @@AFTER@@ -}}
{%- endmacro -%}
""", BEFORE=lit(before), AFTER=lit(after))


def _call(syntax: CallSyntax, args: str) -> str:
    """A Jinja expression of one call object ``f`` as the format's JSON writes it (``args``: its arguments)."""
    return (f"{lit('{' + json.dumps(syntax.name_key) + ': ')} ~ f.name|tojson ~ "
            f"{lit(', ' + json.dumps(syntax.args_key) + ': ')} ~ {args} ~ '}}'")


def _blocks(fmt: PromptFormat) -> str:
    """Each call its own block (the ``blocks`` layout: Hermes, with or without thinking): the conversation's
    system text (or the format's default), then the tool block; the reasoning (in every turn when the format
    always thinks, else when a turn has some), text and call blocks, joined as the call syntax says."""
    s = fmt.syntax
    default, before, after = hermes_texts(fmt)
    think = ""
    if s.think is not None:
        t = s.think
        when = "true" if s.always_think else "reasoning(m)"
        think = fill(r"""
{%- if @@WHEN@@ -%}{{- @@OPEN@@ ~ reasoning(m) ~ @@CLOSE@@ -}}{%- set ns2.sep = @@THINK_SEP@@ -%}{%- endif -%}
""", WHEN=when, OPEN=lit(t.open + t.pad), CLOSE=lit(t.pad + t.close), THINK_SEP=lit(s.think_sep))
    c = s.call
    return fill(r"""
{%- macro system_prompt(offered, system) -%}
{{- system|trim if system and system|trim else @@DEFAULT@@ -}}
{%- if offered -%}{{- @@BEFORE@@ -}}{%- for t in offered -%}{{- '\n' if not loop.first -}}{{- fn(t) -}}{%- endfor -%}{{- @@AFTER@@ -}}{%- endif -%}
{%- endmacro -%}
{%- macro assistant(m) -%}
{%- set content = text(m.content)|trim -%}
{%- set ns2 = namespace(sep='') -%}
@@THINK@@
{%- if content -%}{{- ns2.sep ~ content -}}{%- set ns2.sep = @@SEP@@ -%}{%- endif -%}
{%- for c in (m.tool_calls or []) -%}
{%- set f = c.function if c.function is defined else c -%}
{{- ns2.sep ~ @@OPEN@@ ~ @@CALL@@ ~ @@CLOSE@@ -}}
{%- set ns2.sep = @@SEP@@ -%}
{%- endfor -%}
{%- endmacro -%}
""", DEFAULT=lit(default), BEFORE=lit(before), AFTER=lit(after), THINK=think.strip("\n"), SEP=lit(s.sep),
                OPEN=lit(c.open + c.pad), CLOSE=lit(c.pad + c.close), CALL=_call(s, "args(f.arguments)")) \
        + _tool_result(fmt)


def prefixed_texts(fmt: PromptFormat, listing: str, empty: str) -> tuple[str, str, str]:
    """(before, after, separator) of a format whose system prompt is the conversation's system text, a
    separator, and a body holding the listing (ToolRL, Python)."""
    body = fmt.system_prompt([PROBE_TOOL], None)
    before, after = _split_on(body, listing, fmt)
    with_system = fmt.system_prompt([PROBE_TOOL], "S")
    if not with_system.startswith("S") or not with_system.endswith(body):
        raise TemplateUnsupported(f"format {fmt.name}: its system prompt has a shape the template does not know")
    if fmt.system_prompt([], None) != before + empty + after:
        raise TemplateUnsupported(f"format {fmt.name}: its system prompt without tools has a shape the template "
                                  "does not know")
    return before, after, with_system[1:len(with_system) - len(body)]


_PREFIXED_SYSTEM = r"""
{%- macro system_prompt(offered, system) -%}
{{- system|trim ~ @@SEP@@ if system and system|trim -}}
{{- @@BEFORE@@ -}}@@LISTING@@{{- @@AFTER@@ -}}
{%- endmacro -%}
"""


def _lines(fmt: PromptFormat) -> str:
    """One block of calls, one JSON call a line (the ``lines`` layout: ToolRL): reasoning in every turn, the
    calls' block, a text answer inside the reply tags, each part on its own line; the reasoning and the answer
    set off from their tags by a space. The system prompt is the conversation's system text before a body that
    lists the tools (``(none)`` without them)."""
    s = fmt.syntax
    before, after, sep = prefixed_texts(fmt, tool_lines([PROBE_TOOL]), "(none)")
    listing = ("{%- if offered -%}{%- for t in offered -%}{{- '\\n' if not loop.first -}}{{- fn(t) -}}{%- endfor -%}"
               "{%- else -%}{{- '(none)' -}}{%- endif -%}")
    system = fill(_PREFIXED_SYSTEM, LISTING=listing, BEFORE=lit(before), AFTER=lit(after), SEP=lit(sep))
    t, c, r = s.think, s.call, s.reply
    return system + fill(r"""
{%- macro assistant(m) -%}
{{- @@THINK_OPEN@@ ~ reasoning(m) ~ @@THINK_CLOSE@@ -}}
{%- if m.tool_calls -%}
{{- @@PART_SEP@@ ~ @@OPEN@@ -}}
{%- for c in m.tool_calls -%}
{%- set f = c.function if c.function is defined else c -%}
{{- @@SEP@@ if not loop.first -}}
{{- @@CALL@@ -}}
{%- endfor -%}
{{- @@CLOSE@@ -}}
{%- endif -%}
{%- set content = text(m.content)|trim -%}
{%- if content -%}{{- @@PART_SEP@@ ~ @@REPLY_OPEN@@ ~ content ~ @@REPLY_CLOSE@@ -}}{%- endif -%}
{%- endmacro -%}
""", THINK_OPEN=lit(t.open + " "), THINK_CLOSE=lit(" " + t.close), PART_SEP=lit(s.think_sep),
                         OPEN=lit(c.open + c.pad), CLOSE=lit(c.pad + c.close), SEP=lit(s.sep),
                         CALL=_call(s, "args(f.arguments if f.arguments is defined else f.parameters)"),
                         REPLY_OPEN=lit(r.open + " "), REPLY_CLOSE=lit(" " + r.close)) + _tool_result(fmt)


def _escapes() -> list[tuple[str, str]]:
    """The characters Python's ``repr`` of a string writes as escapes, beyond backslash, quote, newline, return
    and tab: control characters, separators and format characters of the Basic Multilingual Plane's first
    blocks and a few beyond it (the ones text carries in practice)."""
    found = []
    for cp in [*range(0x3100), 0xFEFF, 0xFFF9, 0xFFFA, 0xFFFB]:
        ch = chr(cp)
        if ch in "\n\r\t" or ch.isprintable() or unicodedata.category(ch) == "Cn":
            continue
        found.append((ch, repr(ch)[1:-1]))
    return found


def _list(fmt: PromptFormat) -> str:
    """A list of Python calls (the ``list`` layout): ``[name(key=literal, …)]`` with Python's literal spelling (``True``, ``None``, quotes and
    escapes as ``repr`` writes them), reasoning in ``<think>`` when a turn has it, tool results as ``Result of
    NAME: …``."""
    before, after, sep = prefixed_texts(fmt, compact_json([PROBE_TOOL.function_dict()]), "[]")
    listing = "{{- '[' -}}{%- for t in offered -%}{{- ',' if not loop.first -}}{{- fn(t) -}}{%- endfor -%}{{- ']' -}}"
    system = fill(_PREFIXED_SYSTEM, LISTING=listing, BEFORE=lit(before), AFTER=lit(after), SEP=lit(sep))
    chain = "".join(f"|replace({lit(ch)}, {lit(esc)})" for ch, esc in _escapes())
    return system + fill(r"""
{%- macro pystr(s) -%}
{%- set e = s|replace('\\', '\\\\')|replace('\n', '\\n')|replace('\r', '\\r')|replace('\t', '\\t')@@CHAIN@@ -%}
{%- if "'" in s and '"' not in s -%}{{- '"' ~ e ~ '"' -}}{%- else -%}{{- "'" ~ e|replace("'", "\\'") ~ "'" -}}{%- endif -%}
{%- endmacro -%}
{%- macro py(v) -%}
{%- if v is none -%}{{- 'None' -}}
{%- elif v is boolean -%}{{- 'True' if v else 'False' -}}
{%- elif v is string -%}{{- pystr(v) -}}
{%- elif v is number -%}{{- v|tojson -}}
{%- elif v is mapping -%}{{- '{' -}}{%- for k, x in v.items() -%}{{- ', ' if not loop.first -}}{{- py(k) ~ ': ' ~ py(x) -}}{%- endfor -%}{{- '}' -}}
{%- else -%}{{- '[' -}}{%- for x in v -%}{{- ', ' if not loop.first -}}{{- py(x) -}}{%- endfor -%}{{- ']' -}}
{%- endif -%}
{%- endmacro -%}
{%- macro assistant(m) -%}
{%- set r = m.reasoning_content or m.reasoning or m.thinking or '' -%}
{%- if r -%}{{- '<think>\n' ~ r|trim ~ '\n</think>' -}}{%- endif -%}
{%- if m.tool_calls -%}
{{- '\n\n' if r -}}{{- '[' -}}
{%- for c in m.tool_calls -%}
{%- set f = c.function if c.function is defined else c -%}
{%- set a = f.arguments if f.arguments is mapping else {} -%}
{{- ', ' if not loop.first -}}{{- f.name ~ '(' -}}
{%- for k, x in a.items() -%}{{- ', ' if not loop.first -}}{{- k ~ '=' ~ py(x) -}}{%- endfor -%}
{{- ')' -}}
{%- endfor -%}
{{- ']' -}}
{%- elif m.content -%}
{{- '\n\n' if r -}}{{- text(m.content)|trim -}}
{%- endif -%}
{%- endmacro -%}
{%- macro tool_result(m) -%}
{{- 'Result of ' ~ (m.name or 'the call') ~ ': ' ~ text(m.content) -}}
{%- endmacro -%}
""", CHAIN=chain)


#: the chat template writer of each call layout (`CallSyntax.layout`): what a format's template is built by
WRITERS = {"blocks": _blocks, "lines": _lines, "list": _list}


def writes_template(fmt: PromptFormat) -> bool:
    """Whether tinytool has a chat template writer for ``fmt``'s call syntax."""
    return fmt.syntax.layout in WRITERS


def probe_conversations() -> list[Conversation]:
    """Conversations that reach every branch of a template: no tools, a system text, calls with nested and
    awkward values, parallel calls and their results, reasoning, several turns."""
    weather = Tool(name="get_weather", description="Weather for a city.", parameters={
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]})
    note = Tool(name="notes.add", description="", parameters={
        "type": "object", "properties": {"text": {"type": "string"}, "tags": {"type": "array"}}})
    odd = {"text": "it's \"quoted\"\\ tab\t new\nline é \u200b \x07", "tags": ["a", None, True, 1.5, {"k": [1, 2]}]}
    u = Message(role="user", content="Weather in Paris for 3 days?")
    call = Message(role="assistant", tool_calls=[ToolCall("get_weather", {"city": "Paris", "days": 3})],
                   reasoning="  The user wants the weather. ")
    two = Message(role="assistant", content="Checking both.",
                  tool_calls=[ToolCall("get_weather", {"city": "Oslo"}), ToolCall("notes.add", odd)])
    res = [Message(role="tool", name="get_weather", content='{"temp": 21}'),
           Message(role="tool", name="notes.add", content="ok")]
    answer = Message(role="assistant", content=" Sunny, 21 degrees. ")
    return [
        Conversation([Message(role="user", content="Hi!"), Message(role="assistant", content="Hello.")]),
        Conversation([Message(role="system", content="Be brief."), Message(role="user", content="Hi!")]),
        Conversation([Message(role="system", content="  "), Message(role="user", content="Hi!")]),
        Conversation([u, call], tools=[weather]),
        Conversation([Message(role="system", content="You plan trips."), u, two, *res, answer], tools=[weather, note]),
        Conversation([u, call, res[0], answer, Message(role="user", content="And Rome?")], tools=[weather]),
        Conversation([u, Message(role="assistant", content="Which unit?"), Message(role="user", content="C")],
                     tools=[weather, note]),
    ]


def openai_messages(conv: Conversation) -> list[dict[str, Any]]:
    """The conversation's messages as a chat client sends them (``reasoning_content`` for reasoning)."""
    out = []
    for m in conv.messages:
        d = m.to_dict()
        if "reasoning" in d:
            d["reasoning_content"] = d.pop("reasoning")
        out.append(d)
    return out


def render_with(template: str, conv: Conversation, add_generation_prompt: bool, tokenizer: Any = None) -> str:
    """``conv`` rendered through ``template`` as ``transformers`` renders chat templates."""
    from transformers.utils.chat_template_utils import render_jinja_template

    tools = [t.to_dict() for t in conv.tools] or None
    rendered, _ = render_jinja_template(conversations=[openai_messages(conv)], tools=tools, chat_template=template,
                                        add_generation_prompt=add_generation_prompt)
    return rendered[0]


def tinytool_renderings(fmt: PromptFormat, conv: Conversation, tokenizer: Any) -> list[tuple[Conversation, bool, str]]:
    """What tinytool renders for ``conv``: the whole conversation, and the prompt before each assistant turn
    (``(conversation part, add_generation_prompt, text)``)."""
    out = []
    msgs = conv.messages
    for i, m in enumerate(msgs):
        if m.role == "assistant":
            part = Conversation(msgs[:i], tools=conv.tools)
            out.append((part, True, fmt.render(part, tokenizer).prompt))
    r = fmt.render(conv, tokenizer)
    out.append((conv, r.target is None, r.prompt + (r.target or "")))
    return out


def mismatches(template: str, fmt: PromptFormat, convs: list[Conversation], tokenizer: Any) -> tuple[int, int, str]:
    """How many of the renderings of ``convs`` differ between ``template`` and tinytool's own rendering, out of
    how many, and the first difference (empty when none)."""
    bad, total, first = 0, 0, ""
    for conv in convs:
        for part, gen, expected in tinytool_renderings(fmt, conv, tokenizer):
            total += 1
            got = render_with(template, part, gen)
            if got != expected:
                bad += 1
                if not first:
                    at = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got),
                                                                                               len(expected)))
                    first = f"at char {at}: template {got[at:at + 40]!r}, tinytool {expected[at:at + 40]!r}"
    return bad, total, first


def chat_template(fmt: PromptFormat, tokenizer: Any) -> str:
    """The Jinja chat template that renders ``messages`` and ``tools`` as ``fmt`` does inside ``tokenizer``'s
    markup, checked against tinytool's own rendering of `probe_conversations`."""
    writer = WRITERS.get(fmt.syntax.layout)
    if writer is None:
        raise TemplateUnsupported(f"format {fmt.name}: tinytool has no chat template writer for its calls (layout "
                                  f"{fmt.syntax.layout}), so a GGUF cannot carry it",
                                  fix=f"export with --format one of {', '.join(formats_with(writes_template))}")
    fallback = default_system(tokenizer)
    template = _COMMON + writer(fmt) + fill(_MAIN, DEFAULT_SYSTEM=lit(fallback) if fallback else "none")
    template = "\n".join(line for line in template.split("\n") if line.strip())
    bad, total, first = mismatches(template, fmt, probe_conversations(), tokenizer)
    if bad:
        raise TemplateUnsupported(f"format {fmt.name}: the chat template renders {bad} of {total} probe "
                                  f"conversations differently from tinytool ({first})",
                                  fix="report this as a bug of tinytool export; export with another --format")
    return template


__all__ = ["WRITERS", "TemplateUnsupported", "chat_template", "default_system", "mismatches", "openai_messages",
           "probe_conversations", "render_with", "result_texts", "tinytool_renderings", "writes_template"]
