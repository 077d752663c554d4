"""The blind guarantee for a lead who also reviews, in a real browser: with answers still to
label in an open cycle, no page and no direct URL shows the lead a judge verdict or rationale of
those answers; the Dashboard says so in one sentence and still shows a run without them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from calibration import cycles, roles, store
from calibration.importing import import_answers

from .conftest import SCREENSHOTS, WAIT_MS, server_errors, settle, sign_in_at, start_app, write_answers

pytestmark = pytest.mark.browser

LEAD = "Lena Lead"
PAGES = ("review", "cycles", "guidelines", "dashboard", "import", "judge_lab")
HIDDEN_RUN, SHOWN_RUN = "judge-x@v1", "judge-y@v1"


def _answers(prefix: str, rationale: str, n: int) -> list[dict[str, Any]]:
    verdicts = ["CONTRADICTED", "UNSUPPORTED", "SUPPORTED"]
    return [
        {
            "id": f"{prefix}{i}",
            "question": f"Question {prefix}{i}?",
            "answer": f"Answer {prefix}{i}.",
            "chunks": [{"id": "k1", "text": f"Chunk {prefix}{i}."}],
            "claims": [
                {
                    "id": "c1",
                    "claim": f"Answer {prefix}{i}.",
                    "verdict": verdicts[i % 3],
                    "rationale": f"{rationale}-{i}",
                }
            ],
        }
        for i in range(n)
    ]


def _split_labels(db: Any, answer_ids: list[str]) -> None:
    # Two reviewers disagree on every claim: each is unresolved, and the Dashboard lists it with
    # the judge's verdict and rationale ("Needs a lead's decision") when the scope is shown.
    for aid in answer_ids:
        pk = store.claim_pk(db, aid, "c1")
        store.record_label(db, claim=pk, reviewer="sam", kind="import", verdict="SUPPORTED")
        store.record_label(db, claim=pk, reviewer="tom", kind="import", verdict="CONTRADICTED")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp = tmp_path_factory.mktemp("lead")
    db_path = tmp / "cal.db"
    with store.session(db_path) as db:
        for model, prefix, rationale in (
            ("judge-x", "x", "hidden-rationale"),
            ("judge-y", "y", "shown-rationale"),
        ):
            jsonl = write_answers(tmp / f"{prefix}.jsonl", _answers(prefix, rationale, 4), judge_model=model)
            import_answers(db, jsonl)
            _split_labels(db, [f"{prefix}{i}" for i in range(4)])
        # Every answer of run x is the lead's own open work in an open cycle.
        cycles.create_cycle(
            db,
            name="lead work",
            judge_run=HIDDEN_RUN,
            size=4,
            seed=7,
            strategy="random",
            reviewers=[LEAD],
            overlap=0.0,
            force=True,
            created_by="tests",
        )
        assert roles.open_work_of(db, [LEAD]).answers == {"x0", "x1", "x2", "x3"}
    log = tmp / "server.log"
    with start_app(db_path, log, leads=LEAD) as url:
        yield url, log


def _sign_in_at(page: Any, url: str) -> None:
    sign_in_at(page, url, LEAD, 400)


def _all_text(page: Any) -> str:
    # textContent: text in collapsed expanders counts as shown (one click opens it).
    return page.evaluate("() => document.querySelector('[data-testid=\"stApp\"]').textContent")


def _no_hidden_verdict(text: str, where: str) -> None:
    for i in range(4):
        assert f"hidden-rationale-{i}" not in text, f"a rationale of the lead's open work on {where}"
    assert f"Judge ({HIDDEN_RUN})" not in text, f"a judge verdict of the lead's open work on {where}"


def _pick(page: Any, box: str, option: str) -> None:
    page.get_by_role("combobox", name=box).click()
    page.get_by_role("option", name=option, exact=False).first.click()
    settle(page, 400)


def test_a_lead_with_open_work_sees_no_verdict_of_it(app: tuple[str, Path], page: Any) -> None:
    url, log = app
    page.set_default_timeout(WAIT_MS)
    _sign_in_at(page, f"{url}/dashboard")
    page.get_by_text("Needs a lead's decision", exact=True).wait_for()
    settle(page, 400)
    text = _all_text(page)
    # The run without the lead's work is drawn in full: the check below could fail.
    assert "shown-rationale-0" in text and f"Judge ({SHOWN_RUN})" in text
    _no_hidden_verdict(text, "/dashboard (run y)")

    _pick(page, "Judge run", HIDDEN_RUN)
    page.get_by_text("This view is hidden from you").wait_for()
    text = _all_text(page)
    assert "answers you still have to label in cycle 'lead work' (4 answers)" in text
    assert "To finish: " in text and "x0" in text
    _no_hidden_verdict(text, "/dashboard (run x, whole run)")
    assert page.get_by_test_id("stDownloadButton").count() == 0  # no export of it either
    page.screenshot(path=str(SCREENSHOTS / "security-lead-dashboard-hidden.png"))

    _pick(page, "Scope", "lead work")
    page.get_by_text("This view is hidden from you").wait_for()
    _no_hidden_verdict(_all_text(page), "/dashboard (run x, cycle lead work)")

    # Every page by direct URL (a fresh session each), the lead pages included.
    for name in PAGES:
        _sign_in_at(page, f"{url}/{name}")
        text = _all_text(page)
        assert "This page is for leads" not in text, name
        _no_hidden_verdict(text, f"/{name}")
    # Home has no sign-in of its own: reached from the navigation, signed in.
    page.locator(".st-key-nav").get_by_role("link", name="Home").click()
    page.get_by_text("Judge runs").wait_for()
    settle(page, 400)
    _no_hidden_verdict(_all_text(page), "/ (Home)")
    # The Judge lab offers no scope over the lead's open cycle.
    _sign_in_at(page, f"{url}/judge_lab")
    page.get_by_text("Cycles where you still have answers to label").wait_for()
    settle(page, 400)
    box = page.locator(".st-key-lab_scope input").first
    for _ in range(3):  # a rerun redrawing the box may swallow the first click
        box.click()
        try:
            page.get_by_role("option").first.wait_for(timeout=5_000)
            break
        except Exception:
            page.keyboard.press("Escape")
            settle(page, 400)
    options = page.get_by_role("option").all_inner_texts()
    assert options and not any("lead work" in o for o in options), options
    page.keyboard.press("Escape")
    assert not [e for e in server_errors(log) if "Traceback" in e]


def test_the_dashboard_export_of_the_other_run_holds_none_of_the_open_work(
    app: tuple[str, Path], page: Any, tmp_path: Path
) -> None:
    url, _log = app
    page.set_default_timeout(WAIT_MS)
    _sign_in_at(page, f"{url}/dashboard")
    page.get_by_text("Needs a lead's decision", exact=True).wait_for()
    settle(page, 400)
    with page.expect_download(timeout=180_000) as got:  # the export is built on the click
        page.get_by_test_id("stDownloadButton").get_by_role("button").click()
    path = tmp_path / "export.jsonl"
    got.value.save_as(path)
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    ids = {r.get("answer_id") for r in records}
    assert ids == {"y0", "y1", "y2", "y3"}, ids
    assert "hidden-rationale" not in path.read_text(encoding="utf-8")
