"""Telemetry as evidence of a slow stretch: a throttling GPU, or a shared filesystem or fabric at its limit.

Two slowdowns leave nothing in the logs and show only in telemetry (clusterlab.telemetry):
- a GPU the hardware slows down: clock throttle reasons of heat, the power brake or the HW slowdown line
  are active, or its SM clock sits well below its peers'. One such GPU makes every rank wait for it. A
  GPU that runs hot but keeps its clock is not throttling and is never blamed.
- a bulk transfer on a shared service: the job's hosts' NFS, disk or InfiniBand throughput jumps to many
  times its usual and near its peak while the job slows. Where hosts outside the job move as much at the
  same time, the traffic was theirs, and the evidence says so.

Both become *episodes* (one row per consecutive stretch of samples, with its figures) which attribution
uses as it uses log lines: a straggler on a host with a throttle episode on one of its GPUs becomes a
`gpu_throttle` incident on that GPU, and a slow stretch whose onset meets an episode is put on it.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from clusterlab import store, taxonomy, telemetry

CLOCK_DROP = 0.85  # an SM clock below this share of its peers' median is dropped
SAT_RATIO = 4.0  # throughput this many times the host's median for the service ...
SAT_PEAK_SHARE = 0.7  # ... and at least this share of the highest seen on that host is saturating
SAT_MIN_BYTES_S = 50e6  # ... and at least this much (idle noise is never saturation)
LEAD_S = 60.0  # an episode this long before a straggler's first slow step still counts for it
IDLE_UTIL_PCT = 5.0  # a GPU this busy or less runs nothing: its low clock is idling, not throttling

_MODES = {"filesystem": "filesystem_io", "disk": "filesystem_io", "fabric": "network"}
_WHAT = {"filesystem": "NFS", "disk": "local disk", "fabric": "InfiniBand"}
EVENT_COLUMNS = {"ts": pl.Datetime("us"), "end_ts": pl.Datetime("us"), "host": pl.String, "gpu": pl.Int32,
                 "bus_id": pl.String, "source": pl.String, "kind": pl.String, "failure_mode": pl.String,
                 "xid": pl.Int32, "rank": pl.Int32, "file": pl.String, "line": pl.Int64, "text": pl.String,
                 "severity_rank": pl.Int32}


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema=EVENT_COLUMNS)


def _has_telemetry(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(con.execute("SELECT EXISTS (SELECT 1 FROM telemetry LIMIT 1)").fetchall()[0][0])


def _episodes(flagged: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Consecutive flagged samples of each series (`keys`, ordered by ts) as one stretch each: `episode` ids."""
    return (flagged.sort([*keys, "ts"])
            .with_columns(episode=(pl.col("flag") != pl.col("flag").shift(1).over(keys)).fill_null(True)
                          .cum_sum().over(keys))
            .filter(pl.col("flag")))


