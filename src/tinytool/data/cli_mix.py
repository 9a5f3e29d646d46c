"""``tinytool data mix-irrelevant``: add similarity-banded irrelevant tools to each task (ASTRA §3.2.2). The verb's
options are the fields of `MixConfig` (flags and ``--config`` YAML alike); `run` does the work."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from tinytool.clikit import config_file, config_options, config_values, err, make_app, on_interrupt, setting
from tinytool.data.file_job import FileJob

mix_app = make_app(help="Add irrelevant tools to tasks.")


@dataclass(frozen=True, kw_only=True)
class MixConfig(FileJob):
    """What ``tinytool data mix-irrelevant`` writes (`FileJob`: ``data`` → ``out``): how many tools of each band,
    drawn from which pool."""

    k: int = setting(2, "Tools drawn from each similarity band (high, medium, low).", min=0)
    pool: list[Path] = setting(None, "More conversation JSONL whose tools join the pool (repeatable).", exists=True,
                               dir_okay=False, factory=list)
    seed: int = setting(0, "Seed of the tools drawn.")

    INPUTS_FLAG: ClassVar[str] = "--pool"

    def inputs(self) -> list[Path]:
        pool = [self.pool] if isinstance(self.pool, (str, Path)) else self.pool  # one file given by itself
        return [Path(p) for p in pool]

    def __post_init__(self) -> None:
        object.__setattr__(self, "pool", self.inputs())
        super().__post_init__()


def run(cfg: MixConfig) -> dict[str, Any]:
    """Write ``cfg.data``'s tasks, each offered the irrelevant tools drawn for it, to ``cfg.out``; the summary is
    `tinytool.data.mixing.MixStats`' with the output's path."""
    from tinytool.data.mixing import mix_irrelevant
    from tinytool.schema import read_jsonl, write_jsonl

    convs = read_jsonl(cfg.data)
    extra = [t for p in cfg.pool for c in read_jsonl(p) for t in c.tools]
    with on_interrupt(f"{cfg.out} unchanged"):
        mixed, stats = mix_irrelevant(convs, k=cfg.k, seed=cfg.seed, extra_pool=extra)
        write_jsonl(cfg.out, [c.to_dict() for c in mixed])
    return {**stats.as_dict(), "out": str(cfg.out)}


@mix_app.command("mix-irrelevant")
@config_options(MixConfig)
def mix_irrelevant_cmd(config: Path | None = config_file(MixConfig), **values: Any) -> None:
    """Offer each task up to K extra tools from each band of semantic similarity to its own tools (ASTRA §3.2.2,
    Eq. 24–28; embeddings of the offline MiniLM model), never from the domain of an offered tool. The messages and
    labels are unchanged.

    Example: tinytool data mix-irrelevant data/demo/train.jsonl --k 2 -o data/demo/train-mixed.jsonl
    """
    s = run(MixConfig(**config_values(MixConfig, values)))
    err.print(f"{s['tasks']} tasks, pool of {s['pool']} tools; added high {s['added']['high']}, medium "
              f"{s['added']['med']}, low {s['added']['low']} ({s['mean_added_per_task']} per task) -> {s['out']}")
