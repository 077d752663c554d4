"""Streamlit glue shared by app.py and the pages: who is reviewing, the database, literal text.

Kept out of `calibration/`, which never imports streamlit.

Who is reviewing. With OIDC configured (an `[auth]` section in `.streamlit/secrets.toml`,
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

Leads (`require_lead`): the Cycles, Guidelines, Dashboard, Import and Judge lab pages are
for leads, listed in $CALIBRATION_LEADS or in the secrets, or (with OIDC) members of a lead
group of the ID token's groups claim (`lead_group_rule`). With none configured the app is in
single-user mode (the one name signed in is the lead) until a second name signs in; then lead
pages refuse everyone until a lead is configured (`calibration.roles`). The check runs at
every run of a lead page and, through `lead_action`, inside every callback of one.

Untrusted text (questions, chunks, answers, claims, rationales, notes, ids) is shown only
through `literal()` (`st.text`) or `draw()` (HTML built here, every untrusted piece passed
through `body()` / `ident()`: neutralised or made visible, then escaped). Markdown-capable
places (labels, help, captions, option names) only ever get constant text.
"""

from __future__ import annotations

import functools
import hashlib
import html
import os
import secrets
import shutil
import sys
import tempfile
import threading
import time
import unicodedata
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import Any, NoReturn, ParamSpec, overload

import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError
from streamlit.navigation.page import StreamlitPage

from calibration import identity, roles, roster, store
from calibration.dashboard import Decision
from calibration.errors import (
    CalibrationError,
    InputError,
    NotALeadError,
    Option,
    SignedOutError,
    SignInRefused,
    StorageError,
)
from calibration.text import display_name, inert_markdown, neutralise_body, visible
from calibration.tokens import TOKEN_TTL_S, check_token, sign_token, token_expiry
from calibration.vocab import VERDICT_COLOURS

ROOT = Path(__file__).resolve().parent
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
_REFUSED_KEY = "_calibration_lead_refused"  # a lead action refused in its callback, for the page
_PROVIDER_KEY = "_calibration_provider"  # session-state only: (Person, reviewer) last resolved
P = ParamSpec("P")


def db_path() -> Path | str:
    """The store this server uses: $CALIBRATION_DB (a path or a postgresql:// URL)."""
    return store.default_db_url()


# The st.secrets object last found with no secrets file (a one-element list, or empty).
_SECRETS_MISSING: list[object] = []


def _secrets_loaded() -> bool:
    """Whether st.secrets holds any secrets (an unreadable file holds none, as for Streamlit).

    Streamlit keeps a file it has read (and watches it), but looks for a missing one again at
    every call, which costs a page run about what a verdict's write does. So while st.secrets is
    the object found without a file, and no secrets path exists, the answer stays no without
    asking; a file created later is read at the next call."""
    current = st.secrets
    missing = bool(_SECRETS_MISSING) and _SECRETS_MISSING[0] is current
    if missing and not any(os.path.exists(p) for p in st.get_option("secrets.files")):
        return False
    try:
        found = bool(current.load_if_toml_exists())
    except Exception:
        found = False
    _SECRETS_MISSING[:] = [] if found else [current]
    return found


def auth_configured() -> bool:
    """True when secrets.toml has an [auth] section (OIDC through st.login)."""
    try:
        return _secrets_loaded() and "auth" in st.secrets
    except Exception:  # an unreadable secrets file means no auth, as Streamlit itself does
        return False


def signin_secret() -> bytes:
    """The key of the sign-in tokens: $CALIBRATION_SIGNIN_SECRET, else `signin_secret`
    under `[calibration]` in the secrets, else a random one generated once and kept in the
    database's settings (so every server process on the database shares it)."""
    value = os.environ.get(SECRET_ENV, "") or str(_calibration_secret("signin_secret") or "")
    if value:
        return value.encode()
    with store.session(db_path()) as db, store.write(db):
        stored = store.get_setting(db, SECRET_SETTING)
        if stored is None:
            stored = secrets.token_hex(32)
            store.set_setting(db, SECRET_SETTING, stored)
    return stored.encode()


def _issue_token(name: str) -> None:
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


def _provider_person() -> identity.Person | None:
    """The person the provider signed in (`calibration.identity.person_of` over st.user's ID
    token claims), or None when nobody is logged in."""
    if not st.user.is_logged_in:
        return None
    return identity.person_of(
        st.user.to_dict(), assume_verified=identity.is_true(_calibration_secret("assume_email_verified"))
    )


