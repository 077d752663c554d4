"""Guidelines markdown that can load nothing (calibration.text.inert_markdown)."""

from __future__ import annotations

import pytest

from calibration.text import inert_markdown


@pytest.mark.parametrize(
    ("markdown", "shown"),
    [
        ("**Supported** means *every* part holds.", "**Supported** means *every* part holds."),
        ("# Rules\n\n- one\n- two\n\n> quoted", "# Rules\n\n- one\n- two\n\n> quoted"),
        ("![logo](https://example.org/a.png)", "!\\[logo](https://example.org/a.png)"),
        (
            "![logo][r]\n\n[r]: https://example.org/a.png",
            "!\\[logo]\\[r]\n\n\\[r]: https://example.org/a.png",
        ),
        ("[page](https://example.org)", "\\[page](https://example.org)"),
        ('<img src="https://example.org/a.png">', '\\<img src="https://example.org/a.png">'),
        ("<https://example.org/a.png>", "\\<https://example.org/a.png>"),
        ("<!-- hidden --> <iframe src=x>", "\\<!-- hidden --> \\<iframe src=x>"),
        ("\\![a](b)", "\\\\!\\[a](b)"),  # a typed backslash cannot undo the escape
        ("costs $5 or $6", "costs \\$5 or \\$6"),  # no LaTeX
        (":red[alarm]", ":red\\[alarm]"),  # Streamlit's coloured text takes brackets too
        ("", ""),
    ],
)
def test_inert_markdown_escapes_everything_that_loads(markdown: str, shown: str) -> None:
    assert inert_markdown(markdown) == shown


def test_every_image_or_html_start_is_escaped() -> None:
    # Independent of the table: in the output every "[" and "<" follows an odd run of backslashes.
    text = "x ![a](b) \\\\![c](d) <p> \\<q> [e]: f " * 3
    out = inert_markdown(text)
    for i, ch in enumerate(out):
        if ch in "[<$":
            run = len(out[:i]) - len(out[:i].rstrip("\\"))
            assert run % 2 == 1, (i, out)
