"""A backup of the whole database, and the restore that puts it back.

Shape (``judge-calibration-backup``, format version 1): a JSONL file whose first line is the
header and every other line one row of one table::

    {"format": "judge-calibration-backup", "format_version": 1, "tool_version": "0.2.0",
     "created_at": "...", "migrations": ["m001_create_answers", ...], "revision": "0001",
     "tables": {"answers": 105, "claims": 109, ...}, "left_out": ["..."]}
    {"table": "answers", "row": {"id": "Q1", "question": "...", ...}}

Every table of the schema is in it (the list is read from the database itself, so a table a
later release adds is in its backups without a change here), each row with all its columns
under their names and its ids as stored, tables in foreign-key order. ``migrations`` and
``revision`` (the schema revision; absent from a release's before revisions) name the schema
the rows were written under; ``tables`` how many rows of each follow, so a cut-off file
is refused rather than restored in part. Left out: the sign-in secret (and any setting listed
in `store.settings.SECRET_SETTINGS`) and the record of migrations itself. An API key is never
stored in the database, so none can be in a backup.

Restore (`restore`) goes into an empty database only and is all or nothing: the rows are
loaded and checked in a scratch database first (every problem with its file and line), then
upgraded there by the migrations this release adds to the backup's schema, and only then
copied into the target in one transaction. It never merges: a database holding anything is
refused (combining two databases is the JSONL export's `import` / `import-labels`). Answers
that have no answer checks (a backup from before checks existed) get them computed. Every cell
is checked as its readers will use it (`backup_cells`: types, JSON shapes, finished imports
only), so a file `stats` or `export` could not read is refused, naming its line and column.
A secret setting in the file (planted, or from an edited file) is never restored: the app
makes its own. Into SQLite the scratch database is attached and copied in SQL; into PostgreSQL
its rows are copied as `migrate-db` copies them (`copy_store`'s rows). The scratch database
sits in the temp folder under a name carrying the restoring process's id: the next restore
removes the one a killed restore left (`sweep_scratch`).

The per-claim JSONL export of earlier releases (`calibration.export`, ``judge-calibration-export``)
restores with the same command, into an empty database, in one transaction: its answers,
claims, judge verdicts, label history and adjudications — all it ever held — and checks for
every answer.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel, ConfigDict, ValidationError

from . import importing, store
from .backup_cells import cell_problem
from .errors import ConflictError, InputError, Option, Problem
from .export import EXPORT_FORMAT, atomic_write, json_line
from .fmt import plural
from .reading import BadRecord, Problems, field_errors, iter_json_records
from .store import Database

BACKUP_FORMAT = "judge-calibration-backup"
BACKUP_VERSION = 1
LEFT_OUT = (
    "the sign-in secret (a new one is made where the backup is restored)",
    "the record of when each migration ran (the restored database keeps its own)",
)
_SCRATCH = "backup_scratch"  # the scratch database's name while attached to the target


class BackupHeader(BaseModel):
    """The first line of a backup: what it holds and what wrote it."""

    model_config = ConfigDict(extra="ignore")

    format: str
    format_version: int
    tool_version: str
    created_at: str
    migrations: list[str]
    # The schema revision the rows were written under; none in a backup of a release before
    # revisions (its numbered migrations name its schema).
    revision: str | None = None
    tables: dict[str, int]
    left_out: list[str] = []


@dataclass(frozen=True, slots=True)
class BackupReport:
    path: Path
    tables: dict[str, int]  # rows written per table

    def lines(self) -> list[str]:
        total = sum(self.tables.values())
        return [
            f"{self.path}: backup of {plural(len(self.tables), 'table')}, {plural(total, 'row')}",
            "left out: " + "; ".join(LEFT_OUT),
        ]


@dataclass
class RestoreSummary:
    path: Path
    kind: str  # "backup" or "export" (the per-claim JSONL export)
    tables: dict[str, int] = field(default_factory=dict)  # rows restored per table
    upgraded: list[str] = field(default_factory=list)  # migrations applied to the backup's rows
    checks_added: int = 0  # answers whose checks were missing and were computed
    detail: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        total = sum(self.tables.values())
        out = [
            f"{self.path}: restored ({'backup' if self.kind == 'backup' else 'JSONL export'}), "
            f"{plural(total, 'row')}"
        ]
        out += [f"  {name}: {n}" for name, n in self.tables.items() if n]
        out += [f"  {line}" for line in self.detail]
        if self.upgraded:
            out.append(f"  upgraded from an earlier schema: {', '.join(self.upgraded)}")
        if self.checks_added:
            out.append(f"  answer checks computed for {plural(self.checks_added, 'answer')} that had none")
        return out


# ---------------------------------------------------------------- backup


def _write(
    db: Database, fh: TextIO, order: list[store.backup.Table], counts: dict[str, int]
) -> dict[str, int]:
    from . import __version__

    header = BackupHeader(
        format=BACKUP_FORMAT,
        format_version=BACKUP_VERSION,
        tool_version=__version__,
        created_at=store.now(),
        migrations=store.backup.applied_migrations(db),
        revision=store.backup.revision(db),
        tables=counts,
        left_out=list(LEFT_OUT),
    )
    fh.write(json_line(header.model_dump()) + "\n")
    for t in order:
        for row in store.backup.rows(db, t):
            fh.write(json_line({"table": t.name, "row": dict(zip(t.columns, row, strict=True))}) + "\n")
    return counts


def _refuse_while_importing(db: Database, act: str, result: str) -> None:
    """ConflictError while an import is moving its rows in: they are half there, hidden from
    every reader, and deleted by the next import if its process is gone."""
    if store.backup.publishing_imports(db):
        raise ConflictError(
            f"an import is moving its rows in right now; {act} when it has finished, so "
            f"{result} holds whole files only"
        )


def write_backup(db: Database, out: str | Path) -> BackupReport:
    """Write every table of the database to `out` (atomically), from one read snapshot."""
    out = Path(out)
    with store.read_snapshot(db):
        _refuse_while_importing(db, "back up", "the backup")
        order = store.backup.tables(db)
        counts = {t.name: store.backup.row_count(db, t) for t in order}
        atomic_write(out, lambda fh: _write(db, fh, order, counts))
    return BackupReport(out, counts)


# ---------------------------------------------------------------- restore


def _first_record(path: Path, encoding: str | None) -> tuple[int, Any]:
    for line, value in iter_json_records(path, encoding):
        if isinstance(value, BadRecord):
            raise InputError(f"{path}:{line}: {value.message}; nothing was restored")
        return line, value
    raise InputError(f"{path}: the file is empty; nothing was restored")


def _held(db: Database) -> str | None:
    """What the database holds, in a few words (None when it is empty but for its secrets)."""
    held = [(t.name, n) for t in store.backup.tables(db) if (n := store.backup.row_count(db, t))]
    if not held:
        return None
    return ", ".join(f"{name} {n}" for name, n in held[:4]) + (", ..." if len(held) > 4 else "")


def _refuse_unless_empty(db: Database) -> None:
    store.backup.hold_all(db)  # inside the restore's write: nothing is written after the check
    held = _held(db)
    if held:
        raise ConflictError(
            (
                f"the database is not empty ({held}); a restore goes into an empty "
                "database only and never merges: restore into a new file (",
                Option.DB,
                ")",
            )
        )


def restore(db: Database, path: str | Path, *, encoding: str | None = None) -> RestoreSummary:
    """Restore a backup (or a per-claim JSONL export) into the empty database `db`, all or nothing."""
    path = Path(path)
    line, first = _first_record(path, encoding)
    kind = first.get("format") if isinstance(first, dict) else None
    if kind == EXPORT_FORMAT:
        return _restore_export(db, path, encoding)
    if kind != BACKUP_FORMAT:
        raise InputError(
            f"{path}:{line}: not a {BACKUP_FORMAT} file (its first line is the header) nor "
            f"a {EXPORT_FORMAT} file; nothing was restored"
        )
    try:
        header = BackupHeader.model_validate(first)
    except ValidationError as exc:
        raise InputError(
            [Problem(m, str(path), line, f"header.{f}" if f else "header") for f, m in field_errors(exc)],
            closing=Problem("nothing was restored", str(path)),
        ) from None
    return _restore_backup(db, path, encoding, header)


def _restore_export(db: Database, path: Path, encoding: str | None) -> RestoreSummary:
    summary = RestoreSummary(path, "export")
    with store.write(db):
        _refuse_unless_empty(db)
        answers = importing.restore_answers(db, path, encoding=encoding)
        labels = importing.restore_labels(db, path, encoding=encoding)
        summary.checks_added = importing.backfill_checks(db)
        db.resume_numbering(("claims",))  # the claims came with their ids
    summary.tables = {
        "answers": answers.answers_new,
        "claims": answers.claims_new,
        "judge_verdicts": answers.verdicts_new,
        "label_events": labels.events_new,
        "human_labels": labels.new,
        "adjudications": labels.adjudications_new,
    }
    summary.detail = [
        "not in a JSONL export, so not restored: cycles and assignments, the tuning/holdout "
        "split and its seal, guidelines, reference answers, reassignments, thresholds, "
        "judge-lab runs"
    ]
    return summary


def _schema_problem(header: BackupHeader) -> str | None:
    known = store.backup.known_migrations()
    if header.format_version > BACKUP_VERSION:
        return (
            f"format_version {header.format_version} was written by a newer release "
            f"(tool {header.tool_version}); this one reads up to {BACKUP_VERSION}"
        )
    unknown = [m for m in header.migrations if m not in known]
    if unknown:
        return (
            f"migrations: {', '.join(unknown)} unknown to this release; the backup was written by "
            f"a newer one (tool {header.tool_version}): restore it with that release"
        )
    if header.migrations != known[: len(header.migrations)]:
        return "migrations: not a schema any release made (out of order or with gaps)"
    if header.revision is not None and header.revision not in store.backup.known_revisions():
        return (
            f"revision: {header.revision} is unknown to this release; the backup was written by a "
            f"newer one (tool {header.tool_version}): restore it with that release"
        )
    if header.revision is not None and header.migrations != known:
        return "revision: a schema revision follows every numbered migration, and the header lacks some"
    return None


def _line_of(pairs: array[int] | None, rowid: int) -> int | None:
    if pairs is not None:
        for i in range(0, len(pairs), 2):
            if pairs[i] == rowid:
                return pairs[i + 1]
    return None


def _load(
    scratch: Database, path: Path, encoding: str | None, header: BackupHeader, problems: Problems
) -> None:
    by_name = {t.name: t for t in store.backup.tables(scratch)}
    types = {name: store.backup.column_types(scratch, t) for name, t in by_name.items()}
    unknown = sorted(set(header.tables) - set(by_name))
    if unknown:
        problems.add(1, f"header.tables: {', '.join(unknown)} not in the schema the header names")
    seen: Counter[str] = Counter()
    # (rowid, line) pairs per table, flat: 16 bytes a row, looked up only to place a problem.
    placed: dict[str, array[int]] = {}
    records: Iterator[tuple[int, Any]] = iter_json_records(path, encoding)
    next(records)  # the header, read already
    for line, value in records:
        if isinstance(value, BadRecord):
            problems.add(line, value.message)
            continue
        if not isinstance(value, dict) or not isinstance(value.get("row"), dict):
            problems.add(line, 'not a row of a backup: {"table": NAME, "row": {COLUMN: VALUE, ...}}')
            continue
        table = by_name.get(value.get("table"))  # type: ignore[arg-type]
        if table is None:
            problems.add(line, f"table: {value.get('table')!r} is not a table of the backup's schema")
            continue
        row = value["row"]
        problem = cell_problem(table.name, row, types[table.name])
        if problem:
            problems.add(line, problem)
            continue
        try:
            rowid = store.backup.insert_row(scratch, table, row)
        except (ConflictError, OverflowError) as exc:  # a constraint, or an integer too big
            why = (
                "refers to a row that is not in the backup before it"
                if "FOREIGN KEY" in str(exc)
                else str(exc)
            )
            problems.add(line, f"{table.name}: {why}")
            continue
        seen[table.name] += 1
        placed.setdefault(table.name, array("q")).extend((rowid, line))
    for name in sorted(set(header.tables) | set(seen)):
        if name in by_name and seen[name] != header.tables.get(name, 0):
            problems.add(
                None,
                f"{name}: {seen[name]} rows in the file, the header says "
                f"{header.tables.get(name, 0)}: the backup is incomplete or was edited",
            )
    for child, rowid, parent in store.backup.foreign_key_problems(scratch):
        problems.add(
            _line_of(placed.get(child), rowid),
            f"{child}: refers to a row of {parent} that is not in the backup",
        )


# A restore's scratch folder in the temp folder: its name carries the restoring process's id and
# start time, so that the next restore removes the folder of one that was killed (SIGKILL, a
# power cut) before it could clean up after itself, and never the folder of one still running.
_SCRATCH_PREFIX = "calibration-restore-"
_SCRATCH_NAME = re.compile(rf"^{_SCRATCH_PREFIX}(\d+)\.(\d*)-")


def _scratch_prefix() -> str:
    pid = os.getpid()
    return f"{_SCRATCH_PREFIX}{pid}.{store.imports.process_start(pid) or ''}-"


def sweep_scratch(folder: Path | None = None) -> None:
    """Remove the scratch folders that restores killed midway left in the temp folder."""
    folder = Path(tempfile.gettempdir()) if folder is None else folder
    for entry in folder.glob(f"{_SCRATCH_PREFIX}*"):
        m = _SCRATCH_NAME.match(entry.name)
        if m is None or not entry.is_dir():
            continue
        pid, started = int(m.group(1)), m.group(2) or None
        if pid != os.getpid() and not store.imports.process_running(pid, started):
            shutil.rmtree(entry, ignore_errors=True)


def _prepare_scratch(
    scratch: Database, path: Path, encoding: str | None, header: BackupHeader, summary: RestoreSummary
) -> None:
    """Load the backup into the empty scratch database, check it, upgrade it to this release's
    schema and compute missing answer checks; InputError naming every problem."""
    problems = Problems(path)
    with store.write(scratch):
        store.backup.migrate(scratch, header.migrations, header.revision)
    with store.write(scratch), store.backup.triggers_set_aside(scratch):
        _load(scratch, path, encoding, header, problems)
        problems.raise_if_any()
        if store.backup.forget_secrets(scratch):  # planted, or from an edited file: never restored
            summary.detail.append(f"left out: {LEFT_OUT[0]}")
    with store.write(scratch):
        summary.upgraded = store.backup.migrate(scratch)
    summary.checks_added = importing.backfill_checks(scratch)


def _copy_in(db: Database, scratch_path: Path) -> dict[str, int]:
    """Copy the prepared scratch database into the empty `db` in one transaction; rows per table.

    SQLite attaches it and copies table by table in SQL; PostgreSQL takes its rows as
    `migrate-db` copies them."""
    if db.dialect != "sqlite":
        scratch = store.connect(scratch_path, migrate=False)
        try:
            with store.read_snapshot(scratch), store.write(db):
                _refuse_unless_empty(db)
                tables = _copy_rows(scratch, db, store.backup.tables(scratch))
        finally:
            scratch.close()
        db.analyze()
        return tables
    store.backup.attach(db, str(scratch_path), _SCRATCH)
    try:
        with store.write(db):
            _refuse_unless_empty(db)
            with store.backup.triggers_set_aside(db):
                return store.backup.copy_attached(db, _SCRATCH, store.backup.tables(db))
    finally:
        store.backup.detach(db, _SCRATCH)


def _restore_backup(db: Database, path: Path, encoding: str | None, header: BackupHeader) -> RestoreSummary:
    summary = RestoreSummary(path, "backup")
    problem = _schema_problem(header)
    if problem:
        raise InputError(f"{path}:1: {problem}; nothing was restored")
    with store.read_snapshot(db):
        _refuse_unless_empty(db)  # before the work of loading; checked again in the write
    sweep_scratch()
    with tempfile.TemporaryDirectory(prefix=_scratch_prefix()) as tmp:
        scratch_path = Path(tmp) / "scratch.db"
        scratch = store.connect(scratch_path, migrate=False)
        try:
            _prepare_scratch(scratch, path, encoding, header, summary)
        finally:
            scratch.close()
        summary.tables = _copy_in(db, scratch_path)
    return summary


__all__ = [
    "BACKUP_FORMAT",
    "BACKUP_VERSION",
    "LEFT_OUT",
    "BackupHeader",
    "BackupReport",
    "RestoreSummary",
    "restore",
    "write_backup",
]


# ---------------------------------------------------------------- one store into another


@dataclass
class CopySummary:
    """What `copy_store` wrote: rows per table."""

    tables: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        total = sum(self.tables.values())
        return [
            f"copied {plural(total, 'row')} in {plural(len(self.tables), 'table')}",
            *(f"  {name}: {n}" for name, n in self.tables.items() if n),
        ]


COPY_BATCH = 5000


def _nul_problem(table: store.backup.Table, row: tuple[Any, ...]) -> str | None:
    """Where `row` holds text with a NUL character (SQLite keeps one, PostgreSQL cannot)."""
    for column, value in zip(table.columns, row, strict=True):
        if isinstance(value, str) and "\x00" in value:
            return (
                f"{table.name}, the row with {table.columns[0]} {row[0]!r}, column {column}: the text "
                "holds a NUL character, which PostgreSQL cannot store"
            )
    return None


def _copy_rows(src: Database, dst: Database, order: list[store.backup.Table]) -> dict[str, int]:
    """Copy every row of the tables `order` from `src` into `dst` (inside the caller's write on
    `dst`); rows per table. InputError, nothing written, for a text PostgreSQL cannot store."""
    check_nul = dst.dialect == "postgresql"
    counts: dict[str, int] = {}
    for table in order:
        n = 0
        batch: list[tuple[Any, ...]] = []
        for row in store.backup.all_rows(src, table):
            if check_nul and (problem := _nul_problem(table, row)):
                raise InputError(f"{problem}; nothing was copied")
            batch.append(row)
            if len(batch) >= COPY_BATCH:
                store.backup.insert_rows(dst, table, batch)
                n, batch = n + len(batch), []
        if batch:
            store.backup.insert_rows(dst, table, batch)
            n += len(batch)
        counts[table.name] = n
    dst.resume_numbering(counts)  # the rows came with their ids
    return counts


def copy_store(src: Database, dst: Database) -> CopySummary:
    """Copy every row of `src` into the empty store `dst` as it is (ids, history, secrets), in one
    write transaction on `dst`: SQLite into PostgreSQL or back, losslessly. Both must be at the
    same migration; `dst` must be empty (ConflictError otherwise), and `src` must have no import
    moving its rows in (ConflictError: its rows are half there); nothing is written then."""
    if store.backup.applied_migrations(src) != store.backup.applied_migrations(dst) or (
        store.backup.revision(src) != store.backup.revision(dst)
    ):
        raise ConflictError(
            "the two databases are at different migrations; open both with this "
            "release first (every command migrates the database it opens)"
        )
    order = store.backup.tables(src)
    known = {t.name: t for t in store.backup.tables(dst)}
    missing = [t.name for t in order if t.name not in known or known[t.name].columns != t.columns]
    if missing:
        raise ConflictError(f"the target's schema differs from the source's ({', '.join(missing)})")
    with store.read_snapshot(src), store.write(dst):
        _refuse_while_importing(src, "copy it", "the copy")
        held = _held(dst)
        if held:
            raise ConflictError(
                f"the target database is not empty ({held}); a copy goes into an empty database only "
                "and never merges: name a new file or an empty PostgreSQL database"
            )
        store.backup.forget_secrets(dst)  # the source's own secrets come across instead
        summary = CopySummary(_copy_rows(src, dst, order))
    dst.analyze()
    return summary
