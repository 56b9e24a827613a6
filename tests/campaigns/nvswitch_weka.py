#!/usr/bin/env python3
# ruff: noqa: E501, UP031  (real log lines are quoted whole; printf formats mirror the C sources)
"""Campaign nvswitch_weka: Megatron-LM + Transformer Engine in pyxis/enroot containers on a neocloud's Slurm cluster
whose NVSwitch baseboards, kernels, shared checkpoint storage and fabric misbehave.

Written BLIND (before its author read clusterlab's analysis code), in the shape of the outsiders' campaigns: standard
library only, `--out DIR --seed N`, deterministic per seed (gzip members have mtime=0 and no name); writes
DIR/bundle/... and DIR/truth.json.  Usage: nvswitch_weka.py --out DIR [--seed N]    (~20 MB, ~3 s)

The name keeps the brief's WekaFS, but no public sample of the WekaFS client's kernel messages could be found with the
search tools, so the checkpoint mount is the other option of the brief: a VAST cluster mounted over NFSv3 (nconnect)
at /mnt/vast, whose client messages are the Linux NFS client's ("nfs: server X not responding, still trying" / "OK").

Fleet: provider "lumen" (a neocloud), cluster lm-1, hgx-b[01-20], each an HGX H100 8-GPU baseboard (4 NVSwitches,
fabric manager on the host) and 8 x ConnectX-7 NDR. Spares: hgx-b17..b20. Run "nvsw-70b": a 70B GPT, Megatron-LM
(--transformer-impl transformer_engine, torch_dist checkpoints), TP=8 PP=4 DP=4 on 16 nodes = 128 GPUs, 6.2 s a step,
a save every 250 iterations (~70 s), NCCL watchdog 600 s. Launch: `sbatch` -> `srun --container-image=... torchrun`
(pyxis), one slurm-<job>.out per job in ONE flat logs/ folder (no attempt directories). All clocks UTC, in sync.

Layout:
  bundle/inventory.toml, bundle/runs/nvsw-70b/run.toml
  bundle/runs/nvsw-70b/logs/slurm-<job>.out            srun/pyxis/torchrun/Megatron/PyTorch output (rank 0 and the
                                                        last rank's iteration lines; every rank's errors)
  bundle/runs/nvsw-70b/logs/nccl/<job>.<restart>/<host>.log   NCCL_DEBUG=INFO, NCCL_DEBUG_FILE per host and
                                                        SLURM_RESTART_COUNT
  bundle/runs/nvsw-70b/logs/steps-<job>/rank-NNNNN.jsonl[.gz]  per-rank step records (attempt 6, slowdown window)
  bundle/nodes/<host>/kern.log (rsyslog RSYSLOG_FileFormat, odd hosts) or journal-kernel.log (journalctl -k -o
                                                        short-iso, even hosts); fabricmanager.log (/var/log/fabricmanager.log)
  bundle/scheduler/slurmctld.log, bundle/scheduler/sacct.txt (sacct -P -D: the requeued job has two rows)

Attempts (one per launch; a requeued job's two launches are two attempts):
  att 1  job 7101  fresh start on hgx-b[01-16]. NVSwitch 2 of hgx-b07's baseboard raises a FATAL SXid 24007
         ("sourcetrack timeout error"); the fabric manager logs "detected NVSwitch fatal error 24007"; the driver
         aborts the channels of ALL 8 GPUs of the node (Xid 45 on each); all eight local ranks' watchdogs die with
         "CUDA error: unspecified launch failure", torchrun on hgx-b07 fails, srun --kill-on-bad-exit ends the step,
         the job FAILS. The node (its baseboard), not one GPU.             [nvlink_error, hgx-b07, gpu null]
  att 2  job 7102  hgx-b07 drained, spare hgx-b17 in. At the periodic save of iteration load+750 the VAST cluster
         stalls: "nfs: server vast-lm1 not responding, still trying" on EVERY host within seconds, hung-task reports
         on three hosts, then "nfs: server vast-lm1 OK" ~7-8 min later; the save completes (save-checkpoint ~8 min,
         under the 10 min watchdog) and training goes on.  The storage, no host; no attempt lost.
                                                                            [checkpoint_stall, host null]
         Later hgx-b11's kernel soft-locks the CPU its rank-88..95 threads run on ("watchdog: BUG: soft lockup -
         CPU#NN stuck for 22s! [pt_main_thread:PID]" repeating, an RCU stall, a hung task). Its ranks stop FIRST
         (right after a completed step); 600 s later every OTHER rank's ProcessGroupNCCL watchdog times out (torch
         2.5 format), hgx-b11's ranks print nothing; the job FAILS. The first stopper is the culprit.
                                                                            [host_hw, hgx-b11]
  att 3  job 7103  (`sbatch --requeue --open-mode=append`; hgx-b11 drained, spare hgx-b18 in). hgx-b05 dies
         silently in the middle of a step (its kernel log just stops; it reboots ~20 min later). 31 s later NCCL on its
         ring neighbours hgx-b04 and hgx-b06 warns "NET/IB : Got completion from peer <hgx-b05's address> with
         status=12 ..." and their ranks abort; srun waits for the dead node; slurmctld marks hgx-b05 DOWN after
         SlurmdTimeout and REQUEUES the job (NODE_FAIL, same job id).       [node_failure, hgx-b05]
  att 4  job 7103 again (SLURM_RESTART_COUNT=1), appended to the same slurm-7103.out; hgx-b05 replaced by spare
         hgx-b19; runs into its 8 h TIME LIMIT.                             [time_limit, host null]
  att 5  job 7131  the user raised --micro-batch-size 1 -> 2: "torch.OutOfMemoryError: CUDA out of memory" in the first
         step on the first pipeline stage's ranks (hosts hgx-b01..b04), the job FAILS.   [cuda_oom, host null]
  att 6  job 7140  (mbs back to 1) completes ("[after training is done]"). For 600 iterations the fabric is slow for
         EVERYONE (a spine congestion episode at the provider): every step ~14 % slower, comm_s up by the same amount on
         all 128 ranks in the per-rank records, no host slower than another. Not a straggler: the excess is ledger
         `slowdown`, no incident, no host; a straggler incident in att 6 is a false incident.

Decoys (none of them is a cause): a NON-fatal SXid 20009 on hgx-b03 (kernel + fabric manager "non-fatal error") in
att 1, and another on hgx-b15 during att 6's slowdown; an NCCL WARN at init on hgx-b12 ("Could not find real path of
mlx5_bond_0"); a corrected-ECC EDAC line on hgx-b09 in att 4; a dataloader worker traceback on hgx-b13 (rank 97)
in att 4 that the user's loader retries (it prints the traceback, then "retrying"); the NFS symptom hosts of att 2
(the first reporter and the three hung-task hosts); hgx-b04 / hgx-b06 (NET/IB errors naming the dead hgx-b05).

Ledger (truth.json expected_ledger, GPU-hours = 128 x seconds / 3600), the conventions of campaign1.py:
  startup    = attempt start (sacct Start) -> first training step start ("[before the start of training step]")
  productive = kept steps (step <= the attempt's last completed save for an ended attempt; every step of the
               completed attempt); in att 6's slowdown window only the 6.2 s baseline of each step
  slowdown   = att 6's window steps' time above the 6.2 s baseline (no single host: DESIGN "slowdown")
  checkpoint = durations of completed saves (the save-checkpoint timer; the stalled save of att 2 counts whole),
               plus the tail after the final save
  recompute  = end of the attempt's last completed save (or its first step start) -> root event
  hang       = root event -> attempt exit (sacct End). Root events: the fatal SXid (inside a step); the end of
               hgx-b11's last completed step (the soft lockup begins there; the first report comes 22 s later and
               says "stuck for 22s"); the moment hgx-b05 died (inside a step; its peers' NET/IB errors come ~31 s
               later); the time limit; the OOM exception (att 5, inside step 1).
  restart    = attempt exit -> next attempt start (for the requeue: End of the NODE_FAIL row -> Start of the next)
  straggler = data_stall = idle = 0
Per-incident gpu_hours as campaign1: hang + recompute + restart + the next attempt's startup.

Formats, looked up with the search tools (facts; the text here is written anew):
  * SXid: "nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Fatal, Link 28 sourcetrack timeout error (First)",
    "...: 20009, Non-fatal, Link 04 RX Short Error Rate" (leptonai/gpud sxid parser tests; NVIDIA/nvtrust #124 dmesg
    with the "Severity 0 Engine instance 44 Sub-engine instance 00" and "Data {0x..., ...}" companions).
  * Fabric manager /var/log/fabricmanager.log: "[Jul 23 2024 07:53:55] [ERROR] [tid 841] detected NVSwitch fatal
    error 20034 on fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 33", "... detected NVSwitch
    non-fatal error 12028 on fid 0 ..." (leptonai/gpud components/accelerator/nvidia/fabric-manager).
  * Xid 45 "NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001" (NVIDIA/open-gpu-kernel-modules
    #1150); gpud's SXid catalogue: a fatal SXid stalls the GPUs' NVLink traffic and the driver aborts CUDA jobs with
    Xid 45; "Process group watchdog thread terminated with exception: CUDA error: unspecified launch failure" with the
    CUDA hint lines and "Exception raised from c10_cuda_check_implementation" (public torch issue pastes).
  * Soft lockup "watchdog: BUG: soft lockup - CPU#2 stuck for 22s! [chia_plot:29632]", "Modules linked in:", "CPU: 2
    PID: 0 Comm: ... Tainted: ...", "Hardware name:", "RIP: 0010:..." (madMAx43v3r/chia-plotter #535,
    multipath-tcp/mptcp_net-next #87); hung task report as in campaign2.py.
  * torch 2.5 ProcessGroupNCCL: "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught
    collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=.., NumelOut=.., Timeout(ms)=600000)
    ran for 600020 milliseconds before timing out.", "[PG ID 0 PG GUID 0(default_pg) Rank 1] Exception (either an
    error or timeout) detected by watchdog at work: 808, last enqueued NCCL work: 811, last completed NCCL work: 807."
    (XPixelGroup/BasicSR #737, hiyouga/LlamaFactory #7396); torch.OutOfMemoryError text (torch >= 2.3).
  * NCCL 2.21: init lines as campaign1.py; "transport/net_ib.cc:526 NCCL WARN Could not find real path of bluerdma1
    (/sys/class/infiniband/bluerdma1/device)" (public NCCL_DEBUG output); "NET/IB : Got completion from peer ... with
    status=12 ..." (NVIDIA/nccl #1405, #1814).
  * EDAC "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0x6c01e4
    offset:0x800 grain:32 syndrome:0x0 -  err_code:0101:0090 socket:0 imc:0 rank:0 bg:2 ba:2 row:8d49 col:210)"
    after "mce: [Hardware Error]: Machine check events logged" (public syslog excerpt).
  * NFS client "nfs: server X not responding, still trying" / "nfs: server X OK" (leptonai/gpud, SUSE KB 000020830).
  * Slurm: slurmctld "requeue %pJ due to failure of node %s" (slurmctld node_mgr.c), "error: Nodes X not
    responding", "... setting DOWN", "_job_complete: JobId=N WEXITSTATUS 1", "Time limit exhausted for JobId=N";
    slurmstepd/srun lines and sacct -P as campaign1.py; "srun: error: Node failure on X".
  * Megatron-LM iteration / save / load / datetime lines and pyxis "importing docker image" as campaign1.py.
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

RUN = "nvsw-70b"
CLUSTER, PROVIDER = "lm-1", "lumen"
GPN, NODES = 8, 16
GPUS = GPN * NODES
TP, PP, DP = 8, 4, 4
GBS, SEQ = 256, 4096
TOKENS_PER_STEP = GBS * SEQ
FLOPS_PER_TOKEN = 4.52e11
PEAK = 989.4e12
BASE = 6.200
JITTER = 0.0006
SAVE_EVERY, LOG_EVERY = 250, 10
TRAIN_ITERS = 12000
SLOW_FACTOR = 1.14
SLOW = (9601, 10200)            # att 6 fabric slowdown window (iterations, inclusive)
STEPS_MARGIN = 100
T0 = datetime(2026, 12, 5, 7, 30, 0, tzinfo=UTC).timestamp()
HOSTS = [f"hgx-b{i:02d}" for i in range(1, 21)]
INIT, SPARES = HOSTS[:16], HOSTS[16:]
CKPT = "/mnt/vast/ckpt/nvsw-70b"
NFS_SERVER = "vast-lm1"
IMAGE = "nvcr.io#nvidia/pytorch:24.12-py3"
NCCL_VERSION = "2.23.4+cuda12.6"
KERNEL = "6.8.0-1017-nvidia"
DRIVER = "570.133.20"
BUS = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
NVSW_PCI = ["0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"]
NIC_DEV = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
HW_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error", "network",
            "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption", "gpu_throttle"]
TORCH = "/usr/local/lib/python3.12/dist-packages/torch"


def host_ip(h: str) -> str:
    return f"10.64.1.{10 + int(h[-2:])}"


# ----------------------------------------------------------------------------- time formats
def _dt(t: float) -> tuple[datetime, int]:
    us = int(round(t * 1e6))
    s, frac = divmod(us, 1_000_000)
    return datetime.fromtimestamp(s, UTC), frac


def iso_z(t: float) -> str:
    d, us = _dt(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{us // 1000:03d}Z"


def meg_ts(t: float) -> str:
    return _dt(t)[0].strftime("%Y-%m-%d %H:%M:%S")


def slurm_ts(t: float) -> str:
    return _dt(t)[0].strftime("%Y-%m-%dT%H:%M:%S")


def ctld_ts(t: float) -> str:
    d, us = _dt(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{us // 1000:03d}]"


def date_cmd(t: float) -> str:
    d, _ = _dt(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def fm_ts(t: float) -> str:                       # fabric manager: [Jul 23 2024 07:53:55]
    d, _ = _dt(t)
    return f"[{d:%b} {d.day:02d} {d.year} {d:%H:%M:%S}]"


def rsys(t: float) -> str:                        # RSYSLOG_FileFormat
    d, us = _dt(t)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{us:06d}+00:00"


def short_iso(t: float) -> str:
    return _dt(t)[0].strftime("%Y-%m-%dT%H:%M:%S") + "+00:00"


def glog(t: float, lvl: str, ns: int) -> str:     # c10 logging
    d, us = _dt(t)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{us:06d}{ns:03d}"


def pylog(t: float, lvl: str) -> str:             # torch.distributed.elastic logging
    d, us = _dt(t)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{us // 1000:03d}000"


def elapsed(sec: float) -> str:
    sec = int(round(sec))
    d, r = divmod(sec, 86400)
    h, r = divmod(r, 3600)
    m, s = divmod(r, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts: list[str]) -> str:
    nums = sorted(int(h[-2:]) for h in hosts)
    out, a, b = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == b + 1:
            b = n
            continue
        out.append(f"{a:02d}" if a == b else f"{a:02d}-{b:02d}")
        if n is not None:
            a = b = n
    return f"hgx-b[{','.join(out)}]" if len(nums) > 1 else hosts[0]


class Sink:
    def __init__(self) -> None:
        self.items: list[tuple[float, int, str | bytes]] = []

    def add(self, t: float, line: str | bytes) -> None:
        self.items.append((t, len(self.items), line))

    def extend(self, t: float, lines) -> None:
        for ln in lines:
            self.add(t, ln)

    def render(self) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
        return b"\n".join(x[2] if isinstance(x[2], bytes) else x[2].encode() for x in self.items) + b"\n"


def write_file(path: Path, data: bytes, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=6) as f:
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


def in_slow(a: Attempt, n: int) -> bool:
    return a.k == 6 and SLOW[0] <= n <= SLOW[1]


def simulate(a: Attempt, rng: random.Random) -> bool:
    a.steps, a.saves = [], []
    t, n = a.F, a.load
    while True:
        if a.kind == "complete" and n >= TRAIN_ITERS:
            break
        n1 = n + 1
        dur = BASE * (SLOW_FACTOR if in_slow(a, n1) else 1.0) * (1 + rng.uniform(-JITTER, JITTER))
        if a.kind == "failure" and n1 == a.fail_step:
            if a.mode == "host_hw":                       # the rank stops right after its last completed step
                a.R = t
            elif a.mode == "cuda_oom":
                a.R = t + 2.35
            else:
                a.R = float(math.floor(t + a.frac * dur))
                assert t < a.R < t + dur
            a.E = float(math.ceil(a.R + a.hang))          # sacct End: whole seconds
            break
        if a.kind == "time_limit" and t + dur > a.T:
            a.R = a.T
            a.E = a.T + 2.0
            break
        a.steps.append((n1, t, dur))
        t += dur
        n = n1
        if n % SAVE_EVERY == 0:
            c = round(rng.uniform(62.0, 78.0), 2)
            if a.stall_step == n:
                c = round(455.0 + rng.uniform(0, 40), 2)
            if a.kind == "time_limit" and t + c > a.T - 5:
                return False
            a.saves.append((n, t, c))
            t += c
    if a.kind == "complete":
        a.E = float(math.ceil(t + 3.0))
    return True


def build(seed: int) -> list[Attempt]:
    rng = random.Random(f"{seed}-timeline")
    n1 = INIT[:]
    n2 = [h if h != "hgx-b07" else "hgx-b17" for h in n1]
    n3 = [h if h != "hgx-b11" else "hgx-b18" for h in n2]
    n4 = [h if h != "hgx-b05" else "hgx-b19" for h in n3]
    specs = [
        dict(k=1, job=7101, restart=0, nodes=n1, kind="failure", mode="nvlink_error", root="hgx-b07",
             saves_before=5, k_after=90 + rng.randint(0, 120), frac=0.4, hang=11.0 + rng.randint(0, 4),
             phases=(185, 60, 70, 31, 6), gap=2400 + rng.randint(-300, 300), time_limit=24 * 3600, stall_step=None),
        dict(k=2, job=7102, restart=0, nodes=n2, kind="failure", mode="host_hw", root="hgx-b11",
             saves_before=6, k_after=60 + rng.randint(0, 150), frac=0.0, hang=600.0 + 34 + rng.randint(0, 6),
             phases=(120, 58, 210, 31, 6), gap=1500 + rng.randint(-200, 200), time_limit=24 * 3600, stall_step="+750"),
        dict(k=3, job=7103, restart=0, nodes=n3, kind="failure", mode="node_failure", root="hgx-b05",
             saves_before=5, k_after=40 + rng.randint(0, 180), frac=0.6, hang=331.0 + rng.randint(0, 5),
             phases=(118, 57, 205, 30, 6), gap=150 + rng.randint(0, 60), time_limit=8 * 3600, stall_step=None),
        dict(k=4, job=7103, restart=1, nodes=n4, kind="time_limit", mode="time_limit", root=None,
             phases=(240, 61, 215, 31, 6), gap=3000 + rng.randint(-300, 300), time_limit=8 * 3600, stall_step=None),
        dict(k=5, job=7131, restart=0, nodes=n4, kind="failure", mode="cuda_oom", root=None, saves_before=0,
             k_after=1, frac=0.0, hang=24.0 + rng.randint(0, 3),
             phases=(115, 58, 212, 30, 6), gap=900 + rng.randint(-100, 100), time_limit=24 * 3600, stall_step=None),
        dict(k=6, job=7140, restart=0, nodes=n4, kind="complete", mode=None, root=None,
             phases=(117, 57, 214, 31, 6), gap=None, time_limit=24 * 3600, stall_step=None),
    ]
    for s in specs:
        s["phases"] = tuple(p + rng.randint(-3, 3) for p in s["phases"])
    atts = [Attempt(**s) for s in specs]
    t, load = T0, 0
    for a in atts:
        a.load = load
        if isinstance(a.stall_step, str):
            a.stall_step = load + int(a.stall_step[1:])
        while True:
            a.S = float(t)
            a.F = a.S + sum(a.phases)
            a.T = a.S + a.time_limit
            if a.kind == "failure":
                a.fail_step = a.load + a.saves_before * SAVE_EVERY + a.k_after
            if simulate(a, random.Random(f"{seed}-steps-{a.k}")):
                break
            a.phases = a.phases[:2] + (a.phases[2] + 97,) + a.phases[3:]
        ck = [n for n, _, _ in a.saves]
        a.last_ckpt = ck[-1] if ck else a.load
        load = a.last_ckpt
        if a.gap is not None:
            t = a.E + a.gap
    assert atts[-1].load < SLOW[0] - STEPS_MARGIN, atts[-1].load
    return atts


def ledger(atts: list[Attempt]):
    cats = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute",
                          "hang", "restart", "startup", "idle"], 0.0)
    per = []
    for i, a in enumerate(atts):
        cats["startup"] += a.F - a.S
        keep = a.last_ckpt if a.kind != "complete" else 10 ** 9
        for n, _, d in a.steps:
            if n > keep:
                continue
            if in_slow(a, n):
                cats["productive"] += BASE
                cats["slowdown"] += d - BASE
            else:
                cats["productive"] += d
        for _, _, c in a.saves:
            cats["checkpoint"] += c
        if a.kind == "complete":
            cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        base = (a.saves[-1][1] + a.saves[-1][2]) if a.saves else a.F
        nxt = atts[i + 1]
        d = dict(hang=a.E - a.R, recompute=a.R - base, restart=nxt.S - a.E, startup=nxt.F - nxt.S)
        assert d["recompute"] >= 0
        for k in ("hang", "recompute", "restart"):
            cats[k] += d[k]
        per.append(d)
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per])


# ----------------------------------------------------------------------------- fleet facts
class Pids:
    def __init__(self, seed: int, a: Attempt):
        rng = random.Random(f"{seed}-pids-{a.k}")
        self.agent, self.worker, self.tid, self.comm = {}, {}, {}, {}
        for h in a.nodes:
            ag = rng.randint(200_000, 3_500_000)
            self.agent[h] = ag
            for d in range(GPN):
                self.worker[h, d] = ag + 9 + d
                self.tid[h, d] = ag + 900 + rng.randint(0, 2000)
                self.comm[h, d] = "0x%x" % (0x55d000000000 + (rng.getrandbits(32) << 4))
        self.commid = "0x%016x" % rng.getrandbits(64)


def layout(nodes):
    return [(i * GPN + d, h, d) for i, h in enumerate(nodes) for d in range(GPN)]


def lr_at(n: int) -> float:
    warm, lmax, lmin = 1000, 1.5e-4, 1.5e-5
    if n < warm:
        return lmax * n / warm
    p = (n - warm) / (TRAIN_ITERS - warm)
    return lmin + 0.5 * (lmax - lmin) * (1 + math.cos(math.pi * p))


def loss_at(n: int, rng: random.Random) -> float:
    return 1.72 + 8.9 * math.exp(-n / 300.0) + 0.55 * math.exp(-n / 5000.0) + rng.gauss(0, 0.011)


def ela(t: float, lvl: str, pid: int, where: str, msg: str) -> str:
    return f"{pylog(t, lvl)} {pid} {where}] {msg}"


TB_RUN = [
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 8, in <module>',
    "    sys.exit(main())",
    f'  File "{TORCH}/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
    "    return f(*args, **kwargs)",
    f'  File "{TORCH}/distributed/run.py", line 919, in main',
    "    run(args)",
    f'  File "{TORCH}/distributed/run.py", line 910, in run',
    "    elastic_launch(",
    f'  File "{TORCH}/distributed/launcher/api.py", line 138, in __call__',
    "    return launch_agent(self._config, self._entrypoint, list(args))",
    f'  File "{TORCH}/distributed/launcher/api.py", line 269, in launch_agent',
    "    raise ChildFailedError(",
]


def child_failed(t: float, host: str, entries, root) -> list[str]:
    st = _dt(t)[0].strftime("%Y-%m-%d_%H:%M:%S")
    out = TB_RUN + ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 60,
                    "pretrain_gpt.py FAILED", "-" * 60, "Failures:"]

    def entry(i, e):
        r, lr, ec, pid, tb = e
        return [f"[{i}]:", f"  time      : {st}", f"  host      : {host}", f"  rank      : {r} (local_rank: {lr})",
                f"  exitcode  : {ec} (pid: {pid})", "  error_file: <N/A>", f"  traceback : {tb}"]
    others = [e for e in entries if e is not root]
    if not others:
        out.append("  <NO_OTHER_FAILURES>")
    for i, e in enumerate(others, 1):
        out += entry(i, e)
    return out + ["-" * 60, "Root Cause (first observed failure):"] + entry(0, root) + ["=" * 60]


def frames(a: str, kind: str) -> list[str]:
    if kind == "timeout":
        mid = [f"frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f{a}71a8d2 in {TORCH}/lib/libtorch_cuda.so)"]
    else:
        mid = [f"frame #1: c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&) + 0x64 (0x7f{a}41d0a4 in {TORCH}/lib/libc10.so)",
               f"frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + 0x118 (0x7f{a}0c6118 in {TORCH}/lib/libc10_cuda.so)",
               f"frame #3: c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x56 (0x7f{a}718056 in {TORCH}/lib/libtorch_cuda.so)"]
    return ([f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f{a}41df86 in {TORCH}/lib/libc10.so)"]
            + mid +
            [f"frame #{len(mid) + 1}: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f{a}721333 in {TORCH}/lib/libtorch_cuda.so)",
             f"frame #{len(mid) + 2}: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7f{a}72273d in {TORCH}/lib/libtorch_cuda.so)",
             f"frame #{len(mid) + 3}: <unknown function> + 0xecdb4 (0x7f{a}a9d5db4 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
             f"frame #{len(mid) + 4}: <unknown function> + 0x9caa4 (0x7f{a}f76aa4 in /lib/x86_64-linux-gnu/libc.so.6)",
             f"frame #{len(mid) + 5}: <unknown function> + 0x129c3c (0x7f{a}0b0c3c in /lib/x86_64-linux-gnu/libc.so.6)", ""])


def megatron_args(a: Attempt) -> list[str]:
    mbs = "2" if a.mode == "cuda_oom" else "1"
    args = [("bf16", "True"), ("ckpt_format", "torch_dist"), ("clip_grad", "1.0"), ("data_parallel_size", str(DP)),
            ("distributed_timeout_minutes", "10"), ("ffn_hidden_size", "28672"), ("global_batch_size", str(GBS)),
            ("hidden_size", "8192"), ("load", CKPT), ("log_interval", str(LOG_EVERY)), ("log_throughput", "True"),
            ("lr", "0.00015"), ("micro_batch_size", mbs), ("num_attention_heads", "64"), ("num_layers", "80"),
            ("pipeline_model_parallel_size", str(PP)), ("save", CKPT), ("save_interval", str(SAVE_EVERY)),
            ("seq_length", str(SEQ)), ("sequence_parallel", "True"), ("tensor_model_parallel_size", str(TP)),
            ("train_iters", str(TRAIN_ITERS)), ("transformer_impl", "transformer_engine"),
            ("use_distributed_optimizer", "True"), ("world_size", str(GPUS))]
    return (["------------------------ arguments ------------------------"] +
            [f"  {k} {'.' * (48 - len(k))} {v}" for k, v in args] +
            ["-------------------- end of arguments ---------------------"])


def watchdog(t: float, r: int, seq: int, rng: random.Random, full: bool) -> list[str]:
    numel = rng.choice([1, 8388608, 268435456, 33554432])
    wd = (f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, "
          f"NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) ran for {600000 + rng.randint(10, 1400)} "
          f"milliseconds before timing out.")
    out = [f"[rank{r}]:[{glog(t, 'E', rng.randint(0, 999))} ProcessGroupNCCL.cpp:616] {wd}",
           f"[rank{r}]:[{glog(t + 0.002, 'E', rng.randint(0, 999))} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) "
           f"Rank {r}] Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL "
           f"work: {seq + 1}, last completed NCCL work: {seq - 1}.",
           f"[rank{r}]:[{glog(t + 0.0023, 'E', rng.randint(0, 999))} ProcessGroupNCCL.cpp:630] [Rank {r}] Some NCCL operations "
           f"have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might "
           f"run on corrupted/incomplete data.",
           f"[rank{r}]:[{glog(t + 0.0024, 'E', rng.randint(0, 999))} ProcessGroupNCCL.cpp:636] [Rank {r}] To avoid data "
           f"inconsistency, we are taking the entire process down."]
    if full:
        msg = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: {wd}"
        out += [f"[rank{r}]:[{glog(t + 0.003, 'E', rng.randint(0, 999))} ProcessGroupNCCL.cpp:1595] {msg}",
                "terminate called after throwing an instance of 'c10::DistBackendError'", f"  what():  {msg}",
                "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most recent call first):"]
        out += frames("%04x" % rng.getrandbits(16), "timeout")
    return out


def srun_kill(a: Attempt, L: Sink, t: float, failed: list[str], pids: Pids):
    for h in failed:
        L.add(t, f"srun: error: {h}: task {a.nodes.index(h)}: Exited with exit code 1")
    L.add(t + 0.1, f"srun: Terminating StepId={a.job}.0")
    L.add(t + 0.3, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(t + 0.3)} ***")
    for i, h in enumerate(a.nodes):
        if h in failed:
            continue
        tt = t + 0.5 + 0.02 * i
        L.add(tt, ela(tt, "W", pids.agent[h], "torch/distributed/elastic/agent/server/api.py:704",
                      "Received 15 death signal, shutting down workers"))
        for d in range(GPN):
            L.add(tt + 0.001, ela(tt + 0.001, "W", pids.agent[h], "torch/distributed/elastic/multiprocessing/api.py:897",
                                  f"Sending process {pids.worker[h, d]} closing signal SIGTERM"))


def torchrun_fail(a, L, pids, h, t, ec: int, sig: str):
    i = a.nodes.index(h)
    ents = [(i * GPN + d, d, ec, pids.worker[h, d], f"Signal {-ec} ({sig}) received by PID {pids.worker[h, d]}")
            for d in range(GPN)]
    root = ents[0]
    L.add(t, ela(t, "E", pids.agent[h], "torch/distributed/elastic/multiprocessing/api.py:869",
                 f"failed (exitcode: {ec}) local_rank: 0 (pid: {root[3]}) of binary: /usr/bin/python"))
    L.extend(t + 0.01, child_failed(t, h, ents, root))


OOM_TB = [
    "Traceback (most recent call last):",
    '  File "/workspace/Megatron-LM/pretrain_gpt.py", line 301, in <module>',
    "    pretrain(",
    '  File "/workspace/Megatron-LM/megatron/training/training.py", line 386, in pretrain',
    "    iteration, num_floating_point_operations_so_far = train(",
    '  File "/workspace/Megatron-LM/megatron/training/training.py", line 1388, in train',
    "    train_step(forward_step_func,",
    '  File "/workspace/Megatron-LM/megatron/training/training.py", line 755, in train_step',
    "    losses_reduced = forward_backward_func(",
    '  File "/workspace/Megatron-LM/megatron/core/pipeline_parallel/schedules.py", line 1721, in forward_backward_pipelining_without_interleaving',
    "    output_tensor, num_tokens = forward_step(",
    '  File "/workspace/Megatron-LM/megatron/core/pipeline_parallel/schedules.py", line 275, in forward_step',
    "    output_tensor, loss_func = forward_step_func(data_iterator, model)",
    '  File "/usr/local/lib/python3.12/dist-packages/transformer_engine/pytorch/module/layernorm_mlp.py", line 1542, in forward',
    "    out = fwd_fn(*args)",
]


def train_log(a: Attempt, pids: Pids, seed: int, facts: dict) -> Sink:
    rng = random.Random(f"{seed}-log-{a.k}")
    L = Sink()
    lay = layout(a.nodes)
    S, F = a.S, a.F
    p_pyx, p_init, p_model, p_data, _ = a.phases
    L.add(S, f"START TIME: {date_cmd(S)}")
    L.add(S + 0.1, f"SLURM_JOB_ID={a.job} SLURM_RESTART_COUNT={a.restart} NODELIST={hostlist(a.nodes)}")
    L.add(S + 0.3, f"pyxis: importing docker image: {IMAGE}")
    L.add(S + p_pyx - 1.0, f"pyxis: imported docker image: {IMAGE}")
    t = S + p_pyx
    for i, h in enumerate(a.nodes):
        tt = t + 0.4 + 0.05 * i
        p = f"{pylog(tt, 'W')} {pids.agent[h]} torch/distributed/run.py:793] "
        L.extend(tt, [p, p + "*" * 41, p + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in "
                      "default, to avoid your system being overloaded, please further tune the variable for optimal "
                      "performance in your application as needed. ", p + "*" * 41])
    ta = t + 8.0
    L.add(ta, f"using world size: {GPUS}, data-parallel size: {DP}, context-parallel size: 1, tensor-model-parallel "
              f"size: {TP}, pipeline-model-parallel size: {PP} ")
    L.extend(ta, megatron_args(a))
    L.extend(ta + 1, ["> building HuggingFaceTokenizer tokenizer ...", "> initializing torch distributed ...",
                      f"> initialized tensor model parallel with size {TP}",
                      f"> initialized pipeline model parallel with size {PP}", "> setting random seeds to 1234 ..."])
    ti = S + p_pyx + p_init
    L.add(ti - 0.5, f"time to initialize megatron (seconds): {p_init - 0.6 + rng.random():.3f}")
    L.add(ti, f"[after megatron is initialized] datetime: {meg_ts(ti)} ")
    L.add(ti + 0.3, "building GPT model ...")
    tm = ti + p_model
    if a.load == 0:
        L.extend(ti + 15, [f"WARNING: could not find the metadata file {CKPT}/latest_checkpointed_iteration.txt",
                           "    will not load any checkpoints and will start from random"])
    else:
        L.add(ti + 25, f" loading checkpoint from {CKPT} at iteration {a.load}")
        L.add(tm - 3.0, f"  successfully loaded checkpoint from {CKPT} [ t 1/{TP}, p 1/{PP} ] at iteration {a.load}")
    L.add(tm, f"[after model, optimizer, and learning rate scheduler are built] datetime: {meg_ts(tm)} ")
    L.add(tm + 0.5, "> building train, validation, and test datasets ...")
    td = tm + p_data
    L.add(td, f"[after dataloaders are built] datetime: {meg_ts(td)} ")
    L.extend(td + 0.2, ["done with setup ...", "training ..."])
    L.add(F, f"[before the start of training step] datetime: {meg_ts(F)} ")
    lr = random.Random(f"{seed}-loss-{a.k}")
    for j, (n, ts, dur) in enumerate(a.steps):
        if n % LOG_EVERY:
            continue
        win = [d for (_, _, d) in a.steps[max(0, j - LOG_EVERY + 1): j + 1]]
        avg = sum(win) / len(win)
        end = ts + dur
        thr = TOKENS_PER_STEP * FLOPS_PER_TOKEN / avg / GPUS / 1e12
        gn = 0.19 + 2.6 * math.exp(-n / 500.0) + abs(lr.gauss(0, 0.02))
        L.add(end, f" [{meg_ts(end)}] iteration {n:8d}/{TRAIN_ITERS:8d} | consumed samples: {n * GBS:12d} | "
                   f"elapsed time per iteration (ms): {avg * 1000:.1f} | throughput per GPU (TFLOP/s/GPU): {thr:.1f} | "
                   f"learning rate: {lr_at(n):.6E} | global batch size: {GBS:5d} | lm loss: {loss_at(n, lr):.6E} | "
                   f"loss scale: 1.0 | grad norm: {gn:.3f} | number of skipped iterations:   0 | "
                   f"number of nan iterations:   0 |")
    for n, ts, c in a.saves:
        L.add(ts + 0.001, f"saving checkpoint at iteration {n:7d} to {CKPT} in torch_dist format")
        L.add(ts + c - 0.01, f"  successfully saved checkpoint from iteration {n:7d} to {CKPT} [ t 1/{TP}, p 1/{PP} ]")
        L.extend(ts + c - 0.005, ["(min, max) time across ranks (ms):",
                                  f"    {'save-checkpoint '.ljust(48, '.')}: ({c * 1000 - rng.uniform(2, 9):.2f}, {c * 1000:.2f})"])
    R, E = a.R, a.E
    if a.k == 1:                                             # NVSwitch fatal: all 8 local ranks die
        h = a.root
        i = a.nodes.index(h)
        for d in range(GPN):
            r = i * GPN + d
            tt = R + 1.6 + 0.05 * d
            msg = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: CUDA error: unspecified launch failure"
            L.extend(tt, [f"[rank{r}]:[{glog(tt, 'E', rng.randint(0, 999))} ProcessGroupNCCL.cpp:1595] {msg}",
                          "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
                          "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                          "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", "",
                          "Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43 (most recent call first):"]
                     + frames("%04x" % rng.getrandbits(16), "cuda")
                     + ["terminate called after throwing an instance of 'c10::DistBackendError'", f"  what():  {msg}"])
        facts["sym1"] = R + 1.6
        torchrun_fail(a, L, pids, h, R + 4.2, -6, "SIGABRT")
        srun_kill(a, L, R + 5.5, [h], pids)
        for j, hh in enumerate(a.nodes):
            if hh != h:
                L.add(E - 1.5 + 0.01 * j, f"srun: error: {hh}: task {j}: Terminated")
        L.add(E - 1.0, f"srun: Force Terminated StepId={a.job}.0")
    elif a.k == 2:                                           # soft lockup on hgx-b11: the others time out
        seq = 41_000 + rng.randint(0, 5000)
        for r, h, _d in lay:
            if h == a.root:
                continue
            tw = R + 600.0 + rng.uniform(0.05, 1.6)
            L.extend(tw, watchdog(tw, r, seq, rng, full=(r % 37 == 3)))
        facts["sym2"] = R + 600.05
        bad = [h for h in a.nodes if h != a.root]
        for j, h in enumerate(bad):
            torchrun_fail(a, L, pids, h, R + 603.0 + 0.11 * j, -6, "SIGABRT")
        srun_kill(a, L, R + 606.0, bad, pids)
        L.add(E - 20.0, f"slurmstepd: error: *** STEP {a.job}.0 STEPD TERMINATED ON {a.root} AT {slurm_ts(E - 20)} DUE TO JOB NOT ENDING WITH SIGNALS ***")
        L.add(E - 1.0, f"srun: error: {a.root}: task {a.nodes.index(a.root)}: Killed")
        L.add(E - 0.8, f"srun: Force Terminated StepId={a.job}.0")
    elif a.k == 3:                                           # hgx-b05 dies: neighbours' NET/IB errors, NODE_FAIL
        idx = a.nodes.index(a.root)
        nb = [a.nodes[idx - 1], a.nodes[idx + 1]]
        for j, h in enumerate(nb):
            i = a.nodes.index(h)
            d = 3
            r = i * GPN + d
            tt = R + 31.0 + 0.4 * j + rng.uniform(0, 0.3)
            last = (f"NET/IB : Got completion from peer {host_ip(a.root)}<{rng.randint(40000, 60999)}> with status=12 "
                    f"opcode={1 if j == 0 else 129} len=0 vendor err 129 ({'Send' if j == 0 else 'Recv'}) "
                    f"localGid ::ffff:{host_ip(h)} remoteGids::ffff:{host_ip(a.root)}")
            msg = (f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: "
                   f"NCCL error: remote process exited or there was a network error, NCCL version {NCCL_VERSION.split('+')[0]}")
            L.extend(tt, [f"[rank{r}]:[{glog(tt, 'E', rng.randint(0, 999))} ProcessGroupNCCL.cpp:1595] {msg}",
                          "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
                          "Last error:", last,
                          "terminate called after throwing an instance of 'c10::DistBackendError'", f"  what():  {msg}"])
            torchrun_fail(a, L, pids, h, tt + 2.5, -6, "SIGABRT")
            facts.setdefault("sym3", tt)
        srun_kill(a, L, R + 36.0, nb, pids)
        L.add(E - 1.0, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(E - 1)} DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***")
        L.add(E - 0.9, f"srun: error: Node failure on {a.root}")
        L.add(E - 0.5, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    elif a.k == 4:                                           # time limit (+ decoy traceback on rank 97)
        T = a.T
        L.add(T, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(T)} DUE TO TIME LIMIT ***")
        L.add(T + 0.05, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(T)} DUE TO TIME LIMIT ***")
        for i, h in enumerate(a.nodes):
            tt = T + 0.3 + 0.03 * i
            L.add(tt, ela(tt, "W", pids.agent[h], "torch/distributed/elastic/agent/server/api.py:704",
                          "Received 15 death signal, shutting down workers"))
        td = a.F + 0.37 * (a.T - a.F)
        facts["tb_decoy"] = td
        L.extend(td, [f"[rank97]: {x}" for x in [
            "data worker 3: fetch of /mnt/vast/tok/cc-2025-51/shard-004417.bin failed, will retry (attempt 1/5):",
            "Traceback (most recent call last):",
            '  File "/workspace/nvsw/data/remote_shards.py", line 88, in _fetch',
            "    buf = self._session.get(url, timeout=30).content",
            '  File "/usr/local/lib/python3.12/dist-packages/requests/sessions.py", line 602, in get',
            '    return self.request("GET", url, **kwargs)',
            '  File "/usr/local/lib/python3.12/dist-packages/requests/adapters.py", line 682, in send',
            "    raise ConnectionError(err, request=request)",
            "requests.exceptions.ConnectionError: ('Connection aborted.', ConnectionResetError(104, 'Connection reset by peer'))"]])
        L.add(td + 2.1, "[rank97]: data worker 3: fetch of /mnt/vast/tok/cc-2025-51/shard-004417.bin succeeded on attempt 2")
    elif a.k == 5:                                           # OOM in step 1 on the first pipeline stage
        for r, _h, d in lay[:32]:
            tt = R + 0.02 * r
            L.extend(tt, [f"[rank{r}]: {x}" for x in OOM_TB + [
                f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU {d} has a total capacity of "
                f"79.11 GiB of which 1.{rng.randint(10, 90)} GiB is free. Including non-PyTorch memory, this process has "
                f"77.{rng.randint(10, 90)} GiB memory in use. Of the allocated memory 73.{rng.randint(10, 99)} GiB is allocated "
                f"by PyTorch, and 2.{rng.randint(10, 99)} GiB is reserved by PyTorch but unallocated. If reserved but "
                f"unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
                f"fragmentation.  See documentation for Memory Management  "
                f"(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"]])
        facts["sym5"] = R
        bad = a.nodes[:4]
        for j, h in enumerate(bad):
            i = a.nodes.index(h)
            tt = R + 3.0 + 0.2 * j
            ents = [(i * GPN + d, d, 1, pids.worker[h, d],
                     "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html") for d in range(GPN)]
            L.add(tt, ela(tt, "E", pids.agent[h], "torch/distributed/elastic/multiprocessing/api.py:869",
                          f"failed (exitcode: 1) local_rank: 0 (pid: {ents[0][3]}) of binary: /usr/bin/python"))
            L.extend(tt + 0.01, child_failed(tt, h, ents, ents[0]))
        srun_kill(a, L, R + 4.5, bad, pids)
        L.add(E - 1.0, f"srun: Force Terminated StepId={a.job}.0")
    else:
        L.add(a.E - 2.5, f"[after training is done] datetime: {meg_ts(a.E - 2.5)} ")
    return L


# ----------------------------------------------------------------------------- NCCL logs
def nccl_log(a: Attempt, h: str, pids: Pids, seed: int) -> bytes:
    rng = random.Random(f"{seed}-nccl-{a.k}-{h}")
    i = a.nodes.index(h)
    nn = len(a.nodes)
    out = []
    nets = " ".join(f"[{k}]{NIC_DEV[k]}:1/IB" for k in range(GPN))
    for d in range(GPN):
        r = i * GPN + d
        w, t = pids.worker[h, d], pids.tid[h, d]
        p0 = f"{h}:{w}:{w} [{d}] NCCL INFO "
        p = f"{h}:{w}:{t} [{d}] NCCL INFO "
        c = pids.comm[h, d]
        out += [p0 + f"Bootstrap : Using ibp26s0:{host_ip(h)}<0>",
                p0 + "cudaDriverVersion 12080"]
        if r == 0:
            out.append(f"NCCL version {NCCL_VERSION}")
        if h == "hgx-b12" and a.k == 1 and d == 0:         # harmless WARN at init (decoy)
            out.append(f"{h}:{w}:{t} [{d}] transport/net_ib.cc:526 NCCL WARN Could not find real path of mlx5_bond_0 "
                       f"(/sys/class/infiniband/mlx5_bond_0/device)")
        out += [p + f"NET/IB : Using {nets} [RO]; OOB ibp26s0:{host_ip(h)}<0>",
                p + "Using network IB",
                p + f"ncclCommInitRank comm {c} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} busId {BUS[d]}000 "
                    f"commId {pids.commid} - Init START",
                p + f"comm {c} rank {r} nRanks {GPUS} nNodes {nn} localRanks {GPN} localRank {d} MNNVL 0",
                p + f"Channel {d:02d}/0 : {((i - 1) % nn) * GPN + d}[{d}] -> {r}[{d}] [receive] via NET/IB/{d}/GDRDMA",
                p + f"Channel {d:02d}/0 : {r}[{d}] -> {((i + 1) % nn) * GPN + d}[{d}] [send] via NET/IB/{d}/GDRDMA",
                p + "Connected all rings", p + "Connected all trees", p + "Connected NVLS tree",
                p + f"comm {c} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} busId {BUS[d]}000 commId "
                    f"{pids.commid} - Init COMPLETE"]
    if a.k == 3:
        idx = a.nodes.index(a.root)
        if h in (a.nodes[idx - 1], a.nodes[idx + 1]):
            d = 3
            w, t = pids.worker[h, d], pids.tid[h, d] + 7
            out += [f"{h}:{w}:{t} [{d}] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
                    f"{host_ip(a.root)}<{rng.randint(40000, 60999)}> with status=12 opcode=0 len=0 vendor err 129 (Recv) "
                    f"localGid ::ffff:{host_ip(h)} remoteGids::ffff:{host_ip(a.root)}",
                    f"{h}:{w}:{t} [{d}] NCCL INFO transport/net.cc:1302 -> 6",
                    f"{h}:{w}:{t} [{d}] NCCL INFO proxy.cc:698 -> 6",
                    f"{h}:{w}:{t} [{d}] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]"]
    if a.kind == "complete":
        for d in range(GPN):
            out.append(f"{h}:{pids.worker[h, d]}:{pids.worker[h, d]} [{d}] NCCL INFO comm {pids.comm[h, d]} rank "
                       f"{i * GPN + d} nranks {GPUS} cudaDev {d} busId {BUS[d]}000 - Destroy COMPLETE")
    return ("\n".join(out) + "\n").encode()


# ----------------------------------------------------------------------------- per-rank records (att 6)
def rank_records(a: Attempt, seed: int) -> dict[int, bytes]:
    lo, hi = SLOW[0] - STEPS_MARGIN, SLOW[1] + STEPS_MARGIN
    sel = [(n, ts, d) for n, ts, d in a.steps if lo <= n <= hi]
    out = {}
    for r, h, _ in layout(a.nodes):
        rng = random.Random(f"{seed}-rec-{r}")
        recs = []
        for n, ts, d in sel:
            comp = 5.55 * (1 + rng.uniform(-0.004, 0.004))
            data = 0.05 * (1 + rng.uniform(-0.05, 0.05))
            recs.append('{"ts":"%s","rank":%d,"host":"%s","step":%d,"step_s":%.4f,"compute_s":%.4f,"comm_s":%.4f,'
                        '"data_s":%.4f,"tokens":%d}' % (iso_z(ts + d), r, h, n, d, comp, d - comp - data, data,
                                                       TOKENS_PER_STEP // GPUS))
        out[r] = ("\n".join(recs) + "\n").encode()
    return out


# ----------------------------------------------------------------------------- kernel and fabric manager logs
def kernel_logs(atts: list[Attempt], pids_of: dict, seed: int, facts: dict, bundle: Path):
    rng = random.Random(f"{seed}-kern")
    a1, a2, a3, a4, a5, a6 = atts
    end = a6.E + 600
    decoys: dict[str, str] = {}
    # NFS stall hosts (att 2): every host of att 2 reports; first reporter and hung-task hosts are decoys
    stall = next((n, ts, c) for n, ts, c in a2.saves if n == a2.stall_step)
    t_stall = stall[1] + 30.0
    order = [h for h in a2.nodes]
    random.Random(f"{seed}-nfsorder").shuffle(order)
    roots = (a2.root, a3.root)                           # incident hosts are never made decoys
    order = [h for h in order if h not in roots] + [h for h in order if h in roots]
    first = order[0]
    hung = order[1:4]
    decoys[first] = "first host to report the VAST NFS stall in att 2 (the storage, not the host)"
    for h in hung:
        decoys[h] = "hung-task report during att 2's NFS stall: a symptom of the storage"
    facts["nfs_first"] = t_stall
    for h in HOSTS:
        boot = T0 - rng.randint(3 * 86400, 6 * 86400)
        ev: list[tuple[float, str]] = [(boot, f"Linux version {KERNEL} (buildd@lcy02-amd64-051) #17-Ubuntu SMP PREEMPT_DYNAMIC"),
                                       (boot + 21.0, f"NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  {DRIVER}  Release Build  (dvs-builder@U22-I3-H04-03-1)")]
        fm: list[tuple[float, str]] = []
        ft = random.Random(f"{seed}-fmtid-{h}").randint(1500, 4000)
        t = boot + rng.uniform(1000, 5000)
        while t < end:                                     # noise
            ev.append((t, rng.choice(["perf: interrupt took too long (2503 > 2500), lowering kernel.perf_event_max_sample_rate to 79750",
                                      "kauditd_printk_skb: 12 callbacks suppressed",
                                      "workqueue: drm_fb_helper_damage_work hogged CPU for >10000us 4 times, consider switching to WQ_UNBOUND"])))
            t += rng.uniform(3000, 20000)
        if h == a1.root:                                   # fatal SXid + Xid 45 on all 8 GPUs
            sw, link = 2, 44
            ev += [(a1.R, f"nvidia-nvswitch{sw}: SXid (PCI:{NVSW_PCI[sw]}): 24007, Fatal, Link {link} sourcetrack timeout error (First)"),
                   (a1.R, f"nvidia-nvswitch{sw}: SXid (PCI:{NVSW_PCI[sw]}): 24007, Severity 1 Engine instance {link} Sub-engine instance 00"),
                   (a1.R, f"nvidia-nvswitch{sw}: SXid (PCI:{NVSW_PCI[sw]}): 24007, Data {{0x0000002c, 0x0000002c, 0x00000000, 0x0000002c, 0x00004000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}}")]
            p = pids_of[1]
            for d in range(GPN):
                ev.append((a1.R + 1.1 + 0.01 * d, f"NVRM: Xid (PCI:0000:{BUS[d]}:00): 45, pid={p.worker[h, d]}, name=pt_main_thread, Ch 000000{8 + d:02x}"))
            fm.append((a1.R + 1.0, f"{fm_ts(a1.R + 1.0)} [ERROR] [tid {ft}] detected NVSwitch fatal error 24007 on fid 0 on NVSwitch pci bus id 0000{NVSW_PCI[sw][:-2]}.0 physical id {sw} port {link}"))
        if h == "hgx-b03":                                 # non-fatal SXid decoy (att 1)
            tt = a1.F + 0.3 * (a1.R - a1.F)
            ev.append((tt, f"nvidia-nvswitch1: SXid (PCI:{NVSW_PCI[1]}): 20009, Non-fatal, Link 04 RX Short Error Rate"))
            fm.append((tt + 0.4, f"{fm_ts(tt + 0.4)} [ERROR] [tid {ft}] detected NVSwitch non-fatal error 20009 on fid 0 on NVSwitch pci bus id 0000{NVSW_PCI[1][:-2]}.0 physical id 1 port 4"))
            decoys[h] = "non-fatal SXid 20009 (RX Short Error Rate) in att 1; training continued"
        if h == "hgx-b15":                                 # non-fatal SXid during att 6's slowdown
            s0 = next(ts for n, ts, _ in a6.steps if n == SLOW[0] + 120)
            ev.append((s0, f"nvidia-nvswitch3: SXid (PCI:{NVSW_PCI[3]}): 20009, Non-fatal, Link 17 RX Short Error Rate"))
            fm.append((s0 + 0.3, f"{fm_ts(s0 + 0.3)} [ERROR] [tid {ft}] detected NVSwitch non-fatal error 20009 on fid 0 on NVSwitch pci bus id 0000{NVSW_PCI[3][:-2]}.0 physical id 3 port 17"))
            decoys[h] = "non-fatal SXid during att 6's fabric-wide slowdown; every host was equally slow"
        if h in a2.nodes:                                  # VAST stall at att 2's save
            k = order.index(h)
            tt = t_stall + 0.35 * k + rng.uniform(0, 0.2)
            ev.append((tt, f"nfs: server {NFS_SERVER} not responding, still trying"))
            ev.append((stall[1] + stall[2] - 12.0 + 0.1 * k, f"nfs: server {NFS_SERVER} OK"))
            if h in hung:
                pid = pids_of[2].worker[h, 2]
                th = tt + 123.0 + rng.uniform(0, 3)
                ev += [(th, f"INFO: task pt_main_thread:{pid} blocked for more than 122 seconds."),
                       (th, f"      Tainted: P           OE      {KERNEL} #17-Ubuntu"),
                       (th, '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.'),
                       (th, f"task:pt_main_thread state:D stack:0     pid:{pid} tgid:{pid} ppid:{pid - 11} flags:0x00004002"),
                       (th, "Call Trace:"), (th, " <TASK>"), (th, " __schedule+0x27c/0x6b0"), (th, " schedule+0x33/0x110"),
                       (th, " rpc_wait_bit_killable+0x11/0x70 [sunrpc]"), (th, " __wait_on_bit+0x42/0x110"),
                       (th, " nfs_wait_on_request+0x2a/0x40 [nfs]"), (th, " nfs_file_write+0x1f5/0x2f0 [nfs]"),
                       (th, " vfs_write+0x2a5/0x480"), (th, " ksys_write+0x73/0x100"), (th, " </TASK>")]
        if h == a2.root:                                   # soft lockup
            pid = pids_of[2].worker[h, 0] + 31
            cpu = 37
            for j in range(22):
                tt = a2.R + 22.6 + 28.0 * j
                if tt > a2.E + 60:
                    break
                ev += [(tt, f"watchdog: BUG: soft lockup - CPU#{cpu} stuck for {22 + 28 * j}s! [pt_main_thread:{pid}]"),
                       (tt, "Modules linked in: nfsv3 nfs_acl rpcsec_gss_krb5 nfs lockd grace sunrpc nvidia_uvm(POE) nvidia_peermem(POE) nvidia_drm(POE) nvidia_modeset(POE) nvidia(POE) mlx5_ib ib_uverbs mlx5_core"),
                       (tt, f"CPU: {cpu} PID: {pid} Comm: pt_main_thread Tainted: P           OEL     {KERNEL} #17-Ubuntu"),
                       (tt, "Hardware name: Supermicro SYS-821GE-TNHR/X13DEG-OAD, BIOS 2.1 04/12/2024"),
                       (tt, "RIP: 0010:native_queued_spin_lock_slowpath+0x7f/0x2e0")]
                if j == 1:
                    ev += [(tt + 3.1, "rcu: INFO: rcu_preempt self-detected stall on CPU"),
                           (tt + 3.1, f"rcu: \t{cpu}-....: (14999 ticks this GP) idle=4e4c/1/0x4000000000000000 softirq=1811233/1811233 fqs=6212")]
            facts["lockup_first"] = a2.R + 22.6
        if h == a3.root:                                   # silent death, reboot ~20 min later
            ev = [(t, m) for t, m in ev if t < a3.R - 1]
            rb = a3.E + 900 + rng.randint(0, 120)
            ev += [(rb, f"Linux version {KERNEL} (buildd@lcy02-amd64-051) #17-Ubuntu SMP PREEMPT_DYNAMIC"),
                   (rb + 21.0, f"NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  {DRIVER}  Release Build  (dvs-builder@U22-I3-H04-03-1)")]
        if h == "hgx-b09":                                 # corrected ECC (host DIMM), att 4
            tt = a4.F + 0.55 * (a4.T - a4.F)
            ev += [(tt, "mce: [Hardware Error]: Machine check events logged"),
                   (tt, "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#2_Chan#0_DIMM#0 (channel:0 slot:0 page:0x3f11a2 "
                        "offset:0x440 grain:32 syndrome:0x0 -  err_code:0101:0090 socket:0 imc:2 rank:0 bg:1 ba:3 row:1c2b col:3f0)")]
            decoys[h] = "one corrected DIMM ECC error in att 4; training continued to the time limit"
        ev.sort(key=lambda x: x[0])
        odd = int(h[-2:]) % 2 == 1
        lines = []
        for t, m in ev:
            up = t - boot if t >= boot else 0.0
            if h == a3.root and t >= a3.E:                 # uptime since the reboot
                up = t - (a3.E + 900)
            if odd:
                lines.append(f"{rsys(t)} {h} kernel: [{up:12.6f}] {m}")
            else:
                lines.append(f"{short_iso(t)} {h} kernel: {m}")
        name = "kern.log" if odd else "journal-kernel.log"
        write_file(bundle / "nodes" / h / name, ("\n".join(lines) + "\n").encode())
        if fm or h in INIT[:4]:
            write_file(bundle / "nodes" / h / "fabricmanager.log",
                       ("\n".join(m for _, m in sorted(fm)) + ("\n" if fm else "")).encode())
    decoys["hgx-b12"] = "NCCL WARN 'Could not find real path of mlx5_bond_0' at init of att 1; harmless"
    decoys["hgx-b13"] = "rank 97's dataloader worker traceback in att 4, retried successfully"
    idx = a3.nodes.index(a3.root)
    for h in (a3.nodes[idx - 1], a3.nodes[idx + 1]):
        decoys[h] = "ring neighbour of the dead hgx-b05: its NET/IB errors name hgx-b05's address (symptom)"
    return decoys


# ----------------------------------------------------------------------------- scheduler
def scheduler_files(atts: list[Attempt], bundle: Path, seed: int):
    rng = random.Random(f"{seed}-sched")
    L = Sink()

    def add(t, msg):
        L.add(t, f"{ctld_ts(t)} {msg}")
    rows = []
    hdr = "JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"
    submit_of = {}
    for a in atts:
        hl = hostlist(a.nodes)
        cpus = 192 * len(a.nodes)
        if a.restart == 0:
            sub = a.S - rng.randint(3, 40)
            submit_of[a.job] = sub
            add(sub + 0.2, f"_slurm_rpc_submit_batch_job: JobId={a.job} InitPrio=4294901{rng.randint(100, 999)} usec={rng.randint(300, 900)}")
        sub = submit_of[a.job]
        add(a.S + 0.02, f"sched: Allocate JobId={a.job} NodeList={hl} #CPUs={cpus} Partition=h100")
        end = a.E + rng.uniform(0.01, 0.4)
        if a.k == 1:
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
            add(end + 0.01, f"_job_complete: JobId={a.job} done")
            add(a.E + 420.3, f"update_node: node {a.root} reason set to: SXid 24007 fatal nvswitch2, FM reset")
            add(a.E + 420.31, f"update_node: node {a.root} state set to DRAINED")
            st, ec = "FAILED", "1:0"
        elif a.k == 2:
            add(a.E - 20.5, f"error: slurmd error running JobId={a.job} on node(s)={a.root}: Kill task failed")
            add(a.E - 20.4, f"drain_nodes: node {a.root} state set to DRAIN")
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
            add(end + 0.01, f"_job_complete: JobId={a.job} done")
            st, ec = "FAILED", "1:0"
        elif a.k == 3:
            add(a.R + 212.4, f"error: Nodes {a.root} not responding")
            add(a.E - 0.6, f"error: Nodes {a.root} not responding, setting DOWN")
            add(a.E - 0.5, f"requeue JobId={a.job} due to failure of node {a.root}")
            add(a.E - 0.4, f"Killing JobId={a.job} on failed node {a.root}")
            add(end, f"_job_complete: JobId={a.job} WTERMSIG 9")
            add(end + 0.01, f"_job_complete: JobId={a.job} done")
            st, ec = "NODE_FAIL", "0:0"
        elif a.k == 4:
            add(a.T + 0.002, f"Time limit exhausted for JobId={a.job}")
            add(end, f"_job_complete: JobId={a.job} WTERMSIG 15")
            add(end + 0.01, f"_job_complete: JobId={a.job} done")
            st, ec = "TIMEOUT", "0:0"
        elif a.k == 5:
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
            add(end + 0.01, f"_job_complete: JobId={a.job} done")
            st, ec = "FAILED", "1:0"
        else:
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 0")
            add(end + 0.01, f"_job_complete: JobId={a.job} done")
            st, ec = "COMPLETED", "0:0"
        sub_shown = sub if a.restart == 0 else atts[a.k - 2].E
        rows.append(f"{a.job}|{RUN}|h100|lm-pretrain|{cpus}|{st}|{ec}|{slurm_ts(sub_shown)}|{slurm_ts(a.S)}|"
                    f"{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|{len(a.nodes)}|{hl}")
        sst = {"FAILED": "CANCELLED", "NODE_FAIL": "CANCELLED", "TIMEOUT": "CANCELLED", "COMPLETED": "COMPLETED"}[st]
        rows.append(f"{a.job}.batch|batch||lm-pretrain|192|{'FAILED' if st == 'FAILED' else sst}|{ec if st != 'NODE_FAIL' else '0:15'}|"
                    f"{slurm_ts(a.S)}|{slurm_ts(a.S)}|{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|1|{a.nodes[0]}")
        rows.append(f"{a.job}.0|torchrun||lm-pretrain|{cpus}|{sst}|{'0:0' if st == 'COMPLETED' else '0:15'}|"
                    f"{slurm_ts(a.S)}|{slurm_ts(a.S)}|{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|{len(a.nodes)}|{hl}")
    write_file(bundle / "scheduler" / "slurmctld.log", L.render())
    write_file(bundle / "scheduler" / "sacct.txt", ("\n".join([hdr] + rows) + "\n").encode())


def inventory_toml() -> str:
    return f"""# lumen neocloud, cluster lm-1
