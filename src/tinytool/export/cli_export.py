"""``tinytool export``: a trained model as a GGUF (llama.cpp, LM Studio) or an Ollama model folder."""

from __future__ import annotations

from pathlib import Path

import typer

from tinytool.clikit import err, left_note, make_app, on_interrupt
from tinytool.formats import PromptFormat
from tinytool.formats.option import format_option

export_app = make_app(help="Export a trained model to run elsewhere.")


@export_app.command("export")
def export(
    model: str = typer.Argument(..., help="Model: a folder tinytool trained (full, merged LoRA, LoRA adapter, "
                                          "student), a hub id, a .gguf, or smollm2-135m-instruct."),
    to: str = typer.Option("gguf", "--to", help="gguf (one file) or ollama (a folder: the GGUF and a Modelfile)."),
    out: Path = typer.Option(..., "--out", "-o", help="The .gguf file (--to gguf; .gguf is added to a name without "
                                                      "it) or the folder (--to ollama)."),
    kind: str = typer.Option("f16", "--type", help="How the weight matrices are stored: f16, bf16 or q8_0 "
                                                   "(norms stay float32)."),
    fmt: PromptFormat | None = format_option(trained=True),
    tokenizer: str | None = typer.Option(None, "--tokenizer", help="Tokenizer to write, when the model folder "
                                                                   "has none (default: the model's own)."),
    check: bool = typer.Option(False, "--check", help="Read the GGUF back with transformers and report its "
                                                      "logits' largest difference from the model's."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output: a GGUF file, or an "
                                                              "Ollama folder tinytool wrote (nothing else)."),
) -> None:
    """Write a model as one GGUF file whose chat template renders messages and tools exactly as the model's
    prompt format does (so llama.cpp, LM Studio and transformers prompt it as it was trained), or with
    --to ollama as a folder Ollama builds a model from (the GGUF and a Modelfile with the format's template,
    stop tokens and greedy sampling). Nothing is left at --out when it fails or is interrupted.

    Example: tinytool export runs/sft --to ollama --out ollama/smol-tools --type q8_0
    """
    from tinytool.export.core import export_model, output_path

    out = output_path(to, out)
    with on_interrupt(left_note(out)):
        info = export_model(model, to, out, kind, fmt, tokenizer, overwrite, show_progress=True,
                            note=lambda text: err.print(f"note: {text}", highlight=False))
    sizes = ", ".join(f"{n} {t}" for t, n in sorted(info["tensor_types"].items()))
    typer.echo(f"wrote {' and '.join(info['files'])} ({info['bytes'] / 1e6:.1f} MB, {info['tensors']} tensors: "
               f"{sizes}; format {info['format']}; {info['seconds']:.1f}s)")
    if to == "ollama":
        typer.echo(f"run it: ollama create {out.name} -f {out / 'Modelfile'} && ollama run {out.name}")
    if check:
        _check(model, Path(info["files"][0]), kind)


def _check(model: str, gguf: Path, kind: str) -> None:
    """Print how far the GGUF's logits (read by transformers) are from the model's."""
    from tinytool.export.roundtrip import roundtrip
    from tinytool.models import load_model, load_tokenizer

    r = roundtrip(load_model(model), load_tokenizer(model), gguf, kind)
    typer.echo(f"check: largest logit difference {r['max_abs_logit_diff']:.4g} (of logits up to "
               f"{r['max_abs_logit']:.3g}; {r['max_abs_logit_diff_rounded']:.2g} against the model rounded to "
               f"{kind}) on {r['prompts']} prompts; same greedy tokens: {'yes' if r['same_argmax'] else 'no'}; "
               f"same tokenization: {'yes' if r['same_tokens'] else 'no'}")


if __name__ == "__main__":  # pragma: no cover
    export_app()
