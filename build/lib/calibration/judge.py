"""Judge lab: re-run a judge prompt over stored claims through an OpenAI-compatible endpoint.

The only module of the package that speaks HTTP. Layers, each usable without the next:

1. prompt templates: versioned files, rendered by single-pass placeholder substitution;
2. reply parsing: the judge's JSON validated with pydantic against the fixed claim ids;
3. `ChatClient`: /v1/chat/completions over httpx with a concurrency bound, a hard
   per-request deadline and retries (exponential backoff with full jitter, Retry-After);
4. `judge_answer` / `judge_items`: one answer per call, one corrective round for a bad
   reply, results handed to a callback. Nothing above this line touches the database;
5. lab runs: a new judge run (origin 'lab') in the store, resumable per answer.

Why asyncio rather than threads: one event loop keeps N requests in flight without a
thread each; cancellation (Ctrl-C, Streamlit's stop button) reaches the requests that are
in flight; `asyncio.timeout` gives each request a hard wall-clock deadline; and the
progress callback runs on the caller's own thread, which Streamlit requires of `st.*`
calls. SQLite writes are blocking, so they go to one writer thread (an executor).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import re
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from sqlite_utils import Database

from . import store
from .errors import (
    CallFailed,
    ConflictError,
    EndpointRejected,
    EndpointUnreachable,
    InputError,
    JudgeError,
    NotFoundError,
    ReplyError,
)
from .fmt import plural
from .models import Verdict, parse_verdict

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
DEFAULT_TEMPLATE = "grounding-v1"
DEFAULT_API_KEY_ENV = "CALIBRATION_JUDGE_API_KEY"
LAB_ORIGIN = "lab"

# ---------------------------------------------------------------- prompt templates

PLACEHOLDERS: tuple[str, ...] = ("question", "chunks", "answer", "claims")
_PLACEHOLDER_RE = re.compile(r"\{(question|chunks|answer|claims)\}")
_VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    version: str
    text: str
    path: Path | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def check_template(text: str) -> None:
    """Refuse a template that would not show the judge everything it must see."""
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


def load_template(version: str, path: str | Path | None = None) -> PromptTemplate:
    """The template named `version`: read from `path`, else from calibration/prompts/VERSION.txt."""
    if not _VERSION_RE.match(version):
        raise InputError(f"prompt version {version!r}: use letters, digits, '.', '_' and '-'")
    if path is None:
        path = PROMPTS_DIR / f"{version}.txt"
        if not path.is_file():
            raise InputError(
                f"no template file for prompt version {version!r}; pass --prompt-file, "
                f"or use one of: {', '.join(available_templates()) or '(none)'}"
            )
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the prompt template ({exc})") from None
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
        raise InputError(f"{version!r} is the name of a shipped template and this text differs "
                         "from it; give the edited prompt its own version name")
    return PromptTemplate(version, text)


def render(template: str, values: Mapping[str, str]) -> str:
    """Substitute the four placeholders in one pass.

    Not `str.format`: the template's own JSON example has braces, and inserted text
    (questions, chunks, answers) is untrusted, so a `{claims}` inside a chunk must stay
    literal text. `re.sub` with a function neither rescans inserted text nor interprets
    backslashes in it.
    """
    return _PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], template)


@dataclass(frozen=True, slots=True)
class ChunkText:
    chunk_id: str
    text: str
    source: str | None = None


@dataclass(frozen=True, slots=True)
class ClaimText:
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
    if not chunks:
        return "(no chunks were retrieved)"
    parts = []
    for i, ch in enumerate(chunks, start=1):
        head = f"[{i}] id: {ch.chunk_id}" + (f" (source: {ch.source})" if ch.source else "")
        parts.append(f"{head}\n{ch.text}")
    return "\n\n".join(parts)


def format_claims(claims: Sequence[ClaimText]) -> str:
    # One JSON object per line: a claim text with newlines or quotes cannot blur into the
    # next claim or fake an id.
    return "\n".join(
        json.dumps({"id": c.claim_id, "text": c.text}, ensure_ascii=False) for c in claims
    )


def render_prompt(template: PromptTemplate | str, item: AnswerInput) -> str:
    text = template.text if isinstance(template, PromptTemplate) else template
    return render(text, {
        "question": item.question,
        "chunks": format_chunks(item.chunks),
        "answer": item.answer,
        "claims": format_claims(item.claims),
    })


# ---------------------------------------------------------------- reply parsing


@dataclass(frozen=True, slots=True)
class ClaimVerdict:
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
            data["evidence"] = [str(e) if isinstance(e, int) and not isinstance(e, bool) else e
                                for e in ev]
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
_FENCE_RE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)```", re.DOTALL)
_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_LIST_KEYS = ("verdicts", "claims", "results", "items")


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
            return [{"id": k, **v} if isinstance(v, dict) else {"id": k, "verdict": v}
                    for k, v in data.items()]
    raise ReplyError(
        'expected a JSON object {"verdicts": [...]} or a JSON array of objects with '
        '"id" and "verdict"'
    )


def _validation_problems(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        out.append(f"verdicts{loc}: {msg}")
    return out


def parse_reply(content: str | None, claim_ids: Sequence[str],
                chunk_ids: Sequence[str] = ()) -> list[ClaimVerdict]:
    """The verdicts of a reply, one per claim id in `claim_ids` order, or ReplyError.

    Evidence may name a chunk by its id or by the number it was shown with; anything
    else is an error, as is a missing, repeated or unknown claim id. Nothing is guessed.
    """
    text = _THINK_RE.sub("", content or "")
    fence = _FENCE_RE.search(text)
    if fence:
        text = fence.group(1)
    text = text.strip()
    if not text:
        raise ReplyError("the reply is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReplyError(
            f"the reply is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
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
        it = by_id.get(cid)
        if it is None:
            continue
        evidence: list[str] = []
        for ev in it.evidence:
            if ev in known_chunks:
                evidence.append(ev)
            elif ev.strip().isdigit() and 1 <= int(ev) <= len(known_chunks):
                evidence.append(known_chunks[int(ev) - 1])
            else:
                problems.append(f"claim {cid!r}: evidence {ev!r} names no chunk; chunk ids are "
                                + (", ".join(repr(c) for c in known_chunks) or "(none)"))
        out.append(ClaimVerdict(cid, it.verdict, it.raw_verdict, it.rationale,
                                tuple(dict.fromkeys(evidence))))
    if problems:
        raise ReplyError("; ".join(problems))
    return out


def correction_message(error: ReplyError | str) -> str:
    return (
        f"Your reply could not be used: {error}.\n"
        "Reply again with JSON only, exactly one verdict per listed claim id, in the form "
        '{"verdicts": [{"id": "<claim id>", "rationale": "...", "verdict": '
        '"SUPPORTED|CONTRADICTED|UNSUPPORTED", "evidence": ["<chunk id>"]}]}'
    )


# ---------------------------------------------------------------- HTTP core


@dataclass(frozen=True, slots=True)
class JudgeConfig:
    """Endpoint and call policy. The API key itself is never part of it (nor stored)."""

    base_url: str
    model: str
    api_key_env: str = DEFAULT_API_KEY_ENV
    temperature: float = 0.0  # seed 000: temperature 0 cuts run-to-run scatter
    timeout: float = 120.0  # seconds, the whole request (connect to last byte)
    concurrency: int = 4
    max_attempts: int = 5  # HTTP attempts per request (429 / 5xx / timeouts retried)
    # Attempts when no connection can be made at all (refused, unknown host, TLS failure):
    # that is not transient the way a 429 is, so after these the whole run stops.
    connect_attempts: int = 2
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    retry_after_max: float = 300.0  # a longer Retry-After is capped, not obeyed blindly
    max_tokens: int | None = None
    json_mode: bool = False  # response_format json_object: not every server has it

    def __post_init__(self) -> None:
        problems = []
        if not self.model.strip():
            problems.append("model is required")
        if urlsplit(self.base_url).scheme not in ("http", "https"):
            problems.append(f"base URL {self.base_url!r} must start with http:// or https://")
        if self.concurrency < 1:
            problems.append("concurrency must be at least 1")
        if self.timeout <= 0:
            problems.append("timeout must be positive")
        if self.max_attempts < 1:
            problems.append("max attempts must be at least 1")
        if self.connect_attempts < 1:
            problems.append("connect attempts must be at least 1")
        if problems:
            raise InputError(problems)

    @property
    def url(self) -> str:
        """The chat-completions URL; base URL with or without /v1, or the full URL."""
        base = self.base_url.rstrip("/")
        path = urlsplit(base).path
        if path.endswith("/chat/completions"):
            return base
        if path in ("", "/"):
            return base + "/v1/chat/completions"
        return base + "/chat/completions"

    def params(self) -> dict[str, Any]:
        """What is stored with a run: everything that shapes the calls, minus secrets."""
        return {k: v for k, v in asdict(self).items() if k not in ("base_url", "model")}


@dataclass(slots=True)
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None

    def add(self, other: Usage) -> None:
        for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
            theirs = getattr(other, name)
            if theirs is not None:
                setattr(self, name, (getattr(self, name) or 0) + theirs)

    @classmethod
    def from_response(cls, data: Any) -> Usage:
        u = data.get("usage") if isinstance(data, dict) else None
        if not isinstance(u, dict):
            return cls()

        def num(key: str) -> int | None:
            v = u.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) else None

        out = cls(num("prompt_tokens"), num("completion_tokens"), num("total_tokens"))
        if out.total_tokens is None and out.prompt_tokens is not None:
            out.total_tokens = out.prompt_tokens + (out.completion_tokens or 0)
        return out


@dataclass(slots=True)
class Completion:
    content: str | None
    finish_reason: str | None
    usage: Usage
    attempts: int
    log: list[dict[str, Any]]




def describe_connect_error(exc: BaseException) -> str:
    """Why a connection could not be made, in words: 'connection refused', 'unknown host ...',
    'TLS handshake failed ...'. httpx wraps the socket error; the cause chain holds it."""
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    for e in seen:
        if isinstance(e, ConnectionRefusedError):
            return "connection refused"
        if isinstance(e, socket.gaierror):
            return f"unknown host ({e.strerror or e})"
        if isinstance(e, ssl.SSLError):
            detail = getattr(e, "verify_message", None) or e.reason or str(e)
            return f"TLS handshake failed ({detail})"
    for e in seen:
        if isinstance(e, OSError) and e.strerror:
            return e.strerror[0].lower() + e.strerror[1:]
    return str(exc) or type(exc).__name__


RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
FATAL_STATUS = frozenset({401, 403, 404})


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delay-seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff_delay(attempt: int, base: float, cap: float, rnd: Callable[[], float] = random.random) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2**(attempt-1))], so clients that failed
    together do not retry together."""
    return rnd() * min(cap, base * 2 ** (attempt - 1))


