"""Unfinished imports: the marker that hides a staged import's rows until it is done, and recovery.

A staged import (`answers.Staging`, `labels.LabelStaging`) moves its rows in by many short writes
so that labels are not blocked; between those writes the file is half in. Its row in `imports`
(status 'publishing') says which rows are its own without listing them: answers whose
`imported_at` is its stamp, claim ids in `claim_lo..claim_hi`, the judge runs it created, and the
label events, current labels and commits that carry its id in `import_id`. Readers add `hidden` to their
queries, so none of them sees part of a file; the last write flips the status to 'done'.

A process killed in the middle leaves a 'publishing' row behind whose process is gone;
`recover` (at the start of the next import) deletes those rows again, children first, and
the marker with them, so the database is as it was before that import began.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Table,
    and_,
    delete,
    exists,
    func,
    insert,
    literal,
    literal_column,
    not_,
    or_,
    select,
    true,
    update,
)

from .connection import now, write
from .core import ONE
from .database import Database
from .tables import (
    answer_checks,
    answer_reveals,
    answers,
    chunks,
    claims,
    cycles,
    human_labels,
    imports,
    judge_lab_runs,
    judge_runs,
    judge_verdicts,
    label_events,
)

# Imports this process is publishing right now: a marker with our own pid is a leftover only
# when it is not one of these (a failure that could not even clean up after itself).
_ACTIVE: set[int] = set()


@dataclass(frozen=True, slots=True)
class Unfinished:
    """A 'publishing' import, as its marker row records it."""

    id: int
    source: str | None
    stamp: str
    new_runs: tuple[int, ...]
    claim_lo: int | None
    claim_hi: int | None
    pid: int
    host: str
    process_start: str | None
    started_at: str


_i = imports.c
_PUBLISHING = _i.status == "publishing"
_UNFINISHED = (
    select(
        _i.id,
        _i.source,
        _i.stamp,
        _i.new_runs,
        _i.claim_lo,
        _i.claim_hi,
        _i.pid,
        _i.host,
        _i.process_start,
        _i.started_at,
    )
    .where(_PUBLISHING)
    .order_by(_i.id)
)


def _unfinished(db: Database) -> list[Unfinished]:
    return [
        Unfinished(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4], r[5], r[6], r[7], r[8], r[9])
        for r in db.run(_UNFINISHED)
    ]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _numbers(values: Iterable[int]) -> list[ColumnElement[Any]]:
    return [literal_column(str(int(v))) for v in values]


Col = ColumnElement[Any]


def hidden(
    db: Database,
    *,
    claim: Col | None = None,
    run: Col | None = None,
    answer_stamp: Col | None = None,
    label: Col | None = None,
) -> ColumnElement[bool]:
    """A condition for a WHERE clause that leaves out rows of unfinished imports.

    `claim`: a column holding a claim id; `run`: a column holding a judge run id; `answer_stamp`:
    an answers table's `imported_at` column; `label`: the `import_id` column of a label event,
    current label or commit (`answer_reveals`) row. True when no import is unfinished (nearly
    always), so a reader pays nothing then; else the ranges are written in as literals, which
    keeps the predicate uncorrelated. Call it inside the reader's snapshot (`read_snapshot`), so
    the marker and the rows are read from the same state.
    """
    pending = _unfinished(db)
    if not pending:
        return true()
    parts: list[ColumnElement[bool]] = []
    if claim is not None:
        parts += [
            not_(claim.between(literal_column(str(int(p.claim_lo))), literal_column(str(int(p.claim_hi)))))
            for p in pending
            if p.claim_lo is not None and p.claim_hi is not None
        ]
    runs = sorted({r for p in pending for r in p.new_runs})
    if run is not None and runs:
        parts.append(run.not_in(_numbers(runs)))
    if answer_stamp is not None:
        parts.append(answer_stamp.not_in([literal_column(_quote(p.stamp)) for p in pending]))
    if label is not None:
        parts.append(func.coalesce(label, 0).not_in(_numbers(p.id for p in pending)))
    return and_(true(), *parts)


def is_hidden_claim(db: Database, claim_pk: int) -> bool:
    """Whether claim `claim_pk` belongs to an import that is not finished."""
    found = select(ONE).where(_PUBLISHING, literal(claim_pk).between(_i.claim_lo, _i.claim_hi))
    return db.run(found).first() is not None


# ---------------------------------------------------------------- the importing process


def process_start(pid: int) -> str | None:
    """The kernel's start time of process `pid` (Linux /proc), which tells a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            fields = fh.read().rpartition(")")[2].split()
    except OSError:
        return None
    # Fields after the command name: state is the 1st, starttime the 20th (proc(5) fields 3 and 22).
    if len(fields) < 20 or fields[0] == "Z":  # a zombie has ended; only its parent has not reaped it
        return None
    return fields[19]


