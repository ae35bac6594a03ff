#!/usr/bin/env bash
# Start the machine's PostgreSQL 15 if it is not running, create the test role and database
# (idempotent), and print the database URL on stdout.  Run as root (CI and developers are).
#   export AGENTFOLIO_TEST_POSTGRES_URL="$(scripts/ensure-postgres.sh)"
# Exits non-zero, with the reason on stderr, when no server can be started.
set -euo pipefail

VERSION="${PG_VERSION:-15}"
CLUSTER="${PG_CLUSTER:-main}"
ROLE="${AGENTFOLIO_TEST_PG_ROLE:-agentfolio}"
PASSWORD="${AGENTFOLIO_TEST_PG_PASSWORD:-agentfolio}"
DATABASE="${AGENTFOLIO_TEST_PG_DATABASE:-agentfolio_test}"

if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    echo "ensure-postgres: pg_ctlcluster not found (apt-get install postgresql-$VERSION)" >&2
    exit 1
fi
if [ "$(id -u)" != 0 ]; then
    echo "ensure-postgres: must run as root to start the cluster" >&2
    exit 1
fi

status=0
pg_ctlcluster "$VERSION" "$CLUSTER" status >/dev/null 2>&1 || status=$?
if [ "$status" != 0 ]; then
    pg_ctlcluster "$VERSION" "$CLUSTER" start >&2
fi

port="$(pg_conftool -s "$VERSION" "$CLUSTER" show port 2>/dev/null || echo 5432)"
psql_as_postgres() { su postgres -s /bin/sh -c "psql -p $port -v ON_ERROR_STOP=1 -qtAX $*"; }

for _ in $(seq 1 50); do
    if su postgres -s /bin/sh -c "pg_isready -q -p $port"; then break; fi
    sleep 0.2
done

if [ "$(psql_as_postgres "-c \"SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'\"")" != 1 ]; then
    psql_as_postgres "-c \"CREATE ROLE $ROLE LOGIN PASSWORD '$PASSWORD'\"" >&2
fi
if [ "$(psql_as_postgres "-c \"SELECT 1 FROM pg_database WHERE datname = '$DATABASE'\"")" != 1 ]; then
    psql_as_postgres "-c \"CREATE DATABASE $DATABASE OWNER $ROLE\"" >&2
fi

echo "postgresql+psycopg://$ROLE:$PASSWORD@127.0.0.1:$port/$DATABASE"
