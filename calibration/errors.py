"""Every error the calibration package raises on purpose, in one tree.

    CalibrationError
    ├── InputError              a file, option or form value is invalid (a list of Problem)
    ├── NotFoundError           a named run, cycle, answer or claim does not exist
    ├── NotALeadError           a lead-only action asked for by someone who is not a lead now
    ├── SignedOutError          a write by a name a lead deactivated or renamed: the session ends
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

An InputError carries its problems as objects, `Problem(message, file, line, field, hint)`,
never as text to be parsed back: each front end renders them (the CLI as `FILE:LINE: field:
message`, the Import page as table rows). A hint names what the user can set as an `Option`,
not as a command-line flag or a control; the renderer gives each option its own words (the
CLI its flag, a page its control), and `str()` uses the neutral `OPTION_WORDS`. Any other
error's message may name options the same way (text and `Option`s, worded by `lines`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Option(StrEnum):
    """Something a user sets beside the input itself, which a hint may tell them to set."""

    ENCODING = "encoding"
    JUDGE_MODEL = "judge_model"
    JUDGE_PROMPT_VERSION = "judge_prompt_version"
    MAP = "map"
    COLUMNS = "columns"
    REVIEWER = "reviewer"
    UPDATE = "update"
    SOURCE = "source"  # the tool whose output the file is (the format)
    SKIP_FAILED = "skip_failed"
    # Outside the import: cycles, export, restore and the judge.
    FORCE = "force"  # a cycle of a size outside the bounds, or from a pool that is too small
    INCLUDE_LABELED = "include_labeled"
    HOLDOUT = "holdout"  # a holdout cycle
    MARK_HOLDOUT = "mark_holdout"  # marking answers as holdout
    FORCE_CLOSE = "force_close"  # closing a cycle with labels still owed
    DB = "db"  # the database file
    FORMAT = "format"  # the export format
    MAX_TOKENS = "max_tokens"
    JSON_MODE = "json_mode"
    BASELINE = "baseline"
    REVISES = "revises"
    PROMPT_FILE = "prompt_file"


# The words `str()` uses for an option: the Python API's keyword, as a caller of it writes it.
OPTION_WORDS: Mapping[Option, str] = {
    Option.ENCODING: "encoding=",
    Option.JUDGE_MODEL: "judge_model=",
    Option.JUDGE_PROMPT_VERSION: "judge_prompt_version=",
    Option.MAP: "a mapping entry such as",
    Option.COLUMNS: "columns=",
    Option.REVIEWER: "reviewer=",
    Option.UPDATE: "update=True",
    Option.SOURCE: "the format",
    Option.SKIP_FAILED: "skip_failed=True",
    Option.FORCE: "force=True",
    Option.INCLUDE_LABELED: "include_labeled=True",
    Option.HOLDOUT: "holdout=True",
    Option.MARK_HOLDOUT: "mark_holdout()",
    Option.FORCE_CLOSE: "force=True",
    Option.DB: "the database path",
    Option.FORMAT: "fmt=",
    Option.MAX_TOKENS: "max_tokens=",
    Option.JSON_MODE: "json_mode=True",
    Option.BASELINE: "baseline=",
    Option.REVISES: "revises=",
    Option.PROMPT_FILE: "a template path",
}

# Text with the options it names left as `Option`s: a hint, or an adapter's note.
Hint = tuple[str | Option, ...]


def phrase(parts: Hint, words: Mapping[Option, str] = OPTION_WORDS) -> str:
    """`parts` as text, each option in `words` (a front end passes its own); an option a front
    end has no word for (one its own messages never name) in `OPTION_WORDS`."""
    return "".join(words.get(p, OPTION_WORDS[p]) if isinstance(p, Option) else p for p in parts)


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with an input: where (file, line, field), what, and how to fix it.

    `hint` is text with the options it names left as `Option`s, so that each front end can name
    its own control for them (`hint_text`)."""

    message: str
    file: str = ""
    line: int | None = None
    field: str = ""
    hint: Hint = ()

    def hint_text(self, words: Mapping[Option, str] = OPTION_WORDS) -> str:
        return phrase(self.hint, words)

    def text(self, words: Mapping[Option, str] = OPTION_WORDS) -> str:
        """`FILE:LINE: field: message; hint`, each part only when there is one."""
        where = f"{self.file}:{self.line}" if self.file and self.line is not None else self.file
        hint = self.hint_text(words)
        return ": ".join(x for x in (where, self.field, self.message + (f"; {hint}" if hint else "")) if x)

    def __str__(self) -> str:
        return self.text()


class CalibrationError(Exception):
    """Base of every error the package raises on purpose."""

    def __init__(self, message: str | Hint = "", *args: object) -> None:
        # A message that names an option keeps it as an `Option`, for each front end to word.
        self.parts: Hint = (message,) if isinstance(message, str) else tuple(message)
        super().__init__(phrase(self.parts), *args)

    def lines(self, words: Mapping[Option, str] | None = None) -> list[str]:
        """The message as lines for a front end to show, each option it names in `words`."""
        return [phrase(self.parts, OPTION_WORDS if words is None else words)]


class InputError(CalibrationError):
    """A file or form given by a user is invalid; its problems name file, line and field."""

    def __init__(
        self,
        problems: Problem | str | Iterable[Problem | str],
        *,
        more: int = 0,
        closing: Problem | None = None,
    ) -> None:
        items = [problems] if isinstance(problems, Problem | str) else list(problems)
        self.problems = [p if isinstance(p, Problem) else Problem(p) for p in items]
        self.more = more  # problems found beyond the ones kept
        self.closing = closing  # what became of the input as a whole ("nothing was imported")
        super().__init__("\n".join(self.lines()))

    def lines(self, words: Mapping[Option, str] | None = None) -> list[str]:
        """Every problem as a line (`Problem.text`), then how many more there were, then the closing."""
        words = OPTION_WORDS if words is None else words
        return [
            *(p.text(words) for p in self.problems),
            *([f"... and {self.more} more problems"] if self.more else []),
            *([self.closing.text(words)] if self.closing else []),
        ]

    def grouped(self) -> list[tuple[list[int], Problem]]:
        """The problems with one (field, message, hint) said once: (its lines in file order, the
        problem), in the order each first occurs. A value missing on every record is one entry."""
        groups: dict[Problem, list[int]] = {}
        for p in self.problems:
            key = Problem(p.message, p.file, None, p.field, p.hint)
            groups.setdefault(key, []).extend([] if p.line is None else [p.line])
        return [(lines, p) for p, lines in groups.items()]


class NotFoundError(CalibrationError):
    """A named judge run, cycle, answer or claim does not exist."""


class NotALeadError(CalibrationError):
    """A lead-only action was asked for by someone who is not a lead (now); nothing was done."""


class SignedOutError(CalibrationError):
    """A reviewer's work was written under a name that is no longer theirs to write: a lead
    deactivated it on the roster, or renamed it (to `renamed_to`). Nothing was written, and
    the session signed in under the name ends: its message is the one sentence it shows."""

    def __init__(self, message: str, *, renamed_to: str | None = None) -> None:
        super().__init__(message)
        self.renamed_to = renamed_to


class SignInRefused(CalibrationError):
    """A provider sign-in that stands for no reviewer (its name held by another account, or a
    sign-in that logged out); nothing was written."""


class ConflictError(CalibrationError):
    """The input contradicts what the database already holds (for example changed answer text)."""


class WorkOutstandingError(ConflictError):
    """A cycle was asked to close while its reviewers still have claims to label."""

    def __init__(self, message: str | Hint, progress: Any) -> None:
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
