"""List queries as the Prefactor API takes and answers them: paging and sorting.

Requests page with ``pagination[offset]`` (zero-based) and ``pagination[page_size]``
(1-100, default 25) and sort with ``sorting[field]`` / ``sorting[direction]``
(``asc``/``desc``), which the hosted docs and the open dashboard use.  The Python SDK's
``agents.list_agents`` sends ``sorting`` as one string instead (``"name"``, ``"-id"``);
both spellings are accepted.

Answers carry ``pagination`` (:class:`PageInfo`) and ``sorting`` objects; the SDK's
``ListResponse`` model requires both keys to be present.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentfolio.registry.errors import RegistryError, invalid

DEFAULT_PAGE_SIZE = 25
MAX_PAGE_SIZE = 100
# Far past any list's end, and well inside the databases' 64-bit OFFSET.
MAX_OFFSET = 10_000_000


@dataclass(frozen=True, slots=True)
class Sorting:
    field: str
    direction: Literal["asc", "desc"]

    def to_json(self) -> dict[str, str]:
        return {"field": self.field, "direction": self.direction}


@dataclass(frozen=True, slots=True)
class PageRequest:
    offset: int
    page_size: int
    sorting: Sorting


@dataclass(frozen=True, slots=True)
class PageInfo:
    item_count: int
    item_start: int
    item_end: int
    page_count: int
    page_index: int
    page_offset: int
    page_size: int
    next_page_offset: int | None
    previous_page_offset: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "item_count": self.item_count, "item_start": self.item_start, "item_end": self.item_end,
            "page_count": self.page_count, "page_index": self.page_index, "page_offset": self.page_offset,
            "page_size": self.page_size, "next_page_offset": self.next_page_offset,
            "previous_page_offset": self.previous_page_offset,
        }


def _int_param(query: Mapping[str, Any], key: str, default: int, low: int, high: int | None) -> int:
    raw = query.get(key)
    if raw is None:
        return default
    if not str(raw).strip():  # given, but empty: a client bug better named than ignored
        raise RegistryError(invalid(key, "is empty: give an integer, or leave the parameter out"))
    if len(str(raw)) > 30:
        raise RegistryError(invalid(key, "is too long to be a number this API takes"))
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise RegistryError(invalid(key, f"{raw!r} is not an integer")) from None
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise RegistryError(invalid(key, f"must be {bound}, found {value}"))
    return value


def parse_page_request(query: Mapping[str, Any], sortable: Sequence[str], *,
                       default_sort: Sorting = Sorting("id", "asc")) -> PageRequest:
    """Paging and sorting from query parameters; errors name the parameter."""
    offset = _int_param(query, "pagination[offset]", 0, 0, MAX_OFFSET)
    page_size = _int_param(query, "pagination[page_size]", DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE)
    field = query.get("sorting[field]")
    direction = query.get("sorting[direction]")
    compact = query.get("sorting")
    if compact is not None and compact != "":  # checked even beside sorting[field], which wins
        name = compact[1:] if isinstance(compact, str) and compact[:1] in ("+", "-") else compact
        if name not in sortable:
            raise RegistryError(invalid("sorting", f"cannot sort by {compact!r}: expected a field, descending "
                                                   f"with a leading '-': {', '.join(sortable)}"))
        if field is None:
            field, direction = name, "desc" if compact.startswith("-") else "asc"
    field = field or default_sort.field
    direction = (direction or default_sort.direction)
    if field not in sortable:
        raise RegistryError(invalid("sorting[field]", f"cannot sort by {field!r}: expected one of "
                                                      f"{', '.join(sortable)}"))
    if direction not in ("asc", "desc"):
        raise RegistryError(invalid("sorting[direction]", f"{direction!r} is not one of asc, desc"))
    return PageRequest(offset, page_size, Sorting(field, direction))


def page_info(item_count: int, offset: int, page_size: int, returned: int) -> PageInfo:
    """The ``pagination`` object for a page of ``returned`` items starting at ``offset``."""
    page_count = -(-item_count // page_size) if item_count else 0
    end = offset + returned
    return PageInfo(
        item_count=item_count,
        item_start=offset + 1 if returned else 0,
        item_end=end if returned else 0,
        page_count=page_count,
        page_index=offset // page_size + 1,
        page_offset=offset,
        page_size=page_size,
        next_page_offset=end if end < item_count and returned else None,
        previous_page_offset=max(offset - page_size, 0) if offset > 0 else None,
    )


def list_body(summaries: list[Any], info: PageInfo, sorting: Sorting) -> dict[str, Any]:
    return {"status": "success", "summaries": summaries, "pagination": info.to_json(), "sorting": sorting.to_json()}
