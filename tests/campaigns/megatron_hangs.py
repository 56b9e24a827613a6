#!/usr/bin/env python3
# ruff: noqa: E501, UP031  (real log lines are quoted whole; printf formats mirror the C sources)
"""Campaign "megatron_hangs": a Megatron-Core pre-training run whose lost time is mostly HANGS; who stopped first?

Written before reading clusterlab's analysis code. Standard library only, deterministic per --seed (gzip members
have mtime=0 and no name). Usage: megatron_hangs.py --out DIR [--seed N]     (~15 MB, ~3 s)

Writes, under --out DIR:
  DIR/bundle/inventory.toml, DIR/bundle/runs/mcore-34b-hangs/run.toml
  DIR/bundle/runs/mcore-34b-hangs/logs/slurm-<job>.out   one file per sbatch, all in ONE folder (no attempt dirs):
        attempts 1-3 `srun -l --kill-on-bad-exit=1 python pretrain_gpt.py` (one task per GPU, labels "%3d: " =
        global rank), attempts 4-8 `srun -l --kill-on-bad-exit=1 torchrun ...` (one task per node, labels "%2d: "
        = node index, torch's own "[rankN]:" prefixes behind them). NCCL_DEBUG=INFO goes to the same stream.
        Megatron prints its iteration lines from the LAST rank (print_rank_last), with a "[YYYY-mm-dd HH:MM:SS]"
        stamp in attempts 1-3 (a recent Megatron-Core image) and without one in attempts 4-8 (the team pinned an
        older image after attempt 3).
  DIR/bundle/runs/mcore-34b-hangs/probe/<job>/rank-NNNNN.jsonl[.gz]  per-rank step records (every 10th step, all
        128 ranks) for attempt 5 only: the team turned its step probe on when the step time looked off
  DIR/bundle/nodes/<host>/{kern.log | dmesg-T.txt}   Ubuntu 24.04 rsyslog kern.log (RFC 3339 stamps) on odd
        hosts, `dmesg -T` captures on even hosts; every host's clock is off by up to a second, gl1-gpu004's by
        -150 s (its NTP daemon died)
  DIR/bundle/scheduler/{slurmctld.log, sacct.txt}
  DIR/truth.json

Fleet: cluster gl-1 (provider glacier), gl1-gpu[001-020], 8 x H100-SXM each. Run "mcore-34b-hangs": a 34B GPT,
Megatron-Core TP=4 PP=4 DP=8 on 16 nodes = 128 GPUs, 5.41 s a step, a save every 500 iterations (~40 s, torch_dist),
distributed timeout 10 min (NCCL watchdog 600000 ms), TORCH_NCCL_TRACE_BUFFER_SIZE / TORCH_NCCL_DUMP_ON_TIMEOUT on.
Each attempt is a new sbatch job; the operators exclude and drain nodes between them. All truth times: UTC.

  att 1  Xid 119 (GSP RPC timeout) on gl1-gpu006 GPU2 (rank 42): that rank wedges inside the driver and prints
         nothing more; 600 s later every OTHER rank's watchdog fires (flight-recorder dump lines, SIGABRT);
         srun kills the step, rank 42 cannot be killed: "Kill task failed", the node is drained.  A hung-task
         report for the wedged python process follows on gl1-gpu006 (a consequence of the Xid, not storage).
                                                                         [gpu_hw_other, gl1-gpu006]
  att 2  rank 72's dataloader (gl1-gpu011, TP rank 0 reads the data) blocks in a read on the node's FUSE
         dataset mount: "INFO: task pt_data_worker:PID blocked for more than 122 seconds" with a fuse call
         trace, only on that node; every other rank blocks in the next collective, watchdogs 600 s later;
         rank 72 itself only OBSERVES the others' dump signal. Root: the end of the last completed step.
                                                                         [filesystem_io, gl1-gpu011]
  att 3  the IB port on rail 5 of gl1-gpu014 flaps (mlx5 "Link down"/"Link up" three times in its kernel log);
         NCCL on its ring neighbours gl1-gpu013 and gl1-gpu015 warns "NET/IB : Got completion from peer
         <gl1-gpu014's address> with status=12 ..." and raises ncclRemoteError; gl1-gpu014 itself warns only later,
         naming gl1-gpu013's address (status=5, flushed).  The culprit is the host whose link went down, named
         by its address in other hosts' logs.                           [network, gl1-gpu014]
  att 4  Xid 74 (NVLink fatal error) on gl1-gpu009 GPU5: that rank raises "CUDA error: uncorrectable NVLink
         error detected during the execution", torchrun fails, srun kills the step.   [nvlink_error, gl1-gpu009]
  att 5  gl1-gpu012 GPU3 computes ~6 % slower for the whole attempt: every step is ~4.7 % slower (synchronous
         training); only the per-rank step records show which rank; the attempt runs into its 10 h TIME LIMIT.
                                                 [straggler, gl1-gpu012] + [time_limit, any host]
  att 6  the user changed --num-query-groups 8 -> 4 in the launch script: the checkpoint load fails on every
         rank with a dist_checkpointing "Global shape mismatch" CheckpointingException, before any step.
                                                                         [user_code_error, any host]
  att 7  rank 19 (gl1-gpu003 GPU3) stops enqueueing collectives after iteration N (its PG status stays at work
         S-1); every other rank's watchdog fires on work S 600 s later; rank 19 only observes the dump signal and
         reports "Last enqueued NCCL work: S-1". No kernel evidence.      [nccl_timeout, gl1-gpu003]
         Also in att 7 (decoys): a loss spike that heals within ~40 iterations; harmless NCCL WARN "Got async
         event : client reregistration" on gl1-gpu002 and gl1-gpu016 (an SM failover), the job steps past them.
  att 8  completes (final save, "[after training is done]").
  Other decoys: gl1-gpu004 (clock 150 s slow) logs a PCIe AER *Corrected* error 90 s after att 1's Xid 119, which
  its clock puts ~60 s BEFORE it; gl1-gpu013 / gl1-gpu015 (NET/IB symptoms of att 3); the watchdog floods.

Ledger (truth.json expected_ledger, GPU-hours = 128 x seconds / 3600), the conventions of campaign1/2:
  startup    = attempt start (sacct Start) -> first training step start; att 6 (no step): start -> the exception
  productive = kept steps (step <= the attempt's last completed save for an ended attempt; every step of the
               completed attempt), whole durations; in att 5 only the baseline 5.412 s of each kept step
  straggler  = att 5's kept steps' time above the 5.412 s baseline
  checkpoint = completed saves (the save-checkpoint timer), plus the tail after the final save
  recompute  = end of the attempt's last completed save (or its first step start) -> root event
  hang       = root event -> attempt exit (sacct End). Root events: the Xid 119, the end of the last completed
               step (att 2, att 7), the first "Link down", the Xid 74, the time limit, the exception (att 6)
  restart    = attempt exit -> next attempt start;   slowdown = data_stall = idle = 0

Formats, looked up with the search tools (facts only; the text here is written anew):
  * srun --label: Slurm src/common/write_labelled_message.c `snprintf(buf, .., "%*d: ", taskid_width, taskid)`
    (width = digits of the largest task id); "srun: error: HOST: tasks A-B: Exited with exit code N",
    "srun: Terminating StepId=J.0", "slurmstepd: error: *** STEP J.0 ON H CANCELLED AT T ***",
    "*** JOB J ON H CANCELLED AT T DUE TO TIME LIMIT ***", "... STEPD TERMINATED ON H AT T DUE TO JOB NOT ENDING
    WITH SIGNALS ***" (slurmstepd req.c / mgr.c), slurmctld "Kill task failed" drains.
  * PyTorch ProcessGroupNCCL (2.6-2.8): "[rankN]:[E1206 10:11:12.123456789 ProcessGroupNCCL.cpp:632] [Rank N]
    Watchdog caught collective operation timeout: WorkNCCL(SeqNum=.., OpType=.., NumelIn=.., NumelOut=..,
    Timeout(ms)=600000) ran for 600047 milliseconds before timing out.", "[PG ID 0 PG GUID 0(default_pg) Rank N]
    failure detected by watchdog at work sequence id: S PG status: last enqueued work: E, last completed work: C",
    "First PG on this rank to signal dumping.", "Observed flight recorder dump signal from another rank via
    TCPStore.", "Received a dump signal due to a collective timeout from  rank R and we will try our best to dump
    the debug info. Last enqueued NCCL work: E, last completed NCCL work: C.This is most likely caused by ...",
    "ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1" (LlamaFactory #8261, public
    stderr excerpts found with find_string, pytorch/pytorch PRs #120893 #123023).
  * NCCL 2.21 INFO/WARN as in the outsiders' campaigns; "NET/IB : Got completion from peer 10.x<port> with
    status=12 opcode=0 len=0 vendor err 129 (Recv) localGid .. remoteGids.." then "NCCL INFO transport/net.cc:1302
    -> 6" (NVIDIA/nccl #1405, #1814); "Got async event : client reregistration" (ibv_event_type_str names).
  * NVRM Xid 119 "Timeout after 6s of waiting for RPC response from GPU2 GSP! Expected function 76
    (GSP_RM_CONTROL) (0x20802a02 0x8)." (public dmesg excerpts), Xid 154 recovery action, Xid 74 "NVLink: fatal
    error detected on link N(0x.., ...)"; hung task "INFO: task X:PID blocked for more than N seconds." +
    "task:X state:D stack:0 pid:.. tgid:.. ppid:.. flags:0x.." + Call Trace; PCIe AER corrected errors.
  * Megatron-LM training.py training_log (" [%Y-%m-%d %H:%M:%S] iteration N/ M | consumed samples: ..."),
    checkpointing.py save/load lines, timers "(min, max) time across ranks (ms):", print_datetime lines;
    megatron.core.dist_checkpointing "Global shape mismatch for loaded (..) and expected (..) tensor for key ..".
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

RUN = "mcore-34b-hangs"
CLUSTER, PROVIDER = "gl-1", "glacier"
GPN, NODES = 8, 16
GPUS = GPN * NODES
TP, PP, DP = 4, 4, 8
GBS, SEQ = 256, 4096
TOKENS_PER_STEP = GBS * SEQ
FLOPS_PER_TOKEN = 2.16e11               # 6 * 34.4e9 + attention (12 * L * h * s, L=48, h=8192... rounded)
PEAK_H100 = 989.4e12
BASE = 5.412
JITTER = 0.003                          # +-0.3 % step to step
SLOW = 1.047                            # att 5: the whole job waits for gl1-gpu012 GPU3
SAVE_EVERY, LOG_EVERY = 500, 10
TIMEOUT_S = 600.0
T0 = datetime(2026, 11, 28, 21, 40, 0, tzinfo=UTC).timestamp()
HOSTS = [f"gl1-gpu{i:03d}" for i in range(1, 21)]
BUS = ["1b", "43", "52", "61", "9d", "c3", "d1", "df"]
NIC_IF = ["ibp12s0", "ibp64s0", "ibp79s0", "ibp94s0", "ibp154s0", "ibp192s0", "ibp206s0", "ibp220s0"]
NIC_PCI = ["0000:0c:00.0", "0000:40:00.0", "0000:4f:00.0", "0000:5e:00.0",
           "0000:9a:00.0", "0000:c0:00.0", "0000:ce:00.0", "0000:dc:00.0"]
CKPT = "/lustre/gl1/proj-lm/ckpt/mcore-34b"
HW_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error", "network",
            "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption", "gpu_throttle"]
SKEW = {"gl1-gpu004": -150.0}
TORCH = "/usr/local/lib/python3.12/dist-packages/torch"


def host_ip(h: str) -> str:
    n = int(h[-3:])
    return f"10.50.{1 + n // 8}.{(n * 37) % 200 + 20}"


# ----------------------------------------------------------------------------- time formats
def _dt(t: float) -> tuple[datetime, int]:
    us = int(round(t * 1e6))
    s, frac = divmod(us, 1_000_000)
    return datetime.fromtimestamp(s, UTC), frac


def iso_z(t: float) -> str:
    d, us = _dt(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{us // 1000:03d}Z"


def stamp(t: float) -> str:
    return _dt(t)[0].strftime("%Y-%m-%d %H:%M:%S")


def slurm_ts(t: float) -> str:
    return _dt(t)[0].strftime("%Y-%m-%dT%H:%M:%S")


def glog(t: float, lvl: str, ns: int) -> str:          # c10 logging: E1206 10:11:12.123456789
    d, us = _dt(t)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{us:06d}{ns:03d}"


def pylog(t: float, lvl: str) -> str:                   # torch.distributed.elastic logging
    d, us = _dt(t)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{us // 1000:03d}000"


def elapsed(sec: float) -> str:
    sec = int(round(sec))
    d, r = divmod(sec, 86400)
    h, r = divmod(r, 3600)
    m, s = divmod(r, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts: list[str]) -> str:
    nums = sorted(int(h[-3:]) for h in hosts)
    out, a, b = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == b + 1:
            b = n
            continue
        out.append(f"{a:03d}" if a == b else f"{a:03d}-{b:03d}")
        if n is not None:
            a = b = n
    return f"gl1-gpu[{','.join(out)}]"


class Sink:
    def __init__(self) -> None:
        self.items: list[tuple[float, int, str]] = []

    def add(self, t: float, line: str) -> None:
        self.items.append((t, len(self.items), line))

    def many(self, t: float, lines: list[str]) -> None:
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


# ----------------------------------------------------------------------------- the story
class Att:
    def __init__(self, **kw) -> None:
        self.__dict__.update(kw)
        self.steps: list[tuple[int, float, float]] = []
        self.saves: list[tuple[int, float, float]] = []
        self.R = self.E = self.F = 0.0
        self.nodes: list[str] = []


SPECS = [
    dict(k=1, job=552101, mode="gpu_hw_other", host="gl1-gpu006", gpu=2, launch="srun", run_steps=4100, gap=2700),
    dict(k=2, job=552130, mode="filesystem_io", host="gl1-gpu011", gpu=0, launch="srun", run_steps=2300, gap=1900),
    dict(k=3, job=552164, mode="network", host="gl1-gpu014", gpu=5, launch="srun", run_steps=1700, gap=3300),
    dict(k=4, job=552190, mode="nvlink_error", host="gl1-gpu009", gpu=5, launch="torchrun", run_steps=2650, gap=2100),
    dict(k=5, job=552215, mode="time_limit", host=None, gpu=None, launch="torchrun", run_steps=None, gap=1500),
    dict(k=6, job=552231, mode="user_code_error", host=None, gpu=None, launch="torchrun", run_steps=0, gap=1150),
    dict(k=7, job=552240, mode="nccl_timeout", host="gl1-gpu003", gpu=3, launch="torchrun", run_steps=3350, gap=2400),
    dict(k=8, job=552266, mode=None, host=None, gpu=None, launch="torchrun", run_steps=None, gap=None),
]
DRAIN_AFTER = {1: "gl1-gpu006", 2: "gl1-gpu011", 3: "gl1-gpu014", 4: "gl1-gpu009", 5: "gl1-gpu012", 7: "gl1-gpu003"}
RESUME_BEFORE = {4: ["gl1-gpu011"], 5: ["gl1-gpu006"], 6: ["gl1-gpu014"]}
TRAIN_ITERS = 24000
TIME_LIMIT_5 = 10 * 3600
STRAGGLER_HOST, STRAGGLER_GPU = "gl1-gpu012", 3


def save_dur(rng: random.Random) -> float:
    return round(rng.uniform(36.0, 44.0), 2)


def build(seed: int) -> list[Att]:
    rng = random.Random(f"{seed}-timeline")
    atts = [Att(**s) for s in SPECS]
    drained: set[str] = set()
    t, load = T0, 0
    for a in atts:
        for h in RESUME_BEFORE.get(a.k, []):
            drained.discard(h)
        a.nodes = [h for h in HOSTS if h not in drained][:NODES]
        a.load = load
        a.S = float(round(t))
        srng = random.Random(f"{seed}-steps-{a.k}")
        # init (container, rendezvous, NCCL init, model build), checkpoint load, data
        a.init_s = 95 + rng.randint(-6, 6) + (25 if a.launch == "torchrun" else 0)
        a.load_s = 0 if a.load == 0 else 118 + rng.randint(-9, 9)
        a.data_s = 31 + rng.randint(-3, 3)
        if a.k == 6:
            a.R = a.S + a.init_s + 0.6 * a.load_s
            a.E = float(math.floor(a.R + 11 + rng.random()))
            a.F = None
        else:
            a.F = a.S + a.init_s + a.load_s + a.data_s
            simulate(a, srng, rng)
        a.kept = a.saves[-1][0] if a.saves else a.load
        if a.mode is not None and a.k != 6:
            load = a.kept
        if a.k in DRAIN_AFTER:
            drained.add(DRAIN_AFTER[a.k])
        if a.gap is not None:
            t = a.E + a.gap + rng.randint(-120, 120)
    return atts


def simulate(a: Att, srng: random.Random, rng: random.Random) -> None:
    t, n = a.F, a.load
    slow = SLOW if a.k == 5 else 1.0
    limit = a.S + TIME_LIMIT_5 if a.k == 5 else None
    fail_at = a.load + a.run_steps + 1 if a.run_steps else None
    while True:
        if a.k == 8 and n >= TRAIN_ITERS:
            break
        n1 = n + 1
        d = BASE * slow * (1 + srng.uniform(-JITTER, JITTER))
        if fail_at is not None and n1 == fail_at:
            if a.mode in ("filesystem_io", "nccl_timeout"):
                a.R = t                                    # the next step never starts on the stuck rank
            else:
                a.R = t + srng.uniform(0.25, 0.8) * d      # the fault strikes inside step n1
            break
        if limit is not None and t + d > limit:
            a.R = limit
            break
        a.steps.append((n1, t, d))
        t += d
        n = n1
        if n % SAVE_EVERY == 0:
            c = save_dur(srng)
            if limit is not None and t + c > limit:
                a.R = limit
                break
            a.saves.append((n, t, c))
            t += c
    hang = {"gpu_hw_other": TIMEOUT_S + 41 + rng.uniform(0, 4), "filesystem_io": TIMEOUT_S + 38 + rng.uniform(0, 4),
            "network": 9.5 + rng.uniform(0, 2), "nvlink_error": 14 + rng.uniform(0, 2),
            "time_limit": 4.0, "nccl_timeout": TIMEOUT_S + 17 + rng.uniform(0, 3)}
    if a.k == 8:
        a.R = None
        a.E = float(math.ceil(t + 6.0))
    else:
        a.E = float(math.floor(a.R + hang[a.mode]))


def ledger(atts: list[Att]) -> tuple[dict, float, list[dict]]:
    cats = dict.fromkeys(["productive", "straggler", "checkpoint", "data_stall", "recompute", "hang", "restart",
                          "startup", "idle", "slowdown"], 0.0)
    per = []
    for i, a in enumerate(atts):
        first = a.F if a.F is not None else a.R
        cats["startup"] += first - a.S
        limit = a.kept if a.k != 8 else 10 ** 9
        for n, _, d in a.steps:
            if n > limit:
                continue
            if a.k == 5:
                cats["productive"] += BASE
                cats["straggler"] += d - BASE
            else:
                cats["productive"] += d
        for _, _, c in a.saves:
            cats["checkpoint"] += c
        if a.k == 8:
            cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        base = (a.saves[-1][1] + a.saves[-1][2]) if a.saves else first
        nxt = atts[i + 1]
        d = dict(recompute=a.R - base, hang=a.E - a.R, restart=nxt.S - a.E,
                 startup=(nxt.F if nxt.F is not None else nxt.R) - nxt.S)
        cats["recompute"] += d["recompute"]
        cats["hang"] += d["hang"]
        cats["restart"] += d["restart"]
        per.append(d)
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return {k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4), \
        [{k: round(v * g, 4) for k, v in d.items()} for d in per]


# ----------------------------------------------------------------------------- slurm-%j.out
def host_skews(seed: int) -> dict[str, float]:
    hr = random.Random(f"{seed}-skew")
    return {h: SKEW.get(h, round(hr.uniform(-0.9, 0.9), 3)) for h in HOSTS}


class Out:
    """The job's console: srun labels, per-host clocks for lines that carry a host-made stamp."""

    def __init__(self, a: Att, seed: int) -> None:
        self.a, self.L = a, Sink()
        self.rng = random.Random(f"{seed}-out-{a.k}")
        self.skew = host_skews(seed)
        prng = random.Random(f"{seed}-pids-{a.k}")
        self.pid = {(h, d): 0 for h in a.nodes for d in range(GPN)}
        self.agent = {}
        for h in a.nodes:
            base = prng.randint(150_000, 3_800_000)
            self.agent[h] = base
            for d in range(GPN):
                self.pid[h, d] = base + 11 + d * prng.randint(1, 3)

    def label(self, rank: int) -> str:
        if self.a.launch == "srun":
            return f"{rank:3d}: "
        return f"{rank // GPN:2d}: "

    def node_label(self, i: int) -> str:
        return f"{i * GPN:3d}: " if self.a.launch == "srun" else f"{i:2d}: "

    def host_of(self, r: int) -> str:
        return self.a.nodes[r // GPN]

    def rank_line(self, t: float, r: int, text: str) -> None:
        self.L.add(t, self.label(r) + text)

    def c10(self, t: float, r: int, cpp: str, text: str, lvl: str = "E") -> None:
        ht = t + self.skew[self.host_of(r)]
        self.rank_line(t, r, f"[rank{r}]:[{glog(ht, lvl, self.rng.randint(0, 999))} {cpp}] {text}")

    def plain(self, t: float, text: str) -> None:
        self.L.add(t, text)


def megatron_setup(o: Out, a: Att) -> float:
    S, r0 = a.S, 0
    o.plain(S + 0.5, f"==== {RUN}: job {a.job} on {hostlist(a.nodes)} ({len(a.nodes)} nodes) at {slurm_ts(S)}+00:00 ====")
    o.plain(S + 0.6, "+ export NCCL_DEBUG=INFO TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 "
                     "CUDA_DEVICE_MAX_CONNECTIONS=1")
    t = S + 9
    if a.launch == "torchrun":
        for i, h in enumerate(a.nodes):
            p = f"{o.node_label(i)}{pylog(t + 0.1 * i + o.skew[h], 'W')} {o.agent[h]} {TORCH}/distributed/run.py:792] "
            o.L.many(t + 0.1 * i, [p, p + "*" * 41,
                                   p + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in "
                                       "default, to avoid your system being overloaded, please further tune the "
                                       "variable for optimal performance in your application as needed. ",
                                   p + "*" * 41])
    t = S + 24
    L0 = o.label(r0)
    o.L.many(t, [L0 + f"using world size: {GPUS}, data-parallel size: {DP}, context-parallel size: 1, hierarchical "
                      f"context-parallel sizes: None, tensor-model-parallel size: {TP}, encoder-tensor-model-parallel "
                      f"size: 0, pipeline-model-parallel size: {PP}, encoder-pipeline-model-parallel size: 0",
                 L0 + "------------------------ arguments ------------------------"])
    qg = "4" if a.k == 6 else "8"
    args = [("bf16", "True"), ("ckpt_format", "torch_dist"), ("distributed_timeout_minutes", "10"),
            ("global_batch_size", str(GBS)), ("hidden_size", "8192"), ("load", CKPT), ("log_interval", str(LOG_EVERY)),
            ("micro_batch_size", "1"), ("num_attention_heads", "64"), ("num_layers", "48"),
            ("num_query_groups", qg), ("pipeline_model_parallel_size", str(PP)), ("save", CKPT),
            ("save_interval", str(SAVE_EVERY)), ("seq_length", str(SEQ)), ("tensor_model_parallel_size", str(TP)),
            ("train_iters", str(TRAIN_ITERS)), ("use_distributed_optimizer", "True"), ("world_size", str(GPUS))]
    o.L.many(t, [L0 + f"  {k} {'.' * (48 - len(k))} {v}" for k, v in args])
    o.L.many(t, [L0 + "-------------------- end of arguments ---------------------",
                 L0 + "> initializing torch distributed ..."])
    nccl_init(o, a, S + 40)
    ti = S + a.init_s - 22
    o.L.many(ti, [L0 + f"> initialized tensor model parallel with size {TP}",
                  L0 + f"> initialized pipeline model parallel with size {PP}",
                  L0 + "> setting random seeds to 1234 ...",
                  L0 + f"time to initialize megatron (seconds): {a.init_s - 23 + o.rng.random():.3f}",
                  L0 + f"[after megatron is initialized] datetime: {stamp(ti + o.skew[a.nodes[0]])} ",
                  L0 + "building GPT model ..."])
    for tp, pp in [(0, 0), (1, 0), (2, 1), (3, 3), (0, 2)]:
        o.L.add(ti + 3 + tp, o.label(tp + pp * TP * DP) + f" > number of parameters on (tensor, pipeline) model "
                                                         f"parallel rank ({tp}, {pp}): {2_158_000_128 + 4096 * pp}")
    tm = S + a.init_s
    if a.load == 0:
        o.L.many(tm, [L0 + f"WARNING: could not find the metadata file {CKPT}/latest_checkpointed_iteration.txt",
                      L0 + "    will not load any checkpoints and will start from random"])
    else:
        o.L.add(tm + 1, L0 + f" loading distributed checkpoint from {CKPT} at iteration {a.load}")
    if a.k == 6:
        return 0.0
    if a.load:
        tl = tm + a.load_s - 2
        o.L.many(tl, [L0 + f"  successfully loaded checkpoint from {CKPT} [ t 1/{TP}, p 1/{PP} ] at iteration {a.load}",
                      L0 + "(min, max) time across ranks (ms):",
                      L0 + f"    {'load-checkpoint '.ljust(48, '.')}: ({(a.load_s - 3.1) * 1000:.2f}, {(a.load_s - 2.2) * 1000:.2f})"])
    tb = tm + a.load_s
    o.L.many(tb, [L0 + f"[after model, optimizer, and learning rate scheduler are built] datetime: {stamp(tb + o.skew[a.nodes[0]])} ",
                  L0 + "> building train, validation, and test datasets ..."])
    F = a.F
    o.L.many(F - 1, [L0 + f"[after dataloaders are built] datetime: {stamp(F - 1 + o.skew[a.nodes[0]])} ",
                     L0 + "done with setup ...", L0 + "training ...",
                     L0 + f"[before the start of training step] datetime: {stamp(F + o.skew[a.nodes[0]])} "])
    return F


def nccl_init(o: Out, a: Att, t: float) -> None:
    nets = " ".join(f"[{k}]mlx5_{k}:1/IB" for k in range(GPN))
    for i, h in enumerate(a.nodes):
        for d in range(GPN):
            r = i * GPN + d
            p = o.pid[h, d]
            tid = p + 1500 + d
            lab = o.label(r)
            pre = f"{lab}{h}:{p}:{p} [{d}] NCCL INFO "
            prt = f"{lab}{h}:{p}:{tid} [{d}] NCCL INFO "
            tt = t + 0.002 * r
            lines = [pre + f"Bootstrap : Using bond0:{host_ip(h)}<0>",
                     pre + "NET/Plugin: Using internal network plugin.",
                     pre + "cudaDriverVersion 12080"]
            if r == 0:
                lines.append(f"{lab}NCCL version 2.21.5+cuda12.4")
            lines += [prt + f"NET/IB : Using {nets} [RO]; OOB bond0:{host_ip(h)}<0>",
                      prt + "Using network IB",
                      prt + f"ncclCommInitRank comm 0x{(p * 4099) & 0xffffffffff:x}0 rank {r} nranks {GPUS} cudaDev {d} "
                            f"nvmlDev {d} busId {BUS[d]}000 commId 0x{(a.job * 7919) & 0xffffffffffff:x} - Init START",
                      prt + f"comm 0x{(p * 4099) & 0xffffffffff:x}0 rank {r} nRanks {GPUS} nNodes {NODES} localRanks {GPN} "
                            f"localRank {d} MNNVL 0",
                      prt + f"Channel {d:02d}/0 : {(r - GPN) % GPUS}[{d}] -> {r}[{d}] [receive] via NET/IB/{d}/GDRDMA",
                      prt + f"Channel {d:02d}/0 : {r}[{d}] -> {(r + GPN) % GPUS}[{d}] [send] via NET/IB/{d}/GDRDMA",
                      prt + "Connected all rings",
                      prt + f"comm 0x{(p * 4099) & 0xffffffffff:x}0 rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} "
                            f"busId {BUS[d]}000 commId 0x{(a.job * 7919) & 0xffffffffffff:x} - Init COMPLETE"]
            o.L.many(tt, lines)


def lr_at(n: int) -> float:
    return 3e-4 * min(1.0, n / 1000) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, n / TRAIN_ITERS))))


