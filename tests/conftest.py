"""Shared fixtures: each gives a database in a named state, made fresh for the test."""

from __future__ import annotations

import gc
import inspect
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from calibration import store
from calibration.importing import import_answers, import_labels
from calibration.store import Database

# Imported here, outside any page's run, so that its switch to app.py's navigation does not
# happen: a test of one page (AppTest.from_file) runs that page alone.
from calibration_app import navigation  # noqa: F401
from tests.helpers import assert_no_page_exception, assert_no_traceback
from tests.pg_server import Cluster

ROOT = Path(__file__).resolve().parents[1]
WICE = ROOT / "data" / "wice"
DEMO = ROOT / "data" / "demo" / "demo_rag_v1.jsonl"
TEST_DATA = Path(__file__).resolve().parent / "data"

# Property tests check properties, not speed (speed is the benchmarks' job): a deadline would
# fail them whenever the machine is busy.
settings.register_profile("calibration", deadline=None)
settings.load_profile("calibration")


@pytest.fixture(autouse=True)
def _no_default_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # No test may touch the developer's own data/calibration.db.
    monkeypatch.setenv("CALIBRATION_DB", str(tmp_path / "default.db"))
    yield
    # An AppTest run of app.py keeps idle connections, as the server does; the next test
    # starts as a command would, with none kept.
    store.keep_idle_connections(False)


# ---------------------------------------------------------------- no traceback reaches a page or the CLI


def _uses_cli(item: pytest.Item) -> bool:
    """The test's module calls the CLI in process (imports `calibration.cli` or its `main`)."""
    cli = sys.modules.get("calibration.cli")
    module = getattr(item, "module", None)
    if cli is None or module is None:
        return False
    return any(value is cli or value is getattr(cli, "main", None) for value in vars(module).values())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    # The CLI called in process prints to the captured streams: a traceback there fails the test,
    # even one the test itself did not look at. (Output a test read through capsys is checked by
    # its runner, e.g. run_cli in test_cycles.)
    outcome: Any = yield
    report = outcome.get_result()
    if report.when != "call" or not report.passed or not _uses_cli(item):
        return
    for title, content in report.sections:
        if title.startswith("Captured std"):
            try:
                assert_no_traceback(content, f"the output of {item.name} ({title})")
            except AssertionError as exc:
                report.outcome = "failed"
                report.longrepr = str(exc)
                return


