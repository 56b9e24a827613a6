#!/usr/bin/env python3
"""Own campaign "slurm_multitenant": a chain of Megatron-Core jobs on a SHARED rented Slurm cluster.

Written in the outsiders' shape (standard library only, `--out DIR --seed N`, deterministic per seed) before its
author read clusterlab's analysis code.

Writes, under --out DIR:
  DIR/bundle/inventory.toml, DIR/bundle/runs/mt-30b/run.toml
  DIR/bundle/runs/mt-30b/attempt-<k>/slurm-<jobid>.out[.gz]   srun output of the whole job (every rank, torchrun,
                                                                Megatron rank 0, NCCL INFO init lines)
  DIR/bundle/nodes/<host>/{dmesg-T.log | kern-journal.log}     kernel logs of the hosts that have something to say
  DIR/bundle/nodes/gpu014/nvidia-smi-q.txt                     a health check's `nvidia-smi -q` of that node
  DIR/bundle/scheduler/slurmctld.log                            the controller log of the whole 40-node cluster
  DIR/bundle/scheduler/sacct-all.txt                            `sacct -a -P` of every tenant's jobs
  DIR/truth.json

Scenario (run "mt-30b", a ~30B dense decoder, Megatron-Core TP 8 x PP 2 x DP 8 = 128 GPUs = 16 nodes x 8 H100 on
cluster "shr-1" of provider "gridhaul", 40 nodes gpu[001-040]; other tenants' jobs share the cluster; ~4 days; every
attempt is its own Slurm job of a `--dependency=afterany` chain and resumes from the latest checkpoint):
  att 1  Xid 119 (GSP RPC timeout) on gpu011 GPU2: that rank stops; the other 127 ranks' NCCL watchdogs fire 600 s
         later; torchrun aborts; job FAILED.                                  [gpu_hw_other, gpu011]
  att 2  (gpu011 drained) runs until its time limit, which comes ~1-2 min after a save completes: slurmstepd
         "DUE TO TIME LIMIT", sacct TIMEOUT. After the job's end its epilog fails on gpu005 and slurmctld drains that
         node ("epilog error ... draining the node"): not a fault of the training job (the job had already ended),
         so no incident; gpu005 is a decoy.                                   [time_limit, host null]
  att 3  (gpu005 drained) Xid 48 + Xid 64 (row remapper error) on gpu014 GPU5; its rank raises "CUDA error:
         uncorrectable ECC error encountered"; job FAILED. A health check's nvidia-smi -q shows Remapped Rows
         Pending: Yes / Remapping Failure Occurred: Yes.                   [gpu_memory_ecc, gpu014]
  att 4  the chain's next job lands on gpu014 again (it was not drained): the same GPU fails again a few steps
         after the load, before any save (sticky fault).                    [gpu_memory_ecc, gpu014]
  att 5  (gpu014 drained) a code change with a bug: every rank on every host raises "CUDA error: an illegal memory
         access was encountered" at the same iteration (Xid 31 MMU faults on every host).    [cuda_error, null]
  att 6  relaunched unchanged: the same error at the same iteration.                        [cuda_error, null]
  att 7  fixed code; during a periodic save the Lustre OSTs stop answering: "LustreError: 11-0: ... operation
         ost_write to node ... failed: rc = -107" and "Connection to ... was lost" on all 16 hosts within
         seconds; the save never completes; the watchdogs fire; job FAILED.       [filesystem_io, host null]
  att 8  the provider's admin queues "scontrol reboot ASAP nextstate=RESUME" of gpu008 (firmware) and cancels the
         team's job (REQUEST_KILL_JOB uid 0; sacct "CANCELLED by 0").               [preemption, host null]
  att 9  gpu016 dies without a word in its own log; slurmctld "not responding, setting DOWN", srun "Node failure
         on gpu016", sacct NODE_FAIL; two peers print NET/IB completion errors (symptoms). [node_failure, gpu016]
  att 10 completes (train_iters reached, final save).
  Decoys: gpu005 (epilog drain after attempt 2), gpu027 (another tenant's "Kill task failed" drain), gpu030 (Xid 13
  in another tenant's job during attempt 3), gpu035 (another tenant's NODE_FAIL minutes before attempt 9's node
  failure), gpu003 (NCCL "Call to connect returned Connection refused, retrying" at init of attempt 1, recovers), the
  first host to report the Lustre outage, the two peers of gpu016 with NET/IB errors. A loss spike in attempt 3
  that recovers within ~40 iterations is not a divergence (forbidden incident).

Ledger (truth.json expected_ledger, GPU-hours = 128 GPUs x seconds / 3600), the conventions of campaign1.py:
  startup    = attempt start (sacct Start) -> start of its first training step ("[before the start of training
               step] datetime: ...")
  productive = kept steps (step <= last durable checkpoint of an ended attempt; all steps of the completed one)
  checkpoint = durations of the saves that completed, plus the tail after the final save of the completed attempt
  recompute  = end of the attempt's last durable save (or its first step start) -> root event
  hang       = root event -> attempt exit (sacct End). Root events: the Xid 119 / Xid 48 / CUDA error / node death
               in the step in flight; the time limit; the start of the save that never completed; the admin's kill.
  restart    = attempt exit -> next attempt start
  straggler = slowdown = data_stall = idle = 0

Formats (looked up with the search tools; the text here is written anew):
  * Megatron-LM training.py training_log() iteration line, checkpointing.py save/load lines, timers.py
    "(min, max) time across ranks (ms):" blocks, print_datetime lines: as cited in campaign1.py.
  * NVRM Xid 119 "Timeout after 6s of waiting for RPC response from GPU2 GSP! Expected function 76 (GSP_RM_CONTROL)
    (0x20802a02 0x8)." (NVIDIA/open-gpu-kernel-modules #446, NVSentinel and gpud test fixtures); Xid 64
    "pid='<unknown>', name=<unknown>, Row Remapper Error: (0x...) - All reserved rows for bank are remapped"
    (a dmesg parser's doctest); Xid 48 DBE and Xid 13 as campaign1.py; Xid 31 "MMU Fault: ENGINE GRAPHICS
    GPCCLIENT_T1_0 faulted @ 0x..." (public fixtures).
  * nvidia-smi -q "Remapped Rows" block (Correctable Error / Uncorrectable Error / Pending / Remapping Failure
    Occurred / Bank Remap Availability Histogram) from a public write-up quoting nvidia-smi -q.
  * Lustre client: "LustreError: 11-0: <fs>-OSTxxxx-osc-<ptr>: operation ost_write to node <nid>@o2ib failed: rc =
    -107", "Lustre: <fs>-OSTxxxx-osc-<ptr>: Connection to <fs>-OSTxxxx (at <nid>) was lost; in progress operations
    using this service will wait for recovery to complete", "Connection restored to ..." (Lustre import.c
    LCONSOLE_WARN, public dmesg excerpts).
  * slurmctld: "error: job_epilog_complete: JobId=44 epilog error on <node>, draining the node", "drain_nodes: node
    <node> state set to DRAIN" (a public write-up quoting slurmctld), "error: slurmd error running JobId=6 on
    node(s)=worker1: ..." (public slurmctld log), "reboot request queued for nodes %s" (slurmctld proc_req.c),
    "node %s returned to service" (node_mgr.c), submit / Allocate / _job_complete / Time limit exhausted /
    not responding / Killing JobId as in campaign1.py; "_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId=N uid U" as in
    campaign2.py.
  * NCCL "host:pid:tid [d] NCCL INFO Call to connect returned Connection refused, retrying" (public NCCL logs
    quoted in troubleshooting notes), NET/IB completion error lines as campaign1.py.
  * torch ProcessGroupNCCL watchdog, torchrun ChildFailedError, CUDA error tracebacks: as campaign1.py.
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import math
import random
from datetime import datetime, timezone
from pathlib import Path

UTC = timezone.utc  # noqa: UP017 (the outsiders' campaigns run on 3.10 as well)

RUN = "mt-30b"
CLUSTER, PROVIDER = "shr-1", "gridhaul"
GPN = 8
NODES = 16
GPUS = NODES * GPN
TP, PP, DP = 8, 2, 8
GBS, SEQ = 512, 4096
TOKENS_PER_STEP = GBS * SEQ
FLOPS_PER_TOKEN = 1.969e11                   # 6 * 30e9 + 12 * 48 * 7168 * 4096
PEAK = 989.4e12
BASE_STEP = 8.150
JITTER = 0.003
SAVE_INTERVAL = 250
LOG_INTERVAL = 10
T0 = datetime(2026, 12, 1, 7, 10, 0, tzinfo=UTC).timestamp()
CKPT = "/lustre/shr1/proj-mt/ckpt/mt-30b"
DRIVER = "570.148.08"
USER, UID = "mtrain", 21731
HOSTS = [f"gpu{i:03d}" for i in range(1, 41)]
BUSIDS = ["18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000"]
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]
XID119_HOST, XID119_GPU = "gpu011", 2
ECC_HOST, ECC_GPU = "gpu014", 5
EPILOG_HOST = "gpu005"
NODEFAIL_HOST = "gpu016"
REBOOT_HOST = "gpu008"
OST_NID = "10.60.1.17@o2ib"


def _split(t: float):
    us = int(round(t * 1e6))
    s, u = divmod(us, 1_000_000)
    return datetime.fromtimestamp(s, UTC), u


def iso_z(t: float) -> str:
    d, u = _split(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{u // 1000:03d}Z"


def meg_ts(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%d %H:%M:%S")


def slurm_ts(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%dT%H:%M:%S")


def ctld_ts(t: float) -> str:
    d, u = _split(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{u // 1000:03d}]"


def date_cmd(t: float) -> str:
    d, _ = _split(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def dmesg_T(t: float) -> str:
    d, _ = _split(t)
    return f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}]"


def short_iso(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%dT%H:%M:%S") + "+00:00"


def glog_c10(t: float, level: str, rng: random.Random) -> str:
    d, u = _split(t)
    return f"{level}{d:%m%d} {d:%H:%M:%S}.{u:06d}{rng.randint(0, 999):03d}"


def glog_py(t: float, level: str) -> str:
    d, u = _split(t)
    return f"{level}{d:%m%d} {d:%H:%M:%S}.{u // 1000:03d}000"


def elapsed_str(sec: float) -> str:
    sec = int(round(sec))
    d, rem = divmod(sec, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts: list[str]) -> str:
    nums = sorted(int(h[3:]) for h in hosts)
    if len(nums) == 1:
        return f"gpu{nums[0]:03d}"
    ranges, start, prev = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        ranges.append(f"{start:03d}" if start == prev else f"{start:03d}-{prev:03d}")
        if n is not None:
            start = prev = n
    return f"gpu[{','.join(ranges)}]"


def pci(g: int) -> str:
    return f"0000:{BUSIDS[g][:2]}:00"


class Sink:
    def __init__(self) -> None:
        self.items: list[tuple[float, int, str]] = []

    def add(self, t: float, line: str) -> None:
        self.items.append((t, len(self.items), line))

    def extend(self, t: float, lines: list[str]) -> None:
        for ln in lines:
            self.add(t, ln)

    def render(self) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
        return ("\n".join(x[2] for x in self.items) + "\n").encode()


def write_file(path: Path, data: bytes, gz: bool = False) -> None:
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
        self.steps: list[tuple[int, float, float]] = []
        self.saves: list[tuple[int, float, float]] = []
        self.R: float | None = None
        self.E: float | None = None
        self.T: float | None = None


def node_sets() -> list[list[str]]:
    h = {i: f"gpu{i:03d}" for i in range(1, 41)}
    a1 = [h[i] for i in range(1, 17)]
    a2 = [h[i] for i in list(range(1, 11)) + list(range(12, 18))]
    a3 = [h[i] for i in list(range(1, 5)) + list(range(6, 11)) + list(range(12, 19))]
    a5 = [h[i] for i in list(range(1, 5)) + list(range(6, 11)) + [12, 13] + list(range(15, 20))]
    a10 = [h[i] for i in list(range(1, 11)) + [12, 13, 15, 17, 18, 19]]
    return [a1, a2, a3, a3, a5, a5, a5, a5, a5, a10]


def build_timeline(seed: int) -> list[Attempt]:
    rng = random.Random(f"{seed}-mt-timeline")
    sets = node_sets()
    specs = [
        dict(k=1, job=70412, kind="fail_after", mode="gpu_hw_other", host=XID119_HOST, gpu=XID119_GPU,
             run_s=9.6 * 3600 + rng.uniform(0, 3000), hang=612 + rng.uniform(20, 45), startup=540, gap=1500),
        dict(k=2, job=70455, kind="time_limit", mode="time_limit", host=None, gpu=None,
             run_s=None, hang=2.0, startup=460, gap=35 + rng.uniform(0, 30)),
        dict(k=3, job=70456, kind="fail_after", mode="gpu_memory_ecc", host=ECC_HOST, gpu=ECC_GPU,
             run_s=11.5 * 3600 + rng.uniform(0, 2500), hang=38 + rng.uniform(0, 8), startup=430, gap=150),
        dict(k=4, job=70457, kind="fail_step", mode="gpu_memory_ecc", host=ECC_HOST, gpu=ECC_GPU,
             k_after=3, hang=33 + rng.uniform(0, 8), startup=420, gap=2700 + rng.uniform(0, 600)),
        dict(k=5, job=70481, kind="fail_step", mode="cuda_error", host=None, gpu=None,
             k_after=137, hang=24 + rng.uniform(0, 6), startup=450, gap=600 + rng.uniform(0, 120)),
        dict(k=6, job=70484, kind="fail_step", mode="cuda_error", host=None, gpu=None,
             k_after=137, hang=24 + rng.uniform(0, 6), startup=440, gap=9000 + rng.uniform(0, 900)),
        dict(k=7, job=70502, kind="fail_save", mode="filesystem_io", host=None, gpu=None,
             n_saves=9 + rng.randint(0, 3), hang=655 + rng.uniform(0, 30), startup=470, gap=2400),
        dict(k=8, job=70519, kind="fail_after", mode="preemption", host=None, gpu=None,
             run_s=8.2 * 3600 + rng.uniform(0, 2000), hang=6 + rng.uniform(0, 4), startup=450, gap=1200),
        dict(k=9, job=70533, kind="fail_after", mode="node_failure", host=NODEFAIL_HOST, gpu=None,
             run_s=7.4 * 3600 + rng.uniform(0, 2000), hang=304 + rng.uniform(0, 8), startup=455, gap=480),
        dict(k=10, job=70541, kind="complete", mode=None, host=None, gpu=None, startup=465, gap=None),
    ]
    atts = []
    t = T0
    load = 0
    for s, nodes in zip(specs, sets, strict=True):
        s["startup"] += rng.randint(-25, 25)
        a = Attempt(nodes=nodes, **s)
        a.load_iter = load
        a.S = float(round(t))
        srng = random.Random(f"{seed}-mt-steps-{a.k}")
        if a.kind == "complete":
            TRAIN_ITERS_BOX["n"] = int(math.ceil((load + 6300) / 100.0) * 100) + 40
        if a.kind == "time_limit":
            simulate(a, srng, horizon=20 * 3600)
            limit = a.S + 20 * 3600
            last = [sv for sv in a.saves if sv[1] + sv[2] < limit - 90][-1]
            end_save = last[1] + last[2]
            a.T = a.S + math.ceil((end_save + 60 - a.S) / 60.0) * 60
            a.time_limit_min = int(round((a.T - a.S) / 60))
            simulate(a, random.Random(f"{seed}-mt-steps-{a.k}"), horizon=None)
        else:
            simulate(a, srng, horizon=None)
        atts.append(a)
        ck = [n for n, _, _ in a.saves]
        load = ck[-1] if ck else a.load_iter
        a.last_ckpt = load
        if a.gap is not None:
            t = a.E + a.gap
    return atts


TRAIN_ITERS_BOX: dict[str, int] = {}


def simulate(a: Attempt, rng: random.Random, horizon: float | None) -> None:
    a.steps, a.saves = [], []
    a.F = a.S + a.startup
    t, n = a.F, a.load_iter
    saves_done = 0
    while True:
        n1 = n + 1
        dur = BASE_STEP * (1 + rng.uniform(-JITTER, JITTER))
        if horizon is not None and t > a.S + horizon:
            return
        if a.kind == "complete" and n >= TRAIN_ITERS_BOX["n"]:
            break
        if a.kind == "fail_after" and t + dur > a.F + a.run_s:
            a.R = float(math.floor(t + 0.5 * dur))
            a.E = a.R + a.hang
            return
        if a.kind == "fail_step" and n1 == a.load_iter + a.k_after:
            a.R = float(math.floor(t + 0.6 * dur))
            a.E = a.R + a.hang
            return
        if a.kind == "time_limit" and a.T is not None and t + dur > a.T:
            a.R = a.T
            a.E = a.T + a.hang
            return
        a.steps.append((n1, t, dur))
        t += dur
        n = n1
        if n % SAVE_INTERVAL == 0 or (a.kind == "complete" and n >= TRAIN_ITERS_BOX["n"]):
            if a.kind == "fail_save" and saves_done == a.n_saves:
                a.R = float(math.ceil(t))
                a.fail_save_iter = n
                a.E = a.R + a.hang
                return
            c = round(rng.uniform(48.0, 66.0), 2)
            a.saves.append((n, t, c))
            saves_done += 1
            t += c
    a.E = float(math.ceil(t + 3.0))


def ledger(atts: list[Attempt]):
    cats = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute",
                          "hang", "restart", "startup", "idle"], 0.0)
    per = []
    for i, a in enumerate(atts):
        cats["startup"] += a.F - a.S
        kept = a.last_ckpt if a.kind != "complete" else 10 ** 9
        for n, _, d in a.steps:
            if n <= kept:
                cats["productive"] += d
        for _, _, c in a.saves:
            cats["checkpoint"] += c
        if a.kind == "complete":
            cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        base = (a.saves[-1][1] + a.saves[-1][2]) if a.saves else a.F
        rec, hang = a.R - base, a.E - a.R
        nxt = atts[i + 1]
        cats["recompute"] += rec
        cats["hang"] += hang
        cats["restart"] += nxt.S - a.E
        per.append(dict(hang=hang, recompute=rec, restart=nxt.S - a.E, startup=nxt.F - nxt.S))
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per])


# ----------------------------------------------------------------------------- the job's output
def host_ip(h: str) -> str:
    return f"10.50.0.{int(h[3:])}"


class Pids:
    def __init__(self, seed: int, a: Attempt):
        rng = random.Random(f"{seed}-mt-pids-{a.k}")
        self.agent, self.worker = {}, {}
        for h in a.nodes:
            ag = rng.randint(90_000, 2_900_000)
            self.agent[h] = ag
            for d in range(GPN):
                self.worker[h, d] = ag + 9 + d
        self.comm_id = f"0x{rng.getrandbits(64):016x}"


def lr_at(n: int, total: int) -> float:
    warm, lmax, lmin = 2000, 3.0e-4, 3.0e-5
    if n < warm:
        return lmax * n / warm
    p = min(1.0, (n - warm) / max(1, total - warm))
    return lmin + 0.5 * (lmax - lmin) * (1 + math.cos(math.pi * p))


def loss_at(n: int, rng: random.Random, spike: tuple[int, int] | None) -> float:
    v = 1.85 + 8.4 * math.exp(-n / 400.0) + 0.55 * math.exp(-n / 12000.0) + rng.gauss(0, 0.01)
    if spike and spike[0] <= n < spike[1]:
        v += 1.3 * math.exp(-(n - spike[0]) / 9.0)
    return v


TORCHRUN_TB = [
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 33, in <module>',
    "    sys.exit(load_entry_point('torch==2.7.0a0+7c8ec84dab.nv25.3', 'console_scripts', 'torchrun')())",
    '  File "/usr/local/lib/python3.12/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", '
    'line 355, in wrapper',
    "    return f(*args, **kwargs)",
    '  File "/usr/local/lib/python3.12/dist-packages/torch/distributed/run.py", line 918, in main',
    "    run(args)",
    '  File "/usr/local/lib/python3.12/dist-packages/torch/distributed/launcher/api.py", line 138, in __call__',
    "    return launch_agent(self._config, self._entrypoint, list(args))",
    '  File "/usr/local/lib/python3.12/dist-packages/torch/distributed/launcher/api.py", line 269, in launch_agent',
    "    raise ChildFailedError(",
]


def child_failed(t: float, host: str, ents: list[tuple[int, int, int, int, str]]) -> list[str]:
    stamp = _split(t)[0].strftime("%Y-%m-%d_%H:%M:%S")
    out = TORCHRUN_TB + ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 60,
                         "/workspace/Megatron-LM/pretrain_gpt.py FAILED", "-" * 60, "Failures:"]

    def entry(i, e):
        r, lr, ec, pid, tb = e
        return [f"[{i}]:", f"  time      : {stamp}", f"  host      : {host}", f"  rank      : {r} (local_rank: {lr})",
                f"  exitcode  : {ec} (pid: {pid})", "  error_file: <N/A>", f"  traceback : {tb}"]
    if len(ents) == 1:
        out.append("  <NO_OTHER_FAILURES>")
    for i, e in enumerate(ents[1:], start=1):
        out += entry(i, e)
    out += ["-" * 60, "Root Cause (first observed failure):"] + entry(0, ents[0]) + ["=" * 60]
    return out


def watchdog(t: float, r: int, seq: int, op: str, rng: random.Random) -> list[str]:
    numel = rng.choice([1, 8192, 50331648])
    wd = (f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, "
          f"NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) ran for {600000 + rng.randint(5, 1400)} "
          f"milliseconds before timing out.")
    return [f"[rank{r}]:[{glog_c10(t, 'E', rng)} ProcessGroupNCCL.cpp:632] {wd}",
            f"[rank{r}]:[{glog_c10(t + 0.002, 'E', rng)} ProcessGroupNCCL.cpp:2271] [PG ID 0 PG GUID 0(default_pg) "
            f"Rank {r}] failure detected by watchdog at work sequence id: {seq} PG status: last enqueued work: "
            f"{seq + 1}, last completed work: {seq - 1}",
            f"[rank{r}]:[{glog_c10(t + 0.003, 'E', rng)} ProcessGroupNCCL.cpp:670] Stack trace of the failed "
            f"collective not found, potentially because FlightRecorder is disabled. You can enable it by setting "
            f"TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value."]


def agent_sigterm(L: Sink, t: float, h: str, pids: Pids, skip: int | None = None) -> None:
    ag = pids.agent[h]
    L.add(t, f"{glog_py(t, 'W')} {ag} torch/distributed/elastic/agent/server/api.py:719] Received 15 death signal, "
             f"shutting down workers")
    for d in range(GPN):
        if d != skip:
            L.add(t + 0.001, f"{glog_py(t + 0.001, 'W')} {ag} torch/distributed/elastic/multiprocessing/api.py:900] "
                             f"Sending process {pids.worker[h, d]} closing signal SIGTERM")


def train_log(a: Attempt, pids: Pids, seed: int, total_iters: int, info: dict) -> bytes:
    rng = random.Random(f"{seed}-mt-log-{a.k}")
    L = Sink()
    S, F = a.S, a.F
    L.add(S, f"START TIME: {date_cmd(S)}")
    L.add(S + 0.4, f"+ srun --container-image=nvcr.io#nvidia/pytorch:25.04-py3 --container-mounts=/lustre/shr1 "
                   f"torchrun --nnodes={NODES} --nproc-per-node={GPN} --rdzv-backend=c10d "
                   f"--rdzv-endpoint={a.nodes[0]}:29500 /workspace/Megatron-LM/pretrain_gpt.py")
    L.add(S + 1.1, "pyxis: importing docker image: nvcr.io#nvidia/pytorch:25.04-py3")
    L.add(S + 58.0, "pyxis: imported docker image: nvcr.io#nvidia/pytorch:25.04-py3")
    t = S + 60.0
    for i, h in enumerate(a.nodes):
        tt = t + 0.03 * i
        p = f"{glog_py(tt, 'W')} {pids.agent[h]} torch/distributed/run.py:766] "
        L.extend(tt, [p, p + "*" * 41, p + "Setting OMP_NUM_THREADS environment variable for each process to be 1 "
                      "in default, to avoid your system being overloaded, please further tune the variable for "
                      "optimal performance in your application as needed. ", p + "*" * 41])
    t_nccl = S + 95.0
    if a.k == 1:                          # decoy: a bootstrap connect retried while a peer was still starting
        h = "gpu003"
        for j in range(3):
            L.add(t_nccl - 4 + 0.1 * j, f"{h}:{pids.worker[h, 1]}:{pids.worker[h, 1] + 1021} [1] NCCL INFO Call to "
                                        f"connect returned Connection refused, retrying")
    for i, h in enumerate(a.nodes):
        for d in range(GPN):
            r = i * GPN + d
            w = pids.worker[h, d]
            pre = f"{h}:{w}:{w} [{d}] NCCL INFO "
            if d == 0:
                L.add(t_nccl + 0.01 * r, pre + f"Bootstrap : Using ibp26s0:{host_ip(h)}<0>")
            if r == 0:
                L.add(t_nccl, pre[:-10] + "NCCL INFO NCCL version 2.26.3+cuda12.9")
            L.add(t_nccl + 2 + 0.01 * r, f"{h}:{w}:{w + 907} [{d}] NCCL INFO comm 0x55{r:04x}a0c1e0 rank {r} nranks "
                                         f"{GPUS} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} commId {pids.comm_id} "
                                         f"- Init COMPLETE")
    ta = S + 70.0
    L.add(ta, f"using world size: {GPUS}, data-parallel size: {DP}, context-parallel size: 1, hierarchical "
              f"context-parallel sizes: Nonetensor-model-parallel size: {TP}, encoder-tensor-model-parallel size: 0, "
              f"pipeline-model-parallel size: {PP}, encoder-pipeline-model-parallel size: 0")
    args = [("bf16", "True"), ("ckpt_format", "torch_dist"), ("distributed_timeout_minutes", "10"),
            ("global_batch_size", str(GBS)), ("hidden_size", "7168"), ("load", CKPT),
            ("log_interval", str(LOG_INTERVAL)), ("lr", "0.0003"), ("micro_batch_size", "1"), ("num_layers", "48"),
            ("pipeline_model_parallel_size", str(PP)),
            ("save", CKPT), ("save_interval", str(SAVE_INTERVAL)), ("seq_length", str(SEQ)),
            ("tensor_model_parallel_size", str(TP)), ("train_iters", str(total_iters)), ("world_size", str(GPUS))]
    L.add(ta, "------------------------ arguments ------------------------")
    L.extend(ta, [f"  {k} {'.' * (48 - len(k))} {v}" for k, v in args])
    L.extend(ta, ["-------------------- end of arguments ---------------------",
                  "> initializing torch distributed ..."])
    L.extend(t_nccl + 5, [f"> initialized tensor model parallel with size {TP}",
                          f"> initialized pipeline model parallel with size {PP}",
                          "> setting random seeds to 1234 ..."])
    t_init = t_nccl + 9
    L.add(t_init, f"[after megatron is initialized] datetime: {meg_ts(t_init)} ")
    L.add(t_init + 0.3, "building GPT model ...")
    for tpr, ppr in [(0, 0), (3, 1), (6, 0), (1, 1)]:
        L.add(t_init + 3, f" > number of parameters on (tensor, pipeline) model parallel rank ({tpr}, {ppr}): "
                          f"{1_903_457_280 if ppr == 0 else 1_871_200_256}")
    t_model = F - 95.0
    if a.load_iter == 0:
        L.extend(t_init + 25, [f"WARNING: could not find the metadata file {CKPT}/latest_checkpointed_iteration.txt",
                               "    will not load any checkpoints and will start from random"])
    else:
        L.add(t_init + 25, f" loading checkpoint from {CKPT} at iteration {a.load_iter}")
        L.add(t_model - 2, f"  successfully loaded checkpoint from {CKPT} [ t 1/{TP}, p 1/{PP} ] at iteration "
                           f"{a.load_iter}")
        ms = (t_model - 2 - t_init - 25) * 1000
        L.extend(t_model - 1.9, ["(min, max) time across ranks (ms):",
                                 f"    {'load-checkpoint '.ljust(48, '.')}: ({ms - 11.4:.2f}, {ms:.2f})"])
    L.add(t_model, f"[after model, optimizer, and learning rate scheduler are built] datetime: {meg_ts(t_model)} ")
    L.extend(t_model + 0.5, ["> building train, validation, and test datasets ...",
                             "> building train, validation, and test datasets for GPT ..."])
    t_data = F - 3.0
    L.add(t_data - 1, "> finished creating GPT datasets ...")
    L.add(t_data, f"[after dataloaders are built] datetime: {meg_ts(t_data)} ")
    L.extend(t_data + 0.5, ["done with setup ...", "training ..."])
    L.add(F, f"[before the start of training step] datetime: {meg_ts(F)} ")
    # iteration lines
    lrng = random.Random(f"{seed}-mt-loss-{a.k}")
    spike = info.get("spike") if a.k == 3 else None
    for j, (n, ts, dur) in enumerate(a.steps):
        if n % LOG_INTERVAL:
            continue
        win = [d for (_, _, d) in a.steps[max(0, j - LOG_INTERVAL + 1): j + 1]]
        avg = sum(win) / len(win)
        end = ts + dur
        thr = TOKENS_PER_STEP * FLOPS_PER_TOKEN / avg / GPUS / 1e12
        gn = 0.18 + 2.5 * math.exp(-n / 700.0) + abs(lrng.gauss(0, 0.015))
        if spike and spike[0] <= n < spike[1]:
            gn += 4.0 * math.exp(-(n - spike[0]) / 9.0)
        L.add(end, f" [{meg_ts(end)}] iteration {n:8d}/{total_iters:8d} | consumed samples: {n * GBS:12d} | "
                   f"elapsed time per iteration (ms): {avg * 1000:.1f} | throughput per GPU (TFLOP/s/GPU): {thr:.1f} | "
                   f"learning rate: {lr_at(n, total_iters):.6E} | global batch size: {GBS:5d} | lm loss: "
                   f"{loss_at(n, lrng, spike):.6E} | loss scale: 1.0 | grad norm: {gn:.3f} | number of skipped "
                   f"iterations:   0 | number of nan iterations:   0 |")
    for n, ts, c in a.saves:
        L.add(ts + 0.002, f"saving checkpoint at iteration {n:7d} to {CKPT} in torch_dist format")
        L.add(ts + 0.004, "Storing distributed optimizer sharded state of type fully_sharded_model_space")
        L.add(ts + c - 0.01, f"  successfully saved checkpoint from iteration {n:7d} to {CKPT} [ t 1/{TP}, p 1/{PP} ]")
        L.extend(ts + c - 0.005, ["(min, max) time across ranks (ms):",
                                  f"    {'save-checkpoint '.ljust(48, '.')}: ({c * 1000 - rng.uniform(2, 8):.2f}, "
                                  f"{c * 1000:.2f})"])
    END[a.mode or "complete"](a, L, pids, rng, info)
    return L.render()


def end_gsp(a, L, pids, rng, info):
    R = a.R
    stuck = a.nodes.index(a.host) * GPN + a.gpu
    seq = 90_000 + rng.randint(0, 9000)
    for r in range(GPUS):
        if r != stuck:
            tw = R + 600.0 + rng.uniform(0.05, 1.2)
            L.extend(tw, watchdog(tw, r, seq, "ALLREDUCE", rng))
    tf = R + 604.0
    for i, h in enumerate(a.nodes):
        tt = tf + 0.11 * i
        ents = []
        for d in range(GPN):
            r = i * GPN + d
            if r != stuck:
                ents.append((r, d, -6, pids.worker[h, d], f"Signal 6 (SIGABRT) received by PID {pids.worker[h, d]}"))
        if h == a.host:
            w = pids.worker[h, a.gpu]
            L.add(tt + 30.0, f"{glog_py(tt + 30.0, 'W')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/"
                             f"api.py:919] Unable to shutdown process {w} via Signals.SIGTERM, forcefully exiting via "
                             f"Signals.SIGKILL")
            ents.append((stuck, a.gpu, -9, w, f"Signal 9 (SIGKILL) received by PID {w}"))
            tt += 30.5
        L.add(tt, f"{glog_py(tt, 'E')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/api.py:874] failed "
                  f"(exitcode: {ents[0][2]}) local_rank: {ents[0][1]} (pid: {ents[0][3]}) of binary: /usr/bin/python")
        L.extend(tt + 0.01, child_failed(tt, h, ents))
        L.add(tt + 0.5, f"srun: error: {h}: task {i}: Exited with exit code 1")
    info["first_symptom"] = R + 600.05


def end_ecc(a, L, pids, rng, info):
    R, E = a.R, a.E
    h = a.host
    i = a.nodes.index(h)
    r = i * GPN + a.gpu
    tb = ["Traceback (most recent call last):",
          '  File "/workspace/Megatron-LM/pretrain_gpt.py", line 331, in <module>',
          "    pretrain(",
          '  File "/workspace/Megatron-LM/megatron/training/training.py", line 856, in pretrain',
          "    iteration, num_floating_point_operations_so_far = train(",
          '  File "/workspace/Megatron-LM/megatron/training/training.py", line 2144, in train',
          "    ) = train_step(",
          '  File "/workspace/Megatron-LM/megatron/training/training.py", line 1392, in train_step',
          "    losses_reduced = forward_backward_func(",
          "RuntimeError: CUDA error: uncorrectable ECC error encountered",
          "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
          "be incorrect.",
          "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
          "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", ""]
    te = R + 1.3
    L.extend(te, [f"[rank{r}]: {x}" if x else "" for x in tb])
    tf = R + 3.4
    for d in range(GPN):
        if d != a.gpu:
            L.add(tf - 0.3, f"{glog_py(tf - 0.3, 'W')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/"
                            f"api.py:900] Sending process {pids.worker[h, d]} closing signal SIGTERM")
    ents = [(r, a.gpu, 1, pids.worker[h, a.gpu], "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")]
    ents += [(i * GPN + d, d, -15, pids.worker[h, d], f"Signal 15 (SIGTERM) received by PID {pids.worker[h, d]}")
             for d in range(GPN) if d != a.gpu]
    L.add(tf, f"{glog_py(tf, 'E')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/api.py:874] failed "
              f"(exitcode: 1) local_rank: {a.gpu} (pid: {pids.worker[h, a.gpu]}) of binary: /usr/bin/python")
    L.extend(tf + 0.01, child_failed(tf, h, ents))
    ts = R + 4.6
    L.add(ts, f"srun: error: {h}: task {i}: Exited with exit code 1")
    L.add(ts + 0.1, f"srun: Terminating StepId={a.job}.0")
    L.add(ts + 0.3, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(ts + 0.3)} ***")
    for j, hh in enumerate(a.nodes):
        if hh != h:
            agent_sigterm(L, ts + 0.5 + 0.02 * j, hh, pids)
            L.add(E - 1.5 + 0.01 * j, f"srun: error: {hh}: task {j}: Terminated")
    L.add(E - 1.0, f"srun: Force Terminated StepId={a.job}.0")
    info[f"ecc_ts_{a.k}"] = te


IMA_TB = ["Traceback (most recent call last):",
          '  File "/workspace/Megatron-LM/pretrain_gpt.py", line 331, in <module>',
          "    pretrain(",
          '  File "/workspace/Megatron-LM/megatron/training/training.py", line 2144, in train',
          "    ) = train_step(",
          '  File "/workspace/Megatron-LM/megatron/core/transformer/transformer_layer.py", line 467, in forward',
          "    hidden_states, context = self._forward_attention(*args, **kwargs)",
          '  File "/workspace/mt30b/mt30b/layers/rope_fused_v2.py", line 88, in apply_rotary_fused',
          "    out = _rope_kernel(t, freqs, cu_seqlens, self.max_seqlen)",
          "RuntimeError: CUDA error: an illegal memory access was encountered",
          "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
          "be incorrect.",
          "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
          "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", ""]


def end_ima(a, L, pids, rng, info):
    R = a.R
    for i in range(len(a.nodes)):
        for d in range(GPN):
            r = i * GPN + d
            te = R + 0.8 + rng.uniform(0, 0.9)
            body = IMA_TB if r % 16 == 0 else IMA_TB[-5:]
            L.extend(te, [f"[rank{r}]: {x}" if x else "" for x in body])
    for i, h in enumerate(a.nodes):
        tf = R + 4.0 + 0.07 * i
        ents = [(i * GPN + d, d, 1, pids.worker[h, d], "To enable traceback see: "
                 "https://pytorch.org/docs/stable/elastic/errors.html") for d in range(GPN)]
        L.add(tf, f"{glog_py(tf, 'E')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/api.py:874] failed "
                  f"(exitcode: 1) local_rank: 0 (pid: {pids.worker[h, 0]}) of binary: /usr/bin/python")
        L.extend(tf + 0.01, child_failed(tf, h, ents))
        L.add(tf + 1.0, f"srun: error: {h}: task {i}: Exited with exit code 1")


def end_lustre(a, L, pids, rng, info):
    R = a.R
    n = a.fail_save_iter
    L.add(R + 0.002, f"saving checkpoint at iteration {n:7d} to {CKPT} in torch_dist format")
    L.add(R + 0.004, "Storing distributed optimizer sharded state of type fully_sharded_model_space")
    seq = 140_000 + rng.randint(0, 9000)
    for r in range(GPUS):
        tw = R + 600.0 + rng.uniform(0.05, 2.0)
        L.extend(tw, watchdog(tw, r, seq, "_ALLGATHER_BASE", rng))
    for i, h in enumerate(a.nodes):
        tt = R + 605.0 + 0.11 * i
        ents = [(i * GPN + d, d, -6, pids.worker[h, d], f"Signal 6 (SIGABRT) received by PID {pids.worker[h, d]}")
                for d in range(GPN)]
        L.add(tt, f"{glog_py(tt, 'E')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/api.py:874] failed "
                  f"(exitcode: -6) local_rank: 0 (pid: {pids.worker[h, 0]}) of binary: /usr/bin/python")
        L.extend(tt + 0.01, child_failed(tt, h, ents))
        L.add(tt + 0.6, f"srun: error: {h}: task {i}: Exited with exit code 1")


def end_cancel(a, L, pids, rng, info):
    R = a.R
    L.add(R + 0.2, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(R)} ***")
    L.add(R + 0.25, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    L.add(R + 0.3, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(R)} ***")
    for i, h in enumerate(a.nodes):
        agent_sigterm(L, R + 0.5 + 0.02 * i, h, pids)


def end_nodefail(a, L, pids, rng, info):
    R, E = a.R, a.E
    dead = a.host
    i = a.nodes.index(dead)
    peers = [a.nodes[i - 1], a.nodes[i + 1]]
    for j, h in enumerate(peers):
        d = 3 + j
        w = pids.worker[h, d]
        tt = R + 19.0 + 0.7 * j
        r = a.nodes.index(h) * GPN + d
        L.extend(tt, ["", f"{h}:{w}:{w + 1290} [{d}] transport/net_ib.cc:1707 NCCL WARN NET/IB : Got completion from "
                          f"peer {host_ip(dead)}<{rng.randint(40000, 60999)}> with status=12 opcode=0 len=0 vendor "
                          f"err 129 (Recv) localGid ::ffff:{host_ip(h)} remoteGids::ffff:{host_ip(dead)}",
                      f"{h}:{w}:{w + 1290} [{d}] NCCL INFO transport/net.cc:1394 -> 6",
                      f"{h}:{w}:{w + 1290} [{d}] NCCL INFO proxy.cc:698 -> 6",
                      f"{h}:{w}:{w + 1290} [{d}] NCCL INFO proxy.cc:880 -> 6 [Progress Thread]"])
        msg = (f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: "
               f"NCCL error: remote process exited or there was a network error, NCCL version 2.26.3")
        L.extend(tt + 1.1, [f"[rank{r}]:[{glog_c10(tt + 1.1, 'E', rng)} ProcessGroupNCCL.cpp:1595] {msg}",
                            "ncclRemoteError: A call failed possibly due to a network error or a remote process "
                            "exiting prematurely.", "Last error:",
                            f"NET/IB : Got completion from peer {host_ip(dead)}<0> with status=12 opcode=0 len=0 "
                            f"vendor err 129 (Recv)",
                            "terminate called after throwing an instance of 'c10::DistBackendError'"])
        tf = tt + 4.0
        ents = [(r, d, -6, w, f"Signal 6 (SIGABRT) received by PID {w}")]
        L.add(tf, f"{glog_py(tf, 'E')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/api.py:874] failed "
                  f"(exitcode: -6) local_rank: {d} (pid: {w}) of binary: /usr/bin/python")
        L.extend(tf + 0.01, child_failed(tf, h, ents))
        L.add(tf + 0.5, f"srun: error: {h}: task {a.nodes.index(h)}: Exited with exit code 1")
    tk = E - 3.0
    L.add(tk, f"srun: error: Node failure on {dead}")
    L.add(tk + 0.05, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(tk)} DUE TO NODE "
                     f"FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***")
    L.add(tk + 0.1, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    for j, h in enumerate(a.nodes):
        if h != dead:
            agent_sigterm(L, tk + 0.3 + 0.02 * j, h, pids)
    info["nodefail_peers"] = peers


def end_time_limit(a, L, pids, rng, info):
    T = a.T
    L.add(T, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(T)} DUE TO TIME LIMIT ***")
    L.add(T + 0.05, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(T)} DUE TO TIME "
                    f"LIMIT ***")
    for i, h in enumerate(a.nodes):
        agent_sigterm(L, T + 0.3 + 0.03 * i, h, pids)


def end_complete(a, L, pids, rng, info):
    L.add(a.E - 2.5, f"[after training is done] datetime: {meg_ts(a.E - 2.5)} ")


END = {"gpu_hw_other": end_gsp, "gpu_memory_ecc": end_ecc, "cuda_error": end_ima, "filesystem_io": end_lustre,
       "preemption": end_cancel, "node_failure": end_nodefail, "time_limit": end_time_limit,
       "complete": end_complete}


# ----------------------------------------------------------------------------- kernel logs
KERNEL = "6.8.0-60-generic"


def boot_block(t: float) -> list[tuple[float, str]]:
    return [(t, f"Linux version {KERNEL} (buildd@lcy02-amd64-017) (x86_64-linux-gnu-gcc-13 (Ubuntu "
                f"13.3.0-6ubuntu2~24.04) 13.3.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #63-Ubuntu SMP "
                f"PREEMPT_DYNAMIC Tue Apr 15 19:04:15 UTC 2025"),
            (t, f"Command line: BOOT_IMAGE=/boot/vmlinuz-{KERNEL} root=UUID=0c5e2f7a-6b1d-4e93-9d0a-73f1c2ab9e41 "
                f"ro iommu=pt"),
            (t + 0.2, "DMI: Supermicro SYS-821GE-TNHR/X13DEG-OAD, BIOS 2.4 10/11/2024"),
            (t + 21.4, f"NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  {DRIVER}  Release Build  "
                       f"(dvs-builder@U16-I3-B08-1-2)  Fri May 30 05:48:50 UTC 2025"),
            (t + 23.0, "Lustre: Lustre: Build Version: 2.15.6"),
            (t + 24.1, "Lustre: Mounted shr1-client")]


class Fleet:
    def __init__(self, seed: int):
        rng = random.Random(f"{seed}-mt-fleet")
        self.uuid, self.serial, self.boot = {}, {}, {}
        for h in HOSTS:
            self.boot[h] = T0 - rng.randint(2 * 86400, 6 * 86400)
            for g in range(GPN):
                x = f"{rng.getrandbits(128):032x}"
                self.uuid[h, g] = f"GPU-{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"
                self.serial[h, g] = f"1654124{rng.randint(0, 999_999):06d}"


def kernel_logs(atts: list[Attempt], fleet: Fleet, seed: int, bundle: Path, info: dict) -> None:
    rng = random.Random(f"{seed}-mt-kernel")
    a1, a2, a3, a4, a5, a6, a7, a8, a9, a10 = atts
    hosts = sorted({h for a in atts for h in a.nodes} | {"gpu030", "gpu035"})
    ev: dict[str, list[tuple[float, str]]] = {h: [] for h in hosts}
    boots: dict[str, list[float]] = {h: [fleet.boot[h]] for h in hosts}
    end = a10.E + 600
    for h in hosts:
        t = fleet.boot[h] + 3600 * rng.uniform(2, 9)
        while t < end:
            ev[h].append((t, f"perf: interrupt took too long ({rng.randint(2501, 3400)} > 2500), lowering "
                             f"kernel.perf_event_max_sample_rate to {rng.choice([79750, 63750, 50000])}"))
            t += 3600 * rng.uniform(5, 14)

    def xid_hdr(h: str, g: int, t: float) -> list[tuple[float, str]]:
        return [(t, f"NVRM: GPU at PCI:{pci(g)}: {fleet.uuid[h, g]}"),
                (t, f"NVRM: GPU Board Serial Number: {fleet.serial[h, g]}")]

    # attempt 1: GSP RPC timeouts on gpu011 GPU2; the rank in that GPU never returns
    h, g = XID119_HOST, XID119_GPU
    ev[h] += xid_hdr(h, g, a1.R)
    for j, (fn, args) in enumerate([("76 (GSP_RM_CONTROL)", "(0x20802a02 0x8)"),
                                    ("76 (GSP_RM_CONTROL)", "(0x2080014b 0x5)"),
                                    ("10 (FREE)", "(0xc1d00004 0x0)"), ("76 (GSP_RM_CONTROL)", "(0x20800a4c 0x4)")]):
        ev[h].append((a1.R + 6.0 * j, f"NVRM: Xid (PCI:{pci(g)}): 119, pid={rng.randint(100000, 999999)}, "
                                      f"name=pt_main_thread, Timeout after 6s of waiting for RPC response from GPU{g} "
                                      f"GSP! Expected function {fn} {args}."))
    # attempts 3 and 4: double-bit ECC then a failed row remap on gpu014 GPU5
    h, g = ECC_HOST, ECC_GPU
    for a in (a3, a4):
        ev[h] += xid_hdr(h, g, a.R)
        ev[h].append((a.R, f"NVRM: Xid (PCI:{pci(g)}): 48, pid={rng.randint(100000, 999999)}, name=pt_main_thread, An "
                           f"uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
                           f"physAddr 0x{rng.getrandbits(36):x} partition {rng.randint(0, 7)}, subpartition "
                           f"{rng.randint(0, 1)}."))
        ev[h].append((a.R + 0.02, f"NVRM: Xid (PCI:{pci(g)}): 64, pid='<unknown>', name=<unknown>, Row Remapper Error: "
                                  f"(0x{rng.getrandbits(36):016x}) - All reserved rows for bank are remapped"))
    # attempts 5 and 6: every GPU of every host reports the user's bad access (Xid 31)
    for a in (a5, a6):
        for hh in a.nodes:
            for gg in range(GPN):
                ev[hh].append((a.R + 0.3 + 0.01 * gg, f"NVRM: Xid (PCI:{pci(gg)}): 31, "
                                                      f"pid={rng.randint(100000, 999999)}, "
                                                      f"name=pt_main_thread, channel 0x{rng.randint(8, 40):08x}, intr "
                                                      f"00000000. MMU Fault: ENGINE GRAPHICS GPC{rng.randint(0, 7)} "
                                                      f"GPCCLIENT_T1_{rng.randint(0, 3)} faulted @ "
                                                      f"0x7f{rng.getrandbits(8):02x}_"
                                                      f"{rng.getrandbits(24):06x}00. Fault is of type FAULT_PDE "
                                                      f"ACCESS_TYPE_VIRT_READ"))
    # attempt 7: the OSS behind two OSTs stops answering during the save: every host reports it within seconds
    first = a7.nodes[rng.randrange(len(a7.nodes))]
    info["lustre_first"] = first
    for hh in a7.nodes:
        ptr = "ffff%012x" % (random.Random(f"{seed}-{hh}-osc").getrandbits(44) << 4)
        dt = 2.0 if hh == first else 4.0 + rng.uniform(0, 7)
        for ost in ("OST0007", "OST0008"):
            dev = f"shr1-{ost}-osc-{ptr}"
            ev[hh].append((a7.R + dt, f"LustreError: 11-0: {dev}: operation ost_write to node {OST_NID} failed: "
                                      f"rc = -107"))
            ev[hh].append((a7.R + dt, f"Lustre: {dev}: Connection to shr1-{ost} (at {OST_NID}) was lost; in progress "
                                      f"operations using this service will wait for recovery to complete"))
            ev[hh].append((a7.E + 900 + rng.uniform(0, 60),
                           f"Lustre: {dev}: Connection restored to shr1-{ost} (at {OST_NID})"))
    for hh in a7.nodes[2::5]:
        pid = rng.randint(100000, 999999)
        ev[hh] += [(a7.R + 246, f"INFO: task pt_main_thread:{pid} blocked for more than 122 seconds."),
                   (a7.R + 246, f"      Tainted: G           OE      {KERNEL} #63-Ubuntu"),
                   (a7.R + 246, '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.')]
    # decoy: Xid 13 in another tenant's job on gpu030, mid attempt 3
    tx = a3.F + 0.45 * (a3.R - a3.F)
    ev["gpu030"] += xid_hdr("gpu030", 6, tx)
    ev["gpu030"] += [(tx, f"NVRM: Xid (PCI:{pci(6)}): 13, pid={rng.randint(100000, 999999)}, name=python3, Graphics SM "
                          f"Warp Exception on (GPC 4, TPC 1, SM 0): Out Of Range Address"),
                     (tx, f"NVRM: Xid (PCI:{pci(6)}): 13, pid={rng.randint(100000, 999999)}, name=python3, Graphics "
                          f"Exception: ESR 0x52d730=0x20d 0x52d734=0x24 0x52d728=0xc81eb60 0x52d72c=0x1174")]
    # reboots: gpu008 (admin, attempt 8), gpu016 (died, attempt 9), gpu035 (another tenant's node failure)
    boots[REBOOT_HOST].append(a8.E + 95)
    boots[NODEFAIL_HOST].append(a9.R + 1900)
    boots["gpu035"].append(info["other_nodefail_ts"] + 1700)
    for hh in hosts:
        evs = [e for e in ev[hh] if not (hh == NODEFAIL_HOST and a9.R - 1 < e[0] < a9.R + 1900)]
        nf = info["other_nodefail_ts"]
        evs = [e for e in evs if not (hh == "gpu035" and nf - 1 < e[0] < nf + 1700)]
        for b in boots[hh]:
            evs += boot_block(b)
        evs.sort(key=lambda x: x[0])
        num = int(hh[3:])
        if num % 2:                       # dmesg -T of the current boot only
            cur = boots[hh][-1]
            body = [f"{dmesg_T(t)} {m}" for t, m in evs if t >= cur]
            write_file(bundle / "nodes" / hh / "dmesg-T.log", ("\n".join(body) + "\n").encode())
        else:                             # journalctl -k -o short-iso, every boot
            body, bi = [], 0
            for t, m in evs:
                while bi < len(boots[hh]) and t >= boots[hh][bi]:
                    body.append(f"-- Boot {random.Random(f'{seed}-{hh}-{bi}').getrandbits(128):032x} --")
                    bi += 1
                body.append(f"{short_iso(t)} {hh} kernel: {m}")
            write_file(bundle / "nodes" / hh / "kern-journal.log", ("\n".join(body) + "\n").encode())


def nvsmi_q(t: float, h: str, fleet: Fleet) -> bytes:
    d, _ = _split(t)
    out = ["", "==============NVSMI LOG==============", "",
           f"Timestamp                                 : {d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}",
           f"Driver Version                            : {DRIVER}",
           "CUDA Version                              : 12.9", "",
           f"Attached GPUs                             : {GPN}"]
    for g in range(GPN):
        bad = g == ECC_GPU
        out += [f"GPU 00000000:{BUSIDS[g][:2].upper()}:00.0",
                "    Product Name                          : NVIDIA H100 80GB HBM3",
                f"    Serial Number                         : {fleet.serial[h, g]}",
                f"    GPU UUID                              : {fleet.uuid[h, g]}",
                "    ECC Errors",
                "        Volatile",
                "            SRAM Correctable              : 0",
                "            SRAM Uncorrectable Parity     : 0",
                "            SRAM Uncorrectable SEC-DED    : 0",
                "            DRAM Correctable              : 0",
                f"            DRAM Uncorrectable            : {2 if bad else 0}",
                "        Aggregate",
                "            SRAM Correctable              : 0",
                "            SRAM Uncorrectable Parity     : 0",
                "            SRAM Uncorrectable SEC-DED    : 0",
                f"            DRAM Correctable              : {3 if bad else 0}",
                f"            DRAM Uncorrectable            : {2 if bad else 0}",
                "    Retired Pages",
                "        Single Bit ECC                    : N/A",
                "        Double Bit ECC                    : N/A",
                "        Pending Page Blacklist            : N/A",
                "    Remapped Rows",
                "        Correctable Error                 : 0",
                f"        Uncorrectable Error               : {2 if bad else 0}",
                f"        Pending                           : {'Yes' if bad else 'No'}",
                f"        Remapping Failure Occurred        : {'Yes' if bad else 'No'}",
                "        Bank Remap Availability Histogram",
                f"            Max                           : {637 if bad else 640} bank(s)",
                "            High                          : 0 bank(s)",
                "            Partial                       : 0 bank(s)",
                f"            Low                           : {2 if bad else 0} bank(s)",
                f"            None                          : {1 if bad else 0} bank(s)", ""]
    return ("\n".join(out) + "\n").encode()


# ----------------------------------------------------------------------------- the shared cluster's scheduler
OTHER_NAMES = ["vllm-bench", "sdxl-ft", "rlhf-ppo-7b", "bert-sweep", "nccl-tests", "dcgm-diag", "asr-conformer",
               "embed-distill", "jupyter", "llava-ft", "eval-mmlu", "tok-shard"]
OTHER_USERS = [("akumar", "vision"), ("lchen", "speech"), ("rgarcia", "rl-team"), ("ops", "infra"), ("ypark", "nlp")]


def other_jobs(atts: list[Attempt], seed: int, info: dict) -> list[dict]:
    rng = random.Random(f"{seed}-mt-others")
    a2, a3, a4, a7, a9, a10 = atts[1], atts[2], atts[3], atts[6], atts[8], atts[9]
    jobs = []
    lanes = [[f"gpu{i:03d}", f"gpu{i + 1:03d}", f"gpu{i + 2:03d}"] for i in range(20, 39, 3)]
    nf_t = a9.R - 1200 - rng.uniform(0, 300)
    info["other_nodefail_ts"] = nf_t
    # (lane, the moment the special job must span, what it becomes)
    forced = [(0, a2.T - 3600, "timeout"), (2, a4.E - 900, "killtask"), (5, nf_t, "nodefail"),
              (0, a7.F + 3600, "eval"), (6, a3.F + 7200, "drain038")]
    for li, lane in enumerate(lanes):
        t = T0 - 7200 + rng.uniform(0, 3000)
        prev_end = t - 60
        todo = sorted((p, what) for l2, p, what in forced if l2 == li)
        while t < a10.E:
            dur = rng.uniform(1200, 9 * 3600)
            what = None
            if todo and t + dur > todo[0][0]:
                point, what = todo.pop(0)
                t = max(prev_end + 30, min(t, point - rng.uniform(600, 3000)))
                dur = max(dur, point - t + rng.uniform(600, 3000))
            nodes = lane[: rng.randint(1, 3)]
            if lane[1] == "gpu027" and t > a4.E:
                nodes = [lane[0]]                     # gpu027 stays drained
            user, acct = rng.choice(OTHER_USERS)
            state = rng.choices(["COMPLETED", "FAILED", "CANCELLED", "OUT_OF_MEMORY"], [70, 18, 8, 4])[0]
            j = dict(submit=t - rng.uniform(5, 900), start=t, end=t + dur, name=rng.choice(OTHER_NAMES), user=user,
                     account=acct, nodes=nodes, state=state, special=None)
            if what == "timeout":                     # someone else's time limit an hour before ours
                j.update(end=a2.T - 3600 + rng.uniform(200, 500), state="TIMEOUT")
            elif what == "killtask":                  # "Kill task failed" drains gpu027
                j.update(nodes=lane, state="CANCELLED", end=a4.E - rng.uniform(600, 800), special="killtask")
            elif what == "nodefail":                  # another tenant's node failure on gpu035
                j.update(nodes=["gpu035", "gpu036"], state="NODE_FAIL", end=nf_t + 305, special="nodefail")
            elif what == "eval":                      # the team's own eval job on a spare node
                j.update(name=f"{RUN}-evalharness", user=USER, account="proj-mt", nodes=["gpu021"], state="COMPLETED")
            elif what == "drain038":                  # an admin drains gpu038 after its job
                j.update(special="drain038", nodes=["gpu038"])
            jobs.append(j)
            prev_end = j["end"]
            t = j["end"] + rng.uniform(30, 2400)
            if j["special"] == "nodefail":
                t = nf_t + 1700 + 300
    return jobs


def scheduler_files(atts: list[Attempt], others: list[dict], bundle: Path, seed: int, info: dict) -> None:
    rng = random.Random(f"{seed}-mt-sched")
    L = Sink()

    def add(t: float, msg: str) -> None:
        L.add(t, f"{ctld_ts(t)} {msg}")

    rows: list[tuple[float, str]] = []
    hdr = "JobID|JobName|User|Account|Partition|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"
    for j in others:
        jid, nl, nn = j["id"], hostlist(j["nodes"]), len(j["nodes"])
        add(j["submit"], f"_slurm_rpc_submit_batch_job: JobId={jid} InitPrio={rng.randint(1000, 9000)} "
                         f"usec={rng.randint(200, 900)}")
        add(j["start"] + 0.02, f"sched: Allocate JobId={jid} NodeList={nl} #CPUs={224 * nn} Partition=gpu")
        e, st = j["end"], j["state"]
        ec = "0:0"
        if st == "COMPLETED":
            add(e, f"_job_complete: JobId={jid} WEXITSTATUS 0")
        elif st == "FAILED":
            add(e, f"_job_complete: JobId={jid} WEXITSTATUS 1")
            ec = "1:0"
        elif st == "OUT_OF_MEMORY":
            add(e, f"_job_complete: JobId={jid} OOM failure")
            ec = "0:125"
        elif st == "TIMEOUT":
            add(e - 0.5, f"Time limit exhausted for JobId={jid}")
            add(e, f"_job_complete: JobId={jid} WTERMSIG 15")
        elif st == "CANCELLED":
            ua = (j["user"], j["account"])
            uid = 1000 + OTHER_USERS.index(ua) if ua in OTHER_USERS else UID
            add(e - 0.3, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={jid} uid {uid}")
            st = f"CANCELLED by {uid}"
            ec = "0:15"
        elif st == "NODE_FAIL":
            t = info["other_nodefail_ts"]
            add(t + 100.2, "error: Nodes gpu035 not responding")
            add(t + 300.4, "error: Nodes gpu035 not responding, setting DOWN")
            add(t + 300.5, f"Killing JobId={jid} on failed node gpu035")
            add(e, f"_job_complete: JobId={jid} WTERMSIG 9")
            add(t + 1700 + 95.3, "node gpu035 returned to service")
        add(e + 0.01, f"_job_complete: JobId={jid} done")
        if j["special"] == "killtask":
            add(e + 95.4, f"error: slurmd error running JobId={jid} on node(s)=gpu027: Kill task failed")
            add(e + 95.5, "drain_nodes: node gpu027 state set to DRAIN")
        if j["special"] == "drain038":
            add(e + 40.1, "update_node: node gpu038 reason set to: nvlink errors, RMA ticket 88213")
            add(e + 40.2, "update_node: node gpu038 state set to DRAINED")
        rows.append((j["start"], f"{jid}|{j['name']}|{j['user']}|{j['account']}|gpu|{224 * nn}|{st}|{ec}|"
                                 f"{slurm_ts(j['submit'])}|{slurm_ts(j['start'])}|{slurm_ts(e)}|"
                                 f"{elapsed_str(e - j['start'])}|{nn}|{nl}"))
        rows.append((j["start"] + 0.1, f"{jid}.batch|batch|||gpu|224|{'COMPLETED' if st == 'COMPLETED' else 'FAILED'}|"
                                       f"{ec}|{slurm_ts(j['start'])}|{slurm_ts(j['start'])}|{slurm_ts(e)}|"
                                       f"{elapsed_str(e - j['start'])}|1|{j['nodes'][0]}"))
    for a in atts:
        nl, cpus = hostlist(a.nodes), 224 * NODES
        add(a.submit, f"_slurm_rpc_submit_batch_job: JobId={a.job} InitPrio={rng.randint(1000, 9000)} "
                      f"usec={rng.randint(200, 900)}")
        add(a.S + 0.03, f"sched: Allocate JobId={a.job} NodeList={nl} #CPUs={cpus} Partition=gpu")
        E = a.E
        st, ec, steps = "FAILED", "1:0", [("batch", "FAILED", "1:0"), ("0", "FAILED", "1:0")]
        if a.mode == "time_limit":
            add(a.T + 0.002, f"Time limit exhausted for JobId={a.job}")
            add(E, f"_job_complete: JobId={a.job} WTERMSIG 15")
            st, ec, steps = "TIMEOUT", "0:0", [("batch", "CANCELLED", "0:15"), ("0", "CANCELLED", "0:15")]
            add(E + 3.8, f"error: job_epilog_complete: JobId={a.job} epilog error on {EPILOG_HOST}, draining the node")
            add(E + 3.9, f"drain_nodes: node {EPILOG_HOST} state set to DRAIN")
        elif a.mode == "preemption":
            add(a.R - 41.7, f"reboot request queued for nodes {REBOOT_HOST}")
            add(a.R, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={a.job} uid 0")
            st, ec, steps = "CANCELLED by 0", "0:15", [("batch", "CANCELLED", "0:15"), ("0", "CANCELLED", "0:15")]
            add(E + 95 + 150.6, f"node {REBOOT_HOST} returned to service")
        elif a.mode == "node_failure":
            add(a.R + 100.3, f"error: Nodes {a.host} not responding")
            add(E - 3.2, f"error: Nodes {a.host} not responding, setting DOWN")
            add(E - 3.1, f"Killing JobId={a.job} on failed node {a.host}")
            add(E, f"_job_complete: JobId={a.job} WTERMSIG 9")
            st, ec, steps = "NODE_FAIL", "0:0", [("batch", "CANCELLED", "0:15"), ("0", "CANCELLED", "0:9")]
        elif a.mode is None:
            add(E, f"_job_complete: JobId={a.job} WEXITSTATUS 0")
            st, ec, steps = "COMPLETED", "0:0", [("batch", "COMPLETED", "0:0"), ("0", "COMPLETED", "0:0")]
        else:
            add(E, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
        add(E + 0.01, f"_job_complete: JobId={a.job} done")
        if a.mode == "gpu_hw_other":
            add(E + 900.2, f"update_node: node {a.host} reason set to: xid119 gsp timeout gpu{a.gpu}")
            add(E + 900.3, f"update_node: node {a.host} state set to DRAINED")
        if a.mode == "gpu_memory_ecc" and a.k == 4:
            add(E + 600.2, f"update_node: node {a.host} reason set to: row remap failure gpu{a.gpu}, RMA")
            add(E + 600.3, f"update_node: node {a.host} state set to DRAINED")
        if a.mode == "node_failure":
            add(a.R + 1900 + 110.4, f"node {a.host} returned to service")
        rows.append((a.S, f"{a.job}|{RUN}|{USER}|proj-mt|gpu|{cpus}|{st}|{ec}|{slurm_ts(a.submit)}|{slurm_ts(a.S)}|"
                          f"{slurm_ts(E)}|{elapsed_str(E - a.S)}|{NODES}|{nl}"))
        for sname, sst, sec in steps:
            nn, nl2, cp = (1, a.nodes[0], 224) if sname == "batch" else (NODES, nl, cpus)
            rows.append((a.S + 0.1, f"{a.job}.{sname}|{'batch' if sname == 'batch' else 'torchrun'}|||gpu|{cp}|{sst}|"
                                    f"{sec}|{slurm_ts(a.S)}|{slurm_ts(a.S)}|{slurm_ts(E)}|{elapsed_str(E - a.S)}|"
                                    f"{nn}|{nl2}"))
    rows.sort(key=lambda x: x[0])
    write_file(bundle / "scheduler" / "slurmctld.log", L.render())
    write_file(bundle / "scheduler" / "sacct-all.txt", ("\n".join([hdr] + [r for _, r in rows]) + "\n").encode())


def inventory_toml() -> str:
    return f"""# the shared cluster the team rents a slice of
