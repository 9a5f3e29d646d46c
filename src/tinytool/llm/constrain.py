"""Schema-constrained tool calls: a grammar per decoded row whose token mask is applied at every step.

A `ToolConstraint` names the tools a request offers, the prompt format whose call syntax the model writes, and a
mode:

- ``auto``: the model may answer in text; once a call opens it must name an offered tool and carry arguments that
  satisfy that tool's parameter schema (required keys, types, enums, nested objects, arrays; keys the schema does
  not list are refused unless it says ``additionalProperties``);
- ``required``: one call or more (parallel calls allowed), nothing else;
- ``named``: one call of the named tool.

``parallel=False`` (OpenAI's ``parallel_tool_calls: false``) allows one call at most in ``auto`` and ``required``;
``max_calls`` bounds the number of calls of an answer otherwise (None: any number).

The grammar is a Lark grammar for `llguidance <https://github.com/guidance-ai/llguidance>`_, written from the
format's call syntax (`tinytool.formats.CallSyntax`: its layout, tags and separators, exactly as the format renders
an assistant turn), never from its name, so a format of a known layout needs no change here; each call's JSON object
embedded as a JSON schema (``%json``) with the separators ``json.dumps`` writes (``", "`` and ``": "``, no other
whitespace) — the bytes a model trained on tinytool's renderings writes. References of a parameters schema keep
their meaning inside the call object: the parameters are held in the call schema's ``$defs`` and every local
reference (``#``, ``#/$defs/…``, ``#/definitions/…``, ``#/properties/…``) points where it pointed in the parameters
schema. Per layout:

- ``blocks`` (``hermes``: ``<think>\\n…\\n</think>``, then (auto) optional text and ``<tool_call>\\n{"name",
  "arguments"}\\n</tool_call>`` blocks joined by a blank line; ``hermes-nothink`` the same without the reasoning);
- ``lines`` (``toolrl``: ``<think> … </think>``, one ``<tool_call>`` block holding one ``{"name", "parameters"}``
  object per line, and an optional ``<response> … </response>``);
- ``list`` (``python``: ``[f(a=1), g(b="x")]``, after an optional ``<think>`` block). This syntax is not JSON, so only part
  of the schema is enforced: the function names (offered tools only), the keyword names (each call's own
  parameters; no positional arguments) and that every value is a Python literal (numbers, strings,
  True/False/None, lists, tuples and dicts of literals). *Not* enforced there: required parameters, a parameter
  given twice, value types, enums, nested objects' keys. In ``auto`` mode a text answer must not start with ``[``.

Where a tokenizer has every tag of a format as one special token (Qwen's ``<tool_call>``), the grammar matches
those tokens, and the text between them is free (not checked for the tags' spelling). Grammars
are compiled once per tool set and tokenizer (`GrammarBank`, an LRU cache); every row decodes with its own copy.
`RowMasks` computes the masks of all constrained rows of a step at once (llguidance's parallel executor) and applies
them to the logits in place. A schema llguidance cannot compile is a `ConstraintError` that names the tool and
the schema feature.
"""

from __future__ import annotations

import functools
import json
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tinytool.errors import UserInputError
from tinytool.formats import DEFAULT_FORMAT, CallSyntax, PromptFormat, Tags, formats_with, get_format
from tinytool.llm.rules import RowRule, asked, register
from tinytool.schema import Tool

#: the modes of a `ToolConstraint`
MODES = ("auto", "required", "named")
#: how the JSON of a call is written: as ``json.dumps`` writes it, no other whitespace
JSON_STYLE = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
#: compiled grammars kept per tokenizer
CACHE_SIZE = 256


class ConstraintError(UserInputError):
    """A constraint that cannot be built: an unknown format or mode, a named tool not offered, or a schema the
    grammar library cannot compile (the message names the tool and the schema feature)."""

    fix = "simplify that tool's parameter schema (or leave it out of the strict tools), or decode without constraints"


