"""An Ollama ``Modelfile`` for an exported GGUF: the format's prompt in Ollama's template language, stop tokens,
and the sampling the model was scored with.

Ollama renders prompts with Go's ``text/template`` over its own values (Ollama's documentation, "Template"):
``.System`` (the system messages joined), ``.Tools`` (each with ``.Function``), ``.Messages`` (``.Role``,
``.Content``, ``.Thinking``, ``.ToolCalls`` with ``.Function.Name`` and ``.Function.Arguments``), and the
function ``json``. It finds the tag that opens a call in the model's output from the first text inside the
template's ``if .ToolCalls`` block, and reads the call's arguments back as the JSON object holding the tool's
parameters, so formats whose calls are JSON objects (`CallSyntax.json_calls`: ``hermes``, ``hermes-nothink``,
``toolrl``) get tool calls back from Ollama; ``python`` calls are not JSON and are refused here.

The template writes what the format writes, with two differences Go's template language imposes: JSON it
writes (tool listings, past calls' arguments) is Go's, compact with ``<``, ``>`` and ``&`` escaped, where
tinytool writes Python's JSON (and a space after ``,`` and ``:`` in calls); and texts are not stripped of
surrounding blanks. The GGUF's own Jinja template is the exact one.
"""

from __future__ import annotations

import json
from typing import Any

from tinytool.export.template import (
    IM_END,
    IM_START,
    PROBE_TOOL,
    TemplateUnsupported,
    hermes_texts,
    prefixed_texts,
    result_texts,
)
from tinytool.formats import CallSyntax, PromptFormat, formats_with
from tinytool.formats.base import tool_lines

#: the sampling tinytool scores models with (`tinytool eval`: greedy, 256 new tokens per turn, seed 0)
SCORED_SAMPLING = {"temperature": 0, "top_p": 1, "seed": 0, "num_predict": 256}

_LISTING = '{{ range $i, $t := .Tools }}{{ if $i }}\n{{ end }}{{ json $t.Function }}{{ end }}'


def _system(fmt: PromptFormat, default_system: str | None) -> str:
    """The system turn: the conversation's system text and the format's tool block, or the model's default. A
    format whose calls are blocks (Hermes) writes its default system text when the conversation has none; the
    others write the conversation's system text before a body that lists the tools (the chat template's
    writers read the same shapes)."""
    if fmt.syntax.layout == "blocks":
        default, before, after = hermes_texts(fmt)
        body = ("{{ if .System }}{{ .System }}{{ else }}" + default + "{{ end }}"
                "{{ if .Tools }}" + before + _LISTING + after + "{{ end }}")
    else:
        before, after, sep = prefixed_texts(fmt, tool_lines([PROBE_TOOL]), "(none)")
        body = ("{{ if .System }}{{ .System }}" + sep + "{{ end }}" + before +
                "{{ if .Tools }}" + _LISTING + "{{ else }}(none){{ end }}" + after)
    fallback = f"{IM_START}system\n{default_system}{IM_END}\n" if default_system else ""
    return "{{ if or .System .Tools }}" + f"{IM_START}system\n" + body + f"{IM_END}\n" + "{{ else }}" + fallback + \
        "{{ end }}"


def _call(syntax: CallSyntax) -> str:
    """One call (``.``: a tool call) as a JSON object with the syntax's keys."""
    return (f'{{{json.dumps(syntax.name_key)}: {{{{ json .Function.Name }}}}, {json.dumps(syntax.args_key)}: '
            '{{ json .Function.Arguments }}}')


