"""Export calibrated labels (lossless JSONL, a golden set, CSV) and restore the JSONL export.

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
  ``expected_chunk_ids`` / ``expected_sources`` sit beside it for recall@k scripts. Answers
  with no human-SUPPORTED claim are left out: they would give an empty reference.
* ``csv`` — one row per claim for spreadsheets: UTF-8 with a BOM (Excel then reads Cyrillic
  correctly) and every cell starting with ``= + - @``, tab or carriage return prefixed with a
  single quote, so a spreadsheet shows imported text instead of evaluating it as a formula.

Restore. The JSONL export goes back into a database with the ordinary commands:
``python -m calibration import EXPORT.jsonl`` restores answers, chunks, claims, judge runs and
judge verdicts; ``python -m calibration import-labels EXPORT.jsonl`` then restores label
events (same order, kinds, verdicts, evidence, notes and timestamps), the reviewers' current
labels (blind vs final, reconcile kind, slip) and adjudications. Both recognise the export by
its ``format`` field and route here (`restore_answers`, `restore_labels`): the regular label
import goes through `store.record_label`, which stamps events with the current time and
re-derives reconciles from the judge, so it cannot keep a history as it was. Cycles are not
recreated (their sampling design is not part of a label export); a label or event names its
cycle and is linked to a cycle of that name when the target database has one.
Restoring twice changes nothing; restoring a longer history of the same claim appends the
missing events; a history that differs from the one already stored is refused. Only an
unfiltered export is a full backup: `--judge-run` keeps that run's verdicts only, and
`--cycle` / `--only-final` keep a subset of the claims.

Files are written to a temporary file beside the target and renamed into place, so a reader
never sees half an export, and rows are streamed in batches rather than loaded at once.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError
from sqlite_utils import Database

from . import store
from .agreement import final_human_label
from .errors import InputError, NotFoundError
from .importing import (
    ImportReport,
    LabelsReport,
    _field_errors,
    _open_text,
    _Problems,
    content_hash,
    iter_json_records,
)
from .models import LABELS, JudgedAnswerIn, Verdict
from .vocab import LABEL_KINDS

EXPORT_FORMAT = "judge-calibration-export"
FORMAT_VERSION = 1
FORMATS = ("jsonl", "golden", "csv")
NEEDS_DISCUSSION = "needs discussion"  # final_status of a claim a reviewer marked unclear
# Claims fetched per query: big enough that per-query overhead vanishes, small enough that
# memory stays flat however many claims there are.
BATCH = 1000
# Cells a spreadsheet would evaluate (OWASP "CSV injection"): formula starters, and tab / CR,
# which some spreadsheets strip before looking at the next character.
_DANGEROUS = ("=", "+", "-", "@", "\t", "\r")


# ---------------------------------------------------------------- scope and records


@dataclass(frozen=True, slots=True)
class Scope:
    """Which claims an export covers; see `resolve_scope`."""

    run_id: int | None = None
    run_name: str | None = None
    cycle_id: int | None = None
    cycle_name: str | None = None
    cycle_run_id: int | None = None
    only_final: bool = False


def resolve_scope(db: Database, *, judge_run: str | None = None, cycle: str | None = None,
                  only_final: bool = False) -> Scope:
    """Resolve names to ids; unknown names raise NotFoundError with the known ones."""
    run_id = run_name = None
    if judge_run:
        run = store.find_judge_run(db, judge_run)
        run_id, run_name = run.id, run.name
    cycle_id = cycle_run = None
    if cycle:
        row = db.execute("SELECT id, judge_run_id FROM cycles WHERE name = ?", [cycle]).fetchone()
        if row is None:
            known = ", ".join(r[0] for r in db.execute("SELECT name FROM cycles ORDER BY id")) or "none"
            raise NotFoundError(f"no cycle named {cycle!r}; cycles: {known}")
        cycle_id, cycle_run = row
    return Scope(run_id, run_name, cycle_id, cycle, cycle_run, only_final)


def _claim_ids(db: Database, scope: Scope) -> list[int]:
    # Only the integer keys are sorted up front: sorting the full rows would make SQLite
    # materialise every claim with its subqueries before the first line could be written.
    where: list[str] = []
    params: dict[str, object] = {}
    if scope.run_id is not None:
        where.append("EXISTS (SELECT 1 FROM judge_verdicts v WHERE v.claim_pk = c.id AND v.run_id = :run)")
        params["run"] = scope.run_id
    if scope.cycle_id is not None:
        # A claim belongs to a cycle when its answer was sampled and the cycle's run judged it.
        where.append("EXISTS (SELECT 1 FROM cycle_answers ca WHERE ca.cycle_id = :cycle "
                     "AND ca.answer_id = c.answer_id)")
        where.append("EXISTS (SELECT 1 FROM judge_verdicts v WHERE v.claim_pk = c.id "
                     "AND v.run_id = :cycle_run)")
        params |= {"cycle": scope.cycle_id, "cycle_run": scope.cycle_run_id}
    sql = "SELECT c.id FROM claims c"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return [r[0] for r in db.execute(sql + " ORDER BY c.answer_id, c.position, c.id", params)]


_DETAIL_SQL = """
SELECT c.id, c.answer_id, c.claim_id, c.position, c.text,
       a.question, a.answer, a.category, a.metadata, a.holdout,
       (SELECT json_group_array(json_array(ch.position, ch.chunk_id, ch.text, ch.source))
          FROM chunks ch WHERE ch.answer_id = c.answer_id),
       (SELECT json_group_array(json_array(h.reviewer, h.status, h.blind_verdict, h.blind_at,
                   h.final_verdict, h.final_at, h.reconciled, h.slip, json(h.evidence), h.note,
                   cy.name, h.updated_at))
          FROM human_labels h LEFT JOIN cycles cy ON cy.id = h.cycle_id WHERE h.claim_pk = c.id),
       (SELECT json_group_array(json_array(e.id, e.reviewer, e.kind, e.verdict, json(e.evidence),
                   e.note, cy.name, r.judge_model, r.prompt_version, e.created_at))
          FROM label_events e LEFT JOIN cycles cy ON cy.id = e.cycle_id
          LEFT JOIN judge_runs r ON r.id = e.judge_run_id WHERE e.claim_pk = c.id),
       (SELECT json_group_array(json_array(r.id, r.judge_model, r.prompt_version, v.verdict,
                   v.raw_verdict, v.rationale, json(v.evidence)))
          FROM judge_verdicts v JOIN judge_runs r ON r.id = v.run_id
          WHERE v.claim_pk = c.id {run_filter}),
       (SELECT json_array(d.verdict, d.adjudicator, d.note, d.created_at)
          FROM adjudications d WHERE d.claim_pk = c.id),
       (SELECT json_group_array(json_array(cy.id, cy.name)) FROM cycle_answers ca
          JOIN cycles cy ON cy.id = ca.cycle_id
          WHERE ca.answer_id = c.answer_id AND EXISTS (SELECT 1 FROM judge_verdicts v2
                WHERE v2.claim_pk = c.id AND v2.run_id = cy.judge_run_id))
