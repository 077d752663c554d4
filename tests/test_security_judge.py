"""The judge client under the attack run's inputs, every one against a real server on 127.0.0.1.

Base URLs that would lead the operator's key outside the allowed prefix, URLs httpx cannot
build, redirecting endpoints, replies built to make parsing slow, and JSON nested past any
recursion limit: each is one sentence (refused, or one answer's failure), never a request to
the wrong place and never a traceback.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from calibration import judge, store
from calibration.cli import main
from calibration.errors import EndpointRejected, InputError, ReplyError
from calibration.importing import import_answers
from calibration.judge.replies import fenced, strip_think
from tests.helpers import assert_no_traceback

from .judge_stub import Reply, StubRequest, StubServer, completion, verdicts_json

ROOT = Path(__file__).resolve().parents[1]
KEY_ENV = "CALIBRATION_TEST_JUDGE_KEY"
KEY = "sk-operator-secret"
N_ANSWERS = 3


@pytest.fixture(autouse=True)
def _operator_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # The key an operator set, in a variable the operator allowed.
    monkeypatch.setenv("CALIBRATION_JUDGE_KEY_ENVS", KEY_ENV)
    monkeypatch.setenv(KEY_ENV, KEY)


@pytest.fixture
def answers_db(db_path: Path, tmp_path: Path) -> Path:
    """A database with N_ANSWERS answers of two claims each (claim ids A<i>.c1, A<i>.c2)."""
    src = tmp_path / "answers.jsonl"
    src.write_text(
        "\n".join(
            json.dumps(
                {
                    "id": f"A{i}",
                    "question": "q?",
                    "answer": "Ten days. After payment.",
                    "judge_model": "j",
                    "judge_prompt_version": "v0",
                    "chunks": [{"id": "S1", "text": "Delivery takes ten days."}],
                    "claims": [
                        {"id": f"A{i}.c1", "claim": "Ten days.", "verdict": "SUPPORTED"},
                        {"id": f"A{i}.c2", "claim": "After payment.", "verdict": "UNSUPPORTED"},
                    ],
                }
            )
            for i in range(1, N_ANSWERS + 1)
        ),
        encoding="utf-8",
    )
    with store.session(db_path) as db:
        import_answers(db, src)
    return db_path


@pytest.fixture
def stub() -> Iterator[StubServer]:
    """A judge endpoint that answers every claim; `received` lists every path it was sent."""
    with StubServer() as server:
        yield server


def cli(db: Path, base_url: str, *extra: str) -> tuple[int, str]:
    """`judge run` in this process (the policy comes from this process's environment)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(
            [
                "--db",
                str(db),
                "judge",
                "run",
                "--base-url",
                base_url,
                "--model",
                "m",
                "--prompt-version",
                "grounding-v1",
                "--scope",
                "all",
                "--api-key-env",
                KEY_ENV,
                "--timeout",
                "5",
                *extra,
            ]
        )
    for name, text in (("stdout", out.getvalue()), ("stderr", err.getvalue())):
        assert_no_traceback(text, f"{name} of judge run --base-url {base_url}")
    return code, err.getvalue()


def lab_config(base_url: str, **kw: object) -> judge.JudgeConfig:
    opts: dict[str, object] = dict(
        base_url=base_url,
        model="m",
        api_key_env=KEY_ENV,
        timeout=5.0,
        backoff_base=0.01,
        backoff_max=0.02,
        concurrency=1,
    )
    opts.update(kw)
    return judge.JudgeConfig(**opts)  # type: ignore[arg-type]


def lab_run(db: Path, base_url: str, **kw: object) -> judge.LabSummary:
    """A lab run over every answer of `db` at `base_url`."""
    template = judge.PromptTemplate("sec", judge.load_template("grounding-v1").text)
    return judge.run_lab(lab_config(base_url, **kw), template, db_path=db, scope="all")


# ---------------------------------------------------------------- 1. the allowlist and the final URL

# Appended to an allowed base URL http://127.0.0.1:P/v1: each would lead the request (and the key)
# elsewhere on the host, through httpx's joining or the server's decoding.
ESCAPING_TAILS = [
    "/%2e%2e/admin",
    "/%2E%2E/admin",
    "/.%2e/admin",
    "/%2e./admin",
    "/..%2fadmin",
    "/..%2Fadmin",
    "/%2e%2e%2fadmin",
    "/..\\admin",
    "\\..\\admin",
    "/..%5cadmin",
    "//admin",
    "/%2fadmin",
    "/../admin",
    "/./../admin",
    "/..;/admin",
    "/%252e%252e/admin",
    "/%u002e%u002e/admin",
    "/%c0%ae%c0%ae/admin",
    "/\uff0e\uff0e/admin",
]


