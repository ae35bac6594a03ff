"""Start-up of file commands: `agentfolio validate|show|convert` on a small file, against
`python -c pass` (the interpreter alone) measured in the same run.

    python bench/cli.py [--runs N]

Prints wall seconds (median of N) and the ratio to the bare interpreter. The target for
`validate` of a small file is 0.3 s wall.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentfolio.samples import synthetic_durable_state  # noqa: E402


def wall(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=False, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        files = {}
        for entries in (10, 1_000, 10_000):
            path = Path(folder) / f"state-{entries}.json"
            path.write_bytes(orjson.dumps(synthetic_durable_state(entries)))
            files[entries] = str(path)
        baseline = wall([sys.executable, "-c", "pass"], args.runs)
        agentfolio = [sys.executable, "-m", "agentfolio.cli"]
        cases = [("python -c pass", baseline)]
        for name, command in [
            ("validate (10 entries)", [*agentfolio, "validate", files[10]]),
            ("validate (1,000 entries)", [*agentfolio, "validate", files[1_000]]),
            ("validate (10,000 entries)", [*agentfolio, "validate", files[10_000]]),
            ("show (10 entries)", [*agentfolio, "show", files[10]]),
            ("convert to envelope (10 entries)", [*agentfolio, "convert", files[10], "--to", "envelope"]),
            ("--help", [*agentfolio, "--help"]),
        ]:
            cases.append((name, wall(command, args.runs)))
    print(f"{'command':<36} {'wall s':>8} {'x python -c pass':>17}")
    for name, seconds in cases:
        print(f"{name:<36} {seconds:>8.3f} {seconds / baseline:>17.1f}")


if __name__ == "__main__":
    main()
