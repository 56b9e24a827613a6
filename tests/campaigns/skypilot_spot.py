#!/usr/bin/env python3
# ruff: noqa: E501, UP031, UP017  (real log lines quoted whole; printf-style ids)
"""Campaign "skypilot_spot": a SkyPilot managed job on spot VMs that recovers across clouds (AWS p5 <-> GCP a3).

Written without reading clusterlab's analysis code (only the outsiders' campaigns, the scorer, DESIGN.md's bundle
layout and taxonomy, and gke_a3_jobset.py for shape). Standard library only, deterministic per --seed.
Usage: skypilot_spot.py --out DIR [--seed N]

The job: `sky jobs launch -n llama3-8b-ds train.yaml` with
    resources: {accelerators: H100:8, use_spot: true, any_of: [{cloud: aws, instance_type: p5.48xlarge},
                {cloud: gcp, instance_type: a3-highgpu-8g}],
                job_recovery: {strategy: FAILOVER, max_restarts_on_errors: 2}}
    num_nodes: 4
    file_mounts: {/ckpt: {source: <bucket>, mode: MOUNT}}      (goofys on AWS, gcsfuse on GCP)
    run: torchrun --nnodes=$SKYPILOT_NUM_NODES --nproc_per_node=8 --node_rank=$SKYPILOT_NODE_RANK
         --master_addr=<first of $SKYPILOT_NODE_IPS> --master_port=8008 train.py --deepspeed ds_z3.json
Llama 3 8B, DeepSpeed ZeRO-3, 4 nodes x 8 H100 = 32 GPUs, checkpoints every 250 steps to /ckpt/llama3-8b
(DeepSpeed save_checkpoint: every rank writes its ZeRO shard), a held-out eval every 1000 steps (at step % 1000 ==
500), torch.distributed timeout 10 min, NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT.

Writes, under --out DIR:
  DIR/bundle/inventory.toml                 two providers, two clusters; nodes listed by name (AWS hostnames
                                            ip-10-2-x-y, GCP instance names <cluster>-<hash>-head|worker-<8>-compute)
  DIR/bundle/runs/sky-llama3-8b-spot/run.toml
  DIR/bundle/runs/sky-llama3-8b-spot/attempt-<k>/sky-<YYYY-MM-DD-HH-MM-SS-ffffff>/run.log
        the run.log SkyPilot keeps on the head node for one submission of the job's run section (what `sky jobs
        logs` streams): every node's output, each line prefixed "(head, rank=0, pid=P) " or
        "(workerN, rank=N, pid=P, ip=A.B.C.D) " (colour codes stripped). Lines carry no time of their own besides
        what the program printed: DeepSpeed "[YYYY-mm-dd HH:MM:SS,mmm] [INFO] [file:line:func] ...", torch's glog
        lines "I1012 14:08:31.812000 140213 torch/...py:N] ...", the training script's own logger
        "YYYY-mm-dd HH:MM:SS,mmm | INFO | ...", c10d "[rankN]:[E1012 14:08:31.812345678 ProcessGroupNCCL.cpp:N]";
        NCCL's "host:pid:tid [dev] NCCL INFO ..." lines and tracebacks have none.
  DIR/bundle/controller/jobs_controller/<id>.log   `~/sky_logs/jobs_controller/<id>.log` of the jobs controller VM
        ("I MM-DD HH:MM:SS file.py:N] message"; no year, controller clock UTC): job 47 (attempts 1-5), job 48
        (attempt 6), and job 46 of the same user (an eval sweep on its own small cluster: a decoy)
  DIR/bundle/nodes/<host>/journal-k.log     `journalctl -k -o short-iso` of the GPU nodes (where it says something)
  DIR/bundle/nodes/<host>/syslog            /var/log/syslog lines of the bucket mount (goofys on AWS logs
        "Mon DD HH:MM:SS host /usr/local/bin/goofys[pid]: fuse.ERROR ..."; gcsfuse 2.x logs its JSON records
        through syslog "gcsfuse[pid]: {...}")
  DIR/bundle/nodes/<host>/spot-watch.log    the setup section starts a poller of the instance metadata
        (AWS IMDSv2 /latest/meta-data/spot/instance-action, /events/recommendations/rebalance; GCP
        instance/preempted); it prints "<ISO time> <path> <HTTP code> <body>" only when the answer is not 404/FALSE
  DIR/bundle/cloud/aws-ec2-events.jsonl     EventBridge events of aws.ec2 (one JSON a line): "EC2 Spot Instance
        Interruption Warning", "EC2 Instance Rebalance Recommendation"
  DIR/bundle/cloud/aws-instances.txt        `aws ec2 describe-instances --query 'Reservations[].Instances[].[InstanceId,
        PrivateDnsName,InstanceLifecycle,State.Name,LaunchTime]' --output text` taken at the end
  DIR/bundle/cloud/gce-operations.json      `gcloud compute operations list --format=json --filter=...` (system
        events: compute.instances.hostError, compute.instances.preempted)
  DIR/truth.json

Story (UTC, every clock NTP-synced; attempt = one submission of the run section on a cluster: it starts when the
controller reports the cluster launched (or, for a restart on the same cluster, the recovery done) and ends when
the last worker process of that submission is gone):
  att 1  job 47, cluster llama3-8b-ds-47 on AWS us-east-2 (4 x p5.48xlarge spot: A1..A4). Fresh start. EC2 sends
         a Spot Instance Interruption Warning for A3 (worker2); two minutes later the instance is terminated. The
         other nodes' ranks see NCCL "remote process exited or there was a network error" within seconds, their
         torchrun agents fail; the controller finds the cluster not UP ("Cluster is preempted or failed (status:
         INIT). Recovering..."), cleans it up, cannot get p5 spot capacity in us-east-2 again and FAILOVER moves
         the job to GCP us-central1.                                              [preemption, A3]
  att 2  GCP us-central1-a (4 x a3-highgpu-8g spot: B1..B4). Xid 79 on B2 (worker1) GPU 5 (rank 13): rank 13
         dies with a CUDA error, B2's agent reports it, SkyPilot cancels the others (SIGTERM); ~25 s later GCE logs
         compute.instances.hostError for B2 (the host's GPU is gone), so the controller sees the cluster not UP
         and relaunches: same region, four new VMs.                               [gpu_fell_off_bus, B2]
  att 3  B5..B8. Rank 20 (B7 = worker2, local rank 4) stops inside a step and never reports; 600 s later every
         other rank's watchdog fires (last completed NCCL work one short); torchrun on B7 must SIGKILL it. Job
         FAILED, cluster UP: "User program crashed (FAILED). Retry the job as max_restarts_on_errors is set to 2.
         [1/2]" - the job is resubmitted on the same cluster.                     [nccl_timeout, B7]
  att 4  same nodes. At a periodic save gcsfuse on B5, B6 and B8 cannot upload to the bucket (googleapi 503 after
         retries; FlushFile/SyncFile input/output error); torch.save raises OSError [Errno 5] on the ranks of
         every node; [2/2] retry on the same cluster. The bucket, not a node.      [filesystem_io, any host]
  att 5  same nodes. The first held-out eval (new code) raises KeyError: 'attention_mask' in train.py on every
         rank. Restarts on errors are spent: "Task 0 failed and will not be retried"; managed job 47 FAILED.
                                                                                  [user_code_error, any host]
  (~35 min later the user fixes the eval and launches managed job 48, which resumes from the same bucket)
  att 6  job 48, AWS us-east-2 again (A5..A8); completes (final save, "Training finished"), SUCCEEDED.
  Decoys: A2's goofys logs the harmless "fuse.ERROR *fuseops.ReadFileOp error: no such file or directory" at each
  start (the latest-tag probe); B6's gcsfuse retries one 503 during an attempt-3 save that completes; A6 gets an
  EC2 Instance Rebalance Recommendation in attempt 6 and is never interrupted; job 46's controller log (another
  cluster) says its cluster was preempted during attempt 2; DeepSpeed's "pytorch allocator cache flushes" warning
  in attempt 6; B5/B6/B8 are the gcsfuse symptom nodes of attempt 4; A1/A2/A4 print the ncclRemoteError of
  attempt 1 and B1 the first watchdog timeout of attempt 3.

Ledger (truth.json expected_ledger, GPU-hours = 32 GPUs x seconds / 3600), the conventions of campaign1/2:
  startup    = attempt start -> first training step start (after the checkpoint load)
  productive = kept steps (step <= last durable save of an ended attempt; all steps of the completed attempt)
  checkpoint = durations of the saves that completed, plus the tail after the final save
  recompute  = end of the attempt's last durable save (or its first step start) -> root event
  hang       = root event -> attempt exit. Root events: the spot termination (warning + 120 s), the Xid 79, the
               end of the last completed step (the hang), the start of the save that never completed, the start
               of the eval that raised
  restart    = attempt exit -> next attempt start (controller detection, clean-up, provisioning, the user's pause)
  straggler = slowdown = data_stall = idle = 0
  Mode choices: the spot reclaim is `preemption` on the reclaimed node (the cloud named the instance); the Xid 79
  comes before GCE's host error on the same VM and is the cause (`gpu_fell_off_bus`); the eval bug raised on every
  rank is `user_code_error` with no host.

Formats (looked up with the search tools; the text here is written anew):
  * SkyPilot jobs controller (sky/jobs/controller.py, recovery_strategy.py; skypilot #7168, #3300, #804, #7814):
    "Starting job loop for N", "Submitted managed job N (task: 0, name: '...'); SKYPILOT_TASK_ID: ...",
    "Started monitoring.", "Cluster launch completed in X s", "Cluster is preempted or failed (status: INIT).
    Recovering...", "Cleaning up the preempted or failed cluster...", "Starting recovery for task 0",
    "Failed to launch a cluster with error: ...", "Retrying to launch the cluster in X seconds.", "Recovery
    completed for task 0 in Xs", "Task 0 failed with status: JobStatus.FAILED", "User program crashed (FAILED).
    Retry the job as max_restarts_on_errors is set to N. [i/N]", "Task 0 failed and will not be retried",
    "Managed job N (task: 0) SUCCEEDED. Cleaning up the cluster C."; provisioning lines "Launching on AWS
    us-east-2 (us-east-2a)" and the InsufficientInstanceCapacity text (skypilot #975).
  * run.log prefixes (sky/skylet/log_lib.py, skypilot PR #1380 and issue threads): "(head, rank=0, pid=P) ",
    "(worker1, rank=1, pid=P, ip=10.164.0.57) ", "(setup pid=P) ", NCCL lines inside them.
  * DeepSpeed: "[2024-10-13 10:39:13,696] [INFO] [logging.py:96:log_dist] [Rank 0] step=22, skipped=0,
    lr=[...], mom=[...]", timer.py "epoch=0/micro_step=../global_step=.., RunningAvgSamplesPerSec=..",
    checkpoint save / load lines of torch_checkpoint_engine.py and engine.py, stage3 allocator flush warning.
  * goofys syslog "Apr 06 06:19:44 host /usr/local/bin/goofys[1218]: fuse.ERROR *fuseops.ReadFileOp error: no such
    file or directory" (goofys #688, #548); gcsfuse JSON records (gcsfuse #2391) as in gke_a3_jobset.
  * EC2 Spot Instance Interruption Warning / Rebalance Recommendation events (AWS EC2 user guide); IMDS
    spot/instance-action body {"action": "terminate", "time": "..."}.
  * GCE operations compute.instances.hostError / preempted (gcpdiag), NVRM Xid 79, torch 2.4 watchdog and
    torchelastic lines (as campaign2 / gke_a3_jobset).
"""
from __future__ import annotations

