#!/usr/bin/env python3
"""Own campaign deepspeed_pdsh: a DeepSpeed job launched over pdsh on a static reservation, no Slurm.

Written before reading clusterlab's analysis code (issue 29). Standard library only, deterministic per
--seed (gzip members have mtime=0 and no name). Usage: deepspeed_pdsh.py --out DIR [--seed N]

Writes, under --out DIR:
  DIR/bundle/inventory.toml, DIR/bundle/runs/ds-gpt-30b/run.toml
  DIR/bundle/runs/ds-gpt-30b/wrapper.log            the team's relaunch wrapper (true UTC clock): "relaunch N",
                                                    "deepspeed exited with code C", "stopped by user"
  DIR/bundle/runs/ds-gpt-30b/attempt-<k>/ds_console.log[.gz]  what `deepspeed --hostfile` printed on nc-01: the
                                                    runner's lines, then every remote line behind pdsh's "host: "
  DIR/bundle/nodes/<host>/journal-k.log             journalctl -k -o short-precise (even-numbered hosts)
  DIR/bundle/nodes/<host>/dmesg.log + proc_stat | uptime_s.txt   raw dmesg (seconds since boot) with the
                                                    host's /proc/stat (btime) or `uptime -s` (odd hosts)
  DIR/bundle/nodes/nc-06/nvidia-smi-query.csv       nvidia-smi --query-gpu CSV loop during attempt 5 (and nc-05,
                                                    a healthy peer, for comparison)
  DIR/truth.json

Scenario (run "ds-gpt-30b": 96 GPUs = 12 nodes x 8 H100-SXM of a neocloud reservation "lumen"/"lm-res1";
14 reserved nodes nc-01..nc-14, nc-13 and nc-14 spares; all truth times are the wrapper's clock, true
UTC; every node's clock is off by up to ~5 s and DeepSpeed stamps lines with the node's clock):
  attempt 1  fresh start; fp16 loss-scale OVERFLOW skips in the first steps (routine); the kernel OOM
             killer on nc-04 kills one rank (a host-memory leak in the data pipeline, "Out of memory: Killed
             process"), its launcher reports "exits with return code = -9", the other ranks' NCCL remote
             errors follow within seconds                                       [host_oom, nc-04]
  attempt 2  the mlx5 port of nc-09's rail 3 flaps (Link down/up several times); NET/IB retry-exceeded
             completions (status=12) on nc-09 and its rail peers nc-08/nc-10, every rank aborts
                                                                                [network, nc-09]
  attempt 3  Xid 79 on nc-02 GPU 6; the other ranks' watchdogs fire 30 min later (timeout 30 min)
                                                                                [gpu_fell_off_bus, nc-02]
  attempt 4  (nc-02 out, spare nc-13 in) the dataset's NFS server data-nfs02 hangs: the dataloader of the 4
             nodes that read the dataset from NFS (the others have a local NVMe copy) blocks; "nfs: server
             data-nfs02 not responding" only on those 4 nodes, hung tasks on two of them; 30 min later the
             watchdog on the other nodes' ranks. Cause: the storage server       [filesystem_io, host null]
  attempt 5  GPU 3 of nc-06 throttles (HW thermal slowdown, SM clock 1980 -> ~1100 MHz) for a stretch of
             steps: every step +38 % (the job waits for its slowest rank); nvidia-smi CSV shows it
                                                                                [gpu_throttle, nc-06]
             ... later the user stops the job (the wrapper logs "stopped by user") [manual_stop, host null]
  attempt 6  rank 85 (nc-11 GPU 5) stops entering collectives; with TORCH_NCCL_DESYNC_DEBUG=1 the other
             ranks' watchdog reports name rank 85 as the lagging rank           [nccl_timeout, nc-11]
  attempt 7  (nc-11 out, spare nc-14 in) a second host OOM, on nc-07 (raw dmesg) [host_oom, nc-07]
  attempt 8  completes (final save, "exits successfully").
  Decoys: Xid 63 (row remap pending) on nc-05 mid attempt 2, the job steps on; Xid 94 (contained ECC) on the
  idle spare nc-14 during attempt 1; harmless NCCL WARN "Got async event : GID table change" from nc-03;
  nc-08/nc-10 (rail peers of the flap: their NET/IB errors are symptoms); the NFS reader hosts of attempt 4
  (symptoms of the server); fp16 OVERFLOW skips.

Ledger (truth.json expected_ledger, GPU-hours = 96 x seconds / 3600; the conventions of campaign1/2):
  startup    = attempt start (wrapper "relaunch N") -> first training step start
  productive = kept steps (step <= last durable checkpoint of an ended attempt; all steps of the completed
               attempt), whole step durations; inside the throttle window only the baseline step time
  straggler  = step time above the baseline inside the throttle window
  checkpoint = completed saves (DeepSpeed "Checkpoint global_stepN is ready now!"), plus the tail after the final save
  recompute  = end of the attempt's last durable save (or its first step start) -> root event
  hang       = root event -> attempt exit (wrapper "deepspeed exited"). Root events: the OOM kill, the first
               Link down, the Xid 79, the end of the last completed step (NFS stall, desync hang), the user's stop
               (the wrapper logs the exit within ~2 s of the launcher's last line; its "relaunch N" ~2 s before the
               runner's `cmd = pdsh ...` line: the wrapper's own log is a custom format a reader may not know)
  restart    = attempt exit -> next attempt start;  slowdown = data_stall = idle = 0

Formats (public material found with the search tools; written anew): DeepSpeed runner/launch.py lines
"[%Y-%m-%d %H:%M:%S,%f] [INFO] [launch.py:NNN:main] ...", "[ERROR] [launch.py:NNN:sigkill_handler] [...] exits with
return code = -9", log_dist "[Rank 0] step=N, skipped=K, lr=[...], mom=[...]", timer.py "epoch=0/micro_step=N/
global_step=N, RunningAvgSamplesPerSec=..., CurrSamplesPerSec=...", loss_scaler "[deepspeed] OVERFLOW! Rank 0
Skipping step. Attempted loss scale: X, reducing to Y", torch_checkpoint_engine "[Torch] Checkpoint global_stepN is
ready now!"; pdsh "host: " prefix and "pdsh@host: host: ssh exited with exit code N"; PyTorch ProcessGroupNCCL watchdog
and desync report (TraceUtils.h retrieveDesyncReport); NVRM Xid lines; the kernel OOM killer; mlx5 "Link down";
NFS "not responding"/"OK"; hung task reports; nvidia-smi --query-gpu CSV.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import random
from datetime import UTC, datetime
from pathlib import Path

RUN = "ds-gpt-30b"
CLUSTER, PROVIDER = "lm-res1", "lumen"
GPN, NODES_USED = 8, 12
GPUS = GPN * NODES_USED
MICRO, GAS, SEQ = 1, 4, 4096
GLOBAL_BATCH = MICRO * GAS * GPUS  # 768 samples
TOKENS_PER_STEP = GLOBAL_BATCH * SEQ
FLOPS_PER_TOKEN = 1.86e11
BASE_STEP = 6.400
JITTER = 0.0005
SAVE_EVERY = 250
WATCHDOG_S = 1800
TRAIN_STEPS = 9000
T0 = datetime(2026, 12, 1, 6, 0, 0, tzinfo=UTC).timestamp()
HOSTS = [f"nc-{i:02d}" for i in range(1, 15)]
CKPT = "/mnt/weka/ckpt/gpt30b"
NFS_SERVER = "data-nfs02"
THROTTLE = {"host": "nc-06", "gpu": 3, "factor": 1.38}
BUSIDS = ["19000", "3b000", "4c000", "5d000", "9b000", "bb000", "cb000", "db000"]
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
    "gpu_throttle",
]


def ip(h: str) -> str:
    return f"10.40.0.{10 + int(h[3:])}"


def ds_ts(t: float) -> str:  # DeepSpeed's logger: "[2026-12-01 06:00:00,123]"
    d = datetime.fromtimestamp(int(t), UTC)
    return f"[{d:%Y-%m-%d %H:%M:%S},{int((t % 1) * 1000):03d}]"


def iso_z(t: float) -> str:
    d = datetime.fromtimestamp(int(t), UTC)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{int((t % 1) * 1000):03d}Z"


def glog(t: float) -> str:  # c10 logging "E1201 06:00:00.123456789"
    d = datetime.fromtimestamp(int(t), UTC)
    return f"E{d:%m%d %H:%M:%S}.{int((t % 1) * 1e9):09d}"


class Sink:
    def __init__(self) -> None:
        self.items: list[tuple[float, int, str]] = []

    def add(self, t: float, line: str) -> None:
        self.items.append((t, len(self.items), line))

    def render(self) -> bytes:
        self.items.sort()
        return ("\n".join(x[2] for x in self.items) + "\n").encode()


def write(path: Path, data: bytes, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as f:
            f.write(data)
        data = buf.getvalue()
    path.write_bytes(data)


# ----------------------------------------------------------------------------- timeline
class Attempt:
    def __init__(self, **kw) -> None:
        self.__dict__.update(kw)
        self.steps: list[tuple[int, float, float]] = []
        self.saves: list[tuple[int, float, float]] = []
        self.R: float | None = None
        self.E = 0.0


def simulate(a: Attempt, rng: random.Random) -> None:
    t, n = a.F, a.load
    win = a.__dict__.get("window")
    while True:
        if a.kind == "complete" and n >= TRAIN_STEPS:
            break
        if a.kind != "complete" and t >= a.F + a.run_for:
            break
        dur = BASE_STEP * (1 + rng.uniform(-JITTER, JITTER))
        if win and win[0] <= n + 1 - a.load <= win[1]:
            dur *= THROTTLE["factor"]
        a.steps.append((n + 1, t, dur))
        t += dur
        n += 1
        if n % SAVE_EVERY == 0 and not (a.kind != "complete" and t + 120 >= a.F + a.run_for):
            c = round(rng.uniform(52.0, 71.0), 3)
            a.saves.append((n, t, c))
            t += c
    last_end = a.steps[-1][1] + a.steps[-1][2]
    if a.kind == "complete":
        a.E = a.saves[-1][1] + a.saves[-1][2] + 6.0
        return
    # root events (see the docstring); the wrapper sees the launcher exit at E
    if a.kind == "oom":
        a.R = last_end + rng.uniform(1.0, 4.0)  # killed mid-step
        a.E = a.R + rng.uniform(8.5, 10.0)
    elif a.kind == "flap":
        a.R = last_end + rng.uniform(1.0, 4.0)
        a.E = a.R + rng.uniform(28.0, 30.0)
    elif a.kind == "xid79":
        a.R = last_end + rng.uniform(1.0, 4.0)
        a.E = a.R + WATCHDOG_S + rng.uniform(16.0, 18.0)
    elif a.kind in ("nfs", "desync"):
        a.R = last_end
        a.E = a.R + WATCHDOG_S + rng.uniform(16.0, 18.0)
    elif a.kind == "cancel":
        a.R = last_end + rng.uniform(1.0, 4.0)
        a.E = a.R + rng.uniform(3.0, 4.0)


def build(seed: int) -> list[Attempt]:
    rng = random.Random(f"{seed}-dsp-timeline")
    base = HOSTS[:12]
    a4 = [h if h != "nc-02" else "nc-13" for h in base]
    a7 = [h if h != "nc-11" else "nc-14" for h in a4]
    specs = [
        dict(k=1, kind="oom", mode="host_oom", host="nc-04", nodes=base, run_for=2.1 * 3600),
        dict(k=2, kind="flap", mode="network", host="nc-09", nodes=base, run_for=1.6 * 3600),
        dict(k=3, kind="xid79", mode="gpu_fell_off_bus", host="nc-02", nodes=base, run_for=2.4 * 3600),
        dict(k=4, kind="nfs", mode="filesystem_io", host=None, nodes=a4, run_for=1.8 * 3600),
        dict(k=5, kind="cancel", mode="manual_stop", host=None, nodes=a4, run_for=3.2 * 3600, window=(420, 1010)),
        dict(k=6, kind="desync", mode="nccl_timeout", host="nc-11", nodes=a4, run_for=1.9 * 3600),
        dict(k=7, kind="oom", mode="host_oom", host="nc-07", nodes=a7, run_for=1.3 * 3600),
        dict(k=8, kind="complete", mode=None, host=None, nodes=a7, run_for=0),
    ]
    out, t, load = [], T0, 0
    for s in specs:
        a = Attempt(**s)
        a.run_for += rng.uniform(0, 1500)
        a.S, a.load = t, load
        a.F = a.S + rng.uniform(150.0, 190.0) + (25.0 if load else 0.0)
        simulate(a, random.Random(f"{seed}-dsp-steps-{a.k}"))
        a.last_ckpt = a.saves[-1][0] if a.saves else a.load
        load = a.last_ckpt
        t = a.E + rng.uniform(240.0, 600.0)
        out.append(a)
    return out


def ledger(atts: list[Attempt]):
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
        kept = a.last_ckpt if a.kind != "complete" else 10**9
        for n, _, d in a.steps:
            if n <= kept:
                base = d / THROTTLE["factor"] if d > BASE_STEP * 1.01 else d
                cats["productive"] += base
                cats["straggler"] += d - base
        cats["checkpoint"] += sum(c for _, _, c in a.saves)
        if a.kind == "complete":
            cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        start = (a.saves[-1][1] + a.saves[-1][2]) if a.saves else a.F
        nxt = atts[i + 1]
        cats["recompute"] += a.R - start
        cats["hang"] += a.E - a.R
        cats["restart"] += nxt.S - a.E
        per.append(dict(hang=a.E - a.R, recompute=a.R - start, restart=nxt.S - a.E, startup=nxt.F - nxt.S))
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return (
        {k: round(v * g, 4) for k, v in cats.items()},
        round(total * g, 4),
        [{k: round(v * g, 4) for k, v in d.items()} for d in per],
    )


# ----------------------------------------------------------------------------- the console
class Console:
    """ds_console.log of one attempt: the runner's own lines (nc-01's clock) and pdsh-relayed remote lines."""

    def __init__(self, a: Attempt, skew: dict[str, float], seed: int) -> None:
        self.a, self.skew, self.sink = a, skew, Sink()
        r = random.Random(f"{seed}-dsp-pids-{a.k}")
        self.agent = {h: r.randint(20_000, 900_000) for h in a.nodes}
        self.pid = {(h, g): self.agent[h] + 17 + g for h in a.nodes for g in range(GPN)}

    def local(self, t: float, line: str) -> None:
        self.sink.add(t, line)

    def remote(self, t: float, h: str, line: str) -> None:
        self.sink.add(t, f"{h}: {line}")

    def ds(self, t: float, h: str, level: str, where: str, msg: str) -> None:
        self.remote(t, h, f"{ds_ts(t + self.skew[h])} [{level}] [{where}] {msg}")

    def rank(self, h: str, g: int) -> int:
        return self.a.nodes.index(h) * GPN + g

    def argv(self, g: int) -> str:
        return f"['/usr/bin/python3', '-u', 'pretrain_gpt.py', '--local_rank={g}', '--deepspeed_config', 'ds_z2.json']"


def console(a: Attempt, skew: dict[str, float], seed: int, info: dict) -> bytes:
    c = Console(a, skew, seed)
    rng = random.Random(f"{seed}-dsp-console-{a.k}")
    h0 = a.nodes[0]
    S = a.S
    c.local(
        S + 1.0,
        f"{ds_ts(S + 1.0 + skew[h0])} [INFO] [real_accelerator.py:191:get_accelerator] Setting "
        f"ds_accelerator to cuda (auto detect)",
    )
    c.local(
        S + 2.1,
        f"{ds_ts(S + 2.1 + skew[h0])} [INFO] [multinode_runner.py:80:get_cmd] Running on the following "
        f"workers: {','.join(a.nodes)}",
    )
    c.local(
        S + 2.2,
        f"{ds_ts(S + 2.2 + skew[h0])} [INFO] [runner.py:568:main] cmd = pdsh -S -f 1024 -w "
        f"{','.join(a.nodes)} export NCCL_DEBUG=WARN; export TORCH_NCCL_DESYNC_DEBUG=1; cd /home/ml/gpt; "
        f"/usr/bin/python3 -u -m deepspeed.launcher.launch --world_info=eyJuYy0wMSI6IFswLCAxXX0= "
        f"--node_rank=%n --master_addr={ip(h0)} --master_port=29500 pretrain_gpt.py --deepspeed_config "
        f"ds_z2.json",
    )
    for i, h in enumerate(a.nodes):
        t = S + 6.0 + 0.07 * i + rng.uniform(0, 0.5)
        c.ds(
            t,
            h,
            "INFO",
            "launch.py:146:main",
            "WORLD INFO DICT: {" + ", ".join(f"'{x}': [0, 1, 2, 3, 4, 5, 6, 7]" for x in a.nodes) + "}",
        )
        c.ds(t + 0.001, h, "INFO", "launch.py:152:main", f"nnodes={len(a.nodes)}, num_local_procs={GPN}, node_rank={i}")
        c.ds(
            t + 0.0015,
            h,
            "INFO",
            "launch.py:163:main",
            "global_rank_mapping=defaultdict(<class 'list'>, {"
            + ", ".join(f"'{x}': [{', '.join(str(j * GPN + g) for g in range(GPN))}]" for j, x in enumerate(a.nodes))
            + "})",
        )
        c.ds(t + 0.002, h, "INFO", "launch.py:164:main", f"dist_world_size={GPUS}")
        c.ds(t + 0.003, h, "INFO", "launch.py:166:main", "Setting CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7")
        for g in range(GPN):
            c.ds(
                t + 0.01 + g * 0.002,
                h,
                "INFO",
                "launch.py:256:main",
                f"process {c.pid[h, g]} spawned with command: {c.argv(g)}",
            )
    t = S + 31.0
    c.ds(t, h0, "INFO", "comm.py:637:init_distributed", "cdb=None")
    c.ds(
        t + 0.2, h0, "INFO", "comm.py:668:init_distributed", "Initializing TorchBackend in DeepSpeed with backend nccl"
    )
    if "nc-03" in a.nodes:  # decoy: harmless NCCL WARN
        c.remote(
            t + 40.0,
            "nc-03",
            f"nc-03:{c.pid['nc-03', 3]}:{c.pid['nc-03', 3] + 611} [3] transport/net_ib.cc:100 "
            f"NCCL WARN NET/IB : mlx5_4:1 Got async event : GID table change",
        )
    c.ds(
        t + 60.0,
        h0,
        "INFO",
        "logging.py:128:log_dist",
        "[Rank 0] DeepSpeed info: version=0.14.4, git-hash=unknown, git-branch=unknown",
    )
    c.ds(t + 61.0, h0, "INFO", "stage_1_and_2.py:148:__init__", "Reduce bucket size 500000000")
    c.remote(
        t + 62.0,
        h0,
        "/usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:464: UserWarning: "
        "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly.",
    )
    if a.load:
        tl = a.F - 20.0
        c.ds(
            tl,
            h0,
            "INFO",
            "torch_checkpoint_engine.py:27:load",
            f"[Torch] Loading checkpoint from {CKPT}/global_step{a.load}/mp_rank_00_model_states.pt...",
        )
        c.ds(
            tl + 9.0,
            h0,
            "INFO",
            "torch_checkpoint_engine.py:29:load",
            f"[Torch] Loaded checkpoint from {CKPT}/global_step{a.load}/mp_rank_00_model_states.pt.",
        )
        c.ds(
            tl + 16.0,
            h0,
            "INFO",
            "engine.py:3036:_get_all_zero_checkpoint_state_dicts",
            f"successfully read {GPUS} ZeRO state_dicts for rank 0",
        )
        c.ds(
            tl + 18.0,
            h0,
            "INFO",
            "engine.py:2968:_load_zero_checkpoint",
            f"loading {GPUS} zero partition checkpoints for rank 0",
        )
    scale = 65536
    saves = {n: (t0, d) for n, t0, d in a.saves}
    lrng = random.Random(f"{seed}-dsp-loss-{a.k}")
    skipped = 0
    for n, t0, d in a.steps:
        end = t0 + d
        if n <= 3 and a.load == 0:  # fp16 loss scale finds its level: routine
            c.ds(
                end - 0.01,
                h0,
                "INFO",
                "loss_scaler.py:190:update_scale",
                f"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {scale}, reducing to {scale // 2}",
            )
            scale //= 2
            skipped += 1
        lr = 3e-4 * min(1.0, n / 500)
        c.ds(
            end,
            h0,
            "INFO",
            "logging.py:128:log_dist",
            f"[Rank 0] step={n}, skipped={skipped}, lr=[{lr:.8f}, {lr:.8f}], mom=[[0.9, 0.95], [0.9, 0.95]]",
        )
        c.ds(
            end + 0.001,
            h0,
            "INFO",
            "timer.py:264:stop",
            f"epoch=0/micro_step={n * GAS}/global_step={n}, RunningAvgSamplesPerSec={GLOBAL_BATCH / BASE_STEP:.4f}, "
            f"CurrSamplesPerSec={GLOBAL_BATCH / d:.4f}, MemAllocated=21.3GB, MaxMemAllocated=58.84GB",
        )
        if n % 50 == 0:
            c.remote(
                end + 0.01, h0, f"iteration {n}: lm loss {2.1 + 6 * 2.718 ** (-n / 900) + lrng.gauss(0, 0.02):.4f}"
            )
        if n in saves:
            s0, cs = saves[n]
            p = f"{CKPT}/global_step{n}"
            c.ds(
                s0 + 0.05,
                h0,
                "INFO",
                "logging.py:128:log_dist",
                f"[Rank 0] [Torch] Checkpoint global_step{n} is about to be saved!",
            )
            c.ds(
                s0 + 0.06,
                h0,
                "INFO",
                "logging.py:128:log_dist",
                f"[Rank 0] Saving model checkpoint: {p}/mp_rank_00_model_states.pt",
            )
            c.ds(
                s0 + 0.07,
                h0,
                "INFO",
                "torch_checkpoint_engine.py:21:save",
                f"[Torch] Saving {p}/mp_rank_00_model_states.pt...",
            )
            c.ds(
                s0 + 14.0,
                h0,
                "INFO",
                "torch_checkpoint_engine.py:23:save",
                f"[Torch] Saved {p}/mp_rank_00_model_states.pt.",
            )
            c.ds(
                s0 + cs - 0.02,
                h0,
                "INFO",
                "engine.py:3488:_save_zero_checkpoint",
                f"zero checkpoint saved {p}/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt",
            )
            c.ds(
                s0 + cs,
                h0,
                "INFO",
                "torch_checkpoint_engine.py:33:commit",
                f"[Torch] Checkpoint global_step{n} is ready now!",
            )
    ending(c, a, rng, info)
    return c.sink.render()


def watchdog(c: Console, t: float, h: str, g: int, seq: int) -> None:
    r = c.rank(h, g)
    sk = c.skew[h]
    pre = f"[rank{r}]:[{glog(t + sk)} ProcessGroupNCCL.cpp:616] [Rank {r}] "
    c.remote(
        t,
        h,
        pre + f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, "
        f"NumelIn=1, NumelOut=1, Timeout(ms)={WATCHDOG_S * 1000}) ran for {WATCHDOG_S * 1000 + 19} "
        f"milliseconds before timing out.",
    )


def remote_error(c: Console, t: float, h: str, g: int) -> None:
    r = c.rank(h, g)
    c.remote(
        t,
        h,
        f"[rank{r}]:[{glog(t + c.skew[h])} ProcessGroupNCCL.cpp:1804] [PG ID 0 PG GUID 0(default_pg) "
        f"Rank {r}] Process group watchdog thread terminated with exception: NCCL error: remote process "
        f"exited or there was a network error, NCCL version 2.21.5",
    )
    c.remote(
        t + 0.001,
        h,
        f"[rank{r}]:ncclRemoteError: A call failed possibly due to a network error or a remote "
        f"process exiting prematurely.",
    )


def exits(c: Console, t: float, h: str, first_g: int, code: int) -> None:
    """The launcher of host h: one rank exits with code, launch.py kills the rest and relays it; pdsh reports."""
    c.ds(t, h, "INFO", "launch.py:319:sigkill_handler", f"Killing subprocess {c.pid[h, first_g]}")
    for g in range(GPN):
        if g != first_g:
            c.ds(t + 0.002 * (g + 1), h, "INFO", "launch.py:319:sigkill_handler", f"Killing subprocess {c.pid[h, g]}")
    c.ds(t + 0.03, h, "ERROR", "launch.py:325:sigkill_handler", f"{c.argv(first_g)} exits with return code = {code}")
    c.local(t + 0.2, f"pdsh@{c.a.nodes[0]}: {h}: ssh exited with exit code {code % 256}")


def ending(c: Console, a: Attempt, rng: random.Random, info: dict) -> None:
    nodes = a.nodes
    seq = 40_000 + a.steps[-1][0] * 37
    if a.kind == "complete":
        c.ds(a.E - 3.0, nodes[0], "INFO", "logging.py:128:log_dist", "[Rank 0] training finished")
        for i, h in enumerate(nodes):
            for g in range(GPN):
                c.ds(
                    a.E - 1.5 + 0.01 * i, h, "INFO", "launch.py:351:main", f"Process {c.pid[h, g]} exits successfully."
                )
        return
    if a.kind == "oom":
        h = a.host
        g = rng.randrange(GPN)
        info[a.k] = {"gpu": g, "pid": c.pid[h, g]}
        exits(c, a.R + 0.8, h, g, -9)
        for i, x in enumerate(nodes):
            if x == h:
                continue
            for gg in (0, 4):
                remote_error(c, a.R + 2.0 + 0.05 * i + gg * 0.01, x, gg)
            exits(c, a.R + 6.0 + 0.1 * i, x, 0, -6)
    elif a.kind == "flap":
        h = a.host
        i9 = nodes.index(h)
        for x in (nodes[i9 - 1], h, nodes[i9 + 1]):
            p = c.pid[x, 3]
            peer = nodes[i9 + 1] if x == h else h
            c.remote(
                a.R + 18.0 + 0.2 * (x != h),
                x,
                f"{x}:{p}:{p + 701} [3] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
                f"{ip(peer)}<50514> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid "
                f"fe80::a088:c203:e1:{int(x[3:]):x} remoteGids fe80::a088:c203:e1:{int(peer[3:]):x}",
            )
            remote_error(c, a.R + 19.0 + 0.2 * (x != h), x, 3)
        for i, x in enumerate(nodes):
            if x not in (nodes[i9 - 1], h, nodes[i9 + 1]):
                for gg in (0, 5):
                    remote_error(c, a.R + 24.0 + 0.05 * i + gg * 0.01, x, gg)
        exits(c, a.R + 19.5, h, 3, -6)
        for i, x in enumerate(nodes):
            if x != h:
                exits(c, a.R + 25.0 + 0.1 * i, x, 0, -6)
    elif a.kind in ("xid79", "nfs", "desync"):
        stuck = set()
        if a.kind == "xid79":
            stuck = {(a.host, 6)}
        elif a.kind == "nfs":
            stuck = {(x, g) for x in info["nfs_readers"] for g in range(GPN)}
        else:
            stuck = {(a.host, 5)}
        tw = a.R + WATCHDOG_S + 6.0
        lag = sorted(c.rank(x, g) for x, g in stuck)
        for i, x in enumerate(nodes):
            for g in range(GPN):
                if (x, g) in stuck or g not in (0, 2, 7):
                    continue
                watchdog(c, tw + 0.03 * i + 0.003 * g, x, g, seq + 1)
                if a.kind == "desync" and g == 0 and i < 3:
                    r = c.rank(x, g)
                    others = [q for q in range(GPUS) if q not in lag]
                    t1 = tw + 0.03 * i + 0.02
                    c.remote(
                        t1,
                        x,
                        f"[rank{r}]:[{glog(t1 + c.skew[x])} ProcessGroupNCCL.cpp:1321] [PG ID 0 PG GUID "
                        f"0(default_pg) Rank {r}] ",
                    )
                    for ln in (
                        f"\t - [{r}] Timeout at collective: ALLREDUCE, #{seq + 1}",
                        "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
                        f"\t     [{', '.join(map(str, lag))}] finished collective #{seq}, but didn't join "
                        f"collective #{seq + 1} (count from 1)",
                        "\t - Snapshot of ranks' latest states:",
                        f"\t   #{seq} finished ranks:",
                        f"\t     [{', '.join(map(str, lag))}] finished ALLREDUCE",
                        f"\t   #{seq + 1} started ranks:",
                        f"\t     [{', '.join(map(str, others))}] started ALLREDUCE",
                    ):
                        c.remote(t1, x, ln)
        first = True
        for i, x in enumerate(nodes):
            if all((x, g) in stuck for g in range(GPN)):
                continue
            g0 = next(g for g in range(GPN) if (x, g) not in stuck)
            c.remote(
                tw + 0.5 + 0.03 * i,
                x,
                f"[rank{c.rank(x, g0)}]:terminate called after throwing an instance of 'c10::DistBackendError'",
            )
            exits(c, tw + 2.0 + 0.05 * i, x, g0, -6)
            first = False
        for i, x in enumerate(nodes):  # the stuck ranks' launchers: killed by pdsh teardown
            if all((x, g) in stuck for g in range(GPN)):
                exits(c, tw + 8.0 + 0.05 * i, x, 0, -15)
        del first
    elif a.kind == "cancel":
        for i, x in enumerate(nodes):
            c.ds(a.R + 1.0 + 0.02 * i, x, "INFO", "launch.py:319:sigkill_handler", f"Killing subprocess {c.pid[x, 0]}")
        c.local(a.R + 1.5, f"pdsh@{nodes[0]}: interrupt (one more within 1 sec to abort)")
        c.local(a.R + 1.6, f"pdsh@{nodes[0]}:  (^Z within 1 sec to cancel pending threads)")
        c.local(a.R + 2.0, f"pdsh@{nodes[0]}: sending SIGTERM to ssh {','.join(nodes)}")


# ----------------------------------------------------------------------------- wrapper, kernel, telemetry
def wrapper_log(atts: list[Attempt]) -> bytes:
    s = Sink()
    for a in atts:
        hl = ",".join(a.nodes)
        s.add(a.S, f"{iso_z(a.S)} relaunch {a.k} hosts={hl} resume={f'global_step{a.load}' if a.load else 'none'}")
        if a.kind == "cancel":
            s.add(a.R, f"{iso_z(a.R)} stopped by user (ops@lumen: pausing to swap the data mix); sending SIGINT")
            s.add(a.E, f"{iso_z(a.E)} deepspeed exited with code 130")
        elif a.kind == "complete":
            s.add(a.E, f"{iso_z(a.E)} deepspeed exited with code 0; training complete")
        else:
            code = {"oom": 247, "flap": 250, "xid79": 250, "nfs": 250, "desync": 250}[a.kind]
            s.add(a.E, f"{iso_z(a.E)} deepspeed exited with code {code}; will relaunch from the newest checkpoint")
    return s.render()


def xid_lines(busid: str, code: int, pid: int, rng: random.Random) -> list[str]:
    pci = f"PCI:0000:{busid[:2]}:00"
    if code == 79:
        return [
            f"NVRM: GPU at PCI:0000:{busid[:2]}:00: GPU-{rng.getrandbits(32):08x}-4f1c-9e2a-71b3-"
            f"{rng.getrandbits(48):012x}",
            f"NVRM: GPU Board Serial Number: 16523{rng.randint(10000000, 99999999)}",
            f"NVRM: Xid ({pci}): 79, pid={pid}, name=python3, GPU has fallen off the bus.",
            f"NVRM: GPU 0000:{busid[:2]}:00.0: GPU has fallen off the bus.",
        ]
    if code == 63:
        return [
            f"NVRM: Xid ({pci}): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row "
            f"(0x{rng.getrandbits(36):09x}) marked for remapping, reset gpu to activate."
        ]
    return [
        f"NVRM: Xid ({pci}): 94, pid='<unknown>', name=<unknown>, Contained: CE User Channel "
        f"(0x{rng.randint(1, 9):x}). "
        f"RST: No, D-RST: No"
    ]


def kernel_events(h: str, atts: list[Attempt], seed: int, info: dict) -> list[tuple[float, str]]:
    rng = random.Random(f"{seed}-dsp-kern-{h}")
    ev: list[tuple[float, str]] = []
    t = T0 - 3000
    while t < atts[-1].E + 600:  # routine chatter
        ev.append(
            (
                t,
                rng.choice(
                    [
                        'audit: type=1400 audit(0.0:1): apparmor="STATUS" operation="profile_replace"',
                        "IPv6: ADDRCONF(NETDEV_CHANGE): veth3a1: link becomes ready",
                        "nvidia-peermem nv_mem_peer_get_pages: nv_mem_peer_get_pages: GPU memory pinned",
                    ]
                ),
            )
        )
        t += rng.uniform(1500, 4000)
    for a in atts:
        if a.kind == "oom" and h == a.host:
            pid = info[a.k]["pid"]
            ev += [
                (
                    a.R - 0.2,
                    "python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
                    "oom_score_adj=0",
                ),
                (
                    a.R - 0.19,
                    f"CPU: 51 PID: {pid + 3} Comm: python3 Tainted: P           OE     5.15.0-122-generic #132-Ubuntu",
                ),
                (a.R - 0.18, "Mem-Info:"),
                (
                    a.R - 0.01,
                    "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,"
                    f"global_oom,task_memcg=/user.slice/user-1000.slice/session-4.scope,task=python3,"
                    f"pid={pid},uid=1000",
                ),
                (
                    a.R,
                    f"Out of memory: Killed process {pid} (python3) total-vm:231475920kB, anon-rss:1902338112kB, "
                    "file-rss:524288kB, shmem-rss:1048576kB, UID:1000 pgtables:3790844kB oom_score_adj:0",
                ),
                (
                    a.R + 1.4,
                    f"oom_reaper: reaped process {pid} (python3), now anon-rss:0kB, file-rss:0kB, shmem-rss:1048576kB",
                ),
            ]
        if a.kind == "flap" and h == a.host:
            t = a.R
            for _ in range(5):
                ev.append((t, "mlx5_core 0000:5e:00.0 ibp94s0: Link down"))
                t += rng.uniform(2.0, 6.0)
                ev.append((t, "mlx5_core 0000:5e:00.0 ibp94s0: Link up"))
                t += rng.uniform(4.0, 12.0)
        if a.kind == "xid79" and h == a.host:
            ev += [(a.R, m) for m in xid_lines(BUSIDS[6], 79, 400000 + a.k, rng)]
        if a.kind == "nfs" and h in info["nfs_readers"]:
            t = a.R + rng.uniform(25.0, 40.0)
            info.setdefault("nfs_first", t)
            info["nfs_first"] = min(info["nfs_first"], t)
            while t < a.E + 300:
                ev.append((t, f"nfs: server {NFS_SERVER} not responding, still trying"))
                t += rng.uniform(60.0, 200.0)
            ev.append((a.E + 900 + rng.uniform(0, 30), f"nfs: server {NFS_SERVER} OK"))
            if h in info["nfs_readers"][:2]:
                for j in range(2):
                    tt = a.R + 150 + 123 * j
                    ev += [
                        (tt, f"INFO: task pt_data_worker:{60000 + j} blocked for more than {122 + 123 * j} seconds."),
                        (tt, "      Tainted: P           OE     5.15.0-122-generic #132-Ubuntu"),
                        (tt, '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.'),
                        (tt, " rpc_wait_bit_killable+0x11/0x70 [sunrpc]"),
                        (tt, " nfs_read_folio+0x1a4/0x2d0 [nfs]"),
                    ]
        if a.k == 2 and h == "nc-05":  # decoy: row remap pending, job steps on
            ev += [(a.F + 0.4 * (a.R - a.F), m) for m in xid_lines(BUSIDS[1], 63, 0, rng)]
        if a.k == 1 and h == "nc-14":  # decoy: idle spare's contained ECC
            ev += [(a.F + 0.5 * (a.R - a.F), m) for m in xid_lines(BUSIDS[4], 94, 0, rng)]
    return ev


def kernel_files(
    bundle: Path, atts: list[Attempt], skew: dict[str, float], boot: dict[str, float], seed: int, info: dict
) -> None:
    for idx, h in enumerate(HOSTS):
        ev = sorted(kernel_events(h, atts, seed, info))
        d = bundle / "nodes" / h
        if idx % 2 == 1:  # even-numbered host: journalctl -k -o short-precise
            lines = []
            for t, m in ev:
                tt = t + skew[h]
                dt = datetime.fromtimestamp(int(tt), UTC)
                lines.append(f"{dt:%b %d %H:%M:%S}.{int((tt % 1) * 1e6):06d} {h} kernel: {m}")
            write(d / "journal-k.log", ("\n".join(lines) + "\n").encode())
        else:  # raw dmesg: seconds since boot
            lines = [f"[{t - boot[h]:12.6f}] {m}" for t, m in ev]
            write(d / "dmesg.log", ("\n".join(lines) + "\n").encode())
            bt = int(boot[h] + skew[h])  # the node's own clock dates its boot
            if idx % 4 == 0:
                write(
                    d / "proc_stat",
                    (
                        f"cpu  8123 0 4412 99123412 1212 0 310 0 0 0\nintr 1234567\nctxt 98765432\n"
                        f"btime {bt}\nprocesses 812345\nprocs_running 3\nprocs_blocked 0\n"
                    ).encode(),
                )
            else:
                write(d / "uptime_s.txt", f"{datetime.fromtimestamp(bt, UTC):%Y-%m-%d %H:%M:%S}\n".encode())


def smi_csv(a: Attempt, h: str, skew: float, seed: int) -> bytes:
    rng = random.Random(f"{seed}-dsp-smi-{h}")
    win = a.window
    t_on = a.steps[win[0] - 1][1]
    t_off = a.steps[win[1] - 1][1] + a.steps[win[1] - 1][2]
    rows = [
        "timestamp, index, pci.bus_id, temperature.gpu, power.draw [W], clocks.sm [MHz], clocks.max.sm [MHz], "
        "utilization.gpu [%], clocks_throttle_reasons.active"
    ]
    t = a.F
    while t < a.R:
        d = datetime.fromtimestamp(int(t + skew), UTC)
        for g in range(GPN):
            hot = h == THROTTLE["host"] and g == THROTTLE["gpu"] and t_on <= t <= t_off
            sm = rng.randint(1085, 1140) if hot else rng.choice([1980, 1980, 1965])
            temp = rng.randint(88, 92) if hot else rng.randint(61, 72)
            pw = rng.uniform(420, 480) if hot else rng.uniform(640, 700)
            reason = "0x0000000000000040" if hot else "0x0000000000000000"
            rows.append(
                f"{d:%Y/%m/%d %H:%M:%S}.{rng.randint(0, 999):03d}, {g}, 00000000:{BUSIDS[g][:2].upper()}:00.0, "
                f"{temp}, {pw:.2f} W, {sm} MHz, 1980 MHz, 100 %, {reason}"
            )
        t += 30.0
    return ("\n".join(rows) + "\n").encode()


def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    atts = build(seed)
    frng = random.Random(f"{seed}-dsp-fleet")
    skew = {h: round(frng.uniform(0.6, 5.0) * frng.choice([-1, 1]), 3) for h in HOSTS}
    boot = {h: T0 - frng.randint(2 * 86400, 20 * 86400) + frng.random() for h in HOSTS}
    info: dict = {}
    a4 = atts[3]
    info["nfs_readers"] = [a4.nodes[i] for i in (2, 4, 7, 11)]
    write(
        bundle / "inventory.toml",
        f"""[providers.{PROVIDER}]
