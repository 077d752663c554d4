"""`reviewer`: the reviewer roster (add, rename, deactivate, reactivate, list)."""

from __future__ import annotations

import argparse
import json

from .. import roster, store
from ..fmt import plural
from ..text import visible
from .common import db_path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("reviewer", help="the reviewer roster a lead keeps (cycles pick from it)")
    rsub = p.add_subparsers(dest="reviewer_command", required=True, metavar="ACTION")
    add = rsub.add_parser("add", help="put reviewers on the roster (near-duplicates of known names refused)")
    add.add_argument("names", nargs="+", help="reviewer names")
    add.add_argument("--by", help="who adds them (recorded)")
    add.set_defaults(handler=cli_add)
    ren = rsub.add_parser("rename", help="rename a reviewer; their labels and work move along (recorded)")
    ren.add_argument("old", help="the reviewer's name now")
    ren.add_argument("new", help="the new name")
    ren.add_argument("--by", help="who renames (recorded)")
    ren.set_defaults(handler=cli_rename)
    for action, help_text in [
        ("deactivate", "take a reviewer off cycles and sign-in; labels stay"),
        ("reactivate", "put a deactivated reviewer back"),
    ]:
        act = rsub.add_parser(action, help=help_text)
        act.add_argument("name", help="the reviewer's name")
        act.add_argument("--by", help="who does it (recorded)")
        act.set_defaults(handler=cli_set_active, active=action == "reactivate")
    ls = rsub.add_parser("list", help="the roster, active reviewers first")
    ls.add_argument("--history", action="store_true", help="also every change, newest first")
    ls.add_argument("--json", action="store_true", help='print [{"name", "active", "added_at"}]')
    ls.set_defaults(handler=cli_list)


def cli_add(args: argparse.Namespace) -> int:
    with store.session(db_path(args)) as db:
        for typed in args.names:
            print(f"added {visible(roster.add(db, typed, by=args.by))}")
    return 0


def cli_rename(args: argparse.Namespace) -> int:
    with store.session(db_path(args)) as db:
        new, moved = roster.rename(db, args.old, args.new, by=args.by)
    print(f"renamed {visible(args.old)} to {visible(new)}: {plural(moved, 'label')} moved along")
    return 0


def cli_set_active(args: argparse.Namespace) -> int:
    with store.session(db_path(args)) as db:
        name = roster.set_active(db, args.name, args.active, by=args.by)
    print(f"{'reactivated' if args.active else 'deactivated'} {visible(name)}")
    return 0


def cli_list(args: argparse.Namespace) -> int:
    with store.session(db_path(args)) as db:
        rows = roster.entries(db)
        events = roster.history(db) if args.history else []
    if args.json:
        print(
            json.dumps(
                [{"name": e.name, "active": e.active, "added_at": e.added_at} for e in rows],
                ensure_ascii=False,
            )
        )
        return 0
    if not rows:
        print("the roster is empty: cycles take any reviewer name (add reviewers with `reviewer add`)")
    for e in rows:
        print(f"{visible(e.name)}{'' if e.active else ' (deactivated)'}")
    for ev in events:
        what = (
            f" -> {visible(ev.new_name)} ({plural(ev.labels_moved or 0, 'label')} moved)"
            if ev.kind == "rename" and ev.new_name
            else ""
        )
        print(f"{ev.at} {ev.kind} {visible(ev.name)}{what}{f' by {visible(ev.by)}' if ev.by else ''}")
    return 0
