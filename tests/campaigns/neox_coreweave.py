#!/usr/bin/env python3
"""Independent campaign "neox_coreweave": GPT-NeoX-20B re-enacted on CoreWeave-style Kubernetes pods.

Written outside the team that writes clusterlab's analysis, without reading it. Modelled on the
public account of GPT-NeoX-20B (EleutherAI, 2022): 12 servers x 8 A100-SXM4-40GB, four ConnectX-6
HCAs per server, PyTorch 1.10 / CUDA 11.1 / NCCL 2.10.3, gpt-neox (Megatron + DeepSpeed), 44
layers, hidden 6144, 64 heads, seq 2048, ~1536 contexts per step, checkpoints on shared storage.

Writes, under --out DIR:
  DIR/bundle/inventory.toml, runs/neox-20b-cw/run.toml
  DIR/bundle/runs/neox-20b-cw/attempt-<k>/deepy-<date>.log[.gz]  what the DeepSpeed multinode runner
        printed on the launcher pod: its own lines, then every worker's output through pdsh
        ("<pod>: " prefix): deepspeed.launcher.launch lines, NCCL_DEBUG=INFO, gpt-neox rank-0 output
        (no timestamps of its own), DeepSpeed log_dist lines (timestamped), tracebacks, pdsh errors
  DIR/bundle/runs/neox-20b-cw/attempt-<k>/hostfile              the DeepSpeed hostfile ("pod slots=8")
  DIR/bundle/nodes/<pod>/dmesg-T.txt | kern.log + kern.log.1.gz  kernel log seen from that pod's node
  DIR/bundle/scheduler/kube-controller-manager.log               klog lines (no year in the stamp)
  DIR/truth.json
Usage: neox_coreweave.py --out DIR [--seed N]    (Python 3.11, stdlib only, deterministic per seed;
gzip members have mtime=0 and no name.)  ~8 MB, < 2 s.

Scenario (run "neox-20b-cw", 96 GPUs = 12 pods x 8 A100-SXM4-40GB, cluster cw-ord1, provider
coreweave; pods neox-20b-worker-0..14 of which 12 are in the hostfile at a time; times are UTC as
seen by the launcher pod; the node clocks of worker-3 (+4.3 s) and worker-9 (-2.6 s) are off):
  attempt 1  fresh start.  The node under neox-20b-worker-5 dies (k8s node a100-ord1-g26 stops
             posting status: NodeNotReady 40 s later, the taint manager deletes the pod 5 min later).
             worker-5 prints nothing more; pdsh's ssh to it exits 255; its ring neighbours worker-4
             and worker-6 get NET/IB completion errors (retry exceeded) towards worker-5's address
             and die with "unhandled system error"; every other rank blocks in its allreduce until
             the 30-min NCCL watchdog.                                   [node_failure, worker-5]
  attempt 2  (worker-5 -> new pod worker-12 in the same slot).  IB cable fault on worker-9: mlx5
             port module event + "Link down" on ibp75s0 (kern.log, clock -2.6 s); NCCL WARN
             completion errors on worker-9 and on its peers worker-8 / worker-10; those three die;
             the rest hang until the on-call engineer hits Ctrl-C on the launcher (pdsh
             "interrupt (one more within 1 sec to abort)").              [network, worker-9]
  attempt 3  resumes from global_step900.  At the save of global_step1400 the shared NFS server
             ord1-shared-nfs stops answering: "nfs: server ... not responding, timed out" on most pods
             within seconds; ~3 min later torch.save fails on every rank with OSError [Errno 5]
             Input/output error; all launchers exit.  The 1400 save never completed, "latest"
             still names global_step1300.  A shared service, not a pod.   [filesystem_io, host null]
  attempt 4  the user changed train_micro_batch_size_per_gpu 4 -> 8 (gas 32 -> 16, same global
             batch) and relaunched from 1300: CUDA out of memory in the first step on many ranks.
                                                               [cuda_oom, user, host null]
  attempt 5  config reverted, resumes from 1300.  Xid 48 (double-bit ECC) on worker-2 GPU6 ->
             "CUDA error: uncorrectable ECC error encountered" in rank 22 -> worker-2's launcher
             kills its ranks; the rest hang until the 30-min NCCL watchdog. [gpu_memory_ecc, worker-2]
  attempt 6  (worker-2 -> new pod worker-13) resumes from 1800 and completes train_iters=3000
             (final save, pdsh returns, "END TIME").
  Decoys: worker-4 / worker-6 (attempt 1) and worker-8 / worker-10 (attempt 2) print NET/IB
  completion errors only as peers of the failed pod; harmless Xid 13 on worker-10 mid attempt 6;
  Xid 43 on worker-3 during attempt 2 from a user's profiling process, 50 min before the IB
  fault, training continues; NCCL WARN "Got async event : GID table change" on worker-1 in
  attempt 6; the idle spare worker-14 (never in a hostfile) logs an NFS not responding/OK blip
  during attempt 6 and an mlx5 link flap; the NFS outage lines of attempt 3 on many pods are
  symptoms of the server.  Noise: NCCL INFO spam, Python UserWarnings, DeepSpeed config dumps,
  kernel noise, klog lines of unrelated pods, a truncated last line (attempt 1 log, worker-7's
  dmesg), a gzipped rotated kern.log, a gzipped attempt log (attempt 6).

Ledger (truth.json expected_ledger, GPU-hours = 96 x seconds / 3600), campaign1.py conventions:
  startup    = attempt start ("START TIME:" echoed by the wrapper = the runner's first line) -> start
               of the first training step (DeepSpeed's "Activation Checkpointing Information" lines,
               printed at the first forward pass)
  productive = kept steps (step <= last durable checkpoint of a failed attempt; all steps of the
               completed attempt), whole step durations
  checkpoint = durations of completed saves ("Saving model checkpoint" -> last "zero checkpoint
               saved" line of that step) plus the tail after the final save of the last attempt.
               gpt-neox's "interval time" timer runs through a save, so the iteration line after a
               save shows an inflated "elapsed time per iteration": that is checkpoint, not slowdown
  recompute  = end of the last durable save of the attempt (or its first step start) -> root event
  hang       = root event -> attempt exit ("END TIME:").  Root events: the moment worker-5's node
               went silent (its last kernel line is minutes earlier; the peers' IB errors follow
               ~8 s later, NodeNotReady 40 s later); the mlx5 link down; the start of the
               global_step1400 save; the CUDA OOM; the Xid 48
  restart    = attempt exit -> next attempt start
  straggler = slowdown = data_stall = idle = 0

Formats and where they were seen (public material; text written anew, hosts/values invented):
  * gpt-neox megatron/training.py training_log(): " samples/sec: {:.3f} | iteration {:8d}/{:8d} |
    elapsed time per iteration (ms): {:.1f} | learning rate: {:.3E} | approx flops per GPU:
    {human_readable_flops} | lm_loss: {:.6E} | loss scale: {:.1f} | number of skipped iterations:
    {:3d} | number of nan iterations: {:3d} |" (EleutherAI/gpt-neox training.py, found with
    find_string; human_readable_flops "%3.1f%s" with "TFLOPS"); the NeoXArgs dump
    "  name ..... value.....updated" (EleutherAI/gpt-neox issues #792, #755, #1248: 20B config
    values hidden_size 6144, num_layers 44, lr 9.7e-05, save ./20B_checkpoints, rotary_pct 0.25).
  * DeepSpeed runner / launcher (deepspeedai/DeepSpeed issues #2612, #618, #3232, #1581, #5302):
    "[2022-12-15 21:00:19,543] [INFO] [runner.py:417:main] Using IP address of ... for node ...",
    "[multinode_runner.py:65:get_cmd] Running on the following workers: a,b", "[runner.py:508:main]
    cmd = pdsh -f 1024 -w ... python -u -m deepspeed.launcher.launch --world_info=<base64 json>
    --node_rank=%n --master_addr=... --master_port=29500 ...", "[launch.py:78:main] WORLD INFO DICT",
    "nnodes=.., num_local_procs=.., node_rank=..", "global_rank_mapping=defaultdict(<class 'list'>,
    {...})", "dist_world_size=..", "Setting CUDA_VISIBLE_DEVICES=..", "[launch.py:131:sigkill_handler]
    Killing subprocess N", "[ERROR] [launch.py:137:sigkill_handler] [...] exits with return code =
    -6"; pdsh prefixes "host: ..."; pdsh had no -S before DeepSpeed PR #1994 (June 2022), so pdsh
    returned 0 on failure (DeepSpeed issue #1722).  DeepSpeed engine lines "[logging.py:60:log_dist]
    [Rank 0] step=N, skipped=0, lr=[...], mom=[...]", "Saving model checkpoint: .../global_stepN/
    mp_rank_00_model_states.pt", "[engine.py:1551:_load_checkpoint] rank: 5 loading checkpoint:
    .../global_stepN/mp_rank_00_model_states.pt" (gpt-neox issue #843), "zero checkpoint saved",
    "Unable to find latest file at .../latest" (DeepSpeed engine.py).
  * pdsh: "pdsh@host: node: ssh exited with exit code 255", "pdsh@host: interrupt (one more within 1
    sec to abort)", "sending SIGTERM to ssh node pid N" (pdsh users' logs found with find_string:
    Cray docs, shine, benchmark READMEs).
  * kube-controller-manager klog (public blog log of a NotReady node, found with find_string):
    'I0827 02:05:45.661972       1 event.go:307] "Event occurred" object="ns/pod" fieldPath=""
    kind="Pod" apiVersion="v1" type="Warning" reason="NodeNotReady" message="Node is not ready"',
    'I0827 02:10:50.989653       1 taint_manager.go:106] "NoExecuteTaintManager is deleting pod"
    pod="ns/pod"', reason="TaintManagerEviction" message="Marking for deletion Pod ns/pod",
    StatefulSet "SuccessfulCreate" "create Pod X in StatefulSet Y successful".
  * NCCL 2.10-era INFO/WARN: "NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0,
    vendor err 129" (several public troubleshooting notes found with find_string), init lines
    ("Bootstrap : Using eth0:...", "NET/IB : Using [0]mlx5_0:1/IB ... ; OOB eth0:...", "comm 0x...
    rank N nranks M cudaDev d busId b - Init COMPLETE") as in campaign1.py's sources (NVIDIA/nccl
    issues) without the later nvmlDev/commId fields; "GID table change" WARN as in campaign1.py.
  * PyTorch 1.10 ProcessGroupNCCL: "[E ProcessGroupNCCL.cpp:587] [Rank N] Watchdog caught collective
    operation timeout: WorkNCCL(SeqNum=.., OpType=ALLREDUCE, Timeout(ms)=1800000) ran for ...
    milliseconds before timing out.", "[E ProcessGroupNCCL.cpp:341] Some NCCL operations have failed
    or timed out. ... we are taking the entire process down.", "RuntimeError: NCCL error in:
    ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:..., unhandled system error, NCCL version
    21.0.3" (the 1.10 version-number quirk for 2.10.3); "RuntimeError: CUDA out of memory. Tried to
    allocate ... (GPU g; 39.59 GiB total capacity; ... already allocated; ... free; ... reserved in
    total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb ...";
    "RuntimeError: CUDA error: uncorrectable ECC error encountered" + "CUDA kernel errors might be
    asynchronously reported ..." (jade-hpc-gpu #194, ChatGLM3 #681 via campaign1.py).
  * NVRM Xid 48 / 13 / 43 lines and the mlx5 port module event / Link down lines: shapes as listed in
    campaign1.py's docstring (real logs in public NVIDIA/open-gpu-kernel-modules and gpud sources);
    "nfs: server X not responding, timed out" / "nfs: server X OK" (leptonai/gpud, SUSE KB 000020830);
    dmesg -T "[Wed Jan 12 03:00:00 2022] ..." and rsyslog "Jan 12 03:00:00 host kernel: [...]".
Unsure: exact source line numbers inside DeepSpeed/PyTorch 1.10 messages (they vary by version);
DeepSpeed's "Activation Checkpointing Information" block text; gpt-neox's "successfully loaded" text.
"""
# ruff: noqa: E501  (log lines are quoted whole so their real shape stays readable)
from __future__ import annotations

