"""Operating policies in the simulator, for validating `clusterlab.whatif.what_if` against simulation.

The same campaign (same seed, same cluster) is built under another policy: a hang detector that fires
`hang_timeout_s` after a hang began instead of NCCL's 10-minute watchdog (`Config.hang_timeout_s`), or
another checkpoint interval (`Config.save_every_s`). `write_run` puts a simulated run straight into a
store as the evidence the log writers would print (a start and an end line per attempt, one step line
per step, the saves and the resume), so the what-if can price the run without writing and re-reading
logs; `expected.ledger` gives the simulated ledger under each policy to compare with.
"""

from __future__ import annotations

import dataclasses
import itertools

import duckdb
import numpy as np
import polars as pl

from clusterlab import store
from clusterlab.ingest import attempts
from clusterlab.simulator import endings, expected
from clusterlab.simulator.failure_model import HARDWARE
from clusterlab.simulator.fleet import PRICES, Config, clusters
from clusterlab.simulator.timeline import SEQ, Run, _attempt, start

_file_ids = itertools.count(2_000_000_000)  # clear of ingest's sequence in a fresh store


def with_policy(cfg: Config, hang_timeout_s: float | None = None, save_every_s: float | None = None) -> Config:
    """The campaign's config under a policy (a knob left None stays as it was)."""
    changes: dict = {}
    if hang_timeout_s is not None:
        changes["hang_timeout_s"] = hang_timeout_s
    if save_every_s is not None:
        changes["save_every_s"] = save_every_s
    return dataclasses.replace(cfg, **changes)


def campaign(cfg: Config, cluster_index: int = 0) -> Run:
    """The run of one cluster of the campaign, with common random numbers across policies.

    As `timeline.build`, launch after launch until the window closes, but each launch draws from a generator
    of its own (seed, cluster, launch): its failure comes the same time after its start whatever the policy,
    although a policy changes how many numbers the launches before it drew (one per save). Without that, two
    policies would be priced on two different sets of failures."""
    cluster = clusters(cfg)[cluster_index]
    rng, run, eps, rates, back, t = start(cfg, cluster)
    lo, hi = cfg.window_ms
    available: list[int] = []  # steps of durable checkpoints
    for k in itertools.count(1):
        att_rng = np.random.default_rng([cfg.seed, cluster.index, 2, k])
        hosts = tuple(sorted(h for h in cluster.hosts if back[h] <= t)[: cluster.run_nodes])
        if len(hosts) < cluster.run_nodes:
            t = sorted(back.values())[cluster.run_nodes - 1]
            hosts = tuple(sorted(h for h in cluster.hosts if back[h] <= t)[: cluster.run_nodes])
        att = _attempt(cfg, run, k, hosts, t, available[-1] if available else 0, rates, eps, att_rng, None)
        if att is None:
            break
        run.attempts.append(att)
        available += [sv.step for sv in att.saves if sv.complete]
        if att.ending.mode == "time_limit" and att.ending.trigger_ms >= hi:
            break  # the campaign's window is over
        if att.ending.mode in HARDWARE and att.ending.host:
            back[att.ending.host] = att.end_ms + int(att_rng.uniform(*cluster.profile.repair_h) * 3_600_000)
        t = att.end_ms + int(att_rng.uniform(*cluster.profile.restart_s) * 1000)
    return run


def simulated_ledger(run: Run) -> dict[str, float]:
    """GPU-hours per category of the simulated run, over its logged span (as `write_run` stores it)."""
    return expected.ledger(run, alloc=False)["ledger"]


def _epoch(ms) -> pl.Expr:
    return pl.from_epoch(pl.lit(ms) if not isinstance(ms, pl.Expr) else ms, time_unit="ms").cast(pl.Datetime("us"))