import argparse
import json
import math
import random
from datetime import datetime, timezone
from pathlib import Path

UTC = timezone.utc

RUN = "sky-llama3-8b-spot"
TASK = "llama3-8b-ds"
GPN, NNODES = 8, 4
GPUS = GPN * NNODES
SEQ, MBS = 8192, 2
TOKENS_PER_STEP = GPUS * MBS * SEQ            # 524288
FLOPS_PER_TOKEN = 5.21e10
PEAK = 989.4e12
BASE_STEP = 2.61
JITTER = 0.004
SAVE_EVERY = 250
EVAL_AT = 500                                 # eval when step % 1000 == 500
LOG_FREQ = 10
TRAIN_STEPS = 16000
WATCHDOG_S = 600
T0 = datetime(2026, 10, 12, 14, 0, 0, tzinfo=UTC).timestamp()
CKPT = "/ckpt/llama3-8b"
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]
PY = "/home/{user}/miniconda3/envs/ds/bin/python"
XID_GPU = 5
HANG_LOCAL = 4
BUSIDS = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]


def aws_host(seed, i):
    r = random.Random(f"{seed}-aws-{i}")
    return f"ip-10-2-{r.randint(16, 250)}-{r.randint(4, 250)}"


def gcp_host(seed, cl, role, i):
    r = random.Random(f"{seed}-gcp-{cl}-{i}")
    return f"{cl}-{role}-" + "".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(8)) + "-compute"


def _split(t: float):
    us_total = int(round(t * 1_000_000))
    s, us = divmod(us_total, 1_000_000)
    return datetime.fromtimestamp(s, UTC), us


