#!/usr/bin/env python3
"""Independent campaign: MosaicML Composer / LLM Foundry pretraining in pyxis/enroot containers on bare-metal Slurm
with NHC as the HealthCheckProgram. Written before its author read clusterlab's analysis code.

Writes, under --out DIR:
  DIR/bundle/inventory.toml, DIR/bundle/runs/<run>/run.toml
  DIR/bundle/runs/<run>/attempt-<k>/slurm-<jobid>.out   srun + pyxis + the composer launcher (rank 0's console and
                                                        python logging; a crashed rank's STDOUT/STDERR dump)
  DIR/bundle/runs/<run>/attempt-8/timings/rank<R>.jsonl per-rank step records for a window of attempt 8
  DIR/bundle/nodes/<host>/{journal-k.log | dmesg-T.log}  kernel log (journalctl -k -o short-iso, or dmesg -T)
  DIR/bundle/nodes/<host>/nhc.log                        NHC's own log where NHC failed a check
  DIR/bundle/nodes/<host>/nvidia-smi-q.txt               the epilog's `nvidia-smi -q -d ECC,ROW_REMAPPER` snapshot
  DIR/bundle/scheduler/{slurmctld.log, sacct.psv, sinfo-R.txt}
  DIR/truth.json
Usage: composer_pyxis.py --out DIR [--seed N]   (python 3.11, standard library only, deterministic per seed)

Scenario (run "mpt7b-pyxis", 96 GPUs = 12 nodes x 8 H100-SXM of cluster "bm-east" / provider "ridgeline";
16 nodes in the inventory; rank 0 on the first node of each job's node list; UTC clocks):
  attempt 1  the container image pull fails on every node (pyxis: failed to import docker image; the registry
             answers 503): the job never starts training.                    [any mode but hardware, host null]
  attempt 2  Xid 48 (DBE) + Xid 63 (row pending remap) on ECC_HOST's GPU; that rank raises "CUDA error:
             uncorrectable ECC error encountered", srun kills the step; the epilog's nvidia-smi -q shows
             "Remapped Rows ... Pending: Yes". The node is NOT drained.              [gpu_memory_ecc, ECC_HOST]
  attempt 3  same nodes: the same GPU's rank dies at model init with the same CUDA error, no new Xid (the row
             remap needs a GPU reset that never happened). Sticky: that GPU's fault, not the user's code.
             The admin drains ECC_HOST afterwards; the spare takes its place.         [gpu_memory_ecc, ECC_HOST]
  attempt 4  an IB port of IB_HOST goes down mid run (mlx5 "Link down"); that host's ranks fail with NCCL
             NET/IB completion errors (status=12) and ncclRemoteError; NHC drains the node ("NHC: check_hw_ib:
             No IB port mlx5_N:1 is ACTIVE (LinkUp 400 Gb/sec).")                          [network, IB_HOST]
  attempt 5  the Lustre OST that holds the streaming dataset's local cache stops answering: every host logs
             "Connection to lustre-OST0007 ... was lost" within seconds and hung tasks ~2 min later; the NCCL
             watchdog (Composer dist_timeout 600 s) aborts the ranks. One shared cause.  [filesystem_io, null]
  attempt 6  a corrupt MDS shard fails streaming's hash check on one rank ("ValueError: Checksum failure: ...")
             -- a data problem of the user's.                                   [user_code_error, host null]
  attempt 7  the loss has plateaued; the user scancels to change the schedule.   [manual_stop, host null]
  attempt 8  completes. GPU SLOW_GPU of SLOW_HOST runs ~7 % slow (compute) for SLOW_STEPS steps inside the
             window covered by per-rank timings; everyone waits for it.        [kind straggler, SLOW_HOST]
  Decoys: NHC drains DECOY_NHC_HOST (a node outside every job) for "check_fs_mount: /lustre not mounted"; S3
  SlowDown / ReadTimeoutError retried by Composer's uploader (the upload then completes, training never stops);
  Composer deprecation warnings and a UserWarning in every attempt; srun's "pyxis: importing"/"imported" lines.

Ledger (truth.json expected_ledger, GPU-hours = 96 x seconds / 3600), the conventions of campaign1/campaign2:
  startup    = attempt start (sacct Start) -> start of its first batch; an attempt that never reaches a batch:
               start -> root event (the pull error, the CUDA error at init)
  productive = kept batches (batch <= last durable checkpoint of an ended attempt; all batches of the completed
               attempt), whole batch durations, except the straggler's extra time
  straggler  = batch time above the baseline inside the slow window (attempt 8)
  checkpoint = durations of the saves that completed (batch end -> "Checkpoint locally saved"; the upload to
               the object store is asynchronous and never stalls training), plus the tail after the final save
  recompute  = end of the last completed save of the attempt (or its first batch start) -> root event
  hang       = root event -> attempt exit (sacct End). Root events: the pull error; the Xid 48; the CUDA error
               at init; the mlx5 link down; the end of the last batch before the Lustre OST went away; the
               checksum error; the scancel.
  restart    = attempt exit -> next attempt start;  slowdown = data_stall = idle = 0

Formats (looked up with the search tools; facts and formats only, text written anew):
  * Composer ConsoleLogger (mosaicml/composer composer/loggers/console_logger.py): an undated block per logged
    batch "[batch=N/M]:" then "\t Train <name>: <value>" lines (time/batch, loss/train/total, throughput/...,
    time/train in hours from SpeedMonitor); first batch after a resume always logged (composer PR #3009);
    metric names from composer PR #1884's sample output.
  * LLM Foundry's logging format (llmfoundry/command_utils/train.py): "%(asctime)s: rank0[%(process)d]
    [%(threadName)s]: %(levelname)s: %(name)s: %(message)s"; "Building tokenizer...", "Building train loader...",
    "Initializing model...", "Building trainer...", "Starting training...", "Done.".
  * Composer trainer/checkpoint (trainer.py, callbacks/checkpoint_saver.py, utils/checkpoint.py, retrying.py):
    "Searching for a previous checkpoint to autoresume", "Autoresuming training from checkpoint", "No previous
    autoresume checkpoint found", "Loading checkpoint from ...", "Trainer checkpoint loaded from ...",
    "Checkpoint locally saved to ...", "Uploading checkpoint to ...", "Attempt 0 failed. Exception type: ...,
    message: ...", "Waiting for checkpoint uploading to finish", "Checkpoint uploading finished!";
    VersionedDeprecationWarning "... It will be removed in version X.".
  * Composer launcher (composer/cli/launcher.py, logging.basicConfig default format): "ERROR:composer.cli.
    launcher:Rank N crashed with exit code C.", "Waiting up to 30 seconds for all training processes to
    terminate. Press Ctrl-C to exit immediately.", "Global rank N (PID P) exited with code C" and the
    "----------Begin global rank N STDERR----------" dump.
  * pyxis (NVIDIA/pyxis README, issues #12, #61, #62, #168): "pyxis: importing docker image: IMG", "pyxis:
    imported docker image: IMG", "slurmstepd: error: pyxis: child P failed with error code: 1", "... failed to
    import docker image", "... printing enroot log file:", enroot's "[INFO]"/"[ERROR] URL ... returned error
    code: 503 Service Unavailable", "... couldn't start container", "spank: required plugin spank_pyxis.so:
    task_init_privileged() failed with rc=-1", "Failed to invoke spank plugin stack".
  * NHC (mej/nhc scripts/lbnl_hw.nhc, lbnl_fs.nhc, nhc, helpers/node-mark-offline): "check_hw_ib:  No IB port
    mlx5_2:1 is ACTIVE (LinkUp 400 Gb/sec).", "check_fs_mount:  /lustre not mounted", the "NHC:" note leader,
    nhc.log "ERROR:  nhc:  Health check failed:  ..."; slurmctld "update_node: node X reason set to: R" / "state
    set to DRAINING|DRAINED" (as in campaign2.py); `sinfo -R` default columns (%50E %9u %19H %N).
  * NVRM Xid 48 / 63 lines (gpu-operator #1146-style, NVIDIA open-gpu-kernel-modules's row remapper message
    "Row Remapper: New row (0x%016llx) marked for remapping, reset gpu to activate."); nvidia-smi -q "Remapped
    Rows" block (public nvidia-smi -q dumps); "CUDA error: uncorrectable ECC error encountered" (campaign1).
  * mlx5 "Link down", NCCL NET/IB completion error status=12, "NCCL error ... remote process exited or there was
    a network error" / ncclRemoteError (as in campaign1.py); ProcessGroupNCCL watchdog lines (campaign1.py).
  * Lustre client: "Lustre: <fs>-OST0007-osc-ffff...: Connection to <fs>-OST0007 (at NID) was lost; in progress
    operations using this service will wait for recovery to complete", "LustreError: 11-0: ...: operation
    ost_read to node NID failed: rc = -107", "... Connection restored to ..."; hung-task report (campaign2.py).
  * mosaicml/streaming stream.py: "ValueError: Checksum failure: <file>".
  * Slurm: "*** JOB N ON H CANCELLED AT T ***", "_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId=N uid U",
    "srun: error: H: task N: Exited with exit code 1", sacct pipe-separated (as in campaign2.py).
"""
from __future__ import annotations

