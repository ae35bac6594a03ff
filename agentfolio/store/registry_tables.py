"""Tables of the agent registry: agents, versions, schema versions, deployments,
instances, spans, deployment tokens and idempotency records.

Defined on the store's one :data:`agentfolio.store.tables.metadata` (migration
``0002_registry``).  Conventions:

* rows are keyed by their public ID (32-character time-ordered PFID, ``registry.ids``),
  and carry ``account_pk`` so every query is scoped to one account;
* times are integer microseconds since the Unix epoch (exact on both backends, and
  sortable); they are answered as ``…Z`` strings;
* JSON documents (payloads, schemas, validation results) are stored as orjson bytes;
  the large ones a span or a conversation carries (``PackedJson``) compressed at rest
  (``agentfolio.store.packing``).
"""

from __future__ import annotations

import sqlalchemy as sa

from agentfolio.store.packing import PackedJson
from agentfolio.store.tables import BigKey, metadata

Id = sa.String(32)
Micros = sa.BigInteger
Json = sa.LargeBinary
Name = sa.String(255)


def _account() -> sa.Column[int]:
    return sa.Column("account_pk", sa.BigInteger, sa.ForeignKey("accounts.pk", ondelete="CASCADE"), nullable=False)


# One row per account that has used the registry: its public id (whose partition all of
# the account's IDs share), its default environment, and its risk profile (NULL: default).
registry_accounts = sa.Table(
    "registry_accounts", metadata,
    sa.Column("account_pk", sa.BigInteger, sa.ForeignKey("accounts.pk", ondelete="CASCADE"), primary_key=True,
              autoincrement=False),
    sa.Column("id", Id, nullable=False, unique=True),
    sa.Column("default_environment_id", Id, nullable=False),
    sa.Column("risk_profile", Json, nullable=True),
    sa.Column("inserted_at", Micros, nullable=False),
)

registry_environments = sa.Table(
    "registry_environments", metadata,
    sa.Column("id", Id, primary_key=True),
    _account(),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("inserted_at", Micros, nullable=False),
    sa.UniqueConstraint("account_pk", "name"),
)

