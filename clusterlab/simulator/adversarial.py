"""The adversarial family: evidence as messy as a rented cluster leaves it, the truth kept apart.

On top of the ordinary fleet (`Config.adversarial`, reproducible by seed):
- every job has a Slurm time limit, and each run's first launches end by a script (rotated per
  cluster): a preemption, a user's scancel, a hang that runs into the time limit (truth: the
  hang's cause and host), a storage server that stops answering every host (truth host: the
  server, as the kernel lines name it) and a plain time limit;
- decoys, listed apart in truth.json: non-fatal Xids (13, 31, 43), a harmless NCCL WARN and a
  corrected PCIe AER minutes before those ends while every rank keeps stepping, an NFS blip on an
  idle spare node;
- per-rank timings for a window of an attempt only, from a writer killed early, from some nodes
  only, or none at all (the training log prints every step's own time, so the ledger stays knowable);
- clock skew of a few seconds on some hosts, in those hosts' own logs (kernel, per-rank JSONL);
- missing kernel logs for nodes that hold no evidence of any incident.

With `Config.cases`, the script goes on with the root-cause cases of issue 29 (`CASES`), each written in the
formats real clusters print and each scored by the round trip like any other ending:
- `hung_rank`: one rank stops inside a step (no fault anywhere): its per-rank records end a step before every
  other rank's, and the others' NCCL watchdogs fire ten minutes later (symptoms; truth: nccl_timeout on its host);
- `maintenance`: the operator drains every node of the job for an emergency maintenance and root cancels the
  job (truth: preemption, no single host);
- `lustre`: a Lustre OST stops answering; every host's client reports the lost connection, one rank's read
  fails (truth: filesystem_io on the target, as the kernel names it);
- `sdc`: one rank's loss goes non-finite for a few steps while every other rank's stays finite, then Megatron's
  NaN check stops it (truth: silent_data_corruption on its host);
- `rollback`: the loss diverges (Megatron's NaN check) and the team relaunches from the checkpoint before the
  newest one (a deliberate rollback: no checkpoint_lost); the lost checkpoint of `Config.scenarios` is then
  printed as a `latest` pointing at a save with incomplete shards, whose load fails before the fallback;
- `sticky`: an uncorrectable ECC error (Xid 48) kills the job and nobody drains the node; the next launch lands
  on the same GPU and dies in its first step of a CUDA out-of-memory (truth: gpu_memory_ecc on that host, for
  both launches);
- `maint_reboot`: the operator drains one node of the job for a firmware upgrade and reboots it under the job:
  the node is lost as in a node failure, its peers' queue pairs fail, slurmctld sets it DOWN (truth: preemption,
  the provider's maintenance, on that node);
- `remap_pending`: a GPU marks a row for remapping (Xid 63, "reset gpu to activate") before the launch and nobody
  resets it; the launch dies on that GPU, of an uncorrectable ECC error (Xid 48) or, on every other cluster, of a
  bare CUDA illegal memory access with nothing new in the kernel log (truth: gpu_memory_ecc on that host);
- `remap_reset`: the same Xid 63, but the operator drains the node and resumes it (the GPU reset) before the
  launch, which then dies of the user's own illegal address (Xid 31) on that GPU (truth: cuda_error: the reset
  cleared the pending remap, so the GPU is not to blame);
- `gloo_hang`: the hang of `examples/train_tiny_gpt.py --fail-mode hang` on a gloo group: one rank never begins
  the next step; every other rank's per-rank recorder writes a stall record for it, and their gloo receives time
  out (`Timed out waiting ...ms for recv operation to complete`, exit code 1) (truth: nccl_timeout on the hung
  rank's host, never a rank that printed the timeout).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import numpy as np

from clusterlab.simulator import endings

if TYPE_CHECKING:
    from clusterlab.simulator.fleet import Cluster, Config
    from clusterlab.simulator.runs import Attempt, Ending, Run
    from clusterlab.simulator.textlog import Proc

SCRIPT = ("preemption", "hang_limit", "manual_stop", "storage", "time_limit")
CASES = ("hung_rank", "maintenance", "lustre", "sdc", "rollback", "sticky", "maint_reboot", "remap_pending",
         "remap_reset", "gloo_hang")
# hardware faults that hang the job (no process dies; the NCCL watchdog would fire after 10 minutes)
HANG_CAUSES = ("gpu_fell_off_bus", "nvlink_error", "gpu_hw_other", "pcie_error")
CANCEL_UID = 1000  # the user who runs scancel
ROOT_UID = 0  # the operator's scancel during a maintenance
MAINTENANCE_REASON = "emergency maintenance - PDU replacement"
REBOOT_REASON = "firmware upgrade - BMC 2.14"  # the node the operator reboots under the job (`maint_reboot`)
LUSTRE_TARGET = "lustre-OST0003"  # the OST the `lustre` case loses, as the kernel's Lustre client names it
LUSTRE_NID = "10.40.0.13@o2ib"
SDC_STEPS = 3  # steps one rank's loss is non-finite before the NaN check stops it
XIDS = (13, 31, 43)
REMAP_RESET_REASON = "Xid 63 row remap pending, GPU reset"  # the operator's drain before the reset (`remap_reset`)
REMAP_QUIET_MS = 10 * 60_000  # a `remap_*` culprit node has been in service at least this long when the launch starts


def script(cfg: Config) -> tuple[str, ...]:
    """The scripted endings of each run, in order (before the rotation)."""
    return SCRIPT + CASES if cfg.cases else SCRIPT


def time_limit_ms(cfg: Config) -> int:
    """Each job's limit (whole minutes, at least 20): the window holds about one launch per scripted ending
    and one more."""
    lo, hi = cfg.window_ms
    return max(20, int((hi - lo) / (len(script(cfg)) + 1) // 60_000)) * 60_000


def job_start_ms(start_ms: int) -> int:
    """sacct's Start of a launch whose first line is at `start_ms`."""
    return endings.job_start_ms(start_ms)


