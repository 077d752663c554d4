"""Claim-per-row tables: CSV, TSV, Parquet, or a pandas DataFrame.

One row per claim; rows of one answer share its `answer_id` (they need not be adjacent) and
repeat, or leave empty, its question, answer and chunks. Columns are named by a mapping
(`--columns answer_id=qid,question=q,answer=resp,chunks=ctx,claim=statement,verdict=label,
rationale=why`); a name not mapped is looked for under its own name. Chunks are one column
holding a JSON list (strings, or `{id, text, source}` objects), or repeated columns
`chunks_1 .. chunks_k` (or `chunk_1 .. chunk_k`, after the mapped name), whose number is the
chunk id; empty cells are skipped.

CSV and TSV are read with the standard library's csv reader (not pandas) so that a problem
names the file line the row starts on, counting the header as line 1, even when a quoted cell
spans lines; reading is strict, as for the label CSV (a quote left open, a row with more or
fewer cells than the header, a column named twice are refused) and decoding as in the JSONL
import. Parquet is read with pyarrow a batch of rows at a time; there a problem names the row
(1-based, the header not counted). Verdict spellings go through the
project's table (`models.VERDICT_ALIASES`) and `--map`, checked row by row.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, Option, Problem
from ..models import Verdict, parse_verdict, verdict_hint
from ..reading import (
    BadRecord,
    BadValue,
    Problems,
    checked,
    csv_error,
    json_value,
    nothing_imported,
    repeated_columns,
    row_width_problem,
    text_file,
)
from ._common import AdapterResult, Record

NAME = "csv"
FIELDS = (
    "answer_id",
    "question",
    "answer",
    "chunks",
    "claim",
    "verdict",
    "rationale",
    "claim_id",
    "evidence",
    "judge_model",
    "judge_prompt_version",
    "category",
)
# The answer model needs question and answer as text: a file without their columns is refused
# by name rather than by the model's type error.
REQUIRED = ("answer_id", "question", "answer", "claim", "verdict")
_ANSWER_FIELDS = ("question", "answer", "judge_model", "judge_prompt_version", "category")


_COLUMNS = ("check ", Option.COLUMNS)


def parse_columns(spec: str | None) -> dict[str, str]:
    """`answer_id=qid,claim=statement` -> {"answer_id": "qid", "claim": "statement"}."""
    out: dict[str, str] = {}
    for item in (spec or "").split(","):
        if not item.strip():
            continue
        target, sep, source = item.partition("=")
        target, source = target.strip(), source.strip()
        if not sep or not source:
            raise InputError(Problem(f"{item.strip()!r}: expected FIELD=COLUMN", hint=_COLUMNS))
        if target not in FIELDS:
            raise InputError(
                Problem(f"{item.strip()!r}: {target!r} is not one of {', '.join(FIELDS)}", hint=_COLUMNS)
            )
        if target in out:
            raise InputError(
                Problem(
                    f"{target} is mapped twice ({target}={out[target]} and "
                    f"{target}={source}); which column holds it is ambiguous",
                    hint=_COLUMNS,
                )
            )
        out[target] = source
    return out


def _cell(value: Any) -> Any:
    """Empty cells (blank text, None, NaN) become None; text is stripped of surrounding blanks."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str):
        value = value.strip()
        return value or None
    return value


def _as_id(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value) if isinstance(value, str | int) else None


def _format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".tsv", ".tab"):
        return "tsv"
    return "csv"


def read(
    path: str | Path,
    *,
    judge_model: str | None = None,
    judge_prompt_version: str | None = None,
    mapping: dict[str, Verdict] | None = None,
    encoding: str | None = None,
    columns: dict[str, str] | str | None = None,
    delimiter: str | None = None,
) -> AdapterResult:
    """Read a claim-per-row CSV, TSV (by extension, or `delimiter=`) or Parquet file."""
    path = Path(path)
    cols = parse_columns(columns) if isinstance(columns, str | None) else dict(columns)
    result = AdapterResult(
        tool=NAME,
        source=path,
        records=iter(()),
        mapping=dict(mapping or {}),
        judge_model=judge_model,
        judge_prompt_version=judge_prompt_version,
    )
    kind = _format(path)
    if kind == "parquet":
        result.records = _from_parquet(path, cols, mapping, result)
        return result
    sep = delimiter or ("\t" if kind == "tsv" else ",")
    result.records = _from_csv(path, encoding, sep, cols, mapping, result)
    return result


