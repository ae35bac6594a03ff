"""What every format shares: a read checks the whole document at once and builds its records
on first use; a session read in a format writes back the document it was read from, and any
changed copy writes from its records."""

from __future__ import annotations

import copy
from pathlib import Path

import orjson
import pytest

from agentfolio.formats import registry
from agentfolio.formats.errors import InvalidDocumentError
from agentfolio.formats.losses import with_extras
from agentfolio.model import TextContent

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GALLERIES = {
    "anthropic": "anthropic/gallery.json",
    "openai-responses": "openai_responses/gallery.json",
    "gemini": "gemini/gallery.json",
    "langchain": "langchain/gallery.json",
    "a2a": "a2a/gallery.json",
}


def gallery(name: str) -> object:
    return orjson.loads((FIXTURES / GALLERIES[name]).read_bytes())


@pytest.mark.parametrize("name", GALLERIES)
def test_a_read_builds_its_records_on_first_use_and_writes_the_document_back(name: str) -> None:
    fmt = registry.get(name)
    document = gallery(name)
    result = fmt.read(document)
    assert not result.built and result.problems == []
    session = result.session
    assert result.built and result.session is session and result.origin is not None
    assert fmt.write(session) is document
    # The module's own writer writes from the records: the same JSON value.
    assert orjson.loads(orjson.dumps(fmt.write(session.model_copy(deep=True)))) == document


@pytest.mark.parametrize("name", GALLERIES)
def test_a_changed_copy_writes_its_records_not_the_document(name: str) -> None:
    fmt = registry.get(name)
    document = gallery(name)
    session = fmt.read(copy.deepcopy(document)).session
    assert session.data is not None
    entries = session.entries[:-1]
    shorter = session.model_copy(update={"data": session.data.model_copy(update={"conversation_history": entries})})
    assert shorter.document_read_as(name) is None
    assert fmt.write(shorter) != document
    marked = fmt.read(copy.deepcopy(document)).session
    with_extras(marked, {"x-agentfolio-test": True})
    assert marked.document_read_as(name) is None


def test_a_document_is_written_back_only_in_the_format_it_was_read_in() -> None:
    document = gallery("anthropic")
    session = registry.get("anthropic").read(document).session
    assert session.document_read_as("anthropic") is document
    assert session.document_read_as("gemini") is None
    for target in ("gemini", "durable-state"):
        converted = registry.get(target).lower(session).session
        written = registry.get(target).write(converted)
        assert written != document and registry.get(target).validate(written) == []


def test_a_tolerant_read_of_a_broken_document_builds_at_once() -> None:
    fmt = registry.get("durable-state")
    document = {"schemaVersion": "1.1.0", "data": {"conversationHistory": [
        {"$type": "request", "messages": [{"role": "user", "contents": [{"$type": "text", "text": 5}]}]}]}}
    with pytest.raises(InvalidDocumentError):
        fmt.read(copy.deepcopy(document))
    result = fmt.read(copy.deepcopy(document), strict=False)
    assert result.problems and result.built
    assert not isinstance(result.session.entries[0].items[0].items[0], TextContent)