def _snippet(text: str, n: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n] + "…"


class ChatClient:
    """OpenAI-compatible chat completions with bounded concurrency and retries.

    Use as `async with ChatClient(config) as client: await client.complete(messages)`.
    At most `config.concurrency` requests are in flight at once, whoever calls. A 429
    with Retry-After pauses every request of this client, not only the one that got it:
    the server is telling the client as a whole to slow down.
    """

    def __init__(self, config: JudgeConfig, *, transport: httpx.AsyncBaseTransport | None = None,
                 rnd: Callable[[], float] = random.random) -> None:
        self.config = config
        self._transport = transport
        self._rnd = rnd
        self._slots = asyncio.Semaphore(config.concurrency)
        self._paused_until = 0.0
        self._http: httpx.AsyncClient | None = None
        key = os.environ.get(config.api_key_env) if config.api_key_env else None
        self._headers = {"Content-Type": "application/json"}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"

    async def __aenter__(self) -> ChatClient:
        # Pool size = keep-alive size = the semaphore: no request ever waits inside httpcore's
        # pool and no idle connection is evicted, which keeps clear of the pool's quadratic
        # bookkeeping for queued requests (encode/httpcore#1035) and of its race that closes a
        # connection already handed to a queued request (encode/httpcore#1110).
        n = self.config.concurrency
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(self.config.timeout),
            limits=httpx.Limits(max_connections=n, max_keepalive_connections=n),
            transport=self._transport,
            # Environment proxies would route a local vLLM/Ollama through a corporate proxy.
            trust_env=False,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def body(self, messages: Sequence[Mapping[str, str]]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": list(messages),
            "temperature": self.config.temperature,
        }
        if self.config.max_tokens is not None:
            body["max_tokens"] = self.config.max_tokens
        if self.config.json_mode:
            body["response_format"] = {"type": "json_object"}
        return body

    async def _wait_for_pause(self) -> None:
        loop = asyncio.get_running_loop()
        while (left := self._paused_until - loop.time()) > 0:
            await asyncio.sleep(left)

    async def complete(self, messages: Sequence[Mapping[str, str]]) -> Completion:
        if self._http is None:
            raise RuntimeError("use ChatClient inside `async with`")
        cfg = self.config
        body = self.body(messages)
        loop = asyncio.get_running_loop()
        log: list[dict[str, Any]] = []
        connect_failures = 0
        for attempt in range(1, cfg.max_attempts + 1):
            await self._wait_for_pause()
            entry: dict[str, Any] = {"attempt": attempt, "status": None}
            retry_after: float | None = None
            unreachable: str | None = None
            async with self._slots:
                t0 = time.perf_counter()
                try:
                    # httpx's timeout is per read; this one bounds the whole request, so a
                    # server trickling bytes cannot hold a slot forever.
                    async with asyncio.timeout(cfg.timeout):
                        resp = await self._http.post(cfg.url, json=body, headers=self._headers)
                except (TimeoutError, httpx.TimeoutException):
                    entry["error"] = f"timeout after {cfg.timeout:g} s"
                    resp = None
                except httpx.ConnectError as exc:
                    unreachable = describe_connect_error(exc)
                    entry["error"] = f"cannot connect: {unreachable}"
                    resp = None
                except httpx.TransportError as exc:
                    entry["error"] = f"{type(exc).__name__}: {exc}"
                    resp = None
                entry["ms"] = round((time.perf_counter() - t0) * 1000, 1)
            log.append(entry)
            if unreachable is not None:
                connect_failures += 1
                if connect_failures >= cfg.connect_attempts or attempt == cfg.max_attempts:
                    raise EndpointUnreachable(f"cannot connect to {cfg.base_url}: {unreachable}")
            if resp is not None:
                entry["status"] = resp.status_code
                if resp.status_code == 200:
                    try:
                        data = resp.json()
                        choice = data["choices"][0]
                        content = choice["message"].get("content")
                        if content is not None and not isinstance(content, str):
                            raise TypeError("message.content is not a string")
                    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
                        # A gateway answering 200 with an HTML page is a transient fault, not
                        # the model's reply: retried like a 5xx.
                        entry["error"] = f"unexpected response body ({exc}): {_snippet(resp.text)}"
                    else:
                        return Completion(content, choice.get("finish_reason"),
                                          Usage.from_response(data), attempt, log)
                else:
                    entry["error"] = f"HTTP {resp.status_code}: {_snippet(resp.text)}"
                    if resp.status_code in FATAL_STATUS:
                        raise EndpointRejected(
                            f"{cfg.url} refused the request with HTTP {resp.status_code} "
                            f"(check --base-url, --model and the API key in ${cfg.api_key_env}): "
                            f"{_snippet(resp.text)}")
                    if resp.status_code not in RETRYABLE_STATUS and resp.status_code < 500:
                        raise CallFailed(entry["error"], attempts=attempt, log=log)
                    retry_after = parse_retry_after(resp.headers.get("Retry-After"))
            if attempt == cfg.max_attempts:
                break
            if retry_after is not None:
                delay = min(retry_after, cfg.retry_after_max) + self._rnd() * min(cfg.backoff_base, 1.0)
                if entry["status"] == 429:
                    self._paused_until = max(self._paused_until, loop.time() + delay)
            else:
                # A refused connection gets one short retry (a server restarting), not minutes.
                cap = min(cfg.backoff_max, 1.0) if unreachable is not None else cfg.backoff_max
                delay = backoff_delay(attempt, cfg.backoff_base, cap, self._rnd)
            entry["wait_s"] = round(delay, 3)
            await asyncio.sleep(delay)
        raise CallFailed(f"{log[-1].get('error')} (gave up after {plural(len(log), 'attempt')})",
                         attempts=len(log), log=log)