@pytest.mark.parametrize("tail", ESCAPING_TAILS)
def test_no_request_leaves_the_allowed_prefix(
    answers_db: Path, stub: StubServer, tail: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALIBRATION_JUDGE_BASE_URLS", stub.base_url)
    base = stub.base_url + tail
    code, stderr = cli(answers_db, base)
    assert not [path for path, _ in stub.received if "admin" in path]
    assert stub.received == []  # nothing was sent at all
    assert code == 1 and "base URL" in stderr
    with pytest.raises(InputError, match="base URL") as err:
        lab_config(base)
    assert len(err.value.lines()) == 1 and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("tail", "words"),
    [
        ("/%2e%2e/admin", "has '%2e' in its path: give the path without percent-encoding"),
        ("/..%2Fadmin", "has '%2F' in its path"),
        ("/..%5cadmin", "has '%5c' in its path"),
        ("/%252e%252e/admin", "has '%25' in its path"),
        ("/%u002e%u002e/admin", "has '%u0' in its path"),
        ("/%c0%ae%c0%ae/admin", "has '%c0' in its path"),
        ("/..\\admin", "has a backslash in its path, which holds only ASCII letters"),
        ("/\uff0e\uff0e/admin", "has '\uff0e' in its path"),
        ("/a b", "has ' ' in its path"),
        ("/../admin", "'.' or '..' segment"),
        ("/..;x/admin", "'.' or '..' segment"),
        ("//admin", "empty segment"),
    ],
)
def test_an_escaping_base_url_is_refused_with_what_is_wrong(tail: str, words: str) -> None:
    for policy in (judge.EndpointPolicy(), judge.EndpointPolicy(base_url_prefixes=("http://h/v1",))):
        [problem] = policy.base_url_problems("http://h/v1" + tail)
        assert words in problem and "http://h/v1" in problem


