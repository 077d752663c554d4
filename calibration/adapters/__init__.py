"""Adapters: judged answers from the files other evaluation tools leave behind.

Each adapter reads one tool's real output and yields records in this tool's import shape
(`models.JudgedAnswerIn`) as (line, dict) pairs, the same pairs `importing.iter_json_records`
yields, so `importing.import_records` validates and writes them in one transaction:

    result = adapters.read("deepeval", path, judge_prompt_version="v1")
    report = import_records(db, result.records, source=result.source, mapping=result.mapping,
                            judge_model=result.judge_model,
                            judge_prompt_version=result.judge_prompt_version)
    print(*result.mapping_lines(report.mappings), *result.notes, sep="\\n")

Problems in the tool's shape are collected (up to 20) and raised as InputError with
"FILE:LINE: field: message" lines while `import_records` is still inside its transaction,
so a bad file writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from . import deepeval, ragas, refchecker, table
from ._common import AdapterResult

if TYPE_CHECKING:
    from sqlite_utils import Database

    from ..importing import ImportReport

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
    key = ALIASES.get(name.casefold(), name.casefold())
    if key not in ADAPTERS:
        raise InputError(f"--from {name!r}: unknown; use one of {', '.join(names())}")
    return ADAPTERS[key]


def detect(path: str | Path) -> str | None:
    """The adapter for `path` when its name or first 64 KiB say so unambiguously, else None.

    None also for this tool's own JSONL, which needs no adapter.
    """
    path = Path(path)
    if table.sniff_name(path):
        return table.NAME
    try:
        with path.open("rb") as fh:
            head = fh.read(_HEAD).decode("utf-8", errors="ignore")
    except OSError:
        return None
    hits = [name for name, sniff in _SNIFFERS.items() if sniff(head)]
    return hits[0] if len(hits) == 1 else None


def read(name: str, path: str | Path, **options: Any) -> AdapterResult:
    """`ADAPTERS[name](path, **options)`, with the name checked."""
    return get(name)(path, **options)


def import_file(db: Database, name: str, path: str | Path, *, dry_run: bool = False,
                **options: Any) -> tuple[ImportReport, AdapterResult]:
    """Read `path` with adapter `name` and import it, all or nothing; the report and the read result.

    `dry_run=True`: the same import rolled back at its end (`importing.import_records`).
    """
    from ..importing import import_records  # late: the adapters themselves never need the store

    result = read(name, path, **options)
    report = import_records(db, result.records, source=result.source, mapping=result.mapping,
                            judge_model=result.judge_model,
                            judge_prompt_version=result.judge_prompt_version, dry_run=dry_run)
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
        raise InputError(f"--from {name!r}: unknown; use one of {', '.join(names())}")
    return key


__all__ = ["ADAPTERS", "ALIASES", "OPTIONS", "AdapterResult", "canonical", "detect", "get", "import_file",
           "names", "read"]
