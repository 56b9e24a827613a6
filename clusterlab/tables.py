"""The evidence tables' columns: what every collector returns and what the store keeps, one definition for both.

Collectors fill `TABLE_COLUMNS` (the engine adds `EVIDENCE_PREFIX`); `clusterlab.store` makes its tables from
`evidence_schema`. It sits below both so that neither has to import the other.
"""

from __future__ import annotations

import polars as pl

# Columns each table accepts from collectors (the engine adds file_id, source, run, attempt).
TABLE_COLUMNS: dict[str, dict[str, pl.DataType]] = {
    "events": {
        "line": pl.Int64,
        "ts": pl.Datetime("us"),
        "host": pl.String,
        "kind": pl.String,
        "failure_mode": pl.String,
        "severity": pl.String,  # info | warning | error | critical
        "xid": pl.Int32,
        "pci_bus": pl.String,
        "rank": pl.Int32,
        "peer": pl.String,
        "text": pl.String,
        "detail": pl.String,  # JSON object with format-specific fields
    },
    "steps": {
        "line": pl.Int64,
        "ts": pl.Datetime("us"),
        "host": pl.String,
        "rank": pl.Int32,
        "step": pl.Int64,
        "step_s": pl.Float64,
        "tokens": pl.Int64,
        "loss": pl.Float64,
        "lr": pl.Float64,
        "grad_norm": pl.Float64,
        "tflops": pl.Float64,  # per GPU, as the framework reports it
        "skipped": pl.Int32,  # iterations skipped in this interval (Megatron)
        "nan": pl.Int32,  # iterations with NaN loss in this interval
    },
    "rank_steps": {
        "line": pl.Int64,
        "ts": pl.Datetime("us"),
        "host": pl.String,
        "rank": pl.Int32,
        "step": pl.Int64,
        "step_s": pl.Float64,
        "compute_s": pl.Float64,
        "comm_s": pl.Float64,
        "data_s": pl.Float64,
        "tokens": pl.Int64,
        "loss": pl.Float64,
    },
    "checkpoints": {
        "line": pl.Int64,
        "ts": pl.Datetime("us"),
        "host": pl.String,
        "action": pl.String,  # save | load
        "step": pl.Int64,
        "path": pl.String,  # as printed in the log: data, never opened by the collector
        "duration_s": pl.Float64,
        "ok": pl.Boolean,
    },
    "nccl_ranks": {
        "line": pl.Int64,
        "ts": pl.Datetime("us"),
        "host": pl.String,
        "pid": pl.Int64,
        "rank": pl.Int32,
        "nranks": pl.Int32,
        "cuda_dev": pl.Int32,
        "bus_id": pl.String,
        "comm_id": pl.String,
    },
    "jobs": {
        "line": pl.Int64,
        "ts": pl.Datetime("us"),
        "job_id": pl.String,
        "job_name": pl.String,
        "state": pl.String,  # COMPLETED | FAILED | NODE_FAIL | TIMEOUT | PREEMPTED | CANCELLED ...
        "exit_code": pl.Int32,
        "signal": pl.Int32,
        "start_ts": pl.Datetime("us"),
        "end_ts": pl.Datetime("us"),
        "nodelist": pl.String,
        "nnodes": pl.Int32,
        "ngpus": pl.Int32,
        # an array task's own job id (sacct's JobIDRaw `71403` of JobID `71400_3`): what slurmstepd and
        # $SLURM_JOB_ID name
        "job_id_raw": pl.String,
    },
    "facts": {  # what a log states about its run: world size, parameter count, job id, ...
        "line": pl.Int64,
        "ts": pl.Datetime("us"),
        "host": pl.String,
        "key": pl.String,
        "value": pl.String,
    },
    "telemetry": {  # one sample of one metric (clusterlab.telemetry's names); counters as per-second rates
        "line": pl.Int64,
        "ts": pl.Datetime("us"),
        "host": pl.String,
        "gpu": pl.Int32,  # the GPU's index on its host (null: a host metric)
        "bus_id": pl.String,  # `0000:5d:00`, as events.pci_bus spells it
        "device": pl.String,  # disk, IB port (`mlx5_0/1`), NFS export, network interface
        "metric": pl.String,
        "value": pl.Float64,
    },
    # Issue 31: a node out of service from `ts` to `end_ts` (null: still open), from a fault trace, an episode
    # CSV (collectors/fault_episodes.py); the fleet's memory (account/fleet.py) reads it beside the incidents.
    "fault_episodes": {
        "line": pl.Int64,
        "ts": pl.Datetime("us"),  # the fault's start
        "end_ts": pl.Datetime("us"),  # back in service
        "host": pl.String,
        "level": pl.String,  # the trace's coarsest class (Hardware / Software / Other Failure); null in a CSV
        "fault_class": pl.String,  # GPU, NIC, Power Supply, ... as the source names it
        "detail": pl.String,  # its description or the operator's reason, as written
        "failure_mode": pl.String,  # the taxonomy's mode for class and detail
    },
}

# Every evidence table starts with these; `line` comes from the collector.
EVIDENCE_PREFIX = {"file_id": pl.Int64, "source": pl.String, "run": pl.String, "attempt": pl.Int32}

# How a row without a time of its own was dated (the engine adds these, after the collector's columns). A row
# with its own stamp leaves all three empty: `ts` is its time. Otherwise its time lies in [ts_lo, ts_hi], the
# stamped lines around it in its file (either may be unknown), `ts` is the engine's best point inside, and
# `dated` says how: `between` (both stamps known), `after` (only an earlier one), `before` (only a later one).
# A row with neither has `ts` empty: undated evidence, kept and classified all the same.
DATING: dict[str, pl.DataType] = {"ts_lo": pl.Datetime("us"), "ts_hi": pl.Datetime("us"), "dated": pl.String}
DATED_TABLES = ("events", "steps", "checkpoints")


def evidence_schema(table: str) -> dict[str, pl.DataType]:
    """Column name → polars type of an evidence table, in storage order."""
    return {**EVIDENCE_PREFIX, **TABLE_COLUMNS[table], **(DATING if table in DATED_TABLES else {})}
