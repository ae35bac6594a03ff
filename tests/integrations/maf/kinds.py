"""One MAF content of each of the 26 kinds, each with what its kind can carry, for the tests."""

from __future__ import annotations

import warnings
from typing import get_args

from agent_framework import Content
from agent_framework._types import ContentType

ANNOTATIONS = [{"type": "citation", "title": "Doc", "url": "https://example.com/d", "snippet": "é ✓"}]
PROPERTIES = {"trace": {"n": 1, "list": [1.5, None, True]}, "unicode": "\u2028 ✓"}


def every_kind() -> list[Content]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # computer use is an experimental kind
        return _every_kind()


def _every_kind() -> list[Content]:
    call = Content.from_function_call("c9", "delete_file", arguments={"path": "/tmp/x"}, id="fc_9")
    contents = [
        Content.from_text("hello ✓", annotations=ANNOTATIONS, additional_properties=PROPERTIES),
        Content.from_text_reasoning(id="rs_1", text="thinking", protected_data="enc:AAAA", status="completed"),
        Content.from_data(b"\x00\x01binary", "application/octet-stream", name="blob.bin"),
        Content.from_uri("https://example.com/cat.png", media_type="image/png", name="cat"),
        Content.from_error(message="boom", error_code="E42", error_details="stack"),
        Content.from_function_call("c1", "get_weather", arguments='{"city":  "Paris"}', id="fc_1"),
        Content.from_function_result("c1", id="fc_1", result="sunny", status="completed"),
        Content.from_search_tool_call("s1", tool_name="web_search", arguments={"q": "x"}, status="done"),
        Content.from_search_tool_result("s1", tool_name="web_search", result=[{"url": "https://a"}],
                                        items=[Content.from_text("found")]),
        Content.from_usage({"input_token_count": 3, "output_token_count": 5, "total_token_count": 8,
                            "cached_tokens": 2}),
        Content.from_hosted_file("file_1", media_type="text/csv", name="data.csv"),
        Content.from_hosted_vector_store("vs_1"),
        Content.from_code_interpreter_tool_call(call_id="ci1", inputs=[Content.from_text("print(1)")]),
        Content.from_code_interpreter_tool_result(call_id="ci1", outputs=[Content.from_text("1")]),
        Content.from_image_generation_tool_call(image_id="img1"),
        Content.from_image_generation_tool_result(image_id="img1", outputs=Content.from_uri(
            "data:image/png;base64,iVBORw0KGgo=", media_type="image/png")),
        Content.from_shell_tool_call(call_id="sh1", commands=["ls -la"], timeout_ms=1000, max_output_length=100),
        Content.from_shell_tool_result(call_id="sh1", outputs=[Content.from_shell_command_output(
            stdout="a\nb", stderr="", exit_code=0, timed_out=False)], max_output_length=100),
        Content.from_shell_command_output(stdout="out", stderr="err", exit_code=2, timed_out=True),
        Content.from_computer_tool_call(id="cu1", call_id="cc1", actions=[{"type": "click", "x": 1, "y": 2}],
                                        pending_safety_checks=[{"id": "sc1", "code": "c", "message": "m"}]),
        Content.from_computer_tool_result(call_id="cc1", id="cu2", screenshot=Content.from_uri(
            "https://example.com/s.png", media_type="image/png")),
        Content.from_mcp_server_tool_call("m1", "lookup", server_name="srv", arguments={"k": "v"}),
        Content.from_mcp_server_tool_result("m1", output=[Content.from_text("value")]),
        Content.from_function_approval_request("fc_9", call),
        Content.from_function_approval_response(True, "fc_9", call),
        Content.from_oauth_consent_request("https://login.example.com/consent"),
    ]
    assert sorted(c.type for c in contents) == sorted(get_args(ContentType)), "a MAF content kind is missing"
    return contents
