"""Kubernetes' verdicts on a pod's containers: killed for memory → host_oom events; a pod the node's shutdown or loss
took away → preemption / node_failure events.

Where Kubernetes schedules the training, the kubelet, not Slurm or the kernel log a user kept, says a container died
for memory: its cgroup limit (`OOMKilled`, exit code 137) or the node's memory pressure (an eviction). What users
paste: `kubectl describe pod`, `kubectl get events`, a pod's status as YAML or JSON.

    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
    6m02s   Warning   Evicted   pod/train-3-7c9f5   The node was low on resource: memory. Container trainer was ...
    5m48s   Warning   Evicted   pod/train-3-q2m8d   The node had condition: [MemoryPressure].
    reason: OOMKilled        "reason": "OOMKilled"

A pod's status names why its node took it away (its `DisruptionTarget` condition and message): the kubelet's graceful
shutdown of a node about to go (a spot VM reclaimed, a cloud's maintenance) or the garbage collector removing the pods
of a node that no longer exists (a VM deleted or failed under them):

    message: Pod was terminated in response to imminent node shutdown.
    message: 'PodGC: node no longer exists'          reason: DeletionByPodGC

None of these carries a time of its own (an event's age is relative to when it was listed).
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, search

NAME = "kubernetes"
EXCLUSIVE = False

_OOM_KILLED = r"(?:^|\s|\")[Rr]eason\"?:\s*\"?OOMKilled\b"
_EVICTED = r"The node was low on resource: memory\.|The node had condition: \[MemoryPressure\]"
_SHUTDOWN = r"Pod was terminated in response to imminent node shutdown"
_NODE_GONE = r"\b(?:PodGC|GCPControllerManager|[A-Za-z]+ControllerManager): node no longer exists"
PATTERN = f"{_OOM_KILLED}|{_EVICTED}|{_SHUTDOWN}|{_NODE_GONE}"
SNIFF_HINT = (b"oomkilled", b"low on resource: memory", b"[memorypressure]", b"imminent node shutdown",
              b"node no longer exists")


def sniff(head: bytes, path: str) -> bool:
    """A container's OOMKilled reason, a memory eviction or a pod's node shutdown or loss in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per line that says a container died for memory or its node took the pod away."""
    out = Parsed()
    text = pl.col("text")
    kind = (pl.when(text.str.contains(_OOM_KILLED)).then(pl.lit("k8s_oom_killed"))
            .when(text.str.contains(_SHUTDOWN)).then(pl.lit("k8s_node_shutdown"))
            .when(text.str.contains(_NODE_GONE)).then(pl.lit("k8s_node_gone")).otherwise(pl.lit("k8s_evicted")))
    # NOTE: a pod's status repeats its message in a condition: one event per line is kept (each says it)
    mode = (pl.when(kind == "k8s_node_shutdown").then(pl.lit("preemption"))
            .when(kind == "k8s_node_gone").then(pl.lit("node_failure")).otherwise(pl.lit("host_oom")))
    out.add("events", lines.select(
        pl.col("line").cast(pl.Int64), pl.lit(None, pl.Datetime("us")).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"), kind.alias("kind"), mode.alias("failure_mode"),
        pl.lit("error").alias("severity"), text.str.strip_chars().alias("text"),
    ))
    return out
