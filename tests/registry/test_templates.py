"""The one Liquid renderer: context merge, paths, filters, sandbox limits, reasons, escaping."""

from __future__ import annotations

import liquid  # noqa: F401  (a runtime dependency: missing is an error, not a skip)
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfolio.registry.templates import (
    MAX_CACHED_TEMPLATE_CHARS,
    MAX_SUMMARY_CHARS,
    TemplateRenderer,
    check_template,
    escape_html,
    merge_context,
    render_summary,
    render_template,
)


def test_sdk_style_template_renders_over_payload_merged_with_result():
    assert render_summary("{{model}}: {{prompt}} → {{response}} ({{tokens}} tokens)",
                          {"model": "gpt-4", "prompt": "Hello"}, {"response": "Hi", "tokens": 42}) == \
        "gpt-4: Hello → Hi (42 tokens)"


def test_result_wins_a_clash_and_missing_fields_render_empty():
    assert render_summary("{{status}}|{{nothing}}|", {"status": "started"}, {"status": "done"}) == "done||"
    assert merge_context({"a": 1, "b": 1}, {"b": 2}) == {"a": 1, "b": 2}
    assert merge_context(None, None) == {}


def test_dotted_paths_bracket_keys_indexes_and_filters():
    payload = {"inputs": {"ai.model.id": "claude", "messages": [{"role": "user", "text": "a long question here"}]},
               "meta": {"run": {"id": 7}}}
    assert render_summary('{{ inputs["ai.model.id"] }} #{{ meta.run.id }} {{ inputs.messages[0].role }}', payload) == \
        "claude #7 user"
    assert render_summary('{{ inputs.messages[0].text | truncate: 10 }}', payload) == "a long ..."
    assert render_summary('{{ missing | default: "n/a" }} {{ inputs.messages | size }}', payload) == "n/a 1"
    assert render_summary('{% if meta.run.id > 5 %}big{% else %}small{% endif %}', payload) == "big"


@pytest.mark.parametrize("source,reason", [
    ("{{ model ", "expected '}}', found end of file"),
    ("{{ model | shout }}", "unknown filter 'shout'"),
    ("{% include 'secrets' %}", "unexpected tag 'include'"),
    ("{% render 'x' %}", "unexpected tag 'render'"),
    ("{% if %}x{% endif %}", "missing expression"),
    ("{% for x in items %}", "endfor"),
    (42, "must be a string"),
])
def test_invalid_templates_are_reported_with_a_reason(source, reason):
    check = check_template(source)
    assert check.status == "error"
    assert reason in check.message
    assert check.to_json() == {"status": "error", "message": check.message}
    if isinstance(source, str):
        rendered = render_template(source, {"model": "m", "items": []})
        assert rendered.text is None and reason in rendered.error


def test_valid_template_reports_the_fields_it_reads():
    check = check_template('{{ model }} {{ inputs["x"] }} {% for m in messages %}{{ m.text }}{% endfor %}')
    assert check.ok and check.message is None
    assert check.variables == ("inputs", "messages", "model")
    assert check_template(None).ok


def test_runaway_loops_and_output_are_bounded_and_never_raise():
    looped = render_template("{% for i in (1..n) %}x{% endfor %}", {"n": 5_000})
    assert looped.text is None and "loop iteration limit" in looped.error and looped.over_budget
    grown = render_template('{% assign s = "xxxxxxxxxx" %}{% for i in (1..30) %}{% assign s = s | append: s %}'
                            '{% endfor %}{{ s }}', {})
    assert grown.text is None and "limit" in grown.error
    long = render_template("{{ text }}", {"text": "y" * 10_000})
    assert len(long.text) == MAX_SUMMARY_CHARS and long.text.endswith("…")


def test_output_is_plain_text_and_escape_html_makes_it_safe_for_pages():
    text = render_summary("{{ prompt }}", {"prompt": '<script>alert("x")</script> & \'q\''})
    assert text == '<script>alert("x")</script> & \'q\''
    assert escape_html(text) == "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;q&#x27;"
    assert escape_html(None) == ""
    assert check_template("{{ x | safe }}").status == "error"  # no way to mark output as markup


def test_compiled_templates_are_cached(monkeypatch):
    renderer = TemplateRenderer()
    parsed: list[str] = []
    parse = renderer._parse_uncached
    monkeypatch.setattr(renderer, "_parse_uncached", lambda source: parsed.append(source) or parse(source))
    assert renderer.render("{{a}}", {"a": 1}).text == "1"
    assert renderer.render("{{a}}", {"a": 2}).text == "2"
    assert parsed == ["{{a}}"]


def test_the_template_caches_hold_a_bounded_number_of_characters():
    """Many distinct long templates (one account's schema versions can carry thousands)
    stay within the character bound, not only the count bound, and the newest stays."""
    renderer = TemplateRenderer()
    sources = [f"{{{{ field{index} }}}} " + "x" * 9_000 for index in range(3 * MAX_CACHED_TEMPLATE_CHARS // 9_000)]
    for index, source in enumerate(sources):
        assert renderer.render(source, {f"field{index}": 1}).text.startswith("1 x")
    for cache in (renderer._parsed, renderer._checked):
        held = [source for source in sources if cache.get(source) is not None]
        assert 0 < len(held) < len(sources)
        assert sum(map(len, held)) <= MAX_CACHED_TEMPLATE_CHARS
        assert sources[-1] in held


@given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
                       st.one_of(st.text(max_size=30), st.integers(), st.none(), st.booleans()), max_size=5),
       st.text(max_size=60))
def test_rendering_arbitrary_json_never_raises(payload, source):
    rendered = render_template(source, payload, {"extra": [1, {"a": None}]})
    assert (rendered.text is None) == (rendered.error is not None)
