"""Pieces every adapter shares: the result type, problem lines, and JSON read with line numbers.

Tools write one JSON document (not JSONL), and `json.load` forgets where each value was.
`iter_array` walks the document with `JSONDecoder.raw_decode` instead: it steps over the
members it does not need, then decodes the wanted array one element at a time, counting
newlines, so a problem names the line its record starts on, at the cost of a single parse.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..models import Verdict, normalise_spelling
from ..reading import DECODER, MAX_DEPTH, BadRecord, BadValue, checked, parsed_value

MAX_PROBLEMS = 20

Record = tuple[int, dict[str, Any]]


@dataclass
class AdapterResult:
    """What an adapter read: records for `importing.import_records`, and how verdicts were mapped.

    `mapping` is the effective spelling -> verdict table (the tool's defaults overridden by the
    user's `--map`), to be passed to `import_records` so every verdict goes through it.
    `notes` say which fields the tool does not record and where they were taken from instead.
    """

    tool: str
    source: Path
    records: Iterator[Record]
    mapping: dict[str, Verdict]
    spellings: tuple[str, ...] = ()
    judge_model: str | None = None
    judge_prompt_version: str | None = None
    notes: list[str] = field(default_factory=list)

    def mapping_lines(self, counts: Mapping[tuple[str, str], int]) -> list[str]:
        """'deepeval yes → SUPPORTED: 120' per spelling, from `ImportReport.mappings`.

        The tool's own spellings are listed even when unused (count 0), so the report shows the
        whole mapping that was applied; other spellings follow as they were counted.
        """
        out: list[str] = []
        shown: set[str] = set()
        for spelling in self.spellings:
            target = self.mapping[spelling].value
            out.append(f"{self.tool} {spelling} → {target}: {counts.get((spelling, target), 0)}")
            shown.add(spelling)
        for (spelling, target), n in sorted(counts.items()):
            if spelling not in shown:
                out.append(f"{self.tool} {spelling} → {target}: {n}")
        return out


def merged_mapping(defaults: Mapping[str, Verdict], user: Mapping[str, Verdict] | None) -> dict[str, Verdict]:
    """The tool's default mapping with the user's entries winning (keys normalised as in models)."""
    out = {normalise_spelling(k): v for k, v in defaults.items()}
    out.update(user or {})
    return out


class Problems:
    """Collects 'FILE:LINE: field: message' lines, the first MAX_PROBLEMS of them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: list[str] = []
        self.more = 0

    def add(self, line: int | None, where: str, message: str) -> None:
        if len(self.items) >= MAX_PROBLEMS:
            self.more += 1
            return
        at = f"{self.path}:{line}" if line is not None else str(self.path)
        self.items.append(f"{at}: {where}: {message}" if where else f"{at}: {message}")

    def raise_if_any(self) -> None:
        if self.items:
            tail = [f"... and {self.more} more problems"] if self.more else []
            raise InputError([*self.items, *tail, f"{self.path}: nothing was imported"])

    def fail(self, line: int | None, where: str, message: str) -> InputError:
        """A problem that stops reading the file: what was collected so far, then this one."""
        self.add(line, where, message)
        tail = [f"... and {self.more} more problems"] if self.more else []
        return InputError([*self.items, *tail, f"{self.path}: nothing was imported"])

    def __bool__(self) -> bool:
        return bool(self.items)


def read_text(path: Path, encoding: str | None) -> str:
    """The whole file as text; strict decoding, as in the JSONL import (never mojibake)."""
    enc = encoding or "utf-8-sig"
    try:
        codecs.lookup(enc)
    except LookupError as exc:
        raise InputError(f"unknown encoding {enc!r}") from exc
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror}") from exc
    try:
        return data.decode(enc)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        hint = "" if encoding else "; the file is not UTF-8: give its encoding with --encoding"
        raise InputError(f"{path}:{line}: cannot decode bytes as {encoding or 'UTF-8'}{hint}; "
                         "nothing was imported") from exc


_WS = frozenset(" \t\r\n")


