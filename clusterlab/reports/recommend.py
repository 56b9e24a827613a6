"""Concrete settings an incident calls for, each with what it would have saved on that incident.

The savings come from the what-if's own models (`clusterlab.whatif.what_if`), restricted to the ledger rows the
incident is charged with; the knobs are stated as their projects document them (docs/attribution.md,
"What-if re-pricing", gives the sources)."""

from __future__ import annotations

import math

import duckdb
import polars as pl

from clusterlab.account import attribution
from clusterlab.reports import fmt
from clusterlab.whatif import what_if

SLURM_SIGNAL_SLACK_S = 60  # Slurm may send the --signal up to a minute early or late: the notice has that margin


def _saved(p: what_if.Pricing, incident_id: str, gpus: int) -> tuple[float, float]:
    """GPU-hours the policy saves on the incident's rows (net), and the seconds of its lost time it removes."""
    if not p.priced or p.rows is None:
        return 0.0, 0.0
    mine = p.rows.filter(pl.col("incident_id") == incident_id)
    net_s = float((mine["seconds"] - mine["what_if_s"]).sum() or 0.0)
    return net_s * gpus / 3600, net_s


def for_incident(con: duckdb.DuckDBPyConnection, a: attribution.Attribution, incident: dict) -> list[str]:
    """The settings that would have cut this incident's cost, with the GPU-hours and $ each saves; none saves
    nothing."""
    if incident.get("kind") != "attempt_end":
        return []
    iid = incident["incident_id"]
    hang_s = what_if.default_hang_s(a.baseline_step_s)
    w = what_if.price(con, a, [f"hang_timeout={hang_s}", "save_on_signal", "in_job_restart"])
    price = w.pricings[0].usd_per_gpu_hour
    rows = a.rows.filter(pl.col("incident_id") == iid)
    spent = {c: float(rows.filter(pl.col("category") == c)["seconds"].sum() or 0.0) for c in ("hang", "restart")}
    out = []
    hang, signal, restart = (_saved(p, iid, a.gpus) for p in w.pricings)
    if hang[0] > 0:
        out.append(f"Detect the hang sooner: torch.distributed.init_process_group(backend=\"nccl\", "
                   f"timeout=timedelta(seconds={hang_s:.0f})) (NCCL's default is 10 minutes); with "
                   f"TORCH_NCCL_ASYNC_ERROR_HANDLING at its default (3) the timed-out processes are torn down. "
                   f"This hang would have lasted {fmt.duration(hang_s)} instead of {fmt.duration(spent['hang'])}: "
                   f"{fmt.num(hang[0])} GPU-hours ({fmt.usd(hang[0] * price)}) saved.")
    save_s = a.checkpoint_advice.save_s if a.checkpoint_advice else None
    if signal[0] > 0 and save_s:
        notice = 60 * math.ceil((save_s + SLURM_SIGNAL_SLACK_S) / 60)
        how = (f"save on SIGTERM: a preempted Slurm job gets SIGTERM and the partition's GraceTime before SIGKILL "
               f"(the grace must cover a {fmt.duration(save_s)} save)" if incident.get("failure_mode") == "preemption"
               else f"sbatch --signal=B:USR1@{notice} with a trap in the batch script that asks the job to save "
               f"(at the time limit Slurm sends SIGTERM, then SIGKILL after KillWait)")
        out.append(f"Save on the scheduler's notice: {how}. "
                   f"One {fmt.duration(save_s)} save would have kept the work this end threw away: "
                   f"{fmt.num(signal[0])} GPU-hours ({fmt.usd(signal[0] * price)}) saved.")
    if restart[0] > 0:
        out.append(f"Restart inside the allocation instead of a requeue: torchrun --max-restarts=N (or "
                   f"nvidia-resiliency-ext's ft_launcher), with a spare node in the allocation for a host fault. "
                   f"The requeue took {fmt.duration(spent['restart'])}: {fmt.num(restart[0])} GPU-hours "
                   f"({fmt.usd(restart[0] * price)}) saved.")
    return out
