"""Training configs: dataclasses that extend TRL's and transformers' own, and the one way they are read.

A trainer's config is a dataclass that extends TRL's config for that trainer (`SFTRunConfig` extends
`trl.SFTConfig`; `DistillConfig` extends `transformers.TrainingArguments`), with `RunOptions` mixed in:
the options every tinytool training verb shares, and tinytool's defaults and short flags for the
`TrainingArguments` fields a user sets most. Each option is declared once, as a documented field
(`tinytool.clikit.setting`, the declaration every verb's options share; choices and bounds are checked when the
config is built, `tinytool.clikit.check_settings`); the command
line (`--name value`, plus the short aliases in the field's metadata), the YAML file (``--config run.yaml``,
flags override it) and the Python API (`load_config`) are all derived from the dataclass.

Every run saves its config as ``config.yaml`` in its output directory (`saved_config`): tinytool's fields as
resolved, the other fields only where the user set them, paths absolute; ``--config`` reruns it from anywhere.
A run directory's manifest holds the settings that define the run (`run_settings`): rerunning with the same
ones resumes from the newest complete checkpoint, other ones are refused, ``--overwrite`` starts again.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import functools
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from tinytool.clikit import check_settings, setting
from tinytool.errors import UserInputError
from tinytool.io.rundir import path_value

log = logging.getLogger(__name__)

C = TypeVar("C")

CONFIG_FILE = "config.yaml"

#: the learning-rate schedules ``--time-schedule`` runs over a wall-time budget (transformers' names)
TIME_SCHEDULES = ("constant", "constant_with_warmup", "linear", "cosine")


class Repeatable(argparse.Action):
    """A list option given one or more times (``--data a.jsonl --data b.jsonl`` or ``--data a.jsonl b.jsonl``):
    the command line's values replace the default (the config file's), repeated flags add up."""

    def __call__(self, parser, namespace, values, option_string=None):
        seen = getattr(namespace, "_given", set())
        current = list(getattr(namespace, self.dest) or []) if self.dest in seen else []
        seen.add(self.dest)
        namespace._given = seen
        setattr(namespace, self.dest, current + list(values))


def listed(help: str, *aliases: str, required: bool = False) -> Any:
    """A list-of-paths field (a `tinytool.clikit.setting`) whose flag may repeat (see `Repeatable`)."""
    return setting(..., help, *aliases, action=Repeatable, **({} if required else {"factory": list}))


@dataclass(kw_only=True)
class RunOptions:
    """The options every training verb shares; mixed into each trainer's config before TRL's base class, so
    these definitions (defaults, short flags) are the ones that count."""

    #: learning rate without LoRA; each trainer sets its paper's value
    FULL_LR: ClassVar[float] = 2e-5
    #: passes over the data left unset; a trainer may set its own
    EPOCHS: ClassVar[float] = 1.0
    #: warm-up left unset (steps, or a fraction of all steps below 1); a trainer may set its own
    WARMUP: ClassVar[float] = 0.0

    # --- tinytool's own ---
    lora: str | None = setting(None, "LoRA adapters instead of full fine-tuning: 'r=16,alpha=32,dropout=0.05,"
                            "targets=q_proj+v_proj' (every key optional; 'default' takes all defaults).")
    merge_lora: bool = setting(False, "With --lora: save the base model with the adapter merged in (the adapter is "
                            "kept in OUT/adapter).", "--merge")
    overwrite: bool = setting(False, "Delete an earlier run in --out and start again (otherwise a run with the same "
                           "settings resumes, and one with other settings is refused).")

    # --- TrainingArguments fields, with tinytool's defaults and short flags ---
    output_dir: str | None = setting(None, "Output directory: checkpoints (checkpoint-N), the final model, the run "
                                  "summary, config.yaml and run.json.", "--out", "-o")
    num_train_epochs: float | None = setting(None, "Passes over the data (ignored when --max-steps > 0) [default: "
                                          "the trainer's, 2 for SFT, 1 for the others].", "--epochs")
    max_steps: int = setting(-1, "Optimizer steps to stop at (-1: run --epochs).")
    max_seconds: float | None = setting(None, "A wall-time budget for the run's training, in seconds (a resumed run "
                                        "holds what its earlier invocations left), held as "
                                        "a ceiling: the run ends after the last step that, at its mean pace, "
                                        "fits in it, as if complete (a "
                                        "checkpoint a rerun with a larger --max-seconds continues from, final model "
                                        "and summary). The learning-rate schedule spans --max-steps or --epochs; when "
                                        "the budget decides the length, run it over the budget's seconds "
                                        "(--time-schedule) or use a constant one.")
    time_schedule: bool = setting(False, "With --max-seconds: run the learning-rate schedule (--lr-scheduler-type "
                                  "constant, constant_with_warmup, linear or cosine; --warmup as a share of the "
                                  "budget) over the budget's seconds instead of the steps, so a decay ends where the "
                                  "budget does on a fast or a slow machine alike.")
    learning_rate: float | None = setting(None, "Peak learning rate [default: the trainer's full fine-tuning rate, "
                                       "2e-4 with LoRA].", "--lr")
    warmup_steps: float | None = setting(None, "Warm-up: steps (≥ 1) or a fraction of all steps (< 1) [default: "
                                      "the trainer's, 3 % of the steps for SFT, none for the others].", "--warmup")
    per_device_train_batch_size: int | None = setting(
        None, "Examples per device per forward pass [default: 1 on a CPU, where unpadded single sequences train "
        "fastest and gradient accumulation makes the batch; 4 on a GPU].", "--batch-size")
    gradient_accumulation_steps: int | None = setting(
        None, "Forward passes per optimizer step (effective batch = batch size × grad accum × devices) [default: 4 "
        "when the batch size is left at its CPU default of 1, else 1].", "--grad-accum")
    bf16: bool | None = setting(None, "bf16 mixed precision (autocast, fp32 master weights) [default: on with CUDA "
                             "bf16, or a CPU with native bf16]; --no-bf16 turns it off.")
    save_steps: float = setting(200, "Checkpoint every N optimizer steps (0: only the final save).")
    save_total_limit: int | None = setting(2, "Checkpoints kept, oldest deleted first (none: keep all).")
    logging_steps: float = setting(10, "Log the loss every N steps.")
    logging_first_step: bool = setting(True, "Log the first step too.")
    report_to: None | str | list[str] = setting("none", "Experiment trackers (none, tensorboard, trackio, …).")
    activation_checkpointing: bool | None = setting(None, "Recompute activations in the backward pass (less memory, "
                                                 "some speed) [default: on on a CPU, off on a GPU].")
    #: TRL's SFTConfig turns this deprecated alias on by default; off unless asked
    gradient_checkpointing: bool | None = setting(None, "Older name of --activation-checkpointing.")
    seed: int = setting(0, "Random seed (model init, data order, dropout).")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Each subclass's ``__post_init__`` first records the values as given (see `_record_given`)."""
        super().__init_subclass__(**kwargs)
        post = cls.__dict__.get("__post_init__")
        if post is not None:
            @functools.wraps(post)
            def post_init(self: Any) -> None:
                self._record_given()
                post(self)

            cls.__post_init__ = post_init

    def _record_given(self) -> None:
        """The values the config was built with, before any ``__post_init__`` resolves or derives others (the
        first call counts): `saved_config` tells the user's settings from the ones derived from them."""
        if "_as_given" not in self.__dict__:
            given = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}
            try:
                self._as_given = copy.deepcopy(given)
            except Exception:  # an object that cannot be copied is recorded as it is
                self._as_given = given

    def __post_init__(self) -> None:
        import torch

        from tinytool.models.precision import use_bf16

        self._record_given()
        if not self.output_dir:
            raise UserInputError("no output directory given: pass --out DIR (or output_dir in the config file)")
        self._device_defaults(torch.cuda.is_available())
        if self.num_train_epochs is None:
            self.num_train_epochs = self.EPOCHS
        self.output_dir = str(self.output_dir)
        if self.lora is not None:
            self.lora = _lora_text(self.lora)
        check_settings(self)
        checks = [
            (self.num_train_epochs > 0, f"epochs must be positive, got {self.num_train_epochs}"),
            (self.max_steps == -1 or self.max_steps > 0, f"max_steps must be positive (or -1), got {self.max_steps}"),
            (self.max_seconds is None or self.max_seconds > 0, f"--max-seconds must be positive, got {self.max_seconds}"),
            (self.per_device_train_batch_size >= 1, f"batch size must be ≥ 1, got {self.per_device_train_batch_size}"),
            (self.gradient_accumulation_steps >= 1, f"grad accum must be ≥ 1, got {self.gradient_accumulation_steps}"),
            (self.learning_rate is None or self.learning_rate > 0, f"lr must be positive, got {self.learning_rate}"),
            (self.save_steps >= 0, f"save_steps must be ≥ 0, got {self.save_steps}"),
            (self.logging_steps > 0, f"logging_steps must be positive, got {self.logging_steps}"),
            (not self.merge_lora or self.lora is not None, "--merge needs --lora"),
            (not self.time_schedule or self.max_seconds is not None,
             "--time-schedule needs --max-seconds (the seconds the schedule runs over)"),
            (not self.time_schedule or schedule_name(self.lr_scheduler_type) in TIME_SCHEDULES,
             f"--time-schedule runs {', '.join(TIME_SCHEDULES)}, not {schedule_name(self.lr_scheduler_type)}"),
            (not self.time_schedule or self.warmup_steps is None or self.warmup_steps < 1,
             f"--time-schedule takes --warmup as a share of the budget (below 1), got {self.warmup_steps}"),
        ]
        for ok, msg in checks:
            if not ok:
                raise UserInputError(msg)
        if self.learning_rate is None:
            from tinytool.train.lora import LORA_LR

            self.learning_rate = LORA_LR if self.lora is not None else self.FULL_LR
        if self.warmup_steps is None:
            self.warmup_steps = self.WARMUP
        self.bf16 = use_bf16(self.bf16)
        if not torch.cuda.is_available():
            self.use_cpu = True  # transformers refuses bf16 off GPU unless told the run is on the CPU
        if self.save_steps == 0:
            self.save_strategy = "no"
        if self.data_seed is None:
            self.data_seed = self.seed
        try:
            super().__post_init__()  # type: ignore[misc]
        except ValueError as e:
            raise UserInputError(str(e)) from None

    def _device_defaults(self, gpu: bool) -> None:
        """The batch layout left unset: on a CPU, single unpadded sequences with 4 accumulation steps and activation
        checkpointing (on the demo data this trains faster than padded batches of 4 and holds a quarter of their
        memory; `benchmarks/results/sft_bench.json`); on a GPU, batches of 4 without checkpointing."""
        cpu_layout = self.per_device_train_batch_size is None and not gpu
        if self.per_device_train_batch_size is None:
            self.per_device_train_batch_size = 4 if gpu else 1
        if self.gradient_accumulation_steps is None:
            self.gradient_accumulation_steps = 4 if cpu_layout else 1
        self.per_device_eval_batch_size = self.per_device_train_batch_size
        if self.activation_checkpointing is None and self.gradient_checkpointing is None:
            self.activation_checkpointing = not gpu
        if self.activation_checkpointing and self.activation_checkpointing_kwargs is None:
            self.activation_checkpointing_kwargs = {"use_reentrant": False}  # works under DDP and with frozen inputs

    @property
    def lora_spec(self):
        """The parsed `LoraSpec`, or None without LoRA."""
        from tinytool.train.lora import LoraSpec

        return LoraSpec.parse(self.lora) if self.lora is not None else None

    @classmethod
    def own_fields(cls) -> list[str]:
        """The fields tinytool declares (its own and the overridden `TrainingArguments` ones): what ``--help``
        lists and what the printed config shows."""
        from tinytool.io.rundir import declared_fields

        return declared_fields(cls)

    #: fields that do not change what is trained: a resumed run may differ in these (raise the step or epoch
    #: count to train on from where a finished run stopped); every other field defines the run
    #: (`tinytool.io.run_settings`)
    FREE: ClassVar[frozenset[str]] = frozenset({
        "output_dir", "overwrite", "max_steps", "max_seconds", "num_train_epochs", "logging_steps", "logging_first_step", "logging_dir", "save_steps",
        "save_total_limit", "save_strategy", "report_to", "eval_steps", "disable_tqdm", "run_name",
        "dataloader_num_workers", "push_to_hub", "hub_model_id", "hub_token",
    })
    #: tinytool's fields that `saved_config` leaves out: what to do with an earlier run (a rerun of the saved
    #: config must not delete it), and the older alias that mirrors ``activation_checkpointing``
    NOT_SAVED: ClassVar[frozenset[str]] = frozenset({"overwrite", "gradient_checkpointing"})
    #: fields that hold paths (or a model spec that may be one): saved and compared absolute where they exist
    PATHS: ClassVar[tuple[str, ...]] = ("output_dir", "model", "data", "eval_data", "student", "teacher", "cache")
    #: `TrainingArguments` fields beyond tinytool's own that change what is trained
    LIBRARY_SETTINGS: ClassVar[tuple[str, ...]] = (
        "lr_scheduler_type", "lr_scheduler_kwargs", "weight_decay", "max_grad_norm", "optim", "adam_beta1",
        "adam_beta2", "adam_epsilon", "seed", "data_seed", "fp16", "warmup_ratio",
    )


