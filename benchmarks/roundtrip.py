"""Round trip at benchmark size: simulate a fleet, ingest it, attribute every run, score against truth.json.

    python benchmarks/roundtrip.py [--days 1] [--seeds 11,12] [--dir /tmp/clusterlab-roundtrip]

The tests check the round trip on small fleets; this runs the default fleet (2 providers x 2
clusters x 16 nodes x 8 GPUs, NCCL spam and per-rank timings at full scale) for `--days`, and
prints per seed: the corpus size, incidents recovered (right run, attempt, mode and host; goal
>= 95%), ledger categories outside 2% of the truth (goal: none) and the worst relative error,
and the time of ingest and attribution against simulating the same corpus (the baseline: the
time it takes to write the bytes that are read back).
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from clusterlab import Lab
from clusterlab.simulator import simulate
from clusterlab.simulator.score import score


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=float, default=1.0)
    ap.add_argument("--seeds", default="11,12")
    ap.add_argument("--failure-scale", type=float, default=40.0, help="failures per GPU-hour x this")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/clusterlab-roundtrip"))
    args = ap.parse_args()
    for seed in (int(s) for s in args.seeds.split(",")):
        out = args.dir / f"seed-{seed}"
        shutil.rmtree(args.dir, ignore_errors=True)
        t = time.perf_counter()
        sim = simulate(out, seed=seed, days=args.days, failure_scale=args.failure_scale)
        t_sim = time.perf_counter() - t
        with Lab(args.dir / "roundtrip.duckdb") as lab:
            t = time.perf_counter()
            summary = lab.ingest(out)
            t_ingest = time.perf_counter() - t
            t = time.perf_counter()
            result = score(lab, out)
            t_attr = time.perf_counter() - t
        assert not summary.problems, summary.problems[:5]
        print(f"seed {seed}: {sim.text_bytes / 1e6:,.0f} MB, {sim.rank_step_records:,} rank steps, "
              f"{result.incidents} incidents injected, recall {result.recall:.1%}, "
              f"{len(result.off)} ledger categories off (worst error {result.worst_rel_error:.2%})")
        print(f"         simulate {t_sim:6.1f} s   ingest {t_ingest:6.1f} s   score/attribute {t_attr:6.1f} s   "
              f"ingest+attribute / simulate {(t_ingest + t_attr) / t_sim:4.2f}x")
        for m in result.missed[:10]:
            print(f"         missed {m['run']} attempt {m['attempt']}: {m['failure_mode']} on {m['host']}")
        for o in result.off[:10]:
            print(f"         off {o}")
    shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
