#!/usr/bin/env python3
"""Independent campaign "elastic_hangs": hangs and distributed-runtime failures under torchrun's elastic agent.

Written before reading clusterlab's analysis code (and without reading the other campaigns in
tests/campaigns/), in the shape of ../shared/evidence/scenarios/campaign2.py: standard library only,
`--out DIR --seed N`, deterministic per seed, writes DIR/bundle/... and DIR/truth.json.

Story (run "elastic-34b", 96 GPUs = 12 nodes x 8 H100-SXM of cluster "wr-1" / provider "wrenhpc";
14 nodes c3-n[01-14] in the inventory). A team trains a 34B model with torchtitan (FSDP2 x TP 8)
launched as `srun torchrun --nnodes=12 --rdzv-backend=c10d --rdzv-endpoint=<head>:29500
--max-restarts=2`, so torchrun restarts the worker group in place: every worker-group start is an
attempt (attempts 1-3 are Slurm job 88401, 4-6 job 88433, 7-8 job 88470). NCCL_DEBUG=INFO goes to
stdout, so the one srun output file per job interleaves every node's torchrun agent, every rank's
c10d errors ([rankN]: prefix), NCCL INFO/WARN lines (host:pid:tid prefix) and rank 0's torchtitan
log. Kernel logs per node (journalctl -k -o short-iso); slurmctld log and sacct dump. Truth times are the
controller's clock; every node's clock is off by 0.3-4.4 s (skews()), and each line is stamped by its own node's.
  attempt 1 (job 88401, head c3-n01)  healthy ~2.5 h; the IB port mlx5_6 of c3-n05 flaps (mlx5 "Link
      down" ... "Link up" in its journal); NCCL WARN IB completion error status=12 on c3-n05, its
      rank's watchdog "NCCL error: unhandled system error"; peers on c3-n04 then see "remote process
      exited or there was a network error"; torchrun: "Worker group FAILED. 2/2 attempts left; will
      restart worker group" and restarts in place                           [network, c3-n05]
  attempt 2 (in place)  resumes from the last checkpoint; ~2 h in, GPU 5 of c3-n08 (rank 61) hangs
      in a kernel: NVRM Xid 109 (CTX SWITCH TIMEOUT) in c3-n08's journal; its ProcessGroupNCCL
      watchdog gets stuck, "Heartbeat monitor timed out!" after 480 s, the process aborts
      (exitcode -6); torchrun restarts in place (c3-n08: 2/2 attempts left)     [gpu_hw_other, c3-n08]
  attempt 3 (in place)  resumes; ~1.7 h in, c3-n01 (the rendezvous/c10d store host, rank 0's node)
      dies without a word (its journal just stops); the other nodes' ranks print TCPStore "recvValue
      failed ... remote=[c3-n01]:29500 ... Connection reset by peer", IB completion errors towards
      it, watchdogs abort; the agents fail to re-rendezvous (RendezvousConnectionError), srun
      reports "Node failure on c3-n01"; slurmctld later marks c3-n01 DOWN; sacct NODE_FAIL
                                                                            [node_failure, c3-n01]
  attempt 4 (job 88433 on c3-n[02-13], head c3-n02, launched with `srun --label`: every task's line
      behind its right-aligned task id, ` 4: [rank34]:[E1019 ...`)  resumes; ~1.5 h in, the OOM killer kills a
      data loader worker (pt_data_worker) on c3-n06; rank 34 raises "DataLoader worker (pid(s) P)
      exited unexpectedly"; torchrun on c3-n06: 2/2 attempts left; the others "Detected 1 new
      nodes from group_rank=4; will restart worker group"                    [host_oom, c3-n06]
  attempt 5 (in place)  resumes; ~1.5 h in, rank 45 (c3-n07 GPU 5) deadlocks in Python (CPU side,
      no error at all); 600 s later every other rank's watchdog times out on the same all-gather
      (last enqueued N, last completed N-1), ranks on c3-n10 print first; the flight recorder
      lines of rank 45 alone say "Last enqueued NCCL work: N-1, last completed NCCL work: N-1":
      it never entered the collective                                       [nccl_timeout, c3-n07]
  attempt 6 (in place)  resumes; runs into the job's 12 h time limit          [time_limit, host null]
  attempt 7 (job 88470)  resumes; ~1.2 h in, GPU 2 of c3-n11 (rank 74) hangs on NVRM Xid 119 (GSP RPC
      timeout); every rank, rank 74 included, times out on the same all-gather 600 s later (ranks on
      c3-n12 print first): only c3-n11's journal names the GPU; torchrun restarts in place
                                                                            [gpu_hw_other, c3-n11]
  attempt 8 (in place)  resumes and completes ("Training completed").
  Decoys: "[W socket.cpp] The server socket has failed to listen on [::]:29500 (errno: 98 - Address
  already in use)" on the head at each job start (torchrun retries and goes on); the OMP_NUM_THREADS
  banner; a TORCH_NCCL_ASYNC_ERROR_HANDLING deprecation warning; c3-n14 (never in a job) has its own
  mlx5 link flap and an Xid 13; c3-n04 (peers of the flapping link: symptom only); c3-n10 (its ranks
  print the watchdog timeouts of attempt 5 first); c3-n03 (its ranks print the TCPStore errors of
  attempt 3 first); c3-n12 (its ranks print the watchdog timeouts of attempt 7 first).

Ledger (expected_ledger, GPU-hours = 96 x seconds / 3600), campaign1/campaign2 conventions, an
in-place restart being an attempt whose start is torchrun's "[default] Starting worker group":
  startup    = attempt start (sacct Start for a job's first attempt, "Starting worker group" for an
               in-place restart) -> first training step start
  productive = kept steps (step <= last durable checkpoint of an ended attempt; all steps of the
               completed attempt), whole step durations
  checkpoint = durations of the saves that completed, plus the tail after the final save
  recompute  = end of the last durable save of the attempt (or its first step start) -> root event
  hang       = root event -> attempt exit. Root events: the link down, the Xid, the node's death
               (its last journal line), the OOM kill, the end of the last completed step (the
               deadlock), the time-limit kill. Exit: the agent's "Worker group FAILED" /
               "Detected ... will restart" (in-place restarts), sacct End (a job's last attempt).
  restart    = attempt exit -> next attempt start
  straggler = slowdown = data_stall = idle = 0

Formats (looked up with the search tools; text written anew, facts only):
  * c10d ProcessGroupNCCL (pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp; pasted
    in pytorch/pytorch#122850, OpenRLHF/OpenRLHF#1126, hiyouga/LlamaFactory#8261,
    meta-pytorch/torchtune#2651): "[rankN]:[E1019 hh:mm:ss.nnnnnnnnn ProcessGroupNCCL.cpp:L] [Rank N]
    Watchdog caught collective operation timeout: WorkNCCL(SeqNum=.., OpType=.., NumelIn=..,
    NumelOut=.., Timeout(ms)=..) ran for .. milliseconds before timing out.", "[PG ID 0 PG GUID
    0(default_pg) Rank N]  failure detected by watchdog at work sequence id: S PG status: last
    enqueued work: S, last completed work: S-1", "Stack trace of the failed collective not found,
    ...", "Received a dump signal due to a collective timeout from  rank R and we will try our best
    to dump the debug info. Last enqueued NCCL work: .., last completed NCCL work: ..",
    "ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1", the heartbeat monitor's
    "Heartbeat monitor timed out! Process will be terminated after dumping debug info.
    workMetaList_.size()=N" and "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making
    progress in monitoring enqueued collectives." (pytorch/pytorch#116268), "Process group watchdog
    thread terminated with exception: NCCL error: unhandled system error ..., NCCL version ..".
  * TCPStore (issues tdrussell/diffusion-pipe#333, NVIDIA/Fuser#3124, xorbitsai/inference#4421):
    "[rankN]:[W1019 .. TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=.., addr=[..]:..,
    remote=[..]:29500): Connection reset by peer", "Exception raised from recvBytes at
    /pytorch/torch/csrc/distributed/c10d/Utils.hpp:670 (most recent call first):", "Failed to check
    the "should dump" flag on TCPStore, (maybe TCPStore server has shut down too early), with error:".
  * torch.distributed.elastic (2.4+ glog style "I1019 hh:mm:ss.uuuuuu PID path.py:L] msg"):
    "[default] Starting worker group", "[default] Rendezvous complete for workers. Result:" block,
    "failed (exitcode: 1) local_rank: 3 (pid: P) of binary: /usr/bin/python3", "[default] Worker
    group FAILED. 2/2 attempts left; will restart worker group", "[default] Detected 1 new nodes from
    group_rank=4; will restart worker group", run.py's OMP_NUM_THREADS banner (as in campaign2.py),
    RendezvousConnectionError "The connection to the C10d store has failed. See inner exception for
    details."; socket.cpp "The server socket has failed to listen on [::]:29500 (errno: 98 - Address
    already in use)."
  * DataLoader (torch/utils/data/dataloader.py, many pasted tracebacks e.g.
    suprosanna/relationformer#18): "RuntimeError: DataLoader worker (pid(s) P) exited unexpectedly";
    kernel OOM killer "oom-kill:constraint=CONSTRAINT_NONE,..." + "Out of memory: Killed process P
    (pt_data_worker) total-vm:..kB, anon-rss:..kB, file-rss:..kB, shmem-rss:..kB, UID:.. pgtables:..kB
    oom_score_adj:0".
  * NVRM Xid 109 "NVRM: Xid (PCI:0000:ab:00): 109, pid=P, name=python3, Ch 0000000a, errorString CTX
    SWITCH TIMEOUT, Info 0x..", Xid 13 (as campaign1/2); mlx5_core "<pci> <ifname>: Link down/up";
    NCCL "transport/net_ib.cc NCCL WARN NET/IB : Got completion from peer <ip><port> with status=12
    opcode=.. len=0 vendor err 129 (Send)".
  * torchtitan lines, journalctl short-iso, slurmstepd / slurmctld / sacct as in campaign2.py;
    srun "srun: error: Node failure on HOST", slurmctld "error: Nodes HOST not responding, setting
    DOWN", "Killing JobId=N on failed node HOST"; sacct NODE_FAIL / TIMEOUT.
"""
from __future__ import annotations

