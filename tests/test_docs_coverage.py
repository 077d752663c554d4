"""The manual covers what a person can run: every CLI command and option is in the CLI reference
with its help text, and every page of the app has a section in the user guide of its role."""

from __future__ import annotations

import argparse
import ast
import os
import re
from pathlib import Path

from calibration.cli import build_parser
from tools.manual import markdown, undocumented

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _read(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_every_command_and_option_is_in_the_cli_reference_with_help_text() -> None:
    assert undocumented(build_parser(), _read("cli.md")) == []


def _tool(*, with_new_option: bool, with_new_command: bool) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tool", description="A tool.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    alpha = sub.add_parser("alpha", help="the first command")
    alpha.add_argument("--known", help="an option the page names")
    alpha.add_argument("path", help="a positional argument")
    if with_new_option:
        alpha.add_argument("--added")  # no help text, and not on the page
    if with_new_command:
        sub.add_parser("beta", help="a command the page has no section for")
    return parser


def test_an_option_or_command_added_without_documentation_is_reported() -> None:
    page = markdown(_tool(with_new_option=False, with_new_command=False))
    assert undocumented(_tool(with_new_option=False, with_new_command=False), page) == []
    assert undocumented(_tool(with_new_option=True, with_new_command=True), page) == [
        "tool alpha --added: no help text",
        "tool alpha --added: not in its section",
        "tool beta: no section in the reference",
    ]


def test_an_option_is_looked_for_in_its_own_commands_section_only() -> None:
    tool = _tool(with_new_option=True, with_new_command=False)
    page = "## tool\n\nA tool.\n\n## tool alpha\n\n--known path\n\n## tool other\n\n--added\n"
    assert "tool alpha --added: not in its section" in undocumented(tool, page)
    # "--known-more" is another option, not a mention of --known.
    page = page.replace("--known", "--known-more")
    assert "tool alpha --known: not in its section" in undocumented(tool, page)


def _app_pages() -> list[tuple[str, str, bool]]:
    """The app's navigation (`PAGES`: path, title, icon, lead only), read from the source of the
    module that defines it, wherever the app's glue lives."""
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in {"tests", "site", "build"})
        for name in sorted(f for f in files if f.endswith(".py")):
            pages = _pages_in(Path(folder, name).read_text(encoding="utf-8"))
            if pages is not None:
                return pages
    raise AssertionError("no module defines PAGES, the app's navigation")


def _pages_in(source: str) -> list[tuple[str, str, bool]] | None:
    if "PAGES:" not in source:
        return None
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "PAGES":
            assert node.value is not None
            return [(p, title, lead) for p, title, _, lead in ast.literal_eval(node.value)]
    return None


def _headings(name: str) -> set[str]:
    return set(re.findall(r"^#{2,3} (.+)$", _read(name), re.M))


def test_every_page_of_the_app_has_a_section_in_the_guide_of_its_role() -> None:
    pages = _app_pages()
    # Every page file is in the navigation, so this covers pages/ whole.
    assert sorted(p for p, _, _ in pages) == sorted(
        str(f.relative_to(ROOT)) for f in (ROOT / "pages").glob("*.py")
    )
    reviewers, leads = _headings("reviewers.md"), _headings("leads.md")
    for _, title, lead_only in pages:
        assert f"The {title} page" in (leads if lead_only else reviewers), (title, lead_only)
