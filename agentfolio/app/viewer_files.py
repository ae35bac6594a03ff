"""Files opened in the viewer without being stored as sessions: kept for a while, per account.

The viewer identifies a dropped file (:func:`agentfolio.app.documents.identify_all`)
and keeps it here, so that its pages load a screen at a time from whichever server a
load balancer picks.  Bounds and lifetime: :mod:`agentfolio.store.viewer_files`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentfolio.app.documents import Identified
    from agentfolio.store import Account, Store
    from agentfolio.store.viewer_files import ViewerFile

__all__ = ["ViewerFileService"]


class ViewerFileService:
    def __init__(self, store: Store) -> None:
        self._files = store.viewer_files

    def keep(self, account: Account, data: bytes, identified: Identified, *, part: int = 0) -> ViewerFile:
        """Keep the file for the account as the item ``identified`` (the ``part``-th of
        :func:`agentfolio.app.documents.identify_all`)."""
        return self._files.add(account, data, name=identified.name, kind=identified.kind,
                               detected=identified.detected, problem_count=len(identified.problems), part=part)

    def find(self, account: Account, token: str) -> ViewerFile | None:
        return self._files.find(account, token)

    def read(self, found: ViewerFile) -> bytes | None:
        return self._files.read(found)

    def recent(self, account: Account, *kinds: str) -> list[ViewerFile]:
        return self._files.recent(account, *kinds)

    def expire(self) -> int:
        """Forget the files past their lifetime, every account's (a background job)."""
        return self._files.expire()
