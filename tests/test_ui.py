"""The Streamlit glue (calibration_app) and the Home page, run headless with Streamlit's AppTest:
the lead role, name sign-in (canonical spelling, the name kept for a reload), and Home
showing no judge verdicts to reviewers."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from calibration import cycles, roster, store, tokens
from calibration.importing import import_answers
from calibration_app import settings, signin, uploads

ROOT = Path(__file__).resolve().parents[1]
LEAD_PAGES = ["pages/dashboard.py", "pages/cycles.py", "pages/judge_lab.py", "pages/guidelines.py"]


@pytest.fixture
def judged(db_url: str | Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str | Path:
    """A database the app uses ($CALIBRATION_DB) with one judged answer and an open cycle."""
    monkeypatch.setenv("CALIBRATION_DB", str(db_url))
    monkeypatch.delenv(signin.LEADS_ENV, raising=False)
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text(
        json.dumps(
            {
                "id": "A1",
                "question": "q?",
                "answer": "It is. It is not.",
                "chunks": ["c"],
                "judge_model": "judge-x",
                "judge_prompt_version": "v1",
                "claims": [
                    {"id": "c1", "claim": "It is.", "verdict": "SUPPORTED"},
                    {"id": "c2", "claim": "It is not.", "verdict": "SUPPORTED"},
                ],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    with store.session(db_url) as db:
        import_answers(db, jsonl)
        cycles.create_cycle(
            db,
            name="c",
            judge_run="judge-x@v1",
            size=1,
            seed=1,
            reviewers=[],
            overlap=0.0,
            force=True,
            created_by="t",
        )
    return db_url


def _page(path: str, reviewer: str | None) -> AppTest:
    at = AppTest.from_file(str(ROOT / path), default_timeout=30)
    if reviewer is not None:
        at.session_state[signin.REVIEWER_KEY] = reviewer
    return at.run()


def _texts(at: AppTest) -> str:
    parts = [e.value for kind in ("markdown", "text", "caption", "info") for e in getattr(at, kind)]
    return "\n".join(str(p) for p in parts)


@pytest.mark.sqlite_only  # the role is checked before the page reads the store
@pytest.mark.parametrize("path", LEAD_PAGES)
def test_a_non_lead_sees_no_lead_page(judged: str | Path, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    monkeypatch.setenv(signin.LEADS_ENV, " Anna Lead , bea@example.org")
    at = _page(path, "carl")
    assert not at.exception
    assert [i.value for i in at.info] and at.info[0].value.startswith("This page is for leads")
    # Nothing of the page beyond its title: no tables, charts, metrics or controls.
    for kind in (
        "dataframe",
        "metric",
        "selectbox",
        "text_input",
        "text_area",
        "button",
        "number_input",
        "radio",
        "json",
        "table",
    ):
        assert not list(getattr(at, kind)), f"{path} drew a {kind} for a non-lead"
    assert not [e for e in at.get("arrow_vega_lite_chart")]
    # A lead (any case or spacing) gets the page.
    lead = _page(path, "anna  LEAD")
    assert not lead.exception
    assert not [i for i in lead.info if i.value.startswith("This page is for leads")]


@pytest.mark.parametrize(
    ("reviewer", "leads", "is_lead"),
    [
        ("anna lead", " Anna Lead , bea@example.org", True),  # case and spaces do not matter
        ("Bea@Example.org", "Anna Lead,bea@example.org", True),
        ("carl", "Anna Lead,bea@example.org", False),
        ("carl", None, True),  # none configured (local use): every signed-in user is a lead
        ("carl", " , ", True),  # an empty list configures nothing
    ],
)
def test_require_lead(
    monkeypatch: pytest.MonkeyPatch, reviewer: str, leads: str | None, is_lead: bool
) -> None:
    if leads is None:
        monkeypatch.delenv(signin.LEADS_ENV, raising=False)
    else:
        monkeypatch.setenv(signin.LEADS_ENV, leads)

    def script() -> None:
        import streamlit as st

        from calibration_app import access

        access.require_lead()
        st.text("LEAD CONTENT")

    at = AppTest.from_function(script, default_timeout=30)
    at.session_state[signin.REVIEWER_KEY] = reviewer
    at.run()
    assert not at.exception
    assert ("LEAD CONTENT" in _texts(at)) is is_lead
    assert bool(at.info) is not is_lead


def test_leads_from_the_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(signin.LEADS_ENV, raising=False)

    def script() -> None:
        import streamlit as st

        from calibration_app import access

        access.require_lead()
        st.text("LEAD CONTENT")

    at = AppTest.from_function(script, default_timeout=30)
    at.secrets["calibration"] = {"leads": ["Anna Lead"]}
    at.session_state[signin.REVIEWER_KEY] = "carl"
    at.run()
    assert at.info and "LEAD CONTENT" not in _texts(at)
    at.session_state[signin.REVIEWER_KEY] = "ANNA  lead"
    at.run()
    assert not at.info and "LEAD CONTENT" in _texts(at)


@pytest.mark.sqlite_only  # the sign-in is asked for before the page reads the store
def test_a_lead_page_asks_for_sign_in_first(judged: str | Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(signin.LEADS_ENV, "anna")
    at = _page("pages/dashboard.py", None)
    assert [t.label for t in at.text_input] == ["Your name"]
    assert not at.info


def test_home_shows_no_judge_verdicts(judged: str | Path) -> None:
    """QA: Home showed "demo-judge: supported 9, contradicted 0, unsupported 0" to reviewers."""
    at = _page("app.py", None)  # Home is the default page
    assert not at.exception
    assert at.title[0].value == "Judge calibration"
    (table,) = at.dataframe
    assert list(table.value.columns) == ["judge run", "answers", "claims", "human-labeled claims"]
    assert table.value.iloc[0].tolist() == ["judge-x@v1", 1, 2, 0]
    shown = _texts(at).lower()
    assert not any(v in shown for v in ("supported", "contradicted"))


def _sign_in_script() -> None:
    import streamlit as st

    from calibration_app import signin

    st.text("REVIEWER=" + signin.require_reviewer())


def test_sign_in_uses_the_known_spelling(judged: str | Path) -> None:
    """QA: "anna reviewer" and "Anna Reviewer" became two people."""
    with store.session(judged) as db:
        pk = store.claim_pk(db, "A1", "c1")
        store.record_label(db, claim=pk, reviewer="Anna Reviewer", kind="blind", verdict="SUPPORTED")
    at = AppTest.from_function(_sign_in_script, default_timeout=30).run()
    at.text_input(key="signin_name").input("  anna   reviewer ")
    at.button[0].click().run()
    assert at.session_state[signin.REVIEWER_KEY] == "Anna Reviewer"
    assert "REVIEWER=Anna Reviewer" in _texts(at)
    assert at.query_params[signin.NAME_PARAM] in ("Anna Reviewer", ["Anna Reviewer"])


def test_a_name_without_a_token_only_fills_in(judged: str | Path) -> None:
    """A name in the URL without a valid token is only filled in (labels are written under the
    session's signed-in name, never the URL's)."""
    at = AppTest.from_function(_sign_in_script, default_timeout=30)
    at.query_params[signin.NAME_PARAM] = "Anna"
    at.run()
    assert signin.REVIEWER_KEY not in at.session_state
    assert at.text_input(key="signin_name").value == "Anna"
    assert "REVIEWER=" not in _texts(at)
    at.button[0].click().run()
    assert at.session_state[signin.REVIEWER_KEY] == "Anna"
    token = at.query_params[signin.TOKEN_PARAM]
    token = token[0] if isinstance(token, list) else token
    with store.session(judged) as db:
        secret = store.get_setting(db, signin.SECRET_SETTING)
    assert secret and len(secret) == 64  # generated once, kept in the database
    assert tokens.check_token(secret.encode(), "Anna", token, time.time())


def _app_sign_in_script() -> None:
    import streamlit as st

    from calibration_app import signin

    signin.restore_sign_in()  # as app.py does on every run, before the page
    st.text("REVIEWER=" + signin.require_reviewer())


def test_a_reviewer_deactivated_after_signing_in_is_signed_out_on_the_next_run(
    judged: str | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(signin.SECRET_ENV, "server-secret")
    at = AppTest.from_function(_app_sign_in_script, default_timeout=30).run()
    at.text_input(key="signin_name").input("Vera")
    at.button[0].click().run()
    assert "REVIEWER=Vera" in _texts(at)
    token = at.query_params[signin.TOKEN_PARAM]
    token = token[0] if isinstance(token, list) else token
    with store.session(judged) as db:
        roster.add(db, "Vera", by="lead")
        roster.deactivate(db, "Vera", by="lead")
    at.run()  # the same session, its next run
    assert signin.REVIEWER_KEY not in at.session_state
    assert "REVIEWER=" not in _texts(at)
    assert [e.value for e in at.error] == [
        "A lead deactivated you: 'Vera' is deactivated on the reviewer roster, "
        "and nothing more is recorded under it"
    ]
    assert signin.TOKEN_PARAM not in at.query_params
    # Nor does the reload link signed before the deactivation bring the session back.
    again = AppTest.from_function(_app_sign_in_script, default_timeout=30)
    again.query_params[signin.NAME_PARAM] = "Vera"
    again.query_params[signin.TOKEN_PARAM] = token
    again.run()
    assert signin.REVIEWER_KEY not in again.session_state
    assert "REVIEWER=" not in _texts(again)
    assert "deactivated" in again.error[0].value


def _reload(token: str, name: str) -> AppTest:
    at = AppTest.from_function(_sign_in_script, default_timeout=30)
    at.query_params[signin.NAME_PARAM] = name
    at.query_params[signin.TOKEN_PARAM] = token
    return at.run()


def test_a_reload_with_a_valid_token_signs_the_same_reviewer_in(
    judged: str | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(signin.SECRET_ENV, "server-secret")
    good = tokens.sign_token(b"server-secret", "Anna", int(time.time()) + 600)
    at = _reload(good, "Anna")
    assert at.session_state[signin.REVIEWER_KEY] == "Anna"
    assert "REVIEWER=Anna" in _texts(at)
    # The same token under another name, an expired one, or one made with another key: the
    # sign-in form, with the name only filled in.
    for token, name in [
        (good, "Boris"),
        (tokens.sign_token(b"server-secret", "Anna", int(time.time()) - 1), "Anna"),
        (tokens.sign_token(b"another-secret", "Anna", int(time.time()) + 600), "Anna"),
    ]:
        at = _reload(token, name)
        assert signin.REVIEWER_KEY not in at.session_state, (token, name)
        assert at.text_input(key="signin_name").value == name


@pytest.mark.parametrize(
    "name, expires_in, now_shift, key, expected",
    [
        ("Anna", 600, 0, b"k", True),
        ("Anna", 600, 601, b"k", False),  # expired
        ("Anna", tokens.TOKEN_TTL_S + 60, 0, b"k", False),  # claims a longer life than is ever issued
        ("Anna ", 600, 0, b"k", False),  # bound to the exact name
        ("Anna", 600, 0, b"other", False),  # another server's key
    ],
)
def test_check_token(name: str, expires_in: int, now_shift: int, key: bytes, expected: bool) -> None:
    now = 1_800_000_000
    token = tokens.sign_token(b"k", "Anna", now + expires_in)
    assert tokens.check_token(key, name, token, now + now_shift) is expected


@pytest.mark.parametrize("token", ["", "abc", "123", "123.", ".abc", "12a.abc", "999999999999.x"])
def test_malformed_tokens_are_refused(token: str) -> None:
    assert not tokens.check_token(b"k", "Anna", token, 1_800_000_000)


def test_a_lead_writes_guidelines(judged: str | Path) -> None:
    at = _page("pages/guidelines.py", "anna")
    at.text_area(key="guidelines_text_project").input("**Be strict.** Dates must match.\n\nMore.")
    at.button[0].click().run()
    from calibration.store import guidelines as db_guidelines

    with store.session(judged) as db:
        saved = db_guidelines.get_guidelines(db, db_guidelines.PROJECT_SCOPE)
    assert saved is not None and saved.author == "anna" and saved.markdown.startswith("**Be strict.**")
    assert "Under the buttons: **Be strict.** Dates must match." in _texts(at)
    assert "Directly supported by the text of the chunks" in _texts(at)


def test_guidelines_with_a_nul_are_refused_with_a_sentence(judged: str | Path) -> None:
    at = _page("pages/guidelines.py", "anna")
    at.text_area(key="guidelines_text_project").input("Be strict.\x00")
    at.button[0].click().run()
    assert not at.exception
    assert [e.value for e in at.error] == ["Not saved."]
    assert (
        "guidelines: contains a NUL character (U+0000) at character 11; type it again without it"
        in _texts(at)
    )
    from calibration.store import guidelines as db_guidelines

    with store.session(judged) as db:
        assert db_guidelines.get_guidelines(db, db_guidelines.PROJECT_SCOPE) is None


@pytest.mark.parametrize(
    "browser_name, saved_as",
    [
        ("ragas_run.jsonl", "ragas_run.jsonl"),  # an ordinary name is kept: adapters take ids from it
        ("Table.TSV", "Table.tsv"),
        ("..", "upload"),
        (".", "upload"),
        ("", "upload"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\x\\run.parquet", "run.parquet"),
        ("a\x00b.jsonl", "a_b.jsonl"),
        ("bad\nname\u202e.csv", "bad_name.csv"),
        ("Ж" * 200 + ".csv", "Ж" * 48 + ".csv"),  # 96 bytes of UTF-8, not 400
        ("x." + "q" * 30, "x"),  # not an extension an adapter reads
        (".hidden", "upload.hidden"),
    ],
)
def test_upload_name(browser_name: str, saved_as: str) -> None:
    assert uploads.upload_name(browser_name) == saved_as


def test_upload_name_is_always_one_short_file_name() -> None:
    for name in ["..", "/", "a/..", "\x00", "ё" * 300, "x" * 300 + "." + "y" * 300, " . ", "~/.ssh/id"]:
        got = uploads.upload_name(name)
        assert got and "/" not in got and "\x00" not in got and got not in (".", "..")
        assert not got.startswith(".") and len(got.encode()) <= 105


def test_stale_upload_folders_are_swept(tmp_path: Path) -> None:
    old, new, other = (
        tmp_path / f"{uploads.UPLOAD_PREFIX}old",
        tmp_path / f"{uploads.UPLOAD_PREFIX}new",
        tmp_path / "someone-else",
    )
    for folder in (old, new, other):
        folder.mkdir()
        (folder / "f.jsonl").write_text("{}")
    now = time.time()
    os.utime(old, (now - uploads.UPLOAD_MAX_AGE_S - 1, now - uploads.UPLOAD_MAX_AGE_S - 1))
    os.utime(new, (now - uploads.UPLOAD_MAX_AGE_S + 1, now - uploads.UPLOAD_MAX_AGE_S + 1))
    os.utime(other, (now - 10 * uploads.UPLOAD_MAX_AGE_S,) * 2)
    uploads.sweep_uploads(now, root=tmp_path)
    assert not old.exists() and new.exists() and other.exists()
    # The next sweep comes at most UPLOAD_SWEEP_EVERY_S later: a folder no run used since `now`
    # is gone within two minutes (the bound docs/security.md states), however late its session ends.
    uploads.sweep_uploads(now + uploads.UPLOAD_SWEEP_EVERY_S, root=tmp_path)
    assert not new.exists()
    assert uploads.UPLOAD_MAX_AGE_S + uploads.UPLOAD_SWEEP_EVERY_S <= 120


def test_a_saved_upload_is_kept_fresh_by_its_runs_and_made_again_once_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # this test's folders only
    first = uploads.saved_upload("upload_under_test", b"{}", "x.jsonl")
    folder = first.path.parent
    try:
        assert folder.parent == tmp_path
        os.utime(folder, (time.time() - 10 * uploads.UPLOAD_MAX_AGE_S,) * 2)
        assert uploads.saved_upload("upload_under_test", b"{}", "x.jsonl") is first
        uploads.sweep_uploads(time.time(), root=tmp_path)  # this run used it: kept
        assert first.path.read_bytes() == b"{}"
        shutil.rmtree(folder)  # swept while its tab was idle
        again = uploads.saved_upload("upload_under_test", b"{}", "x.jsonl")
        assert again is not first and again.path.read_bytes() == b"{}"
    finally:
        uploads.drop_upload("upload_under_test")


def test_a_saved_upload_goes_when_discarded_or_collected() -> None:
    import gc

    one = uploads.SavedUpload(b"{}", "../x.jsonl", "d1")
    folder = one.path.parent
    assert one.path.read_bytes() == b"{}" and folder.name.startswith(uploads.UPLOAD_PREFIX)
    one.discard()
    assert not folder.exists()
    two = uploads.SavedUpload(b"{}", "y.jsonl", "d2")
    folder = two.path.parent
    del two
    gc.collect()
    assert not folder.exists()


def test_a_secrets_file_created_while_the_server_runs_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A missing file is not looked for at every call (Streamlit would), yet one created later counts.
    from streamlit.runtime.secrets import Secrets

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(st, "secrets", Secrets())  # this test's own, as AppTest does
    assert not settings.auth_configured()
    assert settings.calibration_secrets() == {}
    folder = tmp_path / ".streamlit"
    folder.mkdir()
    (folder / "secrets.toml").write_text(
        '[calibration]\nleads = ["Anna Lead"]\n\n[auth]\nredirect_uri = "http://localhost:8501/oauth2callback"\n',
        encoding="utf-8",
    )
    assert settings.auth_configured()
    assert settings.calibration_secrets() == {"leads": ["Anna Lead"]}
