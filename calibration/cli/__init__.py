"""`python -m calibration`: a thin shell over the package.

Exit codes: 0 success, 1 invalid input or a refused operation (message on stderr),
2 usage errors (argparse's own convention).
"""

from __future__ import annotations

import argparse
import codecs
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import store
from ..errors import CalibrationError
from ..models import Verdict, parse_mapping

Handler = Callable[[argparse.Namespace], int]


def _db_path(args: argparse.Namespace) -> Path:
    return Path(args.db) if args.db else store.default_db_path()


# ---------------------------------------------------------------- import / info / demo


def _map_item(text: str) -> str:
    """argparse type for --map: a bad mapping is a usage error (exit 2), not bad input."""
    try:
        parse_mapping([text])
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--map {text!r}: ")) from None
    return text


def _encoding(text: str) -> str:
    try:
        codecs.lookup(text)
    except LookupError:
        raise argparse.ArgumentTypeError(f"unknown encoding {text!r}") from None
    return text


def _add_foundation(sub: argparse._SubParsersAction) -> None:
    from .. import importing

    map_help = "map an extra verdict spelling, e.g. partially_supported=UNSUPPORTED (repeatable)"
    enc_help = "file encoding when not UTF-8 (UTF-8 with or without a BOM is the default)"
    p = sub.add_parser("import", help="import judged answers (JSONL or a JSON array)")
    p.add_argument("files", nargs="+", type=Path, help="JSONL or JSON files; each is all or nothing")
    p.add_argument("--judge-model", help="judge model for lines that do not name one")
    p.add_argument("--judge-prompt-version", help="judge prompt version for lines that do not name one")
    p.add_argument("--map", action="append", default=[], metavar="SPELLING=VERDICT", type=_map_item,
                   help=map_help)
    p.add_argument("--encoding", default=None, type=_encoding, help=enc_help)
    p.set_defaults(handler=importing.cli_import)

    p = sub.add_parser("import-labels", help="import human labels from CSV")
    p.add_argument("files", nargs="+", type=Path,
                   help="CSV with answer_id, claim_id, verdict[, reviewer, note, evidence]")
    p.add_argument("--reviewer", help="reviewer for files without a reviewer column")
    p.add_argument("--map", action="append", default=[], metavar="SPELLING=VERDICT", type=_map_item,
                   help=map_help)
    p.add_argument("--encoding", default=None, type=_encoding, help=enc_help)
    p.set_defaults(handler=importing.cli_import_labels)

    p = sub.add_parser("demo", help="load the demo data (DEMO-RAG-v1 and WiCE)")
    p.set_defaults(handler=importing.cli_demo)

    p = sub.add_parser("info", help="counts per judge run")
    p.set_defaults(handler=cli_info)

    p = sub.add_parser("adjudicate", help="settle the human label of a claim reviewers disagree on",
                       description="Record the adjudicated human label of one claim. It overrides "
                       "disagreeing or unclear reviewer labels in every figure and export; each "
                       "decision is kept in the label history.")
    p.add_argument("answer_id")
    p.add_argument("claim_id")
    p.add_argument("verdict", type=str.upper, choices=[v.value for v in Verdict])
    p.add_argument("--by", required=True, metavar="NAME", help="who decides (a lead)")
    p.add_argument("--note", help="why")
    p.set_defaults(handler=cli_adjudicate)


def cli_info(args: argparse.Namespace) -> int:
    with store.session(_db_path(args)) as db:
        summary = store.info(db)
    totals = summary["totals"]
    print(f"database: {_db_path(args)}")
    print("answers {answers}, claims {claims}, labeled claims {labeled_claims}, "
          "reviewers {reviewers}, label events {label_events}".format(**totals))
    runs = summary["runs"]
    if not runs:
        print("no judge runs yet")
    for r in runs:
        verdicts = ", ".join(f"{k} {v}" for k, v in r.verdicts.items())
        print(f"  {r.run.name}: {r.answers} answers, {r.claims} claims ({verdicts}); "
              f"{r.labeled_claims} claims with a human label")
    return 0


