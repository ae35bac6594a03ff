"""Mutation check for account isolation: remove each scoping call in turn, expect a test to fail.

Every statement that reaches an account's rows is built by an ``AccountScope`` method
(``agentfolio/store/scope.py``).  For each call of one in ``agentfolio/store``, this runs
the isolation suite with that one call building its statement without the account
condition (the ``tests/scope_mutation.py`` plugin does it at run time, the source is not
touched).  A call whose removal no test notices is listed as a survivor, and the exit
status is 1.

    .venv/bin/python scripts/mutate_scope.py            # every call site, SQLite
    .venv/bin/python scripts/mutate_scope.py --list     # just the call sites
    .venv/bin/python scripts/mutate_scope.py --only sessions   # the call sites of matching files
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CALL = re.compile(r"\bscope\.(owns|select|count|exists|update|delete|insert|rows)\(")
#: The isolation suites: every ``tests/store/test_isolation*.py``.
SUITE = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "tests" / "store").glob("test_isolation*.py"))


def call_sites() -> list[tuple[str, int, str]]:
    """(path relative to the root, line, method) of every AccountScope call in the store."""
    sites = []
    for path in sorted((ROOT / "agentfolio" / "store").rglob("*.py")):
        if path.name == "scope.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            sites.extend((str(path.relative_to(ROOT)), number, match.group(1)) for match in CALL.finditer(line))
    return sites


def suite_for(mutant: str | None) -> list[str]:
    """Every isolation suite, the one named after the mutated module first: with ``-x`` a
    mutant its own suite kills costs only that suite's run; the others still run when it
    survives there."""
    stem = Path((mutant or "").rpartition(":")[0]).stem
    return sorted(SUITE, key=lambda path: Path(path).stem != f"test_isolation_{stem}")


def run(mutant: str | None, backend: str) -> bool:
    env = {**os.environ, "AGENTFOLIO_SCOPE_MUTANT": mutant or ""}
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "tests.scope_mutation", "-p", "no:cacheprovider",
               "-k", backend, *suite_for(mutant)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    return done.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="only list the call sites")
    parser.add_argument("--backend", default="sqlite", help="pytest -k expression choosing the backend")
    parser.add_argument("--only", default="", help="only the call sites in files whose path contains this")
    args = parser.parse_args()
    sites = [site for site in call_sites() if args.only in site[0]]
    if args.list:
        for path, line, method in sites:
            print(f"{path}:{line} {method}")
        return 0
    if not run(None, args.backend):
        print("the isolation suite fails without any mutation: fix it first", file=sys.stderr)
        return 2
    survivors = []
    for path, line, method in sites:
        killed = not run(f"{path}:{line}", args.backend)
        print(f"{'killed  ' if killed else 'SURVIVED'} {path}:{line} {method}", flush=True)
        if not killed:
            survivors.append((path, line, method))
    print(f"{len(sites) - len(survivors)} of {len(sites)} scoping calls are needed by a test; "
          f"{len(survivors)} survived")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
