"""The one data model every tinytool package speaks.

`Tool` (an OpenAI function schema), `ToolCall`, `Message`, `Conversation`, plus JSONL I/O.
On the wire everything is OpenAI function-calling JSON; on load, BFCL's ``"type": "dict"`` and
xLAM's flat ``parameters`` style are normalized to JSON Schema.
"""

from tinytool.schema.errors import SchemaError
from tinytool.schema.io import iter_jsonl, read_jsonl, write_jsonl
from tinytool.schema.types import Conversation, Message, Tool, ToolCall, normalize_parameters

__all__ = [
    "Conversation",
    "Message",
    "SchemaError",
    "Tool",
    "ToolCall",
    "iter_jsonl",
    "normalize_parameters",
    "read_jsonl",
    "write_jsonl",
]
