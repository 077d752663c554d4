"""The number formats people read, against hand-written answers."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from calibration import fmt


@pytest.mark.parametrize(
    ("format_", "value", "expected"),
    [
        (fmt.pct, 0.77, "77.0%"),
        (fmt.pct, None, "n/a"),
        (fmt.num, 0.4616, "0.46"),
        (fmt.num, None, "n/a"),
        (fmt.points, 0.031, "+3.1 points"),
        (fmt.points, -0.1234, "-12.3 points"),
        (fmt.points, 0.0, "+0.0 points"),
        (fmt.points, None, "n/a"),
        (lambda x: fmt.points(x, unit=""), 0.031, "+3.1"),
        (fmt.cell_pct, 0.5, "50.0%"),
        (fmt.cell_pct, None, "–"),
        (fmt.cell_num, 0.456, "0.46"),
        (fmt.cell_num, None, "–"),
        (fmt.share, 0.85, "85%"),
        (fmt.p_value, 0.0026, "p = 0.0026"),
        (fmt.p_value, 0.0004, "p < 0.001"),
        (fmt.p_value, None, "p n/a"),
    ],
)
def test_one_figure(format_: Callable[[float | None], str], value: float | None, expected: str) -> None:
    assert format_(value) == expected


@pytest.mark.parametrize(
    ("lo", "hi", "show", "cell", "sentence"),
    [
        (0.678, 0.842, fmt.pct, "67.8%–84.2%", "95% CI 67.8%–84.2%"),
        (0.28, 0.64, fmt.num, "0.28–0.64", "95% CI 0.28–0.64"),
        (None, 0.64, fmt.num, "–", "no interval"),
        (0.1, None, fmt.pct, "–", "no interval"),
    ],
)
def test_an_interval_in_a_cell_and_in_a_sentence(
    lo: float | None, hi: float | None, show: Callable[[float | None], str], cell: str, sentence: str
) -> None:
    cell_show = fmt.cell_num if show is fmt.num else fmt.cell_pct
    assert fmt.cell_range(lo, hi, cell_show) == cell
    assert fmt.ci(lo, hi, show) == sentence
