"""What a restored row's cells must hold: what the readers of each column expect.

A restore writes a backup's rows as they are, so a cell the readers cannot use (text where a
number belongs, a JSON column that is not JSON or not of the shape its reader takes, an import
still moving its rows in) would restore fine and break `stats`, `export` or a page later. Each
cell is checked here against its column's declared type (INTEGER, REAL, TEXT) and, for a JSON
column, the shape its reader takes; the vocabularies (verdicts, kinds, statuses) are the
schema's CHECK constraints, which the scratch load enforces. Text with a NUL character is
refused: PostgreSQL cannot store it, and a store must move between the engines.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, TypeAdapter, ValidationError

from .flag import Thresholds
from .reading import field_errors
from .store import SHARE_KEY, THRESHOLD_SETTINGS


class _Figure(BaseModel):
    """A figure of a closed cycle's snapshot, as the dashboard's trend reads it."""

    model_config = ConfigDict(extra="allow")
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


class _Agreement(BaseModel):
    model_config = ConfigDict(extra="allow")
    n_claims: int | None = None
    agreement: _Figure | None = None
    kappa: _Figure | None = None


class _Snapshot(BaseModel):
    """A closed cycle's frozen figures (`stats --json` as it was then)."""

    model_config = ConfigDict(extra="allow")
    agreement: _Agreement | None = None


class _Plan(BaseModel):
    """A planned cycle's plan: the figures read it for the answers' strata."""

    model_config = ConfigDict(extra="allow")
    answer_strata: dict[StrictStr, StrictStr]


_IDS = TypeAdapter(list[StrictStr])
_OBJECT = TypeAdapter(dict[str, Any])
# (table, column) -> the shape its reader takes once parsed.
JSON_COLUMNS: Mapping[tuple[str, str], TypeAdapter[Any]] = {
    ("answers", "metadata"): _OBJECT,
    ("judge_verdicts", "evidence"): _IDS,
    ("label_events", "evidence"): _IDS,
    ("human_labels", "evidence"): _IDS,
    ("judge_lab_runs", "params"): _OBJECT,
    ("judge_calls", "exchanges"): TypeAdapter(list[dict[str, Any]]),
    ("reassignments", "answers"): _IDS,
    ("imports", "new_runs"): TypeAdapter(list[StrictInt]),
    ("cycles", "snapshot"): TypeAdapter(_Snapshot),
    ("cycle_plans", "plan"): TypeAdapter(_Plan),
}
# Settings whose value is read as a number: the thresholds (by name), and each cycle's failing share.
_THRESHOLD_OF = {key: name for name, key in THRESHOLD_SETTINGS.items()}
_SHARE_HEAD, _, _SHARE_TAIL = SHARE_KEY.partition("{}")


def _value_problem(value: Any) -> str | None:
    """A value no column holds: a nested object or array, a number past a double's range."""
    if isinstance(value, dict | list):
        return "a JSON object or array where a column value belongs"
    if isinstance(value, float) and not math.isfinite(value):
        return "a number too large for the database"
    return None


def _type_problem(value: Any, declared: str) -> str | None:
    if isinstance(value, bool):
        return "true or false where the column holds a number or text"
    if declared == "INTEGER" and not isinstance(value, int):
        return "not an integer"
    if declared == "REAL" and not isinstance(value, int | float):
        return "not a number"
    if declared == "TEXT" and not isinstance(value, str):
        return "not text"
    if isinstance(value, str) and "\x00" in value:
        return "text holding a NUL character (the databases cannot store it)"
    return None


def _json_problem(text: str, shape: TypeAdapter[Any]) -> str | None:
    try:
        value = json.loads(text)
    except ValueError as exc:
        return f"not JSON ({exc})"
    try:
        shape.validate_python(value)
    except ValidationError as exc:
        where, message = field_errors(exc)[0]
        return f"JSON not of the shape its readers take ({where + ': ' if where else ''}{message})"
    return None


def _setting_problem(key: Any, value: Any) -> str | None:
    numeric = key in _THRESHOLD_OF or (
        isinstance(key, str) and key.startswith(_SHARE_HEAD) and key.endswith(_SHARE_TAIL)
    )
    if not numeric or not isinstance(value, str):
        return None
    try:
        number = float(value)
    except ValueError:
        return f"setting {key}: {value!r} is not a number"
    if not math.isfinite(number):
        return f"setting {key}: {value!r} is not a finite number"
    if key in _THRESHOLD_OF:
        try:
            Thresholds(**{_THRESHOLD_OF[key]: number})  # the others at their defaults: each is checked alone
        except ValueError as exc:
            return f"setting {key}: {exc}"
    return None


def cell_problem(table: str, row: Mapping[str, Any], types: Mapping[str, str]) -> str | None:
    """The first cell of `row` (a row of `table` whose columns have the declared `types`) that its
    readers could not use, as 'row.COLUMN: why'; None when every cell is usable."""
    stray = [c for c in row if c not in types]
    if stray:
        return f"row: unknown column(s) {', '.join(map(repr, stray))}"
    for column, value in row.items():
        if value is None:
            continue  # NOT NULL is the schema's to enforce
        problem = _value_problem(value) or _type_problem(value, types[column])
        shape = JSON_COLUMNS.get((table, column))
        if problem is None and shape is not None:
            problem = _json_problem(value, shape)
        if problem is None and (table, column) == ("imports", "status") and value == "publishing":
            problem = "an import still moving its rows in: a backup holds finished imports only"
        if problem is None and (table, column) == ("settings", "value"):
            problem = _setting_problem(row.get("key"), value)
        if problem:
            return f"row.{column}: {problem}"
    return None