# ---- what a request asks for ---------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Constraint:
    """A grammar every token of a row must keep to. ``prefix``: text already at the end of the prompt that the
    grammar reads first (a call a server started), so the row continues from inside the grammar."""

    prefix: str = ""

    def lark(self, special: dict[str, int] | None = None) -> str:
        """The grammar in llguidance's Lark dialect; ``special`` maps tag texts that are one special token of the
        tokenizer to that token's id."""
        raise NotImplementedError

    def key(self) -> str:
        """What identifies the compiled grammar (equal keys, equal grammars)."""
        raise NotImplementedError

    def tags(self) -> tuple[str, ...]:
        """The tag texts the grammar writes (those that are special tokens are matched as such)."""
        return ()


@dataclass(frozen=True, eq=False)
class LarkConstraint(Constraint):
    """A grammar given as Lark text (tests, and callers that need a syntax of their own)."""

    text: str = ""

    def lark(self, special: dict[str, int] | None = None) -> str:
        return self.text

    def key(self) -> str:
        return json.dumps(["lark", self.text, self.prefix])


@dataclass(frozen=True, eq=False)
class ToolConstraint(Constraint):
    """Calls of ``tools`` in ``format``'s syntax under ``mode`` (``auto``, ``required``, ``named``: a call of
    ``name``); see the module docstring. ``format``: a `PromptFormat`, or the name of a registered one."""

    tools: tuple[Tool, ...] = ()
    format: Any = DEFAULT_FORMAT
    mode: str = "auto"
    name: str | None = None
    #: several calls in one answer (OpenAI's ``parallel_tool_calls``); a named tool is always called once
    parallel: bool = True
    #: the most calls an answer holds where several are allowed (None: any number)
    max_calls: int | None = None
    _key: list[str] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        fmt = self.format
        if isinstance(fmt, str):
            try:
                fmt = get_format(fmt)
            except ValueError:
                pass
        if not isinstance(fmt, PromptFormat) or not fmt.syntax.grammar:
            name = getattr(fmt, "name", fmt)
            raise ConstraintError(f"constrained decoding: format {name!r} has no call grammar (known: "
                                  f"{', '.join(formats_with('grammar'))})", fix="choose one of those formats")
        object.__setattr__(self, "format", fmt)
        object.__setattr__(self, "tools", tuple(self.tools))
        if self.mode not in MODES:
            raise ConstraintError(f"constrained decoding: mode {self.mode!r} (known: {', '.join(MODES)})",
                                  fix="use auto, required or named")
        if self.mode in ("required", "named") and not self.tools:
            raise ConstraintError(f"constrained decoding: mode {self.mode!r} needs at least one tool",
                                  fix="offer tools, or use mode auto")
        if (self.mode == "named") != (self.name is not None):
            raise ConstraintError("constrained decoding: a tool name goes with mode 'named', and only there",
                                  fix="give mode='named' and name= together")
        if self.name is not None and self.name not in {t.name for t in self.tools}:
            raise ConstraintError(f"constrained decoding: the named tool {self.name!r} is not among the tools",
                                  fix="name one of the offered tools")
        if self.max_calls is not None and (not isinstance(self.max_calls, int) or self.max_calls < 1):
            raise ConstraintError(f"constrained decoding: max_calls {self.max_calls!r} (an answer holds one call "
                                  "or more)", fix="give a positive number, or None for any number")

    def key(self) -> str:
        if not self._key:
            tools = [t.function_dict() for t in self.tools]
            self._key.append(json.dumps([self.format.name, repr(self.syntax), self.mode, self.name, self.most,
                                         self.prefix, tools], sort_keys=True, ensure_ascii=False, default=str))
        return self._key[0]

    @property
    def single(self) -> bool:
        """Whether an answer holds one call at most."""
        return self.mode == "named" or not self.parallel or self.max_calls == 1

    @property
    def most(self) -> int | None:
        """The most calls an answer holds (None: any number)."""
        return 1 if self.single else self.max_calls

    @property
    def syntax(self) -> CallSyntax:
        """How the format writes calls."""
        return self.format.syntax

    def called(self) -> tuple[Tool, ...]:
        """The tools a call may name."""
        return tuple(t for t in self.tools if self.name is None or t.name == self.name)

    def tags(self) -> tuple[str, ...]:
        return () if self.syntax.layout == "list" else self.syntax.tags  # a call list is text, its tags too

    def lark(self, special: dict[str, int] | None = None) -> str:
        return _GRAMMARS[self.syntax.layout](self, special or {})


