"""The commit an imported label completes (`answer_reveals` rows written by the import rule).

An answer every claim of which carries a reviewer's imported label (`import-labels`, kind
'import': blind and final at once) is committed for that reviewer, as if they had taken the
last look: the verdicts were given outside the tool and are final, so the review queue and the
lead's progress count such an answer alike, and the reviewer goes on to reconcile, not to
re-confirm a spreadsheet. An answer also holding the reviewer's own blind labels from the
review page is left to their explicit commit. Every writer of a current label calls
`commit_imported` after the write, in its transaction (m012 kept this rule in triggers; m017
dropped them so that it has one home, in Python, on every backend).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from sqlalchemy import Insert, and_, bindparam, exists, func, literal, null, or_, select

from .core import ONE, upsert
from .database import Database
from .tables import Int, answer_reveals, claims, human_labels, label_events

SETTLING_KINDS = ("blind", "unclear", "import")  # the events that settle a claim for a reviewer


@functools.cache
def _commit_insert(dialect: str) -> Insert:
    """For one current label (:claim, :reviewer) just written: when it is labeled and the
    reviewer's latest event on the claim is an import, the answer is committed for them if every
    claim of it is labeled with a blind verdict whose latest blind/unclear/import event is an
    import."""
    c, h, c2, h2, e = (
        claims.alias("c"),
        human_labels.alias("h"),
        claims.alias("c2"),
        human_labels.alias("h2"),
        label_events.alias("e"),
    )
    latest_kind = (
        select(e.c.kind)
        .where(e.c.claim_pk == c.c.id, e.c.reviewer == h.c.reviewer)
        .order_by(e.c.id.desc())
        .limit(ONE)
        .scalar_subquery()
    )
    latest_settling = (
        select(e.c.kind)
        .where(
            e.c.claim_pk == h2.c.claim_pk,
            e.c.reviewer == h2.c.reviewer,
            e.c.kind.in_([literal(k) for k in SETTLING_KINDS]),
        )
        .order_by(e.c.id.desc())
        .limit(ONE)
        .scalar_subquery()
    )
    unsettled = (
        select(literal(1))
        .select_from(c2.outerjoin(h2, and_(h2.c.claim_pk == c2.c.id, h2.c.reviewer == h.c.reviewer)))
        .where(
            c2.c.answer_id == c.c.answer_id,
            or_(
                h2.c.claim_pk.is_(None),
                h2.c.status != "labeled",
                h2.c.blind_verdict.is_(None),
                func.coalesce(latest_settling, "") != "import",
            ),
        )
    )
    source = (
        select(c.c.answer_id, h.c.reviewer, null(), h.c.updated_at, bindparam("import_id", type_=Int))
        .select_from(c.join(h, and_(h.c.claim_pk == c.c.id, h.c.reviewer == bindparam("reviewer"))))
        .where(
            c.c.id == bindparam("claim"), h.c.status == "labeled", latest_kind == "import", ~exists(unsettled)
        )
    )
    cols = ["answer_id", "reviewer", "cycle_id", "revealed_at", "import_id"]
    return (
        upsert(dialect, answer_reveals)
        .from_select(cols, source)
        .on_conflict_do_nothing(index_elements=[answer_reveals.c.answer_id, answer_reveals.c.reviewer])
    )


def commit_imported(db: Database, labels: Sequence[tuple[int, str]], import_id: int | None = None) -> None:
    """Record the commit each just-written current label (claim pk, reviewer) completes, if any.

    The commit takes the label's time, and `import_id` (the staged label import writing the
    labels, whose rows readers hide until it is done). A commit already there stays as it was."""
    if labels:
        db.run(
            _commit_insert(db.dialect),
            [{"claim": claim, "reviewer": reviewer, "import_id": import_id} for claim, reviewer in labels],
        )


def commit_imported_of(db: Database, reviewer: str) -> None:
    """`commit_imported` for every current label of `reviewer` (after labels moved to the name)."""
    found = db.run(select(human_labels.c.claim_pk).where(human_labels.c.reviewer == reviewer)).scalars()
    commit_imported(db, [(c, reviewer) for c in found])
