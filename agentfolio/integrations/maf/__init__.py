"""agentfolio for Microsoft Agent Framework (``pip install agentfolio[maf]``).

:class:`AgentfolioHistoryProvider` keeps an agent's conversations as agentfolio sessions
(durable agent state), on this machine or on an ``agentfolio serve``;
:mod:`agentfolio.integrations.maf.messages` converts MAF messages to durable state and
back without losing any content kind.
"""

try:
    import agent_framework  # noqa: F401
except ImportError as missing:  # pragma: no cover - depends on what is installed
    raise ImportError("agentfolio.integrations.maf needs Microsoft Agent Framework: "
                      "pip install 'agentfolio[maf]'") from missing

from agentfolio.integrations.maf.backends import HistoryStoreError, LocalHistoryStore, RemoteHistoryStore
from agentfolio.integrations.maf.provider import AgentfolioHistoryProvider

__all__ = ["AgentfolioHistoryProvider", "HistoryStoreError", "LocalHistoryStore", "RemoteHistoryStore"]
