"""Aligning two histories: anchors by kind and text, pairs in order between them."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from agentfolio.formats import durable_state
from agentfolio.present.compare import align_spans, align_turns, span_text, word_diff


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


@dataclass
class Span:
    depth: int
    schema_name: str
    title: str
    status: str = "complete"
    payload: object = None
    result_payload: object = None
    summary: str | None = None


SPAN_KINDS = st.builds(Span, depth=st.integers(0, 2), schema_name=st.sampled_from(["llm", "tool"]),
                       title=st.sampled_from(["plan", "search", "answer"]),
                       status=st.sampled_from(["complete", "failed"]), result_payload=st.sampled_from([None, 1, "x"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(SPAN_KINDS, max_size=12), st.lists(SPAN_KINDS, max_size=12))
def test_every_span_of_both_traces_appears_once_in_order(left: list[Span], right: list[Span]) -> None:
    rows = align_spans(left, right)
    assert [row.left for row in rows if row.left is not None] == list(range(len(left)))
    assert [row.right for row in rows if row.right is not None] == list(range(len(right)))
    for row in rows:
        if row.status == "same":
            assert left[row.left] == right[row.right]
        if row.status == "changed":  # paired spans sit at the same depth and are of the same type
            assert (left[row.left].depth, left[row.left].schema_name) == (right[row.right].depth,
                                                                           right[row.right].schema_name)


def test_a_span_with_the_same_title_but_another_result_is_changed() -> None:
    left = [Span(0, "llm", "plan"), Span(1, "tool", "search", result_payload={"hits": 3}), Span(1, "tool", "x")]
    right = [Span(0, "llm", "plan"), Span(1, "tool", "search", result_payload={"hits": 4})]
    rows = align_spans(left, right)
    assert [(row.left, row.right, row.status) for row in rows] == [(0, 0, "same"), (1, 1, "changed"),
                                                                    (2, None, "left")]
    assert "hits" in span_text(left[1]) and "4" in span_text(right[1])


def test_spans_are_known_by_their_rendered_summary_before_their_types_title() -> None:
    left = [Span(0, "tool", "Tool call", summary="get_weather(Paris)"),
            Span(0, "tool", "Tool call", summary="search_trains(Lyon)")]
    right = [Span(0, "tool", "Tool call", summary="search_trains(Lyon)")]
    assert [(row.left, row.right, row.status) for row in align_spans(left, right)] == [(0, None, "left"),
                                                                                       (1, 0, "same")]
