"""Write the demo evidence bundle, data_samples/bundle/, byte-identical on every run.

    .venv/bin/python data_samples/build_bundle.py

One story in real log formats: a week of training on two providers' clusters. Four runs leave
their logs (rank-0 output as srun or torchrun prints it, per-rank step timings), the nodes leave
kernel logs, Slurm leaves its controller log, accounting and job-completion records. The
injected incidents are written to bundle/truth.json, computed from the same timeline that wrote
the logs, so tests can check what the analysis finds against what happened.

The standard library plus the simulator's shared writers (`clusterlab.simulator.stamps`, `textlog`):
`random` seeded with a fixed string, gzip with mtime=0, no clock.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import math
import os
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from clusterlab.simulator import textlog
from clusterlab.simulator.stamps import (
    after,
    ctld,
    dmesg_ctime,
    dmesg_iso,
    dmesg_raw,
    elapsed,
    glog,
    hostlist,
    iso_s,
    iso_z,
    journal_iso,
    megatron_dt,
    pylog,
    syslog_ts,
)
from clusterlab.simulator.textlog import ELASTIC, Log, Proc, sigabrt, torchrun_failure

BUNDLE = Path(__file__).resolve().parent / "bundle"
SEED = "clusterlab-demo-bundle-1"
UTC = dt.UTC
# Europe/Helsinki in late November is EET, UTC+2, with no DST change in the window: a fixed
# offset keeps the script free of tzdata.
EET = dt.timezone(dt.timedelta(hours=2), "EET")
COLLECTED_AT = dt.datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)  # when the bundle was gathered: every file's mtime

# ---------------------------------------------------------------------------------------------
# The timeline. Everything below is derived from these numbers.
# ---------------------------------------------------------------------------------------------

# llama8b-pretrain: Megatron-LM, 4 nodes x 8 H100 on acme-east, launched by sbatch + srun + torchrun.
LLAMA = "llama8b-pretrain"
LLAMA_PARAMS, LLAMA_LAYERS, LLAMA_HIDDEN, LLAMA_SEQ, LLAMA_GBS = 8030261248, 32, 4096, 4096, 256
LLAMA_TOKENS = LLAMA_GBS * LLAMA_SEQ
LLAMA_TP = 2  # tensor parallel; data parallel = 32 / 2 = 16
# NOTE: 1,048,576 tokens a step at 2.0 s on 32 H100s would be ~90% MFU, which no real run
# reaches; 4.1 s is ~44%, a believable steady state. All durations below follow from it.
LLAMA_STEP_S = 4.1
LLAMA_COMPUTE_S, LLAMA_DATA_S, LLAMA_COMM_MIN_S = 3.42, 0.03, 0.58
LLAMA_STARTUP_S = 90  # job start to the first step (srun, torchrun, init, NCCL, data)
LLAMA_LOAD_S = 24  # checkpoint load, inside the start-up of attempts 2 and 3
LLAMA_SAVE_EVERY, LLAMA_SAVE_S, LLAMA_LOG_EVERY = 100, 20.0, 10
LLAMA_CKPT_DIR = "/lustre/ckpt/llama8b"
LLAMA_JOBS = ("4101", "4102", "4103")
A1_START = dt.datetime(2026, 11, 24, 8, 0, 0, tzinfo=UTC)
A1_HOSTS = ("east-001", "east-002", "east-003", "east-004")
A1_LAST_GOOD = 270  # the Xid lands right after this step ends
XID_HOST, XID_LOCAL_RANK, XID_BUS = "east-003", 3, "5d"
NCCL_TIMEOUT_S = 600.0  # the hang: ProcessGroupNCCL's default 10 minute watchdog
A1_CANCEL_AFTER_S = 88  # the team's restart controller scancels once torchrun reports failure
A2_GAP_S = 12 * 60
A2_HOSTS = ("east-001", "east-002", "east-004", "east-005")  # east-003 is drained
A2_LAST_GOOD = 520
STRAGGLER_HOST, STRAGGLER_STEPS, STRAGGLER_FACTOR = "east-005", (331, 390), 1.25
IB_HOST, IB_HCA, IB_PCI = "east-002", "mlx5_2", "0000:40:00.0"
IB_RETRY_S = 31.0  # NCCL_IB_TIMEOUT=20 x 7 retries before the completion error surfaces
A3_GAP_S = 10 * 60
A3_HOSTS = ("east-001", "east-004", "east-005", "east-006")
A3_STALL_STEP, A3_STALL_S, LUSTRE_HOST = 600, 201.0, "east-004"
# Slurm gives attempt 3 (sbatch --time-min) only the minutes left before the provider's
# maintenance reservation on acme-east, so it ends on its time limit.
RESERVATION = "acme-maint-1124"

# mm7b-sft: torchtitan, 2 nodes x 8 H200 on bor-1 (Borealis), launched by torchrun on each node.
MM = "mm7b-sft"
MM_HOSTS = ("bor-001", "bor-002")
MM_FLOPS_PER_TOKEN = 4.6e10
MM_GBS, MM_SEQ = 64, 8192
MM_TOKENS = MM_GBS * MM_SEQ
MM_STEP_S, MM_COMPUTE_S, MM_DATA_S, MM_COMM_MIN_S = 3.8, 3.31, 0.04, 0.42
MM_STARTUP_S, MM_LOAD_S = 118, 31
MM_SAVE_EVERY, MM_SAVE_S, MM_LOG_EVERY, MM_TOTAL_STEPS = 100, 15.0, 10, 600
MM_CKPT_DIR = "/mnt/nfs/ckpt/mm7b-sft"
M1_START = dt.datetime(2026, 11, 25, 6, 0, 0, tzinfo=UTC)
M1_STALL_STEP, M1_STALL_S, NFS_HOST = 200, 252.0, "bor-002"
M1_OOM_STEP, OOM_RANK = 337, 5  # rank 5 is local rank 5 on bor-001
M2_GAP_S = 26 * 60  # the user shrinks max image tokens and relaunches
XID13_HOST, XID13_AT = "bor-004", dt.datetime(2026, 11, 25, 9, 14, 7, tzinfo=UTC)
AER_HOST = "bor-001"

# ds1b-ablation: DeepSpeed, 1 node west-03, preempted for the provider's burn-in job.
DS = "ds1b-ablation"
DS_JOB, DS_HOST, DS_START = "18842", "west-03", dt.datetime(2026, 11, 24, 10, 0, 0, tzinfo=UTC)
DS_STEP_S, DS_STARTUP_S, DS_SAVE_EVERY, DS_SAVE_S, DS_PRINT = 0.36, 52, 500, 8.0, 50
DS_PREEMPT_AFTER_STEP = 1912
BURNIN_JOB = "18850"

# hf-eval-sweep: HuggingFace Trainer, 1 node west-05, cancelled by a person.
HF = "hf-eval-sweep"
HF_JOB, HF_HOST, HF_START = "18871", "west-05", dt.datetime(2026, 11, 25, 13, 0, 0, tzinfo=UTC)
HF_STEP_S, HF_STARTUP_S, HF_LOG_EVERY, HF_TOTAL, HF_CANCEL_AFTER_STEP = 1.1, 61, 25, 3750, 1290

NCCL_VERSION, TORCH_VERSION = "2.21.5", "2.5.1"
H100_BUS = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")  # HGX H100 GPU PCI buses
H200_BUS = ("19", "3b", "4c", "5d", "9b", "bb", "cb", "db")


def rng(name: str) -> random.Random:
    """A generator of its own per concern, so that changing one file leaves the others alone."""
    return random.Random(f"{SEED}:{name}")


def node_ip(host: str) -> str:
    prefix, num = host.rsplit("-", 1)
    return {"east": "10.10.0.", "west": "10.11.0.", "bor": "10.30.0."}[prefix] + str(int(num))


# ---------------------------------------------------------------------------------------------
# The step simulator: one model of a synchronous data-parallel step, shared by all runs.
# ---------------------------------------------------------------------------------------------


@dataclass
class Step:
    step: int
    end: dt.datetime
    step_s: float  # as rank 0 measured it
    compute: list[float]  # per rank
    data: list[float]


@dataclass
class Save:
    step: int
    start: dt.datetime
    end: dt.datetime


@dataclass
class Attempt:
    run: str
    k: int
    hosts: tuple[str, ...]
    start: dt.datetime
    first_step: int
    train_start: dt.datetime
    steps: list[Step] = field(default_factory=list)
    saves: list[Save] = field(default_factory=list)
    end: dt.datetime | None = None  # set by the failure that ends it

    @property
    def last(self) -> Step:
        return self.steps[-1]

    def host_of(self, rank: int, per_node: int = 8) -> str:
        return self.hosts[rank // per_node]

    def last_save(self) -> int | None:
        return self.saves[-1].step if self.saves else None


@dataclass
class StepModel:
    step_s: float
    compute_s: float
    data_s: float
    comm_min_s: float
    save_every: int
    save_s: float
    ranks: int


def simulate(att: Attempt, model: StepModel, last_step: int, *, until: dt.datetime | None = None,
             stall: tuple[int, float] | None = None, slow: tuple[str, int, int, float] | None = None) -> None:
    """Fill `att.steps` and `att.saves`: every rank computes, then waits for the slowest.

    stall: (step, seconds) a save that takes that long. slow: (host, first, last, factor) whose
    ranks compute `factor` times slower on those steps. until: nothing ends after this time.
    """
    r = rng(f"steps:{att.run}:{att.k}")
    t = att.train_start
    for step in range(att.first_step, last_step + 1):
        jitter = 1 + r.gauss(0, 0.004)
        compute = [model.compute_s * jitter * (1 + r.gauss(0, 0.003)) for _ in range(model.ranks)]
        data = [model.data_s * (1 + abs(r.gauss(0, 0.15))) for _ in range(model.ranks)]
        if slow and slow[1] <= step <= slow[2]:
            for rank in range(model.ranks):
                if att.host_of(rank) == slow[0]:
                    compute[rank] *= slow[3] * (1 + r.gauss(0, 0.01))
        step_s = max(c + d for c, d in zip(compute, data, strict=True)) + model.comm_min_s * (1 + r.gauss(0, 0.02))
        end = after(t, step_s)
        if until and end > until:
            return
        att.steps.append(Step(step, end, step_s, compute, data))
        t = end
        if step % model.save_every == 0:
            dur = stall[1] if stall and stall[0] == step else model.save_s * (1 + r.gauss(0, 0.04))
            save_end = after(t, dur)
            if until and save_end > until:
                return
            att.saves.append(Save(step, t, save_end))
            t = save_end


def llama_loss(step: int) -> float:
    return 2.35 + 8.45 * math.exp(-step / 115) + 0.9 * math.exp(-step / 900)


def mm_loss(step: int) -> float:
    return 1.05 + 0.95 * math.exp(-step / 160)


# ---------------------------------------------------------------------------------------------
# The whole story: attempts and the times of every incident.
# ---------------------------------------------------------------------------------------------


@dataclass
class Story:
    llama: list[Attempt]
    mm: list[Attempt]
    ds: Attempt
    hf: Attempt
    t: dict[str, dt.datetime]  # named moments: "xid", "link_down", ...
    tl_min: int = 0  # attempt 3's time limit


def build_story() -> Story:
    t: dict[str, dt.datetime] = {}
    llama_model = StepModel(LLAMA_STEP_S, LLAMA_COMPUTE_S, LLAMA_DATA_S, LLAMA_COMM_MIN_S,
                            LLAMA_SAVE_EVERY, LLAMA_SAVE_S, 32)

    a1 = Attempt(LLAMA, 1, A1_HOSTS, A1_START, 1, after(A1_START, LLAMA_STARTUP_S))
    simulate(a1, llama_model, A1_LAST_GOOD)
    t["xid"] = after(a1.last.end, 0.412)
    t["a1_hang_start"] = after(a1.last.end, 0.050)  # step 271's gradient all-reduce is enqueued
    t["a1_watchdog"] = after(t["a1_hang_start"], NCCL_TIMEOUT_S + 0.018)
    a1.end = after(t["a1_watchdog"], A1_CANCEL_AFTER_S).replace(microsecond=0)  # scancel, sacct End

    a2_start = after(a1.end, A2_GAP_S)
    a2 = Attempt(LLAMA, 2, A2_HOSTS, a2_start, a1.last_save() + 1, after(a2_start, LLAMA_STARTUP_S))
    simulate(a2, llama_model, A2_LAST_GOOD, slow=(STRAGGLER_HOST, *STRAGGLER_STEPS, STRAGGLER_FACTOR))
    t["link_down"] = after(a2.last.end, 0.731)
    t["ib_warn"] = after(t["link_down"], IB_RETRY_S)
    a2.end = after(t["ib_warn"], 11.0).replace(microsecond=0)  # last srun task exits, batch exits 1

    a3_start = after(a2.end, A3_GAP_S)
    a3 = Attempt(LLAMA, 3, A3_HOSTS, a3_start, a2.last_save() + 1, after(a3_start, LLAMA_STARTUP_S))
    # the reservation starts on the first five minutes past ~290 steps of attempt 3
    want = after(a3_start, LLAMA_STARTUP_S + 290 * LLAMA_STEP_S + A3_STALL_S + 2 * LLAMA_SAVE_S)
    resv = want.replace(minute=(want.minute // 5) * 5, second=0, microsecond=0) + dt.timedelta(minutes=5)
    tl_min = int((resv - a3_start).total_seconds() // 60)
    a3.end = after(a3_start, tl_min * 60)
    t["reservation"] = resv
    simulate(a3, llama_model, 100000, until=a3.end, stall=(A3_STALL_STEP, A3_STALL_S))
    stall = next(s for s in a3.saves if s.step == A3_STALL_STEP)
    t["lustre_lost"], t["lustre_back"] = after(stall.start, 6.3), after(stall.end, -4.1)

    mm_model = StepModel(MM_STEP_S, MM_COMPUTE_S, MM_DATA_S, MM_COMM_MIN_S, MM_SAVE_EVERY, MM_SAVE_S, 16)
    m1 = Attempt(MM, 1, MM_HOSTS, M1_START, 1, after(M1_START, MM_STARTUP_S))
    simulate(m1, mm_model, M1_OOM_STEP - 1, stall=(M1_STALL_STEP, M1_STALL_S))
    stall = next(s for s in m1.saves if s.step == M1_STALL_STEP)
    t["nfs_lost"], t["nfs_back"] = after(stall.start, 7.9), after(stall.end, -2.2)
    t["oom"] = after(m1.last.end, 2.87)  # in the forward pass of step 337
    m1.end = after(t["oom"], 3.4).replace(microsecond=0)  # both torchrun agents have exited
    m2_start = after(m1.end, M2_GAP_S)
    m2 = Attempt(MM, 2, MM_HOSTS, m2_start, m1.last_save() + 1, after(m2_start, MM_STARTUP_S + MM_LOAD_S))
    simulate(m2, mm_model, MM_TOTAL_STEPS)
    m2.end = after(m2.saves[-1].end, 9.3).replace(microsecond=0)

    ds_model = StepModel(DS_STEP_S, 0.29, 0.01, 0.05, DS_SAVE_EVERY, DS_SAVE_S, 8)
    ds = Attempt(DS, 1, (DS_HOST,), DS_START, 1, after(DS_START, DS_STARTUP_S))
    simulate(ds, ds_model, DS_PREEMPT_AFTER_STEP)
    t["preempt"] = after(ds.last.end, 0.2).replace(microsecond=0) + dt.timedelta(seconds=1)
    ds.end = after(t["preempt"], 30)  # PreemptMode=CANCEL, GraceTime=30

    hf_model = StepModel(HF_STEP_S, 0.93, 0.06, 0.09, 500, 52.0, 8)  # the "save" pause is eval + save
    hf = Attempt(HF, 1, (HF_HOST,), HF_START, 1, after(HF_START, HF_STARTUP_S))
    simulate(hf, hf_model, HF_CANCEL_AFTER_STEP)
    t["hf_cancel"] = after(hf.last.end, 0.6).replace(microsecond=0) + dt.timedelta(seconds=1)
    hf.end = t["hf_cancel"]
    return Story([a1, a2, a3], [m1, m2], ds, hf, t, tl_min)


# ---------------------------------------------------------------------------------------------
# Writing files.
# ---------------------------------------------------------------------------------------------


class Files:
    """The bundle in memory: relative path -> bytes; written at the end, in sorted order."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def text(self, rel: str, text: str | list[str], *, gz: bool = False) -> None:
        if isinstance(text, list):
            text = "\n".join(text) + "\n"
        self.raw(rel, text.encode("utf-8"), gz=gz)

    def raw(self, rel: str, data: bytes, *, gz: bool = False) -> None:
        self.data[rel] = gzip.compress(data, compresslevel=9, mtime=0) if gz else data

    def write(self, root: Path) -> None:
        if root.exists():
            shutil.rmtree(root)
        for rel in sorted(self.data):
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(self.data[rel])
            # NOTE: formats without a year (syslog, glog, c10d) take it from the file's mtime at ingest
            os.utime(p, (COLLECTED_AT.timestamp(), COLLECTED_AT.timestamp()))