def cli_adjudicate(args: argparse.Namespace) -> int:
    with store.session(_db_path(args)) as db:
        claim = store.claim_pk(db, args.answer_id, args.claim_id)
        store.adjudicate(db, claim=claim, adjudicator=args.by, verdict=args.verdict, note=args.note)
    print(f"{args.answer_id}/{args.claim_id}: adjudicated {args.verdict} by {args.by}")
    return 0


# Later subcommands register here, each from its own module's section.
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_add_foundation]



# ---------------------------------------------------------------- cycles


def _add_cycles(sub: argparse._SubParsersAction) -> None:
    from .. import cycles, sampling

    p = sub.add_parser("cycle", help="calibration cycles: sample, assign, close")
    csub = p.add_subparsers(dest="cycle_command", required=True, metavar="ACTION")
    c = csub.add_parser("create", help="sample judged answers of a run into a new cycle")
    c.add_argument("--name", required=True)
    c.add_argument("--judge-run", help="MODEL@VERSION (default: the most recently imported run)")
    c.add_argument("--size", type=int, default=cycles.DEFAULT_SIZE,
                   help=f"answers to sample ({cycles.MIN_SIZE}-{cycles.MAX_SIZE} unless --force)")
    c.add_argument("--seed", type=int, help="random seed (default: drawn and recorded)")
    c.add_argument("--strategy", choices=sampling.STRATEGIES, default="random")
    c.add_argument("--failure-share", type=float, default=sampling.DEFAULT_FAILING_SHARE,
                   help="failures-first: least share of the slots for answers with a "
                        f"non-SUPPORTED verdict (default {sampling.DEFAULT_FAILING_SHARE})")
    c.add_argument("--reviewers", default="",
                   help="comma-separated reviewers (default: open to every reviewer)")
    c.add_argument("--overlap", type=float, default=cycles.DEFAULT_OVERLAP,
                   help="share of answers given to two reviewers (default 0.2)")
    c.add_argument("--holdout", action="store_true", help="sample only holdout answers")
    c.add_argument("--include-labeled", action="store_true",
                   help="also sample answers whose claims all have a final human label")
    c.add_argument("--force", action="store_true", help="allow a size outside the bounds")
    c.add_argument("--created-by", default=_login_name(), help="recorded as the cycle's creator")
    c.set_defaults(handler=cli_cycle_create)
    c = csub.add_parser("list", help="every cycle with its progress")
    c.set_defaults(handler=cli_cycle_list)
    c = csub.add_parser("show", help="one cycle: its answers in order, assignments, progress")
    c.add_argument("name")
    c.add_argument("--json", action="store_true")
    c.set_defaults(handler=cli_cycle_show)
    c = csub.add_parser("close", help="close a cycle and freeze its figures")
    c.add_argument("name")
    c.add_argument("--force", action="store_true",
                   help="close even though reviewers still have claims to label")
    c.set_defaults(handler=cli_cycle_close)

    p = sub.add_parser("holdout", help="mark answers as holdout (sampled only by --holdout cycles)")
    hsub = p.add_subparsers(dest="holdout_command", required=True, metavar="ACTION")
    for action, text in (("add", "mark answers as holdout"), ("remove", "clear the holdout mark")):
        h = hsub.add_parser(action, help=text)
        h.add_argument("answer_ids", nargs="+", metavar="ANSWER_ID")
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
            db, name=args.name, judge_run=args.judge_run, size=args.size, seed=args.seed,
            strategy=args.strategy, reviewers=args.reviewers.split(","), overlap=args.overlap,
            holdout=args.holdout, include_labeled=args.include_labeled, force=args.force,
            created_by=args.created_by, failing_share=args.failure_share)
        load = {r.reviewer: r.total for r in cycles.progress(db, cycle.id).reviewers}
    for warning in cycle.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"cycle {cycle.name}: {plural(cycle.size, 'answer')} of {cycle.judge_run} "
          f"({cycle.strategy}, seed {cycle.seed}{', holdout' if cycle.holdout else ''})")
    for note in cycle.notes:
        print(note)
    if cycle.reviewers:
        print("assigned claims: " + ", ".join(f"{r} {n}" for r, n in load.items()))
    else:
        print("open to every reviewer")
    return 0


