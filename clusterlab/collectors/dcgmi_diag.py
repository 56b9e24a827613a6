"""DCGM's active and passive health checks as a prolog, epilog or health script prints them: `dcgmi diag -r 1..4`
and `dcgmi health -c` tables.

    Successfully ran diagnostic for group.
    +---------------------------+------------------------------------------------+
    | Diagnostic                | Result                                         |
    +===========================+================================================+
    |-----  Deployment  --------+------------------------------------------------|
    | Page Retirement/Row Remap | Fail                                           |
    |                           | Error: GPU 2 had uncorrectable memory errors   |
    ...
    | Diagnostic                | Pass - GPUs: 0, 1, 2, 3, 4, 5, 7               |
    |                           | Fail - GPU: 6                                  |

    | Health Monitor Report                                                                |
    | Overall Health            | Failure                                                  |
    | -> 2                      | Failure                                                  |
    |       -> Memory system    | Failure                                                  |

The tables print no time: a `date` stamp the script printed before them (`Sat Oct 31 20:18:40 CDT 2026`, its zone
abbreviation honoured where it names one, else the node's `ctx.tz`) dates the rows after it; without one the rows
are undated. One event per failed test (its GPUs from `Fail - GPU(s): ...` or the message under it) and per failed
health subsystem; a `Warning` row, a `Skip` and a passing test are not events (a diag that passed with a thermal
warning is no fault). The test names the failure mode: row remapping, retired pages and GPU memory ->
gpu_memory_ecc, PCIe -> pcie_error, NVLink / NVSwitch -> nvlink_error, the rest (SM / targeted stress, power,
diagnostic, memory bandwidth, InfoROM) -> gpu_hw_other; deployment checks of the software (libraries, permissions,
environment, persistence mode, graphics processes) are not the GPU's fault and are not read.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from clusterlab.collectors._base import (
    TABLE_COLUMNS,
    Context,
    Parsed,
    classify,
    file_of_line,
    json_detail,
    local_to_utc,
    search,
)

NAME = "dcgmi_diag"
EXCLUSIVE = False
FILE_HOST_COLUMN = True  # parsed with other files, the lines carry their file's host (ctx.host) as `file_host`
SNIFF_HINT = (b"diagnostic", b"health monitor report")

_DATE = (r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +"
         r"(?P<day>\d{1,2}) "
         r"(?P<clock>\d\d:\d\d:\d\d) (?P<abbr>[A-Z]{3,4}) (?P<year>\d{4})\b")
_ROW = r"^\|\s*(?P<name>[^|]*?)\s*\|\s*(?P<result>[^|]*?)\s*\|\s*$"
PATTERN = r"^\|[^|]*\|[^|]*\|\s*$|^\|\s*Health Monitor Report|" + _DATE
# abbreviations date(1) prints and the offset (hours) each stands for; others: the node's zone
_ABBR_HOURS = {"UTC": 0, "GMT": 0, "EST": -5, "EDT": -4, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
               "BST": 1, "CET": 1, "CEST": 2, "EET": 2, "EEST": 3, "JST": 9, "KST": 9, "AEST": 10, "AEDT": 11}
_SOFTWARE = (r"(?i)^(?:denylist|blacklist|nvml library|cuda main library|cuda toolkit librar|permissions|persistence"
             r"|environment|graphics processes|software|dcgm version|driver version|gpu device ids)")


@dataclass(frozen=True)
class _Rule:
    regex: str
    mode: str


RULES = [_Rule(r"(?i)memory bandwidth", "gpu_hw_other"),
         _Rule(r"(?i)row remap|page retirement|retired pages|gpu memory|memory system|memtest|\bmem(?:ory)?\b",
               "gpu_memory_ecc"),
         _Rule(r"(?i)pcie", "pcie_error"), _Rule(r"(?i)nvlink|nvswitch", "nvlink_error"),
         _Rule(r"(?i)thermal|power", "gpu_hw_other"), _Rule(r".", "gpu_hw_other")]


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context: the node's zone (a stamp whose abbreviation names none)."""
    return (ctx.tz,)


