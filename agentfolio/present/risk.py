"""How a risk score and level are shown, in the terminal and in the viewer alike: a
number of bounded width, the level beside it, and the legend that says how a score is
made (:mod:`agentfolio.registry.risk` computes them)."""

from __future__ import annotations

import math

from agentfolio.registry.risk import RiskProfile

__all__ = ["LEVEL_TONES", "display_score", "risk_label", "scale_legend"]

#: The tone each level is drawn in (CSS ``tone-*`` classes; the terminal's styles).
LEVEL_TONES = {"unknown": "neutral", "low": "ok", "medium": "warn", "high": "danger", "critical": "danger"}

_UNITS = ("", "k", "M", "G", "T", "P", "E", "Z", "Y")


def display_score(score: float | None) -> str:
    """A score in at most five characters, within 5% of the exact value: ``0``, ``7.5``,
    ``41``, ``250``, ``1.2k``, ``30k``, ``4.5M`` (a run's total grows with its spans;
    the exact number is in the API's ``risk_score``)."""
    if score is None or not math.isfinite(score):
        return "—"
    value = max(score, 0.0)
    for unit in _UNITS:
        if value < 9.95:
            return f"{value:.1f}".rstrip("0").rstrip(".") + unit
        if value < 999.5:
            return f"{round(value)}{unit}"
        value /= 1000
    return f"{score:.0e}".replace("e+", "e")


def risk_label(level: str | None, score: float | None) -> str:
    """``high · 41`` — or ``unknown`` alone (an unknown level has no meaningful score)."""
    if not level or level == "unknown":
        return "unknown"
    return f"{level} · {display_score(score)}"


def scale_legend(profile: RiskProfile) -> list[str]:
    """How every score and level shown is made, under ``profile``."""
    thresholds = profile.thresholds
    return [
        "A span type scores the sum of weight × multiplier over each data category it includes and each "
        "action it allows; every span scores its type's points, and a run the sum over its spans.",
        f"Levels under risk profile {profile.name!r}: low below {display_score(thresholds.medium)}, "
        f"medium from {display_score(thresholds.medium)}, high from {display_score(thresholds.high)}, "
        f"critical from {display_score(thresholds.critical)}; never below the flags of what is scored "
        "(a step that sends health data out is critical whatever its points).",
        "unknown: nothing scored because the span type does not declare what data it touches or what it "
        "does (its data_risk); that is not low.",
        "Scores are shown rounded (1.2k = 1,200); the API's risk_score is exact.",
    ]
