"""The build also ships the app and the demo data (pyproject.toml holds everything else).

The files stay where the project's layout puts them; the build copies the ones that
`[tool.calibration] shipped` in pyproject.toml names into the sdist (same paths) and into the
wheel (under calibration/share/, where `calibration.shipped` finds them at run time).
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent


def shipped_files() -> list[Path]:
    """Every file the patterns name, relative to ROOT; a pattern matching nothing stops the build."""
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["calibration"]
    found: list[Path] = []
    for pattern in patterns["shipped"]:
        matches = sorted(p.relative_to(ROOT) for p in ROOT.glob(pattern) if p.is_file())
        if not matches:
            raise SystemExit(f"setup.py: no file matches the shipped pattern {pattern!r}")
        found.extend(matches)
    return found


def _copy(files: list[Path], target: Path) -> None:
    for rel in files:
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, target / rel)


class BuildWithShippedFiles(build_py):
    def run(self) -> None:
        super().run()
        if not self.editable_mode:  # an editable install runs from the checkout, which has them
            _copy(shipped_files(), Path(self.build_lib) / "calibration" / "share")


class SdistWithShippedFiles(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        _copy(shipped_files(), Path(base_dir))


setup(cmdclass={"build_py": BuildWithShippedFiles, "sdist": SdistWithShippedFiles})