import argparse
import json
import math
import random
from datetime import UTC, datetime
from pathlib import Path

UTC = UTC

RUN = "mpt7b-pyxis"
CLUSTER, PROVIDER = "bm-east", "ridgeline"
GPN, NODES_USED = 8, 12
GPUS = GPN * NODES_USED
GLOBAL_BATCH, SEQ = 2048, 2048
TOKENS_PER_STEP = GLOBAL_BATCH * SEQ
FLOPS_PER_TOKEN = 4.34e10                    # 6 * 6.7e9 + 12 * 32 * 4096 * 2048
PEAK = 989.4e12
BASE_STEP = 4.600
JITTER = 0.004
SAVE_INTERVAL = 500
LOG_INTERVAL = 50
SLOW_FACTOR = 1.07
TIMING_STEPS = 1200
SLOW_STEPS = 900
T0 = datetime(2026, 11, 16, 6, 0, 0, tzinfo=UTC).timestamp()
IMAGE = "registry.ridgeline.example#mlteam/llm-foundry:0.17.0-cu124"
BUCKET = "s3://mlteam-ckpt/mpt7b-pyxis/checkpoints"
USER_UID = 20417
WATCHDOG_MS = 600000
HOSTS = [f"rl{i:03d}" for i in range(1, 17)]
HARDWARE_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                  "network", "host_hw", "filesystem_io", "node_failure", "checkpoint_lost", "preemption"]
BUSIDS = ["19000", "3b000", "4c000", "5d000", "9b000", "bb000", "cb000", "db000"]
NIC_PCI = ["0000:1a:00.0", "0000:3c:00.0", "0000:4d:00.0", "0000:5e:00.0",
           "0000:9c:00.0", "0000:bc:00.0", "0000:cc:00.0", "0000:dc:00.0"]
NIC_IF = ["ibp26s0", "ibp60s0", "ibp77s0", "ibp94s0", "ibp156s0", "ibp188s0", "ibp204s0", "ibp220s0"]
LUSTRE_NID = "10.40.0.17@o2ib"


def pci(b: str) -> str:
    return f"0000:{b[:2]}:00"


def _dt(t: float) -> tuple[datetime, int]:
    us = int(round(t * 1e6))
    s, u = divmod(us, 1_000_000)
    return datetime.fromtimestamp(s, UTC), u


def asctime(t: float) -> str:
    d, u = _dt(t)
    return f"{d:%Y-%m-%d %H:%M:%S},{u // 1000:03d}"


