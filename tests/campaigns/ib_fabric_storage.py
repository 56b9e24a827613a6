#!/usr/bin/env python3
# ruff: noqa: E501, UP031  (real log lines and command lines are quoted whole; printf-style JSON records)
"""Campaign ib_fabric_storage: a pretraining job on a provider whose InfiniBand fabric and Lustre misbehave.

Written before its author read clusterlab's analysis code, in the shape of the outsiders' campaigns
(standard library only, `--out DIR --seed N`, deterministic per seed; writes DIR/bundle/... and DIR/truth.json).

Run "fabric-34b": a 34B dense decoder, Megatron-LM (torch-format checkpoints on Lustre), PyTorch 2.1 and NCCL
2.18.5, launched by `sbatch --requeue` + `srun torchrun`, 12 nodes x 8 H100-SXM (96 GPUs) of cluster kx-1
(provider kestrel; 16 nodes in the inventory: kx1-g013..g015 are spares, kx1-g016 belongs to another team's
partition and never runs this job). Clocks: truth times are the controller's UTC; every node's clock is off by
up to 1.5 s.

Layout (one flat log folder, as a sbatch script with `--output=logs/slurm-%j.out` leaves it, not split by attempt):
  bundle/inventory.toml, bundle/runs/fabric-34b/run.toml
  bundle/runs/fabric-34b/logs/slurm-<job>.out          rank-0 Megatron + srun/torchrun/PyTorch output; a requeued
                                                       job's incarnations are appended to the same file
  bundle/runs/fabric-34b/logs/nccl-<job>.<restart>/<host>.log   NCCL_DEBUG=INFO of each host
                                                       (NCCL_DEBUG_FILE named with SLURM_RESTART_COUNT)
  bundle/runs/fabric-34b/logs/steps-<job>/rank-NN.jsonl          per-rank step records (hung-rank attempt only,
                                                       its last STEPS_JSONL steps)
  bundle/nodes/<host>/kern.log (rsyslog RSYSLOG_FileFormat) or dmesg-T.txt (dmesg -T)
  bundle/scheduler/slurmctld.log, bundle/scheduler/sacct-D.txt (sacct -D -P: a requeued job has two rows)

Attempts (the five failures come in a seed-dependent order, then one attempt completes):
  switch  a rail leaf switch flaps: the ports of that rail on the 4 hosts under it go "Link down" within the same
          second (mlx5_core), NCCL NET/IB completion errors (error 12, retry exceeded) on those 4 hosts' rail ranks;
          NCCL 2.18 does not report the async error to PyTorch, so every rank then times out in the ProcessGroupNCCL
          watchdog (600 s) and the job FAILS. Cause: the shared switch      [network, host null]
  hca     one host's HCA port flaps on its own (Link down/up x3, only on that host), NET/IB errors only there,
          then every rank's watchdog times out. Cause: that host            [network, host H]
  lustre  at a periodic save the Lustre OST holding the checkpoint stops answering: every host logs ptlrpc
          timeouts and "Connection to fsx-OSTnnnn ... was lost", then is evicted; torch.save raises
          "PytorchStreamWriter failed writing file ...: file write failed" on the writing ranks; hung tasks on
          three hosts; the job FAILS. The save never completed, so the next attempt loads the previous one.
          Cause: the shared filesystem                                      [filesystem_io, host null]
  xid79   Xid 79 on one GPU; the node wedges; the other ranks' watchdogs fire 600 s later; slurmctld marks the
          node DOWN, the job is NODE_FAIL and Slurm REQUEUES it (same job id, output appended)
                                                                            [gpu_fell_off_bus, host H]
  hang    one rank stops after the collectives of step N (its last per-rank record is N-1, every other rank's is
          N); the other ranks' watchdogs fire 600 s later; torchrun must SIGKILL the stuck worker
                                                                            [nccl_timeout, host H]
  complete the last attempt runs to train_iters (final save, "[after training is done]").
  Each relaunch loads the last durable checkpoint (the last save that printed "successfully saved").
  The drained host of hca/xid79/hang is replaced by the next spare.

Decoys: "NET/IB : Got async event : client reregistration" WARNs at NCCL init on two hosts in every attempt; a
transient link bounce on one host (Link down/up 3 s apart, NCCL "Got async event : port error" then "port
active") with training stepping on at pace; a Lustre OST connection lost then restored within a minute on five
hosts mid-attempt with no failure; an "nfs: server home-nfs01 not responding, still trying" / "... OK" blip on two
hosts in the last attempt; Xid 13 on kx1-g016 (not in the job); the hosts under the flapping switch (symptoms of
the switch); the first hosts to report the Lustre outage and rank 0's host whose ranks raised the write error.

Ledger (truth.json expected_ledger, GPU-hours = 96 x seconds / 3600), the conventions of campaign1.py/campaign2.py:
  startup    = attempt start (sacct Start) -> first training step start ("[before the start of training step]")
  productive = kept steps (step <= last durable checkpoint of an ended attempt; all steps of the last attempt)
  checkpoint = completed saves, plus the tail after the final save
  recompute  = end of the last durable save of the attempt (or its first step start) -> root event
  hang       = root event -> attempt exit (sacct End). Root events: the first Link down of the switch / HCA (inside
               a step), the Xid 79 (inside a step), the start of the save that never completed, the end of the
               job's last completed step (hung rank).
  restart    = attempt exit -> next attempt start (for the requeue: sacct End of the NODE_FAIL row -> Start of
               the requeued row)
  straggler = slowdown = data_stall = idle = 0

Formats (looked up with the search tools; facts and formats, text written anew):
  * NCCL 2.18: "host:pid:tid [d] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer
    10.x<port> with error 12, opcode 0, len 0, vendor err 129 (Recv)" and the "NCCL INFO transport/net.cc:1134
    -> 6", "proxy.cc:679 -> 6", "proxy.cc:858 -> 6 [Proxy Thread]" chain (stas00/ml-engineering network debug
    page; the 2.18 WARN format in net_ib.cc quoted by several public notes); "transport/net_ib.cc:93 NCCL WARN
    NET/IB : Got async event : client reregistration" (deepspeedai/DeepSpeedExamples #310), "port error" /
    "port active" are libibverbs' ibv_event_type_str names (open-mpi/ompi #180 on IBV_EVENT_PORT_ERR); NCCL 2.18
    not reporting IB async errors to PyTorch, which then hangs until the watchdog: facebookresearch/nccl PR #53,
    NVIDIA/nccl #1071. Init lines as in campaign1.py.
  * PyTorch 2.1: "[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout:
    WorkNCCL(SeqNum=..., OpType=ALLREDUCE, NumelIn=..., NumelOut=..., Timeout(ms)=600000) ran for 600542
    milliseconds before timing out.", "[E ProcessGroupNCCL.cpp:489] Some NCCL operations have failed or timed
    out. ...", "[E ProcessGroupNCCL.cpp:495] To avoid data inconsistency, we are taking the entire process down."
    (vllm-project/vllm #3071, #3338 and other public pastes; the lines carry no timestamp); torchelastic
    "[2025-08-14 22:41:30,275] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -6)
    local_rank: 0 (pid: ...) of binary: ...", "... multiprocessing.api: [WARNING] Sending process N closing signal
    SIGTERM", "torch.distributed.run: [WARNING] ****..." and the ChildFailedError block (public issue pastes with
    torch 2.1/2.2); "Unable to shutdown process ... via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL".
  * torch.save on a failed write: "RuntimeError: [enforce fail at inline_container.cc:858] . PytorchStreamWriter
    failed writing file data/37: file write failed" followed by "RuntimeError: [enforce fail at
    inline_container.cc:664] . unexpected pos ... vs ..." (several public notes).
  * Lustre client: "Lustre: 3315:0:(client.c:2116:ptlrpc_expire_one_request()) @@@ Request sent has timed out for
    slow reply: [sent N/real N]  req@... x.../t0(0) o4->FS-OSTxxxx-osc-...@NID:6/4 lens 488/448 e 0 to 1 dl N ref
    2 fl Rpc:XQr/0/ffffffff rc 0/-1", "Lustre: FS-OSTxxxx-osc-ffff...: Connection to FS-OSTxxxx (at NID) was lost;
    in progress operations using this service will wait for recovery to complete", "LustreError: 11-0: ...:
    operation ost_write to node NID failed: rc = -107", "Lustre: ...: Connection restored to ... (at NID)"
    (aws/aws-parallelcluster #2701, jade-hpc-gpu #14, whamcloud/integrated-manager-for-lustre #230),
    "LustreError: 167-0: ...: This client was evicted by FS-OSTxxxx; in progress operations using this service
    will fail." (Lustre client eviction message).
  * mlx5: "mlx5_core 0000:5e:00.0 ibp94s0: Link down" / "Link up" (imbue-ai/cluster-health dmesg whitelist,
    Linux mlx5e carrier messages); NVRM Xid 79 / Xid 13 lines and hung-task reports as in campaign1/2.py;
    "nfs: server X not responding, still trying" / "nfs: server X OK" (leptonai/gpud).
  * rsyslog RSYSLOG_FileFormat "2026-12-01T10:00:00.123456+00:00 host kernel: [ 1234.567890] msg"; dmesg -T.
  * Slurm: slurmctld "requeue job JobId=N due to failure of node X", "Requeuing JobId=N" (aws/aws-parallelcluster
    #5670), "Killing JobId=N on failed node X", "error: Nodes X not responding", "_job_complete: JobId=N
    WEXITSTATUS 1"; slurmstepd "*** JOB N ON h CANCELLED AT t DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS
    ***"; sacct -P; srun "error: h: task i: Exited with exit code 1", "Terminating StepId=N.0".
  * Megatron-LM: " [%Y-%m-%d %H:%M:%S] iteration N/M | consumed samples: ... | elapsed time per iteration (ms): ...
    | learning rate: ... | global batch size: ... | lm loss: ... | loss scale: ... | grad norm: ... | number of
    skipped iterations: ... | number of nan iterations: ... |", "saving checkpoint at iteration N to DIR in torch
    format", "  successfully saved checkpoint from iteration N to DIR [ t 1/8, p 1/2 ]", " loading checkpoint
    from DIR at iteration N", "  successfully loaded checkpoint from DIR [ t 1/8, p 1/2 ] at iteration N",
    "[before the start of training step] datetime: ...", "[after training is done] datetime: ..." (as in
    campaign1.py's references).
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

RUN = "fabric-34b"
CLUSTER, PROVIDER = "kx-1", "kestrel"
GPN = 8
HOSTS = [f"kx1-g{i:03d}" for i in range(1, 17)]
INITIAL, SPARES, OUTSIDER = HOSTS[:12], HOSTS[12:15], HOSTS[15]
GPUS = 12 * GPN
TP, PP, DP = 8, 2, 6
GBS, SEQ = 192, 4096
TOKENS_PER_STEP = GBS * SEQ                 # 786432
FLOPS_PER_TOKEN = 2.233e11                  # 6 * 34e9 + 12 * 48 * 8192 * 4096
PEAK = 989.4e12
BASE_STEP = 4.40
JITTER = 0.004
SAVE_INTERVAL = 400
LOG_INTERVAL = 10
WATCHDOG_S = 600
STEPS_JSONL = 300
T0 = datetime(2026, 12, 1, 6, 30, 0, tzinfo=UTC).timestamp()
NCCL_VERSION = "2.18.5+cuda12.2"
CKPT = "/lustre/fsx/ckpt/fabric-34b"
KERNEL = "5.15.0-1053-nvidia"
DRIVER = "535.161.08"
BUSIDS = ["18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000"]
NIC_DEV = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"]
NIC_IF = ["ibp24s0", "ibp41s0", "ibp58s0", "ibp94s0", "ibp155s0", "ibp172s0", "ibp189s0", "ibp220s0"]
NIC_PCI = ["0000:18:00.0", "0000:29:00.0", "0000:3a:00.0", "0000:5e:00.0",
           "0000:9b:00.0", "0000:ac:00.0", "0000:bd:00.0", "0000:dc:00.0"]
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]
MODE = {"switch": "network", "hca": "network", "lustre": "filesystem_io", "xid79": "gpu_fell_off_bus",
        "hang": "nccl_timeout"}


def ip(h: str) -> str:
    return f"10.31.4.{40 + int(h[-3:])}"


def pci(busid: str) -> str:
    return f"0000:{busid[:2]}:00"


# ----------------------------------------------------------------------------- time formats
def _split(t: float) -> tuple[datetime, int]:
    s, us = divmod(int(round(t * 1_000_000)), 1_000_000)
    return datetime.fromtimestamp(s, UTC), us


def iso_z(t: float) -> str:
    d, us = _split(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{us // 1000:03d}Z"


def date_cmd(t: float) -> str:
    d, _ = _split(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def py_ts(t: float) -> str:                  # python logging asctime in brackets (torch 2.1 elastic)
    d, us = _split(t)
    return f"[{d:%Y-%m-%d %H:%M:%S},{us // 1000:03d}]"


def meg_ts(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%d %H:%M:%S")


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
    out, start, prev = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
        if n is not None:
            start = prev = n
    return f"{prefix}[{','.join(out)}]" if len(nums) > 1 else hosts[0]


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
        self.failed_save: tuple[int, float] | None = None
        self.R: float | None = None
        self.E: float | None = None


def simulate(a: Attempt, rng: random.Random, train_iters: int) -> bool:
    a.steps, a.saves, a.failed_save = [], [], None
    t, n = a.F, a.load
    while True:
        if a.kind == "complete" and n >= train_iters:
            break
        n1 = n + 1
        dur = BASE_STEP * (1.0 + rng.uniform(-JITTER, JITTER))
        ran = t - a.F
        if a.kind in ("switch", "hca", "xid79") and ran + dur > a.run_for:
            a.R = round(t + a.frac * dur, 3)          # the fault lands inside a step
            a.E = float(math.ceil(a.R + a.tail))
            return True
        if a.kind == "hang" and ran > a.run_for:
            if n % SAVE_INTERVAL == 0 or n % LOG_INTERVAL == 0:
                return False                           # keep the hang off a save and off a logged step
            a.R = t                                    # end of the job's last completed step
            a.E = float(math.ceil(a.R + a.tail))
            return True
        a.steps.append((n1, t, dur))
        t += dur
        n = n1
        if n % SAVE_INTERVAL == 0:
            if a.kind == "lustre" and t - a.F >= a.run_for:
                a.failed_save = (n, t)
                a.R = t
                a.E = float(math.ceil(a.R + a.tail))
                return True
            c = round(rng.uniform(38.0, 66.0), 2)
            a.saves.append((n, t, c))
            t += c
    a.E = float(math.ceil(t + 3.5))
    return True


def build(seed: int):
    rng = random.Random(f"{seed}-fabric-timeline")
    kinds = ["switch", "hca", "lustre", "xid79", "hang"]
    rng.shuffle(kinds)
    g = rng.choice([1, 2])
    leaf = INITIAL[4 * g: 4 * g + 4]
    rail = rng.randrange(GPN)
    pool = [h for h in INITIAL[1:] if h not in leaf]
    rng.shuffle(pool)
    roots = {"hca": pool[0], "xid79": pool[1], "hang": pool[2]}
    quiet = sorted(pool[3:])
    facts = {"leaf": leaf, "rail": rail, "roots": roots, "quiet": quiet,
             "hca_port": rng.randrange(GPN), "xid_gpu": rng.randrange(GPN), "hang_gpu": rng.randrange(GPN),
             "ost": f"fsx-OST{rng.randrange(4, 16):04x}", "ost_nid": f"10.50.0.{rng.randint(11, 28)}@o2ib",
             "blip_ost": f"fsx-OST{rng.randrange(0, 4):04x}", "blip_nid": f"10.50.0.{rng.randint(31, 38)}@o2ib"}
    tails = {"switch": (WATCHDOG_S + 9, WATCHDOG_S + 16), "hca": (WATCHDOG_S + 8, WATCHDOG_S + 14),
             "lustre": (262, 290), "xid79": (WATCHDOG_S + 35, WATCHDOG_S + 55), "hang": (WATCHDOG_S + 33, WATCHDOG_S + 40)}
    gaps = {"switch": (1500, 2400), "hca": (1000, 1700), "lustre": (2600, 4000), "xid79": (420, 720),
            "hang": (900, 1500)}
    nodes = list(INITIAL)
    spares = list(SPARES)
    job, restart = 730412, 0
    attempts: list[Attempt] = []
    t_start, load = T0, 0
    train_iters = 10 ** 9
    for k, kind in enumerate(kinds + ["complete"], start=1):
        a = Attempt(k=k, kind=kind, mode=MODE.get(kind), job=job, restart=restart, nodes=sorted(nodes), load=load,
                    root_host=roots.get(kind), startup=rng.randint(190, 330), frac=rng.uniform(0.25, 0.8),
                    run_for=rng.uniform(2.2, 4.6) * 3600, tail=rng.uniform(*tails[kind]) if kind in tails else 0.0)
        a.S = float(t_start)
        tries = 0
        while True:
            a.F = a.S + a.startup
            if simulate(a, random.Random(f"{seed}-fabric-steps-{k}-{tries}"), train_iters):
                break
            tries += 1
            a.run_for += 37.0
        a.last_ckpt = a.saves[-1][0] if a.saves else a.load
        attempts.append(a)
        if kind == "complete":
            break
        load = a.last_ckpt
        t_start = math.ceil(a.E + rng.uniform(*gaps[kind]))
        if kind in ("hca", "xid79", "hang"):
            nodes = [spares.pop(0) if h == a.root_host else h for h in nodes]
        if kind == "xid79":
            restart += 1                   # Slurm requeues the same job
        else:
            job += rng.randint(3, 40)
            restart = 0
        if k == len(kinds):               # the last attempt runs to a round number of iterations
            train_iters = int(math.ceil((load + rng.randint(2400, 3200)) / SAVE_INTERVAL) * SAVE_INTERVAL)
    for a in attempts:
        a.train_iters = train_iters
    return attempts, facts


def ledger(attempts: list[Attempt]):
    cats = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute",
                          "hang", "restart", "startup", "idle"], 0.0)
    per = []
    for i, a in enumerate(attempts):
        cats["startup"] += a.F - a.S
        kept = a.last_ckpt if a.kind != "complete" else 10 ** 9
        cats["productive"] += sum(d for n, _, d in a.steps if n <= kept)
        cats["checkpoint"] += sum(c for _, _, c in a.saves)
        if a.kind == "complete":
            cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        base = (a.saves[-1][1] + a.saves[-1][2]) if a.saves else a.F
        nxt = attempts[i + 1]
        d = dict(recompute=a.R - base, hang=a.E - a.R, restart=nxt.S - a.E, startup=nxt.F - nxt.S)
        for key in ("recompute", "hang", "restart"):
            cats[key] += d[key]
        per.append(d)
    total = attempts[-1].E - attempts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per])


# ----------------------------------------------------------------------------- fleet
class Fleet:
    def __init__(self, seed: int):
        rng = random.Random(f"{seed}-fabric-fleet")
        self.skew = {h: round(rng.uniform(-1.5, 1.5), 3) for h in HOSTS}
        self.boot = {h: T0 - rng.randint(2 * 86400, 6 * 86400) for h in HOSTS}
        self.uuid = {}
        for h in HOSTS:
            for g in range(GPN):
                x = f"{rng.getrandbits(128):032x}"
                self.uuid[h, g] = f"GPU-{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"


class Pids:
    def __init__(self, seed: int, a: Attempt):
        rng = random.Random(f"{seed}-fabric-pids-{a.k}")
        self.agent, self.worker, self.tid, self.comm = {}, {}, {}, {}
        for h in a.nodes:
            ag = rng.randint(30_000, 1_900_000)
            self.agent[h] = ag
            for d in range(GPN):
                self.worker[h, d] = ag + 9 + d
                self.tid[h, d] = ag + 9 + d + rng.randint(300, 2500)
                self.comm[h, d] = "0x%x" % (0x5581c0000000 + (rng.getrandbits(30) << 4))
        self.comm_id = f"0x{rng.getrandbits(64):016x}"


def layout(nodes: list[str]):
    return [(i * GPN + d, h, d) for i, h in enumerate(nodes) for d in range(GPN)]


# ----------------------------------------------------------------------------- training log
def lr_at(n: int, total: int) -> float:
    if n < 1000:
        return 3.0e-4 * n / 1000
    p = (n - 1000) / max(1, total - 1000)
    return 3.0e-5 + 0.5 * (3.0e-4 - 3.0e-5) * (1 + math.cos(math.pi * min(1.0, p)))


def loss_at(n: int, rng: random.Random) -> float:
    return 1.85 + 8.7 * math.exp(-n / 420.0) + 0.55 * math.exp(-n / 7000.0) + rng.gauss(0, 0.013)


def elastic(t: float, skew: float, logger: str, level: str, msg: str) -> str:
    return f"{py_ts(t + skew)} {logger}: [{level}] {msg}"


TORCHRUN_TB = [
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 33, in <module>',
    "    sys.exit(load_entry_point('torch==2.1.2', 'console_scripts', 'torchrun')())",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 346, in wrapper',
    "    return f(*args, **kwargs)",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", line 806, in main',
    "    run(args)",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", line 797, in run',
    "    elastic_launch(",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 134, in __call__',
    "    return launch_agent(self._config, self._entrypoint, list(args))",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 264, in launch_agent',
    "    raise ChildFailedError(",
]

WD_FRAMES = [
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f{a}c3a617 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)",
    "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x1c5 (0x7f{a}d1b2e5 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #2: c10d::ProcessGroupNCCL::workCleanupLoop() + 0x24b (0x7f{a}d1edfb in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x78 (0x7f{a}d1f108 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #4: <unknown function> + 0xdc253 (0x7f{a}1c1253 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
    "frame #5: <unknown function> + 0x94ac3 (0x7f{a}5bfac3 in /lib/x86_64-linux-gnu/libc.so.6)",
    "frame #6: <unknown function> + 0x126850 (0x7f{a}651850 in /lib/x86_64-linux-gnu/libc.so.6)",
]


def watchdog_block(r: int, seq: int, rng: random.Random, full: bool) -> list[str]:
    numel = rng.choice([1, 8192, 50331648, 201326592])
    ran = WATCHDOG_S * 1000 + rng.randint(15, 900)
    wd = (f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, "
          f"NumelIn={numel}, NumelOut={numel}, Timeout(ms)={WATCHDOG_S * 1000}) ran for {ran} milliseconds before "
          f"timing out.")
    out = [f"[E ProcessGroupNCCL.cpp:475] {wd}",
           "[E ProcessGroupNCCL.cpp:489] Some NCCL operations have failed or timed out. Due to the asynchronous "
           "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
           "[E ProcessGroupNCCL.cpp:495] To avoid data inconsistency, we are taking the entire process down."]
    if full:
        msg = f"[Rank {r}] NCCL watchdog thread terminated with exception: {wd}"
        a = f"{rng.getrandbits(16):04x}"
        out += [f"[E ProcessGroupNCCL.cpp:916] {msg}",
                "terminate called after throwing an instance of 'std::runtime_error'",
                f"  what():  {msg}",
                "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:477 "
                "(most recent call first):"] + [f.replace("{a}", a) for f in WD_FRAMES] + [""]
    return out


def child_failed(t: float, skew: float, host: str, entries, root) -> list[str]:
    stamp = _split(t + skew)[0].strftime("%Y-%m-%d_%H:%M:%S")
    out = TORCHRUN_TB + ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
                         "=" * 54, "/workspace/Megatron-LM/pretrain_gpt.py FAILED", "-" * 54, "Failures:"]

    def entry(i, e):
        r, lr, ec, pid, tb = e
        return [f"[{i}]:", f"  time      : {stamp}", f"  host      : {host}", f"  rank      : {r} (local_rank: {lr})",
                f"  exitcode  : {ec} (pid: {pid})", "  error_file: <N/A>", f"  traceback : {tb}"]

    others = [e for e in entries if e is not root]
    if not others:
        out.append("  <NO_OTHER_FAILURES>")
    for i, e in enumerate(others, start=1):
        out += entry(i, e)
    return out + ["-" * 54, "Root Cause (first observed failure):"] + entry(0, root) + ["=" * 54]


SAVE_TB = [
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/serialization.py", line 619, in save',
    "    _save(obj, opened_zipfile, pickle_module, pickle_protocol, _disable_byteorder_record)",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/serialization.py", line 853, in _save',
    "    zip_file.write_record(name, storage.data_ptr(), num_bytes)",
    "RuntimeError: [enforce fail at inline_container.cc:858] . PytorchStreamWriter failed writing file data/{f}: "
    "file write failed",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    '  File "/workspace/Megatron-LM/pretrain_gpt.py", line 239, in <module>',
    "    pretrain(train_valid_test_datasets_provider,",
    '  File "/workspace/Megatron-LM/megatron/training/training.py", line 310, in pretrain',
    "    iteration, num_floating_point_operations_so_far = train(",
    '  File "/workspace/Megatron-LM/megatron/training/training.py", line 1234, in train',
    "    save_checkpoint_and_time(iteration, model, optimizer,",
    '  File "/workspace/Megatron-LM/megatron/training/training.py", line 1003, in save_checkpoint_and_time',
    "    save_checkpoint(iteration, model, optimizer, opt_param_scheduler,",
    '  File "/workspace/Megatron-LM/megatron/training/checkpointing.py", line 392, in save_checkpoint',
    "    torch.save(state_dict, checkpoint_name)",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/serialization.py", line 618, in save',
    "    with _open_zipfile_writer(f) as opened_zipfile:",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/serialization.py", line 466, in __exit__',
    "    self.file_like.write_end_of_file()",
    "RuntimeError: [enforce fail at inline_container.cc:664] . unexpected pos {p} vs {q}",
]


def train_log(a: Attempt, fleet: Fleet, pids: Pids, seed: int, facts: dict) -> Sink:
    rng = random.Random(f"{seed}-fabric-trainlog-{a.k}")
    L = Sink()
    h0 = a.nodes[0]
    sk0 = fleet.skew[h0]
    S, F = a.S, a.F
    ti = a.train_iters

    def M(t: float, msg: str) -> None:                   # rank 0's print, rank 0's clock for datetimes
        L.add(t, msg)

    M(S, f"START TIME: {date_cmd(S + sk0)}")
    M(S + 0.05, f"+ srun --kill-on-bad-exit=1 --ntasks-per-node=1 torchrun --nnodes={len(a.nodes)} --nproc_per_node={GPN} "
                f"--rdzv_id={a.job} --rdzv_backend=c10d --rdzv_endpoint={h0}:29500 /workspace/Megatron-LM/pretrain_gpt.py "
                f"--tensor-model-parallel-size {TP} --pipeline-model-parallel-size {PP} --num-layers 48 --hidden-size 8192 "
                f"--num-attention-heads 64 --seq-length {SEQ} --micro-batch-size 1 --global-batch-size {GBS} "
                f"--train-iters {ti} --save-interval {SAVE_INTERVAL} --log-interval {LOG_INTERVAL} --save {CKPT} --load {CKPT} "
                f"--ckpt-format torch --use-distributed-optimizer --bf16")
    t = S + 14.0
    for i, h in enumerate(a.nodes):
        tt = t + 0.07 * i
        banner = ["", "*" * 41, "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
                  "to avoid your system being overloaded, please further tune the variable for optimal performance in "
                  "your application as needed. ", "*" * 41]
        L.extend(tt, [elastic(tt, fleet.skew[h], "torch.distributed.run", "WARNING", m) for m in banner])
    t1 = S + 31.0
    M(t1, f"using world size: {GPUS}, data-parallel size: {DP}, context-parallel size: 1 tensor-model-parallel size: "
          f"{TP}, pipeline-model-parallel size: {PP} ")
    M(t1 + 0.1, "> initializing torch distributed ...")
    M(t1 + 6, f"> initialized tensor model parallel with size {TP}")
    M(t1 + 6, f"> initialized pipeline model parallel with size {PP}")
    ti_init = S + 0.45 * (F - S)
    M(ti_init, f"[after megatron is initialized] datetime: {meg_ts(ti_init + sk0)} ")
    M(ti_init + 0.4, "building GPT model ...")
    M(ti_init + 3.0, " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 2143813632")
    if a.load == 0:
        M(ti_init + 12, f"WARNING: could not find the metadata file {CKPT}/latest_checkpointed_iteration.txt ")
        M(ti_init + 12, "    will not load any checkpoints and will start from random")
    else:
        tl = ti_init + 14
        M(tl, f" loading checkpoint from {CKPT} at iteration {a.load}")
        M(F - 24.0, f"  successfully loaded checkpoint from {CKPT} [ t 1/{TP}, p 1/{PP} ] at iteration {a.load}")
    M(F - 22.0, f"[after model, optimizer, and learning rate scheduler are built] datetime: {meg_ts(F - 22.0 + sk0)} ")
    M(F - 21.0, "> building train, validation, and test datasets ...")
    M(F - 3.0, f"[after dataloaders are built] datetime: {meg_ts(F - 3.0 + sk0)} ")
    M(F - 2.5, "done with setup ...")
    M(F - 2.0, "training ...")
    M(F, f"[before the start of training step] datetime: {meg_ts(F + sk0)} ")
    lrng = random.Random(f"{seed}-fabric-loss-{a.k}")
    for j, (n, ts, dur) in enumerate(a.steps):
        if n % LOG_INTERVAL:
            continue
        win = [d for _, _, d in a.steps[max(0, j - LOG_INTERVAL + 1): j + 1]]
        end = ts + dur
        gn = 0.19 + 2.6 * math.exp(-n / 700.0) + abs(lrng.gauss(0, 0.02))
        M(end, f" [{meg_ts(end + sk0)}] iteration {n:8d}/{ti:8d} | consumed samples: {n * GBS:12d} | elapsed time per "
               f"iteration (ms): {1000 * sum(win) / len(win):.1f} | learning rate: {lr_at(n, ti):.6E} | global batch "
               f"size: {GBS:5d} | lm loss: {loss_at(n, lrng):.6E} | loss scale: 1.0 | grad norm: {gn:.3f} | number "
               f"of skipped iterations:   0 | number of nan iterations:   0 |")
    for n, ts, c in a.saves:
        M(ts + 0.002, f"saving checkpoint at iteration {n:7d} to {CKPT} in torch format")
        M(ts + c - 0.01, f"  successfully saved checkpoint from iteration {n:7d} to {CKPT} [ t 1/{TP}, p 1/{PP} ]")
        L.extend(ts + c - 0.005, ["(min, max) time across ranks (ms):",
                                  f"    {'save-checkpoint '.ljust(48, '.')}: ({c * 1000 - rng.uniform(4, 30):.2f}, "
                                  f"{c * 1000:.2f})"])
    end_of_attempt(a, L, fleet, pids, rng, facts)
    return L


def torchrun_fail(a, L, fleet, pids, h, t, ec_of, rng, stuck: int | None = None):
    """torchrun on host h: the local ranks died (exitcode ec_of(d)); it reports the first one."""
    i = a.nodes.index(h)
    sk = fleet.skew[h]
    first = min(d for d in range(GPN) if d != stuck)
    for d in range(GPN):
        if d != first:
            L.add(t - 0.3, elastic(t - 0.3, sk, "torch.distributed.elastic.multiprocessing.api", "WARNING",
                                   f"Sending process {pids.worker[h, d]} closing signal SIGTERM"))
    if stuck is not None:
        L.add(t - 0.3 + 30.0, elastic(t - 0.3 + 30.0, sk, "torch.distributed.elastic.multiprocessing.api", "WARNING",
                                      f"Unable to shutdown process {pids.worker[h, stuck]} via Signals.SIGTERM, "
                                      f"forcefully exiting via Signals.SIGKILL"))
        t += 30.0
    L.add(t, elastic(t, sk, "torch.distributed.elastic.multiprocessing.api", "ERROR",
                     f"failed (exitcode: {ec_of(first)}) local_rank: {first} (pid: {pids.worker[h, first]}) of binary: "
                     f"/usr/bin/python"))
    ents = [(i * GPN + d, d, ec_of(d) if d == first else (-9 if d == stuck else -15), pids.worker[h, d],
             f"Signal {6 if ec_of(d) == -6 and d == first else 15} "
             f"({'SIGABRT' if ec_of(d) == -6 and d == first else 'SIGTERM'}) received by PID {pids.worker[h, d]}"
             if d != stuck else f"Signal 9 (SIGKILL) received by PID {pids.worker[h, d]}") for d in range(GPN)]
    if ec_of(first) == 1:
        ents[first] = (i * GPN + first, first, 1, pids.worker[h, first],
                       "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
    L.extend(t + 0.01, child_failed(t, sk, h, ents, ents[first]))


def watchdog_end(a, L, fleet, pids, rng, skip_hosts=(), skip_rank=None):
    """Every live rank's watchdog fires ~WATCHDOG_S after the stuck collective (started just before R)."""
    seq = 90_000 + rng.randint(0, 40_000)
    tw0 = a.R + WATCHDOG_S - rng.uniform(1.0, 3.0)
    for r, h, _d in layout(a.nodes):
        if h in skip_hosts or r == skip_rank:
            continue
        tw = tw0 + rng.uniform(0.0, 1.2)
        L.extend(tw, watchdog_block(r, seq, rng, full=(r % 23 == 4)))
    return tw0


