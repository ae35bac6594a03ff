"""OpenTelemetry in: OTLP trace requests decoded into plain span records, mapped onto the
agent registry's traces, and the GenAI messages in them read into the canonical model.

Pure: nothing here touches storage or HTTP.  :mod:`.decode` turns an OTLP/HTTP body
(protobuf or JSON) into :class:`~agentfolio.otel.decode.OtelSpan` records with bounds on
size, depth and times; :mod:`.mapping` says which agent, trace and span type each span
belongs to and what the registry stores for it; :mod:`.messages` reads the messages of
an LLM span under every convention (OTel GenAI structured and JSON-string attributes,
legacy ``gen_ai.prompt.N`` attributes and per-message events, OpenInference's flattened
``llm.input_messages.N``); :mod:`.conversation` joins the spans of one conversation
into a session that holds each message once.
"""

from agentfolio.otel.decode import OtelSpan, OtlpError, decode_request

__all__ = ["OtelSpan", "OtlpError", "decode_request"]
