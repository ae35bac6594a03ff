"""Benchmark: validating, reading and writing a 10,000-entry durable agent state.

Everything is measured in one run, on one document of about 6 MB (requests and
responses with tool calls, results and text, as agent turns are), and printed as
ratios against the baselines measured beside it:

* ``orjson.loads`` of the bytes, and ``orjson.dumps`` of the parsed document;
* python ``jsonschema`` validating the same parsed document against the same schema;
* Microsoft's ``DurableAgentState.from_dict`` (agent-framework-durabletask) on it.

Ours:

* validate: version check + schema check (jsonschema-rs) of the parsed document;
* read: bytes → parsed → version check → schema check → a result whose session's
  records are built on first use; and the same with every record built (what ``show``
  and ``convert`` pay);
* write: the model → durable-state bytes.  A session read from a document writes back
  that document, and entries read from one their source JSON (records are immutable, so
  it is still exact); a session built in Python has no source and goes through
  pydantic's serializer: both are shown.

Each figure is the best of several runs (the minimum is the least disturbed by other
processes), each run with the cyclic garbage collector paused, baselines included: with
several large documents alive in one process, a collection pass can cost more than the
work measured, and it would fall on whichever row happened to trigger it.  Usage: python bench/durable_state.py [--entries N] [--repeat K]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson

from agentfolio.formats import durable_state
from agentfolio.formats.schema_check import bundled_schema
from agentfolio.model import Session
from agentfolio.samples import synthetic_durable_state
from bench._timing import best_of

# Peak memory of one read, in a fresh process so nothing else alive counts: the peak
# resident size after the read less the peak before it (imports done, the schema compiled
# by reading a one-entry state, bytes in memory).  "read" checks the document and leaves
# its records to first use; "build" then builds every record (what show/convert do).
_MEMORY_PROBE = """
import resource, sys
from pathlib import Path
import orjson
from agentfolio.formats import durable_state
from agentfolio.samples import synthetic_durable_state
data = Path(sys.argv[2]).read_bytes()
durable_state.read_bytes(orjson.dumps(synthetic_durable_state(1))).session
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if sys.argv[1] == "loads":
    kept = orjson.loads(data)
else:
    kept = durable_state.read_bytes(data, strict=True)
    if sys.argv[1] == "build":
        kept.session
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


def memory(sizes: list[int]) -> None:
    """Peak memory of reading a durable state, beside orjson.loads, as multiples of the
    document's size (target: read ≤ 4x the document)."""
    import subprocess
    import tempfile

    root = str(Path(__file__).resolve().parent.parent)
    for entries in sizes:
        with tempfile.NamedTemporaryFile(suffix=".json") as file:
            file.write(orjson.dumps(synthetic_durable_state(entries)))
            file.flush()
            size = Path(file.name).stat().st_size
            peaks = {}
            for what in ("loads", "read", "build"):
                done = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, what, file.name], capture_output=True,
                                      text=True, check=True, cwd=root)
                peaks[what] = int(done.stdout.strip()) * 1024  # ru_maxrss is in KiB on Linux
            print(f"{entries:>7,} entries, {size / 1e6:6.1f} MB: orjson.loads peak {peaks['loads'] / size:5.2f}x "
                  f"the document; agentfolio read {peaks['read'] / size:5.2f}x (target ≤ 4x, "
                  f"{peaks['read'] / max(peaks['loads'], 1):4.2f}x loads); read + every record built "
                  f"{peaks['build'] / size:5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--memory", type=int, nargs="*", metavar="ENTRIES",
                        help="measure peak memory instead, at these sizes (e.g. 1000 10000 100000)")
    args = parser.parse_args()
    if args.memory is not None:
        memory(args.memory or [1_000, 10_000, 100_000])
        return

    document = synthetic_durable_state(args.entries)
    raw = orjson.dumps(document)
    schema_file = durable_state.parse_version(document).schema_file
    print(f"document: {args.entries:,} entries, {len(raw) / 1e6:.1f} MB, schemaVersion {document['schemaVersion']}; "
          f"python {platform.python_version()}, best of {args.repeat}")

    loads = best_of(args.repeat, lambda: orjson.loads(raw))
    dumps = best_of(args.repeat, lambda: orjson.dumps(document))

    validate = best_of(args.repeat, lambda: durable_state.validate(document))
    assert durable_state.validate(document)[1] == []
    read = best_of(args.repeat, lambda: durable_state.read_bytes(raw, strict=True))
    build = best_of(args.repeat, lambda: durable_state.read_bytes(raw, strict=True).session)
    session = durable_state.read_bytes(raw, strict=True).session
    write = best_of(args.repeat, lambda: durable_state.dumps(session, indent=False))
    assert orjson.loads(durable_state.dumps(session, indent=False)) == document
    built = Session.model_validate(document)  # the same session with no sources: pydantic's serializer
    write_built = best_of(args.repeat, lambda: durable_state.dumps(built, indent=False))
    assert orjson.loads(durable_state.dumps(built, indent=False)) == document

    import jsonschema

    python_validator = jsonschema.Draft202012Validator(bundled_schema(schema_file))
    python_validate = best_of(1, lambda: python_validator.is_valid(document))

    from agent_framework_durabletask._durable_agent_state import DurableAgentState

    microsoft_read = best_of(max(1, args.repeat // 3), lambda: DurableAgentState.from_dict(document))
    state = DurableAgentState.from_dict(document)
    microsoft_write = best_of(max(1, args.repeat // 3), lambda: json.dumps(state.to_dict()))

    rows = [
        ("orjson.loads (baseline)", loads, loads, "1.00x loads"),
        ("agentfolio validate", validate, loads, "target ≤ 1.5x loads"),
        ("python jsonschema validate", python_validate, loads, ""),
        ("agentfolio read (validated; records on first use)", read, loads, "target ≤ 4x loads"),
        ("agentfolio read, every record built", build, loads, ""),
        ("Microsoft DurableAgentState.from_dict", microsoft_read, loads, ""),
        ("orjson.dumps (baseline)", dumps, dumps, "1.00x dumps"),
        ("agentfolio write (session read from bytes)", write, dumps, "target ≤ 3x dumps"),
        ("agentfolio write (session built in Python)", write_built, dumps, ""),
        ("Microsoft to_dict + json.dumps", microsoft_write, dumps, ""),
    ]
    width = max(len(name) for name, *_ in rows)
    for name, seconds, base, note in rows:
        unit = "loads" if base is loads else "dumps"
        print(f"{name:<{width}}  {seconds * 1000:9.1f} ms  {seconds / base:7.2f}x {unit}  {note}")
    print(f"read with every record built is {microsoft_read / build:.1f}x faster than Microsoft's from_dict (target ≥ 5x); "
          f"python jsonschema takes {python_validate / validate:.0f}x our validate")


if __name__ == "__main__":
    main()
