"""Documents the viewer is shown with: every segment kind, a trace, a schema version.

Used by the browser tests, the benchmark and the demo.  Media are tiny ``data:`` URIs
made here, so nothing is fetched from the network.
"""

from __future__ import annotations

import base64
import io
import struct
import wave
import zlib
from typing import Any


def tiny_png(width: int = 160, height: int = 90, rgb: tuple[int, int, int] = (43, 87, 151)) -> str:
    """A small solid PNG as a data URI."""
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return "data:image/png;base64," + base64.b64encode(png).decode()


def tiny_wav() -> str:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(1)
        out.setframerate(8000)
        out.writeframes(b"\x80" * 800)
    return "data:audio/wav;base64," + base64.b64encode(buffer.getvalue()).decode()


TINY_VIDEO = "data:video/mp4;base64,AAAAHGZ0eXBpc29tAAACAGlzb21pc28ybXA0MQ=="

SYSTEM_PROMPT = ("You are **Atlas**, a travel assistant.\n\nRules:\n1. Be brief.\n2. Use the tools.\n\n"
                 + "Background: " + "Atlas helps people plan trips. " * 20)
LONG_TEXT = "Itinerary draft\n\n" + "\n".join(f"Day {day}: museum, lunch, walk by the river." for day in range(1, 120))


