"""One reader and one problem shape for every input file.

Every format the import reads (this tool's JSONL and JSON array, DeepEval, Ragas, RefChecker,
CSV, TSV, Parquet, and the label CSV) goes through `reading.text_file`: an encoding that is no
character encoding is one usage error, bytes that do not decode are one line naming the line
they are on, and a cp1251 file imports once its encoding is given. Problems are objects: the
CLI words their hints with its flags, the Import page with its own controls, for the same file.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from calibration import adapters, importing, reading, store
from calibration.cli.common import FLAGS
from calibration.errors import InputError, Option, Problem
from calibration_app import problems
from tests.conftest import RunCli

ROOT = Path(__file__).resolve().parents[1]
ADAPTER_DATA = ROOT / "tests" / "data" / "adapters"
MARK = "@@MARK@@"
JUDGE = ["--judge-model", "m", "--judge-prompt-version", "v1"]


def ascii_record(i: int, **over: Any) -> dict[str, Any]:
    rec = {
        "id": f"a{i}",
        "question": "Who approves it?",
        "answer": "The head of sales.",
        "chunks": [{"id": "S1", "text": "The head of sales approves discounts."}],
        "claims": [{"id": "c1", "claim": "The head of sales approves it.", "verdict": "SUPPORTED"}],
        "judge_model": "m",
        "judge_prompt_version": "v1",
    }
    return {**rec, **over}


def _jsonl() -> str:
    return "".join(json.dumps(r) + "\n" for r in (ascii_record(1), ascii_record(2, question=MARK)))


def _json_array() -> str:
    return json.dumps([ascii_record(1), ascii_record(2, question=MARK)], indent=1)


def _deepeval() -> str:
    doc = json.loads((ADAPTER_DATA / "deepeval_latest_test_run.json").read_text(encoding="utf-8"))
    doc["testRunData"]["testCases"][1]["input"] = MARK
    return json.dumps(doc, indent=1, ensure_ascii=False)


def _ragas() -> str:
    runs = json.loads((ADAPTER_DATA / "ragas_traces.json").read_text(encoding="utf-8"))
    rows = [r for r in runs if (r.get("metadata") or {}).get("type") == "row"]
    rows[-1]["inputs"]["user_input"] = MARK
    return json.dumps(runs, indent=1, ensure_ascii=False)


def _refchecker() -> str:
    items = json.loads((ADAPTER_DATA / "refchecker_output.json").read_text(encoding="utf-8"))
    items[-1]["question"] = MARK
    return json.dumps(items, indent=1, ensure_ascii=False)


def _table(sep: str) -> str:
    rows = [
        ["answer_id", "question", "answer", "claim", "verdict"],
        ["a1", "Who approves it?", "The head.", "The head approves it.", "SUPPORTED"],
        ["a1", "", "", "Approval is needed.", "SUPPORTED"],
        ["a2", "When?", "Today.", f"It is {MARK}.", "UNSUPPORTED"],
    ]
    return "".join(sep.join(r) + "\n" for r in rows)


def _labels() -> str:
    return (
        "answer_id,claim_id,verdict,reviewer,note\nl1,c1,SUPPORTED,vera,seen\n"
        f"l2,c1,UNSUPPORTED,vera,{MARK}\n"
    )


# (case id, file name, the file's text with MARK on a known line, the command before the file,
# options after it)
FORMATS: list[tuple[str, str, Callable[[], str], list[str], list[str]]] = [
    ("jsonl", "in.jsonl", _jsonl, ["import"], []),
    ("json-array", "in.json", _json_array, ["import"], []),
    ("deepeval", "run.json", _deepeval, ["import", "--from", "deepeval"], ["--judge-prompt-version", "v1"]),
    ("ragas", "traces.json", _ragas, ["import", "--from", "ragas"], JUDGE),
    ("refchecker", "checked.json", _refchecker, ["import", "--from", "refchecker"], JUDGE),
    ("csv", "claims.csv", lambda: _table(","), ["import", "--from", "csv"], JUDGE),
    ("tsv", "claims.tsv", lambda: _table("\t"), ["import", "--from", "tsv"], JUDGE),
    ("labels", "labels.csv", _labels, ["import-labels"], []),
]
IDS = [f[0] for f in FORMATS]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A database holding answers l1 and l2 (claim c1 each), for the label file to name."""
    path = tmp_path / "cal.db"
    with store.session(path) as conn:
        importing.import_records(
            conn, [(1, ascii_record(1, id="l1")), (2, ascii_record(2, id="l2"))], source="seed"
        )
    return path


