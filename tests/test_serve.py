"""`make run` serves on the loopback interface only, whatever the machine's other addresses."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from tests.helpers import wait_healthy

ROOT = Path(__file__).resolve().parents[1]


def _listening(port: int) -> set[str]:
    """Local addresses with a TCP socket in LISTEN state on `port`, from /proc/net/tcp{,6}."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, _, hexport = local.partition(":")
            if state == "0A" and int(hexport, 16) == port:
                if len(addr) == 8:
                    found.add(socket.inet_ntop(socket.AF_INET, bytes.fromhex(addr)[::-1]))
                else:
                    raw = bytes.fromhex(addr)
                    found.add(
                        socket.inet_ntop(
                            socket.AF_INET6, b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                        )
                    )
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc/net/tcp")
def test_make_run_listens_on_loopback_only(tmp_path: Path) -> None:
    if shutil.which("make") is None or not (ROOT / ".venv" / "bin" / "streamlit").exists():
        pytest.fail("make run needs make and the project's .venv (run make test, which builds it)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "CALIBRATION_DB": str(tmp_path / "serve.db")}
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "run", f"PORT={port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_healthy(port, proc, lambda: proc.stdout.read().decode(errors="replace") if proc.stdout else "")
        assert _listening(port) == {"127.0.0.1"}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_listening_reader_sees_a_planted_socket() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert "127.0.0.1" in _listening(s.getsockname()[1])