# ---------------------------------------------------------------- one answer, many answers


@dataclass(slots=True)
class AnswerResult:
    answer_id: str
    status: Literal["ok", "failed"]
    prompt: str
    response: str | None
    exchanges: list[dict[str, Any]]
    attempts: int
    error: str | None
    usage: Usage
    latency_ms: float
    verdicts: list[ClaimVerdict] = field(default_factory=list)


async def judge_answer(client: ChatClient, template: PromptTemplate | str,
                       item: AnswerInput) -> AnswerResult:
    """Judge one answer's fixed claims: a call, and one corrective call if the reply is bad.

    A bad second reply, or a request that fails for good, is a failed result with no
    verdicts. EndpointRejected and EndpointUnreachable propagate: they are the run's problem,
    not this answer's.
    """
    t0 = time.perf_counter()
    prompt = render_prompt(template, item)
    claim_ids = [c.claim_id for c in item.claims]
    chunk_ids = [c.chunk_id for c in item.chunks]
    messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
    exchanges: list[dict[str, Any]] = []
    usage = Usage()
    attempts = 0
    response: str | None = None

    def result(status: Literal["ok", "failed"], error: str | None,
               verdicts: list[ClaimVerdict] | None = None) -> AnswerResult:
        return AnswerResult(item.answer_id, status, prompt, response, exchanges, attempts, error,
                            usage, round((time.perf_counter() - t0) * 1000, 1), verdicts or [])

    for round_no in (1, 2):
        sent = messages[-1]["content"] if round_no > 1 else None
        try:
            comp = await client.complete(messages)
        except CallFailed as exc:
            attempts += exc.attempts
            exchanges.append({"round": round_no, "sent": sent, "http": exc.log, "error": str(exc)})
            return result("failed", str(exc))
        attempts += comp.attempts
        usage.add(comp.usage)
        response = comp.content
        entry: dict[str, Any] = {"round": round_no, "sent": sent, "http": comp.log,
                                 "response": comp.content, "finish_reason": comp.finish_reason}
        exchanges.append(entry)
        try:
            verdicts = parse_reply(comp.content, claim_ids, chunk_ids)
        except ReplyError as exc:
            entry["error"] = str(exc)
            if round_no == 1:
                messages += [{"role": "assistant", "content": comp.content or ""},
                             {"role": "user", "content": correction_message(exc)}]
                continue
            return result("failed", f"invalid reply after a corrective retry: {exc}")
        return result("ok", None, verdicts)
    raise AssertionError("unreachable")


