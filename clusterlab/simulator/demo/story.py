"""The demo scenario's story: its runs, their attempts, every step and the moments of every incident.

A week of training on two providers' clusters, hand-placed: llama8b-pretrain (Megatron-LM, acme-east)
loses a GPU, then an IB link, then runs into a maintenance reservation; mm7b-sft (torchtitan, bor-1)
stalls on NFS and runs out of memory; ds1b-ablation (DeepSpeed) is preempted; hf-eval-sweep (HF
Trainer) is cancelled by its owner. Decoys: a foreign Xid 13 on an idle node, a corrected PCIe AER,
a node's routine kernel chatter. Everything the writers print is derived from the numbers here.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from dataclasses import dataclass, field

from clusterlab.simulator.stamps import after

SEED = "clusterlab-demo-bundle-1"
UTC = dt.UTC
# Europe/Helsinki in late November is EET, UTC+2, with no DST change in the window: a fixed
# offset keeps the scenario free of tzdata.
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
    """A node's address on its cluster's network (NCCL's bootstrap and IB peers print it)."""
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


def run_steps(att: Attempt, model: StepModel, last_step: int, *, until: dt.datetime | None = None,
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
    """llama8b-pretrain's loss curve (no noise)."""
    return 2.35 + 8.45 * math.exp(-step / 115) + 0.9 * math.exp(-step / 900)


def mm_loss(step: int) -> float:
    """mm7b-sft's loss curve (no noise)."""
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
    """Every attempt of every run, their steps and saves, and the named moments of the incidents."""
    t: dict[str, dt.datetime] = {}
    llama_model = StepModel(LLAMA_STEP_S, LLAMA_COMPUTE_S, LLAMA_DATA_S, LLAMA_COMM_MIN_S,
                            LLAMA_SAVE_EVERY, LLAMA_SAVE_S, 32)

    a1 = Attempt(LLAMA, 1, A1_HOSTS, A1_START, 1, after(A1_START, LLAMA_STARTUP_S))
    run_steps(a1, llama_model, A1_LAST_GOOD)
    t["xid"] = after(a1.last.end, 0.412)
    t["a1_hang_start"] = after(a1.last.end, 0.050)  # step 271's gradient all-reduce is enqueued
    t["a1_watchdog"] = after(t["a1_hang_start"], NCCL_TIMEOUT_S + 0.018)
    a1.end = after(t["a1_watchdog"], A1_CANCEL_AFTER_S).replace(microsecond=0)  # scancel, sacct End

    a2_start = after(a1.end, A2_GAP_S)
    a2 = Attempt(LLAMA, 2, A2_HOSTS, a2_start, a1.last_save() + 1, after(a2_start, LLAMA_STARTUP_S))
    run_steps(a2, llama_model, A2_LAST_GOOD, slow=(STRAGGLER_HOST, *STRAGGLER_STEPS, STRAGGLER_FACTOR))
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
    run_steps(a3, llama_model, 100000, until=a3.end, stall=(A3_STALL_STEP, A3_STALL_S))
    stall = next(s for s in a3.saves if s.step == A3_STALL_STEP)
    t["lustre_lost"], t["lustre_back"] = after(stall.start, 6.3), after(stall.end, -4.1)

    mm_model = StepModel(MM_STEP_S, MM_COMPUTE_S, MM_DATA_S, MM_COMM_MIN_S, MM_SAVE_EVERY, MM_SAVE_S, 16)
    m1 = Attempt(MM, 1, MM_HOSTS, M1_START, 1, after(M1_START, MM_STARTUP_S))
    run_steps(m1, mm_model, M1_OOM_STEP - 1, stall=(M1_STALL_STEP, M1_STALL_S))
    stall = next(s for s in m1.saves if s.step == M1_STALL_STEP)
    t["nfs_lost"], t["nfs_back"] = after(stall.start, 7.9), after(stall.end, -2.2)
    t["oom"] = after(m1.last.end, 2.87)  # in the forward pass of step 337
    m1.end = after(t["oom"], 3.4).replace(microsecond=0)  # both torchrun agents have exited
    m2_start = after(m1.end, M2_GAP_S)
    m2 = Attempt(MM, 2, MM_HOSTS, m2_start, m1.last_save() + 1, after(m2_start, MM_STARTUP_S + MM_LOAD_S))
    run_steps(m2, mm_model, MM_TOTAL_STEPS)
    m2.end = after(m2.saves[-1].end, 9.3).replace(microsecond=0)

    ds_model = StepModel(DS_STEP_S, 0.29, 0.01, 0.05, DS_SAVE_EVERY, DS_SAVE_S, 8)
    ds = Attempt(DS, 1, (DS_HOST,), DS_START, 1, after(DS_START, DS_STARTUP_S))
    run_steps(ds, ds_model, DS_PREEMPT_AFTER_STEP)
    t["preempt"] = after(ds.last.end, 0.2).replace(microsecond=0) + dt.timedelta(seconds=1)
    ds.end = after(t["preempt"], 30)  # PreemptMode=CANCEL, GraceTime=30

    hf_model = StepModel(HF_STEP_S, 0.93, 0.06, 0.09, 500, 52.0, 8)  # the "save" pause is eval + save
    hf = Attempt(HF, 1, (HF_HOST,), HF_START, 1, after(HF_START, HF_STARTUP_S))
    run_steps(hf, hf_model, HF_CANCEL_AFTER_STEP)
    t["hf_cancel"] = after(hf.last.end, 0.6).replace(microsecond=0) + dt.timedelta(seconds=1)
    hf.end = t["hf_cancel"]
    return Story([a1, a2, a3], [m1, m2], ds, hf, t, tl_min)