def test_the_allowlist_is_checked_on_the_url_requested(
    answers_db: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALIBRATION_JUDGE_BASE_URLS", stub.base_url)
    root = stub.base_url.removesuffix("/v1")
    # Typed without /v1, but the request goes to /v1/chat/completions: inside the prefix.
    code, _ = cli(answers_db, root)
    assert code == 0
    assert {path for path, _ in stub.received} == {"/v1/chat/completions"}
    assert {auth for _, auth in stub.received} == {f"Bearer {KEY}"}
    # A full URL outside the prefix is refused, however it is typed.
    policy = judge.EndpointPolicy(base_url_prefixes=(stub.base_url,))
    [problem] = policy.base_url_problems(root + "/admin/chat/completions")
    assert "request URL" in problem and "/admin/chat/completions" in problem


def test_the_client_refuses_a_url_outside_the_policy_before_any_request(stub: StubServer) -> None:
    # A config checked against no prefix, used by a client whose policy has one: the check on the
    # URL httpx built stops it before the first request.
    import asyncio

    cfg = lab_config(
        stub.base_url.removesuffix("/v1") + "/admin", policy=judge.EndpointPolicy(key_envs=(KEY_ENV,))
    )
    object.__setattr__(
        cfg, "policy", judge.EndpointPolicy(key_envs=(KEY_ENV,), base_url_prefixes=(stub.base_url,))
    )

    async def go() -> None:
        async with judge.ChatClient(cfg) as client:
            await client.complete([{"role": "user", "content": "hi"}])

    with pytest.raises(EndpointRejected, match="not under a base URL the operator allowed"):
        asyncio.run(go())
    assert stub.received == []


# ---------------------------------------------------------------- 2. URLs httpx cannot build


def run_cli(*args: str, db: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "calibration", "--db", str(db), *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONIOENCODING": "utf-8", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    for stream, text in (("stderr", proc.stderr), ("stdout", proc.stdout)):
        assert_no_traceback(text, f"{stream} of calibration {' '.join(args)}")
    return proc


@pytest.mark.parametrize("tail", ["/v1%23", "/v1%3F", "/v1%3fx=1", "/v1%23/x"])
@pytest.mark.parametrize("allowlist", [False, True])
def test_an_encoded_query_or_fragment_is_one_sentence(
    answers_db: Path, stub: StubServer, tail: str, allowlist: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if allowlist:
        monkeypatch.setenv("CALIBRATION_JUDGE_BASE_URLS", stub.base_url)
    code, stderr = cli(answers_db, stub.base_url.removesuffix("/v1") + tail)
    assert code == 1
    [line] = stderr.strip().splitlines()
    assert line.startswith("error: base URL") and "in its path" in line
    assert stub.received == []


@pytest.mark.slow
def test_an_encoded_fragment_through_the_cli_process_is_one_sentence(answers_db: Path) -> None:
    # The case of the attack run as it was: the CLI as a process, no allowlist.
    proc = run_cli(
        "judge",
        "run",
        "--base-url",
        "http://127.0.0.1:9/v1%23",
        "--model",
        "m",
        "--prompt-version",
        "grounding-v1",
        "--scope",
        "all",
        db=answers_db,
        env={"CALIBRATION_JUDGE_BASE_URLS": ""},
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "error: base URL 'http://127.0.0.1:9/v1%23' has '%23' in its path: give the path without "
        "percent-encoding (an encoded '.', '/' or '\\' could lead the request out of the allowed path)"
    ]


# ---------------------------------------------------------------- 3. redirects


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("target", ["itself", "elsewhere"])
def test_a_redirect_stops_the_run_at_the_first_request(answers_db: Path, status: int, target: str) -> None:
    with StubServer() as other:

        def redirect(req: StubRequest) -> Reply:
            to = (stub if target == "itself" else other).base_url + "/chat/completions"
            return Reply(status, b"", {"Location": to})

        with StubServer(handler=redirect) as stub:
            with pytest.raises(EndpointRejected, match=f"redirect \\(HTTP {status}") as err:
                lab_run(answers_db, stub.base_url, max_attempts=5)
            assert stub.count == 1  # not retried, not followed, no other answer tried
        assert other.received == []  # the key never went where the redirect pointed
    assert "redirects are not followed" in str(err.value)


def test_a_redirect_in_the_cli_is_one_sentence(answers_db: Path) -> None:
    with StubServer(handler=lambda req: Reply(302, b"", {"Location": "http://127.0.0.1:9/x"})) as stub:
        code, stderr = cli(answers_db, stub.base_url, "--concurrency", "4")
        assert stub.count <= 4  # the requests in flight when the first redirect came back
    assert code == 1 and "error: " in stderr and "redirects are not followed" in stderr


# ---------------------------------------------------------------- 4. reply parsing in linear time

IDS = ["c1", "c2"]
GOOD = verdicts_json(IDS)


def think_reference(text: str) -> str:
    """`strip_think` by its definition, character by character (quadratic; for short texts)."""
    low = text.lower()
    out, i = [], 0
    while i < len(text):
        if low.startswith("<think>", i):
            depth, j = 0, i
            while j < len(text):
                if low.startswith("<think>", j):
                    depth, j = depth + 1, j + len("<think>")
                elif low.startswith("</think>", j):
                    depth, j = depth - 1, j + len("</think>")
                    if depth == 0:
                        break
                else:
                    j += 1
            if depth:  # never closed: kept, with everything after it
                out.append(text[i:])
                break
            i = j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ""),
        ("plain", "plain"),
        ("<think>r</think>X", "X"),
        ("A<think>1</think>B<THINK>2</Think>C", "ABC"),
        ("<think>a<think>b</think>c</think>X", "X"),  # nested: the inner pair does not end the block
        ("<think><think><think>x</think></think></think>X", "X"),
        ("<think>a</think><think>b", "<think>b"),  # unclosed: kept as text
        ("<think>a<think>b</think>c", "<think>a<think>b</think>c"),
        ("x</think><think>y</think>z", "x</think>z"),  # a stray closing tag is text
        ("</think></think>", "</think></think>"),
        ("<think>" * 50_000, "<think>" * 50_000),
        ("<think>" * 50_000 + "</think>", "<think>" * 50_000 + "</think>"),
        ("<think>" * 50_000 + "</think>" * 50_000 + "X", "X"),
        ("<think></think>" * 50_000 + "X", "X"),
        ("<think>" + "a" * 1_000_000, "<think>" + "a" * 1_000_000),
        ("</think>" * 50_000 + "X", "</think>" * 50_000 + "X"),
        ("<thinK>é</THINK>İ", "İ"),
    ],
)
def test_think_blocks_are_stripped(text: str, expected: str) -> None:
    assert strip_think(text) == expected


def random_texts(seed: int, pieces: list[str], n: int = 20_000, longest: int = 14) -> Iterator[str]:
    """`n` short texts made of `pieces`: every interleaving of tags a few pieces long comes up."""
    rnd = random.Random(seed)
    for _ in range(n):
        yield "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, longest)))


def test_think_stripping_matches_its_definition_on_random_texts() -> None:
    pieces = ["<think>", "</think>", "<THINK>", "</Think>", "<think", "think>", "a", "<", "/", "\n"]
    for text in random_texts(20261201, pieces):
        assert strip_think(text) == think_reference(text), text


