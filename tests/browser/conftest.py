"""Browser tests: the real app (`streamlit run app.py`) driven in headless Chromium.

Chromium is Debian's: its headless shell (/usr/bin/chromium-headless-shell) where installed,
else the full browser (/usr/bin/chromium), or $CHROMIUM; Playwright never downloads a browser
here. When the browser or Playwright is missing the tests are skipped locally with
the reason, and fail when $CI is set: CI must run them.

One server per test module (`start_app`), against a temporary database filled through the
calibration package. Tests share the server by working as different reviewers of an open
cycle: labels are per reviewer, so they cannot disturb each other. Their tabs (`page`,
`small_page`, `tabs`) are opened in one browser context per module and window size
(`_module_contexts`), whose cache keeps the frontend compiled.

No traceback reaches a page: every browser context a test opens (those behind `tabs`, or
`browser.new_context()` in a test) watches each document it loads, and the test fails at
teardown if a page ever held the text "Traceback" or a Streamlit exception element
(`[data-testid="stException"]`), whether or not the test looked at that moment.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from calibration import cycles, store
from calibration.importing import import_answers
from tests.helpers import assert_no_traceback

# Playwright's wait for an element or event. It costs nothing when the page is quick; on a
# loaded machine a Streamlit rerun can take many seconds, and a shorter wait made tests flaky.
WAIT_MS = 45_000

ROOT = Path(__file__).resolve().parents[2]
# The headless shell is the same Chromium without the desktop browser around it (Playwright's
# own default for headless runs): about 25% less CPU per page load than the full browser,
# measured on six loads of the app's pages. The benchmarks keep the full browser a reviewer uses.
CHROMIUM = os.environ.get("CHROMIUM") or next(
    (p for p in ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium") if os.access(p, os.X_OK)),
    "/usr/bin/chromium",
)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-sync",
    "--metrics-recording-only",
    "--no-default-browser-check",
    # One renderer process for all tabs of the app: a new tab then reuses the process's
    # compiled frontend instead of starting and warming its own (about 30% less Chromium CPU
    # per page load, measured on the review page and the lead pages).
    "--process-per-site",
]
SCREENSHOTS = Path(os.environ.get("SCREENSHOT_DIR", "/tmp"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Every test in this folder drives a browser, whether or not its file says so, so that
    # `-m "not browser"` (make test-fast) never starts Chromium.
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(pytest.mark.browser)


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"browser tests cannot run in CI: {reason}", pytrace=False)
    sys.stderr.write(f"\n*** SKIPPING BROWSER TESTS: {reason} ***\n")
    pytest.skip(f"BROWSER TESTS SKIPPED: {reason}")


def require_browser() -> Any:
    """The playwright sync API module, or skip (locally) / fail (CI) saying what is missing."""
    try:
        from playwright import sync_api
    except ImportError:
        _missing("python playwright is not installed (`make test` installs the dev dependency group)")
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        _missing(f"no Chromium at {CHROMIUM} (apt-get install chromium-headless-shell, or set $CHROMIUM)")
    return sync_api


# ---------------------------------------------------------------- data


def write_answers(
    path: Path, answers: Sequence[dict[str, Any]], judge_model: str = "judge-x", prompt_version: str = "v1"
) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for rec in answers:
            fh.write(
                json.dumps(
                    {"judge_model": judge_model, "judge_prompt_version": prompt_version, **rec},
                    ensure_ascii=False,
                )
                + "\n"
            )
    return path


def build_db(
    db_path: Path,
    answers: Sequence[dict[str, Any]],
    *,
    cycle_name: str = "cycle one",
    reviewers: Sequence[str] = (),
) -> cycles.Cycle:
    """Import judged answers and open one cycle holding all of them."""
    jsonl = write_answers(db_path.with_suffix(".jsonl"), answers)
    with store.session(db_path) as db:
        import_answers(db, jsonl)
        return cycles.create_cycle(
            db,
            name=cycle_name,
            judge_run="judge-x@v1",
            size=len(answers),
            seed=7,
            strategy="random",
            reviewers=list(reviewers),
            overlap=0.0,
            force=True,
            created_by="tests",
        )


def restore_db(pristine: Path, db_path: Path) -> None:
    """Put a copy of `pristine` at `db_path`, its -wal and -shm gone: the next test of a module's
    shared server starts from the whole database, whatever the test before did to the file."""
    for p in (db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm")):
        p.unlink(missing_ok=True)
    shutil.copyfile(pristine, db_path)


# ---------------------------------------------------------------- the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_script(root: Path) -> str:
    """What `streamlit run` starts in the checkout `root`: the app package's server, else (a
    checkout from before it) the root's server.py, else (from before that) app.py."""
    for script in ("calibration_app/server.py", "server.py"):
        if (root / script).is_file():
            return script
    return "app.py"