def sniff(head: bytes, path: str) -> bool:
    """A dcgmi diag or health table in the head."""
    return search(head, r"(?m)^\|\s*Diagnostic\s*\|\s*Result\s*\||^\|\s*Health Monitor Report\s")


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per failed diag test and per failed health subsystem."""
    out = Parsed()
    out.unparsed_lines = pl.Series("line", [], dtype=pl.Int64)
    own = pl.col("file_host") if "file_host" in lines.columns else pl.lit(ctx.host, pl.String)
    f = lines.with_columns(own.alias("host"), pl.col("text").str.extract_groups(_ROW).alias("r"),
                           pl.col("text").str.extract_groups(_DATE).alias("d")).unnest("r", "d")
    stamp = (pl.concat_str([pl.col("year"), pl.col("mon"), pl.col("day"), pl.col("clock")], separator=" ")
             .str.strptime(pl.Datetime("us"), "%Y %b %d %H:%M:%S", strict=False))
    hours = pl.col("abbr").replace_strict(_ABBR_HOURS, default=None, return_dtype=pl.Int64)
    utc = pl.when(hours.is_not_null()).then(stamp - pl.duration(hours=hours)).otherwise(local_to_utc(stamp, ctx.tz))
    name = pl.col("name")
    block = (pl.when((name == "Diagnostic") & (pl.col("result") == "Result")).then(pl.lit("diag"))
             .when(pl.col("text").str.contains(r"^\|\s*Health Monitor Report")).then(pl.lit("health")))
    # NOTE: every relation between lines stays within one file (files parsed together: file_of_line)
    per_file = file_of_line()
    f = f.with_columns(ts=utc.forward_fill().over(per_file), block=block.forward_fill().over(per_file),
                       test=pl.when(name.str.len_chars() > 0).then(name).forward_fill().over(per_file),
                       gpu_of_health=name.str.extract(r"^->\s*(\d+)$").forward_fill().over(per_file),
                       next_result=pl.col("result").shift(-1).over(per_file), next_name=name.shift(-1).over(per_file))
    failed = f.filter(pl.col("block").is_not_null() & pl.col("result").is_not_null())
    own_gpus = pl.col("result").str.extract(r"Fail - GPUs?: ([\d, ]+)")
    below = pl.when(pl.col("next_name") == "").then(pl.col("next_result").str.extract(r"\bGPU (\d+)\b"))
    diag = failed.filter((pl.col("block") == "diag") & pl.col("result").str.contains(r"^Fail\b")
                         & ~pl.col("test").str.contains(_SOFTWARE) & ~pl.col("test").str.contains(r"^-----"))
    diag = diag.with_columns(
        gpus=pl.coalesce(own_gpus, pl.col("result").str.extract(r"\bGPU (\d+)\b"), below).str.replace_all(" ", ""),
        kind=pl.lit("dcgm_diag_fail"), what=pl.col("test"))
    subsystem = name.str.contains(r"^->\s*[A-Za-z]") & ~name.str.contains(r"^->\s*(?:Errors|Warnings)$")
    health = failed.filter((pl.col("block") == "health") & (pl.col("result") == "Failure") & subsystem).with_columns(
        gpus=pl.col("gpu_of_health"), kind=pl.lit("dcgm_health_failure"),
        what=name.str.replace(r"^->\s*", ""))
    hits = pl.concat([diag, health], how="diagonal_relaxed").sort("line")
    if not hits.height:
        return out
    hits = classify(hits, RULES, col="what", index="_rule").drop("_rule")
    text = pl.concat_str([pl.col("what"), pl.lit(": "), pl.col("result"),
                          pl.when(pl.col("next_name") == "").then(pl.concat_str([pl.lit(" "), pl.col("next_result")]))
                          .otherwise(pl.lit(""))])
    out.add("events", hits.select(
        pl.col("line").cast(pl.Int64), pl.col("ts").cast(TABLE_COLUMNS["events"]["ts"]),
        "host", "kind", pl.col("mode").alias("failure_mode"),
        pl.lit("error").alias("severity"), pl.lit(None, pl.Int32).alias("xid"),
        pl.lit(None, pl.String).alias("pci_bus"),
        text.alias("text"),
        json_detail({"test": pl.col("what"), "gpus": pl.col("gpus"), "result": pl.col("result")}).alias("detail"),
    ))
    return out
