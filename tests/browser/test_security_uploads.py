"""Uploads in a real browser and over real HTTP: a hostile file name is never a file path, the
upload's copy on disk goes when it is replaced or imported, and Streamlit's upload endpoint takes
no more than `server.maxUploadSize` from a session that never signed in."""

from __future__ import annotations

import http.client
import json
import tomllib
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from calibration import store

from .conftest import ROOT, page_wait_until, require_browser, server_errors, start_app, wait_until

pytestmark = pytest.mark.browser

GOOD = ROOT / "tests" / "data" / "adapters" / "deepeval_latest_test_run.json"
LIMIT_MB = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["server"]["maxUploadSize"]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    """The app on an empty database, with a temp folder of its own (where uploads are put)."""
    require_browser()
    tmp = tmp_path_factory.mktemp("uploads")
    db, temp = tmp / "app.db", tmp / "temp"
    temp.mkdir()
    with store.session(db):
        pass
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMPDIR", str(temp))
        with start_app(db, tmp / "server.log") as url:
            yield url, temp, tmp / "server.log"


def _folders(temp: Path) -> list[Path]:
    return sorted(temp.glob("calibration-upload-*"))


def _settled_folders(temp: Path, before: set[Path], done: Any, timeout_s: float = 45.0) -> set[Path]:
    """The upload folders made since `before`, once `done(folders)` holds (or at the timeout):
    the server writes and removes them in its own runs, after the browser has moved on."""
    found: set[Path] = set()

    def settled() -> bool:
        nonlocal found
        found = set(_folders(temp)) - before
        return bool(done(found))

    wait_until(settled, timeout_s)
    return found


def _open_import(page: Any, url: str) -> None:
    page.goto(f"{url}/import")
    field = page.get_by_label("Your name")
    field.fill("lead ana")
    field.press("Enter")
    page.get_by_text("File of judged answers").wait_for()


def _upload(page: Any, name: str, data: bytes) -> None:
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        {"name": name, "mimeType": "application/json", "buffer": data}
    )
    page.get_by_role("button", name="Check file").wait_for()


@pytest.mark.parametrize(
    "name",
    ["..", "a\x00b.json", "Ж" * 200 + ".json", "../../escape.json"],
    ids=["dotdot", "nul", "cyrillic-200", "slashes"],
)
def test_a_hostile_upload_name_is_checked_like_any_file(
    name: str, app: tuple[str, Path, Path], page: Any
) -> None:
    url, temp, log = app
    _open_import(page, url)
    _upload(page, name, GOOD.read_bytes())
    fmt = page.get_by_label("Format")
    if fmt.input_value() != "DeepEval test run":
        fmt.click()
        page.get_by_role("option", name="DeepEval test run").click()
    page.get_by_label("Judge prompt version (for records that do not name one)").fill("faith-v1")
    page.get_by_role("button", name="Check file").click()
    page.get_by_text("Checked: nothing has been written yet").wait_for()
    assert "answers: 2 new" in page.get_by_role("dialog").inner_text()  # the check shows in a dialog
    assert "calibration-upload-" not in page.content()
    assert not (temp.parent / "escape.json").exists() and not (temp / "escape.json").exists()
    assert not [e for e in server_errors(log) if "Traceback" in e]


def test_the_copy_on_disk_goes_when_replaced_or_imported(app: tuple[str, Path, Path], page: Any) -> None:
    url, temp, log = app
    _open_import(page, url)
    before = set(_folders(temp))
    _upload(page, "first.json", GOOD.read_bytes())
    first = set(_folders(temp)) - before
    assert len(first) == 1
    data = json.loads(GOOD.read_text())
    data["testRunId"] = "another"
    _upload(page, "second.json", json.dumps(data).encode())
    page.wait_for_function("() => document.body.innerText.includes('second.json')")
    # The browser shows the new name before the server has run with it: replacing a file is a
    # run without it (the first copy goes) and then one with the new file (its copy is made).
    mine = _settled_folders(temp, before, lambda found: len(found) == 1 and not first & found)
    assert len(mine) == 1 and not first & mine  # the first copy is gone
    page.get_by_label("Judge prompt version (for records that do not name one)").fill("faith-v1")
    page.get_by_role("button", name="Check file").click()
    page.get_by_text("Checked: nothing has been written yet").wait_for()
    page.get_by_role("dialog").get_by_role("button", name="Import", exact=True).click()
    page.get_by_text("Imported.").wait_for()
    assert not _settled_folders(temp, before, lambda found: not found)  # and the imported one too
    assert not [e for e in server_errors(log) if "Traceback" in e]


def _session_id(page: Any, url: str) -> str:
    """The Streamlit session of a page that opened the app and never signed in (from the
    first message the server sends: NewSession.initialize.session_id)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    found: list[str] = []

    def on_socket(ws: Any) -> None:
        def on_frame(payload: Any) -> None:
            if isinstance(payload, bytes) and not found:
                msg = ForwardMsg.FromString(payload)
                if msg.HasField("new_session"):
                    found.append(msg.new_session.initialize.session_id)

        ws.on("framereceived", on_frame)

    page.on("websocket", on_socket)
    page.goto(f"{url}/import")
    page.get_by_label("Your name").wait_for()
    page.wait_for_function("() => true")
    assert page_wait_until(page, lambda: bool(found)), "no session id seen"
    assert page.locator('[data-testid="stFileUploaderDropzoneInput"]').count() == 0  # no uploader
    return found[0]


def _put(url: str, session_id: str, size: int, xsrf: str) -> int:
    """PUT a file of `size` bytes as the uploader does; the response's status. The server may
    answer (413) before the body is sent: the rest of the body is then not sent."""
    boundary = uuid.uuid4().hex
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.json"\r\n'
        "Content-Type: application/json\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    host = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(host.hostname, host.port, timeout=60)
    try:
        conn.putrequest("PUT", f"/_stcore/upload_file/{session_id}/{uuid.uuid4()}")
        for name, value in (
            ("Content-Type", f"multipart/form-data; boundary={boundary}"),
            ("Content-Length", str(len(head) + size + len(tail))),
            ("X-Xsrftoken", xsrf),
            ("Cookie", f"_streamlit_xsrf={xsrf}"),
        ):
            conn.putheader(name, value)
        conn.endheaders()
        try:
            conn.send(head)
            chunk = b"x" * (1024 * 1024)
            for start in range(0, size, len(chunk)):
                conn.send(chunk[: min(len(chunk), size - start)])
            conn.send(tail)
        except OSError:  # the server answered and closed before the whole body was sent
            pass
        return conn.getresponse().status
    finally:
        conn.close()


def test_a_session_that_never_signed_in_uploads_at_most_the_limit(
    app: tuple[str, Path, Path], page: Any
) -> None:
    url, _, _ = app
    assert f"limits uploads to {LIMIT_MB} MB" in (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    session_id = _session_id(page, url)
    cookies = {c["name"]: c["value"] for c in page.context.cookies()}
    xsrf = cookies["_streamlit_xsrf"]
    mb = 1024 * 1024
    assert _put(url, "not-a-session", 1000, xsrf) == 400  # only a live session's files are taken
    assert _put(url, session_id, 1000, "") == 403  # and only with the session's XSRF token
    # Over the limit: refused whole. (Under it Streamlit takes the file for any file id of a live
    # session, signed in or not: the limit is what one request can park.)
    assert _put(url, session_id, LIMIT_MB * mb + 1, xsrf) == 413
    assert _put(url, session_id, 30 * mb, xsrf) == 413
