#!/usr/bin/env python3
# ruff: noqa: E501, UP031, UP017  (real log lines quoted whole; printf-style ids)
"""Campaign "gke_a3_jobset": torchtitan FSDP2 under a JobSet + Kueue on GKE A3 Mega (H100, GPUDirect-TCPXO).

Written without reading clusterlab's analysis code (only the outsiders' campaigns, the scorer, DESIGN.md's bundle
layout and taxonomy, and titan_k8s.py for shape). Standard library only, deterministic per --seed.
Usage: gke_a3_jobset.py --out DIR [--seed N]

Writes, under --out DIR:
  DIR/bundle/inventory.toml, DIR/bundle/runs/gke-a3m-llama70b/run.toml
  DIR/bundle/runs/gke-a3m-llama70b/attempt-<k>/pods/<pod>.log
        `kubectl logs --timestamps <pod> -c pytorch` of each JobSet worker pod (RFC3339Nano prefix): torchrun's
        agent (glog-style lines) and torchtitan; `--local-ranks-filter 0 --role rank --tee 3`, so only the pod's
        local rank 0 prints, as "[rank<global>]:". Hosts in torch's lines are POD hostnames
        (llama3-70b-workers-0-<i>), never GKE node names.
  DIR/bundle/runs/gke-a3m-llama70b/attempt-<k>/pods/<pod>.gke-gcsfuse-sidecar.log
        `kubectl logs <pod> -c gke-gcsfuse-sidecar`: Cloud Storage FUSE's JSON log ({"timestamp":{"seconds","nanos"},
        "severity","message"}) of the checkpoint bucket mount
  DIR/bundle/runs/gke-a3m-llama70b/attempt-<k>/nccl/<podhost>.log   NCCL_DEBUG=INFO, NCCL_DEBUG_FILE=...%h.log (the
        pod's 8 ranks append to one file), NCCL 2.21.5 with the GPUDirect-TCPXO (FasTrak) net plugin
  DIR/bundle/runs/gke-a3m-llama70b/attempt-<k>/pods-wide.txt        `kubectl get pods -o wide` at the attempt's start
  DIR/bundle/cluster/events-<k>.json     `kubectl get events -A -o json` taken after attempt k (a v1 List; events
        live 1 h in the API server, so each dump holds that window); every namespace, other tenants' pods included
  DIR/bundle/cluster/gce-operations.json `gcloud compute operations list --filter=operationType~hostError|maintenance`
  DIR/bundle/cluster/jobset-<name>.json, workload-<name>.json  `kubectl get ... -o json` status at the end
  DIR/bundle/nodes/<node>/journal-k.log  `journalctl -k -o short-iso-precise` (node clock, NTP-synced from metadata)
  DIR/bundle/nodes/<node>/maintenance-event.log   a DaemonSet polling the metadata server's
        instance/maintenance-event value (only on nodes where it changed)
  DIR/truth.json

Story (run "gke-a3m-llama70b": Llama 3 70B, torchtitan FSDP2 dp_shard 64 = 8 nodes x 8 H100 of GKE cluster
a3m-usc1 (provider gcp, zone us-central1-c); 11 a3-megagpu-8g nodes in node pool "a3mega" (real GKE node names
gke-a3m-usc1-a3mega-<hash>-<4 chars>: the inventory lists them comma-separated, there is no numeric range);
JobSet "llama3-70b" (namespace "llm", one replicatedJob "workers", 8 indexed pods, failurePolicy.maxRestarts 3:
any failed pod makes the JobSet controller delete and recreate every pod, label restart-attempt+1), admitted by
Kueue through LocalQueue "llm-lq" / ClusterQueue "a3m-cq" at WorkloadPriorityClass "training-normal"; checkpoints
through Cloud Storage FUSE (CSI ephemeral volume, bucket gs://a3m-llm-ckpt mounted at /ckpt) every 200 steps;
NCCL watchdog comm.train_timeout_seconds = 600. An attempt is one generation of worker pods: it starts when they
are created (JobSet (re)creation or Kueue unsuspend) and ends when the last of its worker processes is gone. All
truth times are UTC; every clock here is NTP-synced (no skew). Nodes: N1..N8 first, N9/N10 spares, N11 idle.
  att 1  fresh start. Xid 79 on N3 GPU 4 (pod 2, rank 20, filtered): its agent reports local_rank 4 failed
         (CUDA error), pod 2 fails, the JobSet restarts (other pods get SIGTERM). The node's device plugin now
         reports 7 GPUs; the new pod 2 is placed on spare N9.                    [gpu_fell_off_bus, N3]
  att 2  a GCE host error kills N5 (compute.instances.hostError, "Instance terminated by Compute Engine" then
         auto-restart); the other ranks see the FasTrak connections drop (NCCL WARN, ncclRemoteError) within
         seconds and exit 1; node-controller NodeNotReady for N5 ~40 s later; the pods of the next generation wait
         (FailedScheduling: untolerated taint unreachable) until N5 is Ready again.  [node_failure, N5]
  att 3  at a periodic save the bucket rejects the uploads: the gcsfuse sidecars of pods 1, 5 and 7 (N2, N6, N8)
         log FlushFile/SyncFile errors (googleapi 503 after retries); torch.distributed.checkpoint raises
         CheckpointException (OSError [Errno 5]) on every rank; the JobSet restarts. The cause is shared storage,
         not a node.                                                              [filesystem_io, any host]
  att 4  rank 48 (pod 6 on N7, local rank 0, visible) stops after a step: its log goes silent; 600 s later every
         other pod's rank 0 reports the watchdog timeout (last completed NCCL work one short of last enqueued,
         rank 48 never reports); pod 6's agent must SIGKILL it. Third restart spent: JobSet Failed
         (ReachedMaxRestarts).                                                    [nccl_timeout, N7]
  (~40 min later the user cordons N3 and N7 and submits JobSet "llama3-70b-r2"; N10 comes in)
  att 5  Kueue preempts the workload for a "training-high" workload of team "research" (InClusterQueue); the
         JobSet is suspended, every pod gets SIGTERM (exit 143).                 [preemption, any host]
  att 6  re-admitted when the preemptor finishes; completes (final save, "Training completed").
  Decoys: N4 prints a harmless "NCCL WARN Could not find real path of ..." at every init; N2's gcsfuse retries a
  503 on one object during a save in attempt 5 and the save completes; N8 carries BackOff events of another
  namespace's pod (monitoring/dcgm-exporter) during attempt 6; the idle N11 gets a TERMINATE_ON_HOST_MAINTENANCE
  notice and an Evicted event for another tenant's pod; N2/N6/N8 are the gcsfuse symptom nodes of attempt 3; N1
  (rank 0) prints the CheckpointException first; the watchdog floods of every pod in attempts 2 and 4.

Ledger (truth.json expected_ledger, GPU-hours = 64 GPUs x seconds / 3600), the conventions of campaign1/2:
  startup    = attempt start (pods created) -> first training step start ("Training starts at step")
  productive = kept steps (step <= last durable save of an ended attempt; all steps of the completed attempt)
  checkpoint = durations of the saves that completed, plus the tail after the final save
  recompute  = end of the attempt's last durable save (or its first step start) -> root event
  hang       = root event -> attempt exit. Root events: the Xid 79, the host error (GCE operation startTime), the
               start of the save that never completed, the end of the last completed step (the hang), Kueue's
               preemption (Workload Evicted/Preempted)
  restart    = attempt exit -> next attempt start (includes the 40 min before the user resubmits)
  straggler = slowdown = data_stall = idle = 0
  Mode choices: the host error is `node_failure` (the VM was lost; `host_hw` would be defensible too, the scorer
  takes one); a Kueue priority preemption is `preemption` with no host (as campaign2's Slurm preemption).

Formats (looked up with the search tools; the text here is written anew):
  * gcsfuse JSON log: {"timestamp":{"seconds":N,"nanos":N},"severity":"ERROR","message":"..."} (gcsfuse #2391);
    fuse op errors "fuse: *fuseops.FlushFileOp error: FileInode.Sync: SyncObject: Create: CreateObject: googleapi:
    got HTTP response code 503 with body: ..." and "*fuseops.SyncFileOp error: input/output error" (gcsfuse #407,
    #516); "Start gcsfuse/<ver> ... using mount point", "File system has been successfully mounted.".
  * GCE: operationType compute.instances.hostError, user "system", statusMessage (gcpdiag gce/host-error:
    restart "typically within three minutes"); onHostMaintenance TERMINATE for GPU VMs; metadata
    instance/maintenance-event values NONE / TERMINATE_ON_HOST_MAINTENANCE.
  * Kueue: Workload event reason Preempted "Preempted to accommodate a workload (UID: ...) due to prioritization
    in the ClusterQueue", condition reason InClusterQueue (kueue #1942, #2814, #12173); Evicted, QuotaReserved,
    Admitted "Admitted by ClusterQueue a3m-cq, wait time since reservation was 0s"; JobSet events.
  * Kubernetes events: FailedScheduling "0/11 nodes are available: ...", NodeNotReady "Node X status is now:
    NodeNotReady", BackOff "Back-off restarting failed container", Evicted, Killing, Scheduled.
  * NCCL with the TCPXO plugin (GoogleCloudPlatform nccl-env-profile.sh, NCCL_FASTRAK_* variables, nixl #2276):
    "NET/Plugin: Loaded net plugin FasTrak (v8)", "Using network FasTrak"; the exact FasTrak INFO wording is an
    approximation. NCCL xml.cc "Could not find real path of ...".
  * torch 2.5 ProcessGroupNCCL watchdog lines and torchelastic agent lines (as campaign2 / titan_k8s).
"""
from __future__ import annotations

