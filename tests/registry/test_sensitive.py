"""Sensitive wrappers: encoded at rest, nothing lost, answered masked."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentfolio import _json
from agentfolio.registry.sensitive import decode_at_rest, encode_at_rest, load_masked, mentions_sensitive

_leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
_values = st.recursive(_leaves, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)


def _wrapped(value: Any) -> dict[str, Any]:
    return {"$sensitive": "string", "value": value, "labels": ["pii"]}


@given(_values, _values)
def test_encoding_at_rest_loses_nothing_and_answers_show_no_value(value: Any, around: Any) -> None:
    document = {"around": around, "deep": [{"secret": _wrapped(value)}]}
    stored = _json.dumps(encode_at_rest(document))
    assert mentions_sensitive(stored)
    assert decode_at_rest(_json.loads(stored)) == document
    shown = load_masked(stored)
    assert shown["deep"][0]["secret"] == {"$sensitive": "string", "labels": ["pii"], "masked": True}
    assert shown["around"] == around


def test_a_value_without_wrappers_loads_as_stored() -> None:
    stored = _json.dumps({"text": "no wrapper: $sensitive is only a word here", "n": [1, 2]})
    assert not mentions_sensitive(stored)
    assert load_masked(stored) == _json.loads(stored)
