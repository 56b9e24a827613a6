#!/usr/bin/env python3
# ruff: noqa: E501, UP031, UP017  (real log lines quoted whole; printf-style hex ids)
"""Campaign "titan_k8s": torchtitan pre-training under a Kubeflow PyTorchJob on a rented Kubernetes cluster.

Written without reading clusterlab's analysis code (only the outsiders' campaigns, the scorer and DESIGN.md).
Standard library only, deterministic per --seed. Usage: titan_k8s.py --out DIR [--seed N]

Writes, under --out DIR:
  DIR/bundle/inventory.toml, DIR/bundle/runs/titan-70b-pt/run.toml, runs/titan-70b-pt/pytorchjob.yaml
  DIR/bundle/runs/titan-70b-pt/pods/<node>/<ns>_<pod>_<uid>/pytorch/0.log
        the kubelet's container logs (/var/log/pods, CRI format "<RFC3339Nano> stderr F <line>") that the
        platform team's log shipper archived, one directory per POD INSTANCE: torchrun/torchelastic agent
        (LOGLEVEL=INFO) and torchtitan (--local-ranks-filter 0 --role rank --tee 3: only local rank 0 of
        each pod prints, as "[rank<global>]:"). An in-pod torchrun restart stays in the same file; a pod the
        operator recreates (same name, new uid, maybe another node) gets a new directory. Hosts in torch's
        own lines are POD names (the pod hostname), never node names.
  DIR/bundle/cluster/events.jsonl   kubernetes-event-exporter output (one Event object a line, API server clock)
  DIR/bundle/nodes/<node>/journal-k.log   `journalctl -k` of the node: -o short-iso-precise, -o short-iso
        with the node's local offset (-08:00) or the default -o short (no year), each node's own clock
  DIR/bundle/nodes/<node>/gpu-query.csv   a DaemonSet's `nvidia-smi --query-gpu=... --format=csv -l 300`
  DIR/truth.json

Story (run "titan-70b-pt": Llama 3 70B, torchtitan FSDP 8 x TP 8 = 64 GPUs = 8 nodes x 8 H100-SXM of cluster
hx-k8s-1 / provider halcyon; 12 nodes hx-gpu-01..12 in a shared multi-tenant pool; PyTorchJob "titan-70b-pt" in
namespace "llm", 1 master + 7 workers, restartPolicy ExitCode (137/143 retried by recreating the pod, 1 is
permanent), torchrun --max-restarts=2, rendezvous c10d on <job>-master-0:29400, NCCL watchdog
comm.train_timeout_seconds = 100 s, a save every 250 steps to a ReadWriteMany PVC (CSI NFS, server
fs-ckpt01.hx.internal). An attempt is one torchelastic worker group: it starts when the gang of pods is
scheduled (new PyTorchJob) or when torchelastic starts a new worker group (in-pod restart, "[rank] Starting
worker group"), and ends when its last worker process is gone. All truth times are the API server's UTC clock.
  job 1 (pods created, FailedScheduling for a few minutes while another tenant's job drains: decoy)
  att 1  fresh start. At a periodic DCP save the NFS server stops answering: "nfs: server ... not responding"
         on hx-gpu-02 and hx-gpu-04 only (the nodes whose writes were in flight); ~3 min later DCP raises
         CheckpointException (OSError [Errno 5]) on EVERY rank (rank 0 on hx-gpu-01 prints first); every agent's
         worker group FAILED, 2/2 restarts left.                                   [filesystem_io, any host]
  att 2  in-pod restart, loads the last save. The dataloader workers of worker-1 (hx-gpu-03) leak host memory:
         the cgroup OOM killer kills the whole container (memory.oom.group): exit 137 OOMKilled, nothing more in
         its log; node-problem-detector "OOMKilling" event; the operator recreates worker-1 (same node), its new
         agent joins the rendezvous and the others restart their workers for the new member (not counted as a
         failure: no watchdog fires).                                              [host_oom, hx-gpu-03]
  att 3  rank 45 (worker-4 = hx-gpu-06, local rank 5: its own output is filtered) stops after a step; its TP peer
         rank 40 times out first (100 s) on the intra-node group, the other pods' ranks receive the dump signal
         from rank 40 and time out too; SIGABRT everywhere; hx-gpu-06's agent must SIGKILL local rank 5.
                                                                                   [nccl_timeout, hx-gpu-06]
  att 4  Xid 79 on hx-gpu-05 GPU 2 (worker-3, rank 34); the node goes NotReady ~80 s later; the watchdogs fire
         at 100 s; the agents' restart budget is spent: ChildFailedError, exit 1, PyTorchJobFailed. The
         stuck pod on the NotReady node is evicted 5 min later.                    [gpu_fell_off_bus, hx-gpu-05]
  job 2 (on-call cordons hx-gpu-05 and hx-gpu-06, deletes and resubmits the job ~45 min later)
  att 5  hx-gpu-08 GPU 3 runs with HW slowdown (power brake) the whole attempt: every step ~6 % slower (the
         telemetry CSV shows its clock and the Active reason).                     [gpu_throttle, hx-gpu-08]
         The provider then drains hx-gpu-08 for maintenance (node event "RedeployScheduled", cordon, pod
         eviction: SIGTERM, exit 143); the operator recreates worker-4 on hx-gpu-11 (image pull); the other
         ranks' watchdogs fire first (FAILED, counted).                            [preemption, hx-gpu-08]
  att 6  Xid 48 (DBE) + Xid 63 (row remap pending) on hx-gpu-07 GPU 1 (worker-3, rank 33, filtered): its agent
         logs "failed (exitcode: 1) local_rank: 1" and restarts; the others restart for the rejoining member.
                                                                                   [gpu_memory_ecc, hx-gpu-07]
  att 7  rank 48 (worker-5 = hx-gpu-09, local rank 0, visible) raises pyarrow ArrowInvalid on a corrupt data shard; its agent
         restarts (1 left)                                                         [user_code_error, any host]
  att 8  the resumed run reaches the same shard at the same step: the same exception; worker-5's agent has no
         restart left: ChildFailedError, exit 1, the job fails; the operator deletes the other pods.
                                                                                   [user_code_error, any host]
  job 3 (the user drops the shard from the dataset list, resubmits ~50 min later)
  att 9  completes (final save, "Training completed").
  Decoys: the FailedScheduling events before job 1; torch/torchtitan start-up warnings; hx-gpu-01 (rank 0
  prints the CheckpointException first), hx-gpu-02/hx-gpu-04 (NFS symptoms of the shared server); rising
  corrected-ECC counts on hx-gpu-02 GPU 6 (telemetry, no failure); "NCCL WARN NET/IB : ... Got async event :
  client reregistration event" on hx-gpu-10 in attempt 9 (the job steps on); Xid 31 (MMU fault) from another
  tenant's pod on the spare hx-gpu-12 during attempt 5; the watchdog floods of the symptom pods.

Ledger (truth.json expected_ledger, GPU-hours = 64 x seconds / 3600), the conventions of campaign1/2:
  startup    = attempt start -> its first training step start
  productive = kept steps (step <= last durable save of an ended attempt; all steps of the completed attempt);
               in attempt 5 only each step's unslowed duration
  straggler  = attempt 5's kept steps: time above their unslowed duration
  checkpoint = completed saves, plus the tail after the final save
  recompute  = end of the attempt's last durable save (or its first step start) -> root event
  hang       = root event -> attempt exit. Root events: the start of the failed save, the OOM kill, the end of
               the job's last completed step (the hang), the Xid 79, the drain's SIGTERM, the Xid 48, the exception
  restart    = attempt exit -> next attempt start;  slowdown = data_stall = idle = 0

Formats (looked up with the search tools; the text here is written anew):
  * torchtitan: "[rank0]:[titan] 2025-10-30 14:32:58,897 - root - INFO - step:  1  loss:  8.1661  grad_norm:
    3.6855  memory:  2.47GiB(3.12%)  tps: 3,502  tflops: 1.90  mfu: 0.19%", "Synchronizing and adjusting timeout
    for all ProcessGroups to 0:01:40", "Finished saving the checkpoint (or staging if async is enabled)in X
    seconds." (no space before "in": components/checkpoint.py of 2025)
  * ProcessGroupNCCL (torch 2.5/2.6): "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=...,
    OpType=..., NumelIn=..., NumelOut=..., Timeout(ms)=...) ran for ... milliseconds before timing out.",
    "Received a dump signal due to a collective timeout from  rank N and we will try our best to dump the debug
    info. Last enqueued NCCL work: A, last completed NCCL work: B.This is most likely ..." (accelerate #3861,
    OpenRLHF #1126), "Observed flight recorder dump signal from another rank via TCPStore."
  * torchelastic (LOGLEVEL=INFO, kubeflow/trainer #2041, pytorch #147064, #76198): "Starting elastic_operator
    with launch configs:", "[rank] Rendezvous complete for workers. Result:", "[rank] Worker group FAILED. 2/2
    attempts left; will restart worker group", "Detected 1 new nodes from group_rank=...; will restart worker
    group", "Received Signals.SIGTERM death signal, shutting down workers", ChildFailedError block.
  * Kubernetes: Event objects (involvedObject, reason, message, source, firstTimestamp, lastTimestamp, count,
    type); FailedScheduling "0/12 nodes are available: ..."; node-controller "NodeNotReady"; taint manager
    "TaintManagerEviction" "Marking for deletion Pod ns/name"; AKS-style node auto-drain (scheduled event
    Redeploy -> cordon and drain); training-operator "PyTorchJobRestarting", "PyTorchJobFailed",
    "SuccessfulCreatePod"; node-problem-detector "OOMKilling"; CRI log format "<ts> <stream> <P|F> <line>".
  * kernel: "Memory cgroup out of memory: Killed process P (pt_main_thread) total-vm:...kB, anon-rss:...kB,
    file-rss:...kB, shmem-rss:...kB, UID:0 pgtables:...kB oom_score_adj:..." with the oom-kill constraint line;
    NVRM Xid 79 / 48 / 63 / 31; NFS "not responding, timed out" / "OK".
  * nvidia-smi --query-gpu CSV ("2026/12/07 10:15:00.123, 0, 00000000:18:00.0, ...").
"""
from __future__ import annotations

