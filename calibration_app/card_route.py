"""The review card's verdict route: `POST /_calibration/card` (`PATH`), served beside the app
by calibration_app/server.py.

A verdict written through a Streamlit rerun costs the server a script run: receiving the
websocket message, the run's thread, the fragment, its messages back. Here the card posts the
same report (`review.CardReport`: the answer's claims, each with its latest verdict and key
press number) and gets back which claims are written, with no script run. The write is the
page's own (`review.record_card`): the same rules, the same refusal of a label another tab
wrote in between, each verdict written once however often the report comes.

Who may post: the card's data carries a token (`card_token`) that names the reviewer and the
cycle, signed with this server process's own key (`KEY`, drawn at its start); the route writes
only as that reviewer, in that cycle, and writes nothing once a lead deactivated or renamed
them (checked in each write's transaction, as the page's writes are). A token from another
process (a restart, another server behind the balancer) is refused, and the page writes
instead, so no key needs sharing. A report with keys for the server (commit, Next) or one waiting
for the server's next claim is refused: those go through the page. The reply names claims and
numbers only, never a verdict of the judge.

Anything but a clean write (a refused claim, a storage failure, a bad token, a malformed body)
answers so, and the card sends the same report through the page, which says what went wrong as
it always has: the route is the fast way, the page the sure one.
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

# Not the page modules: importing navigation outside a page's run would take the first page
# run's place in `navigation._run_through_the_app`. The route needs none of them.
from calibration import review, store, tokens
from calibration.errors import CalibrationError, SignedOutError, StorageError
from calibration.models import StoredInt

PATH = "/_calibration/card"
MAX_BODY = 1 << 20  # bytes; a report of 500 claims with notes stays well under it
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
    """The route's body: the card's token, whose card it is, and its report."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: str = Field(max_length=200)
    cycle: StoredInt
    reviewer: str = Field(min_length=1, max_length=1000)
    report: review.CardReport


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


def write(body: bytes, now: float) -> Response:
    """Check the body and write its report (blocking: the route runs it on a worker thread)."""
    try:
        post = CardPost.model_validate_json(body)
    except ValidationError as exc:
        return _reply(400, error=review.malformed_report(exc))
    if not check_card_token(post.cycle, post.reviewer, post.token, now):
        return _reply(403, error="not this card's token")
    report = post.report
    if report.actions or report.waiting or report.retry:
        return _reply(400, error="keys for the server go through the page")
    try:
        with store.session(store.default_db_url()) as db:
            out = review.record_card(db, cycle_id=post.cycle, reviewer=post.reviewer, report=report, done={})
    except SignedOutError as exc:  # the card sends the report to the page, which ends the session
        return _reply(403, error="signed out", why=str(exc))
    except StorageError:
        return _reply(503, error="storage")
    except CalibrationError:  # the cycle is gone, say: the page says why
        return _reply(409, error="refused")
    return _reply(
        200,
        ack={str(pk): seq for pk, seq in out.acked.items()},
        written={str(pk): list(w) for pk, w in out.written.items()},
        refused=sorted(out.refused),
        failure=out.failure is not None,
    )


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
