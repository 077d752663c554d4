"""The PostgreSQL backend: the same store on a server, for several app servers on one database.

Install with `pip install -e .[postgres]` (psycopg 3) and name the store by URL:
`CALIBRATION_DB=postgresql://user@host/db` or `--db postgresql://...`.

Guarantees, as on SQLite. Every write transaction takes one transaction-level advisory lock
before its first statement (`pg_advisory_xact_lock`), so writers queue one at a time exactly as
SQLite's `BEGIN IMMEDIATE` makes them: a check-then-write (a label based on the state the card
showed, a get-or-create) cannot interleave with another writer, so a verdict is never lost or
doubled, and a staged import's short batches let a reviewer's write in between. Readers never
wait for the lock. A write that waits longer than the busy timeout fails with
DatabaseBusyError, nothing written.

SQL. Statements built with SQLAlchemy Core are compiled for PostgreSQL by SQLAlchemy. The
store modules still written as SQL text use SQLite's spelling; `translate` turns it into
PostgreSQL's: placeholders (`?`, `:name`), SQLite's JSON functions (`json_group_array`,
`json_each`), the `temp.`/`main.` schema names, `INSERT OR IGNORE`, and in DDL the types (INTEGER is 64-bit,
REAL double) and `INTEGER PRIMARY KEY`, whose next id is SQLite's (the largest plus one, by a
trigger; writers are serialised, so two never take the same). The few SQLite triggers of the
shipped migrations have PostgreSQL twins here (`_TRIGGERS`), and m012's import-commit
triggers, whose rule now lives in Python (`reveals`), have none.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar

import psycopg
from psycopg import errors as pg_errors
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy import exc as sa_exc

from ..errors import DatabaseBusyError, DiskFullError, ReadOnlyError, StorageError
from .database import NOTHING_WRITTEN, Cursor, Database, Params, begin_event, driver_error
from .revisions import upgrade as upgrade_schema
from .sqlite import BUSY_TIMEOUT_MS

POOL_SIZE = 8
_WRITE_LOCK = 0x63616C69  # the advisory lock key every write transaction takes ("cali")
_MIGRATE_LOCK = _WRITE_LOCK + 1
_engines: dict[str, Engine] = {}
_migrated: set[str] = set()
_lock = threading.Lock()

_UNREACHABLE = (
    "the database server cannot be reached or refused the connection (check the "
    f"URL, the server and the credentials); {NOTHING_WRITTEN}"
)
_BUSY_TEXT = f"the database is busy (another write held it too long); {NOTHING_WRITTEN}, try again"


def storage_error(exc: BaseException) -> StorageError | None:
    """The StorageError a known PostgreSQL failure means, or None (a bug)."""
    exc = driver_error(exc)
    if isinstance(exc, pg_errors.DiskFull):
        return DiskFullError(f"the disk holding the database is full; {NOTHING_WRITTEN}")
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction | pg_errors.InsufficientPrivilege):
        return ReadOnlyError(
            f"the database cannot be written (read-only or not permitted); {NOTHING_WRITTEN}"
        )
    if isinstance(exc, pg_errors.LockNotAvailable | pg_errors.DeadlockDetected | pg_errors.QueryCanceled):
        return DatabaseBusyError(_BUSY_TEXT)
    if isinstance(exc, psycopg.OperationalError):
        return StorageError(_UNREACHABLE)
    return None


# ---------------------------------------------------------------- SQL translation

# A literal, a quoted name, a placeholder, a percent sign, or `by` (a column of reviewer_events,
# reserved in PostgreSQL; SQL keywords are upper case here).
_TOKEN = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"|\?\d*|(?<![:\w]):[A-Za-z_]\w*|%|\bby\b")
_NUMBERED = re.compile(r"\?\d")
_NEXT_ID_FN = """CREATE OR REPLACE FUNCTION calibration_next_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS NULL THEN
        EXECUTE format('SELECT coalesce(max(id), 0) + 1 FROM %I.%I', TG_TABLE_SCHEMA, TG_TABLE_NAME)
            INTO NEW.id;
    END IF;
    RETURN NEW;
