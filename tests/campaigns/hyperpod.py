#!/usr/bin/env python3
"""Independent campaign "hyperpod": a Megatron-LM run on Amazon SageMaker HyperPod (Slurm) with auto-resume.

Written without reading clusterlab's analysis code. Standard library only, Python 3.11, deterministic
per --seed (gzip members: mtime=0, no name).  Usage: hyperpod.py --out DIR [--seed N]

Writes DIR/truth.json and DIR/bundle/:
  inventory.toml, runs/hyperpod/run.toml
  runs/hyperpod/job-1187/hyperpod-1187.out       ONE sbatch --output file for four attempts: HyperPod
                                                  auto-resume (`srun --auto-resume=1`) re-runs the job
                                                  step inside the same job, so the attempts are only
                                                  visible as restarts in the log and as steps in sacct
  runs/hyperpod/job-1187/nccl/step-<s>/<host>.log  NCCL_DEBUG=INFO (aws-ofi-nccl / EFA) per host and step
  runs/hyperpod/job-1187/steps/rank-NNNNN.jsonl[.gz]  per-rank step records, attempt 3, around the straggler
  runs/hyperpod/job-1203/hyperpod-1203.out[.gz] and nccl/step-0/<host>.log   the clean final job
  nodes/<host>/kern.log (+ kern.log.1.gz rotated) or journal-kernel.txt  kernel logs (host clocks skewed)
  nodes/<host>/health-monitoring-agent.log        HyperPod health-monitoring agent detection events
  nodes/<host>/nvidia-smi-query.csv[.gz]          `nvidia-smi --query-gpu ... -l 60` loop during attempt 3
  scheduler/slurmctld.log, scheduler/sacct.txt

Scenario: run "hyperpod", cluster "hp-p5" (provider "aws-hyperpod"), 16 x ml.p5.48xlarge = 128 H100 GPUs,
Megatron-LM GPT ~34B, TP 8 x PP 2 x DP 8, checkpoints on FSx for Lustre (/fsx).  Truth times are the
Slurm controller's clock (UTC); every node's own clock is off by up to a few seconds.
  attempt 1  job 1187 step 0  fresh start.  Xid 79 on H_XID GPU5 (kernel) -> the HyperPod health-monitoring
             agent reports it ("NPD caught event ... XidHardwareFailure") -> every other rank hits the NCCL
             watchdog (Megatron --distributed-timeout-minutes 10) -> torchrun SIGABRTs -> the step fails ->
             "[Auto Resume] ... ResumeAction=RETRYSTEP ... Job failed - replacing nodes" -> HyperPod replaces
             the instance (same Slurm node name, new EC2 instance) -> "Retrying step. Attempt number: 1"
                                                                           [gpu_fell_off_bus, H_XID]
  attempt 2  job 1187 retry 1  resumes.  The EFA device of H_EFA stops answering: aws-ofi-nccl
             "NET/OFI Request ... completed with error" on H_EFA against three peers, then (a second later)
             on those three peers against H_EFA only; libfabric efa <warn> lines name the peer instance ->
             ProcessGroupNCCL "NCCL error: remote process exited or there was a network error" -> step
             fails -> auto-resume replaces H_EFA (slurmctld reason "Action:Replace")   [network, H_EFA]
  attempt 3  job 1187 retry 2  resumes.  For 500 steps GPU2 of H_HOT runs in HW thermal slowdown
             (nvidia-smi: clocks_throttle_reasons.hw_slowdown / hw_thermal_slowdown Active, SM clock down,
             92 C): its ranks' compute_s +16 %, every step +1.34 s (straggler, no failure)
                                                                           [gpu_throttle, H_HOT]
             Later, during the periodic save at iteration 5500, the FSx for Lustre client on H_FSX loses its
             OST connection and is evicted ("LustreError: 167-0: ...: This client was evicted by ...");
             torch.distributed.checkpoint raises OSError [Errno 108] on H_FSX's ranks -> step fails.  No
             node is unhealthy: auto-resume answers RETRYSTEP and retries on the same nodes.  The save at
             5500 never completed (no "successfully saved"), so 5250 is the latest checkpoint.
                                                                           [filesystem_io, H_FSX]
  attempt 4  job 1187 retry 3  resumes from 5250 with code the user had edited on /fsx in the meantime
             (a new eval metric, --eval-interval 1000).  The first evaluation (after iteration 6000, before
             that iteration's save) raises a RuntimeError (tensor size mismatch) in the user's loss_func on
             every last-stage rank -> step fails; the user scancels job 1187 while auto-resume consults
             the cluster agent.  The fault is the user's code, not the cancel, and not a host.
                                                                           [user_code_error, host null]
  attempt 5  job 1203 (fixed code, same 16 nodes) resumes from 5750, evaluates every 1000 iterations and
             completes at 9000 (final save, "[after training is done]").
  Decoys: Xid 63 + Xid 154 "(GPU Reset Required)" row-remap notice on H_ROWREMAP mid attempt 3 (training
  continues at pace); the three EFA peers of H_EFA (their NET/OFI errors are symptoms); in attempt 1 the 15
  hosts with watchdog timeouts; an FSx "Connection ... was lost" / "Connection restored" blip on the idle
  spare H_SPARE (never allocated to the run) during attempt 4; harmless libfabric "<warn>
  FI_OPT_SHARED_MEMORY_PERMITTED set to false" on every rank at init; NCCL INFO spam; Python
  UserWarnings; lines without their own time stamp (tracebacks, NCCL, auto-resume); truncated last lines;
  gzip files; a rotated kern.log.1.gz.

Ledger (truth.json expected_ledger, GPU-hours = 128 x seconds / 3600; same conventions as campaign1/2):
  attempt start = the step's start (sacct step Start = "Retrying step" line time for retries; job start for
  the first step of a job); attempt exit = the step's end (sacct step End).
  startup    = attempt start -> start of its first training step ("[before the start of training step]")
  productive = kept steps (iteration <= last durable checkpoint of an ended attempt; every step of the
               completed attempt) at their measured duration; inside the straggler window only the
               baseline BASE_STEP counts; evaluation passes of the completed attempt (~9 s each; they are
               work the user asked for) are counted here too
  straggler  = step time above BASE_STEP inside the straggler window (H_HOT)
  checkpoint = durations of the saves that completed, plus the tail after the final save
  recompute  = end of the last durable save of the attempt (or its first step start) -> root event
  hang       = root event -> attempt exit.  Root events: the Xid 79 line; the first NET/OFI error line on
               H_EFA; the FSx "Connection ... was lost" line on H_FSX (inside the doomed save); the
               RuntimeError in the eval
  restart    = attempt exit -> next attempt start (HyperPod node replacement, the user's cancel and fix)
  slowdown = data_stall = idle = 0

Formats, and the public sources where they were seen (text here written anew, values invented):
  * HyperPod auto-resume: aws-samples/awsome-distributed-training (neuronx-distributed llama3 70B HyperPod
    README, and a smaller README with the same sequence): "[Auto Resume] Info: JobID: 82 StepID: 0
    Initiating communication with cluster agent to diagnose health of nodes", "... Response from cluster
    agent: JobId=82, ResumeAction=RETRYSTEP", "... Job failed - replacing nodes", "... Job failed - Droping
    unhealthy nodes", "... Succesfully shrink job to retain healthy nodes <list>", "srun: job 83 queued and
    waiting for resources", "... Job Expansion complete", "... Updating to new node list <list>", "...
    Retrying step. Attempt number: 1" (spelling kept as printed); `srun --auto-resume=1`; node names
    ip-10-1-x-y; the replaced node keeps its name; sinfo "fail" state.  AWS docs "Automatic node recovery
    and auto-resume" (sagemaker-hyperpod-resiliency-slurm-auto-resume); manual replace uses scontrol
    reason "Action:Replace" (sagemaker-hyperpod-resiliency-slurm-replace-faulty-instance).
  * Health-monitoring agent detection event (AWS docs, sagemaker-hyperpod-eks-resiliency-health-monitoring
    -agent): {"level":"info","ts":"...Z","msg":"NPD caught event: %v","details: ":{"severity":"warn",
    "timestamp":"...","reason":"XidHardwareFailure","message":"Node condition NvidiaErrorReboot is now:
    True, reason: XidHardwareFailure, message: \\"NVRM: Xid (PCI:0000:b9:00): 71, ...\\""},
    "HealthMonitoringAgentDetectionEvent":"HealthEvent"}, shown with the CloudWatch time in front.
  * aws-ofi-nccl: "NET/OFI Using aws-ofi-nccl 1.3.0aws", "NET/OFI Selected Provider is efa (found 4 nics)",
    "Using network AWS Libfabric", "NET/OFI Setting NCCL_PROTO to \\"simple\\"" (aws/aws-ofi-nccl #161, #715);
    "NET/OFI Request %p completed with error. RC: %d. Error: %d (%s). Completed length: %ld, Request: %s"
    (aws-ofi-nccl src nccl_ofi_rdma.cpp / sendrecv), request rendering as in #156 ("{ buffer_index: 255,
    dev: 1, size: 0, state: CREATED, direction: SEND }"); libfabric log lines "libfabric:PID:EPOCH::efa:
    ep_ctrl:efa_rdm_ep_set_shared_memory_permitted():1410<warn> FI_OPT_SHARED_MEMORY_PERMITTED set to
    false" (#715) and "libfabric:PID:EPOCH::efa:cq:efa_rdm_txe_handle_error():737<warn> err: 5, message:
    Invalid address My EFA addr: fi_addr_efa://[fe80::..]:0:N My host id: i-.. Peer EFA addr: ... Peer host
    id: i-.. (7)" (#346); the EFA status text "Unresponsive receiver" (ofiwg/libfabric prov/efa
    efa_errno.h, PRs #8889, #10158).  "Channel 00/0 : 0[4] -> 8[4] [send] via NET/AWS Libfabric/4/GDRDMA"
    (#346).  NCCL init lines as in campaign1.py (NVIDIA/nccl issues, e.g. #1597 for "Init timings").
  * NVRM Xid 79 / Xid 63 / Xid 154 lines as in campaign1.py (public issue logs; NVIDIA Xid catalog).
    p5 GPU bus ids 53/64/75/86/97/a8/b9/ca (the HMA example's PCI:0000:b9:00 is one of them).
  * Lustre client (lustre-release ptlrpc/import.c): LCONSOLE_ERROR_MSG(0x167, "%s: This client was evicted
    by %.*s; in progress operations using this service will fail."), printed "LustreError: 167-0: ...";
    the 0x166 "Connection to %.*s (at %s) was lost; in progress operations using this service will wait
    for recovery to complete" and "Connection restored to %s (at %s)"; errno 108 (ESHUTDOWN) seen by the
    application after an eviction (public Lustre troubleshooting notes found with find_string).
  * nvidia-smi --query-gpu CSV: fields clocks_throttle_reasons.hw_slowdown / .hw_thermal_slowdown with
    values "Active" / "Not Active" (nvidia-smi --help-query-gpu text quoted in netdata/netdata #10362,
    huggingface/candle #733; nvidia-smi -q "HW Slowdown", "HW Thermal Slowdown" in kubeflow #68).
  * Megatron-LM iteration / checkpoint / timer lines, torchrun ChildFailedError, ProcessGroupNCCL watchdog
    and "remote process exited or there was a network error", slurmstepd and slurmctld lines: the same
    public sources listed in campaign1.py and campaign2.py; torch.distributed.checkpoint
    "CheckpointException ranks:dict_keys([...])" + "Traceback (most recent call last): (RANK r)" as in
    campaign2.py; Megatron "validation loss at iteration N | lm loss value: ... | lm loss PPL: ... |"
    framed by dashes (megatron/training/training.py evaluate_and_print_results, print_rank_last).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import math
import random
from datetime import UTC, datetime
from pathlib import Path

UTC = UTC

RUN = "hyperpod"
CLUSTER, PROVIDER = "hp-p5", "aws-hyperpod"
USD_PER_GPU_HOUR = 4.91
GPN = 8
NNODES = 16
GPUS = NNODES * GPN  # 128
TP, PP, DP = 8, 2, 8
GBS, SEQ = 256, 8192
TOKENS_PER_STEP = GBS * SEQ  # 2,097,152
FLOPS_PER_TOKEN = 2.451e11  # 6 * 34.4e9 + 12 * 48 * 8192 * 8192
PEAK = 989.4e12
BASE_STEP = 9.620
BASE_COMPUTE, BASE_DATA = 8.350, 0.060
SLOW_FACTOR = 1.16
WINDOW_STEP = BASE_STEP + BASE_COMPUTE * (SLOW_FACTOR - 1.0)  # 10.956
JITTER = 0.0006
SAVE_INTERVAL = 250
LOG_INTERVAL = 5
EVAL_INTERVAL, EVAL_ITERS, EVAL_ITER_S = 1000, 8, 1.17
TRAIN_ITERS = 9000
STRAGGLE = (3400, 3899)
JSONL_MARGIN = 100
WATCHDOG_S = 600
T0 = datetime(2026, 12, 2, 3, 10, 0, tzinfo=UTC).timestamp()
NCCL_VER = "2.23.4"
OFI_VER = "1.13.2-aws"
DRIVER = "550.144.03"
KERNEL = "5.15.0-1072-aws"
CKPT = "/fsx/checkpoints/gpt34b"
FSX = "n4kvzbmv"  # FSx for Lustre mount name (fsname)
FSX_OST = f"{FSX}-OST0003"
FSX_OSS_IP = "10.1.201.37@tcp"
BUS = ["53000", "64000", "75000", "86000", "97000", "a8000", "b9000", "ca000"]
JOB_A, JOB_EXP1, JOB_EXP2, JOB_B = 1187, 1188, 1191, 1203
USER_UID = 2001

HOSTS = [
    "ip-10-1-12-87",
    "ip-10-1-16-50",
    "ip-10-1-25-242",
    "ip-10-1-33-104",
    "ip-10-1-40-177",
    "ip-10-1-45-129",
    "ip-10-1-48-81",
    "ip-10-1-63-78",
    "ip-10-1-65-134",
    "ip-10-1-65-171",
    "ip-10-1-85-226",
    "ip-10-1-92-96",
    "ip-10-1-97-129",
    "ip-10-1-102-184",
    "ip-10-1-115-121",
    "ip-10-1-127-124",
]
SPARES = ["ip-10-1-7-213", "ip-10-1-119-46"]
H_XID, XID_GPU = "ip-10-1-45-129", 5
H_EFA, EFA_GPU = "ip-10-1-85-226", 3
EFA_PEERS = ["ip-10-1-12-87", "ip-10-1-63-78", "ip-10-1-115-121"]
H_HOT, HOT_GPU = "ip-10-1-33-104", 2
H_FSX = "ip-10-1-97-129"
H_ROWREMAP = "ip-10-1-102-184"
H_SPARE = "ip-10-1-119-46"
HARDWARE_MODES = [
    "gpu_fell_off_bus",
    "gpu_memory_ecc",
    "gpu_hw_other",
    "nvlink_error",
    "pcie_error",
    "network",
    "host_hw",
    "filesystem_io",
    "node_failure",
    "checkpoint_lost",
    "preemption",
    "gpu_throttle",
]


# ----------------------------------------------------------------------------- time text
def _dt(t: float) -> tuple[datetime, int]:
    us = int(round(t * 1e6))
    return datetime.fromtimestamp(us // 1_000_000, UTC), us % 1_000_000


def iso_z(t: float) -> str:
    d, us = _dt(t)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{us // 1000:03d}Z"


def iso_s(t: float) -> str:
    return f"{_dt(t)[0]:%Y-%m-%dT%H:%M:%S}"


def ymd_hms(t: float) -> str:
    return f"{_dt(t)[0]:%Y-%m-%d %H:%M:%S}"


def date_c(t: float) -> str:
    d = _dt(t)[0]
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def glog(t: float, lvl: str) -> str:
    d, us = _dt(t)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{us // 1000:03d}000"


def c10(t: float, lvl: str, rng: random.Random) -> str:
    d, us = _dt(t)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{us:06d}{rng.randint(0, 999):03d}"


def syslog_ts(t: float) -> str:
    d = _dt(t)[0]
    return f"{d:%b} {d.day:2d} {d:%H:%M:%S}"


def elapsed(sec: float) -> str:
    s = int(round(sec))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts: list[str]) -> str:
    """Slurm-style compression of ip-10-1-X-Y names (groups of equal prefix ip-10-1-X-)."""
    groups: dict[str, list[int]] = {}
    for h in hosts:
        pre, last = h.rsplit("-", 1)
        groups.setdefault(pre + "-", []).append(int(last))
    out = []
    for pre in sorted(groups, key=lambda p: int(p.split("-")[3])):
        nums = sorted(groups[pre])
        out.append(f"{pre}{nums[0]}" if len(nums) == 1 else f"{pre}[{','.join(str(n) for n in nums)}]")
    return ",".join(out)


# ----------------------------------------------------------------------------- writers
class Lines:
    def __init__(self) -> None:
        self.rows: list[tuple[float, int, bytes]] = []

    def add(self, t: float, s: str | bytes) -> None:
        self.rows.append((t, len(self.rows), s if isinstance(s, bytes) else s.encode()))

    def many(self, t: float, ss: list[str]) -> None:
        for s in ss:
            self.add(t, s)

    def data(self, cut_last: int = 0) -> bytes:
        self.rows.sort(key=lambda r: (r[0], r[1]))
        b = b"\n".join(r[2] for r in self.rows)
        return b[: len(b) - cut_last] if cut_last else b + b"\n"


def put(path: Path, data: bytes, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as f:
            f.write(data)
        data = buf.getvalue()
    path.write_bytes(data)


# ----------------------------------------------------------------------------- timeline
class Att:
    def __init__(self, **kw) -> None:
        self.__dict__.update(kw)
        self.steps: list[tuple[int, float, float]] = []
        self.saves: list[tuple[int, float, float]] = []
        self.evals: list[tuple[int, float, float]] = []
        self.R: float | None = None
        self.E = 0.0
        self.doomed_save: float | None = None


def in_window(a: Att, n: int) -> bool:
    return a.k == 3 and STRAGGLE[0] <= n <= STRAGGLE[1]


def build(seed: int) -> list[Att]:
    rng = random.Random(f"{seed}/timeline")
    specs = [
        dict(
            k=1,
            job=JOB_A,
            stepid=0,
            kind="xid79",
            mode="gpu_fell_off_bus",
            root=H_XID,
            fail_after=1750 + rng.randint(40, 200),
            phases=(7, 64, 48, 31),
            gap=1160 + rng.randint(0, 420),
        ),
        dict(
            k=2,
            job=JOB_A,
            stepid=1,
            kind="efa",
            mode="network",
            root=H_EFA,
            fail_after=2500 + rng.randint(60, 200),
            phases=(6, 61, 162, 30),
            gap=1380 + rng.randint(0, 400),
        ),
        dict(
            k=3,
            job=JOB_A,
            stepid=2,
            kind="fsx",
            mode="filesystem_io",
            root=H_FSX,
            fail_after=5500,
            phases=(6, 62, 158, 29),
            gap=95 + rng.randint(0, 30),
        ),
        dict(
            k=4,
            job=JOB_A,
            stepid=3,
            kind="usercode",
            mode="user_code_error",
            root=None,
            fail_after=6000,
            phases=(6, 63, 160, 30),
            gap=2650 + rng.randint(0, 900),
        ),
        dict(
            k=5,
            job=JOB_B,
            stepid=0,
            kind="complete",
            mode=None,
            root=None,
            fail_after=None,
            phases=(41, 62, 165, 31),
            gap=None,
        ),
    ]
    out = []
    t = T0
    load = 0
    for s in specs:
        s["phases"] = tuple(p + rng.randint(-2, 2) for p in s["phases"])
        a = Att(**s)
        a.load = load
        a.S = float(t)
        a.F = a.S + sum(a.phases)
        simulate(a, random.Random(f"{seed}/steps/{a.k}"), rng)
        out.append(a)
        ck = [n for n, _, _ in a.saves]
        a.last_ckpt = ck[-1] if ck else a.load
        load = a.last_ckpt
        if a.gap is not None:
            t = math.floor(a.E + a.gap)
    return out


def save_dur(n: int, rng: random.Random) -> float:
    return round(rng.uniform(38.0, 47.0) + (9.0 if n % 1000 == 0 else 0.0), 2)


def simulate(a: Att, rng: random.Random, trng: random.Random) -> None:
    t, n = a.F, a.load
    while True:
        if a.kind == "complete" and n >= TRAIN_ITERS:
            break
        n1 = n + 1
        base = WINDOW_STEP if in_window(a, n1) else BASE_STEP
        d = base * (1 + rng.uniform(-JITTER, JITTER))
        if a.kind in ("xid79", "efa") and n1 == a.fail_after + 1:
            a.R = float(math.floor(t + 0.45 * d)) + 0.25
            a.E = a.R + (WATCHDOG_S + 11.6 + trng.uniform(0, 2) if a.kind == "xid79" else 17.4 + trng.uniform(0, 3))
            return
        a.steps.append((n1, t, d))
        t += d
        n = n1
        if a.k >= 4 and n % EVAL_INTERVAL == 0:
            if a.kind == "usercode":
                a.R = t + 1.62
                a.E = a.R + 9.3 + trng.uniform(0, 2)
                return
            e = EVAL_ITERS * EVAL_ITER_S + rng.uniform(0.3, 0.8)
            a.evals.append((n, t, e))
            t += e
        if n % SAVE_INTERVAL == 0:
            c = save_dur(n, rng)
            if a.kind == "fsx" and n == a.fail_after:
                a.doomed_save = t
                a.R = t + 9.0 + round(trng.uniform(0, 4), 2)
                a.E = a.R + 31.5 + trng.uniform(0, 3)
                return
            a.saves.append((n, t, c))
            t += c
    a.E = float(math.ceil(t + 4.0))


def ledger(atts: list[Att]):
    c = dict.fromkeys(
        [
            "productive",
            "straggler",
            "slowdown",
            "checkpoint",
            "data_stall",
            "recompute",
            "hang",
            "restart",
            "startup",
            "idle",
        ],
        0.0,
    )
    per = []
    for i, a in enumerate(atts):
        c["startup"] += a.F - a.S
        keep = a.last_ckpt if a.kind != "complete" else 10**9
        for n, _, d in a.steps:
            if n > keep:
                continue
            if in_window(a, n):
                c["productive"] += BASE_STEP
                c["straggler"] += d - BASE_STEP
            else:
                c["productive"] += d
        for _, _, e in a.evals:
            c["productive"] += e
        for _, _, d in a.saves:
            c["checkpoint"] += d
        if a.kind == "complete":
            c["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        base = (a.saves[-1][1] + a.saves[-1][2]) if a.saves else a.F
        nxt = atts[i + 1]
        d = dict(recompute=a.R - base, hang=a.E - a.R, restart=nxt.S - a.E, startup=nxt.F - nxt.S)
        c["recompute"] += d["recompute"]
        c["hang"] += d["hang"]
        c["restart"] += d["restart"]
        per.append(d)
    total = atts[-1].E - atts[0].S
    assert abs(sum(c.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return (
        {k: round(v * g, 4) for k, v in c.items()},
        round(total * g, 4),
        [{k: round(v * g, 4) for k, v in d.items()} for d in per],
    )


# ----------------------------------------------------------------------------- fleet facts
class Fleet:
    def __init__(self, seed: int) -> None:
        r = random.Random(f"{seed}/fleet")
        self.skew = {h: round(r.uniform(-2.5, 2.5), 3) for h in HOSTS + SPARES}
        self.skew[HOSTS[0]] = 0.81
        self.skew[HOSTS[-1]] = -1.37  # the last rank's host prints the iteration lines
        self.skew[H_FSX] = 3.4  # ahead: its kernel lines look later than they were
        self.skew[H_EFA] = -2.2
        self.inst: dict[tuple[str, int], str] = {}
        for h in HOSTS + SPARES:
            for gen in (0, 1):
                self.inst[h, gen] = "i-0" + f"{r.getrandbits(64):016x}"
        self.uuid = {
            (
                h,
                g,
            ): f"GPU-{r.getrandbits(32):08x}-{r.getrandbits(16):04x}-{r.getrandbits(16):04x}-"
            f"{r.getrandbits(16):04x}-{r.getrandbits(48):012x}"
            for h in HOSTS + SPARES
            for g in range(8)
        }
        self.serial = {(h, g): f"1654123{r.randint(0, 999999):06d}" for h in HOSTS + SPARES for g in range(8)}
        self.gid = {
            h: f"fe80::{r.randint(1, 0xFF):x}:{r.randint(0, 0xFF):x}ff:"
            f"fe{r.randint(0, 0xFF):02x}:{r.randint(0, 0xFFFF):x}"
            for h in HOSTS + SPARES
        }
        self.boot = {h: T0 - r.randint(3 * 86400, 9 * 86400) for h in HOSTS + SPARES}

    def gen(self, h: str, t: float, atts: list[Att]) -> int:
        """Instance generation of node h at time t (the replaced nodes get a new EC2 instance)."""
        a1, a2 = atts[0], atts[1]
        if h == H_XID and t > a1.E + 300:
            return 1
        if h == H_EFA and t > a2.E + 300:
            return 1
        return 0


class Pids:
    def __init__(self, seed: int, a: Att) -> None:
        r = random.Random(f"{seed}/pids/{a.k}")
        self.agent = {h: r.randint(20_000, 900_000) for h in HOSTS}
        self.worker = {(h, d): self.agent[h] + 41 + d * 3 for h in HOSTS for d in range(GPN)}
        self.tid = {(h, d): self.worker[h, d] + r.randint(600, 2400) for h in HOSTS for d in range(GPN)}
        self.comm = {(h, d): "0x5%011x" % (r.getrandbits(40) << 4) for h in HOSTS for d in range(GPN)}
        self.commid = f"0x{r.getrandbits(64):016x}"


def rank_of(h: str, d: int) -> int:
    return HOSTS.index(h) * GPN + d


# ----------------------------------------------------------------------------- Megatron output
def lr_at(n: int) -> float:
    if n < 1500:
        return 2.0e-4 * n / 1500
    p = (n - 1500) / (TRAIN_ITERS - 1500)
    return 2.0e-5 + 0.5 * 1.8e-4 * (1 + math.cos(math.pi * p))


def loss_at(n: int, r: random.Random) -> float:
    return 1.86 + 8.7 * math.exp(-n / 260.0) + 0.55 * math.exp(-n / 5200.0) + r.gauss(0, 0.011)


ARGS = [
    ("bf16", "True"),
    ("ckpt_format", "torch_dist"),
    ("clip_grad", "1.0"),
    ("data_parallel_size", str(DP)),
    ("distributed_timeout_minutes", "10"),
    ("eval_interval", "{ei}"),
    ("eval_iters", "{eiters}"),
    ("ffn_hidden_size", "22016"),
    ("global_batch_size", str(GBS)),
    ("hidden_size", "8192"),
    ("load", CKPT),
    ("log_interval", str(LOG_INTERVAL)),
    ("lr", "0.0002"),
    ("micro_batch_size", "1"),
    ("num_attention_heads", "64"),
    ("num_layers", "48"),
    ("num_query_groups", "8"),
    ("pipeline_model_parallel_size", str(PP)),
    ("save", CKPT),
    ("save_interval", str(SAVE_INTERVAL)),
    ("seq_length", str(SEQ)),
    ("tensor_model_parallel_size", str(TP)),
    ("train_iters", str(TRAIN_ITERS)),
    ("use_distributed_optimizer", "True"),
    ("world_size", str(GPUS)),
]

TR_HEAD = [
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 8, in <module>',
    "    sys.exit(main())",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/multiprocessing/errors/'
    '__init__.py", line 355, in wrapper',
    "    return f(*args, **kwargs)",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", line 919, in main',
    "    run(args)",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", line 910, in run',
    "    elastic_launch(",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 138, in __call__',
    "    return launch_agent(self._config, self._entrypoint, list(args))",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 269, in launch_agent',
    "    raise ChildFailedError(",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
]


def child_failed(t: float, h: str, ents: list[tuple[int, int, int, int, str]], root_i: int) -> list[str]:
    stamp = _dt(t)[0].strftime("%Y-%m-%d_%H:%M:%S")

    def blk(i, e):
        r, lr, ec, pid, tb = e
        return [
            f"[{i}]:",
            f"  time      : {stamp}",
            f"  host      : {h}",
            f"  rank      : {r} (local_rank: {lr})",
            f"  exitcode  : {ec} (pid: {pid})",
            "  error_file: <N/A>",
            f"  traceback : {tb}",
        ]

    out = TR_HEAD + ["=" * 56, "/fsx/Megatron-LM/pretrain_gpt.py FAILED", "-" * 56, "Failures:"]
    others = [e for j, e in enumerate(ents) if j != root_i]
    if not others:
        out.append("  <NO_OTHER_FAILURES>")
    for i, e in enumerate(others, 1):
        out += blk(i, e)
    return out + ["-" * 56, "Root Cause (first observed failure):"] + blk(0, ents[root_i]) + ["=" * 56]


WD_FRAMES = [
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f{a}a1ff86 in "
    "/usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)",
    "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
    "std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f{a}c1a8d2 in "
    "/usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f{a}c21333 in "
    "/usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x10c (0x7f{a}c236fc in "
    "/usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #4: <unknown function> + 0xdc253 (0x7f{a}09dc253 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
    "frame #5: <unknown function> + 0x94ac3 (0x7f{a}2a94ac3 in /lib/x86_64-linux-gnu/libc.so.6)",
]
NE_FRAMES = [
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f{a}a1ff86 in "
    "/usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)",
    "frame #1: c10d::ProcessGroupNCCL::checkForNCCLErrorsInternal(std::shared_ptr<c10d::NCCLComm>&) + "
    "0x220 (0x7f{a}c16e80 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #2: c10d::ProcessGroupNCCL::WorkNCCL::checkAndSetException() + 0x7c (0x7f{a}c1a0cc in "
    "/usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #3: c10d::ProcessGroupNCCL::watchdogHandler() + 0x213 (0x7f{a}c21313 in "
    "/usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #4: <unknown function> + 0xdc253 (0x7f{a}09dc253 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
]

W_TP = (
    "/fsx/Megatron-LM/megatron/core/tensor_parallel/layers.py:609: UserWarning: When using async grad allreduce "
    "it is recommended to set the environment variable CUDA_DEVICE_MAX_CONNECTIONS to 1 for maximum speedup"
)
W_TE = (
    "/usr/local/lib/python3.10/dist-packages/transformer_engine/pytorch/attention.py:4412: UserWarning: "
    "window_size should be (-1, -1) or (-1, 0) for attn_mask_type=causal"
)


def auto_resume(job: int, step: int, msg: str) -> str:
    return f"[Auto Resume] Info: JobID: {job} StepID: {step} {msg}"


def attempt_output(a: Att, fleet: Fleet, pids: Pids, seed: int, info: dict) -> Lines:
    """What one attempt adds to the job's sbatch --output file."""
    rng = random.Random(f"{seed}/out/{a.k}")
    L = Lines()
    sk0, skl = fleet.skew[HOSTS[0]], fleet.skew[HOSTS[-1]]
    S, F = a.S, a.F
    p_launch, p_init, p_model, p_data = a.phases
    if a.stepid == 0:
        L.add(S - 0.9, f"START TIME: {date_c(S - 0.9 + sk0)}")
        L.add(
            S - 0.8,
            f"Nodes: {hostlist(HOSTS)}  MASTER_ADDR={HOSTS[0]}  NCCL_DEBUG=INFO FI_PROVIDER=efa "
            f"FI_EFA_USE_DEVICE_RDMA=1 NCCL_DEBUG_FILE=/fsx/logs/nccl/{a.job}/%h.%p.log",
        )
        L.add(
            S - 0.7,
            f"srun --auto-resume=1 -l --container-image /fsx/images/megatron-24.12.sqsh "
            f"--container-mounts /fsx:/fsx torchrun --nnodes {NNODES} --nproc_per_node {GPN} ...",
        )
    if a.stepid == 0 and a.k == 5:
        L.add(S + 0.5, "pyxis: importing docker image: /fsx/images/megatron-24.12.sqsh")
        L.add(S + p_launch - 4, "pyxis: imported docker image: /fsx/images/megatron-24.12.sqsh")
    t = S + p_launch
    for i, h in enumerate(HOSTS):
        tb = t + 0.05 * i
        p = f"{glog(tb + fleet.skew[h], 'W')} {pids.agent[h]} torch/distributed/run.py:793] "
        L.many(
            tb,
            [
                p,
                p + "*" * 41,
                p + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in "
                "default, to avoid your system being overloaded, please further tune the variable for optimal "
                "performance in your application as needed. ",
                p + "*" * 41,
            ],
        )
    ta = t + 6.0
    L.add(
        ta,
        f"using world size: {GPUS}, data-parallel size: {DP}, context-parallel size: 1, "
        f"tensor-model-parallel size: {TP}, pipeline-model-parallel size: {PP} ",
    )
    ev = a.k >= 4
    L.add(ta, "------------------------ arguments ------------------------")
    for k, v in ARGS:
        v = v.format(ei=EVAL_INTERVAL if ev else TRAIN_ITERS * 10, eiters=EVAL_ITERS if ev else 0)
        L.add(ta, f"  {k} {'.' * (48 - len(k))} {v}")
    L.add(ta, "-------------------- end of arguments ---------------------")
    L.many(
        ta + 1,
        [
            "> building HuggingFaceTokenizer tokenizer ...",
            " > padded vocab (size: 128256) with 0 dummy tokens (new size: 128256)",
            "> initializing torch distributed ...",
        ],
    )
    for r in range(0, GPUS, 37):
        L.many(
            ta + 3 + 0.01 * r,
            [
                f"[rank{r}]:/usr/local/lib/python3.10/dist-packages/torch/distributed/"
                f"distributed_c10d.py:4631: UserWarning: No device id is provided via "
                f"`init_process_group` or `barrier `. Using the current device set by the user. ",
                f"[rank{r}]:  warnings.warn(  # warn only once",
            ],
        )
    ti = S + p_launch + p_init
    L.add(ti - 0.4, f"time to initialize megatron (seconds): {p_init - 0.4 + rng.random():.3f}")
    L.add(ti, f"[after megatron is initialized] datetime: {ymd_hms(ti + sk0)} ")
    L.add(ti + 0.3, "building GPT model ...")
    for tp, pp in [(0, 0), (3, 1), (6, 0), (1, 1)]:
        L.add(
            ti + 1.8,
            f" > number of parameters on (tensor, pipeline) model parallel rank ({tp}, {pp}): "
            f"{2_204_655_616 if pp == 0 else 2_096_316_416}",
        )
    tm = ti + p_model
    if a.load == 0:
        L.many(
            ti + 16,
            [
                f"WARNING: could not find the metadata file {CKPT}/latest_checkpointed_iteration.txt",
                "    will not load any checkpoints and will start from random",
            ],
        )
    else:
        L.add(ti + 21, f" loading checkpoint from {CKPT} at iteration {a.load}")
        L.add(tm - 2.6, f"  successfully loaded checkpoint from {CKPT} [ t 1/{TP}, p 1/{PP} ] at iteration {a.load}")
        lm = (p_model - 24.0) * 1000
        L.many(
            tm - 2.5,
            [
                "(min, max) time across ranks (ms):",
                f"    {'load-checkpoint '.ljust(48, '.')}: ({lm - 11.2:.2f}, {lm:.2f})",
            ],
        )
    L.add(tm, f"[after model, optimizer, and learning rate scheduler are built] datetime: {ymd_hms(tm + sk0)} ")
    L.many(
        tm + 0.4,
        [
            "> building train, validation, and test datasets ...",
            "> building train, validation, and test datasets for GPT ...",
        ],
    )
    L.add(F - 0.8, "> finished creating GPT datasets ...")
    L.add(F - 0.5, f"[after dataloaders are built] datetime: {ymd_hms(F - 0.5 + sk0)} ")
    L.many(F - 0.4, ["done with setup ...", "training ..."])
    L.add(F, f"[before the start of training step] datetime: {ymd_hms(F + sk0)} ")
    for r in range(GPUS - 64, GPUS, 19):
        L.many(F + 2 + 0.01 * r, [f"[rank{r}]:{W_TP}", f"[rank{r}]:  warnings.warn("])
    L.many(F + 3.1, [f"[rank{GPUS - 1}]:{W_TE}", f"[rank{GPUS - 1}]:  warnings.warn("])
    lr_ = random.Random(f"{seed}/loss/{a.k}")
    st = a.steps
    for j, (n, ts, d) in enumerate(st):
        if n % LOG_INTERVAL:
            continue
        w = [x[2] for x in st[max(0, j - LOG_INTERVAL + 1) : j + 1]]
        avg = sum(w) / len(w)
        e = ts + d
        thr = TOKENS_PER_STEP * FLOPS_PER_TOKEN / avg / GPUS / 1e12
        gn = 0.18 + 2.4 * math.exp(-n / 500.0) + abs(lr_.gauss(0, 0.015))
        L.add(
            e,
            f" [{ymd_hms(e + skl)}] iteration {n:8d}/{TRAIN_ITERS:8d} | consumed samples: {n * GBS:12d} | "
            f"elapsed time per iteration (ms): {avg * 1000:.1f} | throughput per GPU (TFLOP/s/GPU): {thr:.1f} | "
            f"learning rate: {lr_at(n):.6E} | global batch size: {GBS:5d} | lm loss: {loss_at(n, lr_):.6E} | "
            f"loss scale: 1.0 | grad norm: {gn:.3f} | number of skipped iterations:   0 | "
            f"number of nan iterations:   0 |",
        )
    for n, ts, c in a.saves + ([(a.fail_after, a.doomed_save, 0.0)] if a.doomed_save else []):
        L.add(ts + 0.01, f"saving checkpoint at iteration {n:7d} to {CKPT} in torch_dist format")
        L.add(ts + 0.02, "Storing distributed optimizer sharded state of type fully_sharded_model_space")
        if c:
            L.add(
                ts + c - 0.02, f"  successfully saved checkpoint from iteration {n:7d} to {CKPT} [ t 1/{TP}, p 1/{PP} ]"
            )
            L.many(
                ts + c - 0.01,
                [
                    "(min, max) time across ranks (ms):",
                    f"    {'save-checkpoint '.ljust(48, '.')}: ({c * 1000 - rng.uniform(4, 20):.2f}, {c * 1000:.2f})",
                ],
            )
    lv = random.Random(f"{seed}/val/{a.k}")
    for n, ts, e in a.evals:
        s = (
            f" validation loss at iteration {n} | lm loss value: {loss_at(n, lv) + 0.04:.6E} | "
            f"lm loss PPL: {math.exp(loss_at(n, lv) + 0.04):.6E} | val token acc: {0.512 + n / 1e6:.4f} | "
        )
        L.many(ts + e - 0.01, ["-" * (len(s) + 1), s, "-" * (len(s) + 1)])
    # ---- how the attempt ends
    if a.kind == "xid79":
        _end_xid79(a, L, pids, rng, info, fleet)
    elif a.kind == "efa":
        _end_efa(a, L, pids, rng, info, fleet)
    elif a.kind == "fsx":
        _end_fsx(a, L, pids, rng, info)
    elif a.kind == "usercode":
        _end_user(a, L, pids, rng, info)
    else:
        L.add(a.E - 2.6, f"[after training is done] datetime: {ymd_hms(a.E - 2.6 + sk0)} ")
        for i, h in enumerate(HOSTS):
            L.add(
                a.E - 1.2 + 0.01 * i,
                f"{glog(a.E - 1.2 + fleet.skew[h], 'I')} {pids.agent[h]} "
                f"torch/distributed/elastic/agent/server/api.py:879] [default] worker group "
                f"successfully finished. Waiting 300 seconds for other agents to finish.",
            )
    return L


