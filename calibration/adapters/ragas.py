"""Ragas faithfulness: the per-statement verdicts as Ragas' own tracer records them.

Shape (ragas 0.2.6 to 0.4.0, `src/ragas/callbacks.py`): `RagasTracer.to_jsons()` writes a JSON
array of `ChainRun` objects `{run_id, parent_run_id, name, inputs, metadata, outputs, children}`
(this adapter also reads them one a line). `evaluate()` (`src/ragas/evaluation.py`) opens one
chain per dataset row, named "row N", with `metadata.type` "row", `metadata.row_index` N and
`inputs` the sample (`SingleTurnSample.model_dump()`: `user_input`, `response`,
`retrieved_contexts`, `retrieved_context_ids` since 0.3, ...). Under it each metric opens a
chain named after the metric ("faithfulness", `src/ragas/metrics/_faithfulness.py`), and
under that each prompt a chain (`PydanticPrompt.generate`, `src/ragas/prompt/pydantic_prompt.py`)
with `inputs.data` the prompt input and `outputs.output` a list of parsed outputs. The verdict
prompt (`NLIStatementPrompt`) outputs `{"statements": [{"statement", "reason", "verdict"}]}`,
verdict 1 when the statement "can be directly inferred" from the context, else 0. The
verdict prompt is found by that output shape, not by its name, which Ragas derives from the
class name.

Verdicts map as 1 → SUPPORTED, 0 → UNSUPPORTED: Ragas asks only whether a statement can be
inferred, so 0 joins "contradicted" and "not stated"; a team whose judge means contradiction
by 0 says `--map 0=CONTRADICTED`.

Not in the trace: the judge model (Ragas records no model name), so `--judge-model` is
required, and `--judge-prompt-version` too; answer ids (rows are numbered, not named), so an
answer's id is "<file stem>:<row_index>" unless `id_prefix=` is given; chunk ids are
`retrieved_context_ids` when given, else positions "1", "2", ...
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import Option
from ..models import Verdict, map_hint
from ..reading import BadRecord, Problems, iter_json_records
from ._common import AdapterResult, Record, merged_mapping

NAME = "ragas"
DEFAULT_MAPPING: dict[str, Verdict] = {"1": Verdict.SUPPORTED, "0": Verdict.UNSUPPORTED}


def read(
    path: str | Path,
    *,
    judge_model: str | None = None,
    judge_prompt_version: str | None = None,
    mapping: dict[str, Verdict] | None = None,
    encoding: str | None = None,
    metric: str = "faithfulness",
    id_prefix: str | None = None,
    skip_failed: bool = False,
) -> AdapterResult:
    """Read a Ragas trace file (`RagasTracer.to_jsons()` output, or its runs one a line)."""
    path = Path(path)
    table = merged_mapping(DEFAULT_MAPPING, mapping)
    result = AdapterResult(
        tool=NAME,
        source=path,
        records=iter(()),
        mapping=table,
        spellings=tuple(DEFAULT_MAPPING),
        judge_model=judge_model,
        judge_prompt_version=judge_prompt_version,
        notes=[
            (
                "Ragas records no judge model or prompt version: they come from ",
                Option.JUDGE_MODEL,
                " and ",
                Option.JUDGE_PROMPT_VERSION,
            ),
            (f"answer ids are '{id_prefix or path.stem}:<row index>' (Ragas rows have no ids)",),
        ],
    )
    result.records = _records(path, encoding, table, metric, id_prefix or path.stem, skip_failed, result)
    return result


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _verdict_output(run: dict[str, Any]) -> list[Any] | None:
    """The statements of a verdict prompt's output, or None when `run` is another prompt."""
    outputs = run.get("outputs")
    out = outputs.get("output") if isinstance(outputs, dict) else None
    if isinstance(out, list):
        out = out[0] if out else None
    if not isinstance(out, dict):
        return None
    statements = out.get("statements")
    if (
        isinstance(statements, list)
        and statements
        and all(isinstance(s, dict) and "verdict" in s for s in statements)
    ):
        return statements
    return None


