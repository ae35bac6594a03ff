from __future__ import annotations

import copy
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from langchain_core.messages import AIMessage, ToolMessage, messages_from_dict, messages_to_dict

from agentfolio import _json
from agentfolio.formats import langchain, registry
from agentfolio.formats.convert import convert
from agentfolio.model import FunctionCallContent, FunctionResultContent, Session, UsageContent
from agentfolio.model.analysis import call_failed
from tests.provider_strategies import langchain_messages
from tests.strategies import durable_states

GALLERY = Path(__file__).resolve().parents[1] / "fixtures" / "langchain" / "gallery.json"


def gallery() -> list:
    return orjson.loads(GALLERY.read_bytes())


def test_gallery_written_by_langchain_reads_back_whole_and_langchain_reads_what_we_write() -> None:
    document = gallery()
    assert registry.detect(document) is langchain.FORMAT
    assert langchain.validate(document) == []
    written = langchain.write(langchain.read(copy.deepcopy(document)).session)
    assert written == document
    assert messages_to_dict(messages_from_dict(written)) == document


def test_calls_results_and_usage_map_onto_the_shared_model() -> None:
    session = langchain.read(gallery()).session
    contents = [c for _, m in session.messages() for c in m.items]
    assert [(c.call_id, c.name, c.arguments) for c in contents if isinstance(c, FunctionCallContent)] == [
        ("call_1", "get_weather", {"city": "Paris"}), ("call_2", "get_time", {})]
    results = [c for c in contents if isinstance(c, FunctionResultContent)]
    assert [call_failed(r) for r in results] == [False, True]
    usage = next(c.usage for c in contents if isinstance(c, UsageContent))
    assert (usage.input_token_count, usage.extra["input_token_details"]) == (120, {"cache_read": 100})


def test_through_durable_state_and_back_nothing_changes_but_what_durable_state_reports() -> None:
    document = gallery()
    there = convert(copy.deepcopy(document), to="durable-state")
    back = convert(there.result, to="langchain")
    assert back.result[2:] == document[2:]  # the user message's untyped link gets a media type in durable 1.x
    assert ("mediaType", "/1/data/content/1/mime_type") in {(loss.what, loss.pointer) for loss in there.losses}


_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(langchain_messages)
def test_any_history_reads_and_writes_back_the_same_json(document: list) -> None:
    assert langchain.validate(document) == []
    read = langchain.read(copy.deepcopy(document))
    assert langchain.write(read.session) == document
    copied = Session.model_validate(_json.loads(_json.dumps(read.session.to_json_value())))
    assert langchain.write(copied) == document


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(durable_states)
def test_whatever_is_converted_in_is_what_the_validator_and_langchain_accept(document: dict) -> None:
    conversion = convert(document, to="langchain", strict_read=False)
    assert langchain.validate(conversion.result) == []
    messages = messages_from_dict(conversion.result)
    for message in messages:
        if isinstance(message, AIMessage):
            assert all(isinstance(call["args"], dict) for call in message.tool_calls)
        if isinstance(message, ToolMessage):
            assert isinstance(message.tool_call_id, str)
