"""Kubernetes Event objects as JSON lines: what an event exporter keeps of `kubectl get events` (the API server
forgets them after an hour), each with its own time and its node.

    {"involvedObject":{"kind":"Node","name":"gk-a19"},"reason":"NodeNotReady","message":"Node gk-a19 status is now:
     NodeNotReady","source":{"component":"node-controller"},"lastTimestamp":"2026-05-19T11:48:21Z","type":"Normal",...}

Read from them: a node that stops reporting (`NodeNotReady` that no `NodeReady` of the same node follows: like
slurmctld's "not responding" that a "responding" follows, a NotReady that recovers lost nothing), a cloud taking a
node back or draining it for its maintenance (a scheduled event, a spot interruption, a preemption: AKS node
auto-drain, aws-node-termination-handler, Karpenter, GKE), and node-problem-detector's `OOMKilling`; a pod `Scheduled`
to its node is kept (no mode) as when that node's GPUs were allocated to it. Failed scheduling, image pulls and the
training operator's pod churn are consequences: they stay out. The time is `eventTime`, else
`lastTimestamp` (UTC); the node is the involved Node, else the reporting kubelet's host.

The same objects saved by `kubectl get events -A -o json` come as one document, a `List` whose `items` are the
events (pretty-printed or on one line): read as a stream of them (`parse_document`), each as a line of JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import polars as pl

from clusterlab.collectors._base import Context, Parsed, sniff_jsonl

NAME = "k8s_events"
PATTERN = None
EXCLUSIVE = True
SNIFF_HINT = (b"\"involvedobject\"",)
# NOTE: a cloud's notice that it takes the node back or moves it for maintenance, in the reason or the message
_RECLAIM = (r"(?i)preempt|spot ?interrupt|interruption|reclaim|(?:redeploy|reboot|terminate|freeze)_?scheduled"
            r"|scheduled ?event|vmeventscheduled|maintenance")


def sniff(head: bytes, path: str) -> bool:
    """Most of the head's lines are Event objects (an involved object and a reason), or the head opens a List of
    them (`kubectl get events -o json`)."""
    return document(head) or sniff_jsonl(head, lambda o: isinstance(o.get("involvedObject"), dict) and "reason" in o)


def document(head: bytes) -> bool:
    """A `kubectl get ... -o json` List of Event objects: one JSON document, read as a stream of its items."""
    start = head.lstrip()[:200]
    return start.startswith(b"{") and b'"items"' in start and b'"involvedObject"' in head


_DOC_EVENTS = 50_000  # events held before their rows are handed on


def parse_document(pieces: Iterator[tuple[int, bytes]], ctx: Context) -> Iterator[Parsed]:
    """The events of a List document, each read as the line of JSON an exporter would have written (cited at the line
    its piece of the document began on: the stream tells no finer place)."""
    import ijson  # NOTE: only a List dump needs it

    items = ijson.sendable_list()
    coro = ijson.items_coro(items, "items.item", use_float=True, multiple_values=True)
    rows: list[tuple[int, str]] = []
    warnings: list[str] = []
    line = 1
    try:
        for line, piece in pieces:
            coro.send(piece)
            rows += [(line, json.dumps(o)) for o in items if isinstance(o, dict)]
            items.clear()
            if len(rows) >= _DOC_EVENTS:
                yield parse(pl.DataFrame(rows, schema={"line": pl.Int64, "text": pl.String}, orient="row"), ctx)
                rows = []
        coro.close()
    except ijson.JSONError as e:
        warnings.append(f"line {line}: not valid JSON, or cut short: read up to here ({str(e).splitlines()[0][:80]})")
    rows += [(line, json.dumps(o)) for o in items if isinstance(o, dict)]
    out = parse(pl.DataFrame(rows, schema={"line": pl.Int64, "text": pl.String}, orient="row"), ctx)
    out.warnings += warnings
    out.unparsed += len(warnings)
    yield out


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per Event object that says what happened to a node; the others are read and left out."""
    out = Parsed()

    def field(path: str) -> pl.Expr:
        return pl.col("text").str.json_path_match(path)

    obj = lines.filter(pl.col("text").str.contains(r"^\s*\{")).with_columns(
        reason=field("$.reason"), message=field("$.message"), obj_kind=field("$.involvedObject.kind"),
        obj=field("$.involvedObject.name"), reporter=pl.coalesce(field("$.source.host"), field("$.reportingInstance")),
        stamp=pl.coalesce(field("$.eventTime"), field("$.lastTimestamp"), field("$.firstTimestamp"),
                          field("$.metadata.creationTimestamp")),
    )
    bad = lines.join(obj.filter(pl.col("reason").is_not_null()).select("line"), on="line", how="anti")
    out.unparsed = bad.height
    # NOTE: the scheduler binding a pod to its node: when the node's GPUs became the pod's (a gang's pods at once)
    assigned = pl.col("message").str.extract(r"^Successfully assigned \S+ to (\S+)$", 1)
    node = (pl.when(pl.col("obj_kind") == "Node").then(pl.col("obj"))
            .when(pl.col("reason") == "Scheduled").then(assigned).otherwise(pl.col("reporter")))
    said = pl.concat_str([pl.col("reason").fill_null(""), pl.col("message").fill_null("")], separator=" ")
    is_node = (pl.col("obj_kind") == "Node").fill_null(False)
    f = obj.with_columns(
        host=pl.when(pl.col("obj_kind") == "Workload").then(pl.lit(None, pl.String))
        .when(node.str.len_chars() > 0).then(node).otherwise(pl.lit(ctx.host, pl.String)),
        ts=pl.col("stamp").str.strip_suffix("Z").str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", time_unit="us", strict=False),
        kind=pl.when(pl.col("reason") == "OOMKilling").then(pl.lit("k8s_oom_killing"))
        .when(is_node & (pl.col("reason") == "NodeNotReady")).then(pl.lit("k8s_node_not_ready"))
        .when(is_node & (pl.col("reason") == "NodeReady")).then(pl.lit("k8s_node_ready"))
        .when(is_node & said.str.contains(_RECLAIM)).then(pl.lit("k8s_node_reclaim"))
        .when((pl.col("reason") == "Scheduled") & (pl.col("obj_kind") == "Pod") & assigned.is_not_null())
        .then(pl.lit("k8s_pod_scheduled"))
        # Kueue evicting a whole workload for a higher-priority one: no node's doing (tied to its job's attempt by the
        # pods the workload owns, clusterlab.ingest.attempts)
        .when((pl.col("obj_kind") == "Workload") & (pl.col("reason") == "Preempted"))
        .then(pl.lit("k8s_workload_preempted")),
    ).filter(pl.col("kind").is_not_null())
    ready = (f.filter((pl.col("kind") == "k8s_node_ready") & pl.col("ts").is_not_null())
             .select("host", pl.col("ts").alias("_back")).sort("host", "_back"))
    dated = f.filter(pl.col("ts").is_not_null()).sort("host", "ts")
    f = pl.concat([dated.join_asof(ready, left_on="ts", right_on="_back", by="host", strategy="forward",
                                   check_sortedness=False),
                   f.filter(pl.col("ts").is_null()).with_columns(_back=pl.lit(None, pl.Datetime("us")))],
                  how="diagonal_relaxed")
    mode = (pl.when(pl.col("kind") == "k8s_oom_killing").then(pl.lit("host_oom"))
            .when((pl.col("kind") == "k8s_node_not_ready") & pl.col("_back").is_null()).then(pl.lit("node_failure"))
            .when(pl.col("kind").is_in(["k8s_node_reclaim", "k8s_workload_preempted"])).then(pl.lit("preemption")))
    out.add("events", f.filter(pl.col("kind") != "k8s_node_ready").sort("line").select(
        pl.col("line").cast(pl.Int64), "ts", "host", "kind", mode.alias("failure_mode"),
        pl.when(mode.is_not_null()).then(pl.lit("error")).when(pl.col("kind") == "k8s_pod_scheduled")
        .then(pl.lit("info")).otherwise(pl.lit("warning")).alias("severity"),
        pl.format("{} {}: {}", "reason", "obj", "message").alias("text")))
    return out
