"""The operation table (name → method, writes, buffered) and the sortable columns of each list."""

from __future__ import annotations

from agentfolio.store.registry_tables import (
    registry_agents as t_agents,
    registry_instances as t_instances,
    registry_spans as t_spans,
)


# --------------------------------------------------------------------------- operations

#: operation → (method name, writes, span operation: buffered, no savepoint)
OPERATIONS: dict[str, tuple[str, bool, bool]] = {
    "agents/create": ("agents_create", True, False),
    "agents/update": ("agents_update", True, False),
    "agents/retire": ("agents_retire", True, False),
    "agents/reinstate": ("agents_reinstate", True, False),
    "agents/delete": ("agents_delete", True, False),
    "agents/get": ("agents_get", False, False),
    "agents/show": ("agents_show", False, False),
    "agents/list": ("agents_list", False, False),
    "agent_schema_versions/create": ("schema_versions_create", True, False),
    "agent_schema_versions/get": ("schema_versions_get", False, False),
    "agent_instances/register": ("instances_register", True, False),
    "agent_instances/start": ("instances_start", True, False),
    "agent_instances/finish": ("instances_finish", True, False),
    "agent_instances/record_quality": ("instances_record_quality", True, False),
    "agent_instances/terminate": ("instances_terminate", True, False),
    "agent_instances/show": ("instances_get", False, False),
    "agent_instances/get": ("instances_get", False, False),
    "agent_instances/list": ("instances_list", False, False),
    "agent_spans/create": ("spans_create", True, True),
    "agent_spans/finish": ("spans_finish", True, True),
    "agent_spans/get": ("spans_get", False, False),
    "agent_spans/list": ("spans_list", False, False),
}

AGENT_SORT = {"id": t_agents.c.id, "name": t_agents.c.name, "status": t_agents.c.status,
              "inserted_at": t_agents.c.inserted_at, "updated_at": t_agents.c.updated_at}
INSTANCE_SORT = {"id": t_instances.c.id, "status": t_instances.c.status, "inserted_at": t_instances.c.inserted_at,
                 "updated_at": t_instances.c.updated_at, "started_at": t_instances.c.started_at,
                 "finished_at": t_instances.c.finished_at}
SPAN_SORT = {"id": t_spans.c.id, "status": t_spans.c.status, "schema_name": t_spans.c.schema_name,
             "inserted_at": t_spans.c.inserted_at, "updated_at": t_spans.c.updated_at,
             "started_at": t_spans.c.started_at, "finished_at": t_spans.c.finished_at}

SPAN_COLUMNS = [c.name for c in t_spans.columns]
