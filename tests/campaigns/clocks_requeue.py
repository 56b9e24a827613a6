#!/usr/bin/env python3
"""Independent campaign "clocks_requeue": where evidence lies in time, on a requeued Slurm job.

Written without reading clusterlab's analysis code. Standard library only, deterministic per --seed.
Usage: clocks_requeue.py --out DIR [--seed N]   (writes DIR/bundle/... and DIR/truth.json)

Story (run "cr-megatron-34b", 80 GPUs = 10 nodes x 8 H100-SXM of cluster lx-1 / provider lumenhost,
12 nodes in the inventory, lx-011/lx-012 spares). ONE Slurm batch job (JobId 884213) submitted with
`sbatch --requeue --open-mode=append`: every attempt keeps the job id and APPENDS to the same
runs/<run>/slurm-884213.out; nobody split the log by hand. The batch script requeues itself
(`scontrol requeue $SLURM_JOB_ID`) when srun fails; Slurm requeues on its own after a node failure;
the last attempt runs into the 6 h time limit (TIMEOUT, no requeue). The order of the five failing
attempts is permuted per seed, then:
  xid79     a GPU falls off the bus on host X whose clock runs AHEAD (NTP lost) by 1.5-3.5 min: its
            Xid 79 is stamped after the peers' NCCL errors that it caused. The first error printed in
            the .out after the last iteration line is an unstamped NCCL WARN of a peer (its borrowed
            stamp, the last iteration line, lies before the Xid)                  [gpu_fell_off_bus, X]
  lustre    at a periodic save the Lustre OSTs stop answering: every node's kernel reports the lost
            connection, then the eviction; torch_dist save raises OSError EIO     [filesystem_io, null]
  hang      one rank on host H stops inside a collective; every OTHER rank times out in the NCCL
            watchdog 600 s later; torchrun on H cannot stop the stuck worker with SIGTERM. No per-rank
            timings: only the missing rank in the watchdog lines and the launcher say who [nccl_timeout, H]
  nodefail  host N dies (its kernel log just stops); slurmctld: not responding, DOWN after
            SlurmdTimeout, kill + requeue; the trainer prints nothing                [node_failure, N]
  usererr   a KeyError in the user's data collator on rank 0: an unstamped traceback between two
            stamped lines                                                       [user_code_error, null]
  timelimit the last attempt reaches the 6 h limit                                  [time_limit, null]
Clocks: the truth is on ONE true clock, UTC (truth.json). The site runs its cluster in local time
Europe/Berlin (CET, UTC+01:00 in December; stated in inventory.toml `timezone` and a run.toml comment): slurmctld
"[YYYY-MM-DDTHH:MM:SS.mmm]" (no zone) and sacct Start/End in local time on the controller's clock (true);
`dmesg -T` (local, no zone) and `journalctl -k -o short-iso` ("+01:00") on each node's own clock;
Megatron stamps (print_datetime, iteration lines) and c10/torchrun glog stamps ("E1206 10:23:45.123...",
no year, no zone) on the printing host's clock; NCCL lines (no NCCL_DEBUG_TIMESTAMP), tracebacks and
Megatron print_rank_0 lines are unstamped. Node clocks are off by +-3 s, three of them by minutes.
Decoys: an Xid 31 from a previous user's job ~5 h before attempt 1 on host D (in the job); two peers
P1/P2 whose NCCL WARN "Got completion ... status=12" lines are the first error lines of the Xid attempt;
host T with a transient NCCL socket connect timeout that is retried at init of one attempt.

Ledger (truth.json expected_ledger, GPU-hours = 80 x seconds / 3600), campaign2.py's conventions:
  startup = attempt start (sacct Start) -> first training step start ("[before the start of training
  step] datetime"); productive = steps <= the attempt's last completed save (whole step durations);
  checkpoint = durations of completed saves; recompute = end of the last completed save of the attempt
  (or its first step start) -> root event; hang = root event -> attempt exit (sacct End); restart =
  exit -> next start. Root events: the Xid (true time), the start of the save that never completed,
  the end of the last completed step (hang), the exception (user error), the
  time-limit cancel; the root of a node that dies silently is the end of the job's last completed step
  (campaign2.py's convention for a silent stop). Megatron logs every step (--log-interval 1, as BLOOM did):
  with a record every 10 steps a silent stop is only known within 55 s, 1.2 GPU-h on 80 GPUs, more than the
  scorer's 0.5 GPU-h bar on one category.

Formats (looked up with the search tools; text here written anew):
  * slurmctld: "_slurm_rpc_submit_batch_job: JobId=N InitPrio=P usec=U", "sched: Allocate JobId=N
    NodeList=... #CPUs=C Partition=P", "requeue job JobId=N due to failure of node X", "Requeuing
    JobId=N" (aws/aws-parallelcluster #5670), "_slurm_rpc_requeue: Processing RPC: REQUEST_JOB_REQUEUE
    from uid=U" (slurmctld proc_req.c), "Nodes X not responding" / "error: Nodes X not responding,
    setting DOWN" (ping_nodes.c), "Killing JobId=N on failed node X", "Time limit exhausted for
    JobId=N", "_job_complete: JobId=N WTERMSIG 15"/"done", "update_node: node X state set to DRAINED".
  * slurmstepd "*** JOB N ON X CANCELLED AT T DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
    "... DUE TO TIME LIMIT ***"; srun "srun: error: Node failure on X", "srun: error: X: task i:
    Exited with exit code 1"; sacct -D -P State REQUEUED / NODE_FAIL / TIMEOUT (Slurm test 'sacct -D
    shows correct job steps and states when a job is requeued').
  * Megatron-LM training_log / print_datetime / checkpointing lines and torchrun / c10d
    ProcessGroupNCCL watchdog lines, ChildFailedError block: as documented in campaign1.py's sources
    (NVIDIA/Megatron-LM #1880, bigscience .out files, hiyouga/LlamaFactory #7396).
  * NCCL 2.21 "host:pid:tid [d] NCCL INFO ncclCommInitRank comm 0x.. rank r nranks n cudaDev d nvmlDev
    d busId b commId 0x.. - Init COMPLETE"; "transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion
    from peer IP<port> with status=12 ..."; socket retry "misc/socket.cc:602 NCCL WARN socketPollConnect
    poll() failed, ret 1, error Connection timed out, revents 8, connect to IP:port" + "NCCL INFO
    socketPollConnect: connect returned Connection timed out, retrying (1/34) after sleep for 100 msec"
    (NVIDIA/nccl PR #1618).
  * Lustre client: "Lustre: FS-OST0003-osc-ffff...: Connection to FS-OST0003 (at IP@o2ib) was lost; in
    progress operations using this service will wait for recovery to complete", "LustreError: 11-0:
    ...: operation ost_write to node IP@o2ib failed: rc = -107", "LustreError: 167-0: ...: This client
    was evicted by FS-OST0003; in progress operations using this service will fail.", "Lustre: ...:
    Connection restored to ... (at IP@o2ib)" (jade-hpc-gpu #14, whamcloud IML #107).
  * NVRM Xid 79 / Xid 31 MMU fault lines; dmesg -T "[Sun Dec  6 10:23:45 2026] ..."; journalctl
    short-iso "2026-12-06T10:23:45+01:00 host kernel: ...".
"""

