"""Data model: verdicts, the shapes accepted at the edges, and plain records used inside.

Pydantic models validate what arrives from files and forms; inside the package the
validated values are trusted and passed around as these types.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from .errors import Hint, Option
from .text import id_problem, text_problem
from .vocab import LABELS, Verdict

__all__ = ["LABELS", "Verdict"]  # re-exported: the edge models speak of them

# The engines' integer: SQLite's INTEGER and PostgreSQL's BIGINT (store/postgres.py) are 64-bit
# signed. An id, a seed or a count beyond it is refused at the edge, where it can be said why.
MAX_STORED_INT: Final = 2**63 - 1
StoredInt = Annotated[int, Field(ge=0, le=MAX_STORED_INT)]


def _storable_text(value: str) -> str:
    reason = text_problem(value)
    if reason:
        raise ValueError(reason)
    return value


# Body text a person or a file writes (a note): `text.text_problem` refuses NUL, which
# PostgreSQL's text cannot hold, and the other controls body text never needs.
BodyText = Annotated[str, AfterValidator(_storable_text)]


# One explicit table: a spelling not in it is an error unless the user maps it.
# Keys are normalised by `normalise_spelling` (case folded, spaces, '_' and '-' removed).
VERDICT_ALIASES: dict[str, Verdict] = {
    "supported": Verdict.SUPPORTED,
    "supports": Verdict.SUPPORTED,
    "support": Verdict.SUPPORTED,
    "entailment": Verdict.SUPPORTED,
    "entailed": Verdict.SUPPORTED,
    "entails": Verdict.SUPPORTED,
    "true": Verdict.SUPPORTED,
    "yes": Verdict.SUPPORTED,
    "contradicted": Verdict.CONTRADICTED,
    "contradicts": Verdict.CONTRADICTED,
    "contradiction": Verdict.CONTRADICTED,
    "refutes": Verdict.CONTRADICTED,
    "refuted": Verdict.CONTRADICTED,
    "false": Verdict.CONTRADICTED,
    "unsupported": Verdict.UNSUPPORTED,
    "notsupported": Verdict.UNSUPPORTED,
    "notenoughinfo": Verdict.UNSUPPORTED,
    "notenoughinformation": Verdict.UNSUPPORTED,
    "nei": Verdict.UNSUPPORTED,
    "neutral": Verdict.UNSUPPORTED,
    "idk": Verdict.UNSUPPORTED,
    "unknown": Verdict.UNSUPPORTED,
}


def normalise_spelling(raw: str) -> str:
    return re.sub(r"[\s_\-]+", "", raw).casefold()


def map_hint(spelling: str) -> Hint:
    """How to make an unknown verdict spelling known: map it."""
    return ("or map it with ", Option.MAP, f" {spelling.strip()}=UNSUPPORTED")


class UnknownVerdict(ValueError):
    """A verdict spelling neither the table nor the user's mapping knows; `hint` says how to map it."""

    def __init__(self, raw: str) -> None:
        super().__init__(f"unknown verdict {raw!r}; use SUPPORTED, CONTRADICTED or UNSUPPORTED")
        self.hint = map_hint(raw)


def verdict_hint(exc: ValueError) -> Hint:
    """The hint of a `parse_verdict` error, if it has one."""
    return exc.hint if isinstance(exc, UnknownVerdict) else ()


