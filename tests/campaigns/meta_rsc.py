#!/usr/bin/env python3
"""Independent campaign "meta_rsc": the failure taxonomy of Meta's RSC paper, re-enacted on one run.

Theme: Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research Clusters"
(Meta FAIR, arXiv 2410.21680, HPCA 2025; RSC-1 16k A100, RSC-2 8k A100).  The paper's lesson is
that a long pretraining job on an A100 research cluster dies many times, mostly early and briefly,
from a short list of causes: NCCL timeouts whose real cause is one peer, a GPU that is unavailable
when the next job starts on a node whose GPU failed since the last job, a filesystem mount missing
on one node, InfiniBand link errors, PCIe errors, host (CPU) OOM, preemption by higher-priority
work (jobs become preemptible after 2 h) with requeue, and node health checks that run between
jobs and drain the bad node.  Written without reading clusterlab's analysis code.

Writes, under --out DIR:
  DIR/bundle/inventory.toml
  DIR/bundle/runs/meta_rsc/run.toml
  DIR/bundle/runs/meta_rsc/attempt-<k>/slurm-<jobid>.out[.gz]   sbatch output: preflight, srun, torchrun,
                                     Megatron-DeepSpeed/DeepSpeed/PyTorch output of all ranks.  NOTE: job
                                     700188 was preempted and REQUEUED under the same job id; Slurm appends
                                     the second run to the same file, so attempt-6/slurm-700188.out holds
                                     attempts 6 AND 7 (attempt-7/ only has the NCCL logs of the second run)
  DIR/bundle/runs/meta_rsc/attempt-<k>/nccl/<host>.log[.gz]     NCCL_DEBUG=INFO of that host (no time stamps)
  DIR/bundle/nodes/<host>/...        kernel log in one of: rsyslog kern.log (+ rotated kern.log.1.gz),
                                     journalctl -k -o short-iso, dmesg -T; plus journal.log (systemd/nhc) on
                                     some hosts
  DIR/bundle/scheduler/{slurmctld.log, sacct.txt}      (sacct -D -P: both runs of the requeued job)
  DIR/truth.json
Usage: python meta_rsc.py --out DIR [--seed N]     (~8-10 MB, < 2 s; Python 3.11 stdlib only; deterministic
per seed, gzip members written with mtime=0 and no name)

Fleet: cluster rsc-2 (provider meta-rsc), 26 DGX-A100 nodes rsc2-h[001-026], 8 x A100-SXM4-80GB each,
8 x HDR 200G IB.  The run uses 20 nodes = 160 GPUs (TP 8 x DP 20, ZeRO-1, Megatron-DeepSpeed, 30B).
Spares h021..h025 replace drained nodes one by one; h026 stays idle.  All truth times are the Slurm
controller's UTC clock; every node's clock is off by up to +-4.5 s (truth "clock_skew_s").

Story, attempt by attempt (S start, F first step, R root event, E exit):
  1 job 700101  fresh start, ~2.8 h of training.  Xid 74 (NVLink fatal error, link 5) on rsc2-h007 GPU2
                at R; nothing else is printed by h007's ranks; 600 s later EVERY rank's ProcessGroupNCCL
                watchdog fires (rsc2-h015's clock is 4.3 s behind, so its lines come first), SIGABRT,
                torchrun ChildFailedError on all 20 nodes.  NHC then drains h007
                ("check_nvlink_status").                                          [nvlink_error, rsc2-h007]
  2 job 700133  h021 in for h007.  During the restart gap (node idle, after job 1 ended) rsc2-h012's GPU5
                fell off the bus (Xid 79 in its kernel log, before this job started).  At start the
                preflight `nvidia-smi -L` prints "GPU is lost" for it, CUDA enumerates only 7 devices, so
                local_rank 7 of h012 dies in torch.cuda.set_device with "CUDA error: invalid device
                ordinal" (the failing local rank is NOT the broken GPU index); srun kills the step before
                the first step.  NHC drains h012 ("check_gpu_count")           [gpu_fell_off_bus, rsc2-h012]
  3 job 700150  h022 in for h012.  /checkpoint failed to mount on rsc2-h016 (systemd mount failure in its
                journal): "slurmstepd: error: couldn't chdir to `/checkpoint/...': No such file or
                directory: going to /tmp instead", workers exit 2 ("can't open file"), srun kills the
                step 4 s in.  NHC drains h016 ("check_fs_mount").              [filesystem_io, rsc2-h016]
  4 job 700162  h023 in for h016.  ~3.9 h in, the HCA of GPU3 on rsc2-h009 (mlx5_3, ibp84s0) loses its
                link (mlx5 "Link down"); NCCL WARN "NET/IB : Got completion from peer ... status=12" on
                h009 and on its rail peers rsc2-h008 / rsc2-h010 (symptoms); ncclRemoteError, SIGABRT,
                srun kills the step.  NHC drains h009 ("check_hw_ib").         [network, rsc2-h009]
  5 job 700171  h024 in for h009.  ~2 h in, the data-loader workers of local rank 3 on rsc2-h014 grow
                until the job cgroup's memory limit: kernel "Memory cgroup out of memory: Killed process
                ... (pt_main_thread)", torchrun "exitcode: -9", slurmstepd "Detected 1 oom_kill event",
                srun "Out Of Memory", sacct OUT_OF_MEMORY.  Not a node fault: h014 stays in.
                                                                               [host_oom, rsc2-h014]
  6 job 700188  same nodes; ~5.3 h in (preemptible after 2 h), slurmctld "preempted JobId=700188 has
                been requeued to reclaim resources for JobId=700190"; "DUE TO PREEMPTION"; SIGTERM, grace
                period, kill.  The job is requeued with the same id and waits for the preemptor.
                                                                               [preemption, host null]
  7 job 700188  (second run, same id, output appended to attempt-6/slurm-700188.out).  ~3.4 h in, a fatal
                PCIe AER error (MalfTLP) on rsc2-h018 GPU7 (0000:bd:00.0, device 10de:20b2) -> that rank
                "CUDA error: unspecified launch failure"; its pipeline/ring peers on rsc2-h017 and
                rsc2-h019 then report "remote process exited or there was a network error" (symptoms).
                The operator drains h018 for RMA.                              [pcie_error, rsc2-h018]
  8 job 700215  h025 in for h018; trains to the end (train_iters 7750) and exits cleanly.
  Health checks: Slurm HealthCheckProgram=/usr/sbin/nhc every 600 s; NHC drains through slurmctld
  ("update_node: node X reason set to: NHC: ...", "state set to DRAINED") and logs "nhc[pid]: Health check
  failed:  ..." to the node journal.  They run BETWEEN jobs: the Xid 79 on h012 happened 6 min before
  job 2 was allocated and NHC had not run yet.
  Decoys (never the cause): rsc2-h015 (first watchdog line of attempt 1: its clock is behind);
  rsc2-h008 and rsc2-h010 (NET/IB completion errors: rail peers of h009); rsc2-h017 and rsc2-h019
  (remote-process-exited errors: peers of h018); rsc2-h003 (PCIe AER *Corrected* RxErr/BadTLP on a NIC,
  attempts 4 and 6, training continues); rsc2-h002 (harmless NCCL WARN "Got async event : GID table
  change", attempt 6); rsc2-h006 (Xid 63 row-remapper event mid attempt 8, training continues);
  rsc2-h026 (idle spare: NFS not responding/OK blip and a dcgm-diag job).  Noise: NCCL INFO spam,
  Python UserWarnings/FutureWarnings, non-UTF-8 bytes, blank lines, Megatron-DeepSpeed iteration and
  checkpoint lines that carry no time stamp of their own, NCCL lines with no time stamp at all,
  truncated final lines (attempt-1 output, one NCCL log), a gzipped rotated kern.log.1.gz.

Ledger (truth.json expected_ledger; GPU-hours = 160 x seconds / 3600), same conventions as
campaign1.py / campaign2.py:
  startup    = S -> F (first training step starts: "[before the start of training step]"); for the two
               attempts that die before any step (2, 3) the whole S -> R, with R = the first error line
               of the attempt (the CUDA error; the slurmstepd chdir error)
  productive = kept steps (step <= last completed save of an ended attempt; every step of attempt 8)
  checkpoint = every completed save (all are durable), plus attempt 8's tail after its final save
  recompute  = end of the attempt's last completed save (or F if none) -> R
  hang       = R -> E (sacct End).  R: the Xid 74, the mlx5 link down, the OOM kill, the preemption
               signal, the AER fatal error; for 2 and 3 see startup
  restart    = E -> next S
  straggler = slowdown = data_stall = idle = 0

Formats, and the public material where their shape was checked (text written anew):
  * Slurm slurmstepd (req.c / src/slurmd/slurmstepd): "*** JOB %u ON %s CANCELLED AT %s DUE TO PREEMPTION
    ***", "*** STEP %u.%u ON %s CANCELLED AT %s ***" (string tables in slurm builds found via find_string);
    "error: Detected 1 oom_kill event in StepId=N.0. Some of the step tasks have been OOM Killed." +
    "srun: error: <node>: task N: Out Of Memory" (nextflow-io/nextflow #5932, chrisknewman/tusas #149);
    "couldn't chdir to `%s': No such file or directory: going to /tmp instead" (Stanford FarmShare docs,
    a maxtext-slurm README quoting it); "srun: error: <node>: task N: Exited with exit code 1",
    "srun: Terminating StepId=N.0", "srun: Force Terminated StepId=N.0".
  * slurmctld: "preempted %pJ has been requeued to reclaim resources for %pJ" (slurmctld preempt code,
    found via find_string), "sched: Allocate JobId=..", "_job_complete: JobId=.. WTERMSIG 15 / WEXITSTATUS 1",
    "update_node: node X reason set to: ..", "update_node: node X state set to DRAINED" (as in campaign1);
    sacct -D shows a requeued-by-preemption run as PREEMPTED and the next run under the same JobID
    (MFlowCode/MFC PR #1311); State OUT_OF_MEMORY.
  * LBNL NHC: drain reason "NHC: check_fs_mount:  /global/scratch not mounted" (public sinfo -R listing in
    a Savio doc; vpenso/scripts docs/slurm/nhc.md), "ERROR:  nhc:  Health check failed:  check_gpu_count:
    ..." and "check_nvlink_status: GPU 3 has inactive nvlink" (Azure aznhc tests/docs), check_hw_ib.
  * NVRM Xid 74 "NVLink: fatal error detected on link 6(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)"
    (awslabs SageMaker HyperPod fault-injection doc); Xid 79 "GPU has fallen off the bus." (campaign1
    sources); Xid 63 "Row Remapper: New row marked for remapping, reset gpu to activate."
    (stas00/ml-engineering); nvidia-smi "Unable to determine the device handle for GPU 0000:02:00.0:
    GPU is lost. Reboot the system to recover this GPU" (JosephKJ/OWOD #81, AlexeyAB/darknet #86).
  * PCIe AER (Linux drivers/pci/pcie/aer.c): "pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error
    received: 0000:01:00.0", "AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer,
    (Receiver ID)", "  device [8086:1901] error status/mask=00004000/00000000", "   [14] CmpltTO (First)",
    "Root Port link has been reset", Corrected "type=Physical Layer ... [ 0] RxErr" (linux-pci list posts
    and kernel test fixtures found via find_string).
  * Linux OOM killer: "<comm> invoked oom-killer: gfp_mask=..., order=0, oom_score_adj=0",
    "oom-kill:constraint=CONSTRAINT_MEMCG,...", "Memory cgroup out of memory: Killed process N (comm)
    total-vm:..kB, anon-rss:..kB, file-rss:..kB, shmem-rss:..kB, UID:.. pgtables:..kB oom_score_adj:0",
    "oom_reaper: reaped process ..." (several public kernel logs via find_string).
  * mlx5 "mlx5_core 0000:54:00.0 ibp84s0: Link down" / "Link up" (Linux en_main.c; imbue-ai/cluster-health
    dmesg whitelist); DGX A100 netdev names ibp12s0..ibp225s0 are an assumption of the DGX A100 layout.
  * NCCL 2.18 INFO/WARN: "host:pid:tid [d] NCCL INFO ..." init, "Channel 00/24 : ...", "Connected all
    rings", "NET/IB : Got completion from peer <ip><port> with status=12 opcode=.. len=0 vendor err 129",
    "Got async event : GID table change" (NVIDIA/nccl issues #1814, #1405, #928; as in campaign1).
  * PyTorch: ProcessGroupNCCL watchdog lines ("Watchdog caught collective operation timeout: WorkNCCL(
    SeqNum=.., OpType=ALLREDUCE, ...) ran for 600xxx milliseconds before timing out.", "[PG ID 0 PG GUID
    0(default_pg) Rank N] Exception (either an error or timeout) detected by watchdog at work: ..") and
    ncclRemoteError text (hiyouga/LlamaFactory #7396, sgl-project/sglang #1693); "RuntimeError: CUDA error:
    invalid device ordinal", "CUDA error: unspecified launch failure" + the three standard follow-up lines;
    torchrun/torch.distributed.elastic: "failed (exitcode: -6) local_rank: ..", ChildFailedError block,
    "Received 15 death signal, shutting down workers", "Sending process N closing signal SIGTERM"
    (NVIDIA/Megatron-LM #1880, nvidia-resiliency-ext #18); "[rankN]:" prefixes.
  * DeepSpeed: "[2023-07-25 21:03:17,269] [INFO] [logging.py:96:log_dist] [Rank 0] step=35, skipped=0,
    lr=[...], mom=[[0.9, 0.95], ...]", "[INFO] [timer.py:215:stop] epoch=0/micro_step=34/global_step=34,
    RunningAvgSamplesPerSec=.., CurrSamplesPerSec=.., MemAllocated=..GB, MaxMemAllocated=..GB"
    (deepspeedai/DeepSpeed #3742, #1825); "[Torch] Checkpoint {tag} is ready now!" / "[Torch] Saving ..."
    (deepspeed torch_checkpoint_engine.py); "Unable to find latest file at ..latest".
  * Megatron-DeepSpeed: untimestamped " iteration  N/  M | consumed samples: .. | elapsed time per
    iteration (ms): .. | learning rate: .. | ... | number of nan iterations:   0 |" (deepspeedai/DeepSpeed
    #3742), "saving checkpoint at iteration {:7d} to {}", "  successfully saved checkpoint at iteration
    {:7d} to {}" (Megatron checkpointing.py via find_string), "[before the start of training step]
    datetime: ..".
  * systemd: "checkpoint.mount: Mount process exited, code=exited, status=32/n/a", "Failed to mount
    checkpoint.mount - /checkpoint." (systemd >= 249 wording); journalctl -o short-iso; dmesg -T; rsyslog
    "Dec  2 10:00:00 host kernel: [ 1234.567890] ..." (as in campaign1/2).
Unsure: the exact DeepSpeed file:line numbers in log prefixes vary by version; the NHC syslog tag form
"nhc[PID]:"; whether CUDA renumbers the 7 remaining GPUs (assumed: yes, so local rank 7 fails).
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

RUN = "meta_rsc"
CLUSTER, PROVIDER = "rsc-2", "meta-rsc"
GPN = 8
N_NODES = 20
GPUS = N_NODES * GPN                              # 160
TP, DP = 8, 20
MICRO, GA = 2, 12
GBS = MICRO * GA * DP                             # 480
SEQ = 2048
TOKENS_PER_STEP = GBS * SEQ                       # 983040
FLOPS_PER_TOKEN = 1.90e11                         # 6 x 30.4e9 + attention
PEAK_A100 = 312e12
BASE_STEP = 9.80
JITTER = 0.002
SAVE_INTERVAL = 250
LOG_INTERVAL = 10
TRAIN_ITERS = 7750
NCCL_TIMEOUT_S = 600
T0 = datetime(2026, 12, 2, 9, 10, 0, tzinfo=UTC).timestamp()
NCCL_VERSION = "2.18.5+cuda12.2"
DRIVER = "535.161.08"
KERNEL = "5.15.0-1042-nvidia"
CKPT = "/checkpoint/llm/meta_rsc/ckpt"
CODE = "/checkpoint/llm/meta_rsc/code"
HOSTS = [f"rsc2-h{i:03d}" for i in range(1, 27)]
IDLE_SPARE = "rsc2-h026"
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]
BUS = ["07", "0f", "47", "4e", "87", "90", "b7", "bd"]            # DGX A100 GPU buses
NIC_DEV = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
NIC_IF = ["ibp12s0", "ibp18s0", "ibp75s0", "ibp84s0", "ibp141s0", "ibp148s0", "ibp186s0", "ibp204s0"]
NIC_BUS = ["0c", "12", "4b", "54", "8d", "94", "ba", "cc"]
PYLIB = "/usr/local/lib/python3.10/dist-packages"
ROOT_PORT = {"bd": "0000:b0:03.0", "0c": "0000:00:01.1"}


def host_ip(h: str) -> str:
    return f"10.120.{int(h[-3:]) // 200}.{int(h[-3:]) % 200 + 10}"


def gpu_pci(g: int) -> str:
    return f"0000:{BUS[g]}:00"


# ----------------------------------------------------------------------------- time formats
def _dt(t: float) -> tuple[datetime, int]:
    us = int(round(t * 1e6))
    s, frac = divmod(us, 1_000_000)
    return datetime.fromtimestamp(s, UTC), frac


def iso_z(t: float) -> str:
    d, us = _dt(t)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{us // 1000:03d}Z"


def ds_ts(t: float) -> str:                        # python logging asctime: [2026-12-02 10:00:00,123]
    d, us = _dt(t)
    return f"[{d:%Y-%m-%d %H:%M:%S},{us // 1000:03d}]"


def glog_py(t: float, lvl: str) -> str:           # torch.distributed.elastic
    d, us = _dt(t)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{us // 1000:03d}000"


def glog_c10(t: float, lvl: str, rng: random.Random) -> str:
    d, us = _dt(t)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{us:06d}{rng.randint(0, 999):03d}"


def slurm_ts(t: float) -> str:
    return f"{_dt(t)[0]:%Y-%m-%dT%H:%M:%S}"


def ctld_ts(t: float) -> str:
    d, us = _dt(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{us // 1000:03d}]"


def date_cmd(t: float) -> str:
    d, _ = _dt(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def meg_dt(t: float) -> str:
    return f"{_dt(t)[0]:%Y-%m-%d %H:%M:%S}"


def elapsed(sec: float) -> str:
    sec = int(round(sec))
    d, r = divmod(sec, 86400)
    h, r = divmod(r, 3600)
    m, s = divmod(r, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts: list[str]) -> str:
    nums = sorted(int(h[-3:]) for h in hosts)
    if len(nums) == 1:
        return hosts[0]
    parts, a, b = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == b + 1:
            b = n
            continue
        parts.append(f"{a:03d}" if a == b else f"{a:03d}-{b:03d}")
        if n is not None:
            a = b = n
    return "rsc2-h[" + ",".join(parts) + "]"


# ----------------------------------------------------------------------------- writers
class Sink:
    def __init__(self) -> None:
        self.rows: list[tuple[float, int, str | bytes]] = []

    def add(self, t: float, line: str | bytes) -> None:
        self.rows.append((t, len(self.rows), line))

    def many(self, t: float, lines) -> None:
        for ln in lines:
            self.add(t, ln)

    def render(self, cut: int = 0) -> bytes:
        self.rows.sort(key=lambda r: (r[0], r[1]))
        data = b"\n".join(r[2] if isinstance(r[2], bytes) else r[2].encode() for r in self.rows) + b"\n"
        return data[: len(data) - 1 - cut] if cut else data


def put(path: Path, data: bytes, gz: bool = False) -> None:
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
        self.R = self.E = self.F = None


def base_nodes() -> list[str]:
    return HOSTS[:20]


def swap(nodes: list[str], out: str, inn: str) -> list[str]:
    return [inn if h == out else h for h in nodes]


def build(seed: int) -> list[Att]:
    rng = random.Random(f"{seed}-timeline")
    n1 = base_nodes()
    n2 = swap(n1, "rsc2-h007", "rsc2-h021")
    n3 = swap(n2, "rsc2-h012", "rsc2-h022")
    n4 = swap(n3, "rsc2-h016", "rsc2-h023")
    n5 = swap(n4, "rsc2-h009", "rsc2-h024")
    n8 = swap(n5, "rsc2-h018", "rsc2-h025")
    J = lambda a, b: rng.randint(a, b)           # noqa: E731
    specs = [
        dict(k=1, job=700101, nodes=n1, kind="fail", mode="nvlink_error", host="rsc2-h007", gpu=2,
             run_steps=1010 + J(0, 30), after=lambda R: R + NCCL_TIMEOUT_S + 14.0, gap=1500 + J(-60, 60)),
        dict(k=2, job=700133, nodes=n2, kind="init", mode="gpu_fell_off_bus", host="rsc2-h012", gpu=5,
             init_at=72.0 + J(0, 6), after=lambda R: R + 9.0, gap=900 + J(-60, 60)),
        dict(k=3, job=700150, nodes=n3, kind="init", mode="filesystem_io", host="rsc2-h016", gpu=None,
             init_at=3.0 + J(0, 2), after=lambda R: R + 8.0, gap=1100 + J(-60, 60)),
        dict(k=4, job=700162, nodes=n4, kind="fail", mode="network", host="rsc2-h009", gpu=3,
             run_steps=1390 + J(0, 40), after=lambda R: R + 47.0, gap=1300 + J(-60, 60)),
        dict(k=5, job=700171, nodes=n5, kind="fail", mode="host_oom", host="rsc2-h014", gpu=3,
             run_steps=690 + J(0, 40), after=lambda R: R + 7.0, gap=600 + J(-30, 30)),
        dict(k=6, job=700188, nodes=n5, kind="fail", mode="preemption", host=None, gpu=None,
             run_steps=1900 + J(0, 40), after=lambda R: R + 33.0, gap=2700 + J(-120, 120)),
        dict(k=7, job=700188, nodes=n5, kind="fail", mode="pcie_error", host="rsc2-h018", gpu=7,
             run_steps=1230 + J(0, 40), after=lambda R: R + 15.0, gap=1800 + J(-90, 90)),
        dict(k=8, job=700215, nodes=n8, kind="complete", mode=None, host=None, gpu=None, gap=None),
    ]
    atts = [Att(**s) for s in specs]
    t = T0
    load = 0
    for a in atts:
        a.S = float(t)
        a.load = load
        a.phases = (52 + J(0, 8), 38 + J(0, 6), (24 if load == 0 else 95) + J(0, 9), 31 + J(0, 5))
        srng = random.Random(f"{seed}-steps-{a.k}")
        if a.kind == "init":
            a.R = a.S + a.init_at
            a.E = a.after(a.R)
            a.last_ckpt = load
        else:
            a.F = a.S + sum(a.phases)
            tt, n = a.F, load
            while True:
                dur = BASE_STEP * (1 + srng.uniform(-JITTER, JITTER))
                if a.kind == "fail" and n - load == a.run_steps:
                    a.R = float(math.floor(tt + 0.45 * dur))
                    a.E = a.after(a.R)
                    break
                a.steps.append((n + 1, tt, dur))
                tt += dur
                n += 1
                if n % SAVE_INTERVAL == 0 or n == TRAIN_ITERS:
                    c = round(srng.uniform(47.0, 62.0), 2)
                    a.saves.append((n, tt, c))
                    tt += c
                if a.kind == "complete" and n >= TRAIN_ITERS:
                    a.E = float(math.ceil(tt + 4.0))
                    break
            a.last_ckpt = a.saves[-1][0] if a.saves else load
        load = a.last_ckpt
        if a.gap is not None:
            t = a.E + a.gap
    assert atts[-1].steps[-1][0] == TRAIN_ITERS and atts[-1].load < TRAIN_ITERS - 1500
    return atts


def ledger(atts: list[Att]):
    c = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute",
                       "hang", "restart", "startup", "idle"], 0.0)
    per = []
    for i, a in enumerate(atts):
        if a.kind == "init":
            c["startup"] += a.R - a.S
        else:
            c["startup"] += a.F - a.S
        keep = a.last_ckpt if a.kind != "complete" else 10 ** 9
        c["productive"] += sum(d for n, _, d in a.steps if n <= keep)
        c["checkpoint"] += sum(x for _, _, x in a.saves)
        if a.kind == "complete":
            c["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        rec = 0.0 if a.kind == "init" else a.R - ((a.saves[-1][1] + a.saves[-1][2]) if a.saves else a.F)
        hang, rst = a.E - a.R, atts[i + 1].S - a.E
        nxt = atts[i + 1]
        nst = (nxt.R - nxt.S) if nxt.kind == "init" else (nxt.F - nxt.S)
        c["recompute"] += rec
        c["hang"] += hang
        c["restart"] += rst
        per.append(dict(recompute=rec, hang=hang, restart=rst, startup=nst))
    total = atts[-1].E - atts[0].S
    assert abs(sum(c.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return ({k: round(v * g, 4) for k, v in c.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per])


# ----------------------------------------------------------------------------- fleet
class Fleet:
    def __init__(self, seed: int):
        rng = random.Random(f"{seed}-fleet")
        self.skew = {h: round(rng.uniform(-3.0, 3.0), 3) for h in HOSTS}
        self.skew["rsc2-h001"] = 1.214
        self.skew["rsc2-h015"] = -4.3
        self.skew["rsc2-h007"] = 2.6
        self.boot = {h: T0 - rng.randint(3 * 86400, 9 * 86400) for h in HOSTS}
        self.uuid = {}
        for h in HOSTS:
            for g in range(GPN):
                x = f"{rng.getrandbits(128):032x}"
                self.uuid[h, g] = f"GPU-{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"
        self.gid = {(h, g): f"fe80::ba3f:d203:{rng.randint(0, 0xff):x}:{rng.randint(0, 0xffff):x}"
                    for h in HOSTS for g in range(GPN)}


class Pids:
    def __init__(self, seed: int, a: Att):
        rng = random.Random(f"{seed}-pids-{a.k}")
        self.agent = {h: rng.randint(200_000, 3_500_000) for h in a.nodes}
        self.worker = {(h, d): self.agent[h] + 11 + d for h in a.nodes for d in range(GPN)}
        self.comm = {(h, d): "0x%x" % (0x55d000000000 + (rng.getrandbits(28) << 4)) for h in a.nodes
                     for d in range(GPN)}
        self.commid = f"0x{rng.getrandbits(64):016x}"


def rank_of(a: Att, h: str, d: int) -> int:
    return a.nodes.index(h) * GPN + d


# ----------------------------------------------------------------------------- training output
WARN_FUT = ("/usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:429: UserWarning: "
            "torch.utils.checkpoint: please pass in use_reentrant=True or use_reentrant=False explicitly. "
            "The default value of use_reentrant will be updated to be False in the future.")
WARN_APEX = ("/opt/megatron-deepspeed/megatron/model/fused_layer_norm.py:18: FutureWarning: "
             "`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
             "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.")
TR_TB = [
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 8, in <module>',
    "    sys.exit(main())",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", '
    'line 346, in wrapper',
    "    return f(*args, **kwargs)",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", line 806, in main',
    "    run(args)",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", line 797, in run',
    "    elastic_launch(",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 134, in __call__',
    "    return launch_agent(self._config, self._entrypoint, list(args))",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 264, in launch_agent',
    "    raise ChildFailedError(",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
]


def child_failed(t: float, h: str, ents, root) -> list[str]:
    stamp = f"{_dt(t)[0]:%Y-%m-%d_%H:%M:%S}"
    out = list(TR_TB) + ["=" * 60, "pretrain_gpt.py FAILED", "-" * 60, "Failures:"]

    def one(i, e):
        r, lr, ec, pid, tb = e
        return [f"[{i}]:", f"  time      : {stamp}", f"  host      : {h}", f"  rank      : {r} (local_rank: {lr})",
                f"  exitcode  : {ec} (pid: {pid})", "  error_file: <N/A>", f"  traceback : {tb}"]
    rest = [e for e in ents if e is not root]
    if not rest:
        out.append("  <NO_OTHER_FAILURES>")
    for i, e in enumerate(rest, 1):
        out += one(i, e)
    return out + ["-" * 60, "Root Cause (first observed failure):"] + one(0, root) + ["=" * 60]


CUDA_TAIL = ["CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
             "below might be incorrect.", "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
             "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", ""]


class TrainLog:
    """The sbatch output of one Slurm job (one or, for a requeued job, several runs)."""

    def __init__(self, fleet: Fleet):
        self.L = Sink()
        self.fleet = fleet

    def on(self, h: str, t: float) -> float:           # a host's clock
        return t + self.fleet.skew[h]

    def ds(self, a: Att, t: float, src: str, msg: str, lvl: str = "INFO") -> None:
        self.L.add(t, f"{ds_ts(self.on(a.nodes[0], t))} [{lvl}] [{src}] {msg}")

    def agent_sigterm(self, a: Att, p: Pids, h: str, t: float, skip: int | None = None) -> None:
        self.L.add(t, f"{glog_py(self.on(h, t), 'W')} {p.agent[h]} torch/distributed/elastic/agent/server/api.py:"
                      f"704] Received 15 death signal, shutting down workers")
        for d in range(GPN):
            if d != skip:
                self.L.add(t + 0.001, f"{glog_py(self.on(h, t + 0.001), 'W')} {p.agent[h]} torch/distributed/"
                                      f"elastic/multiprocessing/api.py:858] Sending process {p.worker[h, d]} "
                                      f"closing signal SIGTERM")


def preflight(a: Att, fleet: Fleet, T: TrainLog, lost: tuple[str, int] | None) -> None:
    t = a.S + 2.0
    for i, h in enumerate(a.nodes):
        for g in range(GPN):
            tt = t + 0.4 + 0.05 * i + 0.001 * g
            if lost and (h, g) == lost:
                T.L.add(tt, f"{h}: Unable to determine the device handle for GPU {gpu_pci(g)}.0: GPU is lost.  "
                            f"Reboot the system to recover this GPU")
            else:
                T.L.add(tt, f"{h}: GPU {g}: NVIDIA A100-SXM4-80GB (UUID: {fleet.uuid[h, g]})")


def startup(a: Att, p: Pids, T: TrainLog, rng: random.Random) -> None:
    S = a.S
    pf, pi, pl, pd = a.phases
    T.L.add(S, f"START TIME: {date_cmd(T.on(a.nodes[0], S))}")
    T.L.add(S + 0.3, f"SLURM_JOB_ID={a.job} SLURM_JOB_NODELIST={hostlist(a.nodes)} SLURM_RESTART_COUNT="
                     f"{1 if a.k == 7 else 0}")
    t = S + pf
    for i, h in enumerate(a.nodes):
        tt = t + 0.3 + 0.04 * i
        pre = f"{glog_py(T.on(h, tt), 'W')} {p.agent[h]} torch/distributed/run.py:757] "
        T.L.many(tt, [pre, pre + "*" * 41, pre + "Setting OMP_NUM_THREADS environment variable for each process "
                      "to be 1 in default, to avoid your system being overloaded, please further tune the variable "
                      "for optimal performance in your application as needed. ", pre + "*" * 41])
    t1 = t + 6.0
    T.ds(a, t1, "real_accelerator.py:161:get_accelerator", "Setting ds_accelerator to cuda (auto detect)")
    T.L.many(t1 + 0.5, [f"using world size: {GPUS}, data-parallel-size: {DP}, sequence-parallel size: 1, "
                        f"tensor-model-parallel size: {TP}, pipeline-model-parallel size: 1 ",
                        "using torch.bfloat16 for parameters ...",
                        "------------------------ arguments ------------------------"]
               + [f"  {k} {'.' * (42 - len(k))} {v}" for k, v in [
                   ("deepspeed", "True"), ("global_batch_size", GBS), ("micro_batch_size", MICRO),
                   ("hidden_size", 7168), ("num_layers", 48), ("num_attention_heads", 56), ("seq_length", SEQ),
                   ("save", CKPT), ("load", CKPT), ("save_interval", SAVE_INTERVAL), ("train_iters", TRAIN_ITERS),
                   ("log_interval", LOG_INTERVAL), ("zero_stage", 1), ("distributed_timeout_minutes", 10)]]
               + ["-------------------- end of arguments ---------------------",
                  "> initializing torch distributed ..."])
    T.ds(a, t1 + 1.0, "comm.py:637:init_distributed", "cdb=None")
    T.ds(a, t1 + 1.1, "comm.py:668:init_distributed", "Initializing TorchBackend in DeepSpeed with backend nccl")
    t2 = S + pf + pi
    T.L.add(t2, f"> initialized tensor model parallel with size {TP}")
    T.L.add(t2 + 0.2, f"time to initialize megatron (seconds): {pi - 1.3 + rng.random():.3f}")
    T.L.add(t2 + 0.3, f"[after megatron is initialized] datetime: {meg_dt(T.on(a.nodes[0], t2 + 0.3))} ")
    T.L.add(t2 + 2.0, "building GPT model ...")
    T.ds(a, t2 + 9.0, "utils.py:791:see_memory_usage", "After Building Model")
    T.L.add(t2 + 9.1, " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 3801841664")
    for _h in a.nodes[2::7]:
        T.L.many(t2 + 9.5, [WARN_APEX, "  @torch.cuda.amp.custom_fwd"])
    tl = S + pf + pi + pl
    if a.load == 0:
        T.ds(a, t2 + 15, "engine.py:2757:load_checkpoint", f"Unable to find latest file at {CKPT}/latest, if "
             "trying to load latest checkpoint please ensure this file exists or pass an explicit checkpoint "
             "tag when loading a checkpoint.", "WARNING")
    else:
        tag = f"global_step{a.load}"
        T.ds(a, t2 + 14, "torch_checkpoint_engine.py:27:load",
             f"[Torch] Loading checkpoint from {CKPT}/{tag}/mp_rank_00_model_states.pt...")
        T.ds(a, tl - 6.0, "torch_checkpoint_engine.py:29:load",
             f"[Torch] Loaded checkpoint from {CKPT}/{tag}/mp_rank_00_model_states.pt.")
        T.ds(a, tl - 4.0, "engine.py:3023:_get_all_zero_checkpoint_state_dicts",
             f"successfully read {DP} ZeRO state_dicts for rank 0")
        T.L.add(tl - 3.0, f"  successfully loaded checkpoint from {CKPT} at iteration {a.load}")
    T.L.add(tl, f"[after model, optimizer, and learning rate scheduler are built] datetime: "
                f"{meg_dt(T.on(a.nodes[0], tl))} ")
    T.L.many(tl + 0.5, ["> building train, validation, and test datasets ...",
                        " > datasets target sizes (minimum size):", f"    train:      {TRAIN_ITERS * GBS}"])
    T.L.add(tl + 4.0, b"  > WARNING: skipping doc 99120345 of /datasets/pile_cc/part-0117_text_document: "
                      b"bad utf-8 \xc3\x28 \xff in text")
    T.L.add(a.F - 1.0, "> finished creating GPT datasets ...")
    T.L.add(a.F - 0.5, "training ...")
    T.L.add(a.F, f"[before the start of training step] datetime: {meg_dt(T.on(a.nodes[0], a.F))} ")
    for _h in a.nodes[1::6]:
        T.L.many(a.F + 3.0, [WARN_FUT, "  warnings.warn("])


def training(a: Att, T: TrainLog, seed: int) -> None:
    rng = random.Random(f"{seed}-loss-{a.k}")
    st = a.steps
    for j, (n, ts, dur) in enumerate(st):
        if n % LOG_INTERVAL:
            continue
        te = ts + dur
        win = [d for _, _, d in st[max(0, j - LOG_INTERVAL + 1): j + 1]]
        avg = sum(win) / len(win)
        lr = 3e-4 * min(1.0, n / 500) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * n / TRAIN_ITERS)))
        loss = 1.95 + 7.8 * math.exp(-n / 300) + 0.5 * math.exp(-n / 4000) + rng.gauss(0, 0.01)
        T.ds(a, te, "logging.py:96:log_dist", f"[Rank 0] step={n}, skipped=0, lr=[{lr!r}], mom=[[0.9, 0.95]]")
        T.ds(a, te + 0.0004, "timer.py:260:stop",
             f"epoch=0/micro_step={n * GA}/global_step={n}, "
             f"RunningAvgSamplesPerSec={GBS / BASE_STEP * (1 + rng.uniform(-0.001, 0.001))!r}, "
             f"CurrSamplesPerSec={GBS / dur!r}, MemAllocated=41.87GB, MaxMemAllocated=63.12GB")
        tfl = TOKENS_PER_STEP * FLOPS_PER_TOKEN / avg / GPUS / 1e12
        T.L.add(te + 0.001, f" iteration {n:8d}/{TRAIN_ITERS:8d} | consumed samples: {n * GBS:12d} | consumed tokens: "
                            f"{n * TOKENS_PER_STEP:12d} | elapsed time per iteration (ms): {avg * 1000:.1f} | learning "
                            f"rate: {lr:.3E} | global batch size: {GBS:5d} | lm loss: {loss:.6E} | loss scale: 1.0 | "
                            f"grad norm: {0.19 + abs(rng.gauss(0, 0.03)):.3f} | num zeros: 0.0 | "
                            f"actual seqlen: {SEQ:5d} | "
                            f"number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: "
                            f"{GBS / avg:.3f} | tokens per gpu per second (tgs): {TOKENS_PER_STEP / avg / GPUS:.3f} | "
                            f"TFLOPs: {tfl:.2f} |")
    for n, ts, c in a.saves:
        tag = f"global_step{n}"
        T.L.add(ts + 0.001, f"saving checkpoint at iteration {n:7d} to {CKPT}")
        T.ds(a, ts + 0.01, "logging.py:96:log_dist", f"[Rank 0] [Torch] Checkpoint {tag} is about to be saved!")
        mp = f"{CKPT}/{tag}/mp_rank_00_model_states.pt"
        T.ds(a, ts + 0.02, "logging.py:96:log_dist", f"[Rank 0] Saving model checkpoint: {mp}")
        T.ds(a, ts + 0.03, "torch_checkpoint_engine.py:21:save", f"[Torch] Saving {mp}...")
        T.ds(a, ts + c * 0.4, "torch_checkpoint_engine.py:23:save", f"[Torch] Saved {mp}.")
        T.ds(a, ts + c - 0.05, "engine.py:3488:_save_zero_checkpoint",
             f"zero checkpoint saved {CKPT}/{tag}/zero_pp_rank_0_mp_rank_00_optim_states.pt")
        T.ds(a, ts + c - 0.02, "torch_checkpoint_engine.py:33:commit", f"[Torch] Checkpoint {tag} is ready now!")
        T.L.add(ts + c - 0.01, f"  successfully saved checkpoint at iteration {n:7d} to {CKPT}")
        T.L.add(ts + c - 0.005, f"time (ms) | save-checkpoint: {c * 1000 - 11.3:.2f}")
    for _n, ts, _d in st[:: max(1, len(st) // 5)]:
        T.L.add(ts + 0.5, "")


def watchdog(r: int, t: float, seq: int, rng: random.Random, full: bool) -> list[str]:
    ran = NCCL_TIMEOUT_S * 1000 + rng.randint(20, 900)
    wd = (f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, "
          f"NumelIn=58720256, NumelOut=58720256, Timeout(ms)={NCCL_TIMEOUT_S * 1000}) ran for {ran} milliseconds "
          f"before timing out.")
    out = [f"[rank{r}]:[{glog_c10(t, 'E', rng)} ProcessGroupNCCL.cpp:563] {wd}",
           f"[rank{r}]:[{glog_c10(t + 0.002, 'E', rng)} ProcessGroupNCCL.cpp:1537] [PG 0 Rank {r}] Timeout at NCCL "
           f"work: {seq}, last enqueued NCCL work: {seq}, last completed NCCL work: {seq - 1}.",
           f"[rank{r}]:[{glog_c10(t + 0.0025, 'E', rng)} ProcessGroupNCCL.cpp:577] [Rank {r}] Some NCCL operations "
           f"have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations "
           f"might run on corrupted/incomplete data.",
           f"[rank{r}]:[{glog_c10(t + 0.003, 'E', rng)} ProcessGroupNCCL.cpp:583] [Rank {r}] To avoid data "
           f"inconsistency, we are taking the entire process down."]
    if full:
        out += ["terminate called after throwing an instance of 'c10::DistBackendError'",
                f"  what():  [PG 0 Rank {r}] Process group watchdog thread terminated with exception: {wd}",
                "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:565 "
                "(most recent call first):", ""]
    return out


def end_nvlink(a: Att, p: Pids, T: TrainLog, rng: random.Random, info: dict) -> int:
    seq = 41_000 + rng.randint(0, 5000)
    first = None
    for i, h in enumerate(a.nodes):
        for d in range(GPN):
            r = i * GPN + d
            tw = a.R + NCCL_TIMEOUT_S + 0.4 + rng.uniform(0.0, 1.6)
            shown = tw + T.fleet.skew[h]
            first = min(first or shown, shown)
            T.L.many(tw, watchdog(r, T.on(h, tw), seq, rng, full=(r % 23 == 4)))
    info["watchdog_first_host_clock"] = first
    tf = a.R + NCCL_TIMEOUT_S + 4.0
    for i, h in enumerate(a.nodes):
        t = tf + 0.11 * i
        ents = [(i * GPN + d, d, -6, p.worker[h, d], f"Signal 6 (SIGABRT) received by PID {p.worker[h, d]}")
                for d in range(GPN)]
        root = ents[rng.randrange(GPN)]
        T.L.add(t, f"{glog_py(T.on(h, t), 'E')} {p.agent[h]} torch/distributed/elastic/multiprocessing/api.py:833] "
                   f"failed (exitcode: -6) local_rank: {root[1]} (pid: {root[3]}) of binary: /usr/bin/python3")
        T.L.many(t + 0.01, child_failed(T.on(h, t), h, ents, root))
    for i, h in enumerate(a.nodes):
        T.L.add(tf + 6.0 + 0.01 * i, f"srun: error: {h}: task {i}: Exited with exit code 1")
    T.L.add(tf + 6.5, f"srun: Terminating StepId={a.job}.0")
    last = f"END TIME: {date_cmd(T.on(a.nodes[0], a.E - 1.0))}"
    T.L.add(a.E - 1.0, last)
    return len(last) - 9                               # the writer died mid-line: "END TIME:" only


def end_gpu_lost(a: Att, p: Pids, T: TrainLog, rng: random.Random, info: dict) -> None:
    h = a.host
    i = a.nodes.index(h)
    d = GPN - 1                                       # CUDA sees 7 devices: ordinal 7 no longer exists
    r = i * GPN + d
    tb = ["Traceback (most recent call last):",
          '  File "/checkpoint/llm/meta_rsc/code/pretrain_gpt.py", line 356, in <module>',
          "    pretrain(train_valid_test_datasets_provider,",
          '  File "/checkpoint/llm/meta_rsc/code/megatron/training.py", line 106, in pretrain',
          "    initialize_megatron(extra_args_provider=extra_args_provider,",
          '  File "/checkpoint/llm/meta_rsc/code/megatron/initialize.py", line 75, in initialize_megatron',
          "    finish_mpu_init()",
          '  File "/checkpoint/llm/meta_rsc/code/megatron/initialize.py", line 193, in _initialize_distributed',
          "    torch.cuda.set_device(device)",
          '  File "/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py", line 399, in set_device',
          "    torch._C._cuda_setDevice(device)",
          "RuntimeError: CUDA error: invalid device ordinal"] + CUDA_TAIL
    T.L.many(a.R, [f"[rank{r}]: {x}" if x else "" for x in tb])
    info["cuda_error_ts"] = a.R
    tf = a.R + 1.6
    for dd in range(GPN - 1):
        T.L.add(tf - 0.2, f"{glog_py(T.on(h, tf - 0.2), 'W')} {p.agent[h]} torch/distributed/elastic/multiprocessing/"
                          f"api.py:858] Sending process {p.worker[h, dd]} closing signal SIGTERM")
    ents = [(i * GPN + dd, dd, 1 if dd == d else -15, p.worker[h, dd],
             "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html" if dd == d else
             f"Signal 15 (SIGTERM) received by PID {p.worker[h, dd]}") for dd in range(GPN)]
    T.L.add(tf, f"{glog_py(T.on(h, tf), 'E')} {p.agent[h]} torch/distributed/elastic/multiprocessing/api.py:833] "
                f"failed (exitcode: 1) local_rank: {d} (pid: {p.worker[h, d]}) of binary: /usr/bin/python3")
    T.L.many(tf + 0.01, child_failed(T.on(h, tf), h, ents, ents[d]))
    kill_rest(a, p, T, [h], a.R + 3.0)


def kill_rest(a: Att, p: Pids, T: TrainLog, culprits: list[str], t0: float) -> None:
    for h in culprits:
        T.L.add(t0, f"srun: error: {h}: task {a.nodes.index(h)}: Exited with exit code 1")
    T.L.add(t0 + 0.1, f"srun: Terminating StepId={a.job}.0")
    T.L.add(t0 + 0.3, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT "
                      f"{slurm_ts(T.on(a.nodes[0], t0 + 0.3))} ***")
    for i, h in enumerate(a.nodes):
        if h not in culprits:
            T.agent_sigterm(a, p, h, t0 + 0.5 + 0.02 * i)
    for i, h in enumerate(a.nodes):
        if h not in culprits:
            T.L.add(a.E - 1.2 + 0.01 * i, f"srun: error: {h}: task {i}: Terminated")
    T.L.add(a.E - 0.8, f"srun: Force Terminated StepId={a.job}.0")


def end_mount(a: Att, p: Pids, T: TrainLog, rng: random.Random, info: dict) -> None:
    h = a.host
    i = a.nodes.index(h)
    T.L.add(a.R, f"slurmstepd: error: couldn't chdir to `{CODE}': No such file or directory: going to /tmp instead")
    info["chdir_error_ts"] = a.R
    tt = a.R + 0.9
    pre = f"{glog_py(T.on(h, tt), 'W')} {p.agent[h]} torch/distributed/run.py:757] "
    T.L.many(tt, [pre, pre + "*" * 41, pre + "Setting OMP_NUM_THREADS environment variable for each process to be "
                  "1 in default, to avoid your system being overloaded, please further tune the variable for "
                  "optimal performance in your application as needed. ", pre + "*" * 41])
    for d in range(GPN):
        T.L.add(a.R + 1.6 + 0.01 * d, f"/usr/bin/python3: can't open file '{CODE}/pretrain_gpt.py': [Errno 2] "
                                      f"No such file or directory")
    tf = a.R + 2.2
    ents = [(i * GPN + d, d, 2, p.worker[h, d], "To enable traceback see: https://pytorch.org/docs/stable/"
             "elastic/errors.html") for d in range(GPN)]
    T.L.add(tf, f"{glog_py(T.on(h, tf), 'E')} {p.agent[h]} torch/distributed/elastic/multiprocessing/api.py:833] "
                f"failed (exitcode: 2) local_rank: 0 (pid: {p.worker[h, 0]}) of binary: /usr/bin/python3")
    T.L.many(tf + 0.01, child_failed(T.on(h, tf), h, ents, ents[0]))
    kill_rest(a, p, T, [h], a.R + 2.8)


def nccl_remote(r: int, t: float, rng: random.Random, last: str) -> list[str]:
    msg = (f"[PG 0 Rank {r}] Process group watchdog thread terminated with exception: NCCL error: remote process "
           f"exited or there was a network error, NCCL version {NCCL_VERSION.split('+')[0]}")
    body = [f"[rank{r}]:[{glog_c10(t, 'E', rng)} ProcessGroupNCCL.cpp:1316] {msg}",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
            "Last error:", last]
    return body + ["terminate called after throwing an instance of 'c10::DistBackendError'", f"  what():  {msg}",
                   "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                   "prematurely.", "Last error:", last, ""]


def abort_hosts(a: Att, p: Pids, T: TrainLog, rng: random.Random, hosts: list[str], bad_d: int, t0: float,
                sig: int = 6) -> None:
    name = {6: "SIGABRT", 9: "SIGKILL"}[sig]
    for j, h in enumerate(hosts):
        i = a.nodes.index(h)
        tf = t0 + 0.3 * j
        for d in range(GPN):
            if d != bad_d:
                T.L.add(tf - 0.2, f"{glog_py(T.on(h, tf - 0.2), 'W')} {p.agent[h]} torch/distributed/elastic/"
                                  f"multiprocessing/api.py:858] Sending process {p.worker[h, d]} closing signal "
                                  f"SIGTERM")
        ents = [(i * GPN + d, d, -sig if d == bad_d else -15, p.worker[h, d],
                 f"Signal {sig} ({name}) received by PID {p.worker[h, d]}" if d == bad_d else
                 f"Signal 15 (SIGTERM) received by PID {p.worker[h, d]}") for d in range(GPN)]
        T.L.add(tf, f"{glog_py(T.on(h, tf), 'E')} {p.agent[h]} torch/distributed/elastic/multiprocessing/api.py:"
                    f"833] failed (exitcode: -{sig}) local_rank: {bad_d} (pid: {p.worker[h, bad_d]}) of binary: "
                    f"/usr/bin/python3")
        T.L.many(tf + 0.01, child_failed(T.on(h, tf), h, ents, ents[bad_d]))


def end_ib(a: Att, p: Pids, T: TrainLog, rng: random.Random, info: dict, ev: dict) -> None:
    h = a.host
    idx = a.nodes.index(h)
    trio = [a.nodes[idx - 1], h, a.nodes[idx + 1]]
    d = a.gpu
    te = a.R + 19.0 + rng.uniform(0.1, 0.6)
    info["nccl_error_ts"] = te
    for j, x in enumerate(trio):
        peer = a.nodes[idx + 1] if x == h else h
        last = (f"NET/IB : Got completion from peer {host_ip(peer)}<{ev['port'][x]}> with status=12 opcode=0 len=0 "
                f"vendor err 129 (Recv) localGid {T.fleet.gid[x, d]} remoteGids{T.fleet.gid[peer, d]}")
        tt = te + 0.25 * j
        T.L.many(tt, nccl_remote(rank_of(a, x, d), T.on(x, tt), rng, last))
    abort_hosts(a, p, T, rng, trio, d, te + 2.0)
    kill_rest(a, p, T, trio, te + 3.5)


def end_oom(a: Att, p: Pids, T: TrainLog, rng: random.Random, info: dict, ev: dict) -> None:
    h = a.host
    abort_hosts(a, p, T, rng, [h], a.gpu, a.R + 0.9, sig=9)
    i = a.nodes.index(h)
    t = a.R + 1.5
    T.L.add(t, f"slurmstepd: error: Detected 1 oom_kill event in StepId={a.job}.0. Some of the step tasks have been "
               f"OOM Killed.")
    T.L.add(t + 0.05, f"srun: error: {h}: task {i}: Out Of Memory")
    T.L.add(t + 0.1, f"srun: Terminating StepId={a.job}.0")
    T.L.add(t + 0.3, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT "
                     f"{slurm_ts(T.on(a.nodes[0], t + 0.3))} ***")
    for j, x in enumerate(a.nodes):
        if x != h:
            T.agent_sigterm(a, p, x, t + 0.5 + 0.02 * j)
            T.L.add(a.E - 1.0 + 0.01 * j, f"srun: error: {x}: task {j}: Terminated")
    T.L.add(a.E - 0.6, f"srun: Force Terminated StepId={a.job}.0")
    info["oom_ts"] = a.R


def end_preempt(a: Att, p: Pids, T: TrainLog, rng: random.Random, info: dict, ev: dict) -> None:
    R = a.R
    h0 = a.nodes[0]
    T.L.add(R + 0.05, f"slurmstepd: error: *** JOB {a.job} ON {h0} CANCELLED AT {slurm_ts(T.on(h0, R))} DUE TO "
                      f"PREEMPTION ***")
    T.L.add(R + 0.06, f"slurmstepd: error: *** STEP {a.job}.0 ON {h0} CANCELLED AT {slurm_ts(T.on(h0, R))} DUE TO "
                      f"PREEMPTION ***")
    T.L.add(R + 0.1, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    for i, h in enumerate(a.nodes):
        T.agent_sigterm(a, p, h, R + 0.3 + 0.02 * i)
        if i % 6 == 0:
            tt = R + 1.1 + 0.02 * i
            T.L.many(tt, TR_TB[:11] + [
                f'  File "{PYLIB}/torch/distributed/launcher/api.py", line 255, in launch_agent',
                "    result = agent.run()",
                f'  File "{PYLIB}/torch/distributed/elastic/multiprocessing/api.py", line 79, in '
                "_terminate_process_handler",
                "    raise SignalException(f\"Process {os.getpid()} got signal: {sigval}\", sigval=sigval)",
                f"torch.distributed.elastic.multiprocessing.api.SignalException: Process {p.agent[h]} got signal: 15"])
    for i, h in enumerate(a.nodes):
        T.L.add(a.E - 0.9 + 0.01 * i, f"srun: error: {h}: task {i}: Terminated")
    T.L.add(a.E - 0.4, f"srun: Force Terminated StepId={a.job}.0")


def end_pcie(a: Att, p: Pids, T: TrainLog, rng: random.Random, info: dict, ev: dict) -> None:
    h = a.host
    i = a.nodes.index(h)
    d = a.gpu
    r = i * GPN + d
    te = a.R + 0.8
    tb = ["Traceback (most recent call last):",
          '  File "/checkpoint/llm/meta_rsc/code/pretrain_gpt.py", line 356, in <module>',
          "    pretrain(train_valid_test_datasets_provider,",
          '  File "/checkpoint/llm/meta_rsc/code/megatron/training.py", line 1213, in train',
          "    train_step(forward_step_func,",
          '  File "/checkpoint/llm/meta_rsc/code/megatron/training.py", line 642, in train_step',
          "    model[0].step(lr_kwargs={'increment': increment})",
          '  File "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/engine.py", line 2169, in step',
          "    self._take_model_step(lr_kwargs)",
          "RuntimeError: CUDA error: unspecified launch failure"] + CUDA_TAIL
    T.L.many(te, [f"[rank{r}]: {x}" if x else "" for x in tb])
    info["cuda_error_ts"] = te
    peers = [a.nodes[i - 1], a.nodes[i + 1]]
    tp = a.R + 3.2
    for j, x in enumerate(peers):
        last = (f"NET/IB : Got completion from peer {host_ip(h)}<{ev['port'][x]}> with status=12 opcode=0 len=0 "
                f"vendor err 129 (Recv) localGid {T.fleet.gid[x, d]} remoteGids{T.fleet.gid[h, d]}")
        T.L.many(tp + 0.3 * j, nccl_remote(rank_of(a, x, d), T.on(x, tp + 0.3 * j), rng, last))
    tf = a.R + 2.4
    for dd in range(GPN):
        if dd != d:
            T.L.add(tf - 0.2, f"{glog_py(T.on(h, tf - 0.2), 'W')} {p.agent[h]} torch/distributed/elastic/"
                              f"multiprocessing/api.py:858] Sending process {p.worker[h, dd]} closing signal SIGTERM")
    ents = [(i * GPN + dd, dd, 1 if dd == d else -15, p.worker[h, dd],
             "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html" if dd == d else
             f"Signal 15 (SIGTERM) received by PID {p.worker[h, dd]}") for dd in range(GPN)]
    T.L.add(tf, f"{glog_py(T.on(h, tf), 'E')} {p.agent[h]} torch/distributed/elastic/multiprocessing/api.py:833] "
                f"failed (exitcode: 1) local_rank: {d} (pid: {p.worker[h, d]}) of binary: /usr/bin/python3")
    T.L.many(tf + 0.01, child_failed(T.on(h, tf), h, ents, ents[d]))
    abort_hosts(a, p, T, rng, peers, d, tp + 1.5)
    kill_rest(a, p, T, [h] + peers, a.R + 5.5)


def write_attempt_log(a: Att, fleet: Fleet, p: Pids, T: TrainLog, seed: int, info: dict, ev: dict) -> int:
    rng = random.Random(f"{seed}-log-{a.k}")
    lost = ("rsc2-h012", 5) if a.k == 2 else None
    if a.kind == "init" and a.mode == "filesystem_io":
        T.L.add(a.S, f"START TIME: {date_cmd(T.on(a.nodes[0], a.S))}")
        end_mount(a, p, T, rng, info)
        return 0
    if a.kind == "init":
        T.L.add(a.S, f"START TIME: {date_cmd(T.on(a.nodes[0], a.S))}")
        preflight(a, fleet, T, lost)
        for i, h in enumerate(a.nodes):
            tt = a.S + a.phases[0] + 0.3 + 0.04 * i
            pre = f"{glog_py(T.on(h, tt), 'W')} {p.agent[h]} torch/distributed/run.py:757] "
            T.L.many(tt, [pre, pre + "*" * 41, pre + "Setting OMP_NUM_THREADS environment variable for each "
                          "process to be 1 in default, to avoid your system being overloaded, please further tune "
                          "the variable for optimal performance in your application as needed. ", pre + "*" * 41])
        T.ds(a, a.S + a.phases[0] + 6.0, "real_accelerator.py:161:get_accelerator",
             "Setting ds_accelerator to cuda (auto detect)")
        end_gpu_lost(a, p, T, rng, info)
        return 0
    preflight(a, fleet, T, None)
    startup(a, p, T, rng)
    training(a, T, seed)
    if a.mode == "nvlink_error":
        return end_nvlink(a, p, T, rng, info)
    {"network": end_ib, "host_oom": end_oom, "preemption": end_preempt, "pcie_error": end_pcie}.get(
        a.mode, lambda *x: None)(a, p, T, rng, info, ev)
    if a.kind == "complete":
        T.L.add(a.E - 2.0, f"[after training is done] datetime: {meg_dt(T.on(a.nodes[0], a.E - 2.0))} ")
        T.L.add(a.E - 1.0, f"END TIME: {date_cmd(T.on(a.nodes[0], a.E - 1.0))}")
    return 0


# ----------------------------------------------------------------------------- NCCL logs
def nccl_log(a: Att, h: str, fleet: Fleet, p: Pids, seed: int, ev: dict) -> bytes:
    rng = random.Random(f"{seed}-nccl-{a.k}-{h}")
    i = a.nodes.index(h)
    streams = []
    for d in range(GPN):
        r = i * GPN + d
        w = p.worker[h, d]
        tid = w + rng.randint(400, 1900)
        px = f"{h}:{w}:{w} [{d}] NCCL INFO "
        pt = f"{h}:{w}:{tid} [{d}] NCCL INFO "
        s = [px + f"Bootstrap : Using ibp12s0:{host_ip(h)}<0>",
             px + "NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory "
                  "No plugin found (libnccl-net.so), using internal implementation",
             px + "cudaDriverVersion 12020"]
        if r == 0:
            s.append(f"NCCL version {NCCL_VERSION}")
        s += [pt + "NET/IB : Using " + " ".join(f"[{k}]{NIC_DEV[k]}:1/IB" for k in range(GPN)) +
              f" ; OOB ibp12s0:{host_ip(h)}<0>",
              pt + "Using network IB",
              pt + f"comm {p.comm[h, d]} rank {r} nranks {GPUS} cudaDev {d} busId {BUS[d]}000 - Init START",
              pt + f"Setting affinity for GPU {d} to ffff,ffffffff,00000000,0000ffff,ffffffff",
              pt + "NVLS multicast support is not available on dev " + str(d)]
        for ch in range(24):
            s.append(pt + f"Channel {ch:02d}/24 :    " + " ".join(str((r + k) % GPUS) for k in range(0, 8)))
        s += [pt + f"Trees [0] {(r + 1) % GPUS}/-1/-1->{r}->{(r - 1) % GPUS} [1] -1/-1/-1->{r}->{(r + 8) % GPUS}",
              pt + "P2P Chunksize set to 524288"]
        for ch in range(24):
            s.append(pt + f"Channel {ch:02d}/0 : {r}[{d}] -> {(r + 1) % GPUS}[{(d + 1) % GPN}] via P2P/IPC/read")
        for ch in range(8):
            s.append(pt + f"Channel {ch:02d}/0 : {(r - 8) % GPUS}[{d}] -> {r}[{d}] [receive] via NET/IB/{d}/GDRDMA")
            s.append(pt + f"Channel {ch:02d}/0 : {r}[{d}] -> {(r + 8) % GPUS}[{d}] [send] via NET/IB/{d}/GDRDMA")
        s += [pt + "Connected all rings", pt + "Connected all trees",
              pt + "threadThresholds 8/8/64 | 1280/8/64 | 512 | 512",
              pt + "24 coll channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer",
              pt + f"comm {p.comm[h, d]} rank {r} nranks {GPUS} cudaDev {d} busId {BUS[d]}000 commId {p.commid} "
                   f"- Init COMPLETE"]
        streams.append(s)
    out: list[str] = []
    cur = [0] * GPN
    while any(cur[d] < len(streams[d]) for d in range(GPN)):
        d = rng.randrange(GPN)
        if cur[d] < len(streams[d]):
            out.append(streams[d][cur[d]])
            cur[d] += 1
    if a.k == 6 and h == "rsc2-h002":                 # decoy: harmless async event
        w = p.worker[h, 6]
        out += ["", f"{h}:{w}:{w + 1777} [6] transport/net_ib.cc:93 NCCL WARN NET/IB : {NIC_DEV[6]}:1 Got async "
                    f"event : GID table change"]
    d = a.gpu
    if a.mode == "network" and h in ev["trio"]:
        idx = a.nodes.index(a.host)
        peer = a.nodes[idx + 1] if h == a.host else a.host
        w = p.worker[h, d]
        for rep in range(3):
            out += ["", f"{h}:{w}:{w + 2103} [{d}] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from "
                        f"peer {host_ip(peer)}<{ev['port'][h] if rep == 0 else rng.randint(40000, 61000)}> with "
                        f"status=12 opcode=0 len=0 vendor err 129 (Recv) localGid {fleet.gid[h, d]} remoteGids"
                        f"{fleet.gid[peer, d]}",
                    f"{h}:{w}:{w + 2103} [{d}] NCCL INFO transport/net.cc:1134 -> 6",
                    f"{h}:{w}:{w + 2103} [{d}] NCCL INFO proxy.cc:691 -> 6",
                    f"{h}:{w}:{w + 2103} [{d}] NCCL INFO proxy.cc:874 -> 6 [Progress Thread]"]
    if a.mode == "pcie_error" and h in ev["pcie_peers"]:
        w = p.worker[h, d]
        out += ["", f"{h}:{w}:{w + 2210} [{d}] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
                    f"{host_ip(a.host)}<{ev['port'][h]}> with status=12 opcode=0 len=0 vendor err 129 (Recv) "
                    f"localGid {fleet.gid[h, d]} remoteGids{fleet.gid[a.host, d]}",
                f"{h}:{w}:{w + 2210} [{d}] NCCL INFO transport/net.cc:1134 -> 6"]
    if a.kind == "complete":
        out += [f"{h}:{p.worker[h, dd]}:{p.worker[h, dd]} [{dd}] NCCL INFO comm {p.comm[h, dd]} rank "
                f"{rank_of(a, h, dd)} nranks {GPUS} cudaDev {dd} busId {BUS[dd]}000 - Destroy COMPLETE"
                for dd in range(GPN)]
    data = ("\n".join(out) + "\n").encode()
    if a.k == 4 and h == "rsc2-h013":
        data = data[:-37]                             # the job was killed while this line was written
    return data


# ----------------------------------------------------------------------------- kernel / node logs
NOISE = ["perf: interrupt took too long ({a} > {b}), lowering kernel.perf_event_max_sample_rate to {c}",
         "kauditd_printk_skb: {k} callbacks suppressed",
         "IPv6: ADDRCONF(NETDEV_CHANGE): veth{v}: link becomes ready",
         "audit: type=1400 audit({s}.{k}:{k}): apparmor=\"DENIED\" operation=\"open\" profile=\"snap.lxd.activate\" "
         "name=\"/proc/{k}/mounts\" pid={a} comm=\"snap-exec\" requested_mask=\"r\" denied_mask=\"r\" fsuid=0 ouid=0",
         "nvidia-nvswitch3: SXid (PCI:0000:c1:00.0): 12028, Non-fatal, Link 31 egress non-posted PRIV error "
         "(First)"]


def boot_lines() -> list[tuple[float, str]]:
    x = [(0.0, f"Linux version {KERNEL} (buildd@lcy02-amd64-051) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, GNU ld "
               f"(GNU Binutils for Ubuntu) 2.38) #45-Ubuntu SMP Tue Nov 14 13:37:01 UTC 2023"),
         (0.0, "DMI: NVIDIA DGXA100 920-23687-2530-000/DGXA100, BIOS 1.25 08/28/2023")]
    for k in range(GPN):
        x.append((9.1 + 0.01 * k, f"mlx5_core 0000:{NIC_BUS[k]}:00.0: firmware version: 20.39.1002"))
        x.append((11.0 + 0.01 * k, f"mlx5_core 0000:{NIC_BUS[k]}:00.0 {NIC_IF[k]}: renamed from ib{k}"))
    x.append((18.2, f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {DRIVER}  Fri Feb 16 09:12:38 UTC 2024"))
    for k in range(GPN):
        x.append((31.0 + 0.01 * k, f"mlx5_core 0000:{NIC_BUS[k]}:00.0 {NIC_IF[k]}: Link up"))
    return x


def noise(t0: float, t1: float, rng: random.Random) -> list[tuple[float, str]]:
    out, t = [], t0 + rng.uniform(300, 3000)
    while t < t1:
        tpl = rng.choice(NOISE)
        a = rng.randint(2600, 5200)
        out.append((t, tpl.format(a=a, b=a - 11, c=rng.choice([63000, 50250, 39500]), k=rng.randint(3, 90),
                                  v=f"{rng.getrandbits(28):07x}", s=int(t))))
        t += rng.uniform(900, 6000)
    return out


def render(style: str, host: str, ev, skew: float, boot: float, seed: int) -> bytes:
    frng = random.Random(f"{seed}-frac-{host}-{style}")
    out = []
    for t, m in sorted(ev, key=lambda e: e[0]):
        tt = t + skew + frng.uniform(0, 0.0009)
        d, us = _dt(tt)
        mb = m if isinstance(m, bytes) else m.encode()
        if style == "syslog":
            pre = f"{d:%b} {d.day:2d} {d:%H:%M:%S} {host} kernel: [{tt - boot:12.6f}] "
        elif style == "short-iso":
            pre = f"{d:%Y-%m-%dT%H:%M:%S}+00:00 {host} kernel: "
        else:
            pre = f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}] "
        out.append(pre.encode() + mb)
    return b"\n".join(out) + b"\n"


def journal(host: str, ev, skew: float) -> bytes:
    out = []
    for t, prog, m in sorted(ev, key=lambda e: e[0]):
        d, _ = _dt(t + skew)
        out.append(f"{d:%Y-%m-%dT%H:%M:%S}+00:00 {host} {prog}: {m}")
    return ("\n".join(out) + "\n").encode()


def node_logs(atts: list[Att], fleet: Fleet, seed: int, bundle: Path, ev: dict) -> None:
    a1, a2, a3, a4, a5, a6, a7, a8 = atts
    t_end = a8.E + 1800
    for h in HOSTS:
        rng = random.Random(f"{seed}-kern-{h}")
        boot = fleet.boot[h]
        ev_k = [(boot + dt, m) for dt, m in boot_lines()] + noise(boot, t_end, rng)
        jr: list[tuple[float, str, str]] = []
        n = int(h[-3:])
        style = "syslog" if n % 3 == 0 else ("short-iso" if n % 3 == 1 else "dmesg-T")
        if h == a1.host:
            g = a1.gpu
            ev_k += [(a1.R, f"NVRM: GPU at PCI:{gpu_pci(g)}: {fleet.uuid[h, g]}"),
                     (a1.R, f"NVRM: Xid (PCI:{gpu_pci(g)}): 74, pid={ev['xid74_pid']}, name=pt_main_thread, NVLink: "
                            f"fatal error detected on link 5(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)"),
                     (a1.R + 0.002, f"NVRM: Xid (PCI:{gpu_pci(g)}): 74, pid={ev['xid74_pid']}, name=pt_main_thread, "
                                    f"NVLink: fatal error detected on link 4(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)")]
            for j in range(2):
                tt = a1.R + 243 + 121 * j
                ev_k += [(tt, f"INFO: task pt_main_thread:{ev['xid74_pid'] + j} blocked for more than {120 * (j + 1)} "
                              f"seconds."),
                         (tt, f"      Tainted: P           OE     {KERNEL} #45-Ubuntu"),
                         (tt, '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.')]
            jr.append((a1.E + 420, "nhc[88211]",
                       "Health check failed:  check_nvlink_status: GPU 2 has inactive nvlink"))
            style = "syslog"
        if h == a2.host:                                        # Xid 79 while idle, before job 2
            g = a2.gpu
            ev_k += [(ev["xid79_t"], f"NVRM: GPU at PCI:{gpu_pci(g)}: {fleet.uuid[h, g]}"),
                     (ev["xid79_t"], f"NVRM: Xid (PCI:{gpu_pci(g)}): 79, pid='<unknown>', name=<unknown>, GPU has "
                                     f"fallen off the bus."),
                     (ev["xid79_t"], f"NVRM: GPU {gpu_pci(g)}.0: GPU has fallen off the bus."),
                     (ev["xid79_t"] + 0.4, "NVRM: A GPU crash dump has been created. If possible, please run"),
                     (ev["xid79_t"] + 0.4, "NVRM: nvidia-bug-report.sh as root to collect this data before"),
                     (ev["xid79_t"] + 0.4, "NVRM: the NVIDIA kernel module is unloaded.")]
            jr.append((a2.E + 250, "nhc[90412]", "Health check failed:  check_gpu_count: Expected 8 and found 7"))
            style = "dmesg-T"
        if h == a3.host:
            tl = a3.S - 240.0                                # Lustre client evicted, remount fails
            ev_k += [(tl, "LustreError: 167-0: ckpt-MDT0000-mdc-ffff9b2c3f1e6000: This client was evicted by "
                          "ckpt-MDT0000; in progress operations using this service will fail."),
                     (tl + 2.1, "Lustre: Unmounted ckpt-client"),
                     (tl + 31.0, "LustreError: 15c-8: MGC10.120.250.2@o2ib: Confguration from log ckpt-client "
                                 "failed from MGS -5. Communication error between node & MGS, a bad configuration, "
                                 "or other errors. See syslog for more info"),
                     (tl + 31.1, "LustreError: 4120:0:(super25.c:188:lustre_fill_super()) llite: Unable to mount "
                                 "<unknown>: rc = -5")]
            jr += [(tl + 2.0, "systemd[1]", "checkpoint.mount: Deactivated successfully."),
                   (tl + 5.0, "systemd[1]", "Mounting checkpoint.mount - /checkpoint..."),
                   (tl + 31.1, "mount[4120]", "mount.lustre: mount 10.120.250.2@o2ib:/ckpt at /checkpoint failed: "
                                              "Input/output error"),
                   (tl + 31.2, "systemd[1]", "checkpoint.mount: Mount process exited, code=exited, status=32/n/a"),
                   (tl + 31.2, "systemd[1]", "checkpoint.mount: Failed with result 'exit-code'."),
                   (tl + 31.3, "systemd[1]", "Failed to mount checkpoint.mount - /checkpoint."),
                   (a3.E + 310, "nhc[91233]", "Health check failed:  check_fs_mount:  /checkpoint not mounted")]
        if h == a4.host:
            k = a4.gpu
            ev_k += [(a4.R, f"mlx5_core 0000:{NIC_BUS[k]}:00.0 {NIC_IF[k]}: Link down"),
                     (a4.R + 7.5, f"mlx5_core 0000:{NIC_BUS[k]}:00.0 {NIC_IF[k]}: Link up"),
                     (a4.R + 9.8, f"mlx5_core 0000:{NIC_BUS[k]}:00.0 {NIC_IF[k]}: Link down")]
            jr.append((a4.E + 330, "nhc[77102]", f"Health check failed:  check_hw_ib:  No IB port {NIC_DEV[k]}:1 is "
                                                 f"ACTIVE (LinkUp 200 Gb/sec)."))
        if h == a5.host:
            pid = ev["oom_pid"]
            ev_k += [(a5.R - 0.01, "pt_data_worker invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|"
                                   "__GFP_COMP), order=0, oom_score_adj=0"),
                     (a5.R - 0.01, f"CPU: 61 PID: {pid + 901} Comm: pt_data_worker Tainted: P           OE     "
                                   f"{KERNEL} #45-Ubuntu"),
                     (a5.R, f"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=step_0,mems_allowed=0-1,"
                            f"oom_memcg=/slurm/uid_41033/job_{a5.job},task_memcg=/slurm/uid_41033/job_{a5.job}/step_0/"
                            f"user/task_13,task=pt_main_thread,pid={pid},uid=41033"),
                     (a5.R, f"Memory cgroup out of memory: Killed process {pid} (pt_main_thread) total-vm:"
                            f"412993312kB, anon-rss:198225876kB, file-rss:1187404kB, shmem-rss:2097152kB, UID:41033 "
                            f"pgtables:402556kB oom_score_adj:0"),
                     (a5.R + 0.9, f"oom_reaper: reaped process {pid} (pt_main_thread), now anon-rss:0kB, "
                                  f"file-rss:1024kB, shmem-rss:2097152kB")]
        if h == a7.host:
            bdf = f"0000:{BUS[a7.gpu]}:00.0"
            rp = ROOT_PORT["bd"]
            ev_k += [(a7.R, f"pcieport {rp}: AER: Uncorrected (Fatal) error received: {bdf}"),
                     (a7.R, f"nvidia {bdf}: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction "
                            f"Layer, (Receiver ID)"),
                     (a7.R, f"nvidia {bdf}: AER:   device [10de:20b2] error status/mask=00040000/00000000"),
                     (a7.R, f"nvidia {bdf}: AER:    [18] MalfTLP                (First)"),
                     (a7.R, f"nvidia {bdf}: AER:   TLP Header: 4a000010 bd000000 00000000 00000000"),
                     (a7.R + 0.3, f"nvidia {bdf}: AER: can't recover (no error_detected callback)"),
                     (a7.R + 1.2, f"pcieport {rp}: AER: Root Port link has been reset (0)"),
                     (a7.R + 1.2, f"pcieport {rp}: AER: device recovery failed")]
            style = "short-iso"
        if h == "rsc2-h003":                                   # decoy: corrected AER on a NIC
            for base in (a4.F + 0.35 * (a4.R - a4.F), a6.F + 0.6 * (a6.R - a6.F)):
                nb = "0000:0c:00.0"
                for j in range(3):
                    tt = base + 41 * j
                    ev_k += [(tt, f"pcieport {ROOT_PORT['0c']}: AER: Corrected error received: {nb}"),
                             (tt, f"mlx5_core {nb}: AER: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
                                  f"(Receiver ID)"),
                             (tt, f"mlx5_core {nb}: AER:   device [15b3:101b] error status/mask=00000001/0000e000"),
                             (tt, f"mlx5_core {nb}: AER:    [ 0] RxErr                  (First)")]
        if h == "rsc2-h006":                                   # decoy: row remap event, training continues
            ev_k.append((a8.F + 0.55 * (a8.E - a8.F), f"NVRM: Xid (PCI:{gpu_pci(1)}): 63, pid={ev['xid63_pid']}, "
                                                      f"name=pt_main_thread, Row Remapper: New row marked for "
                                                      f"remapping, reset gpu to activate."))
        if h == IDLE_SPARE:                                    # decoy: NFS blip on the idle spare
            tt = a5.F + 1200
            ev_k += [(tt, "nfs: server rsc-home01 not responding, still trying"),
                     (tt + 0.2, "nfs: server rsc-home01 not responding, still trying"),
                     (tt + 97, "nfs: server rsc-home01 OK")]
            jr.append((a6.F + 400, "nhc[60551]", "Node health check passed"))
        sk = fleet.skew[h]
        nd = bundle / "nodes" / h
        if style == "syslog":
            cut = a4.S if h != a1.host else a1.E + 3600      # logrotate ran here
            old = [e for e in ev_k if e[0] < cut]
            new = [e for e in ev_k if e[0] >= cut]
            put(nd / "kern.log.1.gz", render("syslog", h, old, sk, boot, seed), gz=True)
            put(nd / "kern.log", render("syslog", h, new, sk, boot, seed))
        elif style == "short-iso":
            put(nd / "journal-kernel.log", render("short-iso", h, ev_k, sk, boot, seed))
        else:
            put(nd / "dmesg.log", render("dmesg-T", h, ev_k, sk, boot, seed))
        if jr:
            put(nd / "journal.log", journal(h, jr, sk))


# ----------------------------------------------------------------------------- scheduler
def scheduler(atts: list[Att], bundle: Path, seed: int) -> None:
    rng = random.Random(f"{seed}-sched")
    L = Sink()

    def add(t: float, m: str) -> None:
        L.add(t, f"{ctld_ts(t)} {m}")

    def drain(t: float, h: str, reason: str) -> None:
        add(t, f"update_node: node {h} reason set to: {reason}")
        add(t + 0.001, f"update_node: node {h} state set to DRAINED")

    rows = []
    cpus = 256
    a1, a2, a3, a4, a5, a6, a7, a8 = atts
    for a in atts:
        hl = hostlist(a.nodes)
        end = a.E + rng.uniform(0.01, 0.4)
        submit = a.S - (rng.randint(3, 40) if a.k != 7 else 0)
        if a.k != 7:
            add(submit + 0.2, f"_slurm_rpc_submit_batch_job: JobId={a.job} InitPrio={rng.randint(10000, 99999)} "
                              f"usec={rng.randint(300, 900)}")
        add(a.S + 0.02, f"sched: Allocate JobId={a.job} NodeList={hl} #CPUs={cpus * len(a.nodes)} Partition=learn")
        if a.mode == "preemption":
            add(a.R - 0.5, f"_slurm_rpc_submit_batch_job: JobId=700190 InitPrio={rng.randint(900000, 999999)} usec=402")
            add(a.R, f"preempted JobId={a.job} has been requeued to reclaim resources for JobId=700190")
            add(end, f"_job_complete: JobId={a.job} WTERMSIG 15")
            state, ec = "PREEMPTED", "0:15"
        elif a.mode == "host_oom":
            add(end, f"_job_complete: JobId={a.job} OOM failure")
            add(end + 0.001, f"_job_complete: JobId={a.job} WEXITSTATUS 0")
            state, ec = "OUT_OF_MEMORY", "0:125"
        elif a.kind == "complete":
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 0")
            state, ec = "COMPLETED", "0:0"
        else:
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
            state, ec = "FAILED", "1:0"
        add(end + 0.01, f"_job_complete: JobId={a.job} done")
        rows.append((a.S, f"{a.job}|{RUN}|learn|llm|{cpus * len(a.nodes)}|{state}|{ec}|{slurm_ts(submit)}|"
                          f"{slurm_ts(a.S)}|{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|{len(a.nodes)}|{hl}"))
        stp = {"PREEMPTED": ("CANCELLED", "0:15"), "OUT_OF_MEMORY": ("OUT_OF_MEMORY", "0:125"),
               "COMPLETED": ("COMPLETED", "0:0"), "FAILED": ("FAILED", "1:0")}[state]
        bst, bec = ("CANCELLED", "0:15") if state == "PREEMPTED" else (state, ec)
        rows.append((a.S + 0.1, f"{a.job}.batch|batch|learn|llm|{cpus}|{bst}|{bec}|{slurm_ts(a.S)}|{slurm_ts(a.S)}|"
                                f"{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|1|{a.nodes[0]}"))
        rows.append((a.S + 0.2, f"{a.job}.0|torchrun|learn|llm|{cpus * len(a.nodes)}|{stp[0]}|{stp[1]}|"
                                f"{slurm_ts(a.S + 1)}|{slurm_ts(a.S + 1)}|{slurm_ts(a.E)}|{elapsed(a.E - a.S - 1)}|"
                                f"{len(a.nodes)}|{hl}"))
    # the preemptor (someone's high-priority eval) and the requeue wait
    ps, pe = a6.E + 6.0, a7.S - 150.0
    add(ps, f"sched: Allocate JobId=700190 NodeList={hostlist(a6.nodes[:12])} #CPUs={cpus * 12} Partition=high")
    add(pe, "_job_complete: JobId=700190 WEXITSTATUS 0")
    add(pe + 0.01, "_job_complete: JobId=700190 done")
    rows.append((ps, f"700190|eval-harness|high|eval|{cpus * 12}|COMPLETED|0:0|{slurm_ts(a6.R - 0.5)}|{slurm_ts(ps)}|"
                     f"{slurm_ts(pe)}|{elapsed(pe - ps)}|12|{hostlist(a6.nodes[:12])}"))
    # health checks drain between jobs
    drain(a1.E + 421.3, a1.host, "NHC: check_nvlink_status: GPU 2 has inactive nvlink")
    drain(a2.E + 251.2, a2.host, "NHC: check_gpu_count: Expected 8 and found 7")
    drain(a3.E + 311.7, a3.host, "NHC: check_fs_mount:  /checkpoint not mounted")
    drain(a4.E + 331.0, a4.host, f"NHC: check_hw_ib:  No IB port {NIC_DEV[a4.gpu]}:1 is ACTIVE (LinkUp 200 Gb/sec).")
    add(a7.E + 840.2, f"update_node: node {a7.host} reason set to: AER fatal MalfTLP gpu7 0000:bd:00.0, RMA ticket")
    add(a7.E + 840.3, f"update_node: node {a7.host} state set to DRAINING")
    add(a7.E + 840.9, f"update_node: node {a7.host} state set to DRAINED")
    # a dcgm diag on the idle spare
    dg = a5.F + 2400
    add(dg, f"sched: Allocate JobId=700176 NodeList={IDLE_SPARE} #CPUs={cpus} Partition=maint")
    add(dg + 610, "_job_complete: JobId=700176 WEXITSTATUS 0")
    rows.append((dg, f"700176|dcgm-diag-r3|maint|infra|{cpus}|COMPLETED|0:0|{slurm_ts(dg - 4)}|{slurm_ts(dg)}|"
                     f"{slurm_ts(dg + 610)}|{elapsed(610)}|1|{IDLE_SPARE}"))
    rows.sort(key=lambda r: r[0])
    hdr = "JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"
    put(bundle / "scheduler" / "slurmctld.log", L.render())
    put(bundle / "scheduler" / "sacct.txt", ("\n".join([hdr] + [r for _, r in rows]) + "\n").encode())


# ----------------------------------------------------------------------------- config
def inventory() -> str:
    return f"""# RSC-2-like research cluster (independent campaign meta_rsc)
