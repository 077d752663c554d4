"""Checks every test may use: no traceback reaches a page or the CLI.

A traceback on a page or in CLI output is a bug whatever the test is about (the package
turns every failure it knows into one sentence, `calibration.errors`), so the CLI runners of
the test modules, the AppTest runs (tests/conftest.py) and the browser pages
(tests/browser/conftest.py) all go through these two functions.
"""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Callable
from typing import Any

MARK = "Traceback"  # how CPython starts every printed traceback


def assert_no_traceback(text: str | bytes | None, where: str) -> None:
    """Fail with the offending output when `text` holds a Python traceback; `where` names the
    stream or page (e.g. "stderr of calibration import", "/dashboard")."""
    if text is None:
        return
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    at = text.find(MARK)
    if at >= 0:
        raise AssertionError(f"a traceback reached {where}:\n{text[max(0, at - 200) : at + 3000]}")


def assert_no_page_exception(at: Any, where: str = "the page") -> None:
    """Fail when a Streamlit AppTest run drew an exception element (`at.exception`)."""
    found = list(getattr(at, "exception", None) or [])
    if found:
        details = "\n".join(str(getattr(e, "value", e)) for e in found)
        raise AssertionError(f"an exception reached {where} ({len(found)}):\n{details}")


def wait_healthy(
    port: int,
    server: subprocess.Popen[Any],
    output: Callable[[], str],
    timeout_s: float = 90,
    health: str = "/_stcore/health",
) -> None:
    """Return once the server on 127.0.0.1:`port` answers its health check (Streamlit's, or the
    `health` path of another server); fail the test, with the server's `output()`, when it exits
    first or stays unhealthy past `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{health}", timeout=2) as r:
                if r.read().strip().lower() == b"ok":
                    return
        except OSError:
            pass
        assert server.poll() is None, f"the server exited ({server.returncode}):\n{output()}"
        assert time.monotonic() < deadline, f"the server was not healthy in {timeout_s:.0f} s:\n{output()}"
        time.sleep(0.2)  # a poll interval: the health endpoint offers nothing to wait on
