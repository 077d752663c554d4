"""`judge run`: the judge lab, and its run summary as text."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .. import judge, store
from ..errors import EndpointRejected, EndpointUnreachable, InputError, phrase
from ..fmt import ci, num, p_value, pct, plural, points
from ..judge.client import snippet
from .common import FLAGS, db_path, encoding


def _add_judge(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("judge", help="judge lab: re-run a judge prompt over stored claims")
    jsub = p.add_subparsers(dest="judge_command", required=True, metavar="ACTION")
    r = jsub.add_parser(
        "run",
        help="judge the claims in scope with an OpenAI-compatible endpoint as a new run",
        description="Creates the judge run MODEL@VERSION (or resumes it: answers already judged "
        "are not requested again) and compares it on the human labels with the run that shares "
        "the most labeled claims. Exit status 0 when every answer is judged; 1 when any answer "
        "failed (the same command again retries only those), when the endpoint cannot be reached, "
        "or on invalid input; 130 when interrupted.",
    )
    r.add_argument("--base-url", required=True, help="e.g. http://localhost:8000/v1")
    r.add_argument("--model", required=True, help="the model name the endpoint serves")
    r.add_argument(
        "--prompt-version",
        required=True,
        help="version name of the prompt; without --prompt-file, a template in "
        f"calibration/prompts ({', '.join(judge.available_templates())})",
    )
    r.add_argument(
        "--prompt-file",
        type=Path,
        help="template file with {question} {chunks} "
        "{answer} {claims}, and optionally {examples} (few-shot examples from tuning claims)",
    )
    r.add_argument(
        "--encoding",
        type=encoding,
        help="character encoding of --prompt-file (default UTF-8, with or without a BOM)",
    )
    r.add_argument(
        "--scope",
        default="labeled",
        help="labeled (default), tuning, holdout, all, cycle:NAME or run:MODEL@VERSION "
        "(the labeled claims one judge run judged)",
    )
    r.add_argument("--concurrency", type=int, default=4, help="requests in flight (default 4)")
    r.add_argument("--timeout", type=float, default=120.0, help="seconds per request (default 120)")
    r.add_argument(
        "--max-attempts",
        type=int,
        default=5,
        help="HTTP attempts per request on 429 / 5xx / timeouts (default 5)",
    )
    r.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0)")
    r.add_argument("--max-tokens", type=int, help="cap on each reply's tokens (default: the endpoint's)")
    r.add_argument(
        "--json-mode",
        action="store_true",
        help='send response_format {"type": "json_object"} (if the server supports it)',
    )
    r.add_argument(
        "--api-key-env",
        help="environment variable holding the API key "
        f"(default {judge.DEFAULT_API_KEY_ENV}; unset means no key, fine for local servers; "
        "others only when the operator lists them in CALIBRATION_JUDGE_KEY_ENVS)",
    )
    r.add_argument(
        "--revises",
        help="the run whose prompt this one revises, MODEL@VERSION: the default "
        "baseline and the source of few-shot examples (default: the only labeled run, else "
        "the only labeled run of the same model; a tie is refused)",
    )
    r.add_argument(
        "--baseline", help="run to compare with, MODEL@VERSION (default: the run this one revises)"
    )
    r.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    r.set_defaults(handler=cli_run)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _add_judge(sub)


def format_progress(p: judge.LabProgress) -> str:
    """One progress line: answers judged of the total, ok, failed, claims, tokens, seconds."""
    tokens = f" · {p.tokens:,} tokens" if p.tokens is not None else ""
    return (
        f"judged {p.done}/{p.total} answers · ok {p.ok} · failed {p.failed} · "
        f"{p.claims} claims{tokens} · {p.elapsed_s:.0f} s"
    )


def summary_lines(s: judge.LabSummary) -> list[str]:
    """The run summary as text lines: what this invocation did, the whole run, the comparison."""
    lines = [
        f"run {s.run.name} ({'resumed' if s.resumed else 'new'}), scope {s.scope}: "
        f"{plural(s.answers_in_scope, 'answer')} in scope, {s.answers_skipped} already judged",
        f"this invocation: answers ok {s.answers_ok}, failed {s.answers_failed}; "
        f"claims judged {s.claims_judged}; {s.elapsed_s:.1f} s",
    ]
    u, t = s.usage, s.totals
    if t.total_tokens is None:
        lines.append("tokens: not reported by the endpoint")
    else:
        lines.append(
            f"tokens this invocation: {u.total_tokens or 0:,} "
            f"(prompt {u.prompt_tokens or 0:,}, completion {u.completion_tokens or 0:,}); "
            f"whole run: {t.total_tokens:,}"
        )
    lines.append(
        f"whole run: answers ok {t.answers_ok}, failed {t.answers_failed}, claims judged {t.claims_judged}"
    )
    groups = judge.failure_groups(s.failures)
    for err, aids in groups[:10]:
        who = (
            aids[0]
            if len(aids) == 1
            else (f"{plural(len(aids), 'answer')} ({', '.join(aids[:5])}{', …' if len(aids) > 5 else ''})")
        )
        lines.append(f"  failed {who}: {snippet(err, 200)}")
    if len(groups) > 10:
        rest = sum(len(aids) for _, aids in groups[10:])
        lines.append(f"  ... and {plural(rest, 'more answer')} with other errors (see judge_calls)")
    lines.append(s.cost_line())
    if s.comparison is not None:
        comp = s.comparison
        c = comp.result
        left_out = f" ({comp.unresolved} unresolved left out)" if comp.unresolved else ""
        lines.append(f"baseline: {comp.baseline}: {phrase(s.baseline_reason, FLAGS)}")
        lines.append(f"verdict on the holdout: {comp.headline()}")
        for part, title in (
            (comp.holdout, "holdout (never seen while revising)"),
            (comp.tuning, "tuning (seen while revising)"),
        ):
            if part is None:
                lines.append(f"  {title}: no claims")
                continue
            r, d = part.result, part.difference
            diff = (
                ""
                if d.difference is None
                else (
                    f"; difference {points(d.difference)} (95% CI {points(d.ci_low, unit='')} to "
                    f"{points(d.ci_high, unit='')})"
                )
            )
            lines.append(
                f"  {title}: {plural(r.n_claims, 'claim')}; agreement {pct(r.agreement_a.value)} -> "
                f"{pct(r.agreement_b.value)}, kappa {num(r.kappa_a.value)} -> {num(r.kappa_b.value)}"
                f"{diff}; new right / old wrong {len(r.only_b_right)}, old right / new wrong "
                f"{len(r.only_a_right)}; exact McNemar {p_value(part.p)}"
            )
        lines.append(f"against {comp.baseline} on {comp.scope_text}{left_out}:")
        for name, est, kap in (
            (comp.baseline, c.agreement_a, c.kappa_a),
            (comp.run, c.agreement_b, c.kappa_b),
        ):
            # No bounds (no claims, or a degenerate table): nothing rather than "no interval".
            defined = est.ci_low is not None and est.ci_high is not None
            interval = f" ({ci(est.ci_low, est.ci_high)})" if defined else ""
            lines.append(f"  {name}: agreement {pct(est.value)}{interval}, kappa {num(kap.value)}")
        lines.append(
            f"  only the new run right on {plural(len(c.only_b_right), 'claim')}, only the "
            f"baseline on {plural(len(c.only_a_right), 'claim')}; exact McNemar "
            f"{p_value(c.mcnemar.p_two_sided)}"
        )
    elif t.claims_judged == 0:
        lines.append("the run has no verdicts yet (every answer failed): nothing to compare")
    elif s.baseline is not None:
        lines.append(
            f"no human-labeled claim judged by both this run and {s.baseline.name}: nothing to compare"
        )
    else:
        lines.append("no other run shares a human-labeled claim with this one: nothing to compare")
    return lines


def cli_run(args: argparse.Namespace) -> int:
    """`python -m calibration judge run ...`

    Exit status: 0 when every answer in scope is judged; 1 when any answer of this invocation
    failed (the same command again retries only those), when the endpoint cannot be reached
    or refuses the requests, or on invalid input; 130 when interrupted.
    """
    # The config checks the key variable and the base URL against the operator's policy first:
    # a variable that is not allowed is refused before its value is ever read.
    config = judge.JudgeConfig(
        base_url=args.base_url,
        model=args.model,
        api_key_env=args.api_key_env or judge.DEFAULT_API_KEY_ENV,
        temperature=args.temperature,
        timeout=args.timeout,
        concurrency=args.concurrency,
        max_attempts=args.max_attempts,
        max_tokens=args.max_tokens,
        json_mode=args.json_mode,
    )
    if args.api_key_env and not os.environ.get(args.api_key_env):
        raise InputError(f"--api-key-env {args.api_key_env}: that environment variable is not set")
    template = judge.load_template(args.prompt_version, args.prompt_file, encoding=args.encoding)
    with store.session(db_path(args)) as db:
        plan = judge.prepare_lab(
            db, config, template, scope=args.scope, revises=args.revises, baseline=args.baseline
        )
    print(plan.cost_line(), file=sys.stderr, flush=True)
    tty = sys.stderr.isatty()
    last_line_at = 0.0

    def progress(p: judge.LabProgress) -> None:
        nonlocal last_line_at
        # A rewritten line on a terminal; in a log, a line every few seconds and at the end.
        if tty:
            print(
                "\r" + format_progress(p), end="\n" if p.done == p.total else "", file=sys.stderr, flush=True
            )
        elif p.done == p.total or p.elapsed_s - last_line_at >= 5:
            last_line_at = p.elapsed_s
            print(format_progress(p), file=sys.stderr, flush=True)

    try:
        summary = judge.run_lab(config, template, db_path=db_path(args), progress=progress, plan=plan)
    except KeyboardInterrupt:
        print(
            "\ninterrupted: the answers judged so far are stored; run the same command again to continue",
            file=sys.stderr,
        )
        return 130
    except (EndpointUnreachable, EndpointRejected) as exc:
        if exc.answers_stored:
            print(
                f"\nthe run stopped; the {plural(exc.answers_stored, 'answer')} judged before the "
                "stop are stored: run the same command again to continue",
                file=sys.stderr,
            )
        raise  # main prints the error and exits 1
    if args.json:
        print(json.dumps(summary.to_dict(FLAGS), ensure_ascii=False, indent=2))
    else:
        print("\n".join(summary_lines(summary)))
    if summary.answers_failed:
        n, tried = summary.answers_failed, summary.answers_ok + summary.answers_failed
        print(
            f"{n} of {plural(tried, 'answer')} failed and {'has' if n == 1 else 'have'} no verdicts; "
            "run the same command again to retry them (answers already judged are not "
            "requested again)",
            file=sys.stderr,
        )
        return 1
    return 0
