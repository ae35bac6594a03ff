"""Paging and sorting parameters in both spellings clients use, and the pagination object."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentfolio.registry.errors import RegistryError
from agentfolio.registry.listing import Sorting, list_body, page_info, parse_page_request

SORTABLE = ("id", "name", "inserted_at")


def test_defaults_and_bracket_parameters():
    assert parse_page_request({}, SORTABLE).page_size == 25
    request = parse_page_request({"pagination[offset]": "100", "pagination[page_size]": "100",
                                  "sorting[field]": "id", "sorting[direction]": "desc"}, SORTABLE)
    assert (request.offset, request.page_size, request.sorting) == (100, 100, Sorting("id", "desc"))


def test_sdk_compact_sorting_string():
    assert parse_page_request({"sorting": "-id"}, SORTABLE).sorting == Sorting("id", "desc")
    assert parse_page_request({"sorting": "name"}, SORTABLE).sorting == Sorting("name", "asc")


@pytest.mark.parametrize("query,field", [
    ({"pagination[page_size]": "101"}, "pagination[page_size]"),
    ({"pagination[page_size]": "0"}, "pagination[page_size]"),
    ({"pagination[offset]": "-1"}, "pagination[offset]"),
    ({"pagination[offset]": "ten"}, "pagination[offset]"),
    ({"pagination[page_size]": ""}, "pagination[page_size]"),  # given but empty: not the default
    ({"pagination[offset]": " "}, "pagination[offset]"),
    ({"sorting[field]": "password"}, "sorting[field]"),
    ({"sorting[direction]": "up"}, "sorting[direction]"),
    ({"sorting": "password"}, "sorting"),
    ({"sorting": " name"}, "sorting"),  # as the document's pattern says: no spaces
    ({"sorting[field]": "name", "sorting": "name\x00"}, "sorting"),  # refused even where sorting[field] wins
    ({"sorting": 7}, "sorting"),  # a bulk item's fields are JSON
])
def test_bad_parameters_are_invalid_value_naming_the_parameter(query, field):
    with pytest.raises(RegistryError) as caught:
        parse_page_request(query, SORTABLE)
    assert caught.value.code == "invalid_value" and field in caught.value.errors


def test_page_info_for_middle_last_and_empty_pages():
    middle = page_info(item_count=250, offset=100, page_size=100, returned=100)
    assert (middle.item_start, middle.item_end, middle.page_index, middle.page_count) == (101, 200, 2, 3)
    assert (middle.next_page_offset, middle.previous_page_offset) == (200, 0)
    last = page_info(250, 200, 100, 50)
    assert last.next_page_offset is None and last.item_end == 250
    empty = page_info(0, 0, 25, 0)
    assert (empty.item_start, empty.item_end, empty.page_count, empty.next_page_offset) == (0, 0, 0, None)
    body = list_body([], empty, Sorting("id", "asc"))
    assert set(body) == {"status", "summaries", "pagination", "sorting"}


@settings(deadline=None)  # a loaded machine is slow; speed lives in bench/
@given(st.integers(0, 10_000), st.integers(1, 100), st.data())
def test_walking_next_page_offset_visits_every_item_once(total, size, data):
    offset, seen = 0, 0
    while True:
        returned = max(0, min(size, total - offset))
        info = page_info(total, offset, size, returned)
        seen += returned
        if info.next_page_offset is None:
            break
        offset = info.next_page_offset
    assert seen == total
