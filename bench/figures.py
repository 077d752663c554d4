"""Every bench's figures, written where the manual includes them: docs/figures/NAME.md.

A bench runs its `main()` inside `recorded(__file__)`: what it prints still goes to the terminal,
and, when it ends without an exception, to docs/figures/<script>.md as well, under a line saying
when, on what machine and by which command it was measured. The pages pull these files in with
cog (`make cog`), and `make lint` fails while a page holds an older copy than its file.
`--figure NAME` (taken off the command line before the bench reads it) names the file
<script>-NAME.md instead, for a second configuration of the same bench that a page quotes.
"""

from __future__ import annotations

import contextlib
import io
import os
import platform
import shlex
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

FIGURES = Path(__file__).resolve().parents[1] / "docs" / "figures"


class _Tee(io.TextIOBase):
    """Writes go to the terminal and into a buffer."""

    def __init__(self, terminal: TextIO) -> None:
        self.terminal = terminal
        self.buffer_ = io.StringIO()

    def write(self, text: str) -> int:
        self.terminal.write(text)
        return self.buffer_.write(text)

    def flush(self) -> None:
        self.terminal.flush()


def machine() -> str:
    """The machine in one phrase: CPU model, cores, memory, load average at the start, Python."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        kib = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        memory = f", {kib / 2**20:.0f} GiB"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{platform.system()} {platform.machine()}, {cpu}, {os.cpu_count()} cores{memory}; "
        f"load average {load} at the start; Python {platform.python_version()}"
    )


def _figure_name(script: str) -> str:
    name = Path(script).stem
    if "--figure" in sys.argv:
        at = sys.argv.index("--figure")
        name = f"{name}-{sys.argv[at + 1]}"
        del sys.argv[at : at + 2]
    return name


@contextlib.contextmanager
def recorded(script: str) -> Iterator[None]:
    """Run the bench's main inside this: its standard output becomes docs/figures/NAME.md."""
    command = shlex.join(["python", f"bench/{Path(script).name}", *sys.argv[1:]])  # as typed
    name = _figure_name(script)
    header = f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine()}."
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        yield
    FIGURES.mkdir(parents=True, exist_ok=True)
    printed = tee.buffer_.getvalue().rstrip()
    (FIGURES / f"{name}.md").write_text(
        f"{header}\n\n```text\n$ {command}\n{printed}\n```\n", encoding="utf-8"
    )
    print(f"figures: docs/figures/{name}.md", file=sys.stderr)
