#!/usr/bin/env python3
"""Campaign ray_eks_fsx: Llama-3-8B continued pretraining with Ray Train (TorchTrainer, FSDP) on a KubeRay
RayCluster driven by two RayJobs on Amazon EKS, p5.48xlarge GPU nodes provisioned by Karpenter, EFA through the
aws-ofi-nccl plugin, checkpoints on FSx for Lustre. Written before reading clusterlab's analysis code.

Writes, under --out DIR:
  DIR/bundle/inventory.toml, runs/ray-llama-ft/run.toml
  DIR/bundle/runs/ray-llama-ft/rayjob-<n>/submitter.log     `kubectl logs` of the RayJob's submitter pod: the
                                                            `ray job submit` output (driver, Tune/Train output and
                                                            the (RayTrainWorker pid=.., ip=..) lines Ray forwards)
  DIR/bundle/nodes/<node>/journal-k.log                     journalctl -k -o short-iso of each EKS node
  DIR/bundle/nodes/<node>/ray-logs/raylet.out               /tmp/ray/session_latest/logs of the Ray pod on it
  DIR/bundle/nodes/<node>/ray-logs/worker-<id>-<job>-<pid>.out|.err   (NCCL_DEBUG=INFO goes to .err)
  DIR/bundle/nodes/<head-node>/ray-logs/{gcs_server.out, monitor.log}
  DIR/bundle/k8s/events.json                                `kubectl get events -A -o json` (the team's hourly dump,
                                                            merged into one List)
  DIR/truth.json
Usage: ray_eks_fsx.py --out DIR [--seed N]        (Python 3.11, standard library only, deterministic per seed)

Scenario (run "ray-llama-ft", 64 GPUs = 8 Ray worker pods x 8 H100 on 8 p5.48xlarge nodes; the Ray head pod runs on
an m7i CPU node that holds no GPU; node names are EKS's ip-10-1-X-Y.us-west-2.compute.internal, Ray names a node by
its IP only, NCCL by the pod's hostname; all clocks UTC). Attempts are Ray Train worker-group runs: Ray Train
(FailureConfig(max_failures=3)) restarts the worker group from the latest reported checkpoint after a failure, inside
the same RayJob; Tune's "Trial task failed for trial TorchTrainer_..." ends an attempt, "Training started with
configuration" / "Restored on ... from checkpoint" begins the next.
  RayJob 1 (submission raysubmit_...; one driver log for attempts 1-4)
  attempt 1 fresh start; Xid 79 on W3 GPU5 ("GPU has fallen off the bus"); the worker on it raises "CUDA error:
            unspecified launch failure", Ray Train tears down the group. The team cordons W3 and deletes its Ray pod;
            Karpenter brings up a new p5 node (W9) and the group restarts there ~9 min later.
                                                                    [gpu_fell_off_bus, W3]
  attempt 2 W6's EFA stops completing requests: aws-ofi-nccl "NET/OFI Request completed with error" on W6 first, then
            on its ring peers W5 and W7; the ranks raise DistBackendError (ncclRemoteError), Ray Train restarts the
            group on the same nodes within a minute (the link came back).      [network, W6]
  attempt 3 W2's instance stops answering (EC2 hardware); its kernel log just ends; the GCS marks the node dead
            ("missed too many heartbeats"), the actors on it die (ActorDiedError ... its node has died), the node goes
            NotReady; Karpenter replaces it (W10), the group restarts ~10 min later.  [node_failure, W2]
  attempt 4 at a checkpoint save the FSx for Lustre OSTs evict every client ("This client was evicted by ..." on ALL
            8 nodes); the ranks' torch.distributed.checkpoint writes fail with OSError [Errno 108]; the failure count
            reaches max_failures=3: TrainingFailedError, the RayJob FAILED.      [filesystem_io, host null]
  RayJob 2 (resubmitted ~40 min later with resume_from_checkpoint; FailureConfig(max_failures=2))
  attempt 5 Karpenter gets a Spot interruption warning for W9 (a spot p5), taints and drains it; the Ray pod on it is
            evicted, its actors die; a replacement (W11) comes up and the group restarts.  [preemption, W9]
  attempt 6 rank 5 on W1 raises torch.OutOfMemoryError (CUDA out of memory) on a long-sequence batch; Ray Train
            restarts the group on the same nodes.                            [cuda_oom, W1]
  attempt 7 completes (final checkpoint, "Training completed after ... iterations", RayJob SUCCEEDED).
  Decoys: raylet "Last heartbeat was sent N ms ago" lag warnings on W8 in attempt 6 (training goes on); a harmless
  DataLoader-teardown traceback ("Exception ignored in: ... AssertionError: can only test a child process") in a
  worker-*.err on W4; Ray's own noise (RAY_BACKEND_LOG_LEVEL, "process_trial_save operation took", autoscaler
  "resource request cannot be scheduled right now" while the group waits for a node, "Resized to"); Karpenter
  "Unconsolidatable" chatter on the GPU nodes and consolidation of an underused CPU node C1 (never in the job);
  W5/W7 only show symptoms of W6's EFA fault; W3 cordoned (NodeNotSchedulable) is the Xid's consequence.

Ledger (conventions of shared campaign1.py/campaign2.py; GPU-hours = 64 x seconds / 3600):
  startup    = attempt start ("Training started with configuration" of that attempt) -> first training step start
  productive = kept steps (step <= the checkpoint the NEXT attempt loads; all steps of the completed attempt)
  checkpoint = durations of the saves at or before the kept point, plus the tail after the final save
  recompute  = end of the save the next attempt loads (or the first step start) -> root event
  hang       = root event -> attempt exit (Tune's "Trial task failed for trial" line). Root events: the Xid 79, the
               first OFI completion error (W6), the last moment W2 answered (its last step line's step in flight), the
               start of the save that the eviction broke, the eviction of the Ray pod on W9, the OOM.
  restart    = exit -> next attempt start (waiting for a replacement node, or the RayJob resubmission)
  straggler = slowdown = data_stall = idle = 0.

Formats, as found with the search tools (facts; the text here is written anew):
  * Ray driver / Tune output: "%(asctime)s\\t%(levelname)s %(filename)s:%(lineno)s -- %(message)s"; "ERROR
    tune_controller.py:1331 -- Trial task failed for trial TorchTrainer_1fa3e_00000" + the ray.get traceback
    (ray-project/ray #45825, #53123); "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing
    this task." with class_name/actor_id/pid/namespace/ip lines (#53123); "Training finished iteration 2 at
    2023-06-27 09:28:54. Total running time: 2min 4s", "Training saved a checkpoint for iteration 1 at: (local)/..."
    (#36866, #43091); "(RayTrainWorker pid=3139801) Checkpoint successfully created at: Checkpoint(filesystem=local,
    path=...)" (#43091); "(TorchTrainer pid=131, ip=95.217.176.214) Restored on 95.217.176.214 from checkpoint:
    Checkpoint(filesystem=s3, path=...)" (#46814); "Started distributed worker processes:" + "- (node_id=..,
    ip=.., pid=..) world_rank=0, local_rank=0, node_rank=0" (#45799, PR #52120); "Setting up process group for:
    env:// [rank=0, world_size=5]" (#23060); TrainingFailedError "The Ray Train run failed. Please inspect the
    previous error messages for a cause. ..." (#47974); "(raylet) [..] logging.cc:228: Unrecognized setting of
    RAY_BACKEND_LOG_LEVEL=0 [repeated 71x across cluster]" (#43091); "WARNING util.py:315 -- The
    `process_trial_save` operation took 3.188 s, which may be a performance bottleneck." (#36866); ray job CLI
    "ERR cli.py:71 -- ----", "Job 'raysubmit_RF3urdC57vQsxxJg' failed", "Status message: Job entrypoint command failed
    with exit code 1, ..." (TideDra/lmm-r1 #51).
  * raylet.out / gcs_server.out: "[2022-02-16 12:45:07,907 W 149 199] node_manager.cc:157: Last heartbeat was sent
    6901 ms ago. There might be resource pressure on this node. ..." (#22425); "[2024-07-10 19:44:49,290 I 173 173]
    (raylet) node_manager.cc:610: ..." (#46548); the GCS's "The node with node id: X and address: IP and node name:
    IP has been marked dead because the detector has missed too many heartbeats from it. This can happen when a
    \\t(1) raylet crashes unexpectedly (OOM, etc.) \\n\\t(2) raylet has lagging heartbeats due to slow network or
    busy workload." (kuberay #3827).
  * Karpenter / Kubernetes events: Node/NodeClaim "SpotInterrupted" "Spot interruption warning was triggered"
    (karpenter-provider-aws PR #8289), "DisruptionTerminating" "Disrupting Node: Empty" and "Nominated"
    (kubernetes-sigs/karpenter #3185, karpenter-provider-aws #5786), "Unconsolidatable"; kubelet/node-controller
    "NodeNotReady", "NodeNotSchedulable", "RemovingNode", "Killing", scheduler "Scheduled"; the event objects as
    `kubectl get events -o json` prints them (#651: involvedObject, reason, firstTimestamp, source.component).
  * aws-ofi-nccl: "NET/OFI Using aws-ofi-nccl ...", "NET/OFI Selected Provider is efa", "Using network AWS
    Libfabric", "NCCL WARN NET/OFI Request completed with error. RC: 21. Error: unknown error" (aws/aws-ofi-nccl
    #161, #889); NCCL's "host:pid:tid [dev] NCCL INFO" prefix (#889 shows a pod hostname there).
  * Lustre client: "Lustre: ...: Connection to ... (at ...) was lost; in progress operations using this service
    will wait for recovery to complete", "LustreError: 11-0: ... rc = -107", "LustreError: 167-0: ...: This client
    was evicted by ...; in progress operations using this service will fail.", "Connection restored to"
    (as in pcluster_efa.py); NVRM Xid 79; torch OutOfMemoryError and CUDA error texts.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from datetime import UTC, datetime
from pathlib import Path

RUN = "ray-llama-ft"
CLUSTER, PROVIDER = "eks-usw2-p5", "aws"
GPN, NNODES = 8, 8
GPUS = GPN * NNODES
GBS, SEQ = 256, 8192
TOKENS_PER_STEP = GBS * SEQ  # 2,097,152
FLOPS_PER_TOKEN = 6.106e10  # 6 * 8.03e9 + 12 * 32 * 4096 * 8192
PEAK = 989.4e12
BASE_STEP = 4.820
JITTER = 0.002
SAVE_INTERVAL = 250
LOG_EVERY = 10
REPORT_EVERY = 50
T0 = datetime(2026, 11, 2, 3, 10, 0, tzinfo=UTC).timestamp()
STORAGE = "/fsx/ray_results/llama3-8b-ft"
FSNAME = "fsx"
OSTS = [f"{FSNAME}-OST{i:04x}" for i in range(8)]
MGS_IP = "10.1.60.23"
BUSIDS = ["53", "64", "75", "86", "97", "a8", "b9", "ca"]
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
]
DOMAIN = "us-west-2.compute.internal"


def _ips(seed: int) -> list[str]:
    rng = random.Random(f"{seed}-ips")
    out: list[str] = []
    while len(out) < 12:
        ip = f"10.1.{rng.choice([16, 17, 18, 19])}.{rng.randint(10, 250)}"
        if ip not in out:
            out.append(ip)
    return out


def node_of(ip: str) -> str:
    return "ip-" + ip.replace(".", "-")


def _d(t: float) -> datetime:
    return datetime.fromtimestamp(int(t), UTC)


def ms(t: float) -> int:
    return int((t - int(t)) * 1000) % 1000


def pyts(t: float) -> str:
    return f"{_d(t):%Y-%m-%d %H:%M:%S},{ms(t):03d}"


def rayts(t: float) -> str:
    return f"[{_d(t):%Y-%m-%d %H:%M:%S},{ms(t):03d}"


def iso_z(t: float) -> str:
    return f"{_d(t):%Y-%m-%dT%H:%M:%S}Z"


def short_iso(t: float) -> str:
    return f"{_d(t):%Y-%m-%dT%H:%M:%S}+00:00"


def dur_str(sec: float) -> str:
    sec = int(sec)
    h, r = divmod(sec, 3600)
    m, s = divmod(r, 60)
    return (f"{h}hr " if h else "") + (f"{m}min " if (h or m) else "") + f"{s}s"


class Sink:
    def __init__(self):
        self.items = []

    def add(self, t, line):
        self.items.append((t, len(self.items), line))

    def ext(self, t, lines):
        for ln in lines:
            self.add(t, ln)

    def render(self) -> bytes:
        self.items.sort(key=lambda x: (x[0], x[1]))
        return ("\n".join(x[2] for x in self.items) + "\n").encode()


def write(path: Path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


class Att:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.steps, self.saves = [], []
        self.R = self.E = None


# ----------------------------------------------------------------------------- timeline
def build(seed: int, W: list[str]):
    rng = random.Random(f"{seed}-tl")
    n1 = W[:8]
    n2 = [W[0], W[1], W[8], W[3], W[4], W[5], W[6], W[7]]  # W3 -> W9
    n3 = [W[0], W[9], W[8], W[3], W[4], W[5], W[6], W[7]]  # W2 -> W10
    n4 = [W[0], W[9], W[10], W[3], W[4], W[5], W[6], W[7]]  # W9 -> W11
    specs = [
        dict(
            k=1,
            job=1,
            nodes=n1,
            kind="failure",
            mode="gpu_fell_off_bus",
            host=W[2],
            gpu=5,
            n_saves=4,
            k_after=40 + rng.randint(0, 180),
            hang=7.0 + rng.randint(0, 2),
            startup=250,
            gap=560,
        ),
        dict(
            k=2,
            job=1,
            nodes=n2,
            kind="failure",
            mode="network",
            host=W[5],
            gpu=2,
            n_saves=3,
            k_after=30 + rng.randint(0, 180),
            hang=21.0 + rng.randint(-2, 2),
            startup=170,
            gap=44,
        ),
        dict(
            k=3,
            job=1,
            nodes=n2,
            kind="failure",
            mode="node_failure",
            host=W[1],
            gpu=None,
            n_saves=5,
            k_after=20 + rng.randint(0, 200),
            hang=34.0 + rng.randint(-3, 3),
            startup=165,
            gap=640,
        ),
        dict(
            k=4,
            job=1,
            nodes=n3,
            kind="failure",
            mode="filesystem_io",
            host=None,
            gpu=None,
            n_saves=3,
            k_after=0,
            hang=96.0 + rng.randint(-8, 8),
            startup=172,
            gap=2400,
        ),
        dict(
            k=5,
            job=2,
            nodes=n3,
            kind="failure",
            mode="preemption",
            host=W[8],
            gpu=None,
            n_saves=4,
            k_after=30 + rng.randint(0, 190),
            hang=16.0 + rng.randint(-2, 2),
            startup=240,
            gap=500,
        ),
        dict(
            k=6,
            job=2,
            nodes=n4,
            kind="failure",
            mode="cuda_oom",
            host=W[0],
            gpu=5,
            n_saves=3,
            k_after=50 + rng.randint(0, 150),
            hang=6.0 + rng.randint(0, 2),
            startup=168,
            gap=38,
        ),
        dict(
            k=7, job=2, nodes=n4, kind="complete", mode=None, host=None, gpu=None, n_steps=2000, startup=170, gap=None
        ),
    ]
    atts = [Att(**s) for s in specs]
    t, load = T0, 0
    for a in atts:
        a.startup += rng.randint(-6, 6)
        a.load = load
        a.S = float(t)
        a.F = a.S + a.startup
        simulate(a, random.Random(f"{seed}-steps-{a.k}"))
        if a.kind == "complete":
            break
        a.kept = a.saves[-1][0] if a.saves else a.load
        load = a.kept
        t = a.E + a.gap + rng.randint(-20, 20)
    return atts


def simulate(a: Att, rng: random.Random) -> None:
    t, n = a.F, a.load
    fail = None
    if a.kind == "failure":
        fail = (a.load // SAVE_INTERVAL + a.n_saves) * SAVE_INTERVAL + a.k_after + 1
        if a.mode == "filesystem_io":
            fail = (a.load // SAVE_INTERVAL + a.n_saves) * SAVE_INTERVAL
    while True:
        if a.kind == "complete" and n >= a.load + a.n_steps:
            break
        n1 = n + 1
        dur = BASE_STEP * (1 + rng.uniform(-JITTER, JITTER))
        if a.kind == "failure" and a.mode != "filesystem_io" and n1 == fail:
            a.R = float(math.floor(t + 0.5 * dur))
            a.E = a.R + a.hang
            a.fail_step = n1
            return
        a.steps.append((n1, t, dur))
        t += dur
        n = n1
        if n % SAVE_INTERVAL == 0:
            c = round(rng.uniform(34.0, 44.0), 2)
            if a.kind == "failure" and a.mode == "filesystem_io" and n == fail:
                a.R = float(math.floor(t)) + 1.0
                a.E = a.R + a.hang
                a.broken_save = (n, t)
                a.fail_step = n + 1
                return
            a.saves.append((n, t, c))
            t += c
    a.E = float(math.ceil(t + 5.0))


def ledger(atts):
    cats = dict.fromkeys(
        ["productive", "straggler", "checkpoint", "data_stall", "recompute", "hang", "restart", "startup", "idle"], 0.0
    )
    per = []
    for i, a in enumerate(atts):
        cats["startup"] += a.F - a.S
        lim = a.kept if a.kind != "complete" else 10**9
        for n, _, d in a.steps:
            if n <= lim:
                cats["productive"] += d
        for n, _, c in a.saves:
            if n <= lim:
                cats["checkpoint"] += c
        if a.kind == "complete":
            cats["checkpoint"] += a.E - (a.saves[-1][1] + a.saves[-1][2])
            continue
        ks = [s for s in a.saves if s[0] == a.kept]
        base = ks[0][1] + ks[0][2] if ks else a.F
        nxt = atts[i + 1]
        rec, hang, rst = a.R - base, a.E - a.R, nxt.S - a.E
        cats["recompute"] += rec
        cats["hang"] += hang
        cats["restart"] += rst
        per.append(dict(hang=hang, recompute=rec, restart=rst, startup=nxt.F - nxt.S))
    total = atts[-1].E - atts[0].S
    assert abs(sum(cats.values()) - total) < 1e-6 * total
    g = GPUS / 3600
    return (
        {k: round(v * g, 4) for k, v in cats.items()},
        round(total * g, 4),
        [{k: round(v * g, 4) for k, v in d.items()} for d in per],
    )


# ----------------------------------------------------------------------------- identities
class Ids:
    """Pods, pids, Ray node ids, per attempt."""

    def __init__(self, seed: int, atts, W):
        rng = random.Random(f"{seed}-ids")
        self.rng = rng
        self.trial = f"TorchTrainer_{rng.getrandbits(20):05x}_00000"
        self.cluster = f"llama-ft-raycluster-{''.join(rng.choice('bcdfghjklmnpqrstvwxz2456789') for _ in range(5))}"
        self.head_pod = f"{self.cluster}-head-{self._sfx()}"
        self.pod = {}  # node -> worker pod name (pods are replaced with their node)
        self.node_id = {}
        for h in W:
            self.pod[h] = f"{self.cluster}-gpu-group-worker-{self._sfx()}"
            self.node_id[h] = f"{rng.getrandbits(224):056x}"
        self.pids = {}  # (attempt, node) -> first worker pid
        for a in atts:
            for h in a.nodes:
                self.pids[(a.k, h)] = rng.randint(3000, 60000)
        self.sub = {1: "raysubmit_" + self._tok(16), 2: "raysubmit_" + self._tok(16)}
        self.jobid = {1: "02000000", 2: "03000000"}
        self.trainer_pid = {a.k: rng.randint(1000, 9000) for a in atts}

    def _sfx(self):
        return "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))

    def _tok(self, n):
        return "".join(self.rng.choice("abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(n))


def ip_of(h: str) -> str:
    return h[3:].replace("-", ".")


def wpfx(ids: Ids, a: Att, h: str, d: int) -> str:
    return f"(RayTrainWorker pid={ids.pids[(a.k, h)] + d}, ip={ip_of(h)})"


def rank_of(a: Att, h: str, d: int) -> int:
    return a.nodes.index(h) * GPN + d


def ckpt_dir(ids: Ids, idx: int) -> str:
    return f"{STORAGE}/{ids.trial}_0_2026-11-02_03-10-22/checkpoint_{idx:06d}"


# ----------------------------------------------------------------------------- driver logs (submitter pod)
def driver_logs(atts, ids: Ids, seed: int, head_ip: str) -> dict[int, bytes]:
    rng = random.Random(f"{seed}-drv")
    sinks = {1: Sink(), 2: Sink()}
    ck_index = {}  # step -> checkpoint index (global numbering)
    idx = 0
    for a in atts:
        for n, _, _ in a.saves:
            if n not in ck_index:
                ck_index[n] = idx
                idx += 1
    first_of_job = {}
    for a in atts:
        first_of_job.setdefault(a.job, a)
    for a in atts:
        L = sinks[a.job]
        tp = f"(TorchTrainer pid={ids.trainer_pid[a.k]}, ip={head_ip})"
        if first_of_job[a.job] is a:
            s = a.S - 9
            L.ext(
                s,
                [
                    f"{pyts(s)}\tINFO cli.py:39 -- Job submission server address: http://{ids.head_pod}."
                    f"default.svc.cluster.local:8265",
                    f"{pyts(s + 0.4)}\tSUCC cli.py:63 -- {'-' * 47}",
                    f"{pyts(s + 0.4)}\tSUCC cli.py:64 -- Job '{ids.sub[a.job]}' submitted successfully",
                    f"{pyts(s + 0.4)}\tSUCC cli.py:65 -- {'-' * 47}",
                    f"{pyts(s + 0.5)}\tINFO cli.py:289 -- Next steps",
                    f"{pyts(s + 0.5)}\tINFO cli.py:297 -- Tailing logs until the job exits (disable with --no-wait):",
                ],
            )
            L.ext(
                a.S - 6,
                [
                    f"{pyts(a.S - 6)}\tINFO job_manager.py:530 -- Runtime env is setting up.",
                    f"{pyts(a.S - 4)}\tINFO worker.py:1586 -- Using address {head_ip}:6379 set in the "
                    f"environment variable RAY_ADDRESS",
                    f"{pyts(a.S - 4)}\tINFO worker.py:1762 -- Connecting to existing Ray cluster at address: "
                    f"{head_ip}:6379...",
                    f"{pyts(a.S - 3)}\tINFO worker.py:1938 -- Connected to Ray cluster. View the dashboard at "
                    f"http://{head_ip}:8265 ",
                    (
                        f"{pyts(a.S - 2)}\tINFO train_llama.py:298 -- resuming from {ckpt_dir(ids, ck_index[a.load])}"
                        if a.load
                        else f"{pyts(a.S - 2)}\tINFO train_llama.py:301 -- starting a new run"
                    ),
                    "",
                    f"View detailed results here: {STORAGE}",
                    "To visualize your results with TensorBoard, run: `tensorboard --logdir /tmp/ray/session_"
                    f"2026-11-02_03-02-51_118402_1/artifacts/{_d(a.S):%Y-%m-%d_%H-%M-%S}/llama3-8b-ft/"
                    "driver_artifacts`",
                    "",
                ],
            )
        L.add(a.S, "Training started with configuration:")
        L.ext(
            a.S,
            [
                "╭──────────────────────────────────────────────────────╮",
                "│ Training config                                      │",
                "├──────────────────────────────────────────────────────┤",
                "│ train_loop_config/lr                          0.0003 │",
                f"│ train_loop_config/seq_len                     {SEQ:6d} │",
                f"│ train_loop_config/global_batch                {GBS:6d} │",
                "╰──────────────────────────────────────────────────────╯",
            ],
        )
        if a.load and first_of_job[a.job] is not a:
            L.add(
                a.S + 3,
                f"{tp} Restored on {head_ip} from checkpoint: Checkpoint(filesystem=local, "
                f"path={ckpt_dir(ids, ck_index[a.load])})",
            )
        ws = a.S + 40
        L.add(ws, f"{tp} Started distributed worker processes: ")
        for h in a.nodes:
            for d in range(GPN):
                L.add(
                    ws,
                    f"{tp} - (node_id={ids.node_id[h]}, ip={ip_of(h)}, pid={ids.pids[(a.k, h)] + d}) "
                    f"world_rank={rank_of(a, h, d)}, local_rank={d}, node_rank={a.nodes.index(h)}",
                )
        h0 = a.nodes[0]
        L.add(ws + 6, f"{wpfx(ids, a, h0, 0)} Setting up process group for: env:// [rank=0, world_size={GPUS}]")
        L.add(
            ws + 6.2,
            f"{wpfx(ids, a, a.nodes[1], 0)} Setting up process group for: env:// [rank=8, world_size="
            f"{GPUS}] [repeated 63x across cluster] (Ray deduplicates logs by default. Set "
            f"RAY_DEDUP_LOGS=0 to disable log deduplication, or see https://docs.ray.io/en/master/"
            f"ray-observability/user-guides/configure-logging.html#log-deduplication for more options.)",
        )
        L.add(
            ws + 7,
            f"(raylet) [{_d(ws + 7):%Y-%m-%d %H:%M:%S},{ms(ws + 7):03d} W 212 212] logging.cc:228: "
            f"Unrecognized setting of RAY_BACKEND_LOG_LEVEL=0 [repeated 64x across cluster]",
        )
        p0 = wpfx(ids, a, h0, 0)
        lg = f"{p0} "
        L.add(
            ws + 20,
            f"{lg}{pyts(ws + 20)} INFO train: FSDP(full_shard) over {GPUS} ranks, model llama3-8b, "
            f"8.03B parameters, bf16 mixed precision, activation checkpointing on",
        )
        if a.load:
            L.add(
                a.F - 70,
                f"{lg}{pyts(a.F - 70)} INFO train: resuming from {ckpt_dir(ids, ck_index[a.load])} (step {a.load})",
            )
            L.add(a.F - 4, f"{lg}{pyts(a.F - 4)} INFO train: checkpoint loaded in {a.F - 4 - (a.F - 70):.1f}s")
        L.add(a.F - 1, f"{lg}{pyts(a.F - 1)} INFO train: starting training loop at step {a.load + 1}")
        lrng = random.Random(f"{seed}-loss-{a.k}")
        for n, ts, dur in a.steps:
            end = ts + dur
            if n % LOG_EVERY == 0:
                loss = 2.05 + 1.1 * math.exp(-n / 3000.0) + lrng.gauss(0, 0.012)
                tps = TOKENS_PER_STEP / dur / GPUS
                L.add(
                    end,
                    f"{lg}{pyts(end)} INFO train: step {n} loss={loss:.4f} lr=3.00e-04 "
                    f"grad_norm={0.3 + abs(lrng.gauss(0, 0.03)):.3f} step_time={dur:.3f}s "
                    f"tok/s/gpu={tps:.0f}",
                )
            if n % REPORT_EVERY == 0 and n % SAVE_INTERVAL:
                it = n // REPORT_EVERY
                tr = end + 0.3
                L.add(
                    tr,
                    f"Training finished iteration {it} at {_d(tr):%Y-%m-%d %H:%M:%S}. Total running time: "
                    f"{dur_str(tr - atts[0].S)}",
                )
        for n, ts, c in a.saves:
            L.add(
                ts + 0.01,
                f"{lg}{pyts(ts + 0.01)} INFO train: saving checkpoint at step {n} (sharded state "
                f"dict) to /fsx/ckpt-staging/step_{n}",
            )
            tc = ts + c - 0.3
            L.add(tc, f"{lg}{pyts(tc)} INFO train: checkpoint step {n} written in {c - 0.8:.2f}s")
            L.add(
                ts + c - 0.2,
                f"(RayTrainWorker pid={ids.pids[(a.k, h0)]}) Checkpoint successfully created at: "
                f"Checkpoint(filesystem=local, path={ckpt_dir(ids, ck_index[n])})",
            )
            it = n // REPORT_EVERY
            L.add(
                ts + c,
                f"Training finished iteration {it} at {_d(ts + c):%Y-%m-%d %H:%M:%S}. Total running "
                f"time: {dur_str(ts + c - atts[0].S)}",
            )
            L.add(ts + c, f"Training saved a checkpoint for iteration {it} at: (local){ckpt_dir(ids, ck_index[n])}")
            if rng.random() < 0.5:
                L.add(
                    ts + c + 3.3,
                    f"{pyts(ts + c + 3.3)}\tWARNING util.py:201 -- The `process_trial_save` "
                    f"operation took {rng.uniform(2.1, 4.5):.3f} s, which may be a performance "
                    f"bottleneck.",
                )
        failure_lines(L, a, ids, rng, tp, head_ip)
    # after the last attempt of job 1 / job 2
    for job, L in sinks.items():
        last = [a for a in atts if a.job == job][-1]
        e = last.E
        if last.kind == "complete":
            L.add(
                e - 4,
                f"{wpfx(ids, last, last.nodes[0], 0)} {pyts(e - 4)} INFO train: reached max steps "
                f"{last.steps[-1][0]}; done",
            )
            L.add(
                e,
                f"Training completed after {last.steps[-1][0] // REPORT_EVERY} iterations at "
                f"{_d(e):%Y-%m-%d %H:%M:%S}. Total running time: {dur_str(e - atts[0].S)}",
            )
            L.add(
                e + 2,
                f"{pyts(e + 2)}\tINFO tune.py:1041 -- Total run time: {e - last.S:.2f} seconds "
                f"({e - last.S - 0.1:.2f} seconds for the tuning loop).",
            )
            L.ext(
                e + 3,
                [
                    f"{pyts(e + 3)}\tSUCC cli.py:63 -- {'-' * 37}",
                    f"{pyts(e + 3)}\tSUCC cli.py:64 -- Job '{ids.sub[job]}' succeeded",
                    f"{pyts(e + 3)}\tSUCC cli.py:65 -- {'-' * 37}",
                ],
            )
        else:
            L.add(e + 1.5, f"{pyts(e + 1.5)}\tERROR tune.py:1037 -- Trials did not complete: [{ids.trial}]")
            L.ext(
                e + 2,
                [
                    "Traceback (most recent call last):",
                    '  File "/home/ray/train_llama.py", line 312, in <module>',
                    "    result = trainer.fit()",
                    '  File "/home/ray/anaconda3/lib/python3.11/site-packages/ray/train/base_trainer.py", '
                    "line 638, in fit",
                    "    raise TrainingFailedError(",
                    "ray.train.base_trainer.TrainingFailedError: The Ray Train run failed. Please inspect the "
                    "previous error messages for a cause. After fixing the issue (assuming that the error is "
                    "not caused by your own application logic, but rather an error such as OOM), you can "
                    "restart the run from scratch or continue this run.",
                    f'To continue this run, you can use: trainer = TorchTrainer.restore("{STORAGE}").',
                ],
            )
            L.ext(
                e + 4,
                [
                    f"{pyts(e + 4)}\tERR cli.py:71 -- {'-' * 39}",
                    f"{pyts(e + 4)}\tERR cli.py:72 -- Job '{ids.sub[job]}' failed",
                    f"{pyts(e + 4)}\tERR cli.py:73 -- {'-' * 39}",
                    f"{pyts(e + 4)}\tINFO cli.py:86 -- Status message: Job entrypoint command failed with "
                    f"exit code 1, last available logs (truncated to 20,000 chars):",
                ],
            )
    return {j: s.render() for j, s in sinks.items()}


def trial_failed(L: Sink, t: float, ids: Ids, head_ip: str, tail: list[str]):
    L.add(t, f"{pyts(t)}\tERROR tune_controller.py:1331 -- Trial task failed for trial {ids.trial}")
    L.ext(
        t,
        [
            "Traceback (most recent call last):",
            '  File "/home/ray/anaconda3/lib/python3.11/site-packages/ray/air/execution/_internal/event_manager.py"'
            ", line 110, in resolve_future",
            "    result = ray.get(future)",
            '  File "/home/ray/anaconda3/lib/python3.11/site-packages/ray/_private/worker.py", line 2691, in get',
            "    values, debugger_breakpoint = worker.get_objects(object_refs, timeout=timeout)",
            '  File "/home/ray/anaconda3/lib/python3.11/site-packages/ray/_private/worker.py", line 871, in '
            "get_objects",
            "    raise value.as_instanceof_cause()",
        ]
        + tail,
    )


def failure_lines(L: Sink, a: Att, ids: Ids, rng: random.Random, tp: str, head_ip: str):
    if a.kind == "complete":
        return
    R, E = a.R, a.E
    n_it = (a.fail_step - 1) // REPORT_EVERY
    inner = (
        f"ray::_Inner.train() (pid={ids.trainer_pid[a.k]}, ip={head_ip}, actor_id="
        f"{rng.getrandbits(96):024x}, repr=TorchTrainer)"
    )
    if a.mode in ("gpu_fell_off_bus", "cuda_oom", "network", "filesystem_io"):
        if a.mode == "gpu_fell_off_bus":
            errs = [
                (
                    a.host,
                    a.gpu,
                    R + 1.8,
                    [
                        "RuntimeError: CUDA error: unspecified launch failure",
                        "CUDA kernel errors might be asynchronously reported at some other "
                        "API call, so the stacktrace below might be incorrect.",
                        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
                    ],
                )
            ]
        elif a.mode == "cuda_oom":
            errs = [
                (
                    a.host,
                    a.gpu,
                    R + 0.2,
                    [
                        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. "
                        f"GPU {a.gpu} has a total "
                        f"capacity of 79.11 GiB of which 1.87 GiB is free. "
                        f"Process {ids.pids[(a.k, a.host)] + a.gpu} has "
                        f"77.23 GiB memory in use. Of the allocated memory 71.06 GiB is allocated by PyTorch, "
                        f"and 4.62 GiB "
                        f"is reserved by PyTorch but unallocated. If reserved but unallocated "
                        f"memory is large try setting "
                        f"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
                        f"See documentation for "
                        f"Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
                    ],
                )
            ]
        elif a.mode == "network":
            i = a.nodes.index(a.host)
            errs = []
            for h, dt in ((a.host, 1.1), (a.nodes[i - 1], 3.6), (a.nodes[i + 1], 4.0)):
                errs.append(
                    (
                        h,
                        a.gpu,
                        R + dt + 5,
                        [
                            "torch.distributed.DistBackendError: NCCL error in: "
                            "/opt/pytorch/pytorch/torch/csrc/distributed/"
                            "c10d/ProcessGroupNCCL.cpp:2006, remote process exited or there was a network error, NCCL "
                            "version 2.21.5",
                            "ncclRemoteError: A call failed possibly due to a network error or a remote process "
                            "exiting "
                            "prematurely.",
                            "Last error:",
                            "NET/OFI Request completed with error. RC: 21. Error: unknown error",
                        ],
                    )
                )
        else:
            n, _ = a.broken_save
            errs = []
            for h in a.nodes[::3]:
                r = rank_of(a, h, 0)
                errs.append(
                    (
                        h,
                        0,
                        E - 6 + 0.1 * r / 8,
                        [
                            f"OSError: [Errno 108] Cannot send after transport endpoint shutdown: '/fsx/ckpt-staging/"
                            f"step_{n}/__{r}_0.distcp'"
                        ],
                    )
                )
        for h, d, t, msg in errs:
            p = wpfx(ids, a, h, d)
            L.ext(
                t,
                [
                    f"{p} Traceback (most recent call last):",
                    f'{p}   File "/home/ray/train_llama.py", line 231, in train_loop_per_worker',
                    f"{p}     loss.backward()"
                    if a.mode != "filesystem_io"
                    else f"{p}     dcp.save(state, checkpoint_id=staging)",
                ]
                + [f"{p} {m}" for m in msg],
            )
        h, d, _, msg = errs[0]
        trial_failed(
            L,
            E,
            ids,
            head_ip,
            [
                f"ray.exceptions.RayTaskError({msg[0].split(':')[0].split('.')[-1]}): {inner}",
                '  File "/home/ray/anaconda3/lib/python3.11/site-packages/ray/train/_internal/utils.py", line 57, '
                "in check_for_failure",
                "    ray.get(object_ref)",
                f"ray.exceptions.RayTaskError({msg[0].split(':')[0].split('.')[-1]}): ray::_RayTrainWorker__execute."
                f"get_next() (pid={ids.pids[(a.k, h)] + d}, ip={ip_of(h)}, actor_id={rng.getrandbits(96):024x}, "
                f"repr=<ray.train._internal.worker_group.RayTrainWorker object at 0x7f3c{rng.getrandbits(32):08x}>)",
                '  File "/home/ray/train_llama.py", line 231, in train_loop_per_worker',
            ]
            + msg,
        )
    else:
        h = a.host
        why = (
            "the actor's node was terminated unexpectedly: health check failed due to missing too many heartbeats"
            if a.mode == "node_failure"
            else "the actor's node was terminated expectedly: received SIGTERM"
        )
        trial_failed(
            L,
            E,
            ids,
            head_ip,
            [
                f"ray.exceptions.RayTaskError(ActorDiedError): {inner}",
                '  File "/home/ray/anaconda3/lib/python3.11/site-packages/ray/train/_internal/utils.py", line 57, '
                "in check_for_failure",
                "    ray.get(object_ref)",
                "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
                "\tclass_name: RayTrainWorker",
                f"\tactor_id: {rng.getrandbits(96):024x}",
                f"\tpid: {ids.pids[(a.k, h)] + rng.randint(0, 7)}",
                f"\tnamespace: {rng.getrandbits(32):08x}-2c1e-4f0a-9b7d-{rng.getrandbits(48):012x}",
                f"\tip: {ip_of(h)}",
                f"The actor is dead because its node has died. Node Id: {ids.node_id[h]}",
                f"\t{why}",
            ],
        )
        if a.mode == "node_failure":
            L.add(
                R + 30.5,
                f"{pyts(R + 30.5)}\tWARNING worker.py:2193 -- The node with node id: {ids.node_id[h]} "
                f"and address: {ip_of(h)} and node name: {ip_of(h)} has been marked dead because the "
                f"detector has missed too many heartbeats from it. This can happen when a \t(1) raylet "
                f"crashes unexpectedly (OOM, etc.) \n\t(2) raylet has lagging heartbeats due to slow "
                f"network or busy workload.",
            )
    L.add(
        E + 0.4,
        f"Training errored after {n_it} iterations at {_d(E):%Y-%m-%d %H:%M:%S}. Total running time: "
        f"{dur_str(E - a.S)}",
    )
    L.add(
        E + 0.4,
        f"Error file: /tmp/ray/session_2026-11-02_03-02-51_118402_1/artifacts/2026-11-02_03-10-22/"
        f"llama3-8b-ft/driver_artifacts/{ids.trial}_0_2026-11-02_03-10-22/error.txt",
    )
    if a.gap > 200 and a.mode != "filesystem_io":
        for k in range(int(a.gap // 60)):
            t = E + 30 + 60 * k
            L.add(
                t,
                f"(autoscaler +{int(t - E)}s) Warning: The following resource request cannot be scheduled "
                f"right now: {{'CPU': 8.0, 'GPU': 1.0}}. This is likely due to all cluster resources being "
                f"claimed by actors. Consider creating fewer actors or adding more nodes to this Ray cluster.",
            )


# ----------------------------------------------------------------------------- node logs
def node_logs(atts, ids: Ids, seed: int, W, head_node, bundle: Path):
    rng = random.Random(f"{seed}-nodes")
    used = []
    for a in atts:
        for h in a.nodes:
            if h not in used:
                used.append(h)
    span = {
        h: (min(a.S for a in atts if h in a.nodes) - 900, max(a.E for a in atts if h in a.nodes) + 600) for h in used
    }
    # nodes that left: their logs end
    lost = [a for a in atts if a.mode == "node_failure"][0]
    pre = [a for a in atts if a.mode == "preemption"][0]
    xid = [a for a in atts if a.mode == "gpu_fell_off_bus"][0]
    ends = {lost.host: lost.R - 2, pre.host: pre.R + 40, xid.host: xid.E + 400}
    fs_att = [a for a in atts if a.mode == "filesystem_io"][0]
    for h in used:
        J = Sink()
        b0, b1 = span[h]
        b1 = ends.get(h, b1)
        host = h
        J.add(b0, f"-- Journal begins at {short_iso(b0 - 3600)}, ends at {short_iso(b1)}. --")
        J.ext(
            b0,
            [
                f"{short_iso(b0)} {host} kernel: Linux version 6.1.112-124.190.amzn2023.x86_64 "
                f"(mockbuild@ip-10-0-44-12) (gcc (GCC) 11.4.1 20230605 (Red Hat 11.4.1-2), GNU ld version "
                f"2.39-6.amzn2023.0.10) #1 SMP PREEMPT_DYNAMIC Tue Oct  8 17:12:11 UTC 2024",
                f"{short_iso(b0 + 9)} {host} kernel: efa 0000:{BUSIDS[0]}:00.1: Setup "
                f"irq:0x{rng.randint(100, 400):x} name:efa-mgmnt@pci:0000:{BUSIDS[0]}:00.1",
                f"{short_iso(b0 + 30)} {host} kernel: nvidia-nvlink: Nvlink Core is being initialized, major "
                f"device number 511",
                f"{short_iso(b0 + 31)} {host} kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  "
                f"Tue Oct  8 03:22:07 UTC 2024",
                f"{short_iso(b0 + 60)} {host} kernel: Lustre: Lustre: Build Version: 2.15.5",
                f"{short_iso(b0 + 61)} {host} kernel: Lustre: Mounted {FSNAME}-client",
            ],
        )
        if h == xid.host:
            t = xid.R
            J.add(
                t,
                f"{short_iso(t)} {host} kernel: NVRM: Xid (PCI:0000:{BUSIDS[xid.gpu]}:00): 79, "
                f"pid={ids.pids[(xid.k, h)] + xid.gpu}, name=ray::RayTrainW, GPU has fallen off the bus.",
            )
            J.add(
                t, f"{short_iso(t)} {host} kernel: NVRM: GPU 0000:{BUSIDS[xid.gpu]}:00.0: GPU has fallen off the bus."
            )
            J.add(
                t + 0.1,
                f"{short_iso(t)} {host} kernel: NVRM: A GPU crash dump has been created. If possible, please run",
            )
            J.add(
                t + 0.1, f"{short_iso(t)} {host} kernel: NVRM: nvidia-bug-report.sh as root to collect this data before"
            )
            J.add(t + 0.1, f"{short_iso(t)} {host} kernel: NVRM: the NVIDIA kernel module is unloaded.")
        if h in fs_att.nodes:
            t = fs_att.R + rng.uniform(0.2, 2.5)
            ost = OSTS[rng.randint(0, 7)]
            cli = f"{ost}-osc-ffff{rng.getrandbits(32):08x}"
            J.ext(
                t,
                [
                    f"{short_iso(t)} {host} kernel: Lustre: {cli}: Connection to {ost} (at {MGS_IP}@tcp) was "
                    f"lost; in progress operations using this service will wait for recovery to complete",
                    f"{short_iso(t + 30)} {host} kernel: LustreError: 11-0: {cli}: operation ost_write to node "
                    f"{MGS_IP}@tcp failed: rc = -107",
                    f"{short_iso(t + 31)} {host} kernel: LustreError: 167-0: {cli}: This client was evicted by "
                    f"{ost}; in progress operations using this service will fail.",
                    f"{short_iso(t + 120)} {host} kernel: Lustre: {cli}: Connection restored to {MGS_IP}@tcp "
                    f"(at {MGS_IP}@tcp)",
                ],
            )
        write(bundle / "nodes" / h / "journal-k.log", J.render())
        # raylet.out
        Rl = Sink()
        rp = rng.randint(40, 90)
        Rl.ext(
            b0 + 300,
            [
                f"{rayts(b0 + 300)} I {rp} {rp}] (raylet) main.cc:180: Setting cluster ID to: {ids.node_id[W[0]][:56]}",
                f"{rayts(b0 + 300)} I {rp} {rp}] (raylet) main.cc:289: Raylet is not set to kill unknown children.",
                f"{rayts(b0 + 301)} I {rp} {rp}] (raylet) node_manager.cc:525: [state-dump] NodeManager:",
                f"{rayts(b0 + 301)} I {rp} {rp}] (raylet) node_manager.cc:525: [state-dump] Node ID: {ids.node_id[h]}",
                f"{rayts(b0 + 301)} I {rp} {rp}] (raylet) node_manager.cc:525: [state-dump] Node name: {ip_of(h)}",
            ],
        )
        for a in atts:
            if h in a.nodes:
                Rl.add(
                    a.S + 30,
                    f"{rayts(a.S + 30)} I {rp} {rp}] (raylet) worker_pool.cc:520: Started worker "
                    f"process with pid {ids.pids[(a.k, h)]}, the token is 0",
                )
        if h == atts[-1].nodes[7]:  # decoy: heartbeat lag, training goes on
            a6 = atts[5]
            for k in range(3):
                t = a6.F + 900 + 40 * k
                Rl.add(
                    t,
                    f"{rayts(t)} W {rp} {rp + 17}] (raylet) node_manager.cc:157: Last heartbeat was sent "
                    f"{rng.randint(5200, 8800)} ms ago. There might be resource pressure on this node. If "
                    f"heartbeat keeps lagging, this node can be marked as dead mistakenly.",
                )
        if h in lost.nodes and h != lost.host:
            t = lost.R + 31
            Rl.add(
                t,
                f"{rayts(t)} I {rp} {rp}] (raylet) accessor.cc:762: Received notification for node, "
                f"IsAlive = 0 node_id={ids.node_id[lost.host]}",
            )
        write(bundle / "nodes" / h / "ray-logs" / "raylet.out", Rl.render())
        # worker .out/.err (per attempt): NCCL_DEBUG=INFO lines use the pod's hostname
        for a in atts:
            if h not in a.nodes:
                continue
            pid = ids.pids[(a.k, h)]
            wid = f"{rng.getrandbits(224):056x}"
            E = Sink()
            pod = ids.pod[h]
            t = a.S + 52
            for d in range(GPN):
                p = f"{pod}:{pid + d}:{pid + d}"
                E.ext(
                    t + 0.01 * d,
                    [
                        f"{p} [{d}] NCCL INFO Bootstrap : Using eth0:{ip_of(h)}<0>",
                        f"{p} [{d}] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v8)",
                        f"{p} [{d}] NCCL INFO NET/OFI Using aws-ofi-nccl 1.11.0",
                        f"{p} [{d}] NCCL INFO NET/OFI Selected Provider is efa (found 32 nics)",
                        f"{p} [{d}] NCCL INFO Using network AWS Libfabric",
                        f"{p} [{d}] NCCL INFO ncclCommInitRank comm 0x{rng.getrandbits(40):x} rank "
                        f"{rank_of(a, h, d)} nranks {GPUS} cudaDev {d} nvmlDev {d} busId "
                        f"{BUSIDS[d]}000 commId 0x{seed * 7919 + a.k:x} - Init COMPLETE",
                    ],
                )
            if a.mode == "network" and h in (a.host,) + tuple(
                a.nodes[(a.nodes.index(a.host) + o) % len(a.nodes)] for o in (-1, 1)
            ):
                off = 0.0 if h == a.host else (2.5 if a.nodes.index(h) < a.nodes.index(a.host) else 2.9)
                for d in range(GPN):
                    t = a.R + off + 0.04 * d
                    p = f"{pod}:{pid + d}:{pid + d + 211}"
                    E.add(t, f"{p} [{d}] NCCL WARN NET/OFI Request completed with error. RC: 21. Error: unknown error")
                    E.add(t + 0.01, f"{p} [{d}] NCCL INFO transport/net.cc:1298 -> 6")
            if a.mode in ("gpu_fell_off_bus", "cuda_oom") and h == a.host:
                t = a.R + (1.8 if a.mode == "gpu_fell_off_bus" else 0.2)
                E.ext(
                    t,
                    [
                        "Traceback (most recent call last):",
                        '  File "/home/ray/train_llama.py", line 231, in train_loop_per_worker',
                        "    loss.backward()",
                        "RuntimeError: CUDA error: unspecified launch failure"
                        if a.mode == "gpu_fell_off_bus"
                        else f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU {a.gpu} has "
                        f"a total capacity of 79.11 GiB of which 1.87 GiB is free.",
                    ],
                )
            if a.k == 3 and h == W[3]:  # decoy: harmless traceback at a DataLoader teardown
                t = a.F + 2 * 3600 / 3
                E.ext(
                    t,
                    [
                        "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f1d3c2a1e40>",
                        "Traceback (most recent call last):",
                        '  File "/home/ray/anaconda3/lib/python3.11/site-packages/torch/utils/data/dataloader.py", '
                        "line 1562, in __del__",
                        "    self._shutdown_workers()",
                        '  File "/home/ray/anaconda3/lib/python3.11/multiprocessing/process.py", line 160, in is_alive',
                        "    assert self._parent_pid == os.getpid(), 'can only test a child process'",
                        "AssertionError: can only test a child process",
                    ],
                )
            write(bundle / "nodes" / h / "ray-logs" / f"worker-{wid}-{ids.jobid[a.job]}-{pid}.err", E.render())
    # head node: gcs_server.out and monitor.log
    G = Sink()
    t = atts[0].S - 600
    G.ext(
        t,
        [
            f"{rayts(t)} I 63 63] (gcs_server) gcs_server_main.cc:66: Ray cluster metadata ray_version=2.38.0 "
            f"ray_commit=385ee466260ef3cd218d5e372aef5d39338b7b94",
            f"{rayts(t)} I 63 63] (gcs_server) gcs_server.cc:61: GCS storage type is StorageType::IN_MEMORY",
        ],
    )
    for h in used:
        t0 = span[h][0] + 302
        G.add(
            t0,
            f"{rayts(t0)} I 63 63] (gcs_server) gcs_node_manager.cc:83: Registering node info, address = "
            f"{ip_of(h)}, node name = {ip_of(h)}, node_id={ids.node_id[h]}",
        )
    t = lost.R + 30
    G.add(
        t,
        f"{rayts(t)} W 63 63] (gcs_server) gcs_health_check_manager.cc:108: Health check failed for node "
        f"{ids.node_id[lost.host]}, remaining checks 0, status RpcError: RPC Error message: failed to connect to "
        f"all addresses; RPC Error details: , status code 14",
    )
    G.add(
        t + 0.1,
        f"{rayts(t + 0.1)} I 63 63] (gcs_server) gcs_node_manager.cc:317: Removing node, node id = "
        f"{ids.node_id[lost.host]}, node name = {ip_of(lost.host)}",
    )
    t = pre.R + 1
    G.add(
        t,
        f"{rayts(t)} I 63 63] (gcs_server) gcs_node_manager.cc:128: Draining node info, node id = "
        f"{ids.node_id[pre.host]}",
    )
    G.add(
        t + 9,
        f"{rayts(t + 9)} I 63 63] (gcs_server) gcs_node_manager.cc:317: Removing node, node id = "
        f"{ids.node_id[pre.host]}, node name = {ip_of(pre.host)}",
    )
    write(bundle / "nodes" / head_node / "ray-logs" / "gcs_server.out", G.render())
    M = Sink()
    for a in atts:
        t = a.S + 20
        M.add(t, f"{pyts(t)}\tINFO autoscaler.py:461 -- Resized to 200 CPUs, {GPUS} GPUs.")
    for a in atts[:-1]:
        if a.gap > 200:
            t = a.E + 25
            M.add(t, f"{pyts(t)}\tINFO autoscaler.py:1378 -- Adding 1 node(s) of type gpu-group.")
            M.add(
                t + 0.2,
                f"{pyts(t + 0.2)}\tINFO node_provider.py:489 -- Submitting scale request: "
                f"{{'worker_group_name': 'gpu-group', 'replicas': 9}}",
            )
    write(bundle / "nodes" / head_node / "ray-logs" / "monitor.log", M.render())


# ----------------------------------------------------------------------------- kubernetes events
def k8s_events(atts, ids: Ids, seed: int, W, cpu_decoy, bundle: Path):
    rng = random.Random(f"{seed}-k8s")
    items = []

    def ev(t, kind, name, reason, msg, comp, typ="Normal", ns="default", api="v1", count=1, last=None):
        uid = (
            f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-"
            f"8{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}"
        )
        nm = f"{name}.{rng.getrandbits(64):x}"
        items.append(
            (
                t,
                {
                    "apiVersion": "v1",
                    "count": count,
                    "eventTime": None,
                    "firstTimestamp": iso_z(t),
                    "lastTimestamp": iso_z(last if last else t),
                    "involvedObject": {
                        "apiVersion": api,
                        "kind": kind,
                        "name": name,
                        **({"namespace": ns} if kind not in ("Node", "NodeClaim") else {}),
                        "uid": uid,
                    },
                    "kind": "Event",
                    "message": msg,
                    "metadata": {
                        "creationTimestamp": iso_z(t),
                        "name": nm,
                        "namespace": ns if kind not in ("Node", "NodeClaim") else "default",
                        "resourceVersion": str(rng.randint(10**7, 10**8)),
                        "uid": uid,
                    },
                    "reason": reason,
                    "reportingComponent": comp,
                    "reportingInstance": "",
                    "source": {"component": comp},
                    "type": typ,
                },
            )
        )

    fq = {h: f"{h}.{DOMAIN}" for h in W}
    started = set()
    for a in atts:
        for h in a.nodes:
            if h in started:
                continue
            started.add(h)
            t = a.S - 200 if a.k == 1 else atts[a.k - 2].E + 60
            nc = f"gpu-p5-{rng.getrandbits(20):05x}"
            if a.k > 1:
                ev(t - 240, "Pod", ids.pod[h], "Nominated", f"Pod should schedule on: nodeclaim/{nc}", "karpenter")
            ev(
                t,
                "Pod",
                ids.pod[h],
                "Scheduled",
                f"Successfully assigned default/{ids.pod[h]} to {fq[h]}",
                "default-scheduler",
            )
            ev(t + 40, "Pod", ids.pod[h], "Started", "Started container ray-worker", "kubelet")
            for k in range(3):
                tt = t + 1800 + 3600 * k
                ev(tt, "Node", fq[h], "Unconsolidatable", "Can't replace with a cheaper node", "karpenter", api="v1")
    xid = [a for a in atts if a.mode == "gpu_fell_off_bus"][0]
    ev(
        xid.E + 120,
        "Node",
        fq[xid.host],
        "NodeNotSchedulable",
        f"Node {fq[xid.host]} status is now: NodeNotSchedulable",
        "kubelet",
    )
    ev(xid.E + 150, "Pod", ids.pod[xid.host], "Killing", "Stopping container ray-worker", "kubelet")
    lost = [a for a in atts if a.mode == "node_failure"][0]
    ev(
        lost.R + 42,
        "Node",
        fq[lost.host],
        "NodeNotReady",
        f"Node {fq[lost.host]} status is now: NodeNotReady",
        "node-controller",
    )
    ev(lost.R + 43, "Pod", ids.pod[lost.host], "NodeNotReady", "Node is not ready", "node-controller", typ="Warning")
    ev(
        lost.R + 400,
        "Node",
        fq[lost.host],
        "RemovingNode",
        f"Node {fq[lost.host]} event: Removing Node {fq[lost.host]} from Controller",
        "node-controller",
    )
    pre = [a for a in atts if a.mode == "preemption"][0]
    ncp = f"gpu-p5-{rng.getrandbits(20):05x}"
    ev(
        pre.R - 3,
        "Node",
        fq[pre.host],
        "SpotInterrupted",
        "Spot interruption warning was triggered",
        "karpenter",
        typ="Warning",
    )
    ev(
        pre.R - 3,
        "NodeClaim",
        ncp,
        "SpotInterrupted",
        "Spot interruption warning was triggered",
        "karpenter",
        typ="Warning",
        api="karpenter.sh/v1",
    )
    ev(pre.R - 2, "Node", fq[pre.host], "DisruptionTerminating", "Disrupting Node: Interruption", "karpenter")
    ev(pre.R, "Pod", ids.pod[pre.host], "Evicted", "Evicted pod: Interruption", "karpenter")
    ev(pre.R + 0.5, "Pod", ids.pod[pre.host], "Killing", "Stopping container ray-worker", "kubelet")
    ev(
        pre.R + 130,
        "Node",
        fq[pre.host],
        "RemovingNode",
        f"Node {fq[pre.host]} event: Removing Node {fq[pre.host]} from Controller",
        "node-controller",
    )
    # decoy: consolidation of an underused CPU node
    t = atts[4].F + 3000
    ev(t, "Node", f"{cpu_decoy}.{DOMAIN}", "DisruptionTerminating", "Disrupting Node: Underutilized", "karpenter")
    ev(
        t + 90,
        "Node",
        f"{cpu_decoy}.{DOMAIN}",
        "RemovingNode",
        f"Node {cpu_decoy}.{DOMAIN} event: Removing Node {cpu_decoy}.{DOMAIN} from Controller",
        "node-controller",
    )
    items.sort(key=lambda x: x[0])
    doc = {"apiVersion": "v1", "items": [i for _, i in items], "kind": "List", "metadata": {"resourceVersion": ""}}
    write(bundle / "k8s" / "events.json", (json.dumps(doc, indent=4) + "\n").encode())


# ----------------------------------------------------------------------------- main
def generate(out: Path, seed: int) -> dict:
    bundle = out / "bundle"
    ips = _ips(seed)
    W = [node_of(ip) for ip in ips[:11]]
    head_ip = f"10.1.32.{int(ips[11].split('.')[-1])}"
    head_node = node_of(head_ip)
    cpu_decoy = node_of(f"10.1.33.{int(ips[10].split('.')[-1])}")
    atts = build(seed, W)
    ids = Ids(seed, atts, W)
    write(
        bundle / "inventory.toml",
        f"""[providers.{PROVIDER}]
