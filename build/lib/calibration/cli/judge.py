"""`judge run`: the judge lab."""

from __future__ import annotations

import argparse
from pathlib import Path


def _add_judge(sub: argparse._SubParsersAction) -> None:
    from .. import judge

    p = sub.add_parser("judge", help="judge lab: re-run a judge prompt over stored claims")
    jsub = p.add_subparsers(dest="judge_command", required=True, metavar="ACTION")
    r = jsub.add_parser(
        "run", help="judge the claims in scope with an OpenAI-compatible endpoint as a new run",
        description="Creates the judge run MODEL@VERSION (or resumes it: answers already judged "
        "are not requested again) and compares it on the human labels with the run that shares "
        "the most labeled claims. Exit status 0 when every answer is judged; 1 when any answer "
        "failed (the same command again retries only those), when the endpoint cannot be reached, "
        "or on invalid input; 130 when interrupted.")
    r.add_argument("--base-url", required=True, help="e.g. http://localhost:8000/v1")
    r.add_argument("--model", required=True)
    r.add_argument("--prompt-version", required=True,
                   help="version name of the prompt; without --prompt-file, a template in "
                   f"calibration/prompts ({', '.join(judge.available_templates())})")
    r.add_argument("--prompt-file", type=Path, help="template file with {question} {chunks} "
                   "{answer} {claims}")
    r.add_argument("--scope", default="labeled", help="labeled (default), all or cycle:NAME")
    r.add_argument("--concurrency", type=int, default=4, help="requests in flight (default 4)")
    r.add_argument("--timeout", type=float, default=120.0, help="seconds per request (default 120)")
    r.add_argument("--max-attempts", type=int, default=5,
                   help="HTTP attempts per request on 429 / 5xx / timeouts (default 5)")
    r.add_argument("--temperature", type=float, default=0.0)
    r.add_argument("--max-tokens", type=int)
    r.add_argument("--json-mode", action="store_true",
                   help='send response_format {"type": "json_object"} (if the server supports it)')
    r.add_argument("--api-key-env", help="environment variable holding the API key "
                   f"(default {judge.DEFAULT_API_KEY_ENV}; unset means no key, fine for local servers)")
    r.add_argument("--baseline", help="run to compare with, MODEL@VERSION (default: the run sharing the most "
                   "human-labeled claims)")
    r.set_defaults(handler=judge.cli_run)



def register(sub: argparse._SubParsersAction) -> None:
    _add_judge(sub)
