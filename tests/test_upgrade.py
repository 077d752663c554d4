"""A database written by release 0.1.0 opens, upgrades and reads the same under this code.

`tests/data/release-0.1.0.db` was made by `tests/data/make_release_db.py` at that release,
and `tests/data/release-0.1.0-stats/*.json` is what that release's `stats --json` printed on it.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from calibration import split, store
from calibration.cli import main

DATA = Path(__file__).resolve().parent / "data"
RELEASE_DB = DATA / "release-0.1.0.db"
TABLES = (
    "answers",
    "chunks",
    "claims",
    "judge_runs",
    "judge_verdicts",
    "label_events",
    "human_labels",
    "adjudications",
    "settings",
    "cycles",
    "cycle_answers",
    "assignments",
    "judge_lab_runs",
    "judge_calls",
)


@pytest.fixture
def release_db(tmp_path: Path) -> Path:
    """A fresh copy of the 0.1.0 database (the committed file is never opened for writing)."""
    path = tmp_path / "release.db"
    shutil.copyfile(RELEASE_DB, path)
    return path


def _counts(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        conn.close()


# Figures whose value changed by design since 0.1.0 (issue 11), compared no more:
# - flag: the rules read anytime-valid bounds in labeling order, not point estimates and fixed-sample
#   intervals; the messages name those bounds; the direction reason's value is (lenient - strict)/n;
# - sample_size.more_claims_for_*: one "how many more" per goal, the target's from the anytime rule
#   (None past the practical size), kappa's from the design-based (answer-clustered) standard error;
# - agreement_bootstrap, kappa_bootstrap, agreement_weighted intervals: withheld (null, with a reason)
#   below 10 answers;
# - human_human: on the blind verdicts (given before the reveal), no longer the final ones;
# - disagreeing_claims: the sealed holdout's claims (issue 12; this database marks three holdout
#   answers) are no longer listed; the test below checks the list is the old one without them.
CHANGED_BY_DESIGN = (
    ".flag",
    ".sample_size.more_claims_for_kappa",
    ".sample_size.more_claims_for_target",
    ".agreement_bootstrap",
    ".kappa_bootstrap",
    ".agreement_weighted.ci_low",
    ".agreement_weighted.ci_high",
    ".human_human",
    ".disagreeing_claims",
)


def _same(expected: object, actual: object, where: str = "") -> list[str]:
    """Differences between the old output and the new one; keys the old one lacked are ignored."""
    if where in CHANGED_BY_DESIGN:
        return []
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: {actual!r} is not an object"]
        return [
            d
            for k, v in expected.items()
            for d in (_same(v, actual[k], f"{where}.{k}") if k in actual else [f"{where}.{k}: missing"])
        ]
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: {actual!r} != {expected!r}"]
        return [
            d
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for d in _same(e, a, f"{where}[{i}]")
        ]
    if isinstance(expected, float) and isinstance(actual, float):
        close = abs(expected - actual) <= 1e-12 * max(1.0, abs(expected))
        return [] if close else [f"{where}: {actual} != {expected}"]
    return [] if expected == actual else [f"{where}: {actual!r} != {expected!r}"]


def test_same_found_a_planted_difference() -> None:
    assert _same({"a": 1.0, "b": [1, 2]}, {"a": 1.0, "b": [1, 2], "new": 3}) == []
    assert _same({"a": 1.0}, {"a": 1.1}) == [".a: 1.1 != 1.0"]
    assert _same({"a": {"b": 1}}, {"a": {}}) == [".a.b: missing"]
    assert _same({"flag": 1, "kappa": 1}, {"flag": 2, "kappa": 2}) == [".kappa: 2 != 1"]


def test_release_database_upgrades_without_loss(release_db: Path) -> None:
    before = _counts(release_db)
    conn = sqlite3.connect(release_db)
    applied_before = [r[0] for r in conn.execute("SELECT name FROM _sqlite_migrations ORDER BY rowid")]
    conn.close()
    store.connect(release_db).conn.close()  # applies whatever migrations are new since 0.1.0
    assert _counts(release_db) == before
    conn = sqlite3.connect(release_db)
    applied = [r[0] for r in conn.execute("SELECT name FROM _sqlite_migrations ORDER BY rowid")]
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    conn.close()
    assert applied[: len(applied_before)] == applied_before
    assert [m.name for m in store.migrations.pending(store.connect(release_db))] == []


@pytest.mark.parametrize("expected", sorted(p.name for p in (DATA / "release-0.1.0-stats").glob("*.json")))
def test_stats_on_the_release_database_match_that_release(
    release_db: Path, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run, _, cycle = expected.removesuffix(".json").partition("+")
    argv = ["--db", str(release_db), "stats", "--judge-run", run, "--json"]
    if cycle:
        argv += ["--cycle", cycle]
    assert main(argv) == 0
    old = json.loads((DATA / "release-0.1.0-stats" / expected).read_text(encoding="utf-8"))
    new = json.loads(capsys.readouterr().out)
    with store.session(release_db) as db:
        sealed = split.sealed_claim_keys(db, run)
    # Claim ids of the sealed holdout are withheld from every output since the split existed;
    # every other figure is as 0.1.0 printed it.
    for key in ("lenient_claims", "strict_claims"):
        old["direction"][key] = [k for k in old["direction"][key] if k not in sealed]
    if new["agreement"]["basis"] == "per_reviewer":
        # Several reviewers on some claims: the headline compares the judge with each reviewer's blind
        # verdict (by design); the release's figures are the final-label view beside it.
        view = new["agreement_final_label"]
        assert view["n_claims"] == old["n_claims"]
        assert _same(old["agreement"], view["agreement"], ".agreement") == []
        assert view["kappa"] == pytest.approx(old["kappa"]["value"], abs=1e-12)
        assert view["direction"] == {k: old["direction"][k] for k in ("lenient", "strict")}
        return
    assert _same(old, new) == []
    assert new["disagreeing_claims"] == [k for k in old["disagreeing_claims"] if k not in sealed]
