#!/usr/bin/env python3
"""Campaign "lightning_slurm": a 13B fine-tune under PyTorch Lightning on a rented Slurm cluster, written in the
outsiders' shape (standard library only, `--out DIR --seed N`, deterministic per seed) before its author read the
analysis code.

Writes, under --out DIR:
  DIR/bundle/inventory.toml, runs/lit13b-sft/run.toml
  DIR/bundle/runs/lit13b-sft/slurm-<jobid>.out          ONE file for every attempt: the job runs with
        `sbatch --requeue --open-mode=append --signal=SIGUSR1@90`, so each requeue of the same job id appends
        its launch to the same file; no per-attempt folders
  DIR/bundle/runs/lit13b-sft/lightning_logs/version_<v>/{metrics.csv,hparams.yaml}   CSVLogger, one version
        per launch (the progress bar's v_num)
  DIR/bundle/nodes/<host>/kern.log (journalctl -k -o short-iso) or dmesg.log (dmesg -T)
  DIR/bundle/scheduler/{slurmctld.log, sacct.txt}     sacct --duplicates (every instance of the requeued job)
  DIR/truth.json

Scenario (128 GPUs = 16 nodes x 8 H100-SXM of cluster pc-1 / provider pinecrest, 24 nodes pn001-pn024 in the
inventory; Lightning Trainer, DeepSpeedStrategy(stage=3), bf16; ModelCheckpoint every 1000 steps to Lustre;
one Slurm job id for the whole week):
  attempt 1  fresh start; SIGUSR1 90 s before the 24 h limit: Lightning saves hpc_ckpt_1.ckpt, runs
             `scontrol requeue`, Slurm kills the job (DUE TO JOB REQUEUE)              [time_limit, host null]
  attempt 2  resumes from hpc_ckpt_1; the rail-4 leaf InfiniBand switch dies: ibp156s0 goes down on the
             four hosts behind it (pn005-pn008) in the same second, NCCL NET/IB completion errors on all
             four, ranks exit 1, job FAILED. Cause: the shared switch, not a host      [network, host null]
  attempt 3  (pn005-pn008 excluded, spares pn017-pn020 in) Xid 79 on pn011 GPU 2; the other ranks hang in
             the all-gather until the 30 min NCCL watchdog (Lightning's default timeout) [gpu_fell_off_bus, pn011]
  attempt 4  (pn011 drained, spare pn021 in) a higher-priority job preempts it; PreemptMode=REQUEUE,
             Lightning bypasses SIGTERM and keeps stepping until SIGKILL            [preemption, host null]
  attempt 5  the kernel OOM killer kills rank 109's process on pn014 (host RAM); srun: Out Of Memory;
             the peers see NET/IB completion errors from the dead rank                   [host_oom, pn014]
  attempt 6  a periodic save stalls on Lustre OST scratch-OST000b (five hosts lose the OST, then are
             evicted) and fails with OSError [Errno 5]; job FAILED                [filesystem_io, host null]
  attempt 7  the loss rises after a save and goes NaN; the team notices 45 min later and runs
             `scontrol requeuehold`, lowers the LR and releases the job    [loss_divergence, host null]
  attempt 8  resumes from the save BEFORE the newest one (a deliberate rollback, not a lost checkpoint);
             pn003 stops answering (no kernel message), NODE_FAIL, Slurm requeues   [node_failure, pn003]
  attempt 9  (pn003 down, spare pn022 in) completes: `Trainer.fit` stopped: `max_steps=...` reached.
  Decoys: Xid 13 on pn023 (another user's job, not in ours) during attempt 3; NCCL WARN "Got async event :
  client reregistration" on pn010 in attempt 5; Lightning PossibleUserWarning about dataloader workers every
  launch; a Lustre connection lost/restored blip on pn012 in attempt 8 that training steps past; the four
  switch hosts (symptoms of the switch); the two rail peers of the OOM host (their NET/IB errors are symptoms);
  the Lustre symptom hosts of attempt 6.

Ledger (truth expected_ledger, GPU-hours = 128 x seconds / 3600), conventions of campaign1.py / campaign2.py:
  startup    = attempt start (sacct Start) -> start of its first training step
  productive = kept steps (step <= the checkpoint the next attempt loads; every step of the last attempt)
  checkpoint = durations of kept saves (those at or before the checkpoint the next attempt loads, the SIGUSR1
               hpc save included), plus the tail after the final save
  recompute  = everything else between the first step and the root event: thrown-away steps, the partial
               step, saves after the checkpoint that is loaded next (attempt 7's newest save)
  hang       = root event -> attempt exit (sacct End). Root events: the requeue kill after the SIGUSR1 save
               (attempt 1), the IB link loss (2), the Xid 79 (3), the preemption (4), the OOM kill (5), the
               start of the save that never completed (6), the end of the first step with a NaN loss (7), the
               node's last breath (8). Steps the ranks still took after a kill notice (Lightning bypasses
               SIGTERM) lie inside the hang.
  restart    = attempt exit -> next attempt start (the requeue hold and the provider's repairs included)
  straggler = slowdown = data_stall = idle = 0

Formats (public material found with the search tools; the text here is written anew):
  * Lightning (Lightning-AI/pytorch-lightning master): setup.py "GPU available: True (cuda), used: True",
    "TPU available: False, using: 0 TPU cores"; fabric/utilities/distributed.py "Initializing distributed:
    GLOBAL_RANK: r, MEMBER: r+1/W" and the '-'*100 / "distributed_backend=nccl" / "All distributed processes
    registered. Starting with W processes" block; accelerators/cuda.py "LOCAL_RANK: l - CUDA_VISIBLE_DEVICES:
    [0,...]"; checkpoint_connector.py "Restoring states from the checkpoint path at P", "Restored all states
    from the checkpoint at P", hpc_ckpt_<n>.ckpt; signal_connector.py "Handling auto-requeue signal: 10",
    "requeing job J...", "Requeued SLURM job: J", "[rank: r] Received SIGTERM: 15", "Bypassing SIGTERM: 15"
    (issue #20542 shows the bar stepping on after them); fit_loop.py "`Trainer.fit` stopped: `max_steps=N`
    reached."; data_connector.py PossibleUserWarning "The 'train_dataloader' does not have many workers ...",
    printed as "FILE:LINE: MESSAGE" by fabric/utilities/warnings.py _custom_format_warning; model_summary.py
    table; tqdm_progress.py BAR_FORMAT "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining},
    {rate_noinv_fmt}{postfix}]" with v_num, written with carriage returns into the .out; CSVLogger metrics.csv;
    EarlyStopping is not used (the team watches the bar).
  * DeepSpeed: "[2023-07-24 13:21:33,260] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0,
    lr=[...], mom=[(0.9, 0.999)]", "[INFO] [timer.py:215:stop] epoch=0/micro_step=10/global_step=10,
    RunningAvgSamplesPerSec=..., CurrSamplesPerSec=..., MemAllocated=...GB, MaxMemAllocated=...GB" (timer counts
    from the launch), "[Torch] Checkpoint TAG is about to be saved!", "Saving model checkpoint: P",
    "[Torch] Saving P...", "[Torch] Saved P.", "zero checkpoint saved P", "[Torch] Checkpoint TAG is ready now!"
    (deepspeedai/DeepSpeed issue #1825 and a pasted log found by find_string).
  * Slurm: slurmstepd req.c "*** JOB %u ON %s CANCELLED AT %s DUE TO JOB REQUEUE ***", "... DUE TO NODE FAILURE,
    SEE SLURMCTLD LOG FOR DETAILS ***", "*** STEP %u.%u ON %s CANCELLED AT %s ***"; slurmctld preempt.c
    "preempted %pJ has been requeued to reclaim resources for %pJ"; sacct -D rows of one requeued job id with
    increasing step ids (troycomi/reportseff #25), state OUT_OF_MEMORY 0:125; "srun: error: H: task N: Out Of
    Memory", "slurmstepd: error: Detected 1 oom_kill event in StepId=J.S. Some of the step tasks have been OOM
    Killed."; "srun: error: Node failure on H"; the "START TIME: $(date)" echo of bigscience scripts.
  * Kernel: NVRM Xid 79 / 13 lines and mlx5 "Link down" (as campaign1.py); Linux OOM killer "invoked
    oom-killer", "oom-kill:constraint=...", "Out of memory: Killed process ...", "oom_reaper: reaped process";
    Lustre client "LustreError: 11-0: X-OSTnnnn-osc-ffff...: operation ost_write to node N@o2ib failed: rc =
    -107", "Connection to X-OSTnnnn (at N@o2ib) was lost; in progress operations using this service will wait
    for recovery to complete", "LustreError: 167-0: ...: This client was evicted by X-OSTnnnn; in progress
    operations using this service will fail.", "Connection restored to ..." (Lustre ptlrpc import.c, public
    dmesg pastes).
  * NCCL 2.21 WARN "NET/IB : Got completion from peer ... status=12 ... vendor err 129", "NET/IB : mlx5_N:1 Got
    async event : client reregistration" (net_ib.cc async thread, ibv_event_type_str); ProcessGroupNCCL watchdog
    and ncclRemoteError text as campaign1.py.
"""
from __future__ import annotations

