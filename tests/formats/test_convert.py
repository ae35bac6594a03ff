from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agentfolio import _json
from agentfolio.formats import durable_state, envelope
from agentfolio.formats.convert import LossError, convert, summarize
from agentfolio.formats.jsonio import load_json_file
from agentfolio.formats.losses import ConvertOptions
from tests.envelope_strategies import apply_losses, differences, envelopes, points_into
from tests.strategies import contents, ids, json_values, text, timestamps, unknown_keys, with_unknowns

GALLERY = Path(__file__).resolve().parents[1] / "fixtures" / "envelope" / "gallery.json"


def durable_message(roles: list[str]) -> st.SearchStrategy[dict]:
    # At least one text, so a message rarely has nothing an envelope holds.
    body = st.tuples(st.lists(contents, max_size=3), st.fixed_dictionaries({"$type": st.just("text"), "text": text}),
                     st.integers(0, 3)).map(lambda p: [*p[0][:p[2]], p[1], *p[0][p[2]:]])
    return with_unknowns(st.fixed_dictionaries(
        {"role": st.sampled_from(roles), "contents": body},
        optional={"authorName": text, "createdAt": timestamps, "messageId": ids,
                  "extensionData": st.dictionaries(unknown_keys, json_values, max_size=2)}))


_common = {"correlationId": ids, "createdAt": timestamps}
requests = with_unknowns(st.fixed_dictionaries(
    {"$type": st.just("request"), "messages": st.lists(durable_message(["user", "system", "developer"]),
                                                       min_size=1, max_size=3)},
    optional={**_common, "responseType": st.sampled_from(["text", "json"]), "orchestrationId": ids}))
responses = with_unknowns(st.fixed_dictionaries(
    {"$type": st.sampled_from(["response", "errorResponse", "compaction"]),
     "messages": st.lists(durable_message(["assistant", "tool", "agent"]), min_size=1, max_size=3)},
    optional={**_common, "usage": st.fixed_dictionaries({}, optional={"inputTokenCount": st.integers(0, 99)})}))
# Turns as agents record them: a request, then what came back.
histories = st.lists(st.tuples(requests, responses), min_size=1, max_size=3).map(lambda turns: [e for t in turns for e in t])
durable_states = with_unknowns(st.fixed_dictionaries({
    "schemaVersion": st.sampled_from(["1.0.0", "1.1.0", "1.2.0"]),
    "data": with_unknowns(st.fixed_dictionaries({"conversationHistory": histories})),
}))


def exact(value: object) -> bytes:
    return _json.dumps(value, option=orjson.OPT_SORT_KEYS)


def check_report(original: dict, back: dict, losses: list) -> None:
    """What came back differs from the original in exactly what the report lists."""
    for loss in losses:
        assert points_into(original, loss.pointer), f"loss points nowhere: {loss}"
        assert loss.pointer not in ("", "/data", "/data/conversationHistory", "/messages"), f"too broad: {loss}"
    assert differences(apply_losses(original, losses), back) == []


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(durable_states)
def test_durable_to_envelope_and_back_differs_only_where_the_report_says(document: dict) -> None:
    original = copy.deepcopy(document)
    there = convert(document, to="envelope", strict_read=False)
    assert envelope.validate(there.result) == []
    assume(not any(loss.what == "entry boundaries" for loss in there.losses))
    back = convert(there.result, to="durable-state")
    check_report(original, without_made_up_stamps(original, back), there.losses)


def without_made_up_stamps(original: dict, back: Any) -> dict:
    """The durable state that came back, less the entry times and correlation ids its
    lowering made up where the original had none (each one reported by that lowering)."""
    result = copy.deepcopy(back.result)
    made_up = {loss.what.split()[-1] for loss in back.losses if loss.approximated}
    for entry, was in zip(result["data"]["conversationHistory"], original["data"]["conversationHistory"], strict=False):
        for key in ("createdAt", "correlationId"):
            if key not in was and key in entry:
                assert key in made_up, f"{key} made up without a report"
                del entry[key]
    return result


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(envelopes)
def test_envelope_to_durable_and_back_differs_only_where_the_report_says(document: dict) -> None:
    original = copy.deepcopy(document)
    there = convert(document, to="durable-state")
    assert durable_state.read(there.result, strict=True).problems == []
    back = convert(there.result, to="envelope")
    # What durable state kept, the envelope holds again, bar durable state's own version,
    # the call ids it had to generate, and the entry times and ids it had to make up.
    assert {loss.what for loss in back.losses} <= {"schemaVersion", "callId", "createdAt", "correlationId"}
    check_report(original, back.result, there.losses)


