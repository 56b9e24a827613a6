"""CPU of ingesting the campaign corpus with the workers' chunks ordered by kind (clusterlab.ingest.pool) against the
walk's own order, in alternating runs (CPU seconds: a loaded machine's wall time says little).

    python benchmarks/chunk_order.py [--seeds 4] [--runs 2] [--workers 2] [--dir /tmp/clusterlab-fleet]

A campaign bundle interleaves kinds per attempt directory (NCCL logs, step files, trainer output, then the next
attempt's), so chunks cut in the walk's order each hold every kind, and each kind's group in each chunk pays its
collectors' fixed cost again. Each run is one `Lab.ingest` in a process of its own (the workers' CPU included);
the walk's order is had by giving every plan the same kind hint.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from campaign_corpus import campaign_files  # noqa: E402  (the corpus of fleet_ingest.py)


def _child(order: str, db: Path, workers: int, bundles: list[str]) -> None:
    from clusterlab.ingest import pool
    from clusterlab.lab import Lab

    if order == "walk":
        pool._kind_hint = lambda plan: ("",)
    with Lab(db) as lab:
        lab.ingest(*bundles, workers=workers)


def _run(order: str, work: Path, workers: int, bundles: list[Path]) -> tuple[float, float, int]:
    """(wall s, CPU s with the workers', peak RSS MiB) of one ingest in a process of its own."""
    db = work / f"{order}.duckdb"
    db.unlink(missing_ok=True)
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--child", order, str(db), str(workers), *map(str, bundles)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"ingest ({order}) failed with status {status}")
    db.unlink(missing_ok=True)
    return took, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]), sys.argv[5:])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/clusterlab-fleet"))
    args = ap.parse_args()
    root = args.dir / "campaigns-as-written"
    root.mkdir(parents=True, exist_ok=True)
    mine = campaign_files(root, args.seeds, "as-written")
    bundles = sorted({root / p.relative_to(root).parts[0] / "bundle" for p in mine})
    print(f"campaign corpus seeds 1-{args.seeds}: {len(mine):,} files, "
          f"{sum(p.stat().st_size for p in mine) / 1e6:.0f} MB; {args.workers} workers", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            for order in ("walk", "kind"):
                took, cpu, rss = _run(order, Path(tmp), args.workers, bundles)
                print(f"  {order:4s} order: {cpu:6.2f} s CPU  {took:6.2f} s wall  peak RSS {rss:,} MiB  "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
