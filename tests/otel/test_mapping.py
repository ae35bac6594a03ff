"""Where OTel spans go: span types, agents, sessions and derived row ids."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from agentfolio.otel.decode import OtelSpan
from agentfolio.otel.mapping import map_spans, registry_span_id, session_id_for, span_type
from agentfolio.registry import ids


def span(attributes: dict[str, object], *, name: str = "op", span_id: str = "01" * 8,
         parent: str | None = None) -> OtelSpan:
    return OtelSpan(trace_id="ab" * 16, span_id=span_id, parent_span_id=parent, name=name, kind="INTERNAL",
                    start_ns=10**18, end_ns=10**18 + 5, status_code="ERROR", status_message="", attributes=attributes,
                    events=[], links=[], resource={"attributes": {"service.name": "svc"}}, scope={})


def test_span_types_follow_the_genai_span_names() -> None:
    assert span_type(span({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"})) == "chat gpt-4o"
    assert span_type(span({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"})) == \
        "execute_tool search"
    assert span_type(span({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Joker"})) == \
        "invoke_agent Joker"
    assert span_type(span({"openinference.span.kind": "LLM", "llm.model_name": "m"})) == "llm m"
    assert span_type(span({"openinference.span.kind": "TOOL", "tool.name": "calc"})) == "tool calc"
    assert span_type(span({}, name="GET /")) == "GET /"
    assert len(span_type(span({}, name="x" * 1000))) == 255


def test_agents_come_from_the_span_or_its_ancestors_in_the_request() -> None:
    root = span({"gen_ai.agent.name": "Planner"}, span_id="01" * 8)
    child = span({}, span_id="02" * 8, parent="01" * 8)
    grandchild = span({}, span_id="03" * 8, parent="02" * 8)
    orphan = span({}, span_id="04" * 8, parent="09" * 8)
    mapped = map_spans([grandchild, orphan, child, root])
    assert [m.agent_hint for m in mapped] == ["Planner", None, "Planner", "Planner"]
    assert {m.service_name for m in mapped} == {"svc"}
    assert all(m.status == "failed" for m in mapped)


def test_session_ids_are_valid_for_any_conversation_id() -> None:
    assert session_id_for(span({"gen_ai.conversation.id": "conv-1"})) == "otel:conv-1"
    odd = session_id_for(span({"gen_ai.conversation.id": "a b/c\u00e9"}))
    assert odd.startswith("otel:conv:") and len(odd) == len("otel:conv:") + 40
    assert session_id_for(span({})) == "otel:trace:" + "ab" * 16


@given(st.integers(0, ids.MAX_PARTITION), st.integers(1, 2**40), st.text(min_size=1, max_size=40),
       st.text(min_size=1, max_size=20))
def test_derived_ids_are_registry_ids_with_the_documented_layout(partition: int, account: int, trace: str,
                                                                span_id: str) -> None:
    made = registry_span_id(partition, account, trace, span_id)
    number = int.from_bytes(hashlib.sha256(f"{account}:{trace}:{span_id}".encode()).digest()[:16], "big")
    assert made == ids.encode((number >> ids.RANDOM_BITS) % (1 << 43), partition, number & ids.MAX_RANDOM)
    assert ids.decode(made).partition == partition


@given(st.integers(0, ids.MAX_PARTITION), st.integers(1, 2**40), st.text(min_size=1, max_size=40),
       st.text(min_size=1, max_size=20), st.integers(0, ids.MAX_TIMESTAMP))
def test_ids_of_a_trace_with_an_epoch_carry_it_as_their_time(partition: int, account: int, trace: str, span_id: str,
                                                             epoch_ms: int) -> None:
    made = ids.decode(registry_span_id(partition, account, trace, span_id, epoch_ms))
    old = ids.decode(registry_span_id(partition, account, trace, span_id))
    assert (made.timestamp_ms, made.partition, made.randomness) == (epoch_ms, partition, old.randomness)
