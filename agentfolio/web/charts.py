"""Charts drawn on the server as SVG: lines for latency percentiles, stacked bars for
tokens and failures.  No script, no chart library, nothing fetched: the markup is part of
the page, coloured by the stylesheet's classes (so dark mode applies), each point titled
with its value, and each chart followed by the same figures as a table.

Every text in a chart (labels, titles) is escaped here; values are numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from markupsafe import Markup, escape

from agentfolio.present.activity import Activity
from agentfolio.present.rules import human_duration

__all__ = ["Chart", "Series", "bar_chart", "line_chart", "nice_ticks", "usage_charts"]

WIDTH = 720
HEIGHT = 220
LEFT = 64
RIGHT = 12
TOP = 14
BOTTOM = 34
#: Most labels under the time axis; the others are left out, evenly.
MAX_LABELS = 8


@dataclass(frozen=True, slots=True)
class Series:
    """One line, or one layer of stacked bars: its name, its CSS class, a value per bucket
    (None: nothing to draw there)."""

    name: str
    css: str
    values: Sequence[float | None]


def nice_ticks(highest: float, count: int = 4) -> list[float]:
    """Round values from 0 to at least ``highest`` for a y axis (steps of 1, 2 or 5 × 10ⁿ)."""
    if not highest or highest <= 0 or not math.isfinite(highest):
        return [0.0, 1.0]
    rough = highest / count
    magnitude = 10 ** math.floor(math.log10(rough))
    step = next(factor * magnitude for factor in (1, 2, 5, 10) if factor * magnitude >= rough)
    return [round(step * index, 12) for index in range(math.ceil(highest / step - 1e-9) + 1)]


def line_chart(title: str, labels: Sequence[str], series: Sequence[Series], fmt: Callable[[float], str]) -> Markup:
    """Lines over time (gaps where a series has no value)."""
    top = max((value for line in series for value in line.values if value is not None), default=0.0)
    frame = _Frame(labels, nice_ticks(top))
    out = frame.open(title, fmt)
    for line in series:
        runs: list[list[tuple[float, float]]] = [[]]
        for index, value in enumerate(line.values):
            if value is None:
                runs.append([])
                continue
            runs[-1].append((frame.x(index), frame.y(value)))
        for run in runs:
            if len(run) > 1:
                path = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
                out.append(f'<polyline class="chart-line {line.css}" points="{path}"/>')
        for index, value in enumerate(line.values):
            if value is not None:
                out.append(f'<circle class="chart-dot {line.css}" cx="{frame.x(index):.1f}" '
                           f'cy="{frame.y(value):.1f}" r="3">'
                           f"<title>{escape(line.name)} · {escape(labels[index])}: {escape(fmt(value))}</title>"
                           "</circle>")
    return frame.close(out, series)


def bar_chart(title: str, labels: Sequence[str], series: Sequence[Series], fmt: Callable[[float], str]) -> Markup:
    """Bars over time, the series stacked in each bucket."""
    totals = [sum(layer.values[index] or 0 for layer in series) for index in range(len(labels))]
    frame = _Frame(labels, nice_ticks(max(totals, default=0.0)))
    out = frame.open(title, fmt)
    width = max(1.0, frame.step * 0.7)
    for index in range(len(labels)):
        base = 0.0
        for layer in series:
            value = layer.values[index] or 0
            if value <= 0:
                continue
            y_top, y_base = frame.y(base + value), frame.y(base)
            out.append(f'<rect class="chart-bar {layer.css}" x="{frame.x(index) - width / 2:.1f}" y="{y_top:.1f}" '
                       f'width="{width:.1f}" height="{max(0.5, y_base - y_top):.1f}">'
                       f"<title>{escape(layer.name)} · {escape(labels[index])}: {escape(fmt(value))}</title></rect>")
            base += value
    return frame.close(out, series)


class _Frame:
    """The plot area, its axes and where a bucket and a value are drawn."""

    def __init__(self, labels: Sequence[str], ticks: list[float]) -> None:
        self.labels = labels
        self.ticks = ticks
        self.highest = ticks[-1] or 1.0
        self.step = (WIDTH - LEFT - RIGHT) / max(1, len(labels))

    def x(self, index: int) -> float:
        return LEFT + self.step * (index + 0.5)

    def y(self, value: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (1 - min(value, self.highest) / self.highest)

    def open(self, title: str, fmt: Callable[[float], str]) -> list[str]:
        out = [f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}" '
               'preserveAspectRatio="xMidYMid meet" xmlns="http://www.w3.org/2000/svg">']
        for tick in self.ticks:
            y = self.y(tick)
            out.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
            out.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                       f"{escape(fmt(tick))}</text>")
        every = max(1, math.ceil(len(self.labels) / MAX_LABELS))
        for index, label in enumerate(self.labels):
            if index % every == 0:
                out.append(f'<text class="tick" x="{self.x(index):.1f}" y="{HEIGHT - BOTTOM + 18}" '
                           f'text-anchor="middle">{escape(label)}</text>')
        out.append(f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{HEIGHT - BOTTOM}" '
                   f'y2="{HEIGHT - BOTTOM}"/>')
        return out

    def close(self, out: list[str], series: Sequence[Series]) -> Markup:
        out.append("</svg>")
        legend = "".join(f'<li><span class="swatch {item.css}" aria-hidden="true"></span>{escape(item.name)}</li>'
                         for item in series)
        return Markup("".join(out) + f'<ul class="legend">{legend}</ul>')


@dataclass(frozen=True, slots=True)
class Chart:
    """A chart and the figures it draws, as a table: ``columns`` heads, one row a bucket."""

    title: str
    svg: Markup
    columns: list[str]
    rows: list[list[str]]


def usage_charts(over_time: Activity) -> list[Chart]:
    """An agent's activity as three charts: answer latency (p50, p90, p99), tokens (in,
    out, and any total neither accounts for) and failures (failed tool calls, errors)."""
    buckets = over_time.buckets
    if not buckets:
        return []
    labels = [_bucket_label(bucket.start, over_time.width) for bucket in buckets]
    latency = [Series("median (p50)", "s-p50", [bucket.latency.p50 for bucket in buckets]),
               Series("p90", "s-p90", [bucket.latency.p90 for bucket in buckets]),
               Series("p99", "s-p99", [bucket.latency.p99 for bucket in buckets])]
    tokens = [Series("tokens in", "s-in", [bucket.input_tokens for bucket in buckets]),
              Series("tokens out", "s-out", [bucket.output_tokens for bucket in buckets])]
    other = [max(0, bucket.total_tokens - bucket.input_tokens - bucket.output_tokens) for bucket in buckets]
    if any(other):
        tokens.append(Series("tokens not split in and out", "s-other", other))
    failures = [Series("failed tool calls", "s-failed", [bucket.failed_tools for bucket in buckets]),
                Series("errors", "s-errors", [bucket.errors for bucket in buckets])]
    per = f"per {over_time.unit}"
    return [
        _chart(f"Answer latency {per}", labels, latency, human_duration, line=True,
               extra=("answers", [bucket.answers for bucket in buckets])),
        _chart(f"Tokens {per}", labels, tokens, _count),
        _chart(f"Failures {per}", labels, failures, _count,
               extra=("tool calls", [bucket.tool_calls for bucket in buckets])),
    ]


def _chart(title: str, labels: list[str], series: list[Series], fmt: Callable[[float], str], *, line: bool = False,
           extra: tuple[str, list[int]] | None = None) -> Chart:
    svg = (line_chart if line else bar_chart)(title, labels, series, fmt)
    columns = ["from", *(item.name for item in series)] + ([extra[0]] if extra else [])
    rows = [[label, *("" if item.values[index] is None else fmt(item.values[index] or 0) for item in series),
             *([f"{extra[1][index]:,}"] if extra else [])] for index, label in enumerate(labels)]
    return Chart(title, svg, columns, rows)


def _count(value: float) -> str:
    if value >= 10_000:
        return f"{value / 1000:,.0f}k"
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def _bucket_label(start: float, width: float) -> str:
    moment = datetime.fromtimestamp(start, tz=UTC)
    return moment.strftime("%m-%d") if width < 30 * 86_400 else moment.strftime("%Y-%m")