def _provider_reviewer(*, fresh: bool = False) -> str | None:
    """The reviewer the logged-in provider identity stands for (`calibration.identity.sign_in`:
    bound at its first sign-in); None when nobody is logged in. SignInRefused when the binding
    refuses it. Kept in session state; `fresh` reads the binding again (app.py's every run,
    through `restore_sign_in`, so a rename or a Log out elsewhere counts at the next run)."""
    person = _provider_person()
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


def _log_out() -> None:
    """Log the provider's sign-in out, recording it first (`calibration.identity.log_out`), so
    a copy of this session's identity cookie signs nobody in afterwards."""
    person = _provider_person()
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
        _log_out()
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
    _signed_out(refusal)
    return None


def _signed_out(why: str) -> None:
    """End the session a lead's roster change refused, with `why` on the typed-name sign-in (an
    OIDC sign-in outlives the session: the next run's `restore_sign_in` stops it and says why)."""
    _sign_out()
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
        _issue_token(name)
    else:
        st.session_state["_signin_error"] = True


def _sign_in_picked() -> None:
    """The roster pick's callback: sign in with the picked name, as if typed."""
    picked = st.session_state.get(_ROSTER_PICK)
    if isinstance(picked, str) and picked:
        st.session_state[_SIGNIN_FIELD] = picked
        _sign_in()


def _sign_out() -> None:
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


def calibration_secrets() -> dict[str, Any]:
    """The `[calibration]` section of the secrets, or nothing."""
    try:
        if _secrets_loaded() and "calibration" in st.secrets:
            return dict(st.secrets["calibration"])
    except Exception:  # an unreadable secrets file configures nothing, as for auth_configured
        pass
    return {}


def _calibration_secret(key: str) -> object:
    """`key` under `[calibration]` in the secrets, or None."""
    return calibration_secrets().get(key)


def _secret_list(key: str) -> list[str]:
    value = _calibration_secret(key)
    if isinstance(value, str):
        return value.split(",")
    return [str(x) for x in value] if isinstance(value, (list, tuple)) else []


def _secret_leads() -> list[str]:
    return _secret_list("leads")


def lead_group_rule() -> tuple[str, frozenset[str]] | None:
    """With OIDC: the ID-token claim that lists a person's groups or roles (`leads_claim`
    under `[calibration]`, e.g. "groups") and the values of it that make a lead
    (`lead_groups`, as comparison keys); None unless OIDC and both are set."""
    claim = str(_calibration_secret("leads_claim") or "").strip()
    groups = roles.lead_group_keys(_secret_list("lead_groups"))
    if not claim or not groups or not auth_configured():
        return None
    return claim, groups


def _in_lead_group() -> bool | None:
    """Whether the logged-in OIDC user's ID token puts them in a lead group; None when no
    lead group rule is configured (`lead_group_rule`)."""
    rule = lead_group_rule()
    if rule is None:
        return None
    if not st.user.is_logged_in:
        return False
    return roles.in_lead_groups(st.user.to_dict(), *rule)


def configured_leads() -> frozenset[str] | None:
    """The leads' names / emails as comparison keys (`calibration.text.normalise_name`); None if none set.

    From $CALIBRATION_LEADS (comma-separated) and `leads = [...]` under `[calibration]` in
    `.streamlit/secrets.toml` (both, if both are set). An empty value configures nothing.
    """
    leads = roles.lead_keys(os.environ.get(LEADS_ENV, "").split(",") + _secret_leads())
    return leads or None


def _lead_identities(reviewer: str) -> list[str]:
    """What the configured leads are compared with: the typed name; with OIDC only the verified
    e-mail, or the claim `lead_list_claim` under `[calibration]` names
    (`calibration.identity.lead_ids`), never the display name."""
    if not auth_configured():
        return [reviewer]
    person = _provider_person()
    if person is None:
        return []
    claim = str(_calibration_secret("lead_list_claim") or "email").strip()
    return identity.lead_ids(st.user.to_dict(), person, claim)


def role_mode() -> roles.Mode:
    """Leads configured, single-user (no lead, at most one name ever signed in), or a team without leads."""
    leads = configured_leads() or frozenset()
    if leads or lead_group_rule() is not None:
        return roles.Mode.LEADS_CONFIGURED
    with store.session(db_path()) as db:
        names = roles.signed_in(db)
    reviewer = current_reviewer()
    return roles.mode(leads, [*names, *([reviewer] if reviewer else [])])