def cli_cycle_list(args: argparse.Namespace) -> int:
    from .. import cycles
    from ..fmt import plural

    with store.session(_db_path(args)) as db:
        rows = [(c, cycles.progress(db, c.id)) for c in cycles.list_cycles(db)]
    if not rows:
        print("no cycles yet")
    for c, prog in rows:
        print(f"{c.name}\t{c.status}\t{c.judge_run}\t{c.strategy}\tseed {c.seed}\t"
              f"{plural(c.size, 'answer')}\t{prog.headline()}\t{c.created_at}")
    return 0


def cli_cycle_show(args: argparse.Namespace) -> int:
    import json

    from .. import cycles
    from ..fmt import plural

    with store.session(_db_path(args)) as db:
        cycle = cycles.get_cycle(db, args.name)
        items = cycles.cycle_answers(db, cycle.id)
        prog = cycles.progress(db, cycle.id)
    if args.json:
        out = {
            "name": cycle.name, "judge_run": cycle.judge_run, "strategy": cycle.strategy,
            "seed": cycle.seed, "size": cycle.size, "status": cycle.status,
            "overlap": cycle.overlap, "holdout": cycle.holdout,
            "include_labeled": cycle.include_labeled, "failing_share": cycle.failing_share,
            "created_by": cycle.created_by,
            "created_at": cycle.created_at, "closed_at": cycle.closed_at,
            "reviewers": list(cycle.reviewers), "answers": list(cycle.answers),
            "items": [{"position": i.position, "answer_id": i.answer_id,
                       "inclusion_prob": i.inclusion_prob, "claims": i.claims,
                       "reviewers": list(i.reviewers)} for i in items],
            "progress": prog.as_dict(), "snapshot": cycle.snapshot,
        }
        print(json.dumps(out, ensure_ascii=False, indent=2))
        return 0
    share = f", failing share {cycle.failing_share:g}" if cycle.failing_share is not None else ""
    print(f"cycle {cycle.name} ({cycle.status}): {cycle.judge_run}, {cycle.strategy}{share}, "
          f"seed {cycle.seed}, {plural(cycle.size, 'answer')}{', holdout' if cycle.holdout else ''}")
    print(f"created {cycle.created_at} by {cycle.created_by or 'unknown'}"
          + (f"; closed {cycle.closed_at}" if cycle.closed_at else ""))
    print(f"progress: {prog.headline()}"
          + "".join(f"; {r.reviewer} {r.labeled}/{r.total}" for r in prog.reviewers))
    for i in items:
        who = ", ".join(i.reviewers) or "anyone"
        print(f"  {i.position + 1:>3}. {i.answer_id}\tpi {i.inclusion_prob:.3f}\t"
              f"{plural(i.claims, 'claim')}\t{who}")
    return 0


def cli_cycle_close(args: argparse.Namespace) -> int:
    from .. import cycles

    with store.session(_db_path(args)) as db:
        cycle = cycles.close_cycle(db, args.name, force=args.force)
    fig = cycles.frozen_figures(cycle.snapshot)
    if fig is None:
        print(f"cycle {cycle.name} closed")
        return 0
    elsewhere = (f" (already labeled outside this cycle: {fig.labeled_elsewhere})"
                 if fig.labeled_elsewhere else "")
    print(f"cycle {cycle.name} closed: {fig.labeled}/{fig.total} claims labeled{elsewhere}")
    if fig.agreement is None:
        print(fig.note or "no figures: no claim had a final human label")
        return 0

    def ci(bounds: tuple[float, float] | None, fmt: str) -> str:
        return f" (95% CI {bounds[0]:{fmt}}-{bounds[1]:{fmt}})" if bounds else " (no interval)"

    print(f"judge-human agreement {fig.agreement:.0%}{ci(fig.agreement_ci, '.0%')} "
          f"on {fig.n_claims} claim{'' if fig.n_claims == 1 else 's'}")
    if fig.weighted_agreement is not None:
        print(f"re-weighted to the run (1/pi) {fig.weighted_agreement:.0%}{ci(fig.weighted_ci, '.0%')}")
    kappa = "undefined" if fig.kappa is None else f"{fig.kappa:.2f}{ci(fig.kappa_ci, '.2f')}"
    print(f"Cohen's kappa {kappa}")
    if fig.flag:
        print(f"flag: {fig.flag.upper()}")
        for reason in fig.flag_reasons:
            print(f"  - {reason}")
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


