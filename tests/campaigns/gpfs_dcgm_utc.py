#!/usr/bin/env python3
"""Own campaign gpfs_dcgm_utc: written before reading clusterlab's analysis, in the outsiders' shape.

A site on IBM Storage Scale (GPFS) in America/Chicago: Slurm (slurmctld, sacct, slurmstepd, the batch script's
`date`) and syslog print naive local times, the campaign crosses the end of daylight saving time (Sunday
2026-11-01 02:00 CDT -> 01:00 CST, 07:00 UTC), while the trainer runs in a container that logs in UTC
(Python logging, ISO with "Z"; torchrun's glog lines with no zone). mmfs.log prints its own offset (-0500/-0600).
DCGM runs in the Slurm prolog (`dcgmi diag -r 2`) and epilog (`dcgmi diag -r 2`, `dcgmi health -c`,
`nvidia-smi nvlink -e`/`-s`, `lspci -vvv` link lines), writing to nodes/<host>/healthcheck/.

Writes, under --out DIR:
  DIR/bundle/inventory.toml                       (no timezone key: the site did not write one)
  DIR/bundle/runs/gpfs-fsdp-34b/run.toml
  DIR/bundle/runs/gpfs-fsdp-34b/attempt-<k>/slurm-<jobid>.out   batch script + srun + torchrun + trainer (rank 0)
  DIR/bundle/nodes/<host>/{messages, mmfs.log.latest, healthcheck/*.txt}
  DIR/bundle/scheduler/{slurmctld.log, sacct.psv}
  DIR/truth.json
Usage: gpfs_dcgm_utc.py --out DIR [--seed N]      (python 3.11, standard library only, deterministic per seed)

Scenario (run "gpfs-fsdp-34b", 96 GPUs = 12 nodes x 8 H100-SXM of cluster lk-1 / provider lakeshore; 15 nodes in
the inventory, lkc-g13..15 spares; all truth times UTC):
  attempt 1  job 730101  fresh start; at a periodic save GPFS expels lkc-g05 (lease overdue, "Lost membership in
             cluster"); its ranks get "OSError: [Errno 116] Stale file handle" writing the DCP shards, the save
             never completes, the job FAILS; every other node's mmfs.log only says it recovered the node
                                                                    [filesystem_io, lkc-g05]
  attempt 2  job 730118  resumes; Xid 95 (uncontained ECC) on lkc-g09 GPU2 -> "CUDA error: uncorrectable ECC error
             encountered" on rank 66 -> job FAILS; the epilog's dcgmi diag -r 2 fails g09 (row remap pending),
             dcgmi health -c says Failure; the node is drained             [gpu_memory_ecc, lkc-g09]
  (job 730133, first run) g09 replaced by spare g13; the prolog's dcgmi diag -r 2 fails GPU 6 of lkc-g11
             (Diagnostic / Targeted Stress); slurmctld drains g11 ("Prolog error") and requeues the job; the
             batch script never runs (no output, no steps): not an attempt; its time is restart time
                                                                    [gpu_hw_other, lkc-g11]
  attempt 3  job 730133 (requeued run, g11 replaced by spare g14); healthy across the DST change; then Xid 74
             (NVLink) on lkc-g04 GPU 3 -> NCCL errors on g04's ranks -> job FAILS; the epilog's nvidia-smi nvlink
             -e shows link 9 of GPU 3 with large replay/recovery/CRC counts, -s shows it inactive
                                                                    [nvlink_error, lkc-g04]
  attempt 4  job 730150  runs into its 12 h Slurm TIME LIMIT (healthy until the kill)  [time_limit, host null]
  attempt 5  job 730171  completes (final save, "Training complete").
  Decoys: GPFS informational lines on every node (recovering the expelled node, reconnects, a "mmfsd ready"
  restart on g05 after the job died); a `dcgmi diag -r 2` that passes with a thermal-violation Warning on
  lkc-g06; correctable NVLink replay counts of a few units on lkc-g08 in every epilog while training stays at pace;
  lspci LnkSta "(downgraded)" at idle (2.5GT/s) on every GPU of every epilog capture.

Ledger (truth.json expected_ledger, GPU-hours = 96 GPUs x seconds / 3600), conventions of campaign2.py:
  startup    = attempt start (sacct Start of the run that ran the batch script) -> first training step start
  productive = kept steps (step <= last durable checkpoint of an ended attempt; all steps of the completed attempt)
  checkpoint = durations of the saves that completed, plus the tail after the final save
  recompute  = end of the last durable save of the attempt (or its first step start) -> root event
  hang       = root event -> attempt exit (sacct End). Root events: the start of the save that never completed
               (GPFS), the Xid 95 / Xid 74 lines, the time-limit kill.
  restart    = attempt exit -> next attempt start (the failed-prolog run of job 730133 lies inside it)
  straggler = slowdown = data_stall = idle = 0

Formats (looked up with the search tools; the text here is written anew):
  * mmfs.log: "2017-11-01_14:10:09.157+0900: [N] mmfsd ready" style (IBM Storage Scale 4.2+ logs), "[I] Accepted
    and connected to ...", "Close connection to 192.168.10.109 c5n109. Attempting reconnect.", "Recovering nodes:
    ...", "Recovered 1 nodes.", "Lost membership in cluster X. Unmounting file systems." (IBM docs: failures due to
    a network failure), "Disk lease period expired" (public GPFS notes); GPFS also logs to syslog as "mmfs[pid]:".
  * dcgmi diag table: "Successfully ran diagnostic for group." + the +---+ table with Metadata / Deployment /
    Integration / Hardware / Stress sections, "Pass - All", "Fail - GPU: 6", "Warning | GPU 0 Thermal violations
    totaling 13.3 seconds started at ...", "Error: GPU 3 had memory errors and row remappings are pending" (ramble
    cookbook dcgm application, stas00 ml-engineering debug notes); dcgmi health -c "Health Monitor Report" table.
  * Slurm: "Prolog failure on node %s, draining the node" / drain reason "Prolog error" (slurmctld node_mgr.c),
    "Requeuing JobId=..."; sacct -D shows the REQUEUED run; slurmstepd "*** JOB %u ON %s CANCELLED AT %s DUE TO TIME
    LIMIT ***" in the node's local time.
  * NVRM Xid 95 "Uncontained: ... RST: Yes, D-RST: No", Xid 74 "NVLink: fatal error detected on link N(...)";
    nvidia-smi nvlink -e "Link N: Replay Errors: X" lines, nvlink -s "Link N: 26.562 GB/s" / "<inactive>";
    lspci -vvv "LnkCap: Port #0, Speed 32GT/s, Width x16" / "LnkSta: Speed 2.5GT/s (downgraded), Width x16".
"""
from __future__ import annotations

