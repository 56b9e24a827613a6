"""Classes of defect the gke_a3_jobset campaign (tests/campaigns/gke_a3_jobset.py: a JobSet of torchrun pods on GKE,
Kueue, gcsfuse) showed, each on evidence of our own:

- `kubectl get events -A -o json` saves the Event objects as one document, a `List` whose `items` are the events
  (pretty-printed): read as a stream of them, as an exporter's JSON lines are; a cut document keeps what came before
  the cut and says where;
- a pod of an Indexed Job (a JobSet's, a PyTorchJob's) is named `<job>-<index>-<5 random>` and its hostname, what its
  processes print, is `<job>-<index>`: that hostname is the node the pod was bound to at the time.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from clusterlab import Lab

T0 = dt.datetime(2026, 9, 3, 7, 0, 0)


def _event(t: dt.datetime, kind: str, name: str, reason: str, message: str) -> dict:
    stamp = f"{t:%Y-%m-%dT%H:%M:%SZ}"
    return {"apiVersion": "v1", "kind": "Event", "count": 1, "type": "Normal", "reason": reason, "message": message,
            "firstTimestamp": stamp, "lastTimestamp": stamp,
            "involvedObject": {"kind": kind, "name": name, "namespace": "train"},
            "metadata": {"name": f"{name}.17f3a", "namespace": "train", "creationTimestamp": stamp},
            "source": {"component": "default-scheduler"}}


def _listing(events: list[dict]) -> str:
    return json.dumps({"apiVersion": "v1", "items": events, "kind": "List",
                       "metadata": {"resourceVersion": ""}}, indent=4) + "\n"


def test_a_kubectl_events_list_document_is_read_event_by_event(tmp_path: Path) -> None:
    events = [_event(T0, "Pod", "pt-w-0-1-q8z2m", "Scheduled", "Successfully assigned train/pt-w-0-1-q8z2m to gn-04"),
              _event(T0 + dt.timedelta(minutes=40), "Node", "gn-04", "NodeNotReady",
                     "Node gn-04 status is now: NodeNotReady")]
    (tmp_path / "events.json").write_text(_listing(events))
    with Lab(":memory:") as lab:
        summary = lab.ingest(tmp_path / "events.json")
        got = lab.sql("SELECT ts, host, kind, failure_mode FROM events ORDER BY ts").rows()
    assert not summary.problems, summary.problems
    assert got == [(T0, "gn-04", "k8s_pod_scheduled", None),
                   (T0 + dt.timedelta(minutes=40), "gn-04", "k8s_node_not_ready", "node_failure")]


def test_a_cut_events_list_keeps_the_events_before_the_cut(tmp_path: Path) -> None:
    events = [_event(T0 + dt.timedelta(minutes=m), "Node", f"gn-0{m}", "NodeNotReady",
                     f"Node gn-0{m} status is now: NodeNotReady") for m in (1, 2, 3)]
    text = _listing(events)
    (tmp_path / "events.json").write_text(text[: text.index('"gn-03"')])  # the copy ran out of disk
    with Lab(":memory:") as lab:
        summary = lab.ingest(tmp_path / "events.json")
        hosts = lab.sql("SELECT host FROM events ORDER BY ts")["host"].to_list()
    assert hosts == ["gn-01", "gn-02"]
    assert any("events.json" in p and "cut short" in p for p in summary.problems), summary.problems


def test_an_indexed_job_pods_hostname_is_the_node_it_was_bound_to_then(tmp_path: Path) -> None:
    # pod pt-w-0-3 (named pt-w-0-3-<suffix>) runs on gn-02; a pod of another job whose name shares the stem's start
    # (pt-w-0-31-...) is no match
    (tmp_path / "inventory.toml").write_text('[providers.p]\nusd_per_gpu_hour = 2.0\n\n[clusters.k]\nprovider = "p"\n'
                                             'gpus_per_node = 8\nnodes = "gn-[01-08]"\n')
    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "events.json").write_text(_listing([
        _event(T0, "Pod", "pt-w-0-3-x7k2p", "Scheduled", "Successfully assigned train/pt-w-0-3-x7k2p to gn-02"),
        _event(T0 + dt.timedelta(hours=2), "Pod", "pt-w-0-31-m4d9t", "Scheduled",
               "Successfully assigned train/pt-w-0-31-m4d9t to gn-07")]))
    warn = "pt-w-0-3:212:1871 [0] transport/net_ib.cc:102 NCCL WARN NET/IB : mlx5_0:1 Got async event : port error"
    (tmp_path / "runs" / "pt").mkdir(parents=True)
    (tmp_path / "runs" / "pt" / "pt-w-0-3.log").write_text("".join(
        f"{T0 + dt.timedelta(hours=h):%Y-%m-%dT%H:%M:%S}.000000000Z stderr F {warn}\n" for h in (1, 3)))
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        hosts = lab.sql("SELECT host FROM events WHERE source = 'nccl' ORDER BY ts")["host"].to_list()
    assert hosts == ["gn-02", "gn-02"]


def _worker_log(t0: dt.datetime, host: str, rank: int, fail_at: dt.datetime | None) -> str:
    out = []
    for n in range(1, 31):
        t = t0 + dt.timedelta(seconds=6 * n)
        out.append(f"[rank{rank}]:{t:%Y-%m-%d %H:%M:%S},000 - root - INFO - step: {n:2d}  loss:  3.2000  "
                   "memory: 61.20GiB"
                   "(77.00%)  wps: 3,900  mfu: 37.00%")
    if fail_at is not None:
        out += [f"[rank{rank}]:{fail_at:%Y-%m-%d %H:%M:%S},000 - root - INFO - Saving the checkpoint (or staging if "
                "async is enabled).",
                f"[rank{rank}]: Traceback (most recent call last):",
                f'[rank{rank}]:   File "/app/train.py", line 412, in <module>',
                f"[rank{rank}]:     checkpointer.save(step)",
                f"[rank{rank}]: OSError: [Errno 5] Input/output error: '/mnt/ckpt/step-30/__{rank}_0.distcp'"]
    return "\n".join(out) + "\n"


def _three_host_run(root: Path) -> tuple[Path, dt.datetime]:
    """A run `io` on three hosts of one cluster: its attempt's folder, and when its save began."""
    (root / "inventory.toml").write_text('[providers.p]\nusd_per_gpu_hour = 2.0\n\n[clusters.k]\nprovider = "p"\n'
                                         'gpus_per_node = 8\nnodes = "gn-[01-03]"\n')
    att = root / "runs" / "io" / "attempt-1"
    att.mkdir(parents=True)
    (att.parent / "run.toml").write_text('cluster = "k"\ngpus = 24\ntokens_per_step = 65536\nflops_per_token = 1e9\n')
    return att, T0 + dt.timedelta(seconds=185)


