from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from calibration import __version__, cycles, export, store
from calibration.cli import main
from calibration.cli.common import FLAGS
from calibration.errors import InputError, NotFoundError
from calibration.export import neutralise_cell
from calibration.importing import import_answers, import_labels
from calibration.store import Database
from calibration.vocab import LABELS, ClaimStatus

from .conftest import DEMO

DEMO_RUN = "demo-judge@grounding-v1"
NOTE = 'строка 1\nsecond "quoted" line, with a comma'


def pk(db: Database, answer: str, claim: str) -> int:
    return store.claim_pk(db, answer, claim)


@pytest.fixture
def rich_db(wice_db: Database) -> Database:
    """WiCE (two runs) plus the demo run with every kind of label, a dispute and an adjudication."""
    db = wice_db
    import_answers(db, DEMO)
    run = store.find_judge_run(db, DEMO_RUN).id
    cyc = cycles.create_cycle(db, name="demo-1", judge_run=DEMO_RUN, size=5, seed=3, force=True).id

    def lab(
        answer: str, claim: str, reviewer: str, kind: str, verdict: str | None = None, **kw: object
    ) -> None:
        store.record_label(
            db,
            claim=pk(db, answer, claim),
            reviewer=reviewer,
            kind=kind,
            verdict=verdict,
            cycle_id=cyc,
            judge_run_id=run,
            **kw,
        )  # type: ignore[arg-type]

    lab("Q1", "c1", "ann", "blind", "UNSUPPORTED")
    lab("Q1", "c1", "ann", "blind", "SUPPORTED", evidence=["S1"], note=NOTE)  # blind change
    lab("Q1", "c1", "ann", "keep")
    lab("Q1", "c2", "ann", "blind", "UNSUPPORTED")
    lab("Q1", "c2", "ann", "judge_right")  # a slip: the judge said SUPPORTED
    lab("Q2", "c1", "ann", "skip")
    lab("Q2", "c1", "bob", "blind", "CONTRADICTED", evidence=["S2"], note="=SUM(A1:A9)")
    lab("Q2", "c2", "ann", "blind", "SUPPORTED", evidence=["S2"])
    lab("Q2", "c2", "bob", "blind", "UNSUPPORTED")
    store.adjudicate(db, claim=pk(db, "Q2", "c2"), adjudicator="lead", verdict="SUPPORTED", note="ок, S2")
    lab("Q3", "c1", "ann", "unclear", note="не ясно")
    lab("Q4", "c1", "ann", "blind", "CONTRADICTED", evidence=["S2", "S1"])
    lab("Q4", "c1", "bob", "blind", "CONTRADICTED")
    lab("Q4", "c2", "ann", "blind", "UNSUPPORTED")
    lab("Q4", "c2", "bob", "blind", "SUPPORTED")
    return db


def labels_snapshot(db: Database) -> dict[str, list[tuple]]:
    """Everything that must survive a round trip, keyed by natural keys, never surrogate ids."""
    return {
        "answers": db.execute(
            "SELECT id, question, answer, category, metadata, content_hash, holdout FROM answers ORDER BY id"
        ).fetchall(),
        "chunks": db.execute("SELECT * FROM chunks ORDER BY answer_id, position").fetchall(),
        "claims": db.execute(
            "SELECT answer_id, claim_id, position, text FROM claims ORDER BY answer_id, claim_id"
        ).fetchall(),
        "human_labels": db.execute(
            """SELECT c.answer_id, c.claim_id, h.reviewer, h.status, h.blind_verdict, h.final_verdict,
                      h.reconciled, h.slip, h.evidence, h.note, cy.name, h.blind_at, h.final_at, h.updated_at
               FROM human_labels h JOIN claims c ON c.id = h.claim_pk
               LEFT JOIN cycles cy ON cy.id = h.cycle_id
               ORDER BY c.answer_id, c.claim_id, h.reviewer"""
        ).fetchall(),
        # Ordered by claim, then by event id: the per-claim history order label_history shows.
        "label_events": db.execute(
            """SELECT c.answer_id, c.claim_id, e.reviewer, e.kind, e.verdict, e.evidence, e.note,
                      cy.name, r.judge_model || '@' || r.prompt_version, e.created_at
               FROM label_events e JOIN claims c ON c.id = e.claim_pk
               LEFT JOIN cycles cy ON cy.id = e.cycle_id LEFT JOIN judge_runs r ON r.id = e.judge_run_id
               ORDER BY c.answer_id, c.claim_id, e.id"""
        ).fetchall(),
        "adjudications": db.execute(
            """SELECT c.answer_id, c.claim_id, d.verdict, d.adjudicator, d.note, d.created_at
               FROM adjudications d JOIN claims c ON c.id = d.claim_pk ORDER BY 1, 2"""
        ).fetchall(),
        "judge_verdicts": db.execute(
            """SELECT c.answer_id, c.claim_id, r.judge_model, r.prompt_version, v.verdict, v.raw_verdict,
                      v.rationale, v.evidence
               FROM judge_verdicts v JOIN claims c ON c.id = v.claim_pk JOIN judge_runs r ON r.id = v.run_id
               ORDER BY 1, 2, 3, 4"""
        ).fetchall(),
    }


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ---------------------------------------------------------------- lossless JSONL and round trip