def iso_z(t: float) -> str:
    d, u = _dt(t)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{u // 1000:03d}Z"


def slurm_ts(t: float) -> str:
    return _dt(t)[0].strftime("%Y-%m-%dT%H:%M:%S")


def ctld(t: float) -> str:
    d, u = _dt(t)
    return f"[{d:%Y-%m-%dT%H:%M:%S}.{u // 1000:03d}]"


def short_iso(t: float) -> str:
    return _dt(t)[0].strftime("%Y-%m-%dT%H:%M:%S+0000")


def dmesg_T(t: float) -> str:
    d, _ = _dt(t)
    return f"[{d:%a} {d:%b} {d.day:2d} {d:%H:%M:%S} {d.year}]"


def elapsed(sec: float) -> str:
    sec = int(round(sec))
    d, r = divmod(sec, 86400)
    h, r = divmod(r, 3600)
    m, s = divmod(r, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


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
    return f"rl[{','.join(out)}]"


class Sink:
    def __init__(self) -> None:
        self.items: list[tuple[float, int, str]] = []

    def add(self, t: float, line: str) -> None:
        self.items.append((t, len(self.items), line))

    def extend(self, t: float, lines) -> None:
        for ln in lines:
            self.add(t, ln)

    def text(self) -> str:
        self.items.sort(key=lambda x: (x[0], x[1]))
        return "\n".join(x[2] for x in self.items) + "\n"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# ----------------------------------------------------------------------------- timeline
class Attempt:
    def __init__(self, **kw) -> None:
        self.__dict__.update(kw)
        self.steps: list[tuple[int, float, float]] = []
        self.saves: list[tuple[int, float, float]] = []
        self.R: float | None = None
        self.E = 0.0
        self.F: float | None = None
        self.slow: tuple[int, int] | None = None


def simulate(a: Attempt, rng: random.Random, train_steps: int) -> bool:
    t, n = a.F, a.load
    a.steps, a.saves = [], []
    while True:
        if a.kind == "complete" and n >= train_steps:
            break
        d = BASE_STEP * (1 + rng.uniform(-JITTER, JITTER))
        if a.slow and a.slow[0] <= n + 1 <= a.slow[1]:
            d *= SLOW_FACTOR
        if a.kind != "complete" and t + d > a.F + a.run_for:
            if a.steps and a.steps[-1][0] % SAVE_INTERVAL == 0:
                return False                       # never fail right at a save: the recompute must be visible
            if a.saves and t - (a.saves[-1][1] + a.saves[-1][2]) < 600:
                return False                       # the last save's async upload has finished by then
            if a.kind == "fs":
                a.R = t                            # end of the last completed batch
            else:
                a.R = t + rng.uniform(0.8, 3.6)    # inside the batch in flight
            a.E = float(math.ceil(a.R + a.tail))
            return True
        a.steps.append((n + 1, t, d))
        t += d
        n += 1
        if n % SAVE_INTERVAL == 0:
            c = round(rng.uniform(24.0, 39.0), 2)
            a.saves.append((n, t, c))
            t += c
    a.E = float(math.ceil(t + 6.0))
    return True


def build(seed: int):
    rng = random.Random(f"{seed}-cp-timeline")
    order = HOSTS[:14]
    rng.shuffle(order)
    used = sorted(order[:12])
    spare1, spare2 = sorted(order[12:14])
    ecc_host = rng.choice(used[1:])
    ib_host = rng.choice([h for h in used[1:] if h != ecc_host])
    after3 = sorted([h for h in used if h != ecc_host] + [spare1])
    after4 = sorted([h for h in after3 if h != ib_host] + [spare2])
    shard_host = rng.choice(after4[1:])
    slow_host = rng.choice([h for h in after4[1:] if h != shard_host])
    H = dict(ecc_host=ecc_host, ecc_gpu=rng.randrange(GPN), ib_host=ib_host, ib_port=rng.randrange(GPN),
             shard_host=shard_host, shard_gpu=rng.randrange(GPN), slow_host=slow_host, slow_gpu=rng.randrange(GPN),
             decoy_nhc=HOSTS[14], idle=HOSTS[15], spare1=spare1, spare2=spare2, used=used)
    H["ecc_rank"] = used.index(ecc_host) * GPN + H["ecc_gpu"]
    specs = [
        dict(k=1, job=88101, nodes=used, kind="pull", mode=None, host=None, startup=0, tail=2.0,
             pull_s=rng.uniform(80, 140), gap=rng.randint(1500, 2400)),
        dict(k=2, job=88117, nodes=used, kind="ecc", mode="gpu_memory_ecc", host=ecc_host,
             startup=rng.randint(260, 320), run_for=rng.uniform(26, 34) * 3600, tail=37.0, gap=rng.randint(700, 1100)),
        dict(k=3, job=88124, nodes=used, kind="ecc_init", mode="gpu_memory_ecc", host=ecc_host,
             startup=rng.randint(200, 240), tail=rng.uniform(5, 9), gap=rng.randint(3000, 4200)),
        dict(k=4, job=88139, nodes=after3, kind="ib", mode="network", host=ib_host,
             startup=rng.randint(260, 320), run_for=rng.uniform(36, 44) * 3600, tail=52.0, gap=rng.randint(1800, 2700)),
        dict(k=5, job=88152, nodes=after4, kind="fs", mode="filesystem_io", host=None,
             startup=rng.randint(260, 320), run_for=rng.uniform(18, 24) * 3600, tail=WATCHDOG_MS / 1000 + 47,
             gap=rng.randint(3600, 5400)),
        dict(k=6, job=88166, nodes=after4, kind="shard", mode="user_code_error", host=None,
             startup=rng.randint(260, 320), run_for=rng.uniform(12, 17) * 3600, tail=rng.uniform(5, 9),
             gap=rng.randint(9000, 12000)),
        dict(k=7, job=88180, nodes=after4, kind="cancel", mode="manual_stop", host=None,
             startup=rng.randint(260, 320), run_for=rng.uniform(26, 32) * 3600, tail=4.0, gap=rng.randint(2400, 3600)),
        dict(k=8, job=88193, nodes=after4, kind="complete", mode=None, host=None,
             startup=rng.randint(260, 320), gap=None),
    ]
    atts = [Attempt(**s) for s in specs]
    t, load = T0, 0
    train_steps = 0
    for a in atts:
        a.S, a.load = float(t), load
        if a.kind == "pull":
            a.R = a.S + a.pull_s
            a.E = float(math.ceil(a.R + a.tail))
        elif a.kind == "ecc_init":
            a.R = a.S + a.startup - rng.uniform(40, 70)
            a.E = float(math.ceil(a.R + a.tail))
        else:
            a.F = a.S + a.startup
            if a.kind == "complete":
                train_steps = load + 500 * round(46 * 3600 / BASE_STEP / 500)
                a.slow = (load + 9000 + 300, load + 9000 + 300 + SLOW_STEPS - 1)
            tries = 0
            while not simulate(a, random.Random(f"{seed}-cp-steps-{a.k}-{tries}"), train_steps):
                tries += 1
                a.run_for += 157.0
        a.last_ckpt = a.saves[-1][0] if a.saves else a.load
        load = a.last_ckpt
        if a.gap is not None:
            t = math.ceil(a.E + a.gap)
    return atts, H, train_steps


def ledger(atts: list[Attempt]):
    c = dict.fromkeys(["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute", "hang",
                       "restart", "startup", "idle"], 0.0)
    per = []
    for i, a in enumerate(atts):
        first = a.F if a.F is not None else a.R
        c["startup"] += first - a.S
        kept = a.last_ckpt if a.kind != "complete" else 10 ** 9
        for n, _, d in a.steps:
            if n <= kept:
                extra = 0.0
                if a.slow and a.slow[0] <= n <= a.slow[1]:
                    extra = d - d / SLOW_FACTOR
                c["productive"] += d - extra
                c["straggler"] += extra
        for _, _, cc in a.saves:
            c["checkpoint"] += cc
        if a.kind == "complete":
            c["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        base = (a.saves[-1][1] + a.saves[-1][2]) if a.saves else first
        rec, hang = a.R - base, a.E - a.R
        nxt = atts[i + 1]
        c["recompute"] += rec
        c["hang"] += hang
        c["restart"] += nxt.S - a.E
        per.append(dict(recompute=rec, hang=hang, restart=nxt.S - a.E,
                        startup=(nxt.F if nxt.F is not None else nxt.R) - nxt.S))
    total = atts[-1].E - atts[0].S
    assert abs(sum(c.values()) - total) < 1e-6 * total
    g = GPUS / 3600
    return {k: round(v * g, 4) for k, v in c.items()}, round(total * g, 4), [
        {k: round(v * g, 4) for k, v in d.items()} for d in per]


# ----------------------------------------------------------------------------- the job's output (slurm-J.out)
def loss_at(n: int, rng: random.Random) -> float:
    # falls, then plateaus near 2.31 for the last stretch of attempt 7 (why the user stopped it)
    return 2.30 + 8.9 * math.exp(-n / 900.0) + 0.55 * math.exp(-n / 16000.0) + rng.gauss(0, 0.012)


def foundry(t: float, pid: int, level: str, name: str, msg: str, thread: str = "MainThread") -> str:
    return f"{asctime(t)}: rank0[{pid}][{thread}]: {level}: {name}: {msg}"


def job_out(a: Attempt, H: dict, seed: int, train_steps: int) -> str:
    rng = random.Random(f"{seed}-cp-out-{a.k}")
    L = Sink()
    pid = rng.randint(200_000, 3_900_000)
    upid = pid + rng.randint(300, 900)                  # the remote uploader's own process
    n0 = a.nodes[0]
    L.add(a.S, f"+ srun --container-image={IMAGE} --container-mounts=/lustre:/lustre,/raid:/raid "
               f"--no-container-mount-home --kill-on-bad-exit=1 --ntasks-per-node=1 bash -c 'composer --world_size "
               f"{GPUS} --node_rank $SLURM_NODEID --master_addr {n0} --master_port 7501 scripts/train/train.py "
               f"yamls/pretrain/mpt-7b.yaml run_name={RUN} autoresume=true save_folder={BUCKET} "
               f"save_interval={SAVE_INTERVAL}ba console_log_interval={LOG_INTERVAL}ba max_duration={train_steps}ba "
               f"python_log_level=debug dist_timeout={WATCHDOG_MS // 1000}'")
    for i in range(len(a.nodes)):
        L.add(a.S + 0.8 + 0.03 * i, f"pyxis: importing docker image: {IMAGE}")
    if a.kind == "pull":
        t = a.R
        for i in range(len(a.nodes)):
            tt = t + 0.04 * i
            L.extend(tt, [f"slurmstepd: error: pyxis: child {rng.randint(90_000, 900_000)} failed with error code: 1",
                          "slurmstepd: error: pyxis: failed to import docker image",
                          "slurmstepd: error: pyxis: printing enroot log file:",
                          "slurmstepd: error: pyxis:     [INFO] Querying registry for permission grant",
                          "slurmstepd: error: pyxis:     [INFO] Authenticating with user: mlteam",
                          "slurmstepd: error: pyxis:     [INFO] Authentication succeeded",
                          "slurmstepd: error: pyxis:     [INFO] Fetching image manifest list",
                          "slurmstepd: error: pyxis:     [ERROR] URL https://registry.ridgeline.example/v2/mlteam/"
                          "llm-foundry/manifests/0.17.0-cu124 returned error code: 503 Service Unavailable",
                          "slurmstepd: error: pyxis: couldn't start container",
                          "slurmstepd: error: spank: required plugin spank_pyxis.so: task_init_privileged() failed "
                          "with rc=-1",
                          "slurmstepd: error: Failed to invoke spank plugin stack"])
        for i, h in enumerate(a.nodes):
            L.add(a.E - 0.5 + 0.01 * i, f"srun: error: {h}: task {i}: Exited with exit code 1")
        return L.text()
    imported = a.S + (a.startup - 150 if a.kind != "ecc_init" else a.R - a.S - 70)
    for _ in a.nodes:
        L.add(imported + rng.uniform(-4, 4), f"pyxis: imported docker image: {IMAGE}")
    ti = imported + 12

    def F(t: float, level: str, name: str, msg: str) -> None:
        L.add(t, foundry(t, pid, level, name, msg))

    F(ti, "INFO", "llmfoundry.command_utils.train", "Building tokenizer...")
    F(ti + 2.1, "INFO", "llmfoundry.command_utils.train", "Building train loader...")
    F(ti + 9.6, "INFO", "llmfoundry.command_utils.train", "Initializing model...")
    L.add(ti + 9.7, "/usr/lib/python3/dist-packages/llmfoundry/utils/config_utils.py:539: UserWarning: Setting "
                    "`sync_module_states = True` for FSDP. This is required when using mixed initialization.")
    L.add(ti + 9.71, "  warnings.warn((")
    if a.kind == "ecc_init":
        ecc_init_failure(a, L, H, rng, pid)
        return L.text()
    F(ti + 31.0, "INFO", "llmfoundry.command_utils.train", "Building trainer...")
    L.add(ti + 44.0, "/usr/lib/python3/dist-packages/torch/distributed/fsdp/fully_sharded_data_parallel.py:690: "
                     "FutureWarning: FSDP.state_dict_type() and FSDP.set_state_dict_type() are being deprecated. "
                     "Please use APIs, get_state_dict() and set_state_dict(), which can support different "
                     "parallelisms, FSDP1, FSDP2, DDP. API doc: https://pytorch.org/docs/stable/distributed."
                     "checkpoint.html#torch.distributed.checkpoint.state_dict.get_state_dict .Tutorial: "
                     "https://pytorch.org/tutorials/recipes/distributed_checkpoint_recipe.html .")
    L.add(ti + 44.01, "  warnings.warn(")
    F(ti + 45.0, "INFO", "composer.trainer.trainer", "Searching for a previous checkpoint to autoresume")
    if a.load:
        path = f"{BUCKET}/ep0-ba{a.load}"
        F(ti + 47.5, "INFO", "composer.trainer.trainer", "Autoresuming training from checkpoint")
        F(ti + 47.6, "INFO", "composer.trainer.trainer", f"Loading checkpoint from {path}")
        F(a.F - 6.0, "INFO", "composer.utils.checkpoint", f"Trainer checkpoint loaded from {path}")
    else:
        F(ti + 47.5, "INFO", "composer.trainer.trainer", "No previous autoresume checkpoint found")
    F(a.F - 4.0, "INFO", "llmfoundry.command_utils.train", "Starting training...")
    L.extend(a.F - 3.0, ["*" * 30, "Config:", "enabled_algorithms/GradientClipping: true",
                         f"node_name: {n0}", "num_cpus_per_node: 224", f"num_nodes: {len(a.nodes)}",
                         f"rank_zero_seed: {17 + seed % 5}", "*" * 30])
    lrng = random.Random(f"{seed}-cp-loss-{a.k}")
    ends: list[float] = []
    save_at = {n: (ts, c) for n, ts, c in a.saves}
    first = True
    slowdown_save = {2: 1, 4: 2, 7: 1}.get(a.k)
    for n, ts, d in a.steps:
        end = ts + d
        ends.append(end)
        if first or n % LOG_INTERVAL == 0:
            first = False
            L.add(end, console_block(n, end, ends, a, lrng, train_steps))
        if n in save_at:
            s0, c = save_at[n]
            local = f"/raid/ckpt/{RUN}/ep0-ba{n}/__0_0.distcp"
            F(s0 + c - 0.4, "DEBUG", "composer.callbacks.checkpoint_saver", f"Checkpoint locally saved to {local}")
            F(s0 + c - 0.1, "DEBUG", "composer.callbacks.checkpoint_saver",
              f"Uploading checkpoint to {RUN}/checkpoints/ep0-ba{n}/__0_0.distcp")
            if slowdown_save is not None and len([x for x in a.saves if x[0] <= n]) == slowdown_save:
                # decoy: the object store throttles the uploader; retried, the upload completes
                tu = s0 + c + 41.3
                L.add(tu, foundry(tu, upid, "DEBUG", "composer.utils.retrying",
                                  "Attempt 0 failed. Exception type: <class 'botocore.exceptions.ClientError'>, "
                                  "message: An error occurred (SlowDown) when calling the UploadPart operation "
                                  "(reached max retries: 4): Please reduce your request rate.."))
                tu += 63.0
                L.add(tu, foundry(tu, upid, "DEBUG", "composer.utils.retrying",
                                  "Attempt 1 failed. Exception type: <class 'botocore.exceptions.ReadTimeoutError'>,"
                                  " message: Read timeout on endpoint URL: \"https://s3.ridgeline.example/mlteam-ckpt/"
                                  f"mpt7b-pyxis/checkpoints/ep0-ba{n}/__0_0.distcp?uploadId=2~{rng.getrandbits(64):x}"
                                  f"&partNumber=7\"."))
    {"ecc": ecc_failure, "ib": ib_failure, "fs": fs_failure, "shard": shard_failure,
     "cancel": cancel_end, "complete": complete_end}[a.kind](a, L, H, rng, pid)
    return L.text()


def console_block(n: int, end: float, ends: list[float], a: Attempt, lrng: random.Random, train_steps: int) -> str:
    # SpeedMonitor (window_size=10): throughput over the wall clock of the last 10 batches (a save in the window
    # counts), logged only once its window has filled -- never in a launch's first logged block
    w = ends[-11:]
    full = len(w) == 11
    bps = 10 / (w[-1] - w[0]) if full else 0.0
    loss = loss_at(n, lrng)
    dev_fl = bps * TOKENS_PER_STEP * FLOPS_PER_TOKEN / GPUS
    lr = 3e-4 * min(1.0, n / 2000) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, n / train_steps))))
    train_h = (a.load * BASE_STEP + (end - a.F)) / 3600
    kv = [("time/batch", n), ("time/sample", n * GLOBAL_BATCH), ("time/batch_in_epoch", n),
          ("time/sample_in_epoch", n * GLOBAL_BATCH), ("time/token", n * TOKENS_PER_STEP),
          ("time/token_in_epoch", n * TOKENS_PER_STEP), ("memory/current_allocated_mem", 21.4377),
          ("memory/peak_allocated_mem", 61.8021), ("trainer/device_train_microbatch_size", 4),
          ("loss/train/total", loss), ("metrics/train/LanguageCrossEntropy", loss),
          ("metrics/train/LanguagePerplexity", math.exp(loss)),
          ("throughput/batches_per_sec", bps), ("throughput/samples_per_sec", bps * GLOBAL_BATCH),
          ("throughput/device/batches_per_sec", bps / GPUS),
          ("throughput/device/samples_per_sec", bps * GLOBAL_BATCH / GPUS),
          ("throughput/tokens_per_sec", bps * TOKENS_PER_STEP),
          ("throughput/device/tokens_per_sec", bps * TOKENS_PER_STEP / GPUS),
          ("throughput/flops_per_sec", dev_fl * GPUS), ("throughput/device/flops_per_sec", dev_fl),
          ("throughput/device/mfu", dev_fl / PEAK), ("time/train", train_h), ("time/val", 0.0),
          ("time/total", train_h), ("lr-DecoupledLionW/group0", lr)]
    out = [f"[batch={n}/{train_steps}]:"]
    for k, v in kv:
        if not full and k.startswith("throughput/"):
            continue
        out.append(f"\t Train {k}: {v}" if isinstance(v, int) else f"\t Train {k}: {v:.4f}")
    return "\n".join(out)


