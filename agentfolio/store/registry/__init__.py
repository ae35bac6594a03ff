"""The agent registry's repository: agents, schema versions, instances, spans, idempotency.

Every operation the Prefactor API offers is a named *operation* (``agents/create``,
``agent_spans/create`` …, the names bulk items use as ``_type``) taking a flat dict of
fields (a wrapped request's ``details`` merged with its path parameters) and answering
an :class:`Outcome`: the HTTP status and the exact JSON body the single endpoint sends.
``/api/v1/bulk`` runs the same operations, so a bulk item's output is what the single
endpoint would have answered, and an idempotency key replays the same way through both.

* :meth:`Registry.execute` runs one operation in its own transaction.
* :meth:`Registry.execute_bulk` runs items in order in **one** transaction: each
  non-span item in a savepoint; span creates are buffered and inserted with one
  ``executemany`` (their failure modes are all checked before anything is buffered, so
  nothing needs rolling back).  Processing stops at the first item that errors; the
  items before it are kept.
* Idempotency: ``(account, operation, key)`` → the first answer and the SHA-256 of the
  canonical body (sorted keys, without the key).  A replay answers the first result; the
  same key with another body is ``idempotency_key_already_used`` (409).  Errors are not
  recorded (they changed nothing, so running again is equivalent).
* Spans are never refused for their content: each is validated against its instance's
  schema version (compiled once, :class:`SchemaVersionCache`) and stored with the result.

Layout: :mod:`.repository` (the :class:`Registry`: accounts, tokens, running operations),
:mod:`.transaction` (one transaction: idempotency, dispatch, buffered writes), whose
operations come from the mixins in :mod:`.agents`, :mod:`.schema_versions`,
:mod:`.instances` and :mod:`.spans`; :mod:`.operations` (the operation table),
:mod:`.bulk` (bulk items, buffered inserts), :mod:`.rows` and :mod:`.values` (shared
lookups, values and field checks).

The domain rules live in :mod:`agentfolio.registry`; this module only stores and reads.
"""

from agentfolio.store.registry.operations import OPERATIONS
from agentfolio.store.registry.repository import Registry
from agentfolio.store.registry.values import DEPLOYMENT_TOKEN_PREFIX, OpError, Outcome, Principal, body_hash

__all__ = ["DEPLOYMENT_TOKEN_PREFIX", "OPERATIONS", "OpError", "Outcome", "Principal", "Registry", "body_hash"]
