"""The Dashboard's "Close labeling for this run…" button, at 1280×720 in real Chromium: it asks
first (Cancel writes nothing), then closes, says so in view, and the header names who closed it.

Its own server and database: closing is one way, so no other module's run is touched.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from calibration import cycles, store
from calibration.importing import import_answers
from tests.conftest import DEMO

from .conftest import settle, sign_in_at, start_app

RUN = "demo-judge@grounding-v1"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(URL, database) of a demo run with a closed cycle of labels (the lead has no open work)."""
    tmp = tmp_path_factory.mktemp("close")
    db_path = tmp / "calibration.db"
    with store.session(db_path) as db:
        import_answers(db, DEMO)
        cyc = cycles.create_cycle(db, name="week 1", judge_run=RUN, size=5, seed=1, force=True)
        for answer, claim, verdict in (("Q1", "c1", "SUPPORTED"), ("Q2", "c1", "SUPPORTED")):
            store.record_label(
                db,
                claim=store.claim_pk(db, answer, claim),
                reviewer="ann",
                kind="blind",
                verdict=verdict,
                cycle_id=cyc.id,
            )
        cycles.close_cycle(db, "week 1", force=True)
    with start_app(db_path, tmp / "streamlit.log") as url:
        yield url, db_path


def _closure(db_path: Path) -> store.LabelingClosure | None:
    with store.session(db_path) as db:
        return store.labeling_closure(db, store.find_judge_run(db, RUN).id)


def test_closing_labeling_asks_first_then_says_so_and_the_header_names_who(
    served: tuple[str, Path], small_page: Any
) -> None:
    url, db_path = served
    page = small_page
    sign_in_at(page, f"{url}/dashboard", "lead")
    page.locator(".st-key-decision").wait_for()
    button = page.get_by_role("button", name="Close labeling for this run…")

    button.click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_text("Closing labeling is the last look, and it is one way").wait_for()
    dialog.get_by_role("button", name="Cancel").click()
    dialog.wait_for(state="detached")
    settle(page)
    assert _closure(db_path) is None  # asking wrote nothing

    button.click()
    page.get_by_role("dialog").get_by_role("button", name="Close labeling", exact=True).click()
    page.get_by_text(
        "Labeling closed: the final reading is taken, and no new cycle is drawn."
    ).first.wait_for()
    closed = _closure(db_path)
    assert closed is not None and closed.closed_by == "lead"
    header = page.locator(".st-key-decision")
    header.get_by_text(re.compile(rf"labeling closed by lead on {closed.closed_at[:10]}")).first.wait_for()
    settle(page)
    assert button.count() == 0  # one way: nothing to close again, no undo offered
    assert page.get_by_role("link", name=re.compile("Plan the next cycle")).count() == 0
