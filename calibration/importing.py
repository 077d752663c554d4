"""Getting judged answers and human labels in from files, and restoring an export.

Every file is read as a stream and written inside one transaction: each record is
validated as it is read, the first problems are collected with file, line and field
(`reading.Problems`, as `errors.Problem`s), and if there is any problem the transaction is
rolled back, so a bad file never leaves half of itself behind. A JSONL export of this tool
(`export.is_export_file`) given to `import_answers` / `import_labels` is restored losslessly
instead (`restore_answers`, `restore_labels`).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from . import checks, roles, shipped, store
from .errors import CalibrationError, ConflictError, InputError, NotFoundError, Option
from .export import EXPORT_FORMAT, FORMAT_VERSION, is_export_file
from .models import JudgedAnswerIn, LabelRowIn, Verdict, parse_verdict, verdict_hint
from .reading import (
    MAX_PROBLEMS,
    BadRecord,
    Problems,
    csv_error,
    field_errors,
    iter_json_records,
    repeated_columns,
    text_file,
)
from .store import Database
from .text import json_text_problem
from .vocab import LABEL_KINDS, LABEL_STATUSES, LABELS


@dataclass
class ImportReport:
    answers_new: int = 0
    answers_existing: int = 0
    answers_updated: int = 0  # of the existing: category / metadata replaced (--update)
    claims_new: int = 0
    verdicts_new: int = 0
    verdicts_existing: int = 0
    runs: set[str] = field(default_factory=set)
    mappings: Counter[tuple[str, str]] = field(default_factory=Counter)
    recovered: list[str] = field(default_factory=list)  # leftovers of killed imports, removed first

    def lines(self) -> list[str]:
        out = [
            *self.recovered,
            f"answers: {self.answers_new} new, {self.answers_existing} already present"
            + (
                f" ({self.answers_updated} with category or metadata updated)" if self.answers_updated else ""
            ),
            f"claims: {self.claims_new} new",
            f"judge verdicts: {self.verdicts_new} new, {self.verdicts_existing} already present",
            f"judge runs: {', '.join(sorted(self.runs)) or 'none'}",
        ]
        if self.mappings:
            out.append("verdict spellings used:")
            out += [f"  {raw} -> {canon}: {n}" for (raw, canon), n in sorted(self.mappings.items())]
        return out


def content_hash(rec: JudgedAnswerIn) -> str:
    """What makes an answer the same answer: question, answer and chunks (id, text, source)."""
    payload = [rec.question, rec.answer, [[c.id, c.text, c.source] for c in rec.chunks]]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()


# ---------------------------------------------------------------- judged answers


def import_answers(
    db: Database,
    path: str | Path,
    *,
    judge_model: str | None = None,
    judge_prompt_version: str | None = None,
    mapping: dict[str, Verdict] | None = None,
    encoding: str | None = None,
    update: bool = False,
    dry_run: bool = False,
) -> ImportReport:
    """Import one JSONL / JSON-array file of judged answers, all or nothing.

    An answer already stored with the same content but a different category or metadata is
    refused (a problem on its line) unless `update`, which replaces them. A JSONL export of this
    tool is restored losslessly instead (see `restore_answers`). `dry_run`: as `import_records`.
    """
    path = Path(path)
    if is_export_file(path, encoding):
        if dry_run:  # a restore has no dry run: saying so beats writing what was to be checked
            raise InputError(
                f"{path}: is an export of this tool, which is restored, and a restore has "
                "no dry run; restore it into a copy of the database to see what it adds"
            )
        return restore_answers(db, path, encoding=encoding)
    return import_records(
        db,
        iter_json_records(path, encoding),
        source=path,
        judge_model=judge_model,
        judge_prompt_version=judge_prompt_version,
        mapping=mapping,
        update=update,
        dry_run=dry_run,
    )


def import_records(
    db: Database,
    records: Iterable[tuple[int, Any]],
    *,
    source: str | Path,
    judge_model: str | None = None,
    judge_prompt_version: str | None = None,
    mapping: dict[str, Verdict] | None = None,
    update: bool = False,
    dry_run: bool = False,
) -> ImportReport:
    """Import (line number, parsed value) pairs of judged answers, all or nothing.

    `records` is read inside the write transaction, so an error it raises (an adapter's
    InputError) rolls everything back too; `source` names the file in problem lines.
    `dry_run=True` does the whole import, then rolls it back: the report (or the InputError)
    is exactly what the real import would give against this database, and nothing stays.
    New answers get seed 003's answer checks (`calibration.checks`), stored with them.
    """
    report = ImportReport()
    with contextlib.suppress(_DryRunDone):  # a dry run ends by raising it, to roll back
        _import_records(
            db,
            records,
            report,
            source=source,
            judge_model=judge_model,
            judge_prompt_version=judge_prompt_version,
            mapping=mapping,
            update=update,
            dry_run=dry_run,
        )
    # Spellings equal to the canonical name are not worth reporting as mappings.
    report.mappings = Counter({k: n for k, n in report.mappings.items() if k[0] != k[1].casefold()})
    return report


class _DryRunDone(Exception):
    """Raised at the end of a dry run so that `store.write` rolls the transaction back."""


def _import_records(
    db: Database,
    records: Iterable[tuple[int, Any]],
    report: ImportReport,
    *,
    source: str | Path,
    judge_model: str | None,
    judge_prompt_version: str | None,
    mapping: dict[str, Verdict] | None,
    update: bool,
    dry_run: bool,
) -> None:
    # Checks are computed as answers arrive and only their small rows are kept, not the texts.
    check_rows: list[_CheckRow] = []
    problems = Problems(Path(source))
    seen: set[str] = set()
    runs: dict[tuple[str, str], int] = {}
    new_runs: dict[tuple[str, str], int] = {}  # runs to create at publish -> provisional (negative) id
    if dry_run or db.in_transaction:
        # A dry run, or inside a caller's write (the demo): everything in one transaction, which
        # a dry run then rolls back.
        with store.write(db):
            _read_answers(
                db,
                records,
                judge_model,
                judge_prompt_version,
                mapping,
                update,
                report,
                problems,
                seen,
                runs,
                new_runs,
                None,
                check_rows,
            )
            store.checks.put_checks(db, check_rows, version=checks.CHECK_VERSION)
            if dry_run:
                raise _DryRunDone
        return
    # Read and check every record without the write lock, rows staged in connection-private
    # tables; then short writes move them in, hidden from readers by the import's marker until
    # the last write (taken back if one fails). Labels are never blocked for more than one write.
    report.recovered += store.imports.recover(db)
    staging = store.answers.Staging(db)
    try:
        with store.read_snapshot(db):
            writer = _read_answers(
                db,
                records,
                judge_model,
                judge_prompt_version,
                mapping,
                update,
                report,
                problems,
                seen,
                runs,
                new_runs,
                staging,
                check_rows,
            )
        with store.write(db):
            real = {
                provisional: store.run_id(db, model, version, origin="import")
                for (model, version), provisional in new_runs.items()
            }
            staging.import_id = store.imports.begin(
                db,
                stamp=writer.ts,
                new_runs=[r for r in real.values() if r is not None],
                source=Path(source).name,
            )
        try:
            staging.publish({p: r for p, r in real.items() if r is not None})
            for lo in range(0, len(check_rows), store.answers.PUBLISH_BATCH):
                with store.write(db):  # hidden with their answers until the marker flips
                    store.checks.put_checks(
                        db, check_rows[lo : lo + store.answers.PUBLISH_BATCH], version=checks.CHECK_VERSION
                    )
            staging.finish()
        except BaseException:
            staging.take_back()
            raise
    finally:
        staging.drop()


_CheckRow = tuple[str, str | None, str | None, bool, int, bool]


def _check_row(answer_id: str, question: str, answer: str) -> _CheckRow:
    c = checks.check_answer(question, answer)
    return answer_id, c.question_script, c.answer_script, c.script_mismatch, c.cjk_chars, c.unexpected_cjk


def store_checks(db: Database, answers: Iterable[tuple[str, str, str]]) -> int:
    """Run seed 003's answer checks on (answer id, question, answer) triples and store them."""
    return store.checks.put_checks(db, [_check_row(*a) for a in answers], version=checks.CHECK_VERSION)


