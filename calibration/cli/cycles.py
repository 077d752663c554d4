"""`cycle`, `close-labeling` and `holdout`."""

from __future__ import annotations

import argparse
import sys

from .. import fmt, store
from .common import db_path as _db_path


def _add_cycles(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from .. import cycles, sampling

    p = sub.add_parser("cycle", help="calibration cycles: sample, assign, close")
    csub = p.add_subparsers(dest="cycle_command", required=True, metavar="ACTION")
    c = csub.add_parser("create", help="sample judged answers of a run into a new cycle")
    c.add_argument("--name", required=True, help="the new cycle's name (unique)")
    c.add_argument("--judge-run", help="MODEL@VERSION (default: the most recently imported run)")
    c.add_argument(
        "--size",
        type=int,
        default=cycles.DEFAULT_SIZE,
        help=f"answers to sample ({cycles.MIN_SIZE}-{cycles.MAX_SIZE} unless --force, at most "
        f"{cycles.SIZE_LIMIT})",
    )
    c.add_argument(
        "--seed", type=int, help=f"random seed, 0 to {cycles.SEED_LIMIT} (default: drawn and recorded)"
    )
    c.add_argument(
        "--strategy",
        choices=sampling.STRATEGIES,
        default="random",
        help="how answers are drawn (default random)",
    )
    c.add_argument(
        "--failure-share",
        type=float,
        default=sampling.DEFAULT_FAILING_SHARE,
        help="failures-first: least share of the slots for answers with a "
        f"non-SUPPORTED verdict (default {sampling.DEFAULT_FAILING_SHARE})",
    )
    _add_goal(c, "planned: what to allocate the labels for")
    c.add_argument(
        "--reviewers", default="", help="comma-separated reviewers (default: open to every reviewer)"
    )
    c.add_argument(
        "--overlap",
        type=float,
        default=cycles.DEFAULT_OVERLAP,
        help="share of answers given to two reviewers (default 0.2)",
    )
    c.add_argument("--holdout", action="store_true", help="sample only holdout answers")
    c.add_argument(
        "--include-labeled",
        action="store_true",
        help="also sample answers whose claims all have a final human label",
    )
    c.add_argument(
        "--require-evidence",
        action="store_true",
        help="every SUPPORTED verdict must name its evidence chunks before the commit",
    )
    c.add_argument("--force", action="store_true", help="allow a size outside the bounds")
    c.add_argument("--created-by", default=_login_name(), help="recorded as the cycle's creator")
    c.set_defaults(handler=cli_cycle_create)
    c = csub.add_parser("plan", help="show what a planned cycle would draw and buy, drawing nothing")
    c.add_argument("--judge-run", help="MODEL@VERSION (default: the most recently imported run)")
    _add_goal(c, "what the labels are for")
    c.add_argument(
        "--size",
        type=int,
        default=cycles.DEFAULT_SIZE,
        help=f"answers the cycle would draw (default {cycles.DEFAULT_SIZE})",
    )
    c.add_argument("--holdout", action="store_true", help="plan a holdout cycle")
    c.add_argument(
        "--include-labeled",
        action="store_true",
        help="also plan over answers whose claims all have a final human label",
    )
    c.set_defaults(handler=cli_cycle_plan)
    c = csub.add_parser("list", help="every cycle with its progress")
    c.set_defaults(handler=cli_cycle_list)
    c = csub.add_parser("show", help="one cycle: its answers in order, assignments, progress")
    c.add_argument("name", help="the cycle")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.set_defaults(handler=cli_cycle_show)
    c = csub.add_parser("close", help="close a cycle and freeze its figures")
    c.add_argument("name", help="the cycle")
    c.add_argument(
        "--force", action="store_true", help="close even though reviewers still have claims to label"
    )
    c.set_defaults(handler=cli_cycle_close)
    c = csub.add_parser("reassign", help="move a reviewer's open work in a cycle to another reviewer")
    c.add_argument("name", help="the cycle")
    c.add_argument("--from", dest="from_reviewer", required=True, help="the reviewer whose work moves")
    c.add_argument("--to", dest="to_reviewer", required=True, help="the reviewer who takes it over")
    c.add_argument("--by", default=_login_name(), help="recorded as who reassigned it")
    c.set_defaults(handler=cli_cycle_reassign)

    p = sub.add_parser(
        "close-labeling",
        help="close labeling for a judge run: the final reading decides, no new cycle is drawn",
        description="Close labeling for a judge run, one way: the final fixed-sample reading is taken "
        "now from the labels so far and decides what the running rule left open; no new cycle is "
        "drawn from the run. Reviewers may finish the cycles already drawn: their labels count in "
        "the figures and the running rule, not in the final reading. Nothing undoes it (restore a "
        "backup made before instead).",
    )
    p.add_argument("judge_run", metavar="RUN", help="MODEL@VERSION, or VERSION when unique")
    p.add_argument("--by", required=True, metavar="NAME", help="who closes it (a lead)")
    p.add_argument("--yes", action="store_true", help="close it: without this nothing is written")
    p.set_defaults(handler=cli_close_labeling)

    p = sub.add_parser("holdout", help="mark answers as holdout (sampled only by --holdout cycles)")
    hsub = p.add_subparsers(dest="holdout_command", required=True, metavar="ACTION")
    for action, text in (("add", "mark answers as holdout"), ("remove", "clear the holdout mark")):
        h = hsub.add_parser(action, help=text)
        h.add_argument("answer_ids", nargs="+", metavar="ANSWER_ID", help="answer ids, as imported")
        h.set_defaults(handler=cli_holdout, flag=action == "add")
    h = hsub.add_parser("list", help="the holdout answers")
    h.set_defaults(handler=cli_holdout_list)


def _login_name() -> str | None:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name in a bare container: record nobody
        return None


def cli_cycle_create(args: argparse.Namespace) -> int:
    from .. import cycles
    from ..fmt import plural

    with store.session(_db_path(args)) as db:
        cycle = cycles.create_cycle(
            db,
            name=args.name,
            judge_run=args.judge_run,
            size=args.size,
            seed=args.seed,
            strategy=args.strategy,
            reviewers=cycles.typed_reviewers(args.reviewers),
            overlap=args.overlap,
            holdout=args.holdout,
            include_labeled=args.include_labeled,
            force=args.force,
            created_by=args.created_by,
            failing_share=args.failure_share,
            goal=args.goal,
            require_evidence=args.require_evidence,
        )
        load = {r.reviewer: r.total for r in cycles.progress(db, cycle.id).reviewers}
    for warning in cycle.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(
        f"cycle {cycle.name}: {plural(cycle.size, 'answer')} of {cycle.judge_run} "
        f"({cycle.strategy}, seed {cycle.seed}{', holdout' if cycle.holdout else ''})"
    )
    for note in cycle.notes:
        print(note)
    if cycle.reviewers:
        print("assigned claims: " + ", ".join(f"{r} {n}" for r, n in load.items()))
    else:
        print("open to every reviewer")
    return 0


def cli_cycle_plan(args: argparse.Namespace) -> int:
    from .. import cycles

    with store.session(_db_path(args)) as db:
        plan = cycles.plan_next(
            db,
            judge_run=args.judge_run,
            goal=args.goal,
            size=args.size,
            holdout=args.holdout,
            include_labeled=args.include_labeled,
        )
    print("\n".join([*plan.summary(), "", *plan.lines()]))
    return 0


def cli_cycle_list(args: argparse.Namespace) -> int:
    from .. import cycles
    from ..fmt import plural

    with store.session(_db_path(args)) as db:
        rows = [(c, cycles.progress(db, c.id)) for c in cycles.list_cycles(db)]
    if not rows:
        print("no cycles yet")
    for c, prog in rows:
        print(
            f"{c.name}\t{c.status}\t{c.judge_run}\t{c.strategy}\tseed {c.seed}\t"
            f"{plural(c.size, 'answer')}\t{prog.headline()}\t{c.created_at}"
        )
    return 0


def cli_cycle_show(args: argparse.Namespace) -> int:
    import json

    from .. import cycles, planning
    from ..fmt import plural

    with store.session(_db_path(args)) as db:
        cycle = cycles.get_cycle(db, args.name)
        items = cycles.cycle_answers(db, cycle.id)
        prog = cycles.progress(db, cycle.id)
    if args.json:
        out = {
            "name": cycle.name,
            "judge_run": cycle.judge_run,
            "strategy": cycle.strategy,
            "seed": cycle.seed,
            "size": cycle.size,
            "status": cycle.status,
            "overlap": cycle.overlap,
            "holdout": cycle.holdout,
            "include_labeled": cycle.include_labeled,
            "failing_share": cycle.failing_share,
            "created_by": cycle.created_by,
            "created_at": cycle.created_at,
            "closed_at": cycle.closed_at,
            "reviewers": list(cycle.reviewers),
            "answers": list(cycle.answers),
            "items": [
                {
                    "position": i.position,
                    "answer_id": i.answer_id,
                    "inclusion_prob": i.inclusion_prob,
                    "claims": i.claims,
                    "reviewers": list(i.reviewers),
                }
                for i in items
            ],
            "progress": prog.as_dict(),
            "snapshot": cycle.snapshot,
            # The plan without every answer's stratum, which the run's figures read, not a lead.
            "plan": None
            if cycle.plan is None
            else {k: v for k, v in cycle.plan.items() if k != "answer_strata"},
        }
        print(json.dumps(out, ensure_ascii=False, indent=2))
        return 0
    share = f", failing share {cycle.failing_share:g}" if cycle.failing_share is not None else ""
    if cycle.plan is not None:
        share = f", for {planning.GOAL_NAMES[cycle.plan['goal']]}"
    print(
        f"cycle {cycle.name} ({cycle.status}): {cycle.judge_run}, {cycle.strategy}{share}, "
        f"seed {cycle.seed}, {plural(cycle.size, 'answer')}{', holdout' if cycle.holdout else ''}"
    )
    print(
        f"created {cycle.created_at} by {cycle.created_by or 'unknown'}"
        + (f"; closed {cycle.closed_at}" if cycle.closed_at else "")
    )
    print(f"progress: {prog.headline()}" + "".join(f"; {r.reviewer} {r.counts()}" for r in prog.reviewers))
    if prog.unclear:
        print(f"unclear: {plural(prog.unclear, 'claim')} marked unclear, waiting for a lead's decision")
    for i in items:
        who = ", ".join(i.reviewers) or "anyone"
        print(
            f"  {i.position + 1:>3}. {i.answer_id}\tpi {i.inclusion_prob:.3f}\t"
            f"{plural(i.claims, 'claim')}\t{who}"
        )
    return 0


def cli_cycle_reassign(args: argparse.Namespace) -> int:
    from .. import cycles
    from ..fmt import plural

    with store.session(_db_path(args)) as db:
        done = cycles.reassign(db, args.name, args.from_reviewer, args.to_reviewer, by=args.by)
    for warning in done.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(
        f"cycle {done.cycle}: {plural(len(done.moved), 'answer')} moved from {done.from_reviewer} "
        f"to {done.to_reviewer}"
    )
    return 0


def cli_cycle_close(args: argparse.Namespace) -> int:
    from .. import cycles

    with store.session(_db_path(args)) as db:
        cycle = cycles.close_cycle(db, args.name, force=args.force)
    fig = cycles.frozen_figures(cycle.snapshot)
    if fig is None:
        print(f"cycle {cycle.name} closed")
        return 0
    line = cycles.progress_headline(
        fig.labeled or 0, fig.total or 0, fig.reused or 0, fig.labeled_elsewhere or 0
    )
    print(f"cycle {cycle.name} closed: {line}")
    if fig.plan is not None:
        print(cycles.plan_sentence(fig.plan))
    a = fig.assessment
    if a is None:
        print(fig.note or "no figures: no claim had a final human label")
        return 0

    # The cycle's assessment, as Trend and the Dashboard show it.
    print(
        f"judge-human agreement {fmt.pct(a.agreement.value)} on {fmt.plural(a.counts.labeled, 'claim')}: "
        f"{a.agreement_note()}"
    )
    if fig.weighted_agreement is not None:
        lo, hi = fig.weighted_ci or (None, None)
        print(f"re-weighted to the run (1/pi) {fmt.pct(fig.weighted_agreement)} ({fmt.ci(lo, hi)})")
    kappa = "undefined" if a.kappa.value is None else f"{fmt.num(a.kappa.value)}: {a.kappa_note()}"
    print(f"Cohen's kappa {kappa}")
    print(f"flag: {a.status.upper()}")
    for reason in fig.flag_reasons:
        print(f"  - {reason}")
    return 0


def cli_close_labeling(args: argparse.Namespace) -> int:
    from .. import closing, report

    with store.session(_db_path(args)) as db:
        run = store.find_judge_run(db, args.judge_run)
        if not args.yes:
            print(
                f"labeling of run {run.name} is still open: closing is one way, so add --yes to close it",
                file=sys.stderr,
            )
            return 2
        done = closing.close_labeling(db, run.name, closed_by=args.by)
        _scoped, assessed = report.assess(db, run, bootstrap=0)
    print(f"{fmt.closed_words(done.closed_by, done.closed_at, start=True)} for run {run.name}")
    print(f"flag: {assessed.status.upper()}{assessed.reading_words()}")
    return 0


def cli_holdout(args: argparse.Namespace) -> int:
    from .. import cycles
    from ..fmt import plural

    with store.session(_db_path(args)) as db:
        changed = cycles.mark_holdout(db, args.answer_ids, args.flag)
    print(f"{plural(changed, 'answer')} {'marked as' if args.flag else 'removed from'} holdout")
    return 0


def cli_holdout_list(args: argparse.Namespace) -> int:
    from .. import cycles

    with store.session(_db_path(args)) as db:
        ids = cycles.holdout_answers(db)
    print("\n".join(ids) if ids else "no holdout answers")
    return 0


def _add_goal(parser: argparse.ArgumentParser, what: str) -> None:
    from .. import planning

    parser.add_argument(
        "--goal",
        choices=planning.GOALS,
        default="agreement",
        help=f"{what}: the agreement decision (default) or the corrected grounding score",
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _add_cycles(sub)