def throttle_episodes(con: duckdb.DuckDBPyConnection, hosts: list[str] | None = None) -> pl.DataFrame:
    """Stretches in which a GPU's throttle reasons (heat, power brake, HW slowdown) were active or its SM clock
    dropped below CLOCK_DROP of its peers', with reasons, clocks, temperature and power as event rows."""
    if not _has_telemetry(con):
        return _empty()
    wide = store.frame(con, """
        SELECT t.host, t.gpu, any_value(t.bus_id) AS bus_id, t.ts,
               max(t.value) FILTER (WHERE t.metric = 'sm_clock_mhz') AS sm_clock,
               bit_or(CAST(t.value AS BIGINT)) FILTER (WHERE t.metric = 'throttle_reasons') AS reasons,
               max(t.value) FILTER (WHERE t.metric = 'gpu_temp_c') AS temp_c,
               max(t.value) FILTER (WHERE t.metric = 'power_w') AS power_w,
               max(t.value) FILTER (WHERE t.metric = 'gpu_util_pct') AS util,
               min(f.path) AS file, min(t.line) AS line
        FROM telemetry t JOIN ingested_files f USING (file_id)
        WHERE t.gpu IS NOT NULL AND t.ts IS NOT NULL
          AND t.metric IN ('sm_clock_mhz', 'throttle_reasons', 'gpu_temp_c', 'power_w', 'gpu_util_pct')
          AND ($hosts IS NULL OR list_contains($hosts, t.host))
        GROUP BY t.host, t.gpu, t.ts""", {"hosts": hosts})
    if not wide.height:
        return _empty()
    # The peers' clock: the median of every GPU's clock at its scrape (one exporter's scrape time rounds the same)
    peers = wide.group_by(pl.col("ts").dt.truncate("1m").alias("_m")).agg(peer_clock=pl.col("sm_clock").median())
    wide = wide.with_columns(_m=pl.col("ts").dt.truncate("1m")).join(peers, on="_m", how="left")
    fault = (pl.col("reasons").fill_null(0) & telemetry.FAULT_THROTTLE_MASK) != 0
    # NOTE: an idle GPU's clock is down by design (NVML's GPU-idle reason): no drop. A sampler that prints no reason
    # bits (`nvidia-smi --query-gpu` with only the slowdown columns) still says it is idle: nothing runs on it
    idle = ((pl.col("reasons").fill_null(0) & telemetry.THROTTLE_BITS["gpu_idle"]) != 0) | (
        pl.col("util") <= IDLE_UTIL_PCT).fill_null(False)
    dropped = ((pl.col("sm_clock") < CLOCK_DROP * pl.col("peer_clock")) & ~idle).fill_null(False)
    flagged = _episodes(wide.with_columns(flag=fault | dropped, fault_bits=pl.col("reasons").fill_null(0)
                                          & telemetry.FAULT_THROTTLE_MASK), ["host", "gpu"])
    if not flagged.height:
        return _empty()
    ep = flagged.group_by("host", "gpu", "episode").agg(
        pl.col("bus_id").drop_nulls().first(), ts=pl.col("ts").min(), end_ts=pl.col("ts").max(),
        reasons=pl.col("fault_bits").bitwise_or(), min_clock=pl.col("sm_clock").min(),
        peer_clock=pl.col("peer_clock").median(), max_temp=pl.col("temp_c").max(),
        power=pl.col("power_w").median(), samples=pl.len(), file=pl.col("file").first(), line=pl.col("line").min())
    names = pl.concat_str([pl.when((pl.col("reasons") & bit) != 0).then(pl.lit(name))
                           for name, bit in telemetry.THROTTLE_BITS.items()], separator=", ", ignore_nulls=True)
    ep = ep.with_columns(reason_names=pl.when(pl.col("reasons") != 0).then(names)
                         .otherwise(pl.lit("none reported, clock dropped")))
    text = pl.format(
        "GPU {} ({}) throttled for {} samples: reasons {}; SM clock down to {} MHz (peers {} MHz); {} C, {} W",
        "gpu", pl.col("bus_id").fill_null("bus id unknown"), "samples", "reason_names",
        *[pl.col(c).round(0).cast(pl.Int64) for c in ("min_clock", "peer_clock", "max_temp", "power")])
    return ep.select(
        "ts", "end_ts", "host", pl.col("gpu").cast(pl.Int32), "bus_id", source=pl.lit("telemetry"),
        kind=pl.lit("gpu_throttle"), failure_mode=pl.lit("gpu_throttle"), xid=pl.lit(None, pl.Int32),
        rank=pl.lit(None, pl.Int32), file="file", line="line", text=text, severity_rank=pl.lit(1, pl.Int32),
    ).sort("ts", "host", "gpu")


