#!/usr/bin/env python3
"""Own campaign "old_stack": a rented A100 cluster on an older software stack (standard library only).

Written without reading clusterlab's analysis code, in the shape of the outsiders' campaigns
(../shared/evidence/scenarios/campaign1.py): `--out DIR --seed N` writes DIR/bundle/ and DIR/truth.json.

Stack: CentOS 7 (kernel 3.10, rsyslog /var/log/messages in RFC 3164 form "Dec  1 08:00:00 host kernel: ..."
with no year), NVIDIA driver 470, CUDA 11.4, NCCL 2.10.3 (NCCL_DEBUG=INFO printed to stdout, no debug file),
PyTorch 1.10 launched by `python -m torch.distributed.launch` under srun (one launcher per node, the
1.10 elastic agent behind it), NCCL_ASYNC_ERROR_HANDLING=1 and the default 30 min process-group timeout,
Megatron-LM of 2021 (iteration lines WITHOUT a timestamp: times come from "[before the start of training
step] datetime:" and the accumulated "elapsed time per iteration (ms)"; the save time is inside the
interval and printed by the "save-checkpoint" timer), Slurm 20.11 (slurmctld %pJ wording, sacct -P).

Scenario (run "oldstack-gpt20b", 64 GPUs = 8 nodes x 8 A100-SXM4-80GB of cluster "rk-1" / provider
"rackhaus"; 10 nodes hpc-g[01-10]; all clocks UTC):
  attempt 1  Xid 79 on hpc-g03 GPU2 (/var/log/messages); the other ranks wait in an all-reduce until
             the 30 min watchdog fires; the launchers fail, srun exits            [gpu_fell_off_bus, hpc-g03]
  attempt 2  (g03 out, g09 in) the IB port of hpc-g05 mlx5_2 goes down (mlx5 port module event, IPoIB
             multicast join failures); NCCL 2.10 "Got completion from peer ... with error 12" on g05 and
             its rail peers g04/g06; "NCCL communicator was aborted"            [network, hpc-g05]
  attempt 3  host OOM on hpc-g06: the cgroup OOM killer (kernel 3.10 "Memory cgroup out of memory:
             Kill process ... or sacrifice child"), slurmstepd "Detected 1 oom-kill event(s)", srun
             "Out Of Memory", sacct OUT_OF_MEMORY                                [host_oom, hpc-g06]
  attempt 4  hpc-g07 crashes and reboots under the job (no kernel message before the gap, boot lines
             after it); peers see IB completion errors; slurmctld "not responding" / "Killing JobId=..
             on failed node", sacct NODE_FAIL                                    [node_failure, hpc-g07]
  attempt 5  (g07 drained, g03 back) at a periodic save the NFS server nfs-ckpt01 stops answering:
             "nfs: server nfs-ckpt01 not responding, still trying" on every host (hard mount), hung
             tasks on g04 and g08; the save never finishes; the 30 min watchdog kills the job
                                                                                 [filesystem_io, host null]
  attempt 6  runs into the 10 h time limit                                       [time_limit, host null]
  attempt 7  completes (train-iters reached, last save, "[after training is done]").
  Decoys: hpc-g02 had an Xid 79 and a reboot 16 h before attempt 1 (old, healed); hpc-g04 prints the
  harmless "NET/IB : Got async event : GID table change" WARN in every attempt and is a rail peer of the
  IB fault; hpc-g08 logs corrected memory errors (EDAC CE, mce corrected) and hung tasks in the NFS outage;
  hpc-g09 has an Xid 63 (row remapping pending) mid attempt 6 while training goes on at pace; the idle
  spare hpc-g10 has an NFS not responding/OK blip.

Ledger (conventions of campaign1.py, GPU-hours = 64 x seconds / 3600): startup = sacct Start -> first
step start ("[before the start of training step] datetime"); productive = kept steps (<= last durable
save of an ended attempt, all of the completed one); checkpoint = completed saves + the tail after the
final save; recompute = end of last durable save (or first step start) -> root event; hang = root event
-> sacct End; restart = End -> next Start. Root events: the Xid, the IB port going down, the OOM kill, the
node crash (last moment the node was alive), the start of the save that never completed, the time limit.
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import random
from datetime import UTC, datetime
from pathlib import Path

UTC = UTC
RUN = "oldstack-gpt20b"
CLUSTER, PROVIDER = "rk-1", "rackhaus"
GPN, NODES = 8, 8
GPUS = GPN * NODES
TP, PP = 8, 2
DP = GPUS // (TP * PP)
GBS, SEQ = 512, 2048
TOKENS_PER_STEP = GBS * SEQ
FLOPS_PER_TOKEN = 1.266e11
PEAK_A100 = 312e12
BASE_STEP = 14.60
LOG_INTERVAL = 10
SAVE_INTERVAL = 200
WATCHDOG_S = 1800
T0 = datetime(2026, 12, 1, 6, 30, 0, tzinfo=UTC).timestamp()
CKPT = "/nfs/ckpt/gpt20b"
NFS_SERVER = "nfs-ckpt01"
NCCL_V = "2.10.3+cuda11.4"
KERNEL = "3.10.0-1160.49.1.el7.x86_64"
HOSTS = [f"hpc-g{i:02d}" for i in range(1, 11)]
H = {k: f"hpc-g{k:02d}" for k in range(1, 11)}
BUSIDS = ["07000", "0f000", "47000", "4e000", "87000", "90000", "b7000", "bd000"]
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]


def ip(h: str) -> str:
    return f"10.149.0.{10 + int(h[-2:])}"


def dt(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def syslog_ts(t: float) -> str:                 # RFC 3164, no year, day padded with a space
    d = dt(t)
    return f"{d:%b} {d.day:2d} {d:%H:%M:%S}"


def meg_dt(t: float) -> str:
    return dt(t).strftime("%Y-%m-%d %H:%M:%S")


def slurm_ts(t: float) -> str:
    return dt(t).strftime("%Y-%m-%dT%H:%M:%S")


def ctld(t: float) -> str:
    d = dt(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{int((t % 1) * 1000):03d}]"


def elapsed(sec: float) -> str:
    s = int(round(sec))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts: list[str]) -> str:
    nums = sorted(int(h[-2:]) for h in hosts)
    parts, i = [], 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(f"{nums[i]:02d}" if i == j else f"{nums[i]:02d}-{nums[j]:02d}")
        i = j + 1
    return "hpc-g[" + ",".join(parts) + "]" if len(nums) > 1 else hosts[0]


def write(path: Path, data: bytes, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as f:
            f.write(data)
        data = buf.getvalue()
    path.write_bytes(data)


class Sink:
    def __init__(self):
        self.items = []

    def add(self, t: float, line: str) -> None:
        self.items.append((t, len(self.items), line))

    def render(self) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
        return ("\n".join(x[2] for x in self.items) + "\n").encode()


# ----------------------------------------------------------------------------- timeline
class Attempt:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps, self.saves = [], []
        self.failed_save = None
        self.R = self.E = None


def build(seed: int) -> list[Attempt]:
    rng = random.Random(f"{seed}-oldstack-timeline")
    n1 = [H[k] for k in range(1, 9)]
    n2 = [H[k] for k in (1, 2, 4, 5, 6, 7, 8, 9)]
    n5 = [H[k] for k in (1, 2, 3, 4, 5, 6, 8, 9)]
    specs = [("xid79", "gpu_fell_off_bus", H[3], n1, 3.1), ("ib", "network", H[5], n2, 2.4),
             ("oom", "host_oom", H[6], n2, 1.6), ("reboot", "node_failure", H[7], n2, 4.2),
             ("nfs", "filesystem_io", None, n5, 2.9), ("timelimit", "time_limit", None, n5, None),
             ("complete", None, None, n5, None)]
    attempts, t, load = [], T0, 0
    for k, (kind, mode, host, nodes, hours) in enumerate(specs, start=1):
        a = Attempt(k=k, job=40311 + 13 * (k - 1) + rng.randint(0, 5), kind=kind, mode=mode, root_host=host,
                    nodes=nodes, load_step=load)
        a.S = t
        a.F = a.S + (118 if k == 1 else 236) + rng.uniform(-9, 9)      # init (+ checkpoint load)
        a.time_limit = 10 * 3600
        a.run_for = (hours or 0) * 3600 + rng.uniform(0, 1500)
        srng = random.Random(f"{seed}-steps-{k}")
        tt, n = a.F, load
        final = load + 1000 if kind == "complete" else None
        while True:
            d = BASE_STEP * (1 + srng.uniform(-0.004, 0.004))
            if kind in ("xid79", "ib", "oom", "reboot") and tt + d > a.F + a.run_for:
                a.R = tt + srng.uniform(0.2, 0.8) * d          # mid-step
                a.partial = n + 1
                break
            if kind == "timelimit" and tt + d > a.S + a.time_limit:
                a.R = a.S + a.time_limit
                a.partial = n + 1
                break
            a.steps.append((n + 1, tt, d))
            tt += d
            n += 1
            if n % SAVE_INTERVAL == 0:
                if kind == "nfs" and tt > a.F + a.run_for:
                    a.failed_save = (n, tt)
                    a.R = tt
                    break
                c = round(srng.uniform(105, 150), 2)
                a.saves.append((n, tt, c))
                tt += c
                if final is not None and n >= final:
                    a.E = tt + 3.0
                    break
        tail = {"xid79": WATCHDOG_S + rng.uniform(20, 40), "ib": rng.uniform(35, 55), "oom": rng.uniform(25, 40),
                "reboot": 300 + rng.uniform(2, 12), "nfs": WATCHDOG_S + rng.uniform(30, 50),
                "timelimit": rng.uniform(31, 34)}
        if kind != "complete":
            a.E = a.R + tail[kind]
        a.last_ckpt = a.saves[-1][0] if a.saves else load
        load = a.last_ckpt
        attempts.append(a)
        t = a.E + (1900 if kind == "reboot" else 600) + rng.uniform(0, 900)
    return attempts


def ledger(attempts):
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
        cats["recompute"] += a.R - base
        cats["hang"] += a.E - a.R
        cats["restart"] += nxt.S - a.E
        per.append(dict(recompute=a.R - base, hang=a.E - a.R, restart=nxt.S - a.E, startup=nxt.F - nxt.S))
    total = attempts[-1].E - attempts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per])


# ----------------------------------------------------------------------------- training log
def rank_of(a: Attempt, host: str, gpu: int) -> int:
    return a.nodes.index(host) * GPN + gpu


def pid_of(seed, a, host, gpu) -> int:
    return 20000 + random.Random(f"{seed}-pid-{a.k}-{host}").randint(0, 30000) + gpu


def child_failed(t: float, host: str, rank: int, lrank: int, code: int, pid: int, sig: str | None) -> list[str]:
    tb = (f"  traceback : Signal {abs(code)} ({sig}) received by PID {pid}" if sig else
          "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
    return ["Traceback (most recent call last):",
            '  File "/opt/conda/lib/python3.8/runpy.py", line 194, in _run_module_as_main',
            '    return _run_code(code, main_globals, None,',
            '  File "/opt/conda/lib/python3.8/site-packages/torch/distributed/launch.py", line 193, in <module>',
            "    main()",
            '  File "/opt/conda/lib/python3.8/site-packages/torch/distributed/run.py", line 710, in run',
            "    elastic_launch(",
            '  File "/opt/conda/lib/python3.8/site-packages/torch/distributed/launcher/api.py", line 259, '
            "in launch_agent",
            "    raise ChildFailedError(",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "=" * 44, "pretrain_gpt.py FAILED", "-" * 44, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 44,
            "Root Cause (first observed failure):", "[0]:",
            f"  time      : {dt(t):%Y-%m-%d_%H:%M:%S}", f"  host      : {host}",
            f"  rank      : {rank} (local_rank: {lrank})", f"  exitcode  : {code} (pid: {pid})",
            "  error_file: <N/A>", tb, "=" * 44]


def train_log(a: Attempt, total_iters: int, seed: int) -> bytes:
    rng = random.Random(f"{seed}-log-{a.k}")
    L = Sink()
    S = a.S
    L.add(S, f"{dt(S):%a %b %d %H:%M:%S UTC %Y}")
    L.add(S, f"SLURM_JOB_ID={a.job} SLURM_JOB_NODELIST={hostlist(a.nodes)}")
    for _h in a.nodes[:3]:
        L.add(S + 4, "/opt/conda/lib/python3.8/site-packages/torch/distributed/launch.py:178: FutureWarning: "
                     "The module torch.distributed.launch is deprecated")
        L.add(S + 4, "and will be removed in future. Use torchrun.")
        L.add(S + 4, "Note that --use_env is set by default in torchrun.")
    L.add(S + 5, "*****************************************")
    L.add(S + 5, "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your "
                 "system being overloaded, please further tune the variable for optimal performance in your "
                 "application as needed. ")
    L.add(S + 5, "*****************************************")
    L.add(S + 14, f"using world size: {GPUS}, data-parallel-size: {DP}, tensor-model-parallel size: {TP}, "
                  f"pipeline-model-parallel size: {PP} ")
    L.add(S + 14, "------------------------ arguments ------------------------")
    for k, v in [("global_batch_size", GBS), ("hidden_size", 6144), ("log_interval", LOG_INTERVAL),
                 ("num_attention_heads", 48), ("num_layers", 44), ("save", CKPT), ("load", CKPT),
                 ("save_interval", SAVE_INTERVAL), ("seq_length", SEQ), ("train_iters", total_iters)]:
        L.add(S + 14, f"  {k} {'.' * (40 - len(k))} {v}")
    L.add(S + 14, "-------------------- end of arguments ---------------------")
    ip0 = ip(a.nodes[0])
    L.add(S + 40, f"{a.nodes[0]}:{pid_of(seed, a, a.nodes[0], 0)}:{pid_of(seed, a, a.nodes[0], 0)} [0] "
                  f"NCCL INFO Bootstrap : Using ib0:{ip0}<0>")
    L.add(S + 40, f"{a.nodes[0]}:{pid_of(seed, a, a.nodes[0], 0)}:{pid_of(seed, a, a.nodes[0], 0)} [0] "
                  f"NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation")
    L.add(S + 40, f"{a.nodes[0]}:{pid_of(seed, a, a.nodes[0], 0)}:{pid_of(seed, a, a.nodes[0], 0)} [0] "
                  f"NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; "
                  f"OOB ib0:{ip0}<0>")
    L.add(S + 40, f"NCCL version {NCCL_V}")
    for h in a.nodes:
        for g in range(GPN):
            p = pid_of(seed, a, h, g)
            L.add(S + 44 + 0.01 * g, f"{h}:{p}:{p + 311} [{g}] NCCL INFO comm 0x{rng.getrandbits(44):x} rank "
                                      f"{rank_of(a, h, g)} nranks {GPUS} cudaDev {g} busId {BUSIDS[g].lstrip('0')} "
                                      f"- Init COMPLETE")
        if h == H[4]:
            p = pid_of(seed, a, h, 3)
            L.add(S + 45, f"{h}:{p}:{p + 344} [3] NCCL WARN NET/IB : Got async event : GID table change")
    L.add(S + 60, f"> initialized tensor model parallel with size {TP}")
    L.add(S + 60, f"> initialized pipeline model parallel with size {PP}")
    L.add(S + 70, " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 1262829568")
    L.add(a.F - 100, f"time to initialize megatron (seconds): {a.F - 100 - S:.3f}")
    L.add(a.F - 100, f"[after megatron is initialized] datetime: {meg_dt(a.F - 100)} ")
    if a.load_step:
        L.add(a.F - 95, f" loading checkpoint from {CKPT} at iteration {a.load_step}")
        L.add(a.F - 20, f"  successfully loaded checkpoint from {CKPT} at iteration {a.load_step}")
    else:
        L.add(a.F - 95, f"WARNING: could not find the metadata file {CKPT}/latest_checkpointed_iteration.txt ")
        L.add(a.F - 95, "    will not load any checkpoints and will start from random")
    L.add(a.F - 12, f"[after model, optimizer, and learning rate scheduler are built] datetime: {meg_dt(a.F - 12)} ")
    L.add(a.F - 2, f"[after dataloaders are built] datetime: {meg_dt(a.F - 2)} ")
    L.add(a.F - 1, "done with setup ...")
    L.add(a.F - 1, "training ...")
    L.add(a.F, f"[before the start of training step] datetime: {meg_dt(a.F)} ")
    saves = {n: (t, c) for n, t, c in a.saves}
    acc, cnt = 0.0, 0
    for n, t, d in a.steps:
        acc += d
        cnt += 1
        if n % LOG_INTERVAL == 0:
            lr = 1.2e-4 * min(1.0, n / 2000) * (0.1 + 0.9 * max(0.0, 1 - n / 60000))
            loss = 2.2 + 6.0 / (1 + n / 400) + rng.uniform(-0.04, 0.04)
            L.add(t + d, f" iteration {n:8d}/{total_iters:8d} | consumed samples: {n * GBS:12d} | "
                         f"elapsed time per iteration (ms): {1000 * acc / cnt:.1f} | learning rate: {lr:.3E} | "
                         f"global batch size: {GBS:5d} | lm loss: {loss:.6E} | loss scale: 1.0 | "
                         f"grad norm: {rng.uniform(0.2, 0.5):.3f} | number of skipped iterations:   0 | "
                         f"number of nan iterations:   0 |")
            if n == LOG_INTERVAL or n % 100 == 0:
                L.add(t + d, f"time (ms) | forward-compute: {d * 310:.2f} | backward-compute: {d * 620:.2f} | "
                             f"optimizer: {d * 40:.2f} | batch-generator: {rng.uniform(2, 9):.2f}")
            acc, cnt = 0.0, 0
        if n in saves:
            ts, c = saves[n]
            L.add(ts + 0.5, f"saving checkpoint at iteration {n:7d} to {CKPT}")
            L.add(ts + c - 0.4, f"  successfully saved checkpoint at iteration {n:7d} to {CKPT}")
            L.add(ts + c, f"time (ms) | save-checkpoint: {c * 1000:.2f}")
    if a.failed_save:
        L.add(a.failed_save[1] + 0.5, f"saving checkpoint at iteration {a.failed_save[0]:7d} to {CKPT}")
    fail_lines(a, L, rng, seed)
    return L.render()


def watchdog(L, t, r, seq, rng):
    ms = WATCHDOG_S * 1000 + rng.randint(50, 900)
    w = f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE, " \
        f"Timeout(ms)={WATCHDOG_S * 1000}) ran for {ms} milliseconds before timing out."
    L.add(t, f"[E ProcessGroupNCCL.cpp:587] {w}")
    L.add(t + 0.01, "[E ProcessGroupNCCL.cpp:341] Some NCCL operations have failed or timed out. Due to the "
                    "asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
                    "corrupted/incomplete data. To avoid this inconsistency, we are taking the entire process down.")
    L.add(t + 0.02, "terminate called after throwing an instance of 'std::runtime_error'")
    L.add(t + 0.02, f"  what():  {w}")


def launcher_fail(a, L, t, host, gpu, code, sig, seed):
    p = pid_of(seed, a, host, gpu)
    for g in range(GPN):
        if g != gpu:
            L.add(t, f"WARNING:torch.distributed.elastic.multiprocessing.api:Sending process "
                     f"{pid_of(seed, a, host, g)} closing signal SIGTERM")
    L.add(t + 2, f"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: {code}) local_rank: "
                 f"{gpu} (pid: {p}) of binary: /opt/conda/bin/python")
    for ln in child_failed(t + 2, host, rank_of(a, host, gpu), gpu, code, p, sig):
        L.add(t + 2.1, ln)


def abort_lines(a, L, t, host, gpu, peer, seed, rng):
    p = pid_of(seed, a, host, gpu)
    L.add(t, f"{host}:{p}:{p + 402} [{gpu}] transport/net_ib.cc:1101 NCCL WARN NET/IB : Got completion from "
             f"peer {ip(peer)}<{rng.randint(33000, 60000)}> with error 12, opcode 0, len 0, vendor err 129")
    L.add(t, f"{host}:{p}:{p + 402} [{gpu}] NCCL INFO include/net.h:28 -> 2")
    L.add(t, f"{host}:{p}:{p + 402} [{gpu}] NCCL INFO transport/net.cc:405 -> 2")
    L.add(t, f"{host}:{p}:{p + 402} [{gpu}] NCCL INFO proxy.cc:320 -> 2 [Proxy Thread]")
    r = rank_of(a, host, gpu)
    L.add(t + 1.5, "Traceback (most recent call last):")
    L.add(t + 1.5, '  File "pretrain_gpt.py", line 131, in <module>')
    L.add(t + 1.5, '  File "/workspace/megatron/training.py", line 648, in train_step')
    L.add(t + 1.5, f"RuntimeError: NCCL communicator was aborted on rank {r}.")


def fail_lines(a, L, rng, seed):
    R, E = a.R, a.E
    if a.kind == "xid79":
        dead = rank_of(a, a.root_host, 2)
        for h in a.nodes[:4]:
            for g in (0, 5):
                r = rank_of(a, h, g)
                if r != dead:
                    watchdog(L, R + WATCHDOG_S + rng.uniform(1, 6), r, 0, rng)
        launcher_fail(a, L, R + WATCHDOG_S + 9, a.nodes[0], 0, -6, "SIGABRT", seed)
        L.add(E - 1, f"srun: error: {a.nodes[0]}: task 0: Exited with exit code 1")
        L.add(E - 1, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    elif a.kind == "ib":
        for h, gs, peer in ((H[5], (2, 3), H[4]), (H[4], (2,), H[5]), (H[6], (2,), H[5])):
            for g in gs:
                abort_lines(a, L, R + rng.uniform(7, 15), h, g, peer, seed, rng)
        launcher_fail(a, L, R + 22, H[5], 2, 1, None, seed)
        L.add(E - 2, f"srun: error: {H[5]}: task {a.nodes.index(H[5])}: Exited with exit code 1")
        L.add(E - 2, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    elif a.kind == "oom":
        h = a.root_host
        L.add(R + 3, f"slurmstepd: error: Detected 1 oom-kill event(s) in step {a.job}.0 cgroup. Some of your "
                     f"processes may have been killed by the cgroup out-of-memory handler.")
        launcher_fail(a, L, R + 5, h, 3, -9, "SIGKILL", seed)
        L.add(R + 9, f"srun: error: {h}: task {a.nodes.index(h)}: Out Of Memory")
        L.add(R + 9, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
        L.add(E - 3, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(E - 3)} ***")
    elif a.kind == "reboot":
        i = a.nodes.index(a.root_host)
        for h in (a.nodes[i - 1], a.nodes[i + 1]):
            for g in (1, 6):
                abort_lines(a, L, R + rng.uniform(18, 30), h, g, a.root_host, seed, rng)
        L.add(R + 40, f"srun: error: {a.nodes[i - 1]}: task {i - 1}: Exited with exit code 1")
        L.add(E - 1, f"srun: error: Node failure on {a.root_host}")
        L.add(E - 0.5, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(E - 0.5)} "
                       f"DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***")
    elif a.kind == "nfs":
        for h in a.nodes[:3]:
            for g in (1, 4):
                watchdog(L, R + WATCHDOG_S + rng.uniform(2, 8), rank_of(a, h, g), 0, rng)
        launcher_fail(a, L, R + WATCHDOG_S + 12, a.nodes[0], 1, -6, "SIGABRT", seed)
        L.add(E - 1, f"srun: error: {a.nodes[0]}: task 0: Exited with exit code 1")
    elif a.kind == "timelimit":
        L.add(R + 0.2, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(R)} "
                       f"DUE TO TIME LIMIT ***")
        L.add(R + 0.3, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
        L.add(R + 0.4, "srun: got SIGCONT")
        L.add(R + 0.5, "srun: forcing job termination")
        L.add(R + 0.6, "WARNING:torch.distributed.elastic.agent.server.api:Received 15 death signal, "
                       "shutting down workers")
    elif a.kind == "complete":
        L.add(E - 2, f"[after training is done] datetime: {meg_dt(E - 2)} ")


# ----------------------------------------------------------------------------- kernel logs
NOISE = ["systemd: Started Session {n} of user root.", "systemd-logind: New session {n} of user root.",
         "systemd: Starting Cleanup of Temporary Directories...", "chronyd[1342]: Selected source 10.149.0.2",
         "kernel: perf: interrupt took too long (2{k}03 > 2{k}00), lowering kernel.perf_event_max_sample_rate "
         "to 79000", "slurmd[2211]: launch task {n}.0 request from UID:1043 GID:1043 HOST:10.149.0.2 PORT:6421",
         "dbus[1120]: [system] Successfully activated service 'org.freedesktop.hostname1'"]


def boot(t: float, h: str) -> list[tuple[float, str]]:
    return [(t, "kernel: Initializing cgroup subsys cpuset"), (t, "kernel: Initializing cgroup subsys cpu"),
            (t, f"kernel: Linux version {KERNEL} (mockbuild@kbuilder.bsys.centos.org) (gcc version 4.8.5 20150623 "
                "(Red Hat 4.8.5-44) (GCC) ) #1 SMP Tue Nov 30 15:51:32 UTC 2021"),
            (t + 0.1, "kernel: DMI: Inspur NF5488A5/YZMB-02382-101, BIOS 4.1.12 08/02/2021"),
            (t + 31, "kernel: nvidia: loading out-of-tree module taints kernel."),
            (t + 31.2, "kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  470.103.01  Thu Jan  6 12:10:04 UTC "
                       "2022"),
            (t + 33, "kernel: mlx5_core 0000:5e:00.0: firmware version: 20.31.1014"),
            (t + 40, 'rsyslogd: [origin software="rsyslogd" swVersion="8.24.0-57.el7_9.1" x-pid="1301" '
                     'x-info="http://www.rsyslog.com"] start'),
            (t + 52, "systemd: Started Slurm node daemon."),
            (t + 52, f"slurmd[{2200 + int(h[-2:])}]: slurmd version 20.11.8 started")]


def xid79_lines(t, pci, rng):
    return [(t, f"kernel: NVRM: GPU at PCI:{pci}: GPU-{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-"
                f"{rng.getrandbits(16):04x}-{rng.getrandbits(16):04x}-{rng.getrandbits(48):012x}"),
            (t, f"kernel: NVRM: GPU Board Serial Number: 1{rng.randint(10 ** 11, 10 ** 12 - 1)}"),
            (t, f"kernel: NVRM: Xid (PCI:{pci}): 79, pid=0, GPU has fallen off the bus."),
            (t + 0.001, f"kernel: NVRM: GPU {pci}.0: GPU has fallen off the bus."),
            (t + 0.002, "kernel: NVRM: A GPU crash dump has been created. If possible, please run"),
            (t + 0.002, "kernel: NVRM: nvidia-bug-report.sh as root to collect this data before"),
            (t + 0.002, "kernel: NVRM: the NVIDIA kernel module is unloaded.")]


def kernel_logs(attempts, seed, bundle, info):
    a1, a2, a3, a4, a5, a6, a7 = attempts
    t_end = a7.E + 3600
    for h in HOSTS:
        hr = random.Random(f"{seed}-kern-{h}")
        b0 = T0 - hr.randint(3, 9) * 86400
        ev = boot(b0, h)
        t = b0 + hr.uniform(600, 4000)
        while t < t_end:
            tmpl = hr.choice(NOISE)
            ev.append((t, tmpl.format(n=hr.randint(1000, 99999), k=hr.randint(5, 9))))
            t += hr.uniform(900, 5400)
        if h == H[2]:                                   # decoy: old Xid 79 + reboot, long before attempt 1
            tx = T0 - 16 * 3600
            ev += xid79_lines(tx, "0000:47:00", random.Random(f"{seed}-oldxid"))
            ev += boot(tx + 2400, h)
        if h == a1.root_host:
            ev += xid79_lines(a1.R, "0000:47:00", random.Random(f"{seed}-xid79"))
        if h == a2.root_host:
            R = a2.R
            ev += [(R, "kernel: mlx5_core 0000:5e:00.0: mlx5_port_module_event:1097:(pid 0): Port module event"
                       "[error]: module 2, Cable error, Bad or shorted cable/module"),
                   (R + 0.4, "kernel: mlx5_core 0000:5e:00.0: Port 1 changed state to DOWN"),
                   (R + 6.2, "kernel: ib2: multicast join failed for ff12:401b:ffff:0000:0000:0000:ffff:ffff, "
                             "status -110")]
        if h == a3.root_host:
            R, p = a3.R, 40000 + hr.randint(0, 9999)
            ev += [(R - 0.2, "kernel: python invoked oom-killer: gfp_mask=0xd0, order=0, oom_score_adj=0"),
                   (R - 0.2, "kernel: python cpuset=/ mems_allowed=0-1"),
                   (R - 0.1, f"kernel: Task in /slurm/uid_1043/job_{a3.job}/step_0 killed as a result of limit "
                             f"of /slurm/uid_1043/job_{a3.job}"),
                   (R - 0.1, "kernel: memory: usage 1006632960kB, limit 1006632960kB, failcnt 4117"),
                   (R, f"kernel: Memory cgroup out of memory: Kill process {p} (python) score 1001 or sacrifice "
                       f"child"),
                   (R, f"kernel: Killed process {p} (python), UID 1043, total-vm:402661124kB, "
                       f"anon-rss:251658240kB, file-rss:412332kB, shmem-rss:1048576kB")]
        if h == a4.root_host:                            # crash: silence, then a new boot
            ev = [(t, m) for t, m in ev if not (a4.R - 1 < t < a4.R + 260)]
            ev.append((a4.R - hr.uniform(30, 200), "systemd: Started Session 88123 of user root."))
            ev += boot(a4.R + 255, h)
        if h in a5.nodes:                               # NFS server outage during the save
            first = a5.R + hr.uniform(3, 12)
            t = first
            while t < a5.E + 500:
                ev.append((t, f"kernel: nfs: server {NFS_SERVER} not responding, still trying"))
                t += hr.uniform(60, 200)
            ev.append((a5.E + 560 + hr.uniform(0, 5), f"kernel: nfs: server {NFS_SERVER} OK"))
            if h in (H[4], H[8]):
                p = 30000 + hr.randint(0, 9999)
                for j in range(2):
                    tt = a5.R + 130 + 120 * j
                    ev += [(tt, f"kernel: INFO: task python:{p} blocked for more than 120 seconds."),
                           (tt, 'kernel: "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.'),
                           (tt, f"kernel: python          D ffff9b3c7fd1acc0     0 {p}  {p - 31} 0x00000080"),
                           (tt, "kernel: Call Trace:"),
                           (tt, "kernel: [<ffffffff8a786d39>] schedule+0x29/0x70"),
                           (tt, "kernel: [<ffffffffc0a1b2f4>] rpc_wait_bit_killable+0x24/0xb0 [sunrpc]"),
                           (tt, "kernel: [<ffffffffc0b31f62>] nfs_file_fsync+0x62/0x190 [nfs]")]
        if h == H[8]:                                   # decoy: corrected memory errors
            for j in range(3):
                tc = a2.S + (j + 1) * 5400 + hr.uniform(0, 600)
                ev += [(tc, "kernel: mce: [Hardware Error]: Machine check events logged"),
                       (tc + 0.1, "kernel: EDAC MC1: 1 CE memory read error on CPU_SrcID#1_Ha#0_Chan#2_DIMM#0 "
                                  "(channel:2 slot:0 page:0x2f1a3c offset:0x0 grain:32 syndrome:0x0 - area:DRAM "
                                  "err_code:0001:0092 socket:1 ha:0 channel_mask:4 rank:1)")]
        if h == H[9]:                                   # decoy: row remapping pending, job goes on
            tr = a6.F + 0.5 * (a6.R - a6.F)
            info["xid63_ts"] = tr
            ev.append((tr, "kernel: NVRM: Xid (PCI:0000:b7:00): 63, pid=51734, Row Remapper: New row marked for "
                           "remapping, reset gpu to activate."))
        if h == H[10]:                                  # decoy: NFS blip on the idle spare
            tb = a3.F + 1800
            ev += [(tb, f"kernel: nfs: server {NFS_SERVER} not responding, still trying"),
                   (tb + 37, f"kernel: nfs: server {NFS_SERVER} OK")]
        ev.sort(key=lambda x: x[0])
        lines = [f"{syslog_ts(t)} {h} {m}" for t, m in ev]
        cut = T0 + 2 * 86400 + 3 * 3600                 # logrotate: messages-YYYYMMDD + messages
        old = [ln for (t, _), ln in zip(ev, lines, strict=True) if t < cut]
        new = [ln for (t, _), ln in zip(ev, lines, strict=True) if t >= cut]
        d = bundle / "nodes" / h / "var" / "log"
        write(d / f"messages-{dt(cut):%Y%m%d}", ("\n".join(old) + "\n").encode())
        write(d / "messages", ("\n".join(new) + "\n").encode())


# ----------------------------------------------------------------------------- scheduler
def scheduler(attempts, bundle, seed):
    rng = random.Random(f"{seed}-sched")
    L = Sink()
    rows = ["JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Start|End|Elapsed|NNodes|NodeList"]
    for a in attempts:
        hl, cpus = hostlist(a.nodes), 128 * len(a.nodes)
        L.add(a.S - 20, f"{ctld(a.S - 20)} _slurm_rpc_submit_batch_job: JobId={a.job} "
                        f"InitPrio=4294901{rng.randint(100, 999)} usec={rng.randint(200, 900)}")
        L.add(a.S, f"{ctld(a.S)} sched: Allocate JobId={a.job} NodeList={hl} #CPUs={cpus} Partition=gpu")
        k = a.kind
        if k == "timelimit":
            L.add(a.R, f"{ctld(a.R)} Time limit exhausted for JobId={a.job}")
            state, ec, st = "TIMEOUT", "0:0", ("CANCELLED", "0:15")
        elif k == "reboot":
            L.add(a.R + 125, f"{ctld(a.R + 125)} error: Nodes {a.root_host} not responding")
            L.add(a.E, f"{ctld(a.E)} error: Nodes {a.root_host} not responding, setting DOWN")
            L.add(a.E + 0.01, f"{ctld(a.E + 0.01)} Killing JobId={a.job} on failed node {a.root_host}")
            L.add(a.E + 60, f"{ctld(a.E + 60)} Node {a.root_host} now responding")
            L.add(a.E + 60.1, f"{ctld(a.E + 60.1)} validate_node_specs: Node {a.root_host} unexpectedly rebooted "
                              f"boot_time={int(a.R + 255)} last response={int(a.R - 40)}")
            L.add(a.E + 400, f"{ctld(a.E + 400)} update_node: node {a.root_host} reason set to: rebooted under job "
                             f"{a.job}")
            L.add(a.E + 400.1, f"{ctld(a.E + 400.1)} update_node: node {a.root_host} state set to DRAINED")
            state, ec, st = "NODE_FAIL", "0:0", ("FAILED", "1:0")
        elif k == "oom":
            L.add(a.E, f"{ctld(a.E)} _job_complete: JobId={a.job} WEXITSTATUS 0")
            state, ec, st = "OUT_OF_MEMORY", "0:125", ("OUT_OF_MEMORY", "0:125")
        elif k == "complete":
            L.add(a.E, f"{ctld(a.E)} _job_complete: JobId={a.job} WEXITSTATUS 0")
            state, ec, st = "COMPLETED", "0:0", ("COMPLETED", "0:0")
        else:
            L.add(a.E, f"{ctld(a.E)} _job_complete: JobId={a.job} WEXITSTATUS 1")
            state, ec, st = "FAILED", "1:0", ("FAILED", "1:0")
        L.add(a.E + 0.02, f"{ctld(a.E + 0.02)} _job_complete: JobId={a.job} done")
        e = elapsed(a.E - a.S)
        rows.append(f"{a.job}|gpt20b|gpu|llm|{cpus}|{state}|{ec}|{slurm_ts(a.S)}|{slurm_ts(a.E)}|{e}|{len(a.nodes)}|{hl}")
        rows.append(f"{a.job}.batch|batch||llm|128|{st[0] if k != 'timelimit' else 'CANCELLED'}|"
                    f"{st[1] if k != 'oom' else '0:0'}|{slurm_ts(a.S)}|{slurm_ts(a.E)}|{e}|1|{a.nodes[0]}")
        rows.append(f"{a.job}.extern|extern||llm|{cpus}|COMPLETED|0:0|{slurm_ts(a.S)}|{slurm_ts(a.E)}|{e}|"
                    f"{len(a.nodes)}|{hl}")
        rows.append(f"{a.job}.0|python||llm|{cpus}|{st[0]}|{st[1]}|{slurm_ts(a.S + 2)}|{slurm_ts(a.E)}|"
                    f"{elapsed(a.E - a.S - 2)}|{len(a.nodes)}|{hl}")
    write(bundle / "scheduler" / "slurmctld.log", L.render())
    write(bundle / "scheduler" / "sacct.txt", ("\n".join(rows) + "\n").encode())


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    attempts = build(seed)
    total_iters = attempts[-1].steps[-1][0]
    write(bundle / "inventory.toml", f"""[providers.{PROVIDER}]
