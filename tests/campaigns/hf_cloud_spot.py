#!/usr/bin/env python3
# ruff: noqa: E501, UP031  (real log lines are quoted whole; printf-style ids)
"""Campaign "hf_cloud_spot": HF Trainer + DeepSpeed ZeRO-3 under `accelerate launch` on AWS spot p5 VMs, SkyPilot managed jobs.

Written without reading clusterlab's analysis code (diagnose, ledger, attempts, simulator). Standard library only,
deterministic per --seed. Usage: hf_cloud_spot.py --out DIR [--seed N]   (~3 MB, < 2 s)

Writes, under --out DIR:
  DIR/bundle/inventory.toml, DIR/bundle/runs/hfspot-13b/run.toml
  DIR/bundle/runs/hfspot-13b/attempt-<k>/sky-job-<id>.log   what `sky jobs logs <id>` streamed for that run of the
        managed job (saved by the team's wrapper, one file per run): SkyPilot's `(setup pid=P)`, `(head, rank=0,
        pid=P)` and `(workerN, rank=N, pid=P, ip=IP)` prefixes; accelerate -> torch.distributed.run glog lines,
        DeepSpeed lines, transformers' explicit format, NCCL_DEBUG=INFO init lines, the S3 sync side-car's
        `upload:` lines, rank 0's tqdm bar (`\r`-separated redraws inside ONE physical line, no time stamp but
        tqdm's elapsed) and the Trainer's log dicts `{'loss': ...}` written through tqdm.write (no time stamp)
  DIR/bundle/runs/hfspot-13b/controller/sky-jobs-controller-<id>.log   `sky jobs logs --controller <id>`
        (glog-like "I MM-DD HH:MM:SS file.py:N] ..." lines, no year, the controller's true UTC clock)
  DIR/bundle/cloud/ec2-events.jsonl         EventBridge rule (source aws.ec2) -> Firehose -> S3, newline-delimited:
        "EC2 Spot Instance Interruption Warning", "EC2 Instance Rebalance Recommendation",
        "EC2 Instance State-change Notification" (EVERY termination, the reclaims and the ordinary tear-downs)
  DIR/bundle/cloud/describe-instances/<UTC>.json   `aws ec2 describe-instances` snapshots the wrapper takes after
        each run ends (StateReason Server.SpotInstanceTermination vs Client.UserInitiatedShutdown; the instance
        id -> private DNS name map; terminated instances stay listed for about an hour only)
  DIR/bundle/nodes/<host>/syslog            rsyslog of each VM, Ubuntu 24.04 RFC 3339 format, in the VM's own clock
                                            (shipped by the CloudWatch agent; a reclaimed VM's file just stops)
  DIR/truth.json

Fleet: provider "aws" (spot), cluster "aws-use1-p5": p5.48xlarge = 8 x H100-SXM 80GB, EFA. SkyPilot provisions a
4-VM cluster per run; hostnames are EC2's `ip-10-42-A-B` and change with every new cluster (28 VMs in all). All
truth times are true UTC (the controller's clock); every VM's clock is off by < 1 s except one (see decoys).

Job "hfspot-13b": continued pre-training of a 13B Llama-style model, 32 GPUs, ZeRO-3 bf16, micro batch 4 x grad
accumulation 2 x seq 4096 -> 1,048,576 tokens a step, ~7.62 s a step, max_steps 9000, save_steps 200 to the VMs'
local NVMe (/opt/dlami/nvme, instance store); after every save each VM uploads its own ZeRO shard files to S3 in
the background (`aws s3 sync`, 35-55 s); the run script first syncs S3 down and resumes from the newest checkpoint whose files are all
present. ddp_timeout 1800 s. Managed job 41 has max_restarts_on_errors 2; later jobs 0.

Runs (attempts) and incidents:
  1  job 41, cluster c1. After ~3.5 h AWS reclaims worker VM B1 WITH the two-minute notice (EventBridge "EC2 Spot
     Instance Interruption Warning", then B1's ACPI power-off in its syslog). The ranks on B1 die; the other VMs'
     NCCL/OFI completion errors and watchdog aborts follow within seconds (symptoms). SkyPilot: "Cluster is
     preempted or failed", recovery onto a NEW cluster.                                   [preemption, B1]
  2  job 41, cluster c2 (new VMs). Host OOM on C2: the kernel oom-killer kills a DataLoader worker (pt_data_worker)
     and that rank raises "DataLoader worker (pid N) is killed by signal: Killed."; the others abort. SkyPilot:
     "User program crashed ... [1/2]", restart on the SAME cluster.                      [host_oom, C2]
     Decoy: "EC2 Instance Rebalance Recommendation" for D2 during this run; D2 is never interrupted.
  3  job 41, cluster c2. Loss diverges under bf16: from step D0 the logged loss jumps to 7-9 and grad_norm is nan;
     the team `sky jobs cancel 41` 13-17 min later (before the next save).                                   [loss_divergence, any host]
  4  job 44 (the team's new launch), cluster c3. DELIBERATE rollback: resumes from the checkpoint two saves before
     the divergence (not the newest one) with learning_rate 2e-4 -> 1e-4, and turns on in-training eval
     (eval_steps 250, per_device_eval_batch_size 16). Right after the first eval, the next training step raises
     torch.OutOfMemoryError on one rank (DeepSpeed warned of allocator cache flushes before). Job FAILED.
                                                                                           [cuda_oom, any host]
     (The rollback is not a lost checkpoint: truth forbids checkpoint_lost on attempt 4.)
  5  job 45 (eval turned off), cluster c4, resumes from the same rollback checkpoint. AWS reclaims worker D4
     WITHOUT a notice: no warning event, its syslog just stops; the others block in NCCL (no error); SkyPilot's
     status check sees the cluster not UP ~20-40 s later and tears it down.               [preemption, D4]
  6  job 45 recovered on cluster c5. The newest checkpoint was saved on D4's instance store before its side-car
     finished uploading it: S3 holds it only in part, so the run resumes from the save before (checkpoint lost).
                                                                            [checkpoint_lost, any host, att 5|6]
     Then Xid 79 on C5 (GPU fallen off the bus); that rank's CUDA error, the others abort. Job 45 FAILED.
                                                                                           [gpu_fell_off_bus, C5]
     Decoy: B5's clock is 52 s behind (chrony never synchronised): its watchdog/launcher lines and syslog read
     ~50 s BEFORE the Xid.
  7  job 47, cluster c6. One rank raises pyarrow ArrowInvalid ("Parquet magic bytes not found in footer") on a
     corrupted training shard streamed from S3. Job FAILED; the team re-uploads the shard.  [user_code_error, any]
  8  job 48, cluster c7. Completes at step 9000 (final save, "Training completed.", save_model, final sync).
  Decoys (no incident may blame them): the survivors of attempts 1, 5 and 6 (their NCCL / OFI errors and the
  tear-down of attempt 5 are symptoms), D2 (rebalance recommendation, never interrupted), B5 (unsynchronised clock),
  and the harmless HF / DeepSpeed warnings (use_cache with gradient checkpointing, token indices longer than the
  maximum, FutureWarning deprecations, ZeRO-3 allocator cache flushes).

Ledger (truth.json expected_ledger, GPU-hours = 32 x seconds / 3600), the conventions of the outsiders' campaigns:
  startup    = run start (the run command starts on the head, ~2 s before torch.distributed.run's first line)
               -> the first training step's start
  productive = kept steps, whole step durations; a step s of run k is kept iff s <= the step loaded by every later
               run (the rollback and the lost checkpoint throw steps away); all steps of the completed run
  checkpoint = every completed save (Trainer + DeepSpeed, from "Saving model checkpoint" to the last rank's
               "is ready now!"), kept or not, plus the tail after the final save (save_model, final sync, exit)
  recompute  = the rest of [first step start, root event]: thrown-away steps, the eval of run 4, the step in flight
  hang       = root event -> run exit (the launcher's last exit; for run 5 the tear-down of the cluster)
  restart    = run exit -> next run start (provisioning, setup, the team's reaction)
  Root events: the reclaimed VM's power-off (run 1), the OOM kill (2), the end of the first diverged step (3), the
  OutOfMemoryError (4), the VM's disappearance (5), the Xid 79 (6), the ArrowInvalid (7).
  straggler = slowdown = data_stall = idle = 0

Formats, looked up with the search tools (public material; the text here is written anew):
  * SkyPilot: controller lines "I 09-12 22:49:49 controller.py:545] Cluster is preempted or failed. Recovering..."
    (skypilot #7168), "Cluster is preempted or failed (status: INIT). Recovering...", "Recent cluster events:",
    "Cleaning up the preempted or failed cluster...", "Starting recovery for task 0, it is currently ...",
    "Task <name> recovered, continuing monitoring", "User program crashed (FAILED). (Retry the job as
    max_restarts_on_errors is set to N. [i/N])", "Task 0 failed with status: JobStatus.FAILED", "The user job failed
    (JobStatus.FAILED). Please check the logs below.", "Task 0 failed and will not be retried", "Managed job N (task:
    0) SUCCEEDED. Cleaning up the cluster C.", "=== Checking the job status... ===", "Job status:
    JobStatus.RUNNING", "Managed job cluster launched." (sky/jobs/controller.py, recovery_strategy.py, issues #825,
    #3300, #7117); job-log prefixes "(head, rank=0, pid=P)", "(worker1, rank=1, pid=P, ip=10.x)", "(setup pid=P)"
    (sky/skylet log prefix code; public HF Trainer output through SkyPilot). The cancel line's wording was not
    found and is written plainly.
  * AWS: EventBridge "EC2 Spot Instance Interruption Warning" {"instance-id", "instance-action": "terminate"} and
    "EC2 Instance Rebalance Recommendation" (AWS EC2 user guide, spot-instance-termination-notices); State-change
    Notification {"instance-id", "state"}; describe-instances StateReason "Server.SpotInstanceTermination: Spot
    instance termination" / "Client.UserInitiatedShutdown: User initiated shutdown".
  * aws-ofi-nccl: "ofi_process_cq:1039 NCCL WARN NET/OFI Request 0x... completed with error. RC: 20. Error: unknown
    error. Completed length: 0, Request: { ... }" (aws/aws-ofi-nccl #156, #161), "NET/OFI Selected Provider is efa".
  * transformers Trainer: "***** Running training *****" block, "Continuing training from checkpoint, will skip to
    saved global_step", "Continuing training from global step N", "Will skip the first E epochs then the first B
    batches in the first epoch.", "Saving model checkpoint to DIR", "Deleting older checkpoint [DIR] due to
    args.save_total_limit", "Loading model from DIR.", "Training completed. Do not forget to share your model on
    huggingface.co/models =)", explicit format "[INFO|trainer.py:N] YYYY-mm-dd HH:MM:SS,mmm >> msg".
  * PyTorch: DataLoader "DataLoader worker (pid N) is killed by signal: Killed." then "DataLoader worker (pid(s) N)
    exited unexpectedly"; torch.OutOfMemoryError text; ProcessGroupNCCL watchdog lines; elastic ChildFailedError
    block; glog prefixes "W1205 06:12:02.512000 3388 torch/distributed/run.py:793]".
  * Linux oom-killer ("invoked oom-killer", "Out of memory: Killed process", "oom-kill:constraint=...",
    "oom_reaper: reaped process"), NVRM Xid 79 lines, systemd-logind "Power key pressed short." / "Powering off...".
"""
from __future__ import annotations

