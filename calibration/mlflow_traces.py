"""MLflow both ways: traces with a judge's assessments in, the reviewers' final labels back out.

Over the tracking server's REST API (MLflow 3 traces: ``/api/3.0/mlflow/traces``), so the app
needs no MLflow package of its own.

In: each trace of an experiment carrying a feedback assessment named `assessment` from an LLM
judge (source type ``LLM_JUDGE``, else any non-human source) becomes one judged answer: the root
span's input is the question, its output the answer, the RETRIEVER spans' documents the chunks.
Claim-level when the feedback's value is a list of ``{"claim", "verdict"}`` objects; otherwise
answer-level: the whole answer is one claim (id ``answer``), said so in the import's report. The
judge's words ("yes"/"no", true/false, "pass"/"fail", verdict names) are mapped to verdicts and
kept as the raw verdicts; the trace id is kept in the answer's metadata under ``mlflow``.

Out: for every such answer with a final human label, one feedback assessment under the judge's
assessment name and in the judge's own words, source type ``HUMAN`` with the reviewer (or the
adjudicating lead) as source id, so MLflow's judge alignment pairs it with the judge's.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from .errors import InputError, NotFoundError
from .models import normalise_spelling
from .vocab import Verdict

TRACES = "/api/3.0/mlflow/traces"
ANSWER_CLAIM = "answer"  # the one claim of an answer-level judgment: the whole answer
HUMAN = "HUMAN"
# The judge's words for a verdict, lower-cased; what is written back is the word the judge used.
WORDS: dict[str, Verdict] = {
    **{w: Verdict.SUPPORTED for w in ("yes", "true", "pass", "supported", "grounded", "1")},
    **{w: Verdict.UNSUPPORTED for w in ("no", "false", "fail", "unsupported", "not grounded", "0")},
    "contradicted": Verdict.CONTRADICTED,
}


class Server:
    """A tracking server's REST API; a server that cannot be reached or refuses is an InputError."""

    def __init__(self, uri: str, client: httpx.Client | None = None) -> None:
        self.uri = uri.rstrip("/")
        self.http = client or httpx.Client(timeout=30.0)

    def call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            reply = self.http.request(method, f"{self.uri}{path}", **kwargs)
        except httpx.HTTPError as exc:
            raise InputError(f"MLflow tracking server {self.uri}: {exc}") from exc
        if reply.status_code == 404:
            raise NotFoundError(f"MLflow tracking server {self.uri}: {path} not found ({reply.text[:200]})")
        if reply.status_code >= 400:
            raise InputError(f"MLflow tracking server {self.uri} refused {path}: {reply.text[:300]}")
        found: dict[str, Any] = reply.json()
        return found

    def experiment_id(self, name: str) -> str:
        found = self.call("GET", "/api/2.0/mlflow/experiments/get-by-name", params={"experiment_name": name})
        return str(found["experiment"]["experiment_id"])

    def traces(self, experiment_id: str) -> Iterator[dict[str, Any]]:
        """Every trace info of the experiment, assessments included, page by page."""
        token: str | None = None
        while True:
            body: dict[str, Any] = {
                "locations": [
                    {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}}
                ],
                "max_results": 500,
            }
            if token:
                body["page_token"] = token
            page = self.call("POST", f"{TRACES}/search", json=body)
            yield from page.get("traces") or []
            token = page.get("next_page_token")
            if not token:
                return

    def spans(self, trace_id: str) -> list[dict[str, Any]]:
        return list(
            (self.call("GET", f"{TRACES}/get", params={"trace_id": trace_id})["trace"]).get("spans") or []
        )

    def add_feedback(self, trace_id: str, name: str, value: Any, source_id: str, rationale: str) -> None:
        assessment = {
            "assessment_name": name,
            "trace_id": trace_id,
            "source": {"source_type": HUMAN, "source_id": source_id},
            "feedback": {"value": value},
            "rationale": rationale,
        }
        self.call("POST", f"{TRACES}/{trace_id}/assessments", json={"assessment": assessment})


# ---------------------------------------------------------------- spans (OpenTelemetry values)