def iterations(o: Out, a: Att, seed: int) -> None:
    lrng = random.Random(f"{seed}-loss-{a.k}")
    last = GPUS - 1
    host = a.nodes[-1]
    spike = None
    if a.k == 7:
        spike = a.load + 1400
    for j, (n, ts, d) in enumerate(a.steps):
        if n % LOG_EVERY:
            continue
        win = [x[2] for x in a.steps[max(0, j - LOG_EVERY + 1): j + 1]]
        avg = sum(win) / len(win)
        end = ts + d
        loss = 1.9 + 7.5 * math.exp(-n / 450) + 0.5 * math.exp(-n / 7000) + lrng.gauss(0, 0.01)
        gn = 0.18 + 2.1 * math.exp(-n / 500) + abs(lrng.gauss(0, 0.015))
        if spike is not None and spike <= n < spike + 40:
            k = (n - spike) / 40
            loss += 1.6 * (1 - k)
            gn += 9.0 * (1 - k)
        thr = TOKENS_PER_STEP * FLOPS_PER_TOKEN / avg / GPUS / 1e12
        head = f" [{stamp(end + o.skew[host])}]" if a.launch == "srun" else ""
        o.rank_line(end, last, f"{head} iteration {n:8d}/{TRAIN_ITERS:8d} | consumed samples: {n * GBS:12d} | "
                                f"elapsed time per iteration (ms): {avg * 1000:.1f} | throughput per GPU (TFLOP/s/GPU): "
                                f"{thr:.1f} | learning rate: {lr_at(n):.6E} | global batch size: {GBS:5d} | lm loss: "
                                f"{loss:.6E} | loss scale: 1.0 | grad norm: {gn:.3f} | number of skipped iterations:   0 "
                                f"| number of nan iterations:   0 |")
    L0 = o.label(0)
    for n, ts, c in a.saves:
        o.L.add(ts + 0.01, L0 + f"saving checkpoint at iteration {n:7d} to {CKPT} in torch_dist format")
        o.L.many(ts + c - 0.02, [L0 + f"  successfully saved checkpoint from iteration {n:7d} to {CKPT} [ t 1/{TP}, p 1/{PP} ]",
                                 L0 + "(min, max) time across ranks (ms):",
                                 L0 + f"    {'save-checkpoint '.ljust(48, '.')}: ({c * 1000 - o.rng.uniform(2, 8):.2f}, {c * 1000:.2f})"])


