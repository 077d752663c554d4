"""The CLI on the files an attack run used: every one is refused with file, line and field, or
imported whole; none ends in a traceback (`run_cli` fails on one).

The commands run in this process (the `run_cli` fixture of tests/conftest.py); the
few checks that need the real process (the installed command's exit status, a traceback
that only a real interpreter would print) start one and are marked slow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from calibration import store
from tests.conftest import RunCli
from tests.helpers import assert_no_traceback

ROOT = Path(__file__).resolve().parents[1]


def run_process(*args: str | Path, db: Path) -> subprocess.CompletedProcess[str]:
    """`python -m calibration --db DB ARGS...` as its own process."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.run(
        [sys.executable, "-m", "calibration", "--db", str(db), *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    for stream, text in (("stderr", proc.stderr), ("stdout", proc.stdout)):
        assert_no_traceback(text, f"{stream} of calibration {' '.join(map(str, args))}")
    return proc


def answer(aid: str = "a1", **extra: object) -> dict[str, object]:
    return {
        "id": aid,
        "question": "q?",
        "answer": "The sky is blue.",
        "judge_model": "j",
        "judge_prompt_version": "v1",
        "chunks": [{"id": "k1", "text": "sky"}],
        "claims": [{"id": "c1", "claim": "The sky is blue.", "verdict": "SUPPORTED"}],
        **extra,
    }


def answers_in(db: Path) -> int:
    if not db.exists():
        return 0
    with store.session(db) as conn:
        return int(store.info(conn)["totals"]["answers"])


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "cal.db"


@pytest.mark.parametrize(
    ("after", "line"),
    [
        ("\n" + json.dumps([answer("a3")]) + "\n", 2),  # a second array
        ("\n" + json.dumps(answer("a3")) + "\n", 2),  # JSON lines after the array
        ("\n\nnot json at all\n", 3),
    ],
)
def test_content_after_a_leading_array_is_refused_with_its_line(
    run_cli: RunCli, tmp_path: Path, db: Path, after: str, line: int
) -> None:
    src = tmp_path / "mixed.json"
    src.write_text(json.dumps([answer("a1"), answer("a2")]) + after, encoding="utf-8")
    proc = run_cli("import", src, db=db, expect=1)
    assert f"mixed.json:{line}: more content after the closing ']'" in proc.stderr
    assert "nothing was imported" in proc.stderr
    assert answers_in(db) == 0


def test_an_array_alone_still_imports(run_cli: RunCli, tmp_path: Path, db: Path) -> None:
    src = tmp_path / "arr.json"
    src.write_text(json.dumps([answer("a1"), answer("a2")], indent=1) + "\n\n", encoding="utf-8")
    run_cli("import", src, db=db, expect=0)
    assert answers_in(db) == 2


@pytest.mark.parametrize(
    ("record", "field", "reason"),
    [
        (answer("a\u0000b"), "id", "NUL character (U+0000) at character 2"),
        (answer("a\u202eb"), "id", "bidirectional control U+202E"),
        (answer("a1", chunks=[{"id": "k\u0007", "text": "t"}], claims=[]), "chunks.0.id", "U+0007"),
        (
            {**answer("a1"), "claims": [{"id": "c\n1", "claim": "x", "verdict": "SUPPORTED"}]},
            "claims.0.id",
            "LINE FEED",
        ),
        (answer("a1", question="q\u0000"), "question", "NUL"),
    ],
)
def test_controls_in_ids_are_refused_with_file_line_field(
    run_cli: RunCli, tmp_path: Path, db: Path, record: dict, field: str, reason: str
) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text(json.dumps(answer("ok")) + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    proc = run_cli("import", src, db=db, expect=1)
    assert f"bad.jsonl:2: {field}: contains" in proc.stderr and reason in proc.stderr
    assert answers_in(db) == 0


def test_deep_nesting_is_a_line_error(run_cli: RunCli, tmp_path: Path, db: Path) -> None:
    src = tmp_path / "deep.jsonl"
    deep = "[" * 5000 + "]" * 5000
    src.write_text(
        json.dumps(answer("a1"))
        + "\n"
        + json.dumps(answer("a2"))[:-1]
        + f', "metadata": {{"x": {deep}}}}}\n'
        + json.dumps(answer("a3", metadata={"x": json.loads("[" * 150 + "]" * 150)}))
        + "\n",
        encoding="utf-8",
    )
    proc = run_cli("import", src, db=db, expect=1)
    assert "deep.jsonl:2: nested deeper than 100 levels" in proc.stderr
    assert "deep.jsonl:3: nested deeper than 100 levels" in proc.stderr


def test_deep_nesting_in_an_array_file_is_a_line_error(run_cli: RunCli, tmp_path: Path, db: Path) -> None:
    src = tmp_path / "deep.json"
    src.write_text(
        "[\n" + json.dumps(answer("a1")) + ",\n" + "[" * 5000 + "]" * 5000 + "\n]", encoding="utf-8"
    )
    proc = run_cli("import", src, db=db, expect=1)
    assert "deep.json:3: nested deeper than 100 levels" in proc.stderr


@pytest.mark.parametrize("where", ["metadata", "id", "rationale"])
def test_a_lone_surrogate_is_a_line_error(run_cli: RunCli, tmp_path: Path, db: Path, where: str) -> None:
    rec = answer("a1")
    if where == "metadata":
        rec["metadata"] = {"note": "x\ud800y"}
    elif where == "id":
        rec["id"] = "a\udc00"
    else:
        rec["claims"] = [{"id": "c1", "claim": "x", "verdict": "SUPPORTED", "rationale": "\ud83d"}]
    src = tmp_path / "sur.jsonl"
    src.write_text(json.dumps(rec) + "\n", encoding="utf-8")  # json.dumps escapes it as \ud800
    proc = run_cli("import", src, db=db, expect=1)
    assert "sur.jsonl:1:" in proc.stderr and "lone surrogate" in proc.stderr
    assert answers_in(db) == 0


@pytest.mark.parametrize(
    ("encoding", "says", "code"),
    [
        ("utf-16", "cannot decode bytes as utf-16", 1),
        ("utf-32", "cannot decode bytes as utf-32", 1),
        # Not a character encoding: a usage error, refused before any file is opened.
        ("rot13", "'rot13' is not a text encoding", 2),
        ("base64", "'base64' is not a text encoding", 2),
    ],
)
def test_a_wrong_encoding_is_one_line(
    run_cli: RunCli, tmp_path: Path, db: Path, encoding: str, says: str, code: int
) -> None:
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps(answer("a1")) + "\n", encoding="utf-8")
    proc = run_cli("import", "--encoding", encoding, src, db=db, expect=code)
    assert says in proc.stderr
    assert len([line for line in proc.stderr.splitlines() if "error:" in line]) == 1


def test_nan_and_infinity_in_metadata_are_refused(run_cli: RunCli, tmp_path: Path, db: Path) -> None:
    src = tmp_path / "nan.jsonl"
    src.write_text(
        json.dumps(answer("a1"))[:-1]
        + ', "metadata": {"score": NaN}}\n'
        + json.dumps(answer("a2"))[:-1]
        + ', "metadata": {"score": -Infinity}}\n',
        encoding="utf-8",
    )
    proc = run_cli("import", src, db=db, expect=1)
    assert "nan.jsonl:1: metadata.score: NaN is not valid JSON" in proc.stderr
    assert "nan.jsonl:2: metadata.score: -Infinity is not valid JSON" in proc.stderr


def test_a_changed_category_is_refused_unless_update(run_cli: RunCli, tmp_path: Path, db: Path) -> None:
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    first.write_text(json.dumps(answer("a1", category="finance", metadata={"k": 1})) + "\n", encoding="utf-8")
    second.write_text(json.dumps(answer("a1", category="health", metadata={"k": 1})) + "\n", encoding="utf-8")
    run_cli("import", first, db=db, expect=0)
    proc = run_cli("import", second, db=db, expect=1)
    assert "two.jsonl:1: answer 'a1' is already in the database with a different category" in proc.stderr
    assert "--update" in proc.stderr
    proc = run_cli("import", "--update", second, db=db, expect=0)
    assert "1 with category or metadata updated" in proc.stdout
    with store.session(db) as conn:
        from calibration.store.cycles import answer_facts

        assert answer_facts(conn, ["a1"])["a1"][0] == "health"
    # Importing the same file again changes nothing and is not refused.
    run_cli("import", second, db=db, expect=0)


def _labels_db(run_cli: RunCli, tmp_path: Path, db: Path) -> None:
    src = tmp_path / "answers.jsonl"
    src.write_text(json.dumps(answer("a1")) + "\n", encoding="utf-8")
    run_cli("import", src, db=db, expect=0)


@pytest.mark.parametrize(
    ("csv_text", "says"),
    [
        ('answer_id,claim_id,verdict,reviewer\na1,c1,"SUPPORTED,vera\n', ":2: a quoted field is not closed"),
        (
            "answer_id,claim_id,verdict,verdict,reviewer\na1,c1,SUPPORTED,CONTRADICTED,vera\n",
            ":1: column(s) 'verdict' appear more than once in the header",
        ),
        (
            "answer_id,claim_id,verdict,reviewer\na1,c1,SUPPORTED,\n",
            ":2: reviewer: empty: fill in the reviewer; or give one with --reviewer for rows without one",
        ),
        ("answer_id,claim_id,verdict,reviewer\na1,c1\n", ":2: 2 fields, but the header has 4 columns"),
        (
            "answer_id,claim_id,verdict,reviewer\na1,c1,SUPPORTED,vera,extra\n",
            ":2: 5 fields, but the header has 4",
        ),
        ("answer_id,claim_id,verdict,reviewer\na1,c1,SUPPORTED,\u0430nna\n", "mixes Cyrillic and Latin"),
    ],
)
def test_csv_errors_name_the_real_problem(
    run_cli: RunCli, tmp_path: Path, db: Path, csv_text: str, says: str
) -> None:
    _labels_db(run_cli, tmp_path, db)
    src = tmp_path / "labels.csv"
    src.write_text(csv_text, encoding="utf-8")
    proc = run_cli("import-labels", src, db=db, expect=1)
    assert says in proc.stderr
    assert "Input should be a valid string" not in proc.stderr


def test_label_import_matches_a_known_reviewer_by_normalisation(
    run_cli: RunCli, tmp_path: Path, db: Path
) -> None:
    _labels_db(run_cli, tmp_path, db)
    src = tmp_path / "labels.csv"
    src.write_text("answer_id,claim_id,verdict,reviewer\na1,c1,SUPPORTED,vera\n", encoding="utf-8")
    run_cli("import-labels", src, db=db, expect=0)
    src.write_text("answer_id,claim_id,verdict,reviewer\na1,c1,SUPPORTED,VERA\u200b\n", encoding="utf-8")
    proc = run_cli("import-labels", src, db=db, expect=0)
    assert "0 new or changed, 1 unchanged" in proc.stdout and "reviewers: vera" in proc.stdout


def test_a_mistyped_db_is_never_silent(run_cli: RunCli, tmp_path: Path) -> None:
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps(answer("a1")) + "\n", encoding="utf-8")
    typo = tmp_path / "calibraton.db"
    proc = run_cli("stats", db=typo, expect=1)
    assert "no database at" in proc.stderr and not typo.exists()
    proc = run_cli("import", src, db=typo, expect=0)
    assert f"note: no database at {typo}: creating a new one" in proc.stderr