import argparse
import json
import math
import random
from datetime import UTC, datetime
from pathlib import Path

RUN = "elastic-34b"
CLUSTER, PROVIDER = "wr-1", "wrenhpc"
GPN, NODES_USED = 8, 12
GPUS = GPN * NODES_USED
TP, DP = 8, 12
LBS, SEQ = 8, 4096
TOKENS_PER_STEP = DP * LBS * SEQ                 # 393216
TOKENS_PER_GPU = TOKENS_PER_STEP // GPUS
FLOPS_PER_TOKEN = 2.124e11                       # 6 * 34.4e9 + attention
PEAK = 989.4e12
BASE_STEP = 2.95
JIT = 0.004
SAVE_INTERVAL = 500
LOG_FREQ = 10
TRAIN_STEPS = 23000
TIMEOUT_S = 600
HEARTBEAT_S = 480
T0 = datetime(2026, 10, 19, 5, 30, 0, tzinfo=UTC).timestamp()
CKPT = "/lustre/ckpt/elastic-34b/checkpoint"
NCCL_V = "2.21.5"
HOSTS = [f"c3-n{i:02d}" for i in range(1, 15)]
JOB1_NODES = HOSTS[:12]
JOB2_NODES = HOSTS[1:13]
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]
NIC_IF = ["ibp26s0", "ibp60s0", "ibp77s0", "ibp94s0", "ibp156s0", "ibp188s0", "ibp204s0", "ibp220s0"]
NIC_PCI = ["0000:1a:00.0", "0000:3c:00.0", "0000:4d:00.0", "0000:5e:00.0",
           "0000:9c:00.0", "0000:bc:00.0", "0000:cc:00.0", "0000:dc:00.0"]
BUSIDS = ["18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000"]


def ip(h: str) -> str:
    return f"10.70.0.{10 + int(h[-2:])}"


def skews(seed: int) -> dict[str, float]:
    """Each node's clock against the controller's (chrony keeps them within a few seconds); rank 0's hosts close."""
    rng = random.Random(f"{seed}-elastic-skew")
    sk = {h: round(rng.uniform(0.6, 4.4) * rng.choice([-1, 1]), 3) for h in HOSTS}
    sk["c3-n01"], sk["c3-n02"] = 0.412, -0.287
    return sk


def _dt(t: float) -> tuple[datetime, int]:
    us = int(round(t * 1e6))
    s, u = divmod(us, 1_000_000)
    return datetime.fromtimestamp(s, UTC), u