def tool_constraint(tools: list[Tool], fmt: Any, mode: str = "auto", name: str | None = None,
                    prefix: str = "", parallel: bool = True, max_calls: int | None = None) -> ToolConstraint:
    """A `ToolConstraint` of ``tools`` in ``fmt`` (a format or its name)."""
    return ToolConstraint(prefix=prefix, tools=tuple(tools), format=fmt, mode=mode, name=name, parallel=parallel,
                          max_calls=max_calls)


def auto_constraint(tools: list[Tool], fmt: Any, prefix: str = "") -> tuple[ToolConstraint | None, str | None]:
    """The ``auto`` constraint of ``tools`` in ``fmt`` (the answer starting with ``prefix``) for an evaluation that
    goes on whatever one item's tools are: ``(constraint, None)``, or ``(None, why)`` when there are no tools or
    their schemas cannot be compiled (then the item is decoded free, and ``why`` says so)."""
    if not tools:
        return None, None
    constraint = tool_constraint(tools, fmt, "auto", prefix=prefix)
    try:
        check(constraint)
    except ConstraintError as e:
        return None, str(e)
    return constraint, None


# ---- grammars ----------------------------------------------------------------------------------------------
def _lit(text: str) -> str:
    """A Lark string literal of ``text``."""
    return json.dumps(text, ensure_ascii=False)


def _regex_escape(text: str) -> str:
    """``text`` as a literal inside a Lark ``/regex/``."""
    return "".join("\\" + ch if ch in r"\.^$|?*+()[]{}/-" else ch for ch in text)


def _re(text: str) -> str:
    """``text`` as a regex fragment that matches it exactly (newlines as ``\\n``)."""
    return _regex_escape(text).replace("\n", "\\n")


def _free(but: str, lead: str = "", tail: str = "") -> str:
    """A Lark terminal: ``lead``, then text (one character or more) that does not hold ``but``, then ``tail`` (which
    may hold ``but`` itself): one lexeme that ends at the first ``but``, so nothing around it is ambiguous."""
    body = f"/{_re(lead)}(?s:.+){_re(tail)}/"
    return f"{body} & ~/{_re(lead)}(?s:.*){_re(but)}(?s:.*){_re(tail)}/"


def _more(item: str, sep: str, most: int | None) -> str:
    """What may follow an answer's first call: further ``item``s, each after ``sep`` (Lark), ``most - 1`` of them at
    most (any number where ``most`` is None). The bound is one counted repetition, not nested optional groups: a
    bound of 8 calls per tool over many tools would nest deeper than llguidance's parser allows."""
    if most is None:
        return f" ({sep} {item})*"
    return f" ({sep} {item}){{0,{most - 1}}}" if most > 1 else ""


def _specials(c: ToolConstraint, special: dict[str, int]) -> bool:
    """Whether every tag of the format is one special token of the tokenizer (Qwen): then tags are matched as
    tokens and text between them needs no exclusion."""
    return bool(c.tags()) and all(t in special for t in c.tags())


def _framed(open_: str, inner: str, close: str, pad: str) -> str:
    """A rule body: ``open_`` and ``close`` (Lark terms) around ``inner`` with ``pad`` (text) just inside them."""
    padding = [_lit(pad)] if pad else []
    return " ".join([open_, *padding, inner, *padding, close])


def _think_terminal(think: Tags) -> str:
    """The Lark terminal of reasoning written as text: its tags and pads around one character or more."""
    return _free(think.close, lead=think.open + think.pad, tail=think.pad + think.close)


#: where a schema holds schemas: one (``not``), a list of them (``anyOf``; ``items`` in its older, list form) or a
#: map of names to them (``properties``)
_ONE = frozenset({"items", "additionalItems", "additionalProperties", "contains", "not", "if", "then", "else",
                  "propertyNames", "unevaluatedItems", "unevaluatedProperties"})
_MANY = frozenset({"anyOf", "oneOf", "allOf", "prefixItems", "items"})
_NAMED = frozenset({"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"})
#: the subschemas strict mode closes: those of objects and arrays, alternatives and definitions
_STRICT = frozenset({"items", "anyOf", "oneOf", "allOf", "prefixItems", "properties", "$defs", "definitions"})
#: where a schema keeps definitions for its references
_DEFS = ("$defs", "definitions")


