"""The Python API: the manual's example runs; imports validate and are all or nothing like the CLI."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import calibration
from calibration import api, store
from calibration.cli import main
from calibration.errors import InputError, StorageError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "api_example.py"
ADAPTERS = Path(__file__).resolve().parent / "data" / "adapters"
WICE = ROOT / "data" / "wice"


def _answer(aid: str, verdicts: list[str]) -> dict[str, Any]:
    return {
        "id": aid,
        "question": f"Question {aid}?",
        "answer": f"Answer {aid}.",
        "chunks": [{"id": "S1", "text": "Some context."}],
        "claims": [{"text": f"Claim {i} of {aid}.", "verdict": v} for i, v in enumerate(verdicts, 1)],
    }


def _count(url: str | Path, table: str) -> int:
    with store.session(url) as db:
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def test_calibration_connect_is_the_api_and_store_connect_is_unchanged() -> None:
    assert calibration.connect is api.connect
    assert calibration.store.connect is store.connection.connect


def test_the_manuals_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    code = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert len(code) == 5
    # The module docstring carries the same five lines, indented as a literal block.
    assert "\n".join("    " + line for line in code) in (api.__doc__ or "")
    answers = [_answer("q1", ["SUPPORTED", "CONTRADICTED"]), _answer("q2", ["UNSUPPORTED"])]
    labels = [
        {"answer_id": "q1", "claim_id": "c1", "verdict": "SUPPORTED", "reviewer": "ana"},
        {"answer_id": "q1", "claim_id": "c2", "verdict": "SUPPORTED", "reviewer": "ana"},
        {"answer_id": "q2", "claim_id": "c1", "verdict": "UNSUPPORTED", "reviewer": "ana"},
    ]
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(text, str(EXAMPLE), "exec"), {"answers": answers, "labels": labels})
    # two of the three labeled claims agree with the judge
    assert out.getvalue() == f"agreement: {2 / 3}\n"
    assert _count(tmp_path / "calibration.db", "claims") == 3
    assert _count(tmp_path / "calibration.db", "human_labels") == 3


def test_stats_equals_cli_stats_json(db_url: str | Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = db_url
    with calibration.connect(db) as cal:
        cal.import_answers(WICE / "wice_judged_gpt4.jsonl")
        cal.import_labels(WICE / "wice_human_labels.csv")
        got = cal.stats(bootstrap=200)
    assert main(["--db", str(db), "stats", "--json", "--bootstrap", "200"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(got))
    assert got["n_claims"] == 100


def test_bad_records_name_positions_and_write_nothing(db_url: str | Path) -> None:
    good = _answer("ok", ["SUPPORTED"])
    bad_verdict = _answer("b1", ["MAYBE"])
    no_id = {k: v for k, v in _answer("b2", ["SUPPORTED"]).items() if k != "id"}
    with calibration.connect(db_url) as cal, pytest.raises(InputError) as err:
        cal.import_answers([good, bad_verdict, no_id], judge_model="m", judge_prompt_version="v")
    problems = err.value.lines()
    assert problems[0].startswith("<records>:2: claims.0.verdict:")
    assert problems[1].startswith("<records>:3: id:")
    assert problems[-1] == "<records>: nothing was imported"
    assert _count(db_url, "answers") == 0


def test_missing_judge_model_is_reported_like_the_cli(tmp_path: Path) -> None:
    with calibration.connect(tmp_path / "a.db") as cal, pytest.raises(InputError) as err:
        cal.import_answers([_answer("q", ["SUPPORTED"])], judge_prompt_version="v")
    assert "<records>:1: judge_model: missing" in str(err.value)


def test_dry_run_reports_and_writes_nothing(db_url: str | Path) -> None:
    with calibration.connect(db_url) as cal:
        rep = cal.import_answers(
            [_answer("q", ["SUPPORTED", "yes"])],
            judge_model="m",
            judge_prompt_version="v",
            dry_run=True,
            mapping={"yes": "SUPPORTED"},
        )
        assert (rep.answers_new, rep.claims_new, rep.verdicts_new) == (1, 2, 2)
        assert dict(rep.mappings) == {("yes", "SUPPORTED"): 1}
    assert _count(db_url, "answers") == 0


def test_import_from_adapter_file_and_dataframe(db_url: str | Path) -> None:
    with calibration.connect(db_url) as cal:
        rep = cal.import_answers(
            ADAPTERS / "deepeval_latest_test_run.json", from_="deepeval", judge_prompt_version="v1"
        )
        assert rep.verdicts_new == 4
        frame = pd.DataFrame(
            {
                "qid": ["x", "x"],
                "q": ["Q?", None],
                "resp": ["A.", None],
                "statement": ["one", "two"],
                "label": ["SUPPORTED", "UNSUPPORTED"],
            }
        )
        rep = cal.import_answers(
            frame,
            columns="answer_id=qid,question=q,answer=resp,claim=statement,verdict=label",
            judge_model="j",
            judge_prompt_version="v1",
        )
        assert (rep.answers_new, rep.claims_new) == (1, 2)
        with pytest.raises(InputError, match="id_key"):
            cal.import_answers(ADAPTERS / "ragas_traces.json", from_="ragas", id_key="x")
    assert _count(db_url, "answers") == 3


def test_label_rows_name_positions_even_after_multiline_notes(db_url: str | Path) -> None:
    with calibration.connect(db_url) as cal:
        cal.import_answers(
            [_answer("q", ["SUPPORTED", "SUPPORTED"])], judge_model="m", judge_prompt_version="v"
        )
        rows = [
            {
                "answer_id": "q",
                "claim_id": "c1",
                "verdict": "SUPPORTED",
                "reviewer": "ana",
                "note": "line one\nline two\nline three",
            },
            {"answer_id": "q", "claim_id": "c9", "verdict": "SUPPORTED", "reviewer": "ana"},
            {"answer_id": "q", "claim_id": "c2", "verdict": "PERHAPS", "reviewer": "ana", "evidence": ["S1"]},
        ]
        with pytest.raises(InputError) as err:
            cal.import_labels(rows)
        assert err.value.lines()[0].startswith("<rows>:2: claim_id:")
        assert err.value.lines()[1].startswith("<rows>:3: verdict:")
        assert err.value.lines()[-1] == "<rows>: nothing was imported"
        rep = cal.import_labels([rows[0], {**rows[2], "verdict": "SUPPORTED"}])
        assert rep.new == 2
        with pytest.raises(InputError, match="unknown field"):
            cal.import_labels([{"answer_id": "q", "claim": "c1", "verdict": "S", "reviewer": "a"}])


def test_export_and_context_manager_closes(db_url: str | Path, tmp_path: Path) -> None:
    cal = calibration.connect(db_url)
    with cal:
        cal.import_answers([_answer("q", ["SUPPORTED"])], judge_model="m", judge_prompt_version="v")
        cal.import_labels([{"answer_id": "q", "claim_id": "c1", "verdict": "SUPPORTED", "reviewer": "ana"}])
        rep = cal.export(tmp_path / "g.jsonl", format="golden")
    assert rep.rows == 1
    item = json.loads((tmp_path / "g.jsonl").read_text(encoding="utf-8"))
    assert item["reference_answer"] == "Claim 1 of q."
    # Both engines refuse a statement on a closed connection in the same words.
    with pytest.raises(StorageError, match="connection was closed"):
        cal.db.execute("SELECT 1")


# ---------------------------------------------------------------- golden export: key_facts, reference edits


def test_golden_key_facts_and_a_leads_reference_answer(db_url: str | Path, tmp_path: Path) -> None:
    from calibration import export
    from calibration.errors import NotFoundError

    with calibration.connect(db_url) as cal:
        cal.import_answers(
            [_answer("q", ["SUPPORTED", "SUPPORTED", "SUPPORTED"])], judge_model="m", judge_prompt_version="v"
        )
        cal.import_labels(
            [
                {"answer_id": "q", "claim_id": c, "verdict": v, "reviewer": "ana"}
                for c, v in (("c1", "SUPPORTED"), ("c2", "CONTRADICTED"), ("c3", "SUPPORTED"))
            ]
        )
        (item,) = export.golden_items(cal.db)
        assert item["key_facts"] == ["Claim 1 of q.", "Claim 3 of q."]
        assert item["reference_answer"] == "Claim 1 of q. Claim 3 of q."
        export.set_reference_answer(cal.db, "q", "  First version.  ", edited_by="lead")
        edit = export.set_reference_answer(cal.db, "q", "The finance director approves it.", edited_by="boss")
        assert (edit.edited_by, edit.text) == ("boss", "The finance director approves it.")
        history = export.reference_history(cal.db, "q")
        assert [(e.text, e.edited_by) for e in history] == [
            ("First version.", "lead"),
            ("The finance director approves it.", "boss"),
        ]
        assert history[0].edited_at <= history[1].edited_at
        cal.export(tmp_path / "g.jsonl", format="golden")
        with pytest.raises(InputError, match="empty"):
            export.set_reference_answer(cal.db, "q", "   ", edited_by="lead")
        with pytest.raises(InputError, match=r"^reference answer: contains a NUL character"):
            export.set_reference_answer(cal.db, "q", "A\x00B", edited_by="lead")
        with pytest.raises(NotFoundError):
            export.set_reference_answer(cal.db, "nope", "text", edited_by="lead")
    written = json.loads((tmp_path / "g.jsonl").read_text(encoding="utf-8"))
    assert written["reference_answer"] == "The finance director approves it."
    assert written["key_facts"] == ["Claim 1 of q.", "Claim 3 of q."]
    assert list(written)[:4] == ["id", "question", "expected_source", "reference_answer"]


def test_golden_file_reads_with_seed_000_recall_at_k_as_documented(
    db_url: str | Path, tmp_path: Path
) -> None:
    # The recall@k loop of seed 000, with the one change export.py's docstring describes.
    with calibration.connect(db_url) as cal:
        cal.import_answers(
            [_answer("q1", ["SUPPORTED"]), _answer("q2", ["SUPPORTED"])],
            judge_model="m",
            judge_prompt_version="v",
        )
        cal.import_labels(
            [
                {
                    "answer_id": "q1",
                    "claim_id": "c1",
                    "verdict": "SUPPORTED",
                    "reviewer": "a",
                    "evidence": ["S1"],
                },
                {"answer_id": "q2", "claim_id": "c1", "verdict": "SUPPORTED", "reviewer": "a"},
            ]
        )
        cal.export(tmp_path / "golden.jsonl", format="golden")

    def search(question: str, top_k: int) -> list[str]:
        return ["S1", "S9"][:top_k] if question == "Question q1?" else ["S9"]

    total = hits = 0
    with open(tmp_path / "golden.jsonl", encoding="utf-8") as f:
        for line in f:
            item = json.loads(line)
            if not item["expected_chunk_ids"]:
                continue
            total += 1
            hits += any(c in search(item["question"], top_k=5) for c in item["expected_chunk_ids"])
    assert (hits, total) == (1, 1)
