"""Who calls, and one operation's unit of work with the checks every operation shares:
which agent, instance or span a caller may reach, and which IDs it may choose."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from agentfolio import _json
from agentfolio.app.registry.errors import NotPermitted, field_error, not_found
from agentfolio.registry import ids
from agentfolio.registry.risk import DEFAULT_RISK_PROFILE, RiskProfile, SpanTypeScore, score_span_type
from agentfolio.registry.spans import CompiledSchemaVersion
from agentfolio.store.accounts import Account
from agentfolio.store.registry import AccountRecord, RegistryUnit
from agentfolio.store.registry.records import IdempotencyRecord

#: The id under which the profile of agents without one of their own is read.
DEFAULT_PROFILE_ID = "default"


def now_us() -> int:
    """Now, in microseconds since the Unix epoch (how the store keeps time)."""
    return time.time_ns() // 1000


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: an account token (the whole account) or a deployment token (one
    agent in one environment: every ID it names is checked against that agent)."""

    account: Account
    scope: Literal["account", "deployment"] = "account"
    deployment_id: str | None = None
    agent_id: str | None = None
    environment_id: str | None = None

    @property
    def deployed(self) -> bool:
        return self.scope == "deployment"


@dataclass
class Work:
    """One operation (or one bulk request) inside one unit of work."""

    unit: RegistryUnit
    principal: Principal
    account: AccountRecord
    #: instance rows read in this unit (spans of one instance arrive together)
    instances: dict[str, Any] = field(default_factory=dict)
    #: span id → its instance id, for parent checks (spans never move)
    span_instances: dict[str, str] = field(default_factory=dict)
    #: (operation, idempotency key) → its live record, as read or written in this unit
    answers: dict[tuple[str, str], IdempotencyRecord | None] = field(default_factory=dict)
    #: keys whose stored record expired: free again, replaced when the new answer is kept
    expired: set[tuple[str, str]] = field(default_factory=set)
    prefetched: bool = False
    #: risk profiles read in this unit, by id (``default`` too), and each agent's profile id
    profiles: dict[str, RiskProfile] = field(default_factory=dict)
    agent_profiles: dict[str, str | None] = field(default_factory=dict)
    #: (schema version, span type, profile) → its score, for the spans of one page
    type_scores: dict[tuple[str | None, str, int], tuple[RiskProfile, SpanTypeScore]] = field(default_factory=dict)

    def prefetch_keys(self, keys: list[tuple[str, str]]) -> None:
        """Read the records of all these ``(operation, key)`` pairs at once (a bulk request's)."""
        live = [record for record in self.unit.idempotency.find_keys(keys) if self._remember(record) is not None]
        # A replay answers with these spans as they are now: read them together.
        self.unit.spans.preload(record.resource_id for record in live
                                if record.operation.startswith("agent_spans/") and record.resource_id is not None)
        self.prefetched = True

    def _remember(self, record: IdempotencyRecord) -> IdempotencyRecord | None:
        pair = (record.operation, record.key)
        if record.expired:
            self.expired.add(pair)
            self.answers[pair] = None
            return None
        self.answers[pair] = record
        return record

    def answered(self, operation: str, key: str) -> IdempotencyRecord | None:
        """The live record of ``(operation, key)``; ``None`` when the key is free (never
        used, or its record expired)."""
        if (operation, key) in self.answers or self.prefetched:
            return self.answers.get((operation, key))
        found = self.unit.idempotency.find(operation, key)
        if found is None:
            self.answers[(operation, key)] = None
            return None
        return self._remember(found)

    def keep_answer(self, record: IdempotencyRecord, *, buffered: bool) -> None:
        pair = (record.operation, record.key)
        self.answers[pair] = record
        replace = pair in self.expired
        self.expired.discard(pair)
        self.unit.idempotency.insert(record, buffered=buffered, replace=replace)

    def forget_answer(self, operation: str, key: str) -> None:
        """After a savepoint rolled back: the answer kept inside it is gone."""
        self.answers.pop((operation, key), None)

    def new_id(self) -> str:
        return ids.new_id(self.account.partition)

    def claim_id(self, chosen: str | None, used: Callable[[str], bool]) -> str:
        """The ID of a new object: ``chosen`` (checked) or a fresh one.

        A chosen ID must carry the account's partition, which no other account shares;
        so whether another account uses it never changes the answer."""
        if chosen is None:
            return self.new_id()
        if ids.decode(chosen).partition != self.account.partition:
            raise field_error("id", f"{chosen!r} is not in this account's ID partition "
                                    f"({self.account.partition}): leave id out and one is made")
        if used(chosen):
            raise field_error("id", f"{chosen!r} is already used")
        return chosen

    def deny_deployment(self, what: str) -> None:
        if self.principal.deployed:
            raise NotPermitted(f"a deployment token cannot {what}; use an account token")

    def agent(self, agent_id: object) -> Any:
        row = self.unit.agents.get(agent_id) if ids.is_id(agent_id) else None  # type: ignore[arg-type]
        if row is None:
            raise not_found("agent", agent_id)
        if self.principal.deployed and row.id != self.principal.agent_id:
            raise NotPermitted("this deployment token belongs to another agent")
        return row

    def instance(self, instance_id: object, *, cached: bool = False) -> Any:
        if cached and instance_id in self.instances:
            return self.instances[instance_id]
        row = self.unit.instances.get(instance_id) if ids.is_id(instance_id) else None  # type: ignore[arg-type]
        if row is None or (self.principal.deployed and row.agent_id != self.principal.agent_id):
            raise not_found("agent instance", instance_id)
        self.instances[row.id] = row
        return row

    def span(self, span_id: object) -> dict[str, Any]:
        row = self.unit.spans.get(span_id) if ids.is_id(span_id) else None  # type: ignore[arg-type]
        if row is None or (self.principal.deployed and row["agent_id"] != self.principal.agent_id):
            raise not_found("agent span", span_id)
        return row

    def type_score(self, compiled: CompiledSchemaVersion | None, name: str,
                   profile: RiskProfile) -> SpanTypeScore | None:
        """The score of span type ``name`` of a schema version under ``profile``, worked out
        once per unit (``None``: the version does not declare it, so its risk is unknown)."""
        span_type = compiled.span_types.get(name) if compiled is not None else None
        if span_type is None:
            return None
        key = (compiled.id if compiled is not None else None, name, id(profile))
        found = self.type_scores.get(key)
        if found is None:  # the profile is kept beside its score, so its id is never reused meanwhile
            found = self.type_scores[key] = (profile, score_span_type(name, span_type.data_risk, profile))
        return found[1]

    def default_risk_profile(self) -> RiskProfile:
        """The profile agents without one of their own are scored under: the account's
        own default when it set one, else the built-in default."""
        found = self.profiles.get(DEFAULT_PROFILE_ID)
        if found is None:
            raw = self.unit.settings.risk_profile()
            found = DEFAULT_RISK_PROFILE if raw is None else RiskProfile.from_json(_json.loads(raw))
            self.profiles[DEFAULT_PROFILE_ID] = found
        return found

    def risk_profile(self, agent_id: str | None = None) -> RiskProfile:
        """The profile an agent is scored under (its assigned one, else the default);
        without an agent, the default."""
        if agent_id is None:
            return self.default_risk_profile()
        if agent_id not in self.agent_profiles:
            row = self.unit.agents.get(agent_id)
            self.agent_profiles[agent_id] = row.risk_profile_id if row is not None else None
        profile_id = self.agent_profiles[agent_id]
        if profile_id is None:
            return self.default_risk_profile()
        found = self.profiles.get(profile_id)
        if found is None:
            row = self.unit.risk_profiles.get(profile_id)
            found = self.default_risk_profile() if row is None else RiskProfile.model_validate(_json.loads(row.profile))
            self.profiles[profile_id] = found
        return found
