"""Who a provider sign-in is (calibration.identity), without a browser: the bound subject, the
verified e-mail, one subject per reviewer, leads by verified e-mail only, Log out."""

from __future__ import annotations

import pytest

from calibration import identity, roles, roster
from calibration.errors import SignInRefused
from calibration.store import Database
from calibration.store import roster as roster_store

ISSUER = "https://idp.example.org"


def _person(sub: str, *, iat: int = 1000, **claims: object) -> identity.Person:
    found = identity.person_of({"iss": ISSUER, "sub": sub, "iat": iat, **claims})
    assert found is not None
    return found


@pytest.mark.parametrize(
    ("claims", "assume", "email"),
    [
        ({"email": "rita@example.org", "email_verified": True}, False, "rita@example.org"),
        ({"email": "rita@example.org", "email_verified": "true"}, False, "rita@example.org"),
        ({"email": "rita@example.org", "email_verified": False}, False, None),
        ({"email": "rita@example.org", "email_verified": False}, True, None),  # false is never trusted
        ({"email": "rita@example.org", "email_verified": "false"}, True, None),
        ({"email": "rita@example.org"}, False, None),  # absent: not verified by default
        ({"email": "rita@example.org"}, True, "rita@example.org"),  # unless assume_email_verified
        ({"email": "rita\u200b@example.org", "email_verified": True}, False, None),  # invisible
        ({"email": "ｒｉｔａ@example.org", "email_verified": True}, False, None),  # full-width
        ({"email": "rita", "email_verified": True}, False, None),  # no address
        ({"email": ["rita@example.org"], "email_verified": True}, False, None),
        ({"name": "rita@example.org", "email_verified": True}, False, None),  # a display name
    ],
)
def test_only_an_email_the_provider_vouches_for_is_verified(
    claims: dict[str, object], assume: bool, email: str | None
) -> None:
    assert identity.verified_email(claims, assume_verified=assume) == email


def test_a_subject_without_a_verified_email_gets_a_name_from_the_subject_only() -> None:
    alone = identity.person_of({"iss": ISSUER, "sub": "s-1", "name": "rita@example.org"})
    assert alone is not None and alone.email is None
    name = identity.subject_name(ISSUER, "s-1")
    assert name.startswith(identity.SUBJECT_PREFIX) and "@" not in name
    assert name != identity.subject_name(ISSUER, "S-1") != identity.subject_name("https://other", "s-1")
    assert identity.person_of({"iss": ISSUER, "email": "x@example.org"}) is None  # no subject


def test_a_first_sign_in_binds_the_verified_email_and_later_ones_keep_it(fresh_db: Database) -> None:
    rita = _person("s-rita", email="rita@example.org", email_verified=True)
    assert identity.sign_in(fresh_db, rita) == "rita@example.org"
    assert roles.signed_in(fresh_db) == ["rita@example.org"]
    # The subject is the identity: a later e-mail or display name changes nothing.
    later = _person("s-rita", iat=2000, email="other@example.org", email_verified=False, name="Cora")
    assert identity.sign_in(fresh_db, later) == "rita@example.org"


def test_two_subjects_never_share_a_reviewer(fresh_db: Database) -> None:
    identity.sign_in(fresh_db, _person("s-cora", email="cora@example.org", email_verified=True))
    twin = _person("s-twin", email="Cora@Example.org", email_verified=True)
    with pytest.raises(SignInRefused, match="belongs to another account"):
        identity.sign_in(fresh_db, twin)
    assert roster_store.binding(fresh_db, ISSUER, "s-twin") is None  # nothing written
    assert roles.signed_in(fresh_db) == ["cora@example.org"]


def test_display_names_and_unverified_emails_do_not_name_the_reviewer(fresh_db: Database) -> None:
    identity.sign_in(fresh_db, _person("s-rita", email="rita@example.org", email_verified=True))
    posers = [
        _person("s-noemail", name="rita@example.org"),
        _person("s-unverified", email="rita@example.org", email_verified=False),
    ]
    names = [identity.sign_in(fresh_db, p) for p in posers]
    assert names == [identity.subject_name(ISSUER, p.subject) for p in posers]
    assert "rita@example.org" not in names


def test_the_first_verified_sign_in_takes_over_a_typed_name(fresh_db: Database) -> None:
    assert roles.sign_in(fresh_db, "Rita@example.org") == "Rita@example.org"  # before OIDC
    rita = _person("s-rita", email="rita@example.org", email_verified=True)
    assert identity.sign_in(fresh_db, rita) == "Rita@example.org"  # the stored spelling
    with pytest.raises(SignInRefused):
        identity.sign_in(fresh_db, _person("s-late", email="RITA@example.org", email_verified=True))


def test_a_rename_carries_the_binding(fresh_db: Database) -> None:
    rita = _person("s-rita", email="rita@example.org", email_verified=True)
    identity.sign_in(fresh_db, rita)
    roster.add(fresh_db, "rita@example.org", by="lead")
    roster.rename(fresh_db, "rita@example.org", "Rita R", by="lead")
    assert identity.sign_in(fresh_db, rita) == "Rita R"
    # The old name is free again, for the subject whose verified e-mail it is.
    again = _person("s-new", email="rita@example.org", email_verified=True)
    assert identity.sign_in(fresh_db, again) == "rita@example.org"


def test_a_logged_out_sign_in_and_older_ones_are_refused(fresh_db: Database) -> None:
    first = _person("s-rita", iat=1000, email="rita@example.org", email_verified=True)
    identity.sign_in(fresh_db, first)
    identity.log_out(fresh_db, first)
    for copied in (first, _person("s-rita", iat=999, email="rita@example.org", email_verified=True)):
        with pytest.raises(SignInRefused, match="Log out"):
            identity.sign_in(fresh_db, copied)
    fresh = _person("s-rita", iat=1001, email="rita@example.org", email_verified=True)
    assert identity.sign_in(fresh_db, fresh) == "rita@example.org"
    identity.log_out(fresh_db, first)  # an older sign-in logging out again keeps the newest time
    assert identity.sign_in(fresh_db, fresh) == "rita@example.org"


LEADS = roles.lead_keys(["cora@example.org"])


@pytest.mark.parametrize(
    ("claims", "lead"),
    [
        ({"email": "cora@example.org", "email_verified": True}, True),
        ({"email": "CORA@example.org", "email_verified": True}, True),  # e-mails ignore case
        ({"email": "mallory@example.org", "email_verified": True, "name": "cora@example.org"}, False),
        ({"name": "Cora@Example.org"}, False),
        ({"email": "cora@example.org", "email_verified": False}, False),
        ({"email": "cora@example.org"}, False),
        ({"email": "cora\u200b@example.org", "email_verified": True}, False),
    ],
)
def test_the_lead_list_matches_only_a_verified_email(claims: dict[str, object], lead: bool) -> None:
    full = {"iss": ISSUER, "sub": "s-x", **claims}
    person = identity.person_of(full)
    assert person is not None
    ids = identity.lead_ids(full, person)
    assert roles.is_lead(ids, LEADS, ["someone", "else"], name="s-x reviewer") is lead


def test_a_configured_lead_claim_is_matched_instead_of_the_email() -> None:
    claims = {"iss": ISSUER, "sub": "u-17", "email": "cora@example.org", "email_verified": True}
    person = identity.person_of(claims)
    assert person is not None
    assert identity.lead_ids(claims, person, "sub") == ["u-17"]
    assert identity.lead_ids({**claims, "sub": "u\u200b17"}, person, "sub") == []
