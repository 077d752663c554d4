"""The review card's verdict route (card_route.py): its token, its checks, and its writes, which
are the page's (`review.record_card`). Driven in process through Starlette's test client, on
each backend; the browser tests drive it from the real card."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.testclient import TestClient

from calibration import cycles, review, roster, store
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


def _post(
    client: TestClient,
    cycle_id: int,
    claims: dict[int, dict[str, Any]],
    *,
    reviewer: str = "ann",
    token: str | None = None,
    written: dict[int, list[int]] | None = None,
    **report: Any,
) -> Any:
    body = {
        "token": token if token is not None else card_route.card_token(cycle_id, reviewer, time.time()),
        "cycle": cycle_id,
        "reviewer": reviewer,
        "report": {"answer": "A1", "index": 1, "claims": claims, "written": written or {}, **report},
    }
    return client.post(card_route.PATH, json=body)


def _out(reply: Any) -> Any:
    """The reply's JSON, from its header when short (`card_route._reply`), else its body."""
    head = reply.headers.get(card_route.HEADER)
    return json.loads(head) if head else reply.json()


def _events(db: Database, reviewer: str = "ann") -> list[tuple[int, str, str | None]]:
    rows = db.execute(
        "SELECT claim_pk, kind, verdict FROM label_events WHERE reviewer = ? ORDER BY id", [reviewer]
    ).fetchall()
    return [tuple(r) for r in rows]


def test_a_verdict_is_written_once_and_the_reply_names_claims_only(
    cycle_db: Database, client: TestClient
) -> None:
    cid, (c1, c2) = _cycle(cycle_db), _pks(cycle_db)
    claims = {c1: {"seq": 5, "kind": "blind", "verdict": "CONTRADICTED"}}
    first = _post(client, cid, claims)
    assert first.status_code == 200
    out = _out(first)
    assert first.content == b""  # short: whole in the header, one write
    assert out["ack"] == {str(c1): 5} and not out["refused"] and out["failure"] is False
    event = out["written"][str(c1)]
    assert event[0] == 5
    said = first.headers[card_route.HEADER]
    assert "JUDGE-SAYS" not in said and "SUPPORTED" not in said  # nothing of the judge
    # The same report again, as the card sends it with the next key: written once.
    claims[c2] = {"seq": 6, "kind": "skip"}
    again = _post(client, cid, claims, written={c1: event})
    assert _out(again)["ack"] == {str(c1): 5, str(c2): 6}
    assert _events(cycle_db) == [(c1, "blind", "CONTRADICTED"), (c2, "skip", None)]


def test_a_later_key_builds_on_the_routes_own_write_and_the_page_knows_it(
    cycle_db: Database, client: TestClient
) -> None:
    """A changed verdict is a new event based on the route's write (never "another tab"); the
    page's report that carries `written` writes nothing twice (`review.record_card`)."""
    cid, (c1, _c2) = _cycle(cycle_db), _pks(cycle_db)
    first = _out(_post(client, cid, {c1: {"seq": 1, "kind": "blind", "verdict": "SUPPORTED"}}))
    changed = _out(
        _post(
            client, cid, {c1: {"seq": 2, "kind": "blind", "verdict": "UNSUPPORTED"}}, written=first["written"]
        )
    )
    assert changed["ack"] == {str(c1): 2} and not changed["refused"]
    report = review.parse_card_report(
        {
            "answer": "A1",
            "claims": {str(c1): {"seq": 2, "kind": "blind", "verdict": "UNSUPPORTED"}},
            "written": changed["written"],
        }
    )
    assert report is not None
    page = review.record_card(cycle_db, cycle_id=cid, reviewer="ann", report=report, done={})
    assert page.acked == {c1: 2} and page.written == {c1: tuple(changed["written"][str(c1)])}
    assert _events(cycle_db) == [(c1, "blind", "SUPPORTED"), (c1, "blind", "UNSUPPORTED")]


def test_a_label_another_tab_wrote_is_refused_not_overwritten(cycle_db: Database, client: TestClient) -> None:
    cid, (c1, _c2) = _cycle(cycle_db), _pks(cycle_db)
    review.label(cycle_db, cycle_id=cid, reviewer="ann", claim_pk=c1, verdict="UNSUPPORTED")
    out = _out(_post(client, cid, {c1: {"seq": 3, "kind": "blind", "verdict": "SUPPORTED", "base": None}}))
    assert out["refused"] == [c1] and out["ack"] == {}
    assert _events(cycle_db) == [(c1, "blind", "UNSUPPORTED")]


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"token": "not-a-token"}, 403),
        ({"reviewer": "bob"}, 403),  # ann's token, bob's name
        ({"cycle": 999}, 403),  # another cycle's
        ({"report_extra": {"actions": [{"seq": 9, "do": "commit"}]}}, 400),  # keys go through the page
        ({"report_extra": {"waiting": True}}, 400),
        ({"report_extra": {"retry": 1}}, 400),
        ({"report_extra": {"judge": "SUPPORTED"}}, 400),  # a field the report has not
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
        "report": {
            "answer": "A1",
            "claims": {str(c1): {"seq": 1, "kind": "blind", "verdict": "SUPPORTED"}},
            **change.get("report_extra", {}),
        },
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
    reply = _post(client, cid, {c1: {"seq": 1, "kind": "blind", "verdict": "SUPPORTED"}})
    assert reply.status_code == 403 and _events(cycle_db) == []
    assert _out(reply) == {
        "error": "signed out",
        "why": "A lead deactivated you: 'ann' is deactivated on the reviewer roster, "
        "and nothing more is recorded under it",
    }


