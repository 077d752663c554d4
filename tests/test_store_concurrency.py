"""Writers on several connections to one PostgreSQL database at once (two app servers, two
tabs): each write holds what its check is based on, so racing writes give the result of one
after the other, and a write never waits for another that touches none of its rows.

Each race: the first write stays open on one connection while the second runs on another; the
test awaits the moment the second waits for a lock (PostgreSQL's own view, `pg_stat_activity`),
then lets the first commit."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from calibration import cycles, identity, review, roster, store
from calibration.errors import ConflictError, NotRevealedError, SignedOutError, StaleLabelError
from calibration.importing import import_answers
from calibration.store import Database
from tests.conftest import DEMO
from tests.pg_server import Cluster

WAIT_S = 30.0  # a bound on awaiting the other connection's step, never a figure of the test


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> Iterator[str]:
    """A fresh PostgreSQL database holding the demo answers."""
    url = pg_cluster.new_database()
    with store.session(url) as db:
        import_answers(db, DEMO)
    yield url
    pg_cluster.drop_database(url)


def _await(done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, "the awaited step did not happen"
        time.sleep(0.01)


def _waiting_for_a_lock(watch: Database) -> bool:
    """Another connection to this database is waiting for a lock right now."""
    row = watch.execute(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    ).fetchone()
    return bool(row[0])


class _Other:
    """`action` run on a connection of its own, on a thread; what it returned or raised."""

    def __init__(self, url: str, action: Callable[[Database], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None

        def run() -> None:
            try:
                with store.session(url) as db:
                    self.result = action(db)
            except BaseException as exc:  # looked at by the test
                self.error = exc

        self.thread = threading.Thread(target=run)
        self.thread.start()

    def outcome(self) -> Any:
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.result


def _event_verdicts(db: Database, claim: int) -> list[str]:
    """The verdicts of the claim's label events, in the order they were written."""
    rows = db.execute(
        "SELECT verdict FROM label_events WHERE claim_pk = :claim ORDER BY id", {"claim": claim}
    )
    return [r[0] for r in rows]


def _race(url: str, first: Callable[[Database], Any], second: Callable[[Database], Any]) -> _Other:
    """`first` written and still open when `second` starts on another connection; committed once
    `second` waits for it. Returns `second`, to ask its outcome."""
    with store.session(url) as db, store.session(url) as watch, store.write(db):
        first(db)
        other = _Other(url, second)
        _await(lambda: _waiting_for_a_lock(watch) or not other.thread.is_alive())
    return other


def test_two_tabs_racing_a_verdict_on_one_claim_store_one_and_refuse_the_other(pg_url: str) -> None:
    with store.session(pg_url) as db:
        claim = store.claim_pk(db, "Q1", "c1")

    def verdict(value: str) -> Callable[[Database], Any]:
        return lambda db: store.record_label(
            db, claim=claim, reviewer="ann", kind="blind", verdict=value, based_on=store.BasedOn(None)
        )

    second = _race(pg_url, verdict("SUPPORTED"), verdict("CONTRADICTED"))
    with pytest.raises(StaleLabelError):
        second.outcome()
    with store.session(pg_url) as db:
        assert _event_verdicts(db, claim) == ["SUPPORTED"]
        assert store.label_state(db, claim, "ann").final_verdict == "SUPPORTED"  # type: ignore[union-attr]


def test_two_tabs_racing_a_changed_verdict_store_one_change(pg_url: str) -> None:
    with store.session(pg_url) as db:
        claim = store.claim_pk(db, "Q1", "c2")
        shown = store.record_label(db, claim=claim, reviewer="ann", kind="blind", verdict="SUPPORTED")
    based_on = store.BasedOn(shown.event_id)

    def change(value: str) -> Callable[[Database], Any]:
        return lambda db: store.record_label(
            db, claim=claim, reviewer="ann", kind="blind", verdict=value, based_on=based_on
        )

    second = _race(pg_url, change("UNSUPPORTED"), change("CONTRADICTED"))
    with pytest.raises(StaleLabelError):
        second.outcome()
    with store.session(pg_url) as db:
        assert _event_verdicts(db, claim) == ["SUPPORTED", "UNSUPPORTED"]


