"""Reading input files the way every import does: strictly decoded, streamed, problems collected.

The one reader of every input file: the import of judged answers and labels and the restore
of an export (`calibration.importing`, `calibration.backup`), every adapter of another tool's
output (`calibration.adapters`), and export's recognition of its own files. A file is opened
by `text_file` only (the encoding checked, a BOM dropped, strict decoding, a decoding error
named by its line); JSON is read by `JsonStream` (a JSON array or another tool's document,
streamed) or line by line (JSONL), each value through the one input policy (`json_value`:
depth, digits, surrogates). A wrong encoding stops the read instead of turning into mojibake;
problems are `errors.Problem`s with file, line and field, and at most `MAX_PROBLEMS` of them
are kept so a file that is wrong throughout still gives a readable error.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import io
import json
import math
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from .errors import Hint, InputError, Option, Problem

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
_BIG = 10**MAX_DIGITS
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
        return _Refused(
            f"a number of {digits} digits; more than {MAX_DIGITS} are refused (write it as a string)"
        )
    return convert(text)


# The one parser of every JSON text the package reads (JSONL lines, JSON arrays, other tools'
# files, JSON held in a table cell): what it cannot refuse itself it marks for `json_value`.
DECODER = json.JSONDecoder(
    parse_constant=_constant,
    parse_int=functools.partial(_number, convert=int),
    parse_float=functools.partial(_number, convert=float),
)
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
    return BadValue(
        f"{where}: contains a lone surrogate (half of a \\uD83D\\uDE00-style pair), "
        "which is not valid Unicode text"
    )


def _plain(x: Any) -> bool:
    """A value that needs no walk: an ASCII string, null, a boolean, a finite number in range."""
    t = type(x)
    return (
        (t is str and x.isascii())
        or x is None
        or t is bool
        or (t is int and -_BIG < x < _BIG)
        or (t is float and math.isfinite(x))
    )


def _plain_parsed(x: Any) -> bool:
    """`_plain`, for a value parsed from text without a surrogate escape: every string is plain."""
    t = type(x)
    return (
        t is str
        or x is None
        or t is bool
        or (t is int and -_BIG < x < _BIG)
        or (t is float and math.isfinite(x))
    )


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
                        raise BadValue(
                            f"{_path(where, at)}: the key {k!r} is not a string; JSON object keys are strings"
                        )
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
            raise BadValue(
                f"{_path(where, at)}: {v!r} is not a finite number, which JSON cannot hold "
                "(write null, or the number as a string)"
            )
        elif t is int:
            raise BadValue(
                f"{_path(where, at)}: a number of more than {MAX_DIGITS} digits; refused "
                "(write it as a string)"
            )
        elif t is _Refused:
            raise BadValue(f"{_path(where, at)}: {v.message}" if where or at else v.message)
        else:  # not one of JSON's own types: a subclass becomes its base, a tuple a list; or refused
            base = next((f for c, f in _BASES if isinstance(v, c)), None)
            if base is None:
                raise BadValue(
                    f"{_path(where, at)}: a {t.__name__} is not a JSON value (give a dict, "
                    "list, string, number, true, false or null)"
                )
            stack.append((base(v), parent, key, at, depth))
    return root[0]


# What stands for a JSON value, and the conversion to it; bool before int, its base class.
_BASES: tuple[tuple[type, Callable[[Any], Any]], ...] = (
    (bool, bool),
    (str, str),
    (int, int),
    (float, float),
    (Mapping, dict),
    (list, list),
    (tuple, list),
)


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
    """The problems found in one file (`errors.Problem`, with the file's name); the first
    MAX_PROBLEMS kept, the others counted."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: list[Problem] = []
        self.more = 0

    def add(self, line: int | None, message: str, field: str = "", hint: Hint = ()) -> None:
        """Record a problem on `line` (None: the file as a whole)."""
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(Problem(message, str(self.path), line, field, hint))
        else:
            self.more += 1

    def error(self) -> InputError:
        """The InputError listing the problems, closed by "nothing was imported"."""
        return InputError(self.items, more=self.more, closing=nothing_imported(self.path))

    def fail(self, line: int | None, message: str, field: str = "", hint: Hint = ()) -> InputError:
        """A problem that stops reading the file: the error of what was collected, then this one."""
        self.add(line, message, field, hint)
        return self.error()

    def raise_if_any(self) -> None:
        """Raise `error()` if there are any problems."""
        if self.items:
            raise self.error()

    def __bool__(self) -> bool:
        return bool(self.items)


def nothing_imported(path: Path) -> Problem:
    """What is said of a file refused as a whole."""
    return Problem("nothing was imported", str(path))


def text_encoding(name: str) -> str:
    """`name` if it is a character encoding Python knows; InputError if not, or if it names a
    bytes or text transform (rot13, base64...), which decoding would refuse."""
    try:
        codecs.lookup(name)
    except LookupError:
        raise InputError(f"unknown encoding {name!r}") from None
    try:
        "".encode(name)
    except LookupError:
        raise InputError(
            f"{name!r} is not a text encoding; give the file's character encoding, e.g. latin-1 or cp1251"
        ) from None
    return name


def open_text(path: Path, encoding: str | None) -> TextIO:
    """Open `path` for strict text reading (default UTF-8, with or without a BOM); InputError if not.

    Read it inside `text_file`, which turns a decoding error into its InputError."""
    enc = text_encoding(encoding or "utf-8-sig")
    try:
        raw: BinaryIO = path.open("rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror}") from exc
    # errors="strict": a wrong encoding must stop the import, never become mojibake.
    return io.TextIOWrapper(raw, encoding=enc, errors="strict", newline="")


@contextlib.contextmanager
def text_file(path: Path, encoding: str | None) -> Iterator[TextIO]:
    """The one way an input file is read as text: `open_text`, with a decoding error anywhere
    in the block raised as the InputError naming its line (`decode_error`)."""
    with open_text(path, encoding) as fh:
        try:
            yield fh
        except UnicodeError as exc:
            raise decode_error(path, exc, encoding) from exc


def head_text(path: Path, size: int = 1 << 16) -> str:
    """The first `size` bytes of a file as text, undecodable bytes dropped, "" if it cannot be
    read: for recognising a format, never for importing."""
    try:
        with path.open("rb") as fh:
            return fh.read(size).decode("utf-8", errors="ignore")
    except OSError:
        return ""


def count_lines(path: Path) -> int:
    """The number of lines of a file (at least 1), counted in its bytes: for a progress bar."""
    with path.open("rb") as fh:
        return max(1, sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b"")) + 1)


