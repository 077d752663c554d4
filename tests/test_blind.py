"""The blind rule for a lead who also reviews (`roles.open_work`): which answers of open cycles a
person may still label, so that no lead page may show their judge verdicts to them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from calibration import cycles, review, roles, store
from calibration.importing import import_answers
from calibration.store import Database
from calibration.store.dashboard import OpenCycleWork

LEAD = "Lena Lead"


def work(
    name: str = "c",
    answers: tuple[str, ...] = ("a1", "a2", "a3"),
    *,
    assigned: tuple[tuple[str, str], ...] = (),
    started: tuple[str, ...] = (),
    revealed: tuple[tuple[str, str], ...] = (),
) -> OpenCycleWork:
    return OpenCycleWork(name, answers, assigned, started, revealed)


ASSIGNED = (("a1", "Lena Lead"), ("a2", "Lena Lead"), ("a3", "sam"))


@pytest.mark.parametrize(
    ("cycle", "identities", "expected"),
    [
        # Assigned work not committed is open; someone else's is not.
        (work(assigned=ASSIGNED), ["Lena Lead"], {"c": ("a1", "a2")}),
        (work(assigned=ASSIGNED), ["sam"], {"c": ("a3",)}),
        (work(assigned=ASSIGNED), ["rita"], {}),
        # A committed answer is revealed to its reviewer anyway, whichever cycle committed it.
        (work(assigned=ASSIGNED, revealed=(("a1", "Lena Lead"),)), ["Lena Lead"], {"c": ("a2",)}),
        (work(assigned=ASSIGNED, revealed=(("a1", "Lena Lead"), ("a2", "Lena Lead"))), ["Lena Lead"], {}),
        # Another reviewer's commit does not unblind this one.
        (work(assigned=ASSIGNED, revealed=(("a1", "sam"),)), ["Lena Lead"], {"c": ("a1", "a2")}),
        # Names compare by the one name rule: case, spacing, a zero-width space.
        (work(assigned=ASSIGNED), ["LENA  lead\u200b"], {"c": ("a1", "a2")}),
        # With OIDC any identity of the person counts (the assignment may name the email).
        (work(assigned=(("a2", "lena@example.org"),)), ["Lena Lead", "lena@example.org"], {"c": ("a2",)}),
        # Open to every reviewer: the work is the person's once they started on it.
        (work(), ["Lena Lead"], {}),
        (work(started=("sam",)), ["Lena Lead"], {}),
        (work(started=("lena lead",)), ["Lena Lead"], {"c": ("a1", "a2", "a3")}),
        (work(started=("Lena Lead",), revealed=(("a3", "Lena Lead"),)), ["Lena Lead"], {"c": ("a1", "a2")}),
        # Blank identities match nobody, not a blank reviewer.
        (work(assigned=(("a1", ""),), started=("",)), ["", "  "], {}),
    ],
)
def test_open_work_rule(
    cycle: OpenCycleWork, identities: list[str], expected: dict[str, tuple[str, ...]]
) -> None:
    found = roles.open_work([cycle], identities)
    assert {s.cycle: s.answers for s in found.spots} == expected
    assert bool(found) == bool(expected)
    assert found.answers == {a for v in expected.values() for a in v}


def test_open_work_keeps_cycle_order_and_touching_picks_the_spots_of_a_scope() -> None:
    found = roles.open_work(
        [work("one", ("b", "a"), assigned=(("a", "x"), ("b", "x"))), work("two", ("z",), started=("x",))],
        ["x"],
    )
    assert [s.answers for s in found.spots] == [("b", "a"), ("z",)]
    assert found.cycles == {"one", "two"}
    assert [s.cycle for s in found.touching(["a", "q"])] == ["one"]
    assert found.touching(["q"]) == ()


def test_the_refusal_names_the_cycles_and_counts() -> None:
    one = roles.BlindSpot("week\u202e 1", ("a",))
    text = roles.blind_refusal([one])
    assert "cycle 'week<U+202E> 1' (1 answer)" in text and "Review page" in text
    two = roles.blind_refusal([one, roles.BlindSpot("week 2", ("b", "c"))])
    assert "cycles 'week<U+202E> 1' (1 answer) and 'week 2' (2 answers)" in two


# ---------------------------------------------------------------- with the database


def _answers(prefix: str, n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"{prefix}{i}",
            "question": f"Q {i}?",
            "answer": f"Answer {i}.",
            "chunks": [{"id": "k1", "text": "Chunk."}],
            "claims": [{"id": "c1", "claim": f"Answer {i}.", "verdict": "SUPPORTED", "rationale": "r"}],
        }
        for i in range(n)
    ]


def _import(db: Database, path: Path, answers: list[dict[str, Any]], model: str) -> None:
    path.write_text(
        "".join(
            json.dumps({"judge_model": model, "judge_prompt_version": "v1", **a}) + "\n" for a in answers
        ),
        encoding="utf-8",
    )
    import_answers(db, path)


@pytest.fixture
def team_db(fresh_db: Database, tmp_path: Path) -> Database:
    """Run m-a@v1 over a0..a3 with an open cycle assigned to the lead (a0, a1) and sam (a2, a3);
    run m-b@v1 over b0..b1 only, with an open-to-all cycle."""
    _import(fresh_db, tmp_path / "a.jsonl", _answers("a", 4), "m-a")
    _import(fresh_db, tmp_path / "b.jsonl", _answers("b", 2), "m-b")
    cycles.create_cycle(
        fresh_db,
        name="team",
        judge_run="m-a@v1",
        size=4,
        seed=1,
        reviewers=[LEAD, "sam"],
        overlap=0.0,
        force=True,
    )
    cycles.create_cycle(fresh_db, name="open", judge_run="m-b@v1", size=2, seed=1, force=True)
    return fresh_db


def _ids(db: Database, cycle: str, run: str) -> tuple[int, int]:
    return cycles.get_cycle(db, cycle).id, store.find_judge_run(db, run).id


def test_open_work_of_the_database_follows_labels_commits_and_closing(team_db: Database) -> None:
    db = team_db
    cid, run_a = _ids(db, "team", "m-a@v1")
    mine = cycles.queue(db, cid, LEAD)
    assert len(mine) == 2
    found = roles.open_work_of(db, ["lena lead"])
    assert [(s.cycle, set(s.answers)) for s in found.spots] == [("team", set(mine))]
    # The run-level view and the cycle hold the open answers; run m-b's views do not.
    assert [s.cycle for s in roles.hidden_in_scope(db, found, run_id=run_a, cycle_id=None)] == ["team"]
    assert [s.cycle for s in roles.hidden_in_scope(db, found, run_id=run_a, cycle_id=cid)] == ["team"]
    open_id, run_b = _ids(db, "open", "m-b@v1")
    assert roles.hidden_in_scope(db, found, run_id=run_b, cycle_id=None) == ()
    assert roles.hidden_in_scope(db, found, run_id=run_b, cycle_id=open_id) == ()
    # A labeled but uncommitted answer is still open (the last look); committed, it is not.
    pk = store.claim_pk(db, mine[0], "c1")
    review.label(db, cycle_id=cid, reviewer=LEAD, claim_pk=pk, verdict="SUPPORTED")
    assert roles.open_work_of(db, [LEAD]).answers == set(mine)
    review.commit(db, cycle_id=cid, reviewer=LEAD, answer_id=mine[0])
    assert roles.open_work_of(db, [LEAD]).answers == {mine[1]}
    # Sam's work is sam's: the lead's commit changes nothing for him.
    assert roles.open_work_of(db, ["sam"]).answers == set(cycles.queue(db, cid, "sam"))
    # Labeling in the open-to-all cycle takes up its work.
    assert "open" not in roles.open_work_of(db, [LEAD]).cycles
    review.label(db, cycle_id=open_id, reviewer=LEAD, claim_pk=store.claim_pk(db, "b0", "c1"), kind="skip")
    spot = roles.open_work_of(db, [LEAD]).touching(["b0"])
    assert [s.cycle for s in spot] == ["open"] and set(spot[0].answers) == {"b0", "b1"}
    assert [
        s.cycle
        for s in roles.hidden_in_scope(db, roles.open_work_of(db, [LEAD]), run_id=run_b, cycle_id=None)
    ] == ["open"]
    # A closed cycle takes no labels: no open work in it.
    cycles.close_cycle(db, "team", force=True)
    assert roles.open_work_of(db, [LEAD]).cycles == {"open"}


def test_an_answer_without_claims_is_no_open_work(fresh_db: Database, tmp_path: Path) -> None:
    answers = _answers("a", 2)
    answers[1]["claims"] = []
    _import(fresh_db, tmp_path / "a.jsonl", answers, "m-a")
    cycles.create_cycle(fresh_db, name="c", judge_run="m-a@v1", size=2, seed=1, reviewers=[LEAD], force=True)
    assert roles.open_work_of(fresh_db, [LEAD]).answers == {"a0"}