def test_two_servers_creating_one_judge_run_at_once_create_it_once(pg_url: str) -> None:
    made: list[int | None] = []

    def get_or_create(db: Database) -> int | None:
        return store.run_id(db, "racer", "v1", origin="import")

    second = _race(pg_url, lambda db: made.append(get_or_create(db)), get_or_create)
    assert second.outcome() == made[0]
    with store.session(pg_url) as db:
        rows = db.execute("SELECT count(*) FROM judge_runs WHERE judge_model = 'racer'").fetchone()
        assert rows[0] == 1


def test_two_tabs_signing_in_one_new_person_at_once_bind_them_once(pg_url: str) -> None:
    person = identity.Person("https://id.example", "s-rita", 1000, "rita@example.org")
    second = _race(pg_url, lambda db: identity.sign_in(db, person), lambda db: identity.sign_in(db, person))
    assert second.outcome() == "rita@example.org"
    with store.session(pg_url) as db:
        rows = db.execute("SELECT name FROM reviewer_identities").fetchall()
        assert [r[0] for r in rows] == ["rita@example.org"]


def test_two_leads_creating_one_cycle_name_at_once_create_one(pg_url: str) -> None:
    def create(db: Database) -> Any:
        return cycles.create_cycle(db, name="week 1", size=2, force=True, reviewers=["ann", "ben"])

    second = _race(pg_url, create, create)
    with pytest.raises(ConflictError, match="already exists"):
        second.outcome()
    with store.session(pg_url) as db:
        assert db.execute("SELECT count(*) FROM cycles").fetchone()[0] == 1


def _answers_file(path: Path) -> Path:
    record = {
        "id": "new1",
        "question": "A question?",
        "answer": "An answer.",
        "judge_model": "bulk",
        "judge_prompt_version": "v1",
        "chunks": [{"id": "k1", "text": "A chunk."}],
        "claims": [{"id": "c1", "claim": "A claim.", "verdict": "SUPPORTED"}],
    }
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return path


def test_a_verdict_does_not_wait_for_an_import_open_on_another_connection(
    pg_url: str, tmp_path: Path
) -> None:
    # The import stays open (uncommitted) on one connection while the verdict is written and
    # committed on another, on the same thread: had the verdict waited for the import, it could
    # only have failed (DatabaseBusyError, after the busy timeout), never returned.
    with store.session(pg_url) as importer, store.session(pg_url) as reviewer:
        claim = store.claim_pk(reviewer, "Q1", "c1")
        with store.write(importer):
            import_answers(importer, _answers_file(tmp_path / "new.jsonl"))
            state = store.record_label(
                reviewer, claim=claim, reviewer="ann", kind="blind", verdict="SUPPORTED"
            )
            assert state.final_verdict == "SUPPORTED"
            assert importer.in_transaction
        assert store.label_state(reviewer, claim, "ann").final_verdict == "SUPPORTED"  # type: ignore[union-attr]


def test_a_first_verdict_racing_an_import_batch_is_refused_as_stale(pg_url: str) -> None:
    # The batch's label goes in first: a tab's verdict based on "no label yet" waits for the
    # batch, then sees the imported label and is refused, as if it came after the batch.
    with store.session(pg_url) as db:
        claim = store.claim_pk(db, "Q2", "c1")

    def import_batch(db: Database) -> None:
        assert store.labels.record_new_imports(db, [(claim, "ann", "SUPPORTED", "[]", None)], None) == []

    def verdict(db: Database) -> Any:
        return store.record_label(
            db,
            claim=claim,
            reviewer="ann",
            kind="blind",
            verdict="CONTRADICTED",
            based_on=store.BasedOn(None),
        )

    with pytest.raises(StaleLabelError):
        _race(pg_url, import_batch, verdict).outcome()


