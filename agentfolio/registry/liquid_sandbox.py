"""A python-liquid 2 environment whose renders cost bounded time and memory.

python-liquid bounds loops (``loop_iteration_limit``: the product of nested loop
lengths), the output stream, the local namespace and context depth.  It does not bound
what a filter builds before anything is written: ``{{ (1..20000000) | join: ',' | size }}``
joins twenty million numbers, writes eight digits and passes every built-in limit.  So on
top of the library's limits each render carries a :class:`RenderBudget`:

* **Ranges** ``(a..b)`` hold at most :data:`MAX_SEQUENCE_ITEMS` items; a range literal
  whose bounds are constants and too far apart is found when the template is checked.
* **Every filter** is wrapped: its input is refused before the filter runs when the
  result could be too large (a sequence of more than :data:`MAX_SEQUENCE_ITEMS` items for
  anything but ``size``/``first``/``last``/``default``; a string over
  :data:`MAX_STRING_CHARS` for a filter that could grow it; the exact output size of
  ``join``, ``replace``, ``append``, ``concat``... when it would be too long), and its
  output is checked after (strings, sequences, integers of at most
  :data:`MAX_INTEGER_BITS` bits).
* **Work**: the characters and items all filters read and produce in one render add up
  to at most :data:`MAX_RENDER_WORK` (this bounds the memory a render churns through and,
  since no filter costs more than about n log n, its time); loop
  iterations and filter calls add up to at most :data:`MAX_RENDER_STEPS`; and the render
  stops at its wall-clock deadline (:data:`RENDER_TIME_BUDGET_SECONDS`), checked at every
  loop iteration and filter call, so no single step between two checks is unbounded.

Exceeding any of these raises :class:`RenderBudgetError`, a python-liquid
``ResourceLimitError`` like the library's own limits, so callers treat them alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from io import StringIO
from typing import Any, ClassVar

from liquid import Environment
from liquid.ast import Node
from liquid.builtin.expressions.primitive import IntegerLiteral, RangeLiteral
from liquid.context import RenderContext
from liquid.exceptions import FilterArgumentError, ResourceLimitError
from liquid.expression import Expression
from liquid.filter import sequence_filter
from liquid.output import LimitedStringIO
from liquid.template import BoundTemplate

MAX_SEQUENCE_ITEMS = 10_000
MAX_STRING_CHARS = 1_000_000
MAX_INTEGER_BITS = 1_024
MAX_RENDER_WORK = 1_000_000
MAX_RENDER_STEPS = 100_000
RENDER_TIME_BUDGET_SECONDS = 0.5

#: Filters that read at most a constant part of a sequence, whatever its length.
_SEQUENCE_CONSTANT_TIME = frozenset({"size", "first", "last", "default"})
#: Filters whose string result is never longer than their string input.
_STRING_NON_GROWING = frozenset({
    "size", "first", "last", "default", "truncate", "truncatewords", "slice", "strip", "lstrip", "rstrip",
    "strip_newlines", "squish", "remove", "remove_first", "remove_last", "strip_html", "url_decode",
    "base64_decode", "base64_url_safe_decode", "split",
})
_REPLACING = frozenset({"replace", "replace_first", "replace_last"})
_JOINING_STRINGS = frozenset({"append", "prepend"})


class RenderBudgetError(ResourceLimitError):
    """A render went over one of its bounds; the message says which."""

    def __init__(self, message: str) -> None:
        super().__init__(message, token=None)


class RenderBudget:
    """What one render may still spend; shared by every context the render creates."""

    __slots__ = ("deadline", "steps", "time_budget", "work")

    def __init__(self, time_budget: float = RENDER_TIME_BUDGET_SECONDS) -> None:
        self.time_budget = time_budget
        self.deadline = time.monotonic() + time_budget
        self.steps = 0
        self.work = 0

    def tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_RENDER_STEPS:
            raise RenderBudgetError(f"render took more than {MAX_RENDER_STEPS:,} steps "
                                       "(loop iterations and filter calls)")
        if time.monotonic() > self.deadline:
            raise RenderBudgetError(f"render took longer than its {self.time_budget:g} s budget")

    def charge(self, amount: int) -> None:
        self.work += amount
        if self.work > MAX_RENDER_WORK:
            raise RenderBudgetError(f"filters read and produced more than {MAX_RENDER_WORK:,} characters "
                                       "and items in one render")

    def call_filter(self, name: str, func: Callable[..., object], left: object,
                    args: tuple[object, ...], kwargs: dict[str, object]) -> object:
        self.tick()
        self.charge(check_filter_input(name, left, args))
        result = func(left, *args, **kwargs)
        if result is not left:
            self.charge(check_filter_output(name, result))
        return result


def _too_long(what: str, size: int, limit: int, unit: str) -> RenderBudgetError:
    return RenderBudgetError(f"{what} would be {size:,} {unit}, over the {limit:,}-{unit[:-1]} limit")


def _text_size(value: object) -> int:
    """Characters ``value`` turns into when a filter makes it a string (cheap upper bound)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, range):
        return len(str(value.start)) + len(str(value.stop)) + 2
    if isinstance(value, (list, tuple)):
        return sum(_text_size(item) for item in value)
    return 24


