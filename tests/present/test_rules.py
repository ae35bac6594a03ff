"""The presentation rules: everything a record holds has a place on screen."""

from __future__ import annotations

from pathlib import Path

from agentfolio.app.documents import read_file
from agentfolio.model import FunctionResultContent, Message, RequestEntry, Session, SessionData, TextContent
from agentfolio.present import rules

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
STATE_2_0 = FIXTURES / "durable_state" / "shared-durable-agent-state-2.0.json"
STATE_1_2 = FIXTURES / "durable_state" / "python-durable-agent-state-1.2.json"


def test_a_2_0_state_has_its_outcomes_with_answer_usage_and_finish_reason() -> None:
    session = read_file(STATE_2_0).session
    found = rules.outcomes(session)
    assert set(found) == {"corr-2", "corr-expired"}
    answered = found["corr-2"]
    assert (answered.outcome, answered.finish_reason, answered.result_state) == ("succeeded", "stop", "available")
    assert answered.usage is not None and answered.usage.total_token_count == 8
    assert [c.text for m in answered.messages for c in m.items if isinstance(c, TextContent)] == ["Artifact generated."]
    # What has no place of its own is still there, by name.
    assert answered.more["response"]["responseId"] == "response-id-2"
    assert answered.more["receipt"] == {"futureReceiptField": 7}
    expired = found["corr-expired"]
    assert expired.failed and expired.result_state == "unavailable" and expired.messages == []
    # corr-2 follows its request; corr-expired has no entry and is shown after the history.
    places = rules.outcome_places(session, found)
    assert [o.correlation_id for o in places[0]] == ["corr-2"]
    assert [o.correlation_id for o in places[-1]] == ["corr-expired"]


def test_the_python_prototypes_outcome_maps_are_shown_as_the_shared_ones() -> None:
    from agentfolio.formats import durable_state
    from tests.formats.test_microsoft_schema_cases import PROTOTYPE_STATE

    session = durable_state.read(PROTOTYPE_STATE, strict=False).session
    found = rules.outcomes(session)
    assert set(found) == {"c1"}
    outcome = found["c1"]
    assert (outcome.outcome, outcome.completed_at) == ("succeeded", "2026-09-08T12:00:00.123456+00:00")
    assert outcome.expires_at == "2026-09-08T12:01:00.123456+00:00"
    assert [c.text for m in outcome.messages for c in m.items if isinstance(c, TextContent)] == ["hi"]
    # The rest of each record is still there, by name; the maps themselves are not repeated.
    assert outcome.more["response"] == {"metadata": {"v": [1]}}
    assert outcome.more["receipt"] == {"futureReceiptField": [1, 3]}
    assert outcome.more["result"]["futureMailboxField"] == {"keep": True}
    assert not {"responseMailbox", "completedCorrelations"} & set(rules.session_properties(session))


def test_tokens_of_an_answer_kept_only_as_an_outcome_are_counted() -> None:
    totals = rules.token_totals(read_file(STATE_2_0).session)
    assert (totals.responses, totals.input, totals.output, totals.total) == (1, 5, 3, 8)


def test_a_compaction_names_the_history_it_replaced_and_the_evicted_messages() -> None:
    session = read_file(STATE_1_2).session
    index = next(i for i, entry in enumerate(session.entries) if entry.kind == "compaction")
    assert rules.compaction_range(session, index) == f"summary replacing entries #0–#{index - 1}"
    truncated = Session(data=SessionData(conversation_history=session.entries,
                                         truncation={"evictedMessageCount": 12, "firstEvictedAt": "a",
                                                     "lastEvictedAt": "b"}))
    assert rules.compaction_range(truncated, index).endswith("; 12 message(s) evicted from a to b")


def test_properties_without_a_look_of_their_own_are_listed_by_wire_name() -> None:
    session = read_file(STATE_1_2).session
    request = session.entries[0]
    assert rules.more_properties(request, rules.ENTRY_DRAWN) == {"extensionData": {"requestFuture": True}}
    assert rules.more_properties(request.items[0], rules.MESSAGE_DRAWN) == {"extensionData": {"origin": "python"}}
    assert "ingestedPositions" in rules.session_properties(session)
    built = RequestEntry(orchestration_id="orch-1", messages=(Message(role="user"),))
    assert rules.more_properties(built, rules.ENTRY_DRAWN) == {"orchestrationId": "orch-1"}


def test_a_tool_exception_and_an_unloadable_media_url_are_shown() -> None:
    failed = FunctionResultContent.model_validate({"$type": "functionResult", "callId": "c", "result": None,
                                                   "exception": "TimeoutError: gave up"})
    assert rules.call_exception(failed) == "TimeoutError: gave up"
    assert rules.more_properties(failed, rules.CONTENT_DRAWN) == {}  # drawn as the exception, not again
    assert rules.shown_url("data:image/png;base64," + "A" * 1000).endswith("1,022 characters inline")
    assert rules.shown_url("javascript:alert(1)") == "javascript:alert(1)"  # shown as text, never loaded
