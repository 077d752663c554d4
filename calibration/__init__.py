"""Check an LLM judge's claim verdicts against human reviewers.

The domain package: models, the SQLite store, import, sampling and cycles,
agreement statistics, export and the judge client. It never imports streamlit;
the app (app.py, pages/) and the CLI are thin shells over it.
"""

from .errors import CalibrationError, ConflictError, InputError, JudgeError, NotFoundError
from .importing import ImportReport, LabelsReport, import_answers, import_labels, load_demo
from .models import LABELS, Verdict, parse_verdict
from .store import connect, find_judge_run, record_label, session

__version__ = "0.1.0"

__all__ = [
    "LABELS",
    "CalibrationError",
    "ConflictError",
    "ImportReport",
    "InputError",
    "JudgeError",
    "LabelsReport",
    "NotFoundError",
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
