from __future__ import annotations

import contextlib

import pytest

from agentfolio.body import MessageBodySchema, PartRejected, SchemaValidationError, StreamValidator

SCHEMA = {
    "parts": [
        {"content_type": "text/markdown", "required": True},
        {"name": "/sources/*", "content_type": "text/html"},
        {"name": "/trace", "content_type": "application/json", "required": True},
    ]
}


def parts_stream(log: list[str], parts: list[dict]):
    for i, p in enumerate(parts):
        log.append(f"sent {i}")
        yield p


def test_rejects_the_first_offending_part_as_it_arrives() -> None:
    log: list[str] = []
    v = StreamValidator(SCHEMA)
    stream = parts_stream(log, [
        {"content_type": "text/markdown", "content": "# a"},
        {"name": "/sources/1", "content_type": "text/html"},
        {"name": "/sources/2", "content_type": "image/png"},
        {"name": "/never-read", "content_type": "text/html"},
    ])
    with pytest.raises(PartRejected) as exc:
        for part in stream:
            v.feed(part)
    # Part 3 was never pulled from the producer: we stopped at part 2.
    assert log == ["sent 0", "sent 1", "sent 2"]
    assert exc.value.issue.index == 2
    assert "part 2 ('/sources/2', image/png)" in str(exc.value)
    assert "'text/html'" in str(exc.value)


def test_required_parts_are_checked_on_close() -> None:
    v = StreamValidator(SCHEMA)
    v.feed({"name": "/trace", "content_type": "application/json", "content": "{}"})
    assert v.pending_required == [0]
    with pytest.raises(SchemaValidationError, match=r"required schema part #0 .*text/markdown"):
        v.close()


def test_valid_stream_closes_cleanly_and_counts() -> None:
    v = StreamValidator(MessageBodySchema.parse(SCHEMA))
    v.feed_all([
        {"name": "/trace", "content_type": "application/json", "content": "{}"},
        {"content_type": "text/markdown", "content": "# done"},
    ])
    report = v.close()
    assert report.ok and report.parts_checked == 2 and v.pending_required == []
    with pytest.raises(RuntimeError, match="closed"):
        v.feed({"content_type": "text/markdown"})


def test_duplicate_and_malformed_parts_are_rejected_immediately() -> None:
    v = StreamValidator(SCHEMA)
    v.feed({"name": "/sources/1", "content_type": "text/html"})
    with pytest.raises(PartRejected, match=r"part 1 .*already used by part 0"):
        v.feed({"name": "/sources/1", "content_type": "text/html"})
    with pytest.raises(PartRejected, match=r"part 2 .*'\.\.' segment"):
        v.feed({"name": "/sources/..", "content_type": "text/html"})
    # The caller may keep going; close reports everything seen.
    v.feed({"content_type": "text/markdown"})
    v.feed({"name": "/trace", "content_type": "application/json"})
    with pytest.raises(SchemaValidationError) as exc:
        v.close()
    assert [i.index for i in exc.value.report.issues] == [1, 2]
    assert exc.value.report.missing == ()


def test_stream_and_batch_agree() -> None:
    schema = MessageBodySchema.parse(SCHEMA)
    parts = [
        {"content_type": "text/markdown"},
        {"name": "/x", "content_type": "text/html"},
        {"name": "/sources/a", "content_type": "text/html"},
        {"content_type": "text/plain"},
    ]
    batch = schema.validate_body({"parts": parts})
    v = StreamValidator(schema)
    for p in parts:
        with contextlib.suppress(PartRejected):
            v.feed(p)
    stream = v.report()
    assert [i.index for i in stream.issues] == [i.index for i in batch.issues] == [1, 3]
    assert [m.schema_index for m in stream.missing] == [m.schema_index for m in batch.missing] == [2]
