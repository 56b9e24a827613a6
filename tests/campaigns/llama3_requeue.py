#!/usr/bin/env python3
"""Own campaign "llama3_requeue": one requeued Slurm job whose attempts all append to ONE console file.

Written for issue 29 without reading clusterlab's analysis code. Standard library only, deterministic
per --seed (no gzip), ~15 MB, < 5 s.

Writes, under --out DIR:
  DIR/bundle/inventory.toml
  DIR/bundle/runs/llama3-8b-cpt/run.toml
  DIR/bundle/runs/llama3-8b-cpt/slurm-733104.out     EVERY attempt's console, appended (#SBATCH --requeue
                                                     --open-mode=append): the batch script's banner, srun,
                                                     torchrun --tee 3 ("[defaultN]:" prefixes, global rank N),
                                                     HF Trainer (transformers explicit format "[INFO|trainer.py:L]
                                                     2026-12-06 08:01:02,345 >> ...", untimed log dicts
                                                     "{'loss': ...}"), Python tracebacks without their own time
  DIR/bundle/runs/llama3-8b-cpt/steps/rank-NNNNN.jsonl  the job's step probe, opened in append mode too: local
                                                     rank 0 of every node in every attempt; all 64 ranks in
                                                     attempts 6 and 7 (the team turned the full probe on for
                                                     those two); Python json, so a bad loss is written NaN /
                                                     Infinity
  DIR/bundle/nodes/<host>/{journal-k.log | dmesg-T.log}   kernel logs, every host's clock skewed
  DIR/bundle/scheduler/{slurmctld.log, sacct-D.psv}  the controller's log and `sacct -D -P` (one JobID,
                                                     one row per instance, plus .batch and .0 rows)
  DIR/truth.json

Fleet: cluster kx-1 (provider kestrel), hgx-[01-14], 8 x H100-SXM each. Job 733104 "llama3-8b-cpt": Llama 3 8B
continued pre-training with HF Trainer + FSDP on 8 nodes = 64 GPUs, ddp_timeout 600 s (NCCL watchdog), save
every 250 steps to Lustre (save_total_limit 3), ~9.6 s a step. The batch script: `srun torchrun ...; rc=$?;
if [ $rc -ne 0 ]; then scontrol requeue $SLURM_JOB_ID; fi` (a node failure is requeued by Slurm itself).
It resumes from the newest checkpoint that has a trainer_state.json. All truth times: controller clock, UTC.

Attempts (ends follow the Llama 3 paper's interruption table):
  1  hgx-[01-08]. Xid 79 on hgx-03 GPU5 (fallen off the bus); the other ranks' NCCL watchdog fires 600 s
     later (hgx-02, whose clock is behind, reports first); hgx-03's task cannot be killed: slurmctld
     "Kill task failed", drain; the script requeues.                        [gpu_fell_off_bus, hgx-03]
  2  hgx-03 -> spare hgx-09. Xid 94 (contained ECC) + Xid 63 row remap on hgx-06 GPU2; that rank raises
     "CUDA error: uncorrectable ECC error encountered"; the others time out.  [gpu_memory_ecc, hgx-06]
  3  hgx-06 -> spare hgx-10. A rank on hgx-05 raises ValueError in the data collator (a malformed sample);
     its traceback has no time of its own; the user holds the job, fixes the collator, releases it.
                                                                           [user_code_error, any host]
  4  IB link down on hgx-07 (ibp156s0, a switch port): NCCL WARN completion errors on hgx-07 and on its
     peer hgx-10; hgx-07's ranks raise ncclRemoteError; the peers' watchdogs fire 600 s later.
                                                                           [network, hgx-07]
  5  hgx-07 -> spare hgx-11. The operator drains hgx-05 ("emergency maintenance: BMC firmware") and
     reboots it under the job; Slurm marks it DOWN, kills the job (NODE FAILURE) and requeues it; the
     killed console's last line is cut and the next attempt's banner is appended on the same line.
                                                                           [preemption, hgx-05]
  6  same nodes (hgx-05 back). Rank 22 (hgx-04 GPU6) stops after step N-1 (every other rank records step
     N), the others block in the next all-reduce; watchdog 600 s later; torchrun must SIGKILL the stuck
     worker.                                                               [nccl_timeout, hgx-04]
  7  hgx-04 -> spare hgx-12. Rank 27 (hgx-08 GPU3) computes NaN/inf local losses from step M on, every
     other rank stays finite (the step is skipped on a non-finite grad norm); the logged loss is nan and
     the job's guard raises RuntimeError on every rank after three nan logs.
                                                                           [silent_data_corruption, hgx-08]
  8  hgx-08 -> spare hgx-13. The periodic save fails: Lustre OST0004 lost / client evicted on every host
     (hgx-09's clock is behind: it reports first); safetensors/torch.save raise OSError [Errno 5] on all
     ranks a few minutes later. The partial checkpoint has no trainer_state.json and is skipped on resume.
                                                                           [filesystem_io, any host]
  9  Xid 119 (GSP RPC timeout) then Xid 154 on hgx-11 GPU4; that rank hangs; watchdog; kill.
                                                                           [gpu_hw_other, hgx-11]
  10 hgx-11 -> hgx-04 (cleared). Completes: final save, "Training completed", train metrics.
Not an incident: attempt 9 resuming from checkpoint-N-250 after attempt 8's save of checkpoint-N failed is
no lost checkpoint (truth.json forbidden_incidents): that save was never recorded as complete.
Decoys: hgx-01 prints a harmless start-up traceback each attempt (flash_attn import fallback, logged
with exc_info); hgx-02 is the first to report the watchdog timeouts (clock behind); hgx-10 prints NCCL WARN
completion errors in attempt 4 (peer of the broken link); hgx-09 reports the Lustre outage first; hgx-12
logs an Xid 63 row-remap event mid attempt 8 and keeps stepping at pace; hgx-14, a never-used spare, logs
Xid 48 + Xid 63 during a dcgm diag.

Ledger (truth.json expected_ledger, GPU-hours = 64 GPUs x seconds / 3600), the conventions of
campaign1.py / campaign2.py:
  startup    = attempt start (sacct Start) -> first training step start
  productive = kept steps (step <= last durable checkpoint of an ended attempt; all steps of the
               completed attempt), whole step durations
  checkpoint = durations of the saves that completed, plus the tail after the final save
  recompute  = end of the last durable save of the attempt (or its first step start) -> root event
  hang       = root event -> attempt exit (sacct End).  Root events: the Xid / link-down / reboot / GSP
               time, the collator exception, the end of the job's last completed step (hang), the end of
               the first step whose loss went non-finite (SDC: its step record, the first wrong number), the
               start of the save that failed. Whatever the job printed after its root is hang: attempt 7's
               steps until the guard raised, three logs later, made no progress to keep or throw away.
  restart    = attempt exit -> next attempt start
  straggler = slowdown = data_stall = idle = 0
  (Every step's time jitters by +-0.4 % and the step probe records every step: a kept step counts whole,
  jitter included, as productive; none of it is slowdown.)

Formats (looked up with the search tools; written anew): HF transformers explicit log format and
Trainer messages ("***** Running training *****", "Continuing training from global step N", "Saving model
checkpoint to", "Loading model from", "Training completed. Do not forget to share your model on
huggingface.co/models =)"), the PrinterCallback dicts; torchrun --tee prefixes and elastic agent lines,
ChildFailedError; ProcessGroupNCCL watchdog lines; NVRM Xid 79/94/63/119/154/48 (leptonai/gpud, NVIDIA
open-gpu-kernel-modules issues); mlx5 "Link down"; Lustre "Connection to ... was lost" / "evicted";
slurmctld drain / requeue / "Kill task failed" / node not responding; sacct -D.
"""
from __future__ import annotations

import argparse
import json
import math
import random
from datetime import UTC, datetime
from pathlib import Path

UTC = UTC

RUN = "llama3-8b-cpt"
JOB = 733104
CLUSTER, PROVIDER = "kx-1", "kestrel"
GPN = 8
NNODES = 8
GPUS = NNODES * GPN
GBS, SEQ, GA, MBS = 512, 8192, 4, 2
TOKENS_PER_STEP = GBS * SEQ                  # 4,194,304
TOKENS_PER_RANK = TOKENS_PER_STEP // GPUS
FLOPS_PER_TOKEN = 6 * 8.03e9 + 12 * 32 * 4096 * SEQ
PEAK = 989.4e12
BASE_STEP = 9.62
JITTER = 0.004                                # +-0.4 %: productive, kept steps count whole (see the ledger)
SAVE_EVERY = 250
LOG_EVERY = 10
WATCHDOG = 600
T0 = datetime(2026, 12, 6, 2, 10, 0, tzinfo=UTC).timestamp()
CKPT = "/lustre/ckpt/llama3-8b-cpt"
USER_UID = 1042
KERNEL = "5.15.0-1068-nvidia"
DRIVER = "550.127.08"
HOSTS = [f"hgx-{i:02d}" for i in range(1, 15)]
BUSIDS = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
NIC_IF = ["ibp26s0", "ibp60s0", "ibp77s0", "ibp94s0", "ibp156s0", "ibp188s0", "ibp204s0", "ibp220s0"]
NIC_PCI = ["0000:1a:00.0", "0000:3c:00.0", "0000:4d:00.0", "0000:5e:00.0",
           "0000:9c:00.0", "0000:bc:00.0", "0000:cc:00.0", "0000:dc:00.0"]
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]
PY = "/usr/local/lib/python3.11/dist-packages"


