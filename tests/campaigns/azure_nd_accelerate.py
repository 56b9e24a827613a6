#!/usr/bin/env python3
# ruff: noqa: E501  (real log lines are quoted whole)
"""Campaign "azure_nd_accelerate": HF Accelerate + DeepSpeed ZeRO-3 pretraining on Azure ND H100 v5 VMs under
CycleCloud (Workspace for Slurm), written BEFORE reading clusterlab's analysis code.

Standard library only, deterministic per --seed. Usage: azure_nd_accelerate.py --out DIR [--seed N]  (~3 MB, < 1 s)

Writes, under --out DIR:
  DIR/bundle/inventory.toml, DIR/bundle/runs/ndv5-34b/run.toml
  DIR/bundle/runs/ndv5-34b/attempt-<k>/slurm-<jobid>.out    everything srun gathered: the batch script's banner,
        `accelerate launch` (its defaults warning, torch.distributed.run glog lines, the OMP banner), the HF Trainer
        script's logging ("%m/%d/%Y %H:%M:%S - LEVEL - name - msg"), DeepSpeed's "[asctime] [INFO] [file:line:func]"
        lines, rank 0's tqdm bar (carriage-return redraws inside one physical line; DeepSpeed lines glued to the bar),
        the Trainer's log dicts {'loss': ...} (no time of their own), "[rankN]:" prefixed tracebacks and
        ProcessGroupNCCL lines, the elastic agent's ChildFailedError block, srun / slurmstepd lines
  DIR/bundle/runs/ndv5-34b/attempt-<k>/nccl/<host>.log     NCCL_DEBUG=INFO (NCCL_DEBUG_FILE per host)
  DIR/bundle/nodes/<host>/syslog                            rsyslog traditional format: kernel lines with the
        uptime stamp, systemd-networkd, blobfuse2, nhc, and the team's IMDS poller (tag `scheduled-events`, one
        JSON document from http://169.254.169.254/metadata/scheduledevents each time DocumentIncarnation changes)
  DIR/bundle/scheduler/slurmctld.log, DIR/bundle/scheduler/sacct.txt  (`sacct -P`)
  DIR/truth.json

Fleet: provider "azure", cluster "ccw-eus2": CycleCloud Workspace for Slurm, nodearray "gpu" of
Standard_ND96isr_H100_v5 (8 x H100-SXM 80GB, 8 x 400G NDR InfiniBand mlx5_ib0..7, GPUs in PCI domains
0001..0008), hosts ccw-gpu-[1-20]; 16 nodes run the job (ccw-gpu-[17-20] are spares). Checkpoints on Azure
Managed Lustre (/amlfs), the tokenised dataset read through a BlobFuse2 block-cache mount (/mnt/blobdata). All
clocks UTC. Hosts of the incidents, times and step counts depend on --seed.

Run "ndv5-34b": 34B Llama-style decoder, 128 GPUs, ZeRO-3 bf16, micro batch 2 x grad accumulation 2 x seq 4096
-> 2,097,152 tokens a step, ~9.25 s a step, save_steps 200 (Trainer + DeepSpeed, ~60-80 s), logging_steps 10,
DeepSpeed steps_per_print 10, ddp_timeout 1800 s, sbatch --time=12:00:00. One sbatch per attempt.

Attempts:
  1  fresh start. Mid-attempt the platform schedules a Freeze (Scheduled Events, DurationInSeconds 5) on host FZ:
     the VM pauses for ~5 s, one step is ~5 s longer, training goes on (decoy). hv_netvsc on host NV switches its
     data path away from and back to the accelerated-networking VF (Azure host servicing; decoy). Then Xid 94
     (contained ECC) + Xid 63 (row remap pending) on host G GPU g: that rank raises "CUDA error: uncorrectable ECC
     error encountered", torchrun's ChildFailedError names it, job FAILED. The epilog's NHC check_gpu_xid drains
     G; the admin reboots it (the pending remap is activated by the reset), NHC passes, G is resumed.
                                                                             [gpu_memory_ecc, G, attempt 1]
  2  same 16 nodes. The storage account behind the BlobFuse2 dataset mount throttles: blobfuse2 LOG_ERR lines
     ("BlockCache::download : 3 attempts to download a block have failed ... [context deadline exceeded]") on
     five hosts within a minute; ~95 s later the data-loading ranks on those hosts raise OSError [Errno 5]
     Input/output error; job FAILED. The shared storage, no single host.   [filesystem_io, host null, attempt 2]
  3  same nodes. Rank r (host H, GPU h) stops inside a ZeRO-3 all-gather of step N+1 (its last completed NCCL
     work is one behind everyone else's); 1800 s later every OTHER rank's watchdog fires ("Watchdog caught
     collective operation timeout ... last enqueued NCCL work: S, last completed NCCL work: S-1"), the culprit
     prints nothing; torchrun on H needs SIGKILL. An hour before, host IB (decoy) flaps one IB port (systemd-
     networkd "ib4: Lost carrier" / "Gained carrier" 8 s later; NCCL retries, no error).
                                                                             [nccl_timeout, H, attempt 3]
  4  H drained (admin), spare ccw-gpu-17 in. A Scheduled Event "Reboot" (EventSource Platform) for host RB is
     posted 15 min ahead; nobody acts on it; at NotBefore the VM restarts. Its peers' NCCL report NET/IB
     completion errors (status=12) and DistBackendError; slurmctld: RB not responding, "unexpectedly rebooted",
     "Killing JobId ... on failed node", NODE_FAIL.                       [preemption, RB, attempt 4]
  5  same nodes (RB back). The sticky fault: host G GPU g again, Xid 48 (DBE) + Xid 64 ("Row Remapper Error: ...
     All reserved rows for bank are remapped"): that rank's CUDA error, job FAILED; NHC "check_gpu_ecc: GPU id g:
     Row remap error. FaultCode: NHC2007" drains G. Mid-attempt, rank 0 printed a traceback from the metrics
     uploader thread ("Exception in thread Thread-9 (_upload_loop)" ... azure.core.exceptions.ServiceResponseError)
     and training went on (decoy traceback).                              [gpu_memory_ecc, G, attempt 5]
  6  G -> spare ccw-gpu-18. Host OOM on host M: the kernel's oom-killer (global, not the cgroup's) kills one
     training process (its ZeRO-3 CPU-offloaded optimizer states plus a pinned-memory leak in the loader);
     torchrun: exitcode -9, slurmstepd "Detected 1 oom_kill event". Job OUT_OF_MEMORY.   [host_oom, M, attempt 6]
  7  runs into the 12 h TIME LIMIT (never inside a save).                 [time_limit, host null, attempt 7]
  8  completes at max_steps: final save, "Training completed.", exit.
  Decoys (no incident may blame them): FZ (Freeze event, survived), NV (hv_netvsc VF switch), IB (link flap
  survived), the first host whose blobfuse2 reports the throttling (a symptom of the storage account), the two
  rail peers of RB whose NCCL print NET/IB completion errors, and ccw-gpu-1 (rank 0's uploader traceback).
  Forbidden incidents: preemption in attempt 1 (the Freeze), network in attempts 3-4 (the flap survived; the
  peers' IB errors are the reboot's symptoms).

Ledger (truth.json expected_ledger, GPU-hours = 128 x seconds / 3600), the conventions of campaign1.py /
campaign2.py / pcluster_efa.py:
  startup    = sacct Start -> start of the first training step (the Trainer logs "***** Running training *****"
               ~2 s before it; the first DeepSpeed "step=10" line closes step 10 of the attempt)
  productive = kept steps (step <= the checkpoint the next attempt loads; every step of the completed attempt),
               whole step durations (the frozen step too)
  checkpoint = the saves that completed before the root event (all of them are loaded later or superseded, none is
               thrown away), from "Saving model checkpoint to" to DeepSpeed's "is ready now!", plus the tail after
               the final save of the completed attempt
  recompute  = end of the last completed save (or the first step start) -> root event
  hang       = root event -> sacct End.  Root events: the Xid 94/63 (att 1), the first blobfuse2 LOG_ERR (2), the
               end of the last step every rank completed (3: the culprit never enters the next all-gather; the
               watchdog lines say the timed-out collective "ran for 18000xx milliseconds"), the VM's restart at the
               Reboot event (4), the Xid 48/64 (5), the oom-kill (6), the time-limit cancellation (7)
  restart    = sacct End -> next sacct Start;   straggler = slowdown = data_stall = idle = 0

Formats, looked up with the search tools (public material; the text here is written anew):
  * Azure IMDS Scheduled Events document: {"DocumentIncarnation": N, "Events": [{"EventId", "EventType"
    (Freeze|Reboot|Redeploy|Preempt|Terminate), "ResourceType": "VirtualMachine", "Resources": [vm], "EventStatus"
    (Scheduled|Started), "NotBefore" (RFC 1123, "" once Started), "Description", "EventSource" (Platform|User),
    "DurationInSeconds"}]} (learn.microsoft.com scheduled-events pages, webdevops/azure-scheduledevents-manager
    azuremetadata/response.go, a C# client's record types, ClusterLabs azure-events-az).
  * AzureHPC Node Health Checks (Azure/azurehpc-health-checks customTests/azure_gpu_ecc.nhc: "check_gpu_ecc: GPU id
    $i: Row remap pending. FaultCode: NHC2007", "... Row remap error. FaultCode: NHC2007"; azure_gpu_xid.nhc:
    "check_gpu_xid: GPU Xid errors detected: <line>. FaultCode: NHC2001"; azure_ib_link_flapping.nhc greps syslog for
    "ib.* lost carrier"), LBNL NHC's "ERROR:  nhc:  Health check failed:  <check>: <msg>" (AzNHC docs).
  * NVRM Xid 63 "Row Remapper: New row (0x%016llx) marked for remapping, reset gpu to activate.", Xid 64 "Row
    Remapper Error: (0x%016llx) - All reserved rows for bank are remapped" (open-gpu-kernel-modules format strings,
    a public Xid parser doctest), Xid 94 "Contained: SM (0x1). RST: No, D-RST: No", Xid 48 DBE text (as campaign1).
  * blobfuse2 syslog: "blobfuse2[PID]: [/mnt/path] LOG_ERR [block_cache.go (847)]: BlockCache::download : 3
    attempts to download a block have failed ...", "LOG_ERR [azstorage.go (458)]: AzStorage::ReadInBuffer : Failed
    to read ... [...]", "BlockCache::getBlock : Failed to download block", "BlockCache::ReadInBuffer : Failed to get
    Block ... [failed to download block]" (Azure/azure-storage-fuse #1426, #1645, #1165).
  * hv_netvsc "hv_netvsc <uuid> eth0: Data path switched from VF: enP...", "VF unregistering: ...", "Data path
    switched to VF: ..." (MicrosoftDocs/azure-docs #100444, LIS/lis-next #556); systemd-networkd "ib4: Lost carrier"
    / "Gained carrier".
  * DeepSpeed: "[2023-07-24 13:21:33,260] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0, lr=[...],
    mom=[(0.9, 0.999)]", "[timer.py:215:stop] epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=...,
    CurrSamplesPerSec=..., MemAllocated=...GB, MaxMemAllocated=...GB", "[Torch] Checkpoint global_stepN is about to be
    saved!", "Saving model checkpoint: .../zero_pp_rank_0_mp_rank_00_model_states.pt", torch_checkpoint_engine
    "[Torch] Saving ...", "[Torch] Saved ...", "zero checkpoint saved ...", "[Torch] Checkpoint global_stepN is ready
    now!" (a public DeepSpeed training log; deepspeedai/DeepSpeed #1825, PR #849; transformers #14531 shows the DS
    line glued to the tqdm bar and the undated {'loss': ...} dicts).
  * accelerate: "MM/DD/YYYY HH:MM:SS - INFO - __main__ - Distributed environment: ...  Backend: nccl / Num processes
    / Process index / Local process index / Device / Mixed precision type" (PartialState repr; navervision/lincir #14,
    xuduo35/MakeLongVideo #3), "INFO - accelerate.accelerator - ..." logger names (public accelerate logs);
    transformers Trainer "***** Running training *****" block, "Continuing training from checkpoint, will skip to
    saved global_step", "Saving model checkpoint to DIR", "Deleting older checkpoint [DIR] due to
    args.save_total_limit", "Training completed. Do not forget to share your model on huggingface.co/models =)".
  * PyTorch ProcessGroupNCCL watchdog / torchelastic / slurmstepd / slurmctld / sacct lines as in campaign1/2;
    Linux oom-killer lines ("invoked oom-killer: gfp_mask=...", "Out of memory: Killed process ...", "oom_reaper:
    reaped process ..."); slurmstepd "Detected 1 oom_kill event in StepId=N.0. Some of the step tasks have been OOM
    Killed."; slurmctld "validate_node_specs: Node X unexpectedly rebooted boot_time=... last response=...".
"""
from __future__ import annotations