def _kill_rest(a, L, pids, t0, skip, fleet):
    for i, h in enumerate(HOSTS):
        if h in skip:
            continue
        tt = t0 + 0.03 * i
        L.add(
            tt,
            f"{glog(tt + fleet.skew[h], 'W')} {pids.agent[h]} torch/distributed/elastic/agent/server/api.py:719] "
            f"Received 15 death signal, shutting down workers",
        )
        for d in range(GPN):
            L.add(
                tt + 0.001,
                f"{glog(tt + 0.001 + fleet.skew[h], 'W')} {pids.agent[h]} torch/distributed/elastic/"
                f"multiprocessing/api.py:897] Sending process {pids.worker[h, d]} closing signal SIGTERM",
            )


def _retry(L: Lines, a: Att, nxt_start: float, replace: list[str], exp_job: int | None) -> None:
    E = a.E
    L.add(E + 0.6, auto_resume(a.job, 0, "Initiating communication with cluster agent to diagnose health of nodes"))
    L.add(E + 2.9, auto_resume(a.job, 0, f"Response from cluster agent: JobId={a.job}, ResumeAction=RETRYSTEP"))
    if replace:
        L.add(E + 3.0, auto_resume(a.job, 0, "Job failed - replacing nodes"))
        L.add(E + 3.1, auto_resume(a.job, 0, "Job failed - Droping unhealthy nodes"))
        keep = [h for h in HOSTS if h not in replace]
        L.add(E + 4.4, auto_resume(a.job, 0, f"Succesfully shrink job to retain healthy nodes {hostlist(keep)}"))
        L.add(E + 4.6, f"srun: job {exp_job} queued and waiting for resources")
        L.add(nxt_start - 6.2, f"srun: job {exp_job} has been allocated resources")
        L.add(nxt_start - 2.1, auto_resume(a.job, 0, "Job Expansion complete"))
        L.add(nxt_start - 1.4, auto_resume(a.job, 0, f"Updating to new node list {hostlist(HOSTS)}"))
    L.add(nxt_start, auto_resume(a.job, 0, f"Retrying step. Attempt number: {a.stepid + 1}"))


