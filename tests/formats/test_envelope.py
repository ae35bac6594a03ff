from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentfolio import _json
from agentfolio.formats import envelope, registry
from agentfolio.formats.errors import FormatError, InvalidDocumentError, UnsupportedVersionError
from agentfolio.formats.jsonio import load_json_file
from agentfolio.model import (
    DataContent,
    DocumentContent,
    FunctionCallContent,
    FunctionResultContent,
    MemoryContent,
    OpaqueContent,
    RequestEntry,
    ResponseEntry,
    SkillsContent,
    TemplateVariableContent,
    TextContent,
    ToolCatalogContent,
    UriContent,
)
from tests.envelope_strategies import envelopes

GALLERY = Path(__file__).resolve().parents[1] / "fixtures" / "envelope" / "gallery.json"


def exact(value: object) -> bytes:
    """JSON value identity: key order aside, but 1 and 1.0 and true kept apart."""
    return _json.dumps(value, option=orjson.OPT_SORT_KEYS)


def gallery() -> dict:
    return load_json_file(GALLERY)


def test_gallery_reads_every_kind_into_the_model() -> None:
    session = envelope.read(gallery()).session
    assert [type(e) for e in session.entries] == [RequestEntry, ResponseEntry]
    contents = [c for _, m in session.messages() for c in m.items]
    kinds = [type(c) for c in contents]
    assert kinds == [TextContent, TemplateVariableContent, MemoryContent, SkillsContent, ToolCatalogContent,
                     TextContent, DocumentContent, UriContent, TextContent, FunctionCallContent,
                     FunctionCallContent, FunctionResultContent, FunctionResultContent, TextContent]
    system, _, memory, skills, _, _, document, media, long_text, weather, trains, sunny, failed, _ = contents
    assert system.presentation.style == "system_prompt" and system.presentation.collapsed is True
    assert memory.presentation.collapsed is True and memory.items[1].title == "Vegetarian"
    assert skills.presentation.collapsed is False
    assert (document.file_name, document.size_bytes) == ("itinerary.pdf", 48213)
    assert (media.uri, media.media_type, media.extra["altText"]) == ("https://example.com/lyon.jpg", "image/*",
                                                                    "Lyon skyline at dusk")
    assert (long_text.presentation.style, long_text.presentation.char_count) == ("long_text", 5120)
    # Results are paired with their requests by tool name and order, through call ids.
    assert sunny.call_id == weather.call_id and failed.call_id == trains.call_id
    assert weather.call_id != trains.call_id
    assert failed.extra["success"] is False and "toolName" not in failed.extra
    messages = [m for _, m in session.messages()]
    assert [m.message_id for m in messages] == ["m1", "m2", "m3", "m4", "m5"]
    assert messages[0].created_at == "2024-11-04T19:33:05.000Z"
    assert session.extra["model"] == "gpt-4o-2024-08-06"


def test_gallery_round_trips_exactly() -> None:
    document = gallery()
    assert exact(envelope.write(envelope.read(document).session)) == exact(document)


@settings(max_examples=300, deadline=None)
@given(envelopes)
def test_random_envelopes_round_trip_exactly(document: dict) -> None:
    original = copy.deepcopy(document)
    result = envelope.read(document, strict=True)
    written = envelope.write(result.session)
    assert exact(written) == exact(original)
    assert envelope.validate(written) == []


def test_unpaired_result_keeps_its_tool_name_and_data_media_keeps_its_type() -> None:
    document = {"version": "1.0", "messages": [{"id": "a", "role": "tool", "timestamp": 0, "segments": [
        {"kind": "tool_call_result", "toolName": "lost", "result": "", "success": True, "collapsed": False},
        {"kind": "media", "mediaType": "image", "url": "data:image/webp;base64,AAAA"},
        {"kind": "media", "mediaType": "video", "url": "data:image/webp;base64,AAAA"}]}]}
    result, image, odd = envelope.read(document).session.entries[0].items[0].items
    assert result.extra["toolName"] == "lost"
    assert isinstance(image, DataContent) and image.media_type == "image/webp"
    assert odd.media_type == "video/*"
    assert exact(envelope.write(envelope.read(document).session)) == exact(document)


@pytest.mark.parametrize("stamp, iso", [
    (0, "1970-01-01T00:00:00.000Z"),
    (1730748785123, "2024-11-04T19:33:05.123Z"),
    (1730748785123.0, "2024-11-04T19:33:05.123000Z"),
    (1730748785123.25, "2024-11-04T19:33:05.12325Z".replace("12325Z", "123250Z")),
    (envelope.MAX_MS, "9999-12-31T23:59:59.999Z"),
])
def test_timestamps_map_to_iso_and_back_exactly(stamp: float, iso: str) -> None:
    assert envelope.ms_to_iso(stamp) == iso
    back = envelope.iso_to_ms(iso)
    assert back == stamp and type(back) is type(stamp)


def test_iso_times_from_other_formats_become_milliseconds() -> None:
    assert envelope.iso_to_ms("2025-11-04T19:33:10.47008+00:00") == 1762284790470.08
    assert envelope.iso_to_ms("2025-11-04T21:33:10+02:00") == 1762284790000
    assert envelope.iso_to_ms("2025-11-04T19:33:10") == 1762284790000  # no offset: UTC
    assert envelope.iso_to_ms("yesterday") is None
    assert envelope.iso_to_ms("2025-13-04T19:33:10Z") is None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
       st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1))