def mark_line(text: str) -> int:
    line = text[: text.index(MARK)].count("\n") + 1
    assert line > 1  # past the first line, where a reader that reports line 1 would be right by chance
    return line


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "error:" in line]


@pytest.mark.parametrize(
    ("name", "command"),
    [
        *((f[0], f[3]) for f in FORMATS),
        ("parquet", ["import", "--from", "parquet"]),
    ],
    ids=[*IDS, "parquet"],
)
@pytest.mark.parametrize("encoding", ["rot13", "base64"])
def test_an_encoding_that_is_no_character_encoding_is_one_usage_error(
    run_cli: RunCli, db: Path, tmp_path: Path, name: str, command: list[str], encoding: str
) -> None:
    path = tmp_path / "in.file"
    path.write_text("{}\n", encoding="utf-8")
    proc = run_cli(*command, "--encoding", encoding, path, db=db, expect=2)
    [line] = error_lines(proc.stderr)
    assert f"argument --encoding: {encoding!r} is not a text encoding" in line


def assert_one_decode_line(run: RunCli, db: Path, path: Path, text: str, args: list[str | Path]) -> None:
    """The import of `path` (written from `text`) fails in one line naming MARK's line, with the hint."""
    proc = run(*args, db=db, expect=1)
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"error: {path}:{mark_line(text)}: cannot decode bytes as UTF-8 (")
    assert line.endswith("; the file is not UTF-8: give its encoding with --encoding")


@pytest.mark.parametrize(("name", "file", "make", "command", "options"), FORMATS, ids=IDS)
def test_bytes_that_are_not_utf8_are_one_line_naming_their_line(
    run_cli: RunCli,
    db: Path,
    tmp_path: Path,
    name: str,
    file: str,
    make: Callable[[], str],
    command: list[str],
    options: list[str],
) -> None:
    text, path = make(), tmp_path / file
    path.write_bytes(text.encode("utf-8").replace(MARK.encode(), b"caf\xe9"))  # a Latin-1 e-acute
    assert_one_decode_line(run_cli, db, path, text, [*command, path, *options])


@pytest.mark.parametrize(("name", "file", "make", "command", "options"), FORMATS, ids=IDS)
def test_a_cp1251_file_is_refused_in_one_line_then_read_with_its_encoding(
    run_cli: RunCli,
    db: Path,
    tmp_path: Path,
    name: str,
    file: str,
    make: Callable[[], str],
    command: list[str],
    options: list[str],
) -> None:
    text, path = make(), tmp_path / file
    path.write_bytes(text.replace(MARK, "Привет").encode("cp1251"))
    assert_one_decode_line(run_cli, db, path, text, [*command, path, *options])
    check = ["--dry-run"] if command[0] == "import" else []
    run_cli(*command, path, *options, *check, "--encoding", "cp1251", db=db, expect=0)


@pytest.mark.parametrize(("name", "file", "make", "command", "options"), FORMATS, ids=IDS)
def test_the_reader_refuses_rot13_on_every_path_not_only_the_cli(
    db: Path,
    tmp_path: Path,
    name: str,
    file: str,
    make: Callable[[], str],
    command: list[str],
    options: list[str],
) -> None:
    path = tmp_path / file
    path.write_text(make().replace(MARK, "x"), encoding="utf-8")
    with store.session(db) as conn, pytest.raises(InputError) as err:
        if name == "labels":
            importing.import_labels(conn, path, encoding="rot13")
        else:
            fmt = command[2] if len(command) > 2 else adapters.NATIVE
            adapters.run_import(
                conn, fmt, path, dry_run=True, encoding="rot13", judge_model="m", judge_prompt_version="v1"
            )
    assert err.value.lines() == [
        "'rot13' is not a text encoding; give the file's character encoding, e.g. latin-1 or cp1251"
    ]