def answer_facts(db: Database, answer_id: str) -> list[str]:
    """The review card's sentences for an answer's stored checks; empty when none is raised."""
    c = store.checks.answer_check(db, answer_id)
    if c is None:
        return []
    return checks.facts(
        question_script=c.question_script,
        answer_script=c.answer_script,
        script_mismatch=c.script_mismatch,
        cjk_chars=c.cjk_chars,
        unexpected_cjk=c.unexpected_cjk,
    )


def backfill_checks(db: Database) -> int:
    """Check the answers imported before checks existed; the number checked."""
    with store.write(db):
        return store_checks(db, store.checks.answers_without_checks(db))


def _read_answers(
    db: Database,
    records: Iterable[tuple[int, Any]],
    judge_model: str | None,
    judge_prompt_version: str | None,
    mapping: dict[str, Verdict] | None,
    update: bool,
    report: ImportReport,
    problems: Problems,
    seen: set[str],
    runs: dict[tuple[str, str], int],
    new_runs: dict[tuple[str, str], int],
    staging: store.answers.Staging | None,
    check_rows: list[_CheckRow],
) -> store.answers.AnswerWriter:
    """Read, check and queue every record (the import's one pass over its file); the writer,
    whose timestamp every new answer carries."""
    writer = store.answers.AnswerWriter(db, report, update=update, staging=staging)

    def run_id(model: str, version: str) -> int:
        key = (model, version)
        if key not in runs:
            # Staged: a run new to the database is created only when the file is published.
            found = store.run_id(
                db, model, version, origin="import", created_at=writer.ts, create=staging is None
            )
            if found is None:
                found = new_runs[key] = -1 - len(new_runs)
            runs[key] = found
            report.runs.add(f"{model}@{version}")
        return runs[key]

    for line, value in records:
        if isinstance(value, BadRecord):
            problems.add(line, value.message)
            continue
        if not isinstance(value, dict):
            problems.add(line, "each record must be a JSON object")
            continue
        try:
            rec = JudgedAnswerIn.model_validate(value)
        except ValidationError as exc:
            for fld, msg in field_errors(exc):
                problems.add(line, msg, fld)
            continue
        if rec.id in seen:
            problems.add(line, f"duplicate id {rec.id!r} in the file", "id")
            continue
        seen.add(rec.id)
        model = rec.judge_model or judge_model
        version = rec.judge_prompt_version or judge_prompt_version
        if not model or not version:
            missing = Option.JUDGE_MODEL if not model else Option.JUDGE_PROMPT_VERSION
            problems.add(line, "missing", missing.value, ("put it in the file or set ", missing))
            continue
        verdicts: list[str] = []
        texts: set[str] = set()
        for i, claim in enumerate(rec.claims):
            if claim.id is None and claim.text in texts:
                problems.add(
                    line,
                    "repeats an earlier claim of this answer; give the claims ids or drop the repeat",
                    f"claims.{i}.text",
                )
            texts.add(claim.text)
            try:
                verdict, spelling = parse_verdict(claim.verdict, mapping)
            except ValueError as exc:
                problems.add(line, str(exc), f"claims.{i}.verdict", verdict_hint(exc))
                continue
            verdicts.append(verdict.value)
            report.mappings[(spelling, verdict.value)] += 1
        if problems:
            continue  # keep validating, but write nothing more
        before = report.answers_new
        conflict = writer.add(rec, content_hash(rec), verdicts, run_id(model, version))
        if conflict:
            problems.add(line, conflict.message, conflict.field, conflict.hint)
        elif report.answers_new > before:
            check_rows.append(_check_row(rec.id, rec.question, rec.answer))
    if not seen and not problems:
        problems.add(None, "no judged answers in the file")
    problems.raise_if_any()
    writer.flush()
    return writer