def _bad_line(path: Path, encoding: str) -> int | None:
    """The line holding the first bytes of `path` that do not decode as `encoding` (None if
    none do): counted again from the start, since a text stream decodes ahead of its lines."""
    factory = codecs.getincrementaldecoder(encoding)
    decoder = factory(errors="strict")
    line = 1
    with path.open("rb") as fh:
        while chunk := fh.read(_READ_SIZE):
            state = decoder.getstate()
            try:
                line += decoder.decode(chunk).count("\n")
            except UnicodeDecodeError as exc:
                # exc.start counts from the decoder's pending bytes, then this chunk.
                good = factory(errors="ignore")
                good.setstate(state)
                return line + good.decode(chunk[: max(0, exc.start - len(state[0]))]).count("\n")
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            return line
    return None


def decode_error(path: Path, exc: UnicodeError, encoding: str | None) -> InputError:
    """The InputError for bytes that do not decode (or a stream the encoding cannot start on,
    such as UTF-16 without a byte order mark), on the line they are on."""
    try:
        line = _bad_line(path, encoding or "utf-8-sig")
    except (OSError, UnicodeError):
        line = None
    hint: Hint = (
        ("the file is not UTF-8: give its encoding with ", Option.ENCODING)
        if not encoding
        else ("is that the file's encoding? Without ", Option.ENCODING, " UTF-8 is read")
    )
    reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
    return InputError(
        Problem(
            f"cannot decode bytes as {encoding or 'UTF-8'} ({reason}), so nothing was imported",
            str(path),
            line,
            hint=hint,
        )
    )


