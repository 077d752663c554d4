"""Golden sets in the evaluation frameworks' own formats: DeepEval, Ragas and Langfuse.

One item per answer that has a final human label on some claim, negatives included (answers
with a CONTRADICTED or UNSUPPORTED claim, and answers with no SUPPORTED claim at all), each
carrying the question, the answer, the chunk texts, every labeled claim with its expected verdict
and evidence, and the provenance: who labeled it, how each final label was reached, the cycles,
the judge runs, the day, and a content version (SHA-256 over the items, the day left out), so two
exports can be compared. Each file loads with its framework's documented API:

* ``deepeval``: a JSON array of goldens for ``EvaluationDataset.add_goldens_from_json_file``
  (``input``, ``actual_output``, ``expected_output``, ``retrieval_context``,
  ``additional_metadata``);
* ``ragas``: JSONL of single-turn samples for ``EvaluationDataset.from_jsonl`` (``user_input``,
  ``response``, ``retrieved_contexts``, ``reference``, the evidence as ``reference_contexts``);
  Ragas keeps only its own fields, so the claims and provenance ride under ``calibration``, which
  it ignores;
* ``langfuse``: JSONL of the keyword arguments of ``Langfuse.create_dataset_item`` (``input``,
  ``expected_output``, ``metadata``) but the dataset's name, which the team chooses.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

from .vocab import Verdict

FORMATS = ("deepeval", "ragas", "langfuse")


@dataclass(frozen=True, slots=True)
class FrameworkCounts:
    """What a framework export wrote."""

    items: int  # answers written, one item each
    negatives: int  # of them, items with a CONTRADICTED or UNSUPPORTED claim
    no_evidence: int  # of them, items with a labeled claim whose reviewers chose no evidence chunk
    content_version: str  # SHA-256 of the items (the day left out)

    def lines(self) -> list[str]:
        out = [
            f"  {self.items:,} items, {self.negatives:,} of them negatives (a claim humans found "
            f"CONTRADICTED or UNSUPPORTED); content version {self.content_version[:16]}"
        ]
        if self.no_evidence:
            out.append(
                f"warning: {self.no_evidence:,} of {self.items:,} items hold a claim without evidence: "
                "reviewers chose no chunk (a cycle can require evidence)"
            )
        return out


def _claim(rec: Mapping[str, Any]) -> dict[str, Any]:
    labeled = [r for r in rec["reviewers"] if r["status"] == "labeled"]
    evidence = sorted({e for r in labeled for e in r["evidence"]})
    return {
        "claim_id": rec["claim_id"],
        "claim": rec["claim"],
        "expected_verdict": rec["final_verdict"],
        "decided": rec["final_status"],  # unanimous, adjudicated, ...: how the final label was reached
        "evidence_chunk_ids": evidence,
        "reviewers": sorted({r["reviewer"] for r in labeled}),
        "adjudicated_by": None if rec["adjudication"] is None else rec["adjudication"]["adjudicator"],
    }


def answer_items(
    groups: Iterable[Sequence[Mapping[str, Any]]], references: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The framework-neutral items of the export records, one answer's records per group: answers
    without any final human label are left out."""
    items = []
    for group in groups:
        claims = [_claim(rec) for rec in group if rec["final_verdict"] is not None]
        if not claims:
            continue
        first = group[0]
        supported = [c["claim"].strip() for c in claims if c["expected_verdict"] == Verdict.SUPPORTED]
        written = references.get(first["answer_id"])
        items.append(
            {
                "answer_id": first["answer_id"],
                "question": first["question"],
                "answer": first["answer"],
                "category": first["category"],
                "chunks": first["chunks"],
                "claims": claims,
                "reference": written if written is not None else (" ".join(supported) or None),
                "reference_written_by_lead": written is not None,
                "grounded": all(c["expected_verdict"] == Verdict.SUPPORTED for c in claims),
                "cycles": sorted({name for rec in group for name in rec["cycles"]}),
                "judge_runs": sorted({j["run"] for rec in group for j in rec["judge"]}),
            }
        )
    return items


