"""The JSON tree renderer: every key and value escaped, whatever the value."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agentfolio.web import html

OUR_TAGS = re.compile(r'</?(div|details|summary|span|button)\b(?:\s+[a-z-]+(?:="[^"<>]*")?)*\s*>')
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                    max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(), JSON, min_size=1, max_size=4))
def test_nothing_in_a_value_becomes_markup(value: dict[str, object]) -> None:
    tree = html.json_tree(value, label='"><script>')
    assert tree is not None
    assert "<" not in OUR_TAGS.sub("", str(tree)) and ">" not in OUR_TAGS.sub("", str(tree))


def test_a_script_in_keys_values_and_long_strings_is_text() -> None:
    payload = "<script>alert(1)</script>"
    tree = str(html.json_tree({payload: [payload, payload * 100]}))
    assert "<script>" not in tree
    assert "&lt;script&gt;" in tree
    assert 'class="jt-show"' in tree  # the long one is behind "show"


def test_a_json_string_is_drawn_as_its_tree_and_a_scalar_is_not_a_tree() -> None:
    assert html.json_tree('{"a": [1, 2]}') is not None
    assert html.json_tree("plain text") is None
    assert html.json_tree(42) is None


def test_a_value_too_big_for_a_tree_falls_back_to_text() -> None:
    assert html.json_tree(list(range(html.TREE_NODES + 10))) is None
    assert html.json_tree(list(range(100))) is not None