def preview(
    path: str | Path, *, encoding: str | None = None, delimiter: str | None = None, rows: int = 5
) -> tuple[list[str], list[list[Any]]]:
    """(header, the first `rows` rows) of a table, read as `read` reads it: for a mapping form
    that names the file's own columns. Raises InputError as `read` does (empty, undecodable)."""
    import itertools

    path = Path(path)
    if _format(path) == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            with pq.ParquetFile(path) as file:
                header = [str(c) for c in file.schema_arrow.names]
                first: list[list[Any]] = []
                for batch in file.iter_batches(batch_size=rows):
                    first = [list(r) for r in zip(*(c.to_pylist() for c in batch.columns), strict=True)]
                    break
        except (OSError, ValueError, pa.ArrowException) as exc:
            raise _not_parquet(path, None, exc) from exc
        return header, first
    sep = delimiter or ("\t" if _format(path) == "tsv" else ",")
    with text_file(path, encoding) as fh:
        reader = csv.reader(fh, delimiter=sep, strict=True)
        try:
            top = next(reader, None)
            if top is None:
                raise _empty(path)
            head = list(itertools.islice((r for r in reader if any(r)), rows))
        except csv.Error as exc:
            raise csv_error(path, reader.line_num, exc) from exc
    return [h.strip() for h in top], [list(r) for r in head]


def read_frame(
    frame: Any,
    *,
    source: str = "<DataFrame>",
    judge_model: str | None = None,
    judge_prompt_version: str | None = None,
    mapping: dict[str, Verdict] | None = None,
    columns: dict[str, str] | str | None = None,
) -> AdapterResult:
    """The same from a pandas DataFrame already in memory; problems name 1-based rows."""
    cols = parse_columns(columns) if isinstance(columns, str | None) else dict(columns)
    result = AdapterResult(
        tool=NAME,
        source=Path(source),
        records=iter(()),
        mapping=dict(mapping or {}),
        judge_model=judge_model,
        judge_prompt_version=judge_prompt_version,
    )
    header = [str(c) for c in frame.columns]
    rows = ((n, values) for n, values in enumerate(frame.itertuples(index=False, name=None), start=1))
    result.records = _group(Path(source), header, rows, cols, mapping, result)
    return result


def _empty(path: Path) -> InputError:
    return InputError(Problem("the file is empty", str(path)), closing=nothing_imported(path))


def _not_parquet(path: Path, row: int | None, exc: Exception) -> InputError:
    at = f"row {row}: " if row is not None else ""
    return InputError(
        Problem(f"{at}cannot read as Parquet: {exc}", str(path)), closing=nothing_imported(path)
    )


# Rows converted to Python at a time: the Parquet file is decoded batch by batch, so a small
# file of very compressible text never sits decoded in memory as a whole.
PARQUET_BATCH = 256


def _from_parquet(
    path: Path, cols: dict[str, str], mapping: dict[str, Verdict] | None, result: AdapterResult
) -> Iterator[Record]:
    import pyarrow as pa  # late: pyarrow is only needed for Parquet
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(path)
        header = [str(c) for c in file.schema_arrow.names]
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise _not_parquet(path, None, exc) from exc

    def rows() -> Iterator[tuple[int, Sequence[Any]]]:
        n = 0
        try:
            for batch in file.iter_batches(batch_size=PARQUET_BATCH):
                for values in zip(*(c.to_pylist() for c in batch.columns), strict=True):
                    n += 1
                    yield n, values
        except (OSError, ValueError, pa.ArrowException) as exc:
            raise _not_parquet(path, n + 1, exc) from exc
        # Arrow's allocator keeps freed pages for reuse: give them back before the import goes on.
        pa.default_memory_pool().release_unused()

    with file:
        yield from _group(path, header, rows(), cols, mapping, result)


def _from_csv(
    path: Path,
    encoding: str | None,
    sep: str,
    cols: dict[str, str],
    mapping: dict[str, Verdict] | None,
    result: AdapterResult,
) -> Iterator[Record]:
    with text_file(path, encoding) as fh:
        # strict, as the label CSV: a quote left open is an error where it happens, not a field
        # that swallows the rows after it.
        reader = csv.reader(fh, delimiter=sep, strict=True)
        start = 1  # the line the row being read starts on
        try:
            header = next(reader, None)
            if header is None:
                raise _empty(path)

            def rows() -> Iterator[tuple[int, Sequence[Any]]]:
                nonlocal start
                start = reader.line_num + 1
                for row in reader:
                    if any(row):  # csv gives [] for a blank line
                        yield start, row
                    start = reader.line_num + 1

            yield from _group(path, [h.strip() for h in header], rows(), cols, mapping, result)
        except csv.Error as exc:
            raise csv_error(path, start, exc) from exc


def _chunk_columns(header: list[str], base: str) -> list[tuple[int, str]]:
    for name in dict.fromkeys((base, base.removesuffix("s"), "chunk")):
        pat = re.compile(rf"{re.escape(name)}_(\d+)")
        found = [(int(m.group(1)), i) for i, h in enumerate(header) if (m := pat.fullmatch(h))]
        if found:
            return [(k, header[i]) for k, i in sorted(found)]
    return []


def _parse_chunks(value: Any) -> list[Any]:
    if isinstance(value, str):
        value = checked(value)
        if isinstance(value, BadRecord):
            raise ValueError(value.message)
    elif hasattr(value, "tolist"):  # a list column read from Parquet arrives as an ndarray
        value = value.tolist()
    if not isinstance(value, list):
        raise ValueError("must be a JSON list of chunk texts or {id, text, source} objects")
    return value