import argparse
import base64
import gzip
import io
import json
import math
import random
from datetime import UTC, datetime
from pathlib import Path

RUN = "neox-20b-cw"
CLUSTER, PROVIDER = "cw-ord1", "coreweave"
GPN = 8
NPODS = 12
GPUS = GPN * NPODS
TP, PP = 2, 4
DP = GPUS // (TP * PP)                              # 12
MBS, GAS = 4, 32
GBS = MBS * GAS * DP                                # 1536
SEQ = 2048
TOKENS_PER_STEP = GBS * SEQ                         # 3145728
N_PARAMS = 20_554_567_680
FLOPS_PER_TOKEN = 6 * N_PARAMS + 12 * 44 * 6144 * SEQ
PEAK_A100 = 312e12
BASE_STEP = 36.62
STEP_JITTER = 0.004
SAVE_INTERVAL = 100
LOG_INTERVAL = 10
TRAIN_ITERS = 3000
WATCHDOG_S = 1800.0
T0 = datetime(2022, 1, 12, 3, 0, 0, tzinfo=UTC).timestamp()
CKPT = "/mnt/shared/20B_checkpoints"
NFS = "ord1-shared-nfs"
LAUNCHER = "neox-20b-launcher"
PODS = [f"neox-20b-worker-{i}" for i in range(15)]
K8S_NODE = {p: f"a100-ord1-g{11 + 3 * i:02d}" for i, p in enumerate(PODS)}
SKEW = {"neox-20b-worker-3": 4.3, "neox-20b-worker-9": -2.6}
BUS = ["07000", "0f000", "47000", "4e000", "87000", "90000", "b7000", "bd000"]
HCA = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
HCA_PCI = ["0000:0c:00.0", "0000:4b:00.0", "0000:8b:00.0", "0000:c1:00.0"]
HCA_IF = ["ibp12s0", "ibp75s0", "ibp139s0", "ibp193s0"]
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]


def pod(i: int) -> str:
    return PODS[i]


def ip(h: str) -> str:
    return f"10.141.{12 + int(h.rsplit('-', 1)[1]) // 8}.{4 + 7 * (int(h.rsplit('-', 1)[1]) % 8)}"


# ----------------------------------------------------------------------------- time formats
def _split(t: float) -> tuple[datetime, int]:
    us_total = int(round(t * 1_000_000))
    s, us = divmod(us_total, 1_000_000)
    return datetime.fromtimestamp(s, UTC), us


def iso_z(t: float) -> str:
    d, us = _split(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{us // 1000:03d}Z"


def ds_ts(t: float) -> str:                       # python logging asctime
    d, us = _split(t)
    return f"[{d:%Y-%m-%d %H:%M:%S},{us // 1000:03d}]"


def date_cmd(t: float) -> str:
    d, _ = _split(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def dmesg_T(t: float) -> str:
    d, _ = _split(t)
    return f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}]"


def syslog_ts(t: float) -> str:
    d, _ = _split(t)
    return f"{d:%b} {d.day:2d} {d:%H:%M:%S}"


def klog(t: float, lvl: str = "I") -> str:
    d, us = _split(t)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{us:06d}       1 "


# ----------------------------------------------------------------------------- writers
class Sink:
    def __init__(self) -> None:
        self.items: list[tuple[float, int, str | bytes]] = []

    def add(self, t: float, line: str | bytes) -> None:
        self.items.append((t, len(self.items), line))

    def extend(self, t: float, lines) -> None:
        for ln in lines:
            self.add(t, ln)

    def render(self, cut: int | None = None) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
        data = b"\n".join(x[2] if isinstance(x[2], bytes) else x[2].encode() for x in self.items)
        return data + b"\n" if cut is None else data[: len(data) - cut]


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
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps: list[tuple[int, float, float]] = []
        self.saves: list[tuple[int, float, float]] = []
        self.R: float | None = None
        self.E: float | None = None


def build(seed: int) -> list[Attempt]:
    rng = random.Random(f"{seed}-timeline")
    base = list(range(12))
    nodes1 = [pod(i) for i in base]
    nodes2 = [pod(12) if i == 5 else pod(i) for i in base]
    nodes6 = [pod(13) if h == pod(2) else h for h in nodes2]
    specs = [
        dict(k=1, nodes=nodes1, kind="failure", mode="node_failure", host=pod(5), gpu=None,
             fail_after=700 + rng.randint(35, 85), end="watchdog", gap=3300 + rng.randint(-200, 200),
             startup=300 + rng.randint(-10, 10)),
        dict(k=2, nodes=nodes2, kind="failure", mode="network", host=pod(9), gpu=1,
             fail_after=None, fail_rel=235 + rng.randint(0, 40), end="ctrl_c", gap=1500 + rng.randint(-100, 100),
             startup=520 + rng.randint(-15, 15)),
        dict(k=3, nodes=nodes2, kind="failure", mode="filesystem_io", host=None, gpu=None,
             fail_save=1400, end="all_fail", gap=4200 + rng.randint(-300, 300), startup=505 + rng.randint(-15, 15)),
        dict(k=4, nodes=nodes2, kind="failure", mode="cuda_oom", host=None, gpu=None,
             end="oom", gap=480 + rng.randint(-40, 40), startup=498 + rng.randint(-15, 15)),
        dict(k=5, nodes=nodes2, kind="failure", mode="gpu_memory_ecc", host=pod(2), gpu=6,
             fail_rel=560 + rng.randint(0, 30), end="watchdog", gap=2400 + rng.randint(-200, 200),
             startup=510 + rng.randint(-15, 15)),
        dict(k=6, nodes=nodes6, kind="complete", mode=None, host=None, gpu=None, end="complete", gap=None,
             startup=525 + rng.randint(-15, 15)),
    ]
    atts = [Attempt(**s) for s in specs]
    t, load = T0, 0
    for a in atts:
        a.load = load
        a.S = float(t)
        a.F = a.S + a.startup
        simulate(a, random.Random(f"{seed}-steps-{a.k}"))
        a.last_ckpt = a.saves[-1][0] if a.saves else a.load
        load = a.last_ckpt
        if a.gap is not None:
            t = a.E + a.gap
    return atts


def save_dur(rng: random.Random) -> float:
    return round(rng.uniform(108.0, 141.0), 3)


def simulate(a: Attempt, rng: random.Random) -> None:
    t, n = a.F, a.load
    if a.end == "oom":
        a.R = a.F + 8.7 + rng.uniform(0, 1.5)
        a.E = a.R + 11.0 + rng.uniform(0, 2)
        return
    fail_step = None
    if a.k == 1:
        fail_step = a.fail_after + 1
    elif a.k in (2, 5):
        fail_step = a.load + a.fail_rel + 1
    while True:
        if a.kind == "complete" and n >= TRAIN_ITERS:
            break
        n1 = n + 1
        dur = BASE_STEP * (1 + rng.uniform(-STEP_JITTER, STEP_JITTER))
        if fail_step is not None and n1 == fail_step:
            a.R = float(math.floor(t + 0.4 * dur)) + 0.25
            break
        a.steps.append((n1, t, dur))
        t += dur
        n = n1
        if n % SAVE_INTERVAL == 0:
            if a.end == "all_fail" and n == a.fail_save:
                a.R = t
                break
            c = save_dur(rng)
            if a.kind == "complete" and n == TRAIN_ITERS:
                c = round(c + 9.0, 3)
            a.saves.append((n, t, c))
            t += c
    if a.end == "watchdog":
        a.E = a.R + WATCHDOG_S + 12.0 + rng.uniform(0, 4)
    elif a.end == "ctrl_c":
        a.E = a.R + 410.0 + rng.uniform(0, 60)
    elif a.end == "all_fail":
        a.E = a.R + 196.0 + rng.uniform(0, 20)
    else:
        a.R = None
        a.E = float(math.ceil(t + 6.0))


def ledger(atts: list[Attempt]):
    cats = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute",
                          "hang", "restart", "startup", "idle"], 0.0)
    per = []
    for i, a in enumerate(atts):
        cats["startup"] += a.F - a.S
        lim = a.last_ckpt if a.kind != "complete" else 10 ** 9
        cats["productive"] += sum(d for n, _, d in a.steps if n <= lim)
        cats["checkpoint"] += sum(c for _, _, c in a.saves)
        if a.kind == "complete":
            cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        base = (a.saves[-1][1] + a.saves[-1][2]) if a.saves else a.F
        nxt = atts[i + 1]
        d = dict(recompute=a.R - base, hang=a.E - a.R, restart=nxt.S - a.E, startup=nxt.F - nxt.S)
        cats["recompute"] += d["recompute"]
        cats["hang"] += d["hang"]
        cats["restart"] += d["restart"]
        per.append(d)
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per])


