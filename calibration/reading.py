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
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
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
# A number written with more digits is refused: no score or count needs it, Python refuses to
# turn an integer of over 4,300 digits into text (so it could not be stored), and parsing one
# costs time quadratic in its length.
MAX_DIGITS = 100
_BIG = 10 ** MAX_DIGITS
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


@dataclass(frozen=True, slots=True)
class BadRecord:
    """A record of a JSON / JSONL file that cannot be used, and why (the caller adds file and line)."""

    message: str


class BadValue(ValueError):
    """A value outside the JSON value model, or outside its limits; the message names the field."""


@dataclass(frozen=True, slots=True)
class _Refused:
    """What the parser left where the text holds something `json_value` refuses, so that the
    refusal names the field it is in."""

    message: str


def _constant(name: str) -> _Refused:
    return _Refused(f"{name} is not valid JSON (write null, or the number as a string)")


def _number(text: str, convert: Callable[[str], Any]) -> Any:
    digits = sum(c.isdigit() for c in text) if len(text) > MAX_DIGITS else 0
    if digits > MAX_DIGITS:
        return _Refused(f"a number of {digits} digits; more than {MAX_DIGITS} are refused "
                        "(write it as a string)")
    return convert(text)


# The one parser of every JSON text the package reads (JSONL lines, JSON arrays, other tools'
# files, JSON held in a table cell): what it cannot refuse itself it marks for `json_value`.
DECODER = json.JSONDecoder(parse_constant=_constant,
                           parse_int=functools.partial(_number, convert=int),
                           parse_float=functools.partial(_number, convert=float))
_BLANK = " \t\r\n"  # JSON's whitespace, and no other
_TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels; refused"


def _path(where: str, at: Any) -> str:
    """The dotted path of a value from its chain of (parent chain, key) pairs."""
    keys: list[str] = []
    while at is not None:
        at, key = at
        keys.append(str(key))
    return ".".join(([where] if where else []) + keys[::-1]) or "the record"


def _surrogate(where: str) -> BadValue:
    return BadValue(f"{where}: contains a lone surrogate (half of a \\uD83D\\uDE00-style pair), "
                    "which is not valid Unicode text")


def _plain(x: Any) -> bool:
    """A value that needs no walk: an ASCII string, null, a boolean, a finite number in range."""
    t = type(x)
    return ((t is str and x.isascii()) or x is None or t is bool or (t is int and -_BIG < x < _BIG)
            or (t is float and math.isfinite(x)))


def _plain_parsed(x: Any) -> bool:
    """`_plain`, for a value parsed from text without a surrogate escape: every string is plain."""
    t = type(x)
    return (t is str or x is None or t is bool or (t is int and -_BIG < x < _BIG)
            or (t is float and math.isfinite(x)))


