"""Where an OTel span goes in the agent registry: its agent, its trace (an agent
instance), its span type, its status, and the payload stored for it.

* **Agent**: ``gen_ai.agent.name`` (else ``gen_ai.agent.id``) on the span, else on its
  nearest ancestor in the same request, else its stored parent's, else the resource's
  ``service.name`` (a span filed under its service moves to the agent's trace when the
  span naming the agent arrives).  Agent Framework gives every agent
  object a fresh random id, so the name is the identifier that survives restarts.
* **Span type** (``schema_name``): the operation and its target, as the GenAI span-name
  convention spells them (``chat gpt-4o``, ``execute_tool get_weather``,
  ``invoke_agent Joker``); OpenInference's ``openinference.span.kind`` lower-cased when
  there is no GenAI operation (``llm gpt-4o``, ``tool search``); else the span's name.
* **Ids**: a registry span id is derived from (account, trace id, span id) and the
  moment its trace was first seen, so a re-sent span lands on the row it already has, a
  child names its parent's row before the parent arrives, and ids sort by time.
* **Payload**: the whole span (:meth:`OtelSpan.to_json`); nothing dropped.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agentfolio.otel.decode import OtelSpan
from agentfolio.registry import ids

MAX_NAME_CHARS = 255
UNKNOWN_SERVICE = "unknown_service"

#: GenAI operations whose span carries model messages.
LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion"})
#: OpenInference span kinds (``openinference.span.kind``).
OPENINFERENCE_KINDS = frozenset({"LLM", "EMBEDDING", "CHAIN", "RETRIEVER", "RERANKER", "TOOL", "AGENT",
                                 "GUARDRAIL", "EVALUATOR", "PROMPT"})
_SESSION_SAFE = re.compile(r"[A-Za-z0-9@][A-Za-z0-9._:@-]{0,199}")


@dataclass(slots=True)  # not frozen: see OtelSpan
class MappedSpan:
    span: OtelSpan
    #: The agent the span names itself or through an ancestor in its request (None: decide from the store).
    agent_hint: str | None
    #: ``service.name`` of the span's resource: the agent when nothing names one.
    service_name: str
    schema_name: str
    status: str
    started_us: int
    finished_us: int | None
    #: The agentfolio session its messages belong to.
    session_id: str
    is_llm: bool

    @property
    def trace_id(self) -> str:
        return self.span.trace_id


def map_spans(spans: Iterable[OtelSpan]) -> list[MappedSpan]:
    spans = list(spans)
    by_id = {(span.trace_id, span.span_id): span for span in spans}
    return [_map(span, _agent_hint(span, by_id)) for span in spans]


def _map(span: OtelSpan, agent_hint: str | None) -> MappedSpan:
    service = span.resource.get("attributes", {}).get("service.name")
    service_name = _clip(service if isinstance(service, str) and service.strip() else UNKNOWN_SERVICE)
    status = "failed" if span.status_code == "ERROR" else ("complete" if span.finished else "active")
    return MappedSpan(span=span, agent_hint=agent_hint, service_name=service_name, schema_name=span_type(span),
                      status=status, started_us=span.start_ns // 1000,
                      finished_us=span.end_ns // 1000 if span.finished else None,
                      session_id=session_id_for(span), is_llm=is_llm_span(span))


def own_agent(span: OtelSpan) -> str | None:
    for key in ("gen_ai.agent.name", "gen_ai.agent.id"):
        value = span.attributes.get(key)
        if isinstance(value, str) and value.strip():
            return _clip(value.strip())
    return None


def _agent_hint(span: OtelSpan, by_id: dict[tuple[str, str], OtelSpan]) -> str | None:
    current: OtelSpan | None = span
    seen = 0
    while current is not None and seen < 1000:  # a parent cycle in bad input must not loop forever
        found = own_agent(current)
        if found:
            return found
        if current.parent_span_id is None:
            return None
        current = by_id.get((current.trace_id, current.parent_span_id))
        seen += 1
    return None


def operation(span: OtelSpan) -> str | None:
    value = span.attributes.get("gen_ai.operation.name")
    return value.strip() if isinstance(value, str) and value.strip() else None


def openinference_kind(span: OtelSpan) -> str | None:
    value = span.attributes.get("openinference.span.kind")
    return value.upper() if isinstance(value, str) and value.upper() in OPENINFERENCE_KINDS else None


def span_type(span: OtelSpan) -> str:
    attrs = span.attributes
    op = operation(span)
    if op is not None:
        if op == "execute_tool":
            target = attrs.get("gen_ai.tool.name")
        elif op in ("invoke_agent", "create_agent"):
            target = attrs.get("gen_ai.agent.name") or attrs.get("gen_ai.agent.id")
        elif op == "invoke_workflow":
            target = attrs.get("gen_ai.workflow.name")
        else:
            target = attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model")
        return _clip(f"{op} {target}" if isinstance(target, str) and target else op)
    kind = openinference_kind(span)
    if kind is not None:
        target = {"LLM": attrs.get("llm.model_name"), "EMBEDDING": attrs.get("embedding.model_name"),
                  "TOOL": attrs.get("tool.name")}.get(kind)
        return _clip(f"{kind.lower()} {target}" if isinstance(target, str) and target else kind.lower())
    return _clip(span.name or "span")


def is_llm_span(span: OtelSpan) -> bool:
    op = operation(span)
    if op in LLM_OPERATIONS or openinference_kind(span) == "LLM":
        return True
    attrs = span.attributes
    return any(key in attrs for key in ("gen_ai.input.messages", "gen_ai.output.messages",
                                        "gen_ai.prompt.0.role", "gen_ai.prompt.0.content",
                                        "llm.input_messages.0.message.role")) or any(
        event.get("name", "").startswith("gen_ai.") for event in span.events)


def conversation_id(span: OtelSpan) -> str | None:
    for key in ("gen_ai.conversation.id", "session.id"):
        value = span.attributes.get(key)
        if isinstance(value, (str, int)) and str(value).strip():
            return str(value).strip()
    return None


def session_id_for(span: OtelSpan) -> str:
    """``otel:<conversation id>`` (hashed when it is not a valid session id), else
    ``otel:trace:<trace id>``."""
    found = conversation_id(span)
    if found is None:
        return f"otel:trace:{span.trace_id}"
    candidate = f"otel:{found}"
    if _SESSION_SAFE.fullmatch(candidate):
        return candidate
    return "otel:conv:" + hashlib.sha256(found.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def registry_span_id(partition: int, account_key: int, trace_id: str, span_id: str,
                     epoch_ms: int | None = None) -> str:
    """The registry id of an OTel span in one account: the same inputs give the same id,
    so re-sent spans are recognised and parents are named before they arrive.

    ``epoch_ms``, the moment the span's trace was first seen (the same for all its spans),
    is the id's time part: ids sort by time like every other registry id, so new spans
    are written at the end of each index instead of all over it.  ``None``: the
    derivation of traces stored before epochs existed, whose time part comes from the
    hash (up to year 2248).  The random part is the hash either way."""
    return registry_span_ids(partition, account_key, [(trace_id, span_id, epoch_ms)])[0]


def registry_span_ids(partition: int, account_key: int,
                      spans: Sequence[tuple[str, str, int | None]]) -> list[str]:
    """:func:`registry_span_id` of each (trace id, span id, epoch) at once.

    An id is 32 digits: the first 16 are the time part and the partition (80 bits), the
    same for every span of a trace once its epoch is fixed, so encoded once a request; the
    last 16 are the random part (80 bits: the hash's bytes 6 to 16)."""
    sha256 = hashlib.sha256
    heads: dict[int, str] = {}
    out = []
    for trace_id, span_id, epoch_ms in spans:
        digest = sha256(f"{account_key}:{trace_id}:{span_id}".encode()).digest()
        # Without an epoch: the hash's first 48 bits, as the time part of 43 bits.
        timestamp = int.from_bytes(digest[:6], "big") % (1 << 43) if epoch_ms is None else epoch_ms
        head = heads.get(timestamp)
        if head is None:
            head = heads[timestamp] = ids.encode_80_bits((timestamp << ids.PARTITION_BITS) | partition)
        out.append(head + ids.encode_80_bits(int.from_bytes(digest[6:16], "big")))
    return out


def _clip(text: str) -> str:
    text = text.replace("\x00", "\ufffd")
    return text if len(text) <= MAX_NAME_CHARS else text[: MAX_NAME_CHARS - 1] + "…"


def payload_of(span: OtelSpan) -> dict[str, Any]:
    return span.to_json()
