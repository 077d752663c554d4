"""The secrets' `[calibration]` section and whether a secrets file (and its `[auth]`) is there."""

from __future__ import annotations

import os
from typing import Any

import streamlit as st

# The st.secrets object last found with no secrets file (a one-element list, or empty).
_SECRETS_MISSING: list[object] = []


def secrets_loaded() -> bool:
    """Whether st.secrets holds any secrets (an unreadable file holds none, as for Streamlit).

    Streamlit keeps a file it has read (and watches it), but looks for a missing one again at
    every call, which costs a page run about what a verdict's write does. So while st.secrets is
    the object found without a file, and no secrets path exists, the answer stays no without
    asking; a file created later is read at the next call."""
    current = st.secrets
    missing = bool(_SECRETS_MISSING) and _SECRETS_MISSING[0] is current
    if missing and not any(os.path.exists(p) for p in st.get_option("secrets.files")):
        return False
    try:
        found = bool(current.load_if_toml_exists())
    except Exception:
        found = False
    _SECRETS_MISSING[:] = [] if found else [current]
    return found


def auth_configured() -> bool:
    """True when secrets.toml has an [auth] section (OIDC through st.login)."""
    try:
        return secrets_loaded() and "auth" in st.secrets
    except Exception:  # an unreadable secrets file means no auth, as Streamlit itself does
        return False


def calibration_secrets() -> dict[str, Any]:
    """The `[calibration]` section of the secrets, or nothing."""
    try:
        if secrets_loaded() and "calibration" in st.secrets:
            return dict(st.secrets["calibration"])
    except Exception:  # an unreadable secrets file configures nothing, as for auth_configured
        pass
    return {}


def calibration_secret(key: str) -> object:
    """`key` under `[calibration]` in the secrets, or None."""
    return calibration_secrets().get(key)


def secret_list(key: str) -> list[str]:
    value = calibration_secret(key)
    if isinstance(value, str):
        return value.split(",")
    return [str(x) for x in value] if isinstance(value, (list, tuple)) else []
