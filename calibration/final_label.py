"""The one rule for the final human label of a claim, on arrays.

For each claim, in this order:
1. a lead's adjudication, if there is one, is the label (status adjudicated);
2. else, if any reviewer marked the claim unclear ("needs discussion"), it has no label:
   a lead decides (status needs discussion);
3. else, if every reviewer's final verdict (after reconcile) is the same verdict, that is
   the label (status unanimous);
4. else it has none: reviewers disagree (disputed) or nobody gave a final verdict
   (unlabeled).

Claims that are disputed or need discussion are *unresolved*: the final-label view leaves them
out and counts them, and an answer with one is not "labeled" for sampling. Skipped labels carry no
verdict and count for nothing. Pure numpy; `store.claims` feeds it from the database and
every report, export and sampling pool reads the result from there.

Beside the final label, `per_reviewer` keeps every reviewer's blind verdict (the per-reviewer
basis of the agreement report): where claims have several reviewers, dropping the disputed ones
would drop exactly the claims where someone found a hallucination, which favours the judge.
"""

from __future__ import annotations

import numpy as np

from .vocab import CLAIM_STATUSES, LABELS, ClaimStatus

NO_LABEL = -1
_CODE = {s: i for i, s in enumerate(CLAIM_STATUSES)}


def resolve(
    n_claims: int,
    label_claim: np.ndarray,
    label_final: np.ndarray,
    adjudicated: np.ndarray,
    unclear: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Final label and status of claims 0..n_claims-1.

    `label_claim[j]` is the claim of reviewer label j and `label_final[j]` its final verdict
    (an index into LABELS, -1 for none); `adjudicated[i]` the adjudicated verdict of claim i
    or -1; `unclear[i]` whether a reviewer marked it unclear. Returns `human` (index into
    LABELS, NO_LABEL where none) and `status` (index into `vocab.CLAIM_STATUSES`), int64.
    """
    k = len(LABELS)
    given = label_final >= 0
    per_verdict = np.zeros((k, n_claims), dtype=np.int64)
    for v in range(k):
        per_verdict[v] = np.bincount(label_claim[given & (label_final == v)], minlength=n_claims)
    n_labels = per_verdict.sum(axis=0)
    one_verdict = (per_verdict > 0).sum(axis=0) == 1
    adjudicated = np.asarray(adjudicated, dtype=np.int64)
    unclear = np.asarray(unclear, dtype=bool)
    is_adj = adjudicated >= 0
    unanimous = ~is_adj & ~unclear & one_verdict
    human = np.where(is_adj, adjudicated, np.where(unanimous, per_verdict.argmax(axis=0), NO_LABEL))
    status = np.full(n_claims, _CODE[ClaimStatus.UNLABELED], dtype=np.int64)
    status[~is_adj & ~unclear & (n_labels > 0) & ~one_verdict] = _CODE[ClaimStatus.DISPUTED]
    status[~is_adj & unclear] = _CODE[ClaimStatus.NEEDS_DISCUSSION]
    status[unanimous] = _CODE[ClaimStatus.UNANIMOUS]
    status[is_adj] = _CODE[ClaimStatus.ADJUDICATED]
    return human.astype(np.int64), status


def several_reviewers(label_claim: np.ndarray, verdict: np.ndarray) -> bool:
    """Does some claim carry verdicts from two or more reviewers (``verdict`` -1: none)?"""
    given = np.asarray(label_claim)[np.asarray(verdict) >= 0]
    return bool(given.size) and int(np.bincount(given).max()) >= 2


def per_reviewer(
    n_claims: int,
    label_claim: np.ndarray,
    label_reviewer: np.ndarray,
    blind: np.ndarray,
    final: np.ndarray,
    adjudicated: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One row per reviewer's verdict on a claim: (claim, reviewer, verdict), claim order then reviewer.

    The verdict is the reviewer's blind one (given before the judge was revealed), their final one
    where no blind verdict was recorded; on a claim a lead adjudicated (``adjudicated[i]`` >= 0,
    else -1) every row carries the lead's verdict instead, and an adjudicated claim nobody labeled
    gives one row (reviewer -1).  Labels without a verdict (skipped, unclear) give no row.
    """
    c = np.asarray(label_claim, dtype=np.int64).reshape(-1)
    r = np.asarray(label_reviewer, dtype=np.int64).reshape(-1)
    v = np.where(np.asarray(blind) >= 0, blind, final).astype(np.int64).reshape(-1)
    adj = np.asarray(adjudicated, dtype=np.int64).reshape(-1)
    keep = v >= 0
    c, r, v = c[keep], r[keep], v[keep]
    v = np.where(adj[c] >= 0, adj[c], v)
    alone = np.flatnonzero(adj >= 0)
    alone = alone[np.bincount(c, minlength=n_claims)[alone] == 0]
    c = np.concatenate([c, alone])
    r = np.concatenate([r, np.full(alone.size, -1, dtype=np.int64)])
    v = np.concatenate([v, adj[alone]])
    order = np.lexsort((r, c))
    return c[order], r[order], v[order]


UNRESOLVED_CODES = np.array([_CODE[ClaimStatus.DISPUTED], _CODE[ClaimStatus.NEEDS_DISCUSSION]])
UNLABELED_CODE = _CODE[ClaimStatus.UNLABELED]
ADJUDICATED_CODE = _CODE[ClaimStatus.ADJUDICATED]
