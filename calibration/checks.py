"""Answer checks a judge may miss, done in code: the answer's script and stray CJK characters.

Seed 003 adds two checks beside its judge: an answer in another language than the question
(a Russian question answered in English is a failure however accurate the answer) and CJK
characters (ideographs a model sometimes leaves in a Cyrillic or Latin answer). Both are
facts about the text, not verdicts about the claims, so they are stored per answer at import
(`calibration.store.checks`) and shown as facts.

What is detected is the writing *script*, by Unicode block ranges (The Unicode Standard,
ch. 3 and the Blocks.txt / Scripts.txt data files), not the language: English and French
answers to each other's questions both read as Latin. A text's script is the one most of its
letters belong to; digits, punctuation and symbols belong to none. Texts with fewer than
`MIN_LETTERS` letters have no script (a question "2+2?" says nothing about the answer's
language), and then no mismatch is flagged.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass
from functools import cache

# Letters below this many give no script: too short a text to say which one it is written in.
MIN_LETTERS = 4

CJK = "CJK"
# Stored with each check: raise it when the rules below change, so old rows can be told apart.
CHECK_VERSION = 1

# (first code point, last code point, script), sorted and non-overlapping. Han, kana and
# Hangul are one script here: the check asks whether CJK characters appear at all.
_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0041, 0x005A, "Latin"),
    (0x0061, 0x007A, "Latin"),
    (0x00AA, 0x00AA, "Latin"),
    (0x00BA, 0x00BA, "Latin"),
    (0x00C0, 0x00D6, "Latin"),
    (0x00D8, 0x00F6, "Latin"),
    (0x00F8, 0x024F, "Latin"),
    (0x0250, 0x02AF, "Latin"),
    (0x0370, 0x03FF, "Greek"),
    (0x0400, 0x052F, "Cyrillic"),
    (0x0531, 0x058F, "Armenian"),
    (0x0590, 0x05FF, "Hebrew"),
    (0x0600, 0x06FF, "Arabic"),
    (0x0750, 0x077F, "Arabic"),
    (0x0900, 0x097F, "Devanagari"),
    (0x0980, 0x09FF, "Bengali"),
    (0x0E00, 0x0E7F, "Thai"),
    (0x10A0, 0x10FF, "Georgian"),
    (0x1100, 0x11FF, CJK),  # Hangul Jamo
    (0x1C80, 0x1C8F, "Cyrillic"),
    (0x1E00, 0x1EFF, "Latin"),
    (0x1F00, 0x1FFF, "Greek"),
    (0x2C60, 0x2C7F, "Latin"),
    (0x2DE0, 0x2DFF, "Cyrillic"),
    (0x2E80, 0x2FDF, CJK),  # radicals
    (0x3005, 0x3007, CJK),  # iteration mark, closing mark, ideographic zero
    (0x3021, 0x3029, CJK),  # Hangzhou numerals
    (0x3040, 0x30FF, CJK),  # Hiragana, Katakana
    (0x3100, 0x312F, CJK),  # Bopomofo
    (0x3130, 0x318F, CJK),  # Hangul compatibility Jamo
    (0x31A0, 0x31FF, CJK),  # Bopomofo extended, strokes, Katakana extensions
    (0x3400, 0x4DBF, CJK),  # Han extension A
    (0x4E00, 0x9FFF, CJK),  # Han unified ideographs
    (0xA640, 0xA69F, "Cyrillic"),
    (0xA720, 0xA7FF, "Latin"),
    (0xA960, 0xA97F, CJK),  # Hangul Jamo extended A
    (0xAC00, 0xD7AF, CJK),  # Hangul syllables
    (0xD7B0, 0xD7FF, CJK),  # Hangul Jamo extended B
    (0xF900, 0xFAFF, CJK),  # compatibility ideographs
    (0xFF21, 0xFF3A, "Latin"),
    (0xFF41, 0xFF5A, "Latin"),  # fullwidth Latin
    (0xFF66, 0xFF9F, CJK),  # halfwidth Katakana
    (0xFFA0, 0xFFDC, CJK),  # halfwidth Hangul
    (0x20000, 0x323AF, CJK),  # Han extensions B to H, compatibility supplement
)
_STARTS = [r[0] for r in _RANGES]


def script_of(ch: str) -> str | None:
    """The script of one character, or None for digits, punctuation, symbols, spaces, marks."""
    cp = ord(ch)
    i = bisect_right(_STARTS, cp) - 1
    if i >= 0 and cp <= _RANGES[i][1]:
        return _RANGES[i][2]
    return None


@cache
def _letter_runs() -> re.Pattern[str]:
    return re.compile("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi, _ in _RANGES) + "]+")


def _range_index(cp: int) -> int:
    return bisect_right(_STARTS, cp) - 1


def script_counts(text: str) -> Counter[str]:
    """Letters per script in `text` (agrees with `script_of` character by character)."""
    counts: Counter[str] = Counter()
    # Runs of letters are found in C; a run whose lowest and highest characters fall in one
    # range lies wholly inside it, so it is counted at once (nearly every word), and only a
    # run that mixes blocks (e.g. "Postgresом") is looked at character by character.
    for run in _letter_runs().findall(text):
        i = _range_index(ord(min(run)))
        if i == _range_index(ord(max(run))):
            counts[_RANGES[i][2]] += len(run)
            continue
        for ch in run:
            script = script_of(ch)
            if script is not None:
                counts[script] += 1
    return counts


def dominant_script(counts: Counter[str]) -> str | None:
    """The script most letters belong to; None below MIN_LETTERS letters (ties: alphabetical)."""
    if sum(counts.values()) < MIN_LETTERS:
        return None
    return min(counts, key=lambda s: (-counts[s], s))


@dataclass(frozen=True, slots=True)
class AnswerCheck:
    """The checks of one answer against its question."""

    question_script: str | None
    answer_script: str | None
    cjk_chars: int  # CJK characters in the answer
    question_cjk: int  # CJK characters in the question

    @property
    def script_mismatch(self) -> bool:
        """The answer is written in another script than the question (both long enough to say)."""
        return (
            self.question_script is not None
            and self.answer_script is not None
            and self.question_script != self.answer_script
        )

    @property
    def unexpected_cjk(self) -> bool:
        """The answer holds CJK characters although the question has none."""
        return self.cjk_chars > 0 and self.question_cjk == 0

    @property
    def flagged(self) -> bool:
        return self.script_mismatch or self.unexpected_cjk

    def facts(self) -> list[str]:
        """One plain sentence per raised flag, for a review card; empty when nothing is flagged."""
        return facts(
            question_script=self.question_script,
            answer_script=self.answer_script,
            script_mismatch=self.script_mismatch,
            cjk_chars=self.cjk_chars,
            unexpected_cjk=self.unexpected_cjk,
        )


def facts(
    *,
    question_script: str | None,
    answer_script: str | None,
    script_mismatch: bool,
    cjk_chars: int,
    unexpected_cjk: bool,
) -> list[str]:
    """The sentences a review card shows for a check (stored or fresh): facts, never verdicts."""
    out: list[str] = []
    if script_mismatch:
        out.append(f"The answer is written in {answer_script} script; the question in {question_script}.")
    if unexpected_cjk:
        n = cjk_chars
        out.append(
            f"The answer contains {n} CJK character{'s' if n != 1 else ''}; the question contains none."
        )
    return out


def check_answer(question: str, answer: str) -> AnswerCheck:
    """Both checks of an answer against its question (pure; see the module docstring)."""
    q = script_counts(question)
    a = script_counts(answer)
    return AnswerCheck(
        question_script=dominant_script(q),
        answer_script=dominant_script(a),
        cjk_chars=a[CJK],
        question_cjk=q[CJK],
    )


__all__ = [
    "CHECK_VERSION",
    "CJK",
    "MIN_LETTERS",
    "AnswerCheck",
    "check_answer",
    "dominant_script",
    "facts",
    "script_counts",
    "script_of",
]
