"""Getting judged answers and human labels in from files.

Every file is read as a stream and written inside one transaction: each record is
validated as it is read, the first problems are collected with file, line and field,
and if there is any problem the transaction is rolled back, so a bad file never
leaves half of itself behind.
"""

from __future__ import annotations

import argparse
import codecs
import csv
import hashlib
import io
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from pydantic import ValidationError
from sqlite_utils import Database

from . import store
from .errors import CalibrationError, ConflictError, InputError
from .models import JudgedAnswerIn, LabelRowIn, Verdict, parse_mapping, parse_verdict

MAX_PROBLEMS = 20
_READ_SIZE = 1 << 16


@dataclass
class ImportReport:
    answers_new: int = 0
    answers_existing: int = 0
    claims_new: int = 0
    verdicts_new: int = 0
    verdicts_existing: int = 0
    runs: set[str] = field(default_factory=set)
    mappings: Counter[tuple[str, str]] = field(default_factory=Counter)

    def lines(self) -> list[str]:
        out = [
            f"answers: {self.answers_new} new, {self.answers_existing} already present",
            f"claims: {self.claims_new} new",
            f"judge verdicts: {self.verdicts_new} new, {self.verdicts_existing} already present",
            f"judge runs: {', '.join(sorted(self.runs)) or 'none'}",
        ]
        if self.mappings:
            out.append("verdict spellings used:")
            out += [f"  {raw} -> {canon}: {n}" for (raw, canon), n in sorted(self.mappings.items())]
        return out


class _Problems:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: list[str] = []
        self.more = 0

    def add(self, line: int | None, message: str) -> None:
        if len(self.items) < MAX_PROBLEMS:
            where = f"{self.path}:{line}" if line is not None else str(self.path)
            self.items.append(f"{where}: {message}")
        else:
            self.more += 1

    def raise_if_any(self) -> None:
        if self.items:
            tail = [f"... and {self.more} more problems"] if self.more else []
            raise InputError([*self.items, *tail, f"{self.path}: nothing was imported"])

    def __bool__(self) -> bool:
        return bool(self.items)


# ---------------------------------------------------------------- reading


def _open_text(path: Path, encoding: str | None) -> TextIO:
    try:
        raw: BinaryIO = path.open("rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror}") from exc
    enc = encoding or "utf-8-sig"
    try:
        codecs.lookup(enc)
    except LookupError as exc:
        raw.close()
        raise InputError(f"unknown encoding {enc!r}") from exc
    # errors="strict": a wrong encoding must stop the import, never become mojibake.
    return io.TextIOWrapper(raw, encoding=enc, errors="strict", newline="")


def _decode_error(path: Path, line: int, exc: UnicodeDecodeError, encoding: str | None) -> InputError:
    hint = "" if encoding else "; the file is not UTF-8: give its encoding with --encoding"
    return InputError(f"{path}:{line}: cannot decode bytes as {encoding or 'UTF-8'}{hint}; "
                      "nothing was imported")


def iter_json_records(path: Path, encoding: str | None = None) -> Iterator[tuple[int, Any]]:
    """Yield (line number, parsed value) from a JSONL file or a JSON array, streaming.

    A malformed record yields (line, JSONDecodeError) so the caller can report it and
    go on checking the rest of a JSONL file.
    """
    with _open_text(path, encoding) as fh:
        line_no = 0
        try:
            first = ""
            pending: list[str] = []
            # Peek the first non-blank character to tell an array from JSONL.
            for line in fh:
                line_no += 1
                if line.strip():
                    first = line.lstrip()[0]
                    pending.append(line)
                    break
            if not first:
                return
            if first == "[":
                yield from _iter_array(fh, "".join(pending), line_no)
                return
            for line in _chain(pending, fh):
                if pending:
                    pending = []
                else:
                    line_no += 1
                if not line.strip():
                    continue
                try:
                    yield line_no, json.loads(line)
                except json.JSONDecodeError as exc:
                    yield line_no, exc
        except UnicodeDecodeError as exc:
            raise _decode_error(path, line_no + 1, exc, encoding) from exc


def _chain(first: list[str], rest: TextIO) -> Iterator[str]:
    yield from list(first)
    yield from rest


