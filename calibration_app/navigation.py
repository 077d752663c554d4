"""The app's pages (`PAGES`), its own page links, and the switch of every run to app.py's
navigation (`_run_through_the_app`, at this module's first import in a page's run)."""

from __future__ import annotations

from contextlib import suppress
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError
from streamlit.navigation.page import StreamlitPage


def page_link(page: str, **kwargs: Any) -> None:
    """`st.page_link` to another page of the app's navigation. A page script run on its own (no
    `st.navigation`, as a test of one page does) has no other page to link to: it draws no link."""
    with suppress(StreamlitPageNotFoundError):
        st.page_link(page, **kwargs)


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
