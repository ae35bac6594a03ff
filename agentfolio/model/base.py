"""The base every canonical record shares: unknown properties survive, nothing is coerced.

Known limit: pydantic counts an unknown property as "set" under its own key, so a
document whose unknown property is spelled exactly like one of our Python attribute names
(``author_name`` beside ``authorName``) writes back an extra ``null`` for that field.
No producer we know writes such keys; checking every key of every read would cost as
much as parsing, so we do not.

Records keep the wire names of durable agent state as aliases (``$type``, ``callId``...)
because durable state is the format the model was shaped on and the one read in bulk:
validating straight from the parsed JSON, without a renaming pass, keeps a full read of a
10,000-entry history within a few times ``orjson.loads``.  Python code uses the
snake_case attribute names.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A canonical record that keeps whatever properties it does not know.

    ``strict`` because a lax read would turn ``"595"`` into ``595`` and the write would no
    longer give back what was read; unknown properties land in ``extra`` and are written
    back after the known ones.
    """

    model_config = ConfigDict(
        extra="allow",
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

    @property
    def extra(self) -> dict[str, Any]:
        """Properties the record does not model, in the order they were read."""
        return self.__pydantic_extra__ if self.__pydantic_extra__ is not None else {}

    def to_json_value(self) -> dict[str, Any]:
        """The record as plain JSON values, with only the properties that were given."""
        return self.model_dump(by_alias=True, exclude_unset=True, mode="python")
