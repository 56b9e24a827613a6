"""Kubernetes' verdicts on a pod's containers: killed for memory → host_oom events; a pod the node's shutdown or loss
took away → preemption / node_failure events; a Job past its deadline → time_limit, a Kueue workload evicted for a
higher-priority one → preemption events.

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

The node controller marks the pods of a node that stopped reporting (`kubectl get pods` shows `NodeLost`, `Unknown`
since, the status `reason: NodeLost`, 'Node X which was running pod Y is unresponsive'), and the node's conditions say
it (`NodeStatusUnknown`, 'Kubelet stopped posting node status.', `kubectl get nodes` showing it `NotReady`). A Job's
`activeDeadlineSeconds` is its wall time (`reason: DeadlineExceeded`, 'Job was active longer than specified
deadline'; a pod's own 'Pod was active on the node longer than the specified deadline'), and Kueue evicts an admitted
workload to make room for a higher-priority one ('Preempted to accommodate a workload (UID: ..., JobUID: ...) due to
prioritization in the ClusterQueue'):

    llama-ft-worker-1    1/1     NodeLost   0          9h    10.244.8.14   gpu-node-08
    message: Job was active longer than specified deadline
    reason: DeadlineExceeded

None of these carries a time of its own (an event's age is relative to when it was listed).
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, search

NAME = "kubernetes"
EXCLUSIVE = False

# (a pod's status `reason: OOMKilled`; a container's own state as `docker inspect` prints it, `"OOMKilled": true`)
# ... or the STATUS column of `kubectl get pods`)
_OOM_KILLED = r"(?:^|\s|\")[Rr]eason\"?:\s*\"?OOMKilled\b|\"OOMKilled\":\s*true\b|(?m:^)\S+\s+\d+/\d+\s+OOMKilled\s+\d+"
_EVICTED = r"The node was low on resource: memory\.|The node had condition: \[MemoryPressure\]"
_SHUTDOWN = r"Pod was terminated in response to imminent node shutdown"
# NOTE: ... or of a node that stopped reporting: the status reason, its message, or the STATUS column of a pods table
_NODE_GONE = (r"\b(?:PodGC|GCPControllerManager|[A-Za-z]+ControllerManager): node no longer exists"
              r"|(?:^|\s|\")[Rr]eason\"?:\s*\"?NodeLost\b|\bwhich was running pod \S+ is unresponsive"
              # (`Unknown` since Kubernetes 1.x replaced NodeLost: the node controller cannot reach the pod's node)
              r"|(?m:^)\S+\s+\d+/\d+\s+(?:NodeLost|Unknown)\s+\d+"
              # `kubectl get nodes`: a node whose kubelet no longer reports Ready (NAME STATUS [ROLES] AGE VERSION)
              r"|(?m:^)\S+\s+NotReady(?:,SchedulingDisabled)?\s+(?:\S+\s+)?\d+[smhdy]\w*\s+v\d+\."
              # the node's own conditions once its kubelet went silent (`kubectl describe node`, its status JSON)
              r"|Kubelet stopped posting node status")
# the Job's (or a pod's) activeDeadlineSeconds: the wall time it was given ran out
_DEADLINE = (r"(?:^|\s|\")[Rr]eason\"?:\s*\"?DeadlineExceeded\b|Job was active longer than specified deadline"
             r"|Pod was active on the node longer than the specified deadline")
_KUEUE_PREEMPTED = r"Preempted to accommodate a workload\b"
PATTERN = f"{_OOM_KILLED}|{_EVICTED}|{_SHUTDOWN}|{_NODE_GONE}|{_DEADLINE}|{_KUEUE_PREEMPTED}"
SNIFF_HINT = (b"oomkilled", b"low on resource: memory", b"[memorypressure]", b"imminent node shutdown",
              b"node no longer exists", b"nodelost", b"is unresponsive", b"kubelet stopped posting",
              b"deadlineexceeded", b"longer than specified deadline", b"longer than the specified deadline",
              b"preempted to accommodate", b"notready", b"restarts")


def sniff(head: bytes, path: str) -> bool:
    """A container's OOMKilled reason, a memory eviction or a pod's node shutdown or loss in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per line that says a container died for memory or its node took the pod away."""
    out = Parsed()
    text = pl.col("text")
    kind = (pl.when(text.str.contains(_OOM_KILLED)).then(pl.lit("k8s_oom_killed"))
            .when(text.str.contains(_SHUTDOWN)).then(pl.lit("k8s_node_shutdown"))
            .when(text.str.contains(_NODE_GONE)).then(pl.lit("k8s_node_gone"))
            .when(text.str.contains(_DEADLINE)).then(pl.lit("k8s_deadline"))
            .when(text.str.contains(_KUEUE_PREEMPTED)).then(pl.lit("kueue_preempted")).otherwise(pl.lit("k8s_evicted")))
    # NOTE: a pod's status repeats its message in a condition: one event per line is kept (each says it)
    mode = (pl.when(kind.is_in(["k8s_node_shutdown", "kueue_preempted"])).then(pl.lit("preemption"))
            .when(kind == "k8s_node_gone").then(pl.lit("node_failure"))
            .when(kind == "k8s_deadline").then(pl.lit("time_limit")).otherwise(pl.lit("host_oom")))
    out.add("events", lines.select(
        pl.col("line").cast(pl.Int64), pl.lit(None, pl.Datetime("us")).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"), kind.alias("kind"), mode.alias("failure_mode"),
        pl.lit("error").alias("severity"), text.str.strip_chars().alias("text"),
    ))
    return out
