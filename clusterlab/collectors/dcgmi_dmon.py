"""`dcgmi dmon -e <field ids> -d <ms>` output → `telemetry` rows.

The format (docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/dcgmi-dmon.html):
a header `#Entity  SMCLK  TMPTR ...` (each field's short name, its "tag" in DCGM's dcgm_fields.cpp), an `ID`
line under it, then one line per entity per sample, `GPU 0   1980   61 ...`, `N/A` where a field has no
value; the header comes again now and then. dmon prints no time: a loop keeps one by piping it through
moreutils' `ts` (`dcgmi dmon ... | ts '%Y-%m-%dT%H:%M:%S'`, or `ts`'s default `Nov 24 10:00:15`), read
here as each line's time in the node's zone. Lines without one are counted, not stored. Only GPU entities
are read. The host is the bundle's (`nodes/<host>/`).
"""

from __future__ import annotations

import polars as pl

from clusterlab import telemetry
from clusterlab.collectors._base import Context, Parsed, file_of_line, local_to_utc, syslog_time, year_context

NAME = "dcgmi_dmon"
EXCLUSIVE = True
SNIFF_HINT = (b"#entity",)

_STAMP = (r"^(?:(?P<iso>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?)|(?P<sys>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d))"
          r"\s+")
_HEADER = r"#Entity\s"
_ROW = r"(?:GPU|GPU-I|GPU-CI|Switch|Link|CPU|Core)\s+\d+\s"
PATTERN = rf"^(?:{_STAMP})?(?:{_HEADER}|{_ROW})"
BLOCK_START = None


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context (the zone and year of `ts` times, the file's first header without its
    time): a fleet's dmon loops of one field list may be parsed together. Every relation between lines (a row's
    header, a counter's rate) stays within one file (`file_of_line`)."""
    return ctx.tz, year_context(ctx), _first_header(ctx)


def _first_header(ctx: Context) -> str:
    """The file's first line (its header) without the time `ts` put before it."""
    return pl.Series([ctx.header or ""], dtype=pl.String).str.replace(_STAMP, "").str.strip_chars().item()


def sniff(head: bytes, path: str) -> bool:
    """The first non-blank line is dmon's `#Entity` header (after a `ts` time, if any)."""
    first = next((ln for ln in head.decode("utf-8", "replace").splitlines() if ln.strip()), "")
    return bool(pl.Series([first], dtype=pl.String).str.contains(rf"^(?:{_STAMP})?{_HEADER}").item())


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One telemetry row per GPU line and known column of the header above it."""
    out = Parsed()
    rest = pl.col("text").str.replace(_STAMP, "").str.strip_chars()
    f = lines.with_columns(pl.col("text").str.extract_groups(_STAMP).alias("_s"), rest.alias("rest")).unnest("_s")
    local = pl.coalesce(pl.col("iso").str.replace(" ", "T").str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", strict=False),
                        syslog_time(pl.col("sys"), ctx)).cast(pl.Datetime("us"))
    first_header = _first_header(ctx)
    is_header = pl.col("rest").str.starts_with("#Entity")
    f = f.with_columns(
        local_to_utc(local, ctx.tz).alias("ts"),
        pl.when(is_header).then(pl.col("rest")).forward_fill().over(file_of_line()).fill_null(first_header)
        .alias("header"),
        pl.col("rest").str.extract_groups(r"^GPU\s+(?P<gpu>\d+)\s+(?P<vals>.*)$").alias("_r"),
    ).unnest("_r").filter(~is_header, pl.col("gpu").is_not_null())
    untimed = f.filter(pl.col("ts").is_null())
    out.unparsed_lines = untimed["line"]
    out.unparsed = len(out.unparsed_lines)
    if untimed.height:  # once per file, at its first: a group sends every such file back at once
        firsts = untimed.group_by(file_of_line().alias("_f")).agg(pl.col("line").min())["line"].sort()
        out.warnings += [f"line {n}: no time (pipe dcgmi dmon through `ts`)" for n in firsts]
    f = f.filter(pl.col("ts").is_not_null()).with_columns(
        pl.col("vals").str.strip_chars().str.replace_all(r"\s+", " ").str.split(" "))
    samples = []
    for header in f["header"].unique().to_list():  # a few distinct headers a file, at most
        names = header.split()[1:]
        rows = f.filter(pl.col("header") == header)
        for i, n in enumerate(names):
            if n in telemetry.DCGMI_DMON:
                raw = pl.col("vals").list.get(i, null_on_oob=True)
                hexa = raw.str.strip_prefix("0x").str.to_integer(base=16, strict=False).cast(pl.Float64)
                value = pl.when(raw.str.starts_with("0x")).then(hexa).otherwise(raw.cast(pl.Float64, strict=False))
                samples.append(rows.select("line", "ts", pl.col("gpu").cast(pl.Int32), name=pl.lit(n), value=value))
    if samples:
        out.add("telemetry", telemetry.to_rows(pl.concat(samples), telemetry.DCGMI_DMON, apart=file_of_line()))
    return out