def _insert(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    schema = store.evidence_schema(table)
    rows = frame.select([pl.col(c).cast(t) if c in frame.columns else pl.lit(None, t).alias(c)
                         for c, t in schema.items()])
    con.register("_policy_rows", rows.to_arrow())
    con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _policy_rows")
    con.unregister("_policy_rows")


def write_run(con: duckdb.DuckDBPyConnection, run: Run, name: str | None = None) -> str:
    """The run's evidence straight into the store (no log files); returns the run's name in it."""
    name = name or run.name
    c = run.cluster
    flops_per_token = 6 * run.shape[1] + 12 * run.shape[2] * run.shape[3] * SEQ
    con.execute("INSERT OR REPLACE INTO providers (provider, usd_per_gpu_hour) VALUES (?, ?)",
                [c.provider, PRICES[0]])
    con.execute("INSERT OR REPLACE INTO clusters (cluster, provider, gpu, gpus_per_node) VALUES (?, ?, 'H100-SXM', ?)",
                [c.name, c.provider, c.gpus_per_node])
    con.execute("""INSERT OR REPLACE INTO runs (run, cluster, gpus, tokens_per_step, flops_per_token)
                   VALUES (?, ?, ?, ?, ?)""", [name, c.name, run.gpus, run.tokens_per_step, flops_per_token])
    for att in run.attempts:
        fid = next(_file_ids)
        con.execute("INSERT INTO ingested_files (file_id, path, run, attempt) VALUES (?, ?, ?, ?)",
                    [fid, f"/simulated/{name}/attempt-{att.k}/train.log", name, att.k])
        base = {"file_id": pl.lit(fid), "source": pl.lit("simulated"), "run": pl.lit(name),
                "attempt": pl.lit(att.k), "host": pl.lit(att.hosts[0])}
        s = att.steps
        steps = pl.DataFrame({"end": s.end, "step": s.step, "step_ms": s.step_ms}).with_columns(
            **base, line=pl.int_range(pl.len()) + 10, ts=_epoch(pl.col("end")), rank=pl.lit(0),
            step_s=pl.col("step_ms") / 1000)
        _insert(con, "steps", steps)
        done = [sv for sv in att.saves if sv.complete]  # a save cut short by the failure printed nothing
        saves = pl.DataFrame({"step": [sv.step for sv in done], "start": [sv.start_ms for sv in done],
                              "dur": [(sv.end_ms - sv.start_ms) / 1000 for sv in done]},
                             schema={"step": pl.Int64, "start": pl.Int64, "dur": pl.Float64})
        loads = pl.DataFrame({"step": [att.resumed_from] if att.resumed_from else [],
                              "start": [att.start_ms + att.startup_ms] if att.resumed_from else [],
                              "dur": [att.load_ms / 1000] if att.resumed_from else []},
                             schema={"step": pl.Int64, "start": pl.Int64, "dur": pl.Float64})
        for action, frame in (("save", saves), ("load", loads)):
            if frame.height:
                _insert(con, "checkpoints", frame.with_columns(
                    **base, line=pl.int_range(pl.len()) + 10 + len(s.step), ts=_epoch(pl.col("start")),
                    action=pl.lit(action), duration_s="dur", ok=pl.lit(True)))
        ends = pl.DataFrame({"key": ["start", "end"], "ms": [att.start_ms, att.end_ms], "line": [1, 10**9]})
        _insert(con, "facts", ends.with_columns(**base, ts=_epoch(pl.col("ms")), value=pl.lit("simulated")))
        # what ended it, as the logs would name it: the cause at its root (the scheduler's kill when it fired)
        e = att.ending
        cause = pl.DataFrame({"ms": [e.trigger_ms if e.mode in endings.SCHEDULER else e.root_ms]})
        _insert(con, "events", cause.with_columns(
            **(base | {"host": pl.lit(e.host or att.hosts[0])}), line=pl.lit(10**9 - 1), ts=_epoch(pl.col("ms")),
            kind=pl.lit(e.mode), failure_mode=pl.lit(e.mode), severity=pl.lit("error"),
            text=pl.lit(f"simulated {e.mode}")))
    attempts.refresh(con)
    return name
