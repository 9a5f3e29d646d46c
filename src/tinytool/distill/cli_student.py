"""``tinytool student``: a depth-pruned student of a teacher (`tinytool.models.build_student`), registered by
`tinytool.cli` and a recipe stage."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from tinytool.clikit import err, on_interrupt
from tinytool.errors import OutputExistsError, TinytoolError, UserInputError

#: conversations of a JSONL ``--samples`` file whose text the layer importance is measured on (the first ones)
JSONL_SAMPLES = 48
#: characters of one conversation's text kept as a sample
SAMPLE_CHARS = 2000


def conversation_text(conv: dict) -> str:
    """One line of text for a conversation: its messages' contents, each followed by its tool calls as JSON,
    whitespace collapsed, at most `SAMPLE_CHARS` characters."""
    parts = []
    for m in conv.get("messages", []):
        text = str(m.get("content") or "")
        if m.get("tool_calls"):
            text += " " + json.dumps(m["tool_calls"])
        parts.append(text)
    return " ".join(" ".join(parts).split())[:SAMPLE_CHARS]


def read_samples(path: Path) -> list[str]:
    """The sample texts of ``--samples``: one per non-blank line of a text file, or, for a conversation JSONL
    (``.jsonl``), the text of each of its first `JSONL_SAMPLES` conversations (`conversation_text`; empty ones left
    out)."""
    if path.suffix == ".jsonl":
        from tinytool.io import iter_jsonl_rows

        texts = []
        for _, conv in iter_jsonl_rows(path):
            texts.append(conversation_text(conv if isinstance(conv, dict) else {}))
            if len(texts) >= JSONL_SAMPLES:
                break
        return [t for t in texts if t]
    try:
        return [t for t in path.read_text(encoding="utf-8").splitlines() if t.strip()]
    except UnicodeDecodeError as e:
        raise UserInputError(f"{path}: not UTF-8 text ({e.reason})", fix="convert the file to UTF-8") from None


def _check_student_out(out: Path, overwrite: bool) -> None:
    """Refuse a non-empty ``--out`` unless ``overwrite``, and even then anything but a model
    checkpoint (a directory with config.json): ``--overwrite`` replaces a student, never a folder of
    other files."""
    if not out.is_dir() or not any(out.iterdir()):
        return
    if not overwrite:
        raise OutputExistsError(f"{out}: already exists and is not empty",
                                fix="rerun with --overwrite to replace the model there, or choose another --out")
    if not (out / "config.json").is_file():
        raise OutputExistsError(f"{out}: is not a model checkpoint (no config.json), so --overwrite will not "
                                "replace it", fix="choose another --out directory, or empty this one")


def student(
    teacher: str = typer.Option(..., "--from", help="Teacher spec: hub id, directory, .gguf, or smollm2-135m-instruct."),
    keep_layers: int = typer.Option(..., "--keep-layers", help="How many decoder layers the student keeps."),
    out: Path = typer.Option(..., "--out", "-o", file_okay=False, help="Directory for the student checkpoint."),
    method: str = typer.Option("even", help="even (evenly spaced) or importance (drop layers that change least)."),
    samples: Path | None = typer.Option(None, exists=True, dir_okay=False,
                                        help="For --method importance: a text file, one sample per line, or "
                                             f"conversation JSONL (the first {JSONL_SAMPLES} conversations' text)."),
    overwrite: bool = typer.Option(False, "--overwrite",
                                   help="Replace a model checkpoint already at --out (never another kind of folder)."),
) -> None:
    """Build a depth-pruned student of a teacher (same tokenizer), saved as an HF checkpoint.

    ``--out`` is written as a whole: an interrupted or failed build leaves it as it was.

    Example: tinytool student --from smollm2-135m-instruct --keep-layers 20 --method importance --samples s.txt -o students/smol20
    """
    from tinytool.io import atomic_dir, check_not_input, write_json
    from tinytool.models import build_student

    if Path(teacher).exists():
        check_not_input(out, teacher)
    _check_student_out(out, overwrite)
    texts = read_samples(samples) if samples else None
    existed = out.exists()
    with on_interrupt(f"{out} unchanged" if existed else f"nothing written to {out}"), atomic_dir(out) as tmp:
        try:
            info = build_student(teacher, keep_layers, tmp, method=method, samples=texts)
        except ValueError as e:
            if isinstance(e, TinytoolError):
                raise
            raise UserInputError(str(e)) from None
        write_json(tmp / "tinytool_student.json", info)
    err.print(f"student: kept layers {info['kept']} of {info['teacher_layers']} "
              f"({info['parameters'] / 1e6:.1f}M parameters) -> {out}")
