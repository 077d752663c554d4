"""The one rule for the final human label of a claim, on arrays.

For each claim, in this order:
1. a lead's adjudication, if there is one, is the label (status adjudicated);
2. else, if any reviewer marked the claim unclear ("needs discussion"), it has no label:
   a lead decides (status needs discussion);
3. else, if every reviewer's final verdict (after reconcile) is the same verdict, that is
   the label (status unanimous);
4. else it has none: reviewers disagree (disputed) or nobody gave a final verdict
   (unlabeled).

Claims that are disputed or need discussion are *unresolved*: reports leave them out and
count them, and an answer with one is not "labeled" for sampling. Skipped labels carry no
verdict and count for nothing. Pure numpy; `store.claims` feeds it from the database and
every report, export and sampling pool reads the result from there.
"""

from __future__ import annotations

import numpy as np

from .vocab import CLAIM_STATUSES, LABELS, ClaimStatus

NO_LABEL = -1
_CODE = {s: i for i, s in enumerate(CLAIM_STATUSES)}


def resolve(n_claims: int, label_claim: np.ndarray, label_final: np.ndarray,
            adjudicated: np.ndarray, unclear: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


AGREED_CODES = np.array([_CODE[ClaimStatus.UNANIMOUS], _CODE[ClaimStatus.ADJUDICATED]])
UNRESOLVED_CODES = np.array([_CODE[ClaimStatus.DISPUTED], _CODE[ClaimStatus.NEEDS_DISCUSSION]])
UNLABELED_CODE = _CODE[ClaimStatus.UNLABELED]
