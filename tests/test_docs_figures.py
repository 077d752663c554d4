"""The manual's figures are generated: every bench writes its output under docs/figures/, the pages
include those files through cog, and `cog --check` (in `make lint`) fails on a page whose copy is
older than its file. The README is the front door: small, and whole on the package index."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "figures"
INCLUDED = re.compile(r'figure\("([^"]+)"\)')


def _included() -> set[str]:
    pages = [*ROOT.glob("docs/*.md"), ROOT / "README.md"]
    return {name for page in pages for name in INCLUDED.findall(page.read_text(encoding="utf-8"))}


def test_every_bench_writes_its_figures() -> None:
    scripts = sorted(p for p in (ROOT / "bench").glob("*.py") if p.name != "figures.py")
    assert scripts
    for script in scripts:
        assert "with recorded(__file__):" in script.read_text(encoding="utf-8"), script.name


def test_every_figure_file_is_on_a_page_and_every_included_one_exists() -> None:
    files = {p.stem for p in FIGURES.glob("*.md")}
    assert _included() == files
    for name in files:
        first = (FIGURES / f"{name}.md").read_text(encoding="utf-8").splitlines()[0]
        assert re.match(r"Measured \d{4}-\d\d-\d\d \d\d:\d\d UTC on .+ cores", first), (name, first)


def _cog(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "cogapp", *args, "docs/page.md"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cog_check_fails_when_a_figure_changes_without_its_page(tmp_path: Path) -> None:
    (tmp_path / "docs" / "figures").mkdir(parents=True)
    figure = tmp_path / "docs" / "figures" / "bench_x.md"
    figure.write_text("Measured 2026-01-01 00:00 UTC on a machine, 2 cores.\n\n```text\n1.0 s\n```\n")
    (tmp_path / "docs" / "page.md").write_text(
        "# A page\n\n<!-- [[[cog\nimport cog\nfrom tools.manual import figure\n"
        'cog.out(figure("bench_x"))\n]]] -->\n<!-- [[[end]]] -->\n'
    )
    assert _cog(tmp_path, "-r").returncode == 0
    assert "1.0 s" in (tmp_path / "docs" / "page.md").read_text()
    assert _cog(tmp_path, "--check").returncode == 0
    figure.write_text(figure.read_text().replace("1.0 s", "1.2 s"))  # the bench ran again
    stale = _cog(tmp_path, "--check")
    assert stale.returncode != 0
    assert "docs/page.md" in stale.stdout + stale.stderr


def test_the_readme_is_the_front_door() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= 10 * 1024
    # The package index shows the README without the repository: every image and link is absolute.
    targets = re.findall(r"\]\(([^)\s]+)", readme)
    assert targets
    assert [t for t in targets if not t.startswith(("https://", "#"))] == []
    assert "python -m calibration" not in readme


def _unclosed_fence(text: str) -> int | None:
    """The line of a code fence that nothing closes (the rest of the page would render as code)."""
    opened = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            opened = None if opened else number
    return opened


def test_every_code_fence_of_the_manual_is_closed() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert [(p.name, line) for p in pages if (line := _unclosed_fence(p.read_text(encoding="utf-8")))] == []
    assert _unclosed_fence("text\n```text\n$ calibration stats\n```\n\n    claims: …\n```\n\nprose\n") == 7