def test_round_trip_into_an_empty_database_is_identical(
    rich_db: Database, db_url: str | Path, tmp_path: Path
) -> None:
    out = tmp_path / "export.jsonl"
    assert main(["--db", str(db_url), "export", "--out", str(out)]) == 0
    target = tmp_path / "restored.db"
    assert main(["--db", str(target), "import", str(out)]) == 0
    with store.session(target) as db:
        # Cycles are not part of a label export; a cycle of the same name in the target is linked.
        cycles.create_cycle(db, name="demo-1", judge_run=DEMO_RUN, size=5, seed=3, force=True)
    assert main(["--db", str(target), "import-labels", str(out)]) == 0
    with store.session(target) as db:
        restored = labels_snapshot(db)
        again = tmp_path / "again.jsonl"
        export.export(db, again)
    original = labels_snapshot(rich_db)
    for table, rows in original.items():
        assert restored[table] == rows, table
    assert original["label_events"] and original["adjudications"]
    # The exported file itself survives too: a re-export is the same line for line.
    assert again.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")


def test_restoring_twice_changes_nothing_and_a_different_history_is_refused(
    rich_db: Database, tmp_path: Path
) -> None:
    out = tmp_path / "export.jsonl"
    export.export(rich_db, out)
    with store.session(tmp_path / "t.db") as db:
        import_answers(db, out)
        first = import_labels(db, out)
        assert first.events_new == 115 and first.adjudications_new == 1
        before = labels_snapshot(db)
        second = import_labels(db, out)
        rep = import_answers(db, out)
        assert (second.new, second.events_new, second.adjudications_new) == (0, 0, 0)
        assert rep.answers_new == rep.verdicts_new == 0
        assert labels_snapshot(db) == before
    with store.session(tmp_path / "other.db") as db:
        import_answers(db, out)
        store.record_label(db, claim=pk(db, "Q1", "c1"), reviewer="zed", kind="blind", verdict="SUPPORTED")
        with pytest.raises(InputError, match="different label history"):
            import_labels(db, out)
        assert db.execute("SELECT count(*) FROM label_events").fetchone()[0] == 1  # nothing half-written


def test_labels_before_answers_are_refused_with_a_hint(rich_db: Database, tmp_path: Path) -> None:
    out = tmp_path / "export.jsonl"
    export.export(rich_db, out)
    with store.session(tmp_path / "t.db") as db, pytest.raises(InputError, match="calibration import"):
        import_labels(db, out)


