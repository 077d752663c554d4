"""Untrusted text on a page.

Untrusted text (questions, chunks, answers, claims, rationales, notes, ids) is shown only
through `literal()` (`st.text`) or `draw()` (HTML built here, every untrusted piece passed
through `body()` / `ident()`: neutralised or made visible, then escaped). Markdown-capable
places (labels, help, captions, option names) only ever get constant text.


A key press on the review page redraws its card, and the browser's cost grows with the
number of elements sent (each is one message, applied and drawn on its own), so the card's
texts are drawn as a few `st.html` elements instead of one `st.text` each. Every untrusted
piece goes through `body` (or `ident` for ids and names) before it is put in; the markup
around it is constant, and each text is its own block, so a right-to-left paragraph cannot
pull its neighbours along. st.html renders no markdown or LaTeX and sanitises the result.
"""

from __future__ import annotations

import html

import streamlit as st

from calibration.text import neutralise_body, visible
from calibration.vocab import VERDICT_COLOURS


def literal(text: str | None, **kwargs: object) -> None:
    """Show untrusted text exactly as stored: no markdown, HTML, LaTeX or emoji codes; the
    characters that reorder or hide text shown as ``<U+XXXX>`` (`calibration.text.neutralise_body`)."""
    st.text(neutralise_body("" if text is None else text), **kwargs)  # type: ignore[arg-type]


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


def verdict_badge(verdict: str | None, *, prefix: str = "") -> None:
    """`badge` drawn on its own."""
    st.html(badge(verdict, prefix=prefix))
