#!/usr/bin/env python3
"""Independent campaign "yalm_100b": a re-enactment of a YaLM-100B style pre-training run.

Written outside the team that writes clusterlab's analysis, from public material only. The theme follows
Yandex's public account of training YaLM-100B (Medium "Yandex Publishes YaLM 100B..." 2022 and the
yandex/YaLM-100B README): a 100B dense GPT on A100s, Megatron-DeepSpeed, fp16 with a dynamic loss scale,
where most of the lost time came from training numerics (loss spikes, divergence, rollbacks with a lower
learning rate, fp16 loss-scale trouble) rather than from hardware.

Writes, under --out DIR:
  DIR/bundle/inventory.toml, DIR/bundle/runs/yalm-100b/run.toml
  DIR/bundle/runs/yalm-100b/attempt-<k>/slurm-<jobid>.out[.gz]    sbatch/srun/torchrun/Megatron-DeepSpeed output
  DIR/bundle/runs/yalm-100b/attempt-<k>/nccl/<host>.nccl.log      NCCL_DEBUG=INFO of that host (NCCL 2.12)
  DIR/bundle/nodes/<host>/{dmesg.log | journal-kernel.log | kern.log + kern.log.1.gz}
  DIR/bundle/scheduler/{slurmctld.log, sacct.txt}
  DIR/truth.json
Usage: yalm_100b.py --out DIR [--seed N]   (Python 3.11, stdlib only, deterministic per seed; gzip mtime=0)

Scenario (run "yalm-100b", 160 GPUs = 20 nodes x 8 A100-SXM4-80GB of cluster vla-a100 / provider
"volga"; 24 nodes in the inventory, ya-n21..ya-n24 are spares; TP=8 PP=4 DP=5; all truth times are the
Slurm controller's UTC clock; every node's kernel clock is off by a few seconds (truth "clock_skew_s")):
  attempt 1  fresh start. Two loss spikes (lm loss jumps by ~1.5, a few fp16 OVERFLOW skips, back on
             trend within ~40 iterations: NOT incidents). Then Xid 79 on ya-n06 GPU2 ("GPU has fallen
             off the bus", in the ROTATED kern.log.1.gz of that node); the other ranks block in the next
             collective and the torch 1.11 NCCL watchdog (Timeout(ms)=1800000) takes them down 30 min
             later; slurmctld sets ya-n06 DOWN, the job ends NODE_FAIL           [gpu_fell_off_bus, ya-n06]
  attempt 2  ya-n06 replaced by spare ya-n21; resumes from the last save. From iteration D the lm loss
             climbs and never comes back (grad norm up, skipped iterations pile up); the user scancels
             the job (sacct "CANCELLED by 5012"), and relaunches attempt 3 from an OLDER checkpoint
             (the last one before D) with a lower learning rate                 [loss_divergence, host null]
  attempt 3  the deliberate rollback: the sbatch script rewrites "latest" to the older global_step and
             says so, --lr 6e-05 -> 4.5e-05; the newer saves of attempt 2 are abandoned, NOT lost (no
             checkpoint_lost). Later an fp16 loss-scale collapse: "[deepspeed] OVERFLOW! ... reducing to"
             on every iteration down to the minimum, then every rank raises "Exception: Current loss scale
             already at minimum - cannot decrease scale anymore. Exiting run."   [loss_divergence, host null]
             Decoy: harmless Xid 13 on ya-n03 mid-attempt (training continues at pace).
  attempt 4  resumes from attempt 3's last save. A GPU on one host (a4.nodes[16], GPU5, a last pipeline
             stage host) starts producing inf/NaN gradients on its rank only: 4 overflow skips (looks like
             ordinary fp16 noise), then Megatron's per-rank check "Rank R: found NaN in local grad norm in
             backward pass before data-parallel communication collective. Device: 5, node: <host>" on
             that rank alone -> torchrun on that host fails (exitcode 1) -> srun kills the step; two
             data-parallel peers print NCCL "remote process exited or there was a network error"
             (symptoms). The operator drains the host ("dcgmi diag -r 3 fail, nan grads")
                                                                      [silent_data_corruption, that host]
  attempt 5  that host replaced by spare ya-n22; healthy (one more self-healing loss spike) until the
             12 h Slurm TIME LIMIT                                                [time_limit, host null]
  attempt 6  resumes and completes (final save, "[after training is done]").
  Decoys: the self-healing loss spikes (attempts 1, 5, 6), harmless Xid 13 on ya-n03, a harmless NCCL
  WARN "Got async event : GID table change" on ya-n09, the two DP peers of attempt 4 that only print
  NCCL errors, idle spare ya-n23 (NFS not responding/OK blip) and idle spare ya-n24 (an mlx5 link
  down/up while no job ran on it). Noise: NCCL INFO spam, Python UserWarnings, iteration lines without
  a timestamp of their own (Megatron-DeepSpeed prints none), torch 1.11 "[E ProcessGroupNCCL.cpp:...]"
  lines without time, a truncated last line (attempt 1), a gzipped rotated kernel log, gzipped slurm
  output (attempts 5, 6), non-UTF-8 bytes.

Ledger (truth.json expected_ledger; GPU-hours = 160 x seconds / 3600; conventions of campaign1.py):
  startup    = attempt start (sacct Start / "START TIME") -> first training step start
               ("[before the start of training step] datetime: ...")
  productive = kept steps: iteration <= the checkpoint the NEXT attempt loads (for attempt 2 that is
               the rollback checkpoint, not the newest save); all steps of the completed attempt.
               Skipped (overflow) iterations inside the kept range count as steps.
  checkpoint = save stalls of kept checkpoints (saves of iteration <= next attempt's load), plus the tail
               after the final save of attempt 6
  recompute  = end of the save of the checkpoint the next attempt loads (or the attempt's first step
               start if that checkpoint is older than the attempt) -> root event. For attempt 2 this
               includes the two saves newer than the rollback point (abandoned work).
  hang       = root event -> attempt exit (sacct End). Root events: attempt 1 the Xid 79; attempt 2 the
               scancel (the job stepped at pace until then; the diverged steps are recompute); attempt 3
               the "Current loss scale already at minimum" exception; attempt 4 the NaN assertion on the
               bad rank (the 4 overflow skips before it were at pace); attempt 5 the time-limit kill.
  restart    = attempt exit -> next attempt start; straggler = slowdown = data_stall = idle = 0.

Formats, and where they were seen (public material found with the search tools; text written anew):
  * Megatron-DeepSpeed iteration line, no timestamp (bigscience-workshop/bigscience
    train/tr11-176B-ml/chronicles.md: " iteration    12695/  115311 | consumed samples: ... | consumed
    tokens: ... | elapsed time per iteration (s): 105.22 | learning rate: 5.969E-05 | global batch size:
    2048 | lm loss: 2.463556E+00 | grad norm: 0.174 | num zeros: 0.0 | number of skipped iterations:   0 |
    number of nan iterations:   0 | samples per second: 19.463 | TFLOPs: 149.02 |"); the fp16 variant adds
    "loss scale: N |" after the loss (Megatron training_log, fp16 runs of the bigscience tr1/tr8 logs).
  * DeepSpeed fp16 dynamic loss scaler: "[2023-06-07 22:16:00,018] [INFO] [loss_scaler.py:181:update_scale]
    [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 64, reducing to 32" and the
    hysteresis variant "... Attempted loss scale: 65536, but hysteresis is 2. Reducing hysteresis to 1"
    (ymcui/Chinese-LLaMA-Alpaca #534, deepspeedai/DeepSpeed #931, zai-org/CogVideo #233);
    "Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run."
    (ymcui/Chinese-LLaMA-Alpaca #534, modelscope/ms-swift #4374, dwzhu-pku/PoSE #16); DeepSpeed log_dist
    "[INFO] [logging.py:69:log_dist] [Rank 0] step=N, skipped=K, lr=[...], mom=[...]" (DeepSpeed #931).
  * Megatron NaN check: "Rank 11: found NaN in local grad norm in backward pass before data-parallel
    communication collective. Device: 3" (alibaba/Pai-Megatron-Patch #366, NVIDIA/Megatron-LM #780 citing
    megatron/core/distributed/param_and_grad_buffer.py); the node-naming variant "Rank 2, node
    dcfai-xe9680-01, device 2, iteration -1: Unexpected result nan (message='found NaN in local grad norm
    ...')" (NVIDIA-NeMo #14348); here as AssertionError with ", node: <host>".
  * Megatron startup/checkpoint lines ("[after megatron is initialized] datetime:", "[before the start of
    training step] datetime:", "saving checkpoint at iteration N to DIR", "successfully saved checkpoint
    at iteration N to DIR", "time (ms) | save-checkpoint: X", "[after training is done] datetime:") as in
    the bigscience .out logs; DeepSpeed "Saving model checkpoint: DIR/global_stepN/mp_rank_00_model_states.pt".
  * torch 1.11 elastic (python logging "LEVEL:logger:msg"): "WARNING:torch.distributed.elastic.
    multiprocessing.api:Sending process P closing signal SIGTERM", "ERROR:torch.distributed.elastic.
    multiprocessing.api:failed (exitcode: 1) local_rank: L (pid: P) of binary: /usr/bin/python3", the
    ChildFailedError block with "Root Cause (first observed failure):" and "To enable traceback see:
    https://pytorch.org/docs/stable/elastic/errors.html" (many public issues, e.g. Vision-CAIR/MiniGPT-4
    #237); ProcessGroupNCCL of that era without a timestamp: "[E ProcessGroupNCCL.cpp:737] [Rank N]
    Watchdog caught collective operation timeout: WorkNCCL(SeqNum=S, OpType=ALLREDUCE, Timeout(ms)=1800000)
    ran for 1800xxx milliseconds before timing out." and "[E ProcessGroupNCCL.cpp:414] Some NCCL operations
    have failed or timed out. ... we are taking the entire process down."
  * NCCL 2.12 INFO/WARN ("host:pid:tid [d] NCCL INFO comm 0x... rank N nranks M cudaDev d busId b - Init
    COMPLETE", "NET/IB : Using [0]mlx5_0:1/IB ... ; OOB ib0:...", "Channel 00 : 0[7000] -> 1[f000] via
    P2P/IPC/read", "transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_2:1 Got async event : GID table
    change", "NCCL WARN NET/IB : Got completion from peer ... with error 12, opcode 0, len 0, vendor err
    129"): NVIDIA/nccl issues (#1814, #1405, #928), espnet/espnet #2310 for the older init shape.
  * NVRM Xid 79 / Xid 13 kernel lines, dmesg -T, journalctl -o short-iso, rsyslog "Apr 18 09:01:02 host
    kernel: [ 1234.567890] ..." : NVIDIA/open-gpu-kernel-modules issues and the real-excerpt labels
    named in campaign1.py; "nfs: server X not responding, still trying" / "nfs: server X OK" (leptonai/gpud
    components/nfs); "mlx5_core 0000:xx:00.0 ib0: Link down" (Linux mlx5e en_main.c).
  * Slurm: slurmstepd "*** JOB %u ON %s CANCELLED AT %s DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR
    DETAILS ***", "... DUE TO TIME LIMIT ***", "*** JOB %u ON %s CANCELLED AT %s ***" (scancel),
    "*** STEP %u.%u ON %s CANCELLED AT %s ***"; srun "error: <node>: task N: Exited with exit code 1";
    slurmctld "_slurm_rpc_submit_batch_job", "sched: Allocate JobId=...", "_slurm_rpc_kill_job:
    REQUEST_KILL_JOB JobId=N uid U", "Time limit exhausted for JobId=N", "Killing JobId=N on failed node",
    "update_node: node X reason set to: ...", sacct pipe output with State CANCELLED by U / TIMEOUT /
    NODE_FAIL (slurm sources, ArjunaCluster/ArjunaUsers #137, nebius/soperator #854).
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

RUN = "yalm-100b"
CLUSTER, PROVIDER = "vla-a100", "volga"
GPN = 8
NODES_USED = 20
GPUS = NODES_USED * GPN                       # 160
TP, PP, DP = 8, 4, 5
GBS, SEQ = 320, 2048
TOKENS_PER_STEP = GBS * SEQ                   # 655360
FLOPS_PER_TOKEN = 6.2013e11                   # 6*100e9 + 12*L*h*s (L=80, h=10240, s=2048)
PEAK_A100 = 312e12                            # dense fp16/bf16 tensor core
BASE_STEP = 18.40
STEP_JITTER = 0.004
SAVE_INTERVAL = 250
LOG_INTERVAL = 5
DS_PRINT = 10
LR0, LR_LOW = 6.0e-5, 4.5e-5
T0 = datetime(2022, 4, 18, 6, 0, 0, tzinfo=UTC).timestamp()
CKPT = "/mnt/ceph/yalm/ckpt/yalm-100b"
HOSTS = [f"ya-n{i:02d}" for i in range(1, 25)]
BUSIDS = ["07000", "0f000", "47000", "4e000", "87000", "90000", "b7000", "bd000"]
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error", "network",
                  "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption",
                  "silent_data_corruption"]
USER_UID = 5012
SITE = "/opt/conda/lib/python3.8/site-packages"


# ----------------------------------------------------------------------------- time formats
def dt(t: float) -> tuple[datetime, int]:
    us = int(round(t * 1e6))
    s, u = divmod(us, 1_000_000)
    return datetime.fromtimestamp(s, UTC), u


def iso_z(t: float) -> str:
    d, u = dt(t)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{u // 1000:03d}Z"


def ds_ts(t: float) -> str:                       # DeepSpeed / python logging asctime
    d, u = dt(t)
    return f"[{d:%Y-%m-%d %H:%M:%S},{u // 1000:03d}]"


def meg_ts(t: float) -> str:
    return dt(t)[0].strftime("%Y-%m-%d %H:%M:%S")


def date_cmd(t: float) -> str:
    d, _ = dt(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def slurm_ts(t: float) -> str:
    return dt(t)[0].strftime("%Y-%m-%dT%H:%M:%S")


def ctld_ts(t: float) -> str:
    d, u = dt(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{u // 1000:03d}]"


def elapsed(sec: float) -> str:
    sec = int(round(sec))
    dd, r = divmod(sec, 86400)
    h, r = divmod(r, 3600)
    m, s = divmod(r, 60)
    return (f"{dd}-" if dd else "") + f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts: list[str]) -> str:
    nums = sorted(int(h[4:]) for h in hosts)
    parts, a, b = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == b + 1:
            b = n
            continue
        parts.append(f"{a:02d}" if a == b else f"{a:02d}-{b:02d}")
        if n is not None:
            a = b = n
    return f"ya-n[{','.join(parts)}]"


class Sink:
    def __init__(self) -> None:
        self.items: list[tuple[float, int, str | bytes]] = []

    def add(self, t: float, line: str | bytes) -> None:
        self.items.append((t, len(self.items), line))

    def extend(self, t: float, lines) -> None:
        for ln in lines:
            self.add(t, ln)

    def render(self, cut: int | None = None) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
        data = b"\n".join(x[2] if isinstance(x[2], bytes) else x[2].encode() for x in self.items)
        return data + b"\n" if cut is None else data[:len(data) - cut]


def write(path: Path, data: bytes, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as f:
            f.write(data)
        data = buf.getvalue()
    path.write_bytes(data)


# ----------------------------------------------------------------------------- timeline
class Att:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps: list[tuple[int, float, float]] = []
        self.saves: list[tuple[int, float, float]] = []
        self.R = self.E = None


def build(seed: int, train_iters: int) -> list[Att]:
    rng = random.Random(f"{seed}-tl")
    n = HOSTS
    base = n[:20]
    a2n = n[:5] + n[6:21]
    specs = [
        dict(k=1, job=31401, nodes=base, kind="fail", mode="gpu_fell_off_bus", root=("ya-n06", 2),
             run_steps=1000 + rng.randint(90, 170), startup=410 + rng.randint(-20, 20),
             hang=1800 + rng.randint(25, 60), gap=3100 + rng.randint(-400, 400),
             spikes=[380 + rng.randint(0, 40), 760 + rng.randint(0, 40)]),
        dict(k=2, job=31418, nodes=a2n, kind="fail", mode="loss_divergence", root=None,
             run_steps=None, startup=520 + rng.randint(-20, 20), hang=6 + rng.randint(0, 3),
             gap=2500 + rng.randint(-300, 300), spikes=[], div_from=None),
        dict(k=3, job=31436, nodes=a2n, kind="fail", mode="loss_divergence", root=None,
             run_steps=930 + rng.randint(0, 80), startup=560 + rng.randint(-20, 20), hang=48 + rng.randint(0, 8),
             gap=1900 + rng.randint(-200, 200), spikes=[]),
        dict(k=4, job=31452, nodes=a2n, kind="fail", mode="silent_data_corruption", root=None,
             run_steps=520 + rng.randint(0, 90), startup=505 + rng.randint(-20, 20), hang=41 + rng.randint(0, 6),
             gap=4300 + rng.randint(-300, 300), spikes=[]),
        dict(k=5, job=31470, nodes=None, kind="time_limit", mode="time_limit", root=None, limit=12 * 3600,
             startup=530 + rng.randint(-20, 20), hang=2.0, gap=1500 + rng.randint(-200, 200),
             spikes=[900 + rng.randint(0, 200)]),
        dict(k=6, job=31488, nodes=None, kind="complete", mode=None, root=None, startup=540 + rng.randint(-20, 20),
             spikes=[400 + rng.randint(0, 300)]),
    ]
    atts = [Att(**s) for s in specs]
    sdc_host = a2n[16]
    a5n = [h if h != sdc_host else "ya-n22" for h in a2n]
    atts[3].root = (sdc_host, 5)
    atts[4].nodes = atts[5].nodes = a5n
    t = T0
    load = 0
    for a in atts:
        a.load = load
        a.train_iters = train_iters
        if a.kind == "complete" and train_iters >= 10 ** 9:       # the probe pass stops before attempt 6
            break
        a.S = float(t)
        while True:
            a.F = a.S + a.startup
            if simulate(a, random.Random(f"{seed}-st-{a.k}")):
                break
        if a.k == 2:
            load = a.rollback_to
        elif a.kind != "complete":
            load = a.saves[-1][0] if a.saves else a.load
        if a.kind != "complete":
            t = a.E + a.gap
    return atts


def simulate(a: Att, rng: random.Random) -> bool:
    a.steps, a.saves = [], []
    t, it = a.F, a.load
    if a.k == 2:                                      # divergence: starts ~70-110 its after a save
        first_save = (a.load // SAVE_INTERVAL + 1) * SAVE_INTERVAL
        a.div_from = first_save + SAVE_INTERVAL + 60 + rng.randint(0, 50)
        a.rollback_to = first_save + SAVE_INTERVAL
        a.stop_at = a.div_from + 2 * SAVE_INTERVAL + 40 + rng.randint(0, 60)
    limit = a.S + a.limit if a.kind == "time_limit" else None
    while True:
        nxt = it + 1
        dur = BASE_STEP * (1 + rng.uniform(-STEP_JITTER, STEP_JITTER))
        if a.kind == "complete" and it >= a.train_iters:
            a.E = float(math.ceil(t + 4.0))
            return True
        if a.kind == "fail":
            stop = a.stop_at if a.k == 2 else a.load + a.run_steps
            if nxt == stop:
                if a.k == 2:                          # scancel lands mid-step
                    a.R = float(math.floor(t + 0.4 * dur))
                else:
                    a.R = float(math.floor(t + 0.6 * dur))
                a.E = a.R + a.hang
                return retry_ok(a)
        if limit is not None and t + dur > limit:
            a.R, a.E = limit, limit + a.hang
            return True
        a.steps.append((nxt, t, dur))
        t += dur
        it = nxt
        if it % SAVE_INTERVAL == 0:
            c = round(rng.uniform(95.0, 125.0), 2)
            if limit is not None and t + c > limit - 5:
                a.startup += 97
                return False
            a.saves.append((it, t, c))
            t += c


def retry_ok(a: Att) -> bool:
    """Keep the fp16 cascade (attempt 3) and the SDC overflow skips (attempt 4) clear of a save."""
    last = a.saves[-1] if a.saves else None
    last_it = last[0] if last else a.load
    if a.k == 3:
        a.collapse_from = a.steps[-1][0] - 16
        if a.steps[-1][0] - 30 <= last_it:
            a.run_steps += 60
            return False
    if a.k == 4 and a.steps[-1][0] - 8 <= last_it:
        a.run_steps += 40
        return False
    return True


def ledger(atts: list[Att]):
    cats = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute",
                          "hang", "restart", "startup", "idle"], 0.0)
    per = []
    for i, a in enumerate(atts):
        cats["startup"] += a.F - a.S
        if a.kind == "complete":
            cats["productive"] += sum(d for _, _, d in a.steps)
            cats["checkpoint"] += sum(c for _, _, c in a.saves) + a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        nxt = atts[i + 1]
        keep = nxt.load
        cats["productive"] += sum(d for n, _, d in a.steps if n <= keep)
        cats["checkpoint"] += sum(c for n, _, c in a.saves if n <= keep)
        kept = [s for s in a.saves if s[0] == keep]
        base = kept[0][1] + kept[0][2] if kept else a.F
        d = dict(recompute=a.R - base, hang=a.E - a.R, restart=nxt.S - a.E, startup=nxt.F - nxt.S)
        for k in ("recompute", "hang", "restart"):
            cats[k] += d[k]
        per.append(d)
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per])


# ----------------------------------------------------------------------------- numerics
def lr_at(a: Att, n: int, train_iters: int) -> float:
    peak = LR0 if a.k <= 2 else LR_LOW
    if n < 500:
        return peak * n / 500
    p = min(1.0, (n - 500) / max(1, train_iters - 500))
    return 0.1 * peak + 0.45 * peak * (1 + math.cos(math.pi * p))


def loss_at(a: Att, n: int, rng: random.Random) -> float:
    v = 2.05 + 8.6 * math.exp(-n / 260.0) + 0.9 * math.exp(-n / 3000.0) + rng.gauss(0, 0.015)
    for s in a.spikes:                                # self-healing spike
        if s <= n < s + 40:
            v += 1.6 * math.exp(-(n - s) / 9.0)
    if a.k == 2 and n >= a.div_from:                  # no recovery
        v += 0.012 * (n - a.div_from) + 0.4 * (1 - math.exp(-(n - a.div_from) / 30.0))
    if a.k == 3 and n > a.collapse_from - 60:
        v += 0.03 * (n - a.collapse_from + 60)
    return v


# ----------------------------------------------------------------------------- pids / nccl
class Pids:
    def __init__(self, seed: int, a: Att):
        rng = random.Random(f"{seed}-pid-{a.k}")
        self.agent, self.worker, self.tid, self.comm = {}, {}, {}, {}
        for h in a.nodes:
            ag = rng.randint(20_000, 900_000)
            self.agent[h] = ag
            for d in range(GPN):
                self.worker[h, d] = ag + 30 + d * 2
                self.tid[h, d] = self.worker[h, d] + rng.randint(400, 1800)
                self.comm[h, d] = "0x%x" % (0x5570_0000_0000 + (rng.getrandbits(32) << 4))


def host_ip(h: str) -> str:
    return f"10.77.1.{int(h[4:]) + 20}"


def nccl_log(a: Att, h: str, pids: Pids, seed: int) -> bytes:
    rng = random.Random(f"{seed}-nccl-{a.k}-{h}")
    i = a.nodes.index(h)
    out: list[str] = []
    nets = " ".join(f"[{k}]mlx5_{k}:1/IB" for k in range(4))
    for d in range(GPN):
        r = i * GPN + d
        p = f"{h}:{pids.worker[h, d]}:{pids.worker[h, d]} [{d}] NCCL INFO "
        q = f"{h}:{pids.worker[h, d]}:{pids.tid[h, d]} [{d}] NCCL INFO "
        out += [p + f"Bootstrap : Using ib0:{host_ip(h)}<0>",
                p + "NET/Plugin : No plugin found (libnccl-net.so), using internal implementation"]
        if r == 0:
            out.append(f"{h}:{pids.worker[h, d]}:{pids.worker[h, d]} [0] NCCL INFO NCCL version 2.12.10+cuda11.6")
        out += [q + f"NET/IB : Using {nets} ; OOB ib0:{host_ip(h)}<0>", q + "Using network IB",
                q + f"Setting affinity for GPU {d} to {'ffff,ffff0000' if d >= 4 else '0000,0000ffff'}"]
        for c in range(24):
            nd = (d + 1) % GPN
            out.append(q + f"Channel {c:02d} : {r}[{BUSIDS[d]}] -> {i * GPN + nd}[{BUSIDS[nd]}] via P2P/IPC/read")
        prev = ((i - 1) % len(a.nodes)) * GPN + d
        out += [q + f"Channel {d % 4:02d} : {prev}[{BUSIDS[d]}] -> {r}[{BUSIDS[d]}] [receive] "
                    f"via NET/IB/{d // 2}/GDRDMA",
                q + "Connected all rings", q + "Connected all trees",
                q + "threadThresholds 8/8/64 | 1280/8/64 | 512 | 512",
                q + "32 coll channels, 32 p2p channels, 32 p2p channels per peer",
                q + f"comm {pids.comm[h, d]} rank {r} nranks {GPUS} cudaDev {d} busId {BUSIDS[d]} - Init COMPLETE"]
        # sub-communicators (TP 8, DP 5, PP 4): the same shape again, smaller
        for nr in (TP, DP, PP):
            c2 = "0x%x" % (0x7f00_0000_0000 + (rng.getrandbits(32) << 4))
            out += [q + f"Channel {c:02d} : 0[{BUSIDS[d]}] -> 1[{BUSIDS[(d + 1) % GPN]}] via P2P/IPC/read"
                    for c in range(12)]
            out += [q + "Connected all rings", q + "Connected all trees",
                    q + f"comm {c2} rank {rng.randint(0, nr - 1)} nranks {nr} cudaDev {d} "
                        f"busId {BUSIDS[d]} - Init COMPLETE"]
        if r == 0:
            out.append(p + "Launch mode Parallel")
    if h == "ya-n09" and a.k in (2, 5):             # decoy: harmless async event
        for _ in range(2):
            d = rng.randint(0, 7)
            out.append(f"{h}:{pids.worker[h, d]}:{pids.tid[h, d] + 3} [{d}] transport/net_ib.cc:100 NCCL WARN "
                       f"NET/IB : mlx5_{d // 2}:1 Got async event : GID table change")
    if a.k == 4:
        sdc = a.root[0]
        idx = a.nodes.index(sdc)
        if h in (a.nodes[idx - 1], a.nodes[idx + 1]):   # DP peers: symptoms
            d = a.root[1]
            out += [f"{h}:{pids.worker[h, d]}:{pids.tid[h, d] + 5} [{d}] transport/net_ib.cc:1123 NCCL WARN NET/IB : "
                    f"Got completion from peer {host_ip(sdc)}<{rng.randint(40000, 60000)}> with error 12, opcode 0, "
                    f"len 0, vendor err 129",
                    f"{h}:{pids.worker[h, d]}:{pids.tid[h, d] + 5} [{d}] NCCL INFO transport/net.cc:1034 -> 6",
                    f"{h}:{pids.worker[h, d]}:{pids.tid[h, d] + 5} [{d}] NCCL INFO proxy.cc:518 -> 6",
                    f"{h}:{pids.worker[h, d]}:{pids.tid[h, d] + 5} [{d}] NCCL INFO proxy.cc:684 -> 6 [Proxy Thread]"]
    return ("\n".join(out) + "\n").encode()


# ----------------------------------------------------------------------------- training log
ARGS = [("fp16", "True"), ("bf16", "False"), ("loss_scale", "None"), ("initial_loss_scale", "4294967296"),
        ("min_loss_scale", "1.0"), ("loss_scale_window", "1000"), ("hysteresis", "2"),
        ("num_layers", "80"), ("hidden_size", "10240"), ("num_attention_heads", "128"),
        ("seq_length", str(SEQ)), ("global_batch_size", str(GBS)), ("micro_batch_size", "1"),
        ("tensor_model_parallel_size", str(TP)), ("pipeline_model_parallel_size", str(PP)),
        ("clip_grad", "1.0"), ("adam_beta2", "0.95"), ("save", CKPT), ("load", CKPT),
        ("save_interval", str(SAVE_INTERVAL)), ("log_interval", str(LOG_INTERVAL)), ("deepspeed", "True"),
        ("zero_stage", "1"), ("world_size", str(GPUS))]

WARN_TORCH = ("/opt/conda/lib/python3.8/site-packages/torch/distributed/distributed_c10d.py:2516: UserWarning: "
              "torch.distributed._all_gather_base is a private function and will be deprecated. Please use "
              "torch.distributed.all_gather_into_tensor instead.")
WARN_APEX = ("/opt/conda/lib/python3.8/site-packages/apex/__init__.py:68: DeprecatedFeatureWarning: apex.amp is "
             "deprecated and will be removed by the end of February 2023. Use "
             "[PyTorch AMP](https://pytorch.org/docs/stable/amp.html)")


def child_failed(t: float, h: str, ents, root) -> list[str]:
    stamp = dt(t)[0].strftime("%Y-%m-%d_%H:%M:%S")
    out = ["Traceback (most recent call last):",
           '  File "/opt/conda/lib/python3.8/runpy.py", line 194, in _run_module_as_main',
           '    return _run_code(code, main_globals, None,',
           f'  File "{SITE}/torch/distributed/launcher/api.py", line 245, in launch_agent',
           "    raise ChildFailedError(",
           "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
           "=" * 56, "pretrain_gpt.py FAILED", "-" * 56, "Failures:"]

    def e(j, x):
        r, lr, ec, pid, tb = x
        return [f"[{j}]:", f"  time      : {stamp}", f"  host      : {h}", f"  rank      : {r} (local_rank: {lr})",
                f"  exitcode  : {ec} (pid: {pid})", "  error_file: <N/A>", f"  traceback : {tb}"]
    others = [x for x in ents if x is not root]
    if not others:
        out.append("  <NO_OTHER_FAILURES>")
    for j, x in enumerate(others, 1):
        out += e(j, x)
    return out + ["-" * 56, "Root Cause (first observed failure):"] + e(0, root) + ["=" * 56]


TB_HEAD = ["Traceback (most recent call last):",
           '  File "/workspace/Megatron-DeepSpeed/pretrain_gpt.py", line 231, in <module>',
           "    pretrain(train_valid_test_datasets_provider, model_provider, forward_step,",
           '  File "/workspace/Megatron-DeepSpeed/megatron/training.py", line 163, in pretrain',
           "    iteration = train(forward_step_func,",
           '  File "/workspace/Megatron-DeepSpeed/megatron/training.py", line 812, in train',
           "    train_step(forward_step_func,",
           '  File "/workspace/Megatron-DeepSpeed/megatron/training.py", line 431, in train_step',
           "    loss = model[0].train_batch(data_iter=data_iterator)"]


def train_log(a: Att, atts: list[Att], pids: Pids, seed: int, train_iters: int, info: dict) -> bytes:
    rng = random.Random(f"{seed}-log-{a.k}")
    L = Sink()
    S, F = a.S, a.F
    L.add(S, f"START TIME: {date_cmd(S)}")
    L.add(S + 0.1, f"SLURM_JOB_ID={a.job} SLURM_NNODES={len(a.nodes)} NODELIST={hostlist(a.nodes)}")
    if a.k == 3:
        prev = atts[1]
        newest = prev.saves[-1][0]
        L.add(S + 0.2, f"ROLLBACK: loss diverged from iteration ~{prev.div_from}; setting {CKPT}/latest: "
                       f"global_step{newest} -> global_step{a.load}; --lr {LR0:.1e} -> {LR_LOW:.1e}")
    L.add(S + 0.3, "srun: lua: Submitted job step using pyxis")
    t = S + 40
    for _h in a.nodes:
        L.extend(t, ["*****************************************",
                     "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid "
                     "your system being overloaded, please further tune the variable for optimal performance in "
                     "your application as needed. ",
                     "*****************************************"])
        t += 0.03
    L.add(S + 60, f"using world size: {GPUS}, data-parallel-size: {DP}, tensor-model-parallel size: {TP}, "
                  f"pipeline-model-parallel size: {PP} ")
    L.add(S + 60, "using torch.float16 for parameters ...")
    L.add(S + 60, "------------------------ arguments ------------------------")
    for k, v in ARGS + [("lr", f"{LR0 if a.k <= 2 else LR_LOW}"), ("train_iters", str(train_iters))]:
        L.add(S + 60, f"  {k} {'.' * (48 - len(k))} {v}")
    L.add(S + 60, "-------------------- end of arguments ---------------------")
    L.extend(S + 62, [WARN_APEX, "  warnings.warn(msg, DeprecatedFeatureWarning)"])
    L.add(S + 70, "> initializing torch distributed ...")
    t_init = S + 0.35 * (F - S)
    L.add(t_init, f"[after megatron is initialized] datetime: {meg_ts(t_init)} ")
    L.add(t_init + 1, "building GPT model ...")
    L.add(t_init + 9, f"{ds_ts(t_init + 9)} [INFO] [logging.py:69:log_dist] [Rank 0] DeepSpeed info: version=0.6.1, "
                      f"git-hash=unknown, git-branch=unknown")
    if a.load == 0:
        L.extend(t_init + 30, [f"WARNING: could not find the metadata file {CKPT}/latest_checkpointed_iteration.txt ",
                               "    will not load any checkpoints and will start from random"])
    else:
        L.add(t_init + 30, f"{ds_ts(t_init + 30)} [INFO] [engine.py:2757:_load_checkpoint] rank: 0 loading checkpoint: "
                           f"{CKPT}/global_step{a.load}/mp_rank_00_model_states.pt")
        L.add(F - 25, f"  successfully loaded checkpoint from {CKPT} at iteration {a.load}")
        L.add(F - 24, f"time (ms) | load-checkpoint: {(F - 25 - t_init - 30) * 1000:.2f}")
    L.add(F - 20, f"[after model, optimizer, and learning rate scheduler are built] datetime: {meg_ts(F - 20)} ")
    L.add(F - 12, "> building train, validation, and test datasets ...")
    L.add(F - 10, b"> WARNING: skipping document 88123017 with undecodable text: 'Ce\xf1a \xe9t\xe9 \xff'")
    L.add(F - 3, f"[after dataloaders are built] datetime: {meg_ts(F - 3)} ")
    L.add(F - 2, "done with setup ...")
    L.add(F - 1, "training ...")
    L.add(F, f"[before the start of training step] datetime: {meg_ts(F)} ")
    L.extend(F + 30, [WARN_TORCH, "  warnings.warn("])
    lrng = random.Random(f"{seed}-loss-{a.k}")
    scale = 2.0 ** 16 if a.load else 2.0 ** 32
    hyst = 2
    skipped = 0
    since_overflow = 0
    steps = a.steps
    overflow_its: set[int] = set()
    for s in a.spikes:
        overflow_its.update({s + 1, s + 2, s + 4})
    if a.k == 2:
        overflow_its.update(range(a.div_from + 20, a.stop_at, 37))
    if a.k == 3:
        a_last = steps[-1][0]
        overflow_its.update(range(a_last - 16, a_last + 1))   # 1 hysteresis + 65536 -> 1
    if a.k == 4:
        a_last = steps[-1][0]
        overflow_its.update(range(a_last - 3, a_last + 1))
    win: list[float] = []
    win_skipped = 0
    for n, ts, dur in steps:
        end = ts + dur
        win.append(dur)
        if n in overflow_its:
            if hyst > 1:
                L.add(end - 0.3, f"{ds_ts(end - 0.3)} [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! "
                                 f"Rank 0 Skipping step. Attempted loss scale: {int(scale)}, but hysteresis is {hyst}. "
                                 f"Reducing hysteresis to {hyst - 1}")
                hyst -= 1
            else:
                L.add(end - 0.3, f"{ds_ts(end - 0.3)} [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! "
                                 f"Rank 0 Skipping step. Attempted loss scale: {int(scale)}, "
                                 f"reducing to {int(max(1.0, scale // 2))}")
                scale = max(1.0, scale / 2)
            skipped += 1
            win_skipped += 1
            since_overflow = 0
        else:
            since_overflow += 1
            if since_overflow >= 1000 // 4 and scale < 2 ** 16:      # shortened window for the picture
                scale *= 2
                since_overflow = 0
                hyst = 2
        if n % DS_PRINT == 0:
            lr = lr_at(a, n, train_iters)
            L.add(end + 0.05, f"{ds_ts(end + 0.05)} [INFO] [logging.py:69:log_dist] [Rank 0] step={n}, "
                              f"skipped={skipped}, "
                              f"lr=[{lr:.15e}, {lr:.15e}], mom=[(0.9, 0.95), (0.9, 0.95)]")
        if n % LOG_INTERVAL == 0:
            avg = sum(win) / len(win)
            lo = loss_at(a, n, lrng)
            gn = 0.22 + 2.5 * math.exp(-n / 400) + abs(lrng.gauss(0, 0.02))
            if any(s <= n < s + 40 for s in a.spikes):
                gn *= 6
            if a.k == 3 and n > a.collapse_from - 60:
                gn += 0.04 * (n - a.collapse_from + 60) + abs(lrng.gauss(0, 0.2))
            if a.k == 2 and n >= a.div_from:
                gn = 1.5 + 0.05 * (n - a.div_from) + abs(lrng.gauss(0, 0.3))
            tfl = TOKENS_PER_STEP * FLOPS_PER_TOKEN / avg / GPUS / 1e12
            L.add(end + 0.1, f" iteration {n:8d}/{train_iters:8d} | consumed samples: {n * GBS:12d} | consumed tokens: "
                             f"{n * TOKENS_PER_STEP:14d} | elapsed time per iteration (s): {avg:.2f} | learning rate: "
                             f"{lr_at(a, n, train_iters):.3E} | global batch size: {GBS:5d} | lm loss: {lo:.6E} | "
                             f"loss scale: {scale:.1f} | grad norm: {gn:.3f} | num zeros: 0.0 | number of skipped "
                             f"iterations: {win_skipped:3d} | number of nan iterations:   0 | samples per second: "
                             f"{GBS / avg:.3f} | TFLOPs: {tfl:.2f} |")
            win, win_skipped = [], 0
    for n, ts, c in a.saves:
        L.add(ts + 0.01, f"saving checkpoint at iteration {n:8d} to {CKPT}")
        L.add(ts + 0.5, f"{ds_ts(ts + 0.5)} [INFO] [logging.py:69:log_dist] [Rank 0] Saving model checkpoint: "
                        f"{CKPT}/global_step{n}/mp_rank_00_model_states.pt")
        L.add(ts + c - 0.02, f"  successfully saved checkpoint at iteration {n:8d} to {CKPT}")
        L.add(ts + c - 0.01, f"time (ms) | save-checkpoint: {c * 1000:.2f}")
    cut = None
    R, E = a.R, a.E
    if a.mode == "gpu_fell_off_bus":
        dead = a.root[0]
        seq = 90_000 + rng.randint(0, 5000)
        for i, h in enumerate(a.nodes):
            if h == dead:
                continue
            for d in range(GPN):
                r = i * GPN + d
                tw = R + 1800 + rng.uniform(0.1, 2.0)
                L.extend(tw, [f"[E ProcessGroupNCCL.cpp:737] [Rank {r}] Watchdog caught collective operation timeout: "
                              f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for "
                              f"{1800000 + rng.randint(20, 2000)} milliseconds before timing out.",
                              "[E ProcessGroupNCCL.cpp:414] Some NCCL operations have failed or timed out. Due to the "
                              "asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
                              "corrupted/incomplete data. To avoid this inconsistency, we are taking the entire "
                              "process down."])
            tf = R + 1804 + 0.1 * i
            ents = [(i * GPN + d, d, -6, pids.worker[h, d], f"Signal 6 (SIGABRT) received by PID {pids.worker[h, d]}")
                    for d in range(GPN)]
            L.add(tf, f"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 0 "
                      f"(pid: {pids.worker[h, 0]}) of binary: /opt/conda/bin/python")
            L.extend(tf + 0.01, child_failed(tf, h, ents, ents[0]))
        L.add(E - 3, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(E - 3)} DUE TO NODE "
                     f"FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***")
        L.add(E - 2.8, f"srun: error: Node failure on {dead}")
        last = "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."
        L.add(E - 1, last)
        cut = 30
        info["symptom_first_ts"] = R + 1800.1
    elif a.k == 2:
        L.add(R + 0.5, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(R + 0.5)} ***")
        L.add(R + 0.6, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
        for i, h in enumerate(a.nodes):
            L.add(R + 1 + 0.01 * i, "WARNING:torch.distributed.elastic.agent.server.api:Received 15 death signal, "
                                    "shutting down workers")
            L.add(R + 1.01 + 0.01 * i, f"WARNING:torch.distributed.elastic.multiprocessing.api:Sending process "
                                       f"{pids.worker[h, 0]} closing signal SIGTERM")
        info["symptom_first_ts"] = next(ts for n, ts, _ in a.steps if n == a.div_from)
    elif a.k == 3:
        tb = TB_HEAD + [f'  File "{SITE}/deepspeed/runtime/pipe/engine.py", line 351, in train_batch',
                        "    self._exec_schedule(sched)",
                        f'  File "{SITE}/deepspeed/runtime/fp16/fused_optimizer.py", line 245, in step',
                        "    self._update_scale(self.overflow)",
                        f'  File "{SITE}/deepspeed/runtime/fp16/loss_scaler.py", line 175, in update_scale',
                        '    raise Exception(',
                        "Exception: Current loss scale already at minimum - cannot decrease scale anymore. "
                        "Exiting run."]
        L.add(R - 0.2, f"{ds_ts(R - 0.2)} [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 "
                       f"Skipping step. Attempted loss scale: 1, reducing to 1")
        for i, h in enumerate(a.nodes):
            for _d in (0, 7):
                L.extend(R + 0.3 + 0.01 * i, tb)
            tf = R + 6 + 0.1 * i
            ents = [(i * GPN + d, d, 1, pids.worker[h, d], "To enable traceback see: "
                     "https://pytorch.org/docs/stable/elastic/errors.html") for d in range(GPN)]
            L.add(tf, f"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 "
                      f"(pid: {pids.worker[h, 0]}) of binary: /opt/conda/bin/python")
            L.extend(tf + 0.01, child_failed(tf, h, ents, ents[0]))
            L.add(tf + 3, f"srun: error: {h}: task {i}: Exited with exit code 1")
        info["symptom_first_ts"] = R
    elif a.k == 4:
        h, d = a.root
        i = a.nodes.index(h)
        r = i * GPN + d
        msg = (f"AssertionError: Rank {r}: found NaN in local grad norm in backward pass before data-parallel "
               f"communication collective. Device: {d}, node: {h}")
        L.extend(R, TB_HEAD + ['  File "/workspace/Megatron-DeepSpeed/megatron/model/distributed.py", line 218, '
                               'in allreduce_gradients',
                               "    assert not norm.isnan().item(), (", msg])
        tf = R + 3.2
        for dd in range(GPN):
            if dd != d:
                L.add(tf - 0.2, f"WARNING:torch.distributed.elastic.multiprocessing.api:Sending process "
                                f"{pids.worker[h, dd]} closing signal SIGTERM")
        ents = [(i * GPN + dd, dd, 1 if dd == d else -15, pids.worker[h, dd],
                 "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html" if dd == d
                 else f"Signal 15 (SIGTERM) received by PID {pids.worker[h, dd]}") for dd in range(GPN)]
        L.add(tf, f"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: {d} "
                  f"(pid: {pids.worker[h, d]}) of binary: /opt/conda/bin/python")
        L.extend(tf + 0.01, child_failed(tf, h, ents, ents[d]))
        for hh in (a.nodes[i - 1], a.nodes[i + 1]):                  # DP peers: symptoms
            rr = a.nodes.index(hh) * GPN + d
            L.extend(R + 5.5, [f"[E ProcessGroupNCCL.cpp:414] [Rank {rr}] NCCL error: remote process exited or there "
                               f"was a network error, NCCL version 2.12.10",
                               "ncclRemoteError: A call failed possibly due to a network error or a remote process "
                               "exiting prematurely."])
        L.add(R + 6, f"srun: error: {h}: task {i}: Exited with exit code 1")
        L.add(R + 6.2, f"srun: Terminating job step {a.job}.0")
        L.add(R + 6.4, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(R + 6.4)} ***")
        for j, hh in enumerate(a.nodes):
            if hh != h:
                L.add(R + 7 + 0.01 * j, "WARNING:torch.distributed.elastic.agent.server.api:Received 15 death signal, "
                                        "shutting down workers")
                L.add(E - 2 + 0.01 * j, f"srun: error: {hh}: task {j}: Terminated")
        L.add(E - 1, f"srun: Force Terminated job step {a.job}.0")
        info["symptom_first_ts"] = R
    elif a.kind == "time_limit":
        L.add(R, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(R)} "
                 f"DUE TO TIME LIMIT ***")
        L.add(R + 0.1, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(R)} "
                       f"DUE TO TIME LIMIT ***")
        for _h in a.nodes:
            L.add(R + 0.5, "WARNING:torch.distributed.elastic.agent.server.api:Received 15 death signal, "
                           "shutting down workers")
    else:
        L.add(E - 2.5, f"[after training is done] datetime: {meg_ts(E - 2.5)} ")
    return L.render(cut)


# ----------------------------------------------------------------------------- kernel logs
def xid13(pci: str, rng: random.Random) -> list[str]:
    g, tpc, sm = rng.randint(0, 7), rng.randint(0, 8), rng.randint(0, 1)
    return [f"NVRM: Xid (PCI:{pci}): 13, pid={rng.randint(30000, 900000)}, Graphics SM Warp Exception on "
            f"(GPC {g}, TPC {tpc}, SM {sm}): Out Of Range Address",
            f"NVRM: Xid (PCI:{pci}): 13, pid={rng.randint(30000, 900000)}, Graphics Exception: "
            f"ESR 0x{0x504000 + 0x800 * g:x}=0x"
            f"{rng.getrandbits(24):x} 0x504650=0x0 0x504654=0x0 0x50465c=0x0"]


def kernel_logs(atts: list[Att], bundle: Path, seed: int, skew: dict[str, float]) -> None:
    rng = random.Random(f"{seed}-kern")
    a1, a2, a3, a4, a5, a6 = atts
    end = a6.E
    for h in HOSTS:
        boot = T0 - rng.randint(3 * 86400, 9 * 86400)
        sk = skew[h]
        ev: list[tuple[float, str | bytes]] = [
            (boot + 4.1, "Linux version 5.4.0-107-generic (buildd@lcy02-amd64-058) (gcc version 9.4.0 (Ubuntu "
                         "9.4.0-1ubuntu1~20.04.1)) #121-Ubuntu SMP Thu Mar 24 16:04:27 UTC 2022"),
            (boot + 38.2, "nvidia-nvlink: Nvlink Core is being initialized, major device number 509"),
            (boot + 38.9, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  510.47.03  Mon Jan 24 22:58:54 UTC 2022"),
        ]
        for t in range(int(T0), int(end), 7200 + rng.randint(0, 600)):
            ev.append((t + rng.uniform(0, 60), "audit: type=1400 audit(0.0:1): apparmor=\"DENIED\" "
                                                "operation=\"open\" profile=\"snap.lxd.lxd\" name=\"/proc/cmdline\" "
                                                "pid=3211 comm=\"lxd\""))
        style, name, rotate_at = "dmesg-T", "dmesg.log", None
        if int(h[4:]) % 3 == 0:
            style, name = "journal", "journal-kernel.log"
        if h == a1.root[0]:                                    # ya-n06: Xid 79, rotated kern.log
            g = a1.root[1]
            pci = f"0000:{BUSIDS[g][:2]}:00"
            uuid = f"GPU-{rng.getrandbits(32):08x}-7a1c-4e02-9d15-{rng.getrandbits(48):012x}"
            ev += [(a1.R, f"NVRM: GPU at PCI:{pci}: {uuid}"),
                   (a1.R, "NVRM: GPU Board Serial Number: 1322621078153"),
                   (a1.R, f"NVRM: Xid (PCI:{pci}): 79, pid={a1.R_pid}, GPU has fallen off the bus."),
                   (a1.R + 0.001, f"NVRM: GPU {pci}.0: GPU has fallen off the bus."),
                   (a1.R + 0.002, "NVRM: A GPU crash dump has been created. If possible, please run"),
                   (a1.R + 0.003, "NVRM: nvidia-bug-report.sh as root to collect this data before"),
                   (a1.R + 0.004, "NVRM: the NVIDIA kernel module is unloaded.")]
            style, name, rotate_at = "syslog", "kern.log", a1.E + 5000
        if h == "ya-n03":                                      # decoy Xid 13 mid attempt 3
            mid = a3.F + 0.45 * (a3.R - a3.F)
            ev += [(mid, m) for m in xid13(f"0000:{BUSIDS[4][:2]}:00", rng)]
        if h == "ya-n23":                                      # idle spare: NFS blip
            ev += [(a4.S + 3000, "nfs: server ceph-gw02 not responding, still trying"),
                   (a4.S + 3000.4, "nfs: server ceph-gw02 not responding, still trying"),
                   (a4.S + 3071, "nfs: server ceph-gw02 OK")]
        if h == "ya-n24":                                      # idle spare: link flap
            ev += [(a2.S + 5200, "mlx5_core 0000:4b:00.0 ib2: Link down"),
                   (a2.S + 5211, "mlx5_core 0000:4b:00.0 ib2: Link up")]
        if h == a4.root[0]:                                    # the SDC host: nothing in the kernel log
            ev.append((a4.E + 900, "ipmi_si IPI0001:00: IPMI message handler: BMC returned 0xc9, internal error"))
        ev.sort(key=lambda x: x[0])
        lines_old, lines_new = [], []
        for t, m in ev:
            lt = t + sk                                        # the node's own (skewed) clock
            d, u = dt(lt)
            up = lt - boot
            if style == "dmesg-T":
                pre = f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}] "
            elif style == "journal":
                pre = f"{d:%Y-%m-%dT%H:%M:%S}+0000 {h} kernel: "
            else:
                pre = f"{d:%b} {d.day:2d} {d:%H:%M:%S} {h} kernel: [{up:12.6f}] "
            line = pre.encode() + (m if isinstance(m, bytes) else m.encode())
            (lines_old if rotate_at is not None and t < rotate_at else lines_new).append(line)
        if style == "journal":
            lines_new.insert(0, f"-- Logs begin at {dt(boot + sk)[0]:%a %Y-%m-%d %H:%M:%S} UTC, end at "
                                f"{dt(end + 7200)[0]:%a %Y-%m-%d %H:%M:%S} UTC. --".encode())
        base = bundle / "nodes" / h
        if rotate_at is not None:
            write(base / "kern.log.1.gz", b"\n".join(lines_old) + b"\n", gz=True)
        write(base / name, b"\n".join(lines_new) + b"\n")


# ----------------------------------------------------------------------------- scheduler
def scheduler(atts: list[Att], bundle: Path, seed: int) -> None:
    rng = random.Random(f"{seed}-sched")
    L = Sink()

    def add(t, m):
        L.add(t, f"{ctld_ts(t)} {m}")
    rows = ["JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"]
    for a in atts:
        hl = hostlist(a.nodes)
        cpus = 128 * len(a.nodes)
        sub = a.S - rng.randint(3, 60)
        add(sub, f"_slurm_rpc_submit_batch_job: JobId={a.job} InitPrio=1000{rng.randint(100, 999)} "
                 f"usec={rng.randint(300, 900)}")
        add(a.S + 0.02, f"sched: Allocate JobId={a.job} NodeList={hl} #CPUs={cpus} Partition=pretrain")
        if a.mode == "gpu_fell_off_bus":
            h = a.root[0]
            add(a.R + 1650.2, f"error: Nodes {h} not responding")
            add(a.E - 3.4, f"error: Nodes {h} not responding, setting DOWN")
            add(a.E - 3.3, f"Killing JobId={a.job} on failed node {h}")
            add(a.E, f"_job_complete: JobId={a.job} WTERMSIG 9")
            add(a.E + 2400, f"update_node: node {h} reason set to: xid79 GPU2 fell off bus")
            add(a.E + 2400.01, f"update_node: node {h} state set to DRAINED")
            st, ec = "NODE_FAIL", "0:0"
        elif a.k == 2:
            add(a.R, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={a.job} uid {USER_UID}")
            add(a.E, f"_job_complete: JobId={a.job} WTERMSIG 15")
            st, ec = f"CANCELLED by {USER_UID}", "0:15"
        elif a.k in (3, 4):
            add(a.E, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
            st, ec = "FAILED", "1:0"
            if a.k == 4:
                h = a.root[0]
                add(a.E + 1800.3, f"update_node: node {h} reason set to: SDC suspect: nan grads rank "
                                  f"{a.nodes.index(h) * GPN + a.root[1]} gpu5, dcgmi diag -r 3 fail")
                add(a.E + 1800.31, f"update_node: node {h} state set to DRAINING")
                add(a.E + 1800.9, f"update_node: node {h} state set to DRAINED")
        elif a.kind == "time_limit":
            add(a.R + 0.002, f"Time limit exhausted for JobId={a.job}")
            add(a.E, f"_job_complete: JobId={a.job} WTERMSIG 15")
            st, ec = "TIMEOUT", "0:0"
        else:
            add(a.E, f"_job_complete: JobId={a.job} WEXITSTATUS 0")
            st, ec = "COMPLETED", "0:0"
        add(a.E + 0.01, f"_job_complete: JobId={a.job} done")
        rows.append(f"{a.job}|yalm100b|pretrain|yalm|{cpus}|{st}|{ec}|{slurm_ts(sub)}|{slurm_ts(a.S)}|"
                    f"{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|{len(a.nodes)}|{hl}")
        rows.append(f"{a.job}.batch|batch||yalm|128|{'COMPLETED' if st == 'COMPLETED' else 'CANCELLED'}|"
                    f"{ec}|{slurm_ts(a.S)}|{slurm_ts(a.S)}|{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|1|{a.nodes[0]}")
    # a burn-in job on the spares (noise)
    t = atts[2].S + 7000
    add(t, "sched: Allocate JobId=31440 NodeList=ya-n[22-23] #CPUs=256 Partition=burnin")
    add(t + 1500.3, "_job_complete: JobId=31440 WEXITSTATUS 0")
    rows.append(f"31440|dcgm-diag|burnin|infra|256|COMPLETED|0:0|{slurm_ts(t - 5)}|{slurm_ts(t)}|"
                f"{slurm_ts(t + 1500)}|{elapsed(1500)}|2|ya-n[22-23]")
    write(bundle / "scheduler" / "slurmctld.log", L.render())
    write(bundle / "scheduler" / "sacct.txt", ("\n".join(rows) + "\n").encode())


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts = build_all(seed)
    a1, a2, a3, a4, a5, a6 = atts
    train_iters = a6.train_iters
    srng = random.Random(f"{seed}-skew")
    skew = {h: round(srng.uniform(-9.0, 9.0), 3) for h in HOSTS}
    skew["ya-n06"] = 6.412
    write(bundle / "inventory.toml", f"""# YaLM-100B style fleet
