"""Number and text formats for everything a person reads: CLI, pages, flag reasons.

One home, so a percentage reads "77.0%" and a p-value "p = 0.0026" wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Callable

MISSING = "n/a"  # an undefined figure in a sentence: never "None" or "nan"
DASH = "–"  # an undefined figure in a table cell


def pct(x: float | None, missing: str = MISSING) -> str:
    """A rate as a percentage with one decimal: 0.77 -> '77.0%'."""
    return missing if x is None else f"{100 * x:.1f}%"


def num(x: float | None, digits: int = 2, missing: str = MISSING) -> str:
    """Kappa, AC1, PABAK and other coefficients: fixed decimals, 0.4616 -> '0.46'."""
    return missing if x is None else f"{x:.{digits}f}"


def p_value(p: float | None) -> str:
    """'p = 0.0026', 'p = 0.34' (two significant digits) or 'p < 0.001'."""
    if p is None:
        return f"p {MISSING}"
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"


def points(x: float | None, missing: str = MISSING, unit: str = " points") -> str:
    """A difference of two rates in percentage points, signed: 0.031 -> '+3.1 points'."""
    return missing if x is None else f"{100 * x:+.1f}{unit}"


def share(x: float) -> str:
    """A threshold as it was typed: 0.85 -> '85%' rather than '85.0%'."""
    return f"{100 * x:g}%"


def ci(lo: float | None, hi: float | None, fmt: Callable[[float | None], str] = pct) -> str:
    """'95% CI 67.8%–84.2%', or 'no interval' when either bound is undefined."""
    return "no interval" if lo is None or hi is None else f"95% CI {fmt(lo)}–{fmt(hi)}"


def cell_pct(x: float | None) -> str:
    """:func:`pct` in a table cell: the dash for an undefined figure."""
    return pct(x, missing=DASH)


def cell_num(x: float | None) -> str:
    """:func:`num` in a table cell: the dash for an undefined figure."""
    return num(x, missing=DASH)


def cell_range(lo: float | None, hi: float | None, show: Callable[[float | None], str] = cell_pct) -> str:
    """An interval in a table cell (the column names it): :func:`ci`'s bounds without its words."""
    return DASH if lo is None or hi is None else f"{show(lo)}–{show(hi)}"


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """'1 claim', '2 claims', '1,234 claims'; `nouns` for an irregular plural."""
    return f"{n:,} {noun if n == 1 else (nouns or noun + 's')}"


def word(n: int, noun: str, nouns: str | None = None) -> str:
    """The noun alone, singular or plural for n: word(3, 'claim') -> 'claims'."""
    return noun if n == 1 else (nouns or noun + "s")


def closed_words(by: str, at: str | None, *, start: bool = False) -> str:
    """Who closed a run's labeling and on which day (`at` an ISO time): 'labeling closed by Lena
    on 2026-12-07'; `start`: to open a sentence, 'Labeling ...' (the name as it is written)."""
    return f"{'L' if start else 'l'}abeling closed by {by} on {(at or '')[:10]}"
