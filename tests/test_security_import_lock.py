"""A large import does not block labeling: the file is read and checked without the write lock
(rows staged in connection-private tables) and moves in by short writes, still all or nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from calibration import store
from calibration.errors import InputError
from calibration.importing import import_answers
from calibration.vocab import Verdict
from tests.helpers import assert_no_traceback

ROOT = Path(__file__).resolve().parents[1]
ANSWERS = 30_000


def _big_file(path: Path, n: int, *, bad_last: bool = False) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            rec = {"id": f"big{i}", "question": f"Question {i}? " * 5, "answer": f"Answer {i}. " * 20,
                   "judge_model": "bulk", "judge_prompt_version": "v1", "metadata": {"i": i},
                   "chunks": [{"id": "k1", "text": f"chunk {i} " * 30}],
                   "claims": [{"id": f"c{j}", "claim": f"Claim {j} of {i}.", "verdict": "SUPPORTED"}
                              for j in range(3)]}
            if bad_last and i == n - 1:
                rec["id"] = "bad\u0000id"
            fh.write(json.dumps(rec) + "\n")
    return path


def _label_latencies(db_path: Path, claim_pk: int, proc: subprocess.Popen[str]) -> list[float]:
    times: list[float] = []
    verdicts = [Verdict.SUPPORTED, Verdict.CONTRADICTED]
    while proc.poll() is None:
        t0 = time.perf_counter()
        with store.session(db_path) as db:
            store.record_label(db, claim=claim_pk, reviewer="rita", kind="blind",
                               verdict=verdicts[len(times) % 2])
        times.append(time.perf_counter() - t0)
        time.sleep(0.05)
    return times


def test_a_verdict_lands_within_a_second_while_a_large_import_runs(tmp_path: Path, db_path: Path) -> None:
    small = _big_file(tmp_path / "small.jsonl", 1)
    with store.session(db_path) as db:
        import_answers(db, small)
        claim_pk = store.claim_pk(db, "big0", "c0")
    big = _big_file(tmp_path / "big.jsonl", ANSWERS)
    size_mb = big.stat().st_size / 1e6
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "calibration", "--db", str(db_path), "import", str(big)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    times = _label_latencies(db_path, claim_pk, proc)
    out, err = proc.communicate()
    took = time.perf_counter() - started
    assert proc.returncode == 0, err
    assert_no_traceback(out + err, "the output of calibration import")
    assert f"answers: {ANSWERS - 1} new, 1 already present" in out
    print(f"import of {size_mb:.0f} MB took {took:.1f} s; {len(times)} labels written meanwhile, "
          f"slowest {max(times) * 1000:.0f} ms")
    assert len(times) >= 10  # labels were really written during the import
    assert max(times) < 1.0


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


def test_a_batch_that_fails_takes_back_what_was_moved_in(tmp_path: Path, db_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
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