OLD_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)```", re.DOTALL)  # the former rule


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no fence", None),
        ("```json\n{}\n```", "{}\n"),
        ("say ```{}``` and ```[]```", "{}"),
        ("````", None),
        ("```" + "a" * 1_000_000, None),
        ("```json" + " " * 100_000, None),
        ("```" * 50_001, ""),
    ],
)
def test_fences_are_found(text: str, expected: str | None) -> None:
    assert fenced(text) == expected


def test_fence_finding_matches_the_former_expression_on_random_texts() -> None:
    for text in random_texts(7, ["```", "`", "json", "a", " ", "\t", "\r", "\n", "{}", "-"]):
        m = OLD_FENCE.search(text)
        assert fenced(text) == (m.group(1) if m else None), text


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("<think>" * 50_000, "not valid JSON"),
        ("<think>" * 50_000 + GOOD, "not valid JSON"),  # never closed: no block, the tags stay
        ("```" + "a" * 200_000, "not valid JSON"),
        ("<think>why</think>" * 20_000 + "```json\n" + GOOD + "\n```", None),
        ("<think>a<think>b</think>c</think>" + GOOD, None),
        ("<think>" + "x" * 200_000 + "</think>\n" + GOOD, None),
    ],
)
def test_hostile_replies_parse_to_known_answers(content: str, error: str | None) -> None:
    if error is None:
        assert [v.claim_id for v in judge.parse_reply(content, IDS)] == IDS
    else:
        with pytest.raises(ReplyError, match=error):
            judge.parse_reply(content, IDS)


# ---------------------------------------------------------------- 5. deep and odd JSON

DEEP = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (DEEP, "nested deeper than 100 levels"),
        ('{"verdicts": ' * 150 + "[]" + "}" * 150, "nested deeper than 100 levels"),
        ("[" * 101 + "]" * 101, "nested deeper than 100 levels"),
        ('{"verdicts": [{"id": "c1", "verdict": "SUPPORTED", "score": NaN}]}', "NaN is not valid JSON"),
        ('[{"id": "c1", "verdict": "SUPPORTED", "rationale": "\\ud800"}]', "lone surrogate"),
        ('{"verdicts": [{"id": "c1", "verdict": SUPPORTED', "not valid JSON (Expecting value at line 1"),
    ],
)
def test_unusable_json_in_a_reply_is_a_reply_error(content: str, error: str) -> None:
    with pytest.raises(ReplyError, match=re.escape(error)):
        judge.parse_reply(content, IDS)


def test_deep_json_as_the_reply_content_fails_that_answer_only(answers_db: Path) -> None:
    def reply(req: StubRequest) -> Reply:
        deep = req.key == "A2"
        return Reply(body=completion(DEEP if deep else verdicts_json(req.claim_ids)))

    with StubServer(handler=reply) as stub:
        summary = lab_run(answers_db, stub.base_url)
        assert len(stub.requests_for("A2")) == 2  # one corrective round, as for any bad reply
    assert (summary.answers_ok, summary.answers_failed) == (N_ANSWERS - 1, 1)
    [(aid, error)] = summary.failures
    assert aid == "A2" and error == (
        "invalid reply after a corrective retry: the reply cannot be "
        "read: nested deeper than 100 levels; refused"
    )


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (DEEP.encode(), "nested deeper than 100 levels"),
        (b'{"choices": [{"message": {"content": "\\udc00"}}]}', "lone surrogate"),
        (
            b'{"choices": [{"message": {"content": "x"}}], "usage": {"total_tokens": Infinity}}',
            "Infinity is not valid JSON",
        ),
    ],
)
def test_an_unusable_response_body_is_one_answers_failure(answers_db: Path, body: bytes, error: str) -> None:
    with StubServer(handler=lambda req: Reply(body=body)) as stub:
        summary = lab_run(answers_db, stub.base_url, max_attempts=2)
        assert stub.count == 2 * N_ANSWERS  # retried like any unreadable body, then the answer failed
    assert summary.answers_failed == N_ANSWERS and summary.answers_ok == 0
    assert all(error in e and "gave up after 2 attempts" in e for _, e in summary.failures)


def test_deep_json_through_the_cli_is_one_sentence_per_answer(answers_db: Path) -> None:
    with StubServer(handler=lambda req: Reply(body=completion(DEEP))) as stub:
        code, stderr = cli(answers_db, stub.base_url)
    assert code == 1
    assert f"{N_ANSWERS} of {N_ANSWERS} answers failed" in stderr