def test_an_io_error_the_ranks_of_several_hosts_raised_is_the_storages_not_one_hosts(tmp_path: Path) -> None:
    att, save = _three_host_run(tmp_path)
    for i, host in enumerate(("gn-01", "gn-02", "gn-03")):
        (att / f"{host}.log").write_text(_worker_log(T0, host, 8 * i, save + dt.timedelta(seconds=2 + i)))
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path)
        inc = lab.attribute("io").incidents.filter(kind="attempt_end").row(0, named=True)
        hosts = lab.sql("SELECT DISTINCT host FROM events WHERE failure_mode = 'filesystem_io'")["host"].to_list()
    assert sorted(hosts) == ["gn-01", "gn-02", "gn-03"]
    assert (inc["failure_mode"], inc["host"]) == ("filesystem_io", None), inc


def test_a_line_naming_no_host_in_a_pods_own_log_is_the_pods_node(tmp_path: Path) -> None:
    # `kubectl logs POD > POD.log`: torchrun's agent names no host when it must SIGKILL a wedged worker
    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "events.json").write_text(_listing([
        _event(T0, "Pod", "pt-w-0-6-r2d2x", "Scheduled", "Successfully assigned train/pt-w-0-6-r2d2x to gn-05")]))
    (tmp_path / "runs" / "pt" / "pods").mkdir(parents=True)
    t = T0 + dt.timedelta(hours=1)
    (tmp_path / "runs" / "pt" / "pods" / "pt-w-0-6-r2d2x.log").write_text(
        f"W{t:%m%d %H:%M:%S}.118000 1 torch/distributed/elastic/multiprocessing/api.py:914] Unable to shutdown process "
        "4411 via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path, year=2026)
        got = lab.sql("SELECT kind, host FROM events WHERE source = 'torch'").rows()
    assert got == [("worker_unkillable", "gn-05")], got


def test_a_fuse_mounts_errors_on_several_hosts_are_the_storages_not_the_first_hosts(tmp_path: Path) -> None:
    # one rank's traceback, and every node's own FUSE client (its syslog) failing the same writes
    att, save = _three_host_run(tmp_path)
    for i, host in enumerate(("gn-01", "gn-02", "gn-03")):
        (att / f"{host}.log").write_text(_worker_log(T0, host, 8 * i, save + dt.timedelta(seconds=40) if i == 0
                                                     else None))
        (tmp_path / "nodes" / host).mkdir(parents=True)
        at = save + dt.timedelta(seconds=9 + i)
        (tmp_path / "nodes" / host / "syslog").write_text(
            f"{at:%b %d %H:%M:%S} {host} blobfuse2[5120]: [/mnt/ckpt] LOG_ERR [block_cache.go (1622)]: BlockCache::"
            f"upload : Failed to stage to block 3 of 812=>step-30/__{8 * i}_0.distcp [context deadline exceeded]\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path, year=2026)
        inc = lab.attribute("io").incidents.filter(kind="attempt_end").row(0, named=True)
    assert (inc["failure_mode"], inc["host"]) == ("filesystem_io", None), inc


def test_kueues_preemption_of_a_workload_ends_the_attempt_of_the_job_it_admitted(tmp_path: Path) -> None:
    # Kueue names the workload of JobSet `pt` `jobset-pt-<5 hex>`; its pods pt-w-0-<i>-<suffix> ran on gn-01..02.
    # Another tenant's workload preempted at the same time owns no pod of ours: it is not our attempt's
    (tmp_path / "inventory.toml").write_text('[providers.p]\nusd_per_gpu_hour = 2.0\n\n[clusters.k]\nprovider = "p"\n'
                                             'gpus_per_node = 8\nnodes = "gn-[01-04]"\n')
    end = T0 + dt.timedelta(seconds=190)
    events = [_event(T0 - dt.timedelta(seconds=30), "Pod", f"pt-w-0-{i}-k{i}x9z", "Scheduled",
                     f"Successfully assigned train/pt-w-0-{i}-k{i}x9z to gn-0{i + 1}") for i in range(2)]
    events += [_event(end - dt.timedelta(seconds=4), "Workload", "jobset-pt-3fa9c", "Preempted",
                      "Preempted to accommodate a workload (UID: 0b6c) due to prioritization in the ClusterQueue"),
               _event(end - dt.timedelta(seconds=4), "Workload", "jobset-other-77d1e", "Preempted",
                      "Preempted to accommodate a workload (UID: 91aa) due to prioritization in the ClusterQueue")]
    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "events.json").write_text(_listing(events))
    att = tmp_path / "runs" / "pt" / "attempt-1"
    att.mkdir(parents=True)
    (att.parent / "run.toml").write_text('cluster = "k"\ngpus = 16\ntokens_per_step = 65536\nflops_per_token = 1e9\n')
    for i in range(2):
        init = f"pt-w-0-{i}:88:88 [0] NCCL INFO Bootstrap : Using eth0:10.8.0.{i + 10}<0>\n"
        log = init + _worker_log(T0, f"gn-0{i + 1}", 8 * i, None)
        log += (f"W{end:%m%d %H:%M:%S}.412000 1 torch/distributed/elastic/agent/server/api.py:704] Received "
                "Signals.SIGTERM death signal, shutting down workers\n")
        (att / f"pt-w-0-{i}.log").write_text(log)
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path, year=2026)
        inc = lab.attribute("pt").incidents.filter(kind="attempt_end").row(0, named=True)
        tied = lab.sql("SELECT text FROM events WHERE kind = 'k8s_workload_preempted' AND run = 'pt'")["text"]
    assert (inc["failure_mode"], inc["host"]) == ("preemption", None), inc
    assert tied.to_list() and all("jobset-pt-" in t for t in tied.to_list()), tied
