"""`split`: the tuning / holdout split of the human-labeled claims (show, unseal, new)."""

from __future__ import annotations

import argparse
import json

from .. import split, store
from ..fmt import plural
from .common import db_path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("split", help="tuning and holdout claims (a revised prompt is proved on the holdout)")
    ssub = p.add_subparsers(dest="split_command", required=True, metavar="ACTION")
    show = ssub.add_parser(
        "show",
        help="the split's sizes (made, or brought up to date, first)",
        description="Makes the split if there is none (answer-level, seeded, stratified "
        "by the judge's verdict) and assigns answers labeled since; then shows it.",
    )
    show.add_argument("--judge-run", help="only the answers this run judged (MODEL@VERSION)")
    show.add_argument(
        "--json",
        action="store_true",
        help='print {"tuning": [answer ids], "holdout": [answer ids], "sealed": bool}',
    )
    show.set_defaults(handler=cli_show)
    un = ssub.add_parser("unseal", help="unseal the holdout (recorded; it is marked used from then on)")
    un.add_argument("--who", required=True, help="who unseals it (recorded)")
    un.add_argument("--reason", help="why (recorded)")
    un.set_defaults(handler=cli_unseal)
    new = ssub.add_parser("new", help="start a fresh holdout from answers labeled after the last was used")
    new.add_argument("--who", help="who makes it (recorded)")
    new.set_defaults(handler=cli_new)


def _print(s: split.Split, as_json: bool) -> None:
    if as_json:
        print(json.dumps(s.to_dict(), ensure_ascii=False))
        return
    state = (
        "sealed"
        if s.sealed
        else (
            f"UNSEALED by {s.generation.unsealed_by} at {s.generation.unsealed_at}: used; a fresh holdout "
            "needs new labels (split new)"
            if s.generation is not None
            else "no split yet"
        )
    )
    print(f"tuning: {plural(len(s.tuning), 'answer')}; holdout: {plural(len(s.holdout), 'answer')} ({state})")
    if s.pending:
        print(
            f"{plural(len(s.pending), 'labeled answer')} not yet assigned"
            + ("; sealed until assigned" if s.sealed else "")
        )


def cli_show(args: argparse.Namespace) -> int:
    with store.session(db_path(args)) as db:
        run = store.find_judge_run(db, args.judge_run) if args.judge_run else None
        split.ensure_split(db)
        _print(split.current(db, run), args.json)
    return 0


def cli_unseal(args: argparse.Namespace) -> int:
    with store.session(db_path(args)) as db:
        gen = split.unseal(db, who=args.who, reason=args.reason)
        print(f"holdout unsealed by {gen.unsealed_by} at {gen.unsealed_at}; it is marked used")
    return 0


def cli_new(args: argparse.Namespace) -> int:
    with store.session(db_path(args)) as db:
        _print(split.new_holdout(db, created_by=args.who), False)
    return 0
