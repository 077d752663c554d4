r"""The Python API: the CLI's import, stats and export for pipelines and notebooks.

Example (the manual's, docs/formats.md; `tests/test_api.py` runs docs/api_example.py and checks
this copy of it), where `answers` is a list of dicts in the JSONL record shape ({"id",
"question", "answer", "chunks": [{"id", "text"}], "claims": [{"text", "verdict", "rationale"}]})
and `labels` a list of {"answer_id", "claim_id", "verdict", "reviewer"} dicts::

    import calibration
    with calibration.connect("calibration.db") as cal:
        cal.import_answers(answers, judge_model="gpt-4.1", judge_prompt_version="v1")
        cal.import_labels(labels)
        print("agreement:", cal.stats()["assessment"]["agreement"]["value"])

Everything goes through the same code as the CLI: a list of dicts is validated record by
record like the lines of a JSONL file (a problem names its position in the list as the line,
counted from 1, and the source as ``<records>``), and each call is all or nothing: an
InputError lists the first problems and nothing of that call is written.
"""

from __future__ import annotations

import csv
import dataclasses
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from . import adapters, export, importing, store
from .errors import InputError, Problem
from .export import ExportReport
from .importing import ImportReport, LabelsReport
from .models import Verdict, parse_mapping
from .reading import json_records
from .store import Database

RECORDS = "<records>"
ROWS = "<rows>"
_LABEL_COLUMNS = ("answer_id", "claim_id", "verdict", "reviewer", "note", "evidence")


def _mapping(mapping: Mapping[str, str | Verdict] | None) -> dict[str, Verdict] | None:
    if not mapping:
        return None
    try:
        return parse_mapping([f"{k}={v.value if isinstance(v, Verdict) else v}" for k, v in mapping.items()])
    except ValueError as exc:
        raise InputError(str(exc)) from exc


def _is_frame(value: Any) -> bool:
    return type(value).__name__ == "DataFrame" and hasattr(value, "itertuples")


