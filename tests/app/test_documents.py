"""Documents not stored: one report for validity and conversion; losses point into the source."""

from __future__ import annotations

from pathlib import Path

import orjson

from agentfolio.app.documents import convert_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_losses_point_into_the_posted_envelope() -> None:
    envelope = orjson.loads((FIXTURES / "envelope" / "gallery.json").read_bytes())
    report = convert_report(envelope, to="durable-state").to_json()
    assert report["from"] == "envelope" and report["valid"] is True
    assert report["document"]["schemaVersion"]
    assert report["losses"], "an envelope's presentation cannot all survive durable state"
    assert all(loss["pointer"].startswith("/messages/") for loss in report["losses"])


def test_same_format_is_lossless() -> None:
    sample = Path(__file__).resolve().parents[2] / "agentfolio" / "samples" / "durable-agent-state.sample.json"
    document = orjson.loads(sample.read_bytes())
    report = convert_report(document, to="durable-state").to_json()
    assert report["losses"] == [] and report["document"] == document


def test_an_acp_message_opens_as_the_message_it_is_with_its_role() -> None:
    import orjson

    from agentfolio.app.documents import identify_bytes

    acp = {"role": "agent/researcher", "parts": [{"content_type": "text/plain", "content": "found it"}]}
    found = identify_bytes(orjson.dumps(acp), name="acp.json")
    assert found.kind == "session"
    [(_, message)] = list(found.result.session.messages())
    assert (message.role, message.author_name) == ("assistant", "researcher")
    assert found.problems == []  # a whole ACP Message is a valid body (docs/body.md, "ACP")


def test_an_array_of_parts_breaking_the_rules_opens_with_problems_at_each_part() -> None:
    import orjson

    from agentfolio.app.documents import identify_bytes

    parts = [{"content_type": "text/plain", "content": "one", "bogus": 1}, {"content_type": "text/plain",
                                                                            "content": "two"}]
    found = identify_bytes(orjson.dumps(parts), name="parts.json")
    assert found.kind == "session"
    assert [p.pointer for p in found.problems] == ["/0/bogus"]


def test_a_document_of_no_known_kind_keeps_its_json_to_show() -> None:
    from agentfolio.app.documents import identify_bytes

    found = identify_bytes(b'{"hello": [1, 2]}', name="x.json")
    assert found.kind == "invalid" and found.document == {"hello": [1, 2]}


def test_provider_transcripts_are_detected_and_converted_with_losses_into_them() -> None:
    for folder, name in (("anthropic", "anthropic"), ("openai_responses", "openai-responses"), ("gemini", "gemini"),
                         ("langchain", "langchain"), ("a2a", "a2a")):
        document = orjson.loads((FIXTURES / folder / "gallery.json").read_bytes())
        report = convert_report(document, to="openai-chat").to_json()
        assert report["from"] == name and report["valid"] is True
        assert report["losses"], f"{name}: something of it has no Chat Completions form"
        assert convert_report(document, to=name).to_json()["document"] == document