@pytest.mark.parametrize(
    ("name", "refused"),
    [
        ("utf-8", None),
        ("cp1251", None),
        ("utf-16", None),
        ("latin-1", None),
        ("rot13", "is not a text encoding"),
        ("base64", "is not a text encoding"),
        ("zlib", "is not a text encoding"),
        ("hex", "is not a text encoding"),
        ("no-such-codec", "unknown encoding"),
    ],
)
def test_text_encoding_accepts_character_encodings_only(name: str, refused: str | None) -> None:
    if refused is None:
        assert reading.text_encoding(name) == name
    else:
        with pytest.raises(InputError, match=refused):
            reading.text_encoding(name)


def test_json_stream_steps_over_big_members_and_counts_lines_across_reads() -> None:
    big = "x" * (3 * (1 << 16))  # more than one read of the stream
    text = (
        '{"skip": "'
        + big
        + '",\n "also": [1,\n 2],\n "cases": [\n {"a": 1},\n\n {"b": "'
        + big
        + '"},\n {"c": 3}\n ]}'
    )
    stream = reading.JsonStream(io.StringIO(text))
    assert stream.member({"cases"}) == "cases"
    got = [(index, line, sorted(value)) for index, line, value in stream.elements("cases")]
    assert got == [(0, 5, ["a"]), (1, 7, ["b"]), (2, 8, ["c"])]


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ('[\n{"a": 1},\n{"a": 2}\n', 4, "the JSON array is not closed"),
        ('[\n{"a": 1}\n{"a": 2}]', 3, "expected ',' or ']' between records"),
        ('[\n{"a": 1},\n,]', 3, "unexpected ','"),
        ('[\n{"a": \n1,}]', 3, "malformed JSON: Expecting property name"),
    ],
)
def test_json_stream_names_the_line_of_malformed_json(text: str, line: int, says: str) -> None:
    stream = reading.JsonStream(io.StringIO(text))
    with pytest.raises(reading.BadJson) as err:
        list(stream.elements())
    assert err.value.line == line and says in str(err.value)


# ---------------------------------------------------------------- one problem shape, two renderings


