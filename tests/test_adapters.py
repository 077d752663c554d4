"""Adapters: each tool's fixture imports with every claim's text and verdict; bad files write nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from calibration import adapters, store
from calibration.adapters import deepeval, refchecker
from calibration.cli.common import FLAGS
from calibration.errors import InputError, Problem, phrase
from calibration.importing import import_records
from calibration.models import Verdict
from calibration.store import Database

DATA = Path(__file__).resolve().parent / "data" / "adapters"
TABLE_COLUMNS = (
    "answer_id=qid,question=q,answer=resp,chunks=ctx,claim=statement,verdict=label,"
    "rationale=why,judge_model=model,judge_prompt_version=prompt"
)

S, C, U = "SUPPORTED", "CONTRADICTED", "UNSUPPORTED"


@pytest.fixture
def empty_db(fresh_db: Database) -> Database:
    """The database an adapter's records go into: empty, on each backend."""
    return fresh_db


def run(db: Database, name: str, path: Path, **options: Any) -> tuple[Any, adapters.AdapterResult]:
    result = adapters.read(name, path, **options)
    report = import_records(
        db,
        result.records,
        source=result.source,
        mapping=result.mapping,
        judge_model=result.judge_model,
        judge_prompt_version=result.judge_prompt_version,
    )
    return report, result


def claims_in(db: Database) -> list[tuple[str, str, str, str, str]]:
    return [
        tuple(r)
        for r in db.execute(
            "SELECT c.answer_id, c.claim_id, c.text, v.verdict, v.raw_verdict FROM claims c "
            "JOIN judge_verdicts v ON v.claim_pk = c.id ORDER BY c.answer_id, c.position"
        )
    ]


def counts(db: Database) -> dict[str, int]:
    return {
        t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in ("answers", "chunks", "claims", "judge_verdicts", "judge_runs")
    }


def judge_runs(db: Database) -> list[tuple[str, str]]:
    return [tuple(r) for r in db.execute("SELECT judge_model, prompt_version FROM judge_runs ORDER BY id")]


DEEPEVAL_CLAIMS = [
    ("test_case_0", "c1", "An 8% discount is above 5%.", S, "yes"),
    ("test_case_0", "c2", "The head of sales approves an 8% discount.", C, "no"),
    ("test_case_1", "c1", 'Акт подписывает "главный инженер" проекта.', S, "yes"),
    ("test_case_1", "c2", "Подпись ставится в C:\\docs.", U, "idk"),
]

GOOD = [
    # (adapter, file, options, judge run, claims)
    ("deepeval", "deepeval_latest_test_run.json", {}, ("gpt-4.1", "v1"), DEEPEVAL_CLAIMS),
    (
        "deepeval",
        "deepeval_results_20240115_103000",
        {},
        ("gpt-4o", "v1"),
        [*DEEPEVAL_CLAIMS, ("test_case_2", "c1", "Delivery takes 10 days.", S, "yes")],
    ),
    ("deepeval", "deepeval_v021.json", {}, ("gpt-4", "v1"), DEEPEVAL_CLAIMS),
    (
        "ragas",
        "ragas_traces.json",
        {"judge_model": "gpt-4o-mini"},
        ("gpt-4o-mini", "v1"),
        [
            ("ragas_traces:0", "c1", "The company was founded in 1998.", S, "1"),
            ("ragas_traces:0", "c2", "The company was founded in Oslo.", S, "1"),
            ("ragas_traces:0", "c3", "The company has 200 staff.", U, "0"),
            ("ragas_traces:1", "c1", "Гарантия действует 2 года.", S, "1"),
        ],
    ),
    (
        "refchecker",
        "refchecker_output.json",
        {"judge_model": "claude-3"},
        ("claude-3", "v1"),
        [
            ("q-77", "c1", "Отчёт написал И. Сидоров.", C, "Contradiction"),
            ("refchecker_output:0", "c1", "Blue Harbor sung by Lindqvist & Sons", S, "Entailment"),
            ("refchecker_output:0", "c2", "Blue Harbor released in 1969", C, "Contradiction"),
            ("refchecker_output:1", "c1", "Norvale capital Castrel", S, "Entailment"),
            ("refchecker_output:1", "c2", "Castrel population two million", U, "Neutral"),
            ("refchecker_output:1", "c3", "Castrel located on river Ume", S, "Entailment"),
        ],
    ),
    (
        "csv",
        "claims_table.csv",
        {"columns": TABLE_COLUMNS},
        ("judge-a", "v1"),
        [
            ("q1", "c1", "An 8% discount is above 5%.", S, "SUPPORTED"),
            ("q1", "c2", "The head of sales approves an 8% discount.", C, "contradicted"),
            ("q2", "c1", "Гарантия действует 2 года.", S, "supported"),
            ("q2", "c2", "Гарантию можно продлить.", U, "not enough info"),
        ],
    ),
    (
        "tsv",
        "claims_repeated.tsv",
        {"judge_model": "j"},
        ("j", "v1"),
        [
            ("a1", "c1", "It was founded in 1998.", S, "SUPPORTED"),
            ("a1", "c2", "It was founded in Oslo.", U, "UNSUPPORTED"),
            ("a2", "c1", "The company has about 200 staff.", C, "CONTRADICTED"),
        ],
    ),
]


