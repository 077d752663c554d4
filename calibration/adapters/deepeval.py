"""DeepEval test runs: the claims and verdicts of its `FaithfulnessMetric`.

Files read (shapes from the deepeval sources, releases 0.21 to 4.1.10):

* the results-folder file that `DEEPEVAL_RESULTS_FOLDER` (or `results_folder=`) asks for:
  `test_run_YYYYMMDD_HHMMSS.json` since 4.0 (`deepeval/evaluate/local_store.py`,
  `write_test_run`), a file named `YYYYMMDD_HHMMSS` without extension before
  (`deepeval/test_run/test_run.py`, `save_test_run_locally`, 1.x to 3.x); and the rolling
  `.deepeval/.latest_run_full.json` of 4.x. All hold the `TestRun` model dumped by alias:
  `{"testFile", "testCases": [...], ...}`;
* `.deepeval/.latest_test_run.json` (3.x and 4.x, `TestRunManager.save_test_run`): the same
  body under `{"testRunData": ...}`. When the run was uploaded to Confident AI the file holds
  only `{"testRunLink": ...}` and there is nothing to import: this is said, not guessed.

A test case (`LLMApiTestCase`, `deepeval/test_run/api.py`) carries `name`, `input`,
`actualOutput`, `retrievalContext` (a list of strings), `metadata` (`additionalMetadata`
up to 3.x) and `metricsData` (`metricsMetadata` in 0.21, whose entries say `metric` where
later ones say `name`). Each metric entry (`MetricData`, `deepeval/tracing/api.py` in 4.x)
has `name` ("Faithfulness"), `score`, `reason`, `evaluationModel`, `error` and
`verboseLogs`. DeepEval keeps no structured claims in the file: they are only in
`verboseLogs`, a text the metric builds (`FaithfulnessMetric.measure`,
`deepeval/metrics/faithfulness/faithfulness.py`) from three steps joined by " \\n \\n"
("\\n\\n" before 1.3): "Truths...:\\n[...]", "Claims:\\n[...]", "Verdicts:\\n[...]". Lists
are written by `prettify_list` (`deepeval/utils.py`): each claim as `"` + text + `"`, not
JSON-escaped, joined by `",\\n    "`; each verdict as indented JSON
(`{"verdict": "yes"|"no"|"idk", "reason": ...}`, schema `FaithfulnessVerdict` in
`deepeval/metrics/faithfulness/schema.py`). So claims are cut at those exact separators
(a quote or backslash inside a claim survives), and verdicts are decoded as JSON.

Verdicts map as: yes → SUPPORTED, no → CONTRADICTED (the verdict prompt asks for "no" only
when the context contradicts the claim), idk → UNSUPPORTED; "borderline", which the issue
reports for 4.2 releases, → UNSUPPORTED too (not present in 4.1.10). `--map` overrides.

Where the file does not say: the answer id is the test case `name` (DeepEval's default is
`test_case_N`, unique within one run; give `id_key=` to take it from the test case metadata
instead); chunk ids are positions "1", "2", ... of `retrievalContext`; the judge model is
`evaluationModel` when present, else `--judge-model`; the prompt version is never recorded,
so `--judge-prompt-version` is required. Claim ids are positions c1, c2, ...
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import Option
from ..fmt import plural
from ..models import Verdict, map_hint, normalise_spelling
from ..reading import BadJson, BadRecord, BadValue, JsonStream, Problems, decode, text_file
from ._common import AdapterResult, Record, merged_mapping

NAME = "deepeval"
DEFAULT_MAPPING: dict[str, Verdict] = {
    "yes": Verdict.SUPPORTED,
    "no": Verdict.CONTRADICTED,
    "idk": Verdict.UNSUPPORTED,
    "borderline": Verdict.UNSUPPORTED,
}


def parse_verbose_logs(text: str) -> tuple[list[str], list[Any]]:
    """(claims, verdict objects) from a FaithfulnessMetric `verboseLogs` text.

    Raises ValueError naming what is missing; the caller adds file, line and field.
    """
    v = text.rfind("Verdicts:\n")
    if v < 0:
        raise ValueError("no 'Verdicts:' section (is this the Faithfulness metric?)")
    # Verdicts are JSON-escaped, so the last header is theirs; claims and truths are not, so the
    # claims header is the first one that follows the end of the truths list and a separator.
    ends = [c for sep in _SEPARATORS if (c := text.find(f"]{sep}Claims:\n", 0, v)) >= 0]
    if ends:
        start = text.index("Claims:\n", min(ends)) + len("Claims:\n")
    else:
        c = text.find("Claims:\n", 0, v)
        if c < 0:
            raise ValueError("no 'Claims:' section before 'Verdicts:'")
        start = c + len("Claims:\n")
    claims = split_pretty_strings(text[start:v].rstrip(" \n"))
    block = text[v + len("Verdicts:\n") :].lstrip()
    try:
        verdicts, _ = decode(block)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the 'Verdicts:' list is not JSON: {exc.msg}") from None
    except BadValue as exc:
        raise ValueError(f"the 'Verdicts:' list: {exc}") from None
    if not isinstance(verdicts, list):
        raise ValueError("the 'Verdicts:' section is not a list")
    return claims, verdicts


_SEPARATORS = (" \n \n", "\n\n")
_OPEN, _SEP, _CLOSE = '[\n    "', '",\n    "', '"\n]'


def split_pretty_strings(block: str) -> list[str]:
    """The inverse of deepeval's `prettify_list` for a list of strings."""
    if block == "[]":
        return []
    if not (block.startswith(_OPEN) and block.endswith(_CLOSE)) or len(block) < len(_OPEN) + len(_CLOSE):
        raise ValueError("the 'Claims:' list is not in the form deepeval writes")
    return block[len(_OPEN) : -len(_CLOSE)].split(_SEP)