import argparse
import json
import math
import random
from datetime import datetime, timezone
from pathlib import Path

UTC = timezone.utc

RUN = "gke-a3m-llama70b"
NS = "llm"
CLUSTER, PROVIDER, ZONE, PROJECT = "a3m-usc1", "gcp", "us-central1-c", "llm-train-prod"
GPN, NNODES = 8, 8
GPUS = GPN * NNODES
SEQ, LBS = 8192, 1
TOKENS_PER_STEP = GPUS * LBS * SEQ           # 524288
TOKENS_PER_GPU = TOKENS_PER_STEP // GPUS
FLOPS_PER_TOKEN = 4.880e11
PEAK = 989.4e12
BASE_STEP = 10.12
JITTER = 0.003
SAVE_EVERY = 200
LOG_FREQ = 10
TRAIN_STEPS = 4800
WATCHDOG_S = 600
T0 = datetime(2026, 10, 12, 14, 5, 0, tzinfo=UTC).timestamp()
CKPT = "/ckpt/llama3-70b/checkpoint"
BUCKET = "a3m-llm-ckpt"
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]
SUFFIX = ["q7zk", "x2lm", "b9tf", "h4wd", "n8cs", "r3vp", "d6jg", "k1ye", "w5pa", "f0un", "t2hx"]
NODES = [f"gke-a3m-usc1-a3mega-6f1d9c2e-{s}" for s in SUFFIX]
N = {i + 1: h for i, h in enumerate(NODES)}
BUSIDS = ["04", "05", "0a", "0b", "84", "85", "8a", "8b"]
XID_GPU = 4
WARN_HOST, RETRY_HOST, BACKOFF_HOST, IDLE = N[4], N[2], N[8], N[11]
FUSE_FAIL = [1, 5, 7]                       # pod indices whose sidecars log the failed uploads


def _split(t: float):
    us_total = int(round(t * 1_000_000))
    s, us = divmod(us_total, 1_000_000)
    return datetime.fromtimestamp(s, UTC), us


