"""Export calibrated labels: lossless JSONL, a golden set, CSV.

Formats (`export(..., fmt=...)`):

* ``jsonl`` — lossless, one line per claim. Each line carries the answer (question, answer,
  category, metadata, holdout flag, chunks), the claim, the final human verdict and how it was
  reached, every reviewer's current label (blind and final verdicts with their timestamps,
  reconcile kind, slip, evidence chunk ids, note), the claim's whole label-event history in
  order, the adjudication, every judge verdict with its run, rationale and whether it agrees
  with the final human verdict, the cycles the claim was sampled in, and the tool version.
* ``golden`` — one line per answer in the shape of a RAG golden set (seed 000):
  ``{"id", "question", "expected_source", "reference_answer"}``. ``reference_answer`` joins, in
  claim order, only the claims whose final human verdict is SUPPORTED; ``expected_source``
  names the chunks reviewers gave as evidence (their ``source`` where the chunk has one, else
  the chunk id), joined with "; " so a single source reads exactly as in the seed; the lists
  ``expected_chunk_ids`` / ``expected_sources`` sit beside it for recall@k scripts, and
  ``key_facts`` lists those SUPPORTED claims one by one (the facts an answer must contain, for
  a coverage check). A lead may replace an item's ``reference_answer`` with a written one
  (`set_reference_answer`, stored with who and when; the newest edit wins): the claims a
  reviewer confirmed do not always answer the question. Answers with no human-SUPPORTED
  claim are left out: they would give an empty reference.

  Reading it with seed 000's recall@k script: that script reads one JSON object per line and
  uses ``item["question"]`` and ``item["expected_chunk_id"]`` (a single id). This file's lines
  are JSON objects with ``question``; the expected chunks are the list ``expected_chunk_ids``
  (or ``expected_sources`` where chunks carry a source, e.g. "docs/ssl-setup.md#chunk-14"), so
  the script's one membership test becomes "any expected id is among the returned ids":
  ``hits += any(c in returned_ids for c in item["expected_chunk_ids"])``, and items whose list
  is empty (reviewers cited no chunk) are skipped rather than counted as misses.
* ``csv`` — one row per claim for spreadsheets: UTF-8 with a BOM (Excel then reads Cyrillic
  correctly) and every cell starting with ``= + - @``, tab or carriage return prefixed with a
  single quote, so a spreadsheet shows imported text instead of evaluating it as a formula.

The final human verdict and its status come from the one final-label reader
(`store.final_labels`), so an export never disagrees with the reports.

Restore. The JSONL export goes back into a database with the ordinary commands:
``python -m calibration import EXPORT.jsonl`` restores answers, chunks, claims, judge runs and
judge verdicts; ``python -m calibration import-labels EXPORT.jsonl`` then restores label
events, the reviewers' current labels and adjudications. Both recognise the export by its
``format`` field (`is_export_file`) and hand it to `importing.restore_answers` /
`importing.restore_labels`; ``python -m calibration restore EXPORT.jsonl`` does both in one
transaction into an empty database. `--judge-run` keeps that run's verdicts only, and `--cycle` /
`--only-final` keep a subset of the claims. The export is not a backup of the database: cycles,
the tuning/holdout split and its seal, guidelines, reference edits, judge-lab runs and settings
are not in it; `calibration.backup` writes and restores all of them.

Files are written to a temporary file beside the target and renamed into place, so a reader
never sees half an export, and rows are streamed in batches rather than loaded at once.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from . import frameworks, mlflow_traces, store
from .errors import InputError, NotFoundError, Option, Problem
from .fmt import plural
from .reading import checked, open_text
from .store import ClaimDetail, Database, ReferenceEdit
from .text import check_text, neutralise_cell
from .vocab import ClaimStatus, Verdict

EXPORT_FORMAT = "judge-calibration-export"
FORMAT_VERSION = 1
FORMATS = ("jsonl", "golden", "csv", *frameworks.FORMATS)
# final_status of a claim a reviewer marked unclear and nobody adjudicated
NEEDS_DISCUSSION = ClaimStatus.NEEDS_DISCUSSION.value
# Claims fetched per query: big enough that per-query overhead vanishes, small enough that
# memory stays flat however many claims there are.
BATCH = 1000
# Cells a spreadsheet would evaluate (OWASP "CSV injection") are neutralised by
# text.neutralise_cell: formula starters, also after blanks, BOM or as full-width forms.


# ---------------------------------------------------------------- scope and records


@dataclass(frozen=True, slots=True)
class ExportScope:
    """Which claims an export covers; see `resolve_scope`."""

    run_id: int | None = None
    run_name: str | None = None
    cycle_id: int | None = None
    cycle_name: str | None = None
    cycle_run_id: int | None = None
    only_final: bool = False


def resolve_scope(
    db: Database, *, judge_run: str | None = None, cycle: str | None = None, only_final: bool = False
) -> ExportScope:
    """Resolve names to ids; unknown names raise NotFoundError with the known ones."""
    run_id = run_name = None
    if judge_run:
        run = store.find_judge_run(db, judge_run)
        run_id, run_name = run.id, run.name
    cycle_id = cycle_run = None
    if cycle:
        cycle_id = store.cycle_id(db, cycle)
        cycle_run = store.cycles.cycle_judge_run_id(db, cycle_id)
    return ExportScope(run_id, run_name, cycle_id, cycle, cycle_run, only_final)


def _record(row: ClaimDetail, final: str | None, status: ClaimStatus, version: str) -> dict[str, Any]:
    chunks = sorted(json.loads(row.chunks_json))
    labels = sorted(json.loads(row.labels_json))
    events = sorted(json.loads(row.events_json))  # by event id: the order they were given in
    verdicts = sorted(json.loads(row.verdicts_json))  # by run id: oldest run first
    adjudication = json.loads(row.adjudication_json) if row.adjudication_json else None
    cycles = [name for _id, name in sorted(json.loads(row.cycles_json))]
    return {
        "format": EXPORT_FORMAT,
        "format_version": FORMAT_VERSION,
        "tool_version": version,
        "answer_id": row.answer_id,
        "question": row.question,
        "answer": row.answer,
        "category": row.category,
        "metadata": json.loads(row.metadata) if row.metadata else {},
        "holdout": bool(row.holdout),
        "chunks": [{"id": cid, "text": t, "source": src} for _pos, cid, t, src in chunks],
        "claim_id": row.claim_id,
        "claim_position": row.position,
        "claim": row.text,
        "final_verdict": final,
        "final_status": status.value,
        "adjudication": None
        if adjudication is None
        else dict(zip(("verdict", "adjudicator", "note", "created_at"), adjudication, strict=True)),
        "reviewers": [
            {
                "reviewer": rev,
                "status": st,
                "blind_verdict": bv,
                "blind_at": ba,
                "final_verdict": fv,
                "final_at": fa,
                "reconciled": rec,
                "slip": bool(slip),
                "evidence": ev,
                "note": note,
                "cycle": cyc,
                "updated_at": upd,
            }
            for rev, st, bv, ba, fv, fa, rec, slip, ev, note, cyc, upd in labels
        ],
        "events": [
            {
                "reviewer": rev,
                "kind": kind,
                "verdict": v,
                "evidence": ev,
                "note": note,
                "cycle": cyc,
                "judge_run": f"{model}@{ver}" if model is not None else None,
                "created_at": ts,
            }
            for _id, rev, kind, v, ev, note, cyc, model, ver, ts in events
        ],
        "judge": [
            {
                "run": f"{model}@{ver}",
                "judge_model": model,
                "prompt_version": ver,
                "verdict": v,
                "raw_verdict": raw,
                "rationale": rationale,
                "evidence": ev,
                "agrees": None if final is None else v == final,
            }
            for _rid, model, ver, v, raw, rationale, ev in verdicts
        ],
        "cycles": cycles,
    }


def iter_records(db: Database, scope: ExportScope = ExportScope()) -> Iterator[dict[str, Any]]:
    """The export records of every claim in scope, ordered by answer id and claim position."""
    from . import __version__

    ids = store.exports.claim_ids_in_scope(
        db, run_id=scope.run_id, cycle_id=scope.cycle_id, cycle_run_id=scope.cycle_run_id
    )
    for start in range(0, len(ids), BATCH):
        batch = ids[start : start + BATCH]
        rows = store.exports.claim_details(db, batch, run_id=scope.run_id)
        finals = store.final_labels(db, batch)
        for pk in batch:
            final, status = finals[pk]
            if scope.only_final and final is None:
                continue
            yield _record(rows[pk], final, status, __version__)


# ---------------------------------------------------------------- writers


def _finite(value: Any) -> Any:
    """`value` with NaN and ±Infinity (stored before imports refused them) as null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def json_line(value: Any) -> str:
    """One line of valid JSON (RFC 8259): NaN and Infinity, which are not JSON, are written as null."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(value), ensure_ascii=False, allow_nan=False)


def write_jsonl(records: Iterable[dict[str, Any]], fh: TextIO) -> int:
    n = 0
    for rec in records:
        fh.write(json_line(rec) + "\n")
        n += 1
    return n


def _answer_groups(records: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    # Records arrive ordered by answer, so one answer's claims are consecutive.
    group: list[dict[str, Any]] = []
    for rec in records:
        if group and rec["answer_id"] != group[0]["answer_id"]:
            yield group
            group = []
        group.append(rec)
    if group:
        yield group


def golden_item(claims: Sequence[dict[str, Any]], reference: str | None = None) -> dict[str, Any] | None:
    """One golden-set line from the export records of one answer; None without a SUPPORTED claim.

    `reference`: a lead's written reference answer, used instead of the joined claims.
    """
    supported = [c["claim"].strip() for c in claims if c["final_verdict"] == Verdict.SUPPORTED]
    if not supported:
        return None
    first = claims[0]
    cited: set[str] = set()
    for c in claims:
        for lab in c["reviewers"]:
            if lab["status"] == "labeled":
                cited.update(lab["evidence"])
    # Chunk order, not citation order: stable however reviewers happened to click.
    chunks = [ch for ch in first["chunks"] if ch["id"] in cited]
    sources: list[str] = []
    for ch in chunks:
        src = ch["source"] or ch["id"]
        if src not in sources:
            sources.append(src)
    return {
        "id": first["answer_id"],
        "question": first["question"],
        "expected_source": "; ".join(sources),
        "reference_answer": reference if reference is not None else " ".join(supported),
        "key_facts": supported,
        "expected_chunk_ids": [ch["id"] for ch in chunks],
        "expected_sources": sources,
        "category": first["category"],
    }


@dataclass(frozen=True, slots=True)
class GoldenCounts:
    written: int  # golden items (answers) written
    skipped: int  # answers left out: no claim humans found SUPPORTED
    no_source: int  # items written with an empty expected_source: reviewers chose no evidence

    def warning(self) -> str | None:
        """The line a lead must see before using the set for recall@k; None when all have a source."""
        if not self.no_source:
            return None
        have = "has" if self.written == 1 else "have"
        return (
            f"{self.no_source:,} of {plural(self.written, 'golden item')} {have} no expected_source: "
            "reviewers chose no evidence chunks"
        )


def write_golden_counts(
    records: Iterable[dict[str, Any]], fh: TextIO, references: Mapping[str, str] | None = None
) -> GoldenCounts:
    """Write golden-set lines; count them, the answers left out and the items without a source.

    `references`: answer id -> a lead's reference answer (`reference_answers`).
    """
    refs = references or {}
    written = skipped = no_source = 0
    for group in _answer_groups(records):
        item = golden_item(group, refs.get(group[0]["answer_id"]))
        if item is None:
            skipped += 1
            continue
        fh.write(json_line(item) + "\n")
        written += 1
        no_source += not item["expected_source"]
    return GoldenCounts(written, skipped, no_source)


def _reviewer_summary(lab: dict[str, Any]) -> str:
    if lab["status"] != "labeled":
        return f"{lab['reviewer']}: {lab['status']}"
    text = f"{lab['reviewer']}: {lab['final_verdict']}"
    if lab["reconciled"] is not None:
        text += f" (blind {lab['blind_verdict']}, {lab['reconciled']}{', slip' if lab['slip'] else ''})"
    return text


CSV_BASE_COLUMNS = (
    "answer_id",
    "claim_id",
    "category",
    "question",
    "answer",
    "claim",
    "final_verdict",
    "final_status",
    "reviewer_labels",
    "evidence",
    "notes",
    "cycles",
)


def csv_columns(runs: Sequence[str]) -> list[str]:
    cols = list(CSV_BASE_COLUMNS)
    for run in runs:
        cols += [f"judge {run}", f"agrees {run}", f"rationale {run}"]
    return cols


def csv_row(rec: dict[str, Any], runs: Sequence[str]) -> list[str]:
    def yes_no(v: bool | None) -> str:
        return "" if v is None else ("yes" if v else "no")

    evidence: list[str] = []
    for lab in rec["reviewers"]:
        evidence += [e for e in lab["evidence"] if e not in evidence]
    notes = [f"{lab['reviewer']}: {lab['note']}" for lab in rec["reviewers"] if lab["note"]]
    if rec["adjudication"] and rec["adjudication"]["note"]:
        notes.append(f"{rec['adjudication']['adjudicator']} (adjudication): {rec['adjudication']['note']}")
    cells = [
        rec["answer_id"],
        rec["claim_id"],
        rec["category"] or "",
        rec["question"],
        rec["answer"],
        rec["claim"],
        rec["final_verdict"] or "",
        rec["final_status"],
        "; ".join(_reviewer_summary(lab) for lab in rec["reviewers"]),
        ";".join(evidence),
        "\n".join(notes),
        "; ".join(rec["cycles"]),
    ]
    by_run = {j["run"]: j for j in rec["judge"]}
    for run in runs:
        j = by_run.get(run)
        cells += ["", "", ""] if j is None else [j["verdict"], yes_no(j["agrees"]), j["rationale"] or ""]
    return [neutralise_cell(c) for c in cells]


def write_csv(records: Iterable[dict[str, Any]], fh: TextIO, runs: Sequence[str]) -> int:
    """CSV rows (the caller opens `fh` with the utf-8-sig encoding for the BOM)."""
    writer = csv.writer(fh, lineterminator="\r\n")
    writer.writerow([neutralise_cell(c) for c in csv_columns(runs)])
    n = 0
    for rec in records:
        writer.writerow(csv_row(rec, runs))
        n += 1
    return n


# ---------------------------------------------------------------- export


@dataclass(frozen=True, slots=True)
class ExportReport:
    path: Path
    fmt: str
    rows: int  # lines (JSONL, golden) or data rows (CSV) written
    skipped_answers: int = 0  # golden only: answers without a human-SUPPORTED claim
    no_source: int = 0  # golden only: items with an empty expected_source
    framework: frameworks.FrameworkCounts | None = None  # deepeval, ragas, langfuse

    def lines(self) -> list[str]:
        if self.framework is not None:
            return [f"{self.path}: golden set for {self.fmt}", *self.framework.lines()]
        unit = "answer" if self.fmt == "golden" else "claim"
        out = [f"{self.path}: {plural(self.rows, unit)} ({self.fmt})"]
        if self.skipped_answers:
            left_out = plural(self.skipped_answers, "answer")
            out.append(f"  {left_out} left out: no claim humans found SUPPORTED")
        warning = GoldenCounts(self.rows, self.skipped_answers, self.no_source).warning()
        if warning:
            out.append(f"warning: {warning}")
        return out


def atomic_write(path: Path, write: Callable[[TextIO], Any], *, encoding: str = "utf-8") -> Any:
    """Run `write` on a temporary file beside `path`, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # newline="": the CSV writer sets its own line ends; JSONL writes plain "\n".
        with os.fdopen(fd, "w", encoding=encoding, newline="") as fh:
            result = write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return result


