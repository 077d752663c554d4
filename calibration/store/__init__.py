"""The data-access package: the only code in `calibration/` that executes SQL.

One module per stored noun, over one connection module:

- `database`: the one store type (`Database`) every module outside the backends holds;
- `sqlite`, `postgres`: the two backends behind it (SQLite is the default);
- `connection`: opening the store from a path or URL, transactions (`write`), read snapshots;
- `migrations`, `schema`: the numbered migrations, applied in order on every open;
- `runs`: judge runs (lookup by name, get-or-create), their verdicts and counts;
- `labels`: label writes (append-only history + current state) and adjudications;
- `claims`: the one final-label reader (`claim_table`) every report and export uses;
- `settings`: stored settings, the flag's thresholds among them;
- `answers`: the import writer and the lossless restore's writes;
- `cycles`: cycles by name, sampling pools, assignments, holdout, close;
- `review`: the review queue, the card, the reveal;
- `dashboard`: the dashboard's reads beyond the report (trend, categories, details);
- `lab`: judge-lab runs and their calls;
- `exports`: the export's reads;
- `backup`: the whole-database backup's reads and the restore's writes.

Every function above takes the `Database` handed in by the caller and writes its SQL once;
the backend runs it on its engine.
"""

from . import answers, cycles, dashboard, exports, lab, review
from .claims import ClaimTable, ReviewerColumns, StatsColumns, claim_table, final_labels, stats_columns
from .connection import (
    BUSY_TIMEOUT_MS,
    DEFAULT_DB,
    PROJECT_ROOT,
    close_idle_connections,
    connect,
    default_db_path,
    default_db_url,
    exists,
    is_postgres,
    keep_idle_connections,
    now,
    read_snapshot,
    remove_new,
    session,
    shown,
    write,
)
from .cycles import cycle_id
from .database import Database
from .labels import (
    BasedOn,
    LabelState,
    adjudicate,
    claim_pk,
    label_history,
    label_state,
    record_label,
)
from .runs import JudgeRun, RunInfo, find_judge_run, info, judge_runs, run_id, run_verdicts
from .schema import migrations
from .settings import (
    SIGNIN_SECRET_SETTING,
    THRESHOLD_SETTINGS,
    get_setting,
    load_thresholds,
    save_thresholds,
    set_setting,
)

__all__ = [
    "BUSY_TIMEOUT_MS",
    "DEFAULT_DB",
    "PROJECT_ROOT",
    "SIGNIN_SECRET_SETTING",
    "THRESHOLD_SETTINGS",
    "BasedOn",
    "ClaimTable",
    "Database",
    "JudgeRun",
    "LabelState",
    "ReviewerColumns",
    "RunInfo",
    "StatsColumns",
    "adjudicate",
    "answers",
    "claim_pk",
    "claim_table",
    "close_idle_connections",
    "connect",
    "cycle_id",
    "cycles",
    "dashboard",
    "default_db_path",
    "default_db_url",
    "exists",
    "exports",
    "final_labels",
    "find_judge_run",
    "get_setting",
    "info",
    "is_postgres",
    "judge_runs",
    "keep_idle_connections",
    "lab",
    "label_history",
    "label_state",
    "load_thresholds",
    "migrations",
    "now",
    "read_snapshot",
    "record_label",
    "remove_new",
    "review",
    "run_id",
    "run_verdicts",
    "save_thresholds",
    "session",
    "set_setting",
    "shown",
    "stats_columns",
    "write",
]