[providers.{PROVIDER}]
usd_per_gpu_hour = 1.85
support = "noc@volga.example"

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "A100-SXM4-80GB"
gpus_per_node = 8
interconnect = "InfiniBand HDR 4x200G"
nodes = "ya-n[01-24]"
""".encode())
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", f"""# {RUN}: 100B dense GPT, Megatron-DeepSpeed fp16, TP={TP} PP={PP} DP={DP}
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
params = 100000000000
layers = 80
hidden = 10240
seq_len = {SEQ}
flops_per_token = {FLOPS_PER_TOKEN:.4e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --nodes=20 --gpus-per-node=8 --time=12:00:00 yalm100b.sbatch"
""".encode())
    infos = {}
    for a in atts:
        pids = Pids(seed, a)
        if a.k == 1:
            a.R_pid = pids.worker[a.root[0], a.root[1]]
        info: dict = {}
        data = train_log(a, atts, pids, seed, train_iters, info)
        infos[a.k] = info
        gz = a.k >= 5
        write(rdir / f"attempt-{a.k}" / (f"slurm-{a.job}.out" + (".gz" if gz else "")), data, gz=gz)
        for h in a.nodes:
            write(rdir / f"attempt-{a.k}" / "nccl" / f"{h}.nccl.log", nccl_log(a, h, pids, seed))
    kernel_logs(atts, bundle, seed, skew)
    scheduler(atts, bundle, seed)
    cats, total, per = ledger(atts)
    incidents = []
    for j, a in enumerate(atts[:5]):
        host = a.root[0] if a.root else None
        inc = {"id": j + 1, "attempt": a.k, "attempts": [a.k], "slurm_job": a.job, "failure_mode": a.mode,
               "blame": "provider" if a.mode in ("gpu_fell_off_bus", "silent_data_corruption") else "user",
               "host": host, "cluster": CLUSTER, "provider": PROVIDER,
               "gpu_index": a.root[1] if a.root else None,
               "rank": a.nodes.index(host) * GPN + a.root[1] if host else None,
               "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E), "next_start_ts": iso_z(atts[j + 1].S),
               "next_loads_step": atts[j + 1].load, "failed_at_step": a.steps[-1][0],
               "gpu_hours": per[j], "gpu_hours_lost": round(sum(per[j].values()), 4)}
        if "symptom_first_ts" in infos[a.k]:
            inc["symptom_first_ts"] = iso_z(infos[a.k]["symptom_first_ts"])
        incidents.append(inc)
    incidents[1]["divergence_from_step"] = a2.div_from
    incidents[1]["rollback"] = {"newest_save": a2.saves[-1][0], "resumed_from": a3.load, "lr": [LR0, LR_LOW]}
    i4 = a4.nodes.index(a4.root[0])
    decoys = {"ya-n03": "Xid 13 mid attempt 3; training continued at pace",
              "ya-n09": "NCCL WARN 'Got async event : GID table change'; harmless",
              "ya-n23": "idle spare: NFS not responding/OK blip",
              "ya-n24": "idle spare: mlx5 link down/up while no job ran on it",
              a4.nodes[i4 - 1]: "data-parallel peer of the SDC rank: NCCL remote-error symptoms only",
              a4.nodes[i4 + 1]: "data-parallel peer of the SDC rank: NCCL remote-error symptoms only"}
    forbidden = [
        {"failure_mode": "loss_divergence", "attempts": [1], "reason": "self-healing loss spikes in attempt 1"},
        {"failure_mode": "loss_divergence", "attempts": [5], "reason": "self-healing loss spike in attempt 5"},
        {"failure_mode": "loss_divergence", "attempts": [6], "reason": "self-healing loss spike in attempt 6"},
        {"failure_mode": "checkpoint_lost", "reason": "attempt 3 deliberately resumed from an older checkpoint "
                                                      "(rollback after divergence); nothing was lost"},
        {"failure_mode": "manual_stop", "attempts": [2], "reason": "the cancel of attempt 2 was the response to "
                                                                  "the divergence, which is the cause"},
    ]
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK_A100,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK_A100), 4),
        "first_start_ts": iso_z(a1.S), "last_end_ts": iso_z(a6.E), "clock_skew_s": skew,
        "match_on_attempt": True,
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "nodes": hostlist(a.nodes), "start_ts": iso_z(a.S),
                      "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E), "loaded_step": a.load,
                      "last_step": a.steps[-1][0], "saves": [n for n, _, _ in a.saves], "end": a.kind,
                      "loss_spikes_at": a.spikes} for a in atts],
        "incidents": incidents, "forbidden_incidents": forbidden,
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys, "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incidents), 4)},
        "notes": ("Times are the Slurm controller's UTC clock; node kernel clocks are skewed by clock_skew_s. "
                  "host null (divergence, loss-scale collapse, time limit) matches any host. gpu_hours per "
                  "incident = recompute + hang + restart + startup of the next attempt. Ledger: see docstring."),
    }
    write(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def build_all(seed: int) -> list[Att]:
    """Attempt 6 runs to train_iters = attempt 5's last save + 1250..1500 (steps do not depend on it)."""
    extra = 1250 + 250 * random.Random(f"{seed}-iters").randint(0, 1)
    probe = build(seed, 10 ** 9)
    return build(seed, probe[4].saves[-1][0] + extra)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output directory (bundle/ and truth.json go here)")
    ap.add_argument("--seed", type=int, default=20220418)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    files = [p for p in (out / "bundle").rglob("*") if p.is_file()]
    print(f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB) and "
          f"{out / 'truth.json'}; total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
