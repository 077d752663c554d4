from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from calibration import importing, reading, store
from calibration.cli import main
from calibration.errors import InputError
from calibration.importing import import_answers, import_labels
from calibration.models import Verdict, parse_mapping
from calibration.store import Database

from .conftest import ROOT, WICE

TABLES = ("answers", "chunks", "claims", "judge_runs", "judge_verdicts", "label_events", "human_labels")


def snapshot(db: Database) -> dict[str, list[tuple]]:
    return {t: db.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES}


def record(i: int = 1, **over: object) -> dict:
    rec = {
        "id": f"a{i}",
        "question": "Кто согласует скидку 8%?",
        "answer": "Скидку согласует финансовый директор. Срок 10 дней.",
        "chunks": [
            {"id": "S1", "text": "Скидки свыше 5% согласует финансовый директор.", "source": "policy.md"},
            {"id": "S2", "text": "Срок поставки 10 дней."},
        ],
        "claims": [
            {
                "claim": "Скидку согласует финансовый директор.",
                "verdict": "SUPPORTED",
                "evidence": ["S1"],
                "rationale": "S1 says so",
            },
            {"claim": "Срок 10 дней.", "verdict": "SUPPORTED"},
        ],
        "judge_model": "judge-x",
        "judge_prompt_version": "v1",
        "category": "policy",
    }
    rec.update(over)
    return rec


def write_jsonl(path: Path, records: list[dict | str], encoding: str = "utf-8") -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding=encoding)
    return path


# ---------------------------------------------------------------- happy paths


def test_import_writes_answers_claims_and_a_judge_run(fresh_db: Database, tmp_path: Path) -> None:
    rep = import_answers(fresh_db, write_jsonl(tmp_path / "a.jsonl", [record(1), record(2)]))
    assert (rep.answers_new, rep.claims_new, rep.verdicts_new) == (2, 4, 4)
    assert rep.runs == {"judge-x@v1"}
    claims = fresh_db.execute("SELECT answer_id, claim_id, position, text FROM claims ORDER BY id").fetchall()
    assert claims[0] == ("a1", "c1", 0, "Скидку согласует финансовый директор.")
    assert claims[1][:3] == ("a1", "c2", 1)
    ev, rationale = fresh_db.execute(
        "SELECT evidence, rationale FROM judge_verdicts ORDER BY claim_pk LIMIT 1"
    ).fetchone()
    assert json.loads(ev) == ["S1"] and rationale == "S1 says so"


def test_json_array_and_bare_string_chunks(fresh_db: Database, tmp_path: Path) -> None:
    rec = record(
        1,
        chunks=["first chunk", "second chunk"],
        claims=[{"text": "Срок 10 дней.", "verdict": "supported", "evidence": ["2"]}],
    )
    path = tmp_path / "a.json"
    path.write_text(json.dumps([rec, record(2)], ensure_ascii=False, indent=2), encoding="utf-8")
    rep = import_answers(fresh_db, path)
    assert rep.answers_new == 2
    chunks = fresh_db.execute(
        "SELECT chunk_id, text FROM chunks WHERE answer_id = 'a1' ORDER BY position"
    ).fetchall()
    assert chunks == [("1", "first chunk"), ("2", "second chunk")]


def test_json_array_streams_across_buffer_boundaries(
    fresh_db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reading, "_READ_SIZE", 7)  # every record straddles several reads
    path = tmp_path / "a.json"
    path.write_text(
        json.dumps([record(i) for i in range(1, 6)], ensure_ascii=False, indent=1), encoding="utf-8"
    )
    assert import_answers(fresh_db, path).answers_new == 5


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}\n\n{"a": 2}\n', [(1, {"a": 1}), (3, {"a": 2})]),  # a blank line still counts
        ('\n[\n {"a": 1},\n\n {"a": 2}\n]', [(3, {"a": 1}), (5, {"a": 2})]),
        ('[{"a": 1}, 2, "x"]', [(1, {"a": 1}), (1, 2), (1, "x")]),
        ("", []),
    ],
)
def test_json_records_come_with_their_line(tmp_path: Path, text: str, expected: list) -> None:
    path = tmp_path / "r.json"
    path.write_text(text, encoding="utf-8")
    assert list(reading.iter_json_records(path)) == expected


