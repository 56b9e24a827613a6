#!/usr/bin/env python3
# ruff: noqa: E501, UP031, UP017  (real log lines quoted whole; printf-style ids)
"""Campaign "undated_text": evidence whose lines mostly carry no time of their own, as sites run by default.

Written before reading clusterlab's analysis (standard library only, deterministic per --seed).

Writes, under --out DIR:
  DIR/bundle/inventory.toml, runs/ud-gpt20b/run.toml
  DIR/bundle/runs/ud-gpt20b/attempt-<k>/slurm-<jobid>.out      srun + torchrun (torch 2.3) + Megatron-LM output
  DIR/bundle/runs/ud-gpt20b/attempt-<k>/nccl/<host>.<pid>.log  NCCL_DEBUG=INFO, NCCL_DEBUG_FILE=%h.%p.log: one file
                                                               per rank, no NCCL_DEBUG_TIMESTAMP_FORMAT (undated)
  DIR/bundle/nodes/<host>/dmesg.txt                            plain `dmesg` (seconds since boot, no wall clock)
  DIR/bundle/nodes/<host>/uptime-s.txt | last-reboot.txt       where the node collector saved the boot time
                                                               (`uptime -s`; `last -x reboot`, minute precision);
                                                               some hosts' dmesg holds rtc_cmos' "setting system
                                                               clock to ..." line; some hosts have nothing (ring
                                                               buffer wrapped, no file): their kernel lines are undatable
  DIR/bundle/scheduler/{slurmctld.log, sacct.txt}             the only side that is fully dated
  DIR/truth.json
Usage: undated_text.py --out DIR [--seed N]

Scenario (run "ud-gpt20b", 64 GPUs = 8 nodes x 8 H100-SXM of cluster fj-1 / provider fjordcloud; 11 nodes in the
inventory, nd-09..nd-11 spares; all clocks UTC and in agreement; truth times are the controller's clock):
  attempt 1  job 51001  fresh start; Xid 79 on nd-04 GPU2 (plain dmesg; nd-04's boot from `uptime -s`); its rank
                        hangs, every other rank's watchdog fires 10 min later (undated torch 2.3 lines), torchrun
                        agents fail (dated), srun ends the step                   [gpu_fell_off_bus, nd-04]
  attempt 2  job 51013  (nd-04 out, spare nd-09 in) a leaf switch of rail 2 flaps: NCCL completion errors
                        (status=12, vendor err 129) on GPU2 of nd-02, nd-03, nd-06, nd-07, each naming a different
                        peer, no host common to all; seen ONLY in undated NCCL files and the undated watchdog text;
                        torchrun's ChildFailedError names nd-06 (first to exit)      [network, host null: the switch]
  attempt 3  job 51027  (same nodes) nd-05's rail-3 HCA: nd-05 GPU3 reports completion errors against three peers
                        (nd-03, nd-06, nd-08) and each of them reports errors naming nd-05's address; the first
                        torchrun to report is nd-06's                                    [network, nd-05]
  attempt 4  job 51040  (nd-05 out, nd-10 in) rank 54 (nd-09 GPU6) never joins an all-reduce: every other rank's
                        watchdog (undated) fires after 600 s, rank 54 prints nothing; torchrun on nd-09 cannot stop
                        it with SIGTERM                                                  [nccl_timeout, nd-09]
  attempt 5  job 51052  (nd-09 out, nd-11 in) a Lustre OST drops during a checkpoint save: Lustre client errors in
                        plain dmesg on all 8 hosts (some undatable), the save fails with OSError [Errno 5] on the
                        writing ranks ~2 min later, the job FAILS               [filesystem_io, host null: the OST]
  attempt 6  job 51066  runs into its 3 h TIME LIMIT                                     [time_limit, host null]
  attempt 7  job 51079  completes.
  Decoys: nd-01 (a peer one switch-flap symptom names), nd-02 (switch-flap symptom; PCIe AER corrected errors in an undatable dmesg), nd-03, nd-06, nd-07
  (switch-flap symptoms; nd-03/nd-06 peers of nd-05's HCA; nd-07 first Lustre reporter), nd-08 (an old Xid 31 a day
  before the campaign, boot known; peer of nd-05), nd-11 (benign NCCL WARN "Got async event : GID table change" /
  "SM change" in attempt 6's NCCL files, the time-limit attempt).

Ledger (campaign1.py's conventions, x 64 GPUs):
  startup    = attempt start (sacct Start) -> first step start ("[before the start of training step] datetime:")
  productive = kept steps (step <= last durable checkpoint of an ended attempt; all steps of the completed one)
  checkpoint = completed saves (Megatron's save-checkpoint time, outside its iteration timer) + the tail after the
               final save
  recompute  = end of the attempt's last completed save (or its first step start) -> root event
  hang       = root event -> attempt exit (sacct End). Root events: the Xid 79; the moment the fabric fails (the
               completion errors follow ~7 s later: NCCL_IB_TIMEOUT 18 x 7 retries); the end of the last completed
               step (the hang); the start of the save that never completed; the time limit.
  restart    = attempt exit -> next attempt start;  straggler = slowdown = data_stall = idle = 0

Formats (looked up with the search tools; the text here is written anew):
  * NCCL 2.20 INFO init lines and "transport/net_ib.cc:NNNN NCCL WARN NET/IB : Got completion from peer IP<port>
    with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ... remoteGids..." + "transport/net.cc -> 6",
    "proxy.cc -> 6 [Progress Thread]" (NVIDIA/nccl #1405, #1814, #1664), "NET/IB : mlx5_N:1 Got async event : GID
    table change"; NCCL_DEBUG_FILE's %h/%p.
  * torch 2.2/2.3 ProcessGroupNCCL without a time: "[rankN]:[E ProcessGroupNCCL.cpp:563] [Rank N] Watchdog caught
    collective operation timeout: WorkNCCL(SeqNum=..., OpType=ALLREDUCE, NumelIn=..., NumelOut=...,
    Timeout(ms)=600000) ran for 600xxx milliseconds before timing out.", "NCCL watchdog thread terminated with
    exception: NCCL error: remote process exited or there was a network error, NCCL version 2.20.5", "ncclRemoteError:
    A call failed possibly due to a network error or a remote process exiting prematurely.", "Last error:";
    torch.distributed.elastic's "[YYYY-MM-DD HH:MM:SS,mmm] torch.distributed.elastic.multiprocessing.api: [ERROR]
    failed (exitcode: -6) ..." and the ChildFailedError table (tatsu-lab/stanford_alpaca #207, pytorch #88251,
    aws-samples eks #93).
  * Megatron-LM before dated iteration lines: " iteration      100/   20000 | consumed samples: ... | elapsed time
    per iteration (ms): ... |", "saving checkpoint at iteration N to DIR", "  successfully saved checkpoint at
    iteration N to DIR", timers' "(min, max) time across ranks (ms):" block, print_datetime markers.
  * dmesg raw "[  1234.567890] ..."; NVRM Xid 79 / 31; PCIe AER "Corrected error received"; Lustre client
    "LustreError: 11-0: ... failed: rc = -107", "Connection to ... was lost", "This client was evicted by ...";
    rtc_cmos "setting system clock to ... UTC (epoch)"; `uptime -s`; `last -x reboot`.
  * Slurm sacct -P, slurmctld "_job_complete", "Time limit exhausted for JobId=", slurmstepd "CANCELLED AT".
"""
from __future__ import annotations

