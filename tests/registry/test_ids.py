"""IDs: the public PFID layout, time order, monotonic generation, clear refusals."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentfolio.registry import ids
from agentfolio.registry.errors import RegistryError

# Test vectors from the public PFID fixture set (timestamp, partition, random hex, id).
VECTORS = [
    (0, 0, "00000000000000000000", "00000000000000000000000000000000"),
    (0, 0, "ffffffffffffffffffff", "0000000000000000zzzzzzzzzzzzzzzz"),
    (0, 1073741823, "00000000000000000000", "0000000000zzzzzz0000000000000000"),
    (281474976710655, 1073741823, "ffffffffffffffffffff", "7zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"),
    (1234567890000, 123456789, "00000000000000000000", "013xrzp12g3nqk8n0000000000000000"),
    (211106355004229, 786718108, "6c68bce8edd51c6b9343", "60003msgt5qe8qcwdhmbst7dtme6q4t3"),
    (7673636363919, 458800392, "4b75a2fd01deca33a3c9", "06zam5x7mfdnhf889dtt5z81vv5378y9"),
]

timestamps = st.integers(0, ids.MAX_TIMESTAMP)
partitions = st.integers(0, ids.MAX_PARTITION)
randoms = st.integers(0, ids.MAX_RANDOM)


@pytest.mark.parametrize("timestamp,partition,random_hex,expected", VECTORS)
def test_encodes_the_published_vectors(timestamp, partition, random_hex, expected):
    assert ids.encode(timestamp, partition, int(random_hex, 16)) == expected
    parsed = ids.decode(expected)
    assert (parsed.timestamp_ms, parsed.partition, parsed.randomness) == (timestamp, partition, int(random_hex, 16))


def test_seed_example_id_is_valid_and_dates_from_2009():
    parsed = ids.decode("013xrzp12g3nqk8ns6jadrqmpgrjkeny")
    assert parsed.timestamp_ms == 1234567890000
    assert parsed.created_at.year == 2009


@given(timestamps, partitions, randoms)
def test_round_trip_and_format(timestamp, partition, randomness):
    value = ids.encode(timestamp, partition, randomness)
    assert ids.ID_PATTERN.fullmatch(value)
    assert ids.is_id(value)
    assert ids.decode(value) == ids.ParsedId(timestamp, partition, randomness)


@given(timestamps, timestamps, partitions, partitions, randoms, randoms)
def test_string_order_is_time_order(t1, t2, p1, p2, r1, r2):
    a, b = ids.encode(t1, p1, r1), ids.encode(t2, p2, r2)
    if t1 < t2:
        assert a < b
    elif t1 > t2:
        assert a > b


@given(st.lists(st.integers(0, 5), min_size=1, max_size=200), partitions)
@settings(max_examples=50)
def test_generator_is_strictly_monotonic_per_partition_even_when_the_clock_stalls_or_steps_back(steps, partition):
    now = [1_700_000_000_000]
    clock_moves = iter(steps)

    def clock():
        # 0 = same millisecond, 1 = clock stepped back, else forward.
        move = next(clock_moves, 2)
        now[0] += {0: 0, 1: -3}.get(move, move)
        return now[0]

    generator = ids.IdGenerator(clock)
    made = [generator.new(partition) for _ in steps]
    assert made == sorted(made)
    assert len(set(made)) == len(made)
    assert all(ids.decode(value).partition == partition for value in made)


def test_new_ids_are_valid_unique_and_related_ids_share_a_partition():
    made = {ids.new_id() for _ in range(2000)}
    assert len(made) == 2000 and all(ids.is_id(value) for value in made)
    first = next(iter(made))
    assert ids.decode(ids.related_id(first)).partition == ids.decode(first).partition


@pytest.mark.parametrize("value,reason", [
    ("013XRZP12G3NQK8NS6JADRQMPGRJKENY", "lowercase"),
    ("813xrzp12g3nqk8ns6jadrqmpgrjkeny", "first character must be 0-7"),
    ("013xrzp12g3nqk8ns6jadrqmpgrjken", "expected 32 characters, found 31"),
    ("013xrzp12g3nqk8ns6jadrqmpgrjkeni", "'i' is not a Crockford base32 character"),
    ("agent_123", "expected 32 characters"),
    (123, "must be a string"),
])
def test_invalid_ids_say_why_and_name_the_field(value, reason):
    assert not ids.is_id(value)
    with pytest.raises(RegistryError) as caught:
        ids.validate_id(value, "details.agent_id")
    assert caught.value.code == "invalid_value"
    assert "details.agent_id" in caught.value.message and reason in caught.value.message


def test_missing_id_is_required_value():
    with pytest.raises(RegistryError) as caught:
        ids.validate_id(None, "agent_instance_id")
    assert caught.value.code == "required_value"


def test_encode_refuses_out_of_range_parts():
    for args in [(ids.MAX_TIMESTAMP + 1, 0, 0), (0, ids.MAX_PARTITION + 1, 0), (0, 0, ids.MAX_RANDOM + 1), (-1, 0, 0)]:
        with pytest.raises(ValueError):
            ids.encode(*args)