def schedule_name(kind: Any) -> str:
    """A learning-rate schedule's name, given as a string or as transformers' `SchedulerType`."""
    return str(getattr(kind, "value", kind))


def paths(value: Any) -> list[str]:
    """One path or several, as a list of strings."""
    return [str(p) for p in ([value] if isinstance(value, (str, Path)) else value or [])]


def check_format(cfg: Any) -> None:
    """``cfg.format`` left unset (None) becomes the format the model was trained in (the ``config.yaml`` of the
    tinytool run that made it), else the default; one set that differs from the trained one is kept, with a
    warning: training in another format than the model learned is seldom what a user meant."""
    from tinytool.formats import DEFAULT_FORMAT, FORMATS
    from tinytool.models.loading import trained_format

    trained = trained_format(cfg.model)
    if trained is not None and trained not in FORMATS:
        if cfg.format is not None:
            return
        raise UserInputError(f"--model {cfg.model}: its run's config.yaml names the format {trained!r}, which is "
                             "not a known one", fix=f"pass --format, one of {', '.join(FORMATS)}")
    if cfg.format is None:
        cfg.format = trained or DEFAULT_FORMAT
    elif trained is not None and trained != cfg.format:
        log.warning("%s was trained in %s; this run trains it in --format %s, as asked", cfg.model, trained,
                    cfg.format)