from __future__ import annotations

import argparse
import json
import math
import random
from datetime import UTC, datetime
from pathlib import Path

UTC = UTC
RUN = "cr-megatron-34b"
CLUSTER, PROVIDER = "lx-1", "lumenhost"
JOB = 884213
UID = 20417
GPN, NODES = 8, 10
GPUS = GPN * NODES
TP, PP = 8, 2
DP = GPUS // (TP * PP)
GBS, SEQ = 400, 4096
TOKENS_PER_STEP = GBS * SEQ
FLOPS_PER_TOKEN = 2.16e11  # 6 * 34e9 + attention
PEAK = 989.4e12
BASE_STEP = 5.480
JIT = 0.004
SAVE_INTERVAL = 250
LOG_INTERVAL = 1  # --log-interval 1, as BLOOM's Megatron-DeepSpeed runs logged
TRAIN_ITERS = 60000
TIME_LIMIT = 6 * 3600
WATCHDOG = 600.0
LOCAL_OFF = 3600  # Europe/Berlin in December (CET)
T0 = datetime(2026, 12, 5, 21, 10, 0, tzinfo=UTC).timestamp()
CKPT = "/lustre/lxfs/ckpt/megatron-34b"
FS = "lxfs"
OSS_IP = "10.77.0.21"
HOSTS = [f"lx-{i:03d}" for i in range(1, 13)]
BUSIDS = ["18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000"]
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
MODE = {
    "xid79": "gpu_fell_off_bus",
    "lustre": "filesystem_io",
    "hang": "nccl_timeout",
    "nodefail": "node_failure",
    "usererr": "user_code_error",
    "timelimit": "time_limit",
}


def ip(h: str) -> str:
    return f"10.77.8.{10 + int(h[3:])}"


def _d(t: float) -> tuple[datetime, int]:
    us = int(round(t * 1e6))
    s, u = divmod(us, 1_000_000)
    return datetime.fromtimestamp(s, UTC), u


