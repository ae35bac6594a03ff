"""Large JSON columns kept compressed at rest, read back as the JSON bytes written.

A span's payload (an OTel span is its whole JSON, ~1-2 KB with GenAI messages) was the
larger part of every stored span.  No SQL reads inside these columns, so they can hold a
zstd frame instead of the text: :class:`PackedJson` compresses a value of at least
:data:`PACK_FROM_BYTES` when that makes it smaller, and gives every reader the JSON bytes
back.

A packed value is ``00``, the number of the dictionary it was compressed with, then the
zstd frame.  JSON never starts with a zero byte, so values stored before (plain JSON)
read as they always did, and a column may hold both.  A dictionary primes the
compressor with text the values share: dictionary 1 is the skeleton of an OTel GenAI
span (its field and attribute names, the message structure, the SDK's resource), which
every span repeats and which compressing one span alone cannot exploit (~280 bytes less
per span, prose or not).  A dictionary's bytes can never change once values use it (a
test pins them); a better one is a new number, and the old ones stay for reading.

Rows written through SQLAlchemy pack and unpack through the column type; the batch
inserts that go straight to the driver (:func:`agentfolio.store.registry.bulk.insert_many`)
pack through :func:`pack` themselves.  SQL run by hand (a migration, a report) that
needs the JSON must unpack too.
"""

from __future__ import annotations

import threading
from typing import Any

import sqlalchemy as sa
import zstandard

__all__ = ["DICTIONARIES", "PACK_FROM_BYTES", "PackedJson", "pack", "unpack"]

#: Values shorter than this stay as they are (a frame's header and the call cost more than
#: what compressing a small document saves).
PACK_FROM_BYTES = 256
#: zstd level 1: a 1.7 KB span payload packs in ~10-20 µs to about a sixth (repetitive
#: text) or a third (prose) of its size; higher levels cost more and saved nothing more here.
LEVEL = 1
#: Most bytes one value unpacks to (a frame records its size; a larger one is not ours).
MAX_UNPACKED_BYTES = 256 * 1024 * 1024
#: Dictionary number → its bytes (raw content: what a value is compressed "after").
DICTIONARIES: dict[int, bytes] = {1: (
    b'{"trace_id":"","span_id":"","parent_span_id":"","name":"chat ","kind":"CLIENT","start_time_unix_'
    b'nano":0,"end_time_unix_nano":0,"status":{"code":"UNSET","message":""},"attributes":{"gen_ai.oper'
    b'ation.name":"chat","gen_ai.request.model":"","gen_ai.system":"openai","gen_ai.provider.name":"",'
    b'"gen_ai.response.model":"","gen_ai.response.id":"","gen_ai.response.finish_reasons":["stop"],"ge'
    b'n_ai.conversation.id":"","gen_ai.agent.name":"","gen_ai.agent.id":"","gen_ai.tool.name":"","gen_'
    b'ai.tool.call.id":"","gen_ai.input.messages":"[{\\"role\\": \\"user\\", \\"parts\\": [{\\"type\\": \\"text'
    b'\\", \\"content\\": \\"\\"}]}]","gen_ai.output.messages":"[{\\"role\\": \\"assistant\\", \\"parts\\": [{\\"t'
    b'ype\\": \\"text\\", \\"content\\": \\"\\"}], \\"finish_reason\\": \\"stop\\"}]","gen_ai.system_instructions'
    b'":"","gen_ai.usage.input_tokens":0,"gen_ai.usage.output_tokens":0,"server.address":"","server.po'
    b'rt":443,"http.response.status_code":200,"openinference.span.kind":"LLM","llm.model_name":"","ses'
    b'sion.id":""},"events":[],"links":[],"resource":{"attributes":{"telemetry.sdk.language":"python",'
    b'"telemetry.sdk.name":"opentelemetry","telemetry.sdk.version":"1.","service.instance.id":"","serv'
    b'ice.name":"","service.version":"","deployment.environment":"","host.name":"","process.pid":0,"pr'
    b'ocess.runtime.name":"cpython"},"schema_url":null},"scope":{"name":"opentelemetry.instrumentation'
    b'.","version":"","attributes":{},"schema_url":null},"flags":256}')}
#: The dictionary new values are packed with.
CURRENT = 1
_MARK = 0  # the first byte of every packed value

_DICTS = {number: zstandard.ZstdCompressionDict(content, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
          for number, content in DICTIONARIES.items()}
_HEADER = bytes((_MARK, CURRENT))
# zstandard's compressor and decompressor objects are not safe to share between threads.
_local = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    found: zstandard.ZstdCompressor | None = getattr(_local, "compressor", None)
    if found is None:
        found = _local.compressor = zstandard.ZstdCompressor(level=LEVEL, dict_data=_DICTS[CURRENT])
    return found


def _decompressor(number: int) -> zstandard.ZstdDecompressor:
    found: dict[int, zstandard.ZstdDecompressor] | None = getattr(_local, "decompressors", None)
    if found is None:
        found = _local.decompressors = {}
    decompressor = found.get(number)
    if decompressor is None:
        dictionary = _DICTS.get(number)
        if dictionary is None:
            raise ValueError(f"a packed value names dictionary {number}, which this version does not have")
        decompressor = found[number] = zstandard.ZstdDecompressor(dict_data=dictionary)
    return decompressor


def pack(value: bytes | None) -> bytes | None:
    """``value`` (JSON bytes) as stored: packed when that is smaller, else as it is."""
    if value is None or len(value) < PACK_FROM_BYTES or value[0] == _MARK:
        return value
    packed = _HEADER + _compressor().compress(value)
    return packed if len(packed) < len(value) else value


def unpack(value: bytes | None) -> bytes | None:
    """What :func:`pack` was given, from a value it returned (or one stored before it)."""
    if not value or value[0] != _MARK:
        return value
    return _decompressor(value[1]).decompress(bytes(value[2:]), max_output_size=MAX_UNPACKED_BYTES)


class PackedJson(sa.types.TypeDecorator[bytes]):
    """A ``LargeBinary`` column of JSON bytes, packed at rest (the same type in the
    database: no migration, old rows read unchanged)."""

    impl = sa.LargeBinary
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: sa.Dialect) -> bytes | None:
        return pack(bytes(value) if isinstance(value, (bytearray, memoryview)) else value)

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> bytes | None:
        return unpack(value)
