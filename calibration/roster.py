"""The reviewer roster: the list of reviewers a lead keeps, for typed-name sign-in.

Rules, each checked here and nowhere else:

* **Names** follow the one name rule (:func:`calibration.roles.accept_name`): compared by
  :func:`calibration.text.normalise_name`; a near-duplicate ("Anna." beside "Anna"), a
  look-alike or the same name in another alphabet of a known reviewer is refused with that
  reviewer's name.
* **Add** puts a name on the roster (a known reviewer's stored spelling is kept); **rename**
  moves everything of the reviewer (labels and their history, commits, assignments,
  reassignments, the sign-in) to the new name, refused when the new name already belongs to
  someone with work; **deactivate** keeps the labels and takes the name off every offer and
  off sign-in. Each change is recorded (`reviewer_events`, :func:`history`).
* **Cycles** pick their reviewers from the roster once it holds anyone
  (:func:`check_on_roster`): an unknown or deactivated name is refused, with the closest
  active name, before anything is created. An empty roster (a single person, or a room that
  keeps none) leaves the names free, as before. A deactivated reviewer cannot sign in
  (:func:`calibration.roles.sign_in`).
* **Writes** of a reviewer's work check the name at the write, in the write's transaction
  (:func:`calibration.store.roster.check_writer`): a deactivated name, or one a rename carried
  away, writes nothing (SignedOutError, one sentence: deactivated, or "sign in again as" the
  new name), whether the page or the card's route writes it. Nor does it sign in again, by
  name or by its reload link. Adding the old name to the roster again frees it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

from . import store
from .errors import ConflictError, NotFoundError
from .roles import accept_name, known_reviewers
from .store import Database, RosterEntry, RosterEvent
from .text import loose_key, normalise_name, visible


def entries(db: Database) -> list[RosterEntry]:
    """The roster, active reviewers first."""
    return store.roster.entries(db)


def active_names(db: Database) -> list[str]:
    """The names of the roster's active reviewers, in roster order."""
    return [e.name for e in store.roster.entries(db) if e.active]


def history(db: Database) -> list[RosterEvent]:
    """Every change of the roster, newest first."""
    return store.roster.events(db)


def _entry_of(db: Database, name: str) -> RosterEntry:
    found = store.roster.entry(db, normalise_name(name))
    if found is None:
        raise NotFoundError(f"reviewer: {visible(name)!r} is not on the roster{_closest_hint(name, db)}")
    return found


def closest(name: str, names: Iterable[str]) -> str | None:
    """The name of `names` most like `name` (by :func:`calibration.text.loose_key`), or None
    when none is close (difflib's ratio below 0.6)."""
    by_key = {loose_key(n): n for n in names}
    match = difflib.get_close_matches(loose_key(name), list(by_key), n=1)
    return by_key[match[0]] if match else None


def _closest_hint(name: str, db: Database) -> str:
    near = closest(name, active_names(db))
    return f"; did you mean {visible(near)!r}?" if near else ""


def add(db: Database, typed: str, *, by: str | None = None) -> str:
    """Put a reviewer on the roster; returns the stored spelling. InputError for a name the
    name rule refuses, ConflictError when they are on it already."""
    with store.write(db):
        name = accept_name(typed, known_reviewers(db))
        key = normalise_name(name)
        found = store.roster.entry(db, key)
        if found is not None:
            state = "" if found.active else " (deactivated: reactivate them instead)"
            raise ConflictError(f"reviewer: {visible(found.name)!r} is on the roster already{state}")
        store.roster.add(db, key, name, by)
    return name


def set_active(db: Database, name: str, active: bool, *, by: str | None = None) -> str:
    """Deactivate (or reactivate) a reviewer of the roster; their labels stay. Returns the name."""
    with store.write(db):
        found = _entry_of(db, name)
        if found.active != active:
            store.roster.set_active(db, normalise_name(found.name), active, by)
    return found.name


def deactivate(db: Database, name: str, *, by: str | None = None) -> str:
    """:func:`set_active` to False."""
    return set_active(db, name, False, by=by)


def rename(db: Database, old: str, typed_new: str, *, by: str | None = None) -> tuple[str, int]:
    """Rename a reviewer of the roster, carrying their labels (and all their other work) to the
    new name; returns (new name, labels moved). The new name passes the name rule against every
    other known name; one that already holds work of someone else is refused (no merge)."""
    with store.write(db):
        store.roster.hold_for_rename(db, normalise_name(old))
        found = _entry_of(db, old)
        old_key = normalise_name(found.name)
        known = known_reviewers(db)
        others = [k for k in known if normalise_name(k) != old_key]
        new_name = accept_name(typed_new, others, field="new name")
        new_key = normalise_name(new_name)
        if new_key != old_key and any(normalise_name(k) == new_key for k in others):
            raise ConflictError(
                f"new name: {visible(new_name)!r} is already a reviewer here; "
                "renaming onto them would merge two people's labels"
            )
        if new_name == found.name:
            return new_name, 0
        spellings = [k for k in known if normalise_name(k) == old_key]
        moved = store.roster.rename(
            db,
            old_key=old_key,
            old_names=spellings or [found.name],
            new_key=new_key,
            new_name=new_name,
            by=by,
        )
    return new_name, moved


def check_on_roster(db: Database, names: Sequence[str], *, field: str = "reviewers") -> list[str]:
    """The problems of cycle reviewer names against the roster: each name not an active roster
    reviewer, with the closest active name. None while the roster is empty."""
    rows = store.roster.entries(db)
    if not rows:
        return []
    active = {normalise_name(e.name) for e in rows if e.active}
    inactive = {normalise_name(e.name): e.name for e in rows if not e.active}
    problems = []
    for name in names:
        key = normalise_name(name)
        if key in active:
            continue
        if key in inactive:
            problems.append(f"{field}: {visible(inactive[key])!r} is deactivated on the roster")
        else:
            problems.append(
                f"{field}: {visible(name)!r} is not on the reviewer roster"
                f"{_closest_hint(name, db)} (a lead adds reviewers on the Cycles page "
                "or with `calibration reviewer add`)"
            )
    return problems


__all__ = [
    "RosterEntry",
    "RosterEvent",
    "active_names",
    "add",
    "check_on_roster",
    "closest",
    "deactivate",
    "entries",
    "history",
    "rename",
    "set_active",
]
