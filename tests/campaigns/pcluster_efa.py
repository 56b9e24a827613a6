#!/usr/bin/env python3
"""Campaign pcluster_efa: a ~20B Megatron-LM pretraining run on AWS ParallelCluster (Slurm on EC2, p5.48xlarge,
EFA through the aws-ofi-nccl plugin, FSx for Lustre for data and checkpoints), written before reading the analysis.

Writes, under --out DIR:
  DIR/bundle/inventory.toml, runs/pc-gpt20b/run.toml
  DIR/bundle/runs/pc-gpt20b/attempt-<k>/slurm-<jobid>.out          sbatch output (srun + torchrun + Megatron)
  DIR/bundle/runs/pc-gpt20b/attempt-<k>/nccl/<host>.log            NCCL_DEBUG=INFO (attempts 1, 2, 6)
  DIR/bundle/nodes/<host>/dmesg.log | kern.log                       dmesg -T or syslog kernel lines
  DIR/bundle/scheduler/{slurmctld.log, sacct.txt}
  DIR/bundle/scheduler/parallelcluster/{slurm_resume.log, slurm_suspend.log, clustermgtd}
  DIR/truth.json
Usage: pcluster_efa.py --out DIR [--seed N]        (Python 3.11, standard library only, deterministic per seed)

Scenario (run "pc-gpt20b", 128 GPUs = 16 nodes x 8 H100 of p5.48xlarge; 16 static nodes queue1-st-p5-[1-16],
4 dynamic nodes queue1-dy-p5-[1-4] that Slurm powers up/down through ParallelCluster; all clocks UTC):
  attempt 1 job 7101 fresh start; queue1-st-p5-5's EFA stops completing requests: aws-ofi-nccl WARNs
            "NET/OFI Request completed with error" on st-p5-5 first, then on its ring peers st-p5-4 and st-p5-6
            (their errors name st-p5-5's instance as the peer); ranks abort with ncclRemoteError, job FAILED.
                                                                  [network, queue1-st-p5-5]
  attempt 2 job 7102 (st-p5-5 drained, dynamic dy-p5-1 powered up in its place); Xid 79 on st-p5-9 GPU2;
            NCCL watchdog (600 s) on the other ranks, torchrun ChildFailedError, job FAILED.
                                                                  [gpu_fell_off_bus, queue1-st-p5-9]
  attempt 3 job 7103 (st-p5-9 drained, dy-p5-2 in); the loss jumps at one step (~1.9x) and keeps climbing, ~330
            steps later Megatron's "found NaN in local grad norm in backward pass" assertion fires on every rank,
            job FAILED.
                                                                  [loss_divergence, host null]
  attempt 4 job 7104 the team rolls back on purpose to a checkpoint from BEFORE the spike (not the newest one
            on disk: --ckpt-step) with a lower LR. At a save the FSx Lustre OSTs evict every client
            ("LustreError: 167-0: ...: This client was evicted by ...") on ALL 16 nodes; torch.save raises
            OSError on the ranks, job FAILED. The shared filesystem, no host.
                                                                  [filesystem_io, host null]
  attempt 5 job 7105 st-p5-12 fails its EC2 status check (the instance stops answering; slurmctld "not
            responding", clustermgtd replaces the static node: "Static node maintenance: unhealthy node is being
            replaced", "Terminating instances (x1) [...]"); slurmctld kills the job on the failed node, NODE_FAIL.
                                                                  [node_failure, queue1-st-p5-12]
            The resubmitted job waits: ParallelCluster's slurm_resume for dy-p5-3 gets InsufficientInstanceCapacity
            from CreateFleet, and the job only starts when the replacement instance of st-p5-12 is up. No
            taxonomy mode names "capacity not delivered" as the end of an attempt (it ended nothing: the attempt had
            already died of the node failure); the wait is booked as that incident's restart time.
  attempt 6 job 7106 Xid 94 (contained ECC) on st-p5-3 GPU6: the process on that GPU dies with "CUDA error:
            uncorrectable ECC error encountered", job FAILED; the node keeps running (it stays in attempt 7-8).
                                                                  [gpu_memory_ecc, queue1-st-p5-3]
  attempt 7 job 7107 runs into its 10 h TIME LIMIT                  [time_limit, host null]
  attempt 8 job 7108 completes.
  Decoys: dy-p5-4 powered up for another user's job during attempt 3 and "not resumed by ResumeTimeout", later an
  Xid 13 while running that user's job and a power-save suspend (never in our job); dy-p5-3's ICE at resume (it
  never ran our job); a harmless libfabric init <warn> on st-p5-2; a Lustre connection lost/restored blip on
  st-p5-14 in attempt 6 that training steps past; Megatron "number of skipped iterations:   1" in attempt 7;
  st-p5-4 / st-p5-6 only show symptoms of st-p5-5's EFA fault.

Ledger (conventions of shared campaign1.py/campaign2.py; GPU-hours = 128 x seconds / 3600):
  startup    = sacct Start -> first training step start ("[before the start of training step] datetime")
  productive = kept steps (step <= the checkpoint the NEXT attempt loads; all steps of the completed attempt)
  checkpoint = save durations of the saves that lie before the kept point, plus the tail after the final save
  recompute  = end of the save of the checkpoint the next attempt loads (or the first step start) -> root event
               (for the rollback: the steps and saves after the rolled-back-to checkpoint are thrown away too)
  hang       = root event -> attempt exit (sacct End). Root events: the first EFA error (st-p5-5), the Xid 79,
               the start of the step at which the loss jumped (the divergence's onset: the NaN assertion is the
               check that caught it, a symptom, as a watchdog timeout is of an Xid; the steps trained on the
               diverged loss after the onset are hang), the start of the save that the eviction broke, the step in
               flight when st-p5-12 stopped answering, the Xid 94, the time-limit cancellation.
  restart    = exit -> next start;  straggler = slowdown = data_stall = idle = 0.

Formats, as found with the search tools (facts; the text here is written anew):
  * ParallelCluster: slurm_resume.log "2023-11-14 11:36:33,660 - 48010 - [slurm_plugin.fleet_manager:
    _launch_instances] - ERROR - Error in CreateFleet request (<uuid>): InsufficientInstanceCapacity - We currently
    do not have sufficient p4d.24xlarge capacity in the Availability Zone you requested (us-east-1d). ..."
    (aws-parallelcluster-node PR #603/#560); clustermgtd "[slurm_plugin.clustermgtd:_perform_health_check_actions]
    - INFO - Performing instance health check actions", "_maintain_nodes ... Following nodes are currently in
    replacement: (x0) []" (aws-parallelcluster #2407), reason "Static node maintenance: unhealthy node is being
    replaced" (aws-parallelcluster-node PR #302), "[slurm_plugin.instance_manager:delete_instances] - INFO -
    Terminating instances (x1) ['i-...']" and "Nodes are now configured with instances (x1) [...]" (a public
    Llama3 training log on ParallelCluster).
  * slurmctld power save: "POWER: power_save: waking nodes X", "node X not resumed by ResumeTimeout(1800),
    setting DOWN and POWERED_DOWN" (Slurm power_save.c), "POWER: power_save: suspending nodes X"
    (GoogleCloudPlatform/cluster-toolkit #3337 shows the POWER: prefix).
  * aws-ofi-nccl: "NCCL INFO NET/OFI Using aws-ofi-nccl 1.3.0aws", "NET/OFI Selected Provider is efa", "Using network
    AWS Libfabric", "NCCL WARN NET/OFI Request completed with error. RC: 21. Error: unknown error"
    (aws/aws-ofi-nccl #161), libfabric "libfabric:462:1673041636:efa:core:rxr_info_to_rxr():506<warn> FI_HMEM
    capability requires RDMA, which this device does not support." (same thread).
  * Lustre: LCONSOLE_ERROR_MSG(0x167, "%s: This client was evicted by %.*s; in progress operations using this
    service will fail.") (lustre ptlrpc import.c), "LustreError: 11-0: ...: operation ost_write to node ... failed:
    rc = -107" and "Lustre: ...: Connection to ... (at ...) was lost; in progress operations using this service will
    wait for recovery to complete" (jade-hpc-gpu #14 and Lustre sources), "Connection restored to".
  * Megatron-LM iteration / checkpoint / timers lines and the NaN assertion "Rank 13: found NaN in local grad norm
    in backward pass before data-parallel communication collective. Device: 5, node: node-15-11"
    (megatron/core/distributed/param_and_grad_buffer.py); NVRM Xid 79/94/13 lines; PyTorch watchdog, torchrun and
    slurmstepd lines as in the shared campaigns.
"""
from __future__ import annotations