def _runs_in_scope(db: Database, scope: ExportScope) -> list[str]:
    if scope.run_name is not None:
        return [scope.run_name]
    return [r.name for r in store.judge_runs(db)]


def export(
    db: Database,
    out: str | Path,
    *,
    fmt: str = "jsonl",
    judge_run: str | None = None,
    cycle: str | None = None,
    only_final: bool = False,
) -> ExportReport:
    """Write the claims in scope to `out` in `fmt` (jsonl, golden or csv), atomically."""
    if fmt not in FORMATS:
        raise InputError(
            Problem(f"unknown format {fmt!r}", hint=(Option.FORMAT, f" takes one of {', '.join(FORMATS)}"))
        )
    out = Path(out)
    scope = resolve_scope(db, judge_run=judge_run, cycle=cycle, only_final=only_final)
    # One read transaction, so a label written meanwhile cannot make the file inconsistent.
    with store.read_snapshot(db):
        records = iter_records(db, scope)
        if fmt == "jsonl":
            return ExportReport(out, fmt, atomic_write(out, lambda fh: write_jsonl(records, fh)))
        if fmt == "golden":
            refs = reference_answers(db)
            counts = atomic_write(out, lambda fh: write_golden_counts(records, fh, refs))
            return ExportReport(out, fmt, counts.written, counts.skipped, counts.no_source)
        if fmt in frameworks.FORMATS:
            items = frameworks.answer_items(_answer_groups(records), reference_answers(db))
            found = atomic_write(out, lambda fh: _write_framework(fmt, items, fh))
            return ExportReport(out, fmt, found.items, framework=found)
        runs = _runs_in_scope(db, scope)
        return ExportReport(
            out, fmt, atomic_write(out, lambda fh: write_csv(records, fh, runs), encoding="utf-8-sig")
        )


