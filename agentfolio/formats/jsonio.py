"""Reading JSON from files and bytes with one-line errors instead of tracebacks or hangs.

Every reader goes through here, so every format refuses bad input the same way: a
directory, an empty file, bytes that are not UTF-8, malformed JSON (with line and
column), nesting past orjson's 1,024 levels, or a file above the size limit.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from agentfolio import _json
from agentfolio.formats.errors import FormatError

# Large enough for a 100,000-entry history, small enough that a stray log dump is
# refused at once instead of filling memory.  Callers may raise it.
DEFAULT_MAX_BYTES = 128 * 1024 * 1024


def read_bytes(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of a file, or a FormatError naming it: missing, a directory, too large."""
    source = str(path)
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > max_bytes:
                raise FormatError(f"file is {size:,} bytes, over the {max_bytes:,}-byte limit "
                                  "(raise it with --max-bytes)", source=source)
            # The size it has, and one byte more: a file that grew, or a pipe (size 0), is
            # read on up to one byte past the limit, so it is still bounded.  (Asking for
            # the limit at once made Python allocate that much for every file.)
            data = handle.read(size + 1)
            if len(data) > size:
                data += handle.read(max_bytes + 1 - len(data))
    except FormatError:
        raise
    except IsADirectoryError:
        raise FormatError("is a directory, not a file", source=source) from None
    except FileNotFoundError:
        raise FormatError("no such file", source=source) from None
    except PermissionError:
        raise FormatError("permission denied", source=source) from None
    except OSError as error:
        raise FormatError(error.strerror or str(error), source=source) from None
    if len(data) > max_bytes:
        raise FormatError(f"file is over the {max_bytes:,}-byte limit (raise it with --max-bytes)", source=source)
    return data


def parse_json(data: bytes | str, *, source: str | None = None) -> Any:
    """Parse JSON text; errors say where (line and column) and what, in one line."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if not data or data.isspace():  # (not strip(): that copies the whole document)
        raise FormatError("empty document: expected JSON", source=source)
    try:
        with gc_paused():
            return _json.loads(data)
    except orjson.JSONDecodeError as error:
        raise FormatError(_describe_decode_error(data, error), source=source) from None


def load_json_file(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    return parse_json(read_bytes(path, max_bytes=max_bytes), source=str(path))


def _describe_decode_error(data: bytes, error: orjson.JSONDecodeError) -> str:
    reason = error.msg
    if "recursion limit" in reason.lower() or "depth limit" in reason.lower():
        return "nesting too deep: JSON documents may nest at most 1,024 levels"
    if "infinity" in reason.lower() or "digits" in reason:
        return (f"line {error.lineno} column {error.colno}: a number is too large: a fraction or exponent beyond "
                "±1.8e308, or an integer of more than 4,300 digits")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as bad:
        line = data.count(b"\n", 0, bad.start) + 1
        column = bad.start - (data.rfind(b"\n", 0, bad.start) + 1) + 1
        return f"line {line} column {column} (byte {bad.start}): not UTF-8 text (byte 0x{data[bad.start]:02x})"
    return f"line {error.lineno} column {error.colno}: malformed JSON: {reason}"


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large document is read.

    Parsing and validating allocate hundreds of thousands of containers and create no
    reference cycles, yet each allocation burst triggers collections that walk the
    whole heap: on a 6 MB history they cost about as much as the parse itself.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