import argparse
import json
import math
import random
from datetime import datetime, timezone
from pathlib import Path

UTC = timezone.utc  # noqa: UP017
RUN = "ndv5-34b"
PROVIDER, CLUSTER = "azure", "ccw-eus2"
GPN, NNODES = 8, 16
GPUS = GPN * NNODES
MBS, GA, SEQ = 2, 2, 4096
GBS = MBS * GA * GPUS                       # 512 sequences
TOKENS_PER_STEP = GBS * SEQ                 # 2,097,152
FLOPS_PER_TOKEN = 2.233e11                  # 6 * 34.4e9 + 12 * 48 * 8192 * 4096
PEAK = 989.4e12
BASE_STEP = 9.25
JITTER = 0.002
SAVE_EVERY = 200
LOG_EVERY = 10
DDP_TIMEOUT = 1800
TIME_LIMIT = 12 * 3600
T0 = datetime(2026, 12, 7, 5, 10, 0, tzinfo=UTC).timestamp()
CKPT = "/amlfs/ckpt/ndv5-34b"
DATA = "/mnt/blobdata"
PY = "/opt/conda/envs/ptca/lib/python3.10/site-packages"
KERNEL = "5.15.0-1075-azure"
DRIVER = "560.35.03"
NCCL_V = "2.21.5+cuda12.4"
HOSTS = [f"ccw-gpu-{i}" for i in range(1, 21)]
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]


def ip_of(h: str) -> str:
    return f"10.2.0.{10 + int(h.rsplit('-', 1)[1])}"


def pci(g: int) -> str:                          # ND H100 v5: each GPU sits in its own PCI domain
    return f"{g + 1:04x}:00:00"


# ----------------------------------------------------------------------------- time formats
def _d(t: float) -> datetime:
    return datetime.fromtimestamp(int(math.floor(t)), UTC)


def ms(t: float) -> int:
    return int((t - math.floor(t)) * 1000) % 1000


def us(t: float) -> int:
    return min(999_999, int(round((t - math.floor(t)) * 1_000_000)))


def iso_z(t: float) -> str:
    return _d(t).strftime("%Y-%m-%dT%H:%M:%S") + f".{ms(t):03d}Z"


def ds_ts(t: float) -> str:                      # DeepSpeed logger: [2026-12-07 05:10:00,123]
    return f"[{_d(t):%Y-%m-%d %H:%M:%S},{ms(t):03d}]"


def hf_ts(t: float) -> str:                      # run_clm-style basicConfig datefmt
    return _d(t).strftime("%m/%d/%Y %H:%M:%S")


def glog(t: float, lv: str) -> str:
    return f"{lv}{_d(t):%m%d %H:%M:%S}.{us(t):06d}"


def c10(t: float, lv: str) -> str:
    return f"{lv}{_d(t):%m%d %H:%M:%S}.{us(t):06d}{(us(t) * 7) % 1000:03d}"


def syslog_ts(t: float) -> str:
    d = _d(t)
    return f"{d:%b} {d.day:2d} {d:%H:%M:%S}"


def slurm_ts(t: float) -> str:
    return _d(t).strftime("%Y-%m-%dT%H:%M:%S")


def ctld_ts(t: float) -> str:
    return f"[{_d(t):%Y-%m-%dT%H:%M:%S}.{ms(t):03d}]"


