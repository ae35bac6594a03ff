"""Hypothesis strategies for the provider transcript formats: every block kind each reader
maps, plus unknown block types and unknown properties at every level."""

from __future__ import annotations

import collections.abc
from typing import Any

from hypothesis import strategies as st

from tests.strategies import ids, json_values, text, unknown_keys


def unknowns(max_size: int = 2) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(unknown_keys, json_values, max_size=max_size)


def with_unknowns(base: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.tuples(base, unknowns()).map(lambda p: {**p[0], **p[1]})


def unknown_block(type_key: str = "type") -> st.SearchStrategy[dict[str, Any]]:
    """A block of a type no reader knows, carrying whatever it likes."""
    return st.tuples(st.from_regex(r"x_[a-z_]{1,8}", fullmatch=True), unknowns(3)).map(
        lambda p: {type_key: p[0], **p[1]})


def materialized(value: Any) -> Any:
    """A value validated by an SDK TypeAdapter with its lazy iterables run (an
    ``Iterable[...]`` field validates only as it is consumed)."""
    if isinstance(value, dict):
        return {k: materialized(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, collections.abc.Iterator)):
        return [materialized(v) for v in value]
    return value


b64 = st.sampled_from(["aGk=", "iVBORw0KGgo=", ""])
objects = st.dictionaries(st.text(max_size=5), json_values, max_size=3)

# -- Anthropic ---------------------------------------------------------------------------

_anthropic_citation = st.one_of(
    with_unknowns(st.fixed_dictionaries({"type": st.just("char_location"), "cited_text": text,
                                         "document_index": st.integers(0, 3), "start_char_index": st.integers(0, 9),
                                         "end_char_index": st.integers(0, 9)},
                                        optional={"document_title": text})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("web_search_result_location"), "cited_text": text,
                                         "url": st.just("https://example.com/a"), "encrypted_index": ids},
                                        optional={"title": text})),
    unknown_block(),
)
anthropic_blocks = st.one_of(
    with_unknowns(st.fixed_dictionaries({"type": st.just("text"), "text": text},
                                        optional={"citations": st.lists(_anthropic_citation, max_size=2),
                                                  "cache_control": st.just({"type": "ephemeral"})})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("thinking"), "thinking": text, "signature": ids})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("redacted_thinking"), "data": ids})),
    with_unknowns(st.fixed_dictionaries({"type": st.sampled_from(["tool_use", "server_tool_use", "mcp_tool_use"]),
                                         "id": ids, "name": ids, "input": objects})),
    with_unknowns(st.fixed_dictionaries({"type": st.sampled_from(["tool_result", "web_search_tool_result"]),
                                         "tool_use_id": ids},
                                        optional={"content": st.one_of(text, st.lists(
                                            st.fixed_dictionaries({"type": st.just("text"), "text": text}),
                                            max_size=2)), "is_error": st.booleans()})),
    with_unknowns(st.fixed_dictionaries({"type": st.sampled_from(["image"]), "source": st.one_of(
        st.fixed_dictionaries({"type": st.just("base64"), "media_type": st.just("image/png"), "data": b64}),
        st.fixed_dictionaries({"type": st.just("url"), "url": st.just("https://example.com/a.png")}),
        st.fixed_dictionaries({"type": st.just("file"), "file_id": ids}),
        unknown_block())})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("document"), "source": st.one_of(
        st.fixed_dictionaries({"type": st.just("base64"), "media_type": st.just("application/pdf"), "data": b64}),
        st.fixed_dictionaries({"type": st.just("text"), "media_type": st.just("text/plain"), "data": text}))},
        optional={"title": text})),
    unknown_block(),
)
_anthropic_content = st.one_of(text, st.lists(anthropic_blocks, max_size=4))
anthropic_requests = with_unknowns(st.fixed_dictionaries(
    {"model": st.just("claude-sonnet-4-5"), "max_tokens": st.integers(1, 4096),
     "messages": st.lists(with_unknowns(st.fixed_dictionaries(
         {"role": st.sampled_from(["user", "assistant"]), "content": _anthropic_content})), max_size=5)},
    optional={"system": st.one_of(text, st.lists(with_unknowns(st.fixed_dictionaries(
        {"type": st.just("text"), "text": text})), max_size=2))}))
