"""Storage failures as one sentence.

A storage failure (`calibration.errors.StorageError`: a full disk, a read-only, deleted or
replaced database file) is one sentence on the page, never Streamlit's generic error. app.py
wraps every full run in `storage_failures`; a fragment's rerun does not go through app.py, so
a page's fragments are made with `turns.fragment`, which wraps its body the same way; a callback
runs before either, so write callbacks are wrapped with `turns.write_callback`, whose failure
the next run shows.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from calibration import store
from calibration.errors import (
    StorageError,
)
from calibration_app.signin import db_path

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
