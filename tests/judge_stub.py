"""A small OpenAI-compatible /v1/chat/completions server on 127.0.0.1, for tests and the bench.

It answers from a script: per answer key, a queue of reply kinds ("ok", "malformed",
("429", 1), "hang", ...), then the default. It records every request and tracks the
peak number of requests in flight, so tests can count retries and check the bound.

Claim ids are read back from the prompt (the judge renders them as one JSON object per
line), so an "ok" reply always names the ids the client asked about. The answer key of
a request is the part of its first claim id before the first '.', so fixtures name
claims "<answer>.c1", "<answer>.c2", ...
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Kind = str | tuple[str, Any]


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to sleep before answering (a hang, when past the timeout)
    # Sent with chunked transfer encoding instead of `body` (no Content-Length): a reply whose
    # size the client learns only by reading it.
    chunks: Callable[[], Iterable[bytes]] | None = None


@dataclass
class StubRequest:
    n: int  # 0-based index over all requests the server saw
    body: dict[str, Any]
    headers: dict[str, str]
    claim_ids: list[str]
    key: str
    started: float  # time.monotonic() when the request arrived

    @property
    def messages(self) -> list[dict[str, str]]:
        return self.body.get("messages", [])


def claim_ids_in(prompt: str) -> list[str]:
    ids = []
    for line in prompt.splitlines():
        line = line.strip()
        if line.startswith('{"id"'):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and "text" in obj:
                ids.append(str(obj["id"]))
    return ids


def completion(content: str | None, *, usage: bool = True, finish_reason: str = "stop") -> bytes:
    body: dict[str, Any] = {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "model": "stub",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}
        ],
    }
    if usage:
        body["usage"] = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    return json.dumps(body).encode()


def huge_completion(megabytes: int) -> Iterable[bytes]:
    """A completion whose content is `megabytes` MB of text, produced piece by piece."""
    yield b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "'
    block = b"x" * (1 << 20)
    for _ in range(megabytes):
        yield block
    yield b'"}, "finish_reason": "stop"}]}'


def verdicts_json(
    claim_ids: Iterable[str], verdicts: Mapping[str, str] | None = None, default: str = "SUPPORTED"
) -> str:
    verdicts = verdicts or {}
    return json.dumps(
        {
            "verdicts": [
                {"id": c, "rationale": "stub", "verdict": verdicts.get(c, default), "evidence": []}
                for c in claim_ids
            ]
        }
    )


def reply_for(kind: Kind, req: StubRequest, verdicts: Mapping[str, str]) -> Reply:
    """Build the reply a script entry stands for."""
    name, arg = (kind, None) if isinstance(kind, str) else kind
    ids = req.claim_ids
    if name == "ok":
        return Reply(body=completion(verdicts_json(ids, verdicts)))
    if name == "fenced":
        return Reply(body=completion("Here you go:\n```json\n" + verdicts_json(ids, verdicts) + "\n```"))
    if name == "array":  # a bare array with lower-case spellings
        items = [{"claim_id": c, "verdict": verdicts.get(c, "SUPPORTED").lower()} for c in ids]
        return Reply(body=completion(json.dumps(items)))
    if name == "no_usage":
        return Reply(body=completion(verdicts_json(ids, verdicts), usage=False))
    if name == "malformed":
        return Reply(body=completion('{"verdicts": [{"id": "oops", "verdict": SUPPORTED'))
    if name == "missing":  # drops the last claim id
        return Reply(body=completion(verdicts_json(ids[:-1], verdicts)))
    if name == "extra":
        return Reply(body=completion(verdicts_json([*ids, "zz.c99"], verdicts)))
    if name == "bad_verdict":
        return Reply(body=completion(verdicts_json(ids, default="PARTIALLY")))
    if name == "429":
        headers = {} if arg is None else {"Retry-After": str(arg)}
        return Reply(429, b'{"error": {"message": "rate limited"}}', headers)
    if name == "500":
        return Reply(500, b'{"error": {"message": "boom"}}')
    if name == "401":
        return Reply(401, b'{"error": {"message": "bad key"}}')
    if name == "prose":  # a model that never answers in JSON
        return Reply(body=completion("I think the first claim is mostly fine, and the second one too."))
    if name == "405":
        return Reply(405, b'{"error": {"message": "method not allowed"}}')
    if name == "400":
        return Reply(400, b'{"error": {"message": "unknown model"}}')
    if name == "huge":  # `arg` megabytes of reply content, streamed without a Content-Length
        return Reply(chunks=lambda: huge_completion(int(arg or 50)))
    if name == "hang":
        return Reply(body=completion(verdicts_json(ids, verdicts)), delay=float(arg or 5.0))
    raise ValueError(f"unknown stub reply kind {kind!r}")


class _Server(ThreadingHTTPServer):
    # The default listen backlog of 5 drops SYNs when 32 clients connect at once, and each
    # dropped SYN costs the client a 1 s retransmit: a stub artefact, not client behaviour.
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up with requests in flight (a run that stopped) is expected; its
        # traceback on stderr would read as the CLI's own in a test that captures stderr.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class StubServer:
    """Run with `with StubServer(...) as stub:`; `stub.base_url` is the /v1 base URL."""

    def __init__(
        self,
        script: Mapping[str, Iterable[Kind]] | None = None,
        *,
        default: Kind = "ok",
        verdicts: Mapping[str, str] | None = None,
        latency: float = 0.0,
        handler: Callable[[StubRequest], Reply] | None = None,
        record: bool = True,
        keep_alive: bool = True,
    ) -> None:
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.default = default
        self.verdicts = dict(verdicts or {})
        self.latency = latency
        self.handler = handler
        self.record = record
        # False: every reply says "Connection: close", so each request opens a new connection
        # and stopping the server makes the next one fail to connect (as a crashed server does).
        self.keep_alive = keep_alive
        self.requests: list[StubRequest] = []
        # (path, Authorization header) of every request, whatever its path: where the key went.
        self.received: list[tuple[str, str | None]] = []
        self.port = 0  # 0: any free port
        self.count = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._base_url = ""
        self._thread: threading.Thread | None = None

    # -- bookkeeping used by the handler thread

    def _begin(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[StubRequest, Reply]:
        messages = body.get("messages") or [{}]
        prompt = messages[0].get("content") or ""
        ids = claim_ids_in(prompt)
        key = ids[0].split(".", 1)[0] if ids else ""
        with self._lock:
            req = StubRequest(self.count, body, headers, ids, key, time.monotonic())
            self.count += 1
            if self.record:
                self.requests.append(req)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            queue = self.script.get(key)
            kind = queue.pop(0) if queue else self.default
        reply = self.handler(req) if self.handler else reply_for(kind, req, self.verdicts)
        return req, reply

    def _end(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def requests_for(self, key: str) -> list[StubRequest]:
        with self._lock:
            return [r for r in self.requests if r.key == key]

    # -- lifecycle

    @property
    def base_url(self) -> str:
        assert self._base_url, "start the server first"
        return self._base_url

    def start(self) -> StubServer:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
            disable_nagle_algorithm = True
            wbufsize = 1 << 16  # headers and body leave in one write (flushed per request)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if stub.record:
                    with stub._lock:
                        stub.received.append((self.path, self.headers.get("Authorization")))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(Reply(404, b'{"error": "not found"}'))
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(Reply(400, b'{"error": "bad json"}'))
                    return
                _, reply = stub._begin(body, {k.lower(): v for k, v in self.headers.items()})
                try:
                    wait = reply.delay + stub.latency
                    if wait:
                        time.sleep(wait)
                    self._send(reply)
                finally:
                    stub._end()

            def _send(self, reply: Reply) -> None:
                if reply.chunks is not None:
                    self._send_chunked(reply)
                    return
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(reply.body)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    if not stub.keep_alive:
                        self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(reply.body)
                    self.wfile.flush()
                except OSError:
                    # The client gave up (a timeout test): nothing to answer to.
                    self.close_connection = True

            def _send_chunked(self, reply: Reply) -> None:
                assert reply.chunks is not None
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for piece in reply.chunks():
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    # The client stopped reading (the size limit): expected.
                    self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = _Server(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        server.block_on_close = False  # a hanging handler must not hold up stop()
        self._server = server
        host, port = server.server_address[:2]
        self._base_url = f"http://{host}:{port}/v1"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """`python -m tests.judge_stub --port 8765 [--verdicts labels.csv] [--default KIND]`: serve until
    interrupted. --verdicts takes a CSV with claim_id and verdict columns: an "ok" reply gives
    those verdicts (SUPPORTED for claims not listed)."""
    import argparse
    import csv

    ap = argparse.ArgumentParser(prog="python -m tests.judge_stub")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--verdicts")
    ap.add_argument("--default", default="ok")
    args = ap.parse_args(argv)
    verdicts: dict[str, str] = {}
    if args.verdicts:
        with open(args.verdicts, encoding="utf-8") as fh:
            verdicts = {r["claim_id"]: r["verdict"] for r in csv.DictReader(fh)}
    stub = StubServer(default=args.default, verdicts=verdicts, record=False)
    stub.port = args.port
    stub.start()
    print(stub.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        stub.stop()


if __name__ == "__main__":
    main()