class Calibration:
    """One open database. Use it as a context manager, or call `close()` when done.

    Each method opens and ends its own transaction, so the object can stay open in a REPL
    while reviewers label in the app.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path: Path | str = (
            (path if store.is_postgres(path) else Path(path)) if path is not None else store.default_db_url()
        )
        self.db: Database = store.connect(self.path)

    def __enter__(self) -> Calibration:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"calibration.connect({store.shown(self.path)!r})"

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self.db.close()

    # ------------------------------------------------------------ import

    def import_answers(
        self,
        source: Iterable[Mapping[str, Any]] | str | Path | Any,
        *,
        from_: str | None = None,
        judge_model: str | None = None,
        judge_prompt_version: str | None = None,
        mapping: Mapping[str, str | Verdict] | None = None,
        encoding: str | None = None,
        dry_run: bool = False,
        **options: Any,
    ) -> ImportReport:
        """Import judged answers, all or nothing; the report `import` prints.

        `source` is a list (any iterable) of dicts in the JSONL record shape, a pandas
        DataFrame with one row per claim (as `--from csv`; give `columns=`), or a path: this
        tool's JSONL / JSON array, or another tool's file with `from_` = "deepeval", "ragas",
        "refchecker" or "csv" (also "tsv", "parquet"), whose options (`columns=`, `metric=`,
        `id_key=`, `id_prefix=`, `id_field=`, `skip_failed=`, `delimiter=`) pass through.
        `judge_model` / `judge_prompt_version` fill records that do not name them; `mapping`
        maps extra verdict spellings, e.g. ``{"partial": "UNSUPPORTED"}``. `dry_run=True`
        validates and counts against this database, then writes nothing.
        """
        table = _mapping(mapping)
        common: dict[str, Any] = {
            "judge_model": judge_model,
            "judge_prompt_version": judge_prompt_version,
            "mapping": table,
        }
        if isinstance(source, str | Path):
            if from_ is not None:
                name = adapters.canonical(from_)
                bad = sorted(set(options) - set(adapters.OPTIONS[name]))
                if bad:
                    raise InputError(
                        f"{', '.join(bad)}: not an option of the {name} adapter "
                        f"(it takes {', '.join(adapters.OPTIONS[name])})"
                    )
                report, _ = adapters.import_file(
                    self.db, name, source, encoding=encoding, dry_run=dry_run, **common, **options
                )
                return report
            if options:
                raise InputError(f"{', '.join(sorted(options))}: adapter options need from_=")
            return importing.import_answers(self.db, source, encoding=encoding, dry_run=dry_run, **common)
        if from_ is not None and adapters.canonical(from_) != adapters.table.NAME:
            raise InputError(f"from_={from_!r} reads a file: give its path")
        if _is_frame(source):
            result = adapters.table.read_frame(source, columns=options.pop("columns", None), **common)
            if options:
                raise InputError(f"{', '.join(sorted(options))}: not an option for a DataFrame")
            return importing.import_records(
                self.db, result.records, source=result.source, dry_run=dry_run, **common
            )
        if isinstance(source, Mapping):
            raise InputError("import_answers takes a list of records; wrap the one record in a list")
        if options:
            raise InputError(f"{', '.join(sorted(options))}: adapter options need a file and from_=")
        # The values go through the input policy as a file's records do (`reading.json_records`).
        return importing.import_records(
            self.db, json_records(source), source=RECORDS, dry_run=dry_run, **common
        )

    def import_labels(
        self,
        source: Iterable[Mapping[str, Any]] | str | Path,
        *,
        reviewer: str | None = None,
        mapping: Mapping[str, str | Verdict] | None = None,
        encoding: str | None = None,
    ) -> LabelsReport:
        """Import human labels, all or nothing; the report `import-labels` prints.

        `source` is a CSV path (or this tool's JSONL export, restored losslessly), or rows as
        dicts with answer_id, claim_id, verdict and optionally reviewer, note and evidence (a
        list of chunk ids, or one string with ids separated by ";"). Problems in rows name the
        row's position in the list (from 1) as the line.
        """
        table = _mapping(mapping)
        if isinstance(source, str | Path):
            return importing.import_labels(
                self.db, source, reviewer=reviewer, mapping=table, encoding=encoding
            )
        return _import_label_rows(self.db, source, reviewer=reviewer, mapping=table)

    # ------------------------------------------------------------ read

    def stats(
        self, judge_run: str | None = None, cycle: str | None = None, *, bootstrap: int = 2000, seed: int = 0
    ) -> dict[str, Any]:
        """The agreement report as a dict: exactly what `stats --json` prints.

        `judge_run` is MODEL@VERSION (or VERSION when unique; default: the most recently
        imported run, or the cycle's run); `cycle` limits it to that cycle's claims.
        """
        from . import cycles, report  # the statistics stack loads only when asked for

        found = cycles.get_cycle(self.db, cycle) if cycle else None
        run = store.find_judge_run(self.db, judge_run or (found.judge_run if found else None))
        name = None if found is None else found.name
        scoped, assessed = report.assess(
            self.db, run, None if found is None else found.id, cycle=name, bootstrap=bootstrap, seed=seed
        )
        return report.stats_json(scoped, assessed, name)

    # ------------------------------------------------------------ close

    def close_labeling(self, judge_run: str | None, *, closed_by: str) -> store.LabelingClosure:
        """Close labeling for `judge_run` (MODEL@VERSION, or VERSION when unique), one way, as
        `close-labeling RUN --by NAME --yes`: the final reading is taken now and decides what the
        running rule left open; no new cycle is drawn from the run. `closed_by` names the lead."""
        from . import closing

        return closing.close_labeling(self.db, judge_run, closed_by=closed_by)

    def export(
        self,
        path: str | Path,
        format: str = "jsonl",
        *,
        judge_run: str | None = None,
        cycle: str | None = None,
        only_final: bool = False,
    ) -> ExportReport:
        """Write an export (a format of `export.FORMATS`: "jsonl", "golden", "csv", "deepeval", "ragas",
        "langfuse") atomically, as `export --out PATH`."""
        return export.export(
            self.db, path, fmt=format, judge_run=judge_run, cycle=cycle, only_final=only_final
        )


def connect(path: str | Path | None = None) -> Calibration:
    """Open (and create or upgrade) the database at `path`; default $CALIBRATION_DB or data/calibration.db."""
    return Calibration(path)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ";".join(str(v) for v in value)
    return str(value)


def _import_label_rows(
    db: Database,
    rows: Iterable[Mapping[str, Any]],
    *,
    reviewer: str | None,
    mapping: dict[str, Verdict] | None,
) -> LabelsReport:
    """Label rows through the CSV import itself, so validation cannot drift from the CLI's.

    The rows are written to a temporary CSV; problem lines are then renamed from the CSV's
    physical lines (a note may span several) back to the rows' positions.
    """
    line_of: dict[int, int] = {}  # CSV line a row starts on -> row position
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.csv"
        with path.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(_LABEL_COLUMNS)
            line = 2
            for pos, row in enumerate(rows, start=1):
                if not isinstance(row, Mapping):
                    raise InputError(f"{ROWS}:{pos}: each row must be a dict")
                unknown = sorted(set(row) - set(_LABEL_COLUMNS))
                if unknown:
                    raise InputError(
                        f"{ROWS}:{pos}: {', '.join(unknown)}: unknown field; use "
                        f"{', '.join(_LABEL_COLUMNS)}; nothing was imported"
                    )
                cells = [_cell(row.get(c)) for c in _LABEL_COLUMNS]
                line_of[line] = pos
                writer.writerow(cells)
                line += sum(c.count("\n") for c in cells) + 1
        try:
            return importing.import_labels(db, path, reviewer=reviewer, mapping=mapping)
        except InputError as exc:

            def renamed(p: Problem) -> Problem:
                if p.file != str(path):
                    return p
                return dataclasses.replace(p, file=ROWS, line=None if p.line is None else line_of.get(p.line))

            raise InputError(
                [renamed(p) for p in exc.problems],
                more=exc.more,
                closing=None if exc.closing is None else renamed(exc.closing),
            ) from None


__all__ = ["Calibration", "connect"]
