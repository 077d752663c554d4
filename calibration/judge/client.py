"""The HTTP client: OpenAI-compatible /v1/chat/completions over httpx.

A concurrency bound shared by every caller, a hard per-request deadline, and retries with
exponential backoff and full jitter (Retry-After honoured, capped). An endpoint that refuses
every request alike (401 / 403 / 404), that answers with a redirect (never followed: the key
would go along) or that cannot be reached at all stops the run; other failures are one answer's
problem (CallFailed). A reply body is read under the size limit and parsed under the rules of
every outside JSON (`reading.checked`: depth, NaN, lone surrogates).
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from ..errors import CallFailed, EndpointRejected, EndpointUnreachable, Hint, InputError, Option
from ..fmt import plural
from ..reading import BadRecord, checked
from .policy import DEFAULT_API_KEY_ENV, EndpointPolicy, chat_url


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
    # The operator's limits (allowed key variables and base URLs, reply size); None reads them
    # from the environment (`EndpointPolicy.from_sources`). Not stored with a run.
    policy: EndpointPolicy | None = None

    def __post_init__(self) -> None:
        if self.policy is None:
            object.__setattr__(self, "policy", EndpointPolicy.from_sources())
        problems = []
        if not self.model.strip():
            problems.append("model is required")
        problems += self.limits.base_url_problems(self.base_url)
        key_problem = self.limits.key_env_problem(self.api_key_env)
        if key_problem:
            problems.append(key_problem)
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
    def limits(self) -> EndpointPolicy:
        """The policy in force (never None after construction)."""
        return self.policy if self.policy is not None else EndpointPolicy()

    @property
    def url(self) -> str:
        """The chat-completions URL; base URL with or without /v1, or the full URL."""
        return str(chat_url(self.base_url))

    def params(self) -> dict[str, Any]:
        """What is stored with a run: everything that shapes the calls, minus secrets."""
        out = {k: v for k, v in asdict(self).items() if k not in ("base_url", "model", "policy")}
        out["max_reply_bytes"] = self.limits.max_reply_bytes
        return out


@dataclass(slots=True)
class Usage:
    """Tokens as the endpoint reports them; None where it reports nothing."""

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
    """One successful request: the reply text, and every HTTP attempt it took (`log`)."""

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
# Every other 4xx says the request itself is wrong (URL, method, model, key, body): the next
# answer's request is built the same way, so the run stops instead of repeating it.
FATAL_STATUS = frozenset(range(400, 500)) - RETRYABLE_STATUS
# A redirect is not followed (it could send the key to another host), and the next request would
# get the same one: like a fatal 4xx, it stops the run at once.
REDIRECT_STATUS = frozenset(range(300, 400))
ERROR_BODY_BYTES = 64 * 1024  # of an error reply, only this much is read (for its message)


class ReplyTooLarge(Exception):
    """A reply went past the size limit while it was being read."""

    def __init__(self, size: int, limit: int, declared: bool) -> None:
        super().__init__(size)
        self.size, self.limit, self.declared = size, limit, declared


async def read_limited(resp: httpx.Response, limit: int) -> bytes:
    """The body of a streamed response, or ReplyTooLarge once more than `limit` bytes arrive
    (or are announced in Content-Length): a huge reply is never held in memory whole."""
    declared = resp.headers.get("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ReplyTooLarge(int(declared), limit, True)
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise ReplyTooLarge(size, limit, False)
        chunks.append(chunk)
    return b"".join(chunks)


async def read_head(resp: httpx.Response, limit: int) -> bytes:
    """The first `limit` bytes of a body (an error page: only its message is wanted)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.aiter_bytes():
        chunks.append(chunk[: limit - size])
        size += len(chunks[-1])
        if size >= limit:
            break
    return b"".join(chunks)


def fatal_hint(status: int, key_env: str) -> Hint:
    """What to fix for a 4xx that stops the run, in words."""
    if status in (401, 403, 407):
        return (f"the API key in ${key_env} is missing, wrong or lacks access",)
    if status in (404, 405, 410):
        return ("the base URL does not point at an OpenAI-compatible /v1 endpoint",)
    if status in (400, 413, 422):
        return (
            "the server refuses the request body: check the model name, ",
            Option.MAX_TOKENS,
            " and ",
            Option.JSON_MODE,
        )
    return ("check the base URL, the model and the API key",)


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
    return rnd() * min(cap, base * 2.0 ** (attempt - 1))


def snippet(text: str, n: int = 300) -> str:
    """`text` on one line, cut to `n` characters: a server's error page inside a message."""
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n] + "…"