def crash_dump(L: Sink, t: float, rank: int, wpid: int, body: list[str], code: int) -> None:
    L.extend(t, [f"ERROR:composer.cli.launcher:Rank {rank} crashed with exit code {code}.",
                 "Waiting up to 30 seconds for all training processes to terminate. Press Ctrl-C to exit immediately.",
                 f"Global rank {rank} (PID {wpid}) exited with code {code}",
                 f"----------Begin global rank {rank} STDOUT----------",
                 "", f"----------End global rank {rank} STDOUT----------",
                 f"----------Begin global rank {rank} STDERR----------"] + body +
             [f"----------End global rank {rank} STDERR----------",
              f"ERROR:composer.cli.launcher:Global rank {rank} (PID {wpid}) exited with code {code}"])


def srun_fail(a: Attempt, L: Sink, bad: list[str], code: int = 1) -> None:
    L.add(a.E - 3.0, f"srun: error: {bad[0]}: task {a.nodes.index(bad[0])}: Exited with exit code {code}")
    L.add(a.E - 2.9, f"srun: Terminating StepId={a.job}.0")
    L.add(a.E - 2.8, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(a.E - 2.8)} ***")
    for i, h in enumerate(a.nodes):
        if h not in bad:
            L.add(a.E - 1.0 + 0.01 * i, f"srun: error: {h}: task {i}: Terminated")
    L.add(a.E - 0.4, f"srun: Force Terminated StepId={a.job}.0")


