"""The agreement report as plain text: what `stats` prints and a lead pastes into a message.

Every number in `fmt`'s formats; the figures themselves come from `report.agreement_report`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from . import decisions
from .agreement import POSITIVE, ChiSquareTest
from .assessment import Assessment, of_report
from .fmt import ci, num, p_value, pct, plural, points, share

if TYPE_CHECKING:
    from .report import Report


def _pipeline_lines(p: Mapping[str, Any]) -> list[str]:
    """The pipeline's grounding score first: the judge's own rate, then the corrected one."""
    sr = p["supported_rate"]
    sci = ci(sr["ci_low"], sr["ci_high"]) if sr["ci_low"] is not None else (sr["reason"] or "no interval")
    lines = [
        f"Grounding score (share of claims SUPPORTED): judge's own {pct(p['judge_supported_rate'])} "
        f"on {p['n_judged']:,} judged claims; corrected {pct(sr['value'])} ({sci}; {sr['method']}, "
        f"{p['n_labeled']:,} labeled claims)"
    ]
    for title, key in (("category", "by_category"), ("pipeline version", "by_pipeline_version")):
        parts = p.get(key) or {}
        if len(parts) < 2:
            continue
        for name, g in parts.items():
            s = g["supported_rate"]
            gci = ci(s["ci_low"], s["ci_high"]) if s["ci_low"] is not None else "no interval"
            lines.append(
                f"  {title} {name}: judge's own {pct(g['judge_supported_rate'])}, corrected "
                f"{pct(s['value'])} ({gci})"
            )
    for d in p.get("pipeline_differences") or ():
        dci = ci(d["ci_low"], d["ci_high"], lambda x: points(x, unit=""))
        lines.append(f"  {d['a']} − {d['b']}: {points(d['value'])} ({dci})")
    lines.append(f"  assumes {p['assumption']}")
    lines.append("")
    return lines


def _ids(ids: Sequence[str], limit: int) -> str:
    if not ids:
        return "none"
    shown = ", ".join(ids[:limit])
    return shown if len(ids) <= limit else f"{shown} … and {len(ids) - limit} more"


def _chi2(test: ChiSquareTest | None) -> str:
    return "n/a" if test is None else f"X2 = {num(test.statistic)}, df {test.df}, {p_value(test.p_value)}"


def format_report(
    report: Report,
    judge_run: str | None = None,
    *,
    notes: Sequence[str] = (),
    max_ids: int = 12,
    assessed: Assessment | None = None,
) -> str:
    """Plain-text rendering of a :class:`Report` (figures with intervals, confusion matrix, flag);
    its headline figures and direction are those of its assessment (`assessment.of_report`)."""
    r = report
    a = assessed if assessed is not None else of_report(r.to_dict(judge_run), scope="", run=judge_run)
    lines: list[str] = []
    title = "Judge vs human agreement" + (f" — judge run {judge_run}" if judge_run else "")
    lines += [title, "=" * len(title), *notes]
    if r.pipeline is not None:
        lines += _pipeline_lines(r.pipeline)
    t = r.thresholds
    lines.append(
        f"Thresholds: agreement target {share(t.agreement_target)}, kappa floor "
        f"{num(t.kappa_floor)}, alpha {t.alpha:g}"
    )
    e = r.effective_thresholds
    if e is not None and (e.capped_agreement or e.capped_kappa):
        lines.append(
            f"  capped by the human ceiling: target {pct(e.agreement_target)}, floor "
            f"{num(e.kappa_floor)} ({e.rule})"
        )
    if r.basis == "per_reviewer":
        unresolved = (
            (f"; {r.n_unresolved} of them unresolved (reviewers disagree), each reviewer's verdict counted")
            if r.n_unresolved
            else ""
        )
        lines.append(
            f"Claims: {r.n_claims} in {r.n_answers} answers, compared with each reviewer's blind "
            f"verdict ({r.n_labels} verdicts){unresolved}"
        )
    else:
        unresolved = (
            (
                f"; {plural(r.n_unresolved, 'claim')} left out (reviewers disagree, not adjudicated), "
                "which favours the judge: they are the hard ones"
            )
            if r.n_unresolved
            else ""
        )
        lines.append(f"Claims: {r.n_claims} in {r.n_answers} answers{unresolved}")
    if r.estimates is not None and r.estimates.population:
        lines.append(f"Estimates for: {r.estimates.population}")
    lines.append("")
    if r.n_claims == 0:
        lines.append(f"Flag: {r.flag.status.upper()}{_reading(r)}")
        lines += [f"  - {reason.message}" for reason in r.flag.reasons]
        return "\n".join(lines) + "\n"
    k = r.kappa
    ab, kb = r.agreement_bootstrap, r.kappa_bootstrap
    boot_a = "" if ab.ci_low is None else f"; answer bootstrap {pct(ab.ci_low)}–{pct(ab.ci_high)}"
    lines.append(f"Agreement      {pct(a.agreement.value):>7}   {a.agreement_note()}{boot_a}")
    if k.value is None:
        lines.append("Cohen's kappa      n/a   undefined (both used one and the same class)")
    else:
        kboot = "" if kb.ci_low is None else f"; answer bootstrap {num(kb.ci_low)}–{num(kb.ci_high)}"
        kmax = f"; max possible {num(k.kappa_max)}"
        lines.append(f"Cohen's kappa  {num(a.kappa.value):>7}   {a.kappa_note()}{kboot}{kmax}")
    lines.append(f"Gwet's AC1     {num(r.ac1):>7}   (beside kappa, not instead of it)")
    ag_rule = r._rule("agreement")
    if ag_rule is not None:
        chance = decisions.prob_sentence(r.prob_at_least_target, ag_rule.threshold, r.prob_withheld)
        bounds = f"{pct(ag_rule.bound_low)}–{pct(ag_rule.bound_high)}"
        lines.append(f"  running bounds on agreement {bounds} (what the flag reads); {chance}")
    if r.weighted is not None:
        w = r.weighted
        lines.append(
            f"Weighted agr.  {pct(w.value):>7}   {ci(w.ci_low, w.ci_high)} "
            f"(answer bootstrap); raw {pct(w.raw)}, effective n {num(w.n_effective, 0)}"
        )
    fl = r.final_label_view
    if r.basis == "per_reviewer" and fl is not None:
        fa = fl["agreement"]
        lines.append(
            f"Final label    {pct(fa['value']):>7}   secondary view: {fl['n_claims']} claims "
            f"with a unanimous or adjudicated label only ({fl['n_left_out']} disputed left out)"
        )
    if r.human_human is not None and r.human_human.n_claims:
        hh = r.human_human
        kk = "" if hh.kappa is None or hh.kappa.value is None else f", kappa {num(hh.kappa.value)}"
        post = r.human_human_post_reveal
        beside = "" if post is None else f"; after the reveal {pct(post.agreement.value)}"
        lines.append(
            f"Human–human    {pct(hh.agreement.value):>7}   on {hh.n_claims} claims with "
            f"several reviewers, blind verdicts{kk}, Krippendorff's alpha {num(hh.alpha)}{beside}"
        )
    if r.human_ceiling is not None:
        c = r.human_ceiling
        jv, rv = c.judge_vs_reviewers, c.reviewer_vs_reviewer
        lines.append(
            f"Human ceiling  judge vs each reviewer {pct(jv.value)} "
            f"({ci(jv.ci_low, jv.ci_high)}), "
            f"reviewer vs reviewer {pct(rv.value)} ({ci(rv.ci_low, rv.ci_high)}) on "
            f"{c.n_claims} claims, unresolved included; "
            f"{c.alt.verdict or c.alt.reason or 'no alternative annotator test'} "
            f"(epsilon {c.alt.epsilon:g}, {c.alt.alignment})"
        )
        if c.comparisons:
            lines.append(f"  the judge is {c.comparison_sentence()} (share of the other reviewers agreeing):")
            for cmp in c.comparisons:
                lines.append(
                    f"    {cmp.reviewer}: judge {pct(cmp.judge)}, reviewer "
                    f"{pct(cmp.reviewer_value)}, {p_value(cmp.p_value)} on {cmp.n_claims} claims"
                )
    lines.append("")
    lines.append("Confusion matrix (rows human, columns judge)")
    width = max(len(x) for x in r.labels) + 2
    lines.append(" " * width + "".join(f"{x:>{width}}" for x in r.labels))
    for label, row in zip(r.labels, r.confusion, strict=True):
        lines.append(f"{label:<{width}}" + "".join(f"{int(v):>{width}}" for v in row))
    lines.append("")
    lines.append(f"{'Per class (judge)':<{width}}{'precision':>11}{'recall':>9}{'F1':>7}{'support':>9}")
    for label, m in r.per_class.items():
        lines.append(f"{label:<{width}}{num(m.precision):>11}{num(m.recall):>9}{num(m.f1):>7}{m.support:>9}")
    lines.append("")
    d = r.direction
    lines.append(
        f"Direction ({POSITIVE} vs not): lenient {d.lenient} (judge {POSITIVE}, human not), strict {d.strict}"
    )
    lines.append(f"  estimated: {a.direction.figures}. {a.direction.clause}".rstrip())
    mc = d.mcnemar
    lines.append(
        f"  exact McNemar on the labeled claims, one look: {p_value(mc.p_two_sided)} "
        f"(one-sided: lenient {p_value(mc.p_b_greater)}, strict {p_value(mc.p_c_greater)})"
    )
    pb = d.prevalence_bias
    lines.append(
        f"  prevalence index {num(pb.prevalence_index)}, bias index {num(pb.bias_index)}, "
        f"PABAK {num(pb.pabak)}"
    )
    lines.append(f"  Stuart–Maxwell (marginal homogeneity): {_chi2(d.stuart_maxwell)}")
    lines.append(f"  Bowker (symmetry): {_chi2(d.bowker)}")
    lines.append("")
    s = r.sample_size
    lines.append("More claims:")
    lines.append(f"  - {s.target_sentence}")
    lines.append(f"  - {s.kappa_sentence}")
    lines.append("")
    if r.rules is not None:
        lines.append("Rules of the flag (each with the bound it reads)")
        for rule in r.rules.rules:
            lines.append(f"  {rule.rule}: {rule.status} — {rule.bound_used}{_no_bound(rule)}")
        lines.append("")
    lines.append(f"Flag: {r.flag.status.upper()}{_reading(r)}")
    shown: tuple[str, ...] = ()
    for reason in r.flag.reasons:
        lines.append(f"  - {reason.message}")
        if reason.claim_ids and reason.claim_ids == shown:
            lines.append("    claims: the same as above")
        elif reason.claim_ids:
            lines.append(f"    claims: {_ids(reason.claim_ids, max_ids)}")
            shown = reason.claim_ids
    return "\n".join(lines) + "\n"


def _no_bound(rule: decisions.RuleResult) -> str:
    """What a kappa "pass" rests on when there is no interval to read: nothing shows it low."""
    if rule.rule == "kappa" and rule.status == "pass" and rule.bound_high is None:
        return " (no interval yet, so nothing shows kappa below the floor)"
    return ""


def _reading(r: Report) -> str:
    """ " (decided at the final reading ...)" beside the flag's word; nothing while undecided."""
    said = r.flag.reading_sentence
    return f" ({said})" if said else ""
