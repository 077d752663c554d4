"""The few named errors of the calibration package.

Foreign errors (json, pydantic, sqlite3, httpx) are translated into these at the
boundary, so callers (CLI, pages, tests) handle one family.
"""

from __future__ import annotations


class CalibrationError(Exception):
    """Base of every error the package raises on purpose."""


class InputError(CalibrationError):
    """A file or form given by a user is invalid; the message names file, line and field."""

    def __init__(self, problems: list[str] | str) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class ConflictError(CalibrationError):
    """The input contradicts what the database already holds (for example changed answer text)."""


class NotFoundError(CalibrationError):
    """A named judge run, cycle, answer or claim does not exist."""


class JudgeError(CalibrationError):
    """The judge endpoint could not be reached or kept answering badly."""