def rank_steps(files: Files, att: Attempt, per_node: int, tokens: int, loss, *, epoch_ts: bool) -> None:
    """steps/rank-<R>.jsonl.gz: clusterlab.instrument's per-rank record, one object per step."""
    r = rng(f"rank-steps:{att.run}:{att.k}")
    nranks = len(att.hosts) * per_node
    lines: list[list[str]] = [[] for _ in range(nranks)]
    for s in att.steps:
        for rank in range(nranks):
            step_s = s.step_s + r.gauss(0, 0.0015)
            end = after(s.end, r.gauss(0, 0.002))
            comm = step_s - s.compute[rank] - s.data[rank]
            rec = {
                "ts": round(end.timestamp(), 3) if epoch_ts else iso_z(end),
                "rank": rank, "host": att.host_of(rank, per_node), "step": s.step, "step_s": round(step_s, 3),
                "compute_s": round(s.compute[rank], 3), "comm_s": round(comm, 3), "data_s": round(s.data[rank], 3),
                "tokens": tokens, "loss": round(loss(s.step) + r.gauss(0, 0.02), 4),
            }
            lines[rank].append(json.dumps(rec, separators=(",", ":")))
    base = f"runs/{att.run}/attempt-{att.k}/steps"
    for rank in range(nranks):
        files.text(f"{base}/rank-{rank}.jsonl.gz", lines[rank], gz=True)


# ---------------------------------------------------------------------------------------------
# NCCL debug output (NCCL_DEBUG=INFO), one block per rank and communicator.
# ---------------------------------------------------------------------------------------------


def procs_for(att: Attempt, r: random.Random, buses: tuple[str, ...]) -> tuple[list[Proc], dict[str, int]]:
    procs, agents = [], {}
    for n, host in enumerate(att.hosts):
        agent = r.randint(30000, 90000)
        agents[host] = agent
        for local in range(8):
            pid = agent + 57 + local
            procs.append(Proc(n * 8 + local, host, local, pid, pid + 623 + 9 * local, pid + 651 + 9 * local,
                              buses[local]))
    return procs, agents


def nccl_init(log: Log, procs: list[Proc], t0: dt.datetime, r: random.Random, *, nch: int = 16,
              group: list[int] | None = None) -> None:
    """The shared NCCL init block, with this bundle's addresses and NCCL version."""
    textlog.nccl_init(log, procs, t0, r, ip_of=node_ip, version=NCCL_VERSION, nch=nch, group=group)


def pg_abort(log: Log, t: dt.datetime, rank: int, pg: str, pg_rank: int, seq: int, reason: str, *,
             timeout: bool, tz: dt.tzinfo = UTC) -> None:
    """The shared watchdog abort block, its C++ frames seeded from this bundle's seed."""
    textlog.pg_abort(log, t, rank, pg, pg_rank, seq, reason, timeout=timeout, seed=SEED, tz=tz)



# ---------------------------------------------------------------------------------------------
# PyTorch / torchrun failure output.
# ---------------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------------
# llama8b-pretrain: Megatron-LM's rank-0 log as srun writes it (all tasks merged).
# ---------------------------------------------------------------------------------------------


def megatron_flops_per_gpu(step_s: float) -> float:
    per_token = 6 * LLAMA_PARAMS + 12 * LLAMA_LAYERS * LLAMA_HIDDEN * LLAMA_SEQ
    return per_token * LLAMA_TOKENS / (step_s * 1e12 * 32)