def read(
    path: str | Path,
    *,
    judge_model: str | None = None,
    judge_prompt_version: str | None = None,
    mapping: dict[str, Verdict] | None = None,
    encoding: str | None = None,
    metric: str = "Faithfulness",
    id_key: str | None = None,
    skip_failed: bool = False,
) -> AdapterResult:
    """Read a DeepEval test run file; records are produced lazily, as `import_records` consumes them.

    `metric`: the metric name in `metricsData` (a renamed or custom faithfulness metric);
    `id_key`: take answer ids from this key of each test case's metadata; `skip_failed`: leave
    out test cases whose Faithfulness metric errored instead of refusing the file.
    """
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
        notes=[("the prompt version is not in DeepEval's file: it comes from ", Option.JUDGE_PROMPT_VERSION)],
    )
    result.records = _records(path, encoding, table, metric, id_key, skip_failed, result)
    return result


def _test_cases(doc: JsonStream, problems: Problems) -> Iterator[tuple[int, int, Any]]:
    try:
        if doc.peek() != "{":
            raise problems.fail(1, "a DeepEval test run is a JSON object with 'testCases'")
        hit = doc.member({"testRunData", "testCases", "testRunLink"})
        if hit == "testRunData":
            hit = doc.member({"testCases"})
        if hit != "testCases":
            if hit is not None:
                raise problems.fail(
                    1,
                    "this run was uploaded to Confident AI and the file holds only its "
                    "link; import the results-folder file (set DEEPEVAL_RESULTS_FOLDER) "
                    "or .deepeval/.latest_run_full.json",
                    "testRunLink",
                )
            raise problems.fail(1, "missing: not a DeepEval test run", "testCases")
        yield from doc.elements("testCases")
    except BadJson as exc:
        raise problems.fail(exc.line, str(exc)) from None


def _records(
    path: Path,
    encoding: str | None,
    table: dict[str, Verdict],
    metric: str,
    id_key: str | None,
    skip_failed: bool,
    result: AdapterResult,
) -> Iterator[Record]:
    with text_file(path, encoding) as fh:
        yield from _cases(path, JsonStream(fh), table, metric, id_key, skip_failed, result)


