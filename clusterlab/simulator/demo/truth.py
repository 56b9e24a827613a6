"""The demo's inventory.toml and truth.json: the fleet, and the incidents and decoys the story placed."""

from __future__ import annotations

import datetime as dt
import json

from clusterlab.simulator.demo.files import Files
from clusterlab.simulator.demo.story import (
    A3_STALL_STEP,
    AER_HOST,
    DS,
    DS_HOST,
    HF,
    HF_HOST,
    IB_HOST,
    LLAMA,
    LUSTRE_HOST,
    M1_STALL_STEP,
    MM,
    MM_HOSTS,
    NFS_HOST,
    OOM_RANK,
    STRAGGLER_FACTOR,
    STRAGGLER_HOST,
    STRAGGLER_STEPS,
    XID13_AT,
    XID13_HOST,
    XID_HOST,
    Attempt,
    Story,
)
from clusterlab.simulator.stamps import (
    iso_z,
)


def write_inventory(files: Files) -> None:
    """inventory.toml: the providers, their clusters and nodes (Slurm hostlists)."""
    files.text("inventory.toml", [
        "# The fleet: providers, their clusters and nodes (Slurm hostlists).",
        "",
        "[providers.acme]",
        "usd_per_gpu_hour = 2.35",
        'support = "support@acme.example, 24/7; credits for node failures need Xid or dmesg evidence within 72 h"',
        "",
        "[providers.borealis]",
        "usd_per_gpu_hour = 1.95",
        'support = "portal tickets, business hours Europe/Helsinki; 2 of 10 contracted bor-1 nodes not delivered"',
        "",
        "[clusters.acme-east]",
        'provider = "acme"',
        'gpu = "H100-SXM"',
        "gpus_per_node = 8",
        'interconnect = "InfiniBand NDR"',
        'nodes = "east-[001-016]"',
        "contracted_nodes = 16",
        "contract_start = 2026-11-01",
        "",
        "[clusters.acme-west]",
        'provider = "acme"',
        'gpu = "H100-SXM"',
        "gpus_per_node = 8",
        'interconnect = "InfiniBand NDR"',
        'nodes = "west-[01-08]"',
        "contracted_nodes = 8",
        "",
        "[clusters.bor-1]",
        'provider = "borealis"',
        'gpu = "H200"',
        "gpus_per_node = 8",
        'interconnect = "InfiniBand NDR"',
        'nodes = "bor-[001-008]"',
        'timezone = "Europe/Helsinki"  # dmesg -T, torchrun and torchtitan print local time here',
        "contracted_nodes = 10  # two nodes never delivered",
        "contract_start = 2026-11-10",
        'delivered = { "bor-008" = 2026-11-24 }  # handed over a day into week 48',
    ])