anthropic_responses = with_unknowns(st.fixed_dictionaries(
    {"id": ids, "type": st.just("message"), "role": st.just("assistant"), "model": st.just("claude-sonnet-4-5"),
     "content": st.lists(anthropic_blocks, max_size=4),
     "stop_reason": st.sampled_from(["end_turn", "tool_use", None]), "stop_sequence": st.none(),
     "usage": with_unknowns(st.fixed_dictionaries(
         {"input_tokens": st.integers(0, 10**6), "output_tokens": st.integers(0, 10**6)},
         optional={"cache_creation_input_tokens": st.integers(0, 99),
                   "cache_read_input_tokens": st.integers(0, 99)}))}))

# -- OpenAI Responses ---------------------------------------------------------------------

_url_citation = with_unknowns(st.fixed_dictionaries({"type": st.just("url_citation"), "url": st.just(
    "https://example.com/a"), "title": text, "start_index": st.integers(0, 9), "end_index": st.integers(0, 9)}))
_file_citation = with_unknowns(st.fixed_dictionaries({"type": st.just("file_citation"), "file_id": ids,
                                                      "filename": text, "index": st.integers(0, 9)}))
_input_parts = st.one_of(
    with_unknowns(st.fixed_dictionaries({"type": st.just("input_text"), "text": text})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("input_image"), "detail": st.sampled_from(["auto", "low"])},
                                        optional={"image_url": st.sampled_from(
                                            ["https://example.com/a.png", "data:image/png;base64,aGk="])})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("input_image"), "file_id": ids})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("input_file")}, optional={
        "file_id": ids, "filename": text, "file_data": st.just("data:application/pdf;base64,JVBE")})),
    unknown_block(),
)
_output_parts = st.one_of(
    with_unknowns(st.fixed_dictionaries({"type": st.just("output_text"), "text": text,
                                         "annotations": st.lists(st.one_of(_url_citation, _file_citation,
                                                                           unknown_block()), max_size=2)})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("refusal"), "refusal": text})),
)
responses_items = st.one_of(
    with_unknowns(st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "developer"]),
                                         "content": st.one_of(text, st.lists(_input_parts, max_size=3))},
                                        optional={"type": st.just("message")})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("message"), "role": st.just("assistant"), "id": ids,
                                         "status": st.just("completed"),
                                         "content": st.lists(_output_parts, max_size=2)})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("function_call"), "call_id": ids, "name": ids,
                                         "arguments": st.sampled_from(['{"a":1}', "{}", "not json"])},
                                        optional={"id": ids, "status": st.just("completed")})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("function_call_output"), "call_id": ids,
                                         "output": st.one_of(text, st.lists(st.fixed_dictionaries(
                                             {"type": st.just("input_text"), "text": text}), max_size=1))})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("reasoning"), "id": ids, "summary": st.lists(
        st.fixed_dictionaries({"type": st.just("summary_text"), "text": text}), max_size=2)},
        optional={"encrypted_content": ids})),
    with_unknowns(st.fixed_dictionaries({"type": st.sampled_from(["web_search_call", "file_search_call"]),
                                         "id": ids, "status": st.just("completed")})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("mcp_call"), "id": ids, "name": ids, "server_label": ids,
                                         "arguments": st.just("{}")})),
    unknown_block(),
)
responses_requests = with_unknowns(st.fixed_dictionaries(
    {"model": st.just("gpt-5"), "input": st.one_of(text, st.lists(responses_items, max_size=5))},
    optional={"instructions": text}))
responses_responses = with_unknowns(st.fixed_dictionaries(
    {"id": ids, "object": st.just("response"), "status": st.just("completed"), "model": st.just("gpt-5"),
     "output": st.lists(responses_items, max_size=4),
     "usage": with_unknowns(st.fixed_dictionaries({"input_tokens": st.integers(0, 99),
                                                   "output_tokens": st.integers(0, 99),
                                                   "total_tokens": st.integers(0, 198)}))}))

