"""Judge lab: re-run a judge prompt over stored claims through an OpenAI-compatible endpoint.

The only package that speaks HTTP. Its modules, each usable without the ones after it:

- `prompts`: versioned templates, rendered by single-pass placeholder substitution;
- `replies`: the judge's JSON validated against the fixed claim ids, and the corrective message;
- `client`: `JudgeConfig` and `ChatClient` (/v1/chat/completions over httpx, a concurrency
  bound, a hard per-request deadline, retries with backoff and Retry-After);
- `runner`: one answer per call (`judge_answer`), many at once (`judge_items`), and lab runs
  (`run_lab`): a judge run with origin 'lab', resumable per answer;
- `policy`: what the operator allows (API-key variables, base URLs, reply size);
- `examples`: few-shot examples from tuning claims, and the holdout leak guard;
- `paired`: the paired difference interval and the labels a paired test would need;
- `compare`: the baseline of a run and the paired comparison on the human labels, holdout
  first, tuning beside it.

Storage is `calibration.store.lab`; the CLI command is `calibration.cli.judge`. The names
below are the package's public surface: `from calibration import judge; judge.run_lab(...)`.
"""

from ..store import LAB_ORIGIN, RunTotals
from .client import (
    FATAL_STATUS,
    RETRYABLE_STATUS,
    ChatClient,
    Completion,
    JudgeConfig,
    Usage,
    backoff_delay,
    describe_connect_error,
    parse_retry_after,
)
from .compare import (
    BaselineOption,
    ComparisonRow,
    LabComparison,
    PartComparison,
    baseline_choice,
    baseline_options,
    compare_runs,
    compare_with_all,
    comparison_table,
    default_baseline,
)
from .examples import LeakGuard, pick_examples
from .policy import DEFAULT_API_KEY_ENV, EndpointPolicy, chat_url
from .prompts import (
    DEFAULT_TEMPLATE,
    PLACEHOLDERS,
    PROMPTS_DIR,
    AnswerInput,
    ChunkText,
    ClaimText,
    PromptTemplate,
    available_templates,
    check_template,
    format_chunks,
    format_claims,
    load_template,
    render,
    render_prompt,
    template_from_text,
)
from .replies import ClaimVerdict, correction_message, parse_reply
from .runner import (
    INVALID_REPLY_STOP,
    SCOPE_KINDS,
    AnswerResult,
    LabPlan,
    LabProgress,
    LabScope,
    LabSummary,
    RunPlan,
    arun_lab,
    choose_revised_run,
    failure_groups,
    judge_answer,
    judge_items,
    load_inputs,
    parse_scope,
    plan_run,
    prepare_lab,
    revised_run_options,
    run_lab,
    scope_answer_ids,
)

__all__ = [
    "DEFAULT_API_KEY_ENV",
    "DEFAULT_TEMPLATE",
    "FATAL_STATUS",
    "INVALID_REPLY_STOP",
    "LAB_ORIGIN",
    "PLACEHOLDERS",
    "PROMPTS_DIR",
    "RETRYABLE_STATUS",
    "SCOPE_KINDS",
    "AnswerInput",
    "AnswerResult",
    "BaselineOption",
    "ChatClient",
    "ChunkText",
    "ClaimText",
    "ClaimVerdict",
    "ComparisonRow",
    "Completion",
    "EndpointPolicy",
    "JudgeConfig",
    "LabComparison",
    "LabPlan",
    "LabProgress",
    "LabScope",
    "LabSummary",
    "LeakGuard",
    "PartComparison",
    "PromptTemplate",
    "RunPlan",
    "RunTotals",
    "Usage",
    "arun_lab",
    "available_templates",
    "backoff_delay",
    "baseline_choice",
    "baseline_options",
    "chat_url",
    "check_template",
    "choose_revised_run",
    "compare_runs",
    "compare_with_all",
    "comparison_table",
    "correction_message",
    "default_baseline",
    "describe_connect_error",
    "failure_groups",
    "format_chunks",
    "format_claims",
    "judge_answer",
    "judge_items",
    "load_inputs",
    "load_template",
    "parse_reply",
    "parse_retry_after",
    "parse_scope",
    "pick_examples",
    "plan_run",
    "prepare_lab",
    "render",
    "render_prompt",
    "revised_run_options",
    "run_lab",
    "scope_answer_ids",
    "template_from_text",
]
