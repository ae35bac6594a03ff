"""Reading files: numbers come through every format and every conversion unchanged."""

from __future__ import annotations

import pytest

from agentfolio import _json
from agentfolio.formats import durable_state
from agentfolio.formats.convert import convert
from agentfolio.formats.errors import FormatError
from agentfolio.formats.jsonio import load_json_file, read_bytes
from agentfolio.formats.registry import names

BIG = 123456789012345678901234567890
PAST_U64 = 18446744073709551617
BELOW_I64 = -9223372036854775809


def state_with_big_numbers() -> bytes:
    return (b'{"schemaVersion":"1.1.0","data":{"conversationHistory":['
            b'{"$type":"response","correlationId":"c1","createdAt":"2025-01-01T00:00:01Z","messages":['
            b'{"role":"assistant","contents":[{"$type":"functionCall","callId":"a","name":"f","arguments":'
            b'{"n":123456789012345678901234567890,"m":18446744073709551617,"k":-9223372036854775809}},'
            b'{"$type":"functionResult","callId":"a","result":{"n":123456789012345678901234567890}}]}]}]}}')


def test_durable_state_keeps_integers_beyond_64_bits(tmp_path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(state_with_big_numbers())
    document = load_json_file(path)
    arguments = document["data"]["conversationHistory"][0]["messages"][0]["contents"][0]["arguments"]
    assert arguments == {"n": BIG, "m": PAST_U64, "k": BELOW_I64}
    assert all(type(value) is int for value in arguments.values())
    read = durable_state.read(document)
    assert _json.loads(durable_state.dumps(read.session)) == document
    assert durable_state.dumps(read.session, indent=False) == state_with_big_numbers()


@pytest.mark.parametrize("target", [name for name in names() if name != "durable-state"])
def test_every_conversion_writes_the_same_integers(target: str) -> None:
    document = _json.loads(state_with_big_numbers())
    conversion = convert(document, to=target)
    written = _json.dumps(conversion.result).decode()
    for number in (BIG, PAST_U64, BELOW_I64):
        assert str(number) in written.replace("\\", ""), (target, written)
    assert "e+" not in written


@pytest.mark.parametrize("extra", [0, 1, 70_000])
def test_a_pipe_is_read_whole_up_to_the_limit_and_refused_past_it(extra: int) -> None:
    """A pipe says size 0: it is read on to one byte past the limit, never further."""
    import os
    import threading

    limit = 100_000
    payload = b"x" * (limit + extra)
    reader, writer = os.pipe()

    def feed() -> None:
        rest = memoryview(payload)
        try:
            while rest:
                rest = rest[os.write(writer, rest):]
        except BrokenPipeError:  # the reader stopped at the limit
            pass
        finally:
            os.close(writer)

    feeding = threading.Thread(target=feed)
    feeding.start()
    try:
        if extra:
            with pytest.raises(FormatError, match="over the 100,000-byte limit"):
                read_bytes(f"/dev/fd/{reader}", max_bytes=limit)
        else:
            assert read_bytes(f"/dev/fd/{reader}", max_bytes=limit) == payload
    finally:
        os.close(reader)
        feeding.join()