def showcase_session() -> dict[str, Any]:
    """A session in agentfolio's canonical JSON with every kind the viewer presents."""
    image = tiny_png()
    history = [
        {"$type": "request", "createdAt": "2025-11-04T19:33:10.100+00:00", "correlationId": "corr-0001",
         "messages": [
             {"role": "system", "createdAt": "2025-11-04T19:33:10.100+00:00", "contents": [
                 {"$type": "text", "text": SYSTEM_PROMPT,
                  "presentation": {"style": "system_prompt", "collapsed": True}},
                 {"$type": "memory", "description": "What Atlas remembers about the user",
                  "items": [{"title": "Home city", "content": "Lives in Lyon."},
                            {"title": "Diet", "content": "Vegetarian."}],
                  "presentation": {"collapsed": True}},
                 {"$type": "skills", "description": "Skills loaded for this run",
                  "items": [{"name": "book_train", "description": "Books SNCF trains"},
                            {"name": "weather", "description": "Looks up forecasts"}]},
                 {"$type": "toolCatalog", "items": [
                     {"name": "get_weather", "description": "Forecast for a city and a date",
                      "parameters": "city: string, date: string (YYYY-MM-DD)",
                      "schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
                     {"name": "search_trains", "description": "Trains between two cities",
                      "parameters": "from: string, to: string"},
                     {"name": "book_hotel", "description": "Books a hotel room", "parameters": "city, nights"}]},
             ]},
             {"role": "user", "authorName": "Camille", "createdAt": "2025-11-04T19:33:11.000+00:00", "contents": [
                 {"$type": "text", "text": "Plan a **weekend in Paris** for me:\n\n- museums\n- good food"},
                 {"$type": "templateVariable", "name": "travel_dates", "value": "2025-11-15 to 2025-11-16",
                  "description": "Dates the user picked in the form"},
                 {"$type": "document", "fileName": "itinerary.pdf", "mediaType": "application/pdf",
                  "snippet": "Saturday: Louvre at 9:00; Sunday: Musée d'Orsay.", "sizeBytes": 48213,
                  "parsedContent": "Saturday: Louvre at 9:00.\nSunday: Musée d'Orsay at 10:00."},
                 {"$type": "data", "uri": image, "mediaType": "image/png", "altText": "A photo of the Seine"},
                 {"$type": "uri", "uri": tiny_wav(), "mediaType": "audio/wav", "altText": "Voice note"},
                 {"$type": "uri", "uri": TINY_VIDEO, "mediaType": "video/mp4", "altText": "Street clip"},
             ]},
         ]},
        {"$type": "response", "createdAt": "2025-11-04T19:33:14.000+00:00", "correlationId": "corr-0001",
         "usage": {"inputTokenCount": 1200, "outputTokenCount": 85, "totalTokenCount": 1285},
         "messages": [
             {"role": "assistant", "authorName": "Atlas", "createdAt": "2025-11-04T19:33:13.000+00:00", "contents": [
                 {"$type": "reasoning", "text": "The user wants museums. Check the weather first, then trains."},
                 {"$type": "functionCall", "callId": "call-weather-1", "name": "get_weather",
                  "arguments": {"city": "Paris", "date": "2025-11-15"}},
                 {"$type": "functionCall", "callId": "call-trains-1", "name": "search_trains",
                  "arguments": {"from": "Lyon", "to": "Paris"}},
             ]},
             {"role": "tool", "createdAt": "2025-11-04T19:33:13.500+00:00", "contents": [
                 {"$type": "functionResult", "callId": "call-weather-1",
                  "result": {"forecast": "light rain", "high_c": 11,
                             "radar": {"type": "image", "mimeType": "image/png", "data": image.split(",", 1)[1]}}},
                 {"$type": "functionResult", "callId": "call-trains-1",
                  "result": {"error": "upstream timeout", "status": 504}, "exception": "TimeoutError"},
             ]},
         ]},
        {"$type": "response", "createdAt": "2025-11-04T19:33:20.000+00:00",
         "usage": {"inputTokenCount": 1500, "outputTokenCount": 240, "totalTokenCount": 1740},
         "messages": [
             {"role": "assistant", "authorName": "Atlas", "createdAt": "2025-11-04T19:33:19.000+00:00", "contents": [
                 {"$type": "text",
                  "text": "Here is a plan:\n\n| Day | Plan |\n|---|---|\n| Sat | Louvre |\n| Sun | Orsay |"},
                 {"$type": "text", "text": LONG_TEXT},
                 {"$type": "error", "message": "Hotel search is unavailable", "errorCode": "E_HOTEL"},
                 {"$type": "usage", "usage": {"inputTokenCount": 10, "outputTokenCount": 2, "totalTokenCount": 12}},
                 {"$type": "hologram", "frequency": 42, "note": "a content kind this viewer does not know"},
             ]},
         ]},
        {"$type": "checkpoint", "createdAt": "2025-11-04T19:33:21.000+00:00", "snapshot": {"step": 3}},
    ]
    return {"agentfolio": "1", "session": {"schemaVersion": "1.2.0", "data": {"conversationHistory": history}}}


def durable_session(messages: int = 40, *, seed: int = 0) -> dict[str, Any]:
    """A durable state with ``messages`` messages (request/response pairs, tool calls)."""
    history: list[dict[str, Any]] = []
    for index in range(0, messages, 2):
        minute, second = divmod(index, 60)
        stamp = f"2025-11-04T{10 + (minute // 60) % 12:02d}:{minute % 60:02d}:{second:02d}.000+00:00"
        call_id = f"call-{seed}-{index}"
        history.append({"$type": "request", "createdAt": stamp, "correlationId": f"c{index}", "messages": [
            {"role": "user", "createdAt": stamp, "contents": [
                {"$type": "text", "text": f"Question {index}: what is the weather in city {index % 17}?"}]}]})
        history.append({"$type": "response", "createdAt": stamp, "correlationId": f"c{index}",
                        "usage": {"inputTokenCount": 100 + index, "outputTokenCount": 20,
                                  "totalTokenCount": 120 + index},
                        "messages": [{"role": "assistant", "createdAt": stamp, "contents": [
                            {"$type": "functionCall", "callId": call_id, "name": "get_weather",
                             "arguments": {"city": f"city {index % 17}"}},
                            {"$type": "functionResult", "callId": call_id, "result": {"forecast": "sunny"}},
                            {"$type": "text", "text": f"Answer {index}: it is **sunny** in city {index % 17}."}]}]})
    return {"schemaVersion": "1.1.0", "data": {"conversationHistory": history}}


def timed_session(turns: int = 8, *, seed: int = 0, day: int = 0, failures: float = 0.2) -> dict[str, Any]:
    """A durable state whose turns take time: each answer comes some seconds after its
    request, each tool result after its call (messages carry their own times), some tool
    calls fail and some turns end in an error; ``day`` moves the whole session on by days."""
    import random
    from datetime import UTC, datetime, timedelta

    chooser = random.Random(seed)
    moment = datetime(2025, 11, 1, 9, tzinfo=UTC) + timedelta(days=day, minutes=chooser.randrange(600))
    history: list[dict[str, Any]] = []

    def stamp() -> str:
        return moment.isoformat(timespec="milliseconds")

    for turn in range(turns):
        city = chooser.choice(["Lyon", "Paris", "Nice", "Lille", "Brest"])
        asked = stamp()
        history.append({"$type": "request", "createdAt": asked, "correlationId": f"t{seed}-{turn}", "messages": [
            {"role": "user", "createdAt": asked, "contents": [
                {"$type": "text", "text": f"Turn {turn}: what should I pack for {city}?"}]}]})
        moment += timedelta(milliseconds=chooser.randrange(300, 1500))
        called = stamp()
        moment += timedelta(milliseconds=chooser.randrange(80, 2500))
        answered_tool = stamp()
        failed = chooser.random() < failures
        result: Any = {"error": "forecast service timed out"} if failed else {"forecast": "rain", "high": 14}
        moment += timedelta(milliseconds=chooser.randrange(400, 4000))
        answered = stamp()
        call_id = f"call-{seed}-{turn}"
        if chooser.random() < failures / 2:
            history.append({"$type": "errorResponse", "createdAt": answered, "correlationId": f"t{seed}-{turn}",
                            "messages": [{"role": "assistant", "createdAt": answered, "contents": [
                                {"$type": "error", "message": "The model provider answered 529: overloaded",
                                 "errorCode": "overloaded"}]}]})
        else:
            history.append({"$type": "response", "createdAt": answered, "correlationId": f"t{seed}-{turn}",
                            "usage": {"inputTokenCount": 400 + 37 * turn + chooser.randrange(200),
                                      "outputTokenCount": 40 + chooser.randrange(160)},
                            "messages": [
                                {"role": "assistant", "createdAt": called, "contents": [
                                    {"$type": "functionCall", "callId": call_id, "name": "get_forecast",
                                     "arguments": {"city": city}}]},
                                {"role": "tool", "createdAt": answered_tool, "contents": [
                                    {"$type": "functionResult", "callId": call_id, "result": result}]},
                                {"role": "assistant", "createdAt": answered, "contents": [
                                    {"$type": "text", "text": f"For {city}: pack a raincoat."}]}]})
        moment += timedelta(seconds=chooser.randrange(5, 90))
    return {"schemaVersion": "1.2.0", "data": {"conversationHistory": history}}


def schema_version() -> dict[str, Any]:
    """A schema version create request: span types with templates and data risk."""
    return {
        "id": None, "external_identifier": "travel-v3",
        "span_type_schemas": [
            {"name": "agent:llm", "title": "LLM call", "template": "{{model}}: {{prompt | truncate: 40}}",
             "params_schema": {"type": "object", "required": ["model", "prompt"],
                               "properties": {"model": {"type": "string"}, "prompt": {"type": "string"}}},
             "result_schema": {"type": "object", "properties": {"response": {"type": "string"}}},
             "data_risk": {"action_profile": {"read_data": "allowed"},
                           "params_data_categories": {"personal_identifiers": "included",
                                                      "classification": "confidential"}}},
            {"name": "agent:tool", "title": "Tool call", "template": "{{tool}}({{args.city}})",
             "params_schema": {"type": "object", "required": ["tool"], "properties": {"tool": {"type": "string"}}},
             "data_risk": {"action_profile": {"external_communication": "allowed"},
                           "result_data_categories": {"financial_information": "included"}}},
            {"name": "agent:cleanup", "title": "Clean-up", "params_schema": {"type": "object"},
             "data_risk": {"action_profile": {"destroy_data": "allowed"}}},
            {"name": "agent:note", "params_schema": {"type": "object"}},
        ],
    }


def span_export() -> dict[str, Any]:
    """An agent instance's spans with its schema version (one span breaks its schema)."""
    base = "2025-11-04T19:33:"

    def span(span_id: str, parent: str | None, name: str, start: str, end: str | None, status: str,
             payload: dict[str, Any], result: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"type": "agent_span", "id": span_id, "agent_instance_id": "inst-1", "parent_span_id": parent,
                "schema_name": name, "status": status, "payload": payload, "result_payload": result,
                "started_at": base + start, "finished_at": base + end if end else None}

    return {
        "agent_instance": {"id": "inst-1", "status": "complete", "agent_id": "agent-atlas"},
        "schema_version": schema_version(),
        "spans": [
            span("s1", None, "agent:llm", "10.000Z", "14.000Z", "complete",
                 {"model": "gpt-x", "prompt": "Plan a weekend in Paris with museums and good food"},
                 {"response": "Checking the weather"}),
            span("s2", "s1", "agent:tool", "11.000Z", "12.500Z", "complete",
                 {"tool": "get_weather", "args": {"city": "Paris"}}, {"forecast": "rain"}),
            span("s3", "s1", "agent:tool", "12.600Z", "13.900Z", "failed",
                 {"tool": "search_trains", "args": {"city": "Lyon"}}, {"error": "timeout"}),
            span("s4", None, "agent:llm", "15.000Z", "16.000Z", "complete", {"model": 42}),
            span("s5", "nope", "agent:note", "16.100Z", None, "active", {"text": "orphan"}),
        ],
    }
