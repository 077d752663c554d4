"""Reading input files the way every import does: strictly decoded, streamed, problems collected.

Shared by the import of judged answers and labels and by the restore of an export
(`calibration.importing`), and by export's recognition of its own files. A wrong encoding
stops the read instead of turning into mojibake; a problem is reported as `FILE:LINE: FIELD:
MESSAGE`, and at most `MAX_PROBLEMS` of them are kept so a file that is wrong throughout still
gives a readable error.
"""

from __future__ import annotations

import codecs
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from .errors import InputError

if TYPE_CHECKING:  # only the type: reading must not load pydantic for callers that never validate
    from pydantic import ValidationError

MAX_PROBLEMS = 20
_READ_SIZE = 1 << 16


class Problems:
    """The problems found in one file, each as `FILE:LINE: MESSAGE`; the first MAX_PROBLEMS kept."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: list[str] = []
        self.more = 0

    def add(self, line: int | None, message: str) -> None:
        """Record a problem on `line` (None: the file as a whole)."""
        if len(self.items) < MAX_PROBLEMS:
            where = f"{self.path}:{line}" if line is not None else str(self.path)
            self.items.append(f"{where}: {message}")
        else:
            self.more += 1

    def raise_if_any(self) -> None:
        """Raise InputError listing the problems, ending with "nothing was imported", if there are any."""
        if self.items:
            tail = [f"... and {self.more} more problems"] if self.more else []
            raise InputError([*self.items, *tail, f"{self.path}: nothing was imported"])

    def __bool__(self) -> bool:
        return bool(self.items)


def open_text(path: Path, encoding: str | None) -> TextIO:
    """Open `path` for strict text reading (default UTF-8, with or without a BOM); InputError if not."""
    try:
        raw: BinaryIO = path.open("rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror}") from exc
    enc = encoding or "utf-8-sig"
    try:
        codecs.lookup(enc)
    except LookupError as exc:
        raw.close()
        raise InputError(f"unknown encoding {enc!r}") from exc
    # errors="strict": a wrong encoding must stop the import, never become mojibake.
    return io.TextIOWrapper(raw, encoding=enc, errors="strict", newline="")


def decode_error(path: Path, line: int, exc: UnicodeDecodeError, encoding: str | None) -> InputError:
    """The InputError for bytes on `line` that do not decode, with a hint to give --encoding."""
    hint = "" if encoding else "; the file is not UTF-8: give its encoding with --encoding"
    return InputError(f"{path}:{line}: cannot decode bytes as {encoding or 'UTF-8'}{hint}; "
                      "nothing was imported")


def iter_json_records(path: Path, encoding: str | None = None) -> Iterator[tuple[int, Any]]:
    """Yield (line number, parsed value) from a JSONL file or a JSON array, streaming.

    A malformed record yields (line, JSONDecodeError) so the caller can report it and
    go on checking the rest of a JSONL file.
    """
    with open_text(path, encoding) as fh:
        line_no = 0
        try:
            first = ""
            pending: list[str] = []
            # Peek the first non-blank character to tell an array from JSONL.
            for line in fh:
                line_no += 1
                if line.strip():
                    first = line.lstrip()[0]
                    pending.append(line)
                    break
            if not first:
                return
            if first == "[":
                yield from _iter_array(fh, "".join(pending), line_no)
                return
            for line in _chain(pending, fh):
                if pending:
                    pending = []
                else:
                    line_no += 1
                if not line.strip():
                    continue
                try:
                    yield line_no, json.loads(line)
                except json.JSONDecodeError as exc:
                    yield line_no, exc
        except UnicodeDecodeError as exc:
            raise decode_error(path, line_no + 1, exc, encoding) from exc


def _chain(first: list[str], rest: TextIO) -> Iterator[str]:
    yield from list(first)
    yield from rest


def _iter_array(fh: TextIO, buf: str, start_line: int) -> Iterator[tuple[int, Any]]:
    decoder = json.JSONDecoder()
    line = start_line
    pos = buf.index("[") + 1
    eof = False
    expect_value = True

    def fill() -> bool:
        nonlocal buf, pos, eof
        chunk = fh.read(_READ_SIZE)
        if not chunk:
            eof = True
            return False
        buf = buf[pos:] + chunk
        pos = 0
        return True

    while True:
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n":
                if buf[pos] == "\n":
                    line += 1
                pos += 1
            if pos < len(buf) or not fill():
                break
        if pos >= len(buf):
            yield line, json.JSONDecodeError("the JSON array is not closed", buf, pos)
            return
        ch = buf[pos]
        if ch == "]":
            return
        if ch == ",":
            if expect_value:
                yield line, json.JSONDecodeError("unexpected ','", buf, pos)
                return
            pos += 1
            expect_value = True
            continue
        if not expect_value:
            yield line, json.JSONDecodeError("expected ',' or ']' between records", buf, pos)
            return
        while True:
            try:
                value, end = decoder.raw_decode(buf, pos)
                # A number or literal cut at the buffer's end would parse short: read on.
                if end == len(buf) and not eof and fill():
                    continue
                break
            except json.JSONDecodeError as exc:
                if not eof and fill():
                    continue
                yield line + buf.count("\n", pos, exc.pos), exc
                return
        yield line, value
        line += buf.count("\n", pos, end)
        pos = end
        expect_value = False


def field_errors(exc: ValidationError) -> list[str]:
    """A pydantic validation error as `FIELD: MESSAGE` lines, in the words of the input file."""
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing" and loc.startswith("claims.") and loc.endswith(".text"):
            # The file says `claim` (or `text`); name what the user can actually write.
            loc, msg = loc.removesuffix(".text") + ".claim", "missing: a claim needs 'claim' or 'text'"
        # Record-level checks already name their field in the message.
        out.append(f"{loc}: {msg}" if loc else msg)
    return out


__all__ = ["MAX_PROBLEMS", "Problems", "decode_error", "field_errors", "iter_json_records", "open_text"]
