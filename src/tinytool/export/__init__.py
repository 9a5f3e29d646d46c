"""Export a trained model to run elsewhere: a GGUF (llama.cpp, LM Studio, Ollama) carrying the tool-calling
chat template of the format it was trained in, and an Ollama ``Modelfile``.

- `tinytool.export.gguf_file`: the model and its tokenizer written with the ``gguf`` package (`write_gguf`).
- `tinytool.export.template`: the format as a Jinja chat template, checked against tinytool's rendering.
- `tinytool.export.ollama`: the format in Ollama's Go template language, and the ``Modelfile``.
- `tinytool.export.roundtrip`: the GGUF read back by ``transformers``, its logits against the source's.
- `tinytool.export.core`: `export_model`, what ``tinytool export`` runs.
"""

from tinytool.lazy import lazy_exports

_EXPORTS = {
    "export_model": "tinytool.export.core",
    "write_gguf": "tinytool.export.gguf_file",
    "chat_template": "tinytool.export.template",
    "TemplateUnsupported": "tinytool.export.template",
    "ArchitectureUnsupported": "tinytool.export.gguf_file",
    "TokenizerUnsupported": "tinytool.export.gguf_file",
    "go_template": "tinytool.export.ollama",
    "modelfile": "tinytool.export.ollama",
    "roundtrip": "tinytool.export.roundtrip",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["ArchitectureUnsupported", "TemplateUnsupported", "TokenizerUnsupported", "chat_template", "export_model",
           "go_template", "modelfile", "roundtrip", "write_gguf"]