def iso_z(t: float) -> str:
    d, u = _d(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{u // 1000:03d}Z"


# every rendered stamp below is local wall time (true time + host skew + CET offset)
def loc(t: float) -> tuple[datetime, int]:
    return _d(t + LOCAL_OFF)


def meg_ts(t: float) -> str:
    return loc(t)[0].strftime("%Y-%m-%d %H:%M:%S")


def glog(t: float, lvl: str, ns: bool = True) -> str:
    d, u = loc(t)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{u:06d}" + (f"{u % 997:03d}" if ns else "")


def ctld(t: float) -> str:
    d, u = loc(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{u // 1000:03d}]"


def slurm_ts(t: float) -> str:
    return loc(t)[0].strftime("%Y-%m-%dT%H:%M:%S")


def date_cmd(t: float) -> str:
    d, _ = loc(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} CET {d.year}"


def dmesg_T(t: float) -> str:
    d, _ = loc(t)
    return f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}]"


def short_iso(t: float) -> str:
    return loc(t)[0].strftime("%Y-%m-%dT%H:%M:%S") + "+01:00"


def elapsed(sec: float) -> str:
    sec = int(round(sec))
    h, r = divmod(sec, 3600)
    m, s = divmod(r, 60)
    return f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hs: list[str]) -> str:
    nums = sorted(int(h[3:]) for h in hs)
    parts, a, b = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == b + 1:
            b = n
            continue
        parts.append(f"{a:03d}" if a == b else f"{a:03d}-{b:03d}")
        if n is not None:
            a = b = n
    return f"lx-[{','.join(parts)}]"


class Sink:
    def __init__(self) -> None:
        self.items: list[tuple[float, int, str]] = []

    def add(self, t: float, line: str) -> None:
        self.items.append((t, len(self.items), line))

    def ext(self, t: float, lines) -> None:
        for x in lines:
            self.add(t, x)

    def text(self) -> str:
        self.items.sort(key=lambda x: (x[0], x[1]))
        return "\n".join(x[2] for x in self.items) + "\n"


# ----------------------------------------------------------------------------- timeline
class Att:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps: list[tuple[int, float, float]] = []
        self.saves: list[tuple[int, float, float]] = []
        self.R = self.E = 0.0
        self.failed_save = None
        self.death = 0.0


def simulate(a: Att, rng: random.Random) -> None:
    t, n = a.F, a.load
    stop = a.F + a.run_for
    while True:
        dur = BASE_STEP * (1 + rng.uniform(-JIT, JIT))
        if a.kind == "timelimit" and t + dur > a.S + TIME_LIMIT:
            a.R = a.S + TIME_LIMIT
            a.E = a.R + 2.0
            return
        if a.kind in ("xid79", "nodefail") and t + dur > stop:
            a.death = t + rng.uniform(0.8, dur - 0.8)  # inside the step in flight
            # a GPU's fall is stamped (the Xid): the root; a node that dies says nothing: its root is the end of
            # the job's last completed step, campaign2.py's convention for a silent stop
            a.R = a.death if a.kind == "xid79" else t
            a.E = a.death + (66.0 if a.kind == "xid79" else 301.5)
            return
        if a.kind == "hang" and t + dur > stop and n % SAVE_INTERVAL != 0:
            a.R = t  # end of the last completed step
            a.E = a.R + WATCHDOG + 41.0
            return
        if a.kind == "usererr" and t + dur > stop and n % SAVE_INTERVAL != 0:
            a.R = t + 0.35  # the collate of the next batch raises
            a.E = a.R + 24.0
            return
        a.steps.append((n + 1, t, dur))
        t += dur
        n += 1
        if n % SAVE_INTERVAL == 0:
            if a.kind == "lustre" and t > stop:
                a.failed_save = (n, t)
                a.R = t
                a.E = a.R + 236.0
                return
            c = round(rng.uniform(38.0, 66.0), 2)
            a.saves.append((n, t, c))
            t += c


def timeline(seed: int) -> tuple[list[Att], dict]:
    rng = random.Random(f"{seed}-cr-timeline")
    kinds = ["xid79", "lustre", "hang", "nodefail", "usererr"]
    rng.shuffle(kinds)
    kinds.append("timelimit")
    pool = HOSTS[1:10]  # lx-001 is rank 0's host, never a suspect
    rng.shuffle(pool)
    roles = {"X": pool[0], "N": pool[1], "H": pool[2], "D": pool[3], "T": pool[4], "P1": pool[5], "P2": pool[6]}
    nodes = HOSTS[:10]
    spares = ["lx-011", "lx-012"]
    out, t, load = [], T0, 0
    for k, kind in enumerate(kinds, start=1):
        a = Att(
            k=k,
            kind=kind,
            nodes=list(nodes),
            load=load,
            S=float(t),
            startup=rng.uniform(150, 240) + (40 if load else 0),
            run_for=rng.uniform(1.3, 3.6) * 3600,
        )
        a.F = a.S + a.startup
        simulate(a, random.Random(f"{seed}-cr-steps-{k}"))
        a.last_ckpt = a.saves[-1][0] if a.saves else a.load
        a.host = {"xid79": roles["X"], "hang": roles["H"], "nodefail": roles["N"]}.get(kind)
        out.append(a)
        load = a.last_ckpt
        if kind in ("xid79", "nodefail"):  # the bad node is drained; a spare comes in
            nodes = sorted([h for h in nodes if h != a.host] + [spares.pop(0)])
        t = math.ceil(a.E + rng.uniform(150, 420))
    return out, roles


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
        cats["productive"] += sum(d for n, _, d in a.steps if n <= a.last_ckpt)
        cats["checkpoint"] += sum(c for _, _, c in a.saves)
        base = a.saves[-1][1] + a.saves[-1][2] if a.saves else a.F
        cats["recompute"] += a.R - base
        cats["hang"] += a.E - a.R
        rs = atts[i + 1].S - a.E if i + 1 < len(atts) else 0.0
        cats["restart"] += rs
        per.append((a.R - base) + (a.E - a.R) + rs + (atts[i + 1].F - atts[i + 1].S if i + 1 < len(atts) else 0))
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return {k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4), [round(p * g, 4) for p in per]


# ----------------------------------------------------------------------------- fleet
def skews(seed: int, roles: dict) -> dict[str, float]:
    rng = random.Random(f"{seed}-cr-skew")
    sk = {h: round(rng.uniform(-2.8, 2.8), 3) for h in HOSTS}
    sk["lx-001"] = round(rng.uniform(-1.5, 1.5), 3)
    sk[roles["X"]] = round(rng.uniform(95.0, 205.0), 3)  # NTP lost, clock ahead
    others = [h for h in HOSTS[1:] if h != roles["X"]]
    rng.shuffle(others)
    sk[others[0]] = round(-rng.uniform(40.0, 150.0), 3)  # NTP lost, behind
    sk[others[1]] = round(rng.uniform(30.0, 90.0), 3)  # NTP lost, ahead
    return sk


# ----------------------------------------------------------------------------- the .out file
def loss_at(n: int, r: random.Random) -> float:
    return 1.9 + 8.6 * math.exp(-n / 400.0) + 0.5 * math.exp(-n / 12000.0) + r.gauss(0, 0.01)


def lr_at(n: int) -> float:
    return 3e-4 * min(1.0, n / 2000) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(n, TRAIN_ITERS) / TRAIN_ITERS)))


def c10_watchdog(t: float, r: int, seq: int, ran_ms: int) -> list[str]:
    wd = (
        f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, "
        f"NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for {ran_ms} milliseconds before timing out."
    )
    return [
        f"[rank{r}]:[{glog(t, 'E')} ProcessGroupNCCL.cpp:616] {wd}",
        f"[rank{r}]:[{glog(t + 0.002, 'E')} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
        f"Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: "
        f"{seq}, last completed NCCL work: {seq - 1}.",
        f"[rank{r}]:[{glog(t + 0.003, 'E')} ProcessGroupNCCL.cpp:630] [Rank {r}] Some NCCL operations have failed "
        f"or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
        f"corrupted/incomplete data.",
        f"[rank{r}]:[{glog(t + 0.004, 'E')} ProcessGroupNCCL.cpp:636] [Rank {r}] To avoid data inconsistency, we "
        f"are taking the entire process down.",
    ]


