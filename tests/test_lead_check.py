"""The one lead check (calibration.roles.require_lead) and its use in every lead action.

Streamlit runs a widget's callback before the page's script, so a check at the top of a lead
page does not guard the page's buttons; each of their callbacks must run the check itself.
The second half reads the pages to make sure none is left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from calibration import roles
from calibration.errors import CalibrationError, NotALeadError
from calibration.store import Database

PAGES = Path(__file__).resolve().parents[1] / "pages"
LEADS = roles.lead_keys(["Anna Lead"])


@pytest.mark.parametrize(
    ("leads", "signed_in", "identities", "lead"),
    [
        (frozenset(), [], ["solo"], True),  # single-user mode, first sign-in
        (frozenset(), ["solo"], ["solo"], True),
        (frozenset(), ["solo"], ["SOLO\u200b"], True),  # the same name, however typed
        (frozenset(), ["solo", "second"], ["solo"], False),  # a second name ended single-user mode
        (frozenset(), ["solo"], ["second"], False),
        (frozenset(), [], [], False),  # nobody signed in is never a lead
        (frozenset(), [], [""], False),
        (LEADS, [], ["anna lead"], True),
        (LEADS, ["anna lead"], ["bob"], False),
        (LEADS, [], ["bob"], False),  # configured leads: no single-user mode
    ],
)
def test_require_lead_decides_from_the_database_now(
    fresh_db: Database, leads: frozenset[str], signed_in: list[str], identities: list[str], lead: bool
) -> None:
    for name in signed_in:
        roles.note_sign_in(fresh_db, name)
    if lead:
        roles.require_lead(fresh_db, identities, leads)
        return
    with pytest.raises(NotALeadError) as caught:
        roles.require_lead(fresh_db, identities, leads)
    assert isinstance(caught.value, CalibrationError)
    assert str(caught.value).startswith("This page is for leads")


def test_a_lead_stops_being_one_when_a_second_name_signs_in(fresh_db: Database) -> None:
    roles.sign_in(fresh_db, "Solo")
    roles.require_lead(fresh_db, ["Solo"], frozenset())
    roles.sign_in(fresh_db, "Second")
    with pytest.raises(NotALeadError, match="single-user mode is over"):
        roles.require_lead(fresh_db, ["Solo"], frozenset())


# ---------------------------------------------------------------- every lead callback is checked


def _lead_pages() -> list[Path]:
    """The pages that call access.require_lead(): every widget callback on them is a lead action."""
    out = []
    for path in sorted(PAGES.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "require_lead"
            for n in ast.walk(tree)
        ):
            out.append(path)
    return out


def _is_lead_action(decorator: ast.expr) -> bool:
    return (
        isinstance(decorator, ast.Attribute)
        and decorator.attr == "lead_action"
        and isinstance(decorator.value, ast.Name)
        and decorator.value.id == "access"
    )


def _is_partial_rerun(decorator: ast.expr) -> bool:
    # @st.fragment and @st.dialog (called or not) rerun their function alone, without the page.
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(target, ast.Attribute) and target.attr in ("fragment", "dialog")


def unchecked_callbacks(source: str) -> list[str]:
    """The callbacks (on_click=, on_change=, on_submit=) of a page that skip access.lead_action, and
    its fragments and dialogs, which rerun without the page's own check, that skip it too."""
    tree = ast.parse(source)
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    bad = [
        f"line {fn.lineno}: {ast.unparse(d)} {fn.name}"
        for fn in functions.values()
        for d in fn.decorator_list
        if _is_partial_rerun(d) and not any(_is_lead_action(e) for e in fn.decorator_list)
    ]
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg not in ("on_click", "on_change", "on_submit"):
                continue
            value = kw.value
            if isinstance(value, ast.Constant) and value.value is None:
                continue
            fn = functions.get(value.id) if isinstance(value, ast.Name) else None
            if fn is None or not any(_is_lead_action(d) for d in fn.decorator_list):
                bad.append(f"line {kw.value.lineno}: {kw.arg}={ast.unparse(value)}")
    return bad


def test_the_lead_pages_are_found() -> None:
    assert {p.stem for p in _lead_pages()} >= {"cycles", "guidelines", "dashboard", "import", "judge_lab"}


@pytest.mark.parametrize("page", _lead_pages(), ids=lambda p: p.stem)
def test_every_callback_of_a_lead_page_checks_the_lead(page: Path) -> None:
    assert unchecked_callbacks(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("@access.lead_action\ndef f(): pass\nst.button('x', on_click=f)", []),
        ("def f(): pass\nst.button('x', on_click=f)", ["line 2: on_click=f"]),
        ("st.button('x', on_click=lambda: None)", ["line 1: on_click=lambda: None"]),
        ("st.selectbox('x', [], on_change=None)", []),
        ("@other\ndef f(): pass\nst.form_submit_button('x', on_click=f)", ["line 3: on_click=f"]),
        ("@st.fragment\ndef f(): pass", ["line 2: st.fragment f"]),
        ("@st.dialog('Title')\ndef f(): pass", ["line 2: st.dialog('Title') f"]),
        ("@st.fragment(run_every=5)\n@access.lead_action\ndef f(): pass", []),
    ],
)
def test_the_page_reader_finds_unchecked_callbacks(source: str, found: list[str]) -> None:
    assert unchecked_callbacks(source) == found
