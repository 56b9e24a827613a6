"""Preflight records (JSON Lines): what `clusterlab preflight` writes, one object a line.

`{"preflight": "rank" | "link" | "host", "ts", "host", "rank", "flagged", "reason", ...figures}`:
a rank's matmul TFLOP/s, memory and all-reduce bus GB/s with what was measured (device, dtype,
sizes); a ring link's point-to-point GB/s (`peer_host`, `peer_rank`); a host's verdict. Each
becomes an event of kind `preflight_<what>`: severity `error` for a flagged rank or host (the
relaunch planner excludes such hosts), `warning` for a slow link or a host at its end, else
`info`; the figures go to `detail`. A line that is not such a record is counted as unparsed.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, json_detail, sniff_jsonl

NAME = "preflight"
PATTERN = None
EXCLUSIVE = True
SNIFF_HINT = (b'"preflight"',)

_FIELDS: dict[str, pl.DataType] = {
    "preflight": pl.String, "ts": pl.String, "host": pl.String, "rank": pl.Int64, "peer_host": pl.String,
    "peer_rank": pl.Int64, "flagged": pl.Boolean, "suspect_link": pl.Boolean, "reason": pl.String,
    "device": pl.String, "device_name": pl.String, "backend": pl.String, "dtype": pl.String,
    "world_size": pl.Int64, "matmul_n": pl.Int64, "mem_bytes": pl.Int64, "comm_bytes": pl.Int64, "reps": pl.Int64,
    "matmul_tflops": pl.Float64, "mem_gbps": pl.Float64, "allreduce_busbw_gbps": pl.Float64,
    "p2p_gbps": pl.Float64, "injected_slowdown": pl.Float64,
}
_DETAIL = ["device", "device_name", "backend", "dtype", "world_size", "matmul_n", "mem_bytes", "comm_bytes", "reps",
           "matmul_tflops", "mem_gbps", "allreduce_busbw_gbps", "peer_rank", "p2p_gbps", "injected_slowdown"]
_KINDS = ("rank", "link", "host")


def sniff(head: bytes, path: str) -> bool:
    """Most of the head's first lines are JSON objects with a `preflight` key."""
    return sniff_jsonl(head, lambda o: o.get("preflight") in _KINDS)


def _decode(lines: pl.DataFrame) -> pl.DataFrame:
    """`line` plus the record's fields, for the lines that are JSON objects of the right shape."""
    objects = lines.filter(pl.col("text").str.contains(r"^\s*\{.*\}\s*$"))
    try:
        return objects.select("line", pl.col("text").str.json_decode(pl.Struct(_FIELDS)).alias("_r")).unnest("_r")
    except pl.exceptions.PolarsError:
        pass
    # NOTE: rare path (a hand-edited or foreign file): a preflight file holds a few lines per rank,
    # so decoding the lines one by one costs nothing and keeps the good ones.
    good = []
    for n, text in objects.iter_rows():
        try:
            good.append(pl.DataFrame({"line": [n], "text": [text]}).select(
                "line", pl.col("text").str.json_decode(pl.Struct(_FIELDS)).alias("_r")).unnest("_r"))
        except pl.exceptions.PolarsError:
            continue
    schema = {"line": pl.Int64, **_FIELDS}
    return pl.concat([pl.DataFrame(schema=schema), *good], how="diagonal_relaxed")


def _ts(ts: pl.Expr) -> pl.Expr:
    """Naive UTC from the ISO 8601 time the writer prints (with an offset, or naive UTC)."""
    iso = ts.str.replace(r"[Zz]$", "+00:00")
    aware = iso.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%z", strict=False, time_unit="us").dt.replace_time_zone(None)
    return pl.coalesce(aware, iso.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", strict=False, time_unit="us"))


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Preflight events from a batch of JSONL lines."""
    text = lines.filter(pl.col("text").str.strip_chars() != "")
    rows = _decode(text).filter(pl.col("preflight").is_in(_KINDS), pl.col("host").is_not_null())
    flagged = pl.col("flagged").fill_null(False)
    kind = pl.col("preflight")
    severity = (pl.when(flagged & (kind != "link")).then(pl.lit("error"))
                .when(flagged | pl.col("suspect_link").fill_null(False)).then(pl.lit("warning"))
                .otherwise(pl.lit("info")))
    mode = (pl.when(flagged & (kind == "link")).then(pl.lit("network"))
            .when(flagged).then(pl.lit("straggler")).otherwise(pl.lit(None, pl.String)))
    verdict = pl.when(pl.col("reason").fill_null("") != "").then(pl.col("reason")).otherwise(pl.lit("ok"))
    who = (pl.when(kind == "link")
           .then(pl.format("rank {} ({}) <-> rank {} ({})", "rank", "host", "peer_rank", "peer_host"))
           .when(kind == "rank").then(pl.format("rank {} on {}", "rank", "host"))
           .otherwise(pl.format("host {}", "host")))
    out = Parsed()
    out.add("events", rows.select(
        "line", _ts(pl.col("ts")).alias("ts"), "host", pl.format("preflight_{}", kind).alias("kind"),
        mode.alias("failure_mode"), severity.alias("severity"), pl.col("rank").cast(pl.Int32, strict=False),
        pl.col("peer_host").alias("peer"), pl.format("preflight {}: {}", who, verdict).alias("text"),
        json_detail(_DETAIL).alias("detail")))
    out.unparsed = text.height - rows.height
    first_bad = text.join(rows.select("line"), on="line", how="anti")["line"].head(3).to_list()
    out.warnings += [f"line {n}: not a preflight record" for n in first_bad]
    return out
