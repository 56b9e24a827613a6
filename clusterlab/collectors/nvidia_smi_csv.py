"""`nvidia-smi --query-gpu=... --format=csv` loops → `telemetry` rows.

The format (`nvidia-smi --help-query-gpu`; docs.nvidia.com/deploy/nvidia-smi/index.html): a header of the
queried field names, units in brackets (`power.draw [W]`; none with `csv,noheader` or `nounits`), then one
line per GPU per sample, fields separated by `, `, values with their units (`612.44 W`, `1980 MHz`) unless
`nounits`; `[N/A]` or `[Not Supported]` where a GPU has no value. `timestamp` is the node's local time
(`2026/11/24 08:00:00.123`). `clocks_throttle_reasons.active` (driver 535 and later also
`clocks_event_reasons.active`) is the reason bitmask in hex; the single reasons
(`clocks_throttle_reasons.hw_slowdown`, ...) print `Active` or `Not Active`. A loop (`-l 15`, or cron)
may print the header again: such lines are skipped. The host is the bundle's (`nodes/<host>/`).
"""

from __future__ import annotations

import re

import polars as pl

from clusterlab import telemetry
from clusterlab.collectors._base import Context, Parsed, local_to_utc

NAME = "nvidia_smi_csv"
EXCLUSIVE = True
SNIFF_HINT = (b"index", b"pci.bus_id", b"uuid")
PATTERN = None
BLOCK_START = None

_REASON_PREFIXES = ("clocks_throttle_reasons.", "clocks_event_reasons.")
_NOT_THERE = ["[n/a]", "n/a", "[not supported]", "not supported", "[unknown error]", ""]
_FIELD = r"^[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*(?: \[[^\]]*\])?$"
_FIELD_RX = re.compile(_FIELD)


def _fields(header: str) -> list[str]:
    """The query field names of a header line, units dropped, lower case."""
    return [f.strip().split(" [")[0].strip().lower() for f in header.split(",")]


def sniff(head: bytes, path: str) -> bool:
    """A header of nvidia-smi query fields naming the GPU (index or bus id) and at least one metric read here."""
    first = next((ln for ln in head.decode("utf-8", "replace").splitlines() if ln.strip()), "")
    parts = [p.strip() for p in first.split(",")]
    # NOTE: Python's engine, not a polars call (~1 ms): this sniff runs on every head holding `index` or `uuid`
    if len(parts) < 2 or not all(_FIELD_RX.search(p) for p in parts):
        return False
    names = set(_fields(first))
    reasons = any(n.startswith(_REASON_PREFIXES) for n in names)
    return bool(names & {"index", "pci.bus_id", "uuid"}) and (bool(names & set(telemetry.NVIDIA_SMI)) or reasons)


def _value(raw: pl.Expr) -> pl.Expr:
    """A number from `612.44 W`, `1980 MHz`, `45 %`, `0x0000000000000040` (null: not there or unreadable)."""
    v = raw.str.strip_chars()
    hexa = v.str.strip_prefix("0x").str.to_integer(base=16, strict=False).cast(pl.Float64)
    num = v.str.replace(r"\s*(?:W|MHz|%|C|MiB|KiB|GiB)$", "").cast(pl.Float64, strict=False)
    return pl.when(v.str.starts_with("0x")).then(hexa).otherwise(num)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One telemetry row per GPU, sample and metric field of the header."""
    out = Parsed()
    header = ctx.header or ""
    fields = _fields(header)
    rows = lines.filter(pl.col("text").str.strip_chars() != "", ~pl.col("text").str.contains(r"^\s*[a-z][a-z_.]*[ ,]"))
    if not rows.height:
        return out
    cells = rows.select("line", pl.col("text").str.split(",").alias("_c"))
    cols = {f: pl.col("_c").list.get(i, null_on_oob=True).str.strip_chars() for i, f in enumerate(fields)}
    short = cells.filter(pl.col("_c").list.len() != len(fields))
    out.unparsed += short.height
    if short.height:
        out.warnings.append(f"line {short['line'][0]}: {short['_c'][0].len()} fields, the header has {len(fields)}")
    cells = cells.filter(pl.col("_c").list.len() == len(fields))
    stamp = cols.get("timestamp", pl.lit(None, pl.String))
    local = stamp.str.to_datetime("%Y/%m/%d %H:%M:%S%.f", strict=False).cast(pl.Datetime("us"))
    base = cells.select(
        "line", local_to_utc(local, ctx.tz).alias("ts"),
        cols.get("index", pl.lit(None, pl.String)).cast(pl.Int32, strict=False).alias("gpu"),
        cols.get("pci.bus_id", pl.lit(None, pl.String)).alias("bus_id"),
        *[cols[f].alias(f"_f{i}") for i, f in enumerate(fields)],
    )
    base = base.with_columns(telemetry.bus_ids(base["bus_id"]))
    untimed = base.filter(pl.col("ts").is_null())
    out.unparsed += untimed.height
    if untimed.height:
        out.warnings.append(f"line {untimed['line'][0]}: no readable timestamp (query `timestamp` first)")
    base = base.filter(pl.col("ts").is_not_null())
    keep = ["line", "ts", "gpu", "bus_id"]
    samples = [base.select(*keep, name=pl.lit(f), value=_value(pl.col(f"_f{i}")))
               for i, f in enumerate(fields) if f in telemetry.NVIDIA_SMI]
    # The single reasons, where the bitmask was not queried: their bits summed into one bitmask.
    bits = [(i, telemetry.THROTTLE_BITS[f.split(".", 1)[1]]) for i, f in enumerate(fields)
            if f.startswith(_REASON_PREFIXES) and f.split(".", 1)[1] in telemetry.THROTTLE_BITS]
    if bits and not any(f.endswith(".active") and f.startswith(_REASON_PREFIXES) for f in fields):
        state = [pl.col(f"_f{i}").str.to_lowercase() for i, _ in bits]
        known = pl.all_horizontal([s.is_in(["active", "not active"]) for s in state])
        mask = pl.sum_horizontal([pl.when(s == "active").then(pl.lit(b, pl.Float64)).otherwise(0.0)
                                  for s, (_, b) in zip(state, bits, strict=True)])
        samples.append(base.select(*keep, name=pl.lit("clocks_throttle_reasons.active"),
                                   value=pl.when(known).then(mask)))
    if samples:
        out.add("telemetry", telemetry.to_rows(pl.concat(samples), telemetry.NVIDIA_SMI))
    return out
