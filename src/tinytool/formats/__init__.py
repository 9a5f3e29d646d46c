"""Prompt formats: render a `Conversation` to model text and parse model text back.

    fmt = get_format("hermes")
    r = fmt.render(conversation, tokenizer)     # r.prompt, r.target
    p = fmt.parse(model_text)                   # p.reasoning, p.calls, p.response, p.errors
"""

from collections.abc import Callable

from tinytool.formats.base import CallSyntax, Parsed, PromptFormat, Rendered, Tags, template_supports_tools
from tinytool.formats.hermes import HermesFormat
from tinytool.formats.pythonic import PythonFormat
from tinytool.formats.toolrl import ToolRLFormat

FORMATS = {
    "hermes": lambda: HermesFormat(think=True),
    "hermes-nothink": lambda: HermesFormat(think=False),
    "toolrl": ToolRLFormat,
    "python": PythonFormat,
}


#: the format every verb uses unless told otherwise (the one place it is set)
DEFAULT_FORMAT = "hermes"
#: what ``--format`` takes, for every verb's help
FORMAT_HELP = f"Prompt format: {', '.join(FORMATS)}"

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


def formats_with(feature: str | Callable[[PromptFormat], bool]) -> list[str]:
    """The names of the formats whose call syntax allows ``feature`` (``"grammar"``, ``"guard"``, ``"stream"``,
    ``"json_calls"``: a `CallSyntax` property), or for which ``feature(format)`` holds, in the order `FORMATS` lists
    them: what an error's fix offers instead of a list of names kept by hand."""
    if callable(feature):
        return [name for name in FORMATS if feature(get_format(name))]
    return [name for name in FORMATS if getattr(get_format(name).syntax, feature)]


def default_format() -> PromptFormat:
    """The format every verb uses unless told otherwise (`DEFAULT_FORMAT`), for a library call given none."""
    return get_format(DEFAULT_FORMAT)


def resolve_format(name: str | PromptFormat) -> PromptFormat:
    """``--format`` read once, where the user gave it: the format, or `UserInputError` naming the choices."""
    from tinytool.errors import UserInputError

    try:
        return get_format(name)
    except ValueError as e:
        raise UserInputError(f"--format: {e}", fix=f"choose one of {', '.join(FORMATS)} (default: {DEFAULT_FORMAT})") \
            from None


__all__ = [
    "DEFAULT_FORMAT",
    "FORMATS",
    "FORMAT_HELP",
    "CallSyntax",
    "HermesFormat",
    "Parsed",
    "PromptFormat",
    "PythonFormat",
    "Rendered",
    "Tags",
    "ToolRLFormat",
    "default_format",
    "formats_with",
    "get_format",
    "resolve_format",
    "template_supports_tools",
]