usd_per_gpu_hour = 1.45

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "A100-SXM4-80GB"
gpus_per_node = {GPN}
interconnect = "InfiniBand HDR 4x200G"
nodes = "hpc-g[01-10]"
""".encode())
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", f"""cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.4e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch -N {NODES} --gres=gpu:8 --time=10:00:00 gpt20b.sbatch"
""".encode())
    info: dict = {}
    for a in attempts:
        write(rdir / f"attempt-{a.k}" / f"slurm-{a.job}.out", train_log(a, total_iters, seed))
    kernel_logs(attempts, seed, bundle, info)
    scheduler(attempts, bundle, seed)
    cats, total, per = ledger(attempts)
    incidents = []
    for j, a in enumerate(attempts[:-1]):
        incidents.append({"id": j + 1, "attempt": a.k, "slurm_job": a.job, "failure_mode": a.mode,
                          "blame": "user" if a.mode in ("time_limit", "host_oom") else "provider",
                          "host": a.root_host, "cluster": CLUSTER, "provider": PROVIDER,
                          "root_ts": dt(a.R).isoformat(), "exit_ts": dt(a.E).isoformat(),
                          "last_ckpt_step": a.last_ckpt, "gpu_hours": per[j],
                          "gpu_hours_lost": round(sum(per[j].values()), 4)})
    decoys = {H[2]: "Xid 79 and a reboot 16 h before attempt 1; healthy since",
              H[4]: "benign NCCL WARN GID table change; rail peer of the IB fault; NFS hung tasks",
              H[8]: "corrected memory errors (EDAC CE); NFS hung tasks",
              H[9]: "Xid 63 row remapping pending mid attempt 6; training went on",
              H[10]: "NFS blip on the idle spare"}
    truth = {"run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP,
             "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP,
             "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK_A100), 4),
             "first_start_ts": dt(attempts[0].S).isoformat(), "last_end_ts": dt(attempts[-1].E).isoformat(),
             "attempts": [{"attempt": a.k, "slurm_job": a.job, "nodes": hostlist(a.nodes),
                           "start_ts": dt(a.S).isoformat(), "first_step_ts": dt(a.F).isoformat(),
                           "exit_ts": dt(a.E).isoformat(), "loaded_step": a.load_step,
                           "last_step": a.steps[-1][0], "saves": [n for n, _, _ in a.saves], "end": a.kind}
                          for a in attempts],
             "incidents": incidents, "match_on_attempt": True,
             "decoy_hosts": sorted(decoys), "decoy_reasons": decoys, "hardware_modes": HARDWARE_MODES,
             "expected_ledger": cats, "total_gpu_hours": total,
             "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incidents), 4)},
             "info": {k: dt(v).isoformat() for k, v in info.items()}}
    for inc in truth["incidents"]:
        inc["attempts"] = [inc["attempt"]]
    write(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261206)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t = generate(out, args.seed)
    print(f"wrote {out / 'bundle'}; total {t['total_gpu_hours']:.1f} GPU-h, {len(t['incidents'])} incidents")


if __name__ == "__main__":
    main()
