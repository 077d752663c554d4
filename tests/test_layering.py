"""The package's shape, checked from its source: where SQL may run, who may import whom.

These read the code, not its behaviour: a query written outside the data layer, a domain
module reaching for the CLI, or an import cycle fails here before it is reviewed.
"""

from __future__ import annotations

import ast
import functools
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from calibration import store, vocab

PACKAGE = Path(__file__).resolve().parents[1] / "calibration"
SQL_CALLS = {"execute", "executemany", "executescript", "query"}


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


@functools.cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of a module's syntax tree, the module first; parsed once per test process (the
    checks below each read every module, and parsing and walking is most of their time)."""
    return tuple(ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Lines inside `if TYPE_CHECKING:` blocks: imports for the type checker, never run."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        test = getattr(node, "test", None)
        if isinstance(node, ast.If) and getattr(test, "id", getattr(test, "attr", "")) == "TYPE_CHECKING":
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Modules of the package that `name` imports at run time, at top level or inside functions."""
    skip = _type_checking_lines(nodes(path)[0])
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in nodes(path):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            # `from x import y` imports x, and x.y when y is a module.
            targets = [stem] + [f"{stem}.{a.name}" for a in node.names]
        else:
            continue
        found.update(t for t in targets if t in known and t != name)
    return found


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports_of(name, path, set(mods)) for name, path in mods.items()}