async def judge_items(client: ChatClient, template: PromptTemplate | str, items: Iterable[AnswerInput],
                      on_result: Callable[[AnswerInput, AnswerResult], Awaitable[None]]) -> None:
    """Judge every item with `client.config.concurrency` workers, awaiting `on_result` for each.

    Workers pull from one iterator, so prompts are rendered only when a slot frees up. An
    exception from a worker or from `on_result` (including Streamlit's stop, a
    BaseException) cancels the rest and is re-raised; results already handed over stay.
    """
    it = iter(items)

    async def worker() -> None:
        for item in it:
            res = await judge_answer(client, template, item)
            await on_result(item, res)

    tasks = [asyncio.create_task(worker()) for _ in range(client.config.concurrency)]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for t in done:
        if not t.cancelled() and (exc := t.exception()) is not None:
            raise exc


# ---------------------------------------------------------------- lab runs (the database side)


@dataclass(frozen=True, slots=True)
class Scope:
    kind: Literal["labeled", "cycle", "all"]
    cycle: str | None = None

    def __str__(self) -> str:
        return f"cycle:{self.cycle}" if self.kind == "cycle" else self.kind


def parse_scope(text: str) -> Scope:
    text = text.strip()
    if text in ("labeled", "all"):
        return Scope(text)  # type: ignore[arg-type]
    if text.startswith("cycle:") and text[6:].strip():
        return Scope("cycle", text[6:].strip())
    raise InputError(f"scope {text!r}: use labeled, all or cycle:NAME")


def scope_answer_ids(db: Database, scope: Scope) -> list[str]:
    """Answers in scope that have claims. Each answer is judged on all its claims: a call
    is keyed by answer, so its prompt must not depend on which scope asked for it."""
    if scope.kind == "labeled":
        sql = """SELECT DISTINCT c.answer_id FROM claims c
                 JOIN human_labels h ON h.claim_pk = c.id AND h.status = 'labeled'
                 ORDER BY c.answer_id"""
        return [r[0] for r in db.execute(sql)]
    if scope.kind == "cycle":
        row = db.execute("SELECT id FROM cycles WHERE name = ?", [scope.cycle]).fetchone()
        if row is None:
            raise NotFoundError(f"no cycle named {scope.cycle!r}")
        sql = """SELECT ca.answer_id FROM cycle_answers ca WHERE ca.cycle_id = ?
                 AND EXISTS (SELECT 1 FROM claims c WHERE c.answer_id = ca.answer_id)
                 ORDER BY ca.position"""
        return [r[0] for r in db.execute(sql, [row[0]])]
    return [r[0] for r in db.execute("SELECT DISTINCT answer_id FROM claims ORDER BY answer_id")]


def load_inputs(db: Database, answer_ids: Sequence[str]) -> list[AnswerInput]:
    out = []
    for aid in answer_ids:
        question, answer = db.execute(
            "SELECT question, answer FROM answers WHERE id = ?", [aid]).fetchone()
        chunks = tuple(ChunkText(*r) for r in db.execute(
            "SELECT chunk_id, text, source FROM chunks WHERE answer_id = ? ORDER BY position", [aid]))
        claims = tuple(ClaimText(*r) for r in db.execute(
            "SELECT id, claim_id, text FROM claims WHERE answer_id = ? ORDER BY position, id", [aid]))
        out.append(AnswerInput(aid, question, answer, chunks, claims))
    return out


def _get_run(db: Database, run_id: int) -> store.JudgeRun:
    row = db.execute("SELECT id, judge_model, prompt_version, origin, created_at FROM judge_runs "
                     "WHERE id = ?", [run_id]).fetchone()
    return store.JudgeRun(*row)


def _resumable_run_id(db: Database, config: JudgeConfig, template: PromptTemplate) -> int | None:
    """The id of the lab run MODEL@VERSION if it exists and may be resumed with this template;
    None if there is no such run; ConflictError if the name is taken otherwise.

    A version name stands for one template text: resuming with an edited template would
    mix two prompts in one run, so it is refused.
    """
    row = db.execute("SELECT id, origin FROM judge_runs WHERE judge_model = ? AND "
                     "prompt_version = ?", [config.model, template.version]).fetchone()
    if row is None:
        return None
    run_id, origin = row
    lab = db.execute("SELECT template_sha256 FROM judge_lab_runs WHERE run_id = ?",
                     [run_id]).fetchone()
    if origin != LAB_ORIGIN or lab is None:
        raise ConflictError(
            f"judge run {config.model}@{template.version} already exists (origin "
            f"{origin!r}) and was not made by the judge lab; choose another prompt version")
    if lab[0] != template.sha256:
        raise ConflictError(
            f"judge run {config.model}@{template.version} was made with a different "
            "prompt text; an edited prompt needs a new version name")
    return run_id


def find_lab_run(db: Database, config: JudgeConfig, template: PromptTemplate) -> store.JudgeRun | None:
    """The lab run MODEL@VERSION to resume, or None; writes nothing (see `_resumable_run_id`)."""
    run_id = _resumable_run_id(db, config, template)
    return None if run_id is None else _get_run(db, run_id)


def open_lab_run(db: Database, config: JudgeConfig, template: PromptTemplate,
                 scope: Scope) -> tuple[store.JudgeRun, bool]:
    """Create the lab run MODEL@VERSION, or take it up again. Returns (run, resumed).

    `arun_lab` calls this when the first result is stored, not before the first request:
    a run that gets nothing back (an unreachable endpoint) leaves no judge run behind.
    """
    with store.write(db):
        run_id = _resumable_run_id(db, config, template)
        ts = store.now()
        if run_id is not None:
            # The latest endpoint and parameters are kept: resuming after moving the server
            # is legitimate, and the template (what matters for the verdicts) is unchanged.
            db.execute("UPDATE judge_lab_runs SET base_url = ?, params = ?, scope = ?, "
                       "finished_at = NULL WHERE run_id = ?",
                       [config.base_url, json.dumps(config.params()), str(scope), run_id])
            return _get_run(db, run_id), True
        cur = db.execute("INSERT INTO judge_runs (judge_model, prompt_version, origin, created_at) "
                         "VALUES (?, ?, ?, ?)", [config.model, template.version, LAB_ORIGIN, ts])
        run_id = cur.lastrowid
        db.execute("""INSERT INTO judge_lab_runs (run_id, template, template_sha256, base_url,
                      params, scope, started_at) VALUES (?, ?, ?, ?, ?, ?, ?)""",
                   [run_id, template.text, template.sha256, config.base_url,
                    json.dumps(config.params()), str(scope), ts])
        return _get_run(db, run_id), False


def ok_answer_ids(db: Database, run_id: int) -> set[str]:
    return {r[0] for r in db.execute(
        "SELECT answer_id FROM judge_calls WHERE run_id = ? AND status = 'ok'", [run_id])}


