from __future__ import annotations

import base64

# Dev dependencies (installed by `make test`): a missing SDK is an error, not a skip.
import a2a.compat.v0_3.types as a2a_v03
import a2a.types as a2a_types
import acp_sdk.models as acp
import orjson
import pytest

from agentfolio.body import BodyError, MessageBody, MessageBodySchema, PartError
from agentfolio.body.examples import EXAMPLES, load_body, load_schema
from agentfolio.body.interop import (
    from_a2a,
    from_acp,
    to_a2a_parts,
    to_a2a_v03_parts,
    to_acp_message,
    to_acp_parts,
)


def same(a: MessageBody, b: MessageBody) -> None:
    """Equal as content: names, types, bytes (or URL), metadata; JSON compared parsed."""
    assert len(a) == len(b)
    for x, y in zip(a.parts, b.parts, strict=False):
        assert (x.name, x.content_type, x.content_url, x.metadata) == (
            y.name, y.content_type, y.content_url, y.metadata)
        if x.content_url is not None:
            continue
        if x.essence == "application/json":
            assert x.json() == y.json()
        else:
            assert x.data() == y.data()


# -- ACP ---------------------------------------------------------------------------


def test_acp_message_parts_are_a_body_as_they_stand() -> None:
    message = acp.Message(role="agent", parts=[
        acp.MessagePart(content="Here is the chart."),
        acp.MessagePart(content_type="image/png", content=base64.b64encode(b"\x89PNG").decode(),
                        content_encoding="base64"),
        acp.Artifact(name="/data/points.json", content_type="application/json", content='{"x": [1, 2]}'),
        acp.MessagePart(content_type="text/html", content_url="https://example.com/source",
                        metadata=acp.CitationMetadata(url="https://example.com/source", title="Source")),
    ])
    # The JSON form of ACP parts parses directly as our body format.
    dumped = orjson.loads(message.model_dump_json(include={"parts"}))
    direct = MessageBody.parse(dumped)
    body = from_acp(message)

    def without_nulls(b: MessageBody) -> list[dict]:
        return [{**p.to_dict(), "metadata": {k: v for k, v in (p.metadata or {}).items() if v is not None}}
                for p in b.parts]

    assert without_nulls(direct) == without_nulls(body)
    assert direct.parts[3].metadata["start_index"] is None  # the wire form's nulls are kept as given
    assert body.main_text() == "Here is the chart."
    assert body["/data/points.json"].json() == {"x": [1, 2]}
    assert body.parts[1].data() == b"\x89PNG"
    assert body.parts[3].metadata == {"kind": "citation", "url": "https://example.com/source", "title": "Source"}


@pytest.mark.parametrize("example", EXAMPLES)
def test_acp_round_trip_of_examples(example: str) -> None:
    body = load_body(example)
    message = to_acp_message(body)
    assert isinstance(message, acp.Message)
    assert all(isinstance(p, acp.MessagePart) for p in message.parts)
    assert from_acp(message) == body
    assert from_acp(to_acp_parts(body)) == body


def test_acp_refuses_metadata_it_cannot_hold() -> None:
    body = MessageBody.of([{"content": "x"}, {"content": "y", "metadata": {"colour": "blue"}}])
    with pytest.raises(PartError, match="part 1: cannot be written as an ACP part"):
        to_acp_parts(body)


def test_acp_part_with_invalid_name_is_reported_by_index() -> None:
    with pytest.raises(PartError, match=r"part 1: name: name 'report.md' must start with '/'"):
        from_acp([acp.MessagePart(content="a"), acp.Artifact(name="report.md", content="b")])


# -- A2A 1.x -----------------------------------------------------------------------


def test_a2a_v1_parts_read_back() -> None:
    from a2a.helpers.proto_helpers import new_data_part

    part_of = a2a_types.Part
    data_part = new_data_part({"score": 3, "tags": ["a"]})
    data_part.metadata.update({"step": 2})
    message = a2a_types.Message(message_id="m1", role=a2a_types.Role.ROLE_AGENT, parts=[
        part_of(text="Summary **here**", media_type="text/markdown"),
        part_of(raw=b"\x00\x01", media_type="image/png", filename="/img/chart.png"),
        part_of(url="https://example.com/paper.pdf", media_type="application/pdf", filename="paper.pdf"),
        data_part,
        part_of(text="plain"),
    ])
    body = from_a2a(message)
    assert [p.name for p in body.parts] == [None, "/img/chart.png", None, None, None]
    assert body.parts[0].content_type == "text/markdown"
    assert body["/img/chart.png"].data() == b"\x00\x01"
    assert body.parts[2].content_url == "https://example.com/paper.pdf"
    # A filename that is not a path stays out of the name, but is not lost.
    assert body.parts[2].metadata == {"a2a_filename": "paper.pdf"}
    assert body.parts[3].json() == {"score": 3, "tags": ["a"]}
    assert body.parts[3].metadata == {"step": 2}
    assert body.parts[4].content_type == "text/plain"
    # ... and writing back restores the filename and metadata.
    again = to_a2a_parts(body)
    assert again[2].filename == "paper.pdf" and not again[2].HasField("metadata")
    assert again[3].WhichOneof("content") == "data"
    same(from_a2a(again), body)