# -- Gemini (camelCase, as the REST API writes it; snake_case tested apart) ----------------

_signature = st.sampled_from(["Q2l3QjBlMktiN2Y2WHg5d0xx", "c2ln"])
_gemini_parts = st.one_of(
    with_unknowns(st.fixed_dictionaries({"text": text}, optional={"thoughtSignature": _signature})),
    with_unknowns(st.fixed_dictionaries({"text": text, "thought": st.just(True)},
                                        optional={"thoughtSignature": _signature})),
    with_unknowns(st.fixed_dictionaries({"inlineData": st.fixed_dictionaries(
        {"mimeType": st.just("image/png"), "data": b64})})),
    with_unknowns(st.fixed_dictionaries({"fileData": st.fixed_dictionaries(
        {"fileUri": st.just("gs://bucket/a.pdf")}, optional={"mimeType": st.just("application/pdf")})})),
    with_unknowns(st.fixed_dictionaries({"functionCall": st.fixed_dictionaries(
        {"name": ids}, optional={"args": objects, "id": ids})}, optional={"thoughtSignature": _signature})),
    with_unknowns(st.fixed_dictionaries({"functionResponse": st.fixed_dictionaries(
        {"name": ids, "response": objects}, optional={"id": ids})})),
    with_unknowns(st.fixed_dictionaries({"executableCode": st.fixed_dictionaries(
        {"language": st.just("PYTHON"), "code": text})})),
    with_unknowns(st.fixed_dictionaries({"codeExecutionResult": st.fixed_dictionaries(
        {"outcome": st.just("OUTCOME_OK")}, optional={"output": text})})),
    unknown_block("xKind"),
)
gemini_requests = with_unknowns(st.fixed_dictionaries(
    {"contents": st.lists(with_unknowns(st.fixed_dictionaries(
        {"parts": st.lists(_gemini_parts, max_size=4)}, optional={"role": st.sampled_from(["user", "model"])})),
        max_size=5)},
    optional={"systemInstruction": st.fixed_dictionaries({"parts": st.lists(
        st.fixed_dictionaries({"text": text}), max_size=2)})}))
gemini_responses = with_unknowns(st.fixed_dictionaries(
    {"candidates": st.lists(with_unknowns(st.fixed_dictionaries(
        {"content": st.fixed_dictionaries({"parts": st.lists(_gemini_parts, max_size=3)},
                                          optional={"role": st.just("model")})},
        optional={"finishReason": st.just("STOP"), "index": st.integers(0, 3)})), min_size=1, max_size=2),
     "usageMetadata": with_unknowns(st.fixed_dictionaries(
         {"promptTokenCount": st.integers(0, 99)}, optional={"candidatesTokenCount": st.integers(0, 99),
                                                            "thoughtsTokenCount": st.integers(0, 99)}))},
    optional={"modelVersion": st.just("gemini-2.5-pro"), "responseId": ids}))

# -- LangChain (messages_to_dict) ---------------------------------------------------------

_lc_blocks = st.one_of(
    with_unknowns(st.fixed_dictionaries({"type": st.just("text"), "text": text})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("reasoning"), "reasoning": text})),
    with_unknowns(st.fixed_dictionaries({"type": st.sampled_from(["image", "file"]),
                                         "url": st.just("https://example.com/a.png")},
                                        optional={"mime_type": st.just("image/png")})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("image"), "base64": b64, "mime_type": st.just("image/png")})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("file"), "file_id": ids})),
    unknown_block(),
)
_lc_common = {"content": st.one_of(text, st.lists(_lc_blocks, max_size=3)),
              "additional_kwargs": st.just({}), "response_metadata": unknowns(),
              "name": st.one_of(st.none(), ids), "id": st.one_of(st.none(), ids)}
