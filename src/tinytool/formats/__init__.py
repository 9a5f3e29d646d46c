"""Prompt formats: render a `Conversation` to model text and parse model text back.

    fmt = get_format("hermes")
    r = fmt.render(conversation, tokenizer)     # r.prompt, r.target
    p = fmt.parse(model_text)                   # p.reasoning, p.calls, p.response, p.errors
"""

from tinytool.formats.base import Parsed, PromptFormat, Rendered, template_supports_tools
from tinytool.formats.hermes import HermesFormat
from tinytool.formats.pythonic import PythonFormat
from tinytool.formats.toolrl import ToolRLFormat

FORMATS = {
    "hermes": lambda: HermesFormat(think=True),
    "hermes-nothink": lambda: HermesFormat(think=False),
    "toolrl": ToolRLFormat,
    "python": PythonFormat,
}


_INSTANCES: dict[tuple[str, bool], PromptFormat] = {}


def get_format(name: str | PromptFormat, strict: bool = False) -> PromptFormat:
    """A format by name (``hermes``, ``hermes-nothink``, ``toolrl``, ``python``). Formats hold no
    state, so one instance per name is shared. ``strict`` gives the format reading back only calls
    that need no repair (`PromptFormat.strict_copy`): what the BFCL runner's headline figures use."""
    if isinstance(name, PromptFormat):
        return name.strict_copy() if strict else name
    fmt = _INSTANCES.get((name, strict))
    if fmt is None:
        try:
            fmt = FORMATS[name]()
        except KeyError:
            raise ValueError(f"unknown format {name!r}; choose one of {', '.join(FORMATS)}") from None
        fmt = _INSTANCES[(name, strict)] = fmt.strict_copy() if strict else fmt
    return fmt


__all__ = [
    "FORMATS",
    "HermesFormat",
    "Parsed",
    "PromptFormat",
    "PythonFormat",
    "Rendered",
    "ToolRLFormat",
    "get_format",
    "template_supports_tools",
]
