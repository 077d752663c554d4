"""Planned cycles end to end: the plan, the recorded design, and the figures it gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from calibration import cli, cycles, planning, report, sampling, store
from calibration.errors import InputError
from calibration.store import Database
from tests.helpers import assert_no_traceback
from tests.test_cycles import add_answer, click, page, texts

RUN = "judge@v1"
# Where people disagree with the judge: every answer with an UNSUPPORTED verdict has its claim
# called SUPPORTED by people when its number is even; the judge is right everywhere else.
UNSUPPORTED = 24


def build(db: Database) -> dict[str, list[int]]:
    """Run judge@v1 over 96 two-claim answers b00..b95: b00..b23 hold one UNSUPPORTED verdict
    (category cat-a), b24..b95 are all SUPPORTED (cat-a up to b59, then cat-b)."""
    with store.write(db):
        run_id = store.run_id(db, "judge", "v1")
        assert run_id is not None  # made when missing
        claims = {}
        for i in range(96):
            aid = f"b{i:02d}"
            claims[aid] = add_answer(
                db, run_id, aid, [judged(aid, 0), judged(aid, 1)], "cat-a" if i < 60 else "cat-b"
            )
    return claims


def truth(answer_id: str, position: int) -> str:
    """The human verdict of claim `position` of the answer."""
    i = int(answer_id[1:])
    if position == 1 and i < UNSUPPORTED:
        return "SUPPORTED" if i % 2 == 0 else "UNSUPPORTED"
    return "SUPPORTED"


def judged(answer_id: str, position: int) -> str:
    """The judge's verdict on claim `position` of the answer (see build)."""
    return "UNSUPPORTED" if position == 1 and int(answer_id[1:]) < UNSUPPORTED else "SUPPORTED"


def agreements(answer_id: str) -> int:
    """Claims of the answer where people agree with the judge."""
    return sum(truth(answer_id, p) == judged(answer_id, p) for p in range(2))


def label(db: Database, claims: dict[str, list[int]], answer_ids: list[str]) -> None:
    for aid in answer_ids:
        for pos, pk in enumerate(claims[aid]):
            store.record_label(db, claim=pk, reviewer="ann", kind="import", verdict=truth(aid, pos))


@pytest.fixture
def claims_db(fresh_db: Database) -> tuple[Database, dict[str, list[int]]]:
    """A database holding run judge@v1 (see build), nothing labeled, and its claims per answer."""
    return fresh_db, build(fresh_db)


def test_with_no_labels_the_plan_is_the_stratified_allocation(
    claims_db: tuple[Database, dict[str, list[int]]],
) -> None:
    db, _ = claims_db
    plan = cycles.plan_next(db, judge_run=RUN, goal="agreement", size=20)
    assert plan.assumed
    assert len(set(plan.spread.values())) == 1
    pool = {s.name: s.pool for s in plan.strata}
    assert pool == {
        "UNSUPPORTED · category cat-a · unflagged": 24,
        "all-SUPPORTED · category cat-a · unflagged": 36,
        "all-SUPPORTED · category cat-b · unflagged": 36,
    }
    assert {s.name: s.sampled for s in plan.strata} == sampling.allocate(pool, 20)


def test_earlier_labels_move_the_answers_to_where_people_disagree(
    claims_db: tuple[Database, dict[str, list[int]]],
) -> None:
    db, claims = claims_db
    # Earlier labels on every third answer (32 of 96): a uniform spread over the run.
    label(db, claims, [f"b{i:02d}" for i in range(0, 96, 3)])
    plan = cycles.plan_next(db, judge_run=RUN, goal="agreement", size=20)
    assert not plan.assumed
    by = {s.name: s for s in plan.strata}
    hard = by["UNSUPPORTED · category cat-a · unflagged"]
    # Proportional would give it 20 * 16 / 64 = 5; the disagreements are all there.
    assert hard.sampled > 5
    assert hard.labeled_before == 8
    # Every other stratum keeps at least its floor.
    n_pool = sum(s.pool for s in plan.strata)
    assert all(s.prob >= sampling.PLANNED_FLOOR * 20 / n_pool for s in plan.strata)
    assert plan.expected_half_width is not None and plan.current_half_width is not None
    assert plan.expected_half_width < plan.current_half_width
    lines = plan.lines()
    assert lines[0].startswith("planned for the agreement decision")
    assert any(
        "from 8 labeled answers, shrunk toward the judge's uncertainty signals" in line for line in lines
    )