class JsonText:
    """A JSON document read piecewise, with line numbers (1-based) for every offset it reaches."""

    def __init__(self, text: str, problems: Problems) -> None:
        self.text = text
        self.problems = problems
        self._line_pos = 0
        self._line = 1

    def line_at(self, pos: int) -> int:
        # Offsets only move forward while walking, so counting from the last one is linear.
        if pos < self._line_pos:
            self._line_pos, self._line = 0, 1
        self._line += self.text.count("\n", self._line_pos, pos)
        self._line_pos = pos
        return self._line

    def skip_ws(self, pos: int) -> int:
        text = self.text
        while pos < len(text) and text[pos] in _WS:
            pos += 1
        return pos

    def error(self, pos: int, message: str) -> InputError:
        return self.problems.fail(self.line_at(min(pos, len(self.text))), "", f"malformed JSON: {message}")

    def decode(self, pos: int, where: str | None = None) -> tuple[Any, int]:
        """The value at `pos` and the offset after it; with `where` (the value's path) it is also
        checked by the input policy (`reading.json_value`), as what is kept must be."""
        try:
            value, end = DECODER.raw_decode(self.text, pos)
            return (value if where is None else parsed_value(value, self.text, pos, end, where)), end
        except json.JSONDecodeError as exc:
            raise self.error(exc.pos, f"{exc.msg} (column {exc.colno})") from None
        except RecursionError:
            raise self.problems.fail(self.line_at(pos), where or "",
                                     f"nested deeper than {MAX_DEPTH} levels; refused") from None
        except BadValue as exc:
            raise self.problems.fail(self.line_at(pos), "", str(exc)) from None

    def first_char(self) -> str:
        pos = self.skip_ws(0)
        return self.text[pos] if pos < len(self.text) else ""

    def find(self, pos: int, keys: set[str]) -> tuple[str, int] | None:
        """(key, offset of its value) of the first member of the object at `pos` named in `keys`.

        Other members are decoded only to step over them, so put the big one in `keys`.
        """
        text = self.text
        pos = self.skip_ws(pos)
        if pos >= len(text) or text[pos] != "{":
            return None
        pos = self.skip_ws(pos + 1)
        if pos < len(text) and text[pos] == "}":
            return None
        while True:
            name, pos = self.decode(pos)
            pos = self.skip_ws(pos)
            if pos >= len(text) or text[pos] != ":":
                raise self.error(pos, "expected ':' after a key")
            pos = self.skip_ws(pos + 1)
            if name in keys:
                return name, pos
            _, pos = self.decode(pos)
            pos = self.skip_ws(pos)
            if pos < len(text) and text[pos] == ",":
                pos = self.skip_ws(pos + 1)
                continue
            if pos < len(text) and text[pos] == "}":
                return None
            raise self.error(pos, "expected ',' or '}' in an object")

    def elements(self, pos: int, where: str = "") -> Iterator[tuple[int, int, Any]]:
        """(index, line, value) for each element of the array at `pos` (whose path is `where`)."""
        text = self.text
        pos = self.skip_ws(pos)
        if pos >= len(text) or text[pos] != "[":
            raise self.error(pos, "expected a JSON array")
        pos = self.skip_ws(pos + 1)
        if pos < len(text) and text[pos] == "]":
            return
        index = 0
        while True:
            line = self.line_at(pos)
            value, pos = self.decode(pos, f"{where}.{index}" if where else "")
            yield index, line, value
            index += 1
            pos = self.skip_ws(pos)
            if pos < len(text) and text[pos] == ",":
                pos = self.skip_ws(pos + 1)
                continue
            if pos < len(text) and text[pos] == "]":
                return
            raise self.error(pos, "expected ',' or ']' between records")

    def iter_records(self) -> Iterator[tuple[int, int, Any]]:
        """Elements of a top-level array, or of every line of a JSONL file."""
        if self.first_char() == "[":
            yield from self.elements(0)
            return
        index = 0
        # split("\n"), not splitlines(): U+2028 and friends may sit raw inside JSON strings.
        for line_no, line in enumerate(self.text.split("\n"), start=1):
            if not line.strip():
                continue
            value = checked(line)
            if isinstance(value, BadRecord):
                raise self.problems.fail(line_no, "", value.message)
            yield index, line_no, value
            index += 1