import argparse
import json
import math
import random
from datetime import UTC, datetime
from pathlib import Path

UTC = UTC
RUN = "lit13b-sft"
CLUSTER, PROVIDER = "pc-1", "pinecrest"
JOB = 734412
PREEMPTOR = 734980
GPN, NODES = 8, 16
GPUS = GPN * NODES
GBS, SEQ = 512, 4096
TOKENS_PER_STEP = GBS * SEQ
FLOPS_PER_TOKEN = 8.81e10                    # 6 * 13.0e9 + 12 * 40 layers * 5120 * 4096
PEAK = 989.4e12
BASE_STEP = 4.20
JITTER = 0.004
SAVE_EVERY = 1000
LOG_EVERY = 50                               # Trainer(log_every_n_steps=50)
BAR_EVERY = 25                               # TQDMProgressBar(refresh_rate=25)
DS_PRINT = 10                                # deepspeed steps_per_print
MAX_STEPS = 66_000                           # set per seed by timeline() (the config the team chose)
STEPS_PER_EPOCH = 36_000
TIME_LIMIT = 24 * 3600
WATCHDOG = 1800
T0 = datetime(2026, 11, 9, 6, 0, 0, tzinfo=UTC).timestamp()
CKDIR = "/lustre/scratch/mlteam/lit13b/checkpoints"
ROOTDIR = "/lustre/scratch/mlteam/lit13b"
HOSTS = [f"pn{i:03d}" for i in range(1, 25)]
SWITCH_HOSTS = ["pn005", "pn006", "pn007", "pn008"]
XID_HOST, OOM_HOST, NF_HOST = "pn011", "pn014", "pn003"
XID13_HOST, WARN_HOST, BLIP_HOST = "pn023", "pn010", "pn012"
LUSTRE_HOSTS = ["pn002", "pn009", "pn013", "pn018", "pn020"]
OST, OSS_NID = "scratch-OST000b", "10.50.1.12@o2ib"
NIC_IF = ["ibp26s0", "ibp60s0", "ibp77s0", "ibp94s0", "ibp156s0", "ibp188s0", "ibp204s0", "ibp220s0"]
NIC_DEV = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
NIC_PCI = ["0000:1a:00.0", "0000:3c:00.0", "0000:4d:00.0", "0000:5e:00.0",
           "0000:9c:00.0", "0000:bc:00.0", "0000:cc:00.0", "0000:dc:00.0"]
BUS = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
RAIL = 4
HW = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error", "network", "host_hw",
      "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]
LAUNCH = ("sbatch --nodes=16 --ntasks-per-node=8 --gpus-per-node=8 --time=1-00:00:00 --requeue --open-mode=append "
          "--signal=SIGUSR1@90 train.sbatch")
PY = "/opt/conda/envs/lit/lib/python3.11/site-packages"


def ip(h: str) -> str:
    return f"10.60.0.{int(h[2:]) + 10}"


def dt(t: float) -> datetime:
    return datetime.fromtimestamp(math.floor(t), UTC)


def ms(t: float) -> int:
    return int((t - math.floor(t)) * 1000)


def ds_ts(t: float) -> str:                  # python logging asctime in brackets (DeepSpeed)
    return f"[{dt(t):%Y-%m-%d %H:%M:%S},{ms(t):03d}]"


def slurm_ts(t: float) -> str:
    return f"{dt(t):%Y-%m-%dT%H:%M:%S}"


def ctld(t: float) -> str:
    return f"[{dt(t):%Y-%m-%dT%H:%M:%S}.{ms(t):03d}]"