def record_result(db: Database, run_id: int, item: AnswerInput, res: AnswerResult) -> int:
    """Store one answer's call and, if ok, its verdicts, in one transaction; returns the
    number of verdicts written."""
    pks = {c.claim_id: c.claim_pk for c in item.claims}
    u = res.usage
    with store.write(db):
        # Never downgrade: if another process already stored an ok call, keep it.
        cur = db.execute(
            """INSERT INTO judge_calls (run_id, answer_id, status, prompt, response, exchanges,
                   attempts, error, prompt_tokens, completion_tokens, total_tokens, latency_ms,
                   created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)
               ON CONFLICT (run_id, answer_id) DO UPDATE SET status = excluded.status,
                   prompt = excluded.prompt, response = excluded.response,
                   exchanges = excluded.exchanges, attempts = excluded.attempts,
                   error = excluded.error, prompt_tokens = excluded.prompt_tokens,
                   completion_tokens = excluded.completion_tokens,
                   total_tokens = excluded.total_tokens, latency_ms = excluded.latency_ms,
                   created_at = excluded.created_at
               WHERE judge_calls.status != 'ok'""",
            [run_id, item.answer_id, res.status, res.prompt, res.response,
             json.dumps(res.exchanges, ensure_ascii=False), res.attempts, res.error,
             u.prompt_tokens, u.completion_tokens, u.total_tokens, res.latency_ms, store.now()])
        db.execute(
            """UPDATE judge_lab_runs SET
                 prompt_tokens = CASE WHEN ?1 IS NULL THEN prompt_tokens
                                      ELSE coalesce(prompt_tokens, 0) + ?1 END,
                 completion_tokens = CASE WHEN ?2 IS NULL THEN completion_tokens
                                          ELSE coalesce(completion_tokens, 0) + ?2 END,
                 total_tokens = CASE WHEN ?3 IS NULL THEN total_tokens
                                     ELSE coalesce(total_tokens, 0) + ?3 END
               WHERE run_id = ?4""",
            [u.prompt_tokens, u.completion_tokens, u.total_tokens, run_id])
        if res.status != "ok" or cur.rowcount == 0:
            return 0
        db.conn.executemany(
            """INSERT INTO judge_verdicts (run_id, claim_pk, verdict, raw_verdict, rationale,
                   evidence) VALUES (?,?,?,?,?,?)
               ON CONFLICT (run_id, claim_pk) DO UPDATE SET verdict = excluded.verdict,
                   raw_verdict = excluded.raw_verdict, rationale = excluded.rationale,
                   evidence = excluded.evidence""",
            [(run_id, pks[v.claim_id], v.verdict.value, v.raw_verdict, v.rationale,
              json.dumps(list(v.evidence), ensure_ascii=False)) for v in res.verdicts])
        return len(res.verdicts)


@dataclass(frozen=True, slots=True)
class Progress:
    """Handed to the progress callback after each answer is stored."""

    done: int
    total: int
    ok: int
    failed: int
    claims: int
    tokens: int | None
    elapsed_s: float

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


@dataclass(frozen=True, slots=True)
class RunTotals:
    """State of a lab run over all its invocations."""

    answers_ok: int
    answers_failed: int
    claims_judged: int
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None


@dataclass(frozen=True, slots=True)
class LabSummary:
    run: store.JudgeRun
    resumed: bool
    scope: str
    answers_in_scope: int
    answers_skipped: int  # already judged ok by an earlier invocation: not requested again
    answers_ok: int
    answers_failed: int
    claims_judged: int
    usage: Usage  # this invocation
    totals: RunTotals  # the whole run
    elapsed_s: float
    failures: list[tuple[str, str]]  # (answer id, error) of this invocation
    baseline: store.JudgeRun | None = None  # None: the run has no verdicts, or no run shares any
    comparison: LabComparison | None = None  # None: no claim judged by both and labeled


def run_totals(db: Database, run_id: int) -> RunTotals:
    ok, failed = db.execute(
        "SELECT count(CASE WHEN status = 'ok' THEN 1 END), count(CASE WHEN status = 'failed' "
        "THEN 1 END) FROM judge_calls WHERE run_id = ?", [run_id]).fetchone()
    claims = db.execute("SELECT count(*) FROM judge_verdicts WHERE run_id = ?", [run_id]).fetchone()[0]
    tok = db.execute("SELECT prompt_tokens, completion_tokens, total_tokens FROM judge_lab_runs "
                     "WHERE run_id = ?", [run_id]).fetchone() or (None, None, None)
    return RunTotals(ok, failed, claims, *tok)


def lab_runs(db: Database) -> list[store.JudgeRun]:
    """Every lab run, oldest first, including one whose calls all failed so far.

    `store.judge_runs` leaves such a run out (nothing to show or compare); the lab lists it
    so that its failed calls can be inspected and the run resumed.
    """
    rows = db.execute("SELECT id, judge_model, prompt_version, origin, created_at FROM judge_runs "
                      "WHERE origin = ? ORDER BY id", [LAB_ORIGIN]).fetchall()
    return [store.JudgeRun(*r) for r in rows]


def cycle_names(db: Database) -> list[str]:
    """Names of the cycles, newest first: the scopes a comparison can be limited to."""
    return [r[0] for r in db.execute("SELECT name FROM cycles ORDER BY id DESC")]


def _cycle_id(db: Database, name: str) -> int:
    row = db.execute("SELECT id FROM cycles WHERE name = ?", [name]).fetchone()
    if row is None:
        raise NotFoundError(f"no cycle named {name!r}")
    return row[0]


@dataclass(frozen=True, slots=True)
class BaselineOption:
    """A run that can serve as the baseline of `run`, and how many claims they share."""

    run: store.JudgeRun
    shared: int  # human-labeled claims judged by both runs (within the cycle, if one is given)

    @property
    def label(self) -> str:
        return f"{self.run.name} · {plural(self.shared, 'shared labeled claim')}"