def test_a_malformed_jsonl_line_is_reported_and_reading_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n{"a": \n{"a": 3}\n', encoding="utf-8")
    got = list(reading.iter_json_records(path))
    assert [line for line, _v in got] == [1, 2, 3]
    assert isinstance(got[1][1], reading.BadRecord) and got[1][1].message.startswith("malformed JSON")
    assert got[2][1] == {"a": 3}


def test_problems_keep_the_first_ones_and_count_the_rest(tmp_path: Path) -> None:
    problems = reading.Problems(tmp_path / "f.csv")
    assert not problems
    problems.raise_if_any()  # nothing to raise
    for line in range(1, reading.MAX_PROBLEMS + 4):
        problems.add(line, f"verdict: bad {line}")
    problems.add(None, "whole file")
    with pytest.raises(InputError) as info:
        problems.raise_if_any()
    where = tmp_path / "f.csv"
    assert len(info.value.lines()) == reading.MAX_PROBLEMS + 2
    assert info.value.lines()[0] == f"{where}:1: verdict: bad 1"
    assert info.value.lines()[-2:] == ["... and 4 more problems", f"{where}: nothing was imported"]


def test_malformed_json_array_names_its_line(fresh_db: Database, tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('[\n{"id": "a1", "claims": []},\n{"id": "a2",,}\n]', encoding="utf-8")
    with pytest.raises(InputError, match=r"a\.json:3: malformed JSON"):
        import_answers(fresh_db, path, judge_model="m", judge_prompt_version="v")
    assert fresh_db.execute("SELECT count(*) FROM answers").fetchone()[0] == 0


def test_alias_table_and_user_mapping_are_counted(fresh_db: Database, tmp_path: Path) -> None:
    claims = [
        {"claim": f"claim {i}", "verdict": v}
        for i, v in enumerate(["Supports", "not enough info", "REFUTES", "entailment", "partially_supported"])
    ]
    path = write_jsonl(tmp_path / "a.jsonl", [record(1, claims=claims, answer="x")])
    with pytest.raises(InputError, match="partially_supported"):
        import_answers(fresh_db, path)
    rep = import_answers(fresh_db, path, mapping=parse_mapping(["partially_supported=UNSUPPORTED"]))
    got = [v for (v,) in fresh_db.execute("SELECT verdict FROM judge_verdicts ORDER BY claim_pk")]
    assert got == ["SUPPORTED", "UNSUPPORTED", "CONTRADICTED", "SUPPORTED", "UNSUPPORTED"]
    assert rep.mappings[("partiallysupported", "UNSUPPORTED")] == 1
    assert rep.mappings[("notenoughinfo", "UNSUPPORTED")] == 1
    assert rep.mappings[("supports", "SUPPORTED")] == 1


def test_user_mapping_overrides_the_built_in_table() -> None:
    assert parse_mapping(["neutral=CONTRADICTED"]) == {"neutral": Verdict.CONTRADICTED}
    with pytest.raises(ValueError, match="SPELLING=VERDICT"):
        parse_mapping(["neutral"])
    with pytest.raises(ValueError, match="target must be"):
        parse_mapping(["neutral=MAYBE"])


def test_reimport_is_a_no_op(fresh_db: Database, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", [record(1), record(2)])
    import_answers(fresh_db, path)
    before = snapshot(fresh_db)
    rep = import_answers(fresh_db, path)
    assert (rep.answers_new, rep.claims_new, rep.verdicts_new) == (0, 0, 0)
    assert rep.answers_existing == 2 and rep.verdicts_existing == 4
    assert snapshot(fresh_db) == before


def test_second_judge_run_shares_claims_matched_by_text(fresh_db: Database, tmp_path: Path) -> None:
    import_answers(fresh_db, write_jsonl(tmp_path / "a.jsonl", [record(1)]))
    second = record(
        1,
        judge_prompt_version="v2",
        claims=[
            {"claim": "Срок 10 дней.", "verdict": "UNSUPPORTED"},
            {"claim": "A claim only the new prompt split out.", "verdict": "SUPPORTED"},
        ],
    )
    rep = import_answers(fresh_db, write_jsonl(tmp_path / "b.jsonl", [second]))
    assert rep.claims_new == 1 and rep.verdicts_new == 2
    rows = fresh_db.execute(
        """SELECT c.claim_id, r.prompt_version, v.verdict FROM judge_verdicts v
           JOIN claims c ON c.id = v.claim_pk JOIN judge_runs r ON r.id = v.run_id
           ORDER BY c.claim_id, r.prompt_version"""
    ).fetchall()
    assert rows == [
        ("c1", "v1", "SUPPORTED"),
        ("c2", "v1", "SUPPORTED"),
        ("c2", "v2", "UNSUPPORTED"),
        ("c3", "v2", "SUPPORTED"),
    ]


def test_changed_text_is_refused_and_nothing_written(fresh_db: Database, tmp_path: Path) -> None:
    import_answers(fresh_db, write_jsonl(tmp_path / "a.jsonl", [record(1)]))
    before = snapshot(fresh_db)
    changed = write_jsonl(tmp_path / "b.jsonl", [record(2), record(1, answer="Другой текст.")])
    with pytest.raises(InputError, match=r"b\.jsonl:2: answer 'a1' is already in the database"):
        import_answers(fresh_db, changed)
    assert snapshot(fresh_db) == before


def test_changed_verdict_in_the_same_run_is_refused(fresh_db: Database, tmp_path: Path) -> None:
    import_answers(fresh_db, write_jsonl(tmp_path / "a.jsonl", [record(1)]))
    claims = [{"claim": "Срок 10 дней.", "verdict": "CONTRADICTED"}]
    with pytest.raises(InputError, match="already gave claim 'c2' the verdict SUPPORTED"):
        import_answers(fresh_db, write_jsonl(tmp_path / "b.jsonl", [record(1, claims=claims)]))


def test_utf8_bom_is_accepted(fresh_db: Database, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bom.jsonl", [record(1)], encoding="utf-8-sig")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    import_answers(fresh_db, path)
    q = fresh_db.execute("SELECT question FROM answers").fetchone()[0]
    assert q == "Кто согласует скидку 8%?"


def test_other_encodings_need_encoding_flag(fresh_db: Database, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "cp.jsonl", [record(1)], encoding="cp1251")
    with pytest.raises(
        InputError,
        match=r"cp\.jsonl:1: cannot decode bytes as UTF-8.*give its encoding with "
        r"encoding=",
    ):
        import_answers(fresh_db, path)
    assert fresh_db.execute("SELECT count(*) FROM answers").fetchone()[0] == 0
    import_answers(fresh_db, path, encoding="cp1251")
    assert fresh_db.execute("SELECT question FROM answers").fetchone()[0].startswith("Кто")


# ---------------------------------------------------------------- bad input, one by one

BAD_INPUTS = [
    pytest.param('{"id": "a9", "question": "unterminated', "malformed JSON", id="malformed-json"),
    pytest.param(record(9, id=None), "id: Input should be a valid string", id="missing-id"),
    pytest.param(record(1), "id: duplicate id 'a1' in the file", id="duplicate-id"),
    pytest.param(
        record(9, claims=[{"claim": "x", "verdict": "SUPPORTED", "evidence": ["S7"]}]),
        "claims.0.evidence: 'S7' names no chunk of this answer",
        id="unknown-evidence",
    ),
    pytest.param(
        record(9, claims=[{"claim": "   ", "verdict": "SUPPORTED"}]),
        "claims.0.text: claim has no text",
        id="blank-claim",
    ),
    pytest.param(
        record(9, claims=[{"verdict": "SUPPORTED"}]),
        "claims.0.claim: missing: a claim needs 'claim' or 'text'",
        id="claim-without-text",
    ),
    pytest.param(
        record(9, claims=[{"claim": "x", "verdict": "maybe"}]),
        "claims.0.verdict: unknown verdict 'maybe'",
        id="unknown-verdict",
    ),
    pytest.param(record(9, judge_model=None), "judge_model: missing", id="missing-judge-model"),
    pytest.param(
        record(9, chunks="not a list"), "chunks: Input should be a valid list", id="chunks-not-a-list"
    ),
    pytest.param("[1, 2]", "each record must be a JSON object", id="not-an-object"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_INPUTS)
def test_bad_input_names_file_line_field_and_writes_nothing(
    fresh_db: Database, tmp_path: Path, bad: dict | str, message: str
) -> None:
    import_answers(fresh_db, write_jsonl(tmp_path / "ok.jsonl", [record(5)]))
    before = snapshot(fresh_db)
    path = write_jsonl(tmp_path / "bad.jsonl", [record(1), record(2), bad])
    with pytest.raises(InputError) as info:
        import_answers(fresh_db, path)
    text = str(info.value)
    assert f"bad.jsonl:3: {message}" in text, text
    assert "nothing was imported" in text
    assert snapshot(fresh_db) == before


def test_many_problems_are_reported_together(fresh_db: Database, tmp_path: Path) -> None:
    bad = [record(i, claims=[{"claim": "x", "verdict": "??"}]) for i in range(30)]
    with pytest.raises(InputError) as info:
        import_answers(fresh_db, write_jsonl(tmp_path / "bad.jsonl", bad))
    assert len(info.value.lines()) == importing.MAX_PROBLEMS + 2
    assert "and 10 more problems" in str(info.value)


# ---------------------------------------------------------------- labels


def test_import_labels_and_reimport_is_unchanged(wice_db: Database) -> None:
    assert wice_db.execute("SELECT count(*) FROM human_labels").fetchone()[0] == 100
    rep = import_labels(wice_db, WICE / "wice_human_labels.csv")
    assert (rep.new, rep.unchanged) == (0, 100)
    assert wice_db.execute("SELECT count(*) FROM label_events").fetchone()[0] == 100


def test_import_labels_errors_write_nothing(wice_db: Database, tmp_path: Path) -> None:
    before = snapshot(wice_db)
    path = tmp_path / "labels.csv"
    path.write_text(
        "answer_id,claim_id,verdict\ntest00017,test00017-c1,UNSUPPORTED\ntest00017,nope,SUPPORTED\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError, match=r"labels\.csv:1: missing column\(s\): reviewer"):
        import_labels(wice_db, path)
    with pytest.raises(InputError, match=r"labels\.csv:3: claim_id: no claim 'nope'"):
        import_labels(wice_db, path, reviewer="ann")
    assert snapshot(wice_db) == before


def test_import_labels_with_reviewer_flag_note_and_evidence(demo_db: Database, tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text(
        '\ufeffanswer_id,claim_id,verdict,note,evidence\nQ2,c2,contradiction,"=1+1, not a formula",S2\n',
        encoding="utf-8",
    )
    rep = import_labels(demo_db, path, reviewer="olga")
    assert rep.new == 1
    state = store.label_state(demo_db, store.claim_pk(demo_db, "Q2", "c2"), "olga")
    assert state is not None
    assert (state.final_verdict, state.note, state.evidence) == (
        "CONTRADICTED",
        "=1+1, not a formula",
        ["S2"],
    )


# ---------------------------------------------------------------- WiCE and the CLI


def test_wice_imports_as_two_runs_over_the_same_claims(wice_db: Database) -> None:
    runs = store.judge_runs(wice_db)
    assert [r.name for r in runs] == ["gpt-4-0613@wice-gpt4", "gpt-3.5-turbo-0613@wice-gpt35"]
    per_run = wice_db.execute(
        "SELECT run_id, count(*), count(DISTINCT claim_pk) FROM judge_verdicts GROUP BY run_id"
    ).fetchall()
    assert [(n, d) for _, n, d in per_run] == [(100, 100), (100, 100)]
    shared = wice_db.execute(
        """SELECT count(*) FROM judge_verdicts a JOIN judge_verdicts b
           ON a.claim_pk = b.claim_pk AND a.run_id < b.run_id"""
    ).fetchone()[0]
    assert shared == 100
    summary = store.info(wice_db)
    gpt4 = summary["runs"][0]
    assert gpt4.verdicts == {"SUPPORTED": 37, "CONTRADICTED": 0, "UNSUPPORTED": 63}
    assert gpt4.labeled_claims == 100


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "cli.db")
    good = write_jsonl(tmp_path / "a.jsonl", [record(1)])
    bad = write_jsonl(tmp_path / "b.jsonl", [record(2, claims=[{"claim": "x", "verdict": "??"}])])
    assert main(["--db", db, "import", str(good)]) == 0
    assert "answers: 1 new" in capsys.readouterr().out
    assert main(["--db", db, "import", str(bad)]) == 1
    assert "b.jsonl:1: claims.0.verdict: unknown verdict '??'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["--db", db, "import"])
    assert exc.value.code == 2
    assert main(["--db", db, "info"]) == 0
    assert "judge-x@v1: 1 answers, 2 claims" in capsys.readouterr().out


@pytest.mark.slow
def test_module_entry_point_and_env_db(tmp_path: Path) -> None:
    env_db = tmp_path / "env.db"
    proc = subprocess.run(
        [sys.executable, "-m", "calibration", "import", str(WICE / "wice_judged_gpt4.jsonl")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"CALIBRATION_DB": str(env_db), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    with store.session(env_db) as db:
        assert db.execute("SELECT count(*) FROM answers").fetchone()[0] == 100


def test_an_empty_file_is_an_error_not_a_silent_success(fresh_db: Database, tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"empty\.jsonl: no judged answers in the file"):
        import_answers(fresh_db, path)


def test_labels_for_an_unknown_answer_name_the_answer(demo_db: Database, tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("answer_id,claim_id,verdict\nNOPE,c1,SUPPORTED\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"labels\.csv:2: claim_id: no answer 'NOPE' in the database"):
        import_labels(demo_db, path, reviewer="ann")


@pytest.mark.parametrize("bad", [["--map", "foo"], ["--map", "foo=BAR"], ["--encoding", "klingon"]])
def test_bad_options_are_usage_errors(tmp_path: Path, bad: list[str]) -> None:
    good = write_jsonl(tmp_path / "a.jsonl", [record(1)])
    with pytest.raises(SystemExit) as exc:
        main(["--db", str(tmp_path / "x.db"), "import", str(good), *bad])
    assert exc.value.code == 2


def test_read_commands_never_create_a_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere" / "x.db"
    for command in (["info"], ["stats"], ["cycle", "list"]):
        assert main(["--db", str(missing), *command]) == 1
        assert "no database at" in capsys.readouterr().err
    assert not missing.parent.exists()