# ---------------------------------------------------------------- human labels


@dataclass
class LabelsReport:
    new: int = 0
    unchanged: int = 0
    reviewers: set[str] = field(default_factory=set)
    mappings: Counter[tuple[str, str]] = field(default_factory=Counter)
    recovered: list[str] = field(default_factory=list)  # leftovers of killed imports, removed first

    def lines(self) -> list[str]:
        out = [
            *self.recovered,
            f"labels: {self.new} new or changed, {self.unchanged} unchanged",
            f"reviewers: {', '.join(sorted(self.reviewers)) or 'none'}",
        ]
        out += [
            f"  {raw} -> {canon}: {n}"
            for (raw, canon), n in sorted(self.mappings.items())
            if raw != canon.casefold()
        ]
        return out


def import_labels(
    db: Database,
    path: str | Path,
    *,
    reviewer: str | None = None,
    mapping: dict[str, Verdict] | None = None,
    encoding: str | None = None,
) -> LabelsReport:
    """Import human labels from a CSV (answer_id, claim_id, verdict[, reviewer, note, evidence]).

    A JSONL export of this tool is restored losslessly instead (see `restore_labels`):
    blind and final verdicts, reconciles, evidence, notes and the event history with its times.
    """
    path = Path(path)
    if is_export_file(path, encoding):
        return restore_labels(db, path, encoding=encoding)
    report = LabelsReport()
    # Read and check the whole file without the write lock, staging the labels; then short writes
    # move them in, hidden from readers by the import's marker until the last one (see
    # `store.labels.LabelStaging` for why this design), taken back if one fails.
    report.recovered += store.imports.recover(db)
    staging = store.labels.LabelStaging(db)
    try:
        with store.read_snapshot(db):
            _read_labels(
                db,
                path,
                reviewer=reviewer,
                mapping=mapping,
                encoding=encoding,
                report=report,
                staging=staging,
            )
        if not staging.staged:
            return report  # nothing new or changed: no marker, no write
        with store.write(db):
            staging.import_id = store.imports.begin(db, stamp=store.now(), new_runs=[], source=path.name)
        try:
            staging.publish()
            staging.finish()
        except BaseException:
            staging.take_back()
            raise
    finally:
        staging.drop()
    return report