def baseline_options(db: Database, run: store.JudgeRun, cycle: str | None = None) -> list[BaselineOption]:
    """The runs sharing human-labeled claims with `run` (within `cycle`), best baseline first.

    Best: the most shared labeled claims, since a comparison on a handful of claims says
    nothing. Ties go to the cycle's own judge run (within a cycle), then to the most recently
    imported run (the pipeline's judge, as `store.find_judge_run` defaults to), then to the
    most recent lab run.
    """
    params: dict[str, Any] = {"run": run.id}
    cycle_join, cycle_run = "", None
    if cycle is not None:
        params["cycle"] = _cycle_id(db, cycle)
        cycle_join = ("JOIN claims c ON c.id = va.claim_pk JOIN cycle_answers ca "
                      "ON ca.answer_id = c.answer_id AND ca.cycle_id = :cycle")
        cycle_run = db.execute("SELECT judge_run_id FROM cycles WHERE id = ?",
                               [params["cycle"]]).fetchone()[0]
    shared = dict(db.execute(
        f"""SELECT vb.run_id, count(*) FROM judge_verdicts va
            JOIN judge_verdicts vb ON vb.claim_pk = va.claim_pk AND vb.run_id != va.run_id
            {cycle_join}
            WHERE va.run_id = :run AND EXISTS (SELECT 1 FROM human_labels h
                  WHERE h.claim_pk = va.claim_pk AND h.status = 'labeled')
            GROUP BY vb.run_id""", params).fetchall())
    options = [BaselineOption(r, shared[r.id]) for r in store.judge_runs(db) if shared.get(r.id)]
    options.sort(key=lambda o: (o.shared, o.run.id == cycle_run, o.run.origin == "import", o.run.id),
                 reverse=True)
    return options


def default_baseline(db: Database, run: store.JudgeRun, cycle: str | None = None) -> store.JudgeRun | None:
    """The run to compare against: the one sharing the most human-labeled claims with `run`
    (see `baseline_options`); None when no run shares any."""
    options = baseline_options(db, run, cycle)
    return options[0].run if options else None


def paired_claims(db: Database, run_a: store.JudgeRun, run_b: store.JudgeRun,
                  cycle: str | None = None) -> tuple[list[Any], int]:
    """Claims judged by both runs (within `cycle`, if given) that have a final human label,
    as agreement.PairedClaim; and the number left out because reviewers disagree and nobody
    adjudicated.

    The final label is the one everywhere else uses (agreement.final_human_label): the
    adjudication, else unresolved if a reviewer marked the claim unclear, else the reviewers'
    unanimous final verdict.
    """
    from . import agreement  # scipy: imported only when a comparison is asked for

    params: list[Any] = [run_a.id, run_b.id]
    cycle_join = ""
    if cycle is not None:
        cycle_join = "JOIN cycle_answers ca ON ca.answer_id = cl.answer_id AND ca.cycle_id = ?"
        params.append(_cycle_id(db, cycle))
    rows = db.execute(
        f"""SELECT cl.answer_id, cl.claim_id, va.verdict, vb.verdict,
                  (SELECT json_group_array(h.final_verdict) FROM human_labels h
                   WHERE h.claim_pk = cl.id AND h.status = 'labeled'
                     AND h.final_verdict IS NOT NULL),
                  (SELECT d.verdict FROM adjudications d WHERE d.claim_pk = cl.id),
                  EXISTS (SELECT 1 FROM human_labels u WHERE u.claim_pk = cl.id AND u.status = 'unclear')
           FROM claims cl
           JOIN judge_verdicts va ON va.claim_pk = cl.id AND va.run_id = ?
           JOIN judge_verdicts vb ON vb.claim_pk = cl.id AND vb.run_id = ?
           {cycle_join}
           ORDER BY cl.answer_id, cl.position""",
        params).fetchall()
    items, unresolved = [], 0
    for aid, cid, a, b, labels_json, adjudicated, unclear in rows:
        labels = json.loads(labels_json) if labels_json else []
        final = agreement.final_human_label(labels, adjudicated, unclear=bool(unclear))
        if final is not None:
            items.append(agreement.PairedClaim(aid, f"{aid}/{cid}", final, a, b))
        elif labels or unclear:
            unresolved += 1
    return items, unresolved


@dataclass(frozen=True, slots=True)
class LabComparison:
    """The new run (b) against the baseline (a) on the claims both judged and humans labeled."""

    baseline: str
    run: str
    unresolved: int  # labeled claims left out: reviewers disagree, no adjudication
    result: Any  # agreement.RunComparison
    cycle: str | None = None  # the comparison is limited to this cycle's claims

    @property
    def scope_text(self) -> str:
        """On what the comparison was made, as a phrase: 'N human-labeled claims ...'."""
        where = f" in cycle {self.cycle}" if self.cycle is not None else ""
        return (f"{plural(self.result.n_claims, 'human-labeled claim')} judged by both runs{where}")

    def to_dict(self) -> dict[str, Any]:
        return {**self.result.to_dict(self.baseline, self.run), "unresolved_claims": self.unresolved,
                "cycle": self.cycle}


def compare_runs(db: Database, run: store.JudgeRun, baseline: store.JudgeRun,
                 cycle: str | None = None) -> LabComparison | None:
    """The paired comparison (agreement.compare_judge_runs) on the human-labeled claims both
    runs judged, within `cycle` if given; None when no claim pairs up."""
    from . import agreement

    items, unresolved = paired_claims(db, baseline, run, cycle)
    if not items:
        return None
    return LabComparison(baseline.name, run.name, unresolved, agreement.compare_judge_runs(items),
                         cycle)


