"""Import: a lead uploads judged answers, checks the report, then confirms the import.

The app's only uploader, drawn for a signed-in lead only (its size limit is `server.maxUploadSize`
in .streamlit/config.toml; larger files go through the CLI). The upload is written to a temp folder
of its own under a name the app makes (`uploads.saved_upload`); the browser's name is only shown, as
literal text, cut.
"Check file" runs the very import the CLI runs (`calibration.adapters.run_import`) with
`dry_run=True`: everything is validated and counted against this database inside a
transaction that is then rolled back, so the report shown is exactly what "Import" will do,
and nothing is written until the lead confirms. File names, problems, spellings and notes
are user text: shown through st.dataframe, st.code or untrusted.literal, never as markdown.
"""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

from calibration import adapters, commands, store
from calibration.errors import CalibrationError, InputError, phrase
from calibration.models import parse_mapping
from calibration_app import access, problems, signin, untrusted, uploads

FILE = "_import_file"  # the upload on disk (uploads.SavedUpload)
CHECKED = "_import_checked"  # (inputs key, Outcome) of the last successful dry run
DONE = "_import_done"  # lines saying what the last confirmed import wrote
UPLOADS = "_import_uploads"  # bumped after an import, so the uploader starts empty again
MAX_UPLOAD_MB = int(st.get_option("server.maxUploadSize"))

FORMATS = [adapters.NATIVE, "deepeval", "ragas", "refchecker", "csv"]
LABELS = {
    adapters.NATIVE: "This tool's JSONL / JSON",
    "deepeval": "DeepEval test run",
    "ragas": "Ragas traces",
    "refchecker": "RefChecker output",
    "csv": "Claim-per-row table (CSV, TSV, Parquet)",
}
# Shown name -> codec; UTF-8 is the readers' default (with or without a BOM).
ENCODINGS = {
    "UTF-8": None,
    "Windows-1251 (Cyrillic)": "cp1251",
    "Windows-1252 (Western)": "cp1252",
    "Latin-1 (ISO-8859-1)": "latin-1",
    "UTF-16": "utf-16",
}
PREVIEW_ROWS = 5
OPTION_HELP = {
    "columns": "FIELD=COLUMN pairs, e.g. answer_id=qid,claim=statement,verdict=label",
    "delimiter": "field delimiter (default: tab for .tsv, else comma)",
    "metric": "the faithfulness metric's name in the file",
    "id_key": "take answer ids from this test-case metadata key",
    "id_prefix": "answer ids are PREFIX:<row> (default: the file name)",
    "id_field": "the items' id field (default: id)",
}

lead = access.require_lead()
st.title("Import")
st.caption(
    "Upload judged answers from this tool's JSONL or from DeepEval, Ragas, RefChecker or a "
    "claim-per-row table. Nothing is written until you confirm the checked file."
)

done = st.session_state.pop(DONE, None)
if done:
    st.success("Imported.", icon=":material/check_circle:")
    untrusted.literal("\n".join(done))

uploads.sweep_uploads(time.time())
upload = st.file_uploader(
    "File of judged answers", type=None, key=f"import_upload_{st.session_state.get(UPLOADS, 0)}"
)
st.caption(
    f"Files up to {MAX_UPLOAD_MB} MB. A larger file goes through the command line, which "
    f"streams it: `{commands.command('import FILE')}`."
)
if upload is None:
    uploads.drop_upload(FILE)  # the lead removed the file: its copy on disk goes too
    st.stop()

data = upload.getvalue()
saved = uploads.saved_upload(FILE, data, upload.name)
digest = saved.digest
path = saved.path
shown_name = saved.shown_name

guessed = adapters.guess(path)
c1, c2 = st.columns(2)
fmt = c1.selectbox(
    "Format",
    FORMATS,
    index=FORMATS.index(guessed) if guessed in FORMATS else None,
    format_func=LABELS.__getitem__,
    key=f"import_format_{digest[:12]}",
    placeholder="Pick the format",
)
if guessed is None:
    c1.caption("The format could not be told from the file: pick it.")
else:
    c1.caption("Detected from the file; change it if that is wrong.")
encoding = ENCODINGS[
    c1.selectbox(
        "Encoding",
        list(ENCODINGS),
        key="import_encoding",
        help="The text encoding of the file; UTF-8 unless the file "
        "says otherwise (a Windows export may be Windows-1251).",
    )
]
judge_model = c2.text_input("Judge model (for records that do not name one)", key="import_judge_model")
prompt_version = c2.text_input(
    "Judge prompt version (for records that do not name one)", key="import_prompt_version"
)
options: dict[str, Any] = {}
with st.expander("More options"):
    map_text = st.text_area(
        "Extra verdict spellings (one SPELLING=VERDICT a line)", key="import_map", height=80
    )
    if fmt is not None and fmt != adapters.NATIVE:
        key = adapters.canonical(fmt)
        for name in adapters.OPTIONS[key]:
            if name == "columns":  # the mapping form below
                continue
            if name == "skip_failed":
                if st.checkbox("Leave out test cases whose metric errored", key=f"import_opt_{key}_{name}"):
                    options[name] = True
                continue
            value = st.text_input(
                name.replace("_", " ").capitalize(),
                help=OPTION_HELP.get(name),
                key=f"import_opt_{key}_{name}",
            )
            if value.strip():
                options[name] = value.strip()

