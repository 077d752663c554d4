"""The load test's database: the demo, plus one open cycle of generated judged answers.

Everything goes through the package's own import and cycle functions (as a lead would with
the CLI), so the database has the shape the app meets in use: the demo's two judge runs,
its human labels and open demo cycle, and a second open cycle large enough that no
simulated reviewer runs out of claims during a run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calibration import cycles, store
from calibration.importing import import_answers, load_demo
from tests.browser.conftest import write_answers

JUDGE_MODEL = "load-judge"
PROMPT_VERSION = "v1"
JUDGE_RUN = f"{JUDGE_MODEL}@{PROMPT_VERSION}"
CYCLE_NAME = "load test"
CLAIMS_PER_ANSWER = 3
VERDICTS = ("SUPPORTED", "CONTRADICTED", "UNSUPPORTED")

# The words every bench's generated texts are made of.
WORDS = [
    "delivery",
    "payment",
    "invoice",
    "warehouse",
    "discount",
    "approval",
    "order",
    "contract",
    "customer",
    "specification",
    "pickup",
    "schedule",
    "price",
    "manager",
    "director",
    "period",
    "working",
    "days",
    "refund",
    "carrier",
    "pallet",
    "quote",
]


@dataclass(frozen=True, slots=True)
class LoadCycle:
    cycle_id: int
    name: str
    answers: int
    claims: int
    # claim pk -> the judge's verdict, so a simulated reviewer can agree or disagree on purpose
    judge: dict[int, str]


def generated_answers(n: int, seed: int) -> list[dict[str, Any]]:
    """n judged answers of three claims and three chunks each, in the import format."""
    rng = random.Random(seed)

    def sentence(k: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(k)).capitalize() + "."

    out = []
    for i in range(n):
        claims = [sentence(7) for _ in range(CLAIMS_PER_ANSWER)]
        chunks = [
            {"id": f"S{j + 1}", "text": sentence(30), "source": f"kb/L{i:04d}/S{j + 1}"} for j in range(3)
        ]
        out.append(
            {
                "id": f"L{i:04d}",
                "question": sentence(10)[:-1] + "?",
                "answer": " ".join(claims),
                "category": rng.choice(["single-fact", "multi-fact", "procedure"]),
                "chunks": chunks,
                "claims": [
                    {
                        "id": f"c{k + 1}",
                        "claim": text,
                        "verdict": rng.choices(VERDICTS, weights=(6, 1, 3))[0],
                        "rationale": f"Rationale: {sentence(12)}",
                        "evidence": [rng.choice(chunks)["id"]],
                    }
                    for k, text in enumerate(claims)
                ],
            }
        )
    return out


def build(db_path: Path, n_answers: int, seed: int = 11) -> LoadCycle:
    """The demo, `n_answers` generated answers, and one cycle holding all of them, open to
    every reviewer (so every simulated reviewer's queue is the whole cycle)."""
    jsonl = write_answers(
        db_path.with_suffix(".jsonl"),
        generated_answers(n_answers, seed),
        judge_model=JUDGE_MODEL,
        prompt_version=PROMPT_VERSION,
    )
    with store.session(db_path) as db:
        load_demo(db)
        import_answers(db, jsonl)
        cyc = cycles.create_cycle(
            db,
            name=CYCLE_NAME,
            judge_run=JUDGE_RUN,
            size=n_answers,
            seed=seed,
            strategy="random",
            reviewers=[],
            overlap=0.0,
            force=True,
            created_by="load test",
        )
        judge = {
            int(pk): str(v)
            for pk, v in db.execute(
                """SELECT v.claim_pk, v.verdict FROM judge_verdicts v
               JOIN judge_runs r ON r.id = v.run_id
               JOIN claims c ON c.id = v.claim_pk
               JOIN cycle_answers ca ON ca.answer_id = c.answer_id AND ca.cycle_id = :cycle_id
               WHERE r.judge_model = :judge_model AND r.prompt_version = :prompt_version""",
                {"cycle_id": cyc.id, "judge_model": JUDGE_MODEL, "prompt_version": PROMPT_VERSION},
            )
        }
    return LoadCycle(cyc.id, cyc.name, n_answers, len(judge), judge)


def label_counts(db_path: Path, cycle_id: int) -> dict[str, tuple[int, int]]:
    """Per reviewer in the cycle: (label rows holding a blind verdict, blind-verdict events).

    Read straight from SQLite after the run, so a verdict the page acknowledged but the
    database lost shows up as a shortfall against the client's own count."""
    with store.session(db_path) as db:
        rows = db.execute(
            """SELECT reviewer,
                      COUNT(DISTINCT CASE WHEN blind_verdict IS NOT NULL THEN claim_pk END)
               FROM human_labels
               WHERE claim_pk IN (SELECT c.id FROM claims c JOIN cycle_answers ca
                                  ON ca.answer_id = c.answer_id WHERE ca.cycle_id = :cycle_id)
               GROUP BY reviewer""",
            {"cycle_id": cycle_id},
        ).fetchall()
        events = dict(
            db.execute(
                "SELECT reviewer, COUNT(*) FROM label_events WHERE cycle_id = :cycle_id AND kind = 'blind' "
                "GROUP BY reviewer",
                {"cycle_id": cycle_id},
            ).fetchall()
        )
    return {str(r): (int(n), int(events.get(r, 0))) for r, n in rows}


__all__ = ["CYCLE_NAME", "JUDGE_RUN", "LoadCycle", "build", "generated_answers", "label_counts"]
