#!/usr/bin/env python3
# ruff: noqa: E501, UP031  (real log lines quoted whole; JSON records with printf formats)
"""Campaign "bloom_opt": the BLOOM-176B and OPT-175B training chronicles, re-enacted at 1/3 scale.

Written from the public chronicles (BigScience's tr11 log on Jean Zay: Megatron-DeepSpeed, A100 80GB,
one or two GPU failures a week, a GPU ~5 % slower that slowed everyone, NCCL hangs, Lustre $SCRATCH
slowness; Meta's OPT-175B logbook: many hardware-driven restarts, incomplete checkpoints with a fallback
to an earlier one, loss divergences handled by a DELIBERATE rollback to an older checkpoint with a lower
learning rate) without reading clusterlab's analysis code.

Writes, under --out DIR:
  DIR/bundle/inventory.toml, DIR/bundle/runs/<RUN>/run.toml
  DIR/bundle/runs/<RUN>/attempt-<k>/slurm-<job>.out          k = 1..8: srun + torchrun --tee 3 output
                                                             ("[defaultN]:" prefixes), Megatron-DeepSpeed
  DIR/bundle/runs/<RUN>/attempt-<k>/nccl/<host>.<pid>.log     NCCL_DEBUG=INFO (NCCL_DEBUG_FILE=%h.%p)
  DIR/bundle/runs/<RUN>/attempt-7/steps/rank-NNNNN.jsonl.gz   per-rank step records for the whole attempt
  DIR/bundle/runs/<RUN>/slurm-<job9>.out                      the REQUEUED job: attempts 9 and 10 in ONE
                                                             file (#SBATCH --requeue --open-mode=append)
  DIR/bundle/runs/<RUN>/job-<job9>/nccl/<host>.<pid>.log      NCCL logs of attempts 9 and 10 (pids differ)
  DIR/bundle/nodes/<host>/messages | dmesg.log                syslog (RHEL /var/log/messages) or dmesg -T
  DIR/bundle/scheduler/jz/slurmctld.log, sacct.txt           sacct -D -P (the requeued job twice)
  DIR/truth.json
Usage: bloom_opt.py --out DIR [--seed N]     (stdlib only, deterministic per seed, ~15 MB, ~3 s)

Scenario: run "chron-176b", 128 GPUs = 16 nodes x 8 A100-SXM4-80GB of cluster "jz" (20 nodes: jzg-017..020
start as spares), Megatron-DeepSpeed TP=4 PP=8 DP=4, bf16, ZeRO-1, 30 s iterations, a save every 100
iterations on Lustre $SCRATCH (2.5-3.5 min each). Times in truth are the Slurm controller's (UTC); every
node's clock is off by a few seconds. Iteration lines have no time of their own (Megatron-DeepSpeed of
2022); DeepSpeed's "step=N" lines every 10 iterations and the datetime lines do.
  att 1  fresh start. Xid 79 on jzg-006 GPU2 (kernel log); 20 s later the ring neighbours jzg-005 and
         jzg-007 print NCCL WARN NET/IB completion errors (status=12) naming jzg-006's address: symptoms;
         600 s later every other rank's watchdog fires; slurmctld: node not responding, NODE_FAIL.
                                                                        [gpu_fell_off_bus, jzg-006]
  att 2  (jzg-017 replaces jzg-006). At the save of iteration N, Lustre OST scratch-OST0007 stops answering:
         five clients (jzg-002, -004, -011, -014, -016) log request timeouts / connection lost / hung
         tasks; their ranks block in the write, DeepSpeed rank 0 has already written `latest`; the other
         ranks wait in the post-save barrier until the NCCL watchdog (600 s) ends the job; jzg-011 then
         fails "Kill task failed" and is drained (a symptom, resumed before att 3). Root: the shared OST.
                                                                        [filesystem_io, host null]
  att 3  DeepSpeed follows `latest` to global_stepN, whose ZeRO shards from the hung writers are missing:
         FileNotFoundError on three ranks during the load, before any step.  [checkpoint_lost, host null]
  att 4  operators point `latest` back to global_step(N-100): loads N-100 (the fallback). A loss spike
         at ~+250 iterations heals by itself within ~60 iterations (NOT a divergence). Xid 74 NVLink
         fatal error on jzg-012 GPU4: that rank's NCCL call fails ("uncorrectable NVLink error").
                                                                        [nvlink_error, jzg-012]
  att 5  (jzg-018 replaces jzg-012). Loss diverges (grad norm explodes, loss 2.x -> 7+, nan iterations
         counted); the operators scancel the job ~25 min later.                [loss_divergence, host null]
  att 6  DELIBERATE rollback: loads the checkpoint two saves before the divergence (not the latest one),
         --lr lowered 1.2e-4 -> 6e-5 with --override-lr-scheduler (the loaded iteration is lower than the
         last saved: NOT a lost checkpoint). Xid 92 (high single-bit ECC rate) on jzg-010 two hours in:
         the job steps past it. Then an NCCL hang: no rank completes another step, every watchdog fires
         after 600 s, FAILED; the operators drain jzg-015 on suspicion.       [nccl_timeout, host null]
  att 7  (jzg-019 replaces jzg-015). jzg-019 GPU5 computes 6.5 % slower: every step of the attempt is
         ~5.9 % slower (synchronous training), per-rank records show it; runs into the 8 h TIME LIMIT.
                                                  [time_limit, host null] + [straggler, jzg-019]
  att 8  (jzg-020 replaces jzg-019). Xid 94 contained ECC error on jzg-008 GPU1 -> "CUDA error:
         uncorrectable ECC error encountered" in that rank; its neighbours jzg-007 and jzg-009 then print
         NET/IB completion errors (symptoms).                                    [gpu_memory_ecc, jzg-008]
  att 9  job J9 (jzg-015 back, jzg-008 out). jzg-003 dies silently (its kernel log just stops; it boots
         again 40 min later); neighbours jzg-002/jzg-004 print NET/IB errors; slurmctld: not responding,
         "requeue job JobId=J9 due to failure of node jzg-003".               [node_failure, jzg-003]
  att 10 the SAME job J9, requeued (jzg-006 back from repair instead of jzg-003); its output is appended
         to the same slurm-J9.out; runs to the end of training.
  Decoys: jzg-005, jzg-007 (att 1 symptoms; jzg-007 again in att 8), jzg-009 (Xid 63 row remap pending
  in att 1, training continues; symptom in att 8), the five OST clients, jzg-010 (Xid 92 in att 6),
  jzg-020 (idle spare with mlx5 link flaps and an Xid 48 during att 3-4, before it ever ran the job).

Ledger (truth.json expected_ledger, GPU-hours = 128 x seconds / 3600), the conventions of campaign1/2:
  startup    = attempt start (sacct Start) -> start of its first training step ("[before the start of
               training step] datetime"); att 3, which never stepped: start -> root event
  productive = kept steps (step <= the checkpoint the run later resumed from; all steps of the completed
               attempt); in att 7 only the 30 s baseline counts
  straggler  = step time above the baseline in att 7, kept steps only (pinned to jzg-019)
  checkpoint = durations of the saves that finished before the attempt's root event, kept or not (att 5's
               saves past the rollback target 1200), plus the tail after the final save
  recompute  = end of the last kept save of the attempt (or its first step start if none) -> root event,
               less the saves in it that finished (checkpoint above): all the time of the thrown-away steps,
               att 7's straggling on them too, and the partial step (the outsiders' rule, campaign1: within
               the recompute window everything is recompute; clusterlab/account/ledger.py and the simulator's
               expected.py follow it). campaign1 ("save stalls of kept checkpoints") and campaign2 ("the saves
               that completed") never meet an unkept finished save, so they do not decide that one
  hang       = root event -> attempt exit (sacct End), whatever the job printed in between. Root events: the
               Xid (79, 74, 94); the start of the save that hung on Lustre; the load failure; the first
               diverging iteration's start (att 5 stepped on, uselessly, for 52 iterations until the scancel:
               those steps, and any save among them, are hang); the end of the last completed step (NCCL
               hang); the time-limit kill; the node's last kernel line
  restart    = attempt exit -> next attempt start;  slowdown = data_stall = idle = 0
  (Every iteration prints its own time, which jitters by +-0.4 %: a kept step counts whole, jitter included, as
  productive; none of it is slowdown.)

Formats (public facts, text written anew): NVRM Xid 79/74/94/63/92/48 lines, syslog and dmesg -T shapes;
Lustre client messages (ptlrpc_expire_one_request "Request sent has timed out for slow reply", "Connection
to ... was lost; in progress operations using this service will wait for recovery to complete", "This
client was evicted by ...", "Connection restored to"); mlx5 "Link down"/"Link up"; NCCL 2.10 INFO/WARN
("NET/IB : Got completion from peer ... with status=12 ... vendor err 129", "Cuda failure '...'");
torch 1.11 ProcessGroupNCCL watchdog ("[E ProcessGroupNCCL.cpp:NNN] [Rank r] Watchdog caught collective
operation timeout: WorkNCCL(SeqNum=..., OpType=ALLREDUCE, Timeout(ms)=600000) ran for ... milliseconds
before timing out."), torch.distributed.elastic "ERROR:torch.distributed.elastic.multiprocessing.api:failed
(exitcode: ...)" and the ChildFailedError block; Megatron-DeepSpeed (bigscience) iteration lines
(" iteration N/ T | consumed samples: | consumed tokens: | elapsed time per iteration (s): | learning rate:
| global batch size: | lm loss: | grad norm: | num zeros: | number of skipped iterations: | number of nan
iterations: | samples per second: | TFLOPs: |"), "saving checkpoint at iteration", "successfully saved
checkpoint at iteration", "time (ms) | save-checkpoint:", DeepSpeed "[date] [INFO] [logging.py:68:log_dist]
[Rank 0] step=N, skipped=..." and "_load_checkpoint] rank: 0 loading checkpoint", DeepSpeed's
FileNotFoundError on a missing "bf16_zero_pp_rank_X_mp_rank_YY_optim_states.pt" (public issue threads);
slurmstepd "CANCELLED AT ... DUE TO TIME LIMIT / NODE FAILURE", slurmctld "requeue job JobId=N due to
failure of node X", "Kill task failed", "REQUEST_KILL_JOB", sacct -D -P.
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

UTC = UTC

RUN = "chron-176b"
CLUSTER, PROVIDER = "jz", "genci"
GPUS, GPN = 128, 8
TP, PP, DP = 4, 8, 4
GBS, SEQ = 512, 2048
TOKENS_PER_STEP = GBS * SEQ                    # 1,048,576
FLOPS_PER_TOKEN = 5.14e11
PEAK_A100 = 312e12
BASE_STEP = 30.0
BASE_COMPUTE, BASE_DATA = 27.2, 0.15
SLOW_FACTOR = 1.065                            # compute_s of jzg-019 GPU5 in attempt 7
SLOW_STEP = BASE_STEP + BASE_COMPUTE * (SLOW_FACTOR - 1.0)
JITTER = 0.004                                 # +-0.4 %: productive, kept steps count whole (see the ledger)
SAVE_EVERY = 100
DS_PRINT = 10
TRAIN_ITERS = 3300
WATCHDOG_S = 600.0
T0 = datetime(2026, 12, 1, 7, 30, 0, tzinfo=UTC).timestamp()
CKPT = "/gpfsscratch/rech/six/commun/checkpoints/chron-176b/checkpoints/main"
PY = "/gpfswork/rech/six/commun/conda/tr11-176B-ml/bin/python"
NCCL_VER = "2.10.3"
HOSTS = [f"jzg-{i:03d}" for i in range(1, 21)]
BUS = ["07", "0f", "47", "4e", "87", "90", "b7", "bd"]
OST = "scratch-OST0007"
OST_NID = "10.148.8.17@o2ib3"
LUSTRE_HOSTS = ["jzg-002", "jzg-004", "jzg-011", "jzg-014", "jzg-016"]
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]


# ----------------------------------------------------------------------------- time formats
def _dt(t: float) -> tuple[datetime, int]:
    us = int(round(t * 1e6))
    s, frac = divmod(us, 1_000_000)
    return datetime.fromtimestamp(s, UTC), frac


def iso_z(t: float) -> str:
    d, us = _dt(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{us // 1000:03d}Z"


def ds_ts(t: float) -> str:                  # python logging asctime
    d, us = _dt(t)
    return f"{d:%Y-%m-%d %H:%M:%S},{us // 1000:03d}"


def meg_ts(t: float) -> str:
    return _dt(t)[0].strftime("%Y-%m-%d %H:%M:%S")


def date_cmd(t: float) -> str:
    d, _ = _dt(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def slurm_ts(t: float) -> str:
    return _dt(t)[0].strftime("%Y-%m-%dT%H:%M:%S")


def ctld_ts(t: float) -> str:
    d, us = _dt(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{us // 1000:03d}]"


def syslog_ts(t: float) -> str:
    d, _ = _dt(t)
    return f"{d:%b} {d.day:2d} {d:%H:%M:%S}"


def dmesg_T(t: float) -> str:
    d, _ = _dt(t)
    return f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}]"


def c10_ts(t: float) -> str:                   # torch 1.11 glog-less c10 prefix has no time; kept for WARN lines
    d, us = _dt(t)
    return f"{d:%m%d} {d:%H:%M:%S}.{us:06d}"


def elapsed(sec: float) -> str:
    sec = int(round(sec))
    d, r = divmod(sec, 86400)
    h, r = divmod(r, 3600)
    m, s = divmod(r, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts: list[str]) -> str:
    nums = sorted(int(h[4:]) for h in hosts)
    out, start, prev = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(f"{start:03d}" if start == prev else f"{start:03d}-{prev:03d}")
        if n is not None:
            start = prev = n
    return f"jzg-[{','.join(out)}]"


def host_ip(h: str) -> str:
    return f"10.148.2.{int(h[4:]) + 20}"


class Sink:
    def __init__(self) -> None:
        self.items: list[tuple[float, int, str]] = []

    def add(self, t: float, line: str) -> None:
        self.items.append((t, len(self.items), line))

    def extend(self, t: float, lines: list[str]) -> None:
        for ln in lines:
            self.add(t, ln)

    def render(self) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
        return ("\n".join(x[2] for x in self.items) + "\n").encode("utf-8")


def write(path: Path, data: bytes, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=6) as f:
            f.write(data)
        data = buf.getvalue()
    path.write_bytes(data)


# ----------------------------------------------------------------------------- the timeline
class Att:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps: list[tuple[int, float, float]] = []
        self.saves: list[tuple[int, float, float]] = []
        self.R = self.E = self.F = None
        self.kept = None


def node_sets() -> dict[int, list[str]]:
    h = {i: f"jzg-{i:03d}" for i in range(1, 21)}
    base = [h[i] for i in range(1, 17)]

    def swap(nodes, out, inn):
        return sorted([x for x in nodes if x != h[out]] + [h[inn]])
    s = {1: base}
    s[2] = s[3] = s[4] = swap(base, 6, 17)
    s[5] = s[6] = swap(s[4], 12, 18)
    s[7] = swap(s[6], 15, 19)
    s[8] = swap(s[7], 19, 20)
    s[9] = swap(s[8], 8, 15)
    s[10] = swap(s[9], 3, 6)
    return s


def build(seed: int) -> list[Att]:
    rng = random.Random(f"{seed}-timeline")
    ns = node_sets()
    J9 = 2451977
    specs = [
        dict(k=1, job=2451390, kind="xid79", mode="gpu_fell_off_bus", host="jzg-006", gpu=2, fail_after=437),
        dict(k=2, job=2451522, kind="lustre", mode="filesystem_io", host=None, gpu=None, fail_after=300),
        dict(k=3, job=2451560, kind="loadfail", mode="checkpoint_lost", host=None, gpu=None),
        dict(k=4, job=2451601, kind="xid74", mode="nvlink_error", host="jzg-012", gpu=4, fail_after=418),
        dict(k=5, job=2451688, kind="diverge", mode="loss_divergence", host=None, gpu=None, fail_after=380),
        dict(k=6, job=2451740, kind="hang", mode="nccl_timeout", host=None, gpu=None, fail_after=391),
        dict(k=7, job=2451801, kind="time_limit", mode="time_limit", host=None, gpu=None),
        dict(k=8, job=2451903, kind="xid94", mode="gpu_memory_ecc", host="jzg-008", gpu=1, fail_after=296),
        dict(k=9, job=J9, kind="nodefail", mode="node_failure", host="jzg-003", gpu=None, fail_after=244),
        dict(k=10, job=J9, kind="complete", mode=None, host=None, gpu=None),
    ]
    gaps = {1: 2900, 2: 1500, 3: 700, 4: 2400, 5: 3300, 6: 2000, 7: 1100, 8: 2600, 9: 150}
    atts = [Att(nodes=ns[s["k"]], **s) for s in specs]
    t, load = T0, 0
    for a in atts:
        a.S = float(round(t))
        a.load = load
        a.init = 300 + rng.randint(-20, 40) + (0 if load == 0 else 140)     # a load reads ~1 TB from Lustre
        if a.kind == "loadfail":
            a.R = a.S + a.init - 25.0 + rng.uniform(0, 2)
            a.E = a.R + 48.0
            a.kept = load
        else:
            while True:                       # re-simulate if the time limit would fall inside a save
                a.F = a.S + a.init
                if simulate(a, random.Random(f"{seed}-steps-{a.k}")):
                    break
                a.init += 97
        if a.kind == "lustre":
            load = a.hung_save                # att 3 follows `latest` to the hung save's tag
        elif a.kind == "loadfail":
            load = a.load - SAVE_EVERY        # operators point `latest` back one save
        else:
            load = a.kept                     # for the divergence: the rollback target
        if a.k in gaps:
            t = a.E + gaps[a.k] + rng.randint(-120, 120)
    return atts


def save_dur(rng: random.Random) -> float:
    return round(rng.uniform(150.0, 210.0), 2)


def step_dur(a: Att, rng: random.Random) -> float:
    base = SLOW_STEP if a.kind == "time_limit" else BASE_STEP
    return base * (1.0 + rng.uniform(-JITTER, JITTER))


def simulate(a: Att, rng: random.Random) -> bool:
    a.steps, a.saves, a.R = [], [], None
    t, n = a.F, a.load
    a.T = a.S + 8 * 3600 if a.kind == "time_limit" else None
    fail_step = a.load + a.fail_after if hasattr(a, "fail_after") and a.fail_after else None
    while True:
        if a.kind == "complete" and n >= TRAIN_ITERS:
            break
        n1 = n + 1
        d = step_dur(a, rng)
        if fail_step is not None and n1 == fail_step and a.kind in ("xid79", "xid74", "xid94", "nodefail"):
            a.R = float(math.floor(t + 0.45 * d))
            a.E = a.R + {"xid79": 640.0, "xid74": 52.0, "xid94": 44.0, "nodefail": 655.0}[a.kind]
            break
        if a.kind == "hang" and n1 == fail_step:
            a.R = t                               # the end of the last completed step
            a.E = a.R + WATCHDOG_S + 41.0
            break
        if a.kind == "diverge" and n1 == fail_step:
            a.R = t                               # start of the first diverging iteration
            a.diverge_step = n1
            # the job keeps stepping (uselessly) until the scancel 52 iterations later
            for j in range(52):
                a.steps.append((n1 + j, t, d))
                t += d
                d = step_dur(a, rng)
                if (n1 + j) % SAVE_EVERY == 0:
                    c = save_dur(rng)
                    a.saves.append((n1 + j, t, c))
                    t += c
            a.kill = t + 0.45 * d
            a.E = a.kill + 3.0
            break
        if a.kind == "time_limit" and t + d > a.T:
            a.R = a.T
            a.E = a.T + 2.0
            break
        a.steps.append((n1, t, d))
        t += d
        n = n1
        if n % SAVE_EVERY == 0:
            c = save_dur(rng)
            if a.kind == "lustre" and n == a.load + a.fail_after:
                a.R = t                           # the save that never completes
                a.hung_save = n
                a.E = a.R + WATCHDOG_S + 58.0
                break
            if a.kind == "time_limit" and t + c > a.T - 5:
                return False
            a.saves.append((n, t, c))
            t += c
    if a.kind == "complete":
        a.E = float(math.ceil(t + 3.0))
    if a.kind == "time_limit" and a.R is None:
        return False
    saved = [n for n, _, _ in a.saves]
    if a.kind == "diverge":
        before = [n for n in saved if n < a.diverge_step]
        a.kept = before[-2]                       # the rollback target: two saves before the divergence
        a.last_saved = before[-1]
    elif a.kind == "complete":
        a.kept = 10 ** 9
    else:
        a.kept = saved[-1] if saved else a.load
    return True


# ----------------------------------------------------------------------------- ledger
def ledger(atts: list[Att]):
    cats = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute",
                          "hang", "restart", "startup", "idle"], 0.0)
    per = []
    for i, a in enumerate(atts):
        if a.kind == "loadfail":
            cats["startup"] += a.R - a.S
            cats["hang"] += a.E - a.R
        else:
            cats["startup"] += a.F - a.S
            # the outsiders' rules (and the ledger's, clusterlab/account/ledger.py, simulator/expected.py): a kept
            # step's time above the baseline is booked by its cause (the slow GPU's excess is straggler); a
            # thrown-away step is all recompute, its straggling too (att 7); a save that finished before the root
            # event is checkpoint, kept or not (att 5's save of the step after the rollback target); recompute is
            # the rest of the time from the last kept save to the root event
            moved = 0.0
            for n, _, d in a.steps:
                if n > a.kept:
                    continue
                if a.kind == "time_limit":
                    cats["straggler"] += d - BASE_STEP
                    cats["productive"] += BASE_STEP
                else:
                    cats["productive"] += d
            # hang runs from the root event, whatever the job printed after it: the diverged job's steps until the
            # scancel (att 5) trained on a diverged loss, neither kept nor thrown-away work
            r = a.R
            kept_saves = [(n, s, c) for n, s, c in a.saves if n <= a.kept]
            done_saves = [(n, s, c) for n, s, c in a.saves if n <= a.kept or (r is not None and s + c <= r)]
            for n, _, c in done_saves:
                cats["checkpoint"] += c
                moved += c if n > a.kept else 0.0
            if a.kind == "complete":
                cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
                continue
            base = (kept_saves[-1][1] + kept_saves[-1][2]) if kept_saves else a.F
            cats["recompute"] += r - base - moved
            cats["hang"] += a.E - r
        nxt = atts[i + 1]
        cats["restart"] += nxt.S - a.E
        rec = 0.0 if a.kind == "loadfail" else r - base - moved
        per.append(dict(recompute=rec, hang=a.E - (a.R if a.kind == "loadfail" else r), restart=nxt.S - a.E,
                        startup=(nxt.F or nxt.R) - nxt.S))
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total, (sum(cats.values()), total)
    g = GPUS / 3600.0
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per])


# ----------------------------------------------------------------------------- fleet facts
class Fleet:
    def __init__(self, seed: int):
        rng = random.Random(f"{seed}-fleet")
        self.skew = {h: round(rng.uniform(-7.0, 7.0), 3) for h in HOSTS}
        self.skew["jzg-001"] = 0.4                 # the batch host prints the training log
        self.boot = {h: T0 - rng.randint(3 * 86400, 9 * 86400) for h in HOSTS}
        self.uuid = {}
        for h in HOSTS:
            for g in range(GPN):
                x = f"{rng.getrandbits(128):032x}"
                self.uuid[h, g] = f"GPU-{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"


class Pids:
    def __init__(self, seed: int, a: Att):
        rng = random.Random(f"{seed}-pids-{a.k}")
        self.agent, self.worker = {}, {}
        for h in a.nodes:
            ag = rng.randint(20_000, 990_000)
            self.agent[h] = ag
            for d in range(GPN):
                self.worker[h, d] = ag + 31 + d


def pre(d: int) -> str:
    return f"[default{d}]:"


# ----------------------------------------------------------------------------- training log
def lr_at(n: int, a: Att) -> float:
    lmax = 6.0e-5 if a.k >= 6 else 1.2e-4
    warm = 200
    if n < warm and a.k < 6:
        return lmax * n / warm
    p = min(1.0, (n - warm) / (TRAIN_ITERS * 1.1))
    return 6e-6 + 0.5 * (lmax - 6e-6) * (1 + math.cos(math.pi * p))


def loss_at(n: int, a: Att, rng: random.Random) -> tuple[float, float, int]:
    """(loss, grad norm, nan iterations so far in this log window)."""
    loss = 2.05 + 7.9 * math.exp(-n / 160.0) + 0.55 * math.exp(-n / 2500.0) + rng.gauss(0, 0.01)
    gn = 0.18 + 1.9 * math.exp(-n / 300.0) + abs(rng.gauss(0, 0.015))
    if a.kind == "xid74":                         # self-healing spike
        s0 = a.load + 250
        if s0 <= n < s0 + 60:
            x = n - s0
            bump = 0.9 * math.exp(-x / 14.0) * min(1.0, (x + 1) / 3.0)
            loss += bump
            gn += 9.0 * math.exp(-x / 8.0)
    if a.kind == "diverge":
        if n >= a.kept + 60:                      # grad norm creeping up before the blow-up
            gn += 0.004 * (n - a.kept - 60)
        if n >= a.diverge_step:
            x = n - a.diverge_step
            loss = 2.3 + 5.6 * min(1.0, (x + 1) / 6.0) + rng.gauss(0, 0.2)
            gn = 40.0 + 25.0 * rng.random()
    return loss, gn


def startup_lines(a: Att, L: Sink, rng: random.Random, pids: Pids) -> None:
    S = a.S
    L.add(S, f"START TIME: {date_cmd(S)}")
    L.add(S + 0.1, f"SLURM_JOB_ID={a.job} SLURM_JOB_NODELIST={hostlist(a.nodes)} SLURM_RESTART_COUNT="
                   f"{1 if a.k == 10 else 0}")
    L.add(S + 1.0, f"+ srun --jobid {a.job} bash -c '{PY} -u -m torch.distributed.run --nproc_per_node 8 "
                   f"--nnodes 16 --rdzv_endpoint {a.nodes[0]}:6000 --rdzv_backend c10d --max_restarts 0 "
                   f"--tee 3 pretrain_gpt.py ...'")
    for i, _h in enumerate(a.nodes):
        t = S + 14 + 0.05 * i
        L.extend(t, ["WARNING:__main__:", "*" * 49,
                     "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to "
                     "avoid your system being overloaded, please further tune the variable for optimal "
                     "performance in your application as needed. ", "*" * 49])
    t = S + 40
    L.add(t, f"{pre(0)}using world size: {GPUS}, data-parallel-size: {DP}, tensor-model-parallel size: {TP}, "
             f"pipeline-model-parallel size: {PP} ")
    L.add(t, f"{pre(0)}using torch.bfloat16 for parameters ...")
    args = [("bf16", "True"), ("checkpoint_activations", "True"), ("clip_grad", "1.0"),
            ("deepspeed", "True"), ("global_batch_size", str(GBS)), ("hidden_size", "10240"),
            ("load", CKPT), ("log_interval", "1"), ("lr", "6e-05" if a.k >= 6 else "0.00012"),
            ("lr_decay_style", "cosine"), ("lr_warmup_samples", "102400"), ("micro_batch_size", "2"),
            ("min_lr", "6e-06"), ("num_attention_heads", "80"), ("num_layers", "64"),
            ("override_lr_scheduler", "True" if a.k >= 6 else "False"),
            ("pipeline_model_parallel_size", str(PP)), ("save", CKPT), ("save_interval", str(SAVE_EVERY)),
            ("seq_length", str(SEQ)), ("tensor_model_parallel_size", str(TP)), ("train_iters", str(TRAIN_ITERS)),
            ("world_size", str(GPUS)), ("zero_stage", "1")]
    L.add(t, f"{pre(0)}------------------------ arguments ------------------------")
    for k, v in args:
        L.add(t, f"{pre(0)}  {k} {'.' * (47 - len(k))} {v}")
    L.add(t, f"{pre(0)}-------------------- end of arguments ---------------------")
    L.extend(t + 1, [f"{pre(0)}> building GPT2BPETokenizer tokenizer ...",
                     f"{pre(0)} > padded vocab (size: 250680) with 200 dummy tokens (new size: 250880)",
                     f"{pre(0)}> initializing torch distributed ..."])
    for d in (3, 6):
        L.add(t + 3, f"{pre(d)}/gpfswork/rech/six/commun/conda/tr11-176B-ml/lib/python3.8/site-packages/torch/"
                     f"distributed/distributed_c10d.py:1249: UserWarning: ProcessGroupNCCL is only supported with "
                     f"GPUs, no GPUs found!")
    ti = S + 150
    L.add(ti - 1, f"{pre(0)}time to initialize megatron (seconds): {ti - S - 40 + rng.random():.3f}")
    L.add(ti, f"{pre(0)}[after megatron is initialized] datetime: {meg_ts(ti)} ")
    L.add(ti + 0.5, f"{pre(0)}building GPT model ...")
    L.add(ti + 2, f"{pre(0)}[{ds_ts(ti + 2)}] [INFO] [utils.py:827:see_memory_usage] Before Building Model")
    L.add(ti + 3, f"{pre(0)}SEED_LAYERS=False BASE_SEED=1234 SEED_FN=None")
    tl = ti + 40
    if a.load == 0:
        L.extend(tl, [f"{pre(0)}WARNING: could not find the metadata file {CKPT}/latest_checkpointed_iteration.txt ",
                      f"{pre(0)}    will not load any checkpoints and will start from random"])
        a.t_model = tl + 5
    else:
        tag = f"global_step{a.load}"
        L.add(tl, f"{pre(0)}[{ds_ts(tl)}] [INFO] [engine.py:1553:_load_checkpoint] rank: 0 loading checkpoint: "
                  f"{CKPT}/{tag}/mp_rank_00_model_states.pt")
        a.t_load = tl
        a.t_model = (a.F or a.R) - 110
        if a.kind != "loadfail":
            L.add(a.t_model - 20, f"{pre(0)}[{ds_ts(a.t_model - 20)}] [INFO] [engine.py:2898:_get_all_zero_checkpoint_"
                                  f"state_dicts] successfully read {DP} ZeRO state_dicts for rank 0")
            L.add(a.t_model - 2, f"{pre(0)}  successfully loaded checkpoint from {CKPT} at iteration {a.load}")
    if a.kind == "loadfail":
        return
    tm = a.t_model
    L.add(tm, f"{pre(0)}[after model, optimizer, and learning rate scheduler are built] datetime: {meg_ts(tm)} ")
    L.extend(tm + 1, [f"{pre(0)}> building train, validation, and test datasets ...",
                      f"{pre(0)} > datasets target sizes (minimum size):",
                      f"{pre(0)}    train:      {TRAIN_ITERS * GBS}"])
    td = a.F - 4
    L.add(td, f"{pre(0)}[after dataloaders are built] datetime: {meg_ts(td)} ")
    L.extend(td + 1, [f"{pre(0)}done with setup ...", f"{pre(0)}training ..."])
    L.add(a.F, f"{pre(0)}[before the start of training step] datetime: {meg_ts(a.F)} ")


def iteration_lines(a: Att, L: Sink, seed: int) -> None:
    lrng = random.Random(f"{seed}-loss-{a.k}")
    last = GPUS // GPN - 1
    nan = 0
    for n, ts, d in a.steps:
        end = ts + d
        loss, gn = loss_at(n, a, lrng)
        skipped = 0
        if a.kind == "diverge" and n >= a.diverge_step + 8:
            nan = 1 if lrng.random() < 0.6 else 0
            skipped = nan
        loss_s = "nan" if nan else f"{loss:.6E}"
        sps = GBS / d
        tfl = TOKENS_PER_STEP * FLOPS_PER_TOKEN / d / GPUS / 1e12
        L.add(end, f"{pre(7)} iteration {n:8d}/{TRAIN_ITERS:8d} | consumed samples: {n * GBS:12d} | "
                   f"consumed tokens: {n * TOKENS_PER_STEP:14d} | elapsed time per iteration (s): {d:.2f} | "
                   f"learning rate: {lr_at(n, a):.3E} | global batch size: {GBS:5d} | lm loss: {loss_s} | "
                   f"grad norm: {gn:.3f} | num zeros: 0.0 | number of skipped iterations: {skipped:3d} | "
                   f"number of nan iterations: {nan:3d} | samples per second: {sps:.3f} | TFLOPs: {tfl:.2f} |")
        if n % DS_PRINT == 0:
            lr = lr_at(n, a)
            L.add(end + 0.002, f"{pre(0)}[{ds_ts(end + 0.002)}] [INFO] [logging.py:68:log_dist] [Rank 0] step={n}, "
                               f"skipped={skipped}, lr=[{lr:.6e}, {lr:.6e}], mom=[(0.9, 0.95), (0.9, 0.95)]")
        if n == a.steps[0][0]:
            L.add(end + 0.01, f"{pre(7)}[Rank {last * GPN + 7}] (after {n} iterations) memory (MB) | allocated: "
                              f"41803.45 | max allocated: 64210.11 | reserved: 70142.0 | max reserved: 70142.0")
    for n, s, c in a.saves:
        tag = f"global_step{n}"
        L.add(s + 0.001, f"{pre(0)}saving checkpoint at iteration {n:7d} to {CKPT}")
        L.add(s + 0.5, f"{pre(0)}[{ds_ts(s + 0.5)}] [INFO] [logging.py:68:log_dist] [Rank 0] Saving model "
                       f"checkpoint: {CKPT}/{tag}/mp_rank_00_model_states.pt")
        L.add(s + c - 0.05, f"{pre(0)}  successfully saved checkpoint at iteration {n:7d} to {CKPT}")
        L.add(s + c - 0.04, f"{pre(0)}time (ms) | save-checkpoint: {c * 1000 - 40:.2f}")


WD = "[E ProcessGroupNCCL.cpp:737] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, " \
     "OpType={op}, Timeout(ms)=600000) ran for {ran} milliseconds before timing out."
TAKE_DOWN = ("[E ProcessGroupNCCL.cpp:414] Some NCCL operations have failed or timed out. Due to the asynchronous "
             "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data. To avoid "
             "this inconsistency, we are taking the entire process down.")


def child_failed(t: float, host: str, ents: list[tuple[int, int, int, int, str]], root_i: int) -> list[str]:
    stamp = _dt(t)[0].strftime("%Y-%m-%d_%H:%M:%S")
    out = ["Traceback (most recent call last):",
           '  File "/gpfswork/rech/six/commun/conda/tr11-176B-ml/lib/python3.8/runpy.py", line 194, in _run_module_as_main',
           '    return _run_code(code, main_globals, None,',
           '  File "/gpfswork/rech/six/commun/conda/tr11-176B-ml/lib/python3.8/site-packages/torch/distributed/launcher/api.py", line 245, in launch_agent',
           "    raise ChildFailedError(",
           "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
           "=" * 56, "pretrain_gpt.py FAILED", "-" * 56, "Failures:"]

    def one(i, e):
        r, lr, ec, pid, tb = e
        return [f"[{i}]:", f"  time      : {stamp}", f"  host      : {host}", f"  rank      : {r} (local_rank: {lr})",
                f"  exitcode  : {ec} (pid: {pid})", "  error_file: <N/A>", f"  traceback : {tb}"]
    others = [e for j, e in enumerate(ents) if j != root_i]
    if not others:
        out.append("  <NO_OTHER_FAILURES>")
    for i, e in enumerate(others, 1):
        out += one(i, e)
    out += ["-" * 56, "Root Cause (first observed failure):"] + one(0, ents[root_i]) + ["=" * 56]
    return out


def agent_fail(L: Sink, t: float, h: str, i: int, pids: Pids, codes: dict[int, int], root_d: int) -> None:
    ents = []
    for d in range(GPN):
        ec = codes.get(d, -15)
        tb = ("To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html" if ec == 1 else
              f"Signal {-ec} ({'SIGABRT' if ec == -6 else 'SIGTERM'}) received by PID {pids.worker[h, d]}")
        ents.append((i * GPN + d, d, ec, pids.worker[h, d], tb))
    L.add(t, f"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: {codes[root_d]}) local_rank: "
             f"{root_d} (pid: {pids.worker[h, root_d]}) of binary: {PY}")
    L.extend(t + 0.01, child_failed(t, h, ents, root_d))


def watchdogs(L: Sink, a: Att, pids: Pids, hosts: list[str], t0: float, rng: random.Random, op: str) -> None:
    seq = 40_000 + rng.randint(0, 9000)
    for h in hosts:
        i = a.nodes.index(h)
        for d in range(GPN):
            r = i * GPN + d
            tw = t0 + rng.uniform(0.05, 1.5)
            L.add(tw, pre(d) + WD.format(r=r, seq=seq, op=op, ran=600000 + rng.randint(10, 1500)))
            L.add(tw + 0.002, pre(d) + TAKE_DOWN)
        tf = t0 + 4.0 + 0.1 * i
        agent_fail(L, tf, h, i, pids, {d: -6 for d in range(GPN)}, rng.randint(0, 7))


def srun_tail(L: Sink, a: Att, t: float, failed: list[str], nodefail: str | None = None) -> None:
    for h in failed:
        L.add(t, f"srun: error: {h}: task {a.nodes.index(h)}: Exited with exit code 1")
    L.add(t + 0.2, f"srun: launch/slurm: _step_signal: Terminating StepId={a.job}.0")
    if nodefail:
        L.add(a.E - 2.0, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(a.E - 2.0)} "
                         f"DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***")
        L.add(a.E - 1.9, f"srun: error: Node failure on {nodefail}")
    else:
        L.add(t + 0.4, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(t + 0.4)} ***")
    for j, h in enumerate(a.nodes):
        if h not in failed and h != nodefail:
            L.add(a.E - 1.5 + 0.01 * j, f"srun: error: {h}: task {j}: Terminated")
    L.add(a.E - 1.0, f"srun: Force Terminated StepId={a.job}.0")


def ending(a: Att, L: Sink, pids: Pids, fleet: Fleet, rng: random.Random, ev: dict) -> None:
    R, E = a.R, a.E
    if a.kind == "xid79":
        dead = a.host
        watchdogs(L, a, pids, [h for h in a.nodes if h != dead], R + WATCHDOG_S, rng, "ALLREDUCE")
        srun_tail(L, a, R + 612.0, [h for h in a.nodes if h != dead], nodefail=dead)
    elif a.kind == "lustre":
        stuck = [h for h in a.nodes if h in LUSTRE_HOSTS]
        watchdogs(L, a, pids, [h for h in a.nodes if h not in stuck], R + WATCHDOG_S, rng, "BARRIER")
        t = R + WATCHDOG_S + 9.0
        for h in stuck:
            i = a.nodes.index(h)
            L.add(t, f"WARNING:torch.distributed.elastic.multiprocessing.api:Sending process {pids.worker[h, 0]} "
                     f"closing signal SIGTERM")
        L.add(t + 30.5, f"WARNING:torch.distributed.elastic.multiprocessing.api:Unable to shutdown process "
                        f"{pids.worker['jzg-011', 2]} via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL")
        srun_tail(L, a, R + WATCHDOG_S + 12.0, [h for h in a.nodes if h not in stuck])
        L.add(E - 3.0, f"slurmstepd: error: Kill task failed for StepId={a.job}.0 on jzg-011")
    elif a.kind == "loadfail":
        bad = [(LUSTRE_HOSTS[1], 5), (LUSTRE_HOSTS[2], 2), (LUSTRE_HOSTS[3], 7)]
        for j, (h, d) in enumerate(bad):
            i = a.nodes.index(h)
            r = i * GPN + d
            dp, mp = r // (TP * PP), r % TP
            t = R + 0.3 * j
            tb = ["Traceback (most recent call last):",
                  '  File "/gpfswork/rech/six/code/tr11-176B-ml/Megatron-DeepSpeed/pretrain_gpt.py", line 231, in <module>',
                  "    pretrain(train_valid_test_datasets_provider, model_provider, forward_step,",
                  '  File "/gpfswork/rech/six/code/tr11-176B-ml/Megatron-DeepSpeed/megatron/training.py", line 141, in pretrain',
                  "    model, optimizer, lr_scheduler = setup_model_and_optimizer(model_provider)",
                  '  File "/gpfswork/rech/six/code/tr11-176B-ml/Megatron-DeepSpeed/megatron/training.py", line 450, in setup_model_and_optimizer',
                  "    args.iteration = load_checkpoint(model, optimizer, lr_scheduler)",
                  '  File "/gpfswork/rech/six/code/tr11-176B-ml/Megatron-DeepSpeed/megatron/checkpointing.py", line 278, in load_checkpoint',
                  "    loaded_dir, state_dict = model[0].load_checkpoint(load_dir)",
                  '  File "/gpfswork/rech/six/code/tr11-176B-ml/DeepSpeed/deepspeed/runtime/engine.py", line 2576, in load_checkpoint',
                  "    success = self._load_zero_checkpoint(",
                  '  File "/gpfswork/rech/six/code/tr11-176B-ml/DeepSpeed/deepspeed/runtime/engine.py", line 2741, in _get_all_zero_checkpoint_state_dicts',
                  "    _state = self.checkpoint_engine.load(",
                  '  File "/gpfswork/rech/six/commun/conda/tr11-176B-ml/lib/python3.8/site-packages/torch/serialization.py", line 594, in load',
                  "    with _open_file_like(f, 'rb') as opened_file:",
                  f"FileNotFoundError: [Errno 2] No such file or directory: '{CKPT}/global_step{a.load}/"
                  f"bf16_zero_pp_rank_{dp}_mp_rank_{mp:02d}_optim_states.pt'"]
            L.extend(t, [pre(d) + ln for ln in tb])
            agent_fail(L, R + 2.5 + 0.2 * j, h, i, pids, {d: 1}, d)
        srun_tail(L, a, R + 4.0, [h for h, _ in bad])
    elif a.kind == "xid74":
        h, d = a.host, a.gpu
        i = a.nodes.index(h)
        r = i * GPN + d
        t = R + 1.6
        L.extend(t, [pre(d) + "Traceback (most recent call last):",
                     pre(d) + '  File "/gpfswork/rech/six/code/tr11-176B-ml/Megatron-DeepSpeed/megatron/p2p_communication.py", line 124, in _communicate',
                     pre(d) + "    torch.distributed.all_reduce(tensor_recv_prev, group=mpu.get_pipeline_model_parallel_group())",
                     pre(d) + f"RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1169, "
                              f"unhandled cuda error, NCCL version {NCCL_VER}",
                     pre(d) + "ncclUnhandledCudaError: Call to CUDA function failed."])
        agent_fail(L, R + 3.1, h, i, pids, {**{dd: -15 for dd in range(GPN)}, d: 1}, d)
        srun_tail(L, a, R + 4.5, [h])
        ev["xid74_rank"] = r
    elif a.kind == "xid94":
        h, d = a.host, a.gpu
        i = a.nodes.index(h)
        t = R + 1.1
        L.extend(t, [pre(d) + "Traceback (most recent call last):",
                     pre(d) + '  File "/gpfswork/rech/six/code/tr11-176B-ml/Megatron-DeepSpeed/megatron/schedules.py", line 97, in forward_step',
                     pre(d) + "    output_tensor, loss_func = forward_step_func(data_iterator, model)",
                     pre(d) + "RuntimeError: CUDA error: uncorrectable ECC error encountered",
                     pre(d) + "CUDA kernel errors might be asynchronously reported at some other API call,so the "
                              "stacktrace below might be incorrect.",
                     pre(d) + "For debugging consider passing CUDA_LAUNCH_BLOCKING=1."])
        agent_fail(L, R + 3.0, h, i, pids, {**{dd: -15 for dd in range(GPN)}, d: 1}, d)
        srun_tail(L, a, R + 4.2, [h])
    elif a.kind == "hang":
        watchdogs(L, a, pids, a.nodes, R + WATCHDOG_S, rng, "ALLREDUCE")
        srun_tail(L, a, R + WATCHDOG_S + 9.0, list(a.nodes))
    elif a.kind == "nodefail":
        dead = a.host
        watchdogs(L, a, pids, [h for h in a.nodes if h != dead], R + WATCHDOG_S, rng, "ALLREDUCE")
        srun_tail(L, a, R + 612.0, [h for h in a.nodes if h != dead], nodefail=dead)
    elif a.kind == "diverge":
        L.add(a.kill, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(a.kill)} ***")
        L.add(a.kill + 0.05, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(a.kill)} ***")
        for i, _h in enumerate(a.nodes):
            L.add(a.kill + 0.3 + 0.02 * i, "WARNING:torch.distributed.elastic.agent.server.api:Received 15 death "
                                           "signal, shutting down workers")
    elif a.kind == "time_limit":
        L.add(R, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(R)} DUE TO TIME LIMIT ***")
        L.add(R + 0.05, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(R)} DUE TO "
                        f"TIME LIMIT ***")
        for i, _h in enumerate(a.nodes):
            L.add(R + 0.3 + 0.02 * i, "WARNING:torch.distributed.elastic.agent.server.api:Received 15 death signal, "
                                      "shutting down workers")
    else:
        L.add(E - 2.5, f"{pre(0)}[after training is done] datetime: {meg_ts(E - 2.5)} ")
        L.add(E - 1.0, f"END TIME: {date_cmd(E - 1.0)}")


def train_log(a: Att, pids: Pids, fleet: Fleet, seed: int, ev: dict) -> bytes:
    rng = random.Random(f"{seed}-train-{a.k}")
    L = Sink()
    startup_lines(a, L, rng, pids)
    if a.kind != "loadfail":
        iteration_lines(a, L, seed)
        if a.kind == "lustre":
            n = a.hung_save
            L.add(a.R + 0.001, f"{pre(0)}saving checkpoint at iteration {n:7d} to {CKPT}")
            L.add(a.R + 0.5, f"{pre(0)}[{ds_ts(a.R + 0.5)}] [INFO] [logging.py:68:log_dist] [Rank 0] Saving model "
                             f"checkpoint: {CKPT}/global_step{n}/mp_rank_00_model_states.pt")
    ending(a, L, pids, fleet, rng, ev)
    return L.render()


# ----------------------------------------------------------------------------- NCCL logs
def nccl_log(a: Att, h: str, pids: Pids, seed: int) -> bytes:
    rng = random.Random(f"{seed}-nccl-{a.k}-{h}")
    i = a.nodes.index(h)
    out = []
    for d in range(GPN):
        r = i * GPN + d
        w = pids.worker[h, d]
        p = f"{h}:{w}:{w + 1200 + d} [{d}] NCCL INFO "
        out += [f"{h}:{w}:{w} [{d}] NCCL INFO Bootstrap : Using ib0:{host_ip(h)}<0>",
                f"{h}:{w}:{w} [{d}] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation"]
        if r == 0:
            out.append(f"NCCL version {NCCL_VER}+cuda11.3")
        out += [p + "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; OOB ib0:"
                    f"{host_ip(h)}<0>",
                p + "Using network IB",
                p + f"Trees [0] {r + 1 if d < 7 else -1}/-1/-1->{r}->{r - 1 if d else -1}",
                p + f"Channel 00 : {r}[{BUS[d]}000] -> {(r + 1) % GPUS}[{BUS[(d + 1) % GPN]}000] via "
                    + ("P2P/IPC/read" if d < 7 else f"NET/IB/{d // 2}/GDRDMA"),
                p + "Connected all rings", p + "Connected all trees",
                p + f"comm 0x{rng.getrandbits(40):x} rank {r} nranks {GPUS} cudaDev {d} busId {BUS[d]}000 - Init COMPLETE"]
    return ("\n".join(out) + "\n").encode()


def nccl_net_err(h: str, peer: str, d: int, pids: Pids) -> list[str]:
    w = pids.worker[h, d]
    return [f"{h}:{w}:{w + 1700} [{d}] transport/net_ib.cc:1134 NCCL WARN NET/IB : Got completion from peer "
            f"{host_ip(peer)}<{40000 + 17 * d + int(h[4:])}> with error 12, opcode 0, len 0, vendor err 129",
            f"{h}:{w}:{w + 1700} [{d}] NCCL INFO include/net.h:28 -> 2",
            f"{h}:{w}:{w + 1700} [{d}] NCCL INFO transport/net.cc:408 -> 2",
            f"{h}:{w}:{w + 1700} [{d}] NCCL INFO proxy.cc:320 -> 2 [Proxy Thread]"]


# ----------------------------------------------------------------------------- per-rank records (att 7)
def steps_jsonl(a: Att, seed: int) -> dict[int, bytes]:
    out = {}
    lrng = random.Random(f"{seed}-jl-loss")
    losses = {n: round(2.05 + 0.55 * math.exp(-n / 2500.0) + lrng.gauss(0, 0.01), 4) for n, _, _ in a.steps}
    slow = (a.nodes.index("jzg-019"), 5)
    for i, h in enumerate(a.nodes):
        for d in range(GPN):
            r = i * GPN + d
            rng = random.Random(f"{seed}-jl-{r}")
            recs = []
            for n, ts, dur in a.steps:
                f = SLOW_FACTOR if (i, d) == slow else 1.0
                comp = BASE_COMPUTE * f * (1 + rng.uniform(-0.003, 0.003))
                data = BASE_DATA * (1 + rng.uniform(-0.05, 0.05))
                recs.append('{"ts":"%s","rank":%d,"host":"%s","step":%d,"step_s":%.4f,"compute_s":%.4f,'
                            '"comm_s":%.4f,"data_s":%.4f,"tokens":%d,"loss":%.4f}'
                            % (iso_z(ts + dur), r, h, n, dur, comp, dur - comp - data, data,
                               TOKENS_PER_STEP // GPUS, losses[n]))
            out[r] = ("\n".join(recs) + "\n").encode()
    return out


# ----------------------------------------------------------------------------- kernel logs
def xid(pci: str, code: int, pid: str, text: str) -> str:
    return f"NVRM: Xid (PCI:{pci}): {code}, {pid}, {text}"


def kernel_logs(atts: list[Att], fleet: Fleet, seed: int, pids_of: dict, bundle: Path) -> None:
    by = {a.k: a for a in atts}
    t_end = atts[-1].E + 1800
    for h in HOSTS:
        rng = random.Random(f"{seed}-kern-{h}")
        boot = fleet.boot[h]
        ev: list[tuple[float, str]] = [(boot, "Linux version 4.18.0-305.65.1.el8_4.x86_64 (mockbuild@x86-vm-07."
                                              "build.eng.bos.redhat.com) (gcc version 8.4.1 20200928) #1 SMP")]
        ev.append((boot + 21, "NVRM: loadNvidia: NVIDIA UNIX x86_64 Kernel Module  470.129.06  Thu May 12 22:42:45 UTC 2022"))
        t = T0 + rng.uniform(600, 6000)
        while t < t_end:                         # harmless noise
            ev.append((t, rng.choice(["perf: interrupt took too long (2507 > 2500), lowering kernel.perf_event_max_sample_rate to 79000",
                                      "IPv6: ADDRCONF(NETDEV_UP): ib0: link is not ready",
                                      f"python[{rng.randint(10000, 99999)}]: segfault at 0 ip 0000000000000000 sp 00007ffd error 14 in python3.8[400000+1000]"
                                      if rng.random() < 0.02 else "hrtimer: interrupt took 12345 ns"])))
            t += rng.uniform(3000, 16000)
        a1, a2, a4, a6, a8, a9 = by[1], by[2], by[4], by[6], by[8], by[9]
        if h == a1.host:                         # Xid 79, then the node is power-cycled
            g = a1.gpu
            pci = f"0000:{BUS[g]}:00"
            pid = pids_of[1].worker[h, g]
            ev = [(t, m) for t, m in ev if t < a1.R]
            ev += [(a1.R, f"NVRM: GPU at PCI:{pci}: {fleet.uuid[h, g]}"),
                   (a1.R, "NVRM: GPU Board Serial Number: 1323221016547"),
                   (a1.R, xid(pci, 79, f"pid={pid}, name=python", "GPU has fallen off the bus.")),
                   (a1.R, f"NVRM: GPU {pci}.0: GPU has fallen off the bus."),
                   (a1.R + 245, f"INFO: task python:{pid} blocked for more than 120 seconds."),
                   (a1.R + 245, '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.')]
            nb = a1.E + 2400
            ev += [(nb, "Linux version 4.18.0-305.65.1.el8_4.x86_64 (mockbuild@x86-vm-07.build.eng.bos.redhat.com) "
                        "(gcc version 8.4.1 20200928) #1 SMP"),
                   (nb + 21, "NVRM: loadNvidia: NVIDIA UNIX x86_64 Kernel Module  470.129.06  Thu May 12 22:42:45 UTC 2022")]
        if h == "jzg-009":                       # decoy: row remap pending mid attempt 1
            ev.append((a1.F + 0.35 * (a1.R - a1.F), xid("0000:b7:00", 63, "pid=" + str(pids_of[1].worker[h, 6]) +
                                                          ", name=python", "Row Remapper: New row (0x0000000067a1e2c0) "
                                                          "marked for remapping, reset gpu to activate.")))
        if h in LUSTRE_HOSTS:                    # the OST stops answering during att 2's save
            osc = f"{OST}-osc-ffff{rng.getrandbits(32):08x}{rng.getrandbits(16):04x}"
            tt = a2.R + 47 + rng.uniform(0, 9)
            xreq = rng.getrandbits(50)
            ev += [(tt, f"Lustre: {rng.randint(3000, 9000)}:0:(client.c:2284:ptlrpc_expire_one_request()) @@@ Request "
                        f"sent has timed out for slow reply: [sent {int(tt - 47)}/real {int(tt - 47)}]  req@ffff"
                        f"{rng.getrandbits(44):011x} x{xreq}/t0(0) o4->{osc}@{OST_NID}:6/4 lens 488/448 e 0 to 1 dl "
                        f"{int(tt)} ref 2 fl Rpc:X/0/ffffffff rc 0/-1 job:'{a2.job}'"),
                   (tt + 0.01, f"Lustre: {osc}: Connection to {OST} (at {OST_NID}) was lost; in progress operations "
                               f"using this service will wait for recovery to complete")]
            if h in LUSTRE_HOSTS[1:3]:
                ev += [(tt + 160, f"INFO: task python:{pids_of[2].worker[h, 3]} blocked for more than 120 seconds."),
                       (tt + 160, "      Tainted: P           OE    --------- -  - 4.18.0-305.65.1.el8_4.x86_64 #1"),
                       (tt + 160, '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.')]
            ev += [(a2.E + 380, f"LustreError: 167-0: {osc}: This client was evicted by {OST}; in progress "
                                f"operations using this service will fail."),
                   (a2.E + 381, f"Lustre: {osc}: Connection restored to {OST_NID} (at {OST_NID})")]
        if h == a4.host:                         # NVLink fatal error
            pci = f"0000:{BUS[a4.gpu]}:00"
            ev.append((a4.R, xid(pci, 74, f"pid={pids_of[4].worker[h, a4.gpu]}, name=python",
                                 "NVLink: fatal error detected on link 3(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)")))
        if h == "jzg-010":                       # decoy: Xid 92 two hours into att 6
            ev.append((a6.F + 7200, xid("0000:47:00", 92, f"pid={pids_of[6].worker[h, 2]}, name=python",
                                         "High single-bit ECC error rate")))
        if h == a8.host:                         # contained ECC error
            pci = f"0000:{BUS[a8.gpu]}:00"
            ev += [(a8.R, xid(pci, 94, f"pid={pids_of[8].worker[h, a8.gpu]}, name=python",
                              "Contained: SM (0x1). RST: No, D-RST: No")),
                   (a8.R, xid(pci, 63, f"pid={pids_of[8].worker[h, a8.gpu]}, name=python",
                              "Row Remapper: New row (0x00000000a43f1c80) marked for remapping, reset gpu to activate."))]
        if h == a9.host:                         # the node dies silently; boots again 40 min later
            ev = [(t, m) for t, m in ev if t < a9.R - 30]
            ev.append((a9.R - 31, "hrtimer: interrupt took 18231 ns"))
            nb = a9.R + 2400
            ev += [(nb, "Linux version 4.18.0-305.65.1.el8_4.x86_64 (mockbuild@x86-vm-07.build.eng.bos.redhat.com) "
                        "(gcc version 8.4.1 20200928) #1 SMP")]
        if h == "jzg-020":                       # decoy: an idle spare's link flaps and an Xid 48
            a3 = by[3]
            ev += [(a3.S - 600, "mlx5_core 0000:4b:00.0 ib1: Link down"),
                   (a3.S - 590, "mlx5_core 0000:4b:00.0 ib1: Link up"),
                   (a4.F + 900, xid("0000:90:00", 48, "pid='<unknown>', name=<unknown>", "An uncorrectable double bit "
                                    "error (DBE) has been detected on GPU in the framebuffer at physAddr 0x3a91c2000 "
                                    "partition 2, subpartition 0."))]
        sk = fleet.skew[h]
        ev.sort(key=lambda x: x[0])
        syslog = int(h[4:]) % 3 != 0
        timed = [(t + sk, f"{syslog_ts(t + sk)} {h} kernel: {m}" if syslog else f"{dmesg_T(t + sk)} {m}")
                 for t, m in ev]
        if syslog:                               # /var/log/messages also holds other daemons
            for a in atts:
                if h in a.nodes:
                    timed.append((a.S + 3 + sk, f"{syslog_ts(a.S + 3 + sk)} {h} slurmd[2231]: launch task StepId="
                                                f"{a.job}.0 request from UID:300123 GID:300001 HOST:"
                                                f"{host_ip(a.nodes[0])} PORT:52110"))
        timed.sort(key=lambda x: x[0])
        lines = [x[1] for x in timed]
        name = "messages" if syslog else "dmesg.log"
        write(bundle / "nodes" / h / name, ("\n".join(lines) + "\n").encode())


# ----------------------------------------------------------------------------- scheduler
def scheduler(atts: list[Att], bundle: Path, seed: int) -> None:
    rng = random.Random(f"{seed}-sched")
    L = Sink()

    def add(t, msg):
        L.add(t, f"{ctld_ts(t)} {msg}")
    rows = ["JobID|JobName|User|Partition|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"]
    for a in atts:
        hl = hostlist(a.nodes)
        cpus = 40 * len(a.nodes)
        if a.k != 10:
            submit = a.S - rng.randint(5, 120)
            add(submit, f"_slurm_rpc_submit_batch_job: JobId={a.job} InitPrio=300{rng.randint(100, 999)} usec=781")
        else:
            submit = atts[8].E
        add(a.S + 0.02, f"sched: Allocate JobId={a.job} NodeList={hl} #CPUs={cpus} Partition=gpu_p5")
        end = a.E + rng.uniform(0.01, 0.4)
        if a.kind in ("xid79", "nodefail"):
            add(a.R + 300.4, f"error: Nodes {a.host} not responding")
            add(a.E - 2.1, f"error: Nodes {a.host} not responding, setting DOWN")
            add(a.E - 2.05, f"Killing JobId={a.job} on failed node {a.host}")
            if a.kind == "nodefail":
                add(a.E - 2.0, f"requeue job JobId={a.job} due to failure of node {a.host}")
            state, ec = "NODE_FAIL", "0:0"
            add(end, f"_job_complete: JobId={a.job} WTERMSIG 9")
        elif a.kind == "diverge":
            add(a.kill - 0.01, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={a.job} uid 300123")
            add(end, f"_job_complete: JobId={a.job} WTERMSIG 15")
            state, ec = "CANCELLED by 300123", "0:15"
        elif a.kind == "time_limit":
            add(a.T + 0.003, f"Time limit exhausted for JobId={a.job}")
            add(end, f"_job_complete: JobId={a.job} WTERMSIG 15")
            state, ec = "TIMEOUT", "0:0"
        elif a.kind == "complete":
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 0")
            state, ec = "COMPLETED", "0:0"
        else:
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
            state, ec = "FAILED", "1:0"
        add(end + 0.01, f"_job_complete: JobId={a.job} done")
        if a.kind == "lustre":
            add(a.E + 0.8, f"error: slurmd error running JobId={a.job} on node(s)=jzg-011: Kill task failed")
            add(a.E + 0.9, "update_node: node jzg-011 reason set to: Kill task failed")
            add(a.E + 1.0, "update_node: node jzg-011 state set to DRAINING")
            add(atts[2].S - 400, "update_node: node jzg-011 state set to IDLE")
        if a.kind in ("xid79", "xid74", "xid94", "hang") :
            reason = {"xid79": "xid79 gpu2 off the bus", "xid74": "xid74 nvlink", "xid94": "xid94 ecc gpu1",
                      "hang": "nccl hang suspect"}[a.kind]
            node = a.host or "jzg-015"
            add(a.E + 900.2, f"update_node: node {node} reason set to: {reason}")
            add(a.E + 900.3, f"update_node: node {node} state set to DRAINED")
        if a.kind == "time_limit":
            add(a.E + 600.2, "update_node: node jzg-019 reason set to: slow gpu5 (-6%)")
            add(a.E + 600.3, "update_node: node jzg-019 state set to DRAINED")
        rows.append(f"{a.job}|{RUN}|ura81os|gpu_p5|{cpus}|{state}|{ec}|{slurm_ts(submit)}|{slurm_ts(a.S)}|"
                    f"{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|{len(a.nodes)}|{hl}")
        st = "CANCELLED" if state not in ("COMPLETED", "FAILED") else state
        rows.append(f"{a.job}.batch|batch||gpu_p5|40|{st}|{'0:15' if st == 'CANCELLED' else ec}|{slurm_ts(a.S)}|"
                    f"{slurm_ts(a.S)}|{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|1|{a.nodes[0]}")
        rows.append(f"{a.job}.0|bash||gpu_p5|{cpus}|{st}|{'0:15' if st == 'CANCELLED' else ec}|{slurm_ts(a.S + 1)}|"
                    f"{slurm_ts(a.S + 1)}|{slurm_ts(a.E)}|{elapsed(a.E - a.S - 1)}|{len(a.nodes)}|{hl}")
    d = bundle / "scheduler" / CLUSTER
    write(d / "slurmctld.log", L.render())
    write(d / "sacct.txt", ("\n".join(rows) + "\n").encode())


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts = build(seed)
    fleet = Fleet(seed)
    pids_of = {a.k: Pids(seed, a) for a in atts}
    ev: dict = {}
    rdir = bundle / "runs" / RUN
    write(bundle / "inventory.toml", (f'[providers.{PROVIDER}]\nusd_per_gpu_hour = 1.90\n\n[clusters.{CLUSTER}]\n'
                                      f'provider = "{PROVIDER}"\ngpu = "A100-SXM4-80GB"\ngpus_per_node = 8\n'
                                      f'nodes = "jzg-[001-020]"\n').encode())
    write(rdir / "run.toml", (f'# {RUN}: Megatron-DeepSpeed TP={TP} PP={PP} DP={DP}\ncluster = "{CLUSTER}"\n'
                              f'gpus = {GPUS}\ntokens_per_step = {TOKENS_PER_STEP}\nflops_per_token = '
                              f'{FLOPS_PER_TOKEN:.3e}\ncheckpoint_dir = "{CKPT}"\nlauncher = "slurm"\n').encode())
    appended = b""
    for a in atts:
        pids = pids_of[a.k]
        log = train_log(a, pids, fleet, seed, ev)
        ndir = (rdir / f"attempt-{a.k}" / "nccl") if a.k <= 8 else (rdir / f"job-{a.job}" / "nccl")
        for h in a.nodes:
            body = nccl_log(a, h, pids, seed)
            extra: list[str] = []
            i = a.nodes.index(h)
            if a.kind in ("xid79", "xid94", "nodefail"):
                culprit = a.host
                ci = a.nodes.index(culprit)
                if h in (a.nodes[ci - 1], a.nodes[(ci + 1) % len(a.nodes)]):
                    for d in (0, 7):
                        extra += nccl_net_err(h, culprit, d, pids)
            if a.kind == "xid74" and h == a.host:
                w = pids.worker[h, a.gpu]
                extra += [f"{h}:{w}:{w} [{a.gpu}] enqueue.cc:329 NCCL WARN Cuda failure 'uncorrectable NVLink error "
                          f"was detected during the execution'", f"{h}:{w}:{w} [{a.gpu}] NCCL INFO enqueue.cc:1047 -> 1"]
            if extra:
                body += ("\n".join(extra) + "\n").encode()
            write(ndir / f"{h}.{pids.worker[h, 0]}.log", body)
            del i
        if a.k <= 8:
            write(rdir / f"attempt-{a.k}" / f"slurm-{a.job}.out", log)
        else:
            appended += log
        if a.kind == "time_limit":
            for r, body in steps_jsonl(a, seed).items():
                write(rdir / f"attempt-{a.k}" / "steps" / f"rank-{r:05d}.jsonl.gz", body, gz=True)
    write(rdir / f"slurm-{atts[8].job}.out", appended)
    kernel_logs(atts, fleet, seed, pids_of, bundle)
    scheduler(atts, bundle, seed)
    cats, total, per = ledger(atts)

    incidents = []
    for j, a in enumerate(atts[:-1]):
        incidents.append({"id": j + 1, "attempt": a.k, "slurm_job": a.job, "failure_mode": a.mode,
                          "blame": "user" if a.mode in ("time_limit", "loss_divergence") else
                          ("unknown" if a.mode == "nccl_timeout" else "provider"),
                          "host": a.host, "cluster": CLUSTER, "provider": PROVIDER, "attempts": [a.k],
                          "gpu_index": a.gpu, "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E),
                          "last_ckpt_step": a.kept, "gpu_hours": per[j],
                          "gpu_hours_lost": round(sum(per[j].values()), 4)})
    a7 = atts[6]
    g = GPUS / 3600.0
    exc = sum(d - BASE_STEP for _, _, d in a7.steps) * g
    incidents.append({"id": len(incidents) + 1, "attempt": 7, "kind": "straggler", "failure_mode": None,
                      "host": "jzg-019", "attempts": [7], "gpu_index": 5, "excess_gpu_hours": round(exc, 4)})
    a5, _a6 = atts[4], atts[5]
    decoys = {"jzg-005": "ring neighbour of jzg-006: NET/IB errors 20 s after its Xid 79 (symptom)",
              "jzg-007": "ring neighbour of jzg-006 (att 1) and jzg-008 (att 8): NET/IB errors are symptoms",
              "jzg-009": "Xid 63 row remap pending in att 1, training continued; att 8 neighbour symptom",
              "jzg-010": "Xid 92 high single-bit ECC rate two hours before att 6's hang; stepped past",
              "jzg-020": "idle spare: link flap and Xid 48 while not running the job"}
    for h in LUSTRE_HOSTS:
        decoys[h] = f"client of {OST}: timeouts/hung tasks are symptoms of the shared OST"
    forbidden = [{"failure_mode": "loss_divergence", "attempts": [4],
                  "reason": "att 4's loss spike healed by itself within ~60 iterations"},
                 {"failure_mode": "checkpoint_lost", "attempts": [6],
                  "reason": f"att 6 loaded global_step{a5.kept} although global_step{a5.last_saved} was saved: a "
                            f"deliberate rollback with a lower LR after att 5's divergence"},
                 {"failure_mode": "loss_divergence", "attempts": [6],
                  "reason": "att 6 trains normally after the rollback"}]
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK_A100,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK_A100), 4),
        "first_start_ts": iso_z(atts[0].S), "last_end_ts": iso_z(atts[-1].E), "match_on_attempt": True,
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "nodes": hostlist(a.nodes), "start_ts": iso_z(a.S),
                      "first_step_ts": iso_z(a.F) if a.F else None, "exit_ts": iso_z(a.E), "loaded_step": a.load,
                      "last_step": a.steps[-1][0] if a.steps else a.load, "saves": [n for n, _, _ in a.saves],
                      "kept_step": a.kept if a.kind != "complete" else None, "end": a.kind} for a in atts],
        "incidents": incidents, "forbidden_incidents": forbidden,
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys, "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i.get("gpu_hours_lost", 0.0) for i in incidents)
                                                                + exc, 4)},
        "notes": "Times are the controller's UTC. Ledger: see bloom_opt.py docstring. Rollback att 6 target "
                 f"{a5.kept}, last saved {a5.last_saved}.",
    }
    write(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
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
    print(f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB); "
          f"total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
