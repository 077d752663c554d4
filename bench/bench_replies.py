"""Time of reading one judge reply (`parse_reply`): hostile replies of 196 KB and 1 MB against a normal one.

    python bench/bench_replies.py [--repeat 5]

The hostile replies are the shapes that made the former regular expressions quadratic (an
unclosed `<think>` repeated, an opening tag followed by a megabyte of text, an unclosed code fence
with a long language tag) and deep JSON; each is parsed as the client would, into a ReplyError or
verdicts. Linear parsing keeps the 1 MB figures about five times the 196 KB ones, and both far
below a second. Prints the median of `--repeat` runs; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration.errors import ReplyError  # noqa: E402
from calibration.judge import parse_reply  # noqa: E402
from tests.judge_stub import verdicts_json  # noqa: E402

IDS = [f"c{i}" for i in range(1, 9)]
GOOD = verdicts_json(IDS)


def hostile(size: int) -> dict[str, str]:
    """The hostile replies of about `size` characters, by name."""
    return {
        "<think> repeated, never closed": "<think>" * (size // 7),
        "<think> then text, never closed": "<think>" + "a" * size,
        "nested <think> blocks, then JSON": "<think>" * (size // 15) + "</think>" * (size // 16) + GOOD,
        "many closed <think> blocks, then JSON": "<think>.</think>" * (size // 16) + GOOD,
        "unclosed fence, long language tag": "```" + "a" * size,
        "JSON nested deep": "[" * (size // 2) + "]" * (size // 2),
    }


def median_seconds(content: str, repeat: int) -> float:
    def once() -> None:
        with contextlib.suppress(ReplyError):
            parse_reply(content, IDS)

    return statistics.median(timed(once) for _ in range(repeat))


def timed(fn: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    normal = "<think>The first claim is in chunk S1; the rest is not.</think>\n```json\n" + GOOD + "\n```"
    print(f"normal reply ({len(normal):,} characters): {median_seconds(normal, args.repeat) * 1e3:.3f} ms")
    for size in (196_000, 1_000_000):
        for name, content in hostile(size).items():
            print(
                f"{len(content):>9,} characters, {name}: {median_seconds(content, args.repeat) * 1e3:.1f} ms"
            )


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        main()
