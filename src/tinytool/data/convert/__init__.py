"""Dataset converters into the unified `Conversation` JSONL.

    report = convert("xlam", "xlam_function_calling_60k.json", "xlam.jsonl", skip_bad=True)
    print(report.summary())

Formats (`CONVERTERS`): ``xlam``, ``hammer`` (xLAM data with function masking), ``toolace``,
``glaive``, ``sharegpt`` (Hermes function-calling), ``openai``, ``bfcl`` (question file plus its
possible-answer file). Input may be JSONL, a JSON array or Parquet. Errors name ``file:line`` and
the field; ``skip_bad`` drops bad records and counts them by reason instead.
"""

from tinytool.data.convert import bfcl, glaive, openai, sharegpt, toolace, xlam  # noqa: F401  (register)
from tinytool.data.convert.base import (
    CONVERTERS,
    Converter,
    ConvertReport,
    EmptyInputError,
    NothingConvertedError,
    call_category,
    convert,
    get_converter,
    iter_converted,
    iter_source_records,
)
from tinytool.data.convert.bfcl import bfcl_category, calls_from_ground_truth, load_possible_answers
from tinytool.data.convert.masking import apply_masking, mask_names

__all__ = [
    "CONVERTERS",
    "ConvertReport",
    "Converter",
    "EmptyInputError",
    "NothingConvertedError",
    "apply_masking",
    "bfcl_category",
    "call_category",
    "calls_from_ground_truth",
    "convert",
    "get_converter",
    "iter_converted",
    "iter_source_records",
    "load_possible_answers",
    "mask_names",
]
