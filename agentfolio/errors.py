"""The one base class of every error agentfolio raises on purpose.

Each area refines it (:class:`agentfolio.formats.FormatError`,
:class:`agentfolio.body.BodyError`, :class:`agentfolio.registry.RegistryError`,
:class:`agentfolio.store.StoreError`, :class:`agentfolio.settings.SettingsError`), so a
caller that only wants "agentfolio refused this" catches :class:`AgentfolioError`, and a
front end turns any of them into a one-line message instead of a traceback.

``code`` is a stable machine-readable name (``invalid_value``, ``not_found``...); the
HTTP layer maps codes to statuses, nothing below it knows about HTTP.
"""

from __future__ import annotations

__all__ = ["AgentfolioError"]


class AgentfolioError(Exception):
    """Something agentfolio refused, with a stable ``code`` and a one-line ``message``."""

    code: str = "bad_request"

    message: str

    def __init__(self, message: str, *args: object) -> None:
        super().__init__(message, *args)
        # Subclasses that compose their own message set it before calling up; keep theirs.
        self.__dict__.setdefault("message", message)
