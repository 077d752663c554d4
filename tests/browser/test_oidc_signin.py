"""With OIDC configured (an [auth] section in the secrets), the reviewer comes from st.user:
the page offers "Log in" and never a name field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import build_db, free_port, require_browser, server_errors, start_app
from .test_review_page import ANSWERS

pytestmark = pytest.mark.browser


def test_oidc_configured_asks_for_login_not_a_name(tmp_path: Path, page: Any) -> None:
    require_browser()
    db = tmp_path / "app.db"
    build_db(db, ANSWERS[:1])
    port = free_port()
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        f'cookie_secret = "{"s" * 40}"\n'
        'client_id = "calibration-tests"\n'
        'client_secret = "not-a-secret"\n'
        'server_metadata_url = "http://127.0.0.1:9/.well-known/openid-configuration"\n',
        encoding="utf-8",
    )
    log = tmp_path / "server.log"
    with start_app(db, log, ["--secrets.files", str(secrets)], port=port) as url:
        page.goto(f"{url}/review")
        page.get_by_role("button", name="Log in").wait_for()
        assert page.get_by_label("Your name").count() == 0
        assert page.locator(".st-key-cycle-name").count() == 0
    assert server_errors(log) == []