# ----------------------------------------------------------------------------- launcher log pieces
def neox_args(a: Attempt) -> list[str]:
    mbs, gas = (8, 16) if a.k == 4 else (MBS, GAS)
    rows = [("attention_dropout", "0", "updated"), ("batch_size", str(mbs), "updated"),
            ("checkpoint_activations", "True", "updated"), ("data_path", "/mnt/shared/data/pile_20B_tokenizer_text_document", "updated"),
            ("deepspeed", "True", "default"), ("distributed_backend", "nccl", "default"),
            ("eval_interval", "1000", "updated"), ("fp16", "{'enabled': True, 'loss_scale': 0, 'loss_scale_window': 1000, 'initial_scale_power': 12, 'hysteresis': 2, 'min_loss_scale': 1}", "updated"),
            ("gradient_accumulation_steps", str(gas), "updated"), ("gradient_clipping", "1.0", "updated"),
            ("hidden_dropout", "0", "updated"), ("hidden_size", "6144", "updated"),
            ("hostfile", "/job/hostfile", "updated"), ("init_method", "small_init", "updated"),
            ("load", CKPT, "updated"), ("log_interval", str(LOG_INTERVAL), "updated"),
            ("lr", "9.7e-05", "updated"), ("lr_decay_iters", "150000", "updated"),
            ("lr_decay_style", "cosine", "updated"), ("max_position_embeddings", "2048", "updated"),
            ("min_lr", "9.7e-06", "updated"), ("model_parallel_size", str(TP), "updated"),
            ("no_weight_tying", "True", "updated"), ("num_attention_heads", "64", "updated"),
            ("num_layers", "44", "updated"), ("optimizer_type", "Adam", "updated"),
            ("partition_activations", "False", "updated"), ("pipe_parallel_size", str(PP), "updated"),
            ("pos_emb", "rotary", "updated"), ("precision", "fp16", "updated"), ("rotary_pct", "0.25", "updated"),
            ("save", CKPT, "updated"), ("save_interval", str(SAVE_INTERVAL), "updated"),
            ("seq_length", "2048", "updated"), ("steps_per_print", "10", "updated"),
            ("tokenizer_type", "HFTokenizer", "updated"), ("train_batch_size", str(GBS), "updated"),
            ("train_iters", str(TRAIN_ITERS), "updated"), ("train_micro_batch_size_per_gpu", str(mbs), "updated"),
            ("user_script", "train.py", "updated"), ("vocab_file", "/mnt/shared/data/20B_tokenizer.json", "updated"),
            ("wall_clock_breakdown", "False", "updated"), ("world_size", str(GPUS), "updated"),
            ("zero_optimization", "{'stage': 1, 'allgather_partitions': True, 'allgather_bucket_size': 1260000000, 'overlap_comm': True, 'reduce_scatter': True, 'reduce_bucket_size': 1260000000, 'contiguous_gradients': True, 'cpu_offload': False}", "updated")]
    out = ["-------------------- arguments --------------------"]
    for k, v, s in rows:
        out.append(f"  {k} {'.' * max(1, 32 - len(k))} {v}{'.' * max(0, 28 - len(v))}{s}")
    out.append("---------------- end of arguments ----------------")
    return out


def world_info(nodes: list[str]) -> str:
    d = {h: list(range(GPN)) for h in nodes}
    return base64.urlsafe_b64encode(json.dumps(d).encode()).decode()


def lr_at(n: int) -> float:
    warm, lmax, lmin, dec = 1500, 9.7e-5, 9.7e-6, 150000
    if n < warm:
        return lmax * n / warm
    p = min(1.0, (n - warm) / (dec - warm))
    return lmin + 0.5 * (lmax - lmin) * (1 + math.cos(math.pi * p))


def loss_at(n: int, rng: random.Random) -> float:
    return 2.05 + 8.7 * math.exp(-n / 160.0) + 0.9 * math.exp(-n / 2500.0) + rng.gauss(0, 0.015)


class Pids:
    def __init__(self, seed: int, a: Attempt):
        rng = random.Random(f"{seed}-pids-{a.k}")
        self.launch = {h: rng.randint(300, 900) for h in a.nodes}
        self.w = {(h, d): self.launch[h] + 12 + d for h in a.nodes for d in range(GPN)}
        self.comm = {(h, d): "0x7f%010x" % (rng.getrandbits(36) << 4) for h in a.nodes for d in range(GPN)}
        self.ssh = {h: rng.randint(2000, 9000) for h in a.nodes}