TORCHRUN_TB = [
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 33, in <module>',
    "    sys.exit(load_entry_point('torch==2.5.1', 'console_scripts', 'torchrun')())",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 269, in launch_agent',
    "    raise ChildFailedError(",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "=" * 60,
    "pretrain_gpt.py FAILED",
    "-" * 60,
    "Failures:",
    "  <NO_OTHER_FAILURES>",
    "-" * 60,
    "Root Cause (first observed failure):",
]


def child_failed(t: float, host: str, r: int, lr: int, ec: int, pid: int, tb: str) -> list[str]:
    stamp = loc(t)[0].strftime("%Y-%m-%d_%H:%M:%S")
    return TORCHRUN_TB + [
        "[0]:",
        f"  time      : {stamp}",
        f"  host      : {host}",
        f"  rank      : {r} (local_rank: {lr})",
        f"  exitcode  : {ec} (pid: {pid})",
        "  error_file: <N/A>",
        f"  traceback : {tb}",
        "=" * 60,
    ]


def out_file(atts: list[Att], sk: dict, roles: dict, seed: int) -> str:
    L = Sink()
    rng = random.Random(f"{seed}-cr-out")

    def H(h: str, t: float) -> float:  # the time a host's clock shows
        return t + sk[h]

    for a in atts:
        r0 = a.nodes[0]
        pid = {h: 1_200_000 + 37 * a.k + 3000 * i for i, h in enumerate(a.nodes)}
        S, F = a.S, a.F
        L.add(S + 0.5, f"START TIME: {date_cmd(H(r0, S + 0.5))}")
        L.add(S + 0.6, f"SLURM_JOB_ID={JOB} SLURM_RESTART_COUNT={a.k - 1} SLURM_JOB_NODELIST={hostlist(a.nodes)}")
        for i, h in enumerate(a.nodes):
            p = f"{glog(H(h, S + 4 + 0.03 * i), 'W', ns=False)} {pid[h]} torch/distributed/run.py:793] "
            L.ext(
                S + 4 + 0.03 * i,
                [
                    p,
                    p + "*" * 41,
                    p + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in "
                    "default, to avoid your system being overloaded, please further tune the "
                    "variable for optimal performance in your application as needed. ",
                    p + "*" * 41,
                ],
            )
        t = S + 14
        L.add(
            t,
            f"using world size: {GPUS}, data-parallel size: {DP}, context-parallel size: 1, "
            f"tensor-model-parallel size: {TP}, pipeline-model-parallel size: {PP} ",
        )
        L.ext(
            t,
            [
                "------------------------ arguments ------------------------",
                f"  global_batch_size ............................... {GBS}",
                f"  load ............................................ {CKPT}",
                f"  save ............................................ {CKPT}",
                f"  save_interval ................................... {SAVE_INTERVAL}",
                f"  seq_length ...................................... {SEQ}",
                f"  train_iters ..................................... {TRAIN_ITERS}",
                "-------------------- end of arguments ---------------------",
                "> initializing torch distributed ...",
            ],
        )
        comm = f"0x{random.Random(f'{seed}-{a.k}-comm').getrandbits(64):016x}"
        for i, h in enumerate(a.nodes):
            for d in range(GPN):
                r = i * GPN + d
                L.add(
                    S + 40 + 0.002 * r,
                    f"{h}:{pid[h] + 1 + d}:{pid[h] + 120 + d} [{d}] NCCL INFO ncclCommInitRank "
                    f"comm 0x{0x55D0A0000000 + r * 0x1000:x} "
                    f"rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} commId {comm} - Init COMPLETE",
                )
        if roles["T"] in a.nodes and a.k == 2:
            h, d = roles["T"], 5
            peer = a.nodes[(a.nodes.index(h) + 1) % len(a.nodes)]
            L.ext(
                S + 39.5,
                [
                    "",
                    f"{h}:{pid[h] + 1 + d}:{pid[h] + 140 + d} [{d}] misc/socket.cc:602 NCCL WARN socketPollConnect "
                    f"poll() failed, ret 1, error Connection timed out, revents 8, connect to {ip(peer)}:41377",
                    f"{h}:{pid[h] + 1 + d}:{pid[h] + 140 + d} [{d}] NCCL INFO socketPollConnect: connect returned "
                    f"Connection timed out, retrying (1/34) after sleep for 100 msec",
                ],
            )
        t_init = S + 55
        L.add(t_init, f"[after megatron is initialized] datetime: {meg_ts(H(r0, t_init))} ")
        L.add(t_init + 1, "building GPT model ...")
        t_model = F - 30
        if a.load == 0:
            L.ext(
                t_init + 20,
                [
                    f"WARNING: could not find the metadata file {CKPT}/latest_checkpointed_iteration.txt",
                    "    will not load any checkpoints and will start from random",
                ],
            )
        else:
            L.add(t_init + 22, f" loading checkpoint from {CKPT} at iteration {a.load}")
            L.add(
                t_model - 2,
                f"  successfully loaded checkpoint from {CKPT} [ t 1/{TP}, p 1/{PP} ] at iteration {a.load}",
            )
        L.add(
            t_model,
            f"[after model, optimizer, and learning rate scheduler are built] datetime: {meg_ts(H(r0, t_model))} ",
        )
        L.add(F - 4, f"[after dataloaders are built] datetime: {meg_ts(H(r0, F - 4))} ")
        L.ext(F - 3.9, ["done with setup ...", "training ..."])
        L.add(F, f"[before the start of training step] datetime: {meg_ts(H(r0, F))} ")
        lr = random.Random(f"{seed}-loss-{a.k}")
        for j, (n, ts, dur) in enumerate(a.steps):
            if n % LOG_INTERVAL:
                continue
            w = [d for _, _, d in a.steps[max(0, j - LOG_INTERVAL + 1) : j + 1]]
            avg = sum(w) / len(w)
            end = ts + dur
            thr = TOKENS_PER_STEP * FLOPS_PER_TOKEN / avg / GPUS / 1e12
            L.add(
                end,
                f" [{meg_ts(H(r0, end))}] iteration {n:8d}/{TRAIN_ITERS:8d} | consumed samples: {n * GBS:12d} | "
                f"elapsed time per iteration (ms): {avg * 1000:.1f} | throughput per GPU (TFLOP/s/GPU): {thr:.1f} | "
                f"learning rate: {lr_at(n):.6E} | global batch size: {GBS:5d} | lm loss: {loss_at(n, lr):.6E} | "
                f"loss scale: 1.0 | grad norm: {0.25 + abs(lr.gauss(0, 0.03)):.3f} | "
                "number of skipped iterations:   0 | "
                f"number of nan iterations:   0 |",
            )
        for n, ts, c in a.saves:
            L.add(ts + 0.01, f"saving checkpoint at iteration {n:7d} to {CKPT} in torch_dist format")
            L.add(
                ts + c - 0.01, f"  successfully saved checkpoint from iteration {n:7d} to {CKPT} [ t 1/{TP}, p 1/{PP} ]"
            )
            L.ext(
                ts + c - 0.005,
                [
                    "(min, max) time across ranks (ms):",
                    f"    {'save-checkpoint '.ljust(48, '.')}: ({c * 1000 - 7.5:.2f}, {c * 1000:.2f})",
                ],
            )
        ending(a, L, H, pid, roles, rng)
    return L.text()


