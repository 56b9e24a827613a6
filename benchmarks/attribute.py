"""Full attribution of one huge run against a plain DuckDB aggregate scan of the same table.

    python benchmarks/attribute.py [--ranks 1024] [--steps 100000] [--incidents 500] [--skew-ms 0]
                                   [--db PATH [--reuse]]

The run's per-rank timings (ranks × steps rows) are generated straight into DuckDB with SQL,
split into `--incidents` attempts, each ended by an Xid on one host ten minutes before a flood
of watchdog timeouts, with a checkpoint save every 50 steps and one straggling host. `--skew-ms`
puts each host's clock up to that many milliseconds off (real hosts' clocks are never exactly
together: attribution then corrects every row by its host's offset). Then it times
`Lab.attribute(run)` against two floors, each one GROUP BY (attempt, step) over the same rows:

- the scan of the columns attribution reads (time, host, step time, data wait, compute time), one
  plain aggregate each: the floor for reading what attribution must read;
- the narrower scan of two numeric columns that earlier figures were measured against.

The three are timed in turn (a change in the machine's load touches all three alike), warm, and it
prints wall and CPU seconds (all threads), the ratios, the load average and the peak RSS.
`--reuse` times a database an earlier run left at `--db` (generating 102M rows takes minutes on a
busy 2-core machine).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

from clusterlab import Lab
from clusterlab.ingest import attempts

T0 = "TIMESTAMP '2026-11-24 08:00:00'"


# The columns attribution reads from the per-rank table, one plain aggregate each (compute time as
# attribution derives it): the floor for a pass over what attribution must read.
FLOOR_SCAN = """SELECT attempt, step, max(ts) AS ts, max(step_s) AS s, max(data_s) AS d,
                       max(coalesce(compute_s, step_s - coalesce(comm_s, 0))) AS c, max(host) AS h
                FROM rank_steps WHERE run = 'big' AND step IS NOT NULL GROUP BY attempt, step"""
# The scan earlier figures were measured against (two numeric columns, no time, no host).
NARROW_SCAN = "SELECT attempt, step, max(step_s) AS s, max(compute_s) AS c FROM rank_steps GROUP BY ALL"


def generate(lab: Lab, ranks: int, steps: int, incidents: int, skew_ms: float = 0.0) -> None:
    """Rows for run `big`: attempt k covers steps [k·n, (k+1)·n), 2 s a step, 15 min between attempts;
    host h's clock runs ((37·h mod 17) - 8) / 8 · skew_ms ahead (every host's lines, per-rank rows included)."""
    per = steps // incidents
    skew_us = round(skew_ms * 1000 / 8)
    hosts = max(1, ranks // 8)
    off = "to_microseconds(((({host}) * 37) % 17 - 8) * {skew_us})"
    rank_off = off.format(host="r // 8", skew_us=skew_us)
    xid_off = off.format(host=f"(a * 7) % {hosts}", skew_us=skew_us)
    con = lab.con
    con.execute("INSERT INTO runs (run, cluster, gpus, tokens_per_step, flops_per_token) "
                "VALUES ('big', 'c', ?, 4194304, 5.8e10)", [ranks])
    con.execute("INSERT INTO clusters (cluster, provider, gpu, gpus_per_node) VALUES ('c', 'p', 'H100-SXM', 8)")
    con.execute("INSERT INTO providers VALUES ('p', 2.0, NULL)")
    con.execute("INSERT INTO ingested_files (file_id, path, run, attempt) VALUES (1, '/bench/steps', 'big', NULL)")
    # step s of attempt a ends at: a * (per * 2 + 900) + (s - a * per + 1) * 2 seconds after T0 (+60 s start-up)
    con.execute(f"""
        INSERT INTO rank_steps (file_id, source, run, attempt, line, ts, host, rank, step, step_s, compute_s,
                                comm_s, data_s, tokens, loss)
        SELECT 1, 'bench', 'big', a + 1, s * {ranks} + r, {T0} + to_seconds(a * ({per} * 2 + 960) + 60
               + (s - a * {per} + 1) * 2.0) + {rank_off},
               'n-' || lpad(CAST(r // 8 AS VARCHAR), 4, '0'), r, s, 2.0,
               CASE WHEN r // 8 = 7 AND s % {per} BETWEEN 20 AND 40 THEN 1.9 ELSE 1.6 END, 0.35, 0.05,
               4096, 2.0
        FROM (SELECT range AS s, range // {per} AS a FROM range({per * incidents})) st, range({ranks}) rk(r)
    """)
    con.execute(f"""
        INSERT INTO checkpoints (file_id, source, run, attempt, line, ts, action, step, duration_s, ok)
        SELECT 1, 'bench', 'big', s // {per} + 1, 0, {T0} + to_seconds((s // {per}) * ({per} * 2 + 960) + 60
               + (s % {per} + 1) * 2.0), 'save', s, 10.0, true
        FROM range({per * incidents}) t(s) WHERE s % 50 = 49
    """)
    con.execute(f"""
        INSERT INTO events (file_id, source, run, attempt, line, ts, host, kind, failure_mode, severity, xid, text)
        SELECT 1, 'kernel', NULL, NULL, a, {T0} + to_seconds(a * ({per} * 2 + 960) + 60 + {per} * 2.0 + 1)
               + {xid_off},
               'n-' || lpad(CAST((a * 7) % {hosts} AS VARCHAR), 4, '0'), 'xid', 'gpu_fell_off_bus', 'critical', 79,
               'NVRM: Xid (PCI:0000:5d:00): 79, GPU has fallen off the bus.'
        FROM range({incidents}) t(a)
    """)
    con.execute(f"""
        INSERT INTO events (file_id, source, run, attempt, line, ts, host, kind, failure_mode, severity, rank, text)
        SELECT 1, 'torch', 'big', a + 1, a * {ranks} + r,
               {T0} + to_seconds(a * ({per} * 2 + 960) + 60 + {per} * 2.0 + 600) + {rank_off},
               'n-' || lpad(CAST(r // 8 AS VARCHAR), 4, '0'), 'watchdog_timeout', 'nccl_timeout', 'error', r,
               'Watchdog caught collective operation timeout'
        FROM range({incidents}) t(a), range({ranks}) rk(r)
    """)
    con.execute("UPDATE ingested_files SET attempt = 1")  # attempts come from the rows, not an unsplit log
    attempts.refresh(con)


def _timed(fn) -> tuple[float, float]:
    """Wall and CPU seconds (all threads) of one call: on a machine other jobs share, the CPU seconds
    are the steadier measure of the work done."""
    t, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t, time.process_time() - c


def _medians(fns: dict, n: int) -> dict[str, tuple[float, float]]:
    """Median wall and CPU seconds of each of `fns` over `n` rounds, each round calling them in turn."""
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in fns}
    for _ in range(n):
        for k, fn in fns.items():
            got[k].append(_timed(fn))
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in got.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--incidents", type=int, default=500)
    ap.add_argument("--skew-ms", type=float, default=0.0, help="hosts' clocks up to this far apart (generating)")
    ap.add_argument("--db", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=3, help="timings are the median of this many runs")
    ap.add_argument("--reuse", action="store_true", help="time the database at --db as it is, generating nothing")
    args = ap.parse_args()
    db = args.db or Path(tempfile.mkdtemp()) / "attribute.duckdb"
    if args.reuse and not db.exists():
        ap.error(f"--reuse: no database at {db}")
    with Lab(db) as lab:
        t = time.perf_counter()
        if not args.reuse:
            generate(lab, args.ranks, args.steps, args.incidents, args.skew_ms)
        size = lab.sql("SELECT count(*) AS n, count(DISTINCT rank) AS ranks, count(DISTINCT step) AS steps, "
                       "count(DISTINCT attempt) AS attempts FROM rank_steps").row(0, named=True)
        print(f"{'reused' if args.reuse else 'generated'} {size['n']:,} rank-step rows ({size['ranks']:,} ranks x "
              f"{size['steps']:,} steps, {size['attempts']} attempts) in {time.perf_counter() - t:.1f} s")
    with Lab(db) as lab:
        fns = {"floor": lambda: lab.sql(FLOOR_SCAN), "narrow": lambda: lab.sql(NARROW_SCAN),
               "attribution": lambda: lab.attribute("big")}
        for fn in fns.values():  # the first read pulls the file into DuckDB's buffers: all are timed warm
            fn()
        load = os.getloadavg()[0]
        got = _medians(fns, args.repeat)
        load = max(load, os.getloadavg()[0])
        a = lab.attribute("big")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    found = a.incidents.filter(a.incidents["kind"] == "attempt_end")
    (full, full_cpu), (floor, floor_cpu), (narrow, narrow_cpu) = got["attribution"], got["floor"], got["narrow"]
    print(f"medians of {args.repeat}, warm, load average up to {load:.1f}, peak RSS {rss:,.0f} MiB")
    print(f"attribution             {full:6.2f} s wall {full_cpu:6.2f} s CPU")
    print(f"scan of what it reads   {floor:6.2f} s wall {floor_cpu:6.2f} s CPU   "
          f"ratio {full / floor:5.2f}x wall {full_cpu / floor_cpu:5.2f}x CPU")
    print(f"narrow scan (2 columns) {narrow:6.2f} s wall {narrow_cpu:6.2f} s CPU   "
          f"ratio {full / narrow:5.2f}x wall {full_cpu / narrow_cpu:5.2f}x CPU")
    print(f"{found.height} attempt-end incidents ({(found['failure_mode'] == 'gpu_fell_off_bus').sum()} Xid 79), "
          f"{(a.incidents['kind'] == 'straggler').sum()} straggler incidents, ledger {a.gpu_hours:,.0f} GPU-hours")


if __name__ == "__main__":
    main()