[providers.{PROVIDER}]
usd_per_gpu_hour = 1.85
support = "rsc-oncall@meta-rsc.example"

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "A100-SXM4-80GB"
gpus_per_node = {GPN}
interconnect = "InfiniBand HDR 8x200G"
nodes = "{hostlist(HOSTS)}"
"""


def run_toml() -> str:
    return f"""# {RUN}: 30B dense decoder, Megatron-DeepSpeed, TP={TP} DP={DP}, ZeRO-1
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}   # global batch {GBS} x seq {SEQ}
flops_per_token = {FLOPS_PER_TOKEN:.3e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --nodes=20 --gpus-per-node=8 --requeue --time=3-00:00:00 train_30b.sbatch"
"""


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts = build(seed)
    fleet = Fleet(seed)
    erng = random.Random(f"{seed}-events")
    a1, a2, a3, a4, a5, a6, a7, a8 = atts
    i4 = a4.nodes.index(a4.host)
    i7 = a7.nodes.index(a7.host)
    ev = {"trio": [a4.nodes[i4 - 1], a4.host, a4.nodes[i4 + 1]],
          "pcie_peers": [a7.nodes[i7 - 1], a7.nodes[i7 + 1]],
          "port": {h: erng.randint(40000, 61000) for h in HOSTS},
          "xid79_t": a2.S - 360.0, "oom_pid": 0, "xid74_pid": 0, "xid63_pid": 0}
    put(bundle / "inventory.toml", inventory().encode())
    rdir = bundle / "runs" / RUN
    put(rdir / "run.toml", run_toml().encode())
    info: dict = {}
    logs: dict[int, TrainLog] = {}
    for a in atts:
        p = Pids(seed, a)
        if a.k == 1:
            ev["xid74_pid"] = p.worker[a.host, a.gpu]
        if a.k == 5:
            ev["oom_pid"] = p.worker[a.host, a.gpu]
        if a.k == 8:
            ev["xid63_pid"] = p.worker["rsc2-h006", 1]
        key = 6 if a.k == 7 else a.k                       # the requeued job appends to its own file
        T = logs.setdefault(key, TrainLog(fleet))
        info[a.k] = {}
        cut = write_attempt_log(a, fleet, p, T, seed, info[a.k], ev)
        if a.k != 6:
            name = f"slurm-{a.job}.out"
            gz = a.k == 8
            put(rdir / f"attempt-{key}" / (name + (".gz" if gz else "")), T.L.render(cut), gz=gz)
        if a.kind != "init":
            for h in a.nodes:
                gzn = a.k in (5, 8)
                put(rdir / f"attempt-{a.k}" / "nccl" / (f"{h}.log" + (".gz" if gzn else "")),
                    nccl_log(a, h, fleet, p, seed, ev), gz=gzn)
    node_logs(atts, fleet, seed, bundle, ev)
    scheduler(atts, bundle, seed)
    cats, total, per = ledger(atts)
    incidents = []
    for j, a in enumerate(atts[:-1]):
        nxt = atts[j + 1]
        inc = {"id": j + 1, "attempt": a.k, "attempts": [a.k], "slurm_job": a.job, "failure_mode": a.mode,
               "blame": ("provider" if a.mode in HARDWARE_MODES else "user"), "host": a.host,
               "cluster": CLUSTER, "provider": PROVIDER, "gpu_index": a.gpu,
               "gpu_pci": gpu_pci(a.gpu) if a.gpu is not None and a.mode != "network" else None,
               "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E), "next_start_ts": iso_z(nxt.S),
               "next_first_step_ts": iso_z(nxt.F) if nxt.F else None, "last_ckpt_step": a.last_ckpt,
               "failed_at_step": a.steps[-1][0] if a.steps else a.load,
               "gpu_hours": per[j], "gpu_hours_lost": round(sum(per[j].values()), 4)}
        incidents.append(inc)
    incidents[0]["symptom"] = "NCCL watchdog timeouts on all 160 ranks 600 s after the Xid 74"
    incidents[1]["fault_ts"] = iso_z(ev["xid79_t"])
    incidents[1]["note"] = ("Xid 79 happened before the attempt started; the first in-attempt error (root_ts) is "
                            "local_rank 7's invalid device ordinal (CUDA renumbered the 7 surviving GPUs)")
    incidents[2]["note"] = "mount of /checkpoint failed at boot on this node only; chdir error at step launch"
    incidents[3]["symptom_hosts"] = [ev["trio"][0], ev["trio"][2]]
    incidents[6]["symptom_hosts"] = ev["pcie_peers"]
    decoys = {
        "rsc2-h015": "attempt 1: its clock is 4.3 s behind, so its watchdog timeout lines come first; a symptom",
        ev["trio"][0]: "attempt 4: NET/IB completion errors as rail peer of rsc2-h009; a symptom",
        ev["trio"][2]: "attempt 4: NET/IB completion errors as rail peer of rsc2-h009; a symptom",
        ev["pcie_peers"][0]: "attempt 7: remote process exited errors because rsc2-h018's rank died; a symptom",
        ev["pcie_peers"][1]: "attempt 7: remote process exited errors because rsc2-h018's rank died; a symptom",
        "rsc2-h003": "PCIe AER Corrected RxErr on a NIC in attempts 4 and 6; training continued at pace",
        "rsc2-h002": "NCCL WARN 'Got async event : GID table change' in attempt 6; harmless",
        "rsc2-h006": "Xid 63 row-remapper event mid attempt 8; training continued at pace",
        IDLE_SPARE: "idle spare: NFS not responding/OK blip, a dcgm-diag job; never in the run"}
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK_A100,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK_A100), 4),
        "first_start_ts": iso_z(a1.S), "last_end_ts": iso_z(a8.E), "clock_skew_s": fleet.skew,
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "nodes": hostlist(a.nodes), "start_ts": iso_z(a.S),
                      "first_step_ts": iso_z(a.F) if a.F else None, "exit_ts": iso_z(a.E), "loaded_step": a.load,
                      "last_step": a.steps[-1][0] if a.steps else a.load, "saves": [n for n, _, _ in a.saves],
                      "end": a.mode or "completed",
                      "log_file": f"runs/{RUN}/attempt-{6 if a.k == 7 else a.k}/slurm-{a.job}.out"
                                  + (".gz" if a.k == 8 else "")} for a in atts],
        "incidents": incidents, "match_on_attempt": False,
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys, "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incidents), 4)},
        "notes": ("Times are the Slurm controller's UTC clock; node clocks are skewed by clock_skew_s. host null "
                  "(preemption) matches any host. Attempts 6 and 7 are two runs of the requeued job 700188 in one "
                  "output file. Ledger: see the meta_rsc.py docstring."),
    }
    put(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output directory (bundle/ and truth.json go here)")
    ap.add_argument("--seed", type=int, default=20261202)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    files = [p for p in (out / "bundle").rglob("*") if p.is_file()]
    print(f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB) and "
          f"{out / 'truth.json'}; total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