def date_cmd(t: float) -> str:
    d = dt(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def glog_c10(t: float, rng: random.Random) -> str:
    d = dt(t)
    return f"E{d:%m%d} {d:%H:%M:%S}.{int((t % 1) * 1e6):06d}{rng.randint(0, 999):03d}"


def hms(sec: float) -> str:
    sec = int(sec)
    h, r = divmod(sec, 3600)
    m, s = divmod(r, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def elapsed(sec: float) -> str:
    sec = int(round(sec))
    d, r = divmod(sec, 86400)
    return (f"{d}-" if d else "") + hms(r).rjust(8, "0") if r >= 3600 or d else f"00:{hms(r)}"


def hostlist(hosts: list[str]) -> str:
    nums = sorted(int(h[2:]) for h in hosts)
    out, a, b = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == b + 1:
            b = n
            continue
        out.append(f"{a:03d}" if a == b else f"{a:03d}-{b:03d}")
        if n is not None:
            a = b = n
    return f"pn[{','.join(out)}]"


class Sink:
    def __init__(self) -> None:
        self.items: list[tuple[float, int, str]] = []

    def add(self, t: float, s: str) -> None:
        self.items.append((t, len(self.items), s))

    def text(self) -> str:
        self.items.sort(key=lambda x: (x[0], x[1]))
        return "".join(s for _, _, s in self.items)


def write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


# ----------------------------------------------------------------------------- timeline
class Att:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps: list[tuple[int, float, float]] = []     # (step, start, duration)
        self.saves: list[tuple[int, float, float]] = []     # (step, start, duration), completed
        self.extra: list[tuple[int, float, float]] = []     # steps taken after a kill notice
        self.R = self.E = None


def simulate(a: Att, rng: random.Random) -> bool:
    t, n = a.F, a.load
    a.steps, a.saves, a.extra = [], [], []
    while True:
        if a.kind == "complete" and n >= MAX_STEPS:
            a.E = math.ceil(t + 6.0)                              # t is the end of the final save
            return True
        dur = BASE_STEP * (1 + rng.uniform(-JITTER, JITTER))
        if a.kind == "tl" and t + dur > a.U:
            a.partial = a.U - t
            c = round(rng.uniform(58, 66), 2)
            a.hpc = (n, a.U, c)
            a.R = a.U + c + 1.4                                   # scontrol requeue -> the kill
            # the handler returns and the interrupted step goes on until SIGKILL (Lightning bypasses SIGTERM)
            tt, m, d = a.R, n + 1, dur - a.partial
            while tt + d < a.R + 30:
                a.extra.append((m, tt, d))
                tt, m, d = tt + d, m + 1, dur
            a.E = math.ceil(a.R + 31.0)
            return True
        if a.kind in ("net", "xid", "oom", "node", "preempt") and t + dur > a.kill_at:
            if a.kind == "preempt":
                a.R = float(a.kill_at)
                tt, m = t, n
                while tt + dur < a.R + 30:                       # Lightning bypasses SIGTERM
                    m += 1
                    a.extra.append((m, tt, dur))
                    tt += dur
                a.E = math.ceil(a.R + 31.5)
            else:
                a.R = math.floor(t + 0.5 * dur) + 0.37
                a.E = math.ceil(a.R + a.tail)
            return True
        if a.kind == "diverge" and n + 1 == a.nan_step:
            a.R = t + dur
            tt, m = t + dur, n + 1
            a.steps.append((n + 1, t, dur))
            while tt + dur < a.R + a.notice + 30:
                m += 1
                a.steps.append((m, tt, dur))
                tt += dur
            a.K = a.R + a.notice
            a.E = math.ceil(a.K + 31.0)
            return True
        a.steps.append((n + 1, t, dur))
        t += dur
        n += 1
        if n % SAVE_EVERY == 0:
            if a.kind == "lustre" and t > a.F + a.run_for:
                a.R = t
                a.failed_save = n
                a.E = math.ceil(t + a.tail)
                return True
            c = round(rng.uniform(62, 78), 2)
            if a.kind == "tl" and t + c > a.U - 5:
                return False
            if a.kind in ("net", "xid", "oom", "node", "preempt") and t + c > a.kill_at - 20:
                return False
            a.saves.append((n, t, c))
            t += c


def timeline(seed: int) -> list[Att]:
    rng = random.Random(f"{seed}-lit-timeline")
    base = HOSTS[:16]
    n3 = [h for h in base if h not in SWITCH_HOSTS] + ["pn017", "pn018", "pn019", "pn020"]
    n4 = [h if h != XID_HOST else "pn021" for h in n3]
    n9 = [h if h != NF_HOST else "pn022" for h in n4]
    R = rng.randint
    specs = [
        dict(k=1, nodes=base, kind="tl", mode="time_limit", host=None, gap=R(95, 160)),
        dict(k=2, nodes=base, kind="net", mode="network", host=None, run_for=5.1 * 3600 + R(0, 1800), tail=41,
             gap=3 * 3600 + R(0, 900)),
        dict(k=3, nodes=n3, kind="xid", mode="gpu_fell_off_bus", host=XID_HOST, run_for=7.3 * 3600 + R(0, 1800),
             tail=WATCHDOG + R(40, 70), gap=2400 + R(0, 600)),
        dict(k=4, nodes=n4, kind="preempt", mode="preemption", host=None, run_for=4.2 * 3600 + R(0, 1800),
             gap=4 * 3600 + R(0, 1200)),
        dict(k=5, nodes=n4, kind="oom", mode="host_oom", host=OOM_HOST, run_for=6.6 * 3600 + R(0, 1800), tail=47,
             gap=1500 + R(0, 400)),
        dict(k=6, nodes=n4, kind="lustre", mode="filesystem_io", host=None, run_for=3.4 * 3600 + R(0, 1800),
             tail=432 + R(0, 30), gap=2 * 3600 + R(0, 900)),
        dict(k=7, nodes=n4, kind="diverge", mode="loss_divergence", host=None, run_for=0, notice=2700 + R(0, 300),
             gap=2400 + R(0, 600)),
        dict(k=8, nodes=n4, kind="node", mode="node_failure", host=NF_HOST, run_for=9.2 * 3600 + R(0, 1800),
             tail=306 + R(0, 20), gap=R(150, 300)),
        dict(k=9, nodes=n9, kind="complete", mode=None, host=None, gap=None),
    ]
    atts = [Att(**s) for s in specs]
    global MAX_STEPS
    t, load = T0, 0
    for a in atts:
        if a.kind == "complete":                                  # the last launch must fit in its 24 h
            MAX_STEPS = (load // SAVE_EVERY + 16) * SAVE_EVERY
        a.S = float(t)
        a.load = load
        a.startup = R(150, 175) if a.k == 1 else R(230, 320)
        a.F = a.S + a.startup
        a.T = a.S + TIME_LIMIT
        a.U = a.T - 90
        if a.kind == "diverge":
            a.nan_step = (load // SAVE_EVERY + 3) * SAVE_EVERY + R(120, 240)
        tries = 0
        while True:
            if hasattr(a, "run_for"):
                a.kill_at = math.floor(a.F + a.run_for)
            if simulate(a, random.Random(f"{seed}-lit-steps-{a.k}-{tries}")):
                break
            tries += 1
            a.run_for = getattr(a, "run_for", 0) + 211
            if a.kind == "tl":
                a.startup += 37
                a.F = a.S + a.startup
        if a.kind == "tl":
            a.durable = a.hpc[0]
        elif a.kind == "diverge":
            a.durable = [n for n, _, _ in a.saves][-2]           # the team rolls back past the newest save
        elif a.saves:
            a.durable = a.saves[-1][0]
        else:
            a.durable = a.load
        load = a.durable
        if a.gap is not None:
            t = a.E + a.gap
    return atts


def ledger(atts: list[Att]):
    cats = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute", "hang",
                          "restart", "startup", "idle"], 0.0)
    per = []
    for i, a in enumerate(atts):
        cats["startup"] += a.F - a.S
        if a.kind == "complete":
            cats["productive"] += sum(d for _, _, d in a.steps)
            cats["checkpoint"] += sum(c for _, _, c in a.saves[:-1]) + (a.E - a.saves[-1][1])
            continue
        kept = [d for n, _, d in a.steps if n <= a.durable]
        ksaves = [c for n, _, c in a.saves if n <= a.durable]
        if a.kind == "tl":
            ksaves.append(a.hpc[2])
        prod, ck = sum(kept), sum(ksaves)
        rec = (a.R - a.F) - prod - ck
        hang = a.E - a.R
        nxt = atts[i + 1]
        cats["productive"] += prod
        cats["checkpoint"] += ck
        cats["recompute"] += rec
        cats["hang"] += hang
        cats["restart"] += nxt.S - a.E
        per.append(dict(hang=hang, recompute=rec, restart=nxt.S - a.E, startup=nxt.F - nxt.S))
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per])


