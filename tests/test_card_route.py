"""The review card's route (calibration_app/card_route.py → calibration.card): its token, its
checks, and every write of the card (verdicts, the commit, reconcile choices, the next answer).
Driven in process through Starlette's test client, on each backend; the browser tests drive it
from the real card."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.testclient import TestClient

from calibration import card, cycles, review, roster, store
from calibration.importing import import_answers
from calibration.store import Database
from calibration_app import card_route

ANSWER = {
    "id": "A1",
    "question": "When?",
    "answer": "Ten days. Five percent.",
    "chunks": [{"id": "k1", "text": "Ten days."}],
    "claims": [
        {"id": "c1", "claim": "Ten days.", "verdict": "SUPPORTED", "rationale": "JUDGE-SAYS-c1"},
        {"id": "c2", "claim": "Five percent.", "verdict": "UNSUPPORTED", "rationale": "JUDGE-SAYS-c2"},
    ],
    "judge_model": "judge-x",
    "judge_prompt_version": "v1",
}


@pytest.fixture
def cycle_db(
    fresh_db: Database, db_url: str | Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Database:
    """One answer of two claims in an open cycle, in the database the route opens."""
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps(ANSWER) + "\n", encoding="utf-8")
    import_answers(fresh_db, path)
    cycles.create_cycle(
        fresh_db,
        name="c",
        judge_run="judge-x@v1",
        size=1,
        seed=1,
        strategy="random",
        overlap=0.0,
        force=True,
        created_by="t",
    )
    monkeypatch.setenv("CALIBRATION_DB", str(db_url))
    return fresh_db


@pytest.fixture
def client() -> Iterator[TestClient]:
    app = Starlette(routes=[Route(card_route.PATH, card_route.post_card, methods=["POST"])])
    with TestClient(app) as c:
        yield c


def _cycle(db: Database) -> int:
    return cycles.get_cycle(db, "c").id


def _pks(db: Database) -> list[int]:
    return [store.claim_pk(db, "A1", c) for c in ("c1", "c2")]


def _post(client: TestClient, cycle_id: int, request: dict[str, Any], *, reviewer: str = "ann") -> Any:
    body = {
        "token": card_route.card_token(cycle_id, reviewer, time.time()),
        "cycle": cycle_id,
        "reviewer": reviewer,
        "request": {"answer": "A1", **request},
    }
    return client.post(card_route.PATH, json=body)


def _label(claim: int, verdict: str | None = "SUPPORTED", **more: Any) -> dict[str, Any]:
    kind = more.pop("kind", "blind")
    return {"do": "label", "claim": claim, "kind": kind, "verdict": verdict, **more}


def _out(reply: Any) -> Any:
    """The reply's JSON, from its header when short (`card_route._reply`), else its body."""
    head = reply.headers.get(card_route.HEADER)
    return json.loads(head) if head else reply.json()


def _events(db: Database, reviewer: str = "ann") -> list[tuple[int, str, str | None]]:
    rows = db.execute(
        "SELECT claim_pk, kind, verdict FROM label_events WHERE reviewer = :reviewer ORDER BY id",
        {"reviewer": reviewer},
    ).fetchall()
    return [tuple(r) for r in rows]


def test_a_verdict_is_written_once_and_the_reply_names_its_event_only(
    cycle_db: Database, client: TestClient
) -> None:
    cid, (c1, _c2) = _cycle(cycle_db), _pks(cycle_db)
    first = _post(client, cid, _label(c1, "CONTRADICTED"))
    assert first.status_code == 200
    assert first.content == b""  # short: whole in the header, one write
    out = _out(first)
    assert out["ok"] is True and isinstance(out["event"], int) and set(out) == {"ok", "event"}
    # The same request again (its reply was lost): found written, acknowledged, not written twice.
    again = _out(_post(client, cid, _label(c1, "CONTRADICTED")))
    assert again == out
    assert _events(cycle_db) == [(c1, "blind", "CONTRADICTED")]


def test_a_later_key_builds_on_the_cards_own_write(cycle_db: Database, client: TestClient) -> None:
    cid, (c1, c2) = _cycle(cycle_db), _pks(cycle_db)
    first = _out(_post(client, cid, _label(c1, "SUPPORTED")))
    changed = _out(_post(client, cid, _label(c1, "UNSUPPORTED", base=first["event"])))
    assert changed["ok"] and changed["event"] > first["event"]
    skipped = _out(_post(client, cid, _label(c2, None, kind="skip", evidence=["k1"], note=" why ")))
    assert skipped["ok"]
    assert _events(cycle_db) == [(c1, "blind", "SUPPORTED"), (c1, "blind", "UNSUPPORTED"), (c2, "skip", None)]


def test_a_label_another_tab_wrote_is_refused_not_overwritten(cycle_db: Database, client: TestClient) -> None:
    cid, (c1, _c2) = _cycle(cycle_db), _pks(cycle_db)
    review.label(cycle_db, cycle_id=cid, reviewer="ann", claim_pk=c1, verdict="UNSUPPORTED")
    out = _out(_post(client, cid, _label(c1, "SUPPORTED", base=None)))
    assert out["ok"] is False and "labeled in another tab" in out["refused"]
    shown = {c["pk"]: c for c in out["view"]["claims"]}
    assert shown[c1]["verdict"] == "UNSUPPORTED"  # the card shows the label as it is now
    assert _events(cycle_db) == [(c1, "blind", "UNSUPPORTED")]