[providers.{PROVIDER}]
usd_per_gpu_hour = 2.29
support = "noc@{PROVIDER}.example"

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = 8
interconnect = "InfiniBand NDR 8x400G"
nodes = "gpu[001-040]"
"""


def run_toml() -> str:
    return f"""# {RUN}: ~30B dense decoder, Megatron-Core TP={TP} PP={PP} DP={DP}
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}   # global batch {GBS} x sequence length {SEQ}
flops_per_token = {FLOPS_PER_TOKEN:.4e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --nodes={NODES} --gpus-per-node={GPN} --time=20:00:00 --dependency=afterany:$PREV mt30b.sbatch"
"""


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts = build_timeline(seed)
    info: dict = {}
    others = other_jobs(atts, seed, info)
    # submission times, then job ids in submission order (the team's chain of three goes in together)
    for a in atts:
        a.submit = a.S - {1: 300, 5: 40, 6: 30, 7: 50, 8: 20, 9: 15, 10: 25}.get(a.k, 0)
    a2 = atts[1]
    for a in atts[1:4]:
        a.submit = a2.S - 60 + (a.k - 2) * 1.1
    allj = [(a.submit, "ours", a) for a in atts] + [(j["submit"], "other", j) for j in others]
    allj.sort(key=lambda x: x[0])
    jid = 70300 + seed % 7000
    for _, kind, x in allj:
        jid += 1
        if kind == "ours":
            x.job = jid
        else:
            x["id"] = jid
    a3 = atts[2]
    s0 = (a3.load_iter // 10) * 10 + 600
    info["spike"] = (s0, s0 + 40)
    total_iters = TRAIN_ITERS_BOX["n"]
    fleet = Fleet(seed)
    write_file(bundle / "inventory.toml", inventory_toml().encode())
    rdir = bundle / "runs" / RUN
    write_file(rdir / "run.toml", run_toml().encode())
    for a in atts:
        pids = Pids(seed, a)
        gz = a.k in (2, 7, 10)
        write_file(rdir / f"attempt-{a.k}" / (f"slurm-{a.job}.out" + (".gz" if gz else "")),
                   train_log(a, pids, seed, total_iters, info), gz=gz)
    kernel_logs(atts, fleet, seed, bundle, info)
    write_file(bundle / "nodes" / ECC_HOST / "nvidia-smi-q.txt", nvsmi_q(atts[2].E + 1500, ECC_HOST, fleet))
    scheduler_files(atts, others, bundle, seed, info)
    cats, total, per = ledger(atts)
    incidents = []
    for j, a in enumerate(atts[:-1]):
        nxt = atts[j + 1]
        blame = "user" if a.mode in ("time_limit", "cuda_error") else "provider"
        incidents.append({"id": j + 1, "attempt": a.k, "attempts": [a.k], "slurm_job": a.job, "failure_mode": a.mode,
                          "blame": blame, "host": a.host, "cluster": CLUSTER, "provider": PROVIDER,
                          "gpu_index": a.gpu, "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E),
                          "next_start_ts": iso_z(nxt.S), "last_ckpt_step": a.last_ckpt,
                          "failed_at_step": a.steps[-1][0] + 1 if a.steps else a.load_iter + 1,
                          "gpu_hours": per[j], "gpu_hours_lost": round(sum(per[j].values()), 4)})
    peers = info["nodefail_peers"]
    decoys = {EPILOG_HOST: "epilog error drained it after attempt 2 had already ended at its time limit",
              "gpu027": "another tenant's job: 'Kill task failed' drained it",
              "gpu030": "Xid 13 in another tenant's job during attempt 3",
              "gpu035": "another tenant's NODE_FAIL ~20 min before attempt 9's node failure; never in the team's job",
              "gpu003": "NCCL 'Call to connect returned Connection refused, retrying' at init of attempt 1; recovered",
              info["lustre_first"]: "first host to report the Lustre OST outage of attempt 7 (shared storage)",
              peers[0]: "NET/IB completion errors naming gpu016 (symptom of its death)",
              peers[1]: "NET/IB completion errors naming gpu016 (symptom of its death)"}
    # a host that is some incident's culprit is no decoy (the first to report the outage may be the node that dies
    # in attempt 9)
    culprits = {i["host"] for i in incidents if i.get("host")}
    decoys = {h: why for h, why in decoys.items() if h not in culprits}
    by_provider = round(sum(i["gpu_hours_lost"] for i in incidents if i["blame"] == "provider"), 4)
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP, "flops_per_token": FLOPS_PER_TOKEN,
        "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "first_start_ts": iso_z(atts[0].S), "last_end_ts": iso_z(atts[-1].E), "train_iters": total_iters,
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "nodes": hostlist(a.nodes), "start_ts": iso_z(a.S),
                      "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E), "loaded_step": a.load_iter,
                      "last_step": a.steps[-1][0] if a.steps else a.load_iter, "saves": [n for n, _, _ in a.saves],
                      "end": a.mode or "complete"} for a in atts],
        "match_on_attempt": True,
        "incidents": incidents,
        "forbidden_incidents": [{"failure_mode": "loss_divergence", "reason": "the loss spike of attempt 3 recovered "
                                 "within 40 iterations; training went on"},
                                {"failure_mode": "manual_stop", "attempts": [8], "reason": "the provider's admin "
                                 "cancelled the job (uid 0) to reboot gpu008: maintenance, not the team"}],
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys, "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: by_provider},
        "notes": "UTC. host null matches any host. Ledger: see slurm_multitenant.py's docstring.",
    }
    write_file(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261206)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    files = [p for p in (out / "bundle").rglob("*") if p.is_file()]
    print(f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB); total "
          f"{truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