class BadJson(ValueError):
    """Malformed JSON on `line`, after which the text cannot be read on."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


_BLANKS = re.compile(f"[{_BLANK}]*")


class JsonStream:
    """A JSON text read from a stream a buffer at a time, knowing the line it has got to.

    The one streaming JSON reader: a file's array of records (`iter_json_records`) and the
    records inside another tool's document (`adapters`) are read with it, so a file is never
    held whole, only the value being decoded. (A maintained streaming parser such as ijson
    does not say on which line a value starts, which every problem must name.)
    """

    def __init__(self, fh: TextIO, buf: str = "", line: int = 1) -> None:
        self.fh = fh
        self.buf = buf
        self.pos = 0
        self.line = line  # the line of `pos`
        self.eof = False

    def _fill(self, at_least: int = _READ_SIZE) -> bool:
        chunk = self.fh.read(at_least)
        if not chunk:
            self.eof = True
            return False
        self.buf = self.buf[self.pos :] + chunk
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not JSON whitespace, stepping to it ("" at the end)."""
        buf, pos = self.buf, self.pos
        if pos < len(buf) and buf[pos] not in _BLANK:  # most often: nothing to step over
            return buf[pos]
        while True:
            end = _BLANKS.match(self.buf, self.pos).end()  # type: ignore[union-attr]  # * always matches
            self.line += self.buf.count("\n", self.pos, end)
            self.pos = end
            if end < len(self.buf):
                return self.buf[end]
            if self.eof or not self._fill():
                return ""

    def take(self, ch: str) -> bool:
        """Step over `ch` if it is the next character that is not whitespace."""
        if self.peek() == ch:
            self.pos += 1
            return True
        return False

    def value(self, where: str | None = "") -> Any:
        """The value that starts here, stepped over. Checked by the input policy as the value
        at path `where` (a BadRecord if refused); `where=None` for a value only stepped over."""
        self.peek()
        while True:
            # A value cut at the buffer's end is parsed again once more has been read; reading at
            # least as much again as is pending keeps that linear in the value's size (a
            # fixed-size read would parse a 40 MB record some 600 times).
            more = max(_READ_SIZE, len(self.buf) - self.pos)
            try:
                value, end = DECODER.raw_decode(self.buf, self.pos)
                # A number or literal cut at the buffer's end would parse short: read on.
                if end == len(self.buf) and not self.eof and self._fill(more):
                    continue
                break
            except json.JSONDecodeError as exc:
                if not self.eof and self._fill(more):
                    continue
                raise BadJson(
                    self.line + self.buf.count("\n", self.pos, exc.pos),
                    f"malformed JSON: {exc.msg} (column {exc.colno})",
                ) from None
            except RecursionError:
                raise BadJson(self.line, _TOO_DEEP) from None
        buf, pos = self.buf, self.pos
        self.line += buf.count("\n", pos, end)
        self.pos = end
        if where is None:
            return value
        try:
            return parsed_value(value, buf, pos, end, where)
        except BadValue as exc:
            return BadRecord(str(exc))

    def elements(self, where: str = "") -> Iterator[tuple[int, int, Any]]:
        """(index, line, value) of each element of the array that starts here (at path
        `where`); a value the input policy refuses is a BadRecord. BadJson if malformed."""
        if not self.take("["):
            raise BadJson(self.line, "malformed JSON: expected a JSON array")
        if self.take("]"):
            return
        index = 0
        while True:
            ch = self.peek()
            if ch in (",", "]"):
                raise BadJson(self.line, f"malformed JSON: unexpected {ch!r}")
            if not ch:
                raise BadJson(self.line, "malformed JSON: the JSON array is not closed")
            line = self.line
            yield index, line, self.value(f"{where}.{index}" if where else "")
            index += 1
            if self.take(","):
                continue
            if self.take("]"):
                return
            if not self.peek():
                raise BadJson(self.line, "malformed JSON: the JSON array is not closed")
            raise BadJson(self.line, "malformed JSON: expected ',' or ']' between records")

    def member(self, keys: Collection[str]) -> str | None:
        """Step into the object that starts here, to the value of its first member named in
        `keys`: that name, or None when the object has none (or this is not an object).

        Other members are decoded only to step over them, so put the big one in `keys`."""
        if not self.take("{") or self.take("}"):
            return None
        while True:
            if self.peek() != '"':
                raise BadJson(self.line, "malformed JSON: expected a key in an object")
            name = self.value(None)
            if not self.take(":"):
                raise BadJson(self.line, "malformed JSON: expected ':' after a key")
            if name in keys:
                self.peek()
                return str(name)
            self.value(None)
            if self.take(","):
                continue
            if self.take("}"):
                return None
            raise BadJson(self.line, "malformed JSON: expected ',' or '}' in an object")