def test_jsonl_line_carries_everything_about_a_claim(rich_db: Database, tmp_path: Path) -> None:
    out = tmp_path / "e.jsonl"
    export.export(rich_db, out)
    recs = {(r["answer_id"], r["claim_id"]): r for r in read_jsonl(out)}
    assert len(recs) == 109
    q1c1 = recs[("Q1", "c1")]
    assert q1c1["tool_version"] == __version__
    assert q1c1["question"] == "Какой стандартный срок и от какого события он считается?"
    assert q1c1["category"] == "single-fact"
    assert [c["id"] for c in q1c1["chunks"]] == ["S1", "S3", "S2"]
    assert q1c1["final_verdict"] == "SUPPORTED" and q1c1["final_status"] == "unanimous"
    (ann,) = q1c1["reviewers"]
    assert (ann["blind_verdict"], ann["final_verdict"], ann["reconciled"], ann["slip"]) == (
        "SUPPORTED",
        "SUPPORTED",
        "keep",
        False,
    )
    assert ann["note"] == NOTE and ann["evidence"] == ["S1"] and ann["cycle"] == "demo-1"
    assert ann["blind_at"] < ann["final_at"]
    assert [(e["kind"], e["verdict"]) for e in q1c1["events"]] == [
        ("blind", "UNSUPPORTED"),
        ("blind", "SUPPORTED"),
        ("keep", "SUPPORTED"),
    ]
    assert q1c1["judge"][0]["run"] == DEMO_RUN and q1c1["judge"][0]["agrees"] is True
    assert q1c1["judge"][0]["rationale"] and q1c1["cycles"] == ["demo-1"]
    slip = recs[("Q1", "c2")]["reviewers"][0]
    assert (slip["blind_verdict"], slip["final_verdict"], slip["reconciled"], slip["slip"]) == (
        "UNSUPPORTED",
        "SUPPORTED",
        "judge_right",
        True,
    )
    adjudicated = recs[("Q2", "c2")]
    assert adjudicated["final_status"] == "adjudicated"
    assert adjudicated["adjudication"]["adjudicator"] == "lead"
    assert recs[("Q4", "c2")]["final_status"] == "disputed" and recs[("Q4", "c2")]["final_verdict"] is None
    assert recs[("Q5", "c1")]["final_status"] == "unlabeled"
    assert recs[("Q3", "c1")]["reviewers"][0]["status"] == "unclear"
    wice = recs[("test00017", "test00017-c1")]
    assert [j["run"] for j in wice["judge"]] == ["gpt-4-0613@wice-gpt4", "gpt-3.5-turbo-0613@wice-gpt35"]
    assert all(j["agrees"] is not None for j in wice["judge"])