def test_a_planned_cycle_records_the_plans_inclusion_probabilities(
    claims_db: tuple[Database, dict[str, list[int]]],
) -> None:
    db, claims = claims_db
    label(db, claims, [f"b{i:02d}" for i in range(0, 96, 3)])
    plan = cycles.plan_next(db, judge_run=RUN, goal="agreement", size=20)
    cycle = cycles.create_cycle(db, name="p1", judge_run=RUN, size=20, seed=5, strategy="planned")
    assert cycle.plan is not None and cycle.plan["goal"] == "agreement"
    assert cycle.notes[: len(plan.lines())] == tuple(plan.lines())
    prob_of = {s.name: s.prob for s in plan.strata}
    items = cycles.cycle_answers(db, cycle.id)
    stratum = plan.answer_strata
    for item in items:
        assert item.inclusion_prob == pytest.approx(prob_of[stratum[item.answer_id]])
    drawn = {s.name: sum(1 for i in items if stratum[i.answer_id] == s.name) for s in plan.strata}
    assert drawn == {s.name: s.sampled for s in plan.strata}
    # Over the pool the recorded probabilities sum to n.
    assert sum(s.pool * s.prob for s in plan.strata) == pytest.approx(20)
    # The plan is part of the design: recorded, and read back with the cycle.
    assert cycles.get_cycle(db, "p1").plan == cycle.plan
    assert cycle.plan["answer_strata"] == stratum


def _agreement_by_design(prob: dict[str, float], answers: list[str]) -> tuple[float, float]:
    """Hajek ratio and its stratified linearised se, computed here from the recorded pi alone:
    answers with one pi form a stratum of N_h = n_h / pi_h (Cochran 1977, sec. 5A, 6.11), the
    variance without finite-population factors, as the report's (a superpopulation variance)."""
    agree = {a: agreements(a) for a in answers}
    w = {a: 1 / prob[a] for a in answers}
    x = sum(w[a] * 2 for a in answers)
    r = sum(w[a] * agree[a] for a in answers) / x
    var = 0.0
    for pi in set(prob[a] for a in answers):
        members = [a for a in answers if prob[a] == pi]
        n_h = len(members)
        big_n = round(n_h / pi)
        e = [agree[a] - r * 2 for a in members]
        mean = sum(e) / n_h
        s2 = sum((v - mean) ** 2 for v in e) / (n_h - 1)
        var += big_n**2 * s2 / n_h
    return r, var**0.5 / x


def test_a_planned_cycles_report_matches_an_independent_design_based_computation(
    claims_db: tuple[Database, dict[str, list[int]]],
) -> None:
    db, claims = claims_db
    label(db, claims, [f"b{i:02d}" for i in range(0, 96, 3)])
    cycle = cycles.create_cycle(db, name="p1", judge_run=RUN, size=24, seed=11, strategy="planned")
    prob = store.cycles.inclusion_probs(db, cycle.id)
    assert len(set(prob.values())) > 1  # unequal probabilities: the weights matter
    label(db, claims, list(cycle.answers))
    run = store.find_judge_run(db, RUN)
    figures = report.scope_report(db, run, cycle.id, bootstrap=0).report
    assert figures.estimates is not None
    value, se = _agreement_by_design(prob, list(cycle.answers))
    assert figures.estimates.agreement.value == pytest.approx(value)
    assert figures.estimates.agreement.se == pytest.approx(se)
    # The run's figure post-stratifies on the planned strata, which cut every answer of the run,
    # those labeled before the cycle too.
    labeled = [f"b{i:02d}" for i in range(0, 96, 3)] + list(cycle.answers)
    plan = cycle.plan
    assert plan is not None
    cell = {f"b{i:02d}": plan["answer_strata"][f"b{i:02d}"] for i in range(96)}
    agree = {a: agreements(a) for a in labeled}
    num = den = 0.0
    for h in set(cell.values()):
        members = [a for a in cell if cell[a] == h]
        got = [a for a in members if a in agree]
        num += len(members) * np.mean([agree[a] for a in got])
        den += len(members) * 2
    whole = report.scope_report(db, run, bootstrap=0).report
    assert whole.estimates is not None
    assert whole.estimates.agreement.value == pytest.approx(num / den)


def test_closing_a_planned_cycle_says_what_the_plan_expected_and_reached(
    claims_db: tuple[Database, dict[str, list[int]]],
) -> None:
    db, claims = claims_db
    label(db, claims, [f"b{i:02d}" for i in range(0, 96, 3)])
    cycle = cycles.create_cycle(
        db, name="p1", judge_run=RUN, size=20, seed=2, strategy="planned", goal="grounding"
    )
    label(db, claims, list(cycle.answers))
    closed = cycles.close_cycle(db, "p1", force=True)  # the labels came by import, outside the cycle
    fig = cycles.frozen_figures(closed.snapshot)
    assert fig is not None and fig.plan is not None
    assert fig.plan["goal"] == "grounding"
    assert fig.plan["expected_half_width"] == pytest.approx(closed.plan["expected_half_width"])
    assert fig.plan["reached_half_width"] is not None
    assert cycles.plan_sentence(fig.plan).startswith("plan: expected ±")


