"""``export_model``: one trained model to a GGUF file, or to a folder Ollama builds a model from.

Everything that can be refused is refused before the weights are read: the output (an existing one without
``overwrite``, one ``overwrite`` may not replace, an output that is an input), the architecture (read from the config), the tokenizer, and the
format's chat template (built and checked against tinytool's own rendering) and, for Ollama, its Go template.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from tinytool.errors import OutputExistsError, TinytoolError, UserInputError
from tinytool.export.gguf_file import TYPES, TokenizerUnsupported, is_gguf, llama_shape, write_gguf
from tinytool.export.ollama import modelfile
from tinytool.export.template import chat_template, default_system
from tinytool.formats import DEFAULT_FORMAT, PromptFormat, resolve_format

#: ``--to``: what is written
TARGETS = ("gguf", "ollama")
MODELFILE = "Modelfile"


def output_path(to: str, out: Path) -> Path:
    """Where an export to ``out`` goes: for ``--to gguf`` a file name without the ``.gguf`` suffix gets it
    (llama.cpp and ``llamacpp:FILE`` know a GGUF by it); an existing folder stays (and is refused as a file)."""
    out = Path(out)
    if to == "gguf" and out.suffix != ".gguf" and not out.is_dir():
        return out.with_name(out.name + ".gguf")
    return out


def check_output(to: str, out: Path, overwrite: bool, *inputs: str | None) -> None:
    """Refuse an output that exists (without ``overwrite``), that is an input or holds one, or that is not an
    export tinytool wrote (``overwrite`` replaces a GGUF file or an Ollama folder, never another file or
    folder)."""
    from tinytool.io import check_not_input, check_output_file, check_writable

    check_not_input(out, *inputs)
    if to == "gguf":
        check_output_file(out, overwrite)
        if out.is_file() and out.stat().st_size > 0 and not is_gguf(out):
            raise OutputExistsError(f"{out}: is not a GGUF file, so --overwrite does not replace it",
                                    fix="choose another --out, or move that file away first")
    else:
        if out.suffix == ".gguf":
            raise UserInputError(f"{out}: --to ollama writes a folder (the GGUF and its Modelfile), not a .gguf file",
                                 fix="give --out a folder, e.g. --out ollama/mymodel")
        if out.is_file():
            raise UserInputError(f"{out}: is a file; --to ollama writes a folder", fix="choose another --out")
        if out.is_dir() and any(out.iterdir()):
            if not overwrite:
                raise OutputExistsError(f"{out}: already exists and is not empty",
                                        fix="rerun with --overwrite to replace the export there, or choose another "
                                            "--out")
            if not (out / MODELFILE).is_file():
                raise OutputExistsError(f"{out}: holds no Modelfile, so it is not an export --overwrite may replace",
                                        fix="choose another --out folder, or empty this one")
    check_writable(out)


def source_config(model: str) -> Any:
    """The config of ``model`` (an adapter folder: its base model's), read without the weights."""
    from transformers import AutoConfig

    from tinytool.models import resolve
    from tinytool.models.loading import adapter_base

    return AutoConfig.from_pretrained(resolve(adapter_base(model) or model))


def source_tokenizer(model: str, tokenizer: str | None) -> Any:
    """The tokenizer to write: ``tokenizer`` when given, else the model's own; `TokenizerUnsupported` when there
    is none."""
    from tinytool.models import load_tokenizer

    spec = tokenizer or model
    folder = Path(spec)
    if folder.is_dir() and not any((folder / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json",
                                                                      "adapter_config.json")):
        raise TokenizerUnsupported(f"{spec}: no tokenizer there (no tokenizer.json), and a GGUF must carry one")
    try:
        return load_tokenizer(spec)
    except TinytoolError:
        raise
    except (OSError, ValueError, TypeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise TokenizerUnsupported(f"{spec}: its tokenizer cannot be loaded ({first})") from None


def export_model(model: str, to: str, out: Path, kind: str = "f16", fmt: PromptFormat | None = None,
                 tokenizer: str | None = None, overwrite: bool = False, show_progress: bool = False,
                 note: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Write ``model`` (hub id, folder, adapter folder, .gguf or the bundled alias) as ``to`` (``gguf``: the file
    ``out``, ``.gguf`` added when it lacks that suffix; ``ollama``: the folder ``out`` with ``NAME.gguf`` and a ``Modelfile``) with matrices in ``kind``.
    ``fmt`` defaults to the format the model was trained in; ``show_progress`` draws a bar while the tensors are
    converted; ``note`` is told what the template cannot write. Returns what was written."""
    from tinytool.models import load_model
    from tinytool.models.loading import trained_format
    from tinytool.progress import ProgressBar

    if to not in TARGETS:
        raise UserInputError(f"--to {to!r}: choose one of {', '.join(TARGETS)}")
    if kind not in TYPES:
        raise UserInputError(f"--type {kind!r}: choose one of {', '.join(TYPES)}")
    out = output_path(to, out)
    check_output(to, out, overwrite, model, tokenizer)
    fmt = fmt or resolve_format(trained_format(model) or DEFAULT_FORMAT)
    shape = llama_shape(source_config(model))
    tok = source_tokenizer(model, tokenizer)
    template = chat_template(fmt, tok)
    gguf_name = f"{out.name}.gguf"
    recipe = modelfile(gguf_name, fmt, tok, default_system(tok), shape.context, model) if to == "ollama" else None
    if note is not None and fmt.syntax.layout == "list":  # calls written as Python literals
        note(f"{fmt.name}: the chat template writes Python's string escapes for control, separator and format "
             "characters; other characters Python's repr escapes (unassigned or private-use code points) are "
             "written as they are")
    t0 = time.perf_counter()
    source = load_model(model)
    name = Path(model).name or str(model)
    n_tensors = sum(k != "lm_head.weight" or not shape.tied for k in source.state_dict())
    bar = ProgressBar(f"writing {to} ({kind})", total=n_tensors, unit="tensor") if show_progress \
        else nullcontext()
    with bar:
        progress = bar.advance if show_progress else None
        if to == "gguf":
            info = write_gguf(out, source, tok, kind, template, name, progress)
            files = [str(out)]
        else:
            from tinytool.io import atomic_dir

            with atomic_dir(out) as tmp:
                info = write_gguf(tmp / gguf_name, source, tok, kind, template, name, progress)
                (tmp / MODELFILE).write_text(recipe or "", encoding="utf-8")
            files = [str(out / gguf_name), str(out / MODELFILE)]
    info.update(seconds=time.perf_counter() - t0, format=fmt.name, type=kind, to=to, files=files,
                model=str(model))
    return info


__all__ = ["MODELFILE", "TARGETS", "check_output", "export_model", "output_path", "source_config",
           "source_tokenizer"]