def check_inputs(cfg: Any, *more_files: str) -> Any:
    """What every training config checks first: ``data`` (and ``more_files``) name files that exist, ``model``
    is a string, ``format`` is a known prompt format (returned; left unset, the one the model was trained in:
    `check_format`)."""
    from tinytool.formats import resolve_format

    cfg.data = paths(cfg.data)
    cfg.model = str(cfg.model)
    check_format(cfg)
    if not cfg.data:
        raise UserInputError("no training data given (--data)")
    from tinytool.io import check_data_files, check_not_input

    check_data_files([*cfg.data, *more_files])

    check_not_input(cfg.output_dir, cfg.model, *cfg.data, *more_files,
                    *(getattr(cfg, k, None) for k in ("teacher", "cache")))
    cfg.prompt_format = resolve_format(cfg.format)  # resolved once: every builder takes the format itself
    return cfg.prompt_format


def _lora_text(value: Any) -> str:
    """A LoRA spec (text, mapping or `LoraSpec`) as its canonical text: YAML and the manifest compare strings."""
    from tinytool.train.lora import LoraSpec

    try:
        return LoraSpec.parse(value).text()
    except UserInputError as e:
        raise UserInputError(f"--lora: {e}") from None


def _plain(value: Any) -> Any:
    """A config value as YAML writes it: enums as their values, paths as text, objects with ``to_dict`` as
    mappings; nothing shared (no YAML anchors)."""
    from enum import Enum

    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "to_dict"):
        return _plain(value.to_dict())
    return value