def iso_z(t: float) -> str:
    d, us = _split(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{us // 1000:03d}Z"


def k8s_ts(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%dT%H:%M:%SZ")


def nano_ts(t: float) -> str:
    d, us = _split(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{us:06d}{(us * 13) % 1000:03d}Z"


def asctime(t: float) -> str:
    d, us = _split(t)
    return f"{d:%Y-%m-%d %H:%M:%S},{us // 1000:03d}"


def glog(t: float, level: str) -> str:
    d, us = _split(t)
    return f"{level}{d:%m%d} {d:%H:%M:%S}.{us:06d}"


def c10(t: float, level: str) -> str:
    d, us = _split(t)
    return f"{level}{d:%m%d} {d:%H:%M:%S}.{us:06d}{(us * 7) % 1000:03d}"


def short_iso_precise(t: float) -> str:
    d, us = _split(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{us:06d}+00:00"


def gce_ts(t: float) -> str:                        # GCE operations print Pacific time with offset
    d = datetime.fromtimestamp(int(t) - 8 * 3600, UTC)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{int((t % 1) * 1000):03d}-08:00"


class Sink:
    def __init__(self):
        self.items = []

    def add(self, t, line):
        for ln in line.split("\n"):
            self.items.append((t, len(self.items), ln))

    def render(self, stamp=None) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
        out = [(f"{stamp(t)} {ln}" if stamp else ln) for t, _, ln in self.items]
        return ("\n".join(out) + "\n").encode()


def write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


# ----------------------------------------------------------------------------- timeline
class Att:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps, self.saves, self.failed_save = [], [], None
        self.R = self.E = None


def simulate(a: Att, rng: random.Random) -> bool:
    a.steps, a.saves, a.failed_save = [], [], None
    t, n = a.F, a.load
    while True:
        if a.kind == "complete" and n >= TRAIN_STEPS:
            break
        dur = BASE_STEP * (1 + rng.uniform(-JITTER, JITTER))
        if a.kind in ("xid", "hosterr", "preempt") and t + dur > a.kill_at:
            if not a.steps or a.steps[-1][0] % SAVE_EVERY == 0:
                return False
            a.R, a.E = a.kill_at, a.kill_at + a.tail
            return True
        if a.kind == "hang" and t + dur > a.kill_at:
            if not a.steps or a.steps[-1][0] % SAVE_EVERY == 0:
                return False
            a.R, a.E = t, t + WATCHDOG_S + a.tail
            return True
        a.steps.append((n + 1, t, dur))
        t += dur
        n += 1
        if n % SAVE_EVERY == 0:
            if a.kind == "fuse" and t >= a.F + a.fail_after:
                a.failed_save = (n, t)
                a.R, a.E = t, t + a.tail
                return True
            c = round(rng.uniform(62.0, 84.0), 2)
            if a.kind in ("xid", "hosterr", "preempt", "hang") and t + c > a.kill_at - 40:
                return False
            a.saves.append((n, t, c))
            t += c
    a.E = float(math.ceil(t + 4.0))
    return True


def build(seed: int) -> list[Att]:
    rng = random.Random(f"{seed}-gke-timeline")
    g1 = [N[i] for i in range(1, 9)]
    g2 = [N[1], N[2], N[9], N[4], N[5], N[6], N[7], N[8]]
    g3 = [N[1], N[2], N[9], N[4], N[5], N[6], N[10], N[8]]
    specs = [
        dict(k=1, js="llama3-70b", ra=0, nodes=g1, kind="xid", mode="gpu_fell_off_bus", host=N[3],
             startup=265 + rng.randint(-8, 8), run_for=2.55 * 3600 + rng.randint(0, 900), tail=36.0,
             gap=6.0 + rng.uniform(0, 3)),
        dict(k=2, js="llama3-70b", ra=1, nodes=g2, kind="hosterr", mode="node_failure", host=N[5],
             startup=240 + rng.randint(-8, 8), run_for=1.9 * 3600 + rng.randint(0, 900), tail=47.0,
             gap=5.0 + rng.uniform(0, 3)),
        dict(k=3, js="llama3-70b", ra=2, nodes=g2, kind="fuse", mode="filesystem_io", host=None,
             startup=236 + 232 + rng.randint(-8, 8), fail_after=2.1 * 3600 + rng.randint(0, 900), tail=168.0,
             gap=6.0 + rng.uniform(0, 3)),
        dict(k=4, js="llama3-70b", ra=3, nodes=g2, kind="hang", mode="nccl_timeout", host=N[7],
             startup=238 + rng.randint(-8, 8), run_for=2.4 * 3600 + rng.randint(0, 900), tail=38.0,
             gap=2400 + rng.randint(-200, 200)),
        dict(k=5, js="llama3-70b-r2", ra=0, nodes=g3, kind="preempt", mode="preemption", host=None,
             startup=281 + rng.randint(-8, 8), run_for=1.45 * 3600 + rng.randint(0, 900), tail=33.0,
             gap=5400 + rng.randint(-300, 300)),
        dict(k=6, js="llama3-70b-r2", ra=0, nodes=g3, kind="complete", mode=None, host=None,
             startup=252 + rng.randint(-8, 8), gap=None),
    ]
    atts = [Att(**s) for s in specs]
    t0, load = T0, 0
    for a in atts:
        a.load, a.S = load, float(t0)
        tries = 0
        while True:
            a.F = a.S + a.startup
            if a.kind != "fuse" and a.kind != "complete":
                a.kill_at = float(math.floor(a.F + a.run_for)) + 0.437
            if simulate(a, random.Random(f"{seed}-gke-steps-{a.k}-{tries}")):
                break
            tries += 1
            if a.kind != "fuse":
                a.run_for += 137
            else:
                a.fail_after += 300
        a.last_ckpt = a.saves[-1][0] if a.saves else a.load
        load = a.last_ckpt
        if a.gap is not None:
            t0 = a.E + a.gap
    assert atts[-1].steps[-1][0] - atts[-1].load >= 300
    return atts


def ledger(atts):
    cats = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute", "hang",
                          "restart", "startup", "idle"], 0.0)
    per = []
    for i, a in enumerate(atts):
        cats["startup"] += a.F - a.S
        kept = a.last_ckpt if a.kind != "complete" else 10 ** 9
        cats["productive"] += sum(d for n, _, d in a.steps if n <= kept)
        cats["checkpoint"] += sum(c for _, _, c in a.saves)
        if a.kind == "complete":
            cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        base = (a.saves[-1][1] + a.saves[-1][2]) if a.saves else a.F
        nxt = atts[i + 1]
        cats["recompute"] += a.R - base
        cats["hang"] += a.E - a.R
        cats["restart"] += nxt.S - a.E
        per.append(dict(recompute=a.R - base, hang=a.E - a.R, restart=nxt.S - a.E, startup=nxt.F - nxt.S))
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per])


# ----------------------------------------------------------------------------- pods
def pod_host(a: Att, i: int) -> str:
    return f"{a.js}-workers-0-{i}"


def pod_name(a: Att, i: int, seed: int) -> str:
    r = random.Random(f"{seed}-pod-{a.k}-{i}")
    return pod_host(a, i) + "-" + "".join(r.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))


def loss_at(n, rng):
    return 1.95 + 9.4 * math.exp(-n / 260.0) + 0.7 * math.exp(-n / 3000.0) + rng.gauss(0, 0.015)