@pytest.mark.parametrize(("name", "file", "options", "judge_run", "expected"), GOOD, ids=[g[1] for g in GOOD])
def test_fixture_imports_every_claim_with_its_verdict(
    empty_db: Database,
    name: str,
    file: str,
    options: dict[str, Any],
    judge_run: tuple[str, str],
    expected: list[tuple[str, ...]],
) -> None:
    report, _ = run(empty_db, name, DATA / file, judge_prompt_version="v1", **options)
    assert claims_in(empty_db) == sorted(expected, key=lambda r: (r[0], r[1]))
    assert judge_runs(empty_db) == [judge_run]
    assert report.claims_new == len(expected)


@pytest.mark.parametrize(("name", "file", "options", "judge_run", "expected"), GOOD, ids=[g[1] for g in GOOD])
def test_importing_the_same_file_again_changes_nothing(
    empty_db: Database, name: str, file: str, options: dict[str, Any], judge_run: Any, expected: Any
) -> None:
    run(empty_db, name, DATA / file, judge_prompt_version="v1", **options)
    before = counts(empty_db)
    report, _ = run(empty_db, name, DATA / file, judge_prompt_version="v1", **options)
    assert counts(empty_db) == before
    assert (report.claims_new, report.verdicts_existing) == (0, len(expected))


def test_deepeval_keeps_inputs_chunks_reasons_and_reports_its_mapping(empty_db: Database) -> None:
    report, result = run(
        empty_db, "deepeval", DATA / "deepeval_latest_test_run.json", judge_prompt_version="v1"
    )
    row = empty_db.execute(
        "SELECT question, answer, metadata FROM answers WHERE id = 'test_case_0'"
    ).fetchone()
    assert row[:2] == (
        "Who approves an 8% discount?",
        "An 8% discount is above 5%. The head of sales approves it.",
    )
    assert json.loads(row[2])["ticket"] == "T-0"
    chunks = [
        tuple(r)
        for r in empty_db.execute(
            "SELECT chunk_id, text FROM chunks WHERE answer_id = 'test_case_1' ORDER BY position"
        )
    ]
    assert chunks == [
        ("1", "Акт приёмки подписывает главный инженер проекта."),
        ("2", "Скан акта хранится в архиве."),
    ]
    reason = empty_db.execute(
        "SELECT rationale FROM judge_verdicts v JOIN claims c ON c.id = v.claim_pk "
        "WHERE c.answer_id = 'test_case_1' AND c.claim_id = 'c2'"
    ).fetchone()[0]
    assert reason == "Where the signature is made is not stated."
    assert result.mapping_lines(report.mappings) == [
        "deepeval yes → SUPPORTED: 2",
        "deepeval no → CONTRADICTED: 1",
        "deepeval idk → UNSUPPORTED: 1",
        "deepeval borderline → UNSUPPORTED: 0",
    ]


def _prettify(items: list[Any]) -> str:
    # DeepEval's list format, written out here from its description (not its code).
    if not items:
        return "[]"
    parts = [
        f'"{x}"' if isinstance(x, str) else json.dumps(x, indent=4).replace("\n", "\n    ") for x in items
    ]
    return "[\n    " + ",\n    ".join(parts) + "\n]"


