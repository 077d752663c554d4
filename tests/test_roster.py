"""The reviewer roster (calibration.roster): add, rename, deactivate, and the cycles it feeds."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from calibration import card, cycles, review, roles, roster, store
from calibration.cli import main
from calibration.errors import ConflictError, InputError, NotFoundError, SignedOutError
from calibration.fmt import plural
from calibration.store import Database
from calibration.store import cycles as cycle_store
from tests.test_cycles import build_run, click, texts
from tests.test_cycles import page as cycles_page


@pytest.fixture
def labeled_db(demo_db: Database) -> Database:
    """The demo, a cycle assigned to vera and bob, and vera's verdicts on her first answer."""
    for name in ("vera", "bob"):
        roster.add(demo_db, name, by="lead")
    cyc = cycles.create_cycle(
        demo_db,
        name="w1",
        size=4,
        seed=3,
        reviewers=["vera", "bob"],
        overlap=0.0,
        force=True,
        created_by="lead",
    )
    answer = review.queue(demo_db, cyc.id, "vera")[0]
    card = review.load_card(demo_db, answer, "vera")
    for claim in card.claims:
        review.label(demo_db, cycle_id=cyc.id, reviewer="vera", claim_pk=claim.pk, verdict="SUPPORTED")
    return demo_db


def _labels(db: Database, reviewer: str) -> list[tuple[int, str]]:
    return [
        tuple(r)
        for r in db.execute(
            "SELECT claim_pk, blind_verdict FROM human_labels WHERE reviewer = :reviewer ORDER BY claim_pk",
            {"reviewer": reviewer},
        )
    ]


def test_rename_carries_the_labels_and_the_work_along(labeled_db: Database) -> None:
    before = _labels(labeled_db, "vera")
    cyc = cycles.get_cycle(labeled_db, "w1")
    queue = review.queue(labeled_db, cyc.id, "vera")
    assert before and queue

    new, moved = roster.rename(labeled_db, "Vera", "Vera Nowak", by="lead")

    assert (new, moved) == ("Vera Nowak", len(before))
    assert _labels(labeled_db, "Vera Nowak") == before and _labels(labeled_db, "vera") == []
    assert review.queue(labeled_db, cyc.id, "Vera Nowak") == queue
    assert set(cycles.get_cycle(labeled_db, "w1").reviewers) == {"Vera Nowak", "bob"}
    assert "vera" not in roles.known_reviewers(labeled_db)
    assert roster.active_names(labeled_db) == ["bob", "Vera Nowak"]
    (event, *_) = roster.history(labeled_db)
    assert (event.kind, event.name, event.new_name, event.labels_moved, event.by) == (
        "rename",
        "vera",
        "Vera Nowak",
        len(before),
        "lead",
    )


def test_rename_onto_another_reviewer_is_refused_and_changes_nothing(labeled_db: Database) -> None:
    before = _labels(labeled_db, "vera")
    with pytest.raises(ConflictError, match="merge two people's labels"):
        roster.rename(labeled_db, "vera", "BOB")
    with pytest.raises(NotFoundError, match="did you mean 'vera'"):
        roster.rename(labeled_db, "verra", "Vera N")
    assert _labels(labeled_db, "vera") == before


@pytest.mark.parametrize(
    ("typed", "closest"),
    [
        ("Anna.", "Anna"),
        ("anna ", None),  # the same name: accepted as "Anna"
        ("A.N.N.A", "Anna"),
        ("Änna", "Anna"),
        ("Anna-Lee", "Anna Lee"),
        ("\u0410\u043d\u043d\u0430", "Anna"),  # "Анна": the name in another alphabet
    ],
)
def test_near_duplicates_and_look_alikes_are_refused_with_the_closest_name(
    fresh_db: Database, typed: str, closest: str | None
) -> None:
    roster.add(fresh_db, "Anna")
    roster.add(fresh_db, "Anna Lee")
    if closest is None:
        assert roles.sign_in(fresh_db, typed) == "Anna"
        return
    for attempt in (lambda: roster.add(fresh_db, typed), lambda: roles.sign_in(fresh_db, typed)):
        with pytest.raises(InputError, match=repr(closest)):
            attempt()
    assert roster.active_names(fresh_db) == ["Anna", "Anna Lee"]


def test_a_different_name_is_added(fresh_db: Database) -> None:
    roster.add(fresh_db, "Anna")
    assert roster.add(fresh_db, "Ann") == "Ann"
    with pytest.raises(ConflictError, match="on the roster already"):
        roster.add(fresh_db, "ANN")


def test_cycles_pick_from_the_roster_once_it_holds_anyone(demo_db: Database) -> None:
    roster.add(demo_db, "vera")
    roster.add(demo_db, "bob")
    roster.deactivate(demo_db, "bob", by="lead")
    for typed, says in [
        (["vera", "Verra"], "'Verra' is not on the reviewer roster; did you mean 'vera'"),
        (["vera", "bob"], "'bob' is deactivated"),
    ]:
        with pytest.raises(InputError, match=says):
            cycles.create_cycle(demo_db, name="w", size=4, seed=1, reviewers=typed, overlap=0.0, force=True)
    assert cycles.list_cycles(demo_db) == []  # refused before anything was created
    made = cycles.create_cycle(demo_db, name="w", size=4, seed=1, reviewers=["VERA"], overlap=0.0, force=True)
    assert made.reviewers == ("vera",)


