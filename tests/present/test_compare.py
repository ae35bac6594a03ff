"""Aligning two histories: anchors by kind and text, pairs in order between them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentfolio.formats import durable_state
from agentfolio.present.compare import align_turns, word_diff


def entries(texts: list[str]) -> tuple:
    history = []
    for number, text in enumerate(texts):
        kind = "request" if number % 2 == 0 else "response"
        history.append({"$type": kind, "messages": [{"role": "user" if kind == "request" else "assistant",
                                                      "contents": [{"$type": "text", "text": text}]}]})
    return durable_state.read({"schemaVersion": "1.1.0", "data": {"conversationHistory": history}}).session.entries


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "d e"]), max_size=12),
       st.lists(st.sampled_from(["a", "b", "c", "d f"]), max_size=12))
def test_every_entry_of_both_sides_appears_once_in_order(left: list[str], right: list[str]) -> None:
    rows = align_turns(entries(left), entries(right))
    assert [row.left for row in rows if row.left is not None] == list(range(len(left)))
    assert [row.right for row in rows if row.right is not None] == list(range(len(right)))
    for row in rows:
        assert (row.status == "left") == (row.right is None)
        assert (row.status == "right") == (row.left is None)
        if row.status == "same":
            assert left[row.left] == right[row.right]


def test_identical_histories_are_the_same_turn_for_turn() -> None:
    texts = ["hello", "hi", "how are you", "fine"]
    assert {row.status for row in align_turns(entries(texts), entries(texts))} == {"same"}


def test_a_word_diff_keeps_every_word_of_both_sides() -> None:
    changes = word_diff("the quick brown fox", "the slow brown dog")
    assert changes is not None
    assert "".join(c.text for c in changes if c.op != "added") == "the quick brown fox"
    assert "".join(c.text for c in changes if c.op != "removed") == "the slow brown dog"
    assert [c.text for c in changes if c.op == "removed"] == ["quick", "fox"]