def _map_schema(schema: Any, f: Callable[[dict[str, Any]], dict[str, Any]],
                through: frozenset[str] | None = None) -> Any:
    """``schema`` with every schema node in it replaced by ``f`` of a copy of it, innermost first (``through``: only
    the subschemas under those keywords; all by default). Data in a schema (``enum``, ``const``, ``default``) is
    left as it is."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for k, v in schema.items():
        if through is not None and k not in through:
            continue
        if k in _NAMED and isinstance(v, dict):
            out[k] = {name: _map_schema(sub, f, through) for name, sub in v.items()}
        elif k in _MANY and isinstance(v, list):
            out[k] = [_map_schema(sub, f, through) for sub in v]
        elif k in _ONE:
            out[k] = _map_schema(v, f, through)
    return f(out)


def _closed(node: dict[str, Any]) -> dict[str, Any]:
    if isinstance(node.get("properties"), dict):
        node.setdefault("additionalProperties", False)
    return node


def strict_schema(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` on every object node that lists its properties and says
    nothing about others (as OpenAI's strict mode reads a schema; definitions included): a call cannot carry a key
    its tool does not declare."""
    if isinstance(schema, list):
        return [strict_schema(s) for s in schema]
    return _map_schema(schema, _closed, _STRICT)


def _local_ref(node: dict[str, Any]) -> str | None:
    """The JSON pointer of ``node``'s ``$ref`` into its own document (``""`` for ``#``), None when it has none."""
    ref = node.get("$ref")
    if isinstance(ref, str) and (ref == "#" or ref.startswith("#/")):
        return ref[1:]
    return None


def _has_local_ref(schema: dict[str, Any]) -> bool:
    """Whether a schema node in ``schema`` refers to a place in its own document."""
    found: list[str] = []

    def see(node: dict[str, Any]) -> dict[str, Any]:
        pointer = _local_ref(node)
        if pointer is not None:
            found.append(pointer)
        return node

    _map_schema(schema, see)
    return bool(found)


def _repoint(home: str, node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with a local reference of a parameters schema moved into the call schema that holds the parameters
    at ``home`` (a pointer): its root and whatever is under it point under ``home``; its definitions, which the
    call schema keeps at its own root, are found where they were."""
    pointer = _local_ref(node)
    if pointer is not None and not pointer.startswith(tuple(f"/{k}/" for k in _DEFS)):
        node["$ref"] = f"#{home}{pointer}"
    return node


def _call_schema(tool: Tool, args_key: str) -> dict[str, Any]:
    """The JSON schema of one call object ``{"name": <tool>, args_key: <arguments>}``, written as ``json.dumps``
    writes it. A parameters schema with local references is held in the call schema's ``$defs`` (its references
    rewritten to point there) and its own definitions moved to the call schema's root, so that ``#``,
    ``#/$defs/…``, ``#/definitions/…`` and any other pointer mean what they meant in the parameters schema."""
    params = strict_schema(tool.parameters)
    schema = {"type": "object", "properties": {"name": {"const": tool.name}, args_key: params},
              "required": ["name", args_key], "additionalProperties": False, "x-guidance": JSON_STYLE}
    if not isinstance(params, dict) or not _has_local_ref(params):
        return schema
    defs = params.get("$defs") if isinstance(params.get("$defs"), dict) else {}
    name = "parameters"
    while name in defs:  # a name of the tool's own definitions is taken
        name += "_"
    moved = _map_schema(params, functools.partial(_repoint, f"/$defs/{name}"))
    for key in _DEFS:
        if isinstance(moved.get(key), dict):
            schema[key] = moved.pop(key)
    schema.setdefault("$defs", {})[name] = moved
    schema["properties"][args_key] = {"$ref": f"#/$defs/{name}"}
    return schema


def _json_calls(c: ToolConstraint, args_key: str) -> list[str]:
    """Lark rules ``call: call_0 | call_1 | …`` with each tool's call object as an embedded JSON schema."""
    tools = c.called()
    rules = [f"call: {' | '.join(f'call_{i}' for i in range(len(tools)))}"]
    rules += [f"call_{i}: %json {json.dumps(_call_schema(t, args_key), ensure_ascii=False)}"
              for i, t in enumerate(tools)]
    return rules


