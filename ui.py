"""Streamlit glue shared by app.py and the pages: who is reviewing, the database, literal text.

Kept out of `calibration/`, which never imports streamlit.

Who is reviewing. With OIDC configured (an `[auth]` section in `.streamlit/secrets.toml`,
see the README) the reviewer is the signed-in `st.user` (email, else name, else subject).
Without it (local use, the default) the app asks for a name once and keeps it in
session state under a key no widget uses, so once signed in no form field can point the
session at someone else's labels; "Sign out" is the only way to change it. Without OIDC
the name is taken on trust: anyone at the keyboard can type any name.

Untrusted text (questions, chunks, answers, claims, rationales, notes, ids) is shown only
through `literal()` / `highlighted()`: `st.text`, or HTML built here with every
untrusted piece passed through `html.escape`. Markdown-capable places (labels, help,
captions, option names) only ever get constant text.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import streamlit as st

from calibration import store

ROOT = Path(__file__).resolve().parent
REVIEWER_KEY = "_calibration_reviewer"  # session-state only; never a widget key
_SIGNIN_FIELD = "signin_name"
MAX_NAME = 80


def db_path() -> Path:
    return store.default_db_path()


def auth_configured() -> bool:
    """True when secrets.toml has an [auth] section (OIDC through st.login)."""
    try:
        return bool(st.secrets.load_if_toml_exists()) and "auth" in st.secrets
    except Exception:  # an unreadable secrets file means no auth, as Streamlit itself does
        return False


def current_reviewer() -> str | None:
    """The reviewer id of this browser session, or None before sign-in."""
    if auth_configured():
        user = st.user
        if not user.is_logged_in:
            return None
        ident = user.get("email") or user.get("name") or user.get("sub")
        return str(ident) if ident else None
    value = st.session_state.get(REVIEWER_KEY)
    return value if isinstance(value, str) and value else None


def normalise_name(raw: str) -> str:
    return re.sub(r"\s+", " ", raw).strip()[:MAX_NAME]


def _sign_in() -> None:
    name = normalise_name(str(st.session_state.get(_SIGNIN_FIELD, "")))
    if name:
        st.session_state[REVIEWER_KEY] = name
        st.session_state.pop("_signin_error", None)
    else:
        st.session_state["_signin_error"] = True


def _sign_out() -> None:
    for key in list(st.session_state):
        del st.session_state[key]


def require_reviewer() -> str:
    """The signed-in reviewer; otherwise draw the sign-in and stop the script."""
    reviewer = current_reviewer()
    if reviewer:
        return reviewer
    if auth_configured():
        st.subheader("Sign in to review")
        if st.button("Log in", type="primary"):
            st.login()
        st.stop()
    st.subheader("Sign in")
    with st.form("signin", border=False, enter_to_submit=True):
        st.text_input("Your name", key=_SIGNIN_FIELD, max_chars=MAX_NAME,
                      placeholder="e.g. Anna", width=360)
        st.form_submit_button("Sign in", type="primary", on_click=_sign_in)
    if st.session_state.get("_signin_error"):
        st.error("Type your name to sign in.")
    st.stop()
    raise AssertionError("unreachable")  # st.stop() raises


def sidebar_identity() -> None:
    """Who is signed in, and a way out, at the bottom of the sidebar."""
    reviewer = current_reviewer()
    if not reviewer:
        return
    with st.sidebar:
        st.caption("Signed in as")
        literal(reviewer)
        if auth_configured():
            if st.button("Log out", key="logout"):
                st.logout()
        else:
            st.button("Sign out", on_click=_sign_out, key="signout")


def literal(text: str | None, **kwargs: object) -> None:
    """Show untrusted text exactly as stored: no markdown, HTML, LaTeX or emoji codes."""
    st.text("" if text is None else text, **kwargs)  # type: ignore[arg-type]


_BOX = ("white-space: pre-wrap; overflow-wrap: anywhere; line-height: 1.6; "
        "font-size: 1rem; margin: 0;")
_MARK = ("background: rgba(255, 196, 0, 0.35); color: inherit; border-radius: 3px; "
         "padding: 0 2px; box-shadow: 0 0 0 1px rgba(255, 170, 0, 0.6);")


def highlighted(before: str, claim: str, after: str) -> None:
    """The answer with the current claim marked. Every piece is HTML-escaped, so the only
    markup is the constant <div>/<mark> here; st.html does no markdown or LaTeX."""
    esc = html.escape
    body = esc(before) + (f'<mark style="{_MARK}">{esc(claim)}</mark>' if claim else "") + esc(after)
    st.html(f'<div class="cal-answer" style="{_BOX}">{body}</div>')


def _leave_pages_directory_mode() -> None:
    """Make sure app.py's st.navigation drives every run, even a deep link on a fresh server.

    Streamlit 1.67 starts a server whose entry script sits beside a `pages/` folder in its
    legacy multipage mode (`PagesManager.uses_pages_directory`) until some session runs
    `st.navigation`. A first visit to /review therefore ran pages/review.py alone: no
    app.py, so no page config, no sign-in box, and the automatic file list as navigation
    ("app, cycles, home, review"). Every page imports this module, so on such a run we
    switch the flag off, as st.navigation itself does, and rerun: app.py then runs and
    resolves the same page (page hashes come from the URL path in both modes).
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:  # a later Streamlit without the legacy mode
        return
    if getattr(PagesManager, "uses_pages_directory", None) and get_script_run_ctx() is not None:
        PagesManager.uses_pages_directory = False
        st.rerun()


_leave_pages_directory_mode()
