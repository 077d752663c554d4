"""The whole-database backup: every table round-trips, restore is all or nothing into an empty
database, and older files (the 0.2.0 per-claim export, a 0.1.0 schema) still restore."""

from __future__ import annotations

import itertools
import json
import os
import select
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from calibration import (
    backup,
    closing,
    cycles,
    dashboard,
    export,
    identity,
    judge,
    review,
    roles,
    roster,
    split,
    store,
)
from calibration.cli import main
from calibration.errors import ConflictError, InputError
from calibration.importing import backfill_checks, import_answers, import_labels
from calibration.store import guidelines
from calibration.store import imports as import_store
from calibration.store.backup import BOOKKEEPING, MIGRATIONS_TABLE

from .judge_stub import StubServer
from .pg_server import Cluster
from .test_export import labels_snapshot
from .test_revisions import stale_numbering

DATA = Path(__file__).parent / "data"
RELEASE_DB = DATA / "release-0.1.0.db"
# Written by 0.2.0's `export --format jsonl` (commit 1ffcc65, before the backup existed) from a
# copy of release-0.1.0.db, upgraded on opening: the previous release's lossless file, kept as
# written and never regenerated.
PREVIOUS_EXPORT = DATA / "export-0.2.0.jsonl"
SECRET = "s3cr3t-signin-key"
API_KEY = "sk-test-backup-0123456789"
EXAMPLES_TEMPLATE = (
    judge.load_template("grounding-v1").text + "\n\nWorked examples from reviewers:\n{examples}\n"
)