import argparse
import json
import math
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

UTC = timezone.utc
PST = timezone(timedelta(hours=-8))

RUN = "titan-70b-pt"
JOB = "titan-70b-pt"
NS = "llm"
CLUSTER, PROVIDER = "hx-k8s-1", "halcyon"
GPN = 8
NNODES = 8
GPUS = NNODES * GPN                          # 64
TP, DP = 8, 8
LBS, SEQ = 2, 8192
TOKENS_PER_STEP = DP * LBS * SEQ             # 131072
TOKENS_PER_GPU = TOKENS_PER_STEP // GPUS     # 2048 (torchtitan's tps is per device)
FLOPS_PER_TOKEN = 4.880e11                   # 6 * 70.55e9 + attention (Llama 3 70B, seq 8192)
PEAK = 989.4e12
BASE_STEP = 2.585
JITTER = 0.003
SLOW = 1.061                                 # the power-braked GPU's whole-step factor
SAVE_EVERY = 250
LOG_FREQ = 10
WATCHDOG_S = 100
T0 = datetime(2026, 12, 7, 6, 10, 0, tzinfo=UTC).timestamp()
CKPT = "/mnt/ckpt/titan-70b/checkpoint"
NFS = "fs-ckpt01.hx.internal"
IMAGE = "registry.hx.internal/llm/torchtitan:2025.10-cu126"
HOSTS = [f"hx-gpu-{i:02d}" for i in range(1, 13)]
JOB1 = HOSTS[:8]
JOB2 = ["hx-gpu-01", "hx-gpu-02", "hx-gpu-03", "hx-gpu-04", "hx-gpu-07", "hx-gpu-08", "hx-gpu-09", "hx-gpu-10"]
SPARE_REPLACEMENT = "hx-gpu-11"
TENANT_SPARE = "hx-gpu-12"
NFS_HOSTS = ["hx-gpu-02", "hx-gpu-04"]
ECC_COUNTER = ("hx-gpu-02", 6)
WARN_HOST = "hx-gpu-10"
DATA_G = 6                                   # worker-5: hx-gpu-09 in job 2, global rank 48 (local rank 0)
BUSIDS = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]


def pod_name(g: int) -> str:
    return f"{JOB}-master-0" if g == 0 else f"{JOB}-worker-{g - 1}"


# ----------------------------------------------------------------------------- time formats
def _split(t: float) -> tuple[datetime, int]:
    us_total = int(round(t * 1_000_000))
    s, us = divmod(us_total, 1_000_000)
    return datetime.fromtimestamp(s, UTC), us