def _iter_array(fh: TextIO, buf: str, start_line: int) -> Iterator[tuple[int, Any]]:
    decoder = json.JSONDecoder()
    line = start_line
    pos = buf.index("[") + 1
    eof = False
    expect_value = True

    def fill() -> bool:
        nonlocal buf, pos, eof
        chunk = fh.read(_READ_SIZE)
        if not chunk:
            eof = True
            return False
        buf = buf[pos:] + chunk
        pos = 0
        return True

    while True:
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n":
                if buf[pos] == "\n":
                    line += 1
                pos += 1
            if pos < len(buf) or not fill():
                break
        if pos >= len(buf):
            yield line, json.JSONDecodeError("the JSON array is not closed", buf, pos)
            return
        ch = buf[pos]
        if ch == "]":
            return
        if ch == ",":
            if expect_value:
                yield line, json.JSONDecodeError("unexpected ','", buf, pos)
                return
            pos += 1
            expect_value = True
            continue
        if not expect_value:
            yield line, json.JSONDecodeError("expected ',' or ']' between records", buf, pos)
            return
        while True:
            try:
                value, end = decoder.raw_decode(buf, pos)
                # A number or literal cut at the buffer's end would parse short: read on.
                if end == len(buf) and not eof and fill():
                    continue
                break
            except json.JSONDecodeError as exc:
                if not eof and fill():
                    continue
                yield line + buf.count("\n", pos, exc.pos), exc
                return
        yield line, value
        line += buf.count("\n", pos, end)
        pos = end
        expect_value = False


