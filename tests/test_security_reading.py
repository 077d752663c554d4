"""One reading policy for every input: this tool's JSONL and JSON arrays, other tools' files, JSON
in a table cell, and Python values handed to the API. Each bad input is refused with file (or
`<records>`), line (or row) and field, writes nothing, and never ends in a traceback."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import calibration
from calibration import adapters, reading, store
from calibration.errors import InputError
from calibration.importing import import_records
from calibration.store import Database
from tests.conftest import RunCli
from tests.test_security_cli import answer, answers_in

ADAPTER_DATA = Path(__file__).resolve().parent / "data" / "adapters"
BAD = "@@BAD@@"
# (what, raw JSON text put where a value goes, what the refusal says)
BAD_JSON = [
    ("deep", "[" * 4000 + "]" * 4000, "nested deeper than 100 levels"),
    ("surrogate", '"x\\ud800y"', "lone surrogate"),
    ("long number", "1" * 5000, "a number of 5000 digits"),
]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "cal.db"


@pytest.fixture
def empty_db(tmp_path: Path) -> Database:
    return store.connect(tmp_path / "x.db")


def counts(conn: Database) -> dict[str, int]:
    return {
        t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in ("answers", "chunks", "claims", "judge_verdicts", "judge_runs")
    }


def import_with(conn: Database, name: str, path: Path, **options: Any) -> None:
    result = adapters.read(name, path, judge_model="j", judge_prompt_version="v1", **options)
    import_records(
        conn,
        result.records,
        source=result.source,
        mapping=result.mapping,
        judge_model=result.judge_model,
        judge_prompt_version=result.judge_prompt_version,
    )


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


TABLE_HEADER = ["answer_id", "question", "answer", "claim", "verdict"]


def table_rows(n: int) -> list[list[str]]:
    return [[f"a{i}", "q?", f"Answer {i}.", f"Claim {i}.", "SUPPORTED"] for i in range(n)]


# ---------------------------------------------------------------- 1. --dry-run of this tool's JSONL


def test_dry_run_of_a_jsonl_file_writes_nothing(run_cli: RunCli, tmp_path: Path, db: Path) -> None:
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    first.write_text(json.dumps(answer("a1")) + "\n", encoding="utf-8")
    second.write_text(json.dumps(answer("a2")) + "\n" + json.dumps(answer("a3")) + "\n", encoding="utf-8")
    run_cli("import", first, db=db, expect=0)
    proc = run_cli("import", "--dry-run", second, db=db, expect=0)
    assert f"{second}: (dry run: nothing was written)" in proc.stdout
    assert "answers: 2 new, 0 already present" in proc.stdout
    assert answers_in(db) == 1


# ---------------------------------------------------------------- 2. the claim-per-row table is strict


def test_an_unterminated_quote_in_a_table_is_refused_where_it_opens(
    run_cli: RunCli, tmp_path: Path, db: Path
) -> None:
    path = write_csv(tmp_path / "t.csv", TABLE_HEADER, table_rows(50))
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[5] = lines[5].replace("Claim 4.", '"Claim 4.')  # opens a quote on line 6, never closed
    path.write_text("".join(lines), encoding="utf-8")
    proc = run_cli(
        "import", "--from", "csv", "--judge-model", "j", "--judge-prompt-version", "v1", path, db=db, expect=1
    )
    assert f"{path}:6: a quoted field is not closed" in proc.stderr
    assert answers_in(db) == 0


@pytest.mark.parametrize(
    ("cells", "says"),
    [
        (["a3", "q?", "Answer.", "Claim.", "SUPPORTED", "extra"], "6 fields, but the header has 5 columns"),
        (["a3", "q?", "Answer.", "Claim."], "4 fields, but the header has 5 columns"),
    ],
)
def test_a_table_row_of_the_wrong_width_is_refused(
    run_cli: RunCli, tmp_path: Path, db: Path, cells: list[str], says: str
) -> None:
    rows = table_rows(3)
    rows[2] = cells
    path = write_csv(tmp_path / "t.csv", TABLE_HEADER, rows)
    proc = run_cli(
        "import", "--from", "csv", "--judge-model", "j", "--judge-prompt-version", "v1", path, db=db, expect=1
    )
    assert f"{path}:4: {says}" in proc.stderr
    assert answers_in(db) == 0


# ---------------------------------------------------------------- 3. ambiguous columns, missing columns, NaN


def test_a_table_with_a_column_twice_is_refused(run_cli: RunCli, tmp_path: Path, db: Path) -> None:
    path = write_csv(
        tmp_path / "t.csv", [*TABLE_HEADER, "verdict"], [[*r, "CONTRADICTED"] for r in table_rows(2)]
    )
    proc = run_cli(
        "import", "--from", "csv", "--judge-model", "j", "--judge-prompt-version", "v1", path, db=db, expect=1
    )
    assert f"{path}:1: column(s) 'verdict' appear more than once in the header" in proc.stderr
    assert answers_in(db) == 0


def test_a_field_mapped_twice_in_columns_is_refused(run_cli: RunCli, tmp_path: Path, db: Path) -> None:
    path = write_csv(tmp_path / "t.csv", TABLE_HEADER, table_rows(2))
    proc = run_cli(
        "import",
        "--from",
        "csv",
        "--columns",
        "claim=claim,claim=answer",
        "--judge-model",
        "j",
        "--judge-prompt-version",
        "v1",
        path,
        db=db,
        expect=1,
    )
    assert (
        "claim is mapped twice (claim=claim and claim=answer); which column holds it is ambiguous; "
        "check --columns"
    ) in proc.stderr
    assert answers_in(db) == 0


def test_a_table_without_a_question_column_says_so(run_cli: RunCli, tmp_path: Path, db: Path) -> None:
    header = [h for h in TABLE_HEADER if h != "question"]
    rows = [[c for i, c in enumerate(r) if i != 1] for r in table_rows(2)]
    path = write_csv(tmp_path / "t.csv", header, rows)
    proc = run_cli(
        "import", "--from", "csv", "--judge-model", "j", "--judge-prompt-version", "v1", path, db=db, expect=1
    )
    assert (
        f"{path}:1: missing column(s): question; the file has answer_id, answer, claim, verdict"
        in proc.stderr
    )
    assert "valid string" not in proc.stderr
    assert answers_in(db) == 0


def test_a_deepeval_nan_score_is_refused_with_its_field(run_cli: RunCli, tmp_path: Path, db: Path) -> None:
    text = (ADAPTER_DATA / "deepeval_latest_test_run.json").read_text(encoding="utf-8")
    faithfulness = '"name": "Faithfulness", "threshold": 0.5, "success": true, "score": 0.5,'
    assert text.find(faithfulness) < text.find('"name": "test_case_1"')
    path = tmp_path / "run.json"
    path.write_text(
        text.replace(faithfulness, faithfulness.removesuffix("0.5,") + "NaN,", 1), encoding="utf-8"
    )
    proc = run_cli("import", "--from", "deepeval", "--judge-prompt-version", "v1", path, db=db, expect=1)
    assert f"{path}:1: testCases.0.metricsData.1.score: NaN is not valid JSON" in proc.stderr
    assert answers_in(db) == 0


# ---------------------------------------------------------------- 4. one policy in every adapter


def _deepeval_file(tmp_path: Path) -> Path:
    doc = json.loads((ADAPTER_DATA / "deepeval_latest_test_run.json").read_text(encoding="utf-8"))
    doc["testRunData"]["testCases"][1]["metadata"] = {"note": BAD}
    path = tmp_path / "deepeval.json"
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return path


def _first_element_file(name: str) -> Any:
    def build(tmp_path: Path) -> Path:
        doc = json.loads((ADAPTER_DATA / name).read_text(encoding="utf-8"))
        doc[0]["extra"] = BAD
        path = tmp_path / name
        path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
        return path

    return build


def _table_file(tmp_path: Path) -> Path:
    rows = [[*r, json.dumps(["chunk"])] for r in table_rows(3)]
    rows[1][-1] = f'["chunk", {BAD}]'
    return write_csv(tmp_path / "t.csv", [*TABLE_HEADER, "chunks"], rows)


ADAPTER_FILES = [
    ("deepeval", _deepeval_file),
    ("ragas", _first_element_file("ragas_traces.json")),
    ("refchecker", _first_element_file("refchecker_output.json")),
    ("csv", _table_file),
]


@pytest.mark.parametrize(("adapter", "build"), ADAPTER_FILES, ids=[a for a, _ in ADAPTER_FILES])
@pytest.mark.parametrize(("what", "raw", "says"), BAD_JSON, ids=[w for w, _, _ in BAD_JSON])
def test_every_adapter_refuses_what_the_jsonl_import_refuses(
    tmp_path: Path, empty_db: Database, adapter: str, build: Any, what: str, raw: str, says: str
) -> None:
    path = build(tmp_path)
    text = path.read_text(encoding="utf-8")
    # In the CSV the JSON sits in a quoted cell, where a quote is doubled.
    bad = text.replace(f'"{BAD}"', raw) if adapter != "csv" else text.replace(BAD, raw.replace('"', '""'))
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(InputError) as err:
        import_with(empty_db, adapter, path)
    first = err.value.lines()[0]
    assert re.match(rf"{re.escape(str(path))}:\d+: ", first) and says in first, first
    assert err.value.lines()[-1] == f"{path}: nothing was imported"
    assert counts(empty_db)["answers"] == 0


# ---------------------------------------------------------------- 5. the Python API


def _deep_dict(depth: int) -> dict[str, Any]:
    root = cur = {}
    for _ in range(depth):
        cur["x"] = {}
        cur = cur["x"]
    return root


@pytest.mark.parametrize(
    ("metadata", "says"),
    [
        ({"note": "x\ud800y"}, "<records>:2: metadata.note: contains a lone surrogate"),
        ({"x": _deep_dict(5000)}, "<records>:2: nested deeper than 100 levels"),
        ({"tags": {"a", "b"}}, "<records>:2: metadata.tags: a set is not a JSON value"),
        ({"score": math.nan}, "<records>:2: metadata.score: nan is not a finite number"),
        ({"score": [1.0, -math.inf]}, "<records>:2: metadata.score.1: -inf is not a finite number"),
        ({"n": 10**150}, "<records>:2: metadata.n: a number of more than 100 digits"),
        ({1: "x"}, "<records>:2: metadata: the key 1 is not a string"),
    ],
)
def test_api_values_go_through_the_same_policy(tmp_path: Path, metadata: dict[Any, Any], says: str) -> None:
    with calibration.connect(tmp_path / "c.db") as cal:
        with pytest.raises(InputError) as err:
            cal.import_answers([answer("ok"), answer("bad", metadata=metadata)])
        assert err.value.lines()[0].startswith(says), err.value.lines()
        assert counts(cal.db)["answers"] == 0


def test_a_failing_generator_leaves_no_rows(tmp_path: Path) -> None:
    def records() -> Iterator[dict[str, Any]]:
        for i in range(1200):  # more than one publish batch
            yield answer(f"a{i}")
        raise RuntimeError("the pipeline broke")

    with calibration.connect(tmp_path / "c.db") as cal:
        with pytest.raises(RuntimeError, match="the pipeline broke"):
            cal.import_answers(records())
        assert set(counts(cal.db).values()) == {0}


# ---------------------------------------------------------------- 6. a large record in a JSON array


def test_a_record_larger_than_the_read_buffer_keeps_its_lines(tmp_path: Path) -> None:
    big = answer("big", answer="x" * (1 << 20))
    path = tmp_path / "arr.json"
    path.write_text(
        "[\n"
        + json.dumps(answer("a1"), indent=1)
        + ",\n"
        + json.dumps(big)
        + ",\n"
        + json.dumps(answer("a3"), indent=1)
        + ",\n"
        + '{"id": NaN}'
        + "\n]\n",
        encoding="utf-8",
    )
    n1 = json.dumps(answer("a1"), indent=1).count("\n") + 1
    n3 = json.dumps(answer("a3"), indent=1).count("\n") + 1
    got = list(reading.iter_json_records(path))
    assert [line for line, _ in got] == [2, 2 + n1, 3 + n1, 3 + n1 + n3]
    assert got[1][1] == big
    assert got[3][1] == reading.BadRecord("id: NaN is not valid JSON (write null, or the number as a string)")


# ---------------------------------------------------------------- 7. Parquet in batches


def test_parquet_is_read_across_batches_with_row_numbers(tmp_path: Path, empty_db: Database) -> None:
    n = 3 * adapters.table.PARQUET_BATCH + 5
    rows = table_rows(n)
    rows[-1][4] = "perhaps"
    path = tmp_path / "t.parquet"
    pd.DataFrame(rows, columns=TABLE_HEADER).to_parquet(path)
    with pytest.raises(InputError) as err:
        import_with(empty_db, "parquet", path)
    assert err.value.lines()[0].startswith(f"{path}:{n}: verdict: unknown verdict 'perhaps'")
    rows[-1][4] = "SUPPORTED"
    pd.DataFrame(rows, columns=TABLE_HEADER).to_parquet(path)
    import_with(empty_db, "parquet", path)
    assert counts(empty_db)["answers"] == n