def field_default(f: dataclasses.Field) -> Any:
    """A dataclass field's default (from its factory where it has one), or `dataclasses.MISSING`."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def saved_config(cfg: Any) -> dict[str, Any]:
    """What ``config.yaml`` holds, so that ``--config`` alone reruns the run from any directory: tinytool's own
    fields as resolved (the user's settings and tinytool's decisions, such as the learning rate, batch layout
    and bf16) and every other field the user set to other than its default, paths absolute. Left out: what
    TRL and transformers derive from these (``steps_per_generation`` from ``generation_batch_size``) and what
    tinytool derives from the machine it ran on (``use_cpu``), both derived again on the rerun's machine;
    ``NOT_SAVED`` and credentials (``hub_token``)."""
    own = set(type(cfg).own_fields())
    given = getattr(cfg, "_as_given", {})
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        name = f.name
        if not f.init or name in getattr(cfg, "NOT_SAVED", ()) or _secret(name):
            continue
        if name in own:
            value = getattr(cfg, name)
        elif name in given and not _same(given[name], field_default(f)):
            value = given[name]
        else:
            continue
        out[name] = path_value(cfg, name, _plain(value))
    return out


def _secret(name: str) -> bool:
    """A credential (``hub_token``): never written to a file. transformers takes every ``*_token`` field for
    one; TRL's ``pad_token`` and ``eos_token`` are settings."""
    return name.endswith("_token") and name not in ("pad_token", "eos_token")


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(_plain(a) == _plain(b))
    except Exception:  # values that cannot be compared count as different
        return False


