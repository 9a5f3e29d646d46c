"""Files as every tinytool verb writes them: JSONL read/append/atomic write, and run directories.

- `tinytool.io.files`: JSONL and JSON with errors that name file and line; appends fsynced row by
  row batch; whole files and whole directories replaced atomically, their temporaries removed on any
  exit, Ctrl-C included; an output that is also an input refused.
- `tinytool.io.rundir`: a run directory's manifest (the settings that define the run); a rerun
  resumes only when they match, else an error names the setting that differs; ``overwrite`` starts
  again.
"""

from tinytool.io.files import (
    append_jsonl,
    atomic_dir,
    atomic_file,
    check_data_files,
    check_model_out,
    check_not_input,
    check_output_file,
    check_writable,
    ensure_dir,
    iter_jsonl_rows,
    read_json,
    read_jsonl_rows,
    read_yaml,
    repair_log,
    sha256_file,
    write_json,
    write_jsonl,
)
from tinytool.io.rundir import RunDir, RunDirError, Step, open_run_dir, run_settings

__all__ = [
    "RunDir",
    "RunDirError",
    "Step",
    "append_jsonl",
    "atomic_dir",
    "atomic_file",
    "check_data_files",
    "check_model_out",
    "check_not_input",
    "check_output_file",
    "check_writable",
    "ensure_dir",
    "iter_jsonl_rows",
    "open_run_dir",
    "read_json",
    "read_jsonl_rows",
    "read_yaml",
    "repair_log",
    "run_settings",
    "sha256_file",
    "write_json",
    "write_jsonl",
]