def test_records_are_streamed_in_batches_in_answer_and_claim_order(
    rich_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = [(r["answer_id"], r["claim_position"]) for r in export.iter_records(rich_db)]
    monkeypatch.setattr(export, "BATCH", 7)
    assert [(r["answer_id"], r["claim_position"]) for r in export.iter_records(rich_db)] == whole
    assert whole == sorted(whole)


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")

    def boom(fh: io.TextIOBase) -> None:
        fh.write("partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        export.atomic_write(target, boom)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_ordinary_files_are_not_taken_for_an_export(tmp_path: Path) -> None:
    assert not export.is_export_file(DEMO)
    (tmp_path / "a.json").write_text('[{"format": "judge-calibration-export"}]')
    assert not export.is_export_file(tmp_path / "a.json")
    (tmp_path / "l.csv").write_text("answer_id,claim_id,verdict\n")
    assert not export.is_export_file(tmp_path / "l.csv")


# ---------------------------------------------------------------- filters


def test_judge_run_filter_keeps_its_claims_and_only_its_verdicts(rich_db: Database, tmp_path: Path) -> None:
    out = tmp_path / "gpt4.jsonl"
    export.export(rich_db, out, judge_run="wice-gpt4")
    recs = read_jsonl(out)
    assert len(recs) == 100
    assert {j["run"] for r in recs for j in r["judge"]} == {"gpt-4-0613@wice-gpt4"}


def test_cycle_filter_keeps_the_cycles_claims(rich_db: Database, tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    export.export(rich_db, out, cycle="demo-1")
    recs = read_jsonl(out)
    assert {r["answer_id"] for r in recs} == {"Q1", "Q2", "Q3", "Q4", "Q5"}
    assert all(r["cycles"] == ["demo-1"] for r in recs)
    with pytest.raises(NotFoundError, match="demo-1"):
        export.export(rich_db, out, cycle="nope")


def test_only_final_drops_disputed_and_unlabeled_claims(
    rich_db: Database, db_url: str | Path, tmp_path: Path
) -> None:
    out = tmp_path / "f.jsonl"
    assert main(["--db", str(db_url), "export", "--out", str(out), "--cycle", "demo-1", "--only-final"]) == 0
    got = {(r["answer_id"], r["claim_id"]): r["final_status"] for r in read_jsonl(out)}
    assert got == {
        ("Q1", "c1"): "unanimous",
        ("Q1", "c2"): "unanimous",
        ("Q2", "c1"): "unanimous",
        ("Q2", "c2"): "adjudicated",
        ("Q4", "c1"): "unanimous",
    }


def test_final_verdict_and_status_are_the_reports_own(rich_db: Database) -> None:
    # The export reads the one final-label reader; `claim_table` (what stats and the dashboard
    # read) must give every claim of the run the same verdict and status.
    run = store.find_judge_run(rich_db, DEMO_RUN).id
    table = store.claim_table(rich_db, run)
    expected = {
        key: (None if h < 0 else LABELS[h], status.value)
        for key, h, status in zip(table.keys, table.human.tolist(), table.statuses(), strict=True)
    }
    got = {
        f"{r['answer_id']}/{r['claim_id']}": (r["final_verdict"], r["final_status"])
        for r in export.iter_records(rich_db, export.resolve_scope(rich_db, judge_run=DEMO_RUN))
    }
    assert got == expected
    # Every status occurs, so the comparison covers each branch of the rule.
    assert {status for _v, status in got.values()} == {s.value for s in ClaimStatus}


def test_unknown_cycle_names_the_known_ones(rich_db: Database) -> None:
    with pytest.raises(NotFoundError, match=r"no cycle named 'nope'; known cycles: demo-1"):
        export.resolve_scope(rich_db, cycle="nope")


# ---------------------------------------------------------------- golden set


def test_golden_set_has_the_seed_shape_and_only_supported_claims(rich_db: Database, tmp_path: Path) -> None:
    out = tmp_path / "golden.jsonl"
    rep = export.export(rich_db, out, fmt="golden", cycle="demo-1")
    items = {it["id"]: it for it in read_jsonl(out)}
    assert set(items) == {"Q1", "Q2"} and rep.skipped_answers == 3  # Q3-Q5 have no SUPPORTED claim
    for it in items.values():
        assert list(it)[:4] == ["id", "question", "expected_source", "reference_answer"]
        assert all(isinstance(it[k], str) for k in ("id", "question", "expected_source", "reference_answer"))
    claims = {(r["answer_id"], r["claim_id"]): r["claim"] for r in export.iter_records(rich_db)}
    assert items["Q1"]["reference_answer"] == f"{claims['Q1', 'c1']} {claims['Q1', 'c2']}"
    # Q2: c1 is CONTRADICTED and stays out; c2 counts through its adjudication.
    assert items["Q2"]["reference_answer"] == claims["Q2", "c2"]
    assert items["Q1"]["expected_source"] == "DEMO-CORPUS-01/S1"
    assert items["Q2"]["expected_chunk_ids"] == ["S2"]


def test_golden_source_falls_back_to_the_chunk_id(fresh_db: Database, tmp_path: Path) -> None:
    src = tmp_path / "a.jsonl"
    src.write_text(
        json.dumps(
            {
                "id": "a1",
                "question": "q?",
                "answer": "x. y.",
                "judge_model": "j",
                "judge_prompt_version": "v",
                "chunks": [{"id": "k1", "text": "x"}, {"id": "k2", "text": "y", "source": "doc.md"}],
                "claims": [
                    {"id": "c1", "claim": "x.", "verdict": "SUPPORTED"},
                    {"id": "c2", "claim": "y.", "verdict": "SUPPORTED"},
                ],
            }
        )
        + "\n"
    )
    import_answers(fresh_db, src)
    store.record_label(
        fresh_db,
        claim=pk(fresh_db, "a1", "c1"),
        reviewer="r",
        kind="blind",
        verdict="SUPPORTED",
        evidence=["k2", "k1"],
    )
    store.record_label(
        fresh_db, claim=pk(fresh_db, "a1", "c2"), reviewer="r", kind="blind", verdict="UNSUPPORTED"
    )
    (item,) = [export.golden_item(list(export.iter_records(fresh_db)))]
    assert item == {
        "id": "a1",
        "question": "q?",
        "expected_source": "k1; doc.md",
        "reference_answer": "x.",
        "key_facts": ["x."],
        "expected_chunk_ids": ["k1", "k2"],
        "expected_sources": ["k1", "doc.md"],
        "category": None,
    }


# ---------------------------------------------------------------- CSV


@pytest.mark.parametrize("prefix", ["=", "+", "-", "@", "\t", "\r"])
def test_each_dangerous_prefix_is_neutralised(prefix: str) -> None:
    assert neutralise_cell(f"{prefix}cmd|' /C calc'!A0") == f"'{prefix}cmd|' /C calc'!A0"


def test_safe_cells_are_left_alone() -> None:
    for cell in ("SUPPORTED", "", "Кто согласует?", "'already", "a =b", "100%"):
        assert neutralise_cell(cell) == cell


# A spreadsheet skips leading blanks and folds full-width signs, so these evaluate too.
@pytest.mark.parametrize(
    "cell", [" =not first", "\u00a0=1+1", "\ufeff=1+1", "\uff1dSUM(A1)", "\u3000+1", "\u2212 1"]
)
def test_a_formula_behind_blanks_bom_or_full_width_is_neutralised(cell: str) -> None:
    assert neutralise_cell(cell) == "'" + cell


def test_csv_has_a_bom_and_neutralises_every_imported_text(fresh_db: Database, tmp_path: Path) -> None:
    src = tmp_path / "evil.jsonl"
    src.write_text(
        json.dumps(
            {
                "id": "=1+1",
                "question": "@SUM(1)",
                "answer": "-2+3",
                "category": "+cat",
                "judge_model": "j",
                "judge_prompt_version": "v",
                "chunks": [{"id": "k1", "text": "t"}],
                "claims": [
                    {
                        "id": "c1",
                        "claim": '=HYPERLINK("http://x")',
                        "verdict": "SUPPORTED",
                        "rationale": "\tlooks fine",
                    }
                ],
            },
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    import_answers(fresh_db, src)
    store.record_label(
        fresh_db,
        claim=pk(fresh_db, "=1+1", "c1"),
        reviewer="r",
        kind="blind",
        verdict="SUPPORTED",
        note='\rзаметка, "в кавычках"\nвторая строка',
    )
    out = tmp_path / "out.csv"
    rep = export.export(fresh_db, out, fmt="csv")
    raw = out.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and rep.rows == 1
    header, row = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline="")))
    cells = dict(zip(header, row, strict=True))
    assert cells["answer_id"] == "'=1+1" and cells["question"] == "'@SUM(1)"
    assert cells["answer"] == "'-2+3" and cells["category"] == "'+cat"
    assert cells["claim"] == '\'=HYPERLINK("http://x")'
    assert cells["rationale j@v"] == "'\tlooks fine"
    assert cells["notes"] == 'r: \rзаметка, "в кавычках"\nвторая строка'  # starts with "r", so safe
    assert cells["final_verdict"] == "SUPPORTED" and cells["agrees j@v"] == "yes"
    for cell in [*header, *row]:
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))