def _read_labels(
    db: Database,
    path: Path,
    *,
    reviewer: str | None,
    mapping: dict[str, Verdict] | None,
    encoding: str | None,
    report: LabelsReport,
    staging: store.labels.LabelStaging,
) -> None:
    """Read and check every row of a label CSV, counting and staging the labels that would change;
    InputError, with the first problems, if any row is bad."""
    problems = Problems(path)
    with text_file(path, encoding) as fh:
        # strict: a quote left open is an error where it happens, not a field that swallows
        # the rest of the file.
        reader = csv.DictReader(fh, strict=True)
        try:
            header = list(reader.fieldnames or [])
        except csv.Error as exc:
            raise csv_error(path, 1, exc) from exc
        twice = repeated_columns(header)
        if twice:
            raise problems.fail(1, twice)
        missing = [c for c in ("answer_id", "claim_id", "verdict") if c not in header]
        no_reviewer = "reviewer" not in header and not reviewer
        if missing or no_reviewer:
            raise problems.fail(
                1,
                f"missing column(s): {', '.join(missing + ['reviewer'] * no_reviewer)}",
                hint=("or name the reviewer of every row with ", Option.REVIEWER) if no_reviewer else (),
            )
        seen: dict[tuple[str, str, str], int] = {}
        try:
            known = store.cycles.known_reviewer_names(db)
            names: dict[str, str] = {}
            for row in reader:
                line = reader.line_num
                if None in row:
                    problems.add(
                        line,
                        f"{len(header) + len(row[None])} fields, but the header has {len(header)} columns",
                    )
                    continue
                if any(v is None for v in row.values()):
                    problems.add(
                        line,
                        f"{sum(v is not None for v in row.values())} fields, but the "
                        f"header has {len(header)} columns",
                    )
                    continue
                data = {k: (v.strip() if isinstance(v, str) else v) for k, v in row.items() if k is not None}
                if not data.get("reviewer"):
                    data["reviewer"] = reviewer
                if not data.get("reviewer"):
                    problems.add(
                        line,
                        "empty: fill in the reviewer",
                        "reviewer",
                        ("or give one with ", Option.REVIEWER, " for rows without one"),
                    )
                    continue
                typed = str(data["reviewer"])
                if typed not in names:
                    try:  # the one name rule: "Vera" is the known "vera"
                        names[typed] = roles.accept_name(typed, known, field="reviewer")
                    except InputError as exc:
                        for p in exc.problems:
                            problems.add(line, p.message, p.field, p.hint)
                        continue
                data["reviewer"] = names[typed]
                try:
                    rec = LabelRowIn.model_validate(data)
                except ValidationError as exc:
                    for fld, msg in field_errors(exc):
                        problems.add(line, msg, fld)
                    continue
                try:
                    verdict, spelling = parse_verdict(rec.verdict, mapping)
                except ValueError as exc:
                    problems.add(line, str(exc), "verdict", verdict_hint(exc))
                    continue
                key = (rec.answer_id, rec.claim_id, rec.reviewer)
                if key in seen:
                    problems.add(
                        line,
                        f"{rec.claim_id!r} of {rec.answer_id!r} is labeled twice by "
                        f"{rec.reviewer!r} (first on line {seen[key]})",
                        "claim_id",
                    )
                    continue
                seen[key] = line
                try:
                    pk = store.claim_pk(db, rec.answer_id, rec.claim_id)
                except CalibrationError as exc:
                    problems.add(line, str(exc), "claim_id")
                    continue
                if store.imports.is_hidden_claim(db, pk):
                    # A label would pin a row that import may still have to take back.
                    problems.add(
                        line,
                        f"answer {rec.answer_id!r} is still being imported; import these "
                        "labels when that import has finished",
                        "claim_id",
                    )
                    continue
                bad = store.answers.unknown_chunks(db, rec.answer_id, rec.evidence)
                if bad:
                    problems.add(line, f"{', '.join(bad)} names no chunk of this answer", "evidence")
                    continue
                report.mappings[(spelling, verdict.value)] += 1
                if problems:
                    continue
                if store.labels.import_unchanged(
                    store.label_state(db, pk, rec.reviewer), verdict.value, rec.evidence, rec.note
                ):
                    report.unchanged += 1
                else:
                    staging.add(pk, rec.reviewer, verdict.value, rec.evidence, rec.note or None)
                    report.new += 1
                report.reviewers.add(rec.reviewer)
        except csv.Error as exc:
            # An unclosed quote is found at the end of the file; the row it opened starts on the line
            # after the last complete one.
            line = reader.line_num + 1 if "end of data" in str(exc) else reader.line_num
            raise csv_error(path, line, exc) from exc
        problems.raise_if_any()