def srun_tail(a, L, t, failed_hosts, rng):
    for h in failed_hosts:
        L.add(t, f"srun: error: {h}: task {a.nodes.index(h)}: Exited with exit code 1")
    L.add(t + 0.2, f"srun: Terminating StepId={a.job}.0")
    L.add(t + 0.3, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(t + 0.3)} ***")
    rest = [h for h in a.nodes if h not in failed_hosts]
    for j, h in enumerate(rest):
        L.add(a.E - 1.6 + 0.01 * j, f"srun: error: {h}: task {a.nodes.index(h)}: Terminated")
    if rest:
        L.add(a.E - 1.0, f"srun: Force Terminated StepId={a.job}.0")


def end_of_attempt(a, L, fleet, pids, rng, facts):
    if a.kind in ("switch", "hca"):
        tw0 = watchdog_end(a, L, fleet, pids, rng)
        tf = tw0 + 3.0
        for j, h in enumerate(a.nodes):
            torchrun_fail(a, L, fleet, pids, h, tf + 0.05 * j, lambda d: -6, rng)
        srun_tail(a, L, tf + 1.4, a.nodes, rng)
    elif a.kind == "hang":
        hh, gg = a.root_host, facts["hang_gpu"]
        stuck = a.nodes.index(hh) * GPN + gg
        tw0 = watchdog_end(a, L, fleet, pids, rng, skip_rank=stuck)
        tf = tw0 + 3.0
        for j, h in enumerate(a.nodes):
            torchrun_fail(a, L, fleet, pids, h, tf + 0.05 * j, lambda d: -6, rng, stuck=gg if h == hh else None)
        srun_tail(a, L, tf + 31.5, a.nodes, rng)
    elif a.kind == "xid79":
        dead = a.root_host
        tw0 = watchdog_end(a, L, fleet, pids, rng, skip_hosts=(dead,))
        tf = tw0 + 3.0
        live = [h for h in a.nodes if h != dead]
        for j, h in enumerate(live):
            torchrun_fail(a, L, fleet, pids, h, tf + 0.05 * j, lambda d: -6, rng)
        for h in live:
            L.add(tf + 1.5, f"srun: error: {h}: task {a.nodes.index(h)}: Exited with exit code 1")
        L.add(a.E - 1.2, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(a.E - 1.2)} DUE "
                         f"TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***")
        L.add(a.E - 1.1, f"srun: error: Node failure on {dead}")
        L.add(a.E - 0.9, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    elif a.kind == "lustre":
        n, ts = a.failed_save
        L.add(ts + 0.002, f"saving checkpoint at iteration {n:7d} to {CKPT} in torch format")
        te = a.R + a.tail - 12.0                        # after the client was evicted (see kernel_logs)
        writers = [0, 8, 3 * GPN + 1, 7 * GPN + 5]     # a few of the ranks writing shards
        for r in writers:
            body = [x.replace("{f}", str(rng.randint(3, 240))).replace("{p}", str(p := rng.randint(10**9, 4 * 10**9)))
                    .replace("{q}", str(p - 112)) for x in SAVE_TB]
            L.extend(te + 0.05 * writers.index(r), body)
        tf = te + 2.0
        wr_hosts = sorted({a.nodes[r // GPN] for r in writers}, key=a.nodes.index)
        for j, h in enumerate(wr_hosts):
            torchrun_fail(a, L, fleet, pids, h, tf + 0.1 * j, lambda d: 1, rng)
        srun_tail(a, L, tf + 1.2, wr_hosts, rng)
    else:
        L.add(a.E - 2.0, f"[after training is done] datetime: {meg_ts(a.E - 2.0 + fleet.skew[a.nodes[0]])} ")
        L.add(a.E - 1.0, f"END TIME: {date_cmd(a.E - 1.0 + fleet.skew[a.nodes[0]])}")


# ----------------------------------------------------------------------------- NCCL logs
def nccl_log(a: Attempt, h: str, pids: Pids, fleet: Fleet, seed: int, facts: dict, decoy: dict) -> bytes:
    rng = random.Random(f"{seed}-fabric-nccl-{a.k}-{h}")
    i = a.nodes.index(h)
    nn = len(a.nodes)
    stages = []
    for d in range(GPN):
        r = i * GPN + d
        w, it = pids.worker[h, d], pids.tid[h, d]
        p0 = f"{h}:{w}:{w} [{d}] NCCL INFO "
        p = f"{h}:{w}:{it} [{d}] NCCL INFO "
        c = pids.comm[h, d]
        st = [p0 + f"Bootstrap : Using ibp24s0:{ip(h)}<0>", p0 + "NET/Plugin : No plugin found (libnccl-net.so), using "
              "internal implementation", p0 + "cudaDriverVersion 12020"]
        if r == 0:
            st.append(f"NCCL version {NCCL_VERSION}")
        st += [p + "NET/IB : Using " + " ".join(f"[{k}]{NIC_DEV[k]}:1/IB" for k in range(GPN)) + f" ; OOB ibp24s0:{ip(h)}<0>",
               p + "Using network IB",
               p + f"comm {c} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} commId {pids.comm_id} - Init START",
               p + f"Channel {d:02d}/0 : {((i - 1) % nn) * GPN + d}[{BUSIDS[d]}] -> {r}[{BUSIDS[d]}] [receive] via NET/IB/{d}/GDRDMA",
               p + f"Channel {d:02d}/0 : {r}[{BUSIDS[d]}] -> {((i + 1) % nn) * GPN + d}[{BUSIDS[d]}] [send] via NET/IB/{d}/GDRDMA",
               p + "Connected all rings", p + "Connected all trees",
               p + f"comm {c} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} commId {pids.comm_id} - Init COMPLETE"]
        for rr, nr in ((d, TP), ((r // TP) % DP, DP)):
            cc = "0x%x" % (0x5581c0000000 + (rng.getrandbits(30) << 4))
            cid = f"0x{rng.getrandbits(64):016x}"
            st += [p + f"comm {cc} rank {rr} nranks {nr} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} commId {cid} - Init START",
                   p + f"comm {cc} rank {rr} nranks {nr} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} commId {cid} - Init COMPLETE"]
        if h in decoy["rereg_hosts"]:
            st.insert(6, f"{h}:{w}:{it + 3} [{d}] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client reregistration")
        stages.append(st)
    lines, cur = [], [0] * GPN
    while any(cur[d] < len(stages[d]) for d in range(GPN)):
        d = rng.randrange(GPN)
        if cur[d] < len(stages[d]):
            lines.append(stages[d][cur[d]])
            cur[d] += 1
    if decoy["bounce"] and decoy["bounce"][0] == a.k and decoy["bounce"][1] == h:
        k = decoy["bounce"][2]
        w, it = pids.worker[h, k], pids.tid[h, k]
        lines += ["", f"{h}:{w}:{it + 3} [{k}] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error",
                  "", f"{h}:{w}:{it + 3} [{k}] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port active"]

    def ib_err(k: int, peer: str, reps: int):
        w, pt = pids.worker[h, k], pids.tid[h, k] + 41
        out = []
        for rep in range(reps):
            kind = "Recv" if rep % 2 == 0 else "Send"
            out += ["", f"{h}:{w}:{pt} [{k}] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer "
                        f"{ip(peer)}<{rng.randint(33000, 60999)}> with error {12 if rep < 2 else 5}, opcode "
                        f"{0 if rep < 2 else 32655}, len 0, vendor err {129 if rep < 2 else 249} ({kind})",
                    f"{h}:{w}:{pt} [{k}] NCCL INFO transport/net.cc:1134 -> 6",
                    f"{h}:{w}:{pt} [{k}] NCCL INFO proxy.cc:679 -> 6",
                    f"{h}:{w}:{pt} [{k}] NCCL INFO proxy.cc:858 -> 6 [Proxy Thread]"]
        return out

    if a.kind == "switch" and h in facts["leaf"]:
        k = facts["rail"]
        peer = a.nodes[(i + 1) % nn]
        lines += ib_err(k, peer, 3)
    if a.kind == "hca" and h == a.root_host:
        k = facts["hca_port"]
        lines += ib_err(k, a.nodes[(i + 1) % nn], 2) + ib_err(k, a.nodes[(i - 1) % nn], 2)
    if a.kind == "complete":
        for d in range(GPN):
            lines.append(f"{h}:{pids.worker[h, d]}:{pids.worker[h, d]} [{d}] NCCL INFO comm {pids.comm[h, d]} rank "
                         f"{i * GPN + d} nranks {GPUS} cudaDev {d} busId {BUSIDS[d]} - Destroy COMPLETE")
    return ("\n".join(lines) + "\n").encode()


# ----------------------------------------------------------------------------- per-rank records
def rank_records(a: Attempt, fleet: Fleet, seed: int, facts: dict) -> dict[int, bytes]:
    last = a.steps[-1][0]
    sel = [s for s in a.steps if s[0] > last - STEPS_JSONL]
    stuck = (a.nodes.index(a.root_host) * GPN + facts["hang_gpu"])
    lrng = random.Random(f"{seed}-fabric-jl-loss")
    losses = {n: round(loss_at(n, lrng), 4) for n, _, _ in sel}
    out = {}
    for r, h, _d in layout(a.nodes):
        rng = random.Random(f"{seed}-fabric-jl-{r}")
        recs = []
        for n, ts, dur in sel:
            if r == stuck and n == last:
                break
            comp = 3.95 * (1 + rng.uniform(-0.004, 0.004))
            data = 0.06 * (1 + rng.uniform(-0.1, 0.1))
            recs.append('{"ts":"%s","rank":%d,"host":"%s","step":%d,"step_s":%.4f,"compute_s":%.4f,"comm_s":%.4f,'
                        '"data_s":%.4f,"tokens":%d,"loss":%.4f}'
                        % (iso_z(ts + dur + fleet.skew[h]), r, h, n, dur, comp, dur - comp - data, data,
                           TOKENS_PER_STEP // GPUS, losses[n]))
        out[r] = ("\n".join(recs) + "\n").encode()
    return out


# ----------------------------------------------------------------------------- kernel logs
NOISE = ["perf: interrupt took too long ({a} > {b}), lowering kernel.perf_event_max_sample_rate to {c}",
         "hrtimer: interrupt took {n} ns", "kauditd_printk_skb: {k} callbacks suppressed",
         "docker0: port 1(veth{v}) entered blocking state", "docker0: port 1(veth{v}) entered forwarding state",
         "IPv6: ADDRCONF(NETDEV_CHANGE): veth{v}: link becomes ready"]


def boot_lines() -> list[tuple[float, str]]:
    out = [(0.0, f"Linux version {KERNEL} (buildd@lcy02-amd64-044) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, GNU ld "
                 f"(GNU Binutils for Ubuntu) 2.38) #54-Ubuntu SMP Fri Apr 12 14:37:40 UTC 2024"),
           (0.0, "DMI: Supermicro AS -8125GS-TNHR/H13DSG-O-CPU, BIOS 1.5 02/02/2024")]
    for k in range(GPN):
        out.append((10.4 + 0.01 * k, f"mlx5_core {NIC_PCI[k]}: firmware version: 28.39.1002"))
        out.append((12.0 + 0.01 * k, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: renamed from ib{k}"))
    out.append((20.1, f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {DRIVER}  Sun Mar 10 20:47:21 UTC 2024"))
    out.append((38.0, "Lustre: Lustre: Build Version: 2.15.4"))
    out.append((39.2, "Lustre: Mounted fsx-client"))
    for k in range(GPN):
        out.append((33.0 + 0.01 * k, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link up"))
    return out


def xid13(p: str, rng: random.Random) -> list[str]:
    gpc, tpc = rng.randint(0, 7), rng.randint(0, 8)
    esr = 0x504730 + 0x800 * gpc
    return [f"NVRM: Xid (PCI:{p}): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC {gpc}, TPC "
            f"{tpc}, SM 0): Out Of Range Address",
            f"NVRM: Xid (PCI:{p}): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x{esr:x}=0xc07000e "
            f"0x{esr + 4:x}=0x20 0x{esr - 8:x}=0x4c1eb72 0x{esr - 4:x}=0x174"]


def lustre_timeout(rng, t_sent: float, ost: str, nid: str, cli: str, op: int = 4) -> str:
    s = int(t_sent)
    return (f"Lustre: {rng.randint(2900, 4200)}:0:(client.c:2310:ptlrpc_expire_one_request()) @@@ Request sent has "
            f"timed out for slow reply: [sent {s}/real {s}]  req@{f'{rng.getrandbits(64):016x}'} "
            f"x{1790000000000000 + rng.getrandbits(40)}/t0(0) o{op}->{ost}-osc-{cli}@{nid}:6/4 lens 488/448 e 0 to 1 "
            f"dl {s + 100} ref 2 fl Rpc:XQr/0/ffffffff rc 0/-1 job:'{RUN}.0'")


def kernel_logs(attempts, fleet: Fleet, pids_of: dict, seed: int, facts: dict, decoy: dict, bundle: Path, info: dict):
    t_end = attempts[-1].E + 1800
    by_kind = {a.kind: a for a in attempts}
    for idx, h in enumerate(HOSTS):
        hr = random.Random(f"{seed}-fabric-kern-{h}")
        boot = fleet.boot[h]
        cli = f"ffff{hr.getrandbits(44):012x}"
        ev = [(boot + dt, m) for dt, m in boot_lines()]
        t = boot + hr.uniform(600, 6000)
        while t < t_end:
            a_ = hr.randint(2501, 6000)
            ev.append((t, hr.choice(NOISE).format(a=a_, b=a_ - 8, c=hr.choice([79500, 63750]), n=hr.randint(9000, 40000),
                                                  k=hr.randint(3, 40), v=f"{hr.getrandbits(28):07x}")))
            t += hr.uniform(2000, 12000)
        a = by_kind["switch"]
        if h in facts["leaf"] and h in a.nodes:
            k = facts["rail"]
            up = a.R + hr.uniform(70, 110)
            ev += [(a.R + hr.uniform(0.0, 0.25), f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link down"),
                   (up, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link up")]
        a = by_kind["hca"]
        if h == a.root_host:
            k = facts["hca_port"]
            for dn, upd in [(0.0, 8.4), (17.9, 31.2), (46.5, 301.7)]:
                ev += [(a.R + dn, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link down"),
                       (a.R + upd, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link up")]
        a = by_kind["lustre"]
        if h in a.nodes:                               # the OST stops answering during the save
            ost, nid = facts["ost"], facts["ost_nid"]
            first = a.R + 100.0 + hr.uniform(0.5, 9.0)
            info.setdefault("lustre_first", []).append((first, h))
            ev += [(first, lustre_timeout(hr, first - 100.0, ost, nid, cli)),
                   (first + 0.001, f"Lustre: {ost}-osc-{cli}: Connection to {ost} (at {nid}) was lost; in progress "
                                   f"operations using this service will wait for recovery to complete"),
                   (first + 40 + hr.uniform(0, 5), f"LustreError: 11-0: {ost}-osc-{cli}: operation ost_connect to node "
                                                   f"{nid} failed: rc = -16"),
                   (a.R + a.tail - 14.0 - hr.uniform(0, 1.5), f"LustreError: 167-0: {ost}-osc-{cli}: This client was "
                                                              f"evicted by {ost}; in progress operations using this "
                                                              f"service will fail."),
                   (a.E + 1400 + hr.uniform(0, 60), f"Lustre: {ost}-osc-{cli}: Connection restored to {ost} (at {nid})")]
            if h in decoy["hung_hosts"]:
                pid = pids_of[a.k].worker[h, hr.randrange(GPN)]
                for j in range(2):
                    tt = a.R + 130 + 121 * j + hr.uniform(0, 2)
                    if tt < a.E:
                        ev += [(tt, f"INFO: task pt_main_thread:{pid} blocked for more than {120 + 121 * j} seconds."),
                               (tt, f"      Tainted: P           OE     {KERNEL} #54-Ubuntu"),
                               (tt, '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.')]
        a = by_kind["xid79"]
        if h == a.root_host:
            g = facts["xid_gpu"]
            p = pci(BUSIDS[g])
            pid = pids_of[a.k].worker[h, g]
            ev = [(t, m) for t, m in ev if t < a.R + 400]
            ev += [(a.R, f"NVRM: GPU at PCI:{p}: {fleet.uuid[h, g]}"),
                   (a.R, f"NVRM: Xid (PCI:{p}): 79, pid={pid}, name=pt_main_thread, GPU has fallen off the bus."),
                   (a.R, f"NVRM: GPU {p}.0: GPU has fallen off the bus."),
                   (a.R + 245, f"INFO: task pt_main_thread:{pid} blocked for more than 241 seconds."),
                   (a.R + 245, f"      Tainted: P           OE     {KERNEL} #54-Ubuntu"),
                   (a.R + 245, '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.')]
            nb = a.E + 1900                               # power-cycled; drained afterwards
            ev += [(nb + dt, m) for dt, m in boot_lines()]
        if decoy["bounce"] and decoy["bounce"][1] == h:
            kk, tb = decoy["bounce"][2], decoy["bounce"][3]
            ev += [(tb, f"mlx5_core {NIC_PCI[kk]} {NIC_IF[kk]}: Link down"),
                   (tb + 3.1, f"mlx5_core {NIC_PCI[kk]} {NIC_IF[kk]}: Link up")]
        if h in decoy["blip_hosts"]:
            tb = decoy["blip_ts"] + hr.uniform(0, 4)
            ost, nid = facts["blip_ost"], facts["blip_nid"]
            ev += [(tb, f"Lustre: {ost}-osc-{cli}: Connection to {ost} (at {nid}) was lost; in progress operations "
                        f"using this service will wait for recovery to complete"),
                   (tb + hr.uniform(30, 55), f"Lustre: {ost}-osc-{cli}: Connection restored to {ost} (at {nid})")]
        if h in decoy["nfs_hosts"]:
            tb = decoy["nfs_ts"] + hr.uniform(0, 2)
            ev += [(tb, "nfs: server home-nfs01 not responding, still trying"),
                   (tb + 0.4, "nfs: server home-nfs01 not responding, still trying"),
                   (tb + hr.uniform(20, 40), "nfs: server home-nfs01 OK")]
        if h == OUTSIDER:
            ev += [(decoy["xid13_ts"], m) for m in xid13(pci(BUSIDS[5]), hr)]
        sk = fleet.skew[h]
        evs = sorted(ev, key=lambda x: x[0])
        rebooted = by_kind["xid79"].root_host == h
        nb = by_kind["xid79"].E + 1900 if rebooted else None
        out = []
        for t, m in evs:
            tt = t + sk
            b = nb if (nb is not None and t >= nb) else boot
            if idx % 2 == 0:
                d, us = _split(tt)
                out.append(f"{d:%Y-%m-%dT%H:%M:%S}.{us:06d}+00:00 {h} kernel: [{tt - b:12.6f}] {m}")
            else:
                d, _ = _split(tt)
                out.append(f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}] {m}")
        name = "kern.log" if idx % 2 == 0 else "dmesg-T.txt"
        write_file(bundle / "nodes" / h / name, ("\n".join(out) + "\n").encode())


# ----------------------------------------------------------------------------- scheduler
def scheduler_files(attempts, facts, decoy, bundle: Path, seed: int):
    rng = random.Random(f"{seed}-fabric-sched")
    L = Sink()

    def add(t: float, msg: str) -> None:
        L.add(t, f"{ctld_ts(t)} {msg}")

    rows = []
    hdr = "JobID|JobName|User|Partition|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"
    submit_of = {}
    for a in attempts:
        hl = hostlist(a.nodes)
        cpus = 192 * len(a.nodes)
        if a.restart:                           # a requeued job is submitted again when it is requeued
            submit_of[a.job] = attempts[a.k - 2].E - 1.2
        else:
            submit_of[a.job] = a.S - rng.randint(4, 60)
            add(submit_of[a.job] + 0.2, f"_slurm_rpc_submit_batch_job: JobId={a.job} InitPrio=10{rng.randint(100, 999)} "
                                        f"usec={rng.randint(300, 900)}")
        add(a.S + 0.01, f"sched: Allocate JobId={a.job} NodeList={hl} #CPUs={cpus} Partition=pretrain")
        end = a.E + rng.uniform(0.002, 0.3)
        if a.kind == "xid79":
            dead = a.root_host
            add(a.R + 330.4, f"error: Nodes {dead} not responding")
            add(a.E - 1.4, f"error: Nodes {dead} not responding, setting DOWN")
            add(a.E - 1.3, f"Killing JobId={a.job} on failed node {dead}")
            add(a.E - 1.25, f"requeue job JobId={a.job} due to failure of node {dead}")
            add(a.E - 1.2, f"Requeuing JobId={a.job}")
            add(a.E + 2400.1, f"update_node: node {dead} reason set to: xid79 gpu{facts['xid_gpu']} fell off bus")
            add(a.E + 2400.2, f"update_node: node {dead} state set to DRAINED")
            state, ec, steps = "NODE_FAIL", "0:0", [("batch", "CANCELLED", "0:15"), ("0", "CANCELLED", "0:9")]
        elif a.kind == "complete":
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 0")
            state, ec, steps = "COMPLETED", "0:0", [("batch", "COMPLETED", "0:0"), ("0", "COMPLETED", "0:0")]
        else:
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
            state, ec, steps = "FAILED", "1:0", [("batch", "FAILED", "1:0"), ("0", "FAILED", "1:0")]
            if a.kind in ("hca", "hang"):
                why = "ib port flapping" if a.kind == "hca" else "hung rank, investigating"
                add(a.E + 900.3, f"update_node: node {a.root_host} reason set to: {why}")
                add(a.E + 900.4, f"update_node: node {a.root_host} state set to DRAINED")
        if a.kind != "xid79":
            add(end + 0.01, f"_job_complete: JobId={a.job} done")
        rows.append((a.S, f"{a.job}|{RUN}|llmtrain|pretrain|{cpus}|{state}|{ec}|{slurm_ts(submit_of[a.job])}|"
                          f"{slurm_ts(a.S)}|{slurm_ts(a.E)}|{elapsed_str(a.E - a.S)}|{len(a.nodes)}|{hl}"))
        for sname, sst, sec in steps:
            nn, nl, cp = (1, a.nodes[0], 192) if sname == "batch" else (len(a.nodes), hl, cpus)
            rows.append((a.S + 0.1, f"{a.job}.{sname}|{'batch' if sname == 'batch' else 'torchrun'}||pretrain|{cp}|{sst}|"
                                    f"{sec}|{slurm_ts(a.S)}|{slurm_ts(a.S)}|{slurm_ts(a.E)}|{elapsed_str(a.E - a.S)}|"
                                    f"{nn}|{nl}"))
    # another team's job on the outsider node while its GPU logs Xid 13
    xs = decoy["xid13_ts"] - 1500
    add(xs, f"sched: Allocate JobId=730377 NodeList={OUTSIDER} #CPUs=192 Partition=research")
    add(xs + 2600, "_job_complete: JobId=730377 WEXITSTATUS 0")
    rows.append((xs, f"730377|vit-sweep|rsch02|research|192|COMPLETED|0:0|{slurm_ts(xs - 30)}|{slurm_ts(xs)}|"
                     f"{slurm_ts(xs + 2600)}|{elapsed_str(2600)}|1|{OUTSIDER}"))
    rows.sort(key=lambda x: x[0])
    write_file(bundle / "scheduler" / "slurmctld.log", L.render())
    write_file(bundle / "scheduler" / "sacct-D.txt", ("\n".join([hdr] + [r for _, r in rows]) + "\n").encode())


# ----------------------------------------------------------------------------- config
def inventory_toml() -> str:
    return f"""# kestrel's kx-1 as rented for the fabric-34b run
[providers.{PROVIDER}]
usd_per_gpu_hour = 2.39
support = "noc@kestrel.example"

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = {GPN}
interconnect = "InfiniBand NDR 8x400G, rail-optimised leaves"
nodes = "{hostlist(HOSTS)}"
"""


def run_toml(ti: int) -> str:
    return f"""# {RUN}: 34B dense decoder, Megatron-LM, TP={TP} PP={PP} DP={DP}, {ti} iterations
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.4e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --requeue --nodes=12 --gpus-per-node=8 --time=1-00:00:00 --output=logs/slurm-%j.out pretrain_34b.sbatch"
"""


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    attempts, facts = build(seed)
    fleet = Fleet(seed)
    drng = random.Random(f"{seed}-fabric-decoys")
    by_kind = {a.kind: a for a in attempts}
    quiet = facts["quiet"]
    roots = set(facts["roots"].values())
    calm = [a for a in attempts if a.kind not in ("switch", "lustre")]
    ab = drng.choice(calm)
    blip_a = drng.choice([a for a in attempts if a.kind != "lustre"])
    lus = by_kind["lustre"]
    non_root_lustre = [h for h in lus.nodes if h not in roots and h not in SPARES]
    decoy = {"rereg_hosts": {quiet[1], quiet[2]},
             "bounce": (ab.k, quiet[0], drng.randrange(GPN), ab.F + drng.uniform(0.35, 0.6) * ((ab.R or ab.E) - ab.F)),
             "blip_hosts": set(drng.sample([h for h in INITIAL if h not in roots], 5)),
             "blip_ts": blip_a.F + drng.uniform(0.25, 0.5) * ((blip_a.R or blip_a.E) - blip_a.F),
             "nfs_hosts": {quiet[3], INITIAL[0]},
             "nfs_ts": by_kind["complete"].F + drng.uniform(0.3, 0.6) * (by_kind["complete"].E - by_kind["complete"].F),
             "hung_hosts": set(drng.sample(non_root_lustre, 3)),
             "xid13_ts": attempts[1].F + drng.uniform(0.2, 0.8) * ((attempts[1].R or attempts[1].E) - attempts[1].F)}
    write_file(bundle / "inventory.toml", inventory_toml().encode())
    rdir = bundle / "runs" / RUN
    write_file(rdir / "run.toml", run_toml(attempts[-1].train_iters).encode())
    pids_of = {}
    logs: dict[int, list[Sink]] = {}
    for a in attempts:
        pids = Pids(seed, a)
        pids_of[a.k] = pids
        logs.setdefault(a.job, []).append(train_log(a, fleet, pids, seed, facts))
        for h in a.nodes:
            write_file(rdir / "logs" / f"nccl-{a.job}.{a.restart}" / f"{h}.log",
                       nccl_log(a, h, pids, fleet, seed, facts, decoy))
        if a.kind == "hang":
            for r, body in rank_records(a, fleet, seed, facts).items():
                write_file(rdir / "logs" / f"steps-{a.job}" / f"rank-{r:02d}.jsonl", body)
    for job, sinks in logs.items():                      # requeued incarnations append to one file
        write_file(rdir / "logs" / f"slurm-{job}.out", b"".join(s.render() for s in sinks))
    info: dict = {}
    kernel_logs(attempts, fleet, pids_of, seed, facts, decoy, bundle, info)
    scheduler_files(attempts, facts, decoy, bundle, seed)
    cats, total, per = ledger(attempts)
    incidents = []
    for j, a in enumerate(attempts[:-1]):
        nxt = attempts[j + 1]
        incidents.append({
            "id": j + 1, "attempt": a.k, "slurm_job": a.job, "restart_count": a.restart,
            "failure_mode": a.mode, "blame": "unknown" if a.mode == "nccl_timeout" else "provider",
            "host": a.root_host, "cluster": CLUSTER, "provider": PROVIDER, "story": a.kind,
            "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E), "next_start_ts": iso_z(nxt.S),
            "next_first_step_ts": iso_z(nxt.F), "last_ckpt_step": a.last_ckpt,
            "failed_at_step": a.steps[-1][0] if a.steps else a.load, "gpu_hours": per[j],
            "gpu_hours_lost": round(sum(per[j].values()), 4)})
    sw = by_kind["switch"]
    lfirst = sorted(info["lustre_first"])
    decoys = {h: "under the flapping rail leaf switch: Link down and NET/IB errors are symptoms of the switch"
              for h in facts["leaf"]}
    decoys[quiet[0]] = "transient link bounce (3 s), NCCL port error/port active, training stepped on"
    for h in decoy["rereg_hosts"]:
        decoys[h] = "NCCL WARN 'Got async event : client reregistration' at init in every attempt; harmless"
    for h in decoy["blip_hosts"]:
        decoys.setdefault(h, "Lustre OST connection lost then restored within a minute; no failure")
    for h in decoy["nfs_hosts"]:
        decoys.setdefault(h, "nfs home-nfs01 not responding / OK blip in the last attempt")
    for _, h in lfirst[:3]:
        if h not in roots:
            decoys.setdefault(h, "among the first to report the Lustre OST outage: a symptom of the shared filesystem")
    for h in decoy["hung_hosts"]:
        decoys.setdefault(h, "hung tasks during the Lustre outage: a symptom of the shared filesystem")
    decoys.setdefault(lus.nodes[0], "rank 0's host: its ranks raised the checkpoint write error (Lustre outage)")
    decoys[OUTSIDER] = "Xid 13 on a node of another team's job, never in this run"
    assert not (set(decoys) & roots), (set(decoys) & roots)
    # host-specific incidents first, so that the scorer's one-to-one matching pairs the host-null switch last
    incidents.sort(key=lambda x: (x["host"] is None, x["id"]))
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP, "flops_per_token": FLOPS_PER_TOKEN,
        "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "first_start_ts": iso_z(attempts[0].S), "last_end_ts": iso_z(attempts[-1].E), "clock_skew_s": fleet.skew,
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "restart_count": a.restart, "nodes": hostlist(a.nodes),
                      "start_ts": iso_z(a.S), "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E), "loaded_step": a.load,
                      "last_step": a.steps[-1][0] if a.steps else a.load, "saves": [n for n, _, _ in a.saves],
                      "end": a.kind} for a in attempts],
        "switch": {"attempt": sw.k, "hosts": facts["leaf"], "rail": facts["rail"], "nic": NIC_DEV[facts["rail"]]},
        "lustre": {"attempt": lus.k, "ost": facts["ost"], "nid": facts["ost_nid"],
                   "failed_save_step": lus.failed_save[0], "first_report": iso_z(lfirst[0][0])},
        "incidents": incidents,
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys,
        "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incidents), 4)},
        "notes": ("Times are the controller's UTC clock. host null (the rail leaf switch, the Lustre OST) matches any "
                  "host in the scorer, but every host that only showed symptoms is a decoy. Ledger: see the docstring."),
    }
    write_file(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
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
    print(f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB) and "
          f"{out / 'truth.json'}; total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
