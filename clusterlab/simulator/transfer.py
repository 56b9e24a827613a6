"""A bulk transfer on the shared filesystem behind each of the simulator's job-wide slowdowns, as node exporter
scrapes, and the truth that the slow stretch is the filesystem's, with the outside host named.

The simulator's `slowdown` episodes (steps.py, failure_model.slowdowns_per_day) slow every rank alike. Here each
one large enough to notice becomes someone else's copy on the cluster's NFS server: the job's hosts' NFS read
rate jumps from its usual trickle to about 2.4 GB/s for the slow stretch, and a host outside the job (a node of
the cluster the run never used, else the cluster's data-transfer node) reads about 3 GB/s from the same export
meanwhile. The job's own InfiniBand traffic stays steady. truth.json gets a `filesystem_io` degradation per
transfer on the host whose NFS rate saturated first (the copy reaches the other hosts a scrape later), with
`outside_host`, as clusterlab.diagnose.telemetry_incidents reports it. The timeline is not in truth.json, so the runs
are rebuilt from its config (the same config always gives the same runs) and checked against its attempts.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass
from pathlib import Path

from clusterlab import taxonomy
from clusterlab.simulator import timeline
from clusterlab.simulator.failure_model import FailureModel
from clusterlab.simulator.fleet import Cluster, Config, clusters
from clusterlab.simulator.stamps import from_ms, iso_z
from clusterlab.simulator.timeline import Run

SCRAPE_MS = 15_000
MARGIN_MS = 10 * 60_000  # ordinary traffic scraped around a transfer: at least this, and as long as the transfer
# NOTE: a slowdown adding less than this share of the step is within what a detector must call noise (attribution
# counts a step slowed from 5 %); like the simulator's shortest stragglers, it gets no cause in the truth
NOTICEABLE = 0.06
USUAL_NFS = (0.06e9, 0.14e9)  # bytes/s the job's data loader reads between transfers
JOB_NFS = (2.2e9, 2.6e9)  # a transfer's level on a job host (each scrape within 5 % of it)
OUTSIDE_NFS = (2.8e9, 3.6e9)  # the outside host doing the copy
IB_BYTES = (18e9, 22e9)  # the job's own all-reduce traffic: high, steady, never a saturation
EXPORT = 'export="nfs01:/shared",mountaddr="10.20.0.5",protocol="tcp"'  # node exporter mountstats labels
IB_PORT = 'device="mlx5_0",port="1"'
FILE = "node-exporter.prom"


@dataclass
class Transfer:
    run: str
    attempt: int
    cluster: Cluster
    lead: str  # the job host whose NFS saturated first
    hosts: list[str]  # the attempt's hosts
    outside: str
    start_ms: int  # the first slowed step's start
    end_ms: int  # the last slowed step's end
    steps: tuple[int, int]
    factor: float
    job_bytes_s: float
    outside_bytes_s: float


def rebuild(truth: dict) -> list[tuple[Cluster, Run]]:
    """The simulated runs of a bundle's truth.json, rebuilt from its config (error if they differ from its
    attempts: a bundle from another version of the simulator)."""
    conf = dict(truth["config"])
    rates = conf.pop("failure_rates_per_gpu_hour")
    names = {f.name for f in dataclasses.fields(Config)} - {"model"}
    cfg = Config(**{k: v for k, v in conf.items() if k in names},
                 model=FailureModel(rates=rates, scale=float(conf.get("failure_scale", 1.0))))
    out = [(c, timeline.build(cfg, c)) for c in clusters(cfg)]
    want = {(a["run"], a["attempt"]): (tuple(a["hosts"]), a["start_ts"]) for a in truth["attempts"]}
    got = {(r.name, a.k): (tuple(a.hosts), iso_z(from_ms(a.start_ms))) for _, r in out for a in r.attempts}
    if got != want:
        raise ValueError("truth.json's attempts differ from a rebuild of its config: the bundle was written by "
                         "another version of the simulator")
    return out


def plan(truth: dict, rng: random.Random) -> list[Transfer]:
    """A transfer for each noticeable slowdown episode; its lead host is never a decoy's host in that attempt."""
    decoys = {(d["run"], d["attempt"], d["host"]) for d in truth.get("decoys", [])}
    out = []
    for cluster, run in rebuild(truth):
        run_hosts = {h for a in run.attempts for h in a.hosts}
        spares = [h for h in cluster.hosts if h not in run_hosts]
        for att in run.attempts:
            s = att.steps
            for kind, first, last, factor in att.slowdowns:
                if kind != "slowdown" or run.model.compute_ms * (factor - 1) < NOTICEABLE * run.model.step_ms:
                    continue
                i, j = (int(x) for x in s.step.searchsorted([first, last]))
                hosts = list(att.hosts)
                leads = [h for h in hosts if (run.name, att.k, h) not in decoys] or hosts
                out.append(Transfer(
                    run.name, att.k, cluster, rng.choice(leads), hosts,
                    rng.choice(spares) if spares else f"{cluster.hosts[0].rsplit('-', 1)[0]}-dtn01",
                    int(s.end[i] - s.step_ms[i]), int(s.end[j]), (first, last), factor,
                    rng.uniform(*JOB_NFS), rng.uniform(*OUTSIDE_NFS)))
    return out


