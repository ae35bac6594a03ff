"""The ``details`` of the registry's create and update bodies, as pydantic models: what the
OpenAPI document says each field takes (type, length, pattern), matching the checks the
service's inputs make (:mod:`agentfolio.app.registry.inputs`). Unknown fields are ignored
by the server, so the models allow them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from agentfolio.api.registry.common import NON_BLANK
from agentfolio.app.registry.inputs import PROFILE_TEMPLATES
from agentfolio.registry.ids import ID_PATTERN

__all__ = ["AgentCreateDetails", "AgentUpdateDetails", "RiskProfileCreateDetails", "details_schema"]

_NO_NUL = "^[^\\x00]*$"
#: A name: text with something besides spaces, without NUL, up to 255 characters.
Name = Annotated[str, StringConstraints(min_length=1, max_length=255, pattern=NON_BLANK)]
Text255 = Annotated[str, StringConstraints(max_length=255, pattern=_NO_NUL)]
Description = Annotated[str, StringConstraints(max_length=10_000, pattern=_NO_NUL)]
Reference = Annotated[str, StringConstraints(max_length=64, pattern=_NO_NUL)]
#: An id the caller picks must also lie in its account's id partition (as the ids the
#: server makes for it do), which no static document can say: others are a 422.
ChosenId = Annotated[str, StringConstraints(pattern=ID_PATTERN.pattern)]
CHOSEN_ID: Any = Field(None, description="An id of your own (default: one is made); it must lie in your "
                                         "account's id partition, as the ids made for it do.")


class _Details(BaseModel):
    model_config = ConfigDict(extra="allow")


class AgentCreateDetails(_Details):
    name: Name
    description: Description | None = None
    external_identifier: Text255 | None = None
    owner_person_id: Reference | None = None
    risk_profile_id: Reference | None = None
    team_id: Reference | None = None
    id: ChosenId | None = CHOSEN_ID


class AgentUpdateDetails(_Details):
    """Only the fields given change; ``external_identifier`` can only repeat the current one."""

    name: Name = None  # type: ignore[assignment]  # may be left out, never null
    description: Description | None = None
    owner_person_id: Reference | None = None
    risk_profile_id: Reference | None = None
    team_id: Reference | None = None
    external_identifier: Any = None


class RiskProfileCreateDetails(_Details):
    name: Name
    description: Description | None = None
    template: Literal[PROFILE_TEMPLATES] | None = None  # type: ignore[valid-type]
    categories: dict[str, Any] | None = None
    actions: dict[str, Any] | None = None
    thresholds: dict[str, Any] | None = None
    id: ChosenId | None = CHOSEN_ID


def details_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema, inline (these models have no nested definitions)."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    return schema
