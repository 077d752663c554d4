"""Uploads on disk.

The adapters read paths (and the table reader the extension), so an upload is written to a
folder of its own under a name the app makes: the browser's name is untrusted text (it may
be "..", hold a NUL or a slash, or be longer than a file name may be) and is only shown,
through `untrusted.literal`, cut to `MAX_SHOWN_NAME`. A folder goes when its upload is replaced,
imported or dropped, when the session that made it is collected, and otherwise once no run
has used it for `UPLOAD_MAX_AGE_S`: swept every `UPLOAD_SWEEP_EVERY_S` while the server runs
(`_upload_sweeper`), and on every visit of the Import page (folders a killed server left). So a
folder is gone at most two minutes after the last run of its tab, however late Streamlit ends
the session; a tab still open writes its upload again, from the copy Streamlit keeps in
memory, at its next run (`saved_upload`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
import time
import unicodedata
import weakref
from contextlib import suppress
from pathlib import Path

import streamlit as st

from calibration.text import cut, visible

UPLOAD_PREFIX = "calibration-upload-"
UPLOAD_MAX_AGE_S = 90
UPLOAD_SWEEP_EVERY_S = 30
MAX_SHOWN_NAME = 80
_MAX_STEM_BYTES = 96  # well below any file system's 255-byte name limit, with the extension
_MAX_EXT = 8  # ".parquet": the longest extension an adapter reads


def upload_name(browser_name: str) -> str:
    """The file name an upload is saved under, made from the name the browser gave.

    The stem keeps letters, digits, "-", "_" and inner dots (every other character becomes
    "_"), cut to `_MAX_STEM_BYTES` bytes of UTF-8, "upload" when nothing is left; the extension
    (which picks the table reader) is kept lower-cased when it is up to `_MAX_EXT` ASCII letters
    and digits, else dropped. The stem stays what it was for an ordinary name, because the
    Ragas and RefChecker adapters make answer ids from it, as the CLI does from the file's name.
    """
    name = unicodedata.normalize("NFC", browser_name).replace("\\", "/").rsplit("/", 1)[-1]
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    ext = ext.lower() if ext.isascii() and ext.isalnum() and len(ext) <= _MAX_EXT else ""
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in stem).strip("._")
    while len(stem.encode()) > _MAX_STEM_BYTES:
        stem = stem[:-1]
    return (stem.rstrip("._") or "upload") + (f".{ext}" if ext else "")


def shown_upload_name(browser_name: str) -> str:
    """The browser's name for an upload as it may be shown (through `literal`): every invisible
    character made visible, cut to `MAX_SHOWN_NAME` characters."""
    shown, left_out = cut(visible(browser_name), MAX_SHOWN_NAME)
    return shown[:-1] + "…" if left_out else shown


def sweep_uploads(now: float, root: Path | None = None, max_age_s: float = UPLOAD_MAX_AGE_S) -> None:
    """Remove upload folders (`UPLOAD_PREFIX`) under `root` (the temp folder) that no run has used
    for more than `max_age_s` (`saved_upload` touches the folder it hands out): those of tabs
    closed, whose session Streamlit has not ended or Python not collected yet, and of a server
    that was killed."""
    for folder in (root or Path(tempfile.gettempdir())).glob(f"{UPLOAD_PREFIX}*"):
        try:
            if folder.is_dir() and now - folder.stat().st_mtime > max_age_s:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:  # removed by another session meanwhile
            continue


class SavedUpload:
    """An upload written to its own temp folder; the folder is removed with `discard`, or when
    the object is collected (the session holding it ended)."""

    def __init__(self, data: bytes, browser_name: str, digest: str) -> None:
        self.digest = digest  # sha256 of `data`
        self.shown_name = shown_upload_name(browser_name)
        folder = Path(tempfile.mkdtemp(prefix=UPLOAD_PREFIX))
        self._finalizer = weakref.finalize(self, shutil.rmtree, folder, True)
        self.path = folder / upload_name(browser_name)
        self.path.write_bytes(data)

    def discard(self) -> None:
        self._finalizer()


def saved_upload(key: str, data: bytes, browser_name: str) -> SavedUpload:
    """The upload `data` on disk, kept in session state under `key`: the same object while the
    same bytes are uploaded, a new one (the old folder removed) when they change."""
    if st.runtime.exists():  # a served app, not a test or a tool
        _upload_sweeper()
    saved = st.session_state.get(key)
    digest = hashlib.sha256(data).hexdigest()
    if isinstance(saved, SavedUpload) and saved.digest == digest and saved.path.exists():
        with suppress(OSError):  # used by this run: kept for another UPLOAD_MAX_AGE_S
            os.utime(saved.path.parent)
        if saved.path.exists():
            return saved
    drop_upload(key)
    saved = SavedUpload(data, browser_name, digest)
    st.session_state[key] = saved
    return saved


@st.cache_resource(show_spinner=False)
def _upload_sweeper() -> threading.Thread:
    """Once per server process, from its first upload on: `sweep_uploads` every
    `UPLOAD_SWEEP_EVERY_S`, visits or not."""

    def sweep_forever() -> None:
        while True:
            sweep_uploads(time.time())
            time.sleep(UPLOAD_SWEEP_EVERY_S)

    thread = threading.Thread(target=sweep_forever, name="upload-sweeper", daemon=True)
    thread.start()
    return thread


def drop_upload(key: str) -> None:
    """Remove the saved upload under `key` (session state and folder), if any."""
    saved = st.session_state.pop(key, None)
    if isinstance(saved, SavedUpload):
        saved.discard()