@contextlib.contextmanager
def start_app(
    db_path: Path | str,
    log_path: Path,
    extra_args: Sequence[str] = (),
    port: int | None = None,
    leads: str | None = None,
    root: Path = ROOT,
) -> Iterator[str]:
    """Run `streamlit run` on the app server (`_server_script`) on a free port
    against `db_path`; yield its URL. `leads`: the server's $CALIBRATION_LEADS (else this
    process's); `root`: the checkout whose app runs (and whose package it imports)."""
    port = port or free_port()
    env = {**os.environ, "CALIBRATION_DB": str(db_path), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    if leads is not None:
        env["CALIBRATION_LEADS"] = leads
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        _server_script(root),
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
        "--server.runOnSave",
        "false",
        *extra_args,
    ]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited ({proc.returncode}):\n{log_path.read_text()}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not get healthy:\n{log_path.read_text()}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def server_errors(log_path: Path) -> list[str]:
    text = log_path.read_text(errors="replace")
    return [line for line in text.splitlines() if "Traceback" in line or "Error" in line]


# ---------------------------------------------------------------- the browser


# Runs in every document of a watched context: reports (once per document) the first time
# the page holds a traceback or an exception element. textContent, not innerText: no layout
# per mutation, and text in collapsed expanders counts too. A constant: no data goes into it.
_WATCH = """(() => {
  if (window.__calWatch) return;
  window.__calWatch = true;
  let reported = false, queued = false;
  const check = () => {
    queued = false;
    if (reported || !document.body) return;
    const errors = document.querySelectorAll('[data-testid="stException"]').length;
    const text = document.body.textContent || "";
    const at = text.indexOf("Traceback");
    if (errors || at >= 0) {
      reported = true;
      window.__calTracebackSeen(location.pathname, errors,
                                at >= 0 ? text.slice(Math.max(0, at - 200), at + 2000) : text.slice(0, 2000));
    }
  };
  new MutationObserver(() => { if (!queued) { queued = true; setTimeout(check, 50); } })
    .observe(document, {childList: true, subtree: true, characterData: true});
})();"""

_SEEN: list[str] = []  # what the watched pages of the running test reported


def _watched(ctx: Any) -> Any:
    def seen(_source: Any, path: str, errors: int, text: str) -> None:
        _SEEN.append(f"{path}: {errors} exception element(s)\n{text}")

    ctx.expose_binding("__calTracebackSeen", seen)
    ctx.add_init_script(_WATCH)
    return ctx


class WatchedBrowser:
    """The Playwright browser, whose new contexts and pages watch for tracebacks (`_WATCH`)."""

    def __init__(self, browser: Any) -> None:
        self._browser = browser

    def new_context(self, *args: Any, **kwargs: Any) -> Any:
        return _watched(self._browser.new_context(*args, **kwargs))

    def new_page(self, *args: Any, **kwargs: Any) -> Any:
        return self.new_context(*args, **kwargs).new_page()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._browser, name)


def page_problems(pg: Any) -> list[str]:
    """What the page shows now that no page may: an exception element, or a traceback's text."""
    errors = pg.locator('[data-testid="stException"]').count()
    text = pg.evaluate("() => document.body ? document.body.innerText : ''")
    out = [f"{pg.url}: {errors} exception element(s)"] if errors else []
    try:
        assert_no_traceback(text, pg.url)
    except AssertionError as exc:
        out.append(str(exc))
    return out


