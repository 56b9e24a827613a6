"""Prometheus text exposition scrapes (dcgm-exporter, node exporter) → `telemetry` rows.

The format (prometheus.io/docs/instrumenting/exposition_formats/#text-based-format): `# HELP` and
`# TYPE` comments, then one sample a line, `name{label="value",...} value [timestamp_ms]`. A scrape
saved by `curl host:9400/metrics` carries no time, so a cron or `while sleep 15` loop that appends
scrapes to one file writes the time before each one as a comment (`# 2026-11-24T08:00:15Z`,
`# scrape_time 1795939215`); a sample's own millisecond timestamp, where the exporter printed one,
wins. Only the metrics clusterlab.telemetry names are read (PATTERN): a node exporter scrape holds
a thousand series that say nothing about a slow job.

Labels read: dcgm-exporter's `gpu`, `pci_bus_id` and `Hostname`; node exporter's `device` (disk,
IB HCA, interface), `port` (IB) and `export` (NFS mount). A scrape names no host unless dcgm-exporter
put its `Hostname` label in: the bundle's `nodes/<host>/` gives it.
"""

from __future__ import annotations

import polars as pl

from clusterlab import taxonomy, telemetry
from clusterlab.collectors._base import Context, Parsed, file_of_line, json_detail, local_to_utc

NAME = "prometheus_text"
EXCLUSIVE = True
SNIFF_HINT = (b"dcgm_fi_", b"node_")  # every metric read here is dcgm-exporter's or node exporter's

_NAMES = "|".join(sorted(telemetry.PROMETHEUS, key=len, reverse=True))
_ISO = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_TIME = rf"^#\s*(?:scrape[_ ]time\s*[:=]?\s*)?(?:(?P<iso>{_ISO})|(?P<epoch>\d{{9,10}}(?:\.\d+)?))\s*$"
_SAMPLE = (r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?[ \t]+(?P<value>\S+)"
           r"(?:[ \t]+(?P<tms>-?\d+))?\s*$")
