"""The order a label file lists its labels in moves no decision: an import's labels share one time,
and the flag's sequential rules take them in a seeded order (`store.scope.label_order`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from calibration import report, store
from calibration.importing import import_answers, import_labels
from calibration.store import Database

N = 1200  # more than one short write of labels (`store.labels.LABEL_BATCH`)
RUN = "m@order"


def _answers(tmp_path: Path) -> Path:
    src = tmp_path / "answers.jsonl"
    src.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"a{i:04d}",
                    "question": "q",
                    "answer": "a",
                    "judge_model": "m",
                    "judge_prompt_version": "order",
                    "chunks": [{"id": "S1", "text": "t"}],
                    "claims": [{"id": "c1", "claim": "x", "verdict": "SUPPORTED"}],
                }
            )
            + "\n"
            for i in range(N)
        ),
        encoding="utf-8",
    )
    return src


def _labels(tmp_path: Path, order: list[int], human: list[str]) -> Path:
    out = tmp_path / "labels.csv"
    rows = [f"a{i:04d},c1,{human[i]},ann" for i in order]
    out.write_text("answer_id,claim_id,verdict,reviewer\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return out


def _flag(db: Database) -> tuple[str, object]:
    scoped = report.scope_report(db, store.find_judge_run(db, RUN), None, bootstrap=0)
    rules = scoped.report.rules
    return scoped.report.flag.status, None if rules is None else rules.to_dict()


def test_sorting_a_label_file_changes_no_decision(tmp_path: Path) -> None:
    # A judge right on 89.8% of claims: its errors are humans' UNSUPPORTED where it said SUPPORTED.
    rng = np.random.default_rng(7)
    wrong = set(rng.choice(N, size=N - int(0.898 * N), replace=False).tolist())
    human = ["UNSUPPORTED" if i in wrong else "SUPPORTED" for i in range(N)]
    answers = _answers(tmp_path)
    outcomes = []
    for name, order in (
        ("disagreements-first", sorted(range(N), key=lambda i: (i not in wrong, i))),
        ("disagreements-last", sorted(range(N), key=lambda i: (i in wrong, i))),
        ("shuffled", rng.permutation(N).tolist()),
    ):
        with store.session(tmp_path / f"{name}.db") as db:
            import_answers(db, answers)
            import_labels(db, _labels(tmp_path, order, human))
            rank = store.scope.label_order(db, store.find_judge_run(db, RUN).id, np.arange(1, N + 1))
            assert np.unique(rank).size == 1  # one file, one time: its batches do not split it
            outcomes.append(_flag(db))
    assert outcomes[0] == outcomes[1] == outcomes[2]