def test_csv_one_row_per_claim_with_a_column_group_per_run(rich_db: Database, tmp_path: Path) -> None:
    out = tmp_path / "all.csv"
    export.export(rich_db, out, fmt="csv")
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8-sig"), newline="")))
    assert len(rows) == 109
    q1c2 = next(r for r in rows if (r["answer_id"], r["claim_id"]) == ("Q1", "c2"))
    assert q1c2["reviewer_labels"] == "ann: SUPPORTED (blind UNSUPPORTED, judge_right, slip)"
    assert q1c2[f"judge {DEMO_RUN}"] == "SUPPORTED" and q1c2["judge gpt-4-0613@wice-gpt4"] == ""
    q2c1 = next(r for r in rows if (r["answer_id"], r["claim_id"]) == ("Q2", "c1"))
    assert q2c1["notes"] == "bob: =SUM(A1:A9)" and q2c1["evidence"] == "S2"


def test_unknown_format_is_an_input_error_naming_the_option(rich_db: Database, tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        export.export(rich_db, tmp_path / "x", fmt="xml")
    assert err.value.lines(FLAGS) == [
        "unknown format 'xml'; --format takes one of jsonl, golden, csv, deepeval, ragas, langfuse"
    ]
    assert "--" not in str(err.value)


def test_in_memory_export_for_the_page_matches_the_file(rich_db: Database, tmp_path: Path) -> None:
    for fmt in export.FORMATS:
        out = tmp_path / f"e.{fmt}"
        export.export(rich_db, out, fmt=fmt, cycle="demo-1", only_final=True)
        assert export.export_bytes(rich_db, fmt=fmt, cycle="demo-1", only_final=True) == out.read_bytes()


# ---------------------------------------------------------------- QA pass


def test_an_unclear_mark_makes_the_final_status_needs_discussion(demo_db: Database, tmp_path: Path) -> None:
    db = demo_db
    store.record_label(db, claim=pk(db, "Q1", "c1"), reviewer="ann", kind="blind", verdict="SUPPORTED")
    store.record_label(db, claim=pk(db, "Q1", "c1"), reviewer="bob", kind="unclear", note="needs a look")
    recs = {(r["answer_id"], r["claim_id"]): r for r in export.iter_records(db)}
    q1c1 = recs[("Q1", "c1")]
    assert q1c1["final_status"] == export.NEEDS_DISCUSSION and q1c1["final_verdict"] is None
    assert all(j["agrees"] is None for j in q1c1["judge"])
    assert not any(
        r["answer_id"] == "Q1" and r["claim_id"] == "c1"
        for r in export.iter_records(db, export.resolve_scope(db, only_final=True))
    )
    store.adjudicate(db, claim=pk(db, "Q1", "c1"), adjudicator="lead", verdict="SUPPORTED")
    q1c1 = next(r for r in export.iter_records(db) if (r["answer_id"], r["claim_id"]) == ("Q1", "c1"))
    assert (q1c1["final_status"], q1c1["final_verdict"]) == ("adjudicated", "SUPPORTED")


def test_golden_export_warns_about_items_without_a_source(
    rich_db: Database, db_url: str | Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Q1 has evidence (S1); Q2's SUPPORTED claim comes through an adjudication with no evidence
    # chosen on that claim, but bob chose S2 on Q2/c1: add an answer whose reviewers chose none.
    store.record_label(
        rich_db, claim=pk(rich_db, "Q5", "c1"), reviewer="ann", kind="blind", verdict="SUPPORTED"
    )
    out = tmp_path / "golden.jsonl"
    assert (
        main(["--db", str(db_url), "export", "--out", str(out), "--format", "golden", "--cycle", "demo-1"])
        == 0
    )
    printed = capsys.readouterr().out
    items = read_jsonl(out)
    empty = [it for it in items if not it["expected_source"]]
    assert empty and len(items) == 3
    assert (
        f"warning: {len(empty)} of {len(items)} golden items have no expected_source: "
        "reviewers chose no evidence chunks"
    ) in printed
    counts = export.golden_counts(rich_db, cycle="demo-1")
    assert (counts.written, counts.no_source) == (len(items), len(empty))
    assert export.GoldenCounts(3, 0, 0).warning() is None
    assert export.GoldenCounts(1, 0, 1).warning() == (
        "1 of 1 golden item has no expected_source: reviewers chose no evidence chunks"
    )


@pytest.mark.parametrize(
    ("fmt", "run", "cycle", "name"),
    [
        ("jsonl", "judge-x@v1", None, "calibration-judge-x_v1-jsonl-2026-12-01.jsonl"),
        ("csv", "judge-x@v1", "week 12 / prompt v3", "calibration-week_12_prompt_v3-csv-2026-12-01.csv"),
        ("golden", "r", "../../etc", "calibration-etc-golden-2026-12-01.jsonl"),
        ("csv", "r", "ü日本", "calibration-export-csv-2026-12-01.csv"),
    ],
)
def test_export_file_names_carry_scope_and_day(fmt: str, run: str, cycle: str | None, name: str) -> None:
    assert export.file_name(fmt, judge_run=run, cycle=cycle, day="2026-12-01") == name
