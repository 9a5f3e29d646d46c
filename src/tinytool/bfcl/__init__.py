"""BFCL v4 data access: categories, items and possible answers read from the ``bfcl-eval`` wheel.

Below both `tinytool.envs` (which runs BFCL's multi-turn API classes from the same wheel) and
`tinytool.eval` (which scores models on the items).
"""

from tinytool.bfcl.data import (
    AST_CATEGORIES,
    BFCL_VERSION,
    CATEGORIES,
    FUNC_DOC_FILES,
    GROUPS,
    LIVE,
    MULTI_TURN,
    NON_LIVE,
    PYTHON_HINT,
    BFCLData,
    BFCLDataError,
    BFCLItem,
    bfcl_data,
    expand_categories,
    is_multi_turn,
    is_relevance,
    wheel_path,
)

__all__ = [
    "AST_CATEGORIES",
    "BFCL_VERSION",
    "CATEGORIES",
    "FUNC_DOC_FILES",
    "GROUPS",
    "LIVE",
    "MULTI_TURN",
    "NON_LIVE",
    "PYTHON_HINT",
    "BFCLData",
    "BFCLDataError",
    "BFCLItem",
    "bfcl_data",
    "expand_categories",
    "is_multi_turn",
    "is_relevance",
    "wheel_path",
]
