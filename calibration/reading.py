"""Reading input files the way every import does: strictly decoded, streamed, problems collected.

Shared by the import of judged answers and labels and by the restore of an export
(`calibration.importing`), and by export's recognition of its own files. A wrong encoding
stops the read instead of turning into mojibake; a problem is reported as `FILE:LINE: FIELD:
MESSAGE`, and at most `MAX_PROBLEMS` of them are kept so a file that is wrong throughout still
gives a readable error.
"""

from __future__ import annotations

import codecs
import functools
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from .errors import InputError

if TYPE_CHECKING:  # only the type: reading must not load pydantic for callers that never validate
    from pydantic import ValidationError

MAX_PROBLEMS = 20
_READ_SIZE = 1 << 16
# Nesting deeper than this is refused with file and line: no judged answer needs it, and Python's
# own recursion limit (about 1,000 levels) would otherwise end the import with a traceback.
MAX_DEPTH = 100
# A lone surrogate can only come from a JSON escape (strict decoding refuses one in the bytes).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


@dataclass(frozen=True, slots=True)
class BadRecord:
    """A record of a JSON / JSONL file that cannot be used, and why (the caller adds file and line)."""

    message: str


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (write null, or the number as a string)")


def loads(text: str) -> Any:
    """`json.loads` under the number rule of every read: NaN and Infinity are refused (ValueError).
    Pass it to `checked` for the depth and surrogate rules."""
    return json.loads(text, parse_constant=_no_constant)


def _depth(value: Any) -> int:
    """The nesting depth of a parsed JSON value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d)
            if d <= MAX_DEPTH:
                stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def _lone_surrogate(value: Any) -> str | None:
    """The path of the first string (key or value) holding a lone surrogate, or None."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return where or "the record"
        elif isinstance(v, dict):
            for k, x in v.items():
                key = f"{where}.{k}" if where else str(k)
                try:
                    str(k).encode("utf-8")
                except UnicodeEncodeError:
                    return f"a key in {where or 'the record'}"
                stack.append((key, x))
        elif isinstance(v, list):
            stack.extend((f"{where}.{i}", x) for i, x in enumerate(v))
    return None


def checked(text: str, parse: Callable[[], Any]) -> Any:
    """Parse one record's source `text` with `parse`; a BadRecord for what cannot be stored.

    Refused: malformed JSON, NaN / Infinity (not JSON, and not storable as JSON), nesting deeper
    than MAX_DEPTH, and a lone surrogate escape such as \\ud800 in any string."""
    try:
        value = parse()
    except json.JSONDecodeError as exc:
        return BadRecord(f"malformed JSON: {exc.msg} (column {exc.colno})")
    except RecursionError:
        return BadRecord(f"nested deeper than {MAX_DEPTH} levels; refused")
    except ValueError as exc:  # from _no_constant
        return BadRecord(str(exc))
    if text.count("[") + text.count("{") > MAX_DEPTH and _depth(value) > MAX_DEPTH:
        return BadRecord(f"nested deeper than {MAX_DEPTH} levels; refused")
    if _SURROGATE_ESCAPE.search(text):
        where = _lone_surrogate(value)
        if where is not None:
            return BadRecord(f"{where}: contains a lone surrogate (half of a \\uD83D\\uDE00-style "
                             "pair), which is not valid Unicode text")
    return value


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
        info = codecs.lookup(enc)
    except LookupError as exc:
        raw.close()
        raise InputError(f"unknown encoding {enc!r}") from exc
    if not getattr(info, "_is_text_encoding", True):  # rot13, base64...: bytes/str transforms
        raw.close()
        raise InputError(f"{enc!r} is not a text encoding; give the file's character encoding, e.g. latin-1")
    # errors="strict": a wrong encoding must stop the import, never become mojibake.
    return io.TextIOWrapper(raw, encoding=enc, errors="strict", newline="")


def decode_error(path: Path, line: int, exc: UnicodeError, encoding: str | None) -> InputError:
    """The InputError for bytes on `line` that do not decode (or a stream the encoding cannot start
    on, such as UTF-16 without a byte order mark), with a hint about --encoding."""
    hint = ("; the file is not UTF-8: give its encoding with --encoding" if not encoding
            else "; is that the file's encoding? Without --encoding UTF-8 is read")
    return InputError(f"{path}:{line}: cannot decode bytes as {encoding or 'UTF-8'} "
                      f"({exc.reason if isinstance(exc, UnicodeDecodeError) else exc}){hint}; "
                      "nothing was imported")


def iter_json_records(path: Path, encoding: str | None = None) -> Iterator[tuple[int, Any]]:
    """Yield (line number, parsed value) from a JSONL file or a JSON array, streaming.

    A record that cannot be used (malformed JSON, NaN, too deep, a lone surrogate: `checked`)
    yields (line, BadRecord) so the caller can report it and go on checking the rest of a
    JSONL file. A file that starts with a JSON array is that one array: anything but
    whitespace after its closing bracket (another array, JSON lines) is a BadRecord on its line,
    never silently ignored.
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
                yield line_no, checked(line, functools.partial(json.loads, line, parse_constant=_no_constant))
        except UnicodeError as exc:
            raise decode_error(path, line_no + 1, exc, encoding) from exc


def _chain(first: list[str], rest: TextIO) -> Iterator[str]:
    yield from list(first)
    yield from rest


def _iter_array(fh: TextIO, buf: str, start_line: int) -> Iterator[tuple[int, Any]]:
    decoder = json.JSONDecoder(parse_constant=_no_constant)
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
            yield line, BadRecord("malformed JSON: the JSON array is not closed")
            return
        ch = buf[pos]
        if ch == "]":
            yield from _after_array(fh, buf[pos + 1:], line)
            return
        if ch == ",":
            if expect_value:
                yield line, BadRecord("malformed JSON: unexpected ','")
                return
            pos += 1
            expect_value = True
            continue
        if not expect_value:
            yield line, BadRecord("malformed JSON: expected ',' or ']' between records")
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
                yield line + buf.count("\n", pos, exc.pos), BadRecord(
                    f"malformed JSON: {exc.msg} (column {exc.colno})")
                return
            except (RecursionError, ValueError) as exc:
                yield line, checked("", functools.partial(_raise, exc))
                return
        start = pos
        yield line, checked(buf[start:end], functools.partial(_same, value))
        line += buf.count("\n", pos, end)
        pos = end
        expect_value = False


def _raise(exc: BaseException) -> Any:
    raise exc


def _same(value: Any) -> Any:
    return value


def _after_array(fh: TextIO, rest: str, line: int) -> Iterator[tuple[int, Any]]:
    """After the closing bracket of a file's array only whitespace may follow."""
    while True:
        stripped = rest.lstrip(" \t\r\n")
        line += rest.count("\n", 0, len(rest) - len(stripped))
        if stripped:
            yield line, BadRecord("more content after the closing ']' of the JSON array; a file is one "
                                  "JSON array or JSON lines (one object per line), not both")
            return
        rest = fh.read(_READ_SIZE)
        if not rest:
            return


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


__all__ = ["MAX_DEPTH", "MAX_PROBLEMS", "BadRecord", "Problems", "checked",
           "decode_error", "field_errors", "iter_json_records", "loads", "open_text"]
