"""Where the history provider keeps sessions: this machine's agentfolio store, or a remote
``agentfolio serve`` by URL and token.  Both answer the same four questions: read a
session (its document and version), create one, append a turn guarded by the version the
writer read, and close.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

import orjson

from agentfolio.app import DEFAULT_ACCOUNT
from agentfolio.errors import AgentfolioError

if TYPE_CHECKING:
    import httpx

    from agentfolio.app import Agentfolio
    from agentfolio.settings import Settings
    from agentfolio.store import Account, Store

# How long a remote call may take before the run fails instead of hanging.
DEFAULT_TIMEOUT = 30.0


class HistoryStoreError(AgentfolioError):
    """The store refused or could not be reached; ``message`` says which and why."""

    code = "history_store"


@dataclass(frozen=True, slots=True)
class Snapshot:
    version: int
    document: dict[str, Any]


class VersionMovedError(Exception):
    """Another writer appended first: the session is now at ``current``."""

    def __init__(self, current: int) -> None:
        super().__init__(current)
        self.current = current


class SessionMissingError(Exception):
    """No such session (never written, expired, or deleted)."""


class SessionExistsError(Exception):
    """Another writer created the session first."""


class HistoryStore(Protocol):
    async def read(self, session_id: str) -> Snapshot | None: ...

    async def create(self, session_id: str, document: dict[str, Any], agent: str | None) -> int: ...

    async def append(self, session_id: str, entries: list[dict[str, Any]], expected_version: int | None) -> int: ...

    async def aclose(self) -> None: ...


class LocalHistoryStore:
    """This machine's store, through agentfolio's application layer: the SQLite file
    ``agentfolio serve`` also opens by default, or the database ``AGENTFOLIO_DATABASE_URL``
    names, as one account."""

    def __init__(self, store: Store | None = None, *, account: str = DEFAULT_ACCOUNT,
                 settings: Settings | None = None) -> None:
        self._store = store
        self._settings = settings
        self._account_name = account
        self._folio: Agentfolio | None = None
        self._account: Account | None = None

    def _opened(self) -> tuple[Agentfolio, Account]:
        if self._folio is None:
            from agentfolio.app import Agentfolio

            self._folio = (Agentfolio(self._store, owned=False) if self._store is not None
                           else Agentfolio.open(self._settings))
        if self._account is None:
            self._account = self._folio.accounts.ensure(self._account_name)
        return self._folio, self._account

    async def read(self, session_id: str) -> Snapshot | None:
        return await asyncio.to_thread(self._read, session_id)

    def _read(self, session_id: str) -> Snapshot | None:
        from agentfolio.store import NotFound

        folio, account = self._opened()
        try:
            info, data = folio.sessions.read_bytes(account, session_id)
        except NotFound:
            return None
        return Snapshot(info.version, orjson.loads(data))

    async def create(self, session_id: str, document: dict[str, Any], agent: str | None) -> int:
        return await asyncio.to_thread(self._create, session_id, document, agent)

    def _create(self, session_id: str, document: dict[str, Any], agent: str | None) -> int:
        from agentfolio.store import AlreadyExists, StoreError

        folio, account = self._opened()
        try:
            return folio.sessions.create(account, document, session_id=session_id, agent=agent).session.version
        except AlreadyExists:
            raise SessionExistsError() from None
        except StoreError as error:
            raise HistoryStoreError(f"the store refused session {session_id!r}: {error.message}") from None

    async def append(self, session_id: str, entries: list[dict[str, Any]], expected_version: int | None) -> int:
        return await asyncio.to_thread(self._append, session_id, entries, expected_version)

    def _append(self, session_id: str, entries: list[dict[str, Any]], expected_version: int | None) -> int:
        from agentfolio.store import NotFound, StoreError, VersionConflict

        folio, account = self._opened()
        try:
            return folio.sessions.append_many(account, session_id, entries,
                                              expected_version=expected_version).session.version
        except VersionConflict as conflict:
            raise VersionMovedError(conflict.current) from None
        except NotFound:
            raise SessionMissingError() from None
        except StoreError as error:
            raise HistoryStoreError(f"the store refused a turn of session {session_id!r}: {error.message}") from None

    async def aclose(self) -> None:
        if self._folio is not None:
            self._folio.close()  # closes the store only when it opened it
            self._folio = None
            self._account = None


class RemoteHistoryStore:
    """A running ``agentfolio serve``, through its sessions API, with a bearer token."""

    def __init__(self, url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"agentfolio url {url!r} must start with http:// or https://")
        if not token:
            raise ValueError("a remote agentfolio needs a bearer token (agentfolio token create --account NAME)")
        self.url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self._timeout = timeout
        # An httpx client belongs to the event loop it was first used in.
        self._clients: dict[int, httpx.AsyncClient] = {}

    def _client(self) -> httpx.AsyncClient:
        import httpx

        loop = id(asyncio.get_running_loop())
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            client = self._clients[loop] = httpx.AsyncClient(base_url=self.url, headers=self._headers,
                                                             timeout=self._timeout)
        return client

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        import httpx

        try:
            return await self._client().request(method, path, **kwargs)
        except httpx.HTTPError as error:
            raise HistoryStoreError(f"cannot reach agentfolio at {self.url}: {type(error).__name__}: {error}") from None

    async def read(self, session_id: str) -> Snapshot | None:
        response = await self._send("GET", _session_path(session_id))
        if response.status_code == 404:
            return None
        _expect(response, 200, self.url)
        return Snapshot(_version(response), orjson.loads(response.content))

    async def create(self, session_id: str, document: dict[str, Any], agent: str | None) -> int:
        params = {"id": session_id, **({"agent": agent} if agent else {})}
        response = await self._send("POST", "/api/v1/sessions", params=params, content=orjson.dumps(document))
        if response.status_code == 409:
            raise SessionExistsError()
        _expect(response, 201, self.url)
        return _version(response)

    async def append(self, session_id: str, entries: list[dict[str, Any]], expected_version: int | None) -> int:
        if_match = "*" if expected_version is None else f'"{expected_version}"'
        response = await self._send("POST", _session_path(session_id) + "/entries", content=orjson.dumps(entries),
                                    headers={"If-Match": if_match})
        if response.status_code == 412:
            raise VersionMovedError(_version(response))
        if response.status_code == 404:
            raise SessionMissingError()
        _expect(response, 201, self.url)
        return _version(response)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            with contextlib.suppress(RuntimeError):  # its event loop is gone: nothing left to close
                await client.aclose()


def _session_path(session_id: str) -> str:
    return "/api/v1/sessions/" + quote(session_id, safe=":@")


def _version(response: httpx.Response) -> int:
    etag = response.headers.get("ETag", "").strip().removeprefix("W/").strip('"')
    if not etag.isdigit():
        raise HistoryStoreError(f"agentfolio answered without a session version (ETag {etag!r})")
    return int(etag)


def _expect(response: httpx.Response, status: int, url: str) -> None:
    if response.status_code == status:
        return
    try:
        body = orjson.loads(response.content)
        message = f"{body.get('code')}: {body.get('message')}" if isinstance(body, dict) else response.text[:300]
    except orjson.JSONDecodeError:
        message = response.text[:300]
    raise HistoryStoreError(f"agentfolio at {url} answered {response.status_code}: {message}")
