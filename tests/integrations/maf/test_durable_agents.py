"""What Microsoft's durable agents do with a custom history provider, as the README says:
they keep their own history in their entity state and run the agent without a session,
replaying the whole history as input, and leave the provider on, so it would file every
run as a new session.  If MAF changes this, this test says the README is out of date."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import agent_framework_durabletask._entities as durabletask
import pytest
from agent_framework import Agent

from agentfolio.integrations.maf import AgentfolioHistoryProvider
from agentfolio.store import Store
from tests.integrations.maf.conversation import FakeChatClient, get_weather


class EntityState(durabletask.AgentEntityStateProviderMixin):  # type: ignore[name-defined, misc]
    """The entity's state kept in memory, as the durable task worker would keep it."""

    def __init__(self) -> None:
        self.saved: dict[str, Any] = {}

    def _get_state_dict(self) -> dict[str, Any]:
        return self.saved

    def _set_state_dict(self, state: dict[str, Any]) -> None:
        self.saved = state

    def _get_session_id_from_entity(self) -> str:
        return "durable-entity-1"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_durable_agents_run_a_custom_provider_under_a_new_session_each_time(store: Store) -> None:
    provider = AgentfolioHistoryProvider(store=store)
    agent = Agent(client=FakeChatClient(), name="durable", tools=[get_weather], context_providers=[provider])
    state = EntityState()
    entity = durabletask.AgentEntity(agent, state_provider=state)

    async def run() -> None:
        for question in ("Hello", "And again"):
            await entity.run({"message": question, "correlationId": question})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asyncio.run(run())

    history = state.saved["data"]["conversationHistory"]
    assert [entry["$type"] for entry in history] == ["request", "response"] * 2  # the entity's own record
    stored = store.sessions.of(store.accounts.ensure("default")).list()
    assert "durable-entity-1" not in {info.id for info in stored}
    # One session per run, the second holding the replayed first turn again as its input.
    assert sorted(info.entry_count for info in stored) == [2, 2] and len(stored) == 2
    second = max(stored, key=lambda info: info.created_at)
    _, document = store.sessions.of(store.accounts.ensure("default")).get_document(second.id)
    request = document["data"]["conversationHistory"][0]
    assert [m["contents"][0].get("text") for m in request["messages"]][:1] == ["Hello"]
    assert len(request["messages"]) == 3