@pytest.mark.parametrize(
    "claims",
    [
        [],
        ["one"],
        ['He said "no", then left.', "C:\\temp\\x", "Кириллица и 中文", "Claims:\n[ inside a claim"],
    ],
)
@pytest.mark.parametrize("sep", [" \n \n", "\n\n"])
def test_verbose_logs_give_back_the_claims_and_verdicts_they_were_built_from(
    claims: list[str], sep: str
) -> None:
    verdicts = [
        {"verdict": ("yes", "no", "idk")[i % 3], "reason": f"r{i}" if i % 2 else None}
        for i in range(len(claims))
    ]
    logs = sep.join(
        [
            f"Truths (limit=None):\n{_prettify(['Verdicts: a truth'])}",
            f"Claims:\n{_prettify(claims)}",
            f"Verdicts:\n{_prettify(verdicts)}",
        ]
    )
    assert deepeval.parse_verbose_logs(logs) == (claims, verdicts)


def test_borderline_and_user_maps_override_the_tool_defaults(empty_db: Database, tmp_path: Path) -> None:
    text = (DATA / "deepeval_latest_test_run.json").read_text(encoding="utf-8")
    path = tmp_path / "run.json"
    path.write_text(
        text.replace('\\"verdict\\": \\"idk\\"', '\\"verdict\\": \\"borderline\\"'), encoding="utf-8"
    )
    run(empty_db, "deepeval", path, judge_prompt_version="v1", mapping={"no": Verdict.UNSUPPORTED})
    got = {(a, c): (v, raw) for a, c, _, v, raw in claims_in(empty_db)}
    assert got[("test_case_1", "c2")] == (U, "borderline")
    assert got[("test_case_0", "c2")] == (U, "no")


def test_ragas_zero_can_be_mapped_to_contradicted(empty_db: Database) -> None:
    run(
        empty_db,
        "ragas",
        DATA / "ragas_traces.json",
        judge_model="m",
        judge_prompt_version="v1",
        mapping={"0": Verdict.CONTRADICTED},
    )
    assert [v for *_, v, raw in claims_in(empty_db) if raw == "0"] == [C]


def test_ragas_chunk_ids_come_from_retrieved_context_ids(empty_db: Database) -> None:
    run(empty_db, "ragas", DATA / "ragas_traces.json", judge_model="m", judge_prompt_version="v1")
    ids = [r[0] for r in empty_db.execute("SELECT answer_id || '/' || chunk_id FROM chunks ORDER BY 1")]
    assert ids == ["ragas_traces:0/doc1#p1", "ragas_traces:0/doc1#p2", "ragas_traces:1/1"]


def test_refchecker_evidence_names_the_passages_that_gave_the_label(empty_db: Database) -> None:
    run(empty_db, "refchecker", DATA / "refchecker_output.json", judge_model="m", judge_prompt_version="v1")
    rows = {
        (a, c): json.loads(e)
        for a, c, e in empty_db.execute(
            "SELECT c.answer_id, c.claim_id, v.evidence FROM claims c "
            "JOIN judge_verdicts v ON v.claim_pk = c.id"
        )
    }
    assert rows[("refchecker_output:1", "c1")] == ["2"]
    assert rows[("refchecker_output:1", "c2")] == []


def test_refchecker_keeps_each_triplet_in_the_answer_metadata(empty_db: Database) -> None:
    run(empty_db, "refchecker", DATA / "refchecker_output.json", judge_model="m", judge_prompt_version="v1")
    meta = {a: json.loads(m)["refchecker"] for a, m in empty_db.execute("SELECT id, metadata FROM answers")}
    assert meta["refchecker_output:0"]["triplets"] == {
        "c1": ["Blue Harbor", "sung by", "Lindqvist & Sons"],
        "c2": ["Blue Harbor", "released in", "1969"],
    }
    assert "triplets" not in meta["q-77"]  # a subsentence claim is its own text


