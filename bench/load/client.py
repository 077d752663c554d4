"""A browser stand-in that speaks Streamlit's own websocket protocol, for load tests.

One `Session` is one browser tab: one websocket to `/_stcore/stream`, hence one Streamlit
session on the server with its own session state and script runs, exactly as a tab gets.
It sends the `BackMsg` a browser sends (a `rerun_script` carrying the page, the query
string, the current value of every widget on the page and, for a click or shortcut key,
the button's trigger; a fragment's id when the button is inside a fragment) and reads the
`ForwardMsg` stream back. What it does not do is draw: no DOM, no React, no static files,
so one Python process holds dozens of sessions without measuring itself.

The message shapes were taken from what headless Chromium sends to this app (sign-in,
cycle picker, verdict keys), and the widget bookkeeping follows the browser's: a widget
keeps the value it was drawn with until the page draws it again, a fragment run replaces
only the fragment's widgets, and buttons are sent only when pressed.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import ClientConnection, connect

from calibration_app import card_route

# A widget's id is "$$ID-<32 hex>-<user key>" when the app gave it a key.
_KEYED = re.compile(r"^\$\$ID-[0-9a-f]{32}-(?P<key>.+)$")
_FINISHED_EARLY = ForwardMsg.FINISHED_EARLY_FOR_RERUN
_COMPILE_ERROR = ForwardMsg.FINISHED_WITH_COMPILE_ERROR
_ALERT_ERROR = 1  # Alert.Format.ERROR


class ProtocolError(RuntimeError):
    """The server's replies did not look like the app's page (a bench failure, not the app's)."""


@dataclass(slots=True)
class Widget:
    id: str
    kind: str  # the Element oneof name: button, text_input, multiselect, selectbox...
    fragment: str  # the fragment that drew it ("" for the page)
    state: WidgetState | None  # what the browser sends back; None for buttons
    disabled: bool = False
    options: tuple[str, ...] = ()  # a selectbox's shown option texts
    data: Any = None  # a component's data (JSON), as the page sent it


@dataclass(slots=True)
class Run:
    """What one script run (started by one BackMsg) sent back, with arrival times."""

    sent_at: float
    finished_at: float = 0.0
    status: int = -1
    widgets_at: dict[str, float] = field(default_factory=dict)  # user key -> arrival time
    toasts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # st.error bodies and exceptions
    exceptions: list[str] = field(default_factory=list)
    block_keys: list[str] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return self.finished_at - self.sent_at


def _widget_state(kind: str, el: Any) -> WidgetState | None:
    """The value a browser reports for a widget it has just drawn (unchanged by the user)."""
    ws = WidgetState(id=el.id)
    if kind == "text_input":
        ws.string_value = el.value if el.HasField("value") else (el.default if el.HasField("default") else "")
    elif kind == "multiselect":
        values = list(el.raw_values) if el.set_value else [el.options[i] for i in el.default]
        ws.string_array_value.data.extend(values)
    elif kind == "selectbox":
        if el.set_value and el.HasField("raw_value"):
            ws.string_value = el.raw_value
        elif el.HasField("default") and el.options:
            ws.string_value = el.options[el.default]
        else:
            return None
    else:
        return None
    return ws


class Session:
    """One browser tab's websocket session with a Streamlit app."""

    def __init__(self, base_url: str, timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.ws_url = self.base_url.replace("http://", "ws://", 1) + "/_stcore/stream"
        self.timeout = timeout
        self.conn: ClientConnection | None = None
        self.page_name = ""
        self.page_hashes: dict[str, str] = {}  # page name (lower case) -> script hash
        self.page_hash = ""
        self.query_string = ""
        self.widgets: dict[str, Widget] = {}  # user key -> widget on screen now
        self.http: httpx.AsyncClient | None = None  # the tab's HTTP connection, for the card's route

    async def open(self, page: str) -> Run:
        """Connect and load `page` (its URL path, e.g. "review"), as a tab opening the URL."""
        self.conn = await connect(
            self.ws_url,
            subprotocols=["streamlit"],  # type: ignore[list-item]
            max_size=None,
            open_timeout=self.timeout,
        )
        self.page_name = page
        msg = BackMsg()
        msg.rerun_script.page_name = page
        self._context(msg)
        return await self._send(msg, fragment="")

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()
            self.conn = None
        if self.http is not None:
            await self.http.aclose()
            self.http = None

    async def post_json(self, path: str, body: Any) -> tuple[int, Any]:
        """POST `body` as JSON to a path of the app (the review card's route), as the card's
        fetch does: (status, the reply's JSON, or None)."""
        if self.http is None:
            # Idle connections dropped before the server's keep-alive (uvicorn: 5 s) drops them.
            # No TLS context: plain HTTP to this machine, and building one costs 20 ms of this
            # process's CPU per session, which at a step's start stalled every session's timing.
            limits = httpx.Limits(keepalive_expiry=2.0)
            self.http = httpx.AsyncClient(
                base_url=self.base_url, timeout=self.timeout, limits=limits, verify=False
            )
        try:
            reply = await self.http.post(path, json=body)
        except (httpx.ReadError, httpx.RemoteProtocolError):
            # A kept connection the server closed as it was reused: a browser sends the
            # request again on a new one, and so does this.
            reply = await self.http.post(path, json=body)
        head = reply.headers.get(card_route.HEADER)  # a short reply comes whole in a header
        try:
            return reply.status_code, json.loads(head) if head else reply.json()
        except ValueError:
            return reply.status_code, None

    def _context(self, msg: BackMsg) -> None:
        ctx = msg.rerun_script.context_info
        ctx.timezone, ctx.timezone_offset, ctx.locale = "UTC", 0, "en-US"
        ctx.url = f"{self.base_url}/{self.page_name}"
        ctx.is_embedded, ctx.color_scheme = False, "light"

    def key_of(self, suffix_pattern: str) -> list[str]:
        """The user keys of widgets on screen matching a regular expression."""
        rx = re.compile(suffix_pattern)
        return [k for k in self.widgets if rx.fullmatch(k)]

    async def press(self, key: str, *, set_values: dict[str, str] | None = None) -> Run:
        """Press the button with user key `key` (a click or its shortcut key)."""
        w = self.widgets.get(key)
        if w is None or w.kind != "button":
            raise ProtocolError(f"no button {key!r} on screen")
        msg = self._rerun(set_values)
        msg.rerun_script.widget_states.widgets.append(WidgetState(id=w.id, trigger_value=True))
        msg.rerun_script.fragment_id = w.fragment
        return await self._send(msg, fragment=w.fragment)

    def data_of(self, key: str) -> Any:
        """The data the page sent the component with user key `key` (None when not on screen)."""
        w = self.widgets.get(key)
        return w.data if w is not None and w.kind == "bidi_component" else None

    async def set_state(self, key: str, name: str, value: Any) -> Run:
        """Set the state value `name` of the component with user key `key`, as its script's
        `setStateValue` does: the component's whole state is sent, which reruns its fragment."""
        w = self.widgets.get(key)
        if w is None or w.kind != "bidi_component":
            raise ProtocolError(f"no component {key!r} on screen")
        state = json.loads(w.state.json_value) if w.state is not None and w.state.json_value else {}
        w.state = WidgetState(id=w.id, json_value=json.dumps({**state, name: value}))
        msg = self._rerun(None)
        msg.rerun_script.fragment_id = w.fragment
        return await self._send(msg, fragment=w.fragment)

    async def choose(self, key: str, value: str) -> Run:
        """Pick `value` (an option's shown text) in the selectbox with user key `key`."""
        w = self.widgets.get(key)
        if w is None or w.kind != "selectbox":
            raise ProtocolError(f"no selectbox {key!r} on screen")
        msg = self._rerun({key: value})
        msg.rerun_script.fragment_id = w.fragment
        return await self._send(msg, fragment=w.fragment)

    async def rerun(self) -> Run:
        """Run the page again with every widget as it is (Streamlit's "Rerun", key R)."""
        return await self._send(self._rerun(None), fragment="")

    async def submit_form(self, field_key: str, value: str, submit_key: str) -> Run:
        """Type `value` into a form's text field and press its submit button."""
        field_w, submit = self.widgets.get(field_key), self.widgets.get(submit_key)
        if field_w is None or submit is None:
            raise ProtocolError(f"no form field {field_key!r} / button {submit_key!r} on screen")
        msg = self._rerun({field_key: value})
        msg.rerun_script.widget_states.widgets.append(WidgetState(id=submit.id, trigger_value=True))
        return await self._send(msg, fragment=submit.fragment)

    def _rerun(self, set_values: dict[str, str] | None) -> BackMsg:
        msg = BackMsg()
        rs = msg.rerun_script
        rs.query_string = self.query_string
        rs.page_script_hash = self.page_hash
        for key, w in self.widgets.items():
            if w.state is None:
                continue
            ws = WidgetState()
            ws.CopyFrom(w.state)
            if set_values and key in set_values:
                ws.string_value = set_values[key]
            rs.widget_states.widgets.append(ws)
        self._context(msg)
        return msg

    async def _send(self, msg: BackMsg, fragment: str) -> Run:
        assert self.conn is not None
        run = Run(sent_at=time.perf_counter())
        await self.conn.send(msg.SerializeToString())
        drawn: dict[str, Widget] = {}
        run_fragment = fragment
        deadline = run.sent_at + self.timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"no end of the script run within {self.timeout:.0f} s")
            raw = await asyncio.wait_for(self.conn.recv(decode=False), timeout=left)
            now = time.perf_counter()
            fm = ForwardMsg()
            fm.ParseFromString(raw)
            kind = fm.WhichOneof("type")
            if kind == "delta":
                self._delta(fm, now, run, drawn)
            elif kind == "navigation":
                self.page_hashes = {p.page_name.lower(): p.page_script_hash for p in fm.navigation.app_pages}
                self.page_hash = fm.navigation.page_script_hash
            elif kind == "page_info_changed":
                self.query_string = fm.page_info_changed.query_string
            elif kind == "script_finished":
                status = fm.script_finished
                if status == _FINISHED_EARLY:
                    # st.rerun(): the server starts the next run by itself; keep reading.
                    drawn.clear()
                    run_fragment = ""
                    continue
                run.finished_at, run.status = now, int(status)
                if status == _COMPILE_ERROR:
                    run.errors.append("the script did not compile")
                break
        # A full run replaces every widget; a fragment run only the fragment's own.
        if run_fragment:
            self.widgets = {k: w for k, w in self.widgets.items() if w.fragment != run_fragment}
        else:
            self.widgets = {}
        self.widgets.update(drawn)
        return run

    def _delta(self, fm: ForwardMsg, now: float, run: Run, drawn: dict[str, Widget]) -> None:
        delta = fm.delta
        if delta.WhichOneof("type") == "add_block":
            m = _KEYED.match(delta.add_block.id)
            if m:
                run.block_keys.append(m["key"])
            return
        if delta.WhichOneof("type") != "new_element":
            return
        el_kind = delta.new_element.WhichOneof("type")
        if el_kind is None:
            return
        el = getattr(delta.new_element, el_kind)
        if el_kind == "toast":
            run.toasts.append(el.body)
        elif el_kind == "alert" and el.format == _ALERT_ERROR:
            run.errors.append(el.body)
        elif el_kind == "exception":
            run.exceptions.append(f"{el.type}: {el.message}")
        wid = getattr(el, "id", "")
        if not wid or not isinstance(wid, str):
            return
        m = _KEYED.match(wid)
        key = m["key"] if m and m["key"] != "None" else wid  # "None": a widget without a key
        state = _widget_state(el_kind, el)
        data = None
        if el_kind == "bidi_component":
            # A component keeps the state its script set (the browser's widget manager does).
            old = self.widgets.get(key)
            state = old.state if old is not None else None
            data = json.loads(el.json) if el.WhichOneof("data") == "json" else None
        drawn[key] = Widget(
            wid,
            el_kind,
            delta.fragment_id,
            state,
            disabled=bool(getattr(el, "disabled", False)),
            options=tuple(el.options) if el_kind == "selectbox" else (),
            data=data,
        )
        run.widgets_at[key] = now


__all__ = ["ProtocolError", "Run", "Session", "Widget"]
