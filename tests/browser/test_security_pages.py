"""The review page under a reviewer, in a real browser: a database deleted or replaced under a
reviewer is the one storage sentence on the next verdict key (never Streamlit's generic error),
and a huge retrieved chunk does not ride along with every key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import (
    build_db,
    claim_box,
    restore_db,
    seen_problems,
    server_errors,
    settle,
    sign_in,
    start_app,
    wait_saved,
)

pytestmark = pytest.mark.browser

SENTENCE = "The database could not do its part"
GENERIC = "This app has encountered an error"


def _answers(chunk: str = "A short chunk.") -> list[dict[str, Any]]:
    return [
        {
            "id": f"p{i}",
            "question": f"Question {i}?",
            "answer": f"Answer {i}. More {i}.",
            "chunks": [{"id": "k1", "text": chunk}, {"id": "k2", "text": "Second chunk."}],
            "claims": [
                {"id": "c1", "claim": f"Answer {i}.", "verdict": "SUPPORTED", "rationale": "r"},
                {"id": "c2", "claim": f"More {i}.", "verdict": "SUPPORTED", "rationale": "r"},
            ],
        }
        for i in range(3)
    ]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path, Path]]:
    """One app for the tests that break its database; yields (url, database, log, pristine copy)."""
    tmp = tmp_path_factory.mktemp("pages")
    pristine = tmp / "pristine.db"
    build_db(pristine, _answers(), reviewers=["Rita Reviewer"])
    db_path = tmp / "cal.db"
    restore_db(pristine, db_path)
    log = tmp / "server.log"
    with start_app(db_path, log, leads="Lena Lead") as url:
        yield url, db_path, log, pristine


@pytest.fixture
def running(server: tuple[str, Path, Path, Path]) -> tuple[str, Path, Path]:
    """The module's app on a whole database again (the test before broke it)."""
    url, db_path, log, pristine = server
    restore_db(pristine, db_path)
    return url, db_path, log


def _files(db: Path) -> list[Path]:
    return [p for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists()]


def _delete(db: Path) -> None:
    for p in _files(db):
        p.unlink()


def _replace(db: Path) -> None:
    _delete(db)
    db.write_bytes(b"PK\x03\x04 a zip archive, not SQLite " * 200)


@pytest.mark.parametrize("breaker", [_delete, _replace], ids=["deleted", "replaced"])
def test_a_verdict_key_on_a_broken_database_is_the_storage_sentence(
    breaker: Any, running: tuple[str, Path, Path], page: Any
) -> None:
    url, db_path, log = running
    sign_in(page, url, "Rita Reviewer")
    page.locator(".rc-claim button").first.wait_for()
    settle(page)
    breaker(db_path)
    page.keyboard.press("1")
    page.get_by_text(SENTENCE).first.wait_for()
    settle(page)
    text = page.locator('[data-testid="stApp"]').inner_text()
    assert GENERIC not in text and str(db_path.parent) not in text
    page.keyboard.press("2")  # a second key on the broken page: the same sentence again
    settle(page)
    assert GENERIC not in page.locator('[data-testid="stApp"]').inner_text()
    assert not seen_problems()
    assert not [e for e in server_errors(log) if "Traceback" in e]


def test_a_lead_write_on_a_replaced_database_is_the_storage_sentence(
    running: tuple[str, Path, Path], page: Any
) -> None:
    url, db_path, log = running
    page.goto(f"{url}/guidelines")
    field = page.get_by_label("Your name")
    field.fill("Lena Lead")
    field.press("Enter")
    page.get_by_label("Guidelines (markdown)").fill("Call it SUPPORTED only when a chunk says it.")
    settle(page)
    _replace(db_path)
    page.get_by_role("button", name="Save").click()
    page.get_by_text(SENTENCE).first.wait_for()
    settle(page)
    text = page.locator('[data-testid="stApp"]').inner_text()
    assert GENERIC not in text and text.count(SENTENCE) == 1
    assert not seen_problems()
    assert not [e for e in server_errors(log) if "Traceback" in e]


HUGE = 1024 * 1024  # a one-megabyte retrieved chunk


@pytest.fixture
def huge(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    db_path = tmp_path / "huge.db"
    words = "evidence text with no end in sight "
    chunk = (words * (HUGE // len(words) + 1))[: HUGE - 9] + " THE-END."
    build_db(db_path, _answers(chunk), reviewers=["Hugo Huge"])
    log = tmp_path / "server.log"
    with start_app(db_path, log, leads="Lena Lead") as url:
        yield url, log


def test_a_one_megabyte_chunk_is_not_sent_again_with_every_key(huge: tuple[str, Path], page: Any) -> None:
    url, log = huge
    received: list[int] = []

    def on_socket(ws: Any) -> None:
        ws.on("framereceived", lambda payload: received.append(len(payload)))

    page.on("websocket", on_socket)
    sign_in(page, url, "Hugo Huge")
    first = page.locator(".rc-claim").first
    first.locator("button").first.wait_for()
    settle(page)
    pk = int(first.get_attribute("data-pk") or 0)
    received.clear()
    page.keyboard.press("1")
    page.locator(claim_box(pk)).wait_for(state="detached")  # the next claim, drawn at once
    wait_saved(page, pk)  # the key's label landed
    settle(page)
    sent = sum(received)
    assert sent < 200_000, f"{sent:,} bytes sent for one verdict key"
    dom = page.evaluate("() => document.body.textContent.length")
    assert dom < 200_000, f"{dom:,} characters on the page"
    assert "THE-END." not in page.locator('[data-testid="stApp"]').inner_text()
    # The rest is there on request.
    page.get_by_role("button", name="Show the chunks in full").click()
    page.get_by_role("button", name="Cut the long chunks again").wait_for()
    settle(page)
    assert "THE-END." in page.evaluate("() => document.body.textContent")
    assert not seen_problems()
    assert not [e for e in server_errors(log) if "Traceback" in e]