END $$"""

# What SQLite's SQL relies on and PostgreSQL lacks, defined once per database before the
# migrations: a comparison counts as 0 or 1 in a sum.
_BOOTSTRAP = (
    _NEXT_ID_FN,
    "CREATE OR REPLACE FUNCTION calibration_count_true(bigint, boolean) RETURNS bigint "
    "LANGUAGE sql IMMUTABLE AS 'SELECT $1 + CASE WHEN $2 THEN 1 ELSE 0 END'",
    "CREATE OR REPLACE AGGREGATE sum(boolean) (SFUNC = calibration_count_true, STYPE = bigint, "
    "INITCOND = '0')",
)

_APPEND_ONLY = (
    "RAISE EXCEPTION 'label_events is append-only' USING ERRCODE = 'integrity_constraint_violation'"
)
# The shipped migrations' SQLite triggers, by name and a phrase of their SQLite text, as
# PostgreSQL functions (the same rule each time); m012's two are gone with m017.
_TRIGGERS: dict[tuple[str, str], tuple[str, str, str] | None] = {
    ("label_events_no_update", "BEFORE UPDATE ON label_events BEGIN"): (
        "label_events",
        "BEFORE UPDATE",
        f"BEGIN {_APPEND_ONLY}; END",
    ),
    ("label_events_no_delete", "BEFORE DELETE ON label_events BEGIN"): (
        "label_events",
        "BEFORE DELETE",
        f"BEGIN {_APPEND_ONLY}; END",
    ),
    ("label_events_no_delete", "WHEN OLD.import_id IS NULL"): (
        "label_events",
        "BEFORE DELETE",
        f"""BEGIN
            IF OLD.import_id IS NULL OR NOT EXISTS (
                SELECT 1 FROM imports WHERE id = OLD.import_id AND status = 'publishing') THEN
                {_APPEND_ONLY};
            END IF;
            RETURN OLD;
        END""",
    ),
    ("label_events_no_update", "WHEN NOT (NEW.id = OLD.id"): (
        "label_events",
        "BEFORE UPDATE",
        f"""BEGIN
            IF NOT (NEW.id = OLD.id AND NEW.claim_pk = OLD.claim_pk AND NEW.kind = OLD.kind
                    AND NEW.verdict IS NOT DISTINCT FROM OLD.verdict AND NEW.evidence = OLD.evidence
                    AND NEW.note IS NOT DISTINCT FROM OLD.note
                    AND NEW.cycle_id IS NOT DISTINCT FROM OLD.cycle_id
                    AND NEW.judge_run_id IS NOT DISTINCT FROM OLD.judge_run_id
                    AND NEW.created_at = OLD.created_at
                    AND NEW.duration_ms IS NOT DISTINCT FROM OLD.duration_ms
                    AND NEW.import_id IS NOT DISTINCT FROM OLD.import_id
                    AND EXISTS (SELECT 1 FROM reviewer_events r
                                WHERE r.kind = 'rename' AND r.new_name = NEW.reviewer)) THEN
                {_APPEND_ONLY};
            END IF;
            RETURN NEW;
        END""",
    ),
    ("human_labels_import_commit_insert", ""): None,
    ("human_labels_import_commit_update", ""): None,
}
_TRIGGER_TABLES = {
    "label_events_no_update": "label_events",
    "label_events_no_delete": "label_events",
    "human_labels_import_commit_insert": "human_labels",
    "human_labels_import_commit_update": "human_labels",
}


def _call_end(sql: str, start: int) -> int:
    """The index just past the parenthesis that closes the one opened at sql[start - 1]."""
    depth = 1
    i = start
    while depth:
        ch = sql[i]
        if ch == "'":
            i = sql.index("'", i + 1)
            while sql.startswith("'", i + 1):
                i = sql.index("'", i + 2)
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        i += 1
    return i


def _split_args(text: str) -> list[str]:
    """The top-level comma-separated arguments of a call's inside."""
    args, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "'":
            i = text.index("'", i + 1)
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(text[start:i].strip())
            start = i + 1
        i += 1
    args.append(text[start:].strip())
    return args


def _rewrite_calls(sql: str, name: str, rewrite: Any) -> str:
    """Replace every call name(...) (outside string literals) by rewrite(list of arguments, rest)."""
    pattern = re.compile(rf"\b{name}\s*\(", re.I)
    out: list[str] = []
    pos = 0
    while True:
        m = _outside_literals(pattern, sql, pos)
        if m is None:
            return "".join(out) + sql[pos:]
        end = _call_end(sql, m.end())
        inner = sql[m.end() : end - 1]
        out.append(sql[pos : m.start()])
        replaced, consumed = rewrite(_split_args(inner), sql[end:])
        out.append(replaced)
        pos = end + consumed