def test_the_report_is_not_vacuous() -> None:
    """The oracle catches a loss left out of the report."""
    document = load_json_file(Path(__file__).resolve().parents[2] / "agentfolio" / "samples"
                              / "durable-agent-state.sample.json")
    there = convert(copy.deepcopy(document), to="envelope")
    back = convert(there.result, to="durable-state").result
    check_report(document, back, there.losses)
    for index in range(len(there.losses)):
        partial = there.losses[:index] + there.losses[index + 1:]
        if differences(apply_losses(document, partial), back):
            break
    else:
        pytest.fail("removing any single loss from the report went unnoticed")
    missing_one = [loss for loss in there.losses if loss.what != "authorName"]
    assert any("authorName" in d for d in differences(apply_losses(document, missing_one), back))


def test_sample_losses_name_fields_and_reasons() -> None:
    document = load_json_file(Path(__file__).resolve().parents[2] / "agentfolio" / "samples"
                              / "durable-agent-state.sample.json")
    conversion = convert(document, to="envelope")
    by_pointer = {loss.pointer: loss for loss in conversion.losses}
    usage = by_pointer["/data/conversationHistory/1/usage"]
    assert not usage.approximated and "no entries" in usage.why
    call_id = by_pointer["/data/conversationHistory/1/messages/0/contents/0/callId"]
    assert "paired" in call_id.why
    stamp = by_pointer["/data/conversationHistory/1/messages/1/createdAt"]
    assert stamp.approximated and "epoch milliseconds" in stamp.why
    assert any(line.startswith("dropped correlationId ×4") for line in summarize(conversion.losses))


def test_envelope_to_durable_lowers_envelope_only_kinds_to_text() -> None:
    conversion = convert(load_json_file(GALLERY), to="durable-state")
    messages = [m for e in conversion.result["data"]["conversationHistory"] for m in e["messages"]]
    system = messages[0]["contents"]
    assert [c["$type"] for c in system] == ["text"] * 5
    assert system[1]["text"] == "Paris"
    assert system[2]["text"].startswith("Memory: Recalled from earlier sessions\n- Prefers trains:")
    assert "- get_weather(city: string): Current weather for a city" in system[4]["text"]
    document = messages[1]["contents"][1]
    assert document["text"].startswith("[document itinerary.pdf (application/pdf, 48,213 bytes)]")
    call, result = messages[2]["contents"][0], messages[3]["contents"][0]
    assert result["callId"] == call["callId"] and result["success"] is True
    losses = {(loss.pointer, loss.what) for loss in conversion.losses}
    assert ("/messages/0/segments/0/collapsed", "presentation collapsed") in losses
    assert ("/messages/0/segments/0/kind", "presentation style") in losses
    assert ("/messages/0/segments/2", "memory") in losses
    assert ("/messages/1/segments/3/charCount", "presentation charCount") in losses
    assert conversion.result["model"] == "gpt-4o-2024-08-06"  # an unknown property, kept
    assert durable_state.read(conversion.result).problems == []


def test_text_over_the_threshold_becomes_long_text_with_its_count() -> None:
    document = {"schemaVersion": "1.1.0", "data": {"conversationHistory": [{"$type": "request", "messages": [
        {"role": "user", "createdAt": "2025-01-01T00:00:00.000Z", "messageId": "m",
         "contents": [{"$type": "text", "text": "x" * 50}, {"$type": "text", "text": "short"}]}]}]}}
    result = convert(document, to="envelope", options=ConvertOptions(long_text_chars=10)).result
    long_text, short = result["messages"][0]["segments"]
    assert long_text == {"kind": "long_text", "content": "x" * 50, "charCount": 50, "collapsed": True}
    assert short == {"kind": "text", "content": "short"}


def test_media_and_files_map_to_media_and_documents() -> None:
    document = {"schemaVersion": "1.1.0", "data": {"conversationHistory": [{"$type": "request", "messages": [
        {"role": "user", "createdAt": "2025-01-01T00:00:00.000Z", "messageId": "m", "contents": [
            {"$type": "uri", "uri": "https://x/cat.png", "mediaType": "image/png"},
            {"$type": "data", "uri": "data:audio/wav;base64,UklGRg==", "mediaType": "audio/wav"},
            {"$type": "uri", "uri": "https://x/report.pdf", "mediaType": "application/pdf"},
            {"$type": "data", "uri": "data:text/plain;base64,aGVsbG8=", "mediaType": "text/plain"}]}]}]}}
    conversion = convert(document, to="envelope")
    image, audio, pdf, note = conversion.result["messages"][0]["segments"]
    assert image == {"kind": "media", "mediaType": "image", "url": "https://x/cat.png"}
    assert audio == {"kind": "media", "mediaType": "audio", "url": "data:audio/wav;base64,UklGRg=="}
    assert pdf["kind"] == "document" and pdf["fileName"] == "report.pdf" and pdf["sizeBytes"] == 0
    assert note["parsedContent"] == "hello" and note["sizeBytes"] == 5
    approximated = {loss.pointer: loss.what for loss in conversion.losses if loss.approximated}
    base = "/data/conversationHistory/0/messages/0/contents"
    assert approximated[f"{base}/0/mediaType"] == "mediaType"  # image/png reads back as image/*
    assert f"{base}/1/mediaType" not in approximated  # a data URL keeps its own type
    assert f"{base}/2" in approximated and f"{base}/3" in approximated