import argparse
import json
import math
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

UTC = timezone.utc  # noqa: UP017  (python 3.10 readers too)
RUN = "gpfs-fsdp-34b"
CLUSTER, PROVIDER = "lk-1", "lakeshore"
GPN, NODES_USED = 8, 12
GPUS = GPN * NODES_USED                       # 96
SEQ, GBS = 4096, 192
TOKENS_PER_STEP = SEQ * GBS                   # 786432
FLOPS_PER_TOKEN = 2.215e11
PEAK = 989.4e12
BASE_STEP = 4.370
JIT = 0.004
SAVE_EVERY = 400
LOG_EVERY = 10
TRAIN_STEPS = 22400
TIME_LIMIT = 12 * 3600
T0 = datetime(2026, 10, 31, 17, 20, 0, tzinfo=UTC).timestamp()
DST_END = datetime(2026, 11, 1, 7, 0, 0, tzinfo=UTC).timestamp()
CKPT = "/gpfs/fs1/proj/llm/ckpt/gpfs-fsdp-34b"
GPFS_CLUSTER = "lakeshore-scale.gpfs"
MGR = ("10.40.0.2", "gss-mgr01")
HOSTS = [f"lkc-g{i:02d}" for i in range(1, 16)]
USED = HOSTS[:12]
EXPEL_HOST, ECC, PROLOG_BAD, NVL = "lkc-g05", ("lkc-g09", 2), ("lkc-g11", 6), ("lkc-g04", 3, 9)
SPARE1, SPARE2 = "lkc-g13", "lkc-g14"
THERMAL_WARN_HOST, REPLAY_HOST = "lkc-g06", "lkc-g08"
BUSIDS = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
HW_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error", "network",
            "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]


def ip(h: str) -> str:
    return f"10.40.1.{10 + int(h[-2:])}"


# ----------------------------------------------------------------------------- clocks
def off(t: float) -> int:                     # America/Chicago around the end of DST 2026
    return -5 * 3600 if t < DST_END else -6 * 3600


def loc(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC).replace(tzinfo=None) + timedelta(seconds=off(t))


def zabbr(t: float) -> str:
    return "CDT" if t < DST_END else "CST"


def utc_z(t: float) -> str:
    d = datetime.fromtimestamp(t, UTC)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{int((t % 1) * 1000):03d}Z"


