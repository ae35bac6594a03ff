"""The base every canonical record shares: unknown properties survive, nothing is coerced.

Records keep the wire names of durable agent state as aliases (``$type``, ``callId``...)
because durable state is the format the model was shaped on and the one read in bulk:
validating straight from the parsed JSON, without a renaming pass, keeps a full read of a
10,000-entry history within a few times ``orjson.loads``.  Python code uses the
snake_case attribute names.
"""

from __future__ import annotations

from typing import Any

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
        populate_by_name=True,
        serialize_by_alias=True,
        validate_by_alias=True,
        validate_by_name=True,
        frozen=False,
        revalidate_instances="never",
    )

    @property
    def extra(self) -> dict[str, Any]:
        """Properties the record does not model, in the order they were read."""
        return self.__pydantic_extra__ if self.__pydantic_extra__ is not None else {}

    def to_json_value(self) -> dict[str, Any]:
        """The record as plain JSON values, with only the properties that were given."""
        return self.model_dump(by_alias=True, exclude_unset=True, mode="python")