def test_a_deactivated_reviewer_cannot_sign_in_and_keeps_the_labels(labeled_db: Database) -> None:
    before = _labels(labeled_db, "vera")
    roster.deactivate(labeled_db, "Vera", by="lead")
    with pytest.raises(InputError, match="deactivated"):
        roles.sign_in(labeled_db, "vera")
    assert _labels(labeled_db, "vera") == before
    roster.set_active(labeled_db, "vera", True)
    assert roles.sign_in(labeled_db, "vera") == "vera"
    assert [e.kind for e in roster.history(labeled_db)][:2] == ["reactivate", "deactivate"]


def test_an_empty_roster_leaves_cycle_names_free(demo_db: Database) -> None:
    made = cycles.create_cycle(
        demo_db, name="w", size=4, seed=1, reviewers=["someone"], overlap=0.0, force=True
    )
    assert made.reviewers == ("someone",)
    assert cycle_store.known_reviewer_names(demo_db) == ["someone"]


def test_the_cli_keeps_the_roster(
    labeled_db: Database, db_url: str | Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _labels(labeled_db, "vera")
    assert main(["--db", str(db_url), "reviewer", "add", "Anna", "--by", "lead"]) == 0
    assert main(["--db", str(db_url), "reviewer", "add", "Anna."]) == 1
    assert "'Anna.' differs from the existing reviewer 'Anna'" in capsys.readouterr().err
    assert main(["--db", str(db_url), "reviewer", "rename", "vera", "Vera N"]) == 0
    assert f"{plural(len(before), 'label')} moved along" in capsys.readouterr().out
    assert main(["--db", str(db_url), "reviewer", "deactivate", "anna"]) == 0
    assert main(["--db", str(db_url), "reviewer", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert [(e["name"], e["active"]) for e in listed] == [("bob", True), ("Vera N", True), ("Anna", False)]
    assert _labels(labeled_db, "Vera N") == before


@pytest.fixture
def run_db(fresh_db: Database) -> Database:
    """A database holding run judge@v1 over 40 answers (tests.test_cycles.build_run)."""
    build_run(fresh_db)
    return fresh_db


@pytest.mark.sqlite_only  # the page opens the file the test names
def test_the_cycles_page_keeps_the_roster_and_its_form_picks_from_it(
    run_db: Database, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = cycles_page(db_path, monkeypatch)
    assert not at.exception
    for name in ("Anna", "Borys"):
        at.text_input(key="roster_add").input(name)
        click(at, "Add")
    at.text_input(key="roster_add").input("Anna.")
    click(at, "Add")
    assert [e.value for e in at.error] == ["The roster did not change."]
    assert any("differs from the existing reviewer 'Anna'" in t for t in texts(at))
    # The cycle form now picks from the roster: no typed names.
    assert at.multiselect(key="cycle_reviewer_pick").options == ["Anna", "Borys"]
    at.text_input(key="cycle_name").input("week 1")
    at.multiselect(key="cycle_reviewer_pick").set_value(["Borys"])
    click(at, "Create cycle")
    assert not at.exception and cycles.get_cycle(run_db, "week 1").reviewers == ("Borys",)
    at.selectbox(key="roster_who").set_value("Borys")
    at.text_input(key="roster_new").input("Borys K")
    click(at, "Rename")
    assert "renamed to Borys K: 0 labels moved along" in texts(at)
    assert cycles.get_cycle(run_db, "week 1").reviewers == ("Borys K",)
    assert next((e.kind, e.by) for e in roster.history(run_db)) == ("rename", "lead")


def test_label_history_stays_append_only_but_for_a_recorded_rename(labeled_db: Database) -> None:
    (event_id,) = labeled_db.execute("SELECT id FROM label_events WHERE reviewer = 'vera' LIMIT 1").fetchone()
    for sql in [
        "UPDATE label_events SET note = 'changed' WHERE id = :id",
        "UPDATE label_events SET reviewer = 'mallory' WHERE id = :id",  # no rename names mallory
        "DELETE FROM label_events WHERE id = :id",
    ]:
        with pytest.raises(labeled_db.integrity_errors, match="append-only"):
            labeled_db.execute(sql, {"id": event_id})
    roster.rename(labeled_db, "vera", "Vera N")
    with pytest.raises(labeled_db.integrity_errors, match="append-only"):  # a rename moves names only
        labeled_db.execute(
            "UPDATE label_events SET note = 'x', reviewer = 'Vera N' WHERE id = :id", {"id": event_id}
        )


# ---------------------------------------------------------------- every write checks who writes


def _written(db: Database) -> tuple[int, int, int]:
    """How many label events, current labels and commits the database holds."""
    return tuple(
        int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        for table in ("label_events", "human_labels", "answer_reveals")
    )  # type: ignore[return-value]


def _writes(db: Database, name: str) -> dict[str, Callable[[], object]]:
    """Every write of a reviewer's work, as `name`, on vera's first answer of cycle w1."""
    cyc = cycles.get_cycle(db, "w1").id
    answer = review.queue(db, cyc, "bob")[0] if name == "bob" else _first_answer(db)
    pk = review.load_card(db, answer, "bob").claims[0].pk
    verdict = {"cycle_id": cyc, "reviewer": name, "claim_pk": pk}
    return {
        "verdict": lambda: review.label(db, **verdict, verdict="CONTRADICTED", note="n", evidence=()),
        "skip": lambda: review.label(db, **verdict, kind="skip"),
        "unclear": lambda: review.label(db, **verdict, kind="unclear"),
        "record_label": lambda: store.record_label(
            db, claim=pk, reviewer=name, kind="blind", verdict="SUPPORTED"
        ),
        "commit": lambda: review.commit(db, cycle_id=cyc, reviewer=name, answer_id=answer),
        "reconcile": lambda: review.reconcile(db, cycle_id=cyc, reviewer=name, claim_pk=pk, choice="keep"),
        "card": lambda: card.handle(
            db,
            cycle_id=cyc,
            reviewer=name,
            request=card.LabelRequest(
                do="label", answer=answer, claim=pk, kind="blind", verdict="UNSUPPORTED"
            ),
        ),
    }


def _first_answer(db: Database) -> str:
    """vera's first answer of w1, the one `labeled_db` labeled (in her queue under any name)."""
    (answer,) = db.execute(
        "SELECT DISTINCT c.answer_id FROM label_events e JOIN claims c ON c.id = e.claim_pk"
    ).fetchone()
    return str(answer)


WRITES = ["verdict", "skip", "unclear", "record_label", "commit", "reconcile", "card"]


@pytest.mark.parametrize("write", WRITES)
def test_a_deactivated_reviewer_writes_nothing(labeled_db: Database, write: str) -> None:
    roster.deactivate(labeled_db, "vera", by="lead")
    before = _written(labeled_db)
    with pytest.raises(SignedOutError, match="A lead deactivated you: 'vera' is deactivated") as refused:
        _writes(labeled_db, "vera")[write]()
    assert refused.value.renamed_to is None
    assert _written(labeled_db) == before


@pytest.mark.parametrize("write", WRITES)
def test_a_renamed_reviewer_writes_nothing_under_the_old_name(labeled_db: Database, write: str) -> None:
    roster.rename(labeled_db, "vera", "Vera Nowak", by="lead")
    before = _written(labeled_db)
    with pytest.raises(SignedOutError, match="renamed you to 'Vera Nowak': sign in again as") as refused:
        _writes(labeled_db, "vera")[write]()
    assert refused.value.renamed_to == "Vera Nowak"
    assert _written(labeled_db) == before
    assert labeled_db.execute("SELECT count(*) FROM label_events WHERE reviewer = 'vera'").fetchone()[0] == 0


def test_the_new_name_writes_and_the_old_one_cannot_sign_in(labeled_db: Database) -> None:
    roster.rename(labeled_db, "vera", "Vera Nowak", by="lead")
    roster.rename(labeled_db, "Vera Nowak", "V. Nowak", by="lead")  # renamed twice: the last name
    with pytest.raises(InputError, match=r"sign in again as 'V\. Nowak'"):
        roles.sign_in(labeled_db, "vera")
    assert roles.deactivated(labeled_db, "Vera Nowak") is not None
    _writes(labeled_db, "V. Nowak")["skip"]()
    assert labeled_db.execute("SELECT kind FROM label_events ORDER BY id DESC").fetchone()[0] == "skip"


def test_a_rename_to_another_spelling_retires_the_old_spelling(labeled_db: Database) -> None:
    roster.rename(labeled_db, "vera", "Vera", by="lead")
    with pytest.raises(SignedOutError, match="sign in again as 'Vera'"):
        _writes(labeled_db, "vera")["skip"]()
    _writes(labeled_db, "Vera")["skip"]()
    assert roles.sign_in(labeled_db, "vera") == "Vera"  # typed as before: the new spelling


def test_names_off_the_roster_and_an_old_name_added_again_write_freely(labeled_db: Database) -> None:
    roster.rename(labeled_db, "vera", "Vera Nowak", by="lead")
    roster.add(labeled_db, "vera", by="lead")  # a new reviewer by the old name
    _writes(labeled_db, "vera")["record_label"]()
    _writes(labeled_db, "carl")["record_label"]()  # not on the roster: the names stay free
    assert {r[0] for r in labeled_db.execute("SELECT reviewer FROM label_events")} >= {"vera", "carl"}


def test_an_empty_roster_leaves_every_name_free_to_write(demo_db: Database) -> None:
    cyc = cycles.create_cycle(demo_db, name="w", size=4, seed=1, reviewers=["ann"], overlap=0.0, force=True)
    answer = review.queue(demo_db, cyc.id, "ann")[0]
    pk = review.load_card(demo_db, answer, "ann").claims[0].pk
    review.label(demo_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk, verdict="SUPPORTED")
    assert demo_db.execute("SELECT reviewer FROM label_events").fetchall() == [("ann",)]
