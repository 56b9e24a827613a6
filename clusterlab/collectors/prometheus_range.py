"""Prometheus HTTP API `query_range` dumps (the `matrix` result) → `telemetry` rows.

The format (prometheus.io/docs/prometheus/latest/querying/api/#range-queries):
`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":...,<labels>},
"values":[[<unix seconds>,"<value>"],...]},...]}}`, a value a string (`"NaN"` and `"+Inf"` too). A file
holds one response (as curl saved it, on one line or pretty-printed), or one response a line. The
series' host is its dcgm-exporter `Hostname` label, else its `instance` without the port (node
exporter's target), else the bundle's. A query that renamed the metric (`rate(...)`, no `__name__`)
names nothing clusterlab knows: it is counted, not guessed. Decoded by polars' JSON reader.
"""

from __future__ import annotations

import polars as pl

from clusterlab import telemetry
from clusterlab.collectors._base import Context, Parsed

NAME = "prometheus_range"
EXCLUSIVE = True
SNIFF_HINT = (b'"resulttype"',)
PATTERN = None
BLOCK_START = None

_LABELS = ["__name__", "Hostname", "instance", "gpu", "pci_bus_id", "device", "port", "export"]
_DOC = pl.Struct({
    "status": pl.String,
    "data": pl.Struct({
        "resultType": pl.String,
        "result": pl.List(pl.Struct({
            "metric": pl.Struct({k: pl.String for k in _LABELS}),
            "values": pl.List(pl.List(pl.String)),
        })),
    }),
})


def sniff(head: bytes, path: str) -> bool:
    """A Prometheus API response whose result is a matrix."""
    text = head[:4096].decode("utf-8", "replace").lstrip()
    return text.startswith("{") and '"resultType"' in head.decode("utf-8", "replace") and \
        '"matrix"' in head.decode("utf-8", "replace")


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One telemetry row per value of each series of a known metric (counters: rates between its values)."""
    out = Parsed()
    text = lines["text"]
    whole_lines = bool(text.str.strip_chars().str.starts_with("{").all() and text.str.strip_chars().str
                       .ends_with("}").all())
    docs = (lines.select("line", doc="text") if whole_lines
            else pl.DataFrame({"line": [int(lines["line"][0])], "doc": ["\n".join(text.to_list())]}))
    try:
        decoded = docs.with_columns(pl.col("doc").str.json_decode(_DOC).alias("_d"))
    except pl.exceptions.PolarsError:
        # NOTE: one response longer than the engine's batch (a pretty-printed dump of millions of lines) is cut
        out.unparsed += lines.height
        out.warnings.append(f"line {docs['line'][0]}: not valid JSON (cut, or one response over a batch long)")
        return out
    bad = decoded.filter(pl.col("_d").struct.field("data").struct.field("resultType").fill_null("") != "matrix")
    if bad.height:
        out.unparsed += bad.height
        out.warnings.append(f"line {bad['line'][0]}: not a Prometheus matrix response (or cut in the middle)")
    series = (decoded.filter(pl.col("_d").struct.field("data").struct.field("resultType") == "matrix")
              .select("line", r=pl.col("_d").struct.field("data").struct.field("result"))
              .explode("r").filter(pl.col("r").is_not_null()).unnest("r").unnest("metric"))
    if not series.height:
        return out
    unnamed = series.filter(pl.col("__name__").is_null())
    out.unparsed += unnamed.height
    if unnamed.height:
        out.warnings.append(f"line {unnamed['line'][0]}: a series without __name__ (a renamed query) skipped")
    port = pl.col("port")
    device = pl.coalesce("export", pl.when(port.is_not_null()).then(pl.format("{}/{}", "device", port)), "device")
    # NOTE: a series' labels are read once, before its points are exploded: the bus id's regex per point was
    # two fifths of the parse of a node's response
    labelled = series.filter(pl.col("__name__").is_not_null()).select(
        "line", "values",
        host=pl.coalesce("Hostname", pl.col("instance").str.replace(r":\d+$", "")),
        gpu=pl.col("gpu").cast(pl.Int32, strict=False), bus_id=telemetry.bus_id(pl.col("pci_bus_id")),
        device=pl.when(pl.col("__name__").str.starts_with("DCGM_")).then(pl.lit(None, pl.String)).otherwise(device),
        name="__name__",
    )
    points = labelled.explode("values").filter(pl.col("values").is_not_null())
    samples = points.select(
        "line",
        (pl.col("values").list.get(0, null_on_oob=True).cast(pl.Float64, strict=False) * 1e6)
        .cast(pl.Int64).cast(pl.Datetime("us")).alias("ts"),
        "host", "gpu", "bus_id", "device", "name",
        value=pl.col("values").list.get(1, null_on_oob=True).cast(pl.Float64, strict=False),
    )
    out.add("telemetry", telemetry.to_rows(samples, telemetry.PROMETHEUS))
    return out