def iter_json_records(path: Path, encoding: str | None = None) -> Iterator[tuple[int, Any]]:
    """Yield (line number, parsed value) from a JSONL file or a JSON array, streaming.

    A record that cannot be used (malformed JSON, or refused by `json_value`: NaN, too deep, a
    lone surrogate, a number of too many digits) yields (line, BadRecord) so the caller can
    report it and go on checking the rest of a JSONL file. A file that starts with a JSON array
    is that one array: anything but whitespace after its closing bracket (another array, JSON
    lines) is a BadRecord on its line, never silently ignored.
    """
    with text_file(path, encoding) as fh:
        line_no = 0
        pending = ""
        # Peek the first non-blank line to tell an array from JSONL.
        for line in fh:
            line_no += 1
            if line.strip():
                pending = line
                break
        if not pending:
            return
        if pending.lstrip()[0] == "[":
            yield from _array_records(JsonStream(fh, pending, line_no))
            return
        yield line_no, checked(pending)
        for line in fh:
            line_no += 1
            if line.strip():
                yield line_no, checked(line)


def _array_records(stream: JsonStream) -> Iterator[tuple[int, Any]]:
    try:
        for _index, line, value in stream.elements():
            yield line, value
    except BadJson as exc:
        yield exc.line, BadRecord(str(exc))
        return
    if stream.peek():
        yield (
            stream.line,
            BadRecord(
                "more content after the closing ']' of the JSON array; a file is "
                "one JSON array or JSON lines (one object per line), not both"
            ),
        )


def csv_problem(exc: Exception) -> tuple[str, Hint]:
    """The csv module's error in the words of the file's author: (message, hint)."""
    text = str(exc)
    if "unexpected end of data" in text or "EOF inside string" in text:
        return (
            "a quoted field is not closed: a '\"' opens a value that runs to the end of the file",
            ('close the quote, or double a quote inside a value ("")',),
        )
    if "expected after" in text:
        return (
            text,
            (
                'a quote inside a quoted value must be doubled (""), and a closing quote must '
                "be followed by the delimiter",
            ),
        )
    if "NUL" in text or "null byte" in text:
        return "the file contains a NUL byte", (
            "it is not a text CSV, or give its encoding with ",
            Option.ENCODING,
        )
    return text, ()


def csv_error(path: Path, line: int, exc: Exception) -> InputError:
    """The InputError for a CSV file the csv module cannot read on `line`."""
    message, hint = csv_problem(exc)
    return InputError(Problem(message, str(path), line, hint=hint), closing=nothing_imported(path))


def repeated_columns(header: list[str]) -> str | None:
    """The problem of a header naming a column twice (which one holds the value is ambiguous)."""
    twice = sorted({c for c in header if header.count(c) > 1})
    if not twice:
        return None
    return (
        f"column(s) {', '.join(map(repr, twice))} appear more than once in the header; which one "
        "holds the value is ambiguous"
    )


def row_width_problem(cells: int, columns: int) -> str | None:
    """The problem of a table row with more or fewer cells than its header has columns: the
    values would sit under the wrong column, or be cut off silently."""
    if cells == columns:
        return None
    return f"{cells} fields, but the header has {columns} columns"


def field_errors(exc: ValidationError) -> list[tuple[str, str]]:
    """A pydantic validation error as (field, message) pairs, in the words of the input file."""
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing" and loc.startswith("claims.") and loc.endswith(".text"):
            # The file says `claim` (or `text`); name what the user can actually write.
            loc, msg = loc.removesuffix(".text") + ".claim", "missing: a claim needs 'claim' or 'text'"
        out.append((loc, msg))
    return out


__all__ = [
    "DECODER",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "MAX_PROBLEMS",
    "BadJson",
    "BadRecord",
    "BadValue",
    "JsonStream",
    "Problems",
    "checked",
    "count_lines",
    "csv_error",
    "csv_problem",
    "decode",
    "decode_error",
    "field_errors",
    "head_text",
    "iter_json_records",
    "json_records",
    "json_value",
    "nothing_imported",
    "open_text",
    "parsed_value",
    "repeated_columns",
    "row_width_problem",
    "text_encoding",
    "text_file",
]
