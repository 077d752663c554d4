"""An input's problems as the Import page's table, in the words of its own controls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calibration.errors import (
    InputError,
    Option,
)

# What the Import page calls each option a problem's hint names: its own controls, where the
# CLI says its flags (`errors.Problem.text`).
IMPORT_CONTROLS: Mapping[Option, str] = {
    Option.ENCODING: "the Encoding choice above",
    Option.JUDGE_MODEL: "the Judge model field",
    Option.JUDGE_PROMPT_VERSION: "the Judge prompt version field",
    Option.MAP: "a line in Extra verdict spellings (More options) such as",
    Option.COLUMNS: "the column dropdowns above",
    Option.REVIEWER: "a reviewer column",
    Option.UPDATE: "the command line's `import --update` (this page never replaces them)",
    Option.SOURCE: "the Format choice above",
    Option.SKIP_FAILED: "the box to leave them out (More options)",
}


def _line_list(lines: list[int]) -> str:
    if len(lines) <= 3:
        return ", ".join(map(str, lines))
    return f"{', '.join(map(str, lines[:3]))} and {len(lines) - 3} more"


def problem_rows(exc: InputError, words: Mapping[Option, str] = IMPORT_CONTROLS) -> list[dict[str, Any]]:
    """The table of an input's problems: one row per problem, however many records share it
    (one missing judge model is one row, with its lines and count), hints in `words`."""
    rows = [
        {
            "lines": _line_list(lines),
            "times": max(1, len(lines)),
            "field": p.field,
            "problem": p.message + (f"; {hint}" if (hint := p.hint_text(words)) else ""),
        }
        for lines, p in exc.grouped()
    ]
    if exc.more:
        rows.append({"lines": "", "times": exc.more, "field": "", "problem": "more problems, not listed"})
    return rows
