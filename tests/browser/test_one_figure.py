"""One figure per question, the same on every screen, in real Chromium at 1280×720.

A scripted team on the WiCE answers: the gpt-4 run imported first, the gpt-3.5 run second (so
the most recent import is not the run the team reviews); two reviewers label a cycle of the
gpt-3.5 run, then a cycle of the gpt-4 run (labeled whole, one claim disputed, closed); a lab run
of the stub judge revising the gpt-4 prompt (it seals the holdout); a planned cycle of the gpt-4
run, partly labeled since. The run keeps answers nobody labeled.

Every agreement figure shown for one scope is read on the Dashboard, the Cycles page, the Judge
lab, Home and `calibration stats --json`: one value, or a value labelled with its basis.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from calibration import cli, cycles, split, store
from calibration.importing import import_answers

from ..judge_stub import StubServer
from .conftest import ROOT, SCREENSHOTS, Tabs, settled, start_app, wait_until
from .test_fit_1280 import cut_off, open_as_lead

pytestmark = pytest.mark.browser

WICE = ROOT / "data" / "wice"
GPT4 = "gpt-4-0613@wice-gpt4"
GPT35 = "gpt-3.5-turbo-0613@wice-gpt35"
CLOSED = "week 1"
PLANNED = "week 2"
PERCENT = r"\d+(?:\.\d)?%"
DIRECTION = re.compile(r"95% CI ([+-]?\d+(?:\.\d+)?) to ([+-]?\d+(?:\.\d+)?)")
NOTHING_LEFT = ("has no unlabeled claims", "no cycle can draw more", "Every answer of this run is labeled")


def _humans() -> dict[str, str]:
    with (WICE / "wice_human_labels.csv").open(encoding="utf-8") as fh:
        return {r["claim_id"]: r["verdict"] for r in csv.DictReader(fh)}


def _label(
    db: store.Database, cycle: cycles.Cycle, truth: dict[str, str], *, dispute: int = 0, answers: int = 0
) -> None:
    """Every assigned reviewer labels every claim of the cycle (its first `answers`, when given)
    blind, as WiCE's annotators did; on the first `dispute` answers two reviewers share, the
    second says the opposite."""
    shared = 0
    listed = cycles.cycle_answers(db, cycle.id)
    for ans in listed[:answers] if answers else listed:
        for i, reviewer in enumerate(ans.reviewers or ("ann",)):
            claim = f"{ans.answer_id}-c1"
            verdict = truth[claim]
            if i == 1 and shared < dispute:
                verdict = "SUPPORTED" if verdict != "SUPPORTED" else "UNSUPPORTED"
                shared += 1
            store.record_label(
                db,
                claim=store.claim_pk(db, ans.answer_id, claim),
                reviewer=reviewer,
                kind="blind",
                verdict=verdict,
                cycle_id=cycle.id,
            )


def build_team(db_path: Path, stub_url: str) -> None:
    """The scripted team's database (see the module docstring)."""
    truth = _humans()
    with store.session(db_path) as db:
        import_answers(db, WICE / "wice_judged_gpt4.jsonl")
        import_answers(db, WICE / "wice_judged_gpt35.jsonl")
        first = cycles.create_cycle(
            db, name="gpt-3.5 check", judge_run=GPT35, size=15, seed=3, reviewers=["ann"], overlap=0.0
        )
        _label(db, first, truth)
        cycles.close_cycle(db, first.name)
        week1 = cycles.create_cycle(
            db, name=CLOSED, judge_run=GPT4, size=30, seed=5, reviewers=["ann", "bob"], overlap=0.2
        )
        _label(db, week1, truth, dispute=1)
        cycles.close_cycle(db, CLOSED)
    argv = ["--db", str(db_path), "judge", "run", "--base-url", stub_url, "--model", "stub-judge"]
    assert cli.main([*argv, "--prompt-version", "grounding-v1", "--revises", GPT4]) == 0
    with store.session(db_path) as db:
        week2 = cycles.create_cycle(
            db, name=PLANNED, judge_run=GPT4, size=20, seed=9, strategy="planned", reviewers=["ann"]
        )
        _label(db, week2, truth, answers=10)  # reviewed last: half of the planned cycle


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("one-figure") / "team.db"
    with StubServer(verdicts=_humans(), record=False) as stub:
        build_team(db, stub.base_url)
    return db


