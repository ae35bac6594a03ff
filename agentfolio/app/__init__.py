"""The use cases every front end shares: the CLI, the HTTP API and the viewer call this
layer (and the pure domain below it), never the store directly.

``Agentfolio.open(settings)`` opens the store the settings name and gives each area a
service: :attr:`Agentfolio.sessions` (store, read, export in any format, append...),
:attr:`Agentfolio.accounts` (accounts and tokens), :attr:`Agentfolio.registry` (the agent
registry: agents, schema versions, instances, spans), :attr:`Agentfolio.traces` (traces
listed and read as trees a page at a time). Documents that are not stored are
handled by the functions in :mod:`agentfolio.app.documents`; importing files by
:mod:`agentfolio.app.imports`; the demo by :mod:`agentfolio.app.demo`.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from agentfolio.settings import Settings

if TYPE_CHECKING:
    from agentfolio.app.accounts import AccountService
    from agentfolio.app.otlp import OtlpIngest
    from agentfolio.app.otlp_conversations import ConversationWorker
    from agentfolio.app.registry import RegistryService
    from agentfolio.app.sessions import SessionService
    from agentfolio.app.traces import TraceService
    from agentfolio.app.viewer_files import ViewerFileService
    from agentfolio.store import Store

__all__ = ["DEFAULT_ACCOUNT", "Agentfolio"]

#: The account every command works as unless told otherwise.
DEFAULT_ACCOUNT = "default"


class Agentfolio:
    """One store and the services over it. Use as a context manager, or call :meth:`close`.

    Each service is made (and its modules imported) when first used: a command that
    stores sessions does not load the registry's."""

    def __init__(self, store: Store, *, owned: bool = True) -> None:
        self.store = store
        self.settings: Settings = store.settings
        self._owned = owned
        self._conversations: ConversationWorker | None = None

    @cached_property
    def accounts(self) -> AccountService:
        from agentfolio.app.accounts import AccountService

        return AccountService(self.store)

    @cached_property
    def sessions(self) -> SessionService:
        from agentfolio.app.sessions import SessionService

        return SessionService(self.store)

    @cached_property
    def registry(self) -> RegistryService:
        from agentfolio.app.registry import RegistryService

        return RegistryService(self.store)

    @cached_property
    def viewer_files(self) -> ViewerFileService:
        from agentfolio.app.viewer_files import ViewerFileService

        return ViewerFileService(self.store)

    @cached_property
    def traces(self) -> TraceService:
        from agentfolio.app.traces import TraceService

        return TraceService(self.store)

    @classmethod
    def open(cls, settings: Settings | None = None) -> Agentfolio:
        from agentfolio.store import Store

        return cls(Store.open(settings or Settings.from_env()))

    def readiness_problems(self) -> list[str]:
        """What keeps this application from serving requests now (none: ready)."""
        from agentfolio.store.health import readiness_problems

        return readiness_problems(self.store)

    def otlp_ingest(self, *, max_bytes: int, queue_size: int, backlog: int) -> OtlpIngest:
        """A receiver of OTLP span batches into this store (one per server: it holds the
        admission count), waking this application's conversation worker."""
        from agentfolio.app.otlp import OtlpIngest

        return OtlpIngest(self.store, max_bytes=max_bytes, queue_size=queue_size, backlog=backlog,
                          worker=self.conversation_worker())

    def conversation_worker(self) -> ConversationWorker:
        """The worker that brings OTel conversations up to date from the store's queue
        (one per application; a server starts it, see ``agentfolio.server``)."""
        if self._conversations is None:
            from agentfolio.app.otlp_conversations import ConversationWorker

            self._conversations = ConversationWorker(self.store)
        return self._conversations

    def sweep_blobs(self) -> Any:
        """Remove stored blobs no entry points at (safe beside running writers)."""
        return self.store.sweep_blobs()

    def close(self) -> None:
        if self._owned:
            self.store.close()

    def __enter__(self) -> Agentfolio:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def __getattr__(name: str) -> Any:
    # ``from agentfolio.app import Account`` without importing the store at start-up.
    if name == "Account":
        from agentfolio.store import Account

        return Account
    raise AttributeError(name)
