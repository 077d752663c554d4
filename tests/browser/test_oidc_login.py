"""Team sign-in end to end: a real OpenID Connect provider (oidc-provider-mock, serving
discovery, authorize, token and JWKS on 127.0.0.1) and the app's `st.login`, driven in Chromium.

The reviewer is the provider's subject, bound at its first sign-in to its verified e-mail (or
to a name made from the subject); a display name or an unverified e-mail names nobody and makes
no lead. Leads come from the configuration (`leads`, an e-mail) or from a groups claim of the
ID token (`leads_claim`, `lead_groups` under `[calibration]`; look-alike group names are not
lead groups). A reviewer is refused on every lead page by direct URL, a reload keeps the
session (Streamlit's identity cookie, not the URL) and logging out ends it, a copy of the
cookie included.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from calibration import identity, roster, store

from .conftest import (
    blur,
    build_db,
    free_port,
    require_browser,
    server_errors,
    settle,
    start_app,
    wait_claim,
    wait_saved,
)
from .test_review_page import ANSWERS

pytestmark = pytest.mark.browser

REVIEWER = "rita@example.org"
GROUP_LEAD = "gil@example.org"  # a lead through the groups claim
CONFIG_LEAD = "cora@example.org"  # a lead listed by e-mail in the configuration
GONE = "gus@example.org"  # a reviewer the lead deactivated on the roster
COPIER = "cole@example.org"  # a reviewer whose identity cookie is copied before Log out
VERIFIED = {"email_verified": True}
# Provider subjects that must not be a lead, each with the reviewer name it signs in as (None:
# a name made from the subject) and the claims it holds.
POSERS = {
    "mallory": ("mallory@example.net", {"email": "mallory@example.net", **VERIFIED, "name": CONFIG_LEAD}),
    "anon-cora": (None, {"name": "Cora@Example.org"}),
    "unverified-cora": (None, {"email": CONFIG_LEAD, "email_verified": False}),
    "zwsp-group": (
        "zed@example.org",
        {"email": "zed@example.org", **VERIFIED, "groups": ["calibration\u200b-leads"]},
    ),
    "wide-group": (
        "wendy@example.org",
        {"email": "wendy@example.org", **VERIFIED, "groups": ["ｃａｌｉｂｒａｔｉｏｎ-leads"]},
    ),
}
ANON_RITA = "anon-rita"  # no e-mail, the display name of the reviewer rita
TWIN = "cora-twin"  # another subject whose verified e-mail is the lead's, bound to the lead
LEAD_PAGES = {
    "cycles": "Cycles",
    "guidelines": "Guidelines",
    "dashboard": "Dashboard",
    "import": "Import",
    "judge_lab": "Judge lab",
}  # path: the page's title


def auth_secrets(port: int, metadata_url: str) -> str:
    """The `[auth]` section of secrets.toml for the app on `port` and a provider."""
    return (
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        f'cookie_secret = "{"c" * 40}"\n'
        'client_id = "calibration-tests"\n'
        'client_secret = "not-a-secret"\n'
        f'server_metadata_url = "{metadata_url}"\n'
    )


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    """A local OpenID Connect provider with predefined users (a button each, named by the
    subject); yields its base URL, which is also its issuer."""
    require_browser()
    mock = pytest.importorskip("oidc_provider_mock")
    users = [
        mock.User(
            sub=REVIEWER, claims={"email": REVIEWER, **VERIFIED, "name": "Rita", "groups": ["reviewers"]}
        ),
        mock.User(
            sub=GROUP_LEAD,
            claims={"email": GROUP_LEAD, **VERIFIED, "groups": ["reviewers", "calibration-leads"]},
        ),
        mock.User(sub=CONFIG_LEAD, claims={"email": CONFIG_LEAD, **VERIFIED}),
        mock.User(sub=GONE, claims={"email": GONE, **VERIFIED}),
        mock.User(sub=COPIER, claims={"email": COPIER, **VERIFIED}),
        mock.User(sub=ANON_RITA, claims={"name": REVIEWER}),
        mock.User(sub=TWIN, claims={"email": "Cora@example.org", **VERIFIED}),
        *[mock.User(sub=sub, claims=claims) for sub, (_, claims) in POSERS.items()],
    ]
    with mock.run_server_in_thread(port=free_port(), user_claims=users) as server:
        yield f"http://localhost:{server.server_port}"


@pytest.fixture(scope="module")
def team_db(provider: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The team app's database: two answers in an open cycle, a roster where the lead
    deactivated GONE, and the lead's subject bound to the lead's e-mail (as at a first sign-in)."""
    db = tmp_path_factory.mktemp("oidc-db") / "app.db"
    build_db(db, ANSWERS[:2])
    with store.session(db) as conn:
        roster.add(conn, GONE, by=CONFIG_LEAD)
        roster.deactivate(conn, GONE, by=CONFIG_LEAD)
        identity.sign_in(conn, identity.Person(provider, CONFIG_LEAD, 0, CONFIG_LEAD))
    return db