def megatron_startup(log: Log, att: Attempt, job: str, procs: list[Proc], agents: dict[str, int],
                     r: random.Random) -> None:
    s = att.start
    log.add(after(s, 0.4), f"+ echo 'job {job} on {hostlist(att.hosts)} starting at "
                           f"{s:%a %b %d %H:%M:%S} UTC {s:%Y}'")
    log.add(after(s, 0.41), f"job {job} on {hostlist(att.hosts)} starting at {s:%a %b %d %H:%M:%S} UTC {s:%Y}")
    for k, v in (("NCCL_DEBUG", "INFO"), ("NCCL_IB_TIMEOUT", "20"), ("CUDA_DEVICE_MAX_CONNECTIONS", "1"),
                 ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")):
        log.add(after(s, 0.42), f"+ export {k}={v}")
    log.add(after(s, 0.5), f"+ srun --ntasks-per-node=1 torchrun --nnodes 4 --nproc-per-node 8 --rdzv-backend c10d "
                           f"--rdzv-endpoint {att.hosts[0]}:29500 pretrain_gpt.py --tensor-model-parallel-size 2 "
                           f"--num-layers 32 --hidden-size 4096 --seq-length 4096 --global-batch-size 256 "
                           f"--save {LLAMA_CKPT_DIR} --load {LLAMA_CKPT_DIR} --save-interval 100 --log-interval 10")
    for n, host in enumerate(att.hosts):
        tt = after(s, 5.8 + 0.11 * n)
        banner = f"{glog(tt, 'W')} {agents[host]} torch/distributed/run.py:793] "
        log.add(tt, "\n".join([banner, banner + "*" * 41, banner + "Setting OMP_NUM_THREADS environment variable "
                               "for each process to be 1 in default, to avoid your system being overloaded, please "
                               "further tune the variable for optimal performance in your application as needed. ",
                               banner + "*" * 41]))
    warn = ("/usr/local/lib/python3.10/dist-packages/transformer_engine/pytorch/attention.py:1263: UserWarning: "
            "flash-attn v3 may provide important feature support or performance improvement. Please install "
            "flash-attn v3 by ...")
    for p in procs[::9]:
        log.add(after(s, 11 + 0.01 * p.rank), warn)
        log.add(after(s, 11.001 + 0.01 * p.rank), "  warnings.warn(")
    args = {"num_layers": 32, "hidden_size": 4096, "ffn_hidden_size": 14336, "num_attention_heads": 32,
            "num_query_groups": 8, "seq_length": 4096, "global_batch_size": 256, "micro_batch_size": 1,
            "tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 1, "world_size": 32,
            "train_iters": 500000, "lr": 0.0003, "lr_warmup_iters": 2000, "save": LLAMA_CKPT_DIR,
            "load": LLAMA_CKPT_DIR, "save_interval": 100, "log_interval": 10, "bf16": True,
            "use_distributed_optimizer": True, "ckpt_format": "torch_dist", "tokenizer_type": "HuggingFaceTokenizer",
            "distributed_timeout_minutes": 10, "seed": 1234}
    block = ["using world size: 32, data-parallel size: 16, context-parallel size: 1, tensor-model-parallel size: 2, "
             "pipeline-model-parallel size: 1", "using torch.bfloat16 for parameters ...",
             "------------------------ arguments ------------------------"]
    block += sorted((f"  {k} {'.' * (48 - len(k))} {v}" for k, v in args.items()), key=str.lower)
    block += ["-------------------- end of arguments ---------------------",
              "> building HuggingFaceTokenizer tokenizer ...",
              " > padded vocab (size: 128256) with 0 dummy tokens (new size: 128256)",
              "> initializing torch distributed ..."]
    log.add(after(s, 14.2), "\n".join(block))
    nccl_init(log, procs, after(s, 19.5), r)
    tp = rng(f"tp:{att.k}")
    for g in range(16):
        nccl_init(log, procs, after(s, 23.0 + 0.05 * g), tp, nch=8, group=[2 * g, 2 * g + 1])
    log.add(after(s, 27.2), "> initialized tensor model parallel with size 2\n"
                            "> initialized pipeline model parallel with size 1\n"
                            "> setting random seeds to 1234 ...\n"
                            "> compiling dataset index builder ...\n"
                            "make: Entering directory '/opt/megatron-lm/megatron/core/datasets'\n"
                            "make: Nothing to be done for 'default'.\n"
                            "make: Leaving directory '/opt/megatron-lm/megatron/core/datasets'\n"
                            ">>> done with dataset index builder. Compilation time: 0.061 seconds")
    t_init = after(s, 33.4)
    log.add(t_init, f"time to initialize megatron (seconds): {(t_init - s).total_seconds() - 1.7:.3f}\n"
                    f"[after megatron is initialized] datetime: {megatron_dt(t_init)} \nbuilding GPT model ...")
    log.add(after(s, 39.1), " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 4015130624\n"
                            "> learning rate decay style: cosine")
    if att.k == 1:
        log.add(after(s, 39.3), f"WARNING: could not find the metadata file {LLAMA_CKPT_DIR}/latest_checkpointed_"
                                "iteration.txt \n    will not load any checkpoints and will start from random")
        t_built = after(s, 39.5)
    else:
        load = att.first_step - 1
        t0 = after(s, 39.4)
        log.add(t0, f" loading distributed checkpoint from {LLAMA_CKPT_DIR} at iteration {load}")
        t1 = after(t0, LLAMA_LOAD_S + r.uniform(-1, 1))
        ms = (t1 - t0).total_seconds() * 1000
        log.add(t1, f"  successfully loaded checkpoint from {LLAMA_CKPT_DIR} [ t 0, p 0 ] at iteration {load}\n"
                    f"(min, max) time across ranks (ms):\n    {'load-checkpoint '.ljust(48, '.')}: "
                    f"({ms - r.uniform(1, 4):.2f}, {ms:.2f})")
        t_built = after(t1, 0.2)
    log.add(t_built, f"[after model, optimizer, and learning rate scheduler are built] datetime: "
                     f"{megatron_dt(t_built)} \n> building train, validation, and test datasets ...")
    t_data = after(att.train_start, -3.1)
    log.add(t_data, f"[after dataloaders are built] datetime: {megatron_dt(t_data)} \ndone with setup ...\n"
                    f"(min, max) time across ranks (ms):\n    {'model-and-optimizer-setup '.ljust(48, '.')}: "
                    f"({5891.02 + r.uniform(0, 90):.2f}, {5991.77 + r.uniform(0, 90):.2f})\n    "
                    f"{'train/valid/test-data-iterators-setup '.ljust(48, '.')}: "
                    f"({(t_data - t_built).total_seconds() * 1000 - r.uniform(20, 60):.2f}, "
                    f"{(t_data - t_built).total_seconds() * 1000:.2f})\ntraining ...")
    t_train = after(att.train_start, -0.4)
    log.add(t_train, f"[before the start of training step] datetime: {megatron_dt(t_train)} ")


def megatron_training(log: Log, att: Attempt, r: random.Random) -> None:
    """Iteration lines every 10 steps (printed by the last rank) and the checkpoint saves."""
    window: list[float] = []
    saves = {s.step: s for s in att.saves}
    for s in att.steps:
        window.append(s.step_s)
        if s.step % LLAMA_LOG_EVERY == 0:
            avg = sum(window) / len(window)
            window = []
            lr = 3e-4 * min(1.0, s.step / 2000)
            gn = 0.85 + 11.5 * math.exp(-s.step / 60) + abs(r.gauss(0, 0.05))
            log.add(s.end, f" [{megatron_dt(s.end)}] iteration {s.step:8d}/  500000 | consumed samples: "
                           f"{s.step * LLAMA_GBS:12d} | elapsed time per iteration (ms): {avg * 1000:.1f} | "
                           f"throughput per GPU (TFLOP/s/GPU): {megatron_flops_per_gpu(avg):.1f} | learning rate: "
                           f"{lr:.6E} | global batch size: {LLAMA_GBS:5d} | lm loss: "
                           f"{llama_loss(s.step) + r.gauss(0, 0.01):.6E} | loss scale: 1.0 | grad norm: {gn:.3f} | "
                           f"number of skipped iterations:   0 | number of nan iterations:   0 |")
            if s.step == att.first_step + 9:
                log.add(after(s.end, 0.01), "[Rank 0] (after 10 iterations) memory (MB) | allocated: 31456.2 | "
                                            "max allocated: 58321.7 | reserved: 66118.0 | max reserved: 66118.0")
        if s.step in saves:
            sv = saves[s.step]
            ms = (sv.end - sv.start).total_seconds() * 1000
            log.add(after(sv.start, 0.002), f"saving checkpoint at iteration {s.step:7d} to {LLAMA_CKPT_DIR} in "
                                            "torch_dist format")
            log.add(after(sv.end, -0.01), f"  successfully saved checkpoint from iteration {s.step:7d} to "
                                          f"{LLAMA_CKPT_DIR}\n(min, max) time across ranks (ms):\n    "
                                          f"{'save-checkpoint '.ljust(48, '.')}: ({ms - r.uniform(2, 9):.2f}, "
                                          f"{ms:.2f})")


def dp_group(rank: int) -> str:
    """Megatron's data-parallel groups, one per tensor-parallel rank: PG 3 holds the even ranks, PG 4 the odd."""
    g = 3 + rank % LLAMA_TP
    return f"PG ID {g} PG GUID {g}"


def llama_a1_failure(log: Log, story: Story, att: Attempt, procs: list[Proc], agents: dict[str, int],
                     r: random.Random) -> None:
    """Rank 19's GPU is gone; the other 31 ranks wait ten minutes for its all-reduce, then abort."""
    seq = 24 * A1_LAST_GOOD + 13
    numel = 40108032
    dead = next(p for p in procs if p.host == XID_HOST and p.local == XID_LOCAL_RANK)
    died: dict[int, dt.datetime] = {}
    for p in procs:
        if p is dead:
            continue
        t = after(story.t["a1_watchdog"], r.uniform(0.0, 0.12))
        ran = int((t - story.t["a1_hang_start"]).total_seconds() * 1000)
        work = (f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={numel}, NumelOut={numel}, "
                f"Timeout(ms)={int(NCCL_TIMEOUT_S * 1000)})")
        reason = f"Watchdog caught collective operation timeout: {work} ran for {ran} milliseconds before timing out."
        pg_abort(log, t, p.rank, dp_group(p.rank), p.rank // LLAMA_TP, seq, reason, timeout=True)
        died[p.rank] = after(t, 0.35)
    for n, host in enumerate(att.hosts):
        mine = [p for p in procs if p.host == host and p is not dead]
        t_fail = after(max(died[p.rank] for p in mine), 0.9 + 0.07 * n)
        fails = [(p.rank, p.local, p.pid, -6, died[p.rank], sigabrt(p.pid)) for p in mine]
        if host == XID_HOST:
            # torchrun cannot stop the process on the lost GPU: SIGTERM, 30 s, then SIGKILL.
            tt = after(t_fail, -0.5)
            log.add(tt, f"{glog(tt, 'W')} {agents[host]} torch/distributed/elastic/multiprocessing/api.py:897] "
                        f"Sending process {dead.pid} closing signal SIGTERM")
            t_fail = after(t_fail, 30.0)
            log.add(after(t_fail, -0.2), f"{glog(after(t_fail, -0.2), 'W')} {agents[host]} torch/distributed/"
                                         f"elastic/multiprocessing/api.py:916] Unable to shutdown process "
                                         f"{dead.pid} via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL")
        log.add(t_fail, torchrun_failure(t_fail, host, agents[host], "pretrain_gpt.py", fails))
        log.add(after(t_fail, 0.4), f"srun: error: {host}: task {n}: Exited with exit code 1")
    cancel = att.end
    log.add(cancel, f"slurmstepd: error: *** JOB {LLAMA_JOBS[0]} ON {att.hosts[0]} CANCELLED AT {iso_s(cancel)} ***")
    log.add(after(cancel, 0.01), f"slurmstepd: error: *** STEP {LLAMA_JOBS[0]}.0 ON {att.hosts[0]} CANCELLED AT "
                                 f"{iso_s(cancel)} ***")
    log.add(after(cancel, 0.02), "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    log.add(after(cancel, 32.1), "srun: error: Timed out waiting for job step to complete")


def llama_a2_failure(log: Log, story: Story, att: Attempt, procs: list[Proc], agents: dict[str, int],
                     r: random.Random) -> None:
    """east-002's mlx5_2 port goes down: the ranks on rail 2 get IB completion errors naming their peer."""
    seq = 24 * A2_LAST_GOOD + 7
    rail = int(IB_HCA.rsplit("_", 1)[1])
    died: dict[int, dt.datetime] = {}
    ring_peers = {h: [att.hosts[(i - 1) % 4], att.hosts[(i + 1) % 4]] for i, h in enumerate(att.hosts)}

    def ib_warn(p: Proc, t: dt.datetime, peer_host: str, status: int, vendor: int) -> tuple[dt.datetime, str]:
        for _ in range(2 if status == 12 else 1):
            port = r.randint(33000, 60999)
            t = after(t, r.uniform(0.0005, 0.002))
            err = (f"NET/IB : Got completion from peer {node_ip(peer_host)}<{port}> with status={status} "
                   f"opcode={r.choice((0, 1, 128))} len=0 vendor err {vendor} ({r.choice(('Send', 'Recv'))})")
            log.add(t, f"{p.prefix(p.proxy_tid)} transport/net_ib.cc:2160 NCCL WARN {err}")
            log.add(after(t, 0.0001), f"{p.prefix(p.proxy_tid)} NCCL INFO transport/net.cc:1295 -> 6\n"
                                      f"{p.prefix(p.proxy_tid)} NCCL INFO proxy.cc:698 -> 6\n"
                                      f"{p.prefix(p.proxy_tid)} NCCL INFO proxy.cc:878 -> 6 [Progress Thread]")
        return t, err

    def remote_error(p: Proc, t: dt.datetime, err: str) -> None:
        reason = (f"NCCL error: remote process exited or there was a network error, NCCL version {NCCL_VERSION}\n"
                  "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                  f"prematurely.\nLast error:\n{err}")
        pg_abort(log, after(t, 0.41), p.rank, dp_group(p.rank), p.rank // LLAMA_TP, seq, reason, timeout=False)
        died[p.rank] = after(t, 0.9)

    # rail 2 of east-002's ring neighbours, and east-002's own rail-2 rank
    for p in procs:
        if p.local != rail:
            continue
        if p.host == IB_HOST:
            t, err = after(story.t["ib_warn"], 0.04), ""  # its own QPs time out a moment later
            for peer in ring_peers[p.host]:
                t, err = ib_warn(p, after(t, 0.01), peer, 12, 129)
            remote_error(p, t, err)
        elif IB_HOST in ring_peers[p.host]:
            t, err = ib_warn(p, after(story.t["ib_warn"], r.uniform(0.0, 0.03)), IB_HOST, 12, 129)
            remote_error(p, t, err)
    # torchrun on those nodes stops its other workers; the rest of the ring sees its peers vanish
    t_agents = after(max(died.values()), 1.2)
    for n, host in enumerate(att.hosts):
        mine = [p for p in procs if p.host == host]
        failed = [p for p in mine if p.rank in died]
        if not failed:
            continue
        for p in mine:
            if p.rank not in died:
                tt = after(t_agents, 0.001 * p.local)
                log.add(tt, f"{glog(tt, 'W')} {agents[host]} torch/distributed/elastic/multiprocessing/api.py:897] "
                            f"Sending process {p.pid} closing signal SIGTERM")
        tf = after(t_agents, 2.1 + 0.1 * n)
        log.add(tf, torchrun_failure(tf, host, agents[host], "pretrain_gpt.py",
                                     [(p.rank, p.local, p.pid, -6, died[p.rank], sigabrt(p.pid)) for p in failed]))
        log.add(after(tf, 0.3), f"srun: error: {host}: task {n}: Exited with exit code 1")
    lone = [h for h in att.hosts if not any(p.rank in died and p.host == h for p in procs)]
    for host in lone:
        n = att.hosts.index(host)
        mine = [p for p in procs if p.host == host]
        for p in mine:
            t, err = ib_warn(p, after(t_agents, 2.6 + r.uniform(0, 0.2)), ring_peers[host][0], 5, 249)
            remote_error(p, t, err)
        tf = after(max(died[p.rank] for p in mine), 1.4)
        log.add(tf, torchrun_failure(tf, host, agents[host], "pretrain_gpt.py",
                                     [(p.rank, p.local, p.pid, -6, died[p.rank], sigabrt(p.pid)) for p in mine]))
        log.add(after(tf, 0.3), f"srun: error: {host}: task {n}: Exited with exit code 1")
    log.add(after(att.end, -0.5), f"+ echo 'job {LLAMA_JOBS[1]} finished with exit code 1'\n"
                                  f"job {LLAMA_JOBS[1]} finished with exit code 1")


def llama_a3_end(log: Log, att: Attempt, agents: dict[str, int], procs: list[Proc]) -> None:
    """Slurm's time limit: the job and its step are cancelled, torchrun is told to shut down."""
    t = att.end
    job = LLAMA_JOBS[2]
    log.add(t, f"slurmstepd: error: *** JOB {job} ON {att.hosts[0]} CANCELLED AT {iso_s(t)} DUE TO TIME LIMIT ***")
    log.add(after(t, 0.004), f"slurmstepd: error: *** STEP {job}.0 ON {att.hosts[0]} CANCELLED AT {iso_s(t)} DUE "
                             "TO TIME LIMIT ***")
    log.add(after(t, 0.01), "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    for n, host in enumerate(att.hosts):
        tt = after(t, 0.05 + 0.01 * n)
        lines = [f"{glog(tt, 'W')} {agents[host]} torch/distributed/elastic/agent/server/api.py:704] Received "
                 "Signals.SIGTERM death signal, shutting down workers"]
        lines += [f"{glog(tt, 'W')} {agents[host]} torch/distributed/elastic/multiprocessing/api.py:897] Sending "
                  f"process {p.pid} closing signal SIGTERM" for p in procs if p.host == host]
        lines += ["Traceback (most recent call last):", '  File "/usr/local/bin/torchrun", line 8, in <module>',
                  "    sys.exit(main())", "  [...]",
                  f'  File "{ELASTIC}/elastic/multiprocessing/api.py", line 84, in _terminate_process_handler',
                  "    raise SignalException(f\"Process {os.getpid()} got signal: {sigval}\", sigval=sigval)",
                  f"torch.distributed.elastic.multiprocessing.api.SignalException: Process {agents[host]} got "
                  "signal: 15"]
        log.add(tt, "\n".join(lines))
        log.add(after(tt, 2.2), f"srun: error: {host}: task {n}: Exited with exit code 1")


def write_llama(files: Files, story: Story) -> None:
    for att in story.llama:
        r = rng(f"llama-log:{att.k}")
        procs, agents = procs_for(att, r, H100_BUS)
        job = LLAMA_JOBS[att.k - 1]
        log = Log()
        megatron_startup(log, att, job, procs, agents, r)
        megatron_training(log, att, r)
        if att.k == 1:
            llama_a1_failure(log, story, att, procs, agents, r)
        elif att.k == 2:
            llama_a2_failure(log, story, att, procs, agents, r)
        else:
            llama_a3_end(log, att, agents, procs)
        data = log.render().encode()
        base = f"runs/{LLAMA}/attempt-{att.k}"
        if att.k == 1:
            # NOTE: junk bytes, as when a node's tee dies mid-write and the file system pads with NULs
            at = data.index(b"\n", len(data) // 3) + 1
            data = data[:at] + b"\x00" * 37 + b"\xff\xfe\x1b[?25l\x9c\x00\x00\n" + data[at:]
        files.raw(f"{base}/train.log.gz" if att.k == 3 else f"{base}/train.log", data, gz=att.k == 3)
        rank_steps(files, att, 8, LLAMA_TOKENS // 32, llama_loss, epoch_ts=False)
    files.text(f"runs/{LLAMA}/run.toml", [
        "# Facts about the run that its logs do not state reliably.",
        'cluster = "acme-east"',
        "gpus = 32",
        f"tokens_per_step = {LLAMA_TOKENS}  # global batch {LLAMA_GBS} x seq_len {LLAMA_SEQ}",
        f"params = {LLAMA_PARAMS}",
        f"layers = {LLAMA_LAYERS}",
        f"hidden = {LLAMA_HIDDEN}",
        f"seq_len = {LLAMA_SEQ}",
        f'checkpoint_dir = "{LLAMA_CKPT_DIR}"',
        'launcher = "slurm"',
        'launch_command = "sbatch --job-name=llama8b-pretrain --nodes=4 --ntasks-per-node=1 --gpus-per-node=8 '
        '--exclusive --time=04:00:00 --time-min=00:10:00 --partition=gpu --account=llm train_llama8b.sbatch"',
    ])


# ---------------------------------------------------------------------------------------------
# mm7b-sft: torchtitan under torchrun on bor-001 and bor-002 (local time: Europe/Helsinki).
# ---------------------------------------------------------------------------------------------

ANSI = {"red": "\x1b[31m", "green": "\x1b[32m", "orange": "\x1b[38;2;255;165;0m", "yellow": "\x1b[33m",
        "blue": "\x1b[34m", "cyan": "\x1b[36m", "magenta": "\x1b[35m", "reset": "\x1b[39m"}


def titan(log: Log, t: dt.datetime, msg: str, level: str = "INFO") -> None:
    log.add(t, f"[rank0]:[titan] {pylog(t.astimezone(EET))} - root - {level} - {msg}")


def titan_step_line(s: Step, color: bool, r: random.Random) -> str:
    c = ANSI if color else dict.fromkeys(ANSI, "")
    tps = MM_TOKENS / 16 / s.step_s
    tflops = MM_FLOPS_PER_TOKEN * tps / 1e12
    mem = 98.42 + r.uniform(0, 0.6)
    return (f"{c['red']}step: {s.step:2}  {c['green']}loss: {mm_loss(s.step) + r.gauss(0, 0.01):8.5f}  "
            f"{c['orange']}grad_norm: {0.42 + 2.1 * math.exp(-s.step / 90) + abs(r.gauss(0, 0.03)):7.4f}  "
            f"{c['yellow']}memory: {mem:5.2f}GiB({mem / 139.81 * 100:.2f}%)  {c['blue']}tps: {round(tps):,}  "
            f"{c['cyan']}tflops: {tflops:,.2f}  {c['magenta']}mfu: {tflops / 989 * 100:.2f}%{c['reset']}")


def titan_run(log: Log, att: Attempt, r: random.Random, *, color: bool) -> None:
    s = att.start
    titan(log, after(s, 21.3), "Starting job: mm7b multimodal SFT (vision-language, stage 2)")
    titan(log, after(s, 21.9), "Building 1-D device mesh with ['dp_shard'], [16]")
    titan(log, after(s, 22.0), "[GC] Initial GC collection. 0.00 seconds.")
    titan(log, after(s, 24.6), "Loading tokenizer from tokenizer.model")
    titan(log, after(s, 25.1), "Preparing mm_sft dataset from /mnt/nfs/data/mm-sft-v3")
    titan(log, after(s, 58.7), "CUDA capacity: NVIDIA H200 with 139.81GiB memory")
    c = ANSI if color else dict.fromkeys(ANSI, "")
    titan(log, after(s, 61.2), f"{c['blue']}Model mm7b 7B {c['red']}size: 7,615,616,512 total parameters{c['reset']}")
    titan(log, after(s, 61.9), "Applied selective activation checkpointing to the model")
    titan(log, after(s, 62.4), "Applied FSDP to the model")
    titan(log, after(s, 62.5), "Peak FLOPS used for computing MFU: 9.890e+14")
    titan(log, after(s, 63.8), "CUDA memory usage for model: 3.56GiB(2.55%)")
    titan(log, after(s, 64.0), f"Checkpointing active. Checkpoints will be loaded from and saved to {MM_CKPT_DIR}")
    if att.first_step > 1:
        load_t = after(att.train_start, -MM_LOAD_S - 4.0)
        titan(log, load_t, f"Loading the checkpoint from {MM_CKPT_DIR}/step-{att.first_step - 1}.")
        titan(log, after(load_t, MM_LOAD_S - 0.1), "[GC] GC collection for checkpoint loading. 0.01 seconds.")
        titan(log, after(load_t, MM_LOAD_S), f"Finished loading the checkpoint in {MM_LOAD_S - 0.08:.2f} seconds.")
    titan(log, after(att.train_start, -2.0), f"Training starts at step {att.first_step}, with local batch size 4, "
                                             f"global batch size {MM_GBS}, sequence length {MM_SEQ}, total steps "
                                             f"{MM_TOTAL_STEPS} (warmup 60)")
    saves = {sv.step: sv for sv in att.saves}
    for st in att.steps:
        if st.step == att.first_step or st.step % MM_LOG_EVERY == 0:  # metrics are logged before the save
            titan(log, after(st.end, 0.0004), titan_step_line(st, color, r))
        if st.step == att.first_step:
            titan(log, after(st.end, 0.05), "Synchronizing and adjusting timeout for all ProcessGroups to 0:01:40")
        if st.step in saves:
            sv = saves[st.step]
            titan(log, after(sv.start, 0.002), "Saving the checkpoint (or staging if async is enabled).")
            titan(log, after(sv.start, 0.03), "[GC] GC collection invoked by checkpointer. 0.02 seconds.")
            titan(log, sv.end, "Finished saving the checkpoint (or staging if async is enabled)in "
                               f"{(sv.end - sv.start).total_seconds():.2f} seconds.")
        if st.step % 50 == 0:
            titan(log, after(st.end, 0.2), "[GC] Peforming periodical GC collection. 0.05 seconds.")


def titan_agent_banner(log: Log, t: dt.datetime, agent: int) -> None:
    lt = t.astimezone(EET)
    b = f"{glog(lt, 'W')} {agent} torch/distributed/run.py:793] "
    log.add(t, "\n".join([b, b + "*" * 41, b + "Setting OMP_NUM_THREADS environment variable for each process to be "
                          "1 in default, to avoid your system being overloaded, please further tune the variable for "
                          "optimal performance in your application as needed. ", b + "*" * 41]))


OOM_MSG = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 11.25 GiB. GPU 5 has a total capacity of "
           "139.81 GiB of which 6.31 GiB is free. Including non-PyTorch memory, this process has 133.48 GiB memory in "
           "use. Of the allocated memory 118.02 GiB is allocated by PyTorch, and 12.87 GiB is reserved by PyTorch but "
           "unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_"
           "segments:True to avoid fragmentation.  See documentation for Memory Management  "
           "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")


def oom_traceback() -> str:
    py = "/usr/local/lib/python3.11/dist-packages"
    lines = ["Traceback (most recent call last):",
             f'  File "{py}/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
             "    return f(*args, **kwargs)",
             '  File "/opt/torchtitan/torchtitan/train.py", line 601, in train',
             "    self.train_step(data_iterator)",
             '  File "/opt/torchtitan/torchtitan/train.py", line 512, in train_step',
             "    loss = self.forward_backward_step(input_dict, labels)",
             '  File "/opt/torchtitan/torchtitan/train.py", line 468, in forward_backward_step',
             "    pred = model_parts[0](inputs, encoder_input=pixel_values)",
             '  File "/opt/torchtitan/torchtitan/experiments/multimodal/model.py", line 214, in forward',
             "    h = self.vision_proj(self.vision_encoder(encoder_input))",
             OOM_MSG]
    return "\n  ".join(lines)


def write_mm(files: Files, story: Story) -> None:
    m1, m2 = story.mm
    for att in story.mm:
        r = rng(f"mm-log:{att.k}")
        procs, agents = procs_for(att, r, H200_BUS)
        for host in MM_HOSTS:
            log = Log()
            titan_agent_banner(log, after(att.start, 0.8 + 0.3 * MM_HOSTS.index(host)), agents[host])
            lt = after(att.start, 4.2)
            log.add(lt, f"{glog(lt.astimezone(EET), 'I')} {agents[host]} torch/distributed/elastic/agent/server/"
                        "api.py:525] [default] starting workers for entrypoint: python3")
            if host == MM_HOSTS[0]:
                titan_run(log, att, r, color=att.k == 1)
                nccl = Log()
                nccl_init(nccl, procs, after(att.start, 52.0), rng(f"mm-nccl:{att.k}"), nch=16)
                for t, _, text in nccl.items:
                    if text.startswith(f"{host}:{procs[0].pid}:"):  # --local-ranks-filter 0
                        log.add(t, "[rank0]:" + text)
            if att.k == 1:
                mm_failure(log, story, att, host, procs, agents)
            else:
                mm_success(log, att, host, agents)
            files.text(f"runs/{MM}/attempt-{att.k}/{host}.log", log.render())
        rank_steps(files, att, 8, MM_TOKENS // 16, mm_loss, epoch_ts=True)
    assert m2.first_step == m1.last_save() + 1
    files.text(f"runs/{MM}/run.toml", [
        "# Facts about the run that its logs do not state reliably.",
        'cluster = "bor-1"',
        "gpus = 16",
        f"tokens_per_step = {MM_TOKENS}  # global batch {MM_GBS} x seq_len {MM_SEQ}",
        f"flops_per_token = {MM_FLOPS_PER_TOKEN:.3e}  # vision encoder + LM, from torch.utils.flop_counter",
        f'checkpoint_dir = "{MM_CKPT_DIR}"',
        'launcher = "torchrun"',
        'launch_command = "torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint bor-001:29500 '
        '--local-ranks-filter 0 --role rank --tee 3 -m torchtitan.train --job.config_file mm7b_sft.toml"',
    ])


def mm_failure(log: Log, story: Story, att: Attempt, host: str, procs: list[Proc], agents: dict[str, int]) -> None:
    """Rank 5 runs out of GPU memory on a long multimodal sample; both agents fail."""
    oom_t = story.t["oom"]
    mine = [p for p in procs if p.host == host]
    if host == MM_HOSTS[0]:
        victim = next(p for p in mine if p.rank == OOM_RANK)
        for p in mine:
            if p is not victim:
                tt = after(oom_t, 0.4 + 0.001 * p.local)
                log.add(tt, f"{glog(tt.astimezone(EET), 'W')} {agents[host]} torch/distributed/elastic/multiprocessing"
                            f"/api.py:897] Sending process {p.pid} closing signal SIGTERM")
        err = f"/tmp/torchelastic_7k2m9q1x/mm7b-sft-a1_0/attempt_0/{victim.local}/error.json"
        tf = after(oom_t, 1.9)
        log.add(tf, torchrun_failure(tf, host, agents[host], "torchtitan.train",
                                     [(victim.rank, victim.local, victim.pid, 1, oom_t, (err, oom_traceback()))],
                                     py="python3.11", tz=EET))
    else:
        # bor-002's workers lose their peers; its local rank 0 (global 8) is the one the console shows
        lead = mine[0]
        t = after(oom_t, 1.3)
        reason = (f"NCCL error: remote process exited or there was a network error, NCCL version {NCCL_VERSION}\n"
                  "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                  "prematurely.\nLast error:\nsocketProgress: Connection closed by remote peer bor-001<41807>")
        sub = Log()
        pg_abort(sub, t, lead.rank, "PG ID 0 PG GUID 0(default_pg)", lead.rank, 40117, reason, timeout=False,
                 tz=EET)
        for when, _, text in sub.items:  # --tee prefixes every line with the local rank
            text = text.replace("python3.10", "python3.11")
            log.add(when, "\n".join("[rank0]:" + x for x in text.split("\n")))
        tf = after(t, 1.5)
        log.add(tf, torchrun_failure(tf, host, agents[host], "torchtitan.train",
                                     [(p.rank, p.local, p.pid, -6, after(t, 0.3 + 0.01 * p.local), sigabrt(p.pid))
                                      for p in mine], py="python3.11", tz=EET))


def mm_success(log: Log, att: Attempt, host: str, agents: dict[str, int]) -> None:
    end = att.saves[-1].end
    if host == MM_HOSTS[0]:
        titan(log, after(end, 0.3), "Sleeping 2 seconds for other ranks to complete")
        titan(log, after(end, 2.4), "Training completed")
    for dt_s, text in ((4.1, "api.py:879] [default] worker group successfully finished. Waiting 300 seconds for other "
                             "agents to finish."),
                       (4.2, "api.py:932] Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds "
                             "for other agents to finish"),
                       (4.9, "api.py:946] Done waiting for other agents. Elapsed: 0.6834 seconds")):
        tt = after(end, dt_s)
        log.add(tt, f"{glog(tt.astimezone(EET), 'I')} {agents[host]} torch/distributed/elastic/agent/server/{text}")


# ---------------------------------------------------------------------------------------------
# ds1b-ablation (DeepSpeed) and hf-eval-sweep (HuggingFace Trainer): short single-node jobs.
# ---------------------------------------------------------------------------------------------


def dslog(t: dt.datetime, where: str, msg: str, level: str = "INFO") -> str:
    return f"[{pylog(t)}] [{level}] [{where}] {msg}"


def write_ds(files: Files, story: Story) -> None:
    att, r = story.ds, rng("ds-log")
    s = att.start
    out = [dslog(after(s, 3.1), "real_accelerator.py:219:get_accelerator",
                 "Setting ds_accelerator to cuda (auto detect)"),
           dslog(after(s, 5.2), "runner.py:215:fetch_hostfile", "Unable to find hostfile, will proceed with training "
                                                              "with local resources only.", "WARNING"),
           dslog(after(s, 5.3), "runner.py:607:main", "cmd = /usr/bin/python3 -u -m deepspeed.launcher.launch "
                                                   "--world_info=eyJsb2NhbGhvc3QiOiBbMCwgMSwgMiwgMywgNCwgNSwgNiwgN119 "
                                                   "--master_addr=127.0.0.1 --master_port=29500 "
                                                   "--enable_each_rank_log=None train_ds1b.py --deepspeed "
                                                   "ds_config_zero2.json --ablation no-qk-norm"),
           dslog(after(s, 7.0), "launch.py:146:main", "WORLD INFO DICT: {'localhost': [0, 1, 2, 3, 4, 5, 6, 7]}"),
           dslog(after(s, 7.0), "launch.py:152:main", "nnodes=1, num_local_procs=8, node_rank=0")]
    pids = [r.randint(20000, 60000) + i for i in range(8)]
    out += [dslog(after(s, 7.1), "launch.py:256:main", f"process {pid} spawned with command: ['/usr/bin/python3', "
                                                       "'-u', "
                                                    f"'train_ds1b.py', '--local_rank={i}', '--deepspeed', "
                                                    "'ds_config_zero2.json', '--ablation', 'no-qk-norm']")
            for i, pid in enumerate(pids)]
    out += [dslog(after(s, 19.4), "comm.py:683:init_distributed", "Initializing TorchBackend in DeepSpeed with backend "
                                                               "nccl"),
            dslog(after(s, 24.8), "logging.py:128:log_dist", "[Rank 0] DeepSpeed info: version=0.15.4, "
                                                             "git-hash=unknown, "
                                                          "git-branch=unknown"),
            dslog(after(s, 31.0), "logging.py:128:log_dist", "[Rank 0] Creating BF16 optimizer"),
            dslog(after(s, 38.2), "config.py:1003:print", "  zero_optimization ............ {'stage': 2, "
                                                       "'contiguous_gradients': True, 'overlap_comm': True}"),
            dslog(after(s, 38.2), "config.py:1003:print", "  train_batch_size ............. 64"),
            dslog(after(s, 38.2), "config.py:1003:print", f"  steps_per_print .............. {DS_PRINT}")]
    saves = {sv.step: sv for sv in att.saves}
    ckpt = "/lustre-west/ckpt/ds1b-ablation"
    for st in att.steps:
        if st.step % DS_PRINT == 0:
            lr = 3e-4 * min(1, st.step / 200) * (0.5 + 0.5 * math.cos(math.pi * st.step / 20000))
            out.append(dslog(st.end, "logging.py:128:log_dist", f"[Rank 0] step={st.step}, skipped=0, lr=[{lr:.8g}], "
                                                             "mom=[(0.9, 0.95)]"))
            sps = 64 / st.step_s
            out.append(dslog(after(st.end, 0.001), "timer.py:264:stop", f"epoch=0/micro_step={st.step}/global_step="
                                                                     f"{st.step}, RunningAvgSamplesPerSec="
                                                                     f"{sps * 0.995:.4f}, CurrSamplesPerSec={sps:.4f}, "
                                                                     "MemAllocated=4.81GB, MaxMemAllocated=19.77GB"))
        if st.step in saves:
            sv, tag = saves[st.step], f"global_step{st.step}"
            out += [dslog(sv.start, "logging.py:128:log_dist",
                          f"[Rank 0] [Torch] Checkpoint {tag} is about to be saved!"),
                    dslog(after(sv.start, 0.01), "logging.py:128:log_dist",
                       f"[Rank 0] Saving model checkpoint: {ckpt}/{tag}/mp_rank_00_model_states.pt"),
                    dslog(after(sv.start, 0.01), "torch_checkpoint_engine.py:21:save",
                       f"[Torch] Saving {ckpt}/{tag}/mp_rank_00_model_states.pt..."),
                    dslog(after(sv.start, 2.9), "torch_checkpoint_engine.py:23:save",
                       f"[Torch] Saved {ckpt}/{tag}/mp_rank_00_model_states.pt."),
                    dslog(after(sv.end, -0.02), "engine.py:3575:_save_zero_checkpoint",
                       f"zero checkpoint saved {ckpt}/{tag}/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt"),
                    dslog(sv.end, "torch_checkpoint_engine.py:33:commit", f"[Torch] Checkpoint {tag} is ready now!")]
    p = story.t["preempt"]
    out.append(f"slurmstepd: error: *** JOB {DS_JOB} ON {DS_HOST} CANCELLED AT {iso_s(p)} DUE TO PREEMPTION ***")
    out += [dslog(after(p, 0.41 + 0.001 * i), "launch.py:319:sigkill_handler", f"Killing subprocess {pid}")
            for i, pid in enumerate(pids)]
    last = dslog(after(p, 1.2), "launch.py:325:sigkill_handler", "Main process received SIGTERM, exiting")
    text = "\n".join(out) + "\n" + last
    # NOTE: the node killed the launcher mid-write (SIGKILL at the end of GraceTime): truncated last line
    files.text(f"runs/{DS}/attempt-1/train.log", text[: len(text) - 19])
    files.text(f"runs/{DS}/run.toml", [
        'cluster = "acme-west"',
        "gpus = 8",
        "tokens_per_step = 131072  # global batch 64 x seq_len 2048",
        "params = 1209532416",
        "layers = 24",
        "hidden = 2048",
        "seq_len = 2048",
        'checkpoint_dir = "/lustre-west/ckpt/ds1b-ablation"',
        'launcher = "slurm"',
        'launch_command = "sbatch --job-name=ds1b-ablation --nodes=1 --gpus-per-node=8 --exclusive --time=08:00:00 '
        '--partition=gpu --account=research run_ds1b.sbatch"',
    ])


def write_hf(files: Files, story: Story) -> None:
    att, r = story.hf, rng("hf-log")
    s = att.start
    hf_py = "/home/mkaur/.venv/lib/python3.11/site-packages"
    out = ["+ torchrun --nproc-per-node 8 run_clm_sweep.py --model_name_or_path /data/models/phi-2.7b "
           "--do_train --do_eval --eval_strategy steps --eval_steps 500 --logging_steps 25 --bf16 "
           "--output_dir /home/mkaur/hf-eval/out"]
    b = f"{glog(after(s, 6), 'W')} 48211 torch/distributed/run.py:793] "
    out += [b, b + "*" * 41, b + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
            "to avoid your system being overloaded, please further tune the variable for optimal performance in your "
            "application as needed. ", b + "*" * 41]
    out.append(f"{hf_py}/transformers/training_args.py:1575: FutureWarning: `evaluation_strategy` is deprecated and "
               "will be removed in version 4.46 of Transformers. Use `eval_strategy` instead")
    t0 = after(att.train_start, -0.863)
    for ln, text in ((2314, "***** Running training *****"), (2315, "  Num examples = 120,000"),
                     (2316, "  Num Epochs = 1"), (2317, "  Instantaneous batch size per device = 4"),
                     (2320, "  Total train batch size (w. parallel, distributed & accumulation) = 32"),
                     (2321, "  Gradient Accumulation steps = 1"), (2322, f"  Total optimization steps = {HF_TOTAL:,}"),
                     (2323, "  Number of trainable parameters = 2,779,683,840")):
        out.append(f"[INFO|trainer.py:{ln}] {pylog(t0)} >> {text}")
    bar: list[str] = []

    def tqdm(step: int, t: dt.datetime) -> str:
        el = (t - att.train_start).total_seconds()
        rate = el / max(step, 1)
        left = rate * (HF_TOTAL - step)
        pct = 100 * step // HF_TOTAL
        filled = "█" * (pct // 10)
        return (f"{pct:3d}%|{filled:<10}| {step}/{HF_TOTAL} [{int(el) // 60:02d}:{int(el) % 60:02d}<"
                f"{int(left) // 3600}:{int(left) % 3600 // 60:02d}:{int(left) % 60:02d}, {rate:5.2f}s/it]")

    bar.append(f"  0%|          | 0/{HF_TOTAL} [00:00<?, ?it/s]")
    for st in att.steps:
        bar.append(tqdm(st.step, st.end))
        if st.step % HF_LOG_EVERY == 0:
            out.append("\r".join(bar))
            bar = [""]
            lr = 2e-5 * (1 - st.step / HF_TOTAL)
            out.append(f"{{'loss': {1.62 + 0.6 * math.exp(-st.step / 300) + r.gauss(0, 0.02):.4f}, 'grad_norm': "
                       f"{0.9 + abs(r.gauss(0, 0.2)):.4f}, 'learning_rate': {lr!r}, 'epoch': "
                       f"{round(st.step / HF_TOTAL, 4)}}}")
        if st.step % 500 == 0:
            out.append("\r".join(bar))
            bar = [""]
            out.append(f"[INFO|trainer.py:4117] {pylog(st.end)} >> \n***** Running Evaluation *****")
            out.append(f"[INFO|trainer.py:4119] {pylog(st.end)} >>   Num examples = 4000")
            out.append(f"{{'eval_loss': {1.71 + 0.3 * math.exp(-st.step / 400):.4f}, 'eval_runtime': 41.27, "
                       "'eval_samples_per_second': 96.923, 'eval_steps_per_second': 3.029, 'epoch': "
                       f"{round(st.step / HF_TOTAL, 4)}}}")
            out.append(f"[INFO|trainer.py:3801] {pylog(after(st.end, 41.5))} >> Saving model checkpoint to "
                       f"/home/mkaur/hf-eval/out/checkpoint-{st.step}")
    out.append("\r".join(bar))
    c = story.t["hf_cancel"]
    out.append(f"slurmstepd: error: *** JOB {HF_JOB} ON {HF_HOST} CANCELLED AT {iso_s(c)} ***")
    out.append(f"{glog(after(c, 0.03), 'W')} 48211 torch/distributed/elastic/agent/server/api.py:704] Received "
               "Signals.SIGTERM death signal, shutting down workers")
    files.text(f"runs/{HF}/attempt-1/train.log", out)
    files.text(f"runs/{HF}/run.toml", [
        'cluster = "acme-west"',
        "gpus = 8",
        "tokens_per_step = 65536  # 32 sequences x 2048",
        "flops_per_token = 1.7e10",
        'launcher = "slurm"',
        'launch_command = "sbatch --job-name=hf-eval-sweep --nodes=1 --gpus-per-node=8 --time=06:00:00 '
        '--partition=gpu --account=research sweep.sbatch"',
    ])


# ---------------------------------------------------------------------------------------------
# Node kernel logs, each in the format its collection tool printed.
# ---------------------------------------------------------------------------------------------

EAST003_BOOT = dt.datetime(2026, 11, 19, 14, 22, 7, tzinfo=UTC)


def write_nodes(files: Files, story: Story) -> None:
    r = rng("nodes")
    # east-003: raw dmesg (seconds since boot) and the boot time beside it
    x = story.t["xid"]
    dead = procs_for(story.llama[0], rng("llama-log:1"), H100_BUS)[0][2 * 8 + XID_LOCAL_RANK]
    boot = EAST003_BOOT
    lines = [(after(boot, 0.0), "Linux version 6.8.0-48-generic (buildd@lcy02-amd64-040) (x86_64-linux-gnu-gcc-13 "
                                "(Ubuntu 13.2.0-23ubuntu4) 13.2.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #48-Ubuntu "
                                "SMP PREEMPT_DYNAMIC Fri Sep 27 14:04:52 UTC 2024 (Ubuntu 6.8.0-48.48-generic 6.8.12)"),
             (after(boot, 0.0), "Command line: BOOT_IMAGE=/vmlinuz-6.8.0-48-generic root=UUID=3b1f0a52-8d0e-4a53 ro "
                                "iommu=pt pci=realloc=off"),
             (after(boot, 18.41), "nvidia: loading out-of-tree module taints kernel."),
             (after(boot, 19.02), "nvidia-nvlink: Nvlink Core is being initialized, major device number 508"),
             (after(boot, 19.88), "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.127.05  Release Build  "
                                  "(dvs-builder@U16-I3-B03-4-3)  Tue Oct  8 03:22:07 UTC 2024"),
             (after(boot, 25.7), "mlx5_core 0000:18:00.0 mlx5_0: Port: 1 Link ACTIVE"),
             (after(A1_START, -3600 * 5 - 61.2), "perf: interrupt took too long (2503 > 2500), lowering "
                                                 "kernel.perf_event_max_sample_rate to 79750"),
             (x, f"NVRM: Xid (PCI:0000:{XID_BUS}:00): 79, pid={dead.pid}, name=python, GPU has fallen off the bus."),
             (after(x, 0.0004), f"NVRM: GPU 0000:{XID_BUS}:00.0: GPU has fallen off the bus."),
             (after(x, 0.0006), "NVRM: GPU Board Serial Number: 1654123018337"),
             (after(x, 0.0213), "NVRM: A GPU crash dump has been created. If possible, please run\n"
                                "NVRM: nvidia-bug-report.sh as root to collect this data before\n"
                                "NVRM: the NVIDIA kernel module is unloaded.")]
    for k in (1, 2, 3, 4):  # the hung-task detector, every 2 minutes while the process is stuck
        h = after(x, 122.9 * k + 0.4)
        lines.append((h, f"INFO: task python:{dead.pid} blocked for more than {122 * k} seconds.\n"
                         "      Tainted: P           OE      6.8.0-48-generic #48-Ubuntu\n"
                         '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.'))
    lines = [(after(t, r.uniform(0, 0.0009)) if 0 < (t - boot).total_seconds() < 100 else t, text) for t, text in lines]
    files.text(f"nodes/{XID_HOST}/dmesg", [
        "\n".join(dmesg_raw(t, boot) + " " + ln for ln in text.split("\n"))
        for t, text in sorted(lines, key=lambda x: x[0])])
    files.text(f"nodes/{XID_HOST}/boot_time", boot.strftime("%Y-%m-%dT%H:%M:%SZ"))

    # east-002: journalctl -k -o short-iso; the mlx5_2 port flaps
    ld = story.t["link_down"]
    kern = [(after(A1_START, -7200.0), "audit: type=1400 audit(1795485601.112:201): apparmor=\"STATUS\" "
                                       "operation=\"profile_replace\" profile=\"unconfined\" name=\"nvidia_modprobe\""),
            (after(A1_START, -7100.4), "IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready"),
            (after(A1_START, 3602.9), "perf: interrupt took too long (2511 > 2500), lowering "
                                      "kernel.perf_event_max_sample_rate to 79500"),
            (ld, f"mlx5_core {IB_PCI} {IB_HCA}: Port: 1 Link DOWN"),
            (after(ld, 44.8), f"mlx5_core {IB_PCI} {IB_HCA}: Port: 1 Link INIT"),
            (after(ld, 49.3), f"mlx5_core {IB_PCI} {IB_HCA}: Port: 1 Link ACTIVE"),
            (after(ld, 191.6), f"mlx5_core {IB_PCI} {IB_HCA}: Port: 1 Link DOWN"),
            (after(ld, 240.1), f"mlx5_core {IB_PCI} {IB_HCA}: Port: 1 Link INIT"),
            (after(ld, 244.7), f"mlx5_core {IB_PCI} {IB_HCA}: Port: 1 Link ACTIVE")]
    files.text(f"nodes/{IB_HOST}/kern.log", [f"{journal_iso(t)} {IB_HOST} kernel: {m}" for t, m in sorted(kern)])

    # east-004: dmesg --time-format iso; an OST stops answering during attempt 3's save
    lost, back = story.t["lustre_lost"], story.t["lustre_back"]
    osc, nid = "lustre-OST0007-osc-ffff8f3b41e3d000", "10.20.1.17@o2ib"
    sent = int(after(lost, -41).timestamp())
    lus = [(after(A1_START, -1200), "Lustre: Mounted lustre-client"),
           (lost, f"Lustre: 4187:0:(client.c:2338:ptlrpc_expire_one_request()) @@@ Request sent has timed out for "
                  f"slow reply: [sent {sent}/real {sent}]  req@000000009c1d2f3a x1815226532481234/t0(0) "
                  f"o4->{osc}@{nid}:6/4 lens 488/448 e 0 to 1 dl {sent + 41} ref 2 fl Rpc:XQr/0/ffffffff rc 0/-1 "
                  "job:'python.1001'"),
           (after(lost, 0.00005), f"Lustre: {osc}: Connection to lustre-OST0007 (at {nid}) was lost; in progress "
                                  "operations using this service will wait for recovery to complete"),
           (after(lost, 25.3), f"LustreError: 11-0: {osc}: operation ost_connect to node {nid} failed: rc = -16"),
           (after(lost, 75.9), f"LustreError: 11-0: {osc}: operation ost_connect to node {nid} failed: rc = -16"),
           (after(lost, 126.4), f"LustreError: 4190:0:(import.c:383:ptlrpc_invalidate_import()) {osc}: timeout "
                                "waiting for callback (1 != 0)"),
           (back, f"Lustre: {osc}: Connection restored to {nid} (at {nid})")]
    files.text(f"nodes/{LUSTRE_HOST}/dmesg", [f"{dmesg_iso(t)} {m}" for t, m in sorted(lus)])

    # bor-002: dmesg -T, printed in the node's local time (Europe/Helsinki)
    nl, nb = story.t["nfs_lost"], story.t["nfs_back"]
    nfs = [(after(M1_START, -3 * 86400), "NFS: Registering the id_resolver key type"),
           (after(M1_START, -3 * 86400 + 0.1), "Key type id_resolver registered"),
           (nl, "nfs: server nfs-bor not responding, still trying"),
           (after(nl, 0.0021), "nfs: server nfs-bor not responding, still trying"),
           (after(nl, 180.6), f"INFO: task python3:{61000 + r.randint(0, 900)} blocked for more than 120 seconds."),
           (nb, "nfs: server nfs-bor OK"),
           (after(nb, 0.0007), "nfs: server nfs-bor OK")]
    files.text(f"nodes/{NFS_HOST}/dmesg", [f"{dmesg_ctime(t.astimezone(EET))} {m}" for t, m in sorted(nfs)])

    # bor-004: another user's kernel hits Xid 13; no run of ours is on that node
    xt = XID13_AT
    x13 = [(after(xt, -86400), "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.127.05  Release Build"),
           (xt, "NVRM: Xid (PCI:0000:4c:00): 13, pid=88412, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 0, "
                "SM 0): Out Of Range Address"),
           (after(xt, 0.00002), "NVRM: Xid (PCI:0000:4c:00): 13, pid=88412, name=python3, Graphics Exception: ESR "
                                "0x50e730=0x102000e 0x50e734=0x24 0x50e728=0xf81eb60 0x50e72c=0x1174")]
    files.text(f"nodes/{XID13_HOST}/dmesg", [f"{dmesg_ctime(t.astimezone(EET))} {m}" for t, m in sorted(x13)])

    # bor-001: journalctl -k -o short-iso with the local offset; one corrected (harmless) PCIe error
    m2 = story.mm[1]
    at = after(m2.steps[len(m2.steps) // 2].end, 0.7).astimezone(EET)
    aer = [(after(at, -5000), "EDAC MC0: Giving out device to module i10nm_edac controller Intel_10nm Socket#0 IMC#0"),
           (at, "pcieport 0000:80:01.1: AER: Corrected error message received from 0000:83:00.0"),
           (at, "nvidia 0000:83:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)"),
           (at, "nvidia 0000:83:00.0:   device [10de:2335] error status/mask=00000001/0000e000"),
           (at, "nvidia 0000:83:00.0:    [ 0] RxErr                  (First)")]
    files.text(f"nodes/{AER_HOST}/kern.log", [f"{journal_iso(t)} {AER_HOST} kernel: {m}" for t, m in aer])

    # west-01: classic syslog kern.log, nothing to do with any run
    w = dt.datetime(2026, 11, 24, 8, 0, 1, tzinfo=UTC)
    boring = ["[UFW BLOCK] IN=eno1 OUT= MAC=3c:ec:ef:12:34:56:00:1c:73:aa:bb:cc:08:00 SRC=10.11.0.250 DST=10.11.0.1 "
              "LEN=60 TOS=0x00 PREC=0x00 TTL=64 ID=41233 DF PROTO=TCP SPT=51544 DPT=9100 WINDOW=64240 RES=0x00 "
              "SYN URGP=0",
              "EXT4-fs (nvme0n1p2): re-mounted. Opts: errors=remount-ro",
              "perf: interrupt took too long (3141 > 3126), lowering kernel.perf_event_max_sample_rate to 63500",
              "audit: type=1400 audit(1795507201.553:312): apparmor=\"DENIED\" operation=\"open\" "
              "profile=\"snap.lxd.daemon\" name=\"/proc/1/environ\" pid=2212 comm=\"snap-confine\" "
              "requested_mask=\"r\"",
              "IPv4: martian source 10.11.0.255 from 10.11.0.77, on dev eno1",
              "IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready"]
    up = 3412876.12
    west = []
    for i in range(24):
        t = after(w, i * 3517 + r.uniform(0, 900))
        west.append(f"{syslog_ts(t)} west-01 kernel: [{up + (t - w).total_seconds():.6f}] {boring[i % len(boring)]}")
    files.text("nodes/west-01/kern.log", west)


# ---------------------------------------------------------------------------------------------
# Slurm: controller logs, accounting (sacct --parsable2), job completion (jobcomp/filetxt).
# ---------------------------------------------------------------------------------------------


@dataclass
class Job:
    cluster: str
    job_id: str
    name: str
    user: str
    uid: int
    account: str
    partition: str
    nodes: tuple[str, ...]
    submit: dt.datetime
    start: dt.datetime
    end: dt.datetime
    state: str  # sacct's State of the job line
    exit_code: str
    time_limit_min: int
    steps: list[tuple[str, str, str, str]] = field(default_factory=list)  # (suffix, name, state, exit)
    workdir: str = ""


def slurm_jobs(story: Story) -> list[Job]:
    a1, a2, a3 = story.llama
    e, w = "acme-east", "acme-west"
    resv = story.t["reservation"]

    def tl(start: dt.datetime) -> int:  # --time=04:00:00 --time-min=00:10:00 before the reservation
        return min(240, int((resv - start).total_seconds() // 60))

    jobs = [
        Job(e, "4100", "nccl-preflight", "trainops", 1001, "llm", "gpu", tuple(f"east-{i:03d}" for i in range(1, 9)),
            after(A1_START, -1500), after(A1_START, -1320), after(A1_START, -948), "COMPLETED", "0:0", 30,
            [(".batch", "batch", "COMPLETED", "0:0"), (".extern", "extern", "COMPLETED", "0:0"),
             (".0", "all_reduce_perf", "COMPLETED", "0:0")], "/home/trainops/preflight"),
        Job(e, LLAMA_JOBS[0], LLAMA, "trainops", 1001, "llm", "gpu", A1_HOSTS, after(a1.start, -79), a1.start, a1.end,
            "CANCELLED by 1001", "0:0", tl(a1.start),
            [(".batch", "batch", "CANCELLED", "0:15"), (".extern", "extern", "COMPLETED", "0:0"),
             (".0", "torchrun", "CANCELLED", "0:15")], "/home/trainops/llama8b"),
        Job(e, "4104", "vlm-eval", "rkim", 1002, "vision", "gpu", tuple(f"east-{i:03d}" for i in range(9, 13)),
            after(A1_START, 540), after(A1_START, 600), after(A1_START, 5421), "COMPLETED", "0:0", 120,
            [(".batch", "batch", "COMPLETED", "0:0"), (".extern", "extern", "COMPLETED", "0:0"),
             (".0", "python3", "COMPLETED", "0:0")], "/home/rkim/vlm"),
        Job(e, LLAMA_JOBS[1], LLAMA, "trainops", 1001, "llm", "gpu", A2_HOSTS, after(a2.start, -130), a2.start,
            a2.end, "FAILED", "1:0", tl(a2.start),
            [(".batch", "batch", "FAILED", "1:0"), (".extern", "extern", "COMPLETED", "0:0"),
             (".0", "torchrun", "FAILED", "1:0")], "/home/trainops/llama8b"),
        Job(e, LLAMA_JOBS[2], LLAMA, "trainops", 1001, "llm", "gpu", A3_HOSTS, after(a3.start, -95), a3.start, a3.end,
            "TIMEOUT", "0:0", story.tl_min,
            [(".batch", "batch", "CANCELLED", "0:15"), (".extern", "extern", "COMPLETED", "0:0"),
             (".0", "torchrun", "CANCELLED", "0:15")], "/home/trainops/llama8b"),
        Job(w, DS_JOB, DS, "jchen", 1003, "research", "gpu", (DS_HOST,), after(DS_START, -118), DS_START,
            story.ds.end, "PREEMPTED", "0:15", 480,
            [(".batch", "batch", "CANCELLED", "0:15"), (".extern", "extern", "COMPLETED", "0:0")],
            "/home/jchen/ablations"),
        Job(w, BURNIN_JOB, "gpu-burnin", "acmeops", 900, "acme", "maint", (DS_HOST,), after(story.t["preempt"], -2),
            after(story.ds.end, 2), after(story.ds.end, 1802), "COMPLETED", "0:0", 60,
            [(".batch", "batch", "COMPLETED", "0:0"), (".extern", "extern", "COMPLETED", "0:0")], "/opt/acme/burnin"),
        Job(w, HF_JOB, HF, "mkaur", 1000, "research", "gpu", (HF_HOST,), after(HF_START, -73), HF_START, story.hf.end,
            "CANCELLED by 1000", "0:0", 360,
            [(".batch", "batch", "CANCELLED", "0:15"), (".extern", "extern", "COMPLETED", "0:0")],
            "/home/mkaur/hf-eval"),
    ]
    return jobs


CPUS_PER_NODE = 224


def write_sacct(files: Files, jobs: list[Job]) -> None:
    cols = "Cluster|JobID|JobName|User|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|" \
           "NodeList|AllocTRES"
    out = [cols]
    for j in sorted(jobs, key=lambda j: (j.cluster, int(j.job_id))):
        n = len(j.nodes)
        tres = f"billing={CPUS_PER_NODE * n},cpu={CPUS_PER_NODE * n},gres/gpu={8 * n},mem={2000 * n}G,node={n}"
        common = [iso_s(j.submit), iso_s(j.start), iso_s(j.end), elapsed((j.end - j.start).total_seconds())]
        out.append("|".join([j.cluster, j.job_id, j.name, j.user, j.partition, j.account, str(CPUS_PER_NODE * n),
                             j.state, j.exit_code, *common, str(n), hostlist(j.nodes), tres]))
        for suffix, name, state, code in j.steps:
            nn = 1 if suffix == ".batch" else n
            start = after(j.start, 2) if suffix == ".0" else j.start
            out.append("|".join([j.cluster, j.job_id + suffix, name, "", "", j.account, str(CPUS_PER_NODE * nn), state,
                                 code, iso_s(j.start), iso_s(start), iso_s(j.end),
                                 elapsed((j.end - start).total_seconds()), str(nn),
                                 j.nodes[0] if nn == 1 else hostlist(j.nodes),
                                 f"cpu={CPUS_PER_NODE * nn},gres/gpu={8 * nn},mem={2000 * nn}G,node={nn}"]))
    files.text("scheduler/sacct.txt", out)


def write_jobcomp(files: Files, jobs: list[Job]) -> None:
    for cluster in ("acme-east", "acme-west"):
        out = []
        for j in sorted((j for j in jobs if j.cluster == cluster), key=lambda j: j.end):
            n = len(j.nodes)
            state = j.state.split(" ")[0]
            tres = f"cpu={CPUS_PER_NODE * n},mem={2000 * n}G,node={n},billing={CPUS_PER_NODE * n},gres/gpu={8 * n}"
            out.append(f"JobId={j.job_id} UserId={j.user}({j.uid}) GroupId={j.user}({j.uid}) Name={j.name} "
                       f"JobState={state} Partition={j.partition} TimeLimit={j.time_limit_min} StartTime="
                       f"{iso_s(j.start)} EndTime={iso_s(j.end)} NodeList={hostlist(j.nodes)} NodeCnt={n} "
                       f"ProcCnt={CPUS_PER_NODE * n} WorkDir={j.workdir} ReservationName= Tres={tres} "
                       f"Account={j.account} QOS=normal WcKey= Cluster={cluster} SubmitTime={iso_s(j.submit)} "
                       f"EligibleTime={iso_s(j.submit)} DerivedExitCode=0:0 ExitCode={j.exit_code} ")
        files.text(f"scheduler/{cluster}/jobcomp.txt", out)


def write_slurmctld(files: Files, story: Story, jobs: list[Job]) -> None:
    r = rng("slurmctld")
    by_id = {j.job_id: j for j in jobs}
    east: list[tuple[dt.datetime, str]] = []
    west: list[tuple[dt.datetime, str]] = []

    def lifecycle(log: list, j: Job) -> None:
        prio, usec = r.randint(9000, 11000), r.randint(250, 900)
        log.append((after(j.submit, r.uniform(0.01, 0.9)),
                    f"_slurm_rpc_submit_batch_job: JobId={j.job_id} InitPrio={prio} usec={usec}"))
        log.append((after(j.start, r.uniform(0.001, 0.05)), f"sched: Allocate JobId={j.job_id} NodeList="
                    f"{hostlist(j.nodes)} #CPUs={CPUS_PER_NODE * len(j.nodes)} Partition={j.partition}"))

    resv = story.t["reservation"]
    east.append((after(A1_START, -7200), f"_slurm_rpc_resv_create complete for {RESERVATION} usec=1872"))
    east.append((after(A1_START, -7199), f"sched: Created reservation={RESERVATION} users=acmeops "
                                         f"nodes=east-[001-016] cores=3584 licenses=(null) tres=cpu=3584 "
                                         f"watts=4294967294 start={iso_s(resv)} end={iso_s(after(resv, 4 * 3600))} "
                                         "MaxStartDelay="))
    for jid in ("4100", "4104"):
        j = by_id[jid]
        lifecycle(east, j)
        east.append((j.end, f"_job_complete: JobId={jid} WEXITSTATUS 0"))
        east.append((after(j.end, 0.001), f"_job_complete: JobId={jid} done"))
    a1, a2, a3 = story.llama
    j = by_id[LLAMA_JOBS[0]]
    lifecycle(east, j)
    east.append((a1.end, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={j.job_id} uid 1001"))
    east.append((after(a1.end, 0.001), f"job_signal: 9 of running JobId={j.job_id} successful 0x8004"))
    kt = after(a1.end, 121.4)  # UnkillableStepTimeout=120: the process on the lost GPU stays in D state
    east.append((kt, f"error: slurmd error running JobId={j.job_id} on node(s)={XID_HOST}: Kill task failed"))
    east.append((after(kt, 0.0004), f"drain_nodes: node {XID_HOST} state set to DRAIN"))
    east.append((after(kt, 1.2), f"cleanup_completing: JobId={j.job_id} completion process took 122 seconds"))
    adm = after(a1.end, 402.7)
    east.append((adm, f"update_node: node {XID_HOST} reason set to: Xid 79 GPU 0000:{XID_BUS}:00.0 fell off the bus "
                      "- RMA ACME-77812"))
    east.append((after(adm, 0.0003), f"update_node: node {XID_HOST} state set to DOWN"))
    j = by_id[LLAMA_JOBS[1]]
    lifecycle(east, j)
    east.append((a2.end, f"_job_complete: JobId={j.job_id} WEXITSTATUS 1"))
    east.append((after(a2.end, 0.001), f"_job_complete: JobId={j.job_id} done"))
    adm = after(a2.end, 233.1)
    east.append((adm, f"update_node: node {IB_HOST} reason set to: {IB_HCA} link flapping, cable swap ACME-77840"))
    east.append((after(adm, 0.0003), f"update_node: node {IB_HOST} state set to DRAIN"))
    j = by_id[LLAMA_JOBS[2]]
    lifecycle(east, j)
    east.append((a3.end, f"Time limit exhausted for JobId={j.job_id}"))
    east.append((after(a3.end, 2.6), f"_job_complete: JobId={j.job_id} WTERMSIG 15"))
    east.append((after(a3.end, 2.6011), f"_job_complete: JobId={j.job_id} done"))
    for k in range(0, 6 * 3600, 1800):  # background chatter
        began = f"{after(A1_START, k - 3604):%H:%M:%S}.{r.randint(100, 999)}"
        east.append((after(A1_START, k - 3600 + 7.3), "Warning: Note very large processing time from "
                                                      f"_slurm_rpc_dump_jobs: usec={r.randint(3000000, 4200000)} "
                                                      f"began={began}"))

    j = by_id[DS_JOB]
    lifecycle(west, j)
    p = story.t["preempt"]
    west.append((after(p, -2), f"_slurm_rpc_submit_batch_job: JobId={BURNIN_JOB} InitPrio=4294901759 usec=311"))
    west.append((p, f"preempted JobId={DS_JOB} has been killed to reclaim resources for JobId={BURNIN_JOB}"))
    west.append((j.end, f"_job_complete: JobId={DS_JOB} WTERMSIG 15"))
    west.append((after(j.end, 0.001), f"_job_complete: JobId={DS_JOB} done"))
    b = by_id[BURNIN_JOB]
    west.append((b.start, f"sched: Allocate JobId={BURNIN_JOB} NodeList={DS_HOST} #CPUs={CPUS_PER_NODE} "
                          f"Partition={b.partition}"))
    west.append((b.end, f"_job_complete: JobId={BURNIN_JOB} WEXITSTATUS 0"))
    west.append((after(b.end, 0.001), f"_job_complete: JobId={BURNIN_JOB} done"))
    j = by_id[HF_JOB]
    lifecycle(west, j)
    west.append((j.end, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={HF_JOB} uid 1000"))
    west.append((after(j.end, 0.4), f"_job_complete: JobId={HF_JOB} WTERMSIG 15"))
    west.append((after(j.end, 0.401), f"_job_complete: JobId={HF_JOB} done"))
    for name, log in (("acme-east", east), ("acme-west", west)):
        # events at a whole second (job ends, kills) are logged a few ms into it
        log = [(after(t, r.uniform(0.002, 0.03)) if t.microsecond == 0 else t, m) for t, m in log]
        files.text(f"scheduler/{name}/slurmctld.log", [f"{ctld(t)} {m}" for t, m in sorted(log, key=lambda x: x[0])])


# ---------------------------------------------------------------------------------------------
# Inventory and truth.
# ---------------------------------------------------------------------------------------------


def write_inventory(files: Files) -> None:
    files.text("inventory.toml", [
        "# The fleet: providers, their clusters and nodes (Slurm hostlists).",
        "",
        "[providers.acme]",
        "usd_per_gpu_hour = 2.35",
        'support = "support@acme.example, 24/7; credits for node failures need Xid or dmesg evidence within 72 h"',
        "",
        "[providers.borealis]",
        "usd_per_gpu_hour = 1.95",
        'support = "portal tickets, business hours Europe/Helsinki; 2 of 10 contracted bor-1 nodes not delivered"',
        "",
        "[clusters.acme-east]",
        'provider = "acme"',
        'gpu = "H100-SXM"',
        "gpus_per_node = 8",
        'interconnect = "InfiniBand NDR"',
        'nodes = "east-[001-016]"',
        "contracted_nodes = 16",
        "contract_start = 2026-11-01",
        "",
        "[clusters.acme-west]",
        'provider = "acme"',
        'gpu = "H100-SXM"',
        "gpus_per_node = 8",
        'interconnect = "InfiniBand NDR"',
        'nodes = "west-[01-08]"',
        "contracted_nodes = 8",
        "",
        "[clusters.bor-1]",
        'provider = "borealis"',
        'gpu = "H200"',
        "gpus_per_node = 8",
        'interconnect = "InfiniBand NDR"',
        'nodes = "bor-[001-008]"',
        'timezone = "Europe/Helsinki"  # dmesg -T, torchrun and torchtitan print local time here',
        "contracted_nodes = 10  # two nodes never delivered",
        "contract_start = 2026-11-10",
        'delivered = { "bor-008" = 2026-11-24 }  # handed over a day into week 48',
    ])


def write_truth(files: Files, story: Story) -> None:
    a1, a2, a3 = story.llama
    m1, m2 = story.mm
    t = story.t

    def ts(x: dt.datetime | None) -> str | None:
        return iso_z(x) if x else None

    def terminal(att: Attempt, mode: str, host: str, root: dt.datetime, nxt: Attempt | None, evidence: list[str]):
        return {"run": att.run, "attempt": att.k, "failure_mode": mode, "host": host, "root_ts": ts(root),
                "exit_ts": ts(att.end), "next_start_ts": ts(nxt.start if nxt else None),
                "last_checkpoint_step": att.last_save(), "last_step": att.last.step,
                "first_step_after_restart": nxt.first_step if nxt else None, "evidence": evidence}

    def episode(att: Attempt, mode: str, host: str, start: dt.datetime, end: dt.datetime, steps: list[int],
                evidence: list[str]):
        return {"run": att.run, "attempt": att.k, "failure_mode": mode, "host": host, "root_ts": ts(start),
                "end_ts": ts(end), "exit_ts": None, "next_start_ts": None, "last_checkpoint_step": None,
                "first_step_after_restart": None, "steps": steps, "evidence": evidence}

    s1, s2 = STRAGGLER_STEPS
    slow = [s for s in a2.steps if s1 <= s.step <= s2]
    before_slow = next(s for s in a2.steps if s.step == s1 - 1)
    lsave = next(s for s in a3.saves if s.step == A3_STALL_STEP)
    nsave = next(s for s in m1.saves if s.step == M1_STALL_STEP)
    incidents = [
        terminal(a1, "gpu_fell_off_bus", XID_HOST, t["xid"], a2,
                 [f"nodes/{XID_HOST}/dmesg", f"runs/{LLAMA}/attempt-1/train.log", "scheduler/acme-east/slurmctld.log"]),
        episode(a2, "straggler", STRAGGLER_HOST, before_slow.end, slow[-1].end, [s1, s2],
                [f"runs/{LLAMA}/attempt-2/steps/rank-{r}.jsonl.gz" for r in (24, 31)]),
        terminal(a2, "network", IB_HOST, t["link_down"], a3,
                 [f"nodes/{IB_HOST}/kern.log", f"runs/{LLAMA}/attempt-2/train.log"]),
        episode(a3, "filesystem_io", LUSTRE_HOST, lsave.start, lsave.end, [A3_STALL_STEP],
                [f"nodes/{LUSTRE_HOST}/dmesg", f"runs/{LLAMA}/attempt-3/train.log.gz"]),
        terminal(a3, "time_limit", a3.hosts[0], a3.end, None,
                 [f"runs/{LLAMA}/attempt-3/train.log.gz", "scheduler/sacct.txt"]),
        episode(m1, "filesystem_io", NFS_HOST, nsave.start, nsave.end, [M1_STALL_STEP],
                [f"nodes/{NFS_HOST}/dmesg", f"runs/{MM}/attempt-1/bor-001.log"]),
        terminal(m1, "cuda_oom", MM_HOSTS[0], t["oom"], m2, [f"runs/{MM}/attempt-1/bor-001.log"]),
        terminal(story.ds, "preemption", DS_HOST, t["preempt"], None,
                 [f"runs/{DS}/attempt-1/train.log", "scheduler/acme-west/slurmctld.log", "scheduler/sacct.txt"]),
        terminal(story.hf, "manual_stop", HF_HOST, t["hf_cancel"], None,
                 [f"runs/{HF}/attempt-1/train.log", "scheduler/sacct.txt"]),
    ]
    incidents[3]["cause_ts"] = ts(t["lustre_lost"])
    incidents[5]["cause_ts"] = ts(t["nfs_lost"])
    incidents[1]["slowdown_factor"] = STRAGGLER_FACTOR
    incidents[6]["rank"] = OOM_RANK
    benign = [
        {"host": XID13_HOST, "ts": ts(XID13_AT), "what": "Xid 13 in another user's job; no run of ours on the node",
         "evidence": [f"nodes/{XID13_HOST}/dmesg"]},
        {"host": AER_HOST, "ts": None, "what": f"corrected PCIe AER (RxErr) during {MM} attempt 2; harmless",
         "evidence": [f"nodes/{AER_HOST}/kern.log"]},
        {"host": "west-01", "ts": None, "what": "routine kernel chatter", "evidence": ["nodes/west-01/kern.log"]},
    ]
    attempts = [{"run": a.run, "attempt": a.k, "hosts": list(a.hosts), "start_ts": ts(a.start), "end_ts": ts(a.end),
                 "first_step": a.first_step, "last_step": a.last.step, "checkpoints": [s.step for s in a.saves]}
                for a in (*story.llama, *story.mm, story.ds, story.hf)]
    doc = {"generator": "data_samples/build_bundle.py", "incidents": incidents, "benign": benign,
           "attempts": attempts}
    files.text("truth.json", json.dumps(doc, indent=2))


def main() -> None:
    story = build_story()
    files = Files()
    write_inventory(files)
    write_llama(files, story)
    write_mm(files, story)
    write_ds(files, story)
    write_hf(files, story)
    write_nodes(files, story)
    jobs = slurm_jobs(story)
    write_sacct(files, jobs)
    write_jobcomp(files, jobs)
    write_slurmctld(files, story, jobs)
    write_truth(files, story)
    files.write(BUNDLE)
    total = sum(len(b) for b in files.data.values())
    print(f"wrote {len(files.data)} files, {total / 1e6:.2f} MB, to {BUNDLE}")


if __name__ == "__main__":
    main()