[providers.{PROVIDER}]
usd_per_gpu_hour = 2.29
support = "noc@lumen.example; SLA credits for node faults over 1 h"

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = 8
interconnect = "InfiniBand NDR 8x400G, NVSwitch HGX baseboard"
nodes = "{hostlist(HOSTS)}"
"""


def run_toml() -> str:
    return f"""# {RUN}: 70B dense GPT, Megatron-LM + Transformer Engine, TP={TP} PP={PP} DP={DP}, pyxis containers
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.3e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --nodes=16 --gpus-per-node=8 --requeue --open-mode=append --output=logs/slurm-%j.out train.sbatch"
"""


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts = build(seed)
    facts: dict = {}
    write_file(bundle / "inventory.toml", inventory_toml().encode())
    rdir = bundle / "runs" / RUN
    write_file(rdir / "run.toml", run_toml().encode())
    pids_of = {}
    outs: dict[int, bytes] = {}
    for a in atts:
        pids = Pids(seed, a)
        pids_of[a.k] = pids
        data = train_log(a, pids, seed, facts).render()
        outs[a.job] = outs.get(a.job, b"") + data          # --open-mode=append: one file per job
        for h in a.nodes:
            if a.k == 3 and h == a.root:
                body = nccl_log(a, h, pids, seed)              # the dead host's file stops at init
            else:
                body = nccl_log(a, h, pids, seed)
            write_file(rdir / "logs" / "nccl" / f"{a.job}.{a.restart}" / f"{h}.log", body)
        if a.k == 6:
            for r, body in rank_records(a, seed).items():
                gz = r % 2 == 1
                write_file(rdir / "logs" / f"steps-{a.job}" / f"rank-{r:05d}.jsonl{'.gz' if gz else ''}", body, gz=gz)
    for job, data in outs.items():
        write_file(rdir / "logs" / f"slurm-{job}.out", data)
    decoys = kernel_logs(atts, pids_of, seed, facts, bundle)
    scheduler_files(atts, bundle, seed)
    cats, total, per = ledger(atts)
    a1, a2, a3, a4, a5, a6 = atts
    incs = []
    for j, a in enumerate([a1, a2, a3, a4, a5]):
        nxt = atts[a.k]
        incs.append({"attempt": a.k, "attempts": [a.k], "slurm_job": a.job, "failure_mode": a.mode,
                     "blame": "user" if a.mode in ("time_limit", "cuda_oom") else "provider",
                     "host": a.root, "cluster": CLUSTER, "provider": PROVIDER,
                     "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E), "next_start_ts": iso_z(nxt.S),
                     "last_ckpt_step": a.last_ckpt, "failed_at_step": a.steps[-1][0] if a.steps else a.load,
                     "gpu_hours": per[j], "gpu_hours_lost": round(sum(per[j].values()), 4)})
    incs[0]["gpu_index"] = None
    incs[0]["note"] = "fatal SXid 24007 on NVSwitch 2: all 8 GPUs of the node, not one GPU"
    incs[0]["symptom_first_ts"] = iso_z(facts["sym1"])
    incs[1]["symptom_first_ts"] = iso_z(facts["sym2"])
    incs[1]["kernel_first_ts"] = iso_z(facts["lockup_first"])
    incs[2]["symptom_first_ts"] = iso_z(facts["sym3"])
    stall = next((n, ts, c) for n, ts, c in a2.saves if n == a2.stall_step)
    stall_inc = {"attempt": 2, "attempts": [2], "kind": "checkpoint_stall", "failure_mode": None, "host": None,
                 "cluster": CLUSTER, "provider": PROVIDER, "root_ts": iso_z(stall[1]), "save_step": stall[0],
                 "save_s": stall[2], "note": "VAST NFS stall seen by every host during the save; the save completed; "
                 "its whole duration is ledger checkpoint; no attempt lost", "gpu_hours_lost": 0.0}
    incidents = incs[:1] + [stall_inc] + incs[1:]
    for i, inc in enumerate(incidents, 1):
        inc["id"] = i
    g = GPUS / 3600.0
    slow_excess = sum(d - BASE for n, _, d in a6.steps if in_slow(a6, n)) * g
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "match_on_attempt": True,
        "tokens_per_step": TOKENS_PER_STEP, "flops_per_token": FLOPS_PER_TOKEN,
        "baseline_step_s": BASE, "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE * GPUS * PEAK), 4),
        "first_start_ts": iso_z(a1.S), "last_end_ts": iso_z(a6.E),
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "restart": a.restart, "nodes": hostlist(a.nodes),
                      "start_ts": iso_z(a.S), "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E),
                      "loaded_step": a.load, "last_step": a.steps[-1][0] if a.steps else a.load,
                      "saves": [n for n, _, _ in a.saves], "end": a.kind} for a in atts],
        "incidents": incidents,
        "slowdown": {"attempt": 6, "from_step": SLOW[0], "to_step": SLOW[1], "factor": SLOW_FACTOR,
                     "excess_gpu_hours": round(slow_excess, 4), "host": None,
                     "note": "fabric-wide: every rank equally slower (comm_s); ledger slowdown, no incident, no host"},
        "forbidden_incidents": [
            {"kind": "straggler", "attempts": [6], "reason": "att 6's slowdown hits every rank equally: no straggler host"},
            {"failure_mode": "gpu_throttle", "attempts": [6], "reason": "no throttling: the fabric was slow for everyone"},
            {"failure_mode": "nvlink_error", "attempts": [6], "reason": "the non-fatal SXid on hgx-b15 is not the slowdown"},
            {"failure_mode": "filesystem_io", "attempts": [2], "host": a2.root,
             "reason": "hgx-b11's hang is its kernel soft lockup, not the earlier, recovered NFS stall"},
        ],
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys, "hardware_modes": HW_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incs
                                                                    if i["blame"] == "provider") + slow_excess, 4)},
        "notes": "Times UTC. host null matches any host. Ledger conventions: see the docstring of nvswitch_weka.py.",
    }
    write_file(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261205)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    files = [p for p in (out / "bundle").rglob("*") if p.is_file()]
    print(f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB) and "
          f"{out / 'truth.json'}; total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
