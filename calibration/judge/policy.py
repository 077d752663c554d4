"""What the server's operator allows the judge lab to do: which environment variables may
hold the API key, which endpoints may be called, how large a reply may be.

The lab sends the value of the named environment variable as a Bearer token to the URL typed
in, so both are decided here, by configuration, and never by the person filling in the form:

- CALIBRATION_JUDGE_KEY_ENVS: comma-separated extra variable names allowed to hold the key
  (CALIBRATION_JUDGE_API_KEY is always allowed);
- CALIBRATION_JUDGE_BASE_URLS: comma-separated allowed base-URL prefixes (empty: any http(s)
  URL, right for a single-user install; set it on a shared deployment);
- CALIBRATION_JUDGE_MAX_REPLY_BYTES: the reply size limit (default 1 MB).

The page may add the same settings from Streamlit secrets, under `[calibration]` as
`judge_key_envs`, `judge_base_urls`, `judge_max_reply_bytes` (`from_sources(secrets=...)`). The CLI and
the page both build a `JudgeConfig`, which checks itself against the policy, so neither can skip it.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

DEFAULT_API_KEY_ENV = "CALIBRATION_JUDGE_API_KEY"
DEFAULT_MAX_REPLY_BYTES = 1_000_000
KEY_ENVS_VAR = "CALIBRATION_JUDGE_KEY_ENVS"
BASE_URLS_VAR = "CALIBRATION_JUDGE_BASE_URLS"
MAX_REPLY_VAR = "CALIBRATION_JUDGE_MAX_REPLY_BYTES"
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _split_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        items: list[Any] = value.split(",")
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        items = [value]
    return [str(v).strip() for v in items if str(v).strip()]


@dataclass(frozen=True, slots=True)
class EndpointPolicy:
    """The operator's limits on lab calls (see the module docstring for where they come from)."""

    key_envs: tuple[str, ...] = (DEFAULT_API_KEY_ENV,)
    base_url_prefixes: tuple[str, ...] = ()  # empty: any http(s) URL
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES

    @classmethod
    def from_sources(
        cls, environ: Mapping[str, str] | None = None, secrets: Mapping[str, Any] | None = None
    ) -> EndpointPolicy:
        """The policy from the environment, plus Streamlit secrets when given (keys named like
        the environment variables); lists from both are joined."""
        env = os.environ if environ is None else environ
        sec = dict(secrets or {})
        for short, var in (
            ("judge_key_envs", KEY_ENVS_VAR),
            ("judge_base_urls", BASE_URLS_VAR),
            ("judge_max_reply_bytes", MAX_REPLY_VAR),
        ):
            if short in sec and var not in sec:  # `[calibration] judge_key_envs = [...]` in secrets.toml
                sec[var] = sec[short]
        keys = [DEFAULT_API_KEY_ENV, *_split_list(env.get(KEY_ENVS_VAR)), *_split_list(sec.get(KEY_ENVS_VAR))]
        urls = [*_split_list(env.get(BASE_URLS_VAR)), *_split_list(sec.get(BASE_URLS_VAR))]
        limit_text = sec.get(MAX_REPLY_VAR, env.get(MAX_REPLY_VAR))
        try:
            limit = int(limit_text) if limit_text not in (None, "") else DEFAULT_MAX_REPLY_BYTES
        except (TypeError, ValueError):
            limit = DEFAULT_MAX_REPLY_BYTES
        return cls(tuple(dict.fromkeys(keys)), tuple(dict.fromkeys(urls)), max(1024, limit))

    def key_env_problem(self, name: str) -> str | None:
        """Why the key may not be read from `name`; None when it may. An empty name means
        no key (a local server), always allowed."""
        if not name:
            return None
        if not _ENV_NAME_RE.match(name):
            return f"API key environment variable {name!r} is not a valid variable name"
        if name not in self.key_envs:
            return (
                f"API key environment variable {name!r} is not allowed: the server reads the key "
                f"only from {', '.join(self.key_envs)}; the operator may allow others in "
                f"{KEY_ENVS_VAR}"
            )
        return None

    def base_url_problems(self, base_url: str) -> list[str]:
        """Why `base_url` may not be called; empty when it may. The prefixes are checked against
        the URL that is requested (`chat_url`), not the text typed: joining resolves dot
        segments, so only the final URL says where the key goes."""
        problems = base_url_shape_problems(base_url)
        if problems:
            return problems
        problem = self.url_problem(chat_url(base_url))
        return [problem] if problem else []

    def url_problem(self, url: httpx.URL) -> str | None:
        """Why the request URL `url` may not be called (not under an allowed prefix); None when it may."""
        if not self.base_url_prefixes or any(url_has_prefix(url, p) for p in self.base_url_prefixes):
            return None
        return (
            f"the request URL {str(url)!r} is not under a base URL the operator allowed ("
            + ", ".join(self.base_url_prefixes)
            + f"; set in {BASE_URLS_VAR})"
        )