def _assistant(fmt: PromptFormat) -> str:
    """One assistant turn, as the call syntax lays it out. The first text inside ``if .ToolCalls`` is the call's
    opening tag (Ollama reads it from there), so separators before the first call stand outside that block."""
    s = fmt.syntax
    c = s.call
    last = "{{ if ne (len (slice $calls $j)) 1 }}" + s.sep + "{{ end }}"
    if s.layout == "lines":  # ToolRL: reasoning, one block of call lines, the reply in its tags
        t, r = s.think, s.reply
        return (f"{t.open} {{{{ .Thinking }}}} {t.close}{{{{ $calls := .ToolCalls }}}}"
                "{{ if .ToolCalls }}" + s.think_sep + c.open + c.pad + "{{ range $j, $c := .ToolCalls }}" + _call(s) +
                last + "{{ end }}" + c.pad + c.close + "{{ end }}"
                "{{ if .Content }}" + s.think_sep + r.open + " {{ .Content }} " + r.close + "{{ end }}")
    if s.think is not None and s.always_think:
        t = s.think
        head = (t.open + t.pad + "{{ .Thinking }}" + t.pad + t.close + "{{ if .Content }}" + s.think_sep +
                "{{ .Content }}{{ end }}{{ if gt (len .ToolCalls) 0 }}" + s.sep + "{{ end }}")
    else:
        head = "{{ if .Content }}{{ .Content }}{{ end }}{{ if and .Content (gt (len .ToolCalls) 0) }}" + s.sep + \
            "{{ end }}"
    return (head + "{{ $calls := .ToolCalls }}{{ if .ToolCalls }}{{ range $j, $c := .ToolCalls }}" + c.open + c.pad +
            _call(s) + c.pad + c.close + last + "{{ end }}{{ end }}")


def go_template(fmt: PromptFormat, default_system: str | None) -> str:
    """The Ollama (Go ``text/template``) template of ``fmt`` in ChatML markup; `TemplateUnsupported` for a
    format whose calls Ollama cannot read back (calls that are not JSON objects, `CallSyntax.json_calls`)."""
    if not fmt.syntax.json_calls:
        raise TemplateUnsupported(f"format {fmt.name}: Ollama reads tool calls back only as JSON objects, and "
                                  f"{fmt.name} calls are not JSON, so its tool calls would come back as text",
                                  fix="export with --to gguf (its chat template is exact), or train in one of "
                                      f"{', '.join(formats_with('json_calls'))}")
    before, after = result_texts(fmt)
    messages = (
        '{{ $prev := "" }}{{ range $i, $_ := .Messages }}{{ $last := eq (len (slice $.Messages $i)) 1 }}'
        '{{ if eq .Role "user" }}' + f"{IM_START}user\n" + "{{ .Content }}" + f"{IM_END}\n" + '{{ $prev = "user" }}'
        '{{ else if eq .Role "assistant" }}' + f"{IM_START}assistant\n" + _assistant(fmt) +
        "{{ if not $last }}" + f"{IM_END}\n" + '{{ end }}{{ $prev = "assistant" }}'
        '{{ else if eq .Role "tool" }}{{ if eq $prev "tool" }}\n{{ else }}' + f"{IM_START}user\n" + "{{ end }}" +
        before + "{{ .Content }}" + after + "{{ if $last }}" + f"{IM_END}\n" +
        '{{ else if ne (index (slice $.Messages $i) 1).Role "tool" }}' + f"{IM_END}\n" +
        '{{ end }}{{ $prev = "tool" }}{{ end }}{{ end }}'
        '{{ if ne $prev "assistant" }}' + f"{IM_START}assistant\n" + "{{ end }}"
    )
    return _system(fmt, default_system) + messages


def stop_tokens(tokenizer: Any) -> list[str]:
    """The tokens that end a turn: ChatML's ``<|im_end|>`` where the vocabulary has it, and the EOS token."""
    vocab = tokenizer.get_vocab()
    stops = [IM_END] if IM_END in vocab else []
    eos = getattr(tokenizer, "eos_token", None)
    if eos and eos not in stops:
        stops.append(eos)
    return stops


def modelfile(gguf_name: str, fmt: PromptFormat, tokenizer: Any, default_system: str | None, context: int,
              source: str) -> str:
    """The ``Modelfile`` text: FROM the GGUF beside it, the template, stop tokens and the scored sampling."""
    template = go_template(fmt, default_system)
    if '"""' in template:
        raise TemplateUnsupported(f'format {fmt.name}: its prompt holds """, which a Modelfile cannot quote')
    lines = [
        f"# Written by tinytool export from {source} (prompt format {fmt.name}).",
        "# The sampling below is what tinytool scores models with (greedy decoding, 256 new tokens a turn).",
        f"FROM ./{gguf_name}",
        f'TEMPLATE """{template}"""',
        *[f'PARAMETER stop "{s}"' for s in stop_tokens(tokenizer)],
        *[f"PARAMETER {k} {v}" for k, v in SCORED_SAMPLING.items()],
        f"PARAMETER num_ctx {context}",
    ]
    return "\n".join(lines) + "\n"


__all__ = ["SCORED_SAMPLING", "go_template", "modelfile", "stop_tokens"]