def json_value(value: Any, where: str = "", *, surrogates: bool = True) -> Any:
    """The input policy: `value` as a plain JSON value, or BadValue naming the field that is not
    (its path below `where`, the name of `value` itself if it has one).

    Every value that enters the package goes through it: what the parser (`DECODER`) read from a
    file, and what a caller of the Python API hands over. A JSON value is a dict with string
    keys, a list (a tuple becomes one), a string, a finite number, true, false or null. Refused:
    anything else (a set, bytes, a date...), NaN and infinities (not JSON, and not storable as
    JSON), a number of more than MAX_DIGITS digits, nesting deeper than MAX_DEPTH, and a lone
    surrogate (such as the escape \\ud800) in a string or key. A copy is returned, so the
    caller's own objects are never changed; the walk is iterative, so depth cannot overflow it.
    `surrogates=False` for a value parsed from text that holds no \\uD800-\\uDFFF escape, the
    only way a parsed string can hold a lone surrogate (decoding is strict): strings are not
    searched then.
    """
    plain = _plain if surrogates else _plain_parsed
    root: list[Any] = [None]
    # The path to a too deep value is a hundred keys long: the message names the record instead.
    too_deep = BadValue(f"{where}: {_TOO_DEEP}" if where else _TOO_DEEP)
    # (value, container it goes in, its key there, its path as a (parent path, key) chain, depth);
    # paths are only spelled out for a message.
    stack: list[tuple[Any, Any, Any, Any, int]] = [(value, root, 0, None, 1)]
    while stack:
        v, parent, key, at, depth = stack.pop()
        t = type(v)
        if t is dict:
            if depth > MAX_DEPTH:
                raise too_deep
            out: dict[str, Any] = {}
            for k, x in v.items():
                if type(k) is not str:
                    if not isinstance(k, str):
                        raise BadValue(f"{_path(where, at)}: the key {k!r} is not a string; JSON "
                                       "object keys are strings")
                    k = str(k)
                if not k.isascii() and _SURROGATE.search(k):
                    raise _surrogate(f"a key in {_path(where, at)}")
                out[k] = x  # in place now, so the keys keep their order; checked below if need be
                if not plain(x):
                    stack.append((x, out, k, (at, k), depth + 1))
            parent[key] = out
        elif t is list:
            if depth > MAX_DEPTH:
                raise too_deep
            items = list(v)
            stack.extend((x, items, i, (at, i), depth + 1) for i, x in enumerate(v) if not plain(x))
            parent[key] = items
        elif t is str:
            if surrogates and _SURROGATE.search(v):
                raise _surrogate(_path(where, at))
            parent[key] = v
        elif plain(v):
            parent[key] = v
        elif t is float:
            raise BadValue(f"{_path(where, at)}: {v!r} is not a finite number, which JSON cannot hold "
                           "(write null, or the number as a string)")
        elif t is int:
            raise BadValue(f"{_path(where, at)}: a number of more than {MAX_DIGITS} digits; refused "
                           "(write it as a string)")
        elif t is _Refused:
            raise BadValue(f"{_path(where, at)}: {v.message}" if where or at else v.message)
        else:  # not one of JSON's own types: a subclass becomes its base, a tuple a list; or refused
            base = next((f for c, f in _BASES if isinstance(v, c)), None)
            if base is None:
                raise BadValue(f"{_path(where, at)}: a {t.__name__} is not a JSON value (give a dict, "
                               "list, string, number, true, false or null)")
            stack.append((base(v), parent, key, at, depth))
    return root[0]


# What stands for a JSON value, and the conversion to it; bool before int, its base class.
_BASES: tuple[tuple[type, Callable[[Any], Any]], ...] = (
    (bool, bool), (str, str), (int, int), (float, float), (Mapping, dict), (list, list), (tuple, list))


def decode(text: str, pos: int = 0) -> tuple[Any, int]:
    """(value, end) of the JSON value at `text[pos:]`, checked by `json_value`.

    Raises json.JSONDecodeError for malformed JSON and BadValue for what the policy refuses."""
    try:
        value, end = DECODER.raw_decode(text, pos)
    except RecursionError:
        raise BadValue(_TOO_DEEP) from None
    return parsed_value(value, text, pos, end), end


def parsed_value(value: Any, text: str, pos: int, end: int, where: str = "") -> Any:
    """`json_value` of a value the parser read from `text[pos:end]`."""
    return json_value(value, where, surrogates=_SURROGATE_ESCAPE.search(text, pos, end) is not None)


def checked(text: str) -> Any:
    """The one JSON value `text` holds (blanks around it allowed), or a BadRecord saying why not:
    malformed JSON, or anything `json_value` refuses."""
    try:
        value, end = decode(text, len(text) - len(text.lstrip(_BLANK)))
    except json.JSONDecodeError as exc:
        return BadRecord(f"malformed JSON: {exc.msg} (column {exc.colno})")
    except BadValue as exc:
        return BadRecord(str(exc))
    if text[end:].strip(_BLANK):
        return BadRecord(f"malformed JSON: Extra data (column {end + 1})")
    return value


