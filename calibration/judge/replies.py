"""Reply parsing: the judge's JSON validated with pydantic against the fixed claim ids.

Nothing is guessed: a missing, repeated or unknown claim id, an unknown verdict or evidence
naming no chunk makes the whole reply a ReplyError, whose message is shown to the model in
one corrective round (`correction_message`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from ..errors import ReplyError
from ..models import Verdict, parse_verdict
from ..reading import BadValue, decode


@dataclass(frozen=True, slots=True)
class ClaimVerdict:
    """One claim's verdict from a valid reply; `raw_verdict` is the spelling the model used."""

    claim_id: str
    verdict: Verdict
    raw_verdict: str
    rationale: str | None
    evidence: tuple[str, ...]


class _ReplyItem(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    verdict: Verdict
    raw_verdict: str
    rationale: str | None = None
    evidence: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _shapes(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for alias in ("claim_id", "claimId", "claim"):
            if "id" not in data and alias in data:
                data["id"] = data.pop(alias)
        if isinstance(data.get("id"), int) and not isinstance(data.get("id"), bool):
            data["id"] = str(data["id"])
        for alias in ("explanation", "reason", "reasoning"):
            if "rationale" not in data and alias in data:
                data["rationale"] = data.pop(alias)
        raw = data.get("verdict")
        if "verdict" in data:
            data["raw_verdict"] = raw if isinstance(raw, str) else json.dumps(raw)
        ev = data.get("evidence")
        if ev is None:
            data["evidence"] = []
        elif isinstance(ev, str | int) and not isinstance(ev, bool):
            data["evidence"] = [str(ev)]
        elif isinstance(ev, list):
            data["evidence"] = [str(e) if isinstance(e, int) and not isinstance(e, bool) else e for e in ev]
        return data

    @field_validator("verdict", mode="before")
    @classmethod
    def _verdict(cls, v: Any) -> Verdict:
        try:
            return parse_verdict(v)[0]
        except ValueError:
            # parse_verdict's own message talks about a CLI option; the model needs this.
            raise ValueError(
                f"unknown verdict {v!r}; use exactly SUPPORTED, CONTRADICTED or UNSUPPORTED"
            ) from None


_ITEMS = TypeAdapter(list[_ReplyItem])
_LIST_KEYS = ("verdicts", "claims", "results", "items")

# Reply parsing is linear in the reply's length (a reply may be a megabyte, twice per answer):
# tags and fences are found with str.find, which never rescans, instead of regular expressions
# whose lazy `.*?` rescans the rest of the text from every unclosed opening (quadratic).
_OPEN, _CLOSE = "<think>", "</think>"
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_FENCE = "```"
_FENCE_HEADER = re.compile(r"[A-Za-z0-9_-]*[ \t]*\r?\n?")  # the language tag: anchored, never backtracks


def strip_think(text: str) -> str:
    """`text` without its reasoning blocks: each `<think>` up to its matching `</think>` (tags in
    any ASCII case; blocks nest, so an inner pair does not end the outer block).

    An opening tag that is never closed starts no block: it and all after it stay as text (it may
    be a literal tag in a rationale), and so does a closing tag with no opening one."""
    low = text.translate(_ASCII_LOWER)  # ASCII only, so indices match `text`
    out: list[str] = []
    pos = 0  # text before this is decided (kept in `out`, or dropped)
    # The next tag of each kind at or after the scan point; each find starts past the last tag
    # found, so no part of the text is searched twice for either tag.
    next_open, next_close = low.find(_OPEN), low.find(_CLOSE)
    while next_open >= 0:
        start = at = next_open
        if next_close < start:  # a closing tag before the block is only text
            next_close = low.find(_CLOSE, start)
        depth = 0
        while True:
            if next_close < 0:
                return "".join(out) + text[pos:]  # the block at `start` is never closed
            if 0 <= next_open < next_close:
                depth, at = depth + 1, next_open + len(_OPEN)
                next_open = low.find(_OPEN, at)
            else:
                depth, at = depth - 1, next_close + len(_CLOSE)
                next_close = low.find(_CLOSE, at)
                if depth == 0:
                    break
        out.append(text[pos:start])
        pos = at
    out.append(text[pos:])
    return "".join(out)


def fenced(text: str) -> str | None:
    """The body of the first ``` code fence (language tag and line break after the opening
    dropped), or None when no fence is closed."""
    start = text.find(_FENCE)
    if start < 0:
        return None
    header = _FENCE_HEADER.match(text, start + len(_FENCE))
    body = header.end() if header else start + len(_FENCE)
    # A later opening could not close either: its closing would be searched for from further on.
    end = text.find(_FENCE, body)
    return None if end < 0 else text[body:end]


def _json_value(text: str) -> Any:
    """The JSON value of a reply under the rules of every outside JSON (`reading.decode`: depth,
    NaN / Infinity, long numbers, lone surrogates), or ReplyError; a syntax error names its line,
    which matters in a reply of many lines."""
    try:
        value, end = decode(text)
    except json.JSONDecodeError as exc:
        raise ReplyError(
            f"the reply cannot be read: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    except BadValue as exc:
        raise ReplyError(f"the reply cannot be read: {exc}") from None
    if text[end:].strip():
        raise ReplyError("the reply cannot be read: not valid JSON (extra data after the value)")
    return value


def _reply_items(data: Any) -> list[Any]:
    """Accept an array, {"verdicts": [...]} (or claims/results/items), a single verdict
    object, or a mapping claim id -> verdict (or -> verdict object)."""
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in _LIST_KEYS:
            if key in data and isinstance(data[key], list | dict):
                return _reply_items(data[key])
        if "verdict" in data:
            return [data]
        if data and all(isinstance(v, str | dict) for v in data.values()):
            return [
                {"id": k, **v} if isinstance(v, dict) else {"id": k, "verdict": v} for k, v in data.items()
            ]
    raise ReplyError(
        'expected a JSON object {"verdicts": [...]} or a JSON array of objects with "id" and "verdict"'
    )


def _validation_problems(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        out.append(f"verdicts{loc}: {msg}")
    return out


def parse_reply(
    content: str | None, claim_ids: Sequence[str], chunk_ids: Sequence[str] = ()
) -> list[ClaimVerdict]:
    """The verdicts of a reply, one per claim id in `claim_ids` order, or ReplyError.

    Evidence may name a chunk by its id or by the number it was shown with; anything
    else is an error, as is a missing, repeated or unknown claim id. Nothing is guessed.
    """
    text = strip_think(content or "")
    fence = fenced(text)
    if fence is not None:
        text = fence
    text = text.strip()
    if not text:
        raise ReplyError("the reply is empty")
    data = _json_value(text)
    try:
        items = _ITEMS.validate_python(_reply_items(data))
    except ValidationError as exc:
        raise ReplyError("; ".join(_validation_problems(exc)[:10])) from None

    problems: list[str] = []
    wanted = set(claim_ids)
    by_id: dict[str, _ReplyItem] = {}
    for it in items:
        if it.id not in wanted:
            problems.append(f"claim id {it.id!r} is not one of the listed claims")
        elif it.id in by_id:
            problems.append(f"claim id {it.id!r} appears more than once")
        else:
            by_id[it.id] = it
    missing = [c for c in claim_ids if c not in by_id]
    if missing:
        problems.append("no verdict for claim id(s) " + ", ".join(repr(c) for c in missing))

    known_chunks = list(chunk_ids)
    out: list[ClaimVerdict] = []
    for cid in claim_ids:
        given = by_id.get(cid)
        if given is None:
            continue
        evidence: list[str] = []
        for ev in given.evidence:
            if ev in known_chunks:
                evidence.append(ev)
            elif ev.strip().isdigit() and 1 <= int(ev) <= len(known_chunks):
                evidence.append(known_chunks[int(ev) - 1])
            else:
                problems.append(
                    f"claim {cid!r}: evidence {ev!r} names no chunk; chunk ids are "
                    + (", ".join(repr(c) for c in known_chunks) or "(none)")
                )
        out.append(
            ClaimVerdict(
                cid, given.verdict, given.raw_verdict, given.rationale, tuple(dict.fromkeys(evidence))
            )
        )
    if problems:
        raise ReplyError("; ".join(problems))
    return out


def correction_message(error: ReplyError | str) -> str:
    """The follow-up message of the corrective round: what was wrong, and the form wanted."""
    return (
        f"Your reply could not be used: {error}.\n"
        "Reply again with JSON only, exactly one verdict per listed claim id, in the form "
        '{"verdicts": [{"id": "<claim id>", "rationale": "...", "verdict": '
        '"SUPPORTED|CONTRADICTED|UNSUPPORTED", "evidence": ["<chunk id>"]}]}'
    )