import argparse
import json
import math
import random
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

UTC = timezone.utc  # noqa: UP017  (the outsiders run python 3.10 too)
RUN = "hfspot-13b"
PROVIDER, CLUSTER = "aws", "aws-use1-p5"
NODES, GPN = 4, 8
GPUS = NODES * GPN
TOKENS_PER_STEP = GPUS * 4 * 2 * 4096          # 1,048,576
FLOPS_PER_TOKEN = 8.81e10                      # 6 * 13.0e9 + 12 * 40 * 5120 * 4096
PEAK = 989.4e12
BASE_STEP = 7.62
JITTER = 0.003
MAX_STEPS = 9000
SAVE_EVERY = 200
LOG_EVERY = 10
CKPT = "/opt/dlami/nvme/ckpt"
BUCKET = "s3://corvid-train-ckpt/hfspot-13b"
PY = "/opt/conda/envs/train/lib/python3.11/site-packages"
BUS = ["53", "64", "75", "86", "97", "a8", "b9", "ca"]
T0 = datetime(2026, 12, 5, 6, 12, 0, tzinfo=UTC).timestamp()


# ----------------------------------------------------------------------------- small helpers
def iso_z(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def hf_ts(t: float) -> str:                      # transformers / DeepSpeed asctime "2026-12-05 06:15:01,234"
    d = datetime.fromtimestamp(t, UTC)
    return d.strftime("%Y-%m-%d %H:%M:%S,") + f"{d.microsecond // 1000:03d}"


def glog(level: str, t: float, tid: int, where: str) -> str:   # "W1205 06:12:02.512000 3388 torch/...py:793]"
    d = datetime.fromtimestamp(t, UTC)
    return f"{level}{d:%m%d %H:%M:%S}.{d.microsecond:06d} {tid} {where}]"


def torch_e(t: float) -> str:                    # "[E1205 06:12:02.512345678 "
    d = datetime.fromtimestamp(t, UTC)
    return f"{d:%m%d %H:%M:%S}.{d.microsecond:06d}{d.microsecond % 997:03d}"


def sky_ts(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%m-%d %H:%M:%S")


def syslog_ts(t: float) -> str:
    d = datetime.fromtimestamp(t, UTC)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond:06d}+00:00"


def fmt_interval(s: float) -> str:               # tqdm.format_interval
    s = int(s)
    h, r = divmod(s, 3600)
    m, sec = divmod(r, 60)
    return f"{h:d}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


@dataclass
class VM:
    host: str
    ip: str
    iid: str
    skew: float
    boot: float
    end: float = 0.0                            # when the VM stops existing
    end_reason: str = "user"                     # "spot" | "user"
    lines: list[tuple[float, str]] = field(default_factory=list)   # syslog (true time, text)


@dataclass
class Save:
    step: int
    start: float
    end: float


@dataclass
class Att:
    k: int
    job: int
    vms: list[VM]
    loaded: int
    start: float = 0.0
    first: float = 0.0
    steps: dict[int, tuple[float, float]] = field(default_factory=dict)   # step -> (start, end)
    saves: list[Save] = field(default_factory=list)
    root: float = 0.0
    exit: float = 0.0
    end: str = ""
    last_step: int = 0
    eval_span: tuple[float, float] | None = None
    synced: dict[int, int] = field(default_factory=dict)      # save step -> shard files that reached S3


class Camp:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.used_ips: set[str] = set()
        self.events: list[tuple[float, dict]] = []
        self.ctrl: dict[int, list[tuple[float, str]]] = {}
        self.vms_all: list[VM] = []

    # ------------------------------------------------------------------ fleet
    def new_vm(self, boot: float) -> VM:
        r = self.rng
        while True:
            ip = f"10.42.{r.randint(1, 62)}.{r.randint(4, 250)}"
            if ip not in self.used_ips:
                break
        self.used_ips.add(ip)
        vm = VM(host="ip-" + ip.replace(".", "-"), ip=ip, iid="i-0" + "".join(r.choice("0123456789abcdef") for _ in range(16)),
                skew=r.uniform(-0.8, 0.8), boot=boot)
        self.vms_all.append(vm)
        self.boot_syslog(vm)
        return vm

    def cluster(self, boot: float) -> list[VM]:
        return [self.new_vm(boot + self.rng.uniform(0, 25)) for _ in range(NODES)]

    def sys(self, vm: VM, t: float, proc: str, msg: str) -> None:
        vm.lines.append((t, f"{proc}: {msg}"))

    def kern(self, vm: VM, t: float, msg: str) -> None:
        vm.lines.append((t, f"kernel: {msg}"))

    def boot_syslog(self, vm: VM) -> None:
        t = vm.boot
        self.kern(vm, t, "Linux version 6.8.0-1019-aws (buildd@lcy02-amd64-081) (x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #21-Ubuntu SMP Wed Nov 13 09:42:07 UTC 2026")
        self.kern(vm, t + 0.01, "Command line: BOOT_IMAGE=/vmlinuz-6.8.0-1019-aws root=PARTUUID=7a1c44e0-01 ro console=tty1 console=ttyS0 nvme_core.io_timeout=4294967295")
        self.kern(vm, t + 1.2, "efa: loading out-of-tree module taints kernel.")
        self.kern(vm, t + 1.3, "efa 0000:52:00.0: Setup irq:201 name:efa-mgmnt@pci:0000:52:00.0")
        self.sys(vm, t + 4.1, "systemd[1]", "Started chrony.service - chrony, an NTP client/server.")
        self.sys(vm, t + 6.3, "cloud-init[1204]", f"Cloud-init v. 24.3.1-0ubuntu0~24.04.2 running 'modules:config' at {datetime.fromtimestamp(t + 6, UTC):%a, %d %b %Y %H:%M:%S} +0000. Up 6.31 seconds.")
        self.kern(vm, t + 9.5, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.08  Tue Nov 18 04:11:09 UTC 2026")
        self.sys(vm, t + 11.0, "nvidia-fabricmanager[1733]", "Successfully configured all the available NVSwitches to route GPU NVLink traffic. NVLink Peer-to-Peer support will be enabled once the GPUs are successfully registered with the NVLink fabric.")
        self.sys(vm, t + 14.0, "chronyd[1011]", "Selected source 169.254.169.123")
        self.sys(vm, t + 18.0, "amazon-cloudwatch-agent[1390]", "2026/12/05 cloudwatch-agent: the config has been validated")

    def vm_gone(self, vm: VM, t: float, reason: str, notice: bool) -> None:
        vm.end, vm.end_reason = t, reason
        if notice or reason == "user":
            self.sys(vm, t - 0.4, "systemd-logind[1021]", "Power key pressed short.")
            self.sys(vm, t - 0.3, "systemd-logind[1021]", "Powering off...")
            self.sys(vm, t - 0.2, "systemd[1]", "Stopping session-1.scope - Session 1 of User ubuntu...")
            self.sys(vm, t - 0.1, "systemd[1]", "Stopping amazon-cloudwatch-agent.service - Amazon CloudWatch Agent...")
        self.event(t + 0.6, "EC2 Instance State-change Notification", vm, {"state": "shutting-down"})
        self.event(t + self.rng.uniform(40, 70), "EC2 Instance State-change Notification", vm, {"state": "terminated"})

    def event(self, t: float, kind: str, vm: VM, extra: dict) -> None:
        r = self.rng
        ev = {"version": "0", "id": "%08x-%04x-%04x-%04x-%012x" % (r.getrandbits(32), r.getrandbits(16), r.getrandbits(16), r.getrandbits(16), r.getrandbits(48)),
              "detail-type": kind, "source": "aws.ec2", "account": "418276530912",
              "time": datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "region": "us-east-1",
              "resources": [f"arn:aws:ec2:us-east-1:418276530912:instance/{vm.iid}"],
              "detail": {"instance-id": vm.iid, **extra}}
        self.events.append((t, ev))

    def c(self, job: int, t: float, where: str, msg: str, level: str = "I") -> None:
        for i, part in enumerate(msg.split("\n")):
            self.ctrl.setdefault(job, []).append((t, f"{level} {sky_ts(t)} {where}] {part}" if i == 0 else part))

    def monitor(self, job: int, a: float, b: float) -> None:
        t = a + self.rng.uniform(5, 20)
        while t < b:
            self.c(job, t, "utils.py:262", "=== Checking the job status... ===")
            self.c(job, t + 1.6, "utils.py:270", "Job status: JobStatus.RUNNING")
            self.c(job, t + 1.7, "utils.py:271", "==================================")
            t += 20.0 + self.rng.uniform(0.5, 2.5) if b - t < 600 else 3600.0 * self.rng.uniform(0.5, 1.0)


# ----------------------------------------------------------------------------- the timeline
def step_len(rng: random.Random) -> float:
    return BASE_STEP * (1.0 + rng.gauss(0.0, JITTER))


def save_len(rng: random.Random) -> float:
    return rng.uniform(48.0, 62.0)


def train(cp: Camp, att: Att, until_step: int, *, eval_at: int | None = None) -> None:
    """Steps loaded+1 .. until_step, saves every SAVE_EVERY (completed), optional eval after a step."""
    rng = cp.rng
    t = att.first
    for s in range(att.loaded + 1, until_step + 1):
        d = step_len(rng)
        att.steps[s] = (t, t + d)
        t += d
        if s % SAVE_EVERY == 0 and s != MAX_STEPS:
            d2 = save_len(rng)
            att.saves.append(Save(s, t, t + d2))
            t += d2
        if eval_at is not None and s == eval_at:
            att.eval_span = (t, t + rng.uniform(74.0, 82.0))
            t = att.eval_span[1]
    att.last_step = until_step


def last_end(att: Att) -> float:
    """End of the last step or save or eval of the attempt."""
    e = att.steps[att.last_step][1]
    if att.saves and att.saves[-1].step == att.last_step:
        e = att.saves[-1].end
    if att.eval_span and att.eval_span[0] >= e - 1e-6:
        e = att.eval_span[1]
    return e


def build(cp: Camp) -> list[Att]:
    r = cp.rng
    atts: list[Att] = []
    # 1: job 41, reclaim with notice
    c1 = cp.cluster(T0 - 420)
    a1 = Att(1, 41, c1, 0, start=T0)
    a1.first = T0 + r.uniform(205, 230)
    n1 = 1620 + r.randint(5, 30)
    train(cp, a1, n1)
    a1.root = a1.steps[n1][1] + r.uniform(1.5, 5.5)          # B1 powered off mid-step n1+1
    a1.exit = a1.root + r.uniform(22, 30)
    a1.end = "spot_notice"
    atts.append(a1)
    # 2: job 41 recovered onto c2, host OOM on C2
    s2 = a1.exit + r.uniform(1500, 2100)
    c2 = cp.cluster(s2 - 400)
    a2 = Att(2, 41, c2, 1600, start=s2)
    a2.first = s2 + r.uniform(300, 330)
    n2 = 2860 + r.randint(2, 30)
    train(cp, a2, n2)
    a2.root = a2.steps[n2][1] + r.uniform(2.0, 5.0)
    a2.exit = a2.root + r.uniform(18, 26)
    a2.end = "host_oom"
    atts.append(a2)
    # 3: same cluster, divergence, user cancel
    s3 = a2.exit + r.uniform(150, 210)
    a3 = Att(3, 41, c2, 2800, start=s3)
    a3.first = s3 + r.uniform(290, 320)
    d0 = 3810 + 10 * r.randint(0, 4)                         # first diverged step, a logging step
    n3 = d0 + 100 + r.randint(0, 30)                         # cancelled before the save of step 4000
    train(cp, a3, n3)
    a3.root = a3.steps[d0][1]
    a3.exit = a3.steps[n3][1] + r.uniform(2.0, 5.0) + 4.0    # cancel lands mid-step, launchers exit 4 s later
    a3.end = "divergence"
    a3.d0 = d0  # type: ignore[attr-defined]
    atts.append(a3)
    # 4: job 44, rollback to two saves before the divergence, eval then CUDA OOM
    saves3 = [s.step for s in a3.saves if s.step < d0]
    back = saves3[-2]
    s4 = a3.exit + r.uniform(2700, 3300)
    c3 = cp.cluster(s4 - 380)
    a4 = Att(4, 44, c3, back, start=s4)
    a4.first = s4 + r.uniform(300, 330)
    ev = (back // 250 + 1) * 250
    train(cp, a4, ev, eval_at=ev)
    a4.root = a4.eval_span[1] + r.uniform(3.0, 6.0)          # type: ignore[index]
    a4.exit = a4.root + r.uniform(15, 22)
    a4.end = "cuda_oom"
    atts.append(a4)
    # 5: job 45, same rollback checkpoint, reclaim without notice of D4
    s5 = a4.exit + r.uniform(1300, 1700)
    c4 = cp.cluster(s5 - 400)
    a5 = Att(5, 45, c4, back, start=s5)
    a5.first = s5 + r.uniform(300, 330)
    n5 = 5400 + r.randint(2, 3)                              # D4 dies while uploading its shards of 5400
    train(cp, a5, n5)
    a5.root = a5.steps[n5][1] + r.uniform(1.0, 6.0)
    a5.exit = a5.root + r.uniform(55, 85)                    # SkyPilot notices and tears the cluster down
    a5.end = "spot_silent"
    atts.append(a5)
    # 6: job 45 recovered on c5, loads the save before the lost one; Xid 79 on C5
    lost = max(s.step for s in a5.saves)
    s6 = a5.exit + r.uniform(1500, 2000)
    c5 = cp.cluster(s6 - 400)
    c5[1].skew = -52.0 - r.uniform(0, 1.5)                   # B5: chrony never synchronised
    c5[1].lines = [x for x in c5[1].lines if "Selected source" not in x[1]]
    a6 = Att(6, 45, c5, lost - SAVE_EVERY, start=s6)
    a6.first = s6 + r.uniform(300, 330)
    n6 = 6100 + r.randint(5, 40)
    train(cp, a6, n6)
    a6.root = a6.steps[n6][1] + r.uniform(1.0, 6.0)
    a6.exit = a6.root + r.uniform(35, 50)
    a6.end = "xid79"
    atts.append(a6)
    # 7: job 47, corrupted shard
    s7 = a6.exit + r.uniform(1700, 2300)
    c6 = cp.cluster(s7 - 400)
    a7 = Att(7, 47, c6, max(s.step for s in a6.saves), start=s7)
    a7.first = s7 + r.uniform(300, 330)
    n7 = 6780 + r.randint(2, 30)
    train(cp, a7, n7)
    a7.root = a7.steps[n7][1] + r.uniform(0.5, 3.0)
    a7.exit = a7.root + r.uniform(16, 24)
    a7.end = "data_error"
    atts.append(a7)
    # 8: job 48, completes
    s8 = a7.exit + r.uniform(2200, 2800)
    c7 = cp.cluster(s8 - 400)
    a8 = Att(8, 48, c7, max(s.step for s in a7.saves), start=s8)
    a8.first = s8 + r.uniform(300, 330)
    train(cp, a8, MAX_STEPS)
    fs = a8.steps[MAX_STEPS][1]
    a8.saves.append(Save(MAX_STEPS, fs, fs + save_len(r)))
    a8.root = 0.0
    a8.exit = a8.saves[-1].end + r.uniform(150, 190)          # "Training completed", save_model, final sync
    a8.end = "complete"
    atts.append(a8)
    return atts


# ----------------------------------------------------------------------------- ledger
def ledger(atts: list[Att]) -> tuple[dict[str, float], float, dict[int, float]]:
    cats = dict.fromkeys(("productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute",
                          "hang", "restart", "startup", "idle"), 0.0)
    per_att_lost: dict[int, float] = {}
    for i, a in enumerate(atts):
        keep = min([b.loaded for b in atts[i + 1:]], default=MAX_STEPS) if a.end != "complete" else MAX_STEPS
        prod = sum(e - s for st, (s, e) in a.steps.items() if st <= keep)
        ck = sum(s.end - s.start for s in a.saves)
        cats["startup"] += a.first - a.start
        cats["productive"] += prod
        cats["checkpoint"] += ck
        if a.end == "complete":
            tail = a.exit - a.saves[-1].end
            cats["checkpoint"] += tail
            assert abs((a.exit - a.first) - prod - ck - tail) < 1e-6
            lost = a.first - a.start
        else:
            assert all(s.end <= a.root for s in a.saves)
            rec = (a.root - a.first) - prod - ck
            assert rec > 0, (a.k, rec)
            cats["recompute"] += rec
            cats["hang"] += a.exit - a.root
            nxt = atts[i + 1].start
            cats["restart"] += nxt - a.exit
            lost = rec + (a.exit - a.root) + (nxt - a.exit) + (a.first - a.start)
        per_att_lost[a.k] = lost * GPUS / 3600.0
    total = (atts[-1].exit - atts[0].start)
    assert abs(sum(cats.values()) - total) < 1e-3, (sum(cats.values()), total)
    return {k: round(v * GPUS / 3600.0, 4) for k, v in cats.items()}, round(total * GPUS / 3600.0, 4), per_att_lost


# ----------------------------------------------------------------------------- job log writers
class JobLog:
    """One run's `sky jobs logs` stream: physical lines with SkyPilot's node prefixes, sorted by true time."""

    def __init__(self, cp: Camp, att: Att) -> None:
        self.cp, self.att = cp, att
        self.rows: list[tuple[float, int, str]] = []
        self.seq = 0
        r = cp.rng
        self.pids = [r.randint(2800, 3900) for _ in range(NODES)]
        self.lpids = [[r.randint(4100, 9800) + 3 * g for g in range(GPN)] for _ in range(NODES)]
        self.run_pids = [r.randint(3000, 3600) for _ in range(NODES)]

    def prefix(self, n: int) -> str:
        if n == 0:
            return f"(head, rank=0, pid={self.pids[0]}) "
        return f"(worker{n}, rank={n}, pid={self.pids[n]}, ip={self.att.vms[n].ip}) "

    def put(self, t: float, n: int, text: str) -> None:
        for part in text.split("\n"):
            self.seq += 1
            self.rows.append((t, self.seq, self.prefix(n) + part))

    def raw(self, t: float, text: str) -> None:
        self.seq += 1
        self.rows.append((t, self.seq, text))

    def clock(self, n: int, t: float) -> float:
        return t + self.att.vms[n].skew

    def render(self) -> str:
        self.rows.sort(key=lambda x: (x[0], x[1]))
        return "\n".join(r[2] for r in self.rows) + "\n"


def nccl_init(jl: JobLog, t: float) -> None:
    r = jl.cp.rng
    comm = r.getrandbits(64)
    for n, vm in enumerate(jl.att.vms):
        for g in range(GPN):
            rank = n * GPN + g
            pfx = f"{vm.host}:{jl.lpids[n][g]}:{jl.lpids[n][g]}"
            tt = t + r.uniform(0, 2.0)
            if rank == 0:
                jl.put(tt, n, f"{pfx} [0] NCCL INFO NCCL version 2.21.5+cuda12.4")
            jl.put(tt + 0.1, n, f"{pfx} [{g}] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.13.2-aws")
            jl.put(tt + 0.2, n, f"{pfx} [{g}] NCCL INFO NET/OFI Selected Provider is efa (found 32 nics)")
            jl.put(tt + 0.3, n, f"{pfx} [{g}] NCCL INFO Using network AWS Libfabric")
            tid = jl.lpids[n][g] + 57
            jl.put(tt + 3.0, n, f"{vm.host}:{jl.lpids[n][g]}:{tid} [{g}] NCCL INFO ncclCommInitRank comm 0x{0x55d000000000 + r.getrandbits(28):x} rank {rank} nranks {GPUS} cudaDev {g} nvmlDev {g} busId {BUS[g]}000 commId 0x{comm:016x} - Init COMPLETE")


def warnings_block(jl: JobLog, t: float) -> None:
    for n in range(NODES):
        tt = t + jl.cp.rng.uniform(0, 3)
        jl.put(tt, n, f"{PY}/torch/utils/checkpoint.py:1399: FutureWarning: `torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` instead.")
        jl.put(tt + 0.01, n, "  with device_autocast_ctx, torch.cpu.amp.autocast(**cpu_autocast_kwargs), recompute_context:  # type: ignore[attr-defined]")
        jl.put(tt + 0.4, n, f"[WARNING|modeling_llama.py:1031] {hf_ts(jl.clock(n, tt + 0.4))} >> `use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`.")


def launch_block(jl: JobLog, rollback_lr: bool, prev: Att | None) -> float:
    """Setup lines, the run command, the launcher, DeepSpeed and Trainer init up to the bar's creation. Returns its time."""
    a, r = jl.att, jl.cp.rng
    t = a.start
    for n in range(NODES):
        sp = r.randint(1800, 2600)
        pre = f"(setup pid={sp}) " if n == 0 else f"(setup pid={sp}, ip={a.vms[n].ip}) "
        for msg in ("Requirement already satisfied: transformers==4.46.3 in /opt/conda/envs/train/lib/python3.11/site-packages (4.46.3)",
                    "Requirement already satisfied: deepspeed==0.15.4 in /opt/conda/envs/train/lib/python3.11/site-packages (0.15.4)",
                    "Requirement already satisfied: accelerate==1.1.1 in /opt/conda/envs/train/lib/python3.11/site-packages (1.1.1)",
                    "[ckpt-sync] on_save hook installed: aws s3 sync /opt/dlami/nvme/ckpt " + BUCKET + "/ckpt after every save"):
            jl.raw(t - 40 + r.uniform(0, 5), pre + msg)
    lr = "1e-4" if rollback_lr else "2e-4"
    extra = " --eval_strategy steps --eval_steps 250 --per_device_eval_batch_size 16" if a.k == 4 else ""
    jl.put(t + 0.1, 0, f"+ accelerate launch --config_file ds_zero3.yaml --num_machines 4 --num_processes 32 --machine_rank $SKYPILOT_NODE_RANK --main_process_ip {a.vms[0].ip} --main_process_port 29500 train_cpt.py --model_name_or_path corvid/llama-13b-base --dataset_dir s3://corvid-data/cpt-mix-v3 --bf16 --gradient_checkpointing --per_device_train_batch_size 4 --gradient_accumulation_steps 2 --learning_rate {lr} --max_steps 9000 --logging_steps 10 --save_steps 200 --save_total_limit 4 --ddp_timeout 1800 --output_dir {CKPT}{extra}")
    # the run script's resume logic: sync S3 down, pick the newest complete checkpoint
    if a.loaded:
        for n in range(NODES):
            jl.put(t + 0.3 + r.uniform(0, 0.3), n, f"download: s3://corvid-train-ckpt/hfspot-13b/ckpt/checkpoint-{a.loaded}/trainer_state.json to ../../opt/dlami/nvme/ckpt/checkpoint-{a.loaded}/trainer_state.json")
        if a.k == 6 and prev is not None:
            have = prev.synced.get(a.loaded + SAVE_EVERY, 0)
            jl.put(t + 1.0, 0, f"[resume] checkpoint-{a.loaded + SAVE_EVERY}: {have} of {GPUS} zero shard files in {BUCKET}/ckpt, incomplete, skipped")
        if a.k == 4:
            jl.put(t + 1.0, 0, f"[resume] --resume_from_checkpoint {CKPT}/checkpoint-{a.loaded} (set by hand)")
        else:
            jl.put(t + 1.0, 0, f"[resume] newest complete checkpoint: {CKPT}/checkpoint-{a.loaded}")
    else:
        jl.put(t + 1.0, 0, "[resume] no checkpoint in " + BUCKET + "/ckpt, starting from scratch")
    for n in range(NODES):
        tt = t + 2.0 + r.uniform(0, 0.4)
        tid = jl.run_pids[n]
        w = glog("W", jl.clock(n, tt), tid, "torch/distributed/run.py:793")
        jl.put(tt, n, f"{w} ")
        jl.put(tt, n, f"{w} *****************************************")
        jl.put(tt, n, f"{w} Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. ")
        jl.put(tt, n, f"{w} *****************************************")
        jl.put(tt + 9.0, n, f"[{hf_ts(jl.clock(n, tt + 9.0))}] [INFO] [real_accelerator.py:219:get_accelerator] Setting ds_accelerator to cuda (auto detect)")
    nccl_init(jl, t + 40)
    jl.put(t + 44, 0, f"[{hf_ts(jl.clock(0, t + 44))}] [INFO] [config.py:1003:print]   zero_optimization ............ stage=3 offload_param=None offload_optimizer=None contiguous_gradients=True overlap_comm=True")
    jl.put(t + 46, 0, f"[INFO|tokenization_utils_base.py:2470] {hf_ts(jl.clock(0, t + 46))} >> loading file tokenizer.json")
    jl.put(t + 61, 0, "Token indices sequence length is longer than the specified maximum sequence length for this model (6211 > 4096). Running this sequence through the model will result in indexing errors")
    tb = a.first - r.uniform(1.0, 3.0) - (0 if not a.loaded else 0)
    t_run = tb - r.uniform(40, 120) if a.loaded else tb - 6.0
    if a.loaded:
        jl.put(t_run, 0, f"[INFO|trainer.py:3053] {hf_ts(jl.clock(0, t_run))} >> Loading model from {CKPT}/checkpoint-{a.loaded}.")
        jl.put(t_run + 1, 0, f"[{hf_ts(jl.clock(0, t_run + 1))}] [INFO] [engine.py:3066:_load_checkpoint] rank=0 loading checkpoint from {CKPT}/checkpoint-{a.loaded}/global_step{a.loaded}/mp_rank_00_model_states.pt")
    h = tb - 4.0
    block = ["***** Running training *****", "  Num examples = 1,152,000", "  Num Epochs = 1",
             "  Instantaneous batch size per device = 4",
             "  Total train batch size (w. parallel, distributed & accumulation) = 256",
             "  Gradient Accumulation steps = 2", "  Total optimization steps = 9,000",
             "  Number of trainable parameters = 13,015,864,320"]
    if a.loaded:
        block += ["  Continuing training from checkpoint, will skip to saved global_step", "  Continuing training from epoch 0",
                  f"  Continuing training from global step {a.loaded}",
                  f"  Will skip the first 0 epochs then the first {a.loaded * 2} batches in the first epoch."]
    for i, b in enumerate(block):
        line = [2314, 2315, 2316, 2317, 2320, 2321, 2322, 2323, 2339, 2340, 2341, 2343][min(i, 11)]
        jl.put(h + 0.001 * i, 0, f"[INFO|trainer.py:{line}] {hf_ts(jl.clock(0, h))} >> {b}")
    warnings_block(jl, a.first + 1.0)
    return tb


class Bar:
    """Rank 0's tqdm bar: every redraw is '\\r' + the bar; tqdm.write clears it and ends the physical line."""

    def __init__(self, jl: JobLog, tb: float, n0: int) -> None:
        self.jl, self.tb, self.n = jl, tb, n0
        self.buf = ""
        self.t_last, self.ema_dn, self.ema_dt = tb, None, None
        self.buf_t = tb
        self.draw(tb)

    def draw(self, t: float) -> None:
        el = t - self.tb
        if self.ema_dn is None or self.ema_dt is None or self.ema_dt <= 0:
            rate = None
        else:
            rate = self.ema_dn / self.ema_dt
        pct = 100.0 * self.n / MAX_STEPS
        fill = self.n * 10 / MAX_STEPS
        full = int(fill)
        part = " ▏▎▍▌▋▊▉"[int((fill - full) * 8)] if full < 10 else ""
        bar = ("█" * full + part).ljust(10)
        if rate:
            rem = fmt_interval((MAX_STEPS - self.n) / rate)
            rs = f"{rate:5.2f}it/s" if rate >= 1 else f"{1 / rate:5.2f}s/it"
        else:
            rem, rs = "?", "?it/s"
        self.buf += f"\r{pct:3.0f}%|{bar}| {self.n}/{MAX_STEPS} [{fmt_interval(el)}<{rem}, {rs}]"

    def update(self, t: float, n: int) -> None:
        dn, dt = n - self.n, t - self.t_last
        if self.ema_dn is None:
            self.ema_dn, self.ema_dt = float(dn), dt
        else:
            self.ema_dn = 0.3 * dn + 0.7 * self.ema_dn
            self.ema_dt = 0.3 * dt + 0.7 * (self.ema_dt or dt)
        self.n, self.t_last = n, t
        self.draw(t)

    def write(self, t: float, msg: str) -> None:
        self.buf += "\r" + " " * 78 + "\r" + msg
        self.flush(t)
        self.draw(t)

    def flush(self, t: float) -> None:
        if self.buf:                             # NOTE: SkyPilot emits a physical line when its newline arrives
            self.jl.put(t, 0, self.buf)
        self.buf, self.buf_t = "", t

    def inline(self, t: float, line: str) -> None:
        """A logging line written while the bar is drawn: it lands after the bar on the same physical line."""
        self.buf += line
        self.flush(t)


def lr_at(step: int, peak: float) -> float:
    if step < 200:
        return peak * step / 200
    return 0.1 * peak + 0.9 * peak * 0.5 * (1 + math.cos(math.pi * (step - 200) / (MAX_STEPS - 200)))


def loss_at(step: int, rng: random.Random) -> float:
    return 1.72 + 0.9 * math.exp(-step / 1400.0) + rng.gauss(0, 0.018)


def save_lines(jl: JobLog, bar: Bar, sv: Save) -> None:
    a, r = jl.att, jl.cp.rng
    bar.inline(sv.start + 0.05, f"[INFO|trainer.py:3801] {hf_ts(jl.clock(0, sv.start + 0.05))} >> Saving model checkpoint to {CKPT}/checkpoint-{sv.step}")
    jl.put(sv.start + 0.3, 0, f"[{hf_ts(jl.clock(0, sv.start + 0.3))}] [INFO] [logging.py:128:log_dist] [Rank 0] [Torch] Checkpoint global_step{sv.step} is about to be saved!")
    last_rank = r.randrange(GPUS)
    for n in range(NODES):
        for g in range(GPN):
            rank = n * GPN + g
            te = sv.end - (0.0 if rank == last_rank else r.uniform(0.3, 6.0))
            jl.put(te, n, f"[{hf_ts(jl.clock(n, te))}] [INFO] [torch_checkpoint_engine.py:33:commit] [Torch] Checkpoint global_step{sv.step} is ready now!")
    old = sv.step - 4 * SAVE_EVERY
    if old > 0 and old > a.loaded - 4 * SAVE_EVERY:
        jl.put(sv.end + 0.2, 0, f"[INFO|trainer.py:3911] {hf_ts(jl.clock(0, sv.end + 0.2))} >> Deleting older checkpoint [{CKPT}/checkpoint-{old}] due to args.save_total_limit")


def sidecar(jl: JobLog, upto: float, cut: float | None) -> None:
    """Each VM's on-save upload (`aws s3 sync` in the background): its 8 ZeRO shard files, 35-55 s after a save."""
    a, r = jl.att, jl.cp.rng
    for s in a.saves:
        a.synced[s.step] = 0
        for n in range(NODES):
            t0 = s.end + r.uniform(2.0, 6.0)
            dur = r.uniform(35.0, 55.0)
            for g in range(GPN):
                t = t0 + (g + 1) * dur / GPN
                if t > upto or (a.vms[n].end and t > a.vms[n].end) or (cut is not None and n == NODES - 1 and t > cut):
                    break
                rank = n * GPN + g
                jl.put(t, n, f"upload: ../../opt/dlami/nvme/ckpt/checkpoint-{s.step}/global_step{s.step}/bf16_zero_pp_rank_{rank}_mp_rank_00_optim_states.pt to {BUCKET}/ckpt/checkpoint-{s.step}/global_step{s.step}/bf16_zero_pp_rank_{rank}_mp_rank_00_optim_states.pt")
                a.synced[s.step] += 1
            if n == 0 and t0 + dur + 1 < upto:
                jl.put(t0 + dur + 1, n, f"upload: ../../opt/dlami/nvme/ckpt/checkpoint-{s.step}/trainer_state.json to {BUCKET}/ckpt/checkpoint-{s.step}/trainer_state.json")


def training_stream(jl: JobLog, tb: float, *, until: float, peak: float, diverge_from: int | None = None) -> Bar:
    a, r = jl.att, jl.cp.rng
    bar = Bar(jl, tb, 0)
    saves = {s.step: s for s in a.saves}
    for st in sorted(a.steps):
        s_end = a.steps[st][1]
        if s_end > until:
            break
        bar.update(s_end, st)
        if st % LOG_EVERY == 0:
            if diverge_from is not None and st >= diverge_from:
                loss = round(7.0 + 2.0 * r.random(), 4)
                gn = "nan"
            else:
                loss = round(loss_at(st, r), 4)
                gn = repr(0.28 + 0.2 * r.random())
            d = f"{{'loss': {loss}, 'grad_norm': {gn}, 'learning_rate': {lr_at(st, peak)!r}, 'epoch': {round(st / MAX_STEPS, 2)}}}"
            bar.write(s_end + 0.02, d)
        if st in saves:
            save_lines(jl, bar, saves[st])
        if a.k == 4 and st % 97 == 0:
            for n in range(NODES):
                jl.put(s_end + 0.5, n, f"[{hf_ts(jl.clock(n, s_end + 0.5))}] [WARNING] [stage3.py:2114:step] 3 pytorch allocator cache flushes since last step. this happens when there is high memory pressure and is detrimental to performance. if this is happening frequently consider adjusting settings to reduce memory consumption. If you are unable to make the cache flushes go away consider adding get_accelerator().empty_cache() calls in your training loop to ensure that all ranks flush their caches at the same time")
    return bar


def child_failed(jl: JobLog, n: int, t: float, fails: list[tuple[int, int, str]]) -> None:
    """torch.distributed.elastic's ChildFailedError block under accelerate, printed by node n's launcher."""
    vm = jl.att.vms[n]
    stamp = datetime.fromtimestamp(jl.clock(n, t), UTC).strftime("%Y-%m-%d_%H:%M:%S")
    lines = ["Traceback (most recent call last):",
             '  File "/opt/conda/envs/train/bin/accelerate", line 8, in <module>', "    sys.exit(main())",
             f'  File "{PY}/accelerate/commands/accelerate_cli.py", line 48, in main', "    args.func(args)",
             f'  File "{PY}/accelerate/commands/launch.py", line 1159, in launch_command', "    deepspeed_launcher(args)",
             f'  File "{PY}/accelerate/commands/launch.py", line 852, in deepspeed_launcher', "    distrib_run.run(args)",
             f'  File "{PY}/torch/distributed/run.py", line 910, in run', "    elastic_launch(",
             f'  File "{PY}/torch/distributed/launcher/api.py", line 138, in __call__', "    return launch_agent(self._config, self._entrypoint, list(args))",
             f'  File "{PY}/torch/distributed/launcher/api.py", line 269, in launch_agent', "    raise ChildFailedError(",
             "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
             "============================================================", "train_cpt.py FAILED",
             "------------------------------------------------------------", "Failures:"]
    rest = fails[1:]
    if not rest:
        lines.append("  <NO_OTHER_FAILURES>")
    for i, (rank, code, tb) in enumerate(rest, 1):
        lines += [f"[{i}]:", f"  time      : {stamp}", f"  host      : {vm.host}", f"  rank      : {rank} (local_rank: {rank % GPN})",
                  f"  exitcode  : {code} (pid: {jl.lpids[n][rank % GPN]})", "  error_file: <N/A>", f"  traceback : {tb}"]
    rank, code, tb = fails[0]
    lines += ["------------------------------------------------------------", "Root Cause (first observed failure):", "[0]:",
              f"  time      : {stamp}", f"  host      : {vm.host}", f"  rank      : {rank} (local_rank: {rank % GPN})",
              f"  exitcode  : {code} (pid: {jl.lpids[n][rank % GPN]})", "  error_file: <N/A>", f"  traceback : {tb}",
              "============================================================"]
    for i, ln in enumerate(lines):
        jl.put(t + 0.001 * i, n, ln)


def abort_peers(jl: JobLog, t: float, dead_node: int, *, ofi: bool = True, launcher: bool = True) -> None:
    """The symptom side: the other VMs' OFI completion errors, watchdog aborts and launcher failures."""
    a, r = jl.att, jl.cp.rng
    for n in range(NODES):
        if n == dead_node:
            continue
        vm = a.vms[n]
        t0 = t + r.uniform(0.5, 4.0)
        for g in range(GPN):
            rank = n * GPN + g
            pid = jl.lpids[n][g]
            if ofi and g % 2 == 0:
                jl.put(t0 + 0.05 * g, n, f"{vm.host}:{pid}:{pid + 91} [{g}] ofi_process_cq:1039 NCCL WARN NET/OFI Request 0x{0x7f3a90000000 + r.getrandbits(24):x} completed with error. RC: 20. Error: unknown error. Completed length: 0, Request: {{ dev: {g}, size: 0, state: CREATED, type: SEND }}")
            te = t0 + 0.4 + 0.03 * g
            jl.put(te, n, f"[rank{rank}]:[E{torch_e(jl.clock(n, te))} ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5")
            jl.put(te + 0.001, n, "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.")
            jl.put(te + 0.002, n, "terminate called after throwing an instance of 'c10::DistBackendError'")
        if launcher:
            tl = t0 + r.uniform(6, 12)
            jl.put(tl, n, f"{glog('E', jl.clock(n, tl), jl.run_pids[n], 'torch/distributed/elastic/multiprocessing/api.py:869')} failed (exitcode: -6) local_rank: 0 (pid: {jl.lpids[n][0]}) of binary: /opt/conda/envs/train/bin/python3.11")
            child_failed(jl, n, tl + 0.5, [(n * GPN + g, -6, f"Signal 6 (SIGABRT) received by PID {jl.lpids[n][g]}") for g in range(GPN)])


# ----------------------------------------------------------------------------- per-attempt stories
def write_attempt(cp: Camp, a: Att, out: Path, prev: Att | None) -> None:
    jl = JobLog(cp, a)
    r = cp.rng
    peak = 1e-4 if a.k >= 4 else 2e-4
    tb = launch_block(jl, rollback_lr=a.k >= 4, prev=prev)
    until = a.exit
    div = getattr(a, "d0", None)
    bar = training_stream(jl, tb, until=until, peak=peak, diverge_from=div)
    B = a.vms
    if a.end == "spot_notice":
        vm = B[1]
        cp.event(a.root - 120.0 - r.uniform(0, 2), "EC2 Spot Instance Interruption Warning", vm, {"instance-action": "terminate"})
        cp.vm_gone(vm, a.root, "spot", notice=True)
        for g in range(0, GPN, 3):
            tt = a.root - 0.3
            jl.put(tt, 1, f"{glog('W', jl.clock(1, tt), jl.run_pids[1], 'torch/distributed/elastic/agent/server/api.py:704')} Received Signals.SIGTERM death signal, shutting down workers")
            jl.put(tt + 0.01, 1, f"{glog('W', jl.clock(1, tt), jl.run_pids[1], 'torch/distributed/elastic/multiprocessing/api.py:897')} Sending process {jl.lpids[1][g]} closing signal SIGTERM")
        bar.flush(a.root)
        abort_peers(jl, a.root, 1)
    elif a.end == "host_oom":
        vm, g = B[2], r.randrange(GPN)
        rank = 2 * GPN + g
        wpid = jl.lpids[2][g] + 40 + r.randint(1, 7)
        t = a.root
        cp.kern(vm, t - 0.35, "pt_data_worker invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0")
        cp.kern(vm, t - 0.34, f"CPU: 61 PID: {wpid + 2} Comm: pt_data_worker Tainted: G           OE      6.8.0-1019-aws #21-Ubuntu")
        cp.kern(vm, t - 0.33, "Hardware name: Amazon EC2 p5.48xlarge/, BIOS 1.0 10/16/2017")
        cp.kern(vm, t - 0.30, "Mem-Info:")
        cp.kern(vm, t - 0.29, "active_anon:481920113 inactive_anon:12390 isolated_anon:0")
        cp.kern(vm, t - 0.05, "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/system.slice/skylet.service,task=pt_data_worker,pid=%d,uid=1000" % wpid)
        cp.kern(vm, t, f"Out of memory: Killed process {wpid} (pt_data_worker) total-vm:96022312kB, anon-rss:71234120kB, file-rss:74112kB, shmem-rss:2097152kB, UID:1000 pgtables:141220kB oom_score_adj:0")
        cp.kern(vm, t + 1.9, f"oom_reaper: reaped process {wpid} (pt_data_worker), now anon-rss:0kB, file-rss:0kB, shmem-rss:2097152kB")
        te = t + 1.2
        tr = [f"[rank{rank}]: Traceback (most recent call last):",
              f'[rank{rank}]:   File "{PY}/torch/utils/data/dataloader.py", line 1251, in _try_get_data',
              f"[rank{rank}]:     data = self._data_queue.get(timeout=timeout)",
              f'[rank{rank}]:   File "{PY}/torch/utils/_contextlib.py", line 1, in get',
              f'[rank{rank}]:   File "{PY}/torch/utils/data/_utils/signal_handling.py", line 73, in handler',
              f"[rank{rank}]:     _error_if_any_worker_fails()",
              f"[rank{rank}]: RuntimeError: DataLoader worker (pid {wpid}) is killed by signal: Killed. ",
              f"[rank{rank}]: ",
              f"[rank{rank}]: The above exception was the direct cause of the following exception:",
              f"[rank{rank}]: ",
              f"[rank{rank}]: Traceback (most recent call last):",
              f'[rank{rank}]:   File "/home/ubuntu/sky_workdir/train_cpt.py", line 231, in <module>',
              f"[rank{rank}]:     main()",
              f'[rank{rank}]:   File "{PY}/transformers/trainer.py", line 2123, in train',
              f"[rank{rank}]:     return inner_training_loop(",
              f'[rank{rank}]:   File "{PY}/torch/utils/data/dataloader.py", line 1264, in _try_get_data',
              f"[rank{rank}]:     raise RuntimeError(f'DataLoader worker (pid(s) {{pids_str}}) exited unexpectedly') from e",
              f"[rank{rank}]: RuntimeError: DataLoader worker (pid(s) {wpid}) exited unexpectedly"]
        bar.flush(te)
        for i, ln in enumerate(tr):
            jl.put(te + 0.001 * i, 2, ln)
        tl = te + 3.0
        for g2 in range(GPN):
            if g2 != g:
                jl.put(tl - 0.5, 2, f"{glog('W', jl.clock(2, tl - 0.5), jl.run_pids[2], 'torch/distributed/elastic/multiprocessing/api.py:897')} Sending process {jl.lpids[2][g2]} closing signal SIGTERM")
        jl.put(tl, 2, f"{glog('E', jl.clock(2, tl), jl.run_pids[2], 'torch/distributed/elastic/multiprocessing/api.py:869')} failed (exitcode: 1) local_rank: {g} (pid: {jl.lpids[2][g]}) of binary: /opt/conda/envs/train/bin/python3.11")
        child_failed(jl, 2, tl + 0.3, [(rank, 1, "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")])
        abort_peers(jl, te + 0.5, 2)
        # decoy: a rebalance recommendation for D2 in the middle of this run; D2 keeps training
        cp.event(a.first + 0.45 * (a.root - a.first), "EC2 Instance Rebalance Recommendation", B[3], {})
    elif a.end == "divergence":
        bar.flush(a.exit - 4.0)
        for n in range(NODES):
            tt = a.exit - 4.0 + r.uniform(0, 0.5)
            jl.put(tt, n, f"{glog('W', jl.clock(n, tt), jl.run_pids[n], 'torch/distributed/elastic/agent/server/api.py:704')} Received Signals.SIGTERM death signal, shutting down workers")
            for g in range(GPN):
                jl.put(tt + 0.01, n, f"{glog('W', jl.clock(n, tt), jl.run_pids[n], 'torch/distributed/elastic/multiprocessing/api.py:897')} Sending process {jl.lpids[n][g]} closing signal SIGTERM")
    elif a.end == "cuda_oom":
        ev0, ev1 = a.eval_span  # type: ignore[misc]
        bar.inline(ev0 + 0.02, f"[INFO|trainer.py:4117] {hf_ts(jl.clock(0, ev0 + 0.02))} >> ")
        jl.put(ev0 + 0.03, 0, "***** Running Evaluation *****")
        jl.put(ev0 + 0.04, 0, f"[INFO|trainer.py:4119] {hf_ts(jl.clock(0, ev0 + 0.04))} >>   Num examples = 8192")
        jl.put(ev0 + 0.05, 0, f"[INFO|trainer.py:4122] {hf_ts(jl.clock(0, ev0 + 0.05))} >>   Batch size = 16")
        n_ev = 16
        ebar = "".join(f"\r{100 * i // n_ev:3d}%|{('█' * (10 * i // n_ev)).ljust(10)}| {i}/{n_ev} [{fmt_interval((ev1 - ev0) * i / n_ev)}<{fmt_interval((ev1 - ev0) * (n_ev - i) / n_ev)},  {(ev1 - ev0) / n_ev:4.2f}s/it]" for i in range(n_ev + 1))
        jl.put(ev1 - 0.1, 0, ebar)
        bar.write(ev1, f"{{'eval_loss': {round(1.93 + 0.02 * r.random(), 4)}, 'eval_runtime': {ev1 - ev0:.4f}, 'eval_samples_per_second': {8192 / (ev1 - ev0):.3f}, 'eval_steps_per_second': {16 / (ev1 - ev0):.3f}, 'epoch': {round(a.last_step / MAX_STEPS, 2)}}}")
        n, g = 1, r.randrange(GPN)
        rank = n * GPN + g
        te = a.root
        free = round(r.uniform(1.1, 2.9), 2)
        tr = [f"[rank{rank}]: Traceback (most recent call last):",
              f'[rank{rank}]:   File "/home/ubuntu/sky_workdir/train_cpt.py", line 231, in <module>',
              f"[rank{rank}]:     main()",
              f'[rank{rank}]:   File "{PY}/transformers/trainer.py", line 2520, in _inner_training_loop',
              f"[rank{rank}]:     tr_loss_step = self.training_step(model, inputs, num_items_in_batch)",
              f'[rank{rank}]:   File "{PY}/deepspeed/runtime/zero/stage3.py", line 2213, in backward',
              f"[rank{rank}]:     self.loss_scaler.backward(loss.float(), retain_graph=retain_graph)",
              f"[rank{rank}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU {g} has a total capacity of 79.10 GiB of which {free} GiB is free. Including non-PyTorch memory, this process has {79.10 - free:.2f} GiB memory in use. Of the allocated memory 70.84 GiB is allocated by PyTorch, and 4.63 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"]
        bar.flush(te)
        for i, ln in enumerate(tr):
            jl.put(te + 0.001 * i, n, ln)
        tl = te + 4.0
        jl.put(tl, n, f"{glog('E', jl.clock(n, tl), jl.run_pids[n], 'torch/distributed/elastic/multiprocessing/api.py:869')} failed (exitcode: 1) local_rank: {g} (pid: {jl.lpids[n][g]}) of binary: /opt/conda/envs/train/bin/python3.11")
        child_failed(jl, n, tl + 0.3, [(rank, 1, "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")])
        abort_peers(jl, te + 1.0, n)
    elif a.end == "spot_silent":
        vm = B[3]
        cp.vm_gone(vm, a.root, "spot", notice=False)
        bar.flush(a.root)
        # the survivors block in NCCL without an error; the cluster is torn down under them
        for n in range(3):
            cp.vm_gone(B[n], a.exit - r.uniform(0.5, 3.0), "user", notice=False)
        tt = a.exit - 4.0
        jl.put(tt, 0, f"{glog('W', jl.clock(0, tt), jl.run_pids[0], 'torch/distributed/elastic/agent/server/api.py:704')} Received Signals.SIGTERM death signal, shutting down workers")
    elif a.end == "xid79":
        vm, g = B[2], r.randrange(GPN)
        rank = 2 * GPN + g
        t = a.root
        cp.kern(vm, t, f"NVRM: Xid (PCI:0000:{BUS[g]}:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
        cp.kern(vm, t + 0.001, f"NVRM: GPU 0000:{BUS[g]}:00.0: GPU has fallen off the bus.")
        cp.kern(vm, t + 0.002, f"NVRM: GPU at PCI:0000:{BUS[g]}:00: GPU-{r.getrandbits(32):08x}-{r.getrandbits(16):04x}-{r.getrandbits(16):04x}-{r.getrandbits(16):04x}-{r.getrandbits(48):012x}")
        cp.kern(vm, t + 0.003, f"NVRM: GPU Board Serial Number: 16542240{r.randint(10000, 99999)}")
        te = t + r.uniform(6, 10)
        bar.flush(te)
        jl.put(te, 2, f"[rank{rank}]:[E{torch_e(jl.clock(2, te))} ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Process group watchdog thread terminated with exception: CUDA error: unspecified launch failure")
        jl.put(te + 0.001, 2, "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.")
        jl.put(te + 0.002, 2, "For debugging consider passing CUDA_LAUNCH_BLOCKING=1")
        jl.put(te + 0.003, 2, "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")
        jl.put(te + 0.004, 2, "terminate called after throwing an instance of 'c10::DistBackendError'")
        tl = te + 5.0
        jl.put(tl, 2, f"{glog('E', jl.clock(2, tl), jl.run_pids[2], 'torch/distributed/elastic/multiprocessing/api.py:869')} failed (exitcode: -6) local_rank: {g} (pid: {jl.lpids[2][g]}) of binary: /opt/conda/envs/train/bin/python3.11")
        child_failed(jl, 2, tl + 0.3, [(rank, -6, f"Signal 6 (SIGABRT) received by PID {jl.lpids[2][g]}")])
        abort_peers(jl, te + 1.0, 2)
        cp.sys(B[1], a.start - 300, "chronyd[1011]", "No suitable source for synchronisation")
        cp.sys(B[1], a.start + 1800, "chronyd[1011]", "Can't synchronise: no selectable sources")
    elif a.end == "data_error":
        n, g = 1 + r.randrange(3), r.randrange(GPN)
        rank = n * GPN + g
        te = a.root
        shard = f"train-{r.randint(100, 999):05d}-of-01024.parquet"
        tr = [f"[rank{rank}]: Traceback (most recent call last):",
              f'[rank{rank}]:   File "/home/ubuntu/sky_workdir/train_cpt.py", line 231, in <module>',
              f"[rank{rank}]:     main()",
              f'[rank{rank}]:   File "{PY}/transformers/trainer.py", line 2474, in _inner_training_loop',
              f"[rank{rank}]:     batch_samples, num_items_in_batch = self.get_batch_samples(epoch_iterator, num_batches)",
              f'[rank{rank}]:   File "{PY}/datasets/iterable_dataset.py", line 1368, in __iter__',
              f"[rank{rank}]:     for key, pa_table in self._iter_arrow():",
              f'[rank{rank}]:   File "{PY}/datasets/packaged_modules/parquet/parquet.py", line 90, in _generate_tables',
              f"[rank{rank}]:     parquet_fragment = ds.ParquetFileFormat().make_fragment(f)",
              f'[rank{rank}]:   File "pyarrow/_dataset.pyx", line 1379, in pyarrow._dataset.FileFormat.make_fragment',
              f'[rank{rank}]:   File "pyarrow/error.pxi", line 92, in pyarrow.lib.check_status',
              f"[rank{rank}]: pyarrow.lib.ArrowInvalid: Could not open Parquet input source '<Buffer>': Parquet magic bytes not found in footer. Either the file is corrupted or this is not a parquet file."]
        jl.put(te - 0.4, n, f"[WARNING|iterable_dataset.py:2011] {hf_ts(jl.clock(n, te - 0.4))} >> reading s3://corvid-data/cpt-mix-v3/{shard}")
        bar.flush(te)
        for i, ln in enumerate(tr):
            jl.put(te + 0.001 * i, n, ln)
        tl = te + 3.5
        jl.put(tl, n, f"{glog('E', jl.clock(n, tl), jl.run_pids[n], 'torch/distributed/elastic/multiprocessing/api.py:869')} failed (exitcode: 1) local_rank: {g} (pid: {jl.lpids[n][g]}) of binary: /opt/conda/envs/train/bin/python3.11")
        child_failed(jl, n, tl + 0.3, [(rank, 1, "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")])
        abort_peers(jl, te + 0.8, n)
    elif a.end == "complete":
        fs = a.saves[-1]
        bar.flush(fs.end)
        jl.put(fs.end + 0.5, 0, f"[INFO|trainer.py:2669] {hf_ts(jl.clock(0, fs.end + 0.5))} >> ")
        jl.put(fs.end + 0.51, 0, "")
        jl.put(fs.end + 0.52, 0, "Training completed. Do not forget to share your model on huggingface.co/models =)")
        jl.put(fs.end + 0.53, 0, "")
        rt = fs.end - tb
        jl.put(fs.end + 0.6, 0, f"{{'train_runtime': {rt:.4f}, 'train_samples_per_second': {(MAX_STEPS - a.loaded) * 256 / rt:.3f}, 'train_steps_per_second': {(MAX_STEPS - a.loaded) / rt:.3f}, 'train_loss': 0.4871, 'epoch': 1.0}}")
        jl.put(fs.end + 0.8, 0, f"[INFO|trainer.py:3801] {hf_ts(jl.clock(0, fs.end + 0.8))} >> Saving model checkpoint to /opt/dlami/nvme/out")
        jl.put(a.exit - 60, 0, f"[INFO|modeling_utils.py:3042] {hf_ts(jl.clock(0, a.exit - 60))} >> Model weights saved in /opt/dlami/nvme/out/model.safetensors.index.json")
        jl.put(a.exit - 2, 0, f"upload: ../../opt/dlami/nvme/out/model.safetensors.index.json to {BUCKET}/final/model.safetensors.index.json")
    # NOTE: the silently reclaimed VM dies while uploading its part of the newest save (the story of attempt 6)
    sidecar(jl, until, a.root if a.end == "spot_silent" else None)
    (out / f"attempt-{a.k}").mkdir(parents=True, exist_ok=True)
    (out / f"attempt-{a.k}" / f"sky-job-{a.job}.log").write_text(jl.render(), encoding="utf-8")
    # cluster tear-downs (the ordinary ones; reclaims are written above)
    for vm in a.vms:
        if not vm.end:
            nxt_same = a.end in ("host_oom",) and a.k == 2
            if not nxt_same:
                cp.vm_gone(vm, a.exit + r.uniform(45, 110), "user", notice=False)


def controller(cp: Camp, atts: list[Att]) -> None:
    r = cp.rng
    for a in atts:
        j = a.job
        first_of_job = all(b.job != j for b in atts if b.k < a.k)
        if first_of_job:
            t = a.start - 560
            cp.c(j, t, "controller.py:240", f"Submitted managed job {j} (task: 0, name: 'hfspot-13b'); SKYPILOT_TASK_ID: sky-{datetime.fromtimestamp(t, UTC):%Y-%m-%d-%H-%M-%S-%f}_hfspot-13b_{j}-0")
            cp.c(j, t + 0.2, "controller.py:258", "Started monitoring.")
            cp.c(j, a.start - 5.5, "recovery_strategy.py:312", "Managed job cluster launched.")
            cp.c(j, a.start - 4.0, "controller.py:281", f"Cluster launch completed in {a.start - 4.0 - t:.2f}s")
        else:
            cp.c(j, a.start - 4.0, "controller.py:690", "Task hfspot-13b recovered, continuing monitoring")
        cp.monitor(j, a.start, a.exit)
        cname = f"hfspot-13b-{j}"
        det = a.exit + r.uniform(8, 20)
        if a.end in ("spot_notice", "spot_silent"):
            if a.end == "spot_silent":
                det = a.exit - r.uniform(6, 9)       # the controller's check starts the tear-down
            cp.c(j, det, "controller.py:545", "Cluster is preempted or failed (status: INIT). Recovering...")
            gone = next(vm for vm in a.vms if vm.end_reason == "spot")
            cp.c(j, det + 0.3, "controller.py:571", "Recent cluster events:\n  %s: Cluster status changed to INIT: instance %s (%s) is terminated"
                 % (datetime.fromtimestamp(det - 5, UTC).strftime("%Y-%m-%d %H:%M:%S"), gone.iid, gone.host))
            cp.c(j, det + 0.5, "controller.py:632", "Cleaning up the preempted or failed cluster...")
            cp.c(j, det + 70, "controller.py:655", "Starting recovery for task 0, it is currently JobStatus.FAILED" if a.end == "spot_notice" else "Starting recovery for task 0, it is currently JobStatus.RUNNING")
            cp.c(j, det + 71, "recovery_strategy.py:716", "Relaunch the cluster skipping the previously launched cloud/region.", level="D")
        elif a.end in ("host_oom", "cuda_oom", "xid79", "data_error"):
            cp.c(j, det, "controller.py:590", "Task 0 failed with status: JobStatus.FAILED")
            cp.c(j, det + 1.2, "controller.py:596", f"The user job failed (JobStatus.FAILED). Please check the logs below.\n== Logs of the user job (ID: {j}) ==\n")
            if a.end == "host_oom":
                cp.c(j, det + 3.0, "controller.py:636", "User program crashed (FAILED). (Retry the job as max_restarts_on_errors is set to 2. [1/2])")
                cp.c(j, det + 3.5, "controller.py:655", "Starting recovery for task 0, it is currently JobStatus.FAILED")
            else:
                cp.c(j, det + 3.0, "controller.py:660", "Task 0 failed and will not be retried")
                cp.c(j, det + 4.0, "controller.py:780", f"Managed job {j} (task: 0) FAILED. Cleaning up the cluster {cname}.")
        elif a.end == "divergence":
            cp.c(j, a.exit - 6.0, "controller.py:812", f"Cancelling managed job {j}: cancellation requested by the user (sky jobs cancel {j}).")
            cp.c(j, a.exit + 9.0, "controller.py:830", f"Managed job {j} (task: 0) CANCELLED. Cleaning up the cluster {cname}.")
        elif a.end == "complete":
            cp.c(j, det, "controller.py:512", "Task 0 succeeded! Getting end time and cleaning up")
            cp.c(j, det + 0.5, "controller.py:530", f"Managed job {j} (task: 0) SUCCEEDED. Cleaning up the cluster {cname}.")


def describe(cp: Camp, atts: list[Att], out: Path) -> None:
    d = out / "cloud" / "describe-instances"
    d.mkdir(parents=True, exist_ok=True)
    for a in atts:
        t = a.exit + 240.0
        insts = []
        for vm in cp.vms_all:
            if vm.boot > t or (vm.end and vm.end + 3600 < t):
                continue
            term = bool(vm.end) and vm.end + 50 < t
            st = {"Code": 48, "Name": "terminated"} if term else ({"Code": 32, "Name": "shutting-down"} if vm.end and vm.end < t else {"Code": 16, "Name": "running"})
            inst = {"InstanceId": vm.iid, "InstanceType": "p5.48xlarge", "InstanceLifecycle": "spot",
                    "LaunchTime": datetime.fromtimestamp(vm.boot - 30, UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00"),
                    "Placement": {"AvailabilityZone": "us-east-1d"}, "PrivateDnsName": f"{vm.host}.ec2.internal",
                    "PrivateIpAddress": vm.ip, "State": st, "StateTransitionReason": ""}
            if vm.end and vm.end < t:
                if vm.end_reason == "spot":
                    inst["StateReason"] = {"Code": "Server.SpotInstanceTermination", "Message": "Server.SpotInstanceTermination: Spot instance termination"}
                else:
                    inst["StateReason"] = {"Code": "Client.UserInitiatedShutdown", "Message": "Client.UserInitiatedShutdown: User initiated shutdown"}
                    inst["StateTransitionReason"] = f"User initiated ({datetime.fromtimestamp(vm.end, UTC):%Y-%m-%d %H:%M:%S} GMT)"
            insts.append(inst)
        doc = {"Reservations": [{"ReservationId": f"r-0{cp.rng.getrandbits(64):016x}", "OwnerId": "418276530912", "Instances": [i]} for i in insts]}
        (d / (datetime.fromtimestamp(t, UTC).strftime("%Y%m%dT%H%M%SZ") + ".json")).write_text(json.dumps(doc, indent=2) + "\n")


def write_all(cp: Camp, atts: list[Att], out: Path) -> None:
    b = out / "bundle"
    runs = b / "runs" / RUN
    runs.mkdir(parents=True, exist_ok=True)
    prev = None
    for a in atts:
        write_attempt(cp, a, runs, prev)
        prev = a
    controller(cp, atts)
    (runs / "controller").mkdir(exist_ok=True)
    for j, rows in cp.ctrl.items():
        rows.sort(key=lambda x: x[0])
        (runs / "controller" / f"sky-jobs-controller-{j}.log").write_text("\n".join(x[1] for x in rows) + "\n")
    (b / "cloud").mkdir(parents=True, exist_ok=True)
    cp.events.sort(key=lambda x: x[0])
    (b / "cloud" / "ec2-events.jsonl").write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for _, e in cp.events))
    describe(cp, atts, b)
    for vm in cp.vms_all:
        # background noise every ~20 min until the VM is gone
        t = vm.boot + 120
        end = vm.end or (atts[-1].exit + 600)
        while t < end - 5:
            cp.sys(vm, t, "systemd[1]", "Started sysstat-collect.service - system activity accounting tool.")
            t += 1200 + cp.rng.uniform(-30, 30)
        rows = sorted(vm.lines, key=lambda x: x[0])
        nd = b / "nodes" / vm.host
        nd.mkdir(parents=True, exist_ok=True)
        (nd / "syslog").write_text("".join(f"{syslog_ts(t + vm.skew)} {vm.host} {txt}\n" for t, txt in rows if not vm.end or t <= vm.end))
    hosts = ",".join(vm.host for vm in cp.vms_all)
    (b / "inventory.toml").write_text(
        "# corvid's training fleet: AWS spot capacity rented through SkyPilot (regenerated from describe-instances)\n"
        f"[providers.{PROVIDER}]\nusd_per_gpu_hour = 3.93\nsupport = \"AWS Support, Business plan\"\n\n"
        f"[clusters.{CLUSTER}]\nprovider = \"{PROVIDER}\"\ngpu = \"H100-SXM\"\ngpus_per_node = 8\n"
        f"interconnect = \"EFA 32x100G\"\nnodes = \"{hosts}\"\n")
    (runs / "run.toml").write_text(
        f"# {RUN}: 13B Llama-style continued pre-training, HF Trainer + DeepSpeed ZeRO-3 under accelerate, SkyPilot managed jobs\n"
        f"cluster = \"{CLUSTER}\"\ngpus = {GPUS}\ntokens_per_step = {TOKENS_PER_STEP}   # 32 x 4 x 2 x 4096\n"
        f"flops_per_token = {FLOPS_PER_TOKEN:.3e}\ncheckpoint_dir = \"{CKPT}\"\n"
        f"launch_command = \"sky jobs launch -n hfspot-13b train_cpt.yaml\"\n")


def truth(cp: Camp, atts: list[Att], out: Path) -> None:
    cats, total, per_lost = ledger(atts)
    a1, a2, a3, a4, a5, a6, a7, _ = atts
    inc = [
        ("preemption", "provider", a1.vms[1].host, [1], a1),
        ("host_oom", "user", a2.vms[2].host, [2], a2),
        ("loss_divergence", "user", None, [3], a3),
        ("cuda_oom", "user", None, [4], a4),
        ("preemption", "provider", a5.vms[3].host, [5], a5),
        ("checkpoint_lost", "provider", None, [5, 6], a6),
        ("gpu_fell_off_bus", "provider", a6.vms[2].host, [6], a6),
        ("user_code_error", "user", None, [7], a7),
    ]
    incidents = []
    for i, (mode, blame, host, attl, a) in enumerate(inc, 1):
        rec = {"id": i, "attempt": attl[-1] if mode == "checkpoint_lost" else attl[0], "attempts": attl, "failure_mode": mode,
               "blame": blame, "host": host, "cluster": CLUSTER, "provider": PROVIDER, "managed_job": a.job}
        if mode == "checkpoint_lost":
            rec.update({"lost_checkpoint_step": a.loaded + SAVE_EVERY, "loaded_step": a.loaded})
        else:
            rec.update({"root_ts": iso_z(a.root), "exit_ts": iso_z(a.exit), "gpu_hours_lost_of_attempt": round(per_lost[a.k], 4)})
        incidents.append(rec)
    decoys: dict[str, str] = {}
    for n in (0, 2, 3):
        decoys[a1.vms[n].host] = "survivor of attempt 1's reclaim of B1: NCCL/OFI errors are symptoms"
    decoys[a2.vms[3].host] = "EC2 Instance Rebalance Recommendation during attempt 2, never interrupted"
    for n in (0, 1, 2):
        decoys[a5.vms[n].host] = "survivor of attempt 5's silent reclaim, torn down by SkyPilot (user-initiated shutdown)"
    for n in (0, 1, 3):
        decoys[a6.vms[n].host] = "symptom of attempt 6's Xid 79 on C5"
    decoys[a6.vms[1].host] = "clock 52 s behind (chrony unsynchronised): its errors read before the Xid 79; a symptom"
    steady = TOKENS_PER_STEP * FLOPS_PER_TOKEN / (GPUS * PEAK * BASE_STEP)
    lost = round(sum(v for k, v in cats.items() if k != "productive"), 4)
    doc = {
        "run": RUN, "gpus": GPUS, "seed": cp.seed, "tokens_per_step": TOKENS_PER_STEP, "flops_per_token": FLOPS_PER_TOKEN,
        "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK, "steady_mfu": round(steady, 4),
        "first_start_ts": iso_z(atts[0].start), "last_end_ts": iso_z(atts[-1].exit), "match_on_attempt": True,
        "clock_skew_s": {vm.host: round(vm.skew, 3) for vm in cp.vms_all},
        "attempts": [{"attempt": a.k, "managed_job": a.job, "hosts": [vm.host for vm in a.vms], "start_ts": iso_z(a.start),
                      "first_step_ts": iso_z(a.first), "exit_ts": iso_z(a.exit), "loaded_step": a.loaded,
                      "last_step": a.last_step, "saves": [s.step for s in a.saves], "end": a.end,
                      "root_ts": iso_z(a.root) if a.root else None} for a in atts],
        "incidents": incidents,
        "forbidden_incidents": [{"failure_mode": "checkpoint_lost", "attempts": [4],
                                 "reason": "attempt 4 rolled back on purpose (learning rate halved after the divergence): not a lost checkpoint"}],
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys,
        "hardware_modes": ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error", "network",
                           "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"],
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: lost},
        "notes": "True UTC (the SkyPilot controller's clock); VM clocks skewed by clock_skew_s. host null matches any host. "
                 "Ledger: see the hf_cloud_spot.py docstring.",
    }
    (out / "truth.json").write_text(json.dumps(doc, indent=1) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261205)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cp = Camp(args.seed)
    atts = build(cp)
    write_all(cp, atts, out)
    truth(cp, atts, out)


if __name__ == "__main__":
    main()
