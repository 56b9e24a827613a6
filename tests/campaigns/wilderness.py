#!/usr/bin/env python3
"""Independent campaign "wilderness": one run, three rented clusters, the hardware lottery.

Re-enacts the situation Yi Tay (Reka) describes in "Training great LLMs entirely from ground up in
the wilderness as a startup" (2024): the same H100s rented from several providers behave very
differently. One provider's nodes fail every few hours (a GPU falls off the bus, a node is lost, an
NCCL hang); another provider's shared filesystem makes checkpoint saves crawl, then time out, and
the provider's "repair" of the storage wipes the checkpoints, so the next launch silently starts from
random weights; the third provider is healthy apart from one slow node. Written without reading the
analysis code of clusterlab, only DESIGN.md, the evidence README, the scorer and campaigns 1 and 2.

Writes, under --out DIR:
  DIR/bundle/inventory.toml                       3 providers, 3 clusters (tg-1, cb-east, md-2)
  DIR/bundle/runs/wilderness/run.toml
  DIR/bundle/runs/wilderness/attempt-<k>/slurm-<jobid>.out[.gz]   srun + torchrun + Megatron-LM output
  DIR/bundle/runs/wilderness/attempt-<k>/nccl/<host>.log[.gz]     NCCL_DEBUG=INFO (NCCL_DEBUG_FILE) per host
  DIR/bundle/runs/wilderness/attempt-6/steps/rank-NNN.jsonl[.gz]  per-rank step records, 2 ranks per node,
                                                                  around the straggler window
  DIR/bundle/nodes/<host>/kern.log + kern.log.1.gz   tg-1: rsyslog traditional format, rotated daily
  DIR/bundle/nodes/<host>/journal-kernel.txt          cb-east: journalctl -k -o short-iso
  DIR/bundle/nodes/<host>/dmesg-iso.log               md-2: dmesg --time-format iso
  DIR/bundle/scheduler/<cluster>/{slurmctld.log, sacct.psv}   one Slurm controller per provider
  DIR/truth.json
Usage: wilderness.py --out DIR [--seed N]     (python 3.11, standard library only; deterministic per
seed: gzip members have mtime=0 and no name; ~7.5 MB, ~1 s)

Scenario (run "wilderness", a 21B dense decoder, Megatron-LM TP=4 PP=2 DP=16, 128 GPUs = 16 nodes x
8 H100-SXM in every attempt; ~2.5 simulated days; truth times are the Slurm controllers' UTC clocks;
every node's clock is off by up to a few seconds, some by more):
  attempt 1  tg-1 (tallgrass) job 3101, fresh start ("could not find the metadata file ... will start
             from random"). Xid 79 on tg1-a05 GPU6 (the GPU falls off the bus); the 8 ranks of tg1-a05
             go silent; ~600 s later the ProcessGroupNCCL watchdog fires on the 120 other ranks, they
             abort (SIGABRT); torchrun's ChildFailedError names tg1-a09 as "first observed failure";
             tg1-a05's stuck worker needs SIGKILL; the job FAILS.              [gpu_fell_off_bus, tg1-a05]
  attempt 2  tg-1 job 3117 (tg1-a05 drained, spare tg1-a17 in). tg1-a11 dies silently: its syslog ends
             in a half-written line followed by NUL bytes; ~18 s later its rail peers tg1-a10/tg1-a12
             get "NET/IB : Got completion from peer <tg1-a11's IP> with status=12" and their ranks abort
             with ncclRemoteError; the step hangs on the dead node until slurmctld sets it DOWN
             ("Nodes tg1-a11 not responding, setting DOWN", "Killing JobId=3117 on failed node"); srun
             "Node failure on tg1-a11"; sacct NODE_FAIL. The node reboots hours later.
                                                                                 [node_failure, tg1-a11]
  attempt 3  tg-1 job 3129 (tg1-a11 out, spare tg1-a18 in). Rank 18 (tg1-a03 GPU2) stops after the
             collectives of step N and never enqueues the next one; the 127 other ranks time out after
             600 s on SeqNum S ("last enqueued work: S"); rank 18 only prints the flight-recorder dump
             notice with "Last enqueued NCCL work: S-1"; no kernel evidence anywhere; ChildFailedError
             names tg1-a14 (first to abort). Cause: the hang on tg1-a03.          [nccl_timeout, tg1-a03]
  -- the team gives up on tallgrass; the step-L3 checkpoint is copied to cobalt (7.5 h gap) --
  attempt 4  cb-east (cobalt) job 55012, loads L3 (slow load). Saves on the cobalt Lustre take 2.5-16
             min instead of <1 min (Lustre "Request sent has timed out for slow reply" / "Connection
             ... lost" / "restored" blips during the slowest). At a later save OST0007 stops answering:
             every host logs the lost connection within seconds, ost_write fails with rc = -110, three
             hosts report hung python tasks in the Lustre write path; the ranks that finished writing
             wait in the checkpoint's all-gather and the watchdog fires after 600 s; the writers stuck
             in the filesystem print only the dump notice. Root cause: the shared filesystem (the
             provider's storage service), not a compute host.                  [filesystem_io, host null]
  attempt 5  cb-east job 55030. The provider "repaired" the storage (all hosts: "Lustre: Unmounted
             cbfs-client" / "Lustre: Mounted cbfs-client" between the attempts); the checkpoint
             directory is empty: Megatron prints "WARNING: could not find the metadata file
             .../latest_checkpointed_iteration.txt / will not load any checkpoints and will start from
             random" and trains from iteration 0 (lm loss back at ~11) although attempt 4 had logged
             "successfully saved checkpoint" to the same directory several times. The user notices and
             scancels it after ~45 min (REQUEST_KILL_JOB uid 1203, sacct "CANCELLED by 1203"). Root
             cause of this attempt's loss, and of the loss of attempt 4's saved work: the provider lost
             the checkpoints.                                                 [checkpoint_lost, host null]
  -- the team moves to meridian; the step-L3 copy (still on tallgrass storage) is copied over (6 h) --
  attempt 6  md-2 (meridian) job 907, loads L3 and completes the 20000 iterations (final save, exit 0).
             For ~900 iterations md2-n07's ranks need 19 % more compute time; every rank waits for them
             (iteration time 6.05 s -> ~6.56 s); the per-rank records show it.   [straggler, md2-n07]
  Decoys: tg1-a09 and tg1-a14 (named by torchrun's "Root Cause (first observed failure)" in attempts 1
  and 3: symptoms); tg1-a10 and tg1-a12 (NET/IB completion errors in attempt 2: rail peers of the dead
  node); tg1-a20 (idle spare: mlx5 "Link down"/"Link up" flap during attempt 3); cbe-gpu-104, -109,
  -113 (hung-task reports and, on -109 whose clock is 6.5 s behind, the "first" Lustre error: symptoms
  of the shared filesystem); md2-n03 (Xid 63 row-remapping event mid attempt 6, training continues at
  pace); md2-n05 (NCCL WARN "Got async event : client reregistration" after a subnet-manager failover,
  harmless); md2-n17 (idle spare: Xid 79 during the provider's own burn-in job, never part of the run).
  Noise: NCCL INFO spam, Python FutureWarnings, the Megatron argument dump, kernel noise, rows without
  a timestamp of their own (NCCL lines, tracebacks, Megatron prints), truncated last lines (the NCCL
  logs of tg1-a05 in attempt 1 and tg1-a11 in attempt 2), NUL bytes, a gzip-rotated syslog.

Ledger (truth.json expected_ledger; GPU-hours = 128 x seconds / 3600). Conventions of campaign1.py,
made explicit for a lost checkpoint:
  startup    = attempt start (sacct Start) -> start of the first training step ("[before the start of
               training step] datetime")
  productive = whole durations of kept steps: steps <= the checkpoint the run's lineage continued from
               (attempts 1-3: their last save; attempt 4: none, its checkpoints were lost; attempt 5:
               none, it trained from random weights and was thrown away); all steps of attempt 6 except,
               inside the straggler window, only the 6.05 s baseline counts
  straggler  = step time above the 6.05 s baseline inside the straggler window (md2-n07)
  checkpoint = every completed save (Megatron's "save-checkpoint" timer; the iteration timer excludes
               it), including attempt 4's saves that were later lost, plus the tail after the final save
  recompute  = the rest of [first step start, root event]: steps thrown away and the partial step in
               flight (attempts 1-3: end of the last save -> root event; attempt 4: all its step time;
               attempt 5: first step -> the cancel)
  hang       = root event -> attempt exit (sacct End). Root events: the Xid 79; the node's death (its
               last syslog line); the end of the last step all ranks completed (the hang); the start of
               the save that never completed; the user's cancel
  restart    = attempt exit -> next attempt start (includes the checkpoint copies between providers)
  slowdown = data_stall = idle = 0

Formats and where they were checked (public material, found with the search/fetch tools; the text
here is written anew with invented hosts, times and values):
  * Megatron-LM (NVIDIA/Megatron-LM, megatron/training/training.py training_log(): " [%Y-%m-%d
    %H:%M:%S.%f] iteration {:8d}/{:8d} | consumed samples: {:12d} | elapsed time per iteration (ms):
    {:.1f} | throughput per GPU (TFLOP/s/GPU): {:.1f} | learning rate: {:.6E} | global batch size:
    {:5d} | lm loss: {:.6E} | loss scale: {:.1f} | grad norm: {:.3f} | number of skipped iterations:
    {:3d} | number of nan iterations: {:3d} |"; print_datetime "[before the start of training step]
    datetime: ..."; "done with setup ...", "training ...", " > number of parameters on (tensor,
    pipeline) model parallel rank (i, j): N"; megatron/training/checkpointing.py: "[ts] saving
    checkpoint at iteration {:7d} to {} in torch_dist format", "  [ts] successfully saved checkpoint
    from iteration {:7d} to {} [ t i/T, p j/P ]", " loading distributed checkpoint from {} at iteration
    {}", "  successfully loaded checkpoint from {} [ t i/T, p j/P ] at iteration {}", "WARNING: could
    not find the metadata file {}" + "    will not load any checkpoints and will start from random";
    megatron/core/timers.py "(min, max) time across ranks (ms):" + "    {name padded with dots to
    48}: (min, max)"; arguments.py "using world size: ..., data-parallel size: ..."; initialize.py
    "> initializing torch distributed ...", "> initialized tensor model parallel with size N",
    "> setting random seeds to N ...", "> compiling dataset index builder ..."; pretrain_gpt.py
    "> building train, validation, and test datasets for GPT ...").
  * PyTorch ProcessGroupNCCL, 2.5-2.6 era (a public training log quoting the full block; OpenRLHF
    #1126, huggingface/accelerate #3861, meta-pytorch/torchtune #2651, NVIDIA-NeMo/RL #2140):
    "[rankR]:[EMMDD hh:mm:ss.nnnnnnnnn ProcessGroupNCCL.cpp:632] [Rank R] Watchdog caught collective
    operation timeout: WorkNCCL(SeqNum=S, OpType=..., NumelIn=.., NumelOut=.., Timeout(ms)=600000) ran
    for N milliseconds before timing out.", "[PG ID 0 PG GUID 0(default_pg) Rank R]  failure detected
    by watchdog at work sequence id: S PG status: last enqueued work: S, last completed work: S-1",
    "Stack trace of the failed collective not found, potentially because FlightRecorder is disabled.
    ...", "Received a dump signal due to a collective timeout from  rank X and we will try our best
    to dump the debug info. Last enqueued NCCL work: .., last completed NCCL work: ...This is most
    likely caused by ...", "Observed flight recorder dump signal from another rank via TCPStore.",
    "Some NCCL operations have failed or timed out. ...", "To avoid data inconsistency, we are taking
    the entire process down.", "Process group watchdog thread terminated with exception: ...",
    "terminate called after throwing an instance of 'c10::DistBackendError'", "NCCL error: remote
    process exited or there was a network error, NCCL version ..." + "ncclRemoteError: A call failed
    possibly due to a network error or a remote process exiting prematurely." + "Last error:".
  * torch.distributed.elastic (same public log; NVIDIA/Megatron-LM #1880): "E0709 17:05:39.816000
    56204 site-packages/torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -6)
    local_rank: 0 (pid: P) of binary: ...", the ChildFailedError block ("Root Cause (first observed
    failure):", time/host/rank/exitcode/error_file/traceback "Signal 6 (SIGABRT) received by PID P"),
    "Sending process P closing signal SIGTERM", "Unable to shutdown process P via Signals.SIGTERM,
    forcefully exiting via Signals.SIGKILL", "Received 15 death signal, shutting down workers", the
    OMP_NUM_THREADS banner of run.py.
  * NCCL 2.21 INFO/WARN (NVIDIA/nccl issues #1814, #1170, scitix/sichek #44): "host:pid:tid [d] NCCL
    INFO ncclCommInitRank comm 0x.. rank r nranks n cudaDev d nvmlDev d busId b commId 0x.. - Init
    START|COMPLETE", "NET/IB : Using [0]mlx5_0:1/IB ... [RO]; OOB ...", "Connected NVLS tree",
    "threadThresholds ...", "N coll channels, ...", "transport/net_ib.cc:2360 NCCL WARN NET/IB : Got
    completion from peer IP<port> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ..
    remoteGids.. hca mlx5_N" followed by "transport/net.cc:1302 -> 6" / "proxy.cc:... -> 6"; the async
    event WARN "transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_N:1 Got async event : <ibv event
    string>" (as campaigns 1/2; "client reregistration" is ibv_event_type_str of
    IBV_EVENT_CLIENT_REREGISTER).
  * NVRM Xid 79 "NVRM: Xid (PCI:0000:xx:00): 79, pid=.., name=.., GPU has fallen off the bus." + "NVRM:
    GPU 0000:xx:00.0: GPU has fallen off the bus." + crash-dump hint (as campaign1's sources); Xid 63
    "NVRM: Xid (PCI:0000:10:1c): 63, pid=1850, Row Remapper: New row marked for remapping, reset gpu to
    activate." (stas00/ml-engineering, a public HF training log).
  * Lustre client (Lustre import.c ptlrpc_set_import_discon(), public dmesg excerpts found with
    find_string): "Lustre: PID:0:(client.c:2310:ptlrpc_expire_one_request()) @@@ Request sent has timed
    out for slow reply: [sent T/real T]  req@.. x../t0(0) o4->FS-OSTnnnn-osc-ffff..@NID:6/4 lens 488/448
    e 2 to 1 dl T ref 2 fl Rpc:XQr/2/ffffffff rc 0/-1", "Lustre: FS-OSTnnnn-osc-ffff..: Connection to
    FS-OSTnnnn (at NID) was lost; in progress operations using this service will wait for recovery to
    complete", "... Connection restored to NID (at NID)", "LustreError: 11-0: FS-OSTnnnn-osc-..:
    operation ost_write to node NID failed: rc = -110", "LustreError: Skipped N previous similar
    messages"; "Lustre: Mounted FS-client" / "Lustre: Unmounted FS-client" (llite); hung task report
    "INFO: task NAME:PID blocked for more than N seconds." (as campaign2).
  * mlx5 "mlx5_core 0000:5e:00.0 ibp94s0: Link down" / "Link up" (Linux en_main.c, as campaign1).
  * Slurm: slurmctld ping.c "Nodes %s not responding, setting DOWN" (SchedMD/slurm source and public
    slurmctld excerpts), "Killing JobId=N on failed node H", "Node H unexpectedly rebooted boot_time=..
    last response=..", "_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId=N uid U", "_job_complete: JobId=N
    WEXITSTATUS 1"; slurmstepd "*** JOB N ON H CANCELLED AT T DUE TO NODE FAILURE, SEE SLURMCTLD LOG
    FOR DETAILS ***", "*** JOB N ON H CANCELLED AT T ***"; srun "srun: error: Node failure on H",
    "srun: error: H: task i: Exited with exit code 1"; sacct -P output (NODE_FAIL, "CANCELLED by U").
  * Kernel log shapes: rsyslog "Mar  2 05:00:01 host kernel: [ 1234.567890] msg"; journalctl -k -o
    short-iso "2026-03-03T14:02:11+00:00 host kernel: msg"; dmesg --time-format iso
    "2026-03-04T09:12:33,123456+00:00 msg" (util-linux).
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

# ----------------------------------------------------------------------------- run constants
RUN = "wilderness"
GPN = 8
NNODES = 16
GPUS = GPN * NNODES                            # 128
TP, PP, DP = 4, 2, 16
GBS, SEQ = 256, 8192
TOKENS_PER_STEP = GBS * SEQ                    # 2,097,152
PARAMS = 21_318_144_000
LAYERS, HIDDEN, HEADS = 40, 6144, 48
FLOPS_PER_TOKEN = 6 * PARAMS + 12 * LAYERS * HIDDEN * SEQ      # 1.5207e11
PEAK_H100_SXM = 989.4e12
BASE_STEP = 6.05
STEP_JITTER = 0.004
BASE_COMPUTE, BASE_DATA, MIN_COMM = 5.30, 0.05, 0.20
SLOW_FACTOR = 1.19
WINDOW_STEP = BASE_COMPUTE * SLOW_FACTOR + BASE_DATA + MIN_COMM  # 6.557 s
WINDOW_LEN = 900
WINDOW_OFFSET = 2500                          # steps after attempt 6's load step
JSONL_MARGIN = 150
SAVE_INTERVAL = 500
LOG_INTERVAL = 10
TRAIN_ITERS = 20000
WATCHDOG_MS = 600_000
T0 = datetime(2026, 3, 2, 5, 0, 0, tzinfo=UTC).timestamp()
NCCL_VERSION = "2.21.5+cuda12.4"
USER_UID = 1203
PY = "/usr/local/lib/python3.10/dist-packages"

HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]

CLUSTERS = {
    "tg-1": {"provider": "tallgrass", "usd": 1.95, "hosts": [f"tg1-a{i:02d}" for i in range(1, 21)],
             "ckpt": "/scratch/ckpt/wilderness-21b", "gpu": "H100-SXM"},
    "cb-east": {"provider": "cobalt", "usd": 2.20, "hosts": [f"cbe-gpu-{i}" for i in range(101, 119)],
                "ckpt": "/cbfs/ckpt/wilderness-21b", "gpu": "H100-SXM"},
    "md-2": {"provider": "meridian", "usd": 2.65, "hosts": [f"md2-n{i:02d}" for i in range(1, 19)],
             "ckpt": "/weka/ckpt/wilderness-21b", "gpu": "H100-SXM"},
}
TG, CB, MD = CLUSTERS["tg-1"]["hosts"], CLUSTERS["cb-east"]["hosts"], CLUSTERS["md-2"]["hosts"]
CLUSTER_OF = {h: c for c, v in CLUSTERS.items() for h in v["hosts"]}

XID79 = ("tg1-a05", 6)
NODEFAIL = "tg1-a11"
HANG = ("tg1-a03", 2)
ATT1_FIRST, ATT3_FIRST = "tg1-a09", "tg1-a14"
LINKFLAP_SPARE = "tg1-a20"
LUSTRE_HUNG = ["cbe-gpu-104", "cbe-gpu-109", "cbe-gpu-113"]
LUSTRE_FIRST = "cbe-gpu-109"
XID63 = ("md2-n03", 1)
REREG = "md2-n05"
SPARE_XID79 = ("md2-n17", 4)
STRAGGLER = "md2-n07"
FS, BAD_OST, OSS_NID = "cbfs", "OST0007", "10.50.8.17@o2ib"

BUSIDS = {"tg-1": ["18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000"],
          "cb-east": ["19000", "3b000", "4c000", "5d000", "9b000", "bb000", "cb000", "db000"],
          "md-2": ["1b000", "43000", "52000", "61000", "9d000", "c3000", "d1000", "df000"]}
NIC_DEV = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
NIC_IF = ["ibp26s0", "ibp60s0", "ibp77s0", "ibp94s0", "ibp156s0", "ibp188s0", "ibp204s0", "ibp220s0"]
NIC_PCI = ["0000:1a:00.0", "0000:3c:00.0", "0000:4d:00.0", "0000:5e:00.0",
           "0000:9c:00.0", "0000:bc:00.0", "0000:cc:00.0", "0000:dc:00.0"]


def host_ip(h: str) -> str:
    c = CLUSTER_OF[h]
    n = int(h.rsplit("-", 1)[1].lstrip("an"))
    if c == "tg-1":
        return f"10.31.0.{n}"
    if c == "cb-east":
        return f"10.50.4.{n - 100}"
    return f"172.20.9.{100 + n}"


def pci_of(cluster: str, gpu: int) -> str:
    return f"0000:{BUSIDS[cluster][gpu][:2]}:00"


# ----------------------------------------------------------------------------- time formats
def _split(t: float) -> tuple[datetime, int]:
    us_total = int(round(t * 1_000_000))
    s, us = divmod(us_total, 1_000_000)
    return datetime.fromtimestamp(s, UTC), us


def iso_z(t: float) -> str:
    d, us = _split(t)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{us // 1000:03d}Z"


def iso_off(t: float) -> str:
    d, us = _split(t)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{us // 1000:03d}+00:00"


def date_cmd(t: float) -> str:
    d, _ = _split(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def meg_ts(t: float) -> str:                        # datetime.now().strftime('%Y-%m-%d %H:%M:%S.%f')
    d, us = _split(t)
    return f"{d:%Y-%m-%d %H:%M:%S}.{us:06d}"


def c10_ts(t: float, level: str, rng: random.Random) -> str:   # c10 glog, nanoseconds
    d, us = _split(t)
    return f"{level}{d:%m%d} {d:%H:%M:%S}.{us:06d}{rng.randint(0, 999):03d}"


def elastic_ts(t: float, level: str) -> str:         # torch.distributed.elastic logging (ms, padded)
    d, us = _split(t)
    return f"{level}{d:%m%d} {d:%H:%M:%S}.{us // 1000:03d}000"


def slurm_ts(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%dT%H:%M:%S")


def ctld_ts(t: float) -> str:
    d, us = _split(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{us // 1000:03d}]"


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
    prefix = hosts[0].rstrip("0123456789")
    width = len(hosts[0]) - len(prefix)
    nums = sorted(int(h[len(prefix):]) for h in hosts)
    if len(nums) == 1:
        return hosts[0]
    parts, start, prev = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
        if n is not None:
            start = prev = n
    return f"{prefix}[{','.join(parts)}]"


class Sink:
    """Lines keyed by true time; rendered in time order (a log file is written as things happen)."""

    def __init__(self) -> None:
        self.items: list[tuple[float, int, bytes]] = []

    def add(self, t: float, line: str | bytes) -> None:
        self.items.append((t, len(self.items), line if isinstance(line, bytes) else line.encode()))

    def extend(self, t: float, lines) -> None:
        for ln in lines:
            self.add(t, ln)

    def render(self, cut_last: int | None = None) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
        body = b"\n".join(x[2] for x in self.items)
        if cut_last is not None and self.items:          # the writer died mid-line
            return body[: len(body) - max(1, len(self.items[-1][2]) - cut_last)]
        return body + b"\n"


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
        self.steps: list[tuple[int, float, float]] = []       # (iteration, start, duration)
        self.saves: list[tuple[int, float, float]] = []       # (iteration, start, duration), completed
        self.failed_save: tuple[int, float] | None = None
        self.R: float | None = None                           # root event
        self.E: float | None = None                           # exit (sacct End)
        self.window: tuple[int, int] | None = None


def save_duration(cluster: str, idx: int, rng: random.Random) -> float:
    if cluster == "tg-1":
        return round(rng.uniform(40.0, 48.0), 2)
    if cluster == "cb-east":
        if idx == 1 or rng.random() < 0.25:
            return round(rng.uniform(690.0, 960.0), 2)      # the shared filesystem crawls
        return round(rng.uniform(150.0, 290.0), 2)
    return round(rng.uniform(28.0, 34.0), 2)


def simulate(a: Attempt, rng: random.Random) -> bool:
    a.steps, a.saves, a.failed_save = [], [], None
    t, n = a.F, a.load_step
    stop = a.F + a.run_for if a.run_for else None
    while True:
        if a.kind == "complete" and n >= TRAIN_ITERS:
            break
        n1 = n + 1
        base = WINDOW_STEP if (a.window and a.window[0] <= n1 <= a.window[1]) else BASE_STEP
        dur = base * (1.0 + rng.uniform(-STEP_JITTER, STEP_JITTER))
        if a.kind in ("xid79", "nodefail", "cancel") and t + dur > stop:
            a.R = float(math.floor(t + 0.55 * dur))
            if not t < a.R < t + dur:
                return False
            break
        if a.kind == "hang" and t + dur > stop:
            if not a.steps or a.steps[-1][0] % SAVE_INTERVAL == 0:
                return False
            a.R = t                                          # end of the last step every rank completed
            break
        a.steps.append((n1, t, dur))
        t += dur
        n = n1
        if n % SAVE_INTERVAL == 0:
            if a.kind == "fs" and t >= stop:
                a.failed_save = (n, t)
                a.R = t
                break
            c = save_duration(a.cluster, len(a.saves), rng)
            a.saves.append((n, t, c))
            t += c
    if a.kind in ("xid79", "nodefail", "hang"):
        last_save = a.saves[-1][0] if a.saves else a.load_step
        if a.steps[-1][0] - last_save < 40:
            return False
    if a.kind == "cancel" and a.saves:
        raise RuntimeError("attempt 5 must not reach a save")
    tails = {"xid79": 641.0, "nodefail": 303.0, "hang": 5.2 + 600.0 + 42.0, "fs": 96.0 + 600.0 + 37.0,
             "cancel": 3.4}
    if a.kind == "complete":
        a.E = float(math.ceil(a.saves[-1][1] + a.saves[-1][2] + 4.2))
    else:
        a.E = float(math.ceil(a.R + tails[a.kind]))
    return True


def build_timeline(seed: int) -> list[Attempt]:
    rng = random.Random(f"{seed}-wild-timeline")
    a1n = TG[:16]
    a2n = [h for h in TG[:17] if h != XID79[0]]
    a3n = [h for h in TG[:18] if h not in (XID79[0], NODEFAIL)]
    specs = [
        dict(k=1, cluster="tg-1", job=3101, nodes=a1n, kind="xid79", mode="gpu_fell_off_bus",
             root_host=XID79[0], gpu=XID79[1], run_for=8.4 * 3600 + rng.randint(-900, 900),
             load_s=0.0, gap=2700 + rng.randint(-300, 300)),
        dict(k=2, cluster="tg-1", job=3117, nodes=a2n, kind="nodefail", mode="node_failure",
             root_host=NODEFAIL, gpu=None, run_for=5.1 * 3600 + rng.randint(-600, 600),
             load_s=rng.uniform(58, 75), gap=4200 + rng.randint(-400, 400)),
        dict(k=3, cluster="tg-1", job=3129, nodes=a3n, kind="hang", mode="nccl_timeout",
             root_host=HANG[0], gpu=HANG[1], run_for=6.6 * 3600 + rng.randint(-600, 600),
             load_s=rng.uniform(58, 75), gap=int(7.5 * 3600) + rng.randint(-900, 900)),
        dict(k=4, cluster="cb-east", job=55012, nodes=CB[:16], kind="fs", mode="filesystem_io",
             root_host=None, gpu=None, run_for=4.2 * 3600 + rng.randint(-600, 600),
             load_s=rng.uniform(380, 460), gap=int(3.2 * 3600) + rng.randint(-600, 600)),
        dict(k=5, cluster="cb-east", job=55030, nodes=CB[:16], kind="cancel", mode="checkpoint_lost",
             root_host=None, gpu=None, run_for=2640 + rng.randint(-200, 200),
             load_s=0.0, gap=6 * 3600 + rng.randint(-900, 900)),
        dict(k=6, cluster="md-2", job=907, nodes=MD[:16], kind="complete", mode=None,
             root_host=None, gpu=None, run_for=None, load_s=rng.uniform(45, 60), gap=None),
    ]
    attempts = [Attempt(**s) for s in specs]
    t_start, load = T0, 0
    for a in attempts:
        if a.k == 5:
            a.load_step = 0                                   # the checkpoint directory is empty
        elif a.k == 6:
            a.load_step = attempts[2].last_save               # the tallgrass copy of step L3
        else:
            a.load_step = load
        a.S = float(t_start)
        a.phases = {"launch": rng.uniform(34, 46), "init": rng.uniform(20, 28), "build": rng.uniform(24, 33),
                    "load": a.load_s, "data": rng.uniform(30, 42)}
        a.F = a.S + sum(a.phases.values())
        if a.kind == "complete":
            w0 = a.load_step + WINDOW_OFFSET
            a.window = (w0, w0 + WINDOW_LEN - 1)
        tries = 0
        while not simulate(a, random.Random(f"{seed}-wild-steps-{a.k}-{tries}")):
            tries += 1
            a.run_for += 700
            if tries > 40:
                raise RuntimeError(f"attempt {a.k}: cannot place the failure")
        a.last_save = a.saves[-1][0] if a.saves else a.load_step
        load = a.last_save
        if a.gap is not None:
            t_start = a.E + a.gap
    # the lineage: which steps were kept (<= the checkpoint the run continued from)
    a1, a2, a3, a4, a5, a6 = attempts
    a1.kept, a2.kept, a3.kept, a4.kept, a5.kept, a6.kept = a1.last_save, a2.last_save, a3.last_save, -1, -1, None
    assert a6.load_step == a3.last_save == a4.load_step
    return attempts


def ledger(attempts: list[Attempt]):
    cats = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute",
                          "hang", "restart", "startup", "idle"], 0.0)
    parts = []
    for i, a in enumerate(attempts):
        d = {"startup": a.F - a.S, "productive": 0.0, "straggler": 0.0, "checkpoint": 0.0}
        for n, _, dur in a.steps:
            if a.kind == "complete":
                if a.window[0] <= n <= a.window[1]:
                    d["productive"] += BASE_STEP
                    d["straggler"] += dur - BASE_STEP
                else:
                    d["productive"] += dur
            elif n <= a.kept:
                d["productive"] += dur
        d["checkpoint"] = sum(c for _, _, c in a.saves)
        if a.kind == "complete":
            d["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            d.update(recompute=0.0, hang=0.0, restart=0.0)
        else:
            d["recompute"] = (a.R - a.F) - d["productive"] - d["checkpoint"]
            d["hang"] = a.E - a.R
            d["restart"] = attempts[i + 1].S - a.E
            assert d["recompute"] > 0
        for k, v in d.items():
            cats[k] += v
        parts.append(d)
    total_s = attempts[-1].E - attempts[0].S
    assert abs(sum(cats.values()) - total_s) < 1e-6 * total_s, (sum(cats.values()), total_s)
    g = GPUS / 3600.0
    a4 = attempts[3]
    tail4 = a4.R - (a4.saves[-1][1] + a4.saves[-1][2]) if a4.saves else parts[3]["recompute"]
    # per incident: what each cause cost (hang + thrown-away work + restart + the next start-up)
    per = [
        {"hang": parts[0]["hang"], "recompute": parts[0]["recompute"], "restart": parts[0]["restart"],
         "startup": parts[1]["startup"]},
        {"hang": parts[1]["hang"], "recompute": parts[1]["recompute"], "restart": parts[1]["restart"],
         "startup": parts[2]["startup"]},
        {"hang": parts[2]["hang"], "recompute": parts[2]["recompute"], "restart": parts[2]["restart"],
         "startup": parts[3]["startup"]},
        {"hang": parts[3]["hang"], "recompute": tail4, "restart": parts[3]["restart"]},
        {"recompute": parts[3]["recompute"] - tail4 + parts[4]["recompute"], "startup": parts[4]["startup"]
         + parts[5]["startup"], "hang": parts[4]["hang"], "restart": parts[4]["restart"]},
    ]
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total_s * g, 4),
            [{k: round(v * g, 4) for k, v in p.items()} for p in per], parts)


# ----------------------------------------------------------------------------- fleet facts
class Fleet:
    def __init__(self, seed: int):
        rng = random.Random(f"{seed}-wild-fleet")
        self.skew, self.boot, self.uuid, self.serial, self.gid = {}, {}, {}, {}, {}
        for c, v in CLUSTERS.items():
            for h in v["hosts"]:
                self.skew[h] = round(rng.uniform(0.3, 3.4) * rng.choice([-1, 1]), 3)
                self.boot[h] = T0 - rng.randint(2 * 86400, 11 * 86400) - rng.random()
                for g in range(GPN):
                    hx = f"{rng.getrandbits(128):032x}"
                    self.uuid[h, g] = f"GPU-{hx[:8]}-{hx[8:12]}-{hx[12:16]}-{hx[16:20]}-{hx[20:]}"
                    self.serial[h, g] = f"1654{rng.randint(0, 999_999_999):09d}"
                    self.gid[h, g] = "fe80::" + ":".join(f"{rng.randint(0x1000, 0xffff):x}" for _ in range(4))
            _ = c
        self.skew[XID79[0]] = 2.914
        self.skew[LUSTRE_FIRST] = -6.52
        self.skew[STRAGGLER] = 4.107
        self.skew["tg1-a01"], self.skew["cbe-gpu-101"], self.skew["md2-n01"] = 0.842, -1.207, 0.311


class Pids:
    def __init__(self, seed: int, a: Attempt):
        rng = random.Random(f"{seed}-wild-pids-{a.k}")
        self.agent, self.worker, self.tid, self.comm = {}, {}, {}, {}
        for h in a.nodes:
            ag = rng.randint(30_000, 3_500_000)
            self.agent[h] = ag
            for d in range(GPN):
                self.worker[h, d] = ag + 9 + d
                self.tid[h, d] = ag + 9 + d + rng.randint(500, 4000)
                self.comm[h, d] = f"0x{0x55c000000000 + (rng.getrandbits(32) << 4):x}"
        self.comm_id = f"0x{rng.getrandbits(64):016x}"


def rank_layout(nodes: list[str]):
    return [(i * GPN + d, h, d) for i, h in enumerate(nodes) for d in range(GPN)]


# ----------------------------------------------------------------------------- training log (Megatron)
def lr_at(n: int) -> float:
    if n <= 2000:
        return 3.0e-4 * n / 2000
    p = min(1.0, (n - 2000) / (TRAIN_ITERS - 2000))
    return 3.0e-5 + 0.5 * (3.0e-4 - 3.0e-5) * (1 + math.cos(math.pi * p))


def loss_at(n: int, rng: random.Random) -> float:
    return 2.05 + 8.9 * math.exp(-n / 260.0) + 0.95 * math.exp(-n / 5200.0) + rng.gauss(0, 0.012)


ARGS = [("accumulate_allreduce_grads_in_fp32", "True"), ("bf16", "True"), ("ckpt_format", "torch_dist"),
        ("distributed_timeout_minutes", "10"), ("global_batch_size", str(GBS)), ("hidden_size", str(HIDDEN)),
        ("log_interval", str(LOG_INTERVAL)), ("lr", "0.0003"), ("lr_decay_style", "cosine"),
        ("lr_warmup_iters", "2000"), ("micro_batch_size", "1"), ("min_lr", "3e-05"),
        ("num_attention_heads", str(HEADS)), ("num_layers", str(LAYERS)),
        ("pipeline_model_parallel_size", str(PP)), ("save_interval", str(SAVE_INTERVAL)),
        ("seq_length", str(SEQ)), ("tensor_model_parallel_size", str(TP)), ("train_iters", str(TRAIN_ITERS)),
        ("use_distributed_optimizer", "True"), ("world_size", str(GPUS))]


def timer_block(name_vals: list[tuple[str, float, float]]) -> list[str]:
    out = ["(min, max) time across ranks (ms):"]
    out += [f"    {(n + ' ').ljust(48, '.')}: ({lo:.2f}, {hi:.2f})" for n, lo, hi in name_vals]
    return out


def elastic_banner(t: float, h: str, pid: int, skew: float) -> list[str]:
    p = f"{elastic_ts(t + skew, 'W')} {pid} site-packages/torch/distributed/run.py:793] "
    return [p, p + "*" * 41,
            p + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your "
                "system being overloaded, please further tune the variable for optimal performance in your "
                "application as needed. ", p + "*" * 41]


def train_log(a: Attempt, fleet: Fleet, pids: Pids, seed: int, info: dict) -> bytes:
    rng = random.Random(f"{seed}-wild-log-{a.k}")
    L = Sink()
    ck = CLUSTERS[a.cluster]["ckpt"]
    sk0 = fleet.skew[a.nodes[0]]

    def M(t: float, msg: str) -> None:                       # print_rank_0 with Megatron's own datetime
        L.add(t, msg.replace("{TS}", meg_ts(t + sk0)))

    S, F, ph = a.S, a.F, a.phases
    L.add(S, f"START TIME: {date_cmd(S + sk0)}")
    L.add(S + 0.02, f"+ srun --kill-on-bad-exit=1 --ntasks-per-node=1 torchrun --nnodes {NNODES} --nproc-per-node {GPN}"
                    f" --rdzv-backend c10d --rdzv-endpoint {a.nodes[0]}:29500 pretrain_gpt.py --tensor-model-parallel"
                    f"-size {TP} --pipeline-model-parallel-size {PP} --num-layers {LAYERS} --hidden-size {HIDDEN} "
                    f"--num-attention-heads {HEADS} --seq-length {SEQ} --global-batch-size {GBS} --train-iters "
                    f"{TRAIN_ITERS} --bf16 --use-distributed-optimizer --ckpt-format torch_dist --save {ck} --load "
                    f"{ck} --save-interval {SAVE_INTERVAL} --log-interval {LOG_INTERVAL} --log-throughput "
                    f"--distributed-timeout-minutes 10")
    t = S + ph["launch"] - 6.0
    for i, h in enumerate(a.nodes):
        L.extend(t + 0.04 * i, elastic_banner(t + 0.04 * i, h, pids.agent[h], fleet.skew[h]))
    t = S + ph["launch"]
    M(t, f"using world size: {GPUS}, data-parallel size: {DP}, context-parallel size: 1, hierarchical "
         f"context-parallel sizes: None, tensor-model-parallel size: {TP}, pipeline-model-parallel size: {PP}")
    L.add(t + 0.01, "------------------------ arguments ------------------------")
    L.extend(t + 0.01, [f"  {k} {'.' * (48 - len(k))} {v}" for k, v in ARGS])
    L.add(t + 0.01, "-------------------- end of arguments ---------------------")
    M(t + 0.3, "> initializing torch distributed ...")
    M(t + ph["init"] - 4, f"> initialized tensor model parallel with size {TP}")
    M(t + ph["init"] - 4, f"> initialized pipeline model parallel with size {PP}")
    M(t + ph["init"] - 3.9, "> setting random seeds to 1234 ...")
    L.add(t + ph["init"] - 3.5, "> compiling dataset index builder ...")
    L.add(t + ph["init"] - 0.6, ">>> done with dataset index builder. Compilation time: 0.071 seconds")
    t = S + ph["launch"] + ph["init"]
    M(t, "[after megatron is initialized] datetime: {TS} ")
    t += 2.0
    for tr in range(TP):
        for pp in range(PP):
            nparam = PARAMS // (TP * PP) + (131_334_144 if pp == 0 else 0)
            L.add(t + 0.01 * (tr + pp), f" > number of parameters on (tensor, pipeline) model parallel rank "
                                        f"({tr}, {pp}): {nparam}")
    L.extend(t + 1.2, [f"{PY}/megatron/core/tensor_parallel/layers.py:602: FutureWarning: `torch.cuda.amp.custom_fwd"
                       f"(args...)` is deprecated. Please use `torch.amp.custom_fwd(args..., device_type='cuda')` "
                       f"instead.", "  def forward("])
    t = S + ph["launch"] + ph["init"] + ph["build"]
    tl = t + ph["load"]
    if a.load_step == 0:
        M(t + 0.2, f"WARNING: could not find the metadata file {ck}/latest_checkpointed_iteration.txt")
        M(t + 0.2, "    will not load any checkpoints and will start from random")
        if a.k == 5:
            info["lost_warning_ts"] = t + 0.2
    else:
        M(t + 0.2, f" loading distributed checkpoint from {ck} at iteration {a.load_step}")
        M(tl - 0.3, f"  successfully loaded checkpoint from {ck} [ t 1/{TP}, p 1/{PP} ] at iteration {a.load_step}")
        L.extend(tl - 0.2, timer_block([("load-checkpoint", (ph["load"] - 1.8) * 1000, (ph["load"] - 0.4) * 1000)]))
    M(tl, "[after model, optimizer, and learning rate scheduler are built] datetime: {TS} ")
    M(tl + 0.5, "> building train, validation, and test datasets for GPT ...")
    M(tl + ph["data"] - 3.0, "> finished creating GPT datasets ...")
    M(F - 1.2, "[after dataloaders are built] datetime: {TS} ")
    M(F - 1.1, "done with setup ...")
    L.extend(F - 1.0, timer_block([("model-and-optimizer-setup", (ph["build"] + ph["load"]) * 1000 - 812.4,
                                    (ph["build"] + ph["load"]) * 1000 - 3.1),
                                   ("train/valid/test-data-iterators-setup", (ph["data"] - 2.2) * 1000,
                                    (ph["data"] - 1.9) * 1000)]))
    M(F - 0.9, "training ...")
    M(F, "[before the start of training step] datetime: {TS} ")
    lrng = random.Random(f"{seed}-wild-loss-{a.k}")
    save_at = {n: (s0, c) for n, s0, c in a.saves}
    buf: list[float] = []
    for n, ts, dur in a.steps:
        buf.append(dur)
        end = ts + dur
        if n % LOG_INTERVAL == 0:
            el = sum(buf) / len(buf)
            buf = []
            tput = TOKENS_PER_STEP * FLOPS_PER_TOKEN / (el * 1e12 * GPUS)
            loss = loss_at(n - (a.load_step if a.k == 5 else 0), lrng)
            gn = 0.21 + 2.6 * math.exp(-n / 700.0) + abs(lrng.gauss(0, 0.02))
            M(end + 0.004, f" [{{TS}}] iteration {n:8d}/{TRAIN_ITERS:8d} | consumed samples: {n * GBS:12d} | "
                           f"elapsed time per iteration (ms): {el * 1000:.1f} | throughput per GPU (TFLOP/s/GPU): "
                           f"{tput:.1f} | learning rate: {lr_at(n):.6E} | global batch size: {GBS:5d} | lm loss: "
                           f"{loss:.6E} | loss scale: 1.0 | grad norm: {gn:.3f} | number of skipped iterations:   0"
                           f" | number of nan iterations:   0 |")
        if n in save_at:
            s0, c = save_at[n]
            M(s0 + 0.01, f"[{{TS}}] saving checkpoint at iteration {n:7d} to {ck} in torch_dist format")
            M(s0 + c - 0.06, f"  [{{TS}}] successfully saved checkpoint from iteration {n:7d} to {ck} "
                             f"[ t 1/{TP}, p 1/{PP} ]")
            L.extend(s0 + c - 0.02, timer_block([("save-checkpoint", c * 1000 - rng.uniform(300, 2500),
                                                  c * 1000 - rng.uniform(0, 40))]))
    if a.kind == "xid79":
        end_xid79(a, L, pids, fleet, rng, info)
    elif a.kind == "nodefail":
        end_nodefail(a, L, pids, fleet, rng, info)
    elif a.kind == "hang":
        end_hang(a, L, pids, fleet, rng, info)
    elif a.kind == "fs":
        n, ts = a.failed_save
        M(ts + 0.01, f"[{{TS}}] saving checkpoint at iteration {n:7d} to {ck} in torch_dist format")
        end_fs(a, L, pids, fleet, rng, info)
    elif a.kind == "cancel":
        end_cancel(a, L, pids, fleet, info)
    else:
        M(a.E - 2.6, "[after training is done] datetime: {TS} ")
        L.add(a.E - 0.8, f"END TIME: {date_cmd(a.E - 0.8 + sk0)}")
    return L.render()


def watchdog_block(t: float, r: int, seq: int, op: str, numel: int, ran_ms: int, enq: int, rng,
                   sk: float = 0.0) -> list[str]:
    t = t + sk                                                # the rank's host clock
    p = f"[rank{r}]:"
    pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
    what = (f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, "
            f"NumelIn={numel}, NumelOut={numel * (DP if op == 'ALLGATHER' else 1)}, Timeout(ms)={WATCHDOG_MS}) ran for "
            f"{ran_ms} milliseconds before timing out.")
    out = [f"{p}[{c10_ts(t, 'E', rng)} ProcessGroupNCCL.cpp:632] {what}",
           f"{p}[{c10_ts(t, 'E', rng)} ProcessGroupNCCL.cpp:2271] {pg}  failure detected by watchdog at work "
           f"sequence id: {seq} PG status: last enqueued work: {enq}, last completed work: {seq - 1}",
           f"{p}[{c10_ts(t, 'E', rng)} ProcessGroupNCCL.cpp:670] Stack trace of the failed collective not found, "
           f"potentially because FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE "
           f"to a non-zero value.",
           f"{p}[{c10_ts(t + 0.6, 'E', rng)} ProcessGroupNCCL.cpp:684] [Rank {r}] Some NCCL operations have failed or "
           f"timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
           f"corrupted/incomplete data.",
           f"{p}[{c10_ts(t + 0.6, 'E', rng)} ProcessGroupNCCL.cpp:698] [Rank {r}] To avoid data inconsistency, we are "
           f"taking the entire process down.",
           f"{p}[{c10_ts(t + 0.6, 'E', rng)} ProcessGroupNCCL.cpp:1899] {pg} Process group watchdog thread terminated "
           f"with exception: {what}",
           "terminate called after throwing an instance of 'c10::DistBackendError'",
           f"  what():  {pg} Process group watchdog thread terminated with exception: {what}"]
    return out


def dump_notice(t: float, r: int, src: int | None, enq: int, done: int, rng, sk: float = 0.0) -> str:
    t = t + sk
    who = f" rank {src}" if src is not None else "this local rank"
    return (f"[rank{r}]:[{c10_ts(t, 'E', rng)} ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
            f"Received a dump signal due to a collective timeout from {who} and we will try our best to dump the debug"
            f" info. Last enqueued NCCL work: {enq}, last completed NCCL work: {done}.This is most likely caused by "
            f"incorrect usages of collectives, e.g., wrong sizes used across ranks, the order of collectives is not "
            f"same for all ranks or the scheduled collective, for some reason, didn't run. Additionally, this can be "
            f"caused by GIL deadlock or other reasons such as network errors or bugs in the communications library "
            f"(e.g. NCCL), etc. ")


def child_failed(t: float, host: str, rank: int, local: int, pid: int, skew: float, sig: bool = True) -> list[str]:
    stamp = _split(t + skew)[0].strftime("%Y-%m-%d_%H:%M:%S")
    return ["Traceback (most recent call last):",
            '  File "/usr/local/bin/torchrun", line 8, in <module>',
            "    sys.exit(main())",
            f'  File "{PY}/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
            "    return f(*args, **kwargs)",
            f'  File "{PY}/torch/distributed/run.py", line 919, in main',
            "    run(args)",
            f'  File "{PY}/torch/distributed/launcher/api.py", line 270, in launch_agent',
            "    raise ChildFailedError(",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "=" * 60, "pretrain_gpt.py FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
            "Root Cause (first observed failure):", "[0]:",
            f"  time      : {stamp}", f"  host      : {host}", f"  rank      : {rank} (local_rank: {local})",
            f"  exitcode  : {-6 if sig else 1} (pid: {pid})", "  error_file: <N/A>",
            f"  traceback : Signal 6 (SIGABRT) received by PID {pid}" if sig else
            "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
            "=" * 60]


def agent_line(t: float, h: str, pids: Pids, fleet: Fleet, lvl: str, line: int, msg: str) -> str:
    return (f"{elastic_ts(t + fleet.skew[h], lvl)} {pids.agent[h]} site-packages/torch/distributed/elastic/"
            f"{'multiprocessing/api.py' if line > 800 else 'agent/server/api.py'}:{line}] {msg}")


def abort_all(a: Attempt, L: Sink, pids: Pids, fleet: Fleet, rng, t_fire: dict[int, float], first_host: str,
              silent: set[int], killed_host: str | None, t_done: float):
    """After the watchdog aborts: torchrun agents report, srun kills the step."""
    layout = rank_layout(a.nodes)
    first_t = min(t_fire[r] for r, h, _ in layout if h == first_host and r in t_fire)
    for i, h in enumerate(a.nodes):
        hr = [(r, d) for r, hh, d in layout if hh == h]
        fired = [t_fire[r] for r, _ in hr if r in t_fire]
        if not fired:
            continue
        t_exit = (first_t + 1.1) if h == first_host else max(first_t + 1.4, min(fired) + 1.3 + rng.uniform(0, 1.5))
        r0, d0 = min(((r, d) for r, d in hr if r in t_fire), key=lambda x: t_fire[x[0]])
        L.add(t_exit, agent_line(t_exit, h, pids, fleet, "E", 874,
                                 f"failed (exitcode: -6) local_rank: {d0} (pid: {pids.worker[h, d0]}) of binary: "
                                 f"/usr/bin/python3"))
        if h == first_host:
            L.extend(t_exit + 0.05, child_failed(t_exit, h, r0, d0, pids.worker[h, d0], fleet.skew[h]))
            L.add(t_exit + 0.3, f"srun: error: {h}: task {i}: Exited with exit code 1")
            L.add(t_exit + 0.32, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    t_term = first_t + 1.5
    for i, h in enumerate(a.nodes):
        if h == first_host:
            continue
        tt = t_term + 0.02 * i
        L.add(tt, agent_line(tt, h, pids, fleet, "W", 719, "Received 15 death signal, shutting down workers"))
        for d in range(GPN):
            L.add(tt + 0.001, agent_line(tt + 0.001, h, pids, fleet, "W", 897,
                                         f"Sending process {pids.worker[h, d]} closing signal SIGTERM"))
        if h == killed_host:
            for d in range(GPN):
                if (a.nodes.index(h) * GPN + d) in silent:
                    tk = tt + 30.1 + 0.01 * d
                    L.add(tk, agent_line(tk, h, pids, fleet, "W", 914,
                                         f"Unable to shutdown process {pids.worker[h, d]} via Signals.SIGTERM, "
                                         f"forcefully exiting via Signals.SIGKILL"))
    for i, h in enumerate(a.nodes):
        if h != first_host:
            L.add(t_done - 1.2 + 0.01 * i, f"srun: error: {h}: task {i}: Terminated")
    L.add(t_done - 0.5, f"srun: Terminating StepId={a.job}.0")


def end_xid79(a, L, pids, fleet, rng, info):
    layout = rank_layout(a.nodes)
    bad = a.nodes.index(XID79[0])
    silent = {bad * GPN + d for d in range(GPN)}
    seq = 9 * (a.steps[-1][0] + 1) + 3
    t_fire = {}
    for r, h, _d in layout:
        if r in silent:
            continue
        tf = a.R + WATCHDOG_MS / 1000 + rng.uniform(0.05, 2.2)
        if h == ATT1_FIRST:
            tf = a.R + WATCHDOG_MS / 1000 + rng.uniform(0.0, 0.04)
        t_fire[r] = tf
        L.extend(tf, watchdog_block(tf, r, seq, "_REDUCE_SCATTER_BASE", 163_577_856, int((tf - a.R) * 1000) + 210,
                                    seq, rng, fleet.skew[h]))
    info["watchdog_first_1"] = min(t_fire.values())
    abort_all(a, L, pids, fleet, rng, t_fire, ATT1_FIRST, silent, XID79[0], a.E)


def end_hang(a, L, pids, fleet, rng, info):
    layout = rank_layout(a.nodes)
    stuck = a.nodes.index(HANG[0]) * GPN + HANG[1]
    seq = 9 * (a.steps[-1][0] + 1) + 1
    t_fire = {}
    t_enq = a.R + 5.2
    for r, h, _d in layout:
        if r == stuck:
            continue
        tf = t_enq + WATCHDOG_MS / 1000 + rng.uniform(0.05, 2.0)
        if h == ATT3_FIRST:
            tf = t_enq + WATCHDOG_MS / 1000 + rng.uniform(0.0, 0.03)
        t_fire[r] = tf
        L.extend(tf, watchdog_block(tf, r, seq, "ALLREDUCE", 1, int((tf - t_enq) * 1000) + 7, seq, rng,
                                    fleet.skew[h]))
    first_r = min(t_fire, key=t_fire.get)
    t0 = t_fire[first_r]
    for r in sorted(rng.sample([r for r in t_fire if r != first_r], 9)):
        tr = t0 + 0.2 + fleet.skew[a.nodes[r // GPN]]
        L.add(t0 + 0.2, f"[rank{r}]:[{c10_ts(tr, 'E', rng)} ProcessGroupNCCL.cpp:1680] [PG ID 0 PG GUID "
                        f"0(default_pg) Rank {r}] Observed flight recorder dump signal from another rank via TCPStore.")
    L.add(t0 + 0.25, dump_notice(t0 + 0.25, stuck, first_r, seq - 1, seq - 1, rng, fleet.skew[HANG[0]]))
    ts_ = c10_ts(t0 + 0.26 + fleet.skew[HANG[0]], 'E', rng)
    L.add(t0 + 0.26, f"[rank{stuck}]:[{ts_} ProcessGroupNCCL.cpp:1536] [PG ID 0 PG GUID "
                     f"0(default_pg) Rank {stuck}] ProcessGroupNCCL preparing to dump debug info. "
                     "Include stack trace: 1")
    info["hang_stuck_rank"] = stuck
    info["watchdog_first_3"] = t0
    abort_all(a, L, pids, fleet, rng, t_fire, ATT3_FIRST, set(), None, a.E)


def end_fs(a, L, pids, fleet, rng, info):
    layout = rank_layout(a.nodes)
    srng = random.Random(f"fs-stuck-{a.job}")
    stuck = {a.nodes.index(h) * GPN + d for h in LUSTRE_HUNG for d in srng.sample(range(GPN), 3)}
    stuck |= set(srng.sample([r for r in range(GPUS) if r not in stuck], 2))
    seq = 9 * a.failed_save[0] + 7
    t_fire = {}
    for r, h, _d in layout:
        if r in stuck:
            continue
        te = a.R + rng.uniform(70.0, 96.0)                    # finished writing, waits in the all-gather
        tf = a.R + 96.0 + WATCHDOG_MS / 1000 + rng.uniform(0.05, 1.5)
        t_fire[r] = tf
        L.extend(tf, watchdog_block(tf, r, seq, "ALLGATHER", 1, int((tf - te) * 1000), seq, rng, fleet.skew[h]))
    first_r = min(t_fire, key=t_fire.get)
    t0 = t_fire[first_r]
    for r in sorted(stuck):
        L.add(t0 + 0.3, dump_notice(t0 + 0.3, r, first_r, seq - 1, seq - 1, rng,
                                    fleet.skew[a.nodes[r // GPN]]))
    first_host = a.nodes[first_r // GPN]
    info["fs_first_abort_host"] = first_host
    info["fs_stuck_ranks"] = sorted(stuck)
    abort_all(a, L, pids, fleet, rng, t_fire, first_host, stuck, None, a.E)
    for i, h in enumerate(a.nodes):                           # the writers in D state need SIGKILL
        if any((a.nodes.index(h) * GPN + d) in stuck for d in range(GPN)) and h != first_host:
            for d in range(GPN):
                if (a.nodes.index(h) * GPN + d) in stuck:
                    tk = t0 + 31.6 + 0.01 * d + 0.02 * i
                    L.add(tk, agent_line(tk, h, pids, fleet, "W", 914,
                                         f"Unable to shutdown process {pids.worker[h, d]} via Signals.SIGTERM, "
                                         f"forcefully exiting via Signals.SIGKILL"))


def end_nodefail(a, L, pids, fleet, rng, info):
    idx = a.nodes.index(NODEFAIL)
    peers = [a.nodes[idx - 1], a.nodes[idx + 1]]
    t_err = a.R + 18.0
    info["att2_peers"] = peers
    first = None
    for h in peers:
        i = a.nodes.index(h)
        for d in (1, 5, 6):
            r = i * GPN + d
            te = t_err + rng.uniform(0.0, 1.2)
            first = te if first is None or te < first else first
            port = rng.randint(40000, 60999)
            pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
            why = (f"NCCL error: remote process exited or there was a network error, NCCL version {NCCL_VERSION}")
            L.extend(te, [
                f"[rank{r}]:[{c10_ts(te + fleet.skew[h], 'E', rng)} ProcessGroupNCCL.cpp:1595] {pg} Process group "
                f"watchdog thread "
                f"terminated with exception: {why}",
                "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                "prematurely.",
                "Last error:",
                f"NET/IB : Got completion from peer {host_ip(NODEFAIL)}<{port}> with status=12 opcode=0 len=0 vendor "
                f"err 129 (Recv) localGid {fleet.gid[h, d]} remoteGids{fleet.gid[NODEFAIL, d]} hca {NIC_DEV[d]}",
                "Exception raised from checkForNCCLErrorsInternal at /pytorch/torch/csrc/distributed/c10d/"
                "ProcessGroupNCCL.cpp:2027 (most recent call first):",
                "terminate called after throwing an instance of 'c10::DistBackendError'",
                f"  what():  {pg} Process group watchdog thread terminated with exception: {why}"])
    h0 = peers[0]
    t_exit = first + 1.4
    L.add(t_exit, agent_line(t_exit, h0, pids, fleet, "E", 874,
                             f"failed (exitcode: -6) local_rank: 1 (pid: {pids.worker[h0, 1]}) of binary: "
                             "/usr/bin/python3"))
    L.extend(t_exit + 0.05, child_failed(t_exit, h0, a.nodes.index(h0) * GPN + 1, 1, pids.worker[h0, 1],
                                         fleet.skew[h0]))
    L.add(t_exit + 0.3, f"srun: error: {h0}: task {a.nodes.index(h0)}: Exited with exit code 1")
    L.add(t_exit + 0.31, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    for i, h in enumerate(a.nodes):
        if h in (h0, NODEFAIL):
            continue
        tt = t_exit + 0.6 + 0.02 * i
        L.add(tt, agent_line(tt, h, pids, fleet, "W", 719, "Received 15 death signal, shutting down workers"))
        for d in range(GPN):
            L.add(tt + 0.001, agent_line(tt + 0.001, h, pids, fleet, "W", 897,
                                         f"Sending process {pids.worker[h, d]} closing signal SIGTERM"))
        L.add(tt + 3.5, f"srun: error: {h}: task {i}: Terminated")
    L.add(t_exit + 33.0, "srun: error: Timed out waiting for job step to complete")
    tk = a.E - 1.0
    L.add(tk, f"srun: error: Node failure on {NODEFAIL}")
    L.add(tk + 0.02, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(tk)} DUE TO NODE "
                     f"FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***")
    L.add(tk + 0.03, f"srun: Force Terminated StepId={a.job}.0")
    info["att2_first_error"] = first


def end_cancel(a, L, pids, fleet, info):
    K = a.R
    L.add(K + 0.02, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(K)} ***")
    L.add(K + 0.03, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(K)} ***")
    L.add(K + 0.05, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    for i, h in enumerate(a.nodes):
        tt = K + 0.2 + 0.02 * i
        L.add(tt, agent_line(tt, h, pids, fleet, "W", 719, "Received 15 death signal, shutting down workers"))
        L.add(tt + 0.001, agent_line(tt + 0.001, h, pids, fleet, "W", 897,
                                     f"Sending process {pids.worker[h, 0]} closing signal SIGTERM"))
    for i, h in enumerate(a.nodes):
        L.add(a.E - 0.6 + 0.01 * i, f"srun: error: {h}: task {i}: Terminated")


# ----------------------------------------------------------------------------- NCCL logs
def nccl_log(a: Attempt, h: str, pids: Pids, fleet: Fleet, seed: int) -> tuple[bytes, bool]:
    rng = random.Random(f"{seed}-wild-nccl-{a.k}-{h}")
    i = a.nodes.index(h)
    bus = BUSIDS[a.cluster]
    nn = len(a.nodes)
    stages = []
    for d in range(GPN):
        r = i * GPN + d
        w, it = pids.worker[h, d], pids.tid[h, d]
        p0, p = f"{h}:{w}:{w} [{d}] NCCL INFO ", f"{h}:{w}:{it} [{d}] NCCL INFO "
        c = pids.comm[h, d]
        st = [p0 + f"Bootstrap : Using {NIC_IF[0]}:{host_ip(h)}<0>", p0 + "cudaDriverVersion 12040"]
        if r == 0:
            st.append(f"NCCL version {NCCL_VERSION}")
        st += [p + "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
               p + "NET/IB : Using " + " ".join(f"[{k}]{NIC_DEV[k]}:1/IB" for k in range(GPN)) +
               f" [RO]; OOB {NIC_IF[0]}:{host_ip(h)}<0>",
               p + "Using network IB",
               p + f"ncclCommInitRank comm {c} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} busId {bus[d]} commId "
                   f"{pids.comm_id} - Init START",
               p + f"Setting affinity for GPU {d} to " + ("ffffffff,00000000" if d >= 4 else "00000000,ffffffff"),
               p + f"comm {c} rank {r} nRanks {GPUS} nNodes {nn} localRanks {GPN} localRank {d} MNNVL 0"]
        for ch in range(0, 16, 4):
            st.append(p + f"Channel {ch + d // 4:02d}/0 : {((i - 1) % nn) * GPN + d}[{d}] -> {r}[{d}] [receive] via "
                          f"NET/IB/{d}/GDRDMA")
            st.append(p + f"Channel {ch + d // 4:02d}/0 : {r}[{d}] -> {((i + 1) % nn) * GPN + d}[{d}] [send] via "
                          f"NET/IB/{d}/GDRDMA")
        st += [p + "Connected all rings", p + "Connected NVLS tree", p + "Connected all trees",
               p + "threadThresholds 8/8/64 | 1024/8/64 | 512 | 512",
               p + "24 coll channels, 24 collnet channels, 16 nvls channels, 32 p2p channels, 32 p2p channels per peer",
               p + f"ncclCommInitRank comm {c} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} busId {bus[d]} commId "
                   f"{pids.comm_id} - Init COMPLETE"]
        for rr, n2 in ((d % TP, TP), (i * GPN // (TP * PP) + d // (TP * PP), DP), (d // TP, PP)):
            cc = f"0x{0x55c000000000 + (rng.getrandbits(32) << 4):x}"
            cid = f"0x{rng.getrandbits(64):016x}"
            st += [p + f"ncclCommInitRank comm {cc} rank {rr} nranks {n2} cudaDev {d} nvmlDev {d} busId {bus[d]} "
                       f"commId {cid} - Init START",
                   p + f"comm {cc} rank {rr} nranks {n2} cudaDev {d} nvmlDev {d} busId {bus[d]} commId {cid} - "
                       f"Init COMPLETE"]
        stages.append(st)
    lines, cur = [], [0] * GPN
    while any(cur[d] < len(stages[d]) for d in range(GPN)):
        d = rng.randrange(GPN)
        if cur[d] < len(stages[d]):
            lines.append(stages[d][cur[d]])
            cur[d] += 1
    truncated = False
    if a.k == 6 and h == REREG:                              # harmless: the subnet manager failed over
        for d in (2, 5):
            lines.append(f"{h}:{pids.worker[h, d]}:{pids.tid[h, d] + 11} [{d}] transport/net_ib.cc:100 NCCL WARN "
                         f"NET/IB : {NIC_DEV[d]}:1 Got async event : client reregistration")
    if a.kind == "nodefail" and h in (a.nodes[a.nodes.index(NODEFAIL) - 1], a.nodes[a.nodes.index(NODEFAIL) + 1]):
        for d in (1, 5, 6):
            w = pids.worker[h, d]
            tid = pids.tid[h, d] + 3
            lines += [f"{h}:{w}:{tid} [{d}] transport/net_ib.cc:2360 NCCL WARN NET/IB : Got completion from peer "
                      f"{host_ip(NODEFAIL)}<{rng.randint(40000, 60999)}> with status=12 opcode=0 len=0 vendor err 129 "
                      f"(Recv) localGid {fleet.gid[h, d]} remoteGids{fleet.gid[NODEFAIL, d]} hca {NIC_DEV[d]}",
                      f"{h}:{w}:{tid} [{d}] NCCL INFO transport/net.cc:1302 -> 6",
                      f"{h}:{w}:{tid} [{d}] NCCL INFO proxy.cc:698 -> 6",
                      f"{h}:{w}:{tid} [{d}] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]"]
    if a.kind == "complete":
        for d in range(GPN):
            lines.append(f"{h}:{pids.worker[h, d]}:{pids.worker[h, d]} [{d}] NCCL INFO comm {pids.comm[h, d]} rank "
                         f"{i * GPN + d} nranks {GPUS} cudaDev {d} busId {bus[d]} - Destroy COMPLETE")
    elif a.kind != "cancel" and not (a.kind == "xid79" and h == XID79[0]) and h != NODEFAIL:
        for d in range(GPN):
            lines.append(f"{h}:{pids.worker[h, d]}:{pids.tid[h, d] + 1} [{d}] NCCL INFO comm {pids.comm[h, d]} rank "
                         f"{i * GPN + d} nranks {GPUS} cudaDev {d} busId {bus[d]} - Abort COMPLETE")
    if (a.kind == "xid79" and h == XID79[0]) or (a.kind == "nodefail" and h == NODEFAIL):
        truncated = True
    body = "\n".join(lines)
    if truncated:
        return body[: len(body) - 23].encode(), True
    return (body + "\n").encode(), False


# ----------------------------------------------------------------------------- per-rank step records
def step_records(a: Attempt, fleet: Fleet, seed: int) -> dict[int, bytes]:
    lo, hi = a.window[0] - JSONL_MARGIN, a.window[1] + JSONL_MARGIN
    sel = [s for s in a.steps if lo <= s[0] <= hi]
    lrng = random.Random(f"{seed}-wild-jsonl-loss")
    losses = {n: round(loss_at(n, lrng), 4) for n, _, _ in sel}
    tok = TOKENS_PER_STEP // GPUS
    out = {}
    for r, h, d in rank_layout(a.nodes):
        if d not in (0, 4):
            continue
        rng = random.Random(f"{seed}-wild-jsonl-{r}")
        recs = []
        for n, ts, dur in sel:
            slow = h == STRAGGLER and a.window[0] <= n <= a.window[1]
            comp = BASE_COMPUTE * (SLOW_FACTOR if slow else 1.0) * (1 + rng.uniform(-0.003, 0.003))
            data = BASE_DATA * (1 + rng.uniform(-0.08, 0.08))
            comm = dur - comp - data
            assert comm > 0.1, (n, comm)
            recs.append(f'{{"ts": "{iso_off(ts + dur + fleet.skew[h])}", "rank": {r}, "host": "{h}", "step": {n}, '
                        f'"step_s": {dur:.4f}, "compute_s": {comp:.4f}, "comm_s": {comm:.4f}, "data_s": {data:.4f}, '
                        f'"tokens": {tok}, "loss": {losses[n]:.4f}}}')
        out[r] = ("\n".join(recs) + "\n").encode()
    return out


# ----------------------------------------------------------------------------- kernel logs
NOISE = [
    "perf: interrupt took too long ({a} > {b}), lowering kernel.perf_event_max_sample_rate to {c}",
    "hrtimer: interrupt took {n} ns",
    "kauditd_printk_skb: {k} callbacks suppressed",
    "docker0: port 1(veth{v}) entered blocking state",
    "docker0: port 1(veth{v}) entered forwarding state",
    "workqueue: nvkms_kthread_q_callback [nvidia_modeset] hogged CPU for >10000us 4 times, consider switching to "
    "WQ_UNBOUND",
    "NFSD: Using nfsdcld client tracking operations.",
]


def noise_events(t0: float, t1: float, rng: random.Random) -> list[tuple[float, str]]:
    out, t = [], t0 + rng.uniform(200, 5000)
    while t < t1:
        a = rng.randint(2501, 6000)
        out.append((t, rng.choice(NOISE).format(a=a, b=a - 9, c=rng.choice([79750, 63750, 49750]),
                                                n=rng.randint(9000, 60000), k=rng.randint(3, 50),
                                                v=f"{rng.getrandbits(28):07x}")))
        t += rng.uniform(1200, 9000)
    return out


def boot_lines(h: str) -> list[tuple[float, str]]:
    kern = "6.5.0-1024-nvidia" if CLUSTER_OF[h] != "cb-east" else "5.15.0-131-generic"
    out = [(0.0, f"Linux version {kern} (buildd@lcy02-amd64-041) (x86_64-linux-gnu-gcc-12 (Ubuntu "
                 "12.3.0-1ubuntu1~22.04)"
                 f" 12.3.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #24~22.04.1-Ubuntu SMP"),
           (0.0, "DMI: Supermicro SYS-821GE-TNHR/X13DEG-OAD, BIOS 2.1 04/12/2024")]
    for k in range(GPN):
        out.append((11.2 + 0.01 * k, f"mlx5_core {NIC_PCI[k]}: firmware version: 28.39.1002"))
        out.append((12.6 + 0.01 * k, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: renamed from ib{k}"))
    out += [(21.4, "nvidia: module license 'NVIDIA' taints kernel."),
            (21.9, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.08  Tue Nov 26 02:18:14 UTC 2024")]
    if CLUSTER_OF[h] == "cb-east":
        out += [(44.0, f"LNet: Added LNI 10.50.4.{int(h[-3:]) - 100}@o2ib [8/256/0/180]"),
                (46.5, f"Lustre: Mounted {FS}-client")]
    return out


def xid79_lines(cluster: str, gpu: int, pid: int, fleet: Fleet, h: str, name: str = "pt_main_thread") -> list[str]:
    pci = pci_of(cluster, gpu)
    return [f"NVRM: Xid (PCI:{pci}): 79, pid={pid}, name={name}, GPU has fallen off the bus.",
            f"NVRM: GPU {pci}.0: GPU has fallen off the bus.",
            f"NVRM: GPU at PCI:{pci}: {fleet.uuid[h, gpu]}",
            f"NVRM: GPU Board Serial Number: {fleet.serial[h, gpu]}",
            "NVRM: A GPU crash dump has been created. If possible, please run",
            "NVRM: nvidia-bug-report.sh as root to collect this data before",
            "NVRM: the NVIDIA kernel module is unloaded."]


def lustre_req(t: float, ost: str, h: str, rng: random.Random) -> str:
    sent = int(t) - 47
    return (f"Lustre: {rng.randint(2000, 90000)}:0:(client.c:2310:ptlrpc_expire_one_request()) @@@ Request sent has "
            f"timed out for slow reply: [sent {sent}/real {sent}]  req@{rng.getrandbits(64):016x} "
            f"x{rng.randint(1_790_000_000_000_000, 1_799_999_999_999_999)}/t0(0) o4->{FS}-{ost}-osc-ffff"
            f"{rng.getrandbits(48):012x}@{OSS_NID if ost == BAD_OST else '10.50.8.13@o2ib'}:6/4 lens 488/448 e 2 to 1 "
            f"dl {int(t)} ref 2 fl Rpc:XQr/2/ffffffff rc 0/-1")


def osc(ost: str, h: str) -> str:
    return f"{FS}-{ost}-osc-ffff9a{int(h[-3:]) * 7919 % 0xffffff:06x}00"


def kernel_events(attempts: list[Attempt], fleet: Fleet, pidmap: dict, seed: int, info: dict):
    a1, a2, a3, a4, a5, a6 = attempts
    t_end = a6.E + 1800
    ev: dict[str, list[tuple[float, str | bytes]]] = {}
    for h in CLUSTER_OF:
        hr = random.Random(f"{seed}-wild-kern-{h}")
        boot = fleet.boot[h]
        ev[h] = [(boot + dt, m) for dt, m in boot_lines(h)] + noise_events(boot, t_end, hr)
    # attempt 1: Xid 79
    h, g = XID79
    ev[h] += [(a1.R, m) for m in xid79_lines("tg-1", g, pidmap[1].worker[h, g], fleet, h)]
    # attempt 2: the node dies; its syslog ends in a half line and NULs; it comes back hours later
    dead = NODEFAIL
    ev[dead] = [(t, m) for t, m in ev[dead] if t < a2.R - 1 or t > a2.R + 3.0 * 3600]
    ev[dead].append((a2.R - 0.7, b"kauditd_printk_skb: 13 callbacks suppr" + b"\x00" * 37))
    reboot = a2.R + 3.1 * 3600
    info["nodefail_reboot"] = reboot
    ev[dead] += [(reboot + dt, m) for dt, m in boot_lines(dead)]
    # attempt 3: the idle spare's link flaps (not in the job)
    tf = a3.F + 0.42 * (a3.R - a3.F)
    ev[LINKFLAP_SPARE] += [(tf, f"mlx5_core {NIC_PCI[3]} {NIC_IF[3]}: Link down"),
                           (tf + 38.6, f"mlx5_core {NIC_PCI[3]} {NIC_IF[3]}: Link up")]
    info["linkflap_ts"] = tf
    # attempt 4: slow saves with Lustre blips, then OST0007 stops answering
    lrng = random.Random(f"{seed}-wild-lustre")
    for n, s0, c in a4.saves:
        if c > 600:
            for hb in lrng.sample(a4.nodes, 3):
                tb = s0 + lrng.uniform(200, 400)
                ev[hb] += [(tb, lustre_req(tb, "OST0003", hb, lrng)),
                           (tb, f"Lustre: {osc('OST0003', hb)}: Connection to {FS}-OST0003 (at 10.50.8.13@o2ib) was "
                                f"lost; in progress operations using this service will wait for recovery to complete"),
                           (tb + lrng.uniform(20, 90), f"Lustre: {osc('OST0003', hb)}: Connection restored to "
                                                       f"10.50.8.13@o2ib (at 10.50.8.13@o2ib)")]
            _ = n
    first = None
    for h in a4.nodes:
        tl = a4.R + (21.5 if h == LUSTRE_FIRST else lrng.uniform(23.0, 38.0))
        first = tl if first is None or tl < first else first
        ev[h] += [(tl, lustre_req(tl, BAD_OST, h, lrng)),
                  (tl, f"Lustre: {osc(BAD_OST, h)}: Connection to {FS}-{BAD_OST} (at {OSS_NID}) was lost; in progress "
                       f"operations using this service will wait for recovery to complete")]
        te = a4.R + lrng.uniform(118.0, 165.0)
        ev[h] += [(te, f"LustreError: 11-0: {osc(BAD_OST, h)}: operation ost_write to node {OSS_NID} failed: "
                       f"rc = -110"),
                  (te + 0.01, f"LustreError: Skipped {lrng.randint(8, 40)} previous similar messages")]
        if h in LUSTRE_HUNG:
            d = lrng.randrange(GPN)
            pid = pidmap[4].worker[h, d]
            for j in range(2):
                th = a4.R + 125.0 + 123.0 * j + lrng.uniform(0, 2)
                ev[h] += [(th, f"INFO: task pt_main_thread:{pid} blocked for more than {122 + 123 * j} seconds."),
                          (th, "      Tainted: P           OE      5.15.0-131-generic #141-Ubuntu"),
                          (th, '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.'),
                          (th, f"task:pt_main_thread state:D stack:    0 pid:{pid} ppid:{pid - 9 - d} "
                               "flags:0x00004002"),
                          (th, "Call Trace:"), (th, " <TASK>"), (th, " __schedule+0x2cd/0x890"),
                          (th, " schedule+0x69/0x110"), (th, " cl_sync_io_wait+0x1ce/0x2f0 [obdclass]"),
                          (th, " ll_file_io_generic+0x5a4/0xc70 [lustre]"),
                          (th, " ll_file_write_iter+0x55b/0x8a0 [lustre]"), (th, " vfs_write+0x1c2/0x290"),
                          (th, " ksys_write+0x67/0xf0"), (th, " do_syscall_64+0x5c/0xc0"), (th, " </TASK>")]
    info["lustre_first_true_ts"] = first
    # between attempts 4 and 5: the provider replaces the storage; every client remounts an empty filesystem
    tu = a4.E + 2.4 * 3600
    info["remount_ts"] = tu
    for h in CB:
        ev[h] += [(tu + 0.5 * CB.index(h), f"Lustre: Unmounted {FS}-client"),
                  (tu + 71.0 + 0.5 * CB.index(h), f"Lustre: Mounted {FS}-client")]
    # attempt 6: a harmless row-remapping event; an Xid 79 on the idle spare during the provider's burn-in
    h, g = XID63
    t63 = a6.F + 0.37 * (a6.E - a6.F)
    ev[h].append((t63, f"NVRM: Xid (PCI:{pci_of('md-2', g)}): 63, pid={pidmap[6].worker[h, g]}, Row Remapper: New row "
                       f"marked for remapping, reset gpu to activate."))
    info["xid63_ts"] = t63
    h, g = SPARE_XID79
    ts79 = a6.F + 0.61 * (a6.E - a6.F)
    ev[h] += [(ts79, m) for m in xid79_lines("md-2", g, 771_204, fleet, h, "dcgmproftester12")]
    info["spare_xid79_ts"] = ts79
    return ev


def render_kernel(h: str, events, fleet: Fleet, seed: int, attempts) -> dict[str, bytes]:
    c = CLUSTER_OF[h]
    sk = fleet.skew[h]
    frng = random.Random(f"{seed}-wild-frac-{h}")
    evs = sorted(events, key=lambda x: x[0])
    reboot_at = None
    if h == NODEFAIL:
        reboot_at = min(t for t, m in evs if isinstance(m, str) and m.startswith("Linux version") and t > T0)
    out_lines: list[tuple[float, bytes]] = []
    last = None
    for t, m in evs:
        tt = t + sk + frng.uniform(0.0, 0.0008)
        if last is not None and tt <= last:
            tt = last + 0.000013
        last = tt
        mb = m if isinstance(m, bytes) else m.encode()
        boot = reboot_at if (reboot_at is not None and t >= reboot_at) else fleet.boot[h]
        if c == "tg-1":
            up = max(0.0, tt - (boot + sk))
            pre = f"{syslog_ts(tt)} {h} kernel: [{up:12.6f}] ".encode()
        elif c == "cb-east":
            d, _ = _split(tt)
            pre = f"{d:%Y-%m-%dT%H:%M:%S}+00:00 {h} kernel: ".encode()
        else:
            d, us = _split(tt)
            pre = f"{d:%Y-%m-%dT%H:%M:%S},{us:06d}+00:00 ".encode()
        out_lines.append((t, pre + mb))
    files = {}
    if c == "tg-1":
        rot = datetime(2026, 3, 3, 6, 25, 0, tzinfo=UTC).timestamp()
        old = [ln for t, ln in out_lines if t < rot]
        new = [ln for t, ln in out_lines if t >= rot]
        files["kern.log.1.gz"] = b"\n".join(old) + b"\n"
        files["kern.log"] = b"\n".join(new) + b"\n"
        if h == NODEFAIL:                                   # a crash leaves a half line and NUL padding, no newline
            for name in ("kern.log.1.gz", "kern.log"):
                files[name] = files[name].replace(b"\x00" * 37 + b"\n", b"\x00" * 37)
    elif c == "cb-east":
        files["journal-kernel.txt"] = b"\n".join(ln for _, ln in out_lines) + b"\n"
    else:
        files["dmesg-iso.log"] = b"\n".join(ln for _, ln in out_lines) + b"\n"
    return files


# ----------------------------------------------------------------------------- scheduler
def scheduler_files(attempts: list[Attempt], fleet: Fleet, bundle: Path, seed: int, info: dict):
    rng = random.Random(f"{seed}-wild-sched")
    hdr = "JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"
    per = {c: (Sink(), []) for c in CLUSTERS}
    for a in attempts:
        L, rows = per[a.cluster]

        def add(t: float, msg: str, L=L) -> None:
            L.add(t, f"{ctld_ts(t)} {msg}")

        submit = a.S - rng.randint(4, 90)
        hl = hostlist(a.nodes)
        cpus = 224 * len(a.nodes)
        add(submit + 0.2, f"_slurm_rpc_submit_batch_job: JobId={a.job} InitPrio={rng.randint(4000, 9000)} "
                          f"usec={rng.randint(300, 1200)}")
        add(a.S + 0.03, f"sched: Allocate JobId={a.job} NodeList={hl} #CPUs={cpus} Partition=gpu")
        steps = [("batch", "FAILED", "1:0"), ("0", "FAILED", "1:0")]
        if a.kind in ("xid79", "hang", "fs"):
            add(a.E + 0.2, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
            state, ec = "FAILED", "1:0"
            if a.kind == "xid79":
                add(a.E + 1200.4, f"update_node: node {XID79[0]} reason set to: xid79 gpu6 off bus")
                add(a.E + 1200.5, f"update_node: node {XID79[0]} state set to DRAINED")
        elif a.kind == "nodefail":
            add(a.R + 121.0, f"error: Nodes {NODEFAIL} not responding")
            add(a.E - 1.3, f"error: Nodes {NODEFAIL} not responding, setting DOWN")
            add(a.E - 1.2, f"Killing JobId={a.job} on failed node {NODEFAIL}")
            rb = info["nodefail_reboot"]
            add(rb + 140.0, f"Node {NODEFAIL} now responding")
            add(rb + 140.1, f"validate_node_specs: Node {NODEFAIL} unexpectedly rebooted boot_time={int(rb)} "
                            f"last response={int(a.R - 40)}")
            state, ec = "NODE_FAIL", "0:0"
            steps = [("batch", "CANCELLED", "0:15"), ("0", "CANCELLED", "0:9")]
        elif a.kind == "cancel":
            add(a.R + 0.01, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={a.job} uid {USER_UID}")
            add(a.E + 0.2, f"_job_complete: JobId={a.job} WTERMSIG 15")
            state, ec = f"CANCELLED by {USER_UID}", "0:15"
            steps = [("batch", "CANCELLED", "0:15"), ("0", "CANCELLED", "0:15")]
        else:
            add(a.E + 0.2, f"_job_complete: JobId={a.job} WEXITSTATUS 0")
            state, ec = "COMPLETED", "0:0"
            steps = [("batch", "COMPLETED", "0:0"), ("0", "COMPLETED", "0:0")]
        add(a.E + 0.25, f"_job_complete: JobId={a.job} done")
        rows.append((a.S, f"{a.job}|{RUN}|gpu|pretrain|{cpus}|{state}|{ec}|{slurm_ts(submit)}|{slurm_ts(a.S)}|"
                          f"{slurm_ts(a.E)}|{elapsed_str(a.E - a.S)}|{len(a.nodes)}|{hl}"))
        for sname, sstate, sec in steps:
            nn, nl, cp = (1, a.nodes[0], 224) if sname == "batch" else (len(a.nodes), hl, cpus)
            rows.append((a.S + 0.1, f"{a.job}.{sname}|{'batch' if sname == 'batch' else 'torchrun'}||pretrain|{cp}|"
                                    f"{sstate}|{sec}|{slurm_ts(a.S)}|{slurm_ts(a.S)}|{slurm_ts(a.E)}|"
                                    f"{elapsed_str(a.E - a.S)}|{nn}|{nl}"))
    # meridian's own burn-in on the idle spare finds the bad GPU
    a6 = attempts[5]
    L, rows = per["md-2"]
    ts = info["spare_xid79_ts"]
    st, en = ts - 1500.0, ts + 95.0
    L.add(st, f"{ctld_ts(st)} sched: Allocate JobId=911 NodeList={SPARE_XID79[0]} #CPUs=224 Partition=maint")
    L.add(en, f"{ctld_ts(en)} _job_complete: JobId=911 WEXITSTATUS 226")
    L.add(en + 600, f"{ctld_ts(en + 600)} update_node: node {SPARE_XID79[0]} reason set to: burn-in failed, GPU4 xid79")
    L.add(en + 600.1, f"{ctld_ts(en + 600.1)} update_node: node {SPARE_XID79[0]} state set to DRAINED")
    rows.append((st, f"911|dcgm-burnin|maint|infra|224|FAILED|226:0|{slurm_ts(st - 8)}|{slurm_ts(st)}|{slurm_ts(en)}|"
                     f"{elapsed_str(en - st)}|1|{SPARE_XID79[0]}"))
    _ = a6
    for c, (L, rows) in per.items():
        rows.sort(key=lambda x: x[0])
        write_file(bundle / "scheduler" / c / "slurmctld.log", L.render())
        write_file(bundle / "scheduler" / c / "sacct.psv", ("\n".join([hdr] + [r for _, r in rows]) + "\n").encode())


def inventory_toml() -> str:
    out = ["# Fleet inventory for the wilderness campaign: three providers, one cluster each"]
    for v in CLUSTERS.values():
        out += [f"[providers.{v['provider']}]", f"usd_per_gpu_hour = {v['usd']:.2f}",
                f'support = "noc@{v["provider"]}.example"', ""]
    for c, v in CLUSTERS.items():
        out += [f"[clusters.{c}]", f'provider = "{v["provider"]}"', f'gpu = "{v["gpu"]}"', f"gpus_per_node = {GPN}",
                'interconnect = "InfiniBand NDR 8x400G"', f'nodes = "{hostlist(v["hosts"])}"',
                f"contracted_nodes = {len(v['hosts'])}", ""]
    return "\n".join(out)


def run_toml() -> str:
    return f"""# {RUN}: 21B dense decoder, Megatron-LM TP={TP} PP={PP} DP={DP}, moved across three providers
