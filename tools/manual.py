"""The manual's generated parts, run by cog (`make cog` writes them, `make lint` checks them).

The CLI reference (docs/cli.md) from the parser itself and what it would miss; what commands
print (docs/getting-started.md); the benches' figures (docs/figures/, written by
bench/figures.py) and files of the checkout, as the pages quote them.

`markdown()` writes one section per command (`calibration cycle create`, ...): its help sentence
and its `--help`, at a fixed width so the page does not depend on the terminal that ran `cog`.
`undocumented()` lists every command or option that has no help text or is missing from its
section of a page: tests/test_docs_coverage.py runs it on docs/cli.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from calibration.cli import main

WIDTH = 100  # columns of the `--help` text on the page


@dataclass(frozen=True)
class Command:
    path: str  # "calibration cycle create"
    help: str | None  # the line its parent's command list shows
    parser: argparse.ArgumentParser


def commands(parser: argparse.ArgumentParser, path: str = "calibration") -> Iterator[Command]:
    """Every command that runs something (a leaf of the tree), depth first, in the parser's order."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return
    for sub in subs:
        helps = {a.dest: a.help for a in sub._choices_actions}
        for name, child in sub.choices.items():
            here = Command(f"{path} {name}", helps.get(name), child)
            if any(isinstance(a, argparse._SubParsersAction) for a in child._actions):
                yield here  # a group (`cycle`): its own help is checked too
                yield from commands(child, here.path)
            else:
                yield here


def options(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    """The options and arguments a person types, without -h/--help and sub-command lists."""
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        yield action


def _names(action: argparse.Action) -> list[str]:
    """How `--help` names it: its option strings, or a positional's metavar (or choices, or dest)."""
    if action.option_strings:
        return list(action.option_strings)
    return [argparse.HelpFormatter("calibration")._format_action_invocation(action)]


def _help(parser: argparse.ArgumentParser) -> str:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        return parser.format_help().rstrip()
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def markdown(parser: argparse.ArgumentParser) -> str:
    """The reference: the top-level options, then every command in the parser's order."""
    out = [f"## {parser.prog}\n\n```text\n{_help(parser)}\n```\n"]
    for command in commands(parser, parser.prog):
        out.append(f"## {command.path}\n\n{command.help}\n")
        out.append(f"```text\n{_help(command.parser)}\n```\n")
    return "\n".join(out)


def section(page: str, path: str) -> str:
    """The text of the page's section headed `## PATH` (up to the next `## `), or ''."""
    match = re.search(rf"^## {re.escape(path)}\n(.*?)(?=^## |\Z)", page, re.M | re.S)
    return match.group(1) if match else ""


def undocumented(parser: argparse.ArgumentParser, page: str) -> list[str]:
    """What a reader of `page` would not find: a command without its section or help text, an
    option or argument without help text or not named in its command's section."""
    missing = []
    for command in [Command(parser.prog, parser.description, parser), *commands(parser, parser.prog)]:
        text = section(page, command.path)
        if not command.help:
            missing.append(f"{command.path}: no help text")
        if not text:
            missing.append(f"{command.path}: no section in the reference")
            continue
        for action in options(command.parser):
            names = _names(action)
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{command.path} {names[0]}: no help text")
            if not any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text) for n in names):
                missing.append(f"{command.path} {names[0]}: not in its section")
    return missing


def printed(*command_lines: str) -> str:
    """What the commands print, run in order on a new database holding the demo (`calibration
    demo`, not shown), each after a `$ calibration ...` line: the getting-started page's output."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "calibration.db")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert main(["--db", db, "demo"]) == 0
        for line in command_lines:
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                status = main(["--db", db, *shlex.split(line)])
            assert status == 0, f"calibration {line}: exit {status}"
            out.append(f"$ calibration {line}\n{buffer.getvalue().rstrip()}")
    return "\n".join(out)


def fenced(text: str, language: str = "text") -> str:
    """`text` as a code block, for a page's generated part."""
    return f"```{language}\n{text}\n```\n"


def source(path: str) -> str:
    """A file of the checkout as a page shows it: without its linter comments."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not line.startswith("# ruff:")).strip()


def figure(name: str) -> str:
    """A bench's last figures (docs/figures/NAME.md: when and where measured, then the output)."""
    return Path("docs", "figures", f"{name}.md").read_text(encoding="utf-8")