usd_per_gpu_hour = 2.10

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = {GPN}
interconnect = "InfiniBand NDR 8x400G"
nodes = "nc-[01-14]"
""".encode(),
    )
    rdir = bundle / "runs" / RUN
    write(
        rdir / "run.toml",
        f"""# {RUN}: GPT 30B, DeepSpeed ZeRO-2, fp16, launched with `deepspeed --hostfile` over pdsh
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.3e}
checkpoint_dir = "{CKPT}"
launcher = "deepspeed"
launch_command = "deepspeed --hostfile hostfile --launcher pdsh pretrain_gpt.py --deepspeed_config ds_z2.json"
""".encode(),
    )
    write(rdir / "wrapper.log", wrapper_log(atts))
    for a in atts:
        write(
            rdir / f"attempt-{a.k}" / ("ds_console.log" + (".gz" if a.k in (3, 8) else "")),
            console(a, skew, seed, info),
            gz=a.k in (3, 8),
        )
    kernel_files(bundle, atts, skew, boot, seed, info)
    a5 = atts[4]
    for h in (THROTTLE["host"], "nc-05"):
        write(bundle / "nodes" / h / "nvidia-smi-query.csv", smi_csv(a5, h, skew[h], seed))
    cats, total, per = ledger(atts)
    incidents = []
    for j, a in enumerate(atts[:-1]):
        incidents.append(
            {
                "id": j + 1,
                "attempt": a.k,
                "attempts": [a.k],
                "failure_mode": a.mode,
                "host": a.host,
                "cluster": CLUSTER,
                "provider": PROVIDER,
                "root_ts": iso_z(a.R),
                "exit_ts": iso_z(a.E),
                "last_ckpt_step": a.last_ckpt,
                "failed_at_step": a.steps[-1][0],
                "gpu_hours": per[j],
                "gpu_hours_lost": round(sum(per[j].values()), 4),
            }
        )
    w = a5.window
    incidents.append(
        {
            "id": len(incidents) + 1,
            "attempt": 5,
            "attempts": [5],
            "failure_mode": "gpu_throttle",
            "host": THROTTLE["host"],
            "gpu_index": THROTTLE["gpu"],
            "kind": None,
            "root_ts": iso_z(a5.steps[w[0] - 1][1]),
            "steps": [a5.steps[w[0] - 1][0], a5.steps[w[1] - 1][0]],
            "factor": THROTTLE["factor"],
        }
    )
    decoys = {
        "nc-05": "Xid 63 (row remap pending) mid attempt 2; the job stepped on",
        "nc-14": "Xid 94 contained ECC while an idle spare (attempt 1)",
        "nc-03": "NCCL WARN 'Got async event : GID table change'; harmless",
        "nc-08": "rail peer of nc-09's flapping port: NET/IB errors are symptoms",
        "nc-10": "rail peer of nc-09's flapping port: NET/IB errors are symptoms",
        **{
            h: f"reads the dataset from {NFS_SERVER}: NFS not responding is the server's symptom"
            for h in info["nfs_readers"]
        },
    }
    for h in ("nc-08", "nc-10"):
        if h in info["nfs_readers"]:
            decoys[h] += "; also an NFS reader in attempt 4"
    truth = {
        "run": RUN,
        "gpus": GPUS,
        "seed": seed,
        "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN,
        "baseline_step_s": BASE_STEP,
        "peak_flops_per_gpu": 989.4e12,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * 989.4e12), 4),
        "first_start_ts": iso_z(atts[0].S),
        "last_end_ts": iso_z(atts[-1].E),
        "clock_skew_s": skew,
        "attempts": [
            {
                "attempt": a.k,
                "nodes": a.nodes,
                "start_ts": iso_z(a.S),
                "first_step_ts": iso_z(a.F),
                "exit_ts": iso_z(a.E),
                "loaded_step": a.load,
                "last_step": a.steps[-1][0],
                "saves": [n for n, _, _ in a.saves],
                "end": a.kind,
            }
            for a in atts
        ],
        "match_on_attempt": True,
        "incidents": incidents,
        "decoy_hosts": sorted(decoys),
        "decoy_reasons": decoys,
        "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats,
        "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i.get("gpu_hours_lost", 0) for i in incidents), 4)},
        "notes": "Times are the wrapper's clock (true UTC). Ledger: see the deepspeed_pdsh.py docstring.",
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
    print(
        f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB); "
        f"total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents"
    )


if __name__ == "__main__":
    main()
