"""Stored sessions: durable agent state, one account's own, exported in any format."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentfolio import _json
from agentfolio.formats import durable_state
from agentfolio.formats.errors import FormatError
from agentfolio.store.sessions import SESSION_ID, SESSION_ID_RULE, SessionCursor, SessionInfo

if TYPE_CHECKING:
    from agentfolio.formats.losses import Loss
    from agentfolio.present.activity import ActivityPoint
    from agentfolio.store import Account, Appended, Created, NewSession, Store

__all__ = ["SESSION_ID", "SESSION_ID_RULE", "SESSION_SORTS", "Exported", "NotRepresentableError", "SessionInfo",
           "SessionService"]

#: What the sessions list can be ordered by (``SessionService.list(sort=...)``).
SESSION_SORTS = ("updated", "created", "first_activity", "last_activity", "duration", "entries", "tokens", "errors",
                 "failed_tools", "agent", "id")


class NotRepresentableError(FormatError):
    """A session whose current content a format cannot hold (an empty history as a Prompt
    Envelope, which needs a message): the same request succeeds once the content fits."""

    code = "not_representable"


@dataclass
class Exported:
    """A stored session in some format: ``data`` is JSON bytes (the stored bytes exactly,
    for durable state); ``losses`` is what the format could not hold."""

    info: SessionInfo
    data: bytes
    format: str
    losses: list[Loss] = field(default_factory=list)


class SessionService:
    def __init__(self, store: Store) -> None:
        self._sessions = store.sessions

    def create(self, account: Account, document: Any, *, session_id: str | None = None, agent: str | None = None,
               source_hash: str | None = None, strict: bool = True) -> Created:
        return self._sessions.of(account).create(document, session_id=session_id, agent=agent,
                                     source_hash=source_hash, strict=strict)

    def prepare(self, account: Account, document: Any, *, session_id: str | None = None, agent: str | None = None,
                source_hash: str | None = None, strict: bool = True) -> NewSession:
        """Check a durable state and cut it into its rows, writing nothing (InvalidInput when
        it cannot be stored); :meth:`create_many` stores many such in one transaction."""
        return self._sessions.of(account).prepare(document, session_id=session_id, agent=agent,
                                                  source_hash=source_hash, strict=strict)

    def create_many(self, account: Account, new: Sequence[NewSession]) -> None:
        """Store prepared sessions together, or none of them (AlreadyExists)."""
        self._sessions.of(account).create_prepared(new)

    def info(self, account: Account, session_id: str) -> SessionInfo:
        return self._sessions.of(account).info(session_id)

    def read_bytes(self, account: Account, session_id: str) -> tuple[SessionInfo, bytes]:
        """The durable state exactly as stored, and its info."""
        return self._sessions.of(account).get_bytes(session_id)

    def read_window(self, account: Account, session_id: str, start: int, stop: int) -> tuple[SessionInfo, bytes]:
        """The durable state with only entries ``start``..``stop`` in its history (the rest of
        the document as stored): one screen of a long session, at the cost of that screen."""
        return self._sessions.of(account).get_window(session_id, start, stop)

    def export(self, account: Account, session_id: str, format_name: str = durable_state.FORMAT.name) -> Exported:
        """The session written in ``format_name`` (any format the registry can write)."""
        info, data = self._sessions.of(account).get_bytes(session_id)
        if format_name == durable_state.FORMAT.name:
            return Exported(info, data, format_name)
        from agentfolio.formats.convert import convert

        try:
            conversion = convert(_json.loads(data), to=format_name, from_=durable_state.FORMAT.name,
                                 strict_read=False)
        except FormatError as error:  # the stored content, not the request, is what does not fit
            raise NotRepresentableError(f"session {session_id!r} cannot be written as {format_name} now: "
                                        f"{error.message}", pointer=error.pointer) from None
        return Exported(info, _json.dumps(conversion.result), format_name, conversion.losses)

    def append(self, account: Account, session_id: str, entry: Any, *, expected_version: int | None,
               strict: bool = True) -> Appended:
        return self._sessions.of(account).append(session_id, entry, expected_version=expected_version, strict=strict)

    def append_many(self, account: Account, session_id: str, entries: Sequence[Any], *,
                    expected_version: int | None, strict: bool = True) -> Appended:
        """Entries appended together as one write (a request and its response): one new
        version, and no other writer's entry between them."""
        return self._sessions.of(account).append_many(session_id, entries, expected_version=expected_version,
                                          strict=strict)

    def reset(self, account: Account, session_id: str, *, expected_version: int | None = None) -> SessionInfo:
        return self._sessions.of(account).reset(session_id, expected_version=expected_version)

    def delete(self, account: Account, session_id: str, *, expected_version: int | None = None) -> None:
        self._sessions.of(account).delete(session_id, expected_version=expected_version)

    def list(self, account: Account, *, agent: str | None = None, since: float | None = None,
             until: float | None = None, text: str | None = None, agent_contains: str | None = None,
             sort: str = "updated", descending: bool = True, limit: int = 50,
             offset: int = 0, after: str | None = None) -> list[SessionInfo]:
        """One account's sessions, newest-written first or by ``sort`` (a key of
        ``agentfolio.store.sessions.SORTS``), each with what the list shows of it
        (``info.facts``: first user message, tokens, failures), counted when it was written.

        ``text`` finds sessions with an entry holding each of its words (as prefixes).
        ``after``: the :meth:`cursor` of the last session of the previous page (sorted by
        ``updated``), so each page costs the same however deep."""
        return self._sessions.of(account).list(
            agent=agent, since=since, until=until, text=text, agent_contains=agent_contains, sort=sort,
            descending=descending, limit=limit, offset=offset,
            after=None if after is None else SessionCursor.parse(after))

    @staticmethod
    def cursor(info: SessionInfo) -> str:
        """Where a page ending with ``info`` ends, for :meth:`list`'s ``after``."""
        return SessionCursor.after(info).token()

    def count(self, account: Account, *, agent: str | None = None, since: float | None = None,
              until: float | None = None, text: str | None = None, agent_contains: str | None = None) -> int:
        """How many sessions :meth:`list` pages through with the same filters."""
        return self._sessions.of(account).count(agent=agent, since=since, until=until, text=text,
                                                agent_contains=agent_contains)

    def find_positions(self, account: Account, session_id: str, *, text: str | None = None, show: str | None = None,
                       start: int = 0, limit: int = 10_000) -> Sequence[int]:
        """Positions of the entries from ``start`` on that hold ``text`` (case-insensitive)
        and have something to show when the page shows only ``show``
        (``present.activity.SHOW_CHOICES``): found in what the store keeps beside each
        entry, without reading the history."""
        return self._sessions.of(account).find_positions(session_id, text=text, show=show, start=start, limit=limit)

    def agents(self, account: Account) -> Sequence[tuple[str | None, int]]:
        """The account's agents (None: sessions without one) and their numbers of sessions."""
        return self._sessions.of(account).agents()

    def activity(self, account: Account, *, agent: str | None = None, since: float | None = None,
                 until: float | None = None) -> Sequence[ActivityPoint]:
        """Each timed entry of an agent's sessions (all agents' for None) counted: latency,
        tokens, tool calls, failures, oldest first; from the counts kept beside the entries."""
        return self._sessions.of(account).activity(agent=agent, since=since, until=until)

    def match_snippets(self, account: Account, session_ids: Sequence[str], text: str) -> dict[str, str]:
        """For each session id, the text around where ``text`` first occurs in its messages."""
        return self._sessions.of(account).match_snippets(session_ids, text)

    def find_imported(self, account: Account, source_hash: str) -> str | None:
        """The id of the session imported from a file with this SHA-256, if any."""
        return self._sessions.of(account).exists_source(source_hash)

    def find_imported_many(self, account: Account, source_hashes: Sequence[str]) -> dict[str, str]:
        """Of these SHA-256s, those a session was imported from: hash → session id."""
        return self._sessions.of(account).sources_stored(source_hashes)

    def expire(self) -> int:
        """Remove sessions idle for longer than the configured TTL; how many were removed."""
        return self._sessions.expire()
