"""MLflow's own client, run by the frameworks' venv: log traces a judge assessed, log an aligned
judge's assessments on them, or read the assessments back. Usage: mlflow_client.py log|align|read URI."""

from __future__ import annotations

import json
import os
import sys

os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"  # a trace is stored before its feedback

import mlflow
from mlflow.entities import AssessmentSource, AssessmentSourceType, Document, SpanType

EXPERIMENT = "rag"
# (question, answer, chunk, the judge's feedback value): two answer-level, one claim-level.
CASES = [
    ("Capital of France?", "Paris is the capital of France.", "Paris is the capital of France.", "yes"),
    ("Population of Paris?", "Paris has 90 million people.", "Paris has about 2 million people.", "no"),
    (
        "Where is the Louvre?",
        "The Louvre is in Paris. It opened in 1999.",
        "The Louvre, in Paris, opened in 1793.",
        [
            {"claim": "The Louvre is in Paris.", "verdict": "yes"},
            {"claim": "It opened in 1999.", "verdict": "yes"},
        ],
    ),
]


def log() -> None:
    mlflow.set_experiment(EXPERIMENT)
    judge = AssessmentSource(source_type=AssessmentSourceType.LLM_JUDGE, source_id="gpt-4o")
    for question, answer, chunk, value in CASES:

        @mlflow.trace(span_type=SpanType.RETRIEVER)
        def retrieve(q: str, text: str = chunk) -> list[Document]:
            return [Document(page_content=text, id="doc-1", metadata={"doc_uri": "kb/paris.md"})]

        @mlflow.trace
        def rag(question: str, reply: str = answer) -> str:
            retrieve(question)
            return reply

        rag(question)
        trace_id = mlflow.get_last_active_trace_id()
        mlflow.log_feedback(
            trace_id=trace_id, name="groundedness", value=value, source=judge, rationale="judged"
        )


def align() -> None:
    """An aligned judge's assessments (as after MLflow's judge alignment): right on the 1999 claim."""
    experiment = mlflow.get_experiment_by_name(EXPERIMENT)
    judge = AssessmentSource(source_type=AssessmentSourceType.LLM_JUDGE, source_id="gpt-4o-aligned")
    for trace in mlflow.search_traces(experiment_ids=[experiment.experiment_id], return_type="list"):
        value = next(a.value for a in trace.info.assessments if a.name == "groundedness")
        if isinstance(value, list):
            value = [{**c, "verdict": "no" if "1999" in c["claim"] else c["verdict"]} for c in value]
        mlflow.log_feedback(
            trace_id=trace.info.trace_id, name="groundedness_aligned", value=value, source=judge
        )


def read() -> None:
    experiment = mlflow.get_experiment_by_name(EXPERIMENT)
    out = []
    for trace in mlflow.search_traces(experiment_ids=[experiment.experiment_id], return_type="list"):
        for a in trace.info.assessments:
            out.append(
                {
                    "trace_id": trace.info.trace_id,
                    "name": a.name,
                    "source_type": str(a.source.source_type),
                    "source_id": a.source.source_id,
                    "value": a.value,
                }
            )
    print(json.dumps(out))


if __name__ == "__main__":
    mlflow.set_tracking_uri(sys.argv[2])
    {"log": log, "align": align, "read": read}[sys.argv[1]]()