def _blocks(c: ToolConstraint, special: dict[str, int]) -> str:
    """``blocks`` (hermes, hermes-nothink): ``[<think>\\n…\\n</think>\\n\\n][text\\n\\n]<tool_call>\\n{…}\\n
    </tool_call>``, further calls after ``sep``."""
    syntax = c.syntax
    call, think, sep = syntax.call, syntax.think, _lit(syntax.sep)
    rules = []
    if _specials(c, special):
        t = {k: f"<[{v}]>" for k, v in special.items()}
        rules += [f"block: {_framed(t[call.open], 'call', t[call.close], call.pad)}", "TEXT: /(?s:.+)/",
                  "answer: TEXT? | TEXT? calls", f"think: {t[think.open]} TEXT? {t[think.close]}" if think else ""]
    else:
        rules += [f"block: {_lit(call.open + call.pad)} call {_lit(call.pad + call.close)}",
                  f"FREE: {_free(call.open)}", f"LEAD: {_free(call.open, tail=call.open + call.pad)}",
                  f"answer: FREE? | LEAD call {_lit(call.pad + call.close)}" + _more("block", sep, c.most) + " | calls"]
        if think:
            rules.append(f"THINK: {_think_terminal(think)}")
            empty = f" | {_lit(think.open + think.pad * 2 + think.close)}" if syntax.always_think and think.pad else ""
            rules.append(f"think: THINK{empty}")
    rules.append("calls: block" + _more("block", sep, c.most))
    body, after = ("answer" if c.mode == "auto" else "calls"), _lit(syntax.think_sep)
    if think is None:
        start = f"start: {body}"
    elif syntax.always_think:
        start = f"start: think ({after} {body})?" if c.mode == "auto" else f"start: think {after} {body}"
    else:
        start = f"start: think ({after} {body})? | {body}" if c.mode == "auto" else f"start: (think {after})? {body}"
    return "\n".join([start, *[r for r in rules if r], *_json_calls(c, syntax.args_key)]) + "\n"


def _lines(c: ToolConstraint, special: dict[str, int]) -> str:
    """``lines`` (toolrl): ``<think> … </think>\\n<tool_call>\\n{…}\\n{…}\\n</tool_call>\\n<response> …
    </response>``."""
    syntax = c.syntax
    call, think, reply = syntax.call, syntax.think, syntax.reply
    if _specials(c, special):
        t = {k: f"<[{v}]>" for k, v in special.items()}
        rules = [f"think: {t[think.open]} TEXT? {t[think.close]}" if think else "",
                 f"block: {_framed(t[call.open], 'calls', t[call.close], call.pad)}",
                 f"reply: {t[reply.open]} TEXT? {t[reply.close]}" if reply else "", "TEXT: /(?s:.+)/"]
    else:
        rules = [f"THINK: {_think_terminal(think)}" if think else "",
                 f"block: {_lit(call.open + call.pad)} calls {_lit(call.pad + call.close)}",
                 f"REPLY: {_think_terminal(reply)}" if reply else "",
                 "think: THINK" if think else "", "reply: REPLY" if reply else ""]
    after = _lit(syntax.think_sep)
    tail = f" ({after} reply)?" if reply else ""
    if think is None:
        start = f"start: block{tail}" + (" | reply" if reply and c.mode == "auto" else "")
    elif c.mode == "auto":
        start = f"start: think ({after} block)?{tail}" if syntax.always_think else \
            f"start: (think {after})? block{tail} | think{tail}"
    else:
        start = f"start: think {after} block{tail}" if syntax.always_think else f"start: (think {after})? block{tail}"
    rules += [start, "calls: call" + _more("call", _lit(syntax.sep), c.most)]
    return "\n".join([*[r for r in rules if r], *_json_calls(c, syntax.args_key)]) + "\n"


