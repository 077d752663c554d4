"""The reviewer roster: the lead's list of reviewers and its history (reviewers, reviewer_events),
and the provider identities reviewers are bound to (reviewer_identities).

The rules (which names are accepted, what a rename may touch) live in `calibration.roster`;
this module reads and writes the rows, and holds the one rule every write of a reviewer's work
runs inside its own transaction (`check_writer`), beside the rows it reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SignedOutError
from ..text import normalise_name, visible
from .connection import now
from .database import Database
from .reveals import commit_imported_of


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
_REVIEWER_COLUMNS = (
    ("answer_reveals", "reviewer"),
    ("label_events", "reviewer"),
    ("human_labels", "reviewer"),
    ("assignments", "reviewer"),
    ("reassignments", "from_reviewer"),
    ("reassignments", "to_reviewer"),
)


def entries(db: Database) -> list[RosterEntry]:
    """The roster, active reviewers first, each group by name."""
    return [
        RosterEntry(r[0], bool(r[1]), r[2])
        for r in db.execute("SELECT name, active, added_at FROM reviewers ORDER BY active DESC, name_key")
    ]


def entry(db: Database, name_key: str) -> RosterEntry | None:
    row = db.execute("SELECT name, active, added_at FROM reviewers WHERE name_key = ?", [name_key]).fetchone()
    return None if row is None else RosterEntry(row[0], bool(row[1]), row[2])


def renamed_to(db: Database, name: str) -> str | None:
    """The name a lead's renames carried `name` to (following one rename after another), when
    `name`'s comparison key was renamed away; None when it never was. Reads the renames only:
    a handful of rows, and only for a name the roster does not hold as it is spelled."""
    renames: dict[str, str] = {}
    for old, new in db.execute(
        "SELECT name, new_name FROM reviewer_events WHERE kind = 'rename' ORDER BY id"
    ):
        renames[normalise_name(old)] = new
    current, seen = None, set()
    key = normalise_name(name)
    while key in renames and key not in seen:
        seen.add(key)
        current = renames[key]
        key = normalise_name(current)
    return current


def writer_refusal(db: Database, name: str) -> SignedOutError | None:
    """Why `name` may not write a reviewer's work now, or None when it may.

    Refused: a name the roster holds deactivated; a name whose comparison key a lead renamed
    away (the roster holds no entry by it, a rename event carried it off), or renamed to
    another spelling of itself ("anna" to "Anna"). Free: any other name, so an empty roster
    (a single person, a room that keeps none) and names off the roster write as before. One
    read by primary key for a name on the roster as it is spelled."""
    found = entry(db, normalise_name(name))
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
    refusal = writer_refusal(db, name)
    if refusal is not None:
        raise refusal


def events(db: Database) -> list[RosterEvent]:
    """The roster's history, newest first."""
    return [
        RosterEvent(*r)
        for r in db.execute(
            "SELECT at, kind, name, new_name, labels_moved, by FROM reviewer_events ORDER BY id DESC"
        )
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
    db.execute(
        "INSERT INTO reviewer_events (at, kind, name, new_name, labels_moved, by) VALUES (?, ?, ?, ?, ?, ?)",
        [now(), kind, name, new_name, labels_moved, by],
    )


def insert(db: Database, name_key: str, name: str, by: str | None) -> None:
    db.execute(
        "INSERT INTO reviewers (name_key, name, active, added_at) VALUES (?, ?, 1, ?)",
        [name_key, name, now()],
    )
    _event(db, "add", name, by=by)


def set_active(db: Database, name_key: str, active: bool, by: str | None) -> None:
    db.execute("UPDATE reviewers SET active = ? WHERE name_key = ?", [int(active), name_key])
    row = entry(db, name_key)
    if row is not None:
        _event(db, "reactivate" if active else "deactivate", row.name, by=by)


def labels_of(db: Database, reviewer: str) -> int:
    """How many current labels `reviewer` (exact spelling) holds."""
    return int(db.execute("SELECT count(*) FROM human_labels WHERE reviewer = ?", [reviewer]).fetchone()[0])


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
        for table, column in _REVIEWER_COLUMNS:
            # Plain UPDATE: the caller refused a new name that already holds work, so a
            # conflict here is a bug and rolls the whole rename back.
            db.execute(f"UPDATE {table} SET {column} = ? WHERE {column} = ?", [new_name, old])
    # Spellings merged under one name may together complete an answer's imported labels.
    commit_imported_of(db, new_name)
    db.execute("UPDATE sign_ins SET name_key = ?, name = ? WHERE name_key = ?", [new_key, new_name, old_key])
    db.execute(
        "UPDATE reviewer_identities SET name_key = ?, name = ? WHERE name_key = ?",
        [new_key, new_name, old_key],
    )
    db.execute("UPDATE reviewers SET name_key = ?, name = ? WHERE name_key = ?", [new_key, new_name, old_key])
    return moved


# ---------------------------------------------------------------- provider identities


def binding(db: Database, issuer: str, subject: str) -> Binding | None:
    """The reviewer the provider identity (issuer, subject) is bound to, or None."""
    row = db.execute(
        "SELECT name, signed_out_iat FROM reviewer_identities WHERE issuer = ? AND subject = ?",
        [issuer, subject],
    ).fetchone()
    return None if row is None else Binding(row[0], None if row[1] is None else int(row[1]))


def bound_to(db: Database, name_key: str) -> tuple[str, str] | None:
    """The provider identity (issuer, subject) the reviewer `name_key` is bound to, or None."""
    row = db.execute(
        "SELECT issuer, subject FROM reviewer_identities WHERE name_key = ?", [name_key]
    ).fetchone()
    return None if row is None else (row[0], row[1])


def bind(db: Database, issuer: str, subject: str, name_key: str, name: str) -> None:
    """Bind the provider identity to the reviewer `name`. The caller holds the write and has
    checked that neither is bound (the table's keys refuse a second binding either way)."""
    db.execute(
        "INSERT INTO reviewer_identities (issuer, subject, name_key, name, bound_at) VALUES (?, ?, ?, ?, ?)",
        [issuer, subject, name_key, name, now()],
    )


def signed_out(db: Database, issuer: str, subject: str, issued_at: int) -> None:
    """Record that the provider identity's sign-in issued at `issued_at` logged out (the newest
    such time is kept)."""
    db.execute(
        """UPDATE reviewer_identities SET signed_out_iat = ?
           WHERE issuer = ? AND subject = ? AND (signed_out_iat IS NULL OR signed_out_iat < ?)""",
        [issued_at, issuer, subject, issued_at],
    )
