"""The review page's runs, callbacks and fragments, one at a time per server process (`turn`)."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager


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
    all of them for each of its turns. The review card's route (card_route.py), which does not
    take this turn, wants the interpreter a dozen times per request, so a wave of page runs made
    a verdict wait seconds; with the runs in turns it waits for one run's slice (bench_load.py
    at 240 reviewers on a shared 2-core machine, docs/figures/bench_load_card_protocol.txt:
    verdict p95 4.6 s and commit 6.0 s with the page's runs at once, 2.3 s and 3.5 s in turns). The
    runs that wait hold no interpreter time meanwhile. Only the review page takes turns: its
    runs are short (milliseconds); no page that may run for long (an import, a judge run)
    does."""
    return _TURNS.held()