usd_per_gpu_hour = 3.93

[clusters.{CLUSTER}]
provider = "{PROVIDER}"
gpu = "H100-SXM"
gpus_per_node = 8
interconnect = "EFA v2 32x100G"
nodes = "{",".join(W)}"
""".encode(),
    )
    rdir = bundle / "runs" / RUN
    write(
        rdir / "run.toml",
        f"""cluster = "{CLUSTER}"
gpus = {GPUS}
tokens_per_step = {TOKENS_PER_STEP}
flops_per_token = {FLOPS_PER_TOKEN:.4e}
checkpoint_dir = "{STORAGE}"
launch_command = "kubectl apply -f rayjob-llama-ft.yaml"
""".encode(),
    )
    for job, data in driver_logs(atts, ids, seed, head_ip).items():
        write(rdir / f"rayjob-{job}" / "submitter.log", data)
    node_logs(atts, ids, seed, W, head_node, bundle)
    k8s_events(atts, ids, seed, W, cpu_decoy, bundle)
    cats, total, per = ledger(atts)
    incs = []
    for j, a in enumerate(atts[:-1]):
        incs.append(
            {
                "id": j + 1,
                "attempt": a.k,
                "attempts": [a.k],
                "rayjob": a.job,
                "failure_mode": a.mode,
                "blame": "user" if a.mode == "cuda_oom" else "provider",
                "host": a.host,
                "gpu_index": a.gpu,
                "root_ts": iso_z(a.R),
                "exit_ts": iso_z(a.E),
                "kept_step": a.kept,
                "gpu_hours": per[j],
                "gpu_hours_lost": round(sum(per[j].values()), 4),
            }
        )
    net = atts[1]
    i = net.nodes.index(net.host)
    decoys = {
        W[7]: "raylet heartbeat-lag warnings in attempt 6; training went on",
        W[3]: "harmless DataLoader teardown traceback in a worker-*.err",
        cpu_decoy: "CPU node consolidated by Karpenter; never in the job",
        net.nodes[i - 1]: "ring peer of the EFA fault: symptom only",
        net.nodes[i + 1]: "ring peer of the EFA fault: symptom only",
    }
    truth = {
        "run": RUN,
        "gpus": GPUS,
        "seed": seed,
        "tokens_per_step": TOKENS_PER_STEP,
        "flops_per_token": FLOPS_PER_TOKEN,
        "baseline_step_s": BASE_STEP,
        "peak_flops_per_gpu": PEAK,
        "steady_mfu": round(TOKENS_PER_STEP * FLOPS_PER_TOKEN / (BASE_STEP * GPUS * PEAK), 4),
        "match_on_attempt": True,
        "attempts": [
            {
                "attempt": a.k,
                "rayjob": a.job,
                "nodes": list(a.nodes),
                "start_ts": iso_z(a.S),
                "first_step_ts": iso_z(a.F),
                "exit_ts": iso_z(a.E),
                "loaded_step": a.load,
                "saves": [n for n, _, _ in a.saves],
                "end": a.kind,
            }
            for a in atts
        ],
        "incidents": incs,
        "forbidden_incidents": [
            {"failure_mode": "host_hw", "attempts": [6], "reason": "raylet heartbeat lag on a node that kept training"},
            {
                "failure_mode": "user_code_error",
                "attempts": [3],
                "reason": "a DataLoader teardown traceback that ended nothing",
            },
        ],
        "decoy_hosts": sorted(decoys),
        "decoy_reasons": decoys,
        "hardware_modes": HARDWARE_MODES,
        "expected_ledger": cats,
        "total_gpu_hours": total,
        "expected_lost_by_provider_gpu_hours": {
            PROVIDER: round(sum(i["gpu_hours_lost"] for i in incs if i["blame"] == "provider"), 4)
        },
    }
    write(out / "truth.json", (json.dumps(truth, indent=2) + "\n").encode())
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261102)
    args = ap.parse_args()
    out = Path(args.out)
    if (out / "bundle").exists():
        raise SystemExit(f"{out / 'bundle'} exists; pass an empty --out")
    out.mkdir(parents=True, exist_ok=True)
    truth = generate(out, args.seed)
    print(f"wrote {out / 'bundle'}; total {truth['total_gpu_hours']:.1f} GPU-h, {len(truth['incidents'])} incidents")


if __name__ == "__main__":
    main()
