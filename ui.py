"""Streamlit glue shared by app.py and the pages: who is reviewing, the database, literal text.

Kept out of `calibration/`, which never imports streamlit.

Who is reviewing. With OIDC configured (an `[auth]` section in `.streamlit/secrets.toml`,
see the README) the reviewer is the signed-in `st.user` (email, else name, else subject).
Without it (local use, the default) the app asks for a name once and keeps it in
session state under a key no widget uses, so once signed in no form field can point the
session at someone else's labels; "Sign out" is the only way to change it. Without OIDC
the name is taken on trust: anyone at the keyboard can type any name. A typed name is
matched to a known reviewer's spelling by the one name rule (`calibration.roles.sign_in`:
NFKC, case-folded, invisible characters removed; look-alike names refused), so "anna reviewer"
is the existing "Anna Reviewer", not a second person.

A reload is a new Streamlit session, and Streamlit offers no server-side way to carry a
session over (`st.context.cookies` is read-only). The name is therefore also kept in the
page's query string (`?reviewer=`), which is client-controlled exactly like the name
field: after a reload it only fills in the sign-in field, and the reviewer confirms with
Enter. Labels are always written under the session's signed-in name (`REVIEWER_KEY`),
never read from the URL, and a link someone shares does not sign anyone in silently.

Leads (`require_lead`): the Dashboard, Cycles and Judge lab pages are for leads, listed in
$CALIBRATION_LEADS or in the secrets. With none configured the app is in single-user mode
(the one name signed in is the lead) until a second name signs in; then lead pages refuse
everyone until a lead is configured (`calibration.roles`).

Untrusted text (questions, chunks, answers, claims, rationales, notes, ids) is shown only
through `literal()` / `highlighted()`: `st.text`, or HTML built here with every
untrusted piece passed through `html.escape`. Markdown-capable places (labels, help,
captions, option names) only ever get constant text.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

import streamlit as st

from calibration import cycles, roles, store
from calibration.errors import CalibrationError

ROOT = Path(__file__).resolve().parent
REVIEWER_KEY = "_calibration_reviewer"  # session-state only; never a widget key
_SIGNIN_FIELD = "signin_name"
MAX_NAME = 80
NAME_PARAM = "reviewer"  # query parameter that survives a reload; only pre-fills the sign-in
LEADS_ENV = "CALIBRATION_LEADS"


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
    """The one reviewer-name rule (`cycles.normalise_name`), cut to the longest name kept."""
    return cycles.normalise_name(raw)[:MAX_NAME]


def _sign_in() -> None:
    typed = str(st.session_state.get(_SIGNIN_FIELD, ""))
    name = normalise_name(typed)
    if name:
        # The one name rule (calibration.roles): normalised, look-alikes refused, the
        # stored spelling of a known reviewer kept, the sign-in recorded.
        try:
            with store.session(db_path()) as db:
                name = roles.sign_in(db, typed)
        except CalibrationError as exc:
            st.session_state["_signin_error"] = str(exc)
            return
        st.session_state[REVIEWER_KEY] = name
        st.session_state.pop("_signin_error", None)
        st.query_params[NAME_PARAM] = name
    else:
        st.session_state["_signin_error"] = True


def _sign_out() -> None:
    for key in list(st.session_state):
        del st.session_state[key]
    st.query_params.pop(NAME_PARAM, None)


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
    remembered = normalise_name(str(st.query_params.get(NAME_PARAM, "")))
    if remembered and _SIGNIN_FIELD not in st.session_state:
        st.session_state[_SIGNIN_FIELD] = remembered  # after a reload: filled in, not signed in
    with st.form("signin", border=False, enter_to_submit=True):
        st.text_input("Your name", key=_SIGNIN_FIELD, max_chars=MAX_NAME,
                      placeholder="e.g. Anna", width=360)
        # Enter also works from outside the field, so a reload costs one key press.
        st.form_submit_button("Sign in", type="primary", on_click=_sign_in,
                              shortcut="Enter" if remembered else None)
    if remembered:
        st.caption("The name you used before the reload is filled in: press Enter to go on, "
                   "or type another name.")
    problem = st.session_state.get("_signin_error")
    if problem:
        # Plain text: the message quotes the typed name (made visible by calibration.text).
        st.error(problem if isinstance(problem, str) else "Type your name to sign in.", icon=None)
    st.stop()
    raise AssertionError("unreachable")  # st.stop() raises


def _secret_leads() -> list[str]:
    try:
        if not st.secrets.load_if_toml_exists() or "calibration" not in st.secrets:
            return []
        leads = st.secrets["calibration"].get("leads")
    except Exception:  # an unreadable secrets file configures nothing, as for auth_configured
        return []
    if isinstance(leads, str):
        return leads.split(",")
    return [str(x) for x in leads] if isinstance(leads, (list, tuple)) else []


def configured_leads() -> frozenset[str] | None:
    """The leads' names / emails as comparison keys (`calibration.text.normalise_name`); None if none set.

    From $CALIBRATION_LEADS (comma-separated) and `leads = [...]` under `[calibration]` in
    `.streamlit/secrets.toml` (both, if both are set). An empty value configures nothing.
    """
    leads = roles.lead_keys(os.environ.get(LEADS_ENV, "").split(",") + _secret_leads())
    return leads or None


def _identities(reviewer: str) -> list[str]:
    idents = [reviewer]
    if auth_configured() and st.user.is_logged_in:
        idents += [str(st.user.get(k)) for k in ("email", "name", "sub") if st.user.get(k)]
    return idents


def role_mode() -> roles.Mode:
    """Leads configured, single-user (no lead, at most one name ever signed in), or a team without leads."""
    leads = configured_leads() or frozenset()
    if leads:
        return roles.Mode.LEADS_CONFIGURED
    with store.session(db_path()) as db:
        names = roles.signed_in(db)
    reviewer = current_reviewer()
    return roles.mode(leads, [*names, *([reviewer] if reviewer else [])])


def is_lead(reviewer: str) -> bool:
    """Whether the signed-in `reviewer` is a lead (`calibration.roles.is_lead`).

    With OIDC the user's email, name or subject may match a configured lead. Without any lead
    configured the first and only name that signs in is the lead (single-user mode); once a
    second name has signed in nobody is, until a lead is configured.
    """
    with store.session(db_path()) as db:
        if auth_configured():
            roles.note_sign_in(db, reviewer)  # a typed name is recorded at sign-in; OIDC here
        names = roles.signed_in(db)
    return roles.is_lead(_identities(reviewer), configured_leads() or frozenset(), names)


def require_lead() -> str:
    """The signed-in reviewer if they are a lead; otherwise say so and stop the script.

    Signs in first (`require_reviewer`). Leads are configured by the environment variable
    CALIBRATION_LEADS (comma-separated names or emails) or by `leads = ["anna@example.org",
    ...]` under `[calibration]` in `.streamlit/secrets.toml`; names match after Unicode
    normalisation (case, spacing, invisible characters), and with OIDC the user's email, name
    or subject may match. The check runs on the server at every run of a lead page, so a
    direct URL is refused alike. Without OIDC a name is taken on trust
    (`calibration.roles.TYPED_NAME_LIMITS`).
    """
    reviewer = require_reviewer()
    if is_lead(reviewer):
        return reviewer
    st.info(roles.refusal(role_mode()), icon=":material/lock:")
    st.stop()
    raise AssertionError("unreachable")  # st.stop() raises


def sidebar_identity() -> None:
    """Who is signed in, and a way out, at the bottom of the sidebar."""
    reviewer = current_reviewer()
    if not reviewer:
        return
    if not auth_configured() and st.query_params.get(NAME_PARAM) != reviewer:
        st.query_params[NAME_PARAM] = reviewer  # a page switch drops it; a reload needs it
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


# Streamlit ignores a shortcut key only while the focus is in a text field. A pick list's
# own controls ("Clear all", a chip's remove button) are buttons, so a reviewer who picked
# an evidence chunk and pressed Tab to reach the note landed on "Clear all", and typing the
# note recorded verdicts ("u" = unclear, "1" = SUPPORTED...). This listener, on the window
# in the capture phase (before Streamlit's shortcut handler on the document), drops plain
# keys aimed at a pick list's non-text parts. Enter, Space, Tab and Escape still reach the
# control. A constant: no data goes into it.
_KEY_GUARD = """<script>
(() => {
  if (window.__calibrationKeyGuard) return;
  window.__calibrationKeyGuard = true;
  const PICKERS = '[data-testid="stMultiSelect"], [data-testid="stSelectbox"]';
  const PASS = new Set(["Tab", "Escape", "Enter", " ", "Shift"]);
  window.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || PASS.has(e.key)) return;
    const t = e.target;
    if (!(t instanceof Element) || t.tagName === "INPUT" || t.tagName === "TEXTAREA") return;
    if (t.closest(PICKERS)) e.stopImmediatePropagation();
  }, true);
})();
</script>"""


def shortcut_guard() -> None:
    """Keep shortcut keys from firing while the focus sits on a pick list's buttons."""
    st.html(_KEY_GUARD, unsafe_allow_javascript=True, width=1)


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
