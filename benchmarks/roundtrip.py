"""Round trip at benchmark size: simulate a fleet, ingest it, attribute every run, score against truth.json.

    python benchmarks/roundtrip.py [--days 1] [--seeds 11,12] [--no-adversarial] [--dir /tmp/clusterlab-roundtrip]

The tests check the round trip on small fleets; this runs the default fleet (2 providers x 2
clusters x 16 nodes x 8 GPUs, NCCL spam and per-rank timings at full scale) for `--days`, and
prints per seed: the corpus size, incidents recovered (right run, attempt, mode and host; goal
>= 95%), ledger categories outside 2% of the truth (goal: none) and the worst relative error,
and the time of ingest and attribution against simulating the same corpus (the baseline: the
time it takes to write the bytes that are read back). By default the fleet is the adversarial
family (`clusterlab.simulator.adversarial`: scheduler ends, decoys, partial per-rank timings,
clock skew, a missing node log; goals there: every incident, every category within 0.5 %, no
decoy host blamed); `--no-adversarial` runs the ordinary one.
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
    ap.add_argument("--adversarial", action=argparse.BooleanOptionalAction, default=True,
                    help="the adversarial family (default) or the ordinary fleet")
    args = ap.parse_args()
    rel = 0.005 if args.adversarial else 0.02
    for seed in (int(s) for s in args.seeds.split(",")):
        out = args.dir / f"seed-{seed}"
        shutil.rmtree(args.dir, ignore_errors=True)
        t = time.perf_counter()
        sim = simulate(out, seed=seed, days=args.days, failure_scale=args.failure_scale, adversarial=args.adversarial)
        t_sim = time.perf_counter() - t
        with Lab(args.dir / "roundtrip.duckdb") as lab:
            t = time.perf_counter()
            summary = lab.ingest(out)
            t_ingest = time.perf_counter() - t
            t = time.perf_counter()
            result = score(lab, out, rel=rel)
            t_attr = time.perf_counter() - t
        assert not summary.problems, summary.problems[:5]
        print(f"seed {seed}: {sim.text_bytes / 1e6:,.0f} MB, {sim.rank_step_records:,} rank steps, "
              f"{result.incidents} incidents injected, recall {result.recall:.1%}, "
              f"{len(result.off)} ledger categories off {rel:.1%} (worst error {result.worst_rel_error:.2%}), "
              f"{result.decoy_hosts_blamed} decoy hosts blamed ({result.decoys} decoys)")
        print(f"         simulate {t_sim:6.1f} s   ingest {t_ingest:6.1f} s   score/attribute {t_attr:6.1f} s   "
              f"ingest+attribute / simulate {(t_ingest + t_attr) / t_sim:4.2f}x")
        for line in result.report()[:30]:
            print(f"         {line}")
    shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