# ----------------------------------------------------------------------------- time formats
def _split(t: float) -> tuple[datetime, int]:
    us = int(round(t * 1e6))
    s, u = divmod(us, 1_000_000)
    return datetime.fromtimestamp(s, UTC), u


def iso_z(t: float) -> str:
    d, u = _split(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{u // 1000:03d}Z"


def date_cmd(t: float) -> str:
    d, _ = _split(t)
    return f"{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"


def hf_ts(t: float) -> str:                   # transformers explicit format: logging asctime
    d, u = _split(t)
    return f"{d:%Y-%m-%d %H:%M:%S},{u // 1000:03d}"


def basic_ts(t: float) -> str:                # examples' basicConfig datefmt "%m/%d/%Y %H:%M:%S"
    return _split(t)[0].strftime("%m/%d/%Y %H:%M:%S")


def glog(t: float, level: str) -> str:        # torch.distributed.elastic logging
    d, u = _split(t)
    return f"{level}{d:%m%d} {d:%H:%M:%S}.{u:06d}"


def c10(t: float, level: str) -> str:         # c10 logging, ns
    d, u = _split(t)
    return f"[{level}{d:%m%d} {d:%H:%M:%S}.{u:06d}{(u * 7) % 1000:03d}"


def short_iso(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%dT%H:%M:%S") + "+00:00"


def dmesg_t(t: float) -> str:
    d, _ = _split(t)
    return f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}]"


def slurm_ts(t: float) -> str:
    return _split(t)[0].strftime("%Y-%m-%dT%H:%M:%S")


def ctld_ts(t: float) -> str:
    d, u = _split(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{u // 1000:03d}]"


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
        out.append(f"{start:02d}" if start == prev else f"{start:02d}-{prev:02d}")
        if n is not None:
            start = prev = n
    return f"hgx-[{','.join(out)}]" if len(nums) > 1 else hosts[0]


class Sink:
    def __init__(self) -> None:
        self.items: list[tuple[float, int, str]] = []

    def add(self, t: float, line: str) -> None:
        self.items.append((t, len(self.items), line))

    def extend(self, t: float, lines: list[str]) -> None:
        for ln in lines:
            self.add(t, ln)

    def lines(self) -> list[str]:
        return [x[2] for x in sorted(self.items)]


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# ----------------------------------------------------------------------------- timeline
SPECS = [  # k, kind, mode, root host, run_for (h), gap after (s)
    (1, "xid79", "gpu_fell_off_bus", "hgx-03", 2.6, 420),
    (2, "ecc", "gpu_memory_ecc", "hgx-06", 3.1, 380),
    (3, "collator", "user_code_error", None, 1.3, 2460),
    (4, "link", "network", "hgx-07", 2.2, 450),
    (5, "maint", "preemption", "hgx-05", 1.7, 300),
    (6, "hang", "nccl_timeout", "hgx-04", 0.9, 520),
    (7, "sdc", "silent_data_corruption", "hgx-08", 0.8, 610),
    (8, "lustre", "filesystem_io", None, 1.5, 900),
    (9, "gsp", "gpu_hw_other", "hgx-11", 2.4, 560),
    (10, "complete", None, None, None, None),
]
NODES = {1: "01 02 03 04 05 06 07 08", 2: "01 02 04 05 06 07 08 09", 3: "01 02 04 05 07 08 09 10",
         4: "01 02 04 05 07 08 09 10", 5: "01 02 04 05 08 09 10 11", 6: "01 02 04 05 08 09 10 11",
         7: "01 02 05 08 09 10 11 12", 8: "01 02 05 09 10 11 12 13", 9: "01 02 05 09 10 11 12 13",
         10: "01 02 04 05 09 10 12 13"}
GPU_OF = {"xid79": 5, "ecc": 2, "hang": 6, "sdc": 3, "gsp": 4, "link": 4}
COLLATOR = ("hgx-05", 1)                      # host, local rank of the collator's ValueError
LINK_PEER = "hgx-10"
XID63_HOST, IDLE_SPARE = "hgx-12", "hgx-14"
FIRST_WATCHDOG, FIRST_LUSTRE = "hgx-02", "hgx-09"


class Attempt:
    def __init__(self, k: int, kind: str, mode: str | None, host: str | None, run_for: float | None,
                 gap: float | None) -> None:
        self.k, self.kind, self.mode, self.root_host, self.run_for, self.gap = k, kind, mode, host, run_for, gap
        self.nodes = [f"hgx-{x}" for x in NODES[k].split()]
        self.steps: list[tuple[int, float, float]] = []
        self.saves: list[tuple[int, float, float]] = []
        self.failed_save: tuple[int, float] | None = None
        self.bad_steps: set[int] = set()
        self.abort_step: int | None = None
        self.R = self.E = 0.0
        self.load_step = 0
        self.S = self.F = 0.0

    @property
    def root_rank(self) -> int | None:
        if self.kind in GPU_OF and self.root_host:
            return self.nodes.index(self.root_host) * GPN + GPU_OF[self.kind]
        if self.kind == "collator":
            return self.nodes.index(COLLATOR[0]) * GPN + COLLATOR[1]
        return None


def simulate(a: Attempt, rng: random.Random, train_steps: int) -> bool:
    a.steps, a.saves, a.failed_save, a.bad_steps, a.abort_step = [], [], None, set(), None
    t, n = a.F, a.load_step
    target = a.F + (a.run_for or 0) * 3600
    while True:
        if a.kind == "complete" and n >= train_steps:
            break
        dur = BASE_STEP * (1 + rng.uniform(-JITTER, JITTER))
        if a.kind in ("xid79", "ecc", "collator", "link", "maint", "gsp") and t + dur > target:
            a.R = max(t + 0.5, target)
            return bool(a.steps) and a.steps[-1][0] % SAVE_EVERY != 0
        if a.kind == "hang" and t + dur > target:
            if not a.steps or a.steps[-1][0] % SAVE_EVERY == 0:
                return False
            a.R = t
            return True
        if a.kind == "sdc" and t >= target and a.abort_step is None:
            m0 = n + 1
            first_log = -(-m0 // LOG_EVERY) * LOG_EVERY
            a.abort_step = first_log + 2 * LOG_EVERY
            if any(s % SAVE_EVERY == 0 for s in range(m0, a.abort_step + 1)):
                return False
            a.R = t + dur                          # the end of step m0: its record holds the first wrong number
            a.bad_steps = {m0}
            for w in range(first_log - LOG_EVERY + 1, a.abort_step + 1, LOG_EVERY):
                lo = max(w, m0)
                a.bad_steps |= set(rng.sample(range(lo, w + LOG_EVERY), min(3, w + LOG_EVERY - lo)))
        n += 1
        a.steps.append((n, t, dur))
        t += dur
        if a.kind == "sdc" and a.abort_step == n:
            a.E = t + 14.0
            return True
        if n % SAVE_EVERY == 0 and not (a.kind == "complete" and n >= train_steps):
            c = round(rng.uniform(72.0, 108.0), 2)
            if a.kind == "lustre" and t >= target:
                a.failed_save = (n, t)
                a.R = t
                return True
            if a.kind not in ("complete", "sdc") and t + c > target - 60 and t < target + 60:
                return False
            a.saves.append((n, t, c))
            t += c
        elif a.kind == "complete" and n >= train_steps:
            c = round(rng.uniform(72.0, 108.0), 2)
            a.saves.append((n, t, c))
            t += c
    a.E = math.ceil(t + 96.0)                     # save_model + metrics after the last checkpoint
    return True


def exit_after_root(a: Attempt, rng: random.Random) -> float:
    if a.kind == "xid79":                          # watchdog + UnkillableStepTimeout
        return WATCHDOG + 14 + 125 + rng.uniform(0, 5)
    if a.kind in ("ecc", "collator", "link", "hang", "gsp"):
        return WATCHDOG + 17 + rng.uniform(0, 6)
    if a.kind == "maint":                          # SlurmdTimeout
        return 305 + rng.uniform(0, 8)
    if a.kind == "lustre":
        return 262 + rng.uniform(0, 10)
    raise ValueError(a.kind)


def build(seed: int) -> tuple[list[Attempt], int]:
    rng = random.Random(f"{seed}-timeline")
    atts = [Attempt(*s) for s in SPECS]
    for a in atts:
        if a.run_for:
            a.run_for += rng.uniform(-0.15, 0.15)
    t, load = T0, 0
    train_steps = 10 ** 9
    for a in atts:
        a.load_step = load
        a.S = float(t)
        if a.kind == "complete":
            train_steps = (load // SAVE_EVERY) * SAVE_EVERY + 3 * SAVE_EVERY
        tries = 0
        while True:
            a.F = a.S + (212 + rng.randint(0, 40) if a.load_step == 0 else 286 + rng.randint(0, 90))
            if simulate(a, random.Random(f"{seed}-steps-{a.k}-{tries}"), train_steps):
                break
            tries += 1
            a.run_for += 0.031
        if a.kind not in ("complete", "sdc"):
            a.E = math.ceil(a.R + exit_after_root(a, rng))
        a.last_ckpt = a.saves[-1][0] if a.saves else a.load_step
        load = a.last_ckpt
        if a.gap:
            t = math.ceil(a.E + a.gap + rng.randint(0, 90))
    return atts, train_steps


def ledger(atts: list[Attempt]) -> tuple[dict, float, list[dict]]:
    cats = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute",
                          "hang", "restart", "startup", "idle"], 0.0)
    per = []
    for i, a in enumerate(atts):
        cats["startup"] += a.F - a.S
        kept = a.last_ckpt if a.kind != "complete" else 10 ** 9
        cats["productive"] += sum(d for n, _, d in a.steps if n <= kept)
        cats["checkpoint"] += sum(c for _, _, c in a.saves)
        if a.kind == "complete":
            cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        base = (a.saves[-1][1] + a.saves[-1][2]) if a.saves else a.F
        nxt = atts[i + 1]
        rec, hang = a.R - base, a.E - a.R
        assert rec > 0 and hang > 0, (a.k, rec, hang)
        cats["recompute"] += rec
        cats["hang"] += hang
        cats["restart"] += nxt.S - a.E
        per.append(dict(hang=hang, recompute=rec, restart=nxt.S - a.E, startup=nxt.F - nxt.S))
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600.0
    return ({k: round(v * g, 4) for k, v in cats.items()}, round(total * g, 4),
            [{k: round(v * g, 4) for k, v in d.items()} for d in per])


class Fleet:
    def __init__(self, seed: int) -> None:
        rng = random.Random(f"{seed}-fleet")
        self.skew = {h: round(rng.uniform(0.6, 3.4) * rng.choice([-1, 1]), 3) for h in HOSTS}
        self.skew[FIRST_WATCHDOG] = -4.6
        self.skew[FIRST_LUSTRE] = -4.2
        self.skew["hgx-01"] = 1.7
        self.boot = {h: T0 - rng.randint(2 * 86400, 8 * 86400) for h in HOSTS}
        self.serial = {(h, g): f"16523{rng.randint(10 ** 7, 10 ** 8 - 1)}" for h in HOSTS for g in range(GPN)}
        self.uuid = {(h, g): f"GPU-{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-{rng.getrandbits(16):04x}-"
                             f"{rng.getrandbits(16):04x}-{rng.getrandbits(48):012x}"
                     for h in HOSTS for g in range(GPN)}


class Pids:
    def __init__(self, seed: int, a: Attempt) -> None:
        rng = random.Random(f"{seed}-pids-{a.k}")
        self.agent = {h: rng.randint(100_000, 3_900_000) for h in a.nodes}
        self.worker = {(h, d): self.agent[h] + 9 + d for h in a.nodes for d in range(GPN)}
        self.tid = {(h, d): self.worker[h, d] + rng.randint(300, 2400) for h in a.nodes for d in range(GPN)}


def host_ip(h: str) -> str:
    return f"10.64.3.{10 + int(h[4:])}"


# ----------------------------------------------------------------------------- console
def loss_at(n: int, rng: random.Random) -> float:
    return 1.71 + 0.55 * math.exp(-n / 900.0) + rng.gauss(0, 0.012)


def lr_at(n: int, total: int) -> float:
    warm = 200
    if n < warm:
        return 3e-5 * n / warm
    return 3e-6 + 0.5 * (3e-5 - 3e-6) * (1 + math.cos(math.pi * (n - warm) / max(1, total - warm)))


def hf(t: float, msg: str, src: str = "trainer.py:2243", level: str = "INFO") -> str:
    return f"[{level}|{src}] {hf_ts(t)} >> {msg}"


STARTUP_TB = [
    "Traceback (most recent call last):",
    '  File "/workspace/cpt/modeling_patch.py", line 31, in <module>',
    "    from flash_attn import flash_attn_varlen_func",
    f'  File "{PY}/flash_attn/__init__.py", line 3, in <module>',
    "    from flash_attn.flash_attn_interface import (",
    f'  File "{PY}/flash_attn/flash_attn_interface.py", line 10, in <module>',
    "    import flash_attn_2_cuda as flash_attn_cuda",
    f"ImportError: {PY}/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol: "
    "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
]


def console(a: Attempt, fleet: Fleet, pids: Pids, seed: int, train_steps: int, info: dict) -> list[str]:
    rng = random.Random(f"{seed}-console-{a.k}")
    L = Sink()
    h0 = a.nodes[0]
    sk0 = fleet.skew[h0]
    P0 = "[default0]:"

    def R0(t: float, line: str) -> None:               # a rank-0 line stamped by hgx-01's clock
        L.add(t, P0 + line)

    S = a.S
    L.add(S, f"START TIME: {date_cmd(S + sk0)}")
    L.add(S + 0.01, f"Nodes: {hostlist(a.nodes)}")
    resume = f"{CKPT}/checkpoint-{a.load_step}" if a.load_step else None
    if a.k == 9:
        L.add(S + 0.5, f"resume: skipping {CKPT}/checkpoint-{atts_failed_save(info)} (no trainer_state.json)")
    L.add(S + 0.6, f"resume: {resume or 'none (fresh start)'}")
    L.add(S + 0.7, f"+ srun --cpu-bind=none torchrun --nnodes {NNODES} --nproc_per_node {GPN} --rdzv_id {JOB} "
                   f"--rdzv_backend c10d --rdzv_endpoint {h0}:29500 --tee 3 train_cpt.py --config cpt_8b.yaml "
                   f"--ddp_timeout {WATCHDOG} --save_steps {SAVE_EVERY} --logging_steps {LOG_EVERY}"
                   + (f" --resume_from_checkpoint {resume}" if resume else ""))
    for i, h in enumerate(a.nodes):
        tt = S + 21.0 + 0.04 * i
        p = f"{glog(tt + fleet.skew[h], 'W')} {pids.agent[h]} torch/distributed/run.py:793] "
        L.extend(tt, [p, p + "*" * 41, p + "Setting OMP_NUM_THREADS environment variable for each process to be 1 "
                      "in default, to avoid your system being overloaded, please further tune the variable for "
                      "optimal performance in your application as needed. ", p + "*" * 41])
    ti = S + 46.0
    for r in (0, 8, 16):
        L.add(ti + 0.02 * r, f"[default{r}]:{basic_ts(ti + sk0)} - WARNING - __main__ - Process rank: {r}, device: "
                             f"cuda:{r % GPN}, n_gpu: 1, distributed training: True, 16-bits training: False")
    R0(ti + 0.5, f"{basic_ts(ti + 0.5 + sk0)} - WARNING - __main__ - flash_attn unavailable, falling back to sdpa")
    L.extend(ti + 0.5, [P0 + x for x in STARTUP_TB])
    R0(ti + 1.2, hf(ti + 1.2 + sk0, "loading configuration file /lustre/models/Meta-Llama-3-8B/config.json",
                    "configuration_utils.py:733"))
    R0(ti + 1.9, hf(ti + 1.9 + sk0, "loading weights file /lustre/models/Meta-Llama-3-8B/model.safetensors.index.json",
                    "modeling_utils.py:3678"))
    R0(ti + 38.0, hf(ti + 38.0 + sk0, "All model checkpoint weights were used when initializing LlamaForCausalLM.\n",
                     "modeling_utils.py:4507"))
    R0(ti + 39.0, f"{PY}/torch/utils/checkpoint.py:1399: FutureWarning: `torch.cpu.amp.autocast(args...)` is "
                  "deprecated. Please use `torch.amp.autocast('cpu', args...)` instead.")
    t_load = ti + 61.0
    if resume:
        R0(t_load, hf(t_load + sk0, f"Loading model from {resume}.", "trainer.py:2112"))
    tr = a.F - (90.0 if resume else 8.0)
    R0(tr, hf(tr + sk0, "***** Running training *****", "trainer.py:2243"))
    for j, msg in enumerate([f"  Num examples = {train_steps * GBS:,}", "  Num Epochs = 1",
                             f"  Instantaneous batch size per device = {MBS}",
                             f"  Total train batch size (w. parallel, distributed & accumulation) = {GBS:,}",
                             f"  Gradient Accumulation steps = {GA}", f"  Total optimization steps = {train_steps:,}",
                             "  Number of trainable parameters = 8,030,261,248"]):
        R0(tr + 0.001 * (j + 1), hf(tr + sk0, msg, f"trainer.py:{2244 + j}"))
    if resume:
        for j, msg in enumerate(["  Continuing training from checkpoint, will skip to saved global_step",
                                 "  Continuing training from epoch 0",
                                 f"  Continuing training from global step {a.load_step}",
                                 f"  Will skip the first 0 epochs then the first {a.load_step * GA} batches in the "
                                 "first epoch."]):
            R0(tr + 0.01 + 0.001 * j, hf(tr + 0.01 + sk0, msg, f"trainer.py:{2270 + j}"))
    lrng = random.Random(f"{seed}-loss-{a.k}")
    saves = {n: (s0, c) for n, s0, c in a.saves}
    for n, ts, dur in a.steps:
        end = ts + dur
        if n % LOG_EVERY == 0:
            bad = any(m in a.bad_steps for m in range(n - LOG_EVERY + 1, n + 1))
            loss = "nan" if bad else f"{loss_at(n, lrng):.4f}"
            gn = "nan" if bad else f"{0.31 + 0.4 * math.exp(-n / 700) + abs(lrng.gauss(0, 0.04)):.4f}"
            R0(end + 0.05, "{" + f"'loss': {loss}, 'grad_norm': {gn}, 'learning_rate': {lr_at(n, train_steps):.4e}, "
                              f"'epoch': {n / train_steps:.4f}" + "}")
        if n in saves:
            s0, c = saves[n]
            save_lines(L, P0, s0, c, n, sk0, a, train_steps)
    if a.kind == "sdc":
        n_abort = a.abort_step
        t_abort = [ts + d for n, ts, d in a.steps if n == n_abort][0] + 0.3
        guard_failure(L, a, fleet, pids, t_abort, n_abort)
    elif a.kind == "lustre":
        lustre_failure(L, a, fleet, pids, rng, sk0, info)
    elif a.kind == "maint":
        maint_end(L, a, fleet, pids)
    elif a.kind == "complete":
        fs, fc = a.saves[-1][1], a.saves[-1][2]
        tt = fs + fc + 1.0
        R0(tt, hf(tt + sk0, "\n\nTraining completed. Do not forget to share your model on huggingface.co/models "
                            "=)\n\n", "trainer.py:2505"))
        R0(tt + 0.2, "{" + f"'train_runtime': {fs + fc - a.F:.4f}, 'train_samples_per_second': "
                           f"{(train_steps - a.load_step) * GBS / (fs + fc - a.F):.3f}, 'train_steps_per_second': "
                           f"{(train_steps - a.load_step) / (fs + fc - a.F):.3f}, 'train_loss': 1.7702, 'epoch': 1.0"
                     + "}")
        R0(tt + 1.0, hf(tt + 1.0 + sk0, f"Saving model checkpoint to {CKPT}", "trainer.py:3801"))
        R0(a.E - 30.0, hf(a.E - 30.0 + sk0, f"Model weights saved in {CKPT}/model.safetensors.index.json",
                          "modeling_utils.py:3042"))
        R0(a.E - 29.0, "***** train metrics *****")
        R0(a.E - 29.0, "  epoch                    =        1.0")
        R0(a.E - 29.0, "  train_loss               =     1.7702")
        L.add(a.E - 2.0, f"END TIME: {date_cmd(a.E - 2.0 + sk0)}")
    else:
        crash_end(L, a, fleet, pids, rng, sk0, info)
    return L.lines()


def atts_failed_save(info: dict) -> int:
    return info["failed_save_step"]


def save_lines(L: Sink, P0: str, s0: float, c: float, n: int, sk0: float, a: Attempt, train_steps: int) -> None:
    d = f"{CKPT}/checkpoint-{n}"
    L.add(s0 + 0.02, P0 + hf(s0 + 0.02 + sk0, f"Saving model checkpoint to {d}", "trainer.py:3801"))
    L.add(s0 + 0.3, P0 + hf(s0 + 0.3 + sk0, f"Configuration saved in {d}/config.json", "configuration_utils.py:414"))
    L.add(s0 + 0.31, P0 + hf(s0 + 0.31 + sk0, f"Configuration saved in {d}/generation_config.json",
                             "configuration_utils.py:865"))
    tm = s0 + 0.45 * c
    L.add(tm, P0 + hf(tm + sk0, "The model is bigger than the maximum size per checkpoint (5GB) and is going to be "
                               f"split in 4 checkpoint shards. You can find where each parameters has been saved in "
                               f"the index located at {d}/model.safetensors.index.json.", "modeling_utils.py:3042"))
    L.add(tm + 0.1, P0 + hf(tm + 0.1 + sk0, f"tokenizer config file saved in {d}/tokenizer_config.json",
                            "tokenization_utils_base.py:2646"))
    L.add(tm + 0.2, P0 + f"{basic_ts(tm + 0.2 + sk0)} - INFO - accelerate.utils.fsdp_utils - Saving Optimizer state "
                         f"to {d}/optimizer_0")
    L.add(s0 + c - 0.05, P0 + f"{basic_ts(s0 + c - 0.05 + sk0)} - INFO - accelerate.utils.fsdp_utils - Optimizer "
                              f"state saved in {d}/optimizer_0")
    if n - 3 * SAVE_EVERY > 0:
        L.add(s0 + c - 0.01, P0 + hf(s0 + c - 0.01 + sk0, f"Deleting older checkpoint [{CKPT}/checkpoint-"
                                                          f"{n - 3 * SAVE_EVERY}] due to args.save_total_limit",
                                     "trainer.py:3893"))


def watchdog_lines(L: Sink, a: Attempt, fleet: Fleet, t_fire: float, ranks: list[int], seq: int,
                   rng: random.Random) -> dict[int, float]:
    fired = {}
    for r in ranks:
        h = a.nodes[r // GPN]
        tt = t_fire + rng.uniform(0.0, 2.5)
        fired[r] = tt
        p = f"[default{r}]:[rank{r}]:"
        st = fleet.skew[h]
        L.add(tt, p + f"{c10(tt + st, 'E')} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
                      f"operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                      f"Timeout(ms)={WATCHDOG * 1000}) ran for {WATCHDOG * 1000 + rng.randint(8, 90)} milliseconds "
                      "before timing out.")
        L.add(tt + 0.001, p + f"{c10(tt + 0.001 + st, 'E')} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) "
                              f"Rank {r}] Exception (either an error or timeout) detected by watchdog at work: {seq}, "
                              f"last enqueued NCCL work: {seq}, last completed NCCL work: {seq - 1}.")
        L.add(tt + 0.002, p + f"{c10(tt + 0.002 + st, 'E')} ProcessGroupNCCL.cpp:630] [Rank {r}] Some NCCL "
                              "operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, "
                              "subsequent GPU operations might run on corrupted/incomplete data.")
        L.add(tt + 0.003, p + f"{c10(tt + 0.003 + st, 'E')} ProcessGroupNCCL.cpp:636] [Rank {r}] To avoid data "
                              "inconsistency, we are taking the entire process down.")
        L.add(tt + 0.01, f"[default{r}]:terminate called after throwing an instance of 'c10::DistBackendError'")
    return fired


def child_failed(L: Sink, a: Attempt, fleet: Fleet, pids: Pids, h: str, t: float, first: tuple[int, int, str],
                 others: list[tuple[int, int, str]]) -> None:
    """One node's torchrun summary: first=(rank, exitcode, traceback text)."""
    sk = fleet.skew[h]
    i = a.nodes.index(h)
    stamp = _split(t + sk)[0].strftime("%Y-%m-%d_%H:%M:%S")

    def block(r: int, code: int, tb: str) -> list[str]:
        d = r % GPN
        return [f"  time      : {stamp}", f"  host      : {h}", f"  rank      : {r} (local_rank: {d})",
                f"  exitcode  : {code} (pid: {pids.worker[h, d]})", "  error_file: <N/A>", f"  traceback : {tb}"]

    lines = ["Traceback (most recent call last):", '  File "/usr/local/bin/torchrun", line 8, in <module>',
             "    sys.exit(main())",
             f'  File "{PY}/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
             "    return f(*args, **kwargs)",
             f'  File "{PY}/torch/distributed/launcher/api.py", line 263, in launch_agent',
             "    raise ChildFailedError(",
             "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 60,
             "train_cpt.py FAILED", "-" * 60, "Failures:"]
    if others:
        for j, (r, code, tb) in enumerate(others[:2]):
            lines += [f"[{j + 1}]:"] + block(r, code, tb)
    else:
        lines.append("  <NO_OTHER_FAILURES>")
    lines += ["-" * 60, "Root Cause (first observed failure):", "[0]:"] + block(*first) + ["=" * 60]
    L.extend(t, lines)
    L.add(t + 0.3, f"srun: error: {h}: task {i}: Exited with exit code 1")


def agent_teardown(L: Sink, a: Attempt, fleet: Fleet, pids: Pids, h: str, t: float, failed_local: int,
                   code: int, stuck_local: int | None = None) -> None:
    sk, ag = fleet.skew[h], pids.agent[h]
    L.add(t, f"{glog(t + sk, 'W')} {ag} torch/distributed/elastic/multiprocessing/api.py:897] Sending process "
             f"{pids.worker[h, (failed_local + 1) % GPN]} closing signal SIGTERM")
    if stuck_local is not None:
        tk = t + 30.1
        L.add(tk, f"{glog(tk + sk, 'W')} {ag} torch/distributed/elastic/multiprocessing/api.py:914] Unable to "
                  f"shutdown process {pids.worker[h, stuck_local]} via Signals.SIGTERM, forcefully exiting via "
                  "Signals.SIGKILL")
        t = tk
    tf = t + 0.6
    L.add(tf, f"{glog(tf + sk, 'E')} {ag} torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: "
              f"{code}) local_rank: {failed_local} (pid: {pids.worker[h, failed_local]}) of binary: /usr/bin/python3")


def cuda_tb(r: int, err: str) -> list[str]:
    p = f"[default{r}]:[rank{r}]: "
    return [p + x for x in [
        "Traceback (most recent call last):",
        '  File "/workspace/cpt/train_cpt.py", line 412, in <module>', "    main()",
        '  File "/workspace/cpt/train_cpt.py", line 398, in main',
        "    trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)",
        f'  File "{PY}/transformers/trainer.py", line 2123, in train', "    return inner_training_loop(",
        f'  File "{PY}/transformers/trainer.py", line 2481, in _inner_training_loop',
        "    tr_loss_step = self.training_step(model, inputs, num_items_in_batch)",
        f'  File "{PY}/transformers/trainer.py", line 3612, in training_step',
        "    self.accelerator.backward(loss, **kwargs)",
        f'  File "{PY}/accelerate/accelerator.py", line 2248, in backward', "    loss.backward(**kwargs)",
        f'  File "{PY}/torch/_tensor.py", line 581, in backward',
        "    torch.autograd.backward(",
        f"RuntimeError: CUDA error: {err}",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.", "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", ""]]


COLLATE_TB = [
    "Traceback (most recent call last):",
    '  File "/workspace/cpt/train_cpt.py", line 412, in <module>', "    main()",
    '  File "/workspace/cpt/train_cpt.py", line 398, in main',
    "    trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)",
    f'  File "{PY}/transformers/trainer.py", line 2123, in train', "    return inner_training_loop(",
    f'  File "{PY}/transformers/trainer.py", line 2427, in _inner_training_loop',
    "    batch_samples, num_items_in_batch = self.get_batch_samples(epoch_iterator, num_batches)",
    f'  File "{PY}/transformers/trainer.py", line 5045, in get_batch_samples',
    "    batch_samples += [next(epoch_iterator)]",
    f'  File "{PY}/accelerate/data_loader.py", line 552, in __iter__', "    current_batch = next(dataloader_iter)",
    f'  File "{PY}/torch/utils/data/dataloader.py", line 701, in __next__', "    data = self._next_data()",
    f'  File "{PY}/torch/utils/data/dataloader.py", line 757, in _next_data',
    "    data = self._dataset_fetcher.fetch(index)  # may raise StopIteration",
    f'  File "{PY}/torch/utils/data/_utils/fetch.py", line 55, in fetch', "    return self.collate_fn(data)",
    '  File "/workspace/cpt/collate.py", line 58, in __call__',
    '    batch = self.tokenizer.pad(features, padding="longest", return_tensors="pt")',
    f'  File "{PY}/transformers/tokenization_utils_base.py", line 3397, in pad',
    "    return BatchEncoding(batch_outputs, tensor_type=return_tensors)",
    f'  File "{PY}/transformers/tokenization_utils_base.py", line 778, in convert_to_tensors',
    "    raise ValueError(",
    "ValueError: Unable to create tensor, you should probably activate truncation and/or padding with "
    "'padding=True' 'truncation=True' to have batched tensors with the same length. Perhaps your features "
    "(`labels` in this case) have excessive nesting (inputs type `list` where type `int` is expected).",
]


def crash_end(L: Sink, a: Attempt, fleet: Fleet, pids: Pids, rng: random.Random, sk0: float, info: dict) -> None:
    """A rank dies or hangs at a.R; the others' watchdogs fire WATCHDOG s after the collective they block in."""
    rr = a.root_rank
    rh = a.nodes[rr // GPN] if rr is not None else None
    seq = 40_000 + 37 * a.steps[-1][0] + rng.randint(0, 30)
    dead: set[int] = set()
    t_dead = a.R
    if a.kind == "ecc":
        t_dead = a.R + 1.4
        L.extend(t_dead, cuda_tb(rr, "uncorrectable ECC error encountered"))
        dead = {rr}
    elif a.kind == "collator":
        t_dead = a.R
        L.extend(t_dead, [f"[default{rr}]:[rank{rr}]: " + x for x in COLLATE_TB])
        dead = {rr}
    elif a.kind == "link":
        bad = [a.nodes.index(a.root_host) * GPN + 4]
        peer = a.nodes.index(LINK_PEER) * GPN + 4
        t_dead = a.R + 27.0
        for r, h in ((bad[0], a.root_host), (peer, LINK_PEER)):
            w = pids.worker[h, 4]
            tt = a.R + rng.uniform(22.0, 26.0)
            other = host_ip(LINK_PEER if h == a.root_host else a.root_host)
            L.add(tt, f"[default{r}]:{h}:{w}:{pids.tid[h, 4]} [4] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got "
                      f"completion from peer {other}<{rng.randint(40000, 60000)}> with status=12 opcode=0 len=0 "
                      f"vendor err 129 (Recv) localGid ::ffff:{host_ip(h)} remoteGids::ffff:{other}")
            L.add(tt + 0.001, f"[default{r}]:{h}:{w}:{pids.tid[h, 4]} [4] NCCL INFO transport/net.cc:1302 -> 6")
        r = bad[0]
        L.extend(t_dead, [f"[default{r}]:[rank{r}]: " + x for x in [
            "Traceback (most recent call last):", '  File "/workspace/cpt/train_cpt.py", line 412, in <module>',
            "    main()", f'  File "{PY}/torch/distributed/distributed_c10d.py", line 2501, in all_reduce',
            "    work.wait()",
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, "
            "remote process exited or there was a network error, NCCL version 2.21.5",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
            "prematurely.", "Last error:",
            f"NET/IB : Got completion from peer {host_ip(LINK_PEER)}<{rng.randint(40000, 60000)}> with status=12 "
            "opcode=0 len=0 vendor err 129 (Recv)"]])
        dead = set(range(a.nodes.index(a.root_host) * GPN, a.nodes.index(a.root_host) * GPN + GPN))
    # the dead/hung node's torchrun tears its workers down first (a Python exception)
    if a.kind in ("ecc", "collator", "link"):
        h = rh or a.root_host
        tt = t_dead + 1.8
        fl = (rr if rr is not None else a.nodes.index(h) * GPN + 4) % GPN
        agent_teardown(L, a, fleet, pids, h, tt, fl, 1)
        child_failed(L, a, fleet, pids, h, tt + 0.7, (a.nodes.index(h) * GPN + fl, 1,
                     "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"), [])
        dead |= set(range(a.nodes.index(h) * GPN, a.nodes.index(h) * GPN + GPN))
    stuck_host = None
    if a.kind in ("xid79", "hang", "gsp"):
        stuck_host = a.root_host
        dead = {rr}
    t_fire = a.R + WATCHDOG + 2.0 + (a.kind == "link") * 1.0
    if a.kind == "collator":
        t_fire = a.R + WATCHDOG + 1.0
    survivors = [r for r in range(GPUS) if r not in dead]
    rng2 = random.Random(f"wd-{a.k}")
    fired = watchdog_lines(L, a, fleet, t_fire, survivors, seq, rng2)
    info.setdefault("watchdog_first", {})[a.k] = min(t + fleet.skew[a.nodes[r // GPN]] for r, t in fired.items())
    for i, h in enumerate(a.nodes):
        ranks = [r for r in survivors if r // GPN == i]
        if not ranks:
            continue
        first = min(ranks, key=lambda r: fired[r])
        tt = max(fired[r] for r in ranks) + 1.0
        stuck = GPU_OF.get(a.kind) if h == stuck_host else None
        agent_teardown(L, a, fleet, pids, h, tt, first % GPN, -6, stuck)
        tt += 31 if stuck is not None else 1
        child_failed(L, a, fleet, pids, h, tt, (first, -6, f"Signal 6 (SIGABRT) received by PID "
                                                           f"{pids.worker[h, first % GPN]}"),
                     [(r, -6, f"Signal 6 (SIGABRT) received by PID {pids.worker[h, r % GPN]}")
                      for r in sorted(ranks, key=lambda r: fired[r])[1:3]])
    if a.kind == "xid79":
        tk = a.E - 9.0
        L.add(tk, f"slurmstepd: error: *** STEP {JOB}.0 STEPD TERMINATED ON {a.root_host} AT {slurm_ts(tk)} DUE TO "
                  "JOB NOT ENDING WITH SIGNALS ***")
        L.add(tk + 0.2, f"srun: error: {a.root_host}: task {a.nodes.index(a.root_host)}: Killed")
    end_script(L, a, sk0)


def end_script(L: Sink, a: Attempt, sk0: float) -> None:
    L.add(a.E - 2.2, f"srun exited with code 1 at {date_cmd(a.E - 2.2 + sk0)}; requeueing job {JOB}")


def guard_failure(L: Sink, a: Attempt, fleet: Fleet, pids: Pids, t: float, n: int) -> None:
    for r in range(GPUS):
        p = f"[default{r}]:[rank{r}]: "
        if r in (0, 17, 51):
            L.extend(t + 0.01 * (r % 8), [p + x for x in [
                "Traceback (most recent call last):", '  File "/workspace/cpt/train_cpt.py", line 412, in <module>',
                "    main()", '  File "/workspace/cpt/callbacks.py", line 44, in on_log',
                "    raise RuntimeError(f\"non-finite loss {logs['loss']} at step {state.global_step} \"",
                f"RuntimeError: non-finite loss nan at step {n} (guard: 3 non-finite logs in a row)"]])
    for i, h in enumerate(a.nodes):
        tt = t + 1.6 + 0.05 * i
        agent_teardown(L, a, fleet, pids, h, tt, 0, 1)
        child_failed(L, a, fleet, pids, h, tt + 0.7, (i * GPN, 1, "To enable traceback see: "
                                                      "https://pytorch.org/docs/stable/elastic/errors.html"),
                     [(i * GPN + 1, 1, "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")])
    end_script(L, a, fleet.skew[a.nodes[0]])


def lustre_failure(L: Sink, a: Attempt, fleet: Fleet, pids: Pids, rng: random.Random, sk0: float,
                   info: dict) -> None:
    n, ts = a.failed_save
    info["failed_save_step"] = n
    d = f"{CKPT}/checkpoint-{n}"
    L.add(ts + 0.02, "[default0]:" + hf(ts + 0.02 + sk0, f"Saving model checkpoint to {d}", "trainer.py:3801"))
    L.add(ts + 0.3, "[default0]:" + hf(ts + 0.3 + sk0, f"Configuration saved in {d}/config.json",
                                       "configuration_utils.py:414"))
    tf = a.E - 14.0
    info["exception_ts"] = tf
    for r in (0, 9, 33, 58):
        p = f"[default{r}]:[rank{r}]: "
        L.extend(tf + 0.02 * r, [p + x for x in [
            "Traceback (most recent call last):", '  File "/workspace/cpt/train_cpt.py", line 412, in <module>',
            "    main()", f'  File "{PY}/transformers/trainer.py", line 3164, in _save_checkpoint',
            "    self.save_model(output_dir, _internal_call=True)",
            f'  File "{PY}/accelerate/utils/fsdp_utils.py", line 121, in save_fsdp_model',
            "    dist_cp.save_state_dict(",
            f'  File "{PY}/torch/distributed/checkpoint/filesystem.py", line 424, in _write_files_from_queue',
            "    stream.flush()", "OSError: [Errno 5] Input/output error"]])
    for i, h in enumerate(a.nodes):
        tt = tf + 2.0 + 0.04 * i
        agent_teardown(L, a, fleet, pids, h, tt, 0, 1)
        child_failed(L, a, fleet, pids, h, tt + 0.7, (i * GPN, 1, "To enable traceback see: "
                                                      "https://pytorch.org/docs/stable/elastic/errors.html"), [])
    end_script(L, a, sk0)


def maint_end(L: Sink, a: Attempt, fleet: Fleet, pids: Pids) -> None:
    K = a.E - 4.0
    h0 = a.nodes[0]
    L.add(K, f"srun: error: Node failure on {a.root_host}")
    L.add(K + 0.01, f"slurmstepd: error: *** JOB {JOB} ON {h0} CANCELLED AT {slurm_ts(K)} DUE TO NODE FAILURE, "
                    "SEE SLURMCTLD LOG FOR DETAILS ***")
    L.add(K + 0.02, f"slurmstepd: error: *** STEP {JOB}.0 ON {h0} CANCELLED AT {slurm_ts(K)} DUE TO NODE FAILURE, "
                    "SEE SLURMCTLD LOG FOR DETAILS ***")
    for i, h in enumerate(a.nodes):
        if h == a.root_host:
            continue
        tt = K + 0.3 + 0.02 * i
        L.add(tt, f"{glog(tt + fleet.skew[h], 'W')} {pids.agent[h]} torch/distributed/elastic/agent/server/api.py:"
                  "704] Received 15 death signal, shutting down workers")
        L.add(tt + 0.001, f"{glog(tt + 0.001 + fleet.skew[h], 'W')} {pids.agent[h]} torch/distributed/elastic/"
                          f"multiprocessing/api.py:897] Sending process {pids.worker[h, 0]} closing signal SIGTERM")
    # the killed writer's last line is cut: no newline (the next banner lands on the same line)
    L.add(K + 1.5, f"{glog(K + 1.5 + fleet.skew[h0], 'W')} {pids.agent[h0]} torch/distributed/elastic/multiproc"
                   "\x00CUT")


# ----------------------------------------------------------------------------- step probe
def probe(atts: list[Attempt], fleet: Fleet, seed: int) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    lrng = random.Random(f"{seed}-probe")
    for a in atts:
        full = a.kind in ("hang", "sdc")
        ranks = range(GPUS) if full else range(0, GPUS, GPN)
        hung = a.root_rank if a.kind == "hang" else None
        last = a.steps[-1][0] if a.steps else 0
        base = {n: loss_at(n, lrng) for n, _, _ in a.steps}
        for r in ranks:
            h = a.nodes[r // GPN]
            sk = fleet.skew[h]
            rr = random.Random(f"{seed}-probe-{a.k}-{r}")
            rec = out.setdefault(r, [])
            for n, ts, dur in a.steps:
                if r == hung and n == last:
                    break
                loss = base[n] + rr.gauss(0, 0.03)
                if a.kind == "sdc" and r == a.root_rank and n in a.bad_steps:
                    loss = float("nan") if rr.random() < 0.6 else float("inf")
                rec.append(json.dumps({"ts": round(ts + dur + sk + rr.uniform(0.001, 0.02), 3), "rank": r, "host": h,
                                       "step": n, "step_s": round(dur + rr.uniform(-0.004, 0.004), 4),
                                       "tokens": TOKENS_PER_RANK, "loss": round(loss, 4)}))
    return out


# ----------------------------------------------------------------------------- kernel
NOISE = ["perf: interrupt took too long ({a} > {b}), lowering kernel.perf_event_max_sample_rate to {c}",
         "kauditd_printk_skb: {k} callbacks suppressed",
         "IPv6: ADDRCONF(NETDEV_CHANGE): veth{v}: link becomes ready",
         "docker0: port 1(veth{v}) entered forwarding state"]


def boot_lines() -> list[tuple[float, str]]:
    out = [(0.0, f"Linux version {KERNEL} (buildd@lcy02-amd64-080) (x86_64-linux-gnu-gcc-12 (Ubuntu 12.3.0-1ubuntu1~"
                 "22.04) 12.3.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #69-Ubuntu SMP Wed Oct 16 12:02:51 UTC 2024"),
           (0.0, "DMI: Supermicro SYS-821GE-TNHR/X13DEG-OAD, BIOS 2.1 04/11/2024")]
    for k in range(GPN):
        out.append((11.2 + 0.01 * k, f"mlx5_core {NIC_PCI[k]} {NIC_IF[k]}: renamed from ib{k}"))
    out += [(21.7, "nvidia: module license 'NVIDIA' taints kernel."),
            (22.1, f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {DRIVER}  Fri Oct 18 04:11:27 UTC 2024"),
            (35.0, "Lustre: Lustre: Build Version: 2.15.5"),
            (36.2, "Lustre: Mounted lustre-client")]
    return out


def xid(bus: str, code: int, text: str, pid: int | None = None) -> str:
    who = f"pid={pid}, name=python3, " if pid else "pid='<unknown>', name=<unknown>, "
    return f"NVRM: Xid (PCI:0000:{bus}:00): {code}, {who}{text}"


def kernel(atts: list[Attempt], fleet: Fleet, seed: int, info: dict, bundle: Path) -> None:
    t_end = atts[-1].E + 1200
    byk = {a.k: a for a in atts}
    for idx, h in enumerate(HOSTS):
        hr = random.Random(f"{seed}-kern-{h}")
        boot = fleet.boot[h]
        ev: list[tuple[float, str]] = [(boot + dt, m) for dt, m in boot_lines()]
        t = boot + hr.uniform(600, 9000)
        while t < t_end:
            a_ = hr.randint(2600, 6000)
            ev.append((t, hr.choice(NOISE).format(a=a_, b=a_ - 7, c=hr.choice([79750, 63750]), k=hr.randint(3, 40),
                                                  v=f"{hr.getrandbits(28):07x}")))
            t += hr.uniform(1800, 14000)
        for a in atts:
            if h != a.root_host and not (a.kind == "lustre" and h in a.nodes):
                continue
            g = GPU_OF.get(a.kind)
            pid = Pids(seed, a).worker.get((h, g)) if g is not None else None
            bus = BUSIDS[g] if g is not None else None
            if a.kind == "xid79":
                ev += [(a.R, f"NVRM: GPU at PCI:0000:{bus}:00: {fleet.uuid[h, g]}"),
                       (a.R, f"NVRM: GPU Board Serial Number: {fleet.serial[h, g]}"),
                       (a.R, xid(bus, 79, "GPU has fallen off the bus.", pid)),
                       (a.R + 0.01, f"NVRM: GPU 0000:{bus}:00.0: GPU has fallen off the bus."),
                       (a.R + 0.02, "NVRM: A GPU crash dump has been created. If possible, please run"),
                       (a.R + 0.02, "NVRM: nvidia-bug-report.sh as root to collect this data before"),
                       (a.R + 0.02, "NVRM: the NVIDIA kernel module is unloaded.")]
                for j in range(3):
                    tt = a.R + 243 + 122 * j
                    ev += [(tt, f"INFO: task python3:{pid} blocked for more than {242 + 122 * j} seconds."),
                           (tt, f"      Tainted: P           OE      {KERNEL} #69-Ubuntu"),
                           (tt, '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.')]
            elif a.kind == "ecc":
                ev += [(a.R, f"NVRM: GPU at PCI:0000:{bus}:00: {fleet.uuid[h, g]}"),
                       (a.R, f"NVRM: GPU Board Serial Number: {fleet.serial[h, g]}"),
                       (a.R, xid(bus, 94, "Contained ECC error", pid)),
                       (a.R + 0.4, xid(bus, 63, "Row Remapper: New row (0x0000000000a1f3c0) marked for remapping, "
                                                "reset gpu to activate.", pid))]
            elif a.kind == "link":
                ev += [(a.R, f"mlx5_core {NIC_PCI[4]} {NIC_IF[4]}: Link down"),
                       (a.R + 0.2, f"mlx5_core {NIC_PCI[4]}: mlx5_fw_tracer_handle_traces:742:(pid 0): FW Tracer: "
                                   "link state change: port 1 DOWN"),
                       (a.E + 2400, f"mlx5_core {NIC_PCI[4]} {NIC_IF[4]}: Link up")]
            elif a.kind == "maint":
                ev += [(a.R - 2.0, "systemd-shutdown[1]: Syncing filesystems and block devices."),
                       (a.R - 1.0, "systemd-shutdown[1]: Sending SIGTERM to remaining processes..."),
                       (a.R, "reboot: Restarting system")]
                info["reboot"] = a.R
                nb = a.R + 95.0
                ev += [(nb + dt, m) for dt, m in boot_lines()]
            elif a.kind == "gsp":
                for j in range(3):
                    tt = a.R + 6.0 * j
                    ev.append((tt, xid(bus, 119, f"Timeout after 6s of waiting for RPC response from GPU{g} GSP! "
                                                 f"Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).", pid)))
                ev.append((a.R + 19, xid(bus, 154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot "
                                                   "Required)", None)))
            elif a.kind == "lustre":
                n, ts = a.failed_save
                first = ts + (3.1 if h == FIRST_LUSTRE else hr.uniform(4.5, 9.0))
                osc = f"lustre-OST0004-osc-ffff{hr.getrandbits(32):08x}"
                ev += [(first, f"LustreError: 11-0: {osc}: operation ost_write to node 10.50.0.14@o2ib failed: "
                               "rc = -107"),
                       (first + 0.01, f"Lustre: {osc}: Connection to lustre-OST0004 (at 10.50.0.14@o2ib) was lost; in "
                                      "progress operations using this service will wait for recovery to complete"),
                       (ts + 212 + hr.uniform(0, 4), f"LustreError: 167-0: {osc}: This client was evicted by "
                                                     "lustre-OST0004; in progress operations using this service "
                                                     "will fail."),
                       (ts + 1900 + hr.uniform(0, 9), f"Lustre: {osc}: Connection restored to lustre-OST0004 (at "
                                                      "10.50.0.14@o2ib)")]
                if h == FIRST_LUSTRE:
                    info["lustre_first"] = first
        if h == XID63_HOST:                                    # decoy: the job steps past it
            a8 = byk[8]
            tt = a8.F + 0.4 * (a8.R - a8.F)
            ev.append((tt, xid(BUSIDS[1], 63, "Row Remapper: New row (0x00000000003c81a0) marked for remapping, "
                                              "reset gpu to activate.", Pids(seed, a8).worker[h, 1])))
            info["xid63_ts"] = tt
        if h == IDLE_SPARE:                                    # decoy: a spare never used by the job
            tt = byk[4].F + 1800
            ev += [(tt, xid(BUSIDS[6], 48, "An uncorrectable double bit error (DBE) has been detected on GPU in the "
                                           "framebuffer at physAddr 0x7a3c81a00 partition 3, subpartition 1.", 88231)),
                   (tt + 0.3, xid(BUSIDS[6], 63, "Row Remapper: New row (0x00000000007a3c81) marked for remapping, "
                                                 "reset gpu to activate.", 88231))]
            info["spare_xid_ts"] = tt
        ev.sort(key=lambda x: x[0])
        sk = fleet.skew[h]
        frng = random.Random(f"frac-{h}")
        out = []
        if idx % 2 == 0 or h == "hgx-05":
            out.append(f"-- Journal begins at {datetime.fromtimestamp(boot + sk, UTC):%a %Y-%m-%d %H:%M:%S} UTC, "
                       f"ends at {datetime.fromtimestamp(t_end + sk, UTC):%a %Y-%m-%d %H:%M:%S} UTC. --")
            prev = None
            for t, m in ev:
                if h == "hgx-05" and prev is not None and prev <= info.get("reboot", 0) < t:
                    out.append("-- Boot 5e1f0c9a2b7d4c3e8f60a1b2c3d4e5f6 --")
                prev = t
                out.append(f"{short_iso(t + sk + frng.uniform(0, 0.0009))} {h} kernel: {m}")
            name = "journal-k.log"
        else:
            out = [f"{dmesg_t(t + sk)} {m}" for t, m in ev]
            name = "dmesg-T.log"
        write(bundle / "nodes" / h / name, ("\n".join(out) + "\n").encode())


# ----------------------------------------------------------------------------- scheduler
def scheduler(atts: list[Attempt], bundle: Path, seed: int, info: dict) -> None:
    rng = random.Random(f"{seed}-sched")
    L = Sink()

    def add(t: float, msg: str) -> None:
        L.add(t, f"{ctld_ts(t)} {msg}")

    hdr = "JobID|JobName|User|Partition|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"
    rows: list[tuple[float, str]] = []
    submit = atts[0].S - 40
    add(submit, f"_slurm_rpc_submit_batch_job: JobId={JOB} InitPrio=10388 usec=702")
    for i, a in enumerate(atts):
        hl = hostlist(a.nodes)
        cpus = 224 * NNODES
        add(a.S + 0.02, f"sched: Allocate JobId={JOB} NodeList={hl} #CPUs={cpus} Partition=train")
        if a.kind == "complete":
            add(a.E + 0.1, f"_job_complete: JobId={JOB} WEXITSTATUS 0")
            add(a.E + 0.11, f"_job_complete: JobId={JOB} done")
            state, ec = "COMPLETED", "0:0"
        elif a.kind == "maint":
            add(a.R - 96.0, f"update_node: node {a.root_host} reason set to: emergency maintenance: BMC firmware")
            add(a.R - 95.9, f"update_node: node {a.root_host} state set to DRAINING")
            add(a.R + 118.0, f"error: Nodes {a.root_host} not responding")
            add(a.E - 4.2, f"error: Nodes {a.root_host} not responding, setting DOWN")
            add(a.E - 4.1, f"Killing JobId={JOB} on failed node {a.root_host}")
            add(a.E - 4.0, f"requeue job JobId={JOB} due to failure of node {a.root_host}")
            add(a.E + 0.1, f"_job_complete: JobId={JOB} WTERMSIG 9")
            add(a.E + 0.11, f"_job_complete: JobId={JOB} done")
            add(info["reboot"] + 171.0, f"Node {a.root_host} now responding")
            add(info["reboot"] + 1500.0, f"update_node: node {a.root_host} state set to IDLE")
            state, ec = "NODE_FAIL", "0:0"
        else:
            if a.kind == "xid79":
                add(a.E - 8.0, f"error: slurmd error running JobId={JOB} on node(s)={a.root_host}: Kill task failed")
                add(a.E - 7.9, f"drain_nodes: node {a.root_host} state set to DRAIN")
            add(a.E - 1.0, f"_job_complete: JobId={JOB} WEXITSTATUS 1")
            add(a.E - 0.9, f"_slurm_rpc_requeue: Requeue of JobId={JOB} from uid={USER_UID}")
            add(a.E - 0.8, f"requeue JobId={JOB} BeginTime={slurm_ts(a.E + 120)}")
            add(a.E + 0.1, f"_job_complete: JobId={JOB} done")
            state, ec = "REQUEUED", "1:0"
            reason = {"xid79": "gpu xid 79", "ecc": "gpu xid 94 row remap pending", "link": "ib link down ibp156s0",
                      "hang": "hung rank, nccl timeout, investigating", "sdc": "sdc suspect: nan loss on one rank",
                      "gsp": "gpu xid 119 gsp timeout"}.get(a.kind)
            if reason:
                tdr = a.E + rng.uniform(60, 200)
                add(tdr, f"update_node: node {a.root_host} reason set to: {reason}")
                add(tdr + 0.01, f"update_node: node {a.root_host} state set to DRAINED")
            if a.kind == "collator":
                add(a.E + 30.0, f"_hold_job_rec: hold on JobId={JOB} by uid {USER_UID}")
                add(atts[i + 1].S - 200.0, f"_slurm_rpc_update_job: complete JobId={JOB} uid={USER_UID} usec=311")
            if a.kind == "hang":
                add(a.E + 5000.0, "update_node: node hgx-04 state set to IDLE")
        rows.append((a.S, f"{JOB}|{RUN}|mlops|train|{cpus}|{state}|{ec}|{slurm_ts(submit)}|{slurm_ts(a.S)}|"
                          f"{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|{NNODES}|{hl}"))
        bst = {"COMPLETED": "COMPLETED", "NODE_FAIL": "CANCELLED", "REQUEUED": "FAILED"}[state]
        rows.append((a.S + 0.1, f"{JOB}.batch|batch||train|224|{bst}|{ec if state != 'NODE_FAIL' else '0:9'}|"
                                f"{slurm_ts(a.S)}|{slurm_ts(a.S)}|{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|1|{a.nodes[0]}"))
        rows.append((a.S + 0.2, f"{JOB}.0|torchrun||train|{cpus}|{bst}|{ec if state != 'NODE_FAIL' else '0:9'}|"
                                f"{slurm_ts(a.S + 1)}|{slurm_ts(a.S + 1)}|{slurm_ts(a.E - 3)}|"
                                f"{elapsed(a.E - 4 - a.S)}|{NNODES}|{hl}"))
        if a.kind != "complete":
            submit = a.E
    # a dcgm diag on the idle spare (the decoy's Xid lands inside it)
    hc = info["spare_xid_ts"] - 300
    add(hc, f"sched: Allocate JobId={JOB + 905} NodeList={IDLE_SPARE} #CPUs=224 Partition=maint")
    add(hc + 900, f"_job_complete: JobId={JOB + 905} WEXITSTATUS 226")
    add(hc + 960, f"update_node: node {IDLE_SPARE} reason set to: dcgm diag r3 failed, rma")
    add(hc + 960.01, f"update_node: node {IDLE_SPARE} state set to DRAINED")
    rows.append((hc, f"{JOB + 905}|dcgm-diag|root|maint|224|FAILED|226:0|{slurm_ts(hc - 9)}|{slurm_ts(hc)}|"
                     f"{slurm_ts(hc + 900)}|{elapsed(900)}|1|{IDLE_SPARE}"))
    rows.sort(key=lambda x: x[0])
    write(bundle / "scheduler" / "slurmctld.log", ("\n".join(L.lines()) + "\n").encode())
    write(bundle / "scheduler" / "sacct-D.psv", ("\n".join([hdr] + [r for _, r in rows]) + "\n").encode())


def inventory() -> str:
    return f"""# kx-1 fleet
[providers.{PROVIDER}]
usd_per_gpu_hour = 2.41

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = {GPN}
interconnect = "InfiniBand NDR 8x400G"
nodes = "hgx-[01-14]"
"""


def run_toml() -> str:
    return f"""# {RUN}: Llama 3 8B continued pre-training, HF Trainer + FSDP, one requeued Slurm job
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.4e}
checkpoint_dir = "{CKPT}"
launcher = "slurm"
launch_command = "sbatch --requeue --open-mode=append --nodes={NNODES} --gpus-per-node={GPN} cpt_8b.sbatch"
"""


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts, train_steps = build(seed)
    fleet = Fleet(seed)
    info: dict = {}
    write(bundle / "inventory.toml", inventory().encode())
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", run_toml().encode())
    text: list[str] = []
    for a in atts:
        lines = console(a, fleet, Pids(seed, a), seed, train_steps, info)
        text += lines
    body = "\n".join(text) + "\n"
    body = body.replace("\x00CUT\n", "")          # the killed writer's cut line: the next banner follows it
    write(rdir / f"slurm-{JOB}.out", body.encode())
    for r, recs in sorted(probe(atts, fleet, seed).items()):
        write(rdir / "steps" / f"rank-{r:05d}.jsonl", ("\n".join(recs) + "\n").encode())
    kernel(atts, fleet, seed, info, bundle)
    scheduler(atts, bundle, seed, info)
    cats, total, per = ledger(atts)
    incidents = []
    for j, a in enumerate(atts[:-1]):
        nxt = atts[j + 1]
        rr = a.root_rank if a.kind != "collator" else None
        incidents.append({
            "id": j + 1, "attempt": a.k, "attempts": [a.k], "slurm_job": JOB, "failure_mode": a.mode,
            "blame": "user" if a.mode == "user_code_error" else "provider" if a.mode in HARDWARE_MODES +
            ["silent_data_corruption"] else "unknown",
            "host": a.root_host, "cluster": CLUSTER, "provider": PROVIDER,
            "gpu_index": GPU_OF.get(a.kind) if a.root_host else None, "rank": rr,
            "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E), "next_start_ts": iso_z(nxt.S),
            "next_first_step_ts": iso_z(nxt.F), "last_ckpt_step": a.last_ckpt,
            "failed_at_step": a.steps[-1][0], "gpu_hours": per[j],
            "gpu_hours_lost": round(sum(per[j].values()), 4)})
    incidents[0]["symptom_first_ts"] = iso_z(info["watchdog_first"][1])
    incidents[7]["symptom_first_ts"] = iso_z(info["lustre_first"])
    incidents[7]["failed_save_step"] = info["failed_save_step"]
    incidents[6]["first_bad_step"] = min(atts[6].bad_steps)
    decoys = {"hgx-01": "harmless start-up traceback (flash_attn import fallback) in every attempt",
              FIRST_WATCHDOG: "clock behind: first to report the watchdog timeouts (a symptom)",
              LINK_PEER: "peer of the broken link in attempt 4: its NCCL WARN completion errors are a symptom",
              FIRST_LUSTRE: "first to report the Lustre OST outage (clock behind); the cause is the shared OST",
              XID63_HOST: "Xid 63 row-remap event mid attempt 8; every rank kept stepping",
              IDLE_SPARE: "never-used spare: Xid 48 + 63 during a dcgm diag"}
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "first_start_ts": iso_z(atts[0].S), "last_end_ts": iso_z(atts[-1].E), "clock_skew_s": fleet.skew,
        "train_steps": train_steps,
        "attempts": [{"attempt": a.k, "slurm_job": JOB, "nodes": hostlist(a.nodes), "start_ts": iso_z(a.S),
                      "first_step_ts": iso_z(a.F), "exit_ts": iso_z(a.E), "loaded_step": a.load_step,
                      "last_step": a.steps[-1][0], "saves": [n for n, _, _ in a.saves], "end": a.kind}
                     for a in atts],
        "match_on_attempt": True,
        "incidents": incidents,
        "forbidden_incidents": [
            {"failure_mode": "checkpoint_lost", "attempts": [9],
             "reason": "attempt 9 resumed from the last save that completed: the save that failed in attempt 8 "
                       "was never recorded as saved (no trainer_state.json, the job died in it); its loss is "
                       "attempt 8's filesystem_io incident, not a lost checkpoint"}],
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys,
        "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incidents), 4)},
        "notes": "Controller clock, UTC; node clocks skewed by clock_skew_s. host null matches any host. One JobID, "
                 "ten instances (sacct -D); the console of all ten is one appended file. Ledger: see the docstring.",
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
    print(f"wrote {out / 'bundle'} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB) and "
          f"{out / 'truth.json'}; total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