@pytest.fixture(scope="module")
def team_app(provider: str, team_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app in team mode against the provider; yields its URL."""
    tmp = tmp_path_factory.mktemp("oidc")
    db = team_db
    port = free_port()
    secrets = tmp / "secrets.toml"
    secrets.write_text(
        auth_secrets(port, f"{provider}/.well-known/openid-configuration") + "[calibration]\n"
        f'leads = ["{CONFIG_LEAD}"]\n'
        'leads_claim = "groups"\n'
        'lead_groups = ["calibration-leads"]\n',
        encoding="utf-8",
    )
    log = tmp / "server.log"
    with start_app(db, log, ["--secrets.files", str(secrets)], port=port, leads="") as url:
        yield url
    assert server_errors(log) == []


def _log_in(page: Any, url: str, who: str, shown: str | None = None) -> None:
    """Log in as the provider's subject `who`; the sidebar names the reviewer `shown` (`who`)."""
    page.goto(f"{url}/review")
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("button", name=who, exact=True).click()  # the provider's page: a predefined user
    page.get_by_test_id("stSidebar").get_by_text(shown or who, exact=True).wait_for()
    settle(page)


def _labels_by_reviewer(db: Path) -> dict[str, int]:
    with store.session(db) as conn:
        rows = conn.execute("SELECT reviewer, count(*) FROM human_labels GROUP BY reviewer").fetchall()
    return {r[0]: int(r[1]) for r in rows}


def _nav(page: Any) -> list[str]:
    links = page.locator(".st-key-nav a")
    links.first.wait_for()  # drawn in the same run as the name, but it may reach the page later
    return [t.strip().splitlines()[-1] for t in links.all_inner_texts()]


def _lead_page_shows(page: Any, url: str, path: str) -> bool:
    """Open a lead page by direct URL (a new run of the app); whether its content is drawn: its
    title without the refusal (a reviewer reads the title and "This page is for leads")."""
    page.goto(f"{url}/{path}")
    page.locator(".st-key-nav").wait_for()
    settle(page)
    titled = page.get_by_role("heading", name=LEAD_PAGES[path], exact=True).count() > 0
    return titled and "This page is for leads" not in page.locator('[data-testid="stMain"]').inner_text()


def test_a_reviewer_logs_in_is_refused_on_lead_pages_keeps_the_session_and_logs_out(
    team_app: str, page: Any
) -> None:
    _log_in(page, team_app, REVIEWER)
    assert _nav(page) == ["Home", "Review"]
    page.goto(f"{team_app}/review")
    page.locator(".st-key-cycle-name .cal-cycle").wait_for()
    assert "signin=" not in page.url  # the session lives in Streamlit's cookie, not the URL
    for path in LEAD_PAGES:
        assert not _lead_page_shows(page, team_app, path), path
        assert _nav(page) == ["Home", "Review"], path
    page.goto(f"{team_app}/review")
    page.locator(".st-key-cycle-name .cal-cycle").wait_for()
    page.reload()
    page.get_by_test_id("stSidebar").get_by_text(REVIEWER).wait_for()
    page.locator(".st-key-cycle-name .cal-cycle").wait_for()
    tab = page.context.new_page()  # a new tab: the same cookie, the same person
    tab.goto(f"{team_app}/review")
    tab.get_by_test_id("stSidebar").get_by_text(REVIEWER).wait_for()
    tab.close()
    page.get_by_role("button", name="Log out").click()
    # Streamlit ends the provider's session too (RP-initiated logout), then returns to the app.
    page.get_by_role("button", name="End session").click()
    page.locator(".st-key-nav").wait_for()
    page.goto(f"{team_app}/review")
    page.get_by_role("button", name="Log in").wait_for()
    assert page.get_by_test_id("stSidebar").get_by_text(REVIEWER).count() == 0


@pytest.mark.parametrize("lead", [GROUP_LEAD, CONFIG_LEAD], ids=["groups claim", "configured e-mail"])
def test_a_lead_logs_in_and_opens_every_lead_page(team_app: str, page: Any, lead: str) -> None:
    _log_in(page, team_app, lead)
    page.locator(".st-key-nav a", has_text="Judge lab").wait_for()
    settle(page)
    assert {"Cycles", "Guidelines", "Dashboard", "Import", "Judge lab"} <= set(_nav(page))
    for path in LEAD_PAGES:
        assert _lead_page_shows(page, team_app, path), path
    page.reload()
    page.get_by_test_id("stSidebar").get_by_text(lead).wait_for()
    page.locator(".st-key-nav a", has_text="Cycles").wait_for()


def test_a_reviewer_deactivated_on_the_roster_is_stopped_after_the_provider_signs_them_in(
    team_app: str, page: Any
) -> None:
    page.goto(f"{team_app}/review")
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("button", name=GONE).click()
    page.get_by_text("a reviewer a lead has deactivated").wait_for()
    assert page.get_by_text("is deactivated on the reviewer roster").count() == 1
    assert page.locator(".st-key-cycle-name").count() == 0  # no review work is drawn
    page.get_by_role("button", name="Log out").click()
    page.get_by_role("button", name="End session").click()
    page.locator(".st-key-nav").wait_for()


@pytest.mark.parametrize("sub", list(POSERS))
def test_a_display_name_an_unverified_email_or_a_look_alike_group_makes_no_lead(
    team_app: str, provider: str, page: Any, sub: str
) -> None:
    name = POSERS[sub][0] or identity.subject_name(provider, sub)
    _log_in(page, team_app, sub, shown=name)
    assert _nav(page) == ["Home", "Review"]
    assert page.get_by_test_id("stSidebar").get_by_text(CONFIG_LEAD).count() == 0
    for path in ("cycles", "dashboard"):
        assert not _lead_page_shows(page, team_app, path), path


def test_a_display_name_is_not_the_reviewer_of_that_name_and_writes_nothing_as_them(
    team_app: str, team_db: Path, provider: str, page: Any
) -> None:
    name = identity.subject_name(provider, ANON_RITA)
    _log_in(page, team_app, ANON_RITA, shown=name)
    assert page.get_by_test_id("stSidebar").get_by_text(REVIEWER).count() == 0
    page.goto(f"{team_app}/review")  # the provider returns to Home
    page.get_by_test_id("stSidebar").get_by_text(name, exact=True).wait_for()
    first = page.locator(".rc-claim").first
    first.wait_for()
    blur(page)
    pk = int(first.get_attribute("data-pk"))
    wait_claim(page, pk)
    page.keyboard.press("1")
    wait_saved(page, pk)
    labels = _labels_by_reviewer(team_db)
    assert labels.get(name) == 1 and REVIEWER not in labels


def test_a_second_subject_with_a_bound_email_is_refused_in_one_sentence(team_app: str, page: Any) -> None:
    page.goto(f"{team_app}/review")
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("button", name=TWIN, exact=True).click()
    page.get_by_text("This sign-in was refused").wait_for()
    assert page.get_by_text("belongs to another account at the identity provider").count() == 1
    assert page.locator(".st-key-cycle-name").count() == 0  # no review work is drawn
    assert page.get_by_test_id("stSidebar").get_by_text("Signed in as").count() == 0


def test_an_identity_cookie_copied_before_log_out_signs_nobody_in(team_app: str, page: Any) -> None:
    _log_in(page, team_app, COPIER)
    copied = page.context.cookies()
    page.get_by_role("button", name="Log out").click()
    page.get_by_role("button", name="End session").click()
    page.locator(".st-key-nav").wait_for()
    other = page.context.browser.new_context()
    try:
        thief = other.new_page()
        other.add_cookies(copied)
        thief.goto(f"{team_app}/review")
        thief.get_by_text("This sign-in ended with Log out").wait_for()
        assert thief.locator(".st-key-cycle-name").count() == 0
        assert thief.get_by_test_id("stSidebar").get_by_text(COPIER).count() == 0
    finally:
        other.close()
    _log_in(page, team_app, COPIER)  # a new sign-in after the Log out is welcome