def _group(
    path: Path,
    header: list[str],
    rows: Iterable[tuple[int, Sequence[Any]]],
    cols: dict[str, str],
    mapping: dict[str, Verdict] | None,
    result: AdapterResult,
) -> Iterator[Record]:
    problems = Problems(path)
    twice = repeated_columns(header)
    if twice:
        raise problems.fail(1, twice)
    names = {f: cols.get(f, f) for f in FIELDS}
    index = {h: i for i, h in enumerate(header)}
    missing = [f"{names[f]} (for {f})" if names[f] != f else f for f in REQUIRED if names[f] not in index]
    if missing:
        raise problems.fail(
            1,
            f"missing column(s): {', '.join(missing)}; the file has {', '.join(header) or 'no columns'}",
            hint=("or say which columns hold them with ", Option.COLUMNS),
        )
    absent = [
        f"{names[f]} (for {f})" for f in FIELDS if f in cols and names[f] not in index and f != "chunks"
    ]
    chunk_json = index.get(names["chunks"])
    chunk_cols = (
        [] if chunk_json is not None else [(k, index[h]) for k, h in _chunk_columns(header, names["chunks"])]
    )
    if "chunks" in cols and chunk_json is None and not chunk_cols:
        absent.append(f"{names['chunks']} or {names['chunks']}_1.. (for chunks)")
    if absent:
        raise problems.fail(1, f"missing column(s): {', '.join(absent)}", hint=_COLUMNS)
    pos = {f: index.get(names[f]) for f in FIELDS}
    answers: dict[str, dict[str, Any]] = {}
    first_line: dict[str, int] = {}
    last_cell: dict[str, Any] = {}
    for line, row in rows:
        wrong = row_width_problem(len(row), len(header))
        if wrong:
            problems.add(line, wrong)
            continue

        def get(f: str, row: Sequence[Any] = row) -> Any:
            i = pos[f]
            return _cell(row[i]) if i is not None and i < len(row) else None

        aid = _as_id(get("answer_id"))
        if aid is None:
            problems.add(line, "missing: every row names its answer", names["answer_id"])
            continue
        claim = get("claim")
        if not isinstance(claim, str):
            problems.add(line, "missing: a row is one claim", names["claim"])
            continue
        raw = get("verdict")
        try:
            parse_verdict(raw if isinstance(raw, str) else None, mapping)
        except ValueError as exc:
            problems.add(line, str(exc), names["verdict"], verdict_hint(exc))
            continue
        chunks: list[Any] | None = None
        if chunk_json is not None:
            cell = _cell(row[chunk_json]) if chunk_json < len(row) else None
            if isinstance(cell, str) and cell == last_cell.get(aid):
                cell = None  # the same JSON text as this answer's earlier row: already parsed and checked
            elif isinstance(cell, str):
                last_cell[aid] = cell
            if cell is not None:
                try:
                    chunks = _parse_chunks(cell)
                except ValueError as exc:
                    problems.add(line, f"not a JSON list: {exc}", names["chunks"])
                    continue
        elif chunk_cols:
            chunks = [
                {"id": str(k), "text": str(c)}
                for k, i in chunk_cols
                if i < len(row) and (c := _cell(row[i])) is not None
            ]
            chunks = chunks or None
        rec = answers.get(aid)
        if rec is None:
            rec = answers[aid] = {"id": aid, "claims": [], "metadata": {}}
            first_line[aid] = line
            for f in _ANSWER_FIELDS:
                rec[f] = get(f)
            rec["chunks"] = chunks or []
        else:
            for f in _ANSWER_FIELDS:
                v = get(f)
                if v is not None and rec[f] is not None and v != rec[f]:
                    problems.add(line, f"differs from line {first_line[aid]} for answer {aid!r}", names[f])
                elif v is not None:
                    rec[f] = v
            if chunks is not None:
                if rec["chunks"] and chunks != rec["chunks"]:
                    problems.add(
                        line, f"differs from line {first_line[aid]} for answer {aid!r}", names["chunks"]
                    )
                else:
                    rec["chunks"] = chunks
        evidence, why = get("evidence"), get("rationale")
        rec["claims"].append(
            {
                "id": _as_id(get("claim_id")),
                "text": claim,
                "verdict": raw,
                "rationale": why if isinstance(why, str) else None,
                "evidence": [e.strip() for e in str(evidence).split(";") if e.strip()] if evidence else [],
            }
        )
    if not answers and not problems:
        problems.add(None, "no rows in the file")
    for aid, rec in answers.items():
        for f in ("question", "answer"):
            rec[f] = "" if rec[f] is None else rec[f]  # their columns are there, left empty
        try:  # a Parquet or DataFrame cell may hold any value; only JSON values go on
            answers[aid] = json_value(rec)
        except BadValue as exc:
            problems.add(first_line[aid], str(exc))
    problems.raise_if_any()
    for aid, rec in answers.items():
        yield first_line[aid], rec


def sniff_name(path: Path) -> bool:
    return path.suffix.lower() in (".csv", ".tsv", ".tab", ".parquet", ".pq")


__all__ = ["FIELDS", "NAME", "parse_columns", "read", "read_frame", "sniff_name"]