def test_any_wall_time_and_offset_becomes_the_milliseconds_datetime_counts(moment: datetime, minutes: int) -> None:
    offset = timezone(timedelta(minutes=minutes))
    aware = moment.replace(microsecond=moment.microsecond // 1000 * 1000, tzinfo=offset)
    sign, size = ("-" if minutes < 0 else "+"), abs(minutes)
    text = (f"{aware.year:04d}-{aware.month:02d}-{aware.day:02d}T{aware.hour:02d}:{aware.minute:02d}:"
            f"{aware.second:02d}.{aware.microsecond // 1000:03d}{sign}{size // 60:02d}:{size % 60:02d}")
    assert envelope.iso_to_ms(text) == (aware - _EPOCH) // timedelta(milliseconds=1)


@pytest.mark.parametrize("year", [1900, 2000, 2023, 2024, 1, 9999])
@pytest.mark.parametrize(("month", "day"), [(2, 28), (2, 29), (2, 30), (4, 31), (12, 31)])
def test_a_date_that_does_not_exist_has_no_milliseconds(year: int, month: int, day: int) -> None:
    try:
        expected: int | None = (datetime(year, month, day, tzinfo=UTC) - _EPOCH) // timedelta(milliseconds=1)
    except ValueError:
        expected = None
    assert envelope.iso_to_ms(f"{year:04d}-{month:02d}-{day:02d}T00:00:00Z") == expected


# -- Bad input: clear errors with paths ------------------------------------------------

def _doc(**message_changes: object) -> dict:
    message = {"id": "a", "role": "user", "timestamp": 1, "segments": [{"kind": "text", "content": "hi"}]}
    message.update(message_changes)
    return {"version": "1.0", "messages": [message]}


def _error(document: object) -> FormatError:
    with pytest.raises(FormatError) as caught:
        envelope.read(document, source="in.json")
    return caught.value


def test_unknown_kind_names_the_kinds_that_exist() -> None:
    error = _error(_doc(segments=[{"kind": "text", "content": "x"}, {"kind": "hologram", "content": "x"}]))
    assert isinstance(error, InvalidDocumentError)
    assert error.pointer == "/messages/0/segments/1/kind"
    assert 'unknown kind "hologram"' in error.message and "tool_call_request" in error.message
    assert str(error).startswith("in.json: /messages/0/segments/1/kind: ")


def test_missing_required_fields_are_reported_each_at_its_segment() -> None:
    error = _error(_doc(segments=[{"kind": "memory", "items": [{"title": "t"}]},
                                  {"kind": "tool_call_result", "toolName": "f", "result": "r", "collapsed": True}]))
    found = {(p.pointer, p.message) for p in error.problems}
    assert ("/messages/0/segments/0", 'missing required property "collapsed"') in found
    assert ("/messages/0/segments/0/items/0", 'missing required property "content"') in found
    assert ("/messages/0/segments/1", 'missing required property "success"') in found
    message_error = _error({"version": "1.0", "messages": [{"role": "user", "segments": [
        {"kind": "text", "content": "x"}]}]})
    assert {p.message for p in message_error.problems} >= {'missing required property "id"',
                                                           'missing required property "timestamp"'}


@pytest.mark.parametrize("version", ["2.0", "1", 1.0, None])
def test_wrong_version_is_refused_before_anything_else(version: object) -> None:
    document = _doc()
    document["version"] = version
    error = _error(document)
    assert isinstance(error, UnsupportedVersionError)
    assert error.pointer == "/version" and "supported: '1.0'" in error.message
    del document["version"]
    assert "must say its version" in _error(document).message


@pytest.mark.parametrize("stamp, words", [
    (-1, "before 1970"),
    (-0.0, "before 1970"),
    (253402300800000, "after 9999-12-31"),
    (1.7e18, "nanoseconds"),
    (float("inf"), "not a finite number"),
    (float("nan"), "not a finite number"),
])
def test_timestamps_out_of_range_are_refused_with_their_path(stamp: float, words: str) -> None:
    error = _error(_doc(timestamp=stamp))
    assert error.pointer == "/messages/0/timestamp"
    assert words in error.message


def test_wrong_types_and_shapes_say_where() -> None:
    assert _error(_doc(timestamp="2024-01-01")).pointer == "/messages/0/timestamp"
    assert _error(_doc(role="robot")).pointer == "/messages/0/role"
    assert "expected a Prompt Envelope object" in _error([1, 2]).message


def test_tolerant_read_keeps_what_it_cannot_use_and_writes_it_back() -> None:
    document = _doc(timestamp=-5, role="robot", segments=[{"kind": "text", "content": "ok"},
                                                          {"kind": "hologram", "beam": 3},
                                                          {"kind": "memory", "items": []}])
    result = envelope.read(copy.deepcopy(document), strict=False)
    assert {p.pointer for p in result.problems} >= {"/messages/0/timestamp", "/messages/0/segments/1/kind",
                                                    "/messages/0/role"}
    contents = result.session.entries[0].items[0].items
    assert [type(c) for c in contents] == [TextContent, OpaqueContent, OpaqueContent]
    assert exact(envelope.write(result.session)) == exact(document)


def test_registry_detects_envelopes() -> None:
    assert registry.detect(gallery()) is envelope.FORMAT
    assert registry.get("envelope") is envelope.FORMAT


def test_writer_refuses_what_an_envelope_cannot_hold() -> None:
    from agentfolio.model import Message, ReasoningContent, Session, SessionData

    session = Session(data=SessionData(conversation_history=(RequestEntry(messages=(
        Message(role="assistant", message_id="a", created_at="2024-01-01T00:00:00Z",
                contents=(ReasoningContent(text="hmm"),)),)),)))
    with pytest.raises(FormatError, match="'reasoning' has no envelope segment"):
        envelope.write(session)