def _field_errors(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing" and loc.startswith("claims.") and loc.endswith(".text"):
            # The file says `claim` (or `text`); name what the user can actually write.
            loc, msg = loc.removesuffix(".text") + ".claim", "missing: a claim needs 'claim' or 'text'"
        # Record-level checks already name their field in the message.
        out.append(f"{loc}: {msg}" if loc else msg)
    return out


def content_hash(rec: JudgedAnswerIn) -> str:
    payload = [rec.question, rec.answer, [[c.id, c.text, c.source] for c in rec.chunks]]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()


# ---------------------------------------------------------------- judged answers


class _Writer:
    """Writes validated records inside the caller's transaction, batching inserts."""

    def __init__(self, db: Database, report: ImportReport) -> None:
        self.db = db
        self.report = report
        self.runs: dict[tuple[str, str], int] = {}
        self.next_claim = (db.execute("SELECT coalesce(max(id), 0) FROM claims").fetchone()[0]) + 1
        self.answers: list[tuple] = []
        self.chunks: list[tuple] = []
        self.claims: list[tuple] = []
        self.verdicts: list[tuple] = []
        self.ts = store.now()

    def run_id(self, model: str, version: str) -> int:
        key = (model, version)
        if key not in self.runs:
            row = self.db.execute(
                "SELECT id FROM judge_runs WHERE judge_model = ? AND prompt_version = ?", key
            ).fetchone()
            if row is None:
                cur = self.db.execute(
                    "INSERT INTO judge_runs (judge_model, prompt_version, origin, created_at) "
                    "VALUES (?, ?, 'import', ?)", [model, version, self.ts])
                row = (cur.lastrowid,)
            self.runs[key] = row[0]
            self.report.runs.add(f"{model}@{version}")
        return self.runs[key]

    def add(self, rec: JudgedAnswerIn, verdicts: list[Verdict], run: int) -> str | None:
        """Queue one answer's rows; return a conflict message instead of writing on conflict."""
        digest = content_hash(rec)
        row = self.db.execute("SELECT content_hash FROM answers WHERE id = ?", [rec.id]).fetchone()
        existing_claims: dict[str, tuple[int, str]] = {}
        by_text: dict[str, str] = {}
        if row is not None:
            if row[0] != digest:
                return (f"answer {rec.id!r} is already in the database with different question, "
                        "answer or chunk text; refused, since its claims may carry human labels "
                        "(import it under a new id)")
            self.report.answers_existing += 1
            for pk, cid, text in self.db.execute(
                "SELECT id, claim_id, text FROM claims WHERE answer_id = ?", [rec.id]
            ):
                existing_claims[cid] = (pk, text)
                by_text.setdefault(text, cid)
        else:
            self.report.answers_new += 1
            self.answers.append((rec.id, rec.question, rec.answer, rec.category,
                                 json.dumps(rec.metadata, ensure_ascii=False), digest, self.ts))
            self.chunks += [(rec.id, i, c.id, c.text, c.source) for i, c in enumerate(rec.chunks)]
        position = len(existing_claims)
        for i, (claim, verdict) in enumerate(zip(rec.claims, verdicts, strict=True)):
            cid = claim.id or by_text.get(claim.text)
            if cid is None:
                # Without an id, a claim is known by its text; a new text gets the next free id.
                n = position + 1
                while f"c{n}" in existing_claims:
                    n += 1
                cid = f"c{n}"
            if cid in existing_claims:
                pk, text = existing_claims[cid]
                if text != claim.text:
                    return (f"claims[{i}]: claim {cid!r} of answer {rec.id!r} already has "
                            "different text; refused")
                old = self.db.execute(
                    "SELECT verdict FROM judge_verdicts WHERE run_id = ? AND claim_pk = ?",
                    [run, pk]).fetchone()
                if old is not None:
                    if old[0] != verdict.value:
                        return (f"claims[{i}]: this judge run already gave claim {cid!r} the "
                                f"verdict {old[0]}, not {verdict.value}; refused")
                    self.report.verdicts_existing += 1
                    continue
            else:
                pk = self.next_claim
                self.next_claim += 1
                position += 1
                existing_claims[cid] = (pk, claim.text)
                by_text.setdefault(claim.text, cid)
                self.claims.append((pk, rec.id, cid, position - 1, claim.text))
                self.report.claims_new += 1
            self.verdicts.append((run, pk, verdict.value, claim.verdict, claim.rationale,
                                  json.dumps(claim.evidence, ensure_ascii=False)))
            self.report.verdicts_new += 1
        if len(self.verdicts) >= 5000:
            self.flush()
        return None

    def flush(self) -> None:
        ex = self.db.conn.executemany
        ex("INSERT INTO answers (id, question, answer, category, metadata, content_hash, "
           "imported_at) VALUES (?,?,?,?,?,?,?)", self.answers)
        ex("INSERT INTO chunks (answer_id, position, chunk_id, text, source) VALUES (?,?,?,?,?)",
           self.chunks)
        ex("INSERT INTO claims (id, answer_id, claim_id, position, text) VALUES (?,?,?,?,?)",
           self.claims)
        ex("INSERT INTO judge_verdicts (run_id, claim_pk, verdict, raw_verdict, rationale, "
           "evidence) VALUES (?,?,?,?,?,?)", self.verdicts)
        self.answers, self.chunks, self.claims, self.verdicts = [], [], [], []


def import_answers(
    db: Database,
    path: str | Path,
    *,
    judge_model: str | None = None,
    judge_prompt_version: str | None = None,
    mapping: dict[str, Verdict] | None = None,
    encoding: str | None = None,
) -> ImportReport:
    """Import one JSONL / JSON-array file of judged answers, all or nothing.

    A JSONL export of this tool is restored losslessly instead (see `export.restore_answers`).
    """
    path = Path(path)
    if _is_export(path, encoding):
        from .export import restore_answers
        return restore_answers(db, path, encoding=encoding)
    return import_records(db, iter_json_records(path, encoding), source=path,
                          judge_model=judge_model, judge_prompt_version=judge_prompt_version,
                          mapping=mapping)


def import_records(
    db: Database,
    records: Iterable[tuple[int, Any]],
    *,
    source: str | Path,
    judge_model: str | None = None,
    judge_prompt_version: str | None = None,
    mapping: dict[str, Verdict] | None = None,
) -> ImportReport:
    """Import (line number, parsed value) pairs of judged answers, all or nothing.

    `records` is read inside the write transaction, so an error it raises (an adapter's
    InputError) rolls everything back too; `source` names the file in problem lines.
    """
    report = ImportReport()
    problems = _Problems(Path(source))
    seen: set[str] = set()
    with store.write(db):
        writer = _Writer(db, report)
        for line, value in records:
            if isinstance(value, json.JSONDecodeError):
                problems.add(line, f"malformed JSON: {value.msg} (column {value.colno})")
                continue
            if not isinstance(value, dict):
                problems.add(line, "each record must be a JSON object")
                continue
            try:
                rec = JudgedAnswerIn.model_validate(value)
            except ValidationError as exc:
                for msg in _field_errors(exc):
                    problems.add(line, msg)
                continue
            if rec.id in seen:
                problems.add(line, f"id: duplicate id {rec.id!r} in the file")
                continue
            seen.add(rec.id)
            model = rec.judge_model or judge_model
            version = rec.judge_prompt_version or judge_prompt_version
            if not model or not version:
                missing = "judge_model" if not model else "judge_prompt_version"
                flag = missing.replace("_", "-")
                problems.add(line, f"{missing}: missing (put it in the file or give --{flag})")
                continue
            verdicts: list[Verdict] = []
            texts: set[str] = set()
            for i, claim in enumerate(rec.claims):
                if claim.id is None and claim.text in texts:
                    problems.add(line, f"claims.{i}.text: repeats an earlier claim of this "
                                       "answer; give the claims ids or drop the repeat")
                texts.add(claim.text)
                try:
                    verdict, spelling = parse_verdict(claim.verdict, mapping)
                except ValueError as exc:
                    problems.add(line, f"claims.{i}.verdict: {exc}")
                    continue
                verdicts.append(verdict)
                report.mappings[(spelling, verdict.value)] += 1
            if problems:
                continue  # keep validating, but write nothing more
            conflict = writer.add(rec, verdicts, writer.run_id(model, version))
            if conflict:
                problems.add(line, conflict)
        if not seen and not problems:
            problems.add(None, "no judged answers in the file")
        problems.raise_if_any()
        writer.flush()
    # Spellings equal to the canonical name are not worth reporting as mappings.
    report.mappings = Counter({k: n for k, n in report.mappings.items()
                               if k[0] != k[1].casefold()})
    return report


# ---------------------------------------------------------------- human labels


@dataclass
class LabelsReport:
    new: int = 0
    unchanged: int = 0
    reviewers: set[str] = field(default_factory=set)
    mappings: Counter[tuple[str, str]] = field(default_factory=Counter)

    def lines(self) -> list[str]:
        out = [f"labels: {self.new} new or changed, {self.unchanged} unchanged",
               f"reviewers: {', '.join(sorted(self.reviewers)) or 'none'}"]
        out += [f"  {raw} -> {canon}: {n}" for (raw, canon), n in sorted(self.mappings.items())
                if raw != canon.casefold()]
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

    A JSONL export of this tool is restored losslessly instead (see `export.restore_labels`):
    blind and final verdicts, reconciles, evidence, notes and the event history with its times.
    """
    path = Path(path)
    if _is_export(path, encoding):
        from .export import restore_labels
        return restore_labels(db, path, encoding=encoding)
    report = LabelsReport()
    problems = _Problems(path)
    with store.write(db), _open_text(path, encoding) as fh:
        reader = csv.DictReader(fh)
        try:
            header = reader.fieldnames or []
        except UnicodeDecodeError as exc:
            raise _decode_error(path, 1, exc, encoding) from exc
        except csv.Error as exc:
            raise InputError(f"{path}:1: {exc}") from exc
        missing = [c for c in ("answer_id", "claim_id", "verdict") if c not in header]
        if "reviewer" not in header and not reviewer:
            missing.append("reviewer (or give --reviewer)")
        if missing:
            raise InputError(f"{path}:1: missing column(s): {', '.join(missing)}; "
                             "nothing was imported")
        seen: dict[tuple[str, str, str], int] = {}
        try:
            for row in reader:
                line = reader.line_num
                data = {k: (v.strip() if isinstance(v, str) else v) for k, v in row.items()
                        if k is not None}
                if not data.get("reviewer"):
                    data["reviewer"] = reviewer
                try:
                    rec = LabelRowIn.model_validate(data)
                except ValidationError as exc:
                    for msg in _field_errors(exc):
                        problems.add(line, msg)
                    continue
                try:
                    verdict, spelling = parse_verdict(rec.verdict, mapping)
                except ValueError as exc:
                    problems.add(line, f"verdict: {exc}")
                    continue
                key = (rec.answer_id, rec.claim_id, rec.reviewer)
                if key in seen:
                    problems.add(line, f"claim_id: {rec.claim_id!r} of {rec.answer_id!r} is "
                                       f"labeled twice by {rec.reviewer!r} (first on line {seen[key]})")
                    continue
                seen[key] = line
                try:
                    pk = store.claim_pk(db, rec.answer_id, rec.claim_id)
                except CalibrationError as exc:
                    problems.add(line, f"claim_id: {exc}")
                    continue
                bad = [e for e in rec.evidence if db.execute(
                    "SELECT 1 FROM chunks WHERE answer_id = ? AND chunk_id = ?",
                    [rec.answer_id, e]).fetchone() is None]
                if bad:
                    problems.add(line, f"evidence: {', '.join(bad)} names no chunk of this answer")
                    continue
                report.mappings[(spelling, verdict.value)] += 1
                if problems:
                    continue
                state = store.label_state(db, pk, rec.reviewer)
                if (state is not None and state.status == "labeled"
                        and state.final_verdict == verdict.value
                        and (rec.note or None) == state.note and rec.evidence == state.evidence):
                    report.unchanged += 1
                else:
                    store.record_label(db, claim=pk, reviewer=rec.reviewer, kind="import",
                                       verdict=verdict, evidence=rec.evidence, note=rec.note or None)
                    report.new += 1
                report.reviewers.add(rec.reviewer)
        except UnicodeDecodeError as exc:
            raise _decode_error(path, reader.line_num + 1, exc, encoding) from exc
        except csv.Error as exc:
            raise InputError(f"{path}:{reader.line_num}: {exc}; nothing was imported") from exc
        problems.raise_if_any()
    return report


# ---------------------------------------------------------------- restore of an export


def _is_export(path: Path, encoding: str | None) -> bool:
    # The export module imports this one, so it is imported late.
    from .export import is_export_file
    return is_export_file(path, encoding)


# ---------------------------------------------------------------- demo

DATA_DIR = store.PROJECT_ROOT / "data"
DEMO_FILES = (DATA_DIR / "demo" / "demo_rag_v1.jsonl",
              DATA_DIR / "wice" / "wice_judged_gpt4.jsonl",
              DATA_DIR / "wice" / "wice_judged_gpt35.jsonl")
DEMO_LABELS = DATA_DIR / "wice" / "wice_human_labels.csv"
DEMO_CYCLE = "demo"


def load_demo(db: Database) -> list[str]:
    """Load the demo data and open a demo cycle; running it again changes nothing."""
    out: list[str] = []
    for path in DEMO_FILES:
        rep = import_answers(db, path)
        out.append(f"{path.name}: {rep.answers_new} new answers, {rep.verdicts_new} new verdicts")
    rep_l = import_labels(db, DEMO_LABELS)
    out.append(f"{DEMO_LABELS.name}: {rep_l.new} new labels")
    try:
        from . import cycles
    except ImportError:  # cycles are optional for the bare import demo
        return out
    if not any(c.name == DEMO_CYCLE for c in cycles.list_cycles(db)):
        cycles.create_cycle(db, name=DEMO_CYCLE, judge_run="demo-judge@grounding-v1",
                            size=5, seed=1, strategy="random", reviewers=[], overlap=0.0,
                            force=True, created_by="demo")
        out.append(f"cycle {DEMO_CYCLE!r}: open to every reviewer")
    return out


# ---------------------------------------------------------------- CLI handlers


def _mapping(args: argparse.Namespace) -> dict[str, Verdict]:
    try:
        return parse_mapping(args.map)
    except ValueError as exc:
        raise InputError(str(exc)) from exc


def cli_import(args: argparse.Namespace) -> int:
    from .cli import _db_path

    mapping = _mapping(args)
    with store.session(_db_path(args)) as db:
        for path in args.files:
            rep = import_answers(db, path, judge_model=args.judge_model,
                                 judge_prompt_version=args.judge_prompt_version,
                                 mapping=mapping, encoding=args.encoding)
            print(f"{path}:")
            for line in rep.lines():
                print(f"  {line}")
    return 0


def cli_import_labels(args: argparse.Namespace) -> int:
    from .cli import _db_path

    mapping = _mapping(args)
    with store.session(_db_path(args)) as db:
        for path in args.files:
            rep = import_labels(db, path, reviewer=args.reviewer, mapping=mapping,
                                encoding=args.encoding)
            print(f"{path}:")
            for line in rep.lines():
                print(f"  {line}")
    return 0


def cli_demo(args: argparse.Namespace) -> int:
    from .cli import _db_path

    with store.session(_db_path(args)) as db:
        for line in load_demo(db):
            print(line)
    return 0


__all__ = ["ConflictError", "ImportReport", "LabelsReport", "import_answers", "import_labels",
           "import_records", "iter_json_records", "load_demo"]
