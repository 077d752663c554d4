"""RefChecker output: claim triplets checked against references.

Shape (RefChecker 0.2.17, `refchecker/cli.py`, functions `extract` and `check`, and the
README's "check" section): `refchecker-cli check` writes a JSON array with one item per
input item, keeping every input field (`response`, `question`, `reference`, `claims`, and
anything else, such as an `id`) and adding `Y` (the aggregated verdict of the response) and
`ys` (the checker's labels, one entry per claim). A claim is a `[head, relation, tail]`
triplet (`--claim_format triplet`) or a string (`subsentence`). `reference` is a string or a
list of passages. A claim's entry in `ys` is a label ("Entailment", "Neutral",
"Contradiction") or a list of labels, one per reference passage
(`CheckerBase.check`, `refchecker/checker/checker_base.py`, returns
`[batch, claim, reference]`; the aggregators in `refchecker/aggregator.py` flatten
single-reference lists in place, so both forms reach the file).

Labels per passage are combined as RefChecker itself combines passages
(`merge_multi_psg_ret`): Entailment if any passage entails the claim, else Contradiction if
any contradicts it, else Neutral; the passages that gave the combined label become the
claim's evidence. Mapping: Entailment → SUPPORTED, Contradiction → CONTRADICTED,
Neutral → UNSUPPORTED (`--map` overrides). A claim with no label (RefChecker gives an empty
list when the item had no reference) is reported, not guessed.

Not in the file: the checker model (`--checker_name` is a command-line choice only), so
`--judge-model` and `--judge-prompt-version` are required; answer ids, unless the items
carry an `id` field: otherwise "<file stem>:<position>".

A triplet's text is what RefChecker's checker judged: its parts joined by single spaces, as
`RCClaim.get_content()` (`refchecker/base.py`) gives it to the checker, so the reviewer reads
the claim the judge read. The triplet itself is kept in the answer's metadata,
`metadata.refchecker.triplets`, by claim id.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import Option
from ..fmt import plural
from ..models import Verdict, map_hint, normalise_spelling
from ..reading import BadJson, BadRecord, JsonStream, Problems, text_file
from ._common import AdapterResult, Record, merged_mapping

NAME = "refchecker"
DEFAULT_MAPPING: dict[str, Verdict] = {
    "entailment": Verdict.SUPPORTED,
    "contradiction": Verdict.CONTRADICTED,
    "neutral": Verdict.UNSUPPORTED,
}


def is_triplet(claim: Any) -> bool:
    """True for a `[head, relation, tail]` claim (`--claim_format triplet`)."""
    return isinstance(claim, list) and len(claim) == 3 and all(isinstance(p, str) for p in claim)


def claim_text(claim: Any) -> str | None:
    """A claim's text as the checker saw it: a subsentence as is, a triplet space-joined."""
    if isinstance(claim, str):
        return claim
    if is_triplet(claim):
        return " ".join(claim)
    return None


def combine(labels: list[str]) -> tuple[str, list[int]] | None:
    """RefChecker's passage merge: (label, passage positions that gave it), or None if no label.

    Entailment if any passage entails, else Contradiction if any contradicts, else the first
    other label (Neutral, or a spelling the user mapped).
    """
    keys = [normalise_spelling(x) for x in labels]
    for want, label in (("entailment", "Entailment"), ("contradiction", "Contradiction")):
        if want in keys:
            return label, [i for i, k in enumerate(keys) if k == want]
    return (labels[0].strip(), []) if labels else None


def read(
    path: str | Path,
    *,
    judge_model: str | None = None,
    judge_prompt_version: str | None = None,
    mapping: dict[str, Verdict] | None = None,
    encoding: str | None = None,
    id_field: str = "id",
) -> AdapterResult:
    """Read a `refchecker-cli check` output file; `id_field` names the items' id field, if any."""
    path = Path(path)
    table = merged_mapping(DEFAULT_MAPPING, mapping)
    result = AdapterResult(
        tool=NAME,
        source=path,
        records=iter(()),
        mapping=table,
        spellings=tuple(DEFAULT_MAPPING),
        judge_model=judge_model,
        judge_prompt_version=judge_prompt_version,
        notes=[
            (
                "RefChecker records no checker model or prompt version: they come from ",
                Option.JUDGE_MODEL,
                " and ",
                Option.JUDGE_PROMPT_VERSION,
            )
        ],
    )
    result.records = _records(path, encoding, table, id_field, result)
    return result