def _write_framework(fmt: str, items: list[dict[str, Any]], fh: TextIO) -> frameworks.FrameworkCounts:
    from . import __version__

    return frameworks.write(fmt, items, fh, tool=__version__)


def to_mlflow(
    db: Database,
    server: mlflow_traces.Server,
    *,
    judge_run: str | None = None,
    cycle: str | None = None,
    assessment: str | None = None,
) -> mlflow_traces.Written:
    """Write the reviewers' final labels of the answers `judge_run` (default: the newest run)
    judged from MLflow back to their traces as human assessments named `assessment` (default: the
    run's prompt version, the judge's assessment name as `import --from mlflow` keeps it), in the
    judge's words (`mlflow_traces.write_back`)."""
    run = store.find_judge_run(db, judge_run)
    scope = resolve_scope(db, judge_run=run.name, cycle=cycle)
    name = assessment or run.prompt_version
    with store.read_snapshot(db):
        groups = _answer_groups(iter_records(db, scope))
        return mlflow_traces.write_back(server, groups, run=run.name, assessment=name)


def golden_counts(
    db: Database, *, judge_run: str | None = None, cycle: str | None = None, only_final: bool = False
) -> GoldenCounts:
    """What a golden-set export of the scope would hold, without keeping the file (for a page's warning)."""
    scope = resolve_scope(db, judge_run=judge_run, cycle=cycle, only_final=only_final)
    return write_golden_counts(iter_records(db, scope), io.StringIO(), reference_answers(db))