# Python literals as `ast.literal_eval` reads them (what the python format's parser accepts as a value)
_PY_LITERALS = r"""
value: STRING | NUMBER | "True" | "False" | "None" | list | tuple | dict
list: "[" (value (SEP value)*)? "]"
tuple: "(" (value SEP (value (SEP value)*)?)? ")"
dict: "{" (pair (SEP pair)*)? "}"
pair: value COLON value
SEP: /, ?/
COLON: /: ?/
STRING: /"([^"\\\n]|\\.)*"/ | /'([^'\\\n]|\\.)*'/
NUMBER: /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/
"""


def _list(c: ToolConstraint, special: dict[str, int]) -> str:
    """``list`` (python): ``[f(a=1), g()]``; names and keywords constrained, values any Python literal (see the
    module docstring for what is not enforced)."""
    tools, think = c.called(), c.syntax.think
    lead = f'(THINK {_lit(c.syntax.think_sep)})? ' if think else ""
    start = f"start: {lead}calls | FREE" if c.mode == "auto" else f"start: {lead}calls"
    rules_think = [f"THINK: {_think_terminal(think)}"] if think else []
    calls = 'calls: "[" call' + _more("call", "SEP", c.most) + ' "]"'
    rules = [start, *rules_think, calls, f"call: {' | '.join(f'call_{i}' for i in range(len(tools)))}"]
    for i, t in enumerate(tools):
        params = sorted(t.param_names)
        if params:
            names = " | ".join(_lit(p) for p in params)
            rules += [f'call_{i}: {_lit(t.name + "(")} (kw_{i} (SEP kw_{i})*)? ")"', f'kw_{i}: ({names}) "=" value']
        else:
            rules.append(f"call_{i}: {_lit(t.name + '()')}")
    if c.mode == "auto":
        rules.append(r"FREE: /[^\[](?s:.*)/")
    return "\n".join(rules) + _PY_LITERALS


#: a grammar per call layout (`tinytool.formats.CallSyntax.layout`)
_GRAMMARS = {"blocks": _blocks, "lines": _lines, "list": _list}


# ---- checking and compiling ----------------------------------------------------------------------------------
def _grammar(lark: str) -> str:
    import llguidance

    return llguidance.LLMatcher.grammar_from_lark(lark)


def _tool_problem(tool: Tool) -> str | None:
    """Why llguidance cannot compile a call of ``tool`` (its parameters schema inside the call object), or None."""
    import llguidance

    try:
        grammar = llguidance.LLMatcher.grammar_from_json_schema(_call_schema(tool, "arguments"),
                                                                defaults=dict(JSON_STYLE))  # type: ignore[arg-type]
    except ValueError as e:
        return str(e)
    return llguidance.LLMatcher.validate_grammar(grammar) or None


@functools.lru_cache(maxsize=CACHE_SIZE)
def _check_key(key: str, lark: str) -> str | None:
    import llguidance

    return llguidance.LLMatcher.validate_grammar(_grammar(lark)) or None


def check(constraint: Constraint) -> None:
    """Raise `ConstraintError` when ``constraint``'s grammar does not compile (no tokenizer needed; cached per
    tool set). For a `ToolConstraint` the message names the first tool whose schema is at fault and the feature
    llguidance reports."""
    problem = _check_key(constraint.key(), constraint.lark())
    if problem is None:
        return
    raise _error(constraint, problem)


def _error(constraint: Constraint, problem: str) -> ConstraintError:
    """The `ConstraintError` of a grammar that did not compile: the tool at fault when one is."""
    for tool in getattr(constraint, "tools", ()):
        why = _tool_problem(tool)
        if why:
            return ConstraintError(f"tool {tool.name!r}: its parameters schema cannot be compiled for constrained "
                                   f"decoding: {_first_line(why)}")
    return ConstraintError(f"constrained decoding: the grammar does not compile: {_first_line(problem)}",
                           fix="check the grammar (or the tools' schemas), or decode without constraints")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:500] if text.strip() else "unknown error"


