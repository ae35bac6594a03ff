"""The Prefactor-compatible registry API (docs/prefactor-api.md): one router per area."""

from agentfolio.api.registry import agent_instances, agent_spans, agents, bulk, governance

routers = [agents.router, agent_instances.router, agent_spans.router, bulk.router, governance.router]
