"""The data-access package: the only code in `calibration/` that executes SQL.

One module per stored noun, over one connection module:

- `database`: the one store type (`Database`) every module outside the backends holds;
- `sqlite`, `postgres`: the two backends behind it (SQLite is the default);
- `connection`: opening the store from a path or URL, transactions (`write`), read snapshots;
- `tables`, `core`: the tables as SQLAlchemy metadata, and what each engine spells its own way;
- `revisions`, `migrations`, `schema`, `schema_postgresql`: the schema (Alembic's revisions,
  after the numbered migrations that made it up to m018), applied on every open;
- `runs`: judge runs (lookup by name, get-or-create), their verdicts and counts, the closure of
  their labeling;
- `labels`: label writes (append-only history + current state) and adjudications;
- `claims`: the one final-label reader (`claim_table`) every report and export uses;
- `settings`: stored settings, the flag's thresholds among them;
- `answers`: the import writer and the lossless restore's writes;
- `imports`: the marker that hides an unfinished import, and recovery;
- `checks`: answer checks and reference answers;
- `cycles`: cycles by name, sampling pools, assignments, holdout, close;
- `review`: the review queue, the card, the reveal;
- `roster`: the reviewer roster, its events and sign-in identities;
- `guidelines`, `split`, `scope`: the lead's guidelines, the tuning/holdout split, a scope's facts;
- `dashboard`: the dashboard's reads beyond the report (trend, categories, details);
- `lab`: judge-lab runs and their calls;
- `exports`: the export's reads;
- `backup`: the whole-database backup's reads and the restore's writes.

Outside the store, this package is the only way in (`tests/test_layering.py`): the names in
`__all__`, among them the noun modules as namespaces (`store.cycles.cycle_id(db, name)`) and
the types their functions take and return; never a submodule imported by name, nor a driver.
Every function takes the `Database` handed in by the caller and writes its SQL once, as
SQLAlchemy Core; the backend runs it on its engine.
"""

from . import (
    answers,
    backup,
    checks,
    cycles,
    dashboard,
    exports,
    guidelines,
    imports,
    lab,
    labels,
    review,
    roster,
    scope,
    split,
)
from .checks import ReferenceEdit
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
from .cycles import SHARE_KEY, PlanningFacts, cycle_id
from .dashboard import OpenCycleWork
from .database import Database
from .exports import ClaimDetail
from .guidelines import PROJECT_SCOPE, Guidelines
from .lab import LAB_ORIGIN, ExampleMaterial, ExampleRecord, RunTotals
from .labels import (
    BasedOn,
    LabelState,
    adjudicate,
    claim_pk,
    label_history,
    label_state,
    record_label,
)
from .review import QueueRow
from .roster import RosterEntry, RosterEvent
from .runs import (
    JudgeRun,
    LabelingClosure,
    RunInfo,
    close_labeling,
    find_judge_run,
    info,
    judge_runs,
    labeling_closure,
    run_id,
    run_verdicts,
)
from .schema import migrations
from .settings import (
    SIGNIN_SECRET_SETTING,
    THRESHOLD_SETTINGS,
    get_setting,
    load_thresholds,
    save_thresholds,
    set_setting,
    setting_or_new,
)
from .split import SplitRecord

__all__ = [
    "BUSY_TIMEOUT_MS",
    "DEFAULT_DB",
    "LAB_ORIGIN",
    "PROJECT_ROOT",
    "PROJECT_SCOPE",
    "SHARE_KEY",
    "SIGNIN_SECRET_SETTING",
    "THRESHOLD_SETTINGS",
    "BasedOn",
    "ClaimDetail",
    "ClaimTable",
    "Database",
    "ExampleMaterial",
    "ExampleRecord",
    "Guidelines",
    "JudgeRun",
    "LabelState",
    "LabelingClosure",
    "OpenCycleWork",
    "PlanningFacts",
    "QueueRow",
    "ReferenceEdit",
    "ReviewerColumns",
    "RosterEntry",
    "RosterEvent",
    "RunInfo",
    "RunTotals",
    "SplitRecord",
    "StatsColumns",
    "adjudicate",
    "answers",
    "backup",
    "checks",
    "claim_pk",
    "claim_table",
    "close_idle_connections",
    "close_labeling",
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
    "guidelines",
    "imports",
    "info",
    "is_postgres",
    "judge_runs",
    "keep_idle_connections",
    "lab",
    "label_history",
    "label_state",
    "labeling_closure",
    "labels",
    "load_thresholds",
    "migrations",
    "now",
    "read_snapshot",
    "record_label",
    "remove_new",
    "review",
    "roster",
    "run_id",
    "run_verdicts",
    "save_thresholds",
    "scope",
    "session",
    "set_setting",
    "setting_or_new",
    "shown",
    "split",
    "stats_columns",
    "write",
]
