"""The facts a history counts are counted from its entries' JSON: for every document the
records read whole, they are what a count over the records gives, entry by entry and
for the session's tokens, so storing a file need not build its records."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings

from agentfolio._time import parse_epoch
from agentfolio.formats import durable_state
from agentfolio.model import ENTRY_KINDS, ErrorContent, FunctionCallContent, FunctionResultContent, TextContent
from agentfolio.model.analysis import call_failed
from agentfolio.present import rules
from agentfolio.present.activity import FIRST_TEXT_CHARS, entry_facts, history_facts, session_facts
from tests import strategies
from tests.strategies import counted_states


def counted_by_records(entry: Any) -> tuple[Any, ...]:
    """An entry's facts counted over its records, as the count was first written: the
    oracle the JSON count must agree with."""
    kind = entry.kind
    usage = rules.entry_usage(entry) if kind in rules.ANSWER_KINDS else None
    roles: list[str] = []
    tool_calls = failed_tools = errors = 0
    first_user_text = None
    for message in entry.items:
        role = message.role or "?"
        if role not in roles:
            roles.append(role)
        for content in message.items:
            if isinstance(content, FunctionCallContent):
                tool_calls += 1
            elif isinstance(content, FunctionResultContent):
                failed_tools += call_failed(content)
            elif isinstance(content, ErrorContent):
                errors += 1
            elif first_user_text is None and role == "user" and isinstance(content, TextContent) \
                    and (content.text or "").strip():
                first_user_text = rules.one_line(content.text, FIRST_TEXT_CHARS).replace("\x00", "\ufffd")
    if kind == "errorResponse" and not errors:
        errors = 1
    tokens = None if usage is None else (usage.input_token_count, usage.output_token_count,
                                         rules.usage_total((usage.input_token_count, usage.output_token_count,
                                                            usage.total_token_count)))
    at = parse_epoch(entry.created_at) if kind in ENTRY_KINDS else None
    return kind, at, tokens, tool_calls, failed_tools, errors, tuple(roles), first_user_text


def counted_from_json(entry: dict[str, Any]) -> tuple[Any, ...]:
    facts = entry_facts(entry)
    tokens = (facts.input_tokens, facts.output_tokens, facts.total_tokens) if facts.has_usage else None
    at = facts.at if facts.kind in ENTRY_KINDS else None
    return (facts.kind, at, tokens, facts.tool_calls, facts.failed_tools, facts.errors, facts.roles,
            facts.first_user_text)


def tokens_by_records(session: Any) -> tuple[int, int, int, int]:
    """The session's tokens over its records: answers, then outcomes of requests not answered."""
    totals = rules.TokenTotals()
    answered = set()
    for entry in session.entries:
        if entry.kind in rules.ANSWER_KINDS:
            usage = rules.entry_usage(entry)
            totals.add(None if usage is None else (usage.input_token_count, usage.output_token_count,
                                                   usage.total_token_count))
            answered.add(entry.correlation_id)
    for key, outcome in rules.outcomes(session).items():
        if key not in answered and outcome.usage is not None:
            usage = outcome.usage
            totals.add((usage.input_token_count, usage.output_token_count, usage.total_token_count))
    return totals.input, totals.output, totals.total, totals.responses


@settings(max_examples=300, deadline=None)
@given(counted_states() | strategies.durable_states)
def test_the_json_count_is_the_records_count_for_every_valid_document(document: dict[str, Any]) -> None:
    read = durable_state.read(document, strict=False)
    if read.problems:
        return  # a document breaking its schema: its records may keep an entry whole, unread
    session = read.session
    history = document["data"].get("conversationHistory") or []
    assert [counted_from_json(entry) for entry in history] == [counted_by_records(entry) for entry in session.entries]
    total, per_entry, _ = history_facts(history, document["data"])
    assert (total.input_tokens, total.output_tokens, total.total_tokens, total.usage_responses) == \
        tokens_by_records(session)
    # The records count through the JSON they were read from: the same facts.
    assert session_facts(session)[1] == per_entry
    assert rules.token_totals(session).total == total.total_tokens


def test_a_record_built_without_a_source_counts_its_own_json() -> None:
    document = {"schemaVersion": "1.2.0", "data": {"conversationHistory": [
        {"$type": "request", "messages": [{"role": "user", "contents": [{"$type": "text", "text": "hi\nthere"}]}]},
        {"$type": "response", "usage": {"inputTokenCount": 3, "outputTokenCount": 4},
         "messages": [{"role": "assistant", "contents": [{"$type": "functionCall", "callId": "a", "name": "f"}]}]}]}}
    entries = durable_state.read(document).session.entries
    copies = [entry.model_copy(update={"correlation_id": "x"}) for entry in entries]
    assert all(copy.source is None for copy in copies)
    facts = [entry_facts(copy) for copy in copies]
    assert [(item.kind, item.first_user_text, item.tool_calls, item.total_tokens) for item in facts] == \
        [("request", "hi", 0, None), ("response", None, 1, 7)]


def test_an_answer_whose_usage_the_records_cannot_read_counts_no_tokens() -> None:
    # A fractional count is valid JSON Schema "integer"-free usage, but no token count.
    document = {"schemaVersion": "1.1.0", "data": {"conversationHistory": [
        {"$type": "response", "usage": {"inputTokenCount": 1.5}, "messages": []}]}}
    total, per_entry, _ = history_facts(document["data"]["conversationHistory"], document["data"])
    assert (per_entry[0].kind, per_entry[0].has_usage, per_entry[0].errors) == ("response", False, 0)
    assert (total.total_tokens, total.usage_responses) == (0, 0)