def check_filter_input(name: str, left: object, args: tuple[object, ...]) -> int:
    """Refuse a filter call whose result could not fit, before it is computed; return the
    size of the input it will walk (charged to the render's work)."""
    if isinstance(left, (range, list, tuple)) and name not in _SEQUENCE_CONSTANT_TIME \
            and len(left) > MAX_SEQUENCE_ITEMS:
        raise _too_long(f"'{name}' input", len(left), MAX_SEQUENCE_ITEMS, "items")
    if isinstance(left, str) and len(left) > MAX_STRING_CHARS and name not in _STRING_NON_GROWING:
        raise _too_long(f"'{name}' input", len(left), MAX_STRING_CHARS, "characters")
    estimate: int | None = None
    if name in _REPLACING and isinstance(left, str) and len(args) >= 1:
        old, new = str(args[0]), str(args[1]) if len(args) > 1 else ""
        count = left.count(old) if name == "replace" else min(1, left.count(old))
        estimate = len(left) + count * max(0, len(new) - len(old))
    elif name == "join" and isinstance(left, (range, list, tuple)):
        separator = str(args[0]) if args else " "
        estimate = _text_size(left) + len(separator) * max(0, len(left) - 1)
    elif name in _JOINING_STRINGS:
        estimate = _text_size(left) + sum(_text_size(arg) for arg in args)
    elif name == "concat" and args:
        if isinstance(left, (range, list, tuple)) and isinstance(args[0], (range, list, tuple)):
            items = len(left) + len(args[0])
            if items > MAX_SEQUENCE_ITEMS:
                raise _too_long("'concat' result", items, MAX_SEQUENCE_ITEMS, "items")
    elif name == "split" and isinstance(left, str) and args and str(args[0]) == "" \
            and len(left) > MAX_SEQUENCE_ITEMS:
        raise _too_long("'split' result", len(left), MAX_SEQUENCE_ITEMS, "items")
    if estimate is not None and estimate > MAX_STRING_CHARS:
        raise _too_long(f"'{name}' result", estimate, MAX_STRING_CHARS, "characters")
    if name in _SEQUENCE_CONSTANT_TIME or not isinstance(left, (str, range, list, tuple)):
        return 0
    return len(left)


def check_filter_output(name: str, result: object) -> int:
    """The size of a new filter result (charged to the render's work), if it fits."""
    if isinstance(result, str):
        if len(result) > MAX_STRING_CHARS:
            raise _too_long(f"'{name}' result", len(result), MAX_STRING_CHARS, "characters")
        return len(result)
    if isinstance(result, (list, tuple, range)):
        if len(result) > MAX_SEQUENCE_ITEMS:
            raise _too_long(f"'{name}' result", len(result), MAX_SEQUENCE_ITEMS, "items")
        return len(result)
    if isinstance(result, int) and not isinstance(result, bool) and result.bit_length() > MAX_INTEGER_BITS:
        raise RenderBudgetError(f"'{name}' result is an integer of {result.bit_length():,} bits, "
                                   f"over the {MAX_INTEGER_BITS:,}-bit limit")
    return 1


def _budgeted_iterator(items: Iterator[Any], budget: RenderBudget) -> Iterator[Any]:
    for item in items:
        budget.tick()
        yield item


#: python-liquid's ``uniq`` compares every item with every earlier one; ours hashes
#: what it can, so only unhashable items (objects, arrays) are compared pairwise.
MAX_UNHASHABLE_UNIQ_ITEMS = 500
_MISSING = object()


