"""What the training verbs' command lines share: flags and ``--config`` into a config, the resolved config
shown once training starts, and a finished run reported as such."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tinytool.clikit import err


def run_training_verb(config_cls: type, train: Callable[..., dict[str, Any]], args: list[str], prog: str,
                      doc: str | None) -> tuple[Any, dict[str, Any] | None]:
    """Parse ``args`` into ``config_cls``, run ``train(cfg, callbacks=...)``; returns ``(cfg, summary)``, the
    summary None when the run had already finished (and that was said)."""
    from tinytool.train.callbacks import ShowConfig
    from tinytool.train.config import describe_config, parse_config

    lines = [line.strip() for line in (doc or "").strip().split("\n")]
    description = " ".join([lines[0], *(line for line in lines if line.startswith("Example:"))])
    cfg = parse_config(config_cls, args, prog=prog, description=description)
    show = ShowConfig(lambda text: err.print(text, highlight=False, markup=False), describe_config(cfg))
    summary = train(cfg, callbacks=[show])
    if summary.get("already_finished"):
        err.print(f"{cfg.output_dir} already holds this finished run (step {summary['global_step']}): nothing to do; "
                  "--overwrite trains it again, a larger --max-steps continues it")
        return cfg, None
    return cfg, summary
