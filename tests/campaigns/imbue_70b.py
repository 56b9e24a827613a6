#!/usr/bin/env python3
"""Independent campaign "imbue_70b": the hardware lottery of a bare-metal H100 fleet under Slurm.

Written without reading clusterlab's analysis code. It re-enacts, scaled down, the failure mix
that Imbue described publicly for the cluster on which it trained its 70B model (blog post
"From bare metal to a 70B model: infrastructure set-up and scripts", imbue.com/research/
70b-infrastructure, June 2024, and the released scripts in imbue-ai/cluster-health): Dell
PowerEdge XE9680 hosts (8 x H100 SXM, 8 x ConnectX-7 NDR, Ubuntu 22.04, kernel 6.5.0-1007-nvidia,
driver 535.129.03) rented bare-metal from one provider, flaky InfiniBand ports, GPUs with Xid
errors, PCIe trouble, hosts that reboot by themselves, GPUs that are silently slower than their
siblings, and a health-check sweep (gpu_stress_test + health_checks) run between attempts that
drains a bad node.

Writes, under --out DIR:
  DIR/bundle/inventory.toml                 one provider ("ardent"), one cluster, 20 hosts whose
                                            names are Dell-service-tag-like (hgx-<tag>): no
                                            numeric ranges, the Slurm hostlists are comma lists
  DIR/bundle/runs/imbue-70b/run.toml
  DIR/bundle/runs/imbue-70b/attempt-<k>/slurm-<jobid>.out[.gz]
        srun output of the sbatch step: torchrun (torch 2.2 logging), Megatron-LM rank-0 /
        last-rank lines, PyTorch c10d errors and NCCL 2.18 INFO/WARN lines all interleaved
        (NCCL_DEBUG=INFO to stdout: NCCL lines carry no time stamp at all)
  DIR/bundle/runs/imbue-70b/attempt-3/steps/<host>.jsonl.gz
        per-rank step records (8 ranks per host file, every step of attempt 3, ts = epoch
        seconds on the host's own clock); the file of the host that lost power ends in a
        half-written record
  DIR/bundle/nodes/<host>/...               kernel log per host, in one of: journalctl -k -o
        short-iso (journal-kernel.log, with "-- Boot <id> --" separators), dmesg -T (dmesg.log),
        dmesg --time-format iso (dmesg-iso.log), rsyslog kern.log + rotated kern.log.1.gz
  DIR/bundle/scheduler/slurmctld.log        slurmctld (LogTimeFormat iso8601_ms with offset)
  DIR/bundle/scheduler/sacct.txt            sacct -P output (training jobs and other jobs)
  DIR/bundle/scheduler/healthcheck/hc-sweep-<jobid>.out   the health-check sweep's output
  DIR/truth.json
Usage: imbue_70b.py --out DIR [--seed N]     (Python 3.11, standard library only; deterministic
per seed: gzip members have mtime=0 and no name; ~10 MB, ~2 s)

Scenario (run "imbue-70b": Megatron-LM 70B dense, TP=8 PP=4 DP=4, 128 GPUs = 16 of the 20 hosts,
global batch 256 x 4096 tokens, baseline 8.85 s/step, checkpoint every 200 steps; all truth
times are the Slurm controller's clock, UTC; every host's own clock is off by up to ~3.5 s):
  attempt 1  fresh start. Host FLAP's port ibp94s0 (mlx5_5, rail 3) flaps once for ~2 s about
             2 h in (kernel "Link down"/"Link up", NCCL "Got async event : port error" / "port
             active"; training continues at pace), then goes down for ~50 s: NCCL on the rail-3
             ranks of its two ring neighbours reports "Got completion from peer <FLAP's IP> with
             error 12 ... vendor err 129" (symptoms) ~31 s later, FLAP's own rank a little later;
             the three ranks abort, srun --kill-on-bad-exit kills the step, sacct FAILED.
                                                                   [network, FLAP]
  attempt 2  FLAP drained by the operator ("ibp94s0 flapping ..."), spare in. Xid 119 (GSP RPC
             timeout) on host XID GPU2, repeated and then rate-limited; the rank hangs, every other
             rank's ProcessGroupNCCL watchdog fires 600 s later, SIGABRT, the stuck worker needs
             SIGKILL; sacct FAILED.                                [gpu_hw_other, XID]
  attempt 3  XID drained; spare SLOW joins. SLOW's GPU6 is ~7 % slower (no error anywhere; seen
             only in the per-rank records: its compute_s is 7 % higher, every other rank's comm_s
             absorbs the wait; every step of the attempt is 6.4 % slower than baseline). Host BOOT
             loses power: its kernel journal simply stops (no error) and a new boot starts ~5 min
             later; its ring neighbours report NET/IB error 12 against BOOT's IP (symptoms) and
             abort, srun waits for BOOT's task until slurmctld marks BOOT DOWN (SlurmdTimeout),
             kills the job (NODE_FAIL), and later logs "validate_node_specs: Node BOOT
             unexpectedly rebooted boot_time=... last response=...".
                                                                   [node_failure, BOOT]
  sweep      between attempts 3 and 4 a health-check sweep (sbatch job "hc-sweep", not a
             training attempt) runs imbue's gpu_stress_test on 18 hosts: SLOW does 7 % fewer
             loops, the operator drains SLOW; BOOT passes and is resumed.
  attempt 4  BOOT back, SLOW out (spare in). Host PCIE has shown corrected PCIe AER errors
             (RxErr/BadTLP on the switch port above its GPU1) since attempt 1, more often in
             attempt 4; then "Uncorrected (Fatal) ... SDES (Surprise Down)", device recovery
             failed, and the GPU behind it falls off the bus (Xid 79) within a second. The rank
             hangs, every other rank's watchdog fires 600 s later; sacct FAILED. The root cause
             is the PCIe link (the Xid 79 is its consequence).      [pcie_error, PCIE]
  attempt 5  PCIE drained; FLAP (cable replaced, now healthy) returns; runs to the end.
  Decoys: the ring neighbours of FLAP in attempt 1 and of BOOT in attempt 3 (NET/IB completion
  errors, aborts: symptoms); host CAER: corrected PCIe AER (Timeout) on its NIC every few hours,
  harmless; host GIDW: NCCL WARN "Got async event : GID table change" in attempt 2; the idle
  spare IDLE (never in a training job): Xid 43 when the sweep's stress test was stopped.
  Noise: NCCL INFO spam, Python UserWarnings, non-UTF-8 bytes, blank lines, other users'
  jobs in sacct, truncated last lines (attempt 4's srun output, BOOT's step file), a gzipped
  rotated kern.log.1.gz, clock skew on every host.

Ledger (truth.json expected_ledger, GPU-hours = 128 x seconds / 3600; campaign1.py conventions):
  startup    = attempt start (sacct Start) -> start of its first step ("[before the start of
               training step] datetime")
  productive = kept steps (step <= last durable checkpoint of a failed attempt; every step of the
               completed attempt) at baseline 8.85 s (their real duration outside attempt 3)
  straggler  = for kept steps of attempt 3: step time above the 8.85 s baseline (pinned to SLOW)
  checkpoint = save stalls of the saves that completed, plus the 4 s tail after the final save
  recompute  = end of the last durable save of the attempt (or its first step start) -> root event
  hang       = root event -> attempt exit (sacct End). Root events: FLAP's "Link down", the first
               Xid 119, BOOT's power loss (between its last kernel line / last step record and
               the neighbours' errors ~31 s later), the fatal AER.
  restart    = attempt exit -> next attempt start (includes the health-check sweep)
  slowdown = data_stall = idle = 0

Formats, and the public material where they were checked (the text here is written anew):
  * Imbue's fleet facts: imbue-ai/cluster-health health_checks/config.json (mlx5_0..mlx5_11 ->
    ibp26s0..ibp220s0, "UP 4X NDR", kernel 6.5.0-1007-nvidia, driver 535.129.03, Ubuntu 22.04,
    service-tag host names "hostname-23r66x3"), health_checks/dmesg_whitelist.py (Dell PowerEdge
    DMI line, "mlx5_core ADDR enp.*: Link up/Link down", perf/hrtimer/workqueue/NMI/kauditd/veth
    noise lines, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.129.03 ..."),
    gpu_stress_test/gpu_stress_test.py ("{hostname}: All okay for {N} loops"),
    health_checks/run_health_checks.py ("Running health checks on nodes: ", "Nodes with
    ComputeHostHealth.OK: [...]" summary).
  * "mlx5_core 0000:5e:00.0 ibp94s0: Link down" / "Link up": Linux mlx5e carrier messages,
    seen in journalctl in bigstack-oss/cubecos #733; link_downed counters: nebius/soperator #481.
  * NCCL 2.18: "host:pid:tid [d] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from
    peer 10.2.0.5<33092> with error 12, opcode 0, len 0, vendor err 129 (Recv)" followed by
    "NCCL INFO transport/net.cc:1134 -> 6", "proxy.cc:679 -> 6", "proxy.cc:858 -> 6 [Proxy
    Thread]" (stas00/ml-engineering debug/pytorch.md); "NET/IB : Got async event : port error"
    (metaseq OPT-175B logbook as quoted in a public write-up; a public job-exit classifier matches
    the same string), "... : GID table change"; the INFO init lines (Bootstrap, NET/IB : Using
    [0]mlx5_0:1/IB ... [RO]; OOB bond0:..., ncclCommInitRank ... Init START/COMPLETE, Channel
    .. via NET/IB/..) as in NVIDIA/nccl issues quoted in campaign1.py.
  * PyTorch 2.1/2.2 c10d: "[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective
    operation timeout: WorkNCCL(SeqNum=..., OpType=ALLREDUCE, NumelIn=..., NumelOut=...,
    Timeout(ms)=600000) ran for 600542 milliseconds before timing out." (vllm-project/vllm #3071,
    #2770), "[E ProcessGroupNCCL.cpp:489] Some NCCL operations have failed or timed out. Due to
    the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/
    incomplete data.", "[E ProcessGroupNCCL.cpp:495] To avoid data inconsistency, we are taking
    the entire process down." (stas00/ml-engineering, public logs); ncclRemoteError text as in
    campaign1.py.
  * torch 2.2 elastic logging "[2024-03-12 14:41:30,298] torch.distributed.elastic.
    multiprocessing.api: [ERROR] failed (exitcode: 1) local_rank: 0 (pid: 494) of binary:
    /usr/bin/python", "[WARNING] Sending process N closing signal SIGTERM", the torchrun
    ChildFailedError block (many public issues found with find_string);
    "Unable to shutdown process N via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL".
  * NVRM Xid 119 "NVRM: Xid (PCI:0000:61:00): 119, pid=123417, name=nv-hostengine, Timeout after
    6s of waiting for RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (...)."
    and "NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:61:00 (printing 1 of every
    30).  The GPU likely needs to be reset." (NVIDIA/open-gpu-kernel-modules source and issues,
    NVIDIA/gpu-operator docs); Xid 79 "GPU has fallen off the bus."; Xid 43 "Ch 00000008".
  * PCIe AER on kernel 6.x: "pcieport 0000:00:1d.0: AER: Corrected error received: 0000:02:00.0",
    "<dev>: AER: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)", "<dev>:
    AER:   device [15b7:5006] error status/mask=00000001/0000e000", "<dev>: AER:    [ 0] RxErr
    (First)", "... severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)", "[ 5]
    SDES (First)", "AER: device recovery failed", "can't recover (no error_detected callback)"
    (linux-pci patch threads quoting dmesg; Linux drivers/pci/pcie/aer.c and err.c).
  * Slurm: slurmctld "validate_node_specs: Node X unexpectedly rebooted boot_time=1726123354 last
    response=1726123285" with "[2024-09-12T06:42:50.393+00:00]" stamps (AWS PCS documentation,
    SchedMD slurm node_mgr.c), "error: Nodes X not responding", "error: Nodes X not responding,
    setting DOWN", "Killing JobId=N on failed node X", "_job_complete: JobId=N WEXITSTATUS 1",
    "update_node: node X reason set to: ...", "update_node: node X state set to DRAINED / IDLE"
    (public slurmctld logs); slurmstepd "*** JOB %u ON %s CANCELLED AT %s DUE TO NODE FAILURE,
    SEE SLURMCTLD LOG FOR DETAILS ***" (slurm req.c); "srun: error: Node failure on X", "srun:
    error: X: task N: Exited with exit code 1", "srun: Job step aborted: Waiting up to 32
    seconds for job step to finish.", "srun: launch/slurm: _step_signal: Terminating StepId=N.0".
  * Megatron-LM (early-2024) training_log iteration line, checkpoint save/load lines,
    "[before the start of training step] datetime: ...", timers "(min, max) time across ranks
    (ms):" (NVIDIA/Megatron-LM training.py / checkpointing.py; bigscience .out logs).
  * Kernel log shapes: journalctl -k -o short-iso with "-- Boot <32 hex> --" separators, dmesg -T,
    dmesg --time-format iso, rsyslog "Apr  8 06:00:00 host kernel: [ 1234.567890] ..." (util-linux,
    systemd documentation, public logs).
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

# ----------------------------------------------------------------------------- constants
RUN = "imbue-70b"
CLUSTER, PROVIDER = "ardent-h100", "ardent"
GPN = 8
NNODES = 16
GPUS = NNODES * GPN
TP, PP, DP = 8, 4, 4
GBS, SEQ = 256, 4096
TOKENS_PER_STEP = GBS * SEQ
FLOPS_PER_TOKEN = 4.52e11
PEAK_H100_SXM = 989.4e12
BASE_STEP = 8.850
BASE_COMPUTE, BASE_DATA = 8.150, 0.050
SLOW_FACTOR = 1.07
SLOW_STEP = BASE_COMPUTE * SLOW_FACTOR + BASE_DATA + 0.650  # ~9.42 s
JITTER = 0.0015
SAVE_INTERVAL = 200
LOG_INTERVAL = 10
WATCHDOG_MS = 600000
T0 = datetime(2024, 4, 7, 17, 40, 0, tzinfo=UTC).timestamp()
NCCL_VERSION = "2.18.6+cuda12.2"
DRIVER = "535.129.03"
KERNEL = "6.5.0-1007-nvidia"
CKPT = "/mnt/ckpt/imbue-70b"
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

GPU_BUS = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
NIC_DEV = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
NIC_IF = ["ibp26s0", "ibp60s0", "ibp77s0", "ibp94s0", "ibp156s0", "ibp188s0", "ibp204s0", "ibp220s0"]
NIC_PCI = [f"0000:{int(n[3:-2]):02x}:00.0" for n in NIC_IF]


def _tags() -> list[str]:
    r = random.Random("imbue-70b-service-tags")
    out: set[str] = set()
    while len(out) < 20:
        body = "".join(r.choice("0123456789bcdfghjklmnpqrstvwxz") for _ in range(5))
        out.add("hgx-" + body + r.choice(["x3", "y3", "z3", "w3"]))
    return sorted(out)


HOSTS = _tags()  # sorted: Slurm orders the job's nodes this way
BASE16 = HOSTS[:16]
# roles (fixed positions in the sorted host list)
FLAP, PCIE, XID, BOOT = HOSTS[5], HOSTS[2], HOSTS[9], HOSTS[12]
CAER, GIDW = HOSTS[7], HOSTS[14]
SLOW, SPARE2, SPARE3, IDLE = HOSTS[16], HOSTS[17], HOSTS[18], HOSTS[19]
SLOW_GPU, XID_GPU, PCIE_GPU, FLAP_RAIL = 6, 2, 1, 3


def host_ip(h: str) -> str:
    return f"10.20.1.{11 + HOSTS.index(h)}"


# ----------------------------------------------------------------------------- time formats
def _dt(t: float) -> tuple[datetime, int]:
    us = int(round(t * 1e6))
    s, f = divmod(us, 1_000_000)
    return datetime.fromtimestamp(s, UTC), f


def meg_ts(t: float) -> str:
    return _dt(t)[0].strftime("%Y-%m-%d %H:%M:%S")


def py_log_ts(t: float) -> str:  # python logging asctime
    d, f = _dt(t)
    return f"{d:%Y-%m-%d %H:%M:%S},{f // 1000:03d}"


def ctld_ts(t: float) -> str:
    d, f = _dt(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{f // 1000:03d}+00:00]"


def slurm_ts(t: float) -> str:
    return _dt(t)[0].strftime("%Y-%m-%dT%H:%M:%S")


def iso_z(t: float) -> str:
    d, f = _dt(t)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{f // 1000:03d}Z"


def date_cmd(t: float) -> str:
    d, _ = _dt(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def elapsed(sec: float) -> str:
    sec = int(round(sec))
    d, r = divmod(sec, 86400)
    h, r = divmod(r, 3600)
    m, s = divmod(r, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts: list[str]) -> str:  # non-numeric tags: Slurm cannot range them
    return ",".join(sorted(hosts))


# ----------------------------------------------------------------------------- writers
class Sink:
    def __init__(self) -> None:
        self.rows: list[tuple[float, int, bytes]] = []

    def add(self, t: float, line: str | bytes) -> None:
        self.rows.append((t, len(self.rows), line if isinstance(line, bytes) else line.encode()))

    def many(self, t: float, lines: list[str]) -> None:
        for i, ln in enumerate(lines):
            self.add(t + 1e-6 * i, ln)

    def render(self, cut: int = 0) -> bytes:
        self.rows.sort(key=lambda r: (r[0], r[1]))
        data = b"\n".join(r[2] for r in self.rows) + b"\n"
        return data[: len(data) - 1 - cut] if cut else data


def write(path: Path, data: bytes, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as g:
            g.write(data)
        data = buf.getvalue()
    path.write_bytes(data)


# ----------------------------------------------------------------------------- timeline
class Att:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps: list[tuple[int, float, float]] = []
        self.saves: list[tuple[int, float, float]] = []
        self.R = self.E = None


def step_base(a: Att) -> float:
    return SLOW_STEP if SLOW in a.nodes else BASE_STEP


def simulate(a: Att, rng: random.Random, train_iters: int | None) -> None:
    t, n = a.F, a.load
    while True:
        if a.kind == "complete" and n >= train_iters:
            break
        dur = step_base(a) * (1 + rng.uniform(-JITTER, JITTER))
        if a.kind == "failure" and n + 1 == a.fail_step:
            a.R = float(math.floor(t + 0.4 * dur))
            a.E = a.R + a.hang
            return
        a.steps.append((n + 1, t, dur))
        t += dur
        n += 1
        if n % SAVE_INTERVAL == 0:
            c = round(rng.uniform(44.0, 58.0), 2)
            a.saves.append((n, t, c))
            t += c
    a.E = float(math.ceil(t + 4.0))


def build(seed: int) -> list[Att]:
    rng = random.Random(f"{seed}-timeline")
    n1 = [h for h in BASE16]
    n2 = sorted([h for h in n1 if h != FLAP] + [SPARE2])
    n3 = sorted([h for h in n2 if h != XID] + [SLOW])
    n4 = sorted([h for h in n3 if h != SLOW] + [SPARE3])
    n5 = sorted([h for h in n4 if h != PCIE] + [FLAP])

    def off(base: int) -> int:
        return base - base % SAVE_INTERVAL + rng.randint(30, 170)

    specs = [
        dict(
            k=1,
            job=52411,
            nodes=n1,
            kind="failure",
            mode="network",
            root=FLAP,
            gpu=FLAP_RAIL,
            run=off(2050),
            hang=44,
            phases=(112, 48, 36, 24),
            gap=2150 + rng.randint(-200, 200),
        ),
        dict(
            k=2,
            job=52436,
            nodes=n2,
            kind="failure",
            mode="gpu_hw_other",
            root=XID,
            gpu=XID_GPU,
            run=off(1500),
            hang=618,
            phases=(64, 47, 214, 25),
            gap=1710 + rng.randint(-150, 150),
        ),
        dict(
            k=3,
            job=52447,
            nodes=n3,
            kind="failure",
            mode="node_failure",
            root=BOOT,
            gpu=None,
            run=off(780),
            hang=336,
            phases=(71, 49, 207, 24),
            gap=3400 + rng.randint(-120, 120),
        ),
        dict(
            k=4,
            job=52470,
            nodes=n4,
            kind="failure",
            mode="pcie_error",
            root=PCIE,
            gpu=PCIE_GPU,
            run=off(1700),
            hang=617,
            phases=(66, 46, 221, 26),
            gap=2300 + rng.randint(-200, 200),
        ),
        dict(
            k=5,
            job=52489,
            nodes=n5,
            kind="complete",
            mode=None,
            root=None,
            gpu=None,
            run=None,
            hang=None,
            phases=(69, 48, 218, 25),
            gap=None,
        ),
    ]
    atts = [Att(**s) for s in specs]
    t, load = T0, 0
    for a in atts:
        a.phases = tuple(p + rng.randint(-4, 4) for p in a.phases)
        a.load = load
        a.S = float(t)
        a.F = a.S + sum(a.phases)
        if a.kind == "failure":
            a.fail_step = a.load + a.run + 1
            simulate(a, random.Random(f"{seed}-steps-{a.k}"), None)
            a.last_ckpt = a.saves[-1][0] if a.saves else a.load
            load = a.last_ckpt
            t = a.E + a.gap
        else:
            a.train_iters = (load + 1700) // SAVE_INTERVAL * SAVE_INTERVAL
            simulate(a, random.Random(f"{seed}-steps-{a.k}"), a.train_iters)
            a.last_ckpt = a.train_iters
    return atts


def ledger(atts: list[Att]):
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
        cats["startup"] += a.F - a.S
        keep = a.last_ckpt
        for n, _, d in a.steps:
            if n > keep:
                continue
            if SLOW in a.nodes:
                cats["productive"] += BASE_STEP
                cats["straggler"] += d - BASE_STEP
            else:
                cats["productive"] += d
        for _, _, c in a.saves:
            cats["checkpoint"] += c
        if a.kind == "complete":
            cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        base = a.saves[-1][1] + a.saves[-1][2] if a.saves else a.F
        nxt = atts[i + 1]
        d = dict(hang=a.E - a.R, recompute=a.R - base, restart=nxt.S - a.E, startup=nxt.F - nxt.S)
        for k in ("hang", "recompute", "restart"):
            cats[k] += d[k]
        per.append(d)
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return (
        {k: round(v * g, 4) for k, v in cats.items()},
        round(total * g, 4),
        [{k: round(v * g, 4) for k, v in d.items()} for d in per],
    )


# ----------------------------------------------------------------------------- fleet
class Fleet:
    def __init__(self, seed: int):
        r = random.Random(f"{seed}-fleet")
        self.skew = {h: round(r.uniform(-3.5, 3.5), 3) for h in HOSTS}
        self.boot = {h: T0 - r.randint(3 * 86400, 9 * 86400) for h in HOSTS}
        self.bootid = {h: f"{r.getrandbits(128):032x}" for h in HOSTS}
        self.uuid = {}
        self.serial = {}
        for h in HOSTS:
            for g in range(GPN):
                x = f"{r.getrandbits(128):032x}"
                self.uuid[h, g] = f"GPU-{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"
                self.serial[h, g] = f"1654923{r.randint(0, 999999):06d}"


class Pids:
    def __init__(self, seed: int, a: Att):
        r = random.Random(f"{seed}-pids-{a.k}")
        self.agent = {h: r.randint(200000, 3900000) for h in a.nodes}
        self.worker = {(h, d): self.agent[h] + 9 + d * 3 for h in a.nodes for d in range(GPN)}
        self.tid = {k: v + r.randint(700, 2400) for k, v in self.worker.items()}
        self.comm = {k: "0x%x" % (0x55D000000000 + r.getrandbits(32) * 16) for k in self.worker}
        self.commid = f"0x{r.getrandbits(64):016x}"


# ----------------------------------------------------------------------------- training log
def lr_at(n: int, iters: int) -> float:
    if n < 1000:
        return 3.0e-4 * n / 1000
    return 3.0e-5 + 0.5 * 2.7e-4 * (1 + math.cos(math.pi * min(1.0, (n - 1000) / max(1, iters - 1000))))


def loss_at(n: int, r: random.Random) -> float:
    return 1.92 + 8.6 * math.exp(-n / 260.0) + 0.55 * math.exp(-n / 4000.0) + r.gauss(0, 0.011)


WARN_CKPT = (
    "/usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:429: UserWarning: "
    "torch.utils.checkpoint: please pass in use_reentrant=True or use_reentrant=False explicitly. "
    "The default value of use_reentrant will be updated to be False in the future. To maintain "
    "current behavior, pass use_reentrant=True. It is recommended that you use use_reentrant=False. "
    "Refer to docs for more details on the differences between the two variants."
)
WARN_STORAGE = (
    "/usr/local/lib/python3.10/dist-packages/torch/_utils.py:831: UserWarning: TypedStorage is "
    "deprecated. It will be removed in the future and UntypedStorage will be the only storage class. "
    "This should only matter to you if you are using storages directly.  To access UntypedStorage "
    "directly, use tensor.untyped_storage() instead of tensor.storage()"
)

TORCHRUN_TB = [
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 33, in <module>',
    "    sys.exit(load_entry_point('torch==2.2.0a0+81ea7a4', 'console_scripts', 'torchrun')())",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/multiprocessing/errors/'
    '__init__.py", line 347, in wrapper',
    "    return f(*args, **kwargs)",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", line 816, in main',
    "    run(args)",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", line 807, in run',
    "    elastic_launch(",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 135, in __call__',
    "    return launch_agent(self._config, self._entrypoint, list(args))",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 268, in launch_agent',
    "    raise ChildFailedError(",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
]


def elastic(t: float, level: str, msg: str, mod: str = "multiprocessing.api") -> str:
    return f"[{py_log_ts(t)}] torch.distributed.elastic.{mod}: [{level}] {msg}"


def child_failed(t: float, host: str, fails: list[tuple[int, int, int, int, str]], root_i: int) -> list[str]:
    stamp = _dt(t)[0].strftime("%Y-%m-%d_%H:%M:%S")

    def ent(i, f):
        r, lr, ec, pid, tb = f
        return [
            f"[{i}]:",
            f"  time      : {stamp}",
            f"  host      : {host}",
            f"  rank      : {r} (local_rank: {lr})",
            f"  exitcode  : {ec} (pid: {pid})",
            "  error_file: <N/A>",
            f"  traceback : {tb}",
        ]

    out = TORCHRUN_TB + ["=" * 64, "pretrain_gpt.py FAILED", "-" * 64, "Failures:"]
    others = [f for i, f in enumerate(fails) if i != root_i]
    if not others:
        out.append("  <NO_OTHER_FAILURES>")
    for i, f in enumerate(others, 1):
        out += ent(i, f)
    return out + ["-" * 64, "Root Cause (first observed failure):"] + ent(0, fails[root_i]) + ["=" * 64]


def nccl_init(a: Att, pids: Pids, fleet: Fleet, r: random.Random) -> list[str]:
    """NCCL_DEBUG=INFO init lines of every rank, interleaved as they reach the shared stdout."""
    streams = []
    n = len(a.nodes)
    nets = " ".join(f"[{k}]{NIC_DEV[k]}:1/IB" for k in range(GPN))
    for i, h in enumerate(a.nodes):
        for d in range(GPN):
            rank = i * GPN + d
            w, tid = pids.worker[h, d], pids.tid[h, d]
            p0 = f"{h}:{w}:{w} [{d}] NCCL INFO "
            p = f"{h}:{w}:{tid} [{d}] NCCL INFO "
            prv, nxt = ((i - 1) % n) * GPN + d, ((i + 1) % n) * GPN + d
            s = [
                p0 + f"Bootstrap : Using bond0:{host_ip(h)}<0>",
                p0 + "NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared "
                "object file: No such file or directory",
                p0 + "NET/Plugin : No plugin found, using internal implementation",
                p0 + "cudaDriverVersion 12020",
            ]
            if rank == 0:
                s.append(f"NCCL version {NCCL_VERSION}")
            s += [
                p + f"NET/IB : Using {nets} [RO]; OOB bond0:{host_ip(h)}<0>",
                p + "Using network IB",
                p + f"comm {pids.comm[h, d]} rank {rank} nranks {GPUS} cudaDev {d} nvmlDev {d} busId {GPU_BUS[d]}000 "
                f"commId {pids.commid} - Init START",
                p + f"Setting affinity for GPU {d} to {'ffffffff,ffff0000,00000000' if d < 4 else '0000ffff,ffffffff'}",
                p + f"Trees [0] {rank + 1 if d < 7 else -1}/-1/-1->{rank}->{rank - 1 if d else -1} [1] "
                f"{rank + 1 if d < 7 else -1}/-1/-1->{rank}->{rank - 1 if d else prv}",
                p + "P2P Chunksize set to 131072",
                p + f"Channel {d:02d}/0 : {prv}[{d}] -> {rank}[{d}] [receive] via NET/IB/{d}/GDRDMA",
                p + f"Channel {d:02d}/0 : {rank}[{d}] -> {nxt}[{d}] [send] via NET/IB/{d}/GDRDMA",
                p + "Connected all rings",
                p + "Connected all trees",
                p + "threadThresholds 8/8/64 | 1024/8/64 | 512 | 512",
                p + "32 coll channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer",
                p + f"comm {pids.comm[h, d]} rank {rank} nranks {GPUS} cudaDev {d} busId {GPU_BUS[d]}000 commId "
                f"{pids.commid} - Init COMPLETE",
            ]
            streams.append(s)
    out, cur = [], [0] * len(streams)
    live = list(range(len(streams)))
    while live:
        j = r.choice(live)
        out.append(streams[j][cur[j]])
        cur[j] += 1
        if cur[j] >= len(streams[j]):
            live.remove(j)
    return out


def ib_warn(h: str, pids: Pids, d: int, peer: str, kind: str, port: int, first: bool) -> list[str]:
    w, pt = pids.worker[h, d], pids.tid[h, d] + 17
    op = 0 if kind == "Send" else 129
    lines = [
        f"{h}:{w}:{pt} [{d}] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer "
        f"{host_ip(peer)}<{port}> with error {12 if first else 5}, opcode {op}, len 0, vendor err "
        f"{129 if first else 249} ({kind})",
        f"{h}:{w}:{pt} [{d}] NCCL INFO transport/net.cc:1134 -> 6",
        f"{h}:{w}:{pt} [{d}] NCCL INFO proxy.cc:679 -> 6",
        f"{h}:{w}:{pt} [{d}] NCCL INFO proxy.cc:858 -> 6 [Proxy Thread]",
    ]
    return lines


def remote_error(rank: int, peer_line: str) -> list[str]:
    msg = (
        f"[Rank {rank}] NCCL watchdog thread terminated with exception: NCCL error: remote process exited or "
        f"there was a network error, NCCL version {NCCL_VERSION.split('+')[0]}"
    )
    return [
        f"[E ProcessGroupNCCL.cpp:916] {msg}",
        "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
        "Last error:",
        peer_line,
        "terminate called after throwing an instance of 'std::runtime_error'",
        f"  what():  {msg}",
        "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
        "Last error:",
        peer_line,
    ]


def watchdog(rank: int, seq: int, ran_ms: int, numel: int, full: bool) -> list[str]:
    wd = (
        f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, "
        f"NumelIn={numel}, NumelOut={numel}, Timeout(ms)={WATCHDOG_MS}) ran for {ran_ms} milliseconds "
        "before timing out."
    )
    out = [
        f"[E ProcessGroupNCCL.cpp:475] {wd}",
        "[E ProcessGroupNCCL.cpp:489] Some NCCL operations have failed or timed out. Due to the asynchronous "
        "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        "[E ProcessGroupNCCL.cpp:495] To avoid data inconsistency, we are taking the entire process down.",
    ]
    if full:
        out += [
            f"[E ProcessGroupNCCL.cpp:916] [Rank {rank}] NCCL watchdog thread terminated with exception: {wd}",
            "terminate called after throwing an instance of 'std::runtime_error'",
            f"  what():  [Rank {rank}] NCCL watchdog thread terminated with exception: {wd}",
        ]
    return out


def train_log(a: Att, atts: list[Att], fleet: Fleet, pids: Pids, seed: int, info: dict) -> tuple[bytes, int]:
    r = random.Random(f"{seed}-log-{a.k}")
    L = Sink()
    sk = fleet.skew
    h0, hl = a.nodes[0], a.nodes[-1]  # rank 0 prints setup, the last rank prints iterations
    iters = atts[-1].train_iters
    S, F = a.S, a.F
    p_cont, p_init, p_model, p_data = a.phases
    L.add(S, f"START TIME: {date_cmd(S + sk[h0])}")
    L.add(S + 0.5, "pyxis: importing docker image: nvcr.io#nvidia/pytorch:23.12-py3")
    L.add(S + p_cont - 2, "pyxis: imported docker image: nvcr.io#nvidia/pytorch:23.12-py3")
    t = S + p_cont
    for i, h in enumerate(a.nodes):
        tt = t + 0.3 + 0.04 * i
        wl = elastic(tt + sk[h], "WARNING", "", "run")
        L.many(
            tt,
            [
                wl.rstrip(),
                wl + "*" * 40,
                wl + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid "
                "your system being overloaded, please further tune the variable for optimal performance in "
                "your application as needed. ",
                wl + "*" * 40,
            ],
        )
    L.add(
        t + 6,
        f"using world size: {GPUS}, data-parallel size: {DP}, context-parallel size: 1 tensor-model-parallel "
        f"size: {TP}, pipeline-model-parallel size: {PP} ",
    )
    L.many(
        t + 6.1,
        ["------------------------ arguments ------------------------"]
        + [
            f"  {k} {'.' * (44 - len(k))} {v}"
            for k, v in [
                ("bf16", "True"),
                ("clip_grad", "1.0"),
                ("global_batch_size", GBS),
                ("hidden_size", 8192),
                ("load", CKPT),
                ("log_interval", LOG_INTERVAL),
                ("micro_batch_size", 1),
                ("num_layers", 80),
                ("num_attention_heads", 64),
                ("num_query_groups", 8),
                ("pipeline_model_parallel_size", PP),
                ("save", CKPT),
                ("save_interval", SAVE_INTERVAL),
                ("seq_length", SEQ),
                ("tensor_model_parallel_size", TP),
                ("train_iters", iters),
                ("use_distributed_optimizer", True),
                ("world_size", GPUS),
            ]
        ]
        + ["-------------------- end of arguments ---------------------", "> initializing torch distributed ..."],
    )
    for ln in nccl_init(a, pids, fleet, r):
        L.add(t + 12 + r.uniform(0, 20), ln)
    t_init = S + p_cont + p_init
    L.add(t_init - 1, f"> initialized tensor model parallel with size {TP}")
    L.add(t_init - 1, f"> initialized pipeline model parallel with size {PP}")
    L.add(t_init, f"[after megatron is initialized] datetime: {meg_ts(t_init + sk[h0])} ")
    L.add(t_init + 1, "building GPT model ...")
    L.add(t_init + 3, " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 2210455552")
    t_model = t_init + p_model
    if a.load == 0:
        L.many(
            t_init + 15,
            [
                f"WARNING: could not find the metadata file {CKPT}/latest_checkpointed_iteration.txt ",
                "    will not load any checkpoints and will start from random",
            ],
        )
    else:
        L.add(t_init + 20, f" loading checkpoint from {CKPT} at iteration {a.load}")
        L.add(t_model - 4, f"  successfully loaded checkpoint from {CKPT} at iteration {a.load}")
    L.add(
        t_model,
        f"[after model, optimizer, and learning rate scheduler are built] datetime: {meg_ts(t_model + sk[h0])} ",
    )
    L.add(
        t_model + 2,
        b"> WARNING: skipping document 31337 in /data/imbue-mix/shard_0412_text_document: "
        b"invalid byte sequence '\xc3\x28\xa0\xa1'",
    )
    t_data = t_model + p_data
    L.add(t_data, f"[after dataloaders are built] datetime: {meg_ts(t_data + sk[h0])} ")
    L.many(t_data + 0.1, ["done with setup ...", "training ..."])
    L.add(F, f"[before the start of training step] datetime: {meg_ts(F + sk[h0])} ")
    for j in range(0, GPUS, 23):
        L.many(F + 2 + 0.01 * j, [WARN_CKPT, "  warnings.warn("])
    L.many(F + 3, [WARN_STORAGE, "  return self.fget.__get__(instance, owner)()"])
    lr = random.Random(f"{seed}-loss-{a.k}")
    for j, (n, ts, dur) in enumerate(a.steps):
        if n % LOG_INTERVAL:
            continue
        win = [d for _, _, d in a.steps[max(0, j - LOG_INTERVAL + 1) : j + 1]]
        avg = sum(win) / len(win)
        end = ts + dur
        gn = 0.18 + 2.4 * math.exp(-n / 500.0) + abs(lr.gauss(0, 0.02))
        L.add(
            end,
            f" [{meg_ts(end + sk[hl])}] iteration {n:8d}/{iters:8d} | consumed samples: {n * GBS:12d} | "
            f"elapsed time per iteration (ms): {avg * 1000:.1f} | learning rate: {lr_at(n, iters):.6E} | "
            f"global batch size: {GBS:5d} | lm loss: {loss_at(n, lr):.6E} | loss scale: 1.0 | "
            f"grad norm: {gn:.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |",
        )
    for n, ts, c in a.saves:
        L.add(ts + 0.01, f"saving checkpoint at iteration {n:7d} to {CKPT}")
        L.add(ts + c - 0.02, f"  successfully saved checkpoint at iteration {n:7d} to {CKPT}")
        L.many(
            ts + c - 0.01,
            [
                "(min, max) time across ranks (ms):",
                f"    save-checkpoint ................................: ({c * 1000 - r.uniform(4, 30):.2f}, "
                f"{c * 1000:.2f})",
            ],
        )
    for _n, ts, _ in a.steps[:: max(1, len(a.steps) // 5)]:
        L.add(ts + 0.2, "")
    cut = 0
    if a.kind == "complete":
        L.add(a.E - 3.5, f"[after training is done] datetime: {meg_ts(a.E - 3.5 + sk[h0])} ")
    elif a.mode == "network":
        end_network(a, L, pids, fleet, r, info)
    elif a.mode in ("gpu_hw_other", "pcie_error"):
        end_watchdog(a, L, pids, fleet, r, info)
    elif a.mode == "node_failure":
        end_node_failure(a, L, pids, fleet, r, info)
    if a.k == 2:  # harmless NCCL WARN on GIDW
        d = 5
        t_g = a.F + 0.37 * (a.R - a.F)
        L.add(
            t_g,
            f"{GIDW}:{pids.worker[GIDW, d]}:{pids.tid[GIDW, d] + 17} [{d}] transport/net_ib.cc:93 NCCL WARN "
            f"NET/IB : {NIC_DEV[d]}:1 Got async event : GID table change",
        )
        info["gidw_ts"] = t_g
    if a.k == 1:  # the first, harmless flap of FLAP's port
        d = FLAP_RAIL
        pre = f"{FLAP}:{pids.worker[FLAP, d]}:{pids.tid[FLAP, d] + 21} [{d}] transport/net_ib.cc:93 NCCL WARN NET/IB : "
        L.add(info["flap1"] + 0.2, pre + f"{NIC_DEV[d]}:1 Got async event : port error")
        L.add(info["flap1"] + 2.3, pre + f"{NIC_DEV[d]}:1 Got async event : port active")
    if a.k == 4:
        cut = 19
    return L.render(cut), cut


def end_network(a, L, pids, fleet, r, info):
    R, E, d = a.R, a.E, a.gpu
    i = a.nodes.index(FLAP)
    prv, nxt = a.nodes[i - 1], a.nodes[(i + 1) % len(a.nodes)]
    info["symptoms"] = [prv, nxt]
    pre = f"{FLAP}:{pids.worker[FLAP, d]}:{pids.tid[FLAP, d] + 21} [{d}] transport/net_ib.cc:93 NCCL WARN NET/IB : "
    L.add(R + 0.3, pre + f"{NIC_DEV[d]}:1 Got async event : port error")
    order = [(prv, FLAP, "Send", R + 30.8), (nxt, FLAP, "Recv", R + 31.1), (FLAP, nxt, "Send", R + 31.6)]
    info["first_symptom"] = R + 30.8
    for h, peer, kind, tt in order:
        port = r.randint(40000, 60999)
        warn = ib_warn(h, pids, d, peer, kind, port, True)
        L.many(tt, warn)
        rank = a.nodes.index(h) * GPN + d
        L.many(tt + 0.4, remote_error(rank, warn[0].split("NCCL WARN ")[1]))
    tf = R + 34.0
    for j, (h, _, _, _) in enumerate(order):
        ii = a.nodes.index(h)
        fails = [
            (
                ii * GPN + dd,
                dd,
                -6 if dd == d else -15,
                pids.worker[h, dd],
                f"Signal {6 if dd == d else 15} ({'SIGABRT' if dd == d else 'SIGTERM'}) received by PID "
                f"{pids.worker[h, dd]}",
            )
            for dd in range(GPN)
        ]
        t1 = tf + 0.3 * j
        for dd in range(GPN):
            if dd != d:
                L.add(
                    t1 - 0.2,
                    elastic(
                        t1 - 0.2 + fleet.skew[h],
                        "WARNING",
                        f"Sending process {pids.worker[h, dd]} closing signal SIGTERM",
                    ),
                )
        L.add(
            t1,
            elastic(
                t1 + fleet.skew[h],
                "ERROR",
                f"failed (exitcode: -6) local_rank: {d} (pid: {pids.worker[h, d]}) of binary: /usr/bin/python",
            ),
        )
        L.many(t1 + 0.01, child_failed(t1, h, fails, d))
        L.add(R + 36.5 + 0.01 * j, f"srun: error: {h}: task {ii}: Exited with exit code 1")
    L.add(R + 36.8, f"srun: launch/slurm: _step_signal: Terminating StepId={a.job}.0")
    for ii, h in enumerate(a.nodes):
        if h in (FLAP, prv, nxt):
            continue
        tt = R + 37.0 + 0.02 * ii
        L.add(
            tt,
            elastic(
                tt + fleet.skew[h], "WARNING", "Received 15 death signal, shutting down workers", "agent.server.api"
            ),
        )
        L.add(E - 1.5 + 0.01 * ii, f"srun: error: {h}: task {ii}: Terminated")
    L.add(E - 1.0, f"srun: Force Terminated StepId={a.job}.0")


def end_watchdog(a, L, pids, fleet, r, info):
    R, E, d = a.R, a.E, a.gpu
    bad = a.root
    seq = 41000 + r.randint(0, 9000)
    numel = r.choice([262144000, 33554432, 4096])
    first = None
    for i, h in enumerate(a.nodes):
        for dd in range(GPN):
            if h == bad and dd == d:
                continue
            rank = i * GPN + dd
            ran = WATCHDOG_MS + r.randint(40, 1900)
            tt = R - 0.4 + ran / 1000.0
            first = tt if first is None else min(first, tt)
            L.many(tt, watchdog(rank, seq, ran, numel, full=(rank % 37 == 3)))
    info["first_symptom"] = first
    tf = R + 603.5
    for i, h in enumerate(a.nodes):
        t1 = tf + 0.11 * i
        sk = fleet.skew[h]
        fails = [
            (i * GPN + dd, dd, -6, pids.worker[h, dd], f"Signal 6 (SIGABRT) received by PID {pids.worker[h, dd]}")
            for dd in range(GPN)
            if not (h == bad and dd == d)
        ]
        if h == bad:
            for dd in range(GPN):
                if dd != d:
                    L.add(
                        t1 - 1.0,
                        elastic(
                            t1 - 1.0 + sk, "WARNING", f"Sending process {pids.worker[h, dd]} closing signal SIGTERM"
                        ),
                    )
            L.add(
                t1 + 30.0,
                elastic(
                    t1 + 30.0 + sk,
                    "WARNING",
                    f"Unable to shutdown process {pids.worker[h, d]} via "
                    "Signals.SIGTERM, forcefully exiting via Signals.SIGKILL",
                ),
            )
            t1 += 30.2
            fails.insert(
                d, (i * GPN + d, d, -9, pids.worker[h, d], f"Signal 9 (SIGKILL) received by PID {pids.worker[h, d]}")
            )
        root = 0 if h != bad or d != 0 else 1
        lr, pid = fails[root][1], fails[root][3]
        L.add(
            t1,
            elastic(
                t1 + sk, "ERROR", f"failed (exitcode: -6) local_rank: {lr} (pid: {pid}) of binary: /usr/bin/python"
            ),
        )
        L.many(t1 + 0.01, child_failed(t1, h, fails, root))
        L.add(t1 + 1.2, f"srun: error: {h}: task {i}: Exited with exit code 1")
    L.add(E - 1.0, f"srun: launch/slurm: _step_signal: Terminating StepId={a.job}.0")


def end_node_failure(a, L, pids, fleet, r, info):
    R, E = a.R, a.E
    i = a.nodes.index(BOOT)
    prv, nxt = a.nodes[i - 1], a.nodes[(i + 1) % len(a.nodes)]
    info["symptoms"] = [prv, nxt]
    info["first_symptom"] = R + 30.6
    for j, (h, kind) in enumerate([(prv, "Send"), (nxt, "Recv")]):
        for d in range(GPN):
            tt = R + 30.6 + 0.35 * j + 0.03 * d
            warn = ib_warn(h, pids, d, BOOT, kind, r.randint(40000, 60999), True)
            L.many(tt, warn)
            L.many(tt + 0.3, remote_error(a.nodes.index(h) * GPN + d, warn[0].split("NCCL WARN ")[1]))
    for j, h in enumerate([prv, nxt]):
        ii = a.nodes.index(h)
        t1 = R + 33.9 + 0.4 * j
        fails = [
            (ii * GPN + dd, dd, -6, pids.worker[h, dd], f"Signal 6 (SIGABRT) received by PID {pids.worker[h, dd]}")
            for dd in range(GPN)
        ]
        L.add(
            t1,
            elastic(
                t1 + fleet.skew[h],
                "ERROR",
                f"failed (exitcode: -6) local_rank: 0 (pid: {pids.worker[h, 0]}) of binary: /usr/bin/python",
            ),
        )
        L.many(t1 + 0.01, child_failed(t1, h, fails, 0))
        L.add(R + 35.4 + 0.01 * j, f"srun: error: {h}: task {ii}: Exited with exit code 1")
    L.add(R + 35.6, f"srun: launch/slurm: _step_signal: Terminating StepId={a.job}.0")
    for ii, h in enumerate(a.nodes):
        if h in (BOOT, prv, nxt):
            continue
        tt = R + 35.9 + 0.02 * ii
        L.add(
            tt,
            elastic(
                tt + fleet.skew[h], "WARNING", "Received 15 death signal, shutting down workers", "agent.server.api"
            ),
        )
        for d in range(GPN):
            L.add(
                tt + 0.001,
                elastic(
                    tt + 0.001 + fleet.skew[h], "WARNING", f"Sending process {pids.worker[h, d]} closing signal SIGTERM"
                ),
            )
        L.add(R + 38.0 + 0.01 * ii, f"srun: error: {h}: task {ii}: Terminated")
    L.add(
        E - 3.0,
        f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(E - 3.0)} DUE TO NODE "
        "FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
    )
    L.add(E - 2.9, f"srun: error: Node failure on {BOOT}")
    L.add(E - 2.0, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")


# ----------------------------------------------------------------------------- per-rank steps (attempt 3)
def steps_files(a: Att, fleet: Fleet, seed: int) -> dict[str, bytes]:
    out = {}
    lr = random.Random(f"{seed}-jsonl-loss")
    losses = {n: round(loss_at(n, lr), 4) for n, _, _ in a.steps}
    tok = TOKENS_PER_STEP // GPUS
    for i, h in enumerate(a.nodes):
        rng = random.Random(f"{seed}-jsonl-{h}")
        lines = []
        for n, ts, dur in a.steps:
            for d in range(GPN):
                rank = i * GPN + d
                slow = h == SLOW and d == SLOW_GPU
                comp = BASE_COMPUTE * (SLOW_FACTOR if slow else 1.0) * (1 + rng.uniform(-0.004, 0.004))
                data = BASE_DATA * (1 + rng.uniform(-0.1, 0.1))
                comm = dur - comp - data
                tse = ts + dur + fleet.skew[h] + 0.002 * d
                lines.append(
                    f'{{"ts":{tse:.3f},"rank":{rank},"host":"{h}","step":{n},"step_s":{dur:.4f},'
                    f'"compute_s":{comp:.4f},"comm_s":{comm:.4f},"data_s":{data:.4f},"tokens":{tok},'
                    f'"loss":{losses[n]:.4f}}}'
                )
        body = "\n".join(lines) + "\n"
        if h == BOOT:  # power lost while a record was being written
            body += lines[-3][:61]
        out[h] = body.encode()
    return out


# ----------------------------------------------------------------------------- kernel logs
NOISE = [
    "perf: interrupt took too long ({a} > {b}), lowering kernel.perf_event_max_sample_rate to {c}",
    "hrtimer: interrupt took {n} ns",
    "workqueue: drm_fb_helper_damage_work hogged CPU for >10000us 8 times, consider switching to WQ_UNBOUND",
    "INFO: NMI handler (perf_event_nmi_handler) took too long to run: 1.{m} msecs",
    "kauditd_printk_skb: {k} callbacks suppressed",
    "docker0: port 1(veth{v}) entered blocking state",
    "docker0: port 1(veth{v}) entered disabled state",
    "veth{v}: entered promiscuous mode",
]


def boot_lines(h: str) -> list[tuple[float, str]]:
    out = [
        (
            0.0,
            f"Linux version {KERNEL} (buildd@lcy02-amd64-008) (x86_64-linux-gnu-gcc-11 (Ubuntu 11.4.0-1ubuntu1~22.04) "
            f"11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #7-Ubuntu SMP PREEMPT_DYNAMIC Wed Dec  6 "
            f"15:38:57 UTC 2023 (Ubuntu 6.5.0-1007.7-nvidia 6.5.3)",
        ),
        (0.0, f"Command line: BOOT_IMAGE=/boot/vmlinuz-{KERNEL} root=UUID=5f0c2a7e-1b9d-4c55-9e3a-7d21c8b0e4f6 ro"),
        (0.0, "DMI: Dell Inc. PowerEdge XE9680/0VYT5W, BIOS 1.7.6 01/11/2024"),
    ]
    for k in range(GPN):
        out.append((9.8 + 0.01 * k, f"mlx5_core {NIC_PCI[k]}: firmware version: 28.39.1002"))
        out.append(
            (9.9 + 0.01 * k, f"mlx5_core {NIC_PCI[k]}: 252.048 Gb/s available PCIe bandwidth (16.0 GT/s PCIe x16 link)")
        )
        out.append((11.4 + 0.01 * k, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: renamed from ib{k}"))
    out.append((19.2, f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {DRIVER}  Thu Oct 19 03:12:35 UTC 2023"))
    out.append(
        (
            19.7,
            f"nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  {DRIVER}  "
            "Thu Oct 19 02:56:26 UTC 2023",
        )
    )
    for k in range(GPN):
        out.append((31.0 + 0.02 * k, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link up"))
    return out


def noise(t0: float, t1: float, r: random.Random) -> list[tuple[float, str]]:
    out, t = [], t0 + r.uniform(300, 5000)
    while t < t1:
        a = r.randint(2501, 6000)
        out.append(
            (
                t,
                r.choice(NOISE).format(
                    a=a,
                    b=a - 9,
                    c=r.choice([79750, 63750, 50750]),
                    n=r.randint(9000, 50000),
                    m=r.randint(100, 999),
                    k=r.randint(4, 60),
                    v=f"{r.getrandbits(28):07x}",
                ),
            )
        )
        t += r.uniform(2400, 12000)
    return out


def aer_block(rp: str, dev: str, drv: str, vid: str, sev: str, typ: str, who: str, status: str, bit: str) -> list[str]:
    return [
        f"pcieport {rp}: AER: {sev} error received: {dev}",
        f"{drv} {dev}: AER: PCIe Bus Error: severity={sev}, type={typ}, ({who})",
        f"{drv} {dev}: AER:   device [{vid}] error status/mask={status}",
        f"{drv} {dev}: AER:    {bit}",
    ]


def render_kernel(style: str, h: str, ev: list[tuple[float, str | bytes]], fleet: Fleet, boots: list[float]) -> bytes:
    fr = random.Random(f"frac-{h}-{style}")
    sk = fleet.skew[h]
    out: list[bytes] = []
    ev = sorted(ev, key=lambda e: e[0])
    bi = 0
    if style == "short-iso":
        d0, d1 = _dt(boots[0] + sk)[0], _dt(ev[-1][0] + sk)[0]
        out.append(
            f"-- Journal begins at {d0:%a %Y-%m-%d %H:%M:%S} UTC, ends at {d1:%a %Y-%m-%d %H:%M:%S} UTC. --".encode()
        )
    for _j, (t, m) in enumerate(ev):
        while bi + 1 < len(boots) and t >= boots[bi + 1]:
            bi += 1
            if style == "short-iso":
                out.append(f"-- Boot {fleet.bootid[h][::-1] if bi else fleet.bootid[h]} --".encode())
        tt = t + sk + fr.uniform(0, 0.0009)
        d, f = _dt(tt)
        up = tt - sk - boots[bi]
        mb = m if isinstance(m, bytes) else m.encode()
        if style == "short-iso":
            pre = f"{d:%Y-%m-%dT%H:%M:%S}+0000 {h} kernel: "
        elif style == "dmesg-T":
            pre = f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}] "
        elif style == "dmesg-iso":
            pre = f"{d:%Y-%m-%dT%H:%M:%S},{f:06d}+00:00 "
        else:
            pre = f"{d:%b} {d.day:2d} {d:%H:%M:%S} {h} kernel: [{up:12.6f}] "
        out.append(pre.encode() + mb)
    return b"\n".join(out) + b"\n"


def kernel_logs(atts: list[Att], fleet: Fleet, pids_by: dict, seed: int, bundle: Path, info: dict) -> None:
    a1, a2, a3, a4, a5 = atts
    t_end = a5.E + 1800
    for idx, h in enumerate(HOSTS):
        hr = random.Random(f"{seed}-kern-{h}")
        boot = fleet.boot[h]
        boots = [boot]
        ev: list[tuple[float, str | bytes]] = [(boot + dt, m) for dt, m in boot_lines(h)]
        ev += noise(boot, t_end, hr)
        style = ["short-iso", "dmesg-T", "dmesg-iso"][idx % 3]
        if h == FLAP:
            k = FLAP_RAIL
            ev += [
                (info["flap1"], f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link down"),
                (info["flap1"] + 2.1, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link up"),
                (a1.R, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link down"),
                (a1.R + 49.2, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link up"),
                (a1.R + 61.7, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link down"),
                (a1.R + 63.0, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link up"),
            ]
            # cable replaced during the outage window before attempt 5 (reboot for the swap)
            nb = a4.E + 900
            boots.append(nb)
            ev = [e for e in ev if e[0] < nb - 60 or e[0] >= nb + 40]
            ev += [(nb + dt, m) for dt, m in boot_lines(h)]
            style = "dmesg-T-all"
        if h == XID:
            g = XID_GPU
            pci = f"0000:{GPU_BUS[g]}:00"
            pid = pids_by[2].worker[h, g]
            R = a2.R
            ev += [
                (R - 0.2, f"NVRM: GPU at PCI:{pci}: {fleet.uuid[h, g]}"),
                (R - 0.2, f"NVRM: GPU Board Serial Number: {fleet.serial[h, g]}"),
            ]
            fn = [
                ("76 (GSP_RM_CONTROL)", "0x2080014b 0x5"),
                ("76 (GSP_RM_CONTROL)", "0x20801348 0x204"),
                ("10 (FREE)", "0xc1d00046 0x0"),
            ]
            for j in range(5):
                name, p = ("pt_main_thread", pid) if j < 3 else ("nv-hostengine", 4187)
                f, arg = fn[min(j, 2)]
                ev.append(
                    (
                        R + 6.0 * j,
                        f"NVRM: Xid (PCI:{pci}): 119, pid={p}, name={name}, Timeout after 6s of waiting "
                        f"for RPC response from GPU{g} GSP! Expected function {f} ({arg}).",
                    )
                )
            ev.append(
                (
                    R + 30.0,
                    f"NVRM: Rate limiting GSP RPC error prints for GPU at PCI:{pci} (printing 1 of every 30).  "
                    "The GPU likely needs to be reset.",
                )
            )
            for j in range(3):
                tt = R + 242 + 121 * j
                ev += [
                    (tt, f"INFO: task pt_main_thread:{pid} blocked for more than {120 * (j + 1)} seconds."),
                    (tt, f"      Tainted: P           OE      {KERNEL} #7-Ubuntu"),
                    (tt, '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.'),
                ]
            style = "short-iso"
        if h == BOOT:
            X = a3.R
            nb = X + 291.0
            info["boot_reboot"] = nb
            boots.append(nb)
            ev = [e for e in ev if e[0] < X - 1 or e[0] >= nb]
            last_before = max(e[0] for e in ev if e[0] < X)
            info["boot_last_line"] = last_before
            ev += [(nb + dt, m) for dt, m in boot_lines(h)]
            style = "short-iso"
        if h == PCIE:
            g = PCIE_GPU
            bus = int(GPU_BUS[g], 16)
            rp, dsp, gpu = f"0000:{bus - 2:02x}:01.0", f"0000:{bus - 1:02x}:00.0", f"0000:{GPU_BUS[g]}:00.0"
            t = a1.S + hr.uniform(3000, 9000)
            while t < a4.R - 60:
                dense = t > a4.F
                kind = hr.random()
                bit = (
                    "[ 0] RxErr                  (First)"
                    if kind < 0.7
                    else (
                        "[ 6] BadTLP                 (First)" if kind < 0.9 else "[ 7] BadDLLP                (First)"
                    )
                )
                typ = "Physical Layer" if kind < 0.7 else "Data Link Layer"
                st = "00000001/00002000" if kind < 0.7 else ("00000040/00002000" if kind < 0.9 else "00000080/00002000")
                ev += [
                    (t + 1e-4 * j, m)
                    for j, m in enumerate(
                        aer_block(rp, dsp, "pcieport", "1000:c030", "Corrected", typ, "Receiver ID", st, bit)
                    )
                ]
                t += hr.uniform(500, 1500) if dense else hr.uniform(2400, 7200)
            R = a4.R
            pid = pids_by[4].worker[h, g]
            fatal = aer_block(
                rp,
                dsp,
                "pcieport",
                "1000:c030",
                "Uncorrected (Fatal)",
                "Transaction Layer",
                "Receiver ID",
                "00000020/00100000",
                "[ 5] SDES                   (First)",
            )
            ev += [(R + 1e-4 * j, m) for j, m in enumerate(fatal)]
            ev += [
                (R + 0.05, f"nvidia {gpu}: AER: can't recover (no error_detected callback)"),
                (R + 0.06, f"pcieport {dsp}: AER: device recovery failed"),
                (R + 0.61, f"NVRM: GPU at PCI:0000:{GPU_BUS[g]}:00: {fleet.uuid[h, g]}"),
                (R + 0.61, f"NVRM: GPU Board Serial Number: {fleet.serial[h, g]}"),
                (
                    R + 0.61,
                    f"NVRM: Xid (PCI:0000:{GPU_BUS[g]}:00): 79, pid={pid}, name=pt_main_thread, GPU has "
                    "fallen off the bus.",
                ),
                (R + 0.62, f"NVRM: GPU {gpu}: GPU has fallen off the bus."),
                (R + 0.62, "NVRM: A GPU crash dump has been created. If possible, please run"),
                (R + 0.62, "NVRM: nvidia-bug-report.sh as root to collect this data before"),
                (R + 0.62, "NVRM: the NVIDIA kernel module is unloaded."),
            ]
            ev.append((boot + 40.2, b"usb 1-14: Manufacturer: Avocent\xae Virtual Media"))
            rot = a2.S - a2.S % 86400 + 6 * 3600 + 25 * 60  # cron.daily logrotate at 06:25
            rot += 86400 if rot < a2.S else 0
            old = [e for e in ev if e[0] < rot]
            new = [e for e in ev if e[0] >= rot]
            write(bundle / "nodes" / h / "kern.log.1.gz", render_kernel("syslog", h, old, fleet, boots), gz=True)
            write(bundle / "nodes" / h / "kern.log", render_kernel("syslog", h, new, fleet, boots))
            continue
        if h == CAER:
            rp, dev = "0000:bb:01.0", NIC_PCI[5]
            t = a1.S + hr.uniform(1000, 5000)
            while t < a5.E:
                ev += [
                    (t + 1e-4 * j, m)
                    for j, m in enumerate(
                        aer_block(
                            rp,
                            dev,
                            "mlx5_core",
                            "15b3:1021",
                            "Corrected",
                            "Data Link Layer",
                            "Transmitter ID",
                            "00001000/00000000",
                            "[12] Timeout               ",
                        )
                    )
                ]
                t += hr.uniform(7000, 16000)
        if h == IDLE:
            ts = info["sweep_start"] + 318
            ev.append((ts, "NVRM: Xid (PCI:0000:9a:00): 43, pid=1873302, name=python, Ch 00000008"))
            ev.append((ts + 0.01, "NVRM: Xid (PCI:0000:9a:00): 43, pid=1873302, name=python, Ch 00000009"))
        if style == "dmesg-T-all":
            name, style = "dmesg.log", "dmesg-T"
        else:
            name = {"short-iso": "journal-kernel.log", "dmesg-T": "dmesg.log", "dmesg-iso": "dmesg-iso.log"}[style]
        write(bundle / "nodes" / h / name, render_kernel(style, h, ev, fleet, boots))


# ----------------------------------------------------------------------------- scheduler
def scheduler(atts: list[Att], fleet: Fleet, seed: int, bundle: Path, info: dict) -> None:
    r = random.Random(f"{seed}-sched")
    L = Sink()

    def add(t: float, msg: str) -> None:
        L.add(t, f"{ctld_ts(t)} {msg}")

    rows = []
    hdr = "JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"
    for a in atts:
        sub = a.S - r.randint(3, 50)
        hl = hostlist(a.nodes)
        cpus = 192 * len(a.nodes)
        add(
            sub + 0.3,
            f"_slurm_rpc_submit_batch_job: JobId={a.job} InitPrio=4294901{r.randint(100, 999)} "
            f"usec={r.randint(300, 900)}",
        )
        add(a.S + 0.02, f"sched: Allocate JobId={a.job} NodeList={hl} #CPUs={cpus} Partition=train")
        if a.kind == "complete":
            add(a.E + 0.1, f"_job_complete: JobId={a.job} WEXITSTATUS 0")
            add(a.E + 0.11, f"_job_complete: JobId={a.job} done")
            st, ec = "COMPLETED", "0:0"
        elif a.mode == "node_failure":
            X = a.R
            last_resp = X - r.randint(25, 95)
            add(X + 201.4, f"error: Nodes {BOOT} not responding")
            add(a.E - 3.6, f"error: Nodes {BOOT} not responding, setting DOWN")
            add(a.E - 3.5, f"Killing JobId={a.job} on failed node {BOOT}")
            add(a.E + 0.2, f"_job_complete: JobId={a.job} WTERMSIG 9")
            add(a.E + 0.21, f"_job_complete: JobId={a.job} done")
            reg = info["boot_reboot"] + 76.3
            add(reg, f"Node {BOOT} now responding")
            add(
                reg + 0.01,
                f"validate_node_specs: Node {BOOT} unexpectedly rebooted boot_time="
                f"{int(info['boot_reboot'] + fleet.skew[BOOT])} last response={int(last_resp)}",
            )
            st, ec = "NODE_FAIL", "0:0"
        else:
            add(a.E + 0.1, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
            add(a.E + 0.11, f"_job_complete: JobId={a.job} done")
            st, ec = "FAILED", "1:0"
        rows.append(
            (
                a.S,
                f"{a.job}|{RUN}|train|pretrain|{cpus}|{st}|{ec}|{slurm_ts(sub)}|{slurm_ts(a.S)}|"
                f"{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|{len(a.nodes)}|{hl}",
            )
        )
        for sname, sst, sec, nn in (
            (
                "batch",
                "FAILED" if st == "FAILED" else ("CANCELLED" if st == "NODE_FAIL" else "COMPLETED"),
                ec if st != "NODE_FAIL" else "0:15",
                1,
            ),
            (
                "0",
                "FAILED" if st == "FAILED" else ("CANCELLED" if st == "NODE_FAIL" else "COMPLETED"),
                ec if st != "NODE_FAIL" else "0:9",
                len(a.nodes),
            ),
        ):
            nl = a.nodes[0] if nn == 1 else hl
            rows.append(
                (
                    a.S + 0.1,
                    f"{a.job}.{sname}|{'batch' if sname == 'batch' else 'bash'}||pretrain|"
                    f"{192 * nn}|{sst}|{sec}|{slurm_ts(a.S)}|{slurm_ts(a.S)}|{slurm_ts(a.E)}|"
                    f"{elapsed(a.E - a.S)}|{nn}|{nl}",
                )
            )
    a1, a2, a3, a4, a5 = atts
    drains = [
        (a1.E + 1300, FLAP, "ibp94s0 flapping (link_downed 14, UFM port events); cable ticket"),
        (a2.E + 950, XID, "xid119 GSP timeout GPU2 (0000:3a:00), needs reset/RMA"),
        (a4.E + 1100, PCIE, "AER fatal SDES below 0000:28:01.0, xid79 GPU1; riser/retimer ticket"),
    ]
    for t, h, why in drains:
        add(t, f"update_node: node {h} reason set to: {why}")
        add(
            t + 0.001,
            f"update_node: node {h} state set to DRAINING"
            if h == XID
            else f"update_node: node {h} state set to DRAINED",
        )
        if h == XID:
            add(t + 2.7, f"update_node: node {h} state set to DRAINED")
    # health-check sweep between attempts 3 and 4
    sw, swj, swn = info["sweep_start"], 52459, [h for h in HOSTS if h not in (XID, FLAP)]
    add(sw - 4.2, f"_slurm_rpc_submit_batch_job: JobId={swj} InitPrio=4294901{r.randint(100, 999)} usec=402")
    add(sw + 0.03, f"sched: Allocate JobId={swj} NodeList={hostlist(swn)} #CPUs={192 * len(swn)} Partition=maint")
    add(info["sweep_end"] + 0.2, f"_job_complete: JobId={swj} WEXITSTATUS 0")
    add(info["sweep_end"] + 0.21, f"_job_complete: JobId={swj} done")
    rows.append(
        (
            sw,
            f"{swj}|hc-sweep|maint|infra|{192 * len(swn)}|COMPLETED|0:0|{slurm_ts(sw - 4)}|{slurm_ts(sw)}|"
            f"{slurm_ts(info['sweep_end'])}|{elapsed(info['sweep_end'] - sw)}|{len(swn)}|{hostlist(swn)}",
        )
    )
    add(
        info["sweep_end"] + 240,
        f"update_node: node {SLOW} reason set to: gpu_stress_test 7% fewer loops than fleet, GPU6 slow",
    )
    add(info["sweep_end"] + 240.001, f"update_node: node {SLOW} state set to DRAINED")
    add(info["sweep_end"] + 262, f"update_node: node {BOOT} state set to IDLE")
    add(a4.E + 600 + 900 + 310, f"update_node: node {FLAP} state set to IDLE")
    # other users' short jobs (noise)
    for st, jid, name, nodes, dur in [
        (a2.F + 3600, 52440, "nccl-allreduce", [SPARE3, IDLE], 900),
        (a4.F + 7200, 52478, "dcgmi-diag-r3", [SLOW], 1500),
        (a5.F + 5400, 52493, "eval-harness", [IDLE], 2400),
    ]:
        add(st - 2.5, f"_slurm_rpc_submit_batch_job: JobId={jid} InitPrio=4294901{r.randint(100, 999)} usec=377")
        add(
            st + 0.02,
            f"sched: Allocate JobId={jid} NodeList={hostlist(nodes)} #CPUs={192 * len(nodes)} Partition=maint",
        )
        add(st + dur + 0.2, f"_job_complete: JobId={jid} WEXITSTATUS 0")
        add(st + dur + 0.21, f"_job_complete: JobId={jid} done")
        rows.append(
            (
                st,
                f"{jid}|{name}|maint|infra|{192 * len(nodes)}|COMPLETED|0:0|{slurm_ts(st - 2)}|{slurm_ts(st)}|"
                f"{slurm_ts(st + dur)}|{elapsed(dur)}|{len(nodes)}|{hostlist(nodes)}",
            )
        )
    rows.sort(key=lambda x: x[0])
    write(bundle / "scheduler" / "slurmctld.log", L.render())
    write(bundle / "scheduler" / "sacct.txt", ("\n".join([hdr] + [x for _, x in rows]) + "\n").encode())
    # the sweep's output file
    out = [
        f"START TIME: {date_cmd(sw)}",
        f"Running health checks on nodes:  {swn}",
        "No health checks provided, running all health checks",
        "Health ComputeHostHealth.OK",
        "",
        "",
        "----------------------------SUMMARY:----------------------------",
        "",
        f"Nodes with ComputeHostHealth.OK: {swn}",
        "Nodes with ComputeHostHealth.UNHEALTHY: []",
        "Nodes with ComputeHostHealth.CRITICAL: []",
        "Nodes with ComputeHostHealth.UNKNOWN: []",
        "== gpu_stress_test.py 300 ==",
    ]
    for h in swn:
        loops = r.randint(1268, 1284)
        if h == SLOW:
            loops = int(loops / SLOW_FACTOR)
        if h == IDLE:
            out.append(f"{h}: All okay for {loops} loops")
            out.append(f"srun: error: {h}: task {swn.index(h)}: Terminated")
            continue
        out.append(f"{h}: All okay for {loops} loops")
    out.append(f"END TIME: {date_cmd(info['sweep_end'])}")
    write(bundle / "scheduler" / "healthcheck" / f"hc-sweep-{swj}.out", ("\n".join(out) + "\n").encode())


# ----------------------------------------------------------------------------- config files
def inventory() -> str:
    return f"""# {PROVIDER}: bare-metal H100 (Dell PowerEdge XE9680, 8x ConnectX-7 NDR, rail-optimised)