def server_name(cluster: Cluster) -> str:
    """The cluster's NFS server, as the mount (and so the kernel) names it."""
    return f"{cluster.hosts[0].rsplit('-', 1)[0]}-fs01"


def scripted(run: Run, k: int, seed: int = 0, cases: bool = False) -> str | None:
    """The scripted ending of launch k of this run (None: a random failure or the limit); the order
    turns with the cluster and the seed, so that seeds see the endings in different places."""
    order = SCRIPT + CASES if cases else SCRIPT
    if k > len(order):
        return None
    # with the cases, each cluster starts half the order further on: runs too short for every ending each cover more
    step = 1 + len(order) // 2 if cases else 1
    return order[(k - 1 + run.cluster.index * step + seed) % len(order)]


def scripted_fail(script: str, start: int, limit_at: int | None, rng: np.random.Generator
                  ) -> tuple[int | None, str]:
    """When the scripted ending strikes and as what mode (None: nothing before the time limit)."""
    if script == "time_limit" or limit_at is None:
        return None, ""
    if script == "hang_limit":  # the fault 2-8 minutes before the limit: the watchdog never gets to fire
        return limit_at - int(rng.uniform(120_000, 480_000)), HANG_CAUSES[int(rng.integers(len(HANG_CAUSES)))]
    if script in ("hung_rank", "gloo_hang"):  # early enough that the watchdog fires before the limit
        at = start + int((limit_at - start) * rng.uniform(0.2, 0.4))
        return (at, "nccl_timeout") if at + endings.WATCHDOG_MS + 180_000 < limit_at else (None, "")
    at = start + int((limit_at - start) * rng.uniform(0.35, 0.8))
    return at, {"preemption": "preemption", "manual_stop": "manual_stop", "storage": "filesystem_io",
                "maintenance": "preemption", "lustre": "filesystem_io", "sdc": "silent_data_corruption",
                "rollback": "loss_divergence", "sticky": "gpu_memory_ecc", "maint_reboot": "node_failure",
                "remap_pending": "gpu_memory_ecc", "remap_reset": "cuda_error"}[script]