def process_running(pid: int, started: str | None) -> bool:
    """Is process `pid` of this host still running? `started`: its `process_start` when it was
    seen, which tells a reused pid apart. True when this system cannot tell."""
    if os.name == "nt":
        return True  # no signal 0 here: not ours to judge
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    start = process_start(pid)
    if started is not None and os.path.exists(f"/proc/{pid}"):
        return start == started  # None: a zombie; another value: the pid was reused
    return True


def _alive(p: Unfinished) -> bool:
    """Is the process that started import `p` still running? True when this host cannot tell."""
    if p.host != socket.gethostname():
        return True  # another machine's process: not ours to judge
    if p.pid == os.getpid():
        return p.id in _ACTIVE
    return process_running(p.pid, p.process_start)


def begin(db: Database, *, stamp: str, new_runs: list[int], source: str | None) -> int:
    """Record a staged import about to publish (inside the write that creates its new runs)."""
    pid = os.getpid()
    marker = insert(imports).values(
        status="publishing",
        source=source,
        stamp=stamp,
        new_runs=json.dumps(sorted(new_runs)),
        pid=pid,
        host=socket.gethostname(),
        process_start=process_start(pid),
        started_at=now(),
    )
    new_id = int(db.run(marker.returning(_i.id)).scalar_one())
    _ACTIVE.add(new_id)
    return new_id


_LAST_CLAIMS = select(
    func.coalesce(select(func.max(claims.c.id)).scalar_subquery(), literal_column("0")),
    func.coalesce(select(func.max(_i.claim_hi)).where(_PUBLISHING).scalar_subquery(), literal_column("0")),
)


def hold_numbering(db: Database) -> None:
    """Keep every other import out of the claim ids until the write ends: the ones that write
    claims with ids they choose (a reservation, a restore) read the largest id and the ranges
    reserved, then write past them (`Database.lock_tables`)."""
    db.lock_tables(imports)


def next_claim_pk(db: Database) -> int:
    """The first claim id free for a new import: past every stored claim and every range an
    unfinished import reserved (it has not moved all of them in yet). Run once per claim a
    restore writes, so straight on the driver (`run_direct`)."""
    ((stored_max, reserved_max),) = db.run_direct(_LAST_CLAIMS, {})
    return max(int(stored_max), int(reserved_max)) + 1


def reserve_claims(db: Database, import_id: int, lo: int | None, hi: int | None) -> None:
    """Record the claim ids import `import_id` adds (before the first of them moves in)."""
    db.run(update(imports).where(_i.id == import_id).values(claim_lo=lo, claim_hi=hi))


def finish(db: Database, import_id: int) -> None:
    """Flip import `import_id` to 'done': its rows become visible (inside its last write)."""
    db.run(update(imports).where(_i.id == import_id).values(status="done", finished_at=now()))


def forget(import_id: int) -> None:
    """This process no longer publishes import `import_id` (done, or taken back)."""
    _ACTIVE.discard(import_id)


class MarkedStaging:
    """What both staged imports share: their TEMP tables and the marker that hides their rows.

    `answers.Staging` and `labels.LabelStaging` stage rows in connection-private tables,
    publish them in short writes, then land the rest and flip the marker in one last write
    (`finishing`); after a failure in this process `take_back` deletes what moved in."""

    def __init__(self, db: Database, temp_tables: Sequence[str]) -> None:
        self.db = db
        self.import_id: int | None = None  # set by the caller once the marker is written
        self._temp_tables = tuple(temp_tables)

    @contextlib.contextmanager
    def finishing(self) -> Iterator[Database]:
        """The last write transaction: the caller's rows, then the marker flipped to 'done', so
        the whole file appears at once; the process forgets the marker once that is committed."""
        with write(self.db):
            yield self.db
            if self.import_id is not None:
                finish(self.db, self.import_id)
        if self.import_id is not None:
            forget(self.import_id)

    def take_back(self) -> None:
        """Delete what this import moved in, and its marker (after a failure in this process)."""
        if self.import_id is not None:
            with write(self.db):
                remove(self.db, self.import_id)

    def drop(self) -> None:
        """Remove the staging tables (also when the import failed)."""
        for table in self._temp_tables:
            self.db.drop_staging(table)