def test_strict_conversion_fails_when_anything_would_be_lost() -> None:
    document = load_json_file(GALLERY)
    with pytest.raises(LossError) as caught:
        convert(document, to="durable-state", options=ConvertOptions(strict=True))
    assert caught.value.losses and caught.value.pointer == caught.value.losses[0].pointer
    assert "would lose" in caught.value.message
    # Nothing to lose: a strict conversion goes through.
    plain = {"version": "1.0", "messages": [{"id": "a", "role": "user", "timestamp": 5,
                                             "segments": [{"kind": "text", "content": "hi"}]}]}
    assert convert(plain, to="canonical", options=ConvertOptions(strict=True)).losses == []
    # Durable state needs what an envelope has not (an entry's correlation id): made up,
    # so a strict conversion refuses.
    with pytest.raises(LossError) as caught:
        convert(plain, to="durable-state", options=ConvertOptions(strict=True))
    assert {loss.what for loss in caught.value.losses} == {"entry createdAt", "entry correlationId"}


def test_converting_to_the_same_format_is_its_reader_and_writer() -> None:
    document = load_json_file(GALLERY)
    conversion = convert(copy.deepcopy(document), to="envelope")
    assert conversion.losses == [] and exact(conversion.result) == exact(document)


def test_unknown_properties_named_like_target_fields_are_dropped_and_reported() -> None:
    document = {"schemaVersion": "1.1.0", "data": {"conversationHistory": [{"$type": "request", "messages": [
        {"role": "user", "createdAt": "2025-01-01T00:00:00.000Z", "messageId": "m", "segments": "mine",
         "contents": [{"$type": "text", "text": "t", "content": "clash", "xKeep": 1}]}]}]}}
    conversion = convert(document, to="envelope")
    message = conversion.result["messages"][0]
    assert message["segments"] == [{"kind": "text", "content": "t", "xKeep": 1}]
    dropped = {loss.pointer for loss in conversion.losses if not loss.approximated}
    base = "/data/conversationHistory/0/messages/0"
    assert {f"{base}/segments", f"{base}/contents/0/content"} <= dropped


def test_regrouped_entries_are_reported_and_messages_kept_in_order() -> None:
    document = {"schemaVersion": "1.1.0", "data": {"conversationHistory": [
        {"$type": "request", "messages": [{"role": "user", "contents": [{"$type": "text", "text": "a"}]}]},
        {"$type": "request", "messages": [{"role": "user", "contents": [{"$type": "text", "text": "b"}]}]},
        {"$type": "response", "messages": [{"role": "assistant", "contents": [{"$type": "text", "text": "c"}]},
                                           {"role": "user", "contents": [{"$type": "text", "text": "d"}]}]}]}}
    conversion = convert(document, to="envelope")
    boundaries = [loss.pointer for loss in conversion.losses if loss.what == "entry boundaries"]
    assert boundaries == ["/data/conversationHistory/0", "/data/conversationHistory/1",
                          "/data/conversationHistory/2"]
    back = convert(conversion.result, to="durable-state").result["data"]["conversationHistory"]
    assert [[m["contents"][0]["text"] for m in e["messages"]] for e in back] == [["a", "b"], ["c"], ["d"]]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(durable_states, envelopes))
def test_every_writer_output_passes_its_own_validator(document: dict) -> None:
    from agentfolio.formats import registry
    from agentfolio.formats.errors import FormatError

    for target in registry.names():
        if registry.detect(document).name == target:
            continue  # written back as read, identity first (a messy source stays as messy)
        try:
            conversion = convert(copy.deepcopy(document), to=target, strict_read=False)
        except FormatError:  # a clear refusal (nothing an envelope can hold), never a bad document
            continue
        assert registry.get(target).validate(conversion.result) == [], target