def framework_counts(
    db: Database,
    fmt: str,
    *,
    judge_run: str | None = None,
    cycle: str | None = None,
    only_final: bool = False,
) -> frameworks.FrameworkCounts:
    """What a framework export (`frameworks.FORMATS`) of the scope would hold, without keeping it."""
    scope = resolve_scope(db, judge_run=judge_run, cycle=cycle, only_final=only_final)
    items = frameworks.answer_items(_answer_groups(iter_records(db, scope)), reference_answers(db))
    return _write_framework(fmt, items, io.StringIO())


def export_bytes(
    db: Database,
    *,
    fmt: str = "jsonl",
    judge_run: str | None = None,
    cycle: str | None = None,
    only_final: bool = False,
) -> bytes:
    """The same export in memory, for a page's download button (scopes there are cycle-sized)."""
    scope = resolve_scope(db, judge_run=judge_run, cycle=cycle, only_final=only_final)
    buf = io.StringIO()
    records = iter_records(db, scope)
    if fmt == "jsonl":
        write_jsonl(records, buf)
    elif fmt == "golden":
        write_golden_counts(records, buf, reference_answers(db))
    elif fmt == "csv":
        write_csv(records, buf, _runs_in_scope(db, scope))
        return buf.getvalue().encode("utf-8-sig")
    elif fmt in frameworks.FORMATS:
        _write_framework(fmt, frameworks.answer_items(_answer_groups(records), reference_answers(db)), buf)
    else:
        raise InputError(f"unknown export format {fmt!r}")
    return buf.getvalue().encode("utf-8")


