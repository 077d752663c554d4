"""Few-shot examples from reviewers' corrections, and the check that no holdout claim leaks
into a prompt.

The rule (`pick_examples`, pure): candidates are human-labeled *tuning* claims with the
verdict of the run being revised. Claims the judge got wrong are grouped by error type
(judge verdict -> human verdict); the types take turns, largest first, so one common error
cannot fill every slot. After every WRONG_PER_RIGHT wrong examples one the judge got right
is added (its verdicts also taking turns), so the model also sees what a correct call looks
like. At most one example per answer, at most `max_count` examples and `max_chars`
characters in all; within a type the order is a seeded shuffle, so the same labels give the
same examples.

Each example shows the question, the relevant chunks (those the reviewers cited, else those
the judge cited, else all; each cut to CHUNK_CHARS), the claim, the human verdict and the
reviewers' notes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ConflictError
from ..store import ExampleMaterial, ExampleRecord
from .prompts import AnswerInput, own_material

DEFAULT_MAX_EXAMPLES = 6
DEFAULT_MAX_CHARS = 6000
WRONG_PER_RIGHT = 2
CHUNK_CHARS = 600
MIN_LEAK_CHARS = 8  # shorter claim texts ("Yes.") occur by chance in any prompt


@dataclass(frozen=True, slots=True)
class Candidate:
    """A tuning claim that could serve as an example."""

    claim_pk: int
    key: str  # ANSWER/CLAIM
    answer_id: str
    human: str
    judge: str

    @property
    def kind(self) -> str:
        if self.human == self.judge:
            return f"judge right: {self.judge}"
        return f"judge wrong: {self.judge} (human {self.human})"


def pick_examples(
    candidates: Sequence[Candidate], *, max_count: int = DEFAULT_MAX_EXAMPLES, seed: int = 0
) -> list[Candidate]:
    """The examples in prompt order, by the rule of the module docstring (before the
    character cap, which `build_examples` applies)."""
    rng = np.random.default_rng(seed)

    def queues(items: list[Candidate]) -> list[list[Candidate]]:
        groups: dict[str, list[Candidate]] = {}
        for c in sorted(items, key=lambda c: c.key):
            groups.setdefault(c.kind, []).append(c)
        out = []
        for kind in sorted(groups, key=lambda k: (-len(groups[k]), k)):
            g = groups[kind]
            out.append([g[i] for i in rng.permutation(len(g)).tolist()])
        return out

    def turns(qs: list[list[Candidate]]) -> Iterable[Candidate]:
        while any(qs):
            for q in qs:
                if q:
                    yield q.pop(0)

    wrong = turns(queues([c for c in candidates if c.human != c.judge]))
    right = turns(queues([c for c in candidates if c.human == c.judge]))
    chosen: list[Candidate] = []
    answers: set[str] = set()
    since_right = 0

    def take(src: Iterable[Candidate]) -> bool:
        for c in src:
            if c.answer_id not in answers:
                chosen.append(c)
                answers.add(c.answer_id)
                return True
        return False

    n_right = 0
    while len(chosen) < max_count:
        if since_right >= WRONG_PER_RIGHT and take(right):
            since_right, n_right = 0, n_right + 1
        elif take(wrong):
            since_right += 1
        elif n_right == 0 and take(right):  # no (more) judge errors: still show one right call
            n_right += 1
        else:
            break
    return chosen


def format_example(m: ExampleMaterial, c: Candidate) -> str:
    """One example as the judge reads it (numbered when the block is put together)."""
    cited = [ch for ch in m.chunks if ch[0] in set(m.cited)] or list(m.chunks)
    lines = [f"Question: {m.question}", "Relevant chunks:"]
    for cid, text in cited:
        cut = text if len(text) <= CHUNK_CHARS else text[:CHUNK_CHARS] + "…"
        lines.append(f"[{cid}] {cut}")
    lines.append(f"Claim: {m.claim}")
    if c.human != c.judge:
        lines.append(f"A judge said {c.judge}; the human reviewers' verdict is {c.human}.")
    lines.append(f"Correct verdict: {c.human}")
    for note in m.notes:
        lines.append(f"Reviewer's note: {note}")
    return "\n".join(lines)


def build_examples(
    picked: Sequence[Candidate],
    material: Mapping[int, ExampleMaterial],
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> list[ExampleRecord]:
    """The picked examples as stored texts, in order, while the total stays within `max_chars`
    (an example that would pass it is left out; later, shorter ones may still fit)."""
    out: list[ExampleRecord] = []
    total = 0
    for c in picked:
        m = material.get(c.claim_pk)
        if m is None:
            continue
        text = format_example(m, c)
        if total + len(text) > max_chars:
            continue
        out.append(ExampleRecord(c.claim_pk, c.kind, text))
        total += len(text) + 2
    return out


def examples_block(examples: Sequence[ExampleRecord], answer_of: Mapping[int, str], answer_id: str) -> str:
    """The text for {examples} in one answer's prompt: every example except those taken from
    that very answer (its own human label would be handed to the judge)."""
    shown = [e for e in examples if answer_of.get(e.claim_pk) != answer_id]
    return "\n\n".join(f"Example {i}\n{e.text}" for i, e in enumerate(shown, start=1))


class LeakGuard:
    """Refuses a prompt that carries a holdout claim's text.

    `holdout` maps each holdout claim's key to its text. A prompt may show the claims of the
    answer it judges (a holdout answer is judged too, on its own claims); any other holdout
    claim text in it, as an exact substring of MIN_LEAK_CHARS or more, is a leak.
    """

    def __init__(self, holdout: Mapping[int, str], holdout_pks: Iterable[int] = ()) -> None:
        self.texts = {pk: t.strip() for pk, t in holdout.items() if len(t.strip()) >= MIN_LEAK_CHARS}
        self.pks = set(holdout) | set(holdout_pks)

    def check_examples(self, examples: Sequence[ExampleRecord]) -> None:
        """No example may be taken from a holdout claim."""
        bad = [e.claim_pk for e in examples if e.claim_pk in self.pks]
        if bad:
            raise ConflictError(f"{len(bad)} few-shot example(s) come from holdout claims; refusing to send")

    def check(self, prompt: str, item: AnswerInput) -> str:
        """`prompt` unchanged, or ConflictError when it shows another answer's holdout claim."""
        own_pks = {c.claim_pk for c in item.claims}
        own = None
        for pk, text in self.texts.items():
            if pk in own_pks or text not in prompt:
                continue
            own = own if own is not None else own_material(item)
            if text in own:  # the answer's own text says the same words: not a leak
                continue
            raise ConflictError(
                f"the prompt for answer {item.answer_id} contains the text of a holdout "
                "claim; nothing was sent. Remove holdout text from the template or examples."
            )
        return prompt
