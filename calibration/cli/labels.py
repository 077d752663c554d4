"""`info`, `adjudicate`, `stats` and `thresholds`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import gate, store
from ..errors import InputError
from ..export import atomic_write
from ..flag import Flag
from ..models import Verdict
from .common import db_path as _db_path


def _add_labels(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("info", help="counts per judge run")
    p.set_defaults(handler=cli_info)

    p = sub.add_parser(
        "adjudicate",
        help="settle the human label of a claim reviewers disagree on",
        description="Record the adjudicated human label of one claim. It overrides "
        "disagreeing or unclear reviewer labels in every figure and export; each "
        "decision is kept in the label history.",
    )
    p.add_argument("answer_id", help="the answer's id, as imported")
    p.add_argument("claim_id", help="the claim's id within the answer")
    p.add_argument("verdict", type=str.upper, choices=[v.value for v in Verdict], help="the settled verdict")
    p.add_argument("--by", required=True, metavar="NAME", help="who decides (a lead)")
    p.add_argument("--note", help="why")
    p.set_defaults(handler=cli_adjudicate)


def cli_info(args: argparse.Namespace) -> int:
    with store.session(_db_path(args)) as db:
        summary = store.info(db)
    totals = summary["totals"]
    print(f"database: {store.shown(_db_path(args))}")
    print(
        "answers {answers}, claims {claims}, labeled claims {labeled_claims}, "
        "reviewers {reviewers}, label events {label_events}".format(**totals)
    )
    runs = summary["runs"]
    if not runs:
        print("no judge runs yet")
    for r in runs:
        verdicts = ", ".join(f"{k} {v}" for k, v in r.verdicts.items())
        print(
            f"  {r.run.name}: {r.answers} answers, {r.claims} claims ({verdicts}); "
            f"{r.labeled_claims} claims with a human label"
        )
    return 0


def cli_adjudicate(args: argparse.Namespace) -> int:
    from ..text import check_text

    if args.note is not None:
        check_text(args.note, "--note")
    with store.session(_db_path(args)) as db:
        claim = store.claim_pk(db, args.answer_id, args.claim_id)
        store.adjudicate(db, claim=claim, adjudicator=args.by, verdict=args.verdict, note=args.note)
    print(f"{args.answer_id}/{args.claim_id}: adjudicated {args.verdict} by {args.by}")
    return 0


def _add_stats(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "stats",
        help="judge vs human agreement with intervals, and the revise flag",
        description="Agreement of a judge run with the final human labels: every "
        "figure with its 95% interval, the confusion matrix (rows human, columns "
        "judge) and the flag (ok / revise / inconclusive) with its reasons.",
    )
    p.add_argument(
        "--judge-run",
        metavar="RUN",
        help="MODEL@VERSION, or VERSION when unique (default: the most recently "
        "imported run, or the cycle's run with --cycle)",
    )
    p.add_argument(
        "--cycle", metavar="NAME", help="only the claims of this cycle; adds the 1/pi-weighted agreement"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--bootstrap",
        type=int,
        default=2000,
        metavar="N",
        help="answer-bootstrap resamples for the kappa interval (default 2000; 0 skips)",
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument(
        "--compare-with",
        metavar="RUN",
        help="also compare with this (baseline) run on the claims both judged and humans labeled: "
        "paired, exact McNemar",
    )
    p.add_argument(
        "--fail-on",
        action="append",
        choices=gate.FAILING,
        default=[],
        metavar="WHAT",
        help="exit 1, with one line saying why, when the flag is WHAT (revise, inconclusive) or, "
        "for worse, when the run is worse than the --compare-with run beyond chance; repeatable: "
        "the judge check as a CI gate",
    )
    p.add_argument(
        "--junit",
        type=Path,
        metavar="FILE",
        help="also write the decision as a JUnit XML report (one test case, failed when --fail-on fails)",
    )
    p.set_defaults(handler=cli_stats)

    p = sub.add_parser("thresholds", help="show or change the flag's thresholds (kept in the database)")
    p.add_argument("--agreement-target", type=float, help="agreement the judge must reach (default 0.85)")
    p.add_argument("--kappa-floor", type=float, help="kappa below which to revise (default 0.60)")
    p.add_argument("--alpha", type=float, help="McNemar significance level (default 0.05)")
    p.add_argument(
        "--alt-epsilon",
        type=float,
        help="alternative annotator test margin: how much worse than a reviewer the judge may be "
        "(default 0.15, the test's authors' value for skilled reviewers; 0.2 experts, "
        "0.1 crowd workers)",
    )
    p.set_defaults(handler=cli_thresholds)


CYCLE_READING_NOTE = (
    "  a cycle's figures have no final reading: without --cycle, the run's report takes it once "
    "nothing is left to label"
)


def cli_stats(args: argparse.Namespace) -> int:
    import json

    from .. import cycles, report

    if "worse" in args.fail_on and not args.compare_with:
        raise InputError("--fail-on worse needs --compare-with RUN: the baseline run to be no worse than")
    with store.session(_db_path(args)) as db:
        cycle = cycles.get_cycle(db, args.cycle) if args.cycle else None
        cycle_id = None if cycle is None else cycle.id
        run = store.find_judge_run(db, args.judge_run or (cycle.judge_run if cycle else None))
        name = None if cycle is None else cycle.name
        scoped, assessed = report.assess(
            db, run, cycle_id, cycle=name, bootstrap=args.bootstrap, seed=args.seed
        )
        baseline = _baseline(db, run.name, args.compare_with, cycle_id)
    scope = f"cycle {cycle.name}" if cycle else "every claim of the run"
    notes = [f"Scope: {scope}; {scoped.n_unlabeled} judged claims have no human label yet"]
    if cycle:
        # Its flag can stay open where the run's, the same claims and more, is decided.
        notes.append(CYCLE_READING_NOTE)
    text = scoped.report.to_text(
        run.name,
        notes=notes,
        assessed=assessed,
    )
    if baseline is not None:
        text += f"Compared with {baseline.name}: {baseline.text or gate.NOTHING_TO_COMPARE}\n"
    if args.json:
        out = report.stats_json(scoped, assessed, name)
        if baseline is not None:
            out["compared_with"] = {"run": baseline.name, "text": baseline.text, "worse": baseline.worse}
        print(json.dumps(out, ensure_ascii=False, indent=2, allow_nan=False))
    else:
        print(text, end="")
    return _gate(args, scoped.report.flag, f"judge run {run.name} ({scope})", text, baseline)


def _baseline(db: store.Database, run: str, other: str | None, cycle_id: int | None) -> gate.Baseline | None:
    """`--compare-with`: the paired comparison of `run` with the baseline run `other`."""
    if other is None:
        return None
    from .. import dashboard

    name = store.find_judge_run(db, other).name
    found = dashboard.compare(db, run, name, cycle_id=cycle_id)
    if found is None:
        return gate.Baseline(name, None, worse=False)
    return gate.Baseline(name, found.text, worse=found.better == name)


def _gate(
    args: argparse.Namespace, flag: Flag, subject: str, details: str, baseline: gate.Baseline | None
) -> int:
    """`--fail-on` and `--junit`: exit 1 with one line on stderr when the run fails the gate."""
    if not args.fail_on and args.junit is None:
        return 0
    result = gate.check(flag, args.fail_on, subject=subject, baseline=baseline)
    if args.junit is not None:
        xml = gate.junit_xml(result, suite="judge-calibration", case=subject, details=details)
        atomic_write(args.junit, lambda fh: fh.write(xml.decode("utf-8")))
    if result.failed:
        print(f"error: {result.line}", file=sys.stderr)
        return 1
    return 0


def cli_thresholds(args: argparse.Namespace) -> int:
    changes = {name: value for name in store.THRESHOLD_SETTINGS if (value := getattr(args, name)) is not None}
    with store.session(_db_path(args)) as db:
        current = store.save_thresholds(db, **changes) if changes else store.load_thresholds(db)
    print(
        f"agreement target {current.agreement_target:g}, kappa floor {current.kappa_floor:g}, "
        f"alpha {current.alpha:g}, alt-test epsilon {current.alt_epsilon:g}" + (" (saved)" if changes else "")
    )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _add_labels(sub)
    _add_stats(sub)