# ----------------------------------------------------------------------------- endings
def watchdog(o: Out, t: float, r: int, seq: int, enq: int, first: bool) -> None:
    numel = 136314880
    ran = int(TIMEOUT_S * 1000) + o.rng.randint(3, 900)
    wd = (f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=_REDUCE_SCATTER_BASE, "
          f"NumelIn={numel}, NumelOut={numel // DP}, Timeout(ms)={int(TIMEOUT_S * 1000)}) ran for {ran} milliseconds before timing out.")
    pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
    o.c10(t, r, "ProcessGroupNCCL.cpp:632", wd)
    o.c10(t + 0.0003, r, "ProcessGroupNCCL.cpp:2271", f"{pg}  failure detected by watchdog at work sequence id: {seq} "
                                                      f"PG status: last enqueued work: {enq}, last completed work: {seq - 1}")
    if first:
        o.c10(t + 0.0004, r, "ProcessGroupNCCL.cpp:2106", f"{pg} First PG on this rank to signal dumping.")
    o.c10(t + 0.3, r, "ProcessGroupNCCL.cpp:1746",
          f"{pg} Received a dump signal due to a collective timeout from this local rank and we will try our best to "
          f"dump the debug info. Last enqueued NCCL work: {enq}, last completed NCCL work: {seq - 1}.This is most likely "
          f"caused by incorrect usages of collectives, e.g., wrong sizes used across ranks, the order of collectives is "
          f"not same for all ranks or the scheduled collective, for some reason, didn't run. Additionally, this can be "
          f"caused by GIL deadlock or other reasons such as network errors or bugs in the communications library (e.g. NCCL), etc. ")
    o.c10(t + 0.31, r, "ProcessGroupNCCL.cpp:1536", f"{pg} ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1")
    o.c10(t + 1.9, r, "ProcessGroupNCCL.cpp:684", f"[Rank {r}] Some NCCL operations have failed or timed out. Due to the "
                                                   f"asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.")
    o.c10(t + 1.9001, r, "ProcessGroupNCCL.cpp:698", f"[Rank {r}] To avoid data inconsistency, we are taking the entire process down.")
    if r % 23 == 1:
        msg = f"{pg} Process group watchdog thread terminated with exception: {wd}"
        o.c10(t + 1.91, r, "ProcessGroupNCCL.cpp:1899", msg)
        o.rank_line(t + 1.92, r, "terminate called after throwing an instance of 'c10::DistBackendError'")
        o.rank_line(t + 1.92, r, f"  what():  {msg}")