def _outside_literals(pattern: re.Pattern[str], sql: str, pos: int) -> re.Match[str] | None:
    for m in pattern.finditer(sql, pos):
        if sql.count("'", 0, m.start()) % 2 == 0:
            return m
    return None


def _json_each(args: list[str], rest: str) -> tuple[str, int]:
    m = re.match(r"\s+(?:AS\s+)?(?!ON\b|WHERE\b|JOIN\b|LEFT\b|ORDER\b|GROUP\b)([A-Za-z_]\w*)", rest, re.I)
    alias, consumed = (m.group(1), m.end()) if m else ("json_each", 0)
    return (
        f"json_array_elements_text(CAST({args[0]} AS json)) WITH ORDINALITY AS {alias}(value, key)",
        consumed,
    )


def _dml(sql: str) -> str:
    sql = _rewrite_calls(
        sql, "json_group_array", lambda a, r: (f"coalesce(CAST(json_agg({a[0]}) AS text), '[]')", 0)
    )
    sql = _rewrite_calls(sql, "json_each", _json_each)
    sql = _extremes(sql)
    sql = re.sub(
        r"\bINSERT\s+OR\s+IGNORE\s+INTO\b(.*)",
        r"INSERT INTO\1 ON CONFLICT DO NOTHING",
        sql,
        flags=re.S | re.I,
    )
    sql = re.sub(r"\btemp\.", "pg_temp.", sql)
    return re.sub(r"\bmain\.(?=\w)", "", sql)


def _extremes(sql: str) -> str:
    """SQLite's scalar max(a, b, ...) / min(...) as greatest / least (aggregates stay)."""
    for name, scalar in (("max", "greatest"), ("min", "least")):
        sql = _rewrite_calls(
            sql,
            name,
            lambda a, r, n=name, s=scalar: (
                f"{s if len(a) > 1 else n}({', '.join(_extremes(x) for x in a)})",
                0,
            ),
        )
    return sql


def _ddl_types(sql: str) -> str:
    sql = re.sub(r"\bINTEGER\b", "BIGINT", sql)
    return re.sub(r"\bREAL\b", "DOUBLE PRECISION", sql)


def _trigger(sql: str) -> list[str]:
    name = re.match(r"\s*CREATE\s+TRIGGER\s+(\w+)", sql, re.I)
    assert name is not None
    for (trigger, phrase), twin in _TRIGGERS.items():
        if trigger == name.group(1) and " ".join(phrase.split()) in " ".join(sql.split()):
            if twin is None:
                return []
            table, when, body = twin
            return [
                f"CREATE OR REPLACE FUNCTION {trigger}_fn() RETURNS trigger LANGUAGE plpgsql AS $$ {body} $$",
                f"CREATE OR REPLACE TRIGGER {trigger} {when} ON {table} FOR EACH ROW "
                f"EXECUTE FUNCTION {trigger}_fn()",
            ]
    raise ValueError(f"no PostgreSQL twin for trigger {name.group(1)}")


@lru_cache(maxsize=2048)
def translate(sql: str) -> tuple[str, ...]:
    """SQLite's spelling of one statement as PostgreSQL statements (usually one)."""
    head = sql.lstrip()[:40].upper()
    if head.startswith("CREATE TRIGGER"):
        return tuple(_trigger(sql))
    if head.startswith("DROP TRIGGER"):
        m = re.match(r"\s*DROP\s+TRIGGER\s+(IF\s+EXISTS\s+)?(\w+)", sql, re.I)
        assert m is not None
        return (f"DROP TRIGGER IF EXISTS {m.group(2)} ON {_TRIGGER_TABLES[m.group(2)]}",)
    if head.startswith(("CREATE TABLE", "CREATE TEMP", "ALTER TABLE")):
        stmts = [_ddl_types(_placeholders(sql))]
        m = re.match(r"\s*CREATE\s+(?:TEMP\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([\w.\"]+)", sql, re.I)
        if m and re.search(r"\bid\s+INTEGER\s+PRIMARY\s+KEY\b", sql, re.I):
            table = m.group(1).strip('"')
            stmts = [
                _NEXT_ID_FN,
                *stmts,
                f"CREATE OR REPLACE TRIGGER {table.replace('.', '_')}_next_id BEFORE INSERT ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION calibration_next_id()",
            ]
        return tuple(stmts)
    return (_placeholders(_dml(sql)),)