@pytest.mark.parametrize(
    ("claim", "text"),
    [
        # RCClaim.get_content(): f"{head} {relation} {tail}", nothing stripped or bracketed.
        (["Acme Cloud", "founded in", "2012"], "Acme Cloud founded in 2012"),
        (["Acme", "has", " 3 offices"], "Acme has  3 offices"),
        ("Acme Cloud was founded in 2012.", "Acme Cloud was founded in 2012."),
        (["too", "short"], None),
        (["a", "b", 3], None),
    ],
)
def test_refchecker_claim_text_is_what_its_checker_saw(claim: Any, text: str | None) -> None:
    assert refchecker.claim_text(claim) == text


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        (["Neutral", "Entailment", "Contradiction"], ("Entailment", [1])),
        (["Contradiction", "Neutral", "Contradiction"], ("Contradiction", [0, 2])),
        (["Neutral", "Neutral"], ("Neutral", [])),
        ([], None),
    ],
)
def test_refchecker_passages_combine_as_refchecker_does(labels: list[str], expected: Any) -> None:
    assert refchecker.combine(labels) == expected


def test_table_chunks_from_json_and_repeated_columns(empty_db: Database) -> None:
    run(empty_db, "csv", DATA / "claims_table.csv", columns=TABLE_COLUMNS)
    run(empty_db, "tsv", DATA / "claims_repeated.tsv", judge_model="j", judge_prompt_version="v1")
    chunks = [
        tuple(r)
        for r in empty_db.execute("SELECT answer_id, chunk_id, text FROM chunks ORDER BY answer_id, position")
    ]
    assert chunks == [
        ("a1", "1", "Founded in 1998."),
        ("a1", "2", "Based in Oslo."),
        ("a2", "1", "It employs about 150 people."),
        (
            "q1",
            "S2",
            "Discounts up to 5% are approved by the head of sales; above 5% by the finance director.",
        ),
        ("q2", "1", "Гарантийный срок — два года."),
        ("q2", "2", "Продление гарантии не предусмотрено."),
    ]


def test_parquet_and_dataframe_read_the_same_as_csv(empty_db: Database, tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "qid": ["p1", "p1", "p2"],
            "q": ["Q1?", None, "Q2?"],
            "resp": ["A1.", None, "A2."],
            "ctx": [["chunk one", "chunk two"], None, ["chunk three"]],
            "statement": ["Claim one.", "Claim two.", "Claim three."],
            "label": ["SUPPORTED", "refuted", "neutral"],
        }
    )
    path = tmp_path / "claims.parquet"
    frame.to_parquet(path)
    cols = "answer_id=qid,question=q,answer=resp,chunks=ctx,claim=statement,verdict=label"
    run(empty_db, "parquet", path, columns=cols, judge_model="j", judge_prompt_version="v1")
    assert [(a, c, t, v) for a, c, t, v, _ in claims_in(empty_db)] == [
        ("p1", "c1", "Claim one.", S),
        ("p1", "c2", "Claim two.", C),
        ("p2", "c1", "Claim three.", U),
    ]
    assert counts(empty_db)["chunks"] == 3
    other = store.connect(tmp_path / "y.db")
    result = adapters.table.read_frame(frame, columns=cols, judge_model="j", judge_prompt_version="v1")
    import_records(
        other,
        result.records,
        source=result.source,
        mapping=result.mapping,
        judge_model=result.judge_model,
        judge_prompt_version=result.judge_prompt_version,
    )
    assert claims_in(other) == claims_in(empty_db)


