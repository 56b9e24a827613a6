#!/usr/bin/env python3
# ruff: noqa: E501, UP031  (real log lines quoted whole; printf-style ids)
"""Blind campaign "blackwell_slurm": a Slurm 24.11 cluster of B200 HGX nodes on the newest stack.

Written without reading clusterlab's analysis code (only the bundle layout and taxonomy of
DESIGN.md and the shape of the shared campaigns). Standard library only, deterministic per --seed.

Writes, under --out DIR:
  DIR/bundle/inventory.toml
  DIR/bundle/runs/bw-llama70b/run.toml
  DIR/bundle/runs/bw-llama70b/attempt-<k>/slurm-<jobid>.out   sbatch output: srun + torchrun (PyTorch
      2.7) + Megatron-Core; the requeued job 88142 (attempts 4 and 5) APPENDS both of its runs to
      one file in attempt-4/ (Slurm appends the output of a requeued batch job)
  DIR/bundle/runs/bw-llama70b/attempt-<k>/nccl/<host>.log     NCCL_DEBUG=INFO (NCCL 2.26, RAS on);
      attempt-4/nccl/<host>.log likewise holds both runs of job 88142
  DIR/bundle/nodes/<host>/{kern.log, journal-k.txt, dmesg-T.log}   kernel log, one style per host
  DIR/bundle/scheduler/{slurmctld.log, sacct.txt, scontrol-show-node.txt}
  DIR/truth.json
Usage: blackwell_slurm.py --out DIR [--seed N]

Scenario (run "bw-llama70b", 128 GPUs = 16 nodes x 8 B200 of cluster "bw-1" / provider "helion";
inventory bwx-[001-020]: bwx-017..020 are spares; driver 575.57.08 (open kernel modules, GSP
firmware), NCCL 2.26.5, PyTorch 2.7, Megatron-Core, TP 8 x PP 2 x DP 8, save every 100 steps to
Lustre /lustre/scratch; TORCH_NCCL_ASYNC_ERROR_HANDLING=3, watchdog timeout 10 min
(--distributed-timeout-minutes 10), flight recorder on (TORCH_NCCL_TRACE_BUFFER_SIZE, dump on
timeout). All times UTC; node clocks within a second of the controller.
  attempt 1  job 88101  fresh start. bwx-005 GPU2's GSP stops answering: "NVRM: Xid (PCI:..): 119,
             pid=..., name=python3, Timeout after 6s of waiting for RPC response from GPU2 GSP!"
             repeated, then Xid 154 "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset
             Required)". Every other rank blocks in the next collective; ~10 min later every rank's
             watchdog fires (PyTorch 2.7 "[PG ID 0 PG GUID 0(default_pg) Rank N] failure detected by
             watchdog at work sequence id ..." lines, flight recorder dump), ranks abort (SIGABRT),
             torchrun ChildFailedError, job FAILED. Cause: the GPU on bwx-005      [gpu_hw_other]
  attempt 2  job 88117  (bwx-005 drained "NHC: GPU reset required", spare bwx-017 in). bwx-009 GPU6
             NVLink5 fatal error: Xid 149 "NETIR_LINK_EVT Fatal ..." + Xid 154 (None -> Drain and
             Reset); that rank raises "CUDA error: an uncorrectable NVLink error was detected during
             the execution"; peers see NCCL errors; job FAILED.                     [nvlink_error]
  attempt 3  job 88130  (bwx-009 drained, spare bwx-018 in). IB port 1 of mlx5_6 on bwx-012 goes down
             (mlx5 port module event + "ibp156s0: Link down"); NCCL WARN NET/IB completion error
             (status=12, transport retry counter exceeded) on bwx-012 and on its rail peers bwx-011 /
             bwx-013; PyTorch "NCCL error ... remote process exited or there was a network error";
             job FAILED. Cause: the link of bwx-012                                 [network]
  attempt 4  job 88142  (bwx-012 drained, spare bwx-019 in). Healthy; a higher-priority job preempts
             it (PreemptMode=REQUEUE): slurmctld "preempted JobId=88142 has been requeued to reclaim
             resources for JobId=88150"; slurmstepd "... DUE TO PREEMPTION ***"       [preemption]
  attempt 5  job 88142 (requeued, restart 1, same nodes) after the preemptor ends. Loading the latest
             checkpoint fails on every rank: the user had changed the model config (num query groups)
             between submissions: Megatron-Core dist_checkpointing "CheckpointingException: Global
             shape mismatch for loaded ... and expected ... tensor for key ..."; no training step
             runs; job FAILED.                                                  [user_code_error]
  attempt 6  job 88163  config fixed. At one save the Lustre OSTs stop answering ("LustreError: 11-0:
             ... operation ost_write to node ... failed: rc = -110", "Connection to ... was lost";
             on every host), the save takes ~20 min instead of ~45 s, then "Connection restored";
             training continues at pace (a checkpoint stall, no failure)  [checkpoint_stall, host null]
             Later the attempt runs into the 8 h Slurm TIME LIMIT                    [time_limit]
  attempt 7  job 88171  completes ("exiting program at iteration N").
  Decoys: Xid 13 on bwx-003 in the restart gap after attempt 2 (another user's job, pid/name of that
  process); Xid 31 MMU fault on the idle spare bwx-020 during a dcgmi diag job; a Nonfatal NVLink
  Xid 145 on bwx-014 mid attempt 6 (training goes on); PCIe AER corrected errors on bwx-007;
  NCCL RAS INFO lines on every host; NCCL WARN "Got async event : GID table change" on bwx-004;
  rail peers bwx-011 / bwx-013 of the IB fault; PyTorch [W] warnings every attempt; Xid 154 back to
  "0x0 (None)" on drained bwx-005 after its GPU reset (outside every job).

Ledger (truth.json expected_ledger, GPU-hours = 128 x seconds / 3600; conventions of campaign1):
  startup    = attempt start (sacct Start; for the requeued run its new Start) -> start of its first
               training step; for attempt 5 (no step) -> the root event
  productive = kept steps (step <= the last durable checkpoint of a failed attempt; all steps of a
               completed attempt), whole step durations
  checkpoint = durations of completed saves (the stalled save included), plus the tail after the final
               save of the completed attempt
  recompute  = end of the last durable save of the attempt (or its first step start) -> root event
  hang       = root event -> attempt exit (sacct End). Root events: first Xid 119, the Xid 149, the
               mlx5 port event, the preemption, the CheckpointingException, the time-limit cancel.
  restart    = attempt exit -> next attempt start
  straggler = slowdown = data_stall = idle = 0

Formats (looked up with the search tools; text written anew):
  * Xid 119 "Timeout after 6s of waiting for RPC response from GPU1 GSP! Expected function 76
    (GSP_RM_CONTROL) (0x20802a02 0x8)." with pid=, name= (NVSentinel, gpud tests, OpenShift docs);
    Xid 154 "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)" with no pid
    (gpud / NVSentinel test strings, public issue logs); Xid 149/145 "NETIR_LINK_EVT Fatal XC0 i0 Link
    NN (0x...)" (Blackwell NVLink5 catalog mnemonics; exact spelling not found publicly, shaped on the
    r570 message layout); Xid 13 / 31 (as campaign1/2 and public issues).
  * PyTorch >= 2.6 ProcessGroupNCCL: "[rank0]:[E602 11:17:52.399340163 ProcessGroupNCCL.cpp:2268] [PG
    ID 1 PG GUID 1 Rank 0]  failure detected by watchdog at work sequence id: 2847 PG status: last
    enqueued work: 2855, last completed work: 2846" (LlamaFactory #8261), "Watchdog caught collective
    operation timeout: WorkNCCL(...)", "First PG on this rank to signal dumping.", "Received a dump
    signal due to a collective timeout from  rank N ...".
  * NCCL 2.2x INFO init lines, RAS, NET/IB completion WARN; Slurm 24 slurmctld / slurmstepd / sacct.
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
RUN = "bw-llama70b"
CLUSTER, PROVIDER = "bw-1", "helion"
GPN, NODES_USED = 8, 16
GPUS = GPN * NODES_USED
TP, PP, DP = 8, 2, 8
GBS, SEQ = 512, 8192
TOKENS_PER_STEP = GBS * SEQ
FLOPS_PER_TOKEN = 4.880e11
PEAK_B200 = 2.25e15
BASE_STEP = 15.80
JIT = 0.004
SAVE_EVERY = 100
LOG_EVERY = 10
TRAIN_ITERS = 3000
WATCHDOG_S = 600
T0 = datetime(2026, 12, 1, 6, 0, 0, tzinfo=UTC).timestamp()
NCCL_VERSION = "2.26.5+cuda12.9"
DRIVER = "575.57.08"
CKPT = "/lustre/scratch/llm/bw-llama70b/ckpt"
HOSTS = [f"bwx-{i:03d}" for i in range(1, 21)]
GSP = ("bwx-005", 2)
NVL = ("bwx-009", 6)
IB = ("bwx-012", 6)
IB_PEERS = ["bwx-011", "bwx-013"]
SPARES = ["bwx-017", "bwx-018", "bwx-019"]
IDLE_SPARE = "bwx-020"
XID13_HOST, XID145_HOST, AER_HOST, GID_HOST = "bwx-003", "bwx-014", "bwx-007", "bwx-004"
BUSIDS = [
    "0000:1b:00",
    "0000:43:00",
    "0000:52:00",
    "0000:61:00",
    "0000:9d:00",
    "0000:c3:00",
    "0000:d1:00",
    "0000:df:00",
]
NIC_DEV = [f"mlx5_{i}" for i in range(8)]
NIC_IF = ["ibp26s0", "ibp60s0", "ibp77s0", "ibp94s0", "ibp156s0", "ibp188s0", "ibp156s1", "ibp220s0"]
NIC_PCI = [
    "0000:1a:00.0",
    "0000:3c:00.0",
    "0000:4d:00.0",
    "0000:5e:00.0",
    "0000:9c:00.0",
    "0000:bc:00.0",
    "0000:cc:00.0",
    "0000:dc:00.0",
]
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
]


# ----------------------------------------------------------------------------- time formats
def _split(t: float):
    us = int(round(t * 1e6))
    s, us = divmod(us, 1_000_000)
    return datetime.fromtimestamp(s, UTC), us


def iso_z(t: float) -> str:
    d, us = _split(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{us // 1000:03d}Z"


def slurm_ts(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%dT%H:%M:%S")


def ctld(t: float) -> str:
    d, us = _split(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{us // 1000:03d}]"


def meg_dt(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%d %H:%M:%S")


def glog(t: float, lvl: str) -> str:  # torch c10 / torchrun glog-style prefix, ns precision
    d, us = _split(t)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{us:06d}{(us * 7) % 1000:03d}"


def glog_us(t: float, lvl: str) -> str:  # torchrun python logging (microseconds, 000 tail)
    d, us = _split(t)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{us:06d}"


def date_cmd(t: float) -> str:
    d, _ = _split(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def syslog_ts(t: float) -> str:
    d, _ = _split(t)
    return f"{d:%b} {d.day:2d} {d:%H:%M:%S}"


def short_iso_precise(t: float) -> str:
    d, us = _split(t)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{us:06d}+00:00"


def dmesg_T(t: float) -> str:
    d, _ = _split(t)
    return f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}]"


def elapsed(sec: float) -> str:
    sec = int(round(sec))
    h, r = divmod(sec, 3600)
    m, s = divmod(r, 60)
    return (f"{h // 24}-{h % 24:02d}" if h >= 24 else f"{h:02d}") + f":{m:02d}:{s:02d}"


def hostlist(hosts) -> str:
    nums = sorted(int(h[4:]) for h in hosts)
    out, a, b = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == b + 1:
            b = n
            continue
        out.append(f"{a:03d}" if a == b else f"{a:03d}-{b:03d}")
        if n is not None:
            a = b = n
    return f"bwx-[{','.join(out)}]" if len(nums) > 1 else f"bwx-{nums[0]:03d}"


class Sink:
    def __init__(self):
        self.items = []

    def add(self, t, line):
        self.items.append((t, len(self.items), line))

    def extend(self, t, lines):
        for ln in lines:
            self.add(t, ln)

    def render(self) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
        return ("\n".join(x[2] for x in self.items) + "\n").encode()


def write(path: Path, data: bytes, gz: bool = False):
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as f:
            f.write(data)
        data = buf.getvalue()
    path.write_bytes(data)


# ----------------------------------------------------------------------------- timeline
class Attempt:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps, self.saves = [], []
        self.R = self.E = None
        self.stall = None


def simulate(a: Attempt, rng: random.Random) -> None:
    t, n = a.F, a.load
    a.steps, a.saves = [], []
    while True:
        if a.kind == "complete" and n >= TRAIN_ITERS:
            a.R = None
            a.E = float(math.ceil(t + 6.0))
            return
        dur = BASE_STEP * (1 + rng.uniform(-JIT, JIT))
        if a.kind in ("gsp", "nvlink", "ib", "preempt") and t + dur > a.fail_at:
            a.R = float(a.fail_at)
            a.E = float(math.ceil(a.R + a.tail))
            return
        if a.kind == "timelimit" and t + dur > a.T:
            a.R = a.T
            a.E = a.T + a.tail
            return
        a.steps.append((n + 1, t, dur))
        t += dur
        n += 1
        if n % SAVE_EVERY == 0:
            c = round(rng.uniform(41.0, 49.0), 2)
            if a.kind == "timelimit" and a.stall is None and t > a.F + a.stall_after:
                c = round(1180.0 + rng.uniform(0, 160), 2)
                a.stall = (n, t, c)
            a.saves.append((n, t, c))
            t += c


def build(seed: int) -> list[Attempt]:
    rng = random.Random(f"{seed}-bw-timeline")
    used1 = HOSTS[:16]
    used2 = [h if h != GSP[0] else SPARES[0] for h in used1]
    used3 = [h if h != NVL[0] else SPARES[1] for h in used2]
    used4 = [h if h != IB[0] else SPARES[2] for h in used3]
    specs = [
        dict(
            k=1,
            job=88101,
            restart=0,
            nodes=used1,
            kind="gsp",
            mode="gpu_hw_other",
            host=GSP[0],
            startup=250 + rng.randint(-8, 8),
            run=3.4 * 3600 + rng.randint(0, 1200),
            tail=WATCHDOG_S + 48 + rng.randint(0, 20),
            gap=2400 + rng.randint(-200, 200),
        ),
        dict(
            k=2,
            job=88117,
            restart=0,
            nodes=used2,
            kind="nvlink",
            mode="nvlink_error",
            host=NVL[0],
            startup=262 + rng.randint(-8, 8),
            run=2.6 * 3600 + rng.randint(0, 1200),
            tail=38 + rng.randint(0, 10),
            gap=2100 + rng.randint(-200, 200),
        ),
        dict(
            k=3,
            job=88130,
            restart=0,
            nodes=used3,
            kind="ib",
            mode="network",
            host=IB[0],
            startup=258 + rng.randint(-8, 8),
            run=1.9 * 3600 + rng.randint(0, 1200),
            tail=70 + rng.randint(0, 20),
            gap=1500 + rng.randint(-100, 100),
        ),
        dict(
            k=4,
            job=88142,
            restart=0,
            nodes=used4,
            kind="preempt",
            mode="preemption",
            host=None,
            startup=255 + rng.randint(-8, 8),
            run=2.2 * 3600 + rng.randint(0, 1200),
            tail=5.0,
            gap=3300 + rng.randint(-300, 300),
        ),
        dict(
            k=5,
            job=88142,
            restart=1,
            nodes=used4,
            kind="usererr",
            mode="user_code_error",
            host=None,
            startup=0,
            load_fail=232 + rng.randint(-6, 6),
            tail=14 + rng.randint(0, 4),
            gap=1900 + rng.randint(-200, 200),
        ),
        dict(
            k=6,
            job=88163,
            restart=0,
            nodes=used4,
            kind="timelimit",
            mode="time_limit",
            host=None,
            startup=249 + rng.randint(-8, 8),
            limit=8 * 3600,
            stall_after=2.5 * 3600 + rng.randint(0, 900),
            tail=32.0 + rng.randint(0, 6),
            gap=700 + rng.randint(-60, 60),
        ),
        dict(
            k=7,
            job=88171,
            restart=0,
            nodes=used4,
            kind="complete",
            mode=None,
            host=None,
            startup=251 + rng.randint(-8, 8),
            gap=None,
        ),
    ]
    atts = [Attempt(**s) for s in specs]
    t, load = T0, 0
    global TRAIN_ITERS
    for a in atts:
        a.load = load
        a.S = float(t)
        if a.kind == "complete":  # the run's length: ~750 steps after the last resume
            TRAIN_ITERS = int(math.ceil((load + 750) / SAVE_EVERY) * SAVE_EVERY)
        if a.kind == "usererr":
            a.F = None
            a.R = a.S + a.load_fail
            a.E = float(math.ceil(a.R + a.tail))
            a.last_ckpt = load
        else:
            a.F = a.S + a.startup
            if a.kind == "timelimit":
                a.T = a.S + a.limit
            tries = 0
            while True:
                if a.kind in ("gsp", "nvlink", "ib", "preempt"):
                    a.fail_at = math.floor(a.F + a.run)
                simulate(a, random.Random(f"{seed}-bw-steps-{a.k}-{tries}"))
                # never fail right inside a save or in the first seconds after one
                ok = True
                if a.R is not None and a.saves:
                    sn, st, sc = a.saves[-1]
                    if st <= a.R <= st + sc + 60 or (a.steps and a.steps[-1][0] == sn and a.kind != "timelimit"):
                        ok = False
                if a.kind == "timelimit" and a.stall is None:
                    ok = False
                if ok:
                    break
                tries += 1
                if a.kind == "timelimit":
                    a.stall_after -= 1800
                else:
                    a.run += 211
            ck = [n for n, _, _ in a.saves]
            a.last_ckpt = ck[-1] if ck else load
        load = a.last_ckpt
        if a.gap is not None:
            t = math.ceil(a.E + a.gap)
    return atts


def ledger(atts):
    cats = dict.fromkeys(
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
        if a.kind == "usererr":
            cats["startup"] += a.R - a.S
            d = dict(startup_self=a.R - a.S, hang=a.E - a.R)
        else:
            cats["startup"] += a.F - a.S
            kept = a.last_ckpt if a.kind != "complete" else 10**9
            cats["productive"] += sum(d for n, _, d in a.steps if n <= kept)
            cats["checkpoint"] += sum(c for _, _, c in a.saves)
            if a.kind == "complete":
                cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
                continue
            base = (a.saves[-1][1] + a.saves[-1][2]) if a.saves else a.F
            cats["recompute"] += a.R - base
            d = dict(recompute=a.R - base, hang=a.E - a.R)
        cats["hang"] += a.E - a.R
        nxt = atts[i + 1]
        cats["restart"] += nxt.S - a.E
        d["restart"] = nxt.S - a.E
        d["startup"] = (nxt.F if nxt.F is not None else nxt.R) - nxt.S
        per.append(d)
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600
    return (
        {k: round(v * g, 4) for k, v in cats.items()},
        round(total * g, 4),
        [{k: round(v * g, 4) for k, v in d.items()} for d in per],
    )


class Pids:
    def __init__(self, seed, a):
        rng = random.Random(f"{seed}-bw-pids-{a.k}")
        self.agent, self.worker, self.tid, self.comm = {}, {}, {}, {}
        for h in a.nodes:
            ag = rng.randint(50_000, 3_000_000)
            self.agent[h] = ag
            for d in range(GPN):
                self.worker[h, d] = ag + 17 + d
                self.tid[h, d] = ag + 17 + d + rng.randint(300, 2500)
                self.comm[h, d] = "0x%x" % (0x5600_0000_0000 + (rng.getrandbits(32) << 4))
        self.comm_id = "0x%016x" % rng.getrandbits(64)


def rank_of(a, host, gpu):
    return a.nodes.index(host) * GPN + gpu


# ----------------------------------------------------------------------------- training log
def loss_at(n, rng):
    return 1.85 + 9.7 * math.exp(-n / 300.0) + 0.7 * math.exp(-n / 3500.0) + rng.gauss(0, 0.012)


def train_log(a: Attempt, pids: Pids, seed: int, L: Sink, info: dict) -> None:
    rng = random.Random(f"{seed}-bw-train-{a.k}")
    S, F = a.S, a.F
    L.add(S, f"START TIME: {date_cmd(S)}")
    L.add(
        S + 0.01,
        f"SLURM_JOB_ID={a.job} SLURM_RESTART_COUNT={a.restart} SLURM_NNODES={len(a.nodes)} "
        f"SLURM_JOB_NODELIST={hostlist(a.nodes)}",
    )
    L.add(
        S + 0.02,
        f"+ srun --kill-on-bad-exit=1 --cpu-bind=none torchrun --nnodes={len(a.nodes)} "
        f"--nproc_per_node={GPN} --rdzv_backend=c10d --rdzv_endpoint={a.nodes[0]}:29500 "
        f"pretrain_gpt.py --tensor-model-parallel-size {TP} --pipeline-model-parallel-size {PP} "
        f"--num-layers 80 --hidden-size 8192 --num-attention-heads 64 --group-query-attention "
        f"--num-query-groups {16 if a.kind == 'usererr' else 8} --seq-length {SEQ} "
        f"--global-batch-size {GBS} --micro-batch-size 1 --train-iters {TRAIN_ITERS} "
        f"--save-interval {SAVE_EVERY} --save {CKPT} --load {CKPT} --ckpt-format torch_dist "
        f"--distributed-timeout-minutes {WATCHDOG_S // 60} --log-interval {LOG_EVERY} --bf16",
    )
    t = S + 31.0
    for i, h in enumerate(a.nodes):
        p = f"{glog_us(t + 0.03 * i, 'W')} {pids.agent[h]} torch/distributed/run.py:766] "
        L.extend(
            t + 0.03 * i,
            [
                p,
                p + "*" * 41,
                p + "Setting OMP_NUM_THREADS environment variable for "
                "each process to be 1 in default, to avoid your system being overloaded, "
                "please further tune the variable for optimal performance in your "
                "application as needed. ",
                p + "*" * 41,
            ],
        )
    ti = S + 48.0
    L.add(
        ti,
        f"using world size: {GPUS}, data-parallel size: {DP}, context-parallel size: 1, "
        f"hierarchical context-parallel sizes: None, tensor-model-parallel size: {TP}, "
        f"encoder-tensor-model-parallel size: 0, pipeline-model-parallel size: {PP}, "
        f"encoder-pipeline-model-parallel size: 0",
    )
    L.add(ti + 0.1, "using torch.bfloat16 for parameters ...")
    L.add(ti + 2.0, "> initializing torch distributed ...")
    L.add(ti + 9.0, f"> initialized tensor model parallel with size {TP}")
    L.add(ti + 9.01, f"> initialized pipeline model parallel with size {PP}")
    L.add(
        ti + 9.5,
        f"[rank3]:[{glog(ti + 9.5, 'W')} ProcessGroupNCCL.cpp:4843] Warning: "
        f"TORCH_NCCL_AVOID_RECORD_STREAMS is the default now, this environment variable is thus "
        f"deprecated. (function operator())",
    )
    L.add(ti + 31.0, " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 4411441152")
    L.add(ti + 33.0, f"[after model, optimizer, and learning rate scheduler are built] datetime: {meg_dt(ti + 33)} ")
    if a.kind == "usererr":
        user_error(a, pids, L, ti + 34.0, rng, info)
        return
    if a.load:
        L.add(ti + 34.0, f" loading distributed checkpoint from {CKPT} at iteration {a.load}")
        L.add(F - 3.0, f"  successfully loaded checkpoint from {CKPT} [ t 1/{TP}, p 1/{PP} ] at iteration {a.load}")
    else:
        L.add(ti + 34.0, f"WARNING: could not find the metadata file {CKPT}/latest_checkpointed_iteration.txt")
        L.add(ti + 34.1, "    will not load any checkpoints and will start from random")
    L.add(F - 1.5, f"[after dataloaders are built] datetime: {meg_dt(F - 1.5)} ")
    L.add(F - 0.5, "done with setup ...")
    L.add(F - 0.4, "training ...")
    L.add(F, f"[before the start of training step] datetime: {meg_dt(F)} ")
    lrng = random.Random(f"{seed}-bw-loss-{a.k}")
    saves = {n: (st, c) for n, st, c in a.saves}
    win_t, win_n = 0.0, 0
    for n, st, dur in a.steps:
        win_t += dur
        win_n += 1
        end = st + dur
        if n % LOG_EVERY == 0:
            ms = 1000.0 * win_t / win_n
            tflops = TOKENS_PER_STEP * FLOPS_PER_TOKEN / (ms / 1000.0) / GPUS / 1e12
            gn = 0.2 + 2.8 * math.exp(-n / 400.0) + abs(lrng.gauss(0, 0.02))
            L.add(
                end,
                f" [{meg_dt(end)}] iteration {n:8d}/{TRAIN_ITERS:8d} | consumed samples: {n * GBS:12d} | "
                f"elapsed time per iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU): {tflops:.1f} | "
                f"learning rate: {3e-4 * min(1.0, n / 200):.6E} | global batch size: {GBS:5d} | "
                f"lm loss: {loss_at(n, lrng):.6E} | loss scale: 1.0 | grad norm: {gn:.3f} | "
                f"number of skipped iterations:   0 | number of nan iterations:   0 |",
            )
            win_t, win_n = 0.0, 0
        if n in saves:
            s0, c = saves[n]
            L.add(s0 + 0.01, f"saving checkpoint at iteration {n:7d} to {CKPT} in torch_dist format")
            L.add(
                s0 + c - 0.05, f"  successfully saved checkpoint from iteration {n:7d} to {CKPT} [ t 1/{TP}, p 1/{PP} ]"
            )
            L.extend(
                s0 + c - 0.04,
                [
                    "(min, max) time across ranks (ms):",
                    f"    save-checkpoint ................................: "
                    f"({1000 * c - 900 * rng.random():.2f}, {1000 * c:.2f})",
                ],
            )
    if a.kind == "complete":
        L.add(a.E - 4.0, f"[after training is done] datetime: {meg_dt(a.E - 4.0)} ")
        L.add(a.E - 3.9, f"exiting program at iteration {a.steps[-1][0]}")
        L.add(a.E - 1.0, f"END TIME: {date_cmd(a.E - 1.0)}")
    elif a.kind == "gsp":
        gsp_failure(a, pids, L, rng)
    elif a.kind == "nvlink":
        nvlink_failure(a, pids, L, rng)
    elif a.kind == "ib":
        ib_failure(a, pids, L, rng)
    elif a.kind == "preempt":
        signal_end(
            a,
            pids,
            L,
            f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(a.R)} DUE TO PREEMPTION ***",
            a.R,
        )
    elif a.kind == "timelimit":
        signal_end(
            a,
            pids,
            L,
            f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(a.T)} DUE TO TIME LIMIT ***",
            a.T,
        )


def childfailed(L, t, h, rank, pid, exitcode, sig=None):
    stamp = _split(t)[0].strftime("%Y-%m-%d_%H:%M:%S")
    L.extend(
        t,
        [
            "Traceback (most recent call last):",
            '  File "/usr/local/bin/torchrun", line 33, in <module>',
            "    sys.exit(load_entry_point('torch==2.7.1', 'console_scripts', 'torchrun')())",
            '  File "/usr/local/lib/python3.12/dist-packages/torch/distributed/launcher/api.py", line 270, in launch_agent',
            "    raise ChildFailedError(",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "=" * 56,
            "pretrain_gpt.py FAILED",
            "-" * 56,
            "Failures:",
            "  <NO_OTHER_FAILURES>",
            "-" * 56,
            "Root Cause (first observed failure):",
            "[0]:",
            f"  time      : {stamp}",
            f"  host      : {h}",
            f"  rank      : {rank} (local_rank: {rank % GPN})",
            f"  exitcode  : {exitcode} (pid: {pid})",
            "  error_file: <N/A>",
            f"  traceback : Signal {sig} (SIGABRT) received by PID {pid}"
            if sig
            else "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
            "=" * 56,
        ],
    )


def gsp_failure(a, pids, L, rng):
    h, g = GSP
    W = a.R + WATCHDOG_S + rng.uniform(1.0, 4.0)
    seq = 41000 + len(a.steps) * 37
    for i, hh in enumerate(a.nodes):
        for d in range(GPN):
            r = i * GPN + d
            tt = W + 0.002 * r
            if hh == h and d == g:
                continue
            p = f"[rank{r}]:[{glog(tt, 'E')} ProcessGroupNCCL.cpp:"
            L.add(
                tt,
                p + f"632] [Rank {r % (TP * PP)}] Watchdog caught collective operation timeout: "
                f"WorkNCCL(SeqNum={seq}, OpType=_ALLGATHER_BASE, NumelIn=33554432, NumelOut=268435456, "
                f"Timeout(ms)={WATCHDOG_S * 1000}) ran for {WATCHDOG_S * 1000 + rng.randint(5, 90)} "
                f"milliseconds before timing out.",
            )
            L.add(
                tt + 0.0003,
                p + f"2268] [PG ID 2 PG GUID 5 Rank {r % (TP * PP)}]  failure detected by watchdog "
                f"at work sequence id: {seq} PG status: last enqueued work: {seq + 2}, last "
                f"completed work: {seq - 1}",
            )
            if r % 16 == 0:
                L.add(
                    tt + 0.0005,
                    p + f"2103] [PG ID 2 PG GUID 5 Rank {r % (TP * PP)}] First PG on this rank to signal dumping.",
                )
    rg = rank_of(a, h, g)
    L.add(
        W + 1.2,
        f"[rank{rg}]:[{glog(W + 1.2, 'E')} ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) "
        f"Rank {rg}] Received a dump signal due to a collective timeout from  rank 0 and we will try our "
        f"best to dump the debug info. Last enqueued NCCL work: {seq + 1}, last completed NCCL work: "
        f"{seq - 1}.This is most likely caused by incorrect usages of collectives, e.g., wrong sizes used "
        f"across ranks, the order of collectives is not same for all ranks or the scheduled collective, "
        f"for some reason, didn't run. Additionally, this can be caused by GIL deadlock or other reasons "
        f"such as network errors or bugs in the communications library (e.g. NCCL), etc. ",
    )
    L.add(
        W + 2.0,
        f"[rank0]:[{glog(W + 2.0, 'I')} ProcessGroupNCCL.cpp:1587] [PG ID 0 PG GUID 0(default_pg) "
        f"Rank 0] ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1",
    )
    L.add(
        W + 2.4,
        f"[rank0]:[{glog(W + 2.4, 'I')} debug.cpp:58] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
        f"Dumping nccl trace to /lustre/scratch/llm/fr/{a.job}/nccl_trace_rank_0",
    )
    for r in (0, 9):
        tt = W + 8.0 + r * 0.01
        L.extend(
            tt,
            [
                f"[rank{r}]:[{glog(tt, 'E')} ProcessGroupNCCL.cpp:{684}] [Rank {r}] Some NCCL operations "
                f"have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU "
                f"operations might run on corrupted/incomplete data.",
                f"[rank{r}]:[{glog(tt, 'E')} ProcessGroupNCCL.cpp:{698}] [Rank {r}] To avoid data "
                f"inconsistency, we are taking the entire process down.",
                "terminate called after throwing an instance of 'c10::DistBackendError'",
                f"  what():  [PG ID 2 PG GUID 5 Rank {r}] Process group watchdog thread terminated with "
                f"exception: [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
                f"OpType=_ALLGATHER_BASE, NumelIn=33554432, NumelOut=268435456, Timeout(ms)={WATCHDOG_S * 1000}) "
                f"ran for {WATCHDOG_S * 1000 + 41} milliseconds before timing out.",
            ],
        )
    k = W + 12.0
    for i, hh in enumerate(a.nodes):
        tt = k + 0.05 * i
        ag = pids.agent[hh]
        L.add(
            tt,
            f"{glog_us(tt, 'E')} {ag} torch/distributed/elastic/multiprocessing/api.py:874] failed "
            f"(exitcode: -6) local_rank: 0 (pid: {pids.worker[hh, 0]}) of binary: /usr/bin/python3",
        )
        if hh == h:
            L.add(
                tt + 30.1,
                f"{glog_us(tt + 30.1, 'W')} {ag} torch/distributed/elastic/multiprocessing/api.py:919] "
                f"Unable to shutdown process {pids.worker[hh, g]} via Signals.SIGTERM, forcefully "
                f"exiting via Signals.SIGKILL",
            )
    childfailed(L, k + 1.0, a.nodes[0], 0, pids.worker[a.nodes[0], 0], -6, 6)
    for i, hh in enumerate(a.nodes):
        L.add(a.E - 2.0 + 0.01 * i, f"srun: error: {hh}: task {i}: Exited with exit code 1")
    L.add(a.E - 1.0, f"srun: Terminating StepId={a.job}.0")


def nvlink_failure(a, pids, L, rng):
    h, g = NVL
    r = rank_of(a, h, g)
    t = a.R + 1.4
    L.extend(
        t,
        [
            f"[rank{r}]: Traceback (most recent call last):",
            f'[rank{r}]:   File "/workspace/megatron-lm/pretrain_gpt.py", line 335, in <module>',
            f"[rank{r}]:     pretrain(",
            f'[rank{r}]:   File "/workspace/megatron-lm/megatron/training/training.py", line 863, in pretrain',
            f"[rank{r}]:     iteration, num_floating_point_operations_so_far = train(",
            f'[rank{r}]:   File "/workspace/megatron-lm/megatron/core/pipeline_parallel/schedules.py", line 1873, in forward_backward_pipelining_without_interleaving',
            f"[rank{r}]:     torch.distributed.barrier()",
            f"[rank{r}]: torch.AcceleratorError: CUDA error: an uncorrectable NVLink error was detected during the execution",
            f"[rank{r}]: CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
            f"[rank{r}]: For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
            f"[rank{r}]: Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
            f"[rank{r}]:",
        ],
    )
    for rr in (r - 1, r + 1, r + 8):
        tt = t + 2.5 + 0.01 * rr
        L.add(
            tt,
            f"[rank{rr}]:[{glog(tt, 'E')} ProcessGroupNCCL.cpp:2019] [PG ID 1 PG GUID 1 Rank {rr % TP}] "
            f"Process group watchdog thread terminated with exception: NCCL error: unhandled cuda error (run "
            f"with NCCL_DEBUG=INFO for details), NCCL version 2.26.5",
        )
    k = t + 6.0
    L.add(
        k,
        f"{glog_us(k, 'E')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/api.py:874] failed "
        f"(exitcode: 1) local_rank: {g} (pid: {pids.worker[h, g]}) of binary: /usr/bin/python3",
    )
    childfailed(L, k + 0.5, h, r, pids.worker[h, g], 1)
    i = a.nodes.index(h)
    L.add(k + 1.0, f"srun: error: {h}: task {i}: Exited with exit code 1")
    L.add(k + 1.1, f"srun: Terminating StepId={a.job}.0")
    L.add(k + 1.2, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(k + 1.2)} ***")
    for j, hh in enumerate(a.nodes):
        if hh != h:
            L.add(a.E - 1.5 + 0.01 * j, f"srun: error: {hh}: task {j}: Terminated")
    L.add(a.E - 1.0, f"srun: Force Terminated StepId={a.job}.0")


def ib_failure(a, pids, L, rng):
    h, _ = IB
    i = a.nodes.index(h)
    t = a.R + 22.0
    for hh in [h] + IB_PEERS:
        j = a.nodes.index(hh)
        r = j * GPN + IB[1]
        tt = t + 0.3 * (hh != h)
        L.extend(
            tt,
            [
                f"[rank{r}]:[{glog(tt, 'E')} ProcessGroupNCCL.cpp:2019] [PG ID 3 PG GUID 11 Rank {j}] "
                f"Process group watchdog thread terminated with exception: NCCL error: remote process exited "
                f"or there was a network error, NCCL version 2.26.5",
                f"[rank{r}]: ncclRemoteError: A call failed possibly due to a network error or a remote "
                f"process exiting prematurely.",
                f"[rank{r}]: Last error:",
                f"[rank{r}]: NET/IB : Got completion from peer 10.70.{6}.{10 + j + (1 if hh == h else -1)}<36427> "
                f"with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.70.6.{10 + j} "
                f"remoteGids ::ffff:10.70.6.{10 + j + (1 if hh == h else -1)} hca {NIC_DEV[IB[1]]}",
                "terminate called after throwing an instance of 'c10::DistBackendError'",
            ],
        )
    k = t + 4.0
    L.add(
        k,
        f"{glog_us(k, 'E')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/api.py:874] failed "
        f"(exitcode: -6) local_rank: {IB[1]} (pid: {pids.worker[h, IB[1]]}) of binary: /usr/bin/python3",
    )
    childfailed(L, k + 0.4, h, i * GPN + IB[1], pids.worker[h, IB[1]], -6, 6)
    L.add(k + 1.0, f"srun: error: {h}: task {i}: Exited with exit code 1")
    L.add(k + 1.1, f"srun: Terminating StepId={a.job}.0")
    for j, hh in enumerate(a.nodes):
        if hh != h:
            L.add(a.E - 1.5 + 0.01 * j, f"srun: error: {hh}: task {j}: Terminated")
    L.add(a.E - 1.0, f"srun: Force Terminated StepId={a.job}.0")


def signal_end(a, pids, L, stepd, K):
    L.add(K + 0.02, stepd)
    L.add(K + 0.03, stepd.replace(f"JOB {a.job}", f"STEP {a.job}.0"))
    L.add(K + 0.05, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    for i, h in enumerate(a.nodes):
        tt = K + 0.2 + 0.02 * i
        ag = pids.agent[h]
        L.add(
            tt,
            f"{glog_us(tt, 'W')} {ag} torch/distributed/elastic/agent/server/api.py:719] Received 15 death "
            f"signal, shutting down workers",
        )
        for d in range(GPN):
            L.add(
                tt + 0.001,
                f"{glog_us(tt + 0.001, 'W')} {ag} torch/distributed/elastic/multiprocessing/"
                f"api.py:900] Sending process {pids.worker[h, d]} closing signal SIGTERM",
            )
    for i, h in enumerate(a.nodes):
        L.add(a.E - 0.6 + 0.01 * i, f"srun: error: {h}: task {i}: Terminated")
    L.add(a.E - 0.3, f"srun: Force Terminated StepId={a.job}.0")


def user_error(a, pids, L, t, rng, info):
    L.add(t, f" loading distributed checkpoint from {CKPT} at iteration {a.load}")
    key = "decoder.layers.self_attention.linear_qkv.weight"
    body = [
        "Traceback (most recent call last):",
        '  File "/workspace/megatron-lm/pretrain_gpt.py", line 335, in <module>',
        "    pretrain(",
        '  File "/workspace/megatron-lm/megatron/training/training.py", line 782, in pretrain',
        "    model, optimizer, opt_param_scheduler = setup_model_and_optimizer(",
        '  File "/workspace/megatron-lm/megatron/training/checkpointing.py", line 1287, in load_checkpoint',
        "    state_dict, checkpoint_name, release, ckpt_type = _load_base_checkpoint(",
        '  File "/workspace/megatron-lm/megatron/core/dist_checkpointing/serialization.py", line 124, in load',
        "    validate_sharding_integrity(...)",
        "megatron.core.dist_checkpointing.core.CheckpointingException: Global shape mismatch for loaded "
        "(torch.Size([80, 10240, 8192])) and expected ((80, 12288, 8192)) tensor for key " + key,
    ]
    for r in (0, 8, 64):
        L.extend(a.R + 0.01 * r, [f"[rank{r}]: {ln}" for ln in body])
    k = a.R + 3.0
    for i, h in enumerate(a.nodes):
        L.add(
            k + 0.03 * i,
            f"{glog_us(k + 0.03 * i, 'E')} {pids.agent[h]} torch/distributed/elastic/"
            f"multiprocessing/api.py:874] failed (exitcode: 1) local_rank: 0 (pid: "
            f"{pids.worker[h, 0]}) of binary: /usr/bin/python3",
        )
    childfailed(L, k + 1.0, a.nodes[0], 0, pids.worker[a.nodes[0], 0], 1)
    for i, h in enumerate(a.nodes):
        L.add(a.E - 1.5 + 0.01 * i, f"srun: error: {h}: task {i}: Exited with exit code 1")
    info["user_err_ts"] = a.R


# ----------------------------------------------------------------------------- NCCL logs
def nccl_log(a, h, pids, seed, out: list[str]):
    rng = random.Random(f"{seed}-bw-nccl-{a.k}-{h}")
    i = a.nodes.index(h)
    stages = []
    for d in range(GPN):
        r = i * GPN + d
        w, it = pids.worker[h, d], pids.tid[h, d]
        p0 = f"{h}:{w}:{w} [{d}] NCCL INFO "
        p = f"{h}:{w}:{it} [{d}] NCCL INFO "
        st = [
            p0 + f"Bootstrap: Using {NIC_IF[0]}:10.70.6.{10 + i}<0>",
            p0 + "cudaDriverVersion 12090",
            p0 + "NCCL version " + NCCL_VERSION if r == 0 else p0 + "Comm config Blocking set to 1",
            p + "NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.",
            p
            + "NET/IB : Using "
            + " ".join(f"[{k}]{NIC_DEV[k]}:1/IB" for k in range(GPN))
            + f" [RO]; OOB {NIC_IF[0]}:10.70.6.{10 + i}<0>",
            p + "Using network IB",
            p + f"ncclCommInitRankConfig comm {pids.comm[h, d]} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} "
            f"busId {BUSIDS[d][5:7]}000 commId {pids.comm_id} - Init START",
            p + "RAS client listening socket at ::1<28028>" if d == 0 else p + "Bootstrap timings total 0.91 s",
            p + f"comm {pids.comm[h, d]} rank {r} nRanks {GPUS} nNodes {len(a.nodes)} localRanks {GPN} "
            f"localRank {d} MNNVL 0",
            p + "NVLS multicast support is available on dev %d (NVLS_NCHANNELS 24)" % d,
            p
            + f"Channel {d:02d}/0 : {((i - 1) % len(a.nodes)) * GPN + d}[{d}] -> {r}[{d}] [receive] via NET/IB/{d}/GDRDMA",
            p
            + f"Channel {d:02d}/0 : {r}[{d}] -> {((i + 1) % len(a.nodes)) * GPN + d}[{d}] [send] via NET/IB/{d}/GDRDMA",
            p + "Connected all rings, use ring PXN 0 GDR 1",
            p + "Connected all trees",
            p + f"ncclCommInitRankConfig comm {pids.comm[h, d]} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} "
            f"busId {BUSIDS[d][5:7]}000 commId {pids.comm_id} - Init COMPLETE",
            p + f"Init timings - ncclCommInitRankConfig: rank {r} nranks {GPUS} total 3.41 (kernels 0.22, alloc "
            f"0.61, bootstrap 0.91, allgathers 0.07, topo 0.88, graphs 0.04, connections 0.59, rest 0.09)",
        ]
        stages.append(st)
    cur = [0] * GPN
    while any(cur[d] < len(stages[d]) for d in range(GPN)):
        d = rng.randrange(GPN)
        if cur[d] < len(stages[d]):
            out.append(stages[d][cur[d]])
            cur[d] += 1
    if h == GID_HOST:
        for d in (2, 5):
            out.append(
                f"{h}:{pids.worker[h, d]}:{pids.tid[h, d] + 9} [{d}] transport/net_ib.cc:101 NCCL WARN "
                f"NET/IB : {NIC_DEV[d]}:1 Got async event : GID table change"
            )
    if a.kind == "ib" and h in [IB[0]] + IB_PEERS:
        d = IB[1]
        j = a.nodes.index(h)
        peer = 10 + j + (1 if h == IB[0] else -1)
        w, it = pids.worker[h, d], pids.tid[h, d]
        out += [
            f"{h}:{w}:{it + 5} [{d}] transport/net_ib.cc:2411 NCCL WARN NET/IB : Got completion from peer "
            f"10.70.6.{peer}<36427> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid "
            f"::ffff:10.70.6.{10 + j} remoteGids ::ffff:10.70.6.{peer} hca {NIC_DEV[d]}",
            f"{h}:{w}:{it + 5} [{d}] NCCL INFO transport/net.cc:1393 -> 6",
            f"{h}:{w}:{it + 5} [{d}] NCCL INFO proxy.cc:731 -> 6",
            f"{h}:{w}:{it + 5} [{d}] NCCL INFO proxy.cc:914 -> 6 [Progress Thread]",
            f"{h}:{w}:{it + 7} [{d}] NCCL INFO RAS peer {j * GPN + d} lost connection to 10.70.6.{peer}<28028>",
            f"{h}:{w}:{w} [{d}] NCCL INFO comm {pids.comm[h, d]} rank {j * GPN + d} nranks {GPUS} cudaDev {d} "
            f"busId {BUSIDS[d][5:7]}000 - Abort COMPLETE",
        ]
    if a.kind == "complete":
        for d in range(GPN):
            out.append(
                f"{h}:{pids.worker[h, d]}:{pids.worker[h, d]} [{d}] NCCL INFO comm {pids.comm[h, d]} rank "
                f"{i * GPN + d} nranks {GPUS} cudaDev {d} busId {BUSIDS[d][5:7]}000 - Destroy COMPLETE"
            )


# ----------------------------------------------------------------------------- kernel logs
def kernel_logs(atts, seed, bundle, info):
    a1, a2, a3, a4, a5, a6, a7 = atts
    t_end = a7.E + 1200
    for idx, h in enumerate(HOSTS):
        hr = random.Random(f"{seed}-bw-kern-{h}")
        ev = [
            (
                T0 - 86400 * 2 + 40,
                f"NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  {DRIVER}  Release "
                f"Build  (dvs-builder@U22-I3-B12-2-1)  Wed May 21 23:02:11 UTC 2025",
            ),
            (
                T0 - 86400 * 2 + 41,
                "nvidia-nvswitch: Probing device 0000:05:00.0, Vendor Id = 0x10de, Device Id = 0x22a3, Class = 0x68000",
            ),
        ]
        t = T0 + hr.uniform(600, 5000)
        while t < t_end:
            ev.append(
                (
                    t,
                    hr.choice(
                        [
                            "hrtimer: interrupt took %d ns" % hr.randint(9000, 60000),
                            "kauditd_printk_skb: %d callbacks suppressed" % hr.randint(3, 30),
                            "IPv6: ADDRCONF(NETDEV_CHANGE): veth%07x: link becomes ready" % hr.getrandbits(28),
                        ]
                    ),
                )
            )
            t += hr.uniform(2000, 11000)
        if h == GSP[0]:
            bus = BUSIDS[GSP[1]]
            pid = 2_000_000 + hr.randint(0, 900_000)
            t = a1.R
            fn = [
                (76, "GSP_RM_CONTROL", "0x20802a02 0x8"),
                (10, "FREE", "0xc1d00056 0x0"),
                (76, "GSP_RM_CONTROL", "0x2080014b 0x5"),
            ]
            for j in range(6):
                f = fn[j % 3]
                ev.append(
                    (
                        t + 6.0 * j,
                        f"NVRM: Xid (PCI:{bus}): 119, pid={pid}, name=python3, Timeout after 6s "
                        f"of waiting for RPC response from GPU{GSP[1]} GSP! Expected function "
                        f"{f[0]} ({f[1]}) ({f[2]}).",
                    )
                )
            ev.append(
                (
                    t + 36.5,
                    f"NVRM: GPU{GSP[1]} _kgspLogXid119: ********************************* GSP Timeout "
                    f"**********************************",
                )
            )
            ev.append((t + 36.6, f"NVRM: GPU{GSP[1]} _kgspLogXid119: Note: Please also check logs above."))
            ev.append(
                (
                    t + 37.0,
                    f"NVRM: Xid (PCI:{bus}): 154, GPU recovery action changed from 0x0 (None) to "
                    f"0x1 (GPU Reset Required)",
                )
            )
            tr = a1.E + 1900
            ev.append(
                (
                    tr,
                    f"NVRM: Xid (PCI:{bus}): 154, GPU recovery action changed from 0x1 (GPU Reset "
                    f"Required) to 0x0 (None)",
                )
            )
        if h == NVL[0]:
            bus = BUSIDS[NVL[1]]
            ev.append(
                (
                    a2.R,
                    f"NVRM: Xid (PCI:{bus}): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 11 (0x0004506e "
                    f"0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
                )
            )
            ev.append(
                (
                    a2.R + 0.002,
                    f"NVRM: Xid (PCI:{bus}): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 12 "
                    f"(0x0004506e 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
                )
            )
            ev.append(
                (
                    a2.R + 0.9,
                    f"NVRM: Xid (PCI:{bus}): 154, GPU recovery action changed from 0x0 (None) to 0x3 (Drain and Reset)",
                )
            )
        if h == IB[0]:
            k = IB[1]
            ev += [
                (
                    a3.R,
                    f"mlx5_core {NIC_PCI[k]}: mlx5_port_module_event:1178:(pid 0): Port module event[error]: "
                    f"module {k}, Cable error, One or more network ports have been powered down due to high "
                    f"temperature",
                ),
                (a3.R + 0.4, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link down"),
                (a3.R + 0.5, f"infiniband {NIC_DEV[k]}: ib_query_port failed (-5)"),
            ]
        if a6.stall is not None and h in a6.nodes:
            n, ts, c = a6.stall
            ost = "scratch-OST001a"
            t0 = ts + 25.0 + hr.uniform(0, 8)
            ev += [
                (
                    t0,
                    f"LustreError: 11-0: {ost}-osc-ffff9c8e4a1f5800: operation ost_write to node "
                    f"10.70.9.21@o2ib failed: rc = -110",
                ),
                (
                    t0 + 0.001,
                    f"Lustre: {ost}-osc-ffff9c8e4a1f5800: Connection to {ost} (at 10.70.9.21@o2ib) "
                    f"was lost; in progress operations using this service will wait for recovery to "
                    f"complete",
                ),
                (
                    ts + c - 20 + hr.uniform(0, 6),
                    f"Lustre: {ost}-osc-ffff9c8e4a1f5800: Connection restored to {ost} (at 10.70.9.21@o2ib)",
                ),
            ]
            info.setdefault("lustre_first", t0)
            info["lustre_first"] = min(info["lustre_first"], t0)
        if h == XID13_HOST:
            tx = a2.E + 0.5 * (a3.S - a2.E)
            ev += [
                (
                    tx,
                    f"NVRM: Xid (PCI:{BUSIDS[4]}): 13, pid=3318854, name=python, Graphics SM Warp Exception on "
                    f"(GPC 3, TPC 1, SM 0): Out Of Range Address",
                ),
                (
                    tx,
                    f"NVRM: Xid (PCI:{BUSIDS[4]}): 13, pid=3318854, name=python, Graphics Exception: ESR "
                    f"0x51e730=0xc13000e 0x51e734=0x20 0x51e728=0x4c1eb72 0x51e72c=0x174",
                ),
                (tx + 0.3, f"NVRM: Xid (PCI:{BUSIDS[4]}): 43, pid=3318854, name=python, Ch 00000008"),
            ]
            info["xid13_ts"] = tx
        if h == IDLE_SPARE:
            tx = a6.F + 3600
            ev.append(
                (
                    tx,
                    f"NVRM: Xid (PCI:{BUSIDS[1]}): 31, pid=4122, name=dcgmproftester12, channel 0x00000002, "
                    f"intr 00000000. MMU Fault: ENGINE GRAPHICS GPC2 GPCCLIENT_T1_3 faulted @ 0x7f3a_2c000000. "
                    f"Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
                )
            )
        if h == XID145_HOST:
            tx = a6.F + 0.6 * (a6.T - a6.F)
            ev.append(
                (
                    tx,
                    f"NVRM: Xid (PCI:{BUSIDS[3]}): 145, RLW_REMAP  Nonfatal   XC1 i0 Link 05 (0x00000001 "
                    f"0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
                )
            )
        if h == AER_HOST:
            for j in range(3):
                tx = a6.F + 5000 + 900 * j
                ev += [
                    (tx, "pcieport 0000:c0:01.1: AER: Correctable error message received from 0000:c3:00.0"),
                    (
                        tx,
                        "nvidia 0000:c3:00.0: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)",
                    ),
                    (tx, "nvidia 0000:c3:00.0:   device [10de:2901] error status/mask=00000001/0000e000"),
                    (tx, "nvidia 0000:c3:00.0:    [ 0] RxErr                  (First)"),
                ]
        ev.sort(key=lambda x: x[0])
        lines = []
        style = idx % 3
        boot = T0 - 86400 * 2
        for t, m in ev:
            if style == 0:
                lines.append(f"{syslog_ts(t)} {h} kernel: [{t - boot:12.6f}] {m}")
            elif style == 1:
                lines.append(f"{short_iso_precise(t)} {h} kernel: {m}")
            else:
                lines.append(f"{dmesg_T(t)} {m}")
        name = ["kern.log", "journal-k.txt", "dmesg-T.log"][style]
        write(bundle / "nodes" / h / name, ("\n".join(lines) + "\n").encode())


# ----------------------------------------------------------------------------- scheduler
def scheduler(atts, bundle, seed):
    rng = random.Random(f"{seed}-bw-sched")
    L = Sink()

    def add(t, m):
        L.add(t, f"{ctld(t)} {m}")

    rows = []
    hdr = "JobID|JobName|Partition|Account|AllocTRES|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"
    tres = f"billing={GPUS * 24},cpu={GPUS * 24},gres/gpu={GPUS},mem=30T,node={NODES_USED}"
    for a in atts:
        hl = hostlist(a.nodes)
        if a.restart == 0:
            sub = a.S - rng.randint(5, 60)
            add(
                sub,
                f"_slurm_rpc_submit_batch_job: JobId={a.job} InitPrio=10{rng.randint(1000, 9999)} usec={rng.randint(200, 900)}",
            )
        add(a.S + 0.01, f"sched: Allocate JobId={a.job} NodeList={hl} #CPUs={GPUS * 24} Partition=train")
        end = a.E + rng.uniform(0.01, 0.3)
        if a.kind in ("gsp", "nvlink", "ib", "usererr"):
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
            state, ec = "FAILED", "1:0"
        elif a.kind == "preempt":
            add(
                a.R - 0.5,
                f"_slurm_rpc_submit_batch_job: JobId=88150 InitPrio=4294{rng.randint(100000, 999999)} usec=402",
            )
            add(a.R + 0.004, f"preempted JobId={a.job} has been requeued to reclaim resources for JobId=88150")
            add(end, f"_job_complete: JobId={a.job} WTERMSIG 15")
            add(end + 0.02, f"Requeuing JobId={a.job}")
            state, ec = "PREEMPTED", "0:15"
        elif a.kind == "timelimit":
            add(a.T + 0.003, f"Time limit exhausted for JobId={a.job}")
            add(end, f"_job_complete: JobId={a.job} WTERMSIG 15")
            state, ec = "TIMEOUT", "0:0"
        else:
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 0")
            state, ec = "COMPLETED", "0:0"
        if a.kind != "preempt":
            add(end + 0.01, f"_job_complete: JobId={a.job} done")
        sub_s = slurm_ts(a.S - 30)
        rows.append(
            (
                a.S,
                f"{a.job}|bw-llama70b|train|llm|{tres}|{state}|{ec}|{sub_s}|{slurm_ts(a.S)}|"
                f"{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|{len(a.nodes)}|{hl}",
            )
        )
        rows.append(
            (
                a.S + 0.1,
                f"{a.job}.batch|batch|||cpu=24,gres/gpu=8,mem=1900G,node=1|"
                f"{'CANCELLED' if state in ('PREEMPTED', 'TIMEOUT') else state}|"
                f"{'0:15' if state in ('PREEMPTED', 'TIMEOUT') else ec}|{sub_s}|{slurm_ts(a.S)}|"
                f"{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|1|{a.nodes[0]}",
            )
        )
        rows.append(
            (
                a.S + 0.2,
                f"{a.job}.0|torchrun|||{tres}|"
                f"{'CANCELLED' if state in ('PREEMPTED', 'TIMEOUT') else state}|"
                f"{'0:15' if state in ('PREEMPTED', 'TIMEOUT') else ec}|{slurm_ts(a.S + 1)}|"
                f"{slurm_ts(a.S + 1)}|{slurm_ts(a.E)}|{elapsed(a.E - a.S - 1)}|{len(a.nodes)}|{hl}",
            )
        )
        # node drains after hardware failures
        drain = {
            "gsp": (GSP[0], "NHC: check_nv_healthmon: GPU 2 recovery action: GPU Reset Required (Xid 119)"),
            "nvlink": (NVL[0], "NHC: dcgmi health: NVLink error on GPU 6 link 11 (Xid 149), drain and reset"),
            "ib": (IB[0], "NHC: check_hw_ib: No IB port mlx5_6:1 is ACTIVE (LinkUp 400 Gb/sec)."),
        }
        if a.kind in drain:
            hh, why = drain[a.kind]
            add(a.E + 95.0, f"update_node: node {hh} reason set to: {why}")
            add(a.E + 95.1, f"update_node: node {hh} state set to DRAINED")
    a4, a5 = atts[3], atts[4]
    pst, pend = a4.E + 12.0, a5.S - 180.0
    add(pst, f"sched: Allocate JobId=88150 NodeList={hostlist(a4.nodes)} #CPUs={GPUS * 24} Partition=prio")
    add(pend, "_job_complete: JobId=88150 WEXITSTATUS 0")
    add(pend + 0.01, "_job_complete: JobId=88150 done")
    rows.append(
        (
            pst,
            f"88150|eval-rlhf-urgent|prio|rl|{tres}|COMPLETED|0:0|{slurm_ts(a4.R - 0.5)}|"
            f"{slurm_ts(pst)}|{slurm_ts(pend)}|{elapsed(pend - pst)}|{NODES_USED}|{hostlist(a4.nodes)}",
        )
    )
    a2, a3, a6 = atts[1], atts[2], atts[5]
    tx = a2.E + 0.5 * (a3.S - a2.E)
    add(tx - 600, f"sched: Allocate JobId=88124 NodeList={XID13_HOST} #CPUs=24 Partition=debug")
    add(tx + 2.0, "_job_complete: JobId=88124 WEXITSTATUS 1")
    rows.append(
        (
            tx - 600,
            f"88124|dbg-kernels|debug|perf|cpu=24,gres/gpu=8,node=1|FAILED|1:0|{slurm_ts(tx - 640)}|"
            f"{slurm_ts(tx - 600)}|{slurm_ts(tx + 2)}|{elapsed(602)}|1|{XID13_HOST}",
        )
    )
    hc = a6.F + 3600 - 300
    add(hc, f"sched: Allocate JobId=88166 NodeList={IDLE_SPARE} #CPUs=24 Partition=maint")
    add(hc + 900, "_job_complete: JobId=88166 WEXITSTATUS 0")
    rows.append(
        (
            hc,
            f"88166|dcgmi-diag-r3|maint|ops|cpu=24,gres/gpu=8,node=1|COMPLETED|0:0|{slurm_ts(hc - 5)}|"
            f"{slurm_ts(hc)}|{slurm_ts(hc + 900)}|{elapsed(900)}|1|{IDLE_SPARE}",
        )
    )
    rows.sort(key=lambda x: x[0])
    write(bundle / "scheduler" / "slurmctld.log", L.render())
    write(bundle / "scheduler" / "sacct.txt", ("\n".join([hdr] + [r for _, r in rows]) + "\n").encode())
    nodes = []
    for h, why, t in (
        (GSP[0], "NHC: check_nv_healthmon: GPU 2 recovery action: GPU Reset Required (Xid 119)", atts[0].E + 95),
        (NVL[0], "NHC: dcgmi health: NVLink error on GPU 6 link 11 (Xid 149), drain and reset", atts[1].E + 95),
        (IB[0], "NHC: check_hw_ib: No IB port mlx5_6:1 is ACTIVE (LinkUp 400 Gb/sec).", atts[2].E + 95),
    ):
        nodes += [
            f"NodeName={h} Arch=x86_64 CoresPerSocket=56 ",
            "   CPUAlloc=0 CPUEfctv=224 CPUTot=224 CPULoad=0.41",
            "   Gres=gpu:b200:8(S:0-1)",
            f"   NodeAddr={h} NodeHostName={h} Version=24.11.1",
            "   OS=Linux 6.8.0-60-generic #63-Ubuntu SMP PREEMPT_DYNAMIC ",
            "   RealMemory=2000000 AllocMem=0 FreeMem=1931222 Sockets=2 Boards=1",
            "   State=IDLE+DRAIN ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A",
            "   Partitions=train,prio,debug,maint ",
            f"   BootTime={slurm_ts(T0 - 86400 * 2)} SlurmdStartTime={slurm_ts(T0 - 86400 * 2 + 90)}",
            f"   Reason={why} [root@{slurm_ts(t)}]",
            "",
        ]
    write(bundle / "scheduler" / "scontrol-show-node.txt", ("\n".join(nodes) + "\n").encode())


def inventory() -> str:
    return f"""# fleet inventory
