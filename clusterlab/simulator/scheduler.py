"""Slurm's side: each cluster's slurmctld log and one sacct dump (--parsable2) for the fleet."""

from __future__ import annotations

import random

from clusterlab.simulator import endings
from clusterlab.simulator.failure_model import HARDWARE
from clusterlab.simulator.failures import Evidence
from clusterlab.simulator.fleet import Cluster, Config
from clusterlab.simulator.sink import Sink
from clusterlab.simulator.stamps import ctld, elapsed, from_ms, hostlist, iso_s
from clusterlab.simulator.timeline import Attempt, Run

CPUS = 224
SACCT_COLS = ("Cluster|JobID|JobName|User|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|"
              "NodeList|AllocTRES")
# what the provider's operators write when they drain a node, by failure mode
REASONS = {
    "gpu_fell_off_bus": "Xid 79 GPU fell off the bus - RMA", "gpu_hw_other": "Xid 119 GSP RPC timeout - reset failed",
    "nvlink_error": "Xid 74 NVLink fatal - NVSwitch tray check", "gpu_memory_ecc": "ECC uncorrectable - row remap/RMA",
    "network": "IB link flapping, cable reseat", "host_hw": "MCE/DIMM UE - vendor ticket",
    "node_failure": "Not responding - PSU replacement", "pcie_error": "PCIe AER fatal on GPU riser",
}


def job_start_ms(att: Attempt) -> int:
    """Slurm's start of the job (sacct Start)."""
    return endings.job_start_ms(att.start_ms)


def job_end_ms(att: Attempt) -> int:
    """Slurm's end of the job (sacct End)."""
    return endings.job_end_ms(att.end_ms)


def slurmctld(sink: Sink, cfg: Config, cluster: Cluster, run: Run, evidence: dict[int, Evidence], r: random.Random
              ) -> None:
    """The controller's log: submissions, allocations, completions, drains, repairs, chatter."""
    lo, hi = cfg.window_ms
    lines: list[tuple[int, str]] = [(lo - 86_400_000, "slurmctld version 24.05.4 started on cluster "
                                                      f"{cluster.name}")]
    for att in run.attempts:
        j, start = att.job_id, job_start_ms(att)
        prio, usec = r.randint(9000, 11000), r.randint(250, 900)
        lines.append((start - r.randint(20_000, 200_000), f"_slurm_rpc_submit_batch_job: JobId={j} InitPrio={prio} "
                                                          f"usec={usec}"))
        lines.append((start + r.randint(1, 50), f"sched: Allocate JobId={j} NodeList={hostlist(att.hosts)} "
                                                f"#CPUs={CPUS * len(att.hosts)} Partition=gpu"))
        lines += evidence[att.k].ctld
        end = job_end_ms(att) + r.randint(2, 40)
        sig = evidence[att.k].state[0].split()[0] in ("PREEMPTED", "TIMEOUT", "CANCELLED")
        lines.append((end, f"_job_complete: JobId={j} {'WTERMSIG 15' if sig else 'WEXITSTATUS 1'}"))
        lines.append((end + 1, f"_job_complete: JobId={j} done"))
        e = att.ending
        if e.mode in HARDWARE and e.host and e.mode != "node_failure" and e.case != "sticky":  # sticky: missed
            t = att.end_ms + r.randint(30_000, 110_000)
            lines.append((t, f"update_node: node {e.host} reason set to: {REASONS[e.mode]}"))
            lines.append((t + 1, f"update_node: node {e.host} state set to DRAIN"))
    for host, _, back in run.repairs:
        if back < hi:
            lines.append((back, f"update_node: node {host} state set to RESUME"))
    for t in range(lo, hi, 7_200_000):  # background chatter
        lines.append((t + r.randint(0, 600_000), "Warning: Note very large processing time from _slurm_rpc_dump_jobs: "
                                                 f"usec={r.randint(3000000, 4200000)}"))
    out = [f"{ctld(from_ms(t))} {m}" for t, m in sorted(lines, key=lambda x: x[0])]
    sink.text(f"scheduler/{cluster.name}/slurmctld.log", "\n".join(out) + "\n")


def sacct_rows(cluster: Cluster, run: Run, evidence: dict[int, Evidence]) -> list[str]:
    """The job and step rows of one cluster's run."""
    rows = []
    for att in run.attempts:
        state, code = evidence[att.k].state
        start, end = job_start_ms(att), job_end_ms(att)
        n = len(att.hosts)
        g = cluster.gpus_per_node
        times = [iso_s(from_ms(start - 95_000)), iso_s(from_ms(start)), iso_s(from_ms(end)),
                 elapsed((end - start) / 1000)]
        rows.append("|".join([cluster.name, att.job_id, run.name, "trainops", "gpu", "llm", str(CPUS * n), state, code,
                              *times, str(n), hostlist(att.hosts),
                              f"billing={CPUS * n},cpu={CPUS * n},gres/gpu={g * n},mem={2000 * n}G,node={n}"]))
        step_state = "CANCELLED" if state.split()[0] in ("PREEMPTED", "TIMEOUT", "CANCELLED") else state
        step_code = "0:15" if state.startswith("CANCELLED") else code  # scancel's SIGTERM ends the steps
        for suffix, name, nn, st in ((".batch", "batch", 1, step_state), (".extern", "extern", n, "COMPLETED"),
                                     (".0", "torchrun", n, step_state)):
            rows.append("|".join([cluster.name, att.job_id + suffix, name, "", "", "llm", str(CPUS * nn), st,
                                  step_code if st != "COMPLETED" else "0:0", times[0], times[1], times[2], times[3],
                                  str(nn), att.hosts[0] if nn == 1 else hostlist(att.hosts),
                                  f"cpu={CPUS * nn},gres/gpu={g * nn},mem={2000 * nn}G,node={nn}"]))
    return rows


def sacct(sink: Sink, rows: list[str]) -> None:
    """scheduler/sacct.txt: `sacct --parsable2` for every cluster's jobs."""
    sink.text("scheduler/sacct.txt", "\n".join([SACCT_COLS, *rows]) + "\n")
