"""A Prometheus `query_range` answer saved by curl: one line of `--mb` megabytes, ingested in bounded memory.

    python benchmarks/json_document.py [--mb 200] [--dir /tmp/x] [--pretty]

Writes one dcgm-exporter answer (a day at 15 s of GPU temperature and power, 8 GPUs a host, as many hosts as
fill `--mb`) on a single line with no newline, as `curl -o` saves it, then runs in child processes, each
reporting its own wall and CPU seconds and peak RSS:
  - the floor: ijson's bare event parse of the file (nothing kept),
  - `Lab.ingest` of the file into a fresh database file.
The issue's bound: 200 MB ingest with a peak RSS under 1 GiB (before issue 30 the line was skipped as longer than
1 MiB, and nothing was read). `--pretty` writes it pretty-printed instead (millions of lines).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

T0 = 1796083200  # 2026-12-01T00:00:00Z
POINTS = 5760  # a day at 15 s

CHILD = """
import resource, sys, time
t, c = time.perf_counter(), time.process_time()
{body}
u = resource.getrusage(resource.RUSAGE_SELF)
print(f"{{time.perf_counter() - t:.1f}} {{u.ru_utime + u.ru_stime:.1f}} {{u.ru_maxrss / 1024:.0f}} {{n}}")
"""
FLOOR = """
import ijson
n = 0
with open(sys.argv[1], "rb") as f:
    for _, event, _ in ijson.parse(f, use_float=True, multiple_values=True):
        n += event == "number"
"""
INGEST = """
from clusterlab import Lab
with Lab(sys.argv[2]) as lab:
    s = lab.ingest(sys.argv[1])
    assert not s.problems, s.problems[:3]
    n = lab.sql("SELECT count(*) FROM telemetry").rows()[0][0]
"""


def _series(mb: float):
    """Series as compact JSON text, 8 GPUs x 2 metrics a host, until they make `mb` megabytes."""
    size, host = 0, 0
    while size < mb * 1e6:
        for gpu in range(8):
            for name, base in (("DCGM_FI_DEV_GPU_TEMP", 40), ("DCGM_FI_DEV_POWER_USAGE", 300)):
                metric = {"__name__": name, "Hostname": f"tern-{host:04d}", "gpu": str(gpu),
                          "instance": f"10.8.{host // 250}.{host % 250}:9400", "job": "dcgm"}
                values = ",".join(f'[{T0 + 15 * i},"{base + (i + gpu) % 29}"]' for i in range(POINTS))
                s = f'{{"metric":{json.dumps(metric, separators=(",", ":"))},"values":[{values}]}}'
                size += len(s) + 1
                yield s
        host += 1


def write(path: Path, mb: float, pretty: bool) -> int:
    """The answer, `mb` megabytes or a little more (compact); returns its points."""
    n = 0
    with open(path, "w") as f:
        if pretty:
            series = [json.loads(s) for s in _series(mb)]
            n = len(series)
            json.dump({"status": "success", "data": {"resultType": "matrix", "result": series}}, f, indent=2)
        else:
            f.write('{"status":"success","data":{"resultType":"matrix","result":[')
            for s in _series(mb):
                f.write(("," if n else "") + s)
                n += 1
            f.write("]}}")
    return n * POINTS


def child(body: str, *args: str) -> tuple[float, float, float, int]:
    out = subprocess.run([sys.executable, "-c", CHILD.format(body=body), *args], check=True, capture_output=True,
                         text=True).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]), int(out[3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--dir", type=Path)
    ap.add_argument("--pretty", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        path = Path(d) / "query_range.json"
        points = write(path, args.mb, args.pretty)
        size = path.stat().st_size
        print(f"{path.name}: {size / 1e6:.0f} MB, {points:,} points, "
              f"{'pretty-printed' if args.pretty else 'one line'}; load average {os.getloadavg()[0]:.1f}")
        for what, body, extra in (("ijson bare parse (floor)", FLOOR, []),
                                  ("Lab.ingest", INGEST, [str(Path(d) / "lab.duckdb")])):
            wall, cpu, rss, n = child(body, str(path), *extra)
            print(f"  {what:26s} {wall:7.1f} s wall {cpu:7.1f} s CPU  peak RSS {rss:6,.0f} MiB  "
                  f"{n:,} {'numbers' if body is FLOOR else 'rows'}  {size / 1e6 / max(cpu, 1e-9):.1f} MB/CPU-s")


if __name__ == "__main__":
    main()
