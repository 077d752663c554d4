"""The sealed holdout on the pages: opening the Judge lab seals nothing; the lab's Seal button
seals it, and the Judge lab, the Dashboard and Cycles then name and count it alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from calibration import split, store
from calibration.importing import import_answers, import_labels
from calibration_app import signin

ROOT = Path(__file__).resolve().parent.parent
WICE = ROOT / "data" / "wice"


@pytest.fixture
def wice_file(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The WiCE runs and labels in a SQLite file the app opens, no split made."""
    with store.session(db_path) as db:
        import_answers(db, WICE / "wice_judged_gpt4.jsonl")
        import_answers(db, WICE / "wice_judged_gpt35.jsonl")
        import_labels(db, WICE / "wice_human_labels.csv")
    monkeypatch.setenv("CALIBRATION_DB", str(db_path))
    return db_path


def open_page(page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.session_state[signin.REVIEWER_KEY] = "lead"
    return at.switch_page(page).run()


def texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def disagreement_line(at: AppTest) -> str:
    return next(t for t in texts(at) if "disagreeing" in t and "listed" in t)


def split_state(path: Path) -> tuple[object, ...]:
    with store.session(path) as db:
        return split.fingerprint(db)


def test_opening_the_judge_lab_seals_nothing(wice_file: Path) -> None:
    before = split_state(wice_file)
    listed = disagreement_line(open_page("pages/dashboard.py"))
    lab = open_page("pages/judge_lab.py")
    assert split_state(wice_file) == before
    with store.session(wice_file) as db:
        assert split.current(db).generation is None
    assert any(b.label.startswith("Seal a holdout: 50 labeled answers of 100 (50%)") for b in lab.button)
    assert "Sealed holdout: none yet, so every labeled claim is listed." in texts(lab)
    # Only the Seal button's words promise a seal; no holdout scope before there is one.
    scopes = set(lab.selectbox(key="lab_scope").options)
    assert "All human-labeled claims (tuning and holdout)" in scopes and "Holdout claims only" not in scopes
    assert disagreement_line(open_page("pages/dashboard.py")) == listed


def test_the_seal_button_seals_and_every_screen_counts_it_alike(wice_file: Path) -> None:
    lab = open_page("pages/judge_lab.py")
    next(b for b in lab.button if b.label.startswith("Seal a holdout:")).click().run()
    with store.session(wice_file) as db:
        s = split.current(db)
        sentence = split.summary(db).sentence()
        claims = len(store.split.claim_keys(db, s.holdout))
    assert s.generation is not None and s.sealed and len(s.holdout) == 50
    assert sentence.startswith(f"Sealed holdout: 50 answers, {claims} claims, set aside")
    assert sentence in texts(lab)
    assert {m.label: m.value for m in lab.metric}["Claims in the sealed holdout"] == f"{claims:,}"
    assert not any(b.label.startswith("Seal a holdout:") for b in lab.button)
    dash = open_page("pages/dashboard.py")
    assert sentence in texts(dash)
    assert "more are in the sealed holdout" in disagreement_line(dash)
    cycles_page = open_page("pages/cycles.py")
    assert sentence in texts(cycles_page)
    # The Cycles page's own count is another thing, named so: answers reserved for holdout cycles.
    assert {m.label: m.value for m in cycles_page.metric}["Reserved answers"] == "0"
    assert "Holdout answers" not in {m.label for m in cycles_page.metric}
