"""Packaging facts the code relies on: the console command, the declared dependencies, the
version's one home, the pinned constraints, and a wheel that, installed into a fresh venv,
loads the demo and serves the app."""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from calibration import __version__, shipped
from calibration.cli import MODULE_PROG, invoked_name, main
from tests.browser.conftest import free_port
from tests.helpers import wait_healthy

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_console_command_points_at_the_cli() -> None:
    target = PYPROJECT["project"]["scripts"]["calibration"]
    module, _, attr = target.partition(":")
    assert getattr(importlib.import_module(module), attr) is importlib.import_module("calibration.cli").main


def test_every_third_party_import_is_declared() -> None:
    declared = {
        d.split(">")[0].split("<")[0].split("=")[0].strip().lower()
        for d in PYPROJECT["project"]["dependencies"]
    }
    # Import name -> distribution name, where they differ.
    for module, dist in {
        "streamlit": "streamlit",
        "altair": "altair",
        "pandas": "pandas",
        "numpy": "numpy",
        "scipy": "scipy",
        "krippendorff": "krippendorff",
        "httpx": "httpx",
        "pydantic": "pydantic",
        "starlette": "starlette",
    }.items():
        importlib.import_module(module)
        assert dist in declared, dist


# What each runtime distribution is imported as, where the names differ; None: the product
# never imports it, with the reason it is declared all the same.
IMPORTED_AS: dict[str, str | None] = {
    "sniffio": None,  # httpx probes for it on every request; installed, the probe is free
}


def _shipped_imports() -> set[str]:
    """The top-level modules the shipped code imports (inside functions too)."""
    files = [ROOT / "app.py", *(ROOT / "pages").rglob("*.py")]
    for package in ("calibration", "calibration_app"):
        files += (ROOT / package).rglob("*.py")
    found: set[str] = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


def test_every_runtime_dependency_has_a_job() -> None:
    imported = _shipped_imports()
    names = [Requirement(d).name.lower() for d in PYPROJECT["project"]["dependencies"]]
    modules = {name: IMPORTED_AS.get(name, name.replace("-", "_")) for name in names}
    assert [name for name, module in modules.items() if module is not None and module not in imported] == []


def test_requirements_install_the_package_itself() -> None:
    # One list of dependencies: pyproject.toml. requirements.txt only points at it.
    assert "." in (ROOT / "requirements.txt").read_text().split()


def test_the_dev_tools_are_a_dependency_group_not_a_published_extra() -> None:
    assert "dev" not in PYPROJECT["project"]["optional-dependencies"]
    groups = PYPROJECT["dependency-groups"]
    assert {"include-group": "docs"} in groups["dev"]
    assert any(Requirement(r).name == "mkdocs" for r in groups["docs"] if isinstance(r, str))
    makefile = (ROOT / "Makefile").read_text()
    assert "DEV_INSTALL := -e '.[team,postgres]' --group dev" in makefile
    assert "$(BIN)/pip install --quiet -c constraints.txt $(DEV_INSTALL)" in makefile


def test_the_package_metadata_names_its_home_licence_and_audience() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "MIT"  # an SPDX expression (PEP 639), so no licence classifier
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]
    assert "Programming Language :: Python :: 3.11" in project["classifiers"]
    urls = project["urls"]
    assert {"Homepage", "Documentation", "Source", "Issues"} <= urls.keys()
    assert all(url.startswith("https://") for url in urls.values())
    # hatchling writes it as PEP 639's License-Expression from 1.26 on (the wheel's: tested below).
    assert PYPROJECT["build-system"]["requires"] == ["hatchling>=1.26"]


def test_the_version_has_one_home() -> None:
    # pyproject.toml reads it from the package (the built wheel's metadata: tested below).
    assert "version" not in PYPROJECT["project"]
    assert "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["hatch"]["version"] == {"path": "calibration/__init__.py"}


def test_the_build_is_configuration_alone() -> None:
    # No build script and no copying step: the backend's own configuration names every file.
    assert not (ROOT / "setup.py").exists()
    assert PYPROJECT["build-system"]["build-backend"] == "hatchling.build"
    mapped = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert mapped["app.py"] == "calibration_app/app.py"
    assert mapped["pages"] == "calibration_app/pages"
    assert all((ROOT / source).exists() for source in mapped)


def test_the_root_holds_only_the_app_script_and_its_pages() -> None:
    # Everything else of the app lives in calibration_app (the layout Streamlit users expect).
    assert sorted(p.name for p in ROOT.glob("*.py")) == ["app.py"]
    assert not (ROOT / "components").exists()


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep, f"constraints.txt: {line!r} is not a pin"
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_constraints_pin_every_declared_dependency_within_its_range() -> None:
    pins = _pins()
    project = PYPROJECT["project"]
    groups = PYPROJECT["dependency-groups"]
    # What the Makefile installs: the package with its extras, and the dev group.
    wanted = [*project["dependencies"], *(r for rs in project["optional-dependencies"].values() for r in rs)]
    entries: list[str | dict[str, str]] = list(groups["dev"])
    while entries:
        entry = entries.pop()
        if isinstance(entry, dict):
            entries.extend(groups[entry["include-group"]])
        else:
            wanted.append(entry)
    for text in wanted:
        req = Requirement(text)
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        assert name in pins, f"constraints.txt does not pin {name}"
        assert req.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} is outside {req}"


def test_every_install_in_the_makefile_uses_the_constraints() -> None:
    installs = [
        line
        for line in (ROOT / "Makefile").read_text().splitlines()
        if "$(BIN)/pip install" in line and "--upgrade" not in line
    ]
    assert installs
    assert all("-c constraints.txt" in line for line in installs), installs