def config_dict(cfg: Any, *, only_own: bool = False) -> dict[str, Any]:
    """The resolved config as plain values, transformers' ``to_dict`` (the run summary's ``config`` holds
    tinytool's fields of it: ``only_own``)."""
    d = cfg.to_dict()
    if only_own:
        own = type(cfg).own_fields()
        d = {k: d[k] for k in own if k in d}
    return d


def save_config(cfg: Any, out: str | os.PathLike | None = None) -> Path:
    """Write `saved_config` as ``config.yaml`` (``--config`` and `load_config` read it back)."""
    import yaml

    from tinytool.io import atomic_file

    path = Path(out or cfg.output_dir) / CONFIG_FILE
    with atomic_file(path) as fh:
        yaml.safe_dump(saved_config(cfg), fh, sort_keys=False, allow_unicode=True)
    return path


def describe_config(cfg: Any) -> str:
    """tinytool's fields of the resolved config as YAML, for printing."""
    import yaml

    return yaml.safe_dump(config_dict(cfg, only_own=True), sort_keys=False, allow_unicode=True).rstrip()


def _read_config_file(cls: type, path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, Any]]:
    """A config file's options for ``cls`` (an unknown one is an error that names the field it may mean) and its
    ``env:`` mapping, the environment variables to set; an ``env`` that is not a mapping is an option
    (``tinytool rl``'s multi-turn environment, ``env: demo``)."""
    from tinytool.io import read_yaml

    return _file_values(cls, read_yaml(path, "config file"), str(path))