def iso_z(t: float) -> str:
    d, us = _split(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{us // 1000:03d}Z"


def k8s_ts(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_ts(t: float) -> str:
    d, us = _split(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{us:06d}Z"


def cri_ts(ns: int) -> str:
    s, frac = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(s, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def asctime(t: float) -> str:
    d, us = _split(t)
    return f"{d:%Y-%m-%d %H:%M:%S},{us // 1000:03d}"


def glog(t: float, level: str) -> str:
    d, us = _split(t)
    return f"{level}{d:%m%d} {d:%H:%M:%S}.{us:06d}"


def torch_c10(t: float, level: str) -> str:          # "[E1207 10:11:12.123456789 ProcessGroupNCCL.cpp:..."
    d, us = _split(t)
    return f"{level}{d:%m%d} {d:%H:%M:%S}.{us:06d}{(us * 7) % 1000:03d}"


def smi_ts(t: float) -> str:
    d, us = _split(t)
    return f"{d:%Y/%m/%d %H:%M:%S}.{us // 1000:03d}"


# ----------------------------------------------------------------------------- timeline
class Attempt:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps: list[tuple[int, float, float, float]] = []   # (step, start, duration, unslowed duration)
        self.saves: list[tuple[int, float, float]] = []          # completed saves (step, start, duration)
        self.failed_save: tuple[int, float] | None = None
        self.R: float = 0.0
        self.E: float = 0.0


def simulate(a: Attempt, rng: random.Random, train_steps: int, bad_step: int | None) -> bool:
    """Step the attempt from its first step; False when the end lands badly (the caller nudges and retries)."""
    a.steps, a.saves, a.failed_save = [], [], None
    t, n = a.F, a.load_step
    slow = SLOW if a.kind == "drain" else 1.0
    while True:
        if a.kind == "complete" and n >= train_steps:
            break
        n1 = n + 1
        base = BASE_STEP * (1.0 + rng.uniform(-JITTER, JITTER))
        dur = base * slow
        if a.kind == "data" and n1 == bad_step:
            a.R = t + round(rng.uniform(0.35, 0.6), 3)          # the batch fetch of step n1 raises
            a.E = a.R + a.exit_after
            return True
        if a.kind in ("oom", "xid79", "drain", "ecc") and t + dur > a.F + a.run_for:
            a.R = a.F + a.run_for
            if t + 0.3 > a.R:
                return False
            a.E = a.R + a.exit_after
            return True
        if a.kind == "hang" and t + dur > a.F + a.run_for:
            if n % SAVE_EVERY == 0:
                return False
            a.R = t                                               # end of the last completed step
            a.E = a.R + a.exit_after
            return True
        a.steps.append((n1, t, dur, base))
        t += dur
        n = n1
        if n % SAVE_EVERY == 0:
            if a.kind == "fs" and t >= a.F + a.run_for:
                a.failed_save = (n, t)
                a.R = t
                a.E = a.R + a.exit_after
                return True
            c = round(rng.uniform(38.0, 52.0), 2)
            if a.kind != "complete" and a.kind != "data" and t + c > a.F + a.run_for - 20 and t < a.F + a.run_for + 5:
                return False
            a.saves.append((n, t, c))
            t += c
    a.R = 0.0
    a.E = t + 5.2
    return True


SPECS = [
    # k, job, kind, mode, culprit, run_for (s after first step), exit_after (root -> exit), gap (exit -> next start)
    dict(k=1, job=1, kind="fs", mode="filesystem_io", host=None, run_for=2.4 * 3600, exit_after=193.0, gap=6.2,
         inpod=True),
    dict(k=2, job=1, kind="oom", mode="host_oom", host="hx-gpu-03", run_for=2.9 * 3600, exit_after=31.6, gap=2.4,
         inpod=True),
    dict(k=3, job=1, kind="hang", mode="nccl_timeout", host="hx-gpu-06", run_for=1.9 * 3600, exit_after=131.4,
         gap=5.8, inpod=True),
    dict(k=4, job=1, kind="xid79", mode="gpu_fell_off_bus", host="hx-gpu-05", run_for=1.6 * 3600, exit_after=106.3,
         gap=2710.0, inpod=False),
    dict(k=5, job=2, kind="drain", mode="preemption", host="hx-gpu-08", run_for=3.3 * 3600, exit_after=103.2,
         gap=118.0, inpod=True),
    dict(k=6, job=2, kind="ecc", mode="gpu_memory_ecc", host="hx-gpu-07", run_for=2.2 * 3600, exit_after=5.9,
         gap=4.7, inpod=True),
    dict(k=7, job=2, kind="data", mode="user_code_error", host=None, run_for=0.0, exit_after=4.1, gap=5.1,
         inpod=True),
    dict(k=8, job=2, kind="data", mode="user_code_error", host=None, run_for=0.0, exit_after=3.6, gap=3020.0,
         inpod=False),
    dict(k=9, job=3, kind="complete", mode=None, host=None, run_for=0.0, exit_after=0.0, gap=None, inpod=False),
]


def build_timeline(seed: int) -> tuple[list[Attempt], int, int]:
    rng = random.Random(f"{seed}-titan-k8s-timeline")
    atts = [Attempt(**s) for s in SPECS]
    for a in atts:
        a.run_for = a.run_for + rng.uniform(0, 1500) if a.run_for else 0.0
        a.exit_after += rng.uniform(-0.8, 0.8)
        if a.gap:
            a.gap += rng.uniform(-0.5, 0.5) if a.gap < 200 else rng.uniform(-240, 240)
    t_start, load, bad_step, train_steps = T0, 0, None, 10 ** 9
    for a in atts:
        a.load_step = load
        a.S = t_start
        if a.inpod_start:
            a.startup = 118.0 + rng.uniform(-8, 12)          # re-init, build, load
        else:
            a.startup = 276.0 + rng.uniform(-15, 25)         # image pull on new nodes, rendezvous, init, load
        if a.k == 1:
            a.startup = 262.0 + rng.uniform(-10, 10)
        if a.kind == "data" and bad_step is None:            # the corrupt shard lies ~1.3 h of steps ahead
            bad_step = load + int(1.3 * 3600 / BASE_STEP) + rng.randint(0, 400)
            if bad_step % SAVE_EVERY < 15 or bad_step % SAVE_EVERY > SAVE_EVERY - 25:
                bad_step += 60
        if a.kind == "complete":
            train_steps = (load + int(3.1 * 3600 / BASE_STEP)) // SAVE_EVERY * SAVE_EVERY
        tries = 0
        while True:
            a.F = a.S + a.startup
            ok = simulate(a, random.Random(f"{seed}-titan-k8s-steps-{a.k}-{tries}"), train_steps, bad_step)
            if ok:
                break
            tries += 1
            a.run_for += 137.0
        a.last_ckpt = a.saves[-1][0] if a.saves else a.load_step
        load = a.last_ckpt
        if a.gap is not None:
            t_start = a.E + a.gap
    return atts, train_steps, bad_step or 0


def _mark_inpod(atts_specs: list[dict]) -> None:
    """An attempt starts in-pod when the previous attempt ended with an in-pod restart."""
    prev = None
    for s in atts_specs:
        s["inpod_start"] = bool(prev and prev["inpod"])
        prev = s


_mark_inpod(SPECS)


def ledger(atts: list[Attempt]):
    cats = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute",
                          "hang", "restart", "startup", "idle"], 0.0)
    per = []
    for i, a in enumerate(atts):
        cats["startup"] += a.F - a.S
        kept = a.last_ckpt if a.kind != "complete" else 10 ** 9
        for n, _, d, base in a.steps:
            if n <= kept:
                cats["productive"] += base
                cats["straggler"] += d - base
        for _, _, c in a.saves:
            cats["checkpoint"] += c
        if a.kind == "complete":
            cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        base_t = (a.saves[-1][1] + a.saves[-1][2]) if a.saves else a.F
        nxt = atts[i + 1]
        rec, hang, rst = a.R - base_t, a.E - a.R, nxt.S - a.E
        cats["recompute"] += rec
        cats["hang"] += hang
        cats["restart"] += rst
        per.append(dict(recompute=rec, hang=hang, restart=rst, startup=nxt.F - nxt.S))
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total, (sum(cats.values()), total)
    g = GPUS / 3600.0
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per])


# ----------------------------------------------------------------------------- fleet and pods
class Fleet:
    def __init__(self, seed: int):
        rng = random.Random(f"{seed}-titan-k8s-fleet")
        self.skew = {h: round(rng.uniform(-0.25, 0.25), 4) for h in HOSTS}   # chrony-synced cloud VMs
        self.boot = {h: T0 - rng.randint(2 * 86400, 20 * 86400) for h in HOSTS}
        self.style = {h: ("short-iso-precise", "short-iso-local", "short")[i % 3] for i, h in enumerate(HOSTS)}
        self.rng = rng

    def uid(self) -> str:
        r = self.rng
        return "%08x-%04x-4%03x-%04x-%012x" % (r.getrandbits(32), r.getrandbits(16), r.getrandbits(12),
                                               0x8000 | r.getrandbits(14), r.getrandbits(48))


class PodInst:
    """One pod instance: a name, a uid, the node it ran on and the lines its container printed."""

    def __init__(self, g: int, node: str, uid: str, created: float):
        self.g, self.name, self.node, self.uid, self.created = g, pod_name(g), node, uid, created
        self.lines: list[tuple[float, int, str]] = []
        self.agent_pid = 1                                   # torchrun is the container's PID 1
        self.started = 0.0

    def add(self, t: float, line: str) -> None:
        self.lines.append((t, len(self.lines), line))


class Events:
    def __init__(self, seed: int):
        self.rows: list[tuple[float, int, dict]] = []
        self.rng = random.Random(f"{seed}-titan-k8s-events")
        self.rv = 48_112_000

    def add(self, t: float, kind: str, name: str, reason: str, message: str, component: str,
            etype: str = "Normal", host: str | None = None, uid: str | None = None, count: int = 1,
            first: float | None = None, field: str | None = None, ns: str | None = NS) -> None:
        self.rv += self.rng.randint(3, 90)
        obj: dict = {"kind": kind, "name": name, "apiVersion": {"Pod": "v1", "Node": "v1",
                                                                   "PyTorchJob": "kubeflow.org/v1"}[kind]}
        if ns and kind != "Node":
            obj["namespace"] = ns
        if uid:
            obj["uid"] = uid
        if field:
            obj["fieldPath"] = field
        ev = {"metadata": {"name": f"{name}.{self.rng.getrandbits(60):x}"[:63], "namespace": ns or "default",
                           "resourceVersion": str(self.rv), "creationTimestamp": k8s_ts(first or t)},
              "involvedObject": obj, "reason": reason, "message": message,
              "source": {"component": component, **({"host": host} if host else {})},
              "firstTimestamp": k8s_ts(first or t), "lastTimestamp": k8s_ts(t), "count": count, "type": etype,
              "eventTime": None, "reportingComponent": component, "reportingInstance": host or ""}
        self.rows.append((t, len(self.rows), ev))

    def render(self) -> bytes:
        self.rows.sort(key=lambda x: (x[0], x[1]))
        return b"".join(json.dumps(ev, separators=(",", ":")).encode() + b"\n" for _, _, ev in self.rows)


def loss_at(n: int, rng: random.Random) -> float:
    return 1.81 + 9.9 * math.exp(-n / 310.0) + 0.66 * math.exp(-n / 5200.0) + rng.gauss(0, 0.012)


# ----------------------------------------------------------------------------- pod logs
PY = "/opt/venv/bin/python3"
SITE = "/opt/venv/lib/python3.11/site-packages"
TT = "/workspace/torchtitan/torchtitan"


class World:
    """Everything the writers share: the attempts, the pods of each attempt, the sinks."""

    def __init__(self, seed: int, atts: list[Attempt], train_steps: int, bad_step: int):
        self.seed, self.atts, self.train_steps, self.bad_step = seed, atts, train_steps, bad_step
        self.fleet = Fleet(seed)
        self.events = Events(seed)
        self.kernel: dict[str, list[tuple[float, str]]] = {h: [] for h in HOSTS}
        self.pods: list[PodInst] = []
        self.by_att: dict[int, dict[int, PodInst]] = {}
        self.busy: dict[str, list[tuple[float, float]]] = {h: [] for h in HOSTS}
        self.info: dict = {}
        self.rng = random.Random(f"{seed}-titan-k8s-world")
        self.pid_next: dict[str, int] = {}

    # -- helpers
    def node_t(self, node: str, t: float) -> float:
        return t + self.fleet.skew[node]

    def agent(self, p: PodInst, t: float, level: str, where: str, msg: str) -> None:
        p.add(t, f"{glog(self.node_t(p.node, t), level)} {p.agent_pid} {where}] {msg}")

    def titan(self, p: PodInst, t: float, msg: str, level: str = "INFO") -> None:
        p.add(t, f"[rank{8 * p.g}]:[titan] {asctime(self.node_t(p.node, t))} - root - {level} - {msg}")

    def raw(self, p: PodInst, t: float, msg: str) -> None:
        p.add(t, f"[rank{8 * p.g}]:{msg}")

    def workers(self, p: PodInst, k: int) -> list[int]:
        base = 180 + 97 * k + 13 * p.g
        return [base + 3 * i for i in range(GPN)]


def nodes_of(a: Attempt) -> list[str]:
    if a.job == 1:
        return list(JOB1)
    nodes = list(JOB2)
    if a.k >= 6:
        nodes[5] = SPARE_REPLACEMENT
    return nodes


def new_pod(w: World, g: int, node: str, created: float, scheduled: float, started: float) -> PodInst:
    p = PodInst(g, node, w.fleet.uid(), created)
    p.started = started
    w.pods.append(p)
    ev = w.events
    ev.add(scheduled, "Pod", p.name, "Scheduled", f"Successfully assigned {NS}/{p.name} to {node}",
           "default-scheduler", uid=p.uid)
    cached = any(s < scheduled for s, _ in w.busy[node]) or node in w.info.setdefault("pulled", set())
    if cached:
        ev.add(started - 1.1, "Pod", p.name, "Pulled", f'Container image "{IMAGE}" already present on machine',
               "kubelet", host=node, uid=p.uid, field="spec.containers{pytorch}")
    else:
        pull = started - scheduled - 2.0
        ev.add(scheduled + 0.9, "Pod", p.name, "Pulling", f'Pulling image "{IMAGE}"', "kubelet", host=node,
               uid=p.uid, field="spec.containers{pytorch}")
        ev.add(started - 1.1, "Pod", p.name, "Pulled", f'Successfully pulled image "{IMAGE}" in '
               f"{int(pull // 60)}m{pull % 60:.3f}s ({int(pull // 60)}m{pull % 60 + 0.4:.3f}s including waiting). "
               "Image size: 19283746512 bytes.", "kubelet", host=node, uid=p.uid, field="spec.containers{pytorch}")
    w.info["pulled"].add(node)
    ev.add(started - 0.6, "Pod", p.name, "Created", "Created container: pytorch", "kubelet", host=node, uid=p.uid,
           field="spec.containers{pytorch}")
    ev.add(started - 0.2, "Pod", p.name, "Started", "Started container pytorch", "kubelet", host=node, uid=p.uid,
           field="spec.containers{pytorch}")
    w.kernel[node].append((started - 1.4, f"IPv6: ADDRCONF(NETDEV_CHANGE): cali{w.rng.getrandbits(44):011x}: link "
                                          "becomes ready"))
    # torchrun's own start-up (LOGLEVEL=INFO)
    t = started + 6.5 + w.rng.uniform(0, 2)
    w.agent(p, t, "W", "torch/distributed/run.py:793", "")
    w.agent(p, t, "W", "torch/distributed/run.py:793", "*" * 41)
    w.agent(p, t, "W", "torch/distributed/run.py:793", "Setting OMP_NUM_THREADS environment variable for each "
            "process to be 1 in default, to avoid your system being overloaded, please further tune the variable "
            "for optimal performance in your application as needed. ")
    w.agent(p, t, "W", "torch/distributed/run.py:793", "*" * 41)
    w.agent(p, t + 0.01, "I", "torch/distributed/launcher/api.py:194", "Starting elastic_operator with launch configs:")
    for ln in ["  entrypoint         : torchtitan.train", "  min_nodes          : 8", "  max_nodes          : 8",
               "  nproc_per_node     : 8", f"  run_id             : {JOB}", "  rdzv_backend       : c10d",
               f"  rdzv_endpoint      : {JOB}-master-0:29400", "  rdzv_configs       : {'timeout': 900}",
               "  max_restarts       : 2", "  monitor_interval   : 0.1", "  log_dir            : /tmp/torchelastic_"
               f"{w.rng.getrandbits(40):010x}", "  metrics_cfg        : {}", ""]:
        p.add(t + 0.01, ln)
    w.agent(p, t + 0.05, "I", "torch/distributed/elastic/agent/server/api.py:870",
            "[rank] starting workers for entrypoint: python3")
    w.agent(p, t + 0.05, "I", "torch/distributed/elastic/agent/server/api.py:680", "[rank] Rendezvous'ing worker group")
    return p


def rendezvous_done(w: World, p: PodInst, t: float, restart_count: int, start: float) -> None:
    w.agent(p, t, "I", "torch/distributed/elastic/agent/server/api.py:525",
            "[rank] Rendezvous complete for workers. Result:")
    ranks = list(range(8 * p.g, 8 * p.g + 8))
    for ln in [f"  restart_count={restart_count}", f"  master_addr={JOB}-master-0", "  master_port=29500",
               f"  group_rank={p.g}", "  group_world_size=8", f"  local_ranks={list(range(8))}",
               f"  role_ranks={ranks}", f"  global_ranks={ranks}", f"  role_world_sizes={[64] * 8}",
               f"  global_world_sizes={[64] * 8}", ""]:
        p.add(t, ln)
    w.agent(p, start, "I", "torch/distributed/elastic/agent/server/api.py:688", "[rank] Starting worker group")


def titan_startup(w: World, a: Attempt, p: PodInst) -> None:
    r = 8 * p.g
    s = a.W + 1.0 + w.rng.uniform(0, 0.6)
    d, us = _split(w.node_t(p.node, s + 9.0))
    w.titan(p, s + 7.2, "Starting job: Llama 3 70B pre-training")
    w.raw(p, s + 9.0, f"[W{d:%m%d} {d:%H:%M:%S}.{us:06d}{us % 997:03d} ProcessGroupNCCL.cpp:4715] [PG ID 0 PG GUID 0 "
                      f"Rank {r}]  using GPU 0 to perform barrier as devices used by this process are currently "
                      "unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect. Specify "
                      "device_ids in barrier() to force use of a particular device, or call init_process_group() "
                      "with a device_id.")
    w.titan(p, s + 9.4, f"Building 2-D device mesh with ['dp_shard', 'tp'], [{DP}, {TP}]")
    w.titan(p, s + 9.5, "[GC] Initial GC collection 0.00 seconds")
    w.titan(p, s + 10.8, "Building tokenizer from /mnt/data/tokenizer/llama3/tokenizer.model")
    w.titan(p, s + 11.6, "Preparing fineweb_edu dataset from /mnt/data/fineweb-edu/parquet")
    w.titan(p, s + 26.0, "Building llama3 70B with TransformerModelArgs(_enforced='This field is used to enforce all "
                         "fields have defaults.', dim=8192, n_layers=80, n_heads=64, n_kv_heads=8, vocab_size=128256, "
                         "multiple_of=4096, ffn_dim_multiplier=1.3, norm_eps=1e-05, rope_theta=500000, "
                         "max_seq_len=8192, depth_init=True, use_flex_attn=False, attn_mask_type='causal', "
                         "eos_id=0)")
    w.titan(p, s + 26.3, "CUDA capacity: NVIDIA H100 80GB HBM3 with 79.19GiB memory")
    w.titan(p, s + 27.1, "Model llama3 70B size: 70,553,706,496 total parameters")
    w.titan(p, s + 27.4, "Applied Tensor Parallelism to the model")
    w.titan(p, s + 27.6, "Applied selective activation checkpointing to the model")
    w.titan(p, s + 30.2, "Applied FSDP to the model")
    w.titan(p, s + 33.0, f"Peak FLOPS used for computing MFU: {PEAK:.3e}")
    w.titan(p, s + 33.1, "CUDA memory usage for model: 17.05GiB(21.53%)")
    w.titan(p, s + 33.5, f"Checkpointing active. Checkpoints will be loaded from and saved to {CKPT}")
    w.raw(p, s + 34.0, f"{SITE}/torch/distributed/tensor/_random.py:46: UserWarning: DTensor random operators may "
                       "not have complete support on cuda device mesh")
    if a.load_step:
        t0 = s + 36.0
        w.titan(p, t0, f"Loading the checkpoint from {CKPT}/step-{a.load_step}.")
        w.titan(p, a.F - 1.6, f"Finished loading the checkpoint in {a.F - 1.6 - t0:.2f} seconds.")
    w.titan(p, a.F - 0.2, f"Training starts at step {a.load_step + 1}, with local batch size {LBS}, global batch size "
                          f"{DP * LBS}, sequence length {SEQ}, total steps {w.train_steps} (warmup 2000)")


def titan_steps(w: World, a: Attempt, p: PodInst, stop_at: float) -> None:
    lrng = random.Random(f"{w.seed}-loss-{a.k}")
    t_last, last_n = a.F, a.load_step
    saves = {n: (t, c) for n, t, c in a.saves}
    jit = random.Random(f"{w.seed}-jit-{a.k}-{p.g}")
    mem = 61.2 + 0.07 * p.g
    for n, ts, dur, _ in a.steps:
        end = ts + dur
        if end > stop_at:
            break
        if n == a.load_step + 1 or n % LOG_FREQ == 0:
            since, last_n = n - last_n, n
            tps = since * TOKENS_PER_GPU / (end - t_last)
            loss = loss_at(n, lrng)
            gn = 0.21 + 2.8 * math.exp(-n / 600.0) + abs(lrng.gauss(0, 0.02))
            w.titan(p, end + jit.uniform(0.001, 0.006),
                    f"step: {n:2}  loss: {loss:7.4f}  grad_norm: {gn:7.4f}  memory: {mem:5.2f}GiB({mem / 79.19 * 100:.2f}%)  "
                    f"tps: {round(tps):,}  tflops: {FLOPS_PER_TOKEN * tps / 1e12:,.2f}  mfu: "
                    f"{100 * FLOPS_PER_TOKEN * tps / PEAK:.2f}%")
            t_last = end
            if n == a.load_step + 1:
                w.titan(p, end + 0.02, f"Synchronizing and adjusting timeout for all ProcessGroups to "
                                       f"0:{WATCHDOG_S // 60:02d}:{WATCHDOG_S % 60:02d}")
        if n in saves and end + saves[n][1] <= stop_at:
            s0, c = saves[n]
            w.titan(p, s0 + 0.009, "Saving the checkpoint (or staging if async is enabled).")  # after its step line
            w.titan(p, s0 + c - 0.01 + jit.uniform(0, 0.02),
                    f"Finished saving the checkpoint (or staging if async is enabled)in {c - 0.02:.2f} seconds.")
        if n % 1000 == 0:
            w.titan(p, end + 0.03, f"[GC] Peforming periodical GC collection {jit.uniform(0.04, 0.09):.2f} seconds")


# ----------------------------------------------------------------------------- attempt endings
DUMP_TAIL = (".This is most likely caused by incorrect usages of collectives, e.g., wrong sizes used across ranks, "
             "the order of collectives is not same for all ranks or the scheduled collective, for some reason, didn't "
             "run. Additionally, this can be caused by GIL deadlock or other reasons such as network errors or bugs in "
             "the communications library (e.g. NCCL), etc. ")


def c10(w: World, p: PodInst, t: float, level: str, where: str, msg: str) -> None:
    w.raw(p, t, f"[{torch_c10(w.node_t(p.node, t), level)} {where}] {msg}")


def watchdog(w: World, p: PodInst, t: float, pg: str, pg_rank: int, seq: int, op: str, numel: int,
             dump_from: int | None) -> None:
    if dump_from is not None:
        c10(w, p, t - 0.6, "E", "ProcessGroupNCCL.cpp:1806", f"[{pg} Rank {pg_rank}] Observed flight recorder dump "
            "signal from another rank via TCPStore.")
        c10(w, p, t - 0.6, "E", "ProcessGroupNCCL.cpp:1870", f"[{pg} Rank {pg_rank}] Received a dump signal due to a "
            f"collective timeout from  rank {dump_from} and we will try our best to dump the debug info. Last enqueued "
            f"NCCL work: {seq + 1}, last completed NCCL work: {seq - 1}{DUMP_TAIL}")
    ran = int(WATCHDOG_S * 1000 + (t % 1) * 90)
    wk = f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel * (8 if op == '_ALLGATHER_BASE' else 1)}, Timeout(ms)={WATCHDOG_S * 1000})"
    c10(w, p, t, "E", "ProcessGroupNCCL.cpp:632", f"[Rank {pg_rank}] Watchdog caught collective operation timeout: "
        f"{wk} ran for {ran} milliseconds before timing out.")
    c10(w, p, t + 0.001, "E", "ProcessGroupNCCL.cpp:2271", f"[{pg} Rank {pg_rank}]  failure detected by watchdog at "
        f"work sequence id: {seq} PG status: last enqueued work: {seq + 1}, last completed work: {seq - 1}")
    c10(w, p, t + 0.002, "E", "ProcessGroupNCCL.cpp:670", f"[Rank {pg_rank}] Some NCCL operations have failed or timed "
        "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
        "corrupted/incomplete data.")
    c10(w, p, t + 0.002, "E", "ProcessGroupNCCL.cpp:676", f"[Rank {pg_rank}] To avoid data inconsistency, we are "
        "taking the entire process down.")
    w.raw(p, t + 0.05, "terminate called after throwing an instance of 'c10::DistBackendError'")
    w.raw(p, t + 0.05, f"  what():  [{pg} Rank {pg_rank}] Process group watchdog thread terminated with exception: "
                       f"[Rank {pg_rank}] Watchdog caught collective operation timeout: {wk} ran for {ran} milliseconds "
                       "before timing out.")
    w.raw(p, t + 0.05, "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:635 (most recent call first):")
    w.raw(p, t + 0.05, f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f{w.rng.getrandbits(36):09x} in {SITE}/torch/lib/libc10.so)")