def iso_z(t: float) -> str:
    d, us = _split(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{us // 1000:03d}Z"


def iso_s(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%dT%H:%M:%SZ")


def ds_ts(t: float) -> str:
    d, us = _split(t)
    return f"[{d:%Y-%m-%d %H:%M:%S},{us // 1000:03d}]"


def user_ts(t: float) -> str:
    d, us = _split(t)
    return f"{d:%Y-%m-%d %H:%M:%S},{us // 1000:03d}"


def glog(t: float, level: str) -> str:
    d, us = _split(t)
    return f"{level}{d:%m%d} {d:%H:%M:%S}.{us:06d}"


def c10(t: float, level: str) -> str:
    d, us = _split(t)
    return f"{level}{d:%m%d} {d:%H:%M:%S}.{us:06d}{(us * 7) % 1000:03d}"


def sky_ctl(t: float, level: str = "I") -> str:
    d = _split(t)[0]
    return f"{level} {d:%m-%d %H:%M:%S}"


def syslog_ts(t: float) -> str:
    d = _split(t)[0]
    return f"{d:%b} {d.day:2d} {d:%H:%M:%S}"


def short_iso(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%dT%H:%M:%S") + "+0000"


def gce_ts(t: float) -> str:
    d = datetime.fromtimestamp(int(t) - 7 * 3600, UTC)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{int((t % 1) * 1000):03d}-07:00"


def sky_dir(t: float) -> str:
    d, us = _split(t)
    return f"sky-{d:%Y-%m-%d-%H-%M-%S}-{us:06d}"


class Sink:
    def __init__(self):
        self.items = []

    def add(self, t, line):
        for ln in line.split("\n"):
            self.items.append((t, len(self.items), ln))

    def render(self) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
        return ("\n".join(ln for _, _, ln in self.items) + "\n").encode()


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
        if a.kind == "bug" and n > a.load and n % 1000 == EVAL_AT:
            if not a.saves:
                return False
            a.R, a.E = t, t + a.tail
            return True
        dur = BASE_STEP * (1 + rng.uniform(-JITTER, JITTER))
        if a.kind in ("preempt", "xid") and t + dur > a.kill_at:
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
        if n % 1000 == EVAL_AT and a.kind != "bug":
            t += a.eval_s                                      # eval time is part of the step clock of step n+1
            a.steps[-1] = (n, a.steps[-1][1], dur + a.eval_s)
        if n % SAVE_EVERY == 0:
            if a.kind == "fuse" and t >= a.F + a.fail_after:
                a.failed_save = (n, t)
                a.R, a.E = t, t + a.tail
                return True
            c = round(rng.uniform(38.0, 55.0), 2)
            if a.kind in ("preempt", "xid", "hang") and t + c > a.kill_at - 30:
                return False
            a.saves.append((n, t, c))
            t += c
    a.E = float(math.ceil(t + 6.0))
    return True


def build(seed: int) -> tuple[list[Att], dict]:
    rng = random.Random(f"{seed}-sky-timeline")
    A = [aws_host(seed, i) for i in range(1, 9)]
    hb = f"{random.Random(f'{seed}-h').getrandbits(16):04x}"
    cl47 = f"{TASK}-47-{hb}"
    B = [gcp_host(seed, cl47, "head" if i in (1, 5) else "worker", i) for i in range(1, 9)]
    H = {"A": A, "B": B, "cl47": cl47}
    gA1, gB1, gB2, gA2 = A[0:4], B[0:4], B[4:8], A[4:8]
    specs = [
        dict(k=1, job=47, cloud="aws", nodes=gA1, kind="preempt", mode="preemption", host=A[2],
             startup=150 + rng.randint(-6, 6), run_for=2.3 * 3600 + rng.randint(0, 900), tail=14.0,
             gap=1040 + rng.randint(-60, 60)),
        dict(k=2, job=47, cloud="gcp", nodes=gB1, kind="xid", mode="gpu_fell_off_bus", host=B[1],
             startup=205 + rng.randint(-6, 6), run_for=1.7 * 3600 + rng.randint(0, 900), tail=9.0,
             gap=690 + rng.randint(-40, 40)),
        dict(k=3, job=47, cloud="gcp", nodes=gB2, kind="hang", mode="nccl_timeout", host=B[6],
             startup=198 + rng.randint(-6, 6), run_for=2.1 * 3600 + rng.randint(0, 900), tail=14.0,
             gap=41 + rng.uniform(0, 8)),
        dict(k=4, job=47, cloud="gcp", nodes=gB2, kind="fuse", mode="filesystem_io", host=None,
             startup=176 + rng.randint(-6, 6), fail_after=1.6 * 3600 + rng.randint(0, 900), tail=95.0,
             gap=38 + rng.uniform(0, 8)),
        dict(k=5, job=47, cloud="gcp", nodes=gB2, kind="bug", mode="user_code_error", host=None,
             startup=171 + rng.randint(-6, 6), tail=6.0, gap=2100 + rng.randint(-120, 120)),
        dict(k=6, job=48, cloud="aws", nodes=gA2, kind="complete", mode=None, host=None,
             startup=160 + rng.randint(-6, 6), gap=None),
    ]
    atts = [Att(**s) for s in specs]
    t0, load = T0 + 612.0, 0
    for a in atts:
        a.eval_s = round(31.0 + rng.uniform(0, 6), 2)
        a.load, a.S = load, float(t0)
        tries = 0
        while True:
            a.F = a.S + a.startup
            if a.kind in ("preempt", "xid", "hang"):
                a.kill_at = float(math.floor(a.F + a.run_for)) + 0.318
            if simulate(a, random.Random(f"{seed}-sky-steps-{a.k}-{tries}")):
                break
            tries += 1
            if a.kind in ("preempt", "xid", "hang"):
                a.run_for += 97
            elif a.kind == "fuse":
                a.fail_after += 300
        a.last_ckpt = a.saves[-1][0] if a.saves else a.load
        load = a.last_ckpt
        if a.gap is not None:
            t0 = a.E + a.gap
    assert atts[-1].steps[-1][0] == TRAIN_STEPS
    return atts, H


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


# ----------------------------------------------------------------------------- run.log
def node_ip(a: Att, i: int) -> str:
    h = a.nodes[i]
    if h.startswith("ip-"):
        return h[3:].replace("-", ".")
    r = random.Random(h)
    return f"10.128.0.{r.randint(2, 250)}"


def loss_at(n, rng):
    return 1.62 + 7.9 * math.exp(-n / 300.0) + 0.5 * math.exp(-n / 4000.0) + rng.gauss(0, 0.012)


def run_log(a: Att, seed: int, info: dict) -> bytes:
    rng = random.Random(f"{seed}-runlog-{a.k}")
    L = Sink()
    user = "ubuntu" if a.cloud == "aws" else "gcpuser"
    py = PY.format(user=user)
    spids = [rng.randint(3000, 9000) for _ in range(NNODES)]
    agent = [rng.randint(10000, 40000) for _ in range(NNODES)]
    wp = [[agent[i] + 37 + 2 * d for d in range(GPN)] for i in range(NNODES)]

    def pre(i):
        return f"(head, rank=0, pid={spids[0]}) " if i == 0 else \
            f"(worker{i}, rank={i}, pid={spids[i]}, ip={node_ip(a, i)}) "

    def P(i, t, msg):
        L.add(t, "\n".join(pre(i) + ln for ln in msg.split("\n")))

    def AG(i, t, msg, level="I", src="torch/distributed/elastic/agent/server/api.py:519"):
        P(i, t, f"{glog(t, level)} {agent[i]} {src}] {msg}")

    def DS(t, msg, level="INFO", src="logging.py:128:log_dist"):
        P(0, t, f"{ds_ts(t)} [{level}] [{src}] {msg}")

    def U(t, msg, level="INFO"):
        P(0, t, f"{user_ts(t)} | {level} | {msg}")

    S, F = a.S, a.F
    head_ip = node_ip(a, 0)
    for i in range(NNODES):
        t = S + 1.5 + 0.2 * i
        P(i, t, f"{glog(t, 'W')} {agent[i]} torch/distributed/run.py:793] \n"
                f"{glog(t, 'W')} {agent[i]} torch/distributed/run.py:793] *****************************************\n"
                f"{glog(t, 'W')} {agent[i]} torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. \n"
                f"{glog(t, 'W')} {agent[i]} torch/distributed/run.py:793] *****************************************")
        AG(i, t + 0.4, "[default] starting workers for entrypoint: python")
        AG(i, t + 0.5, "[default] Rendezvous'ing worker group")
        AG(i, t + 3.1, f"[default] Rendezvous complete for workers. Result:\n  restart_count=0\n  master_addr={head_ip}\n"
                       f"  master_port=8008\n  group_rank={i}\n  group_world_size={NNODES}\n  local_ranks=[0, 1, 2, 3, 4, 5, 6, 7]\n"
                       f"  role_ranks=[{', '.join(str(i * GPN + d) for d in range(GPN))}]\n"
                       f"  global_ranks=[{', '.join(str(i * GPN + d) for d in range(GPN))}]\n"
                       f"  role_world_sizes=[{', '.join([str(GPUS)] * GPN)}]\n"
                       f"  global_world_sizes=[{', '.join([str(GPUS)] * GPN)}]\n", src="torch/distributed/elastic/agent/server/api.py:679")
        AG(i, t + 3.2, "[default] Starting worker group", src="torch/distributed/elastic/agent/server/api.py:525")
        AG(i, t + 3.3, f"Setting worker{i * GPN} reply file to: /tmp/torchelastic_{rng.getrandbits(32):08x}/none_{rng.getrandbits(20):05x}/attempt_0/0/error.json",
           src="torch/distributed/elastic/multiprocessing/api.py:263")
    ti = S + 14.0
    DS(ti, "DeepSpeed info: version=0.15.4, git-hash=unknown, git-branch=unknown")
    DS(ti + 0.01, "cdb=None", src="comm.py:652:init_distributed")
    DS(ti + 0.02, "Initializing TorchBackend in DeepSpeed with backend nccl", src="comm.py:683:init_distributed")
    U(ti + 0.3, f"world_size={GPUS} nodes={NNODES} cloud={a.cloud} cluster={a.cluster}")
    # NCCL init lines of every rank (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT)
    comm = f"0x{seed * 104729 + a.k * 7:016x}"
    net = "NET/OFI Selected provider is efa, fabric is efa (found 32 nics)" if a.cloud == "aws" else \
        "NET/Socket : Using [0]eth1:10.129.0.%d<0> [1]eth2:10.130.0.%d<0> [2]eth3:10.131.0.%d<0> [3]eth4:10.132.0.%d<0>"
    for i in range(NNODES):
        h = a.nodes[i]
        for d in range(GPN):
            r = i * GPN + d
            pid = wp[i][d]
            p = f"{h}:{pid}:{pid} [{d}] NCCL INFO "
            q = f"{h}:{pid}:{pid + 61 + d} [{d}] NCCL INFO "
            tt = ti + 4.0 + 0.01 * r
            lines = [p + f"Bootstrap : Using ens{5 if a.cloud == 'aws' else 4}:{node_ip(a, i)}<0>",
                     p + "cudaDriverVersion 12040"]
            if r == 0:
                lines.append(p + "NCCL version 2.21.5+cuda12.4")
            lines += [q + (net if a.cloud == "aws" else net % ((10 + i,) * 4)),
                      q + f"ncclCommInitRank comm 0x{rng.getrandbits(40):x} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} "
                          f"busId {BUSIDS[d]}000 commId {comm} - Init START",
                      q + f"ncclCommInitRank comm 0x{rng.getrandbits(40):x} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} "
                          f"busId {BUSIDS[d]}000 commId {comm} localSize {GPN} used 1133344 bytes on core {d * 12} - Init COMPLETE"]
            P(i, tt, "\n".join(lines))
    DS(ti + 9.0, "DeepSpeed Flops Profiler Enabled: False")
    DS(ti + 10.5, "Using DeepSpeed Optimizer param name adamw as basic optimizer")
    DS(ti + 10.6, "Creating ZeRO stage 3 optimizer")
    DS(ti + 18.2, "DeepSpeed Final Optimizer = DeepSpeedZeroOptimizer_Stage3")
    tag = f"global_step{a.load}"
    if a.load:
        U(ti + 19.0, f"resuming from {CKPT} (latest: {tag})")
        DS(ti + 19.2, f"[Torch] Loading checkpoint from {CKPT}/{tag}/zero_pp_rank_0_mp_rank_00_model_states.pt...",
           src="torch_checkpoint_engine.py:27:load")
        DS(F - 2.6, f"[Torch] Loaded checkpoint from {CKPT}/{tag}/zero_pp_rank_0_mp_rank_00_model_states.pt.",
           src="torch_checkpoint_engine.py:29:load")
        DS(F - 1.9, f"loading {GPUS} zero partition checkpoints for rank 0", src="engine.py:3229:_get_all_zero_checkpoint_state_dicts")
        U(F - 0.4, f"loaded checkpoint {tag}; resuming at step {a.load + 1}")
    else:
        U(ti + 19.0, f"no checkpoint found under {CKPT}; starting from scratch")
    U(F, f"training from step {a.load + 1} to {TRAIN_STEPS} (global batch {GPUS * MBS} x {SEQ} tokens)")
    lr = random.Random(f"{seed}-loss-{a.k}")
    saves = {n: (s, c) for n, s, c in a.saves}
    t_last, last_n = F, a.load
    flush_at = a.steps[len(a.steps) // 3][0] if a.kind == "complete" else -1
    for n, ts, d in a.steps:
        end = ts + d
        if n % LOG_FREQ == 0:
            lrv = 3e-4 * min(1.0, n / 500) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * n / TRAIN_STEPS)))
            DS(end, f"[Rank 0] step={n}, skipped=0, lr=[{lrv:.6e}], mom=[(0.9, 0.95)]")
            sps = GPUS * MBS / d
            P(0, end + 0.001, f"{ds_ts(end + 0.001)} [INFO] [timer.py:264:stop] epoch=0/micro_step={n}/global_step={n}, "
                              f"RunningAvgSamplesPerSec={GPUS * MBS / BASE_STEP:.6f}, CurrSamplesPerSec={sps:.6f}, "
                              f"MemAllocated=21.37GB, MaxMemAllocated=58.9GB")
            U(end + 0.002, f"step {n} | loss {loss_at(n, lr):.4f} | {(end - t_last) / (n - last_n):.3f} s/step | "
                           f"{TOKENS_PER_STEP * (n - last_n) / (end - t_last) / GPUS:,.0f} tok/s/gpu")
            t_last, last_n = end, n
        if n == flush_at:
            DS(end + 0.003, "1 pytorch allocator cache flushes since last step. this happens when there is high memory "
                            "pressure and is detrimental to performance. if this is happening frequently consider "
                            "adjusting settings to reduce memory consumption. If you are unable to make the cache "
                            "flushes go away consider adding get_accelerator().empty_cache() calls in your training "
                            "loop to ensure that all ranks flush their caches at the same time", "WARNING", "stage3.py:2114:step")
        if n % 1000 == EVAL_AT:
            U(ts + d - a.eval_s + 0.01, f"running held-out eval at step {n}")
            U(end - 0.01, f"eval step {n} | val_loss {loss_at(n, lr) + 0.07:.4f} | ppl {math.exp(loss_at(n, lr) + 0.07):.2f}")
        if n in saves:
            s0, c = saves[n]
            tg = f"global_step{n}"
            DS(s0 + 0.01, f"[Torch] Checkpoint {tg} is about to be saved!")
            DS(s0 + 0.4, f"Saving model checkpoint: {CKPT}/{tg}/zero_pp_rank_0_mp_rank_00_model_states.pt")
            DS(s0 + 0.41, f"[Torch] Saving {CKPT}/{tg}/zero_pp_rank_0_mp_rank_00_model_states.pt...", src="torch_checkpoint_engine.py:21:save")
            DS(s0 + c * 0.3, f"[Torch] Saved {CKPT}/{tg}/zero_pp_rank_0_mp_rank_00_model_states.pt.", src="torch_checkpoint_engine.py:23:save")
            DS(s0 + c * 0.3 + 0.1, f"[Torch] Saving {CKPT}/{tg}/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt...", src="torch_checkpoint_engine.py:21:save")
            DS(s0 + c - 0.3, f"[Torch] Saved {CKPT}/{tg}/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt.", src="torch_checkpoint_engine.py:23:save")
            DS(s0 + c - 0.29, f"zero checkpoint saved {CKPT}/{tg}/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt", src="engine.py:3616:_save_zero_checkpoint")
            DS(s0 + c - 0.01, f"[Torch] Checkpoint {tg} is ready now!", src="torch_checkpoint_engine.py:33:commit")
            U(s0 + c, f"checkpoint {tg} saved in {c - 0.01:.1f} s")
    R, E = a.R, a.E
    if a.kind == "complete":
        U(E - 4.0, f"Training finished: {TRAIN_STEPS} steps")
        for i in range(NNODES):
            AG(i, E - 1.5 + 0.1 * i, "[default] worker group successfully finished. Waiting 300 seconds for other agents to finish.",
               src="torch/distributed/elastic/agent/server/api.py:879")
            AG(i, E - 1.4 + 0.1 * i, "Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish",
               src="torch/distributed/elastic/agent/server/api.py:932")
            AG(i, E - 1.0 + 0.1 * i, "Done waiting for other agents. Elapsed: 0.49 seconds", src="torch/distributed/elastic/agent/server/api.py:946")
        return L.render()

    def child_failed(i, t, rank, local, code, pid, script="train.py"):
        for ln in ["Traceback (most recent call last):", f'  File "{py.rsplit("/", 1)[0]}/torchrun", line 8, in <module>',
                   "    sys.exit(main())", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 60,
                   f"{script} FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
                   "Root Cause (first observed failure):", "[0]:",
                   f"  time      : {_split(t)[0]:%Y-%m-%d_%H:%M:%S}", f"  host      : {a.nodes[i]}",
                   f"  rank      : {rank} (local_rank: {local})", f"  exitcode  : {code} (pid: {pid})",
                   "  error_file: <N/A>",
                   "  traceback : " + ("Signal 6 (SIGABRT) received by PID %d" % pid if code == -6 else
                                       "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"),
                   "=" * 60]:
            P(i, t + 0.1, ln)

    def sigterm(i, t):
        AG(i, t, "Received Signals.SIGTERM death signal, shutting down workers", "W", "torch/distributed/elastic/agent/server/api.py:704")
        for d in range(GPN):
            AG(i, t + 0.001, f"Sending process {wp[i][d]} closing signal SIGTERM", "W", "torch/distributed/elastic/multiprocessing/api.py:897")
        P(i, t + 0.9, f"torch.distributed.elastic.multiprocessing.api.SignalException: Process {agent[i]} got signal: 15")

    if a.kind == "preempt":
        bad = a.nodes.index(a.host)
        for i in range(NNODES):
            if i == bad:
                continue                                      # the VM is gone: its lines just stop
            for d in (0, 3):
                r = i * GPN + d
                tw = R + 6.0 + rng.uniform(0, 3) + 0.2 * i
                P(i, tw, f"[rank{r}]:[{c10(tw, 'E')} ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank {r}] Process group "
                         f"watchdog thread terminated with exception: NCCL error: remote process exited or there was a "
                         f"network error, NCCL version 2.21.5\n"
                         f"[rank{r}]:ncclRemoteError: A call failed possibly due to a network error or a remote process "
                         f"exiting prematurely.\n[rank{r}]:Last error:\n"
                         f"[rank{r}]:NET/OFI Request 0x{rng.getrandbits(36):x} completed with error. RC: 21. Error: 4353 "
                         f"(unresponsive receiver (reachable by EFA device but handshake failed)). Completed length: 0, "
                         f"Request: {{ dev: {d}, size: 0, state: CREATED, type: RECV }}")
            tf = R + 11.0 + 0.3 * i
            AG(i, tf, f"failed (exitcode: -6) local_rank: 0 (pid: {wp[i][0]}) of binary: {py}", "E",
               "torch/distributed/elastic/multiprocessing/api.py:869")
            child_failed(i, tf, i * GPN, 0, -6, wp[i][0])
    elif a.kind == "xid":
        bad = a.nodes.index(a.host)
        r = bad * GPN + XID_GPU
        tw = R + 1.4
        P(bad, tw, f"[rank{r}]:[{c10(tw, 'E')} ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank {r}] Process group "
                   f"watchdog thread terminated with exception: CUDA error: unspecified launch failure\n"
                   f"[rank{r}]:CUDA kernel errors might be asynchronously reported at some other API call, so the "
                   f"stacktrace below might be incorrect.\n"
                   f"[rank{r}]:For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
                   f"[rank{r}]:Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")
        AG(bad, R + 3.2, f"failed (exitcode: -6) local_rank: {XID_GPU} (pid: {wp[bad][XID_GPU]}) of binary: {py}", "E",
           "torch/distributed/elastic/multiprocessing/api.py:869")
        child_failed(bad, R + 3.2, r, XID_GPU, -6, wp[bad][XID_GPU])
        for i in range(NNODES):
            if i != bad:
                sigterm(i, R + 5.0 + 0.1 * i)
    elif a.kind == "hang":
        bad = a.nodes.index(a.host)
        hr = bad * GPN + HANG_LOCAL
        seq = 20000 + a.steps[-1][0] * 9
        for i in range(NNODES):
            for d in range(GPN):
                r = i * GPN + d
                if r == hr:
                    continue
                tw = R + WATCHDOG_S + 0.05 + 0.3 * rng.random() + (0.0 if i == 0 else 0.4)
                p = f"[rank{r}]:[{c10(tw, 'E')}"
                P(i, tw, f"{p} ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective operation timeout: "
                         f"WorkNCCL(SeqNum={seq}, OpType=_ALLGATHER_BASE, NumelIn=3932160, NumelOut=125829120, "
                         f"Timeout(ms)={WATCHDOG_S * 1000}) ran for {WATCHDOG_S * 1000 + rng.randint(8, 90)} milliseconds before timing out.\n"
                         f"{p} ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank {r}] Exception (either an error or timeout) "
                         f"detected by watchdog at work: {seq}, last enqueued NCCL work: {seq + 1}, last completed NCCL work: {seq - 1}.\n"
                         f"{p} ProcessGroupNCCL.cpp:621] [Rank {r}] Some NCCL operations have failed or timed out. Due to the "
                         f"asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.\n"
                         f"{p} ProcessGroupNCCL.cpp:627] [Rank {r}] To avoid data inconsistency, we are taking the entire process down.")
        for i in range(NNODES):
            tf = R + WATCHDOG_S + 3.0 + 0.2 * i
            if i == bad:
                sigterm_t = tf
                AG(i, sigterm_t, f"failed (exitcode: -6) local_rank: 0 (pid: {wp[i][0]}) of binary: {py}", "E",
                   "torch/distributed/elastic/multiprocessing/api.py:869")
                AG(i, E - 1.0, f"Unable to shutdown process {wp[i][HANG_LOCAL]} via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL",
                   "W", "torch/distributed/elastic/multiprocessing/api.py:914")
                child_failed(i, E - 0.9, i * GPN, 0, -6, wp[i][0])
            else:
                AG(i, tf, f"failed (exitcode: -6) local_rank: 0 (pid: {wp[i][0]}) of binary: {py}", "E",
                   "torch/distributed/elastic/multiprocessing/api.py:869")
                child_failed(i, tf, i * GPN, 0, -6, wp[i][0])
    elif a.kind == "fuse":
        n, ts = a.failed_save
        tg = f"global_step{n}"
        DS(ts + 0.01, f"[Torch] Checkpoint {tg} is about to be saved!")
        DS(ts + 0.4, f"Saving model checkpoint: {CKPT}/{tg}/zero_pp_rank_0_mp_rank_00_model_states.pt")
        DS(ts + 0.41, f"[Torch] Saving {CKPT}/{tg}/zero_pp_rank_0_mp_rank_00_model_states.pt...", src="torch_checkpoint_engine.py:21:save")
        tf0 = info["fuse_last_ts"] + 0.5
        info["save_exception_ts"] = tf0
        for i in range(NNODES):
            for d in (0, 5):
                r = i * GPN + d
                tf = tf0 + 0.2 * i + 0.01 * d
                tb = ["Traceback (most recent call last):",
                      f'  File "/home/{user}/sky_workdir/train.py", line 268, in <module>', "    main()",
                      f'  File "/home/{user}/sky_workdir/train.py", line 241, in main',
                      "    engine.save_checkpoint(args.ckpt_dir, tag=f\"global_step{step}\")",
                      f'  File "{py.rsplit("/bin", 1)[0]}/lib/python3.11/site-packages/deepspeed/runtime/engine.py", line 3248, in save_checkpoint',
                      "    self._save_zero_checkpoint(save_dir, tag)",
                      f'  File "{py.rsplit("/bin", 1)[0]}/lib/python3.11/site-packages/deepspeed/runtime/engine.py", line 3612, in _save_zero_checkpoint',
                      "    self.checkpoint_engine.save(zero_sd, zero_checkpoint_name)",
                      f'  File "{py.rsplit("/bin", 1)[0]}/lib/python3.11/site-packages/deepspeed/runtime/checkpoint_engine/torch_checkpoint_engine.py", line 22, in save',
                      "    torch.save(state_dict, path)",
                      f'  File "{py.rsplit("/bin", 1)[0]}/lib/python3.11/site-packages/torch/serialization.py", line 850, in save',
                      "    with _open_zipfile_writer(f) as opened_zipfile:",
                      f'  File "{py.rsplit("/bin", 1)[0]}/lib/python3.11/site-packages/torch/serialization.py", line 717, in __exit__',
                      "    self.file_like.write_end_of_file()",
                      "RuntimeError: [enforce fail at inline_container.cc:626] . unexpected pos 3221291968 vs 3221291856",
                      "", "During handling of the above exception, another exception occurred:", "",
                      "Traceback (most recent call last):",
                      f'  File "{py.rsplit("/bin", 1)[0]}/lib/python3.11/site-packages/torch/serialization.py", line 849, in save',
                      "    with _open_file_like(f, \"wb\") as opened_file:",
                      f"OSError: [Errno 5] Input/output error: '{CKPT}/{tg}/bf16_zero_pp_rank_{r}_mp_rank_00_optim_states.pt'"]
                P(i, tf, "\n".join(f"[rank{r}]: " + ln for ln in tb))
            AG(i, tf0 + 2.0 + 0.2 * i, f"failed (exitcode: 1) local_rank: 0 (pid: {wp[i][0]}) of binary: {py}", "E",
               "torch/distributed/elastic/multiprocessing/api.py:869")
            child_failed(i, tf0 + 2.0 + 0.2 * i, i * GPN, 0, 1, wp[i][0])
    elif a.kind == "bug":
        n = a.steps[-1][0]
        U(R + 0.01, f"running held-out eval at step {n}")
        for i in range(NNODES):
            for d in (0, 2, 6):
                r = i * GPN + d
                tf = R + 2.5 + 0.1 * i + 0.01 * d
                tb = ["Traceback (most recent call last):",
                      f'  File "/home/{user}/sky_workdir/train.py", line 268, in <module>', "    main()",
                      f'  File "/home/{user}/sky_workdir/train.py", line 236, in main',
                      "    val = evaluate(engine, val_loader, max_batches=args.eval_batches)",
                      f'  File "/home/{user}/sky_workdir/train.py", line 171, in evaluate',
                      "    mask = batch[\"attention_mask\"].to(engine.device, non_blocking=True)",
                      "KeyError: 'attention_mask'"]
                P(i, tf, "\n".join(f"[rank{r}]: " + ln for ln in tb))
            AG(i, R + 4.0 + 0.2 * i, f"failed (exitcode: 1) local_rank: 0 (pid: {wp[i][0]}) of binary: {py}", "E",
               "torch/distributed/elastic/multiprocessing/api.py:869")
            child_failed(i, R + 4.0 + 0.2 * i, i * GPN, 0, 1, wp[i][0])
    return L.render()


# ----------------------------------------------------------------------------- controller
def controller_logs(atts, H, seed, info) -> dict[str, str]:
    rng = random.Random(f"{seed}-ctl")
    out = {}
    L47, L48 = Sink(), Sink()

    def C(L, t, msg, src="controller.py:1011", lv="I"):
        L.add(t, "\n".join(f"{sky_ctl(t, lv)} {src}] {ln}" for ln in msg.split("\n")))

    def launch(L, t_from, a, region, zone, name, failures=()):
        t = t_from
        for reg, z in failures:
            C(L, t, f"Launching on {a.cloud_name(reg)} {reg} ({z})", "cloud_vm_ray_backend.py:1573")
            t += 42 + rng.uniform(0, 20)
            C(L, t, f"Got error(s) in {z}:", "cloud_vm_ray_backend.py:1158", "W")
            C(L, t, "  An error occurred (InsufficientInstanceCapacity) when calling the RunInstances operation "
                    f"(reached max retries: 0): We currently do not have sufficient p5.48xlarge capacity in the "
                    f"Availability Zone you requested ({z}). Our system will be working on provisioning additional "
                    f"capacity. You can currently get p5.48xlarge capacity by not specifying an Availability Zone in "
                    f"your request or choosing us-east-2c.", "cloud_vm_ray_backend.py:1160", "W")
            t += 3
        if failures:
            C(L, t, f"Failed to launch a cluster with error: sky.exceptions.ResourcesUnavailableError: Failed to acquire "
                    f"resources in all zones in {failures[-1][0]} for {{AWS(p5.48xlarge[Spot], {{'H100': 8}})}}. ",
              "recovery_strategy.py:497")
            C(L, t + 0.1, "Retrying to launch the cluster in 30.0 seconds.", "recovery_strategy.py:516")
            t += 30.5
        C(L, t, f"Launching on {a.cloud_name(region)} {region} ({zone})", "cloud_vm_ray_backend.py:1573")
        C(L, a.S - 40, f"Cluster launched: {name}.", "provisioner.py:624")
        C(L, a.S - 2, f"Job submitted, ID: {a.sky_job_id}", "cloud_vm_ray_backend.py:3620")
        C(L, a.S, f"Cluster launch completed in {a.S - t_from:.2f}s", "controller.py:318")

    for a in atts:
        a.cloud_name = lambda reg: "AWS" if reg.startswith("us-east") else "GCP"
    a1, a2, a3, a4, a5, a6 = atts
    for a in atts:
        a.sky_job_id = {1: 1, 2: 1, 3: 1, 4: 2, 5: 3, 6: 1}[a.k]
    t = a1.S - 612.0
    C(L47, t, "Starting job loop for 47", "controller.py:931")
    C(L47, t, "  log_file=/home/gcpuser/sky_logs/jobs_controller/47.log", "controller.py:932")
    C(L47, t + 0.1, "Starting JobsController run for job 47", "controller.py:1004")
    C(L47, t + 0.1, f"Processing task 0/0: {TASK}", "controller.py:1009")
    C(L47, t + 0.2, f"Starting task 0 ({TASK}) for job 47", "controller.py:207")
    C(L47, t + 0.9, f"Submitted managed job 47 (task: 0, name: '{TASK}'); SKYPILOT_TASK_ID: "
                    f"sky-managed-{_split(t)[0]:%Y-%m-%d-%H-%M-%S}-{rng.randint(100000, 999999)}_{TASK}_47-0", "controller.py:290")
    C(L47, t + 0.9, "Started monitoring.", "controller.py:296")
    launch(L47, t + 1.0, a1, "us-east-2", "us-east-2a", f"{TASK}-47")

    def recover(L, a_prev, a_next, detect, how, region, zone, failures=(), cleanup=True, name=f"{TASK}-47"):
        td = a_prev.E + detect
        if how == "preempted":
            C(L, td, "Cluster is preempted or failed (status: INIT). Recovering...", "controller.py:545")
        else:
            C(L, td, "Task 0 failed with status: JobStatus.FAILED", "controller.py:560")
            C(L, td + 1.2, "The user job failed (JobStatus.FAILED). Please check the logs below.\n"
                           "== Logs of the user job (ID: 47) ==\n", "controller.py:566")
            C(L, td + 6.0, how, "controller.py:600")
        if cleanup:
            C(L, td + 7.0, "Cleaning up the preempted or failed cluster...", "controller.py:618")
        C(L, td + 40.0 if cleanup else td + 7.0, "Starting recovery for task 0", "controller.py:624")
        if cleanup:
            launch(L, td + 41.0, a_next, region, zone, name, failures)
            C(L, a_next.S + 0.5, f"Recovery completed for task 0 in {a_next.S - td - 40:.2f}s", "controller.py:633")
        else:
            C(L, a_next.S - 1.0, f"Job submitted, ID: {a_next.sky_job_id}", "cloud_vm_ray_backend.py:3620")
            C(L, a_next.S, f"Recovery completed for task 0 in {a_next.S - td - 7:.2f}s", "controller.py:633")

    recover(L47, a1, a2, 24.0, "preempted", "us-central1", "us-central1-a",
            failures=[("us-east-2", "us-east-2a"), ("us-east-2", "us-east-2b")])
    recover(L47, a2, a3, 19.0, "preempted", "us-central1", "us-central1-a")
    recover(L47, a3, a4, 17.0, "User program crashed (FAILED). Retry the job as max_restarts_on_errors is set to 2. [1/2]",
            "", "", cleanup=False)
    recover(L47, a4, a5, 15.0, "User program crashed (FAILED). Retry the job as max_restarts_on_errors is set to 2. [2/2]",
            "", "", cleanup=False)
    td = a5.E + 18.0
    C(L47, td, "Task 0 failed with status: JobStatus.FAILED", "controller.py:560")
    C(L47, td + 1.2, "The user job failed (JobStatus.FAILED). Please check the logs below.\n"
                     "== Logs of the user job (ID: 47) ==\n", "controller.py:566")
    C(L47, td + 6.0, "Task 0 failed and will not be retried", "controller.py:620")
    C(L47, td + 6.1, "Task 0 completed in %.2fs with success=False" % (td - a1.S + 612), "controller.py:1013")
    C(L47, td + 6.1, "Task 0 failed, stopping execution", "controller.py:1016")
    C(L47, td + 40.0, "Cluster of managed job 47 has been cleaned up.", "controller.py:957")
    out["47.log"] = L47.render().decode()

    t = a6.S - 700.0
    C(L48, t, "Starting job loop for 48", "controller.py:931")
    C(L48, t, "  log_file=/home/gcpuser/sky_logs/jobs_controller/48.log", "controller.py:932")
    C(L48, t + 0.2, f"Starting task 0 ({TASK}) for job 48", "controller.py:207")
    C(L48, t + 0.9, f"Submitted managed job 48 (task: 0, name: '{TASK}'); SKYPILOT_TASK_ID: "
                    f"sky-managed-{_split(t)[0]:%Y-%m-%d-%H-%M-%S}-{rng.randint(100000, 999999)}_{TASK}_48-0", "controller.py:290")
    C(L48, t + 0.9, "Started monitoring.", "controller.py:296")
    launch(L48, t + 1.0, a6, "us-east-2", "us-east-2c", f"{TASK}-48")
    C(L48, a6.E + 12.0, "Task 0 succeeded!Getting end time and cleaning up", "controller.py:384")
    C(L48, a6.E + 13.0, f"Managed job 48 (task: 0) SUCCEEDED. Cleaning up the cluster {TASK}-48.", "controller.py:398")
    C(L48, a6.E + 95.0, "Cluster of managed job 48 has been cleaned up.", "controller.py:957")
    out["48.log"] = L48.render().decode()

    # decoy: job 46 (an eval sweep on its own 1-node cluster) preempted during attempt 2
    L46 = Sink()
    t = a1.S - 3000.0
    C(L46, t, "Starting job loop for 46", "controller.py:931")
    C(L46, t + 0.9, "Submitted managed job 46 (task: 0, name: 'eval-sweep'); SKYPILOT_TASK_ID: "
                    f"sky-managed-{_split(t)[0]:%Y-%m-%d-%H-%M-%S}-{rng.randint(100000, 999999)}_eval-sweep_46-0", "controller.py:290")
    C(L46, t + 300, "Launching on GCP us-central1 (us-central1-b)", "cloud_vm_ray_backend.py:1573")
    C(L46, t + 420, "Cluster launch completed in 419.12s", "controller.py:318")
    tp = a2.F + (a2.E - a2.F) * 0.45
    info["decoy46_ts"] = tp
    C(L46, tp, "Cluster is preempted or failed (status: STOPPED). Recovering...", "controller.py:545")
    C(L46, tp + 7, "Cleaning up the preempted or failed cluster...", "controller.py:618")
    C(L46, tp + 40, "Starting recovery for task 0", "controller.py:624")
    C(L46, tp + 41, "Launching on GCP us-central1 (us-central1-b)", "cloud_vm_ray_backend.py:1573")
    C(L46, tp + 380, "Recovery completed for task 0 in 340.55s", "controller.py:633")
    C(L46, tp + 2400, "Managed job 46 (task: 0) SUCCEEDED. Cleaning up the cluster eval-sweep-46.", "controller.py:398")
    out["46.log"] = L46.render().decode()
    return out


# ----------------------------------------------------------------------------- node files
def node_files(atts, H, seed, bundle: Path, info: dict):
    rng = random.Random(f"{seed}-nodes")
    a1, a2, a3, a4, a5, a6 = atts
    # spot watchers
    bad = a1.host
    warn = a1.R - 120.0
    write(bundle / "nodes" / bad / "spot-watch.log",
          f"{iso_s(a1.S - 20)} watcher started (imds v2, every 5 s)\n"
          f"{iso_s(warn + 3)} /latest/meta-data/spot/instance-action 200 "
          f"{json.dumps({'action': 'terminate', 'time': iso_s(a1.R)})}\n")
    reb = a6.host_rebalance
    trb = a6.F + (a6.E - a6.F) * 0.6
    info["rebalance_ts"] = trb
    write(bundle / "nodes" / reb / "spot-watch.log",
          f"{iso_s(a6.S - 20)} watcher started (imds v2, every 5 s)\n"
          f"{iso_s(trb + 4)} /latest/meta-data/events/recommendations/rebalance 200 "
          f"{json.dumps({'noticeTime': iso_s(trb)})}\n")
    ids = {h: f"i-0{random.Random(f'{seed}-iid-{h}').getrandbits(64):016x}" for h in H["A"]}
    ev = []

    def E(t, kind, h, detail):
        ev.append((t, json.dumps({"version": "0", "id": f"{random.Random(f'{seed}{t}{h}').getrandbits(128):032x}",
                                  "detail-type": kind, "source": "aws.ec2", "account": "418295730166",
                                  "time": iso_s(t), "region": "us-east-2",
                                  "resources": [f"arn:aws:ec2:us-east-2:418295730166:instance/{ids[h]}"],
                                  "detail": detail})))
    E(warn, "EC2 Spot Instance Interruption Warning", bad, {"instance-id": ids[bad], "instance-action": "terminate"})
    E(trb, "EC2 Instance Rebalance Recommendation", reb, {"instance-id": ids[reb]})
    ev.sort()
    write(bundle / "cloud" / "aws-ec2-events.jsonl", "\n".join(x[1] for x in ev) + "\n")
    rows = []
    for j, h in enumerate(H["A"]):
        a = a1 if j < 4 else a6
        state = "terminated"
        rows.append(f"{ids[h]}\t{h}.us-east-2.compute.internal\tspot\t{state}\t{iso_s(a.S - 140)[:-1]}+00:00")
    write(bundle / "cloud" / "aws-instances.txt", "\n".join(rows) + "\n")
    # GCE operations: the host error on the Xid node
    ops = []
    t_he = a2.R + 25.0
    info["host_error_ts"] = t_he
    ops.append({"kind": "compute#operation", "id": str(random.Random(f"{seed}op").getrandbits(60)),
                "name": f"systemevent-{int(t_he * 1000)}-{random.Random(f'{seed}opn').getrandbits(40):x}",
                "operationType": "compute.instances.hostError", "status": "DONE", "progress": 100,
                "statusMessage": "Instance terminated by Compute Engine.",
                "targetLink": f"https://www.googleapis.com/compute/v1/projects/sky-train-prod/zones/us-central1-a/instances/{a2.host}",
                "targetId": str(random.Random(f"{seed}tid").getrandbits(60)), "user": "system",
                "insertTime": gce_ts(t_he), "startTime": gce_ts(t_he), "endTime": gce_ts(t_he + 1),
                "zone": "https://www.googleapis.com/compute/v1/projects/sky-train-prod/zones/us-central1-a"})
    write(bundle / "cloud" / "gce-operations.json", json.dumps(ops, indent=2) + "\n")
    # kernel journals
    for a in atts:
        for i, h in enumerate(a.nodes):
            lines = []
            p = bundle / "nodes" / h / "journal-k.log"
            if p.exists():
                lines = p.read_text().splitlines()
            tb = a.S - 95.0 - 3 * i
            if not lines or a.cloud == "aws" or a.k == 3:
                lines.append(f"-- Boot {random.Random(f'{seed}{h}{a.k}').getrandbits(128):032x} --")
                lines.append(f"{short_iso(tb)} {h} kernel: Linux version 6.8.0-1019-{'aws' if a.cloud == 'aws' else 'gcp'} (buildd@lcy02-amd64-086) #21~22.04.1-Ubuntu SMP")
                lines.append(f"{short_iso(tb + 31)} {h} kernel: nvidia-nvlink: Nvlink Core is being initialized, major device number 235")
                lines.append(f"{short_iso(tb + 32)} {h} kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024")
                if a.cloud == "aws":
                    lines.append(f"{short_iso(tb + 33)} {h} kernel: efa 0000:{BUSIDS[i]}:00.0: Setup irq:{190 + i} name:efa-mgmnt@pci:0000:{BUSIDS[i]}:00.0")
            if a.kind == "xid" and h == a.host:
                busid = BUSIDS[XID_GPU]
                lines.append(f"{short_iso(a.R)} {h} kernel: NVRM: GPU at PCI:0000:{busid}:00: GPU-{random.Random(h).getrandbits(32):08x}-6e1b-11ef-9a7d-{random.Random(h + 'x').getrandbits(48):012x}")
                lines.append(f"{short_iso(a.R)} {h} kernel: NVRM: GPU Board Serial Number: 165223{rng.randint(1000000, 9999999)}")
                lines.append(f"{short_iso(a.R)} {h} kernel: NVRM: Xid (PCI:0000:{busid}:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
                lines.append(f"{short_iso(a.R)} {h} kernel: NVRM: GPU 0000:{busid}:00.0: GPU has fallen off the bus.")
                lines.append(f"{short_iso(a.R + 0.5)} {h} kernel: NVRM: A GPU crash dump has been created. If possible, please run")
                lines.append(f"{short_iso(a.R + 0.5)} {h} kernel: NVRM: nvidia-bug-report.sh as root to collect this data before")
                lines.append(f"{short_iso(a.R + 0.5)} {h} kernel: NVRM: the NVIDIA kernel module is unloaded.")
            write(p, "\n".join(lines) + "\n")
    # bucket mount logs in syslog
    for a in atts:
        for i, h in enumerate(a.nodes):
            p = bundle / "nodes" / h / "syslog"
            old = p.read_text().splitlines() if p.exists() else []
            r = random.Random(f"{seed}-mnt-{a.k}-{i}")
            tm = a.S - 30.0 + r.uniform(0, 3)
            if a.cloud == "aws":
                pid = r.randint(2000, 6000)
                g = f"{h} /usr/local/bin/goofys[{pid}]:"
                if a.k in (1, 6):
                    old.append(f"{syslog_ts(tm)} {g} main.INFO File system has been successfully mounted.")
                if h == H["A"][1]:
                    old.append(f"{syslog_ts(a.F - 6)} {g} fuse.ERROR *fuseops.ReadFileOp error: no such file or directory")
                    old.append(f"{syslog_ts(a.F - 6)} {g} fuse.ERROR *fuseops.ReadFileOp error: no such file or directory")
                write(p, "\n".join(old) + "\n")
                continue
            pid = 1800 + i * 13 + a.k
            g = f"{h} gcsfuse[{pid}]:"

            def J(t, sev, msg, old=old, g=g):
                s = int(t)
                old.append(f"{syslog_ts(t)} {g} " + json.dumps(
                    {"timestamp": {"seconds": s, "nanos": int(round((t - s) * 1e9)) % 1000000000},
                     "severity": sev, "message": msg}, separators=(",", ":")))
            if a.k in (2, 3):
                J(tm, "INFO", "Start gcsfuse/2.4.0 (Go version go1.22.5) for app \"\" using mount point: /ckpt")
                J(tm + 0.3, "INFO", "Set up root directory for bucket sky-llama3-ckpt-7f3e")
                J(tm + 0.5, "INFO", "File system has been successfully mounted.")
            if a.kind == "fuse" and i in (0, 1, 3):
                n, ts = a.failed_save
                obj = f"llama3-8b/global_step{n}/bf16_zero_pp_rank_{i * GPN + r.randrange(GPN)}_mp_rank_00_optim_states.pt"
                t1 = ts + 14 + r.uniform(0, 6)
                for jj in range(3):
                    J(t1 + 21 * jj, "WARNING", f"Retrying upload of \"{obj}\" after error: googleapi: Error 503: We "
                                               f"encountered an internal error. Please try again., backendError (attempt {jj + 1})")
                tt = t1 + 70
                info["fuse_first_ts"] = min(info.get("fuse_first_ts", tt), tt)
                info["fuse_last_ts"] = max(info.get("fuse_last_ts", tt), tt + 0.2)
                J(tt, "ERROR", "fuse: *fuseops.FlushFileOp error: FileInode.Sync: SyncObject: Create: CreateObject: googleapi: "
                               "got HTTP response code 503 with body: We encountered an internal error. Please try again.")
                J(tt + 0.2, "ERROR", "fuse: *fuseops.SyncFileOp error: input/output error")
            if a.k == 3 and i == 1:
                n, ts, c = a.saves[len(a.saves) // 2]
                J(ts + 11.7, "WARNING", f"Retrying upload of \"llama3-8b/global_step{n}/bf16_zero_pp_rank_11_mp_rank_00_optim_states.pt\" "
                                        "after error: googleapi: Error 503: We encountered an internal error. Please try again., "
                                        "backendError (attempt 1)")
            write(p, "\n".join(old) + "\n")


def inventory(H) -> str:
    return f"""# SkyPilot spot fleet (campaign skypilot_spot): whatever the managed job was given
[providers.aws]
usd_per_gpu_hour = 3.11
support = "AWS Support case, account 418295730166 (spot: no credits for interruptions)"

[providers.gcp]
usd_per_gpu_hour = 2.98
support = "Google Cloud support case, project sky-train-prod"

[clusters.aws-use2-p5]
provider = "aws"
gpu = "H100-SXM"
gpus_per_node = {GPN}
interconnect = "EFA 32x100G (p5.48xlarge)"
nodes = "{','.join(H['A'])}"

[clusters.gcp-usc1-a3]
provider = "gcp"
gpu = "H100-SXM"
gpus_per_node = {GPN}
interconnect = "GPUDirect-TCPX 4x200G (a3-highgpu-8g)"
nodes = "{','.join(H['B'])}"
"""


def run_toml() -> str:
    return f"""# {RUN}: Llama 3 8B, DeepSpeed ZeRO-3, SkyPilot managed job on spot VMs (job 47, then 48)
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.3e}
checkpoint_dir = "{CKPT}"
launcher = "torchrun"
launch_command = "sky jobs launch -n {TASK} train.yaml  # 4 nodes x torchrun --nproc_per_node=8"
"""


def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts, H = build(seed)
    info: dict = {}
    for a in atts:
        a.cluster = f"{TASK}-{a.job}"
    atts[5].host_rebalance = atts[5].nodes[1]
    write(bundle / "inventory.toml", inventory(H))
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", run_toml())
    node_files(atts, H, seed, bundle, info)
    for a in atts:
        write(rdir / f"attempt-{a.k}" / sky_dir(a.S - 1.7) / "run.log", run_log(a, seed, info))
    for name, text in controller_logs(atts, H, seed, info).items():
        write(bundle / "controller" / "jobs_controller" / name, text)
    cats, total, per = ledger(atts)
    incidents = []
    blame = {"preemption": "provider", "gpu_fell_off_bus": "provider", "filesystem_io": "provider",
             "nccl_timeout": "unknown", "user_code_error": "user"}
    for j, a in enumerate(atts[:5]):
        nxt = atts[j + 1]
        inc = {"id": j + 1, "attempt": a.k, "managed_job": a.job, "cloud": a.cloud, "failure_mode": a.mode,
               "blame": blame[a.mode], "host": a.host,
               "cluster": ("aws-use2-p5" if a.cloud == "aws" else "gcp-usc1-a3"), "provider": a.cloud,
               "rank": (a.nodes.index(a.host) * GPN + (XID_GPU if a.kind == "xid" else HANG_LOCAL))
               if a.kind in ("xid", "hang") else None,
               "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E), "next_start_ts": iso_z(nxt.S),
               "next_first_step_ts": iso_z(nxt.F), "last_ckpt_step": a.last_ckpt, "failed_at_step": a.steps[-1][0],
               "gpu_hours": per[j], "gpu_hours_lost": round(sum(per[j].values()), 4)}
        incidents.append(inc)
    incidents[0]["interruption_warning_ts"] = iso_z(atts[0].R - 120.0)
    incidents[1]["gce_host_error_ts"] = iso_z(info["host_error_ts"])
    incidents[3]["failed_save_step"] = atts[3].failed_save[0]
    incidents[3]["gcsfuse_first_error_ts"] = iso_z(info["fuse_first_ts"])
    incidents[3]["save_exception_ts"] = iso_z(info["save_exception_ts"])
    A, B = H["A"], H["B"]
    decoys = {
        A[1]: "goofys 'fuse.ERROR *fuseops.ReadFileOp error: no such file or directory' at each start; ncclRemoteError "
              "symptom of the attempt-1 preemption",
        A[0]: "head of attempt 1: prints the ncclRemoteError of the preemption",
        A[3]: "ncclRemoteError symptom of the attempt-1 preemption",
        B[5]: "gcsfuse retried one 503 during an attempt-3 save that completed; gcsfuse symptom node of attempt 4",
        B[7]: "gcsfuse symptom node of attempt 4",
        atts[5].host_rebalance: "EC2 Instance Rebalance Recommendation in attempt 6, never interrupted",
    }
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP, "flops_per_token": FLOPS_PER_TOKEN,
        "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "first_start_ts": iso_z(atts[0].S), "last_end_ts": iso_z(atts[-1].E),
        "match_on_attempt": True,
        "attempts": [{"attempt": a.k, "managed_job": a.job, "cloud": a.cloud, "nodes": a.nodes,
                      "start_ts": iso_z(a.S), "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E),
                      "loaded_step": a.load, "last_step": a.steps[-1][0], "saves": [n for n, _, _ in a.saves],
                      "end": a.kind} for a in atts],
        "incidents": [dict(i, attempts=[i["attempt"]]) for i in incidents],
        "forbidden_incidents": [
            {"failure_mode": "preemption", "attempts": [2, 3, 4, 5, 6], "reason": "job 46's preemption / a rebalance "
                                                                               "recommendation is not a reclaim of this job"},
            {"failure_mode": "filesystem_io", "attempts": [1, 3, 6], "reason": "goofys ENOENT probes / a retried 503"},
            {"failure_mode": "node_failure", "host": B[1], "reason": "GCE's host error follows the Xid 79 on that VM"},
        ],
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys, "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {
            p: round(sum(i["gpu_hours_lost"] for i in incidents if i["blame"] == "provider" and i["provider"] == p), 4)
            for p in ("aws", "gcp")},
        "notes": "UTC, no clock skew. host null = any host. Ledger: see the skypilot_spot.py docstring.",
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
