"""Who a person signed in through the identity provider (OpenID Connect) is, and who leads.

The rules, one sentence each in the manual's "Team sign-in" (docs/deployment.md):

* **Identity** is the ID token's issuer and subject, never a name or an e-mail: at the first
  sign-in of a subject it is bound to a reviewer name (:func:`sign_in`), and every later
  sign-in of that subject is that reviewer, whatever its e-mail or display name says then (a
  lead's rename carries the binding along).
* **The name bound** is the subject's verified e-mail (:func:`verified_email`), else a name
  made from the issuer and subject (:func:`subject_name`); the display name is never used.
* **Verified** means the ID token says ``email_verified: true``; a token without the claim
  counts as unverified unless ``assume_email_verified = true`` is set under ``[calibration]``
  (for a provider that sends only addresses it verified, and omits the claim), and ``false``
  is never trusted. An e-mail with invisible or look-alike characters is no e-mail here
  (:func:`calibration.text.plain_key`).
* **One subject per reviewer**: a name already bound to another subject refuses the sign-in
  (:class:`SignInRefused`, nothing written). A name that has labels from before, typed or
  from an earlier release, and no binding goes to the first subject that signs in with it
  as a verified e-mail.
* **Leads**: the ``leads`` list matches the verified e-mail (or the claim ``lead_list_claim``
  names), compared ignoring case; a groups claim's values compare by
  :func:`calibration.text.plain_key` (:func:`calibration.roles.in_lead_groups`).
* **Log out** records the issue time of the sign-in that logged out (:func:`log_out`); an
  identity cookie issued no later, a copy of the logged-out one included, is refused.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from . import roles, store
from .errors import SignInRefused
from .store import Database
from .text import normalise_name, plain_key, visible

SUBJECT_PREFIX = "oidc-"  # never in an e-mail-derived name: those hold an "@"
VERIFIED_CLAIM = "email_verified"


@dataclass(frozen=True, slots=True)
class Person:
    """What the app takes from a signed-in person's ID token claims."""

    issuer: str
    subject: str
    issued_at: int  # the ID token's iat; 0 when absent (older than any logout)
    email: str | None  # verified and plain (:func:`verified_email`), else None


def is_true(value: object) -> bool:
    """True as a provider or a settings file writes it: the boolean, or the string "true"."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def verified_email(claims: Mapping[str, object], *, assume_verified: bool = False) -> str | None:
    """The e-mail of `claims` if the provider vouches for it, else None: ``email_verified`` is
    true (a boolean, or the string "true" some providers send), or absent while
    `assume_verified`; and the address is plain (:func:`calibration.text.plain_key`) with an @."""
    email = claims.get("email")
    flag = claims.get(VERIFIED_CLAIM)
    trusted = assume_verified if flag is None else is_true(flag)
    if not trusted or not isinstance(email, str) or "@" not in email or plain_key(email) is None:
        return None
    return email


def subject_name(issuer: str, subject: str) -> str:
    """The reviewer name of a subject without a verified e-mail: :data:`SUBJECT_PREFIX` and 16
    hex digits of SHA-256 over issuer and subject, so no two subjects share it (the binding's
    unique name refuses the astronomically unlikely clash) and no display name enters it."""
    digest = hashlib.sha256(f"{issuer}\n{subject}".encode()).hexdigest()
    return SUBJECT_PREFIX + digest[:16]


def person_of(claims: Mapping[str, object], *, assume_verified: bool = False) -> Person | None:
    """The person `claims` (st.user's, from the verified ID token) stand for; None without a
    subject."""
    subject, issuer, iat = claims.get("sub"), claims.get("iss"), claims.get("iat")
    if not isinstance(subject, str) or not subject:
        return None
    issued = int(iat) if isinstance(iat, (int, float)) and not isinstance(iat, bool) else 0
    return Person(str(issuer or ""), subject, issued, verified_email(claims, assume_verified=assume_verified))


def lead_ids(claims: Mapping[str, object], person: Person, claim: str = "email") -> list[str]:
    """What the ``leads`` list is compared with: the verified e-mail, or with another `claim`
    configured, that claim's value when it is a plain string (never the display name unless a
    lead configures ``name``, which they should not)."""
    if claim == "email":
        return [person.email] if person.email else []
    value = claims.get(claim)
    return [value] if isinstance(value, str) and plain_key(value) is not None else []


def _refusal_taken(name: str) -> str:
    return (
        f"The name {visible(name)!r} belongs to another account at the identity provider, so "
        "this account cannot sign in as it; ask a lead."
    )


LOGGED_OUT = "This sign-in ended with Log out: log out of this page and log in again."


def sign_in(db: Database, person: Person) -> str:
    """The reviewer name of `person`: their binding's, or on their first sign-in a new binding
    (and the sign-in recorded). SignInRefused, with one sentence, when the name is bound to
    another subject or this sign-in was issued no later than one that logged out."""
    found = store.roster.binding(db, person.issuer, person.subject)
    if found is None:
        found = _bind(db, person)
    if found.signed_out_iat is not None and person.issued_at <= found.signed_out_iat:
        raise SignInRefused(LOGGED_OUT)
    return found.name


def _bind(db: Database, person: Person) -> store.roster.Binding:
    name = person.email or subject_name(person.issuer, person.subject)
    # An existing spelling of the name (labels from typed sign-ins) is kept: the first verified
    # binding takes it over.
    name = roles.canonical_name(name, roles.known_reviewers(db))
    key = normalise_name(name)
    with store.write(db):
        # The table's keys decide, not a read before the insert: a second tab (or app server)
        # may be binding this subject, or another subject this name, at the same moment.
        if not store.roster.bind(db, person.issuer, person.subject, key, name):
            found = store.roster.binding(db, person.issuer, person.subject)
            if found is not None:
                return found
            raise SignInRefused(_refusal_taken(name))
    roles.note_sign_in(db, name)
    return store.roster.Binding(name, None)


def log_out(db: Database, person: Person) -> None:
    """Record that `person`'s sign-in (its issue time) logged out."""
    with store.write(db):
        store.roster.signed_out(db, person.issuer, person.subject, person.issued_at)


__all__ = [
    "LOGGED_OUT",
    "SUBJECT_PREFIX",
    "Person",
    "is_true",
    "lead_ids",
    "log_out",
    "person_of",
    "sign_in",
    "subject_name",
    "verified_email",
]
