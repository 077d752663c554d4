"""The tuning / holdout split: the allocation rule, its storage and seal, the dashboard's filter,
export/restore, the CLI contract, and the paired statistics the lab reports on each part."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from calibration import cycles, dashboard, split, store
from calibration.errors import ConflictError, InputError
from calibration.importing import import_answers, import_labels
from calibration.judge.paired import claims_to_decide, mcnemar_exact_p, paired_difference
from calibration.store import Database

# ---------------------------------------------------------------- the rule


@pytest.mark.parametrize(
    "sizes, share, expected",
    [
        # stratum sizes in STRATA order -> holdout count per stratum (cumulative rounding)
        ({"CONTRADICTED": 10, "UNSUPPORTED": 10, "SUPPORTED": 10}, 0.5, [5, 5, 5]),
        ({"CONTRADICTED": 3, "UNSUPPORTED": 3, "SUPPORTED": 3}, 0.5, [2, 1, 2]),
        ({"CONTRADICTED": 1, "SUPPORTED": 9}, 0.3, [0, 3]),
        ({"UNSUPPORTED": 7, "SUPPORTED": 93}, 0.2, [1, 19]),
    ],
)
def test_holdout_counts_per_stratum(sizes: dict[str, int], share: float, expected: list[int]) -> None:
    strata = {f"{s[0]}{i:03d}": s for s, n in sizes.items() for i in range(n)}
    parts = split.assign_parts(strata, seed=3, holdout_share=share)
    got = [sum(parts[a] == "holdout" for a, s in strata.items() if s == name) for name in sizes]
    assert got == expected
    assert sum(got) == math.floor(share * len(strata) + 0.5)


def test_the_rule_is_reproducible_and_seeded() -> None:
    strata = {f"a{i}": ("SUPPORTED" if i % 3 else "UNSUPPORTED") for i in range(60)}
    one = split.assign_parts(strata, seed=11, holdout_share=0.5)
    assert one == split.assign_parts(dict(reversed(list(strata.items()))), seed=11, holdout_share=0.5)
    assert one != split.assign_parts(strata, seed=12, holdout_share=0.5)


def test_forced_answers_are_holdout() -> None:
    strata = {f"a{i}": "SUPPORTED" for i in range(10)}
    parts = split.assign_parts(strata, seed=0, holdout_share=0.2, forced_holdout={"a1", "a2", "a3"})
    assert {a for a, p in parts.items() if p == "holdout"} == {"a1", "a2", "a3"}


def test_every_answer_is_equally_likely_to_be_held_out() -> None:
    # Simulation: over seeds, each answer lands in the holdout with probability `share`
    # (within each stratum the allocation is a uniform random subset of fixed size).
    strata = {f"a{i:02d}": ("SUPPORTED" if i < 14 else "CONTRADICTED") for i in range(20)}
    reps = 2000
    counts = Counter()
    for seed in range(reps):
        counts.update(
            a for a, p in split.assign_parts(strata, seed=seed, holdout_share=0.5).items() if p == "holdout"
        )
    freq = np.array([counts[a] / reps for a in strata])
    # 14 * 0.5 = 7 of 14 and 6 * 0.5 = 3 of 6: exactly one half each; 4 standard errors.
    assert np.all(np.abs(freq - 0.5) < 4 * math.sqrt(0.25 / reps))


@pytest.mark.parametrize(
    "verdicts, stratum",
    [
        (["SUPPORTED", "SUPPORTED"], "SUPPORTED"),
        (["SUPPORTED", "UNSUPPORTED"], "UNSUPPORTED"),
        (["UNSUPPORTED", "CONTRADICTED"], "CONTRADICTED"),
        ([], "unjudged"),
    ],
)
def test_answer_stratum(verdicts: list[str], stratum: str) -> None:
    assert split.answer_stratum(verdicts) == stratum


# ---------------------------------------------------------------- stored split


def test_the_wice_split_is_half_and_half_by_judge_verdict(wice_db: Database) -> None:
    s = split.ensure_split(wice_db, stratify_run=store.find_judge_run(wice_db, "gpt-4-0613@wice-gpt4"))
    assert len(s.tuning) == len(s.holdout) == 50 and not s.pending and s.sealed
    assert set(s.tuning).isdisjoint(s.holdout)
    strata = dict(wice_db.execute("SELECT answer_id, stratum FROM split_answers"))
    for stratum, n in Counter(strata.values()).items():
        held = sum(strata[a] == stratum for a in s.holdout)
        assert abs(held - n / 2) <= 1, stratum
    # Made once: bringing it up to date again changes nothing.
    assert split.ensure_split(wice_db).holdout == s.holdout


def _judged(aid: str) -> dict:
    return {
        "id": aid,
        "question": "q?",
        "answer": "a.",
        "chunks": [{"id": "S1", "text": "t"}],
        "claims": [{"id": f"{aid}.c1", "claim": f"claim of {aid}", "verdict": "SUPPORTED"}],
        "judge_model": "j",
        "judge_prompt_version": "v1",
    }


@pytest.fixture
def small_db(db_path: Path, tmp_path: Path) -> Database:
    """Ten judged answers, six labeled (L0..L5); U0..U3 unlabeled."""
    src = tmp_path / "a.jsonl"
    ids = [f"L{i}" for i in range(6)] + [f"U{i}" for i in range(4)]
    src.write_text("\n".join(json.dumps(_judged(a)) for a in ids), encoding="utf-8")
    labels = tmp_path / "l.csv"
    labels.write_text(
        "answer_id,claim_id,verdict,reviewer\n" + "".join(f"L{i},L{i}.c1,SUPPORTED,ann\n" for i in range(6)),
        encoding="utf-8",
    )
    with store.session(db_path) as db:
        import_answers(db, src)
        import_labels(db, labels)
        yield db


def _label(db: Database, tmp_path: Path, aid: str) -> None:
    path = tmp_path / f"{aid}.csv"
    path.write_text(f"answer_id,claim_id,verdict,reviewer\n{aid},{aid}.c1,SUPPORTED,ann\n", encoding="utf-8")
    import_labels(db, path)


def test_answers_are_assigned_once_and_new_labels_wait_sealed(small_db: Database, tmp_path: Path) -> None:
    cycles.mark_holdout(small_db, ["L5", "U3"])
    first = split.ensure_split(small_db, created_by="lead")
    assert "L5" in first.holdout and len(first.holdout) == 3 and len(first.tuning) == 3
    # U3 is a cycle holdout answer without labels: sealed although not split yet.
    assert "U3" in split.sealed_answer_ids(small_db)
    _label(small_db, tmp_path, "U0")
    now = split.current(small_db)
    assert now.pending == ["U0"] and "U0" in split.sealed_answer_ids(small_db)  # may still land in holdout
    later = split.ensure_split(small_db)
    assert not later.pending and set(first.holdout) <= set(later.holdout)
    assert set(first.tuning) <= set(later.tuning)


def test_unsealing_is_recorded_and_marks_the_holdout_used(small_db: Database, tmp_path: Path) -> None:
    s = split.ensure_split(small_db)
    keys = split.sealed_claim_keys(small_db, "j@v1")
    assert keys == {f"{a}/{a}.c1" for a in s.holdout}
    with pytest.raises(ConflictError):
        split.new_holdout(small_db)  # still sealed
    with pytest.raises(InputError, match=r"^reason: contains a NUL character"):
        split.unseal(small_db, who="lead", reason="audit\x00")
    assert split.sealed_claim_keys(small_db) == keys  # still sealed
    gen = split.unseal(small_db, who="lead", reason="audit")
    assert (gen.unsealed_by, gen.unseal_reason) == ("lead", "audit") and gen.unsealed_at
    assert split.sealed_claim_keys(small_db) == set() and split.current(small_db).used
    with pytest.raises(ConflictError, match="already unsealed by lead"):
        split.unseal(small_db, who="other")
    # New labels wait for a fresh holdout; the used holdout's answers become tuning answers.
    _label(small_db, tmp_path, "U0")
    _label(small_db, tmp_path, "U1")
    assert split.ensure_split(small_db).pending == ["U0", "U1"]
    fresh = split.new_holdout(small_db, created_by="lead")
    assert fresh.sealed and set(fresh.holdout) <= {"U0", "U1"} and len(fresh.holdout) == 1
    assert set(s.holdout) <= set(fresh.tuning)


def test_dashboard_lists_no_sealed_claim(wice_db: Database) -> None:
    run = "gpt-4-0613@wice-gpt4"
    s = split.ensure_split(wice_db, stratify_run=store.find_judge_run(wice_db, run))
    held = set(s.holdout)
    d = dashboard.build(wice_db, run=run, bootstrap=0)
    listed = (
        [c.answer_id for c in d.disagreements]
        + [k.split("/")[0] for r in d.reasons for k in r.claim_keys]
        + [k.split("/")[0] for k in d.details]
        + [c.answer_id for c in d.pending]
        + [k.split("/")[0] for k in d.verdicts]
    )
    assert listed and not held & set(listed)
    assert d.report.n_claims == 100  # the figures still count every labeled claim
    before = dashboard.fingerprint(wice_db)
    split.unseal(wice_db, who="lead")
    assert dashboard.fingerprint(wice_db) != before  # a cached page redraws
    d = dashboard.build(wice_db, run=run, bootstrap=0)
    assert held & {c.answer_id for c in d.disagreements}


def _strings(value: object) -> list[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _sealed_in(value: object, held: set[str]) -> list[str]:
    """The strings of `value` that name a held-out answer or one of its claims ('ANSWER/CLAIM')."""
    return [s for s in _strings(value) if s in held or s.split("/")[0] in held]


def test_stats_json_and_api_name_no_sealed_claim(
    wice_db: Database, db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from calibration import api
    from calibration.cli import main

    run = "gpt-4-0613@wice-gpt4"
    held = set(split.ensure_split(wice_db, stratify_run=store.find_judge_run(wice_db, run)).holdout)
    assert main(["--db", str(db_path), "stats", "--json", "--judge-run", run, "--bootstrap", "0"]) == 0
    printed = json.loads(capsys.readouterr().out)
    from_api = api.connect(db_path).stats(run, bootstrap=0)
    for out in (printed, from_api):
        assert not _sealed_in(out, held)
        assert out["n_claims"] == 100  # the figures still count every labeled claim
    split.unseal(wice_db, who="lead")
    named = _sealed_in(api.connect(db_path).stats(run, bootstrap=0), held)
    assert named  # the same lists name holdout claims once the holdout is unsealed


def test_the_lab_call_viewer_offers_no_sealed_answer(wice_db: Database) -> None:
    from calibration import report
    from calibration.store import lab as lab_store

    held = set(
        split.ensure_split(
            wice_db, stratify_run=store.find_judge_run(wice_db, "gpt-4-0613@wice-gpt4")
        ).holdout
    )
    run, _ = lab_store.open_lab_run(
        wice_db,
        model="m",
        version="lab1",
        template="t",
        template_sha256="x",
        base_url="http://127.0.0.1:9",
        params={},
        scope="labeled",
    )
    answers = sorted(split.current(wice_db).tuning + split.current(wice_db).holdout)
    for aid in answers:
        lab_store.record_call(
            wice_db,
            run.id,
            lab_store.CallRecord(
                answer_id=aid,
                status="failed" if aid in held else "ok",
                prompt=f"prompt of {aid}",
                response=None,
                exchanges=[],
                attempts=1,
                error=None,
                prompt_tokens=None,
                completion_tokens=None,
                total_tokens=None,
                latency_ms=1.0,
            ),
        )
    for failed_only in (False, True):
        offered = report.inspectable_calls(wice_db, run.id, failed_only=failed_only)
        assert not held & set(offered)
    offered = report.inspectable_calls(wice_db, run.id)
    assert offered == sorted(set(answers) - held)
    blind = {offered[0]}
    assert report.inspectable_calls(wice_db, run.id, hidden=blind) == offered[1:]
    split.unseal(wice_db, who="lead")
    assert report.inspectable_calls(wice_db, run.id) == answers


def test_cli_split_show_json(wice_db: Database, db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from calibration.cli import main

    assert main(["--db", str(db_path), "split", "show", "--json", "--judge-run", "gpt-4-0613@wice-gpt4"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= {"tuning", "holdout", "sealed"} and data["sealed"] is True
    assert len(data["tuning"]) == len(data["holdout"]) == 50
    assert main(["--db", str(db_path), "split", "unseal", "--who", "lead"]) == 0
    capsys.readouterr()
    assert main(["--db", str(db_path), "split", "show", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sealed"] is False


# ---------------------------------------------------------------- paired statistics


def _newcombe_reference(a: int, b: int, c: int, d: int) -> tuple[float, float]:
    """Method 10 of Newcombe (1998), written out again from the paper with statsmodels' Wilson
    intervals for the two margins (an independent computation of the same formula)."""
    from statsmodels.stats.proportion import proportion_confint

    n = a + b + c + d
    p1, p2 = (a + c) / n, (a + b) / n
    l1, u1 = proportion_confint(a + c, n, alpha=0.05, method="wilson")
    l2, u2 = proportion_confint(a + b, n, alpha=0.05, method="wilson")
    prod = (a + b) * (c + d) * (a + c) * (b + d)
    adbc = a * d - b * c
    corr = 0.0 if prod == 0 else (max(adbc - n / 2, 0) if adbc > 0 else adbc) / math.sqrt(prod)
    lower = (p1 - p2) - math.sqrt((p1 - l1) ** 2 - 2 * corr * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    upper = (p1 - p2) + math.sqrt((u1 - p1) ** 2 - 2 * corr * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
    return lower, upper


@pytest.mark.parametrize(
    "a, b, c, d", [(30, 2, 9, 7), (10, 5, 5, 10), (0, 0, 3, 0), (40, 0, 0, 8), (12, 1, 8, 29), (1, 7, 2, 0)]
)
def test_paired_difference_matches_an_independent_computation(a: int, b: int, c: int, d: int) -> None:
    got = paired_difference(a, b, c, d)
    lo, hi = _newcombe_reference(a, b, c, d)
    assert got.difference == pytest.approx((c - b) / (a + b + c + d))
    assert (got.ci_low, got.ci_high) == (pytest.approx(max(-1, lo)), pytest.approx(min(1, hi)))


def test_paired_interval_covers_the_true_difference() -> None:
    # Simulation: 48 claims, old right 70%, new right 80%, correlated (both right 65%).
    rng = np.random.default_rng(5)
    probs = np.array([0.65, 0.05, 0.15, 0.15])  # a, b (old only), c (new only), d
    truth = probs[2] - probs[1]
    reps, hits = 4000, 0
    for _ in range(reps):
        a, b, c, d = rng.multinomial(48, probs).tolist()
        r = paired_difference(a, b, c, d)
        hits += r.ci_low <= truth <= r.ci_high
    # Newcombe reports coverage near the nominal 95% for this method; 4000 draws: se ~0.35%.
    assert 0.93 <= hits / reps <= 0.975


@pytest.mark.parametrize("b, c", [(2, 9), (0, 5), (7, 7), (13, 4), (0, 0)])
def test_mcnemar_p_matches_scipy(b: int, c: int) -> None:
    got = mcnemar_exact_p(b, c)
    assert got is None if b + c == 0 else got == pytest.approx(binomtest(min(b, c), b + c, 0.5).pvalue)


@pytest.mark.parametrize("b, c, n", [(1, 4, 48), (2, 5, 30), (3, 3, 40), (0, 2, 20), (2, 9, 48)])
def test_claims_to_decide_is_the_first_size_that_decides(b: int, c: int, n: int) -> None:
    got = claims_to_decide(b, c, n)
    if b == c:
        assert got is None
        return

    def p(m: int) -> float:
        bb, cc = round(b * m / n), round(c * m / n)
        return binomtest(min(bb, cc), bb + cc, 0.5).pvalue if bb + cc else 1.0

    assert got is not None and got >= n and p(got) < 0.05
    if got > n:
        assert p(got - 1) >= 0.05


def test_assigning_answers_counts_the_rows_it_wrote_on_every_engine(wice_db: Database) -> None:
    # psycopg counts no rows for a many-row INSERT (rowcount -1): the count comes from RETURNING.
    gen = store.split.create_split(
        wice_db, after=None, seed=1, holdout_share=0.5, stratify_run_id=None, created_by="lead"
    )
    answers = store.split.labeled_answer_ids(wice_db)[:4]
    first = [(a, "tuning", "s") for a in answers[:3]]
    assert store.split.assign_answers(wice_db, gen, first) == 3
    both = [(a, "holdout", "s") for a in answers]
    assert store.split.assign_answers(wice_db, gen, both) == 1  # three were assigned already
    assigned = store.split.assignments(wice_db)
    assert {a: p for a, (_, p) in assigned.items()} == {
        **{a: "tuning" for a in answers[:3]},
        answers[3]: "holdout",
    }
