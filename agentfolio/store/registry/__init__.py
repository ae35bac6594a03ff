"""The agent registry's persistence: rows of agents, schema versions, deployments,
instances, spans, idempotency records and deployment tokens, always for one account.

:class:`RegistryStore` opens a :class:`RegistryUnit` (one transaction) for one account.
The unit's repositories (``unit.agents``, ``unit.instances``, ``unit.spans`` …) are built
on an :class:`agentfolio.store.scope.AccountScope`, so each statement they run carries
that account's condition: a repository cannot name another account's rows.  The one
cross-account read is :meth:`RegistryStore.authenticate_deployment`, which is how a
deployment token's account is found in the first place.

What the registry *does* (the operations, their checks and answers) lives in
:mod:`agentfolio.app.registry`; the domain rules in :mod:`agentfolio.registry`.
"""

from agentfolio.store.registry.records import DeploymentGrant
from agentfolio.store.registry.store import AccountRecord, RegistryStore
from agentfolio.store.registry.unit import RegistryUnit

__all__ = ["AccountRecord", "DeploymentGrant", "RegistryStore", "RegistryUnit"]
