"""The registry service: every registry operation the API, the viewer and the CLI use.

Each operation takes a typed input (:mod:`.inputs`) and answers a typed output
(:mod:`.outputs`) or raises a :class:`~agentfolio.app.registry.errors.RegistryRefusal`;
it runs in one unit of work for the caller's account.

* Idempotency: a write may carry a key.  ``(account, operation, key)`` keeps the
  fingerprint of the input and the id of what the write made or changed (not its whole
  answer); a replay changes nothing and answers that object as it is now, the same key
  with another input is refused (``idempotency_key_already_used``).  A deletion keeps its
  answer (nothing is left to read).  Records expire after the store's idempotency window
  (``AGENTFOLIO_IDEMPOTENCY_WINDOW``); then the key is free and a request carrying it
  runs as new.  Refusals are not kept (they changed nothing, so running again is
  equivalent).
* :meth:`RegistryService.bulk` runs items in order in **one** unit: each write that is
  not a span in a savepoint; span writes are buffered and inserted together (their
  refusals all happen before anything is buffered).  It stops at the first refused
  item; the items before it are kept.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, Union, cast

from sqlalchemy.exc import IntegrityError

from agentfolio import _json
from agentfolio.app.registry import agents, governance, runs
from agentfolio.app.registry.errors import (
    IdempotencyKeyReused,
    RegistryRefusal,
    Unexpected,
    WriteConflict,
    from_domain,
)
from agentfolio.app.registry.fields import idempotency_key as checked_key
from agentfolio.app.registry.inputs import (
    AgentCreate,
    AgentDelete,
    AgentGet,
    AgentList,
    AgentReinstate,
    AgentRetire,
    AgentShow,
    AgentUpdate,
    AlertAcknowledge,
    AlertCount,
    AlertGet,
    AlertList,
    Command,
    InstanceFinish,
    InstanceGet,
    InstanceList,
    InstanceRecordQuality,
    InstanceRegister,
    InstanceStart,
    InstanceTerminate,
    RiskProfileCreate,
    RiskProfileGet,
    RiskProfileList,
    SchemaVersionCreate,
    SchemaVersionGet,
    SpanCreate,
    SpanFinish,
    SpanGet,
    SpanList,
    fingerprint,
)
from agentfolio.app.registry.outputs import (
    Agent,
    Alert,
    AlertCountOutput,
    Caller,
    DeploymentToken,
    Instance,
    Page,
    RiskProfileOutput,
    RiskReport,
    SchemaVersion,
    Span,
    SpanWritten,
)
from agentfolio.app.registry.work import Principal, Work, now_us
from agentfolio.registry.errors import RegistryError
from agentfolio.registry.risk import DEFAULT_RISK_PROFILE, RiskProfile
from agentfolio.registry.spans import SpanValidation
from agentfolio.store import Store
from agentfolio.store.accounts import Account
from agentfolio.store.registry import AccountRecord, RegistryUnit
from agentfolio.store.registry.records import IdempotencyRecord
from agentfolio.store.registry.store import DEPLOYMENT_TOKEN_PREFIX

log = logging.getLogger("agentfolio.registry")

Output = Union[Agent, SchemaVersion, Instance, SpanWritten, Span, Page[Agent], Page[Instance], Page[Span],
               RiskProfileOutput, Page[RiskProfileOutput], Alert, Page[Alert], AlertCountOutput]
AnswerT = TypeVar("AnswerT")


@dataclass(frozen=True, slots=True)
class _Operation:
    run: Callable[[Work, Any], Any]
    answers: type[Any]
    writes: bool
    #: a span write: buffered with the unit's other span rows, no savepoint of its own
    buffered: bool = False
    #: its idempotency record keeps the whole answer: nothing is left to read again
    keeps_answer: bool = False


_OPERATIONS: dict[type[Any], _Operation] = {
    AgentCreate: _Operation(agents.create, Agent, True),
    AgentUpdate: _Operation(agents.update, Agent, True),
    AgentRetire: _Operation(agents.retire, Agent, True),
    AgentReinstate: _Operation(agents.reinstate, Agent, True),
    AgentDelete: _Operation(agents.delete, Agent, True, keeps_answer=True),
    AgentGet: _Operation(agents.get, Agent, False),
    AgentShow: _Operation(agents.show, Agent, False),
    AgentList: _Operation(agents.page, Page[Agent], False),
    SchemaVersionCreate: _Operation(agents.create_schema_version, SchemaVersion, True),
    SchemaVersionGet: _Operation(agents.get_schema_version, SchemaVersion, False),
    InstanceRegister: _Operation(runs.register, Instance, True),
    InstanceStart: _Operation(runs.start, Instance, True),
    InstanceFinish: _Operation(runs.finish, Instance, True),
    InstanceRecordQuality: _Operation(runs.record_quality, Instance, True),
    InstanceTerminate: _Operation(runs.terminate, Instance, True),
    InstanceGet: _Operation(runs.get_instance, Instance, False),
    InstanceList: _Operation(runs.list_instances, Page[Instance], False),
    SpanCreate: _Operation(runs.create_span, SpanWritten, True, buffered=True),
    SpanFinish: _Operation(runs.finish_span, SpanWritten, True, buffered=True),
    SpanGet: _Operation(runs.get_span, Span, False),
    SpanList: _Operation(runs.list_spans, Page[Span], False),
    RiskProfileList: _Operation(governance.list_profiles, Page[RiskProfileOutput], False),
    RiskProfileGet: _Operation(governance.get_profile, RiskProfileOutput, False),
    RiskProfileCreate: _Operation(governance.create_profile, RiskProfileOutput, True, keeps_answer=True),
    AlertCount: _Operation(governance.count_alerts, AlertCountOutput, False),
    AlertList: _Operation(governance.list_alerts, Page[Alert], False),
    AlertGet: _Operation(governance.get_alert, Alert, False),
    AlertAcknowledge: _Operation(governance.acknowledge, AlertCountOutput, True, keeps_answer=True),
}


@dataclass(frozen=True, slots=True)
class BulkItem:
    """One item of a bulk request: its key and its input, or why its input was refused
    (reported when the run reaches the item)."""

    key: str
    command: Command | RegistryRefusal


@dataclass(frozen=True, slots=True)
class BulkAnswer:
    key: str
    answer: Output | RegistryRefusal


class RegistryService:
    """The registry for every front end, on one :class:`~agentfolio.store.Store`."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._rows = store.registry

    # ------------------------------------------------------------------ callers

    def authenticate(self, token: str) -> Principal | None:
        """The caller of an account token (``afk_…``) or a deployment token (``afd_…``)."""
        if token.startswith(DEPLOYMENT_TOKEN_PREFIX):
            grant = self._rows.authenticate_deployment(token)
            if grant is None:
                return None
            return Principal(Account(grant.account_pk, grant.account_name), "deployment", grant.deployment_id,
                             grant.agent_id, grant.environment_id)
        account = self._store.accounts.authenticate(token)
        return None if account is None else Principal(account)

    def caller(self, principal: Principal) -> Caller:
        record = self._account(principal)
        return Caller(account_id=record.id, account_name=principal.account.name, token_scope=principal.scope,
                      agent_id=principal.agent_id, environment_id=principal.environment_id,
                      agent_deployment_id=principal.deployment_id,
                      default_environment_id=record.default_environment_id)

    def risk_profile(self, principal: Principal, agent_id: str | None = None) -> RiskProfile:
        """The profile an agent is scored under (without one: the account's default)."""
        with self._rows.reading(self._account(principal)) as unit:
            return self._work(unit, principal).risk_profile(agent_id)

    def set_risk_profile(self, principal: Principal, profile: Mapping[str, Any] | None) -> RiskProfile:
        """Set (``None``: back to the default) the account's risk profile."""
        try:
            parsed = DEFAULT_RISK_PROFILE if profile is None else RiskProfile.from_json(profile)
        except RegistryError as error:
            raise from_domain(error) from None
        raw = None if profile is None else _json.dumps(parsed.model_dump(mode="json"))
        self._rows.write(self._account(principal), lambda unit: unit.settings.set_risk_profile(raw))
        return parsed

    def create_deployment_token(self, principal: Principal, agent_id: str, *, environment: str | None = None,
                                label: str | None = None) -> DeploymentToken:
        """A bearer token bound to one agent in one environment (default: the account's
        default environment; a new name makes a new environment).  Shown here only."""
        token = DEPLOYMENT_TOKEN_PREFIX + secrets.token_urlsafe(32)

        def make(unit: RegistryUnit) -> DeploymentToken:
            work = self._work(unit, principal)
            work.deny_deployment("make deployment tokens")
            agent = work.agent(agent_id)
            environment_id = work.account.default_environment_id
            if environment:
                environment_id = unit.environments.by_name(environment) or ""
                if not environment_id:
                    environment_id = work.new_id()
                    unit.environments.insert(id=environment_id, name=environment, inserted_at=now_us())
            deployment_id = runs.deployment_for(work, agent.id, environment_id)
            unit.tokens.insert(deployment_id, token, label=label)
            return DeploymentToken(token=token, agent_id=agent.id, environment_id=environment_id,
                                   agent_deployment_id=deployment_id)

        return self._write_unit(principal, make)

    def stored_elsewhere(self, principal: Principal, versions: Sequence[tuple[str, str]],
                         invalid: Sequence[tuple[Mapping[str, Any], SpanValidation]] = ()) -> None:
        """Raise the alerts that schema versions and spans stored outside this service (by
        the OTLP receiver, declaring span types as it sees them) call for, as for ones
        created here. ``versions``: (agent id, version id); ``invalid``: (span row, its
        validation) of spans found invalid."""
        if not versions and not invalid:
            return

        def alert(unit: RegistryUnit) -> None:
            work = self._work(unit, principal)
            for agent_id, version_id in versions:
                agents.version_alerts(work, agent_id, version_id)
            for span, validation in invalid:
                governance.span_alerts(work, dict(span), validation, new_span=False)

        self._write_unit(principal, alert)

    def agent_risk(self, principal: Principal, agent_ref: str) -> RiskReport:
        """Risk roll-up of an agent (by id or external identifier) and of each schema version."""
        with self._rows.reading(self._account(principal)) as unit:
            return agents.risk_report(self._work(unit, principal), agent_ref)

    # ------------------------------------------------------------------ operations

    def create_agent(self, principal: Principal, command: AgentCreate, *, key: str | None = None) -> Agent:
        return cast(Agent, self.run(principal, command, key=key))

    def update_agent(self, principal: Principal, command: AgentUpdate, *, key: str | None = None) -> Agent:
        return cast(Agent, self.run(principal, command, key=key))

    def get_agent(self, principal: Principal, command: AgentGet) -> Agent:
        return cast(Agent, self.run(principal, command))

    def show_agent(self, principal: Principal, command: AgentShow) -> Agent:
        return cast(Agent, self.run(principal, command))

    def list_agents(self, principal: Principal, command: AgentList) -> Page[Agent]:
        return cast("Page[Agent]", self.run(principal, command))

    def get_schema_version(self, principal: Principal, command: SchemaVersionGet) -> SchemaVersion:
        return cast(SchemaVersion, self.run(principal, command))

    def register_instance(self, principal: Principal, command: InstanceRegister, *,
                          key: str | None = None) -> Instance:
        return cast(Instance, self.run(principal, command, key=key))

    def get_instance(self, principal: Principal, command: InstanceGet) -> Instance:
        return cast(Instance, self.run(principal, command))

    def list_instances(self, principal: Principal, command: InstanceList) -> Page[Instance]:
        return cast("Page[Instance]", self.run(principal, command))

    def create_span(self, principal: Principal, command: SpanCreate, *, key: str | None = None) -> SpanWritten:
        return cast(SpanWritten, self.run(principal, command, key=key))

    def get_span(self, principal: Principal, command: SpanGet) -> Span:
        return cast(Span, self.run(principal, command))

    def list_spans(self, principal: Principal, command: SpanList) -> Page[Span]:
        return cast("Page[Span]", self.run(principal, command))

    def run(self, principal: Principal, command: Any, *, key: object = None) -> Any:
        """Any operation by its input's type, in its own unit of work; the output type
        follows the input (``AgentCreate`` → ``Agent``, ``SpanList`` → ``Page[Span]`` …)."""
        operation = _OPERATIONS[type(command)]
        account = self._account(principal)
        if not operation.writes:
            with self._rows.reading(account) as unit:
                return self._run(self._work(unit, principal), command)
        checked = checked_key(key)
        return self._write_unit(principal, lambda unit: self._once(self._work(unit, principal), command, checked))

    def bulk(self, principal: Principal, items: Sequence[BulkItem]) -> list[BulkAnswer]:
        """Items in order in one unit of work; stops at the first refused item."""
        def run_all(unit: RegistryUnit) -> list[BulkAnswer]:
            work = self._work(unit, principal)
            work.prefetch_keys([(item.command.OPERATION, item.key) for item in items
                                if not isinstance(item.command, RegistryRefusal)])
            answers = []
            for item in items:
                answer = self._bulk_item(work, item)
                answers.append(BulkAnswer(item.key, answer))
                if isinstance(answer, RegistryRefusal):
                    break
            return answers

        return self._write_unit(principal, run_all)

    # ------------------------------------------------------------------ inside a unit

    def _account(self, principal: Principal) -> AccountRecord:
        return self._rows.account(principal.account.pk)

    def _work(self, unit: RegistryUnit, principal: Principal) -> Work:
        return Work(unit, principal, self._rows.account(principal.account.pk))

    def _write_unit(self, principal: Principal, work: Callable[[RegistryUnit], AnswerT]) -> AnswerT:
        try:
            return self._rows.write(self._account(principal), work)
        except IntegrityError:
            log.warning("a registry write lost a race on a unique key three times", exc_info=True)
            raise WriteConflict("this write collided with concurrent writes; retry it") from None

    @staticmethod
    def _run(work: Work, command: Any) -> Any:
        try:
            return _OPERATIONS[type(command)].run(work, command)
        except RegistryError as error:
            raise from_domain(error) from None

    def _once(self, work: Work, command: Any, key: str | None) -> Any:
        """Run a write, or replay the answer its idempotency key already has."""
        operation = _OPERATIONS[type(command)]
        if key is None:
            return self._run(work, command)
        digest = fingerprint(command)
        found = work.answered(command.OPERATION, key)
        if found is not None:
            if found.fingerprint != digest:
                raise IdempotencyKeyReused(f"idempotency key {key!r} was already used with a different request")
            return _replay(work, operation.answers, found)
        output = self._run(work, command)
        kept = output.model_dump_json().encode() if operation.keeps_answer else None
        work.keep_answer(IdempotencyRecord(command.OPERATION, key, digest, _resource_id(output), kept),
                         buffered=operation.buffered)
        return output

    def _bulk_item(self, work: Work, item: BulkItem) -> Output | RegistryRefusal:
        command = item.command
        if isinstance(command, RegistryRefusal):
            return command
        operation = _OPERATIONS[type(command)]
        try:
            if not operation.writes:
                work.unit.flush()
                return self._run(work, command)  # type: ignore[no-any-return]
            if operation.buffered:
                return self._once(work, command, item.key)  # type: ignore[no-any-return]
            try:
                with work.unit.savepoint():
                    return self._once(work, command, item.key)  # type: ignore[no-any-return]
            except BaseException:
                work.forget_answer(command.OPERATION, item.key)
                raise
        except RegistryRefusal as refusal:
            return refusal
        except IntegrityError:
            raise
        except Exception:  # one bad item must not take the request down: report it, stop there
            log.exception("bulk item %s failed", command.OPERATION)
            return Unexpected(f"the server failed on this {command.OPERATION} item; it was logged")