def srun_fail_and_requeue(a: Att, L: Sink, t_exit: float, failed: list[tuple[str, int]]) -> None:
    for h, i in failed:
        L.add(t_exit - 1.2, f"srun: error: {h}: task {i}: Exited with exit code 1")
    L.add(t_exit - 0.8, f"srun exited with status 1 - requeueing job {JOB} (restart count {a.k - 1})")


def ending(a: Att, L: Sink, H, pid: dict, roles: dict, rng: random.Random) -> None:
    R, E = a.R, a.E
    last_seq = 40_000 + a.k * 1000 + len(a.steps) * 6
    if a.kind == "xid79":
        x = a.host
        xi = a.nodes.index(x)
        gd = 3
        # the peers' NCCL errors come 15-40 s after the Xid (on their own, roughly right clocks)
        for hn, dt in ((roles["P1"], 14.0), (roles["P2"], 16.5)):
            if hn not in a.nodes:
                continue
            d = gd
            L.ext(
                R + dt,
                [
                    "",
                    f"{hn}:{pid[hn] + 1 + d}:{pid[hn] + 160 + d} [{d}] transport/net_ib.cc:1696 NCCL WARN "
                    f"NET/IB : Got completion from peer {ip(x)}<59112> with status=12 opcode=0 len=0 vendor "
                    f"err 129 (Recv) localGid ::ffff:{ip(hn)} remoteGids::ffff:{ip(x)}",
                    f"{hn}:{pid[hn] + 1 + d}:{pid[hn] + 160 + d} [{d}] NCCL INFO transport/net.cc:1302 -> 6",
                    f"{hn}:{pid[hn] + 1 + d}:{pid[hn] + 160 + d} [{d}] NCCL INFO proxy.cc:698 -> 6",
                    f"{hn}:{pid[hn] + 1 + d}:{pid[hn] + 160 + d} [{d}] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]",
                ],
            )
        t = R + 22.0
        for i, h in enumerate(a.nodes):
            if h == x:
                continue
            r = i * GPN + gd
            tt = t + 0.4 * i
            L.ext(
                tt,
                [
                    f"[rank{r}]:[{glog(H(h, tt), 'E')} ProcessGroupNCCL.cpp:1785] "
                    f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] "
                    f"Exception (either an error or timeout) detected by watchdog at work: {last_seq}, "
                    "last enqueued NCCL "
                    f"work: {last_seq}, last completed NCCL work: {last_seq - 1}.",
                    f"[rank{r}]:[{glog(H(h, tt + 0.01), 'E')} ProcessGroupNCCL.cpp:1834] "
                    f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] "
                    "Process group watchdog thread terminated with exception: NCCL error: "
                    "remote process exited or there "
                    f"was a network error, NCCL version 2.21.5",
                    "ncclRemoteError: A call failed possibly due to a network error or a remote "
                    "process exiting prematurely.",
                    "Last error:",
                    f"NET/IB : Got completion from peer {ip(x)}<59112> with status=12 opcode=0 len=0 "
                    "vendor err 129 (Recv)",
                ],
            )
        # the rank on the dead GPU
        rx = xi * GPN + gd
        tx = R + 31.0
        L.ext(
            tx,
            [
                f"[rank{rx}]: Traceback (most recent call last):",
                f'[rank{rx}]:   File "/workspace/Megatron-LM/pretrain_gpt.py", line 281, in <module>',
                f"[rank{rx}]:     pretrain(",
                f"[rank{rx}]: RuntimeError: CUDA error: unspecified launch failure",
                f"[rank{rx}]: CUDA kernel errors might be asynchronously reported at some other API call, so the "
                f"stacktrace below might be incorrect.",
            ],
        )
        for i, h in enumerate(a.nodes):
            tt = R + 48 + 0.3 * i
            ec = 1 if h == x else -6
            r = i * GPN + gd
            L.ext(
                tt,
                [
                    f"{glog(H(h, tt), 'E', ns=False)} {pid[h]} torch/distributed/elastic/multiprocessing/api.py:869] "
                    f"failed (exitcode: {ec}) local_rank: {gd} (pid: {pid[h] + 1 + gd}) of binary: /usr/bin/python3"
                ],
            )
            if h in (x, a.nodes[0]):
                L.ext(
                    tt + 0.1,
                    child_failed(
                        H(h, tt),
                        h,
                        r,
                        gd,
                        ec,
                        pid[h] + 1 + gd,
                        "<N/A>" if ec == 1 else f"Signal 6 (SIGABRT) received by PID {pid[h] + 1 + gd}",
                    ),
                )
        srun_fail_and_requeue(a, L, E, [(h, i) for i, h in enumerate(a.nodes)][:3] + [(x, xi)])
    elif a.kind == "lustre":
        n, ts = a.failed_save
        L.add(ts + 0.01, f"saving checkpoint at iteration {n:7d} to {CKPT} in torch_dist format")
        te = R + 215.0
        tb = [
            "[rank0]: Traceback (most recent call last):",
            '[rank0]:   File "/workspace/Megatron-LM/megatron/training/checkpointing.py", line 442, in save_checkpoint',
            "[rank0]:     state_dict = dist_checkpointing.save(state_dict, checkpoint_name, save_strategy,",
            '[rank0]:   File "/usr/local/lib/python3.10/dist-packages/torch/distributed/checkpoint/'
            'filesystem.py", line 378, in _write_files_from_queue',
            "[rank0]:     os.fsync(stream.fileno())",
            f"[rank0]: OSError: [Errno 5] Input/output error: '{CKPT}/iter_{n:07d}/__0_0.distcp'",
        ]
        L.ext(te, tb)
        for i, h in enumerate(a.nodes):
            tt = te + 6 + 0.2 * i
            L.add(
                tt,
                f"{glog(H(h, tt), 'E', ns=False)} {pid[h]} torch/distributed/elastic/multiprocessing/api.py:869] "
                f"failed (exitcode: 1) local_rank: 0 (pid: {pid[h] + 1}) of binary: /usr/bin/python3",
            )
        L.ext(te + 7, child_failed(H(a.nodes[0], te + 7), a.nodes[0], 0, 0, 1, pid[a.nodes[0]] + 1, "<N/A>"))
        srun_fail_and_requeue(a, L, E, [(h, i) for i, h in enumerate(a.nodes)])
    elif a.kind == "hang":
        h_hang = a.host
        hi = a.nodes.index(h_hang)
        stuck = hi * GPN + rng.randint(0, 7)
        tw = R + WATCHDOG + 1.5
        for i, h in enumerate(a.nodes):
            for d in range(GPN):
                r = i * GPN + d
                if r == stuck:
                    continue
                tt = tw + 0.003 * r
                L.ext(tt, c10_watchdog(H(h, tt), r, last_seq, 600000 + 1500 + r))
        for i, h in enumerate(a.nodes):
            tt = tw + 5 + 0.2 * i
            if h == h_hang:
                L.ext(
                    tt,
                    [
                        f"{glog(H(h, tt), 'W', ns=False)} {pid[h]} "
                        "torch/distributed/elastic/multiprocessing/api.py:897] "
                        f"Sending process {pid[h] + 1 + d} closing signal SIGTERM"
                        for d in range(GPN)
                        if hi * GPN + d != stuck
                    ],
                )
                L.add(
                    tt + 30,
                    f"{glog(H(h, tt + 30), 'W', ns=False)} {pid[h]} torch/distributed/elastic/multiprocessing/"
                    f"api.py:915] Unable to shutdown process {pid[h] + 1 + stuck % GPN} via Signals.SIGTERM, "
                    f"forcefully exiting via Signals.SIGKILL",
                )
            else:
                L.add(
                    tt,
                    f"{glog(H(h, tt), 'E', ns=False)} {pid[h]} torch/distributed/elastic/multiprocessing/api.py:869] "
                    f"failed (exitcode: -6) local_rank: 0 (pid: {pid[h] + 1}) of binary: /usr/bin/python3",
                )
        srun_fail_and_requeue(a, L, E, [(h, i) for i, h in enumerate(a.nodes)])
    elif a.kind == "nodefail":
        r0 = a.nodes[0]
        L.add(E - 1.0, f"srun: error: Node failure on {a.host}")
        L.add(
            E - 0.5,
            f"slurmstepd: error: *** JOB {JOB} ON {r0} CANCELLED AT {slurm_ts(H(r0, E - 0.5))} DUE TO NODE "
            f"FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
        )
    elif a.kind == "usererr":
        tb = [
            "[rank0]: Traceback (most recent call last):",
            '[rank0]:   File "/workspace/Megatron-LM/pretrain_gpt.py", line 281, in <module>',
            "[rank0]:     pretrain(",
            '[rank0]:   File "/workspace/Megatron-LM/megatron/training/training.py", line 1254, in train_step',
            "[rank0]:     batch = next(data_iterator)",
            '[rank0]:   File "/workspace/mlteam/data/collate.py", line 88, in __call__',
            '[rank0]:     ids = sample["input_ids"]',
            "[rank0]: KeyError: 'input_ids'",
        ]
        L.ext(R, tb)
        h = a.nodes[0]
        L.add(
            R + 3,
            f"{glog(H(h, R + 3), 'E', ns=False)} {pid[h]} torch/distributed/elastic/multiprocessing/api.py:869] "
            f"failed (exitcode: 1) local_rank: 0 (pid: {pid[h] + 1}) of binary: /usr/bin/python3",
        )
        L.ext(R + 3.1, child_failed(H(h, R + 3), h, 0, 0, 1, pid[h] + 1, "<N/A>"))
        for i, hh in enumerate(a.nodes[1:], start=1):
            L.add(
                R + 8 + 0.1 * i,
                f"{glog(H(hh, R + 8 + 0.1 * i), 'W', ns=False)} {pid[hh]} torch/distributed/elastic/agent/"
                f"server/api.py:719] Received 15 death signal, shutting down workers",
            )
        srun_fail_and_requeue(a, L, E, [(h, 0)])
    elif a.kind == "timelimit":
        r0 = a.nodes[0]
        L.add(
            R + 0.2, f"slurmstepd: error: *** JOB {JOB} ON {r0} CANCELLED AT {slurm_ts(H(r0, R))} DUE TO TIME LIMIT ***"
        )
        L.add(
            R + 0.3,
            f"slurmstepd: error: *** STEP {JOB}.0 ON {r0} CANCELLED AT {slurm_ts(H(r0, R))} DUE TO TIME LIMIT ***",
        )
        for i, h in enumerate(a.nodes):
            L.add(
                R + 0.5 + 0.05 * i,
                f"{glog(H(h, R + 0.5), 'W', ns=False)} {pid[h]} torch/distributed/elastic/agent/"
                f"server/api.py:719] Received 15 death signal, shutting down workers",
            )