def agent_fail(w: World, p: PodInst, k: int, t: float, exitcode: int, local_rank: int, stop_t: float,
               restart: bool = True, stuck: int | None = None) -> None:
    pids = w.workers(p, k)
    w.agent(p, t, "E", "torch/distributed/elastic/multiprocessing/api.py:869",
            f"failed (exitcode: {exitcode}) local_rank: {local_rank} (pid: {pids[local_rank]}) of binary: {PY}")
    if restart and p.remaining > 0:
        w.agent(p, t + 0.01, "I", "torch/distributed/elastic/agent/server/api.py:859",
                f"[rank] Worker group FAILED. {p.remaining}/2 attempts left; will restart worker group")
        p.remaining -= 1
        p.restart_count += 1
    w.agent(p, t + 0.02, "I", "torch/distributed/elastic/agent/server/api.py:700", "[rank] Stopping worker group")
    for i in range(GPN):
        if i != local_rank:
            w.agent(p, t + 0.03, "W", "torch/distributed/elastic/multiprocessing/api.py:897",
                    f"Sending process {pids[i]} closing signal SIGTERM")
    if stuck is not None:
        w.agent(p, stop_t - 0.1, "W", "torch/distributed/elastic/multiprocessing/api.py:914",
                f"Unable to shutdown process {pids[stuck]} via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL")


