"""The review page's runs, callbacks and fragments, one at a time per server process (`turn`)."""

from __future__ import annotations

import functools
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import ParamSpec, overload

import streamlit as st

from calibration import store
from calibration.errors import (
    SignedOutError,
    StorageError,
)
from calibration_app.failures import CALLBACK_FAILURE, storage_failures
from calibration_app.signin import db_path, signed_out

P = ParamSpec("P")


class Turns:
    """Turns taken one thread at a time, in the order asked for (first come, first served),
    re-entrant on the thread that holds the turn.

    Why first come, first served: a plain lock lets whichever waiting thread the system wakes
    go next, so under a queue of page runs some waited many times as long as others."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holder: int | None = None  # the thread holding the turn
        self._depth = 0
        self._queue: deque[tuple[int, threading.Event]] = deque()

    def take(self) -> None:
        me = threading.get_ident()
        with self._lock:
            if self._holder == me:
                self._depth += 1
                return
            if self._holder is None and not self._queue:
                self._holder, self._depth = me, 1
                return
            called = threading.Event()
            self._queue.append((me, called))
        try:
            called.wait()  # `give` makes this thread the holder before it sets the event
        except BaseException:
            with self._lock:
                if (me, called) in self._queue:
                    self._queue.remove((me, called))
                    raise
            self.give()  # the turn came with the interruption: pass it on
            raise

    def give(self) -> None:
        with self._lock:
            if self._holder != threading.get_ident():
                raise RuntimeError("a turn given back by a thread that does not hold it")
            self._depth -= 1
            if self._depth:
                return
            self._holder = None
            if self._queue:
                nxt, called = self._queue.popleft()
                self._holder, self._depth = nxt, 1
                called.set()

    def waiting(self) -> int:
        """How many threads wait for their turn."""
        with self._lock:
            return len(self._queue)

    @contextmanager
    def held(self) -> Iterator[None]:
        self.take()
        try:
            yield
        finally:
            self.give()


# The review page's runs take turns: one at a time in this server process (`turn`).
_TURNS = Turns()


def turn() -> AbstractContextManager[None]:
    """Wait for this process's review-page turn, then hold it (re-entrant: a fragment inside a
    fragment, a callback's write and the run after it, on the run's one thread).

    Why: Python runs one thread at a time, so twenty page runs at once finish no sooner than
    twenty in a row, but a thread that wants the interpreter while they all run waits behind
    all of them for each of its turns. The review card's verdict route (card_route.py), which
    does not take this turn, wants the interpreter a dozen times per verdict, so a wave of
    commits made a verdict wait seconds; with the runs in turns it waits for one run's slice
    (bench_load.py: p95 at 240 reviewers 204 ms, against 805-1,208 ms with runs at once). The
    runs that wait hold no interpreter time meanwhile. Only the review page takes turns: its
    runs are short (milliseconds); no page that may run for long (an import, a judge run)
    does."""
    return _TURNS.held()


def write_callback(callback: Callable[P, None]) -> Callable[P, None]:
    """`callback` (a widget's on_click / on_change, or the card's report, on the review page)
    in the page's `turn`, with a StorageError kept for the next run to show (`storage_failures`)
    instead of reaching Streamlit as an uncaught exception. A write refused because a lead
    deactivated or renamed the signed-in name (SignedOutError) ends the session: the whole app
    runs again and shows its sentence on the sign-in (with OIDC, `restore_sign_in` says it)."""

    @functools.wraps(callback)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            with turn():
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


@overload
def fragment(body: Callable[P, None], *, key: str | None = None) -> Callable[P, None]: ...


@overload
def fragment(
    body: None = None, *, key: str | None = None
) -> Callable[[Callable[P, None]], Callable[P, None]]: ...


def fragment(
    body: Callable[P, None] | None = None, *, key: str | None = None
) -> Callable[P, None] | Callable[[Callable[P, None]], Callable[P, None]]:
    """`st.fragment(body, key=key)` for the review page: its runs take the page's `turn` and
    show a storage failure as the one sentence; `key` names it for `st.rerun(key)` from a
    callback."""

    def make(body: Callable[P, None]) -> Callable[P, None]:
        @functools.wraps(body)
        def run(*args: P.args, **kwargs: P.kwargs) -> None:
            with turn(), storage_failures():
                body(*args, **kwargs)

        return st.fragment(run, key=key)

    return make if body is None else make(body)
