"""Models: load (hub id, local dir, GGUF, the bundled SmolLM2), make students, merge checkpoints, tiny test models."""

from tinytool.models.loading import (
    BUNDLED_ALIAS,
    ModelNotFound,
    autocast,
    bundled_gguf,
    cache_dir,
    load_model,
    load_tokenizer,
    resolve,
)
from tinytool.models.merging import merge_models, merge_weights
from tinytool.models.precision import cpu_supports_bf16, use_bf16
from tinytool.models.students import (
    build_student,
    even_layers,
    layer_importance,
    prune_layers,
    save_tiny_model,
    tiny_model,
)

__all__ = [
    "BUNDLED_ALIAS", "ModelNotFound", "autocast", "build_student", "bundled_gguf", "cache_dir",
    "cpu_supports_bf16", "even_layers", "layer_importance", "load_model", "load_tokenizer", "merge_models",
    "merge_weights", "prune_layers",
    "resolve", "save_tiny_model", "tiny_model", "use_bf16",
]
