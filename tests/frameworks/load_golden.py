"""Load an exported golden set with its framework's own classes; print what was loaded as JSON.

Run by the frameworks' venv (`make frameworks`), not the project's: DeepEval, Ragas and Langfuse
pin other versions of the libraries the app uses. Usage: load_golden.py FORMAT FILE.
"""

from __future__ import annotations

import inspect
import json
import sys


def deepeval(path: str) -> list[dict]:
    from deepeval.dataset import EvaluationDataset

    dataset = EvaluationDataset()
    dataset.add_goldens_from_json_file(file_path=path)
    return [
        {
            "question": g.input,
            "answer": g.actual_output,
            "contexts": g.retrieval_context or [],
            "claims": (g.additional_metadata or {}).get("claims") or [],
        }
        for g in dataset.goldens
    ]


def ragas(path: str) -> list[dict]:
    from ragas import EvaluationDataset

    dataset = EvaluationDataset.from_jsonl(path)
    with open(path, encoding="utf-8") as fh:  # Ragas keeps only its fields: the claims ride beside
        claims = [json.loads(line)["calibration"]["claims"] for line in fh]
    return [
        {"question": s.user_input, "answer": s.response, "contexts": s.retrieved_contexts or [], "claims": c}
        for s, c in zip(dataset.samples, claims, strict=True)
    ]


def langfuse(path: str) -> list[dict]:
    from langfuse import Langfuse
    from langfuse.api import CreateDatasetItemRequest

    # The client's documented call takes each line as its keyword arguments; the request it sends
    # is this model (no Langfuse server here to send it to).
    signature = inspect.signature(Langfuse.create_dataset_item)
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            kwargs = json.loads(line)
            signature.bind(None, dataset_name="golden", **kwargs)
            item = CreateDatasetItemRequest(dataset_name="golden", **kwargs)
            out.append(
                {
                    "question": item.input["question"],
                    "answer": item.input["answer"],
                    "contexts": [c["text"] for c in item.input["contexts"]],
                    "claims": item.expected_output["claims"],
                }
            )
    return out


def main() -> None:
    fmt, path = sys.argv[1], sys.argv[2]
    items = {"deepeval": deepeval, "ragas": ragas, "langfuse": langfuse}[fmt](path)
    verdicts = [c["expected_verdict"] for item in items for c in item["claims"]]
    print(
        json.dumps(
            {
                "items": len(items),
                "complete": sum(
                    bool(i["question"] and i["answer"] and i["contexts"] and i["claims"]) for i in items
                ),
                "chunk_text": sum(all(isinstance(t, str) and t for t in i["contexts"]) for i in items),
                "negatives": sum(
                    any(c["expected_verdict"] != "SUPPORTED" for c in i["claims"]) for i in items
                ),
                "verdicts": sorted(set(verdicts)),
            }
        )
    )


if __name__ == "__main__":
    main()
