"""The Streamlit app over the `calibration` package, which never imports it.

Its modules, by concern: `signin` (who is reviewing), `settings` (the secrets' `[calibration]`
section), `access` (leads, lead actions, the sidebar's identity), `navigation` (the pages),
`failures` (storage failures as one sentence), `untrusted`
(untrusted text as one element), `widgets` (shared headers and table columns), `problems`
(an input's problems as a table), `uploads` (uploads on disk); the review card: `review_card`
(the component) and `card_route` (its route); `server` (what `streamlit run` starts).

`app.py` and `pages/` keep the layout Streamlit expects: beside this package in a checkout,
inside it in an installed wheel (the build maps them there, pyproject.toml).
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
APP_DIR = PACKAGE_DIR if (PACKAGE_DIR / "app.py").is_file() else PACKAGE_DIR.parent
APP_SCRIPT = APP_DIR / "app.py"
SERVER_SCRIPT = PACKAGE_DIR / "server.py"