class ChatClient:
    """OpenAI-compatible chat completions with bounded concurrency and retries.

    Use as `async with ChatClient(config) as client: await client.complete(messages)`.
    At most `config.concurrency` requests are in flight at once, whoever calls. A 429
    with Retry-After pauses every request of this client, not only the one that got it:
    the server is telling the client as a whole to slow down.
    """

    def __init__(
        self,
        config: JudgeConfig,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        rnd: Callable[[], float] = random.random,
    ) -> None:
        self.config = config
        self._transport = transport
        self._rnd = rnd
        self._slots = asyncio.Semaphore(config.concurrency)
        self._paused_until = 0.0
        self._http: httpx.AsyncClient | None = None
        self._url = httpx.URL(config.url)
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
            # A redirect would carry the key to a URL the policy never saw: it stops the run.
            follow_redirects=False,
        )
        # The policy is checked once more on the URL of the request as httpx builds it, and that
        # very URL is the one sent: nothing re-parses the text in between.
        url = self._http.build_request("POST", self.config.url).url
        problem = self.config.limits.url_problem(url)
        if problem:
            await self._http.aclose()
            self._http = None
            raise EndpointRejected(problem)
        self._url = url
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def body(self, messages: Sequence[Mapping[str, str]]) -> dict[str, Any]:
        """The JSON body of a chat-completions request for `messages`."""
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
        """One chat completion, retried on 429 / 5xx / timeouts / bad bodies; CallFailed when
        retries run out or a 4xx cannot be fixed by retrying; EndpointRejected (401 / 403 / 404)
        and EndpointUnreachable stop the run."""
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
            reply: tuple[int, httpx.Headers, bytes] | None = None
            too_large: ReplyTooLarge | None = None
            async with self._slots:
                t0 = time.perf_counter()
                try:
                    # httpx's timeout is per read; this one bounds the whole request, so a
                    # server trickling bytes cannot hold a slot forever.
                    async with asyncio.timeout(cfg.timeout):
                        async with self._http.stream(
                            "POST", self._url, json=body, headers=self._headers
                        ) as resp:
                            try:
                                if resp.status_code == 200:
                                    raw = await read_limited(resp, cfg.limits.max_reply_bytes)
                                else:
                                    raw = await read_head(resp, ERROR_BODY_BYTES)
                            except ReplyTooLarge as exc:
                                too_large, raw = exc, b""
                            reply = (resp.status_code, resp.headers, raw)
                except (TimeoutError, httpx.TimeoutException):
                    entry["error"] = f"timeout after {cfg.timeout:g} s"
                except httpx.ConnectError as exc:
                    unreachable = describe_connect_error(exc)
                    entry["error"] = f"cannot connect: {unreachable}"
                except httpx.TransportError as exc:
                    entry["error"] = f"{type(exc).__name__}: {exc}"
                entry["ms"] = round((time.perf_counter() - t0) * 1000, 1)
            log.append(entry)
            if unreachable is not None:
                connect_failures += 1
                if connect_failures >= cfg.connect_attempts or attempt == cfg.max_attempts:
                    raise EndpointUnreachable(f"cannot connect to {cfg.base_url}: {unreachable}")
            if too_large is not None:
                # The same prompt would bring the same flood: not retried, and nothing of it kept.
                entry["status"] = 200
                entry["reply_bytes"] = too_large.size
                how = "announced" if too_large.declared else "cut off after"
                entry["error"] = (
                    f"reply too large: {how} {too_large.size:,} bytes, over the limit of "
                    f"{too_large.limit:,} bytes; nothing of it was stored"
                )
                raise CallFailed(entry["error"], attempts=attempt, log=log)
            if reply is not None:
                status, headers, raw = reply
                text = raw.decode("utf-8", errors="replace")
                entry["status"] = status
                if status == 200:
                    try:
                        data = checked(raw.decode("utf-8"))
                        if isinstance(data, BadRecord):
                            raise ValueError(data.message)
                        choice = data["choices"][0]
                        content = choice["message"].get("content")
                        if content is not None and not isinstance(content, str):
                            raise TypeError("message.content is not a string")
                    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
                        # A gateway answering 200 with an HTML page is a transient fault, not
                        # the model's reply: retried like a 5xx.
                        entry["error"] = f"unexpected response body ({exc}): {snippet(text)}"
                    else:
                        return Completion(
                            content, choice.get("finish_reason"), Usage.from_response(data), attempt, log
                        )
                else:
                    entry["error"] = f"HTTP {status}: {snippet(text)}"
                    if status in REDIRECT_STATUS:
                        where = headers.get("Location")
                        raise EndpointRejected(
                            f"{cfg.url} answered with a redirect (HTTP {status}"
                            + (f" to {snippet(where, 200)!r}" if where else "")
                            + "); redirects are not followed, since the API key would go along: "
                            "give the URL the endpoint really answers on as the base URL"
                        )
                    if status in FATAL_STATUS:
                        raise EndpointRejected(
                            (
                                f"{cfg.url} refused the request with HTTP {status} (",
                                *fatal_hint(status, cfg.api_key_env),
                                f"): {snippet(text)}",
                            )
                        )
                    retry_after = parse_retry_after(headers.get("Retry-After"))
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
        raise CallFailed(
            f"{log[-1].get('error')} (gave up after {plural(len(log), 'attempt')})",
            attempts=len(log),
            log=log,
        )
