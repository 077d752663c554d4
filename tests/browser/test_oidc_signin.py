"""With OIDC configured (an [auth] section in the secrets), the reviewer comes from st.user:
the page offers "Log in" and never a name field. Without it a name is typed (or picked from
the lead's roster), and the form says that this is for a single person or a trusted room."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from calibration import roles, roster, store

from .conftest import build_db, free_port, require_browser, server_errors, settle, start_app
from .test_oidc_login import auth_secrets
from .test_review_page import ANSWERS

pytestmark = pytest.mark.browser


def test_oidc_configured_asks_for_login_not_a_name(tmp_path: Path, page: Any) -> None:
    require_browser()
    db = tmp_path / "app.db"
    build_db(db, ANSWERS[:1])
    port = free_port()
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(
        auth_secrets(port, "http://127.0.0.1:9/.well-known/openid-configuration"), encoding="utf-8"
    )
    log = tmp_path / "server.log"
    with start_app(db, log, ["--secrets.files", str(secrets)], port=port) as url:
        page.goto(f"{url}/review")
        page.get_by_role("button", name="Log in").wait_for()
        assert page.get_by_label("Your name").count() == 0
        assert page.locator(".st-key-cycle-name").count() == 0
    assert server_errors(log) == []


def test_reviewers_do_not_see_lead_pages_when_leads_are_configured(tmp_path: Path, page: Any) -> None:
    require_browser()
    db = tmp_path / "app.db"
    build_db(db, ANSWERS[:1])
    secrets = tmp_path / "secrets.toml"
    secrets.write_text('[calibration]\nleads = ["boss"]\n', encoding="utf-8")
    log = tmp_path / "server.log"
    nav = page.locator(".st-key-nav")
    with start_app(db, log, ["--secrets.files", str(secrets)]) as url:
        page.goto(f"{url}/review")
        page.get_by_label("Your name").fill("anna")
        page.keyboard.press("Enter")
        page.get_by_role("button", name="Sign out").wait_for()
        nav.get_by_role("link", name="Review").wait_for()
        settle(page)  # a lead page's link drawn before sign-in goes when the run ends
        assert nav.get_by_role("link", name="Dashboard").count() == 0
        assert nav.get_by_role("link", name="Cycles").count() == 0
        page.get_by_role("button", name="Sign out").click()
        page.get_by_label("Your name").fill("Boss")
        page.keyboard.press("Enter")
        nav.get_by_role("link", name="Dashboard").wait_for()
        settle(page)
        assert nav.get_by_role("link", name="Judge lab").count() == 1
    assert server_errors(log) == []


def test_typed_sign_in_offers_the_roster_and_refuses_near_duplicates(tmp_path: Path, page: Any) -> None:
    require_browser()
    db = tmp_path / "app.db"
    build_db(db, ANSWERS[:1])
    with store.session(db) as conn:
        for name in ("Anna", "Borys"):
            roster.add(conn, name, by="lead")
    log = tmp_path / "server.log"
    with start_app(db, log, leads="lead") as url:
        page.goto(f"{url}/review")
        page.get_by_text("Typed names are for a single person or a trusted room").wait_for()
        page.get_by_label("Or type your name").fill("Anna.")
        page.keyboard.press("Enter")
        page.get_by_text("differs from the existing reviewer 'Anna'").wait_for()
        assert page.get_by_role("button", name="Sign out").count() == 0
        page.get_by_label("Pick your name").click()
        page.get_by_role("option", name="Anna").click()
        page.locator(".st-key-cycle-name .cal-cycle").wait_for()
        assert "Anna" in page.get_by_test_id("stSidebar").inner_text()
    with store.session(db) as conn:
        assert roles.signed_in(conn) == ["Anna"]
    assert server_errors(log) == []