def check_lead(reviewer: str | None) -> None:
    """NotALeadError (the refusal sentence) unless `reviewer` is a lead right now: the one
    lead check (`calibration.roles.require_lead`), for lead pages and lead actions alike.

    With OIDC the user's verified e-mail may match a configured lead (`_lead_identities`), or
    the ID token's groups claim a lead group (`lead_group_rule`). Without any lead
    configured the first and only name that signs in is the lead (single-user mode); once a
    second name has signed in nobody is, until a lead is configured.
    """
    if not reviewer:
        raise NotALeadError(roles.refusal(role_mode()))
    with store.session(db_path()) as db:
        roles.require_lead(
            db,
            _lead_identities(reviewer),
            configured_leads() or frozenset(),
            in_group=_in_lead_group(),
            name=reviewer,
        )


def is_lead(reviewer: str) -> bool:
    """Whether the signed-in `reviewer` is a lead (`check_lead`)."""
    try:
        check_lead(reviewer)
    except NotALeadError:
        return False
    return True


def lead_action(callback: Callable[P, None]) -> Callable[P, None]:
    """A lead page's widget callback that first checks, at the moment it runs, that the
    signed-in person is still a lead (`check_lead`); if not it does nothing and the page says
    why in one sentence.

    Streamlit runs a callback before the page's script, so the page's own `require_lead`
    comes too late for it: a Guidelines tab opened in single-user mode would still save after
    a second name signed in. Every on_click / on_change / form callback of a lead page is
    wrapped in this (tests/test_lead_check.py reads the pages to make sure). It is also a
    `write_callback`: a storage failure, the lead check's own read included, is the one
    sentence of the next run."""

    @functools.wraps(callback)
    def checked(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            check_lead(current_reviewer())
        except NotALeadError as exc:
            st.session_state[_REFUSED_KEY] = str(exc)
            return
        callback(*args, **kwargs)

    return write_callback(checked)


def open_work(reviewer: str) -> roles.OpenWork:
    """The signed-in `reviewer`'s blind spots (`calibration.roles.open_work`): answers of open
    cycles they may still label, whose judge verdicts a lead page must not show them."""
    with store.session(db_path()) as db:
        return roles.open_work_of(db, [reviewer])


def require_lead() -> str:
    """The signed-in reviewer if they are a lead; otherwise say so and stop the script.

    Signs in first (`require_reviewer`). Leads are configured by the environment variable
    CALIBRATION_LEADS (comma-separated names or emails) or by `leads = ["anna@example.org",
    ...]` under `[calibration]` in `.streamlit/secrets.toml`; names match after Unicode
    normalisation (case, spacing, invisible characters), and with OIDC only the user's
    verified e-mail matches (`_lead_identities`). The check runs on the server at every run of
    a lead page, so a direct URL is refused alike. Without OIDC a name is taken on trust
    (`calibration.roles.TYPED_NAME_LIMITS`).
    """
    reviewer = require_reviewer()
    try:
        check_lead(reviewer)
    except NotALeadError as exc:
        st.info(str(exc), icon=":material/lock:")
        st.stop()
    return reviewer


def import_link(label: str = "Import judged answers") -> None:
    """A link to the Import page, for an empty state, drawn when the navigation lists that page
    (as app.py decides: for a lead, or before anyone signed in); a reviewer sees no dead link."""
    reviewer = current_reviewer()
    if reviewer is None or is_lead(reviewer):
        page_link("pages/import.py", label=label, icon=":material/upload_file:")


def refused_action() -> None:
    """Say, in one sentence, that a lead action was refused (`lead_action`). app.py calls this
    on every run: the refused person's next page is usually not the lead page they pressed a
    button on, which their navigation no longer holds."""
    refused = st.session_state.pop(_REFUSED_KEY, None)
    if refused:
        st.error(f"Not done: {refused}", icon=":material/lock:")


def sidebar_identity() -> None:
    """Who is signed in, and a way out, at the bottom of the sidebar."""
    reviewer = current_reviewer()
    if not reviewer:
        return
    if not auth_configured():
        # A page switch drops the query string, and a reload needs it; a token past half its
        # life is renewed, so a reviewer at work all day is not asked again.
        expiry = token_expiry(str(st.query_params.get(TOKEN_PARAM, "")))
        if (
            st.query_params.get(NAME_PARAM) != reviewer
            or expiry is None
            or expiry - time.time() < TOKEN_TTL_S / 2
        ):
            _issue_token(reviewer)
    with st.sidebar:
        st.caption("Signed in as")
        literal(reviewer)
        if auth_configured():
            if st.button("Log out", key="logout"):
                _log_out()
        else:
            st.button("Sign out", on_click=_sign_out, key="signout")


def guidelines(markdown: str) -> None:
    """A lead's guidelines as markdown that can load nothing (`calibration.text.inert_markdown`:
    text formatting only: no images, bracket links, raw HTML or LaTeX)."""
    st.markdown(inert_markdown(markdown))


# ---------------------------------------------------------------- storage failures
#
# A storage failure (`calibration.errors.StorageError`: a full disk, a read-only, deleted or
# replaced database file) is one sentence on the page, never Streamlit's generic error. app.py
# wraps every full run in `storage_failures`; a fragment's rerun does not go through app.py, so
# a page's fragments are made with `fragment`, which wraps its body the same way; a callback
# runs before either, so write callbacks are wrapped with `write_callback`, whose failure the
# next run shows.

_CALLBACK_FAILURE = "_storage_failure"  # the message of a write callback's StorageError


def storage_sentence(exc: StorageError | str) -> str:
    """The one sentence a page shows for a storage failure (its message has no path)."""
    return f"The database could not do its part: {exc}."


def show_storage_failure(exc: StorageError) -> None:
    """Log the failure with the database's path (the server log only), and show the sentence."""
    print(
        f"calibration: storage failure: {exc!r} (database {store.shown(db_path())})",
        file=sys.stderr,
        flush=True,
    )
    st.error(storage_sentence(exc), icon=":material/error:")


@contextmanager
def storage_failures() -> Iterator[None]:
    """Run a page (or a fragment) body: a StorageError it raises, or one a write callback met
    before it, is shown as the one sentence."""
    try:
        yield
    except StorageError as exc:
        st.session_state.pop(_CALLBACK_FAILURE, None)
        show_storage_failure(exc)
    else:
        failed = st.session_state.pop(_CALLBACK_FAILURE, None)
        if isinstance(failed, str):
            st.error(storage_sentence(failed), icon=":material/error:")


class Turns:
    """Turns taken one thread at a time, in the order asked for (first come, first served),
    re-entrant on the thread that holds the turn.

    Why first come, first served: a plain lock lets whichever waiting thread the system wakes
    go next, so under a queue of page runs some waited many times as long as others."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holder: int | None = None  # the thread holding the turn
        self._depth = 0
        self._queue: deque[tuple[int, threading.Event]] = deque()

    def take(self) -> None:
        me = threading.get_ident()
        with self._lock:
            if self._holder == me:
                self._depth += 1
                return
            if self._holder is None and not self._queue:
                self._holder, self._depth = me, 1
                return
            called = threading.Event()
            self._queue.append((me, called))
        try:
            called.wait()  # `give` makes this thread the holder before it sets the event
        except BaseException:
            with self._lock:
                if (me, called) in self._queue:
                    self._queue.remove((me, called))
                    raise
            self.give()  # the turn came with the interruption: pass it on
            raise

    def give(self) -> None:
        with self._lock:
            if self._holder != threading.get_ident():
                raise RuntimeError("a turn given back by a thread that does not hold it")
            self._depth -= 1
            if self._depth:
                return
            self._holder = None
            if self._queue:
                nxt, called = self._queue.popleft()
                self._holder, self._depth = nxt, 1
                called.set()

    def waiting(self) -> int:
        """How many threads wait for their turn."""
        with self._lock:
            return len(self._queue)

    @contextmanager
    def held(self) -> Iterator[None]:
        self.take()
        try:
            yield
        finally:
            self.give()


# The review page's runs take turns: one at a time in this server process (`turn`).
_TURNS = Turns()


def turn() -> AbstractContextManager[None]:
    """Wait for this process's review-page turn, then hold it (re-entrant: a fragment inside a
    fragment, a callback's write and the run after it, on the run's one thread).

    Why: Python runs one thread at a time, so twenty page runs at once finish no sooner than
    twenty in a row, but a thread that wants the interpreter while they all run waits behind
    all of them for each of its turns. The review card's verdict route (card_route.py), which
    does not take this turn, wants the interpreter a dozen times per verdict, so a wave of
    commits made a verdict wait seconds; with the runs in turns it waits for one run's slice
    (bench_load.py: p95 at 240 reviewers 204 ms, against 805-1,208 ms with runs at once). The
    runs that wait hold no interpreter time meanwhile. Only the review page takes turns: its
    runs are short (milliseconds); no page that may run for long (an import, a judge run)
    does."""
    return _TURNS.held()


def write_callback(callback: Callable[P, None]) -> Callable[P, None]:
    """`callback` (a widget's on_click / on_change, or the card's report, on the review page)
    in the page's `turn`, with a StorageError kept for the next run to show (`storage_failures`)
    instead of reaching Streamlit as an uncaught exception. A write refused because a lead
    deactivated or renamed the signed-in name (SignedOutError) ends the session: the whole app
    runs again and shows its sentence on the sign-in (with OIDC, `restore_sign_in` says it)."""

    @functools.wraps(callback)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            with turn():
                callback(*args, **kwargs)
        except SignedOutError as exc:
            _signed_out(str(exc))
            st.rerun()  # the app, not only a fragment: the sign-in replaces the page
        except StorageError as exc:
            print(
                f"calibration: storage failure in a callback: {exc!r} (database {store.shown(db_path())})",
                file=sys.stderr,
                flush=True,
            )
            st.session_state[_CALLBACK_FAILURE] = str(exc)

    return run


@overload
def fragment(body: Callable[P, None], *, key: str | None = None) -> Callable[P, None]: ...


@overload
def fragment(
    body: None = None, *, key: str | None = None
) -> Callable[[Callable[P, None]], Callable[P, None]]: ...


def fragment(
    body: Callable[P, None] | None = None, *, key: str | None = None
) -> Callable[P, None] | Callable[[Callable[P, None]], Callable[P, None]]:
    """`st.fragment(body, key=key)` for the review page: its runs take the page's `turn` and
    show a storage failure as the one sentence; `key` names it for `st.rerun(key)` from a
    callback."""

    def make(body: Callable[P, None]) -> Callable[P, None]:
        @functools.wraps(body)
        def run(*args: P.args, **kwargs: P.kwargs) -> None:
            with turn(), storage_failures():
                body(*args, **kwargs)

        return st.fragment(run, key=key)

    return make if body is None else make(body)


# What the Import page calls each option a problem's hint names: its own controls, where the
# CLI says its flags (`errors.Problem.text`).
IMPORT_CONTROLS: Mapping[Option, str] = {
    Option.ENCODING: "the Encoding choice above",
    Option.JUDGE_MODEL: "the Judge model field",
    Option.JUDGE_PROMPT_VERSION: "the Judge prompt version field",
    Option.MAP: "a line in Extra verdict spellings (More options) such as",
    Option.COLUMNS: "the column dropdowns above",
    Option.REVIEWER: "a reviewer column",
    Option.UPDATE: "the command line's `import --update` (this page never replaces them)",
    Option.SOURCE: "the Format choice above",
    Option.SKIP_FAILED: "the box to leave them out (More options)",
}


def _line_list(lines: list[int]) -> str:
    if len(lines) <= 3:
        return ", ".join(map(str, lines))
    return f"{', '.join(map(str, lines[:3]))} and {len(lines) - 3} more"


def problem_rows(exc: InputError, words: Mapping[Option, str] = IMPORT_CONTROLS) -> list[dict[str, Any]]:
    """The table of an input's problems: one row per problem, however many records share it
    (one missing judge model is one row, with its lines and count), hints in `words`."""
    rows = [
        {
            "lines": _line_list(lines),
            "times": max(1, len(lines)),
            "field": p.field,
            "problem": p.message + (f"; {hint}" if (hint := p.hint_text(words)) else ""),
        }
        for lines, p in exc.grouped()
    ]
    if exc.more:
        rows.append({"lines": "", "times": exc.more, "field": "", "problem": "more problems, not listed"})
    return rows


def literal(text: str | None, **kwargs: object) -> None:
    """Show untrusted text exactly as stored: no markdown, HTML, LaTeX or emoji codes; the
    characters that reorder or hide text shown as ``<U+XXXX>`` (`calibration.text.neutralise_body`)."""
    st.text(neutralise_body("" if text is None else text), **kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------- uploads on disk
#
# The adapters read paths (and the table reader the extension), so an upload is written to a
# folder of its own under a name the app makes: the browser's name is untrusted text (it may
# be "..", hold a NUL or a slash, or be longer than a file name may be) and is only shown,
# through `literal`, cut to `MAX_SHOWN_NAME`. A folder goes when its upload is replaced,
# imported or dropped, when the session that made it is collected, and otherwise once no run
# has used it for `UPLOAD_MAX_AGE_S`: swept every `UPLOAD_SWEEP_EVERY_S` while the server runs
# (`_upload_sweeper`), and on every visit of the Import page (folders a killed server left). So a
# folder is gone at most two minutes after the last run of its tab, however late Streamlit ends
# the session; a tab still open writes its upload again, from the copy Streamlit keeps in
# memory, at its next run (`saved_upload`).

UPLOAD_PREFIX = "calibration-upload-"
UPLOAD_MAX_AGE_S = 90
UPLOAD_SWEEP_EVERY_S = 30
MAX_SHOWN_NAME = 80
_MAX_STEM_BYTES = 96  # well below any file system's 255-byte name limit, with the extension
_MAX_EXT = 8  # ".parquet": the longest extension an adapter reads


def upload_name(browser_name: str) -> str:
    """The file name an upload is saved under, made from the name the browser gave.

    The stem keeps letters, digits, "-", "_" and inner dots (every other character becomes
    "_"), cut to `_MAX_STEM_BYTES` bytes of UTF-8, "upload" when nothing is left; the extension
    (which picks the table reader) is kept lower-cased when it is up to `_MAX_EXT` ASCII letters
    and digits, else dropped. The stem stays what it was for an ordinary name, because the
    Ragas and RefChecker adapters make answer ids from it, as the CLI does from the file's name.
    """
    name = unicodedata.normalize("NFC", browser_name).replace("\\", "/").rsplit("/", 1)[-1]
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    ext = ext.lower() if ext.isascii() and ext.isalnum() and len(ext) <= _MAX_EXT else ""
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in stem).strip("._")
    while len(stem.encode()) > _MAX_STEM_BYTES:
        stem = stem[:-1]
    return (stem.rstrip("._") or "upload") + (f".{ext}" if ext else "")


def cut(text: str, limit: int) -> tuple[str, int]:
    """`text` cut to its first `limit` characters, and how many were left out."""
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def shown_upload_name(browser_name: str) -> str:
    """The browser's name for an upload as it may be shown (through `literal`): every invisible
    character made visible, cut to `MAX_SHOWN_NAME` characters."""
    shown, left_out = cut(visible(browser_name), MAX_SHOWN_NAME)
    return shown[:-1] + "…" if left_out else shown


def sweep_uploads(now: float, root: Path | None = None, max_age_s: float = UPLOAD_MAX_AGE_S) -> None:
    """Remove upload folders (`UPLOAD_PREFIX`) under `root` (the temp folder) that no run has used
    for more than `max_age_s` (`saved_upload` touches the folder it hands out): those of tabs
    closed, whose session Streamlit has not ended or Python not collected yet, and of a server
    that was killed."""
    for folder in (root or Path(tempfile.gettempdir())).glob(f"{UPLOAD_PREFIX}*"):
        try:
            if folder.is_dir() and now - folder.stat().st_mtime > max_age_s:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:  # removed by another session meanwhile
            continue


class SavedUpload:
    """An upload written to its own temp folder; the folder is removed with `discard`, or when
    the object is collected (the session holding it ended)."""

    def __init__(self, data: bytes, browser_name: str, digest: str) -> None:
        self.digest = digest  # sha256 of `data`
        self.shown_name = shown_upload_name(browser_name)
        folder = Path(tempfile.mkdtemp(prefix=UPLOAD_PREFIX))
        self._finalizer = weakref.finalize(self, shutil.rmtree, folder, True)
        self.path = folder / upload_name(browser_name)
        self.path.write_bytes(data)

    def discard(self) -> None:
        self._finalizer()


def saved_upload(key: str, data: bytes, browser_name: str) -> SavedUpload:
    """The upload `data` on disk, kept in session state under `key`: the same object while the
    same bytes are uploaded, a new one (the old folder removed) when they change."""
    if st.runtime.exists():  # a served app, not a test or a tool
        _upload_sweeper()
    saved = st.session_state.get(key)
    digest = hashlib.sha256(data).hexdigest()
    if isinstance(saved, SavedUpload) and saved.digest == digest and saved.path.exists():
        with suppress(OSError):  # used by this run: kept for another UPLOAD_MAX_AGE_S
            os.utime(saved.path.parent)
        if saved.path.exists():
            return saved
    drop_upload(key)
    saved = SavedUpload(data, browser_name, digest)
    st.session_state[key] = saved
    return saved


@st.cache_resource(show_spinner=False)
def _upload_sweeper() -> threading.Thread:
    """Once per server process, from its first upload on: `sweep_uploads` every
    `UPLOAD_SWEEP_EVERY_S`, visits or not."""

    def sweep_forever() -> None:
        while True:
            sweep_uploads(time.time())
            time.sleep(UPLOAD_SWEEP_EVERY_S)

    thread = threading.Thread(target=sweep_forever, name="upload-sweeper", daemon=True)
    thread.start()
    return thread


def drop_upload(key: str) -> None:
    """Remove the saved upload under `key` (session state and folder), if any."""
    saved = st.session_state.pop(key, None)
    if isinstance(saved, SavedUpload):
        saved.discard()


# ---------------------------------------------------------------- untrusted text as one element
#
# A key press on the review page redraws its card, and the browser's cost grows with the
# number of elements sent (each is one message, applied and drawn on its own), so the card's
# texts are drawn as a few `st.html` elements instead of one `st.text` each. Every untrusted
# piece goes through `body` (or `ident` for ids and names) before it is put in; the markup
# around it is constant, and each text is its own block, so a right-to-left paragraph cannot
# pull its neighbours along. st.html renders no markdown or LaTeX and sanitises the result.


def body(text: str | None) -> str:
    """Untrusted body text as HTML text: `neutralise_body`, then escaped."""
    return html.escape(neutralise_body(text or ""))


def ident(text: str | None) -> str:
    """An untrusted id or name as HTML text: every invisible character shown (`visible`), escaped."""
    return html.escape(visible(text or ""))


def div(cls: str, inner: str) -> str:
    """A block of already-escaped HTML (`body`, `ident`, `badge` or constants) with a class."""
    return f'<div class="{cls}">{inner}</div>'


def draw(*blocks: str) -> None:
    """Draw blocks built with `div` as one element."""
    st.html("".join(blocks))


_MARK = (
    "background: rgba(255, 196, 0, 0.35); color: inherit; border-radius: 3px; "
    "padding: 0 2px; box-shadow: 0 0 0 1px rgba(255, 170, 0, 0.6);"
)


def highlighted_html(before: str, claim: str, after: str) -> str:
    """The answer with the current claim marked (untrusted pieces, escaped here)."""
    mark = f'<mark style="{_MARK}">{body(claim)}</mark>' if claim else ""
    return div("cal-answer", body(before) + mark + body(after))


def badge(verdict: str | None, *, prefix: str = "") -> str:
    """A verdict in its colour (`vocab.VERDICT_COLOURS`) as HTML; gray "no verdict" for anything
    else. `prefix` is constant text (e.g. "You", "Judge")."""
    colour = VERDICT_COLOURS.get(verdict or "")
    text = verdict if colour else "no verdict"
    return gray_badge(f"{prefix} {text}".strip(), colour or "#6b7280")


def gray_badge(text: str, colour: str = "#6b7280") -> str:
    """A badge with constant text."""
    return (
        f'<span class="cal-verdict" style="display:inline-block; white-space:nowrap; '
        f"padding:1px 8px; border-radius:6px; font-size:0.85rem; font-weight:600; "
        f"color:{colour}; border:1px solid {colour}; "
        f'background:{colour}14">{html.escape(text)}</span>'
    )


def page_link(page: str, **kwargs: Any) -> None:
    """`st.page_link` to another page of the app's navigation. A page script run on its own (no
    `st.navigation`, as a test of one page does) has no other page to link to: it draws no link."""
    with suppress(StreamlitPageNotFoundError):
        st.page_link(page, **kwargs)


AGREEMENT_HELP = (
    "the share of human verdicts the judge agrees with: each reviewer's blind verdict "
    "where several labeled a claim, else the claim's final label"
)


COUNTS_HELP = (
    "claims with a judge verdict and a final human label; disagreeing: the two differ; "
    "unresolved: reviewers disagree or marked it unclear and no lead has decided. Claims of "
    "the sealed holdout count in the figures but are listed nowhere until it is unsealed."
)


def decision_header(dec: Decision, *, run: str) -> None:
    """The decision header (`calibration.dashboard.decision`), drawn alike on the Dashboard and on a
    closed cycle: the verdict word in its one colour and the judge run it is about, the one
    agreement figure with its interval, then the direction, the ceiling and the plain sentence.
    Every piece but the run's name is numbers and constant words; the sentences and the name go
    through `literal`, as every built sentence does."""
    with st.container(border=True, key="decision"):
        word_col, fig_col, text_col = st.columns([3, 2, 5])
        word_col.markdown(f"### :{dec.colour}[{dec.word}]")
        word_col.caption("verdict on the judge run")
        with word_col:
            literal(run)
        fig_col.metric("Agreement", dec.figure, help=AGREEMENT_HELP)
        fig_col.caption(f"95% interval {dec.interval}")
        with text_col:
            literal(dec.sentence)
            st.caption(f"{dec.direction} {dec.ceiling}")
            if dec.counts is not None:
                # The same counts on every page that shows this report (`dashboard.claim_counts`).
                st.caption(dec.counts.sentence(), help=COUNTS_HELP)


def verdict_badge(verdict: str | None, *, prefix: str = "") -> None:
    """`badge` drawn on its own."""
    st.html(badge(verdict, prefix=prefix))


# ---------------------------------------------------------------- claim tables

# A claim list's columns, sized so that the table with a selection column fits the main block
# at 1280×720 with the sidebar open (about 820 px): a long claim is cut at its column's edge,
# never the table at the page's; a row's full text is read on select or in an export. Space
# left over is shared among the columns.
CLAIM_COLUMN_ORDER = ("answer", "claim id", "claim", "human", "judge")
CLAIM_COLUMNS: dict[str, Any] = {
    name: st.column_config.TextColumn(width=width)
    for name, width in {"answer": 110, "claim id": 110, "claim": 230, "human": 190, "judge": 110}.items()
}


# (file, title, icon, for leads only); the first is the default page.
PAGES: list[tuple[str, str, str, bool]] = [
    ("pages/home.py", "Home", ":material/home:", False),
    ("pages/review.py", "Review", ":material/rate_review:", False),
    ("pages/cycles.py", "Cycles", ":material/autorenew:", True),
    ("pages/guidelines.py", "Guidelines", ":material/menu_book:", True),
    ("pages/dashboard.py", "Dashboard", ":material/monitoring:", True),
    ("pages/import.py", "Import", ":material/upload_file:", True),
    ("pages/judge_lab.py", "Judge lab", ":material/science:", True),
]


def app_pages() -> list[StreamlitPage]:
    """The app's pages (`PAGES`) as `st.Page`s, every one: a lead page's URL reaches the page,
    whose own check (`require_lead`) refuses a reviewer in one sentence."""
    return [
        st.Page(path, title=title, icon=icon, default=(i == 0))
        for i, (path, title, icon, _) in enumerate(PAGES)
    ]


def navigation_links(pages: list[StreamlitPage], *, lead_pages: bool) -> None:
    """The app's own page menu at the top of the sidebar, the lead pages only when `lead_pages`.
    Streamlit's automatic one is off (`client.showSidebarNavigation = false`): on a fresh server
    it would first list the file names in pages/ (see `_run_through_the_app`)."""
    with st.sidebar.container(key="nav"):
        for p, (_, _, _, lead_only) in zip(pages, PAGES, strict=True):
            if lead_pages or not lead_only:
                st.page_link(p)


@st.cache_resource(show_spinner=False)
def _routing() -> dict[str, bool]:
    """Once per server process (it outlives a re-import of this module): whether a run has
    already switched Streamlit to app.py's navigation."""
    return {"done": False}


def _run_through_the_app() -> None:
    """Make app.py drive every run, even a deep link on a fresh server.

    Until a session calls `st.navigation`, Streamlit treats an entry script beside a `pages/`
    folder as a legacy multipage app: the first visit to /review after a start ran
    pages/review.py alone (no page config, no sign-in, no links). As documented, the first
    `st.navigation` call in any session makes the app ignore the pages/ folder for all
    sessions. Every page imports this module, so its first import in a server process makes
    that call (over every page, so the URL's page is found and kept) and reruns: app.py then
    runs and resolves the same page, with the same query string. The legacy run draws no menu
    of file names meanwhile: `client.showSidebarNavigation = false` hides it.
    """
    if not st.runtime.exists():  # imported by a test or a tool, not by a served app
        return
    routing = _routing()
    if routing["done"]:
        return
    routing["done"] = True
    # No icons: this run has no page config, so a page's :material/...: icon would become the
    # favicon, fetched from Google's font server.
    plain = [st.Page(path, title=title, default=(i == 0)) for i, (path, title, _, _) in enumerate(PAGES)]
    st.navigation(plain, position="hidden")
    st.rerun()


_run_through_the_app()