def write_truth(files: Files, story: Story) -> int:
    """truth.json: the incidents, the decoys (benign) and every attempt's span; returns how many incidents."""
    a1, a2, a3 = story.llama
    m1, m2 = story.mm
    t = story.t

    def ts(x: dt.datetime | None) -> str | None:
        return iso_z(x) if x else None

    def terminal(att: Attempt, mode: str, host: str, root: dt.datetime, nxt: Attempt | None, evidence: list[str]):
        return {"run": att.run, "attempt": att.k, "failure_mode": mode, "host": host, "root_ts": ts(root),
                "exit_ts": ts(att.end), "next_start_ts": ts(nxt.start if nxt else None),
                "last_checkpoint_step": att.last_save(), "last_step": att.last.step,
                "first_step_after_restart": nxt.first_step if nxt else None, "evidence": evidence}

    def episode(att: Attempt, mode: str, host: str, start: dt.datetime, end: dt.datetime, steps: list[int],
                evidence: list[str]):
        return {"run": att.run, "attempt": att.k, "failure_mode": mode, "host": host, "root_ts": ts(start),
                "end_ts": ts(end), "exit_ts": None, "next_start_ts": None, "last_checkpoint_step": None,
                "first_step_after_restart": None, "steps": steps, "evidence": evidence}

    s1, s2 = STRAGGLER_STEPS
    slow = [s for s in a2.steps if s1 <= s.step <= s2]
    before_slow = next(s for s in a2.steps if s.step == s1 - 1)
    lsave = next(s for s in a3.saves if s.step == A3_STALL_STEP)
    nsave = next(s for s in m1.saves if s.step == M1_STALL_STEP)
    incidents = [
        terminal(a1, "gpu_fell_off_bus", XID_HOST, t["xid"], a2,
                 [f"nodes/{XID_HOST}/dmesg", f"runs/{LLAMA}/attempt-1/train.log", "scheduler/acme-east/slurmctld.log"]),
        episode(a2, "straggler", STRAGGLER_HOST, before_slow.end, slow[-1].end, [s1, s2],
                [f"runs/{LLAMA}/attempt-2/steps/rank-{r}.jsonl.gz" for r in (24, 31)]),
        terminal(a2, "network", IB_HOST, t["link_down"], a3,
                 [f"nodes/{IB_HOST}/kern.log", f"runs/{LLAMA}/attempt-2/train.log"]),
        episode(a3, "filesystem_io", LUSTRE_HOST, lsave.start, lsave.end, [A3_STALL_STEP],
                [f"nodes/{LUSTRE_HOST}/dmesg", f"runs/{LLAMA}/attempt-3/train.log.gz"]),
        terminal(a3, "time_limit", a3.hosts[0], a3.end, None,
                 [f"runs/{LLAMA}/attempt-3/train.log.gz", "scheduler/sacct.txt"]),
        episode(m1, "filesystem_io", NFS_HOST, nsave.start, nsave.end, [M1_STALL_STEP],
                [f"nodes/{NFS_HOST}/dmesg", f"runs/{MM}/attempt-1/bor-001.log"]),
        terminal(m1, "cuda_oom", MM_HOSTS[0], t["oom"], m2, [f"runs/{MM}/attempt-1/bor-001.log"]),
        terminal(story.ds, "preemption", DS_HOST, t["preempt"], None,
                 [f"runs/{DS}/attempt-1/train.log", "scheduler/acme-west/slurmctld.log", "scheduler/sacct.txt"]),
        terminal(story.hf, "manual_stop", HF_HOST, t["hf_cancel"], None,
                 [f"runs/{HF}/attempt-1/train.log", "scheduler/sacct.txt"]),
    ]
    incidents[3]["cause_ts"] = ts(t["lustre_lost"])
    incidents[5]["cause_ts"] = ts(t["nfs_lost"])
    incidents[1]["slowdown_factor"] = STRAGGLER_FACTOR
    incidents[6]["rank"] = OOM_RANK
    benign = [
        {"host": XID13_HOST, "ts": ts(XID13_AT), "what": "Xid 13 in another user's job; no run of ours on the node",
         "evidence": [f"nodes/{XID13_HOST}/dmesg"]},
        {"host": AER_HOST, "ts": None, "what": f"corrected PCIe AER (RxErr) during {MM} attempt 2; harmless",
         "evidence": [f"nodes/{AER_HOST}/kern.log"]},
        {"host": "west-01", "ts": None, "what": "routine kernel chatter", "evidence": ["nodes/west-01/kern.log"]},
    ]
    attempts = [{"run": a.run, "attempt": a.k, "hosts": list(a.hosts), "start_ts": ts(a.start), "end_ts": ts(a.end),
                 "first_step": a.first_step, "last_step": a.last.step, "checkpoints": [s.step for s in a.saves]}
                for a in (*story.llama, *story.mm, story.ds, story.hf)]
    doc = {"generator": "clusterlab.simulator.demo", "incidents": incidents, "benign": benign,
           "attempts": attempts}
    files.text("truth.json", json.dumps(doc, indent=2))
    return len(incidents)