def member_restart(w: World, p: PodInst, k: int, t: float) -> None:
    w.agent(p, t, "I", "torch/distributed/elastic/agent/server/api.py:883",
            f"[rank] Detected 1 new nodes from group_rank={p.g}; will restart worker group")
    w.agent(p, t + 0.01, "I", "torch/distributed/elastic/agent/server/api.py:700", "[rank] Stopping worker group")
    for pid in w.workers(p, k):
        w.agent(p, t + 0.02, "W", "torch/distributed/elastic/multiprocessing/api.py:897",
                f"Sending process {pid} closing signal SIGTERM")


def sigterm_exit(w: World, p: PodInst, k: int, t: float, end: float) -> None:
    w.agent(p, t, "W", "torch/distributed/elastic/agent/server/api.py:704",
            "Received Signals.SIGTERM death signal, shutting down workers")
    for pid in w.workers(p, k):
        w.agent(p, t + 0.001, "W", "torch/distributed/elastic/multiprocessing/api.py:897",
                f"Sending process {pid} closing signal SIGTERM")
    for ln in ["Traceback (most recent call last):", '  File "/opt/venv/bin/torchrun", line 8, in <module>',
               "    sys.exit(main())", f'  File "{SITE}/torch/distributed/elastic/agent/server/api.py", line 711, in run',
               "    result = self._invoke_run(role)",
               f'  File "{SITE}/torch/distributed/elastic/multiprocessing/api.py", line 84, in _terminate_process_handler',
               '    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)',
               f"torch.distributed.elastic.multiprocessing.api.SignalException: Process {p.agent_pid} got signal: 15"]:
        p.add(end - 0.05, ln)


def child_failed(w: World, p: PodInst, k: int, t: float, rank: int, local_rank: int, exitcode: int,
                 tb: list[str]) -> None:
    pid = w.workers(p, k)[local_rank]
    d = datetime.fromtimestamp(int(w.node_t(p.node, t)), UTC)
    lines = ["Traceback (most recent call last):", '  File "/opt/venv/bin/torchrun", line 8, in <module>',
             "    sys.exit(main())", "             ^^^^^^",
             f'  File "{SITE}/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
             "    return f(*args, **kwargs)", f'  File "{SITE}/torch/distributed/run.py", line 918, in main',
             "    run(args)", f'  File "{SITE}/torch/distributed/launcher/api.py", line 269, in launch_agent',
             "    raise ChildFailedError(",
             "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
             "=" * 60, "torchtitan.train FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
             "Root Cause (first observed failure):", "[0]:", f"  time      : {d:%Y-%m-%d_%H:%M:%S}",
             f"  host      : {p.name}", f"  rank      : {rank} (local_rank: {local_rank})",
             f"  exitcode  : {exitcode} (pid: {pid})"]
    if exitcode < 0:
        lines += ["  error_file: <N/A>", f"  traceback : Signal {-exitcode} (SIGABRT) received by PID {pid}"]
    else:
        lines += [f"  error_file: /tmp/torchelastic_{w.rng.getrandbits(40):010x}/{JOB}_{w.rng.getrandbits(28):07x}/"
                  f"attempt_{p.restart_count}/{local_rank}/error.json", "  traceback : " + tb[0]] + ["  " + x for x in tb[1:]]
    lines.append("=" * 60)
    for ln in lines:
        p.add(t, ln)


DATA_TB = ["Traceback (most recent call last):",
           f'  File "{SITE}/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
           "    return f(*args, **kwargs)", f'  File "{TT}/train.py", line 583, in train',
           "    self.train_step(data_iterator)", f'  File "{TT}/train.py", line 492, in train_step',
           "    input_dict, labels = self.next_batch(data_iterator)",
           f'  File "{TT}/train.py", line 421, in next_batch', "    batch = next(data_iterator)",
           f'  File "{SITE}/torch/utils/data/dataloader.py", line 733, in __next__', "    data = self._next_data()",
           f'  File "{SITE}/torchdata/stateful_dataloader/stateful_dataloader.py", line 453, in _next_data',
           "    data = self._dataset_fetcher.fetch(index)  # may raise StopIteration",
           f'  File "{TT}/datasets/hf_datasets.py", line 132, in __iter__',
           "    for sample in self._get_data_iter():",
           f'  File "{SITE}/datasets/packaged_modules/parquet/parquet.py", line 94, in _generate_tables',
           "    parquet_fragment = ds.ParquetFileFormat().make_fragment(f)",
           '  File "pyarrow/_dataset_parquet.pyx", line 246, in pyarrow._dataset_parquet.ParquetFileFormat.make_fragment',
           '  File "pyarrow/error.pxi", line 92, in pyarrow.lib.check_status',
           "pyarrow.lib.ArrowInvalid: Parquet magic bytes not found in footer. Either the file is corrupted or this is "
           "not a parquet file."]
DCP_TB = [f'  File "{TT}/train.py", line 612, in train', "    self.checkpointer.save(",
          f'  File "{TT}/components/checkpoint.py", line 502, in save', "    self.dcp_save(",
          f'  File "{TT}/components/checkpoint.py", line 415, in dcp_save', "    ret = dcp.save(state_dict, checkpoint_id=checkpoint_id)",
          f'  File "{SITE}/torch/distributed/checkpoint/state_dict_saver.py", line 175, in save',
          "    return _save_state_dict(",
          f'  File "{SITE}/torch/distributed/checkpoint/state_dict_saver.py", line 349, in _save_state_dict',
          '    return distW.all_reduce("write", write_data, finish_checkpoint)',
          f'  File "{SITE}/torch/distributed/checkpoint/utils.py", line 223, in all_reduce',
          "    raise final_result"]


def end_fs(w: World, a: Attempt, pods: dict[int, PodInst]) -> None:
    n, R = a.failed_save
    for p in pods.values():
        w.titan(p, R + 0.004 + w.rng.uniform(0, 0.01), "Saving the checkpoint (or staging if async is enabled).")
    for h in NFS_HOSTS:
        t = R + w.rng.uniform(8.0, 14.0)
        while t < a.E - 4:
            w.kernel[h].append((t, f"nfs: server {NFS} not responding, timed out"))
            t += w.rng.uniform(25.0, 55.0)
        w.kernel[h].append((a.E + 540 + w.rng.uniform(0, 30), f"nfs: server {NFS} OK"))
    bad = sorted([9, 12, 14, 25, 27, 30])
    X = a.E - 7.0
    order = sorted(pods.values(), key=lambda p: p.g)
    for i, p in enumerate(order):
        tx = X + (0.0 if p.g == 0 else 0.3 + 0.28 * i + w.rng.uniform(0, 0.2))
        tb = ["Traceback (most recent call last):"] + DCP_TB + [
            f"torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:dict_keys({bad})",
            f"Traceback (most recent call last): (RANK {bad[0]})",
            f'  File "{SITE}/torch/distributed/checkpoint/utils.py", line 210, in all_reduce',
            "    local_data = map_fun()", f'  File "{SITE}/torch/distributed/checkpoint/filesystem.py", line 654, in write_data',
            "    _write_files_from_queue(", f'  File "{SITE}/torch/distributed/checkpoint/filesystem.py", line 372, in _write_files_from_queue',
            "    os.fsync(stream.fileno())", "OSError: [Errno 5] Input/output error"]
        for ln in tb:
            w.raw(p, tx, " " + ln)
        agent_fail(w, p, a.k, tx + 1.2 + w.rng.uniform(0, 1.5), 1, 0, a.E)
        w.agent(p, a.E - 0.1, "I", "torch/distributed/elastic/agent/server/api.py:680",
                "[rank] Rendezvous'ing worker group")
    w.info["dcp_first_printer"] = pod_name(0)