def failure_groups(failures: Sequence[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """(error, sorted answer ids) with the answers that failed alike grouped, most frequent
    first: a hundred answers failing with one error is one line, not a hundred."""
    groups: dict[str, list[str]] = {}
    for aid, err in failures:
        groups.setdefault(err, []).append(aid)
    return sorted(((err, sorted(aids)) for err, aids in groups.items()), key=lambda g: -len(g[1]))


async def arun_lab(config: JudgeConfig, template: PromptTemplate, *, scope: Scope | str = "labeled",
                   db_path: str | Path | None = None,
                   progress: Callable[[Progress], None] | None = None,
                   baseline: str | None = None,
                   transport: httpx.AsyncBaseTransport | None = None) -> LabSummary:
    """Run (or resume) the lab run MODEL@VERSION over the answers in scope.

    Answers that already have an ok call in this run are not requested again; failed ones
    are. Each answer is committed as soon as it is judged, so an interruption loses at most
    the calls in flight. `progress` runs on the caller's thread after each answer; an
    exception from it stops the run (that is how a UI cancels).

    An endpoint that cannot be reached (EndpointUnreachable, after a short retry) or that
    refuses the requests (EndpointRejected) stops the whole run; what was stored stays. The
    run is created only when its first result is stored, so a run stopped before that leaves
    no empty judge run behind. The comparison (default baseline: `default_baseline`) is made
    only when the run has verdicts.
    """
    t0 = time.perf_counter()
    scope = parse_scope(scope) if isinstance(scope, str) else scope
    db_path = Path(db_path) if db_path is not None else store.default_db_path()
    with store.session(db_path) as db:
        # Checked before any request, so a typo in the scope or a taken name costs nothing.
        answer_ids = scope_answer_ids(db, scope)
        if not answer_ids:
            hint = " (no claim has a human label yet)" if scope.kind == "labeled" else ""
            raise InputError(f"scope {scope} holds no answers with claims{hint}; nothing to judge")
        base_run = store.find_judge_run(db, baseline) if baseline else None
        existing = find_lab_run(db, config, template)
        if base_run is not None and existing is not None and base_run.id == existing.id:
            raise InputError(f"the baseline {baseline!r} is the run itself; name another run")
        done_before = ok_answer_ids(db, existing.id) if existing is not None else set()
        pending = [a for a in answer_ids if a not in done_before]
        items = load_inputs(db, pending)

    usage = Usage()
    counts = {"ok": 0, "failed": 0, "claims": 0}
    failures: list[tuple[str, str]] = []
    # One writer thread owning one connection for the whole run: connections are never
    # shared between threads (store's rule), and reopening one per answer is what costs:
    # closing the last connection of a WAL database checkpoints it (milliseconds per answer).
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge-writer")
    writer_db: list[Database] = []
    opened: list[store.JudgeRun] = []  # the run, once the first result has been stored
    stored = [0]  # answers stored by this invocation, counted by the writer itself

    def write(item: AnswerInput, res: AnswerResult) -> int:
        if not writer_db:
            writer_db.append(store.connect(db_path))
        wdb = writer_db[0]
        with store.write(wdb):  # the run is created in the transaction storing its first call
            if not opened:
                opened.append(open_lab_run(wdb, config, template, scope)[0])
            written = record_result(wdb, opened[0].id, item, res)
        stored[0] += 1
        return written

    def close_writer() -> None:
        for wdb in writer_db:
            wdb.conn.close()

    def report() -> None:
        if progress is not None:
            progress(Progress(counts["ok"] + counts["failed"], len(items), counts["ok"],
                              counts["failed"], counts["claims"], usage.total_tokens,
                              time.perf_counter() - t0))

    async def on_result(item: AnswerInput, res: AnswerResult) -> None:
        loop = asyncio.get_running_loop()
        written = await loop.run_in_executor(writer, write, item, res)
        usage.add(res.usage)
        counts[res.status] += 1
        counts["claims"] += written
        if res.error:
            failures.append((item.answer_id, res.error))
        report()

    report()
    stop: EndpointUnreachable | EndpointRejected | None = None
    try:
        if items:
            async with ChatClient(config, transport=transport) as client:
                await judge_items(client, template, items, on_result)
    except (EndpointUnreachable, EndpointRejected) as exc:
        stop = exc
        raise
    finally:
        # Waits for a write already handed over, so an interrupted run keeps it.
        writer.submit(close_writer)
        writer.shutdown(wait=True)
        if stop is not None:
            stop.answers_stored = stored[0]

    run = opened[0] if opened else existing
    if run is None:  # not reached: a new run has pending answers, and each stores a result
        raise JudgeError("no answer was judged")
    with store.session(db_path) as db:
        with store.write(db):
            db.execute("UPDATE judge_lab_runs SET finished_at = ? WHERE run_id = ?",
                       [store.now(), run.id])
        totals = run_totals(db, run.id)
        comparison = None
        if totals.claims_judged == 0:
            base_run = None  # every call failed: there is nothing to compare
        else:
            cycle = scope.cycle if scope.kind == "cycle" else None
            if base_run is None:
                base_run = default_baseline(db, run, cycle)
            if base_run is not None and base_run.id != run.id:
                comparison = compare_runs(db, run, base_run, cycle)
    return LabSummary(run, existing is not None, str(scope), len(answer_ids),
                      len(answer_ids) - len(pending), counts["ok"], counts["failed"],
                      counts["claims"], usage, totals, time.perf_counter() - t0, failures, base_run,
                      comparison)


def run_lab(config: JudgeConfig, template: PromptTemplate, **kwargs: Any) -> LabSummary:
    """Blocking `arun_lab` for the CLI and Streamlit (whose script thread has no event loop)."""
    return asyncio.run(arun_lab(config, template, **kwargs))


# ---------------------------------------------------------------- reads for the UI


@dataclass(frozen=True, slots=True)
class RunPlan:
    answers: int  # answers in scope
    claims: int  # their claims (each answer is judged on all of them)
    already_ok: int  # answers the run MODEL@VERSION has judged already: not requested again


def plan_run(db: Database, model: str, version: str, scope: Scope | str = "labeled") -> RunPlan:
    scope = parse_scope(scope) if isinstance(scope, str) else scope
    ids = scope_answer_ids(db, scope)
    claims = 0
    if ids:
        marks = ",".join("?" * len(ids))
        claims = db.execute(f"SELECT count(*) FROM claims WHERE answer_id IN ({marks})", ids).fetchone()[0]
    row = db.execute("SELECT id FROM judge_runs WHERE judge_model = ? AND prompt_version = ?",
                     [model, version]).fetchone()
    done = len(ok_answer_ids(db, row[0]) & set(ids)) if row else 0
    return RunPlan(len(ids), claims, done)


def lab_run_overview(db: Database) -> list[dict[str, Any]]:
    """One row per lab run, newest first: its counts, tokens and endpoint."""
    rows = []
    for run in reversed(lab_runs(db)):
        t = run_totals(db, run.id)
        base_url, scope, started, finished = db.execute(
            "SELECT base_url, scope, started_at, finished_at FROM judge_lab_runs WHERE run_id = ?",
            [run.id]).fetchone()
        rows.append({"run": run.name, "answers ok": t.answers_ok, "answers failed": t.answers_failed,
                     "claims judged": t.claims_judged, "tokens": t.total_tokens, "scope": scope,
                     "endpoint": base_url, "started": started, "finished": finished})
    return rows


def lab_template(db: Database, run: store.JudgeRun) -> str | None:
    row = db.execute("SELECT template FROM judge_lab_runs WHERE run_id = ?", [run.id]).fetchone()
    return row[0] if row else None


def call_answer_ids(db: Database, run: store.JudgeRun, *, failed_only: bool = False) -> list[str]:
    sql = "SELECT answer_id FROM judge_calls WHERE run_id = ?"
    if failed_only:
        sql += " AND status = 'failed'"
    return [r[0] for r in db.execute(sql + " ORDER BY answer_id", [run.id])]


def get_call(db: Database, run: store.JudgeRun, answer_id: str) -> dict[str, Any] | None:
    """The stored call: the prompt exactly as sent, the raw reply, every round and attempt."""
    rows = list(db.query("SELECT * FROM judge_calls WHERE run_id = ? AND answer_id = ?",
                         [run.id, answer_id]))
    if not rows:
        return None
    call = rows[0]
    call["exchanges"] = json.loads(call["exchanges"])
    return call


# ---------------------------------------------------------------- CLI


def format_progress(p: Progress) -> str:
    tokens = f" · {p.tokens:,} tokens" if p.tokens is not None else ""
    return (f"judged {p.done}/{p.total} answers · ok {p.ok} · failed {p.failed} · "
            f"{p.claims} claims{tokens} · {p.elapsed_s:.0f} s")


def summary_lines(s: LabSummary) -> list[str]:
    """The run summary as text lines, for the CLI (and any plain-text report)."""
    lines = [
        f"run {s.run.name} ({'resumed' if s.resumed else 'new'}), scope {s.scope}: "
        f"{plural(s.answers_in_scope, 'answer')} in scope, {s.answers_skipped} already judged",
        f"this invocation: answers ok {s.answers_ok}, failed {s.answers_failed}; "
        f"claims judged {s.claims_judged}; {s.elapsed_s:.1f} s",
    ]
    u, t = s.usage, s.totals
    if t.total_tokens is None:
        lines.append("tokens: not reported by the endpoint")
    else:
        lines.append(f"tokens this invocation: {u.total_tokens or 0:,} "
                     f"(prompt {u.prompt_tokens or 0:,}, completion {u.completion_tokens or 0:,}); "
                     f"whole run: {t.total_tokens:,}")
    lines.append(f"whole run: answers ok {t.answers_ok}, failed {t.answers_failed}, "
                 f"claims judged {t.claims_judged}")
    groups = failure_groups(s.failures)
    for err, aids in groups[:10]:
        who = aids[0] if len(aids) == 1 else (
            f"{plural(len(aids), 'answer')} ({', '.join(aids[:5])}{', …' if len(aids) > 5 else ''})")
        lines.append(f"  failed {who}: {_snippet(err, 200)}")
    if len(groups) > 10:
        rest = sum(len(aids) for _, aids in groups[10:])
        lines.append(f"  ... and {plural(rest, 'more answer')} with other errors (see judge_calls)")
    if s.comparison is not None:
        c = s.comparison.result
        where = f" in cycle {s.comparison.cycle}" if s.comparison.cycle is not None else ""
        lines.append(f"against {s.comparison.baseline} on {plural(c.n_claims, 'human-labeled claim')}"
                     f" judged by both runs{where}"
                     + (f" ({s.comparison.unresolved} unresolved left out)" if s.comparison.unresolved
                        else "") + ":")
        for name, est, kap in ((s.comparison.baseline, c.agreement_a, c.kappa_a),
                               (s.comparison.run, c.agreement_b, c.kappa_b)):
            lines.append(f"  {name}: agreement {_pct(est.value)}{_ci(est)}, kappa {_num(kap.value)}")
        p = c.mcnemar.p_two_sided
        lines.append(f"  only the new run right on {plural(len(c.only_b_right), 'claim')}, only the "
                     f"baseline on {plural(len(c.only_a_right), 'claim')}; exact McNemar p = {_num(p)}")
    elif t.claims_judged == 0:
        lines.append("the run has no verdicts yet (every answer failed): nothing to compare")
    elif s.baseline is not None:
        lines.append(f"no human-labeled claim judged by both this run and {s.baseline.name}: "
                     "nothing to compare")
    else:
        lines.append("no other run shares a human-labeled claim with this one: nothing to compare")
    return lines


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1%}"


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3g}"


