#!/usr/bin/env python3
"""Independent campaign "shipped_logs": evidence exported from central log stores, not copied from nodes.

Written outside the team that writes clusterlab's analysis (only DESIGN.md, the evidence README, the scorer
and campaign1.py / campaign2.py were read). Python 3.11, standard library only, deterministic per --seed
(gzip members with mtime=0 and no name).  Usage: shipped_logs.py --out DIR [--seed N]

The team keeps no per-node files: every node ships its kernel log to Grafana Loki (promtail tailing
/var/log/kern.log), its training output to Elasticsearch (filebeat tailing the per-node srun output files), and the
Slurm daemons log to AWS CloudWatch Logs. For the postmortem they exported what the stores held:

  DIR/bundle/inventory.toml
  DIR/bundle/runs/ship-llama70b/run.toml
  DIR/bundle/exports/README.txt                         the commands the exports came from
  DIR/bundle/exports/loki/kern-part1.logcli.txt          logcli query --forward, default output (attempts 1-3;
                                                         the export was cut: its last line is truncated)
  DIR/bundle/exports/loki/kern-part2.logcli.txt.gz       logcli query without --forward (newest first), gzip
  DIR/bundle/exports/elasticsearch/train-page-000N.json  _search responses (PIT + search_after, 10,000 hits per
                                                         page, sorted by event.ingested then _shard_doc), one line
  DIR/bundle/exports/elasticsearch/train-rest.ndjson.gz  the remaining hits, one hit per line (jq -c '.hits.hits[]')
  DIR/bundle/exports/cloudwatch/slurmctld.filter-log-events.json   aws logs filter-log-events output
  DIR/bundle/exports/cloudwatch/slurmd-errors.insights.csv         Logs Insights query exported as CSV
  DIR/bundle/scheduler/sacct.psv                         sacct -P (pipe-separated)
  DIR/truth.json

No file is split by attempt: attempts come from sacct / slurmctld and from the restarts in the logs. The job id is in
each training file's path (log.file.path /var/log/train/<run>-<jobid>-<host>.log; the batch script's output is
/var/log/train/<run>-<jobid>.batch.log on the first node).

Time: truth times are the true UTC clock (= the Slurm controller's and the stores' clocks). Every compute node's clock
is off by a few seconds (truth clock_skew_s). Three stamps coexist and disagree:
  * the host's own stamp inside a line (kern.log syslog prefix, torchtitan asctime, torchrun/c10d glog prefix) - host
    clock; NCCL INFO/WARN lines, Python tracebacks and warnings have no stamp of their own;
  * the shipper's stamp: filebeat's @timestamp and promtail's entry time = the moment the shipper READ the line, on
    the host's clock (no timestamp-parsing stage is configured);
  * the store's stamp: Elasticsearch event.ingested (ingest pipeline, truncated to the second), CloudWatch
    ingestionTime. Exports are ordered by the store's stamp (ES: event.ingested; Loki: entry time).
    Within one event.ingested second the ES hits follow _shard_doc (shard, then segment order), so lines of one
    file can interleave out of order there; log.offset restores the file order. Loki prints whole seconds only.
  Two shipper stalls make store order differ from event order by minutes: promtail on gpu-a006 stalled for ~27 min
  after its GPU fell off the bus, so its Xid 79 lines carry Loki times AFTER the NCCL watchdog timeouts the other
  hosts printed 10 min after the Xid (the syslog stamp inside the line still says when it happened); filebeat on
  gpu-a011 was stopped by the host OOM, so its torchrun lines about the OOM-killed rank reach Elasticsearch ~4 min
  after the peers' NCCL errors.

Scenario (run "ship-llama70b", Llama 3 70B, torchtitan FSDP 12 x TP 8 = 96 GPUs = 12 nodes x 8 H100-SXM of cluster
kx-1 / provider kestrel; inventory gpu-a[001-015], a013-a015 are spares):
  attempt 1  job 80412  fresh start. ~2.6 h in, Xid 79 on gpu-a006 GPU2 ("GPU has fallen off the bus", Xid 154
             "Node Reboot Required"); that rank stops; 600 s later every other rank's ProcessGroupNCCL watchdog fires
             (Timeout(ms)=600000), torchrun reports SIGABRT children, the step exits 1, job FAILED; gpu-a006 is drained
             ("xid79 gpu2").                                                     [gpu_fell_off_bus, gpu-a006]
  attempt 2  job 80431  (a013 replaces a006). ~1.9 h in, the transceiver of mlx5_4 (ibp77s0) on gpu-a009 overheats:
             "Port module event[error]: module 4, Cable error, High Temperature", "ibp77s0: Link down"; NCCL on
             gpu-a009 warns "NET/IB : mlx5_4:1 Got async event : port error"; ~25 s later the rail-4 ranks on
             gpu-a009 and its ring neighbours gpu-a008 / gpu-a010 get "Got completion from peer ... status=12"
             (transport retry counter exceeded) and ProcessGroupNCCL "remote process exited or there was a network
             error"; the job FAILS. The neighbours are symptoms.                   [network, gpu-a009]
  attempt 3  job 80447  (a014 replaces a009). At a periodic save the NFS checkpoint server ckpt-nfs02 stops
             answering: "nfs: server ckpt-nfs02 not responding, timed out" on EVERY host that mounts it (the 11
             job hosts, the drained a006/a009 and the idle spare a015), hung-task reports on a002 and a012; ~5 min
             later torch.distributed.checkpoint raises CheckpointException (OSError [Errno 5]) and the job FAILS.
             Root cause: the shared server (host null).                              [filesystem_io, host null]
  attempt 4  job 80460  resumes. ~2.2 h in, the global OOM killer on gpu-a011 kills local rank 5 (rank 69)
             ("Out of memory: Killed process ... (pt_main_thread)", constraint global_oom); slurmstepd "Detected 1
             oom_kill event in StepId=80460.0"; srun "task 8: Out Of Memory"; ranks on gpu-a010 / gpu-a012 print
             NCCL "remote process exited" errors before srun kills the step; sacct OUT_OF_MEMORY.
                                                                                     [host_oom, gpu-a011]
  attempt 5  job 80472  (a011's dataloader workers cut, same nodes) healthy until the 6 h Slurm TIME LIMIT
             ("CANCELLED AT ... DUE TO TIME LIMIT", sacct TIMEOUT).                   [time_limit, host null]
  attempt 6  job 80489  completes ("Training completed", sacct COMPLETED).
  Decoys: a harmless Xid 13 on gpu-a004 four minutes before the time limit (training kept stepping at pace);
  "NET/IB : mlx5_2:1 Got async event : GID table change" NCCL WARNs on gpu-a003 (attempts 2 and 4); the rail
  neighbours gpu-a008 / gpu-a010 (attempt 2) and gpu-a010 / gpu-a012 (attempt 4) whose NCCL errors are symptoms;
  the NFS hung-task hosts gpu-a002 / gpu-a012 (attempt 3); the idle spare gpu-a015 (NFS messages in attempt 3, a
  "Link down"/"Link up" pair and a dcgm-diag job during attempt 5). Noise: NCCL INFO init spam on every rank, the
  DataLoader worker-count UserWarning, the torchrun OMP banner, kernel noise (perf, audit, docker veth).

Ledger (truth.json expected_ledger, GPU-hours = 96 GPUs x seconds / 3600), the conventions of campaign1.py /
campaign2.py:
  startup    = attempt start (sacct Start) -> first training step start ("Training starts at step N")
  productive = kept steps (step <= last durable checkpoint of an attempt that failed; all steps of the completed
               attempt), whole step durations
  checkpoint = durations of the saves that completed (+ the tail after the final save of the completed attempt)
  recompute  = end of the attempt's last completed save (or its first step start) -> root event
  hang       = root event -> attempt exit (sacct End). Root events: the Xid 79, the link down, the start of the
               save that never completed (the NFS messages follow within seconds), the OOM kill, the time-limit
               cancel.
  restart    = attempt exit -> next attempt start
  straggler = slowdown = data_stall = idle = 0

Formats, and the public material they were checked against (text written anew, own hosts/times/values):
  * logcli default output "<RFC3339 ts, second precision> <labels minus the common labels, padded> <line>", default
    direction backward (newest first), --forward, -o raw/jsonl, --timezone UTC: grafana/loki pkg/logcli/output/
    default.go (DefaultOutput.FormatAndPrintln: ts.Format(time.RFC3339), padLabel, strings.TrimSpace(line)), LogCLI
    docs on grafana.com ("Common labels: ..." goes to stderr, --limit, --forward, --from/--to), grafana/loki PR
    #3212 (RFC3339Nano --from/--to, --output=jsonl).
  * Elasticsearch _search response {"pit_id","took","timed_out","_shards","hits":{"total":{"value":10000,
    "relation":"gte"},"max_score":null,"hits":[{"_index","_id","_score":null,"_source",...,"sort":[...]}]}}
    (public curl transcripts of _search); filebeat ECS fields @timestamp, host.name, agent.type/version,
    log.file.path, log.offset, input.type, message (joshnguyen08/cybersecurity-homelab #16, epacke/
    logstash-pipeline-tester #281); event.ingested set by an ingest pipeline (elastic/beats PR #49914); @timestamp
    is the shipper's receive time unless a timestamp processor parses the line (common Logstash/Filebeat
    tutorial point).
  * CloudWatch Logs FilterLogEvents output: events[] of logStreamName, timestamp (ms), message, ingestionTime (ms),
    eventId; searchedLogStreams; pages of up to 10,000 events (docs.aws.amazon.com API_FilteredLogEvent,
    API_FilterLogEvents). Logs Insights system fields @timestamp, @message, @logStream, @log, @ingestionTime
    (docs.aws.amazon.com CWL_AnalyzeLogData-discoverable-fields); the console's CSV export with a header of the
    displayed fields and "YYYY-MM-DD HH:MM:SS.mmm" times (see "unsure" in the report).
  * rsyslog traditional kern.log "Dec  1 08:00:00 host kernel: [ 1234.567890] msg" (public syslog excerpts, e.g.
    the AKS OOM transcript found by find_string).
  * NVRM Xid 79 / Xid 154 / Xid 13 line shapes as in campaign1.py (NVIDIA open-gpu-kernel-modules issues).
  * mlx5: "mlx5_core <pci>: mlx5_port_module_event:<line>:(pid 0): Port module event[error]: module N, Cable
    error, High Temperature" (Linux drivers/net/ethernet/mellanox/mlx5/core/events.c mlx5_pme_error table,
    leptonai/gpud kmsg matcher), "mlx5_core <pci> <if>: Link down" / "Link up" (mlx5e_update_carrier).
  * NCCL 2.21 "host:pid:tid [d] transport/net_ib.cc:93 NCCL WARN NET/IB : mlx5_4:1 Got async event : port error"
    (Lightning-AI/lit-llama #380, NVIDIA/nccl #905, #1710), "Got completion from peer <ip><port> with status=12
    opcode=.. len=0 vendor err 129 (Send|Recv) localGid .. remoteGids.." + "transport/net.cc:.. -> 6" (NVIDIA/nccl
    #1710, campaign1.py), "GID table change" (NVIDIA/nccl #1819), init lines as in campaign1/2.
  * Linux OOM killer: "<comm> invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0,
    oom_score_adj=0", "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,
    task_memcg=...,task=...,pid=...,uid=...", "Out of memory: Killed process P (comm) total-vm:..kB, anon-rss:..kB,
    file-rss:..kB, shmem-rss:..kB, UID:.. pgtables:..kB oom_score_adj:0" (mm/oom_kill.c; public transcripts via
    find_string "invoked oom-killer: gfp_mask=0x").
  * Slurm: "slurmstepd: error: Detected 1 oom_kill event in StepId=N.0. Some of the step tasks have been OOM
    Killed." + "srun: error: <node>: task N: Out Of Memory" (nextflow-io/nextflow #5932, snakemake-executor-plugin-
    slurm #371); slurmd log "[ts] [job.step] ..." prefix; "*** JOB %u ON %s CANCELLED AT %s DUE TO TIME LIMIT ***";
    slurmctld "_slurm_rpc_submit_batch_job", "sched: Allocate", "Time limit exhausted for JobId=",
    "_job_complete: JobId=N WEXITSTATUS/WTERMSIG", "update_node: node X reason set to: ...", sacct -P states
    FAILED / OUT_OF_MEMORY / TIMEOUT / COMPLETED (as in campaign1/2).
  * torchtitan (pytorch/torchtitan components/checkpoint.py: "Saving the checkpoint (or staging if async is
    enabled).", "Finished saving the checkpoint (or staging if async is enabled) in X seconds.", "Loading the
    checkpoint from ...", "Finished loading the checkpoint in X seconds."; metrics step line; "[titan] asctime -
    root - LEVEL - msg"); torchrun "[rankN]:" prefixes, elastic agent glog lines, ChildFailedError block,
    c10d ProcessGroupNCCL watchdog lines (as cited in campaign1/2); torch DataLoader worker-count UserWarning.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import math
import random
from datetime import UTC, datetime
from pathlib import Path

# ----------------------------------------------------------------------------- constants
RUN = "ship-llama70b"
CLUSTER, PROVIDER = "kx-1", "kestrel"
GPN = 8
N_NODES = 12
GPUS = N_NODES * GPN                         # 96
TP, DP = 8, 12
LBS, SEQ = 2, 8192
TOKENS_PER_STEP = DP * LBS * SEQ             # 196608
TOKENS_PER_GPU = TOKENS_PER_STEP // GPUS     # 2048
FLOPS_PER_TOKEN = 4.880e11
PEAK_H100_SXM = 989.4e12
BASE_STEP = 2.750
STEP_JITTER = 0.004
SAVE_INTERVAL = 500
LOG_FREQ = 20
WATCHDOG_S = 600
T0 = datetime(2026, 12, 1, 6, 10, 0, tzinfo=UTC).timestamp()
NCCL_VERSION = "2.21.5+cuda12.4"
KERNEL = "5.15.0-127-generic"
CKPT = "/mnt/ckpt/ship-llama70b/checkpoint"
NFS_SERVER = "ckpt-nfs02"
UID = 1000

HOSTS = [f"gpu-a{i:03d}" for i in range(1, 16)]
XID_HOST, XID_GPU = "gpu-a006", 2
IB_HOST, IB_NIC = "gpu-a009", 4
OOM_HOST, OOM_LOCAL = "gpu-a011", 5
XID13_HOST = "gpu-a004"
GID_HOST = "gpu-a003"
HUNG_HOSTS = ["gpu-a002", "gpu-a012"]
SPARE = "gpu-a015"

HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption",
                  "gpu_throttle"]

BUSIDS = ["19000", "3b000", "4c000", "5d000", "9b000", "bb000", "cb000", "db000"]
NIC_DEV = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"]
NIC_IF = ["ibp24s0", "ibp64s0", "ibp79s0", "ibp94s0", "ibp77s0", "ibp157s0", "ibp205s0", "ibp220s0"]
NIC_PCI = ["0000:18:00.0", "0000:40:00.0", "0000:4f:00.0", "0000:5e:00.0",
           "0000:4d:00.0", "0000:9d:00.0", "0000:cd:00.0", "0000:dc:00.0"]


def host_ip(h: str) -> str:
    return f"10.42.7.{30 + int(h[5:])}"


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


def iso_sec_z(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%dT%H:%M:%SZ")


def date_cmd(t: float) -> str:
    d, _ = _split(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def py_asctime(t: float) -> str:
    d, us = _split(t)
    return f"{d:%Y-%m-%d %H:%M:%S},{us // 1000:03d}"


def glog_py(t: float, level: str) -> str:               # torch.distributed.elastic logging
    d, us = _split(t)
    return f"{level}{d:%m%d} {d:%H:%M:%S}.{us:06d}"


def glog_c10(t: float, level: str) -> str:              # c10 logging, ns precision
    d, us = _split(t)
    return f"{level}{d:%m%d} {d:%H:%M:%S}.{us:06d}{(us * 7) % 1000:03d}"


def syslog_ts(t: float) -> str:                         # rsyslog traditional
    d, _ = _split(t)
    return f"{d:%b} {d.day:2d} {d:%H:%M:%S}"


def slurm_ts(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%dT%H:%M:%S")


def slurm_ms(t: float) -> str:
    d, us = _split(t)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{us // 1000:03d}"


def insights_ts(t: float) -> str:
    d, us = _split(t)
    return f"{d:%Y-%m-%d %H:%M:%S}.{us // 1000:03d}"


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
    ranges, start, prev = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        ranges.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
        if n is not None:
            start = prev = n
    return f"{prefix}[{','.join(ranges)}]" if len(nums) > 1 else hosts[0]


def gz_bytes(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=6) as f:
        f.write(data)
    return buf.getvalue()


def write_file(path: Path, data: bytes, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gz_bytes(data) if gz else data)


# ----------------------------------------------------------------------------- timeline
class Attempt:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps: list[tuple[int, float, float]] = []
        self.saves: list[tuple[int, float, float]] = []
        self.failed_save: tuple[int, float] | None = None
        self.R: float | None = None
        self.E: float | None = None


def simulate(a: Attempt, rng: random.Random, train_steps: int) -> bool:
    a.steps, a.saves, a.failed_save = [], [], None
    t, n = a.F, a.load_step
    fail_at = a.F + a.run_for if a.kind in ("xid79", "ib", "oom", "nfs") else None
    while True:
        if a.kind == "complete" and n >= train_steps:
            break
        dur = BASE_STEP * (1.0 + rng.uniform(-STEP_JITTER, STEP_JITTER))
        if a.kind in ("xid79", "ib", "oom") and t + dur > fail_at:
            a.R = float(math.floor(t + 0.45 * dur)) + 0.0
            if not (t < a.R < t + dur):
                a.R = t + 0.45 * dur
            a.E = float(math.ceil(a.R + a.hang_s))
            return bool(a.steps) and a.steps[-1][0] % SAVE_INTERVAL != 0
        if a.kind == "time_limit" and t + dur > a.T:
            a.R = a.T
            a.E = a.T + 2.0
            return bool(a.steps) and a.steps[-1][0] % SAVE_INTERVAL != 0
        a.steps.append((n + 1, t, dur))
        t += dur
        n += 1
        if n % SAVE_INTERVAL == 0:
            if a.kind == "nfs" and t >= fail_at:
                a.failed_save = (n, t)
                a.R = t
                a.E = float(math.ceil(t + a.hang_s))
                return True
            c = round(rng.uniform(58.0, 76.0), 2)
            if a.kind == "time_limit" and t + c > a.T - 20:
                return False
            a.saves.append((n, t, c))
            t += c
    a.R = None
    a.E = float(math.ceil(t + 4.0))
    return True


def build_timeline(seed: int) -> tuple[list[Attempt], int]:
    rng = random.Random(f"{seed}-ship-timeline")
    h = HOSTS
    n1 = h[0:12]
    n2 = [x for x in n1 if x != XID_HOST] + ["gpu-a013"]
    n3 = [x for x in n2 if x != IB_HOST] + ["gpu-a014"]
    specs = [
        dict(k=1, job=80412, nodes=n1, kind="xid79", mode="gpu_fell_off_bus", root_host=XID_HOST, gpu=XID_GPU,
             startup=205 + rng.randint(-8, 8), run_for=2.6 * 3600 + rng.randint(0, 700),
             hang_s=WATCHDOG_S + 41 + rng.randint(0, 6), gap=1500 + rng.randint(-200, 200), limit=24 * 3600),
        dict(k=2, job=80431, nodes=n2, kind="ib", mode="network", root_host=IB_HOST, gpu=IB_NIC,
             startup=298 + rng.randint(-8, 8), run_for=1.9 * 3600 + rng.randint(0, 600),
             hang_s=66 + rng.randint(0, 8), gap=1320 + rng.randint(-150, 150), limit=24 * 3600),
        dict(k=3, job=80447, nodes=n3, kind="nfs", mode="filesystem_io", root_host=None, gpu=None,
             startup=301 + rng.randint(-8, 8), run_for=2.5 * 3600 + rng.randint(0, 600),
             hang_s=322 + rng.randint(-6, 6), gap=2400 + rng.randint(-200, 200), limit=24 * 3600),
        dict(k=4, job=80460, nodes=n3, kind="oom", mode="host_oom", root_host=OOM_HOST, gpu=OOM_LOCAL,
             startup=296 + rng.randint(-8, 8), run_for=2.2 * 3600 + rng.randint(0, 600),
             hang_s=9 + rng.randint(0, 3), gap=1080 + rng.randint(-120, 120), limit=24 * 3600),
        dict(k=5, job=80472, nodes=n3, kind="time_limit", mode="time_limit", root_host=None, gpu=None,
             startup=303 + rng.randint(-8, 8), run_for=None, hang_s=2.0, gap=420 + rng.randint(0, 120),
             limit=6 * 3600),
        dict(k=6, job=80489, nodes=n3, kind="complete", mode=None, root_host=None, gpu=None,
             startup=299 + rng.randint(-8, 8), run_for=None, hang_s=0.0, gap=None, limit=24 * 3600),
    ]
    attempts = [Attempt(**s) for s in specs]
    t_start, load = T0, 0
    train_steps = 10 ** 9
    for a in attempts:
        a.load_step = load
        if a.kind == "complete":
            train_steps = (load // SAVE_INTERVAL) * SAVE_INTERVAL + 3500
        tries = 0
        while True:
            a.S = float(t_start)
            a.F = a.S + a.startup
            a.T = a.S + a.limit
            if simulate(a, random.Random(f"{seed}-ship-steps-{a.k}-{tries}"), train_steps):
                break
            tries += 1
            if a.run_for is not None:
                a.run_for += 37.0
            else:
                a.startup += 41
        if a.kind == "complete" and a.E > a.T:
            raise RuntimeError("the last attempt would hit its time limit")
        ck = [n for n, _, _ in a.saves]
        a.last_ckpt = ck[-1] if ck else a.load_step
        load = a.last_ckpt
        if a.gap is not None:
            t_start = math.ceil(a.E + a.gap)
    return attempts, train_steps


def ledger(attempts: list[Attempt]):
    cats = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute",
                          "hang", "restart", "startup", "idle"], 0.0)
    per_incident = []
    for i, a in enumerate(attempts):
        cats["startup"] += a.F - a.S
        kept = a.last_ckpt if a.kind != "complete" else 10 ** 9
        for n, _, d in a.steps:
            if n <= kept:
                cats["productive"] += d
        for _, _, c in a.saves:
            cats["checkpoint"] += c
        if a.kind == "complete":
            cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        base = (a.saves[-1][1] + a.saves[-1][2]) if a.saves else a.F
        rec, hang = a.R - base, a.E - a.R
        nxt = attempts[i + 1]
        cats["recompute"] += rec
        cats["hang"] += hang
        cats["restart"] += nxt.S - a.E
        per_incident.append(dict(hang=hang, recompute=rec, restart=nxt.S - a.E, startup=nxt.F - nxt.S))
    total_s = attempts[-1].E - attempts[0].S
    assert abs(sum(cats.values()) - total_s) < 1e-6 * total_s, (sum(cats.values()), total_s)
    g = GPUS / 3600.0
    cats_h = {k: round(v * g, 4) for k, v in cats.items()}
    total_h = round(total_s * g, 4)
    # make the rounded categories add up to the rounded total exactly
    diff = round(total_h - sum(cats_h.values()), 4)
    cats_h["productive"] = round(cats_h["productive"] + diff, 4)
    return cats_h, total_h, [{k: round(v * g, 4) for k, v in d.items()} for d in per_incident]


# ----------------------------------------------------------------------------- fleet
class Fleet:
    def __init__(self, seed: int):
        rng = random.Random(f"{seed}-ship-fleet")
        self.skew, self.boot, self.gid, self.uuid, self.serial = {}, {}, {}, {}, {}
        for h in HOSTS:
            self.skew[h] = round(rng.uniform(0.4, 3.6) * rng.choice([-1, 1]), 3)
            self.boot[h] = T0 - rng.randint(2 * 86400, 11 * 86400) + rng.random()
            for g in range(GPN):
                self.gid[h, g] = f"fe80::ba3f:d203:{rng.randint(0, 0xff):x}:{rng.randint(0, 0xffff):x}"
                hx = f"{rng.getrandbits(128):032x}"
                self.uuid[h, g] = f"GPU-{hx[:8]}-{hx[8:12]}-{hx[12:16]}-{hx[16:20]}-{hx[20:]}"
                self.serial[h, g] = f"1654224{rng.randint(0, 999_999):06d}"
        self.skew[XID_HOST] = -2.710
        self.skew[OOM_HOST] = 3.120


class Pids:
    def __init__(self, seed: int, a: Attempt):
        rng = random.Random(f"{seed}-ship-pids-{a.k}")
        self.agent, self.worker, self.tid, self.comm = {}, {}, {}, {}
        for h in a.nodes:
            ag = rng.randint(60_000, 2_400_000)
            self.agent[h] = ag
            for d in range(GPN):
                self.worker[h, d] = ag + 23 + d
                self.tid[h, d] = ag + 23 + d + rng.randint(500, 4000)
                self.comm[h, d] = "0x%x" % (0x5606_0000_0000 + (rng.getrandbits(32) << 4))
        self.comm_id = f"0x{rng.getrandbits(64):016x}"


# ----------------------------------------------------------------------------- line sinks
class Sinks:
    """Everything the stores will hold, in true time."""

    def __init__(self):
        self.train: list[tuple[float, str, str, str]] = []    # (t, host, path, message)
        self.kern: list[tuple[float, str, str]] = []          # (t, host, message)
        self.ctld: list[tuple[float, str]] = []               # (t, message without stamp)
        self.slurmd: list[tuple[float, str, str]] = []        # (t, host, message without stamp)

    def tr(self, t: float, host: str, path: str, msg: str) -> None:
        self.train.append((t, host, path, msg))

    def trx(self, t: float, host: str, path: str, msgs: list[str]) -> None:
        for j, m in enumerate(msgs):
            self.train.append((t + 0.000001 * j, host, path, m))


def node_path(a: Attempt, h: str) -> str:
    return f"/var/log/train/{RUN}-{a.job}-{h}.log"


def batch_path(a: Attempt) -> str:
    return f"/var/log/train/{RUN}-{a.job}.batch.log"


# ----------------------------------------------------------------------------- training output
def loss_at(n: int, rng: random.Random) -> float:
    return 1.88 + 9.7 * math.exp(-n / 300.0) + 0.71 * math.exp(-n / 5000.0) + rng.gauss(0, 0.014)


WARN_DL = ("/usr/local/lib/python3.11/dist-packages/torch/utils/data/dataloader.py:617: UserWarning: This DataLoader "
           "will create 12 worker processes in total. Our suggested max number of worker in current system is 11, "
           "which is smaller than what this DataLoader is going to create. Please be aware that excessive worker "
           "creation might get DataLoader running slow or even freeze, lower the worker number to avoid potential "
           "slowness/freeze if necessary.")

TORCHRUN_TB = [
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 8, in <module>',
    "    sys.exit(main())",
    '  File "/usr/local/lib/python3.11/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py",'
    ' line 355, in wrapper',
    "    return f(*args, **kwargs)",
    '  File "/usr/local/lib/python3.11/dist-packages/torch/distributed/run.py", line 919, in main',
    "    run(args)",
    '  File "/usr/local/lib/python3.11/dist-packages/torch/distributed/run.py", line 910, in run',
    "    elastic_launch(",
    '  File "/usr/local/lib/python3.11/dist-packages/torch/distributed/launcher/api.py", line 138, in __call__',
    "    return launch_agent(self._config, self._entrypoint, list(args))",
    '  File "/usr/local/lib/python3.11/dist-packages/torch/distributed/launcher/api.py", line 269, in launch_agent',
    "    raise ChildFailedError(",
]


def child_failed(t: float, h: str, sk: float, entries: list[tuple[int, int, int, int, str]], root_i: int) -> list[str]:
    """entries: (rank, local_rank, exitcode, pid, traceback text)."""
    def ent(i, e, when):
        r, lr, ec, pid, tb = e
        return [f"[{i}]:", f"  time      : {_split(when)[0]:%Y-%m-%d_%H:%M:%S}", f"  host      : {h}",
                f"  rank      : {r} (local_rank: {lr})", f"  exitcode  : {ec} (pid: {pid})",
                "  error_file: <N/A>", f"  traceback : {tb}"]
    root = entries[root_i]
    others = [e for j, e in enumerate(entries) if j != root_i]
    out = TORCHRUN_TB + ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
                         "=" * 60, "torchtitan.train FAILED", "-" * 60, "Failures:"]
    if others:
        for i, e in enumerate(others, 1):
            out += ent(i, e, t + sk)
    else:
        out.append("  <NO_OTHER_FAILURES>")
    out += ["-" * 60, "Root Cause (first observed failure):"] + ent(0, root, t + sk) + ["=" * 60]
    return out


def titan(t: float, sk: float, rank: int, msg: str, level: str = "INFO") -> str:
    return f"[rank{rank}]:[titan] {py_asctime(t + sk)} - root - {level} - {msg}"


def watchdog(t: float, sk: float, r: int, seq: int, rng: random.Random) -> list[str]:
    numel = rng.choice([1, 8192, 67108864, 117440512])
    ran = WATCHDOG_S * 1000 + rng.randint(5, 900)
    wd = (f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=_ALLGATHER_BASE, "
          f"NumelIn={numel}, NumelOut={numel * DP}, Timeout(ms)={WATCHDOG_S * 1000}) ran for {ran} milliseconds "
          f"before timing out.")
    tt = t + sk
    return [f"[rank{r}]:[{glog_c10(tt, 'E')} ProcessGroupNCCL.cpp:632] {wd}",
            f"[rank{r}]:[{glog_c10(tt + 0.002, 'E')} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank "
            f"{r}] Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL "
            f"work: {seq + 1}, last completed NCCL work: {seq - 1}.",
            f"[rank{r}]:[{glog_c10(tt + 0.0021, 'E')} ProcessGroupNCCL.cpp:646] [Rank {r}] Some NCCL operations "
            f"have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations "
            f"might run on corrupted/incomplete data.",
            f"[rank{r}]:[{glog_c10(tt + 0.0022, 'E')} ProcessGroupNCCL.cpp:652] [Rank {r}] To avoid data "
            f"inconsistency, we are taking the entire process down."]


def remote_error(t: float, sk: float, r: int, last: str) -> list[str]:
    msg = (f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: "
           f"NCCL error: remote process exited or there was a network error, NCCL version {NCCL_VERSION.split('+')[0]}")
    return [f"[rank{r}]:[{glog_c10(t + sk, 'E')} ProcessGroupNCCL.cpp:1595] {msg}",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
            "Last error:", last,
            "terminate called after throwing an instance of 'c10::DistBackendError'",
            f"  what():  {msg}"]


def nccl_init(a: Attempt, h: str, pids: Pids, rng: random.Random) -> list[str]:
    i = a.nodes.index(h)
    nn = len(a.nodes)
    stages = []
    for d in range(GPN):
        r = i * GPN + d
        w, it = pids.worker[h, d], pids.tid[h, d]
        p0, p = f"{h}:{w}:{w} [{d}] NCCL INFO ", f"{h}:{w}:{it} [{d}] NCCL INFO "
        c = pids.comm[h, d]
        st = [p0 + f"Bootstrap : Using {NIC_IF[0]}:{host_ip(h)}<0>",
              p0 + "NET/Plugin: Using internal network plugin.", p0 + "cudaDriverVersion 12040"]
        if r == 0:
            st.append(f"NCCL version {NCCL_VERSION}")
        st += [p + "NET/IB : Using " + " ".join(f"[{k}]{NIC_DEV[k]}:1/IB" for k in range(GPN)) +
               f" [RO]; OOB {NIC_IF[0]}:{host_ip(h)}<0>", p + "Using network IB",
               p + f"ncclCommInitRank comm {c} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} "
                   f"commId {pids.comm_id} - Init START",
               p + f"comm {c} rank {r} nRanks {GPUS} nNodes {nn} localRanks {GPN} localRank {d} MNNVL 0",
               p + f"Channel {d:02d}/0 : {((i - 1) % nn) * GPN + d}[{d}] -> {r}[{d}] [receive] via NET/IB/{d}/GDRDMA",
               p + f"Channel {d:02d}/0 : {r}[{d}] -> {((i + 1) % nn) * GPN + d}[{d}] [send] via NET/IB/{d}/GDRDMA",
               p + "Connected all rings", p + "Connected all trees",
               p + f"comm {c} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} "
                   f"commId {pids.comm_id} - Init COMPLETE"]
        for rr, nr in ((d, TP), (i, DP)):
            cc = "0x%x" % (0x5606_0000_0000 + (rng.getrandbits(32) << 4))
            cid = f"0x{rng.getrandbits(64):016x}"
            st += [p + f"ncclCommInitRank comm {cc} rank {rr} nranks {nr} cudaDev {d} nvmlDev {d} busId "
                       f"{BUSIDS[d]} commId {cid} - Init START",
                   p + f"comm {cc} rank {rr} nranks {nr} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} "
                       f"commId {cid} - Init COMPLETE"]
        stages.append(st)
    out, cur = [], [0] * GPN
    while any(cur[d] < len(stages[d]) for d in range(GPN)):
        d = rng.randrange(GPN)
        if cur[d] < len(stages[d]):
            out.append(stages[d][cur[d]])
            cur[d] += 1
    return out


def attempt_output(a: Attempt, fleet: Fleet, pids: Pids, sinks: Sinks, seed: int, train_steps: int, info: dict):
    rng = random.Random(f"{seed}-ship-train-{a.k}")
    S, F = a.S, a.F
    bp = batch_path(a)
    b0 = a.nodes[0]
    sk0 = fleet.skew[b0]
    sinks.tr(S, b0, bp, f"START TIME: {date_cmd(S + sk0)}")
    sinks.tr(S + 0.02, b0, bp,
             f"+ srun --kill-on-bad-exit=1 --output=/var/log/train/%x-%j-%N.log torchrun --nnodes={len(a.nodes)} "
             f"--nproc_per_node={GPN} --rdzv_backend=c10d --rdzv_endpoint={b0}:29500 --local-ranks-filter 0 "
             f"--role rank --tee 3 -m torchtitan.train --job.config_file llama3_70b.toml --checkpoint.enable "
             f"--checkpoint.interval {SAVE_INTERVAL} --metrics.log_freq {LOG_FREQ} --comm.train_timeout_seconds "
             f"{WATCHDOG_S} --training.steps {train_steps}")
    for i, h in enumerate(a.nodes):
        sk, path = fleet.skew[h], node_path(a, h)
        r0 = i * GPN
        tt = S + 31.0 + 0.07 * i
        p = f"{glog_py(tt + sk, 'W')} {pids.agent[h]} torch/distributed/run.py:793] "
        sinks.trx(tt, h, path, [p, p + "*" * 41,
                                p + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default,"
                                    " to avoid your system being overloaded, please further tune the variable for "
                                    "optimal performance in your application as needed. ", p + "*" * 41])
        ti = S + 47.0 + 0.05 * i

        def T(t, msg, level="INFO", _h=h, _sk=sk, _r0=r0, _path=path):
            sinks.tr(t, _h, _path, titan(t, _sk, _r0, msg, level))

        T(ti, "Starting job: Llama 3 70B training")
        T(ti + 0.3, f"Building 2-D device mesh with ['dp_shard', 'tp'], [{DP}, {TP}]")
        sinks.trx(ti + 2.0, h, path, nccl_init(a, h, pids, random.Random(f"{seed}-ship-nccl-{a.k}-{h}")))
        T(ti + 22.0, "Model llama3 70B size: 70,553,706,496 total parameters")
        T(ti + 27.0, "Applied FSDP to the model")
        T(ti + 30.0, f"Peak FLOPS used for computing MFU: {PEAK_H100_SXM:.3e}")
        T(ti + 30.4, f"Checkpointing active. Checkpoints will be loaded from and saved to {CKPT}")
        T(ti + 30.6, f"Trainer is initialized with {LBS * SEQ} tokens per DP rank, {TOKENS_PER_STEP} tokens per "
                     f"train step, gradient accumulation steps 1, maximum context length {SEQ}, total steps "
                     f"{train_steps} (warmup 2000)")
        if a.load_step:
            t0 = ti + 32.0
            T(t0, f"Loading the checkpoint from {CKPT}/step-{a.load_step}.")
            T(F - 1.5, f"Finished loading the checkpoint in {F - 1.5 - t0:.2f} seconds.")
        else:
            T(ti + 32.0, "No checkpoint was provided, this is a fresh start.")
        sinks.trx(F - 0.6, h, path, [f"[rank{r0}]:{WARN_DL}", f"[rank{r0}]:  warnings.warn("])
        T(F, f"Training starts at step {a.load_step + 1}")
        if h == GID_HOST and a.k in (2, 4):            # harmless NCCL WARNs
            tw = F + 0.37 * (a.R - F)
            for d in (2, 6):
                sinks.tr(tw + 0.01 * d, h, path, f"{h}:{pids.worker[h, d]}:{pids.tid[h, d] + 9} [{d}] "
                                                 f"transport/net_ib.cc:93 NCCL WARN NET/IB : {NIC_DEV[2]}:1 Got async "
                                                 f"event : GID table change")
        # step lines of this node's local rank 0
        lrng = random.Random(f"{seed}-ship-loss-{a.k}")
        t_last, last_n = F, a.load_step
        save_at = {n: (ts, c) for n, ts, c in a.saves}
        for n, ts, dur in a.steps:
            end = ts + dur
            if n == 1 or n % LOG_FREQ == 0:
                since, last_n = n - last_n, n
                tps = since * TOKENS_PER_GPU / (end - t_last)
                mfu = 100 * FLOPS_PER_TOKEN * tps / PEAK_H100_SXM
                gn = 0.17 + 2.9 * math.exp(-n / 600.0) + abs(lrng.gauss(0, 0.02))
                T(end, f"step: {n:2}  loss: {loss_at(n, lrng):8.5f}  grad_norm: {gn:7.4f}  memory: 58.91GiB(74.47%)  "
                       f"tps: {round(tps):,}  tflops: {FLOPS_PER_TOKEN * tps / 1e12:,.2f}  mfu: {mfu:.2f}%")
                t_last = end
            if n in save_at:
                s0, c = save_at[n]
                T(s0 + 0.01, "Saving the checkpoint (or staging if async is enabled).")
                T(s0 + c, f"Finished saving the checkpoint (or staging if async is enabled) in {c - 0.01:.2f} seconds.")
        if a.failed_save and a.kind == "nfs":
            T(a.failed_save[1] + 0.01, "Saving the checkpoint (or staging if async is enabled).")
        if a.kind == "complete":
            T(a.E - 3.4, "Sleeping 2 seconds for other ranks to complete")
            T(a.E - 1.3, "Training completed")
    {"xid79": end_xid79, "ib": end_ib, "nfs": end_nfs, "oom": end_oom, "time_limit": end_time_limit,
     "complete": end_complete}[a.kind](a, fleet, pids, sinks, rng, info)


def srun_exits(a, sinks, t, hosts, how):
    bp, b0 = batch_path(a), a.nodes[0]
    for j, h in enumerate(hosts):
        sinks.tr(t + 0.01 * j, b0, bp, f"srun: error: {h}: task {a.nodes.index(h)}: {how}")


def end_xid79(a, fleet, pids, sinks, rng, info):
    R, E = a.R, a.E
    seq = 61_000 + rng.randint(0, 4000)
    first = None
    for i, h in enumerate(a.nodes):
        sk, path = fleet.skew[h], node_path(a, h)
        for d in range(GPN):
            if h == XID_HOST and d == XID_GPU:
                continue
            r = i * GPN + d
            tw = R + WATCHDOG_S + rng.uniform(0.1, 2.5)
            first = tw if first is None else min(first, tw)
            sinks.trx(tw, h, path, watchdog(tw, sk, r, seq, rng))
            sinks.tr(tw + 0.05, h, path, f"{h}:{pids.worker[h, d]}:{pids.tid[h, d] + 4} [{d}] NCCL INFO comm "
                                         f"{pids.comm[h, d]} rank {r} nranks {GPUS} cudaDev {d} busId {BUSIDS[d]} "
                                         f"- Abort COMPLETE")
    info["watchdog_first"] = first
    tf = R + WATCHDOG_S + 5.0
    for i, h in enumerate(a.nodes):
        sk, path, ag = fleet.skew[h], node_path(a, h), pids.agent[h]
        t = tf + 0.11 * i
        ents = []
        for d in range(GPN):
            if h == XID_HOST and d == XID_GPU:
                ents.append((i * GPN + d, d, -9, pids.worker[h, d], f"Signal 9 (SIGKILL) received by PID "
                                                                     f"{pids.worker[h, d]}"))
            else:
                ents.append((i * GPN + d, d, -6, pids.worker[h, d], f"Signal 6 (SIGABRT) received by PID "
                                                                     f"{pids.worker[h, d]}"))
        root_i = 0 if not (h == XID_HOST and XID_GPU == 0) else 1
        if h == XID_HOST:
            sinks.tr(t - 0.5, h, path, f"{glog_py(t - 0.5 + sk, 'W')} {ag} torch/distributed/elastic/multiprocessing/"
                                       f"api.py:914] Unable to shutdown process {pids.worker[h, XID_GPU]} via "
                                       f"Signals.SIGTERM, forcefully exiting via Signals.SIGKILL")
        sinks.tr(t, h, path, f"{glog_py(t + sk, 'E')} {ag} torch/distributed/elastic/multiprocessing/api.py:869] "
                             f"failed (exitcode: -6) local_rank: {ents[root_i][1]} (pid: {ents[root_i][3]}) of "
                             f"binary: /usr/bin/python3")
        sinks.trx(t + 0.01, h, path, child_failed(t, h, sk, ents, root_i))
    srun_exits(a, sinks, E - 3.0, a.nodes, "Exited with exit code 1")
    sinks.tr(E - 2.5, a.nodes[0], batch_path(a), f"srun: Terminating StepId={a.job}.0")


def end_ib(a, fleet, pids, sinks, rng, info):
    R, E = a.R, a.E
    idx = a.nodes.index(IB_HOST)
    prev_h, next_h = a.nodes[idx - 1], a.nodes[(idx + 1) % len(a.nodes)]
    d = IB_NIC
    # async event in every process of the host (each opened mlx5_4)
    for dd in range(GPN):
        sinks.tr(R + 0.02 + 0.003 * dd, IB_HOST, node_path(a, IB_HOST),
                 f"{IB_HOST}:{pids.worker[IB_HOST, dd]}:{pids.tid[IB_HOST, dd] + 2} [{dd}] transport/net_ib.cc:93 "
                 f"NCCL WARN NET/IB : {NIC_DEV[d]}:1 Got async event : port error")
    t_err = R + 24.0 + rng.uniform(0.1, 1.5)
    info["nccl_error_ts"] = t_err
    ports = {}
    for j, (h, peer, op, kind) in enumerate([(IB_HOST, next_h, 0, "Send"), (prev_h, IB_HOST, 0, "Send"),
                                             (next_h, IB_HOST, 1, "Recv")]):
        i = a.nodes.index(h)
        r = i * GPN + d
        sk, path = fleet.skew[h], node_path(a, h)
        w, pt = pids.worker[h, d], pids.tid[h, d] + 6
        port = rng.randint(40000, 60999)
        ports[h] = port
        last = (f"NET/IB : Got completion from peer {host_ip(peer)}<{port}> with status=12 opcode={op} len=0 vendor "
                f"err 129 ({kind}) localGid {fleet.gid[h, d]} remoteGids{fleet.gid[peer, d]}")
        tt = t_err + 0.3 * j
        sinks.trx(tt, h, path, [f"{h}:{w}:{pt} [{d}] transport/net_ib.cc:1696 NCCL WARN {last}",
                                f"{h}:{w}:{pt} [{d}] NCCL INFO transport/net.cc:1302 -> 6",
                                f"{h}:{w}:{pt} [{d}] NCCL INFO proxy.cc:698 -> 6",
                                f"{h}:{w}:{pt} [{d}] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]"])
        sinks.trx(tt + 0.4, h, path, remote_error(tt + 0.4, sk, r, last))
        tf = tt + 2.2
        ag = pids.agent[h]
        ents = [(i * GPN + x, x, -6 if x == d else -15, pids.worker[h, x],
                 f"Signal {6 if x == d else 15} ({'SIGABRT' if x == d else 'SIGTERM'}) received by PID "
                 f"{pids.worker[h, x]}") for x in range(GPN)]
        for x in range(GPN):
            if x != d:
                sinks.tr(tf - 0.2, h, path, f"{glog_py(tf - 0.2 + sk, 'W')} {ag} torch/distributed/elastic/"
                                            f"multiprocessing/api.py:897] Sending process {pids.worker[h, x]} closing "
                                            f"signal SIGTERM")
        sinks.tr(tf, h, path, f"{glog_py(tf + sk, 'E')} {ag} torch/distributed/elastic/multiprocessing/api.py:869] "
                              f"failed (exitcode: -6) local_rank: {d} (pid: {pids.worker[h, d]}) of binary: "
                              f"/usr/bin/python3")
        sinks.trx(tf + 0.01, h, path, child_failed(tf, h, sk, ents, d))
    trio = [prev_h, IB_HOST, next_h]
    ts = t_err + 4.0
    srun_exits(a, sinks, ts, trio, "Exited with exit code 1")
    b0, bp = a.nodes[0], batch_path(a)
    sinks.tr(ts + 0.2, b0, bp, f"srun: Terminating StepId={a.job}.0")
    sinks.tr(ts + 0.4, b0, bp, f"slurmstepd: error: *** STEP {a.job}.0 ON {b0} CANCELLED AT {slurm_ts(ts + 0.4)} ***")
    for i, h in enumerate(a.nodes):
        if h in trio:
            continue
        tt = ts + 0.7 + 0.02 * i
        sinks.tr(tt, h, node_path(a, h), f"{glog_py(tt + fleet.skew[h], 'W')} {pids.agent[h]} torch/distributed/"
                                         f"elastic/agent/server/api.py:704] Received 15 death signal, shutting down "
                                         f"workers")
    srun_exits(a, sinks, E - 1.5, [h for h in a.nodes if h not in trio], "Terminated")
    sinks.tr(E - 1.0, b0, bp, f"srun: Force Terminated StepId={a.job}.0")


DCP_TB = [
    "Traceback (most recent call last):",
    '  File "/workspace/torchtitan/torchtitan/train.py", line 672, in <module>',
    "    trainer.train()",
    '  File "/usr/local/lib/python3.11/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py",'
    ' line 355, in wrapper',
    "    return f(*args, **kwargs)",
    '  File "/workspace/torchtitan/torchtitan/train.py", line 601, in train',
    "    self.checkpointer.save(",
    '  File "/workspace/torchtitan/torchtitan/components/checkpoint.py", line 521, in save',
    "    self.dcp_save(",
    '  File "/workspace/torchtitan/torchtitan/components/checkpoint.py", line 397, in dcp_save',
    "    ret = dcp.save(state_dict, storage_writer=storage_writer, checkpoint_id=checkpoint_id)",
    '  File "/usr/local/lib/python3.11/dist-packages/torch/distributed/checkpoint/state_dict_saver.py", line 344, '
    'in _save_state_dict',
    '    all_writes = distW.all_gather("write", write_data)',
    '  File "/usr/local/lib/python3.11/dist-packages/torch/distributed/checkpoint/utils.py", line 231, in all_gather',
    "    raise CheckpointException(step, node_failures)",
]


def end_nfs(a, fleet, pids, sinks, rng, info):
    E = a.E
    tf = E - 11.0
    failed = sorted(rng.sample(range(GPUS), 19))
    body = DCP_TB + [f"torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:"
                     f"dict_keys({failed})"]
    for r in failed[:2]:
        body += [f"Traceback (most recent call last): (RANK {r})",
                 '  File "/usr/local/lib/python3.11/dist-packages/torch/distributed/checkpoint/filesystem.py", '
                 'line 424, in _write_files_from_queue',
                 "    stream.flush()",
                 "OSError: [Errno 5] Input/output error"]
    info["dcp_exception_ts"] = tf
    for i, h in enumerate(a.nodes):
        sk, path, ag = fleet.skew[h], node_path(a, h), pids.agent[h]
        r0 = i * GPN
        sinks.trx(tf + 0.1 * i, h, path, [f"[rank{r0}]: {ln}" for ln in body])
        t = tf + 2.0 + 0.07 * i
        ents = [(r0 + d, d, 1, pids.worker[h, d], "To enable traceback see: https://pytorch.org/docs/stable/"
                                                  "elastic/errors.html") for d in range(GPN)]
        sinks.tr(t, h, path, f"{glog_py(t + sk, 'E')} {ag} torch/distributed/elastic/multiprocessing/api.py:869] "
                             f"failed (exitcode: 1) local_rank: 0 (pid: {pids.worker[h, 0]}) of binary: "
                             f"/usr/bin/python3")
        sinks.trx(t + 0.01, h, path, child_failed(t, h, sk, ents, 0))
    srun_exits(a, sinks, E - 3.0, a.nodes, "Exited with exit code 1")
    sinks.tr(E - 2.0, a.nodes[0], batch_path(a), f"srun: Terminating StepId={a.job}.0")


def end_oom(a, fleet, pids, sinks, rng, info):
    R, E = a.R, a.E
    i = a.nodes.index(OOM_HOST)
    d = OOM_LOCAL
    r = i * GPN + d
    pid = pids.worker[OOM_HOST, d]
    info["oom_pid"], info["oom_rank"] = pid, r
    # peers of the killed rank notice first (their shippers are healthy)
    for j, nb in enumerate([a.nodes[i - 1], a.nodes[(i + 1) % len(a.nodes)]]):
        k = a.nodes.index(nb)
        rr = k * GPN + d
        tt = R + 1.6 + 0.4 * j
        last = (f"NET/IB : Got completion from peer {host_ip(OOM_HOST)}<{rng.randint(40000, 60999)}> with status=5 "
                f"opcode=0 len=0 vendor err 249 (Recv) localGid {fleet.gid[nb, d]} remoteGids{fleet.gid[OOM_HOST, d]}")
        w = pids.worker[nb, d]
        sinks.trx(tt, nb, node_path(a, nb), [f"{nb}:{w}:{pids.tid[nb, d] + 6} [{d}] transport/net_ib.cc:1696 NCCL "
                                             f"WARN {last}",
                                             f"{nb}:{w}:{pids.tid[nb, d] + 6} [{d}] NCCL INFO transport/net.cc:1302 "
                                             f"-> 6"])
        sinks.trx(tt + 0.3, nb, node_path(a, nb), remote_error(tt + 0.3, fleet.skew[nb], rr, last))
        info.setdefault("peer_error_ts", tt)
    sk, path, ag = fleet.skew[OOM_HOST], node_path(a, OOM_HOST), pids.agent[OOM_HOST]
    tf = R + 0.9
    for x in range(GPN):
        if x != d:
            sinks.tr(tf - 0.1, OOM_HOST, path, f"{glog_py(tf - 0.1 + sk, 'W')} {ag} torch/distributed/elastic/"
                                               f"multiprocessing/api.py:897] Sending process "
                                               f"{pids.worker[OOM_HOST, x]} closing signal SIGTERM")
    sinks.tr(tf, OOM_HOST, path, f"{glog_py(tf + sk, 'E')} {ag} torch/distributed/elastic/multiprocessing/api.py:869] "
                                 f"failed (exitcode: -9) local_rank: {d} (pid: {pid}) of binary: /usr/bin/python3")
    ents = [(i * GPN + x, x, -9 if x == d else -15, pids.worker[OOM_HOST, x],
             f"Signal {9 if x == d else 15} ({'SIGKILL' if x == d else 'SIGTERM'}) received by PID "
             f"{pids.worker[OOM_HOST, x]}") for x in range(GPN)]
    sinks.trx(tf + 0.01, OOM_HOST, path, child_failed(tf, OOM_HOST, sk, ents, d))
    b0, bp = a.nodes[0], batch_path(a)
    sinks.tr(R + 1.4, b0, bp, f"slurmstepd: error: Detected 1 oom_kill event in StepId={a.job}.0. Some of the step "
                              f"tasks have been OOM Killed.")
    sinks.tr(R + 1.5, b0, bp, f"srun: error: {OOM_HOST}: task {i}: Out Of Memory")
    sinks.tr(R + 1.7, b0, bp, f"srun: Terminating StepId={a.job}.0")
    sinks.tr(R + 1.9, b0, bp, f"slurmstepd: error: *** STEP {a.job}.0 ON {b0} CANCELLED AT {slurm_ts(R + 1.9)} ***")
    sinks.slurmd.append((R + 1.35, OOM_HOST, f"[{a.job}.0] error: Detected 1 oom_kill event in StepId={a.job}.0. "
                                             f"Some of the step tasks have been OOM Killed."))
    for k, h in enumerate(a.nodes):
        if h == OOM_HOST:
            continue
        tt = R + 2.3 + 0.02 * k
        sinks.tr(tt, h, node_path(a, h), f"{glog_py(tt + fleet.skew[h], 'W')} {pids.agent[h]} torch/distributed/"
                                         f"elastic/agent/server/api.py:704] Received 15 death signal, shutting down "
                                         f"workers")
    srun_exits(a, sinks, E - 1.6, [h for h in a.nodes if h != OOM_HOST], "Terminated")
    sinks.tr(E - 1.0, b0, bp, f"srun: Force Terminated StepId={a.job}.0")


def end_time_limit(a, fleet, pids, sinks, rng, info):
    T = a.T
    b0, bp = a.nodes[0], batch_path(a)
    sinks.tr(T + 0.02, b0, bp, f"slurmstepd: error: *** JOB {a.job} ON {b0} CANCELLED AT {slurm_ts(T)} DUE TO TIME "
                               f"LIMIT ***")
    sinks.tr(T + 0.05, b0, bp, f"slurmstepd: error: *** STEP {a.job}.0 ON {b0} CANCELLED AT {slurm_ts(T)} DUE TO "
                               f"TIME LIMIT ***")
    sinks.tr(T + 0.07, b0, bp, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    for i, h in enumerate(a.nodes):
        tt = T + 0.3 + 0.02 * i
        sk, ag = fleet.skew[h], pids.agent[h]
        sinks.tr(tt, h, node_path(a, h), f"{glog_py(tt + sk, 'W')} {ag} torch/distributed/elastic/agent/server/"
                                         f"api.py:704] Received 15 death signal, shutting down workers")
        if i % 4 == 0:
            sinks.trx(tt + 0.6, h, node_path(a, h), TORCHRUN_TB[:7] + [
                '  File "/usr/local/lib/python3.11/dist-packages/torch/distributed/elastic/multiprocessing/api.py", '
                'line 84, in _terminate_process_handler',
                '    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)',
                f"torch.distributed.elastic.multiprocessing.api.SignalException: Process {ag} got signal: 15"])
    srun_exits(a, sinks, a.E - 0.6, a.nodes, "Terminated")
    sinks.slurmd.append((T + 0.03, b0, f"[{a.job}.batch] error: *** JOB {a.job} ON {b0} CANCELLED AT {slurm_ts(T)} "
                                       f"DUE TO TIME LIMIT ***"))
    for h in a.nodes:
        sinks.slurmd.append((T + 0.04, h, f"[{a.job}.0] error: *** STEP {a.job}.0 ON {b0} CANCELLED AT "
                                          f"{slurm_ts(T)} DUE TO TIME LIMIT ***"))


def end_complete(a, fleet, pids, sinks, rng, info):
    b0 = a.nodes[0]
    for i, h in enumerate(a.nodes):
        for d in range(GPN):
            sinks.tr(a.E - 2.0 + 0.001 * d, h, node_path(a, h),
                     f"{h}:{pids.worker[h, d]}:{pids.worker[h, d]} [{d}] NCCL INFO comm {pids.comm[h, d]} rank "
                     f"{i * GPN + d} nranks {GPUS} cudaDev {d} busId {BUSIDS[d]} - Destroy COMPLETE")
    sinks.tr(a.E - 0.5, b0, batch_path(a), f"END TIME: {date_cmd(a.E - 0.5 + fleet.skew[b0])}")


# ----------------------------------------------------------------------------- kernel
NOISE = [
    "perf: interrupt took too long ({a} > {b}), lowering kernel.perf_event_max_sample_rate to {c}",
    "kauditd_printk_skb: {k} callbacks suppressed",
    "docker0: port 1(veth{v}) entered blocking state",
    "docker0: port 1(veth{v}) entered forwarding state",
    "IPv6: ADDRCONF(NETDEV_CHANGE): veth{v}: link becomes ready",
    "audit: type=1400 audit({e}:{k}): apparmor=\"DENIED\" operation=\"open\" class=\"file\" "
    "profile=\"snap.lxd.daemon\" name=\"/proc/{k}/mounts\" pid={n} comm=\"lxd\" requested_mask=\"r\" "
    "denied_mask=\"r\" fsuid=0 ouid=0",
]


def xid13(pci: str, rng: random.Random) -> list[str]:
    gpc, tpc = rng.randint(0, 7), rng.randint(0, 8)
    esr = 0x504730 + 0x800 * gpc
    return [f"NVRM: Xid (PCI:{pci}): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on "
            f"(GPC {gpc}, TPC {tpc}, SM 0): Out Of Range Address",
            f"NVRM: Xid (PCI:{pci}): 13, pid='<unknown>', name=<unknown>, Graphics SM Global Exception on "
            f"(GPC {gpc}, TPC {tpc}, SM 0): Multiple Warp Errors",
            f"NVRM: Xid (PCI:{pci}): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x{esr:x}=0xc07000e "
            f"0x{esr + 4:x}=0x20 0x{esr - 8:x}=0x4c1eb72 0x{esr - 4:x}=0x174"]


def hung(pid: int, secs: int, mod: str) -> list[str]:
    return [f"INFO: task pt_main_thread:{pid} blocked for more than {secs} seconds.",
            f"      Tainted: P           OE     {KERNEL} #137-Ubuntu",
            '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
            f"task:pt_main_thread state:D stack:0     pid:{pid}  ppid:{pid - 23} flags:0x00004002",
            "Call Trace:", " <TASK>", " __schedule+0x2cd/0x890", " schedule+0x69/0x110"] + \
        ([" rpc_wait_bit_killable+0x11/0x70 [sunrpc]", " __rpc_execute+0x14d/0x4c0 [sunrpc]",
          " nfs_writepages+0xc4/0x110 [nfs]", " nfs_file_fsync+0x58/0x160 [nfs]"] if mod == "nfs" else
         [" os_acquire_mutex+0x3f/0x80 [nvidia]", " _nv042330rm+0x1d/0x30 [nvidia]",
          " nvidia_ioctl+0x5e5/0x8e0 [nvidia]", " __x64_sys_ioctl+0x95/0xd0"]) + [" </TASK>"]


def kernel_events(attempts: list[Attempt], fleet: Fleet, pids_by_k: dict, sinks: Sinks, seed: int, info: dict):
    a1, a2, a3, a4, a5, a6 = attempts
    t_from, t_to = a1.S - 1800, a6.E + 1200
    for h in HOSTS:
        hr = random.Random(f"{seed}-ship-kern-{h}")
        t = t_from + hr.uniform(100, 3000)
        while t < t_to:
            m = hr.choice(NOISE).format(a=(x := hr.randint(2501, 6000)), b=x - 8, c=hr.choice([79500, 63750, 50750]),
                                        k=hr.randint(3, 40), v=f"{hr.getrandbits(28):07x}", e=f"{t:.3f}",
                                        n=hr.randint(9000, 40000))
            sinks.kern.append((t, h, m))
            t += hr.uniform(1200, 9000)
    # attempt 1: Xid 79
    R = a1.R
    pci = pci_of(BUSIDS[XID_GPU])
    pid = pids_by_k[1].worker[XID_HOST, XID_GPU]
    for j, m in enumerate([f"NVRM: GPU at PCI:{pci}: {fleet.uuid[XID_HOST, XID_GPU]}",
                           f"NVRM: GPU Board Serial Number: {fleet.serial[XID_HOST, XID_GPU]}",
                           f"NVRM: Xid (PCI:{pci}): 79, pid={pid}, name=pt_main_thread, GPU has fallen off the bus.",
                           f"NVRM: GPU {pci}.0: GPU has fallen off the bus.",
                           f"NVRM: GPU {pci}.0: GPU serial number is {fleet.serial[XID_HOST, XID_GPU]}.",
                           "NVRM: kgspRcAndNotifyAllChannels_IMPL: RC all channels for critical error 79."]):
        sinks.kern.append((R + 0.0001 * j, XID_HOST, m))
    sinks.kern.append((R + 1.2, XID_HOST, f"NVRM: Xid (PCI:{pci}): 154, GPU recovery action changed from 0x0 (None) "
                                          f"to 0x2 (Node Reboot Required)"))
    for secs in (122, 245):
        tt = R + secs + 1.5
        for q, m in enumerate(hung(pid, secs, "nvidia")):
            sinks.kern.append((tt + 0.00001 * q, XID_HOST, m))
    # attempt 2: IB port down on gpu-a009 mlx5_4
    R = a2.R
    sinks.kern.append((R - 0.4, IB_HOST, f"mlx5_core {NIC_PCI[IB_NIC]}: mlx5_port_module_event:1131:(pid 0): Port "
                                         f"module event[error]: module {IB_NIC}, Cable error, High Temperature"))
    sinks.kern.append((R, IB_HOST, f"mlx5_core {NIC_PCI[IB_NIC]} {NIC_IF[IB_NIC]}: Link down"))
    sinks.kern.append((R + 97.0, IB_HOST, f"mlx5_core {NIC_PCI[IB_NIC]} {NIC_IF[IB_NIC]}: Link up"))
    # attempt 3: NFS server outage, every host that mounts it
    n_fail, ts_fail = a3.failed_save
    info["nfs_first_ts"] = None
    for h in HOSTS:
        hr = random.Random(f"{seed}-ship-nfs-{h}")
        first = ts_fail + hr.uniform(3.5, 9.0)
        t = first
        while t < ts_fail + 1380:
            sinks.kern.append((t, h, f"nfs: server {NFS_SERVER} not responding, timed out"))
            t += hr.uniform(25.0, 80.0)
        sinks.kern.append((ts_fail + 1390 + hr.uniform(0, 8), h, f"nfs: server {NFS_SERVER} OK"))
        if info["nfs_first_ts"] is None or first < info["nfs_first_ts"]:
            info["nfs_first_ts"] = first
        if h in HUNG_HOSTS:
            hp = pids_by_k[3].worker[h, hr.randrange(GPN)]
            for secs in (122, 245):
                tt = ts_fail + secs + 3.0
                for q, m in enumerate(hung(hp, secs, "nfs")):
                    sinks.kern.append((tt + 0.00001 * q, h, m))
    # attempt 4: host OOM on gpu-a011
    R = a4.R
    pid = info["oom_pid"]
    cpu = random.Random(f"{seed}-ship-oomcpu").randint(0, 191)
    oom = ["pt_main_thread invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
           "oom_score_adj=0",
           f"CPU: {cpu} PID: {pid + 311} Comm: pt_main_thread Tainted: P           OE     {KERNEL} #137-Ubuntu",
           "Hardware name: Supermicro SYS-821GE-TNHR/X13DEG-OAD, BIOS 2.1 04/12/2024",
           "Call Trace:", " <TASK>", " dump_stack_lvl+0x48/0x70", " dump_header+0x4a/0x250",
           " oom_kill_process+0xf8/0x1e0", " out_of_memory+0x1b6/0x570",
           " __alloc_pages_slowpath.constprop.0+0xb13/0xe70",
           " </TASK>", "Mem-Info:",
           "active_anon:493011774 inactive_anon:1302941 isolated_anon:0",
           "Free swap  = 0kB", "Total swap = 0kB", "536802416 pages RAM",
           f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,"
           f"task_memcg=/system.slice/slurmstepd.scope/job_{a4.job}/step_0/user/task_{a4.nodes.index(OOM_HOST)},"
           f"task=pt_main_thread,pid={pid},uid={UID}",
           f"Out of memory: Killed process {pid} (pt_main_thread) total-vm:1187440316kB, anon-rss:301944812kB, "
           f"file-rss:612044kB, shmem-rss:8388608kB, UID:{UID} pgtables:604112kB oom_score_adj:0"]
    for q, m in enumerate(oom):
        sinks.kern.append((R - 0.35 + 0.0004 * q, OOM_HOST, m))
    sinks.kern.append((R + 1.1, OOM_HOST, f"oom_reaper: reaped process {pid} (pt_main_thread), now anon-rss:0kB, "
                                          f"file-rss:0kB, shmem-rss:8388608kB"))
    # attempt 5: decoys
    rng = random.Random(f"{seed}-ship-xid13")
    t13 = a5.T - 240.0
    for m in xid13(pci_of(BUSIDS[5]), rng):
        sinks.kern.append((t13, XID13_HOST, m))
    info["xid13_ts"] = t13
    ts = a5.F + 0.5 * (a5.T - a5.F)
    sinks.kern.append((ts, SPARE, f"mlx5_core {NIC_PCI[1]} {NIC_IF[1]}: Link down"))
    sinks.kern.append((ts + 412.0, SPARE, f"mlx5_core {NIC_PCI[1]} {NIC_IF[1]}: Link up"))
    info["spare_link_ts"] = ts


# ----------------------------------------------------------------------------- scheduler
def scheduler(attempts: list[Attempt], sinks: Sinks, seed: int) -> bytes:
    rng = random.Random(f"{seed}-ship-sched")
    rows = []
    hdr = "JobID|JobName|User|Partition|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"

    def add(t, msg):
        sinks.ctld.append((t, msg))

    for a in attempts:
        submit = a.S - rng.randint(4, 60)
        hl = hostlist(a.nodes)
        cpus = 224 * len(a.nodes)
        add(submit + rng.uniform(0.001, 0.9), f"_slurm_rpc_submit_batch_job: JobId={a.job} "
                                              f"InitPrio=4294901{rng.randint(100, 999)} usec={rng.randint(300, 900)}")
        add(a.S + rng.uniform(0.001, 0.05), f"sched: Allocate JobId={a.job} NodeList={hl} #CPUs={cpus} Partition=train")
        end = a.E + rng.uniform(0.002, 0.4)
        if a.kind in ("xid79", "ib", "nfs"):
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
            state, ec = "FAILED", "1:0"
            steps = [("batch", "FAILED", "1:0"), ("0", "FAILED", "1:0")]
        elif a.kind == "oom":
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
            state, ec = "OUT_OF_MEMORY", "0:125"
            steps = [("batch", "FAILED", "1:0"), ("0", "OUT_OF_MEMORY", "0:125")]
        elif a.kind == "time_limit":
            add(a.T + 0.002, f"Time limit exhausted for JobId={a.job}")
            add(end, f"_job_complete: JobId={a.job} WTERMSIG 15")
            state, ec = "TIMEOUT", "0:0"
            steps = [("batch", "CANCELLED", "0:15"), ("0", "CANCELLED", "0:15")]
        else:
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 0")
            state, ec = "COMPLETED", "0:0"
            steps = [("batch", "COMPLETED", "0:0"), ("0", "COMPLETED", "0:0")]
        add(end + 0.01, f"_job_complete: JobId={a.job} done")
        if a.kind in ("xid79", "ib"):
            reason = "xid79 gpu2 fell off bus" if a.kind == "xid79" else "ibp77s0 link down, module high temp"
            add(a.E + 700.31, f"update_node: node {a.root_host} reason set to: {reason}")
            add(a.E + 700.32, f"update_node: node {a.root_host} state set to DRAINED")
        rows.append((a.S, f"{a.job}|{RUN}|mlops|train|{cpus}|{state}|{ec}|{slurm_ts(submit)}|{slurm_ts(a.S)}|"
                          f"{slurm_ts(a.E)}|{elapsed_str(a.E - a.S)}|{len(a.nodes)}|{hl}"))
        for sname, sstate, sec in steps:
            nn, nl, cp = (1, a.nodes[0], 224) if sname == "batch" else (len(a.nodes), hl, cpus)
            rows.append((a.S + 0.1, f"{a.job}.{sname}|{'batch' if sname == 'batch' else 'torchrun'}||train|{cp}|"
                                    f"{sstate}|{sec}|{slurm_ts(a.S)}|{slurm_ts(a.S)}|{slurm_ts(a.E)}|"
                                    f"{elapsed_str(a.E - a.S)}|{nn}|{nl}"))
    a5 = attempts[4]
    hc = a5.F + 0.5 * (a5.T - a5.F) - 300
    add(hc - 2.2, f"_slurm_rpc_submit_batch_job: JobId=80481 InitPrio=4294901{rng.randint(100, 999)} usec=377")
    add(hc, f"sched: Allocate JobId=80481 NodeList={SPARE} #CPUs=224 Partition=maint")
    add(hc + 1260.4, "_job_complete: JobId=80481 WEXITSTATUS 0")
    add(hc + 1260.41, "_job_complete: JobId=80481 done")
    rows.append((hc, f"80481|dcgm-diag-r3|root|maint|224|COMPLETED|0:0|{slurm_ts(hc - 2.2)}|{slurm_ts(hc)}|"
                     f"{slurm_ts(hc + 1260.4)}|{elapsed_str(1260.4)}|1|{SPARE}"))
    rows.sort(key=lambda x: x[0])
    return ("\n".join([hdr] + [r for _, r in rows]) + "\n").encode()


# ----------------------------------------------------------------------------- the stores
def es_export(sinks: Sinks, fleet: Fleet, seed: int, info: dict, out_dir: Path, a4: Attempt) -> None:
    rng = random.Random(f"{seed}-ship-es")
    docs = []
    offsets: dict[str, int] = {}
    last_read: dict[str, float] = {}
    last_ingest: dict[str, float] = {}
    backlog_from, backlog_to = a4.R - 40.0, a4.R + 235.0
    for t, h, path, msg in sorted(sinks.train, key=lambda x: (x[0], x[1])):
        read = t + rng.uniform(0.15, 2.4)                        # filebeat read (true time)
        if h == OOM_HOST and backlog_from <= t <= backlog_to:
            read = backlog_to + 4.0 + (t - backlog_from) * 0.002 + rng.uniform(0, 0.3)
        read = max(read, last_read.get(path, 0.0) + 0.000013)   # a harvester reads its file in order
        last_read[path] = read
        ingest = max(read + rng.uniform(0.2, 2.8), last_ingest.get(h, 0.0))   # one output queue per host
        last_ingest[h] = ingest
        off = offsets.get(path, 0)
        offsets[path] = off + len(msg.encode()) + 1
        docs.append((math.floor(ingest), rng.random(), read, h, path, off, msg))
    docs.sort(key=lambda x: (x[0], x[1]))
    info["es_backlog"] = [backlog_from, backlog_to]

    def hit(j, d):
        ing, _, read, h, path, off, msg = d
        day = _split(ing)[0].strftime("%Y.%m.%d")
        _id = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") for _ in range(20))
        return {"_index": f".ds-logs-train-default-{day}-000001", "_id": _id, "_score": None,
                "_source": {"@timestamp": iso_z(read + fleet.skew[h]),
                            "agent": {"type": "filebeat", "version": "8.15.3", "name": h},
                            "ecs": {"version": "8.0.0"}, "event": {"ingested": iso_sec_z(ing)},
                            "host": {"name": h, "hostname": h},
                            "input": {"type": "filestream"},
                            "log": {"file": {"path": path}, "offset": off},
                            "message": msg},
                "sort": [int(ing) * 1000, j]}

    page = 10_000
    n_pages = min(len(docs) // page, 4)
    pit = ("46ToAwMDaWR5BXV1aWQyKwZub2RlXzMAAAAAAAAAACoBYwADaWR4BXV1aWQxAgZub2RlXzEAAAAAAAAAAAEBYQADaWR5BXV1aWQyKgZub2"
           "RlXzIAAAAAAAAAAAwBYgACBXV1aWQyAAAFdXVpZDEAAQltYXRjaF9hbGw_gAAAAA==")
    for p in range(n_pages):
        chunk = docs[p * page:(p + 1) * page]
        body = {"pit_id": pit, "took": rng.randint(180, 900), "timed_out": False,
                "_shards": {"total": 3, "successful": 3, "skipped": 0, "failed": 0},
                "hits": {"total": {"value": 10000, "relation": "gte"}, "max_score": None,
                         "hits": [hit(p * page + j, d) for j, d in enumerate(chunk)]}}
        write_file(out_dir / f"train-page-{p + 1:04d}.json", json.dumps(body, separators=(",", ":")).encode())
    rest = docs[n_pages * page:]
    lines = [json.dumps(hit(n_pages * page + j, d), separators=(",", ":")) for j, d in enumerate(rest)]
    write_file(out_dir / "train-rest.ndjson.gz", ("\n".join(lines) + "\n").encode(), gz=True)


def loki_export(sinks: Sinks, fleet: Fleet, seed: int, info: dict, out_dir: Path, a1: Attempt, split_t: float):
    rng = random.Random(f"{seed}-ship-loki")
    entries = []
    last_read: dict[str, float] = {}
    stall_from, stall_to = a1.R - 3.0, a1.R + 1620.0
    for t, h, msg in sorted(sinks.kern, key=lambda x: (x[0], x[1])):
        sk = fleet.skew[h]
        read = t + rng.uniform(0.05, 1.2)                          # promtail read (true time)
        if h == XID_HOST and stall_from <= t <= stall_to:
            read = stall_to + 6.0 + (t - stall_from) * 0.0005
        read = max(read, last_read.get(h, 0.0) + 0.000011)        # tailed in file order
        last_read[h] = read
        up = t - fleet.boot[h]
        line = f"{syslog_ts(t + sk)} {h} kernel: [{up:12.6f}] {msg}"
        entries.append((read + sk, h, line))                      # promtail stamps with the host clock
    entries.sort(key=lambda x: (x[0], x[1]))
    info["loki_stall"] = [stall_from, stall_to]

    def fmt(e):
        ts, h, line = e
        return f"{iso_sec_z(ts)} {{host=\"{h}\"}} {line.strip()}"
    part1 = [fmt(e) for e in entries if e[0] < split_t]
    part2 = [fmt(e) for e in entries if e[0] >= split_t]
    body1 = "\n".join(part1)
    cut = len(part1[-1]) // 2
    body1 = body1[: len(body1) - cut]                             # the export was interrupted mid-line
    write_file(out_dir / "kern-part1.logcli.txt", body1.encode())
    write_file(out_dir / "kern-part2.logcli.txt.gz", ("\n".join(reversed(part2)) + "\n").encode(), gz=True)


def cloudwatch_export(sinks: Sinks, seed: int, out_dir: Path) -> None:
    rng = random.Random(f"{seed}-ship-cw")
    events = []
    for t, msg in sorted(sinks.ctld):
        ing = t + rng.uniform(0.4, 5.5)
        eid = "".join(str(rng.randint(0, 9)) for _ in range(56))
        events.append({"logStreamName": "slurm-head-01/slurmctld", "timestamp": int(t * 1000),
                       "message": f"[{slurm_ms(t)}] {msg}", "ingestionTime": int(ing * 1000), "eventId": eid})
    doc = {"events": events, "searchedLogStreams": []}
    write_file(out_dir / "slurmctld.filter-log-events.json", (json.dumps(doc, indent=4) + "\n").encode())
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["@timestamp", "@logStream", "@message"])
    for t, h, msg in sorted(sinks.slurmd):
        w.writerow([insights_ts(t), f"{h}/slurmd", f"[{slurm_ms(t)}] {msg}"])
    write_file(out_dir / "slurmd-errors.insights.csv", buf.getvalue().encode())


# ----------------------------------------------------------------------------- config files
def inventory_toml() -> str:
    return f"""# Fleet inventory (independent campaign shipped_logs)