def end_oom(w: World, a: Attempt, pods: dict[int, PodInst], nxt_pods: dict[int, PodInst]) -> None:
    g = 2
    victim = pods[g]
    node = victim.node
    hp = 2_840_000 + w.rng.randint(0, 90_000)
    cid = "%064x" % w.rng.getrandbits(256)
    memcg = f"/kubepods.slice/kubepods-pod{victim.uid.replace('-', '_')}.slice/cri-containerd-{cid}.scope"
    K = w.kernel[node]
    K.append((a.R - 0.03, "pt_data_worker invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=-997"))
    K.append((a.R - 0.02, f"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-{cid[:12]}.scope,"
                          f"mems_allowed=0-1,oom_memcg={memcg},task_memcg={memcg},task=pt_main_thread,pid={hp},uid=0"))
    K.append((a.R, f"Memory cgroup out of memory: Killed process {hp} (pt_main_thread) total-vm:143817264kB, "
                   f"anon-rss:98877412kB, file-rss:1203344kB, shmem-rss:8388608kB, UID:0 pgtables:231568kB "
                   "oom_score_adj:-997"))
    for j in range(1, 5):
        K.append((a.R + 0.004 * j, f"Memory cgroup out of memory: Killed process {hp + 37 * j} (pt_data_worker) "
                                   f"total-vm:61217340kB, anon-rss:{41_000_000 + 917_311 * j}kB, file-rss:88212kB, "
                                   "shmem-rss:8388608kB, UID:0 pgtables:118344kB oom_score_adj:-997"))
    K.append((a.R + 0.09, f"oom_reaper: reaped process {hp} (pt_main_thread), now anon-rss:0kB, file-rss:0kB, shmem-rss:8388608kB"))
    ev = w.events
    ev.add(a.R + 0.8, "Node", node, "OOMKilling", f"Memory cgroup out of memory: Killed process {hp} (pt_main_thread) "
           "total-vm:143817264kB, anon-rss:98877412kB, file-rss:1203344kB, shmem-rss:8388608kB, UID:0 "
           "pgtables:231568kB oom_score_adj:-997", "kernel-monitor", etype="Warning", host=node, ns=None)
    ev.add(a.R + 1.9, "PyTorchJob", JOB, "ExitedWithCode", f"Pod: {NS}.{victim.name} exited with code 137",
           "pytorchjob-controller")
    ev.add(a.R + 2.2, "PyTorchJob", JOB, "PyTorchJobRestarting", f"PyTorchJob {JOB} is restarting because 1 Worker "
           "replica(s) failed.", "pytorchjob-controller", etype="Warning")
    ev.add(a.R + 2.4, "PyTorchJob", JOB, "SuccessfulDeletePod", f"Deleted pod: {victim.name}", "pytorchjob-controller")
    ev.add(a.R + 2.9, "PyTorchJob", JOB, "SuccessfulCreatePod", f"Created pod: {victim.name}", "pytorchjob-controller")
    J = a.E - 3.0
    newp = new_pod(w, g, node, a.R + 2.9, a.R + 3.3, a.R + 5.8)
    newp.remaining, newp.restart_count = 2, 0
    newp.add(J, f"{glog(w.node_t(node, J), 'I')} 1 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1160] "
                f"The node '{newp.name}_1_0' attempts to join the next round of the rendezvous '{JOB}'.")
    for p in pods.values():
        if p.g != g:
            member_restart(w, p, a.k, J + 0.1 + 0.05 * p.g)
            w.agent(p, a.E - 0.1, "I", "torch/distributed/elastic/agent/server/api.py:680",
                    "[rank] Rendezvous'ing worker group")
            nxt_pods[p.g] = p
    nxt_pods[g] = newp
    w.info["oom_pid"] = hp


def end_hang(w: World, a: Attempt, pods: dict[int, PodInst], first_g: int, lagging: int, seq0: int) -> None:
    first = pods[first_g]
    t1 = a.R + WATCHDOG_S + 0.02
    watchdog(w, first, t1, "PG ID 2 PG GUID 9(tp)", 0, seq0, "ALLREDUCE", 16777216, None)
    agent_fail(w, first, a.k, t1 + 3.1, -6, 0, a.E, stuck=lagging)
    w.agent(first, a.E + 0.05, "I", "torch/distributed/elastic/agent/server/api.py:680", "[rank] Rendezvous'ing worker group")
    for p in pods.values():
        if p.g == first_g:
            continue
        t = t1 + 0.7 + w.rng.uniform(0.1, 3.0)
        watchdog(w, p, t, "PG ID 1 PG GUID 3(dp_shard)", p.g, 41_000 + seq0 % 977, "_ALLGATHER_BASE", 57_344_000,
                 8 * first_g)
        agent_fail(w, p, a.k, t + 3.2 + w.rng.uniform(0, 0.5), -6, 0, a.E)
        w.agent(p, t + 3.9, "I", "torch/distributed/elastic/agent/server/api.py:680", "[rank] Rendezvous'ing worker group")


def end_xid79(w: World, a: Attempt, pods: dict[int, PodInst]) -> None:
    g_dead, gpu = 4, 2
    node = pods[g_dead].node
    bus = BUSIDS[gpu]
    hp = 3_110_000 + w.rng.randint(0, 80_000)
    K = w.kernel[node]
    K += [(a.R, f"NVRM: Xid (PCI:0000:{bus}:00): 79, pid={hp}, name=pt_main_thread, GPU has fallen off the bus."),
          (a.R + 0.001, f"NVRM: GPU 0000:{bus}:00.0: GPU has fallen off the bus."),
          (a.R + 0.002, f"NVRM: GPU at PCI:0000:{bus}:00: GPU-3f1c9a02-7be4-{w.rng.getrandbits(16):04x}-9d11-{w.rng.getrandbits(48):012x}"),
          (a.R + 0.003, f"NVRM: GPU Board Serial Number: 165232{w.rng.randint(1000000, 9999999)}"),
          (a.R + 4.2, "NVRM: A GPU crash dump has been created. If possible, please run"),
          (a.R + 4.2, "NVRM: nvidia-bug-report.sh as root to collect this data before"),
          (a.R + 4.2, "NVRM: the NVIDIA kernel module is unloaded.")]
    w.info["xid79_bus"] = bus
    ev = w.events
    ev.add(a.R + 78.0, "Node", node, "NodeNotReady", f"Node {node} status is now: NodeNotReady", "node-controller",
           ns=None)
    ev.add(a.R + 78.4, "Pod", pods[g_dead].name, "NodeNotReady", "Node is not ready", "node-controller",
           etype="Warning", uid=pods[g_dead].uid)
    t1 = a.R + WATCHDOG_S + 0.03
    tfail = t1
    for p in pods.values():
        if p.g == g_dead:
            continue
        t = t1 + (0.0 if p.g == 1 else 0.6 + w.rng.uniform(0, 2.5))
        watchdog(w, p, t, "PG ID 1 PG GUID 3(dp_shard)", p.g, 52_000 + p.g, "_REDUCE_SCATTER_BASE", 7_168_000,
                 None if p.g == 1 else 8)
        tf = t + 3.0 + w.rng.uniform(0, 0.6)
        if p.remaining > 0:
            agent_fail(w, p, a.k, tf, -6, 0, a.E)
            w.agent(p, tf + 0.2, "I", "torch/distributed/elastic/agent/server/api.py:680", "[rank] Rendezvous'ing worker group")
            sigterm_exit(w, p, a.k, a.E - 1.0, a.E)
        else:
            agent_fail(w, p, a.k, tf, -6, 0, a.E, restart=False)
            child_failed(w, p, a.k, tf + 0.2, 8 * p.g, 0, -6, [])
            ev.add(tf + 0.9, "PyTorchJob", JOB, "ExitedWithCode", f"Pod: {NS}.{p.name} exited with code 1",
                   "pytorchjob-controller")
            tfail = max(tfail, tf + 1.0)
    ev.add(tfail, "PyTorchJob", JOB, "PyTorchJobFailed", f"PyTorchJob {JOB} is failed because 1 Master replica(s) "
           "failed.", "pytorchjob-controller")
    for p in pods.values():
        if p.g in (2, g_dead):
            ev.add(tfail + 0.3, "PyTorchJob", JOB, "SuccessfulDeletePod", f"Deleted pod: {p.name}", "pytorchjob-controller")
            ev.add(tfail + 0.4, "Pod", p.name, "Killing", "Stopping container pytorch", "kubelet", host=p.node, uid=p.uid,
                   field="spec.containers{pytorch}")
    ev.add(a.R + 378.1, "Pod", pods[g_dead].name, "TaintManagerEviction", f"Marking for deletion Pod {NS}/{pods[g_dead].name}",
           "taint-eviction-controller", uid=pods[g_dead].uid)


def end_drain(w: World, a: Attempt, pods: dict[int, PodInst], nxt: Attempt, nxt_pods: dict[int, PodInst]) -> None:
    g = 5
    victim = pods[g]
    node = victim.node
    ev = w.events
    nb = datetime.fromtimestamp(int(a.R + 600), UTC)
    ev.add(a.R - 840.0, "Node", node, "VMEventScheduled", f"Redeploy scheduled: planned host maintenance, EventId "
           f"{w.fleet.uid().upper()}, NotBefore: {nb:%a, %d %b %Y %H:%M:%S} GMT", "node-maintenance-monitor",
           etype="Warning", host=node, ns=None)
    ev.add(a.R - 4.0, "Node", node, "NodeNotSchedulable", f"Node {node} status is now: NodeNotSchedulable", "kubelet",
           host=node, ns=None)
    ev.add(a.R - 2.5, "Node", node, "Drain", f"Draining node {node} for scheduled event Redeploy: evicting 3 pod(s)",
           "node-maintenance-monitor", host=node, ns=None)
    ev.add(a.R, "Pod", victim.name, "Killing", "Stopping container pytorch", "kubelet", host=node, uid=victim.uid,
           field="spec.containers{pytorch}")
    sigterm_exit(w, victim, a.k, a.R + 0.05, a.R + 1.8)
    ev.add(a.R + 2.6, "PyTorchJob", JOB, "ExitedWithCode", f"Pod: {NS}.{victim.name} exited with code 143",
           "pytorchjob-controller")
    ev.add(a.R + 2.8, "PyTorchJob", JOB, "PyTorchJobRestarting", f"PyTorchJob {JOB} is restarting because 1 Worker "
           "replica(s) failed.", "pytorchjob-controller", etype="Warning")
    ev.add(a.R + 3.2, "PyTorchJob", JOB, "SuccessfulCreatePod", f"Created pod: {victim.name}", "pytorchjob-controller")
    started = nxt.S - 22.0
    newp = new_pod(w, g, SPARE_REPLACEMENT, a.R + 3.2, a.R + 3.7, started)
    newp.remaining, newp.restart_count = 2, 0
    t1 = a.R + WATCHDOG_S + 0.04
    for p in pods.values():
        if p.g == g:
            continue
        t = t1 + (0.0 if p.g == 3 else 0.5 + w.rng.uniform(0, 2.4))
        watchdog(w, p, t, "PG ID 1 PG GUID 3(dp_shard)", p.g, 38_000 + p.g, "_ALLGATHER_BASE", 57_344_000,
                 None if p.g == 3 else 24)
        agent_fail(w, p, a.k, t + 2.9 + w.rng.uniform(0, 0.3), -6, 0, a.E)
        w.agent(p, t + 3.4, "I", "torch/distributed/elastic/agent/server/api.py:680", "[rank] Rendezvous'ing worker group")
        nxt_pods[p.g] = p
    nxt_pods[g] = newp