cluster = "tg-1"            # first cluster; attempts 4-5 ran on cb-east, attempt 6 on md-2 (see scheduler/)
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}   # global batch {GBS} x sequence length {SEQ}
params = {PARAMS}
layers = {LAYERS}
hidden = {HIDDEN}
seq_len = {SEQ}
flops_per_token = {FLOPS_PER_TOKEN:.4e}
checkpoint_dir = "{CLUSTERS['tg-1']['ckpt']}"
launcher = "slurm"
launch_command = "sbatch --nodes={NNODES} --gpus-per-node={GPN} --time=3-00:00:00 pretrain_21b.sbatch"
"""


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    attempts = build_timeline(seed)
    a1, a2, a3, a4, a5, a6 = attempts
    fleet = Fleet(seed)
    info: dict = {}
    write_file(bundle / "inventory.toml", inventory_toml().encode())
    rdir = bundle / "runs" / RUN
    write_file(rdir / "run.toml", run_toml().encode())
    pidmap = {a.k: Pids(seed, a) for a in attempts}
    for a in attempts:
        pids = pidmap[a.k]
        gz = a.k == 6
        write_file(rdir / f"attempt-{a.k}" / (f"slurm-{a.job}.out" + (".gz" if gz else "")),
                   train_log(a, fleet, pids, seed, info), gz=gz)
        for h in a.nodes:
            body, _cut = nccl_log(a, h, pids, fleet, seed)
            gzn = a.k in (3, 6) and a.nodes.index(h) % 2 == 0
            write_file(rdir / f"attempt-{a.k}" / "nccl" / (f"{h}.log" + (".gz" if gzn else "")), body, gz=gzn)
        if a.kind == "complete":
            for r, body in step_records(a, fleet, seed).items():
                gzr = r % 3 != 0
                write_file(rdir / f"attempt-{a.k}" / "steps" / (f"rank-{r:03d}.jsonl" + (".gz" if gzr else "")),
                           body, gz=gzr)
    ev = kernel_events(attempts, fleet, pidmap, seed, info)
    for h, events in ev.items():
        for name, data in render_kernel(h, events, fleet, seed, attempts).items():
            write_file(bundle / "nodes" / h / name, data, gz=name.endswith(".gz"))
    scheduler_files(attempts, fleet, bundle, seed, info)
    cats, total, per_inc, _parts = ledger(attempts)
    g = GPUS / 3600.0
    exc = sum(d - BASE_STEP for n, _, d in a6.steps if a6.window[0] <= n <= a6.window[1]) * g

    def inc(j: int, a: Attempt, blame: str, **extra) -> dict:
        cl = a.cluster
        rank = (a.nodes.index(a.root_host) * GPN + a.gpu) if (a.root_host and a.gpu is not None) else None
        d = {"id": j, "attempt": a.k, "slurm_job": a.job, "failure_mode": a.mode, "blame": blame,
             "host": a.root_host, "cluster": cl, "provider": CLUSTERS[cl]["provider"], "gpu_index": a.gpu,
             "gpu_pci": pci_of(cl, a.gpu) if a.gpu is not None else None, "rank": rank,
             "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E), "next_start_ts": iso_z(attempts[a.k].S),
             "last_ckpt_step": a.last_save, "failed_at_step": a.steps[-1][0] if a.steps else a.load_step,
             "gpu_hours": per_inc[j - 1], "gpu_hours_lost": round(sum(per_inc[j - 1].values()), 4)}
        d.update(extra)
        return d

    incidents = [
        inc(1, a1, "provider", symptom_first_ts=iso_z(info["watchdog_first_1"]),
            evidence="Xid 79 in nodes/tg1-a05/kern.log; watchdog timeouts on all other ranks ~600 s later"),
        inc(2, a2, "provider", symptom_first_ts=iso_z(info["att2_first_error"]), symptom_hosts=info["att2_peers"],
            evidence="syslog of tg1-a11 ends (half line + NULs); NET/IB status=12 from its rail peers; slurmctld "
                     "'not responding, setting DOWN'; sacct NODE_FAIL"),
        inc(3, a3, "unknown", stuck_rank=info["hang_stuck_rank"], symptom_first_ts=iso_z(info["watchdog_first_3"]),
            evidence="127 ranks time out on the same SeqNum; rank 18 (tg1-a03 GPU2) last enqueued SeqNum-1"),
        inc(4, a4, "provider", failed_save_step=a4.failed_save[0], ost=f"{FS}-{BAD_OST}", oss_nid=OSS_NID,
            symptom_first_ts=iso_z(info["lustre_first_true_ts"]),
            evidence="Lustre connection lost / ost_write rc=-110 on every host within seconds of the save start; "
                     "hung tasks in the Lustre write path; watchdog on the checkpoint all-gather"),
        inc(5, a5, "provider", lost_steps=[n for n, _, _ in a4.saves], reloaded_step=a5.load_step,
            remount_ts=iso_z(info["remount_ts"]), warning_ts=iso_z(info["lost_warning_ts"]),
            evidence="attempt 4 logged 'successfully saved checkpoint' to /cbfs/ckpt/wilderness-21b; attempt 5 "
                     "finds no metadata file there and starts from random; the user cancels it"),
        {"id": 6, "attempt": 6, "slurm_job": a6.job, "kind": "straggler", "failure_mode": None, "blame": "provider",
         "host": STRAGGLER, "cluster": "md-2", "provider": "meridian",
         "ranks": [r for r, h, _ in rank_layout(a6.nodes) if h == STRAGGLER],
         "from_step": a6.window[0], "to_step": a6.window[1], "compute_factor": SLOW_FACTOR,
         "window_step_s": round(WINDOW_STEP, 4), "gpu_hours_lost": round(exc, 4)},
    ]
    decoys = {
        ATT1_FIRST: "named by torchrun's 'Root Cause (first observed failure)' in attempt 1: a watchdog symptom",
        ATT3_FIRST: "named by torchrun's 'Root Cause (first observed failure)' in attempt 3: a watchdog symptom",
        info["att2_peers"][0]: "rail peer of tg1-a11: NET/IB completion errors and ncclRemoteError are symptoms",
        info["att2_peers"][1]: "rail peer of tg1-a11: NET/IB completion errors and ncclRemoteError are symptoms",
        LINKFLAP_SPARE: "idle spare (never in the job): mlx5 Link down/up flap during attempt 3",
        **{h: "hung-task reports in the Lustre write path: symptom of the shared filesystem"
              + (" (its clock is 6.5 s behind, so its Lustre error looks first)" if h == LUSTRE_FIRST else "")
           for h in LUSTRE_HUNG},
        XID63[0]: "Xid 63 row-remapping event mid attempt 6; every rank kept stepping at pace",
        REREG: "NCCL WARN 'Got async event : client reregistration' (subnet manager failover); harmless",
        SPARE_XID79[0]: "idle spare: Xid 79 during the provider's burn-in job 911, never part of the run",
    }
    by_provider = {v["provider"]: 0.0 for v in CLUSTERS.values()}
    for i in incidents:
        by_provider[i["provider"]] += i["gpu_hours_lost"]
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK_H100_SXM,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK_H100_SXM), 4),
        "first_start_ts": iso_z(a1.S), "last_end_ts": iso_z(a6.E),
        "clock_skew_s": fleet.skew,
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "cluster": a.cluster,
                      "provider": CLUSTERS[a.cluster]["provider"], "nodes": hostlist(a.nodes),
                      "start_ts": iso_z(a.S), "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E),
                      "loaded_step": a.load_step, "last_step": a.steps[-1][0] if a.steps else a.load_step,
                      "saves": [n for n, _, _ in a.saves], "kept_up_to_step": a.kept, "end": a.kind}
                     for a in attempts],
        "match_on_attempt": True,
        "incidents": incidents,
        "straggler": {"host": STRAGGLER, "attempt": 6, "from_step": a6.window[0], "to_step": a6.window[1],
                      "cluster": "md-2", "provider": "meridian", "excess_gpu_hours": round(exc, 4)},
        "per_rank_timings": {"attempt": 6, "local_ranks": [0, 4],
                             "steps": [a6.window[0] - JSONL_MARGIN, a6.window[1] + JSONL_MARGIN]},
        "forbidden_incidents": [
            {"failure_mode": "loss_divergence", "reason": "attempt 5's loss is ~11 because it started from random "
                                                          "weights (lost checkpoint), not a divergence"},
            {"failure_mode": "nccl_timeout", "attempts": [1], "reason": "watchdog timeouts of attempt 1 are symptoms "
                                                                        "of the Xid 79 on tg1-a05"},
            {"failure_mode": "network", "attempts": [2], "reason": "NET/IB completion errors of attempt 2 are symptoms "
                                                                   "of the lost node tg1-a11"},
            {"failure_mode": "nccl_timeout", "attempts": [4], "reason": "watchdog timeouts of attempt 4 are symptoms "
                                                                        "of the Lustre OST outage"},
        ],
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys,
        "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {k: round(v, 4) for k, v in by_provider.items()},
        "notes": ("Times are the Slurm controllers' UTC clocks; node clocks are off by clock_skew_s. host null "
                  "(shared filesystem, lost checkpoints) matches any host in the scorer. The straggler is an "
                  "incident of kind 'straggler' (any failure mode). gpu_hours per incident: hang + thrown-away work "
                  "+ restart + next start-up (attempt 4's work lost with the checkpoints is counted under the "
                  "checkpoint_lost incident). Ledger: see the wilderness.py docstring."),
    }
    write_file(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output directory (bundle/ and truth.json go here)")
    ap.add_argument("--seed", type=int, default=20260302)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    files = [p for p in (out / "bundle").rglob("*") if p.is_file()]
    print(f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB) and "
          f"{out / 'truth.json'}; total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