class GrammarBank:
    """Compiled grammars for one tokenizer: an llguidance tokenizer built once (about a second), and per
    constraint key a matcher already past the constraint's prefix, copied for every row that uses it (LRU,
    `CACHE_SIZE` entries). ``vocab``: the width of the model's logits; ``eos_ids``: the tokens that end a turn (the
    only ones allowed once the grammar is complete)."""

    def __init__(self, tokenizer: Any, vocab: int, eos_ids: list[int]):
        self.tokenizer, self.vocab, self.eos_ids = tokenizer, vocab, list(eos_ids)
        self._ll: Any = None
        self._special: dict[tuple[str, ...], dict[str, int]] = {}
        self._compiled: OrderedDict[str, Any] = OrderedDict()
        self.compiled = 0  #: grammars compiled (the rest came from the cache)

    def lltokenizer(self) -> Any:
        """The llguidance tokenizer (built on first use)."""
        if self._ll is None:
            import llguidance.hf

            self._ll = llguidance.hf.from_tokenizer(self.tokenizer, n_vocab=self.vocab, eos_token=self.eos_ids)
        return self._ll

    def special(self, tags: tuple[str, ...]) -> dict[str, int]:
        """The tags that this tokenizer writes as one special token, with its id."""
        if tags not in self._special:
            found = {}
            added = getattr(self.tokenizer, "added_tokens_encoder", {}) or {}
            for tag in tags:
                if tag in added:
                    found[tag] = int(added[tag])
            self._special[tags] = found
        return self._special[tags]

    def matcher(self, constraint: Constraint) -> Any:
        """A fresh matcher of ``constraint`` positioned after its prefix; `ConstraintError` when it cannot be."""
        import llguidance

        key = constraint.key()
        template = self._compiled.get(key)
        if template is None:
            check(constraint)
            lark = constraint.lark(self.special(constraint.tags()))
            template = llguidance.LLMatcher(self.lltokenizer(), _grammar(lark), log_level=0)
            if template.is_error():
                raise _error(constraint, template.get_error())
            if constraint.prefix:
                ids = self.tokenizer(constraint.prefix, add_special_tokens=False)["input_ids"]
                if not template.consume_tokens(ids):
                    raise ConstraintError(f"constrained decoding: the prompt's forced start {constraint.prefix!r} "
                                          f"does not fit the grammar ({_first_line(template.get_error())})",
                                          fix="start the answer as the format writes a call, or leave it out")
            self.compiled += 1
            self._compiled[key] = template
            while len(self._compiled) > CACHE_SIZE:
                self._compiled.popitem(last=False)
        else:
            self._compiled.move_to_end(key)
        return template.deep_copy()


def grammar_bank(client: Any) -> GrammarBank:
    """The `GrammarBank` of a local client's model and tokenizer (made once per client)."""
    def make() -> GrammarBank:
        head = client.model.get_output_embeddings()
        vocab = head.weight.shape[0] if head is not None else client.model.config.get_text_config().vocab_size
        return GrammarBank(client.tokenizer, max(vocab, len(client.tokenizer)), client.eos_ids)

    return client.memo("grammars", make)


