"""Signed tokens: a name and an expiry under an HMAC key (the sign-in link's, the review card's).

Pure: the keys come from the caller (`calibration_app.signin.signin_secret`, `card_route.KEY`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac

TOKEN_TTL_S = 12 * 3600  # a working day: a link shared today signs nobody in tomorrow


def _mac(secret: bytes, name: str, expires: int) -> str:
    digest = hmac.new(secret, f"{expires}\n{name}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def sign_token(secret: bytes, name: str, expires: int) -> str:
    """A token that says "`name` signed in here, valid until `expires` (Unix seconds)".

    HMAC-SHA256 over the expiry and the name, keyed by the server's secret (`signin_secret` of
    calibration_app.signin).
    What it protects: the reviewer name in the URL cannot be changed to another person's (the
    token is bound to the name, and forging one needs the server secret), and a link copied
    from the address bar and shared signs its recipient in as the sharer only until the token
    expires (at most `TOKEN_TTL_S` after it was issued); after that, or with any change to the
    name or token, the link only fills in the name field. What it does not protect: without
    OIDC anyone may still type any name at the sign-in (a typed name is taken on trust), a
    link is a bearer credential until it expires (anyone holding it then is signed in), and a
    single token cannot be revoked: changing the secret (or deleting the stored one) ends all.
    """
    return f"{int(expires)}.{_mac(secret, name, int(expires))}"


def check_token(secret: bytes, name: str, token: str, now: float) -> bool:
    """Whether `token` was made by `sign_token` with this secret and name and is unexpired
    at `now`. An expiry further ahead than `TOKEN_TTL_S` is refused too."""
    head, _, mac = token.partition(".")
    if not head.isdigit() or not mac:
        return False
    expires = int(head)
    if not now < expires <= now + TOKEN_TTL_S:
        return False
    return hmac.compare_digest(mac, _mac(secret, name, expires))


def token_expiry(token: str) -> int | None:
    """The expiry a token states (unchecked); None when it is malformed."""
    head = token.partition(".")[0]
    return int(head) if head.isdigit() else None