[providers.{PROVIDER}]
usd_per_gpu_hour = 2.41
support = "noc@kestrel.example"

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = {GPN}
interconnect = "InfiniBand NDR 8x400G"
nodes = "{hostlist(HOSTS)}"
"""


def run_toml(train_steps: int) -> str:
    return f"""# {RUN}: Llama 3 70B, torchtitan, FSDP {DP} x TP {TP}; evidence exported from Loki / ES / CloudWatch
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}   # {DP} dp x local batch {LBS} x seq {SEQ}
flops_per_token = {FLOPS_PER_TOKEN:.3e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --nodes={N_NODES} --gpus-per-node={GPN} --job-name={RUN} titan_70b.sbatch"
# training.steps = {train_steps}
"""


def export_readme(a1: Attempt, a6: Attempt, split_t: float) -> str:
    f, s, e = iso_sec_z(a1.S - 1800), iso_sec_z(split_t), iso_sec_z(a6.E + 1200)
    return f"""Exports for the {RUN} postmortem (nothing was copied from the nodes).

loki/kern-part1.logcli.txt      logcli query --timezone=UTC --forward --limit=2000000 --batch=5000 \\
                                  --from="{f}" --to="{s}" '{{job="varlogs",filename="/var/log/kern.log"}}'
                                (the ssh session dropped near the end: last line incomplete)
loki/kern-part2.logcli.txt.gz   same query, --from="{s}" --to="{e}", without --forward
elasticsearch/train-page-*.json POST _search with a PIT on logs-train-*, size 10000,
                                  sort [{{"event.ingested":"asc"}},{{"_shard_doc":"asc"}}], search_after
elasticsearch/train-rest.ndjson.gz  the remaining pages through jq -c '.hits.hits[]'
cloudwatch/slurmctld.filter-log-events.json  aws logs filter-log-events --log-group-name /hpc/slurm/slurmctld
cloudwatch/slurmd-errors.insights.csv        Logs Insights on /hpc/slurm/slurmd:
  fields @timestamp, @logStream, @message | filter @message like /error/ | sort @timestamp asc
../scheduler/sacct.psv          sacct -P --format=JobID,JobName,User,Partition,AllocCPUS,State,ExitCode,Submit,
                                  Start,End,Elapsed,NNodes,NodeList
"""


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    attempts, train_steps = build_timeline(seed)
    a1, a2, a3, a4, a5, a6 = attempts
    fleet = Fleet(seed)
    sinks = Sinks()
    info: dict = {}
    pids_by_k = {}
    for a in attempts:
        pids = Pids(seed, a)
        pids_by_k[a.k] = pids
        attempt_output(a, fleet, pids, sinks, seed, train_steps, info)
    kernel_events(attempts, fleet, pids_by_k, sinks, seed, info)
    sacct = scheduler(attempts, sinks, seed)
    split_t = a4.S - 600.0
    write_file(bundle / "inventory.toml", inventory_toml().encode())
    write_file(bundle / "runs" / RUN / "run.toml", run_toml(train_steps).encode())
    write_file(bundle / "exports" / "README.txt", export_readme(a1, a6, split_t).encode())
    write_file(bundle / "scheduler" / "sacct.psv", sacct)
    es_export(sinks, fleet, seed, info, bundle / "exports" / "elasticsearch", a4)
    loki_export(sinks, fleet, seed, info, bundle / "exports" / "loki", a1, split_t)
    cloudwatch_export(sinks, seed, bundle / "exports" / "cloudwatch")

    cats, total, per_inc = ledger(attempts)
    incidents = []
    for j, a in enumerate(attempts[:5]):
        nxt = attempts[j + 1]
        rank = None
        if a.kind in ("xid79", "ib", "oom"):
            rank = a.nodes.index(a.root_host) * GPN + a.gpu
        inc = {"id": j + 1, "attempt": a.k, "attempts": [a.k], "slurm_job": a.job, "failure_mode": a.mode,
               "blame": "provider" if a.mode in HARDWARE_MODES else "user",
               "host": a.root_host, "cluster": CLUSTER, "provider": PROVIDER,
               "gpu_index": a.gpu if a.kind in ("xid79", "oom") else None,
               "nic": f"{NIC_DEV[IB_NIC]}/{NIC_IF[IB_NIC]}" if a.kind == "ib" else None,
               "rank": rank, "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E), "next_start_ts": iso_z(nxt.S),
               "next_first_step_ts": iso_z(nxt.F), "last_ckpt_step": a.last_ckpt,
               "failed_at_step": a.steps[-1][0], "gpu_hours": per_inc[j],
               "gpu_hours_lost": round(sum(per_inc[j].values()), 4)}
        incidents.append(inc)
    incidents[0]["symptom_first_ts"] = iso_z(info["watchdog_first"])
    incidents[0]["loki_stall_true_ts"] = [iso_z(x) for x in info["loki_stall"]]
    incidents[1]["symptom_first_ts"] = iso_z(info["nccl_error_ts"])
    incidents[1]["symptom_hosts"] = [a2.nodes[a2.nodes.index(IB_HOST) - 1], a2.nodes[a2.nodes.index(IB_HOST) + 1]]
    incidents[2]["symptom_first_ts"] = iso_z(info["nfs_first_ts"])
    incidents[2]["nfs_server"] = NFS_SERVER
    incidents[2]["failed_save_step"] = a3.failed_save[0]
    incidents[2]["dcp_exception_ts"] = iso_z(info["dcp_exception_ts"])
    incidents[3]["symptom_first_ts"] = iso_z(info["peer_error_ts"])
    incidents[3]["oom_pid"] = info["oom_pid"]
    incidents[3]["es_backlog_true_ts"] = [iso_z(x) for x in info["es_backlog"]]
    incidents[4]["time_limit_ts"] = iso_z(a5.T)
    decoys = {
        XID13_HOST: "Xid 13 four minutes before the attempt-5 time limit; every rank kept stepping at pace",
        GID_HOST: "NCCL WARN 'Got async event : GID table change' in attempts 2 and 4; harmless",
        "gpu-a008": "rail-4 ring neighbour of gpu-a009 in attempt 2: its NET/IB completion errors are a symptom",
        "gpu-a010": "ring neighbour of gpu-a009 (attempt 2) and gpu-a011 (attempt 4): NCCL errors are symptoms",
        "gpu-a012": "NFS hung-task host in attempt 3 and ring neighbour of the OOM-killed rank in attempt 4",
        "gpu-a002": "NFS hung-task host in attempt 3: symptom of the shared server ckpt-nfs02",
        SPARE: "idle spare: NFS messages in attempt 3, Link down/up and a dcgm-diag job during attempt 5",
    }
    forbidden = [
        {"failure_mode": "nccl_timeout", "attempts": [1],
         "reason": "the attempt-1 watchdog timeouts are the symptom of the Xid 79 on gpu-a006"},
        {"failure_mode": "network", "attempts": [4],
         "reason": "the attempt-4 NCCL errors follow the OOM kill on gpu-a011"},
        {"failure_mode": "network", "attempts": [5], "host": SPARE,
         "reason": "the idle spare's link flap did not touch the job"},
        {"failure_mode": "gpu_hw_other", "attempts": [5], "host": XID13_HOST,
         "reason": "harmless Xid 13; the job ran into its time limit"},
    ]
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK_H100_SXM,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK_H100_SXM), 4),
        "first_start_ts": iso_z(a1.S), "last_end_ts": iso_z(a6.E), "train_steps": train_steps,
        "clock_skew_s": fleet.skew,
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "nodes": hostlist(a.nodes), "start_ts": iso_z(a.S),
                      "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E), "loaded_step": a.load_step,
                      "last_step": a.steps[-1][0], "saves": [n for n, _, _ in a.saves], "end": a.kind}
                     for a in attempts],
        "match_on_attempt": True,
        "incidents": incidents,
        "forbidden_incidents": forbidden,
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys,
        "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incidents), 4)},
        "notes": ("True UTC times (controller and stores); node clocks skewed by clock_skew_s. host null (NFS "
                  "server, time limit) matches any host. Ledger: see the shipped_logs.py docstring."),
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