@pytest.fixture(autouse=True)
def _apptest_runs_show_no_exception(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Every AppTest run of the test is checked at teardown: no exception element on the page.
    # Only when the test module loaded AppTest, so other tests never import Streamlit.
    module = sys.modules.get("streamlit.testing.v1.app_test")
    if module is None:
        yield
        return
    runs: list[Any] = []
    original = module.AppTest.run

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        # Garbage an earlier test left (a connection it never closed) is finalised here, on the
        # thread that made it, not by a collection inside the script's thread while it compiles
        # the page: CPython 3.11 then failed the compile ("AST constructor recursion depth
        # mismatch") when the finaliser raised, as closing a SQLite connection from another
        # thread does.
        gc.collect()
        result = original(self, *args, **kwargs)
        runs.append(result)
        return result

    monkeypatch.setattr(module.AppTest, "run", run)
    yield
    for at in runs:
        assert_no_page_exception(at, "an AppTest page")


# ---------------------------------------------------------------- the CLI in process


@dataclass(frozen=True)
class Run:
    """What one CLI run left: its exit status and the two streams."""

    returncode: int
    stdout: str
    stderr: str


RunCli = Callable[..., Run]


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> RunCli:
    """`run_cli(*args, db=DB, expect=None)`: `calibration --db DB ARGS...` in this process; fails
    the test if a traceback reaches the output. `expect`, when given, is the exit status the run
    must have (argparse's usage errors included)."""
    from calibration.cli import main

    def run(*args: str | Path, db: Path, expect: int | None = None) -> Run:
        capsys.readouterr()  # output of the test's own set-up is not this run's
        try:
            code = main(["--db", str(db), *map(str, args)])
        except SystemExit as exc:  # argparse's usage errors and --help
            code = exc.code if isinstance(exc.code, int) else 1
        out, err = capsys.readouterr()
        for stream, text in (("stderr", err), ("stdout", out)):
            assert_no_traceback(text, f"{stream} of calibration {' '.join(map(str, args))}")
        if expect is not None:
            assert code == expect, f"exit {code}\nstdout: {out}\nstderr: {err}"
        return Run(code, out, err)

    return run


# ---------------------------------------------------------------- databases


# Every test that takes a database (`fresh_db` and the fixtures over it, or `db_url`) runs once
# per backend, but for the suites listed here, tests that take `db_path`, and tests marked
# `sqlite_only` (SQLite's file, pragmas or locking, or a check made before the store is touched),
# which run on SQLite alone.
ALL_BACKENDS = ("sqlite", "postgresql")
# `make test-fast` sets TEST_BACKENDS=sqlite for a quick check; `make test` (CI) runs both.
BACKENDS = (
    tuple(b for b in os.environ.get("TEST_BACKENDS", ",".join(ALL_BACKENDS)).split(",") if b in ALL_BACKENDS)
    or ALL_BACKENDS
)


def pytest_report_header() -> str | None:
    left_out = [b for b in ALL_BACKENDS if b not in BACKENDS]
    if not left_out:
        return None
    return (
        f"*** TEST_BACKENDS={','.join(BACKENDS)}: the {', '.join(left_out)} backend is NOT "
        "tested in this run ***"
    )


SQLITE_ONLY_SUITES = frozenset(
    {
        # SQLite by nature: its file, pragmas, locks, attached scratch databases, packaging.
        "test_backup",
        "test_security_storage",
        "test_upgrade",
        "test_layering",
        "test_packaging",
        "test_import_unfinished",
        "test_import_labels_staged",
        "test_security_import_lock",
        # About files, URLs, the CLI's arguments or text; the database only holds their input.
        "test_security_cli",  # attack files through the CLI's reader: refused while read
        "test_security_reading",  # the one reading policy for files, cells and API values
        "test_security_judge",  # the judge client's URL policy and its reading of hostile replies
        "test_serve",  # `make run` listens on the loopback only
        # No database at all: statistics and text.
        "test_reviewers",
        "test_inert_markdown",
    }
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sqlite_only: runs on the SQLite backend alone (its file or locks, or a check made before "
        "the store is read or written)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" not in metafunc.fixturenames:
        return
    suite = metafunc.module.__name__.rpartition(".")[2]
    # A test that takes `db_path` itself names the SQLite file (for a page, the CLI or a second
    # connection): it runs there alone.
    names_the_file = "db_path" in inspect.signature(metafunc.function).parameters
    sqlite_only = (
        suite in SQLITE_ONLY_SUITES or names_the_file or metafunc.definition.get_closest_marker("sqlite_only")
    )
    metafunc.parametrize("backend", ("sqlite",) if sqlite_only else BACKENDS)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """A throwaway PostgreSQL server for the session (tests/pg_server.py)."""
    if "postgresql" not in BACKENDS:  # TEST_BACKENDS=sqlite (make test-fast), said in the header
        pytest.skip("PostgreSQL left out by TEST_BACKENDS")
    try:
        cluster = Cluster()
    except Exception as exc:
        detail = getattr(exc, "stderr", b"") or b""
        message = f"PostgreSQL cannot start: {exc} {detail.decode(errors='replace')}"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI tests both backends: never a silent skip
        pytest.skip(message)
    yield cluster
    cluster.stop()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "calibration.db"


@pytest.fixture
def db_url(backend: str, db_path: Path, request: pytest.FixtureRequest) -> Iterator[str | Path]:
    """Where the test's database is: the SQLite file `db_path`, or a fresh PostgreSQL database."""
    if backend == "sqlite":
        yield db_path
        return
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    url = cluster.new_database()
    yield url
    cluster.drop_database(url)


@pytest.fixture
def fresh_db(db_url: str | Path) -> Iterator[Database]:
    """An empty, migrated database."""
    with store.session(db_url) as db:
        yield db


def _fill_wice(db: Database) -> None:
    import_answers(db, WICE / "wice_judged_gpt4.jsonl")
    import_answers(db, WICE / "wice_judged_gpt35.jsonl")
    import_labels(db, WICE / "wice_human_labels.csv")


def _fill_demo(db: Database) -> None:
    import_answers(db, DEMO)


Fill = Callable[[Database], None]


@pytest.fixture(scope="session")
def filled_template(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Fill], Path]:
    """A database filled once per test process by `fill`, for tests to copy.

    Importing the WiCE data takes a few tenths of a second and some 270 tests start from it;
    a copy made with SQLite's backup API takes a few milliseconds and is the same database.
    (On PostgreSQL the template is a database of the cluster: `Cluster.filled`.)
    """
    made: dict[Fill, Path] = {}

    def template(fill: Fill) -> Path:
        if fill not in made:
            path = tmp_path_factory.mktemp("template") / "calibration.db"
            with store.session(path) as db:
                fill(db)
            made[fill] = path
        return made[fill]

    return template


def _fill_at(fill: Fill) -> Callable[[str], None]:
    def at(url: str) -> None:
        with store.session(url) as db:
            fill(db)

    return at


def _filled(
    url: str | Path, fill: Fill, template: Callable[[Fill], Path], request: pytest.FixtureRequest
) -> Iterator[Database]:
    """A database at `url` holding what `fill` writes: a copy of the one template `fill` filled,
    on SQLite by its backup API, on PostgreSQL as a template database."""
    if isinstance(url, Path):
        with sqlite3.connect(template(fill)) as src, sqlite3.connect(url) as dst:
            src.backup(dst)
        src.close()
        dst.close()
    else:
        cluster: Cluster = request.getfixturevalue("pg_cluster")
        cluster.replace_with_copy(url, cluster.filled(fill.__name__, _fill_at(fill)))
    with store.session(url) as db:
        yield db


@pytest.fixture
def wice_db(
    db_url: str | Path, filled_template: Callable[[Fill], Path], request: pytest.FixtureRequest
) -> Iterator[Database]:
    """The real WiCE data: two judge runs over the same 100 claims, plus the human labels."""
    yield from _filled(db_url, _fill_wice, filled_template, request)


@pytest.fixture
def demo_db(
    db_url: str | Path, filled_template: Callable[[Fill], Path], request: pytest.FixtureRequest
) -> Iterator[Database]:
    """The DEMO-RAG-v1 worked example, judged but not yet labeled."""
    yield from _filled(db_url, _fill_demo, filled_template, request)