_lc_call = with_unknowns(st.fixed_dictionaries({"name": ids, "args": objects, "id": st.one_of(st.none(), ids)},
                                               optional={"type": st.just("tool_call")}))
_lc_usage = with_unknowns(st.fixed_dictionaries({"input_tokens": st.integers(0, 99), "output_tokens": st.integers(
    0, 99), "total_tokens": st.integers(0, 198)}))


def _lc(kind: str, extra: dict[str, Any], optional: dict[str, Any] | None = None) -> st.SearchStrategy[Any]:
    data = with_unknowns(st.fixed_dictionaries({**_lc_common, **extra}, optional={"type": st.just(kind),
                                                                                   **(optional or {})}))
    return st.fixed_dictionaries({"type": st.just(kind), "data": data})


langchain_messages = st.lists(st.one_of(
    _lc("human", {}), _lc("system", {}),
    _lc("ai", {}, {"tool_calls": st.lists(_lc_call, max_size=2), "invalid_tool_calls": st.just([]),
                   "usage_metadata": st.one_of(st.none(), _lc_usage)}),
    _lc("tool", {"tool_call_id": ids}, {"status": st.sampled_from(["success", "error"]), "artifact": json_values}),
    st.fixed_dictionaries({"type": st.just("chat"), "data": st.fixed_dictionaries(
        {"content": text, "role": ids, "type": st.just("chat")})}),
), min_size=1, max_size=5)

# -- A2A v1 (ProtoJSON) ---------------------------------------------------------------------

_a2a_part = st.one_of(
    with_unknowns(st.fixed_dictionaries({"text": text}, optional={"mediaType": st.just("text/plain"),
                                                                  "metadata": unknowns()})),
    with_unknowns(st.fixed_dictionaries({"url": st.just("https://example.com/a.png"),
                                         "mediaType": st.just("image/png")},
                                        optional={"filename": st.sampled_from(["a.png", "/docs/a.png"]),
                                                  "metadata": unknowns()})),
    with_unknowns(st.fixed_dictionaries({"raw": b64, "mediaType": st.just("application/octet-stream")},
                                        optional={"filename": st.just("f.bin")})),
    with_unknowns(st.fixed_dictionaries({"data": json_values}, optional={"mediaType": st.just("application/json")})),
    with_unknowns(st.fixed_dictionaries({"text": text, "mediaType": st.just("text/markdown")})),
    unknowns(2).map(lambda extra: {"xOther": 1, **extra}),
)
a2a_messages = with_unknowns(st.fixed_dictionaries(
    {"messageId": ids, "role": st.sampled_from(["ROLE_USER", "ROLE_AGENT"]), "parts": st.lists(_a2a_part, max_size=3)},
    optional={"contextId": ids, "taskId": ids}))
a2a_tasks = with_unknowns(st.fixed_dictionaries(
    {"id": ids, "contextId": ids, "status": st.fixed_dictionaries(
        {"state": st.sampled_from(["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"])},
        optional={"message": a2a_messages})},
    optional={"history": st.lists(a2a_messages, max_size=3), "artifacts": st.lists(with_unknowns(st.fixed_dictionaries(
        {"artifactId": ids, "parts": st.lists(_a2a_part, max_size=2)}, optional={"name": text})), max_size=2)}))

# -- OpenTelemetry GenAI attributes -----------------------------------------------------------