[providers.{PROVIDER}]
usd_per_gpu_hour = 2.05
support = "noc@{PROVIDER}.example; hardware tickets answered within 4 h"

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = 8
interconnect = "InfiniBand NDR 8x400G"
nodes = "{hostlist(HOSTS)}"
contracted_nodes = 20
"""


def run_toml() -> str:
    return f"""# {RUN}: 70B dense decoder (GQA, SwiGLU, RMSNorm), Megatron-LM, TP={TP} PP={PP} DP={DP}
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}    # global batch {GBS} x sequence {SEQ}
flops_per_token = {FLOPS_PER_TOKEN:.3e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --nodes={NNODES} --gpus-per-node=8 --exclusive pretrain_70b.sbatch"
"""


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts = build(seed)
    a1, a2, a3, a4, a5 = atts
    fleet = Fleet(seed)
    r = random.Random(f"{seed}-events")
    info: dict = {}
    # first (harmless) flap of FLAP's port: between two log lines, mid attempt 1, not near a save
    n_flap = 880 + r.randint(0, 40)
    st = next(s for s in a1.steps if s[0] == n_flap)
    info["flap1"] = st[1] + 0.3 * st[2]
    info["sweep_start"] = a3.E + 1150 + r.randint(0, 60)
    info["sweep_end"] = info["sweep_start"] + 412
    write(bundle / "inventory.toml", inventory().encode())
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", run_toml().encode())
    pids_by, infos = {}, {}
    for a in atts:
        pids = Pids(seed, a)
        pids_by[a.k] = pids
        ai = dict(info)
        data, _ = train_log(a, atts, fleet, pids, seed, ai)
        infos[a.k] = ai
        gz = a.k in (1, 5)
        write(rdir / f"attempt-{a.k}" / (f"slurm-{a.job}.out" + (".gz" if gz else "")), data, gz=gz)
        if a.k == 3:
            for h, body in steps_files(a, fleet, seed).items():
                gzs = a.nodes.index(h) % 2 == 0
                write(rdir / "attempt-3" / "steps" / (f"{h}.jsonl.gz" if gzs else f"{h}.jsonl"), body, gz=gzs)
    kernel_logs(atts, fleet, pids_by, seed, bundle, info)
    scheduler(atts, fleet, seed, bundle, info)
    cats, total, per = ledger(atts)
    incidents = []
    for j, a in enumerate(atts[:4]):
        nxt = atts[j + 1]
        inc = {
            "id": j + 1,
            "attempt": a.k,
            "attempts": [a.k],
            "slurm_job": a.job,
            "failure_mode": a.mode,
            "blame": "provider",
            "host": a.root,
            "cluster": CLUSTER,
            "provider": PROVIDER,
            "gpu_index": a.gpu,
            "gpu_pci": f"0000:{GPU_BUS[a.gpu]}:00.0" if a.gpu is not None else None,
            "root_ts": iso_z(a.R),
            "first_symptom_ts": iso_z(infos[a.k]["first_symptom"]),
            "exit_ts": iso_z(a.E),
            "next_start_ts": iso_z(nxt.S),
            "next_first_step_ts": iso_z(nxt.F),
            "last_ckpt_step": a.last_ckpt,
            "failed_at_step": a.steps[-1][0] + 1,
            "gpu_hours": per[j],
            "gpu_hours_lost": round(sum(per[j].values()), 4),
        }
        if "symptoms" in infos[a.k]:
            inc["symptom_hosts"] = infos[a.k]["symptoms"]
        incidents.append(inc)
    incidents[0]["earlier_harmless_flap_ts"] = iso_z(info["flap1"])
    incidents[2]["last_kernel_line_ts"] = iso_z(info["boot_last_line"])
    incidents[2]["reboot_ts"] = iso_z(info["boot_reboot"])
    g = GPUS / 3600.0
    exc = sum(d - BASE_STEP for n, _, d in a3.steps if n <= a3.last_ckpt) * g
    s1, s3 = infos[1]["symptoms"], infos[3]["symptoms"]
    decoys = {
        **{h: f"ring neighbour of {FLAP} on rail 3 in attempt 1: NET/IB completion errors are a symptom" for h in s1},
        **{
            h: f"ring neighbour of {BOOT} in attempt 3: NET/IB completion errors are a symptom of its power loss"
            for h in s3
        },
        CAER: "corrected PCIe AER (Timeout) on its ConnectX-7 every few hours; never affects training",
        GIDW: "NCCL WARN 'Got async event : GID table change' in attempt 2; harmless",
        IDLE: "idle spare, never in a training job; Xid 43 when the sweep's stress test was stopped",
    }
    roots = {a.root for a in atts[:4]} | {SLOW}
    assert not roots & set(decoys), (roots, decoys)
    truth = {
        "run": RUN,
        "gpus": GPUS,
        "seed": seed,
        "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN,
        "baseline_step_s": BASE_STEP,
        "peak_flops_per_gpu": PEAK_H100_SXM,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK_H100_SXM), 4),
        "first_start_ts": iso_z(a1.S),
        "last_end_ts": iso_z(a5.E),
        "clock_skew_s": fleet.skew,
        "attempts": [
            {
                "attempt": a.k,
                "slurm_job": a.job,
                "nodes": hostlist(a.nodes),
                "start_ts": iso_z(a.S),
                "first_step_ts": iso_z(a.F),
                "exit_ts": iso_z(a.E),
                "loaded_step": a.load,
                "last_step": a.steps[-1][0],
                "saves": [n for n, _, _ in a.saves],
                "end": a.kind,
            }
            for a in atts
        ],
        "not_attempts": [
            {
                "slurm_job": 52459,
                "name": "hc-sweep",
                "start_ts": iso_z(info["sweep_start"]),
                "end_ts": iso_z(info["sweep_end"]),
                "why": "health-check sweep between attempts 3 and 4",
            }
        ],
        "match_on_attempt": True,
        "incidents": incidents,
        "straggler": {
            "host": SLOW,
            "gpu_index": SLOW_GPU,
            "attempt": 3,
            "cluster": CLUSTER,
            "provider": PROVIDER,
            "ranks": [a3.nodes.index(SLOW) * GPN + SLOW_GPU],
            "compute_factor": SLOW_FACTOR,
            "from_step": a3.steps[0][0],
            "to_step": a3.steps[-1][0],
            "window_step_s": round(SLOW_STEP, 4),
            "excess_gpu_hours": round(exc, 4),
            "drained_by": "health-check sweep job 52459 (gpu_stress_test: 7% fewer loops)",
        },
        "decoy_hosts": sorted(decoys),
        "decoy_reasons": decoys,
        "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats,
        "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incidents) + exc, 4)},
        "notes": (
            "Times are the Slurm controller's UTC clock; host clocks are skewed by clock_skew_s. gpu_hours per "
            "incident = hang + recompute + restart + startup of the next attempt. Ledger conventions: see the "
            "imbue_70b.py docstring (those of campaign1.py)."
        ),
    }
    write(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output directory (bundle/ and truth.json go here)")
    ap.add_argument("--seed", type=int, default=20240408)
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