def _file_values(cls: type, data: Any, source: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The options for ``cls`` and the ``env:`` mapping of a config file's content ``data`` (see
    `_read_config_file`); ``source`` names it in errors."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UserInputError(f"{source}: a config file holds a mapping of option: value")
    # transformers writes ``<HUB_TOKEN>`` in place of every ``*_token`` field: never a setting (older config.yaml)
    values = {k: v for k, v in data.items() if not (str(k).endswith("_token") and v == f"<{str(k).upper()}>")}
    env = values.pop("env") if isinstance(values.get("env"), dict) else {}
    _check_keys(cls, values, source)
    return values, env


def _check_keys(cls: type, values: dict[str, Any], source: str) -> None:
    """Every key of ``values`` is a field of ``cls``; an unknown one is an error that names the closest field."""
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = [k for k in values if k not in names]
    if unknown:
        import difflib

        hints = [f"{k} (did you mean {m[0]}?)" if (m := difflib.get_close_matches(k, names, 1)) else k
                 for k in unknown]
        raise UserInputError(f"{source}: unknown option{'s' * (len(unknown) > 1)}: {', '.join(hints)}")


def load_config(cls: type[C], path: str | os.PathLike | None = None, **overrides: Any) -> C:
    """The Python API's way to a config: ``path`` (a YAML file, as ``--config`` reads it) with ``overrides``
    on top. ``load_config(SFTRunConfig, "run.yaml", max_steps=10)`` is ``tinytool sft --config run.yaml
    --max-steps 10``."""
    values = _read_config_file(cls, path)[0] if path is not None else {}
    _check_keys(cls, overrides, "load_config")
    values.update(overrides)
    init = {f.name for f in dataclasses.fields(cls) if f.init}
    try:
        return cls(**{k: v for k, v in values.items() if k in init})
    except TypeError as e:
        raise UserInputError(f"{path or 'config'}: {e}") from None


def config_parser(cls: type, prog: str) -> Any:
    """The parser of ``cls``'s flags and ``--config`` file (a `ConfigParser`, see `_parser_class`)."""
    return _parser_class()(cls, prog)