FROM claims c JOIN answers a ON a.id = c.answer_id
WHERE c.id IN ({marks})
"""


def _record(row: Sequence[Any], version: str) -> dict[str, Any]:
    (_pk, answer_id, claim_id, position, text, question, answer, category, metadata, holdout,
     chunks_j, labels_j, events_j, verdicts_j, adjudication_j, cycles_j) = row
    chunks = sorted(json.loads(chunks_j))
    labels = sorted(json.loads(labels_j))
    events = sorted(json.loads(events_j))  # by event id: the order they were given in
    verdicts = sorted(json.loads(verdicts_j))  # by run id: oldest run first
    adjudication = json.loads(adjudication_j) if adjudication_j else None
    cycles = [name for _id, name in sorted(json.loads(cycles_j))]
    labeled = [lab[4] for lab in labels if lab[1] == "labeled" and lab[4] is not None]
    unclear = any(lab[1] == "unclear" for lab in labels)
    final = final_human_label(labeled, adjudication[0] if adjudication else None, unclear=unclear)
    if adjudication:
        status = "adjudicated"
    elif unclear:
        status = NEEDS_DISCUSSION  # a reviewer marked it unclear: a lead decides
    elif final is not None:
        status = "unanimous"
    else:
        status = "disputed" if labeled else "unlabeled"
    return {
        "format": EXPORT_FORMAT,
        "format_version": FORMAT_VERSION,
        "tool_version": version,
        "answer_id": answer_id,
        "question": question,
        "answer": answer,
        "category": category,
        "metadata": json.loads(metadata) if metadata else {},
        "holdout": bool(holdout),
        "chunks": [{"id": cid, "text": t, "source": src} for _pos, cid, t, src in chunks],
        "claim_id": claim_id,
        "claim_position": position,
        "claim": text,
        "final_verdict": final,
        "final_status": status,
        "adjudication": None if adjudication is None else dict(zip(
            ("verdict", "adjudicator", "note", "created_at"), adjudication, strict=True)),
        "reviewers": [
            {"reviewer": rev, "status": st, "blind_verdict": bv, "blind_at": ba, "final_verdict": fv,
             "final_at": fa, "reconciled": rec, "slip": bool(slip), "evidence": ev, "note": note,
             "cycle": cyc, "updated_at": upd}
            for rev, st, bv, ba, fv, fa, rec, slip, ev, note, cyc, upd in labels
        ],
        "events": [
            {"reviewer": rev, "kind": kind, "verdict": v, "evidence": ev, "note": note, "cycle": cyc,
             "judge_run": f"{model}@{ver}" if model is not None else None, "created_at": ts}
            for _id, rev, kind, v, ev, note, cyc, model, ver, ts in events
        ],
        "judge": [
            {"run": f"{model}@{ver}", "judge_model": model, "prompt_version": ver, "verdict": v,
             "raw_verdict": raw, "rationale": rationale, "evidence": ev,
             "agrees": None if final is None else v == final}
            for _rid, model, ver, v, raw, rationale, ev in verdicts
        ],
        "cycles": cycles,
    }


def iter_records(db: Database, scope: Scope = Scope()) -> Iterator[dict[str, Any]]:
    """The export records of every claim in scope, ordered by answer id and claim position."""
    from . import __version__

    ids = _claim_ids(db, scope)
    run_filter = "AND v.run_id = ?" if scope.run_id is not None else ""
    for start in range(0, len(ids), BATCH):
        batch = ids[start:start + BATCH]
        sql = _DETAIL_SQL.format(run_filter=run_filter, marks=",".join("?" * len(batch)))
        params: list[object] = ([scope.run_id] if scope.run_id is not None else []) + batch
        rows = {row[0]: row for row in db.execute(sql, params)}
        for pk in batch:
            rec = _record(rows[pk], __version__)
            if scope.only_final and rec["final_verdict"] is None:
                continue
            yield rec


# ---------------------------------------------------------------- writers


def neutralise_cell(value: str) -> str:
    """Prefix a cell a spreadsheet would evaluate (=, +, -, @, tab, CR first) with a single quote."""
    return "'" + value if value.startswith(_DANGEROUS) else value


def write_jsonl(records: Iterable[dict[str, Any]], fh: TextIO) -> int:
    n = 0
    for rec in records:
        fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
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


def golden_item(claims: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """One golden-set line from the export records of one answer; None without a SUPPORTED claim."""
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
        "reference_answer": " ".join(supported),
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
        items = "item has" if self.written == 1 else "items have"
        return (f"{self.no_source:,} of {self.written:,} golden {items} no expected_source: "
                "reviewers chose no evidence chunks")


def write_golden_counts(records: Iterable[dict[str, Any]], fh: TextIO) -> GoldenCounts:
    """Write golden-set lines; count them, the answers left out and the items without a source."""
    written = skipped = no_source = 0
    for group in _answer_groups(records):
        item = golden_item(group)
        if item is None:
            skipped += 1
            continue
        fh.write(json.dumps(item, ensure_ascii=False) + "\n")
        written += 1
        no_source += not item["expected_source"]
    return GoldenCounts(written, skipped, no_source)


def write_golden(records: Iterable[dict[str, Any]], fh: TextIO) -> tuple[int, int]:
    """Write golden-set lines; return (answers written, answers left out for lack of SUPPORTED)."""
    counts = write_golden_counts(records, fh)
    return counts.written, counts.skipped


def _reviewer_summary(lab: dict[str, Any]) -> str:
    if lab["status"] != "labeled":
        return f"{lab['reviewer']}: {lab['status']}"
    text = f"{lab['reviewer']}: {lab['final_verdict']}"
    if lab["reconciled"] is not None:
        text += f" (blind {lab['blind_verdict']}, {lab['reconciled']}{', slip' if lab['slip'] else ''})"
    return text


CSV_BASE_COLUMNS = ("answer_id", "claim_id", "category", "question", "answer", "claim",
                    "final_verdict", "final_status", "reviewer_labels", "evidence", "notes", "cycles")


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
    cells = [rec["answer_id"], rec["claim_id"], rec["category"] or "", rec["question"], rec["answer"],
             rec["claim"], rec["final_verdict"] or "", rec["final_status"],
             "; ".join(_reviewer_summary(lab) for lab in rec["reviewers"]),
             ";".join(evidence), "\n".join(notes), "; ".join(rec["cycles"])]
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

    def lines(self) -> list[str]:
        unit = ("answer" if self.fmt == "golden" else "claim") + ("" if self.rows == 1 else "s")
        out = [f"{self.path}: {self.rows} {unit} ({self.fmt})"]
        if self.skipped_answers:
            s = "" if self.skipped_answers == 1 else "s"
            out.append(f"  {self.skipped_answers} answer{s} left out: no claim humans found SUPPORTED")
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


def _runs_in_scope(db: Database, scope: Scope) -> list[str]:
    if scope.run_name is not None:
        return [scope.run_name]
    return [r.name for r in store.judge_runs(db)]


def export(db: Database, out: str | Path, *, fmt: str = "jsonl", judge_run: str | None = None,
           cycle: str | None = None, only_final: bool = False) -> ExportReport:
    """Write the claims in scope to `out` in `fmt` (jsonl, golden or csv), atomically."""
    if fmt not in FORMATS:
        raise InputError(f"--format: unknown {fmt!r}; use one of {', '.join(FORMATS)}")
    out = Path(out)
    scope = resolve_scope(db, judge_run=judge_run, cycle=cycle, only_final=only_final)
    # One read transaction, so a label written meanwhile cannot make the file inconsistent.
    own = not db.conn.in_transaction
    if own:
        db.conn.execute("BEGIN")
    try:
        records = iter_records(db, scope)
        if fmt == "jsonl":
            return ExportReport(out, fmt, atomic_write(out, lambda fh: write_jsonl(records, fh)))
        if fmt == "golden":
            counts = atomic_write(out, lambda fh: write_golden_counts(records, fh))
            return ExportReport(out, fmt, counts.written, counts.skipped, counts.no_source)
        runs = _runs_in_scope(db, scope)
        return ExportReport(out, fmt, atomic_write(out, lambda fh: write_csv(records, fh, runs),
                                                   encoding="utf-8-sig"))
    finally:
        if own:
            db.conn.execute("COMMIT")


def golden_counts(db: Database, *, judge_run: str | None = None, cycle: str | None = None,
                  only_final: bool = False) -> GoldenCounts:
    """What a golden-set export of the scope would hold, without keeping the file (for a page's warning)."""
    scope = resolve_scope(db, judge_run=judge_run, cycle=cycle, only_final=only_final)
    return write_golden_counts(iter_records(db, scope), io.StringIO())


def export_bytes(db: Database, *, fmt: str = "jsonl", judge_run: str | None = None,
                 cycle: str | None = None, only_final: bool = False) -> bytes:
    """The same export in memory, for a page's download button (scopes there are cycle-sized)."""
    scope = resolve_scope(db, judge_run=judge_run, cycle=cycle, only_final=only_final)
    buf = io.StringIO()
    records = iter_records(db, scope)
    if fmt == "jsonl":
        write_jsonl(records, buf)
    elif fmt == "golden":
        write_golden_counts(records, buf)
    elif fmt == "csv":
        write_csv(records, buf, _runs_in_scope(db, scope))
        return buf.getvalue().encode("utf-8-sig")
    else:
        raise InputError(f"unknown export format {fmt!r}")
    return buf.getvalue().encode("utf-8")


# ---------------------------------------------------------------- restore


def is_export_file(path: str | Path, encoding: str | None = None) -> bool:
    """Whether the file's first record is a line of this tool's JSONL export."""
    try:
        with _open_text(Path(path), encoding) as fh:
            # Look at the first character before reading a line: a JSON array written on one
            # line would otherwise be read whole just to be told apart.
            ch = fh.read(1)
            while ch and ch.isspace():
                ch = fh.read(1)
            if ch != "{":
                return False
            rec = json.loads(ch + fh.readline())
    except (InputError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(rec, dict) and rec.get("format") == EXPORT_FORMAT


def _export_lines(path: Path, encoding: str | None, problems: _Problems
                  ) -> Iterator[tuple[int, dict[str, Any]]]:
    for line, value in iter_json_records(path, encoding):
        if isinstance(value, json.JSONDecodeError):
            problems.add(line, f"malformed JSON: {value.msg} (column {value.colno})")
        elif not isinstance(value, dict) or value.get("format") != EXPORT_FORMAT:
            problems.add(line, f"not a line of a {EXPORT_FORMAT} file")
        elif value.get("format_version") != FORMAT_VERSION:
            problems.add(line, f"format_version {value.get('format_version')!r} is not supported "
                               f"(this tool reads version {FORMAT_VERSION})")
        else:
            yield line, value


def _check_verdict(value: object, where: str, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if value not in LABELS:
        raise ValueError(f"{where}: {value!r} is not one of {', '.join(LABELS)}")
    return str(value)


class _Runs:
    """Judge runs by name in the target database, created on first use when allowed."""

    def __init__(self, db: Database, report: ImportReport | None = None) -> None:
        self.db = db
        self.report = report
        self.ids: dict[tuple[str, str], int | None] = {}

    def get(self, model: str, version: str, *, create: bool) -> int | None:
        key = (model, version)
        if key not in self.ids:
            row = self.db.execute("SELECT id FROM judge_runs WHERE judge_model = ? AND prompt_version = ?",
                                  key).fetchone()
            if row is None and create:
                cur = self.db.execute("INSERT INTO judge_runs (judge_model, prompt_version, origin, "
                                      "created_at) VALUES (?, ?, 'import', ?)", [*key, store.now()])
                row = (cur.lastrowid,)
            self.ids[key] = row[0] if row else None
        if self.report is not None and self.ids[key] is not None:
            self.report.runs.add(f"{model}@{version}")
        return self.ids[key]

    def by_name(self, name: str | None) -> int | None:
        if not name:
            return None
        model, _, version = name.rpartition("@")
        return self.get(model, version, create=False)


def restore_answers(db: Database, path: str | Path, *, encoding: str | None = None) -> ImportReport:
    """Restore answers, chunks, claims, judge runs and judge verdicts from a JSONL export.

    All or nothing, like every import: problems are collected with their line and nothing is
    written if there is any. An answer or claim already present must have the same text, and a
    verdict already present the same value.
    """
    path = Path(path)
    report = ImportReport()
    problems = _Problems(path)
    seen: set[str] = set()
    with store.write(db):
        runs = _Runs(db, report)
        for line, rec in _export_lines(path, encoding, problems):
            try:
                answer_id = rec["answer_id"]
                if answer_id not in seen:
                    _restore_answer(db, rec, report)
                    seen.add(answer_id)
                _restore_claim(db, rec, runs, report)
            except (KeyError, TypeError) as exc:
                problems.add(line, f"missing or malformed field {exc}")
            except ValidationError as exc:
                for msg in _field_errors(exc):
                    problems.add(line, msg)
            except ValueError as exc:
                problems.add(line, str(exc))
        problems.raise_if_any()
    return report


def _restore_answer(db: Database, rec: dict[str, Any], report: ImportReport) -> None:
    ans = JudgedAnswerIn.model_validate({
        "id": rec["answer_id"], "question": rec["question"], "answer": rec["answer"],
        "chunks": rec["chunks"], "category": rec["category"], "metadata": rec["metadata"]})
    digest = content_hash(ans)
    row = db.execute("SELECT content_hash FROM answers WHERE id = ?", [ans.id]).fetchone()
    if row is not None:
        if row[0] != digest:
            raise ValueError(f"answer {ans.id!r} is already in the database with different question, "
                             "answer or chunk text; refused")
        report.answers_existing += 1
        return
    db.execute("INSERT INTO answers (id, question, answer, category, metadata, content_hash, holdout, "
               "imported_at) VALUES (?,?,?,?,?,?,?,?)",
               [ans.id, ans.question, ans.answer, ans.category, json.dumps(ans.metadata, ensure_ascii=False),
                digest, int(bool(rec.get("holdout"))), store.now()])
    db.conn.executemany("INSERT INTO chunks (answer_id, position, chunk_id, text, source) VALUES (?,?,?,?,?)",
                        [(ans.id, i, c.id, c.text, c.source) for i, c in enumerate(ans.chunks)])
    report.answers_new += 1


def _restore_claim(db: Database, rec: dict[str, Any], runs: _Runs, report: ImportReport) -> None:
    answer_id, claim_id, text = rec["answer_id"], str(rec["claim_id"]), rec["claim"]
    if not isinstance(text, str) or not text.strip():
        raise ValueError("claim: claim has no text")
    row = db.execute("SELECT id, text FROM claims WHERE answer_id = ? AND claim_id = ?",
                     [answer_id, claim_id]).fetchone()
    if row is None:
        cur = db.execute("INSERT INTO claims (answer_id, claim_id, position, text) VALUES (?,?,?,?)",
                         [answer_id, claim_id, int(rec["claim_position"]), text])
        pk = cur.lastrowid
        report.claims_new += 1
    else:
        pk, old = row
        if old != text:
            raise ValueError(f"claim: {claim_id!r} of answer {answer_id!r} already has different text; "
                             "refused")
    for i, j in enumerate(rec["judge"]):
        verdict = _check_verdict(j["verdict"], f"judge.{i}.verdict")
        run = runs.get(j["judge_model"], j["prompt_version"], create=True)
        old_v = db.execute("SELECT verdict FROM judge_verdicts WHERE run_id = ? AND claim_pk = ?",
                           [run, pk]).fetchone()
        if old_v is not None:
            if old_v[0] != verdict:
                raise ValueError(f"judge.{i}: run {j['run']} already gave claim {claim_id!r} the verdict "
                                 f"{old_v[0]}, not {verdict}; refused")
            report.verdicts_existing += 1
            continue
        db.execute("INSERT INTO judge_verdicts (run_id, claim_pk, verdict, raw_verdict, rationale, evidence) "
                   "VALUES (?,?,?,?,?,?)",
                   [run, pk, verdict, j["raw_verdict"], j["rationale"],
                    json.dumps(list(j["evidence"]), ensure_ascii=False)])
        report.verdicts_new += 1


@dataclass
class RestoreReport(LabelsReport):
    events_new: int = 0
    events_existing: int = 0
    adjudications_new: int = 0

    def lines(self) -> list[str]:
        return [*super().lines(),
                f"label events: {self.events_new} restored, {self.events_existing} already present",
                f"adjudications: {self.adjudications_new} restored or changed"]


_EVENT_KEY = ("reviewer", "kind", "verdict", "evidence", "note", "created_at")
_LABEL_COLS = ("status", "blind_verdict", "final_verdict", "reconciled", "slip", "evidence", "note",
               "cycle_id", "blind_at", "final_at", "updated_at")


def restore_labels(db: Database, path: str | Path, *, encoding: str | None = None) -> RestoreReport:
    """Restore label events, current labels and adjudications from a JSONL export.

    Run `restore_answers` (the `import` command) on the file first: labels are attached to
    claims by (answer id, claim id). Events are written with their original timestamps, in
    their original order per claim, which is the order `store.label_history` reads them in.
    """
    path = Path(path)
    report = RestoreReport()
    problems = _Problems(path)
    with store.write(db):
        runs = _Runs(db)
        cycle_ids: dict[str, int | None] = {}

        def cycle_id(name: str | None) -> int | None:
            if not name:
                return None
            if name not in cycle_ids:
                row = db.execute("SELECT id FROM cycles WHERE name = ?", [name]).fetchone()
                cycle_ids[name] = row[0] if row else None
            return cycle_ids[name]

        for line, rec in _export_lines(path, encoding, problems):
            try:
                _restore_claim_labels(db, rec, report, runs, cycle_id)
            except (KeyError, TypeError) as exc:
                problems.add(line, f"missing or malformed field {exc}")
            except ValueError as exc:
                problems.add(line, str(exc))
        problems.raise_if_any()
    return report


def _restore_claim_labels(db: Database, rec: dict[str, Any], report: RestoreReport, runs: _Runs,
                          cycle_id: Callable[[str | None], int | None]) -> None:
    answer_id, claim_id = rec["answer_id"], str(rec["claim_id"])
    row = db.execute("SELECT id FROM claims WHERE answer_id = ? AND claim_id = ?",
                     [answer_id, claim_id]).fetchone()
    if row is None:
        raise ValueError(f"claim_id: no claim {claim_id!r} in answer {answer_id!r}; restore the answers "
                         f"first with `python -m calibration import` on this file")
    pk = row[0]
    events = rec["events"]
    for i, e in enumerate(events):
        if e["kind"] not in LABEL_KINDS:
            raise ValueError(f"events.{i}.kind: unknown {e['kind']!r}")
        _check_verdict(e["verdict"], f"events.{i}.verdict", optional=True)
        if not e["reviewer"] or not e["created_at"]:
            raise ValueError(f"events.{i}: reviewer and created_at are required")
    stored = [dict(zip(_EVENT_KEY, r, strict=True)) for r in db.execute(
        "SELECT reviewer, kind, verdict, evidence, note, created_at FROM label_events "
        "WHERE claim_pk = ? ORDER BY id", [pk])]
    wanted = [{k: (json.dumps(list(e[k]), ensure_ascii=False) if k == "evidence" else e[k])
               for k in _EVENT_KEY} for e in events]
    if stored != wanted[:len(stored)]:
        raise ValueError(f"claim {claim_id!r} of answer {answer_id!r} already has a different label "
                         "history in this database; restore into an empty database")
    report.events_existing += len(stored)
    for e in events[len(stored):]:
        db.execute("INSERT INTO label_events (claim_pk, reviewer, kind, verdict, evidence, note, cycle_id, "
                   "judge_run_id, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
                   [pk, e["reviewer"], e["kind"], e["verdict"],
                    json.dumps(list(e["evidence"]), ensure_ascii=False), e["note"], cycle_id(e["cycle"]),
                    runs.by_name(e["judge_run"]), e["created_at"]])
        report.events_new += 1
    for i, lab in enumerate(rec["reviewers"]):
        if lab["status"] not in ("labeled", "skipped", "unclear"):
            raise ValueError(f"reviewers.{i}.status: unknown {lab['status']!r}")
        _check_verdict(lab["blind_verdict"], f"reviewers.{i}.blind_verdict", optional=True)
        _check_verdict(lab["final_verdict"], f"reviewers.{i}.final_verdict", optional=True)
        values = {"status": lab["status"], "blind_verdict": lab["blind_verdict"],
                  "final_verdict": lab["final_verdict"], "reconciled": lab["reconciled"],
                  "slip": int(bool(lab["slip"])),
                  "evidence": json.dumps(list(lab["evidence"]), ensure_ascii=False), "note": lab["note"],
                  "cycle_id": cycle_id(lab["cycle"]), "blind_at": lab["blind_at"],
                  "final_at": lab["final_at"], "updated_at": lab["updated_at"]}
        old = db.execute(f"SELECT {', '.join(_LABEL_COLS)} FROM human_labels WHERE claim_pk = ? "
                         "AND reviewer = ?", [pk, lab["reviewer"]]).fetchone()
        report.reviewers.add(lab["reviewer"])
        if old is not None and tuple(old) == tuple(values.values()):
            report.unchanged += 1
            continue
        cols = ", ".join(("claim_pk", "reviewer", *values))
        updates = ", ".join(f"{c} = excluded.{c}" for c in values)
        db.execute(f"INSERT INTO human_labels ({cols}) VALUES ({', '.join('?' * (len(values) + 2))}) "
                   f"ON CONFLICT (claim_pk, reviewer) DO UPDATE SET {updates}",
                   [pk, lab["reviewer"], *values.values()])
        report.new += 1
    adj = rec["adjudication"]
    if adj is not None:
        verdict = _check_verdict(adj["verdict"], "adjudication.verdict")
        new = (verdict, adj["adjudicator"], adj["note"], adj["created_at"])
        old_adj = db.execute("SELECT verdict, adjudicator, note, created_at FROM adjudications "
                             "WHERE claim_pk = ?", [pk]).fetchone()
        if old_adj is None or tuple(old_adj) != new:
            db.execute("INSERT INTO adjudications (claim_pk, verdict, adjudicator, note, created_at) "
                       "VALUES (?,?,?,?,?) ON CONFLICT (claim_pk) DO UPDATE SET verdict = excluded.verdict, "
                       "adjudicator = excluded.adjudicator, note = excluded.note, "
                       "created_at = excluded.created_at", [pk, *new])
            report.adjudications_new += 1


# ---------------------------------------------------------------- CLI


def cli_export(args: argparse.Namespace) -> int:
    from .cli.common import db_path as _db_path

    with store.session(_db_path(args)) as db:
        rep = export(db, args.out, fmt=args.format, judge_run=args.judge_run, cycle=args.cycle,
                     only_final=args.only_final)
    for line in rep.lines():
        print(line)
    return 0


__all__ = ["EXPORT_FORMAT", "FORMATS", "NEEDS_DISCUSSION", "ExportReport", "GoldenCounts", "RestoreReport",
           "Scope", "export", "export_bytes", "golden_counts", "golden_item", "is_export_file",
           "iter_records", "neutralise_cell", "resolve_scope", "restore_answers", "restore_labels"]
