"""The names ``agentfolio`` promises in ``__all__`` exist and do what their names say."""

from __future__ import annotations

from pathlib import Path

import agentfolio

SAMPLE = Path(__file__).resolve().parents[1] / "agentfolio" / "samples" / "durable-agent-state.sample.json"


def test_every_public_name_resolves() -> None:
    missing = [name for name in agentfolio.__all__ if getattr(agentfolio, name, None) is None]
    assert missing == []


def test_a_file_reads_validates_and_converts_through_the_top_level_api() -> None:
    report = agentfolio.validate_file(SAMPLE)
    assert report.valid and report.format == "durable-state"
    result = agentfolio.read_file(SAMPLE)
    assert isinstance(result.session, agentfolio.Session)
    assert isinstance(agentfolio.FORMATS["envelope"], agentfolio.Format)
    converted = agentfolio.convert(result.session, to="envelope", from_=result.format)
    assert agentfolio.FORMATS["envelope"].validate(converted.result) == []
