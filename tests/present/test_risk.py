"""Risk as shown: a number of bounded width close to the exact score, and the legend."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentfolio.present.risk import display_score, risk_label, scale_legend
from agentfolio.registry.risk import DEFAULT_RISK_PROFILE

UNITS = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18, "Z": 1e21, "Y": 1e24}


def test_examples():
    assert [display_score(x) for x in (0, 7.5, 7.25, 12, 41.4, 250, 999.4, 1200, 30_000.0, 4_500_000)] == \
        ["0", "7.5", "7.2", "12", "41", "250", "999", "1.2k", "30k", "4.5M"]
    assert display_score(None) == "—" and display_score(float("nan")) == "—"
    assert risk_label("high", 30_000.0) == "high · 30k"
    assert risk_label("unknown", 0.0) == "unknown" and risk_label(None, None) == "unknown"


@settings(deadline=None)
@given(st.floats(0, 1e26, allow_nan=False))
def test_any_score_is_at_most_five_characters_and_within_five_percent(score):
    shown = display_score(score)
    assert len(shown) <= 5
    unit = shown[-1] if shown[-1] in UNITS and shown[-1] else ""
    value = float(shown[: len(shown) - len(unit)]) * UNITS[unit]
    assert abs(value - score) <= max(0.05, 0.05 * score)


@settings(deadline=None)
@given(st.floats(1e27, 1e300, allow_nan=False))
def test_beyond_every_unit_the_number_is_still_short(score):
    assert len(display_score(score)) <= 6


def test_the_legend_names_the_profile_and_its_thresholds():
    legend = " ".join(scale_legend(DEFAULT_RISK_PROFILE))
    assert "'default'" in legend and "medium from 25" in legend and "critical from 250" in legend
    assert "unknown" in legend and "not low" in legend
