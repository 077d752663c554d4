"""Roles and the one name rule (calibration.roles), without a browser."""

from __future__ import annotations

import pytest

from calibration import cycles, roles
from calibration.errors import ConflictError, InputError
from calibration.store import Database
from calibration.store import cycles as cycle_store

LEADS = roles.lead_keys(["Anna Lead", " bea@example.org ", ""])


@pytest.mark.parametrize(
    ("idents", "signed_in", "lead"),
    [
        (["ANNA  lead"], [], True),  # case and spacing
        (["anna\u200blead"], [], False),  # a zero-width space is removed, not a space: "annalead"
        (["Anna\u00a0Lead"], [], True),  # NBSP is a space under NFKC
        (["ａｎｎａ lead"], [], True),  # full-width
        (["carl", "Bea@Example.org"], [], True),  # an OIDC email matches
        (["carl"], [], False),
    ],
)
def test_a_configured_lead_matches_after_normalisation(
    idents: list[str], signed_in: list[str], lead: bool
) -> None:
    assert roles.is_lead(idents, LEADS, signed_in) is lead


@pytest.mark.parametrize(
    ("signed_in", "me", "mode", "lead"),
    [
        ([], "carl", roles.Mode.SINGLE_USER, True),
        (["carl"], "carl", roles.Mode.SINGLE_USER, True),
        (["Carl"], "CARL\u200b", roles.Mode.SINGLE_USER, True),  # the same name, however typed
        (["carl"], "dana", roles.Mode.TEAM_WITHOUT_LEADS, False),  # a second name ends single-user mode
        (["carl", "dana"], "carl", roles.Mode.TEAM_WITHOUT_LEADS, False),  # for the first one too
    ],
)
def test_single_user_mode_ends_when_a_second_name_signs_in(
    signed_in: list[str], me: str, mode: roles.Mode, lead: bool
) -> None:
    assert roles.mode(frozenset(), [*signed_in, me]) is mode
    assert roles.is_lead([me], frozenset(), signed_in) is lead
    if mode is roles.Mode.TEAM_WITHOUT_LEADS:
        assert roles.SETUP_HINT in roles.refusal(mode) and "CALIBRATION_LEADS" in roles.SETUP_HINT
        # Every signed-in person reads it, reviewers too: no command line (`make run` is a checkout's).
        assert "make run" not in roles.SETUP_HINT and "calibration serve" not in roles.SETUP_HINT


@pytest.mark.parametrize(
    ("typed", "known", "expected"),
    [
        ("ANNA", ["anna"], "anna"),  # the stored spelling is kept
        ("anna\u200b", ["anna"], "anna"),
        ("  Vera   Ivanova ", ["vera ivanova"], "vera ivanova"),
        ("Вера", ["anna"], "Вера"),  # a whole-script Cyrillic name is a different, allowed name
        ("new person", ["anna"], "new person"),
    ],
)
def test_accept_name_keeps_the_known_spelling(typed: str, known: list[str], expected: str) -> None:
    assert roles.accept_name(typed, known) == expected


@pytest.mark.parametrize(
    ("typed", "known", "says"),
    [
        ("\u0430nna", ["anna"], "mixes Cyrillic and Latin"),  # Cyrillic а in a Latin word
        ("Рое", ["Poe"], "looks like the existing reviewer 'Poe'"),  # whole-script look-alike
        ("anna\u0000", [], r"contains the control character U\+0000"),
        ("\u200b\u200b", [], "empty"),
        ("x" * 81, [], "longer than 80"),
    ],
)
def test_accept_name_refuses_look_alikes_and_controls(typed: str, known: list[str], says: str) -> None:
    with pytest.raises(InputError, match=says):
        roles.accept_name(typed, known)


KNOWN = ["TAMARA", "Ivan", "Anna", "Kim", "Vera", "Olga"]


