"""Explorer re-render time for a 1,024-node run, against the same re-renders of a 2-node run, in one process.

    python benchmarks/widgets.py [--nodes 1024] [--steps 800] [--attempts 4] [--repeat 5]

Two runs are generated straight into DuckDB (per-rank step timings, a save every 50 steps, an
Xid ending each attempt and a watchdog timeout on every rank after it, one straggling host):
`big` with `--nodes` nodes of 8 GPUs and `small`, the baseline, alike on 2 nodes. The Explorer
computes and caches each run's attribution on first view, and keeps the figures it drew for each
time range; what is timed is what a user waits for afterwards: switching back to the run (figures
kept), a time range not viewed before (both figures drawn), picking another incident. Each figure is
the median of `--repeat` tries; the goal is every re-render of the big run under 0.3 s. The ratio
big ÷ small says how much of that time grows with the node count.
"""

from __future__ import annotations

import argparse
import statistics
import time

from clusterlab import Lab
from clusterlab.ingest import attempts
from clusterlab.simulator.big_run import write_big_run
from clusterlab.widgets import Explorer

GOAL_S = 0.3


def _seconds(action) -> float:
    t = time.perf_counter()
    action()
    return time.perf_counter() - t


def rerenders(ex: Explorer, run: str, other: str, repeat: int) -> dict[str, float]:
    """Median seconds of: switching back to `run` (from `other`), a time range of it not viewed before,
    picking another incident."""
    times: dict[str, list[float]] = {"run switch": [], "new range": [], "incident": []}
    for k in range(repeat):
        ex.run.value = other
        times["run switch"].append(_seconds(lambda: setattr(ex.run, "value", run)))
        marks = [v for _, v in ex.window.options]
        new = (marks[k + 1], marks[len(marks) // 2 + k])  # a different range each try: drawn, not kept
        times["new range"].append(_seconds(lambda w=new: setattr(ex.window, "value", w)))
        others = [i for i in ex.incidents_frame["incident_id"] if i != ex.incident.value]
        if others:  # a narrow range may hold one incident only
            times["incident"].append(_seconds(lambda o=others: setattr(ex.incident, "value", o[0])))
    if ex.error.value:
        raise SystemExit(f"the Explorer failed: {ex.last_error}")
    return {k: statistics.median(v) for k, v in times.items() if v}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--attempts", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=5, help="timings are the median of this many tries")
    args = ap.parse_args()
    with Lab(":memory:") as lab:
        t = time.perf_counter()
        lab.con.execute("INSERT INTO providers VALUES ('p', 2.0, NULL)")
        lab.con.execute("INSERT INTO clusters (cluster, provider, gpu, gpus_per_node) VALUES ('c', 'p', 'H100-SXM', 8)")
        write_big_run(lab, "big", args.nodes * 8, args.steps, args.attempts)
        write_big_run(lab, "small", 16, args.steps, args.attempts)
        attempts.refresh(lab.con)
        rows = lab.sql("SELECT count(*) AS n FROM rank_steps")["n"][0]
        print(f"generated {rows:,} rank-step rows in {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        ex = Explorer(lab, run="big")
        ex.run.value = "small"  # both attributions computed and cached: what follows is re-rendering only
        print(f"first views (attribution of both runs) {time.perf_counter() - t:.1f} s")
        small = rerenders(ex, "small", "big", args.repeat)
        big = rerenders(ex, "big", "small", args.repeat)
    for name in (n for n in big if n in small):
        print(f"{name:10s}  {args.nodes:,} nodes {big[name]:6.3f} s   2 nodes {small[name]:6.3f} s   "
              f"ratio {big[name] / small[name]:5.2f}x   (medians of {args.repeat})")
    worst = max(big.values())
    print(f"{'OK' if worst < GOAL_S else 'FAIL'}: slowest re-render {worst:.3f} s, goal under {GOAL_S} s "
          f"at {args.nodes:,} nodes")


if __name__ == "__main__":
    main()
