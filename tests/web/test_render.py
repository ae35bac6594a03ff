"""The viewer's rules and renderer without a browser: kinds, folding, media, escaping."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient

from agentfolio.app.documents import identify
from agentfolio.formats import canonical, durable_state
from agentfolio.model import TextContent
from agentfolio.model.contents import Presentation
from agentfolio.present import rules
from agentfolio.samples import showcase as samples
from agentfolio.web import html
from agentfolio.web.app import create_web_app
from agentfolio.web.trace_files import PARENT_MISSING, build_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def showcase():
    return canonical.read(samples.showcase_session()).session


def test_every_content_gets_its_segment_kind():
    kinds = [rules.segment_kind(content) for _, message in showcase().messages() for content in message.items]
    assert kinds == ["system_prompt", "memory", "skills", "tool_overview", "text", "static_var", "document", "media",
                     "media", "media", "reasoning", "tool_call_request", "tool_call_request", "tool_call_result",
                     "tool_call_result", "text", "long_text", "error", "usage", "raw"]


def test_folding_follows_the_record_then_the_kind():
    assert rules.is_folded(TextContent(text="x" * (rules.LONG_TEXT_CHARS + 1)))
    assert not rules.is_folded(TextContent(text="short"))
    assert not rules.is_folded(TextContent(text="s", presentation=Presentation(style="system_prompt", collapsed=False)))
    assert rules.is_folded(TextContent(text="s", presentation=Presentation(collapsed=True)))


@pytest.mark.parametrize(("value", "expected"), [
    ({"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}, ("image", "https://x.test/a.png")),
    ({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
     ("image", "data:image/png;base64,AAAA")),
    ({"inlineData": {"mimeType": "audio/wav", "data": "UklG"}}, ("audio", "data:audio/wav;base64,UklG")),
    ({"type": "image", "mimeType": "image/jpeg", "data": "/9j/"}, ("image", "data:image/jpeg;base64,/9j/")),
    ({"result": ["see https://x.test/clip.mp4"]}, None),
    ({"nested": [{"deeper": "https://x.test/clip.mp4"}]}, ("video", "https://x.test/clip.mp4")),
    ({"mediaType": "image/png", "uri": "javascript:alert(1)"}, None),
    ("data:image/svg+xml;base64,PHN2Zz4=", None),
])
def test_media_is_found_whatever_shape_carries_it(value, expected):
    found = rules.find_media(value)
    assert ([(m.media, m.src) for m in found][:1] or [None])[0] == expected


def test_markdown_is_rendered_and_sanitized():
    out = str(html.render_markdown("**bold** <script>alert(1)</script> [x](javascript:alert(1)) <img src=x onerror=y>"))
    assert "<strong>bold</strong>" in out
    assert "<script" not in out and "<img" not in out and "href=\"javascript" not in out
    assert "&lt;script&gt;" in out  # shown as the text it is


def test_files_are_recognised_by_kind():
    def kind(document):
        return identify(document, name="f.json", size=1)

    assert kind(samples.showcase_session()).kind == "session"
    assert kind(samples.durable_session(4)).detected == "durable-state"
    assert kind(samples.span_export()).kind == "trace"
    assert kind(samples.span_export()["spans"]).kind == "trace"
    assert kind({"status": "success", "summaries": samples.span_export()["spans"]}).kind == "trace"
    assert kind(samples.schema_version()).kind == "schema_version"
    assert kind({"parts": [{"content_type": "text/plain", "content": "hi"}]}).kind == "body"
    assert kind({"parts": [{"content_type": "text/*", "required": True}]}).kind == "body_schema"
    refused = kind({"parts": [{"contentType": "text/plain"}]})
    assert refused.kind == "invalid" and refused.problems[0].pointer == "/parts"
    assert kind({"hello": 1}).kind == "invalid"
    assert kind(orjson.loads((FIXTURES / "envelope" / "gallery.json").read_bytes())).detected == "envelope"


def test_trace_tree_flags_unknown_parents_and_cycles():
    spans = [{"id": "a", "schema_name": "x", "status": "complete", "started_at": "2025-01-01T00:00:00Z",
              "finished_at": "2025-01-01T00:00:02Z"},
             {"id": "b", "parent_span_id": "a", "schema_name": "x", "status": "failed",
              "started_at": "2025-01-01T00:00:01Z", "finished_at": "2025-01-01T00:00:02Z"},
             {"id": "c", "parent_span_id": "zzz", "schema_name": "x", "status": "active"},
             {"id": "d", "parent_span_id": "e", "schema_name": "x", "status": "active"},
             {"id": "e", "parent_span_id": "d", "schema_name": "x", "status": "active"}]
    trace = build_trace(spans)
    by_id = {node.id: node for node in trace.nodes}
    assert [node.id for node in trace.nodes][:2] == ["a", "b"] and by_id["b"].depth == 1
    assert by_id["b"].bar_x == 500 and by_id["b"].bar_width == 500
    assert PARENT_MISSING in by_id["c"].flags
    assert "parent chain loops back on itself" in by_id["d"].flags
    assert len(trace.nodes) == 5


def test_export_is_self_contained_and_its_policy_names_its_own_script():
    document = html.export_html(showcase(), title="showcase")
    script = re.search(r"<script>(.*?)</script>", document, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in document
    assert 'src="/' not in document and 'href="/' not in document
    assert document.count("<script") == 1


def test_an_envelope_shows_every_segment_kind():
    client = TestClient(create_web_app())
    data = (FIXTURES / "envelope" / "gallery.json").read_bytes()
    page = client.post("/open", files={"file": ("gallery.json", data, "application/json")})
    assert page.status_code == 200
    kinds = set(re.findall(r'data-kind="([a-z_]+)"', page.text))
    assert {"text", "static_var", "system_prompt", "memory", "skills", "tool_overview", "tool_call_request",
            "tool_call_result", "document", "long_text", "media"} <= kinds
    assert 'class="seg seg-tool_call_request failed"' in page.text


def test_pages_refuse_foreign_redirects_after_sign_in():
    from agentfolio.web.app import _local

    assert _local("//evil.test/x", "") == "/"
    assert _local("https://evil.test", "") == "/"
    assert _local("/sessions?q=a", "") == "/sessions?q=a"


def test_remote_media_is_not_loaded_with_the_page():
    """Neither the policy nor the markup lets a record make the browser fetch from elsewhere:
    a remote image or clip is a link that opens on a click; the record's own data: media show."""
    from agentfolio.web.app import CSP

    policy = {part.split()[0]: part.split()[1:] for part in CSP.split("; ")}
    for directive in ("img-src", "media-src", "default-src", "connect-src"):
        sources = policy.get(directive, policy["default-src"])
        assert not any(source.rstrip(":") in ("http", "https", "*") or "//" in source for source in sources), (
            directive, sources)
    beacon = "https://author.example/pixel.png?reader=1"
    document = {"schemaVersion": "1.2.0", "data": {"conversationHistory": [{"$type": "response", "messages": [
        {"role": "assistant", "contents": [
            {"$type": "uri", "uri": beacon, "mediaType": "image/png", "altText": "remote"},
            {"$type": "uri", "uri": "https://author.example/clip.mp4", "mediaType": "video/mp4"},
            {"$type": "data", "uri": "data:image/png;base64,iVBORw0KGgo=", "mediaType": "image/png",
             "altText": "inline"}]}]}]}}
    client = TestClient(create_web_app())
    page = client.post("/open", files={"file": ("remote.json", json.dumps(document).encode(), "application/json")})
    assert page.status_code == 200
    srcs = re.findall(r'<(?:img|audio|video|source)[^>]*\ssrc="([^"]*)"', page.text)
    assert srcs == ["data:image/png;base64,iVBORw0KGgo="]
    assert f'href="{beacon.replace("&", "&amp;")}"' in page.text and 'rel="noopener noreferrer nofollow"' in page.text
    exported = html.export_html(durable_state.read(document, strict=False).session, title="remote")
    assert "https:" not in re.search(r'Content-Security-Policy" content="([^"]*)"', exported).group(1)
    assert not re.findall(r'<(?:img|audio|video)[^>]*\ssrc="https?:', exported)
