#!/usr/bin/env python3
"""Independent campaign "gpu_health_twoprov": GPU health faults across two providers (written without
reading clusterlab's analysis code; shapes follow campaign1.py / campaign2.py).

Writes, under --out DIR:
  DIR/bundle/inventory.toml                          two providers, one cluster each (different host names)
  DIR/bundle/runs/gh-40b/run.toml
  DIR/bundle/runs/gh-40b/attempt-<k>/slurm-<job>.out[.gz]   sbatch output: srun + DeepSpeed + PyTorch
  DIR/bundle/runs/gh-40b/attempt-<k>/steps/rank-NNNNN.jsonl[.gz]  per-rank step records (attempts 2 and 7,
                                                     48 ranks of 6 hosts, around the slow window)
  DIR/bundle/nodes/<host>/kern.log | dmesg.log       journalctl -k -o short-iso (provider cobalt) /
                                                     dmesg -T (provider ferrous)
  DIR/bundle/nodes/<host>/health/*.txt               nvidia-smi -q, nvidia-smi nvlink -e, dcgmi health -c,
                                                     dcgmi diag -r 3 (prolog/epilog), lspci -vv snapshots
  DIR/bundle/scheduler/{slurmctld.log, sacct.txt}    one Slurm controller, partitions "cobalt" and "ferrous"
  DIR/truth.json
Usage: gpu_health_twoprov.py --out DIR [--seed N]    (standard library only, deterministic per seed)

Scenario (run "gh-40b", ~40B dense decoder, DeepSpeed ZeRO-1, 192 GPUs = 24 nodes x 8 H100-SXM, ~6 days,
UTC clocks). Provider cobalt (cluster cb-w, hosts cbw-gpu001..026, partition "cobalt") and provider
ferrous (cluster fe-2, hosts fe2n01..26, partition "ferrous"):
  attempt 1  cobalt   NVLink: CRC counters in `nvidia-smi nvlink -e` climb on cbw-gpu009 GPU 2 for
                      hours, the last minutes of steps slow down, then Xid 74 (NVLink fatal error); the
                      collective hangs; 30 min later the NCCL watchdog fires on the other ranks, the job
                      FAILS                                                      [nvlink_error, cbw-gpu009]
  attempt 2  cobalt   (cbw-gpu009 drained, spare in) cbw-gpu014 GPU 5 runs hot: nvidia-smi -q shows
                      HW Slowdown / HW Thermal Slowdown Active, 9 % slower compute on that rank for ~3 h
                      (per-rank timings), whole job slower                       [gpu_throttle, cbw-gpu014]
                      then the same GPU falls off the bus (Xid 79), the node stops answering, Slurm
                      NODE_FAIL                                               [gpu_fell_off_bus, cbw-gpu014]
  attempt 3  cobalt   Xid 94 (contained ECC) on cbw-gpu020 GPU 1: the rank raises "CUDA error:
                      uncorrectable ECC error encountered", the step is cancelled, job FAILS. The GPU is
                      reset and cbw-gpu020 runs attempt 4 without a fault       [gpu_memory_ecc, cbw-gpu020]
  attempt 4  cobalt   the user scancels the job (moving to the other provider)  [manual_stop, host null]
  attempt 5  ferrous  Xid 95 (uncontained ECC, RST: Yes) on fe2n07 GPU 6: the app dies, the node is
                      drained and rebooted                                          [gpu_memory_ecc, fe2n07]
  attempt 6  ferrous  (fe2n07 out, spare in) preempted by a higher-priority job    [preemption, host null]
  attempt 7  ferrous  completes. For ~1.7 h fe2n12 GPU 3's PCIe link runs at 16GT/s x8 (AER corrected
                      errors, lspci LnkSta "(downgraded)"): that rank 8 % slower compute, job ~7 % slower
                                                         [straggler, fe2n12; any failure mode]
                      After the job COMPLETED, the epilog's `dcgmi diag -r 3` fails on fe2n19 GPU 4 and
                      Slurm drains it: not a fault of the run (decoy, no incident).
  Decoys: `dcgmi health -c` Warning (PCIe replay rate) on cbw-gpu004, training continues; DRAM correctable
  (single-bit) ECC counts rising in nvidia-smi -q on cbw-gpu011; Xid 13 on fe2n15 mid attempt 7 that
  the job steps past; "Clocks Event Reasons / Idle : Active" snapshots of idle spares; fe2n25 (ferrous,
  not in the job, another user's prolog) fails dcgmi diag during attempt 2; the ranks that print NCCL
  watchdog timeouts in attempt 1 (symptoms).

Ledger (truth expected_ledger, GPU-hours = 192 x seconds / 3600), conventions of campaign1.py:
  startup    = attempt start (sacct Start) -> start of its first training step
  productive = kept steps (step <= last durable save of an ended attempt; all steps of the completed
               attempt); inside a slow window only the baseline step time counts
  straggler  = step time above the baseline inside a slow window, kept steps only (both windows have
               per-rank timings that pin one host)
  checkpoint = durations of completed saves, plus the tail after the final save
  recompute  = end of the last durable save (or first step start) -> root event
  hang       = root event -> attempt exit (sacct End). Root events: the Xid (74, 79, 94, 95) time, the
               cancel request, the preemption kill
  restart    = attempt exit -> next attempt start
  slowdown = data_stall = idle = 0

Formats (public material found with the search tools; text written anew):
  * DeepSpeed engine logs: "[2023-07-25 21:03:21,037] [INFO] [logging.py:96:log_dist] [Rank 0] step=35,
    skipped=0, lr=[...], mom=[[0.9, 0.95], ...]", "[timer.py:215:stop] epoch=0/micro_step=34/global_step=34,
    RunningAvgSamplesPerSec=..., CurrSamplesPerSec=..., MemAllocated=...GB, MaxMemAllocated=...GB",
    "[Rank 0] rank=0 time (ms) | forward: ... | backward: ... | backward_inner: ... | backward_allreduce:
    ... | step: ..." (deepspeedai/DeepSpeed #3742, #1825, #1436, PR #849); checkpoint engine
    "[Torch] Checkpoint global_stepN is about to be saved!", "[Torch] Saving ...", "[Torch] Saved ...",
    "[Torch] Checkpoint global_stepN is ready now!", "[Torch] Loading checkpoint from ...",
    "[Torch] Loaded checkpoint from ..." (DeepSpeed torch_checkpoint_engine.py log strings).
  * NVRM Xid: 74 "NVLink: fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)" (NVIDIA
    docs excerpt, aws samples); 79 "GPU has fallen off the bus." (campaign1); 94 "Contained: CE User
    Channel (0x9). RST: No, D-RST: No" and 95 "Uncontained: LTC TAG (0x2,0x1). RST: Yes, D-RST: No"
    (open-gpu-kernel-modules source comments); 13 Graphics SM Warp Exception (campaign1).
  * nvidia-smi nvlink -e: "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)" + "\t Link N: Replay Errors: 0",
    "Recovery Errors", "CRC Errors" (stas00/ml-engineering network notes, public test fixtures).
  * nvidia-smi -q: "==============NVSMI LOG==============", "Timestamp : ...", "Clocks Event Reasons"
    (older drivers "Clocks Throttle Reasons") with "Idle", "SW Power Cap", "HW Slowdown", "HW Thermal
    Slowdown", "HW Power Brake Slowdown", "Sync Boost", "SW Thermal Slowdown" : Active/Not Active
    (kubeflow/kubeflow #68), "ECC Errors / Volatile / DRAM Correctable" (H100 driver 535+ layout).
  * dcgmi diag -r 3 table ("Successfully ran diagnostic for group.", "| Diagnostic | Result |", Metadata /
    Deployment / Integration / Hardware / Stress sections, "Fail - GPU 3", "Warning - GPU 3"):
    NVIDIA/DCGM #55, #145, IBM/autopilot #68, NVIDIA/go-dcgm #52; dcgmi health -c tree ("| Overall Health
    | Warning", "| -> 0 | Warning", "|    -> Errors", "|       -> PCIe system | Warning"): DCGM's own
    dcgmi health unit test; "Detected more than 8 PCIe replays per minute for GPU 5 : 12" (DCGM error
    string DCGM_FR_PCI_REPLAY_RATE).
  * lspci -vv "LnkCap: Port #0, Speed 32GT/s, Width x16, ..." / "LnkSta: Speed 16GT/s (downgraded), Width x8
    (downgraded)" (many public issue pastes); Linux AER "pcieport 0000:..: AER: Corrected error received:
    ...", "PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)", "device [10de:2330]
    error status/mask=00000001/0000e000", "[ 0] RxErr" (drivers/pci/pcie/aer.c).
  * PyTorch ProcessGroupNCCL watchdog lines, CUDA ECC traceback, srun / slurmstepd / slurmctld / sacct
    lines: as in campaign1.py / campaign2.py (sources cited there).
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

RUN = "gh-40b"
GPN = 8
NNODES = 24
GPUS = NNODES * GPN                          # 192
GBS, SEQ = 512, 4096
TOKENS_PER_STEP = GBS * SEQ                  # 2,097,152
FLOPS_PER_TOKEN = 2.64e11                    # 6 * 40e9 + attention
PEAK = 989.4e12
BASE_STEP = 6.900
JITTER = 0.0006
BASE_COMPUTE, BASE_DATA = 6.150, 0.060
SAVE_EVERY = 500
LOG_EVERY = 10
TRAIN_ITERS = 62000
WATCHDOG_S = 1800
T0 = datetime(2026, 10, 5, 6, 0, 0, tzinfo=UTC).timestamp()
DRIVER = "550.90.07"
CKPT = "/shared/ckpt/gh-40b"
USER_UID = 2207

CB = [f"cbw-gpu{i:03d}" for i in range(1, 27)]
FE = [f"fe2n{i:02d}" for i in range(1, 27)]
CLUSTER_OF = {**{h: "cb-w" for h in CB}, **{h: "fe-2" for h in FE}}
PROVIDER_OF = {"cb-w": "cobalt", "fe-2": "ferrous"}
PARTITION = {"cb-w": "cobalt", "fe-2": "ferrous"}
BUSIDS = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]

NVL = ("cbw-gpu009", 2)
HOT = ("cbw-gpu014", 5)
X94 = ("cbw-gpu020", 1)
X95 = ("fe2n07", 6)
PCI = ("fe2n12", 3)
EPILOG = ("fe2n19", 4)
D_HEALTH, D_SBE, D_XID13, D_OTHER = "cbw-gpu004", "cbw-gpu011", "fe2n15", "fe2n25"
THROTTLE_FACTOR, PCIE_FACTOR = 1.09, 1.07   # whole-step factor inside the slow windows

HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption",
                  "gpu_throttle"]


# ----------------------------------------------------------------------------- time formats
def _split(t: float) -> tuple[datetime, int]:
    us_total = int(round(t * 1_000_000))
    s, us = divmod(us_total, 1_000_000)
    return datetime.fromtimestamp(s, UTC), us


def iso_z(t: float) -> str:
    d, us = _split(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{us // 1000:03d}Z"


def date_cmd(t: float) -> str:
    d, _ = _split(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def ds_ts(t: float) -> str:                          # DeepSpeed logger: [YYYY-mm-dd HH:MM:SS,mmm]
    d, us = _split(t)
    return f"[{d:%Y-%m-%d %H:%M:%S},{us // 1000:03d}]"


def glog_c10(t: float, level: str, rng: random.Random) -> str:
    d, us = _split(t)
    return f"{level}{d:%m%d} {d:%H:%M:%S}.{us:06d}{rng.randint(0, 999):03d}"


def short_iso(t: float) -> str:
    d, _ = _split(t)
    return f"{d:%Y-%m-%dT%H:%M:%S}+00:00"


def dmesg_T(t: float) -> str:
    d, _ = _split(t)
    return f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}]"


def smi_ts(t: float) -> str:                         # nvidia-smi -q "Timestamp" (ctime form)
    d, _ = _split(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}"


def slurm_ts(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%dT%H:%M:%S")


def ctld_ts(t: float) -> str:
    d, us = _split(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{us // 1000:03d}]"


def elapsed_str(sec: float) -> str:
    sec = int(round(sec))
    d, rem = divmod(sec, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts: list[str]) -> str:
    prefix = hosts[0].rstrip("0123456789")
    width = len(hosts[0]) - len(prefix)
    nums = sorted(int(h[len(prefix):]) for h in hosts)
    ranges, start, prev = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        ranges.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
        if n is not None:
            start = prev = n
    return f"{prefix}[{','.join(ranges)}]" if len(nums) > 1 else hosts[0]


class LineSink:
    def __init__(self) -> None:
        self.items: list[tuple[float, int, str]] = []

    def add(self, t: float, line: str) -> None:
        self.items.append((t, len(self.items), line))

    def extend(self, t: float, lines) -> None:
        for ln in lines:
            self.add(t, ln)

    def render(self) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
        return ("\n".join(x[2] for x in self.items) + "\n").encode()


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


def in_window(a: Attempt, t: float) -> bool:
    return a.window is not None and a.window[0] <= t < a.window[1]


def simulate(a: Attempt, rng: random.Random) -> bool:
    a.steps, a.saves = [], []
    t, n = a.F, a.load
    stop_at = a.F + a.run_h * 3600 if a.run_h else None
    a.window = None
    if a.slow_window is not None:
        a.window = (a.F + a.slow_window[0] * 3600, a.F + a.slow_window[1] * 3600)
    while True:
        if a.kind == "complete" and n >= TRAIN_ITERS:
            break
        n1 = n + 1
        f = a.slow_factor if in_window(a, t) else 1.0
        if a.kind == "nvlink" and stop_at is not None and t > stop_at - 540:
            f = 1.035                              # CRC retries: the last minutes before the hang slow down
        dur = BASE_STEP * f * (1.0 + rng.uniform(-JITTER, JITTER))
        if stop_at is not None and t + dur > stop_at:
            if a.kind in ("nvlink", "xid79", "xid94", "xid95"):
                if a.saves and stop_at - 600 < a.saves[-1][1] + a.saves[-1][2]:
                    return False                   # keep the root clear of the last save
                a.R = float(math.floor(t + 0.5 * dur))
            else:                                  # cancel / preempt between steps
                if a.saves and stop_at < a.saves[-1][1] + a.saves[-1][2] + 60:
                    return False
                a.R = float(math.floor(t + 0.4 * dur))
            a.E = a.R + a.tail
            return True
        a.steps.append((n1, t, dur))
        t += dur
        n = n1
        if n % SAVE_EVERY == 0:
            c = round(rng.uniform(*a.save_s), 2)
            if stop_at is not None and t + c > stop_at - 120:
                return False
            a.saves.append((n, t, c))
            t += c
    a.E = float(math.ceil(t + 3.0))
    return True


def build_timeline(seed: int) -> list[Attempt]:
    rng = random.Random(f"{seed}-timeline")
    cb_nodes = CB[:24]
    a2n = [h for h in cb_nodes if h != NVL[0]] + [CB[24]]
    a3n = [h for h in a2n if h != HOT[0]] + [CB[25]]
    fe_nodes = FE[:24]
    a6n = [h for h in fe_nodes if h != X95[0]] + [FE[25]]       # spare fe2n26 joins

    def j() -> int:
        return rng.randint(-300, 300)
    specs = [
        dict(k=1, job=730115, cluster="cb-w", nodes=cb_nodes, kind="nvlink", mode="nvlink_error", root=NVL,
             run_h=14.2 + rng.uniform(0, 0.6), tail=WATCHDOG_S + 48, startup=410 + j() // 10, gap=2400 + j(),
             slow_window=None, slow_factor=1.0, save_s=(42.0, 55.0)),
        dict(k=2, job=730188, cluster="cb-w", nodes=a2n, kind="xid79", mode="gpu_fell_off_bus", root=HOT,
             run_h=13.4 + rng.uniform(0, 0.5), tail=615, startup=380 + j() // 10, gap=1900 + j(),
             slow_window=(10.1, 99.0), slow_factor=THROTTLE_FACTOR, save_s=(42.0, 55.0)),
        dict(k=3, job=730240, cluster="cb-w", nodes=a3n, kind="xid94", mode="gpu_memory_ecc", root=X94,
             run_h=9.1 + rng.uniform(0, 0.5), tail=41, startup=395 + j() // 10, gap=1300 + j(),
             slow_window=None, slow_factor=1.0, save_s=(42.0, 55.0)),
        dict(k=4, job=730291, cluster="cb-w", nodes=a3n, kind="cancel", mode="manual_stop", root=None,
             run_h=15.7 + rng.uniform(0, 0.6), tail=3, startup=390 + j() // 10, gap=11000 + j(),
             slow_window=None, slow_factor=1.0, save_s=(42.0, 55.0)),
        dict(k=5, job=730352, cluster="fe-2", nodes=fe_nodes, kind="xid95", mode="gpu_memory_ecc", root=X95,
             run_h=11.8 + rng.uniform(0, 0.5), tail=37, startup=520 + j() // 10, gap=2700 + j(),
             slow_window=None, slow_factor=1.0, save_s=(60.0, 78.0)),
        dict(k=6, job=730417, cluster="fe-2", nodes=a6n, kind="preempt", mode="preemption", root=None,
             run_h=17.3 + rng.uniform(0, 0.6), tail=2, startup=505 + j() // 10, gap=3100 + j(),
             slow_window=None, slow_factor=1.0, save_s=(60.0, 78.0)),
        dict(k=7, job=730466, cluster="fe-2", nodes=a6n, kind="complete", mode=None, root=None,
             run_h=None, tail=0, startup=515 + j() // 10, gap=None,
             slow_window=(6.3, 8.0), slow_factor=PCIE_FACTOR, save_s=(60.0, 78.0)),
    ]
    attempts = [Attempt(**s) for s in specs]
    t, load = T0, 0
    for a in attempts:
        a.load = load
        a.S = float(t)
        for tries in range(200):
            a.F = a.S + a.startup
            if simulate(a, random.Random(f"{seed}-steps-{a.k}-{tries}")):
                break
            a.run_h += 0.07
        else:
            raise RuntimeError(f"attempt {a.k} could not be placed")
        ck = [n for n, _, _ in a.saves]
        a.last_ckpt = ck[-1] if ck else a.load
        load = a.last_ckpt
        if a.gap is not None:
            t = a.E + a.gap
    return attempts


def ledger(attempts: list[Attempt]):
    cats = dict.fromkeys(["productive", "straggler", "checkpoint", "data_stall", "recompute",
                          "hang", "restart", "startup", "idle"], 0.0)
    per = []
    slow_excess = {}
    for i, a in enumerate(attempts):
        cats["startup"] += a.F - a.S
        kept = a.last_ckpt if a.kind != "complete" else 10 ** 9
        exc = 0.0
        for n, ts, d in a.steps:
            if n > kept:
                continue
            if in_window(a, ts):
                cats["productive"] += BASE_STEP
                cats["straggler"] += d - BASE_STEP
                exc += d - BASE_STEP
            else:
                cats["productive"] += d
        slow_excess[a.k] = exc
        for _, _, c in a.saves:
            cats["checkpoint"] += c
        if a.kind == "complete":
            cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        base = (a.saves[-1][1] + a.saves[-1][2]) if a.saves else a.F
        nxt = attempts[i + 1]
        d = dict(hang=a.E - a.R, recompute=a.R - base, restart=nxt.S - a.E, startup=nxt.F - nxt.S)
        for k in ("hang", "recompute", "restart"):
            cats[k] += d[k]
        per.append(d)
    total = attempts[-1].E - attempts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per], {k: v * g for k, v in slow_excess.items()})


# ----------------------------------------------------------------------------- fleet facts
class Fleet:
    def __init__(self, seed: int):
        rng = random.Random(f"{seed}-fleet")
        self.uuid = {}
        for h in CB + FE:
            for g in range(GPN):
                p = [rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16), rng.getrandbits(16),
                     rng.getrandbits(48)]
                self.uuid[h, g] = f"GPU-{p[0]:08x}-{p[1]:04x}-{p[2]:04x}-{p[3]:04x}-{p[4]:012x}"
        self.serial = {(h, g): str(1654023000000 + rng.randint(0, 999999)) for h in CB + FE for g in range(GPN)}
        self.boot = {h: T0 - rng.uniform(3, 40) * 86400 for h in CB + FE}


def pci_of(g: int) -> str:
    return f"0000:{BUSIDS[g]}:00"


def rank_of(a: Attempt, host: str, g: int) -> int:
    return a.nodes.index(host) * GPN + g


def lr_at(n: int) -> float:
    if n < 2000:
        return 1.5e-4 * n / 2000
    return 1.5e-5 + 0.5 * (1.5e-4 - 1.5e-5) * (1 + math.cos(math.pi * min(1.0, n / TRAIN_ITERS)))


# ----------------------------------------------------------------------------- job log
def ds(t: float, where: str, msg: str, level: str = "INFO") -> str:
    return f"{ds_ts(t)} [{level}] [{where}] {msg}"


def train_log(a: Attempt, seed: int, info: dict) -> bytes:
    rng = random.Random(f"{seed}-log-{a.k}")
    L = LineSink()
    S, F = a.S, a.F
    L.add(S, f"START TIME: {date_cmd(S)}")
    L.add(S + 0.1, f"SLURM_JOB_ID={a.job} SLURM_JOB_NODELIST={hostlist(a.nodes)} "
                   f"SLURM_JOB_PARTITION={PARTITION[a.cluster]}")
    t = S + 40
    L.add(t, ds(t, "real_accelerator.py:203:get_accelerator", "Setting ds_accelerator to cuda (auto detect)"))
    L.add(t + 6, ds(t + 6, "comm.py:652:init_distributed", "cdb=None"))
    L.add(t + 6.1, ds(t + 6.1, "comm.py:683:init_distributed",
                      "Initializing TorchBackend in DeepSpeed with backend nccl"))
    L.add(t + 30, ds(t + 30, "logging.py:96:log_dist",
                     "[Rank 0] DeepSpeed info: version=0.14.4, git-hash=unknown, git-branch=unknown"))
    L.add(t + 31, ds(t + 31, "logging.py:96:log_dist", "[Rank 0] DeepSpeed Flops Profiler Enabled: False"))
    L.add(t + 40, ds(t + 40, "logging.py:96:log_dist", "[Rank 0] Creating BF16 optimizer"))
    L.add(t + 55, ds(t + 55, "utils.py:782:see_memory_usage", "begin bf16_optimizer"))
    L.add(t + 70, ds(t + 70, "config.py:1000:print", "DeepSpeedEngine configuration:"))
    L.add(t + 70, ds(t + 70, "config.py:1004:print", f"  steps_per_print .............. {LOG_EVERY}"))
    L.add(t + 70, ds(t + 70, "config.py:1004:print", f"  train_batch_size ............. {GBS}"))
    L.add(t + 70, ds(t + 70, "config.py:1004:print", "  wall_clock_breakdown ......... True"))
    if a.load:
        p = f"{CKPT}/global_step{a.load}/mp_rank_00_model_states.pt"
        tl = F - 60
        L.add(tl, ds(tl, "torch_checkpoint_engine.py:27:load", f"[Torch] Loading checkpoint from {p}..."))
        L.add(F - 3, ds(F - 3, "torch_checkpoint_engine.py:29:load", f"[Torch] Loaded checkpoint from {p}."))
        L.add(F - 2, ds(F - 2, "engine.py:3063:_load_checkpoint",
                         f"Loading {GPUS} zero partition checkpoints for rank 0"))
    else:
        L.add(F - 5, f"WARNING: no checkpoint found in {CKPT}, training from scratch")
    samples = GBS / BASE_STEP
    for _j, (n, ts, dur) in enumerate(a.steps):
        if n % LOG_EVERY:
            continue
        end = ts + dur
        cur = GBS / dur
        L.add(end, ds(end, "logging.py:96:log_dist",
                      f"[Rank 0] step={n}, skipped=0, lr=[{lr_at(n)}], mom=[(0.9, 0.95)]"))
        L.add(end + 0.0003, ds(end + 0.0003, "timer.py:260:stop",
                               f"epoch=0/micro_step={n * 8}/global_step={n}, RunningAvgSamplesPerSec={samples:.6f}, "
                               f"CurrSamplesPerSec={cur:.6f}, MemAllocated=38.41GB, MaxMemAllocated=61.07GB"))
        fw = dur * 0.31 * 1000
        bw = dur * 0.58 * 1000
        L.add(end + 0.0005, ds(end + 0.0005, "logging.py:96:log_dist",
                               f"[Rank 0] rank=0 time (ms) | forward: {fw:.2f} | backward: {bw:.2f} | "
                               f"backward_inner: {bw * 0.86:.2f} | backward_allreduce: {bw * 0.14:.2f} | "
                               f"step: {dur * 1000 - fw - bw:.2f}"))
    for n, ts, c in a.saves:
        tag = f"global_step{n}"
        p = f"{CKPT}/{tag}/mp_rank_00_model_states.pt"
        L.add(ts + 0.01, ds(ts + 0.01, "logging.py:96:log_dist",
                            f"[Rank 0] [Torch] Checkpoint {tag} is about to be saved!"))
        L.add(ts + 0.3, ds(ts + 0.3, "logging.py:96:log_dist", f"[Rank 0] Saving model checkpoint: {p}"))
        L.add(ts + 0.31, ds(ts + 0.31, "torch_checkpoint_engine.py:21:save", f"[Torch] Saving {p}..."))
        L.add(ts + c - 2, ds(ts + c - 2, "torch_checkpoint_engine.py:23:save", f"[Torch] Saved {p}."))
        L.add(ts + c - 0.05, ds(ts + c - 0.05, "torch_checkpoint_engine.py:33:commit",
                                f"[Torch] Checkpoint {tag} is ready now!"))
    # a harmless python warning on a few ranks at start
    for r in (0, 57, 131):
        L.add(F + 2 + r * 0.001, "/usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:464: UserWarning: "
                                 "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly.")
    ending(a, L, rng, info)
    return L.render()


ECC_TB = ["Traceback (most recent call last):",
          '  File "/workspace/gh40b/pretrain.py", line 412, in <module>',
          "    main()",
          '  File "/workspace/gh40b/pretrain.py", line 377, in main',
          "    engine.backward(loss)",
          '  File "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/engine.py", line 1976, in backward',
          "    self.optimizer.backward(loss, retain_graph=retain_graph)",
          '  File "/usr/local/lib/python3.10/dist-packages/torch/_tensor.py", line 525, in backward',
          "    torch.autograd.backward(",
          "RuntimeError: CUDA error: uncorrectable ECC error encountered",
          "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
          "might be incorrect.",
          "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
          "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", ""]


def watchdog(t: float, r: int, seq: int, rng: random.Random) -> list[str]:
    wd = (f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, "
          f"NumelIn=50331648, NumelOut=50331648, Timeout(ms)={WATCHDOG_S * 1000}) ran for "
          f"{WATCHDOG_S * 1000 + rng.randint(10, 900)} milliseconds before timing out.")
    return [f"[rank{r}]:[{glog_c10(t, 'E', rng)} ProcessGroupNCCL.cpp:607] {wd}",
            f"[rank{r}]:[{glog_c10(t + 0.002, 'E', rng)} ProcessGroupNCCL.cpp:1664] [PG 0 Rank {r}] Exception (either "
            f"an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: {seq}, last completed "
            f"NCCL work: {seq - 1}.",
            f"[rank{r}]:[{glog_c10(t + 0.003, 'E', rng)} ProcessGroupNCCL.cpp:621] [Rank {r}] To avoid data "
            f"inconsistency, we are taking the entire process down."]


def ending(a: Attempt, L: LineSink, rng: random.Random, info: dict) -> None:
    R, E, first = a.R, a.E, a.nodes[0]
    if a.kind == "nvlink":
        seq = 400000 + rng.randint(0, 50000)
        tw = R + WATCHDOG_S + 6
        info["watchdog_first"] = tw
        for r in range(GPUS):
            h = a.nodes[r // GPN]
            if h == NVL[0] and r % GPN == NVL[1]:
                continue
            if r % 5 == 0 or h == NVL[0]:
                L.extend(tw + 0.01 * r, watchdog(tw + 0.01 * r, r, seq, rng))
        for i, h in enumerate(a.nodes):
            if i % 3 == 0:
                L.add(tw + 8 + 0.1 * i, f"srun: error: {h}: tasks {i * GPN}-{i * GPN + 7}: Aborted (core dumped)")
        L.add(tw + 9, f"srun: launch/slurm: _step_signal: Terminating StepId={a.job}.0")
        L.add(tw + 9.2, f"slurmstepd: error: *** STEP {a.job}.0 ON {first} CANCELLED AT {slurm_ts(tw + 9.2)} ***")
        r0 = a.nodes.index(NVL[0]) * GPN
        L.add(E - 1, f"srun: error: {NVL[0]}: tasks {r0}-{r0 + 7}: Killed")
    elif a.kind == "xid79":
        L.add(E - 1.0, f"slurmstepd: error: *** JOB {a.job} ON {first} CANCELLED AT {slurm_ts(E - 1)} DUE TO NODE "
                       f"FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***")
        L.add(E - 0.9, f"srun: error: Node failure on {HOT[0]}")
        L.add(E - 0.5, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    elif a.kind in ("xid94", "xid95"):
        h, g = a.root
        r = rank_of(a, h, g)
        te = R + 1.4
        info["cuda_error_ts"] = te
        L.extend(te, [f"[rank{r}]: {ln}" if ln else "" for ln in ECC_TB])
        L.add(te + 2.0, f"srun: error: {h}: task {r}: Exited with exit code 1")
        L.add(te + 2.1, f"srun: launch/slurm: _step_signal: Terminating StepId={a.job}.0")
        L.add(te + 2.3, f"slurmstepd: error: *** STEP {a.job}.0 ON {first} CANCELLED AT {slurm_ts(te + 2.3)} ***")
        L.add(te + 2.4, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
        for i, hh in enumerate(a.nodes):
            if hh != h and i % 4 == 0:
                L.add(E - 2 + 0.01 * i, f"srun: error: {hh}: tasks {i * GPN}-{i * GPN + 7}: Terminated")
        L.add(E - 0.5, f"srun: Force Terminated StepId={a.job}.0")
    elif a.kind == "cancel":
        L.add(R + 0.6, f"slurmstepd: error: *** JOB {a.job} ON {first} CANCELLED AT {slurm_ts(R + 0.6)} ***")
        L.add(R + 0.7, f"slurmstepd: error: *** STEP {a.job}.0 ON {first} CANCELLED AT {slurm_ts(R + 0.6)} ***")
        L.add(R + 0.8, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    elif a.kind == "preempt":
        at = slurm_ts(R + 0.3)
        L.add(R + 0.3, f"slurmstepd: error: *** JOB {a.job} ON {first} CANCELLED AT {at} DUE TO PREEMPTION ***")
        L.add(R + 0.4, f"slurmstepd: error: *** STEP {a.job}.0 ON {first} CANCELLED AT {at} DUE TO PREEMPTION ***")
        L.add(R + 0.5, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    else:
        L.add(E - 1.5, f"END TIME: {date_cmd(E - 1.5)}")


# ----------------------------------------------------------------------------- per-rank timings
def steps_jsonl(a: Attempt, slow: tuple[str, int], hosts: list[str], seed: int) -> dict[str, bytes]:
    w0, w1 = a.window
    idx = [j for j, (n, ts, d) in enumerate(a.steps) if w0 <= ts < w1]
    lo, hi = max(0, idx[0] - 120), min(len(a.steps), idx[-1] + 121)
    sel = a.steps[lo:hi]
    out = {}
    tok = TOKENS_PER_STEP // GPUS
    for h in hosts:
        for g in range(GPN):
            r = rank_of(a, h, g)
            rng = random.Random(f"{seed}-jsonl-{a.k}-{r}")
            recs = []
            for n, ts, dur in sel:
                is_slow = (h, g) == slow and in_window(a, ts)
                comp = (dur - 0.55 if is_slow else BASE_COMPUTE) * (1 + rng.uniform(-0.004, 0.004))
                data = BASE_DATA * (1 + rng.uniform(-0.05, 0.05))
                comm = dur - comp - data
                recs.append(f'{{"ts":"{iso_z(ts + dur)}","rank":{r},"host":"{h}","step":{n},"step_s":{dur:.4f},'
                            f'"compute_s":{comp:.4f},"comm_s":{comm:.4f},"data_s":{data:.4f},"tokens":{tok}}}')
            out[f"rank-{r:05d}"] = ("\n".join(recs) + "\n").encode()
    return out


# ----------------------------------------------------------------------------- node files
NOISE = ["perf: interrupt took too long ({a} > {b}), lowering kernel.perf_event_max_sample_rate to 63750",
         "hrtimer: interrupt took {n} ns",
         "kauditd_printk_skb: {k} callbacks suppressed",
         "INFO: NMI handler (perf_event_nmi_handler) took too long to run: 1.{k}07 msecs"]


def kernel_events(h: str, fleet: Fleet, t_end: float, rng: random.Random) -> list[tuple[float, str]]:
    b = fleet.boot[h]
    ev = [(b, "Linux version 6.5.0-1024-nvidia (buildd@bos03-amd64-047) (x86_64-linux-gnu-gcc-12) #25-Ubuntu SMP"),
          (b + 21.4, f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {DRIVER}  Wed Jun  5 14:28:11 UTC 2024")]
    t = max(b, T0 - 86400) + rng.uniform(600, 9000)
    while t < t_end:
        ev.append((t, rng.choice(NOISE).format(a=rng.randint(2600, 5000), b=2500, n=rng.randint(9000, 40000),
                                               k=rng.randint(3, 40))))
        t += rng.uniform(3600, 20000)
    return ev


def render_kernel(h: str, ev: list[tuple[float, str]]) -> tuple[str, bytes]:
    ev = sorted(ev, key=lambda x: x[0])
    if CLUSTER_OF[h] == "cb-w":
        body = "\n".join(f"{short_iso(t)} {h} kernel: {m}" for t, m in ev)
        return "kern.log", (body + "\n").encode()
    body = "\n".join(f"{dmesg_T(t)} {m}" for t, m in ev)
    return "dmesg.log", (body + "\n").encode()


def smi_q(t: float, h: str, fleet: Fleet, hot: int | None = None, idle: bool = False,
          dram_ce: dict | None = None) -> str:
    out = ["", "==============NVSMI LOG==============", "",
           f"Timestamp                                 : {smi_ts(t)}",
           f"Driver Version                            : {DRIVER}",
           "CUDA Version                              : 12.4", "",
           f"Attached GPUs                             : {GPN}"]
    for g in range(GPN):
        hs = hot == g
        ce = (dram_ce or {}).get(g, 0)
        def on(flag):
            return "Active" if flag else "Not Active"
        out += [f"GPU 00000000:{BUSIDS[g].upper()}:00.0",
                "    Product Name                          : NVIDIA H100 80GB HBM3",
                f"    Serial Number                         : {fleet.serial[h, g]}",
                f"    GPU UUID                              : {fleet.uuid[h, g]}",
                "    Performance State                     : " + ("P8" if idle else "P0"),
                "    Clocks Event Reasons",
                f"        Idle                              : {on(idle)}",
                "        Applications Clocks Setting       : Not Active",
                "        SW Power Cap                      : Not Active",
                f"        HW Slowdown                       : {on(hs)}",
                f"            HW Thermal Slowdown           : {on(hs)}",
                "            HW Power Brake Slowdown       : Not Active",
                "        Sync Boost                        : Not Active",
                f"        SW Thermal Slowdown               : {on(hs)}",
                "        Display Clock Setting             : Not Active",
                "    ECC Errors",
                "        Volatile",
                "            SRAM Correctable              : 0",
                "            SRAM Uncorrectable Parity     : 0",
                "            SRAM Uncorrectable SEC-DED    : 0",
                f"            DRAM Correctable              : {ce}",
                "            DRAM Uncorrectable            : 0",
                "    Temperature",
                f"        GPU Current Temp                  : {92 if hs else (31 if idle else 58 + g)} C",
                "        GPU T.Limit Temp                  : " + ("-5 C" if hs else "29 C"),
                "        GPU Shutdown Temp                 : 92 C",
                "        GPU Slowdown Temp                 : 87 C",
                "    Clocks",
                f"        Graphics                          : {1155 if hs else (345 if idle else 1980)} MHz",
                f"        SM                                : {1155 if hs else (345 if idle else 1980)} MHz",
                "        Memory                            : 2619 MHz", ""]
    return "\n".join(out) + "\n"


def nvlink_e(h: str, fleet: Fleet, bad: tuple[int, int, int] | None) -> str:
    out = []
    for g in range(GPN):
        out.append(f"GPU {g}: NVIDIA H100 80GB HBM3 (UUID: {fleet.uuid[h, g]})")
        for link in range(18):
            crc = rep = 0
            if bad and bad[0] == g and link == 14:
                crc, rep = bad[1], bad[2]
            out += [f"\t Link {link}: Replay Errors: {rep}", f"\t Link {link}: Recovery Errors: 0",
                    f"\t Link {link}: CRC Errors: {crc}"]
    return "\n".join(out) + "\n"


def dcgm_diag(fail_gpu: int | None, n_gpus: int = GPN) -> str:
    gl = ",".join(["2330"] * n_gpus)
    def row(name: str, val: str) -> str:
        return f"| {name:<25s} | {val:<46s} |"
    def res():
        return "Pass" if fail_gpu is None else f"Fail - GPU {fail_gpu}"
    out = ["Successfully ran diagnostic for group.",
           "+---------------------------+------------------------------------------------+",
           "| Diagnostic                | Result                                         |",
           "+===========================+================================================+",
           "|-----  Metadata  ----------+------------------------------------------------|",
           row("DCGM Version", "3.3.6"), row("Driver Version Detected", DRIVER),
           row("GPU Device IDs Detected", gl),
           "|-----  Deployment  --------+------------------------------------------------|"]
    out += [row(x, "Pass") for x in ("Denylist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks",
                                     "Persistence Mode", "Environment Variables", "Page Retirement/Row Remap",
                                     "Graphics Processes", "Inforom")]
    out += ["+-----  Integration  -------+------------------------------------------------+",
            row("PCIe", "Pass - All"),
            "+-----  Hardware  ----------+------------------------------------------------+",
            row("GPU Memory", res() if fail_gpu is not None else "Pass - All")]
    if fail_gpu is not None:
        out.append(row("Warning", f"GPU {fail_gpu} Error: a row remap failed on the GPU "))
        out.append(row("", "(DCGM_FR_ROW_REMAP_FAILURE)"))
    out += [row("Diagnostic", "Pass - All"),
            "+-----  Stress  ------------+------------------------------------------------+",
            row("Targeted Stress", "Pass - All"), row("Targeted Power", "Pass - All"),
            row("Memory Bandwidth", "Pass - All"),
            "+---------------------------+------------------------------------------------+"]
    return "\n".join(out) + "\n"


def dcgm_health_warn(g: int) -> str:
    w = 58
    def row(a: str, b: str) -> str:
        return f"| {a:<25s} | {b:<{w - 2}s} |"
    return "\n".join([
        "+---------------------------+" + "-" * w + "+",
        "| Health Monitor Report" + " " * (27 + w - 22) + "|",
        "+===========================+" + "=" * w + "+",
        row("Overall Health", "Warning"),
        row("GPU", ""),
        row(f"-> {g}", "Warning"),
        row("   -> Errors", ""),
        row("      -> PCIe system", "Warning"),
        row("", f"Detected more than 8 PCIe replays per minute for GPU {g}"),
        row("", ": 12"),
        "+---------------------------+" + "-" * w + "+"]) + "\n"


def lspci_vv(g: int, down: bool) -> str:
    sta = "Speed 16GT/s (downgraded), Width x8 (downgraded)" if down else "Speed 32GT/s, Width x16"
    return "\n".join([
        f"{BUSIDS[g]}:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)",
        "\tSubsystem: NVIDIA Corporation Device 16c1",
        "\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr+ Stepping- SERR+ FastB2B- DisINTx+",
        "\tCapabilities: [68] Express (v2) Endpoint, MSI 00",
        "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported",
        "\t\t\tClockPM+ Surprise- LLActRep- BwNot- ASPMOptComp+",
        "\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+",
        f"\t\tLnkSta:\t{sta}",
        "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-",
        "\tKernel driver in use: nvidia", ""])


def xid13(pci: str, rng: random.Random) -> list[str]:
    gpc, tpc = rng.randint(0, 7), rng.randint(0, 8)
    return [f"NVRM: Xid (PCI:{pci}): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on "
            f"(GPC {gpc}, TPC {tpc}, SM 1): Out Of Range Address",
            f"NVRM: Xid (PCI:{pci}): 13, pid='<unknown>', name=<unknown>, Graphics Exception: "
            f"ESR 0x{0x50c730 + 0x800 * gpc:x}=0x10a0009"]


def node_files(attempts: list[Attempt], fleet: Fleet, seed: int, bundle: Path, info: dict) -> None:
    a1, a2, a3, a4, a5, a6, a7 = attempts
    t_end = a7.E + 7200
    for h in CB + FE:
        rng = random.Random(f"{seed}-node-{h}")
        ev = kernel_events(h, fleet, t_end, rng)
        hd = bundle / "nodes" / h / "health"
        if h == NVL[0]:
            g = NVL[1]
            pci = pci_of(g)
            ev += [(a1.R, f"NVRM: Xid (PCI:{pci}): 74, pid={rng.randint(20000, 90000)}, name=python3, NVLink: fatal "
                          f"error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"),
                   (a1.R + 0.3, f"NVRM: GPU at PCI:{pci}: {fleet.uuid[h, g]}"),
                   (a1.R + 0.3, f"NVRM: GPU Board Serial Number: {fleet.serial[h, g]}")]
            for dt, crc, rep in ((-9 * 3600, 0, 0), (-5 * 3600, 214, 9), (-2 * 3600, 1877, 61), (-1200, 9120, 388)):
                tt = a1.R + dt
                write_file(hd / f"nvlink-e-{_split(tt)[0]:%Y%m%dT%H%M%S}.txt",
                           (f"# {short_iso(tt)} nvidia-smi nvlink -e\n" + nvlink_e(h, fleet, (g, crc, rep))).encode())
        if h == CB[5]:                       # a healthy host's counters for comparison
            tt = a1.R - 5 * 3600
            write_file(hd / f"nvlink-e-{_split(tt)[0]:%Y%m%dT%H%M%S}.txt",
                       (f"# {short_iso(tt)} nvidia-smi nvlink -e\n" + nvlink_e(h, fleet, None)).encode())
        if h == HOT[0]:
            g = HOT[1]
            pci = pci_of(g)
            for tt, hot in ((a2.F + 3 * 3600, None), (a2.window[0] + 1800, g), (a2.window[0] + 7200, g)):
                write_file(hd / f"nvidia-smi-q-{_split(tt)[0]:%Y%m%dT%H%M%S}.txt",
                           smi_q(tt, h, fleet, hot=hot).encode())
            ev += [(a2.R, f"NVRM: GPU at PCI:{pci}: {fleet.uuid[h, g]}"),
                   (a2.R, f"NVRM: GPU Board Serial Number: {fleet.serial[h, g]}"),
                   (a2.R, f"NVRM: Xid (PCI:{pci}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
                   (a2.R + 0.01, f"NVRM: GPU {pci}.0: GPU has fallen off the bus.")]
        if h == X94[0]:
            g = X94[1]
            pci = pci_of(g)
            ev += [(a3.R, f"NVRM: Xid (PCI:{pci}): 94, pid={rng.randint(20000, 90000)}, name=python3, Contained: "
                          f"CE User Channel (0x9). RST: No, D-RST: No"),
                   (a3.R + 0.01, f"NVRM: Xid (PCI:{pci}): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row "
                                 f"(0x{rng.getrandbits(32):08x}) marked for remapping, reset gpu to activate.")]
        if h == X95[0]:
            g = X95[1]
            pci = pci_of(g)
            ev += [(a5.R, f"NVRM: Xid (PCI:{pci}): 95, pid={rng.randint(20000, 90000)}, name=python3, Uncontained: "
                          f"LTC TAG (0x2,0x1). RST: Yes, D-RST: No"),
                   (a5.R + 1200, "Linux version 6.5.0-1024-nvidia (buildd@bos03-amd64-047) (x86_64-linux-gnu-gcc-12) "
                                 "#25-Ubuntu SMP"),
                   (a5.R + 1221, f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {DRIVER}  "
                                 "Wed Jun  5 14:28:11 UTC 2024")]
        if h == PCI[0]:
            g = PCI[1]
            w0 = a7.window[0] - 40
            port = f"0000:{int(BUSIDS[g], 16) - 1:02x}:01.0"
            ev += [(w0, f"pcieport {port}: AER: Corrected error received: {pci_of(g)}.0"),
                   (w0, f"nvidia {pci_of(g)}.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
                        "(Receiver ID)"),
                   (w0, f"nvidia {pci_of(g)}.0:   device [10de:2330] error status/mask=00000001/0000e000"),
                   (w0, f"nvidia {pci_of(g)}.0:    [ 0] RxErr                  (First)")]
            for tt, down in ((a7.F + 3600, False), (a7.window[0] + 1500, True), (a7.window[1] + 2400, False)):
                write_file(hd / f"lspci-vv-gpu{g}-{_split(tt)[0]:%Y%m%dT%H%M%S}.txt",
                           (f"# {short_iso(tt)} lspci -vv -s {BUSIDS[g]}:00.0\n" + lspci_vv(g, down)).encode())
        if h == D_HEALTH:                    # decoy: informational dcgmi health warning, job keeps its pace
            tt = a3.F + 4 * 3600
            write_file(hd / f"dcgmi-health-{_split(tt)[0]:%Y%m%dT%H%M%S}.txt",
                       (f"# {short_iso(tt)} dcgmi health -c\n" + dcgm_health_warn(5)).encode())
        if h == D_SBE:                       # decoy: correctable DRAM ECC counts rising
            for j, tt in enumerate((a3.F + 3600, a4.F + 3600, a4.F + 9 * 3600)):
                write_file(hd / f"nvidia-smi-q-{_split(tt)[0]:%Y%m%dT%H%M%S}.txt",
                           smi_q(tt, h, fleet, dram_ce={2: [3, 41, 118][j]}).encode())
        if h == D_XID13:                     # decoy: Xid 13 mid attempt 7
            mid = a7.F + 0.55 * (a7.E - a7.F)
            ev += [(mid, m) for m in xid13(pci_of(4), rng)]
        if h in (CB[24], CB[25], FE[24]):    # idle spares: Idle clocks event
            tt = a1.F + 7200
            write_file(hd / f"nvidia-smi-q-{_split(tt)[0]:%Y%m%dT%H%M%S}.txt",
                       smi_q(tt, h, fleet, idle=True).encode())
        if h == D_OTHER:                     # decoy: other partition's host fails diag in another job's prolog
            tt = a2.F + 5 * 3600
            write_file(hd / f"dcgmi-diag-prolog-{_split(tt)[0]:%Y%m%dT%H%M%S}.txt",
                       (f"# {short_iso(tt)} prolog job 730201: dcgmi diag -r 3\n" + dcgm_diag(3)).encode())
            info["other_diag_ts"] = tt
        if h == EPILOG[0]:                   # epilog diag after the completed job
            tt = a7.E + 30
            write_file(hd / f"dcgmi-diag-epilog-{_split(tt)[0]:%Y%m%dT%H%M%S}.txt",
                       (f"# {short_iso(tt)} epilog job {a7.job}: dcgmi diag -r 3\n" + dcgm_diag(EPILOG[1])).encode())
        name, body = render_kernel(h, ev)
        write_file(bundle / "nodes" / h / name, body)


# ----------------------------------------------------------------------------- scheduler
def scheduler_files(attempts: list[Attempt], bundle: Path, seed: int, info: dict) -> None:
    rng = random.Random(f"{seed}-sched")
    L = LineSink()

    def add(t: float, msg: str) -> None:
        L.add(t, f"{ctld_ts(t)} {msg}")

    hdr = "JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"
    rows = []
    for a in attempts:
        submit = a.S - rng.randint(3, 60)
        hl = hostlist(a.nodes)
        part = PARTITION[a.cluster]
        cpus = 192 * len(a.nodes)
        prio = f"4294901{rng.randint(100, 999)}"
        add(submit + 0.3, f"_slurm_rpc_submit_batch_job: JobId={a.job} InitPrio={prio} usec=512")
        add(a.S + 0.02, f"sched: Allocate JobId={a.job} NodeList={hl} #CPUs={cpus} Partition={part}")
        end = a.E + 0.2
        if a.kind == "nvlink":
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 134")
            add(end + 1800, f"update_node: node {NVL[0]} reason set to: xid74 nvlink gpu2")
            add(end + 1800.1, f"update_node: node {NVL[0]} state set to DRAINED")
            state, ec = "FAILED", "134:0"
        elif a.kind == "xid79":
            add(a.R + 540, f"error: Nodes {HOT[0]} not responding")
            add(a.E - 2.1, f"error: Nodes {HOT[0]} not responding, setting DOWN")
            add(a.E - 2.0, f"Killing JobId={a.job} on failed node {HOT[0]}")
            add(end, f"_job_complete: JobId={a.job} WTERMSIG 9")
            state, ec = "NODE_FAIL", "0:0"
        elif a.kind in ("xid94", "xid95"):
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
            state, ec = "FAILED", "1:0"
            if a.kind == "xid95":
                add(end + 300, f"update_node: node {X95[0]} reason set to: xid95 uncontained ecc, reboot")
                add(end + 300.1, f"update_node: node {X95[0]} state set to DRAINING")
                add(end + 301, f"reboot request queued for nodes {X95[0]}")
                add(end + 1400, f"Node {X95[0]} now responding")
        elif a.kind == "cancel":
            add(a.R, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={a.job} uid {USER_UID}")
            add(end, f"_job_complete: JobId={a.job} WTERMSIG 15")
            state, ec = f"CANCELLED by {USER_UID}", "0:0"
        elif a.kind == "preempt":
            add(a.R, f"preempted JobId={a.job} has been killed to reclaim resources for JobId=730455")
            add(end, f"_job_complete: JobId={a.job} WTERMSIG 15")
            state, ec = "PREEMPTED", "0:0"
        else:
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 0")
            add(a.E + 95, f"update_node: node {EPILOG[0]} reason set to: epilog: dcgmi diag -r 3 failed gpu{EPILOG[1]}")
            add(a.E + 95.1, f"update_node: node {EPILOG[0]} state set to DRAINED")
            state, ec = "COMPLETED", "0:0"
        add(end + 0.01, f"_job_complete: JobId={a.job} done")
        rows.append((a.S, f"{a.job}|{RUN}|{part}|llm40b|{cpus}|{state}|{ec}|{slurm_ts(submit)}|{slurm_ts(a.S)}|"
                          f"{slurm_ts(a.E)}|{elapsed_str(a.E - a.S)}|{len(a.nodes)}|{hl}"))
    # another user's one-node job on the ferrous spare whose prolog diag fails (decoy)
    t = info["other_diag_ts"]
    add(t - 20, f"sched: Allocate JobId=730201 NodeList={D_OTHER} #CPUs=192 Partition=ferrous")
    add(t + 400, "error: prolog_complete: JobId=730201 prolog failed status=1:0")
    add(t + 400.2, f"update_node: node {D_OTHER} reason set to: Prolog error")
    add(t + 400.3, f"update_node: node {D_OTHER} state set to DRAINED")
    rows.append((t - 20, f"730201|eval-8b|ferrous|evals|192|FAILED|1:0|{slurm_ts(t - 60)}|{slurm_ts(t - 20)}|"
                         f"{slurm_ts(t + 401)}|{elapsed_str(421)}|1|{D_OTHER}"))
    rows.sort(key=lambda x: x[0])
    write_file(bundle / "scheduler" / "slurmctld.log", L.render())
    write_file(bundle / "scheduler" / "sacct.txt", ("\n".join([hdr] + [r for _, r in rows]) + "\n").encode())


def inventory_toml() -> str:
    return f"""# Fleet inventory: two providers, one Slurm controller, one partition each
