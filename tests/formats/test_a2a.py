from __future__ import annotations

import copy
from pathlib import Path

import orjson
from a2a.types import Task
from google.protobuf.json_format import MessageToDict, ParseDict
from hypothesis import HealthCheck, given, settings

from agentfolio import _json
from agentfolio.formats import a2a, registry
from agentfolio.formats.convert import convert
from agentfolio.model import PartContent, Session
from tests.provider_strategies import a2a_messages, a2a_tasks
from tests.strategies import durable_states

GALLERY = Path(__file__).resolve().parents[1] / "fixtures" / "a2a" / "gallery.json"


def gallery() -> dict:
    return orjson.loads(GALLERY.read_bytes())


def sdk_task(document: dict) -> dict:
    """The document as a2a-sdk's own Task reads and writes it (raises if it refuses it)."""
    return MessageToDict(ParseDict(document, Task()))


def test_gallery_written_by_the_sdk_reads_back_whole() -> None:
    document = gallery()
    assert registry.detect(document) is a2a.FORMAT
    assert a2a.validate(document) == []
    written = a2a.write(a2a.read(copy.deepcopy(document)).session)
    assert written == document
    assert sdk_task(written) == document


def test_a_task_shows_as_a_conversation_with_its_artifacts() -> None:
    session = a2a.read(gallery()).session
    assert [(entry.kind, message.role) for entry, message in session.messages()] == [
        ("request", "user"), ("response", "assistant"), ("response", "assistant"), ("response", "assistant"),
        ("response", "assistant")]
    named = [c for _, m in session.messages() for c in m.items if isinstance(c, PartContent)]
    assert [(p.name, p.content_type, (p.metadata or {}).get("a2a_filename")) for p in named] == [
        (None, "application/pdf", "q3.pdf"), (None, "text/markdown", "summary.md"),
        (None, "image/png", "Revenue chart.png")]


def test_message_body_and_a2a_parts_convert_both_ways_with_filename_and_media_type() -> None:
    body = {"parts": [{"name": "/report.md", "content_type": "text/markdown", "content": "# Q3"},
                      {"content_type": "image/png", "content_url": "https://example.com/chart.png"}]}
    there = convert(body, to="a2a")
    sdk_task(there.result)
    parts = there.result["history"][0]["parts"]
    assert parts == [{"text": "# Q3", "mediaType": "text/markdown", "filename": "/report.md"},
                     {"url": "https://example.com/chart.png", "mediaType": "image/png"}]
    assert convert(there.result, to="message-body").result == body


def test_a_standalone_message_reads_and_writes_back_whole() -> None:
    message = {"messageId": "m1", "role": "ROLE_AGENT", "parts": [{"data": {"n": 1}}], "contextId": "c"}
    assert a2a.write(a2a.read(copy.deepcopy(message)).session) == message


_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(a2a_tasks)
def test_any_task_reads_and_writes_back_the_same_json(document: dict) -> None:
    read = a2a.read(copy.deepcopy(document), strict=False)
    assert a2a.write(read.session) == document
    copied = Session.model_validate(_json.loads(_json.dumps(read.session.to_json_value())))
    assert a2a.write(copied) == document


@_SETTINGS
@given(a2a_messages)
def test_any_message_reads_and_writes_back_the_same_json(document: dict) -> None:
    assert a2a.write(a2a.read(copy.deepcopy(document), strict=False).session) == document


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(durable_states)
def test_whatever_is_converted_in_is_a_task_the_validator_and_the_sdk_accept(document: dict) -> None:
    conversion = convert(document, to="a2a", strict_read=False)
    assert a2a.validate(conversion.result) == []
    sdk_task(conversion.result)


def test_streamed_artifact_chunks_read_as_messages_and_write_back_whole() -> None:
    from a2a.types import StreamResponse

    stream = [
        {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Write the report."}]}},
        {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}},
        {"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [
            {"text": "# Report\n"}]}}},
        {"artifactUpdate": {"taskId": "t", "contextId": "c", "append": True, "lastChunk": True,
                            "artifact": {"artifactId": "a", "parts": [{"text": "Revenue grew 12%."}]}}},
        {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED", "message": {
            "messageId": "m2", "role": "ROLE_AGENT", "parts": [{"text": "Done."}]}}}},
    ]
    for event in stream:
        ParseDict(event, StreamResponse())
    assert registry.detect(stream) is a2a.FORMAT and a2a.validate(stream) == []
    read = a2a.read(copy.deepcopy(stream))
    texts = [c.text for _, m in read.session.messages() for c in m.items if hasattr(c, "text")]
    assert texts == ["Write the report.", "# Report\n", "Revenue grew 12%.", "Done."]
    assert a2a.write(read.session) == stream
    assert convert(convert(copy.deepcopy(stream), to="durable-state").result, to="a2a").result == stream


def test_appended_artifact_chunks_join_the_artifact_they_extend() -> None:
    from a2a.types import StreamResponse

    def chunk(artifact: str, parts: list, **flags: bool) -> dict:
        return {"artifactUpdate": {"taskId": "t", "contextId": "c", **flags,
                                   "artifact": {"artifactId": artifact, "parts": parts}}}

    working = {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}
    stream = [
        chunk("report", [{"text": "# Report\n"}]),
        chunk("log", [{"text": "one-shot"}], lastChunk=True),
        chunk("report", [{"text": "Revenue "}], append=True),
        working,
        chunk("report", [{"text": "grew 12%."}, {"data": {"growth": 0.12}}], append=True, lastChunk=True),
        chunk("report", [{"text": "a new report"}]),  # not appended: a new artifact of the same id
    ]
    for event in stream:
        ParseDict(event, StreamResponse())
    read = a2a.read(copy.deepcopy(stream))
    artifacts = [(m.extra["artifactId"], len(m.items)) for _, m in read.session.messages() if "artifactId" in m.extra]
    assert artifacts == [("report", 4), ("log", 1), ("report", 1)]
    # Written back, each chunk is an event again, in the place it had in the stream.
    assert a2a.write(read.session) == stream
    through = convert(convert(copy.deepcopy(stream), to="durable-state").result, to="a2a")
    assert through.result == stream
    # Another format sees the one artifact, and is told its chunking does not come along.
    conversion = convert(copy.deepcopy(stream), to="openai-chat")
    assert any(loss.what == "message property 'artifactChunks'" for loss in conversion.losses)