def _records(
    path: Path, encoding: str | None, table: dict[str, Verdict], id_field: str, result: AdapterResult
) -> Iterator[Record]:
    problems = Problems(path)
    with text_file(path, encoding) as fh:
        doc = JsonStream(fh)
        if doc.peek() != "[":
            raise problems.fail(1, "RefChecker writes a JSON array of checked items")
        try:
            yield from _items(path, doc.elements(), problems, table, id_field, result)
        except BadJson as exc:
            raise problems.fail(exc.line, str(exc)) from None


def _items(
    path: Path,
    elements: Iterator[tuple[int, int, Any]],
    problems: Problems,
    table: dict[str, Verdict],
    id_field: str,
    result: AdapterResult,
) -> Iterator[Record]:
    positional = items = 0
    for i, line, item in elements:
        at = f"[{i}]"
        items += 1
        if isinstance(item, BadRecord):
            problems.add(line, item.message)
            continue
        if not isinstance(item, dict):
            problems.add(line, "each item must be a JSON object", at)
            continue
        claims, ys = item.get("claims"), item.get("ys")
        if not isinstance(claims, list):
            problems.add(line, "missing: run `refchecker-cli extract` first", f"{at}.claims")
            continue
        if not isinstance(ys, list):
            problems.add(line, "missing: run `refchecker-cli check` on this file", f"{at}.ys")
            continue
        if len(ys) != len(claims):
            problems.add(line, f"{plural(len(ys), 'label')} for {plural(len(claims), 'claim')}", f"{at}.ys")
            continue
        ref = item.get("reference")
        refs = [ref] if isinstance(ref, str) else ref if isinstance(ref, list) else []
        if not all(isinstance(r, str) for r in refs):
            problems.add(line, "must be a string or a list of strings", f"{at}.reference")
            continue
        out = []
        triplets: dict[str, list[str]] = {}
        for k, (claim, labels) in enumerate(zip(claims, ys, strict=True)):
            text = claim_text(claim)
            if text is None:
                problems.add(line, "a claim is a string or a [head, relation, tail] list", f"{at}.claims.{k}")
                continue
            labels = [labels] if isinstance(labels, str) else labels
            if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
                problems.add(line, "a label or a list of labels", f"{at}.ys.{k}")
                continue
            unknown = [x for x in labels if normalise_spelling(x) not in table]
            if unknown:
                problems.add(
                    line,
                    f"unknown RefChecker label {unknown[0]!r}; expected Entailment, Neutral or Contradiction",
                    f"{at}.ys.{k}",
                    map_hint(unknown[0]),
                )
                continue
            merged = combine(labels)
            if merged is None:
                problems.add(
                    line,
                    "no label (RefChecker leaves it empty when the item has no reference)",
                    f"{at}.ys.{k}",
                )
                continue
            label, gave = merged
            evidence = [str(p + 1) for p in gave] if len(labels) == len(refs) else []
            why = None
            if len(labels) > 1:
                why = "per reference: " + ", ".join(f"{p + 1}={x}" for p, x in enumerate(labels))
            out.append(
                {"id": f"c{k + 1}", "text": text, "verdict": label, "rationale": why, "evidence": evidence}
            )
            if is_triplet(claim):
                triplets[f"c{k + 1}"] = claim
        ident = item.get(id_field)
        if ident is None or ident == "" or isinstance(ident, bool):
            ident = f"{path.stem}:{i}"
            positional += 1
        meta: dict[str, Any] = {"refchecker": {"Y": item.get("Y")}}
        if triplets:
            meta["refchecker"]["triplets"] = triplets
        if problems:
            continue
        yield (
            line,
            {
                "id": ident,
                "question": item.get("question") or "",
                "answer": item.get("response") or "",
                "chunks": refs,
                "claims": out,
                "metadata": meta,
            },
        )
    if not problems and not items:
        problems.add(None, "no items in the file")
    problems.raise_if_any()
    if positional:
        result.notes.append(
            (f"{positional} item(s) have no {id_field!r}: their ids are '{path.stem}:<position>'",)
        )


def sniff(head: str) -> bool:
    """True when the start of a JSON file looks like RefChecker check output."""
    return '"ys"' in head and '"claims"' in head and '"response"' in head


__all__ = ["DEFAULT_MAPPING", "NAME", "claim_text", "combine", "is_triplet", "read", "sniff"]