# ----------------------------------------------------------------------------- the training log
def loss_at(a: Att, n: int, rng: random.Random) -> float:
    v = 1.32 + 0.95 * math.exp(-n / 14000.0) + rng.gauss(0, 0.02)
    if a.kind == "diverge" and n > a.durable:
        if n >= a.nan_step:
            return float("nan")
        v += 0.6 * ((n - a.durable) / 1000.0) ** 2 + abs(rng.gauss(0, 0.05 * (n - a.durable) / 1000.0))
    return v


def lr_at(a: Att, n: int) -> float:
    lr = 2e-5 * (0.5 + 0.5 * math.cos(math.pi * min(1.0, n / MAX_STEPS)))
    return lr * (0.5 if a.k >= 8 else 1.0)                    # the LR the team lowered after the divergence


def bar(a: Att, n: int, t: float, loss: float) -> str:
    ep, i = divmod(n, STEPS_PER_EPOCH)
    start_i = a.load - ep * STEPS_PER_EPOCH if a.load >= ep * STEPS_PER_EPOCH else 0
    t0 = a.F if a.load >= ep * STEPS_PER_EPOCH else a.epoch_start
    el = max(t - t0, 0.001)
    rate = (i - start_i) / el if i > start_i else 0.0
    frac = i / STEPS_PER_EPOCH
    full = int(frac * 10)
    part = " ▏▎▍▌▋▊▉"[int((frac * 10 - full) * 8)] if full < 10 else ""
    b = ("█" * full + part).ljust(10)
    rem = hms((STEPS_PER_EPOCH - i) / rate) if rate > 0 else "?"
    ls = "nan" if loss != loss else f"{loss:.3f}"
    return (f"\rEpoch {ep}: {int(frac * 100):3d}%|{b}| {i}/{STEPS_PER_EPOCH} [{hms(el)}<{rem}, {rate:5.2f}it/s, "
            f"v_num={a.k - 1}, train_loss={ls}]")


def ds(t: float, where: str, msg: str) -> str:
    return f"{ds_ts(t)} [INFO] [{where}] {msg}\n"


def save_lines(L: Sink, t: float, c: float, path: str) -> None:
    L.add(t + 0.01, ds(t + 0.01, "logging.py:128:log_dist",
                       "[Rank 0] [Torch] Checkpoint checkpoint is about to be saved!"))
    mp = f"{path}/checkpoint/mp_rank_00_model_states.pt"
    zp = f"{path}/checkpoint/zero_pp_rank_0_mp_rank_00_optim_states.pt"
    # (two milliseconds apart, as in the public DeepSpeed log this follows)
    L.add(t + 0.012, ds(t + 0.012, "logging.py:128:log_dist", f"[Rank 0] Saving model checkpoint: {mp}"))
    L.add(t + 0.013, ds(t + 0.013, "torch_checkpoint_engine.py:21:save", f"[Torch] Saving {mp}..."))
    if c is None:
        return
    L.add(t + 2.1, ds(t + 2.1, "torch_checkpoint_engine.py:23:save", f"[Torch] Saved {mp}."))
    L.add(t + 2.2, ds(t + 2.2, "torch_checkpoint_engine.py:21:save", f"[Torch] Saving {zp}..."))
    L.add(t + c - 0.3, ds(t + c - 0.3, "torch_checkpoint_engine.py:23:save", f"[Torch] Saved {zp}."))
    L.add(t + c - 0.2, ds(t + c - 0.2, "engine.py:3536:_save_zero_checkpoint", f"zero checkpoint saved {zp}"))
    L.add(t + c - 0.05, ds(t + c - 0.05, "torch_checkpoint_engine.py:33:commit",
                          "[Torch] Checkpoint checkpoint is ready now!"))


def ckpt_path(n: int) -> str:
    return f"{CKDIR}/epoch={n // STEPS_PER_EPOCH}-step={n}.ckpt"


def sigterm_lines(L: Sink, t: float, a: Att, rng: random.Random) -> None:
    order = list(range(GPUS))
    rng.shuffle(order)
    for j, r in enumerate(order):
        L.add(t + 0.002 * j, f"[rank: {r}] Received SIGTERM: 15\n")
        L.add(t + 0.002 * j + 0.0005, "Bypassing SIGTERM: 15\n")


def killed_lines(L: Sink, t: float, a: Att, what: str) -> None:
    for i, h in enumerate(a.nodes):
        L.add(t + 0.01 * i, f"srun: error: {h}: tasks {i * GPN}-{i * GPN + GPN - 1}: {what}\n")


