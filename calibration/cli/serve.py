"""`serve`: start the app server (calibration_app/server.py) as this installation has it."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from .. import shipped, store
from .common import db_path


def streamlit_command(script: Path, port: int, address: str) -> list[str]:
    """`streamlit run` on the app; the app's own .streamlit/config.toml, beside it, sets the rest."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(script),
        "--server.port",
        str(port),
        "--server.address",
        address,
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
    ]


def cli_serve(args: argparse.Namespace) -> int:
    cmd = streamlit_command(shipped.server_script(), args.port, args.address)
    # Absolute: the server resolves it, and the pages open it, long after this process is gone.
    where = db_path(args)
    env = {**os.environ, "CALIBRATION_DB": where if isinstance(where, str) else str(where.resolve())}
    print(
        f"serving http://{args.address}:{args.port} (database {store.shown(env['CALIBRATION_DB'])})",
        file=sys.stderr,
        flush=True,
    )
    if os.name == "posix":
        # The server takes this process's place: signals (Ctrl-C, a supervisor's TERM) reach it.
        os.execve(sys.executable, cmd, env)
    return subprocess.call(cmd, env=env)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="start the app (Streamlit) on this machine")
    p.add_argument("--port", type=int, default=8501, help="port to listen on (default: 8501)")
    p.add_argument(
        "--address",
        default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1, this machine only; "
        "read the manual's Security page, docs/security.md, before 0.0.0.0)",
    )
    p.set_defaults(handler=cli_serve)