# ---------------------------------------------------------------- restore of an export
#
# The regular label import goes through `store.record_label`, which stamps events with the
# current time and re-derives reconciles from the judge, so it cannot keep a history as it
# was; a restore writes events, current labels and adjudications as exported. Cycles are not
# recreated (their sampling design is not part of a label export): a label or event naming a
# cycle is linked to the cycle of that name when the target database has one. Restoring twice
# changes nothing; restoring a longer history of the same claim appends the missing events; a
# history that differs from the one already stored is refused.


def _export_lines(
    path: Path, encoding: str | None, problems: Problems
) -> Iterator[tuple[int, dict[str, Any]]]:
    for line, value in iter_json_records(path, encoding):
        if isinstance(value, BadRecord):
            problems.add(line, value.message)
        elif not isinstance(value, dict) or value.get("format") != EXPORT_FORMAT:
            problems.add(line, f"not a line of a {EXPORT_FORMAT} file")
        elif value.get("format_version") != FORMAT_VERSION:
            problems.add(
                line,
                f"format_version {value.get('format_version')!r} is not supported "
                f"(this tool reads version {FORMAT_VERSION})",
            )
        elif (unstorable := json_text_problem(value)) is not None:
            # Every string of the line (notes, names, rationales ...) is stored as it is.
            problems.add(line, unstorable)
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
            self.ids[key] = store.run_id(self.db, model, version, origin="import", create=create)
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
    problems = Problems(path)
    seen: set[str] = set()
    report.recovered += store.imports.recover(db)
    with store.write(db):
        store.imports.hold_numbering(db)  # its new claims take ids past every stored one
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
                for fld, msg in field_errors(exc):
                    problems.add(line, msg, fld)
            except ValueError as exc:
                problems.add(line, str(exc))
        problems.raise_if_any()
    return report


def _restore_answer(db: Database, rec: dict[str, Any], report: ImportReport) -> None:
    ans = JudgedAnswerIn.model_validate(
        {
            "id": rec["answer_id"],
            "question": rec["question"],
            "answer": rec["answer"],
            "chunks": rec["chunks"],
            "category": rec["category"],
            "metadata": rec["metadata"],
        }
    )
    digest = content_hash(ans)
    stored = store.answers.answer_hash(db, ans.id)
    if stored is not None:
        if stored != digest:
            raise ValueError(
                f"answer {ans.id!r} is already in the database with different question, "
                "answer or chunk text; refused"
            )
        report.answers_existing += 1
        return
    store.answers.insert_answer(
        db,
        answer_id=ans.id,
        question=ans.question,
        answer=ans.answer,
        category=ans.category,
        metadata=ans.metadata,
        content_hash=digest,
        holdout=bool(rec.get("holdout")),
        chunks=[(c.id, c.text, c.source) for c in ans.chunks],
    )
    report.answers_new += 1