def remote_error(L: Sink, t: float, a: Att, h: str, peer: str, rng: random.Random, pid: int) -> None:
    i = a.nodes.index(h)
    r = i * GPN + RAIL
    warn = (f"NET/IB : Got completion from peer {ip(peer)}<{rng.randint(40000, 60999)}> with status=12 opcode=0 "
            f"len=0 vendor err 129 (Recv) localGid fe80::a088:c203:{i:x}:{rng.randint(0, 0xffff):x} "
            f"remoteGids fe80::a088:c203:{a.nodes.index(peer) if peer in a.nodes else 99:x}:{rng.randint(0, 0xffff):x}")
    L.add(t, f"{h}:{pid}:{pid + 1873} [{RAIL}] transport/net_ib.cc:1696 NCCL WARN {warn}\n")
    msg = (f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: "
           f"NCCL error: remote process exited or there was a network error, NCCL version 2.21.5")
    L.add(t + 0.3, f"[rank{r}]:[{glog_c10(t + 0.3, rng)} ProcessGroupNCCL.cpp:1595] {msg}\n"
                   "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                   f"prematurely.\nLast error:\n{warn}\n")
    L.add(t + 0.31, f"terminate called after throwing an instance of 'c10::DistBackendError'\n  what():  {msg}\n")


SAVE_TB = [
    "Traceback (most recent call last):",
    '  File "/home/mlteam/lit13b/train.py", line 214, in <module>',
    '    trainer.fit(model, datamodule=dm, ckpt_path="last")',
    f'  File "{PY}/lightning/pytorch/trainer/trainer.py", line 561, in fit',
    "    call._call_and_handle_interrupt(",
    f'  File "{PY}/lightning/pytorch/loops/training_epoch_loop.py", line 318, in advance',
    '    call._call_callback_hooks(trainer, "on_train_batch_end", batch_output, batch, batch_idx)',
    f'  File "{PY}/lightning/pytorch/callbacks/model_checkpoint.py", line 317, in on_train_batch_end',
    "    self._save_topk_checkpoint(trainer, monitor_candidates)",
    f'  File "{PY}/lightning/pytorch/strategies/deepspeed.py", line 640, in save_checkpoint',
    '    self.deepspeed_engine.save_checkpoint(filepath, client_state=checkpoint, tag="checkpoint")',
    f'  File "{PY}/deepspeed/runtime/engine.py", line 3286, in save_checkpoint',
    "    self._save_zero_checkpoint(save_dir, tag)",
    f'  File "{PY}/deepspeed/runtime/checkpoint_engine/torch_checkpoint_engine.py", line 22, in save',
    "    torch.save(state_dict, path)",
    f'  File "{PY}/torch/serialization.py", line 944, in save',
    "    _save(",
    "OSError: [Errno 5] Input/output error",
]


def train_log(atts: list[Att], seed: int) -> str:
    L = Sink()
    rng = random.Random(f"{seed}-lit-out")
    warn = (f"{PY}/lightning/pytorch/trainer/connectors/data_connector.py:424: The 'train_dataloader' does not have "
            "many workers which may be a bottleneck. Consider increasing the value of the `num_workers` argument` "
            "to `num_workers=15` in the `DataLoader` to improve performance.")
    for a in atts:
        S, F = a.S, a.F
        lr = random.Random(f"{seed}-lit-loss-{a.k}")
        L.add(S + 0.5, f"START TIME: {date_cmd(S + 0.5)}\n")
        L.add(S + 0.6, f"SLURM_JOB_ID={JOB} SLURM_RESTART_COUNT={a.k - 1} SLURM_JOB_NODELIST={hostlist(a.nodes)}\n")
        t = S + 31
        L.add(t, "GPU available: True (cuda), used: True\nTPU available: False, using: 0 TPU cores\n")
        order = list(range(GPUS))
        rng.shuffle(order)
        for j, r in enumerate(order):
            L.add(t + 4 + 0.01 * j, f"Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/{GPUS}\n")
        L.add(t + 9, "-" * 100 + "\ndistributed_backend=nccl\n"
                     f"All distributed processes registered. Starting with {GPUS} processes\n" + "-" * 100 + "\n\n")
        for j, r in enumerate(order):
            L.add(t + 10 + 0.01 * j, f"LOCAL_RANK: {r % GPN} - CUDA_VISIBLE_DEVICES: [0,1,2,3,4,5,6,7]\n")
        L.add(t + 14, ds(t + 14, "logging.py:128:log_dist",
                         "[Rank 0] DeepSpeed info: version=0.15.4, git-hash=unknown, git-branch=unknown"))
        L.add(t + 15, ds(t + 15, "config.py:733:__init__", "Config mesh_device None world_size = 128"))
        ld = F - 20
        if a.k > 1:
            prev = atts[a.k - 2]
            path = f"{ROOTDIR}/hpc_ckpt_1.ckpt" if prev.kind == "tl" else ckpt_path(a.load)
            L.add(t + 40, f"Restoring states from the checkpoint path at {path}\n")
            L.add(t + 41, ds(t + 41, "torch_checkpoint_engine.py:27:load",
                              f"[Torch] Loading checkpoint from {path}/checkpoint/mp_rank_00_model_states.pt..."))
            L.add(ld - 2, ds(ld - 2, "torch_checkpoint_engine.py:29:load",
                              f"[Torch] Loaded checkpoint from {path}/checkpoint/mp_rank_00_model_states.pt."))
            L.add(ld, f"Restored all states from the checkpoint at {path}\n")
        L.add(ld + 1, "\n  | Name  | Type             | Params | Mode \n" + "-" * 49 + "\n"
                      "0 | model | LlamaForCausalLM | 13.0 B | train\n" + "-" * 49 + "\n"
                      "13.0 B    Trainable params\n0         Non-trainable params\n13.0 B    Total params\n"
                      "52,063.457Total estimated model params size (MB)\n1         Modules in train mode\n"
                      "0         Modules in eval mode\n")
        L.add(ld + 2, warn + "\n")
        # steps: progress bar chunks (no newline), DeepSpeed lines every 10 steps, the Lightning save lines
        a.epoch_start = F
        steps = a.steps + a.extra
        first = steps[0][0] if steps else a.load + 1
        for n, st, d in steps:
            end = st + d
            if n % STEPS_PER_EPOCH == 1 and n > 1:
                a.epoch_start = st
            loss = loss_at(a, n, lr)
            if n % BAR_EVERY == 0 or n == first:
                L.add(end, bar(a, n, end, loss))
            if n % DS_PRINT == 0:
                L.add(end + 0.001, ds(end + 0.001, "logging.py:128:log_dist",
                                      f"[Rank 0] step={n}, skipped=0, lr=[{lr_at(a, n):.10e}], mom=[(0.9, 0.95)]"))
            m = n - a.load
            if m % DS_PRINT == 0 and m > 0:
                L.add(end + 0.002, ds(end + 0.002, "timer.py:264:stop",
                                      f"epoch=0/micro_step={m}/global_step={m}, RunningAvgSamplesPerSec="
                                      f"{GBS / BASE_STEP * (1 + lr.uniform(-0.004, 0.004)):.12f}, CurrSamplesPerSec="
                                      f"{GBS / d:.12f}, MemAllocated=38.71GB, MaxMemAllocated=61.94GB"))
        for n, st, c in a.saves:
            save_lines(L, st, c, ckpt_path(n))
        end_of_attempt(L, a, rng)
    return L.text()


def end_of_attempt(L: Sink, a: Att, rng: random.Random) -> None:
    R, E = a.R, a.E
    step_id = f"{JOB}.{a.k - 1}"
    if a.kind == "tl":
        n, U, c = a.hpc
        L.add(U + 0.02, "Handling auto-requeue signal: 10\n")
        save_lines(L, U + 0.05, c - 0.1, f"{ROOTDIR}/hpc_ckpt_1.ckpt")
        L.add(U + c + 0.4, f"requeing job {JOB}...\n")
        L.add(U + c + 1.3, f"Requeued SLURM job: {JOB}\n")
    if a.kind in ("tl", "preempt"):
        L.add(R + 0.01, f"slurmstepd: error: *** JOB {JOB} ON {a.nodes[0]} CANCELLED AT {slurm_ts(R)} DUE TO JOB "
                        f"REQUEUE ***\n")
        L.add(R + 0.05, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n")
        sigterm_lines(L, R + 0.2, a, rng)
        killed_lines(L, R + 30.3, a, "Killed")
    elif a.kind == "diverge":
        K = a.K
        L.add(K + 0.01, f"slurmstepd: error: *** JOB {JOB} ON {a.nodes[0]} CANCELLED AT {slurm_ts(K)} DUE TO JOB "
                        f"REQUEUE ***\n")
        L.add(K + 0.05, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n")
        sigterm_lines(L, K + 0.2, a, rng)
        killed_lines(L, K + 30.3, a, "Killed")
    elif a.kind == "net":
        talk = SWITCH_HOSTS + ["pn004", "pn009"]
        for j, h in enumerate(talk):
            peer = h if h in SWITCH_HOSTS else ("pn005" if h == "pn004" else "pn008")
            peer = {"pn005": "pn006", "pn006": "pn007", "pn007": "pn008", "pn008": "pn009"}.get(peer, peer) \
                if h in SWITCH_HOSTS else peer
            remote_error(L, R + 8.2 + 0.17 * j, a, h, peer, rng, 200000 + 977 * j)
        for j, h in enumerate(talk):
            i = a.nodes.index(h)
            L.add(R + 12 + 0.1 * j, f"srun: error: {h}: task {i * GPN + RAIL}: Aborted (core dumped)\n")
        fail_tail(L, a, R + 12.8, step_id, skip=talk)
    elif a.kind == "xid":
        dead = a.nodes.index(XID_HOST) * GPN + 2
        seq = 412000 + rng.randint(0, 9000)
        for r in range(GPUS):
            if r == dead:
                continue
            tw = R + WATCHDOG + rng.uniform(0.05, 1.5)
            wd = (f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
                  f"OpType=_ALLGATHER_BASE, NumelIn=6553600, NumelOut=838860800, Timeout(ms)=1800000) ran for "
                  f"{1800000 + rng.randint(20, 1400)} milliseconds before timing out.")
            L.add(tw, f"[rank{r}]:[{glog_c10(tw, rng)} ProcessGroupNCCL.cpp:616] {wd}\n"
                      f"[rank{r}]:[{glog_c10(tw + 0.002, rng)} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID "
                      f"0(default_pg) Rank {r}] Exception (either an error or timeout) detected by watchdog at work: "
                      f"{seq}, last enqueued NCCL work: {seq + 1}, last completed NCCL work: {seq - 1}.\n")
        tf = R + WATCHDOG + 3
        for i, h in enumerate(a.nodes):
            if h != XID_HOST:
                L.add(tf + 0.05 * i, f"srun: error: {h}: tasks {i * GPN}-{i * GPN + GPN - 1}: Aborted (core dumped)\n")
        fail_tail(L, a, tf + 1.5, step_id, skip=[h for h in a.nodes if h != XID_HOST])
    elif a.kind == "oom":
        i = a.nodes.index(OOM_HOST)
        r = i * GPN + 5
        L.add(R + 1.0, f"slurmstepd: error: Detected 1 oom_kill event in StepId={step_id}. Some of the step tasks "
                       f"have been OOM Killed.\n")
        L.add(R + 1.1, f"srun: error: {OOM_HOST}: task {r}: Out Of Memory\n")
        L.add(R + 1.2, f"srun: Terminating StepId={step_id}\n")
        L.add(R + 1.3, f"slurmstepd: error: *** STEP {step_id} ON {a.nodes[0]} CANCELLED AT {slurm_ts(R + 1.3)} ***\n")
        sigterm_lines(L, R + 1.5, a, rng)
        for j, h in enumerate([a.nodes[i - 1], a.nodes[i + 1]]):
            remote_error(L, R + 7.5 + 0.4 * j, a, h, OOM_HOST, rng, 300000 + 555 * j)
        killed_lines(L, R + 32.0, a, "Killed")
    elif a.kind == "lustre":
        n = a.failed_save
        save_lines(L, R, None, ckpt_path(n))
        for j, h in enumerate(LUSTRE_HOSTS):
            r = a.nodes.index(h) * GPN
            tt = a.E - 14 + 0.3 * j
            L.add(tt, "".join(f"[rank{r}]: {x}\n" for x in SAVE_TB))
        for j, h in enumerate(LUSTRE_HOSTS):
            L.add(a.E - 12 + 0.05 * j, f"srun: error: {h}: task {a.nodes.index(h) * GPN}: Exited with exit code 1\n")
        fail_tail(L, a, a.E - 11.5, step_id, skip=LUSTRE_HOSTS)
    elif a.kind == "node":
        L.add(E - 32.5, f"slurmstepd: error: *** JOB {JOB} ON {a.nodes[0]} CANCELLED AT {slurm_ts(E - 32.5)} DUE TO "
                        f"NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n")
        L.add(E - 32.4, f"srun: error: Node failure on {NF_HOST}\n")
        L.add(E - 32.3, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n")
        sigterm_lines(L, E - 32.0, a, rng)
        killed_lines(L, E - 1.2, a, "Killed")
    else:
        L.add(E - 4.0, f"`Trainer.fit` stopped: `max_steps={MAX_STEPS}` reached.\n")


def fail_tail(L: Sink, a: Att, t: float, step_id: str, skip: list[str]) -> None:
    L.add(t, f"srun: Terminating StepId={step_id}\n")
    L.add(t + 0.2, f"slurmstepd: error: *** STEP {step_id} ON {a.nodes[0]} CANCELLED AT {slurm_ts(t + 0.2)} ***\n")
    for i, h in enumerate(a.nodes):
        if h not in skip:
            L.add(a.E - 1.5 + 0.01 * i, f"srun: error: {h}: tasks {i * GPN}-{i * GPN + GPN - 1}: Terminated\n")
    L.add(a.E - 0.5, f"srun: Force Terminated StepId={step_id}\n")


def metrics_csv(a: Att, seed: int) -> str:
    lr = random.Random(f"{seed}-lit-loss-{a.k}")
    rows = ["epoch,step,train_loss,lr-AdamW"]
    for n, _, _ in a.steps + a.extra:
        loss = loss_at(a, n, lr)
        if n % LOG_EVERY == 0:
            rows.append(f"{n // STEPS_PER_EPOCH},{n - 1},{'nan' if loss != loss else f'{loss:.6f}'},"
                        f"{lr_at(a, n):.10e}")
    return "\n".join(rows) + "\n"


# ----------------------------------------------------------------------------- kernel logs
def short_iso(t: float) -> str:
    return f"{dt(t):%Y-%m-%dT%H:%M:%S}+00:00"


def dmesg_T(t: float) -> str:
    d = dt(t)
    return f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}]"


def xid13(pci: str, rng: random.Random) -> list[str]:
    g, tp = rng.randint(0, 7), rng.randint(0, 8)
    return [f"NVRM: Xid (PCI:{pci}): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC {g}, "
            f"TPC {tp}, SM 1): Out Of Range Address",
            f"NVRM: Xid (PCI:{pci}): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x50{g}e48=0x10000e "
            f"0x50{g}e50=0x20 0x50{g}e44=0xd3eff2 0x50{g}e4c=0x17f"]


def kernel_logs(atts: list[Att], seed: int, bundle: Path) -> None:
    rng = random.Random(f"{seed}-lit-kern")
    t_end = atts[-1].E + 1800
    a2, a3, a5, a6, a8 = atts[1], atts[2], atts[4], atts[5], atts[7]
    for h in HOSTS:
        boot = T0 - rng.randint(2 * 86400, 6 * 86400)
        ev: list[tuple[float, str]] = [
            (boot, "Linux version 6.5.0-1024-nvidia (buildd@lcy02-amd64-061) (x86_64-linux-gnu-gcc-12) #25-Ubuntu SMP"),
            (boot + 21.3, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024")]
        ev += [(boot + 34 + 0.01 * k, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: Link up") for k in range(GPN)]
        t = boot + rng.uniform(3600, 20000)
        while t < t_end:
            ev.append((t, rng.choice(["perf: interrupt took too long (2503 > 2500), lowering "
                                      "kernel.perf_event_max_sample_rate to 79750",
                                      f"docker0: port 1(veth{rng.getrandbits(24):06x}) entered disabled state",
                                      f"kauditd_printk_skb: {rng.randint(3, 30)} callbacks suppressed"])))
            t += rng.uniform(4000, 30000)
        osc = f"{OST}-osc-ffff{rng.getrandbits(32):08x}c000"
        if h in SWITCH_HOSTS:                                     # the rail-4 leaf switch dies
            off = rng.uniform(0.0, 0.6)
            ev += [(a2.R + off, f"mlx5_core {NIC_PCI[RAIL]} {NIC_IF[RAIL]}: Link down"),
                   (a2.R + 3 * 3600 + off, f"mlx5_core {NIC_PCI[RAIL]} {NIC_IF[RAIL]}: Link up")]
        if h == XID_HOST:
            pci = f"0000:{BUS[2]}:00"
            ev += [(a3.R, f"NVRM: GPU at PCI:{pci}: GPU-5e1f0c2a-8d3b-4f61-9a07-{rng.getrandbits(48):012x}"),
                   (a3.R, f"NVRM: Xid (PCI:{pci}): 79, pid={rng.randint(90000, 200000)}, name=pt_main_thread, GPU has "
                          f"fallen off the bus."),
                   (a3.R, f"NVRM: GPU {pci}.0: GPU has fallen off the bus."),
                   (a3.R + 1, f"NVRM: Xid (PCI:{pci}): 154, GPU recovery action changed from 0x0 (None) to 0x2 "
                              f"(Node Reboot Required)")]
        if h == XID13_HOST:                                       # another user's job, not ours
            ev += [(a3.F + 5400, m) for m in xid13(f"0000:{BUS[6]}:00", rng)]
        if h == OOM_HOST:
            pid = rng.randint(100000, 400000)
            R = a5.R
            ev += [(R - 0.4, "pt_main_thread invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), "
                             "order=0, oom_score_adj=0"),
                   (R - 0.3, f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,"
                             f"global_oom,task_memcg=/system.slice/slurmstepd.scope/job_{JOB}/step_{a5.k - 1}/user/"
                             f"task_5,task=pt_main_thread,pid={pid},uid=1207"),
                   (R, f"Out of memory: Killed process {pid} (pt_main_thread) total-vm:1123418364kB, "
                       f"anon-rss:1712303220kB, file-rss:524288kB, shmem-rss:0kB, UID:1207 pgtables:3433120kB "
                       f"oom_score_adj:0"),
                   (R + 2.6, f"oom_reaper: reaped process {pid} (pt_main_thread), now anon-rss:0kB, file-rss:0kB, "
                             f"shmem-rss:0kB")]
        if h in LUSTRE_HOSTS:
            R = a6.R
            o = rng.uniform(30, 45)
            ev += [(R + o, f"LustreError: 11-0: {osc}: operation ost_write to node {OSS_NID} failed: rc = -107"),
                   (R + o, f"Lustre: {osc}: Connection to {OST} (at {OSS_NID}) was lost; in progress operations "
                           f"using this service will wait for recovery to complete"),
                   (R + 398 + o / 10, f"LustreError: 167-0: {osc}: This client was evicted by {OST}; in progress "
                                      f"operations using this service will fail."),
                   (a6.E + 1300 + o, f"Lustre: {osc}: Connection restored to {OST} (at {OSS_NID})")]
        if h == BLIP_HOST:                                        # a blip the run steps past
            tb = a8.F + 0.35 * (a8.R - a8.F)
            ev += [(tb, f"Lustre: {osc}: Connection to {OST} (at {OSS_NID}) was lost; in progress operations "
                        f"using this service will wait for recovery to complete"),
                   (tb + 7, f"Lustre: {osc}: Connection restored to {OST} (at {OSS_NID})")]
        if h == NF_HOST:                                          # dead: nothing after its last breath
            ev = [(t, m) for t, m in ev if t < a8.R - 40]
        ev.sort(key=lambda x: x[0])
        if int(h[2:]) <= 12:
            body = "".join(f"{short_iso(t)} {h} kernel: {m}\n" for t, m in ev)
            write(bundle / "nodes" / h / "kern.log", body)
        else:
            body = "".join(f"{dmesg_T(t)} {m}\n" for t, m in ev)
            write(bundle / "nodes" / h / "dmesg.log", body)
    # the benign NCCL WARN (printed into the job's .out by the rank on pn010): returned for train_log's caller


# ----------------------------------------------------------------------------- scheduler
STATE = {"tl": ("REQUEUED", "0:0", "CANCELLED", "0:15"), "net": ("FAILED", "1:0", "FAILED", "1:0"),
         "xid": ("FAILED", "1:0", "FAILED", "6:0"), "preempt": ("PREEMPTED", "0:0", "CANCELLED", "0:15"),
         "oom": ("OUT_OF_MEMORY", "0:125", "OUT_OF_MEMORY", "0:125"), "lustre": ("FAILED", "1:0", "FAILED", "1:0"),
         "diverge": ("REQUEUED", "0:0", "CANCELLED", "0:15"), "node": ("NODE_FAIL", "0:0", "CANCELLED", "0:9"),
         "complete": ("COMPLETED", "0:0", "COMPLETED", "0:0")}


def scheduler(atts: list[Att], seed: int, bundle: Path) -> None:
    rng = random.Random(f"{seed}-lit-sched")
    L = Sink()

    def add(t: float, m: str) -> None:
        L.add(t, f"{ctld(t)} {m}\n")

    rows = ["JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"]
    sub = atts[0].S - 41
    add(sub + 0.3, f"_slurm_rpc_submit_batch_job: JobId={JOB} InitPrio=10{rng.randint(1000, 9999)} usec=611")
    for a in atts:
        hl, cpus = hostlist(a.nodes), 192 * len(a.nodes)
        add(a.S + 0.02, f"sched: Allocate JobId={JOB} NodeList={hl} #CPUs={cpus} Partition=gpu")
        st, ec, sst, sec = STATE[a.kind]
        if a.kind == "preempt":
            add(a.R - 0.6, f"_slurm_rpc_submit_batch_job: JobId={PREEMPTOR} InitPrio=4294{rng.randint(100000, 999999)} "
                           f"usec=402")
            add(a.R + 0.003, f"preempted JobId={JOB} has been requeued to reclaim resources for JobId={PREEMPTOR}")
            add(a.E + 4.1, f"sched: Allocate JobId={PREEMPTOR} NodeList={hl} #CPUs={cpus} Partition=priority")
            pend = atts[a.k].S - 300
            add(pend, f"_job_complete: JobId={PREEMPTOR} WEXITSTATUS 0")
            add(pend + 0.01, f"_job_complete: JobId={PREEMPTOR} done")
            rows.append(f"{PREEMPTOR}|eval-70b|priority|evalteam|{cpus}|COMPLETED|0:0|{slurm_ts(a.R - 0.6)}|"
                        f"{slurm_ts(a.E + 4.1)}|{slurm_ts(pend)}|{elapsed(pend - a.E - 4.1)}|16|{hl}")
        elif a.kind == "node":
            add(a.R + 281.4, f"error: Nodes {NF_HOST} not responding")
            add(a.E - 33.0, f"error: Nodes {NF_HOST} not responding, setting DOWN")
            add(a.E - 32.9, f"Killing JobId={JOB} on failed node {NF_HOST}")
        elif a.kind in ("net", "xid", "lustre", "complete"):
            add(a.E + 0.2, f"_job_complete: JobId={JOB} WEXITSTATUS {0 if a.kind == 'complete' else 1}")
            if a.kind == "complete":
                add(a.E + 0.21, f"_job_complete: JobId={JOB} done")
        elif a.kind == "oom":
            add(a.E + 0.2, f"_job_complete: JobId={JOB} OOM failure")
        if a.kind == "net":
            for h in SWITCH_HOSTS:
                add(a.E + 1500 + 0.1 * int(h[2:]), f"update_node: node {h} reason set to: IB rail4 leaf down, "
                                                    f"ticket PC-5521")
                add(a.E + 1500.05 + 0.1 * int(h[2:]), f"update_node: node {h} state set to DRAINED")
        if a.kind == "xid":
            add(a.E + 900, f"update_node: node {XID_HOST} reason set to: xid79 gpu2")
            add(a.E + 900.01, f"update_node: node {XID_HOST} state set to DRAINED")
        rows.append(f"{JOB}|lit13b-sft|gpu|mlteam|{cpus}|{st}|{ec}|{slurm_ts(sub)}|{slurm_ts(a.S)}|{slurm_ts(a.E)}|"
                    f"{elapsed(a.E - a.S)}|{len(a.nodes)}|{hl}")
        rows.append(f"{JOB}.batch|batch||mlteam|192|{sst}|{sec}|{slurm_ts(a.S)}|{slurm_ts(a.S)}|{slurm_ts(a.E)}|"
                    f"{elapsed(a.E - a.S)}|1|{a.nodes[0]}")
        rows.append(f"{JOB}.{a.k - 1}|python||mlteam|{cpus}|{sst}|{sec}|{slurm_ts(a.S + 2)}|{slurm_ts(a.S + 2)}|"
                    f"{slurm_ts(a.E)}|{elapsed(a.E - a.S - 2)}|{len(a.nodes)}|{hl}")
    a3 = atts[2]                                                  # another user's job on the host with the Xid 13
    o_s, o_e = a3.F + 3000, a3.F + 9000
    add(o_s, f"sched: Allocate JobId=735120 NodeList={XID13_HOST} #CPUs=192 Partition=gpu")
    add(o_e, "_job_complete: JobId=735120 WEXITSTATUS 0")
    rows.append(f"735120|sweep-lr|gpu|visionlab|192|COMPLETED|0:0|{slurm_ts(o_s - 60)}|{slurm_ts(o_s)}|"
                f"{slurm_ts(o_e)}|{elapsed(o_e - o_s)}|1|{XID13_HOST}")
    write(bundle / "scheduler" / "slurmctld.log", L.text())
    write(bundle / "scheduler" / "sacct.txt", "\n".join(rows) + "\n")


def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts = timeline(seed)
    write(bundle / "inventory.toml", f"""[providers.{PROVIDER}]
usd_per_gpu_hour = 2.39

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = {GPN}
interconnect = "InfiniBand NDR 8x400G, rail-optimised"
nodes = "pn[001-024]"
""")
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", f"""# {RUN}: 13B decoder fine-tune, PyTorch Lightning + DeepSpeed ZeRO-3
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.3e}
checkpoint_dir = "{CKDIR}"
launcher = "slurm"
launch_command = "{LAUNCH}"
""")
    out_text = train_log(atts, seed)
    # the benign async-event WARN from the rank on pn010 in attempt 5 (an SM client re-registration)
    a5 = atts[4]
    tw = a5.F + 0.3 * (a5.R - a5.F)
    line = f"{WARN_HOST}:188231:188990 [5] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_9:1 Got async event : " \
           f"client reregistration\n"
    out_text = out_text.replace(f"{ds_ts(tw - tw % 1)}", f"{ds_ts(tw - tw % 1)}", 1)
    idx = _index_after(out_text, tw)
    out_text = out_text[:idx] + line + out_text[idx:]
    write(rdir / f"slurm-{JOB}.out", out_text)
    for a in atts:
        write(rdir / "lightning_logs" / f"version_{a.k - 1}" / "metrics.csv", metrics_csv(a, seed))
        write(rdir / "lightning_logs" / f"version_{a.k - 1}" / "hparams.yaml",
              f"lr: {lr_at(a, 0):.1e}\nwarmup_steps: 500\nmax_steps: {MAX_STEPS}\n")
    kernel_logs(atts, seed, bundle)
    scheduler(atts, seed, bundle)
    cats, total, per = ledger(atts)
    incidents = []
    for j, a in enumerate(atts[:-1]):
        incidents.append({"id": j + 1, "attempt": a.k, "attempts": [a.k], "failure_mode": a.mode, "host": a.host,
                          "root_ts": datetime.fromtimestamp(a.R, UTC).isoformat(), "gpu_hours": per[j],
                          "gpu_hours_lost": round(sum(per[j].values()), 4)})
    i5 = atts[4].nodes.index(OOM_HOST)
    decoys = {XID13_HOST: "Xid 13 on a node running another user's job, not ours",
              WARN_HOST: "NCCL WARN 'Got async event : client reregistration'; harmless",
              BLIP_HOST: "Lustre connection lost/restored in 7 s during attempt 8; training stepped on",
              **{h: "host behind the dead rail-4 leaf switch: its link loss is a symptom of the switch"
                 for h in SWITCH_HOSTS},
              "pn004": "rail peer of the switch hosts: its NET/IB errors are symptoms",
              "pn009": "rail peer of the switch hosts and a Lustre symptom host",
              atts[4].nodes[i5 - 1]: "rail peer of the OOM-killed rank: NET/IB errors are symptoms",
              atts[4].nodes[i5 + 1]: "rail peer of the OOM-killed rank: NET/IB errors are symptoms",
              **{h: f"lost {OST} then evicted during attempt 6: the cause is the OST" for h in LUSTRE_HOSTS
                 if h != "pn009"}}
    a7 = atts[6]
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "match_on_attempt": True,
        "attempts": [{"attempt": a.k, "nodes": hostlist(a.nodes), "start": a.S, "first_step": a.F, "exit": a.E,
                      "loaded_step": a.load, "last_step": (a.steps[-1][0] if a.steps else a.load),
                      "saves": [n for n, _, _ in a.saves], "end": a.kind} for a in atts],
        "incidents": incidents,
        "forbidden_incidents": [
            {"failure_mode": "checkpoint_lost", "reason": "attempt 8 loads the save before the newest on purpose "
                                                          "(a rollback after the divergence), nothing was lost"},
            {"failure_mode": "loss_divergence", "attempts": [8, 9], "reason": "the loss is sane after the rollback"}],
        "rollback": {"attempt": 8, "loaded_step": a7.durable, "newest_save": a7.saves[-1][0]},
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys, "hardware_modes": HW,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incidents), 4)},
        "notes": "host null (time limit, shared switch, preemption, Lustre OST, divergence) matches any host.",
    }
    write(out / "truth.json", json.dumps(truth, indent=2) + "\n")
    return truth


def _index_after(text: str, t: float) -> int:
    """Offset of the first DeepSpeed-stamped line at or after t (the WARN goes just before it)."""
    key = ds_ts(t)[:20]                                           # "[YYYY-mm-dd HH:MM:SS" to the second
    for sec in range(0, 120):
        k = ds_ts(math.floor(t) + sec)[:20]
        i = text.find("\n" + k)
        if i >= 0:
            return i + 1
    return text.find(key)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261109)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    files = [p for p in (out / "bundle").rglob("*") if p.is_file()]
    print(f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB); "
          f"total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