[providers.cobalt]
usd_per_gpu_hour = 2.39

[providers.ferrous]
usd_per_gpu_hour = 2.05

[clusters.cb-w]
provider = "cobalt"
gpu = "H100-SXM"
gpus_per_node = 8
interconnect = "InfiniBand NDR 8x400G"
nodes = "{hostlist(CB)}"

[clusters.fe-2]
provider = "ferrous"
gpu = "H100-SXM"
gpus_per_node = 8
interconnect = "RoCE 8x400G"
nodes = "{hostlist(FE)}"
"""


def run_toml() -> str:
    return f"""# {RUN}: ~40B dense decoder, DeepSpeed ZeRO-1, bf16
cluster = "cb-w"            # attempts 5-7 ran on fe-2 (partition ferrous)
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}   # global batch {GBS} x sequence {SEQ}
flops_per_token = {FLOPS_PER_TOKEN:.3e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --nodes={NNODES} --gpus-per-node={GPN} --time=2-00:00:00 pretrain_40b.sbatch"
"""


def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    attempts = build_timeline(seed)
    a1, a2, a3, a4, a5, a6, a7 = attempts
    fleet = Fleet(seed)
    info: dict = {}
    write_file(bundle / "inventory.toml", inventory_toml().encode())
    rdir = bundle / "runs" / RUN
    write_file(rdir / "run.toml", run_toml().encode())
    for a in attempts:
        gz = a.k in (3, 6)
        write_file(rdir / f"attempt-{a.k}" / (f"slurm-{a.job}.out" + (".gz" if gz else "")),
                   train_log(a, seed, info), gz=gz)
    hosts2 = [a2.nodes[i] for i in (0, 4, 9, 15, 20)] + [HOT[0]]
    hosts7 = [a7.nodes[i] for i in (1, 6, 10, 17, 22)] + [PCI[0]]
    for a, slow, hosts in ((a2, HOT, hosts2), (a7, PCI, hosts7)):
        for name, body in steps_jsonl(a, slow, sorted(set(hosts)), seed).items():
            gzs = int(name.split("-")[1]) % 3 == 0
            write_file(rdir / f"attempt-{a.k}" / "steps" / (name + (".jsonl.gz" if gzs else ".jsonl")), body, gz=gzs)
    node_files(attempts, fleet, seed, bundle, info)
    scheduler_files(attempts, bundle, seed, info)
    cats, total, per, excess = ledger(attempts)
    incidents = []
    k_of = {1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 6: 5}
    for a in attempts[:-1]:
        j = k_of[a.k]
        cl = a.cluster
        host, gpu = (a.root if a.root else (None, None))
        incidents.append({"attempt": a.k, "slurm_job": a.job, "failure_mode": a.mode,
                          "blame": "user" if a.mode == "manual_stop" else "provider",
                          "host": host, "gpu_index": gpu, "cluster": cl, "provider": PROVIDER_OF[cl],
                          "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E), "last_ckpt_step": a.last_ckpt,
                          "gpu_hours": per[j], "gpu_hours_lost": round(sum(per[j].values()), 4)})
    incidents.insert(1, {"attempt": 2, "failure_mode": "gpu_throttle", "host": HOT[0], "gpu_index": HOT[1],
                         "cluster": "cb-w", "provider": "cobalt", "kind": None,
                         "window_start_ts": iso_z(a2.window[0]), "window_end_ts": iso_z(a2.R),
                         "gpu_hours_lost": round(excess[2], 4),
                         "note": "HW thermal slowdown before the Xid 79; straggler GPU-hours of kept steps"})
    incidents.append({"attempt": 7, "failure_mode": None, "kind": "straggler", "host": PCI[0], "gpu_index": PCI[1],
                      "cluster": "fe-2", "provider": "ferrous", "window_start_ts": iso_z(a7.window[0]),
                      "window_end_ts": iso_z(a7.window[1]), "gpu_hours_lost": round(excess[7], 4),
                      "note": "PCIe link trained at 16GT/s x8 (downgraded) during the window"})
    for i, inc in enumerate(incidents):
        inc["id"] = i + 1
        if inc.get("kind") is None:
            inc.pop("kind", None)
    decoys = {D_HEALTH: "dcgmi health -c Warning (PCIe replay rate); training kept its pace",
              D_SBE: "DRAM correctable (single-bit) ECC counts rising; no fault",
              D_XID13: "Xid 13 mid attempt 7; every rank kept stepping",
              D_OTHER: "ferrous host not in the job: another user's prolog dcgmi diag failed",
              EPILOG[0]: "epilog dcgmi diag failed after attempt 7 COMPLETED; not a fault of the run",
              a1.nodes[0]: "prints NCCL watchdog timeouts in attempt 1 (symptom of the NVLink hang)",
              a1.nodes[5]: "prints NCCL watchdog timeouts in attempt 1 (symptom of the NVLink hang)"}
    by_provider = {"cobalt": 0.0, "ferrous": 0.0}
    for inc in incidents:
        by_provider[inc["provider"]] += inc["gpu_hours_lost"]
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "first_start_ts": iso_z(a1.S), "last_end_ts": iso_z(a7.E),
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "cluster": a.cluster, "nodes": hostlist(a.nodes),
                      "start_ts": iso_z(a.S), "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E),
                      "loaded_step": a.load, "last_step": a.steps[-1][0], "saves": [n for n, _, _ in a.saves],
                      "end": a.kind} for a in attempts],
        "match_on_attempt": True,
        "incidents": incidents,
        "forbidden_incidents": [
            {"host": EPILOG[0], "reason": "epilog diag failure after a completed job is not an incident of the run"},
            {"host": D_OTHER, "reason": "a host outside the job"},
            {"failure_mode": "gpu_memory_ecc", "host": X94[0], "attempts": [4],
             "reason": "the contained Xid 94 was cleared by a GPU reset; attempt 4 was cancelled by the user"}],
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys,
        "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {k: round(v, 4) for k, v in by_provider.items()},
        "notes": ("UTC. host null (user cancel, preemption) matches any host. Ledger: see the docstring."),
    }
    write_file(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261010)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    files = [p for p in (out / "bundle").rglob("*") if p.is_file()]
    print(f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB) and "
          f"{out / 'truth.json'}; total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