def end_ecc(w: World, a: Attempt, pods: dict[int, PodInst]) -> None:
    g, gpu = 4, 1
    p0 = pods[g]
    bus = BUSIDS[gpu]
    hp = 1_902_000 + w.rng.randint(0, 80_000)
    w.kernel[p0.node] += [
        (a.R, f"NVRM: Xid (PCI:0000:{bus}:00): 48, pid={hp}, name=pt_main_thread, An uncorrectable double bit error "
              "(DBE) has been detected on GPU in the framebuffer at partition 5, subpartition 1."),
        (a.R + 0.02, f"NVRM: Xid (PCI:0000:{bus}:00): 63, pid={hp}, name=pt_main_thread, Row Remapper: New row "
                     f"(0x{w.rng.getrandbits(36):012x}) marked for remapping, reset gpu to activate.")]
    w.info["ecc_bus"] = bus
    agent_fail(w, p0, a.k, a.R + 1.9, 1, gpu, a.E)
    w.agent(p0, a.E - 0.1, "I", "torch/distributed/elastic/agent/server/api.py:680", "[rank] Rendezvous'ing worker group")
    for p in pods.values():
        if p.g != g:
            member_restart(w, p, a.k, a.R + 3.4 + 0.05 * p.g)
            w.agent(p, a.E - 0.1, "I", "torch/distributed/elastic/agent/server/api.py:680", "[rank] Rendezvous'ing worker group")


def end_data(w: World, a: Attempt, pods: dict[int, PodInst], final: bool) -> None:
    g = DATA_G
    p0 = pods[g]
    for ln in DATA_TB:
        w.raw(p0, a.R, " " + ln)
    if not final:
        agent_fail(w, p0, a.k, a.R + 1.5, 1, 0, a.E)
        w.agent(p0, a.E - 0.1, "I", "torch/distributed/elastic/agent/server/api.py:680", "[rank] Rendezvous'ing worker group")
        for p in pods.values():
            if p.g != g:
                member_restart(w, p, a.k, a.R + 2.6 + 0.05 * p.g)
                w.agent(p, a.E - 0.1, "I", "torch/distributed/elastic/agent/server/api.py:680", "[rank] Rendezvous'ing worker group")
        return
    agent_fail(w, p0, a.k, a.R + 1.5, 1, 0, a.E, restart=False)
    child_failed(w, p0, a.k, a.R + 1.8, 8 * DATA_G, 0, 1, DATA_TB)
    ev = w.events
    ev.add(a.R + 2.4, "PyTorchJob", JOB, "ExitedWithCode", f"Pod: {NS}.{p0.name} exited with code 1", "pytorchjob-controller")
    ev.add(a.R + 2.7, "PyTorchJob", JOB, "PyTorchJobFailed", f"PyTorchJob {JOB} is failed because 1 Worker replica(s) "
           "failed.", "pytorchjob-controller")
    for p in pods.values():
        if p.g != g:
            ev.add(a.R + 2.9, "PyTorchJob", JOB, "SuccessfulDeletePod", f"Deleted pod: {p.name}", "pytorchjob-controller")
            ev.add(a.R + 3.0, "Pod", p.name, "Killing", "Stopping container pytorch", "kubelet", host=p.node, uid=p.uid,
                   field="spec.containers{pytorch}")
            sigterm_exit(w, p, a.k, a.R + 3.05 + 0.02 * p.g, a.E)


def end_complete(w: World, a: Attempt, pods: dict[int, PodInst]) -> None:
    for p in pods.values():
        w.titan(p, a.E - 3.9, "Sleeping 2 seconds for other ranks to complete")
        w.titan(p, a.E - 1.6, "Training completed")
        w.agent(p, a.E - 0.9, "I", "torch/distributed/elastic/agent/server/api.py:879",
                "[rank] worker group successfully finished. Waiting 300 seconds for other agents to finish.")
        w.agent(p, a.E - 0.9, "I", "torch/distributed/elastic/agent/server/api.py:932",
                "Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish")
        w.agent(p, a.E - 0.1, "I", "torch/distributed/elastic/agent/server/api.py:946",
                f"Done waiting for other agents. Elapsed: {0.7 + 0.01 * p.g:.4f} seconds")
    w.events.add(a.E + 1.1, "PyTorchJob", JOB, "PyTorchJobSucceeded", f"PyTorchJob {NS}/{JOB} successfully completed.",
                 "pytorchjob-controller")