@pytest.mark.parametrize(
    ("argv0", "prog"),
    [
        ("/opt/venv/bin/calibration", "calibration"),
        ("calibration", "calibration"),
        ("/usr/local/bin/judge-calibration", "judge-calibration"),
        ("/src/calibration/__main__.py", MODULE_PROG),
        ("-m", MODULE_PROG),
    ],
)
def test_the_cli_names_itself_as_it_was_invoked(argv0: str, prog: str) -> None:
    assert invoked_name(argv0) == prog


def test_usage_and_hints_carry_the_invoked_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["/opt/venv/bin/jcal", "--db", str(tmp_path / "none.db"), "stats"])
    assert main() == 1
    assert "(jcal import FILE, or jcal demo)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--version"], prog="python -m calibration")
    assert capsys.readouterr().out == f"python -m calibration {__version__}\n"


def test_a_demo_without_its_data_is_refused_and_leaves_no_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # An installation whose shipped files are missing: neither the wheel's copy nor a checkout.
    monkeypatch.setattr(shipped, "INSTALLED", tmp_path / "no-share")
    monkeypatch.setattr(shipped, "CHECKOUT", tmp_path / "no-checkout")
    db = tmp_path / "demo.db"
    assert main(["--db", str(db), "demo"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: data/demo/demo_rag_v1.jsonl is not installed"), err
    assert not db.exists()


# ---------------------------------------------------------------- the wheel, installed


def _run(cmd: list[str | Path], cwd: Path, expect: int = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "CALIBRATION_DB"},
    )
    assert done.returncode == expect, f"{cmd}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def installed_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding only the wheel built here (sdist first, then the wheel from it, as
    `python -m build` does, both by hatchling), offline; its dependencies come from this venv's site-packages
    through a .pth file (so not from the checkout: that folder is not on its path)."""
    tmp = tmp_path_factory.mktemp("wheel")
    dist, venv = tmp / "dist", tmp / "venv"
    _run(
        [
            sys.executable,
            "-c",
            "import sys; from hatchling.build import build_sdist; build_sdist(sys.argv[1])",
            dist,
        ],
        cwd=ROOT,
    )
    (sdist,) = dist.glob("*.tar.gz")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            dist,
            sdist,
        ],
        cwd=tmp,
    )
    (wheel,) = dist.glob("*.whl")
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp)
    python = venv / "bin" / "python"
    site = Path(
        _run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=tmp).stdout.strip()
    )
    (site / "dev-venv-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            wheel,
        ],
        cwd=tmp,
    )
    return venv


@pytest.mark.slow
def test_the_installed_wheel_loads_the_demo_and_serves_the_app(installed_venv: Path, tmp_path: Path) -> None:
    bin_dir = installed_venv / "bin"
    where = _run(
        [
            bin_dir / "python",
            "-c",
            "import calibration.shipped as s, calibration_app as a; print(s.root(), a.APP_DIR)",
        ],
        cwd=tmp_path,
    ).stdout.split()
    assert all(Path(w).is_relative_to(installed_venv) for w in where), where
    assert _run([bin_dir / "calibration", "--version"], cwd=tmp_path).stdout == f"calibration {__version__}\n"
    metadata = _run(
        [bin_dir / "python", "-c", "import importlib.metadata as m; print(m.version('judge-calibration'))"],
        cwd=tmp_path,
    ).stdout
    assert metadata == f"{__version__}\n"
    fields = _run(
        [
            bin_dir / "python",
            "-c",
            "import importlib.metadata as m; d = m.metadata('judge-calibration'); "
            "print(d['License-Expression']); print(*d.get_all('Project-URL'), sep='\\n')",
        ],
        cwd=tmp_path,
    ).stdout.splitlines()
    assert fields[0] == "MIT"
    assert "Source, https://github.com/judge-calibration/judge-calibration" in fields

    done = _run([bin_dir / "calibration", "demo"], cwd=tmp_path)
    assert "cycle 'demo': open to every reviewer" in done.stdout
    assert (tmp_path / "calibration.db").is_file()  # an installed package's database: the working folder

    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [bin_dir / "calibration", "serve", "--port", str(port)],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_healthy(port, server, log.read_text)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert "Traceback" not in log.read_text()


@pytest.mark.slow
def test_the_installed_app_runs_its_home_page(installed_venv: Path, tmp_path: Path) -> None:
    # The health check proves the server starts; this runs the installed app.py (navigation,
    # the app package, the Home page) once, as a browser's first visit would.
    script = (
        "import sys; from streamlit.testing.v1 import AppTest; import calibration_app as a; "
        "at = AppTest.from_file(str(a.APP_SCRIPT), default_timeout=60).run(); "
        "assert not at.exception, at.exception; print([m.value for m in at.info])"
    )
    done = _run([installed_venv / "bin" / "python", "-c", script], cwd=tmp_path)
    assert "Nothing loaded yet" in done.stdout


@pytest.mark.slow
def test_an_installation_without_its_demo_data_refuses_the_demo_and_leaves_no_database(
    installed_venv: Path, tmp_path: Path
) -> None:
    share = Path(
        _run(
            [installed_venv / "bin" / "python", "-c", "import calibration.shipped as s; print(s.INSTALLED)"],
            cwd=tmp_path,
        ).stdout.strip()
    )
    data = share / "data"
    data.rename(share / "data-set-aside")
    try:
        done = _run([installed_venv / "bin" / "calibration", "demo"], cwd=tmp_path, expect=1)
    finally:
        (share / "data-set-aside").rename(data)
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: data/demo/demo_rag_v1.jsonl is not installed"), last
    assert not (tmp_path / "calibration.db").exists()