def date_cmd(t: float) -> str:
    d = _d(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def rfc1123(t: float) -> str:
    return _d(t).strftime("%a, %d %b %Y %H:%M:%S GMT")


def elapsed(sec: float) -> str:
    sec = int(round(sec))
    d, r = divmod(sec, 86400)
    h, r = divmod(r, 3600)
    m, s = divmod(r, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def tq_interval(s: float) -> str:
    s = int(s)
    h, r = divmod(s, 3600)
    m, sec = divmod(r, 60)
    return f"{h:d}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


def hostlist(hosts: list[str]) -> str:
    nums = sorted(int(h.rsplit("-", 1)[1]) for h in hosts)
    rs, s, prev = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        rs.append(f"{s}" if s == prev else f"{s}-{prev}")
        if n is not None:
            s = prev = n
    return f"ccw-gpu-[{','.join(rs)}]" if len(nums) > 1 else f"ccw-gpu-{nums[0]}"


class Sink:
    def __init__(self):
        self.items: list[tuple[float, int, str]] = []

    def add(self, t: float, line: str) -> None:
        self.items.append((t, len(self.items), line))

    def ext(self, t: float, lines: list[str]) -> None:
        for ln in lines:
            self.add(t, ln)

    def render(self) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
        return ("\n".join(x[2] for x in self.items) + "\n").encode()


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# ----------------------------------------------------------------------------- timeline
class Att:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps: list[tuple[int, float, float]] = []
        self.saves: list[tuple[int, float, float]] = []
        self.R = self.E = self.T = None


def pick_hosts(seed: int) -> dict:
    rng = random.Random(f"{seed}-hosts")
    while True:                                    # the reboot host's rail peers must not be incident hosts
        pool = HOSTS[1:16]                         # ccw-gpu-2..16 (ccw-gpu-1 is node rank 0)
        rng.shuffle(pool)
        n4 = [h for h in HOSTS[:16] if h != pool[1]] + ["ccw-gpu-17"]
        i = n4.index(pool[2])
        if not {n4[i - 1], n4[(i + 1) % len(n4)]} & {pool[0], pool[3], "ccw-gpu-1"}:
            break
    keys = ["G", "H", "RB", "M", "FZ", "NV", "IB"]
    roles = dict(zip(keys, pool[:len(keys)], strict=True))
    rest = [h for h in pool[len(keys):]]
    roles["BLOB"] = sorted(rest[:4] + [roles["NV"]], key=lambda h: int(h.rsplit("-", 1)[1]))
    roles["BLOB_FIRST"] = rest[0]
    roles["g"] = rng.randint(0, 7)
    roles["h"] = rng.randint(0, 7)
    roles["m"] = rng.randint(0, 7)
    return roles


def build(seed: int, roles: dict) -> list[Att]:
    rng = random.Random(f"{seed}-tl")
    n1 = HOSTS[:16]
    n4 = [h for h in n1 if h != roles["H"]] + ["ccw-gpu-17"]
    n6 = [h for h in n4 if h != roles["G"]] + ["ccw-gpu-18"]
    specs = [
        dict(k=1, job=4101, nodes=n1, kind="failure", mode="gpu_memory_ecc", host=roles["G"], gpu=roles["g"],
             n_saves=8 + rng.randint(0, 2), k_after=30 + rng.randint(0, 150), hang=41 + rng.randint(-3, 3),
             startup=540, gap=2700),
        dict(k=2, job=4102, nodes=n1, kind="failure", mode="filesystem_io", host=None, gpu=None,
             n_saves=3 + rng.randint(0, 2), k_after=20 + rng.randint(0, 160), hang=128 + rng.randint(-8, 8),
             startup=520, gap=1500),
        dict(k=3, job=4103, nodes=n1, kind="failure", mode="nccl_timeout", host=roles["H"], gpu=roles["h"],
             n_saves=5 + rng.randint(0, 2), k_after=15 + rng.randint(0, 170), hang=DDP_TIMEOUT + 44 + rng.randint(-4, 4),
             startup=530, gap=1800),
        dict(k=4, job=4104, nodes=n4, kind="failure", mode="preemption", host=roles["RB"], gpu=None,
             n_saves=4 + rng.randint(0, 2), k_after=25 + rng.randint(0, 160), hang=304 + rng.randint(-6, 6),
             startup=560, gap=2100),
        dict(k=5, job=4105, nodes=n4, kind="failure", mode="gpu_memory_ecc", host=roles["G"], gpu=roles["g"],
             n_saves=6 + rng.randint(0, 2), k_after=10 + rng.randint(0, 170), hang=39 + rng.randint(-3, 3),
             startup=545, gap=3000),
        dict(k=6, job=4106, nodes=n6, kind="failure", mode="host_oom", host=roles["M"], gpu=roles["m"],
             n_saves=3 + rng.randint(0, 2), k_after=20 + rng.randint(0, 160), hang=36 + rng.randint(-3, 3),
             startup=550, gap=1300),
        dict(k=7, job=4107, nodes=n6, kind="time_limit", mode="time_limit", host=None, gpu=None,
             startup=535, gap=900),
        dict(k=8, job=4108, nodes=n6, kind="complete", mode=None, host=None, gpu=None,
             n_steps=1500 + rng.randint(0, 400), startup=540, gap=None),
    ]
    atts = [Att(**s) for s in specs]
    t, load = T0, 0
    for a in atts:
        a.startup += rng.randint(-20, 20)
        a.load = load
        srng = random.Random(f"{seed}-steps-{a.k}")
        while True:
            a.S = float(t)
            a.F = a.S + a.startup + rng.uniform(0.1, 0.9)
            if simulate(a, srng, roles):
                break
            a.startup += 67
        if a.kind == "complete":
            break
        a.kept = a.saves[-1][0] if a.saves else a.load
        load = a.kept
        t = a.E + a.gap + rng.randint(-120, 120)
    return atts


def simulate(a: Att, rng: random.Random, roles: dict) -> bool:
    a.steps, a.saves = [], []
    t, n = a.F, a.load
    fail = None
    a.freeze = None
    if a.kind == "failure":
        fail = (a.load // SAVE_EVERY + a.n_saves) * SAVE_EVERY + a.k_after + 1
    if a.kind == "time_limit":
        a.T = a.S + TIME_LIMIT
    freeze_step = (a.load // SAVE_EVERY + 4) * SAVE_EVERY + 77 if a.k == 1 else None
    while True:
        if a.kind == "complete" and n >= a.load + a.n_steps:
            break
        n1 = n + 1
        dur = BASE_STEP * (1 + rng.uniform(-JITTER, JITTER))
        if n1 == freeze_step:
            dur += 5.0 + rng.uniform(0.2, 0.6)            # the VM was paused for the Freeze
            a.freeze = (n1, t + 2.0)
        if a.kind == "failure" and n1 == fail:
            if a.mode == "nccl_timeout":
                a.R = t                                    # end of the last step every rank completed
            elif a.mode == "filesystem_io":
                a.R = t + 0.3 * dur
            else:
                a.R = t + rng.uniform(0.2, 0.8) * dur
            a.E = float(math.floor(a.R + a.hang)) + 0.5
            a.fail_step = n1
            break
        if a.kind == "time_limit" and t + dur > a.T:
            a.R, a.E = a.T, a.T + 3.0
            break
        a.steps.append((n1, t, dur))
        t += dur
        n = n1
        if n % SAVE_EVERY == 0 or (a.kind == "complete" and n == a.load + a.n_steps):   # the Trainer saves at the end
            c = round(rng.uniform(60.0, 80.0), 3)
            if a.kind == "time_limit" and t + c > a.T - 20:
                return False
            a.saves.append((n, t, c))
            t += c
    if a.kind == "complete":
        a.E = float(math.ceil(t + 38.0))
    return True


def ledger(atts: list[Att]):
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
        ks = [s for s in a.saves if s[0] == a.kept]
        base = ks[0][1] + ks[0][2] if ks else a.F
        rec, hang, nxt = a.R - base, a.E - a.R, atts[i + 1]
        cats["recompute"] += rec
        cats["hang"] += hang
        cats["restart"] += nxt.S - a.E
        per.append(dict(hang=hang, recompute=rec, restart=nxt.S - a.E, startup=nxt.F - nxt.S))
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total, (sum(cats.values()), total)
    g = GPUS / 3600
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per])


# ----------------------------------------------------------------------------- training console
MAX_STEPS = 0


def lr_at(n: int) -> float:
    lmax, lmin, warm = 3.0e-4, 3.0e-5, 500
    if n < warm:
        return lmax * n / warm
    p = min(1.0, (n - warm) / max(1, MAX_STEPS - warm))
    return lmin + 0.5 * (lmax - lmin) * (1 + math.cos(math.pi * p))


def loss_at(n: int, rng: random.Random) -> float:
    return 1.72 + 7.9 * math.exp(-n / 350.0) + 0.55 * math.exp(-n / 6000.0) + rng.gauss(0, 0.012)


def rank_of(a: Att, h: str, d: int) -> int:
    return a.nodes.index(h) * GPN + d


def pids_of(a: Att, seed: int) -> dict[str, int]:
    rng = random.Random(f"{seed}-pids-{a.k}")
    return {h: rng.randint(30_000, 400_000) for h in a.nodes}


def worker_pid(pids: dict, h: str, d: int) -> int:
    return pids[h] + 41 + 3 * d


def tb_lines(r: int, body: list[str]) -> list[str]:
    return [f"[rank{r}]: {ln}" for ln in body]


def child_failed(t: float, a: Att, h: str, pid: int, d: int, code: int, why: str) -> list[str]:
    stamp = _d(t).strftime("%Y-%m-%d_%H:%M:%S")
    r = rank_of(a, h, d)
    return [f"{glog(t, 'E')} {pid} torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: {code}) "
            f"local_rank: {d} (pid: {worker_pid({h: pid}, h, d)}) of binary: /opt/conda/envs/ptca/bin/python",
            "Traceback (most recent call last):",
            '  File "/opt/conda/envs/ptca/bin/accelerate", line 8, in <module>',
            "    sys.exit(main())",
            f'  File "{PY}/accelerate/commands/accelerate_cli.py", line 48, in main',
            "    args.func(args)",
            f'  File "{PY}/accelerate/commands/launch.py", line 1153, in launch_command',
            "    deepspeed_launcher(args)",
            f'  File "{PY}/accelerate/commands/launch.py", line 846, in deepspeed_launcher',
            "    distrib_run.run(args)",
            f'  File "{PY}/torch/distributed/run.py", line 910, in run',
            "    elastic_launch(",
            f'  File "{PY}/torch/distributed/launcher/api.py", line 138, in __call__',
            "    return launch_agent(self._config, self._entrypoint, list(args))",
            f'  File "{PY}/torch/distributed/launcher/api.py", line 269, in launch_agent',
            "    raise ChildFailedError(",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "=" * 60, "train_clm.py FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
            "Root Cause (first observed failure):", "[0]:", f"  time      : {stamp}", f"  host      : {h}",
            f"  rank      : {r} (local_rank: {d})", f"  exitcode  : {code} (pid: {worker_pid({h: pid}, h, d)})",
            "  error_file: <N/A>", f"  traceback : {why}", "=" * 60]


def watchdog_lines(t: float, r: int, seq: int) -> list[str]:
    ranfor = DDP_TIMEOUT * 1000 + 40 + (r * 13) % 60
    work = (f"WorkNCCL(SeqNum={seq}, OpType=_ALLGATHER_BASE, NumelIn=26214400, NumelOut=3355443200, "
            f"Timeout(ms)={DDP_TIMEOUT * 1000})")
    p = f"[rank{r}]:"
    return [f"{p}[{c10(t, 'E')} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: "
            f"{work} ran for {ranfor} milliseconds before timing out.",
            f"{p}[{c10(t + 0.001, 'E')} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Exception "
            f"(either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: {seq}, last "
            f"completed NCCL work: {seq - 1}.",
            f"{p}[{c10(t + 0.001, 'E')} ProcessGroupNCCL.cpp:630] [Rank {r}] Some NCCL operations have failed or timed "
            "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
            "corrupted/incomplete data.",
            f"{p}[{c10(t + 0.002, 'E')} ProcessGroupNCCL.cpp:636] [Rank {r}] To avoid data inconsistency, we are taking "
            "the entire process down.",
            f"{p}[{c10(t + 0.003, 'E')} ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Process "
            f"group watchdog thread terminated with exception: [Rank {r}] Watchdog caught collective operation "
            f"timeout: {work} ran for {ranfor} milliseconds before timing out.",
            "terminate called after throwing an instance of 'c10::DistBackendError'"]


def bar(n: int, total: int, el: float, rate: float) -> str:
    frac = n / total
    pct = int(frac * 100)
    full = int(frac * 10)
    part = " ▏▎▍▌▋▊▉"[int((frac * 10 - full) * 8)] if full < 10 else ""
    b = ("█" * full + part).ljust(10)
    rem = (total - n) * rate
    return f"{pct:3d}%|{b}| {n}/{total} [{tq_interval(el)}<{tq_interval(rem)}, {rate:5.2f}s/it]"


def train_log(a: Att, seed: int, roles: dict) -> tuple[bytes, dict]:
    lrng = random.Random(f"{seed}-loss-{a.k}")
    L = Sink()
    pids = pids_of(a, seed)
    head = a.nodes[0]
    info: dict = {}
    L.add(a.S + 0.2, f"START TIME: {date_cmd(a.S + 0.2)}")
    L.add(a.S + 0.3, f"SLURM_JOB_ID={a.job} SLURM_JOB_NODELIST={hostlist(a.nodes)} MASTER_ADDR={head} MASTER_PORT=29500")
    for i, h in enumerate(a.nodes):
        t = a.S + 6 + 0.03 * i
        L.ext(t, ["The following values were not passed to `accelerate launch` and had defaults used instead:",
                  "\t`--dynamo_backend` was set to a value of `'no'`",
                  "To avoid this warning pass in values for each of the problematic parameters or run `accelerate config`."])
        p = f"{glog(t + 2, 'W')} {pids[h]} torch/distributed/run.py:793] "
        L.ext(t + 2, [p, p + "*" * 41, p + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in "
                      "default, to avoid your system being overloaded, please further tune the variable for optimal "
                      "performance in your application as needed. ", p + "*" * 41])
    t = a.S + 30
    L.add(t, f"{ds_ts(t)} [INFO] [real_accelerator.py:219:get_accelerator] Setting ds_accelerator to cuda (auto detect)")
    L.add(t + 4, f"{ds_ts(t + 4)} [INFO] [comm.py:652:init_distributed] cdb=None")
    L.add(t + 4.1, f"{ds_ts(t + 4.1)} [INFO] [comm.py:683:init_distributed] Initializing TorchBackend in DeepSpeed with backend nccl")
    L.add(t + 9, f"{hf_ts(t + 9)} - WARNING - __main__ - Process rank: 0, device: cuda:0, n_gpu: 1, distributed "
                 "training: True, 16-bits training: False")
    L.ext(t + 9, [f"{hf_ts(t + 9)} - INFO - __main__ - Distributed environment: DEEPSPEED  Backend: nccl",
                  f"Num processes: {GPUS}", "Process index: 0", "Local process index: 0", "Device: cuda:0", "",
                  "Mixed precision type: bf16",
                  "ds_config: {'bf16': {'enabled': True}, 'zero_optimization': {'stage': 3, 'offload_optimizer': "
                  "{'device': 'cpu', 'pin_memory': True}, 'overlap_comm': True, 'contiguous_gradients': True, "
                  "'stage3_gather_16bit_weights_on_model_save': False}, 'gradient_accumulation_steps': 2, "
                  "'gradient_clipping': 1.0, 'steps_per_print': 10, 'train_micro_batch_size_per_gpu': 2, "
                  "'wall_clock_breakdown': False}", ""])
    L.add(t + 40, f"{ds_ts(t + 40)} [INFO] [partition_parameters.py:348:__exit__] finished initializing model - "
                  "num_params = 435, num_elems = 34.39B")
    L.add(t + 95, f"{ds_ts(t + 95)} [INFO] [logging.py:128:log_dist] [Rank 0] DeepSpeed info: version=0.15.4, "
                  "git-hash=unknown, git-branch=unknown")
    L.add(t + 96, f"{ds_ts(t + 96)} [INFO] [logging.py:128:log_dist] [Rank 0] Creating ZeRO stage 3 optimizer")
    if a.load:
        ck = f"{CKPT}/checkpoint-{a.load}"
        L.add(a.F - 200, f"{hf_ts(a.F - 200)} - INFO - transformers.trainer - Loading model from {ck}.")
        L.add(a.F - 199, f"{ds_ts(a.F - 199)} [INFO] [torch_checkpoint_engine.py:27:load] [Torch] Loading checkpoint from "
                         f"{ck}/global_step{a.load}/zero_pp_rank_0_mp_rank_00_model_states.pt...")
        L.add(a.F - 120, f"{ds_ts(a.F - 120)} [INFO] [engine.py:3105:_get_all_zero_checkpoint_state_dicts] successfully "
                         f"read {GPUS} ZeRO state_dicts for rank 0")
        L.add(a.F - 60, f"{ds_ts(a.F - 60)} [INFO] [engine.py:3055:_load_zero_checkpoint] loading {GPUS} zero partition "
                        "checkpoints for rank 0")
    L.add(a.F - 2.1, f"{hf_ts(a.F - 2.1)} - INFO - transformers.trainer - ***** Running training *****")
    L.ext(a.F - 2.1, ["  Num examples = 8,192,000", "  Num Epochs = 1",
                      f"  Instantaneous batch size per device = {MBS}",
                      f"  Total train batch size (w. parallel, distributed & accumulation) = {GBS}",
                      f"  Gradient Accumulation steps = {GA}", f"  Total optimization steps = {MAX_STEPS:,}",
                      "  Number of trainable parameters = 34,388,819,968"])
    if a.load:
        L.ext(a.F - 2.0, [f"{hf_ts(a.F - 2.0)} - INFO - transformers.trainer -   Continuing training from checkpoint, "
                          "will skip to saved global_step",
                          f"{hf_ts(a.F - 2.0)} - INFO - transformers.trainer -   Continuing training from epoch 0",
                          f"{hf_ts(a.F - 2.0)} - INFO - transformers.trainer -   Continuing training from global step {a.load}",
                          f"{hf_ts(a.F - 2.0)} - INFO - transformers.trainer -   Will skip the first 0 epochs then the "
                          f"first {a.load * GA} batches in the first epoch."])
    # rank 0's tqdm bar: one physical line of \r redraws; a DS line or a dict ends it
    seg = ["\r" + bar(a.load, MAX_STEPS, 0.0, 0.0).replace(" 0.00s/it", " ?s/it")]
    seg_t = a.F
    el0 = a.F
    saves = {n: (ts, c) for n, ts, c in a.saves}
    decoy_tb = None
    if a.k == 5:
        decoy_tb = a.steps[len(a.steps) // 2][0]
    for j, (n, ts, dur) in enumerate(a.steps):
        end = ts + dur
        w = [d for (_, _, d) in a.steps[max(0, j - 9): j + 1]]
        rate = sum(w) / len(w)
        seg.append("\r" + bar(n, MAX_STEPS, end - el0, rate))
        if n % LOG_EVERY == 0:
            L.add(seg_t, "".join(seg) + f"{ds_ts(end + 0.02)} [INFO] [logging.py:128:log_dist] [Rank 0] step={n}, "
                                        f"skipped=0, lr=[{lr_at(n):.15g}], mom=[(0.9, 0.95)]")
            allsps = GBS / (sum(d for (_, _, d) in a.steps[: j + 1]) / (j + 1))
            L.add(end + 0.021, f"{ds_ts(end + 0.021)} [INFO] [timer.py:264:stop] epoch=0/micro_step={n * GA}/global_step={n}, "
                               f"RunningAvgSamplesPerSec={allsps:.15g}, CurrSamplesPerSec={GBS / dur:.15g}, "
                               f"MemAllocated=19.87GB, MaxMemAllocated=61.4GB")
            gn = 0.18 + 2.5 * math.exp(-n / 500) + abs(lrng.gauss(0, 0.03))
            L.add(end + 0.03, "\r" + " " * 90 + "\r" + f"{{'loss': {loss_at(n, lrng):.4f}, 'grad_norm': {gn:.4f}, "
                              f"'learning_rate': {lr_at(n):.6g}, 'epoch': {n / MAX_STEPS:.2f}}}")
            seg, seg_t = [], end + 0.031
        if n == decoy_tb:
            L.add(end + 0.5, "".join(seg))
            seg, seg_t = [], end + 0.51
            L.ext(end + 0.5, ["Exception in thread Thread-9 (_upload_loop):", "Traceback (most recent call last):",
                              '  File "/opt/conda/envs/ptca/lib/python3.10/threading.py", line 1016, in _bootstrap_inner',
                              "    self.run()",
                              '  File "/opt/conda/envs/ptca/lib/python3.10/threading.py", line 953, in run',
                              "    self._target(*self._args, **self._kwargs)",
                              '  File "/work/ndv5-34b/metrics_uploader.py", line 61, in _upload_loop',
                              "    self._client.upload(batch)",
                              f'  File "{PY}/azure/monitor/ingestion/_operations/_patch.py", line 97, in upload',
                              "    self._send_batch(rule_id, stream_name, body)",
                              f'  File "{PY}/azure/core/pipeline/transport/_requests_basic.py", line 381, in send',
                              "    raise error",
                              "azure.core.exceptions.ServiceResponseError: ('Connection aborted.', RemoteDisconnected("
                              "'Remote end closed connection without response'))"])
        if n in saves:
            s0, c = saves[n]
            if seg:
                L.add(s0 + 0.01, "".join(seg))
            ck = f"{CKPT}/checkpoint-{n}"
            gs = f"{ck}/global_step{n}"
            L.add(s0 + 0.02, f"{hf_ts(s0 + 0.02)} - INFO - transformers.trainer - Saving model checkpoint to {ck}")
            L.add(s0 + 0.6, f"{ds_ts(s0 + 0.6)} [INFO] [logging.py:128:log_dist] [Rank 0] [Torch] Checkpoint global_step{n} is about to be saved!")
            L.add(s0 + 0.7, f"{ds_ts(s0 + 0.7)} [INFO] [logging.py:128:log_dist] [Rank 0] Saving model checkpoint: {gs}/zero_pp_rank_0_mp_rank_00_model_states.pt")
            L.add(s0 + 0.7, f"{ds_ts(s0 + 0.7)} [INFO] [torch_checkpoint_engine.py:21:save] [Torch] Saving {gs}/zero_pp_rank_0_mp_rank_00_model_states.pt...")
            L.add(s0 + 2.9, f"{ds_ts(s0 + 2.9)} [INFO] [torch_checkpoint_engine.py:23:save] [Torch] Saved {gs}/zero_pp_rank_0_mp_rank_00_model_states.pt.")
            L.add(s0 + 3.0, f"{ds_ts(s0 + 3.0)} [INFO] [torch_checkpoint_engine.py:21:save] [Torch] Saving {gs}/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt...")
            L.add(s0 + c - 1.2, f"{ds_ts(s0 + c - 1.2)} [INFO] [torch_checkpoint_engine.py:23:save] [Torch] Saved {gs}/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt.")
            L.add(s0 + c - 1.1, f"{ds_ts(s0 + c - 1.1)} [INFO] [engine.py:3536:_save_zero_checkpoint] zero checkpoint saved {gs}/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt")
            L.add(s0 + c - 0.02, f"{ds_ts(s0 + c - 0.02)} [INFO] [torch_checkpoint_engine.py:33:commit] [Torch] Checkpoint global_step{n} is ready now!")
            old = n - 3 * SAVE_EVERY
            if old > 0 and old > a.load - 3 * SAVE_EVERY:
                L.add(s0 + c - 0.01, f"{hf_ts(s0 + c - 0.01)} - INFO - transformers.trainer - Deleting older checkpoint "
                                     f"[{CKPT}/checkpoint-{old}] due to args.save_total_limit")
            seg, seg_t = ["\r" + bar(n, MAX_STEPS, s0 + c - el0, rate)], s0 + c
    if seg:
        L.add(seg_t, "".join(seg))
    # ------------------------------------------------------------- the end of the attempt
    R, E = a.R, a.E
    if a.kind == "complete":
        t = a.saves[-1][1] + a.saves[-1][2]
        L.add(t + 1.0, f"{hf_ts(t + 1.0)} - INFO - transformers.trainer - ")
        L.add(t + 1.0, "")
        L.add(t + 1.0, "Training completed. Do not forget to share your model on huggingface.co/models =)")
        L.add(t + 1.1, "")
        L.add(t + 1.2, f"{{'train_runtime': {E - a.S:.4f}, 'train_samples_per_second': {GBS / BASE_STEP:.3f}, "
                       f"'train_steps_per_second': {1 / BASE_STEP:.3f}, 'train_loss': 1.9412, 'epoch': 1.0}}")
        L.add(t + 20, f"{hf_ts(t + 20)} - INFO - __main__ - ***** train metrics *****")
        L.add(E - 1, f"END TIME: {date_cmd(E - 1)}")
        return L.render(), info
    if a.kind == "time_limit":
        L.add(R + 0.2, f"slurmstepd: error: *** JOB {a.job} ON {head} CANCELLED AT {slurm_ts(R)} DUE TO TIME LIMIT ***")
        L.add(R + 0.3, f"slurmstepd: error: *** STEP {a.job}.0 ON {head} CANCELLED AT {slurm_ts(R)} DUE TO TIME LIMIT ***")
        for h in a.nodes:
            L.add(R + 0.5, f"{glog(R + 0.5, 'W')} {pids[h]} torch/distributed/elastic/agent/server/api.py:704] Received 15 "
                           "death signal, shutting down workers")
        return L.render(), info
    h, d = a.host, a.gpu
    if a.mode == "gpu_memory_ecc":
        r = rank_of(a, h, d)
        te = R + 0.8
        L.ext(te, tb_lines(r, ["Traceback (most recent call last):",
                               '  File "/work/ndv5-34b/train_clm.py", line 655, in <module>', "    main()",
                               '  File "/work/ndv5-34b/train_clm.py", line 603, in main',
                               "    train_result = trainer.train(resume_from_checkpoint=checkpoint)",
                               f'  File "{PY}/transformers/trainer.py", line 3612, in training_step',
                               "    self.accelerator.backward(loss, **kwargs)",
                               f'  File "{PY}/deepspeed/runtime/zero/stage3.py", line 2247, in backward',
                               "    self.loss_scaler.backward(loss.float(), retain_graph=retain_graph)",
                               "RuntimeError: CUDA error: uncorrectable ECC error encountered",
                               "CUDA kernel errors might be asynchronously reported at some other API call, so the "
                               "stacktrace below might be incorrect.",
                               "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                               "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", ""]))
        info["symptom"] = te
        tf = R + 6
        for i in range(GPN):
            if i != d:
                L.add(tf, f"{glog(tf, 'W')} {pids[h]} torch/distributed/elastic/multiprocessing/api.py:897] Sending "
                          f"process {worker_pid(pids, h, i)} closing signal SIGTERM")
        L.ext(tf + 4, child_failed(tf + 4, a, h, pids[h], d, 1, "[ ]"))
        L.add(tf + 5, f"srun: error: {h}: task {a.nodes.index(h)}: Exited with exit code 1")
        L.add(tf + 5.2, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
        L.add(tf + 5.3, f"slurmstepd: error: *** STEP {a.job}.0 ON {head} CANCELLED AT {slurm_ts(tf + 5.3)} ***")
        for hh in a.nodes:
            if hh != h:
                L.add(tf + 5.6, f"{glog(tf + 5.6, 'W')} {pids[hh]} torch/distributed/elastic/agent/server/api.py:704] "
                                "Received 15 death signal, shutting down workers")
        L.add(E - 2, "srun: error: Timed out waiting for job step to complete")
    elif a.mode == "filesystem_io":
        te = R + 95
        info["symptom"] = te
        for i, hh in enumerate(roles["BLOB"]):
            if hh not in a.nodes:
                continue
            for dd in (1, 5):
                r = rank_of(a, hh, dd)
                shard = f"{DATA}/tok/redpajama-v2/shard-{(a.fail_step * 7 + r) % 4096:05d}.arrow"
                L.ext(te + 3 * i + 0.2 * dd, tb_lines(r, [
                    "Traceback (most recent call last):",
                    '  File "/work/ndv5-34b/train_clm.py", line 655, in <module>', "    main()",
                    f'  File "{PY}/transformers/trainer.py", line 2481, in _inner_training_loop',
                    "    batch_samples, num_items_in_batch = self.get_batch_samples(epoch_iterator, num_batches)",
                    f'  File "{PY}/torch/utils/data/dataloader.py", line 1465, in _next_data',
                    "    return self._process_data(data)",
                    f'  File "{PY}/torch/_utils.py", line 706, in reraise',
                    "    raise exception",
                    "OSError: Caught OSError in DataLoader worker process 3.",
                    "Original Traceback (most recent call last):",
                    f'  File "{PY}/datasets/arrow_dataset.py", line 2762, in __getitem__',
                    "    return self._getitem(key)",
                    f'  File "{PY}/pyarrow/ipc.py", line 93, in read_all',
                    f"OSError: [Errno 5] Input/output error: '{shard}'", ""]))
        tf = te + 20
        first = roles["BLOB"][0]
        L.ext(tf, child_failed(tf, a, first, pids[first], 1, 1, "[ ]"))
        for i, hh in enumerate(roles["BLOB"]):
            L.add(tf + 1 + i, f"srun: error: {hh}: task {a.nodes.index(hh)}: Exited with exit code 1")
        L.add(tf + 7, f"slurmstepd: error: *** STEP {a.job}.0 ON {head} CANCELLED AT {slurm_ts(tf + 7)} ***")
    elif a.mode == "nccl_timeout":
        seq = 1_000_000 + a.fail_step * 412 + 7
        tw = R + DDP_TIMEOUT + 0.9
        info["symptom"] = tw
        culprit = rank_of(a, h, d)
        for r in range(GPUS):
            if r == culprit:
                continue
            L.ext(tw + (r % 7) * 0.013, watchdog_lines(tw + (r % 7) * 0.013, r, seq))
        for hh in a.nodes:
            if hh == h:
                continue
            tt = tw + 2.5
            L.add(tt, f"{glog(tt, 'W')} {pids[hh]} torch/distributed/elastic/multiprocessing/api.py:897] Sending process "
                      f"{worker_pid(pids, hh, 1)} closing signal SIGTERM")
        first = a.nodes[0] if a.nodes[0] != h else a.nodes[1]
        L.ext(tw + 6, child_failed(tw + 6, a, first, pids[first], 0, -6, f"Signal 6 (SIGABRT) received by PID "
                                                                         f"{worker_pid(pids, first, 0)}"))
        L.add(tw + 8, f"srun: error: {first}: task {a.nodes.index(first)}: Exited with exit code 1")
        L.add(tw + 8.2, f"slurmstepd: error: *** STEP {a.job}.0 ON {head} CANCELLED AT {slurm_ts(tw + 8.2)} ***")
        L.add(tw + 8.5, f"{glog(tw + 8.5, 'W')} {pids[h]} torch/distributed/elastic/agent/server/api.py:704] Received 15 "
                        "death signal, shutting down workers")
        L.add(tw + 8.6, f"{glog(tw + 8.6, 'W')} {pids[h]} torch/distributed/elastic/multiprocessing/api.py:897] Sending "
                        f"process {worker_pid(pids, h, d)} closing signal SIGTERM")
        L.add(tw + 35.7, f"{glog(tw + 35.7, 'W')} {pids[h]} torch/distributed/elastic/multiprocessing/api.py:919] Unable to "
                         f"shutdown process {worker_pid(pids, h, d)} via Signals.SIGTERM, forcefully exiting via "
                         "Signals.SIGKILL")
    elif a.mode == "preemption":
        i = a.nodes.index(h)
        peers = [a.nodes[i - 1], a.nodes[(i + 1) % len(a.nodes)]]
        info["peers"] = peers
        te = R + 21
        info["symptom"] = te
        for j, hh in enumerate(peers):
            for dd in (0, 4):
                r = rank_of(a, hh, dd)
                t1 = te + j * 0.7 + dd * 0.01
                L.ext(t1, [f"[rank{r}]:[{c10(t1, 'E')} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
                           "Exception (either an error or timeout) detected by watchdog at work: "
                           f"{900_000 + a.fail_step * 412}, last enqueued NCCL work: {900_000 + a.fail_step * 412 + 3}, "
                           f"last completed NCCL work: {900_000 + a.fail_step * 412 - 1}.",
                           f"[rank{r}]:[{c10(t1, 'E')} ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
                           "Process group watchdog thread terminated with exception: NCCL error: remote process exited "
                           "or there was a network error, NCCL version 2.21.5",
                           "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                           "prematurely.",
                           f"Last error:\nNET/IB : Got completion from peer {ip_of(h)}<{40000 + r}> with status=12 "
                           f"opcode=0 len=0 vendor err 129 (Send) localGid fe80::215:5dff:fd34:{r:x} remoteGids "
                           f"fe80::215:5dff:fd34:{i * 8 + dd:x}",
                           "terminate called after throwing an instance of 'c10::DistBackendError'"])
        tf = te + 8
        for hh in a.nodes:
            if hh != h:
                L.add(tf, f"{glog(tf, 'W')} {pids[hh]} torch/distributed/elastic/multiprocessing/api.py:897] Sending "
                          f"process {worker_pid(pids, hh, 2)} closing signal SIGTERM")
        L.ext(tf + 5, child_failed(tf + 5, a, peers[0], pids[peers[0]], 0, -6,
                                   f"Signal 6 (SIGABRT) received by PID {worker_pid(pids, peers[0], 0)}"))
        L.add(E - 1.0, f"srun: error: Node failure on {h}")
        L.add(E - 0.9, f"slurmstepd: error: *** JOB {a.job} ON {head} CANCELLED AT {slurm_ts(E - 0.9)} DUE TO NODE "
                       "FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***")
    elif a.mode == "host_oom":
        r = rank_of(a, h, d)
        tf = R + 3.5
        info["symptom"] = tf
        L.add(tf, f"{glog(tf, 'W')} {pids[h]} torch/distributed/elastic/multiprocessing/api.py:897] Sending process "
                  f"{worker_pid(pids, h, (d + 1) % 8)} closing signal SIGTERM")
        L.ext(tf + 5, child_failed(tf + 5, a, h, pids[h], d, -9, f"Signal 9 (SIGKILL) received by PID {worker_pid(pids, h, d)}"))
        L.add(tf + 6, f"srun: error: {h}: task {a.nodes.index(h)}: Exited with exit code 1")
        L.add(tf + 6.1, f"slurmstepd: error: Detected 1 oom_kill event in StepId={a.job}.0. Some of the step tasks have "
                        "been OOM Killed.")
        L.add(tf + 6.3, f"srun: error: {h}: task {a.nodes.index(h)}: Out Of Memory")
        L.add(tf + 6.5, f"slurmstepd: error: *** STEP {a.job}.0 ON {head} CANCELLED AT {slurm_ts(tf + 6.5)} ***")
    return L.render(), info


# ----------------------------------------------------------------------------- NCCL debug files
def nccl_log(a: Att, h: str, seed: int, info: dict) -> bytes:
    rng = random.Random(f"{seed}-nccl-{a.k}-{h}")
    pids = pids_of(a, seed)
    L = Sink()
    t = a.S + 150 + rng.uniform(0, 3)
    for d in range(GPN):
        p = f"{h}:{worker_pid(pids, h, d)}:{worker_pid(pids, h, d) + 90} [{d}] NCCL INFO "
        r = rank_of(a, h, d)
        if d == 0:
            L.ext(t, [p + f"Bootstrap : Using eth0:{ip_of(h)}<0>",
                      p + "NCCL_TOPO_FILE set by environment to /opt/microsoft/ndv5-topo.xml",
                      p + "cudaDriverVersion 12060", f"NCCL version {NCCL_V}",
                      p + "NET/IB : Using [0]mlx5_ib0:1/IB [1]mlx5_ib1:1/IB [2]mlx5_ib2:1/IB [3]mlx5_ib3:1/IB "
                          "[4]mlx5_ib4:1/IB [5]mlx5_ib5:1/IB [6]mlx5_ib6:1/IB [7]mlx5_ib7:1/IB [RO]; "
                          f"OOB eth0:{ip_of(h)}<0>",
                      p + "Using network IB"])
        cid = f"0x{(a.job * 2654435761) & 0xffffffffffff:x}"
        L.add(t + 0.5 + d * 0.01, p + f"ncclCommInitRank comm 0x{0x55d0a0000000 + r * 0x1000:x} rank {r} nranks {GPUS} "
                                      f"cudaDev {d} nvmlDev {d} busId {d + 1:x}000 commId {cid} - Init START")
        L.add(t + 4.5 + d * 0.01, p + f"ncclCommInitRank comm 0x{0x55d0a0000000 + r * 0x1000:x} rank {r} nranks {GPUS} "
                                      f"cudaDev {d} nvmlDev {d} busId {d + 1:x}000 commId {cid} - Init COMPLETE")
    if a.mode == "preemption" and h in info.get("peers", []):
        for d in (0, 4):
            te = info["symptom"] - 0.3 + d * 0.01
            p = f"{h}:{worker_pid(pids, h, d)}:{worker_pid(pids, h, d) + 97} [{d}] "
            L.ext(te, [p + f"transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer {ip_of(a.host)}<{40000 + d}> "
                           f"with status=12 opcode=0 len=0 vendor err 129 (Send) localGid fe80::215:5dff:fd34:{d:x} "
                           f"remoteGids fe80::215:5dff:fd34:{8 + d:x}",
                       p + "NCCL INFO transport/net.cc:1302 -> 6", p + "NCCL INFO proxy.cc:698 -> 6",
                       p + "NCCL INFO proxy.cc:878 -> 6 [Progress Thread]"])
    return L.render()


# ----------------------------------------------------------------------------- node syslogs
def sched_event(inc: int, eid: str, etype: str, vm: str, status: str, nb: str, dur: int) -> str:
    ev = {"EventId": eid, "EventType": etype, "ResourceType": "VirtualMachine", "Resources": [vm],
          "EventStatus": status, "NotBefore": nb, "Description": "Host server is undergoing maintenance.",
          "EventSource": "Platform", "DurationInSeconds": dur}
    return json.dumps({"DocumentIncarnation": inc, "Events": [ev]}, separators=(",", ":"))


def node_logs(atts: list[Att], seed: int, roles: dict, infos: dict, bundle: Path) -> None:
    a = {x.k: x for x in atts}
    rng = random.Random(f"{seed}-nodes")
    g = roles["g"]
    for h in HOSTS:
        ev: list[tuple[float, str, str]] = []          # (time, program, text)
        boot = T0 - rng.uniform(2, 9) * 86400
        boots = [boot]

        def k(t: float, msg: str, _b=boots, _ev=ev) -> None:
            b = max(x for x in _b if x <= t)
            _ev.append((t, "kernel", f"[{t - b:12.6f}] {msg}"))

        def boot_lines(t: float, _b=boots) -> None:
            _b.append(t)
            k(t, f"Linux version {KERNEL} (buildd@lcy02-amd64-011) (x86_64-linux-gnu-gcc-11 (Ubuntu 11.4.0-1ubuntu1~22.04) "
                 f"11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #84~22.04.1-Ubuntu SMP Tue Nov 18 17:17:53 UTC 2026")
            k(t + 0.000001, "Hyper-V: privilege flags low 0xae7f, high 0x3b8030, hints 0x64e24, misc 0xbed7b2")
            k(t + 19.2, f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {DRIVER}  Fri Aug 30 21:43:41 UTC 2026")
            k(t + 27.0, "hv_netvsc 000d3a5c-41e2-000d-3a5c-41e2000d3a5c eth0: VF registering: enP1346s1")
            k(t + 27.1, "hv_netvsc 000d3a5c-41e2-000d-3a5c-41e2000d3a5c eth0: Data path switched to VF: enP1346s1")
        boot_lines(boot)
        used = any(h in x.nodes for x in atts)
        if not used:
            ev.append((a[3].F + 4000, "systemd", "Started Daily apt download activities."))
        # ---- attempt 1: Xid 94 + 63 on G; NHC drains, reboot
        x = a[1]
        if h == roles["G"]:
            p = pci(g)
            pid = worker_pid(pids_of(x, seed), h, g)
            k(x.R, f"NVRM: Xid (PCI:{p}): 94, pid={pid}, name=python, Contained: SM (0x1). RST: No, D-RST: No")
            k(x.R + 0.002, f"NVRM: Xid (PCI:{p}): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row "
                           f"(0x{rng.randint(0x100000000, 0xfffffffff):016x}) marked for remapping, reset gpu to activate.")
            tn = x.E + 30
            ev.append((tn, "nhc[88123]", f"Health check failed:  check_gpu_xid: GPU Xid errors detected: kernel: "
                                         f"NVRM: Xid (PCI:{p}): 94, pid={pid}, name=python, Contained: SM (0x1). RST: No, "
                                         "D-RST: No. FaultCode: NHC2001"))
            rb = x.E + 1200
            ev.append((rb - 3, "systemd", "Stopping Slurm node daemon..."))
            boot_lines(rb + 40)
            ev.append((rb + 180, "nhc[2411]", "Node Health Check completed successfully (61s)."))
        if h == roles["FZ"] and x.freeze:
            n_, tfz = x.freeze
            nb = tfz
            eid = f"5C1A8F3E-7B1D-4E0A-9C55-{rng.getrandbits(48):012X}"
            ev.append((nb - 900 + 12, "scheduled-events[1733]", sched_event(2, eid, "Freeze", h, "Scheduled", rfc1123(nb), 5)))
            ev.append((nb + 1, "scheduled-events[1733]", sched_event(3, eid, "Freeze", h, "Started", "", 5)))
            ev.append((nb + 72, "scheduled-events[1733]", json.dumps({"DocumentIncarnation": 4, "Events": []},
                                                                     separators=(",", ":"))))
            k(nb + 5.4, "hv_utils: TimeSync IC version 4.0")
        if h == roles["NV"]:
            tv = x.F + 0.62 * (x.R - x.F)
            u = "000d3a5c-41e2-000d-3a5c-41e2000d3a5c"
            k(tv, f"hv_netvsc {u} eth0: Data path switched from VF: enP1346s1")
            k(tv + 0.01, f"hv_netvsc {u} eth0: VF unregistering: enP1346s1")
            k(tv + 6.3, f"hv_netvsc {u} eth0: VF registering: enP1346s1")
            k(tv + 6.4, "mlx5_core 0542:00:02.0 enP1346s1: Link up")
            k(tv + 6.5, f"hv_netvsc {u} eth0: Data path switched to VF: enP1346s1")
        # ---- attempt 2: blobfuse2 throttling on five hosts
        x = a[2]
        if h in roles["BLOB"]:
            order = [roles["BLOB_FIRST"]] + [y for y in roles["BLOB"] if y != roles["BLOB_FIRST"]]
            t1 = x.R + order.index(h) * rng.uniform(4, 11)
            bp = 6100 + int(h.rsplit("-", 1)[1])
            for j in range(3):
                tt = t1 + j * 30
                f = f"tok/redpajama-v2/shard-{(x.fail_step * 7 + j * 131 + bp) % 4096:05d}.arrow"
                blk = rng.randint(100, 900)
                ev += [(tt, f"blobfuse2[{bp}]", f"[{DATA}] LOG_ERR [azstorage.go (458)]: AzStorage::ReadInBuffer : Failed "
                                                f"to read {f} [context deadline exceeded]"),
                       (tt + 0.01, f"blobfuse2[{bp}]", f"[{DATA}] LOG_ERR [block_cache.go (847)]: BlockCache::download : 3 "
                                                       f"attempts to download a block have failed {blk}=>{f} (index 12, offset 201326592)"),
                       (tt + 0.02, f"blobfuse2[{bp}]", f"[{DATA}] LOG_ERR [block_cache.go (580)]: BlockCache::getBlock : "
                                                       f"Failed to download block {blk}=>{f} (offset 201326592, index 12)"),
                       (tt + 0.03, f"blobfuse2[{bp}]", f"[{DATA}] LOG_ERR [block_cache.go (493)]: BlockCache::ReadInBuffer : "
                                                       f"Failed to get Block {blk}=>{f} offset 201326592 [failed to download block]")]
        # ---- attempt 3: IB flap decoy
        x = a[3]
        if h == roles["IB"]:
            tf = max(x.F + 600, x.R - 3600)
            k(tf, "mlx5_core 0105:00:00.0: mlx5_port_module_event:1131:(pid 0): Port module event: module 0, Cable plugged")
            ev.append((tf + 0.2, "systemd-networkd[1102]", "ib4: Lost carrier"))
            ev.append((tf + 8.4, "systemd-networkd[1102]", "ib4: Gained carrier"))
        # ---- attempt 4: Reboot event on RB
        x = a[4]
        if h == roles["RB"]:
            eid = f"A3D7C2B9-1F4E-4D6B-8E21-{rng.getrandbits(48):012X}"
            nb = float(math.floor(x.R))
            ev.append((nb - 900 + 7, "scheduled-events[1733]", sched_event(5, eid, "Reboot", h, "Scheduled", rfc1123(nb), -1)))
            ev.append((nb - 0.5, "scheduled-events[1733]", sched_event(6, eid, "Reboot", h, "Started", "", -1)))
            ev.append((x.R - 0.3, "systemd", "Stopping Session 4 of User azureuser..."))
            ev.append((x.R - 0.2, "systemd-shutdown", "Syncing filesystems and block devices."))
            k(x.R - 0.1, "reboot: Restarting system")
            boot_lines(x.R + 95)
            ev.append((x.R + 190, "scheduled-events[1601]", json.dumps({"DocumentIncarnation": 7, "Events": []},
                                                                       separators=(",", ":"))))
        # ---- attempt 5: Xid 48 + 64 on G; NHC check_gpu_ecc drains
        x = a[5]
        if h == roles["G"]:
            p = pci(g)
            pid = worker_pid(pids_of(x, seed), h, g)
            k(x.R, f"NVRM: Xid (PCI:{p}): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) "
                   f"has been detected on GPU in the framebuffer at physAddr 0x{rng.randint(0x100000000, 0xfffffffff):x} "
                   "partition 3, subpartition 0.")
            k(x.R + 0.001, f"NVRM: Xid (PCI:{p}): 64, pid={pid}, name=python, Row Remapper Error: "
                           f"(0x{rng.randint(0x100000000, 0xfffffffff):016x}) - All reserved rows for bank are remapped")
            k(x.R + 0.002, f"NVRM: Xid (PCI:{p}): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)")
            ev.append((x.E + 28, "nhc[90211]", f"Health check failed:  check_gpu_ecc: GPU id {g}: Row remap error. "
                                               "FaultCode: NHC2007"))
        # ---- attempt 6: host OOM on M
        x = a[6]
        if h == roles["M"]:
            pid = worker_pid(pids_of(x, seed), h, roles["m"])
            k(x.R - 0.03, "python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
                          "oom_score_adj=0")
            k(x.R - 0.02, "Mem-Info:")
            k(x.R - 0.01, "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,"
                          f"task_memcg=/system.slice/slurmstepd.scope/job_{x.job}/step_0/user/task_0,task=python,pid={pid},uid=20001")
            k(x.R, f"Out of memory: Killed process {pid} (python) total-vm:498177224kB, anon-rss:197322612kB, "
                   "file-rss:181944kB, shmem-rss:8388608kB, UID:20001 pgtables:412884kB oom_score_adj:0")
            k(x.R + 1.7, f"oom_reaper: reaped process {pid} (python), now anon-rss:0kB, file-rss:0kB, shmem-rss:8388608kB")
        ev = [e for e in ev if e[0] <= atts[-1].E + 900]
        ev.sort(key=lambda e: e[0])
        body = "\n".join(f"{syslog_ts(t)} {h} {prog}: {msg}" for t, prog, msg in ev) + "\n"
        write(bundle / "nodes" / h / "syslog", body.encode())


# ----------------------------------------------------------------------------- scheduler
def scheduler(atts: list[Att], seed: int, roles: dict, bundle: Path) -> None:
    rng = random.Random(f"{seed}-sched")
    C = Sink()

    def ctl(t: float, m: str) -> None:
        C.add(t, f"{ctld_ts(t)} {m}")

    rows = ["JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"]
    a = {x.k: x for x in atts}
    for x in atts:
        sub = x.S - rng.uniform(5, 60)
        hl = hostlist(x.nodes)
        cpus = 96 * len(x.nodes)
        ctl(sub, f"_slurm_rpc_submit_batch_job: JobId={x.job} InitPrio=4294901{rng.randint(100, 999)} usec={rng.randint(300, 900)}")
        ctl(x.S + 0.02, f"sched: Allocate JobId={x.job} NodeList={hl} #CPUs={cpus} Partition=gpu")
        steps = [("batch", "FAILED", "1:0"), ("0", "FAILED", "1:0")]
        if x.mode == "preemption":
            ctl(x.R + 110.3, f"error: Nodes {x.host} not responding")
            ctl(x.E - 1.6, f"validate_node_specs: Node {x.host} unexpectedly rebooted boot_time={int(x.R + 95)} "
                           f"last response={int(x.R - 40)}")
            ctl(x.E - 1.5, f"Killing JobId={x.job} on failed node {x.host}")
            ctl(x.E + 0.1, f"_job_complete: JobId={x.job} WTERMSIG 9")
            state, ec = "NODE_FAIL", "0:0"
            steps = [("batch", "CANCELLED", "0:15"), ("0", "CANCELLED", "0:9")]
        elif x.kind == "failure":
            if x.mode == "host_oom":
                state, ec = "OUT_OF_MEMORY", "0:125"
                steps = [("batch", "FAILED", "1:0"), ("0", "OUT_OF_MEMORY", "0:125")]
            else:
                state, ec = "FAILED", "1:0"
            ctl(x.E + 0.1, f"_job_complete: JobId={x.job} WEXITSTATUS 1")
        elif x.kind == "time_limit":
            ctl(x.T + 0.01, f"Time limit exhausted for JobId={x.job}")
            ctl(x.E + 0.1, f"_job_complete: JobId={x.job} WTERMSIG 15")
            state, ec = "TIMEOUT", "0:0"
            steps = [("batch", "CANCELLED", "0:15"), ("0", "CANCELLED", "0:15")]
        else:
            ctl(x.E + 0.1, f"_job_complete: JobId={x.job} WEXITSTATUS 0")
            state, ec = "COMPLETED", "0:0"
            steps = [("batch", "COMPLETED", "0:0"), ("0", "COMPLETED", "0:0")]
        ctl(x.E + 0.11, f"_job_complete: JobId={x.job} done")
        rows.append(f"{x.job}|ndv5-34b|gpu|llm|{cpus}|{state}|{ec}|{slurm_ts(sub)}|{slurm_ts(x.S)}|{slurm_ts(x.E)}|"
                    f"{elapsed(x.E - x.S)}|{len(x.nodes)}|{hl}")
        for sname, sst, sec in steps:
            nn, nl, cp = (1, x.nodes[0], 96) if sname == "batch" else (len(x.nodes), hl, cpus)
            jn = "batch" if sname == "batch" else "accelerate"
            rows.append(f"{x.job}.{sname}|{jn}||llm|{cp}|{sst}|{sec}|{slurm_ts(x.S)}|{slurm_ts(x.S)}|{slurm_ts(x.E)}|"
                        f"{elapsed(x.E - x.S)}|{nn}|{nl}")
    G = roles["G"]
    x = a[1]
    ctl(x.E + 31, f"update_node: node {G} reason set to: NHC: check_gpu_xid: GPU Xid errors detected. FaultCode: NHC2001")
    ctl(x.E + 31.1, f"update_node: node {G} state set to DRAINED")
    ctl(x.E + 1190, f"reboot request queued for nodes {G}")
    ctl(x.E + 1420, f"Node {G} now responding")
    ctl(x.E + 1421, f"update_node: node {G} state set to IDLE")
    x = a[3]
    ctl(x.E + 400, f"update_node: node {roles['H']} reason set to: hung rank 3 (job {x.job}), needs triage")
    ctl(x.E + 400.1, f"update_node: node {roles['H']} state set to DRAINED")
    x = a[4]
    ctl(x.E + 260, f"Node {x.host} now responding")
    x = a[5]
    ctl(x.E + 29, f"update_node: node {G} reason set to: NHC: check_gpu_ecc: GPU id {roles['g']}: Row remap error. "
                  "FaultCode: NHC2007")
    ctl(x.E + 29.1, f"update_node: node {G} state set to DRAINED")
    # another team's short job on the spares (noise)
    st = a[2].S - 4000
    ctl(st - 2, "_slurm_rpc_submit_batch_job: JobId=4099 InitPrio=4294901311 usec=402")
    ctl(st, "sched: Allocate JobId=4099 NodeList=ccw-gpu-[19-20] #CPUs=192 Partition=gpu")
    ctl(st + 1250, "_job_complete: JobId=4099 WEXITSTATUS 0")
    ctl(st + 1250.01, "_job_complete: JobId=4099 done")
    rows.append(f"4099|nccl-allreduce-test|gpu|infra|192|COMPLETED|0:0|{slurm_ts(st - 2)}|{slurm_ts(st)}|"
                f"{slurm_ts(st + 1250)}|{elapsed(1250)}|2|ccw-gpu-[19-20]")
    write(bundle / "scheduler" / "slurmctld.log", C.render())
    write(bundle / "scheduler" / "sacct.txt", ("\n".join(rows) + "\n").encode())


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    global MAX_STEPS
    bundle = out / "bundle"
    roles = pick_hosts(seed)
    atts = build(seed, roles)
    MAX_STEPS = atts[-1].load + atts[-1].n_steps
    write(bundle / "inventory.toml", f"""# CycleCloud Workspace for Slurm, nodearray gpu
[providers.{PROVIDER}]
usd_per_gpu_hour = 6.98
support = "Azure support case; Scheduled Events via IMDS"

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = 8
interconnect = "InfiniBand NDR 8x400G"
vm_size = "Standard_ND96isr_H100_v5"
nodes = "{hostlist(HOSTS)}"
""".encode())
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", f"""# 34B decoder, HF Trainer + DeepSpeed ZeRO-3 under accelerate launch
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.4e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --nodes=16 --gpus-per-node=8 --exclusive --time=12:00:00 train_ndv5.sbatch"
""".encode())
    infos = {}
    for a in atts:
        data, infos[a.k] = train_log(a, seed, roles)
        write(rdir / f"attempt-{a.k}" / f"slurm-{a.job}.out", data)
        for h in a.nodes:
            write(rdir / f"attempt-{a.k}" / "nccl" / f"{h}.log", nccl_log(a, h, seed, infos[a.k]))
    node_logs(atts, seed, roles, infos, bundle)
    scheduler(atts, seed, roles, bundle)
    cats, total, per = ledger(atts)
    incs = []
    for j, a in enumerate(atts[:-1]):
        incs.append({"id": j + 1, "attempt": a.k, "attempts": [a.k], "slurm_job": a.job, "failure_mode": a.mode,
                     "blame": "user" if a.mode in ("time_limit", "host_oom", "nccl_timeout") else "provider",
                     "host": a.host, "gpu_index": a.gpu, "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E),
                     "kept_step": a.kept, "gpu_hours": per[j], "gpu_hours_lost": round(sum(per[j].values()), 4)})
    peers = infos[4]["peers"]
    decoys = {roles["FZ"]: "Scheduled Event Freeze (5 s) in attempt 1; training went on",
              roles["NV"]: "hv_netvsc VF data-path switch (Azure host servicing); harmless",
              roles["IB"]: "IB port flap (Lost/Gained carrier within 8 s) an hour before the hang; NCCL retried",
              roles["BLOB_FIRST"]: "first host whose blobfuse2 reports the storage-account throttling: a symptom",
              peers[0]: "rail peer of the rebooted VM: NET/IB completion errors are a symptom",
              peers[1]: "rail peer of the rebooted VM: NET/IB completion errors are a symptom",
              "ccw-gpu-1": "rank 0's metrics-uploader thread traceback in attempt 5; training went on"}
    for i in incs:                                   # a decoy may never be an incident's true host
        assert i["host"] not in decoys, (i["host"], decoys)
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "first_start_ts": iso_z(atts[0].S), "last_end_ts": iso_z(atts[-1].E),
        "match_on_attempt": True,
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "nodes": hostlist(a.nodes), "start_ts": iso_z(a.S),
                      "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E), "loaded_step": a.load,
                      "last_step": a.steps[-1][0] if a.steps else a.load,
                      "saves": [n for n, _, _ in a.saves], "end": a.kind} for a in atts],
        "incidents": incs,
        "forbidden_incidents": [
            {"failure_mode": "preemption", "attempts": [1], "reason": "a 5 s Freeze the job survived"},
            {"failure_mode": "network", "attempts": [3, 4],
             "reason": "an IB flap the job survived / the peers' IB errors are the reboot's symptoms"}],
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys, "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incs
                                                                    if i["blame"] == "provider"), 4)},
        "notes": "Times UTC. host null matches any host. Ledger: see the generator's docstring.",
    }
    write(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261207)
    args = ap.parse_args()
    out = Path(args.out)
    if (out / "bundle").exists():
        raise SystemExit(f"{out / 'bundle'} exists; pass an empty --out")
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    print(f"wrote {out / 'bundle'}; total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
