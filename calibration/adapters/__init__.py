"""Adapters: judged answers from the files other evaluation tools leave behind.

Each adapter reads one tool's real output and yields records in this tool's import shape
(`models.JudgedAnswerIn`) as (line, dict) pairs, the same pairs `importing.iter_json_records`
yields, so `importing.import_records` validates and writes them in one transaction:

    result = adapters.read("deepeval", path, judge_prompt_version="v1")
    report = import_records(db, result.records, source=result.source, mapping=result.mapping,
                            judge_model=result.judge_model,
                            judge_prompt_version=result.judge_prompt_version)
    print(*result.mapping_lines(report.mappings), *map(errors.phrase, result.notes), sep="\\n")

Problems in the tool's shape are collected (up to 20, `reading.Problems`) and raised as one
InputError of `errors.Problem`s (file, line, field, message, hint) while `import_records` is
still inside its transaction, so a bad file writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Hint, InputError
from ..reading import count_lines, head_text
from . import deepeval, ragas, refchecker, table
from ._common import AdapterResult

if TYPE_CHECKING:
    from ..importing import ImportReport
    from ..store import Database

Reader = Callable[..., AdapterResult]

ADAPTERS: dict[str, Reader] = {
    deepeval.NAME: deepeval.read,
    ragas.NAME: ragas.read,
    refchecker.NAME: refchecker.read,
    table.NAME: table.read,
}
ALIASES: dict[str, str] = {"tsv": table.NAME, "parquet": table.NAME, "table": table.NAME}
_SNIFFERS: dict[str, Callable[[str], bool]] = {
    deepeval.NAME: deepeval.sniff,
    ragas.NAME: ragas.sniff,
    refchecker.NAME: refchecker.sniff,
}
_HEAD = 1 << 16


def names() -> list[str]:
    """The adapter names `--from` accepts."""
    return [*ADAPTERS, *ALIASES]


def get(name: str) -> Reader:
    return ADAPTERS[canonical(name)]


def detect(path: str | Path) -> str | None:
    """The adapter for `path` when its name or first 64 KiB say so unambiguously, else None.

    None also for this tool's own JSONL, which needs no adapter.
    """
    path = Path(path)
    if table.sniff_name(path):
        return table.NAME
    head = head_text(path, _HEAD)
    hits = [name for name, sniff in _SNIFFERS.items() if sniff(head)]
    return hits[0] if len(hits) == 1 else None


def read(name: str, path: str | Path, **options: Any) -> AdapterResult:
    """`ADAPTERS[name](path, **options)`, with the name checked."""
    return get(name)(path, **options)


def import_file(
    db: Database, name: str, path: str | Path, *, dry_run: bool = False, **options: Any
) -> tuple[ImportReport, AdapterResult]:
    """Read `path` with adapter `name` and import it, all or nothing; the report and the read result.

    `dry_run=True`: the same import rolled back at its end (`importing.import_records`).
    """
    from ..importing import import_records  # late: the adapters themselves never need the store

    result = read(name, path, **options)
    report = import_records(
        db,
        result.records,
        source=result.source,
        mapping=result.mapping,
        judge_model=result.judge_model,
        judge_prompt_version=result.judge_prompt_version,
        dry_run=dry_run,
    )
    return report, result


# The options each adapter takes beyond judge_model, judge_prompt_version, mapping and encoding.
OPTIONS: dict[str, tuple[str, ...]] = {
    deepeval.NAME: ("metric", "id_key", "skip_failed"),
    ragas.NAME: ("metric", "id_prefix", "skip_failed"),
    refchecker.NAME: ("id_field",),
    table.NAME: ("columns", "delimiter"),
}


def canonical(name: str) -> str:
    """The adapter's own name for `name` or an alias (tsv, parquet -> csv); InputError if unknown."""
    key = ALIASES.get(name.casefold(), name.casefold())
    if key not in ADAPTERS:
        raise InputError(f"unknown format {name!r}; use one of {', '.join(names())}")
    return key


# ---------------------------------------------------------------- one entry for a page


NATIVE = "jsonl"  # this tool's own JSONL / JSON array: no adapter


@dataclass
class Outcome:
    """What an import (or its dry run) did: the report's lines, the mapping applied, the notes."""

    report: ImportReport
    counts: list[str]
    mapping: list[str]
    notes: list[Hint] = field(default_factory=list)


def guess(path: str | Path) -> str | None:
    """`detect`, and this tool's JSONL for a .jsonl / .json file no adapter claims."""
    found = detect(path)
    if found is None and Path(path).suffix.lower() in (".jsonl", ".json", ".ndjson"):
        return NATIVE
    return found


def _with_progress(
    records: Iterator[tuple[int, Any]], total_lines: int, progress: Callable[[float], object]
) -> Iterator[tuple[int, Any]]:
    step = max(1, total_lines // 100)
    last = 0
    for line, value in records:
        if line - last >= step:
            progress(min(1.0, line / total_lines))
            last = line
        yield line, value
    progress(1.0)


def run_import(
    db: Database,
    name: str,
    path: str | Path,
    *,
    dry_run: bool = False,
    progress: Callable[[float], object] | None = None,
    judge_model: str | None = None,
    judge_prompt_version: str | None = None,
    mapping: dict[str, Any] | None = None,
    encoding: str | None = None,
    **options: Any,
) -> Outcome:
    """Import `path` as `name` (an adapter, or "jsonl" for this tool's shape), all or nothing.

    The same code as `import` / `import --from` on the CLI, hence the same limits and
    messages. `progress(fraction)` is told how far through the file's lines the import is.
    """
    from ..importing import import_records, iter_json_records

    path = Path(path)
    total = count_lines(path) if progress is not None else 1
    if name == NATIVE:
        if options:
            raise InputError(f"{', '.join(sorted(options))}: options of an adapter, not of this tool's JSONL")
        records: Iterator[tuple[int, Any]] = iter_json_records(path, encoding)
        if progress is not None:
            records = _with_progress(records, total, progress)
        report = import_records(
            db,
            records,
            source=path,
            judge_model=judge_model,
            judge_prompt_version=judge_prompt_version,
            mapping=mapping,
            dry_run=dry_run,
        )
        lines = report.lines()
        cut = lines.index("verdict spellings used:") if "verdict spellings used:" in lines else len(lines)
        return Outcome(report, lines[:cut], [x.strip() for x in lines[cut + 1 :]])
    key = canonical(name)
    bad = sorted(set(options) - set(OPTIONS[key]))
    if bad:
        raise InputError(f"{', '.join(bad)}: not an option of the {key} adapter")
    result = read(
        key,
        path,
        judge_model=judge_model,
        judge_prompt_version=judge_prompt_version,
        mapping=mapping,
        encoding=encoding,
        **options,
    )
    if progress is not None:
        result.records = _with_progress(result.records, total, progress)
    report = import_records(
        db,
        result.records,
        source=result.source,
        mapping=result.mapping,
        judge_model=result.judge_model,
        judge_prompt_version=result.judge_prompt_version,
        dry_run=dry_run,
    )
    lines = report.lines()
    cut = lines.index("verdict spellings used:") if "verdict spellings used:" in lines else len(lines)
    return Outcome(report, lines[:cut], result.mapping_lines(report.mappings), list(result.notes))


__all__ = [
    "ADAPTERS",
    "ALIASES",
    "NATIVE",
    "OPTIONS",
    "AdapterResult",
    "Outcome",
    "canonical",
    "detect",
    "get",
    "guess",
    "import_file",
    "names",
    "read",
    "run_import",
]