def pause_between_batches() -> None:
    """Sleep CALIBRATION_PUBLISH_PAUSE seconds, if set: lets a test stop or read an import
    between two of its writes (a reader, or a kill, lands exactly there). The one test hook of
    the staged imports."""
    pause = os.environ.get("CALIBRATION_PUBLISH_PAUSE")
    if pause:
        time.sleep(float(pause))


def remove(db: Database, import_id: int) -> dict[str, int]:
    """Delete every row import `import_id` moved in, children first, then its marker (inside a
    write); the rows deleted per table. Verdicts of a run it created on the claims of a later
    import (which found the run by name meanwhile) are that import's and stay, with the run; only
    such a later import's verdicts of the run on claims stored before both would go with it."""
    row = db.run(select(_i.stamp, _i.new_runs, _i.claim_lo, _i.claim_hi).where(_i.id == import_id)).first()
    if row is None:
        return {}
    stamp, runs_j, lo, hi = row
    runs = [int(r) for r in json.loads(runs_j)]
    lo, hi = (lo, hi) if lo is not None and hi is not None else (0, -1)
    mine = select(answers.c.id).where(answers.c.imported_at == stamp)

    def gone(table: Table, *where: ColumnElement[bool]) -> int:
        return int(db.run(delete(table).where(*where)).rowcount)  # type: ignore[attr-defined]

    out: dict[str, int] = {}
    # A label import's rows (m014); the history's delete trigger lets only these go.
    for table in (answer_reveals, human_labels, label_events):
        out[table.name] = gone(table, table.c.import_id == import_id)
    v = judge_verdicts.c
    later = imports.alias("o")
    taken_later = exists(
        select(ONE).where(later.c.id > import_id, v.claim_pk.between(later.c.claim_lo, later.c.claim_hi))
    )
    out["judge_verdicts"] = gone(
        judge_verdicts, or_(v.claim_pk.between(lo, hi), and_(v.run_id.in_(runs), ~taken_later))
    )
    out["claims"] = gone(claims, claims.c.id.between(lo, hi))
    out["chunks"] = gone(chunks, chunks.c.answer_id.in_(mine))
    out["answer_checks"] = gone(answer_checks, answer_checks.c.answer_id.in_(mine))
    out["answers"] = gone(answers, answers.c.imported_at == stamp)
    r = judge_runs.c
    out["judge_runs"] = gone(
        judge_runs,
        r.id.in_(runs),
        ~exists(select(ONE).where(v.run_id == r.id)),
        ~exists(select(ONE).where(cycles.c.judge_run_id == r.id)),
        ~exists(select(ONE).where(judge_lab_runs.c.run_id == r.id)),
    )
    db.run(delete(imports).where(_i.id == import_id))
    forget(import_id)
    return out


def leftovers(db: Database) -> list[Unfinished]:
    """The unfinished imports whose process is gone (killed in the middle of publishing)."""
    return [p for p in _unfinished(db) if not _alive(p)]


def describe_removal(p: Unfinished, removed: dict[str, int]) -> str:
    """One line for the user about a leftover import taken out of the database."""
    what = ", ".join(f"{n} {table.replace('_', ' ')}" for table, n in removed.items() if n) or "no rows"
    src = f" of {p.source}" if p.source else ""
    return (
        f"an import{src} started at {p.started_at} did not finish (its process {p.pid} is gone); "
        f"what it had moved in was removed ({what}): import that file again"
    )


def recover(db: Database) -> list[str]:
    """Remove the leftovers of every import whose process is gone; one line per import removed."""
    out: list[str] = []
    for p in leftovers(db):
        with write(db):
            # Another process may have recovered it between the read and this write.
            db.lock(select(_i.id).where(_i.id == p.id).with_for_update(key_share=True))
            if db.run(select(ONE).where(_i.id == p.id, _PUBLISHING)).first() is None:
                continue
            removed = remove(db, p.id)
        out.append(describe_removal(p, removed))
    return out