_id = {"id": st.one_of(st.none(), ids)}
_media = {"modality": st.sampled_from(["image", "audio", "video", "document"])}
_media_type = {"mime_type": st.one_of(st.none(), st.just("image/png"))}
otel_parts = st.one_of(
    with_unknowns(st.fixed_dictionaries({"type": st.sampled_from(["text", "reasoning"]), "content": text})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("tool_call"), "name": ids},
                                        optional={**_id, "arguments": json_values})),
    with_unknowns(st.fixed_dictionaries({"type": st.just("tool_call_response"), "response": json_values},
                                        optional=_id)),
    with_unknowns(st.fixed_dictionaries({"type": st.just("server_tool_call"), "name": ids, "server_tool_call":
                                         with_unknowns(st.fixed_dictionaries({"type": ids}))}, optional=_id)),
    with_unknowns(st.fixed_dictionaries({"type": st.just("server_tool_call_response"), "server_tool_call_response":
                                         with_unknowns(st.fixed_dictionaries({"type": ids}))}, optional=_id)),
    with_unknowns(st.fixed_dictionaries({"type": st.just("blob"), **_media, "content": b64}, optional=_media_type)),
    with_unknowns(st.fixed_dictionaries({"type": st.just("uri"), **_media, "uri": st.just("https://example.com/a")},
                                        optional=_media_type)),
    with_unknowns(st.fixed_dictionaries({"type": st.just("file"), **_media, "file_id": ids}, optional=_media_type)),
    unknown_block(),
)
_otel_roles = st.sampled_from(["system", "user", "assistant", "tool", "developer", "x_role"])


def _otel_messages(output: bool) -> st.SearchStrategy[list[dict[str, Any]]]:
    finish = {"finish_reason": st.sampled_from(["stop", "length", "tool_call", "x_reason"])} if output else {}
    return st.lists(with_unknowns(st.fixed_dictionaries(
        {"role": _otel_roles, "parts": st.lists(otel_parts, max_size=3), **finish},
        optional={"name": st.one_of(st.none(), ids)})), max_size=3)


otel_tool_definitions = st.lists(st.one_of(
    with_unknowns(st.fixed_dictionaries({"type": st.just("function"), "name": ids},
                                        optional={"description": st.one_of(st.none(), text),
                                                  "parameters": st.one_of(st.none(), st.just({"type": "object"}))})),
    with_unknowns(st.fixed_dictionaries({"type": st.sampled_from(["web_search", "code_interpreter"]), "name": ids},
                                        optional={"description": text})),
), max_size=3)


def _emitter_order(value: Any, type_last: bool) -> Any:
    """Messages and parts with their keys in one fixed order, as one emitter writes them
    (``type`` first, as Agent Framework does, or last, as OpenTelemetry's util-genai does)."""
    if isinstance(value, list):
        return [_emitter_order(item, type_last) for item in value]
    if not isinstance(value, dict):
        return value
    rest = {k: (_emitter_order(v, type_last) if k == "parts" else v) for k, v in sorted(value.items())
            if k != "type"}
    if "type" not in value:
        return rest
    return {**rest, "type": value["type"]} if type_last else {"type": value["type"], **rest}


_TEXT = {"compact": {"separators": (",", ":"), "ensure_ascii": False}, "compact-ascii": {"separators": (",", ":")},
         "python": {"ensure_ascii": False}, "python-ascii": {}}


@st.composite
def otel_documents(draw: st.DrawFn) -> dict[str, Any]:
    """GenAI attributes of one call: each attribute present or not, a structured value or
    JSON text in one of the spellings instrumentations use (keys in either order)."""
    import json

    values = {"gen_ai.system_instructions": st.lists(otel_parts, max_size=3),
              "gen_ai.tool.definitions": otel_tool_definitions,
              "gen_ai.input.messages": _otel_messages(False), "gen_ai.output.messages": _otel_messages(True)}
    document: dict[str, Any] = {}
    for key, strategy in values.items():
        if not draw(st.booleans()) and not (key == "gen_ai.input.messages" and not document):
            continue
        value = draw(strategy)
        spelling = draw(st.sampled_from([None, *_TEXT]))
        if spelling is not None:
            value = json.dumps(_emitter_order(value, draw(st.booleans())), **_TEXT[spelling])  # type: ignore[arg-type]
        document[key] = value
    document.update(draw(st.fixed_dictionaries({}, optional={
        "gen_ai.usage.input_tokens": st.integers(0, 10**6), "gen_ai.usage.output_tokens": st.integers(0, 10**6),
        "gen_ai.request.model": ids, "gen_ai.operation.name": st.just("chat")})))
    document.update(draw(unknowns()))
    return document
