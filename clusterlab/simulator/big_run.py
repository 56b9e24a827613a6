"""A very large run written straight into a store with SQL, for the widget tests and benchmarks.

Millions of per-rank rows in seconds, no log text: n attempts of 2 s steps (60 s start-up, 16 min
between), each ended by an Xid on one host and a flood of watchdog timeouts, a save every 50 steps
and one straggling host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clusterlab.lab import Lab


def write_big_run(lab: Lab, run: str, ranks: int, steps: int, n_attempts: int, cluster: str = "c") -> None:
    """Per-rank timings for `ranks` GPUs straight into DuckDB: n attempts, each ended by an Xid, one straggler."""
    per, hosts, t0 = steps // n_attempts, max(1, ranks // 8), "TIMESTAMP '2026-11-24 08:00:00'"
    start = f"{t0} + to_seconds(a * ({per} * 2 + 960) + 60"  # each attempt: 60 s start-up, 2 s steps, 15 min gap
    con = lab.con
    con.execute("INSERT INTO runs (run, cluster, gpus, tokens_per_step, flops_per_token) VALUES (?, ?, ?, 4194304, "
                "5.8e10)", [run, cluster, ranks])
    fid = con.execute("SELECT coalesce(max(file_id), 0) + 1 FROM ingested_files").fetchone()[0]
    con.execute("INSERT INTO ingested_files (file_id, path, run, attempt) VALUES (?, ?, ?, 1)",
                [fid, f"/synthetic/{run}", run])
    con.execute(f"""
        INSERT INTO rank_steps (file_id, source, run, attempt, line, ts, host, rank, step, step_s, compute_s,
                                comm_s, data_s, tokens, loss)
        SELECT {fid}, 'synthetic', '{run}', a + 1, s * {ranks} + r, {start} + (s - a * {per} + 1) * 2.0),
               '{run}-' || lpad(CAST(r // 8 AS VARCHAR), 4, '0'), r, s, 2.0,
               CASE WHEN r // 8 = 7 AND s % {per} BETWEEN 20 AND 40 THEN 1.9 ELSE 1.6 END, 0.35, 0.05, 4096, 2.0
        FROM (SELECT range AS s, range // {per} AS a FROM range({per * n_attempts})) st, range({ranks}) rk(r)""")
    con.execute(f"""
        INSERT INTO checkpoints (file_id, source, run, attempt, line, ts, action, step, duration_s, ok)
        SELECT {fid}, 'synthetic', '{run}', s // {per} + 1, 0, {t0} + to_seconds((s // {per}) * ({per} * 2 + 960)
               + 60 + (s % {per} + 1) * 2.0), 'save', s, 10.0, true
        FROM range({per * n_attempts}) t(s) WHERE s % 50 = 49""")
    con.execute(f"""
        INSERT INTO events (file_id, source, run, attempt, line, ts, host, kind, failure_mode, severity, xid, text)
        SELECT {fid}, 'kernel', NULL, NULL, a, {start} + {per} * 2.0 + 1),
               '{run}-' || lpad(CAST((a * 3) % {hosts} AS VARCHAR), 4, '0'), 'xid', 'gpu_fell_off_bus', 'critical',
               79, 'NVRM: Xid (PCI:0000:5d:00): 79, GPU has fallen off the bus.'
        FROM range({n_attempts}) t(a)""")
    con.execute(f"""
        INSERT INTO events (file_id, source, run, attempt, line, ts, host, kind, failure_mode, severity, rank, text)
        SELECT {fid}, 'torch', '{run}', a + 1, a * {ranks} + r, {start} + {per} * 2.0 + 600),
               '{run}-' || lpad(CAST(r // 8 AS VARCHAR), 4, '0'), 'watchdog_timeout', 'nccl_timeout', 'error', r,
               'Watchdog caught collective operation timeout'
        FROM range({n_attempts}) t(a), range({ranks}) rk(r)""")