def pod_log(a: Att, i: int, seed: int, info: dict) -> bytes:
    rng = random.Random(f"{seed}-podlog-{a.k}-{i}")
    L = Sink()
    rank0 = i * GPN
    pre = f"[rank{rank0}]:"
    agent = 1
    pids = [agent + 40 + d * 3 for d in range(GPN)]

    def T(t, msg, level="INFO"):
        L.add(t, f"{pre}[titan] {asctime(t)} - root - {level} - {msg}")

    def A(t, msg, level="I", src="torch/distributed/elastic/agent/server/api.py:525"):
        L.add(t, f"{glog(t, level)} {agent} {src}] {msg}")

    S, F = a.S, a.F
    t = S + 20 + (232 if a.k == 3 and a.nodes[i] == N[5] else 0)    # that pod waited for its node
    L.add(t, f"+ torchrun --nnodes=8 --nproc_per_node=8 --node_rank={i} --rdzv_backend=c10d "
             f"--rdzv_endpoint={a.js}-workers-0-0.{a.js}:29400 --local-ranks-filter 0 --role rank --tee 3 "
             f"-m torchtitan.train --job.config_file /configs/llama3_70b.toml --checkpoint.enable "
             f"--checkpoint.folder {CKPT.rsplit('/', 1)[0]} --checkpoint.interval {SAVE_EVERY} "
             f"--comm.train_timeout_seconds {WATCHDOG_S} --training.steps {TRAIN_STEPS}")
    A(t + 1.2, "[rank] starting workers for entrypoint: python3")
    A(t + 1.3, "[rank] Rendezvous'ing worker group")
    ti = F - 120.0
    A(ti - 8, f"[rank] Rendezvous complete for workers. Result:\n  restart_count=0\n  master_addr={a.js}-workers-0-0.{a.js}\n"
              f"  master_port=29400\n  group_rank={i}\n  group_world_size=8\n  local_ranks=[0, 1, 2, 3, 4, 5, 6, 7]\n"
              f"  role_ranks=[{', '.join(str(rank0 + d) for d in range(GPN))}]")
    A(ti - 7, "[rank] Starting worker group")
    T(ti, "Starting job: Llama 3 70B training (FSDP2)")
    T(ti + 0.3, f"Building 1-D device mesh with ['dp_shard'], [{GPUS}]")
    T(ti + 9.0, "Model llama3 70B size: 70,553,706,496 total parameters")
    T(ti + 11.4, "Applied FSDP to the model")
    T(ti + 14.0, f"Peak FLOPS used for computing MFU: {PEAK:.3e}")
    T(ti + 14.2, f"Checkpointing active. Checkpoints will be loaded from and saved to {CKPT}")
    if a.load:
        T(ti + 16.0, f"Loading the checkpoint from {CKPT}/step-{a.load}.")
        T(F - 1.5, f"Finished loading the checkpoint in {F - 1.5 - ti - 16.0:.2f} seconds.")
    else:
        T(ti + 16.0, "No checkpoint was provided, this is a fresh start.")
    T(F, f"Training starts at step {a.load + 1}")
    lr = random.Random(f"{seed}-loss-{a.k}")
    hang_pod = a.kind == "hang" and a.nodes[i] == a.host
    t_last, last_n = F, a.load
    saves = {n: (s, c) for n, s, c in a.saves}
    for n, ts, d in a.steps:
        end = ts + d
        if hang_pod and n == a.steps[-1][0]:
            break
        if n == 1 or n % LOG_FREQ == 0:
            tps = (n - last_n) * TOKENS_PER_GPU / (end - t_last)
            last_n, t_last = n, end
            T(end, f"step: {n:2}  loss: {loss_at(n, lr):8.5f}  grad_norm: {0.2 + 2.9 * math.exp(-n / 450):7.4f}  "
                   f"memory: 58.31GiB(73.69%)  tps: {round(tps):,}  tflops: {FLOPS_PER_TOKEN * tps / 1e12:,.2f}  "
                   f"mfu: {100 * FLOPS_PER_TOKEN * tps / PEAK:.2f}%")
        if n in saves:
            s0, c = saves[n]
            T(s0 + 0.01, "Saving the checkpoint.")
            if n == TRAIN_STEPS:
                T(s0 + 0.02, f"Saving a full checkpoint at last step, step {n}.")
                T(s0 + c, f"Last step checkpoint completed in {c - 0.01:.2f}s")
            else:
                T(s0 + c, f"Finished saving the checkpoint in {c - 0.01:.2f} seconds.")
    R, E = a.R, a.E
    if a.kind == "complete":
        T(E - 3.5, "Sleeping 2 seconds for other ranks to complete")
        T(E - 1.4, "Training completed")
        A(E - 0.8, "[rank] worker group successfully finished. Waiting 300 seconds for other agents to finish.")
        return L.render(nano_ts)
    if a.kind == "xid":
        bad = a.nodes[i] == a.host
        if bad:
            A(R + 2.6, f"failed (exitcode: 1) local_rank: {XID_GPU} (pid: {pids[XID_GPU]}) of binary: /usr/bin/python3",
              "E", "torch/distributed/elastic/multiprocessing/api.py:869")
            for ln in ["Traceback (most recent call last):", '  File "/usr/local/bin/torchrun", line 8, in <module>',
                       "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 60,
                       "torchtitan.train FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
                       "Root Cause (first observed failure):", "[0]:",
                       f"  time      : {_split(R + 2.6)[0]:%Y-%m-%d_%H:%M:%S}", f"  host      : {pod_host(a, i)}",
                       f"  rank      : {rank0 + XID_GPU} (local_rank: {XID_GPU})",
                       f"  exitcode  : 1 (pid: {pids[XID_GPU]})", "  error_file: <N/A>",
                       "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html", "=" * 60]:
                L.add(R + 2.7, ln)
        else:
            sigterm(L, A, R + 7.5 + 0.1 * i, pids)
    elif a.kind == "hosterr":
        if a.nodes[i] == a.host:
            return L.render(nano_ts)                          # the VM died: the log just stops
        tw = R + 9.0 + rng.uniform(0, 4)
        peer = a.nodes.index(a.host) * GPN
        L.add(tw, f"{pre}[E{c10(tw, 'E')[1:]} ProcessGroupNCCL.cpp:1834] [PG ID 0 PG GUID 0(default_pg) Rank {rank0}] "
                  f"Process group watchdog thread terminated with exception: NCCL error: remote process exited or there "
                  f"was a network error, NCCL version 2.21.5")
        L.add(tw, f"{pre}ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                  f"prematurely.")
        L.add(tw, f"{pre}Last error:")
        L.add(tw, f"{pre}NET/FasTrak : Connection closed by remote peer {pod_host(a, a.nodes.index(a.host))}"
                  f".{a.js}<{peer}>")
        A(tw + 3.0, f"failed (exitcode: -6) local_rank: 0 (pid: {pids[0]}) of binary: /usr/bin/python3", "E",
          "torch/distributed/elastic/multiprocessing/api.py:869")
    elif a.kind == "fuse":
        n, ts = a.failed_save
        T(ts + 0.01, "Saving the checkpoint.")
        tf = R + 150.0 + (0.0 if i == 0 else 0.4 + 0.05 * i)
        if i == 0:
            info["dcp_exception_ts"] = tf
        fr = sorted(rng.sample([r for p in FUSE_FAIL for r in range(p * GPN, p * GPN + GPN)], 14))
        for ln in ["Traceback (most recent call last):",
                   '  File "/workspace/torchtitan/torchtitan/components/checkpoint.py", line 512, in save',
                   "    self.dcp_save(states, checkpoint_id=checkpoint_id, async_mode=AsyncMode.DISABLED)",
                   '  File "/usr/local/lib/python3.11/dist-packages/torch/distributed/checkpoint/utils.py", line 231, in all_gather',
                   "    raise CheckpointException(step, node_failures)",
                   f"torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:dict_keys({fr})",
                   f"Traceback (most recent call last): (RANK {fr[0]})",
                   '  File "/usr/local/lib/python3.11/dist-packages/torch/distributed/checkpoint/filesystem.py", line 424, in _write_files_from_queue',
                   "    os.fsync(stream.fileno())", "OSError: [Errno 5] Input/output error"]:
            L.add(tf, pre + " " + ln)
        A(tf + 2.0, f"failed (exitcode: 1) local_rank: 0 (pid: {pids[0]}) of binary: /usr/bin/python3", "E",
          "torch/distributed/elastic/multiprocessing/api.py:869")
    elif a.kind == "hang":
        if hang_pod:
            A(E - 6.0, f"Unable to shutdown process {pids[0]} via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL",
              "W", "torch/distributed/elastic/multiprocessing/api.py:914")
        else:
            seq = info.setdefault("hang_seq", 41000 + a.steps[-1][0] * 7)
            tw = R + WATCHDOG_S + 0.05 + 0.4 * rng.random() + (0.0 if i == 1 else 0.6)
            p = f"{pre}[{c10(tw, 'E')}"
            L.add(tw, f"{p} ProcessGroupNCCL.cpp:616] [Rank {rank0}] Watchdog caught collective operation timeout: "
                      f"WorkNCCL(SeqNum={seq}, OpType=_ALLGATHER_BASE, NumelIn=13762560, NumelOut=880803840, "
                      f"Timeout(ms)={WATCHDOG_S * 1000}) ran for {WATCHDOG_S * 1000 + rng.randint(8, 90)} milliseconds before timing out.")
            L.add(tw, f"{p} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank {rank0}] Exception (either an "
                      f"error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: {seq + 2}, last "
                      f"completed NCCL work: {seq - 1}.")
            L.add(tw, f"{p} ProcessGroupNCCL.cpp:630] [Rank {rank0}] Some NCCL operations have failed or timed out. Due "
                      f"to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.")
            L.add(tw, f"{p} ProcessGroupNCCL.cpp:636] [Rank {rank0}] To avoid data inconsistency, we are taking the entire process down.")
            L.add(tw + 0.3, f"{pre}[{c10(tw + 0.3, 'F')} ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank {rank0}] "
                            f"Terminating the process after attempting to dump debug info, due to collective timeout or exception.")
            A(tw + 2.0, f"failed (exitcode: -6) local_rank: 0 (pid: {pids[0]}) of binary: /usr/bin/python3", "E",
              "torch/distributed/elastic/multiprocessing/api.py:869")
    elif a.kind == "preempt":
        sigterm(L, A, R + 1.2 + 0.05 * i, pids)
    return L.render(nano_ts)


def sigterm(L, A, t, pids):
    A(t, "Received Signals.SIGTERM death signal, shutting down workers", "W", "torch/distributed/elastic/agent/server/api.py:704")
    for d in range(GPN):
        A(t + 0.001, f"Sending process {pids[d]} closing signal SIGTERM", "W", "torch/distributed/elastic/multiprocessing/api.py:897")
    L.add(t + 0.9, "torch.distributed.elastic.multiprocessing.api.SignalException: Process 1 got signal: 15")


def fuse_log(a: Att, i: int, seed: int, info: dict) -> bytes:
    rng = random.Random(f"{seed}-fuse-{a.k}-{i}")
    out = []

    def J(t, sev, msg):
        s = int(t)
        out.append((t, json.dumps({"timestamp": {"seconds": s, "nanos": int(round((t - s) * 1e9)) % 1000000000},
                                   "severity": sev, "message": msg}, separators=(",", ":"))))

    t = a.S + 12.0 + rng.uniform(0, 2)
    J(t, "INFO", "Start gcsfuse/2.5.1 (Go version go1.23.2) for app \"gke-gcs-fuse-csi\" using mount point: /dev/fd/3\n")
    J(t + 0.01, "INFO", "Creating a mount at \"/dev/fd/3\"\n")
    J(t + 0.2, "INFO", f"Set up root directory for bucket {BUCKET}")
    J(t + 0.4, "INFO", f"Mounting file system \"{BUCKET}\"...")
    J(t + 0.41, "INFO", "File system has been successfully mounted.")
    end = a.E
    gc = t + 600
    while gc < end:
        J(gc, "INFO", "Starting a garbage collection run.")
        J(gc + 0.02, "INFO", f"Garbage collection succeeded after deleted 0 objects in {rng.uniform(12, 40):.6f}ms.")
        gc += 600
    if a.kind == "fuse" and i in FUSE_FAIL:
        n, ts = a.failed_save
        obj = f"llama3-70b/checkpoint/step-{n}/__{i * GPN + rng.randrange(GPN)}_0.distcp"
        t1 = ts + 20 + rng.uniform(0, 8)
        info.setdefault("fuse_first_ts", t1)
        info["fuse_first_ts"] = min(info["fuse_first_ts"], t1)
        for j in range(3):
            tt = t1 + 38 * j
            J(tt, "WARNING", f"Retrying upload of \"{obj}\" after error: googleapi: Error 503: We encountered an internal "
                             f"error. Please try again., backendError (attempt {j + 1})")
        tt = t1 + 120
        J(tt, "ERROR", "fuse: *fuseops.FlushFileOp error: FileInode.Sync: SyncObject: Create: CreateObject: googleapi: "
                       "got HTTP response code 503 with body: We encountered an internal error. Please try again.\n")
        J(tt + 0.2, "ERROR", "fuse: *fuseops.SyncFileOp error: input/output error\n")
    if a.k == 5 and a.nodes[i] == RETRY_HOST:                 # decoy: a retried 503 during a save that completes
        n, ts, c = a.saves[len(a.saves) // 2]
        obj = f"llama3-70b/checkpoint/step-{n}/__{i * GPN + 3}_0.distcp"
        J(ts + 18.3, "WARNING", f"Retrying upload of \"{obj}\" after error: googleapi: Error 503: We encountered an "
                                f"internal error. Please try again., backendError (attempt 1)")
        info["retry_ts"] = ts + 18.3
    out.sort()
    return ("\n".join(x[1] for x in out) + "\n").encode()


def nccl_log(a: Att, i: int, seed: int) -> bytes:
    rng = random.Random(f"{seed}-nccl-{a.k}-{i}")
    h = pod_host(a, i)
    lines = []
    for d in range(GPN):
        r = i * GPN + d
        pid = 41 + d * 3
        p = f"{h}:{pid}:{pid} [{d}] NCCL INFO "
        q = f"{h}:{pid}:{pid + 1200 + d} [{d}] NCCL INFO "
        lines += [p + "Bootstrap : Using eth0:10.128.%d.%d<0>" % (i + 2, 10 + d),
                  p + "NET/Plugin: Loaded net plugin FasTrak (v8)",
                  p + "cudaDriverVersion 12040"]
        if r == 0:
            lines.append(f"{h}:{pid}:{pid} [0] NCCL INFO NCCL version 2.21.5+cuda12.4")
        lines += [q + "NET/FasTrak : Using [0]eth1:192.168.1.%d<0> [1]eth2:192.168.2.%d<0> [2]eth3:192.168.3.%d<0> "
                      "[3]eth4:192.168.4.%d<0> [4]eth5:192.168.5.%d<0> [5]eth6:192.168.6.%d<0> [6]eth7:192.168.7.%d<0> "
                      "[7]eth8:192.168.8.%d<0>" % ((10 + i,) * 8),
                  q + "Using network FasTrak",
                  q + f"ncclCommInitRank comm 0x{rng.getrandbits(40):x} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} "
                      f"busId {BUSIDS[d]}000 commId 0x{seed * 7919 + a.k:016x} - Init START"]
        if a.nodes[i] == WARN_HOST and d in (2, 6):
            lines.append(f"{h}:{pid}:{pid + 1200 + d} [{d}] graph/xml.cc:52 NCCL WARN Could not find real path of "
                         f"/sys/class/net/eth{d + 1}/device (/sys/devices/pci0000:{BUSIDS[d]}/0000:{BUSIDS[d]}:01.0)")
        lines += [q + f"Channel {d:02d}/0 : {r}[{d}] -> {((i + 1) % NNODES) * GPN + d}[{d}] [send] via NET/FasTrak/{d}",
                  q + "Connected all rings", q + "Connected all trees",
                  q + f"ncclCommInitRank comm rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]}000 - Init COMPLETE"]
    return ("\n".join(lines) + "\n").encode()


# ----------------------------------------------------------------------------- cluster objects
class Events:
    def __init__(self, seed):
        self.rng = random.Random(f"{seed}-events")
        self.items = []

    def add(self, t, ns, kind, name, reason, msg, comp, typ="Normal", host=None, count=1, last=None):
        uid = "%08x-%04x-4%03x-a%03x-%012x" % tuple(self.rng.getrandbits(b) for b in (32, 16, 12, 12, 48))
        ev = {"apiVersion": "v1", "kind": "Event", "count": count, "type": typ, "reason": reason, "message": msg,
              "firstTimestamp": k8s_ts(t), "lastTimestamp": k8s_ts(last if last else t),
              "involvedObject": {"kind": kind, "name": name, "namespace": ns, "uid": uid},
              "metadata": {"name": f"{name}.{self.rng.getrandbits(60):x}"[:63], "namespace": ns or "default",
                           "creationTimestamp": k8s_ts(t)},
              "source": {"component": comp} | ({"host": host} if host else {}),
              "reportingComponent": comp, "reportingInstance": host or ""}
        if ns is None:
            del ev["involvedObject"]["namespace"]
        self.items.append((t, ev))


def cluster_files(atts, seed, bundle: Path, info: dict):
    ev = Events(seed)
    rng = random.Random(f"{seed}-cluster")
    ops = []
    for a in atts:
        pods = [pod_name(a, i, seed) for i in range(NNODES)]
        if a.k == 1 or a.k == 5:
            wl = f"jobset-{a.js}-{'3f9a1' if a.k == 1 else '8c2d7'}"
            ev.add(a.S - 3, NS, "Workload", wl, "QuotaReserved", "Quota reserved in ClusterQueue a3m-cq, wait time since "
                   "queued was 2s", "kueue-admission")
            ev.add(a.S - 3, NS, "Workload", wl, "Admitted", "Admitted by ClusterQueue a3m-cq, wait time since reservation "
                   "was 0s", "kueue-admission")
        if a.k == 6:
            ev.add(a.S - 2, NS, "Workload", "jobset-llama3-70b-r2-8c2d7", "Admitted", "Admitted by ClusterQueue a3m-cq, "
                   "wait time since reservation was 0s", "kueue-admission")
        ev.add(a.S, NS, "Job", f"{a.js}-workers-0", "SuccessfulCreate", f"Created pod: {pods[0]}", "job-controller")
        for i, p in enumerate(pods):
            ts = a.S + 0.5 + 0.05 * i
            if a.k == 3 and a.nodes[i] == N[5]:
                ev.add(ts, NS, "Pod", p, "FailedScheduling", "0/11 nodes are available: 1 node(s) had untolerated taint "
                       "{node.kubernetes.io/unreachable: }, 2 node(s) were unschedulable, 8 Insufficient nvidia.com/gpu. "
                       "preemption: 0/11 nodes are available: 11 Preemption is not helpful for scheduling.",
                       "default-scheduler", "Warning", count=4, last=ts + 200)
                ts = ts + 232
            ev.add(ts, NS, "Pod", p, "Scheduled", f"Successfully assigned {NS}/{p} to {a.nodes[i]}", "default-scheduler")
            ev.add(ts + 3, NS, "Pod", p, "Started", "Started container pytorch", "kubelet", host=a.nodes[i])
        R = a.R
        if a.kind == "xid":
            bad = a.nodes.index(a.host)
            ev.add(R + 5.1, NS, "Pod", pods[bad], "Failed",
                   "Container pytorch failed with exit code 1", "kubelet", "Warning", host=a.host)
            ev.add(R + 6.0, NS, "JobSet", a.js, "Restarting",
                   f"jobset {a.js} restarting: failed job {a.js}-workers-0 (restart attempt 1 of 3)", "jobset-controller")
            for i, p in enumerate(pods):
                ev.add(R + 7.0, NS, "Pod", p, "Killing", "Stopping container pytorch", "kubelet", host=a.nodes[i])
        elif a.kind == "hosterr":
            ops.append({"kind": "compute#operation", "id": str(rng.getrandbits(62)),
                        "name": f"systemevent-{int(R * 1000)}-{rng.getrandbits(40):x}",
                        "operationType": "compute.instances.hostError",
                        "targetLink": f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{ZONE}/instances/{a.host}",
                        "targetId": str(rng.getrandbits(62)), "status": "DONE", "user": "system", "progress": 100,
                        "insertTime": gce_ts(R + 61.2), "startTime": gce_ts(R), "endTime": gce_ts(R + 61.2),
                        "statusMessage": "Instance terminated by Compute Engine.",
                        "selfLink": f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{ZONE}/operations/systemevent-{int(R * 1000)}",
                        "zone": f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{ZONE}"})
            ev.add(R + 41.0, None, "Node", a.host, "NodeNotReady", f"Node {a.host} status is now: NodeNotReady",
                   "node-controller")
            for i, p in enumerate(pods):
                if a.nodes[i] != a.host:
                    ev.add(R + 14.0, NS, "Pod", p, "Failed", "Container pytorch failed with exit code 1", "kubelet",
                           "Warning", host=a.nodes[i])
            ev.add(R + 15.0, NS, "JobSet", a.js, "Restarting",
                   f"jobset {a.js} restarting: failed job {a.js}-workers-0 (restart attempt 2 of 3)", "jobset-controller")
            ev.add(R + 231.0, None, "Node", a.host, "Rebooted", f"Node {a.host} has been rebooted, boot id: "
                   f"{rng.getrandbits(64):016x}", "kubelet", "Warning", host=a.host)
            ev.add(R + 236.0, None, "Node", a.host, "NodeReady", f"Node {a.host} status is now: NodeReady", "kubelet",
                   host=a.host)
            info["host_back_ts"] = R + 236.0
        elif a.kind == "fuse":
            for i, p in enumerate(pods):
                ev.add(R + 153.0, NS, "Pod", p, "Failed", "Container pytorch failed with exit code 1", "kubelet",
                       "Warning", host=a.nodes[i])
            ev.add(R + 154.0, NS, "JobSet", a.js, "Restarting",
                   f"jobset {a.js} restarting: failed job {a.js}-workers-0 (restart attempt 3 of 3)", "jobset-controller")
        elif a.kind == "hang":
            for i, p in enumerate(pods):
                ev.add(R + WATCHDOG_S + 5.0, NS, "Pod", p, "Failed", "Container pytorch failed with exit code 1",
                       "kubelet", "Warning", host=a.nodes[i])
            ev.add(a.E - 1.0, NS, "JobSet", a.js, "ReachedMaxRestarts", "jobset failed due to reaching max number of "
                   "restarts", "jobset-controller", "Warning")
            ev.add(a.E + 900, None, "Node", N[3], "NodeNotSchedulable", f"Node {N[3]} status is now: NodeNotSchedulable",
                   "kubelet", host=N[3])
            ev.add(a.E + 905, None, "Node", N[7], "NodeNotSchedulable", f"Node {N[7]} status is now: NodeNotSchedulable",
                   "kubelet", host=N[7])
        elif a.kind == "preempt":
            ev.add(R - 0.8, "research", "Workload", "jobset-rlhf-405b-eval-a71c0", "Pending",
                   "couldn't assign flavors to pod set workers: insufficient unused quota for nvidia.com/gpu in flavor "
                   "a3mega, 64 more needed. Pending the preemption of 1 workload(s)", "kueue-admission")
            ev.add(R, NS, "Workload", "jobset-llama3-70b-r2-8c2d7", "Preempted",
                   "Preempted to accommodate a workload (UID: 5b1e0c2a-77f4-4a1d-9a55-2c1f8e0a6d31) due to "
                   "prioritization in the ClusterQueue", "kueue-admission")
            ev.add(R + 0.2, NS, "Workload", "jobset-llama3-70b-r2-8c2d7", "EvictedDueToPreempted",
                   "Preempted to accommodate a workload (UID: 5b1e0c2a-77f4-4a1d-9a55-2c1f8e0a6d31) due to "
                   "prioritization in the ClusterQueue", "kueue-workload-controller")
            ev.add(R + 0.5, NS, "JobSet", a.js, "Stopped", "Suspended", "jobset-controller")
            for i, p in enumerate(pods):
                ev.add(R + 1.0, NS, "Pod", p, "Killing", "Stopping container pytorch", "kubelet", host=a.nodes[i])
            pst = a.E + 20
            for i in range(NNODES):
                pp = f"rlhf-405b-eval-workers-0-{i}-{rng.getrandbits(20):05x}"
                ev.add(pst + i * 0.1, "research", "Pod", pp, "Scheduled",
                       f"Successfully assigned research/{pp} to {a.nodes[i]}", "default-scheduler")
            info["preemptor"] = (pst, atts[a.k].S - 30)
        if a.k == 5:                                          # decoy: maintenance notice + eviction on the idle node
            tm = a.F + 1800
            write(bundle / "nodes" / IDLE / "maintenance-event.log",
                  f"{iso_z(a.S - 7200)} instance/maintenance-event=NONE\n"
                  f"{iso_z(tm)} instance/maintenance-event=TERMINATE_ON_HOST_MAINTENANCE\n"
                  f"{iso_z(tm + 2712)} instance/maintenance-event=NONE\n")
            ops.append({"kind": "compute#operation", "id": str(rng.getrandbits(62)),
                        "name": f"systemevent-{int(tm * 1000)}-{rng.getrandbits(40):x}",
                        "operationType": "compute.instances.terminateOnHostMaintenance",
                        "targetLink": f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{ZONE}/instances/{IDLE}",
                        "status": "DONE", "user": "system", "progress": 100, "insertTime": gce_ts(tm + 3600),
                        "startTime": gce_ts(tm + 3600), "endTime": gce_ts(tm + 3602),
                        "statusMessage": "Instance terminated by Compute Engine.",
                        "zone": f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{ZONE}"})
            ev.add(tm + 3540, "batch-etl", "Pod", "tokenize-shard-17-5k2xw", "Evicted",
                   "The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 8123456Ki.",
                   "kubelet", "Warning", host=IDLE)
            info["maint_ts"] = tm
        if a.k == 6:                                          # decoy: another namespace's pod crash-looping on N8
            tb = a.F + 0.4 * (a.E - a.F)
            ev.add(tb, "monitoring", "Pod", "dcgm-exporter-7xq2m", "BackOff", "Back-off restarting failed container "
                   "dcgm-exporter in pod dcgm-exporter-7xq2m_monitoring(1f0e2c11-2b1e-4c55-9d1a-0b6f2e3c4d5e)",
                   "kubelet", "Warning", host=BACKOFF_HOST, count=17, last=tb + 1500)
            info["backoff_ts"] = tb
        if a.k == 1:                                          # decoy: FailedScheduling of another tenant's pod
            ev.add(a.S + 600, "research", "Pod", "notebook-h100-0", "FailedScheduling",
                   "0/11 nodes are available: 8 Insufficient nvidia.com/gpu, 3 node(s) didn't match Pod's node "
                   "affinity/selector. preemption: 0/11 nodes are available: 11 No preemption victims found for "
                   "incoming pod.", "default-scheduler", "Warning", count=9, last=a.S + 2400)
        lo = a.S - 60
        hi = atts[a.k].S - 1 if a.k < len(atts) else a.E + 7200
        items = [e for t, e in sorted(ev.items, key=lambda x: x[0]) if lo <= t <= hi]
        write(bundle / "cluster" / f"events-{a.k}.json",
              json.dumps({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}},
                         indent=4) + "\n")
    write(bundle / "cluster" / "gce-operations.json", json.dumps(ops, indent=2) + "\n")
    a4, a6 = atts[3], atts[5]
    write(bundle / "cluster" / "jobset-llama3-70b.json", json.dumps({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "llama3-70b", "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "llm-lq"}},
        "spec": {"failurePolicy": {"maxRestarts": 3}, "suspend": False},
        "status": {"restarts": 3, "terminalState": "Failed", "conditions": [
            {"type": "Failed", "status": "True", "reason": "ReachedMaxRestarts",
             "message": "jobset failed due to reaching max number of restarts", "lastTransitionTime": k8s_ts(a4.E - 1)}]}},
        indent=2) + "\n")
    write(bundle / "cluster" / "jobset-llama3-70b-r2.json", json.dumps({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "llama3-70b-r2", "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "llm-lq"}},
        "status": {"restarts": 0, "terminalState": "Completed", "conditions": [
            {"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
             "message": "jobset completed successfully", "lastTransitionTime": k8s_ts(a6.E + 2)}]}}, indent=2) + "\n")
    a5 = atts[4]
    write(bundle / "cluster" / "workload-jobset-llama3-70b-r2-8c2d7.json", json.dumps({
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
        "metadata": {"name": "jobset-llama3-70b-r2-8c2d7", "namespace": NS},
        "spec": {"queueName": "llm-lq", "priorityClassName": "training-normal", "priority": 100},
        "status": {"requeueState": {"count": 1}, "conditions": [
            {"type": "Preempted", "status": "False", "reason": "InClusterQueue",
             "message": "Previously: Preempted to accommodate a workload (UID: 5b1e0c2a-77f4-4a1d-9a55-2c1f8e0a6d31) "
                        "due to prioritization in the ClusterQueue", "lastTransitionTime": k8s_ts(a6.S - 2)},
            {"type": "Evicted", "status": "False", "reason": "Preempted",
             "message": "Previously: Preempted to accommodate a workload", "lastTransitionTime": k8s_ts(a6.S - 2)},
            {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted",
             "lastTransitionTime": k8s_ts(a6.S - 2)},
            {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "jobset completed successfully",
             "lastTransitionTime": k8s_ts(a6.E + 3)}]},
        "_first_eviction": k8s_ts(a5.R)}, indent=2) + "\n")


def kernel_logs(atts, seed, bundle: Path, info: dict):
    t_end = atts[-1].E + 1800
    for h in NODES:
        rng = random.Random(f"{seed}-kern-{h}")
        boot = T0 - rng.randint(2 * 86400, 6 * 86400)
        ev = [(boot, "Linux version 6.1.100+ (builder@localhost) (Chromium OS 17.0_pre498229-r33 clang version 17.0.0) "
                     "#1 SMP PREEMPT_DYNAMIC Sat Nov 30 11:23:45 UTC 2026"),
              (boot + 0.1, "Command line: BOOT_IMAGE=/syslinux/vmlinuz.A init=/usr/lib/systemd/systemd cos.gpu.driver=550.90.07"),
              (boot + 22.3, "nvidia: module license 'NVIDIA' taints kernel."),
              (boot + 22.8, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024")]
        t = boot + rng.uniform(3000, 9000)
        while t < t_end:
            ev.append((t, rng.choice(["kauditd_printk_skb: %d callbacks suppressed" % rng.randint(3, 40),
                                      "cbr0: port 3(veth%07x) entered forwarding state" % rng.getrandbits(28),
                                      "IPv6: ADDRCONF(NETDEV_CHANGE): veth%07x: link becomes ready" % rng.getrandbits(28)])))
            t += rng.uniform(1500, 9000)
        a1, a2 = atts[0], atts[1]
        if h == a1.host:
            pci = f"0000:{BUSIDS[XID_GPU]}:00"
            R = a1.R
            ev += [(R, f"NVRM: GPU at PCI:{pci}.0: GPU-{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-"
                       f"a{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}"),
                   (R, f"NVRM: Xid (PCI:{pci}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
                   (R + 0.001, f"NVRM: GPU {pci}.0: GPU has fallen off the bus."),
                   (R + 0.02, "NVRM: A GPU crash dump has been created. If possible, please run"),
                   (R + 0.02, "NVRM: nvidia-bug-report.sh as root to collect this data before"),
                   (R + 0.02, "NVRM: the NVIDIA kernel module is unloaded.")]
        if h == a2.host:                      # the log stops at the host error; a new boot follows
            ev = [e for e in ev if e[0] < a2.R - 3 or e[0] > a2.R + 200]
            nb = a2.R + 190.0
            ev += [(nb, "Linux version 6.1.100+ (builder@localhost) (Chromium OS 17.0_pre498229-r33 clang version "
                        "17.0.0) #1 SMP PREEMPT_DYNAMIC Sat Nov 30 11:23:45 UTC 2026"),
                   (nb + 22.8, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024")]
        ev.sort(key=lambda x: x[0])
        lines = [f"-- Journal begins at {datetime.fromtimestamp(ev[0][0], UTC):%a %Y-%m-%d %H:%M:%S} UTC, ends at "
                 f"{datetime.fromtimestamp(t_end, UTC):%a %Y-%m-%d %H:%M:%S} UTC. --"]
        short = h.rsplit("-", 1)[-1]
        prev_boot = None
        for t, m in ev:
            if m.startswith("Linux version") and prev_boot is not None:
                lines.append("-- Boot %032x --" % rng.getrandbits(128))
            if m.startswith("Linux version"):
                prev_boot = t
            lines.append(f"{short_iso_precise(t)} {h} kernel: {m}")
        del short
        write(bundle / "nodes" / h / "journal-k.log", "\n".join(lines) + "\n")


def inventory() -> str:
    return f"""# GKE A3 Mega fleet (campaign gke_a3_jobset)
[providers.{PROVIDER}]
usd_per_gpu_hour = 3.72
support = "Google Cloud support case, project {PROJECT}"

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = {GPN}
interconnect = "GPUDirect-TCPXO 8x200G (a3-megagpu-8g)"
nodes = "{','.join(NODES)}"
"""


def run_toml() -> str:
    return f"""# {RUN}: Llama 3 70B, torchtitan FSDP2 dp_shard {GPUS}, JobSet + Kueue on GKE
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.3e}
checkpoint_dir = "{CKPT}"
launcher = "torchrun"
launch_command = "kubectl apply -f jobset-llama3-70b.yaml  # 8 pods x torchrun --nproc_per_node=8"
"""


def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts = build(seed)
    info: dict = {}
    write(bundle / "inventory.toml", inventory())
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", run_toml())
    for a in atts:
        ad = rdir / f"attempt-{a.k}"
        wide = ["NAME                                READY   STATUS    RESTARTS   AGE   IP            NODE"]
        for i in range(NNODES):
            p = pod_name(a, i, seed)
            write(ad / "pods" / f"{p}.log", pod_log(a, i, seed, info))
            write(ad / "pods" / f"{p}.gke-gcsfuse-sidecar.log", fuse_log(a, i, seed, info))
            write(ad / "nccl" / f"{pod_host(a, i)}.log", nccl_log(a, i, seed))
            wide.append(f"{p:<35} 2/2     Running   0          5m    10.{64 + i}.{a.k}.{7 + i:<5} {a.nodes[i]}")
        write(ad / "pods-wide.txt", "\n".join(wide) + "\n")
    cluster_files(atts, seed, bundle, info)
    kernel_logs(atts, seed, bundle, info)
    cats, total, per = ledger(atts)
    incidents = []
    for j, a in enumerate(atts[:5]):
        nxt = atts[j + 1]
        inc = {"id": j + 1, "attempt": a.k, "jobset": a.js, "restart_attempt": a.ra, "failure_mode": a.mode,
               "blame": {"gpu_fell_off_bus": "provider", "node_failure": "provider", "filesystem_io": "provider",
                         "preemption": "user", "nccl_timeout": "unknown"}[a.mode],
               "host": a.host, "cluster": CLUSTER, "provider": PROVIDER,
               "gpu_index": XID_GPU if a.kind == "xid" else 0 if a.kind == "hang" else None,
               "rank": (a.nodes.index(a.host) * GPN + (XID_GPU if a.kind == "xid" else 0)) if a.kind in ("xid", "hang") else None,
               "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E), "next_start_ts": iso_z(nxt.S),
               "next_first_step_ts": iso_z(nxt.F), "last_ckpt_step": a.last_ckpt, "failed_at_step": a.steps[-1][0],
               "gpu_hours": per[j], "gpu_hours_lost": round(sum(per[j].values()), 4)}
        incidents.append(inc)
    incidents[2]["failed_save_step"] = atts[2].failed_save[0]
    incidents[2]["gcsfuse_first_error_ts"] = iso_z(info["fuse_first_ts"])
    incidents[2]["dcp_exception_ts"] = iso_z(info["dcp_exception_ts"])
    incidents[3]["watchdog_timeout_s"] = WATCHDOG_S
    incidents[1]["node_ready_again_ts"] = iso_z(info["host_back_ts"])
    decoys = {
        WARN_HOST: "harmless 'NCCL WARN Could not find real path of ...' at every init",
        RETRY_HOST: "gcsfuse retried one 503 during an attempt-5 save that completed; also a gcsfuse symptom node of "
                    "the attempt-3 bucket failure (shared storage)",
        N[6]: "gcsfuse symptom node of the attempt-3 bucket failure (shared storage)",
        BACKOFF_HOST: "BackOff events of another namespace's pod (monitoring/dcgm-exporter) in attempt 6; also a "
                      "gcsfuse symptom node of attempt 3",
        IDLE: "idle node: TERMINATE_ON_HOST_MAINTENANCE notice and another tenant's pod Evicted",
        N[1]: "rank 0's node: prints the CheckpointException first; watchdog victim",
    }
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP, "flops_per_token": FLOPS_PER_TOKEN,
        "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "first_start_ts": iso_z(atts[0].S), "last_end_ts": iso_z(atts[-1].E),
        "match_on_attempt": True,
        "attempts": [{"attempt": a.k, "jobset": a.js, "restart_attempt": a.ra, "nodes": a.nodes,
                      "start_ts": iso_z(a.S), "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E),
                      "loaded_step": a.load, "last_step": a.steps[-1][0], "saves": [n for n, _, _ in a.saves],
                      "end": a.kind} for a in atts],
        "incidents": [dict(i, attempts=[i["attempt"]]) for i in incidents],
        "forbidden_incidents": [
            {"failure_mode": "filesystem_io", "attempts": [5, 6], "reason": "gcsfuse retry that succeeded"},
            {"failure_mode": "preemption", "host": IDLE, "reason": "maintenance notice on an idle node"},
        ],
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys, "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incidents
                                                                   if i["blame"] == "provider"), 4)},
        "notes": "UTC, no clock skew. host null = any host. Ledger: see the gke_a3_jobset.py docstring.",
    }
    write(out / "truth.json", json.dumps(truth, indent=2) + "\n")
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    files = [p for p in (out / "bundle").rglob("*") if p.is_file()]
    print(f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB); "
          f"total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
