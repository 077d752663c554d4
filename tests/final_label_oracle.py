"""The final-label rule written out per record: an independent oracle for `final_label.resolve`.

The package applies the rule on arrays (`calibration.final_label`); these loops say the same
thing one claim at a time, so tests can compare the two.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from calibration.agreement import label_index


def final_human_label(
    verdicts: Sequence[str], adjudicated: str | None = None, *, unclear: bool = False
) -> str | None:
    """The label a claim counts with.

    The adjudicated label if any; else, when any reviewer marked the claim unclear ("needs
    discussion"), none; else the reviewers' unanimous final verdict. None (unresolved) also when
    reviewers disagree and nobody adjudicated, or when nobody labelled.
    """
    if adjudicated is not None:
        label_index(adjudicated)
        return adjudicated
    distinct = set(verdicts)
    for v in distinct:
        label_index(v)
    if unclear:
        return None
    return next(iter(distinct)) if len(distinct) == 1 else None


@dataclass(frozen=True, slots=True)
class FinalLabels:
    labels: dict[str, str]
    unresolved: tuple[str, ...]


def resolve_final_labels(
    labels: Iterable[tuple[str, str, str]],
    adjudicated: Mapping[str, str] | None = None,
    unclear: Iterable[str] = (),
) -> FinalLabels:
    """Apply :func:`final_human_label` to every claim.

    ``labels`` holds (claim_key, reviewer, verdict), one current verdict per reviewer and claim.
    ``unclear`` holds the keys of claims some reviewer marked unclear: unresolved unless
    adjudicated. Claims only adjudicated or only marked unclear count too.  Unresolved claims are
    returned in first-seen order (labels, then adjudications, then unclear marks) so the caller
    can count them and leave them out of judge agreement.
    """
    adjudicated = adjudicated or {}
    unclear = set(unclear)
    by_claim: dict[str, list[str]] = {}
    for claim, _reviewer, verdict in labels:
        by_claim.setdefault(claim, []).append(verdict)
    for claim in adjudicated:
        by_claim.setdefault(claim, [])
    for claim in sorted(unclear):
        by_claim.setdefault(claim, [])
    final: dict[str, str] = {}
    unresolved: list[str] = []
    for claim, verdicts in by_claim.items():
        label = final_human_label(verdicts, adjudicated.get(claim), unclear=claim in unclear)
        if label is None:
            unresolved.append(claim)
        else:
            final[claim] = label
    return FinalLabels(final, tuple(unresolved))