REGISTRARS.append(_add_cycles)



# ---------------------------------------------------------------- export


def _add_export(sub: argparse._SubParsersAction) -> None:
    from .. import export

    p = sub.add_parser("export", help="export calibrated labels: lossless JSONL, golden set or CSV",
                       description="Export claims with their human and judge verdicts. The jsonl "
                       "export restores into another database with `import FILE` then "
                       "`import-labels FILE`.")
    p.add_argument("--out", required=True, type=Path, help="file to write (replaced atomically)")
    p.add_argument("--format", choices=export.FORMATS, default="jsonl",
                   help="jsonl: lossless, one line per claim; golden: RAG golden set, one line per "
                   "answer; csv: for spreadsheets (UTF-8 with BOM)")
    p.add_argument("--judge-run", help="only claims this run judged, and only its verdicts (MODEL@VERSION)")
    p.add_argument("--cycle", help="only the claims of this cycle")
    p.add_argument("--only-final", action="store_true",
                   help="only claims with a final human verdict (adjudicated or unanimous)")
    p.set_defaults(handler=export.cli_export)


REGISTRARS.append(_add_export)



# ---------------------------------------------------------------- judge lab


def _add_judge(sub: argparse._SubParsersAction) -> None:
    from .. import judge

    p = sub.add_parser("judge", help="judge lab: re-run a judge prompt over stored claims")
    jsub = p.add_subparsers(dest="judge_command", required=True, metavar="ACTION")
    r = jsub.add_parser(
        "run", help="judge the claims in scope with an OpenAI-compatible endpoint as a new run",
        description="Creates the judge run MODEL@VERSION (or resumes it: answers already judged "
        "are not requested again) and compares it on the human labels with the run that shares "
        "the most labeled claims. Exit status 0 when every answer is judged; 1 when any answer "
        "failed (the same command again retries only those), when the endpoint cannot be reached, "
        "or on invalid input; 130 when interrupted.")
    r.add_argument("--base-url", required=True, help="e.g. http://localhost:8000/v1")
    r.add_argument("--model", required=True)
    r.add_argument("--prompt-version", required=True,
                   help="version name of the prompt; without --prompt-file, a template in "
                   f"calibration/prompts ({', '.join(judge.available_templates())})")
    r.add_argument("--prompt-file", type=Path, help="template file with {question} {chunks} "
                   "{answer} {claims}")
    r.add_argument("--scope", default="labeled", help="labeled (default), all or cycle:NAME")
    r.add_argument("--concurrency", type=int, default=4, help="requests in flight (default 4)")
    r.add_argument("--timeout", type=float, default=120.0, help="seconds per request (default 120)")
    r.add_argument("--max-attempts", type=int, default=5,
                   help="HTTP attempts per request on 429 / 5xx / timeouts (default 5)")
    r.add_argument("--temperature", type=float, default=0.0)
    r.add_argument("--max-tokens", type=int)
    r.add_argument("--json-mode", action="store_true",
                   help='send response_format {"type": "json_object"} (if the server supports it)')
    r.add_argument("--api-key-env", help="environment variable holding the API key "
                   f"(default {judge.DEFAULT_API_KEY_ENV}; unset means no key, fine for local servers)")
    r.add_argument("--baseline", help="run to compare with, MODEL@VERSION (default: the run sharing the most "
                   "human-labeled claims)")
    r.set_defaults(handler=judge.cli_run)


