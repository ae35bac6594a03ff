"""The HTTP API: each area's router under ``/api/v1``; :func:`agentfolio.api.app.install_api`
mounts them (``agentfolio.server`` builds the served app)."""
