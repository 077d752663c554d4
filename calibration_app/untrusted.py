"""Untrusted text on a page.

Untrusted text (questions, chunks, answers, claims, rationales, notes, ids) is shown only
through `literal()` (`st.text`) or `draw()` (HTML built here, every untrusted piece passed
through `body()`: neutralised, then escaped). Markdown-capable
places (labels, help, captions, option names) only ever get constant text.

`draw` puts several blocks into one `st.html` element (each element sent is one message to
the browser). Every untrusted piece goes through `body` before it is put in; the markup
around it is constant. st.html renders no markdown or LaTeX and sanitises the result.
"""

from __future__ import annotations

import html

import streamlit as st

from calibration.text import neutralise_body
from calibration.vocab import VERDICT_COLOURS


def literal(text: str | None, **kwargs: object) -> None:
    """Show untrusted text exactly as stored: no markdown, HTML, LaTeX or emoji codes; the
    characters that reorder or hide text shown as ``<U+XXXX>`` (`calibration.text.neutralise_body`)."""
    st.text(neutralise_body("" if text is None else text), **kwargs)  # type: ignore[arg-type]


def body(text: str | None) -> str:
    """Untrusted body text as HTML text: `neutralise_body`, then escaped."""
    return html.escape(neutralise_body(text or ""))


def draw(*blocks: str) -> None:
    """Draw blocks of already-escaped HTML (`body`, `badge` or constants) as one element."""
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
