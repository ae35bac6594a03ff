"""Whether a store can serve: the database answers at a schema this code runs on, and the
blob store answers.  A load balancer sends traffic to a server only while it can."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from agentfolio.store.blobs import BlobMissing
from agentfolio.store.engine import schema_status

if TYPE_CHECKING:
    from agentfolio.store import Store

__all__ = ["PROBE_KEY", "readiness_problems"]

log = logging.getLogger("agentfolio.store")

#: A key no blob has (blob keys are ``sha256/…``): reading it must answer "missing".
PROBE_KEY = "readiness-probe"


def readiness_problems(store: Store) -> list[str]:
    """What keeps this store from serving, one short line each (none: ready).  The lines
    name the part, not the failure's text, which may hold addresses or credentials."""
    problems = []
    try:
        status = schema_status(store.engine)
    except Exception:
        log.warning("readiness: the database does not answer", exc_info=True)
        problems.append("database: not reachable")
    else:
        if status.state in ("behind", "empty"):
            problems.append(f"database: schema at {status.current or 'nothing'}, this server needs "
                            f"{status.head}; run 'agentfolio db upgrade'")
    try:
        store.blobs.get(PROBE_KEY)
    except BlobMissing:
        pass  # the store answered
    except Exception:
        log.warning("readiness: the blob store does not answer", exc_info=True)
        problems.append("blob store: not reachable")
    return problems
