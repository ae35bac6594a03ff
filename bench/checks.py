"""Benchmark: the checks that must stay cheap whatever the input, timed here rather than in
the tests (which assert only what the checks decide).

* glob refusal: a name glob of 40 brace groups (2**40 expansions if expanded) is refused
  by counting, against compiling an ordinary 12-group glob in the same run;
* span validation: payloads validated per second against a compiled schema version
  (the ingest target needs 5,000 spans/s; the check alone should be well above it),
  against ``orjson.loads`` of the same payloads as the baseline.

Usage: python bench/checks.py [--spans N] [--repeat K]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson

from agentfolio.body import GlobError, name_glob
from agentfolio.registry.schema_versions import normalise_schema_version
from agentfolio.registry.spans import CompiledSchemaVersion
from bench._timing import best_of

VERSION = normalise_schema_version({"span_type_schemas": [
    {"name": "agent:llm",
     "params_schema": {"type": "object", "required": ["model", "prompt"],
                       "properties": {"model": {"type": "string"}, "prompt": {"type": "string"}}},
     "result_schema": {"type": "object", "required": ["response"], "properties": {"response": {"type": "string"}}}},
]})


def refuse_bomb() -> None:
    try:
        name_glob("/" + "{a,b}" * 40)
    except GlobError:
        return
    raise AssertionError("a 2**40-expansion glob was accepted")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    fresh = iter(range(10**9))  # a new glob each run: the compile cache must not answer
    ordinary = best_of(args.repeat, lambda: name_glob(f"/{next(fresh)}" + "{a,b}" * 12))
    bomb = best_of(args.repeat, refuse_bomb)
    print(f"glob of 2**40 expansions refused in {bomb * 1e3:.2f} ms "
          f"({bomb / ordinary:.1f}x compiling a 12-group glob, {ordinary * 1e3:.2f} ms)")

    version = CompiledSchemaVersion.from_draft(VERSION)
    payloads = [({"model": "m", "prompt": str(i)}, {"response": "r"}) for i in range(args.spans)]
    raw = [orjson.dumps(p) for p in payloads]
    loads = best_of(args.repeat, lambda: [orjson.loads(r) for r in raw])
    checked = best_of(args.repeat, lambda: [version.validate("agent:llm", p, r) for p, r in payloads])
    print(f"span validation: {args.spans / checked:,.0f} spans/s ({checked / loads:.1f}x orjson.loads of the "
          f"same payloads; the ingest target needs 5,000 spans/s)")


if __name__ == "__main__":
    main()