@pytest.mark.sqlite_only  # finds the file through PRAGMA database_list
def test_cli_shows_the_plan_before_drawing_and_creates_a_planned_cycle(
    claims_db: tuple[Database, dict[str, list[int]]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, claims = claims_db
    label(db, claims, [f"b{i:02d}" for i in range(0, 96, 3)])
    path = db.execute("PRAGMA database_list").fetchone()[2]
    assert cli.main(["--db", path, "cycle", "plan", "--judge-run", RUN, "--goal", "grounding"]) == 0
    out = capsys.readouterr().out
    assert_no_traceback(out, "cycle plan")
    assert out.startswith("A planned cycle of 20 answers for the corrected grounding score:")
    assert "\n\nplanned for the corrected grounding score: 20 answers over" in out  # then the statistics
    assert "after this cycle" in out and "reach a half-width of ±0.05" in out
    assert not cycles.list_cycles(db)  # nothing drawn
    assert (
        cli.main(
            [
                "--db",
                path,
                "cycle",
                "create",
                "--name",
                "p1",
                "--judge-run",
                RUN,
                "--strategy",
                "planned",
                "--goal",
                "grounding",
                "--seed",
                "4",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "planned, seed 4" in out and "planned for the corrected grounding score" in out
    assert cycles.get_cycle(db, "p1").plan is not None


def test_a_bad_goal_is_one_sentence(claims_db: tuple[Database, dict[str, list[int]]]) -> None:
    db, _ = claims_db
    with pytest.raises(InputError, match="goal: unknown 'speed'"):
        cycles.plan_next(db, judge_run=RUN, goal="speed")
    with pytest.raises(InputError, match="goal: unknown 'speed'"):
        cycles.create_cycle(db, name="x", judge_run=RUN, strategy="planned", goal="speed")


@pytest.mark.parametrize(
    ("agreement_needed", "grounding_needed", "want"),
    [
        (3, 2, ("agreement", 30)),  # 3 cycles of 20 = 60 labels: cycles of 30
        (1, 2, ("agreement", 20)),  # 20 labels finish it: one cycle of 20
        (0, 2, ("grounding", 30)),  # the agreement is decided: the grounding score next, 40 labels
        (0, 1, ("grounding", 20)),
        (None, 2, ("agreement", 30)),  # no end in sight: cycles of 30
        (0, None, ("grounding", 30)),
    ],
)
def test_next_cycle_defaults(
    agreement_needed: int | None, grounding_needed: int | None, want: tuple[str, int]
) -> None:
    def plan(goal: str, needed: int | None) -> planning.Plan:
        return planning.Plan(goal, 20, ("base",), (), {}, None, None, None, 0.85, needed, True)

    got = planning.default_goal_and_size(
        plan("agreement", agreement_needed),
        plan("grounding", grounding_needed),
        min_size=15,
        max_size=30,
    )
    assert got == want


@pytest.mark.parametrize(
    ("size", "needed", "noted"),
    [
        (20, 3, True),  # a smaller cycle with more to come: the plan says so
        (15, None, True),
        (20, 1, False),  # the cycle that finishes the decision may be smaller
        (30, 3, False),
    ],
)
def test_the_plan_says_when_a_planned_cycle_is_smaller_than_it_does_best_with(
    size: int, needed: int | None, noted: bool
) -> None:
    plan = planning.Plan("agreement", size, ("base",), (), {}, None, None, None, 0.85, needed, True)
    note = [line for line in plan.lines() if "does best with 30 answers" in line]
    assert len(note) == noted


def test_cycles_page_shows_the_plan_then_creates_a_planned_cycle(
    claims_db: tuple[Database, dict[str, list[int]]], db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, claims = claims_db
    label(db, claims, [f"b{i:02d}" for i in range(0, 96, 3)])
    at = page(db_path, monkeypatch)
    at.selectbox(key="cycle_strategy").set_value("planned")
    at.selectbox(key="cycle_goal").set_value("grounding")
    click(at, "Show the plan")
    assert not at.exception
    assert [s.value for s in at.success] == [
        "The plan of a planned cycle with these choices (nothing drawn yet):"
    ]
    shown = texts(at)
    # The plan in a lead's words first; the statistics behind it under a toggle.
    assert shown[0].startswith("A planned cycle of 20 answers for the corrected grounding score:")
    assert not any(w in t for t in shown[:3] for w in ("spread", "strata", "stratum"))
    (stats,) = [e for e in at.expander if e.label == "The statistics behind the plan"]
    assert next(t.value for t in stats.text).startswith(
        "planned for the corrected grounding score: 20 answers over"
    )
    assert not cycles.list_cycles(db)
    at.text_input(key="cycle_name").input("planned 1")
    at.text_input(key="cycle_seed").input("3")
    click(at, "Create cycle")
    assert not at.exception
    made = cycles.get_cycle(db, "planned 1")
    assert made.strategy == "planned" and made.plan is not None and made.plan["goal"] == "grounding"
    assert "planned 1: 20 answers of judge@v1, planned, seed 3" in texts(at)


def test_next_cycle_prefills_a_goal_and_a_size_within_bounds(
    claims_db: tuple[Database, dict[str, list[int]]],
) -> None:
    db, claims = claims_db
    label(db, claims, [f"b{i:02d}" for i in range(0, 96, 3)])
    found = cycles.next_cycle(db, RUN)
    assert found.goal in planning.GOALS
    assert cycles.MIN_SIZE <= found.size <= cycles.MAX_SIZE
    assert found.answers_left == 96 - len(range(0, 96, 3)) and found.full == 30
    plan = cycles.plan_next(db, judge_run=RUN, goal=found.goal)
    if plan.cycles_needed is None:
        assert found.cycles_needed is None
    else:  # the plan's cycles of 20 counted again in cycles of 30
        assert found.cycles_needed == -(-plan.cycles_needed * plan.size // 30)


def test_next_cycle_of_a_run_with_nothing_left_to_draw(
    claims_db: tuple[Database, dict[str, list[int]]],
) -> None:
    db, claims = claims_db
    label(db, claims, [f"b{i:02d}" for i in range(96)])
    found = cycles.next_cycle(db, RUN)
    assert (found.answers_left, found.size, found.cycles_needed) == (0, 0, None)


def test_cycles_of_several_designs_combine_into_one_post_stratified_run_figure(
    claims_db: tuple[Database, dict[str, list[int]]],
) -> None:
    db, claims = claims_db
    first = cycles.create_cycle(db, name="r1", judge_run=RUN, size=20, seed=1, strategy="random")
    label(db, claims, list(first.answers))
    second = cycles.create_cycle(db, name="p1", judge_run=RUN, size=20, seed=2, strategy="planned")
    label(db, claims, list(second.answers))
    third = cycles.create_cycle(db, name="p2", judge_run=RUN, size=20, seed=3, strategy="planned")
    label(db, claims, list(third.answers))
    assert second.plan is not None and third.plan is not None
    # Every planned cycle of the run cuts it the same way, so they give one partition.
    assert second.plan["answer_strata"] == third.plan["answer_strata"]
    labeled = set(first.answers) | set(second.answers) | set(third.answers)
    assert len(labeled) == 60
    cut = second.plan["answer_strata"]
    num = den = 0.0
    for h in set(cut.values()):
        members = [a for a in cut if cut[a] == h]
        got = [a for a in members if a in labeled]
        num += len(members) * float(np.mean([agreements(a) for a in got]))
        den += len(members) * 2
    whole = report.scope_report(db, store.find_judge_run(db, RUN), bootstrap=0).report
    assert whole.estimates is not None
    assert whole.estimates.agreement.value == pytest.approx(num / den)
    assert whole.estimates.population == "all 96 answers of the run"


def test_a_planned_cycle_completes_the_labels_so_far(
    claims_db: tuple[Database, dict[str, list[int]]],
) -> None:
    db, claims = claims_db
    # Earlier labels crowd the stratum where people disagree: 16 of its 24 answers, 6 of each other.
    label(db, claims, [f"b{i:02d}" for i in [*range(0, 16), *range(24, 30), *range(60, 66)]])
    plan = cycles.plan_next(db, judge_run=RUN, goal="agreement", size=20)
    pool = {s.name: s.pool for s in plan.strata}
    before = {s.name: s.labeled_before for s in plan.strata}
    run = {s.name: s.run for s in plan.strata}
    assert before == {
        "UNSUPPORTED · category cat-a · unflagged": 16,
        "all-SUPPORTED · category cat-a · unflagged": 6,
        "all-SUPPORTED · category cat-b · unflagged": 6,
    }

    def variance_after(alloc: dict[str, int]) -> float:
        """sum_h N_h^2 S_h^2 / (n0_h + n_h) over the run's strata: what the cycle should minimise."""
        return sum(run[h] ** 2 * plan.spread[h] ** 2 / (before[h] + alloc[h]) for h in run)

    as_if_unlabeled = sampling.neyman_allocate(pool, plan.spread, 20)
    assert plan.allocation != as_if_unlabeled
    assert variance_after(plan.allocation) < variance_after(as_if_unlabeled)
    # Every allocation of the 20 within the bounds does no better (the integer optimum).
    lo = sampling.floor_sizes(pool, 20)
    names = sorted(pool)
    first, second, third = names
    best = min(
        variance_after(dict(zip(names, (a, b, 20 - a - b), strict=True)))
        for a in range(lo[first], pool[first] + 1)
        for b in range(lo[second], pool[second] + 1)
        if lo[third] <= 20 - a - b <= pool[third]
    )
    assert variance_after(plan.allocation) == pytest.approx(best)


def test_the_plan_says_chance_of_being_drawn_in_plain_words(
    claims_db: tuple[Database, dict[str, list[int]]],
) -> None:
    db, claims = claims_db
    label(db, claims, [f"b{i:02d}" for i in range(0, 96, 3)])
    plan = cycles.plan_next(db, judge_run=RUN, goal="agreement", size=20)
    lines = plan.lines()
    assert not any("π" in line or "inclusion" in line for line in lines)
    hard = next(s for s in plan.strata if s.name.startswith("UNSUPPORTED"))
    ratio = hard.prob / (20 / sum(s.pool for s in plan.strata))
    assert any(
        line.startswith(
            f"  {hard.name}: {hard.sampled} of {hard.pool} eligible (a {hard.prob:.1%} "
            f"chance of being drawn, {ratio:.1f}× a random cycle's;"
        )
        for line in lines
    )
    assert "re-weighted by each answer's chance of being drawn" in " ".join(lines)


def test_the_grounding_plan_keeps_every_answer_at_half_a_random_cycles_chance(
    claims_db: tuple[Database, dict[str, list[int]]],
) -> None:
    db, claims = claims_db
    label(db, claims, [f"b{i:02d}" for i in range(0, 96, 3)])
    plan = cycles.plan_next(db, judge_run=RUN, goal="grounding", size=20)
    n_pool = sum(s.pool for s in plan.strata)
    assert planning.FLOOR["grounding"] == 0.5
    assert min(s.prob for s in plan.strata) >= 0.5 * 20 / n_pool
    assert max(s.prob for s in plan.strata) > 20 / n_pool  # the plan still moves answers


def test_a_fully_labeled_cycle_counts_more_labels_on_what_the_run_can_still_give(
    claims_db: tuple[Database, dict[str, list[int]]],
) -> None:
    db, claims = claims_db
    first = cycles.create_cycle(db, name="w1", judge_run=RUN, size=20, seed=1, strategy="random")
    label(db, claims, list(first.answers))
    run = store.find_judge_run(db, RUN)
    left = store.cycles.claims_left(db, run.id)
    assert left == sum(len(claims[a]) for a in claims if a not in first.answers) > 0
    whole = report.scope_report(db, run, None, bootstrap=0).report
    cycle = report.scope_report(db, run, first.id, bootstrap=0).report
    for r in (whole, cycle):  # the same bound at run and at cycle scope
        assert r.sample_size.available == left
        assert "no unlabeled claims" not in r.to_text(RUN)
    cycles.mark_holdout(db, [a for a in claims if a not in first.answers][:10])
    held = store.cycles.claims_left(db, run.id)
    assert held == left - sum(len(claims[a]) for a in [a for a in claims if a not in first.answers][:10])


@pytest.mark.parametrize(
    ("needed", "says"),
    [
        (
            None,
            "More than 20 cycles like it would be needed to tell whether the judge reaches the 85% target.",
        ),
        (0, "The labels so far already tell whether the judge reaches the 85% target."),
        (2, "About 2 cycles like it should tell whether the judge reaches the 85% target."),
    ],
)
def test_the_plan_in_a_leads_words(needed: int | None, says: str) -> None:
    plan = planning.Plan("agreement", 30, ("base",), (), {}, 0.8, 0.06, 0.045, 0.85, needed, False)
    summary = plan.summary()
    assert summary[0].startswith("A planned cycle of 30 answers for the agreement decision")
    assert (
        summary[1]
        == "The run's agreement is known to within ±6.0% today, and to within about ±4.5% after this cycle."
    )
    assert summary[2] == says
    assert not any("0.800" in line or "spread" in line for line in summary)  # figures shown nowhere else
