"""NVIDIA Fabric Manager's log (`/var/log/fabricmanager.log` on NVSwitch systems: HGX / DGX boards) → NVSwitch errors.

Every record is one line:

    [Jul 23 2024 07:53:55] [ERROR] [tid 841] detected NVSwitch fatal error 20034 on fid 0 on NVSwitch pci bus id
        00000000:86:00.0 physical id 3 port 33                                          (one line)
    [Jul 09 2024 18:14:07] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci bus
        id 00000000:86:00.0 physical id 3 port 61                                       (one line)

the node's local time (`ctx.tz`), the level (INFO, WARNING, ERROR, FATAL), the thread and the message. An NVSwitch
error is an SXid as the switch driver logs it in the kernel (`nvidia-nvswitchN: SXid ...`): a fatal one takes the
switch port, and with it the NVLink traffic of the GPUs behind it, down until the GPUs and switches are reset
(`nvlink_error`); a non-fatal one was corrected or contained by the hardware: a notice, no failure mode. The rest
(start-up, the configuration it read, in-band messages) gives nothing.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import (
    TABLE_COLUMNS,
    Context,
    Parsed,
    json_detail,
    local_to_utc,
    most_lines_match,
)

NAME = "fabricmanager"
EXCLUSIVE = True
SNIFF_HINT = (b"] [tid ",)

_LINE = (r"^\[(?P<stamp>[A-Z][a-z]{2} \d\d \d{4} \d\d:\d\d:\d\d)\] \[(?P<level>[A-Z]+)\] \[tid (?P<tid>\d+)\] "
         r"(?P<msg>.*)$")
_SXID = (r"detected NVSwitch (?P<sev>fatal|non-fatal) error (?P<sxid>\d+) on fid \d+ on NVSwitch pci bus id "
         r"(?P<bus>[0-9A-Fa-f:.]+)(?: physical id (?P<phys>\d+))?(?: port (?P<port>\d+))?")
PATTERN = r"\] \[tid \d+\] detected NVSwitch (?:fatal|non-fatal) error \d+"


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context: the node's zone and host."""
    return ctx.tz, ctx.host


def sniff(head: bytes, path: str) -> bool:
    """A fabric manager log: most of its first lines are its records."""
    return most_lines_match(head, _LINE)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per NVSwitch error: a fatal one nvlink_error, a non-fatal one a notice."""
    out = Parsed()
    frame = lines.select("line", "text", pl.col("text").str.extract_groups(_LINE).alias("_g")).unnest("_g")
    frame = frame.with_columns(pl.col("msg").str.extract_groups(_SXID).alias("_s")).unnest("_s")
    out.unparsed_lines = frame.filter(pl.col("sxid").is_null())["line"]
    out.unparsed = len(out.unparsed_lines)
    frame = frame.filter(pl.col("sxid").is_not_null())
    if not frame.height:
        return out
    fatal = pl.col("sev") == "fatal"
    ts = local_to_utc(pl.col("stamp").str.strptime(pl.Datetime("us"), "%b %d %Y %H:%M:%S", strict=False), ctx.tz)
    out.add("events", frame.select(
        pl.col("line").cast(pl.Int64), ts.cast(TABLE_COLUMNS["events"]["ts"]).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"),
        pl.when(fatal).then(pl.lit("nvswitch_fatal_error")).otherwise(pl.lit("nvswitch_nonfatal_error")).alias("kind"),
        pl.when(fatal).then(pl.lit("nvlink_error")).otherwise(pl.lit(None, pl.String)).alias("failure_mode"),
        pl.when(fatal).then(pl.lit("error")).otherwise(pl.lit("warning")).alias("severity"),
        pl.lit(None, pl.Int32).alias("xid"), pl.lit(None, pl.String).alias("pci_bus"), "text",
        # NOTE: the bus is the switch's, not a GPU's: kept in the detail, out of the GPU-keyed `pci_bus`
        json_detail({"sxid": pl.col("sxid").cast(pl.Int64), "level": pl.col("level"),
                     "nvswitch_pci_bus": pl.col("bus").str.to_lowercase(),
                     "physical_id": pl.col("phys").cast(pl.Int64), "port": pl.col("port").cast(pl.Int64)})
        .fill_null("{}").alias("detail"),
    ))
    return out