def observer(o: Out, t: float, r: int, frm: int, enq: int, done: int) -> None:
    pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
    o.c10(t, r, "ProcessGroupNCCL.cpp:1680", f"{pg} Observed flight recorder dump signal from another rank via TCPStore.")
    o.c10(t + 0.0002, r, "ProcessGroupNCCL.cpp:1746",
          f"{pg} Received a dump signal due to a collective timeout from  rank {frm} and we will try our best to dump the "
          f"debug info. Last enqueued NCCL work: {enq}, last completed NCCL work: {done}.This is most likely caused by "
          f"incorrect usages of collectives, e.g., wrong sizes used across ranks, the order of collectives is not same for "
          f"all ranks or the scheduled collective, for some reason, didn't run. Additionally, this can be caused by GIL "
          f"deadlock or other reasons such as network errors or bugs in the communications library (e.g. NCCL), etc. ")
    o.c10(t + 0.0003, r, "ProcessGroupNCCL.cpp:1536", f"{pg} ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1")


def srun_tasks(a: Att, i: int) -> str:
    return f"tasks {i * GPN}-{i * GPN + GPN - 1}" if a.launch == "srun" else f"task {i}"


def kill_step(o: Out, a: Att, t: float, first_host: str, how: str, stuck: str | None) -> None:
    i0 = a.nodes.index(first_host)
    o.plain(t, f"srun: error: {first_host}: {srun_tasks(a, i0)}: {how}")
    o.plain(t + 0.2, f"srun: Terminating StepId={a.job}.0")
    o.plain(t + 0.4, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(t + 0.4)} ***")
    if a.launch == "torchrun":
        for i, h in enumerate(a.nodes):
            if h == first_host:
                continue
            tt = t + 0.5 + 0.01 * i
            o.L.add(tt, f"{o.node_label(i)}{pylog(tt + o.skew[h], 'W')} {o.agent[h]} {TORCH}/distributed/elastic/agent/server/api.py:719] "
                        f"Received 15 death signal, shutting down workers")
    for i, h in enumerate(a.nodes):
        if h in (first_host, stuck):
            continue
        o.plain(t + 1.5 + 0.01 * i, f"srun: error: {h}: {srun_tasks(a, i)}: Terminated")
    if stuck is not None:
        o.plain(t + 2.0, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
        o.plain(a.E - 1.2, f"slurmstepd: error: *** STEP {a.job}.0 STEPD TERMINATED ON {stuck} AT {slurm_ts(a.E - 1.2)} "
                           f"DUE TO JOB NOT ENDING WITH SIGNALS ***")
        o.plain(a.E - 1.0, f"srun: error: {stuck}: {srun_tasks(a, a.nodes.index(stuck))}: Killed")
    o.plain(a.E - 0.5, f"srun: Force Terminated StepId={a.job}.0")


def end_hang(o: Out, a: Att, stuck_rank: int, observer_only: bool, unkillable: bool) -> None:
    """Every rank but stuck_rank times out TIMEOUT_S after the root; the stuck rank prints nothing or observes."""
    R = a.R
    seq = 40_000 + 37 * (a.steps[-1][0] - a.load) % 90_000
    for r in range(GPUS):
        if r == stuck_rank:
            continue
        tw = R + TIMEOUT_S + o.rng.uniform(0.05, 1.8)
        watchdog(o, tw, r, seq, seq + 2, first=True)
    tfirst = R + TIMEOUT_S + 0.05
    if observer_only:
        observer(o, tfirst + 1.1, stuck_rank, 0, seq - 1, seq - 1)
    t_abort = R + TIMEOUT_S + 2.4
    first_host = a.nodes[0] if a.nodes.index(o.host_of(stuck_rank)) != 0 else a.nodes[1]
    stuck_host = o.host_of(stuck_rank)
    if a.launch == "torchrun":
        for i, h in enumerate(a.nodes):
            if h == stuck_host:
                continue
            tf = t_abort + 0.3 + 0.05 * i
            lr = o.rng.randrange(GPN)
            o.L.add(tf, f"{o.node_label(i)}{pylog(tf + o.skew[h], 'E')} {o.agent[h]} {TORCH}/distributed/elastic/multiprocessing/api.py:874] "
                        f"failed (exitcode: -6) local_rank: {lr} (pid: {o.pid[h, lr]}) of binary: /usr/bin/python3")
        kill_step(o, a, t_abort + 1.0, first_host, "Exited with exit code 1", None)
    else:
        kill_step(o, a, t_abort, first_host, "Aborted (core dumped)", stuck_host if unkillable else None)


PY_TB_NVLINK = [
    "Traceback (most recent call last):",
    '  File "/workspace/Megatron-LM/pretrain_gpt.py", line 309, in <module>',
    "    pretrain(",
    '  File "/workspace/Megatron-LM/megatron/training/training.py", line 429, in pretrain',
    "    iteration, num_floating_point_operations_so_far = train(",
    '  File "/workspace/Megatron-LM/megatron/training/training.py", line 1611, in train',
    "    train_step(forward_step_func,",
    '  File "/workspace/Megatron-LM/megatron/core/pipeline_parallel/schedules.py", line 1876, in forward_backward_pipelining_without_interleaving',
    "    input_tensor_grad = backward_step(",
    '  File "/workspace/Megatron-LM/megatron/core/tensor_parallel/mappings.py", line 221, in backward',
    "    return _reduce_scatter_along_first_dim(grad_output)",
    "RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution",
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
]


def child_failed(o: Out, t: float, i: int, h: str, lr: int, ec: int, tb: str) -> None:
    lab = o.node_label(i)
    d = _dt(t)[0].strftime("%Y-%m-%d_%H:%M:%S")
    r = i * GPN + lr
    for ln in ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 60,
               "/workspace/Megatron-LM/pretrain_gpt.py FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>",
               "-" * 60, "Root Cause (first observed failure):", "[0]:", f"  time      : {d}", f"  host      : {h}",
               f"  rank      : {r} (local_rank: {lr})", f"  exitcode  : {ec} (pid: {o.pid[h, lr]})",
               "  error_file: <N/A>", f"  traceback : {tb}", "=" * 60]:
        o.L.add(t, lab + ln)


