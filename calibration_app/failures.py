"""Storage failures as one sentence.

A storage failure (`calibration.errors.StorageError`: a full disk, a read-only, deleted or
replaced database file) is one sentence on the page, never Streamlit's generic error. app.py
wraps every full run in `storage_failures`; a fragment's rerun does not go through app.py, so
a page's fragments are made with `fragment`, which wraps its body the same way; a callback
runs before either, so write callbacks are wrapped with `write_callback`, whose failure the
next run shows.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec

import streamlit as st

from calibration import store
from calibration.errors import SignedOutError, StorageError
from calibration_app.signin import db_path, signed_out

P = ParamSpec("P")
CALLBACK_FAILURE = "_storage_failure"  # the message of a write callback's StorageError


def storage_sentence(exc: StorageError | str) -> str:
    """The one sentence a page shows for a storage failure (its message has no path)."""
    return f"The database could not do its part: {exc}."


def show_storage_failure(exc: StorageError) -> None:
    """Log the failure with the database's path (the server log only), and show the sentence."""
    print(
        f"calibration: storage failure: {exc!r} (database {store.shown(db_path())})",
        file=sys.stderr,
        flush=True,
    )
    st.error(storage_sentence(exc), icon=":material/error:")


@contextmanager
def storage_failures() -> Iterator[None]:
    """Run a page (or a fragment) body: a StorageError it raises, or one a write callback met
    before it, is shown as the one sentence."""
    try:
        yield
    except StorageError as exc:
        st.session_state.pop(CALLBACK_FAILURE, None)
        show_storage_failure(exc)
    else:
        failed = st.session_state.pop(CALLBACK_FAILURE, None)
        if isinstance(failed, str):
            st.error(storage_sentence(failed), icon=":material/error:")


def write_callback(callback: Callable[P, None]) -> Callable[P, None]:
    """`callback` (a widget's on_click / on_change) with a StorageError kept for the next run
    to show (`storage_failures`) instead of reaching Streamlit as an uncaught exception. A write
    refused because a lead deactivated or renamed the signed-in name (SignedOutError) ends the
    session: the whole app runs again and shows its sentence on the sign-in (with OIDC,
    `restore_sign_in` says it)."""

    @functools.wraps(callback)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            callback(*args, **kwargs)
        except SignedOutError as exc:
            signed_out(str(exc))
            st.rerun()  # the app, not only a fragment: the sign-in replaces the page
        except StorageError as exc:
            print(
                f"calibration: storage failure in a callback: {exc!r} (database {store.shown(db_path())})",
                file=sys.stderr,
                flush=True,
            )
            st.session_state[CALLBACK_FAILURE] = str(exc)

    return run


def fragment(body: Callable[[], None]) -> Callable[[], None]:
    """`st.fragment(body)` whose runs show a storage failure as the one sentence."""

    @functools.wraps(body)
    def run() -> None:
        with storage_failures():
            body()

    return st.fragment(run)