import argparse
import json
import math
import random
from datetime import UTC, datetime
from pathlib import Path

UTC = UTC
RUN = "pc-gpt20b"
CLUSTER, PROVIDER = "pcluster-use2", "aws"
GPN, NNODES = 8, 16
GPUS = GPN * NNODES
TP, PP, DP = 4, 2, 16
GBS, SEQ = 512, 4096
TOKENS_PER_STEP = GBS * SEQ
FLOPS_PER_TOKEN = 1.333e11                    # 6*20.0e9 + 12*44*6144*4096
PEAK = 989.4e12
BASE_STEP = 5.480
JITTER = 0.002
SAVE_INTERVAL = 250
LOG_INTERVAL = 10
T0 = datetime(2026, 10, 12, 2, 0, 0, tzinfo=UTC).timestamp()
CKPT = "/fsx/checkpoints/gpt20b"
FSNAME = "x7kq2bmv"
OSTS = [f"{FSNAME}-OST{i:04X}" for i in range(8)]
BUSIDS = ["53", "64", "75", "86", "97", "a8", "b9", "ca"]       # p5.48xlarge GPU PCI buses
ST = [f"queue1-st-p5-{i}" for i in range(1, 17)]
DY = [f"queue1-dy-p5-{i}" for i in range(1, 5)]
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]


def ip_of(h: str) -> str:
    n = int(h.rsplit("-", 1)[1])
    return f"10.1.{64 if '-st-' in h else 80}.{10 + n}"


def iid_of(h: str, gen: int = 0) -> str:
    """A stable EC2 instance id per (node, launch)."""
    return "i-0%016x" % ((int.from_bytes(h.encode(), "big") * 2654435761 + gen * 7919) % (1 << 60))


def _d(t: float) -> datetime:
    return datetime.fromtimestamp(int(t), UTC)


def ms(t: float) -> int:
    return int(round((t - int(t)) * 1000)) % 1000


def meg_ts(t):
    return _d(t).strftime("%Y-%m-%d %H:%M:%S")


def slurm_ts(t):
    return _d(t).strftime("%Y-%m-%dT%H:%M:%S")


def ctld_ts(t):
    return f"[{_d(t):%Y-%m-%dT%H:%M:%S}.{ms(t):03d}]"


def pc_ts(t):
    return f"{_d(t):%Y-%m-%d %H:%M:%S},{ms(t):03d}"


def dmesg_T(t):
    d = _d(t)
    return f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}]"


def syslog_ts(t):
    d = _d(t)
    return f"{d:%b} {d.day:2d} {d:%H:%M:%S}"