# ----------------------------------------------------------------------------- node files
def boot_lines(h: str) -> list[tuple[float, str]]:
    return [(0.0, "Linux version 6.8.0-1019-nvidia (buildd@lcy02-amd64-071) (x86_64-linux-gnu-gcc-13 (Ubuntu "
                  "13.2.0-23ubuntu4) 13.2.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #21-Ubuntu SMP PREEMPT_DYNAMIC"),
            (0.0, "Command line: BOOT_IMAGE=/vmlinuz-6.8.0-1019-nvidia root=UUID=7e1c... ro console=ttyS0 "
                  "pci=realloc=off iommu=pt"),
            (21.4, "nvidia: loading out-of-tree module taints kernel."),
            (21.9, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.172.08  Tue Jul  8 18:21:34 UTC 2025"),
            (24.2, "mlx5_core 0000:1a:00.0 ibp26s0: Link up"), (24.3, "mlx5_core 0000:3c:00.0 ibp60s0: Link up"),
            (31.0, "nvidia-peermem: loading out-of-tree module taints kernel."),
            (44.8, "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready")]


def render_kernel(w: World, h: str, t_end: float) -> bytes:
    rows = [(w.fleet.boot[h] + dt, m) for dt, m in boot_lines(h)] + sorted(w.kernel[h])
    style = w.fleet.style[h]
    out = []
    if style == "short":
        d0 = datetime.fromtimestamp(w.fleet.boot[h], UTC)
        d1 = datetime.fromtimestamp(t_end, UTC)
        out.append(f"-- Journal begins at {d0:%a %Y-%m-%d %H:%M:%S} UTC, ends at {d1:%a %Y-%m-%d %H:%M:%S} UTC. --")
    last = None
    for t, m in rows:
        tt = w.node_t(h, t)
        if last is not None and tt <= last:
            tt = last + 0.000013
        last = tt
        d, us = _split(tt)
        if style == "short-iso-precise":
            pre = f"{d:%Y-%m-%dT%H:%M:%S}.{us:06d}+00:00"
        elif style == "short-iso-local":
            pre = d.astimezone(PST).strftime("%Y-%m-%dT%H:%M:%S-08:00")
        else:
            pre = f"{d:%b %d %H:%M:%S}"
        out.append(f"{pre} {h} kernel: {m}")
    return ("\n".join(out) + "\n").encode()


def render_smi(w: World, h: str, t0: float, t1: float, atts: list[Attempt]) -> bytes:
    rng = random.Random(f"{w.seed}-smi-{h}")
    a4, a5, a6 = atts[3], atts[4], atts[5]
    rows = ["timestamp, index, pci.bus_id, utilization.gpu [%], temperature.gpu, power.draw [W], clocks.current.sm [MHz], "
            "clocks_event_reasons.hw_slowdown, ecc.errors.corrected.volatile.total, ecc.errors.uncorrected.volatile.total"]
    busy = sorted(w.busy[h])
    t = t0 + rng.uniform(0, 60)
    while t < t1:
        if h == "hx-gpu-05" and t > a4.R + 60:
            break
        on = any(s <= t <= e for s, e in busy)
        for i in range(GPN):
            tt = w.node_t(h, t) + 0.0003 * i
            util = rng.randint(97, 100) if on else 0
            pw = rng.uniform(630, 695) if on else rng.uniform(68, 76)
            temp = rng.randint(58, 69) if on else rng.randint(31, 36)
            sm, slow = (1980, "Not Active") if on else (345, "Not Active")
            if h == "hx-gpu-08" and i == 3 and a5.S <= t <= a5.E:
                sm, slow, pw = rng.choice([1845, 1860, 1875]), "Active", rng.uniform(548, 575)
            corr = int(max(0.0, t - T0) / 3600 * 2.3) if (h, i) == ECC_COUNTER else 0
            unc = 1 if (h == "hx-gpu-07" and i == 1 and t > a6.R) else 0
            rows.append(f"{smi_ts(tt)}, {i}, 00000000:{BUSIDS[i].upper()}:00.0, {util} %, {temp}, {pw:.2f} W, {sm} MHz, "
                        f"{slow}, {corr}, {unc}")
        t += 300.0 + rng.uniform(-0.05, 0.4)
    return ("\n".join(rows) + "\n").encode()


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def inventory_toml() -> str:
    return f"""# {PROVIDER}: rented H100 Kubernetes node pool (shared with other tenants)
[providers.{PROVIDER}]
usd_per_gpu_hour = 2.49
support = "support@halcyon.example"

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = {GPN}
interconnect = "InfiniBand NDR 8x400G"
nodes = "hx-gpu-[01-12]"
"""


def run_toml() -> str:
    return f"""# {RUN}: Llama 3 70B pre-training, torchtitan FSDP {DP} x TP {TP}, Kubeflow PyTorchJob {NS}/{JOB}
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.3e}
checkpoint_dir = "{CKPT}"
launcher = "torchrun"
launch_command = "kubectl apply -f titan-70b-pt.yaml"
"""


def pytorchjob_yaml(train_steps: int) -> str:
    return f"""apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {JOB}
  namespace: {NS}
spec:
  runPolicy:
    cleanPodPolicy: Running
    backoffLimit: 6
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: ExitCode
      template: &tmpl
        spec:
          schedulerName: volcano
          containers:
            - name: pytorch
              image: {IMAGE}
              command: ["torchrun", "--nnodes=8", "--nproc_per_node=8", "--max-restarts=2", "--rdzv_backend=c10d",
                        "--rdzv_endpoint={JOB}-master-0:29400", "--rdzv_id={JOB}", "--local-ranks-filter=0",
                        "--role=rank", "--tee=3", "-m", "torchtitan.train",
                        "--job.config_file=/cfg/llama3_70b.toml", "--training.steps={train_steps}",
                        "--checkpoint.interval={SAVE_EVERY}", "--comm.train_timeout_seconds={WATCHDOG_S}"]
              env:
                - {{name: LOGLEVEL, value: INFO}}
                - {{name: NCCL_DEBUG, value: WARN}}
              resources:
                limits: {{nvidia.com/gpu: 8, memory: 1600Gi, rdma/ib: 8}}
              volumeMounts:
                - {{name: ckpt, mountPath: /mnt/ckpt}}
                - {{name: data, mountPath: /mnt/data}}
          volumes:
            - {{name: ckpt, persistentVolumeClaim: {{claimName: titan-ckpt-rwx}}}}
            - {{name: data, persistentVolumeClaim: {{claimName: fineweb-ro}}}}
    Worker:
      replicas: 7
      restartPolicy: ExitCode
      template: *tmpl
"""


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts, train_steps, bad_step = build_timeline(seed)
    w = World(seed, atts, train_steps, bad_step)
    ev = w.events
    cur: dict[int, PodInst] = {}
    for i, a in enumerate(atts):
        nodes = nodes_of(a)
        if not a.inpod_start:                                      # a new PyTorchJob: the gang of pods
            created = a.S - (410.0 if a.k == 1 else 95.0 + w.rng.uniform(0, 30))
            for g in range(NNODES):
                ev.add(created + 0.05 * g, "PyTorchJob", JOB, "SuccessfulCreatePod", f"Created pod: {pod_name(g)}",
                       "pytorchjob-controller")
            if a.k == 1:                                            # decoy: another tenant's job still holds nodes
                for g in range(NNODES):
                    ev.add(a.S - 36.0 + 0.1 * g, "Pod", pod_name(g), "FailedScheduling",
                           "0/12 nodes are available: 2 node(s) had untolerated taint {nvidia.com/gpu.maintenance: }, "
                           "10 Insufficient nvidia.com/gpu. preemption: 0/12 nodes are available: 12 No preemption "
                           "victims found for incoming pod.", "volcano", etype="Warning", count=7,
                           first=created + 0.4 + 0.05 * g)
            cur = {}
            pulls = {}
            for g, node in enumerate(nodes):
                cached = node in w.info.get("pulled", set())
                pulls[g] = w.rng.uniform(3.0, 5.0) if cached else w.rng.uniform(95.0, 135.0)
            a.W = a.S + max(pulls.values()) + 22.0 + w.rng.uniform(0, 3)
            for g, node in enumerate(nodes):
                p = new_pod(w, g, node, created + 0.05 * g, a.S + 0.01 * g, a.S + pulls[g])
                p.remaining, p.restart_count = 2, 0
                cur[g] = p
        else:
            a.W = a.S
        for p in cur.values():
            rendezvous_done(w, p, a.W - 0.3, p.restart_count, a.W)
            w.busy[p.node].append((a.S, a.E))
            titan_startup(w, a, p)
            stop = a.E if a.kind == "complete" else (a.R + 0.01 if a.kind in ("fs", "hang") else a.R)
            titan_steps(w, a, p, stop)
        nxt_pods: dict[int, PodInst] = {}
        if a.kind == "fs":
            end_fs(w, a, cur)
            nxt_pods = dict(cur)
        elif a.kind == "oom":
            end_oom(w, a, cur, nxt_pods)
        elif a.kind == "hang":
            end_hang(w, a, cur, 5, 5, 88_000 + w.rng.randint(0, 4000))
            nxt_pods = dict(cur)
        elif a.kind == "xid79":
            end_xid79(w, a, cur)
        elif a.kind == "drain":
            end_drain(w, a, cur, atts[i + 1], nxt_pods)
        elif a.kind == "ecc":
            end_ecc(w, a, cur)
            nxt_pods = dict(cur)
        elif a.kind == "data":
            end_data(w, a, cur, final=a.k == 8)
            nxt_pods = dict(cur)
        else:
            end_complete(w, a, cur)
        if a.k == 5:                                   # decoy: another tenant's MMU fault on the spare
            tx = a.F + 0.4 * (a.R - a.F)
            w.kernel[TENANT_SPARE].append((tx, f"NVRM: Xid (PCI:0000:{BUSIDS[4]}:00): 31, pid=88123, name=python, Ch "
                                               "00000018, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_3 "
                                               "faulted @ 0x7f3c_9a200000. Fault is of type FAULT_PDE "
                                               "ACCESS_TYPE_VIRT_READ"))
            w.busy[TENANT_SPARE].append((a.F, a.R))
            w.info["xid31_ts"] = tx
        if a.k == 9:                                   # decoy: a harmless IB async event the job steps past
            p = cur[7]
            tx = a.F + 0.55 * (a.E - a.F)
            pid = w.workers(p, a.k)[0]
            w.raw(p, tx, f"{p.name}:{pid}:{pid + 1711} [0] transport/net_ib.cc:102 NCCL WARN NET/IB : mlx5_0:1 Got "
                         "async event : client reregistration event")
            w.info["warn_ts"] = tx
        cur = nxt_pods
    t_end = atts[-1].E + 900
    rdir = bundle / "runs" / RUN
    write(bundle / "inventory.toml", inventory_toml().encode())
    write(rdir / "run.toml", run_toml().encode())
    write(rdir / "pytorchjob.yaml", pytorchjob_yaml(train_steps).encode())
    for p in w.pods:
        frng = random.Random(f"{seed}-cri-{p.uid}")
        p.lines.sort(key=lambda x: (x[0], x[1]))
        body, last = [], 0
        for t, _, ln in p.lines:
            ns = max(int(round((w.node_t(p.node, t) + 0.00021) * 1e6)) * 1000 + frng.randint(0, 999), last + 1)
            last = ns
            body.append(f"{cri_ts(ns)} stderr F {ln}")
        write(rdir / "pods" / p.node / f"{NS}_{p.name}_{p.uid}" / "pytorch" / "0.log", ("\n".join(body) + "\n").encode())
    write(bundle / "cluster" / "events.jsonl", ev.render())
    for h in HOSTS:
        write(bundle / "nodes" / h / "journal-k.log", render_kernel(w, h, t_end))
        write(bundle / "nodes" / h / "gpu-query.csv", render_smi(w, h, atts[0].S - 900, t_end, atts))
    cats, total, per = ledger(atts)
    incidents = []
    for j, a in enumerate(atts[:-1]):
        incidents.append({"id": j + 1, "attempt": a.k, "attempts": [a.k], "failure_mode": a.mode, "host": a.host,
                          "cluster": CLUSTER, "provider": PROVIDER, "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E),
                          "next_start_ts": iso_z(atts[j + 1].S), "last_ckpt_step": a.last_ckpt,
                          "last_step": a.steps[-1][0] if a.steps else a.load_step, "gpu_hours": per[j],
                          "gpu_hours_lost": round(sum(per[j].values()), 4)})
    # NOTE: first written as kind "straggler" with no mode; DESIGN's taxonomy names HW-slowdown throttling seen in
    # telemetry `gpu_throttle` (as deepspeed_pdsh's truth does), its time the straggler category
    incidents.append({"id": len(incidents) + 1, "attempt": 5, "attempts": [5], "kind": None,
                      "failure_mode": "gpu_throttle",
                      "host": "hx-gpu-08", "gpu_index": 3, "cluster": CLUSTER, "provider": PROVIDER,
                      "slowdown_factor": SLOW, "gpu_hours_lost": cats["straggler"]})
    decoys = {"hx-gpu-01": "hosts rank 0, which prints the DCP CheckpointException first; the cause is the NFS server",
              "hx-gpu-02": "NFS 'not responding' symptom of the shared checkpoint server; rising corrected-ECC counts "
                           "(no failure)",
              "hx-gpu-04": "NFS 'not responding' symptom of the shared checkpoint server",
              WARN_HOST: "NCCL WARN 'Got async event : client reregistration event' in attempt 9; training steps on",
              TENANT_SPARE: "Xid 31 MMU fault of another tenant's pod; never part of this job"}
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP, "flops_per_token": FLOPS_PER_TOKEN,
        "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "first_start_ts": iso_z(atts[0].S), "last_end_ts": iso_z(atts[-1].E), "match_on_attempt": True,
        "attempts": [{"attempt": a.k, "pytorchjob_instance": a.job, "nodes": nodes_of(a), "start_ts": iso_z(a.S),
                      "worker_group_start_ts": iso_z(a.W), "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E),
                      "loaded_step": a.load_step, "last_step": a.steps[-1][0] if a.steps else a.load_step,
                      "saves": [n for n, _, _ in a.saves], "end": a.kind} for a in atts],
        "train_steps": train_steps, "bad_data_step": bad_step,
        "incidents": incidents,
        "forbidden_incidents": [
            {"failure_mode": "checkpoint_lost", "attempts": [2],
             "reason": "attempt 1's save never completed: resuming from the previous save loses nothing recorded"},
            {"failure_mode": "checkpoint_lost", "attempts": [9],
             "reason": "attempt 8 made no save after its load: attempt 9 resumes from the newest save"}],
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys, "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incidents), 4)},
        "info": {k: (iso_z(v) if k.endswith("_ts") else v) for k, v in w.info.items() if k != "pulled"},
        "notes": "Times: the API server's UTC clock. host null matches any host. Ledger: see the docstring.",
    }
    write(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261207)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    files = [p for p in (out / "bundle").rglob("*") if p.is_file()]
    print(f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB) and "
          f"{out / 'truth.json'}; total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
