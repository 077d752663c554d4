"""Closing labeling for a judge run: the lead's end of a study, which takes the final reading.

A decision spends its error budget on the running rule, read at every look, and on one final
fixed-sample reading when labeling ends (`decisions.error_split`, docs/decisions.md). The end is
declared by a lead, never by the labels' outcome: closing labeling records who closed it and
when, and takes the final reading there and then, once, from the labels given so far
(`decisions.LabelingEnd`). From then on:

- no new cycle is drawn from the run (`refuse_if_closed`: the planner and the drawing refuse);
- reviewers may still finish the claims of cycles drawn before. Their labels count in every figure
  and in the running rule (valid at every look), but not in the final reading: read again on later
  labels it would be a second look at alpha_final, and the overall false-decision rate would no
  longer be held at alpha.

Closing is one way: nothing undoes it (a backup made before it can be restored instead).
"""

from __future__ import annotations

from . import decisions, store
from .errors import ConflictError, InputError
from .fmt import closed_words
from .store import Database


def closed_sentence(run: store.JudgeRun, found: store.LabelingClosure) -> str:
    """Why no cycle is drawn from a closed run, in a lead's words."""
    return (
        f"{closed_words(found.closed_by, found.closed_at, start=True)} for run {run.name}: no new cycle is "
        "drawn from it (closing is one way; its decision is the final reading taken at closing)"
    )


def refuse_if_closed(db: Database, run: store.JudgeRun) -> None:
    """ConflictError when the run's labeling is closed: no cycle is planned or drawn from it."""
    found = store.labeling_closure(db, run.id)
    if found is not None:
        raise ConflictError(closed_sentence(run, found))


def close_labeling(db: Database, judge_run: str | None, *, closed_by: str) -> store.LabelingClosure:
    """Close labeling for `judge_run` (MODEL@VERSION, or VERSION when unique; None: the most recently
    imported run), by the lead `closed_by`: the final reading is taken now from the labels so far and
    stored with the closure. Refused for a run without a single labeled claim (nothing to read) and
    for a run already closed. Who may close (a lead) is the caller's check."""
    from . import report  # the statistics stack loads only when asked for

    who = (closed_by or "").strip()
    if not who:
        raise InputError("closed by: name the lead who closes labeling")
    with store.write(db):
        store.labels.hold_all_labels(db)  # the final reading is taken from one state of the labels
        run = store.find_judge_run(db, judge_run)
        found = store.labeling_closure(db, run.id)
        if found is not None:
            raise ConflictError(
                f"run {run.name}: {closed_words(found.closed_by, found.closed_at)} already; closing is "
                "one way"
            )
        now = decisions.LabelingEnd(who, store.now())
        scoped = report.scope_report(db, run, bootstrap=0, closing=now)
        rules = scoped.report.rules
        if not scoped.report.n_claims or rules is None:
            raise InputError(
                f"run {run.name} has no claim with both a judge verdict and a final human label yet: "
                "the final reading would have nothing to read; label claims first"
            )
        by_rule = {r.rule: r for r in rules.rules}
        ar, dr = by_rule["agreement"], by_rule["direction"]
        taken = decisions.LabelingEnd(
            who,
            now.closed_at,
            (ar.final_low, ar.final_high),
            (dr.final_low, dr.final_high),
            scoped.report.n_claims,
        )
        return store.close_labeling(db, run.id, who, taken.reading_dict())
