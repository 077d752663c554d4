"""Check an LLM judge's claim verdicts against human reviewers.

The domain package: the data layer (`store`), import, sampling and cycles, agreement
statistics, export and the judge lab.
`calibration.connect(path)` opens the Python API (`calibration.api`); the data layer's own
connection is `calibration.store.connect`. It never imports streamlit; the app (app.py, pages/)
and the CLI (`calibration.cli`) are thin shells over it.

Importing the package is cheap: the names below load their modules on first use, so
`import calibration.agreement` (pure statistics) pulls in neither SQLAlchemy nor pydantic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

_LAZY = {
    "CalibrationError": "errors",
    "ConflictError": "errors",
    "InputError": "errors",
    "JudgeError": "errors",
    "NotFoundError": "errors",
    "StorageError": "errors",
    "ImportReport": "importing",
    "LabelsReport": "importing",
    "import_answers": "importing",
    "import_labels": "importing",
    "load_demo": "importing",
    "LABELS": "vocab",
    "Verdict": "vocab",
    "parse_verdict": "models",
    "Calibration": "api",
    "connect": "api",
    "find_judge_run": "store",
    "record_label": "store",
    "session": "store",
}

__all__ = [
    "LABELS",
    "Calibration",
    "CalibrationError",
    "ConflictError",
    "ImportReport",
    "InputError",
    "JudgeError",
    "LabelsReport",
    "NotFoundError",
    "StorageError",
    "Verdict",
    "__version__",
    "connect",
    "find_judge_run",
    "import_answers",
    "import_labels",
    "load_demo",
    "parse_verdict",
    "record_label",
    "session",
]

if TYPE_CHECKING:
    from .api import Calibration, connect
    from .errors import (
        CalibrationError,
        ConflictError,
        InputError,
        JudgeError,
        NotFoundError,
        StorageError,
    )
    from .importing import ImportReport, LabelsReport, import_answers, import_labels, load_demo
    from .models import parse_verdict
    from .store import find_judge_run, record_label, session
    from .vocab import LABELS, Verdict


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'calibration' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
