#!/usr/bin/env python3
"""Independent campaign "megascale": the failure experiences of ByteDance's MegaScale paper, scaled down.

Written without reading clusterlab's analysis code. Re-enacts the production problems that Jiang et al.,
"MegaScale: Scaling Large Language Model Training to More Than 10,000 GPUs" (NSDI '24, ByteDance / PKU;
usenix.org/conference/nsdi24/presentation/jiang-ziheng) report for their Megatron-based 175B GPT training:
RDMA NICs on a RoCE fabric that flap and take NCCL down with them, straggler hosts found only from per-rank
timings, a silent hang where one rank stops and the others only notice through the NCCL watchdog, GPU
memory ECC faults, and checkpoint writes held up by slow distributed storage.

Usage: megascale.py --out DIR [--seed N]       (python 3.11, standard library only; deterministic per seed:
gzip members have mtime=0 and no name). Writes, under DIR:
  bundle/inventory.toml
  bundle/runs/megascale-175b/run.toml
  bundle/runs/megascale-175b/attempt-<k>/slurm-<jobid>.out[.gz]   everything srun printed: torchrun agents,
        NCCL_DEBUG=INFO of all 192 ranks (no NCCL_DEBUG_FILE, so it is interleaved here), Megatron-LM rank-0 /
        last-rank output, PyTorch 2.1 ProcessGroupNCCL errors (no timestamp, no rank prefix), tracebacks
  bundle/runs/megascale-175b/attempt-3/timings/<host>/rank-NNN.jsonl[.gz]  per-rank step records (DESIGN.md
        format, ISO ts), the last 150 steps of attempt 3 (the hang)
  bundle/runs/megascale-175b/attempt-4/timings/<host>/rank-NNN.jsonl[.gz]  per-rank step records (epoch ts),
        the straggler window of attempt 4 plus 50 steps either side
  bundle/nodes/<host>/{kern.log, kern.log.1.gz | dmesg-T.txt | journal-kernel.txt}
  bundle/scheduler/{slurmctld.log, sacct.txt}
  truth.json

Scenario (run "megascale-175b"; cluster hx-roce1 of provider helix: 28 HGX H100 nodes trn101..trn128, 8
ConnectX-7 NICs each on a RoCEv2 fabric; the job uses 24 nodes = 192 GPUs, TP 8 x PP 4 x DP 6, GPT 175B,
global batch 384 x 2048 tokens; truth times are the Slurm controller's UTC clock, every node's own clock is
off by up to ~3.5 s; the culprit hosts are drawn per seed, the numbers below are for the default seed):
  attempt 1  fresh start.  Hours in, one port of host X (rail k) flaps twice for a second or two: the kernel
             logs "mlx5_core ... Link down/Link up" and NCCL on X prints "Got async event : port error / port
             active"; training keeps its pace (health history, not the end).  Later the same port goes down for
             good ~40 s and flaps again: after the RoCE retries run out (~20 s) X and its four rail / pipeline
             peers print NCCL "Got completion from peer <ip> with error 12 ... vendor err 129" naming each
             other's bootstrap IPs, PyTorch raises ncclRemoteError, torchrun fails, srun kills the step; the
             job FAILS.  Culprit = X (its kernel shows the link flapping; the peers only show symptoms)
                                                                                  [network, X]
  attempt 2  X drained, spare trn125 in.  One periodic save stalls ~14 min: the Lustre OST that holds the
             checkpoint directory stops answering and *every* node's kernel logs ptlrpc "Request sent has
             timed out for slow reply" / "Connection to ckptfs-OST0011 ... was lost" / "Connection restored";
             Megatron's save-checkpoint timer shows the stall; training then resumes at pace.  Cause: the shared
             storage, not a compute node                     [filesystem_io, kind checkpoint_stall, host null]
             Later, Xid 48 (DBE) + Xid 63 (row remap pending) + Xid 94 (contained ECC) on host W; its rank dies
             with "CUDA error: uncorrectable ECC error encountered"; torchrun ChildFailedError names W; srun
             kills the rest; the job FAILS                                     [gpu_memory_ecc, W]
  attempt 3  W drained, spare trn126 in.  One rank on host Z stops making progress after the collectives of
             step N: it never writes its step-N timing record and never prints anything; every other rank
             finishes step N and blocks; 600 s later (Megatron --distributed-timeout-minutes 10) the PyTorch
             watchdogs of the other 191 ranks fire, they abort (SIGABRT), srun kills the step, job FAILS.
             Only the per-rank records tell the culprit: Z's rank r's last record is N-1, everyone else's is N.
             A harmless Xid 13 on another host ~40 min before the hang is a decoy.     [nccl_timeout, Z]
  attempt 4  Z drained, spare trn127 in.  Completes (final save, "[after training is done]").  For ~300 steps
             the eight ranks of host Y compute 12 % slower; every rank's step time rises to match (synchronous
             training) while Y's ranks show the least communication wait: a straggler, no failure
                                                                          [straggler, Y, no failure mode]
  Decoys: X's rail/pipeline peers (NCCL completion errors naming X: symptoms); the idle spare trn128 (its own
  mlx5 link flaps during a cable reseat and an Xid 13 under a dcgm-diag job, never in the run); an NCCL WARN
  "Got async event : GID table change" on host G (harmless); a harmless Xid 13 on host D in attempt 3; the
  node whose kernel reports the Lustre timeouts first (a shared-server symptom); NCCL INFO spam, Python
  UserWarnings, non-UTF-8 bytes, blank lines, lines without their own timestamp, truncated last lines (the
  attempt-1 srun output, one attempt-4 timing file), a gzipped rotated kern.log, skewed node clocks.

Ledger (truth.json expected_ledger; GPU-hours = 192 x seconds / 3600; conventions of campaign1.py):
  startup    = attempt start (sacct Start) -> start of the first training step ("[before the start of
               training step] datetime")
  productive = kept steps (step <= last durable checkpoint of a failed attempt; all steps of the completed
               attempt), whole step durations; in the straggler window only the 9.25 s baseline counts
  straggler  = step time above the baseline inside the straggler window (all of it kept: attempt 4 completes)
  checkpoint = durations of completed saves (the 14-min stalled save included), plus the tail after the final
               save
  recompute  = end of the last durable save of the attempt (or its first step start) -> root event
  hang       = root event -> attempt exit (sacct End).  Root events: the fatal "Link down" on X (attempt 1, not
               the earlier harmless flaps), the Xid 48 on W (attempt 2), the end of the job's last completed
               step N (attempt 3: the stuck rank finished N's collectives but never step N itself)
  restart    = attempt exit -> next attempt start
  slowdown = data_stall = idle = 0

Formats, looked up with the search tools in public material (the text here is written anew, with invented
hosts, addresses, times and values):
  * Megatron-LM training.py training_log(): " [%Y-%m-%d %H:%M:%S] iteration {:8d}/{:8d} | consumed samples:
    {:12d} | elapsed time per iteration (ms): {:.1f} | learning rate: {:.6E} | global batch size: {:5d} |
    lm loss: {:.6E} | loss scale: {:.1f} | grad norm: {:.3f} | number of skipped iterations: {:3d} | number
    of nan iterations: {:3d} |" (printed by the LAST rank, print_rank_last; --log-throughput off, so no
    TFLOP/s field) -- a Megatron fork's patched training_log seen via find_string; checkpointing.py: "saving
    checkpoint at iteration {:7d} to {} in {} format", "Storing distributed optimizer sharded state of type
    fully_sharded_model_space", "  successfully saved checkpoint from iteration {:7d} to {}", " loading
    distributed checkpoint from {} at iteration {}", "WARNING: could not find the metadata file ..."; timers
    "(min, max) time across ranks (ms):" + "    save-checkpoint ....: (a, b)"; print_datetime "[after
    dataloaders are built] datetime: ...", "[before the start of training step] datetime: ...", "[after
    training is done] datetime: ..."; startup lines ("> initialized tensor model parallel with size 8", the
    make lines of the dataset index builder) from a public Megatron run log found via the code search.
  * PyTorch 2.1 ProcessGroupNCCL (no glog stamp, no [rankN] prefix): "[E ProcessGroupNCCL.cpp:475] [Rank 6]
    Watchdog caught collective operation timeout: WorkNCCL(SeqNum=880, OpType=BROADCAST, NumelIn=...,
    NumelOut=..., Timeout(ms)=...) ran for ... milliseconds before timing out.", ":489] Some NCCL operations
    have failed or timed out. ...", ":495] To avoid data inconsistency, we are taking the entire process
    down.", ":916] [Rank 6] NCCL watchdog thread terminated with exception: ...", "terminate called after
    throwing an instance of 'c10::DistBackendError'", "  what():  ...", "Exception raised from checkTimeout at
    ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:525", frames with workCleanupLoop():
    arrival-ltd/catalyst-rl-tutorial #15, pytorch/pytorch #118369 and PR #97066, NVIDIA/Megatron-LM #1207;
    "NCCL error: remote process exited or there was a network error, NCCL version ..." / "ncclRemoteError: A
    call failed possibly due to a network error or a remote process exiting prematurely." / "Last error:".
  * NCCL 2.18 (the NCCL that PyTorch 2.1 ships): "host:pid:tid [d] transport/net_ib.cc:93 NCCL WARN NET/IB :
    Got async event : port error" (Lightning-AI/lit-llama #380; "flapping link" diagnosis by the NCCL
    maintainer in NVIDIA/nccl #905), "NET/IB : Got completion from peer <ip><port> with error 12, opcode 0,
    len 0, vendor err 129" (lit-llama #380, NVIDIA/nccl #902: error 12 = retry/timeout, RoCEv2), followed by
    "NCCL INFO transport/net.cc:... -> 6" / "proxy.cc:... -> 6" (NVIDIA/nccl #1710); "Got async event : GID
    table change" (NVIDIA/nccl #1819); INFO init lines ("Bootstrap : Using eth0:<ip><0>", "NET/IB : Using
    [0]mlx5_0:1/RoCE ... [RO]; OOB eth0:...", "NCCL_IB_GID_INDEX set by environment to 3.", "ncclCommInitRank
    comm ... rank r nranks n cudaDev d nvmlDev d busId b commId ... - Init START", "Channel ../0 : a[d] ->
    b[d] [send] via NET/IB/d/GDRDMA", "Connected all rings", "comm ... - Init COMPLETE") from NVIDIA/nccl
    issues (#1609 and others).
  * mlx5 netdev link state "mlx5_core 0000:01:00.0 enp1s0f0np0: Link down" / "Link up" (many public dmesg
    excerpts found via find_string, incl. a switch-reboot post-mortem showing the same line on several hosts).
  * Lustre client: "Lustre: 3721:0:(client.c:2310:ptlrpc_expire_one_request()) @@@ Request sent has timed out
    for slow reply: [sent N/real N]  req@... x.../t0(0) o4->FS-OST003a-osc-ffff...@IP@tcp:6/4 lens 488/448 e 2
    to 1 dl N ref 2 fl Rpc:XN/0/ffffffff rc 0/-1", "Lustre: FS-OST003a-osc-ffff...: Connection to FS-OST003a
    (at IP@tcp) was lost; in progress operations using this service will wait for recovery to complete"
    (ptlrpc_set_import_discon() LCONSOLE_WARN), "Connection restored to  (at IP@tcp)", "Lustre: Skipped N
    previous similar messages": public dmesg excerpts and the Lustre source found via find_string.
  * NVRM: Xid 48 "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at
    physAddr 0x... partition 16, subpartition 3.", Xid 63 "Row Remapper: New row (0x...) marked for remapping,
    reset gpu to activate.", Xid 94 "Contained: SM (0x1). RST: No, D-RST: No" -- one public H100 report with
    all three within 25 ms; Xid 13 "Graphics SM Warp Exception on (GPC, TPC, SM): ..." (campaign1/2 sources);
    "RuntimeError: CUDA error: uncorrectable ECC error encountered" + the three follow-up lines.
  * torch.distributed.elastic / torchrun: OMP_NUM_THREADS banner, "Sending process P closing signal
    SIGTERM", "failed (exitcode: -6) local_rank: ...", "Received 15 death signal, shutting down workers",
    the ChildFailedError block (time/host/rank/exitcode/error_file/traceback, "Root Cause (first observed
    failure):"), "Signal 6 (SIGABRT) received by PID ..." (NVIDIA/Megatron-LM #1880,
    NVIDIA/nvidia-resiliency-ext #18, and the PyTorch source of elastic/multiprocessing/api.py).
  * Slurm: "srun: error: <node>: task N: Exited with exit code 1", "srun: error: <node>: task N:
    Terminated", "srun: Terminating StepId=J.0", "slurmstepd: error: *** STEP J.0 ON <node> CANCELLED AT
    <ts> ***", "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.", slurmctld
    "_slurm_rpc_submit_batch_job: JobId=...", "sched: Allocate JobId=... NodeList=... #CPUs=... Partition=...",
    "_job_complete: JobId=... WEXITSTATUS 1", "update_node: node X reason set to: ...", "update_node: node X
    state set to DRAINED"; sacct --parsable2 columns (as in campaign1.py / campaign2.py).
  * dmesg -T, journalctl -o short-iso, rsyslog kern.log with a logrotate'd kern.log.1.gz (Ubuntu's daily
    cron at 06:25).
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

# ----------------------------------------------------------------------------- constants
RUN = "megascale-175b"
CLUSTER, PROVIDER = "hx-roce1", "helix"
GPN, NODES = 8, 24
GPUS = GPN * NODES                           # 192
TP, PP, DP = 8, 4, 6
GBS, SEQ = 384, 2048
TOKENS_PER_STEP = GBS * SEQ                  # 786432
N_PARAMS = 175.0e9
LAYERS, HIDDEN, HEADS = 96, 12288, 96
FLOPS_PER_TOKEN = 6 * N_PARAMS + 12 * LAYERS * HIDDEN * SEQ       # 1.079e12
PEAK_H100_SXM = 989.4e12
BASE_STEP = 9.250
BASE_COMPUTE, BASE_DATA = 8.120, 0.045
STEP_JITTER = 0.0015
STRAGGLER_FACTOR = 1.12
STRAG_LEN = 300
JSONL_MARGIN = 50
HANG_JSONL = 150
SAVE_INTERVAL = 250
LOG_INTERVAL = 5
TRAIN_ITERS = 10000
WATCHDOG_S = 600
T0 = datetime(2026, 12, 7, 23, 40, 0, tzinfo=UTC).timestamp()
ROTATE_AT = datetime(2026, 12, 8, 6, 25, 3, tzinfo=UTC).timestamp()
NCCL_VERSION = "2.18.6"
TORCH = "2.1.2"
DRIVER = "535.183.01"
KERNEL = "5.15.0-119-generic"
CKPT = "/lustre/ckptfs/gpt175b/megascale-175b"
OST = "ckptfs-OST0011"
OSS_NID = "10.50.0.31@o2ib"

HOSTS = [f"trn{i}" for i in range(101, 129)]
USED0 = HOSTS[:24]
SPARES = HOSTS[24:27]                        # trn125..trn127 come in one by one
IDLE_SPARE = HOSTS[27]                       # trn128: never in the run

HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]

BUSIDS = ["18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000"]
NIC_DEV = [f"mlx5_{k}" for k in range(GPN)]
NIC_BUS = [0x1a, 0x3c, 0x4d, 0x5e, 0x9c, 0xbc, 0xcc, 0xdc]
NIC_PCI = [f"0000:{b:02x}:00.0" for b in NIC_BUS]
NIC_IF = [f"enp{b}s0np0" for b in NIC_BUS]
MASKS = ["ffffffff,00000000,ffffffff", "ffffffff,00000000,ffffffff,00000000"]


def host_ip(h: str) -> str:
    n = int(h[3:])
    return f"10.60.{1 + (n - 101) // 8}.{n - 100}"


def pci_of(busid: str) -> str:
    return f"0000:{busid[:2]}:00"


# ----------------------------------------------------------------------------- time formats
def _split(t: float) -> tuple[datetime, int]:
    us_total = int(round(t * 1_000_000))
    s, us = divmod(us_total, 1_000_000)
    return datetime.fromtimestamp(s, UTC), us


def iso_z(t: float) -> str:
    d, us = _split(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{us // 1000:03d}Z"


def iso_off(t: float) -> str:
    d, us = _split(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{us:06d}+00:00"


def date_cmd(t: float) -> str:
    d, _ = _split(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def meg_ts(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%d %H:%M:%S")


def glog_py(t: float, level: str) -> str:
    d, us = _split(t)
    return f"{level}{d:%m%d} {d:%H:%M:%S}.{us // 1000:03d}000"


def slurm_ts(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%dT%H:%M:%S")


def ctld_ts(t: float) -> str:
    d, us = _split(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{us // 1000:03d}]"


def dmesg_T(t: float) -> str:
    d, _ = _split(t)
    return f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}]"


def short_iso(t: float) -> str:
    d, _ = _split(t)
    return f"{d:%Y-%m-%dT%H:%M:%S}+0000"


def syslog_ts(t: float) -> str:
    d, _ = _split(t)
    return f"{d:%b} {d.day:2d} {d:%H:%M:%S}"


def elapsed_str(sec: float) -> str:
    sec = int(round(sec))
    d, rem = divmod(sec, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts: list[str]) -> str:
    nums = sorted(int(h[3:]) for h in hosts)
    if len(nums) == 1:
        return f"trn{nums[0]}"
    parts, a, b = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == b + 1:
            b = n
            continue
        parts.append(f"{a}" if a == b else f"{a}-{b}")
        if n is not None:
            a = b = n
    return f"trn[{','.join(parts)}]"


class Sink:
    """Lines with a time; rendered in time order, ties in insertion order."""

    def __init__(self) -> None:
        self.items: list[tuple[float, int, str | bytes]] = []

    def add(self, t: float, line: str | bytes) -> None:
        self.items.append((t, len(self.items), line))

    def extend(self, t: float, lines) -> None:
        for ln in lines:
            self.add(t, ln)

    def render(self, cut_last: int = 0) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
        data = b"\n".join(x[2] if isinstance(x[2], bytes) else x[2].encode() for x in self.items)
        return data[: len(data) - cut_last] if cut_last else data + b"\n"


def write_file(path: Path, data: bytes, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=6) as f:
            f.write(data)
        data = buf.getvalue()
    path.write_bytes(data)


# ----------------------------------------------------------------------------- cast (per seed)
class Cast:
    def __init__(self, seed: int):
        rng = random.Random(f"{seed}-megascale-cast")
        pool = USED0[1:-1]                                   # not rank 0's node, not the last node
        x = rng.choice([h for h in pool if 6 <= USED0.index(h) < 18])   # has pipeline peers both sides
        self.X = x
        self.rail = rng.randrange(GPN)
        i = USED0.index(x)
        pp, dp = divmod(i, DP)
        self.peers = sorted({USED0[pp * DP + (dp - 1) % DP], USED0[pp * DP + (dp + 1) % DP],
                             USED0[i - DP], USED0[i + DP]})
        rest = [h for h in pool if h != x and h not in self.peers]
        self.W, self.Z, self.G, self.D = rng.sample(rest, 4)
        self.W_gpu = rng.randrange(GPN)
        self.Z_gpu = rng.randrange(GPN)
        a2 = sorted([h for h in USED0 if h != x] + [SPARES[0]])
        a3 = sorted([h for h in a2 if h != self.W] + [SPARES[1]])
        a4 = sorted([h for h in a3 if h != self.Z] + [SPARES[2]])
        self.nodes = [USED0, a2, a3, a4]
        choices = [h for h in a4 if h not in (self.G, self.D, a4[0], a4[-1]) and h not in self.peers]
        self.Y = rng.choice(choices)
        self.skew = {}
        srng = random.Random(f"{seed}-megascale-skew")
        for h in HOSTS:
            self.skew[h] = round(srng.uniform(0.2, 3.4) * srng.choice([-1, 1]), 3)
        self.boot = {h: T0 - srng.randint(2 * 86400, 6 * 86400) for h in HOSTS}


# ----------------------------------------------------------------------------- timeline
class Attempt:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps: list[tuple[int, float, float]] = []
        self.saves: list[tuple[int, float, float]] = []
        self.R: float | None = None
        self.E: float | None = None
        self.strag: tuple[int, int] | None = None


def simulate(a: Attempt, rng: random.Random) -> None:
    a.steps, a.saves = [], []
    t, n = a.F, a.load
    nsave = 0
    while True:
        if a.kind == "complete" and n >= TRAIN_ITERS:
            break
        n1 = n + 1
        dur = BASE_STEP * (1 + rng.uniform(-STEP_JITTER, STEP_JITTER))
        if a.strag and a.strag[0] <= n1 <= a.strag[1]:
            dur += BASE_COMPUTE * (STRAGGLER_FACTOR - 1) * (1 + rng.uniform(-0.01, 0.01))
        if a.kind in ("network", "ecc") and t >= a.fail_at:
            a.R = float(math.floor(t + 0.45 * dur)) + 0.37
            a.E = a.R + a.tail
            return
        if a.kind == "hang" and t >= a.fail_at:
            a.R = t                      # end of the last step every rank completed
            a.E = a.R + WATCHDOG_S + a.tail
            return
        a.steps.append((n1, t, dur))
        t += dur
        n = n1
        if n % SAVE_INTERVAL == 0:
            nsave += 1
            c = round(rng.uniform(58.0, 74.0), 2)
            if a.kind == "ecc" and nsave == a.stall_save:
                c = round(rng.uniform(820.0, 880.0), 2)
            a.saves.append((n, t, c))
            t += c
    a.R = None
    a.E = float(math.ceil(t + 4.0))


def build_timeline(seed: int, cast: Cast) -> list[Attempt]:
    rng = random.Random(f"{seed}-megascale-timeline")
    specs = [
        dict(k=1, job=730415, kind="network", mode="network", root_host=cast.X, gpu=cast.rail,
             startup=(95, 58, 0, 41), run=5.05 * 3600 + rng.randint(0, 900), tail=71.0 + rng.randint(-3, 3),
             gap=2100 + rng.randint(-200, 200)),
        dict(k=2, job=730442, kind="ecc", mode="gpu_memory_ecc", root_host=cast.W, gpu=cast.W_gpu,
             startup=(88, 61, 214, 39), run=8.6 * 3600 + rng.randint(0, 900), tail=38.0 + rng.randint(-2, 2),
             gap=2900 + rng.randint(-200, 200), stall_save=5 + rng.randint(0, 2)),
        dict(k=3, job=730467, kind="hang", mode="nccl_timeout", root_host=cast.Z, gpu=cast.Z_gpu,
             startup=(91, 57, 221, 40), run=3.4 * 3600 + rng.randint(0, 900), tail=26.0 + rng.randint(-2, 2),
             gap=1700 + rng.randint(-150, 150)),
        dict(k=4, job=730490, kind="complete", mode=None, root_host=None, gpu=None,
             startup=(86, 59, 209, 38), gap=None),
    ]
    attempts = [Attempt(nodes=cast.nodes[i], **s) for i, s in enumerate(specs)]
    t, load = T0, 0
    for a in attempts:
        a.startup = tuple(p + rng.randint(-3, 3) if p else 0 for p in a.startup)
        a.load = load
        a.S = float(t)
        a.F = a.S + sum(a.startup)
        if a.kind != "complete":
            a.fail_at = a.F + a.run
        else:
            lo = a.load + 900 + rng.randint(0, 400)
            a.strag = (lo, lo + STRAG_LEN - 1)
        tries = 0
        while True:
            simulate(a, random.Random(f"{seed}-megascale-steps-{a.k}-{tries}"))
            # the fatal event must not land right after a save (keep some recompute visible)
            if a.kind == "complete" or a.steps[-1][0] % SAVE_INTERVAL not in range(0, 4):
                break
            a.fail_at += 97.0
            tries += 1
        ck = [n for n, _, _ in a.saves]
        a.last_ckpt = ck[-1] if ck else a.load
        load = a.last_ckpt
        if a.gap is not None:
            t = math.ceil(a.E + a.gap)
    return attempts


def ledger(attempts: list[Attempt]):
    cats = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute",
                          "hang", "restart", "startup", "idle"], 0.0)
    per_inc = []
    for i, a in enumerate(attempts):
        cats["startup"] += a.F - a.S
        kept = a.last_ckpt if a.kind != "complete" else 10 ** 9
        for n, _, d in a.steps:
            if n > kept:
                continue
            if a.strag and a.strag[0] <= n <= a.strag[1]:
                cats["productive"] += BASE_STEP
                cats["straggler"] += d - BASE_STEP
            else:
                cats["productive"] += d
        for _, _, c in a.saves:
            cats["checkpoint"] += c
        if a.kind == "complete":
            cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        base = (a.saves[-1][1] + a.saves[-1][2]) if a.saves else a.F
        nxt = attempts[i + 1]
        d = dict(hang=a.E - a.R, recompute=a.R - base, restart=nxt.S - a.E, startup=nxt.F - nxt.S)
        cats["recompute"] += d["recompute"]
        cats["hang"] += d["hang"]
        cats["restart"] += d["restart"]
        per_inc.append(d)
    total = attempts[-1].E - attempts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total, (sum(cats.values()), total)
    g = GPUS / 3600.0
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per_inc])


# ----------------------------------------------------------------------------- ranks / pids
def layout(nodes: list[str]):
    return [(i * GPN + d, h, d) for i, h in enumerate(nodes) for d in range(GPN)]


class Pids:
    def __init__(self, seed: int, a: Attempt):
        rng = random.Random(f"{seed}-megascale-pids-{a.k}")
        self.agent, self.worker, self.tid, self.proxy, self.comm = {}, {}, {}, {}, {}
        for h in a.nodes:
            ag = rng.randint(30_000, 900_000)
            self.agent[h] = ag
            for d in range(GPN):
                w = ag + 23 + d
                self.worker[h, d] = w
                self.tid[h, d] = w + rng.randint(200, 900)
                self.proxy[h, d] = self.tid[h, d] + rng.randint(20, 60)
                self.comm[h, d] = f"0x{0x5600_0000_0000 + (rng.getrandbits(32) << 4):x}"
        self.comm_id = f"0x{rng.getrandbits(64):016x}"


# ----------------------------------------------------------------------------- NCCL
def nccl_init(a: Attempt, h: str, pids: Pids, rng: random.Random) -> list[str]:
    i = a.nodes.index(h)
    nn = len(a.nodes)
    stages = []
    nets = " ".join(f"[{k}]{NIC_DEV[k]}:1/RoCE" for k in range(GPN))
    for d in range(GPN):
        r = i * GPN + d
        w, t = pids.worker[h, d], pids.tid[h, d]
        p0 = f"{h}:{w}:{w} [{d}] NCCL INFO "
        p = f"{h}:{w}:{t} [{d}] NCCL INFO "
        c = pids.comm[h, d]
        st = [p0 + "NCCL_SOCKET_IFNAME set by environment to eth0",
              p0 + f"Bootstrap : Using eth0:{host_ip(h)}<0>",
              p0 + "NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared "
                   "object file: No such file or directory",
              p0 + "NET/Plugin : No plugin found, using internal implementation",
              p0 + "cudaDriverVersion 12020"]
        if r == 0:
            st.append(f"NCCL version {NCCL_VERSION}+cuda12.1")
        st += [p + "NCCL_IB_GID_INDEX set by environment to 3.",
               p + "NCCL_IB_TIMEOUT set by environment to 20.",
               p + f"NET/IB : Using {nets} [RO]; OOB eth0:{host_ip(h)}<0>",
               p + "Using network IB",
               p + f"ncclCommInitRank comm {c} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} "
                   f"commId {pids.comm_id} - Init START",
               p + f"Setting affinity for GPU {d} to {MASKS[d // 4]}",
               p + f"Channel {d:02d}/0 : {((i - 1) % nn) * GPN + d}[{d}] -> {r}[{d}] [receive] via NET/IB/{d}/GDRDMA",
               p + f"Channel {d:02d}/0 : {r}[{d}] -> {((i + 1) % nn) * GPN + d}[{d}] [send] via NET/IB/{d}/GDRDMA",
               p + "Connected all rings", p + "Connected all trees",
               p + "threadThresholds 8/8/64 | 1536/8/64 | 512 | 512",
               p + "32 coll channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer",
               p + f"comm {c} rank {r} nranks {GPUS} cudaDev {d} busId {BUSIDS[d]} commId {pids.comm_id} "
                f"- Init COMPLETE"]
        for rr, size in ((d, TP), ((i % DP), DP), ((i // DP), PP)):
            cc = f"0x{0x5600_0000_0000 + (rng.getrandbits(32) << 4):x}"
            cid = f"0x{rng.getrandbits(64):016x}"
            st += [p + f"ncclCommInitRank comm {cc} rank {rr} nranks {size} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} "
                       f"commId {cid} - Init START",
                   p + f"comm {cc} rank {rr} nranks {size} cudaDev {d} busId {BUSIDS[d]} commId {cid} - Init COMPLETE"]
        stages.append(st)
    out, cur = [], [0] * GPN
    while any(cur[d] < len(stages[d]) for d in range(GPN)):
        d = rng.randrange(GPN)
        if cur[d] < len(stages[d]):
            out.append(stages[d][cur[d]])
            cur[d] += 1
    return out


# ----------------------------------------------------------------------------- training log pieces
def lr_at(n: int) -> float:
    warm, lmax, lmin = 500, 1.2e-4, 1.2e-5
    if n < warm:
        return lmax * n / warm
    return lmin + 0.5 * (lmax - lmin) * (1 + math.cos(math.pi * (n - warm) / (TRAIN_ITERS - warm)))


def loss_at(n: int, rng: random.Random) -> float:
    return 1.86 + 8.7 * math.exp(-n / 260.0) + 0.71 * math.exp(-n / 5200.0) + rng.gauss(0, 0.011)


def megatron_args() -> list[str]:
    kv = [("adam_beta1", "0.9"), ("adam_beta2", "0.95"), ("bf16", "True"), ("ckpt_format", "torch_dist"),
          ("clip_grad", "1.0"), ("data_parallel_size", str(DP)), ("distributed_timeout_minutes", "10"),
          ("ffn_hidden_size", str(4 * HIDDEN)), ("global_batch_size", str(GBS)), ("hidden_size", str(HIDDEN)),
          ("load", CKPT), ("log_interval", str(LOG_INTERVAL)), ("log_throughput", "False"), ("lr", "0.00012"),
          ("lr_decay_style", "cosine"), ("lr_warmup_iters", "500"), ("micro_batch_size", "1"),
          ("min_lr", "1.2e-05"), ("num_attention_heads", str(HEADS)), ("num_layers", str(LAYERS)),
          ("overlap_grad_reduce", "True"), ("overlap_param_gather", "True"),
          ("pipeline_model_parallel_size", str(PP)), ("save", CKPT), ("save_interval", str(SAVE_INTERVAL)),
          ("seq_length", str(SEQ)), ("sequence_parallel", "True"), ("tensor_model_parallel_size", str(TP)),
          ("train_iters", str(TRAIN_ITERS)), ("use_distributed_optimizer", "True"), ("world_size", str(GPUS))]
    out = ["------------------------ arguments ------------------------"]
    out += [f"  {k} {'.' * (48 - len(k))} {v}" for k, v in kv]
    out.append("-------------------- end of arguments ---------------------")
    return out


WARN_TE = ("/usr/local/lib/python3.10/dist-packages/transformer_engine/pytorch/attention.py:2856: UserWarning: "
           "window_size should be (-1, -1) or (>=0, >=0) for attn_mask_type=causal")
WARN_C10D = ("/usr/local/lib/python3.10/dist-packages/torch/distributed/c10d_logger.py:47: UserWarning: "
             "torch.distributed._all_gather_base is a private function and will be deprecated. Please use "
             "torch.distributed.all_gather_into_tensor instead.")

TB_TORCHRUN = [
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 33, in <module>',
    f"    sys.exit(load_entry_point('torch=={TORCH}', 'console_scripts', 'torchrun')())",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py",'
    ' line 346, in wrapper',
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

FRAMES_TIMEOUT = [
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x99 (0x7f{a}2b9d99 in"
    " /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)",
    "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long,"
    " std::ratio<1l, 1000l> > >) + 0x1e6 (0x7f{a}5a96e6 in"
    " /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #2: c10d::ProcessGroupNCCL::workCleanupLoop() + 0x19d (0x7f{a}5acc3d in"
    " /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x119 (0x7f{a}5ad839 in"
    " /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #4: <unknown function> + 0xdc253 (0x7f{a}82dc253 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
    "frame #5: <unknown function> + 0x94ac3 (0x7f{a}8694ac3 in /lib/x86_64-linux-gnu/libc.so.6)",
    "frame #6: clone + 0x44 (0x7f{a}8725a04 in /lib/x86_64-linux-gnu/libc.so.6)",
]

FRAMES_REMOTE = [
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x99 (0x7f{a}2b9d99 in"
    " /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)",
    "frame #1: c10d::ProcessGroupNCCL::checkForNCCLErrorsInternal(std::vector<std::shared_ptr<c10d::NCCLComm>,"
    " std::allocator<std::shared_ptr<c10d::NCCLComm> > > const&) + 0x2a9 (0x7f{a}5a1a29 in"
    " /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #2: c10d::ProcessGroupNCCL::WorkNCCL::checkAndSetException() + 0x7b (0x7f{a}5a3c6b in"
    " /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #3: c10d::ProcessGroupNCCL::workCleanupLoop() + 0x178 (0x7f{a}5acc18 in"
    " /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #4: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x119 (0x7f{a}5ad839 in"
    " /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #5: <unknown function> + 0xdc253 (0x7f{a}82dc253 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
    "frame #6: <unknown function> + 0x94ac3 (0x7f{a}8694ac3 in /lib/x86_64-linux-gnu/libc.so.6)",
]

ECC_TB = [
    "Traceback (most recent call last):",
    '  File "/workspace/Megatron-LM/pretrain_gpt.py", line 243, in <module>',
    "    pretrain(train_valid_test_datasets_provider,",
    '  File "/workspace/Megatron-LM/megatron/training/training.py", line 292, in pretrain',
    "    iteration, num_floating_point_operations_so_far = train(",
    '  File "/workspace/Megatron-LM/megatron/training/training.py", line 1094, in train',
    "    train_step(forward_step_func,",
    '  File "/workspace/Megatron-LM/megatron/training/training.py", line 587, in train_step',
    "    losses_reduced = forward_backward_func(",
    '  File "/workspace/Megatron-LM/megatron/core/pipeline_parallel/schedules.py", line 1267, in'
    ' forward_backward_pipelining_without_interleaving',
    "    input_tensor_grad = backward_step(",
    '  File "/workspace/Megatron-LM/megatron/core/pipeline_parallel/schedules.py", line 292, in backward_step',
    "    torch.autograd.backward(output_tensor[0], grad_tensors=output_tensor_grad[0])",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/autograd/__init__.py", line 251, in backward',
    "    Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass",
    "RuntimeError: CUDA error: uncorrectable ECC error encountered",
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be"
    " incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    "",
]


def child_failed(t: float, host: str, entries, root) -> list[str]:
    stamp = _split(t)[0].strftime("%Y-%m-%d_%H:%M:%S")
    out = TB_TORCHRUN + ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 60,
                         "pretrain_gpt.py FAILED", "-" * 60, "Failures:"]

    def ent(j, e):
        r, lr, ec, pid, tb = e
        return [f"[{j}]:", f"  time      : {stamp}", f"  host      : {host}", f"  rank      : {r} (local_rank: {lr})",
                f"  exitcode  : {ec} (pid: {pid})", "  error_file: <N/A>", f"  traceback : {tb}"]

    others = [e for e in entries if e is not root]
    if not others:
        out.append("  <NO_OTHER_FAILURES>")
    for j, e in enumerate(others, 1):
        out += ent(j, e)
    return out + ["-" * 60, "Root Cause (first observed failure):"] + ent(0, root) + ["=" * 60]


def watchdog_block(r_pg: int, seq: int, op: str, numel: int, ran_ms: int, full: bool, rng) -> list[str]:
    wd = (f"[Rank {r_pg}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, "
          f"NumelIn={numel}, NumelOut={numel}, Timeout(ms)={WATCHDOG_S * 1000}) ran for {ran_ms} milliseconds "
          f"before timing out.")
    out = [f"[E ProcessGroupNCCL.cpp:475] {wd}",
           "[E ProcessGroupNCCL.cpp:489] Some NCCL operations have failed or timed out. Due to the asynchronous "
           "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
           "[E ProcessGroupNCCL.cpp:495] To avoid data inconsistency, we are taking the entire process down."]
    if full:
        msg = f"[Rank {r_pg}] NCCL watchdog thread terminated with exception: {wd}"
        a = f"{rng.getrandbits(16):04x}"
        out += [f"[E ProcessGroupNCCL.cpp:916] {msg}",
                "terminate called after throwing an instance of 'c10::DistBackendError'", f"  what():  {msg}",
                "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:525 "
                "(most recent call first):"] + [f.replace("{a}", a) for f in FRAMES_TIMEOUT] + [""]
    return out


def train_log(a: Attempt, cast: Cast, pids: Pids, seed: int, info: dict) -> tuple[bytes, int]:
    rng = random.Random(f"{seed}-megascale-log-{a.k}")
    L = Sink()
    sk0, skl = cast.skew[a.nodes[0]], cast.skew[a.nodes[-1]]   # rank 0's clock, the last rank's clock
    S, F = a.S, a.F
    p_img, p_init, p_load, p_data = a.startup
    L.add(S, f"START TIME: {date_cmd(S + sk0)}")
    L.add(S + 0.02, f"+ srun --kill-on-bad-exit=1 --ntasks-per-node=1 torchrun --nnodes {len(a.nodes)} "
                    f"--nproc_per_node {GPN} --rdzv_backend c10d --rdzv_endpoint {a.nodes[0]}:29400 "
                    f"/workspace/Megatron-LM/pretrain_gpt.py ${{GPT_ARGS}} ${{DATA_ARGS}} ${{OUTPUT_ARGS}}")
    t = S + p_img
    for i, h in enumerate(a.nodes):
        tt = t + 0.3 + 0.04 * i
        pre = f"{glog_py(tt + cast.skew[h], 'W')} {pids.agent[h]} torch/distributed/run.py:757] "
        L.extend(tt, [pre, pre + "*" * 41,
                      pre + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to "
                            "avoid your system being overloaded, please further tune the variable for optimal "
                            "performance in your application as needed. ", pre + "*" * 41])
    ta = t + 7.5
    L.add(ta, f"using world size: {GPUS}, data-parallel size: {DP}, context-parallel size: 1, tensor-model-parallel "
              f"size: {TP}, pipeline-model-parallel size: {PP} ")
    L.add(ta, "using torch.bfloat16 for parameters ...")
    L.extend(ta, megatron_args())
    L.extend(ta + 0.4, ["> building GPT2BPETokenizer tokenizer ...",
                        " > padded vocab (size: 50257) with 943 dummy tokens (new size: 51200)",
                        "> initializing torch distributed ..."])
    tn = ta + 3.0
    for i, h in enumerate(a.nodes):
        L.extend(tn + 0.05 * i, nccl_init(a, h, pids, random.Random(f"{seed}-megascale-ncclinit-{a.k}-{h}")))
    if a.k == 1:
        gh = cast.G                                             # decoy: harmless async event
        d = 6
        L.add(tn + 4.0, f"{gh}:{pids.worker[gh, d]}:{pids.proxy[gh, d] + 3} [{d}] transport/net_ib.cc:93 NCCL WARN "
                        f"NET/IB : Got async event : GID table change")
        L.add(tn + 4.0, "")
    ti = S + p_img + p_init
    L.extend(ti - 8.0, [f"> initialized tensor model parallel with size {TP}",
                        f"> initialized pipeline model parallel with size {PP}",
                        "> setting random seeds to 1234 ...",
                        "> compiling dataset index builder ...",
                        "make: Entering directory '/workspace/Megatron-LM/megatron/core/datasets'",
                        "make: Nothing to be done for 'default'.",
                        "make: Leaving directory '/workspace/Megatron-LM/megatron/core/datasets'",
                        ">>> done with dataset index builder. Compilation time: 0.048 seconds"])
    L.add(ti - 1.0, f"time to initialize megatron (seconds): {p_init - 1.0 + rng.random():.3f}")
    L.add(ti, f"[after megatron is initialized] datetime: {meg_ts(ti + sk0)} ")
    L.add(ti + 0.4, "building GPT model ...")
    for tpr, ppr in [(0, 0), (3, 1), (6, 2), (1, 3)]:
        L.add(ti + 3.0, f" > number of parameters on (tensor, pipeline) model parallel rank ({tpr}, {ppr}): "
                        f"{5_470_101_504 if ppr in (0, 3) else 5_436_985_344}")
    L.add(ti + 6.0, "> learning rate decay style: cosine")
    tl = ti + 12.0
    if a.load == 0:
        L.extend(tl, [f"WARNING: could not find the metadata file {CKPT}/latest_checkpointed_iteration.txt ",
                      "    will not load any checkpoints and will start from random"])
    else:
        L.add(tl, f" loading distributed checkpoint from {CKPT} at iteration {a.load}")
        L.add(ti + p_load - 2.0, f"  successfully loaded checkpoint from {CKPT} [ t 1/{TP}, p 1/{PP} ] "
                                 f"at iteration {a.load}")
        L.extend(ti + p_load - 1.9, ["(min, max) time across ranks (ms):",
                                     f"    {'load-checkpoint '.ljust(48, '.')}: ({(p_load - 14.8) * 1000:.2f}, "
                                     f"{(p_load - 14.1) * 1000:.2f})"])
    tm = ti + max(p_load, 14.0)
    L.add(tm, f"[after model, optimizer, and learning rate scheduler are built] datetime: {meg_ts(tm + sk0)} ")
    L.extend(tm + 0.5, ["> building train, validation, and test datasets ...",
                        " > datasets target sizes (minimum size):", f"    train:      {TRAIN_ITERS * GBS}",
                        f"    validation: {(TRAIN_ITERS // 1000 + 1) * 10 * GBS}",
                        f"    test:       {10 * GBS}", "> building train, validation, and test datasets for GPT ..."])
    L.add(tm + 2.0, b"> WARNING: skipping document 66120417 in /data/pile_dedup/pile_00_text_document: bad utf-8 "
                    b"'Stra\xdfe \xe9t\xe9 \xff'")
    L.add(F - 1.5, "> finished creating GPT datasets ...")
    L.add(F - 1.0, f"[after dataloaders are built] datetime: {meg_ts(F - 1.0 + sk0)} ")
    L.extend(F - 0.8, ["done with setup ...", "training ..."])
    L.add(F, f"[before the start of training step] datetime: {meg_ts(F + sk0)} ")
    for j in range(3):
        L.extend(F + 2.0 + 0.01 * j, [WARN_C10D, "  warnings.warn("])
    L.extend(F + 3.0, [WARN_TE, "  warnings.warn("])
    # iteration lines: last rank, its clock, every LOG_INTERVAL
    lrng = random.Random(f"{seed}-megascale-loss-{a.k}")
    steps = a.steps
    for j, (n, ts, dur) in enumerate(steps):
        if n % LOG_INTERVAL != 0:
            continue
        win = [d for (_, _, d) in steps[max(0, j - LOG_INTERVAL + 1): j + 1]]
        avg = sum(win) / len(win)
        end = ts + dur
        gn = 0.19 + 2.4 * math.exp(-n / 400.0) + abs(lrng.gauss(0, 0.015))
        L.add(end, f" [{meg_ts(end + skl)}] iteration {n:8d}/{TRAIN_ITERS:8d} | consumed samples: {n * GBS:12d} | "
                   f"elapsed time per iteration (ms): {avg * 1000:.1f} | learning rate: {lr_at(n):.6E} | "
                   f"global batch size: {GBS:5d} | lm loss: {loss_at(n, lrng):.6E} | loss scale: 1.0 | "
                   f"grad norm: {gn:.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |")
    first = next(((n, ts + d) for n, ts, d in steps if n % LOG_INTERVAL == 0), None)
    if first:
        L.add(first[1] + 0.01, f"[Rank {GPUS - 1}] (after {first[0]} iterations) memory (MB) | allocated: "
                               "41877.30859375 | max allocated: 66021.171875 | reserved: 70114.0 | "
                               "max reserved: 70114.0")
    if a.kind == "network":                    # NCCL's async-event thread on every process of X, each flap
        for down, up in [f for f in cast.flaps if f[0] < a.R + 20]:   # the processes are gone after that
            for d in range(GPN):
                tid = pids.proxy[cast.X, d] + 2
                pre = f"{cast.X}:{pids.worker[cast.X, d]}:{tid} [{d}] transport/net_ib.cc:93 NCCL WARN "
                L.extend(down + 0.002 * d, [pre + "NET/IB : Got async event : port error", ""])
                if up < a.R + 25:
                    L.extend(up + 0.002 * d, [pre + "NET/IB : Got async event : port active", ""])
    for n, ts, c in a.saves:
        L.add(ts + 0.001, f"saving checkpoint at iteration {n:7d} to {CKPT} in torch_dist format")
        L.add(ts + 0.002, "Storing distributed optimizer sharded state of type fully_sharded_model_space")
        L.add(ts + c - 0.01, f"  successfully saved checkpoint from iteration {n:7d} to {CKPT}")
        L.extend(ts + c - 0.005, ["(min, max) time across ranks (ms):",
                                  f"    {'save-checkpoint '.ljust(48, '.')}: "
                                  f"({c * 1000 - rng.uniform(40, 400):.2f}, {c * 1000:.2f})"])
    for _n, ts, _dur in steps[:: max(1, len(steps) // 9)]:
        L.add(ts + 0.4, "")
    cut = 0
    if a.kind == "network":
        cut = end_network(a, L, cast, pids, rng, info)
    elif a.kind == "ecc":
        end_ecc(a, L, cast, pids, rng, info)
    elif a.kind == "hang":
        end_hang(a, L, cast, pids, rng, info)
    else:
        L.add(a.E - 2.2, f"[after training is done] datetime: {meg_ts(a.E - 2.2 + sk0)} ")
        for i, h in enumerate(a.nodes):
            for d in range(GPN):
                L.add(a.E - 1.5, f"{h}:{pids.worker[h, d]}:{pids.worker[h, d]} [{d}] NCCL INFO comm {pids.comm[h, d]} "
                                 f"rank {i * GPN + d} nranks {GPUS} cudaDev {d} busId {BUSIDS[d]} - Destroy COMPLETE")
        L.add(a.E - 0.5, f"END TIME: {date_cmd(a.E - 0.5 + sk0)}")
    return L.render(cut), cut


def agents_die(a, L, cast, pids, t0, skip=()):
    for i, h in enumerate(a.nodes):
        if h in skip:
            continue
        tt = t0 + 0.03 * i
        sk = cast.skew[h]
        L.add(tt, f"{glog_py(tt + sk, 'W')} {pids.agent[h]} torch/distributed/elastic/agent/server/api.py:704] "
                  f"Received 15 death signal, shutting down workers")
        for d in range(GPN):
            L.add(tt + 0.001, f"{glog_py(tt + 0.001 + sk, 'W')} {pids.agent[h]} torch/distributed/elastic/"
                              f"multiprocessing/api.py:836] Sending process {pids.worker[h, d]} closing signal SIGTERM")


def end_network(a, L, cast, pids, rng, info) -> int:
    R, E, k = a.R, a.E, cast.rail
    X = cast.X
    t_err = R + 21.0 + rng.uniform(0.0, 1.5)
    trio = [X] + cast.peers
    info["nccl_error_ts"] = t_err
    for j, h in enumerate(trio):
        i = a.nodes.index(h)
        w, px = pids.worker[h, k], pids.proxy[h, k]
        peers = cast.peers if h == X else [X]
        tt = t_err + 0.15 * j
        for q, peer in enumerate(peers):
            port = rng.randint(40000, 62000)
            L.extend(tt + 0.01 * q, ["", f"{h}:{w}:{px} [{k}] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got "
                                         f"completion from peer {host_ip(peer)}<{port}> with error 12, opcode "
                                         f"{rng.choice([0, 1])}, len 0, vendor err 129",
                                     f"{h}:{w}:{px} [{k}] NCCL INFO transport/net.cc:1125 -> 6",
                                     f"{h}:{w}:{px} [{k}] NCCL INFO proxy.cc:698 -> 6",
                                     f"{h}:{w}:{px} [{k}] NCCL INFO proxy.cc:878 -> 6 [Proxy Thread]"])
        last = (f"NET/IB : Got completion from peer {host_ip(peers[0])}<{rng.randint(40000, 62000)}> with error 12, "
                f"opcode 0, len 0, vendor err 129")
        r_pg = i % DP
        msg = (f"[Rank {r_pg}] NCCL watchdog thread terminated with exception: NCCL error: remote process exited or "
               f"there was a network error, NCCL version {NCCL_VERSION}")
        aa = f"{rng.getrandbits(16):04x}"
        L.extend(tt + 1.2, [f"[E ProcessGroupNCCL.cpp:916] {msg}",
                            "ncclRemoteError: A call failed possibly due to a network error or a remote process "
                            "exiting prematurely.", "Last error:", last,
                            "terminate called after throwing an instance of 'c10::DistBackendError'",
                            f"  what():  {msg}",
                            "ncclRemoteError: A call failed possibly due to a network error or a remote process "
                            "exiting prematurely.", "Last error:", last,
                            "Exception raised from checkForNCCLErrorsInternal at ../torch/csrc/distributed/c10d/"
                            "ProcessGroupNCCL.cpp:1436 (most recent call first):"]
                 + [f.replace("{a}", aa) for f in FRAMES_REMOTE] + [""])
    t_fail = t_err + 3.0
    for j, h in enumerate(trio):
        i = a.nodes.index(h)
        tf = t_fail + 0.25 * j + rng.uniform(0, 0.1)
        sk = cast.skew[h]
        for d in range(GPN):
            if d != k:
                L.add(tf - 0.1, f"{glog_py(tf - 0.1 + sk, 'W')} {pids.agent[h]} torch/distributed/elastic/"
                                f"multiprocessing/api.py:836] Sending process {pids.worker[h, d]} closing signal "
                                f"SIGTERM")
        L.add(tf, f"{glog_py(tf + sk, 'E')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/api.py:821] "
                  f"failed (exitcode: -6) local_rank: {k} (pid: {pids.worker[h, k]}) of binary: /usr/bin/python")
        ents = [(i * GPN + d, d, -6 if d == k else -15, pids.worker[h, d],
                 f"Signal {6 if d == k else 15} ({'SIGABRT' if d == k else 'SIGTERM'}) received by PID "
                 f"{pids.worker[h, d]}")
                for d in range(GPN)]
        L.extend(tf + 0.01, child_failed(tf + sk, h, ents, ents[k]))
    ts = t_fail + 2.0
    for h in trio:
        L.add(ts, f"srun: error: {h}: task {a.nodes.index(h)}: Exited with exit code 1")
    L.add(ts + 0.1, f"srun: Terminating StepId={a.job}.0")
    L.add(ts + 0.3, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(ts + 0.3)} ***")
    agents_die(a, L, cast, pids, ts + 0.5, skip=trio)
    for i, h in enumerate(a.nodes):
        if h not in trio:
            L.add(E - 1.4 + 0.005 * i, f"srun: error: {h}: task {i}: Terminated")
    last = f"srun: Force Terminated StepId={a.job}.0"
    L.add(E - 0.8, last)
    return len(last) - 17                          # the file ends in "srun: Force Termi"


def end_ecc(a, L, cast, pids, rng, info):
    R, E = a.R, a.E
    h, g = cast.W, cast.W_gpu
    i = a.nodes.index(h)
    te = R + 0.9 + rng.uniform(0, 0.3)
    info["cuda_error_ts"] = te
    L.extend(te, ECC_TB)
    tf = R + 3.2
    sk = cast.skew[h]
    for d in range(GPN):
        if d != g:
            L.add(tf - 0.2, f"{glog_py(tf - 0.2 + sk, 'W')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/"
                            f"api.py:836] Sending process {pids.worker[h, d]} closing signal SIGTERM")
    L.add(tf, f"{glog_py(tf + sk, 'E')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/api.py:821] "
              f"failed (exitcode: 1) local_rank: {g} (pid: {pids.worker[h, g]}) of binary: /usr/bin/python")
    ents = [(i * GPN + d, d, 1 if d == g else -15, pids.worker[h, d],
             "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html" if d == g
             else f"Signal 15 (SIGTERM) received by PID {pids.worker[h, d]}") for d in range(GPN)]
    L.extend(tf + 0.01, child_failed(tf + sk, h, ents, ents[g]))
    ts = R + 4.6
    L.add(ts, f"srun: error: {h}: task {i}: Exited with exit code 1")
    L.add(ts + 0.1, f"srun: Terminating StepId={a.job}.0")
    L.add(ts + 0.3, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(ts + 0.3)} ***")
    agents_die(a, L, cast, pids, ts + 0.5, skip=(h,))
    for j, hh in enumerate(a.nodes):
        if hh != h:
            L.add(E - 1.3 + 0.005 * j, f"srun: error: {hh}: task {j}: Terminated")
    L.add(E - 0.7, f"srun: Force Terminated StepId={a.job}.0")


def end_hang(a, L, cast, pids, rng, info):
    R, E = a.R, a.E
    z, zg = cast.Z, cast.Z_gpu
    seq_dp = 60_000 + rng.randint(0, 9000)
    seq_tp = 4_100_000 + rng.randint(0, 90000)
    lay = layout(a.nodes)
    order = [x for x in lay if not (x[1] == z and x[2] == zg)]
    rng.shuffle(order)
    tw0 = R + WATCHDOG_S + 0.4
    info["watchdog_first_ts"] = tw0
    for j, (_r, h, d) in enumerate(order):
        i = a.nodes.index(h)
        if h == z:        # TP peers of the stuck rank: blocked in the next step's first TP all-reduce
            blk = watchdog_block(d, seq_tp, "ALLREDUCE", 25165824, WATCHDOG_S * 1000 + rng.randint(5, 400),
                                 j % 3 == 0, rng)
        elif i // DP == a.nodes.index(z) // DP:   # same pipeline stage: blocked in the DP reduce-scatter
            blk = watchdog_block(i % DP, seq_dp, "_REDUCE_SCATTER_BASE", 226492416,
                                 WATCHDOG_S * 1000 + rng.randint(5, 900), j % 5 == 0, rng)
        else:
            blk = watchdog_block(i // DP, seq_dp // 2 + 17, "RECV" if d % 2 else "SEND", 25165824,
                                 WATCHDOG_S * 1000 + rng.randint(5, 1200), j % 7 == 0, rng)
        L.extend(tw0 + 0.02 * j + rng.uniform(0, 6.0), blk)
    t_fail = tw0 + 9.0
    for i, h in enumerate(a.nodes):
        tf = t_fail + 0.07 * i
        sk = cast.skew[h]
        dd = [d for d in range(GPN) if not (h == z and d == zg)]
        root_d = dd[rng.randrange(len(dd))]
        ents = [(i * GPN + d, d, -15 if (h == z and d == zg) else -6, pids.worker[h, d],
                 f"Signal {15 if (h == z and d == zg) else 6} ({'SIGTERM' if (h == z and d == zg) else 'SIGABRT'}) "
                 f"received by PID {pids.worker[h, d]}") for d in range(GPN)]
        if h == z:
            L.add(tf - 0.3, f"{glog_py(tf - 0.3 + sk, 'W')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/"
                            f"api.py:836] Sending process {pids.worker[h, zg]} closing signal SIGTERM")
        L.add(tf, f"{glog_py(tf + sk, 'E')} {pids.agent[h]} torch/distributed/elastic/multiprocessing/api.py:821] "
                  f"failed (exitcode: -6) local_rank: {root_d} (pid: {pids.worker[h, root_d]}) of binary: "
                  f"/usr/bin/python")
        L.extend(tf + 0.01, child_failed(tf + sk, h, ents, ents[root_d]))
    ts = t_fail + 0.07 * len(a.nodes) + 1.0
    for i, h in enumerate(a.nodes):
        L.add(ts + 0.004 * i, f"srun: error: {h}: task {i}: Exited with exit code 1")
    L.add(ts + 0.2, f"srun: Terminating StepId={a.job}.0")
    L.add(E - 1.0, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(E - 1.0)} ***")
    L.add(E - 0.6, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")


# ----------------------------------------------------------------------------- per-rank step records
def timings(a: Attempt, cast: Cast, seed: int, lo: int, hi: int, iso: bool, stuck: tuple[str, int] | None):
    sel = [s for s in a.steps if lo <= s[0] <= hi]
    lrng = random.Random(f"{seed}-megascale-jl-loss-{a.k}")
    losses = {n: round(loss_at(n, lrng), 4) for n, _, _ in sel}
    tok = TOKENS_PER_STEP // GPUS
    out = {}
    for r, h, d in layout(a.nodes):
        rng = random.Random(f"{seed}-megascale-jl-{a.k}-{r}")
        sk = cast.skew[h]
        recs = []
        for n, ts, dur in sel:
            if stuck and (h, d) == stuck and n == sel[-1][0]:
                break
            slow = a.strag is not None and h == cast.Y and a.strag[0] <= n <= a.strag[1]
            comp = BASE_COMPUTE * (STRAGGLER_FACTOR if slow else 1.0) * (1 + rng.uniform(-0.004, 0.004))
            data = BASE_DATA * (1 + rng.uniform(-0.08, 0.08))
            comm = dur - comp - data
            assert comm > 0.02, (n, h, comm)
            stamp = f'"{iso_off(ts + dur + sk)}"' if iso else f"{ts + dur + sk:.3f}"
            recs.append(f'{{"ts":{stamp},"rank":{r},"host":"{h}","step":{n},"step_s":{dur:.4f},'
                        f'"compute_s":{comp:.4f},"comm_s":{comm:.4f},"data_s":{data:.4f},"tokens":{tok},'
                        f'"loss":{losses[n]:.4f}}}')
        out[(h, r)] = recs
    return out


# ----------------------------------------------------------------------------- kernel logs
NOISE = [
    "perf: interrupt took too long ({a} > {b}), lowering kernel.perf_event_max_sample_rate to {c}",
    "hrtimer: interrupt took {n} ns",
    "kauditd_printk_skb: {k} callbacks suppressed",
    "IPv6: ADDRCONF(NETDEV_CHANGE): veth{v}: link becomes ready",
    "docker0: port 1(veth{v}) entered blocking state",
    "docker0: port 1(veth{v}) entered forwarding state",
    "TCP: request_sock_TCP: Possible SYN flooding on port 29400. Sending cookies.  Check SNMP counters.",
]


def noise(t0: float, t1: float, rng: random.Random):
    out, t = [], t0 + rng.uniform(400, 6000)
    while t < t1:
        a = rng.randint(2501, 6000)
        out.append((t, rng.choice(NOISE).format(a=a, b=a - 8, c=rng.choice([79750, 63750, 49750]),
                                                n=rng.randint(9000, 60000), k=rng.randint(3, 40),
                                                v=f"{rng.getrandbits(28):07x}")))
        t += rng.uniform(1500, 11000)
    return out


def boot_lines() -> list[tuple[float, str]]:
    out = [(0.0, f"Linux version {KERNEL} (buildd@lcy02-amd64-051) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, "
                 f"GNU ld (GNU Binutils for Ubuntu) 2.38) #129-Ubuntu SMP Fri Aug 2 19:25:20 UTC 2024"),
           (0.0, "DMI: Inspur NF5688M7/NF5688M7, BIOS 05.02.01 03/15/2024")]
    for k in range(GPN):
        out.append((10.8 + 0.01 * k, f"mlx5_core {NIC_PCI[k]}: firmware version: 28.39.1002"))
        out.append((12.2 + 0.01 * k, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: renamed from eth{k + 1}"))
    out.append((21.5, f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {DRIVER}  Sun Jun 16 00:12:14 UTC 2024"))
    out.append((33.0, "Lustre: Lustre: Build Version: 2.15.4"))
    out.append((33.9, "Lustre: Mounted ckptfs-client"))
    for k in range(GPN):
        out.append((38.0 + 0.01 * k, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link up"))
    return out


def xid13(pci: str, rng: random.Random) -> list[str]:
    gpc, tpc = rng.randint(0, 7), rng.randint(0, 8)
    esr = 0x504730 + 0x800 * gpc
    return [f"NVRM: Xid (PCI:{pci}): 13, pid={rng.randint(40000, 900000)}, name=python, Graphics SM Warp Exception on "
            f"(GPC {gpc}, TPC {tpc}, SM 0): Out Of Range Address",
            f"NVRM: Xid (PCI:{pci}): 13, pid={rng.randint(40000, 900000)}, name=python, Graphics Exception: "
            f"ESR 0x{esr:x}=0xc11000e 0x{esr + 4:x}=0x0 0x{esr - 8:x}=0x4c1eb72 0x{esr - 4:x}=0x174"]


def render_kernel(style: str, host: str, events, skew: float, boot: float) -> bytes:
    frng = random.Random(f"megascale-frac-{host}")
    out, last = [], None
    for t, msg in sorted(events, key=lambda x: x[0]):
        tt = t + skew + frng.uniform(0.0, 0.0008)
        if last is not None and tt <= last:
            tt = last + 0.000013
        last = tt
        m = msg if isinstance(msg, bytes) else msg.encode()
        if style == "dmesg-T":
            pre = dmesg_T(tt) + " "
        elif style == "short-iso":
            pre = f"{short_iso(tt)} {host} kernel: "
        else:
            pre = f"{syslog_ts(tt)} {host} kernel: [{tt - boot - skew:12.6f}] "
        out.append(pre.encode() + m)
    return b"\n".join(out) + (b"\n" if out else b"")


def kernel_logs(attempts, cast: Cast, seed: int, bundle: Path, info: dict):
    a1, a2, a3, a4 = attempts
    t_end = a4.E + 1800
    k = cast.rail
    stall = [s for s in a2.saves if s[2] > 500][0]
    info["lustre_first"] = None
    cand = [h for h in a2.nodes[2:] if h not in (cast.W, cast.Z, cast.Y)]
    first_host = cand[seed % len(cand)]
    for idx, h in enumerate(HOSTS):
        hr = random.Random(f"{seed}-megascale-kern-{h}")
        boot = cast.boot[h]
        ev = [(boot + dt, m) for dt, m in boot_lines()] + noise(boot, t_end, hr)
        if h == cast.X:                         # harmless short flaps, then the fatal flapping
            for down, up in cast.flaps:
                ev += [(down, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link down"),
                       (up, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link up")]
        if h in a2.nodes:                       # the checkpoint OST stops answering during one save
            n, ts, c = stall
            t1 = ts + (31.0 if h == first_host else hr.uniform(36.0, 55.0))
            if info["lustre_first"] is None or t1 < info["lustre_first"][0]:
                info["lustre_first"] = (t1, h)
            osc = f"{OST}-osc-ffff{hr.getrandbits(32):08x}"
            sent = int(t1 - 47)
            ev += [(t1, f"Lustre: {hr.randint(3000, 9000)}:0:(client.c:2310:ptlrpc_expire_one_request()) @@@ Request "
                        f"sent has timed out for slow reply: [sent {sent}/real {sent}]  req@{hr.getrandbits(64):016x} "
                        f"x{hr.randint(10**15, 10**16 - 1)}/t0(0) o4->{osc}@{OSS_NID}:6/4 lens 488/448 e 0 to 1 "
                        f"dl {sent + 47} ref 2 fl Rpc:Xr/0/ffffffff rc 0/-1"),
                   (t1 + 0.01, f"Lustre: {osc}: Connection to {OST} (at {OSS_NID}) was lost; in progress operations "
                               f"using this service will wait for recovery to complete")]
            t2 = t1 + hr.uniform(140, 200)
            while t2 < ts + c - 60:
                ev.append((t2, f"Lustre: {hr.randint(3000, 9000)}:0:(client.c:2310:ptlrpc_expire_one_request()) "
                               f"Skipped "
                               f"{hr.randint(3, 40)} previous similar messages"))
                t2 += hr.uniform(150, 260)
            ev.append((ts + c - hr.uniform(4.0, 12.0), f"Lustre: {osc}: Connection restored to  (at {OSS_NID})"))
        if h == cast.W:
            g = cast.W_gpu
            pci = pci_of(BUSIDS[g])
            addr = 0x1f000000 + hr.getrandbits(24)
            ev += [(a2.R, f"NVRM: Xid (PCI:{pci}): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit "
                          f"error (DBE) has been detected on GPU in the framebuffer at physAddr 0x{addr:x} partition "
                          f"{hr.randint(0, 31)}, subpartition {hr.randint(0, 3)}."),
                   (a2.R + 0.023, f"NVRM: Xid (PCI:{pci}): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row "
                                  f"(0x{addr:016x}) marked for remapping, reset gpu to activate."),
                   (a2.R + 0.025, f"NVRM: Xid (PCI:{pci}): 94, pid='<unknown>', name=<unknown>, Contained: SM (0x1). "
                                  f"RST: No, D-RST: No")]
        if h == cast.D:                         # decoy: Xid 13 ~40 min before the hang; training kept its pace
            td = a3.R - 2400 - hr.uniform(0, 300)
            ev += [(td, m) for m in xid13(pci_of(BUSIDS[hr.randrange(GPN)]), hr)]
            info["xid13_ts"] = td
        if h == IDLE_SPARE:                     # decoy: idle spare, cable reseat + a diag job's Xid 13
            tb = a1.F + 0.6 * (a1.R - a1.F)
            for j in range(3):
                ev += [(tb + 30 * j, f"mlx5_core {NIC_PCI[2]} {NIC_IF[2]}: Link down"),
                       (tb + 30 * j + 6.5, f"mlx5_core {NIC_PCI[2]} {NIC_IF[2]}: Link up")]
            ev += [(a3.F + 900 + 120, m) for m in xid13(pci_of(BUSIDS[5]), hr)]
            info["spare_ts"] = tb
        skew = cast.skew[h]
        if idx % 3 == 0 or h == cast.X:         # rsyslog, rotated at 06:25 by logrotate
            old = [e for e in ev if e[0] + skew < ROTATE_AT]
            new = [e for e in ev if e[0] + skew >= ROTATE_AT]
            write_file(bundle / "nodes" / h / "kern.log.1.gz", render_kernel("syslog", h, old, skew, boot), gz=True)
            write_file(bundle / "nodes" / h / "kern.log", render_kernel("syslog", h, new, skew, boot))
        elif idx % 3 == 1:
            write_file(bundle / "nodes" / h / "dmesg-T.txt", render_kernel("dmesg-T", h, ev, skew, boot))
        else:
            write_file(bundle / "nodes" / h / "journal-kernel.txt", render_kernel("short-iso", h, ev, skew, boot))


# ----------------------------------------------------------------------------- scheduler
def scheduler_files(attempts, cast: Cast, bundle: Path, seed: int):
    rng = random.Random(f"{seed}-megascale-sched")
    L = Sink()

    def add(t, msg):
        L.add(t, f"{ctld_ts(t)} {msg}")

    hdr = "JobID|JobName|User|Partition|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"
    rows = []
    reasons = {1: (cast.X, f"{NIC_IF[cast.rail]} link flapping, RoCE cable/optic"),
               2: (cast.W, f"xid48 dbe gpu{cast.W_gpu} row remap pending"),
               3: (cast.Z, "llmops request: hold for diagnostics")}
    for a in attempts:
        submit = a.S - rng.randint(5, 60)
        hl = hostlist(a.nodes)
        cpus = 224 * len(a.nodes)
        add(submit + rng.uniform(0, 0.9), f"_slurm_rpc_submit_batch_job: JobId={a.job} "
                                          f"InitPrio=1{rng.randint(1000, 9999)} "
                                          f"usec={rng.randint(300, 900)}")
        add(a.S + rng.uniform(0.001, 0.05),
            f"sched: Allocate JobId={a.job} NodeList={hl} #CPUs={cpus} Partition=pretrain")
        end = a.E + rng.uniform(0.002, 0.4)
        if a.kind == "complete":
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 0")
            state, ec, steps = "COMPLETED", "0:0", [("batch", "COMPLETED", "0:0"), ("0", "COMPLETED", "0:0")]
        else:
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
            state, ec, steps = "FAILED", "1:0", [("batch", "FAILED", "1:0"), ("0", "CANCELLED", "0:15")]
            h, why = reasons[a.k]
            add(a.E + 420.5 + rng.uniform(0, 60), f"update_node: node {h} reason set to: {why}")
            add(a.E + 480.9 + rng.uniform(0, 60), f"update_node: node {h} state set to DRAINED")
        add(end + 0.01, f"_job_complete: JobId={a.job} done")
        rows.append((a.S, f"{a.job}|{RUN}|llmops|pretrain|{cpus}|{state}|{ec}|{slurm_ts(submit)}|{slurm_ts(a.S)}|"
                          f"{slurm_ts(a.E)}|{elapsed_str(a.E - a.S)}|{len(a.nodes)}|{hl}"))
        for sn, ss, sec in steps:
            nn, nl, cp = (1, a.nodes[0], 224) if sn == "batch" else (len(a.nodes), hl, cpus)
            jn = "batch" if sn == "batch" else "torchrun"
            rows.append((a.S + 0.1, f"{a.job}.{sn}|{jn}||pretrain|{cp}|{ss}|{sec}|{slurm_ts(a.S)}|{slurm_ts(a.S)}|"
                                    f"{slurm_ts(a.E)}|{elapsed_str(a.E - a.S)}|{nn}|{nl}"))
    a1, a3 = attempts[0], attempts[2]
    for st, jid, name, dur in ((a1.F + 0.55 * (a1.R - a1.F), 730431, "cable-reseat-check", 600),
                               (a3.F + 900, 730471, "dcgm-diag-r3", 1500)):
        add(st, f"sched: Allocate JobId={jid} NodeList={IDLE_SPARE} #CPUs=224 Partition=maint")
        add(st + dur, f"_job_complete: JobId={jid} WEXITSTATUS 0")
        add(st + dur + 0.01, f"_job_complete: JobId={jid} done")
        rows.append((st, f"{jid}|{name}|root|maint|224|COMPLETED|0:0|{slurm_ts(st - 4)}|{slurm_ts(st)}|"
                         f"{slurm_ts(st + dur)}|{elapsed_str(dur)}|1|{IDLE_SPARE}"))
    rows.sort(key=lambda x: x[0])
    write_file(bundle / "scheduler" / "slurmctld.log", L.render())
    write_file(bundle / "scheduler" / "sacct.txt", ("\n".join([hdr] + [r for _, r in rows]) + "\n").encode())


def inventory_toml() -> str:
    return f"""# fleet inventory (independent campaign "megascale")