def iso_z(t: float) -> str:
    d, u = _dt(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{u // 1000:03d}Z"


def glog(t: float, lvl: str) -> str:                 # torch's glog-style python logging (2.4+)
    d, u = _dt(t)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{u:06d}"


def c10(t: float, lvl: str) -> str:                  # c10 C++ log prefix, nanoseconds
    d, u = _dt(t)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{u:06d}{(u * 7) % 1000:03d}"


def pyasc(t: float) -> str:
    d, u = _dt(t)
    return f"{d:%Y-%m-%d %H:%M:%S},{u // 1000:03d}"


def jiso(t: float) -> str:
    return f"{_dt(t)[0]:%Y-%m-%dT%H:%M:%S}+00:00"


def sts(t: float) -> str:
    return _dt(t)[0].strftime("%Y-%m-%dT%H:%M:%S")


def ctld(t: float) -> str:
    d, u = _dt(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{u // 1000:03d}]"


def elapsed(sec: float) -> str:
    sec = int(round(sec))
    h, r = divmod(sec, 3600)
    m, s = divmod(r, 60)
    return f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hs: list[str]) -> str:
    nums = sorted(int(h[-2:]) for h in hs)
    parts, a, b = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == b + 1:
            b = n
            continue
        parts.append(f"{a:02d}" if a == b else f"{a:02d}-{b:02d}")
        if n is not None:
            a = b = n
    return f"c3-n[{','.join(parts)}]"


class Sink:
    def __init__(self) -> None:
        self.items: list[tuple[float, int, str]] = []

    def add(self, t: float, line: str) -> None:
        self.items.append((t, len(self.items), line))

    def render(self) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
        return ("\n".join(x[2] for x in self.items) + "\n").encode()


class LabelSink(Sink):
    """srun --label: each task's line behind its task id, right-aligned to the widest id (`%*d: `); srun's own
    lines (srun:, slurmstepd:) carry none."""

    def __init__(self, label: bool, ntasks: int) -> None:
        super().__init__()
        self.label, self.width = label, len(str(ntasks - 1))

    def add(self, t: float, line: str, task: int | None = None) -> None:
        super().add(t, f"{task:>{self.width}}: {line}" if self.label and task is not None else line)


class Att:
    def __init__(self, **kw) -> None:
        self.__dict__.update(kw)
        self.steps: list[tuple[int, float, float]] = []
        self.saves: list[tuple[int, float, float]] = []
        self.R: float | None = None
        self.E: float = 0.0


# kind -> (mode, root host, seconds from root to the attempt's exit)
KINDS = {
    "net": ("network", "c3-n05", 24.0),
    "xid": ("gpu_hw_other", "c3-n08", HEARTBEAT_S + 12.0),
    "nodefail": ("node_failure", "c3-n01", 63.0),
    "oom": ("host_oom", "c3-n06", 9.0),
    "deadlock": ("nccl_timeout", "c3-n07", TIMEOUT_S + 13.0),
    "timelimit": ("time_limit", None, 3.0),
    "xid119": ("gpu_hw_other", "c3-n11", TIMEOUT_S + 14.0),
    "complete": (None, None, 0.0),
}


def simulate(a: Att, rng: random.Random, time_limit_at: float | None) -> bool:
    a.steps, a.saves = [], []
    t, n = a.F, a.load
    target = a.F + a.run_for if a.kind not in ("timelimit", "complete") else None
    while True:
        if a.kind == "complete" and n >= TRAIN_STEPS:
            break
        dur = BASE_STEP * (1 + rng.uniform(-JIT, JIT))
        if a.kind == "timelimit" and t + dur > time_limit_at:
            a.R = time_limit_at
            a.E = a.R + KINDS[a.kind][2]
            return True
        if target is not None and t + dur > target:
            if not a.steps or a.steps[-1][0] % SAVE_INTERVAL == 0:
                return False
            a.R = t if a.kind == "deadlock" else t + round(0.37 * dur, 3)
            a.E = a.R + KINDS[a.kind][2]
            return True
        a.steps.append((n + 1, t, dur))
        t += dur
        n += 1
        if n % SAVE_INTERVAL == 0 or (a.kind == "complete" and n == TRAIN_STEPS):
            c = round(rng.uniform(52.0, 71.0), 2)
            if target is not None and t + c > target - 20:
                return False
            if a.kind == "timelimit" and t + c > time_limit_at - 20:
                return False
            a.saves.append((n, t, c))
            t += c
    a.E = float(math.ceil(t + 3.0))
    return True


def build(seed: int) -> list[Att]:
    rng = random.Random(f"{seed}-elastic-timeline")
    specs = [
        dict(k=1, job=88401, nodes=JOB1_NODES, kind="net", inplace=False, startup=236 + rng.randint(-8, 8),
             run_for=2.5 * 3600 + rng.randint(0, 900)),
        dict(k=2, job=88401, nodes=JOB1_NODES, kind="xid", inplace=True, startup=141 + rng.randint(-6, 6),
             run_for=2.0 * 3600 + rng.randint(0, 900)),
        dict(k=3, job=88401, nodes=JOB1_NODES, kind="nodefail", inplace=True, startup=139 + rng.randint(-6, 6),
             run_for=1.7 * 3600 + rng.randint(0, 900)),
        dict(k=4, job=88433, nodes=JOB2_NODES, kind="oom", inplace=False, startup=251 + rng.randint(-8, 8),
             run_for=1.5 * 3600 + rng.randint(0, 900)),
        dict(k=5, job=88433, nodes=JOB2_NODES, kind="deadlock", inplace=True, startup=144 + rng.randint(-6, 6),
             run_for=1.5 * 3600 + rng.randint(0, 900)),
        dict(k=6, job=88433, nodes=JOB2_NODES, kind="timelimit", inplace=True, startup=142 + rng.randint(-6, 6)),
        dict(k=7, job=88470, nodes=JOB2_NODES, kind="xid119", inplace=False, startup=247 + rng.randint(-8, 8),
             run_for=1.2 * 3600 + rng.randint(0, 900)),
        dict(k=8, job=88470, nodes=JOB2_NODES, kind="complete", inplace=True, startup=140 + rng.randint(-6, 6)),
    ]
    atts = [Att(**s) for s in specs]
    for a in atts:
        a.mode, a.host = KINDS[a.kind][0], KINDS[a.kind][1]
    t, load = T0, 0
    job_start: dict[int, float] = {}
    for i, a in enumerate(atts):
        a.load = load
        a.S = float(t)
        job_start.setdefault(a.job, a.S)
        a.jobS = job_start[a.job]
        tl = a.jobS + 12 * 3600 if a.job == 88433 else None
        tries = 0
        while True:
            a.F = a.S + a.startup
            if simulate(a, random.Random(f"{seed}-elastic-steps-{a.k}-{tries}"), tl):
                break
            tries += 1
            a.run_for = getattr(a, "run_for", 0) + 83
            if tries > 60:
                raise RuntimeError(f"attempt {a.k} cannot be placed")
        a.last_ckpt = a.saves[-1][0] if a.saves else a.load
        load = a.last_ckpt
        if i + 1 < len(atts):
            nxt = atts[i + 1]
            if nxt.inplace:       # the agents re-rendezvous and start the next worker group
                t = a.E + 19.0 + rng.uniform(0, 8)
            else:
                t = math.ceil(a.E + (1500 if a.kind == "nodefail" else 1100) + rng.randint(0, 300))
    assert atts[5].E - atts[5].jobS <= 12 * 3600 + 60
    return atts


def ledger(atts: list[Att]):
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
        nxt = atts[i + 1]
        d = dict(recompute=a.R - base, hang=a.E - a.R, restart=nxt.S - a.E, startup=nxt.F - nxt.S)
        for k in ("recompute", "hang", "restart"):
            cats[k] += d[k]
        per.append(d)
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return {k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4), \
        [{k: round(v * g, 4) for k, v in d.items()} for d in per]


def loss_at(n: int, rng: random.Random) -> float:
    return 2.05 + 8.9 * math.exp(-n / 300.0) + 0.6 * math.exp(-n / 5000.0) + rng.gauss(0, 0.014)


# ----------------------------------------------------------------------------- one job's srun output
class Job:
    def __init__(self, seed: int, atts: list[Att]) -> None:
        self.atts = atts
        self.skew = skews(seed)
        self.nodes = atts[0].nodes
        self.head = self.nodes[0]
        self.rng = random.Random(f"{seed}-elastic-job-{atts[0].job}")
        self.agent = {h: self.rng.randint(150000, 190000) for h in self.nodes}
        # the second job was launched with `srun --label` (a user's change between jobs)
        self.L = LabelSink(atts[0].job == 88433, len(self.nodes))

    def rank_host(self, r: int) -> str:
        return self.nodes[r // GPN]

    def ag(self, t: float, h: str, lvl: str, path: str, msg: str) -> None:
        self.L.add(t, f"{glog(t + self.skew[h], lvl)} {self.agent[h]} torch/distributed/{path}] {msg}",
                   self.nodes.index(h))

    def rk(self, t: float, r: int, lvl: str, src: str, msg: str) -> None:
        self.L.add(t, f"[rank{r}]:[{c10(t + self.skew[self.rank_host(r)], lvl)} {src}] {msg}", r // GPN)

    def titan(self, t: float, msg: str, lvl: str = "INFO") -> None:
        self.L.add(t, f"[rank0]:[titan] {pyasc(t + self.skew[self.head])} - root - {lvl} - {msg}", 0)


def worker_start(j: Job, a: Att, pids: dict, restart_count: int) -> None:
    """torchrun agents: (re-)rendezvous, start the worker group; NCCL init; torchtitan init; steps."""
    S = a.S
    for gi, h in enumerate(j.nodes):
        t = S - 6.0 + 0.03 * gi
        j.ag(t, h, "I", "elastic/agent/server/api.py:525", "[default] Rendezvous complete for workers. Result:")
        lr = list(range(GPN))
        rr = [gi * GPN + d for d in lr]
        for k, v in (("restart_count", restart_count), ("master_addr", j.head), ("master_port", 29500),
                     ("group_rank", gi), ("group_world_size", len(j.nodes)), ("local_ranks", lr),
                     ("role_ranks", rr), ("global_ranks", rr), ("role_world_sizes", [GPUS] * GPN),
                     ("global_world_sizes", [GPUS] * GPN)):
            j.ag(t, h, "I", "elastic/agent/server/api.py:525", f"  {k}={v}")
        j.ag(S + 0.03 * gi, h, "I", "elastic/agent/server/api.py:677", "[default] Starting worker group")
        j.ag(S + 0.03 * gi + 0.01, h, "I", "elastic/agent/server/local_elastic_agent.py:298",
             "use_agent_store: True")
        for d in range(GPN):
            pids[h, d] = j.rng.randint(200000, 260000)
    # the deprecation warning every rank prints at init (decoy); rank 0's shown, plus a few
    for r in (0, 17, 40, 77):
        t = S + 21.0 + 0.01 * r
        j.rk(t, r, "W", "ProcessGroupNCCL.cpp:895",
             "Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default now, this environment variable is "
             "thus deprecated. (function operator())")
    comm_id = f"0x{j.rng.getrandbits(64):016x}"
    for gi, h in enumerate(j.nodes):
        for d in range(GPN):
            r = gi * GPN + d
            w = pids[h, d]
            tid = w + 311 + d
            c = "0x%x" % (0x55d000000000 + (j.rng.getrandbits(28) << 4))
            t = S + 24.0 + 0.002 * r
            if r == 0:
                j.L.add(t, f"{h}:{w}:{w} [0] NCCL INFO NCCL version {NCCL_V}+cuda12.4", gi)
            j.L.add(t + 0.3, f"{h}:{w}:{tid} [{d}] NCCL INFO comm {c} rank {r} nRanks {GPUS} nNodes "
                             f"{len(j.nodes)} localRanks {GPN} localRank {d} MNNVL 0", gi)
            j.L.add(t + 1.9, f"{h}:{w}:{tid} [{d}] NCCL INFO ncclCommInitRank comm {c} rank {r} nranks {GPUS} "
                             f"cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} commId {comm_id} - Init COMPLETE", gi)
    ti = S + 30.0
    T = j.titan
    T(ti, "Starting job: 34B dense training")
    T(ti + 0.3, f"Building 2-D device mesh with ['dp_shard', 'tp'], [{DP}, {TP}]")
    T(ti + 9.0, "Building llama3 34B with TransformerModelArgs(dim=8192, n_layers=48, n_heads=64, n_kv_heads=8, "
                "vocab_size=128256, max_seq_len=4096)")
    T(ti + 10.0, "Model llama3 34B size: 34,389,016,576 total parameters")
    T(ti + 10.2, "Applied Tensor Parallelism to the model")
    T(ti + 11.9, "Applied FSDP to the model")
    T(ti + 12.3, f"Peak FLOPS used for computing MFU: {PEAK:.3e}")
    T(ti + 12.5, f"Checkpointing active. Checkpoints will be loaded from and saved to {CKPT}")
    if a.load:
        T(ti + 14.0, f"Loading the checkpoint from {CKPT}/step-{a.load}.")
        T(a.F - 1.5, f"Finished loading the checkpoint in {a.F - 1.5 - ti - 14.0:.2f} seconds.")
    else:
        T(ti + 14.0, "No checkpoint was provided, this is a fresh start.")
    T(a.F, f"Training starts at step {a.load + 1}")
    lrng = random.Random(f"loss-{a.k}")
    t_last, last_n = a.F, a.load
    save_at = {n: (s, c) for n, s, c in a.saves}
    for n, s, dur in a.steps:
        end = s + dur
        if n == a.load + 1 or n % LOG_FREQ == 0:
            since, last_n = n - last_n, n
            tps = since * TOKENS_PER_GPU / (end - t_last)
            mfu = 100 * FLOPS_PER_TOKEN * tps / PEAK
            gn = 0.21 + 2.7 * math.exp(-n / 600.0) + abs(lrng.gauss(0, 0.02))
            T(end, f"step: {n:2}  loss: {loss_at(n, lrng):8.5f}  grad_norm: {gn:7.4f}  memory: 58.12GiB(73.47%)  "
                   f"tps: {round(tps):,}  tflops: {FLOPS_PER_TOKEN * tps / 1e12:,.2f}  mfu: {mfu:.2f}%")
            t_last = end
        if n in save_at:
            s0, c = save_at[n]
            T(s0 + 0.01, "Saving the checkpoint.")
            if n == TRAIN_STEPS:
                T(s0 + 0.02, f"Saving a full checkpoint at last step, step {n}.")
                T(s0 + c, f"Last step checkpoint completed in {c - 0.01:.2f}s")
            else:
                T(s0 + c, f"Finished saving the checkpoint in {c - 0.01:.2f} seconds.")


def group_failed(j: Job, a: Att, failing: dict[str, tuple[int, int]], left: dict[str, int],
                 pids: dict, restart: bool) -> None:
    """failing: host -> (local rank, exitcode) of the worker its agent saw fail first. The last agent's
    "Worker group FAILED" / "Detected ... will restart" line is the attempt's exit (a.E)."""
    t = a.E - max(0.05 * gi + (0.01 if h in failing else 1.5) for gi, h in enumerate(j.nodes))
    for gi, h in enumerate(j.nodes):
        tt = t + 0.05 * gi
        if h in failing:
            d, code = failing[h]
            j.ag(tt, h, "E", "elastic/multiprocessing/api.py:869",
                 f"failed (exitcode: {code}) local_rank: {d} (pid: {pids[h, d]}) of binary: /usr/bin/python3")
            if restart:
                j.ag(tt + 0.01, h, "I", "elastic/agent/server/api.py:873",
                     f"[default] Worker group FAILED. {left[h]}/2 attempts left; will restart worker group")
                left[h] -= 1
        elif restart:
            src = j.nodes.index(next(iter(failing)))
            j.ag(tt + 1.5, h, "I", "elastic/agent/server/api.py:905",
                 f"[default] Detected 1 new nodes from group_rank={src}; will restart worker group")
        if restart:
            j.ag(tt + 1.6, h, "I", "elastic/agent/server/api.py:723", "[default] Stopping worker group")
            j.ag(tt + 3.0, h, "I", "elastic/agent/server/api.py:696", "[default] Rendezvous'ing worker group")


def watchdog_timeout(j: Job, a: Att, t0: float, culprit: int, first_host: str, seq: int, lagging: bool = True) -> None:
    """Every rank but a lagging culprit (one that never enqueued collective seq) times out on it; first_host's ranks
    print first. A culprit stuck in a kernel enqueued it and times out like its peers (lagging=False)."""
    order = [r for r in range(GPUS) if j.rank_host(r) == first_host] + \
            [r for r in range(GPUS) if j.rank_host(r) != first_host]
    src = order[0]
    for k, r in enumerate(order):
        if r == culprit and lagging:
            continue
        t = t0 + (0.0 if k < GPN else 0.4 + 0.01 * k)
        pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
        j.rk(t, r, "E", "ProcessGroupNCCL.cpp:632",
             f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
             f"OpType=_ALLGATHER_BASE, NumelIn=44040192, NumelOut=528482304, Timeout(ms)={TIMEOUT_S * 1000}) "
             f"ran for {TIMEOUT_S * 1000 + 7 + k % 40} milliseconds before timing out.")
        j.rk(t + 0.0002, r, "E", "ProcessGroupNCCL.cpp:2271",
             f"{pg}  failure detected by watchdog at work sequence id: {seq} PG status: last enqueued work: "
             f"{seq}, last completed work: {seq - 1}")
        j.rk(t + 0.0003, r, "E", "ProcessGroupNCCL.cpp:670",
             "Stack trace of the failed collective not found, potentially because FlightRecorder is disabled. "
             "You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.")
    for k, r in enumerate(order):
        t = t0 + 0.9 + 0.004 * k
        who = "this local rank" if r == src else f" rank {src}"
        enq = seq - 1 if r == culprit and lagging else seq
        pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
        j.rk(t, r, "E", "ProcessGroupNCCL.cpp:1743",
             f"{pg} Received a dump signal due to a collective timeout from {who} and we will try our best to "
             f"dump the debug info. Last enqueued NCCL work: {enq}, last completed NCCL work: {seq - 1}.This is "
             f"most likely caused by incorrect usages of collectives, e.g., wrong sizes used across ranks, the "
             f"order of collectives is not same for all ranks or the scheduled collective, for some reason, "
             f"didn't run. Additionally, this can be caused by GIL deadlock or other reasons such as network "
             f"errors or bugs in the communications library (e.g. NCCL), etc. ")
        j.rk(t + 0.001, r, "E", "ProcessGroupNCCL.cpp:1533",
             f"{pg} ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1")
    for k, r in enumerate(order):
        t = t0 + 11.0 + 0.003 * k
        pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
        j.rk(t, r, "F", "ProcessGroupNCCL.cpp:1557",
             f"{pg} [PG ID 0 PG GUID 0(default_pg) Rank {r}] Terminating the process after attempting to dump "
             f"debug info, due to collective timeout or exception.")


def job_log(seed: int, atts: list[Att], info: dict) -> bytes:
    j = Job(seed, atts)
    L, head = j.L, j.head
    a0 = atts[0]
    hs = j.skew[head]
    L.add(a0.S, f"START TIME: {_dt(a0.S + hs)[0]:%a %b %d %H:%M:%S} UTC {_dt(a0.S + hs)[0].year}")
    L.add(a0.S + 0.01, f"+ srun --kill-on-bad-exit=1 torchrun --nnodes={NODES_USED} --nproc-per-node={GPN} "
                       f"--rdzv-backend=c10d --rdzv-endpoint={head}:29500 --rdzv-id={a0.job} --max-restarts=2 "
                       f"--local-ranks-filter 0 --role rank --tee 3 -m torchtitan.train --job.config_file "
                       f"llama3_34b.toml --checkpoint.enable --checkpoint.interval {SAVE_INTERVAL} "
                       f"--comm.train_timeout_seconds {TIMEOUT_S}")
    t = a0.S + 18.0
    # decoy: a stale listener from the previous job on the head: torchrun falls back and goes on
    L.add(t, f"[W{c10(t + hs, '')} socket.cpp:697] [c10d] The server socket has failed to listen on [::]:29500 "
             f"(errno: 98 - Address already in use).")
    L.add(t + 0.002, f"[W{c10(t + 0.002 + hs, '')} socket.cpp:472] [c10d] The server socket has failed to bind to "
                     f"0.0.0.0:29500 (errno: 98 - Address already in use).")
    L.add(t + 0.4, f"[I{c10(t + 0.4 + hs, '')} socket.cpp:884] [c10d] The client socket has connected to "
                   f"[{head}]:29500 on SocketImpl(fd=5, addr=[{head}]:48114, remote=[{head}]:29500).")
    for gi, h in enumerate(j.nodes):
        tt = t + 1.0 + 0.05 * gi
        p = f"{glog(tt + j.skew[h], 'W')} {j.agent[h]} torch/distributed/run.py:793] "
        for s in ("", "*" * 41, "Setting OMP_NUM_THREADS environment variable for each process to be 1 in "
                  "default, to avoid your system being overloaded, please further tune the variable for optimal "
                  "performance in your application as needed. ", "*" * 41):
            L.add(tt, p + s, gi)
    left = {h: 2 for h in j.nodes}
    pids: dict = {}
    for ri, a in enumerate(atts):
        worker_start(j, a, pids, ri)
        R = a.R
        if a.kind == "net":
            h = a.host
            d = 4
            r = j.nodes.index(h) * GPN + d
            peer = j.nodes[j.nodes.index(h) - 1]
            w = pids[h, d]
            L.add(R + 2.1, f"{h}:{w}:{w + 900} [{d}] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion "
                           f"from peer {ip(peer)}<{40000 + r}> with status=12 opcode=0 len=0 vendor err 129 (Send) "
                           f"localGid ::ffff:{ip(h)} remoteGids::ffff:{ip(peer)}")
            L.add(R + 2.2, f"{h}:{w}:{w + 900} [{d}] NCCL INFO transport/net.cc:1298 -> 6")
            j.rk(R + 2.6, r, "E", "ProcessGroupNCCL.cpp:1595",
                 f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with "
                 f"exception: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL "
                 f"version {NCCL_V}")
            j.rk(R + 2.61, r, "E", "ProcessGroupNCCL.cpp:1595", "ncclSystemError: System call (e.g. socket, "
                 "malloc) or external library call failed or device error. ")
            rp = j.nodes.index(peer) * GPN + d
            j.rk(R + 9.4, rp, "E", "ProcessGroupNCCL.cpp:1595",
                 f"[PG ID 0 PG GUID 0(default_pg) Rank {rp}] Process group watchdog thread terminated with "
                 f"exception: NCCL error: remote process exited or there was a network error, NCCL version {NCCL_V}")
            group_failed(j, a, {h: (d, -6), peer: (d, -6)}, left, pids, True)
        elif a.kind == "xid":
            h, d = a.host, 5
            r = j.nodes.index(h) * GPN + d
            pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
            tb = R + HEARTBEAT_S + 2.0
            j.rk(tb, r, "E", "ProcessGroupNCCL.cpp:1375",
                 f"{pg} Heartbeat monitor timed out! Process will be terminated after dumping debug info. "
                 f"workMetaList_.size()=3")
            j.rk(tb + 0.001, r, "E", "ProcessGroupNCCL.cpp:1533",
                 f"{pg} ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1")
            j.rk(tb + 8.0, r, "F", "ProcessGroupNCCL.cpp:1375",
                 f"{pg} [PG ID 0 PG GUID 0(default_pg) Rank {r}] ProcessGroupNCCL's watchdog got stuck for "
                 f"{HEARTBEAT_S} seconds without making progress in monitoring enqueued collectives. This typically "
                 f"indicates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog, and could be "
                 f"triggered by another thread holding the GIL inside a CUDA api (for example, CudaEventDestroy), "
                 f"or other deadlock-prone behaviors.If you suspect the watchdog is not actually stuck and a "
                 f"longer timeout would help, you can either increase the timeout (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC) "
                 f"to a larger value or disable the heartbeat monitor (TORCH_NCCL_ENABLE_MONITORING=0).If either "
                 f"of aforementioned helps, feel free to file an issue to PyTorch about the short timeout or false "
                 f"positive abort; otherwise, please attempt to debug the hang. ")
            info["xid_pid"] = pids[h, d]
            group_failed(j, a, {h: (d, -6)}, left, pids, True)
        elif a.kind == "nodefail":
            dead = a.host
            info["dead_last"] = R
            first = "c3-n03"
            order = [h for h in j.nodes if h != dead]
            order.remove(first)
            order.insert(0, first)
            for k, h in enumerate(order):
                for d in (0, 3, 6):
                    r = j.nodes.index(h) * GPN + d
                    w = pids[h, d]
                    t1 = R + 11.0 + 0.4 * k + 0.01 * d
                    L.add(t1, f"{h}:{w}:{w + 900} [{d}] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion "
                              f"from peer {ip(dead)}<{41000 + d}> with status=12 opcode=1 len=0 vendor err 129 (Recv) "
                              f"localGid ::ffff:{ip(h)} remoteGids::ffff:{ip(dead)}")
                    t2 = R + 4.0 + 0.3 * k + 0.01 * d
                    fd = 80 + d
                    j.rk(t2, r, "W", "TCPStore.cpp:125",
                         f"[c10d] recvValue failed on SocketImpl(fd={fd}, addr=[{h}]:{52100 + r}, "
                         f"remote=[{dead}]:29500): Connection reset by peer")
                    L.add(t2 + 0.0001, "Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/"
                                       "Utils.hpp:670 (most recent call first):")
                    L.add(t2 + 0.0002, "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 "
                                       "(0x7f1c2e56b446 in /usr/local/lib/python3.10/dist-packages/torch/lib/"
                                       "libc10.so)")
                    j.rk(t2 + 0.001, r, "W", "ProcessGroupNCCL.cpp:1662",
                         f"[PG ID 0 PG GUID 0 Rank {r}] Failed to check the \"should dump\" flag on TCPStore, "
                         f"(maybe TCPStore server has shut down too early), with error: Connection reset by peer")
                    j.rk(t1 + 1.5, r, "E", "ProcessGroupNCCL.cpp:1595",
                         f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with "
                         f"exception: NCCL error: remote process exited or there was a network error, NCCL version "
                         f"{NCCL_V}")
            for k, h in enumerate(order):
                tt = R + 22.0 + 0.3 * k
                j.ag(tt, h, "E", "elastic/multiprocessing/api.py:869",
                     f"failed (exitcode: -6) local_rank: 0 (pid: {pids[h, 0]}) of binary: /usr/bin/python3")
                j.ag(tt + 0.01, h, "I", "elastic/agent/server/api.py:873",
                     f"[default] Worker group FAILED. {left[h]}/2 attempts left; will restart worker group")
                j.ag(tt + 0.02, h, "I", "elastic/agent/server/api.py:696", "[default] Rendezvous'ing worker group")
                L.add(tt + 30.1, "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection "
                                 "to the C10d store has failed. See inner exception for details.")
                L.add(tt + 31.0, f"srun: error: {h}: task {j.nodes.index(h)}: Exited with exit code 1")
            L.add(R + 55.0, f"srun: error: Node failure on {dead}")
            L.add(R + 55.1, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
            L.add(a.E - 0.5, f"srun: error: {dead}: task 0: Killed")
        elif a.kind == "oom":
            h, d = a.host, 2
            r = j.nodes.index(h) * GPN + d
            wp = pids[h, d] + 57
            info["oom_pid"] = wp
            L.add(R + 1.2, f"[rank{r}]: Traceback (most recent call last):", r // GPN)
            L.add(R + 1.21, f"[rank{r}]:   File \"/usr/local/lib/python3.10/dist-packages/torch/utils/data/"
                            f"dataloader.py\", line 1243, in _try_get_data", r // GPN)
            L.add(R + 1.22, f"[rank{r}]:     data = self._data_queue.get(timeout=timeout)", r // GPN)
            L.add(R + 1.23, f"[rank{r}]: RuntimeError: DataLoader worker (pid {wp}) is killed by signal: Killed. ",
                  r // GPN)
            L.add(R + 1.24, f"[rank{r}]: ", r // GPN)
            L.add(R + 1.25, f"[rank{r}]: The above exception was the direct cause of the following exception:",
                  r // GPN)
            L.add(R + 1.26, f"[rank{r}]: Traceback (most recent call last):", r // GPN)
            L.add(R + 1.27, f"[rank{r}]:   File \"/workspace/torchtitan/torchtitan/train.py\", line 412, in "
                            f"next_batch", r // GPN)
            L.add(R + 1.28, f"[rank{r}]:     batch = next(data_iterator)", r // GPN)
            L.add(R + 1.29, f"[rank{r}]: RuntimeError: DataLoader worker (pid(s) {wp}) exited unexpectedly", r // GPN)
            group_failed(j, a, {h: (d, 1)}, left, pids, True)
        elif a.kind == "deadlock":
            h = a.host
            r = j.nodes.index(h) * GPN + 5
            seq = 41000 + a.steps[-1][0] % 997 * 12
            watchdog_timeout(j, a, R + TIMEOUT_S + 0.3, r, "c3-n10", seq)
            tf = a.E - 0.05 * (len(j.nodes) - 1) - 0.01     # the last FAILED line is the exit
            for gi, hh in enumerate(j.nodes):
                j.ag(tf + 0.05 * gi, hh, "E", "elastic/multiprocessing/api.py:869",
                     f"failed (exitcode: -6) local_rank: 0 (pid: {pids[hh, 0]}) of binary: /usr/bin/python3")
                j.ag(tf + 0.05 * gi + 0.01, hh, "I", "elastic/agent/server/api.py:873",
                     f"[default] Worker group FAILED. {left[hh]}/2 attempts left; will restart worker group")
                left[hh] -= 1
                j.ag(tf + 0.05 * gi + 1.6, hh, "I", "elastic/agent/server/api.py:723",
                     "[default] Stopping worker group")
                j.ag(tf + 0.05 * gi + 3.0, hh, "I", "elastic/agent/server/api.py:696",
                     "[default] Rendezvous'ing worker group")
        elif a.kind == "xid119":
            r = j.nodes.index(a.host) * GPN + 2
            info["xid119_pid"] = pids[a.host, 2]
            seq = 52000 + a.steps[-1][0] % 991 * 12
            watchdog_timeout(j, a, R + TIMEOUT_S + 0.3, r, "c3-n12", seq, lagging=False)
            tf = a.E - 0.05 * (len(j.nodes) - 1) - 0.01
            for gi, hh in enumerate(j.nodes):
                j.ag(tf + 0.05 * gi, hh, "E", "elastic/multiprocessing/api.py:869",
                     f"failed (exitcode: -6) local_rank: 0 (pid: {pids[hh, 0]}) of binary: /usr/bin/python3")
                j.ag(tf + 0.05 * gi + 0.01, hh, "I", "elastic/agent/server/api.py:873",
                     f"[default] Worker group FAILED. {left[hh]}/2 attempts left; will restart worker group")
                left[hh] -= 1
                j.ag(tf + 0.05 * gi + 1.6, hh, "I", "elastic/agent/server/api.py:723",
                     "[default] Stopping worker group")
                j.ag(tf + 0.05 * gi + 3.0, hh, "I", "elastic/agent/server/api.py:696",
                     "[default] Rendezvous'ing worker group")
        elif a.kind == "timelimit":
            stepd = f"slurmstepd: error: *** JOB {a.job} ON {head} CANCELLED AT {sts(R)} DUE TO TIME LIMIT ***"
            L.add(R + 0.02, stepd)
            L.add(R + 0.03, stepd.replace(f"JOB {a.job}", f"STEP {a.job}.0"))
            L.add(R + 0.05, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
            for gi, h in enumerate(j.nodes):
                tt = R + 0.2 + 0.02 * gi
                j.ag(tt, h, "W", "elastic/agent/server/api.py:704", "Received 15 death signal, shutting down workers")
                for d in range(GPN):
                    j.ag(tt + 0.001, h, "W", "elastic/multiprocessing/api.py:897",
                         f"Sending process {pids[h, d]} closing signal SIGTERM")
        elif a.kind == "complete":
            j.titan(a.E - 2.6, "Sleeping 2 seconds for other ranks to complete")
            j.titan(a.E - 0.6, "Training completed")
            for gi, h in enumerate(j.nodes):
                j.ag(a.E - 0.3 + 0.01 * gi, h, "I", "elastic/agent/server/api.py:879",
                     "[default] worker group successfully finished. Waiting 300 seconds for other agents to finish.")
            L.add(a.E, f"END TIME: {_dt(a.E + hs)[0]:%a %b %d %H:%M:%S} UTC {_dt(a.E + hs)[0].year}")
    return j.L.render()


# ----------------------------------------------------------------------------- kernel logs
def kernel_logs(atts: list[Att], seed: int, bundle: Path, info: dict) -> None:
    rng = random.Random(f"{seed}-elastic-kern")
    first, last = atts[0].S - 3 * 86400, atts[-1].E + 600
    per = {h: Sink() for h in HOSTS}

    sk = skews(seed)

    def k(h: str, t: float, msg: str) -> None:
        per[h].add(t, f"{jiso(t + sk[h])} {h} kernel: {msg}")

    for h in HOSTS:
        b = first + rng.randint(0, 3600)
        k(h, b, "Linux version 5.15.0-122-generic (buildd@lcy02-amd64-034) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) "
                "11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #132-Ubuntu SMP Thu Aug 29 13:45:52 UTC 2024")
        k(h, b + 41.0, "NVRM: loaded using NVIDIA Open Kernel Module for x86_64  550.127.05  Release Build  "
                       "(dvs-builder@U16-I3-B03-4-3)  Tue Oct  8 00:25:57 UTC 2024")
        for t in range(int(first) + 86400, int(last), 86400):
            k(h, t + rng.randint(0, 3000), "workqueue: drm_fb_helper_damage_work hogged CPU for >10000us 4 times, "
                                           "consider switching to WQ_UNBOUND")
    by = {a.kind: a for a in atts}
    a = by["net"]
    h = a.host
    k(h, a.R, f"mlx5_core {NIC_PCI[4]} {NIC_IF[4]}: Link down")
    k(h, a.R + 7.0, f"mlx5_core {NIC_PCI[4]} {NIC_IF[4]}: Link up")
    a = by["xid"]
    k(a.host, a.R, f"NVRM: Xid (PCI:0000:{BUSIDS[5][:2]}:00): 109, pid={info['xid_pid']}, name=python3, "
                   f"Ch 0000000a, errorString CTX SWITCH TIMEOUT, Info 0x3c057")
    a = by["nodefail"]
    # the dead node's journal just stops; it is back (a new boot) after the provider's power cycle
    per[a.host].items = [x for x in per[a.host].items if x[0] <= info["dead_last"] - 1]
    k(a.host, info["dead_last"] - 180.0, "perf: interrupt took too long (2503 > 2500), lowering "
                                         "kernel.perf_event_max_sample_rate to 79800")
    rb = info["dead_last"] + 1300
    per[a.host].add(rb - 0.5, "-- Boot 5e0b6c1f8a2d4b7e9c3f0a1d2e4b6c8a --")
    k(a.host, rb, "Linux version 5.15.0-122-generic (buildd@lcy02-amd64-034) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) "
                  "11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #132-Ubuntu SMP Thu Aug 29 13:45:52 UTC 2024")
    k(a.host, rb + 41.0, "NVRM: loaded using NVIDIA Open Kernel Module for x86_64  550.127.05  Release Build  "
                         "(dvs-builder@U16-I3-B03-4-3)  Tue Oct  8 00:25:57 UTC 2024")
    a = by["xid119"]
    # (NVIDIA's Xid catalogue, 119: GSP RPC timeout; the wording as pasted in driver bug reports)
    k(a.host, a.R, f"NVRM: Xid (PCI:0000:{BUSIDS[2][:2]}:00): 119, pid={info['xid119_pid']}, name=python3, Timeout "
                   f"after 6s of waiting for RPC response from GPU2 GSP! Expected function 76 (GSP_RM_CONTROL) "
                   f"(0x20800a4c 0x4).")
    a = by["oom"]
    p = info["oom_pid"]
    k(a.host, a.R - 0.2, "pt_data_worker invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), "
                         "order=0, oom_score_adj=0")
    k(a.host, a.R - 0.05, f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,"
                          f"global_oom,task_memcg=/system.slice/slurmstepd.scope/job_{a.job}/step_0/user/task_0,"
                          f"task=pt_data_worker,pid={p},uid=1311")
    k(a.host, a.R, f"Out of memory: Killed process {p} (pt_data_worker) total-vm:98744120kB, "
                   f"anon-rss:71233404kB, file-rss:61440kB, shmem-rss:2097152kB, UID:1311 pgtables:141820kB "
                   f"oom_score_adj:0")
    # decoys on c3-n14, never in any job
    tdec = by["deadlock"].F + 1800
    k("c3-n14", tdec, f"mlx5_core {NIC_PCI[2]} {NIC_IF[2]}: Link down")
    k("c3-n14", tdec + 5, f"mlx5_core {NIC_PCI[2]} {NIC_IF[2]}: Link up")
    k("c3-n14", tdec + 3600, "NVRM: Xid (PCI:0000:3a:00): 13, pid=88123, name=dcgmproftester12, Graphics SM Warp "
                             "Exception on (GPC 2, TPC 1, SM 0): Out Of Range Address")
    for h, s in per.items():
        write_file(bundle / "nodes" / h / "kern.log", s.render())


def scheduler(atts: list[Att], bundle: Path, info: dict) -> None:
    L = Sink()
    hdr = "JobID|JobName|User|Partition|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"
    rows = []
    jobs: dict[int, list[Att]] = {}
    for a in atts:
        jobs.setdefault(a.job, []).append(a)
    for job, aa in jobs.items():
        S, E, hl = aa[0].S, aa[-1].E, hostlist(aa[0].nodes)
        L.add(S - 0.5, f"{ctld(S - 0.5)} sched: Allocate JobId={job} NodeList={hl} #CPUs=2304 Partition=gpu")
        last = aa[-1]
        if last.kind == "nodefail":
            # SlurmdTimeout=50 on this cluster: the controller gives up on the node before srun does
            L.add(last.R + 54.6, f"{ctld(last.R + 54.6)} error: Nodes {last.host} not responding, setting DOWN")
            L.add(last.R + 54.7, f"{ctld(last.R + 54.7)} Killing JobId={job} on failed node {last.host}")
            state, ec = "NODE_FAIL", "0:0"
        elif last.kind == "timelimit":
            L.add(last.R, f"{ctld(last.R)} Time limit exhausted for JobId={job}")
            state, ec = "TIMEOUT", "0:0"
        else:
            state, ec = "COMPLETED", "0:0"
        L.add(E + 0.2, f"{ctld(E + 0.2)} _job_complete: JobId={job} " +
              ("WTERMSIG 15" if state != "COMPLETED" else "WEXITSTATUS 0"))
        L.add(E + 0.21, f"{ctld(E + 0.21)} _job_complete: JobId={job} done")
        rows.append(f"{job}|train-34b|mlops|gpu|2304|{state}|{ec}|{sts(S - 40)}|{sts(S)}|{sts(E)}|"
                    f"{elapsed(E - S)}|{len(aa[0].nodes)}|{hl}")
        rows.append(f"{job}.batch|batch||gpu|192|{'CANCELLED' if state != 'COMPLETED' else 'COMPLETED'}|"
                    f"{'0:15' if state != 'COMPLETED' else '0:0'}|{sts(S)}|{sts(S)}|{sts(E)}|{elapsed(E - S)}|1|"
                    f"{aa[0].nodes[0]}")
        st0 = "FAILED" if state == "NODE_FAIL" else "CANCELLED" if state != "COMPLETED" else "COMPLETED"
        rows.append(f"{job}.0|torchrun||gpu|2304|{st0}|"
                    f"{'1:0' if state == 'NODE_FAIL' else '0:15' if state != 'COMPLETED' else '0:0'}|{sts(S + 1)}|"
                    f"{sts(S + 1)}|{sts(E)}|{elapsed(E - S - 1)}|{len(aa[0].nodes)}|{hl}")
    a3 = next(a for a in atts if a.kind == "nodefail")
    t = a3.E + 1300 + 240
    L.add(t, f"{ctld(t)} update_node: node {a3.host} state set to IDLE")
    write_file(bundle / "scheduler" / "slurmctld.log", L.render())
    write_file(bundle / "scheduler" / "sacct.psv", ("\n".join([hdr] + rows) + "\n").encode())


def write_file(p: Path, data: bytes) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)


def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    atts = build(seed)
    write_file(bundle / "inventory.toml", f"""[providers.{PROVIDER}]
usd_per_gpu_hour = 2.19

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = {GPN}
interconnect = "InfiniBand NDR 8x400G"
nodes = "c3-n[01-14]"
""".encode())
    rdir = bundle / "runs" / RUN
    write_file(rdir / "run.toml", f"""cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.4e}
checkpoint_dir = "{CKPT}"
launcher = "torchrun"
launch_command = "srun torchrun --nnodes=12 --nproc-per-node=8 --rdzv-backend=c10d --max-restarts=2 -m torchtitan.train"
""".encode())
    info: dict = {}
    for job in sorted({a.job for a in atts}):
        aa = [a for a in atts if a.job == job]
        write_file(rdir / f"slurm-{job}.out", job_log(seed, aa, info))
    kernel_logs(atts, seed, bundle, info)
    scheduler(atts, bundle, info)
    cats, total, per = ledger(atts)
    incs = []
    for i, a in enumerate(atts[:-1]):
        mode, host, _ = KINDS[a.kind]
        incs.append({"id": i + 1, "attempt": a.k, "slurm_job": a.job, "failure_mode": mode, "host": host,
                     "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E), "last_ckpt_step": a.last_ckpt,
                     "gpu_hours": per[i], "gpu_hours_lost": round(sum(per[i].values()), 4)})
    decoys = {"c3-n14": "not in any job: its own mlx5 link flap and an Xid 13 from a DCGM test",
              "c3-n04": "peer of c3-n05's flapping link in attempt 1: remote-error symptom only",
              "c3-n10": "its ranks print attempt 5's watchdog timeouts first; the stuck rank is on c3-n07",
              "c3-n03": "its ranks print attempt 3's TCPStore errors first; the dead store host is c3-n01",
              "c3-n12": "its ranks print attempt 7's watchdog timeouts first; the GPU stuck on Xid 119 is on c3-n11"}
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "match_on_attempt": True,
        "tokens_per_step": TOKENS_PER_STEP, "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "in_place_restart": a.inplace, "start_ts": iso_z(a.S),
                      "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E), "loaded_step": a.load,
                      "last_step": a.steps[-1][0], "saves": [n for n, _, _ in a.saves], "end": a.kind}
                     for a in atts],
        "incidents": incs, "decoy_hosts": sorted(decoys), "decoy_reasons": decoys,
        "hardware_modes": HARDWARE_MODES, "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incs), 4)},
    }
    write_file(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261019)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    print(f"wrote {out / 'bundle'}; total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