@pytest.mark.parametrize(
    ("typed", "refused_as"),
    [
        ("ᎢᎪᎷᎪᎡᎪ", "TAMARA"),  # Cherokee capitals: UTS #39 skeleton TAMARA
        ("ꭲꭺꮇꭺꭱꭺ", "TAMARA"),  # Cherokee small letters, case folded to the capitals
        ("ТАМАРА", "TAMARA"),  # Cyrillic capitals
        ("Тамара", "TAMARA"),  # Cyrillic: the same name in another alphabet
        ("ΤΑΜΑΡΑ", "TAMARA"),  # Greek capitals, romanised
        ("ΑΝΝΑ", "Anna"),  # Greek look-alike
        ("Вера", "Vera"),  # Cyrillic, romanised
        ("ｌｖａｎ", "Ivan"),  # full-width small L beside capital I
        ("Kirn", "Kim"),  # rn beside m, all Latin
        ("O1ga", "Olga"),  # digit one for l
    ],
)
def test_a_name_that_can_be_mistaken_for_a_known_one_is_refused(typed: str, refused_as: str) -> None:
    with pytest.raises(InputError, match=f"looks like the existing reviewer '{refused_as}'"):
        roles.accept_name(typed, KNOWN)


@pytest.mark.parametrize(
    ("typed", "accepted_as"),
    [
        ("ＴＡＭＡＲＡ", "TAMARA"),  # full-width is the same name (NFKC): the same reviewer
        ("tamara", "TAMARA"),
        ("Ann", "Ann"),  # different names, however close
        ("Tamar", "Tamar"),
        ("Ivana", "Ivana"),
        ("Вероника", "Вероника"),
        ("Νίκος", "Νίκος"),
        ("Lia", "Lia"),
    ],
)
def test_a_different_name_is_accepted(typed: str, accepted_as: str) -> None:
    assert roles.accept_name(typed, KNOWN) == accepted_as


@pytest.mark.parametrize("typed", ["TΑMARA", "Tаmara", "ＴＡＭＡＲА"])  # a Greek Α, a Cyrillic а
def test_a_name_mixing_look_alike_letters_in_a_word_is_refused(typed: str) -> None:
    with pytest.raises(InputError, match="mixes"):
        roles.accept_name(typed, KNOWN)


def test_match_reviewers_warns_on_unknown_and_refuses_twice() -> None:
    got = roles.match_reviewers(["Vera", " bob ", "", "BOB"], ["vera"])
    assert got.names == ["vera", "bob"] and got.unknown == ["bob"]
    assert got.problems and "'bob', 'BOB'" in got.problems[0]
    assert "bob" in (roles.unknown_warning(got.unknown) or "")
    assert roles.unknown_warning([]) is None


def test_sign_in_records_once_per_person(fresh_db: Database) -> None:
    assert roles.sign_in(fresh_db, "Anna") == "Anna"
    assert roles.sign_in(fresh_db, "ANNA\u200b") == "Anna"
    assert roles.signed_in(fresh_db) == ["Anna"]
    with pytest.raises(InputError, match="mixes"):
        roles.sign_in(fresh_db, "\u0410nna")
    assert roles.signed_in(fresh_db) == ["Anna"]


# ---------------------------------------------------------------- reviewer management


@pytest.fixture
def assigned_db(demo_db: Database) -> Database:
    roles.sign_in(demo_db, "vera")
    roles.sign_in(demo_db, "bob")
    cycles.create_cycle(
        demo_db,
        name="w1",
        judge_run=None,
        size=4,
        seed=3,
        reviewers=["vera", "bob"],
        overlap=0.0,
        force=True,
        created_by="lead",
    )
    return demo_db


def test_a_cycle_form_matches_known_reviewers_by_normalisation(assigned_db: Database) -> None:
    made = cycles.create_cycle(
        assigned_db, name="w2", size=4, seed=4, reviewers=["Vera", "BOB\u200b"], overlap=0.0, force=True
    )
    assert made.reviewers == ("bob", "vera")
    assert not [w for w in made.warnings if "not yet known" in w]
    typo = cycles.create_cycle(
        assigned_db, name="w3", size=4, seed=5, reviewers=["vera", "bbo"], overlap=0.0, force=True
    )
    assert any("not yet known here" in w and "'bbo'" in w for w in typo.warnings)
    with pytest.raises(InputError, match="mixes Latin and Cyrillic"):
        cycles.create_cycle(
            assigned_db, name="w4", size=4, seed=5, reviewers=["v\u0435ra"], overlap=0.0, force=True
        )