def test_the_view_is_blind_until_the_commit(cycle_db: Database, client: TestClient) -> None:
    cid, (c1, c2) = _cycle(cycle_db), _pks(cycle_db)
    e1 = _out(_post(client, cid, _label(c1, "SUPPORTED")))["event"]
    refused = _out(_post(client, cid, {"do": "commit", "seen": {c1: e1, c2: None}}))
    assert refused["ok"] is False and "before committing" in refused["refused"]
    assert "JUDGE-SAYS" not in json.dumps(refused) and "reveal" not in refused["view"]
    e2 = _out(_post(client, cid, _label(c2, "SUPPORTED")))["event"]
    done = _out(_post(client, cid, {"do": "commit", "seen": {c1: e1, c2: e2}}))
    assert done["ok"] and done["view"]["mode"] == "reveal"
    rows = {r["pk"]: r for r in done["view"]["reveal"]["rows"]}
    assert rows[c2]["judge"] == "UNSUPPORTED" and rows[c2]["rationale"] == "JUDGE-SAYS-c2"
    assert done["view"]["reveal"]["selected"] == c2


def test_a_commit_on_a_stale_view_is_refused_like_a_stale_label(
    cycle_db: Database, client: TestClient
) -> None:
    """This tab shows SUPPORTED on both claims; another tab changed claim 1 meanwhile."""
    cid, (c1, c2) = _cycle(cycle_db), _pks(cycle_db)
    e1 = _out(_post(client, cid, _label(c1, "SUPPORTED")))["event"]
    e2 = _out(_post(client, cid, _label(c2, "SUPPORTED")))["event"]
    review.label(
        cycle_db, cycle_id=cid, reviewer="ann", claim_pk=c1, verdict="UNSUPPORTED", based_on=store.BasedOn(e1)
    )
    out = _out(_post(client, cid, {"do": "commit", "seen": {c1: e1, c2: e2}}))
    assert out["ok"] is False and out["refused"] == card.STALE_VIEW
    assert {c["pk"]: c["verdict"] for c in out["view"]["claims"]}[c1] == "UNSUPPORTED"
    assert not review.load_card(cycle_db, "A1", "ann").revealed


def test_reconcile_then_next_answer(cycle_db: Database, client: TestClient) -> None:
    cid, (c1, c2) = _cycle(cycle_db), _pks(cycle_db)
    e1 = _out(_post(client, cid, _label(c1, "SUPPORTED")))["event"]
    e2 = _out(_post(client, cid, _label(c2, "SUPPORTED")))["event"]
    assert _out(_post(client, cid, {"do": "commit", "seen": {c1: e1, c2: e2}}))["ok"]
    waits = _out(_post(client, cid, {"do": "next"}))
    assert waits["ok"] is False and "Claim 2 still needs your decision" in waits["refused"]
    stale = _out(_post(client, cid, {"do": "reconcile", "claim": c2, "choice": "keep", "base": None}))
    assert stale["ok"] is False
    kept = _out(_post(client, cid, {"do": "reconcile", "claim": c2, "choice": "keep", "base": e2}))
    assert kept["ok"] and kept["view"]["reveal"]["rows"][1]["reconciled"] == "keep"
    assert _out(_post(client, cid, {"do": "next"})) == {"ok": True, "done": True}  # a queue of one answer
    assert _events(cycle_db)[-1][:2] == (c2, "keep")


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"token": "not-a-token"}, 403),
        ({"reviewer": "bob"}, 403),  # ann's token, bob's name
        ({"cycle": 999}, 403),  # another cycle's
        ({"request_extra": {"judge": "SUPPORTED"}}, 400),  # a field the request has not
        ({"request_extra": {"do": "adjudicate"}}, 400),  # no such request
        ({"request_extra": {"kind": "keep"}}, 400),  # a reconcile choice is not a verdict
    ],
)
def test_what_the_route_refuses_writes_nothing(
    cycle_db: Database, client: TestClient, change: dict[str, Any], status: int
) -> None:
    cid, (c1, _c2) = _cycle(cycle_db), _pks(cycle_db)
    token = card_route.card_token(cid, "ann", time.time())
    body: dict[str, Any] = {
        "token": change.get("token", token),
        "cycle": change.get("cycle", cid),
        "reviewer": change.get("reviewer", "ann"),
        "request": {"answer": "A1", **_label(c1), **change.get("request_extra", {})},
    }
    reply = client.post(card_route.PATH, json=body)
    assert reply.status_code == status
    assert _events(cycle_db, "ann") == [] and _events(cycle_db, "bob") == []


def test_a_token_is_this_processs_for_its_cycle_and_reviewer_until_it_expires() -> None:
    now = time.time()
    token = card_route.card_token(3, "ann", now)
    assert card_route.check_card_token(3, "ann", token, now)
    assert not card_route.check_card_token(4, "ann", token, now)
    assert not card_route.check_card_token(3, "Ann", token, now)
    assert not card_route.check_card_token(3, "ann", token, now + 13 * 3600)  # past its working day