def _parser_class() -> type:
    """`ConfigParser`, built on first use so that importing this module imports neither TRL nor transformers."""
    global _PARSER
    if _PARSER is None:
        import typing

        from trl import TrlParser

        class ConfigParser(TrlParser):
            """TRL's parser of a config dataclass's flags and ``--config`` YAML (the file's values become the
            defaults, flags override them), the tinytool way: errors are `UserInputError`s (a YAML error names the
            file and line, an unknown key the field it may mean); a file's ``env:`` sets environment variables
            only when it is a mapping (``env: demo`` is ``tinytool rl``'s option); every boolean also takes
            ``--no-NAME``, an optional one (default None: decided at run time) a bare ``--NAME`` too; and the
            config is built from the values the file and the flags gave only (the rest are the dataclass's
            defaults), so that it records which values the user chose (`saved_config`). ``--help`` is the
            verb's (`tinytool.train.cli_common`)."""

            def __init__(self, cls: type, prog: str) -> None:
                from tinytool.io.rundir import declared_fields

                self.config_cls, self.own = cls, set(declared_fields(cls))  # read while the flags are added
                super().__init__(cls, prog=prog, add_help=False)
                hints = typing.get_type_hints(cls)
                taken = set(self._option_string_actions)
                declared = {f.name: f.metadata.get("choices") for f in dataclasses.fields(cls) if f.init}
                for action in list(self._actions):
                    if declared.get(action.dest) is not None:
                        # checked when the config is built (`check_settings`): one message for a flag, a config
                        # file and the Python API alike
                        action.choices = None
                    if hints.get(action.dest) == bool | None and action.nargs is None:
                        action.nargs, action.const = "?", True
                    if action.nargs != "?" or action.const is not True:
                        continue  # not a boolean (TRL's parser makes one take a value, or none for true)
                    names = [s[2:] for s in action.option_strings if s.startswith("--")]
                    negations = [f"--no{sep}{n}" for n in names for sep in "-_" if f"--no{sep}{n}" not in taken]
                    if negations:
                        self.add_argument(*negations, action="store_false", dest=action.dest, help=argparse.SUPPRESS)

            def _parse_dataclass_field(self, parser: Any, f: dataclasses.Field) -> None:  # type: ignore[override]
                """A field tinytool declares (`tinytool.clikit.setting`) becomes a flag with what argparse takes of
                its metadata (its help escaped for argparse, its aliases, choices and action); bounds and the other
                keys are checked when the config is built (`check_settings`). A library's field is TRL's flag."""
                if f.name in self.own:
                    meta = {k: v for k, v in f.metadata.items() if k in _ARGPARSE_KEYS}
                    meta["help"] = meta.get("help", "").replace("%", "%%")
                    f = copy.copy(f)
                    f.metadata = meta
                super()._parse_dataclass_field(parser, f)

            def error(self, message: str):  # type: ignore[override]
                raise UserInputError(f"{self.prog}: {message}", fix=f"see {self.prog} --help")

            def parse_args_and_config(self, args: list[str] | None = None) -> tuple[Any]:  # type: ignore[override]
                """``args`` (``--config FILE`` among them) → ``(config,)``."""
                import sys

                args = list(sys.argv[1:] if args is None else args)
                from_file: dict[str, Any] = {}
                if "--config" in args:
                    i = args.index("--config")
                    if i + 1 >= len(args):
                        raise UserInputError(f"{self.prog}: --config needs a file path", fix=f"see {self.prog} --help")
                    path = args[i + 1]
                    del args[i:i + 2]
                    from_file, env = _read_config_file(self.config_cls, path)
                    os.environ.update({k: str(v) for k, v in env.items()})
                return (self.config_cls(**self.parse_values(args, from_file)),)

            def parse_values(self, args: list[str], from_file: dict[str, Any]) -> dict[str, Any]:
                """The values the config is built from: ``args`` (flags) over ``from_file`` (a config file's
                options), each converted to its field's type; a value that is not (``max_steps: abc``), an unknown
                flag or a missing required option is a `UserInputError` naming the option."""
                if from_file:
                    self.set_defaults_with_config(**from_file)
                unset = object()  # argparse fills in a field's default only where the namespace lacks it
                ns = argparse.Namespace(**{a.dest: unset for a in self._actions if a.dest not in from_file})
                ns, rest = self.parse_known_args(args, ns)
                if rest:
                    flags = [a for a in rest if a.startswith("-")] or rest
                    raise UserInputError(f"{self.prog}: unknown option{'s' * (len(flags) > 1)}: {' '.join(flags)}",
                                         fix=f"see {self.prog} --help")
                init = {f.name for f in dataclasses.fields(self.config_cls) if f.init}
                return {k: v for k, v in vars(ns).items() if k in init and v is not unset}

        _PARSER = ConfigParser
    return _PARSER


_PARSER: type | None = None
#: what argparse takes of a `tinytool.clikit.setting`'s metadata (the rest is the Typer commands' or a check's)
_ARGPARSE_KEYS = ("help", "aliases", "choices", "action", "metavar")


def check_config_values(cls: type, values: dict[str, Any], prog: str) -> None:
    """Would a ``--config`` file holding ``values`` parse into ``cls``? Every key a field, every value of its
    field's type, the required ones given, as `parse_config` reads them; a `UserInputError` names the option
    otherwise. The config is not built: building it checks that input files exist (an earlier step may write
    them) and decides what depends on the machine."""
    from_file, _ = _file_values(cls, values, prog)
    config_parser(cls, prog).parse_values([], from_file)


def parse_config(cls: type[C], args: list[str], prog: str) -> C:
    """Flags (and ``--config FILE``, which they override) → a config of ``cls``: every field of it, TRL's
    included, is a flag. Errors are `UserInputError`s."""
    (cfg,) = config_parser(cls, prog).parse_args_and_config(args)
    return cfg


__all__ = [
    "CONFIG_FILE",
    "Repeatable",
    "RunOptions",
    "check_config_values",
    "config_parser",
    "describe_config",
    "listed",
    "load_config",
    "parse_config",
    "save_config",
    "saved_config",
]
