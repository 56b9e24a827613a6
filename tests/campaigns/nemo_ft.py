#!/usr/bin/env python3
"""Own campaign `nemo_ft`: a NeMo / Megatron-LM job under NVIDIA's resiliency extension (ft_launcher).

Written from the outsiders' campaign conventions (../shared/evidence/scenarios/campaign1.py) without reading
clusterlab's analysis code. Standard library only, deterministic per --seed.

Writes, under --out DIR:
  DIR/bundle/inventory.toml, runs/nemo-ft-70b/run.toml
  DIR/bundle/runs/nemo-ft-70b/job-<jobid>/slurm-<jobid>.out     everything one sbatch printed (NeMo logging,
        Megatron iteration lines, ft_launcher / rank-monitor lines, tracebacks); an in-job restart by
        ft_launcher stays in the SAME file (no new Slurm job, no attempt directory)
  DIR/bundle/runs/nemo-ft-70b/job-<jobid>/nccl/<host>.log        NCCL_DEBUG=INFO init lines of each worker group
  DIR/bundle/nodes/<host>/{dmesg.log | kern.log}                  kernel logs, each in its host's own (skewed) clock
  DIR/bundle/nodes/ka2-003/nvidia-smi-ecc.csv                     nvidia-smi --query-gpu loop (decoy)
  DIR/bundle/scheduler/<cluster>/{slurmctld.log, sacct.txt}
  DIR/truth.json
Usage: nemo_ft.py --out DIR [--seed N]

Scenario (run "nemo-ft-70b", 128 GPUs = 16 nodes x 8 H100-SXM, provider kestrel, clusters ka-1 and ka-2; all
truth times are the controllers' UTC clock, every node's clock is off by up to +-6 s; rank 0's log is in its
host's clock):
  attempt 1  job 70411 (ka-1)  fresh start; Xid 119 (GSP RPC timeout) on ka1-004 GPU2: rank 26 stops, its rank
             monitor misses heartbeats and kills it; ft_launcher's pre-restart GPU health check fails on ka1-004,
             the launcher gives up, the job FAILS                                   [gpu_hw_other, ka1-004]
  attempt 2  job 70433 (ka1-004 out, spare ka1-017 in); Xid 74 NVLink errors + NVSwitch SXid on ka1-009; the
             NCCL collectives hang, the watchdog (600 s) fires everywhere; ft_launcher restarts the workers IN
             THE SAME JOB                                                            [nvlink_error, ka1-009]
  attempt 3  job 70433, in-job restart (same nodes); PCIe AER uncorrected fatal errors on ka1-013's GPU5 root
             port, then Xid 79 (GPU fell off the bus) 35 s later; the rank dies, the launcher's health check
             fails on ka1-013, job FAILS. The PCIe fault is the root: the Xid 79 is its consequence
                                                                                     [pcie_error, ka1-013]
  attempt 4  job 70458 (ka1-013 out, spare ka1-018 in); the user raised micro_batch_size 1 -> 2; a
             torch.OutOfMemoryError on rank 127 (last pipeline stage) a few dozen steps in (host null);
             ft_launcher restarts the workers in-job                                  [cuda_oom, user]
  attempt 5  job 70458, in-job restart; the same OOM at the same step; the launcher's restarts are spent,
             the job FAILS                                                            [cuda_oom, user]
  attempt 6  job 81207 (ka-2: the user moved the run and copied the checkpoint); runs into its 10 h TIME LIMIT
                                                                                     [time_limit, user]
  attempt 7  job 81230 (ka-2) after a provider maintenance window in which the provider wiped the Lustre
             project directory holding the checkpoints: NeMo finds no checkpoint and trains from step 0. Every
             step kept before is lost                                      [checkpoint_lost, provider, ka-2]
             It then ends when ka2-008 dies (no kernel message: its logs just stop); the others' NCCL watchdogs
             fire 10 min later; slurmctld "not responding, setting DOWN", sacct NODE_FAIL
                                                                                     [node_failure, ka2-008]
  attempt 8  job 81262 (ka2-008 out, spare ka2-018 in) completes. Three of its saves land on
             a degraded Lustre (Lustre client "... was lost; in progress operations using this service will
             wait for recovery to complete" on every host) and take ~10x as long: checkpoint time, no incident.
  Decoys: Xid 13 from a user's profiling kernel on ka1-006 in attempt 2 (training steps on); rising corrected
  (single-bit) ECC counts on ka2-003 GPU1 in nvidia-smi (no failure); Xid 79 on the idle spare ka2-017; the 15
  watchdog-timeout hosts of attempt 7 and the NVLink peers of attempt 2 are symptoms.

Ledger (truth.json expected_ledger, GPU-hours = 128 x seconds / 3600), campaign1.py's conventions:
  startup    = attempt start -> its first training step start. A Slurm attempt starts at sacct Start; an in-job
               restart starts when ft_launcher starts the new worker group ("Starting worker group" / rendezvous)
  productive = kept steps (step <= last durable checkpoint of an ended attempt, all steps of the completed
               attempt), whole step durations. Steps whose checkpoint was later lost (attempts 1-6) are not kept:
               they are recompute
  checkpoint = durations of the saves that completed, kept or not (the saves of the lost checkpoints too, as
               tests/campaigns/bloom_opt.py; campaign1's "save stalls of kept checkpoints" never met a lost one),
               plus the tail after the final save
  recompute  = end of the last durable save (or first step start) -> root event; plus, for the lost checkpoint,
               every step of attempts 1-6 that was kept until then
  hang       = root event -> attempt exit (sacct End; for an in-job restart, the launcher's "Worker group FAILED"
               line). Roots: the Xid 119 / Xid 74 / first AER line / the OOM / the time limit / the node's death
  restart    = attempt exit -> next attempt start
  straggler = slowdown = data_stall = idle = 0

Formats (public material found with the search tools; text written anew): NeMo logging "[NeMo I 2026-12-01
10:00:01 nemo_logging:381] ..." and exp_manager's "There were no checkpoints found in checkpoint_dir or no
checkpoint folder at checkpoint_dir :DIR. Training from scratch."; Megatron training_log() iteration lines;
nvidia-resiliency-ext ft_launcher (torchrun based: "[default] Worker group FAILED. 2/3 attempts left; will
restart worker group", "Stopping workers... Timeout = 30 sec.", rendezvous rounds, "failed (exitcode: 1)
local_rank: ..."), the NeMo-RL ft_launcher guide; NVRM Xid 119 "Timeout waiting for RPC from GSP0! Expected
function 76 (GSP_RM_CONTROL) (0x2080014b 0x5)." (open-gpu-kernel-modules); Xid 74 NVLink, nvidia-nvswitch SXid;
pcieport AER "AER: Uncorrected (Fatal) error received", "PCIe Bus Error: severity=Uncorrected (Fatal)",
"device recovery failed" (public dmesg excerpts); Lustre client "Connection to ... was lost"; PyTorch
"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ..."; ProcessGroupNCCL watchdog; Slurm as in
campaign1.py.
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

RUN = "nemo-ft-70b"
PROVIDER = "kestrel"
GPN, GPUS = 8, 128
TP, PP, DP = 8, 8, 2
GBS, SEQ = 64, 8192
TOKENS_PER_STEP = GBS * SEQ
FLOPS_PER_TOKEN = 4.60e11
PEAK = 989.4e12
BASE_STEP = 6.40
JITTER = 0.002
SAVE_INTERVAL = 250
LOG_INTERVAL = 5
TRAIN_ITERS = 500000
T0 = datetime(2026, 12, 1, 6, 0, 0, tzinfo=UTC).timestamp()
CKPT = {"ka-1": "/lustre/ka1/proj/nemo70b/checkpoints", "ka-2": "/lustre/ka2/proj/nemo70b/checkpoints"}
KA1 = [f"ka1-{i:03d}" for i in range(1, 19)]
KA2 = [f"ka2-{i:03d}" for i in range(1, 19)]
CLUSTER_OF = {**{h: "ka-1" for h in KA1}, **{h: "ka-2" for h in KA2}}
BUSIDS = ["18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000"]
ROOT_PORTS = ["0000:15:01.0", "0000:27:01.0", "0000:37:01.0", "0000:5a:01.0",
              "0000:97:01.0", "0000:a8:01.0", "0000:b7:01.0", "0000:d8:01.0"]
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]


# ----------------------------------------------------------------------------- formats
def _dt(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def iso_z(t: float) -> str:
    d = _dt(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{int((t % 1) * 1000):03d}Z"


def nemo(t: float, lvl: str, mod: str, msg: str) -> str:
    return f"[NeMo {lvl} {_dt(t):%Y-%m-%d %H:%M:%S} {mod}] {msg}"


def meg_ts(t: float) -> str:
    return _dt(t).strftime("%Y-%m-%d %H:%M:%S")


def ft(t: float, lvl: str, host: str, msg: str, who: str = "ft_launcher") -> str:
    # NVRx 0.1-0.4: `[2025-03-17 10:15:03,123] [INFO] [ft_launcher48213@gpu-017] MSG` (the launcher's pid)
    pid = 40000 + sum(map(ord, host)) * 7 + (1 if who != "ft_launcher" else 0)
    return f"[{_dt(t):%Y-%m-%d %H:%M:%S},{int((t % 1) * 1000):03d}] [{lvl}] [{who}{pid}@{host}] {msg}"


def glog_c10(t: float, lvl: str) -> str:
    d = _dt(t)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{int((t % 1) * 1e9):09d}"


def slurm_ts(t: float) -> str:
    return _dt(t).strftime("%Y-%m-%dT%H:%M:%S")


def ctld(t: float) -> str:
    return f"[{_dt(t):%Y-%m-%dT%H:%M:%S}.{int((t % 1) * 1000):03d}]"


def dmesg_T(t: float) -> str:
    d = _dt(t)
    return f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}]"


def syslog(t: float, host: str) -> str:
    d = _dt(t)
    return f"{d:%b} {d.day:2d} {d:%H:%M:%S} {host} kernel:"


def elapsed(sec: float) -> str:
    sec = int(round(sec))
    d, r = divmod(sec, 86400)
    h, r = divmod(r, 3600)
    m, s = divmod(r, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts: list[str]) -> str:
    prefix = hosts[0].rsplit("-", 1)[0] + "-"
    nums = sorted(int(h[len(prefix):]) for h in hosts)
    out, start, prev = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(f"{start:03d}" if start == prev else f"{start:03d}-{prev:03d}")
        if n is not None:
            start = prev = n
    return f"{prefix}[{','.join(out)}]"


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


def write(path: Path, data: bytes, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as f:
            f.write(data)
        data = buf.getvalue()
    path.write_bytes(data)


# ----------------------------------------------------------------------------- the timeline
class Attempt:
    def __init__(self, **kw) -> None:
        self.__dict__.update(kw)
        self.steps: list[tuple[int, float, float]] = []
        self.saves: list[tuple[int, float, float]] = []


SPECS = [
    dict(k=1, job=70411, cluster="ka-1", injob=False, kind="failure", mode="gpu_hw_other", host="ka1-004", gpu=2,
         nodes=KA1[:16], run_s=5.2 * 3600, hang=330.0, startup=420.0, gap=2400.0),
    dict(k=2, job=70433, cluster="ka-1", injob=False, kind="failure", mode="nvlink_error", host="ka1-009", gpu=4,
         nodes=KA1[:3] + KA1[4:17], run_s=6.1 * 3600, hang=640.0, startup=395.0, gap=21.0),
    dict(k=3, job=70433, cluster="ka-1", injob=True, kind="failure", mode="pcie_error", host="ka1-013", gpu=5,
         nodes=KA1[:3] + KA1[4:17], run_s=3.4 * 3600, hang=96.0, startup=250.0, gap=3100.0),
    dict(k=4, job=70458, cluster="ka-1", injob=False, kind="failure", mode="cuda_oom", host=None, gpu=7,
         nodes=KA1[:3] + KA1[4:12] + KA1[13:18], run_s=None, oom_after=37, hang=14.0, startup=400.0, gap=19.0),
    dict(k=5, job=70458, cluster="ka-1", injob=True, kind="failure", mode="cuda_oom", host=None, gpu=7,
         nodes=KA1[:3] + KA1[4:12] + KA1[13:18], run_s=None, oom_after=37, hang=12.0, startup=240.0, gap=5400.0),
    dict(k=6, job=81207, cluster="ka-2", injob=False, kind="time_limit", mode="time_limit", host=None, gpu=None,
         nodes=KA2[:16], run_s=None, time_limit=10 * 3600, hang=2.0, startup=900.0, gap=4 * 3600.0),
    dict(k=7, job=81230, cluster="ka-2", injob=False, kind="failure", mode="node_failure", host="ka2-008", gpu=None,
         nodes=KA2[:16], run_s=4.3 * 3600, hang=640.0, startup=260.0, gap=1500.0),
    dict(k=8, job=81262, cluster="ka-2", injob=False, kind="complete", mode=None, host=None, gpu=None,
         nodes=KA2[:7] + KA2[8:16] + KA2[17:18], run_s=9.0 * 3600, hang=0.0, startup=410.0, gap=None),
]
SLOW_SAVES_ATTEMPT = 8


def save_dur(a: Attempt, idx: int, rng: random.Random) -> float:
    c = rng.uniform(38.0, 46.0)
    if a.k == SLOW_SAVES_ATTEMPT and idx in (9, 10, 11):
        c *= 10.0                                    # the degraded Lustre window
    return round(c, 2)


def simulate(a: Attempt, rng: random.Random) -> None:
    t, n = a.F, a.load
    stop_at = a.F + a.run_s if a.run_s else None
    while True:
        dur = BASE_STEP * (1 + rng.uniform(-JITTER, JITTER))
        if a.kind == "failure" and a.mode == "cuda_oom" and n - a.load >= a.oom_after:
            a.R = t + 0.4 * dur                      # the OOM raised inside the step in flight
            break
        if a.kind == "failure" and a.mode != "cuda_oom" and t + dur > stop_at:
            a.R = t + 0.5 * dur
            break
        if a.kind == "time_limit" and t + dur > a.S + a.time_limit:
            a.R = a.S + a.time_limit
            break
        if a.kind == "complete" and t + dur > stop_at and n % SAVE_INTERVAL == 0 and a.saves:
            break
        a.steps.append((n + 1, t, dur))
        t += dur
        n += 1
        if n % SAVE_INTERVAL == 0:
            c = save_dur(a, len(a.saves), rng)
            if a.kind == "time_limit" and t + c > a.S + a.time_limit - 60:
                a.R = a.S + a.time_limit
                a.saves_cut = True
                break
            a.saves.append((n, t, c))
            t += c
    if a.kind == "complete":
        a.R = None
        a.E = float(math.ceil(t + 5.0))
    else:
        a.E = a.R + a.hang


def build(seed: int) -> list[Attempt]:
    rng = random.Random(f"{seed}-nemo-tl")
    atts = [Attempt(**s) for s in SPECS]
    t, load = T0, 0
    for a in atts:
        a.S = float(t)
        a.startup += rng.randint(-15, 15)
        a.F = a.S + a.startup
        if a.run_s:
            a.run_s += rng.randint(-900, 900)
        a.load = 0 if a.k == 7 else load
        simulate(a, random.Random(f"{seed}-steps-{a.k}"))
        a.last_ckpt = a.saves[-1][0] if a.saves else a.load
        load = a.last_ckpt
        if a.gap is not None:
            # before an in-job restart the gap is the launcher's own stop/rendezvous time: not jittered
            t = a.E + (a.gap if a.gap < 60 else a.gap + rng.randint(-60, 60))
    return atts


def ledger(atts: list[Attempt]):
    cats = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute",
                          "hang", "restart", "startup", "idle"], 0.0)
    per = []
    for i, a in enumerate(atts):
        cats["startup"] += a.F - a.S
        lost_lineage = a.k <= 6                      # the checkpoints of attempts 1-6 were wiped before attempt 7
        kept = a.last_ckpt if a.kind != "complete" else 10 ** 9
        for n, _, d in a.steps:
            if n <= kept:
                cats["recompute" if lost_lineage else "productive"] += d
        for _, _, c in a.saves:                      # kept or not (the ledger's convention, as bloom_opt.py)
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
    return {k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4), per


# ----------------------------------------------------------------------------- fleet
class Fleet:
    def __init__(self, seed: int) -> None:
        rng = random.Random(f"{seed}-fleet")
        self.skew = {h: round(rng.uniform(-6.0, 6.0), 3) for h in KA1 + KA2}
        self.boot = {h: T0 - rng.randint(2 * 86400, 6 * 86400) for h in KA1 + KA2}
        self.uuid = {(h, g): "GPU-" + "-".join(f"{rng.getrandbits(4 * w):0{w}x}" for w in (8, 4, 4, 4, 12))
                     for h in KA1 + KA2 for g in range(GPN)}


def pci(g: int) -> str:
    return f"0000:{BUSIDS[g][:2]}:00"


def loss_at(n: int, rng: random.Random) -> float:
    return 1.55 + 9.4 * math.exp(-n / 300.0) + 0.7 * math.exp(-n / 9000.0) + rng.gauss(0, 0.01)


# ----------------------------------------------------------------------------- the job log
def nemo_preamble(a: Attempt, L: Sink, sk: float, t: float, rng: random.Random) -> None:
    """What the workers print from their start to the first step (in rank 0's host clock)."""
    ck = CKPT[a.cluster]
    L.add(t + 20, nemo(t + 20 + sk, "I", "nemo_logging:381", "Rank 0 has data parallel group : [0, 64]"))
    L.add(t + 21, nemo(t + 21 + sk, "I", "nemo_logging:381",
                       f"Rank 0 has tensor model parallel group: [{', '.join(str(x) for x in range(8))}]"))
    L.add(t + 22, nemo(t + 22 + sk, "I", "nemo_logging:381", "Rank 0 has pipeline model parallel rank 0"))
    mbs = 2 if a.mode == "cuda_oom" else 1
    L.add(t + 23, nemo(t + 23 + sk, "I", "nemo_logging:381",
                       f"micro_batch_size: {mbs}, global_batch_size: {GBS}, seq_length: {SEQ}"))
    L.add(t + 24, nemo(t + 24 + sk, "W", "nemo_logging:393",
                       "/opt/NeMo/nemo/collections/llm/gpt/model/base.py:512: UserWarning: "
                       "Apex was not found. Using the lower precision fused layer norm."))
    if a.load == 0:
        L.add(t + 40, nemo(t + 40 + sk, "W", "nemo_logging:393",
                           f"There were no checkpoints found in checkpoint_dir or no checkpoint folder at "
                           f"checkpoint_dir :{ck}. Training from scratch."))
    else:
        L.add(t + 40, nemo(t + 40 + sk, "I", "nemo_logging:381",
                           f"Resuming training from checkpoint: {ck}/nemo70b--reduced_train_loss=0.0-"
                           f"step={a.load}-consumed_samples={a.load * GBS}.0-last"))
        lt = a.F - 12 - rng.uniform(0, 3)
        L.add(lt, nemo(lt + sk, "I", "nemo_logging:381",
                       f"Global Checkpoint Load : Rank : 0 : Start time : {lt - 150:.3f}s : Time spent in "
                       f"load_checkpoint: {150 + rng.uniform(0, 9):.3f}s"))
    L.add(a.F - 2, nemo(a.F - 2 + sk, "I", "nemo_logging:381", "Setting up optimizers done; starting training"))


def iteration_lines(a: Attempt, L: Sink, sk: float, seed: int) -> None:
    lrng = random.Random(f"{seed}-loss-{a.k}")
    steps = a.steps
    for j, (n, ts, dur) in enumerate(steps):
        if n % LOG_INTERVAL and j != 0:
            continue
        w = [d for (_, _, d) in steps[max(0, j - LOG_INTERVAL + 1): j + 1]]
        avg = sum(w) / len(w)
        end = ts + dur
        thr = TOKENS_PER_STEP * FLOPS_PER_TOKEN / avg / GPUS / 1e12
        L.add(end, f" [{meg_ts(end + sk)}] iteration {n:8d}/{TRAIN_ITERS:8d} | consumed samples: {n * GBS:12d} | "
                   f"elapsed time per iteration (ms): {avg * 1000:.1f} | throughput per GPU (TFLOP/s/GPU): "
                   f"{thr:.1f} | learning rate: {1.5e-4:.6E} | global batch size: {GBS:5d} | lm loss: "
                   f"{loss_at(n, lrng):.6E} | loss scale: 1.0 | grad norm: {0.3 + abs(lrng.gauss(0, 0.02)):.3f} | "
                   f"number of skipped iterations:   0 | number of nan iterations:   0 |")
    ck = CKPT[a.cluster]
    for n, ts, c in a.saves:
        L.add(ts + 0.01, f"saving checkpoint at iteration {n:7d} to {ck} in torch_dist format")
        L.add(ts + c - 0.02, f"  successfully saved checkpoint from iteration {n:7d} to {ck} [ t 1/{TP}, p 1/{PP} ]")
        L.add(ts + c - 0.01, nemo(ts + c - 0.01 + sk, "I", "nemo_logging:393",
                                  f"Global Checkpoint Save : Rank: 0 : Iteration: {n} : Start time: {ts + sk:.3f}s : "
                                  f"Save duration: {c:.3f}s"))


def ft_start_group(a: Attempt, L: Sink, fleet: Fleet, t: float, rnd: int) -> None:
    for i, h in enumerate(a.nodes):
        tt = t + 0.05 * i
        sk = fleet.skew[h]
        L.add(tt, ft(tt + sk, "INFO", h, f"[default] Rendezvous complete for workers. Result: restart_count="
                                         f"{rnd} master_addr={a.nodes[0]} master_port=29500 group_rank={i} "
                                         f"group_world_size={len(a.nodes)} local_ranks=[0, 1, 2, 3, 4, 5, 6, 7]"))
        L.add(tt + 0.2, ft(tt + 0.2 + sk, "INFO", h, "[default] Starting worker group"))


def ft_fail_group(a: Attempt, L: Sink, fleet: Fleet, pid0: int, root_host: str, root_local: int, ec: int,
                  restart_left: int | None, at: float | None = None) -> None:
    """The launchers notice the failed worker and stop the group; 'Worker group FAILED' at `at` (default a.E)."""
    E = a.E if at is None else at
    i = a.nodes.index(root_host)
    sk = fleet.skew[root_host]
    L.add(E - 6.0, ft(E - 6.0 + sk, "ERROR", root_host, f"failed (exitcode: {ec}) local_rank: {root_local} "
                      f"(pid: {pid0 + i * 16 + root_local}) of binary: /usr/bin/python"))
    for h in a.nodes:
        L.add(E - 5.0, ft(E - 5.0 + fleet.skew[h], "INFO", h, "Stopping workers... Timeout = 30 sec."))
    if restart_left is None:
        for h in a.nodes:
            L.add(E, ft(E + fleet.skew[h], "INFO", h, "[default] Worker group FAILED. 0/3 attempts left; "
                                                      "will not restart worker group"))
    else:
        for h in a.nodes:
            L.add(E, ft(E + fleet.skew[h], "INFO", h, f"[default] Worker group FAILED. {restart_left}/3 attempts "
                                                      f"left; will restart worker group"))


def watchdog(t: float, r: int, seq: int) -> list[str]:
    wd = (f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, "
          f"NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600031 milliseconds before timing out.")
    return [f"[rank{r}]:[{glog_c10(t, 'E')} ProcessGroupNCCL.cpp:616] {wd}",
            f"[rank{r}]:[{glog_c10(t + 0.002, 'E')} ProcessGroupNCCL.cpp:636] [Rank {r}] To avoid data "
            f"inconsistency, we are taking the entire process down."]


OOM_TB = [
    "Traceback (most recent call last):",
    '  File "/opt/NeMo/examples/nlp/language_modeling/megatron_gpt_pretraining.py", line 42, in main',
    "    trainer.fit(model)",
    '  File "/opt/megatron-lm/megatron/core/pipeline_parallel/schedules.py", line 1727, in '
    'forward_backward_pipelining_without_interleaving',
    "    output_tensor, num_tokens = forward_step(",
    '  File "/opt/megatron-lm/megatron/core/transformer/mlp.py", line 119, in forward',
    "    intermediate_parallel = self.activation_func(intermediate_parallel)",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 7 has a total capacity of "
    "79.10 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process has 77.88 GiB memory in use. "
    "Of the allocated memory 71.02 GiB is allocated by PyTorch, and 5.31 GiB is reserved by PyTorch but unallocated. "
    "If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to "
    "avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
]


def job_log(job: int, atts: list[Attempt], fleet: Fleet, seed: int) -> bytes:
    rng = random.Random(f"{seed}-log-{job}")
    L = Sink()
    a0 = atts[0]
    h0 = a0.nodes[0]
    sk = fleet.skew[h0]
    pid0 = 100000 + rng.randint(0, 800000)
    L.add(a0.S, f"START TIME: {_dt(a0.S + sk):%a %b %d %H:%M:%S UTC %Y}")
    L.add(a0.S + 1, f"+ srun --ntasks-per-node=1 ft_launcher --ft-cfg-path=/opt/ft.yaml --max-restarts=3 "
                    f"--nnodes={len(a0.nodes)} --nproc-per-node=8 /opt/NeMo/examples/nlp/language_modeling/"
                    f"megatron_gpt_pretraining.py")
    for j, a in enumerate(atts):
        grp_start = a.S + (30.0 if not a.injob else 0.0)
        ft_start_group(a, L, fleet, grp_start, j)
        nemo_preamble(a, L, sk, grp_start, rng)
        iteration_lines(a, L, sk, seed)
        # harmless noise
        L.add(a.F + 3, "/opt/megatron-lm/megatron/core/tensor_parallel/layers.py:718: UserWarning: When using "
                       "async grad allreduce it is recommended to set CUDA_DEVICE_MAX_CONNECTIONS to 1")
        L.add(a.F + 3.01, "  warnings.warn(")
        ending(a, L, fleet, pid0, rng)
    last = atts[-1]
    if last.kind == "failure" and last.mode != "node_failure":
        L.add(last.E - 0.5, f"srun: error: {last.nodes[0]}: task 0: Exited with exit code 1")
    return L.render()


def ending(a: Attempt, L: Sink, fleet: Fleet, pid0: int, rng: random.Random) -> None:
    R, E = a.R, a.E
    if a.kind == "complete":
        L.add(E - 3, nemo(E - 3 + fleet.skew[a.nodes[0]], "I", "nemo_logging:381",
                          f"`Trainer.fit` stopped: `max_steps={a.steps[-1][0]}` reached."))
        for h in a.nodes:
            L.add(E - 1, ft(E - 1 + fleet.skew[h], "INFO", h, "[default] worker group successfully finished. "
                                                             "Waiting 300 seconds for other agents to finish."))
        return
    if a.kind == "time_limit":
        L.add(R, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(R)} DUE TO TIME LIMIT ***")
        for h in a.nodes:
            L.add(R + 0.4, ft(R + 0.4 + fleet.skew[h], "WARNING", h, "Received 15 death signal, shutting down workers"))
        return
    seq = 90000 + rng.randint(0, 9000)
    if a.mode == "gpu_hw_other":                        # Xid 119: the rank stalls, its monitor kills it
        i = a.nodes.index(a.host)
        r = i * GPN + a.gpu
        t = R + 300.0
        L.add(t, ft(t + fleet.skew[a.host], "WARNING", a.host,
                    "Did not get subsequent heartbeat. Waited 300.00 seconds.", who="RankMonServer"))
        ft_fail_group(a, L, fleet, pid0, a.host, a.gpu, -9, restart_left=2, at=E - 14)
        t2 = E - 8
        L.add(t2, ft(t2 + fleet.skew[a.host], "ERROR", a.host, f"GPU health check failed for node {a.host}: "
                                                               f"Node {a.host} has an unhealthy GPU."))
        L.add(t2 + 1, ft(t2 + 1 + fleet.skew[a.host], "ERROR", a.host, "Rendezvous failed: not enough healthy nodes "
                                                                       "(15/16); giving up"))
        return
    if a.mode == "nvlink_error":                          # NCCL hangs; the watchdog fires everywhere
        tw = R + 600.0
        for r in range(GPUS):
            if r % 9 == 0:
                L.extend(tw + 0.01 * r, watchdog(tw + 0.01 * r + fleet.skew[a.nodes[r // GPN]], r, seq))
        ft_fail_group(a, L, fleet, pid0, a.nodes[2], 0, -6, restart_left=2)
        return
    if a.mode == "pcie_error":
        i = a.nodes.index(a.host)
        r = i * GPN + a.gpu
        t = R + 36.0
        L.extend(t, [f"[rank{r}]: RuntimeError: CUDA error: unspecified launch failure",
                     f"[rank{r}]: CUDA kernel errors might be asynchronously reported at some other API call, so "
                     f"the stacktrace below might be incorrect."])
        ft_fail_group(a, L, fleet, pid0, a.host, a.gpu, 1, restart_left=1, at=E - 14)
        t2 = E - 8
        L.add(t2, ft(t2 + fleet.skew[a.host], "ERROR", a.host, f"GPU health check failed for node {a.host}: "
                                                               f"Node {a.host} has an unhealthy GPU."))
        return
    if a.mode == "cuda_oom":
        r = GPUS - 1
        host = a.nodes[-1]
        t = R + 0.8
        L.extend(t, [f"[rank{r}]: {ln}" for ln in OOM_TB])
        ft_fail_group(a, L, fleet, pid0, host, a.gpu, 1, restart_left=None if a.injob else 2,
                      at=E - 2 if a.injob else E)
        return
    if a.mode == "node_failure":
        tw = R + 600.0
        for r in range(GPUS):
            if a.nodes[r // GPN] != a.host and r % 5 == 0:
                L.extend(tw + 0.01 * r, watchdog(tw + 0.01 * r + fleet.skew[a.nodes[r // GPN]], r, seq))
        L.add(E - 2, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(E - 2)} DUE TO "
                     f"NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***")
        L.add(E - 1.9, f"srun: error: Node failure on {a.host}")
        return


def nccl_log(a: Attempt, h: str, rnd: int, seed: int) -> list[str]:
    rng = random.Random(f"{seed}-nccl-{a.k}-{h}")
    i = a.nodes.index(h)
    cid = "0x{:016x}".format(random.Random(f"{seed}-cid-{a.k}").getrandbits(64))
    out = []
    for d in range(GPN):
        w = 200000 + rng.randint(0, 90000)
        out.append(f"{h}:{w}:{w + 91} [{d}] NCCL INFO comm 0x55{rng.getrandbits(36):09x}0 rank {i * GPN + d} nranks "
                   f"{GPUS} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} commId {cid} - Init COMPLETE")
    return out


# ----------------------------------------------------------------------------- kernel logs
def kernel_logs(atts: list[Attempt], fleet: Fleet, bundle: Path, seed: int) -> None:
    by_k = {a.k: a for a in atts}
    end = atts[-1].E + 1800
    for h in KA1 + KA2:
        rng = random.Random(f"{seed}-kern-{h}")
        sk = fleet.skew[h]
        ev: list[tuple[float, str]] = [(fleet.boot[h], "Linux version 6.8.0-1015-nvidia (buildd@lcy02) #16-Ubuntu SMP")]
        t = fleet.boot[h] + 900
        while t < end:
            ev.append((t, rng.choice(["hrtimer: interrupt took 21312 ns",
                                      "kauditd_printk_skb: 12 callbacks suppressed",
                                      "docker0: port 1(veth5a1c2e9) entered blocking state"])))
            t += rng.uniform(3000, 15000)
        a1, a2, a3, a7, a8 = by_k[1], by_k[2], by_k[3], by_k[7], by_k[8]
        if h == a1.host:
            g = a1.gpu
            ev += [(a1.R, f"NVRM: Xid (PCI:{pci(g)}): 119, pid=3{rng.randint(10000, 99999)}, name=python, Timeout "
                          f"waiting for RPC from GSP{g}! Expected function 76 (GSP_RM_CONTROL) (0x2080014b 0x5)."),
                   (a1.R + 6, f"NVRM: Xid (PCI:{pci(g)}): 119, pid=3{rng.randint(10000, 99999)}, name=python, Timeout "
                              f"waiting for RPC from GSP{g}! Expected function 10 (FREE) (0x0 0x0)."),
                   (a1.R + 7, f"NVRM: GPU{g} GSP RPC buffer contains function 76 (GSP_RM_CONTROL) and data 0x2080014b")]
        if h == a2.host:
            g = a2.gpu
            ev += [(a2.R, f"NVRM: Xid (PCI:{pci(g)}): 74, pid=2{rng.randint(10000, 99999)}, name=python, NVLink: "
                          f"fatal error detected on link 7(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"),
                   (a2.R + 0.3, "nvidia-nvswitch2: SXid (PCI:0000:86:00.0): 12028, Non-fatal, Link 34 egress "
                                "non-posted PRIV error (First)"),
                   (a2.R + 0.3, "nvidia-nvswitch2: SXid (PCI:0000:86:00.0): 12028, Severity 0 Engine instance 34 "
                                "Sub-engine instance 00"),
                   (a2.R + 0.4, "nvidia-nvswitch2: SXid (PCI:0000:86:00.0): 12028, Data {0x00000000, 0x00000010}")]
        if h == "ka1-006":                               # decoy: Xid 13 from a user's profiling kernel
            tx = a2.F + 0.45 * (a2.R - a2.F)
            ev.append((tx, f"NVRM: Xid (PCI:{pci(1)}): 13, pid=2{rng.randint(10000, 99999)}, name=ncu, Graphics SM "
                           f"Warp Exception on (GPC 3, TPC 1, SM 0): Out Of Range Address"))
        if h == a3.host:
            g = a3.gpu
            rp = ROOT_PORTS[g]
            R = a3.R
            ev += [(R, f"pcieport {rp}: AER: Uncorrected (Fatal) error received: {rp}"),
                   (R, f"pcieport {rp}: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, "
                       f"(Receiver ID)"),
                   (R, f"pcieport {rp}:   device [8086:352a] error status/mask=00004000/00000000"),
                   (R, f"pcieport {rp}:    [14] CmpltTO                (First)"),
                   (R + 0.002, f"nvidia {pci(g)}.0: AER: can't recover (no error_detected callback)"),
                   (R + 1.05, f"pcieport {rp}: AER: device recovery failed"),
                   (R + 35, f"NVRM: GPU at PCI:{pci(g)}: {fleet.uuid[h, g]}"),
                   (R + 35, f"NVRM: Xid (PCI:{pci(g)}): 79, pid=2{rng.randint(10000, 99999)}, name=python, GPU has "
                            f"fallen off the bus."),
                   (R + 35, f"NVRM: GPU {pci(g)}.0: GPU has fallen off the bus.")]
        if h == "ka2-017":                               # decoy: a spare, never in the job, with an Xid 79
            tx = a8.F + 3 * 3600
            ev += [(tx, f"NVRM: Xid (PCI:{pci(6)}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
                   (tx, f"NVRM: GPU {pci(6)}.0: GPU has fallen off the bus.")]
        if h == a7.host:                                 # the node dies: nothing after the root
            ev = [(t, m) for t, m in ev if t < a7.R - 40]
        if h in a8.nodes:                                # the degraded Lustre during the slow saves
            for _n, ts, c in a8.saves[9:12]:
                ev += [(ts + 30, "Lustre: ka2lfs-OST0012-osc-ff3e8a1c: Connection to ka2lfs-OST0012 "
                                 "(at 10.9.0.42@o2ib) was lost; in progress operations using this service will "
                                 "wait for recovery to complete"),
                       (ts + c - 20, "Lustre: ka2lfs-OST0012-osc-ff3e8a1c: Connection restored to 10.9.0.42@o2ib "
                                     "(at 10.9.0.42@o2ib)")]
        ev.sort(key=lambda x: x[0])
        if CLUSTER_OF[h] == "ka-1":
            body = "\n".join(f"{dmesg_T(t + sk)} {m}" for t, m in ev)
            write(bundle / "nodes" / h / "dmesg.log", (body + "\n").encode())
        else:
            body = "\n".join(f"{syslog(t + sk, h)} [{t - fleet.boot[h]:12.6f}] {m}" for t, m in ev)
            write(bundle / "nodes" / h / "kern.log", (body + "\n").encode())
    # decoy: corrected ECC counts rising on ka2-003 GPU1, no failure
    a8 = by_k[8]
    rows = ["timestamp, index, pci.bus_id, ecc.errors.corrected.volatile.total, ecc.errors.uncorrected.volatile.total"]
    t, c = a8.F, 0
    while t < a8.E:
        c += 3 if t > a8.F + 3600 else 0
        for g in range(GPN):
            rows.append(f"{_dt(t):%Y/%m/%d %H:%M:%S}.000, {g}, 00000000:{BUSIDS[g][:2].upper()}:00.0, "
                        f"{c if g == 1 else 0}, 0")
        t += 600
    write(bundle / "nodes" / "ka2-003" / "nvidia-smi-ecc.csv", ("\n".join(rows) + "\n").encode())


# ----------------------------------------------------------------------------- scheduler
def scheduler(atts: list[Attempt], bundle: Path) -> None:
    jobs: dict[int, list[Attempt]] = {}
    for a in atts:
        jobs.setdefault(a.job, []).append(a)
    for cl in ("ka-1", "ka-2"):
        L = Sink()
        rows = ["JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"]
        for job, js in jobs.items():
            first, last = js[0], js[-1]
            if first.cluster != cl:
                continue
            S, E = first.S, last.E
            hl = hostlist(first.nodes)
            L.add(S - 5, f"{ctld(S - 5)} _slurm_rpc_submit_batch_job: JobId={job} InitPrio=4294901 usec=512")
            L.add(S, f"{ctld(S)} sched: Allocate JobId={job} NodeList={hl} #CPUs={224 * 16} Partition=batch")
            if last.kind == "time_limit":
                L.add(last.R, f"{ctld(last.R)} Time limit exhausted for JobId={job}")
                L.add(E, f"{ctld(E)} _job_complete: JobId={job} WTERMSIG 15")
                st, ec = "TIMEOUT", "0:0"
            elif last.mode == "node_failure":
                L.add(last.R + 300, f"{ctld(last.R + 300)} error: Nodes {last.host} not responding")
                L.add(E - 2.5, f"{ctld(E - 2.5)} error: Nodes {last.host} not responding, setting DOWN")
                L.add(E - 2.4, f"{ctld(E - 2.4)} Killing JobId={job} on failed node {last.host}")
                L.add(E, f"{ctld(E)} _job_complete: JobId={job} WTERMSIG 9")
                st, ec = "NODE_FAIL", "0:0"
            elif last.kind == "complete":
                L.add(E, f"{ctld(E)} _job_complete: JobId={job} WEXITSTATUS 0")
                st, ec = "COMPLETED", "0:0"
            else:
                L.add(E, f"{ctld(E)} _job_complete: JobId={job} WEXITSTATUS 1")
                st, ec = "FAILED", "1:0"
            L.add(E + 0.01, f"{ctld(E + 0.01)} _job_complete: JobId={job} done")
            rows.append(f"{job}|nemo70b|batch|llm|{224 * 16}|{st}|{ec}|{slurm_ts(S - 5)}|{slurm_ts(S)}|"
                        f"{slurm_ts(E)}|{elapsed(E - S)}|16|{hl}")
            rows.append(f"{job}.batch|batch||llm|224|{'COMPLETED' if st == 'COMPLETED' else 'CANCELLED'}|"
                        f"{'0:0' if st == 'COMPLETED' else '0:15'}|{slurm_ts(S)}|{slurm_ts(S)}|{slurm_ts(E)}|"
                        f"{elapsed(E - S)}|1|{first.nodes[0]}")
        if cl == "ka-2":
            a6 = next(a for a in atts if a.k == 6)
            m0 = a6.E + 600
            L.add(m0, f"{ctld(m0)} sched: Created reservation=maint_ka2 users=root nodes={hostlist(KA2)} "
                      f"cores=4032 licenses=(null) tres=cpu=4032 watts=4294967294 start={slurm_ts(m0 + 60)} "
                      f"end={slurm_ts(m0 + 3 * 3600)}")
        L.items.sort(key=lambda x: x[0])
        write(bundle / "scheduler" / cl / "slurmctld.log", L.render())
        write(bundle / "scheduler" / cl / "sacct.txt", ("\n".join(rows) + "\n").encode())


def inventory() -> str:
    return f"""[providers.{PROVIDER}]
usd_per_gpu_hour = 2.39

[clusters.ka-1]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = 8
nodes = "{hostlist(KA1)}"

[clusters.ka-2]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = 8
nodes = "{hostlist(KA2)}"
"""


def run_toml() -> str:
    return f"""# {RUN}: NeMo 2 / Megatron-core 70B, TP={TP} PP={PP} DP={DP}, launched with ft_launcher
cluster = "ka-1"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.3e}
checkpoint_dir = "{CKPT['ka-1']}"
launcher = "slurm"
launch_command = "sbatch --nodes=16 --gpus-per-node=8 --time=10:00:00 nemo_ft.sbatch"
"""


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    atts = build(seed)
    fleet = Fleet(seed)
    write(bundle / "inventory.toml", inventory().encode())
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", run_toml().encode())
    by_job: dict[int, list[Attempt]] = {}
    for a in atts:
        by_job.setdefault(a.job, []).append(a)
    for job, js in by_job.items():
        write(rdir / f"job-{job}" / f"slurm-{job}.out", job_log(job, js, fleet, seed))
        for h in js[0].nodes:
            lines = []
            for rnd, a in enumerate(js):
                lines += nccl_log(a, h, rnd, seed)
            write(rdir / f"job-{job}" / "nccl" / f"{h}.log", ("\n".join(lines) + "\n").encode())
    kernel_logs(atts, fleet, bundle, seed)
    scheduler(atts, bundle)
    cats, total, per = ledger(atts)
    incidents = []
    for j, a in enumerate(atts[:-1]):
        host = a.host        # a user's OOM and the time limit name no host (rank 127's host is incidental)
        incidents.append({"id": j + 1, "attempt": a.k, "attempts": [a.k], "slurm_job": a.job,
                          "failure_mode": a.mode, "host": host if a.mode != "time_limit" else None,
                          "cluster": a.cluster, "provider": PROVIDER, "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E),
                          "last_ckpt_step": a.last_ckpt,
                          "gpu_hours_lost": round(sum(per[j].values()) * GPUS / 3600, 4)})
    a7 = atts[6]
    incidents.append({"id": len(incidents) + 1, "attempt": 7, "attempts": [6, 7], "failure_mode": "checkpoint_lost",
                      "host": None, "cluster": "ka-2", "provider": PROVIDER, "root_ts": iso_z(a7.S),
                      "lost_steps": atts[5].last_ckpt})
    decoys = {"ka1-006": "Xid 13 from a user's ncu profiling kernel in attempt 2; training stepped on",
              "ka2-003": "corrected ECC counts rising on GPU1 (nvidia-smi); no failure",
              "ka2-017": "Xid 79 on an idle spare never in the job",
              "ka1-008": "NVLink peer of ka1-009 in attempt 2: watchdog timeouts are symptoms",
              "ka1-010": "NVLink peer of ka1-009 in attempt 2: watchdog timeouts are symptoms",
              "ka2-007": "neighbour of the dead ka2-008: watchdog timeouts are symptoms",
              "ka2-009": "neighbour of the dead ka2-008: watchdog timeouts are symptoms"}
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "first_start_ts": iso_z(atts[0].S), "last_end_ts": iso_z(atts[-1].E), "clock_skew_s": fleet.skew,
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "in_job_restart": a.injob, "nodes": hostlist(a.nodes),
                      "start_ts": iso_z(a.S), "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E),
                      "loaded_step": a.load, "last_step": a.steps[-1][0] if a.steps else a.load,
                      "saves": [n for n, _, _ in a.saves], "end": a.mode or "complete"} for a in atts],
        "match_on_attempt": True,
        "incidents": incidents,
        "forbidden_incidents": [
            {"failure_mode": "checkpoint_stall", "attempts": [8],
             "reason": "slow saves on a degraded Lustre: checkpoint time, not an incident ending an attempt"}],
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys, "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: 0.0},
        "notes": "Times are the controllers' UTC clock. Ledger: see nemo_ft.py docstring.",
    }
    write(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    files = [p for p in (out / "bundle").rglob("*") if p.is_file()]
    print(f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB); "
          f"total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
