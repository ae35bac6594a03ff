"""Large JSON columns kept compressed at rest, read back as the JSON bytes written.

A span's payload (an OTel span is its whole JSON, ~1-2 KB with GenAI messages) was the
larger part of every stored span.  No SQL reads inside these columns, so they can hold a
zstd frame instead of the text: :class:`PackedJson` compresses a value of at least
:data:`PACK_FROM_BYTES` when that makes it smaller, and gives every reader the JSON bytes
back.  A zstd frame starts with the bytes ``28 B5 2F FD``, and JSON never starts with
``(``, so values stored before (plain JSON) read as they always did, and a column may
hold both.

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

__all__ = ["PACK_FROM_BYTES", "PackedJson", "pack", "unpack"]

#: Values shorter than this stay as they are (a frame's header and the call cost more than
#: what compressing a small document saves).
PACK_FROM_BYTES = 256
#: zstd level 1: a 1.7 KB span payload packs in ~9 µs to about a third (repetitive text) or
#: a half (prose) of its size; higher levels cost more and saved nothing more here.
LEVEL = 1
_MAGIC = b"\x28\xb5\x2f\xfd"
#: Most bytes one value unpacks to (a frame records its size; a larger one is not ours).
MAX_UNPACKED_BYTES = 256 * 1024 * 1024

# zstandard's compressor and decompressor objects are not safe to share between threads.
_local = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    found: zstandard.ZstdCompressor | None = getattr(_local, "compressor", None)
    if found is None:
        found = _local.compressor = zstandard.ZstdCompressor(level=LEVEL)
    return found


def _decompressor() -> zstandard.ZstdDecompressor:
    found: zstandard.ZstdDecompressor | None = getattr(_local, "decompressor", None)
    if found is None:
        found = _local.decompressor = zstandard.ZstdDecompressor()
    return found


def pack(value: bytes | None) -> bytes | None:
    """``value`` (JSON bytes) as stored: a zstd frame when that is smaller, else as it is."""
    if value is None or len(value) < PACK_FROM_BYTES or value[:4] == _MAGIC:
        return value
    packed = _compressor().compress(value)
    return packed if len(packed) < len(value) else value


def unpack(value: bytes | None) -> bytes | None:
    """What :func:`pack` was given, from a value it returned (or one stored before it)."""
    if value is None or value[:4] != _MAGIC:
        return value
    return _decompressor().decompress(bytes(value), max_output_size=MAX_UNPACKED_BYTES)


class PackedJson(sa.types.TypeDecorator[bytes]):
    """A ``LargeBinary`` column of JSON bytes, packed at rest (the same type in the
    database: no migration, old rows read unchanged)."""

    impl = sa.LargeBinary
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: sa.Dialect) -> bytes | None:
        return pack(bytes(value) if isinstance(value, (bytearray, memoryview)) else value)

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> bytes | None:
        return unpack(value)