@pytest.mark.sqlite_only  # refused while the file is read, before the store is written
def test_a_parquet_problem_names_its_row(empty_db: Database, tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    pd.DataFrame(
        {
            "answer_id": ["a", "b"],
            "question": ["q", "q"],
            "answer": ["x", "y"],
            "claim": ["x", "y"],
            "verdict": ["SUPPORTED", "perhaps"],
        }
    ).to_parquet(path)
    with pytest.raises(InputError) as err:
        run(empty_db, "parquet", path, judge_model="j", judge_prompt_version="v1")
    assert err.value.lines()[0].startswith(f"{path}:2: verdict: unknown verdict 'perhaps'")
    assert counts(empty_db)["answers"] == 0


BAD = [
    (
        "deepeval",
        "deepeval_bad.json",
        {},
        [
            "deepeval_bad.json:42: testCases.1.metricsData.1.verboseLogs: 2 claims but 1 verdict",
            "deepeval_bad.json:81: testCases.2.metricsData.1.verboseLogs.verdicts.0: unknown DeepEval "
            "verdict "
            "'maybe'",
        ],
    ),
    (
        "ragas",
        "ragas_bad.json",
        {"judge_model": "m"},
        [
            "ragas_bad.json:102: [4].outputs.output.statements.2.verdict: unknown Ragas verdict 'yes-ish'",
            "ragas_bad.json:267: [10].outputs.output.statements.0.statement: missing or empty",
        ],
    ),
    (
        "refchecker",
        "refchecker_bad.json",
        {"judge_model": "m"},
        [
            "refchecker_bad.json:29: [1].ys: 2 labels for 3 claims",
            "refchecker_bad.json:70: [2].ys.0: unknown RefChecker label 'Maybe'",
        ],
    ),
    (
        "csv",
        "claims_bad.csv",
        {
            "judge_model": "m",
            "columns": "answer_id=qid,question=q,answer=resp,chunks=ctx,claim=statement,verdict=label",
        },
        [
            "claims_bad.csv:3: q: differs from line 2 for answer 'q1'",
            "claims_bad.csv:4: qid: missing: every row names its answer",
            "claims_bad.csv:5: ctx: not a JSON list",
            "claims_bad.csv:6: label: unknown verdict 'maybe'",
            "claims_bad.csv:7: statement: missing: a row is one claim",
        ],
    ),
]


@pytest.mark.sqlite_only  # refused while the file is read, before the store is written
@pytest.mark.parametrize(("name", "file", "options", "expected"), BAD, ids=[b[1] for b in BAD])
def test_a_malformed_file_names_file_line_and_field_and_writes_nothing(
    empty_db: Database, tmp_path: Path, name: str, file: str, options: dict[str, Any], expected: list[str]
) -> None:
    # A good file first, so "nothing written" also means nothing of the bad file joined it.
    run(empty_db, "refchecker", DATA / "refchecker_output.json", judge_model="ok", judge_prompt_version="v1")
    before = counts(empty_db)
    path = tmp_path / file
    shutil.copy(DATA / file, path)
    with pytest.raises(InputError) as err:
        run(empty_db, name, path, judge_prompt_version="v1", **options)
    problems = err.value.lines()
    assert len(problems) == len(expected) + 1
    for got, want in zip(problems, expected, strict=False):
        assert got.startswith(f"{tmp_path}/{want}"), got
    assert problems[-1] == f"{path}: nothing was imported"
    assert counts(empty_db) == before


def test_a_bad_file_leaves_a_fresh_database_empty(empty_db: Database) -> None:
    with pytest.raises(InputError):
        run(empty_db, "deepeval", DATA / "deepeval_bad.json", judge_prompt_version="v1")
    assert set(counts(empty_db).values()) == {0}


@pytest.mark.sqlite_only  # refused while the file is read, before the store is written
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"testRunLink": "https://app.confident-ai.com/x"}', "1: testRunLink: this run was uploaded"),
        (
            '{"testFile": "t.py", "testCases": [\n{"name": "a",\n "input": "q"',
            "run.json:3: malformed JSON: Expecting ',' delimiter",
        ),
        ('{"testFile": "t.py"}', "1: testCases: missing"),
        (
            '{"testCases": [{"name": "a", "metricsData": [{"name": "Answer Relevancy"}]}]}',
            "testCases: no test case has a 'Faithfulness' metric",
        ),
    ],
)
def test_deepeval_files_without_verdicts_say_why(
    empty_db: Database, tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "run.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        run(empty_db, "deepeval", path, judge_prompt_version="v1")
    assert message in err.value.lines()[0]


def test_deepeval_without_evaluation_model_needs_the_option(empty_db: Database, tmp_path: Path) -> None:
    doc = json.loads((DATA / "deepeval_v021.json").read_text(encoding="utf-8"))
    for case in doc["testCases"]:
        for m in case["metricsMetadata"]:
            m.pop("evaluationModel")
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError, match="judge_model: missing"):
        run(empty_db, "deepeval", path, judge_prompt_version="v1")
    _, result = run(empty_db, "deepeval", path, judge_prompt_version="v1", judge_model="gpt-4")
    assert judge_runs(empty_db) == [("gpt-4", "v1")]
    assert any("--judge-model" in phrase(n, FLAGS) for n in result.notes)