# ---------------------------------------------------------------- reference answers of the golden set


def reference_answers(db: Database) -> dict[str, str]:
    """Answer id -> the newest reference answer a lead wrote for it."""
    return {k: e.text for k, e in store.checks.reference_edits(db).items()}


def set_reference_answer(db: Database, answer_id: str, text: str, *, edited_by: str) -> ReferenceEdit:
    """Store a lead's reference answer for the golden export of `answer_id` (history is kept)."""
    text = check_text(text.strip(), "reference answer")
    if not text:
        raise InputError("reference answer: empty; write the answer the question expects")
    if not edited_by.strip():
        raise InputError("reference answer: who edits it must be named")
    with store.write(db):
        if not store.checks.answer_exists(db, answer_id):
            raise NotFoundError(f"answer {answer_id!r}: not in the database")
        return store.checks.add_reference_edit(db, answer_id, text, edited_by.strip())


def reference_history(db: Database, answer_id: str) -> list[ReferenceEdit]:
    """Every reference edit of `answer_id`, oldest first (who, when, text)."""
    return store.checks.reference_history(db, answer_id)


def golden_items(
    db: Database, *, judge_run: str | None = None, cycle: str | None = None, only_final: bool = False
) -> list[dict[str, Any]]:
    """The golden set's items as the export would write them (for a page that edits references)."""
    scope = resolve_scope(db, judge_run=judge_run, cycle=cycle, only_final=only_final)
    refs = reference_answers(db)
    with store.read_snapshot(db):
        items = [golden_item(g, refs.get(g[0]["answer_id"])) for g in _answer_groups(iter_records(db, scope))]
    return [it for it in items if it is not None]


