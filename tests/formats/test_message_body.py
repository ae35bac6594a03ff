"""Message bodies as a format: the mapping, body → model → body, conversions and their loss reports."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentfolio.body import MessageBody
from agentfolio.formats import durable_state, envelope, message_body, openai_chat, registry
from agentfolio.formats.convert import convert
from agentfolio.formats.errors import FormatError, InvalidDocumentError
from agentfolio.formats.jsonio import load_json_file
from agentfolio.formats.losses import ConvertOptions
from agentfolio.model import DataContent, PartContent, TextContent, UriContent

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()

BODY = {"parts": [
    {"content_type": "text/plain", "content": "Here is the chart."},
    {"content_type": "image/png", "content": PNG, "content_encoding": "base64"},
    {"content_type": "audio/wav", "content_url": "https://example.com/a.wav"},
    {"content_type": "application/json", "content": '{"total": 3, "unit": "€"}'},
    {"name": "/sources/1", "content_type": "text/markdown", "content": "# Source", "metadata": {"rank": 1}},
    {"content_type": "text/markdown", "content": "*emphasis*"},
]}


def contents_of(document: dict) -> tuple:
    return message_body.read(document).session.entries[0].items[0].items


def test_each_kind_of_part_maps_onto_its_content() -> None:
    text, image, audio, data, named, markdown = contents_of(BODY)
    assert text == TextContent(text="Here is the chart.")
    assert image == DataContent(uri=f"data:image/png;base64,{PNG}", media_type="image/png")
    assert audio == UriContent(uri="https://example.com/a.wav", media_type="audio/wav")
    assert isinstance(data, DataContent) and data.media_type == "application/json"
    assert data.uri == "data:application/json,%7B%22total%22%3A%203%2C%20%22unit%22%3A%20%22%E2%82%AC%22%7D"
    assert named == PartContent(name="/sources/1", content_type="text/markdown", content="# Source",
                                metadata={"rank": 1})
    assert markdown == PartContent(content_type="text/markdown", content="*emphasis*")


def test_one_message_in_one_entry_with_the_default_role_or_the_chosen_one() -> None:
    session = message_body.read(BODY).session
    assert [entry.kind for entry in session.entries] == ["response"]
    assert [m.role for _, m in session.messages()] == [message_body.DEFAULT_ROLE] == ["assistant"]
    asked = message_body.read(BODY, options=ConvertOptions(body_role="user")).session
    assert asked.entries[0].kind == "request" and asked.entries[0].items[0].role == "user"
    converted = convert(BODY, to="canonical", options=ConvertOptions(body_role="user")).result
    assert converted["session"]["data"]["conversationHistory"][0]["messages"][0]["role"] == "user"


def test_read_then_write_gives_the_body_back() -> None:
    assert message_body.write(message_body.read(BODY).session) == BODY
    # Defaults a document leaves out come back spelled out, as MessageBody.to_dict() does.
    short = {"parts": [{"content": "hi"}, {"name": "/x", "content_encoding": None, "content": "y"}]}
    written = message_body.write(message_body.read(short).session)
    assert written == MessageBody.parse(short).to_dict()


names = st.sampled_from(["/a", "/a/b", "/sources/1", "/notes.md", "/x-y_z"])
content_types = st.sampled_from(["text/plain", "text/markdown", "text/plain; charset=utf-8", "image/png",
                                 "audio/wav", "video/mp4", "application/json", "application/vnd.x+json",
                                 "application/octet-stream"])
texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
jsons = st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | texts,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
                     max_leaves=6)
urls = st.sampled_from(["https://example.com/f", "data:image/png;base64," + PNG, "data:,hello", "urn:x:1"])


@st.composite
def parts(draw: st.DrawFn) -> dict:
    part: dict = {"content_type": draw(content_types)}
    if draw(st.booleans()):
        part["name"] = draw(names)
    how = draw(st.sampled_from(["plain", "base64", "url", "json", "none"]))
    if how == "plain":
        part["content"] = draw(texts)
    elif how == "json":
        part["content"] = orjson.dumps(draw(jsons)).decode()
    elif how == "base64":
        part["content"] = base64.b64encode(draw(st.binary(max_size=12))).decode()
        part["content_encoding"] = "base64"
    elif how == "url":
        part["content_url"] = draw(urls)
    if draw(st.integers(0, 3)) == 0:
        part["metadata"] = draw(st.dictionaries(texts, jsons, max_size=2))
    return part


bodies = st.lists(parts(), max_size=6).map(
    lambda ps: {"parts": [p for i, p in enumerate(ps)
                          if "name" not in p or p["name"] not in {q.get("name") for q in ps[:i]}]})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies)
def test_body_to_model_to_body_is_the_identity(document: dict) -> None:
    canonical = MessageBody.parse(document).to_dict()
    result = message_body.read(document)
    assert result.problems == []
    assert message_body.write(result.session) == canonical
    # The canonical model's own JSON carries it too (agentfolio's format, then back).
    via_json = convert(convert(document, to="canonical").result, to="message-body")
    assert via_json.result == canonical and via_json.losses == []


def test_detection_takes_bodies_and_leaves_the_other_formats_alone() -> None:
    assert registry.detect(BODY) is message_body.FORMAT
    assert registry.detect({"parts": []}) is message_body.FORMAT
    assert registry.get("message-body") is message_body.FORMAT
    for document, module in [(load_json_file(FIXTURES / "envelope" / "gallery.json"), envelope),
                             ({"messages": [{"role": "user", "content": "hi"}], "parts": []}, openai_chat),
                             ({"schemaVersion": "1.2.0", "data": {"conversationHistory": []}}, durable_state)]:
        assert registry.detect(document) is module.FORMAT
    assert not message_body.looks_like({"parts": {}})
    assert not message_body.looks_like({"parts": [], "version": "1.0"})


def test_bad_bodies_are_refused_with_a_pointer_at_each_problem() -> None:
    document = {"parts": [
        {"content_type": "text/plain", "content": "ok"},
        "not a part",
        {"name": "no-slash", "contentType": "text/plain"},
        {"name": "/a", "content": "x", "content_url": "https://example.com"},
        {"name": "/a", "content_type": "image/png", "content": "%%%", "content_encoding": "base64"},
    ], "extra": 1}
    with pytest.raises(InvalidDocumentError) as raised:
        message_body.read(document, source="body.json")
    pointers = [problem.pointer for problem in raised.value.problems]
    assert pointers == ["/parts/1", "/parts/2/name", "/parts/2/contentType", "/parts/3", "/parts/4",
                        "/parts/4/name", "/extra"]
    assert raised.value.pointer == "/parts/1" and str(raised.value).startswith("body.json: /parts/1: ")
    assert "already used by part 3" in raised.value.problems[5].message
    with pytest.raises(FormatError, match="/parts: a message body needs"):
        message_body.read({"parts": "x"}, source="b.json")


def test_a_tolerant_read_keeps_bad_parts_and_writes_them_back() -> None:
    document = {"parts": [{"content": "ok"}, {"name": "bad", "content": "x"}], "note": 1}
    result = message_body.read(document, strict=False)
    assert [problem.pointer for problem in result.problems] == ["/parts/1/name", "/note"]
    assert message_body.write(result.session) == {"parts": [{"content_type": "text/plain", "content": "ok"},
                                                            {"name": "bad", "content": "x"}], "note": 1}


def losses_by_pointer(conversion) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for loss in conversion.losses:
        found.setdefault(loss.pointer, []).append(("~" if loss.approximated else "-") + loss.what)
    return found


def test_body_to_durable_state_and_back() -> None:
    there = convert(BODY, to="durable-state")
    assert durable_state.validate(there.result)[1] == []
    # Only the two PartContents have no durable type: text, data and uri contents are durable's own.
    # And the entry's time and correlation id, which a body has not: made up, and said so.
    assert losses_by_pointer(there) == {"/parts/4": ["~body part"], "/parts/5": ["~body part"],
                                        "/createdAt": ["~createdAt"], "/correlationId": ["~correlationId"]}
    back = convert(there.result, to="message-body")
    assert losses_by_pointer(back) == {"/schemaVersion": ["-schemaVersion"],
                                       "/data/conversationHistory/0/correlationId": ["-correlationId"],
                                       "/data/conversationHistory/0/createdAt": ["-createdAt"]}
    assert back.result["parts"][:4] == BODY["parts"][:4]
    # The named part with metadata went whole into durable state's escape hatch and came
    # back whole; the unnamed markdown part is plain text now, as reported.
    assert back.result["parts"][4:] == [BODY["parts"][4], {"content_type": "text/plain", "content": "*emphasis*"}]
    hatch = there.result["data"]["conversationHistory"][0]["messages"][0]["contents"][4]
    assert hatch["$type"] == "unknown" and hatch["content"]["metadata"] == {"rank": 1}


def test_durable_state_to_body_reports_what_a_body_cannot_hold() -> None:
    state = {"schemaVersion": "1.2.0", "data": {"conversationHistory": [
        {"$type": "request", "correlationId": "c1", "messages": [
            {"role": "user", "messageId": "m1", "contents": [{"$type": "text", "text": "Weather in Oslo?"}]}]},
        {"$type": "response", "usage": {"inputTokenCount": 5}, "messages": [
            {"role": "assistant", "contents": [
                {"$type": "reasoning", "text": "call the tool"},
                {"$type": "functionCall", "callId": "c/1", "name": "weather", "arguments": {"city": "Oslo"}},
                {"$type": "functionCall", "callId": "c 1", "name": "clock", "arguments": {}},
                {"$type": "usage", "usage": {"inputTokenCount": 5}}]},
            {"role": "tool", "contents": [{"$type": "functionResult", "callId": "c/1", "result": {"t": 4}}]},
            {"role": "assistant", "contents": [{"$type": "text", "text": "4 °C", "mood": "sunny"}]}]}]}}
    conversion = convert(state, to="message-body")
    base = "/data/conversationHistory"
    assert losses_by_pointer(conversion) == {
        "/schemaVersion": ["-schemaVersion"],
        f"{base}/0/correlationId": ["-correlationId"],
        f"{base}/0/$type": ["~entry kind 'request'"],
        f"{base}/0/messages/0/role": ["~role 'user'"],
        f"{base}/0/messages/0/messageId": ["-messageId"],
        f"{base}/1/usage": ["-usage"],
        f"{base}/1/messages/0": ["~message boundary"],
        f"{base}/1/messages/0/contents/0": ["-reasoning content"],
        f"{base}/1/messages/0/contents/1": ["~functionCall content"],
        f"{base}/1/messages/0/contents/2": ["~functionCall content"],
        f"{base}/1/messages/0/contents/3": ["-usage content"],
        f"{base}/1/messages/1": ["~message boundary"],
        f"{base}/1/messages/1/role": ["~role 'tool'"],
        f"{base}/1/messages/1/contents/0": ["~functionResult content"],
        f"{base}/1/messages/2": ["~message boundary"],
        f"{base}/1/messages/2/contents/0/mood": ["-property 'mood'"],
    }
    parts = conversion.result["parts"]
    assert [part.get("name") for part in parts] == [None, "/tool-calls/c_1", "/tool-calls/c_1-2", "/tool-results/c_1",
                                                    None]
    assert json.loads(parts[1]["content"]) == {"$type": "functionCall", "callId": "c/1", "name": "weather",
                                               "arguments": {"city": "Oslo"}}
    assert parts[4] == {"content_type": "text/plain", "content": "4 °C"}
    MessageBody.parse(conversion.result)  # a valid body
    with pytest.raises(Exception, match="would lose"):
        convert(state, to="message-body", options=ConvertOptions(strict=True))


def test_envelope_to_body_and_body_to_envelope() -> None:
    gallery = load_json_file(FIXTURES / "envelope" / "gallery.json")
    conversion = convert(gallery, to="message-body")
    MessageBody.parse(conversion.result)
    assert conversion.losses, "an envelope holds more than a body"
    for loss in conversion.losses:
        assert loss.pointer.startswith("/messages/") or loss.pointer == "/model", loss
    whats = {loss.what for loss in conversion.losses}
    assert {"messageId", "createdAt", "message boundary"} <= whats
    assert any(what.startswith("presentation ") for what in whats)

    there = convert(BODY, to="envelope")
    assert envelope.validate(there.result) == []
    assert losses_by_pointer(there) == {
        "/parts/2/content_type": ["~mediaType"],
        "/parts/3": ["~data content"],
        "/parts/4": ["~body part"],
        "/parts/5": ["~body part"],
        "/messageId": ["~messageId"],
        "/createdAt": ["~createdAt"],
    }


def test_a_lowered_session_is_what_reading_the_written_body_gives() -> None:
    session = convert(load_json_file(FIXTURES / "envelope" / "gallery.json"), to="message-body")
    assert message_body.read(session.result).session == session.session


def test_cli_converts_a_body_to_durable_state(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_bytes(orjson.dumps(BODY))
    done = subprocess.run([sys.executable, "-m", "agentfolio.cli", "convert", str(path), "--to", "durable-state"],
                          capture_output=True, text=True, timeout=60, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    state = json.loads(done.stdout)
    assert state["data"]["conversationHistory"][0]["messages"][0]["contents"][0] == {
        "$type": "text", "text": "Here is the chart."}
    assert "message-body" in done.stderr and "approximated body part ×1" in done.stderr
    assert "kept whole inside" in done.stderr and "[/parts/4]" in done.stderr and "[/parts/5]" in done.stderr
    valid = subprocess.run([sys.executable, "-m", "agentfolio.cli", "validate", str(path)], capture_output=True,
                           text=True, timeout=60, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert valid.returncode == 0 and "(message-body)" in valid.stdout