[providers.{PROVIDER}]
usd_per_gpu_hour = 2.19
support = "noc@helix.example"

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = {GPN}
interconnect = "RoCEv2 8x400G (ConnectX-7), rail-optimised"
nodes = "{hostlist(HOSTS)}"
"""


def run_toml() -> str:
    return f"""# {RUN}: GPT {int(N_PARAMS / 1e9)}B, Megatron-LM, TP={TP} PP={PP} DP={DP}
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}   # global batch {GBS} x sequence length {SEQ}
params = {N_PARAMS:.4e}
layers = {LAYERS}
hidden = {HIDDEN}
seq_len = {SEQ}
flops_per_token = {FLOPS_PER_TOKEN:.4e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --nodes={NODES} --gpus-per-node={GPN} --exclude=<drained> gpt175b.sbatch"
"""


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    cast = Cast(seed)
    attempts = build_timeline(seed, cast)
    a1, a2, a3, a4 = attempts
    frng = random.Random(f"{seed}-megascale-flaps")
    early = [a1.F + 0.42 * (a1.R - a1.F), a1.F + 0.43 * (a1.R - a1.F) + 5.7]
    cast.flaps = [(t, t + frng.uniform(1.0, 2.2)) for t in early]
    cast.flaps += [(a1.R, a1.R + 41.3), (a1.R + 52.8, a1.R + 58.1), (a1.R + 190.4, a1.R + 197.9)]
    write_file(bundle / "inventory.toml", inventory_toml().encode())
    rdir = bundle / "runs" / RUN
    write_file(rdir / "run.toml", run_toml().encode())
    info: dict = {}
    for a in attempts:
        pids = Pids(seed, a)
        body, _ = train_log(a, cast, pids, seed, info)
        gz = a.k == 2
        write_file(rdir / f"attempt-{a.k}" / (f"slurm-{a.job}.out" + (".gz" if gz else "")), body, gz=gz)
    # per-rank records
    n_last = a3.steps[-1][0]
    recs3 = timings(a3, cast, seed, n_last - HANG_JSONL + 1, n_last, True, (cast.Z, cast.Z_gpu))
    for (h, r), recs in recs3.items():
        gzr = r % 4 == 1
        write_file(rdir / "attempt-3" / "timings" / h / (f"rank-{r:03d}.jsonl" + (".gz" if gzr else "")),
                   ("\n".join(recs) + "\n").encode(), gz=gzr)
    lo, hi = a4.strag[0] - JSONL_MARGIN, a4.strag[1] + JSONL_MARGIN
    recs4 = timings(a4, cast, seed, lo, hi, False, None)
    for (h, r), recs in recs4.items():
        body = "\n".join(recs) + "\n"
        if r == 37:
            body += recs[-1][:61]               # a killed writer's half line
        if r == 90:
            body = body.replace(recs[40] + "\n", recs[40] + "\n\n", 1)
        gzr = r % 8 != 3
        write_file(rdir / "attempt-4" / "timings" / h / (f"rank-{r:03d}.jsonl" + (".gz" if gzr else "")),
                   body.encode(), gz=gzr)
    kernel_logs(attempts, cast, seed, bundle, info)
    scheduler_files(attempts, cast, bundle, seed)
    cats, total, per_inc = ledger(attempts)
    g = GPUS / 3600.0
    stall = [s for s in a2.saves if s[2] > 500][0]
    normal = sorted(c for a in attempts for _, _, c in a.saves if c < 500)
    med = normal[len(normal) // 2]
    strag_exc = sum(d - BASE_STEP for n, _, d in a4.steps if a4.strag[0] <= n <= a4.strag[1]) * g
    incidents = []
    for j, a in enumerate(attempts[:3]):
        nxt = attempts[j + 1]
        incidents.append({
            "id": len(incidents) + 1, "attempt": a.k, "attempts": [a.k], "slurm_job": a.job,
            "failure_mode": a.mode, "blame": "provider" if a.mode in ("network", "gpu_memory_ecc") else "unknown",
            "host": a.root_host, "cluster": CLUSTER, "provider": PROVIDER, "gpu_index": a.gpu,
            "rank": a.nodes.index(a.root_host) * GPN + a.gpu,
            "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E), "next_start_ts": iso_z(nxt.S),
            "next_first_step_ts": iso_z(nxt.F), "last_ckpt_step": a.last_ckpt, "failed_at_step": a.steps[-1][0],
            "gpu_hours": per_inc[j], "gpu_hours_lost": round(sum(per_inc[j].values()), 4)})
    incidents[0]["nic"] = {"device": NIC_DEV[cast.rail], "netdev": NIC_IF[cast.rail], "pci": NIC_PCI[cast.rail]}
    incidents[0]["symptom_hosts"] = cast.peers
    incidents[0]["symptom_first_ts"] = iso_z(info["nccl_error_ts"])
    incidents[0]["earlier_harmless_flaps_ts"] = [iso_z(t) for t, _ in cast.flaps[:2]]
    incidents[1]["symptom_first_ts"] = iso_z(info["cuda_error_ts"])
    incidents[2]["stuck_rank_last_record_step"] = a3.steps[-1][0] - 1
    incidents[2]["others_last_record_step"] = a3.steps[-1][0]
    incidents[2]["watchdog_first_ts"] = iso_z(info["watchdog_first_ts"])
    incidents.append({
        "id": 4, "attempt": 2, "attempts": [2], "kind": "checkpoint_stall", "failure_mode": "filesystem_io",
        "blame": "provider", "host": None, "cluster": CLUSTER, "provider": PROVIDER, "service": f"{OST} ({OSS_NID})",
        "save_step": stall[0], "root_ts": iso_z(stall[1]), "end_ts": iso_z(stall[1] + stall[2]),
        "save_s": stall[2], "typical_save_s": med,
        "gpu_hours_lost": round((stall[2] - med) * g, 4),
        "first_reporting_host": info["lustre_first"][1]})
    incidents.append({
        "id": 5, "attempt": 4, "attempts": [4], "kind": "straggler", "failure_mode": None, "blame": "provider",
        "host": cast.Y, "cluster": CLUSTER, "provider": PROVIDER,
        "from_step": a4.strag[0], "to_step": a4.strag[1],
        "ranks": [r for r, h, _ in layout(a4.nodes) if h == cast.Y], "compute_factor": STRAGGLER_FACTOR,
        "gpu_hours_lost": round(strag_exc, 4)})
    decoys = {p: f"rail/pipeline peer of {cast.X}: its NCCL completion errors name {cast.X}; a symptom"
              for p in cast.peers}
    decoys[IDLE_SPARE] = ("idle spare, never in the run: mlx5 link flaps (cable reseat job) and an Xid 13 under "
                          "dcgm-diag")
    decoys[cast.G] = "NCCL WARN 'Got async event : GID table change' at init of attempt 1; harmless"
    decoys[cast.D] = "Xid 13 ~40 min before the attempt-3 hang; every rank kept its pace afterwards"
    fh = info["lustre_first"][1]
    decoys.setdefault(fh, f"first node to log the {OST} timeouts during the stalled save; the shared OST is the cause")
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK_H100_SXM,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK_H100_SXM), 4),
        "first_start_ts": iso_z(a1.S), "last_end_ts": iso_z(a4.E), "clock_skew_s": cast.skew,
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "nodes": hostlist(a.nodes), "start_ts": iso_z(a.S),
                      "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E), "loaded_step": a.load,
                      "last_step": a.steps[-1][0], "saves": [n for n, _, _ in a.saves], "end": a.kind}
                     for a in attempts],
        "per_rank_timings": [{"attempt": 3, "steps": [n_last - HANG_JSONL + 1, n_last], "ts": "ISO 8601"},
                             {"attempt": 4, "steps": [lo, hi], "ts": "epoch seconds"}],
        "match_on_attempt": True,
        "incidents": incidents,
        "straggler": {"host": cast.Y, "attempt": 4, "from_step": a4.strag[0], "to_step": a4.strag[1],
                      "excess_gpu_hours": round(strag_exc, 4)},
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys,
        "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incidents), 4)},
        "notes": ("Times are the controller's UTC clock; node clocks are off by clock_skew_s. host null (the "
                  "shared Lustre OST) matches any host. Ledger conventions: see the megascale.py docstring; the "
                  "stalled save counts in 'checkpoint', the straggler window's excess in 'straggler'."),
    }
    write_file(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output directory (bundle/ and truth.json go here)")
    ap.add_argument("--seed", type=int, default=20261207)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    files = [p for p in (out / "bundle").rglob("*") if p.is_file()]
    print(f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB) and "
          f"{out / 'truth.json'}; total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