@sequence_filter
def uniq(sequence: list[object], key: object = None) -> list[object]:
    """``uniq`` with python-liquid's results, in linear time for hashable items."""
    hashable: set[object] = set()
    unhashable: list[object] = []
    result: list[object] = []
    for obj in sequence:
        if key is None:
            item = obj
        else:
            try:
                item = obj[key]  # type: ignore[index]
            except KeyError:
                item = _MISSING
            except TypeError as error:
                raise FilterArgumentError(f"can't read property '{key}' of {obj}", token=None) from error
        try:
            if item in hashable:
                continue
            hashable.add(item)
        except TypeError:
            if item in unhashable:
                continue
            unhashable.append(item)
            if len(unhashable) > MAX_UNHASHABLE_UNIQ_ITEMS:
                raise _too_long("'uniq' over objects or arrays", len(unhashable), MAX_UNHASHABLE_UNIQ_ITEMS,
                                "items") from None
        result.append(obj)
    return result


class BudgetedContext(RenderContext):
    """A render context that charges loop iterations and filter calls to its budget."""

    __slots__ = ("budget",)

    def __init__(self, template: BoundTemplate, **kwargs: Any) -> None:
        super().__init__(template, **kwargs)
        parent = kwargs.get("parent_context")
        self.budget: RenderBudget = parent.budget if isinstance(parent, BudgetedContext) else RenderBudget()

    def filter(self, name: str, token: Any) -> Callable[..., object]:
        func = super().filter(name, token)
        budget = self.budget

        def budgeted(left: object, *args: object, **kwargs: object) -> object:
            return budget.call_filter(name, func, left, args, kwargs)

        return budgeted

    @contextmanager
    def loop(self, namespace: Mapping[str, object], forloop: Any) -> Iterator[RenderContext]:
        forloop.it = _budgeted_iterator(forloop.it, self.budget)
        with super().loop(namespace, forloop) as context:
            yield context


class BoundedRange(RangeLiteral):
    """``(a..b)`` that refuses to stand for more than :data:`MAX_SEQUENCE_ITEMS` items."""

    __slots__ = ()

    def _make_range(self, start: Any, stop: Any) -> range:
        made = super()._make_range(start, stop)
        if len(made) > MAX_SEQUENCE_ITEMS:
            raise _too_long(f"range {self}", len(made), MAX_SEQUENCE_ITEMS, "items")
        return made


class BudgetedTemplate(BoundTemplate):
    context_class = BudgetedContext

    def render_within(self, budget: RenderBudget, data: Mapping[str, object]) -> str:
        context = BudgetedContext(self, globals=self.make_globals(dict(data)))
        context.budget = budget
        limit = self.env.output_stream_limit
        buffer = LimitedStringIO(limit=limit) if limit is not None else StringIO()
        self.render_with_context(context, buffer)
        return buffer.getvalue()


def _walk_expressions(expression: Expression) -> Iterator[Expression]:
    stack = [expression]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children())


def template_expressions(template: BoundTemplate) -> Iterator[Expression]:
    """Every expression in ``template``, nested blocks included."""
    static_context = RenderContext(template)
    nodes: list[Node] = list(template.nodes)
    while nodes:
        node = nodes.pop()
        for expression in node.expressions():
            yield from _walk_expressions(expression)
        nodes.extend(node.children(static_context, include_partials=False))


def bound_ranges(template: BoundTemplate) -> list[str]:
    """Make every range literal in ``template`` a :class:`BoundedRange`; return the
    problems with ranges whose constant bounds are already too far apart."""
    problems = []
    for expression in template_expressions(template):
        if type(expression) is RangeLiteral:
            expression.__class__ = BoundedRange
        if isinstance(expression, RangeLiteral) and isinstance(expression.start, IntegerLiteral) \
                and isinstance(expression.stop, IntegerLiteral):
            items = max(0, expression.stop.value - expression.start.value + 1)
            if items > MAX_SEQUENCE_ITEMS:
                problems.append(f"range {expression} has {items:,} items; the limit is {MAX_SEQUENCE_ITEMS:,}")
    return problems


class SandboxedEnvironment(Environment):
    """python-liquid environment with resource limits and no file-reaching tags."""

    loop_iteration_limit = 1_000
    output_stream_limit = 64_000
    local_namespace_limit = 64_000
    context_depth_limit = 20
    template_class = BudgetedTemplate
    removed_tags: ClassVar[Sequence[str]] = ("include", "render")
    #: ``safe`` only matters with autoescape, which is off: summaries are never markup.
    removed_filters: ClassVar[Sequence[str]] = ("safe",)

    def setup_tags_and_filters(self, *args: Any, **kwargs: Any) -> None:  # called by Environment.__init__
        super().setup_tags_and_filters(*args, **kwargs)
        for name in self.removed_tags:
            self.tags.pop(name, None)
        for name in self.removed_filters:
            self.filters.pop(name, None)
        self.filters["uniq"] = uniq