def test_bodies_that_are_not_json_or_too_large_are_refused(cycle_db: Database, client: TestClient) -> None:
    form = client.post(card_route.PATH, content=b"token=x", headers={"Content-Type": "text/plain"})
    assert form.status_code == 415
    big = client.post(
        card_route.PATH,
        content=b"{" + b" " * card_route.MAX_BODY + b"}",
        headers={"Content-Type": "application/json"},
    )
    assert big.status_code == 413
    broken = client.post(card_route.PATH, content=b"{", headers={"Content-Type": "application/json"})
    assert broken.status_code == 400
    assert _events(cycle_db) == []


def test_a_deactivated_reviewer_is_refused(cycle_db: Database, client: TestClient) -> None:
    cid, (c1, _c2) = _cycle(cycle_db), _pks(cycle_db)
    roster.add(cycle_db, "ann", by="lead")
    roster.deactivate(cycle_db, "ann", by="lead")
    reply = _post(client, cid, _label(c1))
    assert reply.status_code == 403 and _events(cycle_db) == []
    assert _out(reply) == {
        "error": "signed out",
        "why": "A lead deactivated you: 'ann' is deactivated on the reviewer roster, "
        "and nothing more is recorded under it",
    }


def test_a_renamed_reviewer_writes_nothing_under_the_old_name(cycle_db: Database, client: TestClient) -> None:
    cid, (c1, c2) = _cycle(cycle_db), _pks(cycle_db)
    roster.add(cycle_db, "ann", by="lead")
    assert _post(client, cid, _label(c1)).status_code == 200
    roster.rename(cycle_db, "ann", "Ann Lee", by="lead")
    # The card opened as ann, its token still good, sends its next verdict.
    reply = _post(client, cid, _label(c2))
    assert reply.status_code == 403
    assert "renamed you to 'Ann Lee': sign in again as 'Ann Lee'" in _out(reply)["why"]
    assert _events(cycle_db) == [] and _events(cycle_db, "Ann Lee") == [(c1, "blind", "SUPPORTED")]


@pytest.mark.parametrize(("size", "in_header"), [(20, True), (1900, True), (2100, False)])
def test_a_short_reply_comes_whole_in_a_header_a_long_one_as_the_body(size: int, in_header: bool) -> None:
    reply = card_route._reply(200, ok=False, refused="x" * size)
    assert (card_route.HEADER in reply.headers) is in_header
    assert (reply.body == b"") is in_header
    text = reply.headers[card_route.HEADER] if in_header else reply.body.decode()
    assert json.loads(text)["refused"] == "x" * size


@pytest.mark.parametrize(
    ("where", "value", "says"),
    [
        ("claim", 2**70, "claim: Input should be less than or equal to 9223372036854775807"),
        ("claim", "9" * 5000, "request.label.claim"),  # too long to read as a number at all
        ("ms", 10**30, "ms: Input should be less than or equal to"),
        ("base", 2**63, "base: Input should be less than or equal to"),
        ("note", "a\x00b", "note: Value error, contains a NUL character (U+0000) at character 2"),
        ("cycle", 2**70, "cycle: Input should be less than or equal to"),
    ],
)
def test_numbers_the_engines_cannot_hold_and_a_nul_are_refused_with_a_sentence(
    cycle_db: Database, client: TestClient, where: str, value: Any, says: str
) -> None:
    cid, (c1, _c2) = _cycle(cycle_db), _pks(cycle_db)
    request = _label(c1)
    if where in ("ms", "base", "note", "claim"):
        request[where] = value
    body = {
        "token": card_route.card_token(cid, "ann", time.time()),
        "cycle": value if where == "cycle" else cid,
        "reviewer": "ann",
        "request": {"answer": "A1", **request},
    }
    reply = client.post(
        card_route.PATH, content=json.dumps(body), headers={"Content-Type": "application/json"}
    )
    assert reply.status_code == 400
    said = _out(reply)["error"]
    assert said.startswith("the review card sent a malformed request (") and says in said
    assert len(said) < 300  # one sentence, whatever the body held
    assert _events(cycle_db) == []


def test_a_time_over_a_day_is_kept_as_a_day_with_its_verdict(cycle_db: Database, client: TestClient) -> None:
    """A card left open over a weekend: its verdict is written, its time taken as a day (a time
    is what a label took; refusing it would refuse the verdict, each time the card sent it)."""
    cid, (c1, c2) = _cycle(cycle_db), _pks(cycle_db)
    assert _post(client, cid, _label(c1, ms=2**62)).status_code == 200
    assert _post(client, cid, _label(c2, ms=1234)).status_code == 200
    times = cycle_db.execute("SELECT claim_pk, duration_ms FROM label_events ORDER BY id").fetchall()
    assert [tuple(t) for t in times] == [(c1, review.MAX_LABEL_MS), (c2, 1234)]
    assert review.MAX_LABEL_MS == 24 * 3600 * 1000
