#!/usr/bin/env python3
"""Campaign `sdc_rollbacks`: a long torchtitan pretraining run whose losses are numbers going wrong and rollbacks.

Written in the outsiders' shape (../shared/evidence/scenarios/campaign2.py) BEFORE its author read clusterlab's
analysis code: standard library only, deterministic per --seed, `--out DIR --seed N` writes DIR/bundle/... and
DIR/truth.json (incidents with failure mode, host and attempt; decoys; forbidden incidents; the expected ledger).

Run "sdc-titan-70b": Llama-3-70B-shaped model, torchtitan FSDP (dp_shard 10) x TP 8 on 10 nodes x 8 H100-SXM = 80
GPUs of cluster hx-west (provider helix; 13 nodes in the inventory: hx-gpu-011/012 are spares, hx-gpu-013 never
runs the job). One `sbatch` per attempt (`srun torchrun ... -m torchtitan.train`), so every attempt is its own
Slurm job with its own slurm-<jobid>.out; per-rank step records (JSONL, DESIGN.md's fields, one file per rank,
gzip) are written by the job's instrumentation in attempts 3 and 6; nvidia-smi -q snapshots a node-health cron
took during attempt 3. All clocks UTC. Hosts, GPUs, times and two story variants depend on --seed.

  attempt 1  fresh start; healthy for ~3 h (decoys: a one-log-line loss spike the run recovers from, PyTorch's
             clip_grad_norm_ FutureWarning on one rank); then Xid 48 (DBE) + Xid 63 (row marked for remapping) on
             host Y GPU g; that rank dies with "CUDA error: uncorrectable ECC error encountered"; torchrun's
             ChildFailedError names Y and the rank; srun kills the step          [gpu_memory_ecc, Y, attempt 1]
  attempt 2  the operator resets the GPU and relaunches on the same nodes; the same GPU dies at init (Xid 48 +
             Xid 64 "All reserved rows for bank are remapped"; the rank fails building the model, before any step)
                                                                                [gpu_memory_ecc, Y, attempt 2]
  attempt 3  Y drained, spare hx-gpu-011 in. One GPU of host Z runs 6-8 % slower the whole attempt (SW/HW thermal
             slowdown in nvidia-smi -q); every rank's step time follows it (synchronous training), per-rank
             compute_s names it. The 2 h 30 min TIME LIMIT ends the attempt (never inside a save)
             [gpu_throttle, Z, attempt 3 (variant without the nvidia-smi evidence: straggler)] + [time_limit, any, 3]
  attempt 4  resumes from the newest checkpoint (step-S, saved in attempt 3): the load fails, a shard of step-S is
             missing on the checkpoint store (torch.distributed.checkpoint CheckpointException with FileNotFoundError
             for __<r>_0.distcp). The checkpoint recorded as saved is lost; its cost is the redone steps
                                                                                 [checkpoint_lost, any, attempt 4]
  attempt 5  the operator falls back to step-(S-interval) (--checkpoint.load_step). Training runs; then grad-norm
             spikes and the loss climbs and never comes back (no NaN, no 3x jump); the operator scancels it
                                                                                 [loss_divergence, any, attempt 5]
  attempt 6  deliberate rollback to an OLDER checkpoint (two saves before the divergence onset, not the newest)
             with a lower learning rate (--optimizer.lr). Not a lost checkpoint. Later the 8 ranks of host W (one TP
             group) report a non-finite loss on one step while every other rank is finite; from the next step the
             weights are NaN everywhere (the update used a NaN grad norm). Variant: a periodic save lands after the
             onset (a poisoned checkpoint). The operator scancels the job         [silent_data_corruption, W, 6]
  attempt 7  W drained, spare hx-gpu-012 in; the operator rolls back past the poisoned checkpoint to the last save
             before the onset (--checkpoint.load_step); validation every 500 steps, one validation loss prints
             `inf` (a logging-only metric); completes with the final full save.
  Decoys: host C (the rank printing the clip warning), host D (nvidia-smi -q shows a volatile DRAM Correctable ECC
  count); the loss spike of attempt 1; the `inf` validation loss of attempt 7.
  Forbidden incidents: loss_divergence outside attempt 5 (a self-healed spike; SDC is one host's numbers, not the
  model's), checkpoint_lost in attempts 5-7 (deliberate rollbacks), manual_stop in attempts 5-6 (the operator
  stopped a job that was already lost), silent_data_corruption in attempt 5 (every rank diverged together).

Ledger (truth.json expected_ledger, GPU-hours = 80 GPUs x seconds / 3600), campaign1/campaign2 conventions:
  startup    = attempt start (sacct Start) -> first step start ("Training starts at step"); an attempt that never
               steps: start -> root event
  productive = kept steps (step <= the step the next attempt resumes from; all steps of the completed attempt), whole
               step durations; in the straggler attempt only the 10.2 s baseline per kept step
  straggler  = kept steps' time above the baseline in the straggler attempt
  checkpoint = saves that finished before the attempt's root event, kept or not (a checkpoint later rolled back past
               or lost too), plus the tail after the final save: the project's convention (bloom_opt.py, nemo_ft.py,
               clusterlab's ledger); campaign1's "save stalls of kept checkpoints" never meets an unkept finished save
  recompute  = end of the save the next attempt resumes from (or the attempt's first step start) -> root event,
               less the finished saves in it
  hang       = root event -> attempt exit (sacct End). Root events: the Xid 48, the init failure, the time-limit
               kill, the load exception, the divergence onset (start of the first logged step whose grad norm and loss
               show it: torchtitan logs one step's values every 10 steps, the steps between are not seen),
               the SDC onset (start of the first step with a non-finite loss on W)
  restart    = attempt exit -> next attempt start;  slowdown = data_stall = idle = 0

Formats (looked up with the search tools; the text here is written anew):
  * torchtitan (pytorch/torchtitan components/metrics.py log()/log_validation(), components/checkpoint.py, train.py):
    "[titan] %(asctime)s - root - INFO - ", "step: {step:2}  loss: {loss:8.5f}  grad_norm: {gn:7.4f}  memory:
    {gib:5.2f}GiB({pct:.2f}%)  tps: {tps:,}  tflops: {tf:,.2f}  mfu: {mfu:.2f}%", "validate step: {step:2}  loss:
    {loss:7.4f}  memory: ...  tps: ...", "Loading the checkpoint from DIR/step-N.", "Finished loading the checkpoint
    in X seconds.", "Saving the checkpoint.", "Finished saving the checkpoint in X seconds.", "Training starts at step
    N", "Saving a full checkpoint at last step, step N.", "Training completed"; --checkpoint.load_step and
    --optimizer.lr are torchtitan job-config options; the "[rank0]:" prefix of torchrun --tee/--local-ranks-filter.
  * torch.distributed.checkpoint load failure: "CheckpointException ranks:dict_keys([...])" then "Traceback (most
    recent call last): (RANK r)" blocks (pytorch/pytorch #86483, RLinf/RLinf #655, JinjieNi/dlms #4), filesystem
    reader's FileNotFoundError "[Errno 2] No such file or directory: '.../__r_0.distcp'" (DCP shard names: composer
    tests, pytorch DCP docs).
  * NVRM Xid 48 "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x...
    partition p, subpartition s." and "48, pid=P, name=python3, channel 0x..", Xid 63 "Row Remapper: New row
    (0x...) marked for remapping, reset gpu to activate.", Xid 154 "GPU recovery action changed from 0x0 (None) to
    0x4 (Drain and Reset)" (public post-mortem of a DBE, journalctl -k; NVIDIA/gpu-operator #1146), Xid 64 "Row
    Remapper Error: (0x...) - All reserved rows for bank are remapped" (a public Xid parser's doctest).
  * "RuntimeError: CUDA error: uncorrectable ECC error encountered" + "CUDA kernel errors might be asynchronously
    reported..." (public logs, campaign1.py); torchelastic ChildFailedError block with error_file/traceback.
  * nvidia-smi -q (driver 535+ "Clocks Event Reasons", "ECC Errors / Volatile / DRAM Correctable", "Remapped Rows"):
    NVIDIA/nccl #1453 (H100), turboderp-org/exllamav3 #112, NVIDIA/k8s-device-plugin #471, kubeflow/kubeflow #68.
  * PyTorch FutureWarning "Non-finite norm encountered in torch.nn.utils.clip_grad_norm_; continuing anyway. ..."
    (torch/nn/utils/clip_grad.py; pasted in ultralytics and transformers issues).
  * Slurm slurmstepd "*** JOB %u ON %s CANCELLED AT %s ***", "... DUE TO TIME LIMIT ***", srun "error: host: task
    N: Exited with exit code 1", slurmctld "_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId=N uid U", "Time limit
    exhausted for JobId=N", "_job_complete: JobId=N WEXITSTATUS 1", sacct pipe rows (as campaign2.py).
  * NCCL 2.21 INFO init lines (as campaign2.py); journalctl -k -o short-iso.
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

RUN = "sdc-titan-70b"
CLUSTER, PROVIDER = "hx-west", "helix"
GPN, NODES_USED = 8, 10
GPUS = GPN * NODES_USED
TP, DP = 8, 10
LBS, SEQ = 8, 8192
TOKENS_PER_STEP = DP * LBS * SEQ                 # 655360
TOKENS_PER_GPU = TOKENS_PER_STEP // GPUS         # per device, torchtitan's tps unit
FLOPS_PER_TOKEN = 4.880e11
PEAK = 989.4e12
BASE_STEP = 10.2
JIT = 0.003
BASE_COMPUTE, BASE_DATA = 9.05, 0.03
SAVE_EVERY = 200
LOG_FREQ = 10
VAL_EVERY = 500
T0 = datetime(2026, 11, 16, 6, 0, 0, tzinfo=UTC).timestamp()
CKPT = "/lustre/ckpt/sdc-titan-70b/checkpoint"
DRIVER = "550.127.05"
KERNEL = "5.15.0-126-generic"
UID = 1207
HOSTS = [f"hx-gpu-{i:03d}" for i in range(1, 14)]
SPARE1, SPARE2 = "hx-gpu-011", "hx-gpu-012"
BUSIDS = ["18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000"]
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error", "network",
                  "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption", "gpu_throttle",
                  "straggler", "silent_data_corruption"]


# ----------------------------------------------------------------------------- time formats
def split(t: float) -> tuple[datetime, int]:
    us = int(round(t * 1e6))
    s, u = divmod(us, 1_000_000)
    return datetime.fromtimestamp(s, UTC), u


def iso_z(t: float) -> str:
    d, u = split(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{u // 1000:03d}Z"


def asctime(t: float) -> str:
    d, u = split(t)
    return f"{d:%Y-%m-%d %H:%M:%S},{u // 1000:03d}"


def glog(t: float, lvl: str) -> str:
    d, u = split(t)
    return f"{lvl}{d:%m%d} {d:%H:%M:%S}.{u:06d}"


def slurm_ts(t: float) -> str:
    return split(t)[0].strftime("%Y-%m-%dT%H:%M:%S")


def ctld(t: float) -> str:
    d, u = split(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{u // 1000:03d}]"


def short_iso(t: float) -> str:
    return split(t)[0].strftime("%Y-%m-%dT%H:%M:%S") + "+00:00"


def date_cmd(t: float) -> str:
    d = split(t)[0]
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def smi_ts(t: float) -> str:
    d = split(t)[0]
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}"


def elapsed(sec: float) -> str:
    sec = int(round(sec))
    h, r = divmod(sec, 3600)
    m, s = divmod(r, 60)
    return f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts: list[str]) -> str:
    nums = sorted(int(h[-3:]) for h in hosts)
    out, a, b = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == b + 1:
            b = n
            continue
        out.append(f"{a:03d}" if a == b else f"{a:03d}-{b:03d}")
        if n is not None:
            a = b = n
    return "hx-gpu-[" + ",".join(out) + "]"


class Sink:
    def __init__(self) -> None:
        self.items: list[tuple[float, int, str]] = []

    def add(self, t: float, line: str) -> None:
        self.items.append((t, len(self.items), line))

    def many(self, t: float, lines: list[str]) -> None:
        for ln in lines:
            self.add(t, ln)

    def render(self) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
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
        self.cut_save: tuple[int, float] | None = None     # a save the kill interrupted
        self.R = self.E = self.onset_t = None
        self.onset_step = None


def step_dur(a: Attempt, rng: random.Random) -> float:
    d = BASE_STEP * (1 + rng.uniform(-JIT, JIT))
    if a.slow:
        d += BASE_COMPUTE * a.slow
    return d


def simulate(a: Attempt, rng: random.Random, train_steps: int) -> bool:
    a.steps, a.saves, a.cut_save = [], [], None
    t, n = a.F, a.load
    if a.kind in ("init_fail", "load_fail"):
        a.R = a.S + a.fail_after
        a.E = a.R + a.exit_tail
        return True
    while True:
        if a.kind == "complete" and n >= train_steps:
            break
        dur = step_dur(a, rng)
        if a.kind == "complete" and (n + 1) % VAL_EVERY == 0:
            dur += 3.6                       # two validation steps, run inside that step's interval
        if a.kind == "ecc" and t + dur > a.F + a.run_for:
            a.R = t + 0.43 * dur
            a.E = a.R + a.exit_tail
            return True
        if a.kind == "timelimit" and t + dur > a.T:
            a.R = a.T
            a.E = a.T + a.exit_tail
            return True
        if a.kind in ("diverge", "sdc"):
            if a.onset_step is None and n + 1 == a.load + a.onset_after:
                a.onset_step, a.onset_t = n + 1, t
            if a.onset_t is not None and t + dur > a.onset_t + a.stop_after:
                a.R = a.onset_t
                a.E = a.onset_t + a.stop_after + a.exit_tail
                return True
        a.steps.append((n + 1, t, dur))
        t += dur
        n += 1
        if n % SAVE_EVERY == 0 or (a.kind == "complete" and n == train_steps):
            c = round(rng.uniform(52.0, 78.0), 2) if n != train_steps else round(rng.uniform(95.0, 120.0), 2)
            if a.kind == "timelimit" and t + c > a.T - 240:
                return False                 # the kill must not cut a save (nudge and retry)
            if a.kind in ("diverge", "sdc") and a.onset_t is not None and t + c > a.onset_t + a.stop_after:
                a.cut_save = (n, t)
                a.R = a.onset_t
                a.E = a.onset_t + a.stop_after + a.exit_tail
                return True
            if a.kind == "ecc" and t + c > a.F + a.run_for:
                return False
            a.saves.append((n, t, c))
            t += c
    a.E = t + 5.0
    return True


def build(seed: int):
    rng = random.Random(f"{seed}-sdc-timeline")
    inner = HOSTS[1:10]
    Y, Z, W, C, D = rng.sample(inner, 5)
    g_ecc, g_slow = rng.randrange(GPN), rng.randrange(GPN)
    poisoned = seed % 2 == 0
    smi_evidence = seed % 3 != 1
    slow = rng.uniform(0.070, 0.090)         # the throttled GPU's extra compute; steps +6-8 %
    used = HOSTS[:10]
    n3 = [h for h in used if h != Y] + [SPARE1]
    n7 = [h for h in n3 if h != W] + [SPARE2]
    specs = [
        dict(k=1, job=48101, nodes=used, kind="ecc", mode="gpu_memory_ecc", host=Y, startup=250 + rng.randint(-8, 8),
             run_for=3.0 * 3600 + rng.randint(-900, 900), exit_tail=24.0, gap=720 + rng.randint(0, 300),
             limit=12 * 3600, slow=0.0),
        dict(k=2, job=48117, nodes=used, kind="init_fail", mode="gpu_memory_ecc", host=Y, startup=0,
             fail_after=96.0 + rng.randint(-6, 6), exit_tail=14.0, gap=1500 + rng.randint(0, 400), limit=12 * 3600,
             slow=0.0),
        dict(k=3, job=48130, nodes=n3, kind="timelimit", mode="time_limit", host=None, startup=262 + rng.randint(-8, 8),
             exit_tail=33.0, gap=140 + rng.randint(0, 60), limit=9000, slow=slow),
        dict(k=4, job=48131, nodes=n3, kind="load_fail", mode="checkpoint_lost", host=None, startup=0,
             fail_after=171.0 + rng.randint(-10, 10), exit_tail=16.0, gap=1900 + rng.randint(0, 500),
             limit=12 * 3600, slow=0.0),
        dict(k=5, job=48152, nodes=n3, kind="diverge", mode="loss_divergence", host=None,
             startup=268 + rng.randint(-8, 8), onset_after=rng.randint(480, 720) // 10 * 10,
             stop_after=2100 + rng.randint(0, 900), exit_tail=31.0, gap=2700 + rng.randint(0, 900),
             limit=12 * 3600, slow=0.0),
        dict(k=6, job=48170, nodes=n3, kind="sdc", mode="silent_data_corruption", host=W,
             startup=265 + rng.randint(-8, 8), onset_after=rng.randint(260, 380),
             stop_after=0.0, exit_tail=29.0, gap=1800 + rng.randint(0, 600), limit=12 * 3600, slow=0.0),
        dict(k=7, job=48188, nodes=n7, kind="complete", mode=None, host=None, startup=258 + rng.randint(-8, 8),
             exit_tail=0.0, gap=None, limit=12 * 3600, slow=0.0),
    ]
    atts = [Attempt(**s) for s in specs]
    a6 = atts[5]
    srng = random.Random(f"{seed}-sdcstop")

    def sdc_window() -> None:
        # the operator notices the NaN after 20-35 min; the onset's place in the save interval decides whether a
        # periodic save lands inside that window (poisoned) or not
        if poisoned:
            a6.onset_after, a6.stop_after = srng.randint(335, 380), srng.uniform(1500, 1950)
        else:
            a6.onset_after, a6.stop_after = srng.randint(205, 255), srng.uniform(1200, 1400)

    sdc_window()
    t_start, load = T0, 0
    train_steps = 10 ** 9
    for a in atts:
        a.S = float(t_start)
        a.T = a.S + a.limit
        a.load = load
        tries = 0
        while True:
            a.F = a.S + a.startup
            ok = simulate(a, random.Random(f"{seed}-steps-{a.k}-{tries}"), train_steps)
            if ok and a is a6:
                # the SDC: the operator notices after 20-45 min; in the poisoned variant a periodic save falls
                # inside that window, in the other none does
                pre = [n for n, _, _ in a.saves if n < a.onset_step]
                post = [n for n, _, _ in a.saves if n >= a.onset_step]
                ok = bool(pre) and bool(post) == poisoned and a.cut_save is None
            if ok:
                break
            tries += 1
            if a.kind == "timelimit":
                a.startup += 37
            elif a.kind == "ecc":
                a.run_for += 211
            elif a is a6:
                sdc_window()
            if tries > 500:
                raise RuntimeError(f"attempt {a.k}: no timeline")
        ck = [n for n, _, _ in a.saves]
        if a.kind == "ecc":
            a.durable = ck[-1] if ck else a.load
            load = a.durable
        elif a.kind == "init_fail":
            a.durable = a.load
        elif a.kind == "timelimit":
            a.lost_ckpt, a.durable = ck[-1], ck[-2]
            load = a.lost_ckpt                     # the next launch tries the newest checkpoint
        elif a.kind == "load_fail":
            a.durable = a.load
            load = atts[2].durable                 # the operator falls back to the one before
        elif a.kind == "diverge":
            before = [n for n in ck if n < a.onset_step]
            a.durable = before[-2] if len(before) >= 2 else before[-1]
            load = a.durable
        elif a.kind == "sdc":
            a.durable = max(n for n in ck if n < a.onset_step)
            load = a.durable
            train_steps = int(math.ceil((a.durable + 900) / SAVE_EVERY) * SAVE_EVERY)
        else:
            a.durable = None
        if a.gap is not None:
            t_start = math.ceil(a.E + a.gap)
    return atts, dict(Y=Y, Z=Z, W=W, C=C, D=D, g_ecc=g_ecc, g_slow=g_slow, poisoned=poisoned,
                      smi=smi_evidence, slow=slow, train_steps=train_steps)


def ledger(atts: list[Attempt]):
    cats = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute", "hang",
                          "restart", "startup", "idle"], 0.0)
    for i, a in enumerate(atts):
        if not a.steps:
            cats["startup"] += a.R - a.S
            cats["hang"] += a.E - a.R
        else:
            cats["startup"] += a.F - a.S
            kept = a.durable if a.kind != "complete" else 10 ** 9
            for n, _, d in a.steps:
                if n <= kept:
                    if a.slow:
                        cats["productive"] += BASE_STEP
                        cats["straggler"] += d - BASE_STEP
                    else:
                        cats["productive"] += d
            # the project's convention (tests/campaigns/bloom_opt.py, nemo_ft.py, the ledger): a save that finished
            # before the root event is checkpoint, kept or not; campaign1/2 never meet an unkept finished save
            done = 0.0
            for n, s, c in a.saves:
                if n <= kept:
                    cats["checkpoint"] += c
                elif a.R is not None and s + c <= a.R:
                    done += c
            cats["checkpoint"] += done
            if a.kind == "complete":
                cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            else:
                sv = [s for s in a.saves if s[0] == a.durable]
                base = sv[0][1] + sv[0][2] if sv else a.F
                cats["recompute"] += a.R - base - done
                cats["hang"] += a.E - a.R
        if i + 1 < len(atts):
            cats["restart"] += atts[i + 1].S - a.E
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return {k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4)


# ----------------------------------------------------------------------------- training log
def loss_at(n: int, rng: random.Random) -> float:
    return 1.83 + 8.9 * math.exp(-n / 260.0) + 0.8 * math.exp(-n / 5000.0) + rng.gauss(0, 0.012)


def pids_of(seed: int, a: Attempt):
    rng = random.Random(f"{seed}-pids-{a.k}")
    agent, worker = {}, {}
    for h in a.nodes:
        ag = rng.randint(50_000, 3_000_000)
        agent[h] = ag
        for d in range(GPN):
            worker[h, d] = ag + 9 + d
    return agent, worker


def train_log(a: Attempt, seed: int, x: dict, info: dict) -> bytes:
    rng = random.Random(f"{seed}-log-{a.k}")
    L = Sink()
    agent, worker = pids_of(seed, a)
    pre = "[rank0]:"

    def T(t: float, msg: str, lvl: str = "INFO") -> None:
        L.add(t, f"{pre}[titan] {asctime(t)} - root - {lvl} - {msg}")

    lr = "3e-4" if a.k < 6 else "1.5e-4"
    extra = f" --checkpoint.load_step {a.load}" if a.k in (5, 6, 7) else ""
    L.add(a.S, f"START TIME: {date_cmd(a.S)}")
    L.add(a.S + 0.01, f"+ srun --kill-on-bad-exit=1 torchrun --nnodes={len(a.nodes)} --nproc_per_node={GPN} "
                      f"--rdzv_backend=c10d --rdzv_endpoint={a.nodes[0]}:29500 --local-ranks-filter 0 --role rank "
                      f"--tee 3 -m torchtitan.train --job.config_file ./train_configs/llama3_70b.toml "
                      f"--checkpoint.enable --checkpoint.folder checkpoint --checkpoint.interval {SAVE_EVERY} "
                      f"--optimizer.lr {lr} --training.steps {x['train_steps']}{extra}")
    t = a.S + 31.0
    for i, h in enumerate(a.nodes):
        p = f"{glog(t + 0.04 * i, 'W')} {agent[h]} torch/distributed/run.py:792] "
        L.many(t + 0.04 * i, [p, p + "*" * 41, p + "Setting OMP_NUM_THREADS environment variable for each process "
                              "to be 1 in default, to avoid your system being overloaded, please further tune the "
                              "variable for optimal performance in your application as needed. ", p + "*" * 41])
    ti = a.S + 47.0
    T(ti, "Starting job: Llama 3 70B pretraining")
    T(ti + 0.3, f"Building 2-D device mesh with ['dp_shard', 'tp'], [{DP}, {TP}]")
    T(ti + 9.1, "Preparing c4 dataset from allenai/c4")
    T(ti + 21.0, "Building llama3 70B with TransformerModelArgs(dim=8192, n_layers=80, n_heads=64, n_kv_heads=8, "
                 "vocab_size=128256, multiple_of=4096, ffn_dim_multiplier=1.3, norm_eps=1e-05, rope_theta=500000, "
                 "max_seq_len=8192)")
    if a.kind == "init_fail":
        init_failure(a, L, agent, worker, x, info)
        return L.render()
    T(ti + 22.2, "Model llama3 70B size: 70,553,706,496 total parameters")
    T(ti + 22.5, "Applied Tensor Parallelism to the model")
    T(ti + 24.8, "Applied FSDP to the model")
    T(ti + 27.9, f"Peak FLOPS used for computing MFU: {PEAK:.3e}")
    T(ti + 28.0, "CUDA memory usage for model: 18.42GiB(23.28%)")
    T(ti + 28.3, f"Checkpointing active. Checkpoints will be loaded from and saved to {CKPT}")
    if a.kind == "load_fail":
        T(ti + 30.0, f"Loading the checkpoint from {CKPT}/step-{a.load}.")
        load_failure(a, L, agent, worker, x, info)
        return L.render()
    if a.load:
        T(ti + 30.0, f"Loading the checkpoint from {CKPT}/step-{a.load}.")
        T(a.F - 2.0, f"Finished loading the checkpoint in {a.F - 2.0 - ti - 30.0:.2f} seconds.")
    else:
        T(ti + 30.0, "No checkpoint was provided, this is a fresh start.")
    T(a.F, f"Training starts at step {a.load + 1}")
    lrng = random.Random(f"{seed}-loss-{a.k}")
    last_t, last_n = a.F, a.load
    saves = {n: (s, c) for n, s, c in a.saves}
    spike_at = info.get("spike_step") if a.k == 1 else None
    for n, s, d in a.steps:
        end = s + d
        if n == a.load + 1 or n % LOG_FREQ == 0:
            tps = (n - last_n) * TOKENS_PER_GPU / (end - last_t)
            loss = loss_at(n, lrng)
            gn = 0.21 + 2.4 * math.exp(-n / 400.0) + abs(lrng.gauss(0, 0.025))
            if n == spike_at:
                loss, gn = loss + 1.55, 5.8 + lrng.uniform(0, 1)
            if a.kind == "diverge" and n >= a.onset_step:
                k = n - a.onset_step
                loss += 0.35 * (1 - math.exp(-k / 40.0)) + 0.011 * k
                gn = (7.0 + lrng.uniform(0, 14.0)) if k < 40 else 1.6 + 0.01 * k + lrng.uniform(0, 1.2)
            if a.kind == "sdc" and n >= a.onset_step:
                ls, gs = "     nan", "    nan"
            else:
                ls, gs = f"{loss:8.5f}", f"{gn:7.4f}"
            T(end, f"step: {n:2}  loss: {ls}  grad_norm: {gs}  memory: 63.71GiB(80.53%)  tps: {round(tps):,}  "
                   f"tflops: {FLOPS_PER_TOKEN * tps / 1e12:,.2f}  mfu: {100 * FLOPS_PER_TOKEN * tps / PEAK:.2f}%")
            last_t, last_n = end, n
        if n == spike_at:
            r = info["clip_rank"]
            L.add(end - 0.3, f"[rank{r}]:/usr/local/lib/python3.10/dist-packages/torch/nn/utils/clip_grad.py:82: "
                             f"FutureWarning: Non-finite norm encountered in torch.nn.utils.clip_grad_norm_; "
                             f"continuing anyway. Note that the default behavior will change in a future release to "
                             f"error out if a non-finite total norm is encountered. At that point, setting "
                             f"error_if_nonfinite=false will be required to retain the old behavior.")
            L.add(end - 0.29, f"[rank{r}]:  total_norm = torch.nn.utils.get_total_norm(grads, norm_type, "
                              f"error_if_nonfinite, foreach)")
        if a.kind == "complete" and n % VAL_EVERY == 0:
            vl = "    inf" if n == info["val_inf_step"] else f"{loss_at(n, lrng) + 0.04:7.4f}"
            T(end - 0.05, f"validate step: {n:2}  loss: {vl}  memory: 63.71GiB(80.53%)  "
                          f"tps: 24,{rng.randint(100, 999)}")
        if n in saves:
            s0, c = saves[n]
            T(s0 + 0.01, "Saving the checkpoint.")
            if a.kind == "complete" and n == x["train_steps"]:
                T(s0 + 0.02, f"Saving a full checkpoint at last step, step {n}.")
                T(s0 + c, f"Last step checkpoint completed in {c - 0.01:.2f}s")
            else:
                T(s0 + c, f"Finished saving the checkpoint in {c - 0.01:.2f} seconds.")
    if a.cut_save is not None:
        T(a.cut_save[1] + 0.01, "Saving the checkpoint.")
    if a.kind == "ecc":
        ecc_failure(a, L, agent, worker, x, info)
    elif a.kind == "timelimit":
        killed(a, L, agent, worker, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT "
                                    f"{slurm_ts(a.T)} DUE TO TIME LIMIT ***", a.T)
    elif a.kind in ("diverge", "sdc"):
        kt = a.E - a.exit_tail
        killed(a, L, agent, worker, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT "
                                    f"{slurm_ts(kt)} ***", kt)
    else:
        T(a.E - 3.6, "Sleeping 2 seconds for other ranks to complete")
        T(a.E - 1.4, "Training completed")
        L.add(a.E - 1.0, f"END TIME: {date_cmd(a.E - 1.0)}")
    return L.render()


def child_failed(L: Sink, t: float, host: str, rank: int, local: int, pid: int, err: list[str]) -> None:
    L.many(t, ["Traceback (most recent call last):",
               '  File "/usr/local/bin/torchrun", line 8, in <module>',
               "    sys.exit(main())",
               '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 138, in '
               "__call__",
               "    return launch_agent(self._config, self._entrypoint, list(args))",
               '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 269, in '
               "launch_agent",
               "    raise ChildFailedError(",
               "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
               "=" * 60, "torchtitan.train FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
               "Root Cause (first observed failure):", "[0]:",
               f"  time      : {split(t)[0]:%Y-%m-%d_%H:%M:%S}", f"  host      : {host}",
               f"  rank      : {rank} (local_rank: {local})", f"  exitcode  : 1 (pid: {pid})",
               f"  error_file: /tmp/torchelastic_{pid % 9973:x}k2/none_q1/attempt_0/{local}/error.json",
               "  traceback : Traceback (most recent call last):"] + [f"    {e}" for e in err] + ["=" * 60])


def stop_others(a: Attempt, L: Sink, agent, t: float, bad: str | None) -> None:
    for i, h in enumerate(a.nodes):
        if h == bad:
            continue
        tt = t + 0.05 * i
        L.add(tt, f"slurmstepd: error: *** STEP {a.job}.0 ON {h} CANCELLED AT {slurm_ts(tt)} ***")
        L.add(tt + 0.01, f"{glog(tt + 0.01, 'W')} {agent[h]} torch/distributed/elastic/agent/server/api.py:704] "
                         f"Received 15 death signal, shutting down workers")
    for i, h in enumerate(a.nodes):
        if h != bad:
            L.add(a.E - 0.8 + 0.01 * i, f"srun: error: {h}: task {i}: Terminated")


CUDA_TAIL = ["CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
             "might be incorrect.", "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
             "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."]


def ecc_failure(a: Attempt, L: Sink, agent, worker, x: dict, info: dict) -> None:
    Y, g = x["Y"], x["g_ecc"]
    i = a.nodes.index(Y)
    rank = i * GPN + g
    tf = a.R + 1.7
    err = ['File "/workspace/torchtitan/torchtitan/train.py", line 596, in train_step',
           "    loss = self.forward_backward_step(input_dict, labels)",
           'File "/usr/local/lib/python3.10/dist-packages/torch/_tensor.py", line 626, in backward',
           "    torch.autograd.backward(", "RuntimeError: CUDA error: uncorrectable ECC error encountered"] + CUDA_TAIL
    L.add(tf + 0.9, f"{glog(tf + 0.9, 'E')} {agent[Y]} torch/distributed/elastic/multiprocessing/api.py:869] failed "
                    f"(exitcode: 1) local_rank: {g} (pid: {worker[Y, g]}) of binary: /usr/bin/python3")
    child_failed(L, tf + 1.0, Y, rank, g, worker[Y, g], err)
    L.add(a.E - 3.0, f"srun: error: {Y}: task {i}: Exited with exit code 1")
    L.add(a.E - 2.9, f"srun: Terminating StepId={a.job}.0")
    stop_others(a, L, agent, a.E - 2.5, Y)
    info["ecc_rank"] = rank


def init_failure(a: Attempt, L: Sink, agent, worker, x: dict, info: dict) -> None:
    Y, g = x["Y"], x["g_ecc"]
    i = a.nodes.index(Y)
    rank = i * GPN + g
    err = ['File "/workspace/torchtitan/torchtitan/train.py", line 188, in __init__',
           "    model.to_empty(device=init_device)",
           'File "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", line 1189, in to_empty',
           "    return self._apply(",
           "RuntimeError: CUDA error: uncorrectable ECC error encountered"] + CUDA_TAIL
    tf = a.R + 1.2
    L.add(tf, f"{glog(tf, 'E')} {agent[Y]} torch/distributed/elastic/multiprocessing/api.py:869] failed "
              f"(exitcode: 1) local_rank: {g} (pid: {worker[Y, g]}) of binary: /usr/bin/python3")
    child_failed(L, tf + 0.1, Y, rank, g, worker[Y, g], err)
    L.add(a.E - 3.0, f"srun: error: {Y}: task {i}: Exited with exit code 1")
    L.add(a.E - 2.9, f"srun: Terminating StepId={a.job}.0")
    stop_others(a, L, agent, a.E - 2.5, Y)


def load_failure(a: Attempt, L: Sink, agent, worker, x: dict, info: dict) -> None:
    rng = random.Random(f"load-{a.job}")
    bad = sorted(rng.sample(range(GPUS), 3))
    pfx = "[rank0]: "
    dist = "/usr/local/lib/python3.10/dist-packages/torch/distributed/checkpoint"
    body = ["Traceback (most recent call last):",
            '  File "/workspace/torchtitan/torchtitan/train.py", line 727, in <module>',
            "    trainer.checkpointer.load(step=config.checkpoint.load_step)",
            '  File "/workspace/torchtitan/torchtitan/components/checkpoint.py", line 528, in load',
            "    self.dcp_load(",
            '  File "/workspace/torchtitan/torchtitan/components/checkpoint.py", line 434, in dcp_load',
            "    dcp.load(state_dict, checkpoint_id=checkpoint_id)",
            f'  File "{dist}/logger.py", line 83, in wrapper',
            "    result = func(*args, **kwargs)",
            f'  File "{dist}/state_dict_loader.py", line 172, in load',
            "    _load_state_dict(",
            f'  File "{dist}/state_dict_loader.py", line 240, in _load_state_dict',
            '    _ = distW.all_gather("read", read_data)',
            f'  File "{dist}/utils.py", line 231, in all_gather',
            "    raise CheckpointException(step, node_failures)",
            f"torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:dict_keys({bad})"]
    for r in bad[:2]:
        body += [f"Traceback (most recent call last): (RANK {r})",
                 f'  File "{dist}/utils.py", line 222, in all_gather',
                 "    result = map_fun()",
                 f'  File "{dist}/state_dict_loader.py", line 234, in read_data',
                 "    all_reads = storage_reader.read_data(final_local_plan, planner)",
                 f'  File "{dist}/filesystem.py", line 661, in read_data',
                 '    with self.fs.create_stream(new_path, "rb") as stream:',
                 "  File \"/usr/lib/python3.10/contextlib.py\", line 135, in __enter__",
                 "    return next(self.gen)",
                 f'  File "{dist}/filesystem.py", line 395, in create_stream',
                 "    with cast(Path, path).open(mode) as stream:",
                 "FileNotFoundError: [Errno 2] No such file or directory: "
                 f"'{CKPT}/step-{a.load}/__{bad[-1]}_0.distcp'"]
    L.many(a.R, [pfx + b for b in body])
    h0 = a.nodes[0]
    L.add(a.R + 1.5, f"{glog(a.R + 1.5, 'E')} {agent[h0]} torch/distributed/elastic/multiprocessing/api.py:869] "
                     f"failed (exitcode: 1) local_rank: 0 (pid: {worker[h0, 0]}) of binary: /usr/bin/python3")
    child_failed(L, a.R + 1.6, h0, 0, 0, worker[h0, 0],
                 ["torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:"
                  f"dict_keys({bad})"])
    for i, h in enumerate(a.nodes):
        L.add(a.E - 2.0 + 0.01 * i, f"srun: error: {h}: task {i}: Exited with exit code 1")
    info["dcp_ts"] = a.R


def killed(a: Attempt, L: Sink, agent, worker, stepd: str, K: float) -> None:
    L.add(K + 0.02, stepd)
    L.add(K + 0.04, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    for i, h in enumerate(a.nodes):
        tt = K + 0.2 + 0.02 * i
        L.add(tt, f"{glog(tt, 'W')} {agent[h]} torch/distributed/elastic/agent/server/api.py:704] Received 15 death "
                  f"signal, shutting down workers")
        for d in range(GPN):
            L.add(tt + 0.001, f"{glog(tt + 0.001, 'W')} {agent[h]} torch/distributed/elastic/multiprocessing/"
                              f"api.py:897] Sending process {worker[h, d]} closing signal SIGTERM")
    for i, h in enumerate(a.nodes):
        L.add(a.E - 0.6 + 0.01 * i, f"srun: error: {h}: task {i}: Terminated")
    L.add(a.E - 0.3, f"srun: Force Terminated StepId={a.job}.0")


def nccl_log(a: Attempt, h: str, seed: int) -> bytes:
    agent, worker = pids_of(seed, a)
    rng = random.Random(f"{seed}-nccl-{a.k}-{h}")
    i = a.nodes.index(h)
    cid = f"0x{random.Random(f'{seed}-cid-{a.k}').getrandbits(64):016x}"
    out = []
    for d in range(GPN):
        r = i * GPN + d
        w = worker[h, d]
        c = f"0x{0x55d000000000 + (rng.getrandbits(32) << 4):x}"
        p = f"{h}:{w}:{w + 311 + d} [{d}] NCCL INFO "
        if r == 0:
            out.append(f"{h}:{w}:{w} [0] NCCL INFO NCCL version 2.21.5+cuda12.4")
        out += [p + f"ncclCommInitRank comm {c} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} "
                    f"commId {cid} - Init START",
                p + f"comm {c} rank {r} nranks {GPUS} cudaDev {d} nvmlDev {d} busId {BUSIDS[d]} commId {cid} - "
                    f"Init COMPLETE"]
    return ("\n".join(out) + "\n").encode()


# ----------------------------------------------------------------------------- per-rank step records
def rank_records(a: Attempt, seed: int, x: dict) -> dict[int, bytes]:
    lrng = random.Random(f"{seed}-rl-{a.k}")
    base_loss = {n: loss_at(n, lrng) for n, _, _ in a.steps}
    out = {}
    for i, h in enumerate(a.nodes):
        for d in range(GPN):
            r = i * GPN + d
            rng = random.Random(f"{seed}-rr-{a.k}-{r}")
            slow = a.slow and h == x["Z"] and d == x["g_slow"]
            recs = []
            for n, s, dur in a.steps:
                comp = BASE_COMPUTE * (1 + (a.slow if slow else 0.0)) * (1 + rng.uniform(-0.004, 0.004))
                data = BASE_DATA * (1 + rng.uniform(-0.15, 0.15))
                comm = max(0.05, dur - comp - data)
                loss: float = base_loss[n] + rng.gauss(0, 0.02)
                if a.kind == "sdc" and n >= a.onset_step:
                    if n == a.onset_step:
                        loss = float("inf") if h == x["W"] else loss
                    else:
                        loss = float("nan")
                recs.append(json.dumps({"ts": round(s + dur, 3), "rank": r, "host": h, "step": n,
                                        "step_s": round(dur, 4), "compute_s": round(comp, 4),
                                        "comm_s": round(comm, 4), "data_s": round(data, 4),
                                        "tokens": TOKENS_PER_GPU, "loss": round(loss, 4)
                                        if math.isfinite(loss) else loss}))
            out[r] = ("\n".join(recs) + "\n").encode()
    return out


# ----------------------------------------------------------------------------- node evidence
NOISE = ["perf: interrupt took too long ({a} > {b}), lowering kernel.perf_event_max_sample_rate to 63750",
         "kauditd_printk_skb: {k} callbacks suppressed", "docker0: port 1(veth{v}) entered forwarding state",
         "hrtimer: interrupt took {n} ns"]


def kernel_log(h: str, atts: list[Attempt], seed: int, x: dict, info: dict) -> bytes:
    rng = random.Random(f"{seed}-kern-{h}")
    boot = T0 - rng.randint(2 * 86400, 8 * 86400)
    ev = [(boot, f"Linux version {KERNEL} (buildd@lcy02-amd64-026) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0) "
                 f"#136-Ubuntu SMP Wed Nov 6 10:38:22 UTC 2024"),
          (boot + 22.8, f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {DRIVER}  Tue Nov  5 00:32:35 UTC 2024")]
    t = T0 - 3000 + rng.uniform(0, 3000)
    while t < atts[-1].E + 900:
        a = rng.randint(2600, 6000)
        ev.append((t, rng.choice(NOISE).format(a=a, b=a - 9, k=rng.randint(3, 40), v=f"{rng.getrandbits(28):07x}",
                                               n=rng.randint(9000, 40000))))
        t += rng.uniform(2000, 11000)
    if h == x["Y"]:
        a1, a2 = atts[0], atts[1]
        pci = f"0000:{BUSIDS[x['g_ecc']][:2]}:00"
        pid = pids_of(seed, a1)[1][h, x["g_ecc"]]
        addr = rng.randrange(0x100000000, 0xfffffffff) & ~0x1f
        t = a1.R
        ev += [(t, f"NVRM: GPU at PCI:{pci}: GPU-{rng.getrandbits(32):08x}-5e1c-{rng.getrandbits(16):04x}-9a0e-"
                   f"{rng.getrandbits(48):012x}"),
               (t, f"NVRM: GPU Board Serial Number: 16524230{rng.randint(10000, 99999)}"),
               (t, f"NVRM: Xid (PCI:{pci}): 48, An uncorrectable double bit error (DBE) has been detected on GPU in "
                   f"the framebuffer at physAddr 0x{addr:x} partition {rng.randrange(8)}, subpartition "
                   f"{rng.randrange(2)}."),
               (t + 0.001, f"NVRM: Xid (PCI:{pci}): 48, pid={pid}, name=python3, channel 0x0000000{rng.randrange(8)}"),
               (t + 0.002, f"NVRM: Xid (PCI:{pci}): 63, pid={pid}, name=python3, Row Remapper: New row "
                           f"(0x{addr:016x}) marked for remapping, reset gpu to activate."),
               (t + 0.003, f"NVRM: Xid (PCI:{pci}): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain "
                           f"and Reset)")]
        pid2 = pids_of(seed, a2)[1][h, x["g_ecc"]]
        t2 = a2.R
        addr2 = addr + 0x2400
        ev += [(t2 - 0.4, f"NVRM: Xid (PCI:{pci}): 48, An uncorrectable double bit error (DBE) has been detected on "
                          f"GPU in the framebuffer at physAddr 0x{addr2:x} partition 3, subpartition 1."),
               (t2 - 0.399, f"NVRM: Xid (PCI:{pci}): 64, pid={pid2}, name=python3, Row Remapper Error: "
                            f"(0x{addr2:016x}) - All reserved rows for bank are remapped"),
               (t2 - 0.398, f"NVRM: Xid (PCI:{pci}): 154, GPU recovery action changed from 0x0 (None) to 0x4 "
                            f"(Drain and Reset)")]
        info["xid48_ts"], info["xid64_ts"] = a1.R, t2 - 0.4
    ev.sort(key=lambda e: e[0])
    return ("\n".join(f"{short_iso(t)} {h} kernel: {m}" for t, m in ev) + "\n").encode()


def smi_q(h: str, t: float, x: dict, seed: int) -> bytes:
    rng = random.Random(f"{seed}-smi-{h}")
    out = ["", "==============NVSMI LOG==============", "", f"Timestamp                                 : {smi_ts(t)}",
           f"Driver Version                            : {DRIVER}", "CUDA Version                              : 12.4",
           "", "Attached GPUs                             : 8"]

    def kv(ind: int, k: str, v: str) -> str:
        return " " * ind + f"{k:<{38 - ind}}: {v}" if ind < 38 else " " * ind + f"{k} : {v}"

    for d in range(GPN):
        hot = x["smi"] and h == x["Z"] and d == x["g_slow"]
        ce = rng.randint(9, 31) if (h == x["D"] and d == 3) else 0
        sm = 1980 if not hot else 1830 + rng.randint(-15, 15)
        temp = rng.randint(52, 63) if not hot else 87
        act = lambda on: "Active" if on else "Not Active"  # noqa: E731
        out += [f"GPU 00000000:{BUSIDS[d][:2].upper()}:00.0",
                kv(4, "Product Name", "NVIDIA H100 80GB HBM3"),
                kv(4, "Serial Number", f"16524230{rng.randint(10000, 99999)}"),
                kv(4, "Minor Number", str(d)),
                kv(4, "Performance State", "P0"),
                "    Clocks Event Reasons",
                kv(8, "Idle", act(False)), kv(8, "Applications Clocks Setting", act(False)),
                kv(8, "SW Power Cap", act(False)), kv(8, "HW Slowdown", act(hot)),
                kv(12, "HW Thermal Slowdown", act(hot)), kv(12, "HW Power Brake Slowdown", act(False)),
                kv(8, "Sync Boost", act(False)), kv(8, "SW Thermal Slowdown", act(hot)),
                kv(8, "Display Clock Setting", act(False)),
                "    FB Memory Usage", kv(8, "Total", "81559 MiB"), kv(8, "Reserved", "565 MiB"),
                kv(8, "Used", f"{65230 + rng.randint(0, 900)} MiB"),
                kv(8, "Free", f"{15100 + rng.randint(0, 900)} MiB"),
                "    ECC Mode", kv(8, "Current", "Enabled"), kv(8, "Pending", "Enabled"),
                "    ECC Errors", "        Volatile",
                kv(12, "SRAM Correctable", "0"), kv(12, "SRAM Uncorrectable Parity", "0"),
                kv(12, "SRAM Uncorrectable SEC-DED", "0"), kv(12, "DRAM Correctable", str(ce)),
                kv(12, "DRAM Uncorrectable", "0"), "        Aggregate",
                kv(12, "SRAM Correctable", "0"), kv(12, "SRAM Uncorrectable Parity", "0"),
                kv(12, "SRAM Uncorrectable SEC-DED", "0"), kv(12, "DRAM Correctable", str(ce + 4 if ce else 0)),
                kv(12, "DRAM Uncorrectable", "0"), kv(12, "SRAM Threshold Exceeded", "No"),
                "    Remapped Rows", kv(8, "Correctable Error", "0"), kv(8, "Uncorrectable Error", "0"),
                kv(8, "Pending", "No"), kv(8, "Remapping Failure Occurred", "No"),
                "    Temperature", kv(8, "GPU Current Temp", f"{temp} C"), kv(8, "GPU T.Limit Temp", f"{87 - temp} C"),
                kv(8, "GPU Shutdown T.Limit Temp", "-5 C"), kv(8, "GPU Slowdown T.Limit Temp", "-2 C"),
                kv(8, "GPU Max Operating T.Limit Temp", "0 C"), kv(8, "Memory Current Temp", f"{temp + 6} C"),
                "    GPU Power Readings", kv(8, "Power Draw", f"{rng.uniform(610, 690):.2f} W"),
                kv(8, "Current Power Limit", "700.00 W"), kv(8, "Requested Power Limit", "700.00 W"),
                "    Clocks", kv(8, "Graphics", f"{sm} MHz"), kv(8, "SM", f"{sm} MHz"), kv(8, "Memory", "2619 MHz"),
                kv(8, "Video", "1545 MHz"),
                "    Max Clocks", kv(8, "Graphics", "1980 MHz"), kv(8, "SM", "1980 MHz"), kv(8, "Memory", "2619 MHz"),
                kv(8, "Video", "1965 MHz"), ""]
    return ("\n".join(out) + "\n").encode()


def scheduler(atts: list[Attempt], x: dict) -> tuple[bytes, bytes]:
    L = Sink()
    rows = ["JobID|JobName|User|Partition|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"]
    for a in atts:
        hl, cpus = hostlist(a.nodes), 224 * len(a.nodes)
        sub = a.S - 7
        L.add(sub, f"{ctld(sub)} _slurm_rpc_submit_batch_job: JobId={a.job} InitPrio=10{a.job % 997} usec=611")
        L.add(a.S, f"{ctld(a.S)} sched: Allocate JobId={a.job} NodeList={hl} #CPUs={cpus} Partition=pretrain")
        end = a.E + 0.2
        if a.kind == "timelimit":
            L.add(a.T, f"{ctld(a.T)} Time limit exhausted for JobId={a.job}")
            L.add(end, f"{ctld(end)} _job_complete: JobId={a.job} WTERMSIG 15")
            st, ec = "TIMEOUT", "0:0"
        elif a.kind in ("diverge", "sdc"):
            kt = a.E - a.exit_tail
            L.add(kt, f"{ctld(kt)} _slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={a.job} uid {UID}")
            L.add(end, f"{ctld(end)} _job_complete: JobId={a.job} WTERMSIG 15")
            st, ec = f"CANCELLED by {UID}", "0:15"
        elif a.kind == "complete":
            L.add(end, f"{ctld(end)} _job_complete: JobId={a.job} WEXITSTATUS 0")
            st, ec = "COMPLETED", "0:0"
        else:
            L.add(end, f"{ctld(end)} _job_complete: JobId={a.job} WEXITSTATUS 1")
            st, ec = "FAILED", "1:0"
        L.add(end + 0.01, f"{ctld(end + 0.01)} _job_complete: JobId={a.job} done")
        rows.append(f"{a.job}|titan70b|pretrain|pretrain|{cpus}|{st}|{ec}|{slurm_ts(sub)}|{slurm_ts(a.S)}|"
                    f"{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|{len(a.nodes)}|{hl}")
    for a, h, why in ((atts[1], x["Y"], "GPU row remap failure Xid64 RMA"),
                      (atts[5], x["W"], "SDC suspect nan loss TP group")):
        t = a.E + 300
        L.add(t, f"{ctld(t)} update_node: node {h} reason set to: {why}")
        L.add(t + 0.1, f"{ctld(t + 0.1)} update_node: node {h} state set to DRAINED")
    return L.render(), ("\n".join(rows) + "\n").encode()


INVENTORY = f"""[providers.{PROVIDER}]
usd_per_gpu_hour = 2.45

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = {GPN}
interconnect = "InfiniBand NDR 8x400G"
nodes = "hx-gpu-[001-013]"
"""


def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    atts, x = build(seed)
    rng = random.Random(f"{seed}-misc")
    a1, a3, a6, a7 = atts[0], atts[2], atts[5], atts[6]
    info: dict = {}
    # decoys placed by the story: a spike at a logged step of attempt 1 (well before the ECC), the clip warning on
    # one rank of host C at that step, an inf validation loss in attempt 7
    logged = [n for n, _, _ in a1.steps if n % LOG_FREQ == 0 and 300 < n < a1.steps[-1][0] - 200]
    info["spike_step"] = rng.choice(logged)
    info["clip_rank"] = a1.nodes.index(x["C"]) * GPN + rng.randrange(GPN)
    vals = [n for n, _, _ in a7.steps if n % VAL_EVERY == 0]
    info["val_inf_step"] = vals[len(vals) // 2] if vals else -1
    write(bundle / "inventory.toml", INVENTORY.encode())
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", (f'cluster = "{CLUSTER}"\ngpus = {GPUS}\ntokens_per_step = {TOKENS_PER_STEP}\n'
                              f"flops_per_token = {FLOPS_PER_TOKEN:.3e}\ncheckpoint_dir = \"{CKPT}\"\n"
                              f'launcher = "slurm"\n').encode())
    for a in atts:
        ad = rdir / f"attempt-{a.k}"
        write(ad / f"slurm-{a.job}.out", train_log(a, seed, x, info))
        for h in a.nodes:
            write(ad / "nccl" / f"{h}.log", nccl_log(a, h, seed))
        if a.k in (3, 6):
            for r, body in rank_records(a, seed, x).items():
                write(ad / "steps" / f"rank-{r:05d}.jsonl.gz", body, gz=True)
    for h in HOSTS:
        write(bundle / "nodes" / h / "kern.log", kernel_log(h, atts, seed, x, info))
    t_smi = a3.F + 0.55 * (a3.T - a3.F)
    for h in a3.nodes:
        write(bundle / "nodes" / h / f"nvidia-smi-q-{split(t_smi)[0]:%Y%m%dT%H%M}.txt", smi_q(h, t_smi, x, seed))
    ctl, sacct = scheduler(atts, x)
    write(bundle / "scheduler" / "slurmctld.log", ctl)
    write(bundle / "scheduler" / "sacct.psv", sacct)
    cats, total = ledger(atts)
    Y, Z, W = x["Y"], x["Z"], x["W"]
    incidents = [
        dict(failure_mode="gpu_memory_ecc", host=Y, attempt=1, gpu=x["g_ecc"], root_ts=iso_z(a1.R)),
        dict(failure_mode="gpu_memory_ecc", host=Y, attempt=2, gpu=x["g_ecc"], root_ts=iso_z(atts[1].R),
             note="sticky: the same GPU dies at init of the next job"),
        dict(failure_mode="gpu_throttle" if x["smi"] else "straggler", host=Z, attempt=3, gpu=x["g_slow"],
             slow_pct=round(100 * x["slow"] * BASE_COMPUTE / BASE_STEP, 2), root_ts=iso_z(a3.F)),
        dict(failure_mode="time_limit", host=None, attempt=3, root_ts=iso_z(a3.T)),
        dict(failure_mode="checkpoint_lost", host=None, attempt=4, root_ts=iso_z(atts[3].R),
             lost_step=a3.lost_ckpt, fallback_step=a3.durable),
        dict(failure_mode="loss_divergence", host=None, attempt=5, root_ts=iso_z(atts[4].onset_t),
             onset_step=atts[4].onset_step, rollback_to=atts[4].durable),
        dict(failure_mode="silent_data_corruption", host=W, attempt=6, root_ts=iso_z(a6.onset_t),
             onset_step=a6.onset_step, poisoned_saves=[n for n, _, _ in a6.saves if n >= a6.onset_step],
             rollback_to=a6.durable),
    ]
    decoys = {x["C"]: "one rank printed clip_grad_norm_'s non-finite FutureWarning at a loss spike the run "
                      "recovered from",
              x["D"]: "nvidia-smi -q shows a volatile DRAM Correctable ECC count; correctable, harmless"}
    forbidden = [
        dict(failure_mode="loss_divergence", attempts=[1, 2, 3, 4, 6, 7],
             reason="a one-line loss spike the run recovered from, an inf validation loss, or one host's SDC"),
        dict(failure_mode="checkpoint_lost", attempts=[6, 7],
             reason="a deliberate rollback to an older checkpoint (or past a poisoned one) is not a lost checkpoint"),
        dict(failure_mode="manual_stop", attempts=[5, 6], reason="the operator stopped a job that was already lost"),
        dict(failure_mode="silent_data_corruption", attempts=[5], reason="every rank diverged together"),
    ]
    truth = {
        "run": RUN, "seed": seed, "gpus": GPUS, "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "first_start_ts": iso_z(a1.S), "last_end_ts": iso_z(a7.E), "match_on_attempt": True,
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "nodes": hostlist(a.nodes), "start_ts": iso_z(a.S),
                      "first_step_ts": iso_z(a.F) if a.steps else None, "exit_ts": iso_z(a.E), "loaded_step": a.load,
                      "last_step": a.steps[-1][0] if a.steps else None, "saves": [n for n, _, _ in a.saves],
                      "resumed_by_next": a.durable, "end": a.kind} for a in atts],
        "variants": {"poisoned_checkpoint": x["poisoned"], "throttle_evidence": x["smi"]},
        "incidents": incidents, "decoy_hosts": sorted(decoys), "decoy_reasons": decoys,
        "decoy_events": {"loss_spike_step": info["spike_step"], "clip_warning_rank": info["clip_rank"],
                         "inf_validation_step": info["val_inf_step"]},
        "forbidden_incidents": forbidden, "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {},
        "notes": "host null matches any host; see the module docstring for the ledger conventions",
    }
    for inc in incidents:
        inc["attempts"] = [inc["attempt"]]
    write(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261123)
    args = ap.parse_args()
    out = Path(args.out)
    if (out / "bundle").exists():
        raise SystemExit(f"{out / 'bundle'} exists; pass an empty --out")
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    files = [p for p in (out / "bundle").rglob("*") if p.is_file()]
    print(f"wrote {len(files)} files ({sum(p.stat().st_size for p in files) / 1e6:.1f} MB); "
          f"{truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