def test_reassign_moves_open_work_and_records_it(assigned_db: Database) -> None:
    cycle = cycles.get_cycle(assigned_db, "w1")
    veras = cycles.queue(assigned_db, cycle.id, "vera")
    assert veras
    done = cycles.reassign(assigned_db, "w1", "VERA", "Bob", by="lead")
    assert done.from_reviewer == "vera" and done.to_reviewer == "bob"
    assert set(done.moved) == set(veras) and not done.kept
    assert cycles.queue(assigned_db, cycle.id, "vera") == []
    assert set(veras) <= set(cycles.queue(assigned_db, cycle.id, "bob"))
    (entry,) = cycle_store.reassignments(assigned_db, cycle.id)
    assert (entry.from_reviewer, entry.to_reviewer, entry.reassigned_by) == ("vera", "bob", "lead")
    assert set(entry.answers) == set(veras)
    with pytest.raises(InputError, match="is not assigned any answer"):
        cycles.reassign(assigned_db, "w1", "vera", "bob")
    with pytest.raises(InputError, match="the reviewer the work comes from"):
        cycles.reassign(assigned_db, "w1", "bob", "BOB")


def test_reassign_refuses_open_and_closed_cycles(assigned_db: Database) -> None:
    cycles.create_cycle(assigned_db, name="open", size=4, seed=9, reviewers=[], overlap=0.0, force=True)
    with pytest.raises(InputError, match="open to every reviewer"):
        cycles.reassign(assigned_db, "open", "vera", "bob")
    cycles.close_cycle(assigned_db, "w1", force=True)
    with pytest.raises(ConflictError, match="closed"):
        cycles.reassign(assigned_db, "w1", "vera", "bob")


@pytest.mark.parametrize(
    ("claims", "lead"),
    [
        ({"groups": ["reviewers", "Calibration-Leads"]}, True),  # compared after normalisation
        ({"groups": "reviewers calibration-leads"}, True),  # one string, space separated
        ({"groups": "reviewers,calibration-leads"}, True),
        ({"groups": ["reviewers"]}, False),
        ({"groups": "calibration-leads-2"}, False),
        ({"roles": ["calibration-leads"]}, False),  # another claim than the configured one
        ({"groups": {"calibration-leads": True}}, False),  # not a list of names
        ({}, False),
        ({"groups": ["calibration\u200b-leads"]}, False),  # a zero-width space is refused
        ({"groups": "reviewers calibration-leads\u200b"}, False),
        ({"groups": ["ｃａｌｉｂｒａｔｉｏｎ-leads"]}, False),  # full-width letters
        ({"groups": ["calibration-leadſ"]}, False),  # the long s folds to "s" under NFKC only
        ({"groups": ["c\u0430libration-leads"]}, False),  # a Cyrillic "а"
        ({"groups": ["\u202ecalibration-leads"]}, False),  # a bidirectional control
    ],
)
def test_a_lead_group_claim_makes_a_lead(claims: dict[str, object], lead: bool) -> None:
    groups = roles.lead_group_keys(["calibration-leads"])
    in_group = roles.in_lead_groups(claims, "groups", groups)
    assert in_group is lead
    # A lead group rule configures leads: a reviewer outside it is no lead, even alone.
    assert roles.is_lead(["rita@example.org"], frozenset(), [], in_group=in_group) is lead
    assert roles.mode(frozenset(), [], groups=True) is roles.Mode.LEADS_CONFIGURED


@pytest.mark.parametrize(
    ("value", "lead"),
    [
        ("Führung", True),
        ("FÜHRUNG", True),  # case folded
        ("Fu\u0308hrung", True),  # NFC: a decomposed "ü" is the composed one
        ("\u212aontrolle", False),  # the Kelvin sign is not "K"
    ],
)
def test_a_lead_group_compares_after_nfc_and_case_folding(value: str, lead: bool) -> None:
    groups = roles.lead_group_keys(["führung", "Kontrolle"])
    assert roles.in_lead_groups({"roles": [value]}, "roles", groups) is lead