def content_version(items: Sequence[Mapping[str, Any]]) -> str:
    """SHA-256 over the items as canonical JSON: equal exactly when two exports hold the same items."""
    digest = hashlib.sha256()
    for item in items:
        digest.update(json.dumps(item, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n")
    return digest.hexdigest()


def _metadata(item: Mapping[str, Any], version: str, day: str, tool: str) -> dict[str, Any]:
    return {
        "answer_id": item["answer_id"],
        "category": item["category"],
        "claims": item["claims"],
        "grounded": item["grounded"],
        "reference_written_by_lead": item["reference_written_by_lead"],
        "cycles": item["cycles"],
        "judge_runs": item["judge_runs"],
        "exported": day,
        "content_version": version,
        "exported_by": f"judge-calibration {tool}",
    }


def _evidence_texts(item: Mapping[str, Any]) -> list[str]:
    cited = {e for c in item["claims"] for e in c["evidence_chunk_ids"]}
    return [ch["text"] for ch in item["chunks"] if ch["id"] in cited]


def deepeval_golden(item: Mapping[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """A DeepEval golden: the answer as the actual output, the chunks as the retrieval context."""
    return {
        "input": item["question"],
        "actual_output": item["answer"],
        "expected_output": item["reference"],
        "retrieval_context": [ch["text"] for ch in item["chunks"]],
        "context": _evidence_texts(item) or None,
        "additional_metadata": meta,
        "name": item["answer_id"],
    }


def ragas_sample(item: Mapping[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """A Ragas single-turn sample; the claims and provenance under a key Ragas ignores."""
    cited = {e for c in item["claims"] for e in c["evidence_chunk_ids"]}
    return {
        "user_input": item["question"],
        "response": item["answer"],
        "retrieved_contexts": [ch["text"] for ch in item["chunks"]],
        "retrieved_context_ids": [ch["id"] for ch in item["chunks"]],
        "reference_contexts": _evidence_texts(item),
        "reference_context_ids": [ch["id"] for ch in item["chunks"] if ch["id"] in cited],
        "reference": item["reference"],
        "calibration": meta,
    }


def langfuse_item(item: Mapping[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of `Langfuse.create_dataset_item` (the dataset name aside)."""
    expected = {
        "reference": item["reference"],
        "grounded": item["grounded"],
        "claims": [
            {k: c[k] for k in ("claim_id", "claim", "expected_verdict", "evidence_chunk_ids")}
            for c in item["claims"]
        ],
    }
    question = {"question": item["question"], "answer": item["answer"], "contexts": item["chunks"]}
    return {"input": question, "expected_output": expected, "metadata": meta}


_SHAPES = {"deepeval": deepeval_golden, "ragas": ragas_sample, "langfuse": langfuse_item}


def write(
    fmt: str, items: Sequence[Mapping[str, Any]], fh: TextIO, *, tool: str, now: datetime | None = None
) -> FrameworkCounts:
    """Write `items` (`answer_items`) to `fh` in `fmt`; DeepEval's file is one JSON array, the
    others JSONL."""
    version = content_version(items)
    day = (now or datetime.now(UTC)).strftime("%Y-%m-%d")
    shaped = [_SHAPES[fmt](item, _metadata(item, version, day, tool)) for item in items]
    lines = [json.dumps(s, ensure_ascii=False, allow_nan=False) for s in shaped]
    if fmt == "deepeval":
        fh.write("[\n" + ",\n".join(lines) + "\n]\n")
    else:
        fh.write("".join(line + "\n" for line in lines))
    negatives = sum(not item["grounded"] for item in items)
    no_evidence = sum(any(not c["evidence_chunk_ids"] for c in item["claims"]) for item in items)
    return FrameworkCounts(len(items), negatives, no_evidence, version)


__all__ = [
    "FORMATS",
    "FrameworkCounts",
    "answer_items",
    "content_version",
    "deepeval_golden",
    "langfuse_item",
    "ragas_sample",
    "write",
]
