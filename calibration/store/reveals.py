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

from collections.abc import Sequence

from .database import Database

# For one current label (:claim, :reviewer) just written: when it is labeled and the reviewer's
# latest event on the claim is an import, the answer is committed for them if every claim of it
# is labeled with a blind verdict whose latest blind/unclear/import event is an import.
_COMMIT_SQL = """
    INSERT INTO answer_reveals (answer_id, reviewer, cycle_id, revealed_at, import_id)
    SELECT c.answer_id, h.reviewer, NULL, h.updated_at, :import_id
    FROM claims c JOIN human_labels h ON h.claim_pk = c.id AND h.reviewer = :reviewer
    WHERE c.id = :claim AND h.status = 'labeled'
      AND (SELECT e.kind FROM label_events e WHERE e.claim_pk = c.id AND e.reviewer = h.reviewer
           ORDER BY e.id DESC LIMIT 1) = 'import'
      AND NOT EXISTS (
          SELECT 1 FROM claims c2
          LEFT JOIN human_labels h2 ON h2.claim_pk = c2.id AND h2.reviewer = h.reviewer
          WHERE c2.answer_id = c.answer_id AND (
              h2.claim_pk IS NULL OR h2.status <> 'labeled' OR h2.blind_verdict IS NULL
              OR coalesce((SELECT e.kind FROM label_events e
                           WHERE e.claim_pk = h2.claim_pk AND e.reviewer = h2.reviewer
                             AND e.kind IN ('blind', 'unclear', 'import')
                           ORDER BY e.id DESC LIMIT 1), '') <> 'import'))
    ON CONFLICT (answer_id, reviewer) DO NOTHING"""


def commit_imported(db: Database, labels: Sequence[tuple[int, str]], import_id: int | None = None) -> None:
    """Record the commit each just-written current label (claim pk, reviewer) completes, if any.

    The commit takes the label's time, and `import_id` (the staged label import writing the
    labels, whose rows readers hide until it is done). A commit already there stays as it was."""
    if labels:
        db.executemany(
            _COMMIT_SQL,
            [{"claim": claim, "reviewer": reviewer, "import_id": import_id} for claim, reviewer in labels],
        )


def commit_imported_of(db: Database, reviewer: str) -> None:
    """`commit_imported` for every current label of `reviewer` (after labels moved to the name)."""
    claims = [r[0] for r in db.execute("SELECT claim_pk FROM human_labels WHERE reviewer = ?", [reviewer])]
    commit_imported(db, [(c, reviewer) for c in claims])