def iso_z(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S") + "Z"


def glog(t: float, lvl: str) -> str:          # torchrun in the UTC container, no zone
    s, us = divmod(int(round(t * 1e6)), 1_000_000)
    d = datetime.fromtimestamp(s, UTC)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{us:06d}"


def date_cmd(t: float) -> str:                # `date` on the host (local, with zone)
    d = loc(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {zabbr(t)} {d.year}"


def syslog_ts(t: float) -> str:
    d = loc(t)
    return f"{d:%b} {d.day:2d} {d:%H:%M:%S}"


def slurm_ts(t: float) -> str:
    return loc(t).strftime("%Y-%m-%dT%H:%M:%S")


def ctld_ts(t: float) -> str:
    d = loc(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{int((t % 1) * 1000):03d}]"


def mmfs_ts(t: float) -> str:
    d, o = loc(t), off(t)
    return f"{d:%Y-%m-%d_%H:%M:%S}.{int((t % 1) * 1000):03d}{'-' if o < 0 else '+'}{abs(o) // 3600:02d}00"


def elapsed(sec: float) -> str:
    sec = int(round(sec))
    h, r = divmod(sec, 3600)
    m, s = divmod(r, 60)
    d, h = divmod(h, 24)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts) -> str:
    nums = sorted(int(h[-2:]) for h in hosts)
    out, a, b = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == b + 1:
            b = n
            continue
        out.append(f"{a:02d}" if a == b else f"{a:02d}-{b:02d}")
        if n is not None:
            a = b = n
    return f"lkc-g[{','.join(out)}]"


class Sink:
    def __init__(self):
        self.items = []

    def add(self, t: float, line: str):
        self.items.append((t, len(self.items), line))

    def text(self) -> bytes:
        return ("\n".join(x[2] for x in sorted(self.items)) + "\n").encode()


def write(path: Path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# ----------------------------------------------------------------------------- timeline
class Att:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps, self.saves = [], []
        self.failed_save = None
        self.R = self.E = None


def simulate(a: Att, rng: random.Random) -> bool:
    a.steps, a.saves, a.failed_save = [], [], None
    t, n = a.F, a.load
    while True:
        if a.kind == "complete" and n >= TRAIN_STEPS:
            a.E = float(math.ceil(t + 6.0))
            return True
        dur = BASE_STEP * (1 + rng.uniform(-JIT, JIT))
        if a.kind in ("ecc", "nvlink") and t + dur > a.fault_at:
            if not a.steps or a.steps[-1][0] % SAVE_EVERY == 0:
                return False
            a.R = a.fault_at
            a.E = float(math.ceil(a.R + a.tail))
            return True
        if a.kind == "timelimit" and t + dur > a.S + TIME_LIMIT:
            a.R = a.S + TIME_LIMIT
            a.E = a.R + a.tail
            return True
        a.steps.append((n + 1, t, dur))
        t += dur
        n += 1
        if n % SAVE_EVERY == 0:
            if a.kind == "gpfs" and t >= a.F + a.fail_after:
                a.failed_save = (n, t)
                a.R = t
                a.E = float(math.ceil(t + a.tail))
                return True
            c = round(rng.uniform(88.0, 112.0), 2)
            if a.kind in ("ecc", "nvlink") and t + c > a.fault_at - 60:
                return False
            if a.kind == "timelimit" and t + c > a.S + TIME_LIMIT - 60:
                return False
            a.saves.append((n, t, c))
            t += c


def build(seed: int):
    rng = random.Random(f"{seed}-gpfs-timeline")
    n2 = [h for h in USED if h != ECC[0]] + [SPARE1]
    n3 = [h for h in n2 if h != PROLOG_BAD[0]] + [SPARE2]
    specs = [
        dict(k=1, job=730101, nodes=USED, kind="gpfs", mode="filesystem_io", host=EXPEL_HOST,
             startup=300 + rng.randint(-15, 15), fail_after=3.4 * 3600 + rng.randint(0, 900),
             tail=171.0 + rng.randint(-10, 10), gap=2100 + rng.randint(-200, 200)),
        dict(k=2, job=730118, nodes=USED, kind="ecc", mode="gpu_memory_ecc", host=ECC[0],
             startup=420 + rng.randint(-15, 15), run_for=2.9 * 3600 + rng.randint(0, 900),
             tail=38.0 + rng.randint(0, 6), gap=None),
        dict(k=3, job=730133, nodes=n3, kind="nvlink", mode="nvlink_error", host=NVL[0],
             startup=430 + rng.randint(-15, 15), run_for=0.0, tail=44.0 + rng.randint(0, 6),
             gap=1500 + rng.randint(-120, 120)),
        dict(k=4, job=730150, nodes=n3, kind="timelimit", mode="time_limit", host=None,
             startup=410 + rng.randint(-15, 15), tail=31.0, gap=1200 + rng.randint(-100, 100)),
        dict(k=5, job=730171, nodes=n3, kind="complete", mode=None, host=None,
             startup=415 + rng.randint(-15, 15), gap=None),
    ]
    atts = [Att(**s) for s in specs]
    t, load = T0, 0
    prolog = None
    for a in atts:
        a.load, a.S = load, float(t)
        a.F = a.S + a.startup
        if a.kind == "nvlink":                  # fault an hour or more after the DST change, local 02:xx CST+
            a.fault_at = max(a.F + 4 * 3600, DST_END + 3600 + 1800) + rng.randint(0, 1800) + 0.0
        elif a.kind == "ecc":
            a.fault_at = a.F + a.run_for + 0.0
        tries = 0
        while not simulate(a, random.Random(f"{seed}-gpfs-steps-{a.k}-{tries}")):
            tries += 1
            a.fault_at = a.fault_at + 211.0
        a.last_ckpt = a.saves[-1][0] if a.saves else a.load
        load = a.last_ckpt
        if a.kind == "ecc":                     # epilog, drain, then job 730133's failed prolog run
            p_start = math.ceil(a.E + 1500 + rng.randint(-120, 120))
            p_fail = p_start + 148 + rng.randint(0, 20)
            p_end = p_fail + 2
            prolog = dict(job=730133, nodes=[h for h in USED if h != ECC[0]] + [SPARE1], S=float(p_start),
                          fail=float(p_fail), E=float(p_end))
            t = math.ceil(p_end + 720 + rng.randint(-60, 60))
        elif a.gap is not None:
            t = math.ceil(a.E + a.gap)
    a5 = atts[-1]
    assert a5.E - a5.S < TIME_LIMIT, "attempt 5 would hit the time limit"
    assert atts[2].R > DST_END + 3600
    return atts, prolog


def ledger(atts):
    c = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute", "hang",
                       "restart", "startup", "idle"], 0.0)
    per = []
    for i, a in enumerate(atts):
        c["startup"] += a.F - a.S
        kept = a.last_ckpt if a.kind != "complete" else 10 ** 9
        c["productive"] += sum(d for n, _, d in a.steps if n <= kept)
        c["checkpoint"] += sum(x for _, _, x in a.saves)
        if a.kind == "complete":
            c["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        base = (a.saves[-1][1] + a.saves[-1][2]) if a.saves else a.F
        nx = atts[i + 1]
        c["recompute"] += a.R - base
        c["hang"] += a.E - a.R
        c["restart"] += nx.S - a.E
        per.append(dict(recompute=a.R - base, hang=a.E - a.R, restart=nx.S - a.E, startup=nx.F - nx.S))
    total = atts[-1].E - atts[0].S
    assert abs(sum(c.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return {k: round(v * g, 4) for k, v in c.items()}, round(total * g, 4), per


# ----------------------------------------------------------------------------- trainer output
def loss_at(n, rng):
    return 1.85 + 8.9 * math.exp(-n / 300.0) + 0.7 * math.exp(-n / 5000.0) + rng.gauss(0, 0.012)


def slurm_out(a: Att, seed: int, info: dict) -> bytes:
    rng = random.Random(f"{seed}-gpfs-out-{a.k}")
    L = Sink()
    pid = {h: rng.randint(200_000, 3_900_000) for h in a.nodes}

    def T(t, msg, lvl="INFO", name="train"):
        L.add(t, f"{utc_z(t)} {lvl} [{name}] {msg}")

    S, F = a.S, a.F
    L.add(S + 0.5, f"START TIME: {date_cmd(S + 0.5)}")
    L.add(S + 0.6, f"+ srun --container-image=/gpfs/fs1/images/pt2411.sqsh --container-mounts=/gpfs/fs1 "
                   f"torchrun --nnodes={len(a.nodes)} --nproc-per-node={GPN} --rdzv-backend=c10d "
                   f"--rdzv-endpoint={a.nodes[0]}:29400 train_fsdp.py --config cfg/llama34b.yaml")
    for i, h in enumerate(a.nodes):
        tt = S + 31 + 0.07 * i
        L.add(tt, f"{glog(tt, 'W')} {pid[h]} torch/distributed/run.py:793] ")
        L.add(tt, f"{glog(tt, 'W')} {pid[h]} torch/distributed/run.py:793] " + "*" * 41)
        L.add(tt, f"{glog(tt, 'W')} {pid[h]} torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment "
                  f"variable for each process to be 1 in default, to avoid your system being overloaded, please "
                  f"further tune the variable for optimal performance in your application as needed. ")
    ti = S + 52
    T(ti, f"world_size={GPUS} local_world_size={GPN} master={a.nodes[0]} backend=nccl")
    T(ti + 0.3, f"torch 2.5.1+cu124, NCCL 2.21.5, {len(a.nodes)} nodes: {hostlist(a.nodes)}")
    T(ti + 8.0, "model llama-34b: n_layers=48 d_model=8192 n_heads=64 n_kv_heads=8 vocab=32000 seq_len=4096")
    T(ti + 8.1, "parameters: 33,744,052,224 (33.74B); FSDP FULL_SHARD, bf16 mixed precision, activation "
                "checkpointing on")
    T(ti + 8.2, f"global batch {GBS} x seq {SEQ} = {TOKENS_PER_STEP} tokens/step; micro batch 2; grad accum 1")
    if a.load:
        tl = ti + 20
        T(tl, f"resuming from {CKPT}/step_{a.load:08d}")
        T(F - 1.5, f"checkpoint step_{a.load:08d} loaded in {F - 1.5 - tl:.1f}s (dcp)")
    else:
        T(ti + 20, f"no checkpoint found under {CKPT}, starting from scratch")
    T(F - 0.2, f"starting training loop at step {a.load + 1} / {TRAIN_STEPS}")
    lrng = random.Random(f"{seed}-gpfs-loss-{a.k}")
    saves = {n: (s, c) for n, s, c in a.saves}
    for n, ts, d in a.steps:
        end = ts + d
        if n % LOG_EVERY == 0 or n == a.load + 1:
            tps = TOKENS_PER_STEP / GPUS / d
            mfu = 100 * FLOPS_PER_TOKEN * tps / PEAK
            T(end, f"step {n:>6d}/{TRAIN_STEPS} | loss {loss_at(n, lrng):.4f} | lr {3e-4 * min(1, n / 2000):.3e} | "
                   f"grad_norm {0.2 + 2.5 * math.exp(-n / 600) + abs(lrng.gauss(0, 0.02)):.3f} | "
                   f"step_time {d:.3f}s | tok/s/gpu {tps:,.0f} | mfu {mfu:.1f}% | mem 63.1GiB")
        if n in saves:
            s0, c = saves[n]
            T(s0 + 0.02, f"saving checkpoint step_{n:08d} to {CKPT}/step_{n:08d} (dcp, 96 shards)")
            T(s0 + c, f"checkpoint step_{n:08d} saved in {c - 0.02:.2f}s")
    nl = a.nodes
    if a.kind == "gpfs":
        n, ts = a.failed_save
        T(ts + 0.02, f"saving checkpoint step_{n:08d} to {CKPT}/step_{n:08d} (dcp, 96 shards)")
        i = nl.index(EXPEL_HOST)
        te = ts + a.tail - 40
        for d in (1, 5):
            r = i * GPN + d
            for ln in ["Traceback (most recent call last):",
                       '  File "/workspace/train_fsdp.py", line 412, in <module>',
                       "    main()",
                       '  File "/workspace/train_fsdp.py", line 388, in main',
                       "    save_checkpoint(model, optim, step, cfg.ckpt_dir)",
                       '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/checkpoint/filesystem.py", '
                       'line 424, in _write_files_from_queue',
                       "    os.fsync(stream.fileno())",
                       "OSError: [Errno 116] Stale file handle"]:
                L.add(te + 0.01 * d, f"[rank{r}]: {ln}")
        failed = ", ".join(str(i * GPN + d) for d in range(GPN))
        T(te + 1.5, f"checkpoint save failed: CheckpointException ranks:dict_keys([{failed}])", "ERROR")
        _child_failed(L, a, pid, te + 4, EXPEL_HOST, i * GPN + 1, 1)
        info["stale_ts"] = te
    elif a.kind == "ecc":
        h, g = ECC
        r = nl.index(h) * GPN + g
        tr = a.R + 1.8
        for ln in ["Traceback (most recent call last):",
                   '  File "/workspace/train_fsdp.py", line 351, in train_step',
                   "    loss.backward()",
                   "RuntimeError: CUDA error: uncorrectable ECC error encountered",
                   "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
                   "below might be incorrect.",
                   "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                   "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."]:
            L.add(tr, f"[rank{r}]: {ln}")
        _child_failed(L, a, pid, tr + 6, h, r, 1)
    elif a.kind == "nvlink":
        h, g, _ = NVL
        i = nl.index(h)
        tr = a.R + 3.1
        for d in (g, (g + 1) % GPN):
            r = i * GPN + d
            c10 = f"{datetime.fromtimestamp(tr, UTC):%m%d %H:%M:%S}.{rng.randint(0, 999999):06d}000"
            L.add(tr + 0.1 * d, f"[rank{r}]:[E{c10} ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) "
                                f"Rank {r}] Process group watchdog thread terminated with exception: CUDA error: "
                                f"unspecified launch failure")
            L.add(tr + 0.1 * d + 0.01, f"[rank{r}]: RuntimeError: NCCL error: unhandled cuda error (run with "
                                       f"NCCL_DEBUG=INFO for details), NCCL version 2.21.5")
            L.add(tr + 0.1 * d + 0.02, f"[rank{r}]: Last error:")
            L.add(tr + 0.1 * d + 0.03, f"[rank{r}]: Cuda failure 'unspecified launch failure'")
        _child_failed(L, a, pid, tr + 7, h, i * GPN + g, -6)
    elif a.kind == "timelimit":
        K = a.R
        L.add(K + 0.02, f"slurmstepd: error: *** JOB {a.job} ON {nl[0]} CANCELLED AT {slurm_ts(K)} DUE TO TIME "
                        f"LIMIT ***")
        L.add(K + 0.03, f"slurmstepd: error: *** STEP {a.job}.0 ON {nl[0]} CANCELLED AT {slurm_ts(K)} DUE TO TIME "
                        f"LIMIT ***")
        L.add(K + 0.05, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
        for j, h in enumerate(nl):
            tt = K + 0.3 + 0.02 * j
            L.add(tt, f"{glog(tt, 'W')} {pid[h]} torch/distributed/elastic/agent/server/api.py:704] Received 15 "
                      f"death signal, shutting down workers")
            L.add(a.E - 0.5 + 0.01 * j, f"srun: error: {h}: task {j}: Terminated")
        L.add(a.E - 0.2, f"srun: Force Terminated StepId={a.job}.0")
    else:
        fs, fc = a.saves[-1][1], a.saves[-1][2]
        T(fs + fc + 1.0, f"training complete: {TRAIN_STEPS} steps")
        L.add(a.E - 1.0, f"END TIME: {date_cmd(a.E - 1.0)}")
    return L.text()


def _child_failed(L: Sink, a: Att, pid: dict, t: float, host: str, rank: int, code: int):
    nl = a.nodes
    i = nl.index(host)
    L.add(t, f"{glog(t, 'E')} {pid[host]} torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: "
             f"{code}) local_rank: {rank % GPN} (pid: {pid[host] + 9 + rank % GPN}) of binary: /usr/bin/python3")
    for ln in ["Traceback (most recent call last):", '  File "/usr/local/bin/torchrun", line 8, in <module>',
               "    sys.exit(main())",
               "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 56,
               "train_fsdp.py FAILED", "-" * 56, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 56,
               "Root Cause (first observed failure):", "[0]:",
               f"  time      : {datetime.fromtimestamp(t, UTC):%Y-%m-%d_%H:%M:%S}", f"  host      : {host}",
               f"  rank      : {rank} (local_rank: {rank % GPN})",
               f"  exitcode  : {code} (pid: {pid[host] + 9 + rank % GPN})", "  error_file: <N/A>",
               "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
               "=" * 56]:
        L.add(t + 0.01, ln)
    for j, h in enumerate(nl):
        tt = t + 1.0 + 0.02 * j
        if h != host:
            L.add(tt, f"{glog(tt, 'W')} {pid[h]} torch/distributed/elastic/agent/server/api.py:704] Received 15 "
                      f"death signal, shutting down workers")
    L.add(a.E - 3.0 + 0.01 * i, f"srun: error: {host}: task {i}: Exited with exit code 1")
    L.add(a.E - 2.0, f"srun: Terminating StepId={a.job}.0")
    for j, h in enumerate(nl):
        if h != host:
            L.add(a.E - 1.0 + 0.01 * j, f"srun: error: {h}: task {j}: Terminated")


# ----------------------------------------------------------------------------- node files
def diag_table(rows: list[tuple[str, str]], level: int) -> list[str]:
    bar = "+---------------------------+------------------------------------------------+"
    out = ["Successfully ran diagnostic for group.", bar,
           "| Diagnostic                | Result                                         |",
           "+===========================+================================================+"]
    for k, v in rows:
        if k.startswith("--"):
            name = k.strip("-")
            out.append(f"|-----  {name}  " + "-" * (19 - len(name)) + "+" + "-" * 48 + "|")
        else:
            out.append(f"| {k:<25s} | {v:<46s} |")
    out.append(bar)
    return out


def diag_rows(bad: str | None = None, warn: str | None = None, level: int = 2):
    rows = [("--Metadata", ""), ("DCGM Version", "3.3.9"), ("Driver Version Detected", "550.127.05"),
            ("GPU Device IDs Detected", ",".join(["2330"] * 8)), ("--Deployment", "")]
    for k in ["Denylist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks", "Persistence Mode",
              "Environment Variables"]:
        rows.append((k, "Pass"))
    if bad == "rowremap":
        rows += [("Page Retirement/Row Remap", "Fail"),
                 ("", f"Error: GPU {ECC[1]} had uncorrectable memory errors"),
                 ("", "and row remappings are pending")]
    else:
        rows.append(("Page Retirement/Row Remap", "Pass"))
    rows += [("Graphics Processes", "Pass"), ("Inforom", "Pass"), ("--Integration", ""), ("PCIe", "Pass - All"),
             ("--Hardware", "")]
    if bad == "sm":
        g = PROLOG_BAD[1]
        others = ", ".join(str(x) for x in range(GPN) if x != g)
        rows += [("GPU Memory", "Pass - All"), ("Diagnostic", f"Pass - GPUs: {others}"), ("", f"Fail - GPU: {g}"),
                 ("Warning", f"GPU {g} Diagnostic plugin found 37 compute"), ("", "mismatches in the SM stress kernel"),
                 ("--Stress", ""), ("Targeted Stress", f"Pass - GPUs: {others}"), ("", f"Fail - GPU: {g}")]
    else:
        rows += [("GPU Memory", "Pass - All"), ("Diagnostic", "Pass - All"), ("--Stress", ""),
                 ("Targeted Stress", "Pass - All")]
    rows += [("Targeted Power", "Pass - All"), ("Memory Bandwidth", "Pass - All")]
    if warn:
        rows += [("Warning", warn[:46]), ("", warn[46:])]
    return rows


def health_check(fail: bool) -> list[str]:
    bar = "+---------------------------+----------------------------------------------------------+"
    out = [bar, "| Health Monitor Report                                                                |",
           "+===========================+==========================================================+"]
    if not fail:
        out.append(f"| {'Overall Health':<25s} | {'Healthy':<56s} |")
    else:
        g = ECC[1]
        for k, v in [("Overall Health", "Failure"), ("GPU", ""), (f"-> {g}", "Failure"), ("   -> Errors", ""),
                     ("      -> Memory system", "Failure"),
                     ("", f"A volatile double-bit ECC error occurred on GPU {g}."),
                     ("", "Row remapping is pending; reset the GPU to apply it.")]:
            out.append(f"| {k:<25s} | {v:<56s} |")
    out.append(bar)
    return out


def nvlink_e(host: str, bad: bool, rng) -> list[str]:
    out = []
    for g in range(GPN):
        out.append(f"GPU {g}: NVIDIA H100 80GB HBM3 (UUID: GPU-{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-"
                   f"{rng.getrandbits(16):04x}-{rng.getrandbits(16):04x}-{rng.getrandbits(48):012x})")
        for ln in range(18):
            rep = rec = crc = 0
            if bad and g == NVL[1] and ln == NVL[2]:
                rep, rec, crc = 48211, 17, 903344
            elif host == REPLAY_HOST and g == 5 and ln in (2, 11):
                rep = rng.randint(1, 4)
            out += [f"\t Link {ln}: Replay Errors: {rep}", f"\t Link {ln}: Recovery Errors: {rec}",
                    f"\t Link {ln}: CRC Errors: {crc}"]
    return out


def nvlink_s(bad: bool) -> list[str]:
    out = []
    for g in range(GPN):
        out.append(f"GPU {g}: NVIDIA H100 80GB HBM3")
        for ln in range(18):
            down = bad and g == NVL[1] and ln == NVL[2]
            out.append(f"\t Link {ln}: <inactive>" if down else f"\t Link {ln}: 26.562 GB/s")
    return out


def lspci(rng) -> list[str]:
    out = []
    for b in BUSIDS:
        out += [f"{b}:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)",
                "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported",
                "\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x16"]
    return out


def capture(t: float, host: str, what: str, job: int, body: list[str]) -> bytes:
    hdr = [f"### {what} job={job} host={host} {date_cmd(t)}"]
    return ("\n".join(hdr + body) + "\n").encode()


def node_files(atts, prolog, seed: int, bundle: Path, info: dict):
    t_end = atts[-1].E + 1800
    a1, a2, a3, a4, a5 = atts
    for h in HOSTS:
        rng = random.Random(f"{seed}-gpfs-node-{h}")
        msgs, mm = Sink(), Sink()
        boot = T0 - rng.randint(2, 9) * 86400 - rng.randint(0, 80000)

        def M(t, lvl, text, mm=mm):
            mm.add(t, f"{mmfs_ts(t)}: [{lvl}] {text}")

        def K(t, text, prog="kernel", msgs=msgs, h=h):
            msgs.add(t, f"{syslog_ts(t)} {h} {prog}: {text}")

        M(boot + 95, "I", "mmfsd initializing. {Version: 5.1.9.4   Built: Jun 13 2024 09:52:07} ...")
        M(boot + 97, "I", f"Accepted and connected to {MGR[0]} {MGR[1]} <c0p0>")
        M(boot + 101, "I", "Command: mount fs1")
        M(boot + 103, "I", "Command: successful mount fs1")
        M(boot + 103.5, "N", "mmfsd ready")
        t = boot + rng.uniform(3000, 30000)
        while t < t_end:                           # background noise in syslog
            prog, text = rng.choice([("systemd[1]", f"Started Session {rng.randint(100, 9999)} of User root."),
                                     ("chronyd[1822]", "Selected source 10.40.0.1"),
                                     ("kernel", f"hrtimer: interrupt took {rng.randint(9000, 40000)} ns")])
            K(t, text, prog)
            t += rng.uniform(1800, 9000)
        # attempt 1: GPFS expel during the save
        if h in a1.nodes:
            n, ts = a1.failed_save
            if h == EXPEL_HOST:
                te = ts + 21.7
                M(te, "N", f"Close connection to {MGR[0]} {MGR[1]} (Connection timed out). Attempting reconnect.")
                M(te + 35.2, "E", f"Disk lease period expired 0.42 seconds ago in cluster {GPFS_CLUSTER}. "
                                  f"Attempting to reacquire the lease.")
                M(te + 41.0, "E", f"Lost membership in cluster {GPFS_CLUSTER}. Unmounting file systems.")
                M(te + 41.3, "I", "Unmounting file system fs1 due to SGPanic or expel; running I/O returns ESTALE")
                K(te + 41.0, f"[E] Lost membership in cluster {GPFS_CLUSTER}. Unmounting file systems.",
                  "mmfs[5121]")
                info["expel_ts"] = te + 41.0
                tr = a1.E + 600
                M(tr, "N", "mmfsd is shutting down.")
                M(tr + 4, "I", "mmfsd initializing. {Version: 5.1.9.4   Built: Jun 13 2024 09:52:07} ...")
                M(tr + 7, "I", f"Accepted and connected to {MGR[0]} {MGR[1]} <c0p0>")
                M(tr + 9, "I", "Command: mount fs1")
                M(tr + 11, "I", "Command: successful mount fs1")
                M(tr + 11.2, "N", "mmfsd ready")
            else:
                tr = ts + 21.7 + 41.5 + rng.uniform(0, 2)
                M(tr, "I", f"Recovering nodes in cluster {GPFS_CLUSTER}: {ip(EXPEL_HOST)}")
                M(tr + 3.1, "I", "Recovered 1 nodes for file system fs1.")
                M(a1.E + 616 + rng.uniform(0, 3), "I",
                  f"Accepted and connected to {ip(EXPEL_HOST)} {EXPEL_HOST} <c0n4>")
        # attempt 2: Xid 95
        if h == ECC[0]:
            pci = f"0000:{BUSIDS[ECC[1]]}:00"
            K(a2.R, f"NVRM: Xid (PCI:{pci}): 95, pid=2203917, name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No")
            K(a2.R + 0.01, f"NVRM: GPU at PCI:{pci}: GPU-3f1c2a9e-0b44-7c1d-9e2a-5d0c61f4b8a2")
            K(a2.R + 0.02, "NVRM: GPU Board Serial Number: 1654823019877")
            info["xid95_ts"] = a2.R
        if h == NVL[0]:
            pci = f"0000:{BUSIDS[NVL[1]]}:00"
            K(a3.R, f"NVRM: Xid (PCI:{pci}): 74, pid=3310442, name=python3, NVLink: fatal error detected on link "
                    f"{NVL[2]}(0x0, 0x0, 0x0, 0x0, 0x0, 0x80000, 0x0)")
            K(a3.R + 0.01, f"NVRM: GPU at PCI:{pci}: GPU-7d21e0c4-5a93-4b6e-8f10-2c9b3e77a0d5")
            info["xid74_ts"] = a3.R
        write(bundle / "nodes" / h / "messages", msgs.text())
        write(bundle / "nodes" / h / "mmfs.log.latest", mm.text())
        # prolog / epilog captures
        hc = bundle / "nodes" / h / "healthcheck"
        for a in atts:
            if h not in a.nodes:
                continue
            tp = a.S + 5
            warn = (f"GPU 1 Thermal violations totaling 4.2 seconds started at {loc(tp - 30):%Y-%m-%d %H:%M:%S}"
                    if h == THERMAL_WARN_HOST and a.k == 4 else None)
            write(hc / f"prolog-{a.job}-{a.k}.txt", capture(tp, h, "dcgmi diag -r 2 (prolog)", a.job,
                                                             diag_table(diag_rows(warn=warn), 2)))
            te = a.E + 20
            bad_ecc = a.kind == "ecc" and h == ECC[0]
            bad_nvl = a.kind == "nvlink" and h == NVL[0]
            body = diag_table(diag_rows("rowremap" if bad_ecc else None), 2) + ["", "$ dcgmi health -c"] + \
                health_check(bad_ecc) + ["", "$ nvidia-smi nvlink -e"] + nvlink_e(h, bad_nvl, rng) + \
                ["", "$ nvidia-smi nvlink -s"] + nvlink_s(bad_nvl) + \
                ["", "$ lspci -vvv -d 10de: | grep Lnk"] + lspci(rng)
            write(hc / f"epilog-{a.job}-{a.k}.txt", capture(te, h, "dcgmi diag -r 2 (epilog)", a.job, body))
        if h in prolog["nodes"]:
            write(hc / f"prolog-{prolog['job']}-r0.txt",
                  capture(prolog["S"] + 5, h, "dcgmi diag -r 2 (prolog)", prolog["job"],
                          diag_table(diag_rows("sm" if h == PROLOG_BAD[0] else None), 2)))
            if h == PROLOG_BAD[0]:
                msgs2 = f"{syslog_ts(prolog['fail'])} {h} slurmd[2211]: error: prolog failed: rc:1 output:dcgmi diag " \
                        f"-r 2 failed on GPU {PROLOG_BAD[1]}\n"
                with open(bundle / "nodes" / h / "messages", "ab") as f:
                    f.write(msgs2.encode())


# ----------------------------------------------------------------------------- scheduler
def scheduler(atts, prolog, bundle: Path, seed: int):
    rng = random.Random(f"{seed}-gpfs-sched")
    L = Sink()

    def add(t, m):
        L.add(t, f"{ctld_ts(t)} {m}")

    rows = []
    hdr = "JobID|JobName|User|Partition|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"

    def row(job, state, ec, sub, s, e, nodes):
        rows.append((s, f"{job}|train34b|llmteam|gpu|{224 * len(nodes)}|{state}|{ec}|{slurm_ts(sub)}|{slurm_ts(s)}|"
                        f"{slurm_ts(e)}|{elapsed(e - s)}|{len(nodes)}|{hostlist(nodes)}"))
        bn = [nodes[0]]
        rows.append((s + 0.1, f"{job}.batch|batch||gpu|224|{state if state != 'REQUEUED' else 'CANCELLED'}|{ec}|"
                              f"{slurm_ts(s)}|{slurm_ts(s)}|{slurm_ts(e)}|{elapsed(e - s)}|1|{bn[0]}"))

    for a in atts:
        sub = a.S - rng.randint(5, 60) if a.job != 730133 else prolog["S"] - 40
        if a.job != 730133:
            add(sub, f"_slurm_rpc_submit_batch_job: JobId={a.job} InitPrio=1{rng.randint(1000, 9999)} usec=612")
        add(a.S + 0.01, f"sched: Allocate JobId={a.job} NodeList={hostlist(a.nodes)} #CPUs={224 * len(a.nodes)} "
                        f"Partition=gpu")
        end = a.E + rng.uniform(0.05, 0.4)
        if a.kind in ("gpfs", "ecc", "nvlink"):
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
            state, ec = "FAILED", "1:0"
        elif a.kind == "timelimit":
            add(a.R + 0.002, f"Time limit exhausted for JobId={a.job}")
            add(end, f"_job_complete: JobId={a.job} WTERMSIG 15")
            state, ec = "TIMEOUT", "0:0"
        else:
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 0")
            state, ec = "COMPLETED", "0:0"
        add(end + 0.01, f"_job_complete: JobId={a.job} done")
        row(a.job, state, ec, sub, a.S, a.E, a.nodes)
        if a.kind == "ecc":
            td = a.E + 95
            add(td, f"update_node: node {ECC[0]} reason set to: epilog: dcgmi diag failed GPU{ECC[1]} (row remap "
                    f"pending)")
            add(td + 0.01, f"update_node: node {ECC[0]} state set to DRAINED")
            add(prolog["S"] - 40, f"_slurm_rpc_submit_batch_job: JobId=730133 InitPrio=1{rng.randint(1000, 9999)} "
                                  f"usec=588")
            add(prolog["S"] + 0.01, f"sched: Allocate JobId=730133 NodeList={hostlist(prolog['nodes'])} "
                                    f"#CPUs={224 * 12} Partition=gpu")
            add(prolog["fail"] + 0.3, f"error: Prolog failure on node {PROLOG_BAD[0]}, draining the node")
            add(prolog["fail"] + 0.31, f"drain_nodes: node {PROLOG_BAD[0]} state set to DRAIN")
            add(prolog["fail"] + 0.4, "Requeuing JobId=730133")
            add(prolog["E"], "_job_complete: JobId=730133 done")
            rows.append((prolog["S"], f"730133|train34b|llmteam|gpu|{224 * 12}|REQUEUED|0:0|"
                                      f"{slurm_ts(prolog['S'] - 40)}|{slurm_ts(prolog['S'])}|{slurm_ts(prolog['E'])}|"
                                      f"{elapsed(prolog['E'] - prolog['S'])}|12|{hostlist(prolog['nodes'])}"))
        if a.kind == "nvlink":
            add(a.E + 120, f"update_node: node {NVL[0]} reason set to: Xid 74 NVLink GPU{NVL[1]} link {NVL[2]}")
            add(a.E + 120.01, f"update_node: node {NVL[0]} state set to DRAINING")
            add(a.E + 121, f"update_node: node {NVL[0]} reason set to: none")
    rows.sort(key=lambda x: x[0])
    write(bundle / "scheduler" / "slurmctld.log", L.text())
    write(bundle / "scheduler" / "sacct.psv", ("\n".join([hdr] + [r for _, r in rows]) + "\n").encode())


def inventory() -> str:
    return f"""# lakeshore GPU cluster (Chicago)
[providers.{PROVIDER}]
usd_per_gpu_hour = 2.41

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = {GPN}
interconnect = "InfiniBand NDR 8x400G, GPFS (IBM Storage Scale) over IB"
nodes = "lkc-g[01-15]"
"""


def run_toml() -> str:
    return f"""cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.4e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --nodes=12 --gpus-per-node=8 --time=12:00:00 --requeue train34b.sbatch"
"""


def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts, prolog = build(seed)
    info: dict = {}
    write(bundle / "inventory.toml", inventory().encode())
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", run_toml().encode())
    for a in atts:
        write(rdir / f"attempt-{a.k}" / f"slurm-{a.job}.out", slurm_out(a, seed, info))
    node_files(atts, prolog, seed, bundle, info)
    scheduler(atts, prolog, bundle, seed)
    cats, total, per = ledger(atts)
    g = GPUS / 3600.0
    incs = []
    for j, a in enumerate(atts[:4]):
        gh = {k: round(v * g, 4) for k, v in per[j].items()}
        incs.append({"id": len(incs) + 1, "attempt": a.k, "slurm_job": a.job, "failure_mode": a.mode,
                     "blame": "user" if a.mode == "time_limit" else "provider", "host": a.host,
                     "cluster": CLUSTER, "provider": PROVIDER, "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E),
                     "last_ckpt_step": a.last_ckpt, "gpu_hours": gh, "gpu_hours_lost": round(sum(gh.values()), 4)})
    incs.insert(2, {"id": 0, "attempt": None, "slurm_job": 730133, "failure_mode": "gpu_hw_other",
                    "blame": "provider", "host": PROLOG_BAD[0], "gpu_index": PROLOG_BAD[1], "cluster": CLUSTER,
                    "provider": PROVIDER, "root_ts": iso_z(prolog["fail"]), "exit_ts": iso_z(prolog["E"]),
                    "note": "prolog dcgmi diag failure; the requeued run's window is restart time",
                    "gpu_hours_lost": round((atts[2].S - prolog["S"]) * g, 4)})
    for i, x in enumerate(incs):
        x["id"] = i + 1
    decoys = {THERMAL_WARN_HOST: "dcgmi diag -r 2 passed with a thermal-violation Warning (prolog of attempt 4)",
              REPLAY_HOST: "a few correctable NVLink replay errors in every epilog; training at pace"}
    for h in USED:
        if h not in (EXPEL_HOST, ECC[0], PROLOG_BAD[0], NVL[0]) and h not in decoys:
            decoys[h] = "GPFS informational lines only (recovering the expelled node, reconnects)"
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "first_start_ts": iso_z(atts[0].S), "last_end_ts": iso_z(atts[-1].E), "site_timezone": "America/Chicago",
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "nodes": hostlist(a.nodes), "start_ts": iso_z(a.S),
                      "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E), "loaded_step": a.load,
                      "last_step": a.steps[-1][0], "saves": [n for n, _, _ in a.saves], "end": a.kind}
                     for a in atts],
        "requeued_prolog_run": {"job": 730133, "start_ts": iso_z(prolog["S"]), "end_ts": iso_z(prolog["E"])},
        "incidents": incs, "decoy_hosts": sorted(decoys), "decoy_reasons": decoys, "hardware_modes": HW_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incs), 4)},
        "info": {k: iso_z(v) for k, v in info.items()},
        "notes": "Times UTC. Slurm, syslog and sacct print America/Chicago naive local time (DST ends 2026-11-01 "
                 "07:00 UTC); the trainer prints UTC with Z; mmfs.log prints its own offset.",
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
