"""Tuning and holdout claims: which human-labeled claims a lead may read while revising the
judge prompt, and which stay sealed until the revised prompt is checked on them.

The split is answer-level (a claim's part is its answer's: claims of one answer share its
question and chunks, so reading one would leak the others), reproducible (a stored seed) and
stratified by the judge's verdict on the answer (`answer_stratum`), so both parts see the
judge's verdicts in the same proportions. `assign_parts` is the rule, a pure function.

A holdout is sealed only on purpose: the lead's Seal button (`seal`), or the first lab run
(`judge run`, or the lab's run form after its confirm step) and `split show`, which bring the
split up to date (`ensure_split`). Opening a page writes nothing (`current`, `summary`).
Answers are assigned once, when they carry a label and the split is brought up to date; an
answer never moves. Answers reserved for holdout cycles (`holdout add`, the Cycles page) always
go to the holdout. While the holdout is sealed, a labeled answer not yet assigned counts as
sealed too: it may still land there.

Unsealing (`unseal`) is recorded with who and when, and marks that holdout used: a claim once
read cannot be unread, so a fresh holdout (`new_holdout`) takes only answers labeled later.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from . import store
from .errors import ConflictError, InputError
from .fmt import plural
from .store import Database, SplitRecord
from .text import check_text

DEFAULT_SEED = 20240601
# Half of the labels: the holdout's paired test has to find the discordant claims among them,
# and with the ~100 labeled claims of a first round a 20-30% holdout leaves too few to decide.
DEFAULT_HOLDOUT_SHARE = 0.5
STRATA = ("CONTRADICTED", "UNSUPPORTED", "SUPPORTED", "unjudged")


def answer_stratum(verdicts: Iterable[str]) -> str:
    """An answer's stratum from the judge's verdicts on its claims: CONTRADICTED if any claim
    is, else UNSUPPORTED if any is, else SUPPORTED; 'unjudged' when the run judged none."""
    seen = set(verdicts)
    for s in STRATA[:3]:
        if s in seen:
            return s
    return "unjudged"


def assign_parts(
    strata: Mapping[str, str], *, seed: int, holdout_share: float, forced_holdout: Iterable[str] = ()
) -> dict[str, str]:
    """answer id -> 'tuning' | 'holdout': stratified random allocation.

    Strata are taken in `STRATA` order (others after, by name). The holdout quota is
    allocated by cumulative rounding: after stratum k, round(share * (n_1 + ... + n_k))
    answers are holdout, so each stratum gets its share to within one answer and the total
    is round(share * N). Within a stratum the answers (sorted by id) are permuted by a
    numpy Generator seeded with `seed`; answers in `forced_holdout` fill the quota first
    (and are holdout even beyond it). The same inputs give the same split on any machine
    (numpy's PCG64 stream is stable for a given seed).
    """
    if not 0.0 < holdout_share < 1.0:
        raise InputError(f"holdout share {holdout_share}: use a number between 0 and 1")
    forced = set(forced_holdout)
    by_stratum: dict[str, list[str]] = {}
    for aid, s in strata.items():
        by_stratum.setdefault(s, []).append(aid)
    order = [s for s in STRATA if s in by_stratum] + sorted(s for s in by_stratum if s not in STRATA)
    rng = np.random.default_rng(seed)
    out: dict[str, str] = {}
    seen = taken = 0
    for s in order:
        ids = sorted(by_stratum[s])
        seen += len(ids)
        quota = max(0, int(np.floor(holdout_share * seen + 0.5)) - taken)
        perm = [ids[i] for i in rng.permutation(len(ids)).tolist()]
        first = [a for a in perm if a in forced]
        rest = [a for a in perm if a not in forced]
        chosen = first + rest[: max(0, quota - len(first))]
        for a in ids:
            out[a] = "tuning"
        for a in chosen:
            out[a] = "holdout"
        taken += len(chosen)
    return out


@dataclass(frozen=True, slots=True)
class Split:
    """The split as it stands: answer ids of each part (by id) and the seal."""

    generation: SplitRecord | None  # None: no split made yet
    tuning: list[str]
    holdout: list[str]
    pending: list[str]  # labeled answers not yet assigned (sealed while the holdout is)

    @property
    def sealed(self) -> bool:
        """True while the current holdout is sealed; with no split yet, the cycles' holdout
        answers are the sealed set (they were set aside for this before any split)."""
        return self.generation is None or self.generation.sealed

    @property
    def used(self) -> bool:
        """The current holdout was unsealed: its claims were read, it cannot prove a gain."""
        return self.generation is not None and not self.generation.sealed

    def to_dict(self) -> dict[str, object]:
        return {
            "tuning": self.tuning,
            "holdout": self.holdout,
            "sealed": self.sealed,
            "pending": self.pending,
            "used": self.used,
            "generation": None if self.generation is None else self.generation.id,
            "unsealed_by": None if self.generation is None else self.generation.unsealed_by,
            "unsealed_at": None if self.generation is None else self.generation.unsealed_at,
        }


def current(db: Database, run: store.JudgeRun | None = None) -> Split:
    """The split as stored (writes nothing); limited to the answers `run` judged, if given."""
    gen = store.split.current_split(db)
    assigned = store.split.assignments(db)
    labeled = store.split.labeled_answer_ids(db)
    cycle_holdout = store.split.cycle_holdout_answer_ids(db)
    holdout: set[str] = {a for a in cycle_holdout if a not in assigned}
    if gen is not None:
        holdout |= {a for a, (g, part) in assigned.items() if g == gen.id and part == "holdout"}
    pending = [a for a in labeled if a not in assigned and a not in holdout] if gen is not None else []
    labeled_set = set(labeled)
    tuning = [a for a in labeled if a not in holdout and a not in set(pending)]
    hold = sorted(a for a in holdout if a in labeled_set or a in assigned)
    if run is not None:
        mine = store.split.run_answer_ids(db, run.id)
        tuning = [a for a in tuning if a in mine]
        hold = [a for a in hold if a in mine]
        pending = [a for a in pending if a in mine]
    return Split(gen, tuning, hold, pending)


def claim_counts(db: Database, s: Split) -> dict[str, int]:
    """Claims per part (all claims of the part's answers): the sizes a page shows."""
    return {
        "tuning": len(store.split.claim_keys(db, s.tuning)),
        "holdout": len(store.split.claim_keys(db, s.holdout)),
        "pending": len(store.split.claim_keys(db, s.pending)),
    }


def _assign_pending(db: Database, gen: SplitRecord, stratify_run_id: int | None) -> int:
    assigned = store.split.assignments(db)
    todo = [a for a in store.split.labeled_answer_ids(db) if a not in assigned]
    if not todo:
        return 0
    verdicts = store.split.answer_judge_verdicts(db, stratify_run_id, todo)
    strata = {a: answer_stratum(v) for a, v in verdicts.items()}
    # A later batch gets its own stream (seed, generation, batch size), so re-running the
    # same state gives the same parts while batches do not all draw the first numbers.
    seed = int(np.random.SeedSequence([gen.seed, gen.id, len(assigned)]).generate_state(1)[0])
    parts = assign_parts(
        strata,
        seed=seed,
        holdout_share=gen.holdout_share,
        forced_holdout=store.split.cycle_holdout_answer_ids(db),
    )
    return store.split.assign_answers(db, gen.id, [(a, parts[a], strata[a]) for a in todo])


def ensure_split(
    db: Database,
    *,
    stratify_run: store.JudgeRun | None = None,
    created_by: str | None = None,
    seed: int = DEFAULT_SEED,
    holdout_share: float = DEFAULT_HOLDOUT_SHARE,
) -> Split:
    """Make the split if there is none, and assign labeled answers not assigned yet.

    The first split is stratified by `stratify_run`'s verdicts (default: the most recently
    imported run); `seed` and `holdout_share` apply only when the split is made.
    """
    gen = store.split.current_split(db)
    if gen is None:
        if not store.split.labeled_answer_ids(db):
            return current(db)
        run = stratify_run
        if run is None and store.judge_runs(db):
            run = store.find_judge_run(db, None)
        store.split.create_split(
            db,
            after=None,
            seed=seed,
            holdout_share=holdout_share,
            stratify_run_id=None if run is None else run.id,
            created_by=created_by,
        )
        gen = store.split.current_split(db)
        assert gen is not None
    if gen.sealed:
        # A used holdout takes no new answers: they wait for `new_holdout`, so that the fresh
        # holdout is made of claims nobody has read.
        _assign_pending(db, gen, gen.stratify_run_id)
    return current(db)


def seal(
    db: Database,
    *,
    created_by: str | None,
    stratify_run: store.JudgeRun | None = None,
    seed: int = DEFAULT_SEED,
    holdout_share: float = DEFAULT_HOLDOUT_SHARE,
) -> Split:
    """Seal the first holdout now (the lead asked for it): the split is made and the labeled
    answers assigned. Refused when a split exists (unseal it and start a fresh one instead)."""
    if store.split.current_split(db) is not None:
        raise ConflictError("a holdout was sealed already; a fresh one is made only after it was used")
    if not store.split.labeled_answer_ids(db):
        raise InputError("no claim has a human label yet: there is nothing to set aside")
    return ensure_split(
        db, stratify_run=stratify_run, created_by=created_by, seed=seed, holdout_share=holdout_share
    )


def seal_size(db: Database, holdout_share: float = DEFAULT_HOLDOUT_SHARE) -> tuple[int, int]:
    """(holdout answers, labeled answers) that `seal` would make now; writes nothing. The
    count does not depend on the seed (`assign_parts` allocates fixed quotas per stratum)."""
    labeled = store.split.labeled_answer_ids(db)
    runs = store.judge_runs(db)
    run = store.find_judge_run(db, None) if runs else None
    verdicts = store.split.answer_judge_verdicts(db, None if run is None else run.id, labeled)
    strata = {a: answer_stratum(v) for a, v in verdicts.items()}
    parts = assign_parts(
        strata,
        seed=DEFAULT_SEED,
        holdout_share=holdout_share,
        forced_holdout=store.split.cycle_holdout_answer_ids(db),
    )
    return sum(p == "holdout" for p in parts.values()), len(labeled)


def seal_words(db: Database) -> str:
    """The Seal button's words: what pressing it does, with its count."""
    held, labeled = seal_size(db)
    share = held / labeled if labeled else 0.0
    return (
        f"Seal a holdout: {plural(held, 'labeled answer')} of {labeled:,} ({share:.0%}) are set aside "
        "to prove a revised prompt; their claims leave every claim list until unsealed"
    )


@dataclass(frozen=True, slots=True)
class Summary:
    """The sealed holdout as every screen names and counts it (`summary`)."""

    made: bool  # a holdout was sealed at some point (a split exists)
    sealed: bool
    answers: int  # sealed answers with a label: the holdout's and the pending ones
    claims: int  # their claims
    pending: int  # of `answers`, labeled since the seal and not assigned yet
    unsealed_by: str | None

    def sentence(self) -> str:
        what = f"{plural(self.answers, 'answer')}, {plural(self.claims, 'claim')}"
        if not self.made and not self.answers:
            return f"{HOLDOUT_NAME.capitalize()}: none yet, so every labeled claim is listed."
        if not self.made:
            return (
                f"{HOLDOUT_NAME.capitalize()}: none sealed yet; {what} of answers reserved for holdout "
                "cycles are kept out of every claim list already."
            )
        if not self.sealed:
            return (
                f"{HOLDOUT_NAME.capitalize()}: unsealed by {self.unsealed_by or 'an unrecorded person'} "
                "and used; its claims are listed again."
            )
        text = (
            f"{HOLDOUT_NAME.capitalize()}: {what}, set aside to prove a revised prompt; their claims "
            "are left out of every claim list until a lead unseals them."
        )
        if self.pending:
            text += (
                f" {plural(self.pending, 'of the answers is', 'of the answers are')} labeled since the "
                "seal and not assigned yet (the next lab run assigns them, about half to the holdout)."
            )
        return text


HOLDOUT_NAME = "sealed holdout"  # the one name the screens use for the split's holdout


def summary(db: Database) -> Summary:
    """The sealed holdout's name-and-count, the same on the Judge lab, Dashboard and Cycles."""
    s = current(db)
    sealed = s.holdout + s.pending if s.sealed else []
    return Summary(
        made=s.generation is not None,
        sealed=s.sealed,
        answers=len(sealed),
        claims=len(store.split.claim_keys(db, sealed)),
        pending=len(s.pending),
        unsealed_by=None if s.generation is None else s.generation.unsealed_by,
    )


def unseal(db: Database, *, who: str, reason: str | None = None) -> SplitRecord:
    """Unseal the current holdout, recording who and when; it is marked used from then on."""
    if not who.strip():
        raise InputError("say who unseals the holdout")
    if reason is not None:
        check_text(reason, "reason")
    gen = store.split.current_split(db)
    if gen is None:
        raise ConflictError("there is no split to unseal yet")
    if not store.split.unseal_split(db, gen.id, who=who.strip(), reason=reason):
        raise ConflictError(f"the holdout was already unsealed by {gen.unsealed_by} at {gen.unsealed_at}")
    out = store.split.current_split(db)
    assert out is not None
    return out


def new_holdout(
    db: Database,
    *,
    created_by: str | None = None,
    seed: int = DEFAULT_SEED,
    holdout_share: float = DEFAULT_HOLDOUT_SHARE,
) -> Split:
    """Start a fresh holdout once the current one is used: the answers labeled since then are
    split; the used holdout's answers become tuning answers."""
    gen = store.split.current_split(db)
    if gen is not None and gen.sealed:
        raise ConflictError("the current holdout is still sealed; a new one is made only after it was used")
    stratify = None if gen is None else gen.stratify_run_id
    store.split.create_split(
        db,
        after=None if gen is None else gen.id,
        seed=seed,
        holdout_share=holdout_share,
        stratify_run_id=stratify,
        created_by=created_by,
    )
    new = store.split.current_split(db)
    assert new is not None
    _assign_pending(db, new, stratify)
    return current(db)


def sealed_answer_ids(db: Database) -> set[str]:
    """Answers whose claims nobody may read now: the holdout and pending ones while sealed."""
    s = current(db)
    if not s.sealed:
        return set()
    # Cycle holdout answers count from the start, labeled or not (current() lists labeled ones).
    assigned = store.split.assignments(db)
    unassigned_cycle = {a for a in store.split.cycle_holdout_answer_ids(db) if a not in assigned}
    return set(s.holdout) | set(s.pending) | unassigned_cycle


def sealed_claim_keys(db: Database, run: store.JudgeRun | str | None = None) -> set[str]:
    """'ANSWER/CLAIM' keys of the sealed claims (of the claims `run` judged, if given): what
    claim lists, the flag's claim ids and the example picker must leave out."""
    answers = sealed_answer_ids(db)
    if not answers:
        return set()
    if isinstance(run, str):
        run = store.find_judge_run(db, run)
    return store.split.claim_keys(db, answers, None if run is None else run.id)


def fingerprint(db: Database) -> tuple[object, ...]:
    """Changes when the split or its seal changes (a page's cache key includes it)."""
    return store.split.state_marker(db)
