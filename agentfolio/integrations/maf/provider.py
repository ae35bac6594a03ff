"""A Microsoft Agent Framework history provider that keeps each session in agentfolio.

Attach it like any history provider::

    agent = Agent(client=..., context_providers=[AgentfolioHistoryProvider()])
    session = agent.create_session(session_id="support-42")
    await agent.run("Hello", session=session)

Before a run it reads the session (durable agent state) and hands its messages to the
model; after the run it appends the turn, a ``request`` entry with what went in and a
``response`` entry with what came out, as one write guarded by the version it read
(``If-Match`` over HTTP).  When another writer got there first, the turn is appended
after theirs (never dropped, never split) and :attr:`AgentfolioHistoryProvider.conflicts`
counts it.  An append costs the same at any history length.

MAF's flags work as on every history provider: ``load_messages=False`` stores without
loading (an audit trail beside another history provider, or beside a service that keeps
the conversation itself); ``store_inputs``, ``store_outputs``, ``store_context_messages``
and ``store_context_from`` choose what is written.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from agent_framework import HistoryProvider, Message

from agentfolio.app import DEFAULT_ACCOUNT
from agentfolio.integrations.maf.backends import (
    HistoryStore,
    HistoryStoreError,
    LocalHistoryStore,
    RemoteHistoryStore,
    SessionExistsError,
    SessionMissingError,
    VersionMovedError,
)
from agentfolio.integrations.maf.messages import history_messages, json_safe, new_document, turn_entries
from agentfolio.store.sessions import SESSION_ID, SESSION_ID_RULE

if TYPE_CHECKING:
    from agent_framework import AgentResponse, AgentSession, SessionContext, SupportsAgentRun

    from agentfolio.store import Store

log = logging.getLogger("agentfolio.integrations.maf")

# Each conflict means another writer's turn landed; past this many in a row the store is
# being written faster than this writer can follow, and the run fails instead of spinning.
MAX_ATTEMPTS = 50
_OUTPUT_ROLES = frozenset({"assistant", "tool"})


@dataclass(frozen=True, slots=True)
class _Turn:
    """What ``after_run`` knows and ``save_messages`` is not told: where the outputs start."""

    request_count: int
    response: AgentResponse | None
    agent_name: str | None


_CURRENT_TURN: ContextVar[_Turn | None] = ContextVar("agentfolio_maf_turn", default=None)


class AgentfolioHistoryProvider(HistoryProvider):
    """Conversation history kept as agentfolio sessions, locally or on an ``agentfolio serve``.

    Args:
        source_id: This provider's id in MAF's attribution (default ``"agentfolio"``).
        url, token: A running ``agentfolio serve`` and a bearer token for it
            (``agentfolio token create --account NAME``).  Without ``url`` the history goes
            to this machine's store: the one ``agentfolio serve`` opens by default, or the
            database ``AGENTFOLIO_DATABASE_URL`` names.
        store, account: For the local store: an open :class:`agentfolio.store.Store`
            (default: opened from the environment on first use) and the account to write
            as (default ``"default"``, the CLI's).
        agent_name: The agent a new session is filed under (default: the agent's name).
        load_messages, store_inputs, store_context_messages, store_context_from,
        store_outputs: MAF's history-provider flags.
        history_store: Anywhere else that answers :class:`HistoryStore`'s calls (instead of
            the local or remote store above).
    """

    DEFAULT_SOURCE_ID: ClassVar[str] = "agentfolio"

    def __init__(self, source_id: str | None = None, *, url: str | None = None, token: str | None = None,
                 store: Store | None = None, account: str = DEFAULT_ACCOUNT, agent_name: str | None = None,
                 load_messages: bool = True, store_inputs: bool = True, store_context_messages: bool = False,
                 store_context_from: set[str] | None = None, store_outputs: bool = True,
                 history_store: HistoryStore | None = None) -> None:
        super().__init__(source_id or self.DEFAULT_SOURCE_ID, load_messages=load_messages,
                         store_inputs=store_inputs, store_context_messages=store_context_messages,
                         store_context_from=store_context_from, store_outputs=store_outputs)
        if history_store is not None:
            self.history_store: HistoryStore = history_store
        elif url is not None:
            if store is not None:
                raise ValueError("give either url and token (a remote agentfolio) or store (a local one), not both")
            self.history_store = RemoteHistoryStore(url, token or "")
        else:
            self.history_store = LocalHistoryStore(store, account=account)
        self.agent_name = agent_name
        # Turns appended after another writer's (their version had moved on since our read).
        self.conflicts = 0
        self._versions: dict[str, int | None] = {}

    # -- MAF's history-provider interface --------------------------------------------------

    async def get_messages(self, session_id: str | None, *, state: dict[str, Any] | None = None,
                           **kwargs: Any) -> list[Message]:
        """The session's messages as they were written, oldest first ([] for a new session)."""
        session_id = _checked(session_id)
        snapshot = await self.history_store.read(session_id)
        if snapshot is None:
            self._versions[session_id] = 0
            return []
        self._versions[session_id] = snapshot.version
        skipped: list[str] = []
        messages = history_messages(snapshot.document, on_unreadable=skipped.append)
        if skipped:
            log.warning("session %s: %d content(s) another producer wrote are not given to the model "
                        "(the session keeps them): %s", session_id, len(skipped), "; ".join(sorted(set(skipped))))
        return messages

    async def save_messages(self, session_id: str | None, messages: Sequence[Message], *,
                            state: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """Append ``messages`` as one turn.

        During a run the provider knows which messages went in and which came out.  Called
        directly, the messages up to the first ``assistant`` or ``tool`` one are the request
        and the rest the response.
        """
        session_id = _checked(session_id)
        if not messages:
            return
        turn = _CURRENT_TURN.get()
        response = turn.response if turn is not None else None
        split = turn.request_count if turn is not None else next(
            (index for index, message in enumerate(messages) if message.role in _OUTPUT_ROLES), len(messages))
        entries = turn_entries(list(messages[:split]), list(messages[split:]),
                               usage=getattr(response, "usage_details", None) or None,
                               response_created_at=_iso(getattr(response, "created_at", None)))
        json_safe(entries, f"a turn of session {session_id!r}")
        agent = self.agent_name or (turn.agent_name if turn is not None else None)
        await self._append(session_id, entries, agent)

    async def after_run(self, *, agent: SupportsAgentRun, session: AgentSession, context: SessionContext,
                        state: dict[str, Any]) -> None:
        request_count = len(self._get_context_messages_to_store(context))
        if self.store_inputs:
            request_count += len(context.input_messages)
        name = getattr(agent, "name", None)
        token = _CURRENT_TURN.set(_Turn(request_count, context.response, name if isinstance(name, str) else None))
        try:
            await super().after_run(agent=agent, session=session, context=context, state=state)
        finally:
            _CURRENT_TURN.reset(token)

    # -- appending -------------------------------------------------------------------------

    async def _append(self, session_id: str, entries: list[dict[str, Any]], agent: str | None) -> None:
        expected = self._versions.get(session_id)
        for attempt in range(MAX_ATTEMPTS):
            try:
                if expected == 0:
                    version = await self.history_store.create(session_id, new_document(entries), _agent_label(agent))
                else:
                    version = await self.history_store.append(session_id, entries, expected)
            except VersionMovedError as moved:
                self.conflicts += 1
                log.info("session %s moved from version %s to %s while this turn ran: appending after it",
                         session_id, expected, moved.current)
                expected = moved.current
            except SessionExistsError:
                expected = None  # created by another writer meanwhile: append after whatever it holds
            except SessionMissingError:
                expected = 0  # expired or deleted since it was read: start it again
            else:
                self._versions[session_id] = version
                return
            if attempt:
                await asyncio.sleep(random.uniform(0, 0.002 * attempt))
        raise HistoryStoreError(f"session {session_id!r}: gave up appending a turn after {MAX_ATTEMPTS} attempts "
                                "(other writers kept appending first)")

    async def aclose(self) -> None:
        await self.history_store.aclose()

    async def __aenter__(self) -> AgentfolioHistoryProvider:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()


def _checked(session_id: str | None) -> str:
    if session_id is None:
        raise ValueError("the agentfolio history provider needs a session id: run the agent with session=...")
    if not SESSION_ID.fullmatch(session_id):
        raise ValueError(f"session id {session_id!r} cannot name an agentfolio session: it must be {SESSION_ID_RULE}")
    return session_id


def _agent_label(agent: str | None) -> str | None:
    if not agent:
        return None
    label = agent.replace("\x00", "")[:200]
    return label or None


def _iso(value: Any) -> str | None:
    """A response's own time when it is one durable state can hold (RFC 3339), else None."""
    from datetime import datetime

    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if moment.tzinfo is not None else None
