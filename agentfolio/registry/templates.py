"""Span display templates: one Liquid renderer for the API, the CLI and the viewer.

A span type may carry a ``template`` such as ``"{{model}}: {{prompt}} → {{response}}"``.
The hosted server renders it as Liquid over the span's start payload merged with its
result payload (the result wins when both have a key) and returns the text as the span's
``summary`` when a read asks for ``include_summaries=true``.  We do the same with
python-liquid, with these guarantees:

* **Sandboxed.**  The context holds only JSON data; ``include`` and ``render`` (the only
  tags that reach outside the template) are removed; loops, output size, the local
  namespace and context depth are bounded, so a hostile template costs bounded time and
  memory.  A summary longer than :data:`MAX_SUMMARY_CHARS` is cut with ``…``.
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
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, Mapping

from liquid import Environment
from liquid.exceptions import LiquidError

MAX_TEMPLATE_CHARS = 10_000
MAX_SUMMARY_CHARS = 2_000
REMOVED_TAGS = ("include", "render")
#: ``safe`` only matters with autoescape, which is off: summaries are never markup.
REMOVED_FILTERS = ("safe",)


class SandboxedEnvironment(Environment):
    """python-liquid environment with resource limits and no file-reaching tags."""

    loop_iteration_limit = 1_000
    output_stream_limit = 64_000
    local_namespace_limit = 64_000
    context_depth_limit = 20

    def setup_tags_and_filters(self, *args: Any, **kwargs: Any) -> None:  # called by Environment.__init__
        super().setup_tags_and_filters(*args, **kwargs)
        for name in REMOVED_TAGS:
            self.tags.pop(name, None)
        for name in REMOVED_FILTERS:
            self.filters.pop(name, None)


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


class TemplateRenderer:
    """Checks and renders templates; one instance is shared process-wide (:data:`RENDERER`)."""

    def __init__(self, cache_size: int = 4096) -> None:
        self.environment = SandboxedEnvironment()
        self._parse = lru_cache(maxsize=cache_size)(self._parse_uncached)
        self._check = lru_cache(maxsize=cache_size)(self._check_uncached)

    def _parse_uncached(self, source: str):
        return self.environment.from_string(source)

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
        return TemplateCheck("success", None, tuple(sorted(analysis.globals)))

    def render(self, source: str | None, payload: Mapping[str, Any] | None,
               result_payload: Mapping[str, Any] | None = None) -> Rendered:
        """Render over ``payload`` merged with ``result_payload``; never raises."""
        if source is None:
            return Rendered(None)
        check = self.check(source)
        if not check.ok:
            return Rendered(None, check.message)
        try:
            text = self._parse(source).render(**merge_context(payload, result_payload))
        except LiquidError as error:
            return Rendered(None, describe_liquid_error(error))
        except (RecursionError, MemoryError, ValueError, TypeError, ArithmeticError) as error:
            return Rendered(None, f"template failed: {type(error).__name__}")
        return Rendered(clip(text.strip()))


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
    """The span ``summary`` field: rendered text, or ``None`` (no template, or it failed)."""
    return RENDERER.render(source, payload, result_payload).text