def test_a_file_that_is_not_a_database_is_one_line(run_cli: RunCli, tmp_path: Path) -> None:
    fake = tmp_path / "cal.db"
    fake.write_bytes(b"this is a spreadsheet, not a database" * 200)
    proc = run_cli("stats", db=fake, expect=1)
    assert proc.stderr.strip() == (
        f"error: {fake}: the database file is not a calibration database "
        "(it was replaced by another file, or is damaged)"
    )


def test_an_unwritable_export_target_is_one_line(run_cli: RunCli, tmp_path: Path, db: Path) -> None:
    _labels_db(run_cli, tmp_path, db)
    target = tmp_path / "a_directory"
    target.mkdir()
    proc = run_cli("export", "--out", target, db=db, expect=1)
    assert proc.stderr.startswith("error:") and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_the_cli_process_refuses_a_wrong_encoding_in_one_line_and_exit_2(tmp_path: Path, db: Path) -> None:
    # The real interpreter: what reaches the terminal when nothing catches the error (once a
    # LookupError's traceback). Under argparse's usage lines, one error line.
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps(answer("a1")) + "\n", encoding="utf-8")
    proc = run_process("import", "--encoding", "rot13", src, db=db)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    [line] = [text for text in proc.stderr.splitlines() if "error:" in text]
    assert "'rot13' is not a text encoding" in line
    assert answers_in(db) == 0


