"""Settings kept in the database, and the flag's thresholds among them."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from sqlalchemy import select

from ..errors import ConflictError, InputError
from .connection import write
from .core import upsert
from .database import Database
from .tables import settings

if TYPE_CHECKING:
    from ..flag import Thresholds


# The app's sign-in secret (generated when neither the environment nor the secrets set one).
SIGNIN_SECRET_SETTING = "ui.signin_secret"
# Settings that are keys, never copied out of the database (a backup leaves them out).
SECRET_SETTINGS = frozenset({SIGNIN_SECRET_SETTING})

THRESHOLD_SETTINGS: dict[str, str] = {
    "agreement_target": "stats.agreement_target",
    "kappa_floor": "stats.kappa_floor",
    "alpha": "stats.alpha",
    "alt_epsilon": "stats.alt_epsilon",
}


def get_setting(db: Database, key: str) -> str | None:
    value = db.run(select(settings.c.value).where(settings.c.key == key)).scalar()
    return None if value is None else str(value)


def set_setting(db: Database, key: str, value: str) -> None:
    with write(db):
        stmt = upsert(db.dialect, settings).values(key=key, value=value)
        db.run(
            stmt.on_conflict_do_update(index_elements=[settings.c.key], set_={"value": stmt.excluded.value})
        )


def setting_or_new(db: Database, key: str, new: str) -> str:
    """The stored value of `key`; `new` stored first when there is none. The first writer's
    value is the one kept, also against another writing it at the same moment (the key decides:
    the insert waits for that one), so every app server reads the same value."""
    with write(db):
        db.run(upsert(db.dialect, settings).values(key=key, value=new).on_conflict_do_nothing())
        found = get_setting(db, key)
    assert found is not None
    return found


def load_thresholds(db: Database) -> Thresholds:
    """The flag's thresholds: stored values where set, the defaults elsewhere."""
    from ..flag import Thresholds

    values: dict[str, float] = {}
    for name, key in THRESHOLD_SETTINGS.items():
        raw = get_setting(db, key)
        if raw is None:
            continue
        try:
            values[name] = float(raw)
        except ValueError:
            raise ConflictError(f"setting {key} holds {raw!r}, not a number") from None
    try:
        return Thresholds(**values)
    except ValueError as exc:
        raise ConflictError(f"stored thresholds are invalid: {exc}") from None


def save_thresholds(db: Database, **changes: float) -> Thresholds:
    """Change some thresholds (agreement_target, kappa_floor, alpha, alt_epsilon); returns all of them."""
    unknown = set(changes) - set(THRESHOLD_SETTINGS)
    if unknown:
        raise InputError(f"unknown threshold(s): {', '.join(sorted(unknown))}")
    with write(db):
        # Read, checked together, written: another lead's change of another threshold waits.
        db.lock_tables(settings)
        try:
            new = replace(load_thresholds(db), **changes)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        for name, key in THRESHOLD_SETTINGS.items():
            set_setting(db, key, repr(getattr(new, name)))
    return new