def _cases(
    path: Path,
    doc: JsonStream,
    table: dict[str, Verdict],
    metric: str,
    id_key: str | None,
    skip_failed: bool,
    result: AdapterResult,
) -> Iterator[Record]:
    problems = Problems(path)
    wanted = metric.casefold()
    found = skipped = 0
    models: set[str] = set()
    for i, line, case in _test_cases(doc, problems):
        at = f"testCases.{i}"
        if isinstance(case, BadRecord):
            problems.add(line, case.message)
            continue
        if not isinstance(case, dict):
            problems.add(line, "a test case must be a JSON object", at)
            continue
        key = "metricsData" if "metricsData" in case else "metricsMetadata"
        entries = case.get(key) or []
        if not isinstance(entries, list):
            problems.add(line, "must be a list", f"{at}.{key}")
            continue
        hit = [
            (j, m)
            for j, m in enumerate(entries)
            if isinstance(m, dict) and str(m.get("name", m.get("metric", ""))).casefold() == wanted
        ]
        if not hit:
            continue
        j, m = hit[0]
        where = f"{at}.{key}.{j}"
        found += 1
        if m.get("error"):
            if skip_failed:
                skipped += 1
                continue
            problems.add(
                line,
                f"the metric failed in DeepEval ({m['error']}); no verdicts to import",
                f"{where}.error",
                ("or leave such test cases out with ", Option.SKIP_FAILED),
            )
            continue
        logs = m.get("verboseLogs")
        if not isinstance(logs, str):
            problems.add(
                line, "missing: DeepEval writes claims and verdicts only there", f"{where}.verboseLogs"
            )
            continue
        try:
            claims, verdicts = parse_verbose_logs(logs)
        except ValueError as exc:
            problems.add(line, str(exc), f"{where}.verboseLogs")
            continue
        if len(claims) != len(verdicts):
            problems.add(
                line,
                f"{plural(len(claims), 'claim')} but {plural(len(verdicts), 'verdict')}",
                f"{where}.verboseLogs",
            )
            continue
        out_claims = []
        for k, (claim, v) in enumerate(zip(claims, verdicts, strict=True)):
            raw = v.get("verdict") if isinstance(v, dict) else None
            if not isinstance(raw, str) or normalise_spelling(raw) not in table:
                problems.add(
                    line,
                    f"unknown DeepEval verdict {raw!r}; expected yes, no, idk or borderline",
                    f"{where}.verboseLogs.verdicts.{k}",
                    map_hint(str(raw)),
                )
                continue
            reason = v.get("reason")
            out_claims.append(
                {
                    "id": f"c{k + 1}",
                    "text": claim,
                    "verdict": raw.strip(),
                    "rationale": reason if isinstance(reason, str) else None,
                }
            )
        meta = case.get("metadata", case.get("additionalMetadata"))
        meta = dict(meta) if isinstance(meta, dict) else {}
        if id_key is not None:
            ident = meta.get(id_key)
            if not isinstance(ident, str | int) or isinstance(ident, bool) or ident == "":
                problems.add(line, "missing: the answer id was to come from here", f"{at}.metadata.{id_key}")
                continue
        else:
            ident = case.get("name")
        model = m.get("evaluationModel")
        if isinstance(model, str) and model:
            models.add(model)
        else:
            model = None
        contexts = case.get("retrievalContext") or []
        if not isinstance(contexts, list) or not all(isinstance(t, str) for t in contexts):
            problems.add(line, "must be a list of strings", f"{at}.retrievalContext")
            continue
        meta["deepeval"] = {
            "test_case": case.get("name"),
            "score": m.get("score"),
            "success": m.get("success"),
            "threshold": m.get("threshold"),
        }
        if problems:
            continue  # keep checking, but hand nothing more to the importer
        yield (
            line,
            {
                "id": ident,
                "question": case.get("input") or "",
                "answer": case.get("actualOutput") or "",
                "chunks": contexts,
                "claims": out_claims,
                "judge_model": model,
                "metadata": meta,
            },
        )
    if not found and not problems:
        problems.add(None, f"no test case has a {metric!r} metric", "testCases")
    problems.raise_if_any()
    if skipped:
        result.notes.append((f"{skipped} test case(s) whose metric failed in DeepEval were left out",))
    if not models:
        result.notes.append(
            ("no evaluationModel in the file: the judge model comes from ", Option.JUDGE_MODEL)
        )


def sniff(head: str) -> bool:
    """True when the start of a JSON file looks like a DeepEval test run."""
    return any(k in head for k in ('"testRunData"', '"testCases"', '"testRunLink"'))


__all__ = ["DEFAULT_MAPPING", "NAME", "parse_verbose_logs", "read", "sniff", "split_pretty_strings"]