def end_nvlink(o: Out, a: Att) -> None:
    h = a.host
    i = a.nodes.index(h)
    r = i * GPN + a.gpu
    te = a.R + 1.3
    for ln in PY_TB_NVLINK:
        o.rank_line(te, r, f"[rank{r}]: {ln}")
    tf = a.R + 4.2
    for d in range(GPN):
        if d != a.gpu:
            o.L.add(tf - 0.4, f"{o.node_label(i)}{pylog(tf - 0.4 + o.skew[h], 'W')} {o.agent[h]} {TORCH}/distributed/elastic/multiprocessing/api.py:900] "
                              f"Sending process {o.pid[h, d]} closing signal SIGTERM")
    o.L.add(tf, f"{o.node_label(i)}{pylog(tf + o.skew[h], 'E')} {o.agent[h]} {TORCH}/distributed/elastic/multiprocessing/api.py:874] "
                f"failed (exitcode: 1) local_rank: {a.gpu} (pid: {o.pid[h, a.gpu]}) of binary: /usr/bin/python3")
    child_failed(o, tf + 0.01, i, h, a.gpu, 1, "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
    kill_step(o, a, a.R + 6.0, h, "Exited with exit code 1", None)


def end_ib(o: Out, a: Att, fleet: dict) -> None:
    h = a.host
    i = a.nodes.index(h)
    d = a.gpu
    for j, peer_i in enumerate((i - 1, i + 1)):
        ph = a.nodes[peer_i]
        r = peer_i * GPN + d
        p = o.pid[ph, d]
        tw = a.R + 2.1 + 0.7 * j
        kind = "Recv" if j == 0 else "Send"
        warn = (f"NET/IB : Got completion from peer {host_ip(h)}<{fleet['port'][ph]}> with status=12 opcode={0 if kind == 'Send' else 128} "
                f"len=0 vendor err 129 ({kind}) localGid ::ffff:{host_ip(ph)} remoteGids::ffff:{host_ip(h)}")
        lab = o.label(r)
        o.L.many(tw, ["", f"{lab}{ph}:{p}:{p + 1600 + d} [{d}] transport/net_ib.cc:1696 NCCL WARN {warn}",
                      f"{lab}{ph}:{p}:{p + 1600 + d} [{d}] NCCL INFO transport/net.cc:1302 -> 6",
                      f"{lab}{ph}:{p}:{p + 1600 + d} [{d}] NCCL INFO proxy.cc:698 -> 6",
                      f"{lab}{ph}:{p}:{p + 1600 + d} [{d}] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]"])
        msg = (f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: NCCL "
               f"error: remote process exited or there was a network error, NCCL version 2.21.5")
        o.c10(tw + 0.4, r, "ProcessGroupNCCL.cpp:1899", msg)
        o.rank_line(tw + 0.41, r, "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.")
        o.rank_line(tw + 0.41, r, "Last error:")
        o.rank_line(tw + 0.41, r, warn)
        o.rank_line(tw + 0.42, r, "terminate called after throwing an instance of 'c10::DistBackendError'")
    # the flapping host's own rank warns last, naming its left neighbour (flushed work requests)
    r = i * GPN + d
    p = o.pid[h, d]
    left = a.nodes[i - 1]
    o.L.add(a.R + 5.4, f"{o.label(r)}{h}:{p}:{p + 1600 + d} [{d}] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion "
                       f"from peer {host_ip(left)}<{fleet['port'][h]}> with status=5 opcode=0 len=0 vendor err 249 (Send) "
                       f"localGid ::ffff:{host_ip(h)} remoteGids::ffff:{host_ip(left)}")
    kill_step(o, a, a.R + 3.4, a.nodes[i - 1], "Aborted (core dumped)", None)


def end_shape(o: Out, a: Att) -> None:
    key = "decoder.layers.self_attention.linear_qkv.weight"
    tb = ["Traceback (most recent call last):",
          '  File "/workspace/Megatron-LM/pretrain_gpt.py", line 309, in <module>',
          "    pretrain(",
          '  File "/workspace/Megatron-LM/megatron/training/training.py", line 375, in pretrain',
          "    model, optimizer, opt_param_scheduler = setup_model_and_optimizer(",
          '  File "/workspace/Megatron-LM/megatron/training/checkpointing.py", line 1262, in load_checkpoint',
          "    state_dict, checkpoint_name, release, ckpt_type = _load_base_checkpoint(",
          '  File "/workspace/Megatron-LM/megatron/core/dist_checkpointing/validation.py", line 531, in _validate_global_shapes',
          "    raise CheckpointingException(_msg)",
          f"megatron.core.dist_checkpointing.core.CheckpointingException: Global shape mismatch for loaded "
          f"(torch.Size([48, 10240, 8192])) and expected ((48, 9216, 8192)) tensor for key {key}"]
    for r in range(0, GPUS, 9):
        for ln in tb:
            o.rank_line(a.R + 0.01 * r, r, f"[rank{r}]: {ln}")
    for i, h in enumerate(a.nodes):
        tf = a.R + 3.0 + 0.05 * i
        o.L.add(tf, f"{o.node_label(i)}{pylog(tf + o.skew[h], 'E')} {o.agent[h]} {TORCH}/distributed/elastic/multiprocessing/api.py:874] "
                    f"failed (exitcode: 1) local_rank: 0 (pid: {o.pid[h, 0]}) of binary: /usr/bin/python3")
        if i % 4 == 0:
            child_failed(o, tf + 0.01, i, h, 0, 1, "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
    kill_step(o, a, a.R + 5.0, a.nodes[0], "Exited with exit code 1", None)


def end_time_limit(o: Out, a: Att) -> None:
    T = a.R
    o.plain(T, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(T)} DUE TO TIME LIMIT ***")
    o.plain(T + 0.05, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(T)} DUE TO TIME LIMIT ***")
    for i, h in enumerate(a.nodes):
        tt = T + 0.3 + 0.02 * i
        o.L.add(tt, f"{o.node_label(i)}{pylog(tt + o.skew[h], 'W')} {o.agent[h]} {TORCH}/distributed/elastic/agent/server/api.py:719] "
                    f"Received 15 death signal, shutting down workers")


def decoys_att7(o: Out, a: Att) -> None:
    t = a.F + 0.45 * (a.R - a.F)
    for h, dev in (("gl1-gpu002", 4), ("gl1-gpu016", 1)):
        i = a.nodes.index(h)
        r = i * GPN + dev
        p = o.pid[h, dev]
        o.L.add(t + 0.3 * dev, f"{o.label(r)}{h}:{p}:{p + 1700} [{dev}] transport/net_ib.cc:100 NCCL WARN NET/IB : "
                               f"mlx5_{dev}:1 Got async event : client reregistration")


def train_log(a: Att, seed: int, fleet: dict) -> bytes:
    o = Out(a, seed)
    megatron_setup(o, a)
    iterations(o, a, seed)
    if a.k == 1:
        end_hang(o, a, a.nodes.index(a.host) * GPN + a.gpu, observer_only=False, unkillable=True)
    elif a.k == 2:
        end_hang(o, a, a.nodes.index(a.host) * GPN + a.gpu, observer_only=True, unkillable=True)
    elif a.k == 3:
        end_ib(o, a, fleet)
    elif a.k == 4:
        end_nvlink(o, a)
    elif a.k == 5:
        end_time_limit(o, a)
    elif a.k == 6:
        end_shape(o, a)
    elif a.k == 7:
        decoys_att7(o, a)
        end_hang(o, a, a.nodes.index(a.host) * GPN + a.gpu, observer_only=True, unkillable=False)
    else:
        o.rank_line(a.E - 3, 0, f"[after training is done] datetime: {stamp(a.E - 3 + o.skew[a.nodes[0]])} ")
    return o.L.render()


def probe(a: Att, seed: int) -> dict[str, bytes]:
    out = {}
    tok = TOKENS_PER_STEP // GPUS
    sel = [s for s in a.steps if s[0] % 10 == 0]
    for i, h in enumerate(a.nodes):
        for d in range(GPN):
            r = i * GPN + d
            rng = random.Random(f"{seed}-probe-{r}")
            slow = h == STRAGGLER_HOST and d == STRAGGLER_GPU
            recs = []
            for n, ts, dur in sel:
                comp = 4.62 * (1.061 if slow else 1.0) * (1 + rng.uniform(-0.004, 0.004))
                data = 0.021 * (1 + rng.uniform(-0.1, 0.1))
                recs.append('{"ts": "%s", "rank": %d, "host": "%s", "step": %d, "step_s": %.4f, "compute_s": %.4f, '
                            '"comm_s": %.4f, "data_s": %.4f, "tokens": %d}'
                            % (iso_z(ts + dur), r, h, n, dur, comp, dur - comp - data, data, tok))
            out[f"rank-{r:05d}.jsonl"] = ("\n".join(recs) + "\n").encode()
    return out


# ----------------------------------------------------------------------------- kernel logs
def kern_lines_hung(task: str, pid: int, ppid: int, secs: int, frames: list[str]) -> list[str]:
    return [f"INFO: task {task}:{pid} blocked for more than {secs} seconds.",
            "      Tainted: P           OE      6.8.0-1017-nvidia #19-Ubuntu",
            '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
            f"task:{task:<15} state:D stack:0     pid:{pid}  tgid:{pid} ppid:{ppid} flags:0x00004002",
            "Call Trace:", " <TASK>", " __schedule+0x27c/0x6b0", " schedule+0x33/0x110"] + frames + \
           [" do_syscall_64+0x81/0x170", " entry_SYSCALL_64_after_hwframe+0x78/0x80", " </TASK>"]


FUSE_FRAMES = [" request_wait_answer+0xcf/0x250 [fuse]", " __fuse_simple_request+0xd8/0x2c0 [fuse]",
               " fuse_readahead+0x2a2/0x3f0 [fuse]", " read_pages+0x7a/0x290", " page_cache_ra_unbounded+0x15e/0x1c0",
               " filemap_get_pages+0x10a/0x3b0", " filemap_read+0xe5/0x350", " vfs_read+0x1ba/0x340", " ksys_pread64+0x7d/0xb0"]
NV_FRAMES = [" _nv042226rm+0x1e/0x40 [nvidia]", " rm_ioctl+0x63/0xb0 [nvidia]", " nvidia_ioctl+0x2c4/0x840 [nvidia]",
             " nvidia_unlocked_ioctl+0x5b/0x90 [nvidia]", " __x64_sys_ioctl+0xa3/0xf0"]
NOISE = ["perf: interrupt took too long ({a} > {b}), lowering kernel.perf_event_max_sample_rate to {c}",
         "workqueue: drm_fb_helper_damage_work hogged CPU for >10000us 4 times, consider switching to WQ_UNBOUND",
         "kauditd_printk_skb: {k} callbacks suppressed",
         "docker0: port 1(veth{v}) entered blocking state", "docker0: port 1(veth{v}) entered forwarding state",
         "IPv6: ADDRCONF(NETDEV_CHANGE): veth{v}: link becomes ready"]


def kernel_logs(atts: list[Att], seed: int, bundle: Path, fleet: dict) -> None:
    a1, a2, a3, a4 = atts[:4]
    t_end = atts[-1].E + 1800
    skews = host_skews(seed)
    for n, h in enumerate(HOSTS):
        rng = random.Random(f"{seed}-kern-{h}")
        skew = skews[h]
        boot = T0 - rng.randint(3 * 86400, 9 * 86400)
        ev: list[tuple[float, str]] = [(boot + 1.0, "Linux version 6.8.0-1017-nvidia (buildd@lcy02-amd64-077) #19-Ubuntu SMP PREEMPT_DYNAMIC"),
                                       (boot + 22.0, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.148.08  Tue May 13 16:05:34 UTC 2025")]
        for k in range(GPN):
            ev.append((boot + 35 + 0.01 * k, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link up"))
        t = T0 + rng.uniform(300, 6000)
        while t < t_end:
            v = "%07x" % rng.getrandbits(28)
            a = rng.randint(2600, 6000)
            ev.append((t, rng.choice(NOISE).format(a=a, b=a - 9, c=rng.choice([79750, 63750, 50750]), k=rng.randint(3, 60), v=v)))
            t += rng.uniform(2400, 16000)
        if h == a1.host:
            pci = f"0000:{BUS[a1.gpu]}:00"
            pid = fleet["xid_pid"]
            for j in range(4):
                ev.append((a1.R + 6.0 * j, f"NVRM: Xid (PCI:{pci}): 119, pid={pid}, name=pt_main_thread, Timeout after 6s of waiting "
                                           f"for RPC response from GPU{a1.gpu} GSP! Expected function 76 (GSP_RM_CONTROL) (0x20802a02 0x8)."))
            ev.append((a1.R + 18.1, f"NVRM: GPU{a1.gpu} GSP RPC buffer contains function 76 (GSP_RM_CONTROL) and data 0x0000000020802a02 0x0000000000000008."))
            ev.append((a1.R + 24.2, f"NVRM: Rate limiting GSP RPC error prints for GPU at PCI:{pci} (printing 1 of every 30).  The GPU likely needs to be reset."))
            ev.append((a1.R + 30.0, f"NVRM: Xid (PCI:{pci}): 154, pid={pid}, name=pt_main_thread, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"))
            for j, secs in enumerate((122, 245)):
                ev += [(a1.R + 125 + 123 * j, ln) for ln in kern_lines_hung("pt_main_thread", pid, pid - 9, secs, NV_FRAMES)]
        if h == a2.host:
            pid = fleet["fuse_pid"]
            for j, secs in enumerate((122, 245, 368)):
                ev += [(a2.R + 124 + 123 * j, ln) for ln in kern_lines_hung("pt_data_worker", pid, pid - 37, secs, FUSE_FRAMES)]
        if h == a3.host:
            k = a3.gpu
            for dn, up in ((0.0, 7.3), (21.8, 30.1), (52.6, 61.0)):
                ev.append((a3.R + dn, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link down"))
                ev.append((a3.R + up, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link up"))
        if h == a4.host:
            pci = f"0000:{BUS[a4.gpu]}:00"
            ev.append((a4.R, f"NVRM: Xid (PCI:{pci}): 74, pid={fleet['nvl_pid']}, name=pt_main_thread, NVLink: fatal error "
                             f"detected on link 11(0x0, 0x0, 0x0, 0x0, 0x10000, 0x0, 0x0)"))
            ev.append((a4.R + 0.4, f"NVRM: Xid (PCI:{pci}): 154, pid={fleet['nvl_pid']}, name=pt_main_thread, GPU recovery action "
                                   f"changed from 0x0 (None) to 0x1 (GPU Reset Required)"))
        if h == "gl1-gpu004":                 # decoy: a corrected AER 90 s after att 1's Xid, clock 150 s slow
            tc = a1.R + 90.0
            ev += [(tc, "pcieport 0000:60:01.0: AER: Corrected error message received from 0000:61:00.0"),
                   (tc, "nvidia 0000:61:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)"),
                   (tc, "nvidia 0000:61:00.0:   device [10de:2330] error status/mask=00000001/0000e000"),
                   (tc, "nvidia 0000:61:00.0:    [ 0] RxErr                  (First)")]
        ev.sort(key=lambda x: x[0])
        lines = []
        for j, (t, msg) in enumerate(ev):
            ht = t + skew + 0.000011 * j
            d, us = _dt(ht)
            if n % 2 == 0:                    # gl1-gpu001, 003, ...: rsyslog kern.log (Ubuntu 24.04)
                lines.append(f"{d:%Y-%m-%dT%H:%M:%S}.{us:06d}+00:00 {h} kernel: {msg}")
            else:
                lines.append(f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}] {msg}")
        name = "kern.log" if n % 2 == 0 else "dmesg-T.txt"
        write(bundle / "nodes" / h / name, ("\n".join(lines) + "\n").encode())


# ----------------------------------------------------------------------------- scheduler
def scheduler(atts: list[Att], bundle: Path, seed: int) -> None:
    rng = random.Random(f"{seed}-sched")
    L = Sink()

    def ctl(t: float, msg: str) -> None:
        d, us = _dt(t)
        L.add(t, f"[{d:%Y-%m-%dT%H:%M:%S}.{us // 1000:03d}] {msg}")

    rows = ["JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"]
    for a in atts:
        sub = a.S - rng.randint(3, 40)
        hl = hostlist(a.nodes)
        cpus = 192 * len(a.nodes)
        ctl(sub, f"_slurm_rpc_submit_batch_job: JobId={a.job} InitPrio=10{rng.randint(1000, 9999)} usec={rng.randint(200, 900)}")
        ctl(a.S + 0.02, f"sched: Allocate JobId={a.job} NodeList={hl} #CPUs={cpus} Partition=train")
        if a.k == 5:
            ctl(a.R + 0.001, f"Time limit exhausted for JobId={a.job}")
        if a.k in (1, 2):
            ctl(a.E - 1.3, f"error: slurmd error running JobId={a.job} on node(s)={a.host}: Kill task failed")
            ctl(a.E - 1.2, f"drain_nodes: node {a.host} state set to DRAIN")
        state, ec = {1: ("FAILED", "134:0"), 2: ("FAILED", "134:0"), 3: ("FAILED", "134:0"), 4: ("FAILED", "1:0"),
                     5: ("TIMEOUT", "0:0"), 6: ("FAILED", "1:0"), 7: ("FAILED", "1:0"), 8: ("COMPLETED", "0:0")}[a.k]
        ctl(a.E + 0.1, f"_job_complete: JobId={a.job} " + ("WEXITSTATUS 0" if a.k == 8 else
                                                           "WTERMSIG 15" if a.k == 5 else f"WEXITSTATUS {ec.split(':')[0]}"))
        ctl(a.E + 0.11, f"_job_complete: JobId={a.job} done")
        if a.k in DRAIN_AFTER and a.k not in (1, 2):
            why = {3: "ibp192s0 link flaps, reseat cable", 4: "xid74 nvlink gpu5, RMA", 5: "slow gpu3 (probe)",
                   7: "suspect: rank 19 hang"}[a.k]
            ctl(a.E + 420.5, f"update_node: node {DRAIN_AFTER[a.k]} reason set to: {why}")
            ctl(a.E + 420.6, f"update_node: node {DRAIN_AFTER[a.k]} state set to DRAINED")
        for h in RESUME_BEFORE.get(a.k, []):
            ctl(a.S - 600.0, f"update_node: node {h} state set to IDLE")
        rows.append(f"{a.job}|mcore-34b|train|lm-pre|{cpus}|{state}|{ec}|{slurm_ts(sub)}|{slurm_ts(a.S)}|{slurm_ts(a.E)}|"
                    f"{elapsed(a.E - a.S)}|{len(a.nodes)}|{hl}")
        rows.append(f"{a.job}.batch|batch||lm-pre|192|{state if a.k != 5 else 'CANCELLED'}|{ec if a.k != 5 else '0:15'}|"
                    f"{slurm_ts(a.S)}|{slurm_ts(a.S)}|{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|1|{a.nodes[0]}")
        rows.append(f"{a.job}.0|{'python' if a.launch == 'srun' else 'torchrun'}||lm-pre|{cpus}|"
                    f"{'COMPLETED' if a.k == 8 else 'CANCELLED'}|{'0:0' if a.k == 8 else '0:15'}|{slurm_ts(a.S + 1)}|"
                    f"{slurm_ts(a.S + 1)}|{slurm_ts(a.E)}|{elapsed(a.E - a.S - 1)}|{len(a.nodes)}|{hl}")
    write(bundle / "scheduler" / "slurmctld.log", L.render())
    write(bundle / "scheduler" / "sacct.txt", ("\n".join(rows) + "\n").encode())


def inventory() -> str:
    return f"""[providers.{PROVIDER}]
usd_per_gpu_hour = 2.29

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = 8
interconnect = "InfiniBand NDR 8x400G"
nodes = "gl1-gpu[001-020]"
"""


def run_toml() -> str:
    return f"""# {RUN}: 34B GPT, Megatron-Core TP={TP} PP={PP} DP={DP}
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.3e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --nodes=16 --ntasks-per-node=8 --time=10:00:00 pretrain_34b.sbatch"
"""


def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts = build(seed)
    frng = random.Random(f"{seed}-fleet")
    fleet = {"port": {h: frng.randint(40000, 60999) for h in HOSTS}}
    write(bundle / "inventory.toml", inventory().encode())
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", run_toml().encode())
    for a in atts:
        o = Out(a, seed)
        if a.k == 1:
            fleet["xid_pid"] = o.pid[a.host, a.gpu]
        if a.k == 2:
            fleet["fuse_pid"] = o.pid[a.host, a.gpu] + 211
        if a.k == 4:
            fleet["nvl_pid"] = o.pid[a.host, a.gpu]
        write(rdir / "logs" / f"slurm-{a.job}.out", train_log(a, seed, fleet))
        if a.k == 5:
            for name, body in probe(a, seed).items():
                write(rdir / "probe" / str(a.job) / (name + (".gz" if int(name[5:10]) % 2 else "")), body,
                      gz=bool(int(name[5:10]) % 2))
    kernel_logs(atts, seed, bundle, fleet)
    scheduler(atts, bundle, seed)
    cats, total, per = ledger(atts)
    incidents = []
    for j, a in enumerate(atts[:-1]):
        incidents.append({"id": j + 1, "attempt": a.k, "attempts": [a.k], "slurm_job": a.job, "failure_mode": a.mode,
                          "blame": "user" if a.mode in ("time_limit", "user_code_error") else
                          ("unknown" if a.mode == "nccl_timeout" else "provider"),
                          "host": a.host, "cluster": CLUSTER, "provider": PROVIDER, "gpu_index": a.gpu,
                          "rank": (a.nodes.index(a.host) * GPN + a.gpu) if a.host else None,
                          "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E), "last_ckpt_step": a.kept,
                          "gpu_hours": per[j], "gpu_hours_lost": round(sum(per[j].values()), 4)})
    a5 = atts[4]
    g = GPUS / 3600.0
    exc = sum(d - BASE for n, _, d in a5.steps if n <= a5.kept) * g
    incidents.append({"id": len(incidents) + 1, "attempt": 5, "attempts": [5], "kind": "straggler", "failure_mode": None,
                      "host": STRAGGLER_HOST, "gpu_index": STRAGGLER_GPU, "excess_gpu_hours": round(exc, 4)})
    decoys = {"gl1-gpu013": "ring neighbour of gl1-gpu014 in att 3: its NET/IB errors name gl1-gpu014's address",
              "gl1-gpu015": "ring neighbour of gl1-gpu014 in att 3: its NET/IB errors name gl1-gpu014's address",
              "gl1-gpu004": "PCIe AER Corrected error 90 s after att 1's Xid 119; its clock is 150 s slow",
              "gl1-gpu002": "NCCL WARN 'Got async event : client reregistration' mid att 7; the job stepped past it",
              "gl1-gpu016": "NCCL WARN 'Got async event : client reregistration' mid att 7; the job stepped past it"}
    forbidden = [{"failure_mode": "loss_divergence", "attempts": [7],
                  "reason": "att 7's loss spike heals by itself within ~40 iterations"}]
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP, "flops_per_token": FLOPS_PER_TOKEN,
        "baseline_step_s": BASE, "peak_flops_per_gpu": PEAK_H100,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE * GPUS * PEAK_H100), 4),
        "first_start_ts": iso_z(atts[0].S), "last_end_ts": iso_z(atts[-1].E), "match_on_attempt": True,
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "nodes": hostlist(a.nodes), "start_ts": iso_z(a.S),
                      "first_step_ts": iso_z(a.F) if a.F else None, "exit_ts": iso_z(a.E), "loaded_step": a.load,
                      "last_step": a.steps[-1][0] if a.steps else a.load, "saves": [n for n, _, _ in a.saves],
                      "launch": a.launch} for a in atts],
        "incidents": incidents, "forbidden_incidents": forbidden,
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys, "hardware_modes": HW_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i.get("gpu_hours_lost", 0.0) for i in incidents) + exc, 4)},
        "notes": "Times are UTC (the controller's). Ledger: see megatron_hangs.py docstring.",
    }
    write(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
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
    print(f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB); "
          f"total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
