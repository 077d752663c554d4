"""The Streamlit app: `streamlit run app.py` (or `make run`).

One navigation over the screens in pages/ (`navigation.PAGES`), drawn as the app's own links at the top
of the sidebar (Streamlit's automatic menu is off in .streamlit/config.toml). Lead pages are
left out of the links of a signed-in person who is not a lead, but stay in the navigation: a
lead page's URL runs the page, whose check on the server says "This page is for leads" (never
Streamlit's "Page not found"). A reload signs the same person in
again from the link before the navigation is built (`signin.restore_sign_in`), so Home and the
page list know them too. The role mode (`calibration.roles.Mode`) is shown in the sidebar:
single-user mode (no lead configured, one name so far) is labelled as such, and a team
without a configured lead is told how to configure one; the first start prints that too. The
database is $CALIBRATION_DB or data/calibration.db; every page opens its own short-lived
connection per unit of work.
"""

from __future__ import annotations

import sys

import streamlit as st

from calibration import roles, store
from calibration_app import access, failures, navigation, signin

SINGLE_USER_NOTE = (
    "Single-user mode: no lead is configured, so the one person signed in is the "
    "lead and sees the judge's verdicts. As soon as a second name signs in, lead pages "
    "need a configured lead."
)


@st.cache_resource(show_spinner=False)
def _announce_roles() -> bool:
    """Once per server process: say in the server log how to configure a lead when none is."""
    if access.configured_leads() is None and access.lead_group_rule() is None:
        print(
            f"calibration: {roles.SETUP_HINT} Until then the app runs in single-user mode: "
            "the first name that signs in is the lead, and lead pages refuse everyone once a "
            "second name has signed in.",
            file=sys.stderr,
            flush=True,
        )
    return True


# An emoji favicon is drawn locally; a :material/...: favicon would be fetched from Google.
st.set_page_config(page_title="Judge calibration", page_icon="⚖️", layout="wide")
_announce_roles()


def _main() -> None:
    # A server process: a connection's unit of work over, it serves the next (on SQLite a new
    # one costs about 1 ms, and every page run opens several).
    store.keep_idle_connections()
    reviewer = signin.restore_sign_in()  # before the navigation: after a reload it lists the role's pages
    show_lead_pages = reviewer is None or access.is_lead(reviewer)
    pages = navigation.app_pages()
    current = st.navigation(pages, position="hidden")
    navigation.navigation_links(pages, lead_pages=show_lead_pages)
    access.refused_action()
    access.sidebar_identity()
    if reviewer is not None:
        mode = access.role_mode()
        if mode is roles.Mode.SINGLE_USER:
            st.sidebar.caption(SINGLE_USER_NOTE)
        elif mode is roles.Mode.TEAM_WITHOUT_LEADS:
            st.sidebar.warning(roles.SETUP_HINT, icon=":material/lock:")
    current.run()


# Disk full, read-only, a vanished or foreign database file, a lock held too long: one
# sentence without a path (the server log keeps the details), never a traceback.
with failures.storage_failures():
    _main()