def test_only_the_data_layer_executes_sql() -> None:
    offenders = []
    for name, path in modules().items():
        if name == "calibration.store" or name.startswith("calibration.store."):
            continue
        for node in nodes(path):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr in SQL_CALLS or node.func.attr == "table":
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} .{node.func.attr}(")
    assert offenders == [], "SQL outside calibration/store:\n" + "\n".join(offenders)


# The store's modules whose SQL text is an engine's own, run on that engine alone: the backends
# (catalogue reads, pragmas, session settings) and the database type (the statements a backend
# names to open a transaction). Every other store module builds Core statements.
ENGINE_TEXT = {"calibration.store.sqlite", "calibration.store.postgres", "calibration.store.database"}


def text_sql_calls(source: str) -> list[str]:
    """`line: call` for every statement run as SQL text through a `Database` (`db.execute(...)`,
    `self.db.query(...)`, `scratch.execute(...)`): the run-time path of SQLite's spelling."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SQL_CALLS
        ):
            owner = node.func.value
            name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
            if name in ("db", "scratch", "src", "dst"):
                found.append(f"{node.lineno}: {name}.{node.func.attr}(")
    return found


def test_the_store_runs_no_sql_text_through_a_database() -> None:
    offenders = [
        f"{name}:{hit}"
        for name, path in modules().items()
        if name.startswith(f"{STORE}.") and name not in ENGINE_TEXT
        for hit in text_sql_calls(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "SQL text run through a Database in the store:\n" + "\n".join(offenders)


# What rewrote one engine's SQL text into another's at run time: regular expressions over it.
TEXT_REWRITERS = {"re", "regex"}


def absolute_imports(tree: Iterable[ast.AST]) -> Iterator[tuple[int, str]]:
    """(line, module) for every module imported by its full name among the nodes `tree`."""
    for node in tree:
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            yield node.lineno, node.module or ""


def rewriter_imports(source: str) -> list[str]:
    """`line: module` for every import of a regular-expression module in `source`."""
    return [
        f"{line}: {module}"
        for line, module in absolute_imports(ast.walk(ast.parse(source)))
        if module.partition(".")[0] in TEXT_REWRITERS
    ]


def test_the_store_rewrites_no_sql_text() -> None:
    # SQLAlchemy compiles each statement for its engine (`text()` binds `:name` per driver too):
    # nothing in the store edits SQL text, so no store module has a regular expression to do it.
    offenders = [
        f"{name}:{hit}"
        for name, path in modules().items()
        if name == STORE or name.startswith(f"{STORE}.")
        for hit in rewriter_imports(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "a regular expression in the store (SQL text rewriting):\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    ("source", "hits"),
    [("import re\n", 1), ("from re import sub\n", 1), ("import regex as rx\n", 1), ("import json\n", 0)],
)
def test_the_rewriter_finder_sees_a_planted_import(source: str, hits: int) -> None:
    assert len(rewriter_imports(source)) == hits


@pytest.mark.parametrize(
    ("source", "hits"),
    [
        ("db.execute('SELECT 1 FROM answers WHERE id = ?', [a])\n", 1),
        ("rows = self.db.query('SELECT * FROM claims')\n", 1),
        ("db.run(select(answers.c.id))\ndb.sa.execute(query)\n", 0),
    ],
)
def test_the_sql_text_finder_sees_a_planted_statement(source: str, hits: int) -> None:
    assert len(text_sql_calls(source)) == hits


# The engine drivers each have one home: the backend module that speaks to them; SQLAlchemy and
# Alembic, the store's query language and migrations, stay inside the store package.
BACKENDS = {
    "sqlite3": "calibration.store.sqlite",
    "psycopg": "calibration.store.postgres",
    "sqlalchemy": "calibration.store",
    "alembic": "calibration.store",
}
APP_PACKAGE = PACKAGE.parent / "calibration_app"
SHELL = [
    PACKAGE.parent / "app.py",
    *sorted(APP_PACKAGE.glob("*.py")),
    *sorted((PACKAGE.parent / "pages").glob("*.py")),
]


def _app_files() -> dict[str, Path]:
    """The package's modules and the Streamlit shell over it (app.py, calibration_app, pages/)."""
    return {**modules(), **{str(p.relative_to(PACKAGE.parent)): p for p in SHELL}}


def test_only_the_backends_import_a_database_driver() -> None:
    offenders = []
    for name, path in _app_files().items():
        for line, module in absolute_imports(nodes(path)):
            home = BACKENDS.get(module.partition(".")[0])
            if home is not None and name != home and not name.startswith(f"{home}."):
                offenders.append(f"{name}:{line} imports {module}")
    assert offenders == [], "a database driver outside its backend:\n" + "\n".join(offenders)


STORE = "calibration.store"


def _outside_the_store() -> dict[str, Path]:
    """The domain, the CLI, the API and the Streamlit shell: everything but the store itself."""
    return {n: p for n, p in _app_files().items() if n != STORE and not n.startswith(f"{STORE}.")}


def store_reaches(name: str, source: str) -> list[str]:
    """`line: what` for every import of a store submodule in `source` (module `name`), and every
    use of the package beyond its public surface (`calibration.store.__all__`; no private name
    of a namespace it exports)."""
    package = name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            stem = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            targets = [stem]
            if stem == STORE:
                names = [a.name for a in node.names]
                targets += [f"{stem}.{n}" for n in names if n in SUBMODULES or n not in store.__all__]
        elif isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "store":
            if node.attr not in store.__all__:
                found.append(f"{node.lineno}: store.{node.attr}")
            continue
        elif (
            isinstance(node, ast.Attribute)
            and getattr(getattr(node.value, "value", None), "id", None) == "store"
        ):
            if node.attr.startswith("_"):
                found.append(f"{node.lineno}: store.{getattr(node.value, 'attr', '')}.{node.attr}")
            continue
        else:
            continue
        found += [f"{node.lineno}: import {t}" for t in dict.fromkeys(targets) if t.startswith(f"{STORE}.")]
    return found


SUBMODULES = {p.stem for p in (PACKAGE / "store").glob("*.py")} - {"__init__"} | {"revisions"}


def test_only_the_store_imports_its_modules() -> None:
    # Outside the store, `calibration.store` is reached through the package alone: the names
    # and namespaces it exports, never a submodule, never a private name.
    offenders = [
        f"{name}:{hit}"
        for name, path in _outside_the_store().items()
        for hit in store_reaches(name, path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "a store submodule used outside the store:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    ("source", "hits"),
    [
        ("from .store.cycles import PlanningFacts\n", 1),
        ("from .store import cycles as db_cycles\n", 1),
        ("from calibration.store import guidelines\n", 1),
        ("import calibration.store.postgres\n", 1),
        ("from calibration.store import sqlite\n", 1),
        ("x = store.cycles._pool_rows(db, 1)\n", 1),
        ("x = store.not_exported(db)\n", 1),
        ("from . import store\nfrom .store import Database\nstore.cycles.cycle_id(db, 'w')\n", 0),
    ],
)
def test_the_store_reach_finder_sees_a_planted_import(source: str, hits: int) -> None:
    assert len(store_reaches("calibration.planning", source)) == hits


def test_no_raw_connection_outside_the_store() -> None:
    offenders = []
    for name, path in _app_files().items():
        if name == "calibration.store" or name.startswith("calibration.store."):
            continue
        for node in nodes(path):
            if isinstance(node, ast.Attribute) and node.attr == "conn":
                offenders.append(f"{name}:{node.lineno} .conn")
    assert offenders == [], "the driver's connection used outside the store:\n" + "\n".join(offenders)


def test_no_domain_module_imports_the_cli_or_argparse() -> None:
    graph = import_graph()
    shell = {n for n in graph if n == "calibration.cli" or n.startswith("calibration.cli.")}
    shell.add("calibration.__main__")
    bad = sorted(
        f"{n} -> {t}" for n, targets in graph.items() if n not in shell for t in targets if t in shell
    )
    assert bad == []
    argparse_users = sorted(
        n
        for n, p in modules().items()
        if n not in shell and re.search(r"^\s*(import argparse|from argparse)", p.read_text(), re.M)
    )
    assert argparse_users == []


def _imported_roots(path: Path) -> set[str]:
    """The top-level names of every module `path` imports (absolute imports only)."""
    found: set[str] = set()
    for node in nodes(path):
        if isinstance(node, ast.Import):
            found.update(a.name.partition(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add((node.module or "").partition(".")[0])
    return found


def test_the_domain_never_imports_the_app_or_streamlit() -> None:
    bad = sorted(
        f"{name} imports {root}"
        for name, path in modules().items()
        for root in _imported_roots(path) & {"calibration_app", "streamlit", "starlette"}
    )
    assert bad == []


def test_the_app_package_imports_no_page_and_no_root_module() -> None:
    # The app's modules are a package of their own: nothing from the root's app.py or pages/.
    root_modules = {p.stem for p in PACKAGE.parent.glob("*.py")} | {"pages", "ui", "card_route", "server"}
    bad = sorted(
        f"{path.name} imports {root}"
        for path in APP_PACKAGE.glob("*.py")
        for root in _imported_roots(path) & root_modules
    )
    assert bad == []


def test_no_domain_module_prints() -> None:
    shell = ("calibration.cli", "calibration.__main__")
    printing = []
    for name, path in modules().items():
        if name.startswith(shell):
            continue
        for node in nodes(path):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                printing.append(f"{name}:{node.lineno}")
    assert printing == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_between_modules() -> None:
    # A package's __init__ re-exporting its own submodules is not a cycle unless a
    # submodule imports the package back.
    assert _cycles(import_graph()) == []


def test_importing_the_statistics_stays_cheap() -> None:
    code = (
        "import sys, calibration.agreement, calibration.decisions, calibration.estimation; "
        "print(','.join(m for m in ('sqlalchemy', 'pandas', 'httpx', 'pydantic', 'streamlit') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PACKAGE.parent
    )
    assert out.stdout.strip() == ""


def _check_lists(sql: str) -> list[tuple[str, ...]]:
    return [tuple(re.findall(r"'([^']+)'", m)) for m in re.findall(r"IN\s*\(([^)]*)\)", sql)]


def test_check_constraints_match_the_python_vocabulary(tmp_path: Path) -> None:
    store.connect(tmp_path / "v.db").conn.close()
    conn = sqlite3.connect(tmp_path / "v.db")
    schema = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall())
    conn.close()
    verdicts = tuple(vocab.LABELS)
    for table, n_lists in (
        ("judge_verdicts", 1),
        ("adjudications", 1),
        ("label_events", 2),
        ("human_labels", 4),
    ):
        lists = _check_lists(schema[table])
        assert len(lists) == n_lists, table
        assert all(
            lst == verdicts for lst in lists if set(lst) <= set(verdicts) | {"x"} and lst[0] in verdicts
        ), table
    assert tuple(vocab.LABEL_KINDS) in _check_lists(schema["label_events"])
    assert tuple(vocab.LABEL_STATUSES) in _check_lists(schema["human_labels"])
    assert tuple(vocab.RECONCILE_KINDS) in _check_lists(schema["human_labels"])
    assert sum(lst == verdicts for lst in _check_lists(schema["human_labels"])) == 2


@pytest.mark.parametrize("text", ["PRAGMA x", "SELECT 1"])
def test_sql_finder_sees_a_planted_query(tmp_path: Path, text: str) -> None:
    tree = ast.parse(f"def f(db):\n    return db.execute({text!r})\n")
    assert any(isinstance(n, ast.Call) and getattr(n.func, "attr", "") in SQL_CALLS for n in ast.walk(tree))


# The CLI's own modules: the one place a message may spell a command-line flag.
CLI_SHELL = ("calibration.cli", "calibration.__main__")
# Strings that must spell a flag outside the CLI, each with why (none so far).
FLAG_WORDS_ALLOWED: dict[tuple[str, str], str] = {}
FLAG_WORD = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def string_constants(source: str) -> list[tuple[int, str]]:
    """The string constants of a module that are not docstrings (f-string parts included), by line."""
    tree = ast.parse(source)
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


def flag_words(name: str, source: str) -> list[str]:
    """`name:line: string` for every string of a domain module that spells a command-line flag."""
    return [
        f"{name}:{line}: {text!r}"
        for line, text in string_constants(source)
        if FLAG_WORD.search(text) and (name, text) not in FLAG_WORDS_ALLOWED
    ]


def test_no_domain_message_names_a_cli_flag() -> None:
    # A message names an option as an errors.Option; the CLI words it as its flag, a page as
    # its control (errors.phrase), so no page ever tells a lead to pass a flag it cannot set.
    found = [
        hit
        for name, path in modules().items()
        if not name.startswith(CLI_SHELL)
        for hit in flag_words(name, path.read_text(encoding="utf-8"))
    ]
    assert found == []


@pytest.mark.parametrize(
    ("source", "hits"),
    [
        ('raise ConflictError("give a new file with --db")\n', 1),
        ('x = f"size {n}; use --force to create it"\n', 1),
        ('def f():\n    """Like `judge run --json`."""\n    return "a - b -- c, x--y"\n', 0),
        ('HINT = ("give one with ", Option.PROMPT_FILE)\n', 0),
    ],
)
def test_flag_finder_sees_a_planted_flag(source: str, hits: int) -> None:
    assert len(flag_words("m", source)) == hits


# What writes a reviewer's label (`calibration.review` and the store), and the one function
# the app reaches them through: `calibration.card.handle`, called from the card's route.
LABEL_WRITERS = {"label", "reconcile", "commit", "record_label", "record_reveal"}
CARD_ROUTE = APP_PACKAGE / "card_route.py"


def label_writes(source: str) -> list[str]:
    """`line: call` for every call in `source` that writes a label or hands a request to
    `calibration.card.handle`, and every import of such a function by name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            name = owner.id if isinstance(owner, ast.Name) else ""
            if (
                node.func.attr in LABEL_WRITERS and name in ("review", "store")
            ) or node.func.attr == "handle":
                found.append(f"{node.lineno}: {name}.{node.func.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            ("calibration.review", "calibration.card", "calibration.store")
        ):
            found += [
                f"{node.lineno}: import {a.name}" for a in node.names if a.name in LABEL_WRITERS | {"handle"}
            ]
    return found


def test_one_route_writes_a_reviewers_label_and_no_page_does() -> None:
    writes = {
        str(path.relative_to(PACKAGE.parent)): label_writes(path.read_text(encoding="utf-8"))
        for path in SHELL
    }
    assert writes.pop(str(CARD_ROUTE.relative_to(PACKAGE.parent))) == [
        next(w for w in label_writes(CARD_ROUTE.read_text(encoding="utf-8")) if w.endswith("card.handle"))
    ]
    assert {name: hits for name, hits in writes.items() if hits} == {}


@pytest.mark.parametrize(
    ("source", "hits"),
    [
        (
            "def _on_k(pk):\n    review.reconcile(db, claim_pk=pk, choice='keep')\n"
            "st.button('K', on_click=_on_k)\n",
            1,
        ),
        ("from calibration.review import label\n", 1),
        ("out = card.handle(db, cycle_id=1, reviewer='a', request=r)\n", 1),
        ("view = card_view.answer_view(db, 1, 'a', c)\nreview.load_card(db, 'A1', 'a')\n", 0),
    ],
)
def test_the_label_write_finder_sees_a_planted_write(source: str, hits: int) -> None:
    assert len(label_writes(source)) == hits