import argparse
import json
import math
import random
from datetime import datetime, timezone
from pathlib import Path

UTC = timezone.utc
RUN = "ud-gpt20b"
CLUSTER, PROVIDER = "fj-1", "fjordcloud"
GPN, NODES = 8, 8
GPUS = GPN * NODES
TP, PP, DP = 8, 2, 4
GBS, SEQ = 512, 4096
TOKENS_PER_STEP = GBS * SEQ
FLOPS_PER_TOKEN = 1.333e11
PEAK = 989.4e12
BASE_STEP = 9.48
JITTER = 0.004
SAVE_EVERY = 200
LOG_EVERY = 10
TRAIN_ITERS = 20000
WATCHDOG_S = 600
T0 = datetime(2026, 11, 30, 6, 0, 0, tzinfo=UTC).timestamp()
NCCL_VER = "2.20.5"
CKPT = "/lustre/fsw/ud/gpt20b/ckpt"
HOSTS = [f"nd-{i:02d}" for i in range(1, 12)]
BUSIDS = ["18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000"]
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]
BOOT_SRC = {"nd-01": "uptime", "nd-02": None, "nd-03": "rtc", "nd-04": "uptime", "nd-05": "last",
            "nd-06": None, "nd-07": "rtc", "nd-08": "uptime", "nd-09": "last", "nd-10": None, "nd-11": "rtc"}
XID_HOST, XID_GPU = "nd-04", 2
FLAP_HOSTS, FLAP_GPU = ["nd-02", "nd-03", "nd-06", "nd-07"], 2
HCA_HOST, HCA_GPU = "nd-05", 3
HANG_HOST, HANG_GPU = "nd-09", 6
OST = "scratch-OST0011"


def ip(h: str) -> str:
    return f"10.40.0.{10 + int(h[3:])}"


def split(t: float):
    us = int(round(t * 1e6))
    s, u = divmod(us, 1_000_000)
    return datetime.fromtimestamp(s, UTC), u


def iso_z(t: float) -> str:
    d, u = split(t)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{u // 1000:03d}Z"


def date_cmd(t: float) -> str:
    d, _ = split(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def py_log(t: float) -> str:
    d, u = split(t)
    return f"[{d:%Y-%m-%d %H:%M:%S},{u // 1000:03d}]"


def meg_dt(t: float) -> str:
    return f"{split(t)[0]:%Y-%m-%d %H:%M:%S}"


def slurm_ts(t: float) -> str:
    return f"{split(t)[0]:%Y-%m-%dT%H:%M:%S}"


def ctld(t: float) -> str:
    d, u = split(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{u // 1000:03d}]"


def elapsed(sec: float) -> str:
    sec = int(round(sec))
    h, r = divmod(sec, 3600)
    m, s = divmod(r, 60)
    return f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hs: list[str]) -> str:
    nums = sorted(int(h[3:]) for h in hs)
    parts, i = [], 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(f"{nums[i]:02d}" if i == j else f"{nums[i]:02d}-{nums[j]:02d}")
        i = j + 1
    return f"nd-[{','.join(parts)}]"


class Sink:
    def __init__(self):
        self.items = []

    def add(self, t: float, line: str) -> None:
        self.items.append((t, len(self.items), line))

    def many(self, t: float, lines) -> None:
        for ln in lines:
            self.add(t, ln)

    def text(self) -> str:
        self.items.sort(key=lambda x: (x[0], x[1]))
        return "\n".join(x[2] for x in self.items) + "\n"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# ----------------------------------------------------------------------------- timeline
class Attempt:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps, self.saves = [], []
        self.failed_save = None
        self.R = self.E = None


def simulate(a: Attempt, rng: random.Random) -> bool:
    a.steps, a.saves, a.failed_save = [], [], None
    t, n = a.F, a.load
    while True:
        if a.kind == "complete" and n >= a.final_iter:
            break
        dur = BASE_STEP * (1 + rng.uniform(-JITTER, JITTER))
        if a.kind in ("xid", "flap", "hca") and t >= a.F + a.run_for:
            if a.steps and a.steps[-1][0] % SAVE_EVERY == 0:
                return False
            a.R = float(math.floor(t + 0.4 * dur))
            a.E = a.R + a.tail
            return True
        if a.kind == "hang" and t >= a.F + a.run_for:
            if a.steps[-1][0] % SAVE_EVERY == 0:
                return False
            a.R = t
            a.E = a.R + a.tail
            return True
        if a.kind == "limit" and t + dur > a.T:
            a.R = a.T
            a.E = a.T + a.tail
            return True
        a.steps.append((n + 1, t, dur))
        t += dur
        n += 1
        if n % SAVE_EVERY == 0:
            if a.kind == "fs" and t >= a.F + a.run_for:
                a.failed_save = (n, t)
                a.R = t
                a.E = float(math.ceil(t + a.tail))
                return True
            c = round(rng.uniform(52.0, 71.0), 2)
            if a.kind == "limit" and t + c > a.T - 20:
                return False
            a.saves.append((n, t, c))
            t += c
    a.E = float(math.ceil(t + 3.0))
    return True


def build(seed: int) -> list[Attempt]:
    rng = random.Random(f"{seed}-undated-timeline")
    n1 = HOSTS[:8]
    n2 = [h for h in n1 if h != XID_HOST] + ["nd-09"]
    n4 = [h for h in n2 if h != HCA_HOST] + ["nd-10"]
    n5 = [h for h in n4 if h != HANG_HOST] + ["nd-11"]
    specs = [
        dict(k=1, job=51001, nodes=n1, kind="xid", mode="gpu_fell_off_bus", host=XID_HOST,
             startup=188, run_for=2.3 * 3600 + rng.randint(0, 1200), tail=WATCHDOG_S + 31 + rng.randint(0, 6),
             gap=1900 + rng.randint(-200, 200)),
        dict(k=2, job=51013, nodes=n2, kind="flap", mode="network", host=None,
             startup=205, run_for=1.6 * 3600 + rng.randint(0, 1200), tail=41 + rng.randint(0, 5),
             gap=1300 + rng.randint(-200, 200)),
        dict(k=3, job=51027, nodes=n2, kind="hca", mode="network", host=HCA_HOST,
             startup=199, run_for=1.9 * 3600 + rng.randint(0, 1200), tail=38 + rng.randint(0, 5),
             gap=2100 + rng.randint(-200, 200)),
        dict(k=4, job=51040, nodes=n4, kind="hang", mode="nccl_timeout", host=HANG_HOST,
             startup=202, run_for=1.7 * 3600 + rng.randint(0, 1200), tail=WATCHDOG_S + 36 + rng.randint(0, 6),
             gap=1500 + rng.randint(-200, 200)),
        dict(k=5, job=51052, nodes=n5, kind="fs", mode="filesystem_io", host=None,
             startup=196, run_for=1.3 * 3600 + rng.randint(0, 900), tail=131 + rng.randint(0, 8),
             gap=2400 + rng.randint(-200, 200)),
        dict(k=6, job=51066, nodes=n5, kind="limit", mode="time_limit", host=None,
             startup=201, time_limit=3 * 3600, tail=2.4, gap=900 + rng.randint(-100, 100)),
        dict(k=7, job=51079, nodes=n5, kind="complete", mode=None, host=None, startup=194, gap=None),
    ]
    atts = [Attempt(**s) for s in specs]
    t0, load = T0, 0
    for a in atts:
        a.load = load
        a.S = float(t0)
        a.startup += rng.randint(-5, 5)
        tries = 0
        while True:
            a.F = a.S + a.startup
            a.T = a.S + getattr(a, "time_limit", 12 * 3600)
            a.final_iter = load + 1400
            if simulate(a, random.Random(f"{seed}-undated-steps-{a.k}-{tries}")):
                break
            tries += 1
            if a.kind == "limit":
                a.startup += 37
            else:
                a.run_for += 61
        a.last_ckpt = a.saves[-1][0] if a.saves else a.load
        load = a.last_ckpt
        if a.gap is not None:
            t0 = math.ceil(a.E + a.gap)
    return atts


def ledger(atts: list[Attempt]):
    cats = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute",
                          "hang", "restart", "startup", "idle"], 0.0)
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
        rec, hang = a.R - base, a.E - a.R
        rst = atts[i + 1].S - a.E
        cats["recompute"] += rec
        cats["hang"] += hang
        cats["restart"] += rst
        per.append(dict(recompute=rec, hang=hang, restart=rst, startup=atts[i + 1].F - atts[i + 1].S))
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per])


