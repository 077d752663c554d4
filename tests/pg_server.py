"""A throwaway PostgreSQL cluster for the tests: Debian's `postgresql` binaries, a temporary data
folder, a free 127.0.0.1 port; one migrated template database, copied for each test.

Run as the package's `postgres` user when the suite runs as root (the server refuses root).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

TEMPLATE = "calibration_template"


def bindir() -> Path | None:
    """Where initdb and pg_ctl are: `pg_config --bindir`, else the newest Debian version's."""
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=False)
        found = Path(out.stdout.strip())
        if (found / "initdb").exists():
            return found
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    return Path(versions[-1]).parent if versions else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """A running cluster; `new_database()` gives the URL of a fresh, migrated database."""

    def __init__(self) -> None:
        found = bindir()
        if found is None:
            raise RuntimeError(
                "no PostgreSQL binaries (install Debian's postgresql package: make test "
                "does when run as root)"
            )
        self.bin = found
        self.root = Path(tempfile.mkdtemp(prefix="calibration-pg-"))
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_user:
            shutil.chown(self.root, "postgres", "postgres")
        self.data = self.root / "data"
        self.port = _free_port()
        self._names = count()
        self._admin_conn: Any = None
        self._admin_lock = threading.Lock()
        self._filled: dict[str, str] = {}
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c max_connections=400 "
            "-c fsync=off -c full_page_writes=off -c synchronous_commit=off"
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.root / "server.log"),
            "-w",
            "-t",
            "60",
            "start",
        )
        self.base = f"postgresql://postgres@127.0.0.1:{self.port}"
        try:
            self._admin(f"CREATE DATABASE {TEMPLATE}")
            from calibration import store
            from calibration.store import postgres

            with store.session(self.url(TEMPLATE)):
                pass  # migrated once; each test's database is a copy
            postgres.close_pool(self.url(TEMPLATE))
        except BaseException:
            self.stop()
            raise

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run(
            [*self.as_user, str(self.bin / tool), *args], check=True, capture_output=True, cwd=self.root
        )

    def _admin(self, sql: str) -> None:
        # One connection for every CREATE and DROP of the process (a new one costs ~14 ms).
        import psycopg

        with self._admin_lock:
            if self._admin_conn is None or self._admin_conn.closed:
                self._admin_conn = psycopg.connect(self.url("postgres"), autocommit=True)
            self._admin_conn.execute(sql)

    def url(self, name: str) -> str:
        return f"{self.base}/{name}"

    def create(self, url: str, template: str = TEMPLATE) -> None:
        """The database at `url` as a copy of `template` (the migrated empty one by default).

        FILE_COPY: the server copies the files, which beats writing every page to the WAL
        (PostgreSQL 15's default) for these small databases, with fsync off."""
        self._admin(f"CREATE DATABASE {url.rsplit('/', 1)[1]} TEMPLATE {template} STRATEGY FILE_COPY")

    def new_database(self) -> str:
        url = self.url(f"t{os.getpid()}_{next(self._names)}")
        self.create(url)
        return url

    def filled(self, key: str, fill: Callable[[str], None]) -> str:
        """The name of a template database holding what `fill(url)` wrote into a fresh one; filled
        on the first call for `key`, so the tests that start from it copy it instead of filling."""
        if key not in self._filled:
            url = self.new_database()
            fill(url)
            from calibration.store import postgres

            postgres.close_pool(url)  # a template is copied only while nobody is connected
            self._filled[key] = url.rsplit("/", 1)[1]
        return self._filled[key]

    def replace_with_copy(self, url: str, template: str) -> None:
        """The database at `url` made anew as a copy of `template`."""
        from calibration.store import postgres

        postgres.close_pool(url)
        self._admin(f"DROP DATABASE IF EXISTS {url.rsplit('/', 1)[1]} WITH (FORCE)")
        self.create(url, template)

    def drop_database(self, url: str) -> None:
        from calibration.store import postgres

        postgres.close_pool(url)
        self._admin(f"DROP DATABASE IF EXISTS {url.rsplit('/', 1)[1]} WITH (FORCE)")

    def stop(self) -> None:
        if self._admin_conn is not None:
            self._admin_conn.close()
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
