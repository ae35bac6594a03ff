"""Prefactor-style IDs: 32 lowercase Crockford base32 characters, time-ordered.

Layout (the public PFID format, which the hosted API and its SDK examples use):

    48 bits  milliseconds since the Unix epoch
    30 bits  partition (0 … 1,073,741,823)
    80 bits  random

158 bits, written big-endian as 32 base32 digits of 5 bits each (160 bits), so the top
two bits are always zero and the first character is ``0``-``7``:
``^[0-7][0-9abcdefghjkmnpqrstvwxyz]{31}$``.  Characters 0-9 are the timestamp, 10-15
the partition, 16-31 the random part, so IDs sort by creation time as plain strings.

Partitions group related rows: :func:`related_id` makes an ID in the same partition as
another (an account's resources can all share the account's partition).

:class:`IdGenerator` is monotonic per partition: two IDs made in the same millisecond
for the same partition still sort in creation order (the random part is incremented,
as ULID's monotonic mode does), and a clock that steps backwards never produces an ID
that sorts before one already issued.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from agentfolio.registry.errors import RegistryError, invalid, required

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
ID_PATTERN = re.compile(r"^[0-7][0-9abcdefghjkmnpqrstvwxyz]{31}$")
ID_LENGTH = 32

TIMESTAMP_BITS = 48
PARTITION_BITS = 30
RANDOM_BITS = 80
MAX_TIMESTAMP = (1 << TIMESTAMP_BITS) - 1
MAX_PARTITION = (1 << PARTITION_BITS) - 1
MAX_RANDOM = (1 << RANDOM_BITS) - 1

_DECODE = {char: value for value, char in enumerate(ALPHABET)}
#: Every two digits, by their 10-bit value.
_PAIRS = tuple(first + second for first in ALPHABET for second in ALPHABET)


@dataclass(frozen=True, slots=True)
class ParsedId:
    timestamp_ms: int
    partition: int
    randomness: int

    @property
    def created_at(self) -> datetime:
        return datetime.fromtimestamp(self.timestamp_ms / 1000, tz=UTC)


def encode(timestamp_ms: int, partition: int, randomness: int) -> str:
    """The ID for these three parts; each must be within its bit width."""
    if not 0 <= timestamp_ms <= MAX_TIMESTAMP:
        raise ValueError(f"timestamp {timestamp_ms} is outside 0…{MAX_TIMESTAMP}")
    if not 0 <= partition <= MAX_PARTITION:
        raise ValueError(f"partition {partition} is outside 0…{MAX_PARTITION}")
    if not 0 <= randomness <= MAX_RANDOM:
        raise ValueError(f"random part {randomness} is outside 0…{MAX_RANDOM}")
    return encode_80_bits((timestamp_ms << PARTITION_BITS) | partition) + encode_80_bits(randomness)


def encode_80_bits(value: int) -> str:
    """16 digits of an 80-bit value: an ID's first half (timestamp and partition) or its
    second (the random part).  Two digits a lookup: a digit at a time cost four times
    more, and so did ``base64.b32encode`` (a Python loop too) with a translation."""
    pairs = _PAIRS
    return (pairs[value >> 70] + pairs[(value >> 60) & 1023] + pairs[(value >> 50) & 1023]
            + pairs[(value >> 40) & 1023] + pairs[(value >> 30) & 1023] + pairs[(value >> 20) & 1023]
            + pairs[(value >> 10) & 1023] + pairs[value & 1023])


def is_id(value: object) -> bool:
    return isinstance(value, str) and ID_PATTERN.fullmatch(value) is not None


def decode(value: str) -> ParsedId:
    """The parts of a valid ID; ``ValueError`` (saying why) for anything else."""
    problem = describe_invalid(value)
    if problem:
        raise ValueError(problem)
    number = 0
    for char in value:
        number = (number << 5) | _DECODE[char]
    return ParsedId(
        timestamp_ms=number >> (PARTITION_BITS + RANDOM_BITS),
        partition=(number >> RANDOM_BITS) & MAX_PARTITION,
        randomness=number & MAX_RANDOM,
    )


def describe_invalid(value: object) -> str | None:
    """Why ``value`` is not an ID, in words; ``None`` when it is one."""
    if not isinstance(value, str):
        return f"must be a string ID, found {type(value).__name__}"
    if ID_PATTERN.fullmatch(value):
        return None
    shown = value if len(value) <= 40 else value[:39] + "…"
    if len(value) != ID_LENGTH:
        return f"{shown!r} is not a valid ID: expected {ID_LENGTH} characters, found {len(value)}"
    if value[0] not in "01234567":
        return f"{shown!r} is not a valid ID: the first character must be 0-7"
    bad = next((char for char in value if char not in _DECODE), None)
    if bad is not None:
        hint = " (IDs are lowercase)" if bad.lower() in _DECODE else ""
        return f"{shown!r} is not a valid ID: {bad!r} is not a Crockford base32 character{hint}"
    return f"{shown!r} is not a valid ID"


def validate_id(value: object, field: str = "id") -> str:
    """``value`` if it is an ID, else a :class:`RegistryError` naming ``field``."""
    if value is None:
        raise RegistryError(required(field))
    problem = describe_invalid(value)
    if problem:
        raise RegistryError(invalid(field, problem))
    return value  # type: ignore[return-value]


def random_partition() -> int:
    return secrets.randbits(PARTITION_BITS)


class IdGenerator:
    """Thread-safe, monotonic-per-partition ID factory.  ``clock`` returns milliseconds."""

    def __init__(self, clock: Callable[[], int] | None = None, *, remembered_partitions: int = 4096) -> None:
        self._clock = clock or (lambda: time.time_ns() // 1_000_000)
        self._lock = threading.Lock()
        self._last: OrderedDict[int, tuple[int, int]] = OrderedDict()
        self._remembered = remembered_partitions

    def new(self, partition: int | None = None) -> str:
        if partition is None:
            partition = random_partition()
        if not 0 <= partition <= MAX_PARTITION:
            raise ValueError(f"partition {partition} is outside 0…{MAX_PARTITION}")
        now = self._clock()
        with self._lock:
            last = self._last.get(partition)
            if last is not None and now <= last[0]:
                timestamp, randomness = last[0], last[1] + 1
                if randomness > MAX_RANDOM:  # 2**80 IDs in one millisecond: borrow the next one
                    timestamp, randomness = timestamp + 1, secrets.randbits(RANDOM_BITS - 1)
            else:
                # Leave headroom so increments within the millisecond never overflow.
                timestamp, randomness = now, secrets.randbits(RANDOM_BITS - 1)
            self._last[partition] = (timestamp, randomness)
            self._last.move_to_end(partition)
            while len(self._last) > self._remembered:
                self._last.popitem(last=False)
        return encode(timestamp, partition, randomness)

    def related(self, existing: str) -> str:
        """A new ID in the same partition as ``existing``."""
        return self.new(decode(existing).partition)


_DEFAULT = IdGenerator()


def new_id(partition: int | None = None) -> str:
    """A new time-ordered ID (random partition unless one is given)."""
    return _DEFAULT.new(partition)


def related_id(existing: str) -> str:
    """A new ID sharing ``existing``'s partition."""
    return _DEFAULT.related(existing)


def id_created_at(value: str) -> datetime:
    return decode(value).created_at
