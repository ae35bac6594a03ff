"""Span display templates: one Liquid renderer for the API, the CLI and the viewer.

A span type may carry a ``template`` such as ``"{{model}}: {{prompt}} → {{response}}"``.
The hosted server renders it as Liquid over the span's start payload merged with its
result payload (the result wins when both have a key) and returns the text as the span's
``summary`` when a read asks for ``include_summaries=true``.  We do the same with
python-liquid, with these guarantees:

* **Sandboxed.**  The context holds only JSON data; ``include`` and ``render`` (the only
  tags that reach outside the template) are removed; loops, output size, the local
  namespace, context depth, ranges, every filter's input and output, and each render's
  steps, work and wall-clock time are bounded (:mod:`agentfolio.registry.liquid_sandbox`),
  so a hostile template costs bounded time and memory.  A summary longer than
  :data:`MAX_SUMMARY_CHARS` is cut with ``…``.
* **One read, one budget.**  A read that renders many summaries (a list of spans, a
  trace) runs them under :func:`summaries_budget` (:data:`SUMMARIES_BUDGET_SECONDS` for
  all of them): once it is spent, the remaining summaries are "too large" at once, so a
  page of a hundred bombs costs two seconds, not a hundred times half a second.
* **Too large is said, not hidden.**  A template that goes over its budget even before it
  reads any data is reported invalid when the schema version is created; one that goes
  over on a span's data gets the summary :data:`TOO_LARGE_SUMMARY` (and the reason in
  :attr:`Rendered.error`) instead of costing seconds at every read.
* **Compiled once.**  Parsed templates are cached by source text.
* **Errors say why.**  :func:`check_template` reports a bad template when the schema
  version is created (syntax errors, unknown tags or filters, with line and column),
  where the hosted server fails silently.  Rendering never raises: a failure yields no
  summary and a reason.
* **Plain text out.**  Summaries are text, not HTML (``autoescape`` is off so a ``<`` in a
  prompt survives as ``<``).  Wherever a summary lands in HTML it must go through
  :func:`escape_html`; nothing here ever marks output as safe markup.

Supported: ``{{ field }}``, dotted paths ``{{ a.b.c }}``, bracket keys
``{{ inputs["ai.model.id"] }}``, indexes ``{{ items[0].name }}``, and the standard Liquid
tags and filters (``default``, ``truncate``, ``upcase``, ``size``, ``join``, ``if``/``for`` …).
A missing field renders as empty, as in the hosted server.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from liquid.exceptions import LiquidError, ResourceLimitError

from agentfolio._cache import Lru
from agentfolio.registry.liquid_sandbox import (
    RENDER_TIME_BUDGET_SECONDS,
    BudgetedTemplate,
    RenderBudget,
    SandboxedEnvironment,
    bound_ranges,
)

MAX_TEMPLATE_CHARS = 10_000
#: Template characters each of the parse and check caches holds at most.  A parsed
#: template takes ~50 bytes per character of source (~0.5 MiB for one of 10,000), so a
#: count bound alone would let 4,096 distinct ones hold ~2 GiB; this keeps it near 50 MiB.
MAX_CACHED_TEMPLATE_CHARS = 1_000_000
#: The trial render of a template that reads no data, when a schema version is created:
#: longer than a read's budget so that a busy machine does not make a good template fail
#: (steps and work, which do not depend on the machine, bound it well below this).
TRIAL_TIME_BUDGET_SECONDS = 5.0
MAX_SUMMARY_CHARS = 2_000
#: Seconds all the summaries of one read may take together (:func:`summaries_budget`).
SUMMARIES_BUDGET_SECONDS = 2.0
_READ_DEADLINE: ContextVar[float | None] = ContextVar("summaries_deadline", default=None)
#: The summary of a span whose template went over its render budget on that span's data.
TOO_LARGE_SUMMARY = "(summary too large: the template went over its render budget)"


@dataclass(frozen=True, slots=True)
class TemplateCheck:
    """Whether a template compiles, and which top-level fields it reads."""

    status: Literal["success", "error"]
    message: str | None = None
    variables: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == "success"

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message}


@dataclass(frozen=True, slots=True)
class Rendered:
    text: str | None
    error: str | None = None
    #: The template went over a resource bound (time, steps, sizes) on this data.
    over_budget: bool = False


def _chars(entry: tuple[int, object]) -> int:
    return entry[0]


class TemplateRenderer:
    """Checks and renders templates; one instance is shared process-wide (:data:`RENDERER`)."""

    def __init__(self, cache_size: int = 4096, time_budget: float = RENDER_TIME_BUDGET_SECONDS) -> None:
        self.environment = SandboxedEnvironment()
        self.time_budget = time_budget
        # Values are (characters of source, what was built): the weight the caches are bounded by.
        self._parsed: Lru[str, tuple[int, BudgetedTemplate]] = Lru(
            cache_size, max_weight=MAX_CACHED_TEMPLATE_CHARS, weigh=_chars)
        self._checked: Lru[str, tuple[int, TemplateCheck]] = Lru(
            cache_size, max_weight=MAX_CACHED_TEMPLATE_CHARS, weigh=_chars)

    def _parse(self, source: str) -> BudgetedTemplate:
        return self._parsed.get_or_build(source, lambda: (len(source), self._parse_uncached(source)))[1]

    def _check(self, source: str) -> TemplateCheck:
        return self._checked.get_or_build(source, lambda: (len(source), self._check_uncached(source)))[1]

    def _parse_uncached(self, source: str) -> BudgetedTemplate:
        template = self.environment.from_string(source)
        assert isinstance(template, BudgetedTemplate)
        bound_ranges(template)
        return template

    def check(self, source: object) -> TemplateCheck:
        if source is None:
            return TemplateCheck("success")
        if not isinstance(source, str):
            return TemplateCheck("error", f"a template must be a string, found {type(source).__name__}")
        return self._check(source)

    def _check_uncached(self, source: str) -> TemplateCheck:
        if len(source) > MAX_TEMPLATE_CHARS:
            return TemplateCheck("error", f"template is {len(source):,} characters, over the "
                                          f"{MAX_TEMPLATE_CHARS:,}-character limit")
        try:
            template = self._parse(source)
        except LiquidError as error:
            return TemplateCheck("error", describe_liquid_error(error))
        try:
            analysis = template.analyze()
        except LiquidError as error:
            return TemplateCheck("error", describe_liquid_error(error))
        unknown = sorted(name for name in analysis.filters if name not in self.environment.filters)
        if unknown:
            return TemplateCheck("error", f"unknown filter{'s' if len(unknown) > 1 else ''} "
                                          f"{', '.join(map(repr, unknown))} (standard Liquid filters "
                                          "such as default, truncate, upcase, join and size are available)")
        too_large = bound_ranges(template)
        if too_large:
            return TemplateCheck("error", f"template is too large to render: {too_large[0]}")
        if not analysis.globals:
            # Reads no data, so every render does exactly what this one does.
            trial = self._render_parsed(template, {}, max(self.time_budget, TRIAL_TIME_BUDGET_SECONDS))
            if trial.over_budget:
                return TemplateCheck("error", f"template is too large to render: {trial.error}")
        return TemplateCheck("success", None, tuple(sorted(analysis.globals)))

    def render(self, source: str | None, payload: Mapping[str, Any] | None,
               result_payload: Mapping[str, Any] | None = None) -> Rendered:
        """Render over ``payload`` merged with ``result_payload``; never raises."""
        if source is None:
            return Rendered(None)
        check = self.check(source)
        if not check.ok:
            return Rendered(None, check.message)
        time_budget = self.time_budget
        read_deadline = _READ_DEADLINE.get()
        if read_deadline is not None:
            left = read_deadline - time.monotonic()
            if left <= 0:
                return Rendered(None, f"this read's summaries went over their {SUMMARIES_BUDGET_SECONDS:g} s budget",
                                over_budget=True)
            time_budget = min(time_budget, left)
        return self._render_parsed(self._parse(source), merge_context(payload, result_payload), time_budget)

    def _render_parsed(self, template: BudgetedTemplate, context: Mapping[str, Any],
                       time_budget: float | None = None) -> Rendered:
        try:
            text = template.render_within(RenderBudget(time_budget or self.time_budget), context)
        except ResourceLimitError as error:
            return Rendered(None, describe_liquid_error(error), over_budget=True)
        except LiquidError as error:
            return Rendered(None, describe_liquid_error(error))
        except (RecursionError, MemoryError) as error:
            return Rendered(None, f"template failed: {type(error).__name__}", over_budget=True)
        except (ValueError, TypeError, ArithmeticError, OverflowError) as error:
            return Rendered(None, f"template failed: {type(error).__name__}")
        return Rendered(clip(text.strip()))


@contextmanager
def summaries_budget(seconds: float = SUMMARIES_BUDGET_SECONDS) -> Iterator[None]:
    """Within this block, all renders together take at most ``seconds``."""
    token = _READ_DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _READ_DEADLINE.reset(token)


def merge_context(payload: Mapping[str, Any] | None, result_payload: Mapping[str, Any] | None) -> dict[str, Any]:
    """Start payload overlaid by result payload, top-level keys; the result wins a clash."""
    context: dict[str, Any] = {}
    for source in (payload, result_payload):
        if isinstance(source, Mapping):
            context.update((str(key), value) for key, value in source.items())
    return context


def clip(text: str, limit: int = MAX_SUMMARY_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_POSITION = re.compile(r"(\d+):(\d+)\s*$")


def describe_liquid_error(error: LiquidError) -> str:
    """One line: what is wrong and where (``line L, column C``)."""
    lines = [line for line in str(error).splitlines() if line.strip()]
    head = getattr(error, "message", None) or (lines[0] if lines else type(error).__name__)
    head = str(head).strip()
    position = next((_POSITION.search(line) for line in lines[1:2] if _POSITION.search(line)), None)
    if position:
        return f"{head} (line {position.group(1)}, column {int(position.group(2)) + 1})"
    return head


def escape_html(text: object) -> str:
    """Text made safe to place in HTML element content or a quoted attribute."""
    return html.escape("" if text is None else str(text), quote=True)


RENDERER = TemplateRenderer()


def check_template(source: object) -> TemplateCheck:
    return RENDERER.check(source)


def render_template(source: str | None, payload: Mapping[str, Any] | None,
                    result_payload: Mapping[str, Any] | None = None) -> Rendered:
    return RENDERER.render(source, payload, result_payload)


def render_summary(source: str | None, payload: Mapping[str, Any] | None,
                   result_payload: Mapping[str, Any] | None = None) -> str | None:
    """The span ``summary`` field: rendered text; :data:`TOO_LARGE_SUMMARY` when the
    template went over its budget on this data; ``None`` (no template, or it failed)."""
    rendered = RENDERER.render(source, payload, result_payload)
    return TOO_LARGE_SUMMARY if rendered.over_budget else rendered.text