class Pids:
    def __init__(self, seed: int, a: Attempt):
        rng = random.Random(f"{seed}-undated-pids-{a.k}")
        self.agent, self.w, self.tid, self.comm = {}, {}, {}, {}
        for h in a.nodes:
            base = rng.randint(100_000, 3_000_000)
            self.agent[h] = base
            for d in range(GPN):
                self.w[h, d] = base + 9 + d
                self.tid[h, d] = base + 9 + d + rng.randint(300, 2500)
                self.comm[h, d] = "0x%x" % (0x55a000000000 + (rng.getrandbits(32) << 4))
        self.comm_id = "0x%016x" % rng.getrandbits(64)


# ----------------------------------------------------------------------------- training log
def elastic(t: float, name: str, level: str, msg: str) -> str:
    return f"{py_log(t)} torch.distributed.elastic.{name}: [{level}] {msg}"


def child_failed(t: float, h: str, rank: int, local: int, pid: int, code: int, others: int) -> list[str]:
    sig = {-6: "Signal 6 (SIGABRT) received by PID", -9: "Signal 9 (SIGKILL) received by PID"}
    tb = (f"{sig[code]} {pid}" if code < 0 else
          "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
    out = ["Traceback (most recent call last):", '  File "/usr/local/bin/torchrun", line 8, in <module>',
           "    sys.exit(main())",
           '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", line 870, in run',
           "    raise ChildFailedError(",
           "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
           "=" * 52, "pretrain_gpt.py FAILED", "-" * 52, "Failures:"]
    out += ["  <NO_OTHER_FAILURES>"] if not others else [f"[{j}]:" for j in range(1, 1 + min(others, 1))] + [
        f"  time      : {split(t)[0]:%Y-%m-%d_%H:%M:%S}", f"  host      : {h}",
        f"  rank      : {rank + 1} (local_rank: {(local + 1) % GPN})", f"  exitcode  : {code} (pid: {pid + 1})",
        "  error_file: <N/A>", f"  traceback : {sig.get(code, 'x')} {pid + 1}" if code < 0 else "  traceback : -"]
    out += ["-" * 52, "Root Cause (first observed failure):", "[0]:",
            f"  time      : {split(t)[0]:%Y-%m-%d_%H:%M:%S}", f"  host      : {h}",
            f"  rank      : {rank} (local_rank: {local})", f"  exitcode  : {code} (pid: {pid})",
            "  error_file: <N/A>", f"  traceback : {tb}", "=" * 52]
    return out


def megatron_setup(a: Attempt, L: Sink, T) -> None:
    S, F = a.S, a.F
    L.add(S, f"START TIME: {date_cmd(S)}")
    L.add(S + 0.02, f"Nodes: {hostlist(a.nodes)}  job {a.job}")
    for i, _h in enumerate(a.nodes):
        tt = S + 21.0 + 0.04 * i
        p = elastic(tt, "run", "WARNING", "").replace("elastic.run", "run")
        L.many(tt, [p, p + "*" * 41, p + "Setting OMP_NUM_THREADS environment variable for each process to be 1 "
                    "in default, to avoid your system being overloaded, please further tune the variable for "
                    "optimal performance in your application as needed. ", p + "*" * 41])
    t = S + 34.0
    L.many(t, [f"using world size: {GPUS}, data-parallel size: {DP}, context-parallel size: 1, tensor-model-parallel "
               f"size: {TP}, pipeline-model-parallel size: {PP} ",
               "using torch.bfloat16 for parameters ...",
               "------------------------ arguments ------------------------",
               f"  global_batch_size ............................... {GBS}",
               f"  log_interval .................................... {LOG_EVERY}",
               f"  save ............................................ {CKPT}",
               f"  save_interval ................................... {SAVE_EVERY}",
               f"  seq_length ...................................... {SEQ}",
               f"  distributed_timeout_minutes ..................... {WATCHDOG_S // 60}",
               f"  train_iters ..................................... {TRAIN_ITERS}",
               "-------------------- end of arguments ---------------------",
               "> initializing torch distributed ...",
               f"> initialized tensor model parallel with size {TP}",
               f"> initialized pipeline model parallel with size {PP}",
               "> setting random seeds to 1234 ...",
               "INFO:megatron.core.datasets.blended_megatron_dataset_builder:Building dataset splits with "
               "cls=GPTDataset, sizes=(10240000, 102400, 512), and config=GPTDatasetConfig"])
    T(S + 71.0, "time to initialize megatron (seconds): 36.911")
    L.add(S + 71.5, f"[after megatron is initialized] datetime: {meg_dt(S + 71.5)} ")
    L.many(S + 72.0, ["building GPT model ...",
                      " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 1251721216"])
    tl = S + 90.0
    if a.load:
        L.add(tl, f" loading checkpoint from {CKPT} at iteration {a.load}")
        L.add(tl + 0.1, "  checkpoint version 3.0")
        ld = (F - 40.0) - tl
        L.add(F - 40.0, f"  successfully loaded checkpoint from {CKPT} [ t 0, p 0 ] at iteration {a.load}")
    else:
        L.add(tl, f"WARNING: could not find the metadata file {CKPT}/latest_checkpointed_iteration.txt ")
        L.add(tl, "    will not load any checkpoints and will start from random")
        ld = 0.41
    L.many(F - 39.0, ["(min, max) time across ranks (ms):",
                      f"    load-checkpoint ................................: ({ld * 1000 - 3.1:.2f}, {ld * 1000:.2f})"])
    L.add(F - 38.0, f"[after model, optimizer, and learning rate scheduler are built] datetime: {meg_dt(F - 38.0)} ")
    L.many(F - 37.0, ["> building train, validation, and test datasets ...",
                      " > datasets target sizes (minimum size):", f"    train:      {TRAIN_ITERS * GBS}"])
    L.add(F - 6.0, f"[after dataloaders are built] datetime: {meg_dt(F - 6.0)} ")
    L.many(F - 5.0, ["done with setup ...", "training ..."])
    L.add(F, f"[before the start of training step] datetime: {meg_dt(F)} ")


def train_log(a: Attempt, pids: Pids, seed: int, info: dict) -> str:
    rng = random.Random(f"{seed}-undated-train-{a.k}")
    L = Sink()

    def T(t, msg):
        L.add(t, msg)

    megatron_setup(a, L, T)
    saves = {n: (s, c) for n, s, c in a.saves}
    acc = []
    for n, s, d in a.steps:
        acc.append(d)
        if n % LOG_EVERY == 0:
            loss = 2.1 + 8.9 * math.exp(-n / 900) + rng.gauss(0, 0.01)
            lr = 3.0e-4 * min(1.0, n / 2000)
            L.add(s + d, f" iteration {n:8d}/{TRAIN_ITERS:8d} | consumed samples: {n * GBS:12d} | elapsed time per "
                         f"iteration (ms): {1000 * sum(acc) / len(acc):.1f} | learning rate: {lr:.6E} | global batch "
                         f"size: {GBS:5d} | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: "
                         f"{0.9 + abs(rng.gauss(0, 0.2)):.3f} | number of skipped iterations:   0 | number of nan "
                         f"iterations:   0 |")
            acc = []
        if n in saves:
            s0, c = saves[n]
            L.add(s0 + 0.01, f"saving checkpoint at iteration {n:7d} to {CKPT}")
            L.add(s0 + c - 0.2, f"  successfully saved checkpoint at iteration {n:7d} to {CKPT}")
            L.many(s0 + c - 0.1, ["(min, max) time across ranks (ms):",
                                  f"    save-checkpoint ................................: ({c * 1000 - 41.7:.2f}, "
                                  f"{c * 1000:.2f})"])
    globals()[f"end_{a.kind}"](a, L, pids, rng, info)
    return L.text()


def rank_of(a: Attempt, h: str, d: int) -> int:
    return a.nodes.index(h) * GPN + d


def watchdog(r: int, seq: int, ran: int) -> list[str]:
    return [f"[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)={WATCHDOG_S * 1000}) ran "
            f"for {ran} milliseconds before timing out.",
            f"[rank{r}]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank {r}] Timeout at NCCL work: {seq}, last enqueued "
            f"NCCL work: {seq}, last completed NCCL work: {seq - 1}.",
            f"[rank{r}]:[E ProcessGroupNCCL.cpp:577] [Rank {r}] Some NCCL operations have failed or timed out. Due "
            f"to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
            f"data.",
            f"[rank{r}]:[E ProcessGroupNCCL.cpp:583] [Rank {r}] To avoid data inconsistency, we are taking the "
            f"entire process down."]


def kill_rest(a, L, pids, t, skip, failed_hosts, rng, exit_codes=None):
    """srun --kill-on-bad-exit: the step is cancelled, the other agents get SIGTERM."""
    L.add(t, f"srun: error: {failed_hosts[0]}: task {a.nodes.index(failed_hosts[0])}: Exited with exit code 1")
    L.add(t + 0.1, f"srun: Terminating StepId={a.job}.0")
    L.add(t + 0.3, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(t + 0.3)} ***")
    for i, h in enumerate(a.nodes):
        if h in skip:
            continue
        tt = t + 0.5 + 0.02 * i
        L.add(tt, elastic(tt, "agent.server.api", "WARNING", "Received 15 death signal, shutting down workers"))
        for d in range(GPN):
            L.add(tt + 0.001, elastic(tt + 0.001, "multiprocessing.api", "WARNING",
                                      f"Sending process {pids.w[h, d]} closing signal SIGTERM"))
    for i, h in enumerate(a.nodes):
        if h not in failed_hosts[:1]:
            L.add(a.E - 1.2 + 0.01 * i, f"srun: error: {h}: task {i}: "
                                        + ("Exited with exit code 1" if h in failed_hosts else "Terminated"))
    L.add(a.E - 0.8, f"srun: Force Terminated StepId={a.job}.0")


def agent_failed(a, L, pids, t, h, d, code, n_others):
    L.add(t, elastic(t, "multiprocessing.api", "ERROR",
                     f"failed (exitcode: {code}) local_rank: {d} (pid: {pids.w[h, d]}) of binary: /usr/bin/python3"))
    L.many(t + 0.01, child_failed(t, h, rank_of(a, h, d), d, pids.w[h, d], code, n_others))


def end_xid(a, L, pids, rng, info):
    R = a.R
    seq = 90_000 + rng.randint(0, 9000)
    for h in a.nodes:
        if h == XID_HOST:
            continue
        for d in range(GPN):
            tw = R + WATCHDOG_S + rng.uniform(0.3, 2.5)
            L.many(tw, watchdog(rank_of(a, h, d), seq, int((tw - R + 0.4) * 1000)))
    tf = R + WATCHDOG_S + 4.0
    first = None
    for i, h in enumerate(a.nodes):
        if h == XID_HOST:
            continue
        d = rng.randrange(GPN)
        agent_failed(a, L, pids, tf + 0.2 * i, h, d, -6, 7)
        first = first or h
    kill_rest(a, L, pids, tf + 3.0, [h for h in a.nodes if h != XID_HOST], [first], rng)
    info["watchdog_ts"] = R + WATCHDOG_S


def nccl_error_text(r: int, peer: str, port: int, kind: str) -> list[str]:
    last = (f"NET/IB : Got completion from peer {ip(peer)}<{port}> with status=12 opcode=0 len=0 vendor err 129 "
            f"({kind})")
    msg = (f"[PG 0 Rank {r}] NCCL watchdog thread terminated with exception: NCCL error: remote process exited or "
           f"there was a network error, NCCL version {NCCL_VER}")
    return [f"[rank{r}]:[E ProcessGroupNCCL.cpp:1316] {msg}",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
            "Last error:", last,
            "Exception raised from checkForNCCLErrorsInternal at ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219 "
            "(most recent call first):",
            "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f3c1b2a1897 in "
            "/usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)",
            "", "terminate called after throwing an instance of 'c10::DistBackendError'", f"  what():  {msg}",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
            "Last error:", last]


def net_pairs(a: Attempt) -> list[tuple[str, int, str, str]]:
    """(reporting host, gpu, peer host, Send/Recv) of the completion errors."""
    ring = a.nodes
    out = []
    if a.kind == "flap":
        for h in FLAP_HOSTS:
            i = ring.index(h)
            out.append((h, FLAP_GPU, ring[i - 1], "Send"))
            if h in ("nd-03", "nd-07"):
                out.append((h, FLAP_GPU, ring[(i + 1) % len(ring)], "Recv"))
    else:
        for peer in ("nd-03", "nd-06", "nd-08"):
            out.append((HCA_HOST, HCA_GPU, peer, "Recv" if peer != "nd-06" else "Send"))
            out.append((peer, HCA_GPU, HCA_HOST, "Send" if peer != "nd-06" else "Recv"))
    return out


def end_net(a, L, pids, rng, info):
    R = a.R
    pairs = net_pairs(a)
    info.setdefault("ports", {})
    seen = []
    for h, d, peer, kind in pairs:
        port = rng.randint(40000, 60999)
        info["ports"][(a.k, h, peer)] = port
        if h in seen:
            continue
        seen.append(h)
        te = R + 7.0 + rng.uniform(0.0, 0.8)
        L.many(te, nccl_error_text(rank_of(a, h, d), peer, port, kind))
    order = ["nd-06"] + [h for h in seen if h != "nd-06"]
    tf = R + 9.0 + rng.uniform(0, 0.5)
    for j, h in enumerate(order):
        d = FLAP_GPU if a.kind == "flap" else HCA_GPU
        for dd in range(GPN):
            if dd != d:
                L.add(tf + 0.3 * j - 0.1, elastic(tf + 0.3 * j - 0.1, "multiprocessing.api", "WARNING",
                                                  f"Sending process {pids.w[h, dd]} closing signal SIGTERM"))
        agent_failed(a, L, pids, tf + 0.3 * j, h, d, -6, 0)
    kill_rest(a, L, pids, tf + 2.0, order, order, rng)


end_flap = end_net
end_hca = end_net


def end_hang(a, L, pids, rng, info):
    R = a.R
    seq = 70_000 + rng.randint(0, 9000)
    stuck = rank_of(a, HANG_HOST, HANG_GPU)
    for hh in a.nodes:
        for d in range(GPN):
            r = rank_of(a, hh, d)
            if r == stuck:
                continue
            tw = R + WATCHDOG_S + rng.uniform(0.4, 3.0)
            L.many(tw, watchdog(r, seq, int((tw - R - 0.2) * 1000)))
    tf = R + WATCHDOG_S + 5.0
    first = None
    for i, h in enumerate(a.nodes):
        if h == HANG_HOST:
            continue
        agent_failed(a, L, pids, tf + 0.2 * i, h, rng.randrange(GPN), -6, 7)
        first = first or h
    kill_rest(a, L, pids, tf + 3.0, [h for h in a.nodes if h != HANG_HOST], [first], rng)
    tk = tf + 3.5 + 30.0
    L.add(tk, elastic(tk, "multiprocessing.api", "WARNING",
                      f"Unable to shutdown process {pids.w[HANG_HOST, HANG_GPU]} via Signals.SIGTERM, forcefully "
                      f"exiting via Signals.SIGKILL"))


def end_fs(a, L, pids, rng, info):
    n, ts = a.failed_save
    L.add(ts + 0.01, f"saving checkpoint at iteration {n:7d} to {CKPT}")
    te = a.R + 112.0 + rng.uniform(0, 4)
    writers = sorted(rng.sample(range(GPUS), 5))
    for r in writers:
        tp, pp = r % TP, r // (GPUS // PP)
        L.many(te + 0.05 * writers.index(r), [
            f"[rank{r}]: Traceback (most recent call last):",
            f'[rank{r}]:   File "/workspace/Megatron-LM/megatron/training/training.py", line 1121, in '
            f'save_checkpoint_and_time',
            f"[rank{r}]:     save_checkpoint(iteration, model, optimizer, opt_param_scheduler,",
            f'[rank{r}]:   File "/workspace/Megatron-LM/megatron/training/checkpointing.py", line 318, in '
            f'save_checkpoint',
            f"[rank{r}]:     torch.save(state_dict, checkpoint_name)",
            f'[rank{r}]:   File "/usr/local/lib/python3.10/dist-packages/torch/serialization.py", line 628, in save',
            f"[rank{r}]:     with _open_zipfile_writer(f) as opened_zipfile:",
            f"[rank{r}]: OSError: [Errno 5] Input/output error: '{CKPT}/iter_{n:07d}/mp_rank_{tp:02d}_{pp:03d}/"
            f"model_optim_rng.pt'"])
    hosts = []
    for r in writers:
        h = a.nodes[r // GPN]
        if h not in hosts:
            hosts.append(h)
    tf = te + 2.0
    for j, h in enumerate(hosts):
        r = next(x for x in writers if a.nodes[x // GPN] == h)
        agent_failed(a, L, pids, tf + 0.3 * j, h, r % GPN, 1, 0)
    kill_rest(a, L, pids, tf + 1.5, hosts, hosts, rng)
    info["oserror_ts"] = te


def end_limit(a, L, pids, rng, info):
    T = a.T
    L.add(T + 0.3, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(T)} DUE TO TIME "
                   f"LIMIT ***")
    L.add(T + 0.35, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(T)} DUE TO TIME "
                    f"LIMIT ***")
    for i, _h in enumerate(a.nodes):
        tt = T + 0.5 + 0.02 * i
        L.add(tt, elastic(tt, "agent.server.api", "WARNING", "Received 15 death signal, shutting down workers"))
    L.add(a.E - 0.5, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")


def end_complete(a, L, pids, rng, info):
    L.add(a.E - 2.4, f"[after training is done] datetime: {meg_dt(a.E - 2.4)} ")
    L.add(a.E - 1.0, f"END TIME: {date_cmd(a.E - 1.0)}")


# ----------------------------------------------------------------------------- NCCL files (undated)
def nccl_files(a: Attempt, pids: Pids, seed: int, info: dict) -> dict[str, str]:
    rng = random.Random(f"{seed}-undated-nccl-{a.k}")
    out = {}
    errs = {}
    if a.kind in ("flap", "hca"):
        for h, d, peer, kind in net_pairs(a):
            errs.setdefault((h, d), []).append((peer, kind, info["ports"][(a.k, h, peer)]))
    nn = len(a.nodes)
    for i, h in enumerate(a.nodes):
        for d in range(GPN):
            r = i * GPN + d
            w, tid = pids.w[h, d], pids.tid[h, d]
            p0, p = f"{h}:{w}:{w} [{d}] NCCL INFO ", f"{h}:{w}:{tid} [{d}] NCCL INFO "
            lines = [p0 + f"Bootstrap : Using ibp26s0:{ip(h)}<0>",
                     p0 + "NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or "
                          "directory No plugin found (libnccl-net.so), using internal implementation",
                     p0 + "cudaDriverVersion 12040"]
            if r == 0:
                lines.append(f"NCCL version {NCCL_VER}+cuda12.4")
            lines += [p + "NET/IB : Using " + " ".join(f"[{k}]mlx5_{k}:1/IB" for k in range(GPN)) +
                      f" [RO]; OOB ibp26s0:{ip(h)}<0>",
                      p + "Using non-device net plugin version 0", p + "Using network IB",
                      p + f"comm {pids.comm[h, d]} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} "
                          f"commId {pids.comm_id} - Init START",
                      p + f"comm {pids.comm[h, d]} rank {r} nRanks {GPUS} nNodes {nn} localRanks {GPN} localRank {d} "
                          f"MNNVL 0",
                      p + f"Channel {d:02d}/0 : {((i - 1) % nn) * GPN + d}[{d}] -> {r}[{d}] [receive] via "
                          f"NET/IB/{d}/GDRDMA",
                      p + f"Channel {d:02d}/0 : {r}[{d}] -> {((i + 1) % nn) * GPN + d}[{d}] [send] via "
                          f"NET/IB/{d}/GDRDMA",
                      p + "Connected all rings", p + "Connected all trees",
                      p + f"comm {pids.comm[h, d]} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} "
                          f"commId {pids.comm_id} - Init COMPLETE"]
            for rr, nr in ((d, TP), (r // (GPUS // PP), PP), ((r // GPN) % DP, DP)):
                c = "0x%x" % (0x55a000000000 + (rng.getrandbits(32) << 4))
                cid = "0x%016x" % rng.getrandbits(64)
                lines += [p + f"comm {c} rank {rr} nranks {nr} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} commId {cid} "
                              f"- Init START",
                          p + f"comm {c} rank {rr} nranks {nr} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} commId {cid} "
                              f"- Init COMPLETE"]
            if h == "nd-11" and a.k == 6 and d in (1, 5):
                pt = tid + 3
                lines += [f"{h}:{w}:{pt} [{d}] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_{d}:1 Got async "
                          f"event : GID table change",
                          f"{h}:{w}:{pt} [{d}] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_{d}:1 Got async "
                          f"event : SM change"]
            if (h, d) in errs:
                pt = tid + 2
                for peer, kind, port in errs[h, d]:
                    lines += ["", f"{h}:{w}:{pt} [{d}] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion "
                                  f"from peer {ip(peer)}<{port}> with status=12 opcode=0 len=0 vendor err 129 ({kind}) "
                                  f"localGid fe80::a088:c203:{int(h[3:]):x}:{d:x} remoteGidsfe80::a088:c203:"
                                  f"{int(peer[3:]):x}:{d:x}",
                              f"{h}:{w}:{pt} [{d}] NCCL INFO transport/net.cc:1298 -> 6",
                              f"{h}:{w}:{pt} [{d}] NCCL INFO proxy.cc:694 -> 6",
                              f"{h}:{w}:{pt} [{d}] NCCL INFO proxy.cc:874 -> 6 [Progress Thread]"]
                lines.append(f"{h}:{w}:{tid + 9} [{d}] NCCL INFO comm {pids.comm[h, d]} rank {r} nranks {GPUS} "
                             f"cudaDev {d} busId {BUSIDS[d]} - Abort COMPLETE")
            if a.kind == "complete":
                lines.append(p0 + f"comm {pids.comm[h, d]} rank {r} nranks {GPUS} cudaDev {d} busId {BUSIDS[d]} - "
                                  f"Destroy COMPLETE")
            out[f"{h}.{w}.log"] = "\n".join(lines) + "\n"
    return out


# ----------------------------------------------------------------------------- kernel (plain dmesg)
def kernel(atts: list[Attempt], seed: int, bundle: Path, info: dict) -> None:
    a1, a5 = atts[0], atts[4]
    end = atts[-1].E + 900
    for h in HOSTS:
        rng = random.Random(f"{seed}-undated-kern-{h}")
        boot = float(int(T0 - rng.randint(2 * 86400, 6 * 86400)))
        ev = []
        src = BOOT_SRC[h]
        wrapped = src is None
        if not wrapped:
            ev += [(boot + 0.0, "Linux version 5.15.0-126-generic (buildd@lcy02-amd64-026) (gcc (Ubuntu "
                                "11.4.0-1ubuntu1~22.04) 11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #136-Ubuntu SMP"),
                   (boot + 0.0, "Command line: BOOT_IMAGE=/boot/vmlinuz-5.15.0-126-generic root=UUID=3e1c ro quiet"),
                   (boot + 22.8, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Nov  5 00:32:35 UTC 2024")]
            if src == "rtc":
                d = datetime.fromtimestamp(boot + 3.1, UTC)
                ev.append((boot + 3.1, f"rtc_cmos 00:02: setting system clock to {d:%Y-%m-%dT%H:%M:%S} UTC "
                                       f"({int(boot + 3.1)})"))
            for k in range(GPN):
                ev.append((boot + 12.2 + 0.01 * k, f"mlx5_core 0000:{0x1a + 0x20 * k:02x}:00.0: firmware version: "
                                                   f"28.39.2048"))
        t = (T0 - 3 * 3600) if wrapped else boot + rng.uniform(900, 4000)
        while t < end:
            ev.append((t, rng.choice(["hrtimer: interrupt took %d ns" % rng.randint(9000, 40000),
                                      "kauditd_printk_skb: %d callbacks suppressed" % rng.randint(3, 30),
                                      "perf: interrupt took too long (%d > %d), lowering "
                                      "kernel.perf_event_max_sample_rate to 63750" % (3000, 2990)])))
            t += rng.uniform(1800, 9000)
        if h == XID_HOST:
            pci = f"0000:{BUSIDS[XID_GPU][:2]}:00"
            R = a1.R
            ev += [(R, f"NVRM: Xid (PCI:{pci}): 79, pid={rng.randint(100000, 999999)}, name=python3, GPU has "
                       f"fallen off the bus."),
                   (R + 0.0001, f"NVRM: GPU {pci}.0: GPU has fallen off the bus."),
                   (R + 0.0002, f"NVRM: GPU at PCI:{pci}: GPU-4f1e2d3c-9a8b-7c6d-5e4f-{rng.getrandbits(48):012x}"),
                   (R + 0.0003, f"NVRM: GPU Board Serial Number: 1654023{rng.randint(100000, 999999)}"),
                   (R + 0.0004, "NVRM: A GPU crash dump has been created. If possible, please run"),
                   (R + 0.0005, "NVRM: nvidia-bug-report.sh as root to collect this data before"),
                   (R + 0.0006, "NVRM: the NVIDIA kernel module is unloaded.")]
        if h == "nd-08":                                   # decoy: an old Xid 31 from another user's job
            to = T0 - 26 * 3600 - rng.randint(0, 3600)
            ev.append((to, f"NVRM: Xid (PCI:0000:{BUSIDS[4][:2]}:00): 31, pid={rng.randint(100000, 999999)}, "
                           f"name=python, Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 "
                           f"faulted @ 0x7f2a_3c400000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"))
            info["xid31_ts"] = to
        if h == "nd-02":                                   # decoy: corrected PCIe errors, undatable host
            for t in (atts[2].F + 2400, atts[5].F + 3000, atts[6].F + 1500):
                ev += [(t, "pcieport 0000:16:01.0: AER: Corrected error received: 0000:18:00.0"),
                       (t, "nvidia 0000:18:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
                           "(Receiver ID)"),
                       (t, "nvidia 0000:18:00.0:   device [10de:2330] error status/mask=00000001/0000e000"),
                       (t, "nvidia 0000:18:00.0:    [ 0] RxErr                 ")]
        if h in a5.nodes:                                 # the OST is lost during attempt 5's save
            ts = a5.failed_save[1]
            first = ts + (2.1 if h == "nd-07" else rng.uniform(3.0, 8.0))
            addr = "172.16.40.17@o2ib"
            cli = f"{OST}-osc-ffff8f2a4c9e{int(h[3:]):04x}"
            ev += [(first, f"LustreError: 11-0: {cli}: operation ost_write to node {addr} failed: rc = -107"),
                   (first + 0.001, f"Lustre: {cli}: Connection to {OST} (at {addr}) was lost; in progress "
                                   f"operations using this service will wait for recovery to complete"),
                   (ts + 104 + rng.uniform(0, 3), f"LustreError: 167-0: {cli}: This client was evicted by {OST}; "
                                                  f"in progress operations using this service will fail."),
                   (ts + 150 + rng.uniform(0, 5), f"Lustre: {cli}: Connection restored to {addr} (at {addr})")]
        ev.sort(key=lambda x: x[0])
        if wrapped:
            ev = [e for e in ev if e[0] >= T0 - 3 * 3600]
        lines = []
        for t, m in ev:
            up = t - boot
            lines.append(f"[{up:12.6f}] {m}")
        write(bundle / "nodes" / h / "dmesg.txt", "\n".join(lines) + "\n")
        if src == "uptime":
            write(bundle / "nodes" / h / "uptime-s.txt", f"{datetime.fromtimestamp(boot, UTC):%Y-%m-%d %H:%M:%S}\n")
        elif src == "last":
            d = datetime.fromtimestamp(boot, UTC)
            write(bundle / "nodes" / h / "last-reboot.txt",
                  f"reboot   system boot  5.15.0-126-gener {d:%a} {d:%b} {d.day:2d} {d:%H:%M}   still running\n\n"
                  f"wtmp begins Sun Nov  1 00:00:04 2026\n")


# ----------------------------------------------------------------------------- scheduler (dated)
def scheduler(atts: list[Attempt], bundle: Path, seed: int) -> None:
    rng = random.Random(f"{seed}-undated-sched")
    L = Sink()
    rows = ["JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"]
    for a in atts:
        sub = a.S - rng.randint(5, 60)
        hl = hostlist(a.nodes)
        L.add(sub, f"{ctld(sub)} _slurm_rpc_submit_batch_job: JobId={a.job} InitPrio=4294{rng.randint(100000, 999999)} "
                   f"usec={rng.randint(300, 900)}")
        L.add(a.S + 0.01, f"{ctld(a.S + 0.01)} sched: Allocate JobId={a.job} NodeList={hl} #CPUs={192 * len(a.nodes)} "
                          f"Partition=train")
        if a.kind == "limit":
            L.add(a.T + 0.002, f"{ctld(a.T + 0.002)} Time limit exhausted for JobId={a.job}")
            state, ec = "TIMEOUT", "0:0"
            L.add(a.E, f"{ctld(a.E)} _job_complete: JobId={a.job} WTERMSIG 15")
        elif a.kind == "complete":
            state, ec = "COMPLETED", "0:0"
            L.add(a.E, f"{ctld(a.E)} _job_complete: JobId={a.job} WEXITSTATUS 0")
        else:
            state, ec = "FAILED", "1:0"
            L.add(a.E, f"{ctld(a.E)} _job_complete: JobId={a.job} WEXITSTATUS 1")
        L.add(a.E + 0.01, f"{ctld(a.E + 0.01)} _job_complete: JobId={a.job} done")
        if a.host is not None:
            tdr = a.E + 600 + rng.randint(0, 300)
            L.add(tdr, f"{ctld(tdr)} update_node: node {a.host} reason set to: investigating job {a.job}")
            L.add(tdr + 0.01, f"{ctld(tdr + 0.01)} update_node: node {a.host} state set to DRAINED")
        cpus = 192 * len(a.nodes)
        rows.append(f"{a.job}|gpt20b|train|mlteam|{cpus}|{state}|{ec}|{slurm_ts(sub)}|{slurm_ts(a.S)}|"
                    f"{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|{len(a.nodes)}|{hl}")
        st = "CANCELLED" if a.kind == "limit" else state
        rows.append(f"{a.job}.batch|batch|||192|{st}|{'0:15' if a.kind == 'limit' else ec}|{slurm_ts(a.S)}|"
                    f"{slurm_ts(a.S)}|{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|1|{a.nodes[0]}")
        rows.append(f"{a.job}.0|torchrun|||{cpus}|{st}|{'0:15' if a.kind == 'limit' else ec}|{slurm_ts(a.S + 1)}|"
                    f"{slurm_ts(a.S + 1)}|{slurm_ts(a.E)}|{elapsed(a.E - a.S - 1)}|{len(a.nodes)}|{hl}")
    write(bundle / "scheduler" / "slurmctld.log", L.text())
    write(bundle / "scheduler" / "sacct.txt", "\n".join(rows) + "\n")


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    atts = build(seed)
    write(bundle / "inventory.toml",
          f'[providers.{PROVIDER}]\nusd_per_gpu_hour = 2.41\n\n[clusters.{CLUSTER}]\nprovider = "{PROVIDER}"\n'
          f'gpu = "H100-SXM"\ngpus_per_node = {GPN}\ninterconnect = "InfiniBand NDR, rail-optimised"\n'
          f'nodes = "nd-[01-11]"\n')
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", f'cluster = "{CLUSTER}"\ngpus = {GPUS}\ntokens_per_step = {TOKENS_PER_STEP}\n'
                             f'flops_per_token = {FLOPS_PER_TOKEN:.4e}\ncheckpoint_dir = "{CKPT}"\nlauncher = "slurm"\n')
    info: dict = {}
    for a in atts:
        pids = Pids(seed, a)
        write(rdir / f"attempt-{a.k}" / f"slurm-{a.job}.out", train_log(a, pids, seed, info))
        for name, body in nccl_files(a, pids, seed, info).items():
            write(rdir / f"attempt-{a.k}" / "nccl" / name, body)
    kernel(atts, seed, bundle, info)
    scheduler(atts, bundle, seed)
    cats, total, per = ledger(atts)
    incidents = []
    for j, a in enumerate(atts[:-1]):
        incidents.append({
            "id": j + 1, "attempt": a.k, "slurm_job": a.job, "failure_mode": a.mode, "host": a.host,
            "cluster": CLUSTER, "provider": PROVIDER,
            "blame": "user" if a.mode == "time_limit" else "unknown" if a.mode == "nccl_timeout" else "provider",
            "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E), "last_ckpt_step": a.last_ckpt,
            "gpu_hours": per[j], "gpu_hours_lost": round(sum(per[j].values()), 4)})
    incidents[0]["gpu_index"] = XID_GPU
    incidents[1]["symptom_hosts"] = FLAP_HOSTS
    incidents[2]["gpu_index"] = HCA_GPU
    incidents[3]["rank"] = rank_of(atts[3], HANG_HOST, HANG_GPU)
    incidents[4]["ost"] = OST
    decoys = {"nd-01": "named by one rail-2 switch-flap symptom's completion error (attempt 2); no fault of its own",
              "nd-02": "rail-2 switch flap symptom (attempt 2); corrected PCIe AER in an undatable dmesg",
              "nd-03": "switch flap symptom; peer of nd-05's failing HCA",
              "nd-06": "switch flap symptom and first torchrun to report it; peer of nd-05's HCA",
              "nd-07": "switch flap symptom; first host to report the lost OST",
              "nd-08": "old Xid 31 a day before the campaign; peer of nd-05's HCA",
              "nd-11": "benign NCCL WARN async events (GID table change, SM change) in the time-limit attempt"}
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "first_start_ts": iso_z(atts[0].S), "last_end_ts": iso_z(atts[-1].E),
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "nodes": hostlist(a.nodes), "start_ts": iso_z(a.S),
                      "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E), "loaded_step": a.load,
                      "last_step": a.steps[-1][0], "saves": [n for n, _, _ in a.saves], "end": a.kind}
                     for a in atts],
        "match_on_attempt": True,
        "incidents": incidents, "decoy_hosts": sorted(decoys), "decoy_reasons": decoys,
        "hardware_modes": HARDWARE_MODES, "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incidents), 4)},
        "boot_time_source": BOOT_SRC,
        "notes": "Truth times are the controller's UTC clock. host null matches any host. Ledger: see the docstring.",
    }
    write(out / "truth.json", json.dumps(truth, indent=2) + "\n")
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261206)
    args = ap.parse_args()
    out = Path(args.out)
    if (out / "bundle").exists():
        raise SystemExit(f"{out / 'bundle'} exists; pass an empty --out")
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    print(f"wrote {out / 'bundle'} and truth.json; total {truth['total_gpu_hours']:.1f} GPU-h, "
          f"{len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