if fmt is None:
    st.stop()
chosen_fmt: str = fmt  # the functions below see the narrowed type


def _column_form() -> dict[str, str] | None:
    """The file's first rows, and a dropdown per field naming the column that holds it; None
    when the file cannot be read (the check then says why, with its line)."""
    try:
        header, rows = adapters.table.preview(
            path, encoding=encoding, delimiter=options.get("delimiter"), rows=PREVIEW_ROWS
        )
    except CalibrationError:
        return None
    names = [h or f"(column {i + 1})" for i, h in enumerate(header)]
    st.caption("The first rows of the file")
    st.dataframe([dict(zip(names, r, strict=False)) for r in rows], hide_index=True, width="stretch")
    st.caption(
        "Which column holds each field: preset to the column of the same name. Fields marked * are needed."
    )
    chosen: dict[str, str] = {}
    grid = st.columns(4)
    for i, name in enumerate(adapters.table.FIELDS):
        label = name + (" *" if name in adapters.table.REQUIRED else "")
        pick = grid[i % 4].selectbox(
            label,
            header,
            index=header.index(name) if name in header else None,
            placeholder="not in the file",
            key=f"import_col_{digest[:12]}_{name}",
        )
        if pick is not None and pick != name:
            chosen[name] = pick
    return chosen


columns: dict[str, str] = {}
if fmt == "csv":
    with st.expander("Columns", expanded=True):
        columns = _column_form() or {}

inputs = (
    digest,
    fmt,
    encoding,
    judge_model.strip(),
    prompt_version.strip(),
    tuple(sorted(options.items())),
    tuple(sorted(columns.items())),
    map_text.strip(),
)


def _run(dry_run: bool) -> adapters.Outcome | None:
    try:
        mapping = parse_mapping([x for x in map_text.splitlines() if x.strip()])
    except ValueError as exc:
        st.error("The extra verdict spellings are not valid:", icon=":material/error:")
        untrusted.literal(str(exc))
        return None
    bar = st.progress(0.0, text="Checking the file…" if dry_run else "Importing…")
    try:
        with store.session(signin.db_path()) as db:
            return adapters.run_import(
                db,
                chosen_fmt,
                path,
                dry_run=dry_run,
                progress=bar.progress,
                judge_model=judge_model.strip() or None,
                judge_prompt_version=prompt_version.strip() or None,
                mapping=mapping or None,
                encoding=encoding,
                **({"columns": columns} if columns else {}),
                **options,
            )
    except InputError as exc:
        bar.empty()
        st.error(
            "The file was not imported: nothing was written. The first problems:", icon=":material/error:"
        )
        st.dataframe(problems.problem_rows(exc), hide_index=True, width="stretch")
        return None
    except CalibrationError as exc:
        bar.empty()
        st.error("The file was not imported: nothing was written.", icon=":material/error:")
        untrusted.literal(str(exc))
        return None
    finally:
        bar.empty()


def _show(outcome: adapters.Outcome) -> None:
    st.subheader("Report")
    left, right = st.columns(2)
    with left:
        st.caption("What the import writes")
        untrusted.literal("\n".join(outcome.counts))
    with right:
        if outcome.mapping:
            st.caption("Verdicts mapped")
            untrusted.literal("\n".join(outcome.mapping))
    if outcome.notes:
        st.caption("Notes")
        untrusted.literal("\n".join(phrase(n, problems.IMPORT_CONTROLS) for n in outcome.notes))


def _import() -> None:
    outcome = _run(dry_run=False)
    if outcome is not None:
        st.session_state.pop(CHECKED, None)
        st.session_state[DONE] = [f"{shown_name}: imported by {lead}", *outcome.counts]
        uploads.drop_upload(FILE)
        st.session_state[UPLOADS] = st.session_state.get(UPLOADS, 0) + 1
        st.rerun()


@st.dialog("The file, checked", width="large", on_dismiss="rerun")
@access.lead_action  # a dialog reruns alone, without the page's own lead check
def _check_in_view() -> None:
    # A dialog, so the report (or the problems) is in view however far down Check was pressed.
    # Its own reruns (the Import button) find the check done and do not run it again.
    current = st.session_state.get(CHECKED)
    if current is None or current[0] != inputs:
        outcome = _run(dry_run=True)
        if outcome is None:
            return
        current = (inputs, outcome)
        st.session_state[CHECKED] = current
    _show(current[1])
    st.info("Checked: nothing has been written yet.", icon=":material/info:")
    if st.button("Import", icon=":material/upload:", type="primary", key="import_in_dialog"):
        _import()


checked = st.session_state.get(CHECKED)
if checked is not None and checked[0] != inputs:
    checked = None
    st.session_state.pop(CHECKED, None)

if st.button("Check file", icon=":material/fact_check:", type="primary" if checked is None else "secondary"):
    st.session_state.pop(CHECKED, None)
    _check_in_view()
elif checked is not None:  # the dialog was closed: the report stays here, under the button
    _show(checked[1])
    st.info("Checked: nothing has been written yet.", icon=":material/info:")
    if st.button("Import", icon=":material/upload:", type="primary"):
        _import()