@pytest.fixture(scope="module")
def app(pristine: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp = tmp_path_factory.mktemp("one-figure-app")
    db = tmp / "app.db"
    shutil.copyfile(pristine, db)
    with start_app(db, tmp / "server.log") as url:
        yield url, db


def stats(db: Path, *args: str) -> dict[str, Any]:
    """`calibration stats --json` as a lead runs it."""
    cmd = [sys.executable, "-m", "calibration", "--db", str(db), "stats", "--json", *args]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def pct(x: float | None) -> str:
    assert x is not None
    return f"{100 * x:.1f}%"


def split_state(db: Path) -> tuple[Any, ...]:
    with store.session(db) as conn:
        s = split.current(conn)
        return (s.generation, tuple(sorted(s.holdout)), tuple(sorted(s.pending)), split.summary(conn).claims)


def header(page: Any) -> tuple[str, str]:
    """(the decision header's figure, its whole text)."""
    box = page.locator(".st-key-decision").first
    box.wait_for()
    settled(page)
    return box.locator('[data-testid="stMetricValue"]').first.inner_text().strip(), box.inner_text()


def direction_holds(text: str) -> None:
    """A direction whose interval excludes 0 is never "within chance" in the same block."""
    for lo, hi in DIRECTION.findall(text):
        if float(lo) > 0 or float(hi) < 0:
            assert "within chance" not in text, text


def nothing_left_said(text: str) -> list[str]:
    return [words for words in NOTHING_LEFT if words in text]


# Every drawn table of the main block: its row count and cells, from the grid's accessible
# table (Glide draws the cells on a canvas); None for a table in a closed expander.
_TABLES = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stDataFrame"]')]
  .map((e) => {
    const g = e.querySelector('table[role="grid"]');
    if (!g) return null;
    const rows = [...g.querySelectorAll('tr')]
      .map((r) => [...r.querySelectorAll('th, td')].map((c) => (c.textContent || '').trim()));
    return {count: Number(g.getAttribute('aria-rowcount')) - 1, header: rows[0], rows: rows.slice(1)};
  })"""


def drawn_tables(page: Any) -> list[dict[str, Any]]:
    """Every visible table, in page order (each scrolled into view: a grid draws when in view)."""
    for table in page.locator('[data-testid="stMain"] [data-testid="stDataFrame"]').all():
        if table.is_visible():
            table.scroll_into_view_if_needed()  # its accessible table fills in once on screen
            table.locator('table[role="grid"] th').first.wait_for(state="attached")
    return [t for t in page.evaluate(_TABLES) if t]


def tables(page: Any) -> dict[str, dict[str, Any]]:
    """The drawn tables by their first column's header (the last of each)."""
    return {t["header"][0]: t for t in drawn_tables(page)}


def main_text(page: Any) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def paragraph(text: str, start: str) -> str:
    """The line of `text` that starts with `start`."""
    return next(line for line in text.splitlines() if line.startswith(start))


def signed(page: Any) -> str:
    """The sign-in part of the page's URL: a new page load keeps the lead signed in."""
    keep = [(k, v) for k, v in parse_qsl(urlsplit(page.url).query) if k not in ("run", "cycle", "focus")]
    return urlencode(keep)


def test_every_screen_shows_one_figure_per_question(app: tuple[str, Path], tabs: Tabs) -> None:
    url, db = app
    run_json = stats(db, "--judge-run", GPT4)["assessment"]
    cycle_json = stats(db, "--cycle", CLOSED)["assessment"]
    assert run_json["scope"] == "every labeled claim of the run"
    assert cycle_json["scope"] == f"cycle {CLOSED}"
    for said in (run_json, cycle_json):
        direction_holds(f"{said['direction']['figures']}. {said['direction']['clause']}")

    # The Dashboard opens on the run reviewed last, not on the run imported last.
    page = open_as_lead(tabs, f"{url}/dashboard")
    figure, text = header(page)
    assert GPT4 in text and GPT35 not in text
    assert figure == pct(run_json["agreement"]["value"])
    assert f"agrees with reviewers on {figure} " in text, text
    direction_holds(text)
    counts = re.search(
        r"On (\d+) labeled claims?: (\d+) disagreeing(?: \((\d+) of them in the sealed)?", text
    )
    assert counts is not None, text
    labeled, disagreeing, sealed = (int(g or 0) for g in counts.groups())
    assert (labeled, disagreeing) == (run_json["n_claims"], run_json["n_disagreeing"])
    # Every other agreement on the page is the same figure, or names its basis beside it.
    page.get_by_text("How this is computed").first.click()
    page.get_by_text("Every figure, with what it is for").wait_for()
    settled(page)
    body = main_text(page)
    every = paragraph(body, "Agreement: ")
    assert every.startswith(f"Agreement: {figure} — 95% CI"), every
    assert "(design-based, answers as clusters)" in every, every
    raw = re.search(rf"raw ({PERCENT}) on the labeled claims as they are", every)
    assert raw is None or raw.group(1) == pct(run_json["raw_agreement"]["value"]), every
    direction = paragraph(body, "The judge calls SUPPORTED where")
    direction_holds(direction)
    assert run_json["direction"]["figures"] in direction and run_json["direction"]["figures"] in text
    assert ("within chance" in direction) == ("within chance" in text)
    # The tables fill in after the expander opens; under load a moment later than its text.
    assert wait_until(lambda: "category" in tables(page)), sorted(tables(page))
    drawn = tables(page)
    category = drawn["category"]
    if category["count"] == 1:  # the whole scope: the header's figure and count
        assert category["rows"][0][1:3] == [str(labeled), figure], category
    assert "Basis: each row's claims with a final human label" in body  # the breakdowns' basis
    # Every table's rows are the count its caption gives.
    claims_behind = [int(n) for n in re.findall(r"Claims behind: .* \((\d+)\)", body)]
    reason_tables = [t for t in drawn_tables(page) if t["header"][0] == "answer"][:-1]
    assert [t["count"] for t in reason_tables] == claims_behind, (claims_behind, reason_tables)
    listed = re.search(r"(\d+) disagreeing claims? listed", body)
    assert listed is not None and int(listed.group(1)) == disagreeing - sealed
    assert drawn["answer"]["count"] == disagreeing - sealed  # the Disagreements table, the last
    # The confusion matrix's caption counts what its cells (the per-class supports) sum to.
    matrix = re.search(
        r"^([\d,]+) (?:verdicts|labeled claims?)\b", body[body.index("Confusion matrix") :], re.M
    )
    assert matrix is not None
    assert int(matrix.group(1).replace(",", "")) == sum(int(r[-1]) for r in drawn["class"]["rows"])
    (trend_row,) = [r for r in drawn["cycle #"]["rows"] if r[1] == CLOSED]
    assert cut_off(page) == []
    page.screenshot(path=str(SCREENSHOTS / "one-figure-dashboard.png"))

    # The closed cycle as the Dashboard's scope: live, as `stats --cycle` computes it, and a
    # finished cycle of a run with unlabeled answers never says the run has nothing left.
    page.goto(f"{url}/dashboard?{signed(page)}&run={GPT4}&cycle={CLOSED}")
    figure_cycle, text_cycle = header(page)
    assert (
        f"On {cycle_json['n_claims']} labeled claims: {cycle_json['n_disagreeing']} disagreeing" in text_cycle
    )
    assert figure_cycle == pct(cycle_json["agreement"]["value"])
    direction_holds(text_cycle)
    assert nothing_left_said(main_text(page)) == []

    # Cycles: the closed cycle's frozen header is the figure Trend shows for it.
    page.goto(f"{url}/cycles?{signed(page)}&cycle={CLOSED}")
    page.get_by_text("Figures frozen at close").wait_for()
    frozen, text_frozen = header(page)
    assert trend_row[4:6] == [frozen, re.search(r"95% interval (\S+)", text_frozen).group(1)]
    page.get_by_text("How this is computed").first.click()
    settled(page)
    cycles_body = main_text(page)
    assert f"Cohen's kappa\n\n{trend_row[6]}\n" in cycles_body  # kappa as Trend shows it
    assert (
        "Raw agreement" in cycles_body and "(the labeled claims as they are, Wilson interval)" in cycles_body
    )
    direction_holds(text_frozen)
    assert nothing_left_said(cycles_body) == []
    cycle_table = tables(page)["Name"]
    assert len(cycle_table["rows"]) == cycle_table["count"] == 3
    assert cut_off(page) == []
    page.screenshot(path=str(SCREENSHOTS / "one-figure-cycles.png"))

    # The Judge lab: opening it seals nothing; its header is the run's assessment.
    before = split_state(db)
    page.goto(f"{url}/judge_lab?{signed(page)}&run={GPT4}&focus=disagreements")
    page.get_by_text("Where the run disagrees with reviewers").wait_for()
    page.locator('[data-testid="stMain"] [data-testid="stDataFrame"]').first.wait_for()  # its table
    settled(page)
    assert split_state(db) == before
    lab = main_text(page)
    line = paragraph(lab, f"{GPT4}, every labeled claim of the run: ")
    assert f"agreement {figure}, 95% CI" in line, line
    assert f"On {labeled} labeled claims: {disagreeing} disagreeing" in line, line
    direction_holds(lab)
    assert tables(page)["answer"]["count"] == disagreeing - sealed
    assert cut_off(page) == []
    page.screenshot(path=str(SCREENSHOTS / "one-figure-judge-lab.png"))

    # Home: the run's labeled claims are the claims in its figures.
    page.goto(f"{url}/?{signed(page)}")
    page.get_by_text("Judge runs").wait_for()
    page.locator('[data-testid="stDataFrame"]').first.wait_for()
    settled(page)
    home = {r[0]: r for r in tables(page)["judge run"]["rows"]}
    assert int(home[GPT4][3].replace(",", "")) == labeled, home
    assert cut_off(page) == []