def _resource_id(output: Any) -> str | None:
    """The id of what a write made or changed (its answer is read again from it)."""
    return output.span.id if isinstance(output, SpanWritten) else getattr(output, "id", None)


def _replay(work: Work, answers: type[Any], record: IdempotencyRecord) -> Any:
    """A replay's answer: the kept one, else the object the first request wrote, read now."""
    if record.answer is not None:
        return _kept_answer(answers, record.answer)
    if record.resource_id is None:
        raise Unexpected("this idempotency key's record names nothing to answer with")
    try:
        if answers is SpanWritten:
            return runs.written_again(work, record.resource_id)
        if answers is Instance:
            return runs.instance_output(work, work.instance(record.resource_id))
        if answers is Agent:
            return agents.agent_output(work, work.agent(record.resource_id))
        if answers is SchemaVersion:
            return agents.schema_version_output(work, record.resource_id)
    except RegistryError as error:
        raise from_domain(error) from None
    raise Unexpected(f"a replay cannot answer {answers.__name__}")


def _kept_answer(answers: type[Any], raw: bytes) -> Any:
    data = _json.loads(raw)
    if isinstance(data, dict) and data.get("status") == "success" and "details" in data:  # kept by older versions
        data = {"span": data["details"], "control": data.get("control")} if answers is SpanWritten \
            else data["details"]
    return answers.model_validate(data)


__all__ = ["BulkAnswer", "BulkItem", "Output", "Principal", "RegistryService"]
