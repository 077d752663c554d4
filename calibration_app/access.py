"""Who may do what: leads (`require_lead`, `lead_action`), the role mode, the sidebar's identity.

Leads (`require_lead`): the Cycles, Guidelines, Dashboard, Import and Judge lab pages are
for leads, listed in $CALIBRATION_LEADS or in the secrets, or (with OIDC) members of a lead
group of the ID token's groups claim (`lead_group_rule`). With none configured the app is in
single-user mode (the one name signed in is the lead) until a second name signs in; then lead
pages refuse everyone until a lead is configured (`calibration.roles`). The check runs at
every run of a lead page and, through `lead_action`, inside every callback of one.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from typing import ParamSpec

import streamlit as st

from calibration import identity, roles, store
from calibration.errors import (
    NotALeadError,
)
from calibration.text import inert_markdown
from calibration.tokens import TOKEN_TTL_S, token_expiry
from calibration_app.failures import write_callback
from calibration_app.navigation import page_link
from calibration_app.settings import auth_configured, calibration_secret, secret_list
from calibration_app.signin import (
    LEADS_ENV,
    NAME_PARAM,
    TOKEN_PARAM,
    current_reviewer,
    db_path,
    issue_token,
    log_out,
    provider_person,
    require_reviewer,
    sign_out,
)
from calibration_app.untrusted import literal

P = ParamSpec("P")
_REFUSED_KEY = "_calibration_lead_refused"  # a lead action refused in its callback, for the page


def _secret_leads() -> list[str]:
    return secret_list("leads")


def lead_group_rule() -> tuple[str, frozenset[str]] | None:
    """With OIDC: the ID-token claim that lists a person's groups or roles (`leads_claim`
    under `[calibration]`, e.g. "groups") and the values of it that make a lead
    (`lead_groups`, as comparison keys); None unless OIDC and both are set."""
    claim = str(calibration_secret("leads_claim") or "").strip()
    groups = roles.lead_group_keys(secret_list("lead_groups"))
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
    person = provider_person()
    if person is None:
        return []
    claim = str(calibration_secret("lead_list_claim") or "email").strip()
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
            issue_token(reviewer)
    with st.sidebar:
        st.caption("Signed in as")
        literal(reviewer)
        if auth_configured():
            if st.button("Log out", key="logout"):
                log_out()
        else:
            st.button("Sign out", on_click=sign_out, key="signout")


def guidelines(markdown: str) -> None:
    """A lead's guidelines as markdown that can load nothing (`calibration.text.inert_markdown`:
    text formatting only: no images, bracket links, raw HTML or LaTeX)."""
    st.markdown(inert_markdown(markdown))