def test_an_import_batch_racing_a_first_verdict_sets_its_label_aside(pg_url: str) -> None:
    # The verdict goes in first: the batch waits for it, writes nothing of that label and
    # returns it to be written last (`LabelStaging.finish`); the reviewer's verdict stays.
    with store.session(pg_url) as db:
        claim = store.claim_pk(db, "Q2", "c2")
    imported = (claim, "ann", "SUPPORTED", "[]", None)

    def verdict(db: Database) -> Any:
        return store.record_label(db, claim=claim, reviewer="ann", kind="blind", verdict="CONTRADICTED")

    second = _race(pg_url, verdict, lambda db: store.labels.record_new_imports(db, [imported], None))
    assert second.outcome() == [imported]
    with store.session(pg_url) as db:
        events = db.execute(
            "SELECT kind, verdict FROM label_events WHERE claim_pk = :claim", {"claim": claim}
        )
        assert [tuple(e) for e in events] == [("blind", "CONTRADICTED")]


def test_two_reviewers_labeling_one_claim_at_once_do_not_wait_for_each_other(pg_url: str) -> None:
    # As for the import above: the second verdict commits while the first is still open.
    with store.session(pg_url) as ann, store.session(pg_url) as ben:
        claim = store.claim_pk(ann, "Q1", "c1")
        with store.write(ann):
            store.record_label(ann, claim=claim, reviewer="ann", kind="blind", verdict="SUPPORTED")
            state = store.record_label(ben, claim=claim, reviewer="ben", kind="blind", verdict="UNSUPPORTED")
            assert (state.final_verdict, ann.in_transaction) == ("UNSUPPORTED", True)
        assert store.label_state(ben, claim, "ann").final_verdict == "SUPPORTED"  # type: ignore[union-attr]


def test_a_commit_racing_a_changed_verdict_on_its_answer_sees_the_change(pg_url: str) -> None:
    with store.session(pg_url) as db:
        cycle = cycles.create_cycle(db, name="c", size=100, force=True)
        claims = [pk for (pk,) in db.execute("SELECT id FROM claims WHERE answer_id = 'Q1' ORDER BY id")]
        for pk in claims:
            review.label(db, cycle_id=cycle.id, reviewer="ann", claim_pk=pk, verdict="SUPPORTED")

    def skip(db: Database) -> Any:
        return review.label(db, cycle_id=cycle.id, reviewer="ann", claim_pk=claims[0], kind="skip")

    def commit(db: Database) -> Any:
        return review.commit(db, cycle_id=cycle.id, reviewer="ann", answer_id="Q1")

    with pytest.raises(NotRevealedError):
        _race(pg_url, skip, commit).outcome()
    with store.session(pg_url) as db:
        assert db.execute("SELECT count(*) FROM answer_reveals").fetchone()[0] == 0


def test_a_verdict_racing_a_rename_of_its_reviewer_is_refused_not_left_behind(pg_url: str) -> None:
    with store.session(pg_url) as db:
        roster.add(db, "ann")
        claim = store.claim_pk(db, "Q1", "c1")
        store.record_label(db, claim=claim, reviewer="ann", kind="blind", verdict="SUPPORTED")

    def verdict(db: Database) -> Any:
        return store.record_label(db, claim=claim, reviewer="ann", kind="blind", verdict="CONTRADICTED")

    second = _race(pg_url, lambda db: roster.rename(db, "ann", "anne"), verdict)
    with pytest.raises(SignedOutError):
        second.outcome()
    with store.session(pg_url) as db:
        events = db.execute(
            "SELECT reviewer, verdict FROM label_events WHERE claim_pk = :claim", {"claim": claim}
        )
        assert [tuple(e) for e in events] == [("anne", "SUPPORTED")]


def test_two_servers_making_the_sign_in_secret_at_once_keep_the_first(pg_url: str) -> None:
    key = store.SIGNIN_SECRET_SETTING
    kept: list[str] = []
    second = _race(
        pg_url,
        lambda db: kept.append(store.setting_or_new(db, key, "first")),
        lambda db: store.setting_or_new(db, key, "second"),
    )
    assert second.outcome() == kept[0] == "first"


def test_two_servers_making_the_first_split_at_once_make_one(pg_url: str) -> None:
    def make(db: Database) -> int:
        return store.split.create_split(
            db, after=None, seed=1, holdout_share=0.2, stratify_run_id=None, created_by=None
        )

    made: list[int] = []
    second = _race(pg_url, lambda db: made.append(make(db)), make)
    assert second.outcome() == made[0]
    with store.session(pg_url) as db:
        assert db.execute("SELECT count(*) FROM claim_splits").fetchone()[0] == 1