def saturation_episodes(con: duckdb.DuckDBPyConnection, job_hosts: list[str]) -> pl.DataFrame:
    """Stretches in which a job host's filesystem, disk or fabric throughput saturated (SAT_* above), with the
    figures, and the hosts outside the job that moved as much at the same time."""
    if not _has_telemetry(con) or not job_hosts:
        return _empty()
    groups = pl.DataFrame({"metric": [m for ms in telemetry.THROUGHPUT.values() for m in ms],
                           "service": [g for g, ms in telemetry.THROUGHPUT.items() for _ in ms]})
    per = store.frame(con, """
        SELECT t.host, g.service, t.ts, sum(t.value) AS bytes_s, min(f.path) AS file, min(t.line) AS line
        FROM telemetry t JOIN groups g USING (metric) JOIN ingested_files f USING (file_id)
        WHERE t.ts IS NOT NULL GROUP BY ALL""", groups=groups)
    if not per.height:
        return _empty()
    keys = ["host", "service"]
    typical = pl.col("bytes_s").median().over(keys)
    peak = pl.col("bytes_s").max().over(keys)
    sat = ((pl.col("bytes_s") >= SAT_RATIO * typical) & (pl.col("bytes_s") >= SAT_PEAK_SHARE * peak)
           & (pl.col("bytes_s") >= SAT_MIN_BYTES_S))
    per = per.with_columns(flag=sat, typical=typical, inside=pl.col("host").is_in(job_hosts))
    flagged = _episodes(per, keys)
    if not flagged.height:
        return _empty()
    ep = flagged.group_by("host", "service", "episode").agg(
        ts=pl.col("ts").min(), end_ts=pl.col("ts").max(), bytes_s=pl.col("bytes_s").median(),
        typical=pl.col("typical").first(), inside=pl.col("inside").first(), file=pl.col("file").first(),
        line=pl.col("line").min())
    inside, outside = ep.filter(pl.col("inside")), ep.filter(~pl.col("inside"))
    if not inside.height:
        return _empty()
    # Hosts outside the job saturating the same service while the job's host did
    others = (inside.select("host", "service", "episode", "ts", "end_ts")
              .join_where(outside.select(o_host="host", o_service="service", o_ts="ts", o_end="end_ts",
                                         o_bytes="bytes_s"),
                          pl.col("service") == pl.col("o_service"), pl.col("o_ts") <= pl.col("end_ts"),
                          pl.col("o_end") >= pl.col("ts"))
              .group_by("host", "service", "episode")
              .agg(outsiders=pl.format("{} ({} GB/s)", "o_host", (pl.col("o_bytes") / 1e9).round(2))
                   .unique().sort().str.join(", ")))
    n_hosts = inside.group_by("service").agg(n_job=pl.col("host").n_unique())
    ep = inside.join(others, on=["host", "service", "episode"], how="left").join(n_hosts, on="service")
    what = pl.col("service").replace_strict(_WHAT, return_dtype=pl.String)
    text = pl.format("{} throughput {} GB/s on {} ({}x its usual {} GB/s); {} of {} job hosts saturated{}",
                     what, (pl.col("bytes_s") / 1e9).round(2), "host",
                     (pl.col("bytes_s") / pl.col("typical").clip(lower_bound=1.0)).round(1),
                     (pl.col("typical") / 1e9).round(2), "n_job", pl.lit(len(set(job_hosts))),
                     pl.when(pl.col("outsiders").is_not_null())
                     .then(pl.format("; traffic from hosts outside the job: {}", "outsiders")).otherwise(pl.lit("")))
    return ep.select(
        "ts", "end_ts", "host", gpu=pl.lit(None, pl.Int32), bus_id=pl.lit(None, pl.String),
        source=pl.lit("telemetry"), kind=pl.format("{}_saturation", "service"),
        failure_mode=pl.col("service").replace_strict(_MODES, return_dtype=pl.String), xid=pl.lit(None, pl.Int32),
        rank=pl.lit(None, pl.Int32), file="file", line="line", text=text, severity_rank=pl.lit(1, pl.Int32),
    ).sort("ts", "host")


# Error counters (rates) and what rising ones mean: (metric, failure mode, least rate per second, what it is).
ERROR_RATES = [
    ("ecc_dbe_per_s", "gpu_memory_ecc", 0.0, "uncorrectable (double-bit) ECC errors"),
    ("nvlink_crc_errors_per_s", "nvlink_error", 0.0, "NVLink CRC flit errors"),
    ("pcie_replay_per_s", "pcie_error", 1.0, "PCIe replays"),  # a few replays an hour are normal
]


def error_episodes(con: duckdb.DuckDBPyConnection, hosts: list[str] | None = None) -> pl.DataFrame:
    """Stretches in which a GPU's error counters rose (ERROR_RATES), and each new Xid DCGM reported: evidence
    where the logs say nothing, and beside them where they do."""
    if not _has_telemetry(con):
        return _empty()
    rules = pl.DataFrame({"metric": [r[0] for r in ERROR_RATES], "mode": [r[1] for r in ERROR_RATES],
                          "least": [r[2] for r in ERROR_RATES], "what": [r[3] for r in ERROR_RATES]})
    rows = store.frame(con, """
        SELECT t.host, t.gpu, t.bus_id, t.ts, t.metric, t.value, f.path AS file, t.line
        FROM telemetry t JOIN ingested_files f USING (file_id)
        WHERE t.gpu IS NOT NULL AND t.ts IS NOT NULL
          AND (t.metric IN (SELECT metric FROM rules) OR t.metric = 'xid_last')
          AND ($hosts IS NULL OR list_contains($hosts, t.host))""", {"hosts": hosts}, rules=rules)
    if not rows.height:
        return _empty()
    rates = rows.join(rules, on="metric").with_columns(flag=pl.col("value") > pl.col("least"))
    ep = _episodes(rates, ["host", "gpu", "metric"]).group_by("host", "gpu", "metric", "episode").agg(
        pl.col("bus_id").first(), pl.col("mode").first(), pl.col("what").first(), ts=pl.col("ts").min(),
        end_ts=pl.col("ts").max(), peak=pl.col("value").max(), file=pl.col("file").first(), line=pl.col("line").min())
    errors = ep.select(
        "ts", "end_ts", "host", pl.col("gpu").cast(pl.Int32), "bus_id", source=pl.lit("telemetry"),
        kind=pl.format("{}_rising", "metric"), failure_mode="mode", xid=pl.lit(None, pl.Int32),
        rank=pl.lit(None, pl.Int32), file="file", line="line",
        text=pl.format("GPU {} ({}): {} rising, up to {}/s", "gpu", pl.col("bus_id").fill_null("bus id unknown"),
                       "what", pl.col("peak").round(2)), severity_rank=pl.lit(0, pl.Int32))
    # DCGM's Xid field holds the last Xid: a new non-zero value is a new Xid
    xid = (rows.filter(pl.col("metric") == "xid_last").sort("host", "gpu", "ts")
           .with_columns(prev=pl.col("value").shift(1).over("host", "gpu"))
           .filter(pl.col("value") > 0, pl.col("value") != pl.col("prev").fill_null(0)))
    if xid.height:
        codes = xid["value"].cast(pl.Int64).to_list()
        modes = pl.Series([taxonomy.xid(c).failure_mode for c in codes], dtype=pl.String)  # a few Xids
        xid = xid.with_columns(mode=modes).select(
            "ts", end_ts="ts", host="host", gpu=pl.col("gpu").cast(pl.Int32), bus_id="bus_id",
            source=pl.lit("telemetry"), kind=pl.lit("xid"), failure_mode="mode",
            xid=pl.col("value").cast(pl.Int32), rank=pl.lit(None, pl.Int32), file="file", line="line",
            text=pl.format("GPU {} ({}): DCGM reports Xid {}", "gpu", pl.col("bus_id").fill_null("bus id unknown"),
                           pl.col("value").cast(pl.Int64)), severity_rank=pl.lit(0, pl.Int32))
        errors = pl.concat([errors, xid], how="vertical_relaxed")
    return errors.sort("ts", "host", "gpu")


