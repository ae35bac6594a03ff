"""Governance domain for agent registries: IDs, schema versions, span
validation, display templates and data-risk scoring.

Pure domain code: no HTTP, no database.  The API layer (``agentfolio.api``) and the
store (``agentfolio.store``) call into it; ``docs/prefactor-api.md`` is the wire
contract it serves and ``docs/registry.md`` explains scoring and templates.
"""