def _placeholders(sql: str) -> str:
    def sub(m: re.Match[str]) -> str:
        tok = m.group(0)
        if tok == "?":
            return "%s"
        if tok.startswith("?"):  # SQLite's ?N: the Nth parameter, named so it can repeat
            return f"%(p{tok[1:]})s"
        if tok == "%":
            return "%%"
        if tok.startswith(":"):
            return f"%({tok[1:]})s"
        if tok == "by":
            return '"by"'
        return tok.replace("%", "%%") if tok.startswith("'") else tok

    return _TOKEN.sub(sub, sql)


# ---------------------------------------------------------------- the connection


class _Result:
    """A cursor's rows (fetched at once: the statement is done) and counts, as SQLite's cursor has."""

    def __init__(self, cur: psycopg.Cursor[Any], rowcount: int) -> None:
        self.description = cur.description
        self._rows: list[Any] = cur.fetchall() if cur.description is not None else []
        self.rowcount = rowcount
        self.lastrowid: int | None = None
        self._at = 0

    def fetchone(self) -> Any:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchall(self) -> list[Any]:
        rows, self._at = self._rows[self._at :], len(self._rows)
        return rows

    def __iter__(self) -> Iterator[Any]:
        while (row := self.fetchone()) is not None:
            yield row


class PostgresDatabase(Database):
    """A pooled connection to one PostgreSQL database (returned to the pool by `close`).

    `sa` is SQLAlchemy's connection, in its AUTOCOMMIT mode: transactions are the explicit
    statements `write` and `snapshot` run (the write lock, the isolation level), on the driver's
    connection beneath it, which SQL text runs on too."""

    dialect: ClassVar[str] = "postgresql"
    integrity_errors: ClassVar[tuple[type[Exception], ...]] = (psycopg.IntegrityError, sa_exc.IntegrityError)
    driver_errors: ClassVar[tuple[type[Exception], ...]] = (psycopg.Error, sa_exc.DBAPIError)
    begin_write: ClassVar[tuple[str, ...]] = ("BEGIN", f"SELECT pg_advisory_xact_lock({_WRITE_LOCK})")
    begin_read: ClassVar[tuple[str, ...]] = ("BEGIN ISOLATION LEVEL REPEATABLE READ",)

    def __init__(self, sa: Connection, url: str) -> None:
        self.sa = sa
        raw = sa.connection.dbapi_connection
        assert isinstance(raw, psycopg.Connection)
        self._conn: psycopg.Connection[Any] | None = raw
        self.url = url

    @property
    def _c(self) -> psycopg.Connection[Any]:
        if self._conn is None:
            raise StorageError("the database connection was closed")
        return self._conn

    def execute(self, sql: str, params: Params = ()) -> Cursor:
        *before, last = translate(sql) or ("SELECT 1 WHERE false",)
        with self._c.cursor() as cur:
            for stmt in before:
                cur.execute(stmt)
            cur.execute(last, _params(params, numbered=_NUMBERED.search(sql) is not None))
            return _Result(cur, cur.rowcount)

    def executemany(self, sql: str, rows: Sequence[Params]) -> Cursor:
        (stmt,) = translate(sql)
        with self._c.cursor() as cur:
            cur.executemany(stmt, [_params(r) for r in rows])
            return _Result(cur, cur.rowcount)

    @property
    def in_transaction(self) -> bool:
        return self._c.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def close(self) -> None:
        if self._conn is not None:
            self._conn = None
            self.sa.close()

    def table_names(self) -> list[str]:
        return [
            r[0]
            for r in self._c.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
            )
        ]

    def columns(self, table: str) -> list[str]:
        return [
            r[0]
            for r in self._c.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = %s ORDER BY ordinal_position",
                [table],
            )
        ]

    def parents(self, table: str) -> set[str]:
        return {
            r[0]
            for r in self._c.execute(
                "SELECT DISTINCT confrelid::regclass::text FROM pg_constraint "
                "WHERE contype = 'f' AND conrelid = CAST(%s AS regclass)",
                [table],
            )
        } - {table}

    def create_staging(self, name: str, like: str, columns: Sequence[str]) -> None:
        self.drop_staging(name)
        self._c.execute(f"CREATE TEMP TABLE {name} AS SELECT {', '.join(columns)} FROM {like} WHERE false")
        self._c.execute(f"ALTER TABLE pg_temp.{name} ADD COLUMN rowid BIGSERIAL")

    def drop_staging(self, name: str) -> None:
        self._c.execute(f"DROP TABLE IF EXISTS pg_temp.{name}")

    def row_order(self, table: str) -> str:
        keys = [
            r[0]
            for r in self._c.execute(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = CAST(%s AS regclass) AND i.indisprimary "
                "ORDER BY array_position(i.indkey, a.attnum)",
                [table],
            )
        ]
        return ", ".join(f'"{k}"' for k in keys) or ", ".join(f'"{c}"' for c in self.columns(table))

    def checkpoint(self) -> None:
        pass  # the server checkpoints on its own

    def analyze(self) -> None:
        # Autovacuum would get to it in a minute or more; until then an export of 100,000 claims
        # copied by migrate-db reads about three times slower (bench/bench_migrate.py).
        self._c.execute("ANALYZE")

    def before_numbered_migrations(self) -> None:
        for stmt in _BOOTSTRAP:
            self._c.execute(stmt)

    def translated(self, exc: BaseException) -> BaseException:
        return storage_error(exc) or driver_error(exc)

    def refusal(self, exc: BaseException) -> str:
        return _first_line(driver_error(exc))

    def _rollback(self) -> None:
        if self._conn is not None:
            super()._rollback()


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _params(params: Params, *, numbered: bool = False) -> Sequence[Any] | Mapping[str, Any]:
    if isinstance(params, Mapping):
        return params
    return {f"p{i}": v for i, v in enumerate(params, 1)} if numbered else list(params)