def seen_problems() -> list[str]:
    """What the watched pages reported so far in this test (and forget it)."""
    found = list(_SEEN)
    _SEEN.clear()
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # Module scope, not session: Playwright's sync API keeps an asyncio loop running in
    # this thread while it is open, which would break asyncio.run() in later test files.
    sync_api = require_browser()
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield WatchedBrowser(b)
        finally:
            b.close()


@pytest.fixture(autouse=True)
def _no_traceback_on_any_page() -> Iterator[None]:
    _SEEN.clear()
    yield
    found = seen_problems()
    if found:
        pytest.fail("a traceback or exception reached a page:\n" + "\n\n".join(found), pytrace=False)


@pytest.fixture(scope="module")
def _module_contexts(browser: Any) -> Iterator[dict[tuple[int, int], Any]]:
    """One browser context per window size, shared by the tabs (`Tabs`) of a module's tests.
    A new context starts with empty HTTP and code caches, so its first page fetches and
    compiles Streamlit's whole frontend again: about 1.5 s of CPU, as much as the rest of a
    page load. Each test still gets its own tabs (`tabs`), hence its own Streamlit sessions
    (who is signed in lives there and in the tab's URL), and cookies (an OIDC sign-in) and
    storage are cleared between tests. A test that needs cookies of its own (a second OIDC
    sign-in beside the first) opens `browser.new_context()`."""
    made: dict[tuple[int, int], Any] = {}
    yield made
    for ctx in list(made.values()):  # closing one drops it from `made`
        ctx.close()


class Tabs:
    """New tabs of the module's contexts (`_module_contexts`) for one test; `close` leaves them
    as no test found them: every tab closed, cookies and the origins' storage cleared."""

    def __init__(self, contexts: dict[tuple[int, int], Any], browser: Any) -> None:
        self._contexts, self._browser = contexts, browser
        self._used: set[tuple[int, int]] = set()

    def open(self, width: int = 1400, height: int = 1000) -> Any:
        key = (width, height)
        if key not in self._contexts:
            size = {"width": width, "height": height}
            ctx = self._browser.new_context(viewport=size, accept_downloads=True)
            ctx.on("close", lambda _ctx: self._contexts.pop(key, None))  # a test closed it: make another
            self._contexts[key] = ctx
        self._used.add(key)
        pg = self._contexts[key].new_page()
        pg.set_default_timeout(WAIT_MS)
        return pg

    def close(self) -> None:
        for key in self._used:
            ctx = self._contexts.get(key)
            if ctx is None:
                continue
            for tab in ctx.pages:
                with contextlib.suppress(Exception):  # a tab on an error page has no storage
                    tab.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
                tab.close()
            ctx.clear_cookies()


@pytest.fixture
def tabs(_module_contexts: dict[tuple[int, int], Any], browser: Any) -> Iterator[Tabs]:
    """More tabs for a test (another reviewer, a second view), each its own Streamlit session."""
    made = Tabs(_module_contexts, browser)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def page(tabs: Tabs) -> Iterator[Any]:
    pg = tabs.open(1400, 1000)
    yield pg
    # The page as the test left it (the watcher covers the pages before).
    if not pg.is_closed():
        _SEEN.extend(page_problems(pg))


@pytest.fixture
def small_page(tabs: Tabs) -> Iterator[Any]:
    """A page on a laptop's screen, 1280×720: what a result must stay in view of."""
    return tabs.open(1280, 720)


def sign_in(page: Any, url: str, name: str) -> None:
    """Open the review page and sign in with a typed name (beside the roster's pick, if any)."""
    page.goto(f"{url}/review")
    field = page.locator(".st-key-signin_name input")
    field.wait_for()
    settled(page)  # the first run has ended: a key pressed mid-run can be lost when it redraws
    field.fill(name)
    field.press("Enter")
    page.locator(".st-key-cycle-name .cal-cycle").wait_for()
    # Move the focus off any field so plain-key shortcuts reach the app.
    blur(page)


