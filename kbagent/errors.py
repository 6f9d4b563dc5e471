"""The one error hierarchy of kbagent.

Every failure a user can cause or meet is a :class:`KbagentError` subclass
with a short, one-line message and an exit code. Surfaces render them (the
CLI as a red line on stderr plus the exit code); nothing below the surfaces
prints. Tool failures inside the agent loop are *not* errors: they become
observations worded for the model.
"""

from __future__ import annotations


class ExitCode:
    """Exit codes of the ``kbagent`` command (documented in the README)."""

    OK = 0
    ERROR = 1
    BAD_INPUT = 2
    NOT_FOUND = 3
    BUSY = 4
    CORRUPT = 5
    BACKEND = 6
    INTERRUPTED = 130


class KbagentError(Exception):
    """Base class: a one-line message for a person, and an exit code."""

    exit_code: int = ExitCode.ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class BadInputError(KbagentError):
    """The input is malformed: a file where a folder was expected, an empty
    folder, an invalid KB name, a malformed question file, bad options."""

    exit_code = ExitCode.BAD_INPUT


class IncompatibleKBError(BadInputError):
    """A KB built another way (index schema, embedding model, extraction/chunking)
    than an incremental ingest would write: ``--rebuild`` updates it."""


class NotFoundError(KbagentError):
    """Something named does not exist: a path, a KB, a model file."""

    exit_code = ExitCode.NOT_FOUND


class KbBusyError(KbagentError):
    """Another process holds the KB's writer lock."""

    exit_code = ExitCode.BUSY


class KbCorruptError(KbagentError):
    """A KB's files are unreadable or inconsistent; the message says how to rebuild."""

    exit_code = ExitCode.CORRUPT


class BackendError(KbagentError):
    """An LLM or embedding backend failed to load or to answer."""

    exit_code = ExitCode.BACKEND


class Interrupted(KbagentError):
    """The user interrupted the work (Ctrl-C); nothing stored was changed."""

    exit_code = ExitCode.INTERRUPTED
