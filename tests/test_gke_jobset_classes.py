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