def test_a_renamed_reviewer_writes_nothing_under_the_old_name(cycle_db: Database, client: TestClient) -> None:
    cid, (c1, c2) = _cycle(cycle_db), _pks(cycle_db)
    roster.add(cycle_db, "ann", by="lead")
    assert _post(client, cid, {c1: {"seq": 1, "kind": "blind", "verdict": "SUPPORTED"}}).status_code == 200
    roster.rename(cycle_db, "ann", "Ann Lee", by="lead")
    # The card opened as ann, its token still good, reports its next verdict.
    reply = _post(client, cid, {c2: {"seq": 2, "kind": "blind", "verdict": "SUPPORTED"}})
    assert reply.status_code == 403
    assert "renamed you to 'Ann Lee': sign in again as 'Ann Lee'" in _out(reply)["why"]
    assert _events(cycle_db) == [] and _events(cycle_db, "Ann Lee") == [(c1, "blind", "SUPPORTED")]


@pytest.mark.parametrize(("claims", "in_header"), [(2, True), (40, True), (300, False)])
def test_a_short_reply_comes_whole_in_a_header_a_long_one_as_the_body(claims: int, in_header: bool) -> None:
    seq = 1_796_000_000_000  # a key press number as the card makes them (milliseconds)
    ack = {str(100_000 + i): seq + i for i in range(claims)}
    reply = card_route._reply(200, ack=ack, written={}, refused=[], failure=False)
    assert (card_route.HEADER in reply.headers) is in_header
    assert (reply.body == b"") is in_header
    text = reply.headers[card_route.HEADER] if in_header else reply.body.decode()
    assert json.loads(text)["ack"] == ack


def test_a_verdict_does_not_wait_for_the_review_pages_turn(cycle_db: Database, client: TestClient) -> None:
    """The route is the fast way past a queue of page runs (`turns.turn`): with the turn held by
    a run that does not end, a verdict is written all the same."""
    from calibration_app import turns

    holding, release = threading.Event(), threading.Event()

    def page_run() -> None:
        with turns.turn():
            holding.set()
            release.wait(60)

    run = threading.Thread(target=page_run, daemon=True)
    run.start()
    try:
        assert holding.wait(30)
        cid, (c1, _c2) = _cycle(cycle_db), _pks(cycle_db)
        reply = _post(client, cid, {c1: {"seq": 3, "kind": "blind", "verdict": "SUPPORTED"}})
        assert reply.status_code == 200 and _out(reply)["ack"] == {str(c1): 3}
        assert _events(cycle_db) == [(c1, "blind", "SUPPORTED")]
        assert run.is_alive()  # the turn was held all along
    finally:
        release.set()
        run.join(30)


@pytest.mark.parametrize(
    ("where", "value", "says"),
    [
        ("claim", 2**70, "less than or equal to 9223372036854775807"),  # beyond the engines' BIGINT
        ("claim", "9" * 5000, "claims.999"),  # too long to read as a number at all
        ("ms", 10**30, "ms: Input should be less than or equal to"),
        ("seq", 2**64, "seq: Input should be less than or equal to"),
        ("base", 2**63, "base: Input should be less than or equal to"),
        ("note", "a\x00b", "note: Value error, contains a NUL character (U+0000) at character 2"),
        ("cycle", 2**70, "cycle: Input should be less than or equal to"),
    ],
)
def test_numbers_the_engines_cannot_hold_and_a_nul_are_refused_with_a_sentence(
    cycle_db: Database, client: TestClient, where: str, value: Any, says: str
) -> None:
    cid, (c1, _c2) = _cycle(cycle_db), _pks(cycle_db)
    entry: dict[str, Any] = {"seq": 1, "kind": "blind", "verdict": "SUPPORTED"}
    if where in ("ms", "seq", "base", "note"):
        entry[where] = value
    body = {
        "token": card_route.card_token(cid, "ann", time.time()),
        "cycle": value if where == "cycle" else cid,
        "reviewer": "ann",
        "report": {"answer": "A1", "claims": {str(value if where == "claim" else c1): entry}},
    }
    reply = client.post(
        card_route.PATH, content=json.dumps(body), headers={"Content-Type": "application/json"}
    )
    assert reply.status_code == 400
    said = _out(reply)["error"]
    assert said.startswith("the review card sent a malformed report (") and says in said
    assert len(said) < 300  # one sentence, whatever the body held
    assert _events(cycle_db) == []


def test_a_time_over_a_day_is_kept_as_a_day_with_its_verdict(cycle_db: Database, client: TestClient) -> None:
    """A card left open over a weekend: its verdict is written, its time taken as a day (a time
    is what a label took; refusing it would refuse the verdict, each time the card sent it)."""
    cid, (c1, c2) = _cycle(cycle_db), _pks(cycle_db)
    claims = {
        c1: {"seq": 1, "kind": "blind", "verdict": "SUPPORTED", "ms": 2**62},
        c2: {"seq": 2, "kind": "blind", "verdict": "SUPPORTED", "ms": 1234},
    }
    assert _post(client, cid, claims).status_code == 200
    times = cycle_db.execute("SELECT claim_pk, duration_ms FROM label_events ORDER BY id").fetchall()
    assert [tuple(t) for t in times] == [(c1, review.MAX_LABEL_MS), (c2, 1234)]
    assert review.MAX_LABEL_MS == 24 * 3600 * 1000


def test_the_page_refuses_the_same_report_with_the_same_sentence() -> None:
    from calibration.errors import InputError

    raw = {
        "answer": "A1",
        "claims": {"1": {"seq": 1, "kind": "blind", "verdict": "SUPPORTED", "note": "\x00"}},
    }
    with pytest.raises(InputError, match=r"malformed report \(claims\.1\.note: .*NUL character"):
        review.parse_card_report(raw)
