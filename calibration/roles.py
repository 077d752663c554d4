"""Who may do what: leads, reviewers, single-user mode, and the one rule for reviewer names.

The rules, each a function testable without a browser:

* **Names** are compared by :func:`calibration.text.normalise_name` (NFKC, case-folded,
  invisible characters removed) and stored in the spelling first used
  (:func:`canonical_name`). A typed name is checked by :func:`calibration.text.check_name`
  (controls and mixed-script words refused) and refused when it looks like a different
  known reviewer (:func:`calibration.text.confusable_with`, UTS #39 skeletons over Unicode's
  confusables.txt) or is that name in another alphabet: "аnna" with a Cyrillic "а", "Anna"
  with a zero-width space, a Cherokee "ᎢᎪᎷᎪᎡᎪ" or a Cyrillic "Тамара" is never a second
  reviewer beside "anna" or "Tamara".
* **Leads** are configured by name or email ($CALIBRATION_LEADS, the secrets; with OIDC only
  a verified e-mail matches, :mod:`calibration.identity`), or, with OIDC, by a groups/roles
  claim of the ID token (:func:`in_lead_groups`: `leads_claim` names the claim, `lead_groups`
  the values that make a lead, compared by :func:`calibration.text.plain_key`, which refuses
  invisible and look-alike characters). With no lead configured the app is in *single-user mode* while at
  most one reviewer name has ever signed in: that user is the lead. As soon as a second
  name signs in there is a team and no lead (:data:`Mode.TEAM_WITHOUT_LEADS`): lead pages
  refuse everyone until a lead is configured (:data:`SETUP_HINT` says how). One check,
  :func:`require_lead`, decides it at every run of a lead page and again inside every lead
  action, so a page opened while its user was a lead writes nothing once they are not.
* **Blind guarantee**: only a lead sees judge verdicts outside the per-answer reveal of the
  Review page, and lead pages check the role on the server at every run (a direct URL runs
  the same check), so in a team a reviewer with open work never sees the judge's verdicts
  of their cycle before labeling. A lead who also reviews is held to the same rule
  (:func:`open_work`): the answers still open to them in an open cycle are their *blind
  spots*, and a lead page refuses every view that holds one (:func:`hidden_in_scope`)
  until they commit those answers on the Review page.

What a typed name (no OIDC) does and does not protect is said in :data:`TYPED_NAME_LIMITS`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from . import store
from .errors import InputError, NotALeadError
from .store import Database, OpenCycleWork
from .text import check_name, confusable_with, near_duplicate_of, normalise_name, plain_key, visible

LEADS_ENV = "CALIBRATION_LEADS"
MAX_NAME = 80

# Shown to everyone signed in once single-user mode is over, reviewers too: settings to name,
# no command line (reviewers see none, and how the app is started differs between installs).
SETUP_HINT = (
    "No lead is configured. Whoever runs the app names the leads when starting it: in the "
    f"environment variable `{LEADS_ENV}` (comma-separated names or e-mails, e.g. "
    "'Anna Lead,bea@example.org'), or as `leads = [\"Anna Lead\"]` under `[calibration]` in "
    ".streamlit/secrets.toml."
)

TYPED_NAME_LIMITS = (
    "Without OIDC a reviewer types a name and is trusted. The name rule protects against "
    "mistakes and look-alikes: names are compared after Unicode normalisation (NFKC, case "
    "folding, invisible characters removed), so 'ANNA', 'anna' and 'anna' with a zero-width "
    "space are one reviewer; a name mixing alphabets in a word (a Cyrillic 'а' in 'anna'), "
    "looking like a different known reviewer (Unicode's confusables: a Cherokee 'ᎢᎪᎷᎪᎡᎪ' beside "
    "'TAMARA') or being that name in another alphabet ('Тамара' beside 'Tamara') is refused. It "
    "does not protect against someone who types another person's name, a lead's included: that "
    "person then is them. Use OIDC (st.login) when reviewers must not be able to act as each other."
)


class Mode(Enum):
    """How roles are decided for this database and configuration."""

    LEADS_CONFIGURED = "leads configured"
    SINGLE_USER = "single-user"  # no lead configured, at most one name ever signed in
    TEAM_WITHOUT_LEADS = "team without leads"  # no lead configured, several names: nobody is a lead


def lead_keys(names: Iterable[str]) -> frozenset[str]:
    """The comparison keys of configured lead names / emails; blanks configure nothing."""
    return frozenset(k for k in (normalise_name(n) for n in names) if k)


def lead_group_keys(names: Iterable[str]) -> frozenset[str]:
    """The comparison keys of configured lead groups (:func:`calibration.text.plain_key`);
    blanks, and names that key refuses, configure nothing."""
    return frozenset(k for k in (plain_key(n.strip()) for n in names) if k)


def group_keys(value: object) -> frozenset[str]:
    """The comparison keys of a groups/roles claim's value: a list of names, or one string of
    names separated by commas or spaces (providers send either); anything else holds none. A
    name with invisible or look-alike characters (:func:`calibration.text.plain_key`) is no
    group: ``"calibration-leads"`` with a zero-width space or in full-width letters is not
    ``"calibration-leads"``."""
    if isinstance(value, str):
        items: Iterable[object] = value.replace(",", " ").split()
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return frozenset()
    return lead_group_keys(i for i in items if isinstance(i, str))


def in_lead_groups(claims: Mapping[str, object], claim: str, groups: frozenset[str]) -> bool:
    """Whether the ID token's `claims` put the person in a lead group: the claim named `claim`
    holds one of `groups` (comparison keys, :func:`lead_group_keys`)."""
    return bool(claim) and bool(groups & group_keys(claims.get(claim)))


def mode(leads: frozenset[str], signed_in: Iterable[str], *, groups: bool = False) -> Mode:
    """The role mode: leads configured (by name, or `groups`: lead groups of a claim), or else
    single-user while at most one distinct name (by comparison key) has signed in, else a team
    without leads."""
    if leads or groups:
        return Mode.LEADS_CONFIGURED
    keys = {normalise_name(n) for n in signed_in} - {""}
    return Mode.SINGLE_USER if len(keys) <= 1 else Mode.TEAM_WITHOUT_LEADS


def is_lead(
    identities: Iterable[str],
    leads: frozenset[str],
    signed_in: Iterable[str],
    *,
    in_group: bool | None = None,
    name: str | None = None,
) -> bool:
    """Whether a person known by `identities` (what may match a configured lead: the signed-in
    name; with OIDC only the verified e-mail, :func:`calibration.identity.lead_ids`) is a
    lead: one of them matches a configured lead, or their ID token puts them in a lead group
    (`in_group`; None when no lead group is configured), or the app is in single-user mode.

    `signed_in` lists the names that ever signed in; the person's own `name` (by default the
    first identity) counts among them."""
    idents = [i for i in identities if i]
    if in_group:
        return True
    own = [name] if name else idents[:1]
    found = mode(leads, [*signed_in, *own], groups=in_group is not None)
    if found is Mode.SINGLE_USER:
        return True
    if found is Mode.TEAM_WITHOUT_LEADS:
        return False
    return any(normalise_name(i) in leads for i in idents)


def require_lead(
    db: Database,
    identities: Sequence[str],
    leads: frozenset[str],
    *,
    in_group: bool | None = None,
    name: str | None = None,
) -> None:
    """Raise NotALeadError, whose message is the :func:`refusal` sentence, unless the person
    named `name` (by default the first of `identities`) and known by `identities` is a lead at
    this moment (:func:`is_lead` over the names that ever signed in). Without a name nobody is
    a lead, single-user mode or not.

    The one lead check: a lead page runs it before drawing anything, and every lead action
    (a button's or form's callback, which Streamlit runs before the page's script) runs it
    again, so a page opened while its user was a lead (before single-user mode ended, or
    before a lead was removed from the configuration) writes nothing afterwards."""
    idents = [i for i in identities if i]
    own = [name] if name else idents[:1]
    names = signed_in(db)
    if not own or not is_lead(idents, leads, names, in_group=in_group, name=own[0]):
        raise NotALeadError(refusal(mode(leads, [*names, *own], groups=in_group is not None)))


def refusal(found: Mode) -> str:
    """The sentence a lead page shows a person who is not a lead."""
    if found is Mode.TEAM_WITHOUT_LEADS:
        return (
            "This page is for leads, and more than one reviewer has signed in, so single-user "
            "mode is over. " + SETUP_HINT
        )
    return (
        "This page is for leads. Reviewers label claims on the Review page; a lead is listed in "
        f"{LEADS_ENV} or under leads in the calibration section of the secrets."
    )


# ---------------------------------------------------------------- names


def _code(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, '')}".strip()


def canonical_name(name: str, known: Iterable[str]) -> str:
    """The stored spelling of the reviewer `name` is: the first of `known` with the same
    comparison key (an exact spelling wins), else `name` itself."""
    key = normalise_name(name)
    same = [k for k in known if normalise_name(k) == key]
    if name in same:
        return name
    return same[0] if same else name


def accept_name(typed: str, known: Sequence[str], *, field: str = "name") -> str:
    """The reviewer a typed name stands for (an existing spelling when one matches), or InputError.

    Refused: what :func:`check_name` refuses, a name longer than MAX_NAME, a near-duplicate of
    a known reviewer ("Anna." beside "Anna": :func:`calibration.text.near_duplicate_of`), and a
    name that looks like a different known reviewer (UTS #39 skeletons over Unicode's confusables.txt) or
    is one in another alphabet (Cyrillic or Greek romanised): :func:`confusable_with`."""
    try:
        name = check_name(typed)
    except InputError as exc:
        # A look-alike letter looks like the letter it imitates: say which character it is.
        odd = [f"{_code(ch)}" for ch in dict.fromkeys(typed) if not ch.isascii() and ch.isalpha()][:3]
        hint = f" (non-Latin letters in it: {', '.join(odd)})" if odd and "mixes" in str(exc) else ""
        raise InputError(f"{field}: {exc}{hint}") from exc
    if len(name) > MAX_NAME:
        raise InputError(f"{field}: the name is longer than {MAX_NAME} characters")
    key = normalise_name(name)
    if any(normalise_name(k) == key for k in known):
        return canonical_name(name, known)  # the same person: their stored spelling
    close = near_duplicate_of(name, known)
    if close is not None:
        raise InputError(
            f"{field}: {visible(name)!r} differs from the existing reviewer {visible(close)!r} "
            "only in punctuation, spacing or accents; type that reviewer's name exactly, "
            "or a name that cannot be mistaken for it"
        )
    other = confusable_with(name, known)
    if other is not None:
        raise InputError(
            f"{field}: {visible(name)!r} looks like the existing reviewer {visible(other)!r} "
            "(or is that name in another alphabet) but is a different name; type that "
            "reviewer's name exactly, or a name that cannot be mistaken for it"
        )
    return name


@dataclass(frozen=True, slots=True)
class ReviewerList:
    """Reviewer names typed into a cycle form or the CLI, matched to known reviewers."""

    names: list[str]  # stored spellings, in the order typed, each once
    unknown: list[str]  # of `names`, those the database does not know yet (warn: a typo?)
    problems: list[str]  # refusals: bad or confusable names, one person typed twice


def match_reviewers(typed: Iterable[str], known: Sequence[str]) -> ReviewerList:
    """Match each typed name to a known reviewer by comparison key (blanks dropped).

    "Vera" is the existing "vera"; a name nobody has used is kept and listed in `unknown`; a
    name refused by :func:`accept_name`, or two spellings of one person, is a problem."""
    names: list[str] = []
    unknown: list[str] = []
    problems: list[str] = []
    typed_as: dict[str, list[str]] = {}
    known_keys = {normalise_name(k) for k in known}
    for raw in typed:
        if not normalise_name(raw) and not raw.strip():
            continue
        try:
            name = accept_name(raw, known, field="reviewers")
        except InputError as exc:
            problems.append(str(exc))
            continue
        key = normalise_name(name)
        typed_as.setdefault(key, []).append(raw.strip())
        if len(typed_as[key]) > 1:
            continue
        names.append(name)
        if key not in known_keys:
            unknown.append(name)
    dupes = [spellings for spellings in typed_as.values() if len(spellings) > 1]
    if dupes:
        listed = "; ".join(", ".join(repr(visible(n)) for n in s) for s in dupes)
        problems.append(
            "reviewers: each reviewer may be listed once (names are compared ignoring "
            f"case, spacing and invisible characters), but these are the same: {listed}"
        )
    return ReviewerList(names, unknown, problems)


def unknown_warning(unknown: Sequence[str]) -> str | None:
    """The warning for reviewer names the database has never seen, or None."""
    if not unknown:
        return None
    listed = ", ".join(repr(visible(n)) for n in unknown)
    return (
        f"not yet known here (no sign-in, label or assignment): {listed}; check the spelling, "
        "since work assigned to a misspelt name waits for a reviewer who never comes"
    )


# ---------------------------------------------------------------- the blind rule for leads who review


@dataclass(frozen=True, slots=True)
class BlindSpot:
    """The answers of one open cycle still open to a reviewer: not committed by them yet."""

    cycle: str
    answers: tuple[str, ...]  # in cycle order


@dataclass(frozen=True, slots=True)
class OpenWork:
    """A reviewer's blind spots, one per open cycle with work left for them."""

    spots: tuple[BlindSpot, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.spots)

    @property
    def answers(self) -> frozenset[str]:
        """Every answer whose judge verdicts the reviewer must not see yet."""
        return frozenset(a for s in self.spots for a in s.answers)

    @property
    def cycles(self) -> frozenset[str]:
        """The open cycles with work left for the reviewer."""
        return frozenset(s.cycle for s in self.spots)

    def touching(self, answer_ids: Iterable[str]) -> tuple[BlindSpot, ...]:
        """The blind spots with an answer among `answer_ids`, in cycle order."""
        ids = set(answer_ids)
        return tuple(s for s in self.spots if ids.intersection(s.answers))


def open_work(cycles: Iterable[OpenCycleWork], identities: Iterable[str]) -> OpenWork:
    """The answers of open cycles whose judge verdicts the person known by `identities` must
    not see yet, because they may still label them blind.

    Rule, per open cycle (closed cycles take no labels, so they hold no open work):

    * a cycle with assignments: the answers assigned to the person that they have not
      committed (no reveal recorded for them, in this or an earlier cycle);
    * a cycle open to every reviewer (no assignments): once the person has a label event in
      it (a verdict, skip or unclear mark), every answer of it they have not committed.
      Before that they have not taken up the cycle's work; a lead who only supervises it
      keeps the cycle's views.

    An answer committed by the person is revealed to them on the Review page anyway, so it is
    no blind spot. Names compare by :func:`calibration.text.normalise_name`."""
    keys = {normalise_name(i) for i in identities} - {""}
    spots = []
    for c in cycles:
        done = {a for a, who in c.revealed if normalise_name(who) in keys}
        if c.assigned:
            mine = {a for a, who in c.assigned if normalise_name(who) in keys}
        elif any(normalise_name(who) in keys for who in c.started):
            mine = set(c.answers)
        else:
            mine = set()
        left = tuple(a for a in c.answers if a in mine and a not in done)
        if left:
            spots.append(BlindSpot(c.name, left))
    return OpenWork(tuple(spots))


def blind_refusal(spots: Sequence[BlindSpot]) -> str:
    """The one sentence a lead page shows instead of a view that holds the lead's open work."""
    parts = [
        f"{visible(s.cycle)!r} ({len(s.answers)} answer{'s' if len(s.answers) != 1 else ''})" for s in spots
    ]
    where = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    word = "cycle" if len(parts) == 1 else "cycles"
    return (
        f"This view holds answers you still have to label in {word} {where}, so it stays hidden "
        "until you commit them on the Review page: seeing the judge's verdicts first would "
        "unblind your labels."
    )


# ---------------------------------------------------------------- with the database


def open_work_of(db: Database, identities: Iterable[str]) -> OpenWork:
    """:func:`open_work` over the database's open cycles."""
    return open_work(store.dashboard.open_cycle_work(db), identities)


def hidden_in_scope(
    db: Database, work: OpenWork, *, run_id: int, cycle_id: int | None
) -> tuple[BlindSpot, ...]:
    """The blind spots a dashboard scope holds (a cycle of the run, or the whole run when
    `cycle_id` is None: every answer the run judged); empty when the scope may be shown."""
    if not work:
        return ()
    return work.touching(store.dashboard.answers_in_scope(db, run_id, cycle_id, sorted(work.answers)))


def known_reviewers(db: Database) -> list[str]:
    """Every reviewer spelling the database knows (labels, assignments, sign-ins)."""
    return store.cycles.known_reviewer_names(db)


def signed_in(db: Database) -> list[str]:
    """Every reviewer name that ever signed in, oldest first."""
    return store.cycles.signed_in_names(db)


def sign_in(db: Database, typed: str) -> str:
    """Accept a typed sign-in name (:func:`accept_name` against the known reviewers) and record
    it; returns the stored spelling. InputError says why a name is refused; a reviewer the
    lead deactivated on the roster (:mod:`calibration.roster`) is refused too."""
    name = accept_name(typed, known_reviewers(db))
    refusal = deactivated(db, name)
    if refusal is not None:
        raise InputError(f"name: {refusal}")
    note_sign_in(db, name)
    return name


def deactivated(db: Database, name: str) -> str | None:
    """The sentence refusing `name` when a lead deactivated it on the roster, or renamed it
    away (`roster.writer_refusal`, the rule every write checks too); None otherwise. Asked at
    sign-in and on every later run of the app, so that a reviewer signed in before the change
    (by name, by a reload link, or by the identity provider) is stopped too."""
    refusal = store.roster.writer_refusal(db, name)
    return None if refusal is None else str(refusal)


def note_sign_in(db: Database, name: str) -> None:
    """Record that `name` signed in (once per comparison key; a read when already recorded)."""
    key = normalise_name(name)
    if key and key not in {normalise_name(n) for n in signed_in(db)}:
        with store.write(db):
            store.cycles.record_sign_in(db, key, name)


__all__ = [
    "LEADS_ENV",
    "MAX_NAME",
    "SETUP_HINT",
    "TYPED_NAME_LIMITS",
    "BlindSpot",
    "Mode",
    "OpenWork",
    "ReviewerList",
    "accept_name",
    "blind_refusal",
    "canonical_name",
    "group_keys",
    "hidden_in_scope",
    "in_lead_groups",
    "is_lead",
    "known_reviewers",
    "lead_group_keys",
    "lead_keys",
    "match_reviewers",
    "mode",
    "note_sign_in",
    "open_work",
    "open_work_of",
    "refusal",
    "require_lead",
    "sign_in",
    "signed_in",
    "unknown_warning",
]