@pytest.mark.parametrize("example", EXAMPLES)
def test_a2a_v1_round_trip_of_examples(example: str) -> None:
    body = load_body(example)
    parts = to_a2a_parts(body)
    assert all(isinstance(p, a2a_types.Part) for p in parts)
    same(from_a2a(parts), body)
    # Still valid under the agent's own schema after the trip.
    assert load_schema(example).is_valid(from_a2a(parts))


def test_a2a_part_without_content_is_an_error() -> None:
    with pytest.raises(PartError, match="part 0: A2A part has no content"):
        from_a2a([a2a_types.Part(media_type="text/plain")])


# -- A2A 0.3 -----------------------------------------------------------------------


def test_a2a_v03_parts_read_back() -> None:
    parts = [
        a2a_v03.Part(root=a2a_v03.TextPart(text="hello")),
        a2a_v03.FilePart(file=a2a_v03.FileWithBytes(bytes=base64.b64encode(b"PK").decode(),
                                                    mime_type="application/zip", name="/dist/app.zip")),
        a2a_v03.Part(root=a2a_v03.FilePart(file=a2a_v03.FileWithUri(uri="https://x.org/a.png", mime_type="image/png"))),
        a2a_v03.DataPart(data={"ok": True}, metadata={"source": "tool"}),
    ]
    body = from_a2a(parts)
    assert body.main_text() == "hello"
    assert body["/dist/app.zip"].data() == b"PK"
    assert body.parts[2].content_url == "https://x.org/a.png"
    assert body.parts[3].json() == {"ok": True} and body.parts[3].metadata == {"source": "tool"}
    same(from_a2a(to_a2a_v03_parts(body)), body)


@pytest.mark.parametrize("example", EXAMPLES)
def test_a2a_v03_round_trip_of_examples(example: str) -> None:
    body = load_body(example)
    parts = to_a2a_v03_parts(body)
    assert all(isinstance(p, a2a_v03.Part) for p in parts)
    same(from_a2a(parts), body)


def test_unknown_objects_are_refused() -> None:
    with pytest.raises(BodyError, match="not an A2A part"):
        from_a2a([object()])


def test_schema_still_applies_after_interop() -> None:
    schema = MessageBodySchema.parse({"parts": [{"content_type": "text/plain", "required": True}]})
    assert schema.is_valid(from_a2a([a2a_types.Part(text="x")]))
    assert not schema.is_valid(from_a2a([a2a_types.Part(raw=b"x", media_type="image/png")]))


# -- One ACP rule for the CLI, MessageBody.parse, the message-body format and from_acp --

def _acp_shapes():
    from acp_sdk.models import Artifact
    from acp_sdk.models import Message as AcpMessage
    from acp_sdk.models import MessagePart as AcpPart

    return AcpPart, Artifact, AcpMessage


def test_a_part_with_an_extra_field_is_refused_by_every_door(tmp_path) -> None:
    import subprocess
    import sys

    from agentfolio.formats import message_body

    AcpPart, _, _ = _acp_shapes()
    part = AcpPart(content="x", extra_field=1)
    with pytest.raises(PartError, match="extra_field"):
        from_acp([part])
    document = {"parts": [orjson.loads(part.model_dump_json())]}
    with pytest.raises(PartError, match="extra_field"):
        MessageBody.parse(document)
    assert any("extra_field" in p.pointer + p.message for p in message_body.validate(document))
    path = tmp_path / "body.json"
    path.write_bytes(orjson.dumps(document))
    cli = subprocess.run([sys.executable, "-m", "agentfolio.cli", "body", "ls", str(path), "/**"],
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode != 0 and "extra_field" in cli.stdout + cli.stderr


def test_an_artifact_name_is_refused_alike_with_the_path_to_write() -> None:
    _, Artifact, _ = _acp_shapes()
    artifact = Artifact(name="report.md", content_type="text/markdown", content="# Report")
    for attempt in (lambda: from_acp([artifact]),
                    lambda: MessageBody.parse({"parts": [orjson.loads(artifact.model_dump_json())]})):
        with pytest.raises(PartError, match="write '/report.md'"):
            attempt()
    body = from_acp([Artifact(name="/report.md", content_type="text/markdown", content="# Report")])
    assert body["/report.md"].content == "# Report"


def test_a_whole_acp_message_as_the_sdk_writes_it_is_a_body() -> None:
    from agentfolio.formats import message_body

    AcpPart, _, AcpMessage = _acp_shapes()
    message = AcpMessage(role="agent", parts=[AcpPart(content="hi"), AcpPart(name="/a.json", content="{}",
                                                                             content_type="application/json")])
    document = orjson.loads(message.model_dump_json())
    assert MessageBody.parse(document) == from_acp(message)
    assert message_body.validate(document) == []
    read = message_body.read(document)
    written = message_body.write(read.session)
    assert {k: written[k] for k in ("role", "created_at", "completed_at")} == {
        k: document[k] for k in ("role", "created_at", "completed_at")}
    with pytest.raises(BodyError, match="unknown field"):
        MessageBody.parse({**document, "sender": "x"})
