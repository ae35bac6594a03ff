"""What a caller may name: a deployment token acts only within its agent, and an ID chosen
for a new object answers the same whether or not another account uses it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentfolio.app.registry import (
    AgentCreate,
    AgentGet,
    AgentList,
    InstanceGet,
    InstanceList,
    InstanceRegister,
    InvalidValue,
    NotFound,
    NotPermitted,
    PageRequest,
    Principal,
    RegistryService,
    SchemaVersionCreate,
    SchemaVersionGet,
    Sorting,
    SpanCreate,
    SpanGet,
    SpanList,
)
from agentfolio.app.registry.fields import schema_version_draft
from agentfolio.registry import ids
from agentfolio.store import Store

EVERYTHING = PageRequest(0, 100, Sorting("id", "asc"))


def version(external: str, span_type: str, version_id: str | None = None) -> Any:
    raw: dict[str, Any] = {"external_identifier": external,
                           "span_type_schemas": [{"name": span_type, "params_schema": {"type": "object"}}]}
    if version_id is not None:
        raw["id"] = version_id
    return schema_version_draft(raw, "agent_schema_version")


# --------------------------------------------------------------------------- deployment tokens


@pytest.fixture
def deployed(store: Store) -> tuple[RegistryService, Principal, Principal, dict[str, str]]:
    """An account with agents one and two, each with a run and a span; a token for agent one."""
    service = RegistryService(store)
    owner = Principal(store.accounts.ensure("acme"))
    made: dict[str, str] = {}
    for name in ("one", "two"):
        agent = service.create_agent(owner, AgentCreate(name=name)).id
        instance = service.register_instance(owner, InstanceRegister(
            agent_id=agent, agent_version={"name": name}, agent_schema_version=version(f"v-{name}", f"{name}:step")))
        span = service.create_span(owner, SpanCreate(agent_instance_id=instance.id, schema_name=f"{name}:step")).span
        made.update({name: agent, f"{name}-instance": instance.id, f"{name}-span": span.id,
                     f"{name}-version": instance.agent_schema_version_id or ""})
    token = service.create_deployment_token(owner, made["one"])
    principal = service.authenticate(token.token)
    assert principal is not None and principal.deployed and principal.agent_id == made["one"]
    return service, owner, principal, made


def test_a_deployment_token_cannot_rebind_its_agent_to_another_agents_schema_version(deployed) -> None:
    service, owner, token, made = deployed
    theirs = made["two-version"]
    for draft in (version("v-two", "two:step", theirs), version("v-other", "other:step", theirs)):
        with pytest.raises(InvalidValue, match="already used"):
            service.register_instance(token, InstanceRegister(agent_version={"name": "one"},
                                                              agent_schema_version=draft))
    agent = service.run(owner, AgentGet(made["one"]))
    assert agent.current_schema_version_id == made["one-version"]
    runs = service.list_instances(owner, InstanceList(page=EVERYTHING, agent_id=made["one"])).items
    assert [run.agent_schema_version_id for run in runs] == [made["one-version"]]
    # Its own version, named by id, is still reused.
    again = service.register_instance(token, InstanceRegister(
        agent_version={"name": "one"}, agent_schema_version=version("v-one", "one:changed", made["one-version"])))
    assert again.agent_schema_version_id == made["one-version"]


NAMED: list[tuple[str, Callable[[dict[str, str]], Any], type[Exception]]] = [
    ("agent", lambda m: AgentGet(m["two"]), NotPermitted),
    ("instance", lambda m: InstanceGet(agent_instance_id=m["two-instance"]), NotFound),
    ("span", lambda m: SpanGet(agent_span_id=m["two-span"]), NotFound),
    ("schema version", lambda m: SchemaVersionGet(m["two-version"]), NotFound),
    ("span of another agent's run", lambda m: SpanCreate(agent_instance_id=m["two-instance"], schema_name="x"),
     NotFound),
    ("register for another agent", lambda m: InstanceRegister(agent_id=m["two"], agent_version={}), NotPermitted),
    ("schema version for another agent", lambda m: SchemaVersionCreate(agent_id=m["two"],
                                                                       draft=version("x", "x")), NotPermitted),
]


@pytest.mark.parametrize("what,command,refusal", NAMED, ids=[what for what, _, _ in NAMED])
def test_every_id_a_deployment_token_names_is_checked(deployed, what: str, command: Callable[..., Any],
                                                      refusal: type[Exception]) -> None:
    service, _, token, made = deployed
    with pytest.raises(refusal):
        service.run(token, command(made))


def test_a_deployment_token_lists_only_its_agent(deployed) -> None:
    service, _, token, made = deployed
    assert [agent.id for agent in service.list_agents(token, AgentList(page=EVERYTHING)).items] == [made["one"]]
    assert [run.agent_id for run in service.list_instances(token, InstanceList(page=EVERYTHING)).items] \
        == [made["one"]]
    assert service.list_instances(token, InstanceList(page=EVERYTHING, agent_id=made["two"])).items == []
    assert [span.id for span in service.list_spans(token, SpanList(page=EVERYTHING)).items] == [made["one-span"]]
    assert service.list_spans(token, SpanList(page=EVERYTHING, agent_instance_id=made["two-instance"])).items == []


# --------------------------------------------------------------------------- chosen ids


def _refusal(call: Callable[[], Any]) -> tuple[str, str]:
    with pytest.raises(InvalidValue) as refused:
        call()
    return refused.value.code, refused.value.message


def test_an_id_another_account_uses_answers_as_a_fresh_one(store: Store) -> None:
    service = RegistryService(store)
    alice = Principal(store.accounts.ensure("alice"))
    bob = Principal(store.accounts.ensure("bob"))
    agent = service.create_agent(alice, AgentCreate(name="a")).id
    instance = service.register_instance(alice, InstanceRegister(agent_id=agent, agent_version={},
                                                                 agent_schema_version=version("v", "s")))
    span = service.create_span(alice, SpanCreate(agent_instance_id=instance.id, schema_name="s")).span.id
    bob_agent = service.create_agent(bob, AgentCreate(name="b")).id
    bob_instance = service.register_instance(bob, InstanceRegister(agent_id=bob_agent, agent_version={})).id
    alice_partition = ids.decode(agent).partition

    makers: dict[str, Callable[[str], Any]] = {
        "agent": lambda chosen: service.create_agent(bob, AgentCreate(name="b", id=chosen)),
        "instance": lambda chosen: service.register_instance(bob, InstanceRegister(
            agent_id=bob_agent, agent_version={}, id=chosen)),
        "span": lambda chosen: service.create_span(bob, SpanCreate(agent_instance_id=bob_instance,
                                                                   schema_name="s", id=chosen)),
        "schema version": lambda chosen: service.run(bob, SchemaVersionCreate(
            agent_id=bob_agent, draft=version("v", "s", chosen))),
    }
    used = {"agent": agent, "instance": instance.id, "span": span,
            "schema version": instance.agent_schema_version_id or ""}
    for what, make in makers.items():
        taken = used[what]
        fresh = ids.new_id(alice_partition)  # in the same partition, used by nobody
        code, message = _refusal(lambda make=make, taken=taken: make(taken))
        fresh_code, fresh_message = _refusal(lambda make=make, fresh=fresh: make(fresh))
        assert (code, message.replace(taken, "ID")) == (fresh_code, fresh_message.replace(fresh, "ID")), what
        assert "already used" not in message, what


def test_an_id_in_the_callers_partition_is_used_once(store: Store) -> None:
    service = RegistryService(store)
    alice = Principal(store.accounts.ensure("alice"))
    first = service.create_agent(alice, AgentCreate(name="a")).id
    chosen = ids.related_id(first)
    assert service.create_agent(alice, AgentCreate(name="b", id=chosen)).id == chosen
    code, message = _refusal(lambda: service.create_agent(alice, AgentCreate(name="c", id=chosen)))
    assert code == "invalid_value" and "already used" in message


def test_accounts_never_share_a_partition(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    service = RegistryService(store)
    alice = service.caller(Principal(store.accounts.ensure("alice"))).account_id
    made = iter([ids.related_id(alice), ids.related_id(alice)])
    original = ids.new_id
    monkeypatch.setattr(ids, "new_id", lambda partition=None: next(made, None) or original(partition))
    bob = service.caller(Principal(store.accounts.ensure("bob"))).account_id
    assert ids.decode(bob).partition != ids.decode(alice).partition