def _run_hosts(con: duckdb.DuckDBPyConnection, run: str) -> list[str]:
    return [h for (h,) in con.execute("SELECT DISTINCT unnest(hosts) FROM attempts WHERE run = ?", [run]).fetchall()
            if h is not None]


def with_slowdown_causes(con: duckdb.DuckDBPyConnection, run: str, events: pl.DataFrame) -> pl.DataFrame:
    """`events` (attribution's slowdown causes from the logs) plus the run's throttle, saturation and error episodes."""
    hosts = _run_hosts(con, run)
    if not hosts or not _has_telemetry(con):
        return events
    extra = pl.concat([throttle_episodes(con, hosts), saturation_episodes(con, hosts), error_episodes(con, hosts)],
                      how="vertical_relaxed")
    if not extra.height:
        return events
    # NOTE: an episode keeps its end (`end_ts`): it explains a slow stretch it spans (attribution._slowdowns)
    extra = (extra.select([c for c in events.columns if c in extra.columns and c != "end_ts"] + ["end_ts"])
             if events.width else extra.drop("gpu", "bus_id"))
    return pl.concat([events, extra], how="diagonal_relaxed").sort("ts", "line")


def throttled_stragglers(con: duckdb.DuckDBPyConnection, strag: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Straggler incidents whose host had a throttle episode during the stretch: failure mode `gpu_throttle`, the
    GPU and its bus id named, the episodes as evidence (those on the GPU most throttled first)."""
    none = (strag, pl.DataFrame())
    if not strag.height or not _has_telemetry(con):
        return none
    hosts = strag["host"].drop_nulls().unique().to_list()
    ep = throttle_episodes(con, hosts)
    if not ep.height:
        return none
    lead = dt.timedelta(seconds=LEAD_S)
    hits = (strag.select("incident_id", "host", "root_ts", "exit_ts")
            .join_where(ep.rename({"host": "e_host"}), pl.col("host") == pl.col("e_host"),
                        pl.col("ts") <= pl.col("exit_ts"), pl.col("end_ts") >= pl.col("root_ts") - lead)
            .with_columns(span_s=(pl.col("end_ts") - pl.col("ts")).dt.total_seconds()))
    if not hits.height:
        return none
    worst = (hits.sort("incident_id", "span_s", "ts", descending=[False, True, False])
             .group_by("incident_id", maintain_order=True).first()
             .select("incident_id", t_gpu="gpu", t_bus="bus_id"))
    strag = strag.join(worst, on="incident_id", how="left").with_columns(
        failure_mode=pl.when(pl.col("t_gpu").is_not_null()).then(pl.lit("gpu_throttle"))
        .otherwise(pl.col("failure_mode")),
        gpu=pl.col("t_gpu"), bus_id=pl.col("t_bus")).drop("t_gpu", "t_bus")
    evidence = (hits.join(worst, on="incident_id")
                .with_columns(_own=(pl.col("gpu") == pl.col("t_gpu")))
                .sort("incident_id", "_own", "ts", descending=[False, True, False])
                .with_columns(rank_in_incident=(pl.int_range(pl.len()).over("incident_id") + 1).cast(pl.Int64))
                .select("incident_id", "rank_in_incident", "ts", host="e_host", source="source", kind="kind",
                        failure_mode="failure_mode", xid="xid", rank="rank", file="file", line="line", text="text",
                        tier=pl.lit(None, pl.Int32)))
    return strag, evidence