def date_cmd(t):
    d = _d(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def glog(t, lv):
    d = _d(t)
    return f"{lv}{d:%m%d} {d:%H:%M:%S}.{ms(t):03d}000"




def c10(t, lv, rng):
    d = _d(t)
    return f"{lv}{d:%m%d} {d:%H:%M:%S}.{ms(t):03d}{rng.randint(0, 999999):06d}"




def elapsed(sec):
    sec = int(round(sec))
    d, r = divmod(sec, 86400)
    h, r = divmod(r, 3600)
    m, s = divmod(r, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts):
    groups: dict[str, list[int]] = {}
    for h in hosts:
        p, n = h.rsplit("-", 1)
        groups.setdefault(p + "-", []).append(int(n))
    parts = []
    for p, nums in groups.items():
        nums.sort()
        rs, s, prev = [], nums[0], nums[0]
        for n in nums[1:] + [None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            rs.append(f"{s}" if s == prev else f"{s}-{prev}")
            if n is not None:
                s = prev = n
        parts.append(f"{p}[{','.join(rs)}]" if len(nums) > 1 else f"{p}{nums[0]}")
    return ",".join(parts)


class Sink:
    def __init__(self):
        self.items = []

    def add(self, t, line):
        self.items.append((t, len(self.items), line))

    def ext(self, t, lines):
        for ln in lines:
            self.add(t, ln)

    def render(self) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
        return ("\n".join(x[2] for x in self.items) + "\n").encode()


def write(path: Path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# ----------------------------------------------------------------------------- timeline
class Att:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps, self.saves = [], []
        self.R = self.E = self.T = None


def build(seed: int):
    rng = random.Random(f"{seed}-tl")
    n1 = ST[:]
    n2 = ST[:4] + ST[5:] + [DY[0]]
    n3 = ST[:4] + ST[5:8] + ST[9:] + DY[:2]
    specs = [
        dict(k=1, job=7101, nodes=n1, kind="failure", mode="network", host=ST[4], gpu=3,
             n_saves=8, k_after=120 + rng.randint(0, 100), hang=55 + rng.randint(-4, 4), startup=260, gap=1500),
        dict(k=2, job=7102, nodes=n2, kind="failure", mode="gpu_fell_off_bus", host=ST[8], gpu=2,
             n_saves=6, k_after=60 + rng.randint(0, 150), hang=622 + rng.randint(-3, 3), startup=330, gap=1900),
        dict(k=3, job=7103, nodes=n3, kind="failure", mode="loss_divergence", host=None, gpu=None,
             n_saves=7, k_after=90 + rng.randint(0, 100), hang=38 + rng.randint(-3, 3), startup=320, gap=5400),
        dict(k=4, job=7104, nodes=n3, kind="failure", mode="filesystem_io", host=None, gpu=None,
             n_saves=5, k_after=0, hang=300 + rng.randint(-20, 20), startup=340, gap=1200),
        dict(k=5, job=7105, nodes=n3, kind="failure", mode="node_failure", host=ST[11], gpu=None,
             n_saves=6, k_after=80 + rng.randint(0, 140), hang=372 + rng.randint(-10, 10), startup=330, gap=3300),
        dict(k=6, job=7106, nodes=n3, kind="failure", mode="gpu_memory_ecc", host=ST[2], gpu=6,
             n_saves=4, k_after=40 + rng.randint(0, 160), hang=47 + rng.randint(-3, 3), startup=335, gap=1000),
        dict(k=7, job=7107, nodes=n3, kind="time_limit", mode="time_limit", host=None, gpu=None,
             limit=10 * 3600, startup=325, gap=700),
        dict(k=8, job=7108, nodes=n3, kind="complete", mode=None, host=None, gpu=None,
             n_steps=2500, startup=320, gap=None),
    ]
    atts = [Att(**s) for s in specs]
    t, load = T0, 0
    for a in atts:
        a.startup += rng.randint(-5, 5)
        a.load = load
        srng = random.Random(f"{seed}-steps-{a.k}")
        while True:
            a.S = float(t)
            a.F = a.S + a.startup
            if simulate(a, srng):
                break
            a.startup += 61
        if a.kind == "complete":
            break
        a.kept = a.saves[-1][0] if a.saves else a.load
        a.root = a.R
        if a.mode == "loss_divergence":        # the cause is the divergence's onset, not the NaN check that caught it
            a.root = next(t for n, t, _ in a.steps if n == a.spike_from)
            a.kept = max(n for n, _, _ in a.saves if n < a.spike_from)  # roll back to the save before the spike
        elif a.mode == "filesystem_io":        # the save that the eviction broke is not durable
            a.kept = a.saves[-1][0] if a.saves else a.load
        load = a.kept
        t = a.E + a.gap + rng.randint(-60, 60)
    return atts


def simulate(a: Att, rng: random.Random) -> bool:
    a.steps, a.saves = [], []
    t, n = a.F, a.load
    fail = None
    if a.kind == "failure":
        fail = (a.load // SAVE_INTERVAL + a.n_saves) * SAVE_INTERVAL + a.k_after + 1
        if a.mode == "filesystem_io":
            fail = (a.load // SAVE_INTERVAL + a.n_saves) * SAVE_INTERVAL   # the eviction hits this save
        if a.mode == "loss_divergence":
            a.spike_from = fail - 330
    if a.kind == "time_limit":
        a.T = a.S + a.limit
    while True:
        if a.kind == "complete" and n >= a.load + a.n_steps:
            break
        n1 = n + 1
        dur = BASE_STEP * (1 + rng.uniform(-JITTER, JITTER))
        if a.kind == "failure" and a.mode != "filesystem_io" and n1 == fail:
            a.R = float(math.floor(t + 0.5 * dur))
            a.E = a.R + a.hang
            break
        if a.kind == "time_limit" and t + dur > a.T:
            a.R, a.E = a.T, a.T + 3.0
            break
        a.steps.append((n1, t, dur))
        t += dur
        n = n1
        if n % SAVE_INTERVAL == 0:
            c = round(rng.uniform(38.0, 46.0), 2)
            if a.kind == "failure" and a.mode == "filesystem_io" and n == fail:
                a.R = float(math.floor(t)) + 1.0          # the save starts; the OSTs evict within seconds
                a.E = a.R + a.hang
                a.broken_save = (n, t)
                return True
            if a.kind == "time_limit" and t + c > a.T - 10:
                return False
            a.saves.append((n, t, c))
            t += c
    if a.kind == "complete":
        a.E = float(math.ceil(t + 4.0))
    return True


def ledger(atts):
    cats = dict.fromkeys(["productive", "straggler", "checkpoint", "data_stall", "recompute", "hang",
                          "restart", "startup", "idle"], 0.0)
    per = []
    for i, a in enumerate(atts):
        cats["startup"] += a.F - a.S
        lim = a.kept if a.kind != "complete" else 10 ** 9
        for n, _, d in a.steps:
            if n <= lim:
                cats["productive"] += d
        for n, _, c in a.saves:
            if n <= lim:
                cats["checkpoint"] += c
        if a.kind == "complete":
            cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        kept_save = [s for s in a.saves if s[0] == a.kept]
        base = kept_save[0][1] + kept_save[0][2] if kept_save else a.F
        rec, hang, nxt = a.root - base, a.E - a.root, atts[i + 1]
        cats["recompute"] += rec
        cats["hang"] += hang
        cats["restart"] += nxt.S - a.E
        per.append(dict(hang=hang, recompute=rec, restart=nxt.S - a.E, startup=nxt.F - nxt.S))
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per])


# ----------------------------------------------------------------------------- training log (slurm-%j.out)
TRAIN_ITERS = 0


def lr_at(n: int, lmax: float) -> float:
    warm, lmin = 2000, lmax / 10
    if n < warm:
        return lmax * n / warm
    p = min(1.0, (n - warm) / max(1, TRAIN_ITERS - warm))
    return lmin + 0.5 * (lmax - lmin) * (1 + math.cos(math.pi * p))


def loss_curve(a: Att, n: int) -> float:
    """The loss of step n; a divergence jumps at one step and keeps climbing until the NaN check fires."""
    base = 2.05 + 8.6 * math.exp(-n / 400.0) + 0.7 * math.exp(-n / 7000.0)
    if a.mode == "loss_divergence" and n >= a.spike_from:
        base = 1.9 * base + 0.006 * (n - a.spike_from)
    return base


def loss_at(a: Att, n: int, rng) -> float:
    """Megatron prints the mean loss of the log interval's steps."""
    window = range(max(1, n - LOG_INTERVAL + 1), n + 1)
    return sum(loss_curve(a, m) for m in window) / len(window) + rng.gauss(0, 0.01)


def pids_of(a: Att, seed: int):
    rng = random.Random(f"{seed}-pids-{a.k}")
    return {h: rng.randint(20_000, 900_000) for h in a.nodes}


def rank_of(a: Att, h: str, d: int) -> int:
    return a.nodes.index(h) * GPN + d


def args_block(a: Att, lmax: float) -> list[str]:
    kv = [("bf16", "True"), ("ckpt_format", "torch_dist"), ("ckpt_step", str(a.load) if a.k == 4 else "None"),
          ("clip_grad", "1.0"), ("data_parallel_size", str(DP)), ("global_batch_size", str(GBS)),
          ("hidden_size", "6144"), ("load", CKPT), ("log_interval", str(LOG_INTERVAL)), ("lr", f"{lmax}"),
          ("micro_batch_size", "2"), ("num_layers", "44"), ("pipeline_model_parallel_size", str(PP)),
          ("save", CKPT), ("save_interval", str(SAVE_INTERVAL)), ("seq_length", str(SEQ)),
          ("tensor_model_parallel_size", str(TP)), ("train_iters", str(TRAIN_ITERS)), ("world_size", str(GPUS))]
    out = ["------------------------ arguments ------------------------"]
    out += [f"  {k} {'.' * (48 - len(k))} {v}" for k, v in kv]
    return out + ["-------------------- end of arguments ---------------------"]


def tb_assert(r: int, h: str, d: int) -> list[str]:
    return [f"[rank{r}]: Traceback (most recent call last):",
            f'[rank{r}]:   File "/workspace/Megatron-LM/pretrain_gpt.py", line 289, in <module>',
            f'[rank{r}]:   File "/workspace/Megatron-LM/megatron/core/distributed/param_and_grad_buffer.py", line 114, '
            "in start_grad_sync",
            f"[rank{r}]:     assert not norm.isnan(), (",
            f"[rank{r}]: AssertionError: Rank {r}: found NaN in local grad norm in backward pass before data-parallel "
            f"communication collective. Device: {d}, node: {h}"]


def torchrun_fail(t: float, a: Att, h: str, pid: int, code: int, why: str, root_d: int) -> list[str]:
    stamp = _d(t).strftime("%Y-%m-%d_%H:%M:%S")
    r = rank_of(a, h, root_d)
    return [f"{glog(t, 'E')} {pid} torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: {code}) "
            f"local_rank: {root_d} (pid: {pid + 9 + root_d}) of binary: /usr/bin/python",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "=" * 60, "pretrain_gpt.py FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
            "Root Cause (first observed failure):", "[0]:", f"  time      : {stamp}", f"  host      : {h}",
            f"  rank      : {r} (local_rank: {root_d})", f"  exitcode  : {code} (pid: {pid + 9 + root_d})",
            "  error_file: <N/A>", f"  traceback : {why}", "=" * 60]


def train_log(a: Att, seed: int) -> tuple[bytes, dict]:
    rng = random.Random(f"{seed}-log-{a.k}")
    L = Sink()
    pids = pids_of(a, seed)
    lmax = 0.0003 if a.k <= 3 else 0.0002
    info: dict = {}
    L.add(a.S, f"START TIME: {date_cmd(a.S)}")
    L.add(a.S + 1, f"NODELIST={hostlist(a.nodes)}")
    for i, h in enumerate(a.nodes):
        t = a.S + 20 + 0.04 * i
        p = f"{glog(t, 'W')} {pids[h]} torch/distributed/run.py:793] "
        L.ext(t, [p, p + "*" * 41, p + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in "
                  "default, to avoid your system being overloaded, please further tune the variable for optimal "
                  "performance in your application as needed. ", p + "*" * 41])
    t = a.S + 40
    L.add(t, f"using world size: {GPUS}, data-parallel size: {DP}, context-parallel size: 1, tensor-model-parallel "
             f"size: {TP}, pipeline-model-parallel size: {PP} ")
    L.ext(t, args_block(a, lmax))
    L.ext(t + 3, ["> initializing torch distributed ...", f"> initialized tensor model parallel with size {TP}",
                  f"> initialized pipeline model parallel with size {PP}"])
    L.add(t + 30, f"[after megatron is initialized] datetime: {meg_ts(t + 30)} ")
    L.add(t + 32, "building GPT model ...")
    if a.load == 0:
        L.ext(t + 60, [f"WARNING: could not find the metadata file {CKPT}/latest_checkpointed_iteration.txt",
                       "    will not load any checkpoints and will start from random"])
    else:
        L.add(t + 60, f" loading checkpoint from {CKPT} at iteration {a.load}")
        L.add(a.F - 40, f"  successfully loaded checkpoint from {CKPT} [ t 1/{TP}, p 1/{PP} ] at iteration {a.load}")
    L.add(a.F - 30, f"[after model, optimizer, and learning rate scheduler are built] datetime: {meg_ts(a.F - 30)} ")
    L.add(a.F - 2, f"[after dataloaders are built] datetime: {meg_ts(a.F - 2)} ")
    L.ext(a.F - 1, ["done with setup ...", "training ..."])
    L.add(a.F, f"[before the start of training step] datetime: {meg_ts(a.F)} ")
    lrng = random.Random(f"{seed}-loss-{a.k}")
    for j, (n, ts, dur) in enumerate(a.steps):
        if n % LOG_INTERVAL:
            continue
        w = [d for (_, _, d) in a.steps[max(0, j - LOG_INTERVAL + 1): j + 1]]
        avg = sum(w) / len(w)
        end = ts + dur
        thr = TOKENS_PER_STEP * FLOPS_PER_TOKEN / avg / GPUS / 1e12
        loss = loss_at(a, n, lrng)
        gn = 0.25 + 3.0 * math.exp(-n / 600) + abs(lrng.gauss(0, 0.02))
        if a.mode == "loss_divergence" and n >= a.spike_from:
            gn *= 6 + 0.05 * (n - a.spike_from)
        skipped = 1 if (a.k == 7 and n % 2170 == 0) else 0          # decoy: a skipped iteration, steps go on
        L.add(end, f" [{meg_ts(end)}] iteration {n:8d}/{TRAIN_ITERS:8d} | consumed samples: {n * GBS:12d} | "
                   f"elapsed time per iteration (ms): {avg * 1000:.1f} | throughput per GPU (TFLOP/s/GPU): {thr:.1f} | "
                   f"learning rate: {lr_at(n, lmax):.6E} | global batch size: {GBS:5d} | lm loss: {loss:.6E} | "
                   f"loss scale: 1.0 | grad norm: {gn:.3f} | number of skipped iterations: {skipped:3d} | "
                   f"number of nan iterations:   0 |")
    for n, ts, c in a.saves:
        L.add(ts + 0.001, f"saving checkpoint at iteration {n:7d} to {CKPT} in torch_dist format")
        L.add(ts + c - 0.01, f"  successfully saved checkpoint from iteration {n:7d} to {CKPT} [ t 1/{TP}, p 1/{PP} ]")
        L.ext(ts + c - 0.005, ["(min, max) time across ranks (ms):",
                               f"    {'save-checkpoint '.ljust(48, '.')}: "
                               f"({c * 1000 - rng.uniform(2, 9):.2f}, {c * 1000:.2f})"])
    R, E = a.R, a.E
    srun_end = []

    def fail_all(t_fail: float, code: int, why_of, root_h: str, root_d: int):
        for i, h in enumerate(a.nodes):
            tf = t_fail + 0.11 * i + (0 if h == root_h else 0.6)
            d = root_d if h == root_h else rng.randint(0, 7)
            L.ext(tf, torchrun_fail(tf, a, h, pids[h], code, why_of(h, d), d))
            srun_end.append((tf + 1.5, f"srun: error: {h}: task {i}: Exited with exit code 1"))
        L.add(t_fail + 3.0, f"srun: Terminating StepId={a.job}.0")

    if a.mode == "network":
        bad = a.host
        i = a.nodes.index(bad)
        for h, dt in ((bad, 1.2), (a.nodes[i - 1], 3.9), (a.nodes[i + 1], 4.3)):
            for d in range(GPN):
                r = rank_of(a, h, d)
                tt = R + dt + 0.05 * d
                msg = (f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with "
                       f"exception: NCCL error: remote process exited or there was a network error, "
                       f"NCCL version 2.21.5")
                L.ext(tt, [f"[rank{r}]:[{c10(tt, 'E', rng)} ProcessGroupNCCL.cpp:1595] {msg}",
                           "ncclRemoteError: A call failed possibly due to a network error or a remote process "
                           "exiting prematurely.", "Last error:",
                           "NET/OFI Request completed with error. RC: 21. Error: unknown error",
                           "terminate called after throwing an instance of 'c10::DistBackendError'"])
        fail_all(R + 9, -6, lambda h, d: f"Signal 6 (SIGABRT) received by PID {pids[h] + 9 + d}", bad, a.gpu)
    elif a.mode == "gpu_fell_off_bus":
        for h in a.nodes:
            if h == a.host:
                continue
            for d in range(0, GPN, 3):
                r = rank_of(a, h, d)
                tw = R + 600 + rng.uniform(0.1, 1.5)
                L.add(tw, f"[rank{r}]:[{c10(tw, 'E', rng)} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
                          f"collective operation timeout: WorkNCCL(SeqNum=88121, OpType=ALLREDUCE, NumelIn=1, "
                          f"NumelOut=1, Timeout(ms)=600000) ran for {600000 + rng.randint(10, 1400)} milliseconds "
                          f"before timing out.")
        info["first_symptom"] = R + 600.1
        fail_all(R + 605, -6, lambda h, d: f"Signal 6 (SIGABRT) received by PID {pids[h] + 9 + d}", a.nodes[0], 0)
    elif a.mode == "loss_divergence":
        for h in a.nodes[:: 3]:
            d = rng.randint(0, 7)
            L.ext(R + 0.4, tb_assert(rank_of(a, h, d), h, d))
        fail_all(R + 6, 1, lambda h, d: "[See inner exception above]", a.nodes[0], 0)
    elif a.mode == "filesystem_io":
        n, ts = a.broken_save
        L.add(ts + 0.001, f"saving checkpoint at iteration {n:7d} to {CKPT} in torch_dist format")
        te = E - 40
        for h in a.nodes[:: 2]:
            r = rank_of(a, h, 0)
            L.ext(te, [f"[rank{r}]: Traceback (most recent call last):",
                       f'[rank{r}]:   File "/usr/local/lib/python3.10/dist-packages/torch/distributed/checkpoint/'
                       f'filesystem.py", line 448, in write_data',
                       f"[rank{r}]: OSError: [Errno 108] Cannot send after transport endpoint shutdown: "
                       f"'{CKPT}/iter_{n:07d}/__{r}_0.distcp'"])
        fail_all(te + 8, 1, lambda h, d: "[See inner exception above]", a.nodes[0], 0)
    elif a.mode == "node_failure":
        L.add(E - 1.0, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(E - 1)} DUE TO "
                       f"NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***")
        L.add(E - 0.9, f"srun: error: Node failure on {a.host}")
        L.add(E - 0.5, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    elif a.mode == "gpu_memory_ecc":
        h, d = a.host, a.gpu
        r = rank_of(a, h, d)
        tc = R + 1.6
        L.ext(tc, [f"[rank{r}]: Traceback (most recent call last):",
                   f'[rank{r}]:   File "/workspace/Megatron-LM/megatron/core/pipeline_parallel/schedules.py", '
                   f"line 1410, in forward_backward_pipelining_without_interleaving",
                   f"[rank{r}]: RuntimeError: CUDA error: uncorrectable ECC error encountered",
                   f"[rank{r}]: CUDA kernel errors might be asynchronously reported at some other API call, so the "
                   f"stacktrace below might be incorrect.",
                   f"[rank{r}]: For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                   f"[rank{r}]: Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."])
        info["first_symptom"] = tc
        fail_all(R + 9, 1, lambda hh, dd: "[See inner exception above]", h, d)
    elif a.kind == "time_limit":
        L.add(a.T + 0.4, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(a.T)} DUE TO "
                         f"TIME LIMIT ***")
        for h in a.nodes:
            L.add(a.T + 0.6, f"{glog(a.T + 0.6, 'W')} {pids[h]} torch/distributed/elastic/agent/server/api.py:719] "
                             f"Received 15 death signal, shutting down workers")
        L.add(a.T + 1.0, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    else:
        L.add(a.E - 3, f"[after training is done] datetime: {meg_ts(a.E - 3)} ")
    for t, ln in srun_end:
        L.add(t, ln)
    return L.render(), info


# ----------------------------------------------------------------------------- NCCL logs (aws-ofi-nccl on EFA)
def nccl_log(a: Att, h: str, seed: int) -> bytes:
    rng = random.Random(f"{seed}-nccl-{a.k}-{h}")
    pids = pids_of(a, seed)
    L = Sink()
    t0 = a.S + 75
    for d in range(GPN):
        w = pids[h] + 9 + d
        tid = w + rng.randint(300, 900)
        r = rank_of(a, h, d)
        pre = f"{h}:{w}:{w} [{d}] NCCL INFO "
        prt = f"{h}:{w}:{tid} [{d}] NCCL INFO "
        lines = [pre + f"Bootstrap : Using enp71s0:{ip_of(h)}<0>",
                 pre + "NET/OFI Using aws-ofi-nccl 1.13.2-aws",
                 pre + "NET/OFI Setting FI_EFA_FORK_SAFE environment variable to 1",
                 pre + "NET/OFI Selected Provider is efa (found 32 nics)",
                 pre + "Using network AWS Libfabric"]
        if r == 0:
            lines.insert(1, "NCCL version 2.21.5+cuda12.4")
        if h == ST[1] and a.k == 1 and d == 0:             # decoy: a harmless libfabric init warning
            lines.insert(2, f"libfabric:{w}:{int(t0)}:efa:core:rxr_info_to_rxr():506<warn> FI_HMEM capability "
                            f"requires RDMA, which this device does not support.")
        lines += [prt + f"ncclCommInitRank comm 0x55{rng.getrandbits(40):010x} rank {r} nranks {GPUS} cudaDev {d} "
                        f"nvmlDev {d} busId {BUSIDS[d]}000 commId 0x6f1c2a9e0b3d4471 - Init START",
                  prt + f"comm 0x55{rng.getrandbits(40):010x} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} busId "
                        f"{BUSIDS[d]}000 commId 0x6f1c2a9e0b3d4471 - Init COMPLETE"]
        L.ext(t0 + 0.01 * d, lines)
    if a.mode == "network":
        i = a.nodes.index(a.host)
        peers = {a.host: 1.0, a.nodes[i - 1]: 3.8, a.nodes[i + 1]: 4.2}
        if h in peers:
            for d in range(GPN):
                w = pids[h] + 9 + d
                tt = a.R + peers[h] + 0.04 * d
                L.add(tt, f"{h}:{w}:{w + 1501} [{d}] ofi_process_cq:196 NCCL WARN NET/OFI Request completed with "
                          f"error. RC: 21. Error: unknown error")
                L.add(tt + 0.001, f"{h}:{w}:{w + 1501} [{d}] NCCL INFO transport/net.cc:1302 -> 6")
    return L.render()


# ----------------------------------------------------------------------------- kernel logs
def pci(d: int) -> str:
    return f"0000:{BUSIDS[d]}:00"


def xid13(d: int, pid: int) -> list[str]:
    return [f"NVRM: Xid (PCI:{pci(d)}): 13, pid={pid}, name=python3, Graphics SM Warp Exception on (GPC 4, TPC 1, "
            f"SM 0): Out Of Range Address",
            f"NVRM: Xid (PCI:{pci(d)}): 13, pid={pid}, name=python3, Graphics Exception: ESR 0x524730=0x1000e "
            f"0x524734=0x20 0x524728=0xc81eb60 0x52472c=0x1174"]


def lustre_evict(ost_i: int, h: str, rng) -> list[str]:
    ost = OSTS[ost_i]
    dev = f"{ost}-osc-ffff{rng.getrandbits(32):08x}8000"
    nid = f"10.1.200.{20 + ost_i}@tcp"
    return [f"LustreError: 11-0: {dev}: operation ost_write to node {nid} failed: rc = -107",
            f"Lustre: {dev}: Connection to {ost} (at {nid}) was lost; in progress operations using this service will "
            f"wait for recovery to complete",
            f"LustreError: 167-0: {dev}: This client was evicted by {ost}; in progress operations using this service "
            f"will fail.",
            f"Lustre: {dev}: Connection restored to {ost} (at {nid})"]


def kernel_logs(atts, seed: int, bundle: Path):
    rng = random.Random(f"{seed}-kern")
    a = {x.k: x for x in atts}
    end = atts[-1].E
    for h in ST + DY:
        ev: list[tuple[float, str]] = []
        boot = T0 - 86400 * 3 - rng.randint(0, 40000)
        if h == DY[0]:
            boot = a[2].S - 400
        if h == DY[1]:
            boot = a[3].S - 420
        if h == ST[11]:                                    # replaced instance: new boot before attempt 6
            ev.append((a[5].R - 35, "systemd-journald[812]: Data hash table of /var/log/journal/system.journal has "
                                    "a fill level at 75.1 (3421 of 4559 items), suggesting rotation."))
        if h == DY[3]:
            boot = a[3].R + 2400
        if h == DY[2]:
            boot = a[5].E + 2000
        ev.append((boot + 2.1, "efa 0000:a7:00.0: Setup irq:0 name:efa-mgmnt@pci:0000:a7:00.0"))
        ev.append((boot + 2.2, "infiniband rdmap167s0: IB device registered"))
        ev.append((boot + 9.0, "nvidia-nvswitch: Probing device 0000:05:00.0, Vendor Id = 0x10de, Device Id = 0x22a3"))
        if h == a[2].host:
            d = a[2].gpu
            ev += [(a[2].R, f"NVRM: Xid (PCI:{pci(d)}): 79, pid={pids_of(a[2], seed)[h] + 9 + d}, name=python, GPU has "
                            f"fallen off the bus."),
                   (a[2].R, f"NVRM: GPU {pci(d)}.0: GPU has fallen off the bus."),
                   (a[2].R + 0.2, f"NVRM: GPU {pci(d)}.0: GPU serial number is 1654123{rng.randint(100000, 999999)}.")]
        if h == a[6].host:
            d = a[6].gpu
            ev.append((a[6].R, f"NVRM: Xid (PCI:{pci(d)}): 94, pid={pids_of(a[6], seed)[h] + 9 + d}, name=python, "
                               f"Contained: SM (0x1). RST: No, D-RSTL: No"))
        if h in a[4].nodes:                               # FSx eviction seen on every client
            t = a[4].R + 2 + rng.uniform(0, 6)
            for j in (3, 5):
                for k, ln in enumerate(lustre_evict(j, h, rng)):
                    ev.append((t + [0, 0.1, 95, 96 + 60][k] + j * 0.3, ln))
        if h == ST[13]:                                   # decoy: connection blip training steps past
            tb = a[6].F + 0.3 * (a[6].R - a[6].F)
            ev += [(tb + x, ln) for x, ln in zip((0, 0, 11), lustre_evict(1, h, rng)[:2] + [
                f"Lustre: {OSTS[1]}-osc-ffff9d4e61a28000: Connection restored to {OSTS[1]} (at 10.1.200.21@tcp)"],
                strict=True)]
        if h == DY[3]:                                   # decoy: Xid 13 in another user's job
            ev += [(a[7].F + 3 * 3600 + 3, ln) for ln in xid13(4, 44120)]
        ev.sort(key=lambda x: x[0])
        if h == ST[11]:
            # the failed instance's log stops when it stopped answering; the replacement boots fresh
            old = [(t, ln) for t, ln in ev if t < a[5].R - 30]
            newboot = a[5].E + 1500
            new = [(newboot + 2.1, "efa 0000:a7:00.0: Setup irq:0 name:efa-mgmnt@pci:0000:a7:00.0"),
                   (newboot + 9.0, "nvidia-nvswitch: Probing device 0000:05:00.0, Vendor Id = 0x10de, "
                                    "Device Id = 0x22a3")]
            write(bundle / "nodes" / h / "dmesg-i-old.log",
                  "\n".join(f"{dmesg_T(t)} {ln}" for t, ln in old).encode() + b"\n")
            write(bundle / "nodes" / h / "dmesg.log", "\n".join(f"{dmesg_T(t)} {ln}" for t, ln in new).encode() + b"\n")
            continue
        ev = [(t, ln) for t, ln in ev if t <= end + 600]
        if h in DY:
            body = "\n".join(f"{syslog_ts(t)} {h} kernel: [{t - boot:12.6f}] {ln}"
                             for t, ln in ev)
            write(bundle / "nodes" / h / "kern.log", body.encode() + b"\n")
        else:
            write(bundle / "nodes" / h / "dmesg.log", "\n".join(f"{dmesg_T(t)} {ln}" for t, ln in ev).encode() + b"\n")


# ----------------------------------------------------------------------------- scheduler + ParallelCluster
def scheduler(atts, seed: int, bundle: Path):
    rng = random.Random(f"{seed}-sched")
    a = {x.k: x for x in atts}
    C, RS, SS, CM = Sink(), Sink(), Sink(), Sink()

    def ctl(t, m):
        C.add(t, f"{ctld_ts(t)} {m}")

    def cm(t, fn, lv, m):
        CM.add(t, f"{pc_ts(t)} - [slurm_plugin.{fn}] - {lv} - {m}")

    def rs(t, fn, lv, m):
        RS.add(t, f"{pc_ts(t)} - 3117 - [slurm_plugin.{fn}] - {lv} - {m}")


    rows = ["JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"]
    for x in atts:
        sub = x.S - (rng.randint(5, 40) if x.k != 6 else (x.S - a[5].E) - 20)
        hl = hostlist(x.nodes)
        ctl(sub + 0.3, f"_slurm_rpc_submit_batch_job: JobId={x.job} InitPrio=4294901{rng.randint(100, 999)} usec=512")
        ctl(x.S + 0.02, f"sched: Allocate JobId={x.job} NodeList={hl} #CPUs={192 * len(x.nodes)} Partition=queue1")
        if x.mode == "node_failure":
            ctl(x.R + 110, f"error: Nodes {x.host} not responding")
            ctl(x.E - 2.2, f"update_node: node {x.host} reason set to: Static node maintenance: unhealthy node is "
                           f"being replaced")
            ctl(x.E - 2.1, f"update_node: node {x.host} state set to DOWN")
            ctl(x.E - 2.0, f"Killing JobId={x.job} on failed node {x.host}")
            ctl(x.E + 0.2, f"_job_complete: JobId={x.job} WTERMSIG 9")
            state, ec = "NODE_FAIL", "0:0"
        elif x.kind == "failure":
            ctl(x.E + 0.2, f"_job_complete: JobId={x.job} WEXITSTATUS 1")
            state, ec = "FAILED", "1:0"
        elif x.kind == "time_limit":
            ctl(x.T + 0.01, f"Time limit exhausted for JobId={x.job}")
            ctl(x.E + 0.2, f"_job_complete: JobId={x.job} WTERMSIG 15")
            state, ec = "TIMEOUT", "0:0"
        else:
            ctl(x.E + 0.2, f"_job_complete: JobId={x.job} WEXITSTATUS 0")
            state, ec = "COMPLETED", "0:0"
        ctl(x.E + 0.21, f"_job_complete: JobId={x.job} done")
        rows.append(f"{x.job}|gpt20b-pretrain|queue1|llm|{192 * len(x.nodes)}|{state}|{ec}|{slurm_ts(sub)}|"
                    f"{slurm_ts(x.S)}|{slurm_ts(x.E)}|{elapsed(x.E - x.S)}|{len(x.nodes)}|{hl}")
        if x.mode in ("network", "gpu_fell_off_bus"):
            why = "efa errors" if x.mode == "network" else "xid79"
            ctl(x.E + 300, f"update_node: node {x.host} reason set to: {why}")
            ctl(x.E + 300.1, f"update_node: node {x.host} state set to DRAINED")
    # dynamic node dy-p5-1 / dy-p5-2 powered up for attempts 2 and 3 (success)
    for dn, x in ((DY[0], a[2]), (DY[1], a[3])):
        w = x.S - 380
        ctl(w, f"POWER: power_save: waking nodes {dn}")
        rs(w + 1.2, "resume:main", "INFO", "ResumeProgram startup.")
        rs(w + 2.5, "fleet_manager:create_fleet", "INFO", "Launching instances with create_fleet API. Parameters: "
           "{'LaunchTemplateConfigs': [{'LaunchTemplateSpecification': {'LaunchTemplateName': 'pc-use2-queue1-p5', "
           "'Version': '$Latest'}, 'Overrides': [{'InstanceType': 'p5.48xlarge', "
           "'SubnetId': 'subnet-0c1d2e3f4a5b6c7d8'}]}], "
           "'TargetCapacitySpecification': {'TotalTargetCapacity': 1, 'DefaultTargetCapacityType': 'capacity-block'}, "
           "'Type': 'instant'}")
        rs(w + 4.1, "instance_manager:_update_slurm_node_addrs", "INFO",
           f"Nodes are now configured with instances: (x1) "
           f"[\"('{dn}', EC2Instance(id='{iid_of(dn)}', private_ip='{ip_of(dn)}', "
           f"hostname='ip-{ip_of(dn).replace('.', '-')}', "
           f"launch_time=datetime.datetime({_d(w).year}, {_d(w).month}, {_d(w).day}, {_d(w).hour}, {_d(w).minute}, "
           f"{_d(w).second}, tzinfo=tzlocal()), slurm_node=None))\"]")
        rs(w + 4.3, "resume:_resume", "INFO", f"Successfully launched nodes (x1) ['{dn}']")
        ctl(w + 330, f"Node {dn} now responding")
    # decoy: dy-p5-4 woken for another user's job during attempt 3, never comes up (job not ours)
    x3 = a[3]
    w = x3.F + 1800
    ctl(w - 2, "_slurm_rpc_submit_batch_job: JobId=7188 InitPrio=4294901377 usec=402")
    ctl(w, f"POWER: power_save: waking nodes {DY[3]}")
    rs(w + 1.3, "resume:_resume", "INFO", f"Successfully launched nodes (x1) ['{DY[3]}']")
    ctl(w + 1800.5, f"node {DY[3]} not resumed by ResumeTimeout(1800), setting DOWN and POWERED_DOWN")
    ctl(w + 1800.6, "requeue job JobId=7188 due to failure of node " + DY[3])
    # node failure: clustermgtd replaces st-p5-12; the resubmitted job's dy-p5-3 hits ICE
    x5 = a[5]
    for k in range(int((x5.E - x5.R) // 60) + 30):
        t = x5.R - 120 + 60 * k
        cm(t, "clustermgtd:_perform_health_check_actions", "INFO", "Performing instance health check actions")
        cm(t + 0.3, "clustermgtd:_maintain_nodes", "INFO", "Performing node maintenance actions")
        inrep = f"(x1) ['{x5.host}']" if x5.E - 3 < t < x5.E + 1500 else "(x0) []"
        cm(t + 0.31, "clustermgtd:_maintain_nodes", "INFO", f"Following nodes are currently in replacement: {inrep}")
    cm(x5.E - 2.6, "clustermgtd:_handle_unhealthy_static_nodes", "INFO",
       f"Setting unhealthy static nodes to DOWN: (x1) ['{x5.host}']")
    cm(x5.E - 1.0, "instance_manager:delete_instances", "INFO", f"Terminating instances (x1) ['{iid_of(x5.host)}']")
    cm(x5.E + 3.0, "instance_manager:_update_slurm_node_addrs_and_failed_nodes", "INFO",
       f"Nodes are now configured with instances (x1) [\"('{x5.host}', EC2Instance(id='{iid_of(x5.host, 1)}', "
       f"private_ip='{ip_of(x5.host)}', hostname='ip-{ip_of(x5.host).replace('.', '-')}', "
       f"launch_time=datetime.datetime("
       f"{_d(x5.E).year}, {_d(x5.E).month}, {_d(x5.E).day}, {_d(x5.E).hour}, {_d(x5.E).minute}, {_d(x5.E).second}, "
       f"tzinfo=tzlocal()), slurm_node=None))\"]")
    w = x5.E + 120
    ctl(w, f"POWER: power_save: waking nodes {DY[2]}")
    rs(w + 2.0, "fleet_manager:_launch_instances", "ERROR", f"Error in CreateFleet request "
       f"({rng.getrandbits(32):08x}-3bff-46b7-b9ae-86bcad2f1b68): InsufficientInstanceCapacity - We currently do not "
       f"have sufficient p5.48xlarge capacity in the Availability Zone you requested (us-east-2b). Our system will be "
       f"working on provisioning additional capacity. You can currently get p5.48xlarge capacity by not specifying an "
       f"Availability Zone in your request or choosing us-east-2a, us-east-2c.")
    rs(w + 2.1, "instance_manager:_launch_instances", "ERROR", f"Encountered exception when launching instances for "
       f"nodes (x1) ['{DY[2]}']: InsufficientInstanceCapacity")
    rs(w + 2.3, "resume:_handle_failed_nodes", "INFO", f"Setting following failed nodes into DOWN state "
       f"(x1) ['{DY[2]}'] "
       f"with reason: (Code:InsufficientInstanceCapacity)Failure when resuming nodes")
    ctl(w + 2.5, f"update_node: node {DY[2]} reason set to: (Code:InsufficientInstanceCapacity)Failure when "
                 f"resuming nodes")
    ctl(w + 2.6, f"update_node: node {DY[2]} state set to DOWN")
    ctl(x5.E + 1600, f"Node {x5.host} now responding")
    # decoy: power-save suspend of dy-p5-4 after the other user's job, mid attempt 7
    t = a[7].F + 5 * 3600
    ctl(t, f"POWER: power_save: suspending nodes {DY[3]}")
    SS.add(t + 0.5, f"{pc_ts(t + 0.5)} - [slurm_plugin.suspend:main] - INFO - Suspending following nodes. Clustermgtd "
                    f"will cleanup orphaned instances: {DY[3]}")
    other = [(a[3].F + 1800 + 3000, 7188, "eval-7b", DY[3], 1, 14000)]
    for st, jid, name, nl, nn, dur in other:
        ctl(st + 0.03, f"sched: Allocate JobId={jid} NodeList={nl} #CPUs=192 Partition=queue1")
        ctl(st + dur, f"_job_complete: JobId={jid} WEXITSTATUS 0")
        ctl(st + dur + 0.01, f"_job_complete: JobId={jid} done")
        rows.append(f"{jid}|{name}|queue1|eval|192|COMPLETED|0:0|{slurm_ts(st - 3000)}|{slurm_ts(st)}|"
                    f"{slurm_ts(st + dur)}|{elapsed(dur)}|{nn}|{nl}")
    write(bundle / "scheduler" / "slurmctld.log", C.render())
    write(bundle / "scheduler" / "sacct.txt", ("\n".join(rows) + "\n").encode())
    write(bundle / "scheduler" / "parallelcluster" / "slurm_resume.log", RS.render())
    write(bundle / "scheduler" / "parallelcluster" / "slurm_suspend.log", SS.render())
    write(bundle / "scheduler" / "parallelcluster" / "clustermgtd", CM.render())


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    global TRAIN_ITERS
    bundle = out / "bundle"
    atts = build(seed)
    TRAIN_ITERS = atts[-1].load + atts[-1].n_steps
    write(bundle / "inventory.toml", f"""[providers.{PROVIDER}]
usd_per_gpu_hour = 3.93

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = 8
interconnect = "EFA v2 32x100G"
nodes = "{hostlist(ST + DY)}"
""".encode())
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", f"""cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.4e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --nodes=16 --exclusive --time=10:00:00 gpt20b.sbatch"
""".encode())
    infos = {}
    for a in atts:
        data, infos[a.k] = train_log(a, seed)
        write(rdir / f"attempt-{a.k}" / f"slurm-{a.job}.out", data)
        if a.k in (1, 2, 6):
            for h in a.nodes:
                write(rdir / f"attempt-{a.k}" / "nccl" / f"{h}.log", nccl_log(a, h, seed))
    kernel_logs(atts, seed, bundle)
    scheduler(atts, seed, bundle)
    cats, total, per = ledger(atts)
    g = {x.k: x for x in atts}
    incs = []
    for j, a in enumerate(atts[:-1]):
        incs.append({"id": j + 1, "attempt": a.k, "attempts": [a.k], "slurm_job": a.job, "failure_mode": a.mode,
                     "blame": "user" if a.mode in ("time_limit", "loss_divergence") else "provider",
                     "host": a.host, "gpu_index": a.gpu, "root_ts": slurm_ts(a.root), "exit_ts": slurm_ts(a.E),
                     "kept_step": a.kept, "gpu_hours": per[j], "gpu_hours_lost": round(sum(per[j].values()), 4)})
    i1 = g[1].nodes.index(g[1].host)
    decoys = {DY[3]: "not resumed by ResumeTimeout / Xid 13 / suspend, never in our job",
              DY[2]: "InsufficientInstanceCapacity at resume; never ran our job",
              ST[1]: "harmless libfabric init <warn>",
              ST[13]: "Lustre connection lost/restored blip in attempt 6; training went on",
              g[1].nodes[i1 - 1]: "ring peer of the EFA fault: symptom only",
              g[1].nodes[i1 + 1]: "ring peer of the EFA fault: symptom only"}
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "match_on_attempt": True,
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "nodes": hostlist(a.nodes), "start_ts": slurm_ts(a.S),
                      "first_step_ts": slurm_ts(a.F), "exit_ts": slurm_ts(a.E), "loaded_step": a.load,
                      "saves": [n for n, _, _ in a.saves], "end": a.kind} for a in atts],
        "incidents": incs,
        "forbidden_incidents": [
            {"failure_mode": "checkpoint_lost", "attempts": [3, 4],
             "reason": "attempt 4 loads an older checkpoint on purpose (rollback after the divergence)"},
            {"failure_mode": "filesystem_io", "attempts": [6],
             "reason": "a Lustre connection blip on one node that training stepped past"}],
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys, "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incs
                                                                    if i["blame"] == "provider"), 4)},
    }
    write(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261012)
    args = ap.parse_args()
    out = Path(args.out)
    if (out / "bundle").exists():
        raise SystemExit(f"{out / 'bundle'} exists; pass an empty --out")
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    print(f"wrote {out / 'bundle'}; total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