def json_records(values: Iterable[Any]) -> Iterator[tuple[int, Any]]:
    """(position from 1, value) for Python values, as `iter_json_records` yields a file's records:
    each value through `json_value`, a BadRecord for one it refuses."""
    for pos, value in enumerate(values, start=1):
        try:
            yield pos, json_value(value)
        except BadValue as exc:
            yield pos, BadRecord(str(exc))


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

    A record that cannot be used (malformed JSON, or refused by `json_value`: NaN, too deep, a
    lone surrogate, a number of too many digits) yields (line, BadRecord) so the caller can
    report it and go on checking the rest of a JSONL file. A file that starts with a JSON array
    is that one array: anything but whitespace after its closing bracket (another array, JSON
    lines) is a BadRecord on its line, never silently ignored.
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
                yield line_no, checked(line)
        except UnicodeError as exc:
            raise decode_error(path, line_no + 1, exc, encoding) from exc


def _chain(first: list[str], rest: TextIO) -> Iterator[str]:
    yield from list(first)
    yield from rest


def _iter_array(fh: TextIO, buf: str, start_line: int) -> Iterator[tuple[int, Any]]:
    line = start_line
    pos = buf.index("[") + 1
    eof = False
    expect_value = True

    def fill(at_least: int = _READ_SIZE) -> bool:
        nonlocal buf, pos, eof
        chunk = fh.read(at_least)
        if not chunk:
            eof = True
            return False
        buf = buf[pos:] + chunk
        pos = 0
        return True

    while True:
        while True:
            while pos < len(buf) and buf[pos] in _BLANK:
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
            # A record cut at the buffer's end is parsed again once more has been read; reading at
            # least as much again as is pending keeps that linear in the record's size (a
            # fixed-size read would parse a 40 MB record some 600 times).
            more = max(_READ_SIZE, len(buf) - pos)
            try:
                value, end = DECODER.raw_decode(buf, pos)
                # A number or literal cut at the buffer's end would parse short: read on.
                if end == len(buf) and not eof and fill(more):
                    continue
                break
            except json.JSONDecodeError as exc:
                if not eof and fill(more):
                    continue
                yield line + buf.count("\n", pos, exc.pos), BadRecord(
                    f"malformed JSON: {exc.msg} (column {exc.colno})")
                return
            except RecursionError:
                yield line, BadRecord(_TOO_DEEP)
                return
        try:
            yield line, parsed_value(value, buf, pos, end)
        except BadValue as exc:
            yield line, BadRecord(str(exc))
        line += buf.count("\n", pos, end)
        pos = end
        expect_value = False


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


def csv_problem(exc: Exception) -> str:
    """The csv module's error in the words of the file's author."""
    text = str(exc)
    if "unexpected end of data" in text or "EOF inside string" in text:
        return ('a quoted field is not closed: a \'"\' opens a value that runs to the end of the file; '
                "close the quote, or double a quote inside a value (\"\")")
    if "expected after" in text:
        return (f"{text}: a quote inside a quoted value must be doubled (\"\"), and a closing quote must "
                "be followed by the delimiter")
    if "NUL" in text or "null byte" in text:
        return "the file contains a NUL byte; it is not a text CSV (or give its --encoding)"
    return text


def repeated_columns(header: list[str]) -> str | None:
    """The problem of a header naming a column twice (which one holds the value is ambiguous)."""
    twice = sorted({c for c in header if header.count(c) > 1})
    if not twice:
        return None
    return (f"column(s) {', '.join(map(repr, twice))} appear more than once in the header; which one "
            "holds the value is ambiguous")


def row_width_problem(cells: int, columns: int) -> str | None:
    """The problem of a table row with more or fewer cells than its header has columns: the
    values would sit under the wrong column, or be cut off silently."""
    if cells == columns:
        return None
    return f"{cells} fields, but the header has {columns} columns"


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


__all__ = ["DECODER", "MAX_DEPTH", "MAX_DIGITS", "MAX_PROBLEMS", "BadRecord", "BadValue", "Problems",
           "checked", "csv_problem", "decode", "decode_error", "field_errors", "iter_json_records",
           "json_records", "json_value", "open_text", "parsed_value", "repeated_columns", "row_width_problem"]
