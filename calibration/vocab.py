"""The small fixed vocabularies, defined once: verdicts, label kinds and statuses.

Pure (no third-party import), so the statistics can use it without loading pydantic or
SQLAlchemy. The schema's CHECK constraints spell the same lists out literally (a shipped
migration is frozen); `tests/test_layering.py` fails if the two drift apart.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class Verdict(StrEnum):
    SUPPORTED = "SUPPORTED"
    CONTRADICTED = "CONTRADICTED"
    UNSUPPORTED = "UNSUPPORTED"


# The order is part of the data model: statistics index verdicts by position in it.
LABELS: Final[tuple[str, str, str]] = (
    Verdict.SUPPORTED.value,
    Verdict.CONTRADICTED.value,
    Verdict.UNSUPPORTED.value,
)

# Verdict colours, the same wherever a verdict is drawn (review, reveal, dashboard): green
# SUPPORTED, red CONTRADICTED, amber UNSUPPORTED. Only verdicts take them; "selected" and
# progress use the theme's neutral accent (.streamlit/config.toml).
VERDICT_COLOURS: Final[dict[str, str]] = {
    Verdict.SUPPORTED.value: "#2e7d32",
    Verdict.CONTRADICTED.value: "#c62828",
    Verdict.UNSUPPORTED.value: "#b26a00",
}

# label_events.kind: blind (before the reveal), skip / unclear (no verdict), keep /
# judge_right (reconcile after the reveal), import (a file's label, blind and final at once),
# adjudicate (a lead settles a claim).
LABEL_KINDS: Final[tuple[str, ...]] = (
    "blind",
    "skip",
    "unclear",
    "keep",
    "judge_right",
    "import",
    "adjudicate",
)
# human_labels.status, a reviewer's current state on a claim.
LABEL_STATUSES: Final[tuple[str, ...]] = ("labeled", "skipped", "unclear")
# human_labels.reconciled
RECONCILE_KINDS: Final[tuple[str, ...]] = ("keep", "judge_right")


class ClaimStatus(StrEnum):
    """Where a claim stands with the humans, whatever judge run it is read against."""

    UNANIMOUS = "unanimous"  # every reviewer who gave a final verdict gave the same one
    ADJUDICATED = "adjudicated"  # a lead settled it; that verdict wins
    DISPUTED = "disputed"  # reviewers disagree and nobody adjudicated
    NEEDS_DISCUSSION = "needs discussion"  # a reviewer marked it unclear; nobody adjudicated
    UNLABELED = "unlabeled"  # no final verdict from anyone

    @property
    def group(self) -> str:
        """The three-way status reports use: agreed, unresolved or unlabeled."""
        if self in (ClaimStatus.UNANIMOUS, ClaimStatus.ADJUDICATED):
            return "agreed"
        return "unlabeled" if self is ClaimStatus.UNLABELED else "unresolved"


# Integer codes of ClaimStatus in arrays (ClaimTable.status); order fixed.
CLAIM_STATUSES: Final[tuple[ClaimStatus, ...]] = tuple(ClaimStatus)