def test_deepeval_failed_metric_refuses_unless_skipped(empty_db: Database, tmp_path: Path) -> None:
    doc = json.loads((DATA / "deepeval_results_20240115_103000").read_text(encoding="utf-8"))
    doc["testCases"][2]["metricsData"][1].update(error="RateLimitError", verboseLogs=None)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError, match=r"testCases\.2\.metricsData\.1\.error: the metric failed"):
        run(empty_db, "deepeval", path, judge_prompt_version="v1")
    _, result = run(empty_db, "deepeval", path, judge_prompt_version="v1", skip_failed=True)
    assert counts(empty_db)["answers"] == 2
    assert any("left out" in phrase(n) for n in result.notes)


@pytest.mark.parametrize(
    ("file", "expected"),
    [
        ("deepeval_latest_test_run.json", "deepeval"),
        ("deepeval_results_20240115_103000", "deepeval"),
        ("deepeval_v021.json", "deepeval"),
        ("ragas_traces.json", "ragas"),
        ("refchecker_output.json", "refchecker"),
        ("claims_table.csv", "csv"),
        ("claims_repeated.tsv", "csv"),
    ],
)
def test_detect_names_the_adapter(file: str, expected: str) -> None:
    assert adapters.detect(DATA / file) == expected


def test_detect_leaves_native_jsonl_alone() -> None:
    native = Path(__file__).resolve().parents[1] / "data" / "demo" / "demo_rag_v1.jsonl"
    assert adapters.detect(native) is None


def test_unknown_adapter_and_bad_column_mapping_are_input_errors() -> None:
    with pytest.raises(InputError, match="unknown format 'promptfoo'; use one of deepeval, ragas"):
        adapters.get("promptfoo")
    with pytest.raises(InputError, match="'claims' is not one of"):
        adapters.table.parse_columns("claims=statement")


@pytest.mark.sqlite_only  # refused while the file is read, before the store is written
def test_a_table_answer_whose_chunks_change_between_rows_is_refused(
    empty_db: Database, tmp_path: Path
) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        'answer_id,question,answer,chunks,claim,verdict\na,q,A,"[""x""]",One.,SUPPORTED\n'
        'a,q,A,"[""x""]",Two.,SUPPORTED\na,q,A,"[""y""]",Three.,SUPPORTED\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError) as err:
        run(empty_db, "csv", path, judge_model="j", judge_prompt_version="v1")
    assert err.value.lines()[0] == f"{path}:4: chunks: differs from line 2 for answer 'a'"
    assert counts(empty_db)["answers"] == 0


# ---------------------------------------------------------------- the CLI: import --from


def test_cli_import_from_prints_the_mapping_and_notes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from calibration.cli import main

    db = tmp_path / "cli.db"
    assert (
        main(
            [
                "--db",
                str(db),
                "import",
                "--from",
                "deepeval",
                str(DATA / "deepeval_latest_test_run.json"),
                "--judge-prompt-version",
                "v1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "  answers: 2 new, 0 already present" in out
    assert "    deepeval yes → SUPPORTED: 2" in out and "    deepeval borderline → UNSUPPORTED: 0" in out
    assert "  note: the prompt version is not in DeepEval's file" in out
    with store.session(db) as conn:
        assert counts(conn)["judge_verdicts"] == 4


def test_cli_import_from_csv_with_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from calibration.cli import main

    db = tmp_path / "cli.db"
    assert (
        main(
            [
                "--db",
                str(db),
                "import",
                "--from",
                "csv",
                str(DATA / "claims_table.csv"),
                "--columns",
                TABLE_COLUMNS,
            ]
        )
        == 0
    )
    with store.session(db) as conn:
        expected = claims_in(conn)
    # the same file through the adapter API gives the same claims and verdicts
    other = store.connect(tmp_path / "api.db")
    run(other, "csv", DATA / "claims_table.csv", columns=TABLE_COLUMNS)
    assert claims_in(other) == expected and expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "refchecker", "--columns", "a=b"], "--columns does not apply to --from refchecker"),
        (["--columns", "a=b"], "--columns: only with --from"),
        (["--from", "nope"], "unknown format 'nope'"),
    ],
)
def test_cli_import_from_refuses_options_of_another_adapter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    from calibration.cli import main

    rc = main(["--db", str(tmp_path / "cli.db"), "import", *args, str(DATA / "refchecker_output.json")])
    assert rc != 0
    assert message in capsys.readouterr().err