def _missing_model(path: Path) -> dict[str, Any]:
    recs = [{k: v for k, v in ascii_record(i).items() if k != "judge_model"} for i in (1, 2, 3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return {"fmt": adapters.NATIVE}


def _unknown_verdict(path: Path) -> dict[str, Any]:
    rec = ascii_record(1, claims=[{"id": "c1", "claim": "x", "verdict": "maybe"}])
    path.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    return {"fmt": adapters.NATIVE}


def _cp1251(path: Path) -> dict[str, Any]:
    path.write_bytes(
        (json.dumps(ascii_record(1, question="Кто?"), ensure_ascii=False) + "\n").encode("cp1251")
    )
    return {"fmt": adapters.NATIVE}


def _missing_column(path: Path) -> dict[str, Any]:
    path.write_text("answer_id,question,answer,verdict\na1,q,a,SUPPORTED\n", encoding="utf-8")
    return {"fmt": "csv", "judge_model": "m", "judge_prompt_version": "v1"}


def _failed_metric(path: Path) -> dict[str, Any]:
    doc = json.loads((ADAPTER_DATA / "deepeval_results_20240115_103000").read_text(encoding="utf-8"))
    doc["testCases"][2]["metricsData"][1].update(error="RateLimitError", verboseLogs=None)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return {"fmt": "deepeval", "judge_prompt_version": "v1"}


# (case, how to write the file, what the CLI says, what the Import page says instead)
RENDERINGS = [
    (
        "missing judge model",
        _missing_model,
        "judge_model: missing; put it in the file or set --judge-model",
        "missing; put it in the file or set the Judge model field",
    ),
    (
        "unknown verdict",
        _unknown_verdict,
        "or map it with --map maybe=UNSUPPORTED",
        "or map it with a line in Extra verdict spellings (More options) such as maybe=UNSUPPORTED",
    ),
    (
        "not UTF-8",
        _cp1251,
        "the file is not UTF-8: give its encoding with --encoding",
        "the file is not UTF-8: give its encoding with the Encoding choice above",
    ),
    (
        "missing column",
        _missing_column,
        "or say which columns hold them with --columns",
        "or say which columns hold them with the column dropdowns above",
    ),
    (
        "failed metric",
        _failed_metric,
        "no verdicts to import; or leave such test cases out with --skip-failed",
        "or leave such test cases out with the box to leave them out (More options)",
    ),
]


@pytest.mark.parametrize(
    ("case", "write", "cli_says", "page_says"), RENDERINGS, ids=[r[0] for r in RENDERINGS]
)
def test_the_cli_names_its_flags_and_the_page_its_controls_for_the_same_file(
    run_cli: RunCli,
    db: Path,
    tmp_path: Path,
    case: str,
    write: Callable[[Path], dict[str, Any]],
    cli_says: str,
    page_says: str,
) -> None:
    path = tmp_path / ("in.csv" if case == "missing column" else "in.jsonl")
    options = write(path)
    fmt = options.pop("fmt")
    with store.session(db) as conn, pytest.raises(InputError) as err:
        adapters.run_import(conn, fmt, path, dry_run=True, **options)
    rows = problems.problem_rows(err.value)
    assert any(page_says in row["problem"] for row in rows), rows
    assert not any(re.search(r"--[a-z]", row["problem"]) for row in rows), rows
    args = [] if fmt == adapters.NATIVE else ["--from", fmt]
    args += [x for k, v in options.items() for x in (f"--{k.replace('_', '-')}", v)]
    proc = run_cli("import", *args, path, db=db, expect=1)
    assert cli_says in proc.stderr
    assert err.value.lines(FLAGS) == proc.stderr.removeprefix("error: ").splitlines()


def test_a_problem_of_every_record_is_one_row_with_its_lines_and_count() -> None:
    found = [
        Problem("missing", "f.jsonl", n, "judge_model", ("set ", Option.JUDGE_MODEL)) for n in (1, 2, 3, 7)
    ]
    err = InputError(
        [*found, Problem("empty", "f.jsonl", 4, "id")],
        more=3,
        closing=Problem("nothing was imported", "f.jsonl"),
    )
    assert problems.problem_rows(err) == [
        {
            "lines": "1, 2, 3 and 1 more",
            "times": 4,
            "field": "judge_model",
            "problem": "missing; set the Judge model field",
        },
        {"lines": "4", "times": 1, "field": "id", "problem": "empty"},
        {"lines": "", "times": 3, "field": "", "problem": "more problems, not listed"},
    ]
    assert err.lines(FLAGS) == [
        *(f"f.jsonl:{n}: judge_model: missing; set --judge-model" for n in (1, 2, 3, 7)),
        "f.jsonl:4: id: empty",
        "... and 3 more problems",
        "f.jsonl: nothing was imported",
    ]


@pytest.mark.parametrize(
    ("problem", "text"),
    [
        (Problem("m"), "m"),
        (Problem("m", "f"), "f: m"),
        (Problem("m", "f", 3), "f:3: m"),
        (Problem("m", "f", 3, "claims.0.verdict"), "f:3: claims.0.verdict: m"),
        (Problem("m", "", None, "size"), "size: m"),
        (Problem("m", "f", None, "", ("give ", Option.ENCODING, " or not")), "f: m; give --encoding or not"),
    ],
)
def test_the_cli_line_of_a_problem(problem: Problem, text: str) -> None:
    assert problem.text(FLAGS) == text


def test_every_option_has_a_flag_and_every_import_option_a_control() -> None:
    assert set(FLAGS) == set(Option)
    assert set(problems.IMPORT_CONTROLS) == {
        Option.ENCODING,
        Option.JUDGE_MODEL,
        Option.JUDGE_PROMPT_VERSION,
        Option.MAP,
        Option.COLUMNS,
        Option.REVIEWER,
        Option.UPDATE,
        Option.SOURCE,
        Option.SKIP_FAILED,
    }
