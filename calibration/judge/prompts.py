"""Prompt templates: versioned files, checked for their placeholders, rendered in one pass.

A template is shown everything the judge must see about one answer: the question, its
retrieved chunks, the answer and the fixed list of claims to judge.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, Option, Problem
from ..reading import text_file
from ..text import check_text

# The shipped templates stay beside the package modules they served before the split.
PROMPTS_DIR = Path(__file__).resolve().parents[1] / "prompts"
DEFAULT_TEMPLATE = "grounding-v1"

PLACEHOLDERS: tuple[str, ...] = ("question", "chunks", "answer", "claims")
# Optional: where the few-shot examples from reviewers' corrections go (`judge.examples`).
EXAMPLES_PLACEHOLDER = "examples"
_PLACEHOLDER_RE = re.compile(r"\{(question|chunks|answer|claims|examples)\}")
NO_EXAMPLES = "(no examples)"
_VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """A template under its version name; `sha256` of its text identifies it in a lab run."""

    version: str
    text: str
    path: Path | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def uses_examples(self) -> bool:
        """The template has the {examples} placeholder."""
        return uses_examples(self.text)


def uses_examples(text: str) -> bool:
    """Whether a template text has the {examples} placeholder."""
    return "{" + EXAMPLES_PLACEHOLDER + "}" in text


def check_template(text: str) -> None:
    """Refuse a template that would not show the judge everything it must see, or that holds
    what body text may not (`text.check_text`: a NUL, which PostgreSQL cannot store)."""
    check_text(text, "the prompt template")
    found = set(_PLACEHOLDER_RE.findall(text))
    missing = [p for p in PLACEHOLDERS if p not in found]
    if missing:
        raise InputError(
            "the prompt template lacks the placeholder(s) "
            + ", ".join("{" + p + "}" for p in missing)
            + "; it needs {question}, {chunks}, {answer} and {claims}"
        )


def available_templates(directory: Path = PROMPTS_DIR) -> list[str]:
    """Version names of the shipped templates (file stems), sorted."""
    return sorted(p.stem for p in directory.glob("*.txt"))


def load_template(
    version: str, path: str | Path | None = None, *, encoding: str | None = None
) -> PromptTemplate:
    """The template named `version`: read from `path` (in `encoding`, default UTF-8) by the one
    input reader (`reading.text_file`), else from calibration/prompts/VERSION.txt."""
    if not _VERSION_RE.match(version):
        raise InputError(f"prompt version {version!r}: use letters, digits, '.', '_' and '-'")
    if path is None:
        path = PROMPTS_DIR / f"{version}.txt"
        if not path.is_file():
            raise InputError(
                Problem(
                    f"no template file for prompt version {version!r}",
                    hint=(
                        "give one with ",
                        Option.PROMPT_FILE,
                        f", or use one of: {', '.join(available_templates()) or '(none)'}",
                    ),
                )
            )
    path = Path(path)
    with text_file(path, encoding) as fh:
        text = fh.read()
    check_template(text)
    return PromptTemplate(version, text, path)


def template_from_text(version: str, text: str) -> PromptTemplate:
    """A template edited in the UI; validated like a file.

    A shipped template's name stands for that file's text, so an edited text cannot
    borrow it: two different prompts would be reported under one version.
    """
    if not _VERSION_RE.match(version):
        raise InputError(f"prompt version {version!r}: use letters, digits, '.', '_' and '-'")
    check_template(text)
    shipped = PROMPTS_DIR / f"{version}.txt"
    if shipped.is_file() and shipped.read_text(encoding="utf-8-sig") != text:
        raise InputError(
            f"{version!r} is the name of a shipped template and this text differs "
            "from it; give the edited prompt its own version name"
        )
    return PromptTemplate(version, text)


def render(template: str, values: Mapping[str, str]) -> str:
    """Substitute the placeholders in one pass ({examples} becomes NO_EXAMPLES when absent).

    Not `str.format`: the template's own JSON example has braces, and inserted text
    (questions, chunks, answers) is untrusted, so a `{claims}` inside a chunk must stay
    literal text. `re.sub` with a function neither rescans inserted text nor interprets
    backslashes in it.
    """
    return _PLACEHOLDER_RE.sub(lambda m: values.get(m.group(1), NO_EXAMPLES), template)


@dataclass(frozen=True, slots=True)
class ChunkText:
    """A retrieved chunk as the judge is shown it."""

    chunk_id: str
    text: str
    source: str | None = None


@dataclass(frozen=True, slots=True)
class ClaimText:
    """A claim to judge: its stored key, the id the judge must answer with, and its text."""

    claim_pk: int
    claim_id: str
    text: str


@dataclass(frozen=True, slots=True)
class AnswerInput:
    """Everything the judge sees for one answer; the claim list is fixed."""

    answer_id: str
    question: str
    answer: str
    chunks: tuple[ChunkText, ...]
    claims: tuple[ClaimText, ...]


def format_chunks(chunks: Sequence[ChunkText]) -> str:
    """The chunks numbered from 1 with their ids, so evidence may name either."""
    if not chunks:
        return "(no chunks were retrieved)"
    parts = []
    for i, ch in enumerate(chunks, start=1):
        head = f"[{i}] id: {ch.chunk_id}" + (f" (source: {ch.source})" if ch.source else "")
        parts.append(f"{head}\n{ch.text}")
    return "\n\n".join(parts)


def format_claims(claims: Sequence[ClaimText]) -> str:
    """The claims as JSON lines {"id": ..., "text": ...}."""
    # One JSON object per line: a claim text with newlines or quotes cannot blur into the
    # next claim or fake an id.
    return "\n".join(json.dumps({"id": c.claim_id, "text": c.text}, ensure_ascii=False) for c in claims)


def render_prompt(template: PromptTemplate | str, item: AnswerInput, examples: str = "") -> str:
    """The prompt for one answer: the template with its placeholders filled in; `examples` is
    the few-shot block for {examples} (NO_EXAMPLES when empty)."""
    text = template.text if isinstance(template, PromptTemplate) else template
    return render(
        text,
        {
            "question": item.question,
            "chunks": format_chunks(item.chunks),
            "answer": item.answer,
            "claims": format_claims(item.claims),
            "examples": examples or NO_EXAMPLES,
        },
    )


def own_material(item: AnswerInput) -> str:
    """Everything of the answer itself that its prompt shows (the leak check's exemption)."""
    return "\n".join(
        [
            item.question,
            item.answer,
            format_chunks(item.chunks),
            format_claims(item.claims),
            *(c.text for c in item.claims),
        ]
    )
