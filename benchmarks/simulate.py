"""Simulator throughput and peak memory, against copying the same tree on the same disk.

    python benchmarks/simulate.py [--sizes-mb 250,1000] [--dir /tmp/clusterlab-sim-bench] [--gzip]

For each size it simulates the default fleet (2 providers x 2 clusters x 16 nodes x 8 GPUs) for
as many days as that size takes, in a fresh process (so its peak RSS is its own), then copies the
written tree as the baseline: the same bytes through the same file system. It prints the MB of
text generated and on disk, seconds, MB/s of text, the ratio of its time to the copy's, and the
peak RSS, which should not grow with the size.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

MB_PER_DAY = 880.0  # the default fleet writes about this much a simulated day (uncompressed)
CHILD = """
import json, resource, sys
from clusterlab.simulator import simulate
r = simulate(sys.argv[1], seed=0, days=float(sys.argv[2]), gzip=sys.argv[3] == "1")
print(json.dumps({"bytes": r.bytes, "text_bytes": r.text_bytes, "seconds": r.seconds, "records": r.rank_step_records,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_one(out: Path, size_mb: float, gz: bool) -> dict:
    """Simulate about `size_mb` of uncompressed output in a child process; time a copy of it."""
    days = size_mb / MB_PER_DAY
    res = subprocess.run([sys.executable, "-c", CHILD, str(out), str(days), "1" if gz else "0"],
                         capture_output=True, text=True, check=True)
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    copy = out.with_name(out.name + "-copy")
    shutil.rmtree(copy, ignore_errors=True)
    t = time.perf_counter()
    shutil.copytree(out, copy)
    doc["copy_s"] = time.perf_counter() - t
    shutil.rmtree(copy)
    doc["days"] = days
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes-mb", default="250,1000", help="comma-separated target sizes (uncompressed MB)")
    ap.add_argument("--dir", default="/tmp/clusterlab-sim-bench", type=Path)
    ap.add_argument("--gzip", action="store_true", help="also run each size with gzip")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    print(f"{'size':>8} {'gzip':>4} {'days':>6} {'MB text':>8} {'MB disk':>8} {'records':>10} {'sec':>7} "
          f"{'MB/s':>7} {'x copy':>7} {'peak RSS':>9}")
    for size in (float(s) for s in args.sizes_mb.split(",")):
        for gz in ([False, True] if args.gzip else [False]):
            out = args.dir / f"sim-{int(size)}{'-gz' if gz else ''}"
            d = run_one(out, size, gz)
            mb = d["text_bytes"] / 1e6  # MB/s counts the text generated, compressed or not
            print(f"{size:>7.0f}M {'yes' if gz else 'no':>4} {d['days']:>6.2f} {mb:>8.1f} {d['bytes'] / 1e6:>8.1f} "
                  f"{d['records']:>10,} {d['seconds']:>7.1f} {mb / d['seconds']:>7.1f} "
                  f"{d['seconds'] / max(d['copy_s'], 1e-9):>7.1f} {d['rss_mb']:>7.0f}MB")
            shutil.rmtree(out)


if __name__ == "__main__":
    main()