def _value(v: Mapping[str, Any]) -> Any:
    """An OpenTelemetry AnyValue as plain Python."""
    if "string_value" in v:
        return v["string_value"]
    for key in ("int_value", "double_value", "bool_value"):
        if key in v:
            return v[key]
    if "array_value" in v:
        return [_value(x) for x in v["array_value"].get("values") or []]
    if "kvlist_value" in v:
        return {x["key"]: _value(x.get("value") or {}) for x in v["kvlist_value"].get("values") or []}
    return None


def _attributes(span: Mapping[str, Any]) -> dict[str, Any]:
    return {a["key"]: _value(a.get("value") or {}) for a in span.get("attributes") or []}


def _text(value: Any) -> str:
    """A span's input or output as the text a reviewer reads."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in ("question", "query", "input", "answer", "output", "content", "text"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return json.dumps(value, ensure_ascii=False) if value is not None else ""


def _chunks(spans: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for span in spans:
        attrs = _attributes(span)
        if attrs.get("mlflow.spanType") != "RETRIEVER" or not isinstance(
            attrs.get("mlflow.spanOutputs"), list
        ):
            continue
        for doc in attrs["mlflow.spanOutputs"]:
            if isinstance(doc, Mapping) and isinstance(doc.get("page_content"), str):
                meta = doc.get("metadata")
                uri = meta.get("doc_uri") if isinstance(meta, Mapping) else None
                source = uri if isinstance(uri, str) else None
                cid = (
                    doc.get("id") if isinstance(doc.get("id"), str) and doc.get("id") else f"d{len(out) + 1}"
                )
                out.append({"id": cid, "text": doc["page_content"], "source": source})
    return out


# ---------------------------------------------------------------- in


@dataclass(frozen=True, slots=True)
class TraceImport:
    """What `read` found: the import records and a note per kind of thing it could not use."""

    records: list[tuple[int, dict[str, Any]]]
    answer_level: int  # traces judged as a whole answer (one claim each)
    claim_level: int
    skipped: dict[str, int]  # why -> traces


def _judge_feedback(info: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    found = [
        a
        for a in info.get("assessments") or []
        if a.get("assessment_name") == name
        and "feedback" in a
        and (a.get("source") or {}).get("source_type") != HUMAN
    ]
    found.sort(
        key=lambda a: ((a.get("source") or {}).get("source_type") != "LLM_JUDGE", a.get("create_time") or "")
    )
    return found[0] if found else None


def _word(value: Any) -> str:
    """A feedback value as the judge's word: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def _known(value: Any) -> bool:
    return _word(value).strip().lower() in WORDS


def mapping() -> dict[str, Verdict]:
    """The judge's words as an import mapping (`importing.import_records`): each kept as the raw
    verdict, so the words written back are the judge's own."""
    return {normalise_spelling(w): v for w, v in WORDS.items()}


def read(server: Server, experiment: str, assessment: str) -> TraceImport:
    """Judged answers from the experiment's traces that carry the judge's `assessment`."""
    experiment_id = experiment if experiment.isdigit() else server.experiment_id(experiment)
    records: list[tuple[int, dict[str, Any]]] = []
    skipped: Counter[str] = Counter()
    levels: Counter[str] = Counter()
    for n, info in enumerate(server.traces(experiment_id), start=1):
        feedback = _judge_feedback(info, assessment)
        if feedback is None:
            skipped[f"no judge assessment named {assessment!r}"] += 1
            continue
        spans = server.spans(str(info["trace_id"]))
        root = next((s for s in spans if not s.get("parent_span_id")), spans[0] if spans else {})
        record = _record(info, _attributes(root), spans, feedback)
        if record is None:
            skipped["a value that names no verdict"] += 1
            continue
        levels["answer" if record["claims"][0]["id"] == ANSWER_CLAIM else "claim"] += 1
        records.append((n, record))
    return TraceImport(records, levels["answer"], levels["claim"], dict(skipped))