def _records(
    path: Path,
    encoding: str | None,
    table: dict[str, Verdict],
    metric: str,
    prefix: str,
    skip_failed: bool,
    result: AdapterResult,
) -> Iterator[Record]:
    problems = Problems(path)
    runs: dict[str, tuple[int, int, dict[str, Any]]] = {}
    rows: list[tuple[int, int, dict[str, Any]]] = []
    for i, (line, run) in enumerate(iter_json_records(path, encoding)):
        if isinstance(run, BadRecord):
            problems.add(line, run.message)
            continue
        if not isinstance(run, dict) or not isinstance(run.get("run_id"), str):
            problems.add(line, "not a Ragas trace run (a JSON object with run_id)", f"[{i}]")
            continue
        runs[run["run_id"]] = (i, line, run)
        meta = _obj(run.get("metadata"))
        if meta.get("type") == "row":
            rows.append((i, line, run))
    problems.raise_if_any()
    if not rows:
        raise problems.fail(None, "no 'row' runs: not a trace of ragas.evaluate()")
    found = skipped = 0
    for i, line, row in rows:
        at = f"[{i}]"
        metric_run = None
        for child in row.get("children") or []:
            entry = runs.get(child) if isinstance(child, str) else None
            if entry is not None and entry[2].get("name") == metric:
                metric_run = entry
                break
        if metric_run is None:
            continue
        found += 1
        statements: list[tuple[str, int, int, dict[str, Any]]] = []
        for child in metric_run[2].get("children") or []:
            entry = runs.get(child) if isinstance(child, str) else None
            if entry is None:
                continue
            got = _verdict_output(entry[2])
            if got is not None:
                statements += [
                    (f"[{entry[0]}].outputs.output.statements.{k}", entry[1], k, s) for k, s in enumerate(got)
                ]
        if not statements:
            if skip_failed:
                skipped += 1
                continue
            problems.add(
                metric_run[1],
                f"this {metric} run has no per-statement verdicts (did the metric "
                "fail?); nothing to import for it",
                f"[{metric_run[0]}]",
                ("or leave such rows out with ", Option.SKIP_FAILED),
            )
            continue
        claims: list[dict[str, Any]] = []
        for where, s_line, _k, s in statements:
            text, verdict, reason = s.get("statement"), s.get("verdict"), s.get("reason")
            if not isinstance(text, str) or not text.strip():
                problems.add(s_line, "missing or empty", f"{where}.statement")
                continue
            if isinstance(verdict, bool):
                verdict = int(verdict)
            if not isinstance(verdict, int | str) or str(verdict).strip() not in table:
                problems.add(
                    s_line,
                    f"unknown Ragas verdict {verdict!r}; expected 1 or 0",
                    f"{where}.verdict",
                    map_hint(str(verdict)),
                )
                continue
            claims.append(
                {
                    "id": f"c{len(claims) + 1}",
                    "text": text,
                    "verdict": str(verdict).strip(),
                    "rationale": reason if isinstance(reason, str) else None,
                }
            )
        sample = _obj(row.get("inputs"))
        contexts = sample.get("retrieved_contexts") or []
        if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
            problems.add(line, "must be a list of strings", f"{at}.inputs.retrieved_contexts")
            continue
        ids = sample.get("retrieved_context_ids")
        if isinstance(ids, list) and len(ids) == len(contexts):
            chunks: list[Any] = [{"id": str(k), "text": c} for k, c in zip(ids, contexts, strict=True)]
        else:
            chunks = list(contexts)
        index = _obj(row.get("metadata")).get("row_index", i)
        if problems:
            continue
        yield (
            line,
            {
                "id": f"{prefix}:{index}",
                "question": sample.get("user_input") or "",
                "answer": sample.get("response") or "",
                "chunks": chunks,
                "claims": claims,
                "metadata": {
                    "ragas": {"row_index": index, "score": _obj(metric_run[2].get("outputs")).get("output")}
                },
            },
        )
    if not found and not problems:
        problems.add(None, f"no row of the trace has a {metric!r} run")
    problems.raise_if_any()
    if skipped:
        result.notes.append((f"{skipped} row(s) without verdicts (metric failed) were left out",))


def sniff(head: str) -> bool:
    """True when the start of a JSON file looks like a Ragas trace."""
    return '"run_id"' in head and '"parent_run_id"' in head and '"children"' in head


__all__ = ["DEFAULT_MAPPING", "NAME", "read", "sniff"]