def table_names(path: Path) -> list[str]:
    """Every table of the schema, from the database itself: a table added later is here too."""
    conn = sqlite3.connect(path)
    try:
        return [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
    finally:
        conn.close()


def table_rows(path: Path) -> dict[str, list[tuple]]:
    """Every row of every table, less the secret and the restore's own migration timestamps."""
    conn = sqlite3.connect(path)
    try:
        out: dict[str, list[tuple]] = {}
        for name in table_names(path):
            if name == MIGRATIONS_TABLE:  # when each migration ran is the restore's own time
                sql = f"SELECT migration_set, name FROM {name} ORDER BY rowid"
            elif name == "settings":
                sql = f"SELECT * FROM settings WHERE key != '{store.SIGNIN_SECRET_SETTING}' ORDER BY rowid"
            else:
                sql = f"SELECT * FROM {name} ORDER BY rowid"
            out[name] = conn.execute(sql).fetchall()
        return out
    finally:
        conn.close()


def figures(path: str | Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    """`stats --json` for every run and every cycle, every judge-lab comparison, the split, the
    dashboard of every run and cycle, and every cycle's progress."""
    out: dict[str, object] = {}
    with store.session(path) as db:
        runs = store.judge_runs(db)
        names = [c.name for c in cycles.list_cycles(db)]
        for a, b in itertools.permutations(runs, 2):
            comp = judge.compare_runs(db, a, b)
            out[f"compare {a.name} {b.name}"] = None if comp is None else comp.to_dict()
        out["split"] = split.current(db).to_dict()
        # What the Dashboard and Cycles pages draw (repr: reports hold numpy arrays).
        for r in runs:
            out[f"dashboard {r.name}"] = repr(dashboard.build(db, run=r.name, bootstrap=0))
        for c in cycles.list_cycles(db):
            out[f"progress {c.name}"] = repr(cycles.progress(db, c.id))
            out[f"dashboard {c.name}"] = repr(dashboard.build(db, run=c.judge_run, cycle=c.name, bootstrap=0))
    capsys.readouterr()
    for args in [["--judge-run", r.name] for r in runs] + [["--cycle", n] for n in names]:
        assert main(["--db", str(path), "stats", *args, "--json"]) == 0
        out[f"stats {args}"] = json.loads(capsys.readouterr().out)
    return out


def _config(stub: StubServer) -> judge.JudgeConfig:
    return judge.JudgeConfig(
        base_url=stub.base_url,
        model="lab-judge",
        timeout=2,
        backoff_base=0.01,
        backoff_max=0.05,
        concurrency=2,
        api_key_env="CALIBRATION_TEST_JUDGE_KEY",
    )


@pytest.fixture(scope="module")
def full_db_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once per module (it runs a judge-lab run); tests get a copy (`full_db`)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CALIBRATION_JUDGE_KEY_ENVS", "CALIBRATION_TEST_JUDGE_KEY")
        mp.setenv("CALIBRATION_TEST_JUDGE_KEY", API_KEY)
        return _fill(tmp_path_factory.mktemp("full"))


@pytest.fixture
def full_db(full_db_file: Path, tmp_path: Path) -> Path:
    """A copy of the filled database, for one test to change at will."""
    path = tmp_path / "full.db"
    shutil.copyfile(full_db_file, path)
    return path


def _fill(tmp_path: Path) -> Path:
    """The 0.1.0 database (demo, WiCE, blind labels, reconciles, a skip, an unclear mark, an
    adjudication, holdout answers, thresholds, an open and a closed cycle, a judge-lab run),
    upgraded, then taken through every later feature: a staged import with checks, a review with
    durations, a commit, a reveal and reconciles, a reassignment, guidelines, reference edits,
    sign-ins, an unsealed and a sealed split, a judge-lab run with few-shot examples that revises
    another, changed thresholds, and the sign-in secret."""
    path = tmp_path / "full.db"
    shutil.copyfile(RELEASE_DB, path)
    extra = tmp_path / "extra.jsonl"
    extra.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"X{i}",
                    "question": "Сколько дней?",
                    "answer": "Десять дней. Считая от оплаты.",
                    "chunks": [{"id": "K1", "text": "Десять рабочих дней после оплаты."}],
                    "claims": [
                        {"id": "x1", "text": "Десять дней.", "verdict": "SUPPORTED"},
                        {
                            "id": "x2",
                            "text": "Считая от оплаты.",
                            "verdict": "UNSUPPORTED" if i % 2 else "SUPPORTED",
                        },
                    ],
                    "judge_model": "gpt-4-0613",
                    "judge_prompt_version": "wice-gpt4",
                },
                ensure_ascii=False,
            )
            + "\n"
            for i in range(1, 9)
        ),
        encoding="utf-8",
    )
    later = tmp_path / "later.csv"  # labels given after the first holdout was unsealed
    later.write_text(
        "answer_id,claim_id,verdict,reviewer\n"
        + "".join(f"X{i},x1,SUPPORTED,dan\nX{i},x2,UNSUPPORTED,dan\n" for i in range(2, 9)),
        encoding="utf-8",
    )
    with store.session(path) as db:
        import_answers(db, extra)  # staged: leaves its row in imports, and its answer checks
        backfill_checks(db)  # the 0.1.0 answers, imported before checks existed
        cyc = cycles.create_cycle(
            db,
            name="round-2",
            judge_run="gpt-4-0613@wice-gpt4",
            size=4,
            seed=2,
            strategy="planned",
            goal="grounding",
            reviewers=["ann", "bob"],
            overlap=0.0,
            include_labeled=True,
            force=True,
            created_by="lead",
        )
        first = review.queue(db, cyc.id, "ann")[0]
        for i, pk in enumerate(
            r[0]
            for r in db.execute(
                "SELECT id FROM claims WHERE answer_id = :answer_id ORDER BY position", {"answer_id": first}
            )
        ):
            review.label(
                db,
                cycle_id=cyc.id,
                reviewer="ann",
                claim_pk=pk,
                verdict="CONTRADICTED",
                note="по тексту" if i == 0 else None,
                duration_ms=1500 + i,
            )
        review.commit(db, cycle_id=cyc.id, reviewer="ann", answer_id=first)
        for row in review.reveal(db, cycle_id=cyc.id, answer_id=first, reviewer="ann"):
            if row.disagrees:
                review.reconcile(db, cycle_id=cyc.id, reviewer="ann", claim_pk=row.claim.pk, choice="keep")
        cycles.reassign(db, "round-2", "bob", "cara", by="lead")
        guidelines.save_guidelines(db, "project", "# Правила\nSUPPORTED — только по тексту.", "lead")
        guidelines.save_guidelines(db, guidelines.cycle_scope(cyc.id), "Round two: dates matter.", "lead")
        export.set_reference_answer(db, "Q1", "10 рабочих дней после оплаты.", edited_by="lead")
        export.set_reference_answer(db, "Q1", "Десять рабочих дней, считая от оплаты.", edited_by="anna")
        for name in ("ann", "bob", "cara"):  # the roster, kept after the cycles it would check
            roster.add(db, name, by="lead")
        roster.deactivate(db, "bob", by="lead")
        for name in ("ann", "Bob", "lead"):
            roles.note_sign_in(db, name)
        signed = identity.Person("https://idp.example.org", "s-dana", 1000, "dana@example.org")
        identity.sign_in(db, signed)  # a provider identity's binding,
        identity.log_out(db, signed)  # with a Log out
        store.save_thresholds(db, alpha=0.1, agreement_target=0.85)
        store.set_setting(db, store.SIGNIN_SECRET_SETTING, SECRET)
        split.ensure_split(db, created_by="lead")
        split.unseal(db, who="lead", reason="the 0.1 decision")
        split.new_holdout(db, created_by="lead")
        import_labels(db, later)
        split.ensure_split(db, created_by="lead")
        closing.close_labeling(db, "gpt-4-0613@wice-gpt4", closed_by="lead")
    with StubServer() as stub:
        judge.run_lab(
            _config(stub),
            judge.PromptTemplate("fewshot", EXAMPLES_TEMPLATE),
            db_path=path,
            scope="cycle:demo",
            revises="demo-judge@grounding-v1",
        )
        # The key was sent, so a backup that copied it anywhere would be caught.
        assert stub.requests and all(API_KEY in r.headers.get("authorization", "") for r in stub.requests)
    return path