registry_agents = sa.Table(
    "registry_agents", metadata,
    sa.Column("id", Id, primary_key=True),
    _account(),
    sa.Column("name", Name, nullable=False),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("external_identifier", Name, nullable=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("owner_person_id", sa.String(64), nullable=True),
    sa.Column("risk_profile_id", sa.String(64), nullable=True),
    sa.Column("team_id", sa.String(64), nullable=True),
    sa.Column("current_version_id", Id, nullable=True),
    sa.Column("current_schema_version_id", Id, nullable=True),
    sa.Column("inserted_at", Micros, nullable=False),
    sa.Column("updated_at", Micros, nullable=False),
    sa.UniqueConstraint("account_pk", "external_identifier"),
    sa.Index(None, "account_pk", "id"),
)

registry_agent_versions = sa.Table(
    "registry_agent_versions", metadata,
    sa.Column("id", Id, primary_key=True),
    _account(),
    sa.Column("agent_id", Id, sa.ForeignKey("registry_agents.id", ondelete="CASCADE"), nullable=False),
    sa.Column("name", Name, nullable=True),
    sa.Column("external_identifier", Name, nullable=True),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("runtime_environment", Json, nullable=True),
    # SHA-256 of the declared content: a re-registration of the same version reuses the row.
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("inserted_at", Micros, nullable=False),
    sa.UniqueConstraint("agent_id", "fingerprint"),
)

registry_schema_versions = sa.Table(
    "registry_schema_versions", metadata,
    sa.Column("id", Id, primary_key=True),
    _account(),
    sa.Column("agent_id", Id, sa.ForeignKey("registry_agents.id", ondelete="CASCADE"), nullable=False),
    sa.Column("external_identifier", Name, nullable=True),
    # SchemaVersionDraft.fingerprint(): registrations declaring the same span types share a row.
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("span_type_schemas", Json, nullable=False),
    sa.Column("quality_schemas", Json, nullable=False),
    sa.Column("inserted_at", Micros, nullable=False),
    sa.Column("updated_at", Micros, nullable=False),
    sa.Index(None, "agent_id", "fingerprint"),
    sa.Index(None, "agent_id", "external_identifier"),
)

# An agent in an environment: what deployment tokens are bound to, and which version runs there.
registry_deployments = sa.Table(
    "registry_deployments", metadata,
    sa.Column("id", Id, primary_key=True),
    _account(),
    sa.Column("agent_id", Id, sa.ForeignKey("registry_agents.id", ondelete="CASCADE"), nullable=False),
    sa.Column("environment_id", Id, sa.ForeignKey("registry_environments.id", ondelete="CASCADE"), nullable=False),
    sa.Column("current_version_id", Id, nullable=True),
    sa.Column("current_schema_version_id", Id, nullable=True),
    sa.Column("inserted_at", Micros, nullable=False),
    sa.Column("updated_at", Micros, nullable=False),
    sa.UniqueConstraint("agent_id", "environment_id"),
)

# Deployment-scoped bearer tokens (account tokens live in ``tokens``); SHA-256 only.
registry_deployment_tokens = sa.Table(
    "registry_tokens", metadata,
    sa.Column("pk", BigKey, primary_key=True, autoincrement=True),
    _account(),
    sa.Column("deployment_id", Id, sa.ForeignKey("registry_deployments.id", ondelete="CASCADE"), nullable=False),
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("prefix", sa.String(16), nullable=False),
    sa.Column("label", sa.String(200), nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("revoked_at", sa.Float, nullable=True),
)

registry_instances = sa.Table(
    "registry_instances", metadata,
    sa.Column("id", Id, primary_key=True),
    _account(),
    sa.Column("agent_id", Id, sa.ForeignKey("registry_agents.id", ondelete="CASCADE"), nullable=False),
    sa.Column("agent_version_id", Id, nullable=False),
    sa.Column("schema_version_id", Id, nullable=True),
    sa.Column("environment_id", Id, nullable=False),
    sa.Column("deployment_id", Id, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("external_identifier", Name, nullable=True),
    sa.Column("purpose", sa.String(32), nullable=False),
    # The agentfolio session (``sessions.id`` of the same account) this run belongs to.
    sa.Column("session_id", sa.String(200), nullable=True),
    sa.Column("started_at", Micros, nullable=True),
    sa.Column("finished_at", Micros, nullable=True),
    sa.Column("termination_reason", sa.Text, nullable=True),
    sa.Column("quality_payloads", Json, nullable=True),
    sa.Column("inserted_at", Micros, nullable=False),
    sa.Column("updated_at", Micros, nullable=False),
    sa.UniqueConstraint("agent_id", "external_identifier"),
    sa.Index(None, "account_pk", "id"),
    sa.Index(None, "agent_id", "id"),
    # The trace list in start order.
    sa.Index("ix_registry_instances_started", "account_pk", "started_at", "id"),
)

registry_spans = sa.Table(
    "registry_spans", metadata,
    sa.Column("id", Id, primary_key=True),
    _account(),
    sa.Column("agent_id", Id, nullable=False),
    sa.Column("instance_id", Id, sa.ForeignKey("registry_instances.id", ondelete="CASCADE"), nullable=False),
    sa.Column("schema_version_id", Id, nullable=True),
    # As the client sent it: may name no span (the SDK's temporary keys); then parent_found is false.
    sa.Column("parent_span_id", sa.String(200), nullable=True),
    sa.Column("parent_found", sa.Boolean, nullable=True),
    sa.Column("schema_name", Name, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("payload", PackedJson, nullable=False),
    sa.Column("result_payload", PackedJson, nullable=True),
    sa.Column("sensitive_encoding", sa.Boolean, nullable=False),
    # valid / invalid / unchecked; the problems (NULL when valid) as JSON.
    sa.Column("validation_status", sa.String(16), nullable=False),
    sa.Column("validation", Json, nullable=True),
    sa.Column("session_id", sa.String(200), nullable=True),
    sa.Column("started_at", Micros, nullable=True),
    sa.Column("finished_at", Micros, nullable=True),
    sa.Column("inserted_at", Micros, nullable=False),
    sa.Column("updated_at", Micros, nullable=False),
    # (No index on (instance_id, id): the tree index's prefix serves every read by trace.)
    sa.Index(None, "account_pk", "id"),
    sa.Index(None, "agent_id", "id"),
    sa.Index(None, "account_pk", "session_id"),
    # A span's children in start order: the trace page walks the tree a page at a time.
    sa.Index("ix_registry_spans_tree", "instance_id", "parent_span_id", "started_at", "id"),
    # A trace's roots (no parent, or a parent not among its spans), in start order.
    sa.Index("ix_registry_spans_roots", "instance_id", "started_at", "id",
             sqlite_where=sa.text("parent_found IS NOT 1"), postgresql_where=sa.text("parent_found IS NOT true")),
    # The account's span list sorted by start, and filtered by status or validation, a
    # page at a time whatever the account holds.
    sa.Index("ix_registry_spans_started", "account_pk", "started_at", "id"),
    sa.Index("ix_registry_spans_status", "account_pk", "status", "id"),
    sa.Index("ix_registry_spans_validation", "account_pk", "validation_status", "id"),
    sa.Index("ix_registry_spans_validation_started", "account_pk", "validation_status", "started_at", "id"),
)

# Per trace (instance): how many spans, failed spans and spans failing validation, and
# when its spans start and end.  Kept by every writer of spans, one row per trace per
# batch (``agentfolio.store.registry.trace_stats``), so listing traces never counts spans.
registry_trace_stats = sa.Table(
    "registry_trace_stats", metadata,
    sa.Column("instance_id", Id, sa.ForeignKey("registry_instances.id", ondelete="CASCADE"), primary_key=True),
    _account(),
    sa.Column("span_count", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("failed_count", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("invalid_count", sa.BigInteger, nullable=False, server_default="0"),
    # The timeline's bounds: first span start, last span end (they only widen).
    sa.Column("first_start", sa.BigInteger, nullable=True),
    sa.Column("last_end", sa.BigInteger, nullable=True),
)

# How many spans an account has, per agent, status and validation status and per each
# coarser grouping of them ('' in a column: any value), so a span list filtered by these
# answers its ``item_count`` from a few rows instead of counting spans.  Kept by every
# writer of spans, one upsert per key per batch (``agentfolio.store.registry.span_counts``);
# on PostgreSQL each transaction adds to one of several ``shard`` rows of a key, so
# concurrent writers of one account rarely wait for each other's row, and a count is
# the sum of a key's shards.
registry_span_counts = sa.Table(
    "registry_span_counts", metadata,
    _account(),
    sa.Column("agent_id", sa.String(32), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("validation_status", sa.String(16), nullable=False),
    sa.Column("shard", sa.SmallInteger, nullable=False),
    sa.Column("spans", sa.BigInteger, nullable=False),
    sa.PrimaryKeyConstraint("account_pk", "agent_id", "status", "validation_status", "shard"),
)

# Spans stored before their parent, found again when the parent arrives: a partial index,
# so the lookup costs the orphans' count, never the account's spans.
sa.Index("ix_registry_spans_parent_missing", registry_spans.c.account_pk, registry_spans.c.parent_span_id,
         sqlite_where=registry_spans.c.parent_found == sa.false(),
         postgresql_where=registry_spans.c.parent_found == sa.false())

# When each OTel trace of an account was first seen (milliseconds): the time part of its
# spans' registry ids (``agentfolio.otel.mapping.registry_span_id``).  The first request
# naming a trace fixes it (insert-if-absent, then read back, in the spans' transaction),
# so every request on every server derives the same id for the same span (a re-sent span
# is recognised, a child names its parent before the parent arrives) while new spans' ids
# sort by time, and each trace's inserts land together at the right end of every index
# holding span ids.  ``legacy_ids``: a trace stored before epochs existed, whose span ids
# keep the time part derived from the hash (its stored spans keep their ids).
otel_trace_epochs = sa.Table(
    "otel_trace_epochs", metadata,
    sa.Column("account_pk", sa.BigInteger, sa.ForeignKey("accounts.pk", ondelete="CASCADE"), primary_key=True,
              autoincrement=False),
    sa.Column("trace_id", sa.String(32), primary_key=True),
    sa.Column("epoch_ms", sa.BigInteger, nullable=False),
    sa.Column("legacy_ids", sa.Boolean, nullable=False),
    # Retention: the traces first seen before its window.
    sa.Index("ix_otel_trace_epochs_epoch", "epoch_ms"),
)

# Where each conversation built from OTel spans stands (the conversation state of
# ``agentfolio.otel.conversation``), so later spans extend its session instead of
# building it again: the session version it describes and how many of the session's
# spans it has taken (another count means spans arrived elsewhere: build it again).
otel_conversations = sa.Table(
    "otel_conversations", metadata,
    sa.Column("account_pk", sa.BigInteger, sa.ForeignKey("accounts.pk", ondelete="CASCADE"), primary_key=True,
              autoincrement=False),
    sa.Column("session_id", sa.String(200), primary_key=True),
    sa.Column("state", PackedJson, nullable=False),
    sa.Column("session_version", sa.BigInteger, nullable=False),
    sa.Column("spans", sa.Integer, nullable=False),
    sa.Column("updated_at", Micros, nullable=False),
)

# The conversation work waiting after OTel spans are stored (the spans are queryable at
# once; their sessions are brought up to date after the answer, by a worker in any server
# process): one row per session with work, and one per span it has still to take in.  A
# worker claims a session by setting ``claim`` and ``lease_until`` (microseconds; 0: free),
# and finishes it in the same transaction as the session write, deleting the spans it took
# and the session's row once none are left: a crash before that commit leaves the work
# to whoever claims it when the lease ends.  ``generation`` moves on with each request
# that adds spans (it locks the row, so a finishing worker and a new request serialize).
otel_work = sa.Table(
    "otel_work", metadata,
    sa.Column("account_pk", sa.BigInteger, sa.ForeignKey("accounts.pk", ondelete="CASCADE"), primary_key=True,
              autoincrement=False),
    sa.Column("session_id", sa.String(200), primary_key=True),
    sa.Column("enqueued_at", Micros, nullable=False),
    sa.Column("generation", sa.BigInteger, nullable=False),
    sa.Column("lease_until", Micros, nullable=False),
    sa.Column("claim", sa.String(32), nullable=True),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Index("ix_otel_work_enqueued", "enqueued_at"),
)

otel_work_spans = sa.Table(
    "otel_work_spans", metadata,
    sa.Column("account_pk", sa.BigInteger, sa.ForeignKey("accounts.pk", ondelete="CASCADE"), primary_key=True,
              autoincrement=False),
    sa.Column("session_id", sa.String(200), primary_key=True),
    sa.Column("span_id", Id, primary_key=True),
    # An LLM span: its session gets a conversation even if it has none yet.
    sa.Column("llm", sa.Boolean, nullable=False),
)

# A replayed request (same account, operation and key) answers again; the same key with
# another body is refused.  ``body_hash``: SHA-256 of the canonical body; ``resource_id``:
# what the first request made or changed, whose answer a replay reads again.  ``response``
# is kept only where nothing is left to read (a deletion's answer).  Records expire
# ``idempotency_window`` seconds after ``inserted_at``.
registry_idempotency = sa.Table(
    "registry_idempotency", metadata,
    sa.Column("account_pk", sa.BigInteger, sa.ForeignKey("accounts.pk", ondelete="CASCADE"), primary_key=True,
              autoincrement=False),
    sa.Column("operation", sa.String(64), primary_key=True),
    sa.Column("key", sa.String(128), primary_key=True),
    sa.Column("body_hash", sa.String(64), nullable=False),
    sa.Column("status", sa.Integer, nullable=False),
    sa.Column("response", Json, nullable=True),
    sa.Column("resource_id", Id, nullable=True),
    sa.Column("inserted_at", Micros, nullable=False),
    sa.Index(None, "inserted_at"),
)

# Risk profiles an account keeps; an agent is scored under the one its ``risk_profile_id``
# names (NULL: the account's default).  ``profile``: the RiskProfile as JSON.
registry_risk_profiles = sa.Table(
    "registry_risk_profiles", metadata,
    sa.Column("id", Id, primary_key=True),
    _account(),
    sa.Column("name", Name, nullable=False),
    sa.Column("profile", Json, nullable=False),
    sa.Column("inserted_at", Micros, nullable=False),
    sa.Column("updated_at", Micros, nullable=False),
    sa.UniqueConstraint("account_pk", "name"),
)

# What someone should look at, raised once per subject (a span, a run, a schema version)
# when it is written, and counted until it is acknowledged.
registry_alerts = sa.Table(
    "registry_alerts", metadata,
    sa.Column("id", Id, primary_key=True),
    _account(),
    sa.Column("kind", sa.String(40), nullable=False),
    sa.Column("severity", sa.String(16), nullable=False),
    sa.Column("subject_id", sa.String(32), nullable=False),
    sa.Column("agent_id", Id, sa.ForeignKey("registry_agents.id", ondelete="CASCADE"), nullable=False),
    sa.Column("instance_id", Id, nullable=True),
    sa.Column("span_id", Id, nullable=True),
    sa.Column("schema_version_id", Id, nullable=True),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("inserted_at", Micros, nullable=False),
    sa.Column("acknowledged_at", Micros, nullable=True),
    sa.UniqueConstraint("account_pk", "kind", "subject_id"),
    # the unacknowledged count reads this index only
    sa.Index(None, "account_pk", "acknowledged_at"),
)
