"""The app server: `streamlit run calibration_app/server.py` (what `make run`, `calibration serve`
and the tests start). It serves app.py, every page, as `streamlit run app.py` would, and beside it
the review card's route (card_route.py), in the same process (Streamlit's `st.App`)."""

from __future__ import annotations

import streamlit as st
from starlette.routing import Route

from calibration_app import APP_SCRIPT, card_route

app = st.App(str(APP_SCRIPT), routes=[Route(card_route.path(), card_route.post_card, methods=["POST"])])