def round_trip(
    source: Path,
    target: str | Path,
    rows: Callable[[str | Path], dict[str, list[tuple]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> str:
    """Back `source` up and restore the file into the empty `target`: every table (as `rows`
    reads it) and every figure must be the same there; what `restore` printed."""
    before = rows(source)
    # The fill must reach every table the schema has, so that each one is really compared: a
    # table a later release adds fails here until this fixture (and the backup) covers it.
    empty = [name for name, rows in before.items() if not rows]
    assert empty == [], f"the fixture leaves these tables empty: {empty}"
    expected = figures(source, capsys)
    out = tmp_path / "backup.jsonl"
    assert main(["--db", str(source), "backup", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert SECRET not in text and API_KEY not in text and "Bearer" not in text
    assert main(["--db", str(target), "restore", str(out)]) == 0
    printed = capsys.readouterr().out
    after = rows(target)
    assert sorted(after) == sorted(before)
    for name in before:
        assert after[name] == before[name], name
    assert figures(target, capsys) == expected
    return printed


@pytest.mark.slow  # every table filled and compared: make test runs it, make test-fast leaves it out
def test_every_table_round_trips_and_every_figure_is_the_same(
    full_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "restored.db"
    printed = round_trip(full_db, target, table_rows, tmp_path, capsys)
    assert "restored (backup)" in printed and "answer checks computed" not in printed
    with store.session(target) as db:
        assert store.get_setting(db, store.SIGNIN_SECRET_SETTING) is None
        s = split.current(db)  # the second holdout is sealed, the first one stays marked used
        assert s.sealed and s.generation is not None and s.generation.id == 2
        assert split.sealed_answer_ids(db) and not s.used


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> Iterator[str]:
    """An empty PostgreSQL database (dropped afterwards)."""
    url = pg_cluster.new_database()
    yield url
    pg_cluster.drop_database(url)


def stored_rows(url: str | Path) -> dict[str, list[tuple]]:
    """Every row of every table, on either engine, less the bookkeeping and the sign-in secret;
    each table's rows sorted (the engines list rows of a text key in different orders)."""
    with store.session(url) as db:
        return {
            t.name: sorted(
                (
                    r
                    for r in store.backup.all_rows(db, t)
                    if t.name != "settings" or r[0] != store.SIGNIN_SECRET_SETTING
                ),
                key=repr,
            )
            for t in store.backup.tables(db)
        }


@pytest.mark.slow  # as the round trip above, into a PostgreSQL server
def test_a_backup_restores_into_an_empty_postgresql_database_exactly(
    full_db: Path, tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "restored (backup)" in round_trip(full_db, pg_url, stored_rows, tmp_path, capsys)
    with store.session(pg_url) as db:
        assert store.backup.revision(db) == store.backup.known_revisions()[-1]
    assert stale_numbering(pg_url) == []  # a new row takes an id past the restored ones


def test_the_header_says_what_the_backup_holds(full_db: Path, tmp_path: Path) -> None:
    from calibration import __version__

    out = tmp_path / "backup.jsonl"
    with store.session(full_db) as db:
        rep = backup.write_backup(db, out)
    lines = out.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert header["format"] == backup.BACKUP_FORMAT and header["format_version"] == backup.BACKUP_VERSION
    assert header["tool_version"] == __version__
    assert header["migrations"] == store.backup.known_migrations()
    assert header["revision"] == store.backup.known_revisions()[-1]
    assert set(header["tables"]) == set(table_names(full_db)) - set(BOOKKEEPING)
    assert sum(header["tables"].values()) == len(lines) - 1 == sum(rep.tables.values())
    assert any("sign-in secret" in item for item in header["left_out"])
    # Parents come before the rows that reference them.
    order = list(dict.fromkeys(json.loads(line)["table"] for line in lines[1:]))
    assert order.index("answers") < order.index("claims") < order.index("label_events")
    assert order.index("judge_runs") < order.index("cycles") < order.index("reassignments")


def _tables_are_empty(path: Path) -> None:
    rows = table_rows(path)
    assert {name: n for name, r in rows.items() if name not in BOOKKEEPING and (n := len(r))} == {}


def _break_line(src: Path, dst: Path, replace_with: str) -> int:
    """Copy `src` to `dst` with its middle line replaced; that line's number."""
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    middle = len(lines) // 2
    lines[middle] = replace_with + "\n"
    dst.write_text("".join(lines), encoding="utf-8")
    return middle + 1


@pytest.mark.parametrize(
    "bad",
    [
        '{"table": "answers", "row": {"id": "Q1"',  # cut off: not JSON
        '{"table": "no_such_table", "row": {}}',
        '{"table": "label_events", "row": {"id": 999999, "claim_pk": 1, "reviewer": "x", "kind": "nope", '
        '"created_at": "2026-01-01"}}',  # a CHECK constraint the schema holds
        '{"table": "claims", "row": {"id": "abc", "answer_id": "Q1", "claim_id": "zz", "position": 9, '
        '"text": "t"}}',  # not an integer id
        '{"table": "sign_ins", "row": {"name_key": "z", "name": "z", "first_at": 1e400}}',  # not JSON's
        '{"table": "settings", "row": {"key": "k", "value": 123456789012345678901234567890}}',
        '{"table": "guidelines", "row": {"scope": ["project"]}}',
        '{"table": "claims", "row": {"id": 999999, "answer_id": "NOPE", "claim_id": "z", "position": 0, '
        '"text": "t"}}',  # refers to no answer
    ],
)
def test_a_bad_line_in_the_middle_leaves_the_empty_database_empty(
    full_db: Path, tmp_path: Path, bad: str
) -> None:
    good = tmp_path / "backup.jsonl"
    with store.session(full_db) as db:
        backup.write_backup(db, good)
    broken = tmp_path / "broken.jsonl"
    line = _break_line(good, broken, bad)
    target = tmp_path / "target.db"
    with store.session(target) as db, pytest.raises(InputError) as err:
        backup.restore(db, broken)
    assert f"{broken}:{line}:" in str(err.value)
    _tables_are_empty(target)


def test_a_bad_line_of_an_old_export_leaves_the_empty_database_empty(tmp_path: Path) -> None:
    broken = tmp_path / "export.jsonl"
    line = _break_line(PREVIOUS_EXPORT, broken, '{"format": "judge-calibration-export", "format_version": 1}')
    target = tmp_path / "target.db"
    with store.session(target) as db, pytest.raises(InputError) as err:
        backup.restore(db, broken)
    assert f"{broken}:{line}:" in str(err.value)
    _tables_are_empty(target)


def test_a_cut_off_backup_is_refused(full_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "backup.jsonl"
    with store.session(full_db) as db:
        backup.write_backup(db, out)
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    out.write_text("".join(lines[:-3]), encoding="utf-8")  # every line whole, the last ones gone
    target = tmp_path / "target.db"
    with store.session(target) as db, pytest.raises(InputError, match="the backup is incomplete"):
        backup.restore(db, out)
    _tables_are_empty(target)


def test_restore_never_merges(full_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "backup.jsonl"
    assert main(["--db", str(full_db), "backup", "--out", str(out)]) == 0
    before = table_rows(full_db)
    capsys.readouterr()
    assert main(["--db", str(full_db), "restore", str(out)]) == 1
    err = capsys.readouterr().err
    assert "is not empty" in err and "never merges: restore into a new file (--db)" in err
    assert "Traceback" not in err
    assert table_rows(full_db) == before
    with store.session(full_db) as db, pytest.raises(ConflictError) as refused:
        backup.restore(db, PREVIOUS_EXPORT)
    assert str(refused.value).endswith("restore into a new file (the database path)")  # no flag here


def test_a_database_holding_only_its_sign_in_secret_counts_as_empty(full_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "backup.jsonl"
    with store.session(full_db) as db:
        backup.write_backup(db, out)
    target = tmp_path / "target.db"
    with store.session(target) as db:
        store.set_setting(db, store.SIGNIN_SECRET_SETTING, "the new machine's own")
        backup.restore(db, out)
        assert store.get_setting(db, store.SIGNIN_SECRET_SETTING) == "the new machine's own"


def test_a_refused_restore_leaves_no_new_database_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "something else"}\n', encoding="utf-8")
    target = tmp_path / "new.db"
    assert main(["--db", str(target), "restore", str(bad)]) == 1
    assert "not a judge-calibration-backup file" in capsys.readouterr().err
    assert not target.exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format_version": 99}, "written by a newer release"),
        ({"migrations_add": "m099_from_the_future"}, "unknown to this release"),
        ({"migrations_drop": "m002_create_judge_runs"}, "not a schema any release made"),
        ({"revision": "9999_later"}, "revision: 9999_later is unknown to this release"),
        ({"migrations_drop": "m018_reviewer_identities"}, "the header lacks some"),
        ({"tables": "not a mapping"}, "header.tables"),
    ],
)
def test_a_header_this_release_cannot_read_is_refused(
    full_db: Path, tmp_path: Path, change: dict, message: str
) -> None:
    out = tmp_path / "backup.jsonl"
    with store.session(full_db) as db:
        backup.write_backup(db, out)
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(lines[0])
    if "migrations_add" in change:
        header["migrations"].append(change["migrations_add"])
    elif "migrations_drop" in change:
        header["migrations"].remove(change["migrations_drop"])
    else:
        header.update(change)
    out.write_text(json.dumps(header) + "\n" + "".join(lines[1:]), encoding="utf-8")
    target = tmp_path / "target.db"
    with store.session(target) as db, pytest.raises(InputError, match=message):
        backup.restore(db, out)
    _tables_are_empty(target)


# ---------------------------------------------------------------- files of earlier releases


def test_the_previous_release_export_restores_with_its_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "upgraded.db"  # what 0.2.0 exported the fixture from
    shutil.copyfile(RELEASE_DB, source)
    target = tmp_path / "restored.db"
    assert main(["--db", str(target), "restore", str(PREVIOUS_EXPORT)]) == 0
    out = capsys.readouterr().out
    assert "restored (JSONL export)" in out and "answer checks computed for 105 answers" in out

    def without_cycles(snapshot: dict[str, list[tuple]]) -> dict[str, list[tuple]]:
        # The export names each label's cycle, but holds no cycles to link it to.
        return {
            t: [
                tuple(None if isinstance(v, str) and v in ("demo", "wice-1") else v for v in row)
                for row in rows
            ]
            for t, rows in snapshot.items()
        }

    with store.session(source) as old, store.session(target) as new:
        assert without_cycles(labels_snapshot(new)) == without_cycles(labels_snapshot(old))
        assert new.execute("SELECT count(*) FROM answer_checks").fetchone()[0] == 105
        runs = sorted(r.name for r in store.judge_runs(old))  # ids are re-numbered, names kept
        assert sorted(r.name for r in store.judge_runs(new)) == runs
    for run in runs:
        # The export holds no cycles, splits or thresholds: the figures that need none agree.
        pick = {
            "n_claims": ...,
            "n_answers": ...,
            "n_unresolved": ...,
            "ac1": ...,
            "confusion": ...,
            "per_class": ...,
            "human_human": ...,
            "agreement": "value",
            "kappa": "value",
        }
        assert main(["--db", str(source), "stats", "--judge-run", run, "--json"]) == 0
        old_stats = json.loads(capsys.readouterr().out)
        assert main(["--db", str(target), "stats", "--judge-run", run, "--json"]) == 0
        new_stats = json.loads(capsys.readouterr().out)
        for key, part in pick.items():
            old_value, new_value = old_stats[key], new_stats[key]
            if part is not ...:
                old_value, new_value = old_value[part], new_value[part]
            assert new_value == old_value, (run, key)


def test_a_backup_of_an_earlier_schema_is_upgraded_on_restore(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    shutil.copyfile(RELEASE_DB, old)
    out = tmp_path / "backup.jsonl"
    db = store.connect(old, migrate=False)
    try:
        applied = store.backup.applied_migrations(db)
        assert applied != store.backup.known_migrations()  # 0.1.0's schema, not today's
        backup.write_backup(db, out)
    finally:
        db.conn.close()
    upgraded = tmp_path / "upgraded.db"
    shutil.copyfile(RELEASE_DB, upgraded)
    with store.session(upgraded):
        pass  # opening applies the later migrations
    target = tmp_path / "restored.db"
    with store.session(target) as db:
        summary = backup.restore(db, out)
    assert summary.upgraded == [m for m in store.backup.known_migrations() if m not in applied]
    assert summary.checks_added == 105
    expected = table_rows(upgraded)
    got = table_rows(target)
    for name in expected:
        if name != "answer_checks":  # the restore computes what the upgrade alone does not
            assert got[name] == expected[name], name


def test_no_backup_while_an_import_is_moving_its_rows_in(full_db: Path, tmp_path: Path) -> None:
    with store.session(full_db) as db, store.write(db):
        db.execute(
            "INSERT INTO imports (status, source, stamp, pid, host, started_at) "
            "VALUES ('publishing', 'big.jsonl', 'stamp-x', 1, 'here', '2026-01-01')"
        )
    out = tmp_path / "backup.jsonl"
    with store.session(full_db) as db, pytest.raises(ConflictError, match="an import is moving"):
        backup.write_backup(db, out)
    assert not out.exists()


# ---------------------------------------------------------------- nothing planted, nothing unreadable


def _with_rows(src: Path, dst: Path, rows: list[dict]) -> None:
    """Copy the backup `src` to `dst` with `rows` added at the end, its header counting them."""
    lines = src.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    for r in rows:
        header["tables"][r["table"]] = header["tables"].get(r["table"], 0) + 1
    dst.write_text(
        "\n".join([json.dumps(header), *lines[1:], *map(json.dumps, rows)]) + "\n", encoding="utf-8"
    )


def test_a_sign_in_secret_in_a_backup_file_is_never_restored(
    full_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "backup.jsonl"
    assert main(["--db", str(full_db), "backup", "--out", str(good)]) == 0
    assert SECRET not in good.read_text(encoding="utf-8")  # the backup leaves its own out
    planted = tmp_path / "planted.jsonl"
    row = {"key": store.SIGNIN_SECRET_SETTING, "value": "planted-by-someone"}
    _with_rows(good, planted, [{"table": "settings", "row": row}])
    target = tmp_path / "target.db"
    capsys.readouterr()
    assert main(["--db", str(target), "restore", str(planted)]) == 0
    assert "left out: the sign-in secret" in capsys.readouterr().out
    with store.session(target) as db:
        assert store.get_setting(db, store.SIGNIN_SECRET_SETTING) is None
        assert store.get_setting(db, "stats.alpha") is not None  # the other settings are restored


@pytest.mark.parametrize(
    ("row", "column"),
    [
        ({"table": "judge_verdicts", "row": {"evidence": "[not json"}}, "evidence"),
        ({"table": "label_events", "row": {"evidence": '{"a": 1}'}}, "evidence"),
        ({"table": "label_events", "row": {"evidence": "[1, 2]"}}, "evidence"),
        ({"table": "answers", "row": {"metadata": "[]"}}, "metadata"),
        ({"table": "answers", "row": {"metadata": "{"}}, "metadata"),
        ({"table": "cycle_plans", "row": {"plan": '{"answer_strata": [1]}'}}, "plan"),
        ({"table": "cycles", "row": {"snapshot": '{"agreement": {"kappa": [0.5]}}'}}, "snapshot"),
        ({"table": "reassignments", "row": {"answers": "not json"}}, "answers"),
        ({"table": "imports", "row": {"new_runs": '["x"]'}}, "new_runs"),
        ({"table": "imports", "row": {"status": "publishing"}}, "status"),
        ({"table": "judge_calls", "row": {"exchanges": "{}"}}, "exchanges"),
        ({"table": "judge_lab_runs", "row": {"params": "1"}}, "params"),
        ({"table": "label_events", "row": {"duration_ms": "fast"}}, "duration_ms"),
        ({"table": "label_events", "row": {"note": 12}}, "note"),
        ({"table": "label_events", "row": {"note": "a\u0000b"}}, "note"),
        ({"table": "cycle_answers", "row": {"inclusion_prob": "half"}}, "inclusion_prob"),
        ({"table": "answer_checks", "row": {"cjk_chars": True}}, "cjk_chars"),
        ({"table": "settings", "row": {"key": "stats.alpha", "value": "a lot"}}, "value"),
        ({"table": "settings", "row": {"key": "stats.alpha", "value": "5"}}, "value"),
    ],
)
def test_a_cell_its_readers_could_not_use_is_refused_by_line_and_column(
    full_db: Path, tmp_path: Path, row: dict, column: str
) -> None:
    good = tmp_path / "backup.jsonl"
    with store.session(full_db) as db:
        backup.write_backup(db, good)
    lines = good.read_text(encoding="utf-8").splitlines()
    # A row of that table as the backup holds it, one cell changed.
    at, found = next(
        (i, json.loads(x)) for i, x in enumerate(lines) if json.loads(x).get("table") == row["table"]
    )
    found["row"].update(row["row"])
    lines[at] = json.dumps(found)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines) + "\n", encoding="utf-8")
    target = tmp_path / "target.db"
    with store.session(target) as db, pytest.raises(InputError) as err:
        backup.restore(db, broken)
    assert f"{broken}:{at + 1}: row.{column}:" in str(err.value)
    _tables_are_empty(target)


# ---------------------------------------------------------------- no scratch copy left behind


def _restore_subprocess(db: Path, backup_file: Path, tmp: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "calibration", "--db", str(db), "restore", str(backup_file)],
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ, "TMPDIR": str(tmp)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _kill_when_loading(proc: subprocess.Popen[bytes], fifo: Path, header: str) -> None:
    """Feed the restore reading `fifo` its header, then SIGKILL it once it opens the file again to
    load the rows (its scratch database made by then)."""
    fd = os.open(fifo, os.O_WRONLY)  # returns once the restore opened the file for its header
    os.write(fd, header.encode("utf-8"))
    closed = select.poll()
    closed.register(fd, 0)  # POLLERR alone: the restore has read its header and closed the file
    closed.poll()
    os.close(fd)

    def kill() -> None:
        os.close(os.open(fifo, os.O_WRONLY))  # returns once the restore opened the file again
        proc.kill()

    killer = threading.Thread(target=kill)
    killer.start()
    proc.wait()
    # Had the restore ended on its own, the killer still waits for a reader: give it one.
    os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    killer.join()


def test_a_restore_killed_during_its_scratch_load_leaves_nothing_after_the_next_run(
    full_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = tmp_path / "backup.jsonl"
    with store.session(full_db) as db:
        backup.write_backup(db, good)
    header = good.read_text(encoding="utf-8").splitlines(keepends=True)[0]
    # The backup comes through a pipe: the restore reads its header, makes its scratch database,
    # then opens the file again to load the rows and waits there for them.
    fifo = tmp_path / "backup.fifo"
    os.mkfifo(fifo)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _restore_subprocess(tmp_path / "killed.db", fifo, tmp)
    try:
        _kill_when_loading(proc, fifo, header)
    finally:
        if proc.poll() is None:  # the test failed midway: leave no restore running
            proc.kill()
            proc.wait()
    left = list(tmp.iterdir())
    assert [p.name for p in left if (p / "scratch.db").exists()], left  # what the kill left behind
    # A restore still running in another process, and one whose process id was taken since.
    live = tmp / f"calibration-restore-{os.getppid()}.{import_store.process_start(os.getppid())}-running"
    reused = tmp / f"calibration-restore-{os.getppid()}.1-reused"
    reused.mkdir()
    live.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    with store.session(tmp_path / "next.db") as db:
        backup.restore(db, good)
    assert list(tmp.iterdir()) == [live]