def _restore_claim(db: Database, rec: dict[str, Any], runs: _Runs, report: ImportReport) -> None:
    answer_id, claim_id, text = rec["answer_id"], str(rec["claim_id"]), rec["claim"]
    if not isinstance(text, str) or not text.strip():
        raise ValueError("claim: claim has no text")
    found = store.answers.find_claim(db, answer_id, claim_id)
    if found is None:
        pk = store.answers.insert_claim(
            db, answer_id=answer_id, claim_id=claim_id, position=int(rec["claim_position"]), text=text
        )
        report.claims_new += 1
    else:
        pk, old = found
        if old != text:
            raise ValueError(
                f"claim: {claim_id!r} of answer {answer_id!r} already has different text; refused"
            )
    for i, j in enumerate(rec["judge"]):
        verdict = _check_verdict(j["verdict"], f"judge.{i}.verdict")
        assert verdict is not None  # not optional: _check_verdict raised otherwise
        run = runs.get(j["judge_model"], j["prompt_version"], create=True)
        assert run is not None  # create=True always gives an id
        old_v = store.answers.judge_verdict(db, run, pk)
        if old_v is not None:
            if old_v != verdict:
                raise ValueError(
                    f"judge.{i}: run {j['run']} already gave claim {claim_id!r} the verdict "
                    f"{old_v}, not {verdict}; refused"
                )
            report.verdicts_existing += 1
            continue
        store.answers.insert_judge_verdict(
            db,
            run_id=run,
            claim_pk=pk,
            verdict=verdict,
            raw_verdict=j["raw_verdict"],
            rationale=j["rationale"],
            evidence=list(j["evidence"]),
        )
        report.verdicts_new += 1


@dataclass
class RestoreReport(LabelsReport):
    events_new: int = 0
    events_existing: int = 0
    adjudications_new: int = 0

    def lines(self) -> list[str]:
        return [
            *super().lines(),
            f"label events: {self.events_new} restored, {self.events_existing} already present",
            f"adjudications: {self.adjudications_new} restored or changed",
        ]


def restore_labels(db: Database, path: str | Path, *, encoding: str | None = None) -> RestoreReport:
    """Restore label events, current labels and adjudications from a JSONL export.

    Run `restore_answers` (the `import` command) on the file first: labels are attached to
    claims by (answer id, claim id). Events are written with their original timestamps, in
    their original order per claim, which is the order `store.label_history` reads them in.
    """
    path = Path(path)
    report = RestoreReport()
    problems = Problems(path)
    with store.write(db):
        runs = _Runs(db)
        cycle_ids: dict[str, int | None] = {}

        def cycle_id(name: str | None) -> int | None:
            if not name:
                return None
            if name not in cycle_ids:
                try:
                    cycle_ids[name] = store.cycle_id(db, name)
                except NotFoundError:  # not recreated: the label keeps no cycle here
                    cycle_ids[name] = None
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