# ----------------------------------------------------------------------------- kernel logs
def xid79_lines(pid: int) -> list[str]:
    bus = BUSIDS[3]
    return [
        f"NVRM: Xid (PCI:0000:{bus[:2]}:00): 79, pid={pid}, name=pt_main_thread, GPU has fallen off the bus.",
        f"NVRM: GPU 0000:{bus[:2]}:00.0: GPU has fallen off the bus.",
        f"NVRM: GPU at PCI:0000:{bus[:2]}:00: GPU-6f1c2a9e-3b7d-4c1e-9a55-0d8e2f4b7c31",
        "NVRM: GPU Board Serial Number: 1654923018842",
    ]


def kernel_logs(atts: list[Att], sk: dict, roles: dict, seed: int, bundle: Path) -> None:
    rng = random.Random(f"{seed}-cr-kern")
    end_all = atts[-1].E + 1800
    for hi, h in enumerate(HOSTS):
        ev: list[tuple[float, str]] = []
        boot = T0 - rng.randint(2 * 86400, 6 * 86400)
        ev.append(
            (boot + 21.0, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  560.35.03  Fri Aug 16 21:39:15 UTC 2024")
        )
        for k in range(GPN):
            ev.append((boot + 34.0 + 0.01 * k, f"mlx5_core 0000:{BUSIDS[k][:2]}:00.1 ibp{k}s0: Link up"))
        t = boot + rng.uniform(3600, 7200)
        while t < end_all:
            ev.append(
                (
                    t,
                    f'audit: type=1400 audit({t + sk[h]:.3f}:{rng.randint(100, 999)}): apparmor="DENIED" '
                    'operation="open" class="file" profile="snap.lxd.daemon" '
                    f'name="/proc/{rng.randint(900, 9000)}/mounts"',
                )
            )
            t += rng.uniform(5000, 16000)
        if h == roles["D"]:
            t_old = atts[0].S - rng.uniform(4.5, 5.5) * 3600
            ev.append(
                (
                    t_old,
                    f"NVRM: Xid (PCI:0000:{BUSIDS[1][:2]}:00): 31, pid=2087731, name=python3, Ch 00000010, "
                    f"intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_3 faulted @ 0x7f3a_9c000000. "
                    f"Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
                )
            )
        dead_at = None
        for a in atts:
            if h not in a.nodes:
                continue
            if a.kind == "xid79" and h == a.host:
                ev.extend(
                    (a.R + 0.001 * i, x)
                    for i, x in enumerate(xid79_lines(1_200_000 + 37 * a.k + 3000 * a.nodes.index(h) + 4))
                )
            if a.kind == "lustre":
                t1 = a.R + rng.uniform(1.5, 6.0)
                osc = f"{FS}-OST0003-osc-ffff9a{rng.randint(0x1000, 0xFFFF):04x}c8d000"
                ev.append(
                    (
                        t1,
                        f"Lustre: {osc}: Connection to {FS}-OST0003 (at {OSS_IP}@o2ib) was lost; in progress "
                        f"operations using this service will wait for recovery to complete",
                    )
                )
                ev.append(
                    (t1 + 0.2, f"LustreError: 11-0: {osc}: operation ost_write to node {OSS_IP}@o2ib failed: rc = -107")
                )
                ev.append(
                    (
                        a.R + 200 + rng.uniform(0, 8),
                        f"LustreError: 167-0: {osc}: This client was evicted by "
                        f"{FS}-OST0003; in progress operations using this service will fail.",
                    )
                )
                ev.append(
                    (
                        a.E + 600 + rng.uniform(0, 60),
                        f"Lustre: {osc}: Connection restored to {FS}-OST0003 (at {OSS_IP}@o2ib)",
                    )
                )
            if a.kind == "nodefail" and h == a.host:
                dead_at = a.death
        if dead_at is not None:
            ev = [e for e in ev if e[0] < dead_at]
        ev.sort()
        style = "dmesg" if hi % 2 else "journal"
        if style == "dmesg":
            txt = "\n".join(f"{dmesg_T(t + sk[h])} {m}" for t, m in ev) + "\n"
            (bundle / "nodes" / h).mkdir(parents=True, exist_ok=True)
            (bundle / "nodes" / h / "dmesg-T.txt").write_text(txt)
        else:
            txt = "\n".join(f"{short_iso(t + sk[h])} {h} kernel: {m}" for t, m in ev) + "\n"
            (bundle / "nodes" / h).mkdir(parents=True, exist_ok=True)
            (bundle / "nodes" / h / "journal-kernel.txt").write_text(txt)


# ----------------------------------------------------------------------------- scheduler
def scheduler(atts: list[Att], seed: int, bundle: Path) -> None:
    rng = random.Random(f"{seed}-cr-sched")
    L = Sink()

    def add(t: float, m: str) -> None:
        L.add(t, f"{ctld(t)} {m}")

    add(
        T0 - 42.3,
        f"_slurm_rpc_submit_batch_job: JobId={JOB} InitPrio=10{rng.randint(1000, 9999)} usec={rng.randint(300, 900)}",
    )
    rows = ["JobID|JobName|Partition|AllocCPUS|State|ExitCode|Start|End|Elapsed|NNodes|NodeList"]
    for a in atts:
        hl = hostlist(a.nodes)
        add(a.S + 0.02, f"sched: Allocate JobId={JOB} NodeList={hl} #CPUs={192 * NODES} Partition=train")
        if a.kind == "nodefail":
            add(a.death + rng.uniform(70, 130), f"Nodes {a.host} not responding")
            add(a.E - 1.5, f"error: Nodes {a.host} not responding, setting DOWN")
            add(a.E - 1.4, f"Killing JobId={JOB} on failed node {a.host}")
            add(a.E - 1.3, f"requeue job JobId={JOB} due to failure of node {a.host}")
            add(a.E - 1.3, f"Requeuing JobId={JOB}")
            state, ec = "NODE_FAIL", "0:0"
        elif a.kind == "timelimit":
            add(a.R + 0.01, f"Time limit exhausted for JobId={JOB}")
            add(a.E, f"_job_complete: JobId={JOB} WTERMSIG 15")
            add(a.E + 0.01, f"_job_complete: JobId={JOB} done")
            state, ec = "TIMEOUT", "0:0"
        else:
            add(a.E - 0.2, f"_slurm_rpc_requeue: Processing RPC: REQUEST_JOB_REQUEUE from uid={UID}")
            add(a.E - 0.19, f"Requeuing JobId={JOB}")
            state, ec = "REQUEUED", "0:15"
        if a.kind in ("xid79", "nodefail"):
            add(
                a.E + rng.uniform(60, 140),
                f"update_node: node {a.host} reason set to: "
                f"{'xid79 gpu3' if a.kind == 'xid79' else 'node unresponsive, rma'}",
            )
            add(a.E + 141, f"update_node: node {a.host} state set to DRAINED")
        rows.append(
            f"{JOB}|megatron-34b|train|{192 * NODES}|{state}|{ec}|{slurm_ts(a.S)}|{slurm_ts(a.E)}|"
            f"{elapsed(a.E - a.S)}|{NODES}|{hl}"
        )
        rows.append(
            f"{JOB}.batch|batch||192|{'CANCELLED' if state != 'NODE_FAIL' else 'NODE_FAIL'}|0:15|{slurm_ts(a.S)}|"
            f"{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|1|{a.nodes[0]}"
        )
        st0 = {"timelimit": "CANCELLED", "nodefail": "NODE_FAIL"}.get(a.kind, "FAILED")
        rows.append(
            f"{JOB}.0|torchrun||{192 * NODES}|{st0}|{'1:0' if st0 == 'FAILED' else '0:9'}|{slurm_ts(a.S + 2)}|"
            f"{slurm_ts(a.E)}|{elapsed(a.E - a.S - 2)}|{NODES}|{hl}"
        )
    (bundle / "scheduler").mkdir(parents=True, exist_ok=True)
    (bundle / "scheduler" / "slurmctld.log").write_text(L.text())
    (bundle / "scheduler" / f"sacct-D-{JOB}.psv").write_text("\n".join(rows) + "\n")


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    atts, roles = timeline(seed)
    sk = skews(seed, roles)
    bundle = out / "bundle"
    (bundle / "runs" / RUN).mkdir(parents=True, exist_ok=True)
    (bundle / "inventory.toml").write_text(
        f"""# lumenhost lx-1: the site keeps its clocks (slurmctld, sacct, node logs) in local time
[providers.{PROVIDER}]
usd_per_gpu_hour = 2.41

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = {GPN}
interconnect = "InfiniBand NDR 8x400G"
nodes = "{hostlist(HOSTS)}"
timezone = "Europe/Berlin"
"""
    )
    (bundle / "runs" / RUN / "run.toml").write_text(
        f"""# {RUN}: GPT 34B, Megatron-LM TP{TP} PP{PP} DP{DP}; one sbatch job {JOB}, --requeue --open-mode=append
# all log times are the cluster's local time (Europe/Berlin, CET = UTC+01:00)
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.3e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --requeue --open-mode=append --nodes={NODES} --time=06:00:00 megatron_34b.sbatch"
"""
    )
    (bundle / "runs" / RUN / f"slurm-{JOB}.out").write_text(out_file(atts, sk, roles, seed))
    kernel_logs(atts, sk, roles, seed, bundle)
    scheduler(atts, seed, bundle)
    cats, total, per = ledger(atts)
    incidents = [
        {
            "failure_mode": MODE[a.kind],
            "host": a.host,
            "attempt": a.k,
            "attempts": [a.k],
            "root_ts": iso_z(a.R),
            "gpu_hours_lost": per[i],
        }
        for i, a in enumerate(atts)
    ]
    decoys = {
        roles["D"]: "Xid 31 from a previous user's job ~5 h before attempt 1",
        roles["T"]: "transient NCCL socket connect timeout at init, retried",
        roles["P1"]: "NCCL IB completion error: symptom of the peer's GPU falling off the bus",
        roles["P2"]: "NCCL IB completion error: symptom of the peer's GPU falling off the bus",
    }
    truth = {
        "run": RUN,
        "gpus": GPUS,
        "seed": seed,
        "match_on_attempt": True,
        "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN,
        "baseline_step_s": BASE_STEP,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "timezone": "Europe/Berlin (UTC+01:00)",
        "clock_skew_s": sk,
        "roles": roles,
        "attempts": [
            {
                "attempt": a.k,
                "kind": a.kind,
                "nodes": hostlist(a.nodes),
                "start_ts": iso_z(a.S),
                "first_step_ts": iso_z(a.F),
                "root_ts": iso_z(a.R),
                "exit_ts": iso_z(a.E),
                "loaded_step": a.load,
                "last_step": a.steps[-1][0] if a.steps else a.load,
                "last_ckpt": a.last_ckpt,
            }
            for a in atts
        ],
        "incidents": incidents,
        "forbidden_incidents": [
            {
                "failure_mode": "network",
                "reason": "the IB completion errors are symptoms of the GPU that fell off the bus",
            }
        ],
        "decoy_hosts": sorted(decoys),
        "decoy_reasons": decoys,
        "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats,
        "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(per), 4)},
        "notes": "Times are true UTC (the controller's clock); logs print Europe/Berlin local time on "
        "skewed node clocks.",
    }
    (out / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    return truth


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    t = generate(out, a.seed)
    print(f"wrote {out}/bundle and truth.json: {len(t['incidents'])} incidents, {t['total_gpu_hours']:.1f} GPU-h")


if __name__ == "__main__":
    main()
