"""Judge lab: the HTTP client against a real local server, and lab runs in the store.

Every end-to-end test talks to `judge_stub.StubServer`, a real HTTP server on 127.0.0.1
started by the test, so retries, timeouts and the concurrency bound are exercised
through httpx's real transport rather than a mock.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import httpx
import pytest

from calibration import judge, store
from calibration.cli.common import FLAGS
from calibration.cli.judge import summary_lines
from calibration.errors import (
    ConflictError,
    EndpointUnreachable,
    InputError,
    JudgeError,
    NotFoundError,
    ReplyError,
    phrase,
)
from calibration.fmt import plural
from calibration.importing import import_answers, import_labels
from calibration.judge import client as judge_client
from calibration.models import Verdict
from calibration.store import lab as lab_store
from tests.final_label_oracle import final_human_label
from tests.records import PairedClaim, compare_of

from .judge_stub import StubServer

ROOT = Path(__file__).resolve().parents[1]
N_ANSWERS = 6
LABELED = 4  # answers A1..A4 carry human labels; A5, A6 do not


def _answer(i: int) -> dict:
    aid = f"A{i}"
    question = f"Question {i}: what is the lead time?"
    if i == 1:
        # Untrusted text with braces and placeholder look-alikes must reach the judge verbatim.
        question = "Что значит {answer}, {0} и {{claims}}? \\1 $&"
    return {
        "id": aid,
        "question": question,
        "answer": f"Answer {i}. Ten working days. After payment.",
        "chunks": [
            {"id": "S1", "text": f"Chunk one of {aid}: delivery is ten working days."},
            {"id": "S2", "text": "Chunk two: {chunks} counted from payment."},
        ],
        "claims": [
            {"id": f"{aid}.c1", "claim": "Ten working days.", "verdict": "SUPPORTED"},
            {"id": f"{aid}.c2", "claim": "After payment.", "verdict": "UNSUPPORTED"},
            {"id": f"{aid}.c3", "claim": "Free shipping.", "verdict": "SUPPORTED"},
        ],
        "judge_model": "old-judge",
        "judge_prompt_version": "v0",
    }


# The HTTP client's and the page controls' behaviour (retries, replies, endpoints, keys): what the
# store keeps of a run is checked on both backends by the other tests.
client_only = pytest.mark.sqlite_only


@pytest.fixture(autouse=True)
def _test_key_variable_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    # The tests read their key from a variable of their own, allowed as an operator would.
    monkeypatch.setenv("CALIBRATION_JUDGE_KEY_ENVS", "CALIBRATION_TEST_JUDGE_KEY")


@pytest.fixture
def lab_db(db_url: str | Path, tmp_path: Path) -> str | Path:
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "\n".join(json.dumps(_answer(i), ensure_ascii=False) for i in range(1, N_ANSWERS + 1)),
        encoding="utf-8",
    )
    labels = tmp_path / "labels.csv"
    rows = ["answer_id,claim_id,verdict,reviewer"]
    for i in range(1, LABELED + 1):
        rows += [
            f"A{i},A{i}.c1,SUPPORTED,ann",
            f"A{i},A{i}.c2,SUPPORTED,ann",
            f"A{i},A{i}.c3,UNSUPPORTED,ann",
        ]
    labels.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with store.session(db_url) as db:
        import_answers(db, answers)
        import_labels(db, labels)
    return db_url


def config(stub: StubServer, **kw) -> judge.JudgeConfig:
    opts = dict(
        base_url=stub.base_url,
        model="lab-judge",
        # Long enough that a loaded machine never times a reply out; the test of timeouts
        # sets its own (0.3 s, against a 2 s hang).
        timeout=30.0,
        backoff_base=0.01,
        backoff_max=0.05,
        concurrency=4,
        api_key_env="CALIBRATION_TEST_JUDGE_KEY",
    )
    opts.update(kw)
    return judge.JudgeConfig(**opts)


def template(version: str = "grounding-v1") -> judge.PromptTemplate:
    """The shipped template under another version name (a run per test variant)."""
    return judge.PromptTemplate(version, judge.load_template("grounding-v1").text)


def verdicts_of(db_url: str | Path, run_id: int) -> dict[str, tuple[str, str | None]]:
    with store.session(db_url) as db:
        return {
            cid: (v, raw)
            for cid, v, raw in db.execute(
                """SELECT c.claim_id, v.verdict, v.raw_verdict FROM judge_verdicts v
               JOIN claims c ON c.id = v.claim_pk WHERE v.run_id = :run_id""",
                {"run_id": run_id},
            )
        }


def calls_of(db_url: str | Path, run_id: int) -> dict[str, dict]:
    with store.session(db_url) as db:
        return {
            r["answer_id"]: r
            for r in db.query("SELECT * FROM judge_calls WHERE run_id = :run_id", {"run_id": run_id})
        }


def labeled_claim_ids(n: int = LABELED) -> set[str]:
    return {f"A{i}.c{j}" for i in range(1, n + 1) for j in (1, 2, 3)}


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def add_cycle(db_url: str | Path, name: str, answer_ids: list[str]) -> None:
    """A cycle over `answer_ids` sampled from the imported run old-judge@v0."""
    with store.session(db_url) as db, store.write(db):
        old = store.find_judge_run(db, "old-judge@v0")
        cycle = db.execute(
            "INSERT INTO cycles (name, judge_run_id, strategy, seed, size, created_at) "
            "VALUES (:name, :judge_run_id, 'random', 1, :size, :created_at) RETURNING id",
            {"name": name, "judge_run_id": old.id, "size": len(answer_ids), "created_at": store.now()},
        ).fetchone()[0]
        for pos, aid in enumerate(answer_ids):
            db.execute(
                "INSERT INTO cycle_answers (cycle_id, answer_id, position, inclusion_prob) "
                "VALUES (:cycle_id, :answer_id, :position, 0.5)",
                {"cycle_id": cycle, "answer_id": aid, "position": pos},
            )


# ---------------------------------------------------------------- end to end


def test_lab_run_stores_verdicts_as_a_new_run(lab_db: str | Path) -> None:
    verdicts = {"A1.c2": "CONTRADICTED", "A2.c3": "UNSUPPORTED"}
    with StubServer(verdicts=verdicts) as stub:
        summary = judge.run_lab(config(stub), template(), db_path=lab_db)

    run = summary.run
    assert (run.judge_model, run.prompt_version, run.origin) == ("lab-judge", "grounding-v1", "lab")
    assert not summary.resumed
    assert (summary.answers_in_scope, summary.answers_ok, summary.answers_failed) == (LABELED, LABELED, 0)
    assert summary.claims_judged == 3 * LABELED
    assert stub.count == LABELED  # one call per answer, all claims in it
    got = verdicts_of(lab_db, run.id)
    assert set(got) == labeled_claim_ids()
    assert got["A1.c2"][0] == "CONTRADICTED" and got["A2.c3"][0] == "UNSUPPORTED"
    assert got["A3.c1"][0] == "SUPPORTED"
    # Tokens: the stub reports 100 + 20 per call.
    assert summary.usage.total_tokens == 120 * LABELED
    assert summary.totals.total_tokens == 120 * LABELED
    assert summary.totals.prompt_tokens == 100 * LABELED

    calls = calls_of(lab_db, run.id)
    assert {c["status"] for c in calls.values()} == {"ok"}
    a1 = calls["A1"]
    assert a1["attempts"] == 1 and a1["error"] is None and a1["total_tokens"] == 120
    # The stored prompt is exactly what the judge received, braces and all.
    first = next(r for r in stub.requests if r.key == "A1")
    assert a1["prompt"] == first.messages[0]["content"]
    assert "Что значит {answer}, {0} и {{claims}}? \\1 $&" in a1["prompt"]
    assert "Chunk two: {chunks} counted from payment." in a1["prompt"]
    assert json.loads(a1["response"])["verdicts"][1]["verdict"] == "CONTRADICTED"
    assert first.body["temperature"] == 0.0 and first.body["model"] == "lab-judge"

    with store.session(lab_db) as db:
        lab = db.execute(
            "SELECT template, template_sha256, base_url, params, scope, finished_at "
            "FROM judge_lab_runs WHERE run_id = :run_id",
            {"run_id": run.id},
        ).fetchone()
        old = store.find_judge_run(db, "old-judge@v0")
    assert lab[0] == template().text and lab[2] == stub.base_url and lab[4] == "labeled"
    assert json.loads(lab[3])["concurrency"] == 4 and lab[5] is not None
    # The imported run is untouched, and it is the default baseline.
    assert summary.baseline == old
    assert len(verdicts_of(lab_db, old.id)) == 3 * N_ANSWERS


@client_only
def test_transient_failures_are_retried(lab_db: str | Path) -> None:
    script = {"A1": [("429", 0), "500", "ok"], "A2": [("hang", 2.0), "ok"], "A3": ["500", "500"]}
    with StubServer(script) as stub:
        summary = judge.run_lab(config(stub, timeout=0.3), template(), db_path=lab_db)
        counts = {k: len(stub.requests_for(k)) for k in ("A1", "A2", "A3", "A4")}

    assert counts == {"A1": 3, "A2": 2, "A3": 3, "A4": 1}
    assert summary.answers_ok == LABELED and summary.answers_failed == 0
    calls = calls_of(lab_db, summary.run.id)
    assert [calls[a]["attempts"] for a in ("A1", "A2", "A3", "A4")] == [3, 2, 3, 1]
    http = json.loads(calls["A1"]["exchanges"])[0]["http"]
    assert [h["status"] for h in http] == [429, 500, 200]
    # The hang (2 s) was cut at the 0.3 s timeout, not waited out: else its reply would be a 200.
    assert "timeout" in json.loads(calls["A2"]["exchanges"])[0]["http"][0]["error"]


@client_only
def test_retry_after_is_honoured(lab_db: str | Path) -> None:
    with StubServer({"A1": [("429", 1)]}) as stub:
        judge.run_lab(config(stub, concurrency=1), template(), db_path=lab_db)
        first, second = stub.requests_for("A1")
    assert second.started - first.started >= 0.95


def test_retry_after_parsing() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert judge.parse_retry_after("2") == 2.0
    assert judge.parse_retry_after("0.5") == 0.5
    assert judge.parse_retry_after("-3") == 0.0
    assert judge.parse_retry_after(
        format_datetime(now + timedelta(seconds=30), usegmt=True), now=now
    ) == pytest.approx(30)
    assert judge.parse_retry_after(format_datetime(now - timedelta(seconds=30), usegmt=True), now=now) == 0.0
    assert judge.parse_retry_after("soon") is None
    assert judge.parse_retry_after(None) is None


def test_retries_exhausted_is_a_failure_without_verdicts(lab_db: str | Path) -> None:
    with StubServer({"A2": ["500"] * 10}) as stub:
        summary = judge.run_lab(config(stub, max_attempts=3), template(), db_path=lab_db)
        assert len(stub.requests_for("A2")) == 3
    assert summary.answers_failed == 1 and summary.failures[0][0] == "A2"
    call = calls_of(lab_db, summary.run.id)["A2"]
    assert call["status"] == "failed" and "HTTP 500" in call["error"] and call["attempts"] == 3
    assert not any(c.startswith("A2.") for c in verdicts_of(lab_db, summary.run.id))


@client_only
def test_malformed_reply_then_good_reply_recovers(lab_db: str | Path) -> None:
    with StubServer({"A1": ["malformed", "ok"]}) as stub:
        summary = judge.run_lab(config(stub), template(), db_path=lab_db)
        first, second = stub.requests_for("A1")
    assert summary.answers_ok == LABELED
    # The follow-up shows the model its own reply and what was wrong with it.
    assert [m["role"] for m in second.messages] == ["user", "assistant", "user"]
    assert second.messages[0] == first.messages[0]
    assert second.messages[1]["content"].startswith('{"verdicts": [{"id": "oops"')
    assert "not valid JSON" in second.messages[2]["content"]
    call = calls_of(lab_db, summary.run.id)["A1"]
    assert call["status"] == "ok" and call["attempts"] == 2 and call["total_tokens"] == 240
    rounds = json.loads(call["exchanges"])
    assert "not valid JSON" in rounds[0]["error"] and "error" not in rounds[1]
    assert rounds[1]["sent"] == second.messages[2]["content"]
    assert {c for c in verdicts_of(lab_db, summary.run.id) if c.startswith("A1.")} == {
        "A1.c1",
        "A1.c2",
        "A1.c3",
    }


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        ("malformed", "malformed", "not valid JSON"),
        ("missing", "missing", "no verdict for claim id(s) 'A3.c3'"),
        ("extra", "extra", "not one of the listed claims"),
        ("bad_verdict", "missing", "no verdict for claim id(s) 'A3.c3'"),
    ],
)
@client_only
def test_bad_reply_twice_is_a_failure_and_no_verdict_is_guessed(
    lab_db: str | Path, first: str, second: str, message: str
) -> None:
    with StubServer({"A3": [first, second]}) as stub:
        summary = judge.run_lab(config(stub), template(), db_path=lab_db)
        assert len(stub.requests_for("A3")) == 2  # one corrective retry, no more
    assert summary.answers_failed == 1 and summary.answers_ok == LABELED - 1
    call = calls_of(lab_db, summary.run.id)["A3"]
    assert call["status"] == "failed"
    assert call["error"].startswith("invalid reply after a corrective retry") and message in call["error"]
    got = verdicts_of(lab_db, summary.run.id)
    assert not any(c.startswith("A3.") for c in got)
    assert len(got) == 3 * (LABELED - 1)


def test_resume_after_interruption_does_not_pay_twice(lab_db: str | Path) -> None:
    class Interrupted(Exception):
        pass

    def stop_after_two(p: judge.LabProgress) -> None:
        if p.done == 2:
            raise Interrupted

    with StubServer() as stub:
        with pytest.raises(Interrupted):
            judge.run_lab(config(stub, concurrency=1), template(), db_path=lab_db, progress=stop_after_two)
        first_keys = [r.key for r in stub.requests]
        with store.session(lab_db) as db:
            run = store.find_judge_run(db, "lab-judge@grounding-v1")
            done = lab_store.ok_answer_ids(db, run.id)
            unfinished = db.execute(
                "SELECT finished_at FROM judge_lab_runs WHERE run_id = :run_id", {"run_id": run.id}
            ).fetchone()[0]
        assert first_keys == ["A1", "A2"] and done == {"A1", "A2"} and unfinished is None

        summary = judge.run_lab(config(stub, concurrency=3), template(), db_path=lab_db)
        second_keys = [r.key for r in stub.requests[len(first_keys) :]]

    assert summary.resumed and summary.run.id == run.id
    assert sorted(second_keys) == ["A3", "A4"]  # A1, A2 were not requested again
    assert (summary.answers_skipped, summary.answers_ok) == (2, 2)
    assert summary.totals.answers_ok == LABELED and summary.totals.total_tokens == 120 * LABELED
    assert set(verdicts_of(lab_db, run.id)) == labeled_claim_ids()


def test_a_ui_stop_mid_flight_keeps_what_was_stored(lab_db: str | Path) -> None:
    # Streamlit's stop and rerun arrive as BaseException subclasses raised inside st.* calls,
    # i.e. inside the progress callback, with other requests still in flight.
    class ScriptStop(BaseException):
        pass

    def stop(p: judge.LabProgress) -> None:
        if p.done == 1:
            raise ScriptStop

    with StubServer(latency=0.05) as stub:
        with pytest.raises(ScriptStop):
            judge.run_lab(config(stub, concurrency=3), template(), db_path=lab_db, progress=stop, scope="all")
        with store.session(lab_db) as db:
            run = store.find_judge_run(db, "lab-judge@grounding-v1")
            done = lab_store.ok_answer_ids(db, run.id)
        n = stub.count
        summary = judge.run_lab(config(stub, concurrency=3), template(), db_path=lab_db, scope="all")
        again = {r.key for r in stub.requests[n:]}
    assert 1 <= len(done) < N_ANSWERS and not (again & done)
    assert summary.totals.answers_ok == N_ANSWERS and summary.totals.claims_judged == 3 * N_ANSWERS


def test_resume_retries_failed_answers_only(lab_db: str | Path) -> None:
    with StubServer({"A2": ["500"] * 3}) as stub:
        first = judge.run_lab(config(stub, max_attempts=3), template(), db_path=lab_db)
        assert first.answers_failed == 1
        n = stub.count
        second = judge.run_lab(config(stub, max_attempts=3), template(), db_path=lab_db)
        assert [r.key for r in stub.requests[n:]] == ["A2"]  # only the failed answer, once
    assert second.answers_ok == 1 and second.answers_skipped == LABELED - 1
    assert second.totals.answers_failed == 0 and second.totals.claims_judged == 3 * LABELED
    assert calls_of(lab_db, second.run.id)["A2"]["status"] == "ok"


@client_only
def test_concurrency_bound_is_respected(lab_db: str | Path) -> None:
    with StubServer(latency=0.05) as stub:
        summary = judge.run_lab(config(stub, concurrency=3), template(), db_path=lab_db, scope="all")
        assert stub.max_in_flight == 3  # used, and never exceeded
    assert summary.answers_ok == N_ANSWERS


def test_concurrency_bound_holds_for_direct_client_use() -> None:
    # Many callers, one client: the bound lives in the client, not in the worker count.
    async def go(stub: StubServer) -> None:
        async with judge.ChatClient(config(stub, concurrency=2)) as client:
            await asyncio.gather(*(client.complete([{"role": "user", "content": "hi"}]) for _ in range(8)))

    with StubServer(latency=0.03) as stub:
        asyncio.run(go(stub))
        assert stub.count == 8 and stub.max_in_flight == 2


@client_only
def test_progress_is_reported_per_answer(lab_db: str | Path) -> None:
    seen: list[judge.LabProgress] = []
    with StubServer() as stub:
        judge.run_lab(config(stub), template(), db_path=lab_db, progress=seen.append)
    assert [p.done for p in seen] == list(range(LABELED + 1))
    assert seen[-1].total == LABELED and seen[-1].claims == 3 * LABELED
    assert seen[-1].fraction == 1.0 and seen[-1].tokens == 120 * LABELED


@client_only
def test_lenient_reply_shapes_are_accepted(lab_db: str | Path) -> None:
    with StubServer({"A1": ["fenced"], "A2": ["array"], "A3": ["no_usage"]}) as stub:
        summary = judge.run_lab(config(stub), template(), db_path=lab_db)
    assert summary.answers_ok == LABELED
    got = verdicts_of(lab_db, summary.run.id)
    assert got["A2.c1"] == ("SUPPORTED", "supported")  # spelling normalised, raw kept
    calls = calls_of(lab_db, summary.run.id)
    assert calls["A3"]["total_tokens"] is None
    assert summary.totals.total_tokens == 120 * (LABELED - 1)


@client_only
def test_endpoint_rejection_stops_the_run(lab_db: str | Path) -> None:
    with StubServer(default="401") as stub:
        with pytest.raises(JudgeError, match="HTTP 401"):
            judge.run_lab(config(stub, concurrency=1), template(), db_path=lab_db)
        assert stub.count == 1


@client_only
def test_unreachable_endpoint_fails_fast_and_stores_nothing(
    lab_db: str | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Default policy (5 attempts, 1 s backoff base): before, every answer was retried with
    # backoff and stored as a failure, and the run "succeeded" with nothing but errors.
    url = closed_port_url()
    cfg = judge.JudgeConfig(base_url=url, model="lab-judge", concurrency=4)
    waits: list[float] = []
    real_delay = judge_client.backoff_delay

    def recorded_delay(attempt: int, base: float, cap: float, rnd: Callable[[], float]) -> float:
        waits.append(real_delay(attempt, base, cap, rnd))
        return waits[-1]

    monkeypatch.setattr(judge_client, "backoff_delay", recorded_delay)
    with pytest.raises(EndpointUnreachable) as info:
        judge.run_lab(cfg, template(), db_path=lab_db)
    # Fast by construction, not by the clock: one short retry per request in flight, not five
    # attempts with backoff up to a minute.
    assert len(waits) <= cfg.concurrency and all(w <= 1.0 for w in waits), waits
    assert str(info.value) == f"cannot connect to {url}: connection refused"
    assert isinstance(info.value, JudgeError) and info.value.answers_stored == 0
    with store.session(lab_db) as db:
        # No empty run left behind, neither as a judge run nor in the lab's own list.
        assert db.execute("SELECT count(*) FROM judge_runs WHERE origin = 'lab'").fetchone()[0] == 0
        assert db.execute("SELECT count(*) FROM judge_calls").fetchone()[0] == 0
        assert lab_store.lab_runs(db) == [] and lab_store.lab_run_overview(db) == []


@client_only
def test_tls_failure_is_a_connect_error_too(lab_db: str | Path) -> None:
    with StubServer() as stub:  # plain HTTP: the TLS handshake cannot succeed
        url = stub.base_url.replace("http://", "https://")
        with pytest.raises(
            EndpointUnreachable,
            match=r"^cannot connect to https://127\.0\.0\.1:\d+/v1: TLS handshake failed \(",
        ):
            judge.run_lab(config(stub, base_url=url), template(), db_path=lab_db)
    with store.session(lab_db) as db:
        assert lab_store.lab_runs(db) == []


def test_server_gone_mid_run_stops_the_run_and_keeps_what_was_judged(lab_db: str | Path) -> None:
    stub = StubServer(keep_alive=False).start()

    def crash_after_two(p: judge.LabProgress) -> None:
        if p.done == 2:
            stub.stop()

    try:
        with pytest.raises(EndpointUnreachable, match="connection refused") as info:
            judge.run_lab(config(stub, concurrency=1), template(), db_path=lab_db, progress=crash_after_two)
    finally:
        stub.stop()
    assert info.value.answers_stored == 2
    with StubServer() as again:
        summary = judge.run_lab(config(again), template(), db_path=lab_db)
        assert sorted(r.key for r in again.requests) == ["A3", "A4"]
    assert summary.resumed and summary.totals.answers_ok == LABELED


def test_a_run_whose_every_call_failed_is_not_a_judge_run(lab_db: str | Path) -> None:
    with StubServer(default="500") as stub:
        summary = judge.run_lab(config(stub, max_attempts=1), template("broken"), db_path=lab_db)
    assert summary.answers_failed == LABELED and summary.totals.claims_judged == 0
    assert summary.comparison is None and summary.baseline is None
    text = "\n".join(summary_lines(summary))
    assert "the run has no verdicts yet (every answer failed): nothing to compare" in text
    assert "judged by both" not in text
    # One line for the four answers that failed alike, and "1 attempt", not "1 attempts".
    assert "  failed 4 answers (A1, A2, A3, A4): HTTP 500" in text
    assert calls_of(lab_db, summary.run.id)["A1"]["error"].endswith("(gave up after 1 attempt)")
    with store.session(lab_db) as db:
        assert [r.name for r in store.judge_runs(db)] == ["old-judge@v0"]
        assert [i.run.name for i in store.info(db)["runs"]] == ["old-judge@v0"]
        with pytest.raises(NotFoundError):
            store.find_judge_run(db, "lab-judge@broken")
        # The lab still lists it, so its failed calls can be read and the run resumed.
        assert [r.prompt_version for r in lab_store.lab_runs(db)] == ["broken"]
        assert lab_store.lab_run_overview(db)[0]["answers failed"] == LABELED
    with StubServer() as stub:
        again = judge.run_lab(config(stub), template("broken"), db_path=lab_db)
    assert again.resumed and again.comparison is not None
    with store.session(lab_db) as db:
        assert [r.name for r in store.judge_runs(db)] == ["old-judge@v0", "lab-judge@broken"]


@client_only
def test_api_key_comes_from_the_named_environment_variable(
    lab_db: str | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALIBRATION_TEST_JUDGE_KEY", "sk-test-123")
    with StubServer() as stub:
        summary = judge.run_lab(config(stub), template(), db_path=lab_db)
        assert {r.headers.get("authorization") for r in stub.requests} == {"Bearer sk-test-123"}
    with store.session(lab_db) as db:
        dump = json.dumps(list(db.query("SELECT * FROM judge_lab_runs")))
        dump += json.dumps(list(db.query("SELECT * FROM judge_calls")))
    assert "sk-test-123" not in dump and summary.answers_ok == LABELED


def test_scopes(lab_db: str | Path, tmp_path: Path) -> None:
    add_cycle(lab_db, "c1", ["A6", "A2"])
    with store.session(lab_db) as db:
        old = store.find_judge_run(db, "old-judge@v0")
    with StubServer() as stub:
        s = judge.run_lab(config(stub, concurrency=1), template("cyc"), db_path=lab_db, scope="cycle:c1")
        assert [r.key for r in stub.requests] == ["A6", "A2"] and s.baseline == old
        s = judge.run_lab(config(stub), template("cyc"), db_path=lab_db, scope="all")
        assert s.answers_skipped == 2 and s.answers_ok == N_ANSWERS - 2
    with pytest.raises(InputError):
        judge.parse_scope("cycles")
    with pytest.raises(InputError, match="no claim has a human label"):
        judge.run_lab(config(stub), template("empty"), db_path=tmp_path / "empty.db")
    with StubServer() as stub, pytest.raises(NotFoundError):
        judge.run_lab(config(stub), template("nope"), db_path=lab_db, scope="cycle:missing")
    with store.session(lab_db) as db:
        assert [r.prompt_version for r in lab_store.lab_runs(db)] == ["cyc"]  # no empty run left


def test_a_version_name_stands_for_one_template(lab_db: str | Path) -> None:
    with StubServer() as stub:
        judge.run_lab(config(stub), template("t1"), db_path=lab_db)
        edited = judge.template_from_text("t1", template().text + "\nBe brief.")
        with pytest.raises(ConflictError, match="different prompt text"):
            judge.run_lab(config(stub), edited, db_path=lab_db)
        with pytest.raises(ConflictError, match="not made by the judge lab"):
            judge.run_lab(config(stub, model="old-judge"), template("v0"), db_path=lab_db)


def test_comparison_with_the_previous_run(lab_db: str | Path) -> None:
    # Humans: c1 SUPPORTED, c2 SUPPORTED, c3 UNSUPPORTED. The imported run is right on c1 only;
    # the lab run is told to match the humans everywhere.
    right = {
        f"A{i}.c{j}": v
        for i in range(1, LABELED + 1)
        for j, v in ((1, "SUPPORTED"), (2, "SUPPORTED"), (3, "UNSUPPORTED"))
    }
    with StubServer(verdicts=right) as stub:
        summary = judge.run_lab(config(stub), template(), db_path=lab_db)
    comp = summary.comparison
    assert comp is not None and comp.baseline == "old-judge@v0" and comp.run == summary.run.name
    c = comp.result
    assert c.n_claims == 3 * LABELED
    assert c.agreement_a.value == pytest.approx(1 / 3) and c.agreement_b.value == 1.0
    assert (len(c.only_a_right), len(c.only_b_right)) == (0, 2 * LABELED)
    assert c.mcnemar.p_two_sided < 0.01
    assert comp.to_dict()["run_b"] == summary.run.name
    text = "\n".join(summary_lines(summary))
    assert "against old-judge@v0 on 12 human-labeled claims" in text and "McNemar" in text


def test_shared_claims_are_the_claims_the_comparison_is_made_on(lab_db: str | Path, tmp_path: Path) -> None:
    # A second judge run over the same answers, and claims where "has a human label" and
    # "has a final human label" part: A1.c2, A2.c2 disputed by a second reviewer (unresolved),
    # A5.c1 marked unclear by both reviewers and settled by a lead (final, no verdict label).
    other = tmp_path / "other.jsonl"
    other.write_text(
        "\n".join(
            json.dumps({**_answer(i), "judge_model": "new-judge"}, ensure_ascii=False)
            for i in range(1, N_ANSWERS + 1)
        ),
        encoding="utf-8",
    )
    with store.session(lab_db) as db:
        import_answers(db, other)
        for disputed in ("A1", "A2"):
            store.record_label(
                db,
                claim=store.claim_pk(db, disputed, f"{disputed}.c2"),
                reviewer="bob",
                kind="blind",
                verdict="CONTRADICTED",
            )
        settled = store.claim_pk(db, "A5", "A5.c1")
        for who in ("ann", "bob"):
            store.record_label(db, claim=settled, reviewer=who, kind="unclear")
        store.adjudicate(db, claim=settled, adjudicator="lead", verdict="SUPPORTED")
        new, old = store.find_judge_run(db, "new-judge@v0"), store.find_judge_run(db, "old-judge@v0")
        (option,) = judge.baseline_options(db, new)
        comp = judge.compare_runs(db, new, old)
    assert comp is not None
    # 12 labeled claims, less the two disputed ones, plus the settled one.
    assert option.shared == comp.result.n_claims == 3 * LABELED - 1
    assert comp.unresolved == 2
    assert option.label == f"old-judge@v0 · {3 * LABELED - 1} shared labeled claims"


def test_default_baseline_is_the_run_the_prompt_revises(lab_db: str | Path) -> None:
    add_cycle(lab_db, "c1", ["A6", "A2"])
    with StubServer() as stub:
        # The only labeled run is the import: the first lab run revises it.
        narrow = judge.run_lab(config(stub), template("narrow"), db_path=lab_db, scope="cycle:c1")
        assert narrow.revises == "old-judge@v0" and narrow.baseline.name == "old-judge@v0"
        # Named explicitly: the revised run is the baseline, though another run is of the same model.
        wide = judge.run_lab(config(stub), template("wide"), db_path=lab_db, revises="old-judge@v0")
    assert narrow.comparison is not None and narrow.comparison.cycle == "c1"
    assert wide.baseline is not None and wide.baseline.name == "old-judge@v0"
    assert wide.baseline_reason == ("the run this prompt revises (old-judge@v0)",)
    assert wide.comparison is not None and wide.comparison.result.n_claims == 3 * LABELED
    assert "against old-judge@v0 on 12 human-labeled claims judged by both runs:" in summary_lines(wide)
    with store.session(lab_db) as db:
        options = judge.baseline_options(db, wide.run)
        assert [(o.run.name, o.shared) for o in options] == [("old-judge@v0", 12), ("lab-judge@narrow", 3)]
        assert options[1].label == "lab-judge@narrow · 3 shared labeled claims"
        # Within the cycle both share A2's claims: the tie goes to the cycle's own run, and the
        # reason says it was a tie.
        in_cycle = judge.baseline_options(db, wide.run, "c1")
        assert [(o.run.name, o.shared) for o in in_cycle] == [("old-judge@v0", 3), ("lab-judge@narrow", 3)]
        comp = judge.compare_runs(db, wide.run, in_cycle[1].run, "c1")
        assert comp is not None and comp.result.n_claims == 3
        assert comp.scope_text == "3 human-labeled claims judged by both runs in cycle c1"
        with pytest.raises(NotFoundError):
            judge.baseline_options(db, wide.run, "no-such-cycle")
    with store.session(lab_db) as db, store.write(db):
        db.execute("DELETE FROM judge_lab_revisions WHERE run_id = :run_id", {"run_id": wide.run.id})
    with store.session(lab_db) as db:
        base, why = judge.baseline_choice(db, wide.run, "c1")
        assert base.name == "old-judge@v0"
        assert phrase(why).startswith("tie: old-judge@v0, lab-judge@narrow each share 3")
    with StubServer() as stub:
        # Not named: of the labeled runs of the same model, the one with the most labeled claims
        # (lab-judge@wide, 12) is what this version revises, not the import.
        next_ = judge.run_lab(config(stub), template("next"), db_path=lab_db, scope="cycle:c1")
    assert next_.revises == "lab-judge@wide" and next_.baseline.name == "lab-judge@wide"
    with StubServer() as stub, pytest.raises(InputError, match="which run does this prompt revise"):
        # Two labeled runs of the model, equally labeled: refused before any request, never a tie-break.
        try:
            judge.run_lab(config(stub, model="other"), template("x"), db_path=lab_db, scope="cycle:c1")
        finally:
            assert stub.count == 0


def test_cli_judge_run(lab_db: str | Path, capsys: pytest.CaptureFixture[str]) -> None:
    from calibration.cli import main

    args = [
        "--db",
        str(lab_db),
        "judge",
        "run",
        "--model",
        "cli-judge",
        "--prompt-version",
        "grounding-v1-ru",
        "--concurrency",
        "2",
        "--timeout",
        "2",
    ]
    with StubServer({"A2": ["malformed", "malformed"]}) as stub:
        # One answer failed: exit 1, and the message says so and how to finish.
        assert main([*args, "--base-url", stub.base_url]) == 1
        out, err = capsys.readouterr()
        assert "run cli-judge@grounding-v1-ru (new), scope labeled" in out
        assert "answers ok 3, failed 1; claims judged 9" in out
        assert "failed A2: invalid reply" in out and "against old-judge@v0" in out
        assert "judged 4/4 answers" in err
        assert "1 of 4 answers failed and has no verdicts; run the same command again" in err
        assert "Ты — строгий проверяющий" in stub.requests[0].messages[0]["content"]
        # The same command again only retries the failed answer.
        assert main([*args, "--base-url", stub.base_url]) == 0
        out, _ = capsys.readouterr()
        assert "(resumed)" in out and "3 already judged" in out and "answers ok 1, failed 0" in out
        assert len(stub.requests) == 3 + 2 + 1  # A2 twice, then once more on resume

    assert main([*args, "--base-url", "http://127.0.0.1:9", "--api-key-env", "NOPE_NOT_SET"]) == 1
    assert "NOPE_NOT_SET" in capsys.readouterr().err
    assert (
        main(
            [
                "--db",
                str(lab_db),
                "judge",
                "run",
                "--base-url",
                "http://x",
                "--model",
                "m",
                "--prompt-version",
                "nope",
            ]
        )
        == 1
    )
    assert "no template file" in capsys.readouterr().err


@client_only
def test_cli_exit_status_when_answers_fail_or_the_endpoint_is_down(
    lab_db: str | Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from calibration.cli import main

    args = [
        "--db",
        str(lab_db),
        "judge",
        "run",
        "--model",
        "cli-judge",
        "--prompt-version",
        "grounding-v1",
        "--max-attempts",
        "1",
    ]
    with StubServer(default="500") as stub:
        assert main([*args, "--base-url", stub.base_url]) == 1
    out, err = capsys.readouterr()
    assert "4 of 4 answers failed and have no verdicts; run the same command again" in err
    assert "nothing to compare" in out
    url = closed_port_url()
    assert main([*args, "--base-url", url]) == 1
    assert f"error: cannot connect to {url}: connection refused" in capsys.readouterr().err
    with StubServer() as stub:
        assert main([*args, "--base-url", stub.base_url]) == 0
    assert "(resumed)" in capsys.readouterr().out


# ---------------------------------------------------------------- the Judge lab page


def lab_page(lab_db: str | Path, monkeypatch: pytest.MonkeyPatch):
    from streamlit.testing.v1 import AppTest

    from calibration_app import signin

    monkeypatch.setenv("CALIBRATION_DB", str(lab_db))
    at = AppTest.from_file(str(ROOT / "pages" / "judge_lab.py"), default_timeout=30)
    at.session_state[signin.REVIEWER_KEY] = "lead"
    return at.run()


def lab_app(lab_db: str | Path, monkeypatch: pytest.MonkeyPatch):
    """The Judge lab page inside the whole app (app.py's navigation), so pages can be switched."""
    from streamlit.testing.v1 import AppTest

    from calibration_app import signin

    monkeypatch.setenv("CALIBRATION_DB", str(lab_db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)
    at.session_state[signin.REVIEWER_KEY] = "lead"
    return at.switch_page("pages/judge_lab.py").run()


def press_run(at) -> None:
    """Press Run, then Send in the confirm step when it asks (it does when requests are due)."""
    at.button(key="lab_run_submit").click().run()
    if any(b.key == "lab_confirm" for b in at.button):
        at.button(key="lab_confirm").click().run()


def test_page_runs_an_edited_prompt_and_shows_the_comparison(
    lab_db: str | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = lab_page(lab_db, monkeypatch)
    assert not at.exception
    # The intro says what is sent and where the key comes from.
    intro = at.markdown[0].value
    assert "question, its retrieved chunks, the answer and its claims" in intro
    assert judge.DEFAULT_API_KEY_ENV in intro and "bills every request" in intro
    assert at.text_area(key="lab_template_text").value == judge.load_template("grounding-v1").text

    right = {
        f"A{i}.c{j}": v
        for i in range(1, LABELED + 1)
        for j, v in ((1, "SUPPORTED"), (2, "SUPPORTED"), (3, "UNSUPPORTED"))
    }
    with StubServer(verdicts=right) as stub:
        at.text_area(key="lab_template_text").input(template().text + "\nBe strict. {not a slot}")
        at.text_input(key="lab_base_url").input(stub.base_url)
        at.text_input(key="lab_model").input("page-judge")
        press_run(at)
        # Edited text under the shipped name is refused before any request.
        assert not at.exception and stub.count == 0
        assert [e.value for e in at.error] == ["The run cannot start:"]
        assert any("shipped template" in t.value for t in at.text)

        at.text_input(key="lab_version").input("strict-v2")
        press_run(at)
        assert not at.exception and not at.error
        assert stub.count == LABELED
        assert "Be strict. {not a slot}" in stub.requests[0].messages[0]["content"]

    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Answers ok"] == str(LABELED) and metrics["Claims judged"] == str(3 * LABELED)
    # The verdict on the holdout comes first, then the tuning claims beside it, in one format.
    heads = [h.value for h in at.subheader]
    assert heads.index("Verdict on the holdout") < heads.index("Against every run sharing labeled claims")
    # Figures down the side, a column per part: narrow enough for 1280 px.
    parts = at.dataframe[0].value
    assert list(parts.columns) == ["figure", "holdout (never seen)", "tuning (seen while revising)"]
    agreement_new = list(parts.set_index("figure").loc["agreement new"])
    assert all(v.endswith("%") and len(v.split(".")[-1]) == 2 for v in agreement_new)
    assert agreement_new == ["100.0%", "100.0%"]
    texts = [t.value for t in at.text]
    assert any(t.startswith("On 6 claims the lead never saw, the new prompt is right 4 times") for t in texts)
    assert any(t.startswith("Before the run: about to send 4 requests") for t in texts)
    assert any(t.startswith("After the run: tokens used: 480") for t in texts)
    every = at.dataframe[1].value  # the holdout's table; the tuning claims' is the next one
    assert list(every["baseline"]) == ["old-judge@v0"]
    runs = at.dataframe[3].value
    assert list(runs["run"]) == ["page-judge@strict-v2"]
    # The comparison names its baseline (the run revised), offered with the claims shared.
    baseline = at.selectbox(key="lab_cmp_baseline")
    assert baseline.value == "old-judge@v0"
    assert baseline.options == ["old-judge@v0 · 12 shared labeled claims"]
    assert "Compared on 12 human-labeled claims judged by both runs." in texts
    # What the judge saw, for the run just made, loaded on demand: one attempt, in the singular.
    assert at.selectbox(key="lab_inspect_run").value == "page-judge@strict-v2"
    assert not any(t.value.startswith("status ok") for t in at.text)
    at.button(key="lab_load_call").click().run()
    assert any(t.value.startswith("status ok · 1 HTTP attempt · ") for t in at.text)

    # Picking another template loads its text.
    at.selectbox(key="lab_template_pick").select("grounding-v1-ru").run()
    assert at.text_area(key="lab_template_text").value.startswith("Ты — строгий")
    assert at.text_input(key="lab_version").value == "grounding-v1-ru"


@client_only
def test_page_reports_an_unreachable_endpoint_once(
    lab_db: str | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = lab_page(lab_db, monkeypatch)
    with StubServer() as stub:  # a first, successful run: its result must not linger
        at.text_input(key="lab_base_url").input(stub.base_url)
        at.text_input(key="lab_model").input("page-judge")
        press_run(at)
    assert "Result" in [h.value for h in at.subheader]

    url = closed_port_url()
    at.text_input(key="lab_base_url").input(url)
    at.text_input(key="lab_model").input("other-judge")
    press_run(at)
    assert not at.exception
    assert len(at.error) == 1 and "no run was stored" in at.error[0].value
    assert f"cannot connect to {url}: connection refused" in [t.value for t in at.text]
    subheaders = [h.value for h in at.subheader]
    assert "Result" not in subheaders and "Comparison with another run" not in subheaders
    assert not any("judged by both" in i.value for i in at.info)
    assert list(at.dataframe[0].value["run"]) == ["page-judge@grounding-v1"]  # only the lab runs table
    with store.session(lab_db) as db:
        assert [r.judge_model for r in lab_store.lab_runs(db)] == ["page-judge"]


@client_only
def test_a_refused_request_body_names_the_flags_on_the_cli_and_the_controls_on_the_page(
    lab_db: str | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with StubServer(default="400") as stub, pytest.raises(judge.client.EndpointRejected) as err:
        judge.run_lab(config(stub), template(), db_path=lab_db)
    assert "check the model name, --max-tokens and --json-mode" in err.value.lines(FLAGS)[0]
    assert "--" not in str(err.value)
    at = lab_page(lab_db, monkeypatch)
    with StubServer(default="400") as stub:
        at.text_input(key="lab_base_url").input(stub.base_url)
        at.text_input(key="lab_model").input("page-judge")
        press_run(at)
    assert not at.exception and len(at.error) == 1
    shown = [t.value for t in at.text if "HTTP 400" in t.value]
    assert (
        len(shown) == 1
        and "the token limit (the command line's judge run --max-tokens; the lab sets none) and JSON mode"
        in shown[0]
    )


def test_page_shows_no_comparison_for_a_run_without_verdicts(
    lab_db: str | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = lab_page(lab_db, monkeypatch)
    with StubServer(default="malformed") as stub:
        at.text_input(key="lab_base_url").input(stub.base_url)
        at.text_input(key="lab_model").input("page-judge")
        press_run(at)
    assert not at.exception and not at.error
    assert "Comparison with another run" not in [h.value for h in at.subheader]
    assert any("no verdicts yet" in w.value for w in at.warning)
    failures = at.dataframe[0].value  # the four answers failed alike: one row
    assert list(failures["answers"]) == [LABELED] and list(failures["answer ids"]) == ["A1, A2, A3, A4"]
    at.button(key="lab_load_call").click().run()
    assert any(t.value.startswith("status failed · 2 HTTP attempts · ") for t in at.text)


@client_only
def test_page_keeps_its_choices_and_edits_across_page_switches(
    lab_db: str | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = lab_app(lab_db, monkeypatch)
    edited = template().text + "\nBe brief."
    url = closed_port_url()
    at.text_area(key="lab_template_text").input(edited)
    at.text_input(key="lab_base_url").input(url)
    at.text_input(key="lab_model").input("m1")
    at.text_input(key="lab_version").input("brief-v1")
    at.number_input(key="lab_concurrency").set_value(8)
    press_run(at)  # the endpoint is down; the choices stay
    assert not at.exception and len(at.error) == 1

    def form() -> tuple[object, ...]:
        return (
            at.text_input(key="lab_base_url").value,
            at.text_input(key="lab_model").value,
            at.text_input(key="lab_version").value,
            at.number_input(key="lab_concurrency").value,
            at.text_area(key="lab_template_text").value,
        )

    expected = (url, "m1", "brief-v1", 8, edited)
    assert form() == expected
    at.switch_page("pages/home.py").run()
    assert not at.exception and "lab_base_url" not in at.session_state  # Streamlit dropped it
    at.switch_page("pages/judge_lab.py").run()
    assert not at.exception and form() == expected


@client_only
def test_page_keeps_template_edits_when_another_template_is_picked(
    lab_db: str | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = lab_page(lab_db, monkeypatch)
    shipped = judge.load_template("grounding-v1").text
    assert not any("Edited" in c.value for c in at.caption)
    # The text area is in the run form: an edit counts once Run is pressed (here refused, as the
    # edited text still carries the shipped name, so nothing is sent).
    at.text_area(key="lab_template_text").input(shipped + "\nBe brief.")
    at.button(key="lab_run_submit").click().run()
    assert any(c.value.startswith("Edited: ") for c in at.caption)
    at.selectbox(key="lab_template_pick").select("grounding-v1-ru").run()
    assert at.text_area(key="lab_template_text").value.startswith("Ты — строгий")
    at.selectbox(key="lab_template_pick").select("grounding-v1").run()
    assert at.text_area(key="lab_template_text").value == shipped + "\nBe brief."
    at.button(key="lab_revert").click().run()
    assert at.text_area(key="lab_template_text").value == shipped
    assert not any("Edited" in c.value for c in at.caption)


def test_page_inspects_and_compares_the_run_just_made(
    lab_db: str | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Interrupted(Exception):
        pass

    def stop_after_one(p: judge.LabProgress) -> None:
        if p.done == 1:
            raise Interrupted

    add_cycle(lab_db, "c1", ["A6", "A2"])
    with StubServer() as stub:
        with pytest.raises(Interrupted):  # an older run, left half done
            judge.run_lab(
                config(stub, model="page-judge", concurrency=1),
                template("r-old"),
                db_path=lab_db,
                progress=stop_after_one,
            )
        judge.run_lab(config(stub, model="page-judge"), template("r-new"), db_path=lab_db)

        at = lab_app(lab_db, monkeypatch)
        at.selectbox(key="lab_inspect_run").select("page-judge@r-new").run()  # a lead looked here
        at.text_input(key="lab_base_url").input(stub.base_url)
        at.text_input(key="lab_model").input("page-judge")
        at.text_input(key="lab_version").input("r-old")
        # Resuming r-old as a revision of another run than it was started from is refused...
        at.selectbox(key="lab_revises").select("page-judge@r-new")
        press_run(at)
        assert [e.value for e in at.error] and any(
            "was started as a revision of old-judge@v0" in t.value for t in at.text
        )
        # ...and accepted with the run it revises.
        at.selectbox(key="lab_revises").select("old-judge@v0")
        press_run(at)
    assert not at.exception and not at.error
    assert at.selectbox(key="lab_inspect_run").value == "page-judge@r-old"  # the run just made
    at.switch_page("pages/home.py").run()  # Streamlit drops the page's widget state...
    at.switch_page("pages/judge_lab.py").run()
    assert at.selectbox(key="lab_inspect_run").value == "page-judge@r-old"  # ...the default holds

    # Both other runs share the 12 labeled claims; the default is the run r-old revises.
    baseline = at.selectbox(key="lab_cmp_baseline")
    assert baseline.value == "old-judge@v0"
    assert baseline.options == [
        "old-judge@v0 · 12 shared labeled claims",
        "page-judge@r-new · 12 shared labeled claims",
    ]
    assert "Default baseline: the run this prompt revises (old-judge@v0)." in [t.value for t in at.text]
    assert list(at.dataframe[1].value["baseline"]) == ["old-judge@v0", "page-judge@r-new"]
    baseline.select("page-judge@r-new").run()
    assert at.selectbox(key="lab_cmp_baseline").value == "page-judge@r-new"
    # Both runs gave the same verdicts: nothing tells them apart, and the page says so.
    assert any("no claim tells them apart" in t.value for t in at.text), [t.value for t in at.text]


# ---------------------------------------------------------------- units


def test_render_is_single_pass_and_brace_safe() -> None:
    tpl = 'Q: {question}\nA: {answer}\n{chunks}\n{claims}\n{"json": {"x": 1}} {other} {{question}}'
    out = judge.render(
        tpl, {"question": "{answer} \\g<0> {0}", "answer": "ans", "chunks": "{claims}", "claims": "C"}
    )
    assert out == (
        'Q: {answer} \\g<0> {0}\nA: ans\n{claims}\nC\n{"json": {"x": 1}} {other} {{answer} \\g<0> {0}}'
    )


@client_only
def test_a_prompt_file_is_read_by_the_input_reader(
    tmp_path: Path, lab_db: str | Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from calibration.cli import main

    text = judge.load_template("grounding-v1").text + "\nRésumé: ‘quotes’\n"
    cp1252 = tmp_path / "p.txt"
    cp1252.write_bytes(text.encode("cp1252"))
    with pytest.raises(InputError) as err:
        judge.load_template("p", cp1252)
    (problem,) = err.value.problems
    assert (problem.file, problem.line) == (str(cp1252), text.count("\n"))
    assert judge.load_template("p", cp1252, encoding="cp1252").text == text
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert judge.load_template("p", bom).text == text
    args = [
        "--db",
        str(lab_db),
        "judge",
        "run",
        "--base-url",
        "http://127.0.0.1:9",
        "--model",
        "m",
        "--prompt-version",
        "p",
        "--prompt-file",
        str(cp1252),
    ]
    assert main(args) == 1
    said = capsys.readouterr().err
    assert f"{cp1252}:{text.count(chr(10))}: cannot decode" in said and "--encoding" in said
    assert "Traceback" not in said
    assert (
        main(
            [
                "--db",
                str(lab_db),
                "judge",
                "run",
                "--base-url",
                "http://x",
                "--model",
                "m",
                "--prompt-version",
                "nope",
            ]
        )
        == 1
    )
    assert (
        "no template file for prompt version 'nope'; give one with --prompt-file, or use one of: "
        in capsys.readouterr().err
    )


def test_templates_ship_and_are_checked() -> None:
    assert {"grounding-v1", "grounding-v1-ru"} <= set(judge.available_templates())
    for v in ("grounding-v1", "grounding-v1-ru"):
        assert judge.load_template(v).version == v
    with pytest.raises(InputError, match=r"\{claims\}"):
        judge.template_from_text("x", "{question} {chunks} {answer}")
    with pytest.raises(InputError, match=r"^the prompt template: contains a NUL character"):
        judge.template_from_text("x", "{question} {chunks} {answer} {claims}\x00")
    with pytest.raises(InputError, match="no template file"):
        judge.load_template("does-not-exist")
    with pytest.raises(InputError):
        judge.load_template("../etc/passwd")


def test_parse_reply_shapes_and_errors() -> None:
    ids, chunks = ["c1", "c2"], ["S1", "S2"]
    ok = judge.parse_reply(
        '{"verdicts": [{"id": "c2", "verdict": "refuted", "evidence": [2]},'
        '{"claim_id": "c1", "verdict": "SUPPORTED", "evidence": "S1",'
        ' "explanation": "why"}]}',
        ids,
        chunks,
    )
    assert [(v.claim_id, v.verdict, v.evidence) for v in ok] == [
        ("c1", Verdict.SUPPORTED, ("S1",)),
        ("c2", Verdict.CONTRADICTED, ("S2",)),
    ]
    assert ok[0].rationale == "why" and ok[1].raw_verdict == "refuted"
    mapping = judge.parse_reply(
        '<think>hmm {</think>```json\n{"c1": "nei", "c2": {"verdict": "yes"}}\n```', ids, chunks
    )
    assert [v.verdict for v in mapping] == [Verdict.UNSUPPORTED, Verdict.SUPPORTED]
    assert judge.parse_reply('{"id": "c1", "verdict": "SUPPORTED"}', ["c1"])[0].claim_id == "c1"

    bad = {
        "": "empty",
        "[1, 2]": "verdicts[0]",
        '"SUPPORTED"': "expected a JSON object",
        '[{"id": "c1", "verdict": "maybe"}, {"id": "c2", "verdict": "SUPPORTED"}]': "unknown verdict 'maybe'",
        '[{"id": "c1", "verdict": "SUPPORTED"}, {"id": "c1", "verdict": "SUPPORTED"}, '
        '{"id": "c2", "verdict": "SUPPORTED"}]': "more than once",
        (
            '[{"id": "c1", "verdict": "SUPPORTED", "evidence": ["S9"]}, {"id": "c2", "verdict": "SUPPORTED"}]'
        ): "evidence 'S9' names no chunk",
    }
    for text, msg in bad.items():
        with pytest.raises(ReplyError, match=msg.replace("[", r"\[").replace("(", r"\(")):
            judge.parse_reply(text, ids, chunks)


def test_endpoint_url_and_config_checks() -> None:
    def url(base: str) -> str:
        return judge.JudgeConfig(base_url=base, model="m").url

    assert url("http://h:8000") == "http://h:8000/v1/chat/completions"
    assert url("http://h:8000/v1/") == "http://h:8000/v1/chat/completions"
    assert url("https://h/openai/v1") == "https://h/openai/v1/chat/completions"
    assert url("http://h/v1/chat/completions") == "http://h/v1/chat/completions"
    with pytest.raises(InputError):
        judge.JudgeConfig(base_url="localhost:8000", model="m", concurrency=0)
    assert "base_url" not in judge.JudgeConfig(base_url="http://h", model="m").params()


def test_plural() -> None:
    assert [plural(n, "claim") for n in (0, 1, 2, 1234)] == [
        "0 claims",
        "1 claim",
        "2 claims",
        "1,234 claims",
    ]
    assert plural(1, "HTTP attempt") == "1 HTTP attempt"


def test_connect_errors_are_described() -> None:
    def wrapped(cause: OSError) -> httpx.ConnectError:
        try:
            try:
                raise cause
            except OSError as exc:
                raise httpx.ConnectError(str(exc)) from exc
        except httpx.ConnectError as exc:
            return exc

    describe = judge.describe_connect_error
    assert describe(wrapped(ConnectionRefusedError(111, "Connection refused"))) == "connection refused"
    assert (
        describe(wrapped(socket.gaierror(-2, "Name or service not known")))
        == "unknown host (Name or service not known)"
    )
    assert describe(wrapped(OSError(101, "Network is unreachable"))) == "network is unreachable"
    assert describe(httpx.ConnectError("odd")) == "odd"


def test_backoff_is_exponential_with_full_jitter() -> None:
    assert [judge.backoff_delay(a, 1.0, 60.0, lambda: 1.0) for a in (1, 2, 3, 8)] == [1, 2, 4, 60]
    assert judge.backoff_delay(5, 1.0, 60.0, lambda: 0.0) == 0.0


def test_no_database_needed_for_the_core() -> None:
    item = judge.AnswerInput(
        "X", "q", "a", (judge.ChunkText("S1", "t"),), (judge.ClaimText(1, "X.c1", "claim"),)
    )
    seen: list[judge.AnswerResult] = []

    async def go(stub: StubServer) -> None:
        async def collect(_item: judge.AnswerInput, res: judge.AnswerResult) -> None:
            seen.append(res)

        async with judge.ChatClient(config(stub)) as client:
            await judge.judge_items(client, template(), [item], collect)

    with StubServer({"X": ["missing", "ok"]}) as stub:
        asyncio.run(go(stub))
    assert seen[0].status == "ok" and seen[0].verdicts[0].claim_id == "X.c1"


def paired_claims_oracle(
    db, run_a: store.JudgeRun, run_b: store.JudgeRun, cycle_id: int | None = None
) -> tuple[list, int]:
    """The comparison's input as the judge lab read it before the one final-label reader: its
    own SQL, record by record through `final_human_label`, in answer-id then claim
    order. Kept as an independent computation to check `judge.compare_runs` against."""
    params = {"run_a": run_a.id, "run_b": run_b.id, "cycle": cycle_id}
    cycle_join = ""
    if cycle_id is not None:
        cycle_join = "JOIN cycle_answers ca ON ca.answer_id = cl.answer_id AND ca.cycle_id = :cycle"
    # SQL text is each engine's own: the group's verdicts as one JSON array.
    as_json = (
        "json_group_array(h.final_verdict)"
        if db.dialect == "sqlite"
        else "CAST(json_agg(h.final_verdict) AS text)"
    )
    rows = db.execute(
        f"""SELECT cl.answer_id, cl.claim_id, va.verdict, vb.verdict,
                  (SELECT {as_json} FROM human_labels h
                   WHERE h.claim_pk = cl.id AND h.status = 'labeled' AND h.final_verdict IS NOT NULL),
                  (SELECT d.verdict FROM adjudications d WHERE d.claim_pk = cl.id),
                  EXISTS (SELECT 1 FROM human_labels u WHERE u.claim_pk = cl.id AND u.status = 'unclear')
           FROM claims cl
           JOIN judge_verdicts va ON va.claim_pk = cl.id AND va.run_id = :run_a
           JOIN judge_verdicts vb ON vb.claim_pk = cl.id AND vb.run_id = :run_b
           {cycle_join}
           ORDER BY cl.answer_id, cl.position""",
        params,
    ).fetchall()
    items, unresolved = [], 0
    for aid, cid, a, b, labels_json, adjudicated, unclear in rows:
        labels = json.loads(labels_json) if labels_json else []
        final = final_human_label(labels, adjudicated, unclear=bool(unclear))
        if final is not None:
            items.append(PairedClaim(aid, f"{aid}/{cid}", final, a, b))
        elif labels or unclear:
            unresolved += 1
    return items, unresolved


def assert_comparison_matches_oracle(
    db, run: store.JudgeRun, base: store.JudgeRun, cycle: str | None = None
) -> judge.LabComparison | None:
    comp = judge.compare_runs(db, run, base, cycle)
    items, unresolved = paired_claims_oracle(db, base, run, store.cycle_id(db, cycle) if cycle else None)
    if not items:
        assert comp is None
        return None
    assert comp is not None and comp.unresolved == unresolved
    # Everything, the order of the claims only one run got right included.
    assert comp.result == compare_of(items)
    expected = {
        **compare_of(items).to_dict(base.name, run.name),
        "unresolved_claims": unresolved,
        "cycle": cycle,
    }
    assert {k: v for k, v in comp.to_dict().items() if k in expected} == expected
    return comp


def test_comparison_leaves_unresolved_claims_out_as_before(wice_db) -> None:
    gpt4 = store.find_judge_run(wice_db, "wice-gpt4")
    gpt35 = store.find_judge_run(wice_db, "wice-gpt35")
    comp = assert_comparison_matches_oracle(wice_db, gpt35, gpt4)
    assert comp is not None and (comp.result.n_claims, comp.unresolved) == (100, 0)

    claim = store.claim_pk(wice_db, "test00017", "test00017-c1")
    store.record_label(wice_db, claim=claim, reviewer="olga", kind="unclear")
    comp = assert_comparison_matches_oracle(wice_db, gpt35, gpt4)
    assert comp is not None and (comp.result.n_claims, comp.unresolved) == (99, 1)

    # A second reviewer disagreeing on every fifth claim: disputed, unless a lead adjudicates.
    pks = [r[0] for r in wice_db.execute("SELECT id FROM claims ORDER BY id")]
    human = dict(
        wice_db.execute("SELECT claim_pk, final_verdict FROM human_labels WHERE reviewer = 'wice-annotators'")
    )
    other = {"SUPPORTED": "UNSUPPORTED", "UNSUPPORTED": "CONTRADICTED", "CONTRADICTED": "SUPPORTED"}
    for i, pk in enumerate(pks):
        verdict = other[human[pk]] if i % 5 == 0 else human[pk]
        store.record_label(wice_db, claim=pk, reviewer="pavel", kind="import", verdict=verdict)
    for pk in pks[:30:10]:
        store.adjudicate(wice_db, claim=pk, adjudicator="lead", verdict="CONTRADICTED")
    comp = assert_comparison_matches_oracle(wice_db, gpt35, gpt4)
    # 20 disputed, 3 of them adjudicated; the claim marked unclear is the first, adjudicated too.
    assert pks[0] == claim
    assert comp is not None and (comp.result.n_claims, comp.unresolved) == (83, 17)


def test_comparison_within_a_cycle_matches_the_record_by_record_reading(
    lab_db: str | Path, tmp_path: Path
) -> None:
    # Three claims per answer; an answer imported last whose id sorts first (claim ids and
    # answer ids in different orders), and a cycle whose order is neither.
    late = tmp_path / "late.jsonl"
    late.write_text(json.dumps(_answer(0)), encoding="utf-8")
    late_labels = tmp_path / "late.csv"
    late_labels.write_text(
        "answer_id,claim_id,verdict,reviewer\nA0,A0.c1,SUPPORTED,ann\n"
        "A0,A0.c2,SUPPORTED,ann\nA0,A0.c3,UNSUPPORTED,ann\n",
        encoding="utf-8",
    )
    with store.session(lab_db) as db:
        import_answers(db, late)
        import_labels(db, late_labels)
    add_cycle(lab_db, "c1", ["A4", "A0", "A2", "A1"])
    with StubServer(verdicts={"A1.c2": "SUPPORTED", "A4.c3": "UNSUPPORTED"}) as stub:
        summary = judge.run_lab(config(stub), template(), db_path=lab_db)
    with store.session(lab_db) as db:
        a2 = store.claim_pk(db, "A2", "A2.c1")
        store.record_label(db, claim=a2, reviewer="bob", kind="import", verdict="CONTRADICTED")
        old = store.find_judge_run(db, "old-judge@v0")
        for cycle in (None, "c1"):
            comp = assert_comparison_matches_oracle(db, summary.run, old, cycle)
            assert comp is not None and comp.unresolved == 1
            assert comp.result.only_b_right[0] == "A0/A0.c2"
        assert judge.compare_runs(db, summary.run, old, "c1").result.n_claims == 11


# ---------------------------------------------------------------- holdout, few-shot, wasted calls, limits

N_MANY = 20


def _unique_answer(i: int, judge_verdicts: tuple[str, str]) -> dict:
    """An answer whose claim texts occur nowhere else, so a leak of one is visible."""
    aid = f"U{i:02d}"
    return {
        "id": aid,
        "question": f"Question about item {i}?",
        "answer": f"Answer about item {i}.",
        "chunks": [{"id": "S1", "text": f"Source text on item {i}."}],
        "claims": [
            {"id": f"{aid}.c1", "claim": f"Item {i} ships in {i + 2} days.", "verdict": judge_verdicts[0]},
            {"id": f"{aid}.c2", "claim": f"Item {i} costs {10 * i} euros.", "verdict": judge_verdicts[1]},
        ],
        "judge_model": "old-judge",
        "judge_prompt_version": "v0",
    }


@pytest.fixture
def many_db(db_url: str | Path, tmp_path: Path) -> str | Path:
    """N_MANY answers with two claims each, all labeled; the old judge wrong on some claims
    (SUPPORTED where the humans say UNSUPPORTED, and the reverse), a note on one correction."""
    answers = tmp_path / "many.jsonl"
    answers.write_text(
        "\n".join(
            json.dumps(_unique_answer(i, ("SUPPORTED", "SUPPORTED" if i % 3 else "UNSUPPORTED")))
            for i in range(N_MANY)
        ),
        encoding="utf-8",
    )
    labels = tmp_path / "many.csv"
    rows = ["answer_id,claim_id,verdict,reviewer,note"]
    for i in range(N_MANY):
        aid = f"U{i:02d}"
        rows.append(
            f"{aid},{aid}.c1,{'UNSUPPORTED' if i % 4 == 0 else 'SUPPORTED'},ann,"
            + ("no source gives a delivery time" if i == 4 else "")
        )
        rows.append(f"{aid},{aid}.c2,{'SUPPORTED' if i % 2 else 'UNSUPPORTED'},ann,")
    labels.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with store.session(db_url) as db:
        import_answers(db, answers)
        import_labels(db, labels)
    return db_url


def human_verdicts(db_url: str | Path) -> dict[str, str]:
    with store.session(db_url) as db:
        return {
            f"{a}/{c}": v
            for a, c, v in db.execute(
                "SELECT c.answer_id, c.claim_id, h.final_verdict FROM claims c JOIN human_labels h "
                "ON h.claim_pk = c.id"
            )
        }


EXAMPLES_TEMPLATE = (
    judge.load_template("grounding-v1").text + "\n\nWorked examples from reviewers:\n{examples}\n"
)


def test_prompts_with_examples_never_contain_a_holdout_claim(many_db: str | Path) -> None:
    from calibration import split

    tpl = judge.PromptTemplate("fewshot", EXAMPLES_TEMPLATE)
    with StubServer() as stub:
        summary = judge.run_lab(config(stub), tpl, db_path=many_db)
        assert stub.count == N_MANY
    with store.session(many_db) as db:
        sp = split.current(db)
        holdout = {
            f"{a}/{c}": t
            for a, c, t in db.execute("SELECT answer_id, claim_id, text FROM claims")
            if a in set(sp.holdout)
        }
        examples = list(
            db.execute(
                "SELECT c.answer_id, e.kind, e.text FROM judge_lab_examples e "
                "JOIN claims c ON c.id = e.claim_pk WHERE e.run_id = :run_id",
                {"run_id": summary.run.id},
            )
        )
        prompts = dict(
            db.execute(
                "SELECT answer_id, prompt FROM judge_calls WHERE run_id = :run_id", {"run_id": summary.run.id}
            )
        )
    assert len(sp.holdout) == N_MANY // 2 and summary.examples == len(examples) > 0
    # Examples come from tuning claims only, mostly judge errors, at most one per answer.
    assert {a for a, _, _ in examples} <= set(sp.tuning)
    assert len({a for a, _, _ in examples}) == len(examples) <= 6
    kinds = [k for _, k, _ in examples]
    n_wrong = sum(k.startswith("judge wrong") for k in kinds)
    assert n_wrong >= sum(k.startswith("judge right") for k in kinds) > 0
    assert any("Reviewer's note:" in t for _, _, t in examples) or not any(a == "U04" for a, _, _ in examples)
    assert len(prompts) == N_MANY
    for aid, prompt in prompts.items():
        assert "Worked examples from reviewers:\nExample 1" in prompt
        for key, text in holdout.items():
            if not key.startswith(aid + "/"):  # a holdout answer's own claims are what it judges
                assert text not in prompt, (aid, key)
        # An answer never gets its own claim as an example.
        assert not any(a == aid and t in prompt for a, _, t in examples)


def test_a_prompt_carrying_holdout_text_is_refused_before_sending(many_db: str | Path) -> None:
    from calibration import split

    with store.session(many_db) as db:
        sp = split.ensure_split(db)
        leaked = db.execute(
            "SELECT text FROM claims WHERE answer_id = :answer_id", {"answer_id": sp.holdout[0]}
        ).fetchone()[0]
    tpl = judge.PromptTemplate("leaky", EXAMPLES_TEMPLATE + f"\nFor instance: {leaked}\n")
    with StubServer() as stub:
        with pytest.raises(ConflictError, match="contains the text of a holdout claim"):
            judge.run_lab(config(stub), tpl, db_path=many_db)
        assert stub.count == 0


def test_comparison_reports_holdout_and_tuning_separately(many_db: str | Path) -> None:
    from scipy.stats import binomtest

    from calibration import split

    humans = human_verdicts(many_db)
    # The new judge says what the humans say, except on every third claim of the holdout.
    with store.session(many_db) as db:
        sp = split.ensure_split(db)
        old = {
            f"{a}/{c}": v
            for a, c, v in db.execute(
                "SELECT c.answer_id, c.claim_id, v.verdict FROM judge_verdicts v "
                "JOIN claims c ON c.id = v.claim_pk"
            )
        }
    flip = {"SUPPORTED": "UNSUPPORTED", "UNSUPPORTED": "SUPPORTED"}
    new = {
        k.split("/")[1]: (flip[v] if k.split("/")[0] in sp.holdout and i % 3 == 0 else v)
        for i, (k, v) in enumerate(sorted(humans.items()))
    }
    with StubServer(verdicts=new) as stub:
        summary = judge.run_lab(config(stub), template("better"), db_path=many_db)
    comp = summary.comparison
    assert comp is not None and summary.baseline.name == "old-judge@v0"
    for part, answers in ((comp.holdout, set(sp.holdout)), (comp.tuning, set(sp.tuning))):
        keys = [k for k in sorted(humans) if k.split("/")[0] in answers]
        b = sum(old[k] == humans[k] and new[k.split("/")[1]] != humans[k] for k in keys)
        c = sum(old[k] != humans[k] and new[k.split("/")[1]] == humans[k] for k in keys)
        d = part.to_dict()
        assert d["n_claims"] == len(keys) == 2 * len(answers)
        assert (d["new_right_old_wrong"], d["old_right_new_wrong"]) == (c, b)
        if b + c:
            assert d["mcnemar_exact_p"] == pytest.approx(binomtest(min(b, c), b + c, 0.5).pvalue)
        right_new = sum(new[k.split("/")[1]] == humans[k] for k in keys)
        assert d["agreement_new"] == pytest.approx(right_new / len(keys))
        assert d["agreement_old"] == pytest.approx(sum(old[k] == humans[k] for k in keys) / len(keys))
    # The sentence at the top is about the holdout.
    assert comp.headline().startswith(f"On {comp.holdout.result.n_claims} claims the lead never saw")
    lines = summary_lines(summary)
    holdout_line = next(i for i, x in enumerate(lines) if x.startswith("  holdout"))
    tuning_line = next(i for i, x in enumerate(lines) if x.startswith("  tuning (seen while revising)"))
    assert holdout_line < tuning_line


def test_cli_judge_run_json_contract(many_db: str | Path, capsys: pytest.CaptureFixture[str]) -> None:
    from calibration.cli import main

    with StubServer() as stub:
        code = main(
            [
                "--db",
                str(many_db),
                "judge",
                "run",
                "--base-url",
                stub.base_url,
                "--model",
                "cli",
                "--prompt-version",
                "grounding-v1",
                "--json",
            ]
        )
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    assert data["baseline"] == "old-judge@v0"
    for part in ("holdout", "tuning"):
        assert set(data["comparison"][part]) >= {
            "n_claims",
            "new_right_old_wrong",
            "old_right_new_wrong",
            "mcnemar_exact_p",
            "agreement_new",
            "agreement_old",
        }
    assert data["comparison"]["holdout"]["n_claims"] + data["comparison"]["tuning"]["n_claims"] == 2 * N_MANY
    # The cost line comes before the run (on stderr, so stdout stays one JSON object).
    assert "about to send 20 requests for 20 answers" in out.err and "prompt tokens estimated" in out.err
    assert data["tokens"]["total"] == 120 * N_MANY


@client_only
@pytest.mark.parametrize("kind", ["405", "400", "401"])
def test_a_refusing_endpoint_gets_a_handful_of_requests(many_db: str | Path, kind: str) -> None:
    with StubServer(default=kind) as stub:
        with pytest.raises(judge.client.EndpointRejected) as err:
            judge.run_lab(config(stub, concurrency=4), template(), db_path=many_db)
        assert stub.count <= 4  # the requests already in flight when the first refusal came back
    assert f"HTTP {kind}" in str(err.value)


@client_only
def test_always_non_json_replies_stop_after_the_first_answers(many_db: str | Path) -> None:
    with StubServer(default="prose") as stub:
        with pytest.raises(judge.client.EndpointRejected, match="cannot be read as verdicts") as err:
            judge.run_lab(config(stub, concurrency=4), template(), db_path=many_db)
        # Two requests per answer (one corrective round); at most the answers in flight beyond N.
        assert stub.count <= 2 * (judge.INVALID_REPLY_STOP + 4 - 1)
        assert stub.count < 2 * N_MANY
    assert err.value.answers_stored >= judge.INVALID_REPLY_STOP


@client_only
def test_an_endpoint_that_works_is_not_stopped_by_a_few_bad_replies(many_db: str | Path) -> None:
    script = {f"U{i:02d}": ["prose", "prose"] for i in range(4)}
    with StubServer(script, default="ok") as stub:
        summary = judge.run_lab(config(stub, concurrency=1), template(), db_path=many_db)
    assert summary.answers_failed == 4 and summary.answers_ok == N_MANY - 4


HUGE_CHILD = """
import json, sys
from calibration import judge

def peak_kb():
    # VmHWM is this process's own peak: ru_maxrss would carry over the forking parent's
    # (pytest's) high-water mark across exec.
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))

imported_kb = peak_kb()
cfg = judge.JudgeConfig(base_url=sys.argv[2], model="huge", api_key_env="", timeout=60, max_attempts=2)
tpl = judge.PromptTemplate("huge", judge.load_template("grounding-v1").text)
s = judge.run_lab(cfg, tpl, db_path=sys.argv[1], scope="cycle:one")
print(json.dumps({"peak_kb": peak_kb(), "imported_kb": imported_kb, "failures": s.failures}))
"""


@client_only
@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak RSS from /proc")
def test_a_50_mb_reply_is_cut_at_the_limit_with_bounded_memory(lab_db: str | Path) -> None:
    import subprocess
    import sys

    add_cycle(lab_db, "one", ["A1"])
    with StubServer(default=("huge", 50)) as stub:
        proc = subprocess.run(
            [sys.executable, "-c", HUGE_CHILD, str(lab_db), stub.base_url],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert proc.returncode == 0, proc.stderr
        assert stub.count == 1  # not retried: the same prompt would bring the same flood
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    # Peak resident memory of the whole process, the imports (~150 MB) included.
    assert out["peak_kb"] < 200 * 1024, out
    [(aid, error)] = out["failures"]
    assert aid == "A1" and "reply too large: cut off after" in error and "1,000,000 bytes" in error
    with store.session(lab_db) as db:
        size = db.execute(
            "SELECT length(prompt) + coalesce(length(response), 0) + length(exchanges) FROM judge_calls"
        ).fetchone()[0]
    assert size < 50_000


def test_each_reply_is_stored_once(lab_db: str | Path) -> None:
    with StubServer({"A1": ["malformed", "ok"]}) as stub:
        summary = judge.run_lab(config(stub), template("once"), db_path=lab_db)
    call = calls_of(lab_db, summary.run.id)["A1"]
    exchanges = json.loads(call["exchanges"])
    final = call["response"]
    assert final and json.dumps(exchanges).count(json.dumps(final)[1:-1]) == 0
    assert exchanges[-1]["response_in_call"] is True and "response" in exchanges[0]


@client_only
def test_api_key_variable_must_be_allowed(
    lab_db: str | Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from calibration.cli import main

    with StubServer() as stub:
        code = main(
            [
                "--db",
                str(lab_db),
                "judge",
                "run",
                "--base-url",
                stub.base_url,
                "--model",
                "m",
                "--prompt-version",
                "grounding-v1",
                "--api-key-env",
                "HOME",
            ]
        )
        assert code == 1 and stub.count == 0
    err = capsys.readouterr().err
    assert "'HOME' is not allowed" in err and "CALIBRATION_JUDGE_KEY_ENVS" in err
    with pytest.raises(InputError, match="not allowed"):
        judge.JudgeConfig(base_url="http://h/v1", model="m", api_key_env="AWS_SECRET_ACCESS_KEY")
    # Listed by the operator (environment or Streamlit secrets): allowed.
    policy = judge.EndpointPolicy.from_sources(
        {"CALIBRATION_JUDGE_KEY_ENVS": "OPENAI_API_KEY, X_KEY"}, {"CALIBRATION_JUDGE_KEY_ENVS": ["TEAM_KEY"]}
    )
    assert policy.key_envs == (judge.DEFAULT_API_KEY_ENV, "OPENAI_API_KEY", "X_KEY", "TEAM_KEY")
    judge.JudgeConfig(base_url="http://h/v1", model="m", api_key_env="TEAM_KEY", policy=policy)
    judge.JudgeConfig(base_url="http://h/v1", model="m", api_key_env="")  # no key: a local server


@pytest.mark.parametrize(
    "base",
    [
        "http://h/v1#",
        "http://h/v1#x",
        "http://h/v1?",
        "http://h/v1?x=1",
        "http://user:pw@h/v1",
        "ftp://h/v1",
        "h:8000/v1",
    ],
)
@client_only
def test_base_url_must_end_in_a_path(
    lab_db: str | Path, base: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from calibration.cli import main

    with pytest.raises(InputError):
        judge.JudgeConfig(base_url=base, model="m")
    code = main(
        [
            "--db",
            str(lab_db),
            "judge",
            "run",
            "--base-url",
            base,
            "--model",
            "m",
            "--prompt-version",
            "grounding-v1",
        ]
    )
    assert code == 1 and "base URL" in capsys.readouterr().err


@pytest.mark.parametrize(
    "base, url",
    [
        ("http://h:8000", "http://h:8000/v1/chat/completions"),
        ("http://h:8000/", "http://h:8000/v1/chat/completions"),
        ("http://h:8000/v1", "http://h:8000/v1/chat/completions"),
        ("http://h:8000/v1/", "http://h:8000/v1/chat/completions"),
        ("https://h/openai/v1", "https://h/openai/v1/chat/completions"),
        ("http://h/v1/chat/completions", "http://h/v1/chat/completions"),
        ("http://h/v1/chat/completions/", "http://h/v1/chat/completions"),
    ],
)
def test_request_url_is_joined(base: str, url: str) -> None:
    assert str(judge.chat_url(base)) == url


@pytest.mark.parametrize(
    "base, allowed",
    [
        ("https://api.example.com/v1", True),
        ("https://api.example.com/v1/", True),
        ("https://api.example.com/v1/chat/completions", True),
        ("https://api.example.com/v10", False),
        ("https://api.example.com.evil.net/v1", False),
        ("http://api.example.com/v1", False),
        ("https://api.example.com:8443/v1", False),
        ("http://localhost:8000/v1", True),
    ],
)
def test_allowed_base_urls_restrict_by_prefix(base: str, allowed: bool) -> None:
    policy = judge.EndpointPolicy.from_sources(
        {"CALIBRATION_JUDGE_BASE_URLS": "https://api.example.com/v1, http://localhost:8000"}
    )
    assert (not policy.base_url_problems(base)) is allowed


def test_scope_of_one_runs_labeled_claims(lab_db: str | Path, tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text(
        json.dumps(
            {
                **_answer(9),
                "id": "R1",
                "judge_model": "ru-judge",
                "claims": [{"id": "R1.c1", "claim": "Другое.", "verdict": "SUPPORTED"}],
            }
        ),
        encoding="utf-8",
    )
    labels = tmp_path / "ru.csv"
    labels.write_text("answer_id,claim_id,verdict,reviewer\nR1,R1.c1,SUPPORTED,ann\n", encoding="utf-8")
    with store.session(lab_db) as db:
        import_answers(db, other)
        import_labels(db, labels)
        assert len(judge.scope_answer_ids(db, judge.parse_scope("labeled"))) == LABELED + 1
        assert judge.scope_answer_ids(db, judge.parse_scope("run:old-judge@v0")) == [
            f"A{i}" for i in range(1, LABELED + 1)
        ]
        assert judge.scope_answer_ids(db, judge.parse_scope("run:ru-judge@v0")) == ["R1"]
    with pytest.raises(InputError, match="run:MODEL@VERSION"):
        judge.parse_scope("run:")
