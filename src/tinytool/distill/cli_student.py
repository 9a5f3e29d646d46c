"""``tinytool student``: a depth-pruned student of a teacher (`tinytool.models.build_student`), registered by
`tinytool.cli` and a recipe stage. The verb's options are the fields of `StudentConfig` (flags and ``--config``
YAML alike); `run` does the work."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinytool.clikit import (
    check_settings,
    config_file,
    config_options,
    config_values,
    err,
    left_note,
    on_interrupt,
    setting,
)
from tinytool.errors import TinytoolError, UserInputError

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


@dataclass(frozen=True, kw_only=True)
class StudentConfig:
    """What ``tinytool student`` builds, checked when made: the output is not the teacher's folder, and is empty or
    a model checkpoint that ``overwrite`` replaces (`_check_student_out`); the samples file exists."""

    teacher: str = setting(..., "Teacher spec: hub id, directory, .gguf, or smollm2-135m-instruct.", key="from")
    keep_layers: int = setting(..., "How many decoder layers the student keeps.")
    out: Path = setting(..., "Directory for the student checkpoint.", "-o", file_okay=False)
    method: str = setting("even", "even (evenly spaced) or importance (drop layers that change least).")
    samples: Path | None = setting(None, "For --method importance: a text file, one sample per line, or conversation "
                                   f"JSONL (the first {JSONL_SAMPLES} conversations' text).", exists=True,
                                   dir_okay=False)
    overwrite: bool = setting(False, "Replace a model checkpoint already at --out (never another kind of folder).")

    def __post_init__(self) -> None:
        from tinytool.io import check_data_files, check_model_out, check_not_input

        object.__setattr__(self, "out", Path(self.out))
        if self.samples is not None:
            object.__setattr__(self, "samples", Path(self.samples))
            check_data_files([self.samples], "--samples")
        check_settings(self)
        if Path(self.teacher).exists():
            check_not_input(self.out, self.teacher)
        check_model_out(self.out, self.overwrite)


def run(cfg: StudentConfig) -> dict[str, Any]:
    """Build the student of ``cfg`` into ``cfg.out``, written as a whole (an interrupted or failed build leaves it as
    it was). The summary: `tinytool.models.build_student`'s (also ``OUT/tinytool_student.json``) and where it is."""
    from tinytool.io import atomic_dir, write_json
    from tinytool.models import build_student

    out = cfg.out
    texts = read_samples(cfg.samples) if cfg.samples else None
    with on_interrupt(left_note(out)), atomic_dir(out) as tmp:
        try:
            info = build_student(cfg.teacher, cfg.keep_layers, tmp, method=cfg.method, samples=texts)
        except ValueError as e:
            if isinstance(e, TinytoolError):
                raise
            raise UserInputError(str(e)) from None
        write_json(tmp / "tinytool_student.json", info)
    return {**info, "out": str(out)}


@config_options(StudentConfig)
def student(config: Path | None = config_file(StudentConfig), **values: Any) -> None:
    """Build a depth-pruned student of a teacher (same tokenizer), saved as an HF checkpoint.

    ``--out`` is written as a whole: an interrupted or failed build leaves it as it was.

    Example: tinytool student --from smollm2-135m-instruct --keep-layers 20 --method importance --samples s.txt -o students/smol20
    """
    s = run(StudentConfig(**config_values(StudentConfig, values)))
    err.print(f"student: kept layers {s['kept']} of {s['teacher_layers']} "
              f"({s['parameters'] / 1e6:.1f}M parameters) -> {s['out']}")
