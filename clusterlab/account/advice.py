"""Checkpoint interval advice (Young/Daly) from the measured failure rate and save cost.

The saving the advice states is the run's own ledger re-priced at the optimum (`resaved`): the figure the
what-if's `checkpoint_interval` policy prices and the scorecard prints, defined here once. Priced again at the
optimum of each end of the MTBF's 95% interval, it stands only when it saves at both.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.account import rates
from clusterlab.diagnose import timeline

# Interruptions the cluster is answerable for; a time limit or a person stopping the job is not a failure.
NOT_FAILURES = ("time_limit", "manual_stop")


def is_failure() -> pl.Expr:
    """Incidents that count as a cluster failure: an attempt's end that is neither a time limit or a stop
    nor blamed on the user (a CUDA OOM is the job's own doing, not the cluster's)."""
    return ((pl.col("kind") == "attempt_end") & ~pl.col("failure_mode").is_in(NOT_FAILURES)
            & (pl.col("blame").cast(pl.String).fill_null("unknown") != "user"))


@dataclass(frozen=True)
class CheckpointAdvice:
    run: str
    cluster: str | None
    failures: int  # on this cluster, across all runs in the store
    cluster_gpu_hours: float
    mtbf_job_hours: float | None  # expected hours between failures for a job of this run's size
    save_s: float | None  # median measured save time
    interval_s: float | None  # median measured time between saves
    optimal_interval_s: float | None  # Young's sqrt(2·δ·M), Daly's correction where δ is not small
    # on this run, had it saved at the optimal interval: its ledger re-priced (`resaving_gain`), net of any extra
    # cost (negative: the optimum would have cost more here); None without the ledger's rows
    gpu_hours_saved: float | None
    # the exact 95% Poisson interval of the MTBF, and the optimal intervals at its two ends
    mtbf_job_hours_lo: float | None = None
    mtbf_job_hours_hi: float | None = None  # None: unbounded (no failure yet)
    optimal_interval_lo_s: float | None = None
    optimal_interval_hi_s: float | None = None
    enough_exposure: bool = False  # the cluster's GPU-hours reach rates.MIN_EXPOSURE_GPU_HOURS
    # the same saving priced at the optimum of each end of the MTBF interval (the lesser, the greater), and
    # whether it stands: both ends known and both save
    gpu_hours_saved_lo: float | None = None
    gpu_hours_saved_hi: float | None = None
    saving_stands: bool = False

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def waste_fraction(interval_s: float, save_s: float, mtbf_s: float) -> float:
    """Expected share of time lost to saving plus recomputing after failures (first order)."""
    return save_s / interval_s + (interval_s + save_s) / (2 * mtbf_s)


def daly_interval(save_s: float, mtbf_s: float) -> float:
    """Daly's optimum: Young's sqrt(2δM) with the higher-order correction, capped at M."""
    if save_s >= 2 * mtbf_s:
        return mtbf_s
    x = math.sqrt(save_s / (2 * mtbf_s))
    return math.sqrt(2 * save_s * mtbf_s) * (1 + x / 3 + x * x / 9) - save_s


def training_interval_s(adv: CheckpointAdvice) -> float | None:
    """The training time between two saves: the measured gap between saves less one save. This is the τ of
    Young and Daly's optimum, and the one "saves every" figure the what-if and the scorecard print."""
    if not adv.interval_s or not adv.save_s or adv.interval_s <= adv.save_s:
        return None
    return adv.interval_s - adv.save_s


def resaved(ratio: float) -> pl.Expr:
    """Each ledger row's seconds had the run saved after `ratio` times as much training between saves: the save
    time scales with the number of saves (1/ratio), the work a failure throws away with the interval (ratio)."""
    return (pl.when(pl.col("category") == "checkpoint").then(pl.col("seconds") / ratio)
            .when(pl.col("category") == "recompute").then(pl.col("seconds") * ratio)
            .otherwise(pl.col("seconds")))


def resaving_gain(rows: pl.DataFrame, gpus: int, tau_s: float, tau0_s: float) -> float:
    """GPU-hours the ledger `rows` (category, seconds per GPU) would have saved with τ s of training between saves
    instead of τ0 (negative: cost more)."""
    return float(rows.select(((pl.col("seconds") - resaved(tau_s / tau0_s)) * (gpus / 3600)).sum()).item() or 0.0)


