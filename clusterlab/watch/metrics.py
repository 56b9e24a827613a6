"""Prometheus metrics of watched runs (via prometheus_client): goodput, step rate, lost GPU-hours, incidents."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable

import duckdb
import polars as pl
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_text
from prometheus_client.registry import Collector

from clusterlab import store
from clusterlab.account import attribution
from clusterlab.account.ledger import LedgerError

OPEN_STATUSES = (None, "open", "investigating")  # an annotation's status that leaves an incident open


def families(con: duckdb.DuckDBPyConnection, run: str | None = None) -> list[Metric]:
    """Every metric of the watched runs (or one run), read from the store now."""
    runs = store.frame(con, "SELECT * FROM watch_state WHERE $run IS NULL OR run = $run ORDER BY run", {"run": run})
    good = GaugeMetricFamily("clusterlab_goodput_ratio", "Productive GPU-hours / GPU-hours so far (ETTR).",
                             labels=["run"])
    rate = GaugeMetricFamily("clusterlab_step_rate_ratio", "Current step rate / the run's baseline step rate.",
                             labels=["run"])
    step_s = GaugeMetricFamily("clusterlab_step_seconds", "Seconds per step: the baseline and the recent median.",
                               labels=["run", "window"], unit="seconds")
    last = GaugeMetricFamily("clusterlab_last_step", "The newest step of the run's current attempt.", labels=["run"])
    lost = GaugeMetricFamily("clusterlab_lost_gpu_hours", "GPU-hours lost so far, by category, host and provider.",
                             labels=["run", "category", "host", "provider"])
    open_inc = GaugeMetricFamily("clusterlab_open_incidents", "Incidents not annotated resolved, by failure mode.",
                                 labels=["run", "failure_mode"])
    detections = CounterMetricFamily("clusterlab_watch_detections", "Detections recorded by clusterlab watch.",
                                     labels=["run", "kind"])
    for r in runs.iter_rows(named=True):
        name = r["run"]
        if r["goodput"] is not None:
            good.add_metric([name], r["goodput"])
        ratio = json.loads(r["state_json"] or "{}").get("rate_ratio")
        if ratio is not None:
            rate.add_metric([name], ratio)
        for window, v in (("baseline", r["baseline_step_s"]), ("recent", r["recent_step_s"])):
            if v is not None:
                step_s.add_metric([name, window], v)
        if r["last_step"] is not None:
            last.add_metric([name], r["last_step"])
        _lost_and_incidents(con, name, lost, open_inc)
    counts = store.frame(con, """SELECT run, kind, count(*) AS n FROM watch_events
                                 WHERE $run IS NULL OR run = $run GROUP BY ALL ORDER BY ALL""", {"run": run})
    for r in counts.iter_rows(named=True):
        detections.add_metric([r["run"], r["kind"]], r["n"])
    return [good, rate, step_s, last, lost, open_inc, detections]


def _lost_and_incidents(con, run: str, lost: GaugeMetricFamily, open_inc: GaugeMetricFamily) -> None:
    try:
        a = attribution.attribute(con, run)
        inc = a.incidents
        rows = (a.rows.filter(pl.col("category") != "productive")
                .group_by("category", "host", "provider").agg(pl.col("gpu_hours").sum()).sort(pl.all()))
        for r in rows.iter_rows(named=True):
            lost.add_metric([run, r["category"], r["host"] or "", r["provider"] or ""], r["gpu_hours"])
    except (LedgerError, KeyError):  # no ledger yet: the incidents alone
        inc, _ = attribution.incidents_of(con, run, attribution.incidents.Settings())
    status = inc["status"] if "status" in inc.columns else pl.Series([None] * inc.height, dtype=pl.String)
    still_open = inc.with_columns(status=status).filter(pl.col("status").is_null()
                                                        | pl.col("status").is_in([s for s in OPEN_STATUSES if s]))
    for r in still_open.group_by("failure_mode").len().sort("failure_mode").iter_rows(named=True):
        open_inc.add_metric([run, r["failure_mode"] or "unknown"], r["len"])


class Snapshot(Collector):
    """The metrics of the last tick, served between ticks (the store is not read on a scrape)."""

    def __init__(self) -> None:
        self.metrics: list[Metric] = []

    def collect(self) -> Iterable[Metric]:
        return list(self.metrics)


def registry_of(metrics: list[Metric]) -> CollectorRegistry:
    """A registry holding these metrics."""
    reg = CollectorRegistry(auto_describe=False)
    snap = Snapshot()
    snap.metrics = metrics
    reg.register(snap)
    return reg


def text(metrics: list[Metric]) -> str:
    """OpenMetrics text of these metrics."""
    return openmetrics_text(registry_of(metrics)).decode()


def write_textfile(path: str, metrics: list[Metric]) -> None:
    """Write them for node-exporter's textfile collector (atomically: a scrape never reads half a file)."""
    from prometheus_client import write_to_textfile

    write_to_textfile(path, registry_of(metrics))


def listen_address(spec: str, any_host: bool) -> tuple[str, int]:
    """`PORT` or `HOST:PORT` -> (host, port); a host that is not loopback only with `any_host`."""
    host, _, port = spec.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--metrics {spec!r}: expected PORT or HOST:PORT")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not any_host:
        raise ValueError(f"--metrics {spec!r}: {host} is not loopback; add --metrics-any-host to serve it there")
    return host, int(port)


def serve(host: str, port: int) -> tuple[Snapshot, object]:
    """An OpenMetrics endpoint on host:port serving a Snapshot the watch refreshes each tick."""
    from prometheus_client import start_http_server

    snap = Snapshot()
    reg = CollectorRegistry(auto_describe=False)
    reg.register(snap)
    server, _thread = start_http_server(port, addr=host, registry=reg)
    return snap, server