# ---------------------------------------------------------------- recognising an export


def is_export_file(path: str | Path, encoding: str | None = None) -> bool:
    """Whether the file's first record is a line of this tool's JSONL export."""
    try:
        with open_text(Path(path), encoding) as fh:
            # Look at the first character before reading a line: a JSON array written on one
            # line would otherwise be read whole just to be told apart.
            ch = fh.read(1)
            while ch and ch.isspace():
                ch = fh.read(1)
            if ch != "{":
                return False
            rec = checked(ch + fh.readline())  # the one JSON parser; a BadRecord is no export
    except (InputError, UnicodeError, ValueError, RecursionError):  # the import reports these
        return False
    return isinstance(rec, dict) and rec.get("format") == EXPORT_FORMAT


__all__ = [
    "EXPORT_FORMAT",
    "FORMATS",
    "FORMAT_VERSION",
    "NEEDS_DISCUSSION",
    "ExportReport",
    "ExportScope",
    "GoldenCounts",
    "export",
    "export_bytes",
    "golden_counts",
    "golden_item",
    "golden_items",
    "is_export_file",
    "iter_records",
    "json_line",
    "neutralise_cell",
    "reference_answers",
    "reference_history",
    "resolve_scope",
    "set_reference_answer",
]


def file_name(fmt: str, *, judge_run: str, cycle: str | None, day: str) -> str:
    """`calibration-<cycle or run>-<fmt>-<day>.<ext>`: a downloaded export says what it holds and
    when. Names are user text, so only letters, digits, '.', '_' and '-' of them are kept."""
    import re

    scope = re.sub(r"[^A-Za-z0-9._-]+", "_", cycle if cycle is not None else judge_run).strip("._-")[:60]
    ext = {"csv": "csv", "deepeval": "json"}.get(fmt, "jsonl")
    return f"calibration-{scope or 'export'}-{fmt}-{day}.{ext}"
