"""A large import does not block labeling: the file is read and checked without the write lock
(rows staged in connection-private tables) and moves in by short writes, still all or nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from calibration import store
from calibration.errors import InputError
from calibration.importing import import_answers
from calibration.store.answers import PUBLISH_BATCH
from calibration.vocab import Verdict
from tests.helpers import assert_no_traceback

ROOT = Path(__file__).resolve().parents[1]


def _big_file(path: Path, n: int, *, bad_last: bool = False) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            rec = {
                "id": f"big{i}",
                "question": f"Question {i}? " * 5,
                "answer": f"Answer {i}. " * 20,
                "judge_model": "bulk",
                "judge_prompt_version": "v1",
                "metadata": {"i": i},
                "chunks": [{"id": "k1", "text": f"chunk {i} " * 30}],
                "claims": [
                    {"id": f"c{j}", "claim": f"Claim {j} of {i}.", "verdict": "SUPPORTED"} for j in range(3)
                ],
            }
            if bad_last and i == n - 1:
                rec["id"] = "bad\u0000id"
            fh.write(json.dumps(rec) + "\n")
    return path


def _publishing(db_path: Path) -> bool:
    """An import is moving its rows in right now (its marker row says 'publishing')."""
    with store.session(db_path) as db:
        return db.execute("SELECT 1 FROM imports WHERE status = 'publishing'").fetchone() is not None


@pytest.mark.slow
def test_a_verdict_commits_while_a_large_import_is_moving_in(tmp_path: Path, db_path: Path) -> None:
    # Ordering, not speed (bench/bench_import_lock.py measures the latency): a verdict is
    # committed after the import began writing and before its last write, so it waited for one
    # batch at most, not for the import. The import pauses between batches (an env switch of
    # the store) so the window is certain to be seen on a fast machine as on a busy one.
    small = _big_file(tmp_path / "small.jsonl", 1)
    with store.session(db_path) as db:
        import_answers(db, small)
        claim_pk = store.claim_pk(db, "big0", "c0")
    answers = PUBLISH_BATCH // 2  # each table moves in by one batch or more, a pause after each
    big = _big_file(tmp_path / "big.jsonl", answers)
    proc = subprocess.Popen(
        [sys.executable, "-m", "calibration", "--db", str(db_path), "import", str(big)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CALIBRATION_PUBLISH_PAUSE": "0.3"},
    )
    verdicts = [Verdict.SUPPORTED, Verdict.CONTRADICTED]
    inside = written = 0
    while proc.poll() is None:
        before = _publishing(db_path)
        with store.session(db_path) as db:
            store.record_label(
                db, claim=claim_pk, reviewer="rita", kind="blind", verdict=verdicts[written % 2]
            )
        written += 1
        inside += before and _publishing(db_path)  # the import was mid-way on both sides of the commit
        time.sleep(0.02)  # a poll interval: the other process offers no event to wait on
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert_no_traceback(out + err, "the output of calibration import")
    assert f"answers: {answers - 1} new, 1 already present" in out
    assert inside >= 1, f"no verdict was committed while the import was moving in ({written} written)"


def test_a_staged_import_is_still_all_or_nothing(tmp_path: Path, db_path: Path) -> None:
    bad = _big_file(tmp_path / "bad.jsonl", 2000, bad_last=True)
    with store.session(db_path) as db:
        try:
            import_answers(db, bad)
        except InputError as exc:
            assert "bad.jsonl:2000: id: contains a NUL character" in str(exc)
        else:
            raise AssertionError("the import should have been refused")
        assert store.info(db)["totals"]["answers"] == 0
        assert not store.judge_runs(db)  # no judge run left behind either
        # The staging tables are gone; a second import on the same connection works.
        import_answers(db, _big_file(tmp_path / "ok.jsonl", 3))
        assert store.info(db)["totals"]["answers"] == 3


def test_a_batch_that_fails_takes_back_what_was_moved_in(
    tmp_path: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from calibration.errors import ConflictError
    from calibration.store import answers as answer_store

    with store.session(db_path):
        pass
    original = answer_store.Staging.publish

    raced: list[bool] = []

    def racing_publish(self: answer_store.Staging, runs: dict[int, int], *, batch: int = 0) -> None:
        if raced:  # the other import's own publish
            original(self, runs)
            return
        raced.append(True)
        # Another import lands answer big9 after this one checked the file, before it moves in.
        with store.session(db_path) as other:
            import_answers(other, _big_file(tmp_path / "other.jsonl", 10))
            other.execute("DELETE FROM judge_verdicts")  # keep only the clashing rows that matter
            other.execute("DELETE FROM claims")
            other.execute("DELETE FROM chunks")
            other.execute("DELETE FROM answer_checks WHERE answer_id != 'big9'")
            other.execute("DELETE FROM answers WHERE id != 'big9'")
        original(self, runs, batch=3)

    monkeypatch.setattr(answer_store.Staging, "publish", racing_publish)
    with store.session(db_path) as db:
        try:
            import_answers(db, _big_file(tmp_path / "mine.jsonl", 10))
        except ConflictError:
            pass
        else:
            raise AssertionError("the clash should have been refused")
        ids = {r[0] for r in db.execute("SELECT id FROM answers")}
        assert ids == {"big9"}  # what this import had moved in (big0..big2, ...) was taken back
        assert db.execute("SELECT count(*) FROM claims").fetchone()[0] == 0