def _record(
    info: Mapping[str, Any],
    attrs: Mapping[str, Any],
    spans: Sequence[Mapping[str, Any]],
    feedback: Mapping[str, Any],
) -> dict[str, Any] | None:
    value = (feedback.get("feedback") or {}).get("value")
    answer = _text(attrs.get("mlflow.spanOutputs"))
    rationale = feedback.get("rationale")
    if isinstance(value, list):
        items = [i for i in value if isinstance(i, Mapping) and isinstance(i.get("claim"), str)]
        if len(items) != len(value) or not all(_known(i.get("verdict")) for i in items):
            return None
        claims = [
            {"id": f"c{n}", "text": i["claim"], "verdict": _word(i["verdict"]), "rationale": rationale}
            for n, i in enumerate(items, start=1)
        ]
    elif _known(value):
        claims = [
            {
                "id": ANSWER_CLAIM,
                "text": answer or "(empty answer)",
                "verdict": _word(value),
                "rationale": rationale,
            }
        ]
    else:
        return None
    source = feedback.get("source") or {}
    return {
        "id": str(info["trace_id"]),
        "question": _text(attrs.get("mlflow.spanInputs")),
        "answer": answer,
        "chunks": _chunks(spans),
        "claims": claims,
        "judge_model": str(source.get("source_id") or "mlflow-judge"),
        "metadata": {"mlflow": {"trace_id": info["trace_id"]}},
    }


# ---------------------------------------------------------------- out


@dataclass(frozen=True, slots=True)
class Written:
    traces: int  # traces that got a human assessment
    left_out: int  # answers from MLflow without a final human label on every claim


def _json_word(word: str) -> Any:
    """The judge's word as the value it wrote: JSON it was written as (true, 1), else the string."""
    try:
        found = json.loads(word)
    except ValueError:
        return word
    return found if isinstance(found, (bool, int, float)) else word


def judge_words(groups: Iterable[Sequence[Mapping[str, Any]]], run: str) -> dict[str, str]:
    """verdict -> the word judge run `run` used for it (its raw verdict), over every claim given."""
    return {
        j["verdict"]: j["raw_verdict"] or j["verdict"]
        for claims in groups
        for c in claims
        for j in c["judge"]
        if j["run"] == run
    }


def human_value(claims: Sequence[Mapping[str, Any]], words: Mapping[str, str]) -> Any:
    """The reviewers' final labels in the judge's `words` (`judge_words`): one word for an
    answer-level judgment, the claim list for a claim-level one (a verdict the judge never used
    is written by its name)."""

    def word(verdict: str) -> Any:
        return _json_word(words.get(verdict, verdict))

    if len(claims) == 1 and claims[0]["claim_id"] == ANSWER_CLAIM:
        return word(claims[0]["final_verdict"])
    return [{"claim": c["claim"], "verdict": word(c["final_verdict"])} for c in claims]


def source_of(claims: Sequence[Mapping[str, Any]]) -> str:
    """Who the final labels are from: the adjudicating lead where one decided, else the reviewers."""
    names: list[str] = []
    for c in claims:
        adjudication = c.get("adjudication")
        if adjudication:
            who = [adjudication["adjudicator"]]
        else:
            who = [r["reviewer"] for r in c["reviewers"] if r["status"] == "labeled"]
        names += [w for w in who if w not in names]
    return ", ".join(names)


def write_back(
    server: Server, groups: Iterator[Sequence[Mapping[str, Any]]], *, run: str, assessment: str
) -> Written:
    """One human assessment named `assessment` per answer judge run `run` judged from MLflow whose
    claims all have a final human label (export records, one answer's claims per group)."""
    traces = left_out = 0
    answers = list(groups)
    words = judge_words(answers, run)
    for claims in answers:
        origin = (claims[0].get("metadata") or {}).get("mlflow")
        if not isinstance(origin, Mapping) or not isinstance(origin.get("trace_id"), str):
            continue
        if any(c["final_verdict"] is None for c in claims):
            left_out += 1
            continue
        how = ", ".join(sorted({str(c["final_status"]) for c in claims}))
        rationale = f"final human label from judge-calibration ({how})"
        server.add_feedback(
            origin["trace_id"], assessment, human_value(claims, words), source_of(claims), rationale
        )
        traces += 1
    return Written(traces, left_out)