def _restore_claim_labels(
    db: Database,
    rec: dict[str, Any],
    report: RestoreReport,
    runs: _Runs,
    cycle_id: Callable[[str | None], int | None],
) -> None:
    answer_id, claim_id = rec["answer_id"], str(rec["claim_id"])
    found = store.answers.find_claim(db, answer_id, claim_id)
    if found is None:
        raise ValueError(
            f"claim_id: no claim {claim_id!r} in answer {answer_id!r}; restore the answers "
            f"first with `python -m calibration import` on this file"
        )
    pk = found[0]
    events = rec["events"]
    for i, e in enumerate(events):
        if e["kind"] not in LABEL_KINDS:
            raise ValueError(f"events.{i}.kind: unknown {e['kind']!r}")
        _check_verdict(e["verdict"], f"events.{i}.verdict", optional=True)
        if not e["reviewer"] or not e["created_at"]:
            raise ValueError(f"events.{i}: reviewer and created_at are required")
    stored = store.answers.event_keys(db, pk)
    wanted = [
        {
            k: (json.dumps(list(e[k]), ensure_ascii=False) if k == "evidence" else e[k])
            for k in store.answers.EVENT_KEY
        }
        for e in events
    ]
    if stored != wanted[: len(stored)]:
        raise ValueError(
            f"claim {claim_id!r} of answer {answer_id!r} already has a different label "
            "history in this database; restore into an empty database"
        )
    report.events_existing += len(stored)
    for e in events[len(stored) :]:
        store.answers.append_event(
            db,
            claim_pk=pk,
            reviewer=e["reviewer"],
            kind=e["kind"],
            verdict=e["verdict"],
            evidence=list(e["evidence"]),
            note=e["note"],
            cycle_id=cycle_id(e["cycle"]),
            judge_run_id=runs.by_name(e["judge_run"]),
            created_at=e["created_at"],
        )
        report.events_new += 1
    for i, lab in enumerate(rec["reviewers"]):
        if lab["status"] not in LABEL_STATUSES:
            raise ValueError(f"reviewers.{i}.status: unknown {lab['status']!r}")
        _check_verdict(lab["blind_verdict"], f"reviewers.{i}.blind_verdict", optional=True)
        _check_verdict(lab["final_verdict"], f"reviewers.{i}.final_verdict", optional=True)
        values = {
            "status": lab["status"],
            "blind_verdict": lab["blind_verdict"],
            "final_verdict": lab["final_verdict"],
            "reconciled": lab["reconciled"],
            "slip": int(bool(lab["slip"])),
            "evidence": json.dumps(list(lab["evidence"]), ensure_ascii=False),
            "note": lab["note"],
            "cycle_id": cycle_id(lab["cycle"]),
            "blind_at": lab["blind_at"],
            "final_at": lab["final_at"],
            "updated_at": lab["updated_at"],
        }
        old = store.answers.current_label(db, pk, lab["reviewer"])
        report.reviewers.add(lab["reviewer"])
        if old is not None and old == tuple(values[c] for c in store.answers.LABEL_COLUMNS):
            report.unchanged += 1
            continue
        store.answers.put_label(db, pk, lab["reviewer"], values)
        report.new += 1
    adj = rec["adjudication"]
    if adj is not None:
        verdict = _check_verdict(adj["verdict"], "adjudication.verdict")
        assert verdict is not None  # not optional: _check_verdict raised otherwise
        if store.answers.adjudication(db, pk) != (
            verdict,
            adj["adjudicator"],
            adj["note"],
            adj["created_at"],
        ):
            store.answers.put_adjudication(
                db,
                pk,
                verdict=verdict,
                adjudicator=adj["adjudicator"],
                note=adj["note"],
                created_at=adj["created_at"],
            )
            report.adjudications_new += 1


# ---------------------------------------------------------------- demo

# Paths in the checkout; an installed wheel carries them too (calibration.shipped).
DEMO_FILES = (
    "data/demo/demo_rag_v1.jsonl",
    "data/wice/wice_judged_gpt4.jsonl",
    "data/wice/wice_judged_gpt35.jsonl",
)
DEMO_LABELS = "data/wice/wice_human_labels.csv"
DEMO_CYCLE = "demo"


def demo_paths() -> tuple[list[Path], Path]:
    """The demo's judged-answer files and its labels file; NotFoundError, before anything is
    written, when the installation lacks one."""
    return [shipped.path(f) for f in DEMO_FILES], shipped.path(DEMO_LABELS)


def load_demo(db: Database) -> list[str]:
    """Load the demo data and open a demo cycle; running it again changes nothing.

    Returns one line per step for the caller to show."""
    from . import cycles  # cycles is the heavier module; only the demo needs it

    answers, labels = demo_paths()
    out: list[str] = []
    for path in answers:
        rep = import_answers(db, path)
        out.append(f"{path.name}: {rep.answers_new} new answers, {rep.verdicts_new} new verdicts")
    rep_l = import_labels(db, labels)
    out.append(f"{labels.name}: {rep_l.new} new labels")
    if not any(c.name == DEMO_CYCLE for c in cycles.list_cycles(db)):
        cycles.create_cycle(
            db,
            name=DEMO_CYCLE,
            judge_run="demo-judge@grounding-v1",
            size=5,
            seed=1,
            strategy="random",
            reviewers=[],
            overlap=0.0,
            force=True,
            created_by="demo",
        )
        out.append(f"cycle {DEMO_CYCLE!r}: open to every reviewer")
    return out


__all__ = [
    "MAX_PROBLEMS",
    "ConflictError",
    "ImportReport",
    "LabelsReport",
    "RestoreReport",
    "content_hash",
    "demo_paths",
    "import_answers",
    "import_labels",
    "import_records",
    "iter_json_records",
    "load_demo",
    "restore_answers",
    "restore_labels",
]
