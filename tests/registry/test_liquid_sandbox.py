"""Template bombs: ranges, every filter's input and output, and each render's steps,
work and time are bounded; a bomb is refused when the schema version is created if it
reads no data, and summarised as "too large" at read time if it depends on the data."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from liquid import Environment

from agentfolio.registry.liquid_sandbox import (
    MAX_INTEGER_BITS,
    MAX_RENDER_STEPS,
    MAX_RENDER_WORK,
    MAX_SEQUENCE_ITEMS,
    MAX_STRING_CHARS,
    MAX_UNHASHABLE_UNIQ_ITEMS,
)
from agentfolio.registry.templates import (
    TOO_LARGE_SUMMARY,
    TemplateRenderer,
    check_template,
    render_summary,
    render_template,
)
from tests.bombs import within_deadline

#: A generous clock for the tests whose subject is a bound other than time.
PATIENT_SECONDS = 10.0


def test_the_reported_range_bomb_is_refused_when_the_schema_version_is_created():
    bomb = "{{ (1..20000000) | join: ',' | size }}"
    check = within_deadline(lambda: check_template(bomb))
    assert check.status == "error"
    assert "too large" in check.message and "20,000,000 items" in check.message
    assert within_deadline(lambda: render_summary(bomb, {})) is None  # an invalid template has no summary


def test_a_bomb_fed_by_the_data_reads_as_too_large_quickly():
    bomb = "{{ (1..n) | join: ',' | size }}"
    assert check_template(bomb).ok  # it reads n: nothing certain before the data comes
    rendered = within_deadline(lambda: render_template(bomb, {"n": 20_000_000}))
    assert rendered.over_budget and "range (1..n) would be 20,000,000 items" in rendered.error
    assert within_deadline(lambda: render_summary(bomb, {"n": 20_000_000})) == TOO_LARGE_SUMMARY
    assert render_summary(bomb, {"n": 3}) == "5"  # 1,2,3


@pytest.mark.parametrize("chain", ["sort", "reverse", "uniq", "sum", "sort_natural", "compact", "join: ','",
                                   "map: 'a'", "where: 'a'", "first", "concat: items", "size"])
def test_every_sequence_filter_is_bounded_on_long_data(chain):
    items = list(range(MAX_SEQUENCE_ITEMS + 1))
    rendered = within_deadline(lambda: render_template(f"{{{{ items | {chain} | size }}}}", {"items": items}))
    if chain in ("first", "size"):  # constant time whatever the length
        assert rendered.text is not None and not rendered.over_budget
    else:
        assert rendered.over_budget and f"{MAX_SEQUENCE_ITEMS:,}-item limit" in rendered.error


@pytest.mark.parametrize("template,data,reason", [
    ('{% assign s = x %}{% for i in (1..40) %}{% assign s = s | append: s %}{% endfor %}{{ s | size }}',
     {"x": "xx"}, "namespace limit"),
    ('{{ x | append: x | append: x }}', {"x": "y" * (MAX_STRING_CHARS // 2 + 1)}, "character limit"),
    ('{{ "ab" | replace: "", x | size }}', {"x": "y" * (MAX_STRING_CHARS // 3 + 1)}, "character limit"),
    ('{{ x | join: sep | size }}', {"x": list(range(100)), "sep": "s" * 20_000}, "character limit"),
    ('{{ x | split: "" | size }}', {"x": "y" * (MAX_SEQUENCE_ITEMS + 1)}, "item limit"),
    ('{{ x | upcase | size }}', {"x": "y" * (MAX_STRING_CHARS + 1)}, "character limit"),
    ('{{ n | times: n | times: n | times: n }}', {"n": 2 ** 400}, f"{MAX_INTEGER_BITS:,}-bit limit"),
    ('{{ x | uniq | size }}', {"x": [{"k": i} for i in range(MAX_UNHASHABLE_UNIQ_ITEMS + 1)]}, "item limit"),
    ('{% for i in (1..n) %}{{ (1..5000) | sort | size }}{% endfor %}', {"n": 999}, f"{MAX_RENDER_WORK:,}"),
    ('{% for i in (1..n) %}{% endfor %}' * 150, {"n": 999}, f"{MAX_RENDER_STEPS:,} steps"),
])
def test_string_growth_integers_work_and_steps_are_bounded(template, data, reason):
    assert check_template(template).ok
    # A generous clock, so that the bound under test (not a busy machine) is what stops the render.
    patient = TemplateRenderer(time_budget=PATIENT_SECONDS)
    rendered = within_deadline(lambda: patient.render(template, data))
    assert rendered.over_budget and reason in rendered.error, rendered


def test_data_independent_bombs_are_refused_at_create_time():
    for template in ('{% for i in (1..999) %}{% endfor %}' * 150,
                     '{% for i in (1..999) %}{{ (1..5000) | sort | size }}{% endfor %}',
                     '{% assign n = 99999999999999999999 %}{% for i in (1..5) %}{% assign n = n | times: n %}'
                     '{% endfor %}{{ n }}'):
        check = within_deadline(lambda template=template: check_template(template))
        assert check.status == "error" and "too large to render" in check.message, check


def test_each_render_stops_at_its_wall_clock_budget():
    # A budget already spent: the first loop iteration or filter call stops the render.
    spent = TemplateRenderer(time_budget=-1.0)
    rendered = spent.render("{{ x | upcase }}", {"x": "a"})
    assert rendered.over_budget and "budget" in rendered.error
    assert spent.render("{{ x }}", {"x": "a"}).text == "a"  # no step taken, nothing to stop


FILTERS = ["sort", "reverse", "uniq", "sum", "first", "last", "size", "compact", "join: '-'", "upcase",
           "append: 'x'", "prepend: y", "split: ','", "concat: seq", "slice: 1, 3", "times: 3", "plus: 2",
           "replace: '1', 'ab'", "truncate: 5", "default: 'z'", "map: 'a'", "uniq: 'a'"]


@settings(max_examples=150, deadline=None)
@given(start=st.integers(-5, 30), stop=st.integers(-5, 30), chain=st.lists(st.sampled_from(FILTERS), max_size=4),
       seq=st.lists(st.one_of(st.integers(-3, 3), st.text("ab1,", max_size=3),
                              st.fixed_dictionaries({"a": st.integers(0, 2)})), max_size=8))
def test_bounded_filters_agree_with_python_liquid_on_small_inputs(start, stop, chain, seq):
    """The budget only refuses; it never changes an answer (our linear ``uniq`` included)."""
    filters = " | ".join(chain) or "size"
    template = f"{{{{ ({start}..{stop}) | {filters} }}}}|{{{{ seq | {filters} }}}}"
    data = {"seq": seq, "y": "Y"}
    try:
        expected = Environment().from_string(template).render(**data).strip()
    except Exception:
        expected = None
    rendered = render_template(template, data)
    assert not rendered.over_budget
    assert rendered.text == expected, (template, rendered)


def test_the_summaries_of_one_read_share_one_budget():
    from agentfolio.registry.templates import summaries_budget

    patient = TemplateRenderer(time_budget=PATIENT_SECONDS)
    with summaries_budget(60):
        assert patient.render("{{ x }}", {"x": 1}).text == "1"
    with summaries_budget(0):  # a read whose budget earlier summaries have spent
        rest = [patient.render("{{ x | upcase }}", {"x": i}) for i in range(100)]
    assert all(r.over_budget and "this read's summaries went over" in r.error for r in rest)
    assert patient.render("{{ x }}", {"x": 1}).text == "1"  # outside the read, nothing is spent