CUDA_ECC_TAIL = [
    "RuntimeError: CUDA error: uncorrectable ECC error encountered",
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
]


def ecc_failure(a, L, H, rng, pid) -> None:
    r = a.nodes.index(H["ecc_host"]) * GPN + H["ecc_gpu"]
    body = ["Traceback (most recent call last):",
            '  File "/workspace/llm-foundry/scripts/train/train.py", line 9, in <module>',
            "    train_from_yaml(yaml_path, args_list)",
            '  File "/usr/lib/python3/dist-packages/composer/trainer/trainer.py", line 2916, in _train_microbatch',
            "    microbatch_loss.mul_(microbatch_num_samples / current_batch_size)"] + CUDA_ECC_TAIL
    crash_dump(L, a.R + 1.9, r, pid + 40 + r, body, 1)
    srun_fail(a, L, [H["ecc_host"]])


def ecc_init_failure(a, L, H, rng, pid) -> None:
    r = a.nodes.index(H["ecc_host"]) * GPN + H["ecc_gpu"]
    body = ["Traceback (most recent call last):",
            '  File "/workspace/llm-foundry/scripts/train/train.py", line 9, in <module>',
            "    train_from_yaml(yaml_path, args_list)",
            '  File "/usr/lib/python3/dist-packages/llmfoundry/models/mpt/modeling_mpt.py", line 1093, in '
            'param_init_fn',
            "    self.param_init_fn(module)",
            '  File "/usr/lib/python3/dist-packages/torch/nn/init.py", line 61, in _no_grad_normal_',
            "    return tensor.normal_(mean, std, generator=generator)"] + CUDA_ECC_TAIL
    crash_dump(L, a.E - 3.5, r, pid + 40 + r, body, 1)  # after the launcher's cleanup
    srun_fail(a, L, [H["ecc_host"]])


def ib_failure(a, L, H, rng, pid) -> None:
    h = H["ib_host"]
    i = a.nodes.index(h)
    port = H["ib_port"]
    r = i * GPN + port
    peer = a.nodes[(i + 1) % len(a.nodes)]
    w = pid + 40 + r
    gid = f"fe80::a088:c203:{rng.randrange(0xffff):x}:{rng.randrange(0xffff):x}"
    rgid = f"fe80::a088:c203:{rng.randrange(0xffff):x}:{rng.randrange(0xffff):x}"
    body = [f"{h}:{w}:{w + 1711} [{port}] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
            f"10.64.2.{20 + int(peer[2:])}<{rng.randint(40000, 60000)}> with status=12 opcode=0 len=0 vendor err 129 "
            f"(Recv) localGid ::ffff:{gid} remoteGids::ffff:{rgid}",
            f"{h}:{w}:{w + 1711} [{port}] NCCL INFO transport/net.cc:1302 -> 6",
            f"{h}:{w}:{w + 1711} [{port}] NCCL INFO proxy.cc:698 -> 6",
            f"{h}:{w}:{w + 1711} [{port}] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]",
            "Traceback (most recent call last):",
            '  File "/workspace/llm-foundry/scripts/train/train.py", line 9, in <module>',
            "    train_from_yaml(yaml_path, args_list)",
            '  File "/usr/lib/python3/dist-packages/composer/utils/dist.py", line 260, in all_reduce',
            "    dist.all_reduce(tensor, op=reduce_op, group=group)",
            "torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/pytorch/torch/csrc/distributed/c10d/"
            "NCCLUtils.hpp:317, remote process exited or there was a network error, NCCL version 2.21.5",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
            "Last error:",
            f"NET/IB : Got completion from peer 10.64.2.{20 + int(peer[2:])}<{rng.randint(40000, 60000)}> with "
            f"status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:{gid} remoteGids::ffff:{rgid}"]
    crash_dump(L, a.R + 21.0, r, w, body, 1)
    srun_fail(a, L, [h])