def nccl_init(a: Attempt, h: str, pids: Pids, rng: random.Random) -> list[str]:
    i = a.nodes.index(h)
    out = []
    nets = " ".join(f"[{k}]{HCA[k]}:1/IB" for k in range(4))
    stages = []
    for d in range(GPN):
        r = i * GPN + d
        w = pids.w[h, d]
        pre = f"{h}:{w}:{w} [{d}] NCCL INFO "
        pre2 = f"{h}:{w}:{w + 1190 + d} [{d}] NCCL INFO "
        prev_r = ((i - 1) % NPODS) * GPN + d
        next_r = ((i + 1) % NPODS) * GPN + d
        st = [pre + f"Bootstrap : Using eth0:{ip(h)}<0>",
              pre + "NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
              pre + f"NET/IB : Using {nets} ; OOB eth0:{ip(h)}<0>",
              pre + "Using network IB"]
        if r == 0:
            st.append(f"{h}:{w}:{w} [0] NCCL INFO NCCL version 2.10.3+cuda11.1")
        st += [pre2 + f"Trees [0] {r + 1 if d < 7 else -1}/-1/-1->{r}->{r - 1 if d else prev_r} "
                      f"[1] {r + 1 if d < 7 else -1}/-1/-1->{r}->{r - 1 if d else -1}",
               pre2 + f"Setting affinity for GPU {d} to {'ffff,00000000' if d < 4 else 'ffff0000,00000000,00000000'}",
               pre2 + f"Channel {d:02d} : {prev_r}[{BUS[d]}] -> {r}[{BUS[d]}] [receive] via NET/IB/{d // 2}/GDRDMA",
               pre2 + f"Channel {d:02d} : {r}[{BUS[d]}] -> {next_r}[{BUS[d]}] [send] via NET/IB/{d // 2}/GDRDMA",
               pre2 + (f"Channel 00 : {r}[{BUS[d]}] -> {r + 1}[{BUS[d + 1]}] via P2P/IPC/read" if d < 7 else
                       f"Channel 01 : {r}[{BUS[d]}] -> {r - 7}[{BUS[0]}] via P2P/IPC/read"),
               pre2 + "Connected all rings",
               pre2 + "Connected all trees",
               pre2 + "threadThresholds 8/8/64 | 768/8/64 | 8/8/512",
               pre2 + "32 coll channels, 32 p2p channels, 32 p2p channels per peer",
               pre2 + f"comm {pids.comm[h, d]} rank {r} nranks {GPUS} cudaDev {d} busId {BUS[d]} - Init COMPLETE"]
        if r == 0:
            st.append(pre + "Launch mode Parallel")
            order = " ".join(f"{x:3d}" for x in range(GPUS))
            st[4:4] = [pre2 + f"Channel {c:02d}/32 :  {order}" for c in range(32)]
        for c in range(2, 18):                      # the other rings' connections
            nic = (d // 2 + c) % 4
            st.insert(-3, pre2 + f"Channel {c:02d} : {r}[{BUS[d]}] -> {next_r if c % 2 else prev_r}[{BUS[d]}] "
                                 f"[{'send' if c % 2 else 'receive'}] via NET/IB/{nic}/GDRDMA")
        # model-parallel, pipeline and data-parallel sub-communicators (mpu / DeepSpeed topology)
        tp_rank, dp_rank, pp_rank = r % TP, (r // TP) % DP, r // (TP * DP)
        for nm, rr, nn in (("tp", tp_rank, TP), ("pp", pp_rank, PP), ("dp", dp_rank, DP)):
            cc = "0x7f%010x" % (rng.getrandbits(36) << 4)
            st += [pre2 + f"Trees [0] -1/-1/-1->{rr}->{(rr + 1) % nn} [1] -1/-1/-1->{rr}->{(rr - 1) % nn}",
                   pre2 + f"Setting affinity for GPU {d} to {'ffff,00000000' if d < 4 else 'ffff0000,00000000,00000000'}"]
            for c in range(4):
                via = "P2P/IPC/read" if nm == "tp" else f"NET/IB/{(d // 2 + c) % 4}/GDRDMA"
                st.append(pre2 + f"Channel {c:02d} : {rr}[{BUS[d]}] -> {(rr + 1) % nn}[{BUS[d]}] via {via}")
            st += [pre2 + "Connected all rings", pre2 + "Connected all trees",
                   pre2 + "threadThresholds 8/8/64 | 768/8/64 | 8/8/512",
                   pre2 + f"comm {cc} rank {rr} nranks {nn} cudaDev {d} busId {BUS[d]} - Init COMPLETE"]
        stages.append(st)
    cur = [0] * GPN
    while any(cur[d] < len(stages[d]) for d in range(GPN)):
        d = rng.randrange(GPN)
        if cur[d] < len(stages[d]):
            out.append(stages[d][cur[d]])
            cur[d] += 1
    return out


def topology_line() -> str:
    parts = []
    r = 0
    for p in range(PP):
        for dp in range(DP):
            for m in range(TP):
                parts.append(f"ProcessCoord(pipe={p}, data={dp}, model={m}): {r}")
                r += 1
    return "Using topology: {" + ", ".join(parts) + "}"


WARN_REDUCE = ("/usr/local/lib/python3.8/dist-packages/torch/distributed/distributed_c10d.py:181: UserWarning: "
               "torch.distributed.reduce_op is deprecated, please use torch.distributed.ReduceOp instead")
WARN_CKPT = ("/usr/local/lib/python3.8/dist-packages/torch/utils/checkpoint.py:25: UserWarning: None of the "
             "inputs have requires_grad=True. Gradients will be None")


def launch_args(h_rank: int) -> str:
    return (f"['/usr/bin/python', '-u', 'train.py', '--local_rank={h_rank}', '--deepspeed_config', "
            f"'{{\"train_batch_size\": {GBS}, \"train_micro_batch_size_per_gpu\": {MBS}, ...}}', "
            f"'--megatron_config', '{{\"hostfile\": \"/job/hostfile\", \"launcher\": \"pdsh\", ...}}']")


def attempt_log(a: Attempt, pids: Pids, seed: int, info: dict) -> bytes:
    rng = random.Random(f"{seed}-log-{a.k}")
    L = Sink()
    S, F = a.S, a.F
    r0 = a.nodes[0]

    def P(h: str, t: float, line: str) -> None:          # pdsh-prefixed line from a worker
        L.add(t, f"{h}: {line}")

    def DS(t: float, src: str, msg: str, lvl: str = "INFO") -> str:
        return f"{ds_ts(t)} [{lvl}] [{src}] {msg}"

    L.add(S, f"START TIME: {date_cmd(S)}")
    L.add(S + 0.8, DS(S + 0.8, "runner.py:378:main", f"Using IP address of {ip(r0)} for node {r0}"))
    L.add(S + 0.81, DS(S + 0.81, "multinode_runner.py:65:get_cmd", "Running on the following workers: " + ",".join(a.nodes)))
    L.add(S + 0.82, DS(S + 0.82, "runner.py:457:main",
                       f"cmd = pdsh -f 1024 -w {','.join(a.nodes)} export NCCL_DEBUG=INFO; export NCCL_IB_HCA="
                       f"{','.join(HCA)}; export NCCL_SOCKET_IFNAME=eth0; export NCCL_ASYNC_ERROR_HANDLING=1; "
                       f"export PYTHONPATH=/gpt-neox;  cd /gpt-neox; /usr/bin/python -u -m deepspeed.launcher.launch "
                       f"--world_info={world_info(a.nodes)} --node_rank=%n --master_addr={ip(r0)} --master_port=29500 "
                       f"train.py --deepspeed_config '{{...}}' --megatron_config '{{...}}'"))
    t = S + 4.0
    for i, h in enumerate(a.nodes):
        tt = t + 0.06 * i + rng.uniform(0, 0.5)
        P(h, tt, DS(tt, "launch.py:82:main", "WORLD INFO DICT: " + str({x: list(range(GPN)) for x in a.nodes})))
        P(h, tt, DS(tt, "launch.py:88:main", f"nnodes={len(a.nodes)}, num_local_procs={GPN}, node_rank={i}"))
        mapping = {x: list(range(j * GPN, j * GPN + GPN)) for j, x in enumerate(a.nodes)}
        P(h, tt, DS(tt, "launch.py:103:main", f"global_rank_mapping=defaultdict(<class 'list'>, {mapping})"))
        P(h, tt, DS(tt, "launch.py:104:main", f"dist_world_size={GPUS}"))
        P(h, tt, DS(tt, "launch.py:106:main", "Setting CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7"))
    t = S + 14.0
    P(r0, t, "NeoXArgs.from_ymls() ['configs/20B.yml', 'configs/cw_ord1.yml']")
    P(r0, t, f"INFO:root:NeoXArgs.calculate_derived() Total number of GPUs determined to be: {GPUS}")
    for ln in neox_args(a):
        P(r0, t + 0.1, ln)
    P(r0, t + 0.3, "> building HFTokenizer tokenizer ...")
    P(r0, t + 1.1, " > padded vocab (size: 50277) with 155 dummy tokens (new size: 50432)")
    P(r0, t + 1.2, "> initializing torch distributed ...")
    for i, h in enumerate(a.nodes):
        for _ in range(0, GPN, 3):
            P(h, t + 2 + 0.01 * i, WARN_REDUCE)
            P(h, t + 2 + 0.01 * i, '  warnings.warn("torch.distributed.reduce_op is deprecated, please use "')
    tn = S + 40.0
    for i, h in enumerate(a.nodes):
        for ln in nccl_init(a, h, pids, random.Random(f"{seed}-nccl-{a.k}-{h}")):
            P(h, tn + 0.02 * i, ln)
    P(r0, tn + 3, f"> initializing model parallel with size {TP}")
    P(r0, tn + 3, "> setting random seeds to 1234 ...")
    P(r0, tn + 3.1, "make: Entering directory '/gpt-neox/megatron/data'")
    P(r0, tn + 3.1, "make: Nothing to be done for 'default'.")
    P(r0, tn + 3.1, "make: Leaving directory '/gpt-neox/megatron/data'")
    P(r0, tn + 4, "building GPT2 model ...")
    P(r0, tn + 4.5, "SEED_LAYERS=False BASE_SEED=1234 SEED_FN=None")
    P(r0, tn + 4.5, topology_line())
    P(r0, tn + 5, DS(tn + 5, "module.py:363:_partition_layers", "Partitioning pipeline stages with method type:transformer|mlp"))
    for st, (lo, hi) in enumerate([(0, 14), (14, 25), (25, 36), (36, 50)]):
        P(r0, tn + 5, f"stage={st} layers={hi - lo}")
    P(r0, tn + 9, f" > number of parameters on model parallel rank 0: {N_PARAMS // 8 + 12_345}")
    tl = tn + 40
    if a.load == 0:
        P(r0, tl, DS(tl, "engine.py:2054:load_checkpoint", f"Unable to find latest file at {CKPT}/latest, if trying to "
                     "load latest checkpoint please ensure this file exists or pass an explicit checkpoint tag when "
                     "loading a checkpoint.", "WARNING"))
        P(r0, tl + 0.1, "Unable to load checkpoint.")
    else:
        for i, h in enumerate(a.nodes):
            for d in (0, 5):
                r = i * GPN + d
                P(h, tl + 0.01 * r, DS(tl + 0.01 * r, "engine.py:1551:_load_checkpoint",
                                       f"rank: {r} loading checkpoint: {CKPT}/global_step{a.load}/mp_rank_{r % TP:02d}_model_states.pt"))
        tt = F - 95
        P(r0, tt, f"  successfully loaded checkpoint from {CKPT} at iteration {a.load}")
    P(r0, F - 80, "> building train, validation, and test datasets ...")
    P(r0, F - 79, "    reading sizes...")
    P(r0, F - 60, "    reading pointers...")
    P(r0, F - 41, "    reading document index...")
    P(r0, F - 40, " > loading doc-idx mapping from /mnt/shared/data/pile_20B_tokenizer_text_document_train_indexmap_4620000ns_2048sl_1234s_doc_idx.npy")
    P(r0, F - 22, "setting training data start iteration to " + str(a.load))
    P(r0, F - 2, "done with setups ...")
    P(r0, F - 1.5, "time (ms) | model and optimizer: " + f"{(F - tn - 45) * 1000:.2f}" + " | train/valid/test data iterators: "
      + f"{78123.4 + rng.random() * 900:.2f}")
    P(r0, F - 1, "training ...")
    P(r0, F, DS(F, "checkpointing.py:547:forward", "Activation Checkpointing Information"))
    P(r0, F, DS(F, "checkpointing.py:548:forward", "----Partition Activations False, CPU CHECKPOINTING False"))
    P(r0, F, DS(F, "checkpointing.py:551:forward", "----contiguous Memory Checkpointing False with 44 total layers"))
    P(r0, F, DS(F, "checkpointing.py:554:forward", "----Synchronization False"))
    P(r0, F, DS(F, "checkpointing.py:555:forward", "----Profiling time in checkpointing False"))
    for i, h in enumerate(a.nodes[::4]):
        P(h, F + 2 + i, WARN_CKPT)
        P(h, F + 2 + i, '  warnings.warn("None of the inputs have requires_grad=True. Gradients will be None")')

    # iteration lines (log interval 10; the interval time includes any save inside it)
    lrng = random.Random(f"{seed}-loss-{a.k}")
    save_after = {n: c for n, _, c in a.saves}
    acc = 0.0
    scale = 4096.0 * (2 ** min(4, a.k))
    for n, ts, dur in a.steps:
        acc += dur
        end = ts + dur
        if n % LOG_INTERVAL == 0:
            it = acc / LOG_INTERVAL
            sps = GBS / it
            fl = TOKENS_PER_STEP * FLOPS_PER_TOKEN / it / GPUS
            P(r0, end + 0.02, DS(end + 0.02, "logging.py:60:log_dist",
                                 f"[Rank 0] step={n}, skipped=0, lr=[{lr_at(n)}, {lr_at(n)}], mom=[[0.9, 0.95], [0.9, 0.95]]"))
            P(r0, end + 0.03, f"steps: {n} loss: {loss_at(n, lrng):.4f} iter time (s): {it:.3f} samples/sec: {sps:.3f}")
            P(r0, end + 0.05, f" samples/sec: {sps:.3f} | iteration {n:8d}/{TRAIN_ITERS:8d} | elapsed time per iteration (ms): "
                              f"{it * 1000:.1f} | learning rate: {lr_at(n):.3E} | approx flops per GPU: {fl / 1e12:.1f}TFLOPS | "
                              f"lm_loss: {loss_at(n, lrng):.6E} | loss scale: {scale:.1f} | number of skipped iterations:   0 | "
                              f"number of nan iterations:   0 |")
            if n - a.load == LOG_INTERVAL:
                P(r0, end + 0.06, "after 10 iterations memory (MB) | allocated: 11873.2421875 | max allocated: 33102.6748046875 | "
                                  "reserved: 35916.0 | max reserved: 35916.0")
            acc = 0.0
        if n in save_after:
            c = save_after[n]
            acc += c                                   # the interval timer runs through the save
            save_lines(a, P, DS, n, end, c, rng)
    if a.k == 6:                                   # harmless GID table change WARN on worker-1
        h = pod(1)
        w = pids.w[h, 3]
        tg = F + 0.3 * (a.E - F)
        P(h, tg, f"{h}:{w}:{w + 1203 + 3} [3] transport/net_ib.cc:93 NCCL WARN NET/IB : {HCA[1]}:1 Got async event : GID table change")
    tail = None
    if a.end == "complete":
        t_fin = a.E - 4.0
        P(r0, t_fin - 0.5, f" validation results at the end of training for val data | lm_loss value: {2.48 + rng.random() * 0.02:.6E} | "
                           f"lm_loss_ppl value: {12.0 + rng.random():.6E} |")
        for i, h in enumerate(a.nodes):
            P(h, t_fin + 0.1 * i, DS(t_fin + 0.1 * i, "launch.py:160:main", f"Process {pids.w[h, 0]} exits successfully."))
        L.add(a.E, f"END TIME: {date_cmd(a.E)}")
    else:
        tail = failure(a, L, P, DS, pids, rng, info)
    return L.render(cut=tail)


def save_lines(a, P, DS, n, t, c, rng):
    r0 = a.nodes[0]
    P(r0, t + 0.08, DS(t + 0.08, "logging.py:60:log_dist", f"[Rank 0] Saving model checkpoint: {CKPT}/global_step{n}/mp_rank_00_model_states.pt"))
    P(a.nodes[1], t + 0.09, DS(t + 0.09, "logging.py:60:log_dist", f"[Rank 1] Saving model checkpoint: {CKPT}/global_step{n}/mp_rank_01_model_states.pt"))
    if c is None:
        return
    for j, h in enumerate(a.nodes[::3]):
        tt = t + c - rng.uniform(0.5, 6.0) if j else t + c
        r = a.nodes.index(h) * GPN
        P(h, tt, DS(tt, "engine.py:2503:_save_zero_checkpoint",
                    f"zero checkpoint saved {CKPT}/global_step{n}/zero_pp_rank_{r // (TP * PP) % DP}_mp_rank_{r % TP:02d}_optim_states.pt"))


WATCHDOG_TB = "[E ProcessGroupNCCL.cpp:341] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data. To avoid this inconsistency, we are taking the entire process down."


def watchdog(a, P, pids, rng, t0, skip: set[str], seq: int):
    for i, h in enumerate(a.nodes):
        if h in skip:
            continue
        for d in range(GPN):
            r = i * GPN + d
            tw = t0 + rng.uniform(0.05, 2.5)
            P(h, tw, f"[E ProcessGroupNCCL.cpp:587] [Rank {r}] Watchdog caught collective operation timeout: "
                     f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for {1800000 + rng.randint(40, 2400)} "
                     f"milliseconds before timing out.")
            P(h, tw + 0.01, WATCHDOG_TB)
            P(h, tw + 0.02, "terminate called after throwing an instance of 'std::runtime_error'")
            P(h, tw + 0.02, f"  what():  [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
                            f"OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800{rng.randint(100, 999)} milliseconds before timing out.")
        kill_host(a, P, pids, h, t0 + 4.0, -6, rng)


def kill_host(a, P, pids, h, t, code, rng, first: int | None = None):
    def DS(tt, src, msg, lvl="INFO"):
        return f"{ds_ts(tt)} [{lvl}] [{src}] {msg}"
    for d in range(GPN):
        P(h, t + 0.003 * d, DS(t + 0.003 * d, "launch.py:131:sigkill_handler", f"Killing subprocess {pids.w[h, d]}"))
    ld = first if first is not None else rng.randrange(GPN)
    P(h, t + 0.05, DS(t + 0.05, "launch.py:137:sigkill_handler", f"{launch_args(ld)} exits with return code = {code}", "ERROR"))


def failure(a: Attempt, L: Sink, P, DS, pids: Pids, rng: random.Random, info: dict):
    R, E = a.R, a.E
    seq = 40_000 + 100 * a.k + rng.randint(0, 99)
    launcher = f"pdsh@{LAUNCHER}"
    cut = None
    if a.mode == "node_failure":
        dead = a.host
        idx = a.nodes.index(dead)
        peers = [a.nodes[idx - 1], a.nodes[idx + 1]]
        t_ib = R + 8.0 + rng.uniform(0, 0.8)
        info["symptom_first_ts"] = t_ib
        for h in peers:
            i = a.nodes.index(h)
            for d in range(GPN):
                r = i * GPN + d
                tt = t_ib + 0.05 * d + rng.uniform(0, 0.3)
                w = pids.w[h, d]
                P(h, tt, f"{h}:{w}:{w + 1203 + d} [{d}] transport/net_ib.cc:1002 NCCL WARN NET/IB : Got completion with error 12, "
                         f"opcode 0, len 0, vendor err 129")
                P(h, tt, f"{h}:{w}:{w + 1203 + d} [{d}] NCCL INFO include/net.h:28 -> 2")
                P(h, tt, f"{h}:{w}:{w + 1203 + d} [{d}] NCCL INFO transport/net.cc:404 -> 2")
                P(h, tt, f"{h}:{w}:{w + 1203 + d} [{d}] NCCL INFO proxy.cc:320 -> 2 [Proxy Thread]")
                P(h, tt + 1.1, "Traceback (most recent call last):")
                P(h, tt + 1.1, '  File "train.py", line 27, in <module>')
                P(h, tt + 1.1, "    pretrain(neox_args=neox_args)")
                P(h, tt + 1.1, '  File "/gpt-neox/megatron/training.py", line 106, in pretrain')
                P(h, tt + 1.1, "    iteration = train(")
                P(h, tt + 1.1, "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1169, "
                               "unhandled system error, NCCL version 21.0.3")
                del r
            kill_host(a, P, pids, h, t_ib + 3.0, 1, rng)
            L.add(t_ib + 4.5, f"{launcher}: {h}: ssh exited with exit code 1")
        P(launcher, R + 95 + rng.uniform(0, 10), f"{dead}: ssh exited with exit code 255")
        watchdog(a, P, pids, rng, R + WATCHDOG_S + 0.5, set(peers) | {dead}, seq)
        for h in a.nodes:
            if h != dead and h not in peers:
                L.add(E - 3.0, f"{launcher}: {h}: ssh exited with exit code 250")
        L.add(E, f"END TIME: {date_cmd(E)}")
    elif a.mode == "network":
        bad = a.host
        idx = a.nodes.index(bad)
        trio = [a.nodes[idx - 1], bad, a.nodes[idx + 1]]
        t_ib = R + 7.5 + rng.uniform(0, 0.8)
        info["symptom_first_ts"] = t_ib
        for h in trio:
            i = a.nodes.index(h)
            for d in (2, 3):                          # GPUs 2,3 use HCA mlx5_1 (ibp75s0)
                w = pids.w[h, d]
                tt = t_ib + 0.2 * trio.index(h) + 0.03 * d
                for rep in range(2):
                    P(h, tt + rep, f"{h}:{w}:{w + 1203 + d} [{d}] transport/net_ib.cc:1002 NCCL WARN NET/IB : Got completion with "
                                   f"error {12 if rep == 0 else 5}, opcode {0 if rep == 0 else 1}, len 0, vendor err {129 if rep == 0 else 249}")
                    P(h, tt + rep, f"{h}:{w}:{w + 1203 + d} [{d}] NCCL INFO transport/net.cc:404 -> 2")
                    P(h, tt + rep, f"{h}:{w}:{w + 1203 + d} [{d}] NCCL INFO proxy.cc:320 -> 2 [Proxy Thread]")
                P(h, tt + 2.2, "Traceback (most recent call last):")
                P(h, tt + 2.2, '  File "train.py", line 27, in <module>')
                P(h, tt + 2.2, "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1169, "
                               "unhandled system error, NCCL version 21.0.3")
            kill_host(a, P, pids, h, t_ib + 4.0, 1, rng, first=2)
            L.add(t_ib + 6.0, f"{launcher}: {h}: ssh exited with exit code 1")
        tc = E - 2.5
        L.add(tc, f"{launcher}: interrupt (one more within 1 sec to abort)")
        for h in a.nodes:
            if h not in trio:
                L.add(tc + 0.002, f"{launcher}: {h}: command in progress")
        L.add(tc + 0.6, f"sending SIGTERM to ssh {a.nodes[0]} pid {pids.ssh[a.nodes[0]]}")
        for h in a.nodes[1:]:
            if h not in trio:
                L.add(tc + 0.6, f"sending SIGTERM to ssh {h} pid {pids.ssh[h]}")
        L.add(tc + 0.7, f"{launcher}: interrupt, aborting.")
        L.add(E, f"END TIME: {date_cmd(E)}")
    elif a.mode == "filesystem_io":
        n = a.fail_save
        save_lines(a, P, DS, n, R, None, rng)
        info["symptom_first_ts"] = R + 180.0
        for i, h in enumerate(a.nodes):
            for d in range(GPN):
                r = i * GPN + d
                tt = R + 181.0 + rng.uniform(0, 9.0)
                fname = (f"mp_rank_{r % TP:02d}_model_states.pt" if r < TP else
                         f"zero_pp_rank_{(r // TP) % DP}_mp_rank_{r % TP:02d}_optim_states.pt")
                tb = ["Traceback (most recent call last):",
                      '  File "/usr/local/lib/python3.8/dist-packages/torch/serialization.py", line 379, in save',
                      "    _save(obj, opened_zipfile, pickle_module, pickle_protocol)",
                      '  File "/usr/local/lib/python3.8/dist-packages/torch/serialization.py", line 499, in _save',
                      "    zip_file.write_record(name, storage.data_ptr(), num_bytes)",
                      f"OSError: [Errno 5] Input/output error: '{CKPT}/global_step{n}/{fname}'", "",
                      "During handling of the above exception, another exception occurred:", "",
                      "Traceback (most recent call last):",
                      '  File "train.py", line 27, in <module>',
                      "    pretrain(neox_args=neox_args)",
                      '  File "/gpt-neox/megatron/training.py", line 106, in pretrain',
                      "    iteration = train(",
                      '  File "/gpt-neox/megatron/training.py", line 601, in train',
                      "    save_checkpoint(",
                      '  File "/gpt-neox/megatron/checkpointing.py", line 208, in save_checkpoint',
                      "    save_ds_checkpoint(iteration, model, neox_args)",
                      '  File "/gpt-neox/megatron/checkpointing.py", line 191, in save_ds_checkpoint',
                      "    model.save_checkpoint(neox_args.save, tag=tag, client_state=sd)",
                      '  File "/usr/local/lib/python3.8/dist-packages/deepspeed/runtime/engine.py", line 2380, in save_checkpoint',
                      "    self._save_zero_checkpoint(save_dir, tag)",
                      '  File "/usr/local/lib/python3.8/dist-packages/deepspeed/runtime/engine.py", line 2501, in _save_zero_checkpoint',
                      "    torch.save(zero_sd, zero_checkpoint_name)",
                      '  File "/usr/local/lib/python3.8/dist-packages/torch/serialization.py", line 380, in save',
                      "    return",
                      "RuntimeError: [enforce fail at inline_container.cc:300] . unexpected pos 1471812608 vs 1471812496"]
                if d in (0, 4) or r < TP:
                    for ln in tb:
                        P(h, tt, ln)
            kill_host(a, P, pids, h, R + 192.0 + 0.05 * i, 1, rng)
        for h in a.nodes:
            L.add(E - 2.0, f"{launcher}: {h}: ssh exited with exit code 1")
        L.add(E, f"END TIME: {date_cmd(E)}")
    elif a.mode == "cuda_oom":
        info["symptom_first_ts"] = R
        for i, h in enumerate(a.nodes):
            for d in range(GPN):
                r = i * GPN + d
                if (r * 7) % 5 == 0 or r < 4:
                    tt = R + rng.uniform(0, 2.0)
                    alloc = 35.2 + rng.uniform(0, 1.4)
                    free = 39.59 - alloc - 2.3
                    tb = ["Traceback (most recent call last):", '  File "train.py", line 27, in <module>',
                          "    pretrain(neox_args=neox_args)",
                          '  File "/gpt-neox/megatron/training.py", line 106, in pretrain',
                          "    iteration = train(",
                          '  File "/usr/local/lib/python3.8/dist-packages/deepspeed/runtime/pipe/engine.py", line 1307, in _exec_schedule',
                          "    self._exec_instr(**cmd.kwargs)",
                          '  File "/usr/local/lib/python3.8/dist-packages/deepspeed/runtime/pipe/engine.py", line 627, in _exec_forward_pass',
                          "    outputs = super().forward(inputs)",
                          f"RuntimeError: CUDA out of memory. Tried to allocate 1.50 GiB (GPU {d}; 39.59 GiB total capacity; "
                          f"{alloc:.2f} GiB already allocated; {free * 1024:.2f} MiB free; {alloc + 0.9:.2f} GiB reserved in total by "
                          f"PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  "
                          f"See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"]
                    for ln in tb:
                        P(h, tt, ln)
            kill_host(a, P, pids, h, R + 4.0 + 0.04 * i, 1, rng)
        for h in a.nodes:
            L.add(E - 1.0, f"{launcher}: {h}: ssh exited with exit code 1")
        L.add(E, f"END TIME: {date_cmd(E)}")
    elif a.mode == "gpu_memory_ecc":
        h = a.host
        i = a.nodes.index(h)
        d = a.gpu
        r = i * GPN + d
        te = R + 0.9 + rng.uniform(0, 0.4)
        info["symptom_first_ts"] = te
        for ln in ["Traceback (most recent call last):", '  File "train.py", line 27, in <module>',
                   "    pretrain(neox_args=neox_args)", '  File "/gpt-neox/megatron/training.py", line 106, in pretrain',
                   "    iteration = train(", '  File "/gpt-neox/megatron/training.py", line 583, in train',
                   "    loss_dict, skipped_iter = train_step(",
                   '  File "/usr/local/lib/python3.8/dist-packages/deepspeed/runtime/pipe/engine.py", line 356, in train_batch',
                   "    self._exec_schedule(sched)",
                   "RuntimeError: CUDA error: uncorrectable ECC error encountered",
                   "CUDA kernel errors might be asynchronously reported at some other API call,so the stacktrace below might be incorrect.",
                   "For debugging consider passing CUDA_LAUNCH_BLOCKING=1."]:
            P(h, te, ln)
        kill_host(a, P, pids, h, te + 2.0, 1, rng, first=d)
        L.add(te + 3.5, f"{launcher}: {h}: ssh exited with exit code 1")
        watchdog(a, P, pids, rng, R + WATCHDOG_S + 0.4, {h}, seq)
        for hh in a.nodes:
            if hh != h:
                L.add(E - 2.0, f"{launcher}: {hh}: ssh exited with exit code 250")
        L.add(E, f"END TIME: {date_cmd(E)}")
        del r
    return cut


# ----------------------------------------------------------------------------- kernel logs
NOISE = ["IPv6: ADDRCONF(NETDEV_CHANGE): cali{v}: link becomes ready",
         "perf: interrupt took too long ({a} > {b}), lowering kernel.perf_event_max_sample_rate to {c}",
         "kauditd_printk_skb: {k} callbacks suppressed",
         "cni0: port 3(veth{v}) entered blocking state",
         "cni0: port 3(veth{v}) entered forwarding state",
         "nvidia-nvswitch: Probing device 0000:{v2}:00.0, Vendor Id = 0x10de, Device Id = 0x1af1, Class = 0x68000"]


def noise(t0: float, t1: float, rng: random.Random) -> list[tuple[float, str]]:
    out, t = [], t0 + rng.uniform(300, 4000)
    while t < t1:
        a = rng.randint(2501, 6000)
        out.append((t, rng.choice(NOISE).format(v=f"{rng.getrandbits(28):07x}", a=a, b=a - 5, c=rng.choice([79750, 63750]),
                                                k=rng.randint(3, 40), v2=f"{rng.randint(0xc0, 0xcf):02x}")))
        t += rng.uniform(250, 1800)
    return out


def boot_lines() -> list[tuple[float, str]]:
    ev = [(0.0, "Linux version 5.4.0-91-generic (buildd@lcy01-amd64-017) (gcc version 9.3.0 (Ubuntu 9.3.0-17ubuntu1~20.04)) #102-Ubuntu SMP Fri Nov 5 16:31:28 UTC 2021"),
          (0.0, "DMI: Supermicro AS -4124GO-NART/H12DSG-O-CPU, BIOS 2.1 06/28/2021")]
    for k in range(4):
        ev.append((9.1 + 0.01 * k, f"mlx5_core {HCA_PCI[k]}: firmware version: 20.31.1014"))
        ev.append((12.3 + 0.01 * k, f"mlx5_core {HCA_PCI[k]} {HCA_IF[k]}: renamed from ib{k}"))
    ev.append((18.2, "nvidia: module license 'NVIDIA' taints kernel."))
    ev.append((18.9, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  470.82.01  Wed Oct 27 21:21:55 UTC 2021"))
    for k in range(4):
        ev.append((31.0 + 0.01 * k, f"mlx5_core {HCA_PCI[k]} {HCA_IF[k]}: Link up"))
    return ev


def xid_pre(h, g, uuid, serial):
    pci = f"0000:{BUS[g][:2]}:00"
    return pci, [f"NVRM: GPU at PCI:{pci}: {uuid}", f"NVRM: GPU Board Serial Number: {serial}"]


def kernel(atts: list[Attempt], seed: int, bundle: Path) -> None:
    a1, a2, a3, a4, a5, a6 = atts
    t_end = a6.E + 1800
    for h in PODS:
        if h == a1.host:
            continue                                   # the node died; nothing could be collected
        hr = random.Random(f"{seed}-k-{h}")
        boot = T0 - hr.randint(3 * 86400, 9 * 86400)
        if h == pod(12):
            boot = a1.E + 1200                          # the replacement pod landed on a fresh node
        if h == pod(13):
            boot = a5.E + 900
        ev = [(boot + dt, m) for dt, m in boot_lines()] + noise(boot, t_end, hr)
        uuid = (f"GPU-{hr.getrandbits(32):08x}-{hr.getrandbits(16):04x}-{hr.getrandbits(16):04x}-"
                f"{hr.getrandbits(16):04x}-{hr.getrandbits(48):012x}")
        serial = f"1323221{hr.randint(0, 999999):06d}"
        in_a3 = h in a3.nodes
        if in_a3 and (hr.random() < 0.75 or h == a3.nodes[0]):   # NFS outage seen from most pods
            t = a3.R + 6 + hr.uniform(0, 25)
            ev += [(t, f"nfs: server {NFS} not responding, timed out"),
                   (t + 31, f"nfs: server {NFS} not responding, timed out"),
                   (t + 122, f"INFO: task python:{hr.randint(3000, 9000)} blocked for more than 120 seconds."),
                   (t + 122, "      Tainted: P           OE     5.4.0-91-generic #102-Ubuntu"),
                   (t + 122, '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.'),
                   (a3.E + 300 + hr.uniform(0, 60), f"nfs: server {NFS} OK")]
        if h == a2.host:                               # IB cable fault
            k = a2.gpu
            ev += [(a2.R, f"mlx5_core {HCA_PCI[k]}: mlx5_port_module_event:1081:(pid 0): Port module event[error]: "
                          f"module {k}, Cable error, Bus stuck (I2C or data shorted)"),
                   (a2.R + 0.01, f"mlx5_core {HCA_PCI[k]} {HCA_IF[k]}: Link down"),
                   (a2.R + 73, f"mlx5_core {HCA_PCI[k]} {HCA_IF[k]}: Link up"),
                   (a2.R + 75, f"mlx5_core {HCA_PCI[k]} {HCA_IF[k]}: Link down"),
                   (a2.R + 140, f"mlx5_core {HCA_PCI[k]} {HCA_IF[k]}: Link up")]
        if h == a5.host:                               # Xid 48
            pci, pre = xid_pre(h, a5.gpu, uuid, serial)
            ev += [(a5.R, x) for x in pre]
            ev += [(a5.R, f"NVRM: Xid (PCI:{pci}): 48, pid=1611, name=python, An uncorrectable double bit error (DBE) "
                          f"has been detected on GPU in the framebuffer at physAddr 0x7a3c91040 partition 3, subpartition 0."),
                   (a5.R + 0.2, f"NVRM: Xid (PCI:{pci}): 48, pid=1611, name=python, An uncorrectable double bit error (DBE) "
                                f"has been detected on GPU in the framebuffer at physAddr 0x7a3c91060 partition 3, subpartition 0.")]
        if h == pod(10):                               # decoy Xid 13 mid attempt 6
            pci = f"0000:{BUS[4][:2]}:00"
            tm = a6.F + 0.45 * (a6.E - a6.F)
            ev += [(tm, f"NVRM: Xid (PCI:{pci}): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on "
                        f"(GPC 3, TPC 1, SM 0): Out Of Range Address"),
                   (tm, f"NVRM: Xid (PCI:{pci}): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x51e730=0x102000e "
                        f"0x51e734=0x24 0x51e728=0x4c1eb72 0x51e72c=0x174")]
        if h == pod(3):                                # decoy Xid 43 from a profiler, 50 min before incident 2
            pci = f"0000:{BUS[1][:2]}:00"
            ev += [(a2.R - 3000, f"NVRM: Xid (PCI:{pci}): 43, pid=28811, name=nsys, Ch 00000010")]
        if h == pod(14):                               # idle spare: NFS blip and a link flap, never in a hostfile
            ev += [(a6.F + 5000, f"nfs: server {NFS} not responding, still trying"),
                   (a6.F + 5063, f"nfs: server {NFS} OK"),
                   (a6.F + 9000, f"mlx5_core {HCA_PCI[2]} {HCA_IF[2]}: Link down"),
                   (a6.F + 9004, f"mlx5_core {HCA_PCI[2]} {HCA_IF[2]}: Link up")]
        skew = SKEW.get(h, 0.0)
        ev.sort(key=lambda x: x[0])
        frng = random.Random(f"{seed}-frac-{h}")
        if h == a2.host:                               # syslog style, rotated: kern.log.1.gz + kern.log
            cut_t = a2.E + 3600
            old = [(t, m) for t, m in ev if t < cut_t]
            new = [(t, m) for t, m in ev if t >= cut_t]

            write(bundle / "nodes" / h / "kern.log.1.gz", sys_render(old, h, boot, skew, frng), gz=True)
            write(bundle / "nodes" / h / "kern.log", sys_render(new, h, boot, skew, frng))
            continue
        body = "\n".join(f"{dmesg_T(t + skew)} {m}" for t, m in ev) + "\n"
        if h == pod(7):
            body = body[:-19]                          # collected while the ring buffer was being written
        write(bundle / "nodes" / h / "dmesg-T.txt", body.encode())


def sys_render(evs, h: str, boot: float, skew: float, frng: random.Random) -> bytes:
    return ("\n".join(f"{syslog_ts(t + skew)} {h} kernel: [{t - boot + frng.random() * 0.001:12.6f}] {m}"
                      for t, m in evs) + "\n").encode()


def kube_log(atts: list[Attempt], seed: int) -> bytes:
    rng = random.Random(f"{seed}-kube")
    a1 = atts[0]
    L = Sink()
    ns = "tenant-eleuther"

    def ev(t, obj, kind, typ, reason, msg, api="v1"):
        L.add(t, klog(t) + f'event.go:291] "Event occurred" object="{obj}" kind="{kind}" apiVersion="{api}" '
                           f'type="{typ}" reason="{reason}" message="{msg}"')
    dead, node = a1.host, K8S_NODE[a1.host]
    ev(a1.R + 40.3, node, "Node", "Normal", "NodeNotReady", f"Node {node} status is now: NodeNotReady")
    ev(a1.R + 40.4, f"{ns}/{dead}", "Pod", "Warning", "NodeNotReady", "Node is not ready")
    L.add(a1.R + 340.5, klog(a1.R + 340.5) + f'taint_manager.go:106] "NoExecuteTaintManager is deleting pod" pod="{ns}/{dead}"')
    ev(a1.R + 340.6, f"{ns}/{dead}", "Pod", "Normal", "TaintManagerEviction", f"Marking for deletion Pod {ns}/{dead}", api="")
    t12 = a1.E + 1100
    ev(t12, f"{ns}/neox-20b-worker", "StatefulSet", "Normal", "SuccessfulCreate",
       f"create Pod {pod(12)} in StatefulSet neox-20b-worker successful", api="apps/v1")
    a5 = atts[4]
    ev(a5.E + 800, f"{ns}/neox-20b-worker", "StatefulSet", "Normal", "SuccessfulCreate",
       f"create Pod {pod(13)} in StatefulSet neox-20b-worker successful", api="apps/v1")
    t = T0 - 3600
    while t < atts[-1].E:                              # other tenants' churn
        app = rng.choice(["sd-inference", "jupyter-lab", "vllm-bench", "dataprep"])
        ev(t, f"tenant-{rng.choice(['a7', 'b2', 'k9'])}/{app}-{rng.getrandbits(24):06x}", "ReplicaSet", "Normal",
           "SuccessfulCreate", f"Created pod: {app}-{rng.getrandbits(24):06x}-{rng.getrandbits(20):05x}", api="apps/v1")
        t += rng.uniform(600, 5400)
    return L.render(cut=37)                         # copied while the controller was writing


# ----------------------------------------------------------------------------- configs, truth, main
def inventory() -> str:
    return f"""# CoreWeave ORD1 tenant namespace: pods of StatefulSet neox-20b-worker (one 8-GPU node each)
[providers.{PROVIDER}]
usd_per_gpu_hour = 2.06
support = "CoreWeave support; node replacement via pod reschedule"

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "A100-SXM4-40GB"
gpus_per_node = 8
interconnect = "InfiniBand HDR 4x200G (ConnectX-6)"
nodes = "neox-20b-worker-[0-14]"
"""


def run_toml() -> str:
    return f"""# GPT-NeoX-20B (gpt-neox, DeepSpeed pipeline + Megatron TP), TP={TP} PP={PP} DP={DP}
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
params = {N_PARAMS}
layers = 44
hidden = 6144
seq_len = {SEQ}
flops_per_token = {FLOPS_PER_TOKEN:.4e}
checkpoint_dir = "{CKPT}"
launcher = "deepspeed"
launch_command = "python ./deepy.py train.py -d configs 20B.yml cw_ord1.yml"
"""


def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts = build(seed)
    write(bundle / "inventory.toml", inventory().encode())
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", run_toml().encode())
    infos = {}
    for a in atts:
        pids = Pids(seed, a)
        info: dict = {}
        data = attempt_log(a, pids, seed, info)
        infos[a.k] = info
        d = _split(a.S)[0]
        name = f"deepy-{d:%Y%m%d-%H%M}.log"
        write(rdir / f"attempt-{a.k}" / (name + (".gz" if a.k == 6 else "")), data, gz=a.k == 6)
        write(rdir / f"attempt-{a.k}" / "hostfile", ("".join(f"{h} slots=8\n" for h in a.nodes)).encode())
    kernel(atts, seed, bundle)
    write(bundle / "scheduler" / "kube-controller-manager.log", kube_log(atts, seed))
    cats, total, per = ledger(atts)
    incidents = []
    for j, a in enumerate(atts[:-1]):
        nxt = atts[j + 1]
        inc = {"id": j + 1, "attempt": a.k, "attempts": [a.k], "failure_mode": a.mode,
               "blame": "user" if a.mode == "cuda_oom" else "provider",
               "host": a.host, "cluster": CLUSTER, "provider": PROVIDER, "gpu_index": a.gpu,
               "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E), "next_start_ts": iso_z(nxt.S),
               "next_first_step_ts": iso_z(nxt.F), "last_ckpt_step": a.last_ckpt,
               "failed_at_step": a.steps[-1][0] if a.steps else a.load,
               "symptom_first_ts": iso_z(infos[a.k]["symptom_first_ts"]),
               "gpu_hours": per[j], "gpu_hours_lost": round(sum(per[j].values()), 4)}
        incidents.append(inc)
    incidents[0]["symptom_hosts"] = [pod(4), pod(6)]
    incidents[1]["symptom_hosts"] = [pod(8), pod(10)]
    incidents[0]["k8s_node"] = K8S_NODE[pod(5)]
    decoys = {pod(4): "attempt 1: NET/IB completion errors only because its ring peer worker-5 vanished",
              pod(6): "attempt 1: NET/IB completion errors only because its ring peer worker-5 vanished",
              pod(8): "attempt 2: IB errors towards worker-9, whose cable failed",
              pod(10): "attempt 2 IB peer of worker-9; also a harmless Xid 13 mid attempt 6",
              pod(3): "Xid 43 from a profiler 50 min before incident 2; training continued; clock +4.3 s",
              pod(1): "NCCL WARN 'Got async event : GID table change' in attempt 6 (see note); harmless",
              pod(14): "idle spare: NFS blip and a link flap, never in a hostfile"}
    forbidden = [{"failure_mode": "network", "host": pod(5), "attempts": [1],
                  "reason": "peers' IB errors are symptoms of the lost node"},
                 {"failure_mode": "filesystem_io", "host": pod(14), "reason": "idle spare's NFS blip"},
                 {"failure_mode": "nccl_timeout", "attempts": [1, 5],
                  "reason": "the watchdog timeouts are symptoms; the cause is known"}]
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "cluster": CLUSTER, "provider": PROVIDER,
        "tokens_per_step": TOKENS_PER_STEP, "flops_per_token": FLOPS_PER_TOKEN,
        "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK_A100,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK_A100), 4),
        "first_start_ts": iso_z(atts[0].S), "last_end_ts": iso_z(atts[-1].E),
        "attempts": [{"attempt": a.k, "nodes": a.nodes, "start_ts": iso_z(a.S), "first_step_ts": iso_z(a.F),
                      "exit_ts": iso_z(a.E), "loaded_step": a.load,
                      "last_step": a.steps[-1][0] if a.steps else a.load,
                      "saves": [n for n, _, _ in a.saves], "end": a.end} for a in atts],
        "match_on_attempt": True,
        "incidents": incidents,
        "forbidden_incidents": forbidden,
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys,
        "hardware_modes": HARDWARE_MODES,
        "clock_skew_s": SKEW,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incidents
                                                                    if i["blame"] == "provider"), 4)},
        "notes": ("Times are UTC on the launcher's clock. host null matches any host (filesystem_io: the shared "
                  "NFS server; cuda_oom: a user config change hitting every pod). gpu_hours per incident = "
                  "hang + recompute + restart + startup of the next attempt. Ledger: see the docstring."),
    }
    write(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20220112)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    files = [p for p in (out / "bundle").rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    print(f"wrote {out / 'bundle'} ({len(files)} files, {size / 1e6:.1f} MB) and {out / 'truth.json'}; "
          f"total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
