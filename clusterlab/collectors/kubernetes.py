"""Kubernetes' verdicts on a pod's containers: killed for memory → host_oom events.

Where Kubernetes schedules the training, the kubelet, not Slurm or the kernel log a user kept, says a container died
for memory: its cgroup limit (`OOMKilled`, exit code 137) or the node's memory pressure (an eviction). What users
paste: `kubectl describe pod`, `kubectl get events`, a pod's status as YAML or JSON.

    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
    6m02s   Warning   Evicted   pod/train-3-7c9f5   The node was low on resource: memory. Container trainer was ...
    5m48s   Warning   Evicted   pod/train-3-q2m8d   The node had condition: [MemoryPressure].
    reason: OOMKilled        "reason": "OOMKilled"

None of these carries a time of its own (an event's age is relative to when it was listed).
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, search

NAME = "kubernetes"
EXCLUSIVE = False

_OOM_KILLED = r"(?:^|\s|\")[Rr]eason\"?:\s*\"?OOMKilled\b"
_EVICTED = r"The node was low on resource: memory\.|The node had condition: \[MemoryPressure\]"
PATTERN = f"{_OOM_KILLED}|{_EVICTED}"
SNIFF_HINT = (b"oomkilled", b"low on resource: memory", b"[memorypressure]")


def sniff(head: bytes, path: str) -> bool:
    """A container's OOMKilled reason or a memory eviction in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One host_oom event per line that says a container died for memory."""
    out = Parsed()
    text = pl.col("text")
    kind = pl.when(text.str.contains(_OOM_KILLED)).then(pl.lit("k8s_oom_killed")).otherwise(pl.lit("k8s_evicted"))
    out.add("events", lines.select(
        pl.col("line").cast(pl.Int64), pl.lit(None, pl.Datetime("us")).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"), kind.alias("kind"), pl.lit("host_oom").alias("failure_mode"),
        pl.lit("error").alias("severity"), text.str.strip_chars().alias("text"),
    ))
    return out
