"""Hypothesis strategies for the formats' documents, shared by the property tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

# Unknown property names: any Unicode text, after an "x" so that it never spells a known
# wire name (that would be a known property of the wrong type, tested apart) nor one of
# our snake_case attribute names (the documented limit in agentfolio.model.base).
unknown_keys = st.text(max_size=8).map(lambda rest: "x" + rest)

# Any integer (far beyond 64 bits) and any finite float (-0.0, 5e-324, 1e308 included).
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=2**63 - 2, max_value=2**64 + 2),
    st.floats(allow_nan=False, allow_infinity=False, width=64), st.sampled_from([-0.0, 1e308, -1e308, 5e-324]),
    st.text(max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8,
)


@st.composite
def rfc3339_times(draw: st.DrawFn) -> str:
    """Every RFC 3339 date-time spelling: ``T`` or ``t`` (or ISO 8601's space), any
    number of fraction digits, ``Z``/``z`` or an offset, a leap second; and the local
    times without an offset real states carry."""
    date = draw(st.dates())
    hour, minute = draw(st.integers(0, 23)), draw(st.integers(0, 59))
    second = draw(st.integers(0, 60))  # 60: a leap second, which RFC 3339 allows
    fraction = draw(st.one_of(st.just(""), st.text("0123456789", min_size=1, max_size=9).map(lambda d: "." + d)))
    zone = draw(st.one_of(st.sampled_from(["Z", "z", "+00:00", "-00:00", ""]), st.tuples(
        st.sampled_from("+-"), st.integers(0, 23), st.integers(0, 59)).map(lambda z: f"{z[0]}{z[1]:02d}:{z[2]:02d}")))
    separator = draw(st.sampled_from("Tt "))
    return f"{date.isoformat()}{separator}{hour:02d}:{minute:02d}:{second:02d}{fraction}{zone}"


timestamps = rfc3339_times()


def with_unknowns(base: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """A known object, sometimes carrying properties no schema knows."""
    return st.tuples(base, st.dictionaries(unknown_keys, json_values, max_size=2)).map(lambda p: {**p[0], **p[1]})


def _optional(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


text = st.text(max_size=40)
ids = st.text(alphabet="abcdef0123456789_", min_size=1, max_size=12)

known_contents = st.one_of(
    st.fixed_dictionaries({"$type": st.just("text"), "text": text}),
    st.fixed_dictionaries({"$type": st.just("reasoning")}, optional={"text": text}),
    st.fixed_dictionaries({"$type": st.just("functionCall"), "callId": ids, "name": ids},
                          optional={"arguments": st.dictionaries(st.text(max_size=5), json_values, max_size=3)}),
    st.fixed_dictionaries({"$type": st.just("functionResult"), "callId": ids}, optional={"result": json_values}),
    st.fixed_dictionaries({"$type": st.just("data"), "uri": st.just("data:text/plain;base64,aGk=")},
                          optional={"mediaType": st.just("text/plain")}),
    st.fixed_dictionaries({"$type": st.just("uri"), "uri": st.just("https://example.com/a.png"),
                           "mediaType": st.just("image/png")}),
    st.fixed_dictionaries({"$type": st.just("error")},
                          optional={"message": text, "errorCode": ids, "details": json_values}),
    st.fixed_dictionaries({"$type": st.just("hostedFile"), "fileId": ids}),
    st.fixed_dictionaries({"$type": st.just("hostedVectorStore"), "vectorStoreId": ids}),
    st.fixed_dictionaries({"$type": st.just("usage"), "usage": _optional(
        inputTokenCount=st.integers(0, 10**6), outputTokenCount=st.integers(0, 10**6))}),
    st.fixed_dictionaries({"$type": st.just("unknown"), "content": json_values}),
)
# A $type this release does not know, with whatever it carries: must come back whole.
unknown_contents = st.tuples(unknown_keys, st.dictionaries(unknown_keys, json_values, max_size=3)).map(
    lambda p: {"$type": "future" + p[0], **p[1]})
contents = st.one_of(with_unknowns(known_contents), unknown_contents)

messages = with_unknowns(st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "tool"])},
    optional={"authorName": text, "createdAt": timestamps, "contents": st.lists(contents, max_size=4),
              "messageId": ids, "extensionData": st.dictionaries(unknown_keys, json_values, max_size=2)},
))
_entry_common = {"correlationId": ids, "createdAt": timestamps, "messages": st.lists(messages, max_size=3)}
entries = st.one_of(
    with_unknowns(st.fixed_dictionaries({"$type": st.just("request")}, optional={
        **_entry_common, "responseType": st.sampled_from(["text", "json"]), "orchestrationId": ids,
        "responseSchema": st.dictionaries(st.text(max_size=5), json_values, max_size=2)})),
    with_unknowns(st.fixed_dictionaries({"$type": st.just("response")}, optional={
        **_entry_common, "usage": _optional(inputTokenCount=st.integers(0, 10**6),
                                            totalTokenCount=st.integers(0, 10**6))})),
    with_unknowns(st.fixed_dictionaries({"$type": st.sampled_from(["errorResponse", "compaction"])},
                                        optional=_entry_common)),
    st.tuples(unknown_keys, st.dictionaries(unknown_keys, json_values, max_size=3)).map(
        lambda p: {"$type": "future" + p[0], **p[1]}),
)
durable_states = with_unknowns(st.fixed_dictionaries({
    "schemaVersion": st.sampled_from(["1.0.0", "1.1.0", "1.2.0", "1.2.5", "1.9.0", "2.0.0"]),
    "data": with_unknowns(st.fixed_dictionaries({}, optional={"conversationHistory": st.lists(entries, max_size=4)})),
}))

# Contents the counts look at, in the shapes that change them: failures said every way a
# result says one, errors, usage contents, a first user text with blank lines.
failed_results = st.one_of(
    st.fixed_dictionaries({"$type": st.just("functionResult"), "callId": ids,
                           "result": st.sampled_from([{"error": "boom"}, {"isError": True}, {"is_error": 1},
                                                      {"error": "x", "a": 1, "b": 2, "c": 3}, "plain", None])}),
    st.fixed_dictionaries({"$type": st.just("functionResult"), "callId": ids}, optional={
        "success": st.booleans(), "exception": st.sampled_from(["", "Traceback"]), "error": st.sampled_from([0, "e"]),
        "is_error": st.booleans(), "status": st.sampled_from(["error", "ok"])}),
)
usage_objects = st.fixed_dictionaries({}, optional={name: st.one_of(st.none(), st.integers(0, 10**6))
                                                    for name in ("inputTokenCount", "outputTokenCount",
                                                                 "totalTokenCount")})
counted_contents = st.one_of(
    contents, failed_results, failed_results,
    st.fixed_dictionaries({"$type": st.just("usage"), "usage": usage_objects}),
    st.fixed_dictionaries({"$type": st.just("text"), "text": st.sampled_from(["", "  \n", "\n first\nsecond", "x"])}),
)
counted_messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system"]),
     "contents": st.lists(counted_contents, min_size=1, max_size=4)}, optional={"createdAt": timestamps})
counted_entries = st.one_of(
    entries,
    st.fixed_dictionaries({"$type": st.sampled_from(["request", "response", "errorResponse", "compaction"]),
                           "correlationId": st.sampled_from(["c1", "c2", "c3"]),
                           "messages": st.lists(counted_messages, min_size=1, max_size=3)},
                          optional={"createdAt": timestamps, "usage": usage_objects}),
)
outcome_maps = st.dictionaries(st.sampled_from(["c1", "c2", "c4"]), st.fixed_dictionaries(
    {"outcome": st.just("completed")}, optional={"response": st.fixed_dictionaries({}, optional={
        "usage": usage_objects, "messages": st.just([])})}), max_size=3)


@st.composite
def counted_states(draw: st.DrawFn, *, outcomes: bool = True) -> dict[str, Any]:
    """Durable states holding what the facts count (``outcomes``: 2.0 states with
    outcomes of requests, which count towards tokens when the history does not answer
    them), most of them valid."""
    version = draw(st.sampled_from(["1.0.0", "1.1.0", "1.2.0", "1.9.0", "2.0.0"]))
    data: dict[str, Any] = {"conversationHistory": draw(st.lists(counted_entries, max_size=6))}
    if version == "2.0.0":
        data |= {"terminalResults": draw(outcome_maps) if outcomes else {}, "completionReceipts": {}}
    return {"schemaVersion": version, "data": data}