def test_cli_import_from_bad_file_and_dry_run_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from calibration.cli import main

    db = tmp_path / "cli.db"
    assert (
        main(
            [
                "--db",
                str(db),
                "import",
                "--from",
                "deepeval",
                str(DATA / "deepeval_bad.json"),
                "--judge-prompt-version",
                "v1",
            ]
        )
        != 0
    )
    err = capsys.readouterr().err
    assert "deepeval_bad.json:42: testCases.1.metricsData.1.verboseLogs: 2 claims but 1 verdict" in err
    assert err.rstrip().endswith("deepeval_bad.json: nothing was imported")
    assert (
        main(
            [
                "--db",
                str(db),
                "import",
                "--from",
                "ragas",
                "--dry-run",
                str(DATA / "ragas_traces.json"),
                "--judge-model",
                "m",
                "--judge-prompt-version",
                "v1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "(dry run: nothing was written)" in out and "answers: 2 new" in out
    with store.session(db) as conn:
        assert counts(conn)["answers"] == 0


def test_run_import_progress_and_problem_lines(tmp_path: Path) -> None:
    db = store.connect(tmp_path / "p.db")
    seen: list[float] = []
    outcome = adapters.run_import(
        db,
        "deepeval",
        DATA / "deepeval_latest_test_run.json",
        dry_run=True,
        progress=seen.append,
        judge_prompt_version="v1",
    )
    assert outcome.counts[0] == "answers: 2 new, 0 already present"
    assert outcome.mapping[0] == "deepeval yes → SUPPORTED: 2"
    assert seen and seen[-1] == 1.0 and seen == sorted(seen)
    assert counts(db)["answers"] == 0
    with pytest.raises(InputError) as err:
        adapters.run_import(db, "deepeval", DATA / "deepeval_bad.json", judge_prompt_version="v1")
    first = err.value.problems[0]
    assert (first.file, first.line, first.field, first.message) == (
        str(DATA / "deepeval_bad.json"),
        42,
        "testCases.1.metricsData.1.verboseLogs",
        "2 claims but 1 verdict",
    )
    assert err.value.closing == Problem("nothing was imported", str(DATA / "deepeval_bad.json"))
    assert adapters.guess(DATA / "deepeval_latest_test_run.json") == "deepeval"
    assert adapters.guess(tmp_path / "x.jsonl") == adapters.NATIVE


@pytest.mark.parametrize(
    ("problems", "expected"),
    [
        (
            [
                (1, "judge_model", "missing"),
                (2, "judge_model", "missing"),
                (4, "id", "empty"),
                (7, "judge_model", "missing"),
                (None, "", "no judged answers in the file"),
            ],
            [
                ([1, 2, 7], "judge_model", "missing"),
                ([4], "id", "empty"),
                ([], "", "no judged answers in the file"),
            ],
        ),
        (
            [(3, "judge_model", "missing"), (3, "verdict", "missing")],
            [([3], "judge_model", "missing"), ([3], "verdict", "missing")],
        ),
    ],
)
def test_grouped_problems_say_each_problem_once_with_its_lines(
    problems: list[tuple[int | None, str, str]], expected: list[tuple[list[int], str, str]]
) -> None:
    err = InputError([Problem(message, "f.jsonl", line, fld) for line, fld, message in problems])
    assert [(lines, p.field, p.message) for lines, p in err.grouped()] == expected


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_table_preview_gives_the_header_and_first_rows(tmp_path: Path, suffix: str) -> None:
    frame = pd.read_csv(DATA / "claims_table.csv", dtype=str, keep_default_na=False)
    path = tmp_path / f"t{suffix}"
    if suffix == ".csv":
        shutil.copy(DATA / "claims_table.csv", path)
    else:
        frame.to_parquet(path)
    header, rows = adapters.table.preview(path, rows=2)
    assert header == list(frame.columns)
    assert rows == [list(r) for r in frame.head(2).itertuples(index=False, name=None)]


def test_table_preview_of_a_cp1251_file_needs_its_encoding(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes((DATA / "claims_table.csv").read_text(encoding="utf-8").encode("cp1251"))
    with pytest.raises(InputError, match="cannot decode"):
        adapters.table.preview(path)
    assert "Какой срок гарантии?" in adapters.table.preview(path, encoding="cp1251")[1][2]
