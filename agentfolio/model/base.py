"""The base every canonical record shares: unknown properties survive, nothing is coerced.

Known limit: pydantic counts an unknown property as "set" under its own key, so a
record read with an unknown property spelled exactly like one of our Python attribute
names (``author_name`` beside ``authorName``) serializes an extra ``null`` for that
field.  Entries written back from their source (durable state) are not affected; no
producer we know writes such keys; checking every key of every read would cost as much
as parsing, so we do not.

Records keep the wire names of durable agent state as aliases (``$type``, ``callId``...)
because durable state is the format the model was shaped on and the one read in bulk:
validating straight from the parsed JSON, without a renaming pass, keeps a full read of a
10,000-entry history within a few times ``orjson.loads``.  Python code uses the
snake_case attribute names.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Strict

T = TypeVar("T")

# An ordered sequence of records: JSON arrays become tuples (so a read record cannot be
# changed behind its back); the items themselves are still read strictly.
Seq = Annotated[tuple[T, ...], Strict(False)]

# A JSON value kept by reference, exactly as read (tool arguments, results, schemas,
# unknown properties): never copied, never coerced.  Editing it in place edits the
# document it came from, and what is written back, alike.
JsonValue = Any


class Record(BaseModel):
    """A canonical record that keeps whatever properties it does not know.

    ``strict`` because a lax read would turn ``"595"`` into ``595`` and the write would no
    longer give back what was read; unknown properties land in ``extra`` and are written
    back after the known ones.
    """

    model_config = ConfigDict(
        extra="allow",
        # Immutable: a record read from a document is that document, so writing it back
        # may reuse what was read (see durable_state.write).  Change with model_copy.
        frozen=True,
        strict=True,
        serialize_by_alias=True,
        validate_by_alias=True,
        # Reading by wire name only: a document carrying both ``callId`` and an unknown
        # ``call_id`` keeps both, instead of one silently shadowing the other.
        validate_by_name=False,
        revalidate_instances="never",
    )

    # Python attribute name → wire name, for building records by attribute name.
    _wire_names: ClassVar[dict[str, str]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._wire_names = {name: info.alias for name, info in cls.model_fields.items()
                           if info.alias and info.alias != name}

    def __init__(self, /, **data: Any) -> None:
        # Only code that builds records comes through here (reads validate without
        # calling __init__), so attribute names are accepted here and nowhere else.
        names = self._wire_names
        super().__init__(**{names.get(key, key): value for key, value in data.items()})
        if "kind" in type(self).model_fields:
            # A built record always writes its kind, though it was left to its default.
            self.__pydantic_fields_set__.add("kind")

    # Tell pydantic this is still its own __init__: otherwise every read would call it
    # (a Python call per record, several times slower) and accept attribute names.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    def __eq__(self, other: object) -> bool:
        # Equal when they write the same JSON: same kind, same properties given (a null
        # is not an absence), same unknowns.  What a record remembers privately (the
        # source it was read from) is not part of its value.
        if not isinstance(other, Record):
            return NotImplemented
        return (type(self) is type(other) and self.__dict__ == other.__dict__
                and self.__pydantic_fields_set__ == other.__pydantic_fields_set__
                and self.__pydantic_extra__ == other.__pydantic_extra__)

    __hash__ = None  # type: ignore[assignment]  # JSON values inside are unhashable

    @property
    def extra(self) -> Mapping[str, Any]:
        """Properties the record does not model, in the order they were read (read-only)."""
        return MappingProxyType(self.__pydantic_extra__ if self.__pydantic_extra__ is not None else {})

    def to_json_value(self) -> dict[str, Any]:
        """The record as plain JSON values, with only the properties that were given."""
        return self.model_dump(by_alias=True, exclude_unset=True, mode="json")