def _grid(ms: int) -> int:
    """The first scrape at or after `ms` (every exporter is scraped on one 15 s grid)."""
    return -(-ms // SCRAPE_MS) * SCRAPE_MS


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _scrapes(busy: list[tuple[int, int, float]], job: bool, rng: random.Random) -> str:
    """One host's scrapes around its busy windows `(from_ms, to_ms, bytes_s)`: NFS counters (and IB, on a job
    host) growing at the usual rate, and at the window's rate for scrapes inside one."""
    spans = _merge([(_grid(lo - max(MARGIN_MS, hi - lo)), _grid(hi + max(MARGIN_MS, hi - lo)))
                    for lo, hi, _ in busy])
    nfs_read, nfs_write, ib_rx, ib_tx = (float(rng.randrange(10**10, 10**11)) for _ in range(4))
    out = []
    prev = None
    for lo, hi in spans:
        for t in range(lo, hi + 1, SCRAPE_MS):
            dt_s = (t - prev) / 1000 if prev is not None else 0.0
            prev = t
            level = next((b for a, z, b in busy if a <= t <= z), None)
            nfs_read += dt_s * (level * rng.uniform(0.95, 1.05) if level else rng.uniform(*USUAL_NFS))
            nfs_write += dt_s * rng.uniform(1e6, 4e6)
            out += [f"# {iso_z(from_ms(t))[:19]}Z",
                    f"node_mountstats_nfs_read_bytes_total{{{EXPORT}}} {nfs_read:.0f}",
                    f"node_mountstats_nfs_write_bytes_total{{{EXPORT}}} {nfs_write:.0f}"]
            if job:
                ib_rx += dt_s * rng.uniform(*IB_BYTES)
                ib_tx += dt_s * rng.uniform(*IB_BYTES)
                out += [f"node_infiniband_port_data_received_bytes_total{{{IB_PORT}}} {ib_rx:.0f}",
                        f"node_infiniband_port_data_transmitted_bytes_total{{{IB_PORT}}} {ib_tx:.0f}"]
    return "\n".join(out) + "\n"


def add_transfers(root: Path, truth: dict, seed: int) -> list[dict]:
    """Write each transfer's node exporter scrapes into the bundle at `root` and add its incident to `truth`
    (not written here); returns the incidents added."""
    rng = random.Random(f"{seed}:transfer")
    transfers = plan(truth, rng)
    busy: dict[str, list[tuple[int, int, float]]] = {}
    outside: set[str] = set()
    added = []
    for x in transfers:
        first_scrape = _grid(x.start_ms)
        for h in x.hosts:  # the copy's streams reach the other job hosts a scrape after the first one
            busy.setdefault(h, []).append((first_scrape if h == x.lead else first_scrape + SCRAPE_MS, x.end_ms,
                                           x.job_bytes_s))
        busy.setdefault(x.outside, []).append((first_scrape - 2 * SCRAPE_MS, x.end_ms, x.outside_bytes_s))
        outside.add(x.outside)
        inc = {"run": x.run, "attempt": x.attempt, "kind": "degradation", "failure_mode": "filesystem_io",
               "blame": taxonomy.MODES["filesystem_io"].blame, "host": x.lead, "cluster": x.cluster.name,
               "provider": x.cluster.provider, "root_ts": iso_z(from_ms(x.start_ms)),
               "end_ts": iso_z(from_ms(x.end_ms)), "exit_ts": None, "steps": list(x.steps),
               "slowdown_factor": round(x.factor, 4), "cause": "bulk_transfer", "outside_host": x.outside,
               "nfs_read_bytes_s": round(x.job_bytes_s), "outside_nfs_read_bytes_s": round(x.outside_bytes_s),
               "evidence": [f"nodes/{h}/{FILE}" for h in [x.lead, x.outside]]}
        truth["incidents"].append(inc)
        added.append(inc)
    for host, windows in sorted(busy.items()):
        path = root / "nodes" / host / FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_scrapes(windows, host not in outside, rng))
    truth["incidents"].sort(key=lambda i: (i["run"], i["attempt"], i["root_ts"] or ""))
    return added
