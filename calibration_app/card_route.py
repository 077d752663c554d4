"""The review card's route: `POST /_calibration/card` (`PATH`), served beside the app by
calibration_app/server.py, the one way a reviewer's label is written from the app.

Every key of the card that writes (a verdict, skip or unclear with its evidence and note, the
commit, a reconcile choice, the next answer) is one request here: a JSON body with the card's
token, whose card it is, and the request (`calibration.card.Request`, a pydantic model per
kind). The route checks it once and hands it to `calibration.card.handle`, which does it with
the rules of `calibration.review` and says what the card shows next; no script run of the
page is involved. The reply names claims, label events and the answer as the reviewer may see
it; the judge's verdicts only for an answer the reviewer committed.

Who may post: the card's data carries a token (`card_token`) that names the reviewer and the
cycle, signed with this server process's own key (`KEY`, drawn at its start); the route writes
only as that reviewer, in that cycle, and writes nothing once a lead deactivated or renamed
them (checked in each write's transaction). A token from another process (a restart, another
server behind the balancer) is refused with 403 "token": the card asks its page for a fresh
one and sends the request again, so no key needs sharing.

Replies: 200 with `calibration.card.Reply` (`ok` false and `refused`, the sentence, when a rule
refused it: a stale view, a committed answer, a pending disagreement); 400 a malformed body;
403 a bad token, or the name signed out (`why`); 503 a storage failure (nothing written).
"""

from __future__ import annotations

import json
import secrets
import time

import streamlit as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from calibration import card, store, tokens
from calibration.errors import SignedOutError, StorageError
from calibration.models import StoredInt

# Not navigation (nor a module importing it): its import outside a page's run would take the
# first page run's place in `navigation._run_through_the_app`.
from calibration_app import failures

PATH = "/_calibration/card"
MAX_BODY = 1 << 16  # bytes; a commit of 500 claims or a note of 2,000 characters stays well under it
KEY = secrets.token_bytes(32)  # this process's: see the module docstring


def path() -> str:
    """Where the route is served: under the server's base path, as Streamlit's own routes."""
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}{PATH}" if base else PATH


def _scope(cycle_id: int, reviewer: str) -> str:
    # Three lines, a name no sign-in token can carry (a sign-in name has no line break).
    return f"card\n{cycle_id}\n{reviewer}"


def card_token(cycle_id: int, reviewer: str, now: float) -> str:
    """What the card shows the route: "`reviewer`'s card in cycle `cycle_id`" for the next
    11-12 hours (`tokens.TOKEN_TTL_S`, its expiry on the hour), signed with `KEY`."""
    # On the hour: the card's data, where the token goes, stays the same from one run of the
    # page to the next, rather than changing every second.
    expires = (int(now) + tokens.TOKEN_TTL_S) // 3600 * 3600
    return tokens.sign_token(KEY, _scope(cycle_id, reviewer), expires)


def check_card_token(cycle_id: int, reviewer: str, token: str, now: float) -> bool:
    """Whether `token` is this process's `card_token` for the cycle and reviewer, unexpired."""
    return tokens.check_token(KEY, _scope(cycle_id, reviewer), token, now)


class CardPost(BaseModel):
    """The route's body: the card's token, whose card it is, and its request."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: str = Field(max_length=200)
    cycle: StoredInt
    reviewer: str = Field(min_length=1, max_length=1000)
    request: card.Request


HEADER = "X-Card-Reply"
HEADER_MAX = 2000  # bytes; what a reverse proxy's smallest header buffer (4 KB) takes with room


def _reply(status: int, **body: object) -> Response:
    """The reply as JSON: in the `HEADER` header with no body when it is short, else as the body.

    Why a header: the server writes a response's headers and its body in two writes, and its
    sockets keep Nagle's algorithm on, so on a kept connection the body waited for the
    browser's delayed acknowledgement of the headers: 40 ms of every verdict's 45. One write
    takes 5 ms (measured in Chromium)."""
    text = json.dumps(body, separators=(",", ":"))
    headers = {"Cache-Control": "no-store"}
    if len(text) <= HEADER_MAX:
        return Response(status_code=status, headers={**headers, HEADER: text})
    return Response(text, status_code=status, headers=headers, media_type="application/json")


def malformed(exc: ValidationError) -> str:
    """What is wrong with a body, in one sentence."""
    first = exc.errors()[0]
    # A part of the path is the sender's (a claim's key): shortened, so the sentence stays one.
    where = ".".join(str(p)[:40] for p in first["loc"]) or "request"
    return f"the review card sent a malformed request ({where}: {first['msg']})"


def write(body: bytes, now: float) -> Response:
    """Check the body and do its request (blocking: the route runs it on a worker thread)."""
    try:
        post = CardPost.model_validate_json(body)
    except ValidationError as exc:
        return _reply(400, error=malformed(exc))
    if not check_card_token(post.cycle, post.reviewer, post.token, now):
        return _reply(403, error="token")
    try:
        with store.session(store.default_db_url()) as db:
            out = card.handle(db, cycle_id=post.cycle, reviewer=post.reviewer, request=post.request)
    except SignedOutError as exc:  # the card hands this to its page, which ends the session
        return _reply(403, error="signed out", why=str(exc))
    except StorageError as exc:
        return _reply(503, error="storage", why=failures.storage_sentence(exc))
    return _reply(200, **out.as_json())


async def post_card(request: Request) -> Response:
    """The route: a JSON body of at most MAX_BODY bytes, written on a worker thread."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        # A cross-site form cannot send this type without the browser asking first (CORS).
        return _reply(415, error="application/json only")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        return _reply(413, error="too large")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            return _reply(413, error="too large")
    return await run_in_threadpool(write, body, time.time())
