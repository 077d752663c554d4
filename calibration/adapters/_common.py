"""Pieces every adapter shares: the result type and the verdict mapping.

Files are read as every input is (`calibration.reading`): opened by `text_file`, a tool's
JSON document walked by `JsonStream`, which steps over the members it does not need and
decodes the wanted array one element at a time, so a problem names the line its record
starts on, and problems are collected by `reading.Problems`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Hint
from ..models import Verdict, normalise_spelling

Record = tuple[int, dict[str, Any]]


@dataclass
class AdapterResult:
    """What an adapter read: records for `importing.import_records`, and how verdicts were mapped.

    `mapping` is the effective spelling -> verdict table (the tool's defaults overridden by the
    user's `--map`), to be passed to `import_records` so every verdict goes through it.
    `notes` say which fields the tool does not record and where they were taken from instead,
    naming options as `Option`s (`errors.phrase` words them for a front end).
    """

    tool: str
    source: Path
    records: Iterator[Record]
    mapping: dict[str, Verdict]
    spellings: tuple[str, ...] = ()
    judge_model: str | None = None
    judge_prompt_version: str | None = None
    notes: list[Hint] = field(default_factory=list)

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
