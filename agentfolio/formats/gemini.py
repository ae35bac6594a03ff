"""Gemini ``generateContent``: a request (``{"contents": [...], "systemInstruction"?,
"tools"?...}``) or a response (``{"candidates": [...], "usageMetadata"...}``), spelled
as the REST API spells it (camelCase) or as the Python SDK dumps it (snake_case); a
document is written back in the spelling it was read in.

=====================================  ==========================================================
part                                    canonical content
=====================================  ==========================================================
``text``                                text
``text`` + ``thought: true``            reasoning (``thoughtSignature`` → protectedData)
``inlineData`` / ``fileData``           data (``data:<mimeType>;base64,…``) / uri
``functionCall``                        functionCall (``id`` → callId, ``args`` → arguments)
``functionResponse``                    functionResult (``response`` → result; ``name`` in extra)
``executableCode``                      functionCall ``code_execution``, informationalOnly
``codeExecutionResult``                 functionResult (its outcome and output as the result)
anything else                           kept whole
=====================================  ==========================================================

A ``thoughtSignature`` on any other part rides in that content's ``extra``: Gemini refuses
a call history without the signatures it issued, so they travel through every format that
keeps unknown properties (durable state, agentfolio's own JSON) and come back.  Role
``model`` reads as ``assistant``.  Read → write gives the same JSON value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentfolio.formats.base import FunctionFormat, ReadResult, read_lazily
from agentfolio.formats.errors import FormatError, Problem, validated
from agentfolio.formats.losses import ConvertOptions, Lowered, Origin, Recorder, with_extras
from agentfolio.formats.provider import (
    FORM_KEY,
    Target,
    add_extras,
    build,
    call_names,
    check_type,
    data_url,
    extras_without_form,
    flag_foreign_signature,
    form,
    is_kept_whole,
    json_arguments,
    kept_value,
    kept_whole,
    lower_messages,
    rest,
    signed_by,
    split_data_url,
)
from agentfolio.formats.shared import group_by_role, require_objects
from agentfolio.model import (
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    OpaqueContent,
    ReasoningContent,
    ResponseEntry,
    Session,
    SessionData,
    TextContent,
    UriContent,
    Usage,
)

NAME = "gemini"
ROLES = ("system", "user", "assistant")
CODE_EXECUTION = "code_execution"
_SCAN = 64

_NAMES = ("contents", "parts", "role", "text", "thought", "thought_signature", "inline_data", "file_data",
          "mime_type", "file_uri", "function_call", "function_response", "executable_code",
          "code_execution_result", "system_instruction", "candidates", "content", "usage_metadata",
          "prompt_token_count", "candidates_token_count", "total_token_count", "video_metadata")


def _camel(name: str) -> str:
    head, *tail = name.split("_")
    return head + "".join(word.title() for word in tail)


SNAKE = {name: name for name in _NAMES}
CAMEL = {name: _camel(name) for name in _NAMES}
_SNAKE_MARKERS = frozenset(n for n in _NAMES if "_" in n)


def _is_snake(document: dict[str, Any]) -> bool:
    if any(key in _SNAKE_MARKERS for key in document):
        return True
    for content in (document.get("contents") or document.get("candidates") or [])[:_SCAN]:
        if isinstance(content, dict):
            parts = content.get("parts") if "parts" in content else (content.get("content") or {}).get("parts") \
                if isinstance(content.get("content"), dict) else None
            for part in (parts if isinstance(parts, list) else [])[:_SCAN]:
                if isinstance(part, dict) and any(key in _SNAKE_MARKERS for key in part):
                    return True
    return False


def looks_like(document: Any) -> bool:
    if not isinstance(document, dict) or "messages" in document:
        return False
    contents = document.get("contents")
    if isinstance(contents, list):
        return all(isinstance(c, dict) and isinstance(c.get("parts"), list) for c in contents[:_SCAN])
    candidates = document.get("candidates")
    return isinstance(candidates, list) and all(isinstance(c, dict) for c in candidates[:_SCAN])


def _is_response(document: Any) -> bool:
    return isinstance(document, dict) and "contents" not in document and isinstance(document.get("candidates"),
                                                                                     list)


# -- validation ---------------------------------------------------------------------------

def validate(document: Any) -> list[Problem]:
    problems: list[Problem] = []
    if not isinstance(document, dict):
        return [Problem("", "expected a Gemini request or response object")]
    k = SNAKE if _is_snake(document) else CAMEL
    if _is_response(document):
        for index, candidate in enumerate(document["candidates"]):
            if check_type(problems, f"/candidates/{index}", candidate, dict, "a candidate object") and isinstance(
                    candidate.get(k["content"]), dict):
                _check_content(problems, f"/candidates/{index}/{k['content']}", candidate[k["content"]], k)
        return problems
    if not check_type(problems, "/contents", document.get("contents"), list, "an array of contents"):
        return problems
    for index, content in enumerate(document["contents"]):
        _check_content(problems, f"/contents/{index}", content, k)
        if isinstance(content, dict) and content.get("role") not in (None, "user", "model"):
            problems.append(Problem(f"/contents/{index}/role", 'expected "user" or "model"'))
    system = document.get(k["system_instruction"])
    if system is not None and not isinstance(system, str):
        _check_content(problems, "/" + k["system_instruction"], system, k)
    return problems


def _check_content(problems: list[Problem], pointer: str, content: Any, k: dict[str, str]) -> None:
    if not check_type(problems, pointer, content, dict, "a content object"):
        return
    if not check_type(problems, pointer + "/parts", content.get("parts"), list, "an array of parts"):
        return
    for index, part in enumerate(content["parts"]):
        where = f"{pointer}/parts/{index}"
        if not check_type(problems, where, part, dict, "a part object"):
            continue
        if "text" in part:
            check_type(problems, where + "/text", part["text"], str, "a string")
        call = part.get(k["function_call"])
        if call is not None and check_type(problems, f"{where}/{k['function_call']}", call, dict, "an object"):
            check_type(problems, f"{where}/{k['function_call']}/name", call.get("name"), str, "a string")
            if "args" in call:
                check_type(problems, f"{where}/{k['function_call']}/args", call["args"], dict, "an object")
        response = part.get(k["function_response"])
        if response is not None and check_type(problems, f"{where}/{k['function_response']}", response, dict,
                                               "an object"):
            check_type(problems, f"{where}/{k['function_response']}/name", response.get("name"), str, "a string")
            if "response" in response:
                check_type(problems, f"{where}/{k['function_response']}/response", response["response"], dict,
                           "an object")
        inline = part.get(k["inline_data"])
        if inline is not None and check_type(problems, f"{where}/{k['inline_data']}", inline, dict, "an object"):
            check_type(problems, f"{where}/{k['inline_data']}/data", inline.get("data"), str, "base64 text")


# -- reading ------------------------------------------------------------------------------

def read(document: Any, *, strict: bool = True, source: str | None = None,
         options: ConvertOptions | None = None) -> ReadResult:
    problems = validated(validate, document, strict=strict, source=source)
    if not isinstance(document, dict):
        raise FormatError("expected a Gemini request or response object", source=source, pointer="")
    snake = _is_snake(document)
    k = SNAKE if snake else CAMEL
    origin = Origin()
    response = _is_response(document)
    if not response:
        require_objects(document, "contents", "a content object", source)
    forms = (["response"] if response else []) + (["snake_case"] if snake else [])
    return read_lazily(lambda: _read_session(document, origin, k, response, forms), document, NAME,
                       version="response" if response else "request", problems=problems, origin=origin)


def _read_session(document: dict[str, Any], origin: Origin, k: dict[str, str], response: bool,
                  forms: list[str]) -> Session:
    skip: list[str] = []
    if response:
        messages = [_read_candidate(c, f"/candidates/{i}", origin, k) for i, c in enumerate(document["candidates"])]
        usage = _read_usage(document.get(k["usage_metadata"]), k)
        skip = ["candidates", *([k["usage_metadata"]] if usage is not None else [])]
        optional: dict[str, Any] = {"usage": usage} if usage is not None else {}
        entry = ResponseEntry(messages=tuple(messages), **optional)
        origin.add(entry, "", {"usage": (k["usage_metadata"],)})
        entries: list[Any] = [entry]
    else:
        messages = []
        system = document.get(k["system_instruction"])
        if isinstance(system, dict) and set(system) == {"parts"} and isinstance(system["parts"], list):
            message = _read_content(system, "/" + k["system_instruction"], origin, k, role="system")
            messages.append(message)
            skip.append(k["system_instruction"])
        for index, content in enumerate(document["contents"]):
            messages.append(_read_content(content, f"/contents/{index}", origin, k))
        skip.append("contents")
        entries = list(group_by_role(messages, ROLES, frozenset({"system", "user"})))
    session = Session(data=SessionData(conversation_history=tuple(entries)))
    extras = rest(document, *skip)
    if forms:
        extras[FORM_KEY] = " ".join(forms)
    session = with_extras(session, extras)
    origin.add(session, "")
    return session


def _read_usage(raw: Any, k: dict[str, str]) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    names = (("prompt_token_count", "input_token_count"), ("candidates_token_count", "output_token_count"),
             ("total_token_count", "total_token_count"))
    known = {attribute: raw[k[wire]] for wire, attribute in names
             if isinstance(raw.get(k[wire]), int) and not isinstance(raw.get(k[wire]), bool)}
    used = [k[wire] for wire, attribute in names if attribute in known]
    return build(Usage, rest(raw, *used), **known)


def _read_candidate(candidate: Any, pointer: str, origin: Origin, k: dict[str, str]) -> Message:
    content = candidate.get(k["content"]) if isinstance(candidate, dict) else None
    if isinstance(content, dict) and isinstance(content.get("parts"), list) and set(content) <= {"role", "parts"}:
        message = _read_content(content, f"{pointer}/{k['content']}", origin, k)
        built = build(Message, {**message.extra, **rest(candidate, k["content"])},
                      **({"role": message.role} if message.role is not None else {}), contents=message.contents)
        if built is not None:
            origin.add(built, pointer)
            return built
    kept = kept_whole(NAME, candidate, "candidate")
    origin.add(kept, pointer, {"value": ()})
    return with_extras(Message(role="assistant", contents=(kept,)), {FORM_KEY: "candidate"})


def _read_content(content: dict[str, Any], pointer: str, origin: Origin, k: dict[str, str],
                  role: str | None = None) -> Message:
    parts = content.get("parts")
    contents = [read_part(part, f"{pointer}/parts/{i}", origin, k) for i, part in enumerate(parts or [])]
    raw_role = content.get("role")
    known: dict[str, Any] = {"contents": tuple(contents)}
    extras = rest(content, "parts", "role")
    if role is not None:
        known["role"] = role
    elif raw_role == "model":
        known["role"] = "assistant"
    elif isinstance(raw_role, str) and raw_role != "assistant":
        known["role"] = raw_role
    elif "role" in content:
        extras[FORM_KEY] = {"role": raw_role}  # a role we would not write back as read
    message = build(Message, extras, **known) or Message(**known)
    origin.add(message, pointer)
    return message


def read_part(part: Any, pointer: str, origin: Origin, k: dict[str, str]) -> Any:
    built = _map_part(part, k) if isinstance(part, dict) else None
    if built is None:
        built = kept_whole(NAME, part, "part")
        origin.add(built, pointer, {"value": ()})
    else:
        origin.add(built, pointer, _origin_names(k).get(type(built), {}))
    return built


def _origin_names(k: dict[str, str]) -> dict[type, dict[str, tuple[str, ...]]]:
    return {FunctionCallContent: {"callId": (k["function_call"], "id"), "name": (k["function_call"], "name"),
                                  "arguments": (k["function_call"], "args")},
            FunctionResultContent: {"callId": (k["function_response"], "id"),
                                    "result": (k["function_response"], "response")},
            ReasoningContent: {"protectedData": (k["thought_signature"],)},
            DataContent: {"uri": (k["inline_data"], "data"), "mediaType": (k["inline_data"], k["mime_type"])},
            UriContent: {"uri": (k["file_data"], k["file_uri"]), "mediaType": (k["file_data"], k["mime_type"])}}


_NO_ID = {FORM_KEY: "no-id"}  # a call or result Gemini gave no id: an id added on the way out is not its own


def _map_part(part: dict[str, Any], k: dict[str, str]) -> Any:
    if isinstance(part.get("text"), str):
        if part.get("thought") is True:
            signature = part.get(k["thought_signature"])
            extras = rest(part, "text", "thought", *((k["thought_signature"],) if isinstance(signature, str) else ()))
            signed = signed_by(NAME) if isinstance(signature, str) else {}
            return build(ReasoningContent, {**extras, **signed}, text=part["text"],
                         **({"protected_data": signature} if isinstance(signature, str) else {}))
        return build(TextContent, rest(part, "text"), text=part["text"])
    inline = part.get(k["inline_data"])
    if isinstance(inline, dict) and set(inline) == {k["mime_type"], "data"} and all(
            isinstance(v, str) for v in inline.values()):
        return build(DataContent, rest(part, k["inline_data"]), uri=data_url(inline[k["mime_type"]], inline["data"]),
                     media_type=inline[k["mime_type"]])
    file = part.get(k["file_data"])
    if isinstance(file, dict) and isinstance(file.get(k["file_uri"]), str) and set(file) <= {k["file_uri"],
                                                                                            k["mime_type"]}:
        if k["mime_type"] in file and not isinstance(file[k["mime_type"]], str):
            return None
        return build(UriContent, rest(part, k["file_data"]), uri=file[k["file_uri"]],
                     **({"media_type": file[k["mime_type"]]} if k["mime_type"] in file else {}))
    call = part.get(k["function_call"])
    if isinstance(call, dict) and isinstance(call.get("name"), str) and set(call) <= {"name", "args", "id"} and (
            "id" not in call or isinstance(call["id"], str)):
        return build(FunctionCallContent, {**rest(part, k["function_call"]), **({} if "id" in call else _NO_ID)},
                     name=call["name"],
                     **({"call_id": call["id"]} if "id" in call else {}),
                     **({"arguments": call["args"]} if "args" in call else {}))
    response = part.get(k["function_response"])
    if isinstance(response, dict) and isinstance(response.get("name"), str) and "response" in response and set(
            response) <= {"name", "response", "id"} and ("id" not in response or isinstance(response["id"], str)):
        extras = rest(part, k["function_response"])
        if "name" in extras:
            return None
        return build(FunctionResultContent,
                     {**extras, "name": response["name"], **({} if "id" in response else _NO_ID)},
                     result=response["response"],
                     **({"call_id": response["id"]} if "id" in response else {}))
    code = part.get(k["executable_code"])
    if isinstance(code, dict):
        return build(FunctionCallContent, {**rest(part, k["executable_code"]), **_NO_ID}, name=CODE_EXECUTION,
                     arguments=code, informational_only=True)
    result = part.get(k["code_execution_result"])
    if isinstance(result, dict):
        extras = rest(part, k["code_execution_result"])
        return None if "name" in extras else build(FunctionResultContent, {**extras, **_NO_ID}, result=result)
    return None


# -- writing ------------------------------------------------------------------------------

def _forms(session: Session) -> set[str]:
    value = session.extra.get(FORM_KEY)
    return set(value.split()) if isinstance(value, str) else set()


def write(session: Session) -> dict[str, Any]:
    forms = _forms(session)
    k = SNAKE if "snake_case" in forms else CAMEL
    extras = extras_without_form(session)
    messages = [message for _, message in session.messages()]
    document: dict[str, Any] = {}
    if "response" in forms:
        document["candidates"] = [_write_candidate(m, f"/candidates/{i}", k) for i, m in enumerate(messages)]
        usage = session.entries[0].usage if session.entries and hasattr(session.entries[0], "usage") else None
        if usage is not None:
            names = (("prompt_token_count", usage.input_token_count), ("candidates_token_count",
                                                                       usage.output_token_count),
                     ("total_token_count", usage.total_token_count))
            document[k["usage_metadata"]] = {**{k[w]: v for w, v in names if v is not None}, **usage.extra}
        document.update(extras)
        return document
    contents: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if index == 0 and message.role == "system":
            document[k["system_instruction"]] = {"parts": _write_parts(message, "/" + k["system_instruction"], k)}
            continue
        contents.append(_write_content(message, f"/contents/{len(contents)}", k))
    document["contents"] = contents
    for key, value in extras.items():
        document.setdefault(key, value)
    return document


def _write_candidate(message: Message, pointer: str, k: dict[str, str]) -> Any:
    extras = extras_without_form(message)
    if message.extra.get(FORM_KEY) == "candidate" and message.items and is_kept_whole(NAME, message.items[0]):
        return kept_value(message.items[0])
    content: dict[str, Any] = {"parts": _write_parts(message, pointer + "/" + k["content"], k)}
    if message.role is not None:
        content["role"] = "model" if message.role == "assistant" else message.role
    return {k["content"]: content, **extras}


def _write_content(message: Message, pointer: str, k: dict[str, str]) -> dict[str, Any]:
    written: dict[str, Any] = {}
    form_value = form(message)
    if isinstance(form_value, dict) and "role" in form_value:
        written["role"] = form_value["role"]
    elif message.role is not None:
        written["role"] = "model" if message.role == "assistant" else message.role
    written["parts"] = _write_parts(message, pointer, k)
    written.update(extras_without_form(message))
    return written


def _write_parts(message: Message, pointer: str, k: dict[str, str]) -> list[Any]:
    return [write_part(content, f"{pointer}/parts/{index}", k) for index, content in enumerate(message.items)]


def write_part(content: Any, pointer: str, k: dict[str, str] = CAMEL) -> Any:
    if type(content) is OpaqueContent and is_kept_whole(NAME, content):
        return kept_value(content)
    writer = _PART_WRITERS.get(type(content))
    part = writer(content, k) if writer is not None else None
    if part is None:
        raise FormatError(f"a {getattr(content, 'kind', '?')!r} content of this shape has no Gemini form; "
                          "convert the session", pointer=pointer)
    if part is _ARGS_NOT_OBJECT:
        raise FormatError("a function call's args are an object; convert the session", pointer=pointer)
    return part


# One writer per kind, picked by the content's class (one dict lookup per part of a long
# history, not a chain of isinstance tests); None: no Gemini form.

def _text_part(content: TextContent, k: dict[str, str]) -> Any:
    return None if content.text is None else add_extras({"text": content.text}, content)


def _reasoning_part(content: ReasoningContent, k: dict[str, str]) -> Any:
    part: dict[str, Any] = {"text": content.text or "", "thought": True}
    if content.protected_data is not None:
        part[k["thought_signature"]] = content.protected_data
    return add_extras(part, content)


def _data_part(content: DataContent, k: dict[str, str]) -> Any:
    data = split_data_url(content.uri, content.media_type)
    if data is None:
        return None
    part: dict[str, Any] = {k["inline_data"]: {k["mime_type"]: content.media_type, "data": data}}
    return add_extras(part, content)


def _uri_part(content: UriContent, k: dict[str, str]) -> Any:
    if content.uri is None:
        return None
    file = {k["file_uri"]: content.uri}
    if content.media_type is not None:
        file[k["mime_type"]] = content.media_type
    part: dict[str, Any] = {k["file_data"]: file}
    return add_extras(part, content)


# A function call whose arguments are not an object: refused with its own reason.
_ARGS_NOT_OBJECT: dict[str, Any] = {}


def _call_part(content: FunctionCallContent, k: dict[str, str]) -> Any:
    if content.name is None:
        return None
    if content.informational_only and content.name == CODE_EXECUTION and isinstance(content.arguments, dict) \
            and content.call_id is None:
        part: dict[str, Any] = {k["executable_code"]: content.arguments}
    else:
        call: dict[str, Any] = {"name": content.name}
        if "arguments" in content.__pydantic_fields_set__:
            if not isinstance(content.arguments, dict):
                return _ARGS_NOT_OBJECT
            call["args"] = content.arguments
        if content.call_id is not None:
            call["id"] = content.call_id
        part = {k["function_call"]: call}
    return add_extras(part, content)


def _result_part(content: FunctionResultContent, k: dict[str, str]) -> Any:
    extra = extras_without_form(content)
    if isinstance(extra.get("name"), str) and isinstance(content.result, dict):
        response = {"name": extra.pop("name"), "response": content.result}
        if content.call_id is not None:
            response["id"] = content.call_id
        return {k["function_response"]: response, **extra}
    if content.call_id is None and "name" not in extra and isinstance(content.result, dict):
        return {k["code_execution_result"]: content.result, **extra}
    return None


_PART_WRITERS: dict[type, Callable[[Any, dict[str, str]], Any]] = {
    TextContent: _text_part, ReasoningContent: _reasoning_part, DataContent: _data_part, UriContent: _uri_part,
    FunctionCallContent: _call_part, FunctionResultContent: _result_part,
}


# -- lowering -----------------------------------------------------------------------------

def _nearest_role(role: str | None, in_request: bool) -> str:
    if role in ("tool", "function", "human"):
        return "user"
    if role == "model":
        return "assistant"
    return "user" if in_request else "assistant"


_SIGNATURES = frozenset({"thoughtSignature", "thought_signature"})
_PART_EXTRAS = _SIGNATURES | {"videoMetadata", "video_metadata", "partMetadata", "part_metadata", "thought",
                              "mediaResolution", "media_resolution"}
_CONTENT_FIELDS: dict[type, tuple[frozenset[str], frozenset[str]]] = {
    TextContent: (frozenset({"text"}), _PART_EXTRAS),
    ReasoningContent: (frozenset({"text", "protectedData"}), _PART_EXTRAS),
    DataContent: (frozenset({"uri", "mediaType"}), _PART_EXTRAS),
    UriContent: (frozenset({"uri", "mediaType"}), _PART_EXTRAS),
    FunctionCallContent: (frozenset({"callId", "name", "arguments", "informationalOnly"}), _PART_EXTRAS),
    FunctionResultContent: (frozenset({"callId", "result"}), _PART_EXTRAS | {"name"}),
}


class _Lowering:
    def __init__(self, session: Session) -> None:
        self.names = call_names(session)

    def fix(self, rec: Recorder, source: Any, content: Any, pointer: str) -> Any:
        flag_foreign_signature(rec, source, content, pointer, NAME, "Gemini")
        if content.extra.get(FORM_KEY) == "no-id" and getattr(content, "call_id", None) is not None:
            content = content.model_copy(update={"call_id": None})  # given on the way out (durable state)
            object.__setattr__(content, "__pydantic_fields_set__", content.model_fields_set - {"call_id"})
        if isinstance(content, FunctionCallContent):
            own_code = content.informational_only and content.name == CODE_EXECUTION and content.call_id is None
            if content.informational_only and not own_code:
                rec.approximate(source, pointer, "informationalOnly", "server-run call",
                                "Gemini has no calls run by another provider: written as a function call")
                content = build(FunctionCallContent, content.extra,
                                **{k: v for k, v in (("call_id", content.call_id), ("name", content.name),
                                                     ("arguments", content.arguments)) if v is not None})
            update: dict[str, Any] = {}
            if content.name is None:
                update["name"] = ""
                rec.approximate(source, pointer, "name", "name", "a function call needs a name: written as ''")
            if "arguments" in content.model_fields_set and not isinstance(content.arguments, dict):
                arguments, why = json_arguments(content.arguments)
                update["arguments"] = arguments
                rec.approximate(source, pointer, "arguments", "arguments", f"Gemini args are an object: {why}")
            return content.model_copy(update=update) if update else content
        if isinstance(content, FunctionResultContent):
            extra = dict(content.extra)
            result = content.result
            if extra.get(FORM_KEY) == "no-id" and "name" not in extra and isinstance(result, dict):
                return content  # a code execution result of ours
            if not isinstance(extra.get("name"), str):
                name = self.names.get(content.call_id or "")
                extra["name"] = name or ""
                rec.approximate(source, pointer, None, "function name",
                                "a Gemini function response names its function: "
                                + ("taken from its call" if name else "written as ''"))
            if not isinstance(result, dict):
                rec.approximate(source, pointer, "result", "result",
                                'a Gemini function response is an object: written as {"output": ...}')
                result = {"output": result}
            return build(FunctionResultContent, extra, result=result,
                         **({"call_id": content.call_id} if content.call_id is not None else {}))
        if isinstance(content, TextContent) and content.text is None:
            return content.model_copy(update={"text": ""})
        if isinstance(content, DataContent) and split_data_url(content.uri, content.media_type) is None:
            rec.drop(source, pointer, None, "data content", "Gemini takes inline data as base64 with its media type")
            return None
        if isinstance(content, UriContent) and not content.uri:
            rec.drop(source, pointer, None, "uri content", "it has no URI")
            return None
        return content


def lower(session: Session, *, origin: Origin | None = None, options: ConvertOptions | None = None) -> Lowered:
    """Map what Gemini contents cannot hold onto what they can, with losses.

    Only a leading system message of text is the ``systemInstruction``; a later one is
    written as a user turn.  Tool results are user parts.
    """
    rec = Recorder(origin)
    lowering = _Lowering(session)
    target = Target(NAME, "Gemini", ROLES, _nearest_role, _CONTENT_FIELDS,
                    session_extras=frozenset({"tools", "toolConfig", "tool_config", "generationConfig",
                                              "generation_config", "safetySettings", "safety_settings",
                                              "cachedContent", "cached_content", "model", "labels"}),
                    fix=lowering.fix, citations=False, tools=NAME)
    lowered = lower_messages(session, rec, target)
    messages = []
    for position, (message, _) in enumerate(lowered.messages):
        if message.role == "system" and (position > 0 or not all(isinstance(c, TextContent) for c in message.items)):
            lowered.approximate(rec, position, "role", "role 'system'", "Gemini has a system instruction only at "
                                "the start: written as a user turn")
            message = message.model_copy(update={"role": "user"})
        messages.append(message)
    result = Session(data=SessionData(conversation_history=tuple(group_by_role(messages, ROLES,
                                                                               frozenset({"system", "user"})))))
    forms = _forms(session) - {"response"}
    extras = dict(lowered.session_extras)
    extras.pop(FORM_KEY, None)
    if forms:
        extras[FORM_KEY] = " ".join(sorted(forms))
    return Lowered(with_extras(result, extras), rec.losses)


FORMAT = FunctionFormat(NAME, "Gemini generateContent", looks_like, validate, read, write, lower)