def parse_verdict(raw: object, extra: dict[str, Verdict] | None = None) -> tuple[Verdict, str]:
    """Return the canonical verdict and the normalised spelling it came from.

    `extra` holds user mappings (`--map partially_supported=UNSUPPORTED`); they win over
    the built-in table so a team can override a spelling it uses differently.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError("verdict must be a non-empty string")
    key = normalise_spelling(raw)
    if extra and key in extra:
        return extra[key], key
    if key in VERDICT_ALIASES:
        return VERDICT_ALIASES[key], key
    raise UnknownVerdict(raw)


def parse_mapping(items: list[str]) -> dict[str, Verdict]:
    """Parse `--map spelling=VERDICT` options."""
    out: dict[str, Verdict] = {}
    for item in items:
        spelling, sep, target = item.partition("=")
        if not sep or not spelling.strip():
            raise ValueError(f"{item!r}: expected SPELLING=VERDICT")
        try:
            out[normalise_spelling(spelling)] = Verdict(target.strip().upper())
        except ValueError:
            raise ValueError(f"{item!r}: target must be SUPPORTED, CONTRADICTED or UNSUPPORTED") from None
    return out


# ---------------------------------------------------------------- edge shapes


class ChunkIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    text: str
    source: str | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


class ClaimIn(BaseModel):
    """One claim as a judge emits it (seed 000 shape plus optional id and rationale)."""

    model_config = ConfigDict(extra="allow")

    id: str | None = None
    text: str = Field(min_length=1)
    verdict: str
    rationale: str | None = None
    evidence: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            if "text" not in data and "claim" in data:
                data["text"] = data.pop("claim")
            if "rationale" not in data and "explanation" in data:
                data["rationale"] = data.pop("explanation")
            if isinstance(data.get("id"), int) and not isinstance(data.get("id"), bool):
                data["id"] = str(data["id"])
            ev = data.get("evidence")
            if ev is None:
                data["evidence"] = []
            elif isinstance(ev, str | int):
                data["evidence"] = [str(ev)]
            elif isinstance(ev, list):
                data["evidence"] = [str(e) if isinstance(e, int) else e for e in ev]
        return data

    @field_validator("text")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("claim has no text")
        return v


class JudgedAnswerIn(BaseModel):
    """One judged answer: the judge's output wrapped with its inputs."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1)
    question: str = ""
    answer: str = ""
    chunks: list[ChunkIn] = Field(default_factory=list)
    claims: list[ClaimIn] = Field(default_factory=list)
    judge_model: str | None = None
    judge_prompt_version: str | None = None
    category: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _shapes(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            if isinstance(data.get("id"), int) and not isinstance(data.get("id"), bool):
                data["id"] = str(data["id"])
            chunks = data.get("chunks")
            if isinstance(chunks, list):
                # Bare strings get ids "1", "2", ... by position, as the format says.
                data["chunks"] = [
                    {"id": str(i), "text": c} if isinstance(c, str) else c
                    for i, c in enumerate(chunks, start=1)
                ]
            if data.get("metadata") is None:
                data["metadata"] = {}
        return data

    @model_validator(mode="after")
    def _safe_text(self) -> JudgedAnswerIn:
        # Ids are shown, joined and compared: a NUL (cut short by SQLite's JSON functions), a line
        # break or a bidi control makes one id look like, or turn into, another (calibration.text).
        ids: list[tuple[str, str | None]] = [
            ("id", self.id),
            ("judge_model", self.judge_model),
            ("judge_prompt_version", self.judge_prompt_version),
        ]
        ids += [(f"chunks.{i}.id", c.id) for i, c in enumerate(self.chunks)]
        ids += [(f"claims.{i}.id", c.id) for i, c in enumerate(self.claims)]
        ids += [
            (f"claims.{i}.evidence.{j}", e)
            for i, c in enumerate(self.claims)
            for j, e in enumerate(c.evidence)
        ]
        for where, value in ids:
            reason = id_problem(value) if value is not None else None
            if reason:
                raise ValueError(f"{where}: {reason}")
        texts: list[tuple[str, str | None]] = [
            ("question", self.question),
            ("answer", self.answer),
            ("category", self.category),
        ]
        texts += [
            (f"chunks.{i}.{k}", v)
            for i, c in enumerate(self.chunks)
            for k, v in (("text", c.text), ("source", c.source))
        ]
        texts += [
            (f"claims.{i}.{k}", v)
            for i, c in enumerate(self.claims)
            for k, v in (("claim", c.text), ("rationale", c.rationale))
        ]
        for where, value in texts:
            reason = text_problem(value) if value is not None else None
            if reason:
                raise ValueError(f"{where}: {reason}")
        return self

    @model_validator(mode="after")
    def _consistent(self) -> JudgedAnswerIn:
        seen: set[str] = set()
        for i, ch in enumerate(self.chunks):
            if ch.id in seen:
                raise ValueError(f"chunks.{i}.id: {ch.id!r} is duplicated")
            seen.add(ch.id)
        claim_ids: set[str] = set()
        for i, cl in enumerate(self.claims):
            for ev in cl.evidence:
                if ev not in seen:
                    raise ValueError(f"claims.{i}.evidence: {ev!r} names no chunk of this answer")
            if cl.id is not None:
                if cl.id in claim_ids:
                    raise ValueError(f"claims.{i}.id: {cl.id!r} is duplicated")
                claim_ids.add(cl.id)
        return self


class LabelRowIn(BaseModel):
    """One row of a human-labels CSV."""

    model_config = ConfigDict(extra="ignore")

    answer_id: str = Field(min_length=1)
    claim_id: str = Field(min_length=1)
    verdict: str = Field(min_length=1)
    reviewer: str = Field(min_length=1)
    note: BodyText | None = None
    evidence: list[str] = Field(default_factory=list)

    @field_validator("answer_id", "claim_id")
    @classmethod
    def _safe_id(cls, v: str) -> str:
        reason = id_problem(v)
        if reason:
            raise ValueError(reason)
        return v

    @field_validator("reviewer", mode="before")
    @classmethod
    def _named(cls, v: Any) -> Any:
        if v is None or (isinstance(v, str) and not v.strip()):
            raise ValueError("empty: fill in the reviewer")
        return v

    @field_validator("evidence", mode="before")
    @classmethod
    def _split_evidence(cls, v: Any) -> Any:
        if v is None or v == "":
            return []
        if isinstance(v, str):
            return [p.strip() for p in v.split(";") if p.strip()]
        return v