def shape_ending(script: str, run: Run, att: Attempt, limit_at: int | None, rng: np.random.Generator) -> None:
    """Turn the drawn ending into the scripted one: a hang killed by the limit, a storage server lost."""
    e, n = att.ending, len(att.hosts)
    if script in CASES and e.mode == scripted_mode(script):
        e.case = script
    if e.case in ("remap_pending", "remap_reset"):
        _remap_host(run, att)
    if script == "lustre" and e.mode == "filesystem_io" and e.rank is not None:
        e.server = e.host = LUSTRE_TARGET
        e.trigger_ms = e.root_ms + endings.NFS_SOFT_MS + int(rng.integers(5, 900))
        e.exit_ms = endings.exit_ms(e.mode, e.trigger_ms, n, e.rank // run.cluster.gpus_per_node)
    elif script == "hang_limit" and e.mode in HANG_CAUSES and limit_at is not None and e.root_ms < limit_at - 30_000:
        e.kill = "time_limit"
        e.trigger_ms = limit_at
        e.exit_ms = endings.exit_ms("time_limit", limit_at, n, None)
    elif script == "storage" and e.mode == "filesystem_io" and e.rank is not None:
        e.server = e.host = server_name(run.cluster)
        e.trigger_ms = e.root_ms + endings.NFS_SOFT_MS + int(rng.integers(5, 900))
        e.exit_ms = endings.exit_ms(e.mode, e.trigger_ms, n, e.rank // run.cluster.gpus_per_node)


def _remap_host(run: Run, att: Attempt) -> None:
    """A `remap_*` ending on a node in service for a while before the launch (a node back from repair just then had
    its GPUs reset: no remap of before would still be pending); no such node: no case."""
    e, gpn = att.ending, run.cluster.gpus_per_node
    fresh = {h for h, _, back in run.repairs if att.start_ms - REMAP_QUIET_MS <= back <= att.start_ms}
    if e.host not in fresh:
        return
    settled = [n for n, h in enumerate(att.hosts) if h not in fresh]
    if not settled or e.rank is None:
        e.case = None
        return
    n = settled[0]
    e.host, e.rank = att.hosts[n], n * gpn + e.rank % gpn
    e.exit_ms = endings.exit_ms(e.mode, e.trigger_ms, len(att.hosts), n)


def scripted_mode(script: str) -> str:
    """The failure mode a case's ending is drawn as."""
    return {"hung_rank": "nccl_timeout", "maintenance": "preemption", "lustre": "filesystem_io",
            "sdc": "silent_data_corruption", "rollback": "loss_divergence", "sticky": "gpu_memory_ecc",
            "maint_reboot": "node_failure", "remap_pending": "gpu_memory_ecc", "remap_reset": "cuda_error",
            "gloo_hang": "nccl_timeout"}.get(script, "")


def truth_root_ms(att: Attempt) -> int:
    """When the cause of an attempt's end happened, as truth.json states it: silent data corruption at its first
    non-finite number (the end of the first step whose loss went non-finite on the rank), not at the NaN check that
    stopped the job steps later; every other ending at its drawn root."""
    e, s = att.ending, att.steps
    if e.case == "sdc" and len(s) >= SDC_STEPS:
        return int(s.end[len(s) - SDC_STEPS])
    return e.root_ms


def truth_mode(e: Ending) -> str:
    """The failure mode truth.json states for an ending: what it was, where its evidence looks like another."""
    return "preemption" if e.case == "maint_reboot" else e.mode


def skews(cfg: Config, cluster: Cluster) -> dict[str, int]:
    """Clock offsets (ms) of the hosts whose clocks are off: about a third, 1-4 s either way."""
    r = random.Random(f"{cfg.seed}:{cluster.name}:skew")
    out = {h: r.choice((-1, 1)) * r.randint(1000, 4000) for h in cluster.hosts if r.random() < 1 / 3}
    if not out:
        out[cluster.hosts[r.randrange(len(cluster.hosts))]] = r.choice((-1, 1)) * r.randint(1000, 4000)
    return out


COVERAGE = ("window", "subset", "early", "none", "full")


def coverage(run: Run, att: Attempt, r: random.Random) -> tuple[int, int, tuple[int, ...]]:
    """Which per-rank timings exist: steps [lo, hi) of the hosts listed (by index in att.hosts).

    Steps that only per-rank timings can explain (a straggler's, a data wait's) are always covered,
    and a straggler's host always writes: elsewhere the training log's own step times suffice.
    """
    s, n, hosts = att.steps, len(att.steps), tuple(range(len(att.hosts)))
    need = np.nonzero((s.slow >= 0) | (s.data_ms != run.model.data_ms))[0]
    slow_hosts = set(int(x) for x in np.unique(s.slow[s.slow >= 0]))
    kind = COVERAGE[(att.k + run.cluster.index) % len(COVERAGE)]
    # the cases told by per-rank records (who stopped first, whose loss alone went non-finite) have them all
    told = att.ending.case in ("hung_rank", "sdc", "gloo_hang")
    if n < 40 or kind == "full" or (kind == "none" and len(need)) or told:
        return 0, n, hosts
    if kind == "none":
        return 0, 0, ()
    if kind == "subset":
        keep = sorted(slow_hosts | set(r.sample(hosts, max(1, len(hosts) // 2))))
        return 0, n, tuple(keep)
    if kind == "early":  # the writer was killed: nothing after some step
        hi = max(int(n * r.uniform(0.4, 0.8)), int(need.max()) + 1 if len(need) else 0)
        return 0, hi, hosts
    lo, hi = int(n * r.uniform(0.2, 0.45)), int(n * r.uniform(0.55, 0.8))
    if len(need):
        lo, hi = min(lo, int(need.min())), max(hi, int(need.max()) + 1)
    return max(1, lo), hi, hosts


def kill_ms(att: Attempt) -> int | None:
    """When a scripted attempt stopped progressing: the kill, the hang's or outage's root."""
    e = att.ending
    if e.kill or e.server:
        return e.root_ms
    return e.trigger_ms if endings.family(e.mode) == "scheduler" else None


def guilty_hosts(att: Attempt) -> set[str]:
    """Hosts an incident of this attempt names: its ending's, stragglers', stalled saves'."""
    return ({att.ending.host} | {st.host for st in att.stragglers}
            | {sv.stall_host for sv in att.saves if sv.stall_host and sv.complete}) - {None}


def _xid_line(code: int, bus: str, pid: int) -> str:
    """A non-fatal Xid in the NVRM spelling (docs.nvidia.com/deploy/xid-errors)."""
    head = f"NVRM: Xid (PCI:0000:{bus}:00): {code}, pid={pid}, name=python3, "
    if code == 13:
        return head + "Graphics SM Warp Exception on (GPC 2, TPC 1, SM 0): Out Of Range Address"
    if code == 31:
        return head + ("Ch 00000010, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ "
                       "0x7fd1_3a200000. Fault is of type FAULT_PTE ACCESS_TYPE_VIRT_READ")
    return head + "Ch 00000008"


def attempt_decoys(run: Run, att: Attempt, procs: list[Proc], r: random.Random
                   ) -> tuple[list[tuple[str, int, str]], dict[int, list[str]], list[dict]]:
    """Decoys before a scripted end, while every rank keeps stepping: kernel lines, log lines by step, truth."""
    end = kill_ms(att)
    s = att.steps
    if end is None or len(s) < 40:
        return [], {}, []
    first, last = int(s.end[0]), int(s.end[-1])
    kernel: list[tuple[str, int, str]] = []
    log: dict[int, list[str]] = {}
    rows: list[dict] = []
    # decoys go on hosts no incident of this attempt names (a decoy is harmless evidence, not a second cause)
    spare_culprit = [h for h in att.hosts if h not in guilty_hosts(att)]
    if not spare_culprit:
        return [], {}, []

    def row(host: str, ts: int, kind: str, what: str) -> None:
        rows.append({"run": run.name, "attempt": att.k, "host": host, "ts": ts, "kind": kind, "what": what})

    # a non-fatal Xid from another process on one of our GPUs, 2-8 minutes before the end
    t = end - int(r.uniform(120_000, 480_000))
    if first + 60_000 <= t <= last - 60_000:
        host = r.choice(spare_culprit)
        code = XIDS[(att.k + run.cluster.index) % len(XIDS)]
        p = r.choice([q for q in procs if q.host == host])
        kernel.append((host, t, _xid_line(code, p.bus, r.randint(100_000, 400_000))))
        row(host, t, f"xid_{code}", f"Xid {code} from another process; every rank kept stepping")
    # a harmless NCCL WARN (a non-fatal IB async event), 1-6 minutes before the end, after a step line
    t = end - int(r.uniform(60_000, 360_000))
    i = int(np.searchsorted(s.end, t, side="right")) - 1
    if i >= 1 and last - int(s.end[i]) >= 60_000:
        p = r.choice([q for q in procs if q.host in spare_culprit])
        # NCCL's net_ib.cc async-event thread (the spelling of the nccl collector's samples)
        log.setdefault(i, []).append(f"{p.prefix(p.proxy_tid)} transport/net_ib.cc:179 NCCL WARN NET/IB : "
                                     f"mlx5_{p.local}:1 Got non-fatal async event: port active(9)")
        row(p.host, int(s.end[i]), "nccl_warn", "non-fatal IB async event; training went on")
    # a corrected PCIe AER (receiver error), 10-25 minutes before the end
    t = end - int(r.uniform(600_000, 1_500_000))
    if first <= t <= last - 60_000:
        host = r.choice(spare_culprit)
        p = r.choice([q for q in procs if q.host == host])
        kernel += [(host, t, f"pcieport 0000:{p.bus[0]}0:01.0: AER: Corrected error message received from "
                             f"0000:{p.bus}:00.0"),
                   (host, t, f"nvidia 0000:{p.bus}:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
                             "(Receiver ID)"),
                   (host, t, f"nvidia 0000:{p.bus}:00.0:   device [10de:2330] error status/mask=00000001/0000e000")]
        row(host, t, "pcie_aer_corrected", "corrected PCIe AER (RxErr); harmless")
    return kernel, log, rows


def spare_blip(cfg: Config, cluster: Cluster, run: Run, r: random.Random
               ) -> tuple[dict[str, list[tuple[int, str]]], list[dict]]:
    """An NFS blip (not responding, then OK) on a spare node that no launch of ours is using."""
    lo, hi = cfg.window_ms
    if len(cluster.hosts) < 2:
        return {}, []
    spare = cluster.hosts[-1]
    busy = [(a.start_ms, a.end_ms) for a in run.attempts if spare in a.hosts]
    for _ in range(50):
        t = r.randint(lo + 600_000, max(lo + 600_001, hi - 600_000))
        if not any(s - 900_000 <= t <= e + 900_000 for s, e in busy):
            server = server_name(cluster)
            # the Linux NFS client's spelling (fs/nfs: "nfs: server %s not responding, still trying" / "OK")
            lines = [(t, f"nfs: server {server} not responding, still trying"),
                     (t + r.randint(20_000, 90_000), f"nfs: server {server} OK")]
            return {spare: lines}, [{"run": run.name, "attempt": None, "host": spare, "ts": t, "kind": "nfs_blip",
                                     "what": "NFS blip on an idle spare node"}]
    return {}, []


def storage_lines(run: Run, att: Attempt, r: random.Random) -> list[tuple[str, int, str]]:
    """Every host of the attempt reports the lost server within seconds; the culprit's read times out."""
    e = att.ending
    if not e.server:
        return []
    if e.server == LUSTRE_TARGET:
        return _lustre_lines(run, att, r)
    culprit = att.hosts[e.rank // run.cluster.gpus_per_node]
    order = r.sample(list(att.hosts), len(att.hosts))  # who prints first is chance, not cause
    out = [(h, e.root_ms + (0 if n == 0 else r.randint(200, 9000)), f"nfs: server {e.server} not responding, "
            "still trying") for n, h in enumerate(order)]
    out.append((culprit, e.trigger_ms - r.randint(20, 200), f"nfs: server {e.server} not responding, timed out"))
    back = e.trigger_ms + r.randint(300_000, 900_000)
    out += [(h, back + r.randint(0, 3000), f"nfs: server {e.server} OK") for h in att.hosts]
    return out


def _lustre_lines(run: Run, att: Attempt, r: random.Random) -> list[tuple[str, int, str]]:
    """Every host's Lustre client loses its connection to the OST within seconds (in-flight operations wait for
    recovery); the culprit's read is the one that fails; the connection comes back minutes later. The spellings
    are the Lustre client's (ptlrpc import.c / client.c), as the kernel collector's samples hold them."""
    e = att.ending
    culprit = att.hosts[e.rank // run.cluster.gpus_per_node]
    order = r.sample(list(att.hosts), len(att.hosts))  # who prints first is chance, not cause
    osc = {h: f"{LUSTRE_TARGET}-osc-ffff{r.randrange(16 ** 12):012x}" for h in att.hosts}
    out = [(h, e.root_ms + (0 if n == 0 else r.randint(200, 9000)),
            f"Lustre: {osc[h]}: Connection to {LUSTRE_TARGET} (at {LUSTRE_NID}) was lost; in progress operations "
            "using this service will wait for recovery to complete") for n, h in enumerate(order)]
    out.append((culprit, e.trigger_ms - r.randint(20, 200), f"LustreError: 11-0: {osc[culprit]}: operation ost_read "
                                                            f"to node {LUSTRE_NID} failed: rc = -107"))
    back = e.trigger_ms + r.randint(300_000, 900_000)
    out += [(h, back + r.randint(0, 3000), f"Lustre: {osc[h]}: Connection restored to {LUSTRE_TARGET} (at "
                                           f"{LUSTRE_NID})") for h in att.hosts]
    return out


def missing_logs(cluster: Cluster, evidence: dict[str, list[tuple[int, str]]], r: random.Random) -> set[str]:
    """One node's kernel log is not in the bundle: a node with no evidence of any incident on it but
    its share of a storage outage that every host of the launch (at least three) reported."""
    # NOTE: never the last node: its log carries the spare's NFS blip
    free = [h for h in cluster.hosts[:-1]
            if all(msg.startswith(("nfs: server ", "Lustre: ")) for _, msg in evidence.get(h, []))]
    return {r.choice(free)} if len(cluster.hosts) >= 3 and free else set()


def remap_bare(run: Run) -> bool:
    """Whether a `remap_pending` launch dies of a bare CUDA error (nothing new in the kernel log) rather than of an
    Xid 48: on every other cluster, so that each seed sees both."""
    return run.cluster.index % 2 == 1


def remap_lines(run: Run, att: Attempt, bus: str, r: random.Random) -> tuple[list[tuple[int, str]],
                                                                              list[tuple[int, str]]]:
    """A `remap_*` launch's earlier evidence: its culprit GPU's row marked for remapping before the launch began (kernel
    lines of its host: epoch ms, message) and, for `remap_reset`, the operator's drain and resume of the node around
    the GPU reset that activated the remap (slurmctld lines)."""
    e, start = att.ending, att.start_ms
    # the driver's spelling when no process is on the GPU (RM's row remapper, NVRM's Xid 63 message)
    row = f"0x{r.randrange(1 << 36):016x}"
    xid63 = (f"NVRM: Xid (PCI:0000:{bus}:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row ({row}) "
             "marked for remapping, reset gpu to activate.")
    if e.case == "remap_pending":
        at = start - r.randint(4, 30) * 60_000
        # after the node's last return to service (REMAP_QUIET_MS before the launch at the latest, `_remap_host`):
        # nothing reset the GPU between the mark and this launch
        back = max((b for h, _, b in run.repairs if h == e.host and b <= start), default=None)
        if back is not None and at <= back:
            at = (back + start) // 2
        return [(at, xid63)], []
    at = start - r.randint(45, 90) * 60_000
    drained = at + r.randint(2, 6) * 60_000
    resumed = start - r.randint(3, 12) * 60_000
    return [(at, xid63)], [(drained, f"update_node: node {e.host} reason set to: {REMAP_RESET_REASON}"),
                           (drained + 1, f"update_node: node {e.host} state set to DRAIN"),
                           (resumed, f"update_node: node {e.host} state set to RESUME")]