def advise(con: duckdb.DuckDBPyConnection, run: str, gpus: int, gpu_hours: float,
           incidents: pl.DataFrame, rows: pl.DataFrame | None = None) -> CheckpointAdvice:
    """Advice for one run, from its cluster's record in the store and its own saves.

    `incidents` holds the incidents of every run on the run's cluster (this run's at least): the
    caller computes them, so that advice reads frames and never calls back into attribution. `rows` are the
    run's ledger rows (`Attribution.rows`), which the saving re-prices; without them it is None."""
    info = store.frame(con, "SELECT cluster FROM runs WHERE run = ?", [run])
    cluster = info["cluster"][0] if info.height else None
    fleet = _exposure(con, cluster)
    cluster_hours = float(fleet["gpu_hours"].sum() or 0.0) if fleet.height else gpu_hours
    ends = incidents.filter(is_failure())
    failures = ends.height if not fleet.height else ends.filter(pl.col("run").is_in(fleet["run"].implode())).height
    saves = store.frame(con, """SELECT ts, duration_s FROM checkpoints WHERE run = ? AND action = 'save'
                                ORDER BY ts""", [run])
    save_s = saves["duration_s"].drop_nulls().median() if saves.height else None
    gaps = saves["ts"].diff().dt.total_seconds().drop_nulls() if saves.height > 1 else pl.Series([], dtype=pl.Float64)
    interval = float(gaps.median()) if gaps.len() else None
    enough = rates.enough_exposure(cluster_hours)
    _, lo_h, hi_h = rates.mtbf_interval(failures, cluster_hours / gpus) if gpus else (None, None, None)
    hi_h = None if hi_h is None or math.isinf(hi_h) else hi_h
    bounds = {"mtbf_job_hours_lo": lo_h, "mtbf_job_hours_hi": hi_h, "enough_exposure": enough}
    if save_s:  # a short MTBF calls for frequent saves: the low end of the MTBF gives the short interval
        bounds |= {"optimal_interval_lo_s": daly_interval(save_s, lo_h * 3600) if lo_h else None,
                   "optimal_interval_hi_s": daly_interval(save_s, hi_h * 3600) if hi_h else None}
    if not failures or not cluster_hours or not save_s:
        return CheckpointAdvice(run, cluster, failures, cluster_hours, None, save_s, interval, None, None, **bounds)
    mtbf_s = cluster_hours / failures / gpus * 3600  # failures scale with the GPUs a job holds
    best = daly_interval(save_s, mtbf_s)
    adv = CheckpointAdvice(run, cluster, failures, cluster_hours, mtbf_s / 3600, float(save_s), interval, best, None,
                           **bounds)
    return _with_saving(adv, rows, gpus)


def _with_saving(adv: CheckpointAdvice, rows: pl.DataFrame | None, gpus: int) -> CheckpointAdvice:
    """The advice with its saving: the ledger re-priced at the optimum, and at the optimum of each MTBF end."""
    tau0 = training_interval_s(adv)
    if rows is None or tau0 is None or not adv.optimal_interval_s:
        return adv
    ends = [resaving_gain(rows, gpus, t, tau0) for t in (adv.optimal_interval_lo_s, adv.optimal_interval_hi_s) if t]
    both = len(ends) == 2
    return dataclasses.replace(
        adv, gpu_hours_saved=resaving_gain(rows, gpus, adv.optimal_interval_s, tau0),
        gpu_hours_saved_lo=min(ends) if both else None, gpu_hours_saved_hi=max(ends) if both else None,
        saving_stands=both and min(ends) > 0)


def _exposure(con: duckdb.DuckDBPyConnection, cluster: str | None) -> pl.DataFrame:
    """GPU-hours each run of the cluster held its GPUs (attempts only, restarts excluded): `run, gpu_hours`,
    from the same attempt spans as the ledger (the scheduler's records where they exist)."""
    runs = store.frame(con, "SELECT run, gpus FROM runs WHERE cluster IS NOT DISTINCT FROM ? AND gpus IS NOT NULL",
                       [cluster])
    rows = []
    for run, gpus in runs.iter_rows():  # NOTE: one query per run of the cluster, not per row
        spans = timeline.attempt_spans(con, run)
        if spans.height:
            # NOTE: fractional seconds, as the ledger counts them: whole seconds made this exposure differ from
            # the ledger's (the scorecard's) by a second per attempt
            held = spans.select((pl.col("end_ts") - pl.col("start_ts")).dt.total_seconds(fractional=True).sum()).item()
            rows.append({"run": run, "gpu_hours": float(held or 0.0) / 3600.0 * gpus})
    return pl.DataFrame(rows, schema={"run": pl.String, "gpu_hours": pl.Float64})
