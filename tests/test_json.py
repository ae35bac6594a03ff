"""The JSON kernel: every number read is the number written, at orjson's speed when it can."""

from __future__ import annotations

import json
import math
import re

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentfolio import _json
from agentfolio.formats.errors import FormatError
from agentfolio.formats.jsonio import parse_json

# Every JSON value Python can hold, numbers unbounded (floats finite: JSON has no NaN).
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_value_round_trips_exactly(value: object) -> None:
    text = _json.dumps(value)
    back = _json.loads(text)
    assert back == value
    # The same number, of the same type: 2**70 stays an int, 1e308 a float, -0.0 keeps its sign.
    assert json.dumps(back, sort_keys=True) == json.dumps(value, sort_keys=True)


# Up to 4,300 digits (Python's own limit): past a double's range orjson stops, and the
# standard library reads the document instead.
big = st.integers(min_value=2**64, max_value=10**4300 - 1)
@given(big | big.map(lambda n: -n) | st.integers(min_value=-10**400, max_value=-2**63 - 1))
def test_integers_beyond_64_bits_stay_integers(n: int) -> None:
    document = f'{{"n": {n}, "list": [{n}, 1.5]}}'.encode()
    value = _json.loads(document)
    assert type(value["n"]) is int and value["n"] == n and value["list"] == [n, 1.5]
    assert str(n).encode() in _json.dumps(value)
    assert _json.loads(_json.dumps(value, indent=True)) == value


def test_orjson_alone_would_change_them() -> None:
    # The reason the kernel exists: orjson turns these into floats and refuses to write them.
    assert isinstance(orjson.loads(b"18446744073709551617"), float)
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(2**64)
    assert _json.loads(b"18446744073709551617") == 2**64 + 1


def test_signed_zero_and_extreme_floats() -> None:
    value = _json.loads(b"[-0.0, 1e308, -1e308, 5e-324, 12345678901234567890.5]")
    assert math.copysign(1, value[0]) == -1 and value[1] == 1e308 and value[3] == 5e-324
    assert value[4] == 12345678901234567890.5


def test_digit_runs_inside_strings_change_nothing() -> None:
    value = _json.loads(b'{"id": "12345678901234567890123", "n": 1}')
    assert value == {"id": "12345678901234567890123", "n": 1}


def test_malformed_is_refused_on_both_paths() -> None:
    for text in (b'{"n": 12345678901234567890123,}', b"[NaN, 12345678901234567890123]",
                 b'["\\ud800", 12345678901234567890123]'):
        with pytest.raises(orjson.JSONDecodeError):
            _json.loads(text)


def test_deepest_document_orjson_reads_is_read_exactly() -> None:
    text = '{"a":' * 1023 + "123456789012345678901234567890" + "}" * 1023
    value = _json.loads(text)
    for _ in range(1023):
        value = value["a"]
    assert value == 123456789012345678901234567890


def test_a_number_nothing_can_hold_is_refused_clearly() -> None:
    assert parse_json(b'{"n": ' + b"9" * 400 + b"}") == {"n": int("9" * 400)}
    for text in (b"[1e400]", b"[" + b"9" * 400 + b", 1e400]", b"[" + b"9" * 4301 + b"]"):
        with pytest.raises(FormatError, match="too large"):
            parse_json(text)


def test_what_orjson_refuses_after_a_huge_integer_is_still_refused() -> None:
    huge = b"9" * 400
    for text in (b"[" + huge + b', "\\ud800"]', b"[" + huge + b", NaN]", b"[" + huge + b", Infinity]",
                 b"[" + huge + b"," + b"[" * 1100 + b"]" * 1100 + b"]", b"[" + huge + b",]"):
        with pytest.raises(orjson.JSONDecodeError):
            _json.loads(text)


@pytest.mark.parametrize("big", [1, 2**70], ids=["orjson", "stdlib-fallback"])
def test_dumps_default_converts_what_json_cannot_hold_on_both_paths(big: int) -> None:
    written = _json.dumps({"set": {3}, "n": big, "at": object()}, default=lambda v: sorted(v) if isinstance(v, set)
                          else "opaque", option=orjson.OPT_SORT_KEYS)
    assert json.loads(written) == {"at": "opaque", "n": big, "set": [3]}


def test_registry_input_fingerprint_serializes_unusual_values() -> None:
    from dataclasses import dataclass

    from agentfolio.app.registry.inputs import fingerprint

    @dataclass
    class Command:
        value: object
        OPERATION = "demo"  # unannotated: a class attribute, not a field

    # repr stands in for values JSON cannot hold; equal inputs fingerprint alike, different ones not.
    assert fingerprint(Command(2**70)) == fingerprint(Command(2**70))
    assert fingerprint(Command(frozenset({1}))) != fingerprint(Command(frozenset({2})))


def test_digits_inside_strings_do_not_send_a_document_to_the_second_parse(monkeypatch) -> None:
    # Hex ids and hashes often hold 19 digits in a row; only a number that long can be an
    # integer beyond 64 bits, so only such a number costs the standard library's parse.
    def second_parse(*args, **kwargs):
        raise AssertionError("parsed twice")

    monkeypatch.setattr(_json, "_stdlib_loads", second_parse)
    document = b'{"correlationId":"6523aa1dcc9745773751351264006901","n":[1, 2.5e3]}'
    assert _json.loads(document) == {"correlationId": "6523aa1dcc9745773751351264006901", "n": [1, 2500.0]}
    with pytest.raises(AssertionError, match="parsed twice"):
        _json.loads(b'{"n": 1234567890123456789012}')


# What a long number is, as one pattern: a run of 19 digits starting a value.
_WHOLE_PATTERN = re.compile(rb"(?:^|[:\[,])[ \t\r\n]*-?[0-9]{19}")


@given(st.lists(st.sampled_from(["1" * 19, "2", "-", " ", "\n", ":", "[", ",", "\"", ".", "e", "a"]), max_size=40),
       st.sampled_from([_json._CHUNK, 5, 23]))
def test_the_long_number_scan_finds_what_the_whole_pattern_finds(pieces: list[str], chunk: int) -> None:
    # The scan looks behind each run of digits, a chunk of text at a time, instead of
    # matching the whole pattern at every byte; both must agree on any text: runs across
    # chunk edges, and past the number of runs it looks behind (many digit strings first).
    many_strings = "[" + ",".join(['"' + "7" * 19 + '"'] * (_json._RUNS_LOOKED_BEHIND + 1)) + ","
    default, _json._CHUNK = _json._CHUNK, chunk
    try:
        for text in ("".join(pieces), many_strings + "".join(pieces)):
            raw = text.encode()
            assert _json._has_long_number(raw) is (_WHOLE_PATTERN.search(raw) is not None), text
    finally:
        _json._CHUNK = default


def test_long_numbers_after_many_digit_strings_still_take_the_exact_parse() -> None:
    strings = ",".join(f'"{index:020d}"' for index in range(200))
    for number in ("123456789012345678901234567890", "-123456789012345678901234567890"):
        for spacing in ("", " ", "\n\t "):
            value = _json.loads(f"[{strings},{spacing}{number}]")
            assert value[-1] == int(number) and value[0] == "0" * 20
    assert _json.loads(b"123456789012345678901234567890") == 123456789012345678901234567890
