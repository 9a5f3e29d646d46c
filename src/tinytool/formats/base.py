"""What every prompt format shares: the parse result, rendering through a chat template, tag scanning.

A format owns four things: the system prompt that presents the tools, the text of an assistant turn
(`render_assistant`) and of a tool result (`render_tool_result`), `parse`, which turns model text
back into reasoning, calls and a response, and its call syntax (`CallSyntax`: the tags a call opens and
closes with, how calls are laid out, and what that allows: a grammar, the value guard, streaming), which
every module that decodes under a format or reads its answers as they are written asks instead of
switching on format names. Chat markup (``<|im_start|>`` ...) belongs to the
tokenizer's chat template; without a tokenizer the ChatML markup SmolLM2 and Qwen use is written.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from tinytool.schema import Conversation, Message, Tool, ToolCall

# End-of-turn markers a completion may still carry when decoded with special tokens.
END_MARKERS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "</s>", "<|end|>")


# Repairs that a strict reading of a format still accepts: STAR's rule 3 (§3.2.1) asks for a JSON
# object with "name" and "arguments", and an arguments value that is a JSON-encoded object (the
# OpenAI wire form) is one; an opening <think> the chat template put in the prompt is not the model's.
W_ARGS_STRING = "arguments given as a JSON string"
W_THINK_IN_PROMPT = "opening <think> missing (taken to be in the prompt)"
STRICT_OK_WARNINGS = frozenset({W_ARGS_STRING, W_THINK_IN_PROMPT})


@dataclass(slots=True)
class Parsed:
    """Model text read back.

    ``errors`` are format violations (the text does not follow the format); ``warnings`` are repairs
    the parser made to still recover the calls (arguments given as a JSON string, a ``"parameters"``
    key, a missing opening ``<think>``). ``sections`` lists the parts found, in order of appearance
    ("think", "tool_call", "response"), for rewards that check structure.
    """

    reasoning: str | None = None
    calls: list[ToolCall] = field(default_factory=list)
    response: str = ""
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    think_pairs: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def strict_problems(self) -> list[str]:
        """Errors plus the repairs a strict reading does not accept (see `STRICT_OK_WARNINGS`)."""
        return self.errors + [w for w in self.warnings if w not in STRICT_OK_WARNINGS]


@dataclass(frozen=True)
class Tags:
    """The two tags around one part of an assistant turn (reasoning, a call block, a reply); ``pad``: what the
    format writes just inside them around the text, where a grammar requires it (``"\\n"`` in Hermes)."""

    open: str
    close: str
    pad: str = ""


#: the call layouts `CallSyntax.layout` names (each has a grammar in `tinytool.llm.constrain`)
LAYOUTS = ("blocks", "lines", "list")


@dataclass(frozen=True)
class CallSyntax:
    """How a format writes the calls of an assistant turn: what the grammar of constrained decoding
    (`tinytool.llm.constrain`), the value guard (`tinytool.llm.guard`) and the server read instead of a
    format's name, the way each of vLLM's tool parsers owns its tags. ``layout``:

    - ``"blocks"``: each call its own block ``call.open + pad + {JSON} + pad + call.close``, blocks joined by
      ``sep``, free text before the first (Hermes);
    - ``"lines"``: one block holding one JSON call a line (joined by ``sep``), a text answer inside ``reply``'s
      tags (ToolRL);
    - ``"list"``: a Python list of calls with keyword arguments, ``[f(a=1), g()]``, or plain text (BFCL's style);
    - None: no call syntax a grammar or guard can follow.

    A JSON call is an object ``{name_key: <name>, args_key: {…}}``. ``think``: the reasoning's tags
    (``always_think``: written in every turn, empty or not; otherwise only when there is reasoning), followed by
    ``think_sep``. ``stream``: a server may stream answers in this format (text is held back once
    `PromptFormat.attempts_call` sees a call begin)."""

    layout: str | None = None
    call: Tags | None = None
    args_key: str = "arguments"
    name_key: str = "name"
    sep: str = "\n\n"
    think: Tags | None = None
    always_think: bool = False
    think_sep: str = "\n\n"
    reply: Tags | None = None
    stream: bool = True

    @property
    def grammar(self) -> bool:
        """Whether constrained decoding has a grammar of these calls."""
        return self.layout in LAYOUTS

    @property
    def guard(self) -> bool:
        """Whether the value guard can follow these calls: each a JSON object with its arguments one level in,
        closed by its own tag."""
        return self.layout == "blocks" and self.call is not None

    @property
    def json_calls(self) -> bool:
        """Whether each call is a JSON object ``{name_key: …, args_key: {…}}`` inside the call tags: what a client
        that reads calls back as JSON objects after a tag (Ollama) can follow."""
        return self.layout in ("blocks", "lines") and self.call is not None

    @property
    def tags(self) -> tuple[str, ...]:
        """Every tag written around the parts of a turn: reasoning, call block, reply, in that order."""
        return tuple(t for part in (self.think, self.call, self.reply) if part is not None
                     for t in (part.open, part.close))

    def blocks(self, text: str) -> list[tuple[int, str]]:
        """Where each complete call block of ``text`` starts and what it holds, left to right (blocks layout)."""
        pattern = re.escape(self.call.open) + r"(.*?)" + re.escape(self.call.close)
        return [(m.start(), m.group(1)) for m in re.finditer(pattern, text, re.DOTALL)]

    def open_call(self, text: str) -> str | None:
        """The text of the call block ``text`` ends inside (after its opening tag), None when no block is open."""
        at = text.rfind(self.call.open)
        if at < 0 or text.find(self.call.close, at) >= 0:
            return None
        return text[at + len(self.call.open):]

    def call_name(self, call: str) -> str | None:
        """The function name a call object being written (``call``: its JSON so far) has given, if any."""
        m = _name_pattern(self.name_key).search(call)
        return m.group(1) if m else None


@functools.lru_cache(maxsize=16)
def _name_pattern(key: str) -> re.Pattern[str]:
    """The name of a call object as JSON writes it: ``"<key>": "<name>"``."""
    return re.compile(r'"' + re.escape(key) + r'"\s*:\s*"([^"]*)"')


@dataclass(slots=True)
class Rendered:
    """A prompt ready for generation and, for training, the assistant turn that follows it
    (including the template's end-of-turn markup); ``target`` is None when there is no such turn."""

    prompt: str
    target: str | None = None


def compact_json(value: Any) -> str:
    """JSON without spaces after ``:`` and ``,``: tool listings are most of a tool-calling prompt's tokens, and
    this makes them ~14 % shorter with SmolLM2's tokenizer."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tool_lines(tools: list[Tool]) -> str:
    """The tool signatures of a system prompt, one compact JSON object per line."""
    return "\n".join(compact_json(t.function_dict()) for t in tools)


def strip_end_markers(text: str) -> str:
    # move an end index rather than slice: slicing after every marker is quadratic on "</s>" * 10**6
    end = len(text.rstrip())
    changed = True
    while changed:
        changed = False
        for m in END_MARKERS:
            if text.endswith(m, 0, end):
                end -= len(m)
                while end and text[end - 1].isspace():
                    end -= 1
                changed = True
    return text[:end]


def find_blocks(text: str, open_tag: str, close_tag: str) -> tuple[list[tuple[int, int, str]], list[str]]:
    """All ``open_tag ... close_tag`` blocks as ``(start, end, inner)``, scanning left to right in
    linear time. An unclosed last block runs to the end of the text and is reported; a close tag with
    no opening one is reported and skipped."""
    blocks: list[tuple[int, int, str]] = []
    errors: list[str] = []
    pos = 0
    n_open, n_close = len(open_tag), len(close_tag)
    # the next tags at or after pos, kept until the scan passes them: searching afresh after every
    # stray close tag would rescan the rest of the text each time (quadratic on "</tag>" * 10**5)
    start, stray = text.find(open_tag), text.find(close_tag)
    while True:
        if start != -1 and start < pos:
            start = text.find(open_tag, pos)
        if stray != -1 and stray < pos:
            stray = text.find(close_tag, pos)
        if stray != -1 and (start == -1 or stray < start):
            errors.append(f"stray {close_tag} without {open_tag}")
            pos = stray + n_close
            continue
        if start == -1:
            break
        inner_start = start + n_open
        end = text.find(close_tag, inner_start)
        if end == -1:
            errors.append(f"unclosed {open_tag}")
            blocks.append((start, len(text), text[inner_start:]))
            break
        if text.find(open_tag, inner_start, end) != -1:
            errors.append(f"{open_tag} opened again before {close_tag}")
        blocks.append((start, end + n_close, text[inner_start:end]))
        pos = end + n_close
    return blocks, errors


def cut_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """The text outside the given (sorted, non-overlapping) spans, joined."""
    out, pos = [], 0
    for s, e in sorted(spans):
        if s > pos:
            out.append(text[pos:s])
        pos = max(pos, e)
    out.append(text[pos:])
    return "".join(out)


def read_reasoning(text: str, parsed: Parsed) -> list[tuple[int, int]]:
    """Find ``<think>`` blocks, fill ``parsed.reasoning``/``think_pairs``/``sections``; return their spans.

    A completion that has ``</think>`` but no ``<think>`` is read as one pair: chat templates such as
    STAR's (App. A.1, Fig. 5) end the prompt with the opening tag, so the model never writes it.
    """
    blocks, errs = find_blocks(text, "<think>", "</think>")
    if not blocks and errs == ["stray </think> without <think>"]:
        end = text.find("</think>")
        parsed.reasoning = text[:end].strip()
        parsed.think_pairs = 1
        parsed.sections.append("think")
        parsed.warnings.append(W_THINK_IN_PROMPT)
        return [(0, end + len("</think>"))]
    parsed.errors.extend(errs)
    if blocks:
        parsed.reasoning = blocks[0][2].strip()
        parsed.think_pairs = len(blocks) - (1 if "unclosed <think>" in errs else 0)
        parsed.sections.append("think")
    return [(s, e) for s, e, _ in blocks]


def chatml(messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
    """ChatML markup (SmolLM2, Qwen) for role/content messages."""
    parts = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
    if add_generation_prompt:
        parts.append("<|im_start|>assistant\n")
    return "".join(parts)


_PROBE = "tinytool_probe_function"


def template_supports_tools(tokenizer: Any) -> bool:
    """Does this tokenizer's chat template write a ``tools`` list into the prompt? (SmolLM2's ignores it.)"""
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        return False
    # cached per template text: a tokenizer's chat_template may be replaced after the first probe
    cached = getattr(tokenizer, "_tinytool_supports_tools", None)
    if cached is not None and cached[0] == tokenizer.chat_template:
        return cached[1]
    probe = [{"type": "function", "function": {"name": _PROBE, "description": "probe",
                                               "parameters": {"type": "object", "properties": {}}}}]
    try:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": "hi"}], tools=probe, tokenize=False, add_generation_prompt=True
        )
        supported = _PROBE in text
    except Exception:  # a template that chokes on tools does not support them
        supported = False
    with contextlib.suppress(AttributeError, TypeError):  # some tokenizers refuse new attributes
        tokenizer._tinytool_supports_tools = (tokenizer.chat_template, supported)
    return supported


# a JSON call object written without its call tags: '{"name": ..., "arguments": ...}'
_BARE_JSON_CALL = re.compile(r'"name"\s*:.*"(?:arguments|parameters)"\s*:', re.DOTALL)


class PromptFormat(ABC):
    """A prompt format: how tools, assistant turns and tool results are written, and how model text
    is read back. Subclasses implement the four abstract methods.

    A ``strict`` format (`strict_copy`, ``get_format(name, strict=True)``) reads back only calls written
    as the format says, without repairs: each call block must hold valid JSON as written (a block that
    does not is dropped, as BFCL v4 scores Hermes-style output); rendering is
    the same. Rewards and training use the lenient reading."""

    name: str = "base"
    #: whether a chat template that renders ``tools`` itself may write the tool block for this format
    uses_native_tool_block: bool = False
    #: read back only what needs no repair (see the class docstring)
    strict: bool = False
    #: how this format writes calls, and what that allows (grammar, value guard, streaming)
    syntax: CallSyntax = CallSyntax()

    def strict_copy(self) -> PromptFormat:
        """This format reading strictly (formats hold no other state, so a shallow copy will do)."""
        if self.strict:
            return self
        twin = copy.copy(self)
        twin.strict = True
        return twin

    def call_prefix(self, name: str | None = None) -> str:
        """The start of an assistant turn that makes a call: to any tool (``name`` None: the text stops where
        the function name begins) or to ``name`` (the text stops where its arguments begin). A server that
        must answer with a call (OpenAI ``tool_choice``) writes this and lets the model go on from there."""
        sentinel, arg = "tinytoolfn", "tinytoolarg"
        text = self.render_assistant(Message(role="assistant", tool_calls=[ToolCall(sentinel, {arg: 1})]))
        at = text.index(sentinel)
        if name is None:
            return text[:at]
        # the arguments begin at the object (JSON) or the first keyword (Python) that holds the sentinel argument
        args_at = text.index(arg)
        opener = text.rfind("{", at, args_at)
        cut = opener if opener != -1 else args_at
        quoted = text[at - 1:at] == '"'  # a JSON string: the name escaped as JSON writes it
        return text[:at] + (json.dumps(name, ensure_ascii=False)[1:-1] if quoted else name) + \
            text[at + len(sentinel):cut]

    def attempts_call(self, text: str) -> bool:
        """Whether ``text`` tries to call a tool at all, readable or not: a call read back, a call tag
        outside the reasoning (even unclosed or stray), or a call object written without its tags.
        What a strict irrelevance check counts as a call."""
        parsed = self.parse(text)
        return (bool(parsed.calls) or "tool_call" in parsed.sections
                or any(tag in e for e in parsed.errors for tag in self._call_tags())
                or bool(_BARE_JSON_CALL.search(parsed.response)))

    def _call_tags(self) -> tuple[str, ...]:
        call = self.syntax.call
        return (call.open, call.close) if call is not None else ()

    @abstractmethod
    def system_prompt(self, tools: list[Tool], system: str | None = None) -> str:
        """The system message presenting ``tools`` (``system`` is the conversation's own system text)."""

    @abstractmethod
    def render_assistant(self, message: Message) -> str:
        """The text of one assistant turn (reasoning, response, calls) as the model should write it."""

    @abstractmethod
    def render_tool_result(self, message: Message) -> str:
        """The text of one tool result as the model sees it."""

    def parse(self, text: str) -> Parsed:
        """Read model text back. Never raises, whatever the text: a non-string is a format error; end-of-turn
        markers are cut and ``<think>`` reasoning is read before the format reads the rest."""
        parsed = Parsed()
        if not isinstance(text, str):
            parsed.errors.append(f"completion is a {type(text).__name__}, not text")
            return parsed
        text = strip_end_markers(text)
        spans = read_reasoning(text, parsed)
        self.parse_body(text, spans, parsed)
        return parsed

    @abstractmethod
    def parse_body(self, text: str, reasoning_spans: list[tuple[int, int]], parsed: Parsed) -> None:
        """Read the calls and the response of ``text`` (end markers cut; ``reasoning_spans`` are where
        ``parsed.reasoning`` came from) into ``parsed``. Never raises."""

    def native_system_prompt(self, system: str | None) -> str | None:
        """The system text when the chat template writes the tool block itself: the conversation's
        own system text plus whatever the format asks beyond the template's tool instructions."""
        return system

    # ---- rendering through a chat template -------------------------------------------------
    def to_chat(self, conv: Conversation, native_tools: bool = False) -> list[dict[str, str]]:
        """Role/content messages for a chat template. Consecutive tool results join one user turn,
        unless ``native_tools`` (then they stay ``tool`` messages for the template to wrap)."""
        system_text = None
        rest = conv.messages
        if rest and rest[0].role == "system":
            system_text, rest = rest[0].content or "", rest[1:]
        chat: list[dict[str, str]] = []
        if native_tools:
            native = self.native_system_prompt(system_text)
            if native:
                chat.append({"role": "system", "content": native})
        elif conv.tools or system_text:
            chat.append({"role": "system", "content": self.system_prompt(conv.tools, system_text)})
        for m in rest:
            if m.role == "assistant":
                chat.append({"role": "assistant", "content": self.render_assistant(m)})
            elif m.role == "tool":
                text = self.render_tool_result(m)
                if native_tools:
                    chat.append({"role": "tool", "content": m.content or ""})
                elif chat and chat[-1].get("_tool"):
                    chat[-1]["content"] += "\n" + text
                else:
                    chat.append({"role": "user", "content": text, "_tool": "1"})
            else:
                chat.append({"role": m.role, "content": m.content or ""})
        for c in chat:
            c.pop("_tool", None)
        return chat

    def _apply(self, chat: list[dict[str, str]], tokenizer: Any, tools: list[Tool] | None,
               add_generation_prompt: bool) -> str:
        if tokenizer is None or not getattr(tokenizer, "chat_template", None):
            return chatml(chat, add_generation_prompt)
        kwargs: dict[str, Any] = {}
        if tools:
            kwargs["tools"] = [t.to_dict() for t in tools]
        return tokenizer.apply_chat_template(
            chat, tokenize=False, add_generation_prompt=add_generation_prompt, **kwargs
        )

    def _chat_and_tools(self, conv: Conversation, tokenizer: Any) -> tuple[list[dict[str, str]], list[Tool] | None]:
        native = self.uses_native_tool_block and bool(conv.tools) and template_supports_tools(tokenizer)
        return self.to_chat(conv, native_tools=native), (conv.tools if native else None)

    def render_turns(self, conv: Conversation, tokenizer: Any = None) -> list[Rendered]:
        """One (prompt, target) pair per assistant turn, for training on every turn."""
        chat, tools = self._chat_and_tools(conv, tokenizer)
        out = []
        for i, c in enumerate(chat):
            if c["role"] != "assistant":
                continue
            prompt = self._apply(chat[:i], tokenizer, tools, add_generation_prompt=True)
            full = self._apply(chat[: i + 1], tokenizer, tools, add_generation_prompt=False)
            target = full[len(prompt):] if full.startswith(prompt) else c["content"]
            out.append(Rendered(prompt, target))
        return out

    def render(self, conv: Conversation, tokenizer: Any = None) -> Rendered:
        """The prompt for the next assistant turn; if the conversation ends with an assistant turn,
        the prompt stops before it and that turn is the target."""
        chat, tools = self._chat_and_tools(conv, tokenizer)
        if chat and chat[-1]["role"] == "assistant":
            prompt = self._apply(chat[:-1], tokenizer, tools, add_generation_prompt=True)
            full = self._apply(chat, tokenizer, tools, add_generation_prompt=False)
            target = full[len(prompt):] if full.startswith(prompt) else chat[-1]["content"]
            return Rendered(prompt, target)
        return Rendered(self._apply(chat, tokenizer, tools, add_generation_prompt=True), None)