[providers.{PROVIDER}]
usd_per_gpu_hour = 4.10

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "B200"
gpus_per_node = {GPN}
interconnect = "InfiniBand XDR 8x800G, NVLink5 NVSwitch"
nodes = "{hostlist(HOSTS)}"
"""


def run_toml() -> str:
    return f"""# {RUN}: Llama-3 70B on Megatron-Core, TP {TP} x PP {PP} x DP {DP}
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.3e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --nodes={NODES_USED} --gpus-per-node={GPN} --time=08:00:00 --requeue bw70b.sbatch"
"""


def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts = build(seed)
    write(bundle / "inventory.toml", inventory().encode())
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", run_toml().encode())
    info: dict = {}
    shared_log, shared_nccl = None, {}
    for a in atts:
        pids = Pids(seed, a)
        L = Sink()
        train_log(a, pids, seed, L, info)
        nccl = {}
        for h in a.nodes:
            lines: list[str] = []
            nccl_log(a, h, pids, seed, lines)
            nccl[h] = lines
        if a.kind == "preempt":  # job 88142: its requeued run appends to the same files
            shared_log, shared_nccl = L, nccl
            continue
        if a.kind == "usererr":
            body = shared_log.render() + L.render()
            write(rdir / "attempt-4" / f"slurm-{a.job}.out", body)
            for h in a.nodes:
                write(rdir / "attempt-4" / "nccl" / f"{h}.log", ("\n".join(shared_nccl[h] + nccl[h]) + "\n").encode())
            continue
        write(rdir / f"attempt-{a.k}" / f"slurm-{a.job}.out", L.render(), gz=a.k == 7)
        for h in a.nodes:
            write(rdir / f"attempt-{a.k}" / "nccl" / f"{h}.log", ("\n".join(nccl[h]) + "\n").encode())
    kernel_logs(atts, seed, bundle, info)
    scheduler(atts, bundle, seed)
    cats, total, per = ledger(atts)
    incs = []
    for j, a in enumerate(atts[:6]):
        incs.append(
            {
                "id": j + 1,
                "attempt": a.k,
                "attempts": [a.k],
                "slurm_job": a.job,
                "failure_mode": a.mode,
                "host": a.host,
                "cluster": CLUSTER,
                "provider": PROVIDER,
                "root_ts": iso_z(a.R),
                "exit_ts": iso_z(a.E),
                "gpu_hours": per[j],
                "gpu_hours_lost": round(sum(per[j].values()), 4),
            }
        )
    a6 = atts[5]
    n, ts, c = a6.stall
    incs.append(
        {
            "id": 7,
            "attempt": 6,
            "attempts": [6],
            "failure_mode": None,
            "kind": "checkpoint_stall",
            "host": None,
            "save_step": n,
            "save_start_ts": iso_z(ts),
            "save_s": c,
            "lustre_first_ts": iso_z(info["lustre_first"]),
        }
    )
    decoys = {
        XID13_HOST: "Xid 13/43 of another user's debug job between attempts 2 and 3",
        IDLE_SPARE: "Xid 31 during a dcgmi diag job on the never-used spare",
        XID145_HOST: "Nonfatal NVLink Xid 145 mid attempt 6; training kept its pace",
        AER_HOST: "PCIe AER corrected errors mid attempt 6",
        GID_HOST: "NCCL WARN 'Got async event : GID table change' every attempt",
        **{h: "rail peer of the bwx-012 IB link failure: symptoms only" for h in IB_PEERS},
    }
    truth = {
        "run": RUN,
        "gpus": GPUS,
        "seed": seed,
        "match_on_attempt": True,
        "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN,
        "baseline_step_s": BASE_STEP,
        "peak_flops_per_gpu": PEAK_B200,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK_B200), 4),
        "attempts": [
            {
                "attempt": a.k,
                "slurm_job": a.job,
                "restart": a.restart,
                "nodes": hostlist(a.nodes),
                "start_ts": iso_z(a.S),
                "first_step_ts": iso_z(a.F) if a.F else None,
                "exit_ts": iso_z(a.E),
                "loaded_step": a.load,
                "last_step": a.steps[-1][0] if a.steps else None,
                "saves": [s for s, _, _ in a.saves],
                "end": a.kind,
            }
            for a in atts
        ],
        "incidents": incs,
        "decoy_hosts": sorted(decoys),
        "decoy_reasons": decoys,
        "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats,
        "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i.get("gpu_hours_lost", 0) for i in incs), 4)},
        "notes": "host null matches any host. Ledger: see the blackwell_slurm.py docstring.",
    }
    write(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    files = [p for p in (out / "bundle").rglob("*") if p.is_file()]
    print(
        f"wrote {len(files)} files ({sum(p.stat().st_size for p in files) / 1e6:.1f} MB); total "
        f"{truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents"
    )


if __name__ == "__main__":
    main()