@pytest.mark.slow
def test_the_cli_process_exits_1_on_a_missing_database_and_0_on_an_import(tmp_path: Path) -> None:
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps(answer("a1")) + "\n", encoding="utf-8")
    typo = tmp_path / "calibraton.db"
    assert run_process("stats", db=typo).returncode == 1 and not typo.exists()
    assert run_process("import", src, db=typo).returncode == 0
    assert answers_in(typo) == 1


def labels_in(db: Path) -> int:
    with store.session(db) as conn:
        return int(conn.execute("SELECT count(*) FROM label_events").fetchone()[0])


def test_a_nul_in_a_label_note_is_refused_with_file_line_field(
    run_cli: RunCli, tmp_path: Path, db: Path
) -> None:
    """PostgreSQL's text holds no NUL: SQLite would store it, and `migrate-db` would then fail."""
    _labels_db(run_cli, tmp_path, db)
    src = tmp_path / "labels.csv"
    src.write_text(
        "answer_id,claim_id,verdict,reviewer,note\na1,c1,SUPPORTED,vera,a\x00b\n", encoding="utf-8"
    )
    proc = run_cli("import-labels", src, db=db, expect=1)
    assert "labels.csv:2: note: contains a NUL character (U+0000) at character 2" in proc.stderr
    assert "\x00" not in proc.stderr and labels_in(db) == 0


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda rec: rec["events"][0].update(note="a\x00b"), "events.0.note: contains a NUL character"),
        (lambda rec: rec["events"][0].update(reviewer="ve\x00ra"), "events.0.reviewer: contains a NUL"),
        (lambda rec: rec["metadata"].update({"k\x00": 1}), "metadata.k<U+0000>: the key contains a NUL"),
    ],
)
def test_a_nul_anywhere_in_an_exported_line_is_refused_with_its_line(
    run_cli: RunCli, tmp_path: Path, db: Path, edit: Any, says: str
) -> None:
    _labels_db(run_cli, tmp_path, db)
    src = tmp_path / "labels.csv"
    src.write_text("answer_id,claim_id,verdict,reviewer,note\na1,c1,SUPPORTED,vera,fine\n", encoding="utf-8")
    run_cli("import-labels", src, db=db, expect=0)
    out = tmp_path / "export.jsonl"
    run_cli("export", "--format", "jsonl", "--out", out, db=db, expect=0)
    rec = json.loads(out.read_text(encoding="utf-8"))
    edit(rec)
    out.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    other = tmp_path / "other.db"
    proc = run_cli("import-labels", out, db=other, expect=1)
    assert f"export.jsonl:1: {says}" in proc.stderr, proc.stderr
    assert not other.exists() or labels_in(other) == 0
