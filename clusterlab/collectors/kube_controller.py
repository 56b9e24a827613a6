"""kube-controller-manager's own log (klog): the node lifecycle controller marking a node's pods NotReady and the taint
manager evicting them → node_failure events.

Where training runs in pods and nobody exported the Event objects, the controller's log still says when it stopped
hearing from a node, as structured klog lines (Kubernetes 1.19+):

    I0112 10:56:43.650000  1 event.go:291] "Event occurred" object="team/neox-worker-5" kind="Pod" apiVersion="v1"
        type="Warning" reason="NodeNotReady" message="Node is not ready"
    I0112 11:01:43.750000  1 taint_manager.go:106] "NoExecuteTaintManager is deleting pod" pod="team/neox-worker-5"

A NotReady (of a node, or of the pods on it) that a `NodeReady` of the same object follows in the same log recovered:
no mode (as slurmctld's "not responding" that a "responding" follows). The host is the object's name: the Node, or
the Pod where the run's hosts are its pods. klog prints no year (`ctx.year`); its time is the controller host's,
usually UTC (`ctx.tz`).
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, file_of_line, json_detail, local_to_utc, search, yearless

NAME = "kube_controller"
EXCLUSIVE = False

_EVENT = (r'"Event occurred" object="(?:[^"/]*/)?(?P<obj>[^"]+)" kind="(?P<okind>Pod|Node)" .*?reason="(?P<reason>'
          r'NodeNotReady|NodeReady|TaintManagerEviction)"')
_EVICT = r'"NoExecuteTaintManager is deleting pod" pod="(?:[^"/]*/)?(?P<pod>[^"]+)"'
PATTERN = f"{_EVENT}|{_EVICT}"
SNIFF_HINT = (b"reason=\"nodenotready\"", b"noexecutetaintmanager is deleting pod")
_KLOG = r"^[IWEF](\d{4} \d\d:\d\d:\d\d(?:\.\d+)?) "


def sniff(head: bytes, path: str) -> bool:
    """The controller's NotReady event or its taint manager's eviction of a pod, in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per NotReady, eviction or Ready line; a NotReady or eviction no later Ready of its object follows is
    the node lost."""
    out = Parsed()
    text = pl.col("text")
    f = lines.with_columns(text.str.extract_groups(_EVENT).alias("_e"), pod=text.str.extract(_EVICT, 1)).unnest("_e")
    f = f.filter(pl.col("reason").is_not_null() | pl.col("pod").is_not_null()).with_columns(
        obj=pl.coalesce("obj", "pod"), reason=pl.coalesce("reason", pl.lit("TaintManagerEviction")))
    if not f.height:
        return out
    ts = yearless((pl.lit(f"{ctx.year}") + text.str.extract(_KLOG, 1)).str.to_datetime(
        "%Y%m%d %H:%M:%S%.f", time_unit="us", strict=False), ctx)
    f = f.with_columns(ts=local_to_utc(ts, ctx.tz), _f=file_of_line()).sort("line")
    ready = pl.col("reason") == "NodeReady"
    # lost: neither a Ready itself nor followed by a Ready of the same object in the same file (rows in line order)
    lost = ~ready.cast(pl.Int32).reverse().cum_max().reverse().over("_f", "obj").cast(pl.Boolean)
    out.add("events", f.select(
        pl.col("line").cast(pl.Int64), pl.col("ts").cast(pl.Datetime("us")), pl.col("obj").alias("host"),
        pl.when(pl.col("reason") == "TaintManagerEviction").then(pl.lit("k8s_pod_evicted"))
        .when(ready).then(pl.lit("k8s_node_ready")).otherwise(pl.lit("k8s_node_not_ready")).alias("kind"),
        pl.when(lost).then(pl.lit("node_failure")).alias("failure_mode"),
        pl.when(lost).then(pl.lit("error")).otherwise(pl.lit("info")).alias("severity"),
        text.str.strip_chars().str.slice(0, 500).alias("text"),
        json_detail({"reason": pl.col("reason"), "object": pl.col("obj")}).alias("detail"),
    ))
    return out