def _ci(est: Any) -> str:
    low, high = getattr(est, "ci_low", None), getattr(est, "ci_high", None)
    return "" if low is None or high is None else f" (95% CI {low:.1%}-{high:.1%})"


def cli_run(args: Any) -> int:
    """`python -m calibration judge run ...`

    Exit status: 0 when every answer in scope is judged; 1 when any answer of this invocation
    failed (the same command again retries only those), when the endpoint cannot be reached
    or refuses the requests, or on invalid input; 130 when interrupted.
    """
    import sys

    if args.api_key_env and not os.environ.get(args.api_key_env):
        raise InputError(f"--api-key-env {args.api_key_env}: that environment variable is not set")
    config = JudgeConfig(
        base_url=args.base_url, model=args.model,
        api_key_env=args.api_key_env or DEFAULT_API_KEY_ENV, temperature=args.temperature,
        timeout=args.timeout, concurrency=args.concurrency, max_attempts=args.max_attempts,
        max_tokens=args.max_tokens, json_mode=args.json_mode)
    template = load_template(args.prompt_version, args.prompt_file)
    db_path = Path(args.db) if args.db else store.default_db_path()
    tty = sys.stderr.isatty()
    last = [0.0]

    def progress(p: Progress) -> None:
        # A rewritten line on a terminal; in a log, a line every few seconds and at the end.
        if tty:
            print("\r" + format_progress(p), end="\n" if p.done == p.total else "",
                  file=sys.stderr, flush=True)
        elif p.done == p.total or p.elapsed_s - last[0] >= 5:
            last[0] = p.elapsed_s
            print(format_progress(p), file=sys.stderr, flush=True)

    try:
        summary = run_lab(config, template, scope=args.scope, db_path=db_path, progress=progress,
                          baseline=args.baseline)
    except KeyboardInterrupt:
        print("\ninterrupted: the answers judged so far are stored; run the same command "
              "again to continue", file=sys.stderr)
        return 130
    except (EndpointUnreachable, EndpointRejected) as exc:
        if exc.answers_stored:
            print(f"\nthe run stopped; the {plural(exc.answers_stored, 'answer')} judged before the "
                  "stop are stored: run the same command again to continue", file=sys.stderr)
        raise  # main prints the error and exits 1
    print("\n".join(summary_lines(summary)))
    if summary.answers_failed:
        n, tried = summary.answers_failed, summary.answers_ok + summary.answers_failed
        print(f"{n} of {plural(tried, 'answer')} failed and {'has' if n == 1 else 'have'} no verdicts; "
              "run the same command again to retry them (answers already judged are not "
              "requested again)", file=sys.stderr)
        return 1
    return 0