def fs_failure(a, L, H, rng, pid) -> None:
    # the ranks whose next batch was already loaded enter the all-reduce; the rest are stuck in read(2)
    r = rng.randrange(8, GPUS)
    seq = a.steps[-1][0] * 6 + 3
    w = pid + 40 + r
    t = a.R + WATCHDOG_MS / 1000 + rng.uniform(5, 9)
    stamp = _dt(t)[0]
    body = [f"[rank{r}]:[E{stamp:%m%d %H:%M:%S}.{rng.randint(0, 999999):06d}000 ProcessGroupNCCL.cpp:607] [Rank {r}] "
            f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, "
            f"NumelOut=1, Timeout(ms)={WATCHDOG_MS}) ran for {WATCHDOG_MS + rng.randint(20, 90)} milliseconds before "
            f"timing out.",
            f"[rank{r}]:[E{stamp:%m%d %H:%M:%S}.{rng.randint(0, 999999):06d}000 ProcessGroupNCCL.cpp:1664] [PG ID 0 "
            f"PG GUID 0(default_pg) Rank {r}] Exception (either an error or timeout) detected by watchdog at work: "
            f"{seq}, last enqueued NCCL work: {seq}, last completed NCCL work: {seq - 1}.",
            "terminate called after throwing an instance of 'c10::DistBackendError'"]
    crash_dump(L, t + 1.5, r, w, body, -6)
    srun_fail(a, L, [a.nodes[r // GPN]], 134)


def shard_failure(a, L, H, rng, pid) -> None:
    r = a.nodes.index(H["shard_host"]) * GPN + H["shard_gpu"]
    shard = f"/raid/mds-cache/{rng.getrandbits(128):032x}/train/shard.{rng.randint(1000, 29999):05d}.mds.zstd"
    body = ["Exception in thread Thread-3 (_prepare_thread):",
            "Traceback (most recent call last):",
            '  File "/usr/lib/python3/dist-packages/streaming/base/dataset.py", line 1300, in _prepare_thread',
            "    self.prepare_shard(shard_id, False)",
            '  File "/usr/lib/python3/dist-packages/streaming/base/stream.py", line 340, in _decompress_shard_part',
            "    raise ValueError(f'Checksum failure: {zip_filename}')",
            f"ValueError: Checksum failure: {shard}",
            "Traceback (most recent call last):",
            '  File "/workspace/llm-foundry/scripts/train/train.py", line 9, in <module>',
            "    train_from_yaml(yaml_path, args_list)",
            '  File "/usr/lib/python3/dist-packages/streaming/base/dataset.py", line 1439, in __iter__',
            "    raise RuntimeError('Background thread failed. Check other traceback.')",
            "RuntimeError: Background thread failed. Check other traceback."]
    crash_dump(L, a.E - 3.5, r, pid + 40 + r, body, 1)  # after the launcher's cleanup
    srun_fail(a, L, [H["shard_host"]])


def cancel_end(a, L, H, rng, pid) -> None:
    L.add(a.R + 0.05, f"slurmstepd: error: *** JOB {a.job} ON {a.nodes[0]} CANCELLED AT {slurm_ts(a.R)} ***")
    L.add(a.R + 0.06, f"slurmstepd: error: *** STEP {a.job}.0 ON {a.nodes[0]} CANCELLED AT {slurm_ts(a.R)} ***")
    L.add(a.R + 0.1, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    for i, h in enumerate(a.nodes):
        L.add(a.E - 0.8 + 0.01 * i, f"srun: error: {h}: task {i}: Terminated")
    L.add(a.E - 0.3, f"srun: Force Terminated StepId={a.job}.0")


def complete_end(a, L, H, rng, pid) -> None:
    F = lambda t, lvl, name, msg: L.add(t, foundry(t, pid, lvl, name, msg))  # noqa: E731
    fs, fc = a.saves[-1][1], a.saves[-1][2]
    F(fs + fc + 0.5, "INFO", "composer.callbacks.checkpoint_saver", "Waiting for checkpoint uploading to finish")
    F(a.E - 2.5, "INFO", "composer.callbacks.checkpoint_saver", "Checkpoint uploading finished!")
    F(a.E - 1.5, "INFO", "llmfoundry.command_utils.train", "Done.")


# ----------------------------------------------------------------------------- per-rank timings (attempt 8)
def timings(a: Attempt, H: dict, seed: int) -> dict[int, str]:
    lo = a.slow[0] - 150
    sel = [s for s in a.steps if lo <= s[0] < lo + TIMING_STEPS]
    lrng = random.Random(f"{seed}-cp-tl")
    losses = {n: round(loss_at(n, lrng), 4) for n, _, _ in sel}
    out = {}
    for i, h in enumerate(a.nodes):
        for g in range(GPN):
            r = i * GPN + g
            rng = random.Random(f"{seed}-cp-rank-{r}")
            recs = []
            for n, ts, d in sel:
                slow = a.slow[0] <= n <= a.slow[1]
                comp = 3.900 * (1 + rng.uniform(-0.003, 0.003))
                if slow and h == H["slow_host"] and g == H["slow_gpu"]:
                    comp *= SLOW_FACTOR
                data = 0.030 * (1 + rng.uniform(-0.2, 0.2))
                comm = d - comp - data
                recs.append(f'{{"ts": {ts + d:.3f}, "rank": {r}, "host": "{h}", "step": {n}, "step_s": {d:.4f}, '
                            f'"compute_s": {comp:.4f}, "comm_s": {comm:.4f}, "data_s": {data:.4f}, '
                            f'"tokens": {TOKENS_PER_STEP // GPUS}, "loss": {losses[n]:.4f}}}')
            out[r] = "\n".join(recs) + "\n"
    return out


# ----------------------------------------------------------------------------- node logs
NOISE = ["perf: interrupt took too long ({a} > {b}), lowering kernel.perf_event_max_sample_rate to {c}",
         "kauditd_printk_skb: {k} callbacks suppressed",
         "IPv6: ADDRCONF(NETDEV_CHANGE): veth{v}: link becomes ready",
         "docker0: port 1(veth{v}) entered forwarding state"]


def hung_task(t: float, pid: int) -> list[tuple[float, str]]:
    lines = [f"INFO: task pt_data_worker:{pid} blocked for more than 122 seconds.",
             "      Tainted: P           OE     5.15.0-126-generic #136-Ubuntu",
             '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
             f"task:pt_data_worker    state:D stack:    0 pid:{pid} ppid:{pid - 9} flags:0x00004002",
             "Call Trace:", " <TASK>", " __schedule+0x2cd/0x890", " schedule+0x69/0x110",
             " cl_sync_io_wait+0x1f5/0x3e0 [obdclass]", " cl_io_loop+0xb8/0x200 [obdclass]",
             " ll_file_io_generic+0x41c/0xcb0 [lustre]", " ll_file_read_iter+0x1c7/0x2a0 [lustre]",
             " vfs_read+0x1a4/0x1c0", " ksys_read+0x67/0xf0", " do_syscall_64+0x59/0xc0", " </TASK>"]
    return [(t, ln) for ln in lines]


def node_logs(atts: list[Attempt], H: dict, seed: int, bundle: Path) -> None:
    a2, a4, a5 = atts[1], atts[3], atts[4]
    t_end = atts[-1].E + 1800
    for idx, h in enumerate(HOSTS):
        hr = random.Random(f"{seed}-cp-kern-{h}")
        boot = T0 - hr.randint(2 * 86400, 12 * 86400)
        ev: list[tuple[float, str]] = [
            (boot, "Linux version 5.15.0-126-generic (buildd@lcy02-amd64-026) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) "
                   "11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #136-Ubuntu SMP Wed Nov 6 10:38:22 UTC 2024"),
            (boot + 22.8, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Nov  5 00:32:35 UTC 2024"),
            (boot + 40.2, "Lustre: Lustre: Build Version: 2.15.5")]
        t = boot + hr.uniform(600, 9000)
        while t < t_end:
            aa = hr.randint(2501, 6000)
            ev.append((t, hr.choice(NOISE).format(a=aa, b=aa - 8, c=hr.choice([79500, 63750]), k=hr.randint(3, 40),
                                                  v=f"{hr.getrandbits(28):07x}")))
            t += hr.uniform(2000, 14000)
        nhc: list[tuple[float, str]] = []
        if h == H["ecc_host"]:
            b = BUSIDS[H["ecc_gpu"]]
            wpid = hr.randint(100_000, 900_000)
            pa = hr.randrange(0x1000000, 0xfffffff) << 4
            ev += [(a2.R, f"NVRM: Xid (PCI:{pci(b)}): 48, pid={wpid}, name=python, An uncorrectable double bit error "
                          f"(DBE) has been detected on GPU in the framebuffer at physAddr 0x{pa:x} partition "
                          f"{hr.randrange(16)}, subpartition {hr.randrange(4)}."),
                   (a2.R + 0.002, f"NVRM: Xid (PCI:{pci(b)}): 63, pid={wpid}, name=python, Row Remapper: New row "
                                  f"(0x{pa:016x}) marked for remapping, reset gpu to activate.")]
            write(bundle / "nodes" / h / "nvidia-smi-q.txt", nvsmi_q(a2.E + 14.0, H["ecc_gpu"]))
        if h == H["ib_host"]:
            p = H["ib_port"]
            ev += [(a4.R, f"mlx5_core {NIC_PCI[p]} {NIC_IF[p]}: Link down")]
            nhc.append((a4.R + 33.0, f"{h} nhc[{hr.randint(10_000, 99_999)}]: Health check failed:  check_hw_ib:  "
                                     f"No IB port mlx5_{p}:1 is ACTIVE (LinkUp 400 Gb/sec)."))
        if h == H["decoy_nhc"]:
            nhc.append((H["decoy_nhc_ts"], f"{h} nhc[{hr.randint(10_000, 99_999)}]: Health check failed:  "
                                           f"check_fs_mount:  /lustre not mounted"))
        if h in a5.nodes:
            first = a5.R + (1.6 if h == H["lustre_first"] else hr.uniform(2.5, 8.0))
            osc = f"scratch-OST0007-osc-ffff{hr.getrandbits(32):08x}{hr.getrandbits(16):04x}"
            ev += [(first, f"LustreError: 11-0: {osc}: operation ost_read to node {LUSTRE_NID} failed: rc = -107"),
                   (first + 0.001, f"Lustre: {osc}: Connection to scratch-OST0007 (at {LUSTRE_NID}) was lost; in "
                                   f"progress operations using this service will wait for recovery to complete"),
                   (a5.E + 1400 + hr.uniform(0, 20), f"Lustre: {osc}: Connection restored to {LUSTRE_NID} "
                                                     f"(at {LUSTRE_NID})")]
            ev += hung_task(first + 121.0 + (0 if h == H["lustre_first"] else 0.5), hr.randint(100_000, 900_000))
        ev.sort(key=lambda x: x[0])
        if idx % 2 == 0:
            body = "".join(f"{short_iso(t)} {h} kernel: {m}\n" for t, m in ev)
            write(bundle / "nodes" / h / "journal-k.log", body)
        else:
            body = "".join(f"{dmesg_T(t)} {m}\n" for t, m in ev)
            write(bundle / "nodes" / h / "dmesg-T.log", body)
        if nhc:
            write(bundle / "nodes" / h / "nhc-journal.log", "".join(f"{short_iso(t)} {m}\n" for t, m in nhc))


def nvsmi_q(t: float, bad: int) -> str:
    d = _dt(t)[0]
    out = ["", "==============NVSMI LOG==============", "",
           f"Timestamp                                 : {d:%a %b %d %H:%M:%S %Y}",
           "Driver Version                            : 550.127.05", "CUDA Version                              : 12.4",
           "", "Attached GPUs                             : 8"]
    for g, b in enumerate(BUSIDS):
        bad_g = g == bad
        out += [f"GPU 00000000:{b[:2].upper()}:00.0", "    ECC Mode",
                "        Current                           : Enabled",
                "        Pending                           : Enabled", "    ECC Errors", "        Volatile",
                "            SRAM Correctable              : 0", "            SRAM Uncorrectable            : 0",
                "            DRAM Correctable              : 0",
                f"            DRAM Uncorrectable            : {2 if bad_g else 0}", "        Aggregate",
                "            SRAM Correctable              : 0", "            SRAM Uncorrectable            : 0",
                f"            DRAM Correctable              : {3 if bad_g else 0}",
                f"            DRAM Uncorrectable            : {2 if bad_g else 0}", "    Retired Pages",
                "        Single Bit ECC                    : N/A", "        Double Bit ECC                    : N/A",
                "        Pending Page Blacklist            : N/A", "    Remapped Rows",
                "        Correctable Error                 : 0",
                f"        Uncorrectable Error               : {1 if bad_g else 0}",
                f"        Pending                           : {'Yes' if bad_g else 'No'}",
                "        Remapping Failure Occurred        : No", ""]
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- scheduler
def scheduler(atts: list[Attempt], H: dict, seed: int, bundle: Path) -> None:
    rng = random.Random(f"{seed}-cp-sched")
    L = Sink()

    def add(t: float, msg: str) -> None:
        L.add(t, f"{ctld(t)} {msg}")

    rows = []
    for a in atts:
        sub = a.S - rng.randint(4, 60)
        hl, cpus = hostlist(a.nodes), 224 * len(a.nodes)
        add(sub, f"_slurm_rpc_submit_batch_job: JobId={a.job} InitPrio=10{rng.randint(1000, 9999)} "
                 f"usec={rng.randint(300, 900)}")
        add(a.S + 0.01, f"sched: Allocate JobId={a.job} NodeList={hl} #CPUs={cpus} Partition=h100")
        end = a.E + rng.uniform(0.01, 0.3)
        if a.kind == "cancel":
            add(a.R + 0.002, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={a.job} uid {USER_UID}")
            add(end, f"_job_complete: JobId={a.job} WTERMSIG 15")
            state, ec = f"CANCELLED by {USER_UID}", "0:15"
        elif a.kind == "complete":
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 0")
            state, ec = "COMPLETED", "0:0"
        else:
            add(end, f"_job_complete: JobId={a.job} WEXITSTATUS 1")
            state, ec = "FAILED", "1:0"
        add(end + 0.01, f"_job_complete: JobId={a.job} done")
        if a.kind == "ib":
            reason = f"NHC: check_hw_ib:  No IB port mlx5_{H['ib_port']}:1 is ACTIVE (LinkUp 400 Gb/sec)."
            add(a.R + 34.1, f"update_node: node {H['ib_host']} reason set to: {reason}")
            add(a.R + 34.2, f"update_node: node {H['ib_host']} state set to DRAINING")
            add(end + 0.3, f"update_node: node {H['ib_host']} state set to DRAINED")
        if a.kind == "ecc_init":
            add(a.E + 1260.4, f"update_node: node {H['ecc_host']} reason set to: gpu{H['ecc_gpu']} DBE + row remap "
                              f"pending, needs reset / RMA")
            add(a.E + 1260.5, f"update_node: node {H['ecc_host']} state set to DRAINED")
        rows.append((a.S, f"{a.job}|{RUN}|mlteam|h100|{cpus}|{state}|{ec}|{slurm_ts(sub)}|{slurm_ts(a.S)}|"
                          f"{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|{len(a.nodes)}|{hl}"))
        rows.append((a.S + 0.1, f"{a.job}.batch|batch||h100|224|{'CANCELLED' if a.kind == 'cancel' else state}|"
                                f"{ec}|{slurm_ts(a.S)}|{slurm_ts(a.S)}|{slurm_ts(a.E)}|{elapsed(a.E - a.S)}|1|"
                                f"{a.nodes[0]}"))
    t = H["decoy_nhc_ts"]
    add(t + 1.2, f"update_node: node {H['decoy_nhc']} reason set to: NHC: check_fs_mount:  /lustre not mounted")
    add(t + 1.3, f"update_node: node {H['decoy_nhc']} state set to DRAINED")
    rows.sort(key=lambda x: x[0])
    hdr = "JobID|JobName|User|Partition|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"
    write(bundle / "scheduler" / "slurmctld.log", L.text())
    write(bundle / "scheduler" / "sacct.psv", "\n".join([hdr] + [r for _, r in rows]) + "\n")
    # `sinfo -R` at the end of the campaign (default format "%50E %9u %19H %N": the reason is cut at 50 chars)
    a3, a4 = atts[2], atts[3]
    drained = sorted([("NHC: check_fs_mount:  /lustre not mounted", "root", t + 1.2, H["decoy_nhc"]),
                      (f"NHC: check_hw_ib:  No IB port mlx5_{H['ib_port']}:1 is ACTIVE (LinkUp 400 Gb/sec).",
                       "root", a4.R + 34.1, H["ib_host"]),
                      (f"gpu{H['ecc_gpu']} DBE + row remap pending, needs reset / RMA", "slurmadm", a3.E + 1260.4,
                       H["ecc_host"])], key=lambda x: x[3])
    lines = [f"{'REASON':50s} {'USER':9s} {'TIMESTAMP':19s} NODELIST"]
    for reason, user, ts, node in drained:
        lines.append(f"{reason[:50]:50s} {user:9s} {slurm_ts(ts):19s} {node}")
    write(bundle / "scheduler" / "sinfo-R.txt", "\n".join(lines) + "\n")


def inventory() -> str:
    return f"""# bare-metal H100 reservation, 16 nodes
[providers.{PROVIDER}]
usd_per_gpu_hour = 2.19

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = {GPN}
interconnect = "InfiniBand NDR 8x400G"
nodes = "rl[001-016]"
"""


def run_toml(train_steps: int) -> str:
    return f"""# MPT-7B pretraining with LLM Foundry / Composer (FSDP full shard), pyxis containers
cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}   # global batch {GLOBAL_BATCH} x seq {SEQ}
flops_per_token = {FLOPS_PER_TOKEN:.3e}
checkpoint_dir = "{BUCKET}"
launcher = "slurm"
launch_command = "sbatch --nodes={NODES_USED} --gpus-per-node={GPN} --exclusive mpt7b.sbatch"
"""


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    if bundle.exists():
        raise SystemExit(f"{bundle} exists; pass an empty --out")
    atts, H, train_steps = build(seed)
    rng = random.Random(f"{seed}-cp-h")
    a5, a6 = atts[4], atts[5]
    H["lustre_first"] = rng.choice([h for h in a5.nodes if h not in (H["shard_host"], H["slow_host"])])
    H["decoy_nhc_ts"] = a6.F + rng.uniform(0.2, 0.6) * (a6.R - a6.F)
    write(bundle / "inventory.toml", inventory())
    rdir = bundle / "runs" / RUN
    write(rdir / "run.toml", run_toml(train_steps))
    for a in atts:
        write(rdir / f"attempt-{a.k}" / f"slurm-{a.job}.out", job_out(a, H, seed, train_steps))
        if a.kind == "complete":
            for r, body in timings(a, H, seed).items():
                write(rdir / f"attempt-{a.k}" / "timings" / f"rank{r}.jsonl", body)
    node_logs(atts, H, seed, bundle)
    scheduler(atts, H, seed, bundle)
    cats, total, per = ledger(atts)
    incidents = []
    for j, a in enumerate(atts[:-1]):
        incidents.append({"id": j + 1, "attempt": a.k, "attempts": [a.k], "slurm_job": a.job,
                          "failure_mode": a.mode, "host": a.host, "root_ts": iso_z(a.R), "exit_ts": iso_z(a.E),
                          "last_ckpt_step": a.last_ckpt, "gpu_hours": per[j],
                          "gpu_hours_lost": round(sum(per[j].values()), 4)})
    a8 = atts[-1]
    incidents.append({"id": 8, "attempt": 8, "attempts": [8], "kind": "straggler", "failure_mode": None,
                      "host": H["slow_host"], "gpu_index": H["slow_gpu"], "steps": list(a8.slow),
                      "gpu_hours_lost": cats["straggler"]})
    forbidden = []
    for k, why in ((1, "the registry refused the image pull: not the provider's hardware"),
                   (6, "a corrupt dataset shard failed its hash check: the user's data"),
                   (7, "the user cancelled the job after the loss plateaued")):
        forbidden += [{"failure_mode": m, "attempts": [k], "reason": why} for m in HARDWARE_MODES]
    forbidden.append({"failure_mode": "loss_divergence", "reason": "the loss plateaued, it never diverged"})
    decoys = {H["decoy_nhc"]: "NHC drained it for a missing /lustre mount; it never ran a job of this campaign",
              H["lustre_first"]: "first host to report the Lustre OST loss: a symptom of the shared OST"}
    truth = {
        "run": RUN, "gpus": GPUS, "seed": seed, "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN, "baseline_step_s": BASE_STEP, "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "first_start_ts": iso_z(atts[0].S), "last_end_ts": iso_z(a8.E), "train_steps": train_steps,
        "attempts": [{"attempt": a.k, "slurm_job": a.job, "nodes": hostlist(a.nodes), "start_ts": iso_z(a.S),
                      "first_step_ts": iso_z(a.F) if a.F else None, "exit_ts": iso_z(a.E), "loaded_step": a.load,
                      "last_step": a.steps[-1][0] if a.steps else None, "saves": [n for n, _, _ in a.saves],
                      "end": a.kind} for a in atts],
        "match_on_attempt": True,
        "incidents": incidents, "forbidden_incidents": forbidden,
        "decoy_hosts": sorted(decoys), "decoy_reasons": decoys, "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats, "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {PROVIDER: round(sum(i["gpu_hours_lost"] for i in incidents), 4)},
        "notes": "host null matches any host; attempt 1's mode is open but must not be a hardware mode.",
    }
    write(out / "truth.json", json.dumps(truth, indent=2) + "\n")
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