# What RFC 3986 allows unencoded in a path (section 3.3: unreserved, sub-delims, ':' and '@'). No
# percent-escape at all: a server may decode one into a separator or a dot segment ('%2e%2e',
# '..%2f', '%5c'), also in forms of its own ('%u002e', overlong UTF-8 '%c0%ae', '%252e' decoded
# twice); nor a character some servers fold into one (a backslash, a full-width dot). An API's
# base path never needs either.
_PATH_CHARS = frozenset(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@/")
_PATH_CHARS_TEXT = "ASCII letters, digits and - . _ ~ ! $ & ' ( ) * + , ; = : @ /"


def _path_problem(base_url: str, path: str) -> str | None:
    """Why the typed `path` of a base URL is refused: a percent-escape, a character outside
    `_PATH_CHARS`, a dot segment ('.', '..', also '..;x') or an empty segment ('//')."""
    if "%" in path:
        at = path.index("%")
        return (
            f"base URL {base_url!r} has {path[at : at + 3]!r} in its path: give the path without "
            "percent-encoding (an encoded '.', '/' or '\\' could lead the request out of the "
            "allowed path)"
        )
    odd = next((c for c in path if c not in _PATH_CHARS), None)
    if odd is not None:
        what = "a backslash" if odd == "\\" else repr(odd)
        return f"base URL {base_url!r} has {what} in its path, which holds only {_PATH_CHARS_TEXT}"
    segments = path.split("/")[1:]
    if any(seg.split(";", 1)[0] in (".", "..") for seg in segments):
        return f"base URL {base_url!r} has a '.' or '..' segment in its path; give the path it resolves to"
    if "" in segments[:-1]:
        return f"base URL {base_url!r} has an empty segment ('//') in its path"
    return None


def base_url_shape_problems(base_url: str) -> list[str]:
    """A base URL must be http(s), name a host, carry no credentials, and end in a path: a
    query or fragment (even an empty '?' or '#') would swallow the path appended to it. Its
    path is refused when a server could read it as another path (`_path_problem`)."""
    if "?" in base_url or "#" in base_url:
        return [f"base URL {base_url!r} must end in a path, without '?' (query) or '#' (fragment)"]
    try:
        url = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        return [f"base URL {base_url!r} is not a URL ({exc})"]
    if url.scheme not in ("http", "https"):
        return [f"base URL {base_url!r} must start with http:// or https://"]
    if not url.host:
        return [f"base URL {base_url!r} names no host"]
    if url.userinfo:
        return [f"base URL {base_url!r} must not carry a user name or password; use the API key variable"]
    # The path as typed: httpx has already resolved plain dot segments in `url`.
    problem = _path_problem(base_url, urlsplit(base_url).path)
    if problem:
        return [problem]
    try:
        chat_url(base_url)
    except (httpx.InvalidURL, ValueError) as exc:
        return [f"base URL {base_url!r} is not a URL ({exc})"]
    return []


def url_has_prefix(url: httpx.URL | str, prefix: str) -> bool:
    """Same scheme, host and port, and the path starts with the prefix's path at a '/'
    boundary: 'https://api.x.com/v1' allows '.../v1/' but not 'https://api.x.com.evil/v1'
    nor '.../v10'. Paths are compared as sent (percent-encoded), never decoded."""
    try:
        u, p = httpx.URL(url), httpx.URL(prefix)
    except (httpx.InvalidURL, TypeError, ValueError):
        return False
    if (u.scheme, u.host, u.port) != (p.scheme, p.host, p.port):
        return False
    path = u.raw_path.split(b"?", 1)[0]
    pp = p.raw_path.split(b"?", 1)[0].rstrip(b"/")
    return not pp or path == pp or path.startswith(pp + b"/")


def chat_url(base_url: str) -> httpx.URL:
    """The chat-completions URL by URL joining: the base with or without /v1, or the full URL.

    The base path is made to end in '/' so that joining the relative reference keeps it
    (RFC 3986 section 5.2: a relative path replaces the last segment of the base path). The
    path is handled as typed (percent-encoded): decoding it first would turn '%2e%2e' into a
    '..' that joining then resolves.
    """
    url = httpx.URL(base_url)
    path = url.raw_path.decode("ascii").rstrip("/")
    if path.endswith("/chat/completions"):
        return url.copy_with(raw_path=path.encode("ascii"))
    base = url.copy_with(raw_path=(path + "/").encode("ascii"))
    return base.join("v1/chat/completions" if path == "" else "chat/completions")