class _NumberLoader(psycopg.adapt.Loader):
    """numeric (what sum() of integers gives) as SQLite gives it: an int when whole, else a float."""

    def load(self, data: Any) -> int | float:
        text = bytes(data).decode()
        return int(text) if text.lstrip("-").isdigit() else float(text)


def _configure(conn: psycopg.Connection[Any], _record: object) -> None:
    conn.adapters.register_loader("numeric", _NumberLoader)
    conn.execute(f"SET lock_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("SET client_min_messages = warning")


def _reset(conn: psycopg.Connection[Any], _record: object, _state: object) -> None:
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        conn.execute("ROLLBACK")  # a unit of work that ended inside its transaction (an error)
    conn.execute("DISCARD TEMP")  # a pooled connection starts without the last user's staging


def engine_url(url: str) -> str:
    """`url` as SQLAlchemy names it with the driver this backend uses (psycopg 3)."""
    scheme, sep, rest = url.partition("://")
    return f"postgresql+psycopg{sep}{rest}" if scheme in ("postgresql", "postgres") else url


def engine(url: str) -> Engine:
    """The process's SQLAlchemy Engine for `url`, its pool of up to POOL_SIZE connections."""
    with _lock:
        found = _engines.get(url)
        if found is None:
            # AUTOCOMMIT: SQLAlchemy begins nothing itself; `write` and `snapshot` do.
            found = create_engine(
                engine_url(url),
                pool_size=POOL_SIZE,
                max_overflow=0,
                pool_timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level="AUTOCOMMIT",
                pool_reset_on_return=None,
                connect_args={"connect_timeout": 10},
            )
            event.listen(found, "connect", _configure)
            event.listen(found, "begin", begin_event)
            event.listen(found, "reset", _reset)
            _engines[url] = found
        return found


def close_pool(url: str) -> None:
    """Close the pool of `url` (its connections end), so the database can be dropped."""
    with _lock:
        found = _engines.pop(url, None)
        _migrated.discard(url)
    if found is not None:
        found.dispose()


def connect(url: str, *, migrate: bool = True) -> PostgresDatabase:
    """A pooled connection to `url`; pending migrations applied once per process."""
    try:
        sa = engine(url).connect()
    except (sa_exc.DBAPIError, sa_exc.TimeoutError) as exc:
        raise StorageError(_UNREACHABLE) from exc
    db = PostgresDatabase(sa, url)
    try:
        if migrate and url not in _migrated:
            with _lock:
                if url not in _migrated:
                    # Several app servers may start at once: one migrates, the others wait.
                    db._c.execute("SELECT pg_advisory_lock(%s)", [_MIGRATE_LOCK])
                    try:
                        with db.write():
                            upgrade_schema(db)
                    finally:
                        db._c.execute("SELECT pg_advisory_unlock(%s)", [_MIGRATE_LOCK])
                    _migrated.add(url)
    except BaseException:
        db.close()
        raise
    return db