@register
class RowMasks(RowRule):
    """The grammar as a row rule (`tinytool.llm.rules`): what a request asks is its ``rules["constraint"]``, a row's state
    is a matcher of it (None: free), the step's masks are computed for all constrained rows at once, applied to the
    logits in place, and every row's sampled token is fed back."""

    name = "constraint"
    order = 0
    lazy = True
    switch = "constrained"
    note = "unconstrained"

    def __init__(self, client: Any, rows: int):
        super().__init__(client, rows)
        self.bank = grammar_bank(client)
        self.words = (self.bank.vocab + 31) // 32
        self._bitmask: Any = None
        self._executor: Any = None
        self._shifts: Any = None

    @classmethod
    def for_conversation(cls, conv: Any, fmt: Any, prefix: str = "") -> tuple[Any, str | None]:
        """The ``auto`` grammar of the conversation's tools (`auto_constraint`)."""
        return auto_constraint(conv.tools, fmt, prefix)

    @classmethod
    def prepare(cls, client: Any, spec: Constraint) -> None:
        grammar_bank(client).matcher(spec)

    @property
    def active(self) -> bool:
        """Whether any row is constrained now."""
        return any(m is not None for m in self.states)

    def begin(self, spec: Constraint) -> Any:
        return self.bank.matcher(spec)

    def mask(self, logits: Any) -> Any:
        self.apply(logits)
        return logits

    def apply(self, logits: Any, rows: list[int] | None = None) -> None:
        """Set the logits of every token a constrained row may not take next to -inf (``logits``: [rows, vocab],
        modified in place; with ``rows``, logits row ``j`` belongs to row ``rows[j]``), the masks of all its
        constrained rows computed at once (a free row's mask allows everything). A row whose matcher allows
        nothing (an error state) may only end."""
        import torch

        rows = list(range(len(self.states))) if rows is None else rows
        n = len(rows)
        live = [(self.states[r], j) for j, r in enumerate(rows) if self.states[r] is not None]
        if not live:
            return
        if self._bitmask is None or self._bitmask.shape[0] < n:
            import llguidance

            self._bitmask = torch.zeros((len(self.states), self.words), dtype=torch.int32)
            self._executor = self._executor or llguidance.LLExecutor()
        if self._shifts is None or self._shifts.device != logits.device:
            self._shifts = torch.arange(32, dtype=torch.int32, device=logits.device)
        bits = self._bitmask[:n]
        if len(live) < n:
            bits.fill_(-1)  # every bit set: free rows allow every token
        self._executor.unsafe_compute_mask_ptr(live, bits.data_ptr(), self.words * 4, n)
        for m, j in live:
            if m.is_error():  # nothing fits any more: only ending is allowed
                bits[j].zero_()
                for e in self.bank.eos_ids:
                    bits[j, e // 32] |= (1 << (e % 32)) if e % 32 < 31 else -(2**31)
        # unpacked where the logits are: a GPU copies the packed words (vocab / 8 bytes a row), not a bool a token
        packed = bits.to(logits.device, non_blocking=False)
        blocked = ((packed.unsqueeze(-1) >> self._shifts) & 1).eq(0).view(n, -1)
        vocab = logits.shape[-1]
        if blocked.shape[1] >= vocab:
            logits.masked_fill_(blocked[:, :vocab], float("-inf"))
        else:  # logits wider than the tokenizer: the extra ids are never allowed in a constrained row
            logits[:, :blocked.shape[1]].masked_fill_(blocked, float("-inf"))
            logits[[j for _, j in live], blocked.shape[1]:] = float("-inf")

    def pick(self, logits: Any, choose: Any) -> list[int]:
        """The step's tokens, each fed to its row's matcher: ``choose(logits)`` on the unmasked logits first; for
        the rows whose grammar refuses that token, the masks are computed, applied, and the choice made again
        from those rows' logits. The result is what masking every row first would give, for argmax and for a
        draw from softmax(logits / T) alike (a refused draw drawn again from the masked distribution is rejection
        sampling: an allowed token keeps probability p / Z), but a mask is computed only for a row that needs
        one — while a row writes text, or a trained model writes the call the grammar expects, none is. Not for
        top-p (the nucleus of the masked and unmasked distributions differ) nor where entropies of the masked
        distribution are asked for: `apply` then."""
        picked = choose(logits).tolist()
        refused = [i for i, m in enumerate(self.states) if m is not None and not m.try_consume_tokens([picked[i]])]
        if refused:
            sub = logits[refused]
            self.apply(sub, refused)
            for i, t in zip(refused, choose(sub).tolist(), strict=True):
                picked[i] = t
                self.states[i].consume_token(t)
        return picked

    def advance(self, tokens: list[int]) -> None:
        """Feed each constrained row the token it sampled (``tokens[row]``)."""
        live = [(m, int(tokens[i])) for i, m in enumerate(self.states) if m is not None]
        if len(live) > 1 and self._executor is not None:
            self._executor.consume_token_par(live)
        else:
            for m, t in live:
                m.consume_token(t)


def refuse(requests: list[Any], backend: str) -> None:
    """Raise `ConstraintError` when any of ``requests`` asks for a decoding rule (`tinytool.llm.rules`: a grammar,
    a value guard, ...): ``backend`` cannot apply one."""
    if any(asked(r) for r in requests):
        raise ConstraintError(f"{backend}: constrained or guarded decoding runs in the local engine only",
                              fix="use a local model (a directory, hub id or the bundled alias), or decode "
                                  "without constraints")


__all__ = ["MODES", "Constraint", "ConstraintError", "GrammarBank", "LarkConstraint", "RowMasks",
           "ToolConstraint", "auto_constraint", "check", "grammar_bank", "refuse", "strict_schema", "tool_constraint"]
