"""Every error the calibration package raises on purpose, in one tree.

    CalibrationError
    ├── InputError              a file, option or form value is invalid
    ├── NotFoundError           a named run, cycle, answer or claim does not exist
    ├── NotALeadError           a lead-only action asked for by someone who is not a lead now
    ├── ConflictError           the request contradicts what the database holds
    │   ├── WorkOutstandingError    a cycle asked to close while labels are still owed
    │   ├── NotRevealedError        judge verdicts asked for before the blind labels
    │   └── StaleLabelError         a label write based on a state changed since (another tab)
    ├── StorageError            the database could not do its part
    │   ├── DatabaseBusyError       another writer kept the lock past the busy timeout
    │   ├── DiskFullError           the disk (or the database's size limit) is full
    │   ├── ReadOnlyError           the database file or its folder cannot be written
    │   ├── DatabaseMissingError    the database file is not there (deleted, moved, mistyped)
    │   └── NotADatabaseError       the file is not a calibration database (replaced or damaged)
    └── JudgeError              the judge endpoint failed or answered unusably
        ├── CallFailed              one request failed for good
        ├── EndpointRejected        401 / 403 / 404: every call would fail alike
        ├── EndpointUnreachable     no connection could be made at all
        └── ReplyError              a reply is not a usable verdict list

Foreign errors are translated at the boundary only where the package knows what they mean
(json and pydantic errors at the file edge become InputError with file, line and field;
SQLite's integrity and busy errors become ConflictError and DatabaseBusyError; full, read-only,
missing and foreign database files become the StorageError subclasses, in one sentence without a
path (`store.connection`); httpx's
transport errors become JudgeError subclasses). Anything else is a bug and surfaces as itself.
Callers (CLI, pages) catch CalibrationError and show its message; nothing else is caught.
"""

from __future__ import annotations

from typing import Any


class CalibrationError(Exception):
    """Base of every error the package raises on purpose."""


class InputError(CalibrationError):
    """A file or form given by a user is invalid; the message names file, line and field."""

    def __init__(self, problems: list[str] | str) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class NotFoundError(CalibrationError):
    """A named judge run, cycle, answer or claim does not exist."""


class NotALeadError(CalibrationError):
    """A lead-only action was asked for by someone who is not a lead (now); nothing was done."""


class ConflictError(CalibrationError):
    """The input contradicts what the database already holds (for example changed answer text)."""


class WorkOutstandingError(ConflictError):
    """A cycle was asked to close while its reviewers still have claims to label."""

    def __init__(self, message: str, progress: Any) -> None:
        super().__init__(message)
        self.progress = progress  # cycles.CycleProgress: what is still owed


class NotRevealedError(ConflictError):
    """The judge's verdicts of an answer were asked for before the reviewer labeled every claim."""


class StaleLabelError(ConflictError):
    """A label write was based on a label state that has changed since; nothing was written."""


class StorageError(CalibrationError):
    """The database could not complete an operation; nothing was written."""


class DatabaseBusyError(StorageError):
    """Another writer held the database lock past the busy timeout; nothing was written."""


class DiskFullError(StorageError):
    """The disk holding the database is full; nothing was written."""


class ReadOnlyError(StorageError):
    """The database file, or the folder it lives in, cannot be written; nothing was written."""


class DatabaseMissingError(StorageError):
    """The database file is missing (deleted or moved while running, or a mistyped path); never recreated."""


class NotADatabaseError(StorageError):
    """The database file was replaced by, or damaged into, something that is not a calibration database."""


class JudgeError(CalibrationError):
    """The judge endpoint could not be reached or kept answering badly."""


class CallFailed(JudgeError):
    """One request failed for good (retries exhausted, or a 4xx that retrying cannot fix)."""

    def __init__(self, message: str, *, attempts: int, log: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.log = log


class EndpointRejected(JudgeError):
    """401 / 403 / 404: every call of the run would fail alike, so the run stops."""

    answers_stored = 0  # set by the runner: answers of this invocation stored before the stop


class EndpointUnreachable(JudgeError):
    """No connection to the endpoint (refused, unknown host, TLS failure) even after a short retry."""

    answers_stored = 0  # set by the runner: answers of this invocation stored before the stop


class ReplyError(JudgeError):
    """The judge's reply is not a usable verdict list; the message is shown to the model."""