def sign_in_at(page: Any, url: str, name: str, pause_ms: int = 300) -> None:
    """Open `url` (a fresh session: a page that asks for the name) and sign in there."""
    page.goto(url)
    field = page.get_by_label("Your name")
    field.wait_for()
    settled(page)  # the first run has ended: a key pressed mid-run can be lost when it redraws
    field.fill(name)
    field.press("Enter")
    field.wait_for(state="detached")
    settle(page, pause_ms)


@contextlib.contextmanager
def request_counter() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server that records the path of every request; yields (base URL, paths)."""
    seen: list[str] = []

    class Count(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Count)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def wait_until(done: Callable[[], bool], timeout_s: float = WAIT_MS / 1000, every_s: float = 0.05) -> bool:
    """Ask `done` until it holds or `timeout_s` passes; return its last answer. For what the page
    has no element for: rows the server writes, files it makes and removes."""
    deadline = time.monotonic() + timeout_s
    while not (ok := done()) and time.monotonic() < deadline:
        time.sleep(every_s)
    return ok


def page_wait_until(page: Any, done: Callable[[], bool], timeout_s: float = WAIT_MS / 1000) -> bool:
    """`wait_until` for what Python hears from the page (a binding's call, a websocket frame):
    Playwright delivers those only while it waits on the page, so the pause is the page's own."""
    deadline = time.monotonic() + timeout_s
    while not (ok := done()) and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    return ok


def blur(page: Any) -> None:
    page.evaluate("() => document.activeElement && document.activeElement.blur()")


# The app has settled: the script is not running and no element is stale (left over
# from the previous run while the new one is drawn).
_SETTLED = """(sel) => {
    const app = document.querySelector('[data-testid="stApp"]');
    return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
        && !document.querySelector('[data-stale="true"]')
        && !!document.querySelector(sel);
}"""


def settled(page: Any) -> None:
    """Wait until the app's run has ended and nothing on the page is stale."""
    page.wait_for_function(_SETTLED, arg="body")


def settle(page: Any, pause_ms: int = 300) -> None:
    """`settled`, then a pause for drawing."""
    settled(page)
    page.wait_for_timeout(pause_ms)


def next_frame(page: Any) -> None:
    """Return once the browser has drawn the next frame: what a synchronous scroll or resize
    changed is on screen (for a screenshot, or a bounding box)."""
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")


def wait_for_card(page: Any, selector: str) -> None:
    """Wait until `selector` is drawn and the app has settled, so a key press reaches it."""
    page.locator(selector).first.wait_for()
    page.wait_for_function(_SETTLED, arg=selector)


def claim_box(claim_pk: int) -> str:
    """The selector of the review card's claim box (calibration_app/components/review_card.js)."""
    return f".rc-claim[data-pk='{claim_pk}']"


def wait_claim(page: Any, claim_pk: int) -> None:
    """The claim's card with its buttons is on screen, ready for a key."""
    wait_for_card(page, f"{claim_box(claim_pk)} button")


def wait_saved(page: Any, claim_pk: int) -> None:
    """The review card marks the claim's latest verdict saved: the server acknowledged it."""
    page.locator(
        f".rc-line[data-pk='{claim_pk}'] .rc-saved, .rc-look[data-pk='{claim_pk}'] .rc-saved"
    ).filter(has_text="saved").filter(has_not_text="not").first.wait_for()


def wait_reveal(page: Any) -> None:
    """The card shows the judge beside the reviewer's verdicts (after the commit)."""
    wait_for_card(page, ".rc-reveal button")


def shot(page: Any, name: str) -> Path:
    """A screenshot of the whole page (Streamlit scrolls inside its main block, so the
    viewport is stretched to the content for the picture, then restored)."""
    path = SCREENSHOTS / f"review-{name}.png"
    size = page.viewport_size
    height = page.evaluate("""() => {
        const m = document.querySelector('[data-testid="stMain"]');
        return m ? m.scrollHeight : document.body.scrollHeight; }""")
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], height)})
    next_frame(page)
    page.screenshot(path=str(path))
    page.set_viewport_size(size)
    return path
