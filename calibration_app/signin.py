"""Who is reviewing: the sign-in, and the name a session keeps.

With OIDC configured (an `[auth]` section in `.streamlit/secrets.toml`,
see docs/deployment.md) the reviewer is the one the provider's subject was bound to at its first
sign-in (`calibration.identity`: the verified e-mail, else a name made from the subject;
never the display name).
Without it (local use, the default) the app asks for a name once and keeps it in
session state under a key no widget uses, so once signed in no form field can point the
session at someone else's labels; "Sign out" is the only way to change it. Without OIDC
the name is taken on trust: anyone at the keyboard can type any name. A typed name is
matched to a known reviewer's spelling by the one name rule (`calibration.roles.sign_in`:
NFKC, case-folded, invisible characters removed; look-alike names refused), so "anna reviewer"
is the existing "Anna Reviewer", not a second person.

A reload is a new Streamlit session, and Streamlit offers no server-side way to carry a
session over (`st.context.cookies` is read-only). The name is therefore kept in the page's
query string (`?reviewer=`) beside a signed, expiring token (`?signin=`, see
`sign_token`): a reload with both, the token valid, signs the same reviewer in again
without a key press. A name alone (or with a bad or expired token) only fills in the
sign-in field. The sign-in offers the lead's roster (`calibration.roster`) to pick from.
Labels are always written under the session's signed-in name
(`REVIEWER_KEY`), never read from the URL.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import NoReturn

import streamlit as st

from calibration import identity, roles, roster, store
from calibration.errors import (
    CalibrationError,
    SignInRefused,
)
from calibration.text import display_name, visible
from calibration.tokens import TOKEN_TTL_S, check_token, sign_token
from calibration_app.settings import auth_configured, calibration_secret
from calibration_app.untrusted import literal

REVIEWER_KEY = "_calibration_reviewer"  # session-state only; never a widget key
_SIGNIN_FIELD = "signin_name"
MAX_NAME = 80
NAME_PARAM = "reviewer"  # query parameter that survives a reload; only pre-fills the sign-in
LEADS_ENV = "CALIBRATION_LEADS"
TOKEN_PARAM = "signin"  # query parameter holding the sign-in token (`sign_token`)
SECRET_ENV = "CALIBRATION_SIGNIN_SECRET"
SECRET_SETTING = store.SIGNIN_SECRET_SETTING  # generated once when neither env nor secrets set one
_ROSTER_PICK = "signin_pick"
TYPED_NAME_NOTE = (
    "Typed names are for a single person or a trusted room: anyone can type any "
    "name. A team signs in through its identity provider (OIDC, see the manual's Deployment page)."
)
_PROVIDER_KEY = "_calibration_provider"  # session-state only: (Person, reviewer) last resolved


def db_path() -> Path | str:
    """The store this server uses: $CALIBRATION_DB (a path or a postgresql:// URL)."""
    return store.default_db_url()


def signin_secret() -> bytes:
    """The key of the sign-in tokens: $CALIBRATION_SIGNIN_SECRET, else `signin_secret`
    under `[calibration]` in the secrets, else a random one generated once and kept in the
    database's settings (so every server process on the database shares it)."""
    value = os.environ.get(SECRET_ENV, "") or str(calibration_secret("signin_secret") or "")
    if value:
        return value.encode()
    with store.session(db_path()) as db:
        return store.setting_or_new(db, SECRET_SETTING, secrets.token_hex(32)).encode()


def issue_token(name: str) -> None:
    st.query_params[NAME_PARAM] = name
    st.query_params[TOKEN_PARAM] = sign_token(signin_secret(), name, int(time.time()) + TOKEN_TTL_S)


def _sign_in_from_link() -> str | None:
    """After a reload: the reviewer named in the URL, if its token is valid; else None."""
    name = shown_name(str(st.query_params.get(NAME_PARAM, "")))
    token = str(st.query_params.get(TOKEN_PARAM, ""))
    if not name or not token or not check_token(signin_secret(), name, token, time.time()):
        return None
    st.session_state[REVIEWER_KEY] = name
    return name


def provider_person() -> identity.Person | None:
    """The person the provider signed in (`calibration.identity.person_of` over st.user's ID
    token claims), or None when nobody is logged in."""
    if not st.user.is_logged_in:
        return None
    return identity.person_of(
        st.user.to_dict(), assume_verified=identity.is_true(calibration_secret("assume_email_verified"))
    )


def _provider_reviewer(*, fresh: bool = False) -> str | None:
    """The reviewer the logged-in provider identity stands for (`calibration.identity.sign_in`:
    bound at its first sign-in); None when nobody is logged in. SignInRefused when the binding
    refuses it. Kept in session state; `fresh` reads the binding again (app.py's every run,
    through `restore_sign_in`, so a rename or a Log out elsewhere counts at the next run)."""
    person = provider_person()
    if person is None:
        return None
    kept = st.session_state.get(_PROVIDER_KEY)
    if not fresh and isinstance(kept, tuple) and kept[0] == person:
        return str(kept[1])
    st.session_state.pop(_PROVIDER_KEY, None)
    with store.session(db_path()) as db:
        name = identity.sign_in(db, person)
    st.session_state[_PROVIDER_KEY] = (person, name)
    return name


def current_reviewer() -> str | None:
    """The reviewer id of this browser session, or None before sign-in (or when the provider's
    sign-in is refused: `restore_sign_in` says why)."""
    if auth_configured():
        try:
            return _provider_reviewer()
        except SignInRefused:
            return None
    value = st.session_state.get(REVIEWER_KEY)
    return value if isinstance(value, str) and value else None


def log_out() -> None:
    """Log the provider's sign-in out, recording it first (`calibration.identity.log_out`), so
    a copy of this session's identity cookie signs nobody in afterwards."""
    person = provider_person()
    try:
        if person is not None:
            with store.session(db_path()) as db:
                identity.log_out(db, person)
    finally:
        st.logout()


def _refuse_provider_sign_in(headline: str, reason: str) -> NoReturn:
    """Stop the page: the provider's sign-in stands for no reviewer; the way out is Log out."""
    st.error(headline, icon=":material/block:")
    literal(reason)
    if st.button("Log out", key="logout-refused"):
        log_out()
    st.stop()


def restore_sign_in() -> str | None:
    """The reviewer of this browser session; after a reload, the one the link signs in again
    (`_sign_in_from_link`). app.py asks this before it builds the navigation, so every page,
    Home included, and the sidebar's page list know who is signed in from the first run."""
    if auth_configured():
        try:
            reviewer = _provider_reviewer(fresh=True)
        except SignInRefused as exc:
            _refuse_provider_sign_in("This sign-in was refused; nothing is written under it.", str(exc))
    else:
        reviewer = current_reviewer() or _sign_in_from_link()
    if reviewer is None:
        return None
    with store.session(db_path()) as db:
        refusal = roles.deactivated(db, reviewer)
    if refusal is None:
        return reviewer
    # Deactivated after signing in: the session ends here, whichever way it began.
    if auth_configured():
        _refuse_provider_sign_in("This sign-in belongs to a reviewer a lead has deactivated.", refusal)
    signed_out(refusal)
    return None


def signed_out(why: str) -> None:
    """End the session a lead's roster change refused, with `why` on the typed-name sign-in (an
    OIDC sign-in outlives the session: the next run's `restore_sign_in` stops it and says why)."""
    sign_out()
    st.session_state["_signin_error"] = why


def shown_name(raw: str) -> str:
    """A typed reviewer name as stored and shown (`calibration.text.display_name`), cut to the
    longest name kept."""
    return display_name(raw)[:MAX_NAME]


def _sign_in() -> None:
    typed = str(st.session_state.get(_SIGNIN_FIELD, ""))
    name = shown_name(typed)
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
        issue_token(name)
    else:
        st.session_state["_signin_error"] = True


def _sign_in_picked() -> None:
    """The roster pick's callback: sign in with the picked name, as if typed."""
    picked = st.session_state.get(_ROSTER_PICK)
    if isinstance(picked, str) and picked:
        st.session_state[_SIGNIN_FIELD] = picked
        _sign_in()


def sign_out() -> None:
    for key in list(st.session_state):
        del st.session_state[key]
    st.query_params.pop(NAME_PARAM, None)
    st.query_params.pop(TOKEN_PARAM, None)


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
    linked = _sign_in_from_link()
    if linked:
        return linked
    st.subheader("Sign in")
    st.caption(TYPED_NAME_NOTE)
    with store.session(db_path()) as db:
        listed = roster.active_names(db)
    if listed:
        st.selectbox(
            "Pick your name",
            listed,
            index=None,
            key=_ROSTER_PICK,
            format_func=visible,
            placeholder="the lead's list of reviewers",
            on_change=_sign_in_picked,
            width=360,
        )
    remembered = shown_name(str(st.query_params.get(NAME_PARAM, "")))
    if remembered and _SIGNIN_FIELD not in st.session_state:
        st.session_state[_SIGNIN_FIELD] = remembered  # after a reload: filled in, not signed in
    with st.form("signin", border=False, enter_to_submit=True):
        st.text_input(
            "Your name" if not listed else "Or type your name",
            key=_SIGNIN_FIELD,
            max_chars=MAX_NAME,
            placeholder="e.g. Anna",
            width=360,
        )
        # Enter also works from outside the field, so a reload costs one key press.
        st.form_submit_button(
            "Sign in", type="primary", on_click=_sign_in, shortcut="Enter" if remembered else None
        )
    if remembered:
        st.caption(
            "The name you used before the reload is filled in: press Enter to go on, or type another name."
        )
    problem = st.session_state.get("_signin_error")
    if problem:
        # Plain text: the message quotes the typed name (made visible by calibration.text).
        st.error(problem if isinstance(problem, str) else "Type your name to sign in.", icon=None)
    st.stop()
    raise AssertionError("unreachable")  # st.stop() raises
