"""The one base class of the errors a user can cause and fix.

Every error that a mistake in input, flags or files can raise derives from `TinytoolError`. The
command line catches `TinytoolError` once, at the top, and prints its message on one line followed
by its ``fix`` (what to do about it); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class TinytoolError(Exception):
    """A user-facing error: ``str(e)`` says what is wrong and where (file, line, field, setting);
    ``fix``, when set, says what to do about it (``"rerun with --overwrite"``)."""

    #: what to do about it, printed after the message; subclasses may give a default
    fix: str | None = None

    def __init__(self, message: object = "", *, fix: str | None = None):
        super().__init__(str(message))
        if fix is not None:
            self.fix = fix


class UserInputError(TinytoolError, ValueError):
    """A flag, setting or record that cannot be used as given (also a `ValueError`)."""


class MissingInputError(TinytoolError, FileNotFoundError):
    """An input file or directory that does not exist (also a `FileNotFoundError`)."""


class OutputExistsError(TinytoolError, FileExistsError):
    """An output that already holds results and would be overwritten (also a `FileExistsError`)."""

    fix = "rerun with --overwrite to start again, or choose another output"


__all__ = ["MissingInputError", "OutputExistsError", "TinytoolError", "UserInputError"]