def _end_xid79(a, L, pids, rng, info, fleet):
    R, E = a.R, a.E
    seq = 91_000 + rng.randint(0, 5000)
    first = None
    for r in range(GPUS):
        h, d = HOSTS[r // GPN], r % GPN
        tw = R + WATCHDOG_S + rng.uniform(0.05, 1.3)
        first = tw if first is None else min(first, tw)
        if h == H_XID and d == XID_GPU:
            continue
        num = rng.choice([16777216, 1, 67108864])
        wd = (
            f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, "
            f"NumelIn={num}, NumelOut={num}, Timeout(ms)=600000) ran for {600000 + rng.randint(20, 1300)} "
            f"milliseconds before timing out."
        )
        sk = fleet.skew[h]
        L.many(
            tw,
            [
                f"[rank{r}]:[{c10(tw + sk, 'E', rng)} ProcessGroupNCCL.cpp:616] {wd}",
                f"[rank{r}]:[{c10(tw + sk + 0.002, 'E', rng)} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg)"
                f" Rank {r}] Exception (either an error or timeout) detected by watchdog at work: {seq}, last "
                f"enqueued NCCL work: {seq + 1}, last completed NCCL work: {seq - 1}.",
            ],
        )
        if r % 29 == 3:
            msg = (f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated "
                   f"with exception: {wd}")
            ax = f"{rng.getrandbits(16):04x}"
            L.many(
                tw + 0.004,
                [
                    f"[rank{r}]:[{c10(tw + sk + 0.004, 'E', rng)} ProcessGroupNCCL.cpp:1595] {msg}",
                    "terminate called after throwing an instance of 'c10::DistBackendError'",
                    f"  what():  {msg}",
                    "Exception raised from checkTimeout at "
                    "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most recent call first):",
                ]
                + [f.replace("{a}", ax) for f in WD_FRAMES]
                + [""],
            )
    info["watchdog_first"] = first
    tf = R + WATCHDOG_S + 4.0
    for i, h in enumerate(HOSTS):
        if h == H_XID:
            continue
        t = tf + 0.11 * i
        ents = [
            (i * GPN + d, d, -6, pids.worker[h, d], f"Signal 6 (SIGABRT) received by PID {pids.worker[h, d]}")
            for d in range(GPN)
        ]
        ri = rng.randrange(GPN)
        L.add(
            t,
            f"{glog(t + fleet.skew[h], 'E')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/api.py:869] "
            f"failed (exitcode: -6) local_rank: {ri} (pid: {pids.worker[h, ri]}) of binary: /usr/bin/python3",
        )
        L.many(t + 0.01, child_failed(t, h, ents, ri))
    ts = R + WATCHDOG_S + 7.5
    for i, h in enumerate(HOSTS):
        if h != H_XID:
            L.add(ts + 0.01 * i, f"srun: error: {h}: task {i}: Exited with exit code 1")
    L.add(ts + 0.4, f"srun: Terminating StepId={a.job}.{a.stepid}")
    L.add(E - 0.8, f"srun: error: {H_XID}: task {HOSTS.index(H_XID)}: Killed")


def _end_efa(a, L, pids, rng, info, fleet):
    R, E = a.R, a.E
    trio = [H_EFA] + EFA_PEERS
    d = EFA_GPU
    tfirst = {H_EFA: R + 3.2}
    for j, p in enumerate(EFA_PEERS):
        tfirst[p] = R + 3.9 + 0.35 * j
    for h in trio:
        r = rank_of(h, d)
        t = tfirst[h]
        msg = (
            f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: "
            f"NCCL error: remote process exited or there was a network error, NCCL version {NCCL_VER}"
        )
        ax = f"{rng.getrandbits(16):04x}"
        body = [
            f"[rank{r}]:[{c10(t + fleet.skew[h], 'E', rng)} ProcessGroupNCCL.cpp:1595] {msg}",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
            "Last error:",
            "NET/OFI Request completed with error",
            "Exception raised from checkForNCCLErrorsInternal at "
            "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2027 (most recent call first):",
        ]
        body += [f.replace("{a}", ax) for f in NE_FRAMES]
        body += ["", "terminate called after throwing an instance of 'c10::DistBackendError'", f"  what():  {msg}"]
        L.many(t, body)
    info["nccl_error_first"] = tfirst[H_EFA]
    tf = R + 8.0
    for j, h in enumerate(trio):
        i = HOSTS.index(h)
        t = tf + 0.3 * j
        ents = [
            (
                i * GPN + dd,
                dd,
                -6 if dd == d else -15,
                pids.worker[h, dd],
                f"Signal {6 if dd == d else 15} ({'SIGABRT' if dd == d else 'SIGTERM'}) received by PID "
                f"{pids.worker[h, dd]}",
            )
            for dd in range(GPN)
        ]
        for dd in range(GPN):
            if dd != d:
                L.add(
                    t - 0.2,
                    f"{glog(t - 0.2 + fleet.skew[h], 'W')} {pids.agent[h]} torch/distributed/elastic/"
                    f"multiprocessing/api.py:897] Sending process {pids.worker[h, dd]} closing signal SIGTERM",
                )
        L.add(
            t,
            f"{glog(t + fleet.skew[h], 'E')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/api.py:869] "
            f"failed (exitcode: -6) local_rank: {d} (pid: {pids.worker[h, d]}) of binary: /usr/bin/python3",
        )
        L.many(t + 0.01, child_failed(t, h, ents, d))
    ts = R + 10.1
    for h in sorted(trio, key=HOSTS.index):
        L.add(ts, f"srun: error: {h}: task {HOSTS.index(h)}: Exited with exit code 1")
    L.add(ts + 0.2, f"srun: Terminating StepId={a.job}.{a.stepid}")
    _kill_rest(a, L, pids, ts + 0.5, trio, fleet)
    for i, h in enumerate(HOSTS):
        if h not in trio:
            L.add(E - 1.1 + 0.01 * i, f"srun: error: {h}: task {i}: Terminated")
    L.add(E - 0.5, f"srun: Force Terminated StepId={a.job}.{a.stepid}")


def _end_fsx(a, L, pids, rng, info):
    R, E = a.R, a.E
    i = HOSTS.index(H_FSX)
    ranks = [i * GPN + d for d in range(GPN)]
    te = R + 13.0
    shard = "__%d_0.distcp"
    body = [
        f"[rank{r}]: " + ln
        for r in ranks[:1]
        for ln in [
            "Traceback (most recent call last):",
            '  File "/fsx/Megatron-LM/pretrain_gpt.py", line 293, in <module>',
            "    pretrain(",
            '  File "/fsx/Megatron-LM/megatron/training/training.py", line 386, in pretrain',
            "    iteration, num_floating_point_operations_so_far = train(",
            '  File "/fsx/Megatron-LM/megatron/training/training.py", line 1465, in train',
            "    save_checkpoint_and_time(iteration, model, optimizer,",
            '  File "/fsx/Megatron-LM/megatron/training/training.py", line 1110, in save_checkpoint_and_time',
            "    save_checkpoint(iteration, model, optimizer, opt_param_scheduler,",
            '  File "/fsx/Megatron-LM/megatron/training/checkpointing.py", line 409, in save_checkpoint',
            "    async_save_request = dist_checkpointing.save(state_dict, checkpoint_name, save_strategy,",
            '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/checkpoint/utils.py", '
            'line 212, in reduce_scatter',
            "    raise result",
            f"torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:dict_keys({ranks})",
            f"Traceback (most recent call last): (RANK {ranks[0]})",
            '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/checkpoint/utils.py", '
            'line 185, in reduce_scatter',
            "    local_data = map_fun()",
            '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/checkpoint/filesystem.py", '
            'line 367, in _write_files_from_queue',
            '    with create_stream(file_name, "wb") as stream:',
            f"OSError: [Errno 108] Cannot send after transport endpoint shutdown: "
            f"'{CKPT}/iter_{a.fail_after:07d}/{shard % ranks[0]}'",
        ]
    ]
    L.many(te, body)
    info["dcp_error_ts"] = te
    tf = R + 16.2
    ents = [
        (
            r,
            r % GPN,
            1,
            pids.worker[H_FSX, r % GPN],
            "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        )
        for r in ranks
    ]
    L.add(
        tf,
        f"{glog(tf, 'E')} {pids.agent[H_FSX]} torch/distributed/elastic/multiprocessing/api.py:869] "
        f"failed (exitcode: 1) local_rank: 0 (pid: {pids.worker[H_FSX, 0]}) of binary: /usr/bin/python3",
    )
    L.many(tf + 0.01, child_failed(tf, H_FSX, ents, 0))
    ts = R + 17.9
    L.add(ts, f"srun: error: {H_FSX}: task {i}: Exited with exit code 1")
    L.add(ts + 0.2, f"srun: Terminating StepId={a.job}.{a.stepid}")
    _kill_rest(a, L, pids, ts + 0.4, [H_FSX], _FLEET[0])
    for j, h in enumerate(HOSTS):
        if h != H_FSX:
            L.add(E - 1.0 + 0.01 * j, f"srun: error: {h}: task {j}: Terminated")
    L.add(E - 0.4, f"srun: Force Terminated StepId={a.job}.{a.stepid}")


def _end_user(a, L, pids, rng, info):
    R, E = a.R, a.E
    last_stage = [r for r in range(GPUS) if r >= GPUS // PP]
    tb = [
        "Traceback (most recent call last):",
        '  File "/fsx/Megatron-LM/pretrain_gpt.py", line 293, in <module>',
        "    pretrain(",
        '  File "/fsx/Megatron-LM/megatron/training/training.py", line 386, in pretrain',
        "    iteration, num_floating_point_operations_so_far = train(",
        '  File "/fsx/Megatron-LM/megatron/training/training.py", line 1421, in train',
        "    evaluate_and_print_results(prefix, forward_step_func,",
        '  File "/fsx/Megatron-LM/megatron/training/training.py", line 1768, in evaluate_and_print_results',
        "    evaluate(forward_step_func, data_iterator, model,",
        '  File "/fsx/Megatron-LM/megatron/training/training.py", line 1686, in evaluate',
        "    loss_dicts = forward_backward_func(",
        '  File "/fsx/Megatron-LM/megatron/core/pipeline_parallel/schedules.py", line 1611, in '
        'forward_backward_pipelining_without_interleaving',
        "    output_tensor, num_tokens = forward_step(",
        '  File "/fsx/Megatron-LM/megatron/core/pipeline_parallel/schedules.py", line 291, in forward_step',
        "    outputs = loss_func(output_tensor)",
        '  File "/fsx/Megatron-LM/pretrain_gpt.py", line 171, in loss_func',
        "    correct = (preds == labels) * loss_mask",
        f"RuntimeError: The size of tensor a ({SEQ}) must match the size of tensor b ({SEQ - 1}) at "
        "non-singleton dimension 1",
    ]
    for j, r in enumerate(last_stage[::8]):
        L.many(R + 0.002 * j, [f"[rank{r}]: {ln}" for ln in tb])
    info["exception_ts"] = R
    tf = R + 3.0
    for i, h in enumerate(HOSTS[NNODES // 2 :], start=NNODES // 2):
        t = tf + 0.07 * (i - NNODES // 2)
        ents = [
            (
                i * GPN + d,
                d,
                1,
                pids.worker[h, d],
                "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
            )
            for d in range(GPN)
        ]
        L.add(
            t,
            f"{glog(t, 'E')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/api.py:869] "
            f"failed (exitcode: 1) local_rank: 0 (pid: {pids.worker[h, 0]}) of binary: /usr/bin/python3",
        )
        L.many(t + 0.01, child_failed(t, h, ents, 0))
    ts = R + 4.6
    for i, h in enumerate(HOSTS[NNODES // 2 :], start=NNODES // 2):
        L.add(ts + 0.01 * i, f"srun: error: {h}: task {i}: Exited with exit code 1")
    L.add(ts + 0.3, f"srun: Terminating StepId={a.job}.{a.stepid}")
    _kill_rest(a, L, pids, ts + 0.5, HOSTS[NNODES // 2 :], _FLEET[0])
    for i, h in enumerate(HOSTS[: NNODES // 2]):
        L.add(E - 0.9 + 0.01 * i, f"srun: error: {h}: task {i}: Terminated")
    L.add(E - 0.3, f"srun: Force Terminated StepId={a.job}.{a.stepid}")


_FLEET: list[Fleet] = []


# ----------------------------------------------------------------------------- NCCL per host
def nccl_log(a: Att, h: str, fleet: Fleet, pids: Pids, seed: int) -> bytes:
    rng = random.Random(f"{seed}/nccl/{a.k}/{h}")
    i = HOSTS.index(h)
    gen = fleet.gen(h, a.S, ATTS[0])
    inst = fleet.inst[h, gen]
    out: list[str] = []
    epoch = int(a.F - 150)
    streams = []
    for d in range(GPN):
        w, tid = pids.worker[h, d], pids.tid[h, d]
        r = i * GPN + d

        def pre(tt, d=d, w=w):
            return f"{h}:{w}:{tt} [{d}] NCCL INFO "

        s = [
            pre(w) + f"Bootstrap: Using enp71s0:{h[3:].replace('-', '.')}<0>",
            pre(w) + "NET/Plugin: Loaded net plugin Libfabric (v9)",
            pre(w) + f"NET/OFI Initializing aws-ofi-nccl {OFI_VER}",
            pre(w) + "NET/OFI Using Libfabric version 1.22",
            pre(w) + "NET/OFI Using CUDA driver version 12040 with runtime 12060",
            pre(w) + "NET/OFI Configuring AWS-specific options",
            pre(w) + 'NET/OFI Setting NCCL_PROTO to "simple"',
            f"libfabric:{w}:{epoch + d}::efa:ep_ctrl:efa_rdm_ep_set_shared_memory_permitted():1410<warn> "
            f"FI_OPT_SHARED_MEMORY_PERMITTED set to false",
            pre(w) + "NET/OFI Selected Provider is efa (found 32 nics)",
            pre(w) + "NET/OFI Using transport protocol RDMA (platform set)",
            pre(w) + "Using network Libfabric",
            pre(tid) + f"ncclCommInitRank comm {pids.comm[h, d]} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} "
            f"busId {BUS[d]} commId {pids.commid} - Init START",
            pre(tid) + f"comm {pids.comm[h, d]} rank {r} nRanks {GPUS} nNodes {NNODES} localRanks {GPN} "
            f"localRank {d} MNNVL 0",
            pre(tid) + f"ncclCommInitRank comm {pids.comm[h, d]} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} "
            f"busId {BUS[d]} commId {pids.commid} - Init COMPLETE",
            pre(tid) + f"Init timings - ncclCommInitRank: rank {r} nranks {GPUS} total {rng.uniform(1.1, 2.6):.2f} "
            f"(kernels 0.21, alloc 0.74, bootstrap {rng.uniform(0.1, 0.9):.2f}, allgathers 0.02, topo 0.18, "
            f"graphs 0.01, connections 0.09, rest 0.01)",
        ]
        for ch in range(2):
            peer = (r + GPN) % GPUS
            s.append(pre(tid + 7) + f"Channel {ch:02d}/0 : {r}[{d}] -> {peer}[{d}] [send] via NET/Libfabric/{d}/GDRDMA")
        if d == 0 and a.stepid == 0:
            s.insert(0, f"NCCL version {NCCL_VER}+cuda12.6")
        streams.append(s)
    cur = [0] * GPN
    while any(cur[d] < len(streams[d]) for d in range(GPN)):
        d = rng.randrange(GPN)
        if cur[d] < len(streams[d]):
            out.append(streams[d][cur[d]])
            cur[d] += 1
    d = EFA_GPU
    w, tid = pids.worker[h, d], pids.tid[h, d]
    if a.kind == "efa" and h in [H_EFA] + EFA_PEERS:
        peers = EFA_PEERS if h == H_EFA else [H_EFA]
        ep = int(a.R + fleet.skew[h])
        for p in peers:
            req = "0x7f%010x" % (rng.getrandbits(36) << 4)
            out += [
                "",
                f"libfabric:{w}:{ep}::efa:cq:efa_rdm_txe_handle_error():737<warn> err: 113, message: "
                f"Unresponsive receiver. My EFA addr: fi_addr_efa://[{fleet.gid[h]}]:0:{rng.randint(10**8, 2 * 10**9)} "
                f"My host id: {inst} Peer EFA addr: fi_addr_efa://[{fleet.gid[p]}]:0:{rng.randint(10**8, 2 * 10**9)} "
                f"Peer host id: {fleet.inst[p, fleet.gen(p, a.R, ATTS[0])]} (13)",
                f"{h}:{w}:{tid + 9} [{d}] nccl_net_ofi_rdma.cpp:1482 NCCL WARN NET/OFI Request {req} completed with "
                f"error. RC: 113. Error: 13 (Unresponsive receiver). Completed length: 0, Request: {{ dev: {d}, "
                f"size: 0, state: CREATED, type: {'SEND' if h == H_EFA else 'RECV'} }}",
                f"{h}:{w}:{tid + 9} [{d}] NCCL INFO transport/net.cc:1302 -> 6",
                f"{h}:{w}:{tid + 9} [{d}] NCCL INFO proxy.cc:698 -> 6",
                f"{h}:{w}:{tid + 9} [{d}] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]",
            ]
        out.append(
            f"{h}:{w}:{tid + 14} [{d}] NCCL INFO comm {pids.comm[h, d]} rank {rank_of(h, d)} nranks {GPUS} "
            f"cudaDev {d} busId {BUS[d]} - Abort COMPLETE"
        )
    elif a.kind == "xid79" and h != H_XID:
        for dd in range(GPN):
            out.append(
                f"{h}:{pids.worker[h, dd]}:{pids.tid[h, dd] + 14} [{dd}] NCCL INFO comm {pids.comm[h, dd]} rank "
                f"{rank_of(h, dd)} nranks {GPUS} cudaDev {dd} busId {BUS[dd]} - Abort COMPLETE"
            )
    elif a.kind == "complete":
        for dd in range(GPN):
            out.append(
                f"{h}:{pids.worker[h, dd]}:{pids.worker[h, dd]} [{dd}] NCCL INFO comm {pids.comm[h, dd]} rank "
                f"{rank_of(h, dd)} nranks {GPUS} cudaDev {dd} busId {BUS[dd]} - Destroy COMPLETE"
            )
    data = ("\n".join(out) + "\n").encode()
    if a.kind == "complete" and h == HOSTS[5]:
        data = data[:-23]  # the writer was killed: truncated last line
    return data


ATTS: list[list[Att]] = []


# ----------------------------------------------------------------------------- per-rank step records
def steps_jsonl(a: Att, seed: int) -> dict[int, bytes]:
    lo, hi = STRAGGLE[0] - JSONL_MARGIN, STRAGGLE[1] + JSONL_MARGIN
    sel = [(n, ts, d) for n, ts, d in a.steps if lo <= n <= hi]
    lr_ = random.Random(f"{seed}/jl")
    loss = {n: round(loss_at(n, lr_), 4) for n, _, _ in sel}
    out = {}
    for r in range(GPUS):
        h, g = HOSTS[r // GPN], r % GPN
        rng = random.Random(f"{seed}/jl/{r}")
        sk = _FLEET[0].skew[h]
        rows = []
        for n, ts, d in sel:
            slow = h == H_HOT and g == HOT_GPU and in_window(a, n)
            comp = BASE_COMPUTE * (SLOW_FACTOR if slow else 1.0) * (1 + rng.uniform(-0.004, 0.004))
            data = BASE_DATA * (1 + rng.uniform(-0.08, 0.08))
            comm = d - comp - data
            assert comm > 0.05
            rows.append(
                f'{{"ts": "{iso_z(ts + d + sk)}", "rank": {r}, "host": "{h}", "step": {n}, "step_s": {d:.4f}, '
                f'"compute_s": {comp:.4f}, "comm_s": {comm:.4f}, "data_s": {data:.4f}, '
                f'"tokens": {TOKENS_PER_STEP // GPUS}, "loss": {loss[n]:.4f}}}'
            )
        body = "\n".join(rows) + "\n"
        if r == 77:
            body += rows[-1][:61]
        out[r] = body.encode()
    return out


# ----------------------------------------------------------------------------- telemetry
def smi_csv(h: str, a3: Att, seed: int) -> bytes:
    rng = random.Random(f"{seed}/smi/{h}")
    sk = _FLEET[0].skew[h]
    step_at = [(ts, n) for n, ts, _ in a3.steps]
    w0 = next(ts for ts, n in step_at if n == STRAGGLE[0])
    w1 = next(ts + d for n, ts, d in a3.steps if n == STRAGGLE[1])
    hdr = (
        "timestamp, index, pci.bus_id, temperature.gpu, utilization.gpu [%], clocks.current.sm [MHz], power.draw [W], "
        "clocks_throttle_reasons.hw_slowdown, clocks_throttle_reasons.hw_thermal_slowdown, "
        "clocks_throttle_reasons.sw_thermal_slowdown"
    )
    rows = [hdr]
    t = a3.S + 20
    while t < a3.E + 120:
        busy = a3.F < t < a3.E
        for g in range(GPN):
            hot = h == H_HOT and g == HOT_GPU and w0 - 240 < t < w1 + 60
            warm = h == H_HOT and g == HOT_GPU and (w0 - 900 < t <= w0 - 240)
            temp = (
                rng.randint(89, 93)
                if hot
                else rng.randint(79, 84)
                if warm
                else rng.randint(58, 71)
                if busy
                else rng.randint(33, 38)
            )
            sm = rng.choice([1275, 1290, 1305, 1245]) if hot else rng.choice([1980, 1965, 1950]) if busy else 345
            util = rng.randint(97, 100) if busy else 0
            pw = (rng.uniform(430, 520) if hot else rng.uniform(560, 690)) if busy else rng.uniform(68, 75)
            act = "Active" if hot else "Not Active"
            d = _dt(t + sk)[0]
            ms = _dt(t + sk)[1] // 1000
            rows.append(
                f"{d:%Y/%m/%d %H:%M:%S}.{ms:03d}, {g}, 00000000:{BUS[g][:2].upper()}:00.0, {temp}, {util} %, "
                f"{sm} MHz, {pw:.2f} W, {act}, {act}, Not Active"
            )
        t += 60.0
    return ("\n".join(rows) + "\n").encode()


# ----------------------------------------------------------------------------- kernel + HMA
NOISE = [
    "systemd-journald[{p}]: Data hash table of /var/log/journal/{j}/system.journal has a fill level at 75.0 "
    "({n} of {m} items, 25165824 file size, 279 bytes per hash table item), suggesting rotation.",
    "hrtimer: interrupt took {ns} ns",
    "TCP: request_sock_TCP: Possible SYN flooding on port 6818. Sending cookies.  Check SNMP counters.",
    "nvidia-nvswitch2: open (major=508)",
    'audit: type=1400 audit({ep}.{ms}:{k}): apparmor="DENIED" operation="open" class="file" '
    'profile="snap.amazon-ssm-agent.amazon-ssm-agent" name="/proc/{pp}/cmdline" pid={pp} comm="ssm-agent-worke"',
    "kauditd_printk_skb: {k} callbacks suppressed",
]


def boot_lines(h: str, gen: int, fleet: Fleet) -> list[tuple[float, str]]:
    ls = [
        (
            0.0,
            f"Linux version {KERNEL} (buildd@lcy02-amd64-047) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, GNU ld "
            "(GNU Binutils for Ubuntu) 2.38) #78-Ubuntu SMP Wed Nov 6 11:25:02 UTC 2024 (Ubuntu "
            f"{KERNEL}.78-aws 5.15.167)",
        ),
        (0.0, "DMI: Amazon EC2 p5.48xlarge/, BIOS 1.0 10/16/2017"),
        (9.1, "efa: loading out-of-tree module taints kernel."),
        (9.3, "efa 0000:52:00.0: Setup irq:0x7f02b6 name:efa-mgmnt@pci:0000:52:00.0"),
        (18.6, f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {DRIVER}  Thu Jan  2 19:28:16 UTC 2025"),
        (24.2, "Lustre: Lustre: Build Version: 2.15.5"),
        (26.8, f"Lustre: Mounted {FSX}-client"),
    ]
    return ls


def noise(t0: float, t1: float, r: random.Random) -> list[tuple[float, str]]:
    out = []
    t = t0 + r.uniform(500, 6000)
    while t < t1:
        tm = r.choice(NOISE)
        out.append(
            (
                t,
                tm.format(
                    p=r.randint(500, 900),
                    j=f"{r.getrandbits(128):032x}",
                    n=r.randint(80000, 99000),
                    m=r.randint(100000, 120000),
                    ns=r.randint(9000, 60000),
                    ep=int(t),
                    ms=r.randint(100, 999),
                    k=r.randint(3, 60),
                    pp=r.randint(2000, 90000),
                ),
            )
        )
        t += r.uniform(1500, 11000)
    return out


def render(style: str, h: str, ev: list[tuple[float, str]], skew: float, boot: float) -> bytes:
    out = []
    fr = random.Random(f"kfrac/{h}/{style}/{boot}")
    for t, m in sorted(ev, key=lambda x: x[0]):
        tt = t + skew + fr.uniform(0, 0.0004)
        if style == "syslog":
            out.append(f"{syslog_ts(tt)} {h} kernel: [{tt - boot - skew:12.6f}] {m}")
        else:
            out.append(f"{iso_s(tt)}+0000 {h} kernel: {m}")
    return ("\n".join(out) + "\n").encode()


def hma_line(t: float, skew: float, reason: str, cond: str, msg: str) -> str:
    d = _dt(t + skew)
    detail = {
        "severity": "warn",
        "timestamp": iso_s(t + skew - 1.0) + "Z",
        "reason": reason,
        "message": f'Node condition {cond} is now: True, reason: {reason}, message: "{msg}"',
    }
    body = {
        "level": "info",
        "ts": iso_s(t + skew) + "Z",
        "msg": "NPD caught event: %v",
        "details: ": detail,
        "HealthMonitoringAgentDetectionEvent": "HealthEvent",
    }
    return f"{d[0]:%Y-%m-%dT%H:%M:%S}.{d[1] // 1000:03d}Z " + json.dumps(body, separators=(",", ":"))


def node_files(atts: list[Att], fleet: Fleet, seed: int, bundle: Path, info: dict) -> None:
    a1, a2, a3, a4, a5 = atts
    t_end = a5.E + 1800
    for h in HOSTS + SPARES:
        r = random.Random(f"{seed}/kern/{h}")
        sk = fleet.skew[h]
        nd = bundle / "nodes" / h
        boot = fleet.boot[h]
        ev = [(boot + dt, m) for dt, m in boot_lines(h, 0, fleet)] + noise(boot, t_end, r)
        hma: list[str] = []
        if h == H_XID:
            g = XID_GPU
            pci = f"0000:{BUS[g][:2]}:00"
            R = a1.R
            pid = 412_000 + r.randint(0, 9999)
            ev = [x for x in ev if x[0] < R + 400]
            ev += [
                (R, f"NVRM: GPU at PCI:{pci}: {fleet.uuid[h, g]}"),
                (R, f"NVRM: GPU Board Serial Number: {fleet.serial[h, g]}"),
                (R, f"NVRM: Xid (PCI:{pci}): 79, pid={pid}, name=pt_main_thread, GPU has fallen off the bus."),
                (R, f"NVRM: GPU {pci}.0: GPU has fallen off the bus."),
                (R, "NVRM: kgspRcAndNotifyAllChannels_IMPL: RC all channels for critical error 79."),
                (
                    R + 0.7,
                    f"NVRM: Xid (PCI:{pci}): 154, GPU recovery action changed from 0x0 (None) to 0x2 "
                    f"(Node Reboot Required)",
                ),
                (R + 246, f"INFO: task pt_main_thread:{pid} blocked for more than 241 seconds."),
                (R + 246, f"      Tainted: P           OE     {KERNEL} #78-Ubuntu"),
                (R + 246, '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.'),
            ]
            put(
                nd / "journal-kernel-old-instance.txt",
                (f"-- Logs begin at {datetime.fromtimestamp(boot + sk, UTC):%a %Y-%m-%d %H:%M:%S} UTC. --\n").encode()
                + render("iso", h, ev, sk, boot),
            )
            hma.append(
                hma_line(
                    R + 27.4,
                    sk,
                    "XidHardwareFailure",
                    "NvidiaErrorReboot",
                    f"NVRM: Xid (PCI:{pci}): 79, pid={pid}, name=pt_main_thread, GPU has fallen off the bus.",
                )
            )
            nb = a1.E + 640  # replacement instance boots
            ev = [(nb + dt, m) for dt, m in boot_lines(h, 1, fleet)] + noise(nb, t_end, r)
            put(nd / "kern.log", render("syslog", h, ev, sk, nb))
            put(nd / "health-monitoring-agent.log", ("\n".join(hma) + "\n").encode())
            continue
        if h == H_EFA:
            nb = a2.E + 700
            old = [x for x in ev if x[0] < a2.E + 200]
            put(nd / "journal-kernel-old-instance.txt", render("iso", h, old, sk, boot))
            ev = [(nb + dt, m) for dt, m in boot_lines(h, 1, fleet)] + noise(nb, t_end, r)
            boot = nb
        if h == H_FSX:
            Rr = a3.R
            ev += [
                (
                    Rr,
                    f"LustreError: 166-1: {FSX_OST}-osc-ffff9c2e41d7e000: Connection to {FSX_OST} (at {FSX_OSS_IP}) "
                    f"was lost; in progress operations using this service will wait for recovery to complete",
                ),
                (
                    Rr + 6.2,
                    f"LustreError: 167-0: {FSX_OST}-osc-ffff9c2e41d7e000: This client was evicted by {FSX_OST}; "
                    f"in progress operations using this service will fail.",
                ),
                (
                    Rr + 6.3,
                    f"LustreError: 31877:0:(ldlm_resource.c:1125:ldlm_resource_complain()) "
                    f"{FSX_OST}-osc-ffff9c2e41d7e000: namespace resource [0x2c0000401:0x1a7f3:0x0].0x0 "
                    f"(ffff9c3a0b6e1e40) refcount nonzero (1) after lock cleanup; forcing cleanup.",
                ),
                (
                    Rr + 7.9,
                    f"Lustre: {FSX_OST}-osc-ffff9c2e41d7e000: Connection restored to {FSX_OSS_IP} (at {FSX_OSS_IP})",
                ),
            ]
        if h == H_SPARE:
            tb = a4.F + 0.5 * (a4.R - a4.F)
            ev += [
                (
                    tb,
                    f"LustreError: 166-1: {FSX}-OST0001-osc-ffff8e1b5a3f1000: Connection to {FSX}-OST0001 "
                    f"(at 10.1.201.36@tcp) was lost; in progress operations using this service will wait for "
                    f"recovery to complete",
                ),
                (
                    tb + 41.0,
                    f"Lustre: {FSX}-OST0001-osc-ffff8e1b5a3f1000: Connection restored to "
                    f"10.1.201.36@tcp (at 10.1.201.36@tcp)",
                ),
            ]
        if h == H_ROWREMAP:
            tr = a3.F + 0.63 * (a3.R - a3.F)
            pci = f"0000:{BUS[6][:2]}:00"
            ev += [
                (
                    tr,
                    f"NVRM: Xid (PCI:{pci}): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row "
                    f"(0x00000000000e4a21) marked for remapping, reset gpu to activate.",
                ),
                (
                    tr + 0.4,
                    f"NVRM: Xid (PCI:{pci}): 154, GPU recovery action changed from 0x0 (None) to 0x1 "
                    f"(GPU Reset Required)",
                ),
            ]
            info["rowremap_ts"] = tr
        if h in (H_FSX, H_ROWREMAP, HOSTS[2], HOSTS[9]):  # syslog, rotated mid-run
            cut = a3.F + 3 * 3600
            put(nd / "kern.log.1.gz", render("syslog", h, [x for x in ev if x[0] < cut], sk, boot), gz=True)
            put(nd / "kern.log", render("syslog", h, [x for x in ev if x[0] >= cut], sk, boot))
        elif h in (HOSTS[4], HOSTS[11], H_EFA):
            put(nd / "kern.log", render("syslog", h, ev, sk, boot))
        else:
            put(nd / "journal-kernel.txt", render("iso", h, ev, sk, boot))


# ----------------------------------------------------------------------------- scheduler
def scheduler(atts: list[Att], bundle: Path, seed: int) -> None:
    a1, a2, a3, a4, a5 = atts
    L = Lines()

    def c(t, m):
        d, us = _dt(t)
        L.add(t, f"[{d:%Y-%m-%dT%H:%M:%S}.{us // 1000:03d}] {m}")

    hl = hostlist(HOSTS)
    cpus = 192 * NNODES
    sub_a = a1.S - 3.4
    c(sub_a, f"_slurm_rpc_submit_batch_job: JobId={JOB_A} InitPrio=4294901754 usec=612")
    c(a1.S - 0.95, f"sched: Allocate JobId={JOB_A} NodeList={hl} #CPUs={cpus} Partition=dev")
    for a, bad, ej in ((a1, H_XID, JOB_EXP1), (a2, H_EFA, JOB_EXP2)):
        nxt = atts[a.k]
        c(a.E + 3.05, f"update_node: node {bad} reason set to: Action:Replace")
        c(a.E + 3.06, f"update_node: node {bad} state set to FAILING")
        c(a.E + 4.7, f"_slurm_rpc_submit_batch_job: JobId={ej} InitPrio=4294901760 usec=455")
        c(a.E + 96.0, f"Node {bad} now responding")
        c(nxt.S - 40.0, f"node {bad} returned to service")
        c(nxt.S - 6.3, f"sched: Allocate JobId={ej} NodeList={bad} #CPUs=192 Partition=dev")
        c(nxt.S - 2.2, f"_job_complete: JobId={ej} WEXITSTATUS 0")
        c(nxt.S - 2.1, f"_job_complete: JobId={ej} done")
    c(a4.E + 214.6, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={JOB_A} uid {USER_UID}")
    end_a = a4.E + 216.0
    c(end_a, f"_job_complete: JobId={JOB_A} WTERMSIG 15")
    c(end_a + 0.01, f"_job_complete: JobId={JOB_A} done")
    c(a5.S - 7.1, f"_slurm_rpc_submit_batch_job: JobId={JOB_B} InitPrio=4294901771 usec=598")
    c(a5.S - 0.9, f"sched: Allocate JobId={JOB_B} NodeList={hl} #CPUs={cpus} Partition=dev")
    c(a5.E + 1.2, f"_job_complete: JobId={JOB_B} WEXITSTATUS 0")
    c(a5.E + 1.21, f"_job_complete: JobId={JOB_B} done")
    L.rows = [x for x in L.rows if x[2]]
    put(bundle / "scheduler" / "slurmctld.log", L.data())
    hdr = "JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"
    rows = [
        f"{JOB_A}|gpt34b-pretrain|dev|ml|{cpus}|CANCELLED by {USER_UID}|0:0|{iso_s(sub_a)}|{iso_s(a1.S - 0.9)}|"
        f"{iso_s(end_a)}|{elapsed(end_a - a1.S)}|{NNODES}|{hl}",
        f"{JOB_A}.batch|batch||ml|192|CANCELLED|0:15|{iso_s(a1.S - 0.9)}|{iso_s(a1.S - 0.9)}|{iso_s(end_a)}|"
        f"{elapsed(end_a - a1.S)}|1|{HOSTS[0]}",
    ]
    for a in (a1, a2, a3, a4):
        st = "FAILED" if a.kind != "xid79" else "NODE_FAIL"
        rows.append(
            f"{JOB_A}.{a.stepid}|torchrun||ml|{cpus}|{st}|1:0|{iso_s(a.S)}|{iso_s(a.S)}|{iso_s(a.E)}|"
            f"{elapsed(a.E - a.S)}|{NNODES}|{hl}"
        )
    for a, bad, ej in ((a1, H_XID, JOB_EXP1), (a2, H_EFA, JOB_EXP2)):
        nxt = atts[a.k]
        rows.append(
            f"{ej}|gpt34b-pretrain|dev|ml|192|COMPLETED|0:0|{iso_s(a.E + 4.7)}|{iso_s(nxt.S - 6.3)}|"
            f"{iso_s(nxt.S - 2.2)}|{elapsed(4)}|1|{bad}"
        )
    rows += [
        f"{JOB_B}|gpt34b-pretrain|dev|ml|{cpus}|COMPLETED|0:0|{iso_s(a5.S - 7.1)}|{iso_s(a5.S)}|{iso_s(a5.E + 1.2)}|"
        f"{elapsed(a5.E + 1.2 - a5.S)}|{NNODES}|{hl}",
        f"{JOB_B}.batch|batch||ml|192|COMPLETED|0:0|{iso_s(a5.S)}|{iso_s(a5.S)}|{iso_s(a5.E + 1.2)}|"
        f"{elapsed(a5.E + 1.2 - a5.S)}|1|{HOSTS[0]}",
        f"{JOB_B}.0|torchrun||ml|{cpus}|COMPLETED|0:0|{iso_s(a5.S)}|{iso_s(a5.S)}|{iso_s(a5.E)}|"
        f"{elapsed(a5.E - a5.S)}|{NNODES}|{hl}",
    ]
    put(bundle / "scheduler" / "sacct.txt", ("\n".join([hdr] + rows) + "\n").encode())


# ----------------------------------------------------------------------------- config
def inventory() -> str:
    return f"""# HyperPod cluster hp-p5 (Slurm orchestrator), instance group worker-group-1
[providers.{PROVIDER}]
usd_per_gpu_hour = {USD_PER_GPU_HOUR}
support = "AWS Support case, SageMaker HyperPod; node replacement is automatic (Automatic node recovery)"

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = 8
interconnect = "EFA v2, 32 x 100 Gb/s per node (3200 Gbps)"
nodes = "{hostlist(HOSTS + SPARES)}"
contracted_nodes = 18
"""


def run_toml() -> str:
    return f"""# {RUN}: GPT ~34B dense (Megatron-LM core), TP={TP} PP={PP} DP={DP}, on SageMaker HyperPod
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}   # global batch {GBS} x sequence {SEQ}
flops_per_token = {FLOPS_PER_TOKEN:.4e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --nodes={NNODES} --exclusive gpt34b.sbatch   # srun --auto-resume=1 inside"
"""


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts = build(seed)
    ATTS.clear()
    ATTS.append(atts)
    fleet = Fleet(seed)
    _FLEET.clear()
    _FLEET.append(fleet)
    a1, a2, a3, a4, a5 = atts
    put(bundle / "inventory.toml", inventory().encode())
    rd = bundle / "runs" / RUN
    put(rd / "run.toml", run_toml().encode())
    info: dict = {}
    job_a = Lines()
    job_a.add(a1.S - 1.0, "+ export FI_EFA_FORK_SAFE=1 NCCL_SOCKET_IFNAME=^docker,lo,veth")
    for a in atts:
        pids = Pids(seed, a)
        o = attempt_output(a, fleet, pids, seed, info)
        if a.k < 4:
            _retry(
                o,
                a,
                atts[a.k].S,
                [H_XID] if a.k == 1 else [H_EFA] if a.k == 2 else [],
                JOB_EXP1 if a.k == 1 else JOB_EXP2 if a.k == 2 else None,
            )
        elif a.k == 4:
            o.add(
                a.E + 0.6,
                auto_resume(a.job, 0, "Initiating communication with cluster agent to diagnose health of nodes"),
            )
            t_k = a.E + 214.8
            o.add(
                t_k,
                f"slurmstepd: error: *** JOB {JOB_A} ON {HOSTS[0]} CANCELLED AT "
                f"{iso_s(t_k + fleet.skew[HOSTS[0]])} ***",
            )
            o.add(t_k + 0.2, "srun: forcing job termination")
        if a.k <= 4:
            job_a.rows += o.rows
            for h in HOSTS:
                put(
                    rd / f"job-{JOB_A}" / "nccl" / f"step-{a.stepid}-try{a.k - 1}" / f"{h}.log",
                    nccl_log(a, h, fleet, pids, seed),
                )
        else:
            put(rd / f"job-{JOB_B}" / f"hyperpod-{JOB_B}.out.gz", o.data(), gz=True)
            for h in HOSTS:
                put(rd / f"job-{JOB_B}" / "nccl" / "step-0" / f"{h}.log", nccl_log(a, h, fleet, pids, seed))
        if a.k == 3:
            for r, body in steps_jsonl(a, seed).items():
                gz = r % 4 != 0
                put(rd / f"job-{JOB_A}" / "steps" / (f"rank-{r:05d}.jsonl" + (".gz" if gz else "")), body, gz=gz)
    cut = len("srun: forcing job termination") - 11
    put(rd / f"job-{JOB_A}" / f"hyperpod-{JOB_A}.out", job_a.data(cut_last=cut))
    for h in HOSTS:
        put(
            bundle / "nodes" / h / ("nvidia-smi-query.csv.gz" if HOSTS.index(h) % 2 else "nvidia-smi-query.csv"),
            smi_csv(h, a3, seed),
            gz=bool(HOSTS.index(h) % 2),
        )
    node_files(atts, fleet, seed, bundle, info)
    scheduler(atts, bundle, seed)
    cats, total, per = ledger(atts)
    g = GPUS / 3600.0
    exc = sum(d - BASE_STEP for n, _, d in a3.steps if in_window(a3, n)) * g
    incs = []
    gpu_of = {"xid79": XID_GPU, "efa": EFA_GPU}
    for j, a in enumerate(atts[:4]):
        nxt = atts[j + 1]
        incs.append(
            {
                "id": j + 1,
                "attempt": a.k,
                "attempts": [a.k],
                "slurm_job": a.job,
                "slurm_step": a.stepid,
                "failure_mode": a.mode,
                "blame": "user" if a.mode == "user_code_error" else "provider",
                "host": a.root,
                "cluster": CLUSTER,
                "provider": PROVIDER,
                "gpu_index": gpu_of.get(a.kind),
                "root_ts": iso_z(a.R),
                "exit_ts": iso_z(a.E),
                "next_start_ts": iso_z(nxt.S),
                "next_first_step_ts": iso_z(nxt.F),
                "last_ckpt_step": a.last_ckpt,
                "failed_at_step": a.steps[-1][0],
                "gpu_hours": per[j],
                "gpu_hours_lost": round(sum(per[j].values()), 4),
            }
        )
    incs[0]["symptom_first_ts"] = iso_z(info["watchdog_first"])
    incs[1]["symptom_first_ts"] = iso_z(info["nccl_error_first"])
    incs[1]["symptom_hosts"] = EFA_PEERS
    incs[2]["doomed_save_step"] = a3.fail_after
    incs[2]["filesystem"] = f"FSx for Lustre {FSX} ({FSX_OST})"
    incs[2]["symptom_first_ts"] = iso_z(info["dcp_error_ts"])
    incs[3]["eval_iteration"] = a4.fail_after
    incs.append(
        {
            "id": 5,
            "attempt": 3,
            "attempts": [3],
            "slurm_job": JOB_A,
            "failure_mode": "gpu_throttle",
            "kind": None,
            "blame": "provider",
            "host": H_HOT,
            "cluster": CLUSTER,
            "provider": PROVIDER,
            "gpu_index": HOT_GPU,
            "rank": rank_of(H_HOT, HOT_GPU),
            "from_step": STRAGGLE[0],
            "to_step": STRAGGLE[1],
            "gpu_hours_lost": round(exc, 4),
            "note": "straggler, no failure: HW thermal slowdown on one GPU; ledger category straggler",
        }
    )
    decoys = {
        H_ROWREMAP: "Xid 63 row remap + Xid 154 (GPU Reset Required) mid attempt 3; training kept its pace",
        H_SPARE: "FSx connection lost/restored blip on the idle spare, never allocated to the run",
        **{
            p: f"EFA peer of {H_EFA}: its NET/OFI errors name only {H_EFA} and come after it (symptom)"
            for p in EFA_PEERS
        },
    }
    truth = {
        "run": RUN,
        "gpus": GPUS,
        "seed": seed,
        "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN,
        "baseline_step_s": BASE_STEP,
        "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "first_start_ts": iso_z(a1.S),
        "last_end_ts": iso_z(a5.E),
        "clock_skew_s": fleet.skew,
        "match_on_attempt": True,
        "attempts": [
            {
                "attempt": a.k,
                "slurm_job": a.job,
                "slurm_step": a.stepid,
                "nodes": hostlist(HOSTS),
                "start_ts": iso_z(a.S),
                "first_step_ts": iso_z(a.F),
                "exit_ts": iso_z(a.E),
                "loaded_step": a.load,
                "last_step": a.steps[-1][0],
                "last_ckpt_step": a.last_ckpt,
                "saves": [n for n, _, _ in a.saves],
                "evals": [n for n, _, _ in a.evals],
                "end": a.kind,
            }
            for a in atts
        ],
        "replaced_instances": {
            H_XID: [fleet.inst[H_XID, 0], fleet.inst[H_XID, 1]],
            H_EFA: [fleet.inst[H_EFA, 0], fleet.inst[H_EFA, 1]],
        },
        "straggler": {
            "host": H_HOT,
            "gpu": HOT_GPU,
            "attempt": 3,
            "from_step": STRAGGLE[0],
            "to_step": STRAGGLE[1],
            "compute_factor": SLOW_FACTOR,
            "window_step_s": round(WINDOW_STEP, 4),
            "excess_gpu_hours": round(exc, 4),
        },
        "incidents": incs,
        "forbidden_incidents": [
            {
                "failure_mode": "checkpoint_lost",
                "attempts": [3, 4],
                "reason": "the save at 5500 never reported "
                "success; loading 5250 is the normal fallback, not a lost checkpoint",
            },
            {
                "failure_mode": "checkpoint_lost",
                "attempts": [4, 5],
                "reason": "the save at 6000 never started (eval crashed first); loading 5750 is normal",
            },
            {
                "failure_mode": "manual_stop",
                "attempts": [4],
                "reason": "the scancel came after the step had already died of the user's eval bug",
            },
        ],
        "decoy_hosts": sorted(decoys),
        "decoy_reasons": decoys,
        "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats,
        "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incs[:3]) + exc, 4)},
        "notes": (
            "Times are the Slurm controller's UTC clock; node clocks are skewed by clock_skew_s. Attempts "
            "1-4 are steps/retries of job 1187 (one output file); attempt 5 is job 1203. The replaced nodes "
            "keep their Slurm names. Ledger: see the hyperpod.py docstring."
        ),
    }
    put(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261202)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    files = [p for p in (out / "bundle").rglob("*") if p.is_file()]
    print(
        f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB) and "
        f"{out / 'truth.json'}; total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents"
    )


if __name__ == "__main__":
    main()
