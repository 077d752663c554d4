"""The reviewer roster: the lead's list of reviewers and its history (reviewers, reviewer_events),
and the provider identities reviewers are bound to (reviewer_identities).

The rules (which names are accepted, what a rename may touch) live in `calibration.roster`;
this module reads and writes the rows, and holds the one rule every write of a reviewer's work
runs inside its own transaction (`check_writer`), beside the rows it reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Column, bindparam, func, insert, or_, select, update

from ..errors import SignedOutError
from ..text import normalise_name, visible
from .connection import now
from .core import upsert
from .database import Database
from .reveals import commit_imported_of
from .tables import (
    answer_reveals,
    assignments,
    human_labels,
    label_events,
    reassignments,
    reviewer_events,
    reviewer_identities,
    reviewers,
    sign_ins,
)


@dataclass(frozen=True, slots=True)
class RosterEntry:
    """One reviewer of the roster."""

    name: str
    active: bool
    added_at: str


@dataclass(frozen=True, slots=True)
class Binding:
    """The reviewer a provider identity (issuer, subject) is bound to."""

    name: str
    signed_out_iat: int | None  # the issue time of the newest sign-in that logged out


@dataclass(frozen=True, slots=True)
class RosterEvent:
    """One change of the roster."""

    at: str
    kind: str  # add, rename, deactivate, reactivate
    name: str
    new_name: str | None
    labels_moved: int | None
    by: str | None


# Every column naming a reviewer whose work a rename carries along.
_REVIEWER_COLUMNS: tuple[Column[str], ...] = (
    answer_reveals.c.reviewer,
    label_events.c.reviewer,
    human_labels.c.reviewer,
    assignments.c.reviewer,
    reassignments.c.from_reviewer,
    reassignments.c.to_reviewer,
)
_ENTRY = select(reviewers.c.name, reviewers.c.active, reviewers.c.added_at)
_ENTRY_BY_KEY = _ENTRY.where(reviewers.c.name_key == bindparam("key"))
_ENTRY_HELD = _ENTRY_BY_KEY.with_for_update(read=True)  # every write of a reviewer's work reads it


def entries(db: Database) -> list[RosterEntry]:
    """The roster, active reviewers first, each group by name."""
    return [
        RosterEntry(r[0], bool(r[1]), r[2])
        for r in db.run(_ENTRY.order_by(reviewers.c.active.desc(), reviewers.c.name_key))
    ]


def entry(db: Database, name_key: str, *, held: bool = False) -> RosterEntry | None:
    """The roster entry of `name_key`; `held`: held shared until the write ends (FOR SHARE; in
    the same statement, which SQLite's compiler leaves out, as `Database.lock` does nothing there)."""
    row = db.run(_ENTRY_HELD if held else _ENTRY_BY_KEY, {"key": name_key}).first()
    return None if row is None else RosterEntry(row[0], bool(row[1]), row[2])


def renamed_to(db: Database, name: str) -> str | None:
    """The name a lead's renames carried `name` to (following one rename after another), when
    `name`'s comparison key was renamed away; None when it never was. Reads the renames only:
    a handful of rows, and only for a name the roster does not hold as it is spelled."""
    renames: dict[str, str] = {}
    for old, new in db.run(
        select(reviewer_events.c.name, reviewer_events.c.new_name)
        .where(reviewer_events.c.kind == "rename")
        .order_by(reviewer_events.c.id)
    ):
        renames[normalise_name(old)] = new
    current, seen = None, set()
    key = normalise_name(name)
    while key in renames and key not in seen:
        seen.add(key)
        current = renames[key]
        key = normalise_name(current)
    return current


def writer_refusal(db: Database, name: str, *, held: bool = False) -> SignedOutError | None:
    """Why `name` may not write a reviewer's work now, or None when it may.

    Refused: a name the roster holds deactivated; a name whose comparison key a lead renamed
    away (the roster holds no entry by it, a rename event carried it off), or renamed to
    another spelling of itself ("anna" to "Anna"). Free: any other name, so an empty roster
    (a single person, a room that keeps none) and names off the roster write as before. One
    read by primary key for a name on the roster as it is spelled. `held`: the entry read is
    held until the write ends (`entry`)."""
    found = entry(db, normalise_name(name), held=held)
    if found is not None and not found.active:
        return SignedOutError(
            f"A lead deactivated you: {visible(found.name)!r} is deactivated on the reviewer roster, "
            "and nothing more is recorded under it"
        )
    if found is not None and found.name == name:
        return None
    new = renamed_to(db, name)
    if new is None or (found is not None and new != found.name):
        return None  # another spelling of a roster name, from before the one name rule
    return SignedOutError(
        f"A lead renamed you to {visible(new)!r}: sign in again as {visible(new)!r}; "
        f"nothing more is recorded under {visible(name)!r}",
        renamed_to=new,
    )


def check_writer(db: Database, name: str) -> None:
    """Raise `writer_refusal`'s SignedOutError, if any. Every write of a reviewer's work
    (labels, skips, unclear marks, evidence and notes, commits, reconciles) calls it inside its
    own transaction, so a lead's deactivation or rename committed before it is seen, and one
    committed after it waits for the write."""
    refusal = writer_refusal(db, name, held=True)
    if refusal is not None:
        raise refusal


def hold_for_rename(db: Database, name_key: str) -> None:
    """Before a rename reads whose work is whose: hold the roster entry (a write of its
    reviewer's work holds it shared, `check_writer`, so one under way finishes first and a later
    one sees the rename) and keep every other writer out of the tables of reviewers' work (a
    name off the roster taking its first label under the new name meanwhile would be merged)."""
    db.lock(
        select(reviewers.c.name_key).where(reviewers.c.name_key == name_key).with_for_update(key_share=True)
    )
    db.lock_tables(*sorted({c.table for c in _REVIEWER_COLUMNS} | {reviewers}, key=lambda t: t.name))


def events(db: Database) -> list[RosterEvent]:
    """The roster's history, newest first."""
    e = reviewer_events.c
    return [
        RosterEvent(*r)
        for r in db.run(select(e.at, e.kind, e.name, e.new_name, e.labels_moved, e.by).order_by(e.id.desc()))
    ]


def _event(
    db: Database,
    kind: str,
    name: str,
    *,
    new_name: str | None = None,
    labels_moved: int | None = None,
    by: str | None = None,
) -> None:
    db.run(
        insert(reviewer_events).values(
            at=now(), kind=kind, name=name, new_name=new_name, labels_moved=labels_moved, by=by
        )
    )


def add(db: Database, name_key: str, name: str, by: str | None) -> None:
    db.run(insert(reviewers).values(name_key=name_key, name=name, active=1, added_at=now()))
    _event(db, "add", name, by=by)


def set_active(db: Database, name_key: str, active: bool, by: str | None) -> None:
    db.run(update(reviewers).where(reviewers.c.name_key == name_key).values(active=int(active)))
    row = entry(db, name_key)
    if row is not None:
        _event(db, "reactivate" if active else "deactivate", row.name, by=by)


def labels_of(db: Database, reviewer: str) -> int:
    """How many current labels `reviewer` (exact spelling) holds."""
    return int(db.run(select(func.count()).where(human_labels.c.reviewer == reviewer)).scalar_one())


def rename(
    db: Database, *, old_key: str, old_names: list[str], new_key: str, new_name: str, by: str | None
) -> int:
    """Rename a roster entry and move every row of the spellings `old_names` (labels, their
    history, commits, assignments, reassignments, the sign-in) to `new_name`; returns the
    number of current labels moved. The caller holds the write."""
    moved = sum(labels_of(db, old) for old in old_names)
    # The event first: label_events' append-only trigger lets a reviewer column change only
    # to a name a rename event names.
    _event(
        db, "rename", old_names[0] if old_names else new_name, new_name=new_name, labels_moved=moved, by=by
    )
    for old in old_names:
        for column in _REVIEWER_COLUMNS:
            # Plain UPDATE: the caller refused a new name that already holds work, so a
            # conflict here is a bug and rolls the whole rename back.
            db.run(update(column.table).where(column == old).values({column.name: new_name}))
    # Spellings merged under one name may together complete an answer's imported labels.
    commit_imported_of(db, new_name)
    for table in (sign_ins, reviewer_identities, reviewers):
        db.run(update(table).where(table.c.name_key == old_key).values(name_key=new_key, name=new_name))
    return moved


# ---------------------------------------------------------------- provider identities


def binding(db: Database, issuer: str, subject: str) -> Binding | None:
    """The reviewer the provider identity (issuer, subject) is bound to, or None."""
    i = reviewer_identities.c
    row = db.run(select(i.name, i.signed_out_iat).where(i.issuer == issuer, i.subject == subject)).first()
    return None if row is None else Binding(row[0], None if row[1] is None else int(row[1]))


def bind(db: Database, issuer: str, subject: str, name_key: str, name: str) -> bool:
    """Bind the provider identity to the reviewer `name`; False, writing nothing, when the
    identity or the name is bound already (the table's keys say so, also for a binding another
    transaction is committing at the same moment: the insert waits for it)."""
    new = upsert(db.dialect, reviewer_identities).values(
        issuer=issuer, subject=subject, name_key=name_key, name=name, bound_at=now()
    )
    return db.run(new.on_conflict_do_nothing().returning(reviewer_identities.c.name_key)).first() is not None


def signed_out(db: Database, issuer: str, subject: str, issued_at: int) -> None:
    """Record that the provider identity's sign-in issued at `issued_at` logged out (the newest
    such time is kept)."""
    i = reviewer_identities.c
    db.run(
        update(reviewer_identities)
        .where(
            i.issuer == issuer,
            i.subject == subject,
            or_(i.signed_out_iat.is_(None), i.signed_out_iat < issued_at),
        )
        .values(signed_out_iat=issued_at)
    )
