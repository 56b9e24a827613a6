"""The fleet side of a scorecard: where incidents sit, contracted against delivered nodes, ticket times."""

from __future__ import annotations

import datetime as dt
import os

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.account import attribution
from clusterlab.diagnose import incidents
from clusterlab.triage import annotations

_OUT = ("slurm_node_drain", "slurm_node_down")
_BACK = "slurm_node_resume"


def run_places(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """run, cluster, provider, gpus: where each run held its GPUs."""
    return store.frame(con, """SELECT r.run, r.cluster, c.provider, r.gpus FROM runs r
                               LEFT JOIN clusters c USING (cluster) ORDER BY r.run""")


def place(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame) -> pl.DataFrame:
    """Incidents with a cluster and provider: the guilty host's, else the run's (as the ledger places them)."""
    for c in ("cluster", "provider"):
        if c not in inc.columns:
            inc = inc.with_columns(pl.lit(None, pl.String).alias(c))
    inv = store.frame(con, "SELECT host, cluster AS inv_cluster, provider AS inv_provider FROM inventory")
    runs = run_places(con).select("run", run_cluster="cluster", run_provider="provider")
    out = inc.with_columns(pl.col("host").cast(pl.String)).join(inv, on="host", how="left").join(
        runs, on="run", how="left")
    return out.with_columns(
        cluster=pl.coalesce("cluster", "inv_cluster", "run_cluster", pl.lit(attribution.NONE)),
        provider=pl.coalesce("provider", "inv_provider", "run_provider", pl.lit(attribution.NONE)),
    ).drop("inv_cluster", "inv_provider", "run_cluster", "run_provider")


def short_paths(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame, col: str = "file") -> pl.DataFrame:
    """Paths relative to the folder every ingested file lies under (the bundle), as a support engineer sees it."""
    paths = store.frame(con, "SELECT DISTINCT path FROM ingested_files WHERE path IS NOT NULL")["path"].to_list()
    if len(paths) < 2 or col not in frame.columns:
        return frame
    root = os.path.commonpath(paths)
    return frame.with_columns(pl.col(col).str.strip_prefix(root.rstrip("/") + "/"))


def history(con: duckdb.DuckDBPyConnection, s: incidents.Settings, until: dt.datetime) -> pl.DataFrame:
    """Every incident in the store with its root cause before `until`, placed, with its ISO week."""
    inc = place(con, attribution.incidents_of(con, None, s)[0])
    return inc.filter(pl.col("root_ts") < until).with_columns(week=pl.col("root_ts").dt.strftime("%G-W%V"))


def _outages(con: duckdb.DuckDBPyConnection, end: dt.datetime) -> pl.DataFrame:
    """Per host, each stretch from a DRAIN/DOWN state to the next return to service (null: not back yet)."""
    ev = store.frame(con, f"""
        SELECT e.ts, e.host, e.kind, e.text, f.path AS file, e.line FROM events e
        JOIN ingested_files f USING (file_id) JOIN nodes n ON n.host = e.host
        WHERE e.ts < ? AND (e.kind IN {_OUT} OR e.kind = '{_BACK}' OR e.kind = 'slurm_node_reason')
        ORDER BY e.host, e.ts, f.path, e.line""", [end])
    state = ev.filter(pl.col("kind") != "slurm_node_reason").with_columns(is_out=pl.col("kind") != _BACK)
    was_out = pl.col("is_out").shift(1).over("host").fill_null(False)
    starts = state.filter(pl.col("is_out") & ~was_out).sort("ts")
    back = state.filter(~pl.col("is_out")).select("host", until="ts").sort("until")
    out = starts.join_asof(back, left_on="ts", right_on="until", by="host", strategy="forward",
                           allow_exact_matches=False, check_sortedness=False)
    # The reason an operator gave: the first reason line logged from the outage's start on.
    reasons = ev.filter(pl.col("kind") == "slurm_node_reason").select(
        "host", reason_ts="ts", reason="text", reason_file="file", reason_line="line").sort("reason_ts")
    out = out.join_asof(reasons, left_on="ts", right_on="reason_ts", by="host", strategy="forward",
                        check_sortedness=False)
    keep_reason = pl.col("until").is_null() | (pl.col("reason_ts") < pl.col("until"))
    return out.with_columns([pl.when(keep_reason).then(pl.col(c)).alias(c)
                             for c in ("reason", "reason_file", "reason_line")]).select(
        "host", since="ts", until="until", state=pl.col("kind").str.replace("slurm_node_", "").str.to_uppercase(),
        text="text", file="file", line="line", reason="reason", reason_file="reason_file", reason_line="reason_line")


def delivery(con: duckdb.DuckDBPyConnection, start: dt.datetime, end: dt.datetime
             ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per cluster: GPU-hours contracted in the week against those in the inventory, handed over and not drained."""
    cl = store.frame(con, """
        SELECT c.cluster, coalesce(c.provider, 'unknown') AS provider, c.gpu, c.gpus_per_node,
               c.contracted_nodes, c.contract_start, count(n.host) AS inventory_nodes
        FROM clusters c LEFT JOIN nodes n USING (cluster) GROUP BY ALL ORDER BY provider, cluster""")
    # NOTE: the contract counts from its start date; a cluster delivered late contracts fewer hours
    cl = cl.with_columns(window_start=pl.max_horizontal(pl.lit(start),
                                                         pl.col("contract_start").cast(pl.Datetime("us"))))
    hours = ((pl.lit(end) - pl.col("window_start")).dt.total_seconds() / 3600).clip(lower_bound=0)
    cl = cl.with_columns(contracted_hours=hours)
    outs = _outages(con, end).join(
        store.frame(con, "SELECT host, cluster FROM nodes"), on="host").join(
        cl.select("cluster", "provider", "gpus_per_node", "window_start"), on="cluster")
    since = pl.max_horizontal("since", "window_start")
    until = pl.min_horizontal(pl.coalesce("until", pl.lit(end)), pl.lit(end))
    drained = outs.with_columns(drained_hours=((until - since).dt.total_seconds() / 3600).clip(lower_bound=0)
                                ).filter(pl.col("drained_hours") > 0)
    drained = drained.with_columns(drained_gpu_hours=pl.col("drained_hours") * pl.col("gpus_per_node")).select(
        "provider", "cluster", "host", "since", "until", "state", "drained_hours", "drained_gpu_hours", "text",
        "file", "line", "reason", "reason_file", "reason_line").sort("provider", "cluster", "since")
    drained = short_paths(con, short_paths(con, drained), "reason_file")
    per = drained.group_by("cluster").agg(drained_nodes=pl.col("host").n_unique(),
                                          drained_gpu_hours=pl.col("drained_gpu_hours").sum())
    late = _late(con, cl, end)
    gpn = pl.col("gpus_per_node")
    out = cl.join(per, on="cluster", how="left").join(late, on="cluster", how="left").with_columns(
        pl.col("drained_nodes").fill_null(0), pl.col("drained_gpu_hours").fill_null(0.0),
        pl.col("late_nodes").fill_null(0), pl.col("late_gpu_hours").fill_null(0.0),
        missing_nodes=(pl.col("contracted_nodes") - pl.col("inventory_nodes")).clip(lower_bound=0),
        contracted_gpu_hours=pl.col("contracted_nodes") * gpn * pl.col("contracted_hours"),
        inventory_gpu_hours=pl.col("inventory_nodes") * gpn * pl.col("contracted_hours"))
    # NOTE: a node is out of service either before its hand-over (late) or while drained, not both at once
    out = out.with_columns(available_gpu_hours=(pl.col("inventory_gpu_hours") - pl.col("late_gpu_hours")
                                                - pl.col("drained_gpu_hours")).clip(lower_bound=0))
    return out.with_columns(delivered_share=_share("available_gpu_hours", "contracted_gpu_hours")).drop(
        "window_start"), drained


def _late(con: duckdb.DuckDBPyConnection, clusters: pl.DataFrame, end: dt.datetime) -> pl.DataFrame:
    """Per cluster: nodes handed over after the contract (or week) had started, and the GPU-hours they owed."""
    nodes = store.frame(con, "SELECT host, cluster, delivered FROM nodes WHERE delivered IS NOT NULL")
    owed = (pl.min_horizontal(pl.col("delivered").cast(pl.Datetime("us")), pl.lit(end))
            - pl.col("window_start")).dt.total_seconds() / 3600
    late = nodes.join(clusters.select("cluster", "gpus_per_node", "window_start"), on="cluster").with_columns(
        late_gpu_hours=owed.clip(lower_bound=0) * pl.col("gpus_per_node")).filter(pl.col("late_gpu_hours") > 0)
    return late.group_by("cluster").agg(late_nodes=pl.len().cast(pl.Int64),
                                        late_gpu_hours=pl.col("late_gpu_hours").sum(),
                                        late_hosts=pl.col("host").sort())


def _share(num: str, den: str) -> pl.Expr:
    return pl.when(pl.col(den) > 0).then(pl.col(num) / pl.col(den))


def provider_delivery(con: duckdb.DuckDBPyConnection, per_cluster: pl.DataFrame) -> pl.DataFrame:
    """Per provider: the clusters' contracted, inventory, missing and drained nodes and GPU-hours."""
    sums = ["contracted_nodes", "inventory_nodes", "missing_nodes", "late_nodes", "drained_nodes",
            "contracted_gpu_hours", "inventory_gpu_hours", "late_gpu_hours", "drained_gpu_hours", "available_gpu_hours"]
    out = per_cluster.group_by("provider").agg(pl.col("cluster").sort().str.join(", ").alias("clusters"),
                                               *[pl.col(c).sum() for c in sums])
    price = store.frame(con, "SELECT provider, usd_per_gpu_hour FROM providers")
    return out.join(price, on="provider", how="left").with_columns(
        delivered_share=_share("available_gpu_hours", "contracted_gpu_hours"))


def responsiveness(con: duckdb.DuckDBPyConnection, hist: pl.DataFrame, start: dt.datetime,
                   end: dt.datetime) -> pl.DataFrame:
    """Per provider, from incident annotations: tickets sent, resolved, still open, and hours to resolve."""
    ann = annotations.current(con)
    schema = {"provider": pl.String, "tickets": pl.UInt32, "tickets_this_week": pl.UInt32, "resolved": pl.UInt32,
              "open": pl.UInt32, "median_hours_to_resolve": pl.Float64, "max_hours_to_resolve": pl.Float64}
    if not ann.height:
        return pl.DataFrame(schema=schema)
    t = ann.join(hist.select("incident_id", "provider", "root_ts"), on="incident_id").filter(
        pl.col("a_ticket").is_not_null() | pl.col("sent_at").is_not_null())
    hours = (pl.col("resolved_at") - pl.col("sent_at")).dt.total_seconds() / 3600
    out = t.with_columns(hours=hours).group_by("provider").agg(
        tickets=pl.len(), tickets_this_week=((pl.col("root_ts") >= start) & (pl.col("root_ts") < end)).sum(),
        resolved=pl.col("resolved_at").is_not_null().sum(),
        median_hours_to_resolve=pl.col("hours").median(), max_hours_to_resolve=pl.col("hours").max())
    out = out.with_columns(open=pl.col("tickets") - pl.col("resolved"))
    return out.select(list(schema)).cast(schema).sort("provider")