PATTERN = rf"^(?:{_NAMES})(?:\{{|[ \t])|{_TIME}"
BLOCK_START = None


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context (the zone of scrape times printed without an offset): scrape files
    agreeing on it may be parsed together. Every relation between lines (a scrape's time, a counter's rate) stays
    within one file (`file_of_line`)."""
    return (ctx.tz,)


def sniff(head: bytes, path: str) -> bool:
    """Most of the first lines are exposition comments or samples, and one is a sample of a metric read here."""
    lines = [ln for ln in head.decode("utf-8", "replace").split("\n")[:40] if ln.strip()]
    if not lines:
        return False
    frame = pl.DataFrame({"t": lines}, schema={"t": pl.String})
    shaped = frame["t"].str.contains(rf"^# (?:HELP|TYPE) [A-Za-z_:]|{_TIME}|{_SAMPLE}")
    ours = frame["t"].str.contains(rf"^(?:{_NAMES})(?:\{{|[ \t])|^# (?:HELP|TYPE) (?:DCGM_FI_|node_)")
    return bool(ours.any()) and 2 * int(shaped.sum()) >= len(lines)


def _label(name: str) -> pl.Expr:
    return pl.col("labels").str.extract(rf'(?:^|,)\s*{name}="([^"]*)"', 1)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One telemetry row per sample of a known metric (counters: per-second rates between scrapes)."""
    out = Parsed()
    f = lines.select(
        "line", file_of_line().alias("_f"), pl.col("text").str.extract_groups(_TIME).alias("_t"),
        pl.col("text").str.extract_groups(_SAMPLE).alias("_s"),
    ).unnest("_t", "_s")
    iso = pl.col("iso").str.replace(" ", "T").str.replace(r"Z$", "+00:00")
    # NOTE: each naive UTC before they meet: an aware UTC and an aware local time have no common type
    scrape = f.select(pl.coalesce(
        iso.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%:z", strict=False, time_zone="UTC").dt.replace_time_zone(None),
        iso.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%z", strict=False, time_zone="UTC").dt.replace_time_zone(None),
        local_to_utc(iso.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", strict=False), ctx.tz),
    ).cast(pl.Datetime("us")))[:, 0]
    epoch = (f["epoch"].cast(pl.Float64, strict=False) * 1e6).cast(pl.Int64).cast(pl.Datetime("us"))
    f = f.with_columns(scrape=scrape.fill_null(epoch)).with_columns(pl.col("scrape").forward_fill().over("_f"))
    samples = f.filter(pl.col("name").is_not_null())
    bad = f.filter(pl.col("name").is_null(), pl.col("iso").is_null(), pl.col("epoch").is_null())["line"]
    own = (pl.col("tms").cast(pl.Int64, strict=False) * 1000).cast(pl.Datetime("us"))
    port = _label("port")
    device = pl.coalesce(_label("export"), pl.when(port.is_not_null()).then(pl.format("{}/{}", _label("device"),
                                                                                      port)), _label("device"))
    gpu_metric = pl.col("name").str.starts_with("DCGM_")
    s = samples.select(
        "line", "_f", pl.coalesce(own, "scrape").alias("ts"), _label("Hostname").alias("host"),
        _label("gpu").cast(pl.Int32, strict=False).alias("gpu"),
        _label("pci_bus_id").alias("bus_id"),
        pl.when(gpu_metric).then(pl.lit(None, pl.String)).otherwise(device).alias("device"),
        "name", pl.col("value").cast(pl.Float64, strict=False).alias("value"),
    )
    s = s.with_columns(telemetry.bus_ids(s["bus_id"]))  # a scrape repeats its 8 GPUs' ids: each parsed once
    unreadable = s.filter(pl.col("value").is_null())
    out.unparsed_lines = pl.concat([bad, unreadable["line"]]).sort() if unreadable.height else bad
    out.unparsed = len(out.unparsed_lines)
    # NOTE: each warning once per file, at the file's first such line: a group sends every such file back at once
    firsts = unreadable.group_by("_f").agg(pl.col("line").min())["line"].sort() if unreadable.height else []
    out.warnings += [f"line {n}: sample value is not a number" for n in firsts]
    if s["ts"].null_count():
        out.warnings += _unscraped(f, s)
    out.add("telemetry", telemetry.to_rows(s, telemetry.PROMETHEUS, apart=file_of_line()))
    out.add("events", _xid_events(s, lines, ctx))
    return out


def _xid_events(s: pl.DataFrame, lines: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """dcgm-exporter's `DCGM_FI_DEV_XID_ERRORS` is the last Xid a GPU raised (0 before any): each value it newly
    takes, per file, host and GPU, is that Xid, seen by the scrape. One event of the Xid's mode (the taxonomy's) at the
    scrape's time; the gauge holding its value over later scrapes is the same Xid, not another. (What a scrape file
    alone says: a run's root cause weighs the gauge as telemetry against its logs, `diagnose.counter_evidence`.)"""
    x = s.filter(pl.col("name") == "DCGM_FI_DEV_XID_ERRORS", pl.col("value").is_not_null()).sort("line")
    gpu = pl.coalesce(pl.col("bus_id"), pl.col("gpu").cast(pl.String))
    x = x.with_columns(_prev=pl.col("value").shift().over("_f", "host", gpu)).filter(
        pl.col("value") > 0, pl.col("value") <= 1000, pl.col("_prev").is_null() | (pl.col("_prev") != pl.col("value")))
    if not x.height:
        return pl.DataFrame()
    x = x.with_columns(xid=pl.col("value").cast(pl.Int32))
    table = taxonomy.xid_frame(x["xid"]).select("xid", "failure_mode", _root="root_cause")
    x = x.join(table, on="xid", how="left").join(lines.select("line", "text"), on="line", how="left")
    return x.select(
        pl.col("line").cast(pl.Int64), "ts", pl.coalesce("host", pl.lit(ctx.host, pl.String)).alias("host"),
        pl.lit("xid").alias("kind"), "failure_mode",
        pl.when(pl.col("failure_mode").is_null() | ~pl.col("_root")).then(pl.lit("warning"))
        .otherwise(pl.lit("error")).alias("severity"),
        pl.col("text").str.strip_chars().str.slice(0, 500).alias("text"),
        json_detail({"xid": pl.col("xid"), "gpu": pl.col("gpu"), "via": pl.lit("dcgm-exporter")}).alias("detail"),
    )


def _unscraped(f: pl.DataFrame, s: pl.DataFrame) -> list[str]:
    """Warnings for the files whose samples have no time at all and no scrape time line (at their first sample)."""
    timed = f.filter(pl.col("scrape").is_not_null()).select("_f").vstack(
        s.filter(pl.col("ts").is_not_null()).select("_f"))
    blind = s.group_by("_f").agg(pl.col("line").min()).join(timed, on="_f", how="anti")["line"].sort()
    return [f"line {n}: no scrape time (write `# <ISO time>` before each scrape)" for n in blind]