REGISTRARS.append(_add_judge)



# ---------------------------------------------------------------- stats


def _add_stats(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stats", help="judge vs human agreement with intervals, and the revise flag",
                       description="Agreement of a judge run with the final human labels: every "
                       "figure with its 95% interval, the confusion matrix (rows human, columns "
                       "judge) and the flag (ok / revise / inconclusive) with its reasons.")
    p.add_argument("--judge-run", metavar="RUN",
                   help="MODEL@VERSION, or VERSION when unique (default: the most recently "
                   "imported run, or the cycle's run with --cycle)")
    p.add_argument("--cycle", metavar="NAME",
                   help="only the claims of this cycle; adds the 1/pi-weighted agreement")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--bootstrap", type=int, default=2000, metavar="N",
                   help="answer-bootstrap resamples for the kappa interval (default 2000; 0 skips)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.set_defaults(handler=cli_stats)

    p = sub.add_parser("thresholds", help="show or change the flag's thresholds (kept in the database)")
    p.add_argument("--agreement-target", type=float, help="agreement the judge must reach (default 0.85)")
    p.add_argument("--kappa-floor", type=float, help="kappa below which to revise (default 0.60)")
    p.add_argument("--alpha", type=float, help="McNemar significance level (default 0.05)")
    p.set_defaults(handler=cli_thresholds)


def cli_stats(args: argparse.Namespace) -> int:
    import json

    from .. import cycles, report

    with store.session(_db_path(args)) as db:
        cycle = cycles.get_cycle(db, args.cycle) if args.cycle else None
        run = store.find_judge_run(db, args.judge_run or (cycle.judge_run if cycle else None))
        scoped = report.scope_report(db, run, None if cycle is None else cycle.id,
                                     bootstrap=args.bootstrap, seed=args.seed)
    if args.json:
        out = scoped.report.to_dict(run.name)
        out["cycle"] = None if cycle is None else cycle.name
        out["n_unlabeled"] = scoped.n_unlabeled
        print(json.dumps(out, ensure_ascii=False, indent=2, allow_nan=False))
        return 0
    scope = f"cycle {cycle.name}" if cycle else "every claim of the run"
    print(scoped.report.to_text(run.name, notes=[
        f"Scope: {scope}; {scoped.n_unlabeled} judged claims have no human label yet"]), end="")
    return 0


def cli_thresholds(args: argparse.Namespace) -> int:
    changes = {name: value for name in store.THRESHOLD_SETTINGS
               if (value := getattr(args, name)) is not None}
    with store.session(_db_path(args)) as db:
        current = store.save_thresholds(db, **changes) if changes else store.load_thresholds(db)
    print(f"agreement target {current.agreement_target:g}, kappa floor {current.kappa_floor:g}, "
          f"alpha {current.alpha:g}" + (" (saved)" if changes else ""))
    return 0


REGISTRARS.append(_add_stats)



# Commands that may start from no database; every other one reads an existing one.
CREATING_COMMANDS = {"import", "import-labels", "demo"}

EPILOG = ("exit status: 0 success, 1 invalid input or a refused operation (message on stderr), "
          "2 usage error")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m calibration",
                                     description="Check an LLM judge against human reviewers.",
                                     epilog=EPILOG)
    parser.add_argument("--db", help="SQLite database (default: $CALIBRATION_DB or data/calibration.db)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in REGISTRARS:
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    db = _db_path(args)
    if args.command not in CREATING_COMMANDS and not db.exists():
        # A read must not silently create an empty database and report zeros from it.
        print(f"error: no database at {db}: import judged answers first "
              "(python -m calibration import FILE, or python -m calibration demo)", file=sys.stderr)
        return 1
    try:
        return args.handler(args)
    except CalibrationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # A reader such as `| head` closed the pipe: nothing went wrong on our side.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
